// velo_switch_lite, the reduced switch of a NIC with one network port (velo_nic SWITCH_LITE = 1,
// the iCE40 board's configuration): packets from the requester go to the link (only when the link
// allows their outgoing VC to start, header rewritten as the switch does), loop back to the
// completer (route code 0) or are dropped and counted (invalid codes, VCs the link lacks); packets
// from the link are buffered (credits per VC returned as flits leave), go to the completer with
// their route shifted, keep their bad mark, or are dropped when their code is not 0. Scoreboards
// per destination, random stalls, random credit and start_ok behaviour; NVC = 1 (the board) and
// NVC = 4.
#include <gtest/gtest.h>

#include <array>
#include <deque>
#include <vector>

#include "Vswitch_lite1.h"
#include "Vswitch_lite1_params.h"
#include "Vswitch_lite4.h"
#include "Vswitch_lite4_params.h"
#include "harness.hpp"

using namespace velo::sim;

namespace {

// route code bits and credits per VC: the same in both models (sim/cmake/switch_lite.cmake)
using Params = velo::sim::ModelParams<Vswitch_lite1>;
static_assert(Params::PB == velo::sim::ModelParams<Vswitch_lite4>::PB &&
                  Params::VC_DEPTH == velo::sim::ModelParams<Vswitch_lite4>::VC_DEPTH,
              "one route code width and VC depth for both models");
constexpr unsigned kPB = Params::PB;
constexpr unsigned kVcDepth = Params::VC_DEPTH;

struct Pkt {
    std::vector<uint16_t> f;  // flits
    bool bad = false;
};

uint16_t rewrite(uint16_t h, unsigned vc) {
    return static_cast<uint16_t>((((h >> 2) >> kPB) << 2) | vc);
}

Pkt random_pkt(std::mt19937_64& r, unsigned code, unsigned vc) {
    Pkt p;
    unsigned n = 2 + static_cast<unsigned>(rnd(r, 36));  // header .. largest packet
    uint16_t h = static_cast<uint16_t>(r());
    h = static_cast<uint16_t>((h & ~0xFu) | (code << 2) | vc);
    p.f.push_back(h);
    for (unsigned i = 1; i < n; ++i) p.f.push_back(static_cast<uint16_t>(r()));
    return p;
}

template <class M>
struct Bench {
    Harness<M> h;
    std::mt19937_64& r;
    unsigned nvc;
    bool dateline = false;
    // stimulus
    std::deque<Pkt> lin_q, in_q;
    size_t lin_i = 0, in_i = 0;
    int lin_gap = 20, in_gap = 20, out_stall = 20, lout_stall = 20;
    std::array<int, 4> credit{};  // the link's view: flits it may still send per VC
    std::array<bool, 4> start_ok{};
    unsigned start_hold = 0;
    // expectations
    std::deque<Pkt> exp_net, exp_loop, exp_local;  // (exp_local: from the link)
    unsigned exp_drops = 0, drops = 0;
    // outputs being collected
    Pkt cur_out, cur_lout;
    bool out_active = false, lout_active = false;
    int lout_src = -1;  // 0 loopback, 1 link
    bool prev_start_ok_for_head = false;
    uint64_t from_loop = 0, from_link = 0, to_net = 0;
    std::array<uint64_t, 4> freed{}, sent_in{};
    std::vector<std::string> errors;

    explicit Bench(std::mt19937_64& rng) : r(rng), nvc(velo::sim::ModelParams<M>::NVC) {
        h->lin_valid = 0;
        h->lout_ready = 0;
        h->out_ready = 0;
        h->out_start_ok = 0;
        h->in_valid = 0;
        h->port_dateline = 0;
        h.reset();
        for (unsigned v = 0; v < 4; ++v) credit[v] = kVcDepth;
    }

    // a packet from the requester; its expected fate
    void local(unsigned code, unsigned vc) {
        Pkt p = random_pkt(r, code, vc);
        lin_q.push_back(p);
        unsigned vcn = (vc & 2) | (dateline ? 1 : 0);
        if (code == 1 && vcn < nvc) {
            Pkt e = p;
            e.f[0] = rewrite(p.f[0], vcn);
            exp_net.push_back(e);
        } else if (code == 0) {
            Pkt e = p;
            e.f[0] = rewrite(p.f[0], vc);
            exp_loop.push_back(e);
        } else {
            ++exp_drops;
        }
    }
    // a packet from the link (VC < nvc)
    void remote(unsigned code, unsigned vc, bool bad) {
        Pkt p = random_pkt(r, code, vc);
        p.bad = bad;
        in_q.push_back(p);
        if (code == 0) {
            Pkt e = p;
            e.f[0] = rewrite(p.f[0], vc);
            exp_local.push_back(e);
        } else {
            ++exp_drops;
        }
    }

