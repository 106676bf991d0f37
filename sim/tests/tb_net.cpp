// Network tests: multi-node clusters of NICs (pair, rings of 4 and 8, 3x3 torus) over link channels
// with fault injection (bit errors, lost flits, links going down), driven by host models that
// send through write combining and poll DMA-written mailboxes. The scoreboard demands every
// message exactly once, byte-exact, in order per (source, destination) thread pair. The mixed
// tests add RMA puts and gets (packets of up to 256 bytes of payload area, RMA_MTU 240) on the
// same links and switches as the VELO messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <vector>

#include "cluster.hpp"
#include "rma_host.hpp"
#include "velo/velo_hw.h"

using namespace velo::sim;

namespace {

std::vector<uint8_t> random_msg(std::mt19937_64& r, unsigned len) {
    std::vector<uint8_t> m(len);
    for (auto& b : m) b = static_cast<uint8_t>(r());
    return m;
}

void expect_clean(Cluster& c) {
    auto e = c.errors();
    for (size_t i = 0; i < e.size() && i < 20; ++i) ADD_FAILURE() << e[i];
    EXPECT_TRUE(e.empty()) << e.size() << " model errors";
    EXPECT_EQ(c.scoreboard().outstanding(), 0u);
}

uint64_t mbox_base(unsigned node, unsigned vpid) {
    return (vpid % 2 ? 0x123400000000ull : 0x40000000ull) + node * 0x1000000ull + vpid * 0x10000ull;
}

Cluster::Config config(const std::string& topo, std::mt19937_64& r) {
    Cluster::Config c;
    c.sys.topology = topo;
    c.sys.seed = r();
    return c;
}

// Sum of one link counter over every port of every node.
uint64_t link_sum(Cluster& c, uint32_t reg) {
    uint64_t s = 0;
    for (unsigned n = 0; n < c.nodes(); ++n)
        for (unsigned p = 1; p <= c.sys().net_ports(); ++p) s += c.link_counter(n, p, reg);
    return s;
}

void open_all(Cluster& c, unsigned vpids, unsigned log2) {
    for (unsigned n = 0; n < c.nodes(); ++n)
        for (unsigned v = 0; v < vpids; ++v) c.open_mailbox(n, v, log2, mbox_base(n, v));
}

const std::vector<WcMode> kModes{WcMode::Burst, WcMode::FullLine, WcMode::Split, WcMode::Chunk8, WcMode::Bytes};

// Every node sends `per_pair` messages to every other node (and a few to itself), all queued
// at once: the network saturates.
unsigned all_to_all(Cluster& c, std::mt19937_64& r, unsigned per_pair, unsigned vpids) {
    unsigned sent = 0;
    for (unsigned k = 0; k < per_pair; ++k)
        for (unsigned s = 0; s < c.nodes(); ++s)
            for (unsigned d = 0; d < c.nodes(); ++d) {
                if (s == d && k % 4) continue;
                unsigned len = 1 + static_cast<unsigned>(r() % 64);
                c.send(s, 100 + static_cast<unsigned>(r() % 4), d, static_cast<unsigned>(r() % vpids),
                       random_msg(r, len), k % 8 == 7 ? kModes[r() % kModes.size()] : WcMode::Burst);
                ++sent;
            }
    return sent;
}

void uniform_random(Cluster& c, std::mt19937_64& r, unsigned msgs, unsigned vpids) {
    for (unsigned i = 0; i < msgs; ++i) {
        unsigned s = static_cast<unsigned>(r() % c.nodes()), d = static_cast<unsigned>(r() % c.nodes());
        unsigned len = 1 + static_cast<unsigned>(r() % 64);
        c.send(s, 100 + static_cast<unsigned>(r() % 4), d, static_cast<unsigned>(r() % vpids), random_msg(r, len),
               kModes[r() % kModes.size()]);
    }
}

}  // namespace

