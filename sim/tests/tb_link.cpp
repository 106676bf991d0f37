// Link layer bench (velo_link, LINK_W 16, 32 and 64): two links back to back through the channel
// model, one channel per direction. Built twice: tb_link with MAX_AREA 64 (the NIC without RMA:
// VELO messages and RMA packets of up to 64 bytes of payload area) and tb_link256 with MAX_AREA
// 256 (the NIC with RMA: its VC_DEPTH and REPLAY_DEPTH per width, credit units of 4, 2 and 1
// flits). On each side a packet source (random legal packets, mixed: VELO packets framed by
// PKT_HDR FRAG_LEN_M1 (TYPE 0 or 1, up to 64 bytes) and RMA packets framed by RMA_PKT_HDR LEN_M1
// (TYPE 2..5, up to MAX_AREA bytes), random VC, random payload; it starts a packet only on
// tx_start_ok[vc] and leaves random gaps mid-packet) and a sink modelling the switch input buffers (VC_DEPTH flits per
// VC, overflow asserted, drained at a random rate with rx_free pulses). The scoreboard of each
// direction asserts that every packet is delivered exactly once, byte-exact, in order (go-back-N
// keeps the order of the whole link, not only per VC), on its header's VC; packets delivered bad
// are discarded by the sink, and every packet the source stomped (tx_bad) must be seen bad once in
// its place. A side can be reset alone (a node reboots): the packets in flight then may be lost
// (never duplicated or reordered), the rest must arrive. Every cycle the bench also checks that
// neither replay buffer holds more than REPLAY_DEPTH flits (no unacknowledged flit overwritten);
// fault tests end by checking that the credits settled back exactly (S = T = F per VC). Faults:
// bit errors, lost flits, a link going down, tampered control symbols, resets of one side, and
// directed single-bit errors, lost flits and corrupted length fields at every position of a packet.
//
//   SEED=<n> replays a run; WAVES=1 dumps <test>_a.fst and <test>_b.fst (one per link);
//   LINKDBG=<n> prints what both links drive for the first n cycles of every pair.
#include <verilated.h>
#include <verilated_fst_c.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#if VELO_LINK_PIPE
#include "Vlink16p.h"
#include "Vlink16p___024root.h"
#include "Vlink16p_params.h"
#elif VELO_LINK_AREA == 256
#include "Vlink16r.h"
#include "Vlink16r___024root.h"
#include "Vlink16r_params.h"
#include "Vlink32r.h"
#include "Vlink32r___024root.h"
#include "Vlink32r_params.h"
#include "Vlink64r.h"
#include "Vlink64r___024root.h"
#include "Vlink64r_params.h"
#else
#include "Vlink16.h"
#include "Vlink16___024root.h"
#include "Vlink16_params.h"
#include "Vlink32.h"
#include "Vlink32___024root.h"
#include "Vlink32_params.h"
#include "Vlink64.h"
#include "Vlink64___024root.h"
#include "Vlink64_params.h"
#endif
#include "channel.hpp"
#include "harness.hpp"
#include "velo/velo_hw.h"

using velo::sim::Channel;
using velo::sim::ChannelConfig;
using velo::sim::pct;
using velo::sim::rnd;
using velo::sim::test_name;
using velo::sim::test_rng;
using velo::sim::Words;
using velo::sim::words;

namespace {

constexpr unsigned kLatency = 2;  // channel latency of the benches

constexpr unsigned log2u(unsigned x) {
    return x <= 1 ? 0 : 1 + log2u(x / 2);
}

// ------------------------------------------------------------------------------ flits
struct Flit {
    uint64_t lo = 0, hi = 0;  // bit i of the {sync, data} flit is bit i of {hi, lo}
};

template <class T>
Flit read_flit(T& port) {
    Words w = words(port);
    return Flit{w.get64(0), w.n > 2 ? w.get64(1) : 0};
}
template <class T>
void write_flit(T& port, const Flit& f) {
    Words w = words(port);
    w.set64(0, f.lo);
    if (w.n > 2) w.set64(1, f.hi);
}

// A model: velo_link with the PARAMS of sim/cmake/link.cmake (<model>_params.h): LINK_W = LW,
// MAX_AREA = AREA, VC_DEPTH = VCD, REPLAY_DEPTH = RD, and PIPE = kPipe (1, the iCE40 board's: one
// cycle more in the receiver and in the transmitter's cut-through); the timing the tests rely on
// (NVC, DOWN_TIMEOUT, REPLAY_TIMEOUT, ACK_URGENT) too.
template <class M>
struct Cfg {
    using Model = M;
    using P = velo::sim::ModelParams<M>;
    static constexpr int LW = P::LINK_W, AREA = P::MAX_AREA;
    static constexpr unsigned VCD = P::VC_DEPTH, RD = P::REPLAY_DEPTH, kPipe = P::PIPE;
    static constexpr int W = LW;
    static constexpr int H = 64 / LW;               // header flits
    static constexpr int FB = LW / 8;               // bytes per flit
    static constexpr int A = AREA;                  // largest payload area (RMA packets)
    static constexpr int MAXP = H + AREA * 8 / LW;  // longest packet in data flits
    static constexpr int M64 = H + 512 / LW;        // a 64-byte message in data flits
    static constexpr unsigned kVcDepth = VCD;
    static constexpr unsigned kReplayDepth = RD;
    static constexpr unsigned kNvc = P::NVC, kAckUrgent = P::ACK_URGENT;
    static constexpr uint64_t kDownTimeout = P::DOWN_TIMEOUT, kReplayTimeout = P::REPLAY_TIMEOUT;
    // velo_link's credit unit (2^CUB flits) and velo_link_tx's internal credit counter width
    static constexpr unsigned CUB = VCD + MAXP <= 127 ? 0 : VCD + MAXP + 1 <= 254 ? 1 : VCD + MAXP + 3 <= 508 ? 2 : 3;
    static constexpr unsigned kCreditBits = log2u(RD) + 2 > 9 + CUB ? log2u(RD) + 2 : 9 + CUB;
    static constexpr uint64_t MASK = LW == 64 ? ~0ull : ((1ull << LW) - 1);
    static unsigned sync(const Flit& f) { return LW == 64 ? static_cast<unsigned>(f.hi & 3) : (f.lo >> LW) & 3; }
    static uint64_t data(const Flit& f) { return f.lo & MASK; }
    static Flit make(unsigned sync, uint64_t data) {
        return LW == 64 ? Flit{data, sync} : Flit{(data & MASK) | (static_cast<uint64_t>(sync) << LW), 0};
    }
    // flip bit b (0 .. W+1) of a flit
    static void flip(Flit& f, int b) {
        if (b < 64)
            f.lo ^= 1ull << b;
        else
            f.hi ^= 1ull << (b - 64);
    }
    static int data_flits(unsigned len) { return H + static_cast<int>((len + FB - 1) / FB); }
};

// ------------------------------------------------------------------------------ packets
struct Pkt {
    uint64_t id = 0;
    unsigned vc = 0;
    unsigned len = 1;             // payload area bytes
    bool rma = false;             // an RMA packet (TYPE >= 2, framed by LEN_M1), else VELO
    bool stomp = false;           // the source raises tx_bad with tx_last
    bool bad = false;             // delivered bad (stomped, or malformed by the source)
    std::vector<uint64_t> flits;  // data flits as delivered (the header's length)
    std::vector<uint64_t> send;   // flits the source presents, if not flits (malformed packets)
    bool lossable = false;        // in flight when a side was reset: may be lost, never duplicated
    size_t stall_at = 0;          // the source stalls before presenting this flit ...
    unsigned stall_for = 0;       // ... for this many cycles (0: no stall)
};

// The payload area a header announces, as the link frames it: TYPE >= 2 (RMA_PKT_HDR): LEN_M1 + 1;
// else (PKT_HDR): FRAG_OFF % 4 + FRAG_LEN_M1 + 1.
unsigned area_of(uint64_t h) {
    if (((h >> VELO_PKT_HDR_TYPE_SHIFT) & 0xF) >= 2)
        return static_cast<unsigned>((h >> VELO_RMA_PKT_HDR_LEN_M1_SHIFT) & 0xFF) + 1;
    return static_cast<unsigned>(((h >> VELO_PKT_HDR_FRAG_OFF_SHIFT) & 3) +
                                 ((h >> VELO_PKT_HDR_FRAG_LEN_M1_SHIFT) & 0x3F)) +
           1;
}
// The header with its length field cleared (what the link does to a header announcing too much).
uint64_t len_cleared(uint64_t h) {
    if (((h >> VELO_PKT_HDR_TYPE_SHIFT) & 0xF) >= 2) return h & ~(0xFFull << VELO_RMA_PKT_HDR_LEN_M1_SHIFT);
    return h & ~(0x3Full << VELO_PKT_HDR_FRAG_LEN_M1_SHIFT);
}
template <class C>
uint64_t hdr_of(const std::vector<uint64_t>& f) {
    uint64_t h = 0;
    for (int i = 0; i < C::H && i < static_cast<int>(f.size()); ++i) h |= f[static_cast<size_t>(i)] << (i * C::W);
    return h;
}
template <class C>
void put_hdr(std::vector<uint64_t>& f, uint64_t h) {
    for (int i = 0; i < C::H; ++i) f[static_cast<size_t>(i)] = (h >> (i * C::W)) & C::MASK;
}

// A packet of `len` bytes of payload area. VELO (rma = false): PKT_HDR with TYPE 0 or 1,
// FRAG_LEN_M1 = len - 1 and FRAG_OFF % 4 = `pad` (len > pad; the other header bits random, FRAG
// and RSVD too: the link ignores them). RMA: RMA_PKT_HDR with TYPE 2..5 and LEN_M1 = len - 1 (its
// ZERO bits random: the link frames TYPE >= 2 by LEN_M1 alone).
template <class C>
Pkt make_pkt(std::mt19937_64& r, uint64_t id, unsigned len, unsigned vc, bool stomp, bool rma = false,
             unsigned pad = 0) {
    Pkt p;
    p.id = id;
    p.vc = vc;
    p.len = len;
    p.rma = rma;
    p.stomp = stomp;
    p.bad = stomp;
    uint64_t h = r();
    h = (h & ~0x3ull) | vc;
    h &= ~(0xFull << VELO_PKT_HDR_TYPE_SHIFT);
    if (rma) {
        h |= static_cast<uint64_t>(2 + rnd(r, 4)) << VELO_PKT_HDR_TYPE_SHIFT;
        h = (h & ~(0xFFull << VELO_RMA_PKT_HDR_LEN_M1_SHIFT)) |
            (static_cast<uint64_t>(len - 1) << VELO_RMA_PKT_HDR_LEN_M1_SHIFT);
    } else {
        h |= (r() & 1) << VELO_PKT_HDR_TYPE_SHIFT;
        h = (h & ~(0x3Full << VELO_PKT_HDR_FRAG_LEN_M1_SHIFT)) |
            (static_cast<uint64_t>(len - 1 - pad) << VELO_PKT_HDR_FRAG_LEN_M1_SHIFT);
        // FRAG_OFF % 4 pad bytes lengthen the payload area (tb_system and tb_net send byte-offset
        // fragments through the links; here only the directed length tests use them)
        h = (h & ~(0x3ull << VELO_PKT_HDR_FRAG_OFF_SHIFT)) |
            (static_cast<uint64_t>(pad) << VELO_PKT_HDR_FRAG_OFF_SHIFT);
    }
    EXPECT_EQ(area_of(h), len);
    for (int i = 0; i < C::H; ++i) p.flits.push_back((h >> (i * C::W)) & C::MASK);
    // payload flits: random bytes, the unused bytes of the last flit random too (they travel)
    for (int i = C::H; i < C::data_flits(len); ++i) p.flits.push_back(r() & C::MASK);
    return p;
}

// Deterministic contents for directed tests (the results do not depend on SEED).
template <class C>
Pkt fixed_pkt(uint64_t id, unsigned len, unsigned vc, bool rma = false, unsigned pad = 0) {
    std::mt19937_64 r(0x5EED0000 + id * 7919 + len);
    return make_pkt<C>(r, id, len, vc, false, rma, pad);
}

// A packet whose header announces more payload area than its type allows, as a receiver upstream
// forwards a misframed header and the switch passes it on cut at MAX_PKT_FLITS: a VELO header
// announcing 65..67 bytes (FRAG_OFF % 4 = 1..3 with FRAG_LEN_M1 = 63), or (MAX_AREA < 256) an RMA
// header with LEN_M1 >= MAX_AREA. The source presents `n` flits (random, at least up to the
// header). The link clears the length field, so it delivers the header and the area the cleared
// header announces (FRAG_OFF % 4 + 1 or 1 bytes; zero fillers if the source ended earlier), bad.
template <class C>
Pkt overlong_pkt(std::mt19937_64& r, uint64_t id, unsigned vc) {
    const bool rma = C::A < 256 && pct(r, 50);
    Pkt p = make_pkt<C>(r, id, rma ? static_cast<unsigned>(C::A) : 64u, vc, pct(r, 50), rma);
    uint64_t h = hdr_of<C>(p.flits);
    if (rma)
        h = (h & ~(0xFFull << VELO_RMA_PKT_HDR_LEN_M1_SHIFT)) |
            (static_cast<uint64_t>(C::A + rnd(r, 256 - C::A)) << VELO_RMA_PKT_HDR_LEN_M1_SHIFT);
    else
        h |= static_cast<uint64_t>(1 + rnd(r, 3)) << VELO_PKT_HDR_FRAG_OFF_SHIFT;
    const size_t n = static_cast<size_t>(C::H + rnd(r, C::MAXP + 3 - C::H));  // header .. MAXF + 2
    p.send.clear();
    for (int i = 0; i < C::H; ++i) p.send.push_back((h >> (i * C::W)) & C::MASK);
    while (p.send.size() < n) p.send.push_back(r() & C::MASK);
    h = len_cleared(h);
    p.flits.clear();
    for (int i = 0; i < C::H; ++i) p.flits.push_back((h >> (i * C::W)) & C::MASK);
    const size_t len = static_cast<size_t>(C::data_flits(area_of(h)));
    for (size_t i = p.flits.size(); i < len; ++i) p.flits.push_back(i < p.send.size() ? p.send[i] : 0);
    p.bad = true;
    return p;
}

struct TrafficCfg {
    unsigned min_len = 1, max_len = 64;  // VELO packets
    int rma_pct = 30;                    // RMA packets, 1 .. MAX_AREA bytes
    unsigned vcs = 0;                    // VCs used (0 .. vcs-1); Pair sets the model's NVC
    int stomp_pct = 0;
    int gap_pct = 0;      // the source leaves a gap before a flit
    int drain_pct = 100;  // the sink frees a flit of each non-empty VC per cycle
};

// ------------------------------------------------------------------------------ one link model
template <class M>
class Side {
  public:
    explicit Side(const std::string& tag) : ctx_(new VerilatedContext) {
        const char* w = std::getenv("WAVES");
        const bool waves = w && std::atoi(w) != 0;
        if (waves) ctx_->traceEverOn(true);
        m_.reset(new M{ctx_.get(), ("link_" + tag).c_str()});
        if (waves) {
            fst_.reset(new VerilatedFstC);
            m_->trace(fst_.get(), 99);
            std::string f = test_name() + "_" + tag + ".fst";
            fst_->open(f.c_str());
            std::printf("[ waves ] %s\n", f.c_str());
        }
        m_->clk = 0;
        m_->rst = 1;
        m_->eval();
    }
    ~Side() {
        m_->final();
        if (fst_) fst_->close();
    }
    Side(const Side&) = delete;
    Side& operator=(const Side&) = delete;
    M& m() { return *m_; }
    void tick(uint64_t cyc) {
        m_->clk = 1;
        m_->eval();
        if (fst_) fst_->dump(2 * cyc + 1);
        m_->clk = 0;
        m_->eval();
        if (fst_) fst_->dump(2 * cyc + 2);
    }

