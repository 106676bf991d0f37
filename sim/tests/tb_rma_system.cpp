// RMA end to end (docs/rma.md): NICs with the RMA unit over real links (the simulated cluster),
// host side as the driver and library do it (sim/system/rma_host.hpp): regions registered
// through BAR0, notification queues, commands as 32-byte BAR4 writes, queues read with the
// no-torn-read rule, the NIC's DMA reads answered from host memory (HostReader: latency, split
// and reordered completions). Every transfer is checked byte-exact against a shadow copy of every
// region, so bytes written where they must not be are found too. SEED= and WAVES=1 as every bench.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "cluster.hpp"
#include "harness.hpp"
#include "rma_host.hpp"
#include "velo/velo_hw.h"

using namespace velo::sim;

namespace {

constexpr unsigned kPut = VELO_RMA_OP_PUT, kGet = VELO_RMA_OP_GET;

// One registered region with the test's shadow of its bytes.
struct Buf {
    unsigned node = 0, idx = 0, owner = 0;
    uint32_t key = 0;  // RG_KEY: bits 7:0 in the NLA, bits 31:8 as a command's RKEY_HI
    uint32_t key_hi() const { return RmaHost::key_hi(key); }
    uint64_t len = 0;
    std::vector<uint8_t> shadow;
};

struct Rig {
    Cluster c;
    RmaHost h;
    std::mt19937_64& r;
    std::map<std::pair<unsigned, unsigned>, std::vector<NqEntry>> got;  // entries by (node, vpid)
    unsigned next_pte[8] = {};
    unsigned slot = 0;

    static Cluster::Config cfg(const std::string& topo, std::mt19937_64& r, double ber = 0.0) {
        Cluster::Config c;
        c.sys.topology = topo;
        c.sys.seed = r();
        c.sys.ber = ber;
        return c;
    }
    Rig(const std::string& topo, std::mt19937_64& rr, double ber = 0.0) : c(cfg(topo, rr, ber)), h(c), r(rr) {
        EXPECT_TRUE(c.init());
        for (unsigned n = 0; n < c.nodes(); ++n) h.enable(n);
        c.on_host_cycle = [this] {
            for (auto& [k, v] : queues) {
                NqEntry e;
                while (h.poll(k.first, k.second, e)) {
                    if (e.kind() == VELO_RMA_NQ_KIND_ERROR && e.err() == VELO_RMA_ERR_BUSY && !e.err_remote()) {
                        park(k, e.slot());
                        continue;
                    }
                    got[k].push_back(e);
                    // a command of ours ended (LOCAL_CPL does not end one): its tag is free again
                    if (e.kind() != VELO_RMA_NQ_KIND_LOCAL_CPL && e.kind() != VELO_RMA_NQ_KIND_TARGET) reissue(k);
                }
            }
            for (auto& [k, p] : parked)  // none of ours in flight: after a wait
                if (!p.empty() && c.cycle() >= park_due[k]) reissue(k);
        };
    }
    // After every test whose commands all ended: every region of every node reads
    // QUIESCE_STATUS.BUSY = 0, i.e. each translation the NIC handed out (puts, gets, errors, reads
    // cut short, invalidations) was given back (docs/rma.md §2.3).
    ~Rig() {
        if (::testing::Test::HasFailure()) return;
        for (unsigned n = 0; n < c.nodes(); ++n)
            for (unsigned rg = 0; rg < (1u << VELO_DEFAULT_RMA_REGION_BITS); ++rg) {
                c.reg_write(n, VELO_REG_RMA_QUIESCE_REGION, rg);
                const uint32_t st = c.reg_read(n, VELO_REG_RMA_QUIESCE_STATUS);
                EXPECT_EQ(st & (1u << VELO_REG_RMA_QUIESCE_STATUS_BUSY_SHIFT), 0u)
                    << "node " << n << " region " << rg << " still holds a translation after its transfers ended";
            }
    }
    // Commands go through cmd(), which keeps their words: a command the NIC refuses for want of a
    // tag (ERROR BUSY, docs/rma.md §6.1) is issued again in its slot, as libvelo does: one each
    // time a command of that vpid ends, or 300 cycles after the refusal.
    std::map<std::tuple<unsigned, unsigned, unsigned>, std::array<uint64_t, 4>> issued;
    std::map<std::pair<unsigned, unsigned>, std::deque<unsigned>> parked;
    std::map<std::pair<unsigned, unsigned>, uint64_t> park_due;
    uint64_t busy_refusals = 0;
    void cmd(unsigned node, unsigned vpid, unsigned slot, uint64_t w0, uint64_t lnla, uint64_t rnla, uint64_t cookie) {
        issued[{node, vpid, slot % VELO_RMA_SLOTS}] = {w0, lnla, rnla, cookie};
        h.command(node, vpid, slot, w0, lnla, rnla, cookie);
    }
    std::set<uint64_t> refused_cookies;
    void park(std::pair<unsigned, unsigned> k, unsigned slot) {
        ++busy_refusals;
        refused_cookies.insert(issued.at({k.first, k.second, slot})[3]);
        parked[k].push_back(slot);
        park_due[k] = c.cycle() + 300;
    }
    void reissue(std::pair<unsigned, unsigned> k) {
        auto& p = parked[k];
        if (p.empty()) return;
        const unsigned slot = p.front();
        p.pop_front();
        park_due[k] = c.cycle() + 300;
        const auto& w = issued.at({k.first, k.second, slot});
        h.command(k.first, k.second, slot, w[0], w[1], w[2], w[3]);
    }
    std::map<std::pair<unsigned, unsigned>, bool> queues;
    void open_nq(unsigned node, unsigned vpid, unsigned log2 = 6) {
        h.open_nq(node, vpid, log2, 0x7000000000ull + node * 0x100000ull + vpid * 0x1000ull);
        queues[{node, vpid}] = true;
    }
    // A region with random contents; pages scattered (every third frame), any start offset.
    // 32 random key bits (bits 7:0 not 0) unless `key`; the scope admits everybody unless `scope`
    Buf region(unsigned node, unsigned idx, unsigned owner, unsigned perm, uint64_t len, uint32_t key = 0,
               const RmaScope& scope = RmaScope{}) {
        Buf b;
        b.node = node;
        b.idx = idx;
        b.owner = owner;
        b.key = key ? key : ((static_cast<uint32_t>(r()) & ~0xFFu) | static_cast<uint32_t>(1 + r() % 255));
        b.len = len;
        const unsigned start = static_cast<unsigned>(r() % 4096);
        const uint64_t frame0 = 0x100000ull + node * 0x40000ull + idx * 0x3000ull + (r() % 16);
        const unsigned pages = static_cast<unsigned>((start + len + 4095) / 4096);
        h.add_region(node, idx, b.key, owner, perm, len, start, frame0, 3, next_pte[node], scope);
        next_pte[node] += pages;
        b.shadow.resize(len);
        for (auto& x : b.shadow) x = static_cast<uint8_t>(r());
        h.write(node, idx, 0, b.shadow);
        return b;
    }
    uint64_t nla(const Buf& b, uint64_t off) const { return RmaHost::nla(b.key, b.idx, off); }

