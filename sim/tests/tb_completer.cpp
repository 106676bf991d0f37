// Bench of velo_completer (rtl/velo/velo_completer.v): network packets in, mailbox entries out
// by DMA.
//
// The bench models everything around the completer:
//   - the register file's mailbox table: a RAM read port whose data appear the cycle after
//     tbl_re (read before write, like velo_sdp_ram), updated by wp_we and by software writes,
//     with sw_wr pulsed the cycle after a software write lands, as velo_regfile does; in cycles
//     after no tbl_re the read data change at random (software reads of other rows),
//   - the host: TlpSink with random stalls, HostMem whose lines of one TLP become visible in
//     adversarial order,
//   - the software: a MailboxReader per vpid (flags torn reads) polling every cycle, or slower
//     in phases meant to fill the rings, that returns the read pointer lazily, in random
//     batches, through the table model.
// Every DMA write is predicted from the packets sent (order, address, header fields, payload,
// write pointer updates) and every mailbox entry software reads is compared with its packet and
// with a Scoreboard. Counter events are counted and compared with the predicted drops/deliveries.
// Every entry's commit report (cmt_valid, the interrupt unit's trigger) must come the cycle after
// the last beat of its last (head) TLP was accepted, with the entry's vpid, and at no other time.
//
//   SEED=<n>   replay a run          WAVES=1   dump <test>.fst          CPL_TRACE=1   port trace
#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "Vcpl128.h"
#include "Vcpl128_params.h"
#include "Vcpl64.h"
#include "Vcpl64_params.h"
#include "Vcpl64p.h"
#include "Vcpl64p_params.h"
#include "harness.hpp"
#include "host.hpp"
#include "tlp.hpp"
#include "velo/velo_hw.h"

using velo::sim::Harness;
using velo::sim::HostMem;
using velo::sim::MailboxReader;
using velo::sim::MboxEntry;
using velo::sim::Msg;
using velo::sim::Scoreboard;
using velo::sim::Tlp;
using velo::sim::TlpOutPins;
using velo::sim::TlpSink;

namespace {

#define PKT_PREP(F, v) VELO_FIELD_PREP(VELO_PKT_HDR_##F, (v))
#define PKT_GET(F, x) static_cast<unsigned>(VELO_FIELD_GET(VELO_PKT_HDR_##F, (x)))
#define MBOX_PREP(F, v) VELO_FIELD_PREP(VELO_MBOX_HDR_##F, (v))
#define MBOX_GET(F, x) static_cast<unsigned>(VELO_FIELD_GET(VELO_MBOX_HDR_##F, (x)))

constexpr unsigned kNode = 0x3C;                        // this node (destination of the expected entries)
constexpr uint64_t kStompMark = 0x5354304D50ED0BADull;  // test-only: send the packet marked bad
constexpr uint32_t kPtrMask = 0x1FFFF;                  // MBOX_PTR_BITS
constexpr uint64_t kBaseMask = (1ull << 58) - 1;
constexpr uint64_t k4G = 1ull << 32;

__attribute__((format(printf, 1, 2))) std::string strf(const char* f, ...) {
    char b[512];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(b, sizeof b, f, ap);
    va_end(ap);
    return b;
}

unsigned rnd(std::mt19937_64& r, unsigned n) {
    return static_cast<unsigned>(r() % n);
}
bool chance(std::mt19937_64& r, unsigned pct) {
    return rnd(r, 100) < pct;
}

std::string join(const std::vector<std::string>& v, size_t max = 12) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < max; ++i) s += "\n  " + v[i];
    if (v.size() > max) s += strf("\n  ... (%zu more)", v.size() - max);
    return s;
}

// ------------------------------------------------------------------------------ packets

// Message length, fragment offset and fragment length of one packet.
struct Shape {
    unsigned msg_len = 1, off = 0, len = 1;
};

// A random message or fragment whose payload area ((off % 4) + len) is `area` bytes (1..64).
Shape shape_for_area(std::mt19937_64& r, unsigned area) {
    Shape s;
    if (area == 1 || chance(r, 40)) {  // starts at offset 0: a whole message or a first fragment
        s.len = area;
        s.msg_len = chance(r, 60) ? area : area + rnd(r, 65 - area);
        return s;
    }
    unsigned pad = rnd(r, std::min(4u, area));  // pad < area: at least one fragment byte
    s.len = area - pad;
    unsigned kmax = (64 - area) / 4;  // off = 4k + pad, off + len <= 64
    s.off = 4 * rnd(r, kmax + 1) + pad;
    s.msg_len = s.off + s.len + rnd(r, 64 - (s.off + s.len) + 1);
    return s;
}

struct HdrArgs {
    unsigned dst_vpid = 0, src_node = 0, src_vpid = 0;
    Shape s;
    unsigned type = VELO_PKT_TYPE_VELO;
    unsigned vc = 0, route = 0;  // the network's bits: the completer ignores them
    bool rsvd = false;
};

uint64_t make_hdr(const HdrArgs& a) {
    bool frag = a.s.off != 0 || a.s.len != a.s.msg_len;
    return PKT_PREP(VC, a.vc) | PKT_PREP(ROUTE, a.route) | PKT_PREP(TYPE, a.type) |
           PKT_PREP(MSG_LEN_M1, a.s.msg_len - 1) | PKT_PREP(FRAG_OFF, a.s.off) | PKT_PREP(SRC_NODE, a.src_node) |
           PKT_PREP(SRC_VPID, a.src_vpid) | PKT_PREP(DST_VPID, a.dst_vpid) | PKT_PREP(FRAG_LEN_M1, a.s.len - 1) |
           PKT_PREP(FRAG, frag ? 1 : 0) | PKT_PREP(RSVD, a.rsvd ? 1 : 0);
}

unsigned hdr_area(uint64_t h) {
    return PKT_GET(FRAG_OFF, h) % 4 + PKT_GET(FRAG_LEN_M1, h) + 1;
}
unsigned area_words(unsigned area) {
    return (area + 7) / 8;
}

// The header word and the payload words: random bytes everywhere (pad bytes before the
// fragment and bytes after the area in the last word too; the completer copies whole words).
// `extra` words more (or fewer) than the header asks for make a malformed packet.
std::vector<uint64_t> make_words(uint64_t hdr, std::mt19937_64& r, int extra = 0) {
    std::vector<uint64_t> w{hdr};
    int n = static_cast<int>(area_words(hdr_area(hdr))) + extra;
    for (int i = 0; i < n; ++i) w.push_back(r());
    return w;
}

std::vector<uint8_t> area_bytes(const std::vector<uint64_t>& w) {
    unsigned area = hdr_area(w[0]);
    std::vector<uint8_t> b(area);
    for (unsigned i = 0; i < area; ++i) b[i] = static_cast<uint8_t>(w[1 + i / 8] >> (8 * (i % 8)));
    return b;
}

// DMA beats of one packet's entry on a TLP stream of R 64-bit words per beat.
unsigned dma_beats(unsigned area, unsigned R) {
    bool two = area > 56;
    unsigned head_words = two ? 8 : area_words(area) + 1;
    unsigned head = (head_words + R - 1) / R;
    unsigned tail = two ? 2 / R : 0;
    return head + tail;
}

// What happens to a packet.
enum class Fate { Deliver, Bad, Vpid, Disabled };

// ------------------------------------------------------------------------------ environment

template <class M>
class Env {
  public:
    static constexpr unsigned R = sizeof(std::remove_reference_t<decltype(std::declval<M&>().tx_data)>) / 8;

