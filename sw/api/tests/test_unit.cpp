// libvelo unit tests without the fabric (built with ASan and UBSan):
//  * the hw fast paths on mocked memory (window stores, credit reservation, ring reading across
//    wraps, fragments, torn two-line entries, lazy read pointer, closed endpoints, bad input),
//  * the recombiner on its own,
//  * the credit protocol and connection handshake between endpoints over a software NIC model
//    (loopnic: rings written as the RTL writes them, full rings hold packets back).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "loopnic.h"
#include "mock.h"
#include "velo/velo.h"
#include "velo/velo_hw.h"
#include "velo_recombine.h"

namespace {

uint64_t seed() {
    const char* s = std::getenv("SEED");
    uint64_t v = s ? std::strtoull(s, nullptr, 0) : 12345;
    return v;
}

std::vector<uint8_t> pattern(unsigned len, unsigned salt) {
    std::vector<uint8_t> v(len);
    for (unsigned i = 0; i < len; ++i) v[i] = static_cast<uint8_t>(salt * 31 + i * 7 + 1);
    return v;
}

// The NIC side of a mocked ring: writes entries in the MBOX_HDR format (second line first,
// header word last), honouring the read pointer the library returns.
struct MockNic {
    uint8_t* ring;
    unsigned log2;
    uint32_t wp = 0;
    MockNic(uint8_t* r, unsigned l) : ring(r), log2(l) {}
    uint32_t size() const { return 1u << log2; }
    uint8_t* line(uint32_t pos) { return ring + 64 * (pos & (size() - 1)); }
    uint64_t phase(uint32_t pos) const { return ((pos >> log2) & 1) ^ 1; }
    static uint64_t hdr(unsigned node, unsigned vpid, unsigned mlen, unsigned off, unsigned flen) {
        const bool frag = off != 0 || flen != mlen;
        return VELO_FIELD_PREP(VELO_MBOX_HDR_TYPE, VELO_PKT_TYPE_VELO) |
               VELO_FIELD_PREP(VELO_MBOX_HDR_MSG_LEN_M1, mlen - 1) | VELO_FIELD_PREP(VELO_MBOX_HDR_FRAG_OFF, off) |
               VELO_FIELD_PREP(VELO_MBOX_HDR_SRC_NODE, node) | VELO_FIELD_PREP(VELO_MBOX_HDR_SRC_VPID, vpid) |
               VELO_FIELD_PREP(VELO_MBOX_HDR_FRAG_LEN_M1, flen - 1) | VELO_FIELD_PREP(VELO_MBOX_HDR_FRAG, frag);
    }
    // lines the entry takes; 0 if the ring has no room (rp = what the NIC was told)
    unsigned write(uint32_t rp, unsigned node, unsigned vpid, unsigned mlen, unsigned off, const uint8_t* b,
                   unsigned flen, bool skip_second = false) {
        std::vector<uint8_t> area(off % 4, 0xEE);
        area.insert(area.end(), b, b + flen);
        const unsigned lines = area.size() > 56 ? 2 : 1;
        if (wp - rp + lines > size()) return 0;
        const uint64_t h = hdr(node, vpid, mlen, off, flen);
        for (int l = static_cast<int>(lines) - 1; l >= 0; --l) {
            if (l == 1 && skip_second) continue;
            const uint32_t pos = wp + static_cast<uint32_t>(l);
            uint8_t* ln = line(pos);
            const size_t from = l == 0 ? 0 : 56, to = l == 0 ? std::min<size_t>(area.size(), 56) : area.size();
            std::memcpy(ln + 8, area.data() + from, to - from);
            const uint64_t hh = h | VELO_FIELD_PREP(VELO_MBOX_HDR_PHASE, phase(pos)) |
                                VELO_FIELD_PREP(VELO_MBOX_HDR_LINES, lines) | VELO_FIELD_PREP(VELO_MBOX_HDR_TAIL, l);
            __atomic_store_n(reinterpret_cast<uint64_t*>(ln), hh, __ATOMIC_RELEASE);
        }
        wp += lines;
        return lines;
    }
};

struct Expect {
    unsigned node, vpid;
    std::vector<uint8_t> bytes;
};

}  // namespace

// ============================================================================ hw fast paths (mock)
TEST(Mock, SendStoresEveryLengthInItsLine) {
    velo_ep_t* ep = nullptr;
    ASSERT_EQ(velo__mock_open(&ep, 3, 4, 8), 0);
    alignas(64) static uint8_t win[4096];
    velo_conn_t* c = nullptr;
    ASSERT_EQ(velo__mock_connect(ep, {1, 2}, win, 1000, &c), 0);
    for (unsigned len = 1; len <= 64; ++len) {
        std::memset(win, 0xCC, sizeof win);
        auto m = pattern(len, len);
        ASSERT_EQ(velo_send(c, m.data(), len), 0) << len;
        const uint8_t* ln = win + (len - 1) * 64;
        for (unsigned i = 0; i < len; ++i) ASSERT_EQ(ln[i], m[i]) << "len " << len << " byte " << i;
        // bytes past the message inside what was stored are zero padding, other lines untouched
        unsigned stored = len <= 8 ? 8 : (len + 15) / 16 * 16;
        for (unsigned i = len; i < stored; ++i) ASSERT_EQ(ln[i], 0) << "len " << len << " pad " << i;
        for (unsigned i = stored; i < 64; ++i) ASSERT_EQ(ln[i], 0xCC);
        for (unsigned i = 0; i < sizeof win; ++i) {
            if (i < (len - 1) * 64 || i >= len * 64) {
                ASSERT_EQ(win[i], 0xCC) << "len " << len << " offset " << i;
            }
        }
    }
    EXPECT_EQ(velo_close(ep), 0);
}

