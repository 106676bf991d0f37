// Hardware benchmarks in NIC clock cycles (deterministic): latency of the requester, the
// completer, end to end and per hop, the back-to-back message interval and link efficiency,
// retransmission overhead, saturation throughput of a torus, and losses under faults.
// Prints "BENCH <name> <value> <unit>" lines; comments start with '#'.
#include <cstdio>
#include <map>
#include <random>
#include <string>

#include "Vbcpl.h"
#include "Vbreq.h"
#include "cluster.hpp"
#include "harness.hpp"
#include "host.hpp"
#include "rma_host.hpp"
#include "velo/velo_hw.h"

using namespace velo::sim;

namespace {

void bench(const char* name, double v, const char* unit) {
    if (v == static_cast<double>(static_cast<long long>(v)))
        std::printf("BENCH %s %lld %s\n", name, static_cast<long long>(v), unit);
    else
        std::printf("BENCH %s %.3f %s\n", name, v, unit);
}

// Requester: first beat of an 8-byte send-window write presented -> packet header word out.
long long requester_cycles() {
    Harness<Vbreq> h;
    h->enable = 1;
    h->node_id = 0x11;
    h->pkt_ready = 1;
    h.reset();
    TlpDriver drv(
        TlpInPins{&h->in_valid, &h->in_ready, &h->in_sop, &h->in_eop, words(h->in_hdr), nullptr, words(h->in_data)});
    std::vector<uint8_t> msg(8, 0x42);
    drv.push(Tlp::mwr(Cluster::kBar2 + send_offset(8, 8, 1, 0x2C, 2, 8), msg, VELO_BAR_SEND));
    long long t_in = -1, t_out = -1;
    for (int i = 0; i < 100 && t_out < 0; ++i) {
        drv.drive();
        h.eval();
        if (drv.sop_presented) t_in = static_cast<long long>(h.cycle());
        if (h->pkt_valid && t_in >= 0) t_out = static_cast<long long>(h.cycle());
        drv.sample();
        h.tick();
    }
    return t_out - t_in;
}

// Completer: last word of an 8-byte message packet accepted -> last beat of the mailbox write out.
long long completer_cycles() {
    Harness<Vbcpl> h;
    h->enable = 1;
    h->req_id = 0x0200;
    h->tx_ready = 1;
    h.reset();
    uint64_t hdr = VELO_FIELD_PREP(VELO_PKT_HDR_TYPE, VELO_PKT_TYPE_VELO) |
                   VELO_FIELD_PREP(VELO_PKT_HDR_MSG_LEN_M1, 7) | VELO_FIELD_PREP(VELO_PKT_HDR_SRC_NODE, 0x11) |
                   VELO_FIELD_PREP(VELO_PKT_HDR_SRC_VPID, 1) | VELO_FIELD_PREP(VELO_PKT_HDR_DST_VPID, 2) |
                   VELO_FIELD_PREP(VELO_PKT_HDR_FRAG_LEN_M1, 7);
    const uint64_t pkt[2] = {hdr, 0x0123456789ABCDEFull};
    int w = 0, gap = 0;
    bool pending_rd = false;
    long long t_in = -1, t_out = -1;
    for (int i = 0; i < 200 && t_out < 0; ++i) {
        // words arrive as from a 16-bit link: one every 4 cycles
        h->pkt_valid = (w < 2 && gap == 0) ? 1 : 0;
        h->pkt_data = w < 2 ? pkt[w] : 0;
        h->pkt_last = w == 1;
        h.eval();
        bool rd = h->tbl_re;
        if (h->pkt_valid && h->pkt_ready) {
            if (w == 1) t_in = static_cast<long long>(h.cycle());
            ++w;
            gap = 3;
        } else if (gap) {
            --gap;
        }
        if (h->tx_valid && h->tx_ready && h->tx_eop) t_out = static_cast<long long>(h.cycle());
        h.tick();
        if (rd || pending_rd) {  // the table: ring at line 0x40000, 64 lines, empty, enabled
            h->tbl_base = 0x40000;
            h->tbl_en = 1;
            h->tbl_log2 = 6;
            h->tbl_wp = 0;
            h->tbl_rp = 0;
        }
        pending_rd = false;
    }
    return t_out - t_in;
}

struct Interval {
    double interval, ideal;
    long long idle;
};

Cluster::Config cfg(const std::string& topo, uint64_t seed) {
    Cluster::Config c;
    c.sys.topology = topo;
    c.sys.seed = seed;
    c.mem_delay = 0;
    c.max_inflight = 4;
    return c;
}

// Back-to-back messages of `len` bytes from one thread of node 0 to node 1 (pair): cycles per
// message on the link, data flits per message, idle (control or empty) flit cycles in the span.
Interval msg_interval(unsigned len, unsigned n, double ber = 0.0, double* msgs_per_cycle = nullptr) {
    auto c = cfg("pair", 7);
    c.sys.ber = ber;
    Cluster p(c);
    if (!p.init()) return Interval{0, 0, -1};
    p.open_mailbox(1, 2, 12, 0x200000000ull);
    p.step(20);
    uint64_t flits = 0, first = 0, last = 0;
    p.sys().on_flit = [&](unsigned node, unsigned port, uint64_t f) {
        if (node != 0 || port != 1 || ((f >> p.sys().link_bits()) & 3) != VELO_LINK_SYNC_DATA) return;
        if (!flits++) first = p.cycle();
        last = p.cycle();
    };
    std::vector<uint8_t> m(len, 0x5A);
    for (unsigned i = 0; i < n; ++i) p.send(0, 1, 1, 2, m, WcMode::Burst);
    p.run_until_idle(4000000);
    long long span = static_cast<long long>(last - first + 1);
    if (msgs_per_cycle) *msgs_per_cycle = static_cast<double>(n) / static_cast<double>(span);
    return Interval{static_cast<double>(span) / n, static_cast<double>(flits) / n,
                    span - static_cast<long long>(flits)};
}

// One 8-byte message from node 0 to node `dst` on an idle cluster: first beat of the PIO write
// into NIC 0 to the last beat of the mailbox DMA write out of NIC dst.
long long e2e(const std::string& topo, unsigned dst, bool wide = false) {
    auto c = cfg(topo, 3);
    c.sys.wide = wide;
    Cluster p(c);
    if (!p.init()) return -1;
    p.open_mailbox(dst, 2, 6, 0x200000000ull);
    p.step(50);
    p.send(0, 1, dst, 2, std::vector<uint8_t>(8, 0x77), WcMode::Burst);
    p.run_until_idle(100000);
    return static_cast<long long>(p.last_dma_eop[dst] - p.last_send_sop[0]);
}

// Through one forwarding node (ring:4, node 0 -> node 2 via node 1): the packet's first flit in
// on node 1's wire from node 0 to its first flit out on node 1's wire to node 2.
long long hop_latency() {
    Cluster p(cfg("ring:4", 5));
    if (!p.init()) return -1;
    p.open_mailbox(2, 2, 6, 0x200000000ull);
    p.step(50);
    long long t_in = -1, t_out = -1;
    p.sys().on_flit = [&](unsigned node, unsigned port, uint64_t f) {
        if (((f >> p.sys().link_bits()) & 3) != VELO_LINK_SYNC_DATA) return;
        // node 0 port 1 feeds node 1 after the wire's latency; node 1 port 1 leads to node 2
        if (node == 0 && port == 1 && t_in < 0) t_in = static_cast<long long>(p.cycle() + p.sys().link_latency());
        if (node == 1 && port == 1 && t_out < 0) t_out = static_cast<long long>(p.cycle());
    };
    p.send(0, 1, 2, 2, std::vector<uint8_t>(8, 0x77), WcMode::Burst);
    p.run_until_idle(100000);
    return t_out - t_in;
}

// Saturation throughput on a 4x4 torus under uniform random traffic: data flits carried by the
// bisection links (between columns 1|2 and 3|0, both directions) per link and cycle, measured over
// a window in steady state while every node keeps its send queue full.
double saturation(double* offered) {
    auto c = cfg("torus:4x4", 11);
    c.max_inflight = 8;
    Cluster p(c);
    if (!p.init()) return -1;
    const unsigned n = p.nodes();
    for (unsigned i = 0; i < n; ++i) p.open_mailbox(i, 0, 12, 0x200000000ull + i * 0x100000ull);
    std::mt19937_64 r(99);
    uint64_t window_start = 0, window_end = 0, flits = 0, injected = 0;
    p.sys().on_flit = [&](unsigned node, unsigned port, uint64_t f) {
        if (p.cycle() < window_start || p.cycle() >= window_end) return;
        if (((f >> p.sys().link_bits()) & 3) != VELO_LINK_SYNC_DATA) return;
        const unsigned x = node % 4;
        if ((port == 1 && (x == 1 || x == 3)) || (port == 2 && (x == 2 || x == 0))) ++flits;  // +x / -x crossings
    };
    auto top_up = [&] {
        for (unsigned s = 0; s < n; ++s)
            while (p.queued_writes(s) < 16) {
                unsigned d = static_cast<unsigned>(r() % (n - 1));
                if (d >= s) ++d;
                p.send(s, 1 + static_cast<unsigned>(r() % 4), d, 0, std::vector<uint8_t>(64, 0x33), WcMode::Burst);
                if (p.cycle() >= window_start && p.cycle() < window_end) ++injected;
            }
    };
    window_start = 4000;
    window_end = 14000;
    while (p.cycle() < window_end) {
        top_up();
        p.step(10);
    }
    const double links = 4 /* rows */ * 2 /* cuts */ * 2 /* directions */;
    *offered = static_cast<double>(injected) * 36 / (window_end - window_start) / (n);  // flits/cycle/node
    return static_cast<double>(flits) / links / static_cast<double>(window_end - window_start);
}

// Faults everywhere at once on a ring of 4: bit errors, lost flits and a link flapping; messages
// lost or duplicated (the scoreboard's view): must be 0.
long long lost_under_faults() {
    auto c = cfg("ring:4", 13);
    c.sys.ber = 1e-5;
    c.sys.flit_loss = 1e-5;
    Cluster p(c);
    if (!p.init()) return -1;
    for (unsigned i = 0; i < 4; ++i) p.open_mailbox(i, 0, 8, 0x200000000ull + i * 0x100000ull);
    std::mt19937_64 r(5);
    for (unsigned k = 0; k < 2000; ++k) {
        unsigned s = static_cast<unsigned>(r() % 4), d = static_cast<unsigned>(r() % 4);
        std::vector<uint8_t> m(1 + r() % 64);
        for (auto& b : m) b = static_cast<uint8_t>(r());
        p.send(s, 1, d, 0, m, WcMode::Burst);
    }
    p.step(5000);
    p.sys().set_link_down(1, 1, true);
    p.step(3000);
    p.sys().set_link_down(1, 1, false);
    p.run_until_idle(20000000);
    return static_cast<long long>(p.scoreboard().outstanding() + p.errors().size());
}

// RMA on a pair (docs/rma.md): one command at a time from node 0 (vpid 2) to node 1 (vpid 3),
// host reads answered after 20 cycles. Returns the cycles from the command's first beat at NIC 0's
// TLP port to the last beat of its completion entry (REMOTE_CPL for a put, GET_DONE for a get)
// leaving NIC 0.
struct RmaBench {
    Cluster c;
    RmaHost h;
    uint64_t la = 0, lb = 0;
    unsigned slot = 0;
    size_t seen = 0;
    static Cluster::Config conf() {
        Cluster::Config k;
        k.sys.topology = "pair";
        k.sys.seed = 21;
        return k;
    }
    RmaBench() : c(conf()), h(c) {
        c.init();
        h.enable(0);
        h.enable(1);
        h.open_nq(0, 2, 8, 0x7000000000ull);
        la = h.add_region(0, 1, 0x11, 2, RmaHost::ALL, 1u << 20, 0, 0x100000, 1, 0);
        lb = h.add_region(1, 1, 0x22, 3, RmaHost::ALL, 1u << 20, 0, 0x200000, 1, 0);
        c.step(2000);
    }
    long long run(unsigned op, uint32_t len) {
        NqEntry e;
        while (h.poll(0, 2, e)) ++seen;
        c.step(200);
        const uint64_t t0 = c.cycle();
        const bool put = op == VELO_RMA_OP_PUT;
        h.command(0, 2, slot++, RmaHost::cmd0(op, !put, put, false, 1, len), la, lb, 1);
        for (uint64_t i = 0; i < 100000000ull; ++i) {
            c.step(1);
            if (h.poll(0, 2, e)) {
                if (e.kind() == VELO_RMA_NQ_KIND_ERROR) return -1;
                return static_cast<long long>(c.last_dma_eop[0] - t0);
            }
        }
        return -1;
    }
};

}  // namespace