    // One row of the mailbox table, as the register file holds it.
    struct Row {
        uint64_t base = 0;  // in 64-byte lines
        bool en = false;
        unsigned log2 = 0;
        uint32_t wp = 0, rp = 0;
    };
    // One mailbox entry software should read (header with PHASE = 0).
    struct Entry {
        uint64_t hdr;
        std::vector<uint8_t> area;
    };
    // Software side of one vpid.
    struct Vp {
        uint64_t base = 0;  // bytes
        unsigned log2 = 0;
        std::unique_ptr<MailboxReader> rd;
        std::deque<Entry> exp;
        uint32_t gen_wp = 0;      // write pointer as the bench predicts it
        unsigned poll_pct = 100;  // percent of cycles software polls
        bool auto_return = true;  // software returns the read pointer by itself
        unsigned batch = 1, batch_max = 1, idle_limit = 8, idle = 0;
        bool ret_pending = false;
        uint64_t got = 0, lines = 0;
    };

    Harness<M> h;
    std::mt19937_64 rng;
    HostMem mem;
    TlpSink sink;
    std::array<Row, 256> tbl{};
    std::map<unsigned, Vp> vps;
    Scoreboard sb;
    std::vector<std::string> errors;

    // inputs
    bool enable = true;
    uint16_t req_id = 0x0100;
    unsigned q_vpid = 0;
    unsigned gap_pct = 0;      // percent of cycles pkt_valid stays low before a word
    bool garble_tbl = true;    // table read data change in cycles after no tbl_re
    unsigned noop_sw_pct = 0;  // percent of cycles software rewrites some row unchanged

    // expectations
    std::deque<Tlp> exp_tlp;
    std::deque<std::pair<unsigned, uint32_t>> exp_wp;
    uint64_t exp_msg = 0, exp_frag = 0, exp_bad = 0, exp_vpid = 0, exp_dis = 0;
    std::deque<std::pair<uint64_t, unsigned>> exp_cmt;  // (cycle, vpid) of commit reports due
    uint64_t n_cmt = 0;

    // observations
    uint64_t n_msg = 0, n_frag = 0, n_bad = 0, n_vpid = 0, n_dis = 0, n_bp = 0;
    uint64_t in_wait = 0, words_in = 0, pkts_in = 0, n_sw_wr = 0, tlp_mwr32 = 0, tlp_mwr64 = 0;
    std::vector<Tlp> tlps;
    std::vector<uint64_t> tlp_end_cycle;  // cycle the last beat of each TLP was accepted
    std::vector<uint64_t> pkt_end_cycle;  // cycle the last word of each packet was accepted
    bool busy = false, q_busy = false, pkt_ready = false, pkt_valid = false;

    Env() : rng(velo::sim::test_rng()), mem(rng()), sink(pins()) {
        sink.rng = &rng;
        sink.on_tlp = [this](const Tlp& t) { on_tlp(t); };
        drive_fixed();
        h->pkt_valid = 0;
        h->tx_ready = 1;
        h->sw_wr = 0;
        h.reset();
    }

    // ---- configuration (software sets up a mailbox while the vpid is disabled: WP = RP = 0)
    void config(unsigned v, uint64_t base_line, unsigned log2, bool en) {
        tbl[v] = Row{base_line & kBaseMask, en, log2, 0, 0};
        Vp& p = vps[v];
        p.base = (base_line & kBaseMask) * 64;
        p.log2 = log2;
        p.gen_wp = 0;
        p.rd.reset();
        if (en && log2 >= VELO_MBOX_LOG2_MIN && log2 <= VELO_MBOX_LOG2_MAX)
            p.rd = std::make_unique<MailboxReader>(mem, p.base, log2);
    }

    // A software write of one table row (lands at the next clock edge, sw_wr the cycle after).
    void sw_write(unsigned v, std::function<void(Row&)> f) { swq.emplace_back(v, std::move(f)); }

    // Software returns the read pointer of vpid v up to rp (lands at the next clock edge).
    void return_to(unsigned v, uint32_t rp) {
        Vp& p = vps.at(v);
        p.rd->rp_returned = rp;
        sw_write(v, [rp](Row& r) { r.rp = rp & kPtrMask; });
    }

    // ---- traffic
    Fate predict(const std::vector<uint64_t>& w) const {
        uint64_t hd = w[0];
        unsigned area = hdr_area(hd);
        bool bad = PKT_GET(TYPE, hd) != VELO_PKT_TYPE_VELO || area > 64 || w.size() != 1 + area_words(area);
        if (bad) return Fate::Bad;
        if (!enable) return Fate::Disabled;
        const Row& r = tbl[PKT_GET(DST_VPID, hd)];
        if (!r.en || r.log2 < VELO_MBOX_LOG2_MIN || r.log2 > VELO_MBOX_LOG2_MAX) return Fate::Vpid;
        return Fate::Deliver;
    }

    // Queue a packet; its fate is predicted from the table and enable now unless given.
    // A packet ending in kStompMark is sent without the mark and with pkt_bad on its last word.
    Fate send(std::vector<uint64_t> w, int fate = -1) {
        bool stomp = w.size() >= 2 && w.back() == kStompMark;
        if (stomp) w.pop_back();
        Fate f = stomp ? Fate::Bad : fate < 0 ? predict(w) : static_cast<Fate>(fate);
        inq.push_back(w);
        inq_bad.push_back(stomp);
        switch (f) {
            case Fate::Deliver:
                expect_delivery(w);
                break;
            case Fate::Bad:
                ++exp_bad;
                break;
            case Fate::Vpid:
                ++exp_vpid;
                break;
            case Fate::Disabled:
                ++exp_dis;
                break;
        }
        return f;
    }
    size_t queued() const { return inq.size(); }