  private:
    std::unique_ptr<VerilatedContext> ctx_;
    std::unique_ptr<M> m_;
    std::unique_ptr<VerilatedFstC> fst_;
};

struct Events {
    uint64_t crc_err = 0, nack = 0, replay = 0, stomp = 0, link_down = 0, ctl_drop = 0, rx_pkt = 0;
};

// Delivery record of one direction.
struct Scoreboard {
    std::deque<Pkt*> expect;  // packets taken by the link (from their first flit on), in order
    uint64_t good = 0, bad = 0, bad_matched = 0;
    uint64_t lost = 0;                            // lossable packets skipped (a side was reset)
    std::vector<std::vector<uint64_t>> bad_seen;  // the flits of every packet delivered bad
    bool strict = false;                          // no faults: every bad delivery must be the next stomped packet
};

template <class C>
class Pair {
  public:
    using M = typename C::Model;

    Pair(std::mt19937_64& r, const ChannelConfig& ch) : rng_(r), a_("a"), b_("b") {
        ChannelConfig c = ch;
        c.width = C::W + 2;
        c.latency = ch.latency;
        c.seed = ch.seed;
        ch_[0].reset(new Channel(c));  // a -> b
        c.seed = ch.seed * 31 + 17;
        ch_[1].reset(new Channel(c));  // b -> a
        for (TrafficCfg& t : traffic) t.vcs = C::kNvc;
    }

    // ---- configuration
    TrafficCfg traffic[2];  // per direction (0: a -> b, sending side a)
    bool rst[2] = {true, true};
    // Called with every flit arriving at a receiver (dir 0: arriving at b), may change it.
    std::function<void(int dir, Flit& f)> tamper;
    // Called with every flit a transmitter drives (dir 0: a's phy_tx).
    std::function<void(int dir, const Flit& f)> on_wire;

    M& side(int s) { return s == 0 ? a_.m() : b_.m(); }
    Channel& channel(int dir) { return *ch_[dir]; }
    uint64_t cycle() const { return cyc_; }
    const Events& ev(int s) const { return ev_[s]; }
    Scoreboard& sb(int dir) { return sb_[dir]; }
    bool up(int s) { return side(s).link_up; }
    uint64_t start_wait(int dir) const { return start_wait_[dir]; }
    uint64_t downs(int s) const { return downs_[s]; }        // link-up -> down transitions seen
    unsigned max_used(int s) const { return max_used_[s]; }  // most flits the replay buffer held
    // packets discarded by an epoch: ev_link_down pulses that were not link-down events
    uint64_t discards(int s) const { return ev_[s].link_down - downs_[s]; }

    // The credits of side s's transmitter settled: S = T = F for every VC (nothing in flight,
    // nothing leaked or invented by an error episode). Call when idle and drained.
    ::testing::AssertionResult credits_settled(int s) {
        auto* r = side(s).rootp;
        const uint64_t m = (1ull << C::kCreditBits) - 1;
        for (unsigned v = 0; v < C::kNvc; ++v) {
            const uint64_t sc = (r->velo_link__DOT__u_tx__DOT__scnt >> (v * C::kCreditBits)) & m;
            const uint64_t tc = (r->velo_link__DOT__u_tx__DOT__tcnt >> (v * C::kCreditBits)) & m;
            const uint64_t fc = (r->velo_link__DOT__u_tx__DOT__fcnt >> (v * C::kCreditBits)) & m;
            if (sc != fc || tc != fc)
                return ::testing::AssertionFailure()
                       << "side " << s << " VC " << v << ": S " << sc << " T " << tc << " F " << fc;
        }
        return ::testing::AssertionSuccess();
    }
    // Side s's transmitter: credits of VC v in use, S - F (flits).
    uint64_t credits_in_use(int s, unsigned v) {
        auto* r = side(s).rootp;
        const uint64_t m = (1ull << C::kCreditBits) - 1;
        const uint64_t sc = (r->velo_link__DOT__u_tx__DOT__scnt >> (v * C::kCreditBits)) & m;
        const uint64_t fc = (r->velo_link__DOT__u_tx__DOT__fcnt >> (v * C::kCreditBits)) & m;
        return (sc - fc) & m;
    }
    // Side s's replay buffer is empty: everything it took was acknowledged.
    bool acked(int s) {
        auto* r = side(s).rootp;
        return r->velo_link__DOT__u_tx__DOT__wr_ptr == r->velo_link__DOT__u_tx__DOT__tail;
    }
    // Run idle (nothing queued) until both replay buffers are empty and the credits of both sides
    // settled (a stomped packet delivered bad by a CRC error is then replayed and counted too);
    // asserts within limit.
    void settle(uint64_t limit = 5000) {
        for (uint64_t i = 0; i < limit && !(acked(0) && acked(1) && credits_settled(0) && credits_settled(1)); ++i)
            step();
        EXPECT_TRUE(acked(0) && acked(1)) << "packets left unacknowledged";
        EXPECT_TRUE(credits_settled(0));
        EXPECT_TRUE(credits_settled(1));
    }

    // Queue packets in direction dir.
    void add(int dir, const Pkt& p) { queue_[dir].push_back(p); }
    void add_random(int dir, unsigned n) {
        const TrafficCfg& t = traffic[dir];
        for (unsigned i = 0; i < n; ++i) {
            const bool rma = pct(rng_, t.rma_pct);
            const unsigned len =
                rma ? 1 + static_cast<unsigned>(rnd(rng_, C::A))
                    : t.min_len + static_cast<unsigned>(rnd(rng_, static_cast<int>(t.max_len - t.min_len + 1)));
            add(dir, make_pkt<C>(rng_, next_id_++, len, static_cast<unsigned>(rnd(rng_, static_cast<int>(t.vcs))),
                                 pct(rng_, t.stomp_pct), rma));
        }
    }
    size_t queued(int dir) const { return queue_[dir].size() + (src_[dir].active ? 1 : 0); }
    uint64_t stomped_sent(int dir) const { return stomped_sent_[dir]; }

    // Everything sent was delivered (and nothing is left to send).
    bool done() const {
        for (int d = 0; d < 2; ++d)
            if (queued(d) || !sb_[d].expect.empty()) return false;
        return true;
    }

    void step() {
        for (int s = 0; s < 2; ++s)
            if (rst[s] && !rst_q_[s]) on_reset(s);
        for (int s = 0; s < 2; ++s) {
            M& m = side(s);
            const int in_dir = 1 - s;  // the direction arriving at side s
            Flit f{ch_[in_dir]->out(), ch_[in_dir]->out_hi()};
            if (tamper && !rst[s]) tamper(in_dir, f);
            write_flit(m.phy_rx, f);
            m.rst = rst[s];
            drive_source(s);
            drive_sink(s);
        }
        a_.m().eval();
        b_.m().eval();
        for (int s = 0; s < 2; ++s) {
            M& m = side(s);
            check_replay_buffer(s);
            if (up_q_[s] && !m.link_up) ++downs_[s];
            if (!up_q_[s] && m.link_up) need_up_[s] = false;
            up_q_[s] = m.link_up;
            rst_q_[s] = rst[s];
            sample_source(s);
            sample_sink(s);
            Events& e = ev_[s];
            e.crc_err += m.ev_crc_err;
            e.nack += m.ev_nack;
            e.replay += m.ev_replay;
            e.stomp += m.ev_stomp;
            e.link_down += m.ev_link_down;
            e.ctl_drop += m.ev_ctl_drop;
            e.rx_pkt += m.ev_rx_pkt;
            Flit f = read_flit(m.phy_tx);
            if (dbg_ && cyc_ < dbg_) {
                char b[64];
                if (C::sync(f) == 1)
                    std::snprintf(b, sizeof b, "D:%04llx", (unsigned long long)C::data(f));
                else if (C::sync(f) == 2) {
                    unsigned t = (C::data(f) >> 14) & 3, sub = (C::data(f) >> 12) & 3, v = (C::data(f) >> 5) & 127;
                    const char* nm[4][4] = {{"TS1", "TS2", "NACK", "REPLAY"},
                                            {"ACK", "ACK", "ACK", "ACK"},
                                            {"CRED", "CRED", "CRED", "CRED"},
                                            {"SYNC", "SYNC", "SYNC", "SYNC"}};
                    std::snprintf(b, sizeof b, "%s(%u,%u)", nm[t][sub], sub, v);
                } else
                    std::snprintf(b, sizeof b, "--");
                std::printf("DBG %llu %c tx=%-14s rxv=%d%s%s crc=%d nack=%d rep=%d rdy=%d\n", (unsigned long long)cyc_,
                            s ? 'B' : 'A', b, (int)m.rx_valid, m.rx_last ? "L" : "", m.rx_bad ? "X" : "",
                            (int)m.ev_crc_err, (int)m.ev_nack, (int)m.ev_replay, (int)m.tx_ready);
            }
            if (on_wire) on_wire(s, f);
            ch_[s]->in(f.lo, f.hi);
        }
        a_.tick(cyc_);
        b_.tick(cyc_);
        ch_[0]->tick();
        ch_[1]->tick();
        ++cyc_;
    }

    void run(uint64_t n) {
        for (uint64_t i = 0; i < n; ++i) step();
    }

    // Release both resets and wait for the link (asserts it comes up).
    void bring_up(uint64_t limit = 2000) {
        rst[0] = rst[1] = false;
        for (uint64_t i = 0; i < limit && !(up(0) && up(1) && start_ok_all()); ++i) step();
        ASSERT_TRUE(up(0) && up(1)) << "link did not come up";
    }
    bool start_ok_all() { return side(0).tx_start_ok != 0 && side(1).tx_start_ok != 0; }

    // Run until everything queued is delivered; asserts within limit cycles.
    void run_until_done(uint64_t limit) {
        const uint64_t start = cyc_;
        while (!done()) {
            ASSERT_LT(cyc_ - start, limit)
                << "not done: dir 0 " << queued(0) << " queued, " << sb_[0].expect.size() << " in flight; dir 1 "
                << queued(1) << " queued, " << sb_[1].expect.size() << " in flight";
            step();
            if (::testing::Test::HasFatalFailure()) return;
        }
    }

    uint64_t next_id() { return next_id_++; }

  private:
    struct Src {
        bool active = false;
        Pkt cur;
        size_t idx = 0;      // next flit to present
        size_t n = 0;        // flits the source sends (header length + cut)
        bool valid = false;  // tx_valid this cycle
        unsigned stall = 0;  // cycles of the packet's stall left
    };
    struct Snk {
        unsigned occ[C::kNvc] = {};
        std::vector<uint64_t> flits;
        unsigned vc = 0;
        uint8_t freed = 0;
    };

    // Side s enters reset (its node reboots): its switch forgets the packet it was sending and
    // everything in its buffers; every packet in flight either way may now be lost.
    void on_reset(int s) {
        src_[s].active = false;
        src_[s].valid = false;
        snk_[s] = Snk{};
        for (int d = 0; d < 2; ++d)
            for (Pkt* p : sb_[d].expect) p->lossable = true;
        // ... and so may every packet taken until both ends came up again (the survivor sends into
        // the dead link until it notices; its replay buffer is discarded at the epoch)
        need_up_[0] = need_up_[1] = true;
    }

