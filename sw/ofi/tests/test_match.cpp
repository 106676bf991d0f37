// The provider's matcher (velo_fi_match.h) alone: fixed cases for each rule, then seeded random
// operations against a reference model (std::vector, searched front to back) compared after every
// step: which receive / message each operation took, and both queues in order at the end. Also the
// wire format (velo_fi_wire.h): round trips and every possible first byte from the network.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "velo_fi_match.h"

namespace {

struct Recv {
    vfi_mrecv node;  // first: the matcher hands it back
    int id;
};
struct Msg {
    vfi_munexp node;
    int id;
};

int id_of(vfi_mrecv* r) {
    return r ? reinterpret_cast<Recv*>(r)->id : -1;
}
int id_of(vfi_munexp* u) {
    return u ? reinterpret_cast<Msg*>(u)->id : -1;
}

struct Fixture {
    vfi_matcher m;
    std::vector<std::unique_ptr<Recv>> recvs;
    std::vector<std::unique_ptr<Msg>> msgs;
    Fixture() { vfi_match_init(&m); }
    Recv* recv(int id, uint64_t tag, uint64_t ignore, uint64_t src) {
        recvs.push_back(std::make_unique<Recv>());
        Recv* r = recvs.back().get();
        r->node = {nullptr, tag, ignore, src};
        r->id = id;
        return r;
    }
    Msg* msg(int id, uint64_t tag, uint64_t src) {
        msgs.push_back(std::make_unique<Msg>());
        Msg* u = msgs.back().get();
        u->node = {nullptr, tag, src, nullptr};
        u->id = id;
        return u;
    }
    // what the provider does: a receive first searches the unexpected queue, else is posted
    int post(int id, uint64_t tag, uint64_t ignore, uint64_t src) {
        vfi_munexp* u = vfi_match_find_unexp(&m, tag, ignore, src, true);
        if (u) return id_of(u);
        vfi_match_add_posted(&m, &recv(id, tag, ignore, src)->node);
        return -1;
    }
    // a message first searches the posted queue, else is queued as unexpected
    int arrive(int id, uint64_t tag, uint64_t src) {
        vfi_mrecv* r = vfi_match_arrival(&m, tag, src);
        if (r) return id_of(r);
        vfi_match_add_unexp(&m, &msg(id, tag, src)->node);
        return -1;
    }
};

TEST(match, posted_in_order) {
    Fixture f;
    EXPECT_EQ(f.post(1, 5, 0, VFI_SRC_ANY), -1);
    EXPECT_EQ(f.post(2, 5, 0, VFI_SRC_ANY), -1);
    EXPECT_EQ(f.arrive(10, 5, 0), 1);  // the oldest receive first
    EXPECT_EQ(f.arrive(11, 5, 0), 2);
    EXPECT_EQ(f.arrive(12, 5, 0), -1);
    EXPECT_EQ(f.m.n_posted, 0u);
    EXPECT_EQ(f.m.n_unexp, 1u);
}

TEST(match, unexpected_in_order) {
    Fixture f;
    f.arrive(10, 7, 1);
    f.arrive(11, 7, 2);
    f.arrive(12, 8, 1);
    EXPECT_EQ(f.post(1, 8, 0, VFI_SRC_ANY), 12);  // a tag that does not match is passed over
    EXPECT_EQ(f.post(2, 7, 0, VFI_SRC_ANY), 10);  // the oldest matching message first
    EXPECT_EQ(f.post(3, 7, 0, VFI_SRC_ANY), 11);
    EXPECT_EQ(f.m.n_unexp, 0u);
}

TEST(match, ignore_bits_are_wildcards) {
    Fixture f;
    f.post(1, 0x1200, 0x00FF, VFI_SRC_ANY);  // any low byte
    EXPECT_EQ(f.arrive(10, 0x1300, 0), -1);  // a bit outside the ignored ones differs
    EXPECT_EQ(f.arrive(11, 0x12AB, 0), 1);
    EXPECT_EQ(f.post(2, 0, ~UINT64_C(0), VFI_SRC_ANY), 10);  // every tag: the message left over
    EXPECT_EQ(f.post(3, 0, ~UINT64_C(0), VFI_SRC_ANY), -1);
    EXPECT_EQ(f.arrive(12, UINT64_C(0xFFFFFFFFFFFFFFFF), 3), 3);
}

TEST(match, directed_receive) {
    Fixture f;
    f.post(1, 4, 0, 7);  // only from source 7
    f.post(2, 4, 0, VFI_SRC_ANY);
    EXPECT_EQ(f.arrive(10, 4, 6), 2);  // not for the directed one: the next matching receive
    EXPECT_EQ(f.arrive(11, 4, 7), 1);
    f.arrive(12, 4, 6);
    EXPECT_EQ(f.post(3, 4, 0, 7), -1);  // the message from 6 stays
    EXPECT_EQ(f.m.n_unexp, 1u);
}

TEST(match, peek_claim_discard) {
    Fixture f;
    f.arrive(10, 3, 0);
    f.arrive(11, 3, 0);
    int claim_ctx = 0;
    vfi_munexp* u = vfi_match_find_unexp(&f.m, 3, 0, VFI_SRC_ANY, false);  // peek: stays queued
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(id_of(u), 10);
    EXPECT_EQ(f.m.n_unexp, 2u);
    u->claim = &claim_ctx;                        // FI_CLAIM
    EXPECT_EQ(f.post(1, 3, 0, VFI_SRC_ANY), 11);  // a claimed message is skipped
    EXPECT_EQ(f.post(2, 3, 0, VFI_SRC_ANY), -1);
    EXPECT_EQ(vfi_match_take_claimed(&f.m, nullptr), nullptr);
    int other = 0;
    EXPECT_EQ(vfi_match_take_claimed(&f.m, &other), nullptr);
    EXPECT_EQ(id_of(vfi_match_take_claimed(&f.m, &claim_ctx)), 10);
    EXPECT_EQ(f.m.n_unexp, 0u);
    // a claimed message is not taken by an arrival-side search either: the posted receive 2 waits
    EXPECT_EQ(f.arrive(12, 3, 0), 2);
}

TEST(match, remove_posted_and_tail) {
    Fixture f;
    f.post(1, 1, 0, VFI_SRC_ANY);
    f.post(2, 1, 0, VFI_SRC_ANY);
    f.post(3, 1, 0, VFI_SRC_ANY);
    EXPECT_TRUE(vfi_match_remove_posted(&f.m, &f.recvs[2]->node));  // the tail
    EXPECT_FALSE(vfi_match_remove_posted(&f.m, &f.recvs[2]->node));
    f.post(4, 1, 0, VFI_SRC_ANY);  // appends after 2: the tail was fixed
    EXPECT_EQ(f.arrive(10, 1, 0), 1);
    EXPECT_EQ(f.arrive(11, 1, 0), 2);
    EXPECT_EQ(f.arrive(12, 1, 0), 4);
    EXPECT_EQ(id_of(vfi_match_pop_posted(&f.m)), -1);
}

// ---- seeded random operations against a reference model

struct ModelRecv {
    int id;
    uint64_t tag, ignore, src;
};
struct ModelMsg {
    int id;
    uint64_t tag, src;
    const void* claim;
};

bool hits(const ModelRecv& r, const ModelMsg& m) {
    for (int b = 0; b < 64; ++b) {  // bit by bit, unlike the matcher's XOR
        uint64_t bit = UINT64_C(1) << b;
        if ((r.ignore & bit) == 0 && (r.tag & bit) != (m.tag & bit)) return false;
    }
    return r.src == VFI_SRC_ANY || r.src == m.src;
}

class RandomOps : public ::testing::TestWithParam<unsigned> {};

TEST_P(RandomOps, agree_with_model) {
    std::mt19937_64 rng(GetParam());
    Fixture f;
    std::vector<ModelRecv> posted;
    std::vector<ModelMsg> unexp;
    static const uint64_t tags[] = {0, 1, 2, 3, 0x100, 0x101, UINT64_C(0x8000000000000001)};
    static const uint64_t ignores[] = {0, 0, 0, 1, 0xFF, 0x100, ~UINT64_C(0)};
    int claims[64];
    std::vector<const void*> live_claims;
    int next_id = 0, taken = 0;
    auto pick = [&](auto& arr) { return arr[rng() % (sizeof(arr) / sizeof(arr[0]))]; };
    auto any_src = [&] { return rng() % 3 == 0 ? VFI_SRC_ANY : rng() % 3; };
    for (int step = 0; step < 4000; ++step) {
        const int op = static_cast<int>(rng() % 10);
        const int id = next_id++;
        SCOPED_TRACE(testing::Message() << "seed " << GetParam() << " step " << step << " op " << op);
        if (op < 4) {  // a message arrives
            ModelMsg mm{id, pick(tags), rng() % 3, nullptr};
            auto it = std::find_if(posted.begin(), posted.end(), [&](const ModelRecv& r) { return hits(r, mm); });
            int want = -1;
            if (it != posted.end()) {
                want = it->id;
                posted.erase(it);
                ++taken;
            } else {
                unexp.push_back(mm);
            }
            ASSERT_EQ(f.arrive(id, mm.tag, mm.src), want);
        } else if (op < 8) {  // a receive is posted
            ModelRecv mr{id, pick(tags), pick(ignores), any_src()};
            auto it =
                std::find_if(unexp.begin(), unexp.end(), [&](const ModelMsg& m) { return !m.claim && hits(mr, m); });
            int want = -1;
            if (it != unexp.end()) {
                want = it->id;
                unexp.erase(it);
                ++taken;
            } else {
                posted.push_back(mr);
            }
            ASSERT_EQ(f.post(id, mr.tag, mr.ignore, mr.src), want);
        } else if (op == 8) {  // peek, with FI_CLAIM or FI_DISCARD sometimes
            ModelRecv mr{id, pick(tags), pick(ignores), any_src()};
            auto it =
                std::find_if(unexp.begin(), unexp.end(), [&](const ModelMsg& m) { return !m.claim && hits(mr, m); });
            const int mode = static_cast<int>(rng() % 3);  // 0 peek, 1 claim, 2 discard
            vfi_munexp* u = vfi_match_find_unexp(&f.m, mr.tag, mr.ignore, mr.src, mode == 2);
            ASSERT_EQ(id_of(u), it == unexp.end() ? -1 : it->id);
            if (u && mode == 1 && live_claims.size() < 64) {
                const void* c = &claims[live_claims.size()];
                u->claim = c;
                it->claim = c;
                live_claims.push_back(c);
            } else if (u && mode == 2) {
                unexp.erase(it);
            }
        } else {  // take a claimed message, or cancel a posted receive
            if (!live_claims.empty() && rng() % 2) {
                const size_t k = rng() % live_claims.size();
                const void* c = live_claims[k];
                live_claims.erase(live_claims.begin() + static_cast<long>(k));
                auto it = std::find_if(unexp.begin(), unexp.end(), [&](const ModelMsg& m) { return m.claim == c; });
                ASSERT_NE(it, unexp.end());
                ASSERT_EQ(id_of(vfi_match_take_claimed(&f.m, c)), it->id);
                unexp.erase(it);
            } else if (!posted.empty()) {
                const size_t k = rng() % posted.size();
                const int rid = posted[k].id;
                posted.erase(posted.begin() + static_cast<long>(k));
                auto rit = std::find_if(f.recvs.begin(), f.recvs.end(), [&](auto& r) { return r->id == rid; });
                ASSERT_NE(rit, f.recvs.end());
                ASSERT_TRUE(vfi_match_remove_posted(&f.m, &(*rit)->node));
            }
        }
        ASSERT_EQ(f.m.n_posted, posted.size());
        ASSERT_EQ(f.m.n_unexp, unexp.size());
    }
    EXPECT_GT(taken, 100);  // the mix really matched things
    // both queues, in order
    for (const ModelRecv& r : posted) ASSERT_EQ(id_of(vfi_match_pop_posted(&f.m)), r.id);
    EXPECT_EQ(vfi_match_pop_posted(&f.m), nullptr);
    for (const ModelMsg& m : unexp) ASSERT_EQ(id_of(vfi_match_pop_unexp(&f.m)), m.id);
    EXPECT_EQ(vfi_match_pop_unexp(&f.m), nullptr);
}

INSTANTIATE_TEST_SUITE_P(seeds, RandomOps, ::testing::Values(1u, 2u, 3u, 42u, 1234u, 99991u));

}  // namespace