    void cycle() {
        // requester side
        if (!h->lin_valid && !lin_q.empty() && !pct(r, lin_gap)) h->lin_valid = 1;
        if (h->lin_valid) {
            h->lin_data = lin_q.front().f[lin_i];
            h->lin_last = lin_i + 1 == lin_q.front().f.size();
        }
        // link receive side: a packet starts only with credits for a whole largest packet
        // (as the link transmitter at the other end checks), flits follow without gaps or not
        h->in_valid = 0;
        if (!in_q.empty()) {
            const Pkt& p = in_q.front();
            unsigned vc = p.f[0] & 3;
            bool may = in_i > 0 || credit[vc] >= 37;
            if (may && !pct(r, in_gap)) {
                h->in_valid = 1;
                h->in_data = p.f[in_i];
                h->in_last = in_i + 1 == p.f.size();
                h->in_bad = h->in_last && p.bad;
                h->in_vc = vc;
                --credit[vc];
                ++sent_in[vc];
                if (++in_i == p.f.size()) {
                    in_i = 0;
                    in_q.pop_front();
                }
            }
        }
        // link transmit side: start_ok changes now and then
        if (start_hold == 0) {
            for (unsigned v = 0; v < 4; ++v) start_ok[v] = pct(r, 60);
            start_hold = static_cast<unsigned>(rnd(r, 60));
        } else {
            --start_hold;
        }
        unsigned sok = 0;
        for (unsigned v = 0; v < nvc; ++v) sok |= (start_ok[v] ? 1u : 0u) << v;
        h->out_start_ok = sok;
        h->out_ready = !pct(r, out_stall);
        h->lout_ready = !pct(r, lout_stall);
        h->port_dateline = dateline;
        h.eval();

        bool lin_took = h->lin_valid && h->lin_ready;
        if (lin_took && ++lin_i == lin_q.front().f.size()) {
            lin_i = 0;
            lin_q.pop_front();
        }
        if (h->out_valid && !out_active && !head_seen) {
            // the port decides to start a packet only while start_ok of its outgoing VC is set;
            // the head appears (through the output register slice) at least two cycles later,
            // after the previous head
            head_seen = true;
            unsigned vc = h->out_data & 3;
            bool ok = false;
            for (uint64_t c = last_head + 1; c + 2 <= h.cycle() && !ok; ++c) ok = (sok_hist[c % 256] >> vc) & 1;
            if (!ok) errors.push_back("packet started towards the link without start_ok");
            last_head = h.cycle();
        }
        if (h->out_valid && h->out_ready) take_out(h->out_data, h->out_last, h->out_bad);
        if (h->lout_valid && h->lout_ready) take_lout(h->lout_data, h->lout_last, h->lout_bad);
        sok_hist[h.cycle() % 256] = sok;
        drops += h->ev_bad_route;
        h.tick();
        if (lin_took) h->lin_valid = 0;
        for (unsigned v = 0; v < 4; ++v)
            if ((h->in_free >> v) & 1) {
                if (v >= nvc) errors.push_back("credit for a VC the link does not have");
                ++credit[v];
                ++freed[v];
            }
    }
    std::array<unsigned, 256> sok_hist{};  // start_ok of the recent cycles
    uint64_t last_head = 0;
    bool head_seen = false;