    // Wait until `n` entries more than `before` are in (node, vpid)'s queue.
    bool wait(unsigned node, unsigned vpid, size_t want, uint64_t max_cycles) {
        for (uint64_t i = 0; i < max_cycles; i += 16) {
            if (got[{node, vpid}].size() >= want) return true;
            c.step(16);
        }
        return got[{node, vpid}].size() >= want;
    }
    // Diagnostics when something hangs: the RMA counters and state of every node.
    std::string dump() {
        std::string o;
        for (unsigned n = 0; n < c.nodes(); ++n) {
            o += "node " + std::to_string(n) + ": busy " + std::to_string(c.reg_read(n, VELO_REG_RMA_STATUS)) + " cnt";
            for (unsigned i = 0; i < VELO_RMA_CNT_NUM; ++i) o += " " + std::to_string(h.counter(n, i));
            o += "; host reads pending " + std::to_string(c.reader(n).pending()) + "\n";
        }
        return o;
    }
    // The region's bytes in host memory (all DMA writes visible) equal the shadow.
    void check(Buf& b, const char* what) {
        c.mem(b.node).drain();
        auto m = h.read(b.node, b.idx, 0, b.len);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < b.len; ++i)
            if (m[i] != b.shadow[i] && bad++ == 0) first = i;
        EXPECT_EQ(bad, 0u) << what << ": node " << b.node << " region " << b.idx << ": " << bad
                           << " bytes differ, first at offset " << first;
    }
    void clean() {
        auto e = c.errors();
        for (size_t i = 0; i < e.size() && i < 10; ++i) ADD_FAILURE() << e[i];
        for (auto& x : h.errors) ADD_FAILURE() << x;
    }
};

uint64_t rand_size(std::mt19937_64& r) {
    switch (r() % 8) {
        case 0:
        case 1:
        case 2:
            return 1 + r() % 64;
        case 3:
        case 4:
            return 65 + r() % 1024;
        case 5:
        case 6:
            return 1025 + r() % 16384;
        default:
            return 16385 + r() % 65536;
    }
}

// One put (a -> b) or get (a <- b) of n bytes at the given offsets, waited for and checked.
void transfer(Rig& g, unsigned op, Buf& a, uint64_t aoff, Buf& b, uint64_t boff, uint64_t n, unsigned vpid) {
    const uint64_t cookie = g.r();
    const unsigned slot = g.slot++ % VELO_RMA_SLOTS;
    if (std::getenv("VERBOSE"))
        std::printf("# %s %llu B node %u+%llu %s node %u+%llu at cycle %llu\n", op == kPut ? "put" : "get",
                    static_cast<unsigned long long>(n), a.node, static_cast<unsigned long long>(aoff),
                    op == kPut ? "->" : "<-", b.node, static_cast<unsigned long long>(boff),
                    static_cast<unsigned long long>(g.c.cycle()));
    auto& q = g.got[{a.node, vpid}];
    const size_t before = q.size();
    if (op == kPut) {
        // fresh source bytes
        std::vector<uint8_t> src(n);
        for (auto& x : src) x = static_cast<uint8_t>(g.r());
        g.h.write(a.node, a.idx, aoff, src);
        std::copy(src.begin(), src.end(), a.shadow.begin() + static_cast<long>(aoff));
        g.cmd(a.node, vpid, slot, RmaHost::cmd0(kPut, true, true, false, b.node, static_cast<uint32_t>(n), b.key_hi()),
              g.nla(a, aoff), g.nla(b, boff), cookie);
        ASSERT_TRUE(g.wait(a.node, vpid, before + 2, 40 * n + 200000)) << "put of " << n << " bytes never completed\n"
                                                                       << g.dump();
        const NqEntry& l = q[before];
        const NqEntry& rc = q[before + 1];
        EXPECT_EQ(l.kind(), static_cast<unsigned>(VELO_RMA_NQ_KIND_LOCAL_CPL));
        EXPECT_EQ(rc.kind(), static_cast<unsigned>(VELO_RMA_NQ_KIND_REMOTE_CPL)) << "err " << rc.err();
        EXPECT_EQ(l.cookie, cookie);
        EXPECT_EQ(rc.cookie, cookie);
        EXPECT_EQ(rc.slot(), slot);
        EXPECT_EQ(rc.len(), n);
        EXPECT_EQ(rc.peer_node(), b.node);
        std::copy(src.begin(), src.end(), b.shadow.begin() + static_cast<long>(boff));
    } else {
        std::vector<uint8_t> src(n);
        for (auto& x : src) x = static_cast<uint8_t>(g.r());
        g.h.write(b.node, b.idx, boff, src);
        std::copy(src.begin(), src.end(), b.shadow.begin() + static_cast<long>(boff));
        g.cmd(a.node, vpid, slot, RmaHost::cmd0(kGet, true, false, false, b.node, static_cast<uint32_t>(n), b.key_hi()),
              g.nla(a, aoff), g.nla(b, boff), cookie);
        ASSERT_TRUE(g.wait(a.node, vpid, before + 1, 40 * n + 200000)) << "get of " << n << " bytes never completed\n"
                                                                       << g.dump();
        const NqEntry& d = q[before];
        EXPECT_EQ(d.kind(), static_cast<unsigned>(VELO_RMA_NQ_KIND_GET_DONE)) << "err " << d.err();
        EXPECT_EQ(d.cookie, cookie);
        EXPECT_EQ(d.slot(), slot);
        std::copy(src.begin(), src.end(), a.shadow.begin() + static_cast<long>(aoff));
    }
}

