// Bench of velo_dma_rd (rtl/rma/velo_dma_rd.v): the RMA unit's DMA read engine.
//
// The bench models the caller (read requests of 1..4096 bytes at any byte address, random
// gaps), the host (HostReader: completions split at RCB boundaries, random latency and order
// between tags, gaps inside TLPs, injected UR/CA/drop/late, stray TLPs) and the consumer of the
// data (random or long back pressure). Every memory read TLP is predicted from the requests
// (address, length, byte enables, 3DW/4DW, requester id) and its tag must not be in use; every
// output beat is compared with the request it belongs to (order, first/last, byte valids, every
// valid byte, context), a failed request must end with one error beat at the start of its failed
// read; the counters must equal what the host sent. cpl_ready must never fall.
//
//   SEED=<n>   replay a run          WAVES=1   dump <test>.fst
#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "Vdma128.h"
#include "Vdma128_params.h"
#include "Vdma64.h"
#include "Vdma64_params.h"
#include "Vdma_m128.h"
#include "Vdma_m128_params.h"
#include "Vdma_m4096.h"
#include "Vdma_m4096_params.h"
#include "Vdma_small.h"
#include "Vdma_small_params.h"
#include "Vdma_t5.h"
#include "Vdma_t5_params.h"
#include "harness.hpp"
#include "host.hpp"
#include "tlp.hpp"
#include "velo/velo_hw.h"

using velo::sim::Harness;
using velo::sim::HostMem;
using velo::sim::HostReader;
using velo::sim::pct;
using velo::sim::rnd;
using velo::sim::Tlp;
using velo::sim::TlpDriver;
using velo::sim::TlpInPins;
using velo::sim::TlpOutPins;
using velo::sim::TlpSink;
using velo::sim::words;

namespace {

// Parameters of each Verilated model: its PARAMS in sim/cmake/dma_rd.cmake (<model>_params.h)
struct Cfg {
    unsigned tlp_w, mrrs, tags, tag_w, cb_log2, timeout;
};
template <class M>
constexpr Cfg cfg_of() {
    using P = velo::sim::ModelParams<M>;
    return {P::TLP_W, P::MRRS, P::TAGS, P::TAG_W, P::CB_LOG2, P::TIMEOUT};
}
const Cfg kDma64 = cfg_of<Vdma64>();
const Cfg kDma128 = cfg_of<Vdma128>();
const Cfg kDmaM128 = cfg_of<Vdma_m128>();
const Cfg kDmaM4096 = cfg_of<Vdma_m4096>();
const Cfg kDmaSmall = cfg_of<Vdma_small>();
const Cfg kDmaT5 = cfg_of<Vdma_t5>();

constexpr uint16_t kReqId = 0x0A08;

__attribute__((format(printf, 1, 2))) std::string strf(const char* f, ...) {
    char b[512];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(b, sizeof b, f, ap);
    va_end(ap);
    return b;
}
using ull = unsigned long long;

// Host memory contents: a function of the address.
uint8_t mem_byte(uint64_t a) {
    uint64_t x = (a + 0x51) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    return static_cast<uint8_t>(x >> 32);
}

template <class M>
class Bench {
  public:
    Cfg cfg;
    unsigned B;  // bytes per beat
    std::mt19937_64 rng;
    Harness<M> h;
    HostMem mem;
    HostReader host;
    TlpSink sink;
    TlpDriver drv;

    // ---- knobs
    int rq_gap_pct = 20;                                 // cycles the next request is held back
    int rd_stall_pct = 20;                               // cycles rd_ready is low
    bool rd_block = false;                               // rd_ready held low
    int stray_pct = 0;                                   // percent of idle completion-port slots used for a stray TLP
    int ur_pm = 0, ca_pm = 0, drop_pm = 0, late_pm = 0;  // random faults per read (per mille)
    // directed faults: given (request index, read index in it), the plan for that read
    std::function<HostReader::Plan(size_t, unsigned)> directed;

