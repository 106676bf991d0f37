// Clock gating of idle units in simulation (rtl/common/velo_sim_gate.v, docs/simulator.md) changes
// no simulated cycle: the same seeded workload runs twice on the simulated cluster, once with the
// clock gates of the RMA units (and of their initiators, targets, DMA read engines and ATUs),
// switches, counters, register files, completers and requesters enabled (SystemConfig::sim_gate) and once without, and
// everything every NIC drives out must be identical cycle by cycle: every flit on every network port, every DMA write
// and read TLP, every interrupt taken, every register read value. The workload mixes RMA puts and gets (with and
// without local/remote completions and notifications), commands that fail (bad key, region beyond the table, no
// permission, bad node), messages through mailboxes, counter and status reads, idle stretches, on a pair and a ring.
// The gated run must also have skipped every gated unit in a large share of its cycles (a third at least for the RMA
// unit and the switch, 80 % for the others), or it proves nothing. SEED= replays.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cluster.hpp"
#include "harness.hpp"
#include "rma_host.hpp"
#include "velo/velo_hw.h"

using namespace velo::sim;

namespace {

// What the NICs drove out: one hash per cycle (every observation of the cycle folded in, in
// order) and the observations' count, plus the gated cycles of every node.
struct Trace {
    std::vector<uint64_t> cycle_hash;
    uint64_t events = 0;
    // per node: the cycles each unit's clock was gated (index: System::Gated)
    std::vector<std::array<uint64_t, System::kGatedUnits>> gated;
    uint64_t cycles = 0;
    // what the workload made happen (it must cover what it claims to)
    uint64_t irqs = 0, dma_reads = 0, error_entries = 0, done_entries = 0;
    uint64_t worker_nodes = 0;  // node-cycles evaluated by the worker threads
    uint64_t skipped = 0;       // node-cycles played from a record (SystemConfig::skip_idle)
};

uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xFF51AFD7ED558CCDull;
}

uint64_t hash_tlp(const Tlp& t) {
    uint64_t h = mix(t.fmt_type, t.len_dw);
    h = mix(h, (uint64_t{t.first_be} << 8) | t.last_be);
    h = mix(h, (uint64_t{t.tag} << 16) | t.req_id);
    h = mix(h, t.addr);
    h = mix(h,
            (uint64_t{t.cpl_id} << 32) | (uint64_t{t.cpl_status} << 24) | (uint64_t{t.byte_count} << 8) | t.lower_addr);
    for (uint8_t b : t.payload) h = mix(h, b);
    return h;
}

struct Recorder {
    Trace& tr;
    System& sys;
    void note(uint64_t v) {
        const uint64_t c = sys.cycle();
        if (tr.cycle_hash.size() <= c) tr.cycle_hash.resize(c + 1, 0);
        tr.cycle_hash[c] = mix(tr.cycle_hash[c], v);
        ++tr.events;
    }
};

// BAR0 offsets of event counter i and of link counter i of network port p (0-based)
uint32_t event_counter(unsigned i) {
    return VELO_REG_COUNTERS_COUNTER_BASE + 4 * i;
}
uint32_t link_counter(unsigned p, unsigned i) {
    return VELO_TBL_NET_PORT_BASE + p * VELO_TBL_NET_PORT_STRIDE + VELO_TBL_NET_PORT_CNT_CRC_ERR + 4 * i;
}