TEST(Mock, SendReservesLinesFromCredit) {
    velo_ep_t* ep = nullptr;
    ASSERT_EQ(velo__mock_open(&ep, 0, 1, 8), 0);
    alignas(64) static uint8_t win[4096];
    velo_conn_t* c = nullptr;
    ASSERT_EQ(velo__mock_connect(ep, {1, 2}, win, 10, &c), 0);
    uint8_t b[64] = {1};
    for (int i = 0; i < 4; ++i) ASSERT_EQ(velo_send(c, b, 57), 0) << i;  // 2 lines each
    ASSERT_EQ(velo_send(c, b, 56), 0);                                   // 1 line
    ASSERT_EQ(velo_send(c, b, 8), 0);                                    // 1 line: 10 used
    EXPECT_EQ(velo_send(c, b, 1), -EAGAIN);
    EXPECT_EQ(velo_send(c, b, 64), -EAGAIN);
    velo_stats_t st;
    ASSERT_EQ(velo_stats(ep, &st), 0);
    EXPECT_EQ(st.send_eagain, 2u);
    EXPECT_EQ(velo_close(ep), 0);
}

TEST(Mock, BadInputs) {
    velo_ep_t* ep = nullptr;
    ASSERT_EQ(velo__mock_open(&ep, 0, 1, 8), 0);
    alignas(64) static uint8_t win[4096];
    velo_conn_t* c = nullptr;
    ASSERT_EQ(velo__mock_connect(ep, {1, 2}, win, 100, &c), 0);
    uint8_t b[80] = {};
    EXPECT_EQ(velo_send(c, b, 0), -EINVAL);
    EXPECT_EQ(velo_send(c, b, 65), -EMSGSIZE);
    EXPECT_EQ(velo_send(c, b, static_cast<size_t>(-1)), -EMSGSIZE);
    EXPECT_EQ(velo_send(c, nullptr, 8), -EINVAL);
    EXPECT_EQ(velo_send(nullptr, b, 8), -EINVAL);
    velo_msg_t m;
    EXPECT_EQ(velo_poll(nullptr, &m), -EINVAL);
    EXPECT_EQ(velo_poll(ep, &m), -EAGAIN);
    EXPECT_EQ(velo_poll(ep, nullptr), -EAGAIN) << "an empty mailbox: the message buffer is not touched";
    {
        MockNic nic(velo__mock_ring(ep), 8);
        uint8_t x[8] = {1};
        nic.write(0, 1, 1, 8, 0, x, 8);
        EXPECT_EQ(velo_poll(ep, nullptr), -EINVAL) << "a message is there: where to?";
        EXPECT_EQ(velo_poll(ep, &m), 8) << "and it is still there";
    }
    EXPECT_EQ(velo_wait(ep, &m, -2), -EINVAL);
    EXPECT_EQ(velo_wait(ep, &m, 0), -ETIMEDOUT);
    EXPECT_EQ(velo_wait(ep, &m, 5), -ETIMEDOUT);
    EXPECT_EQ(velo_idle(nullptr, 0), -EINVAL);
    EXPECT_EQ(velo_idle(ep, -2), -EINVAL);
    EXPECT_EQ(velo_idle(ep, 0), 0) << "nothing there";
    EXPECT_EQ(velo_idle(ep, 5), 0) << "nothing came";
    velo_addr_t a;
    EXPECT_EQ(velo_addr(nullptr, &a), -EINVAL);
    EXPECT_EQ(velo_addr(ep, &a), 0);
    EXPECT_EQ(a.node, 0u);
    EXPECT_EQ(a.vpid, 1u);
    velo_conn_t* c2 = nullptr;
    EXPECT_EQ(velo_connect(ep, {256, 1}, 0, &c2), -EINVAL);
    EXPECT_EQ(velo_connect(ep, {1, 128}, 0, &c2), -EINVAL) << "control vpids are not destinations";
    EXPECT_EQ(velo_connect(ep, {1, 1}, 0x80, &c2), -EINVAL);
    EXPECT_EQ(velo_connect(nullptr, {1, 1}, 0, &c2), -EINVAL);
    EXPECT_EQ(velo_open(nullptr, nullptr), -EINVAL);
    EXPECT_STRNE(velo_strerror(-ENODEV), velo_strerror(-EINVAL));
    EXPECT_NE(std::string(velo_strerror(-ENODEV)).find("velo-fabric"), std::string::npos);
    EXPECT_STREQ(velo_strerror(-99999), "unknown error");
    EXPECT_EQ(velo_close(ep), 0);
}

