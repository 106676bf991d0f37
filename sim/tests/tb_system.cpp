// Two-node system tests: the NIC top level twice, back to back over one link (the "pair"
// topology of the simulated cluster), driven by host models that send through write combining
// (with partial flushes), DMA-written mailboxes polled by software that sees host memory only as a
// root complex guarantees it, and a scoreboard.
#include <gtest/gtest.h>

#include <random>

#include "cluster.hpp"
#include "velo/velo_hw.h"

using namespace velo::sim;

namespace {

constexpr unsigned kA = 0, kB = 1;  // node ids (= node indices)

std::vector<uint8_t> random_msg(std::mt19937_64& r, unsigned len) {
    std::vector<uint8_t> m(len);
    for (auto& b : m) b = static_cast<uint8_t>(r());
    return m;
}

void expect_clean(Cluster& p) {
    auto e = p.errors();
    for (size_t i = 0; i < e.size() && i < 20; ++i) ADD_FAILURE() << e[i];
    EXPECT_TRUE(e.empty()) << e.size() << " model errors";
    EXPECT_EQ(p.scoreboard().outstanding(), 0u);
}

// A default pair configuration seeded from the test's generator.
Cluster::Config seeded(std::mt19937_64& r) {
    Cluster::Config c;
    c.sys.seed = r();
    return c;
}

uint64_t mbox_base(unsigned node, unsigned vpid) {
    // half of the rings below 4 GiB (3DW DMA headers), half above (4DW)
    return (vpid % 2 ? 0x123400000000ull : 0x40000000ull) + node * 0x1000000ull + vpid * 0x10000ull;
}

struct Traffic {
    unsigned msgs = 300;
    unsigned vpids = 4;    // receiving vpids per node
    unsigned threads = 4;  // sending vpids per node
    std::vector<WcMode> modes{WcMode::Burst, WcMode::FullLine, WcMode::Split, WcMode::Chunk8, WcMode::Bytes};
    unsigned log2_min = 3, log2_max = 6;  // 8 lines hold any message, even in 8 pieces
};

// Random traffic both ways; returns messages sent.
unsigned run_traffic(Cluster& p, const Traffic& t, std::mt19937_64& r) {
    EXPECT_TRUE(p.init());
    for (unsigned n = 0; n < 2; ++n)
        for (unsigned v = 0; v < t.vpids; ++v)
            p.open_mailbox(n, v, t.log2_min + static_cast<unsigned>(r() % (t.log2_max - t.log2_min + 1)),
                           mbox_base(n, v));
    for (unsigned i = 0; i < t.msgs; ++i) {
        unsigned n = static_cast<unsigned>(r() % 2);
        unsigned len = 1 + static_cast<unsigned>(r() % 64);
        WcMode mode = t.modes[r() % t.modes.size()];
        p.send(n, 100 + static_cast<unsigned>(r() % t.threads), n ? kA : kB, static_cast<unsigned>(r() % t.vpids),
               random_msg(r, len), mode);
    }
    EXPECT_TRUE(p.run_until_idle(2000000)) << "traffic did not drain, " << p.scoreboard().outstanding() << " left";
    return t.msgs;
}

}  // namespace

TEST(System, RandomTrafficBothWays) {
    auto r = test_rng();
    Cluster p(seeded(r));
    Traffic t;
    unsigned n = run_traffic(p, t, r);
    expect_clean(p);
    EXPECT_EQ(p.scoreboard().delivered, n);
    EXPECT_GT(p.fragments_seen(), 0u) << "the random mix should have produced fragments";
    // hardware counters agree with what the software saw
    uint64_t rx = 0, tx = 0;
    for (unsigned i = 0; i < 2; ++i) {
        rx += p.counter(i, VELO_CNT_RX_MSGS) + p.counter(i, VELO_CNT_RX_FRAGS);
        tx += p.counter(i, VELO_CNT_TX_MSGS) + p.counter(i, VELO_CNT_TX_FRAGS);
        for (unsigned k = VELO_CNT_DROP_TX_DISABLED; k <= VELO_CNT_DROP_RX_BAD_PKT; ++k)
            EXPECT_EQ(p.counter(i, k), 0u) << "node " << i << " drop counter " << k;
    }
    EXPECT_EQ(rx, tx);
    EXPECT_GE(tx, n);
}

