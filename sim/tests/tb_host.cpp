// Host interface: the downstream TLP demultiplexer (routes, drops, events, back pressure) and the
// upstream arbiter (priority, whole-TLP locking, no loss, stable output under back pressure).
#include <array>
#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "Vrx_demux.h"
#include "Vrx_demux_params.h"
#include "Vtx_arb.h"
#include "harness.hpp"
#include "tlp.hpp"
#include "velo/velo_hw.h"

using velo::sim::Harness;
using velo::sim::pct;
using velo::sim::rnd;
using velo::sim::test_rng;
using velo::sim::Tlp;
using velo::sim::words;

namespace {

// One beat of a TLP stream, as it appears on the pins.
struct Beat {
    std::array<uint32_t, 4> hdr{};
    uint8_t bar = 0;
    uint64_t data = 0;
    bool sop = false, eop = false;
    bool operator==(const Beat& o) const {
        return hdr == o.hdr && bar == o.bar && data == o.data && sop == o.sop && eop == o.eop;
    }
};
using Beats = std::vector<Beat>;

std::string str(const Beat& b) {
    char s[160];
    std::snprintf(s, sizeof s, "hdr=%08x.%08x.%08x.%08x bar=%u data=%016llx sop=%d eop=%d", b.hdr[3], b.hdr[2],
                  b.hdr[1], b.hdr[0], b.bar, static_cast<unsigned long long>(b.data), b.sop, b.eop);
    return s;
}

// A TLP cut into 64-bit beats: header on every beat, payload from lane 0; at least one beat.
Beats to_beats(const Tlp& t) {
    Beats v;
    uint32_t dw[4];
    t.encode(dw);
    size_t n = std::max<size_t>(1, (t.payload.size() + 7) / 8);
    for (size_t i = 0; i < n; ++i) {
        Beat b;
        for (int k = 0; k < 4; ++k) b.hdr[static_cast<size_t>(k)] = dw[k];
        b.bar = t.bar;
        for (size_t j = 0; j < 8; ++j) {
            size_t o = i * 8 + j;
            if (o < t.payload.size()) b.data |= static_cast<uint64_t>(t.payload[o]) << (8 * j);
        }
        b.sop = i == 0;
        b.eop = i == n - 1;
        v.push_back(b);
    }
    return v;
}

// A random TLP of any kind the host might send (or a broken link partner might): memory reads and
// writes on any BAR, I/O and configuration requests, messages and stray completions.
Tlp random_tlp(std::mt19937_64& rng) {
    static const uint8_t kinds[] = {VELO_TLP_FMT_TYPE_MWR32, VELO_TLP_FMT_TYPE_MWR64, VELO_TLP_FMT_TYPE_MWR32,
                                    VELO_TLP_FMT_TYPE_MWR64, VELO_TLP_FMT_TYPE_MRD32, VELO_TLP_FMT_TYPE_MRD64,
                                    0x01 /* MRdLk */,        0x02 /* IORd */,         0x42 /* IOWr */,
                                    0x04 /* CfgRd0 */,       0x44 /* CfgWr0 */,       0x05 /* CfgRd1 */,
                                    0x30 /* Msg */,          0x34 /* Msg */,          0x70 /* MsgD */,
                                    VELO_TLP_FMT_TYPE_CPL,   VELO_TLP_FMT_TYPE_CPLD,  0x4B /* CplDLk */};
    static const uint8_t bars[] = {0, 2, 0, 2, 1, 3, 4, 5, 6, 7};
    Tlp t;
    t.fmt_type = kinds[rnd(rng, sizeof kinds)];
    t.bar = bars[rnd(rng, sizeof bars)];
    if (pct(rng, 30)) {  // plenty of send-window writes, the bulk of real traffic
        t.fmt_type = pct(rng, 50) ? VELO_TLP_FMT_TYPE_MWR32 : VELO_TLP_FMT_TYPE_MWR64;
        t.bar = VELO_BAR_SEND;
    }
    t.tag = static_cast<uint8_t>(rng());
    t.req_id = static_cast<uint16_t>(rng());
    t.addr = (rng() & 0xFFFFFFFFFFFCull);
    if (!t.is_4dw()) t.addr &= 0xFFFFFFFCull;
    bool data = (t.fmt_type & 0x40) != 0;
    t.len_dw = static_cast<uint16_t>(data ? 1 + rnd(rng, pct(rng, 70) ? 4 : 24) : 1 + rnd(rng, 16));
    t.first_be = 0xF;
    t.last_be = t.len_dw > 1 ? 0xF : 0;
    if (data) {
        t.payload.resize(t.len_dw * 4u);
        for (auto& b : t.payload) b = static_cast<uint8_t>(rng());
    }
    if (t.is_cpl()) {
        t.cpl_id = static_cast<uint16_t>(rng());
        t.byte_count = static_cast<uint16_t>(t.len_dw * 4);
    }
    return t;
}

enum Route { DROP, REQ, REG };

Route route_of(const Tlp& t) {
    const bool mwr = t.is_mwr();
    if (mwr) return t.bar == VELO_BAR_SEND ? REQ : t.bar == VELO_BAR_REGS ? REG : DROP;
    const bool msg = (t.fmt_type & 0x18) == 0x10;
    if (msg || t.is_cpl() || t.fmt_type == 0x4B || t.fmt_type == 0x0B) return DROP;
    return REG;
}

// Beats into a stream; the valid/ready rules are kept (a beat, once offered, stays until taken).
class BeatSource {
  public:
    std::deque<Beats> q;
    int gap_pct = 0;
    bool mid_gaps = true;
    void next(std::mt19937_64& rng) {
        if (offering_ || q.empty()) return;
        bool gap = (beat_ == 0 || mid_gaps) && pct(rng, gap_pct);
        if (!gap) offering_ = true;
    }
    bool valid() const { return offering_; }
    const Beat& beat() const { return q.front()[beat_]; }
    bool at_sop() const { return !q.empty() && beat_ == 0; }
    // the offered beat was taken; returns true at the end of a TLP
    bool taken() {
        offering_ = false;
        if (++beat_ == q.front().size()) {
            beat_ = 0;
            q.pop_front();
            return true;
        }
        return false;
    }
    size_t beat_idx() const { return beat_; }