TEST(Mock, ClosedEndpointAnswersEbadf) {
    velo_ep_t* ep = nullptr;
    ASSERT_EQ(velo__mock_open(&ep, 0, 1, 8), 0);
    alignas(64) static uint8_t win[4096];
    velo_conn_t* c = nullptr;
    ASSERT_EQ(velo__mock_connect(ep, {1, 2}, win, 100, &c), 0);
    ASSERT_EQ(velo_close(ep), 0);
    uint8_t b[8] = {};
    velo_msg_t m;
    velo_addr_t a;
    velo_conn_t* c2;
    EXPECT_EQ(velo_send(c, b, 8), -EBADF);
    EXPECT_EQ(velo_poll(ep, &m), -EBADF);
    EXPECT_EQ(velo_wait(ep, &m, 10), -EBADF);
    EXPECT_EQ(velo_idle(ep, 10), -EBADF);
    EXPECT_EQ(velo_addr(ep, &a), -EBADF);
    EXPECT_EQ(velo_connect(ep, {1, 3}, 0, &c2), -EBADF);
    EXPECT_EQ(velo_disconnect(c), -EBADF);
    EXPECT_EQ(velo_close(ep), -EBADF);
}

// Many wraps of a small ring: one- and two-line messages from several sources, exact bytes and
// sources, phases right on every pass, and the read pointer returned lazily but in time.
TEST(Mock, PollReadsAcrossWrapsWithLazyReadPointer) {
    const unsigned log2 = 6;
    velo_ep_t* ep = nullptr;
    ASSERT_EQ(velo__mock_open(&ep, 0, 1, log2), 0);
    MockNic nic(velo__mock_ring(ep), log2);
    const uint32_t batch = velo__mock_batch(ep);
    ASSERT_GE(batch, 1u);
    std::mt19937_64 rng(seed());
    std::deque<Expect> want;
    uint32_t consumed = 0;  // lines
    unsigned got = 0;
    for (int i = 0; i < 3000; ++i) {
        // the NIC writes as much as the returned read pointer allows
        for (int k = 0; k < 3; ++k) {
            unsigned len = 1 + static_cast<unsigned>(rng() % 64);
            unsigned node = static_cast<unsigned>(rng() % 4), vpid = static_cast<unsigned>(rng() % 100);
            auto b = pattern(len, static_cast<unsigned>(i * 3 + k));
            if (!nic.write(velo__mock_rp(ep), node, vpid, len, 0, b.data(), len)) break;
            want.push_back({node, vpid, b});
        }
        velo_msg_t m;
        int r = velo_poll(ep, &m);
        if (want.empty()) {
            ASSERT_EQ(r, -EAGAIN);
            continue;
        }
        ASSERT_GT(r, 0) << i;
        const Expect& e = want.front();
        ASSERT_EQ(static_cast<unsigned>(r), e.bytes.size());
        ASSERT_EQ(m.len, e.bytes.size());
        ASSERT_EQ(m.src_node, e.node);
        ASSERT_EQ(m.src_vpid, e.vpid);
        ASSERT_EQ(0, std::memcmp(m.data, e.bytes.data(), e.bytes.size())) << "message " << got;
        consumed += e.bytes.size() > 56 ? 2 : 1;
        want.pop_front();
        ++got;
        // lazy, but never more than a batch (plus one entry) behind
        ASSERT_LE(consumed - velo__mock_rp(ep), batch + 1) << "read pointer returned too late";
    }
    EXPECT_GT(got, 1000u);
    EXPECT_GT(nic.wp, 20u * nic.size()) << "the test must wrap the ring many times";
    // idle: velo_wait returns everything that was read
    velo_msg_t m;
    while (!want.empty()) {
        ASSERT_GT(velo_poll(ep, &m), 0);
        consumed += want.front().bytes.size() > 56 ? 2 : 1;
        want.pop_front();
    }
    EXPECT_EQ(velo_wait(ep, &m, 1), -ETIMEDOUT);
    EXPECT_EQ(velo__mock_rp(ep), consumed);
    EXPECT_EQ(velo_close(ep), 0);
}