// ------------------------------------------------------------------------------------------------
TEST(RmaSystem, RandomPutsAndGetsByteExact) {
    auto r = test_rng();
    Rig g("pair", r);
    g.open_nq(0, 2);
    g.open_nq(1, 3);
    Buf a = g.region(0, 1, 2, RmaHost::ALL, (1u << 20) + 5000);
    Buf b = g.region(1, 4, 3, RmaHost::ALL, (1u << 20) + 7000);
    uint64_t bytes = 0;
    for (int i = 0; i < 40; ++i) {
        const uint64_t n = rand_size(r);
        const unsigned op = (r() % 2) ? kPut : kGet;
        const uint64_t aoff = r() % (a.len - n + 1), boff = r() % (b.len - n + 1);
        if (r() % 2)
            transfer(g, op, a, aoff, b, boff, n, 2);
        else
            transfer(g, op, b, boff, a, aoff, n, 3);
        bytes += n;
        if (HasFatalFailure()) return;
    }
    // the extremes: 1 MiB each way, odd alignments
    transfer(g, kPut, a, 3, b, 6997, 1u << 20, 2);
    transfer(g, kGet, b, 1, a, 4093, 1u << 20, 3);
    g.check(a, "initiator/target A");
    g.check(b, "initiator/target B");
    EXPECT_EQ(g.h.counter(0, VELO_RMA_CNT_CMD_PUT) + g.h.counter(1, VELO_RMA_CNT_CMD_PUT) +
                  g.h.counter(0, VELO_RMA_CNT_CMD_GET) + g.h.counter(1, VELO_RMA_CNT_CMD_GET),
              42u);
    g.clean();
    std::printf("transferred %llu bytes in %llu cycles\n", static_cast<unsigned long long>(bytes + (2u << 20)),
                static_cast<unsigned long long>(g.c.cycle()));
}

TEST(RmaSystem, ConcurrentPutsFromTwoNodesToOne) {
    auto r = test_rng();
    Rig g("ring:3", r);
    Buf t = g.region(0, 1, 5, RmaHost::ALL, 300000);
    Buf s1 = g.region(1, 2, 1, RmaHost::ALL, 150000);
    Buf s2 = g.region(2, 3, 1, RmaHost::ALL, 150000);
    g.open_nq(1, 1);
    g.open_nq(2, 1);
    // both send at once: node 1 into the lower half, node 2 into the upper half, in pieces
    std::vector<std::pair<uint64_t, uint64_t>> pieces;  // (offset, length) in the source
    for (uint64_t o = 0; o < 150000;) {
        uint64_t n = std::min<uint64_t>(150000 - o, 1 + r() % 40000);
        pieces.push_back({o, n});
        o += n;
    }
    unsigned sent = 0;
    for (auto [o, n] : pieces) {
        g.cmd(1, 1, sent, RmaHost::cmd0(kPut, false, true, false, 0, static_cast<uint32_t>(n), t.key_hi()),
              g.nla(s1, o), g.nla(t, o), 100 + sent);
        g.cmd(2, 1, sent, RmaHost::cmd0(kPut, false, true, false, 0, static_cast<uint32_t>(n), t.key_hi()),
              g.nla(s2, o), g.nla(t, 150000 + o), 200 + sent);
        ++sent;
    }
    ASSERT_TRUE(g.wait(1, 1, sent, 2000000));
    ASSERT_TRUE(g.wait(2, 1, sent, 2000000));
    for (unsigned n = 1; n <= 2; ++n)
        for (unsigned i = 0; i < sent; ++i) {
            const NqEntry& e = g.got[{n, 1}][i];
            EXPECT_EQ(e.kind(), static_cast<unsigned>(VELO_RMA_NQ_KIND_REMOTE_CPL))
                << "err " << e.err() << " remote " << e.err_remote() << " node " << n << " cmd " << i;
            EXPECT_EQ(e.cookie, 100u * n + i) << "completions in command order";
        }
    std::copy(s1.shadow.begin(), s1.shadow.end(), t.shadow.begin());
    std::copy(s2.shadow.begin(), s2.shadow.end(), t.shadow.begin() + 150000);
    g.check(t, "target of two initiators");
    g.check(s1, "source 1");
    g.check(s2, "source 2");
    g.clean();
}

