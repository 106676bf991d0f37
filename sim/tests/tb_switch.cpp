// The NIC's cut-through crossbar switch (velo_switch) and its round-robin arbiter (velo_rr_arb).
//
// The bench surrounds the switch with C++ models of its neighbours: a link receiver per network
// input (random packets, one at a time, random gaps, credits per VC returned by in_free, virtual
// cut-through: a packet starts only with credits for a whole one), the requester on the local
// input (valid/ready), a link transmitter per network output (out_start_ok from a credit count per
// VC of the next hop, random out_ready stalls also mid-packet) and the completer on the local
// output (random back pressure). A scoreboard checks every packet: right output, byte-exact, route
// shifted, VC per the dateline rule, in order per (input, VC, output), exactly once, bad flag kept;
// invalid routes dropped and counted; credits returned exactly. Models with MAX_AREA 256 (the NIC
// with RMA) carry mixed traffic: 64-byte-area VELO-sized packets and RMA-sized ones of up to 256
// bytes of area (MAX_PKT_FLITS 132 / 33 flits at 16 / 64 bits).
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "Vrr_arb.h"
#include "Vrr_arb_params.h"
#include "Vsw_p2.h"
#include "Vsw_p2_params.h"
#include "Vsw_p2d.h"
#include "Vsw_p2d_params.h"
#include "Vsw_p2r.h"
#include "Vsw_p2r_params.h"
#include "Vsw_p2w.h"
#include "Vsw_p2w_params.h"
#include "Vsw_p2wr.h"
#include "Vsw_p2wr_params.h"
#include "Vsw_p4.h"
#include "Vsw_p4_params.h"
#include "Vsw_p4r.h"
#include "Vsw_p4r_params.h"
#include "harness.hpp"

using velo::sim::Harness;
using velo::sim::pct;
using velo::sim::rnd;
using velo::sim::test_rng;

namespace {

// ------------------------------------------------------------------------------ signal access
uint64_t mask(int w) {
    return w >= 64 ? ~0ull : ((1ull << w) - 1);
}
template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
uint64_t getb(const T& s, int lsb, int w) {
    return (static_cast<uint64_t>(s) >> lsb) & mask(w);
}
template <std::size_t N>
uint64_t getb(const VlWide<N>& s, int lsb, int w) {
    uint64_t v = 0;
    for (int b = 0; b < w;) {
        const int wi = (lsb + b) / 32, bi = (lsb + b) % 32;
        const int n = std::min(32 - bi, w - b);
        v |= ((static_cast<uint64_t>(s[wi]) >> bi) & mask(n)) << b;
        b += n;
    }
    return v;
}
template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
void setb(T& s, int lsb, int w, uint64_t v) {
    uint64_t cur = static_cast<uint64_t>(s);
    cur &= ~(mask(w) << lsb);
    cur |= (v & mask(w)) << lsb;
    s = static_cast<T>(cur);
}
template <std::size_t N>
void setb(VlWide<N>& s, int lsb, int w, uint64_t v) {
    for (int b = 0; b < w;) {
        const int wi = (lsb + b) / 32, bi = (lsb + b) % 32;
        const int n = std::min(32 - bi, w - b);
        const uint32_t m = static_cast<uint32_t>(mask(n) << bi);
        s[wi] = (s[wi] & ~m) | (static_cast<uint32_t>(((v >> b) & mask(n)) << bi) & m);
        b += n;
    }
}

// ------------------------------------------------------------------------------ configurations
// each from its model's PARAMS in sim/cmake/switch.cmake (<model>_params.h)
template <class Model>
struct SwitchCfg {
    using M = Model;
    using P = velo::sim::ModelParams<Model>;
    static constexpr int NP = P::NP, W = P::LINK_W, DEPTH = P::VC_DEPTH, PB = P::PB, AREA = P::MAX_AREA;
};
struct P2 : SwitchCfg<Vsw_p2> {};    // ring node
struct P4 : SwitchCfg<Vsw_p4> {};    // 2D torus node
struct P2W : SwitchCfg<Vsw_p2w> {};  // wide links
// 32-bit links, a FIFO depth that is not a power of two, 3-bit route codes
struct P2D : SwitchCfg<Vsw_p2d> {};
// MAX_AREA 256 with velo_nic's buffers for it (VC_DEPTH 192 at 16 bits, 88 at 64)
struct P2R : SwitchCfg<Vsw_p2r> {};    // ring node with RMA
struct P4R : SwitchCfg<Vsw_p4r> {};    // 2D torus node with RMA
struct P2WR : SwitchCfg<Vsw_p2wr> {};  // wide links with RMA

// a packet to inject: chosen by a test's traffic generator
struct Spec {
    int vc = 0;          // header VC {class, dateline}
    uint32_t route = 0;  // 14-bit route, first code in the low PB bits
    int len = 1;         // payload area bytes 1..MAX_AREA
    bool bad = false;    // marked bad on its last flit
};

// what the scoreboard expects of an injected packet
struct Exp {
    int src = 0, vc = 0, dest = 0;  // dest: output 0..NP, -1 = dropped (invalid route)
    std::vector<uint64_t> out;      // flits as they must leave
    bool bad = false;
    uint64_t t_in = 0;  // cycle its first flit entered the switch
};

struct Knobs {
    int in_gap = 10;      // % of cycles a link receiver has no flit for the switch
    int lin_gap = 10;     // % of cycles the requester pauses
    int out_stall = 10;   // % of cycles a link transmitter is not ready
    int lout_stall = 10;  // % of cycles the completer is not ready
    int credit_ret = 70;  // % of cycles the next hop frees some buffer
    int sok_flicker = 0;  // % of cycles out_start_ok drops for no reason (link busy replaying)
    int noise_bad = 20;   // % of non-last flits with in_bad set (must be ignored)
    bool inject = true;   // generate new packets
    bool lout_hold = false;
    bool ignore_credits = false;  // violate the credit protocol (error path tests)
    bool unlimited_down = false;  // the next hop always has room (no credit limits on outputs)
};

template <class C>
class Bench {
  public:
    using M = typename C::M;
    static constexpr int NP = C::NP, W = C::W, DEPTH = C::DEPTH, PB = C::PB;
    static constexpr int NVC = 4, MAXF = 64 / W + C::AREA * 8 / W, HF = 64 / W, BPF = W / 8;
    static constexpr int NCODES = 1 << PB;

    // traffic generator: (source port, VCs allowed by credits) -> packet to inject, if any
    std::function<std::optional<Spec>(int, unsigned)> gen;
    Knobs k;
    std::array<int, NP> dim{};
    std::array<int, NP> dateline{};
    std::array<std::array<bool, NVC>, NP> block{};  // out_start_ok held low per (output, VC)