// velo_idle reports a message without taking it, at once or when it comes while it sleeps.
TEST(Mock, IdleWakesForAMessageAndTakesNothing) {
    velo_ep_t* ep = nullptr;
    ASSERT_EQ(velo__mock_open(&ep, 0, 1, 8), 0);
    MockNic nic(velo__mock_ring(ep), 8);
    const uint8_t x[8] = {7, 6, 5, 4, 3, 2, 1, 0};
    nic.write(0, 3, 4, 8, 0, x, 8);
    EXPECT_EQ(velo_idle(ep, 0), 1);
    EXPECT_EQ(velo_idle(ep, -1), 1) << "still there: velo_idle took nothing";
    velo_msg_t m;
    ASSERT_EQ(velo_poll(ep, &m), 8);
    EXPECT_EQ(std::memcmp(m.data, x, 8), 0);
    EXPECT_EQ(velo_idle(ep, 0), 0);
    std::thread nic_thread([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        nic.write(0, 3, 4, 8, 0, x, 8);
    });
    EXPECT_EQ(velo_idle(ep, -1), 1) << "woken by the message that came while it slept";
    nic_thread.join();
    EXPECT_EQ(velo_poll(ep, &m), 8);
    EXPECT_EQ(velo_close(ep), 0);
}

TEST(Mock, FragmentsRecombinedAmongOtherTraffic) {
    const unsigned log2 = 8;
    velo_ep_t* ep = nullptr;
    ASSERT_EQ(velo__mock_open(&ep, 0, 1, log2), 0);
    MockNic nic(velo__mock_ring(ep), log2);
    std::mt19937_64 rng(seed() + 1);
    std::map<std::pair<unsigned, unsigned>, std::deque<std::vector<uint8_t>>> expect;
    size_t total = 0, received = 0;
    for (int round = 0; round < 200; ++round) {
        // every sender (node, vpid) has at most one message in pieces; pieces of different
        // senders and whole messages interleave arbitrarily
        struct Piece {
            unsigned node, vpid, mlen, off;
            std::vector<uint8_t> b;
        };
        std::vector<std::vector<Piece>> streams;
        for (unsigned s = 0; s < 4; ++s) {
            std::vector<Piece> st;
            unsigned node = s, vpid = 10 + s;
            unsigned len = 2 + static_cast<unsigned>(rng() % 63);
            auto b = pattern(len, static_cast<unsigned>(round * 4 + s));
            std::vector<unsigned> cuts{0, len};
            for (unsigned k = 0; k < 1 + rng() % 3; ++k) cuts.push_back(1 + static_cast<unsigned>(rng() % (len - 1)));
            std::sort(cuts.begin(), cuts.end());
            cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
            for (size_t k = 0; k + 1 < cuts.size(); ++k)
                st.push_back(
                    {node, vpid, len, cuts[k], std::vector<uint8_t>(b.begin() + cuts[k], b.begin() + cuts[k + 1])});
            std::shuffle(st.begin(), st.end(), rng);  // pieces in any order
            expect[{node, vpid}].push_back(b);
            // a whole message from the same sender passes the partial one (another thread)
            if (rng() % 2) {
                auto w = pattern(1 + static_cast<unsigned>(rng() % 64), static_cast<unsigned>(round * 100 + s));
                st.insert(st.begin() + static_cast<long>(rng() % (st.size() + 1)),
                          Piece{node, vpid, static_cast<unsigned>(w.size()), 0, w});
                expect[{node, vpid}].push_front(w);  // arrives before the pieces complete... or not
            }
            streams.push_back(st);
            total += 1 + (st.size() > cuts.size() - 1 ? 1 : 0);
        }
        // deliver the streams interleaved, poll everything
        std::vector<size_t> idx(streams.size(), 0);
        for (;;) {
            std::vector<size_t> live;
            for (size_t s = 0; s < streams.size(); ++s)
                if (idx[s] < streams[s].size()) live.push_back(s);
            if (live.empty()) break;
            size_t s = live[rng() % live.size()];
            const Piece& p = streams[s][idx[s]++];
            ASSERT_TRUE(nic.write(velo__mock_rp(ep), p.node, p.vpid, p.mlen, p.off, p.b.data(),
                                  static_cast<unsigned>(p.b.size())));
        }
        velo_msg_t m;
        int r;
        while ((r = velo_poll(ep, &m)) > 0) {
            auto& q = expect[{m.src_node, m.src_vpid}];
            std::vector<uint8_t> got(m.data, m.data + r);
            auto it = std::find(q.begin(), q.end(), got);
            ASSERT_NE(it, q.end()) << "unexpected or corrupt message from " << int(m.src_node) << "/"
                                   << int(m.src_vpid);
            q.erase(it);
            ++received;
        }
        ASSERT_EQ(r, -EAGAIN);
        ASSERT_EQ(velo_wait(ep, &m, 0), -ETIMEDOUT);
    }
    for (auto& [k, q] : expect) EXPECT_TRUE(q.empty()) << "lost messages from " << k.first;
    EXPECT_EQ(received, total);
    velo_stats_t st;
    ASSERT_EQ(velo_stats(ep, &st), 0);
    EXPECT_GT(st.frags_rx, 800u);
    EXPECT_EQ(velo_close(ep), 0);
}