  private:
    bool offering_ = false;
    size_t beat_ = 0;
};

void set_hdr(VlWide<4>& w, const std::array<uint32_t, 4>& h) {
    for (int i = 0; i < 4; ++i) w[static_cast<size_t>(i)] = h[static_cast<size_t>(i)];
}
std::array<uint32_t, 4> get_hdr(const VlWide<4>& w) {
    return {w[0], w[1], w[2], w[3]};
}

// ------------------------------------------------------------------------------ demux bench
// tb_host_pipe: the demultiplexer built with PIPE = 1 (the iCE40 board's): a first beat waits one
// cycle on the input (no unit sees it, in_ready low) while its route is registered
constexpr bool kPipe = velo::sim::ModelParams<Vrx_demux>::PIPE != 0;

struct DemuxBench {
    Harness<Vrx_demux> h;
    BeatSource src;
    struct Meta {
        Route r;
        bool mwr;
    };
    std::deque<Meta> meta;  // routes of the TLPs in src, in order
    std::deque<Beat> exp_req, exp_reg;
    int req_stall = 0, reg_stall = 0;
    uint64_t ev_bad_bar = 0, ev_unsup = 0;
    uint64_t exp_bad_bar = 0, exp_unsup = 0;
    uint64_t req_tlps = 0, reg_tlps = 0, dropped = 0;
    bool pending_ev_bad_bar = false, pending_ev_unsup = false;
    bool decided = false;  // PIPE: the first beat on the input was there last cycle (its route is known)
    uint64_t waits = 0;    // PIPE: cycles a first beat waited for its route