// Run the workload `seed` on `topo` with the gate on or off, the nodes evaluated on `threads`,
// idle NICs skipped or not, with or without the host's noise (CPU gaps, DMA stalls: a NIC is
// skipped only while its DMA is always ready).
Trace run(const std::string& topo, uint64_t seed, bool gate, unsigned threads, bool skip = false, bool noise = true) {
    Trace tr;
    std::mt19937_64 r(seed);
    Cluster::Config cc;
    cc.sys.topology = topo;
    cc.sys.seed = seed;
    cc.sys.sim_gate = gate;
    cc.sys.threads = threads;
    cc.sys.skip_idle = skip;
    cc.sys.cpu_gap_pct = noise ? 10 : 0;
    cc.sys.dma_stall_pct = noise ? 5 : 0;
    Cluster c(cc);
    System& sys = c.sys();
    Recorder rec{tr, sys};
    // observe everything the NICs drive out (the cluster's own hooks stay behind ours)
    sys.on_flit = [&rec](unsigned n, unsigned p, uint64_t f) { rec.note(mix(mix(1, n * 8 + p), f)); };
    auto dma_w = sys.on_dma_write;
    sys.on_dma_write = [&rec, dma_w](unsigned n, const Tlp& t) {
        rec.note(mix(mix(2, n), hash_tlp(t)));
        dma_w(n, t);
    };
    auto dma_r = sys.on_dma_read;
    sys.on_dma_read = [&rec, &tr, dma_r](unsigned n, const Tlp& t) {
        rec.note(mix(mix(3, n), hash_tlp(t)));
        ++tr.dma_reads;
        dma_r(n, t);
    };
    sys.on_irq = [&rec, &tr](unsigned n, uint64_t cyc) {
        rec.note(mix(mix(4, n), cyc));
        ++tr.irqs;
    };

    EXPECT_TRUE(c.init());
    const unsigned nn = c.nodes();
    const unsigned np = sys.net_ports();
    RmaHost h(c);
    // per node: vpid 2 issues RMA commands and owns region 1 (all rights) and region 2 (local
    // read only); mailboxes of vpids 4 and 5 take messages, interrupts armed for vpid 4
    std::vector<uint8_t> key(nn);
    const uint64_t rlen = 256 * 1024;
    for (unsigned n = 0; n < nn; ++n) {
        h.enable(n);
        key[n] = static_cast<uint8_t>(1 + r() % 254);
        h.add_region(n, 1, key[n], 2, RmaHost::ALL, rlen, static_cast<unsigned>(r() % 4096),
                     0x100000ull + n * 0x40000ull, 3, 0);
        h.add_region(n, 2, key[n], 2, RmaHost::LR, 8192, 0, 0x100000ull + n * 0x40000ull + 0x30000ull, 1, 100);
        std::vector<uint8_t> fill(rlen);
        for (auto& x : fill) x = static_cast<uint8_t>(r());
        h.write(n, 1, 0, fill);
        h.open_nq(n, 2, 5, 0x7000000000ull + n * 0x100000ull);
        c.open_mailbox(n, 4, 5, 0x40000000ull + n * 0x1000000ull + 4 * 0x10000ull);
        c.open_mailbox(n, 5, 4, 0x123400000000ull + n * 0x1000000ull + 5 * 0x10000ull);
        c.reg_write(n, VELO_REG_IRQ_CTRL, 1u << VELO_REG_IRQ_CTRL_ENABLE_SHIFT);
    }
    // software consumes the notification queues every cycle
    c.on_host_cycle = [&] {
        for (unsigned n = 0; n < nn; ++n) {
            NqEntry e;
            while (h.poll(n, 2, e)) {
                rec.note(mix(mix(5, n), e.hdr ^ e.cookie));
                ++(e.kind() == VELO_RMA_NQ_KIND_ERROR ? tr.error_entries : tr.done_entries);
            }
        }
    };

    unsigned slot = 0;
    for (int op = 0; op < 160; ++op) {
        const unsigned a = static_cast<unsigned>(r() % nn);
        unsigned b = static_cast<unsigned>(r() % nn);
        if (b == a) b = (a + 1) % nn;
        const unsigned kind = static_cast<unsigned>(r() % 16);
        const uint64_t n = (r() % 4) ? 1 + r() % 64 : 65 + r() % 6000;
        const uint64_t aoff = r() % (rlen - n), boff = r() % (rlen - n);
        const bool lcpl = r() % 2, rcpl = r() % 2, notify = r() % 3 == 0;
        uint64_t lnla = RmaHost::nla(key[a], 1, aoff), rnla = RmaHost::nla(key[b], 1, boff);
        unsigned opc = (r() % 2) ? VELO_RMA_OP_PUT : VELO_RMA_OP_GET;
        unsigned rem = b;
        switch (kind) {
            case 0:  // bad key at the target
                rnla = RmaHost::nla(static_cast<uint8_t>(key[b] ^ 0x5A), 1, boff);
                break;
            case 1:  // a region beyond the table at the initiator
                lnla = RmaHost::nla(key[a], 0xFFF, aoff);
                break;
            case 2:  // no write permission for a get into the local read-only region
                opc = VELO_RMA_OP_GET;
                lnla = RmaHost::nla(key[a], 2, 0);
                break;
            case 3:  // a node that does not exist (no route)
                rem = 200;
                break;
            default:
                break;
        }
        if (kind >= 4 && kind < 7) {  // messages instead
            std::vector<uint8_t> m(1 + r() % 64);
            for (auto& x : m) x = static_cast<uint8_t>(r());
            c.send(a, 7, b, 4 + static_cast<unsigned>(r() % 2), m, static_cast<WcMode>(r() % 5));
            if (r() % 2 == 0) c.reg_write(b, VELO_REG_IRQ_ARM, 4);
        } else {
            const bool get = opc == VELO_RMA_OP_GET;
            h.command(a, 2, slot++ % VELO_RMA_SLOTS,
                      RmaHost::cmd0(opc, lcpl, get ? false : rcpl, get ? false : notify, rem, static_cast<uint32_t>(n)),
                      lnla, rnla, r());
        }
        // register reads now and then (RMA counters and status, event counters, link counters),
        // values recorded
        if (r() % 5 == 0) {
            const unsigned rn = static_cast<unsigned>(r() % nn);
            uint32_t off = VELO_REG_RMA_STATUS;
            switch (r() % 4) {
                case 0:
                    off = VELO_REG_RMA_CNT_BASE + 4 * static_cast<uint32_t>(r() % VELO_RMA_CNT_NUM);
                    break;
                case 1:
                    off = event_counter(static_cast<unsigned>(r() % VELO_CNT_NUM));
                    break;
                case 2:
                    off = link_counter(static_cast<unsigned>(r() % np),
                                       static_cast<unsigned>(r() % VELO_NET_PORT_COUNTERS));
                    break;
                default:
                    break;
            }
            rec.note(mix(mix(6, rn), c.reg_read(rn, off)));
        }
        // a gap: short ones keep commands overlapping, long ones let the units go idle
        c.step((r() % 3) ? r() % 40 : 500 + r() % 3000);
    }
    EXPECT_TRUE(c.run_until_idle(2000000)) << "messages did not drain";
    c.step(5000);
    for (unsigned n = 0; n < nn; ++n) {
        for (unsigned i = 0; i < VELO_RMA_CNT_NUM; ++i) rec.note(mix(mix(7, n), h.counter(n, i)));
        // the NIC's event counters and link counters (velo_counters, gated of their own)
        for (unsigned i = 0; i < VELO_CNT_NUM; ++i) rec.note(mix(mix(8, n), c.reg_read(n, event_counter(i))));
        for (unsigned p = 0; p < np; ++p)
            for (unsigned i = 0; i < VELO_NET_PORT_COUNTERS; ++i)
                rec.note(mix(mix(9, n), c.reg_read(n, link_counter(p, i))));
    }
    for (auto& e : c.errors()) ADD_FAILURE() << (gate ? "gated: " : "ungated: ") << e;
    for (auto& e : h.errors) ADD_FAILURE() << (gate ? "gated: " : "ungated: ") << e;
    tr.cycles = sys.cycle();
    // the free-running prescaler (skipping advances it by hand)
    for (unsigned n = 0; n < nn; ++n) rec.note(mix(mix(10, n), sys.dma_prescaler(n)));
    tr.worker_nodes = sys.pool_stats().worker_nodes;
    for (unsigned n = 0; n < nn; ++n) tr.skipped += sys.skipped_cycles(n);
    for (unsigned n = 0; n < nn; ++n) {
        std::array<uint64_t, System::kGatedUnits> g{};
        for (unsigned u = 0; u < System::kGatedUnits; ++u) g[u] = sys.gated_cycles(n, static_cast<System::Gated>(u));
        tr.gated.push_back(g);
    }
    return tr;
}