TEST(Mock, TwoLineEntryNotReadBeforeItsSecondLine) {
    velo_ep_t* ep = nullptr;
    ASSERT_EQ(velo__mock_open(&ep, 0, 1, 6), 0);
    MockNic nic(velo__mock_ring(ep), 6);
    auto b = pattern(60, 9);
    // only the first line (phase right): a reader that trusted it would return garbage
    nic.write(0, 2, 3, 60, 0, b.data(), 60, /*skip_second=*/true);
    velo_msg_t m;
    EXPECT_EQ(velo_poll(ep, &m), -EAGAIN);
    nic.wp = 0;
    nic.write(0, 2, 3, 60, 0, b.data(), 60);
    ASSERT_EQ(velo_poll(ep, &m), 60);
    EXPECT_EQ(0, std::memcmp(m.data, b.data(), 60));
    EXPECT_EQ(velo_close(ep), 0);
}

// ============================================================================ recombiner
TEST(Recombine, InterleavedPiecesAnyOrder) {
    velo_rc rc;
    velo_rc_init(&rc, 0);
    std::mt19937_64 rng(seed() + 2);
    struct P {
        unsigned node, vpid, len, off, n;
        const uint8_t* b;
    };
    std::vector<std::vector<uint8_t>> msgs;
    std::vector<P> pieces;
    for (unsigned i = 0; i < 400; ++i) {
        // sender (i % 7, (i / 7) % 5); one message per (node, vpid, length) key at a time,
        // as the hardware allows
        unsigned len = 2 + (i % 60);
        msgs.push_back(pattern(len, i));
    }
    for (unsigned i = 0; i < msgs.size(); ++i) {
        unsigned len = static_cast<unsigned>(msgs[i].size());
        std::vector<unsigned> cuts{0, len};
        for (int k = 0; k < 3; ++k) cuts.push_back(1 + static_cast<unsigned>(rng() % (len - 1)));
        std::sort(cuts.begin(), cuts.end());
        cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
        for (size_t k = 0; k + 1 < cuts.size(); ++k)
            pieces.push_back({i % 7, (i / 7) % 5, len, cuts[k], cuts[k + 1] - cuts[k], msgs[i].data() + cuts[k]});
    }
    std::shuffle(pieces.begin(), pieces.end(), rng);
    std::map<std::vector<uint8_t>, int> done;
    uint8_t out[64];
    for (auto& p : pieces) {
        int r = velo_rc_add(&rc, p.node, p.vpid, p.len, p.off, p.b, p.n, out);
        ASSERT_GE(r, 0);
        if (r == 1) done[std::vector<uint8_t>(out, out + p.len)]++;
    }
    EXPECT_EQ(rc.live, 0u);
    ASSERT_EQ(done.size(), msgs.size());
    for (auto& m : msgs) EXPECT_EQ(done[m], 1);
    EXPECT_EQ(rc.bad, 0u);
    velo_rc_free(&rc);
}

TEST(Recombine, MalformedAndOverflow) {
    velo_rc rc;
    velo_rc_init(&rc, 2);
    uint8_t b[64] = {}, out[64];
    EXPECT_EQ(velo_rc_add(&rc, 0, 0, 10, 8, b, 3, out), -1) << "past the message end";
    EXPECT_EQ(velo_rc_add(&rc, 0, 0, 10, 10, b, 1, out), -1);
    EXPECT_EQ(velo_rc_add(&rc, 0, 0, 10, 0, b, 0, out), -1);
    EXPECT_EQ(velo_rc_add(&rc, 0, 0, 65, 0, b, 1, out), -1);
    EXPECT_EQ(rc.bad, 4u);
    EXPECT_EQ(velo_rc_add(&rc, 1, 0, 10, 0, b, 5, out), 0);
    EXPECT_EQ(velo_rc_add(&rc, 2, 0, 10, 0, b, 5, out), 0);
    EXPECT_EQ(velo_rc_add(&rc, 3, 0, 10, 0, b, 5, out), 0);  // drops the oldest (node 1)
    EXPECT_EQ(rc.overflow, 1u);
    EXPECT_EQ(velo_rc_add(&rc, 1, 0, 10, 5, b, 5, out), 0) << "node 1's partial message is gone";
    EXPECT_EQ(velo_rc_add(&rc, 3, 0, 10, 5, b + 5, 5, out), 1);
    velo_rc_free(&rc);
}

// ============================================================================ protocol (loopnic)
namespace {

struct Loop {
    loopnic* n;
    explicit Loop(unsigned split = 0) : n(loopnic_new(split, seed())) {}
    ~Loop() { loopnic_free(n); }
    velo_ep_t* open(unsigned node, int vpid = -1, unsigned log2 = 11) {
        velo_ep_t* ep = nullptr;
        EXPECT_EQ(loopnic_open(n, node, vpid, log2, &ep), 0);
        return ep;
    }
};

// sender message: [sender id][thread][seq 32][pattern...]
std::vector<uint8_t> tagged(unsigned sender, unsigned thread, uint32_t seq, unsigned len) {
    std::vector<uint8_t> v = pattern(len, seq * 13 + sender);
    if (len >= 6) {
        v[0] = static_cast<uint8_t>(sender);
        v[1] = static_cast<uint8_t>(thread);
        std::memcpy(&v[2], &seq, 4);
    }
    return v;
}

}  // namespace