// ------------------------------------------------------------------------------ topologies
class Topo : public ::testing::TestWithParam<const char*> {};

TEST_P(Topo, AllToAllSaturatingTrafficCompletes) {
    auto r = test_rng();
    Cluster c(config(GetParam(), r));
    ASSERT_TRUE(c.init()) << "links did not come up";
    open_all(c, 2, 6);
    unsigned sent = all_to_all(c, r, c.nodes() > 4 ? 6 : 12, 2);
    ASSERT_TRUE(c.run_until_idle(3000000)) << c.scoreboard().outstanding() << " of " << sent << " left";
    expect_clean(c);
    EXPECT_EQ(c.scoreboard().delivered, sent);
    // clean links: no errors, no replays beyond link-up, nothing dropped
    EXPECT_EQ(link_sum(c, VELO_TBL_NET_PORT_CNT_CRC_ERR), 0u);
    EXPECT_EQ(link_sum(c, VELO_TBL_NET_PORT_CNT_STOMP), 0u);
    for (unsigned n = 0; n < c.nodes(); ++n) {
        EXPECT_EQ(c.reg_read(n, VELO_REG_NET_DROP_NO_ROUTE), 0u);
        EXPECT_EQ(c.counter(n, VELO_CNT_DROP_RX_BAD_PKT), 0u);
    }
}

TEST_P(Topo, UniformTrafficUnderBitErrorsLosesNothing) {
    auto r = test_rng();
    auto cfg = config(GetParam(), r);
    cfg.sys.ber = 1e-5;
    Cluster c(cfg);
    ASSERT_TRUE(c.init()) << "links did not come up";
    open_all(c, 3, 5);
    uniform_random(c, r, 150 * c.nodes(), 3);
    ASSERT_TRUE(c.run_until_idle(4000000)) << c.scoreboard().outstanding() << " left";
    expect_clean(c);
    std::printf("[ info  ] %s BER 1e-5: %llu CRC errors, %llu replays, %llu stomped, %llu control symbols dropped\n",
                GetParam(), static_cast<unsigned long long>(link_sum(c, VELO_TBL_NET_PORT_CNT_CRC_ERR)),
                static_cast<unsigned long long>(link_sum(c, VELO_TBL_NET_PORT_CNT_REPLAY)),
                static_cast<unsigned long long>(link_sum(c, VELO_TBL_NET_PORT_CNT_STOMP)),
                static_cast<unsigned long long>(link_sum(c, VELO_TBL_NET_PORT_CNT_CTL_DROP)));
}

INSTANTIATE_TEST_SUITE_P(Net, Topo, ::testing::Values("pair", "ring:4", "ring:8", "torus:3x3"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                             std::string s = i.param;
                             for (auto& ch : s)
                                 if (ch == ':') ch = '_';
                             return s;
                         });

// ------------------------------------------------------------------------------ faults
// A high error rate on a ring: packets fail their CRC after cut-through forwarding began, so they
// reach later hops and the completer marked bad (stomped) and are dropped there; the link replays
// them. The scoreboard proves that no bad packet reached a mailbox and that nothing was lost.
TEST(NetFaults, CutThroughNeverDeliversACorruptedPacket) {
    auto r = test_rng();
    auto cfg = config("ring:4", r);
    cfg.sys.ber = 2e-4;
    Cluster c(cfg);
    ASSERT_TRUE(c.init());
    open_all(c, 2, 6);
    // two-hop traffic only: 0 -> 2, 1 -> 3, 2 -> 0, 3 -> 1
    for (unsigned i = 0; i < 400; ++i) {
        unsigned s = i % 4;
        c.send(s, 100 + i % 3, (s + 2) % 4, i % 2, random_msg(r, 1 + static_cast<unsigned>(r() % 64)), WcMode::Burst);
    }
    ASSERT_TRUE(c.run_until_idle(4000000)) << c.scoreboard().outstanding() << " left";
    expect_clean(c);
    const uint64_t crc = link_sum(c, VELO_TBL_NET_PORT_CNT_CRC_ERR), stomp = link_sum(c, VELO_TBL_NET_PORT_CNT_STOMP);
    uint64_t bad = 0;
    for (unsigned n = 0; n < 4; ++n) bad += c.counter(n, VELO_CNT_DROP_RX_BAD_PKT);
    std::printf("[ info  ] %llu CRC errors, %llu stomped packets forwarded, %llu dropped at completers\n",
                static_cast<unsigned long long>(crc), static_cast<unsigned long long>(stomp),
                static_cast<unsigned long long>(bad));
    EXPECT_GT(crc, 0u);
    EXPECT_GT(stomp, 0u) << "no packet was cut-through forwarded before failing: the test proves nothing";
    EXPECT_GT(bad, 0u);
}