    // ---- requests and expectations
    struct Req {
        uint64_t addr;
        unsigned len;
        unsigned ctx;
        int fail_sub = -1;  // first read of the request that fails
    };
    std::vector<Req> reqs;
    size_t rq_next = 0;  // next request to offer
    size_t out_req = 0;  // request being delivered
    uint64_t out_beat = 0;
    struct ExpRd {
        size_t req;
        unsigned sub;
        uint64_t addr;
        unsigned len;
    };
    std::deque<ExpRd> exp_rd;
    std::vector<bool> late, timeout_rd;  // by read sequence number
    std::vector<uint64_t> rd_cycle;      // cycle each read was seen
    std::vector<std::string> errs;

    // expected counters
    uint64_t x_reads = 0, x_bytes = 0, x_err = 0, x_tmo = 0, x_unexp = 0;
    // observations
    uint64_t first_cpl_cycle = ~0ull, reads_before_cpl = 0, max_pending = 0;
    uint64_t beats_out = 0, bytes_out = 0, first_out = ~0ull, last_out = 0;
    std::vector<std::pair<size_t, uint64_t>> err_beats;  // (request, cycle) of each error beat

    explicit Bench(const Cfg& c)
        : cfg(c),
          B(c.tlp_w / 8),
          rng(velo::sim::test_rng()),
          mem(rng()),
          host(mem, rng()),
          sink(TlpOutPins{&h->tx_valid, &h->tx_ready, &h->tx_sop, &h->tx_eop, words(h->tx_hdr), words(h->tx_data)}),
          drv(TlpInPins{&h->cpl_valid, &h->cpl_ready, &h->cpl_sop, &h->cpl_eop, words(h->cpl_hdr), nullptr,
                        words(h->cpl_data)}) {
        sink.rng = &rng;
        sink.stall_pct = 10;
        drv.rng = &rng;
        drv.gap_pct = 10;
        drv.mid_tlp_gaps = true;
        host.latency_min = 10;
        host.latency_max = 300;
        host.gap_max = 4;
        host.mps = 256;
        host.split_pct = 40;
        host.reorder = true;
        host.cpl_id = 0x0000;
        host.plan = [this](const Tlp& t, uint64_t seq) { return plan(t, seq); };
        sink.on_tlp = [this](const Tlp& t) { on_mrd(t); };
        h->req_id = kReqId;
        h->rq_valid = 0;
        h->rd_ready = 0;
        h->cpl_valid = 0;
        h.reset();
    }

    void err(const std::string& s) {
        if (errs.size() < 20) errs.push_back(strf("cycle %llu: ", ull(h.cycle())) + s);
    }

    // ---- stimulus
    void add(uint64_t addr, unsigned len) {
        Req r{addr, len, static_cast<unsigned>(rng() & 0xFFFF)};
        // host memory under the request (and the rest of its DWs)
        std::vector<uint8_t> img;
        uint64_t a0 = addr & ~15ull, a1 = (addr + len + 15) & ~15ull;
        for (uint64_t a = a0; a < a1; ++a) img.push_back(mem_byte(a));
        mem.write(a0, img.data(), img.size());
        // the reads it must become
        uint64_t a = addr;
        unsigned rem = len, sub = 0;
        while (rem) {
            unsigned n = std::min<unsigned>(rem, cfg.mrrs - static_cast<unsigned>(a % cfg.mrrs));
            exp_rd.push_back(ExpRd{reqs.size(), sub++, a, n});
            a += n;
            rem -= n;
        }
        reqs.push_back(r);
    }

    uint64_t rand_addr() {
        switch (rnd(rng, 4)) {
            case 0:
                return 0x10000000ull + static_cast<uint64_t>(rnd(rng, 1 << 20));  // below 4 GiB
            case 1:
                return 0xFFFF0000ull + static_cast<uint64_t>(rnd(rng, 0x20000));  // across 4 GiB
            default:
                return 0x7123450000ull + static_cast<uint64_t>(rnd(rng, 1 << 22));  // above
        }
    }
    unsigned rand_len() {
        switch (rnd(rng, 5)) {
            case 0:
                return 1 + static_cast<unsigned>(rnd(rng, 16));
            case 1:
                return 1 + static_cast<unsigned>(rnd(rng, 200));
            case 2:
                return 4096 - static_cast<unsigned>(rnd(rng, 3));
            default:
                return 1 + static_cast<unsigned>(rnd(rng, 4096));
        }
    }
    void add_random(unsigned n) {
        for (unsigned i = 0; i < n; ++i) add(rand_addr(), rand_len());
    }