    DemuxBench() {
        h->in_valid = 0;
        h->req_ready = 0;
        h->reg_ready = 0;
        h.reset();
    }
    void push(const Tlp& t) {
        Beats b = to_beats(t);
        Route r = route_of(t);
        src.q.push_back(b);
        meta.push_back(Meta{r, t.is_mwr()});
        if (t.is_mwr() && r == DROP) ++exp_bad_bar;
        if (r == DROP && !t.is_mwr()) ++exp_unsup;
    }
    // one cycle; failed checks are fatal
    void cycle(std::mt19937_64& rng) {
        src.next(rng);
        const bool v = src.valid();
        Beat b = v ? src.beat() : Beat{};
        h->in_valid = v;
        h->in_sop = b.sop;
        h->in_eop = b.eop;
        set_hdr(h->in_hdr, b.hdr);
        h->in_bar = b.bar;
        h->in_data = b.data;
        h->req_ready = !pct(rng, req_stall);
        h->reg_ready = !pct(rng, reg_stall);
        h.eval();
        // the events of the TLP taken last cycle
        if (h->ev_bad_bar) ++ev_bad_bar;
        if (h->ev_unsupported) ++ev_unsup;
        ASSERT_EQ(static_cast<bool>(h->ev_bad_bar), pending_ev_bad_bar) << "ev_bad_bar one cycle after the TLP";
        ASSERT_EQ(static_cast<bool>(h->ev_unsupported), pending_ev_unsup) << "ev_unsupported one cycle after";
        pending_ev_bad_bar = pending_ev_unsup = false;
        const bool first = v && b.sop;
        if (kPipe && first && !decided) {
            ASSERT_FALSE(h->req_valid) << "req_valid before the route is registered";
            ASSERT_FALSE(h->reg_valid) << "reg_valid before the route is registered";
            ASSERT_FALSE(h->in_ready) << "first beat taken before its route is registered";
            ++waits;
        } else if (v) {
            const Route r = meta.front().r;
            ASSERT_EQ(static_cast<bool>(h->req_valid), r == REQ) << "req_valid, route " << r << ", " << str(b);
            ASSERT_EQ(static_cast<bool>(h->reg_valid), r == REG) << "reg_valid, route " << r << ", " << str(b);
            const bool want_ready = r == REQ ? h->req_ready : r == REG ? h->reg_ready : true;
            ASSERT_EQ(static_cast<bool>(h->in_ready), want_ready) << "in_ready follows the routed port, route " << r;
            // the ports carry the beat through unchanged
            Beat ob;
            if (r == REQ) {
                ob.hdr = get_hdr(h->req_hdr);
                ob.data = h->req_data;
                ob.sop = h->req_sop;
                ob.eop = h->req_eop;
                ob.bar = b.bar;
            } else if (r == REG) {
                ob.hdr = get_hdr(h->reg_hdr);
                ob.data = h->reg_data;
                ob.sop = h->reg_sop;
                ob.eop = h->reg_eop;
                ob.bar = h->reg_bar;
            }
            if (r != DROP) {
                ASSERT_TRUE(ob == b) << "beat changed on the way: " << str(ob) << " vs " << str(b);
            }
            if (h->in_ready) {
                if (r == REQ) exp_req.push_back(b);
                if (r == REG) exp_reg.push_back(b);
                if (b.sop) {
                    pending_ev_bad_bar = r == DROP && meta.front().mwr;
                    pending_ev_unsup = r == DROP && !meta.front().mwr;
                }
                if (src.taken()) {
                    if (r == REQ) ++req_tlps;
                    if (r == REG) ++reg_tlps;
                    if (r == DROP) ++dropped;
                    meta.pop_front();
                }
            }
        } else {
            ASSERT_FALSE(h->req_valid);
            ASSERT_FALSE(h->reg_valid);
        }
        // what the ports took this cycle, against what was routed to them
        if (h->req_valid && h->req_ready) {
            ASSERT_FALSE(exp_req.empty());
            exp_req.pop_front();
        }
        if (h->reg_valid && h->reg_ready) {
            ASSERT_FALSE(exp_reg.empty());
            exp_reg.pop_front();
        }
        ASSERT_TRUE(exp_req.empty() && exp_reg.empty()) << "a beat was taken from the input but not by its port";
        decided = kPipe && first && !h->in_ready;
        h.tick();
    }
    void run(std::mt19937_64& rng, uint64_t max_cycles) {
        uint64_t c = 0;
        while (!src.q.empty()) {
            ASSERT_LT(c++, max_cycles) << "demux hangs";
            cycle(rng);
            if (::testing::Test::HasFatalFailure()) return;
        }
        h->in_valid = 0;
        for (int i = 0; i < 2; ++i) {
            cycle(rng);
            if (::testing::Test::HasFatalFailure()) return;
        }
    }
};

}  // namespace