    // No unacknowledged flit is ever overwritten: the replay buffer never holds more than its
    // depth from the oldest unacknowledged flit (tail) or from the flit being read (rd).
    void check_replay_buffer(int s) {
        if (rst[s]) return;
        auto* r = side(s).rootp;
        const unsigned mask = 2 * C::kReplayDepth - 1;
        const unsigned wr = r->velo_link__DOT__u_tx__DOT__wr_ptr;
        const unsigned used_t = (wr - r->velo_link__DOT__u_tx__DOT__tail) & mask;
        const unsigned used_r = (wr - r->velo_link__DOT__u_tx__DOT__rd_ptr) & mask;
        max_used_[s] = std::max(max_used_[s], used_t);
        ASSERT_LE(used_t, C::kReplayDepth) << "side " << s << ": replay buffer overwritten (from tail), cycle " << cyc_;
        ASSERT_LE(used_r, C::kReplayDepth) << "side " << s << ": replay buffer overwritten (from rd), cycle " << cyc_;
    }

    void drive_source(int s) {
        M& m = side(s);
        Src& src = src_[s];
        const TrafficCfg& t = traffic[s];
        if (!src.active && !queue_[s].empty() && !rst[s]) {
            const Pkt& p = queue_[s].front();
            if ((m.tx_start_ok >> p.vc) & 1) {
                src.active = true;
                src.cur = p;
                queue_[s].pop_front();
                src.idx = 0;
                src.n = (p.send.empty() ? p.flits : p.send).size();
                src.valid = false;
                src.stall = p.stall_for;
            } else {
                ++start_wait_[s];
            }
        }
        if (src.active && !src.valid && src.stall > 0 && src.idx == src.cur.stall_at && src.idx > 0)
            --src.stall;
        else if (src.active && !src.valid)
            src.valid = src.idx == 0 || !pct(rng_, t.gap_pct);
        m.tx_valid = src.active && src.valid;
        if (m.tx_valid && src.idx == 0 && first_valid_[s] == 0) first_valid_[s] = cyc_;
        if (m.tx_valid) {
            const bool last = src.idx + 1 == src.n;
            const uint64_t d = (src.cur.send.empty() ? src.cur.flits : src.cur.send)[src.idx];
            m.tx_data = static_cast<std::remove_reference_t<decltype(m.tx_data)>>(d);
            m.tx_last = last;
            m.tx_bad = last && src.cur.stomp;
        } else {
            m.tx_data = 0;
            m.tx_last = 0;
            m.tx_bad = 0;
        }
    }

    void sample_source(int s) {
        M& m = side(s);
        Src& src = src_[s];
        if (!(m.tx_valid && m.tx_ready)) return;
        if (src.idx == 0) {
            // expected from the first flit on (an overlong packet is delivered before the
            // source has presented its last flit)
            if (first_taken_[s] == 0) first_taken_[s] = cyc_ + 1;
            keep_[s].push_back(src.cur);
            Pkt* p = &keep_[s].back();
            p->lossable = need_up_[0] || need_up_[1];
            sb_[s].expect.push_back(p);
            if (p->bad) ++stomped_sent_[s];
        }
        ++src.idx;
        src.valid = false;
        if (src.idx == src.n) src.active = false;
    }

    void drive_sink(int s) {
        M& m = side(s);
        Snk& k = snk_[s];
        const int dir = 1 - s;
        k.freed = 0;
        if (!rst[s])
            for (unsigned v = 0; v < C::kNvc; ++v)
                if (k.occ[v] > 0 && pct(rng_, traffic[dir].drain_pct)) {
                    k.freed |= static_cast<uint8_t>(1u << v);
                    --k.occ[v];
                }
        m.rx_free = k.freed;
    }

    void sample_sink(int s) {
        M& m = side(s);
        Snk& k = snk_[s];
        const int dir = 1 - s;
        if (rst[s] || !m.rx_valid) return;
        const unsigned vc = m.rx_vc;
        ASSERT_LT(vc, C::kNvc);
        ++k.occ[vc];
        ASSERT_LE(k.occ[vc], C::kVcDepth) << "switch input buffer of VC " << vc << " overflows (side " << s << ")";
        if (k.flits.empty())
            k.vc = vc;
        else
            ASSERT_EQ(vc, k.vc) << "rx_vc changed inside a packet";
        k.flits.push_back(static_cast<uint64_t>(m.rx_data));
        ASSERT_LE(k.flits.size(), static_cast<size_t>(C::MAXP + 1)) << "packet longer than any packet";
        if (!m.rx_last) return;
        deliver(dir, k.flits, k.vc, m.rx_bad);
        k.flits.clear();
    }

    void deliver(int dir, const std::vector<uint64_t>& flits, unsigned vc, bool bad) {
        Scoreboard& sb = sb_[dir];
        if (bad) {
            ++sb.bad;
            sb.bad_seen.push_back(flits);
            // the next expected packet, stomped at the source, seen bad in its place?
            if (!sb.expect.empty()) {
                const Pkt* p = sb.expect.front();
                if (p->bad && flits == p->flits && vc == p->vc) {
                    sb.expect.pop_front();
                    ++sb.bad_matched;
                    return;
                }
            }
            if (sb.strict) {
                std::string got, want;
                for (auto x : flits) got += " " + std::to_string(x);
                if (!sb.expect.empty())
                    for (auto x : sb.expect.front()->flits) want += " " + std::to_string(x);
                FAIL() << "dir " << dir << ": a bad packet that is not the next stomped one: got" << got << " vc " << vc
                       << "; next expected" << want;
            }
            return;
        }
        // packets in flight when a side was reset may be missing (never duplicated or reordered)
        while (sb.expect.size() > 1 && sb.expect.front()->lossable &&
               !(sb.expect.front()->flits == flits && sb.expect.front()->vc == vc)) {
            sb.expect.pop_front();
            ++sb.lost;
        }
        ASSERT_FALSE(sb.expect.empty()) << "dir " << dir << ": a good packet nobody sent (duplicate?)";
        const Pkt* p = sb.expect.front();
        if (!(flits == p->flits && vc == p->vc)) {
            std::string where = "not queued";
            for (size_t i = 0; i < sb.expect.size(); ++i)
                if (sb.expect[i]->flits == flits)
                    where = "queued at " + std::to_string(i) + " (packet " + std::to_string(sb.expect[i]->id) + ")";
            for (const Pkt& k : keep_[dir])
                if (k.flits == flits && where == "not queued")
                    where = "delivered before (packet " + std::to_string(k.id) + ")";
            ADD_FAILURE() << "cycle " << cyc_ << " dir " << dir << ": got a packet " << where << ", expected packet "
                          << p->id << (p->lossable ? " (lossable)" : "");
        }
        ASSERT_FALSE(p->bad) << "dir " << dir << ": packet " << p->id
                             << " (stomped at the source) was skipped or delivered good";
        ASSERT_EQ(vc, p->vc) << "dir " << dir << ": packet " << p->id << " on the wrong VC";
        ASSERT_EQ(flits.size(), p->flits.size()) << "dir " << dir << ": packet " << p->id << " length";
        for (size_t i = 0; i < flits.size(); ++i)
            ASSERT_EQ(flits[i], p->flits[i]) << "dir " << dir << ": packet " << p->id << " flit " << i;
        sb.expect.pop_front();
        ++sb.good;
    }

    std::mt19937_64& rng_;
    Side<M> a_, b_;
    std::unique_ptr<Channel> ch_[2];
    uint64_t cyc_ = 0;
    uint64_t dbg_ = std::getenv("LINKDBG") ? std::strtoull(std::getenv("LINKDBG"), nullptr, 0) : 0;
    uint64_t next_id_ = 1;
    std::deque<Pkt> queue_[2];
    std::deque<Pkt> keep_[2];  // taken packets (the scoreboard points here)
    Src src_[2];
    Snk snk_[2];
    Scoreboard sb_[2];
    Events ev_[2];
    uint64_t stomped_sent_[2] = {0, 0};
    uint64_t start_wait_[2] = {0, 0};
    bool rst_q_[2] = {true, true};
    bool up_q_[2] = {false, false};
    uint64_t downs_[2] = {0, 0};
    unsigned max_used_[2] = {0, 0};
    bool need_up_[2] = {false, false};  // a side was reset: side s has not come up since

  public:
    uint64_t first_taken_[2] = {0, 0};  // cycle after the first flit was taken (per source side)
    uint64_t first_valid_[2] = {0, 0};  // cycle the first flit was presented
};

template <class T>
class Link : public ::testing::Test {};
#if VELO_LINK_PIPE
// the iCE40 board's link: PIPE = 1, MAX_AREA 64, VC_DEPTH 64, REPLAY_DEPTH 256
using AllWidths = ::testing::Types<Cfg<Vlink16p>>;
#elif VELO_LINK_AREA == 256
// velo_nic's defaults with RMA (MAX_AREA 256): VC_DEPTH 192 / 128 / 88, REPLAY_DEPTH 512 / 256 / 256
using AllWidths = ::testing::Types<Cfg<Vlink16r>, Cfg<Vlink32r>, Cfg<Vlink64r>>;
#else
using AllWidths = ::testing::Types<Cfg<Vlink16>, Cfg<Vlink32>, Cfg<Vlink64>>;
#endif
struct WidthName {
    template <class T>
    static std::string GetName(int) {
        return "W" + std::to_string(T::W);
    }
};
TYPED_TEST_SUITE(Link, AllWidths, WidthName);

ChannelConfig clean_channel(std::mt19937_64& r) {
    ChannelConfig c;
    c.latency = kLatency;
    c.seed = r();
    return c;
}

void expect_no_faults(const Events& e) {
    EXPECT_EQ(e.crc_err, 0u);
    EXPECT_EQ(e.nack, 0u);
    EXPECT_EQ(e.replay, 1u) << "only the replay handshake of the link-up";
    EXPECT_EQ(e.link_down, 0u);
    EXPECT_EQ(e.ctl_drop, 0u);
}

}  // namespace

// ------------------------------------------------------------------------------ bring-up
// Both ends leave reset at once, one after the other, and far apart (longer than every timeout),
// in either order: the link comes up, with no error counted, within a bounded time after the later
// reset, and carries traffic both ways.
TYPED_TEST(Link, BringUpInAnyOrder) {
    using C = TypeParam;
    auto r = test_rng();
    const uint64_t delays[][2] = {{0, 0}, {0, 1}, {1, 0}, {0, 9}, {9, 0}, {0, 3000}, {3000, 0}, {5, 2500}};
    for (auto& d : delays) {
        SCOPED_TRACE("reset release a=" + std::to_string(d[0]) + " b=" + std::to_string(d[1]));
        Pair<C> p(r, clean_channel(r));
        const uint64_t later = std::max(d[0], d[1]);
        uint64_t t_up = 0;
        for (uint64_t c = 0; c < later + 2000 && t_up == 0; ++c) {
            p.rst[0] = c < d[0];
            p.rst[1] = c < d[1];
            p.step();
            if (c < later) {
                ASSERT_FALSE(p.up(0) || p.up(1)) << "up while the peer is in reset";
            }
            if (p.up(0) && p.up(1) && p.start_ok_all()) t_up = p.cycle() - later;
        }
        ASSERT_NE(t_up, 0u) << "link not up";
        std::printf("[ info  ] W%d reset release a=%llu b=%llu: data may flow %llu cycles after the later reset\n",
                    C::W, static_cast<unsigned long long>(d[0]), static_cast<unsigned long long>(d[1]),
                    static_cast<unsigned long long>(t_up));
        // training (a few TS1, 4+ TS2, 8 TS2 sent) and the REPLAY/SYNC handshake: a few round trips
        EXPECT_LE(t_up, 60u);
        for (int dir = 0; dir < 2; ++dir) p.add_random(dir, 50);
        p.run_until_done(20000);
        for (int s = 0; s < 2; ++s) {
            expect_no_faults(p.ev(s));
            EXPECT_EQ(p.ev(s).rx_pkt, 50u);
        }
    }
}

// ------------------------------------------------------------------------------ clean traffic
// Random packets at full rate both ways, every VC: all delivered in order, no error counted, and
// the link keeps busy (data flits per cycle on each wire).
TYPED_TEST(Link, CleanFullRateBothWays) {
    using C = TypeParam;
    auto r = test_rng();
    Pair<C> p(r, clean_channel(r));
    p.sb(0).strict = p.sb(1).strict = true;
    uint64_t data[2] = {0, 0};
    p.on_wire = [&](int dir, const Flit& f) { data[dir] += C::sync(f) == VELO_LINK_SYNC_DATA; };
    p.bring_up();
    const unsigned n = 2000;
    for (int dir = 0; dir < 2; ++dir) p.add_random(dir, n);
    const uint64_t t0 = p.cycle();
    data[0] = data[1] = 0;
    p.run_until_done(200000);
    const uint64_t span = p.cycle() - t0;
    for (int s = 0; s < 2; ++s) {
        expect_no_faults(p.ev(s));
        EXPECT_EQ(p.ev(s).rx_pkt, n);
        EXPECT_EQ(p.ev(s).stomp, 0u);
        EXPECT_EQ(p.sb(s).good, n);
        EXPECT_EQ(p.sb(s).bad, 0u);
    }
    const double util = static_cast<double>(data[0] + data[1]) / 2.0 / static_cast<double>(span);
    std::printf("[ info  ] W%d both ways: %.3f data flits (incl. CRC) per cycle per wire\n", C::W, util);
    // both directions saturated: ACK and CREDIT symbols take a few slots, nothing else
    EXPECT_GT(util, 0.85);
}