    explicit Bench(std::mt19937_64& r) : rng_(r) {
        h_->in_valid = 0;
        h_->lin_valid = 0;
        h_->out_ready = 0;
        h_->lout_ready = 0;
        h_->out_start_ok = 0;
        h_->port_dim = 0;
        h_->port_dateline = 0;
        h_.reset();
        for (auto& o : out_)
            for (auto& d : o.down) d = DEPTH;
    }

    M* operator->() { return &h_.top(); }
    uint64_t cycle() const { return cyc_; }

    // ---- expectations of the contract's routing rules
    int dest_of(uint32_t route) const {
        int code = static_cast<int>(route & (NCODES - 1));
        return code > NP ? -1 : code;
    }
    int vc_out(int src, int vc, int dest) const {
        if (dest == 0) return vc;
        int dl = dateline[dest - 1] | ((vc & 1) && src != 0 && dim[src - 1] == dim[dest - 1]);
        return (vc & 2) | dl;
    }

    // build the flits of a packet and its expectation
    std::vector<uint64_t> build(int src, const Spec& s, Exp& e) {
        const uint32_t id = next_id_++;
        uint64_t hdr = static_cast<uint64_t>(s.vc & 3) | (static_cast<uint64_t>(s.route & 0x3FFF) << 2) |
                       (static_cast<uint64_t>(id) << 16) | ((rng_() & 0xFF) << 48) |
                       (static_cast<uint64_t>(s.len - 1) << 56) | ((rng_() & 1) << 62);
        std::vector<uint8_t> pay(static_cast<size_t>(s.len));
        for (auto& b : pay) b = static_cast<uint8_t>(rng_());
        std::vector<uint64_t> f;
        for (int i = 0; i < HF; ++i) f.push_back((hdr >> (i * W)) & mask(W));
        for (int i = 0; i < s.len; i += BPF) {
            uint64_t v = 0;
            for (int j = 0; j < BPF && i + j < s.len; ++j) v |= static_cast<uint64_t>(pay[i + j]) << (8 * j);
            f.push_back(v);
        }
        e.src = src;
        e.vc = s.vc & 3;
        e.dest = dest_of(s.route);
        e.bad = s.bad;
        e.out = f;
        if (e.dest >= 0) {
            const uint64_t low = ((static_cast<uint64_t>((s.route & 0x3FFF) >> PB)) << 2) |
                                 static_cast<uint64_t>(vc_out(src, e.vc, e.dest));
            e.out[0] = (f[0] & ~0xFFFFull) | low;
        }
        return f;
    }

    // inject an explicit flit sequence on network port p (1..NP), bypassing the generator
    // (with an expectation, or none: e.g. a packet the switch must drop)
    void queue_raw(int p, int vc, std::vector<uint64_t> flits, std::vector<bool> bads, bool has_exp, Exp e) {
        raw_[p - 1].push_back(Raw{vc, std::move(flits), std::move(bads), has_exp, std::move(e)});
    }

    // ---- one clock cycle
    void step() {
        for (int p = 0; p < NP; ++p) drive_in(p);
        drive_lin();
        uint64_t ok = 0;
        for (int o = 0; o < NP; ++o) {
            setb(h_->out_ready, o, 1, !pct(rng_, k.out_stall));
            for (int v = 0; v < NVC; ++v) {
                bool s = out_[o + 1].down[v] >= MAXF && !block[o][v] && !(k.sok_flicker && pct(rng_, k.sok_flicker));
                if (s) ok |= 1ull << (o * NVC + v);
            }
            setb(h_->port_dim, 2 * o, 2, static_cast<uint64_t>(dim[o]));
            setb(h_->port_dateline, o, 1, static_cast<uint64_t>(dateline[o]));
        }
        setb(h_->out_start_ok, 0, NP * NVC, ok);
        h_->lout_ready = !k.lout_hold && !pct(rng_, k.lout_stall);
        h_.eval();

        sample_in();
        sample_lin();
        for (int o = 0; o <= NP; ++o) sample_out(o);
        if (h_->ev_bad_route) ++ev_bad_route;
        if (h_->ev_overflow) ++ev_overflow;
        for (int o = 0; o < NP; ++o) ev_credit_stall[o] += getb(h_->ev_credit_stall, o, 1);
        prev_ok_ = ok;
        // the next hop frees buffer space
        for (auto& o : out_) {
            if (k.unlimited_down) o.down.fill(DEPTH);
            if (!pct(rng_, k.credit_ret)) continue;
            int v = rnd(rng_, NVC);
            o.down[v] = std::min(DEPTH, o.down[v] + 1 + rnd(rng_, 4));
        }
        h_.tick();
        ++cyc_;
    }

    void run(uint64_t n) {
        for (uint64_t i = 0; i < n && !::testing::Test::HasFatalFailure(); ++i) step();
    }

    bool idle_inputs() const {
        for (auto& s : in_)
            if (s.busy) return false;
        for (auto& r : raw_)
            if (!r.empty()) return false;
        return !lin_.busy;
    }
    // nothing in flight: all inputs idle, every packet arrived, every credit back
    bool settled() const {
        if (!idle_inputs() || !pend_.empty()) return false;
        for (auto& st : in_)
            for (int v = 0; v < NVC; ++v)
                if (st.freed[v] != st.sent[v]) return false;
        return true;
    }
    // run (generating as the knobs say) until done() holds
    bool run_until(uint64_t max_cycles, std::function<bool()> done) {
        for (uint64_t i = 0; i < max_cycles && !::testing::Test::HasFatalFailure(); ++i) {
            if (done()) return true;
            step();
        }
        return false;
    }
    // stop generating, run until every injected packet has left (or pred says done)
    bool drain(uint64_t max_cycles, std::function<bool()> done = nullptr) {
        k.inject = false;
        for (uint64_t i = 0; i < max_cycles && !::testing::Test::HasFatalFailure(); ++i) {
            if (done ? done() : settled()) return true;
            step();
        }
        return false;
    }

    // end-of-test checks: nothing left, credits exact, drops counted exactly
    void check_end(int expect_overflow = 0) {
        EXPECT_TRUE(pend_.empty()) << pend_.size() << " packets never arrived";
        for (auto& [key, q] : order_) EXPECT_TRUE(q.empty()) << "ordering queue not empty";
        for (int p = 0; p < NP; ++p)
            for (int v = 0; v < NVC; ++v)
                EXPECT_EQ(in_[p].freed[v], in_[p].sent[v]) << "credits of port " << p + 1 << " VC " << v;
        EXPECT_EQ(ev_bad_route, dropped_) << "bad-route drops counted";
        EXPECT_EQ(ev_overflow, static_cast<uint64_t>(expect_overflow)) << "overflow events";
        for (int o = 0; o <= NP; ++o) EXPECT_FALSE(out_[o].in_pkt) << "output " << o << " stopped mid-packet";
    }