    uint64_t sub_start(const Req& r, unsigned s) const {
        uint64_t a = r.addr;
        unsigned rem = r.len;
        for (unsigned k = 0; k < s; ++k) {
            unsigned n = std::min<unsigned>(rem, cfg.mrrs - static_cast<unsigned>(a % cfg.mrrs));
            a += n;
            rem -= n;
        }
        return a;
    }
    // completion buffer beats a read occupies
    unsigned beats_of(uint64_t a, unsigned len) const { return static_cast<unsigned>((a + len - 1) / B - a / B + 1); }

    // ---- host side
    size_t cur_req = 0;
    unsigned cur_sub = 0;
    HostReader::Plan plan(const Tlp&, uint64_t seq) {
        HostReader::Plan p;
        if (directed) {
            p = directed(cur_req, cur_sub);
        } else {
            int r = rnd(rng, 1000);
            if (r < ur_pm)
                p.fault = HostReader::Fault::UR;
            else if (r < ur_pm + ca_pm)
                p.fault = HostReader::Fault::CA;
            else if (r < ur_pm + ca_pm + drop_pm)
                p.fault = HostReader::Fault::Drop;
            else if (r < ur_pm + ca_pm + drop_pm + late_pm)
                p.extra_delay =
                    cfg.timeout * 14 / 10 + static_cast<unsigned>(rnd(rng, static_cast<int>(cfg.timeout / 4)));
            if (p.fault != HostReader::Fault::None) p.after = static_cast<unsigned>(rnd(rng, 3));
        }
        const bool is_late = p.fault == HostReader::Fault::None && p.extra_delay >= cfg.timeout;
        late.resize(seq + 1);
        timeout_rd.resize(seq + 1);
        late[seq] = is_late;
        timeout_rd[seq] = is_late || p.fault == HostReader::Fault::Drop;
        if (p.fault != HostReader::Fault::None || is_late) {
            ++x_err;
            if (timeout_rd[seq]) ++x_tmo;
            Req& q = reqs[cur_req];
            if (q.fail_sub < 0) q.fail_sub = static_cast<int>(cur_sub);
        }
        return p;
    }

    void on_mrd(const Tlp& t) {
        ++x_reads;
        if (first_cpl_cycle == ~0ull) ++reads_before_cpl;
        rd_cycle.push_back(h.cycle());
        if (exp_rd.empty()) {
            err("memory read not expected: " + t.str());
            return;
        }
        ExpRd e = exp_rd.front();
        exp_rd.pop_front();
        const uint64_t a0 = e.addr & ~3ull, a1 = (e.addr + e.len + 3) & ~3ull;
        const unsigned ndw = static_cast<unsigned>((a1 - a0) / 4);
        uint8_t fbe = static_cast<uint8_t>((0xF << (e.addr & 3)) & 0xF);
        uint8_t lbe = static_cast<uint8_t>(0xF >> (a1 - e.addr - e.len));
        if (ndw == 1) {
            fbe &= lbe;
            lbe = 0;
        }
        if (!t.is_mrd() || t.addr != a0 || (t.len_dw ? t.len_dw : 1024u) != ndw || t.first_be != fbe ||
            t.last_be != lbe || t.req_id != kReqId || t.is_4dw() != ((a0 >> 32) != 0))
            err(strf("read %s, expected addr %llx len %u (request %zu read %u)", t.str().c_str(), ull(e.addr), e.len,
                     e.req, e.sub));
        if (cfg.tag_w < 8 && (t.tag >> cfg.tag_w)) err(strf("tag %u wider than %u bits", t.tag, cfg.tag_w));
        auto busy = host.pending_tags();
        if (std::find(busy.begin(), busy.end(), t.tag) != busy.end()) err(strf("tag %u issued while in use", t.tag));
        max_pending = std::max<uint64_t>(max_pending, host.pending() + 1);
        if (host.pending() + 1 > cfg.tags) err(strf("%zu reads outstanding, %u tags", host.pending() + 1, cfg.tags));
        cur_req = e.req;
        cur_sub = e.sub;
        host.request(t, h.cycle());
    }