// Back-to-back 64-byte messages one way: exactly H + 512/W + 1 flits per message on the wire (no
// control symbol in the forward direction), first flit tx_valid -> phy_tx in 1 cycle, phy_rx ->
// rx_valid in 1 cycle.
TYPED_TEST(Link, BackToBack64ByteMessagesAndLatency) {
    using C = TypeParam;
    auto r = test_rng();
    Pair<C> p(r, clean_channel(r));
    p.sb(0).strict = true;
    p.bring_up();
    p.run(50);  // idle
    const unsigned n = 100;
    for (unsigned i = 0; i < n; ++i) p.add(0, make_pkt<C>(r, p.next_id(), 64, 0, false));
    // wire observation of direction 0: first data flit, last data flit, control flits in between
    int64_t first = -1, last = -1;
    uint64_t ctl_between = 0, data_flits = 0, ctl_seen = 0;
    int64_t t_wire = -1, t_rxin = -1, t_rxout = -1;
    p.on_wire = [&](int dir, const Flit& f) {
        if (dir != 0) return;
        const int64_t c = static_cast<int64_t>(p.cycle());
        if (C::sync(f) == VELO_LINK_SYNC_DATA) {
            if (first < 0) {
                first = c;
                t_wire = c;
            }
            last = c;
            ++data_flits;
            ctl_between += ctl_seen;
            ctl_seen = 0;
        } else if (first >= 0) {
            ++ctl_seen;
        }
    };
    p.tamper = [&](int dir, Flit& f) {
        if (dir == 0 && t_rxin < 0 && C::sync(f) == VELO_LINK_SYNC_DATA) t_rxin = static_cast<int64_t>(p.cycle());
    };
    const uint64_t t0 = p.cycle();
    while (!p.done()) {
        ASSERT_LT(p.cycle() - t0, 20000u);
        p.step();
        if (t_rxout < 0 && p.side(1).rx_valid) t_rxout = static_cast<int64_t>(p.cycle());
    }
    ASSERT_EQ(p.sb(0).good, n);
    const uint64_t per_msg = static_cast<uint64_t>(C::H + 512 / C::W + 1);
    EXPECT_EQ(data_flits, n * per_msg);
    EXPECT_EQ(ctl_between, 0u) << "control symbols in the forward direction";
    EXPECT_EQ(static_cast<uint64_t>(last - first + 1), n * per_msg) << "gaps between messages";
    std::printf("[ info  ] W%d: %llu flits per 64-byte message back to back (efficiency %.3f)\n", C::W,
                static_cast<unsigned long long>((last - first + 1) / static_cast<int64_t>(n)),
                64.0 * 8 / C::W / static_cast<double>(per_msg));
    // latency: the first flit was taken in cycle first_taken - 1 and is on phy_tx in cycle t_wire;
    // it is on b's phy_rx in t_rxin and on b's rx_valid in t_rxout
    EXPECT_EQ(p.first_taken_[0] - 1, p.first_valid_[0]) << "the first flit waited";
    EXPECT_EQ(t_wire - static_cast<int64_t>(p.first_valid_[0]), 1 + TypeParam::kPipe) << "tx_valid -> phy_tx";
    EXPECT_EQ(t_rxin - t_wire, static_cast<int64_t>(kLatency));
    EXPECT_EQ(t_rxout - t_rxin, 1 + TypeParam::kPipe) << "phy_rx -> rx_valid";
    expect_no_faults(p.ev(0));
    expect_no_faults(p.ev(1));
}

// ------------------------------------------------------------------------------ faults
// Random traffic both ways (gaps, stomped packets, a sink draining at 70%) over wires with bit
// errors: nothing lost, nothing duplicated, no corrupted packet delivered good; CRC errors counted,
// every stomped packet counted exactly once, the link never drops.
template <class C>
void bit_error_run(double ber, unsigned n) {
    auto r = test_rng();
    ChannelConfig ch = clean_channel(r);
    ch.ber = ber;
    Pair<C> p(r, ch);
    for (int d = 0; d < 2; ++d) {
        p.traffic[d].gap_pct = 10;
        p.traffic[d].stomp_pct = 5;
        p.traffic[d].drain_pct = 70;
    }
    p.bring_up(20000);
    if (::testing::Test::HasFatalFailure()) return;
    for (int dir = 0; dir < 2; ++dir) p.add_random(dir, n);
    p.run_until_done(2000000);
    if (::testing::Test::HasFatalFailure()) return;
    p.settle();
    uint64_t crc = 0, replays = 0;
    for (int s = 0; s < 2; ++s) {
        const Events& e = p.ev(s);
        crc += e.crc_err;
        replays += e.replay;
        EXPECT_EQ(e.stomp, p.stomped_sent(1 - s)) << "side " << s;
        EXPECT_EQ(p.sb(1 - s).bad_matched, p.stomped_sent(1 - s));
        EXPECT_EQ(p.sb(1 - s).good + p.stomped_sent(1 - s), n);
        EXPECT_EQ(e.rx_pkt, p.sb(1 - s).good);
        EXPECT_EQ(e.link_down, 0u);
    }
    std::printf(
        "[ info  ] W%d BER %g: %llu+%llu corrupted flits, %llu CRC errors, %llu replays, %llu+%llu control "
        "symbols dropped, %llu cycles\n",
        C::W, ber, static_cast<unsigned long long>(p.channel(0).flits_corrupted()),
        static_cast<unsigned long long>(p.channel(1).flits_corrupted()), static_cast<unsigned long long>(crc),
        static_cast<unsigned long long>(replays), static_cast<unsigned long long>(p.ev(0).ctl_drop),
        static_cast<unsigned long long>(p.ev(1).ctl_drop), static_cast<unsigned long long>(p.cycle()));
    EXPECT_GT(p.channel(0).flits_corrupted() + p.channel(1).flits_corrupted(), 0u);
    EXPECT_GE(crc, 1u);
    EXPECT_GT(replays, 2u);
}

TYPED_TEST(Link, BitErrors1e5) {
    bit_error_run<TypeParam>(1e-5, 6000);
}
TYPED_TEST(Link, BitErrors1e4) {
    bit_error_run<TypeParam>(1e-4, 4000);
}

// Everything at once on a long wire (30 cycles each way, longer than the rest of the credit
// loop): bit errors, lost flits, and the link cut three times for random durations (some shorter
// than DOWN_TIMEOUT, some longer). Nothing lost, nothing duplicated, order kept.
TYPED_TEST(Link, LongWireFaultsAndFlaps) {
    using C = TypeParam;
    auto r = test_rng();
    ChannelConfig ch = clean_channel(r);
    ch.latency = 30;
    ch.ber = 1e-4;
    ch.flit_loss = 1e-4;
    Pair<C> p(r, ch);
    for (int d = 0; d < 2; ++d) {
        p.traffic[d].gap_pct = 5;
        p.traffic[d].stomp_pct = 3;
        p.traffic[d].drain_pct = 50;
    }
    p.bring_up(20000);
    if (::testing::Test::HasFatalFailure()) return;
    const unsigned n = 3000;
    for (int dir = 0; dir < 2; ++dir) p.add_random(dir, n);
    for (int cut = 0; cut < 3; ++cut) {
        p.run(2000 + static_cast<uint64_t>(rnd(r, 4000)));
        const uint64_t len = static_cast<uint64_t>(rnd(r, 2)) ? 20 + rnd(r, 200) : 300 + rnd(r, 3000);
        p.channel(0).set_down(true);
        p.channel(1).set_down(true);
        p.run(len);
        p.channel(0).set_down(false);
        p.channel(1).set_down(false);
    }
    p.run_until_done(4000000);
    if (::testing::Test::HasFatalFailure()) return;
    p.settle();
    for (int s = 0; s < 2; ++s) {
        EXPECT_EQ(p.ev(s).stomp, p.stomped_sent(1 - s));
        EXPECT_EQ(p.sb(1 - s).bad_matched, p.stomped_sent(1 - s));
        EXPECT_EQ(p.sb(1 - s).good + p.stomped_sent(1 - s), n);
        EXPECT_LE(p.ev(s).link_down, 3u);
    }
    std::printf("[ info  ] W%d long wire: %llu cycles, %llu+%llu replays, %llu+%llu link-downs\n", C::W,
                static_cast<unsigned long long>(p.cycle()), static_cast<unsigned long long>(p.ev(0).replay),
                static_cast<unsigned long long>(p.ev(1).replay), static_cast<unsigned long long>(p.ev(0).link_down),
                static_cast<unsigned long long>(p.ev(1).link_down));
}

// Lost flits (the receiver sees sync 00 in their place): recovered by NACK or replay timeout.
TYPED_TEST(Link, LostFlits) {
    using C = TypeParam;
    auto r = test_rng();
    ChannelConfig ch = clean_channel(r);
    ch.flit_loss = 1e-3;
    Pair<C> p(r, ch);
    for (int d = 0; d < 2; ++d) {
        p.traffic[d].gap_pct = 5;
        p.traffic[d].drain_pct = 80;
    }
    p.bring_up(20000);
    const unsigned n = 3000;
    for (int dir = 0; dir < 2; ++dir) p.add_random(dir, n);
    p.run_until_done(2000000);
    if (::testing::Test::HasFatalFailure()) return;
    p.settle();
    for (int s = 0; s < 2; ++s) {
        EXPECT_EQ(p.sb(s).good, n);
        EXPECT_EQ(p.ev(s).rx_pkt, n);
        EXPECT_EQ(p.ev(s).link_down, 0u);
    }
    EXPECT_GT(p.channel(0).flits_lost() + p.channel(1).flits_lost(), 0u);
    EXPECT_GT(p.ev(0).crc_err + p.ev(1).crc_err, 0u);
    EXPECT_GT(p.ev(0).replay + p.ev(1).replay, 2u);
}

// The wire is cut both ways mid-traffic for longer than DOWN_TIMEOUT, then restored: each side
// counts one link-down, retrains, replays from the peer's expected sequence number; every packet
// is delivered exactly once. A short cut (below DOWN_TIMEOUT) loses flits but not the link.
TYPED_TEST(Link, LinkDownMidTrafficAndBack) {
    using C = TypeParam;
    auto r = test_rng();
    Pair<C> p(r, clean_channel(r));
    for (int d = 0; d < 2; ++d) p.traffic[d].gap_pct = 5;
    p.bring_up();
    const unsigned n = 800;
    for (int dir = 0; dir < 2; ++dir) p.add_random(dir, n);
    p.run(1500);
    // a glitch: 40 cycles
    p.channel(0).set_down(true);
    p.channel(1).set_down(true);
    p.run(40);
    p.channel(0).set_down(false);
    p.channel(1).set_down(false);
    p.run(1500);
    EXPECT_TRUE(p.up(0) && p.up(1));
    EXPECT_EQ(p.ev(0).link_down + p.ev(1).link_down, 0u);
    ASSERT_FALSE(p.done()) << "traffic too short for the test";
    // a real cut
    p.channel(0).set_down(true);
    p.channel(1).set_down(true);
    p.run(C::kDownTimeout + 50);
    EXPECT_FALSE(p.up(0));
    EXPECT_FALSE(p.up(1));
    EXPECT_EQ(p.side(0).tx_start_ok, 0u);
    p.run(2000);
    p.channel(0).set_down(false);
    p.channel(1).set_down(false);
    p.run_until_done(500000);
    if (::testing::Test::HasFatalFailure()) return;
    p.settle();
    EXPECT_TRUE(p.up(0) && p.up(1));
    for (int s = 0; s < 2; ++s) {
        EXPECT_EQ(p.ev(s).link_down, 1u) << "side " << s;
        EXPECT_EQ(p.sb(s).good, n);
        EXPECT_EQ(p.ev(s).rx_pkt, n);
        EXPECT_GE(p.ev(s).replay, 2u) << "link-up, link-up again";
    }
    // the glitch cut a packet in at least one direction (a direction whose transmitter sent no data
    // flit during those 40 cycles loses only control symbols, and needs no replay)
    EXPECT_GE(p.ev(0).replay + p.ev(1).replay, 5u) << "link-up and link-up again both sides, glitch";
}

// Packets the source marks bad (tx_bad) go out stomped: delivered bad in their place, counted
// exactly, acknowledged (never retransmitted); clean wire, so nothing else is bad.
TYPED_TEST(Link, StompedPacketsDeliveredBadOnce) {
    using C = TypeParam;
    auto r = test_rng();
    Pair<C> p(r, clean_channel(r));
    p.sb(0).strict = p.sb(1).strict = true;
    for (int d = 0; d < 2; ++d) {
        p.traffic[d].stomp_pct = 20;
        p.traffic[d].gap_pct = 10;
    }
    p.bring_up();
    const unsigned n = 500;
    for (int dir = 0; dir < 2; ++dir) p.add_random(dir, n);
    p.run_until_done(200000);
    for (int s = 0; s < 2; ++s) {
        const uint64_t st = p.stomped_sent(1 - s);
        EXPECT_GT(st, 0u);
        EXPECT_EQ(p.ev(s).stomp, st);
        EXPECT_EQ(p.sb(1 - s).bad, st);
        EXPECT_EQ(p.sb(1 - s).bad_matched, st);
        EXPECT_EQ(p.sb(1 - s).good, n - st);
        EXPECT_EQ(p.ev(s).rx_pkt, n - st);
        expect_no_faults(p.ev(s));
    }
}