// Ping-pong puts the way velo-pingpong --puts does them, but both at once: node 0 and node 1 put
// a large buffer (16 KiB..1 MiB, random alignments) into each other's region at the same time,
// several rounds, every put answered by LOCAL_CPL then REMOTE_CPL and both regions byte-exact.
// (This stalled: docs/simulator.md, "Put stall"; docs/rma.md §6.1.)
TEST(RmaSystem, LargePutsBothWaysAtOnce) {
    auto r = test_rng();
    Rig g("pair", r);
    g.open_nq(0, 2);
    g.open_nq(1, 3);
    constexpr uint64_t kMax = 1u << 20;
    // region: [0, kMax + 8) put source, [kMax + 8, 2 kMax + 16) put destination
    Buf b[2] = {g.region(0, 1, 2, RmaHost::ALL, 2 * kMax + 16), g.region(1, 4, 3, RmaHost::ALL, 2 * kMax + 16)};
    const unsigned vpid[2] = {2, 3};
    const std::vector<uint64_t> sizes = {16384, 65536, 1 + r() % 200000, 262144, kMax};
    uint64_t cookie = 1;
    for (size_t round = 0; round < sizes.size() * 2; ++round) {
        const uint64_t n = sizes[round % sizes.size()] - (round >= sizes.size() ? r() % 8 : 0);
        size_t before[2];
        uint64_t ck[2];
        for (unsigned s = 0; s < 2; ++s) {
            const unsigned d = 1 - s;
            const uint64_t soff = r() % 8, doff = kMax + 8 + r() % 8;
            std::vector<uint8_t> src(n);
            for (auto& x : src) x = static_cast<uint8_t>(r());
            g.h.write(s, b[s].idx, soff, src);
            std::copy(src.begin(), src.end(), b[s].shadow.begin() + static_cast<long>(soff));
            std::copy(src.begin(), src.end(), b[d].shadow.begin() + static_cast<long>(doff));
            before[s] = g.got[{s, vpid[s]}].size();
            ck[s] = cookie++;
            g.cmd(s, vpid[s], g.slot++ % VELO_RMA_SLOTS,
                  RmaHost::cmd0(kPut, true, true, false, d, static_cast<uint32_t>(n), b[d].key_hi()), g.nla(b[s], soff),
                  g.nla(b[d], doff), ck[s]);
        }
        for (unsigned s = 0; s < 2; ++s) {
            ASSERT_TRUE(g.wait(s, vpid[s], before[s] + 2, 40 * n + 200000))
                << "round " << round << ": node " << s << "'s put of " << n << " bytes never completed\n"
                << g.dump();
            const auto& q = g.got[{s, vpid[s]}];
            EXPECT_EQ(q[before[s]].kind(), static_cast<unsigned>(VELO_RMA_NQ_KIND_LOCAL_CPL));
            EXPECT_EQ(q[before[s] + 1].kind(), static_cast<unsigned>(VELO_RMA_NQ_KIND_REMOTE_CPL))
                << "err " << q[before[s] + 1].err();
            EXPECT_EQ(q[before[s] + 1].cookie, ck[s]);
            EXPECT_EQ(q[before[s] + 1].len(), n);
        }
        g.check(b[0], "node 0");
        g.check(b[1], "node 1");
        if (HasFailure()) return;
    }
    g.clean();
    std::printf("[ info  ] %llu cycles\n", static_cast<unsigned long long>(g.c.cycle()));
}

TEST(RmaSystem, NotifiedPutDeliversATargetEntry) {
    auto r = test_rng();
    Rig g("pair", r);
    g.open_nq(0, 2);
    g.open_nq(1, 6);
    Buf a = g.region(0, 1, 2, RmaHost::ALL, 20000);
    Buf b = g.region(1, 9, 6, RmaHost::ALL, 20000);
    for (int i = 0; i < 6; ++i) {
        const uint64_t n = (i == 0) ? 0 : rand_size(r) % 20000;  // first: a notification-only put
        const uint64_t aoff = r() % (a.len - n + 1), boff = r() % (b.len - n + 1);
        std::vector<uint8_t> src(n);
        for (auto& x : src) x = static_cast<uint8_t>(r());
        g.h.write(0, 1, aoff, src);
        std::copy(src.begin(), src.end(), a.shadow.begin() + static_cast<long>(aoff));
        const size_t tb = g.got[{1, 6}].size(), ib = g.got[{0, 2}].size();
        g.cmd(0, 2, i, RmaHost::cmd0(kPut, false, true, true, 1, static_cast<uint32_t>(n), b.key_hi()), g.nla(a, aoff),
              g.nla(b, boff), 0xC0FFEE00u + i);
        ASSERT_TRUE(g.wait(1, 6, tb + 1, 100000 + 40 * n));
        ASSERT_TRUE(g.wait(0, 2, ib + 1, 100000));
        const NqEntry& t = g.got[{1, 6}][tb];
        EXPECT_EQ(t.kind(), static_cast<unsigned>(VELO_RMA_NQ_KIND_TARGET));
        EXPECT_EQ(t.cookie, 0xC0FFEE00u + i);
        EXPECT_EQ(t.len(), n);
        EXPECT_EQ(t.nla, g.nla(b, boff));
        EXPECT_EQ(t.peer_node(), 0u);
        EXPECT_EQ(t.peer_vpid(), 2u);
        EXPECT_EQ((g.got[{0, 2}][ib].kind()), static_cast<unsigned>(VELO_RMA_NQ_KIND_REMOTE_CPL));
        // the data are visible when the TARGET entry is (no drain: host memory order only)
        EXPECT_EQ(g.h.read(1, 9, boff, n), src) << "TARGET entry before its data";
        std::copy(src.begin(), src.end(), b.shadow.begin() + static_cast<long>(boff));
    }
    g.check(b, "notified target");
    g.clean();
}