// ---- the wire format (velo_fi_wire.h): round trips, and hostile bytes from the network refused
#include "velo_fi_wire.h"

namespace {

TEST(wire, round_trips) {
    for (unsigned kind : {VFI_WIRE_MSG, VFI_WIRE_TAGGED})
        for (int data : {0, 1})
            for (int rts : {0, 1}) {
                vfi_wire_hdr h = {kind, data, rts, UINT64_C(0x0123456789ABCDEF), UINT64_C(0xFEDCBA9876543210)};
                uint8_t b[VFI_HDR_MAX + VFI_RTS_BYTES];
                size_t n = vfi_wire_put(b, &h);
                EXPECT_EQ(n, 1u + (kind == VFI_WIRE_TAGGED ? 8u : 0u) + (data ? 8u : 0u));
                vfi_wire_hdr g;
                ASSERT_EQ(vfi_wire_get(b, n, &g), n);
                EXPECT_EQ(g.kind, kind);
                EXPECT_EQ(g.has_data, data);
                EXPECT_EQ(g.rts, rts);
                EXPECT_EQ(g.tag, kind == VFI_WIRE_TAGGED ? h.tag : 0u);
                EXPECT_EQ(g.data, data ? h.data : 0u);
                EXPECT_EQ(vfi_wire_get(b, n - 1, &g), 0u);  // one byte short
            }
    vfi_wire_rts r = {UINT64_C(1) << 35, UINT64_C(0xABCDEF0123), 0xDEADBEEF, 77}, q;
    uint8_t b[VFI_RTS_BYTES];
    vfi_wire_put_rts(b, &r);
    vfi_wire_get_rts(b, &q);
    EXPECT_EQ(q.len, r.len);
    EXPECT_EQ(q.nla, r.nla);
    EXPECT_EQ(q.key, r.key);
    EXPECT_EQ(q.id, r.id);
    uint8_t f[VFI_FIN_BYTES];
    ASSERT_EQ(vfi_wire_put_fin(f, 0x01020304, 265), VFI_FIN_BYTES);
    uint32_t id, st;
    ASSERT_EQ(vfi_wire_get_fin(f, sizeof(f), &id, &st), 1);
    EXPECT_EQ(id, 0x01020304u);
    EXPECT_EQ(st, 265u);
    EXPECT_EQ(vfi_wire_get_fin(f, sizeof(f) - 1, &id, &st), 0);
    vfi_wire_hdr g;
    EXPECT_EQ(vfi_wire_get(f, sizeof(f), &g), 0u);  // a FIN is no data header
}

TEST(wire, hostile_first_bytes) {
    // every first byte: accepted only with a known kind and known flag bits, and enough bytes
    for (unsigned b0 = 0; b0 < 256; ++b0) {
        uint8_t b[32] = {static_cast<uint8_t>(b0)};
        vfi_wire_hdr g;
        const unsigned kind = b0 & VFI_WIRE_KIND_MASK;
        const bool ok = (b0 & ~VFI_WIRE_KNOWN) == 0 && (kind == VFI_WIRE_MSG || kind == VFI_WIRE_TAGGED);
        const size_t want = ok ? 1u + (kind == VFI_WIRE_TAGGED ? 8u : 0u) + ((b0 & VFI_WIRE_DATA) ? 8u : 0u) : 0u;
        EXPECT_EQ(vfi_wire_get(b, sizeof(b), &g), want) << b0;
        EXPECT_EQ(vfi_wire_get(b, 0, &g), 0u);
    }
}

}  // namespace
