// SPDX-License-Identifier: MIT
// The BTL's wire format without Open MPI: fragments -> VELO messages -> fragments. Random
// fragments (sizes, tags, one or two segments, train message sizes, ob1-like headers) must come
// out byte-exact, in order, exactly once, also when messages are reordered within the window; the
// encoder's choices (one message / MATCH / train) and message sizes are checked; malformed streams
// are rejected. SEED=<n> repeats a run (the seed is printed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "btl_velo_wire.h"

namespace {

std::mt19937_64 make_rng() {
    static uint64_t seed = [] {
        const char* s = std::getenv("SEED");
        uint64_t v = s && *s ? std::strtoull(s, nullptr, 0) : std::random_device{}();
        std::printf("SEED=%llu\n", (unsigned long long)v);
        return v;
    }();
    return std::mt19937_64(seed);
}

struct Frag {
    uint8_t tag;
    std::vector<uint8_t> bytes;
};

struct Sink {
    std::vector<Frag> got;
    static void cb(void* ctx, uint8_t tag, const uint8_t* data, size_t len) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % 8, 0u) << "delivered bytes must be 8-byte aligned";
        static_cast<Sink*>(ctx)->got.push_back(Frag{tag, std::vector<uint8_t>(data, data + len)});
    }
};

using Msg = std::vector<uint8_t>;

// Encode one fragment, split at `cut` into two segments (cut == size: one segment).
std::vector<Msg> encode(const Frag& f, size_t cut, unsigned* seq, unsigned train, int compress) {
    vw_frag_t w{};
    w.tag = f.tag;
    w.p[0] = f.bytes.data();
    w.n[0] = std::min(cut, f.bytes.size());
    w.p[1] = f.bytes.data() + w.n[0];
    w.n[1] = f.bytes.size() - w.n[0];
    w.nseg = w.n[1] ? 2 : 1;
    w.total = f.bytes.size();
    std::vector<Msg> out;
    size_t off = 0;
    bool started = false;
    while (!started || off < w.total) {
        uint8_t m[VW_MSG_MAX];
        size_t carried = 0;
        unsigned len = vw_encode(&w, off, *seq, train, compress, m, &carried);
        EXPECT_GE(len, 2u);
        EXPECT_LE(len, VW_MSG_MAX);
        EXPECT_EQ(m[0] & VW_SEQ_MASK, *seq & VW_SEQ_MASK);
        if (started) {
            EXPECT_LE(len, train) << "train messages are at most train_bytes";
        }
        out.emplace_back(m, m + len);
        *seq = (*seq + 1) & VW_SEQ_MASK;
        off += carried;
        started = true;
    }
    EXPECT_EQ(off, w.total);
    return out;
}

// An ob1-like match header: type 0x41, flags, ctx, src, tag, seq (little endian), then payload.
Frag match_frag(uint8_t flags, uint16_t ctx, int32_t src, int32_t tag, uint16_t seq, size_t payload, uint8_t fill) {
    Frag f{VW_MATCH_TAG, std::vector<uint8_t>(VW_MATCH_HDR_LEN + payload)};
    uint8_t* b = f.bytes.data();
    b[0] = VW_MATCH_TAG;
    b[1] = flags;
    std::memcpy(b + 2, &ctx, 2);
    std::memcpy(b + 4, &src, 4);
    std::memcpy(b + 8, &tag, 4);
    std::memcpy(b + 12, &seq, 2);
    for (size_t i = 0; i < payload; ++i) b[VW_MATCH_HDR_LEN + i] = static_cast<uint8_t>(fill + 7 * i);
    return f;
}

void feed(vw_rx_t* rx, const std::vector<Msg>& msgs, Sink* sink, size_t max_frag = 1u << 20) {
    for (const Msg& m : msgs) ASSERT_EQ(vw_rx_msg(rx, m.data(), m.size(), max_frag, Sink::cb, sink), 0);
}

unsigned kind(const Msg& m) {
    return m[0] >> VW_KIND_SHIFT;
}

}  // namespace