    // ---- clocking
    void step() {
        // drive
        drive_pkt();
        sink.drive();
        drive_fixed();
        h->sw_wr = sw_wr_q;
        h->sw_wr_vpid = sw_wr_q ? sw_wr_vpid_q : rnd(rng, 256);
        h->tbl_base = tq.base;
        h->tbl_en = tq.en;
        h->tbl_log2 = tq.log2;
        h->tbl_wp = tq.wp;
        h->tbl_rp = tq.rp;
        h.eval();

        // sample: the values just before the clock edge
        const uint64_t cyc = h.cycle();
        if (h->cmt_valid) {
            ++n_cmt;
            if (exp_cmt.empty() || exp_cmt.front().first != cyc || exp_cmt.front().second != h->cmt_vpid)
                err(strf(
                    "cycle %llu: commit report for vpid %u, expected %s", ull(cyc), h->cmt_vpid,
                    exp_cmt.empty()
                        ? "none"
                        : strf("vpid %u in cycle %llu", exp_cmt.front().second, ull(exp_cmt.front().first)).c_str()));
            if (!exp_cmt.empty()) exp_cmt.pop_front();
        } else if (!exp_cmt.empty() && exp_cmt.front().first <= cyc) {
            err(strf("cycle %llu: commit report of vpid %u missing", ull(cyc), exp_cmt.front().second));
            exp_cmt.pop_front();
        }
        pkt_valid = h->pkt_valid;
        pkt_ready = h->pkt_ready;
        const bool fire = h->pkt_valid && h->pkt_ready;
        if (h->pkt_valid && !h->pkt_ready) ++in_wait;
        if (h->tx_valid && h->tx_ready && h->tx_sop) check_raw_hdr();
        sink.sample();
        if (sink.eop_fired) tlp_end_cycle.push_back(cyc);
        n_msg += h->ev_rx_msg;
        n_frag += h->ev_rx_frag;
        n_bad += h->ev_drop_bad;
        n_vpid += h->ev_drop_vpid;
        n_dis += h->ev_drop_disabled;
        n_bp += h->ev_backpressure;
        busy = h->busy;
        q_busy = h->q_busy;

        // the table RAM at the clock edge: read first (old data), then the writes
        if (trace)
            std::printf("[trace] %llu in %d/%d/%d tbl_re %d vpid %u wp_we %d %u=%u sw_wr %d tx %d/%d/%d/%d\n", ull(cyc),
                        h->pkt_valid, h->pkt_ready, h->pkt_last, h->tbl_re, h->tbl_vpid, h->wp_we, h->wp_vpid,
                        h->wp_data, h->sw_wr, h->tx_valid, h->tx_ready, h->tx_sop, h->tx_eop);
        Row next = tq;
        if (h->tbl_re) {
            next = tbl[h->tbl_vpid];
        } else if (garble_tbl && chance(rng, 50)) {
            next = Row{rng() & kBaseMask, (rng() & 1) != 0, rnd(rng, 32), static_cast<uint32_t>(rng() & kPtrMask),
                       static_cast<uint32_t>(rng() & kPtrMask)};
        }
        if (h->wp_we) {
            unsigned v = h->wp_vpid;
            uint32_t d = h->wp_data;
            if (exp_wp.empty())
                err(strf("cycle %llu: unexpected write pointer update vpid %u wp %u", ull(cyc), v, d));
            else if (exp_wp.front() != std::make_pair(v, d))
                err(strf("cycle %llu: write pointer update vpid %u wp %u, expected vpid %u wp %u", ull(cyc), v, d,
                         exp_wp.front().first, exp_wp.front().second));
            if (!exp_wp.empty()) exp_wp.pop_front();
            tbl[v].wp = d;
        }
        sw_wr_q = false;
        if (!swq.empty()) {
            auto op = std::move(swq.front());
            swq.pop_front();
            op.second(tbl[op.first]);
            sw_wr_q = true;
            sw_wr_vpid_q = op.first;
            ++n_sw_wr;
        } else if (noop_sw_pct && chance(rng, noop_sw_pct) && !vps.empty()) {
            auto it = vps.begin();
            std::advance(it, rnd(rng, static_cast<unsigned>(vps.size())));
            sw_wr_q = true;  // e.g. the driver rewrote MB_CFG with the same value
            sw_wr_vpid_q = it->first;
            ++n_sw_wr;
        }
        tq = next;

        h.tick();

        // after the edge
        if (fire) {
            presenting = false;
            ++words_in;
            if (++in_idx == inq.front().size()) {
                inq.pop_front();
                inq_bad.pop_front();
                in_idx = 0;
                ++pkts_in;
                pkt_end_cycle.push_back(cyc);
            }
        }
        mem.step();
        software();
    }

    void run(uint64_t n) {
        for (uint64_t i = 0; i < n; ++i) step();
    }
    bool run_until(const std::function<bool()>& f, uint64_t limit) {
        for (uint64_t i = 0; i < limit; ++i) {
            if (f()) return true;
            step();
        }
        return f();
    }
    // Everything sent has been handled and read (vpids whose software sleeps excepted).
    bool quiet() {
        if (!inq.empty() || !exp_tlp.empty() || !mem.idle() || !swq.empty() || h->busy) return false;
        for (auto& [v, p] : vps) {
            if (p.rd && p.poll_pct && !p.exp.empty()) return false;
            if (p.rd && p.auto_return && (p.ret_pending || p.rd->rp() != p.rd->rp_returned)) return false;
        }
        return true;
    }
    // Why quiet() is false.
    std::string not_quiet() {
        std::string s = strf("queued %zu, DMA writes outstanding %zu, host memory %s, software writes %zu, busy %d",
                             inq.size(), exp_tlp.size(), mem.idle() ? "idle" : "pending", swq.size(), h->busy);
        for (auto& [v, p] : vps)
            if (p.rd && !p.exp.empty())
                s += strf("; vpid %u: %zu entries unread (rp %u, returned %u, table wp %u rp %u, poll %u%%)", v,
                          p.exp.size(), p.rd->rp(), p.rd->rp_returned, tbl[v].wp, tbl[v].rp, p.poll_pct);
        return s;
    }

    // Run until quiet, plus a few cycles for the last counter events.
    bool drain(uint64_t limit = 200000) {
        if (!run_until([this] { return quiet(); }, limit)) return false;
        run(4);
        return quiet();
    }

    // ---- end of test checks
    void check_all() {
        EXPECT_TRUE(errors.empty()) << join(errors);
        EXPECT_TRUE(sink.errors.empty()) << join(sink.errors);
        EXPECT_TRUE(sb.errors.empty()) << join(sb.errors);
        for (auto& [v, p] : vps) {
            if (p.rd) {
                EXPECT_TRUE(p.rd->errors.empty()) << "vpid " << v << join(p.rd->errors);
            }
            EXPECT_TRUE(p.exp.empty()) << "vpid " << v << ": " << p.exp.size() << " entries never arrived";
            EXPECT_EQ(tbl[v].wp, p.gen_wp) << "vpid " << v << " write pointer";
        }
        EXPECT_TRUE(exp_tlp.empty()) << exp_tlp.size() << " DMA writes missing, next " << exp_tlp.front().str();
        EXPECT_TRUE(exp_wp.empty()) << exp_wp.size() << " write pointer updates missing";
        EXPECT_TRUE(exp_cmt.empty()) << exp_cmt.size() << " commit reports missing";
        EXPECT_EQ(n_cmt, exp_msg + exp_frag) << "commit reports (one per entry)";
        EXPECT_EQ(sb.outstanding(), 0u);
        EXPECT_EQ(n_msg, exp_msg) << "ev_rx_msg";
        EXPECT_EQ(n_frag, exp_frag) << "ev_rx_frag";
        EXPECT_EQ(n_bad, exp_bad) << "ev_drop_bad";
        EXPECT_EQ(n_vpid, exp_vpid) << "ev_drop_vpid";
        EXPECT_EQ(n_dis, exp_dis) << "ev_drop_disabled";
        EXPECT_FALSE(h->busy);
    }

  private:
    const bool trace = std::getenv("CPL_TRACE") != nullptr;
    std::deque<std::vector<uint64_t>> inq;
    std::deque<bool> inq_bad;  // the packet arrives marked bad (stomped upstream)
    size_t in_idx = 0;
    bool presenting = false;
    Row tq;  // table read data register
    bool sw_wr_q = false;
    unsigned sw_wr_vpid_q = 0;
    std::deque<std::pair<unsigned, std::function<void(Row&)>>> swq;

    static unsigned long long ull(uint64_t x) { return static_cast<unsigned long long>(x); }
    void err(const std::string& s) {
        if (errors.size() < 200) errors.push_back(s);
    }

    TlpOutPins pins() {
        return TlpOutPins{&h->tx_valid,
                          &h->tx_ready,
                          &h->tx_sop,
                          &h->tx_eop,
                          velo::sim::words(h->tx_hdr),
                          velo::sim::words(h->tx_data)};
    }

    void drive_fixed() {
        h->enable = enable;
        h->req_id = req_id;
        h->q_vpid = q_vpid;
    }