TEST(System, HostileHostAndFragmentStorm) {
    // every message fragmented, eight threads a node interleaving, a host that stalls DMA, leaves
    // gaps in its writes and makes cache lines visible late and out of order
    auto r = test_rng();
    Cluster::Config c;
    c.sys.seed = r();
    c.mem_delay = 8;
    c.sys.dma_stall_pct = 30;
    c.sys.cpu_gap_pct = 20;
    c.max_inflight = 3;
    Cluster p(c);
    Traffic t;
    t.msgs = 250;
    t.threads = 8;
    t.modes = {WcMode::Split, WcMode::Chunk8, WcMode::Bytes};
    t.log2_min = 3;  // a 64-byte message in quadword pieces takes 8 entries
    t.log2_max = 4;
    unsigned n = run_traffic(p, t, r);
    expect_clean(p);
    EXPECT_EQ(p.scoreboard().delivered, n);
    EXPECT_GT(p.fragments_seen(), 2 * n / 3);
}

TEST(System, WideDatapathConfiguration) {
    // TLP_W = 128, LINK_W = 32
    auto r = test_rng();
    Cluster::Config c;
    c.sys.seed = r();
    c.sys.wide = true;
    c.sys.dma_stall_pct = 10;
    Cluster p(c);
    EXPECT_EQ(p.sys().tlp_bits(), 128u);
    EXPECT_EQ(p.sys().link_bits(), 32u);
    Traffic t;
    t.msgs = 200;
    unsigned n = run_traffic(p, t, r);
    expect_clean(p);
    EXPECT_EQ(p.scoreboard().delivered, n);
}

TEST(System, FullMailboxBackPressureThenDrain) {
    auto r = test_rng();
    Cluster::Config c;
    c.sys.seed = r();
    c.credits = false;  // the sender overruns the ring on purpose
    Cluster p(c);
    ASSERT_TRUE(p.init());
    p.open_mailbox(1, 3, 2, mbox_base(1, 3));  // 4 lines
    p.open_mailbox(1, 4, 4, mbox_base(1, 4));
    p.pause_reader(1, 3, true);
    const unsigned n = 24;
    for (unsigned i = 0; i < n; ++i) {
        unsigned len = 1 + static_cast<unsigned>(r() % 64);
        p.send(0, 7, kB, 3, random_msg(r, len), WcMode::Burst);
    }
    p.step(3000);
    // nothing lost, nothing overwritten: the NIC holds back and counts the wait
    EXPECT_LE(p.scoreboard().delivered, 0u);
    EXPECT_GT(p.counter(1, VELO_CNT_RX_BACKPRESSURE_CYCLES), 100u);
    uint32_t held = p.counter(1, VELO_CNT_RX_MSGS);
    EXPECT_LE(held, 4u) << "more entries written than the ring holds";
    EXPECT_EQ(p.counter(1, VELO_CNT_DROP_RX_VPID_DISABLED), 0u);
    p.pause_reader(1, 3, false);
    EXPECT_TRUE(p.run_until_idle(500000));
    expect_clean(p);
    EXPECT_EQ(p.scoreboard().delivered, n);
    // and the other mailbox still works afterwards
    p.send(0, 8, kB, 4, random_msg(r, 33), WcMode::Split);
    EXPECT_TRUE(p.run_until_idle(100000));
    expect_clean(p);
}

TEST(System, DisabledVpidDropsOnlyItsOwnTraffic) {
    auto r = test_rng();
    Cluster p(seeded(r));
    ASSERT_TRUE(p.init());
    p.open_mailbox(1, 1, 4, mbox_base(1, 1));
    unsigned good = 0, bad = 0;
    for (unsigned i = 0; i < 60; ++i) {
        bool to_bad = r() % 3 == 0;
        p.send(0, 5, kB, to_bad ? 9 : 1, random_msg(r, 1 + static_cast<unsigned>(r() % 64)), WcMode::Burst, !to_bad);
        (to_bad ? bad : good)++;
    }
    EXPECT_TRUE(p.run_until_idle(300000));
    p.step(500);  // dropped packets after the last delivered one drain too
    expect_clean(p);
    EXPECT_EQ(p.scoreboard().delivered, good);
    EXPECT_EQ(p.counter(1, VELO_CNT_DROP_RX_VPID_DISABLED), bad);
    EXPECT_EQ(p.counter(1, VELO_CNT_RX_MSGS), good);
}