TEST(Protocol, ConnectThenTalkBothWays) {
    Loop L;
    velo_ep_t* a = L.open(0);
    velo_ep_t* b = L.open(1);
    velo_addr_t aa, ba;
    ASSERT_EQ(velo_addr(a, &aa), 0);
    ASSERT_EQ(velo_addr(b, &ba), 0);
    EXPECT_EQ(aa.node, 0u);
    EXPECT_EQ(ba.node, 1u);
    velo_conn_t *ab, *ba_c;
    ASSERT_EQ(velo_connect(a, ba, VELO_CONNECT_NOWAIT, &ab), 0);
    ASSERT_EQ(velo_connect(b, aa, VELO_CONNECT_NOWAIT, &ba_c), 0);
    uint8_t x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    EXPECT_EQ(velo_send(ab, x, 8), -EAGAIN) << "no credit before the destination answers";
    velo_msg_t m;
    EXPECT_EQ(velo_poll(b, &m), -EAGAIN);  // answers a's request
    EXPECT_EQ(velo_poll(a, &m), -EAGAIN);  // answers b's request
    ASSERT_EQ(velo_send(ab, x, 8), 0);
    ASSERT_EQ(velo_poll(b, &m), 8);
    EXPECT_EQ(m.src_node, 0);
    EXPECT_EQ(m.src_vpid, aa.vpid);
    EXPECT_EQ(0, std::memcmp(m.data, x, 8));
    ASSERT_EQ(velo_send(ba_c, "pong", 4), 0);
    ASSERT_EQ(velo_poll(a, &m), 4);
    EXPECT_EQ(std::string(reinterpret_cast<char*>(m.data), 4), "pong");
    velo_conn_t* again;
    ASSERT_EQ(velo_connect(a, ba, VELO_CONNECT_NOWAIT, &again), 0);
    EXPECT_EQ(again, ab) << "one connection per destination";
    velo_info_t info;
    ASSERT_EQ(velo_info(a, &info), 0);
    EXPECT_STREQ(info.backend, "loop");
    EXPECT_EQ(info.ring_lines, 2048u);
    EXPECT_EQ(info.credit_lines, 64u);
    EXPECT_EQ(velo_close(a), 0);
    EXPECT_EQ(velo_close(b), 0);
}

TEST(Protocol, BlockingConnectAnsweredByAPollingPeer) {
    Loop L;
    velo_ep_t* a = L.open(0);
    velo_ep_t* b = L.open(1);
    velo_addr_t ba;
    ASSERT_EQ(velo_addr(b, &ba), 0);
    std::atomic<bool> stop{false};
    std::thread t([&] {
        velo_msg_t m;
        while (!stop) velo_wait(b, &m, 1);
    });
    velo_conn_t* c = nullptr;
    EXPECT_EQ(velo_connect(a, ba, 0, &c), 0);
    EXPECT_NE(c, nullptr);
    EXPECT_EQ(velo_send(c, "x", 1), 0);
    stop = true;
    t.join();
    // a destination nobody opened
    velo_conn_t* c2 = nullptr;
    EXPECT_EQ(velo_connect(a, {5, 5}, 0, &c2), -ECONNREFUSED);
    EXPECT_EQ(c2, nullptr);
    EXPECT_EQ(velo_close(a), 0);
    EXPECT_EQ(velo_close(b), 0);
}

TEST(Protocol, BothConnectAtOnceWithoutDeadlock) {
    Loop L;
    velo_ep_t* a = L.open(0, 3);
    velo_ep_t* b = L.open(1, 4);
    int ra = 1, rb = 1;
    std::atomic<int> done{0};
    // each side connects, then keeps receiving (answering the other's request) until both are in
    std::thread ta([&] {
        velo_conn_t* c;
        ra = velo_connect(a, {1, 4}, 0, &c);
        ++done;
        velo_msg_t m;
        while (done < 2) velo_wait(a, &m, 1);
    });
    std::thread tb([&] {
        velo_conn_t* c;
        rb = velo_connect(b, {0, 3}, 0, &c);
        ++done;
        velo_msg_t m;
        while (done < 2) velo_wait(b, &m, 1);
    });
    ta.join();
    tb.join();
    EXPECT_EQ(ra, 0);
    EXPECT_EQ(rb, 0);
    EXPECT_EQ(velo_close(a), 0);
    EXPECT_EQ(velo_close(b), 0);
}