int main() {
    long long req = requester_cycles();
    long long cpl = completer_cycles();
    long long lat = e2e("pair", 1);
    std::printf("# end-to-end: first beat of the PIO write into NIC A -> last beat of the mailbox DMA write out of\n");
    std::printf("# NIC B, 8-byte payload, 16-bit link with CRC/retry/credits, switch in both NICs, back to back\n");
    std::printf("# (paper: 64 incl. 21 of HT core + crossbar => 43 comparable)\n");
    bench("hw.e2e_latency_cycles", static_cast<double>(lat), "cycles");
    std::printf("# requester: first beat presented -> packet header word out (paper: 3)\n");
    bench("hw.requester_cycles", static_cast<double>(req), "cycles");
    std::printf("# completer: last packet word in -> last DMA beat out (paper: 5)\n");
    bench("hw.completer_cycles", static_cast<double>(cpl), "cycles");
    std::printf("# network share: switches, links (4 header + 4 payload + 1 CRC flits), wire\n");
    bench("hw.network_cycles", static_cast<double>(lat - req - cpl), "cycles");
    bench("hw.e2e_latency_cycles_tlp128_link32", static_cast<double>(e2e("pair", 1, true)), "cycles");
    std::printf("# through one forwarding NIC: first flit in on the wire -> first flit out on the next wire\n");
    bench("net.hop_latency_cycles", static_cast<double>(hop_latency()), "cycles");
    std::printf("# end-to-end over 1..4 hops on a ring of 8 (node 0 -> node h)\n");
    for (unsigned h = 1; h <= 4; ++h) {
        char name[64];
        std::snprintf(name, sizeof name, "net.e2e_latency_cycles_%u", h);
        bench(name, static_cast<double>(e2e("ring:8", h)), "cycles");
    }
    for (unsigned len : {8u, 64u}) {
        Interval iv = msg_interval(len, 200);
        char name[64];
        std::printf("# %u-byte messages back to back from one sender; link-bound ideal = data flits per packet\n", len);
        std::snprintf(name, sizeof name, "hw.msg_interval_cycles_%uB", len);
        bench(name, iv.interval, "cycles");
        std::snprintf(name, sizeof name, "hw.msg_interval_ideal_%uB", len);
        bench(name, iv.ideal, "cycles");
        std::snprintf(name, sizeof name, "hw.link_idle_cycles_%uB", len);
        bench(name, static_cast<double>(iv.idle), "cycles");
        std::snprintf(name, sizeof name, "hw.msg_rate_%uB_at_100MHz", len);
        bench(name, 100.0 / iv.interval, "Mmsg/s");
        if (len == 64) {
            std::printf("# payload flits / link flit cycles (32 payload flits of 64 B; the rest: 4 header flits,\n");
            std::printf("# 1 CRC flit; control symbols travel on the reverse direction)\n");
            bench("net.link_efficiency_64B", 32.0 / iv.interval, "ratio");
        }
    }
    double clean = 0, noisy = 0;
    msg_interval(64, 2000, 0.0, &clean);
    msg_interval(64, 2000, 1e-5, &noisy);
    std::printf("# throughput lost to retransmission at BER 1e-5, 64-byte messages streamed over one link\n");
    bench("net.retransmit_overhead_ber1e-5", 1.0 - noisy / clean, "ratio");
    double offered = 0;
    double sat = saturation(&offered);
    std::printf("# 4x4 torus, uniform random 64-byte messages, every node saturating: data flits per bisection\n");
    std::printf("# link and cycle (bisection capacity = 1); offered load %.3f flits/cycle/node (a NIC injects <= 1)\n",
                offered);
    bench("net.saturation_throughput", sat, "fraction_of_bisection");
    std::printf("# ring of 4 with BER 1e-5, lost flits 1e-5 and a link down and back under traffic\n");
    bench("net.lost_messages_under_faults", static_cast<double>(lost_under_faults()), "messages");
    {
        RmaBench b;
        const double cap = static_cast<double>(b.c.sys().link_bits()) / 8.0;  // link bytes per cycle
        const long long t1m = b.run(VELO_RMA_OP_PUT, 1u << 20);
        const double bw = static_cast<double>(1u << 20) / static_cast<double>(t1m);
        const auto mtu =
            static_cast<unsigned>(VELO_FIELD_GET(VELO_REG_RMA_CAPS_MTU, b.c.reg_read(0, VELO_REG_RMA_CAPS)));
        std::printf(
            "# RMA put of 1 MiB, pair, 16-bit link: payload bytes per cycle / link bytes per cycle (RMA_MTU %u:\n",
            mtu);
        std::printf("# %u data bytes per packet of 8 header + 8 NLA + %u bytes and a 2-byte CRC flit; the bound is\n",
                    mtu, mtu);
        std::printf("# %u/%u = %.3f); %.3f B/cycle\n", mtu, mtu + 18, static_cast<double>(mtu) / (mtu + 18), bw);
        bench("rma.put_bw_fraction_1MiB", bw / cap, "ratio");
        // N1/2: the put size whose bandwidth (size / command-to-REMOTE_CPL time) is half of the 1 MiB one
        double prev_n = 0, prev_bw = 0, half = 0;
        for (uint32_t n = 64; n <= (1u << 18) && half == 0; n *= 2) {
            const double bwn = static_cast<double>(n) / static_cast<double>(b.run(VELO_RMA_OP_PUT, n));
            std::printf("#   put %7u B: %.3f B/cycle\n", n, bwn);
            if (bwn >= bw / 2) {
                half = prev_n == 0 ? n : prev_n + (n - prev_n) * (bw / 2 - prev_bw) / (bwn - prev_bw);
            }
            prev_n = n;
            prev_bw = bwn;
        }
        std::printf("# N1/2 of puts (interpolated between powers of two)\n");
        bench("rma.put_half_bw_size", static_cast<double>(static_cast<long long>(half + 0.5)), "bytes");
        std::printf("# get of 8 bytes: command's first beat into NIC 0 -> last beat of GET_DONE out of NIC 0\n");
        std::printf("# (includes one host memory read at the target, answered after 20 cycles)\n");
        bench("rma.get_latency_cycles_8B", static_cast<double>(b.run(VELO_RMA_OP_GET, 8)), "cycles");
    }
    return 0;
}