void lockstep(const std::string& topo) {
    auto rng = test_rng();
    const uint64_t seed = rng();
    const Trace off = run(topo, seed, false, 1);
    const Trace on = run(topo, seed, true, 1);
    const Trace thr = run(topo, seed, true, 3);
    const size_t len = std::max(on.cycle_hash.size(), off.cycle_hash.size());
    for (size_t i = 0; i < len; ++i) {
        const uint64_t a = i < on.cycle_hash.size() ? on.cycle_hash[i] : 0;
        const uint64_t b = i < off.cycle_hash.size() ? off.cycle_hash[i] : 0;
        ASSERT_EQ(a, b) << "the NICs' outputs differ first in cycle " << i;
    }
    ASSERT_EQ(on.cycles, off.cycles) << "the runs took different numbers of cycles";
    EXPECT_EQ(on.events, off.events);
    // the nodes evaluated on three threads (System::step, NodePool): the same, and the workers did
    // evaluate nodes
    for (size_t i = 0; i < std::max(thr.cycle_hash.size(), on.cycle_hash.size()); ++i) {
        const uint64_t a = i < thr.cycle_hash.size() ? thr.cycle_hash[i] : 0;
        const uint64_t b = i < on.cycle_hash.size() ? on.cycle_hash[i] : 0;
        ASSERT_EQ(a, b) << "three threads: the NICs' outputs differ first in cycle " << i;
    }
    ASSERT_EQ(thr.cycles, on.cycles);
    EXPECT_EQ(thr.events, on.events);
    EXPECT_EQ(thr.gated, on.gated);
    EXPECT_GT(thr.worker_nodes, 0u) << "three threads: the workers evaluated no node";
    // the workload did what it claims: interrupts, host reads, failed and completed commands
    EXPECT_GT(on.irqs, 0u);
    EXPECT_GT(on.dma_reads, 0u);
    EXPECT_GT(on.error_entries, 0u);
    EXPECT_GT(on.done_entries, 0u);
    // Every gate must have closed in a large share of the cycles, or the run proves little about
    // it. Shares seen in tries of many seeds (all nodes, of all cycles; pair and ring): RMA unit
    // 55..80 %, switch 58..82 %, counters 99.9..100 %, link counters 98.5..99.9 %, register file
    // 98.2..99.1 %, completer 99.4..99.8 %, requester 97.8..99.8 %; inside the RMA unit the
    // initiator 73..91 %, the target 76..93 %, the DMA read engine 86..96 %, the ATU 98.4..99.2 %.
    // The bounds leave a wide margin.
    struct Unit {
        System::Gated id;
        const char* name;
        unsigned min_pct;
    };
    static const Unit units[] = {{System::Gated::Rma, "RMA unit", 33},
                                 {System::Gated::Switch, "switch", 33},
                                 {System::Gated::Counters, "counters", 80},
                                 {System::Gated::LinkCounters, "link counters", 80},
                                 {System::Gated::Regs, "register file", 80},
                                 {System::Gated::Completer, "completer", 80},
                                 {System::Gated::Requester, "requester", 80},
                                 {System::Gated::RmaInitiator, "RMA initiator", 50},
                                 {System::Gated::RmaTarget, "RMA target", 50},
                                 {System::Gated::DmaRead, "DMA read engine", 60},
                                 {System::Gated::Atu, "ATU", 80}};
    std::array<uint64_t, System::kGatedUnits> sum{};
    for (size_t n = 0; n < on.gated.size(); ++n) {
        for (const Unit& u : units) {
            const auto k = static_cast<unsigned>(u.id);
            EXPECT_EQ(off.gated[n][k], 0u) << "node " << n << ": " << u.name << " gated without the gate enabled";
            EXPECT_GT(on.gated[n][k] * 100, on.cycles * u.min_pct)
                << "node " << n << ": " << u.name << " gated in only " << on.gated[n][k] << " of " << on.cycles
                << " cycles (at least " << u.min_pct << " % expected)";
            sum[k] += on.gated[n][k];
        }
    }
    const double nc = static_cast<double>(on.cycles * on.gated.size());
    std::printf(
        "%s: %llu cycles, %llu observations equal (%llu interrupts, %llu host reads, %llu error and %llu "
        "other entries); gated in %% of node-cycles:",
        topo.c_str(), static_cast<unsigned long long>(on.cycles), static_cast<unsigned long long>(on.events),
        static_cast<unsigned long long>(on.irqs), static_cast<unsigned long long>(on.dma_reads),
        static_cast<unsigned long long>(on.error_entries), static_cast<unsigned long long>(on.done_entries));
    for (const Unit& u : units)
        std::printf(" %s %.1f", u.name, 100.0 * static_cast<double>(sum[static_cast<unsigned>(u.id)]) / nc);
    std::printf("\n");
}

}  // namespace