    // ---- statistics and logs
    uint64_t ev_bad_route = 0, ev_overflow = 0, dropped_ = 0, delivered = 0, injected = 0;
    std::array<uint64_t, NP> ev_credit_stall{};
    std::array<std::vector<std::pair<int, int>>, NP + 1> log;  // per output: (src, vc) of each packet
    std::array<std::vector<uint64_t>, NP + 1> hdr_cycle;       // per output: cycle each header appeared
    std::array<std::vector<uint64_t>, NP + 1> last_cycle;      // per output: cycle each last flit left
    uint64_t lat_min = ~0ull, lat_max = 0;
    uint64_t last_t_in = 0;                                         // cycle the newest packet entered
    bool rec = false;                                               // record flit timing:
    std::array<std::vector<uint64_t>, NP + 1> in_flits, out_flits;  // cycles flits entered / left
    std::map<std::tuple<int, int, int>, uint64_t> got;              // (src, vc, dest) -> packets delivered
    size_t pending() const { return pend_.size(); }
    // pending packets matching a predicate
    size_t pending_if(std::function<bool(const Exp&)> f) const {
        size_t n = 0;
        for (auto& [id, e] : pend_) n += f(e);
        return n;
    }
    // direct access to the link receiver's credit view of port p (1..NP)
    int64_t credits(int p, int v) const { return DEPTH - (in_[p - 1].sent[v] - in_[p - 1].freed[v]); }
    std::array<int, NVC>& down(int o) { return out_[o].down; }
    bool in_busy(int p) const { return in_[p - 1].busy || !raw_[p - 1].empty(); }

  private:
    struct InSt {
        bool busy = false;
        std::vector<uint64_t> fl;
        std::vector<bool> bads;  // in_bad per flit
        int vc = 0;
        size_t k = 0;
        bool has_e = false;
        Exp e;
        std::array<int64_t, NVC> sent{}, freed{};
    };
    struct LinSt {
        bool busy = false, offer = false;
        std::vector<uint64_t> fl;
        size_t k = 0;
        Exp e;
    };
    struct OutSt {
        std::array<int, NVC> down{};
        bool in_pkt = false;  // a header was offered, the last flit not yet taken
        std::vector<uint64_t> fl;
        bool prev_v = false, prev_r = false, prev_l = false, prev_b = false;
        uint64_t prev_d = 0;
        int vc = 0;
    };
    struct Raw {
        int vc;
        std::vector<uint64_t> fl;
        std::vector<bool> bads;
        bool has_e;
        Exp e;
    };

    void expect_packet(uint32_t id, Exp e) {
        ++injected;
        last_t_in = e.t_in;
        if (e.dest < 0) {
            ++dropped_;
            dropped_ids_.insert(id);
            return;
        }
        order_[{e.src, e.vc, e.dest}].push_back(id);
        pend_.emplace(id, std::move(e));
    }
    static uint32_t id_of(const std::vector<uint64_t>& f) {
        uint64_t hdr = 0;
        for (int i = 0; i < HF && i < static_cast<int>(f.size()); ++i) hdr |= f[i] << (i * W);
        return static_cast<uint32_t>(hdr >> 16);
    }

    void drive_in(int p) {
        InSt& s = in_[p];
        if (!s.busy && !raw_[p].empty()) {
            Raw r = std::move(raw_[p].front());
            raw_[p].pop_front();
            s.busy = true;
            s.fl = std::move(r.fl);
            s.bads = std::move(r.bads);
            s.vc = r.vc;
            s.k = 0;
            s.has_e = r.has_e;
            s.e = std::move(r.e);
        }
        if (!s.busy && k.inject && gen) {
            unsigned okm = 0;
            for (int v = 0; v < NVC; ++v)
                if (k.ignore_credits || DEPTH - (s.sent[v] - s.freed[v]) >= MAXF) okm |= 1u << v;
            if (okm) {
                if (auto sp = gen(p + 1, okm)) {
                    Exp e;
                    s.fl = build(p + 1, *sp, e);
                    s.bads.assign(s.fl.size(), false);
                    for (size_t i = 0; i + 1 < s.fl.size(); ++i) s.bads[i] = pct(rng_, k.noise_bad);
                    s.bads.back() = sp->bad;
                    s.vc = sp->vc;
                    s.k = 0;
                    s.has_e = true;
                    s.e = std::move(e);
                    s.busy = true;
                }
            }
        }
        const bool send = s.busy && !pct(rng_, k.in_gap);
        setb(h_->in_valid, p, 1, send);
        if (!send) return;
        setb(h_->in_data, p * W, W, s.fl[s.k]);
        setb(h_->in_last, p, 1, s.k + 1 == s.fl.size());
        setb(h_->in_bad, p, 1, s.bads[s.k]);
        setb(h_->in_vc, 2 * p, 2, static_cast<uint64_t>(s.vc));
        ++s.sent[s.vc];
        if (rec) in_flits[p + 1].push_back(cyc_);
        if (s.k == 0 && s.has_e) {
            s.e.t_in = cyc_;
            expect_packet(id_of(s.fl), std::move(s.e));
            s.has_e = false;
        }
        if (++s.k == s.fl.size()) s.busy = false;
    }

    void sample_in() {
        for (int p = 0; p < NP; ++p)
            for (int v = 0; v < NVC; ++v)
                if (getb(h_->in_free, p * NVC + v, 1)) {
                    ++in_[p].freed[v];
                    ASSERT_LE(in_[p].freed[v], in_[p].sent[v])
                        << "in_free for a flit never sent: port " << p + 1 << " VC " << v;
                }
    }

    void drive_lin() {
        LinSt& s = lin_;
        if (!s.busy && k.inject && gen) {
            if (auto sp = gen(0, 0xF)) {
                s.fl = build(0, *sp, s.e);
                s.e.bad = false;  // the local input has no bad flag
                s.k = 0;
                s.busy = true;
            }
        }
        if (s.busy && !s.offer) s.offer = !pct(rng_, k.lin_gap);
        h_->lin_valid = s.offer;
        if (s.offer) {
            setb(h_->lin_data, 0, W, s.fl[s.k]);
            h_->lin_last = s.k + 1 == s.fl.size();
        }
    }

    void sample_lin() {
        LinSt& s = lin_;
        if (!(s.offer && h_->lin_ready)) return;
        if (rec) in_flits[0].push_back(cyc_);
        if (s.k == 0) {
            s.e.t_in = cyc_;
            expect_packet(id_of(s.fl), s.e);
        }
        s.offer = false;
        if (++s.k == s.fl.size()) s.busy = false;
    }