TEST(NetFaults, LostFlitsAreRecovered) {
    auto r = test_rng();
    auto cfg = config("ring:4", r);
    cfg.sys.flit_loss = 2e-4;
    Cluster c(cfg);
    ASSERT_TRUE(c.init());
    open_all(c, 2, 6);
    uniform_random(c, r, 600, 2);
    ASSERT_TRUE(c.run_until_idle(4000000)) << c.scoreboard().outstanding() << " left";
    expect_clean(c);
    EXPECT_GT(link_sum(c, VELO_TBL_NET_PORT_CNT_REPLAY), 0u);
}

TEST(NetFaults, LinkDownAndBackLosesAndDuplicatesNothing) {
    auto r = test_rng();
    Cluster c(config("ring:4", r));
    ASSERT_TRUE(c.init());
    open_all(c, 2, 6);
    uniform_random(c, r, 400, 2);
    c.step(3000);
    c.sys().set_link_down(0, 1, true);  // the link between node 0 and node 1
    c.step(5000);
    EXPECT_FALSE(c.sys().links_up());
    c.sys().set_link_down(0, 1, false);
    ASSERT_TRUE(c.run_until_idle(4000000)) << c.scoreboard().outstanding() << " left";
    expect_clean(c);
    EXPECT_TRUE(c.sys().links_up());
    EXPECT_GE(c.link_counter(0, 1, VELO_TBL_NET_PORT_CNT_LINK_DOWN), 1u);
    EXPECT_GE(c.link_counter(1, 2, VELO_TBL_NET_PORT_CNT_LINK_DOWN), 1u);
}