TEST(RmaSystem, ErrorsAreNotifiedAndTouchNothing) {
    auto r = test_rng();
    Rig g("pair", r);
    g.open_nq(0, 2);
    Buf a = g.region(0, 1, 2, RmaHost::ALL, 40000);
    Buf other = g.region(0, 2, 7, RmaHost::ALL, 4000);                           // owned by vpid 7
    Buf b = g.region(1, 3, 4, RmaHost::ALL, 30000);                              // writable
    Buf ro = g.region(1, 5, 4, RmaHost::LR | RmaHost::LW | RmaHost::RR, 30000);  // remote read-only
    Buf wo = g.region(1, 6, 4, RmaHost::RW, 30000);                              // no remote read
    struct Case {
        const char* what;
        unsigned op;
        uint64_t lnla, rnla;
        uint32_t rkey_hi;
        uint64_t n;
        unsigned err;
        bool remote;
    };
    const std::vector<Case> cases = {
        {"put, stale key", kPut, g.nla(a, 0), RmaHost::nla(b.key + 1, b.idx, 0), b.key_hi(), 5000,
         VELO_RMA_ERR_BAD_HANDLE, true},
        {"put, unknown region", kPut, g.nla(a, 0), RmaHost::nla(b.key, 200, 0), b.key_hi(), 100,
         VELO_RMA_ERR_BAD_HANDLE, true},
        {"put, out of range", kPut, g.nla(a, 0), g.nla(b, 30000 - 99), b.key_hi(), 100, VELO_RMA_ERR_RANGE, true},
        {"put, read-only region", kPut, g.nla(a, 100), g.nla(ro, 10), ro.key_hi(), 20000, VELO_RMA_ERR_PERM, true},
        {"get, no remote read", kGet, g.nla(a, 0), g.nla(wo, 0), wo.key_hi(), 3000, VELO_RMA_ERR_PERM, true},
        {"get, out of range", kGet, g.nla(a, 0), g.nla(b, 29000), b.key_hi(), 1001, VELO_RMA_ERR_RANGE, true},
        {"put, source not ours", kPut, g.nla(other, 0), g.nla(b, 0), b.key_hi(), 100, VELO_RMA_ERR_NOT_OWNER, false},
        {"get, local out of range", kGet, g.nla(a, 39990), g.nla(b, 0), b.key_hi(), 11, VELO_RMA_ERR_RANGE, false},
    };
    unsigned slot = 0;
    for (const Case& k : cases) {
        const size_t before = g.got[{0, 2}].size();
        g.cmd(0, 2, slot, RmaHost::cmd0(k.op, false, k.op == kPut, false, 1, static_cast<uint32_t>(k.n), k.rkey_hi),
              k.lnla, k.rnla, 0xE000 + slot);
        ASSERT_TRUE(g.wait(0, 2, before + 1, 200000)) << k.what;
        const NqEntry& e = g.got[{0, 2}][before];
        EXPECT_EQ(e.kind(), static_cast<unsigned>(VELO_RMA_NQ_KIND_ERROR)) << k.what;
        EXPECT_EQ(e.err(), k.err) << k.what;
        EXPECT_EQ(e.err_remote(), k.remote) << k.what;
        EXPECT_EQ(e.cookie, 0xE000u + slot) << k.what;
        ++slot;
    }
    g.c.step(2000);
    EXPECT_EQ((g.got[{0, 2}].size()), cases.size()) << "one entry per failed command, nothing else";
    g.check(a, "initiator buffer");
    g.check(other, "foreign buffer");
    g.check(b, "target");
    g.check(ro, "read-only target");
    g.check(wo, "write-only target");
    EXPECT_EQ(g.h.counter(1, VELO_RMA_CNT_ERR_PERM), 2u);
    EXPECT_EQ(g.h.counter(1, VELO_RMA_CNT_ERR_RANGE), 2u);
    EXPECT_EQ(g.h.counter(1, VELO_RMA_CNT_ERR_BAD_HANDLE), 2u);
    g.clean();
}

// RMA protection end to end (docs/rma.md §2.1, §2.2): the target region has a 32-bit key and a
// scope admitting vpids 2..3 of node 0. A put and a get with the right key from vpid 2 work; with
// the right 8 key bits in the NLA but a wrong RKEY_HI, or from vpid 4 (outside the scope), they
// fail with BAD_HANDLE (ERR_REMOTE), the target counts them, and its memory is untouched.
TEST(RmaSystem, KeyAndScopeProtectTheTarget) {
    auto r = test_rng();
    Rig g("pair", r);
    for (unsigned v : {2u, 4u}) g.open_nq(0, v);
    Buf a2 = g.region(0, 1, 2, RmaHost::ALL, 20000);
    Buf a4 = g.region(0, 2, 4, RmaHost::ALL, 20000);
    RmaScope sc;
    sc.node_lo = sc.node_hi = 0;
    sc.vpid_lo = 2;
    sc.vpid_hi = 3;
    Buf b = g.region(1, 3, 5, RmaHost::ALL, 30000, 0xA5C3E1B7u, sc);
    ASSERT_NE(b.key_hi(), 0u);
    // admitted: works both ways
    transfer(g, kPut, a2, 100, b, 1000, 5000, 2);
    transfer(g, kGet, a2, 9000, b, 20000, 3000, 2);
    g.check(b, "target after the admitted put");
    g.check(a2, "initiator after the admitted get");
    struct Case {
        const char* what;
        unsigned vpid, op;
        uint32_t rkey_hi;
        uint64_t n;
    };
    const Case cases[] = {
        {"put, wrong key bits 31:8", 2, kPut, b.key_hi() ^ 0x000100u, 4000},
        {"put, key bits 31:8 of 0", 2, kPut, 0, 300},
        {"get, wrong key bits 31:8", 2, kGet, b.key_hi() ^ 0x800000u, 2000},
        {"put, vpid outside the scope", 4, kPut, b.key_hi(), 4000},
        {"get, vpid outside the scope", 4, kGet, b.key_hi(), 2000},
    };
    const uint32_t bh0 = g.h.counter(1, VELO_RMA_CNT_ERR_BAD_HANDLE);
    const uint64_t rx0 = g.h.counter(1, VELO_RMA_CNT_RX_BYTES), tx0 = g.h.counter(1, VELO_RMA_CNT_TX_BYTES);
    unsigned slot = 40;
    for (const Case& k : cases) {
        Buf& a = k.vpid == 2 ? a2 : a4;
        // fresh initiator bytes: a failed get must leave them as they are
        std::vector<uint8_t> src(k.n);
        for (auto& x : src) x = static_cast<uint8_t>(g.r());
        g.h.write(0, a.idx, 0, src);
        std::copy(src.begin(), src.end(), a.shadow.begin());
        const size_t before = g.got[{0, k.vpid}].size();
        g.cmd(0, k.vpid, slot, RmaHost::cmd0(k.op, true, k.op == kPut, false, 1, static_cast<uint32_t>(k.n), k.rkey_hi),
              g.nla(a, 0), g.nla(b, 2000), 0xBAD000 + slot);
        // a put: LOCAL_CPL, then ERROR; a get: ERROR
        const size_t want = before + (k.op == kPut ? 2 : 1);
        ASSERT_TRUE(g.wait(0, k.vpid, want, 400000)) << k.what << "\n" << g.dump();
        const NqEntry& e = g.got[{0, k.vpid}][want - 1];
        EXPECT_EQ(e.kind(), static_cast<unsigned>(VELO_RMA_NQ_KIND_ERROR)) << k.what;
        EXPECT_EQ(e.err(), static_cast<unsigned>(VELO_RMA_ERR_BAD_HANDLE)) << k.what;
        EXPECT_TRUE(e.err_remote()) << k.what;
        EXPECT_EQ(e.cookie, 0xBAD000u + slot) << k.what;
        ++slot;
    }
    g.c.step(2000);
    for (unsigned v : {2u, 4u}) {
        size_t n = 0;
        for (auto& e : g.got[{0, v}]) n += e.cookie >= 0xBAD000u && e.cookie < 0xBAD000u + 100;
        EXPECT_EQ(n, v == 2 ? 5u : 3u) << "vpid " << v << ": entries of the failed commands, nothing else";
    }
    g.check(b, "target: byte for byte untouched by the refused puts and gets");
    g.check(a2, "initiator vpid 2: nothing written by the refused get");
    g.check(a4, "initiator vpid 4: nothing written by the refused get");
    EXPECT_EQ(g.h.counter(1, VELO_RMA_CNT_ERR_BAD_HANDLE) - bh0, 5u) << "the target counts each refusal";
    EXPECT_EQ(g.h.counter(1, VELO_RMA_CNT_RX_BYTES), rx0) << "no byte written at the target";
    EXPECT_EQ(g.h.counter(1, VELO_RMA_CNT_TX_BYTES), tx0) << "no byte read and sent by the target";
    // and the right key from the admitted vpid still works afterwards
    transfer(g, kPut, a2, 0, b, 25000, 1000, 2);
    g.check(b, "target after the last put");
    g.clean();
}