    void sample_out(int o) {
        OutSt& s = out_[o];
        bool v, r, l, b;
        uint64_t d;
        if (o == 0) {
            v = h_->lout_valid;
            r = h_->lout_ready;
            l = h_->lout_last;
            b = h_->lout_bad;
            d = getb(h_->lout_data, 0, W);
        } else {
            v = getb(h_->out_valid, o - 1, 1);
            r = getb(h_->out_ready, o - 1, 1);
            l = getb(h_->out_last, o - 1, 1);
            b = getb(h_->out_bad, o - 1, 1);
            d = getb(h_->out_data, (o - 1) * W, W);
        }
        // valid/ready: an offered flit stays, unchanged, until taken
        if (s.prev_v && !s.prev_r) {
            ASSERT_TRUE(v) << "output " << o << ": valid dropped before the flit was taken, cycle " << cyc_;
            ASSERT_EQ(d, s.prev_d) << "output " << o << ": data changed while stalled";
            ASSERT_EQ(l, s.prev_l) << "output " << o << ": last changed while stalled";
            ASSERT_EQ(b, s.prev_b) << "output " << o << ": bad changed while stalled";
        }
        if (v && !s.in_pkt) {
            // a new packet's header appears: a network output must have been allowed to start it
            // (the switch samples out_start_ok in the cycle before the header appears)
            s.in_pkt = true;
            s.vc = static_cast<int>(d & 3);
            hdr_cycle[o].push_back(cyc_);
            if (o > 0) {
                ASSERT_TRUE((prev_ok_ >> ((o - 1) * NVC + s.vc)) & 1)
                    << "output " << o << " started a packet on VC " << s.vc << " without out_start_ok, cycle " << cyc_;
            }
        }
        if (v && r) {
            if (o > 0) {
                ASSERT_GE(--s.down[s.vc], 0) << "output " << o << " overran the next hop's credits, VC " << s.vc;
            }
            if (!l) {
                ASSERT_FALSE(b) << "output " << o << ": bad set on a flit that is not last";
            }
            s.fl.push_back(d);
            if (rec) out_flits[o].push_back(cyc_);
            if (l) {
                last_cycle[o].push_back(cyc_);
                arrive(o, s.fl, b);
                s.fl.clear();
                s.in_pkt = false;
            }
        }
        s.prev_v = v;
        s.prev_r = r;
        s.prev_l = l;
        s.prev_b = b;
        s.prev_d = d;
    }

    void arrive(int o, const std::vector<uint64_t>& f, bool bad) {
        ASSERT_GE(static_cast<int>(f.size()), HF) << "output " << o << ": packet shorter than its header";
        const uint32_t id = id_of(f);
        ASSERT_EQ(dropped_ids_.count(id), 0u) << "packet " << id << " with an invalid route came out at " << o;
        auto it = pend_.find(id);
        ASSERT_NE(it, pend_.end()) << "output " << o << ": unknown or duplicate packet id " << id;
        const Exp& e = it->second;
        ASSERT_EQ(e.dest, o) << "packet " << id << " from port " << e.src << " left at the wrong output";
        auto& q = order_[{e.src, e.vc, e.dest}];
        ASSERT_FALSE(q.empty());
        ASSERT_EQ(q.front(), id) << "packet " << id << " overtook " << q.front() << " on (input " << e.src << ", VC "
                                 << e.vc << ", output " << o << ")";
        q.pop_front();
        ASSERT_EQ(f.size(), e.out.size()) << "packet " << id << " length";
        for (size_t i = 0; i < f.size(); ++i)
            ASSERT_EQ(f[i], e.out[i]) << "packet " << id << " flit " << i << " (input " << e.src << ", output " << o
                                      << ")";
        ASSERT_EQ(bad, e.bad) << "packet " << id << " bad flag";
        const uint64_t lat = hdr_cycle[o].back() - e.t_in;
        lat_min = std::min(lat_min, lat);
        lat_max = std::max(lat_max, lat);
        log[o].emplace_back(e.src, e.vc);
        ++got[{e.src, e.vc, o}];
        ++delivered;
        pend_.erase(it);
    }

    std::mt19937_64& rng_;
    Harness<M> h_;
    uint64_t cyc_ = 0;
    uint32_t next_id_ = 1;
    std::array<InSt, NP> in_{};
    std::array<std::deque<Raw>, NP> raw_{};
    LinSt lin_{};
    std::array<OutSt, NP + 1> out_{};
    uint64_t prev_ok_ = 0;
    std::unordered_map<uint32_t, Exp> pend_;
    std::set<uint32_t> dropped_ids_;
    std::map<std::tuple<int, int, int>, std::deque<uint32_t>> order_;
};

// pick one VC from a mask of allowed ones
int pick_vc(std::mt19937_64& rng, unsigned okm) {
    int n = __builtin_popcount(okm);
    int k = rnd(rng, n);
    for (int v = 0; v < 4; ++v)
        if ((okm >> v) & 1) {
            if (k-- == 0) return v;
        }
    return 0;
}

// a random route whose first code is `code` (later hops random)
template <class C>
uint32_t route_with(std::mt19937_64& rng, int code) {
    return ((static_cast<uint32_t>(rng()) << C::PB) | static_cast<uint32_t>(code)) & 0x3FFF;
}

// ------------------------------------------------------------------------------ random all to all
template <class C>
void all_to_all(int packets_per_input) {
    auto rng = test_rng();
    Bench<C> b(rng);
    constexpr int NP = C::NP, NCODES = 1 << C::PB;
    for (int p = 0; p < NP; ++p) {
        b.dim[p] = rnd(rng, 4);
        b.dateline[p] = rnd(rng, 2);
    }
    std::array<int, NP + 1> left;
    left.fill(packets_per_input);
    b.gen = [&](int src, unsigned okm) -> std::optional<Spec> {
        if (left[src] == 0) return std::nullopt;
        --left[src];
        Spec s;
        s.vc = pick_vc(rng, okm);
        int code = rnd(rng, NP + 1);
        if (NCODES - 1 > NP && pct(rng, 3)) code = NP + 1 + rnd(rng, NCODES - 1 - NP);  // invalid
        s.route = route_with<C>(rng, code);
        // VELO-sized packets (up to 64 bytes), and with MAX_AREA 256 RMA-sized ones too
        if (C::AREA > 64 && pct(rng, 40))
            s.len = pct(rng, 30) ? C::AREA : 1 + rnd(rng, C::AREA);
        else
            s.len = pct(rng, 30) ? 64 : 1 + rnd(rng, 64);
        s.bad = src != 0 && pct(rng, 5);
        return s;
    };
    // phases with different pressure: free flowing, heavy output stalls, credit starvation,
    // local output back pressure, bursty links
    uint64_t cyc = 0;
    while (!b.idle_inputs() || cyc == 0 || std::any_of(left.begin(), left.end(), [](int x) { return x > 0; })) {
        b.k.in_gap = rnd(rng, 4) == 0 ? 0 : rnd(rng, 60);
        b.k.lin_gap = rnd(rng, 50);
        b.k.out_stall = rnd(rng, 4) == 0 ? 0 : rnd(rng, 70);
        b.k.lout_stall = rnd(rng, 4) == 0 ? 95 : rnd(rng, 50);
        b.k.credit_ret = 20 + rnd(rng, 80);
        b.k.sok_flicker = rnd(rng, 3) == 0 ? rnd(rng, 30) : 0;
        b.run(2000);
        if (::testing::Test::HasFatalFailure()) return;
        cyc += 2000;
        ASSERT_LT(cyc, static_cast<uint64_t>(packets_per_input) * 400) << "traffic does not progress";
    }
    b.k = Knobs{};
    ASSERT_TRUE(b.drain(200000)) << b.pending() << " packets stuck";
    b.check_end();
    // every (input, output) pair carried traffic, and the drop path was used
    for (int s = 0; s <= NP; ++s)
        for (int o = 0; o <= NP; ++o) {
            uint64_t n = 0;
            for (int v = 0; v < 4; ++v) {
                auto it = b.got.find({s, v, o});
                if (it != b.got.end()) n += it->second;
            }
            EXPECT_GT(n, 0u) << "no packet from " << s << " to " << o;
        }
    if (NCODES - 1 > NP) {
        EXPECT_GT(b.dropped_, 0u);
    }
    std::printf(
        "[ switch] NP=%d W=%d: %llu packets delivered, %llu dropped (bad route), %llu cycles, "
        "header latency %llu..%llu cycles\n",
        NP, C::W, static_cast<unsigned long long>(b.delivered), static_cast<unsigned long long>(b.dropped_),
        static_cast<unsigned long long>(b.cycle()), static_cast<unsigned long long>(b.lat_min),
        static_cast<unsigned long long>(b.lat_max));
}

}  // namespace