// Three senders flood a small ring whose reader is slow: credits keep the ring from ever
// being full (the NIC model never has to hold a packet back), nothing is lost or duplicated,
// order per sender holds, and no sender stalls once its data is read (poll only, no wait).
TEST(Protocol, CreditsKeepTheRingFromOverflowing) {
    Loop L;
    velo_ep_t* r = L.open(9, 1, 8);  // 256 lines
    std::vector<velo_ep_t*> s;
    std::vector<velo_conn_t*> c;
    for (unsigned i = 0; i < 3; ++i) {
        s.push_back(L.open(i));
        velo_conn_t* cc;
        ASSERT_EQ(velo_connect(s.back(), {9, 1}, VELO_CONNECT_NOWAIT, &cc), 0);
        c.push_back(cc);
    }
    velo_msg_t m;
    EXPECT_EQ(velo_poll(r, &m), -EAGAIN);  // answers the three requests
    std::mt19937_64 rng(seed() + 3);
    std::vector<uint32_t> sent(3, 0), recv(3, 0);
    const uint32_t N = 3000;
    uint64_t eagain = 0;
    while (recv[0] + recv[1] + recv[2] < 3 * N) {
        for (unsigned i = 0; i < 3; ++i) {
            for (int k = 0; k < 8 && sent[i] < N; ++k) {
                unsigned len = 6 + static_cast<unsigned>(rng() % 59);
                auto b = tagged(i, 0, sent[i], len);
                int rr = velo_send(c[i], b.data(), len);
                if (rr == -EAGAIN) {
                    ++eagain;
                    break;
                }
                ASSERT_EQ(rr, 0);
                ++sent[i];
            }
        }
        // the reader takes a few, then the senders go again
        for (int k = 0; k < 5; ++k) {
            int n = velo_poll(r, &m);
            if (n == -EAGAIN) break;
            ASSERT_GE(n, 6);
            unsigned who = m.data[0];
            uint32_t seq;
            std::memcpy(&seq, &m.data[2], 4);
            ASSERT_LT(who, 3u);
            ASSERT_EQ(seq, recv[who]) << "order per sender";
            ASSERT_EQ(std::vector<uint8_t>(m.data, m.data + n), tagged(who, 0, seq, static_cast<unsigned>(n)));
            ++recv[who];
        }
    }
    EXPECT_GT(eagain, 100u) << "the senders must have run into their credit limits";
    struct loopnic_stats st;
    loopnic_stats(L.n, &st);
    EXPECT_EQ(st.held_max, 0u) << "a ring was full: credits failed";
    EXPECT_EQ(loopnic_held(L.n), 0u);
    for (auto* e : s) EXPECT_EQ(velo_close(e), 0);
    EXPECT_EQ(velo_close(r), 0);
}

// Two endpoints stream at each other, single-threaded, each sending until -EAGAIN and then
// reading: the situation that deadlocks without end-to-end credits (docs/spec.md).
TEST(Protocol, MutualStreamsCompleteWithoutBackPressure) {
    Loop L;
    velo_ep_t* e[2] = {L.open(0, 1, 7), L.open(1, 1, 7)};
    velo_conn_t* c[2];
    ASSERT_EQ(velo_connect(e[0], {1, 1}, VELO_CONNECT_NOWAIT, &c[0]), 0);
    ASSERT_EQ(velo_connect(e[1], {0, 1}, VELO_CONNECT_NOWAIT, &c[1]), 0);
    const uint32_t N = 5000;
    uint32_t sent[2] = {0, 0}, recv[2] = {0, 0};
    velo_msg_t m;
    for (int it = 0; it < 1000000 && (recv[0] < N || recv[1] < N); ++it) {
        for (int i = 0; i < 2; ++i) {
            while (sent[i] < N) {
                auto b = tagged(static_cast<unsigned>(i), 0, sent[i], 40);
                int r = velo_send(c[i], b.data(), b.size());
                if (r == -EAGAIN) break;
                ASSERT_EQ(r, 0);
                ++sent[i];
            }
            int n;
            while ((n = velo_poll(e[i], &m)) > 0) {
                uint32_t seq;
                std::memcpy(&seq, &m.data[2], 4);
                ASSERT_EQ(seq, recv[i]);
                ++recv[i];
            }
        }
    }
    EXPECT_EQ(recv[0], N);
    EXPECT_EQ(recv[1], N);
    struct loopnic_stats st;
    loopnic_stats(L.n, &st);
    EXPECT_EQ(st.held_max, 0u);
    EXPECT_EQ(velo_close(e[0]), 0);
    EXPECT_EQ(velo_close(e[1]), 0);
}

TEST(Protocol, SplitStoresRecombinedExactlyOnce) {
    Loop L(40);  // 40 % of stores flushed as two pieces
    velo_ep_t* r = L.open(1, 2);
    velo_ep_t* s = L.open(0, 1);
    velo_conn_t* c;
    ASSERT_EQ(velo_connect(s, {1, 2}, VELO_CONNECT_NOWAIT, &c), 0);
    velo_msg_t m;
    velo_poll(r, &m);
    std::mt19937_64 rng(seed() + 4);
    const uint32_t N = 4000;
    uint32_t sent = 0, recv = 0;
    while (recv < N) {
        while (sent < N) {
            unsigned len = 6 + static_cast<unsigned>(rng() % 59);
            auto b = tagged(0, 0, sent, len);
            int rr = velo_send(c, b.data(), len);
            if (rr == -EAGAIN) break;
            ASSERT_EQ(rr, 0);
            ++sent;
        }
        int n;
        while ((n = velo_poll(r, &m)) > 0) {
            uint32_t seq;
            std::memcpy(&seq, &m.data[2], 4);
            ASSERT_EQ(seq, recv);
            ASSERT_EQ(std::vector<uint8_t>(m.data, m.data + n), tagged(0, 0, seq, static_cast<unsigned>(n)));
            ++recv;
        }
        ASSERT_EQ(n, -EAGAIN);
    }
    struct loopnic_stats st;
    loopnic_stats(L.n, &st);
    velo_stats_t vs;
    ASSERT_EQ(velo_stats(r, &vs), 0);
    EXPECT_GT(vs.frags_rx, 2000u);
    EXPECT_LE(vs.frags_rx, st.fragments) << "the rest are pieces of credit returns";
    EXPECT_EQ(velo_close(s), 0);
    EXPECT_EQ(velo_close(r), 0);
}

