// Link layer bench (velo_link, LINK_W 16, 32 and 64): two links back to back through the channel
// model, one channel per direction. On each side a packet source (random legal packets: PKT_HDR
// with a random VC and FRAG_LEN_M1, random payload; it starts a packet only on tx_start_ok[vc] and
// leaves random gaps mid-packet) and a sink modelling the switch input buffers (VC_DEPTH flits per
// VC, overflow asserted, drained at a random rate with rx_free pulses). The scoreboard of each
// direction asserts that every packet is delivered exactly once, byte-exact, in order (go-back-N
// keeps the order of the whole link, not only per VC), on its header's VC; packets delivered bad
// are discarded by the sink, and every packet the source stomped (tx_bad) must be seen bad once in
// its place. Faults: bit errors, lost flits, a link going down, tampered control symbols, and
// directed single-bit errors and lost flits at every position of a packet.
//
//   SEED=<n> replays a run; WAVES=1 dumps <test>_a.fst and <test>_b.fst (one per link).
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

#include "Vlink16.h"
#include "Vlink32.h"
#include "Vlink64.h"
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

// RTL defaults the tests rely on (velo_link parameters)
constexpr unsigned kNvc = 4;
constexpr unsigned kVcDepth = 64;
constexpr uint64_t kReplayTimeout = 512;
constexpr uint64_t kDownTimeout = 128;
constexpr unsigned kLatency = 2;  // channel latency of the benches

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

template <class M, int LW>
struct Cfg {
    using Model = M;
    static constexpr int W = LW;
    static constexpr int H = 64 / LW;          // header flits
    static constexpr int FB = LW / 8;          // bytes per flit
    static constexpr int MAXP = H + 512 / LW;  // longest packet in data flits
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
    unsigned len = 1;             // payload bytes
    bool stomp = false;           // the source raises tx_bad with tx_last
    bool bad = false;             // delivered bad (stomped, or malformed by the source)
    std::vector<uint64_t> flits;  // data flits as delivered (the header's length)
    std::vector<uint64_t> send;   // flits the source presents, if not flits (malformed packets)
};

template <class C>
Pkt make_pkt(std::mt19937_64& r, uint64_t id, unsigned len, unsigned vc, bool stomp) {
    Pkt p;
    p.id = id;
    p.vc = vc;
    p.len = len;
    p.stomp = stomp;
    p.bad = stomp;
    uint64_t h = r();
    h = (h & ~0x3ull) | vc;
    h = (h & ~(0x3Full << VELO_PKT_HDR_FRAG_LEN_M1_SHIFT)) |
        (static_cast<uint64_t>(len - 1) << VELO_PKT_HDR_FRAG_LEN_M1_SHIFT);
    // FRAG_OFF % 4 pad bytes lengthen the payload area; these packets carry none (tb_system and
    // tb_net send byte-offset fragments through the links)
    h &= ~(0x3ull << VELO_PKT_HDR_FRAG_OFF_SHIFT);
    for (int i = 0; i < C::H; ++i) p.flits.push_back((h >> (i * C::W)) & C::MASK);
    // payload flits: random bytes, the unused bytes of the last flit random too (they travel)
    for (int i = C::H; i < C::data_flits(len); ++i) p.flits.push_back(r() & C::MASK);
    return p;
}

// Deterministic contents for directed tests (the results do not depend on SEED).
template <class C>
Pkt fixed_pkt(uint64_t id, unsigned len, unsigned vc) {
    std::mt19937_64 r(0x5EED0000 + id * 7919 + len);
    return make_pkt<C>(r, id, len, vc, false);
}

struct TrafficCfg {
    unsigned min_len = 1, max_len = 64;
    unsigned vcs = kNvc;  // VCs used (0 .. vcs-1)
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
    std::deque<const Pkt*> expect;  // packets fully taken by the link, in order
    uint64_t good = 0, bad = 0, bad_matched = 0;
    bool strict = false;  // no faults: every bad delivery must be the next stomped packet
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