    void take_out(uint16_t d, bool last, bool bad) {
        if (!out_active) {
            out_active = true;
            cur_out = Pkt();
        }
        cur_out.f.push_back(d);
        if (bad) errors.push_back("local packet marked bad towards the link");
        if (last) {
            out_active = false;
            head_seen = false;
            ++to_net;
            if (exp_net.empty() || exp_net.front().f != cur_out.f)
                errors.push_back("unexpected packet towards the link");
            else
                exp_net.pop_front();
        }
    }
    void take_lout(uint16_t d, bool last, bool bad) {
        if (!lout_active) {
            lout_active = true;
            cur_lout = Pkt();
        }
        cur_lout.f.push_back(d);
        if (bad && !last) errors.push_back("bad mark before the last flit");
        if (last) {
            lout_active = false;
            cur_lout.bad = bad;
            if (!exp_loop.empty() && exp_loop.front().f == cur_lout.f && !bad) {
                exp_loop.pop_front();
                ++from_loop;
            } else if (!exp_local.empty() && exp_local.front().f == cur_lout.f && exp_local.front().bad == bad) {
                exp_local.pop_front();
                ++from_link;
            } else {
                errors.push_back("unexpected (or interleaved, or reordered) packet at the local output");
            }
        }
    }
    bool done() {
        return lin_q.empty() && in_q.empty() && exp_net.empty() && exp_loop.empty() && exp_local.empty() &&
               !h->lin_valid;
    }
    void run(uint64_t max = 2000000) {
        for (uint64_t c = 0; c < max && !done(); ++c) cycle();
        for (int i = 0; i < 50; ++i) cycle();  // trailing credits and events
        EXPECT_TRUE(done()) << "left: net " << exp_net.size() << " loop " << exp_loop.size() << " local "
                            << exp_local.size();
    }
    void check() {
        for (size_t i = 0; i < errors.size() && i < 10; ++i) ADD_FAILURE() << errors[i];
        EXPECT_TRUE(errors.empty()) << errors.size() << " errors";
        EXPECT_EQ(drops, exp_drops);
        for (unsigned v = 0; v < 4; ++v) {
            EXPECT_EQ(freed[v], sent_in[v]) << "every flit from the link returned as a credit, VC " << v;
            EXPECT_EQ(credit[v], static_cast<int>(kVcDepth)) << "VC " << v;
        }
    }
};

template <class M>
void mixed(bool dateline) {
    auto r = test_rng();
    Bench<M> b(r);
    const unsigned nvc = b.nvc;
    b.dateline = dateline;
    for (int i = 0; i < 400; ++i) {
        unsigned code = pct(r, 70) ? 1 : static_cast<unsigned>(rnd(r, 4));
        unsigned vc = static_cast<unsigned>(rnd(r, 4));
        if (nvc == 1 && pct(r, 85)) vc = 0;
        b.local(code, vc);
        if (pct(r, 80)) {
            unsigned rc = pct(r, 85) ? 0 : 1 + static_cast<unsigned>(rnd(r, 3));
            b.remote(rc, static_cast<unsigned>(rnd(r, static_cast<int>(nvc))), pct(r, 10));
        }
    }
    b.run();
    b.check();
    EXPECT_GT(b.from_loop, 10u);
    EXPECT_GT(b.from_link, 100u);
    EXPECT_GT(b.to_net, 100u);
}

}  // namespace

TEST(SwitchLite, MixedTrafficOneVc) {
    mixed<Vswitch_lite1>(false);
}

TEST(SwitchLite, MixedTrafficFourVcsDateline) {
    mixed<Vswitch_lite4>(true);
}

TEST(SwitchLite, FullRateBothWaysNoStalls) {
    // no gaps, no stalls: the buffer must take a flit every cycle and the credits keep up
    auto r = test_rng();
    Bench<Vswitch_lite4> b(r);
    b.lin_gap = b.in_gap = b.out_stall = b.lout_stall = 0;
    for (int i = 0; i < 300; ++i) {
        b.local(1, static_cast<unsigned>(rnd(r, 4)));
        b.remote(0, static_cast<unsigned>(rnd(r, 4)), false);
    }
    b.run();
    b.check();
}

TEST(SwitchLite, BlockedCompleterStopsOnlyTheLocalOutput) {
    // the local output stalls for a long time: link packets pile up in the buffer (never more
    // than the credits allow), loopback waits, packets towards the link keep flowing
    auto r = test_rng();
    Bench<Vswitch_lite1> b(r);
    for (int i = 0; i < 100; ++i) b.local(1, 0);
    for (int i = 0; i < 40; ++i) b.remote(0, 0, pct(r, 20));
    b.lout_stall = 100;
    for (int c = 0; c < 20000; ++c) b.cycle();
    EXPECT_TRUE(b.exp_net.empty()) << "traffic towards the link must not wait for the completer";
    EXPECT_FALSE(b.exp_local.empty());
    EXPECT_LE(b.credit[0], static_cast<int>(kVcDepth));
    EXPECT_GE(b.credit[0], 0);
    b.lout_stall = 10;
    b.run();
    b.check();
}