TEST(SimGate, PairSameOutputsEveryCycle) {
    lockstep("pair");
}

TEST(SimGate, RingSameOutputsEveryCycle) {
    lockstep("ring:3");
}

// Skipping idle NICs (SystemConfig::skip_idle, docs/simulator.md) changes no simulated cycle either:
// the workload without the host's noise, with the gates, once with skipping and once without (and
// once more with skipping on three threads), every output of every cycle equal; and the skipping
// run must have played a good share of its node-cycles from records, or it proves nothing (seen:
// 30..60 % on a ring of 4, where most NICs wait most of the time).
TEST(SimGate, SkippingIdleNicsSameOutputsEveryCycle) {
    auto rng = test_rng();
    const uint64_t seed = rng();
    const std::string topo = "ring:4";
    const Trace base = run(topo, seed, true, 1, false, false);
    const Trace skip = run(topo, seed, true, 1, true, false);
    const Trace thr = run(topo, seed, true, 3, true, false);
    for (const Trace* t : {&skip, &thr}) {
        const char* what = t == &skip ? "skipping" : "skipping on three threads";
        for (size_t i = 0; i < std::max(t->cycle_hash.size(), base.cycle_hash.size()); ++i) {
            const uint64_t a = i < t->cycle_hash.size() ? t->cycle_hash[i] : 0;
            const uint64_t b = i < base.cycle_hash.size() ? base.cycle_hash[i] : 0;
            ASSERT_EQ(a, b) << what << ": the NICs' outputs differ first in cycle " << i;
        }
        ASSERT_EQ(t->cycles, base.cycles) << what;
        EXPECT_EQ(t->events, base.events) << what;
        EXPECT_EQ(t->gated, base.gated) << what;
    }
    EXPECT_EQ(base.skipped, 0u);
    const double share = static_cast<double>(skip.skipped) / static_cast<double>(skip.cycles * skip.gated.size());
    EXPECT_GT(share, 0.15) << "skipped only " << skip.skipped << " node-cycles";
    EXPECT_EQ(thr.skipped, skip.skipped);
    EXPECT_GT(skip.irqs, 0u);
    EXPECT_GT(skip.dma_reads, 0u);
    std::printf("%s: %llu cycles, %llu observations equal; %.1f %% of the node-cycles skipped\n", topo.c_str(),
                static_cast<unsigned long long>(skip.cycles), static_cast<unsigned long long>(skip.events),
                100.0 * share);
}