TEST(Switch, AllToAllNp2) {
    all_to_all<P2>(2500);
}
TEST(Switch, AllToAllNp4) {
    all_to_all<P4>(1500);
}
TEST(Switch, AllToAllWide64) {
    all_to_all<P2W>(2500);
}
TEST(Switch, AllToAllDepth40Link32) {
    all_to_all<P2D>(2500);
}
TEST(Switch, AllToAllNp2Area256) {
    all_to_all<P2R>(1500);
}
TEST(Switch, AllToAllNp4Area256) {
    all_to_all<P4R>(800);
}
TEST(Switch, AllToAllWide64Area256) {
    all_to_all<P2WR>(2000);
}

namespace {

// a generator that injects a fixed list of packets per source, in order
struct Script {
    std::array<std::deque<Spec>, 8> q;
    std::optional<Spec> next(int src, unsigned okm) {
        if (q[src].empty() || !((okm >> q[src].front().vc) & 1)) return std::nullopt;
        Spec s = q[src].front();
        q[src].pop_front();
        return s;
    }
    bool empty() const {
        for (auto& x : q)
            if (!x.empty()) return false;
        return true;
    }
};

Knobs quiet() {
    Knobs k;
    k.in_gap = k.lin_gap = k.out_stall = k.lout_stall = k.noise_bad = 0;
    k.credit_ret = 100;
    k.unlimited_down = true;
    return k;
}

// ------------------------------------------------------------------------------ latency
// Header flit in at an input in cycle t -> on the output in cycle t+2 (idle output, start
// allowed), for every (input, output) pair; then every flit 2 cycles after it came in (cut-through
// at full rate); packets queued in an input leave with exactly one idle cycle between them.
template <class C>
void latency() {
    auto rng = test_rng();
    Bench<C> b(rng);
    constexpr int NP = C::NP;
    Script sc;
    b.gen = [&](int src, unsigned okm) { return sc.next(src, okm); };
    b.k = quiet();
    b.rec = true;
    for (int src = 0; src <= NP; ++src)
        for (int o = 0; o <= NP; ++o) {
            for (int r = 0; r < 2; ++r) {  // two packets back to back from the link/requester
                for (auto& v : b.in_flits) v.clear();
                for (auto& v : b.out_flits) v.clear();
                Spec s;
                s.vc = rnd(rng, 4);
                s.route = route_with<C>(rng, o);
                s.len = 1 + rnd(rng, C::AREA);
                sc.q[src].push_back(s);
                s.len = 1 + rnd(rng, C::AREA);
                sc.q[src].push_back(s);
                ASSERT_TRUE(b.run_until(2000, [&] { return sc.empty() && b.settled(); }));
                const auto& in = b.in_flits[src];
                const auto& out = b.out_flits[o];
                ASSERT_EQ(in.size(), out.size());
                ASSERT_EQ(b.hdr_cycle[o].size(), b.last_cycle[o].size());
                // every flit leaves 2 cycles after it came in, unless the output is still busy:
                // one flit per cycle, and one idle cycle after a packet's last flit. (The local
                // input stalls the requester for a cycle after a header: its skid buffer holds
                // two flits.)
                const size_t n1 = b.hdr_cycle[o].size();
                ASSERT_GE(n1, 2u);
                const uint64_t first_hdr = b.hdr_cycle[o][n1 - 2];
                ASSERT_EQ(out[0] - in[0], 2u) << "header from input " << src << " to output " << o;
                size_t first_len = 0;
                while (first_len < out.size() && out[first_len] <= b.last_cycle[o][n1 - 2]) ++first_len;
                for (size_t i = 1; i < in.size(); ++i) {
                    // local input: flits leave back to back (one cycle apart) inside a packet
                    uint64_t e = src == 0 && i != first_len
                                     ? out[i - 1] + 1
                                     : std::max(in[i] + 2, out[i - 1] + (i == first_len ? 2 : 1));
                    ASSERT_EQ(out[i], e) << "flit " << i << " from input " << src << " to output " << o;
                }
                EXPECT_EQ(first_hdr, out[0]);
            }
        }
    EXPECT_EQ(b.lat_min, 2u);

    // queued packets: block a network output, let 4 packets queue in input 1, release (short
    // ones: the link starts a packet only with credits for a longest one)
    b.block[0][0] = true;
    for (int i = 0; i < 4; ++i) {
        Spec s;
        s.vc = 0;
        s.route = route_with<C>(rng, 1);
        s.len = 1 + rnd(rng, 8);
        sc.q[1].push_back(s);
    }
    b.dateline[0] = 0;
    for (auto& v : b.last_cycle) v.clear();
    for (auto& v : b.hdr_cycle) v.clear();
    b.k.inject = true;
    b.run(400);
    ASSERT_EQ(b.pending(), 4u);
    b.block[0][0] = false;
    ASSERT_TRUE(b.drain(2000));
    ASSERT_EQ(b.hdr_cycle[1].size(), 4u);
    for (int i = 1; i < 4; ++i)
        EXPECT_EQ(b.hdr_cycle[1][i] - b.last_cycle[1][i - 1], 2u) << "one idle cycle between queued packets";
    b.check_end();
    std::printf("[ switch] NP=%d W=%d: header in -> header out %llu cycles\n", NP, C::W,
                static_cast<unsigned long long>(b.lat_min));
}

// ------------------------------------------------------------------------------ dateline rule
// Every (input, output, same dimension or not, dateline, dl_in, class): one packet each, VC out
// checked by the scoreboard against the contract's rule; coverage of all combinations asserted.
template <class C>
void dateline_table() {
    auto rng = test_rng();
    Bench<C> b(rng);
    constexpr int NP = C::NP;
    Script sc;
    b.gen = [&](int src, unsigned okm) { return sc.next(src, okm); };
    b.k = quiet();
    std::set<std::tuple<int, int, int, int>> seen;  // (same dim, dateline, dl_in, class), network in/out
    std::set<std::pair<int, int>> pairs;
    for (int cfg = 0; cfg < 6; ++cfg) {
        for (int p = 0; p < NP; ++p) {
            b.dim[p] = cfg < 2 ? 1 : (cfg < 4 ? p % 4 : rnd(rng, 4));
            b.dateline[p] = (cfg % 2) ? 1 : (cfg < 4 ? 0 : rnd(rng, 2));
        }
        for (int src = 0; src <= NP; ++src)
            for (int o = 0; o <= NP; ++o)
                for (int vc = 0; vc < 4; ++vc) {
                    Spec s;
                    s.vc = vc;
                    s.route = route_with<C>(rng, o);
                    s.len = 1 + rnd(rng, 16);
                    sc.q[src].push_back(s);
                    pairs.insert({src, o});
                    if (src > 0 && o > 0)
                        seen.insert({b.dim[src - 1] == b.dim[o - 1], b.dateline[o - 1], vc & 1, vc >> 1});
                }
        ASSERT_TRUE(b.run_until(100000, [&] { return sc.empty() && b.settled(); }));
    }
    b.check_end();
    EXPECT_EQ(seen.size(), 16u) << "every (same dim, dateline, dl_in, class) combination";
    EXPECT_EQ(pairs.size(), static_cast<size_t>((NP + 1) * (NP + 1)));
    EXPECT_EQ(b.delivered, static_cast<uint64_t>(6 * (NP + 1) * (NP + 1) * 4));
}

// ------------------------------------------------------------------------------ blocked VC
// Port 1's VC 0 packets go to an output whose start is never allowed on their VC; port 1's other
// VCs (and the other inputs) keep flowing; the blocked VC fills and stops its sender; credit-stall
// cycles are counted exactly; after the release everything arrives, in order.
template <class C>
void blocked_vc() {
    auto rng = test_rng();
    Bench<C> b(rng);
    constexpr int NP = C::NP;
    b.dim.fill(0);
    b.dim[1] = 1;  // ports 1 and 2 in different dimensions, no dateline anywhere
    b.dateline.fill(0);
    b.k = quiet();
    b.block[1][0] = true;  // output 2, VC 0
    // phase A: one blocked packet alone: the stall counter counts every cycle it waits
    Script sc;
    b.gen = [&](int src, unsigned okm) { return sc.next(src, okm); };
    Spec s;
    s.vc = 0;
    s.route = route_with<C>(rng, 2);
    s.len = 20;
    sc.q[1].push_back(s);
    b.run(300);
    ASSERT_EQ(b.pending(), 1u);
    // visible (and stalling) from the cycle after its header came in
    EXPECT_EQ(b.ev_credit_stall[1], b.cycle() - b.last_t_in - 1) << "credit-stall cycles";
    for (int o = 0; o < NP; ++o) {
        if (o != 1) {
            EXPECT_EQ(b.ev_credit_stall[o], 0u);
        }
    }

    // phase B: random traffic; port 1 VC 0 always to output 2 (blocked), everything else free
    b.k = Knobs{};
    int left = 3000;
    uint64_t blocked_injected = 1;
    uint64_t other_injected = 0;  // port 1's class-1 packets (VC 2/3) of this phase
    auto other_got = [&] {
        uint64_t n = 0;
        for (int v = 2; v < 4; ++v)
            for (int o = 0; o <= NP; ++o) n += b.got[{1, v, o}];
        return n;
    };
    const uint64_t other_before = other_got();
    b.gen = [&](int src, unsigned okm) -> std::optional<Spec> {
        if (left <= 0) return std::nullopt;
        Spec t;
        t.len = 1 + rnd(rng, C::AREA);
        if (src == 1) {
            if ((okm & 1) && pct(rng, 30)) {
                t.vc = 0;
                t.route = route_with<C>(rng, 2);
                ++blocked_injected;
            } else {
                unsigned m = okm & 0xC;  // class 1: leaves on VC 2/3, never blocked
                if (!m) return std::nullopt;
                t.vc = pick_vc(rng, m);
                t.route = route_with<C>(rng, rnd(rng, NP + 1));
                ++other_injected;
            }
        } else {
            // other inputs: VC 1..3 (from port 2, VC 1 to output 2 leaves on VC 1), local: class 1
            unsigned m = okm & (src == 0 ? 0xC : 0xE);
            if (!m) return std::nullopt;
            t.vc = pick_vc(rng, m);
            t.route = route_with<C>(rng, rnd(rng, NP + 1));
            if (src > 0 && t.vc == 1 && b.dim[src - 1] != b.dim[1] && (t.route & ((1 << C::PB) - 1)) == 2) {
                // VC 1 from another dimension would leave on VC 0 (blocked): use class 1
                if (!(m & 0xC)) return std::nullopt;
                t.vc = pick_vc(rng, m & 0xC);
            }
            t.bad = src != 0 && pct(rng, 5);
        }
        --left;
        return t;
    };
    auto blocked = [&](const Exp& e) { return e.src == 1 && e.vc == 0; };
    for (int i = 0; i < 400 && left > 0 && !::testing::Test::HasFatalFailure(); ++i) b.run(500);
    ASSERT_EQ(left, 0);
    ASSERT_TRUE(b.drain(200000, [&] { return b.idle_inputs() && b.pending() == b.pending_if(blocked); }))
        << "traffic behind the blocked VC stopped";
    EXPECT_EQ(b.pending(), blocked_injected) << "every blocked packet still waits, nothing else does";
    EXPECT_EQ((b.got[{1, 0, 2}]), 0u);
    // every packet of port 1's other VCs got through while VC 0 was blocked, and there were
    // enough of them to matter (about 500 expected; the bound is far below any seed's count)
    EXPECT_EQ(other_got() - other_before, other_injected) << "port 1's other VCs kept flowing";
    EXPECT_GT(other_injected, 300u) << "too little traffic on port 1's other VCs";
    EXPECT_LT(b.credits(1, 0), Bench<C>::MAXF) << "the blocked VC filled up and stopped its sender";
    // phase C: release
    b.block[1][0] = false;
    ASSERT_TRUE(b.drain(200000));
    b.check_end();
    EXPECT_EQ((b.got[{1, 0, 2}]), blocked_injected);
}

// ------------------------------------------------------------------------------ local output stalled
// The completer stops taking flits (at a packet boundary): packets to the local output wait (in
// VC 3 here), every packet to a network output still gets through; after the release all arrive.
template <class C>
void local_stall() {
    auto rng = test_rng();
    Bench<C> b(rng);
    constexpr int NP = C::NP;
    b.k.lout_hold = true;
    int left = 3000;
    b.gen = [&](int src, unsigned okm) -> std::optional<Spec> {
        if (left <= 0) return std::nullopt;
        Spec t;
        t.len = 1 + rnd(rng, 64);
        if (src > 0 && (okm & 8) && pct(rng, 30)) {
            t.vc = 3;
            t.route = route_with<C>(rng, 0);
        } else {
            unsigned m = okm & (src == 0 ? 0xF : 0x7);
            if (!m) return std::nullopt;
            t.vc = pick_vc(rng, m);
            t.route = route_with<C>(rng, 1 + rnd(rng, NP));
        }
        t.bad = src != 0 && pct(rng, 5);
        --left;
        return t;
    };
    auto to_local = [](const Exp& e) { return e.dest == 0; };
    for (int i = 0; i < 400 && left > 0 && !::testing::Test::HasFatalFailure(); ++i) b.run(500);
    ASSERT_EQ(left, 0);
    ASSERT_TRUE(b.drain(200000, [&] { return b.idle_inputs() && b.pending() == b.pending_if(to_local); }))
        << "traffic to network outputs stopped behind the stalled local output";
    const size_t waiting = b.pending();
    EXPECT_GE(waiting, static_cast<size_t>(NP)) << "each network input has packets for the local output waiting";
    EXPECT_TRUE(b.log[0].empty()) << "nothing may leave at the stalled local output";
    EXPECT_GT(b.delivered, 1000u);
    b.k.lout_hold = false;
    ASSERT_TRUE(b.drain(200000));
    b.check_end();
    EXPECT_EQ(b.log[0].size(), waiting);
}

// ------------------------------------------------------------------------------ fairness
// Every input sends to the same output as fast as it can. One VC per input: strict rotation (in
// every window of N consecutive packets each input has exactly one). All VCs: round robin over
// every (input, VC) head: between two packets of one requester no other has two, and the counts
// of all requesters differ by at most one.
template <class C>
void fairness(bool all_vcs) {
    auto rng = test_rng();
    Bench<C> b(rng);
    constexpr int NP = C::NP;
    b.k = quiet();
    const int target = 1;
    b.gen = [&](int src, unsigned okm) -> std::optional<Spec> {
        Spec t;
        unsigned m = (all_vcs && src > 0) ? okm : (okm & 1);
        if (!m) return std::nullopt;
        t.vc = pick_vc(rng, m);
        t.route = route_with<C>(rng, target);
        t.len = 16;
        return t;
    };
    b.run(40000);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    auto& lg = b.log[target];
    ASSERT_GT(lg.size(), 1000u);
    const size_t warm = 50;
    std::map<std::pair<int, int>, int> cnt;
    std::map<int, int> per_in;
    if (!all_vcs) {
        for (size_t i = warm; i + NP + 1 <= lg.size(); ++i) {
            std::set<int> w;
            for (int j = 0; j <= NP; ++j) w.insert(lg[i + j].first);
            ASSERT_EQ(w.size(), static_cast<size_t>(NP + 1)) << "window at packet " << i << " is not a full round";
        }
    } else {
        std::map<std::pair<int, int>, size_t> lastpos;
        for (size_t i = warm; i < lg.size(); ++i) {
            auto it = lastpos.find(lg[i]);
            if (it != lastpos.end()) {
                std::map<std::pair<int, int>, int> between;
                for (size_t j = it->second + 1; j < i; ++j)
                    ASSERT_LE(++between[lg[j]], 1)
                        << "requester (" << lg[j].first << "," << lg[j].second << ") served twice while ("
                        << lg[i].first << "," << lg[i].second << ") waited";
            }
            lastpos[lg[i]] = i;
        }
    }
    // shares over whole rounds
    const size_t nreq = all_vcs ? static_cast<size_t>(4 * NP + 1) : static_cast<size_t>(NP + 1);
    const size_t n = ((lg.size() - warm) / nreq) * nreq;
    for (size_t i = warm; i < warm + n; ++i) {
        ++cnt[lg[i]];
        ++per_in[lg[i].first];
    }
    ASSERT_EQ(cnt.size(), nreq) << "every requester was served";
    int mn = 1 << 30, mx = 0;
    for (auto& [key, c] : cnt) {
        mn = std::min(mn, c);
        mx = std::max(mx, c);
    }
    EXPECT_LE(mx - mn, 1) << "requester shares differ";
    std::printf("[ switch] fairness (%s): %zu packets at output %d; per input:", all_vcs ? "all VCs" : "one VC", n,
                target);
    for (auto& [i, c] : per_in) std::printf(" %d:%d", i, c);
    std::printf("\n");
}

// ------------------------------------------------------------------------------ invalid routes
template <class C>
void invalid_routes() {
    auto rng = test_rng();
    Bench<C> b(rng);
    constexpr int NP = C::NP, NCODES = 1 << C::PB;
    ASSERT_GT(NCODES - 1, NP);
    Script sc;
    b.gen = [&](int src, unsigned okm) { return sc.next(src, okm); };
    int bad_routes = 0;
    for (int i = 0; i < 400; ++i) {
        int src = rnd(rng, NP + 1);
        Spec s;
        s.vc = rnd(rng, 4);
        s.len = 1 + rnd(rng, 64);
        bool inv = pct(rng, 40);
        s.route = route_with<C>(rng, inv ? NP + 1 + rnd(rng, NCODES - 1 - NP) : rnd(rng, NP + 1));
        bad_routes += inv;
        sc.q[src].push_back(s);
    }
    ASSERT_TRUE(b.run_until(400000, [&] { return sc.empty() && b.settled(); }));
    b.check_end();
    EXPECT_EQ(b.ev_bad_route, static_cast<uint64_t>(bad_routes));
    EXPECT_EQ(b.delivered, static_cast<uint64_t>(400 - bad_routes));
}

// ------------------------------------------------------------------------------ error paths
// A link that breaks the protocol: a packet longer than MAX_PKT_FLITS is cut (its last stored
// flit marked bad, the rest dropped), a packet arriving without room for a whole packet is dropped;
// both counted once, every flit's credit returned, the traffic around them intact.
template <class C>
void overflow() {
    auto rng = test_rng();
    Bench<C> b(rng);
    constexpr int MAXF = Bench<C>::MAXF;
    b.k = quiet();
    // (a) too long: MAXF + 5 flits
    Spec s;
    s.vc = 1;
    s.route = route_with<C>(rng, 2);
    s.len = C::AREA;
    Exp e;
    auto f = b.build(1, s, e);
    ASSERT_EQ(static_cast<int>(f.size()), MAXF);
    for (int i = 0; i < 5; ++i) f.push_back(rng() & mask(C::W));
    std::vector<bool> bads(f.size(), false);
    e.bad = true;  // cut: its MAXF-th flit leaves as last + bad
    b.queue_raw(1, 1, f, bads, true, e);
    // then a normal packet on the same VC
    Exp e2;
    s.len = 10;
    auto f2 = b.build(1, s, e2);
    b.queue_raw(1, 1, f2, std::vector<bool>(f2.size(), false), true, e2);
    ASSERT_TRUE(b.drain(2000));
    EXPECT_EQ(b.ev_overflow, 1u);
    EXPECT_EQ(b.delivered, 2u);
    b.k.inject = true;

    // (b) no room: fill VC 0 of port 1 behind a blocked output, then one packet too many
    b.block[1][0] = true;
    b.dateline.fill(0);
    b.dim.fill(0);
    int n = 0;
    Script sc;
    b.gen = [&](int src, unsigned okm) { return sc.next(src, okm); };
    while (b.credits(1, 0) >= MAXF) {
        Spec t;
        t.vc = 0;
        t.route = route_with<C>(rng, 2);
        t.len = 8;
        sc.q[1].push_back(t);
        b.run(100);
        ASSERT_LT(++n, 1000);
    }
    const size_t queued = b.pending();
    Exp e3;
    s.vc = 0;
    s.len = 33;
    auto f3 = b.build(1, s, e3);
    b.queue_raw(1, 0, f3, std::vector<bool>(f3.size(), false), false, e3);  // must not arrive
    b.run(200);
    EXPECT_EQ(b.ev_overflow, 2u);
    EXPECT_EQ(b.pending(), queued);
    b.block[1][0] = false;
    ASSERT_TRUE(b.drain(20000));
    b.check_end(2);
}

}  // namespace

