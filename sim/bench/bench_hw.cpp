// Hardware benchmarks in NIC clock cycles (deterministic): latency of the requester, the
// completer and end to end, and the back-to-back message interval on the link.
// Prints "BENCH <name> <value> <unit>" lines; comments start with '#'.
#include <cstdio>
#include <map>

#include "Vbcpl.h"
#include "Vbreq.h"
#include "harness.hpp"
#include "host.hpp"
#include "pair.hpp"
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
    drv.push(Tlp::mwr(Pair::kBar2 + send_offset(8, 8, 1, 0x2C, 2, 8), msg, VELO_BAR_SEND));
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

// Back-to-back messages of `len` bytes from one thread: cycles per message on the link.
Interval msg_interval(unsigned len, unsigned n) {
    Pair::Config c;
    c.seed = 7;
    c.mem_delay = 0;
    c.max_inflight = 4;
    Pair p(c);
    p.init(0x11, 0x2C);
    p.open_mailbox(1, 2, 12, 0x200000000ull);
    p.step(20);
    std::vector<uint8_t> m(len, 0x5A);
    for (unsigned i = 0; i < n; ++i) p.send(0, 1, 0x2C, 2, m, WcMode::Burst);
    p.run_until_idle(1000000);
    long long span = static_cast<long long>(p.link_last_ab - p.link_first_ab + 1);
    return Interval{static_cast<double>(span) / n, static_cast<double>(p.link_flits_ab) / n,
                    span - static_cast<long long>(p.link_flits_ab)};
}

long long e2e(bool wide) {
    Pair::Config c;
    c.seed = 3;
    c.wide = wide;
    Pair p(c);
    p.init(0x11, 0x2C);
    p.open_mailbox(1, 2, 6, 0x200000000ull);
    p.step(50);
    p.send(0, 1, 0x2C, 2, std::vector<uint8_t>(8, 0x77), WcMode::Burst);
    p.run_until_idle(10000);
    return static_cast<long long>(p.last_dma_eop[1] - p.last_send_sop[0]);
}

}  // namespace

int main() {
    long long req = requester_cycles();
    long long cpl = completer_cycles();
    long long lat = e2e(false);
    std::printf("# end-to-end: first beat of the PIO write into NIC A -> last beat of the mailbox DMA write out of\n");
    std::printf(
        "# NIC B, 8-byte payload, 16-bit link, back to back (paper: 64 incl. 21 of HT core + crossbar => 43)\n");
    bench("hw.e2e_latency_cycles", static_cast<double>(lat), "cycles");
    std::printf("# requester: first beat presented -> packet header word out (paper: 3)\n");
    bench("hw.requester_cycles", static_cast<double>(req), "cycles");
    std::printf("# completer: last packet word in -> last DMA beat out (paper: 5)\n");
    bench("hw.completer_cycles", static_cast<double>(cpl), "cycles");
    std::printf("# link share: serializing 8 flits (4 header + 4 payload) plus one register slice of wire\n");
    bench("hw.link_cycles", static_cast<double>(lat - req - cpl), "cycles");
    bench("hw.e2e_latency_cycles_tlp128_link32", static_cast<double>(e2e(true)), "cycles");
    for (unsigned len : {8u, 64u}) {
        Interval iv = msg_interval(len, 200);
        char name[64];
        std::printf("# %u-byte messages back to back from one sender; link-bound ideal = flits per packet\n", len);
        std::snprintf(name, sizeof name, "hw.msg_interval_cycles_%uB", len);
        bench(name, iv.interval, "cycles");
        std::snprintf(name, sizeof name, "hw.msg_interval_ideal_%uB", len);
        bench(name, iv.ideal, "cycles");
        std::snprintf(name, sizeof name, "hw.link_idle_cycles_%uB", len);
        bench(name, static_cast<double>(iv.idle), "cycles");
        std::snprintf(name, sizeof name, "hw.msg_rate_%uB_at_100MHz", len);
        bench(name, 100.0 / iv.interval, "Mmsg/s");
    }
    return 0;
}