// ------------------------------------------------------------------------------ quiet
// System::quiet() lets the fabric sleep: once it holds, nothing may move on any wire until a CPU
// posts again, also when bit errors and lost flits have left replays, NACKs, lost ACKs or credit
// repairs behind. Rounds of traffic under faults, each run until delivered; then, with the faults
// switched off (a fault on an idle wire rightly moves things), until quiet() holds; then
// every wire must keep repeating its idle pattern for 5,000 cycles (longer than every link
// timer), and no DMA write may come. With the clock gates (the NICs at rest: the short margin)
// and without them (the wide one).
void quiet_rounds(bool sim_gate) {
    auto r = test_rng();
    auto cfg = config("ring:4", r);
    const double kBer = 1e-3, kLoss = 1e-3;
    cfg.sys.ber = kBer;
    cfg.sys.flit_loss = kLoss;
    cfg.sys.sim_gate = sim_gate;
    Cluster c(cfg);
    ASSERT_TRUE(c.init());
    open_all(c, 2, 6);
    // (node, port) -> the symbols of the last VELO_NVC + 1 cycles (an idle wire's period)
    const unsigned period = VELO_NVC + 1;
    std::map<std::pair<unsigned, unsigned>, std::vector<uint64_t>> hist;
    uint64_t changes = 0, dma = 0;
    c.sys().on_flit = [&](unsigned n, unsigned p, uint64_t f) {
        auto& h = hist[{n, p}];
        if (h.size() == period && h.front() != f) ++changes;
        h.push_back(f);
        if (h.size() > period) h.erase(h.begin());
    };
    auto dma_prev = c.sys().on_dma_write;
    c.sys().on_dma_write = [&](unsigned n, const Tlp& t) {
        ++dma;
        dma_prev(n, t);
    };
    uint64_t waited_max = 0;
    const unsigned rounds = 25;
    for (unsigned round = 0; round < rounds; ++round) {
        uniform_random(c, r, 1 + static_cast<unsigned>(r() % 12), 2);
        ASSERT_TRUE(c.run_until_idle(2000000)) << "round " << round << ": " << c.scoreboard().outstanding() << " left";
        // faults for a while longer (the last ACKs and credits may be hit), then none (a fault on
        // an idle wire moves things, rightly): what the faults of the round left behind (a lost
        // ACK, a NACK, a replay, a credit repair) must have played out before quiet()
        c.step(r() % 400);
        c.sys().set_faults(0, 0);
        const uint64_t idle_at = c.sys().cycle();
        while (!c.sys().quiet()) {
            ASSERT_LT(c.sys().cycle() - idle_at, 20000u) << "round " << round << ": never quiet";
            c.step(1);
        }
        waited_max = std::max(waited_max, c.sys().cycle() - idle_at);
        changes = 0;
        dma = 0;
        for (unsigned i = 0; i < 5000; ++i) {
            c.step(1);
            for (unsigned n = 0; n < c.nodes(); ++n) ASSERT_EQ(c.sys().cpu_queued(n), 0u) << "round " << round;
            ASSERT_EQ(changes, 0u) << "round " << round << ": a wire changed " << i + 1 << " cycles after quiet()";
            ASSERT_EQ(dma, 0u) << "round " << round << ": a DMA write " << i + 1 << " cycles after quiet()";
        }
        c.sys().set_faults(kBer, kLoss);
    }
    expect_clean(c);
    // the faults were real: packets were replayed
    EXPECT_GT(link_sum(c, VELO_TBL_NET_PORT_CNT_REPLAY), 0u);
    std::printf("%u rounds: quiet at most %llu cycles after the last delivery (%s)\n", rounds,
                static_cast<unsigned long long>(waited_max), sim_gate ? "clock gates" : "no clock gates");
}

TEST(NetQuiet, NothingMovesAfterQuietUnderFaults) {
    quiet_rounds(true);
}

TEST(NetQuiet, NothingMovesAfterQuietUnderFaultsWithoutClockGates) {
    quiet_rounds(false);
}