// The switch ends a packet early (a truncated packet from an upstream link: tx_last before the
// header's length) or late (more flits than the header says), or hands over a header announcing
// more than 64 bytes: the link pads the packet with zero flits to the header's length (a zero
// FRAG_LEN_M1 if the cut falls before it), cuts it there, or clears FRAG_LEN_M1 and cuts or pads
// to that; it sends the packet stomped, and the stream after it is intact.
TYPED_TEST(Link, SourcePacketsCutShortOrTooLong) {
    using C = TypeParam;
    auto r = test_rng();
    Pair<C> p(r, clean_channel(r));
    p.sb(0).strict = true;
    for (int d = 0; d < 2; ++d) p.traffic[d].gap_pct = 10;
    p.bring_up();
    unsigned malformed = 0;
    for (unsigned i = 0; i < 400; ++i) {
        const bool rma = pct(r, 40);
        Pkt k = make_pkt<C>(r, p.next_id(), 1 + static_cast<unsigned>(rnd(r, rma ? C::A : 64)),
                            static_cast<unsigned>(rnd(r, 4)), false, rma);
        const int n = static_cast<int>(k.flits.size());
        const int kind = rnd(r, 5);
        if (kind == 2) {  // announces too much
            k = overlong_pkt<C>(r, k.id, k.vc);
        } else if (kind == 0) {  // early: 1 .. n-1 flits
            k.send.assign(k.flits.begin(), k.flits.begin() + 1 + rnd(r, n - 1));
            std::vector<uint64_t> f = k.send;
            // the length the partial header announces (zero where its flits are missing: a cut
            // before TYPE frames as VELO, a cut before the length field as length 0)
            const unsigned len = area_of(hdr_of<C>(f));
            f.resize(static_cast<size_t>(C::data_flits(len)), 0);
            k.flits = f;
            k.stomp = pct(r, 50);  // with or without tx_bad: it goes out stomped either way
            k.bad = true;
        } else if (kind == 1) {  // late: 1 .. 5 flits too many
            k.send = k.flits;
            for (int j = 1 + rnd(r, 5); j > 0; --j) k.send.push_back(r() & C::MASK);
            k.stomp = pct(r, 50);
            k.bad = true;
        }
        malformed += k.bad;
        p.add(0, k);
    }
    p.run_until_done(200000);
    EXPECT_GT(malformed, 0u);
    EXPECT_EQ(p.stomped_sent(0), malformed);
    EXPECT_EQ(p.ev(1).stomp, malformed);
    EXPECT_EQ(p.sb(0).bad, malformed);
    EXPECT_EQ(p.sb(0).good, 400u - malformed);
    expect_no_faults(p.ev(1));
}

// A slow sink (3% drain per VC and cycle): the sender waits for credits (tx_start_ok), the buffers
// never overflow (asserted on every flit), everything arrives.
TYPED_TEST(Link, CreditStallsNeverOverflow) {
    using C = TypeParam;
    auto r = test_rng();
    Pair<C> p(r, clean_channel(r));
    p.sb(0).strict = p.sb(1).strict = true;
    for (int d = 0; d < 2; ++d) {
        p.traffic[d].drain_pct = 3;
        p.traffic[d].vcs = d == 0 ? C::kNvc : 2;
    }
    p.bring_up();
    const unsigned n = 250;
    for (int dir = 0; dir < 2; ++dir) p.add_random(dir, n);
    p.run_until_done(2000000);
    for (int s = 0; s < 2; ++s) {
        EXPECT_EQ(p.sb(s).good, n);
        EXPECT_GT(p.start_wait(s), 1000u) << "the sink never held the sender back";
        expect_no_faults(p.ev(s));
    }
}

// Control symbols corrupted on the wire (one random bit of 5% of them, both ways, while up): each
// is either dropped (CRC-5, invalid sync) or, inside a packet, ends that packet bad and causes a
// replay; the cumulative ACK/CREDIT values, the SYNC repeats and the timeouts repair the rest.
// Nothing is lost or duplicated, the link never retrains, the credits settle back exactly.
TYPED_TEST(Link, CorruptedControlSymbols) {
    using C = TypeParam;
    auto r = test_rng();
    Pair<C> p(r, clean_channel(r));
    for (int d = 0; d < 2; ++d) {
        p.traffic[d].gap_pct = 20;  // the transmitters put control symbols inside packets
        p.traffic[d].drain_pct = 60;
    }
    p.bring_up();
    uint64_t tampered[2] = {0, 0}, tampered_rep[2] = {0, 0};
    bool rep_hit[2] = {false, false};  // the last REPLAY of this direction was hit
    std::mt19937_64 tr(r());
    p.tamper = [&](int dir, Flit& f) {
        const int rcv = 1 - dir;
        if (!p.up(rcv) || C::sync(f) != VELO_LINK_SYNC_CTL) return;
        const bool rep = ((C::data(f) >> 12) & 0xF) == 3;  // LINK / REPLAY
        // never two REPLAYs in a row: SYNC_RETRIES unanswered REPLAYs retrain the link by design
        // (UnansweredReplaysTakeTheLinkDown), which this test must not leave to chance
        const bool skip = rep && rep_hit[dir];
        if (rep) rep_hit[dir] = false;
        if (skip || rnd(tr, 100) >= 5) return;
        if (rep) rep_hit[dir] = true;
        tampered_rep[dir] += rep;
        C::flip(f, rnd(tr, C::W + 2));
        ++tampered[dir];
    };
    const unsigned n = 2000;
    for (int dir = 0; dir < 2; ++dir) p.add_random(dir, n);
    p.run_until_done(2000000);
    p.tamper = nullptr;
    p.run(8);  // the events of the last tampered symbols
    p.settle();
    for (int s = 0; s < 2; ++s) {
        EXPECT_EQ(p.sb(s).good, n);
        EXPECT_GT(tampered[s], 0u);
        // each corrupted symbol is counted once; a lost REPLAY may cost one more error (the
        // replayed packets arrive unannounced and fail their check)
        EXPECT_GE(p.ev(1 - s).ctl_drop + p.ev(1 - s).crc_err, tampered[s]) << "receiver side " << 1 - s;
        EXPECT_LE(p.ev(1 - s).ctl_drop + p.ev(1 - s).crc_err, tampered[s] + tampered_rep[s])
            << "receiver side " << 1 - s;
        EXPECT_EQ(p.ev(s).link_down, 0u);
    }
    std::printf("[ info  ] W%d: %llu+%llu control symbols corrupted: %llu+%llu dropped, %llu+%llu ended a packet\n",
                C::W, static_cast<unsigned long long>(tampered[0]), static_cast<unsigned long long>(tampered[1]),
                static_cast<unsigned long long>(p.ev(1).ctl_drop), static_cast<unsigned long long>(p.ev(0).ctl_drop),
                static_cast<unsigned long long>(p.ev(1).crc_err), static_cast<unsigned long long>(p.ev(0).crc_err));
}

// A packet cut at the receiver and padded there, abandoned by its transmitter (the seed of
// CorruptedControlSymbols that failed its bound once in about a hundred runs, made deterministic).
// The source stalls a largest packet P after its first HF + 1 flits; a control symbol the
// transmitter sends meanwhile is hit on the wire (invalid sync), so the receiver cuts P, pads it to
// the length its header announces and NACKs; the transmitter, still inside P, abandons it. The
// fillers fill b's buffer, but the transmitter never sent them: it must charge them (S) before it
// replays, or the replayed header goes out into a buffer without room for a largest packet and is
// refused (one more CRC error, NACK and replay; before the fix S - F counted only the flits sent).
// b's switch frees nothing during the episode, and VC 0 holds `occ` flits before P, chosen so that
// the flits sent would leave room to start P again but the padded copy does not.
TYPED_TEST(Link, PaddedCutPacketChargedBeforeTheReplay) {
    using C = TypeParam;
    auto r = test_rng();
    Pair<C> p(r, clean_channel(r));
    p.traffic[0].drain_pct = 0;  // b's switch holds every flit until the episode is over
    p.bring_up();
    if (::testing::Test::HasFatalFailure()) return;
    const int cu = 1 << C::CUB;
    auto units = [cu](int f) { return (f + cu - 1) / cu * cu; };
    const int vcd = static_cast<int>(C::kVcDepth);
    const int room_tx = vcd - units(C::MAXP);  // transmitter: a packet starts while S - F <= this
    const int room_rx = vcd - C::MAXP;         // receiver: a new packet is refused beyond this
    const int sent = C::H + 1;                 // flits of P sent before its source stalls
    // fill VC 0 with RMA packets up to `occ` flits (charged in units)
    const int target = std::max(0, room_rx - units(C::MAXP) + 1);
    int occ = 0, fill_flits = 0;
    unsigned nfill = 0;
    while (occ < target) {
        const int n = std::min(C::MAXP, std::max(target - occ, C::H + 1));
        p.add(0, fixed_pkt<C>(p.next_id(), static_cast<unsigned>((n - C::H) * C::FB), 0, true));
        occ += units(n);
        fill_flits += n + 1;  // with its CRC flit
        ++nfill;
    }
    ASSERT_LE(occ + sent, room_tx) << "counting only the flits sent, the transmitter would replay P";
    ASSERT_GT(occ + units(C::MAXP), room_rx) << "the receiver holding the padded P would refuse it";
    Pkt big = fixed_pkt<C>(p.next_id(), static_cast<unsigned>(C::A), 0, true);
    ASSERT_EQ(static_cast<int>(big.flits.size()), C::MAXP);
    big.stall_at = static_cast<size_t>(sent);
    big.stall_for = static_cast<unsigned>(4 * C::MAXP + 300);
    p.add(0, big);
    int data_seen = 0;
    bool hit = false;
    p.tamper = [&](int dir, Flit& f) {
        if (dir != 0) return;
        if (C::sync(f) == VELO_LINK_SYNC_DATA || C::sync(f) == VELO_LINK_SYNC_STOMP) ++data_seen;
        if (!hit && data_seen == fill_flits + sent && C::sync(f) == VELO_LINK_SYNC_CTL) {
            C::flip(f, C::W + 1);  // sync 10 -> 00: invalid, inside P
            hit = true;
        }
    };
    p.run(big.stall_for + 200);
    if (::testing::Test::HasFatalFailure()) return;
    ASSERT_TRUE(hit);
    // the episode is over: one error, one NACK, one replay; the replayed P waits for room, and the
    // SYNC left the transmitter's count at exactly what b holds (the fill packets and the padded P)
    EXPECT_EQ(p.ev(1).crc_err, 1u);
    EXPECT_EQ(p.ev(1).nack, 1u);
    EXPECT_EQ(p.ev(0).replay, 2u) << "the link-up REPLAY and one for the NACK";
    EXPECT_EQ(p.sb(0).good, nfill);
    EXPECT_EQ(p.sb(0).bad, 1u) << "the padded copy of P";
    EXPECT_EQ(p.credits_in_use(0, 0), static_cast<uint64_t>(occ + units(C::MAXP)));
    p.traffic[0].drain_pct = 100;
    p.tamper = nullptr;
    p.run_until_done(20000);
    if (::testing::Test::HasFatalFailure()) return;
    p.settle();
    EXPECT_EQ(p.sb(0).good, nfill + 1);
    EXPECT_EQ(p.ev(1).crc_err, 1u);
    EXPECT_EQ(p.ev(1).nack, 1u);
    EXPECT_EQ(p.ev(0).replay, 2u);
    EXPECT_EQ(p.ev(1).ctl_drop, 0u);
    EXPECT_EQ(p.downs(0) + p.downs(1), 0u);
}

// SYNC symbols lost: errors on the a -> b wire cause replays, and b's SYNCs are dropped at
// random (half of them) on the way back. A REPLAY with a SYNC missing is repeated after
// SYNC_TIMEOUT while the data flow on; only REPLAYs answered by no SYNC at all count towards taking
// the link down. Everything arrives once, in order, and the credits settle back exactly.
TYPED_TEST(Link, LostSyncSymbolsRepaired) {
    using C = TypeParam;
    auto r = test_rng();
    Pair<C> p(r, clean_channel(r));
    for (int d = 0; d < 2; ++d) {
        p.traffic[d].gap_pct = 5;
        p.traffic[d].drain_pct = 50;
    }
    p.bring_up();
    std::mt19937_64 tr(r());
    uint64_t dropped = 0, flipped = 0;
    p.tamper = [&](int dir, Flit& f) {
        if (dir == 0 && C::sync(f) == VELO_LINK_SYNC_DATA && rnd(tr, 300) == 0) {
            C::flip(f, rnd(tr, C::W));
            ++flipped;
        }
        if (dir == 1 && C::sync(f) == VELO_LINK_SYNC_CTL && ((C::data(f) >> 14) & 3) == VELO_LINK_CTL_TYPE_SYNC &&
            pct(tr, 50)) {
            f = Flit{};
            ++dropped;
        }
    };
    const unsigned n = 1500;
    for (int dir = 0; dir < 2; ++dir) p.add_random(dir, n);
    p.run_until_done(3000000);
    p.tamper = nullptr;
    if (::testing::Test::HasFatalFailure()) return;
    for (int s = 0; s < 2; ++s) {
        EXPECT_EQ(p.sb(s).good, n);
        EXPECT_EQ(p.ev(s).link_down, 0u);
    }
    EXPECT_GT(dropped, 20u);
    EXPECT_GT(p.ev(0).replay, 10u);
    p.settle();
    std::printf("[ info  ] W%d: %llu bit errors, %llu SYNCs dropped, %llu replays\n", C::W,
                static_cast<unsigned long long>(flipped), static_cast<unsigned long long>(dropped),
                static_cast<unsigned long long>(p.ev(0).replay));
}