TEST(Wire, EdgesOfOneMessage) {
    unsigned seq = 0;
    std::vector<uint8_t> bytes(200);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 13 + 1);
    struct Case {
        size_t size;
        unsigned msgs56, kind0;
    };
    // 62 bytes: one SHORT message of 64; 63: HEAD (50 bytes) + BODY (13)
    for (Case c : {Case{0, 1, VW_SHORT}, Case{1, 1, VW_SHORT}, Case{62, 1, VW_SHORT}, Case{63, 2, VW_HEAD},
                   Case{105, 2, VW_HEAD}, Case{106, 3, VW_HEAD}, Case{200, 4, VW_HEAD}}) {
        Frag f{0x42, std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(c.size))};
        auto msgs = encode(f, c.size, &seq, 56, 1);
        EXPECT_EQ(msgs.size(), c.msgs56) << c.size;
        EXPECT_EQ(kind(msgs[0]), c.kind0) << c.size;
        for (size_t k = 1; k < msgs.size(); ++k) EXPECT_EQ(kind(msgs[k]), (unsigned)VW_BODY);
        EXPECT_EQ(vw_fits_one(f.tag, f.bytes.data(), f.bytes.size(), 1), c.size <= 62 ? 1 : 0);
        vw_rx_t rx{};
        rx.expect = static_cast<uint8_t>(msgs[0][0] & VW_SEQ_MASK);
        Sink s;
        feed(&rx, msgs, &s);
        ASSERT_EQ(s.got.size(), 1u);
        EXPECT_EQ(s.got[0].tag, 0x42);
        EXPECT_EQ(s.got[0].bytes, f.bytes);
        vw_rx_free(&rx);
    }
}

TEST(Wire, MatchHeaderSqueezed) {
    unsigned seq = 5;
    // 8-byte payload: 7 + 8 = 15 bytes on the wire instead of 2 + 14 + 8
    Frag f = match_frag(0, 3, 17, -5, 0xbeef, 8, 9);
    auto msgs = encode(f, VW_MATCH_HDR_LEN, &seq, 56, 1);
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(kind(msgs[0]), (unsigned)VW_MATCH);
    EXPECT_EQ(msgs[0].size(), 15u);
    // compression off: SHORT with the whole header
    unsigned seq2 = 0;
    auto plain = encode(f, f.bytes.size(), &seq2, 56, 0);
    ASSERT_EQ(plain.size(), 1u);
    EXPECT_EQ(kind(plain[0]), (unsigned)VW_SHORT);
    EXPECT_EQ(plain[0].size(), 24u);
    // the largest squeezed fragment: 14 + 57 bytes in one 64-byte message; one more is a train
    Frag big = match_frag(1, 255, 255, 127, 1, 57, 3);
    EXPECT_TRUE(vw_fits_one(big.tag, big.bytes.data(), big.bytes.size(), 1));
    auto one = encode(big, big.bytes.size(), &seq, 56, 1);
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0].size(), 64u);
    Frag bigger = match_frag(1, 255, 255, 127, 1, 58, 3);
    EXPECT_FALSE(vw_fits_one(bigger.tag, bigger.bytes.data(), bigger.bytes.size(), 1));
    EXPECT_EQ(kind(encode(bigger, 3, &seq, 56, 1)[0]), (unsigned)VW_HEAD);
    // headers whose bytes do not fit the pattern travel unchanged
    for (Frag g :
         {match_frag(0, 256, 1, 1, 1, 4, 1), match_frag(0, 1, 256, 1, 1, 4, 1), match_frag(0, 1, -1, 1, 1, 4, 1),
          match_frag(0, 1, 1, 128, 1, 4, 1), match_frag(0, 1, 1, -129, 1, 4, 1)}) {
        auto m = encode(g, g.bytes.size(), &seq, 56, 1);
        ASSERT_EQ(m.size(), 1u);
        EXPECT_EQ(kind(m[0]), (unsigned)VW_SHORT);
    }
    Frag other = match_frag(0, 1, 1, 1, 1, 4, 1);
    other.tag = 0x44;  // not the MATCH tag
    EXPECT_EQ(kind(encode(other, 14, &seq, 56, 1)[0]), (unsigned)VW_SHORT);
    Frag typed = match_frag(0, 1, 1, 1, 1, 4, 1);
    typed.bytes[0] = 0x42;  // MATCH tag, but another header type in the first byte
    EXPECT_EQ(kind(encode(typed, 14, &seq, 56, 1)[0]), (unsigned)VW_SHORT);
    // and all of them come back byte-exact
    vw_rx_t rx{};
    Sink s;
    std::vector<Frag> all = {f, big, bigger, other, typed, match_frag(0, 1, 1, -128, 65535, 0, 0)};
    unsigned q = 0;
    for (const Frag& a : all) feed(&rx, encode(a, a.bytes.size() / 2, &q, 56, 1), &s);
    ASSERT_EQ(s.got.size(), all.size());
    for (size_t i = 0; i < all.size(); ++i) {
        EXPECT_EQ(s.got[i].tag, all[i].tag) << i;
        EXPECT_EQ(s.got[i].bytes, all[i].bytes) << i;
    }
    vw_rx_free(&rx);
}