// ------------------------------------------------------------------------------ congestion
// A full mailbox stalls what shares a buffer with its traffic, and nothing else. Ring of 4; node
// 2 stops reading vpid 0, and node 0 sends to it without end-to-end credits (as a misbehaving
// program could), so packets back up into the network: node 2's completer, the buffer of node 2's
// input from node 1 and node 1's input from node 0 fill for VC 0. Flows that use none of those
// buffers (3 -> 0, 2 -> 1, 1 -> 0) must keep completing; once node 2 reads again, all drains.
TEST(NetCongestion, FullMailboxStallsOnlyWhatSharesItsBuffers) {
    auto r = test_rng();
    auto cfg = config("ring:4", r);
    cfg.credits = false;
    cfg.max_inflight = 1;
    Cluster c(cfg);
    ASSERT_TRUE(c.init());
    for (unsigned n = 0; n < 4; ++n) c.open_mailbox(n, 0, 3, mbox_base(n, 0));  // 8 lines each
    for (unsigned n = 0; n < 4; ++n) c.open_mailbox(n, 1, 8, mbox_base(n, 1));  // roomy
    c.pause_reader(2, 0, true);
    for (unsigned i = 0; i < 60; ++i) c.send(0, 100, 2, 0, random_msg(r, 64), WcMode::Burst);
    c.step(20000);
    EXPECT_GT(c.scoreboard().outstanding(), 40u) << "the blocked flow should be stuck";
    const uint64_t before = c.scoreboard().delivered;
    // independent flows: each on its own thread so that the stuck sender on node 0 does not
    // block them at the CPU (node 0 has its own CPU queue: only 2 -> 1, 3 -> 0, 1 -> 0 are sent)
    for (unsigned i = 0; i < 30; ++i) {
        c.send(3, 101, 0, 1, random_msg(r, 1 + i), WcMode::Burst);
        c.send(2, 101, 1, 1, random_msg(r, 1 + i), WcMode::Burst);
        c.send(1, 101, 0, 1, random_msg(r, 1 + i), WcMode::Burst);
    }
    for (int k = 0; k < 200 && c.scoreboard().delivered < before + 90; ++k) c.step(1000);
    EXPECT_EQ(c.scoreboard().delivered, before + 90) << "independent flows were stalled";
    EXPECT_GT(c.reg_read(2, VELO_REG_CTRL_STATUS) & (1u << VELO_REG_CTRL_STATUS_CPL_BUSY_SHIFT), 0u);
    // credit stalls were seen where the blocked flow backs up (node 1 towards node 2)
    EXPECT_GT(c.link_counter(1, 1, VELO_TBL_NET_PORT_CNT_CREDIT_STALL), 0u);
    c.pause_reader(2, 0, false);
    ASSERT_TRUE(c.run_until_idle(2000000)) << c.scoreboard().outstanding() << " left";
    expect_clean(c);
}

// ------------------------------------------------------------------------------ routing
TEST(NetRouting, NoRouteIsDroppedAndCounted) {
    auto r = test_rng();
    Cluster c(config("ring:4", r));
    ASSERT_TRUE(c.init());
    open_all(c, 1, 4);
    // invalidate node 0's route to node 3
    c.reg_write(0, VELO_TBL_ROUTE_TABLE_BASE + 3 * VELO_TBL_ROUTE_TABLE_STRIDE, 0);
    EXPECT_EQ(c.reg_read(0, VELO_TBL_ROUTE_TABLE_BASE + 3 * VELO_TBL_ROUTE_TABLE_STRIDE), 0u);
    for (unsigned i = 0; i < 5; ++i) c.send(0, 100, 3, 0, random_msg(r, 8), WcMode::Burst, false);
    c.send(0, 100, 1, 0, random_msg(r, 8), WcMode::Burst);  // others still flow
    ASSERT_TRUE(c.run_until_idle(200000));
    c.step(2000);
    expect_clean(c);
    EXPECT_EQ(c.reg_read(0, VELO_REG_NET_DROP_NO_ROUTE), 5u);
    c.reg_write(0, VELO_REG_NET_DROP_NO_ROUTE, 0);
    EXPECT_EQ(c.reg_read(0, VELO_REG_NET_DROP_NO_ROUTE), 0u);
}

TEST(NetRouting, DiscoveryAndPortConfiguration) {
    auto r = test_rng();
    Cluster c(config("torus:3x3", r));
    ASSERT_TRUE(c.init());
    for (unsigned n = 0; n < c.nodes(); ++n) {
        // walk the block chain to NET
        uint32_t off = 0, net = 0;
        for (int k = 0; k < 8; ++k) {
            if (c.reg_read(n, off + VELO_BLKHDR_TYPE) == VELO_BLK_NET_TYPE) net = off;
            off = c.reg_read(n, off + VELO_BLKHDR_NEXT);
            if (!off) break;
        }
        ASSERT_EQ(net, static_cast<uint32_t>(VELO_BLK_NET_BASE));
        uint32_t ports = c.reg_read(n, VELO_REG_NET_PORTS);
        EXPECT_EQ(VELO_FIELD_GET(VELO_REG_NET_PORTS_NP, ports), 4u);
        EXPECT_EQ(VELO_FIELD_GET(VELO_REG_NET_PORTS_NVC, ports), static_cast<unsigned>(VELO_NVC));
        EXPECT_EQ(c.reg_read(n, VELO_REG_NET_LINK_STATUS), 0xFu);
        for (unsigned p = 1; p <= 4; ++p) EXPECT_EQ(c.link_counter(n, p, VELO_TBL_NET_PORT_STATUS), 1u);
    }
}