// Every SYNC answering k REPLAYs in a row lost: with k = SYNC_RETRIES - 1 the link stays up
// (the next REPLAY is answered); with k = SYNC_RETRIES the transmitter takes the link down and
// retrains (its peer state intact: nothing lost). Either way each packet arrives once.
TYPED_TEST(Link, UnansweredReplaysTakeTheLinkDown) {
    using C = TypeParam;
    for (int k = 3; k <= 4; ++k) {
        SCOPED_TRACE("unanswered REPLAYs: " + std::to_string(k));
        auto r = test_rng();
        Pair<C> p(r, clean_channel(r));
        p.bring_up();
        unsigned nrep = 1;  // the link-up REPLAY went out
        bool hit = false;
        p.on_wire = [&](int dir, const Flit& f) {
            if (dir == 0 && C::sync(f) == VELO_LINK_SYNC_CTL && ((C::data(f) >> 12) & 0xF) == 3) ++nrep;
        };
        p.tamper = [&](int dir, Flit& f) {
            if (dir == 0 && !hit && C::sync(f) == VELO_LINK_SYNC_DATA) {  // one bit error: a replay
                C::flip(f, 1);
                hit = true;
            }
            if (dir == 1 && C::sync(f) == VELO_LINK_SYNC_CTL && ((C::data(f) >> 14) & 3) == VELO_LINK_CTL_TYPE_SYNC &&
                nrep >= 2 && nrep < 2 + static_cast<unsigned>(k))
                f = Flit{};
        };
        for (int dir = 0; dir < 2; ++dir) p.add_random(dir, 100);
        p.run_until_done(100000);
        if (::testing::Test::HasFatalFailure()) return;
        EXPECT_EQ(p.sb(0).good, 100u);
        EXPECT_EQ(p.sb(1).good, 100u);
        EXPECT_EQ(p.downs(0), k == 4 ? 1u : 0u);
        EXPECT_EQ(p.discards(0) + p.discards(1), 0u);
        EXPECT_GE(nrep, 2u + static_cast<unsigned>(k));
        p.settle();
    }
}

// The receiver's ACKs are held back for long stretches, so the replay buffer fills up to its
// start limit and the replay timeout resends it, while the source keeps presenting packets,
// among them ones the switch ends early (padded), ones that go on too long (cut) and ones whose
// header announces more than 64 bytes (FRAG_LEN_M1 cleared, cut or padded). No flit of the
// buffer is ever overwritten (checked every cycle), and every packet arrives once, byte-exact,
// in order (a packet replayed from overwritten flits would carry a good CRC over wrong bytes);
// every malformed packet is delivered bad exactly once in its place. (Not strict: a replay on
// timeout cuts the packet being sent, whose cut-through copy arrives bad before the good one.)
TYPED_TEST(Link, ReplayBufferNeverOverwritten) {
    using C = TypeParam;
    auto r = test_rng();
    Pair<C> p(r, clean_channel(r));
    p.traffic[0].gap_pct = 3;
    p.bring_up();
    bool hold = false;
    p.tamper = [&](int dir, Flit& f) {
        if (hold && dir == 1 && C::sync(f) == VELO_LINK_SYNC_CTL && ((C::data(f) >> 14) & 3) == VELO_LINK_CTL_TYPE_ACK)
            f = Flit{};
    };
    unsigned malformed = 0;
    const unsigned n = 1200;
    for (unsigned i = 0; i < n; ++i) {
        const unsigned vc = static_cast<unsigned>(rnd(r, 4));
        const bool rma = pct(r, 40);
        Pkt k = make_pkt<C>(r, p.next_id(), 1 + static_cast<unsigned>(rnd(r, rma ? C::A : 64)), vc, false, rma);
        const int kind = rnd(r, 6);
        if (kind == 0) {
            k = overlong_pkt<C>(r, k.id, vc);
        } else if (kind == 1) {  // early: header only, announcing a largest packet
            k = make_pkt<C>(r, k.id, static_cast<unsigned>(C::A), vc, false, true);
            k.send.assign(k.flits.begin(), k.flits.begin() + C::H);
            k.flits.resize(static_cast<size_t>(C::H));
            k.flits.resize(static_cast<size_t>(C::MAXP), 0);
            k.bad = true;
        } else if (kind == 2) {  // late
            k.send = k.flits;
            for (int j = 1 + rnd(r, 5); j > 0; --j) k.send.push_back(r() & C::MASK);
            k.bad = true;
        }
        malformed += k.bad;
        p.add(0, k);
    }
    const uint64_t t0 = p.cycle();
    while (!p.done()) {
        ASSERT_LT(p.cycle() - t0, 3000000u);
        hold = ((p.cycle() - t0) % 1500) < 1100;
        p.step();
        if (::testing::Test::HasFatalFailure()) return;
    }
    hold = false;
    EXPECT_EQ(p.sb(0).good + malformed, n);
    EXPECT_EQ(p.sb(0).bad_matched, malformed);
    EXPECT_EQ(p.ev(1).stomp, malformed);
    EXPECT_GT(p.ev(0).replay, 5u);
    EXPECT_GE(p.max_used(0), C::kReplayDepth - 2 * static_cast<unsigned>(C::MAXP)) << "the buffer never filled up";
    EXPECT_EQ(p.ev(0).link_down + p.ev(1).link_down, 0u);
    p.settle();
    std::printf("[ info  ] W%d: %u malformed of %u, %llu replays, replay buffer up to %u flits\n", C::W, malformed, n,
                static_cast<unsigned long long>(p.ev(0).replay), p.max_used(0));
}

// ------------------------------------------------------------------------------ neighbour reset
// One end of the link is reset alone (its node reboots) while the other keeps running, with
// traffic both ways, for a few cycles (less than DOWN_TIMEOUT: the survivor sees the peer's TS1)
// or long (it sees silence). The training carries the epoch bit of the reset end: the link comes
// back in a new epoch within a bound; the survivor discards what its replay buffer held (counted:
// one ev_link_down pulse per packet) and restarts credits; packets in flight either way may be
// lost, none is duplicated or reordered; everything sent after the reset arrives; the credits
// settle back exactly. The survivor's lost packets are those it discarded (some discarded ones
// may have arrived just before the reset, their ACK not sent yet or lost with it).
TYPED_TEST(Link, NeighbourResetRecovers) {
    using C = TypeParam;
    auto r = test_rng();
    Pair<C> p(r, clean_channel(r));
    for (int d = 0; d < 2; ++d) {
        p.traffic[d].gap_pct = 5;
        p.traffic[d].drain_pct = 60;
    }
    p.bring_up();
    struct Episode {
        int side;
        uint64_t len;
    };
    const Episode eps[] = {{1, 3}, {0, 3}, {1, 400}, {0, 400}, {1, 1}, {0, 60}, {1, 2500}, {0, 20}};
    uint64_t disc_total = 0;
    for (const Episode& e : eps) {
        SCOPED_TRACE("reset side " + std::to_string(e.side) + " for " + std::to_string(e.len) + " cycles");
        const int s = e.side, o = 1 - s;  // o survives
        for (int dir = 0; dir < 2; ++dir) p.add_random(dir, 300);
        p.run(200 + static_cast<uint64_t>(rnd(r, 800)));
        const uint64_t lost0 = p.sb(o).lost, disc0 = p.discards(o), downs0 = p.downs(o);
        p.rst[s] = true;
        p.run(e.len);
        p.rst[s] = false;
        uint64_t t = 0;
        while (!(p.up(0) && p.up(1) && p.start_ok_all()) && t < 3000) {
            p.step();
            ++t;
        }
        ASSERT_TRUE(p.up(0) && p.up(1)) << "the link did not come back";
        std::printf("[ info  ] W%d reset of side %d for %llu cycles: data flow again %llu cycles after it\n", C::W, s,
                    static_cast<unsigned long long>(e.len), static_cast<unsigned long long>(t));
        EXPECT_LE(t, 200u);
        for (int dir = 0; dir < 2; ++dir) p.add_random(dir, 30);  // after the reset: must all arrive
        p.run_until_done(1000000);
        if (::testing::Test::HasFatalFailure()) return;
        const uint64_t lost = p.sb(o).lost - lost0, disc = p.discards(o) - disc0;
        EXPECT_GE(p.downs(o) - downs0, 1u);
        EXPECT_LE(lost, disc);
        // discarded packets that had arrived: those whose ACK had not gone out yet (an ACK waits
        // for ACK_URGENT packets or CTL_AGE cycles while data flow the other way) or was in flight
        EXPECT_LE(disc, lost + C::kAckUrgent + 4) << "discarded packets that had arrived";
        disc_total += disc;
    }
    EXPECT_GT(disc_total, 0u);
    p.settle();
}

// Resets of either side at random moments, some hitting the other side's training or the epoch
// handshake (the link-up, REPLAY and SYNCs of the new epoch), over a wire with bit errors and lost
// flits. Packets in flight at a reset may be lost; nothing is duplicated or reordered, everything
// sent after the last reset arrives, and the credits settle back exactly.
TYPED_TEST(Link, RandomResetsOfEitherSide) {
    using C = TypeParam;
    auto r = test_rng();
    ChannelConfig ch = clean_channel(r);
    ch.ber = 1e-5;
    ch.flit_loss = 1e-5;
    ch.latency = 1 + static_cast<unsigned>(rnd(r, 8));
    Pair<C> p(r, ch);
    for (int d = 0; d < 2; ++d) {
        p.traffic[d].gap_pct = 5;
        p.traffic[d].drain_pct = 70;
    }
    p.bring_up(20000);
    for (int dir = 0; dir < 2; ++dir) p.add_random(dir, 2000);
    for (int i = 0; i < 16; ++i) {
        const int s = rnd(r, 2);
        const int kind = rnd(r, 3);
        const uint64_t len = kind == 0 ? 1 + rnd(r, 5) : kind == 1 ? 20 + rnd(r, 300) : 1000 + rnd(r, 2000);
        p.rst[s] = true;
        p.run(len);
        p.rst[s] = false;
        // sometimes the next reset comes during the training or the epoch handshake
        p.run(static_cast<uint64_t>(pct(r, 40) ? rnd(r, 80) : 500 + rnd(r, 3000)));
        if (::testing::Test::HasFatalFailure()) return;
    }
    for (int dir = 0; dir < 2; ++dir) p.add_random(dir, 100);
    p.run_until_done(4000000);
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_TRUE(p.up(0) && p.up(1));
    p.settle();
    std::printf("[ info  ] W%d: %llu+%llu packets lost at resets, %llu+%llu discarded, %llu+%llu link-downs\n", C::W,
                static_cast<unsigned long long>(p.sb(0).lost), static_cast<unsigned long long>(p.sb(1).lost),
                static_cast<unsigned long long>(p.discards(0)), static_cast<unsigned long long>(p.discards(1)),
                static_cast<unsigned long long>(p.downs(0)), static_cast<unsigned long long>(p.downs(1)));
}

// ------------------------------------------------------------------------------ directed
// Packets of a directed stream: payload area and kind (VELO or RMA).
struct Spec {
    unsigned len;
    bool rma;
};
// The default stream: 64-byte VELO messages, five (MAX_AREA 64), or nine (MAX_AREA 256: a header
// corrupted into an RMA one may announce up to 256 bytes), so that a corrupted length field cannot
// run past the end of the stream.
template <class C>
std::vector<Spec> default_stream() {
    return std::vector<Spec>(C::A > 64 ? 9 : 5, Spec{64, false});
}

// The bench's directed single-fault cases: every packet arrives good once, after exactly one CRC
// error, one NACK and the transmitter's replay events.
template <class C>
void expect_one_retransmission(Pair<C>& p, uint64_t n = default_stream<C>().size()) {
    EXPECT_EQ(p.sb(0).good, n);
    EXPECT_EQ(p.ev(1).crc_err, 1u);
    EXPECT_EQ(p.ev(1).nack, 1u);
    EXPECT_EQ(p.ev(0).replay, 2u);
}

// Fixed packets a -> b (by default default_stream()); the n-th data-sync flit on the wire
// (counting from the first packet's header) is changed by `hit`. Returns the pair after the
// stream was delivered.
template <class C>
std::unique_ptr<Pair<C>> directed(std::mt19937_64& r, int nth, const std::function<void(Flit&)>& hit,
                                  std::vector<Spec> specs = {}) {
    if (specs.empty()) specs = default_stream<C>();
    std::unique_ptr<Pair<C>> p(new Pair<C>(r, clean_channel(r)));
    p->bring_up();
    for (unsigned i = 0; i < specs.size(); ++i) p->add(0, fixed_pkt<C>(i + 1, specs[i].len, i % 4, specs[i].rma));
    int seen = 0;
    p->tamper = [&, nth](int dir, Flit& f) {
        if (dir != 0 || C::sync(f) != VELO_LINK_SYNC_DATA) return;
        if (seen++ == nth) hit(f);
    };
    p->run_until_done(40000);
    p->tamper = nullptr;
    return p;
}

// Index of header flit `flit` holding header bit `bit`, and the bit's position in it.
template <class C>
int hdr_flit(int bit) {
    return bit / C::W;
}
template <class C>
int hdr_pos(int bit) {
    return bit % C::W;
}