TEST(RmaSystem, InvalidationDuringAPutStopsItsWrites) {
    auto r = test_rng();
    Rig g("pair", r);
    g.open_nq(0, 2);
    Buf a = g.region(0, 1, 2, RmaHost::ALL, 300000);
    Buf b = g.region(1, 2, 3, RmaHost::ALL, 300000);
    const uint64_t n = 250000;
    g.cmd(0, 2, 0, RmaHost::cmd0(kPut, false, true, false, 1, n, b.key_hi()), g.nla(a, 0), g.nla(b, 17), 77);
    // let part of it arrive, then withdraw the target's translation (the MMU notifier's sequence)
    while (g.h.counter(1, VELO_RMA_CNT_RX_BYTES) < 30000) g.c.step(500);
    g.h.invalidate(1, 2);
    g.c.mem(1).drain();
    const auto snap = g.h.read(1, 2, 0, b.len);
    ASSERT_TRUE(g.wait(0, 2, 1, 2000000));
    const NqEntry& e = g.got[{0, 2}][0];
    EXPECT_EQ(e.kind(), static_cast<unsigned>(VELO_RMA_NQ_KIND_ERROR));
    EXPECT_EQ(e.err(), static_cast<unsigned>(VELO_RMA_ERR_NOT_VALID));
    EXPECT_TRUE(e.err_remote());
    g.c.mem(1).drain();
    const auto after = g.h.read(1, 2, 0, b.len);
    EXPECT_TRUE(after == snap) << "target memory written after the quiesce";
    // what was written before is the put's data, nothing else changed
    size_t written = 0;
    for (size_t i = 0; i < b.len; ++i) {
        if (after[i] == b.shadow[i]) continue;
        ASSERT_TRUE(i >= 17 && i < 17 + n) << "byte " << i << " outside the put changed";
        ASSERT_EQ(after[i], a.shadow[i - 17]) << "byte " << i;
        ++written;
    }
    EXPECT_GT(written, 0u);
    EXPECT_LT(written, n);
    g.clean();
}

TEST(RmaSystem, LinkBitErrorsDuringLargeTransfers) {
    auto r = test_rng();
    Rig g("pair", r, 2e-5);
    g.open_nq(0, 2);
    g.open_nq(1, 3);
    Buf a = g.region(0, 1, 2, RmaHost::ALL, 400000);
    Buf b = g.region(1, 4, 3, RmaHost::ALL, 400000);
    transfer(g, kPut, a, 5, b, 11, 300000, 2);
    transfer(g, kGet, b, 300, a, 1, 200000, 3);
    g.check(a, "A");
    g.check(b, "B");
    uint32_t crc =
        g.c.link_counter(0, 1, VELO_TBL_NET_PORT_CNT_CRC_ERR) + g.c.link_counter(1, 1, VELO_TBL_NET_PORT_CNT_CRC_ERR);
    EXPECT_GT(crc, 0u) << "no bit error hit a packet: the test did not test anything";
    g.clean();
}

TEST(RmaSystem, MessageAfterRemoteCompletionArrivesAfterTheData) {
    auto r = test_rng();
    Rig g("pair", r);
    g.open_nq(0, 2);
    g.c.open_mailbox(1, 3, 4, 0x50000000ull);
    Buf a = g.region(0, 1, 2, RmaHost::ALL, 70000);
    Buf b = g.region(1, 4, 3, RmaHost::ALL, 70000);
    // on delivery of message i at node 1, the data of put i must already be visible there
    std::map<unsigned, std::pair<uint64_t, std::vector<uint8_t>>> expect;
    unsigned seen = 0;
    g.c.on_msg = [&](unsigned node, const Msg& m, uint64_t) {
        if (node != 1 || m.bytes.size() < 1) return;
        const unsigned i = m.bytes[0];
        auto& [off, data] = expect.at(i);
        EXPECT_EQ(g.h.read(1, 4, off, data.size()), data) << "message " << i << " overtook its put's data";
        ++seen;
    };
    for (unsigned i = 0; i < 12; ++i) {
        const uint64_t n = 1 + r() % 8000, aoff = r() % (a.len - n), boff = r() % (b.len - n);
        std::vector<uint8_t> src(n);
        for (auto& x : src) x = static_cast<uint8_t>(r());
        g.h.write(0, 1, aoff, src);
        expect[i] = {boff, src};
        const size_t before = g.got[{0, 2}].size();
        g.cmd(0, 2, i, RmaHost::cmd0(kPut, false, true, false, 1, static_cast<uint32_t>(n), b.key_hi()), g.nla(a, aoff),
              g.nla(b, boff), i);
        // poll for REMOTE_CPL, then send the message at once
        while (g.got[{0, 2}].size() == before) g.c.step(1);
        ASSERT_EQ((g.got[{0, 2}][before].kind()), static_cast<unsigned>(VELO_RMA_NQ_KIND_REMOTE_CPL));
        std::vector<uint8_t> msg(8, static_cast<uint8_t>(i));
        g.c.send(0, 2, 1, 3, msg, WcMode::Burst);
    }
    ASSERT_TRUE(g.c.run_until_idle(200000));
    EXPECT_EQ(seen, 12u);
    g.clean();
}