    void drive_pkt() {
        if (!presenting && !inq.empty() && !chance(rng, gap_pct)) presenting = true;
        if (presenting) {
            const auto& w = inq.front();
            h->pkt_valid = 1;
            h->pkt_data = w[in_idx];
            h->pkt_last = in_idx + 1 == w.size();
            h->pkt_bad = h->pkt_last ? inq_bad.front() : (rng() & 1);  // meaningful with last only
        } else {
            h->pkt_valid = 0;
            h->pkt_data = rng();
            h->pkt_last = rng() & 1;
            h->pkt_bad = rng() & 1;
        }
    }

    // Predict the DMA writes, the write pointer update and the entry of a delivered packet.
    void expect_delivery(const std::vector<uint64_t>& w) {
        const uint64_t hd = w[0];
        const unsigned v = PKT_GET(DST_VPID, hd);
        Vp& p = vps.at(v);
        const unsigned area = hdr_area(hd), nw = area_words(area);
        const bool two = area > 56;
        const unsigned lines = two ? 2 : 1;
        const uint32_t size = 1u << p.log2, wp = p.gen_wp;
        const uint64_t mb = (hd & ~0xFFFFull & ~MBOX_PREP(RSVD1, 1)) | MBOX_PREP(LINES, lines);
        auto phase = [&](uint32_t ptr) { return ((ptr >> p.log2) & 1u) ^ 1u; };
        auto addr = [&](uint32_t ptr) { return p.base + 64ull * (ptr & (size - 1)); };
        auto put = [](std::vector<uint8_t>& b, uint64_t x) {
            for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(x >> (8 * i)));
        };
        auto mk = [&](uint64_t a, unsigned len_dw) {
            Tlp t;
            t.fmt_type = a >= k4G ? VELO_TLP_FMT_TYPE_MWR64 : VELO_TLP_FMT_TYPE_MWR32;
            t.len_dw = static_cast<uint16_t>(len_dw);
            t.first_be = 0xF;
            t.last_be = 0xF;
            t.req_id = req_id;
            t.addr = a;
            return t;
        };
        if (two) {  // the second line first: header copy with TAIL, then area bytes 56..63
            Tlp t = mk(addr(wp + 1), 4);
            put(t.payload, mb | MBOX_PREP(PHASE, phase(wp + 1)) | MBOX_PREP(TAIL, 1));
            put(t.payload, w[8]);
            exp_tlp.push_back(std::move(t));
        }
        Tlp t = mk(addr(wp), two ? 16 : 2 * (nw + 1));
        put(t.payload, mb | MBOX_PREP(PHASE, phase(wp)));
        for (unsigned i = 1; i <= std::min(nw, 7u); ++i) put(t.payload, w[i]);
        exp_tlp.push_back(std::move(t));
        p.gen_wp = (wp + lines) & kPtrMask;
        p.lines += lines;
        exp_wp.emplace_back(v, p.gen_wp);
        p.exp.push_back(Entry{mb, area_bytes(w)});
        sb.expect(msg_of(mb, p.exp.back().area));
        ++(PKT_GET(FRAG, hd) ? exp_frag : exp_msg);
    }

    static Msg msg_of(uint64_t hdr, const std::vector<uint8_t>& area) {
        Msg m;
        m.src_node = MBOX_GET(SRC_NODE, hdr);
        m.src_vpid = MBOX_GET(SRC_VPID, hdr);
        m.dst_node = kNode;
        m.dst_vpid = MBOX_GET(DST_VPID, hdr);
        for (int i = 0; i < 8; ++i) m.bytes.push_back(static_cast<uint8_t>(hdr >> (8 * i)));
        m.bytes.insert(m.bytes.end(), area.begin(), area.end());
        return m;
    }

    // The whole sideband header of a first beat against the predicted TLP (reserved fields 0).
    void check_raw_hdr() {
        if (exp_tlp.empty()) return;  // reported by on_tlp
        uint32_t dw[4];
        exp_tlp.front().encode(dw);
        auto got = velo::sim::words(h->tx_hdr);
        int n = exp_tlp.front().is_4dw() ? 4 : 3;
        for (int i = 0; i < n; ++i)
            if (got.w[i] != dw[i])
                err(strf("cycle %llu: TLP header DW%d %08x, expected %08x", ull(h.cycle()), i, got.w[i], dw[i]));
    }

    void on_tlp(const Tlp& t) {
        tlps.push_back(t);
        // the head TLP (not TAIL) is an entry's last: its commit report is due next cycle
        if (t.payload.size() >= 8) {
            uint64_t hd = 0;
            for (int i = 0; i < 8; ++i) hd |= static_cast<uint64_t>(t.payload[static_cast<size_t>(i)]) << (8 * i);
            if (!MBOX_GET(TAIL, hd)) exp_cmt.emplace_back(h.cycle() + 1, MBOX_GET(DST_VPID, hd));
        }
        ++(t.fmt_type == VELO_TLP_FMT_TYPE_MWR64 ? tlp_mwr64 : tlp_mwr32);
        if (exp_tlp.empty()) {
            err(strf("cycle %llu: unexpected DMA write %s", ull(h.cycle()), t.str().c_str()));
        } else {
            const Tlp& x = exp_tlp.front();
            if (t.fmt_type != x.fmt_type || t.len_dw != x.len_dw || t.addr != x.addr || t.first_be != x.first_be ||
                t.last_be != x.last_be || t.req_id != x.req_id) {
                err(strf("cycle %llu: DMA write %s req %04x, expected %s req %04x", ull(h.cycle()), t.str().c_str(),
                         t.req_id, x.str().c_str(), x.req_id));
            } else if (t.payload != x.payload) {
                size_t i = 0;
                while (i < t.payload.size() && t.payload[i] == x.payload[i]) ++i;
                err(strf("cycle %llu: DMA write %s: payload byte %zu is %02x, expected %02x", ull(h.cycle()),
                         t.str().c_str(), i, t.payload[i], x.payload[i]));
            }
            exp_tlp.pop_front();
        }
        mem.post(t);
    }

    void software() {
        for (auto& [v, p] : vps) {
            if (!p.rd) continue;
            bool look = !p.exp.empty() || rnd(rng, 16) == 0;  // now and then look at an idle ring too
            MboxEntry e;
            if (look && chance(rng, p.poll_pct) && p.rd->poll(e)) {
                on_entry(v, p, e);
                p.idle = 0;
            } else {
                ++p.idle;
            }
            if (p.auto_return && !p.ret_pending) {
                uint32_t owed = p.rd->rp() - p.rd->rp_returned;
                if (owed && (owed >= p.batch || p.idle >= p.idle_limit)) return_rp(v, p);
            }
        }
    }

    void return_rp(unsigned v, Vp& p) {
        uint32_t rp = p.rd->rp();
        p.rd->rp_returned = rp;
        p.ret_pending = true;
        p.batch = 1 + rnd(rng, p.batch_max);
        Vp* pp = &p;
        sw_write(v, [rp, pp](Row& r) {
            r.rp = rp & kPtrMask;
            pp->ret_pending = false;
        });
    }

    void on_entry(unsigned v, Vp& p, const MboxEntry& e) {
        ++p.got;
        const uint64_t hd = e.hdr & ~MBOX_PREP(PHASE, 1);
        if (p.exp.empty()) {
            err(strf("vpid %u: unexpected entry hdr %016llx", v, ull(e.hdr)));
            return;
        }
        Entry x = std::move(p.exp.front());
        p.exp.pop_front();
        if (hd != x.hdr)
            err(strf("vpid %u entry %llu: header %016llx, expected %016llx", v, ull(p.got), ull(hd), ull(x.hdr)));
        else if (e.area != x.area)
            err(strf("vpid %u entry %llu: payload area differs (%zu bytes)", v, ull(p.got), x.area.size()));
        sb.deliver(msg_of(hd, e.area));
    }
};