// A single-bit error in every flit of a packet (header, payload, CRC; data bits and sync bits):
// exactly one CRC error, one NACK, one replay; the packet is delivered good once, after one bad
// (cut-through) copy; the stream stays in order.
TYPED_TEST(Link, SingleBitErrorInEveryFlitPosition) {
    using C = TypeParam;
    auto r = test_rng();
    const int per_pkt = C::H + 512 / C::W + 1;  // data flits + CRC flit of a 64-byte packet
    const int base = 2 * per_pkt;               // the third packet
    const int bits[] = {0, C::W / 2 + 1, C::W - 1, C::W, C::W + 1};
    for (int k = 0; k < per_pkt; ++k) {
        for (int b : bits) {
            SCOPED_TRACE("flit " + std::to_string(k) + " bit " + std::to_string(b));
            auto p = directed<C>(r, base + k, [b](Flit& f) { C::flip(f, b); });
            if (::testing::Test::HasFatalFailure()) return;
            expect_one_retransmission(*p);
            EXPECT_EQ(p->sb(0).bad, 1u);
            EXPECT_EQ(p->ev(1).rx_pkt, default_stream<C>().size());
            // a sync error on the first flit: outside a packet, a dropped symbol
            EXPECT_EQ(p->ev(1).ctl_drop, (k == 0 && b >= C::W) ? 1u : 0u);
            EXPECT_EQ(p->ev(0).link_down + p->ev(1).link_down, 0u);
        }
    }
}

// The length field corrupted so that the header announces more than 64 bytes of payload area
// (FRAG_OFF % 4 made non-zero on a 64-byte packet: 65 or 66 bytes, MAX_PKT_FLITS + 1 or + 2 data
// flits). The receiver sees the framing error at the length field: it forwards the header with
// FRAG_LEN_M1 cleared and ends the packet bad at that length (zero fillers), never more than a
// largest packet; one CRC error, one NACK, one replay, every packet delivered good once.
TYPED_TEST(Link, LengthFieldCorruptedTooLong) {
    using C = TypeParam;
    auto r = test_rng();
    const int per_pkt = C::H + 512 / C::W + 1;
    for (int b = 0; b < 2; ++b) {  // FRAG_OFF bit 0 or 1: 1 or 2 pad bytes
        SCOPED_TRACE("FRAG_OFF bit " + std::to_string(b));
        const int hb = VELO_PKT_HDR_FRAG_OFF_SHIFT + b;
        auto p = directed<C>(r, 2 * per_pkt + hdr_flit<C>(hb), [&](Flit& f) { C::flip(f, hdr_pos<C>(hb)); });
        if (::testing::Test::HasFatalFailure()) return;
        expect_one_retransmission(*p);
        EXPECT_EQ(p->ev(1).rx_pkt, default_stream<C>().size());
        EXPECT_EQ(p->ev(1).ctl_drop, 0u);
        EXPECT_EQ(p->ev(0).link_down + p->ev(1).link_down, 0u);
        // the bad copy: the corrupted header with FRAG_LEN_M1 = 0, so HF + (FRAG_OFF % 4 + 1) /
        // bytes-per-flit rounded up data flits, the fillers zero
        ASSERT_EQ(p->sb(0).bad_seen.size(), 1u);
        const std::vector<uint64_t>& bad = p->sb(0).bad_seen[0];
        const Pkt want = fixed_pkt<C>(3, 64, 2);
        uint64_t hdr = 0, got = 0;
        for (int h = 0; h < C::H; ++h) hdr |= want.flits[static_cast<size_t>(h)] << (h * C::W);
        hdr ^= 1ull << hb;
        hdr &= ~(0x3Full << VELO_PKT_HDR_FRAG_LEN_M1_SHIFT);
        const unsigned area = static_cast<unsigned>((hdr >> VELO_PKT_HDR_FRAG_OFF_SHIFT) & 3) + 1;
        ASSERT_EQ(bad.size(), static_cast<size_t>(C::H + (area + C::FB - 1) / C::FB));
        for (int h = 0; h < C::H; ++h) got |= bad[static_cast<size_t>(h)] << (h * C::W);
        EXPECT_EQ(got, hdr);
        for (size_t i = C::H; i < bad.size(); ++i) EXPECT_EQ(bad[i], 0u) << "filler " << i;
    }
}

// The length field corrupted within the legal range: shorter (a 64-byte packet announcing 32)
// and longer (an 8-byte packet announcing 40, running into the packet behind it). The CRC is
// compared with the wrong flit, fails, and the replay delivers everything once, in order.
TYPED_TEST(Link, LengthFieldCorruptedShorterOrLonger) {
    using C = TypeParam;
    auto r = test_rng();
    const int hb = VELO_PKT_HDR_FRAG_LEN_M1_SHIFT + 5;  // FRAG_LEN_M1 bit 5: 63 <-> 31, 7 <-> 39
    std::vector<Spec> lens[2] = {default_stream<C>(), default_stream<C>()};
    lens[1][2].len = 8;
    for (int longer = 0; longer < 2; ++longer) {
        SCOPED_TRACE(longer ? "longer" : "shorter");
        const int pre = 2 * (C::H + 512 / C::W + 1);
        auto p = directed<C>(
            r, pre + hdr_flit<C>(hb), [&](Flit& f) { C::flip(f, hdr_pos<C>(hb)); }, lens[longer]);
        if (::testing::Test::HasFatalFailure()) return;
        expect_one_retransmission(*p);
        EXPECT_EQ(p->ev(1).rx_pkt, default_stream<C>().size());
        EXPECT_EQ(p->sb(0).bad, 1u);
        EXPECT_EQ(p->ev(0).link_down + p->ev(1).link_down, 0u);
    }
}

// Length corner cases on a clean wire, a -> b, three rounds with the VCs rotating: RMA packets with
// LEN_M1 = 0, 1, 63, 64, 254 and 255 (1, 2, 64, 65, 255 and 256 bytes of payload area) and VELO
// packets whose area includes 0..3 FRAG_OFF pad bytes (1..64 bytes). Every packet the link frames
// (VELO up to 64 bytes, RMA up to MAX_AREA) arrives good, byte-exact, with exactly
// H + ceil(area / bytes per flit) data flits and one CRC flit on the wire; an RMA header beyond
// MAX_AREA (MAX_AREA 64: LEN_M1 64, 254, 255) goes out stomped with LEN_M1 cleared, cut to H + 1
// flits, and arrives bad in its place. No error is counted.
TYPED_TEST(Link, LengthCornerCases) {
    using C = TypeParam;
    auto r = test_rng();
    Pair<C> p(r, clean_channel(r));
    p.sb(0).strict = true;
    p.bring_up();
    struct K {
        unsigned len;
        bool rma;
        unsigned pad;
    };
    const K ks[] = {{1, true, 0},   {2, true, 0},   {64, true, 0},  {65, true, 0},  {255, true, 0},
                    {256, true, 0}, {1, false, 0},  {2, false, 1},  {4, false, 3},  {63, false, 2},
                    {64, false, 0}, {64, false, 1}, {64, false, 3}, {33, false, 2}, {17, true, 0}};
    uint64_t want_flits = 0;
    unsigned legal = 0, stomped = 0;
    for (unsigned round = 0; round < 3; ++round)
        for (size_t i = 0; i < sizeof ks / sizeof ks[0]; ++i) {
            const K& k = ks[i];
            Pkt pk =
                make_pkt<C>(r, p.next_id(), k.len, static_cast<unsigned>((i + round) % C::kNvc), false, k.rma, k.pad);
            if (k.rma && k.len > static_cast<unsigned>(C::A)) {
                // the source presents the whole packet; the link clears LEN_M1 and cuts it to H + 1
                pk.send = pk.flits;
                const uint64_t h = len_cleared(hdr_of<C>(pk.flits));
                pk.flits.resize(static_cast<size_t>(C::data_flits(1)));
                put_hdr<C>(pk.flits, h);
                pk.bad = true;
                ++stomped;
            } else {
                ASSERT_EQ(pk.flits.size(), static_cast<size_t>(C::H + (k.len + C::FB - 1) / C::FB));
                ++legal;
            }
            want_flits += pk.flits.size() + 1;
            p.add(0, pk);
        }
    uint64_t data = 0;
    // data flits and CRC flits (a stomped packet's with the stomp sync code)
    p.on_wire = [&](int dir, const Flit& f) {
        data += dir == 0 && (C::sync(f) == VELO_LINK_SYNC_DATA || C::sync(f) == VELO_LINK_SYNC_STOMP);
    };
    p.run_until_done(100000);
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_EQ(stomped, C::A < 256 ? 9u : 0u);
    EXPECT_EQ(p.sb(0).good, legal);
    EXPECT_EQ(p.sb(0).bad_matched, stomped);
    EXPECT_EQ(p.ev(1).stomp, stomped);
    EXPECT_EQ(p.ev(1).rx_pkt, legal);
    EXPECT_EQ(data, want_flits) << "data flits on the wire";
    expect_no_faults(p.ev(0));
    expect_no_faults(p.ev(1));
    p.settle();
}

// RMA length fields corrupted on the wire (an RMA packet of 64 bytes of area, LEN_M1 63: bit 6 or
// 7 flipped, announcing 128 or 192 bytes), and a VELO header corrupted into an RMA type (TYPE bit 1:
// the receiver now frames it by LEN_M1 = {RSVD, FRAG, FRAG_LEN_M1}). Beyond the type's limit
// (MAX_AREA 64) it is a framing error at the length field: the header goes on with its length
// cleared and the packet ends bad at that length (zero fillers), never longer; within it (MAX_AREA
// 256) the receiver misframes, runs into the packets behind, and the CRC catches it. Either way
// one CRC error, one NACK, one replay, and every packet arrives good once, in order.
TYPED_TEST(Link, RmaLengthFieldCorrupted) {
    using C = TypeParam;
    auto r = test_rng();
    const std::vector<Spec> rma_stream(default_stream<C>().size(), Spec{64, true});
    const int bits[] = {VELO_RMA_PKT_HDR_LEN_M1_SHIFT + 6, VELO_RMA_PKT_HDR_LEN_M1_SHIFT + 7,
                        VELO_PKT_HDR_TYPE_SHIFT + 1};
    for (int c = 0; c < 3; ++c) {
        const int hb = bits[c];
        SCOPED_TRACE("header bit " + std::to_string(hb));
        const std::vector<Spec> st = c < 2 ? rma_stream : default_stream<C>();
        const int per_pkt = C::H + 64 / C::FB + 1;
        auto p = directed<C>(
            r, 2 * per_pkt + hdr_flit<C>(hb), [&](Flit& f) { C::flip(f, hdr_pos<C>(hb)); }, st);
        if (::testing::Test::HasFatalFailure()) return;
        expect_one_retransmission(*p, st.size());
        EXPECT_EQ(p->ev(1).rx_pkt, st.size());
        EXPECT_EQ(p->ev(0).link_down + p->ev(1).link_down, 0u);
        ASSERT_EQ(p->sb(0).bad_seen.size(), 1u);
        // the corrupted header as the receiver sees it
        const uint64_t hdr = hdr_of<C>(fixed_pkt<C>(3, 64, 2, st[2].rma).flits) ^ (1ull << hb);
        const bool rma = ((hdr >> VELO_PKT_HDR_TYPE_SHIFT) & 0xF) >= 2;
        const unsigned area = area_of(hdr);
        ASSERT_TRUE(rma);
        if (area > static_cast<unsigned>(C::A)) {
            // framing error: the header with LEN_M1 cleared, one zero filler
            const std::vector<uint64_t>& bad = p->sb(0).bad_seen[0];
            ASSERT_EQ(bad.size(), static_cast<size_t>(C::data_flits(1)));
            EXPECT_EQ(hdr_of<C>(bad), len_cleared(hdr));
            for (size_t i = C::H; i < bad.size(); ++i) EXPECT_EQ(bad[i], 0u) << "filler " << i;
        } else {
            // misframed at the announced length (never beyond a largest packet)
            EXPECT_LE(p->sb(0).bad_seen[0].size(), static_cast<size_t>(C::data_flits(area)));
        }
    }
}

// The first flit of a packet is lost (the receiver sees no signal there: a dropped symbol between
// packets) and the receiver takes the packet's second flit for a header: misframed, it fails its
// check (CRC, or the length or room check) and the replay delivers it once.
TYPED_TEST(Link, LostFirstFlit) {
    using C = TypeParam;
    auto r = test_rng();
    const int per_pkt = C::H + 512 / C::W + 1;
    for (int pk = 1; pk < 4; ++pk) {
        SCOPED_TRACE("packet " + std::to_string(pk));
        auto p = directed<C>(r, pk * per_pkt, [](Flit& f) { f = Flit{}; });
        if (::testing::Test::HasFatalFailure()) return;
        expect_one_retransmission(*p);
        EXPECT_EQ(p->ev(1).rx_pkt, default_stream<C>().size());
        EXPECT_EQ(p->ev(1).ctl_drop, 1u);
        EXPECT_LE(p->sb(0).bad, 1u);
        EXPECT_EQ(p->ev(0).link_down + p->ev(1).link_down, 0u);
    }
}

// The CRC flit of a packet is lost: the receiver holds the last data flit, sees no signal where
// the CRC should be, ends the packet bad and NACKs; the replay delivers it once.
TYPED_TEST(Link, LostCrcFlit) {
    using C = TypeParam;
    auto r = test_rng();
    const int per_pkt = C::H + 512 / C::W + 1;
    auto p = directed<C>(r, 3 * per_pkt - 1, [](Flit& f) { f = Flit{}; });
    if (::testing::Test::HasFatalFailure()) return;
    expect_one_retransmission(*p);
    EXPECT_EQ(p->sb(0).bad, 1u);
    EXPECT_EQ(p->ev(1).ctl_drop, 0u);
}