// Random fragments, random segment cuts, train sizes and compression; optionally reordered within
// a bounded distance. Everything arrives once, in order, byte-exact.
static void random_stream(bool reorder) {
    auto rng = make_rng();
    for (unsigned round = 0; round < 40; ++round) {
        const unsigned train = std::vector<unsigned>{16, 33, 56, 64}[rng() % 4];
        const int compress = static_cast<int>(rng() % 2);
        std::vector<Frag> sent;
        std::vector<Msg> msgs;
        unsigned seq = 0;
        for (unsigned k = 0; k < 60; ++k) {
            Frag f;
            const unsigned pick = static_cast<unsigned>(rng() % 10);
            size_t size = pick < 4 ? rng() % 80 : pick < 8 ? rng() % 700 : rng() % 9000;
            if (pick == 0) {
                f = match_frag(static_cast<uint8_t>(rng() % 3), static_cast<uint16_t>(rng() % 300),
                               static_cast<int32_t>(rng() % 300), static_cast<int32_t>(rng() % 400) - 200,
                               static_cast<uint16_t>(rng()), rng() % 70, static_cast<uint8_t>(rng()));
            } else {
                f.tag = static_cast<uint8_t>(rng());
                f.bytes.resize(size);
                for (auto& b : f.bytes) b = static_cast<uint8_t>(rng());
            }
            const size_t cut = f.bytes.empty() ? 0 : rng() % (f.bytes.size() + 1);
            auto m = encode(f, cut, &seq, train, compress);
            msgs.insert(msgs.end(), m.begin(), m.end());
            sent.push_back(std::move(f));
        }
        if (reorder) {
            // shuffle blocks of 6 messages (a split store overtaken by a few others): every message
            // stays within 5 places of where it was sent, well inside the window of 64
            for (size_t i = 0; i + 6 <= msgs.size(); i += 6)
                if (rng() % 2)
                    std::shuffle(msgs.begin() + static_cast<long>(i), msgs.begin() + static_cast<long>(i) + 6, rng);
        }
        vw_rx_t rx{};
        Sink s;
        feed(&rx, msgs, &s);
        ASSERT_EQ(s.got.size(), sent.size()) << "round " << round;
        for (size_t i = 0; i < sent.size(); ++i) {
            ASSERT_EQ(s.got[i].tag, sent[i].tag) << "round " << round << " fragment " << i;
            ASSERT_EQ(s.got[i].bytes, sent[i].bytes) << "round " << round << " fragment " << i;
        }
        EXPECT_EQ(rx.msgs, msgs.size());
        EXPECT_EQ(rx.frags, sent.size());
        if (reorder) {
            EXPECT_GT(rx.reordered, 0u);
        }
        EXPECT_EQ(rx.stash_mask, 0u) << "nothing left behind";
        vw_rx_free(&rx);
    }
}

TEST(Wire, RandomInOrder) {
    random_stream(false);
}
TEST(Wire, RandomReordered) {
    random_stream(true);
}

TEST(Wire, TwoSourcesInterleaved) {
    auto rng = make_rng();
    std::vector<Frag> a, b;
    std::vector<Msg> ma, mb;
    unsigned sa = 0, sb = 0;
    for (unsigned k = 0; k < 30; ++k) {
        Frag f{static_cast<uint8_t>(k), std::vector<uint8_t>(rng() % 400)};
        for (auto& x : f.bytes) x = static_cast<uint8_t>(rng());
        Frag g{static_cast<uint8_t>(100 + k), std::vector<uint8_t>(rng() % 400)};
        for (auto& x : g.bytes) x = static_cast<uint8_t>(rng());
        auto m1 = encode(f, f.bytes.size(), &sa, 56, 1);
        auto m2 = encode(g, g.bytes.size(), &sb, 56, 1);
        ma.insert(ma.end(), m1.begin(), m1.end());
        mb.insert(mb.end(), m2.begin(), m2.end());
        a.push_back(f);
        b.push_back(g);
    }
    vw_rx_t ra{}, rb{};
    Sink s;
    size_t i = 0, j = 0;
    while (i < ma.size() || j < mb.size()) {
        if (j >= mb.size() || (i < ma.size() && rng() % 2)) {
            ASSERT_EQ(vw_rx_msg(&ra, ma[i].data(), ma[i].size(), 1u << 20, Sink::cb, &s), 0);
            ++i;
        } else {
            ASSERT_EQ(vw_rx_msg(&rb, mb[j].data(), mb[j].size(), 1u << 20, Sink::cb, &s), 0);
            ++j;
        }
    }
    std::vector<Frag> ga, gb;
    for (auto& f : s.got) (f.tag < 100 ? ga : gb).push_back(f);
    ASSERT_EQ(ga.size(), a.size());
    ASSERT_EQ(gb.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) {
        EXPECT_EQ(ga[k].bytes, a[k].bytes);
        EXPECT_EQ(gb[k].bytes, b[k].bytes);
    }
    vw_rx_free(&ra);
    vw_rx_free(&rb);
}