struct ModelNames {
    template <class T>
    static std::string GetName(int) {
        return std::is_same_v<T, Vcpl64> ? "W64" : std::is_same_v<T, Vcpl64p> ? "W64Pipe" : "W128";
    }
};

// Cycles a PIPE = 1 model (the iCE40 board's) may add to a decision the lookup could not hide:
// the lookup starts from the stored header (one cycle after it arrived), the table row and the
// room check are registered before the decision, and the decision waits until the packet is
// stored complete (the cycle after its last word). PIPE: the model's PARAMS (<model>_params.h).
template <class M>
constexpr unsigned kPipe = 4 * velo::sim::ModelParams<M>::PIPE;

template <class M>
class Cpl : public ::testing::Test {};
using Models = ::testing::Types<Vcpl64, Vcpl128, Vcpl64p>;
TYPED_TEST_SUITE(Cpl, Models, ModelNames);

// A good packet of payload area `area` for vpid v.
std::vector<uint64_t> good_pkt(std::mt19937_64& r, unsigned v, unsigned area) {
    HdrArgs a;
    a.dst_vpid = v;
    a.src_node = rnd(r, 256);
    a.src_vpid = rnd(r, 256);
    a.s = shape_for_area(r, area);
    a.vc = rnd(r, 4);  // VC and ROUTE belong to the network
    a.route = rnd(r, 1u << 14);
    return make_words(make_hdr(a), r);
}

// A malformed packet for vpid v (kind 0..7, random kind if < 0).
std::vector<uint64_t> bad_pkt(std::mt19937_64& r, unsigned v, int kind = -1) {
    HdrArgs a;
    a.dst_vpid = v;
    a.src_node = rnd(r, 256);
    a.src_vpid = rnd(r, 256);
    a.s = shape_for_area(r, 1 + rnd(r, 64));
    unsigned nw = area_words(a.s.off % 4 + a.s.len);
    switch (kind < 0 ? static_cast<int>(rnd(r, 8)) : kind) {
        case 0:
            return {make_hdr(a)};  // header only
        case 1:
            return make_words(make_hdr(a), r, 1 + static_cast<int>(rnd(r, 3)));  // too many words
        case 2:
            return make_words(make_hdr(a), r, 12 + static_cast<int>(rnd(r, 20)));  // far too many
        case 3:
            return make_words(make_hdr(a), r, -1 - static_cast<int>(rnd(r, nw)));  // too few
        case 4:                                                                    // wrong type
            a.type = rnd(r, 2) ? 0 : 2 + rnd(r, 14);
            return make_words(make_hdr(a), r);
        case 5: {  // a good packet marked bad upstream (cut-through forwarding, failed CRC)
            auto w = make_words(make_hdr(a), r);
            w.push_back(kStompMark);
            return w;
        }
        case 6: {  // payload area over 64 bytes (FRAG_OFF % 4 + FRAG_LEN > 64): the header lies
            a.s = Shape{64, 1 + rnd(r, 3), 64};
            uint64_t hd = make_hdr(a);
            return make_words(hd, r, 8 - static_cast<int>(area_words(hdr_area(hd))) + static_cast<int>(rnd(r, 2)));
        }
        default:  // a word too few with the last word cut: header claims one more
            a.s = shape_for_area(r, 9 + rnd(r, 56));
            return make_words(make_hdr(a), r, -1);
    }
}

// ------------------------------------------------------------------------------ random traffic