TEST(Protocol, ManyThreadsOneConnection) {
    Loop L;
    velo_ep_t* r = L.open(1, 2);
    velo_ep_t* s = L.open(0, 1);
    velo_conn_t* c;
    ASSERT_EQ(velo_connect(s, {1, 2}, VELO_CONNECT_NOWAIT, &c), 0);
    const unsigned T = 8;
    const uint32_t N = 2000;
    std::atomic<bool> go{false};
    std::vector<std::thread> th;
    for (unsigned t = 0; t < T; ++t)
        th.emplace_back([&, t] {
            while (!go) std::this_thread::yield();
            for (uint32_t i = 0; i < N;) {
                auto b = tagged(0, t, i, 6 + (i + t) % 59);
                int rr = velo_send(c, b.data(), b.size());
                if (rr == 0)
                    ++i;
                else if (rr == -EAGAIN)
                    std::this_thread::yield();
                else
                    FAIL() << rr;
            }
        });
    go = true;
    std::vector<uint32_t> next(T, 0);
    uint32_t total = 0;
    velo_msg_t m;
    while (total < T * N) {
        int n = velo_wait(r, &m, 5000);
        ASSERT_GT(n, 0) << "after " << total;
        unsigned t = m.data[1];
        uint32_t seq;
        std::memcpy(&seq, &m.data[2], 4);
        ASSERT_LT(t, T);
        ASSERT_EQ(seq, next[t]) << "order per thread";
        ASSERT_EQ(std::vector<uint8_t>(m.data, m.data + n), tagged(0, t, seq, static_cast<unsigned>(n)));
        ++next[t];
        ++total;
    }
    for (auto& x : th) x.join();
    struct loopnic_stats st;
    loopnic_stats(L.n, &st);
    EXPECT_EQ(st.held_max, 0u);
    EXPECT_EQ(velo_close(s), 0);
    EXPECT_EQ(velo_close(r), 0);
}

TEST(Protocol, DisconnectReturnsCreditsAndRefusalWhenFull) {
    Loop L;
    velo_ep_t* r = L.open(1, 2, 6);  // 64 lines: room for one sender's window only
    velo_info_t info;
    ASSERT_EQ(velo_info(r, &info), 0);
    ASSERT_GE(info.credit_lines, 2u);
    velo_ep_t* s1 = L.open(0, 1);
    velo_ep_t* s2 = L.open(0, 2);
    velo_conn_t *c1, *c2;
    velo_msg_t m;
    ASSERT_EQ(velo_connect(s1, {1, 2}, VELO_CONNECT_NOWAIT, &c1), 0);
    velo_poll(r, &m);
    ASSERT_EQ(velo_send(c1, "a", 1), 0);
    ASSERT_EQ(velo_connect(s2, {1, 2}, VELO_CONNECT_NOWAIT, &c2), 0);
    ASSERT_EQ(velo_poll(r, &m), 1);
    EXPECT_EQ(velo_poll(r, &m), -EAGAIN);
    EXPECT_EQ(velo_send(c2, "b", 1), -ENOTCONN) << "refused: no room for a second sender";
    // the first sender leaves; the second asks again and gets its window
    ASSERT_EQ(velo_disconnect(c1), 0);
    EXPECT_EQ(velo_send(c1, "a", 1), -ENOTCONN);
    EXPECT_EQ(velo_disconnect(c1), -ENOTCONN);
    velo_poll(r, &m);
    ASSERT_EQ(velo_connect(s2, {1, 2}, VELO_CONNECT_NOWAIT, &c2), 0);
    velo_poll(r, &m);
    ASSERT_EQ(velo_send(c2, "b", 1), 0);
    ASSERT_EQ(velo_poll(r, &m), 1);
    EXPECT_EQ(m.data[0], 'b');
    // the receiver closes: the sender hears of it
    ASSERT_EQ(velo_close(r), 0);
    int rr = 0;
    for (int i = 0; i < 1000 && rr != -ECONNRESET; ++i) rr = velo_send(c2, "c", 1);
    EXPECT_EQ(rr, -ECONNRESET);
    EXPECT_EQ(velo_close(s1), 0);
    EXPECT_EQ(velo_close(s2), 0);
}