TEST(RxDemux, DirectedRoutes) {
    auto rng = test_rng();
    DemuxBench b;
    struct Case {
        uint8_t ft;
        uint8_t bar;
        unsigned len;
        Route r;
        const char* what;
    };
    const Case cases[] = {
        {VELO_TLP_FMT_TYPE_MWR32, 2, 8, REQ, "MWr BAR2"},
        {VELO_TLP_FMT_TYPE_MWR64, 2, 1, REQ, "MWr64 BAR2"},
        {VELO_TLP_FMT_TYPE_MWR32, 0, 1, REG, "MWr BAR0"},
        {VELO_TLP_FMT_TYPE_MWR64, 0, 2, REG, "MWr64 BAR0"},
        {VELO_TLP_FMT_TYPE_MWR32, 4, 4, DROP, "MWr BAR4"},
        {VELO_TLP_FMT_TYPE_MWR32, 1, 1, DROP, "MWr BAR1"},
        {VELO_TLP_FMT_TYPE_MRD32, 0, 1, REG, "MRd BAR0"},
        {VELO_TLP_FMT_TYPE_MRD32, 2, 1, REG, "MRd BAR2"},
        {VELO_TLP_FMT_TYPE_MRD64, 5, 4, REG, "MRd64 BAR5"},
        {0x02, 0, 1, REG, "IORd"},
        {0x42, 3, 1, REG, "IOWr"},
        {0x04, 0, 1, REG, "CfgRd0"},
        {0x44, 0, 1, REG, "CfgWr0"},
        {0x30, 0, 1, DROP, "Msg"},
        {0x70, 0, 6, DROP, "MsgD 3 beats"},
        {VELO_TLP_FMT_TYPE_CPL, 0, 1, DROP, "Cpl"},
        {VELO_TLP_FMT_TYPE_CPLD, 0, 5, DROP, "CplD 3 beats"},
        {VELO_TLP_FMT_TYPE_MWR32, 2, 16, REQ, "MWr BAR2 8 beats"},
        {VELO_TLP_FMT_TYPE_MWR32, 0, 6, REG, "MWr BAR0 3 beats"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.what);
        Tlp t;
        t.fmt_type = c.ft;
        t.bar = c.bar;
        t.len_dw = static_cast<uint16_t>(c.len);
        t.addr = 0x1000;
        t.tag = 7;
        if (c.ft & 0x40) {
            t.payload.resize(c.len * 4);
            for (auto& x : t.payload) x = static_cast<uint8_t>(rng());
        }
        ASSERT_EQ(route_of(t), c.r);
        const uint64_t rq = b.req_tlps, rg = b.reg_tlps, dr = b.dropped, bb = b.ev_bad_bar, un = b.ev_unsup;
        b.push(t);
        b.run(rng, 100);
        if (HasFatalFailure()) return;
        EXPECT_EQ(b.req_tlps - rq, c.r == REQ ? 1u : 0u);
        EXPECT_EQ(b.reg_tlps - rg, c.r == REG ? 1u : 0u);
        EXPECT_EQ(b.dropped - dr, c.r == DROP ? 1u : 0u);
        const bool bad_bar = c.r == DROP && t.is_mwr();
        EXPECT_EQ(b.ev_bad_bar - bb, bad_bar ? 1u : 0u);
        EXPECT_EQ(b.ev_unsup - un, c.r == DROP && !bad_bar ? 1u : 0u);
    }
}