// ------------------------------------------------------------------------------------------------
// RMA while the same nodes' CPUs send VELO messages (docs/rma.md §6.1, "Host reads and posted
// writes"). Host read completions reach a NIC behind its CPU's posted writes (send-window stores,
// BAR4 commands, read-pointer updates) and must not pass them, so nothing in the NIC that keeps
// posted writes from draining may wait for one of its own reads. Every `rounds` round: every
// sender queues `msgs` random messages (1..64 B, every write-combining mode, end-to-end credits so
// mailboxes never block) to random vpids of every node, then every RMA node issues `cmds` commands
// at once (fewer than the initiator's 16 tags) to node n + 1: puts, gets or both at random, of
// random sizes 1 B..20 KB; every command reads and writes bytes no other command touches. Asserted: every command
// answered by exactly one completion of the right kind (REMOTE_CPL / GET_DONE, never ERROR: a host read that waited
// behind the posted writes until it timed out would end in ERROR/NOT_VALID), in command order for puts; every region
// byte-exact (nothing written elsewhere); every message delivered once, byte-exact, in order per thread pair (the
// scoreboard).
struct MixSpec {
    std::string topo;
    std::vector<unsigned> senders;  // nodes whose CPUs send VELO messages
    std::vector<unsigned> rma;      // nodes issuing RMA commands (to node n + 1)
    enum Ops { Puts, Gets, Both } ops = Puts;
    unsigned rounds = 3, msgs = 150, cmds = 10;
};

// *refused: the commands the NIC refused (ERROR BUSY) and the rig issued again.
void rma_with_messages(const MixSpec& m, uint64_t* refused = nullptr) {
    auto r = test_rng();
    Rig g(m.topo, r);
    const unsigned nn = g.c.nodes();
    constexpr unsigned kVpid = 2;  // RMA user on every node; VELO to vpids 0 and 1
    // region: [0, kPart) put source, [kPart, 2 kPart) get source, [2 kPart, 3 kPart) put
    // destination, [3 kPart, 4 kPart) get destination
    constexpr uint64_t kPart = 256 * 1024;
    for (unsigned n = 0; n < nn; ++n) {
        g.open_nq(n, kVpid, 6);
        for (unsigned v = 0; v < 2; ++v) g.c.open_mailbox(n, v, 6, 0x40000000ull + n * 0x1000000ull + v * 0x10000ull);
    }
    std::vector<Buf> b;
    for (unsigned n = 0; n < nn; ++n) b.push_back(g.region(n, 1, kVpid, RmaHost::ALL, 4 * kPart));
    struct Cmd {
        bool put;
        uint64_t off, len, cookie;
    };
    std::vector<std::vector<Cmd>> cmds(nn);
    // every command reads and writes bytes of its own (sources and destinations given out in
    // order): node n is the only one that reads the source part of n (puts) or n + 1 (gets) and
    // the only one that writes the destination part of n + 1 (puts) or n (gets)
    std::vector<uint64_t> used_put(nn, 0), used_get(nn, 0);
    uint64_t cookie = 1;
    for (unsigned round = 0; round < m.rounds; ++round) {
        for (unsigned s : m.senders)
            for (unsigned i = 0; i < m.msgs; ++i) {
                std::vector<uint8_t> msg(1 + r() % 64);
                for (auto& x : msg) x = static_cast<uint8_t>(r());
                const std::vector<WcMode> modes{WcMode::Burst, WcMode::FullLine, WcMode::Split, WcMode::Chunk8,
                                                WcMode::Bytes};
                g.c.send(s, 100 + static_cast<unsigned>(r() % 4), static_cast<unsigned>(r() % nn),
                         static_cast<unsigned>(r() % 2), msg, modes[r() % modes.size()]);
            }
        for (unsigned n : m.rma) {
            const unsigned peer = (n + 1) % nn;
            for (unsigned i = 0; i < m.cmds; ++i) {
                const uint64_t len = 1 + r() % 20000;
                const bool put = m.ops == MixSpec::Puts || (m.ops == MixSpec::Both && r() % 2);
                uint64_t& used = put ? used_put[n] : used_get[n];
                if (used + len > kPart) break;
                // puts: n's put source -> peer's put destination; gets: peer's get source -> n's get
                // destination
                Cmd c{put, used, len, cookie++};
                used += len;
                std::vector<uint8_t> src(len);
                for (auto& x : src) x = static_cast<uint8_t>(r());
                Buf& from = put ? b[n] : b[peer];
                Buf& to = put ? b[peer] : b[n];
                const uint64_t src_off = (put ? 0 : kPart) + c.off, dst_off = (put ? 2 : 3) * kPart + c.off;
                g.h.write(from.node, from.idx, src_off, src);
                std::copy(src.begin(), src.end(), from.shadow.begin() + static_cast<long>(src_off));
                std::copy(src.begin(), src.end(), to.shadow.begin() + static_cast<long>(dst_off));
                const uint64_t lnla = g.nla(b[n], put ? src_off : dst_off);
                const uint64_t rnla = g.nla(b[peer], put ? dst_off : src_off);
                g.cmd(n, kVpid, g.slot++ % VELO_RMA_SLOTS,
                      RmaHost::cmd0(put ? kPut : kGet, !put, put, false, peer, static_cast<uint32_t>(len),
                                    b[peer].key_hi()),
                      lnla, rnla, c.cookie);
                cmds[n].push_back(c);
            }
        }
        // wait for every command and message of the round
        auto done = [&] {
            for (unsigned n = 0; n < nn; ++n)
                if (g.got[{n, kVpid}].size() < cmds[n].size()) return false;
            return g.c.scoreboard().outstanding() == 0 && g.c.threads_idle();
        };
        uint64_t waited = 0;
        for (; waited < 3000000 && !done(); waited += 100) g.c.step(100);
        ASSERT_TRUE(done()) << "round " << round << ": " << g.c.scoreboard().outstanding()
                            << " messages outstanding, commands answered/issued:" <<
            [&] {
                std::string o;
                for (unsigned n = 0; n < nn; ++n)
                    o += " " + std::to_string(g.got[{n, kVpid}].size()) + "/" + std::to_string(cmds[n].size());
                return o;
            }() << "\n" << g.dump();
    }
    g.c.step(3000);  // nothing else may arrive
    size_t total = 0;
    for (unsigned n = 0; n < nn; ++n) {
        const auto& q = g.got[{n, kVpid}];
        ASSERT_EQ(q.size(), cmds[n].size()) << "node " << n << ": one completion per command";
        std::map<uint64_t, const Cmd*> by_cookie;
        for (const Cmd& x : cmds[n]) by_cookie[x.cookie] = &x;
        uint64_t last_put = 0;
        for (size_t i = 0; i < q.size(); ++i) {
            auto it = by_cookie.find(q[i].cookie);
            ASSERT_NE(it, by_cookie.end())
                << "node " << n << ": completion for no command (or twice), cookie " << q[i].cookie;
            const Cmd* c = it->second;
            by_cookie.erase(it);
            // puts complete in command order (but for those refused and issued again)
            if (c->put && !g.refused_cookies.count(c->cookie)) {
                EXPECT_GT(c->cookie, last_put) << "node " << n << ": put completions out of command order";
                last_put = c->cookie;
            }
            EXPECT_EQ(q[i].kind(),
                      static_cast<unsigned>(c->put ? VELO_RMA_NQ_KIND_REMOTE_CPL : VELO_RMA_NQ_KIND_GET_DONE))
                << "node " << n << " " << (c->put ? "put" : "get") << " cookie " << c->cookie << " (" << c->len
                << " B): err " << q[i].err() << " remote " << q[i].err_remote();
        }
        total += q.size();
    }
    for (auto& x : b) g.check(x, "region");
    g.clean();
    EXPECT_EQ(g.c.scoreboard().outstanding(), 0u);
    std::printf(
        "[ info  ] %s: %zu RMA commands (%llu refused BUSY, issued again), %zu messages per sender, %llu cycles\n",
        m.topo.c_str(), total, static_cast<unsigned long long>(g.busy_refusals), static_cast<size_t>(m.rounds * m.msgs),
        static_cast<unsigned long long>(g.c.cycle()));
    if (refused) *refused = g.busy_refusals;
}