TEST(System, UnknownNodeIsDroppedAndCounted) {
    auto r = test_rng();
    Cluster p(seeded(r));
    ASSERT_TRUE(p.init());
    p.open_mailbox(1, 0, 3, mbox_base(1, 0));
    p.send(0, 1, 0x77, 0, random_msg(r, 8), WcMode::Burst, false);  // no route to such a node
    p.send(0, 1, kB, 0, random_msg(r, 8), WcMode::Burst);
    EXPECT_TRUE(p.run_until_idle(100000));
    p.step(200);
    expect_clean(p);
    EXPECT_EQ(p.reg_read(0, VELO_REG_NET_DROP_NO_ROUTE), 1u);
    EXPECT_EQ(p.counter(1, VELO_CNT_DROP_RX_BAD_PKT), 0u);
    EXPECT_EQ(p.scoreboard().delivered, 1u);
}

TEST(System, MalformedTlpsAreDroppedCountedAndHarmless) {
    auto r = test_rng();
    Cluster p(seeded(r));
    ASSERT_TRUE(p.init());
    p.open_mailbox(1, 2, 4, mbox_base(1, 2));
    const uint64_t page = Cluster::kBar2 + send_offset(VELO_DEFAULT_VPID_BITS, VELO_DEFAULT_NODE_BITS, 3, kB, 2, 16);
    std::vector<uint8_t> d72(72, 0x11), d8(8, 0x22);
    // payload over 64 bytes
    p.send_tlp(0, Tlp::mwr(page, d72, VELO_BAR_SEND));
    // crossing the 4 KiB page (last line of the page, spilling over)
    p.send_tlp(0, Tlp::mwr(Cluster::kBar2 + send_offset(8, 8, 3, kB, 2, 64) + 60, d8, VELO_BAR_SEND));
    // crossing the message line
    p.send_tlp(0, Tlp::mwr(page + 60, d8, VELO_BAR_SEND));
    // offset past the 16-byte message length
    p.send_tlp(0, Tlp::mwr(page + 16, d8, VELO_BAR_SEND));
    // poisoned
    Tlp ep = Tlp::mwr(page, d8, VELO_BAR_SEND);
    ep.ep = true;
    p.send_tlp(0, ep);
    // byte enables with a hole
    Tlp hole = Tlp::mwr(page, d8, VELO_BAR_SEND);
    hole.len_dw = 1;
    hole.first_be = 0x5;
    hole.last_be = 0;
    p.send_tlp(0, hole);
    // a write to a BAR the NIC does not have
    p.send_tlp(0, Tlp::mwr(0x80000000ull, d8, 1));
    // reads of the send window: answered with UR (all ones), counted
    uint32_t before = p.counter(0, VELO_CNT_DROP_WINDOW_READ);
    p.send_tlp(0, Tlp::mrd(page, 1, 0x55, VELO_BAR_SEND));
    p.step(200);
    EXPECT_EQ(p.counter(0, VELO_CNT_DROP_WINDOW_READ), before + 1);
    // and a good message after all that
    p.send(0, 3, kB, 2, random_msg(r, 16), WcMode::Burst);
    EXPECT_TRUE(p.run_until_idle(100000));
    expect_clean(p);
    EXPECT_EQ(p.scoreboard().delivered, 1u);
    EXPECT_EQ(p.counter(0, VELO_CNT_DROP_TX_TOO_LONG), 2u);
    EXPECT_EQ(p.counter(0, VELO_CNT_DROP_TX_CROSS_PAGE), 1u);
    EXPECT_EQ(p.counter(0, VELO_CNT_DROP_TX_MALFORMED), 3u);
    EXPECT_EQ(p.counter(0, VELO_CNT_DROP_TLP_BAD_BAR), 1u);
    EXPECT_EQ(p.counter(0, VELO_CNT_TX_MSGS), 1u);
    EXPECT_EQ(p.counter(1, VELO_CNT_RX_MSGS), 1u);
}