TEST(RxDemux, BackPressurePerPort) {
    // a stalled port holds the input; the other port's ready does not matter; drops never stall
    auto rng = test_rng();
    DemuxBench b;
    Tlp w2 = Tlp::mwr(0x2000, std::vector<uint8_t>(24, 0x11), 2);  // 3 beats to req
    Tlp w0 = Tlp::mwr(0x40, std::vector<uint8_t>(8, 0x22), 0);     // 1 beat to reg
    b.push(w2);
    b.push(w0);
    // req stalled, reg ready: nothing moves
    for (int i = 0; i < 5; ++i) {
        b.src.next(rng);
        b.h->in_valid = 1;
        Beat x = b.src.beat();
        b.h->in_sop = x.sop;
        b.h->in_eop = x.eop;
        set_hdr(b.h->in_hdr, x.hdr);
        b.h->in_bar = x.bar;
        b.h->in_data = x.data;
        b.h->req_ready = 0;
        b.h->reg_ready = 1;
        b.h.eval();
        EXPECT_EQ(static_cast<bool>(b.h->req_valid), !(kPipe && i == 0));  // PIPE: the route is registered first
        EXPECT_FALSE(b.h->reg_valid);
        EXPECT_FALSE(b.h->in_ready);
        b.h.tick();
    }
    b.decided = kPipe;  // the first beat has been on the input (the bench's cycle() did not see it)
    // then everything goes, with the routed port stalling at random
    b.req_stall = 60;
    b.reg_stall = 60;
    b.run(rng, 200);
    EXPECT_EQ(b.req_tlps, 1u);
    EXPECT_EQ(b.reg_tlps, 1u);
    // a dropped TLP never waits, whatever the ports do
    Tlp bad = Tlp::mwr(0x40, std::vector<uint8_t>(32, 0x33), 4);  // 4 beats, dropped
    b.push(bad);
    for (int i = 0; i < 4 + (kPipe ? 1 : 0); ++i) {
        b.src.next(rng);
        Beat x = b.src.beat();
        b.h->in_valid = 1;
        b.h->in_sop = x.sop;
        b.h->in_eop = x.eop;
        set_hdr(b.h->in_hdr, x.hdr);
        b.h->in_bar = x.bar;
        b.h->in_data = x.data;
        b.h->req_ready = 0;
        b.h->reg_ready = 0;
        b.h.eval();
        EXPECT_FALSE(b.h->req_valid || b.h->reg_valid);
        if (kPipe && i == 0) {  // PIPE: the first beat waits for its route
            EXPECT_FALSE(b.h->in_ready);
        } else {
            EXPECT_TRUE(b.h->in_ready);
            b.src.taken();
        }
        b.h.tick();
    }
    EXPECT_TRUE(b.src.q.empty());
}

TEST(RxDemux, RandomTraffic) {
    auto rng = test_rng();
    DemuxBench b;
    const int phases[][3] = {{0, 0, 0}, {30, 0, 0}, {0, 50, 0}, {0, 0, 50}, {20, 40, 40}, {50, 80, 10}, {10, 10, 80}};
    for (auto& p : phases) {
        SCOPED_TRACE(testing::Message() << "gaps " << p[0] << "% req stalls " << p[1] << "% reg stalls " << p[2]);
        b.src.gap_pct = p[0];
        b.req_stall = p[1];
        b.reg_stall = p[2];
        for (int i = 0; i < 30000; ++i) b.push(random_tlp(rng));
        b.run(rng, 1000000);
        if (HasFatalFailure()) return;
    }
    EXPECT_EQ(b.ev_bad_bar, b.exp_bad_bar);
    EXPECT_EQ(b.ev_unsup, b.exp_unsup);
    // PIPE: every TLP's first beat waited exactly one cycle for its route
    EXPECT_EQ(b.waits, kPipe ? b.req_tlps + b.reg_tlps + b.dropped : 0u);
    EXPECT_GT(b.req_tlps, 1000u);
    EXPECT_GT(b.reg_tlps, 1000u);
    EXPECT_GT(b.dropped, 1000u);
    std::printf("[ info  ] req %llu reg %llu dropped %llu (bad bar %llu, unsupported %llu)\n",
                static_cast<unsigned long long>(b.req_tlps), static_cast<unsigned long long>(b.reg_tlps),
                static_cast<unsigned long long>(b.dropped), static_cast<unsigned long long>(b.ev_bad_bar),
                static_cast<unsigned long long>(b.ev_unsup));
}