// Limit 1 of docs/rma.md: puts by a node whose CPU sends VELO messages at the same time.
TEST(RmaMixed, PutsWhileTheSameNodeSendsVeloMessages) {
    MixSpec m;
    m.topo = "pair";
    m.senders = {0};
    m.rma = {0};
    rma_with_messages(m);
}

// Limit 2: gets served by nodes whose CPUs send VELO messages, in both directions.
TEST(RmaMixed, GetsWhileVeloMessagesFlowBothWays) {
    MixSpec m;
    m.topo = "pair";
    m.senders = {0, 1};
    m.rma = {0, 1};
    m.ops = MixSpec::Gets;
    rma_with_messages(m);
}

TEST(RmaMixed, GetsWhileVeloMessagesFlowOnARingOf3) {
    MixSpec m;
    m.topo = "ring:3";
    m.senders = {0, 1, 2};
    m.rma = {0, 1, 2};
    m.ops = MixSpec::Gets;
    rma_with_messages(m);
}

// Limit 3: puts and gets outstanding together on every node, without and with VELO messages.
TEST(RmaMixed, PutsAndGetsOnEveryNode) {
    MixSpec m;
    m.topo = "ring:3";
    m.rma = {0, 1, 2};
    m.ops = MixSpec::Both;
    m.msgs = 0;
    rma_with_messages(m);
}

// Limit 3 (docs/rma.md §6.1): more commands at once than the initiator has tags (16). A command
// beyond the tags used to wait in velo_rma_cmd, so the BAR4 write and every posted write behind it
// stopped, and with them the read completions the puts holding the tags waited for (the reads
// timed out, the puts ended in ERROR/NOT_VALID). Now the NIC refuses it at once (ERROR BUSY) and
// the rig issues it again: every command completes once, byte-exact, puts in command order among
// those accepted.
TEST(RmaMixed, MoreCommandsThanTags) {
    MixSpec m;
    m.topo = "pair";
    m.rma = {0};
    m.ops = MixSpec::Puts;
    m.msgs = 0;
    m.rounds = 1;
    m.cmds = 24;
    uint64_t refused = 0;
    rma_with_messages(m, &refused);
    EXPECT_GT(refused, 0u) << "no command was refused: the test did not test anything";
}

// The same with puts and gets from both nodes of a pair while both CPUs send VELO messages, 40
// commands per node and round.
TEST(RmaMixed, MoreCommandsThanTagsBothWaysWithVeloMessages) {
    MixSpec m;
    m.topo = "pair";
    m.senders = {0, 1};
    m.rma = {0, 1};
    m.ops = MixSpec::Both;
    m.rounds = 2;
    m.cmds = 40;
    uint64_t refused = 0;
    rma_with_messages(m, &refused);
    EXPECT_GT(refused, 0u);
}

TEST(RmaMixed, PutsAndGetsOnEveryNodeWithVeloMessages) {
    MixSpec m;
    m.topo = "ring:3";
    m.senders = {0, 1, 2};
    m.rma = {0, 1, 2};
    m.ops = MixSpec::Both;
    rma_with_messages(m);
}

}  // namespace