TEST(Switch, LatencyNp2) {
    latency<P2>();
}
TEST(Switch, LatencyNp4) {
    latency<P4>();
}
TEST(Switch, LatencyWide64) {
    latency<P2W>();
}
TEST(Switch, DatelineTableNp2) {
    dateline_table<P2>();
}
TEST(Switch, DatelineTableNp4) {
    dateline_table<P4>();
}
TEST(Switch, BlockedVcNp2) {
    blocked_vc<P2>();
}
TEST(Switch, BlockedVcNp4) {
    blocked_vc<P4>();
}
TEST(Switch, LocalStallNp2) {
    local_stall<P2>();
}
TEST(Switch, LocalStallNp4) {
    local_stall<P4>();
}
TEST(Switch, FairnessOneVcNp4) {
    fairness<P4>(false);
}
TEST(Switch, FairnessAllVcsNp4) {
    fairness<P4>(true);
}
TEST(Switch, FairnessAllVcsNp2) {
    fairness<P2>(true);
}
TEST(Switch, InvalidRoutesNp2) {
    invalid_routes<P2>();
}
TEST(Switch, InvalidRoutesNp4) {
    invalid_routes<P4>();
}
TEST(Switch, OverflowNp2) {
    overflow<P2>();
}
TEST(Switch, OverflowWide64) {
    overflow<P2W>();
}
TEST(Switch, OverflowNp2Area256) {
    overflow<P2R>();
}
TEST(Switch, LatencyNp2Area256) {
    latency<P2R>();
}
TEST(Switch, BlockedVcNp2Area256) {
    blocked_vc<P2R>();
}