// ------------------------------------------------------------------------------ tx arbiter
namespace {

// TLPs tagged with their source and sequence number in every beat, so the output tells where
// each beat came from.
Beats arb_tlp(int src, uint32_t seq, int nbeats) {
    Beats v;
    for (int i = 0; i < nbeats; ++i) {
        Beat b;
        b.hdr = {0x4A000000u | static_cast<uint32_t>(nbeats), static_cast<uint32_t>(src), seq, 0xC0FFEE00u ^ seq};
        b.data = (static_cast<uint64_t>(src) << 63) | (static_cast<uint64_t>(seq) << 16) | static_cast<uint64_t>(i);
        b.sop = i == 0;
        b.eop = i == nbeats - 1;
        v.push_back(b);
    }
    return v;
}

struct ArbBench {
    Harness<Vtx_arb> h;
    BeatSource a, b;
    int out_stall = 0;
    std::deque<Beats> exp_a, exp_b;  // what each source sent, in order
    int cur_src = -1;                // source of the TLP under way on the output
    size_t cur_beat = 0;
    uint64_t tlps_a = 0, tlps_b = 0, both_start = 0;
    bool prev_stalled = false;
    Beat prev_beat;

    ArbBench() {
        h->a_valid = 0;
        h->b_valid = 0;
        h->out_ready = 0;
        h.reset();
    }
    static void drive(const BeatSource& s, uint8_t& valid, uint8_t& sop, uint8_t& eop, VlWide<4>& hdr, uint64_t& data) {
        Beat x = s.valid() ? s.beat() : Beat{};
        valid = s.valid();
        sop = x.sop;
        eop = x.eop;
        set_hdr(hdr, x.hdr);
        data = x.data;
    }
    void cycle(std::mt19937_64& rng) {
        a.next(rng);
        b.next(rng);
        drive(a, h->a_valid, h->a_sop, h->a_eop, h->a_hdr, h->a_data);
        drive(b, h->b_valid, h->b_sop, h->b_eop, h->b_hdr, h->b_data);
        h->out_ready = !pct(rng, out_stall);
        h.eval();
        ASSERT_FALSE(h->a_ready && h->b_ready) << "both sources selected";
        Beat o;
        o.hdr = get_hdr(h->out_hdr);
        o.data = h->out_data;
        o.sop = h->out_sop;
        o.eop = h->out_eop;
        // a beat offered and not taken stays, unchanged (valid/ready rules on the host stream)
        if (prev_stalled) {
            ASSERT_TRUE(h->out_valid) << "out_valid dropped while stalled";
            ASSERT_TRUE(o == prev_beat) << "output changed while stalled: " << str(o) << " was " << str(prev_beat);
        }
        const bool a_start = a.valid() && a.beat().sop, b_start = b.valid() && b.beat().sop;
        if (cur_src < 0 && !prev_stalled && a_start) {
            // nothing under way and nothing promised: port a wins, also when b starts together
            if (b_start) ++both_start;
            ASSERT_TRUE(h->out_valid && h->out_sop && h->out_data == a.beat().data) << "port a must have priority";
        }
        if (h->out_valid) {
            const bool from_a = h->out_data >> 63 == 0;
            BeatSource& s = from_a ? a : b;
            ASSERT_TRUE(s.valid()) << "output valid without a valid source";
            ASSERT_TRUE(o == s.beat()) << "output beat is not the source's beat";
            if (cur_src >= 0) {
                ASSERT_EQ(from_a ? 0 : 1, cur_src) << "beats of two TLPs interleaved";
            } else {
                ASSERT_TRUE(o.sop) << "TLP starts without sop";
            }
            ASSERT_EQ(static_cast<bool>(from_a ? h->a_ready : h->b_ready), static_cast<bool>(h->out_ready));
            ASSERT_FALSE(from_a ? h->b_ready : h->a_ready);
            if (h->out_ready) {
                auto& e = from_a ? exp_a : exp_b;
                ASSERT_FALSE(e.empty());
                ASSERT_TRUE(e.front()[cur_beat] == o) << "lost or reordered beat: " << str(o);
                ++cur_beat;
                cur_src = from_a ? 0 : 1;
                if (s.taken()) {
                    ASSERT_EQ(cur_beat, e.front().size());
                    e.pop_front();
                    (from_a ? tlps_a : tlps_b)++;
                    cur_src = -1;
                    cur_beat = 0;
                }
            }
        } else {
            ASSERT_FALSE(h->a_ready && a.valid());
            ASSERT_FALSE(h->b_ready && b.valid());
        }
        prev_stalled = h->out_valid && !h->out_ready;
        prev_beat = o;
        h.tick();
    }
};

}  // namespace