    void feed_completions() {
        if (!drv.idle()) return;
        Tlp c;
        uint64_t seq = 0;
        if (host.pop(h.cycle(), c, &seq)) {
            if (first_cpl_cycle == ~0ull) first_cpl_cycle = h.cycle();
            if (late[seq])
                ++x_unexp;
            else if (c.cpl_status == VELO_TLP_CPL_SC)
                x_bytes += velo::sim::cpl_bytes(c);
            drv.push(c);
        } else if (stray_pct && out_req < reqs.size() && pct(rng, stray_pct)) {
            drv.push(stray());
            ++x_unexp;
        }
    }

    // A TLP that matches no read: a completion for another requester, a write, or (with a narrow
    // tag field) a tag with bits above it.
    Tlp stray() {
        int k = rnd(rng, cfg.tag_w < 8 ? 3 : 2);
        if (k == 1)
            return Tlp::mwr(0x1000 + 4 * static_cast<uint64_t>(rnd(rng, 64)), std::vector<uint8_t>(12, 0x5A), 0);
        Tlp c;
        c.fmt_type = VELO_TLP_FMT_TYPE_CPLD;
        c.req_id = k == 0 ? static_cast<uint16_t>(kReqId ^ (1 + rnd(rng, 0xFFFE))) : kReqId;
        c.tag = k == 0 ? static_cast<uint8_t>(rng()) : static_cast<uint8_t>((1u << cfg.tag_w) | (rng() & 0x1F));
        c.byte_count = 8;
        c.lower_addr = 0;
        c.len_dw = 2;
        c.payload.assign(8, 0xEE);
        return c;
    }

    // ---- output side
    void on_beat() {
        const uint64_t cyc = h.cycle();
        std::vector<uint8_t> d(B);
        auto w = words(h->rd_data);
        for (unsigned i = 0; i < B; ++i) d[i] = static_cast<uint8_t>(w.w[i / 4] >> (8 * (i % 4)));
        const uint32_t be = static_cast<uint32_t>(h->rd_be);
        const bool first = h->rd_first, last = h->rd_last, e = h->rd_err;
        const unsigned ctx = h->rd_ctx;
        if (out_req >= reqs.size()) {
            err("beat after the last request");
            return;
        }
        Req& r = reqs[out_req];
        if (ctx != r.ctx) err(strf("request %zu: context %x, expected %x", out_req, ctx, r.ctx));
        const uint64_t a0 = r.addr / B * B;
        const uint64_t nb = beats_of(r.addr, r.len);
        if (e) {
            err_beats.emplace_back(out_req, cyc);
            if (r.fail_sub < 0) {
                err(strf("request %zu: error beat, no read of it failed", out_req));
            } else {
                // the beats of the reads before the failed one (it starts at an MRRS boundary)
                const uint64_t s = sub_start(r, static_cast<unsigned>(r.fail_sub));
                const uint64_t at = r.fail_sub == 0 ? 0 : (s - a0) / B;
                if (out_beat != at)
                    err(strf("request %zu: error beat after %llu beats, read %d starts at beat %llu", out_req,
                             ull(out_beat), r.fail_sub, ull(at)));
                if (first != (r.fail_sub == 0) || !last || be != 0)
                    err(strf("request %zu: error beat first %d last %d be %x", out_req, first, last, be));
            }
            ++out_req;
            out_beat = 0;
            return;
        }
        if (out_beat >= nb) {
            err(strf("request %zu: beat %llu of %llu", out_req, ull(out_beat), ull(nb)));
            return;
        }
        const uint64_t ba = a0 + out_beat * B;
        if (r.fail_sub >= 0 && (r.fail_sub == 0 || ba >= sub_start(r, static_cast<unsigned>(r.fail_sub))))
            err(strf("request %zu beat %llu: data of failed read %d delivered", out_req, ull(out_beat), r.fail_sub));
        uint32_t xbe = 0;
        for (unsigned i = 0; i < B; ++i)
            if (ba + i >= r.addr && ba + i < r.addr + r.len) xbe |= 1u << i;
        if (be != xbe) err(strf("request %zu beat %llu: be %x, expected %x", out_req, ull(out_beat), be, xbe));
        if (first != (out_beat == 0) || last != (out_beat == nb - 1))
            err(strf("request %zu beat %llu/%llu: first %d last %d", out_req, ull(out_beat), ull(nb), first, last));
        for (unsigned i = 0; i < B; ++i) {
            if (((xbe >> i) & 1) && d[i] != mem_byte(ba + i)) {
                err(strf("request %zu: byte at %llx is %02x, expected %02x", out_req, ull(ba + i), d[i],
                         mem_byte(ba + i)));
                break;
            }
        }
        ++beats_out;
        bytes_out += static_cast<uint64_t>(__builtin_popcount(xbe));
        if (first_out == ~0ull) first_out = cyc;
        last_out = cyc;
        if (++out_beat == nb) {
            ++out_req;
            out_beat = 0;
        }
    }