// ------------------------------------------------------------------------------ velo_rr_arb
constexpr int kArbN = velo::sim::ModelParams<Vrr_arb>::N;  // requesters (sim/cmake/switch.cmake)

TEST(RrArb, RandomAgainstModel) {
    auto rng = test_rng();
    Harness<Vrr_arb> h;
    constexpr int N = kArbN;
    h->req = 0;
    h->adv = 0;
    h.reset();
    unsigned hi = (1u << N) - 1;
    std::array<int, N> waited{};
    for (int cyc = 0; cyc < 200000; ++cyc) {
        const unsigned req = static_cast<unsigned>(rng()) & ((1u << N) - 1);
        const bool adv = pct(rng, 70);
        h->req = static_cast<uint8_t>(req);
        h->adv = adv;
        h.eval();
        const unsigned pick = (req & hi) ? (req & hi) : req;
        const unsigned exp = pick & (~pick + 1u);
        ASSERT_EQ(h->gnt, exp) << "cycle " << cyc;
        if (adv && exp) {
            // fairness: a requester granted after at most N-1 used grants to others
            for (int i = 0; i < N; ++i) {
                if ((exp >> i) & 1) {
                    waited[i] = 0;
                } else if ((req >> i) & 1) {
                    ASSERT_LT(++waited[i], N) << "requester " << i << " starved";
                } else {
                    waited[i] = 0;
                }
            }
            hi = ~((exp << 1) - 1u) & ((1u << N) - 1) & ~exp;
        }
        h.tick();
    }
}

TEST(RrArb, RotatesAndHoldsWhenUnused) {
    Harness<Vrr_arb> h;
    h->req = (1u << kArbN) - 1;
    h->adv = 1;
    h.reset();
    for (int i = 0; i < 12; ++i) {
        h.eval();
        EXPECT_EQ(h->gnt, 1u << (i % kArbN)) << "rotation step " << i;
        h.tick();
    }
    // an unused grant keeps its turn
    h->adv = 0;
    h.eval();
    const auto g = h->gnt;
    for (int i = 0; i < 3; ++i) {
        h.tick();
        h.eval();
        EXPECT_EQ(h->gnt, g);
    }
    // no requests, no grant
    h->req = 0;
    h.eval();
    EXPECT_EQ(h->gnt, 0u);
}