TEST(System, RegistersReadBackAndDiscovery) {
    auto r = test_rng();
    Cluster p(seeded(r));
    ASSERT_TRUE(p.init());
    for (unsigned n = 0; n < 2; ++n) {
        // walk the block chain
        uint32_t off = 0;
        std::vector<uint32_t> types;
        for (int i = 0; i < 8; ++i) {
            types.push_back(p.reg_read(n, off + VELO_BLKHDR_TYPE));
            off = p.reg_read(n, off + VELO_BLKHDR_NEXT);
            if (!off) break;
        }
        // the NIC is built with the RMA unit: IRQ links to the RMA block (docs/rma.md §5)
        EXPECT_EQ(types,
                  (std::vector<uint32_t>{VELO_BLK_ID_TYPE, VELO_BLK_CTRL_TYPE, VELO_BLK_COUNTERS_TYPE,
                                         VELO_BLK_NET_TYPE, VELO_BLK_VPID_TYPE, VELO_BLK_IRQ_TYPE, VELO_BLK_RMA_TYPE}));
        EXPECT_EQ(p.reg_read(n, VELO_REG_ID_SPEC_HASH), VELO_SPEC_HASH);
        EXPECT_EQ(p.reg_read(n, VELO_REG_ID_DESIGN_VERSION), VELO_SPEC_VERSION);
        EXPECT_EQ(p.reg_read(n, VELO_REG_CTRL_NODE_ID), n ? kB : kA);
        for (int i = 0; i < 8; ++i) {
            uint32_t v = static_cast<uint32_t>(r());
            p.reg_write(n, VELO_REG_CTRL_SCRATCH, v);
            EXPECT_EQ(p.reg_read(n, VELO_REG_CTRL_SCRATCH), v);
            unsigned vp = static_cast<unsigned>(r() % 256);
            uint32_t t = VELO_TBL_VPID_TABLE_BASE + vp * VELO_TBL_VPID_TABLE_STRIDE;
            p.reg_write(n, t + VELO_TBL_VPID_TABLE_MB_BASE_HI, v);
            p.reg_write(n, t + VELO_TBL_VPID_TABLE_MB_BASE_LO, ~v);
            EXPECT_EQ(p.reg_read(n, t + VELO_TBL_VPID_TABLE_MB_BASE_HI), v);
            EXPECT_EQ(p.reg_read(n, t + VELO_TBL_VPID_TABLE_MB_BASE_LO), ~v & ~63u);
        }
    }
    expect_clean(p);
}

TEST(System, CloseMailboxQuiescesUnderTraffic) {
    auto r = test_rng();
    Cluster::Config c;
    c.sys.seed = r();
    c.credits = false;
    Cluster p(c);
    ASSERT_TRUE(p.init());
    p.open_mailbox(1, 6, 3, mbox_base(1, 6));
    p.pause_reader(1, 6, true);  // nobody reads: the NIC ends up waiting for space on vpid 6
    for (unsigned i = 0; i < 40; ++i)
        p.send(0, 2, kB, 6, random_msg(r, 1 + static_cast<unsigned>(r() % 64)), WcMode::Burst, false);
    p.step(2000);
    EXPECT_GT(p.counter(1, VELO_CNT_RX_BACKPRESSURE_CYCLES), 0u);
    p.close_mailbox(1, 6);  // disable, then QUIESCE_STATUS until no packet for vpid 6 is held
    uint32_t delivered = p.counter(1, VELO_CNT_RX_MSGS);
    p.step(5000);
    // after the barrier nothing more is written for it; the rest is dropped and counted
    EXPECT_EQ(p.counter(1, VELO_CNT_RX_MSGS), delivered);
    EXPECT_EQ(p.counter(1, VELO_CNT_RX_MSGS) + p.counter(1, VELO_CNT_DROP_RX_VPID_DISABLED), 40u);
    auto e = p.errors();
    EXPECT_TRUE(e.empty()) << (e.empty() ? "" : e[0]);
}