    // ---- one clock cycle
    bool rq_gap = false;
    void step() {
        // drive
        if (rq_next < reqs.size()) {
            if (!h->rq_valid) rq_gap = rq_gap_pct && pct(rng, rq_gap_pct);
            h->rq_valid = !rq_gap;
            h->rq_addr = reqs[rq_next].addr;
            h->rq_len_m1 = static_cast<uint16_t>(reqs[rq_next].len - 1);
            h->rq_ctx = static_cast<uint16_t>(reqs[rq_next].ctx);
        } else {
            h->rq_valid = 0;
        }
        h->rd_ready = !rd_block && !(rd_stall_pct && pct(rng, rd_stall_pct));
        sink.drive();
        drv.drive();
        h.eval();
        // sample
        if (!h->cpl_ready) err("cpl_ready low");
        const bool rq_fire = h->rq_valid && h->rq_ready;
        if (h->rd_valid && h->rd_ready) on_beat();
        sink.sample();
        drv.sample();
        h.tick();
        if (rq_fire) {
            ++rq_next;
            h->rq_valid = 0;
            rq_gap = false;
        }
        feed_completions();
    }

    bool done() { return out_req == reqs.size() && host.idle() && drv.idle() && !h->busy; }

    // Run until every request is delivered (or the limit).
    void run(uint64_t limit = 2000000) {
        uint64_t end = h.cycle() + limit;
        while (!done() && h.cycle() < end && errs.size() < 20) step();
        // let late completions and quarantine run out
        for (unsigned i = 0; i < 3 * cfg.timeout && host.pending(); ++i) step();
        for (unsigned i = 0; i < 50; ++i) step();
        EXPECT_TRUE(done()) << "not finished: " << out_req << "/" << reqs.size() << " requests delivered";
    }