TEST(TxArb, PriorityAndLocking) {
    auto rng = test_rng();
    ArbBench t;
    // both start together: a first, b's whole TLP after a's whole TLP; then b, locked, while a
    // arrives in the middle of it
    t.a.q.push_back(arb_tlp(0, 1, 3));
    t.exp_a.push_back(t.a.q.back());
    t.b.q.push_back(arb_tlp(1, 1, 2));
    t.exp_b.push_back(t.b.q.back());
    std::vector<int> order;
    for (int c = 0; c < 20; ++c) {
        if (c == 6) {
            t.a.q.push_back(arb_tlp(0, 2, 2));
            t.exp_a.push_back(t.a.q.back());
        }
        const uint64_t na = t.tlps_a, nb = t.tlps_b;
        t.cycle(rng);
        if (HasFatalFailure()) return;
        if (t.tlps_a != na) order.push_back(0);
        if (t.tlps_b != nb) order.push_back(1);
    }
    EXPECT_EQ(order, (std::vector<int>{0, 1, 0}));
    // b locked: a becomes valid while b's TLP is half way; b finishes first
    ArbBench u;
    u.b.q.push_back(arb_tlp(1, 5, 4));
    u.exp_b.push_back(u.b.q.back());
    u.cycle(rng);
    u.cycle(rng);
    u.a.q.push_back(arb_tlp(0, 6, 1));
    u.exp_a.push_back(u.a.q.back());
    for (int c = 0; c < 10; ++c) u.cycle(rng);
    EXPECT_EQ(u.tlps_a, 1u);
    EXPECT_EQ(u.tlps_b, 1u);
}

TEST(TxArb, RandomTraffic) {
    auto rng = test_rng();
    ArbBench t;
    const int phases[][3] = {{0, 0, 0}, {0, 0, 50}, {30, 30, 0}, {50, 10, 30}, {10, 50, 70}, {70, 70, 20}};
    uint32_t seq_a = 0, seq_b = 0;
    for (auto& p : phases) {
        SCOPED_TRACE(testing::Message() << "a gaps " << p[0] << "% b gaps " << p[1] << "% out stalls " << p[2]);
        t.a.gap_pct = p[0];
        t.b.gap_pct = p[1];
        t.out_stall = p[2];
        for (int i = 0; i < 20000; ++i) {
            t.a.q.push_back(arb_tlp(0, seq_a++, 1 + rnd(rng, pct(rng, 50) ? 2 : 9)));
            t.exp_a.push_back(t.a.q.back());
            t.b.q.push_back(arb_tlp(1, seq_b++, 1 + rnd(rng, 3)));
            t.exp_b.push_back(t.b.q.back());
        }
        for (uint64_t c = 0; !(t.a.q.empty() && t.b.q.empty()); ++c) {
            ASSERT_LT(c, 1000000u) << "arbiter hangs";
            t.cycle(rng);
            if (HasFatalFailure()) return;
        }
        EXPECT_TRUE(t.exp_a.empty());
        EXPECT_TRUE(t.exp_b.empty());
    }
    EXPECT_EQ(t.tlps_a, seq_a);
    EXPECT_EQ(t.tlps_b, seq_b);
    EXPECT_GT(t.both_start, 100u) << "simultaneous starts exercised";
}