template <class M>
void random_traffic(Env<M>& env, unsigned npkts) {
    auto& r = env.rng;
    env.req_id = static_cast<uint16_t>(r());
    env.noop_sw_pct = 2;
    std::vector<unsigned> ids(256);
    std::iota(ids.begin(), ids.end(), 0u);
    std::shuffle(ids.begin(), ids.end(), r);

    // 20 mailboxes, 2..64 lines, below and above 4 GiB and one across the 4 GiB boundary
    std::vector<unsigned> live;
    uint64_t lo = (0x1000'0000ull >> 6) + rnd(r, 1024), hi = (0x7'4000'0000ull >> 6) + rnd(r, 1024);
    for (unsigned i = 0; i < 20; ++i) {
        unsigned v = ids[i], log2 = 1 + rnd(r, 6), size = 1u << log2;
        uint64_t base;
        if (i == 0) {
            log2 = std::max(log2, 2u);
            size = 1u << log2;
            base = (k4G >> 6) - 1 - rnd(r, size - 1);
        } else if (i % 2) {
            base = hi;
            hi += size + rnd(r, 8);
        } else {
            base = lo;
            lo += size + rnd(r, 8);
        }
        env.config(v, base, log2, true);
        live.push_back(v);
    }
    // vpids whose packets are dropped: disabled, LOG2 0, LOG2 above 16, never configured
    const unsigned dis = ids[20], l0 = ids[21], lbig = ids[22], none = ids[23];
    env.config(dis, 0x100, 3, false);
    env.config(l0, 0x200, 0, true);
    env.config(lbig, 0x300, 17 + rnd(r, 15), true);
    const unsigned dead[] = {dis, l0, lbig, none};
    // hot vpids get more traffic
    std::vector<unsigned> weight(live.size());
    for (auto& w : weight) w = 1 + rnd(r, 4) * rnd(r, 4);
    std::discrete_distribution<unsigned> pick(weight.begin(), weight.end());

    unsigned sent = 0;
    while (sent < npkts) {
        if (sent % 400 == 0) {  // a new phase of link and host behaviour
            const unsigned stall[] = {0, 10, 30, 60}, gaps[] = {0, 0, 20, 50};
            env.sink.stall_pct = static_cast<int>(stall[rnd(r, 4)]);
            env.gap_pct = gaps[rnd(r, 4)];
            env.mem.max_delay = static_cast<int>(rnd(r, 4));
            const bool slow = chance(r, 30);  // now and then all software is slow: back pressure
            for (unsigned v : live) {
                auto& p = env.vps.at(v);
                const unsigned polls[] = {100, 100, 50, 20, 5};
                p.poll_pct = slow ? 1 + rnd(r, 5) : polls[rnd(r, 5)];
                p.batch_max = 1 + rnd(r, 1u << p.log2);
                p.idle_limit = 2 + rnd(r, 40);
            }
        }
        while (env.queued() < 3 && sent < npkts) {
            unsigned k = rnd(r, 100);
            if (k < 4)
                env.send(good_pkt(r, dead[rnd(r, 4)], 1 + rnd(r, 64)));
            else if (k < 10)
                env.send(bad_pkt(r, rnd(r, 2) ? live[pick(r)] : dead[rnd(r, 4)]));
            else {
                auto w = good_pkt(r, live[pick(r)], 1 + rnd(r, 64));
                if (chance(r, 10)) w[0] |= PKT_PREP(RSVD, 1);  // reserved bit: cleared in the mailbox
                env.send(w);
            }
            ++sent;
        }
        env.step();
        ASSERT_LT(env.h.cycle(), 50ull * npkts) << "stuck after " << env.pkts_in << " packets: " << env.not_quiet();
    }
    ASSERT_TRUE(env.drain(400000)) << "traffic did not drain: " << env.not_quiet();
    env.check_all();

    unsigned wrapped = 0;
    for (unsigned v : live) {
        const auto& p = env.vps.at(v);
        if (p.lines >= 8u << p.log2) ++wrapped;
    }
    EXPECT_GE(wrapped, 10u) << "too few rings wrapped many times";
    EXPECT_GT(env.n_bp, 0u) << "no back pressure seen";
    EXPECT_GT(env.tlp_mwr32, 0u);
    EXPECT_GT(env.tlp_mwr64, 0u);
    EXPECT_GT(env.n_sw_wr, 100u);
    std::printf(
        "[ stats ] %llu packets, %llu msgs, %llu frags, drops bad/vpid %llu/%llu, %llu DMA writes "
        "(%llu 4DW), %llu back pressure cycles, %u/%zu rings wrapped >= 8x, %llu cycles\n",
        static_cast<unsigned long long>(env.pkts_in), static_cast<unsigned long long>(env.n_msg),
        static_cast<unsigned long long>(env.n_frag), static_cast<unsigned long long>(env.n_bad),
        static_cast<unsigned long long>(env.n_vpid), static_cast<unsigned long long>(env.tlps.size()),
        static_cast<unsigned long long>(env.tlp_mwr64), static_cast<unsigned long long>(env.n_bp), wrapped, live.size(),
        static_cast<unsigned long long>(env.h.cycle()));
}

TYPED_TEST(Cpl, RandomTraffic) {
    Env<TypeParam> env;
    random_traffic(env, 30000);
}

// ------------------------------------------------------------------------------ directed

// A full mailbox stops the completer (and the input), nothing is dropped or overwritten; once
// software returns space everything arrives in order.
TYPED_TEST(Cpl, FullMailboxBackPressureThenDrain) {
    Env<TypeParam> env;
    auto& r = env.rng;
    const unsigned v = 9;
    env.config(v, 0x0200'0000 >> 6, 2, true);  // 4 lines
    env.q_vpid = v;
    auto& p = env.vps.at(v);
    p.poll_pct = 0;  // software asleep
    p.auto_return = false;
    std::vector<unsigned> lines;
    for (int i = 0; i < 12; ++i) {
        unsigned area = i % 3 == 1 ? 57 + rnd(r, 8) : 1 + rnd(r, 56);
        ASSERT_EQ(env.send(good_pkt(r, v, area)), Fate::Deliver);
        lines.push_back(area > 56 ? 2 : 1);
    }
    unsigned fit = 0, used = 0;
    while (fit < lines.size() && used + lines[fit] <= 4) used += lines[fit++];

    env.run(400);
    EXPECT_EQ(env.exp_wp.size(), lines.size() - fit) << "entries written into a 4-line ring";
    EXPECT_GT(env.n_bp, 300u);
    EXPECT_FALSE(env.pkt_ready) << "input not back-pressured";
    EXPECT_TRUE(env.pkt_valid);
    EXPECT_TRUE(env.busy);
    EXPECT_TRUE(env.q_busy);
    const uint64_t bp0 = env.n_bp, tlps0 = env.tlps.size(), wait0 = env.in_wait;
    env.run(200);
    EXPECT_EQ(env.n_bp - bp0, 200u) << "ev_backpressure must pulse in every waiting cycle";
    EXPECT_EQ(env.in_wait - wait0, 200u);
    EXPECT_EQ(env.tlps.size(), tlps0) << "DMA while the ring is full";
    EXPECT_EQ(env.n_bad + env.n_vpid + env.n_dis, 0u);

    p.poll_pct = 100;  // software wakes up and returns space two lines at a time
    p.auto_return = true;
    p.batch_max = 2;
    ASSERT_TRUE(env.drain());
    EXPECT_EQ(p.got, lines.size());
    EXPECT_FALSE(env.q_busy);
    env.check_all();
}

// The completer waits on a full vpid; software disables that vpid: the waiting packet is dropped
// (ev_drop_vpid), the entries already written stay, and traffic to other vpids continues.
TYPED_TEST(Cpl, DisableWhileWaitingDropsAndOthersContinue) {
    Env<TypeParam> env;
    auto& r = env.rng;
    const unsigned a = 17, b = 200;
    env.config(a, 0x0300'0000 >> 6, 1, true);       // 2 lines
    env.config(b, 0x5'0000'0000ull >> 6, 3, true);  // 8 lines, above 4 GiB
    auto& pa = env.vps.at(a);
    pa.poll_pct = 0;
    pa.auto_return = false;
    env.sink.stall_pct = 20;
    ASSERT_EQ(env.send(good_pkt(r, a, 1 + rnd(r, 56))), Fate::Deliver);
    ASSERT_EQ(env.send(good_pkt(r, a, 1 + rnd(r, 56))), Fate::Deliver);
    env.send(good_pkt(r, a, 1 + rnd(r, 64)), static_cast<int>(Fate::Vpid));  // waits, then dropped
    for (int i = 0; i < 2; ++i) env.send(good_pkt(r, b, 1 + rnd(r, 64)));
    env.send(good_pkt(r, a, 1 + rnd(r, 64)), static_cast<int>(Fate::Vpid));  // arrives after the disable
    for (int i = 0; i < 4; ++i) env.send(good_pkt(r, b, 1 + rnd(r, 64)));

    ASSERT_TRUE(env.run_until([&] { return env.n_bp > 50; }, 2000)) << "the completer never waited";
    EXPECT_EQ(env.vps.at(b).got, 0u) << "a packet overtook the waiting one";
    EXPECT_EQ(env.exp_wp.size(), 6u);
    env.q_vpid = a;
    env.step();
    EXPECT_TRUE(env.q_busy);
    env.q_vpid = b;  // the next packet (for b) is held too
    env.step();
    EXPECT_TRUE(env.q_busy);
    env.q_vpid = 5;
    env.step();
    EXPECT_FALSE(env.q_busy);
    EXPECT_TRUE(env.busy);
    EXPECT_EQ(env.n_vpid, 0u);

    env.sw_write(a, [](typename Env<TypeParam>::Row& row) { row.en = false; });  // MB_CFG.ENABLE = 0
    env.q_vpid = a;
    ASSERT_TRUE(env.drain());
    EXPECT_EQ(env.n_vpid, 2u);
    EXPECT_FALSE(env.q_busy);
    EXPECT_EQ(env.vps.at(b).got, 6u);
    // the two entries written before the disable are intact
    EXPECT_EQ(pa.exp.size(), 2u);
    pa.poll_pct = 100;
    ASSERT_TRUE(env.drain());
    EXPECT_EQ(pa.got, 2u);
    env.check_all();
}

// A two-line entry whose first line is the last line of the ring: the second line wraps to line
// 0 with the next phase and is written first.
TYPED_TEST(Cpl, TwoLineEntryAtLastLineWraps) {
    Env<TypeParam> env;
    auto& r = env.rng;
    env.sink.stall_pct = 25;
    struct Box {
        unsigned v;
        uint64_t base_line;
        unsigned log2;
    };
    const Box boxes[] = {{3, 0x0400'0000 >> 6, 1}, {4, 0x9'8765'4000ull >> 6, 2}, {5, 0x0500'0000 >> 6, 3}};
    for (const auto& bx : boxes) env.config(bx.v, bx.base_line, bx.log2, true);
    unsigned checked = 0;
    for (int round = 0; round < 3; ++round) {
        for (const auto& bx : boxes) {
            auto& p = env.vps.at(bx.v);
            const uint32_t size = 1u << bx.log2;
            for (unsigned area = 57; area <= 64; ++area) {
                while ((p.gen_wp & (size - 1)) != size - 1) env.send(good_pkt(r, bx.v, 1 + rnd(r, 56)));
                const uint32_t wp = p.gen_wp;
                ASSERT_TRUE(env.drain());
                const size_t n0 = env.tlps.size();
                env.send(good_pkt(r, bx.v, area));
                ASSERT_TRUE(env.drain());
                ASSERT_EQ(env.tlps.size(), n0 + 2);
                const Tlp& tail = env.tlps[n0];
                const Tlp& head = env.tlps[n0 + 1];
                const uint64_t base = bx.base_line * 64;
                EXPECT_EQ(tail.addr, base) << "second line goes to line 0";
                EXPECT_EQ(tail.len_dw, 4u);
                EXPECT_EQ(head.addr, base + 64ull * (size - 1));
                EXPECT_EQ(head.len_dw, 16u);
                uint64_t th = 0, hh = 0;
                for (int i = 7; i >= 0; --i) {
                    th = th << 8 | tail.payload[i];
                    hh = hh << 8 | head.payload[i];
                }
                EXPECT_EQ(MBOX_GET(TAIL, th), 1u);
                EXPECT_EQ(MBOX_GET(TAIL, hh), 0u);
                EXPECT_EQ(MBOX_GET(LINES, th), 2u);
                EXPECT_EQ(MBOX_GET(LINES, hh), 2u);
                EXPECT_EQ(MBOX_GET(PHASE, hh), ((wp >> bx.log2) & 1) ^ 1);
                EXPECT_EQ(MBOX_GET(PHASE, th), MBOX_GET(PHASE, hh) ^ 1) << "the wrapped line has the next phase";
                ++checked;
            }
        }
    }
    EXPECT_EQ(checked, 3u * 3u * 8u);
    env.check_all();
}

// DMA write headers: MWr32 below 4 GiB, MWr64 from 4 GiB up (per line, also within one ring),
// LENGTH from the payload area, byte enables F/F, our requester id, everything else 0 (the
// environment compares every header DW with the encoding of the predicted TLP).
TYPED_TEST(Cpl, DmaHeaders) {
    Env<TypeParam> env;
    auto& r = env.rng;
    env.req_id = static_cast<uint16_t>(0x8000 | r());
    const unsigned vlo = 10, vhi = 11, vst = 12;
    env.config(vlo, 0x0123'4540ull >> 6, 4, true);
    env.config(vhi, 0xABC'DEF0'1200ull >> 6, 4, true);
    env.config(vst, (k4G >> 6) - 2, 2, true);  // lines 0, 1 below 4 GiB, lines 2, 3 above
    env.sink.stall_pct = 30;
    std::vector<unsigned> areas;
    for (unsigned area = 1; area <= 64; ++area)
        for (unsigned v : {vlo, vhi, vst}) {
            env.send(good_pkt(r, v, area));
            areas.push_back(area);
            if (env.queued() > 4) env.run_until([&] { return env.queued() <= 2; }, 1000);
        }
    ASSERT_TRUE(env.drain());
    env.check_all();
    size_t k = 0;
    uint64_t st32 = 0, st64 = 0;
    for (unsigned area : areas) {
        auto check = [&](unsigned len) {
            ASSERT_LT(k, env.tlps.size());
            const Tlp& t = env.tlps[k++];
            EXPECT_EQ(t.len_dw, len) << "area " << area;
            EXPECT_EQ(t.first_be, 0xF);
            EXPECT_EQ(t.last_be, 0xF);
            EXPECT_EQ(t.req_id, env.req_id);
            EXPECT_EQ(t.fmt_type, t.addr >= k4G ? VELO_TLP_FMT_TYPE_MWR64 : VELO_TLP_FMT_TYPE_MWR32);
            if (t.addr >= (k4G - 128) && t.addr < k4G + 128) ++(t.addr >= k4G ? st64 : st32);
        };
        if (area > 56) {
            check(4);
            check(16);
        } else {
            check(2 * (area_words(area) + 1));
        }
    }
    EXPECT_EQ(k, env.tlps.size());
    EXPECT_GT(st32, 0u);
    EXPECT_GT(st64, 0u);
    EXPECT_GT(env.tlp_mwr32, 0u);
    EXPECT_GT(env.tlp_mwr64, 0u);
}

// Malformed packets, packets for disabled or misconfigured vpids and packets while the NIC is
// disabled are dropped, each counted once by its reason, with no DMA and no effect on the
// good packets around them.
TYPED_TEST(Cpl, DropsAreCountedOnce) {
    Env<TypeParam> env;
    auto& r = env.rng;
    const unsigned g = 40, dis = 41, l0 = 42, l17 = 43, l31 = 44, none = 45;
    env.config(g, 0x0600'0000 >> 6, 4, true);
    env.config(dis, 0x0700'0000 >> 6, 4, false);
    env.config(l0, 0x0710'0000 >> 6, 0, true);
    env.config(l17, 0x0720'0000 >> 6, 17, true);
    env.config(l31, 0x0730'0000 >> 6, 31, true);
    uint64_t bad = 0, vpid = 0, disabled = 0;
    auto one = [&](const std::vector<uint64_t>& w, Fate want) {
        const uint64_t b0 = env.n_bad, v0 = env.n_vpid, d0 = env.n_dis, t0 = env.tlps.size();
        ASSERT_EQ(env.send(w), want);
        ASSERT_TRUE(env.drain());
        EXPECT_EQ(env.n_bad - b0, want == Fate::Bad ? 1u : 0u) << std::hex << w[0] << " words " << w.size();
        EXPECT_EQ(env.n_vpid - v0, want == Fate::Vpid ? 1u : 0u) << std::hex << w[0];
        EXPECT_EQ(env.n_dis - d0, want == Fate::Disabled ? 1u : 0u) << std::hex << w[0];
        if (want != Fate::Deliver) {
            EXPECT_EQ(env.tlps.size(), t0) << "DMA for a dropped packet";
        }
        bad += want == Fate::Bad;
        vpid += want == Fate::Vpid;
        disabled += want == Fate::Disabled;
    };
    for (int rep = 0; rep < 3; ++rep) {
        env.sink.stall_pct = rep * 20;
        env.gap_pct = rep * 25;
        for (int kind = 0; kind < 8; ++kind) {
            one(bad_pkt(r, g, kind), Fate::Bad);
            one(good_pkt(r, g, 1 + rnd(r, 64)), Fate::Deliver);
        }
        // exactly one too many or one too few words, for every area
        for (unsigned area = 1; area <= 64; area += 7) {
            HdrArgs a;
            a.dst_vpid = g;
            a.s = shape_for_area(r, area);
            one(make_words(make_hdr(a), r, 1), Fate::Bad);
            one(make_words(make_hdr(a), r, -1), Fate::Bad);
        }
        // VC and ROUTE are not ours to check, a set reserved bit is cleared
        HdrArgs a;
        a.dst_vpid = g;
        a.s = shape_for_area(r, 64);
        a.vc = 3;
        a.route = 0x2A5;
        a.rsvd = true;
        one(make_words(make_hdr(a), r), Fate::Deliver);
        for (unsigned v : {dis, l0, l17, l31, none}) {
            one(good_pkt(r, v, 1 + rnd(r, 64)), Fate::Vpid);
            one(good_pkt(r, g, 1 + rnd(r, 64)), Fate::Deliver);
        }
        env.enable = false;  // CONTROL.ENABLE = 0
        one(good_pkt(r, g, 1 + rnd(r, 64)), Fate::Disabled);
        one(good_pkt(r, dis, 1 + rnd(r, 64)), Fate::Disabled);
        env.enable = true;
        one(good_pkt(r, g, 1 + rnd(r, 64)), Fate::Deliver);
    }
    // the same mix back to back, no draining in between
    for (int i = 0; i < 200; ++i) {
        unsigned k = rnd(r, 3);
        if (k == 0)
            env.send(bad_pkt(r, g));
        else if (k == 1)
            env.send(good_pkt(r, rnd(r, 2) ? dis : l17, 1 + rnd(r, 64)));
        else
            env.send(good_pkt(r, g, 1 + rnd(r, 64)));
        if (env.queued() > 3) env.run_until([&] { return env.queued() <= 1; }, 1000);
    }
    ASSERT_TRUE(env.drain());
    EXPECT_GT(bad, 0u);
    EXPECT_GT(vpid, 0u);
    EXPECT_GT(disabled, 0u);
    EXPECT_EQ(env.tbl[dis].wp + env.tbl[l0].wp + env.tbl[l17].wp + env.tbl[l31].wp + env.tbl[none].wp, 0u);
    env.check_all();
}

// Software returns space in a write that lands in the very cycle the completer reads the table
// (the read returns the old pointer, sw_wr comes a cycle later) or a few cycles around it: the
// waiting packet must see the space and go, even though software writes nothing more.
TYPED_TEST(Cpl, ReadPointerReturnRacesLookup) {
    Env<TypeParam> env;
    auto& r = env.rng;
    const unsigned v = 21;
    for (unsigned log2 : {1u, 2u}) {
        env.config(v, (log2 == 1 ? 0x0B00'0000ull : 0x3'0B00'0000ull) >> 6, log2, true);
        auto& p = env.vps.at(v);
        p.auto_return = false;
        const uint32_t size = 1u << log2;
        for (unsigned k = 0; k < 8; ++k) {
            // the ring fills with one-line entries that software reads but does not return yet
            for (uint32_t i = 0; i < size; ++i) env.send(good_pkt(r, v, 1 + rnd(r, 56)));
            ASSERT_TRUE(env.drain(2000)) << env.not_quiet();
            const uint32_t rp0 = p.rd->rp_returned;
            if (log2 == 1) {
                // the lookup of the next packet races the return of the whole ring
                env.send(good_pkt(r, v, 1 + rnd(r, 56)));
                env.run(k);
                env.return_to(v, rp0 + size);
            } else {
                // a two-line entry waits; one line comes back (a re-read, still no room), the rest
                // k cycles later, racing the re-read
                env.send(good_pkt(r, v, 57 + rnd(r, 8)));
                ASSERT_TRUE(env.run_until([&] { return env.n_bp > 0; }, 200));
                env.return_to(v, rp0 + 1);
                env.run(k);
                env.return_to(v, rp0 + size);
            }
            ASSERT_TRUE(env.drain(2000)) << "k " << k << ": " << env.not_quiet();
            env.return_to(v, p.rd->rp());
            ASSERT_TRUE(env.drain(2000));
            env.n_bp = 0;
        }
        env.config(v, 0, 0, false);
    }
    env.check_all();
}

// q_busy reports a held packet for q_vpid until the last beat of its DMA has been accepted.
TYPED_TEST(Cpl, QuiesceBusyUntilDmaLeaves) {
    Env<TypeParam> env;
    auto& r = env.rng;
    const unsigned v = 33;
    env.config(v, 0x0800'0000 >> 6, 3, true);
    for (unsigned area : {8u, 64u, 33u}) {
        env.q_vpid = v;
        env.sink.stall_pct = 100;  // the host does not take DMA writes
        const size_t n0 = env.tlps.size();
        env.send(good_pkt(r, v, area));
        env.run(40);
        EXPECT_TRUE(env.busy);
        EXPECT_TRUE(env.q_busy);
        env.q_vpid = v + 1;
        env.step();
        EXPECT_TRUE(env.busy);
        EXPECT_FALSE(env.q_busy) << "q_busy for another vpid";
        env.q_vpid = v;
        env.step();
        EXPECT_TRUE(env.q_busy);
        env.sink.stall_pct = 50;
        const size_t want = n0 + (area > 56 ? 2 : 1);
        while (env.tlps.size() < want) {
            env.step();
            EXPECT_TRUE(env.q_busy) << "q_busy fell before the DMA left";
            ASSERT_LT(env.h.cycle(), 100000u);
        }
        env.step();
        EXPECT_FALSE(env.q_busy);
        EXPECT_FALSE(env.busy);
        ASSERT_TRUE(env.drain());
    }
    env.check_all();
}

// Latency: table ready, host always ready; from the cycle the last packet word is accepted to
// the cycle the last DMA beat is accepted.
TYPED_TEST(Cpl, Latency) {
    Env<TypeParam> env;
    auto& r = env.rng;
    constexpr unsigned R = Env<TypeParam>::R;
    const unsigned v = 77;
    env.config(v, 0x0900'0000 >> 6, 6, true);
    env.run(10);
    HdrArgs a;
    a.dst_vpid = v;
    a.s = Shape{8, 0, 8};  // an 8-byte message: header word and one payload word
    env.send(make_words(make_hdr(a), r));
    ASSERT_TRUE(env.drain());
    ASSERT_FALSE(env.tlp_end_cycle.empty());
    const uint64_t lat = env.tlp_end_cycle.back() - env.pkt_end_cycle.back();
    std::printf("[ perf  ] TLP_W=%u: 8-byte message, last word in -> last DMA beat out: %llu cycles\n", 64 * R,
                static_cast<unsigned long long>(lat));
    EXPECT_LE(lat, 3u + kPipe<TypeParam>);
    // every area: the lookup is hidden, at most one cycle more than the DMA beats themselves
    for (unsigned area = 1; area <= 64; ++area) {
        env.run(3);
        env.send(good_pkt(r, v, area));
        ASSERT_TRUE(env.drain());
        const uint64_t l = env.tlp_end_cycle.back() - env.pkt_end_cycle.back();
        EXPECT_LE(l, dma_beats(area, R) + 1 + kPipe<TypeParam>) << "area " << area;
    }
    env.check_all();
}

// Throughput: back-to-back packets of one size to one vpid, host always ready: the input waits
// only as long as the DMA needs more beats than the packets have words (the PIPE model up to
// kPipe cycles more per packet: at one word per cycle a short packet's lookup is not hidden; the
// board's 16-bit link delivers a word every 4 cycles at most).
TYPED_TEST(Cpl, Throughput) {
    Env<TypeParam> env;
    auto& r = env.rng;
    constexpr unsigned R = Env<TypeParam>::R;
    const unsigned v = 88;
    env.config(v, 0x0A00'0000 >> 6, 9, true);
    env.vps.at(v).batch_max = 4;
    constexpr unsigned N = 16, kSlack = 4;
    unsigned worst = 0;
    for (unsigned area = 1; area <= 64; ++area) {
        const uint64_t w0 = env.in_wait;
        for (unsigned i = 0; i < N; ++i) env.send(good_pkt(r, v, area));
        ASSERT_TRUE(env.run_until([&] { return env.queued() == 0; }, 10000));
        const unsigned words = 1 + area_words(area), beats = dma_beats(area, R);
        const uint64_t waited = env.in_wait - w0, need = N * (beats > words ? beats - words : 0);
        EXPECT_LE(waited, need + kSlack + N * kPipe<TypeParam>)
            << "area " << area << ": " << words << " words, " << beats << " beats";
        worst = std::max(worst, static_cast<unsigned>(waited > need ? waited - need : 0));
        ASSERT_TRUE(env.drain());
    }
    std::printf(
        "[ perf  ] TLP_W=%u: input waits beyond the DMA's needs, worst over areas: %u cycles per %u "
        "packets\n",
        64 * R, worst, N);
    env.check_all();
}

}  // namespace