// A good packet whose error pattern has the stomp value as its CRC syndrome (here: the CRC flit
// inverted, still with the data sync code) is a CRC error and replayed, not taken as stomped (and
// lost): a stomp needs the stomp sync code as well (found by a BitErrors1e4 seed: two flipped bits
// of a 31-flit packet whose syndrome was the stomp value). The stomp sync code on a good CRC, or
// anywhere but the CRC flit, is an error too.
TYPED_TEST(Link, StompNeedsBothMarks) {
    using C = TypeParam;
    const int per_pkt = C::H + 512 / C::W + 1;
    const std::pair<const char*, std::function<void(Flit&)>> cases[] = {
        {"CRC inverted, data sync code", [](Flit& f) { f = C::make(VELO_LINK_SYNC_DATA, C::data(f) ^ 0xFFFFu); }},
        {"good CRC, stomp sync code", [](Flit& f) { f = C::make(VELO_LINK_SYNC_STOMP, C::data(f)); }},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.first);
        auto r = test_rng();
        auto p = directed<C>(r, 3 * per_pkt - 1, c.second);
        if (::testing::Test::HasFatalFailure()) return;
        expect_one_retransmission(*p);
        EXPECT_EQ(p->sb(0).bad, 1u);
        EXPECT_EQ(p->ev(1).stomp, 0u);
    }
    {
        SCOPED_TRACE("stomp sync code on a header flit");
        auto r = test_rng();
        auto p = directed<C>(r, 2 * per_pkt, [](Flit& f) { f = C::make(VELO_LINK_SYNC_STOMP, C::data(f)); });
        if (::testing::Test::HasFatalFailure()) return;
        expect_one_retransmission(*p);
        EXPECT_EQ(p->ev(1).stomp, 0u);
    }
}

// A control code where a CRC flit is due (one sync bit turns a stomped CRC flit, code 11, into
// 10) is a corrupted CRC flit: the packet fails and is replayed, and the symbol is not acted on,
// even when its 16 bits make a valid control symbol: here a TS1, which would take the link down
// (as it did with SEED=38291412652834 of W16 BitErrors1e4).
TYPED_TEST(Link, ControlCodeWhereTheCrcIsDue) {
    using C = TypeParam;
    const int per_pkt = C::H + 512 / C::W + 1;
    auto crc5 = [](unsigned d11) {
        unsigned c = VELO_LINK_CRC5_INIT;
        for (int i = 10; i >= 0; --i) {
            const unsigned fb = ((c >> 4) ^ (d11 >> i)) & 1u;
            c = ((c << 1) & 0x1Fu) ^ (fb ? static_cast<unsigned>(VELO_LINK_CRC5_POLY) : 0u);
        }
        return c;
    };
    const unsigned hi11 = (VELO_LINK_CTL_TYPE_LINK << 9) | (VELO_LINK_SUB_TS1 << 7);  // TS1, TS_SEQ 0
    const uint64_t ts1 = (static_cast<uint64_t>(hi11) << 5) | crc5(hi11);
    auto r = test_rng();
    auto p = directed<C>(r, 3 * per_pkt - 1, [&](Flit& f) { f = C::make(VELO_LINK_SYNC_CTL, ts1); });
    if (::testing::Test::HasFatalFailure()) return;
    expect_one_retransmission(*p);
    EXPECT_EQ(p->sb(0).bad, 1u);
    EXPECT_EQ(p->ev(1).ctl_drop, 0u);
    EXPECT_EQ(p->ev(0).link_down + p->ev(1).link_down, 0u);
}

// The last packet of a burst is lost entirely (every flit, CRC included): the receiver sees
// nothing wrong (the lost flits are dropped symbols between packets) and nothing follows to show
// a sequence gap; the transmitter replays it after REPLAY_TIMEOUT cycles without ACK progress.
TYPED_TEST(Link, LostLastPacketReplayedAfterTimeout) {
    using C = TypeParam;
    auto r = test_rng();
    Pair<C> p(r, clean_channel(r));
    p.bring_up();
    const int per_pkt = C::H + 512 / C::W + 1;
    for (unsigned i = 0; i < 3; ++i) p.add(0, fixed_pkt<C>(i + 1, 64, 1));
    int seen = 0;
    int64_t t_lost = -1;
    p.tamper = [&](int dir, Flit& f) {
        if (dir != 0 || C::sync(f) != VELO_LINK_SYNC_DATA) return;
        if (seen >= 2 * per_pkt && seen < 3 * per_pkt) {
            f = Flit{};
            t_lost = static_cast<int64_t>(p.cycle());
        }
        ++seen;
    };
    p.run_until_done(5000);
    EXPECT_EQ(p.sb(0).good, 3u);
    EXPECT_EQ(p.sb(0).bad, 0u);
    EXPECT_EQ(p.ev(1).crc_err, 0u);
    EXPECT_EQ(p.ev(1).nack, 0u);
    EXPECT_EQ(p.ev(1).ctl_drop, static_cast<uint64_t>(per_pkt));
    EXPECT_EQ(p.ev(0).replay, 2u);
    EXPECT_GE(static_cast<int64_t>(p.cycle()) - t_lost, static_cast<int64_t>(C::kReplayTimeout));
    EXPECT_LE(static_cast<int64_t>(p.cycle()) - t_lost, static_cast<int64_t>(C::kReplayTimeout) + 200);
}

// ------------------------------------------------------------------------------ retransmission timing
// One retransmission step by step (a traces the symbols on both wires): a -> b three 8-byte (or
// 64-byte) VELO packets P0 P1 P2 on VC 0, or three largest RMA packets (MAX_AREA bytes of area:
// the replay of a maximum-size packet) on VCs 0, 1, 2, one bit of P1's first payload flit flipped
// on the wire. Asserted: b
// sends NACK(1) 2 cycles after P1's CRC flit arrived; a sends REPLAY(1) 2 cycles after the NACK
// arrived (3 if a CRC flit was due); the replayed P1 follows the REPLAY on the wire at once (no
// wait for the SYNCs); b answers the REPLAY with one SYNC per VC, twice, the first 2 cycles after
// it arrived, before anything else; P1 is delivered bad once (the cut-through copy) and then good,
// P2 behind it; and the delay of P1 against the same run without the error is exactly
// 2 L + F + 5 cycles (L wire latency, F = P1's flits incl. CRC), for L = 1, 2, 5 and 10.
struct WireSym {
    uint64_t cyc;
    unsigned sync, type, sub, val;
};

template <class C>
struct Timeline {
    std::vector<WireSym> wire[2];  // symbols driven by a (0) and b (1)
    std::vector<uint64_t> arrive;  // cycles data-sync flits arrived at b
    uint64_t p1_good = 0;          // cycle P1 was delivered good by b's receiver
    uint64_t p1_crc_at_b = 0;      // cycle P1's (first) CRC flit arrived at b
    unsigned good = 0, bad = 0;
};

template <class C>
Timeline<C> retransmission_run(unsigned lat, unsigned len, bool flip, bool rma = false) {
    std::mt19937_64 r(77);
    ChannelConfig ch = clean_channel(r);
    ch.latency = lat;
    Pair<C> p(r, ch);
    p.bring_up();
    p.run(40);
    Timeline<C> t;
    const int per_pkt = C::H + static_cast<int>((len + C::FB - 1) / C::FB) + 1;
    // VELO packets on VC 0; RMA packets (largest ones) on VCs 0, 1, 2 (one VC holds one of them)
    for (unsigned i = 0; i < 3; ++i) p.add(0, fixed_pkt<C>(i + 1, len, rma ? i : 0, rma));
    int seen = 0;
    p.tamper = [&](int dir, Flit& f) {
        if (dir != 0 || C::sync(f) != VELO_LINK_SYNC_DATA) return;
        if (seen == 2 * per_pkt - 1) t.p1_crc_at_b = p.cycle();
        if (flip && seen == per_pkt + C::H) C::flip(f, 3);
        t.arrive.push_back(p.cycle());
        ++seen;
    };
    p.on_wire = [&](int dir, const Flit& f) {
        const uint64_t d = C::data(f);
        t.wire[dir].push_back(WireSym{p.cycle(), C::sync(f), static_cast<unsigned>((d >> 14) & 3),
                                      static_cast<unsigned>((d >> 12) & 3), static_cast<unsigned>((d >> 5) & 127)});
    };
    for (uint64_t i = 0; i < 2000 && !p.done(); ++i) {
        p.step();
        if (t.p1_good == 0 && p.sb(0).good >= 2) t.p1_good = p.cycle();
    }
    EXPECT_TRUE(p.done());
    p.run(40);  // the symbols that follow
    t.good = static_cast<unsigned>(p.sb(0).good);
    t.bad = static_cast<unsigned>(p.sb(0).bad);
    return t;
}

// first symbol of direction dir at or after cycle c matching pred
template <class C, class F>
const WireSym* find_sym(const Timeline<C>& t, int dir, uint64_t c, F pred) {
    for (const WireSym& w : t.wire[dir])
        if (w.cyc >= c && pred(w)) return &w;
    return nullptr;
}

TYPED_TEST(Link, RetransmissionTimelineAndPenalty) {
    using C = TypeParam;
    for (unsigned sel : {8u, 64u, static_cast<unsigned>(C::A) + 1})
        for (unsigned lat : {1u, 2u, 5u, 10u}) {
            // the third case: RMA packets of MAX_AREA bytes (the largest packet) on three VCs
            const bool rma = sel > static_cast<unsigned>(C::A);
            const unsigned len = rma ? static_cast<unsigned>(C::A) : sel;
            const int per_pkt = C::H + static_cast<int>((len + C::FB - 1) / C::FB) + 1;
            SCOPED_TRACE(std::to_string(len) + "-byte " + (rma ? "RMA" : "VELO") + " packets, wire latency " +
                         std::to_string(lat));
            Timeline<C> clean = retransmission_run<C>(lat, len, false, rma);
            Timeline<C> t = retransmission_run<C>(lat, len, true, rma);
            if (::testing::Test::HasFatalFailure()) return;
            EXPECT_EQ(clean.good, 3u);
            EXPECT_EQ(clean.bad, 0u);
            EXPECT_EQ(t.good, 3u);
            EXPECT_EQ(t.bad, 1u);
            auto is_link = [](const WireSym& w, unsigned sub) {
                return w.sync == VELO_LINK_SYNC_CTL && w.type == 0 && w.sub == sub;
            };
            const WireSym* nack =
                find_sym(t, 1, t.p1_crc_at_b, [&](const WireSym& w) { return is_link(w, VELO_LINK_SUB_NACK); });
            ASSERT_NE(nack, nullptr);
            EXPECT_EQ(nack->cyc, t.p1_crc_at_b + 2 + TypeParam::kPipe) << "NACK after the CRC flit";
            EXPECT_EQ(nack->val, 1u);
            const WireSym* rep =
                find_sym(t, 0, nack->cyc, [&](const WireSym& w) { return is_link(w, VELO_LINK_SUB_REPLAY); });
            ASSERT_NE(rep, nullptr);
            EXPECT_EQ(rep->val, 1u);
            EXPECT_GE(rep->cyc, nack->cyc + lat + 2 + TypeParam::kPipe) << "REPLAY after the NACK arrived";
            EXPECT_LE(rep->cyc, nack->cyc + lat + 3 + TypeParam::kPipe);
            // the replay follows the REPLAY at once: the next data flit on a's wire is P1's header,
            // within 2 cycles (the replay buffer's read), whatever the SYNCs do
            const WireSym* d1 =
                find_sym(t, 0, rep->cyc + 1, [](const WireSym& w) { return w.sync == VELO_LINK_SYNC_DATA; });
            ASSERT_NE(d1, nullptr);
            EXPECT_LE(d1->cyc, rep->cyc + 2);
            // b: one SYNC per VC, twice, the first 2 cycles after the REPLAY arrived, back to back,
            // the second round with the same values
            const uint64_t rep_at_b = rep->cyc + lat;
            const WireSym* sy =
                find_sym(t, 1, rep_at_b, [](const WireSym& w) { return w.sync == VELO_LINK_SYNC_CTL && w.type == 3; });
            ASSERT_NE(sy, nullptr);
            const size_t at = static_cast<size_t>(sy - t.wire[1].data());
            ASSERT_LE(at + 2 * C::kNvc, t.wire[1].size());
            for (unsigned v = 0; v < 2 * C::kNvc; ++v) {
                const WireSym& w = t.wire[1][at + v];
                EXPECT_EQ(w.cyc, rep_at_b + 2 + TypeParam::kPipe + v);
                EXPECT_EQ(w.type, 3u) << "SYNC " << v;
                EXPECT_EQ(w.sub, v % C::kNvc);
                EXPECT_EQ(w.val, t.wire[1][at + v % C::kNvc].val);
            }
            // penalty
            ASSERT_NE(clean.p1_good, 0u);
            ASSERT_NE(t.p1_good, 0u);
            const uint64_t pen = t.p1_good - clean.p1_good;
            std::printf("[ info  ] W%d wire latency %u: retransmission penalty %llu cycles (P1 %d flits)\n", C::W, lat,
                        static_cast<unsigned long long>(pen), per_pkt);
            EXPECT_EQ(pen, 2 * lat + static_cast<unsigned>(per_pkt) + 5 + 2 * TypeParam::kPipe);
        }
}