    void check() {
        for (auto& e : errs) ADD_FAILURE() << e;
        for (auto& e : host.errors) ADD_FAILURE() << e;
        for (auto& e : sink.errors) ADD_FAILURE() << e;
        EXPECT_TRUE(exp_rd.empty()) << exp_rd.size() << " reads never issued";
        EXPECT_EQ(h->cnt_reads, x_reads & 0xFFFFFFFF);
        EXPECT_EQ(h->cnt_cpl_bytes, x_bytes & 0xFFFFFFFF);
        EXPECT_EQ(h->cnt_errors, x_err & 0xFFFFFFFF);
        EXPECT_EQ(h->cnt_timeouts, x_tmo & 0xFFFFFFFF);
        EXPECT_EQ(h->cnt_unexpected, x_unexp & 0xFFFFFFFF);
        std::printf(
            "[ info ] %zu requests, %llu reads (%llu failed, %llu timed out), %llu completion bytes, %llu "
            "unexpected, %llu cycles\n",
            reqs.size(), ull(x_reads), ull(x_err), ull(x_tmo), ull(x_bytes), ull(x_unexp), ull(h.cycle()));
    }
};

// ------------------------------------------------------------------------------ random
template <class M>
void random_run(const Cfg& c, unsigned n, bool faults) {
    Bench<M> b(c);
    if (faults) {
        b.ur_pm = 8;
        b.ca_pm = 8;
        b.drop_pm = 4;
        b.late_pm = 4;
        b.stray_pct = 2;
    }
    b.add_random(n);
    // phases of long back pressure
    for (unsigned k = 0; k < n && !::testing::Test::HasFailure(); k += 50) {
        b.rd_block = true;
        for (int i = 0; i < 300; ++i) b.step();
        b.rd_block = false;
        for (int i = 0; i < 3000 && !b.done(); ++i) b.step();
    }
    b.run();
    b.check();
    if (faults) {
        EXPECT_GT(b.x_err, 0u);
        EXPECT_GT(b.x_unexp, 0u);
    }
}

TEST(DmaRd, Random64) {
    random_run<Vdma64>(kDma64, 3000, false);
}
TEST(DmaRd, Random128) {
    random_run<Vdma128>(kDma128, 3000, false);
}
TEST(DmaRd, RandomMrrs128) {
    random_run<Vdma_m128>(kDmaM128, 2000, false);
}
TEST(DmaRd, RandomMrrs4096) {
    random_run<Vdma_m4096>(kDmaM4096, 2000, false);
}
TEST(DmaRd, RandomSmallBufferFourTags) {
    random_run<Vdma_small>(kDmaSmall, 1500, false);
}
TEST(DmaRd, RandomFaults64) {
    random_run<Vdma64>(kDma64, 3000, true);
}
TEST(DmaRd, RandomFaults128) {
    random_run<Vdma128>(kDma128, 3000, true);
}

// In-order completions that are never split (the other extreme of the host's freedom).
TEST(DmaRd, InOrderUnsplitCompletions) {
    Bench<Vdma64> b(kDma64);
    b.host.reorder = false;
    b.host.split_pct = 0;
    b.host.mps = 4096;
    b.add_random(1500);
    b.run();
    b.check();
}

// ------------------------------------------------------------------------------ directed
// Long latency: exactly TAGS small reads go out before the first completion comes back.
template <class M>
void max_tags(const Cfg& c, unsigned latency) {
    Bench<M> b(c);
    b.host.latency_min = b.host.latency_max = latency;
    b.rq_gap_pct = 0;
    b.sink.stall_pct = 0;
    for (unsigned i = 0; i < 3 * c.tags + 5; ++i) b.add(0x20000000ull + 4096ull * i + (i * 37) % 4000, 8);
    b.run();
    b.check();
    EXPECT_EQ(b.reads_before_cpl, c.tags) << "reads issued before the first completion";
    EXPECT_EQ(b.max_pending, c.tags);
}
TEST(DmaRd, MaxOutstandingTags32) {
    max_tags<Vdma64>(kDma64, 2000);
}
TEST(DmaRd, MaxOutstandingTags4) {
    max_tags<Vdma_small>(kDmaSmall, 500);
}

// 4 KiB requests with long latency: issue stops when the completion buffer is full (fewer reads
// than tags), and again while the output is blocked; completions are never stalled.
template <class M>
void buffer_full(const Cfg& c, uint64_t base) {
    Bench<M> b(c);
    b.host.latency_min = b.host.latency_max = c.timeout / 3;
    b.rq_gap_pct = 0;
    b.sink.stall_pct = 0;
    b.drv.gap_pct = 0;
    for (unsigned i = 0; i < 12; ++i) b.add(base + 4096ull * i * 2 + 3 * i, 4096);
    // how many reads fit: in issue order until the buffer is full
    const unsigned cb_beats = (1u << c.cb_log2) / b.B;
    unsigned fit = 0, used = 0;
    for (auto& e : b.exp_rd) {
        unsigned n = b.beats_of(e.addr, e.len);
        if (used + n > cb_beats || fit == c.tags) break;
        used += n;
        ++fit;
    }
    ASSERT_LT(fit, c.tags) << "the buffer must be the limit here";
    // block the output: after the first completions nothing more may be issued
    b.rd_block = true;
    for (unsigned i = 0; i < 4 * c.timeout / 3 && b.errs.empty(); ++i) b.step();
    EXPECT_EQ(b.reads_before_cpl, fit) << "reads issued before the first completion";
    EXPECT_EQ(b.x_reads, fit) << "reads issued while the buffer was full and the output blocked";
    EXPECT_EQ(b.beats_out, 0u);
    b.rd_block = false;
    b.run();
    b.check();
}
TEST(DmaRd, CompletionBufferFull64) {
    buffer_full<Vdma64>(kDma64, 0x30000000ull + 0x11);
}
TEST(DmaRd, CompletionBufferFullSmall) {
    buffer_full<Vdma_small>(kDmaSmall, 0x7000000000ull + 0x2);
}

// UR and CA completions: on the first read of a request, after part of a middle read's data, on
// the last read; the request ends with an error beat, the following ones are unaffected.
template <class M>
void error_status(const Cfg& c) {
    Bench<M> b(c);
    b.rq_gap_pct = 0;
    using F = HostReader::Fault;
    b.directed = [](size_t req, unsigned sub) {
        HostReader::Plan p;
        if (req == 1 && sub == 0) p.fault = F::UR;
        if (req == 3 && sub == 2) p = {F::CA, 1, 0};
        if (req == 5 && sub == 8) p.fault = F::UR;
        if (req == 7 && sub == 1) p = {F::CA, 0, 0};
        if (req == 7 && sub == 3) p.fault = F::UR;    // a second failure in a failed request
        if (req == 9 && sub == 0) p = {F::CA, 2, 0};  // the only read of a short request
        return p;
    };
    for (unsigned i = 0; i < 12; ++i) b.add(0x40000000ull + 0x3000ull * i + 5 * i, i == 9 ? 300 : 4096);
    b.run();
    b.check();
    std::vector<size_t> failed;
    for (auto& e : b.err_beats) failed.push_back(e.first);
    EXPECT_EQ(failed, (std::vector<size_t>{1, 3, 5, 7, 9}));
    EXPECT_EQ(b.x_err, 6u);
    EXPECT_EQ(b.x_tmo, 0u);
}
TEST(DmaRd, UnsupportedRequestAndCompleterAbort64) {
    error_status<Vdma64>(kDma64);
}
TEST(DmaRd, UnsupportedRequestAndCompleterAbort128) {
    error_status<Vdma128>(kDma128);
}

// No completion (timeout), part of the completions then none, and completions that come after
// the timeout (dropped and counted); the error is delivered between TIMEOUT and 1.25*TIMEOUT
// cycles after the read, and the tag serves later reads correctly.
template <class M>
void timeouts(const Cfg& c) {
    Bench<M> b(c);
    b.rq_gap_pct = 0;
    b.rd_stall_pct = 0;
    b.sink.stall_pct = 0;
    b.drv.gap_pct = 0;
    b.host.latency_min = 20;
    b.host.latency_max = 60;
    using F = HostReader::Fault;
    const unsigned T = c.timeout;
    b.directed = [T](size_t req, unsigned sub) {
        HostReader::Plan p;
        if (req == 2 && sub == 0) p.fault = F::Drop;
        if (req == 4 && sub == 1) p = {F::Drop, 1, 0};
        if (req == 6 && sub == 0) p.extra_delay = T * 3 / 2;  // late: after the timeout
        if (req == 8 && sub == 0) p.extra_delay = T * 3 / 2;
        return p;
    };
    // requests 6 and 8 are short: one read, a few completions
    for (unsigned i = 0; i < 14; ++i) b.add(0x50000000ull + 0x2000ull * i + 3, (i == 6 || i == 8) ? 200 : 700);
    b.run(40ull * T);
    b.check();
    std::vector<size_t> failed;
    for (auto& e : b.err_beats) failed.push_back(e.first);
    EXPECT_EQ(failed, (std::vector<size_t>{2, 4, 6, 8}));
    EXPECT_EQ(b.x_tmo, 4u);
    EXPECT_GT(b.x_unexp, 1u) << "late completions must have come in";
    // timing of the first error: read 2's first read is read number 2+... find its issue cycle
    size_t seq = 0;
    for (size_t r = 0; r < 2; ++r) seq += (b.reqs[r].len + (b.reqs[r].addr % c.mrrs) + c.mrrs - 1) / c.mrrs;
    ASSERT_FALSE(b.err_beats.empty());
    ASSERT_LT(seq, b.rd_cycle.size());
    uint64_t dt = b.err_beats[0].second - b.rd_cycle[seq];
    EXPECT_GE(dt, T) << "timed out too early";
    EXPECT_LE(dt, T + T / 4 + 20) << "timed out too late";
    // the slots are used again after the quarantine: more requests, all good
    size_t n0 = b.reqs.size();
    b.directed = nullptr;
    for (unsigned i = 0; i < 3 * c.tags; ++i) b.add(0x60000000ull + 0x1000ull * i + i, 64 + i);
    b.run();
    b.check();
    EXPECT_EQ(b.err_beats.size(), 4u) << "later requests failed";
    EXPECT_EQ(b.out_req, n0 + 3 * c.tags);
}
TEST(DmaRd, TimeoutAndLateCompletionsWithGenerationTags) {
    timeouts<Vdma64>(kDma64);
}
TEST(DmaRd, TimeoutAndLateCompletionsFiveBitTags) {
    timeouts<Vdma_t5>(kDmaT5);
}

// TLPs that match no read: counted, no effect on the data.
TEST(DmaRd, StrayTlpsAreDroppedAndCounted) {
    Bench<Vdma_t5> b(kDmaT5);
    b.stray_pct = 30;
    b.add_random(1000);
    b.run();
    b.check();
    EXPECT_GT(b.x_unexp, 20u);
    // completions for tags nobody waits for, while idle
    Bench<Vdma64> c(kDma64);
    for (unsigned t = 0; t < 256; t += 5) {
        Tlp x;
        x.fmt_type = VELO_TLP_FMT_TYPE_CPLD;
        x.req_id = kReqId;
        x.tag = static_cast<uint8_t>(t);
        x.byte_count = 4;
        x.len_dw = 1;
        x.payload.assign(4, 1);
        c.drv.push(x);
        ++c.x_unexp;
    }
    for (int i = 0; i < 400 && !c.drv.idle(); ++i) c.step();
    EXPECT_TRUE(c.drv.idle());
    EXPECT_EQ(c.beats_out, 0u);
    c.add_random(20);
    c.run();
    c.check();
}

// Request splitting at MRRS and 4 KiB boundaries (and across 4 GiB), all read sizes.
template <class M>
void splits(const Cfg& c) {
    Bench<M> b(c);
    const uint64_t bases[] = {0x80000000ull, 0xFFFFF000ull, 0x123456789000ull};
    for (uint64_t base : bases) {
        for (unsigned off : {0u, 1u, 2u, 3u, 4u, c.mrrs - 1, c.mrrs, 4095u}) {
            for (unsigned len : {1u, 2u, 3u, 4u, 5u, 63u, 64u, 65u, c.mrrs - 1, c.mrrs, c.mrrs + 1, 4096u}) {
                b.add(base + off, len);
            }
        }
    }
    b.run();
    b.check();
}
TEST(DmaRd, SplitsMrrs128) {
    splits<Vdma_m128>(kDmaM128);
}
TEST(DmaRd, SplitsMrrs512) {
    splits<Vdma64>(kDma64);
}
TEST(DmaRd, SplitsMrrs512Tlp128) {
    splits<Vdma128>(kDma128);
}
TEST(DmaRd, SplitsMrrs4096) {
    splits<Vdma_m4096>(kDmaM4096);
}

// ------------------------------------------------------------------------------ throughput
// A long stream of 4 KiB reads with a fixed completion latency of 100 cycles and no back
// pressure: payload bytes per cycle at the output, and as a fraction of the TLP data width.
template <class M>
void throughput(const Cfg& c, const char* name) {
    Bench<M> b(c);
    b.host.latency_min = b.host.latency_max = 100;
    b.host.gap_max = 0;
    b.host.split_pct = 0;
    b.host.mps = 256;
    b.host.reorder = false;
    b.rq_gap_pct = 0;
    b.rd_stall_pct = 0;
    b.sink.stall_pct = 0;
    b.drv.gap_pct = 0;
    for (unsigned i = 0; i < 128; ++i) b.add(0x200000000ull + 4096ull * i, 4096);
    b.run();
    b.check();
    const double bpc = static_cast<double>(b.bytes_out) / static_cast<double>(b.last_out - b.first_out + 1);
    const double frac = bpc / b.B;
    std::printf(
        "[ figure ] dma_rd.%s: %.3f payload bytes/cycle = %.3f of the %u-bit TLP width (latency 100, MRRS "
        "%u, %u tags, %llu bytes)\n",
        name, bpc, frac, c.tlp_w, c.mrrs, c.tags, ull(b.bytes_out));
    EXPECT_GE(frac, 0.9) << "tags/buffer do not cover a 100-cycle latency";
}
TEST(DmaRd, Throughput64) {
    throughput<Vdma64>(kDma64, "throughput_w64_mrrs512");
}
TEST(DmaRd, Throughput128) {
    throughput<Vdma128>(kDma128, "throughput_w128_mrrs512");
}
TEST(DmaRd, ThroughputMrrs128) {
    throughput<Vdma_m128>(kDmaM128, "throughput_w64_mrrs128");
}

}  // namespace