TEST(Wire, MalformedStreams) {
    Sink s;
    const uint8_t body[3] = {static_cast<uint8_t>(VW_BODY << VW_KIND_SHIFT | 0), 1, 2};
    vw_rx_t rx{};
    EXPECT_EQ(vw_rx_msg(&rx, body, sizeof body, 1 << 20, Sink::cb, &s), -EPROTO) << "BODY without HEAD";
    // after an error the stream goes on with the next sequence number
    const uint8_t shrt[4] = {static_cast<uint8_t>(VW_SHORT << VW_KIND_SHIFT | 1), 0x42, 7, 8};
    EXPECT_EQ(vw_rx_msg(&rx, shrt, sizeof shrt, 1 << 20, Sink::cb, &s), 0);
    ASSERT_EQ(s.got.size(), 1u);
    EXPECT_EQ(s.got[0].bytes, (std::vector<uint8_t>{7, 8}));
    // HEAD inside a train
    uint8_t head[10] = {static_cast<uint8_t>(VW_HEAD << VW_KIND_SHIFT | 2), 0x42, 100, 0, 0, 0, 1, 2, 3, 4};
    EXPECT_EQ(vw_rx_msg(&rx, head, sizeof head, 1 << 20, Sink::cb, &s), 0);
    head[0] = static_cast<uint8_t>(VW_HEAD << VW_KIND_SHIFT | 3);
    EXPECT_EQ(vw_rx_msg(&rx, head, sizeof head, 1 << 20, Sink::cb, &s), -EPROTO);
    // a train longer than announced
    head[0] = static_cast<uint8_t>(VW_HEAD << VW_KIND_SHIFT | 4);
    head[2] = 5;
    EXPECT_EQ(vw_rx_msg(&rx, head, sizeof head, 1 << 20, Sink::cb, &s), 0);
    uint8_t body2[4] = {static_cast<uint8_t>(VW_BODY << VW_KIND_SHIFT | 5), 1, 2, 3};
    EXPECT_EQ(vw_rx_msg(&rx, body2, sizeof body2, 1 << 20, Sink::cb, &s), -EPROTO);
    // a fragment above the receiver's limit
    head[0] = static_cast<uint8_t>(VW_HEAD << VW_KIND_SHIFT | 6);
    head[2] = 0;
    head[3] = 0x10;  // 4096
    EXPECT_EQ(vw_rx_msg(&rx, head, sizeof head, 4095, Sink::cb, &s), -EMSGSIZE);
    // the same sequence number twice while waiting for a gap
    const uint8_t early[3] = {static_cast<uint8_t>(VW_SHORT << VW_KIND_SHIFT | 9), 0x42, 1};
    EXPECT_EQ(vw_rx_msg(&rx, early, sizeof early, 1 << 20, Sink::cb, &s), 0);
    EXPECT_EQ(vw_rx_msg(&rx, early, sizeof early, 1 << 20, Sink::cb, &s), -EPROTO);
    // empty and oversized messages
    EXPECT_EQ(vw_rx_msg(&rx, early, 0, 1 << 20, Sink::cb, &s), -EPROTO);
    uint8_t huge[65] = {};
    EXPECT_EQ(vw_rx_msg(&rx, huge, sizeof huge, 1 << 20, Sink::cb, &s), -EPROTO);
    EXPECT_EQ(s.got.size(), 1u) << "nothing malformed was delivered";
    vw_rx_free(&rx);
}