// ------------------------------------------------------------------------------ mixed traffic
// VELO messages (packets of at most 64 bytes of payload area, request class) and RMA transfers
// (RMA_MTU 240: put and GET_RSP packets of up to 256 bytes of area; requests in the request class,
// responses in the response class) on the same links and switches of a ring of 4, with and
// without bit errors and lost flits on every link. Every node has one region: [0, 64K) put
// source, [64K, 128K) put target, [128K, 192K) get source, [192K, 256K) get destination.
// Phase 1: nodes 0 and 1 put 32 KiB each in random pieces (1 B .. 20 KB) to node n + 2 (two hops,
// through the other two nodes), all commands at once, while nodes 2 and 3 send random messages
// to every node (crossing the same links and switches, and arriving at the put targets).
// Phase 2: every node puts 32 KiB more to node n + 2. Phase 3: every node gets 64 KiB in pieces
// from node n + 1 (one hop). (Puts by a node whose CPU sends VELO messages at the same time,
// gets while VELO messages are sent and puts and gets outstanding together on every node, once
// the RMA unit's limits, are tested by tb_rma_system's RmaMixed.*: docs/rma.md §6.1 "Host reads
// and posted writes".) Asserted:
// every message exactly once, byte-exact, in order per thread pair (the scoreboard); every RMA
// command answered by exactly one completion (REMOTE_CPL for a put, GET_DONE for a get, never
// ERROR), the puts' in command order; every region byte-exact against its shadow (puts' targets,
// gets' destinations, nothing written elsewhere); the RMA bytes received add up; the NICs' RMA
// packets were the large ones (RMA_CAPS.MTU 240).
namespace {

struct Cmd {
    unsigned op;
    uint64_t off, len, cookie;
};

// Pieces of random sizes (1 B .. 20 KB) covering [0, n).
std::vector<std::pair<uint64_t, uint64_t>> pieces(std::mt19937_64& r, uint64_t n) {
    std::vector<std::pair<uint64_t, uint64_t>> v;
    for (uint64_t o = 0; o < n;) {
        const uint64_t l = std::min<uint64_t>(n - o, 1 + r() % 20000);
        v.push_back({o, l});
        o += l;
    }
    return v;
}

void mixed_traffic(double ber, double loss) {
    auto r = test_rng();
    auto cfg = config("ring:4", r);
    cfg.sys.ber = ber;
    cfg.sys.flit_loss = loss;
    Cluster c(cfg);
    ASSERT_TRUE(c.init()) << "links did not come up";
    RmaHost h(c);
    open_all(c, 2, 6);
    constexpr unsigned kVpid = 2;  // the RMA user on every node (VELO uses vpids 0 and 1)
    constexpr uint64_t kPart = 64 * 1024, kLen = 4 * kPart;
    std::vector<std::vector<uint8_t>> shadow(4);
    std::vector<uint8_t> key(4);
    for (unsigned n = 0; n < 4; ++n) {
        EXPECT_EQ(VELO_FIELD_GET(VELO_REG_RMA_CAPS_MTU, c.reg_read(n, VELO_REG_RMA_CAPS)), 240u);
        h.enable(n);
        h.open_nq(n, kVpid, 7, 0x7000000000ull + n * 0x100000ull);
        key[n] = static_cast<uint8_t>(1 + r() % 255);
        const unsigned start = static_cast<unsigned>(r() % 4096);
        h.add_region(n, 1, key[n], kVpid, RmaHost::ALL, kLen, start, 0x100000ull + n * 0x40000ull, 1, 0);
        shadow[n].resize(kLen);
        for (auto& b : shadow[n]) b = static_cast<uint8_t>(r());
        h.write(n, 1, 0, shadow[n]);
    }
    std::vector<std::vector<NqEntry>> got(4);
    c.on_host_cycle = [&] {
        NqEntry e;
        for (unsigned n = 0; n < 4; ++n)
            while (h.poll(n, kVpid, e)) got[n].push_back(e);
    };
    std::vector<std::vector<Cmd>> cmds(4);  // every command issued, per node
    unsigned slot = 0;
    auto issue = [&](unsigned n, const Cmd& m) {
        const bool put = m.op == VELO_RMA_OP_PUT;
        const unsigned peer = put ? (n + 2) % 4 : (n + 1) % 4;
        const uint64_t lnla = RmaHost::nla(key[n], 1, (put ? 0 : 3 * kPart) + m.off);
        const uint64_t rnla = RmaHost::nla(key[peer], 1, (put ? kPart : 2 * kPart) + m.off);
        h.command(n, kVpid, slot++ % VELO_RMA_SLOTS,
                  RmaHost::cmd0(m.op, !put, put, false, peer, static_cast<uint32_t>(m.len)), lnla, rnla, m.cookie);
        cmds[n].push_back(m);
    };
    auto answered = [&] {
        for (unsigned n = 0; n < 4; ++n)
            if (got[n].size() < cmds[n].size()) return false;
        return true;
    };
    auto wait_all = [&](uint64_t max_cycles) {
        for (uint64_t i = 0; i < max_cycles && !(answered() && c.scoreboard().outstanding() == 0 && c.threads_idle());
             i += 100)
            c.step(100);
        return answered() && c.scoreboard().outstanding() == 0 && c.threads_idle();
    };
    // phase 1: nodes 0 and 1 put [0, 32K) of their put source, nodes 2 and 3 send messages
    for (unsigned i = 0; i < 300; ++i) {
        const unsigned src = 2 + static_cast<unsigned>(r() % 2), dst = static_cast<unsigned>(r() % 4);
        c.send(src, 100 + static_cast<unsigned>(r() % 4), dst, static_cast<unsigned>(r() % 2),
               random_msg(r, 1 + static_cast<unsigned>(r() % 64)), kModes[r() % kModes.size()]);
    }
    for (unsigned n = 0; n < 2; ++n) {
        unsigned k = 0;
        for (auto [o, l] : pieces(r, kPart / 2)) issue(n, Cmd{VELO_RMA_OP_PUT, o, l, (n << 16) | (1u << 12) | k++});
    }
    ASSERT_TRUE(wait_all(6000000)) << c.scoreboard().outstanding() << " messages left";
    // phase 2: every node puts (nodes 0 and 1: [32K, 64K); nodes 2 and 3: [0, 64K))
    for (unsigned n = 0; n < 4; ++n) {
        unsigned k = 0;
        for (auto [o, l] : pieces(r, n < 2 ? kPart / 2 : kPart))
            issue(n, Cmd{VELO_RMA_OP_PUT, (n < 2 ? kPart / 2 : 0) + o, l, (n << 16) | (2u << 12) | k++});
    }
    ASSERT_TRUE(wait_all(3000000)) << "puts of phase 2 not answered";
    // phase 3: every node gets [128K, 192K) of node n + 1 into its [192K, 256K)
    for (unsigned n = 0; n < 4; ++n) {
        unsigned k = 0;
        for (auto [o, l] : pieces(r, kPart)) issue(n, Cmd{VELO_RMA_OP_GET, o, l, (n << 16) | (3u << 12) | k++});
    }
    ASSERT_TRUE(wait_all(3000000)) << "gets not answered";
    c.step(3000);  // nothing else may arrive
    expect_clean(c);
    for (auto& x : h.errors) ADD_FAILURE() << x;
    for (unsigned n = 0; n < 4; ++n) {
        ASSERT_EQ(got[n].size(), cmds[n].size()) << "node " << n << ": one completion per command";
        std::map<uint64_t, const Cmd*> by_cookie;
        for (const Cmd& m : cmds[n]) by_cookie[m.cookie] = &m;
        uint64_t last_put = 0;
        size_t puts = 0;
        for (const NqEntry& e : got[n]) {
            auto it = by_cookie.find(e.cookie);
            ASSERT_NE(it, by_cookie.end()) << "node " << n << ": completion for no command, cookie " << e.cookie;
            const bool put = it->second->op == VELO_RMA_OP_PUT;
            EXPECT_EQ(e.kind(), static_cast<unsigned>(put ? VELO_RMA_NQ_KIND_REMOTE_CPL : VELO_RMA_NQ_KIND_GET_DONE))
                << "node " << n << " cookie " << std::hex << e.cookie << std::dec << ": err " << e.err() << " remote "
                << e.err_remote();
            by_cookie.erase(it);  // exactly once
            if (put) {
                // puts complete in command order (cookies of phase 1, then of phase 2, increasing)
                EXPECT_GT(e.cookie + 1, last_put) << "node " << n << ": put completions out of command order";
                last_put = e.cookie + 1;
                ++puts;
            }
        }
        EXPECT_GT(puts, 1u);
    }
    // the transfers in the shadows: node n's put source -> node n+2's put target, node n+1's get
    // source -> node n's get destination
    auto want = shadow;
    for (unsigned n = 0; n < 4; ++n) {
        std::copy(shadow[n].begin(), shadow[n].begin() + kPart, want[(n + 2) % 4].begin() + kPart);
        std::copy(shadow[(n + 1) % 4].begin() + 2 * kPart, shadow[(n + 1) % 4].begin() + 3 * kPart,
                  want[n].begin() + 3 * kPart);
    }
    for (unsigned n = 0; n < 4; ++n) {
        c.mem(n).drain();
        const auto m = h.read(n, 1, 0, kLen);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < kLen; ++i)
            if (m[i] != want[n][i] && bad++ == 0) first = i;
        EXPECT_EQ(bad, 0u) << "node " << n << ": " << bad << " bytes differ, first at offset " << first;
    }
    uint64_t rx = 0;
    for (unsigned n = 0; n < 4; ++n) rx += h.counter(n, VELO_RMA_CNT_RX_BYTES);
    EXPECT_EQ(rx, 4 * 2 * kPart) << "RMA bytes received (put targets and get destinations)";
    std::printf(
        "[ info  ] ring:4 BER %g loss %g: %zu RMA commands, %llu RMA bytes, %llu CRC errors, %llu replays, "
        "%llu cycles\n",
        ber, loss, cmds[0].size() + cmds[1].size() + cmds[2].size() + cmds[3].size(),
        static_cast<unsigned long long>(rx),
        static_cast<unsigned long long>(link_sum(c, VELO_TBL_NET_PORT_CNT_CRC_ERR)),
        static_cast<unsigned long long>(link_sum(c, VELO_TBL_NET_PORT_CNT_REPLAY)),
        static_cast<unsigned long long>(c.cycle()));
    if (ber > 0) {
        EXPECT_GT(link_sum(c, VELO_TBL_NET_PORT_CNT_CRC_ERR), 0u) << "no error hit a packet";
    }
}

}  // namespace

TEST(NetMixed, VeloMessagesAndRmaTransfersOnARing) {
    mixed_traffic(0.0, 0.0);
}
TEST(NetMixed, VeloMessagesAndRmaTransfersUnderFaults) {
    mixed_traffic(1e-5, 1e-5);
}