    // Queue packets in direction dir.
    void add(int dir, const Pkt& p) { queue_[dir].push_back(p); }
    void add_random(int dir, unsigned n) {
        const TrafficCfg& t = traffic[dir];
        for (unsigned i = 0; i < n; ++i) {
            unsigned len = t.min_len + static_cast<unsigned>(rnd(rng_, static_cast<int>(t.max_len - t.min_len + 1)));
            add(dir, make_pkt<C>(rng_, next_id_++, len, static_cast<unsigned>(rnd(rng_, static_cast<int>(t.vcs))),
                                 pct(rng_, t.stomp_pct)));
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
    };
    struct Snk {
        unsigned occ[kNvc] = {0, 0, 0, 0};
        std::vector<uint64_t> flits;
        unsigned vc = 0;
        uint8_t freed = 0;
    };

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
            } else {
                ++start_wait_[s];
            }
        }
        if (src.active && !src.valid) src.valid = src.idx == 0 || !pct(rng_, t.gap_pct);
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
            const Pkt* p = &keep_[s].back();
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
            for (unsigned v = 0; v < kNvc; ++v)
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
        if (!m.rx_valid) return;
        const unsigned vc = m.rx_vc;
        ASSERT_LT(vc, kNvc);
        ++k.occ[vc];
        ASSERT_LE(k.occ[vc], kVcDepth) << "switch input buffer of VC " << vc << " overflows (side " << s << ")";
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
        ASSERT_FALSE(sb.expect.empty()) << "dir " << dir << ": a good packet nobody sent (duplicate?)";
        const Pkt* p = sb.expect.front();
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

  public:
    uint64_t first_taken_[2] = {0, 0};  // cycle after the first flit was taken (per source side)
    uint64_t first_valid_[2] = {0, 0};  // cycle the first flit was presented
};

template <class T>
class Link : public ::testing::Test {};
using AllWidths = ::testing::Types<Cfg<Vlink16, 16>, Cfg<Vlink32, 32>, Cfg<Vlink64, 64>>;
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
    EXPECT_EQ(t_wire - static_cast<int64_t>(p.first_valid_[0]), 1) << "tx_valid -> phy_tx";
    EXPECT_EQ(t_rxin - t_wire, static_cast<int64_t>(kLatency));
    EXPECT_EQ(t_rxout - t_rxin, 1) << "phy_rx -> rx_valid";
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
    p.run(kDownTimeout + 50);
    EXPECT_FALSE(p.up(0));
    EXPECT_FALSE(p.up(1));
    EXPECT_EQ(p.side(0).tx_start_ok, 0u);
    p.run(2000);
    p.channel(0).set_down(false);
    p.channel(1).set_down(false);
    p.run_until_done(500000);
    EXPECT_TRUE(p.up(0) && p.up(1));
    for (int s = 0; s < 2; ++s) {
        EXPECT_EQ(p.ev(s).link_down, 1u) << "side " << s;
        EXPECT_EQ(p.sb(s).good, n);
        EXPECT_EQ(p.ev(s).rx_pkt, n);
        EXPECT_GE(p.ev(s).replay, 3u) << "link-up, glitch, link-up again";
    }
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
// header's length) or late (more flits than the header says): the link pads the packet with zero
// flits to the header's length (a zero FRAG_LEN_M1 if the cut falls before it) or cuts it there,
// sends it stomped, and the stream after it is intact.
TYPED_TEST(Link, SourcePacketsCutShortOrTooLong) {
    using C = TypeParam;
    auto r = test_rng();
    Pair<C> p(r, clean_channel(r));
    p.sb(0).strict = true;
    for (int d = 0; d < 2; ++d) p.traffic[d].gap_pct = 10;
    p.bring_up();
    unsigned malformed = 0;
    for (unsigned i = 0; i < 400; ++i) {
        Pkt k =
            make_pkt<C>(r, p.next_id(), 1 + static_cast<unsigned>(rnd(r, 64)), static_cast<unsigned>(rnd(r, 4)), false);
        const int n = static_cast<int>(k.flits.size());
        const int kind = rnd(r, 4);
        if (kind == 0) {  // early: 1 .. n-1 flits
            k.send.assign(k.flits.begin(), k.flits.begin() + 1 + rnd(r, n - 1));
            std::vector<uint64_t> f = k.send;
            uint64_t hdr = 0;
            for (int h = 0; h < C::H && h < static_cast<int>(f.size()); ++h)
                hdr |= f[static_cast<size_t>(h)] << (h * C::W);
            const unsigned len = static_cast<unsigned>((hdr >> VELO_PKT_HDR_FRAG_LEN_M1_SHIFT) & 0x3F) + 1;
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
        p.traffic[d].vcs = d == 0 ? 4 : 2;
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
// replay; the cumulative ACK/CREDIT values and the timeouts repair the rest. Exact counts.
TYPED_TEST(Link, CorruptedControlSymbols) {
    using C = TypeParam;
    auto r = test_rng();
    Pair<C> p(r, clean_channel(r));
    for (int d = 0; d < 2; ++d) {
        p.traffic[d].gap_pct = 20;  // the transmitters put control symbols inside packets
        p.traffic[d].drain_pct = 60;
    }
    p.bring_up();
    uint64_t tampered[2] = {0, 0};
    std::mt19937_64 tr(r());
    p.tamper = [&](int dir, Flit& f) {
        const int rcv = 1 - dir;
        if (!p.up(rcv) || C::sync(f) != VELO_LINK_SYNC_CTL || rnd(tr, 100) >= 5) return;
        C::flip(f, rnd(tr, C::W + 2));
        ++tampered[dir];
    };
    const unsigned n = 2000;
    for (int dir = 0; dir < 2; ++dir) p.add_random(dir, n);
    p.run_until_done(2000000);
    p.tamper = nullptr;
    p.run(8);  // the events of the last tampered symbols
    for (int s = 0; s < 2; ++s) {
        EXPECT_EQ(p.sb(s).good, n);
        EXPECT_GT(tampered[s], 0u);
        EXPECT_EQ(p.ev(1 - s).ctl_drop + p.ev(1 - s).crc_err, tampered[s]) << "receiver side " << 1 - s;
        EXPECT_EQ(p.ev(s).link_down, 0u);
    }
    std::printf("[ info  ] W%d: %llu+%llu control symbols corrupted: %llu+%llu dropped, %llu+%llu ended a packet\n",
                C::W, static_cast<unsigned long long>(tampered[0]), static_cast<unsigned long long>(tampered[1]),
                static_cast<unsigned long long>(p.ev(1).ctl_drop), static_cast<unsigned long long>(p.ev(0).ctl_drop),
                static_cast<unsigned long long>(p.ev(1).crc_err), static_cast<unsigned long long>(p.ev(0).crc_err));
}

// ------------------------------------------------------------------------------ directed
// Five fixed packets a -> b (64-byte payloads, so that a corrupted length field cannot run past
// the end of the stream); the n-th data-sync flit on the wire (header, payload or CRC flit of the
// third packet) is changed by `hit`. Returns the pair after the stream was delivered.
template <class C>
std::unique_ptr<Pair<C>> directed(std::mt19937_64& r, int nth, const std::function<void(Flit&)>& hit) {
    std::unique_ptr<Pair<C>> p(new Pair<C>(r, clean_channel(r)));
    p->bring_up();
    for (unsigned i = 0; i < 5; ++i) p->add(0, fixed_pkt<C>(i + 1, 64, i % 4));
    int seen = 0;
    p->tamper = [&, nth](int dir, Flit& f) {
        if (dir != 0 || C::sync(f) != VELO_LINK_SYNC_DATA) return;
        if (seen++ == nth) hit(f);
    };
    p->run_until_done(20000);
    p->tamper = nullptr;
    return p;
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
            EXPECT_EQ(p->sb(0).good, 5u);
            EXPECT_EQ(p->sb(0).bad, 1u);
            EXPECT_EQ(p->ev(1).crc_err, 1u);
            EXPECT_EQ(p->ev(1).nack, 1u);
            EXPECT_EQ(p->ev(0).replay, 2u);
            EXPECT_EQ(p->ev(1).rx_pkt, 5u);
            // a sync error on the first flit: outside a packet, a dropped symbol
            EXPECT_EQ(p->ev(1).ctl_drop, (k == 0 && b >= C::W) ? 1u : 0u);
            EXPECT_EQ(p->ev(0).link_down + p->ev(1).link_down, 0u);
        }
    }
}

// The CRC flit of a packet is lost: the receiver holds the last data flit, sees no signal where
// the CRC should be, ends the packet bad and NACKs; the replay delivers it once.
TYPED_TEST(Link, TraceDemo) {
    using C = TypeParam;
    if (C::W != 16 || !std::getenv("LINKDBG")) return;
    auto r = test_rng();
    std::unique_ptr<Pair<C>> p(new Pair<C>(r, clean_channel(r)));
    p->bring_up();
    std::printf("DBG start %llu\n", (unsigned long long)p->cycle());
    for (unsigned i = 0; i < 4; ++i) p->add(0, fixed_pkt<C>(i + 1, 8, 0));
    int seen = 0;
    p->tamper = [&](int dir, Flit& f) {
        if (dir != 0 || C::sync(f) != VELO_LINK_SYNC_DATA) return;
        if (seen++ == 9 + 5) C::flip(f, 3);
    };
    p->run_until_done(20000);
    p->run(20);
}

TYPED_TEST(Link, LostCrcFlit) {
    using C = TypeParam;
    auto r = test_rng();
    const int per_pkt = C::H + 512 / C::W + 1;
    auto p = directed<C>(r, 3 * per_pkt - 1, [](Flit& f) { f = Flit{}; });
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_EQ(p->sb(0).good, 5u);
    EXPECT_EQ(p->sb(0).bad, 1u);
    EXPECT_EQ(p->ev(1).crc_err, 1u);
    EXPECT_EQ(p->ev(1).nack, 1u);
    EXPECT_EQ(p->ev(0).replay, 2u);
    EXPECT_EQ(p->ev(1).ctl_drop, 0u);
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
    EXPECT_GE(static_cast<int64_t>(p.cycle()) - t_lost, static_cast<int64_t>(kReplayTimeout));
    EXPECT_LE(static_cast<int64_t>(p.cycle()) - t_lost, static_cast<int64_t>(kReplayTimeout) + 200);
}
