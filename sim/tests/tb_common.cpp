// Common building blocks: the simple dual-port RAM, the skid buffer and the event counters.
#include <array>
#include <cstdint>
#include <deque>
#include <random>

#include "Vcounters.h"
#include "Vcounters_params.h"
#include "Vsdp_ram.h"
#include "Vsdp_ram_params.h"
#include "Vskid.h"
#include "Vskid_params.h"
#include "harness.hpp"

using velo::sim::Harness;
using velo::sim::pct;
using velo::sim::rnd;
using velo::sim::test_rng;

namespace {

// the models' parameters (sim/CMakeLists.txt, <model>_params.h)
constexpr unsigned kRamWords = 1u << velo::sim::ModelParams<Vsdp_ram>::ADDR_W;
constexpr uint32_t kSkidMask = (1u << velo::sim::ModelParams<Vskid>::W) - 1;  // a word of the skid buffer
constexpr unsigned kCounters = velo::sim::ModelParams<Vcounters>::N;
constexpr unsigned kAllCounters = (1u << kCounters) - 1;                      // an event on every counter
constexpr unsigned kCntIdx = 1u << velo::sim::ModelParams<Vcounters>::IDX_W;  // read/clear indices

// velo_sdp_ram has no reset: the harness only clocks it (and dumps waves with WAVES=1).
class Ram {
  public:
    Ram() {
        h_->we = 0;
        h_->re = 0;
        h_.eval();
    }
    Vsdp_ram* operator->() { return &h_.top(); }
    void tick() { h_.tick(); }

  private:
    Harness<Vsdp_ram> h_;
};

}  // namespace

// ------------------------------------------------------------------------------ velo_sdp_ram
TEST(SdpRam, ReadDuringWriteReturnsOldData) {
    Ram r;
    // fill every word
    for (unsigned a = 0; a < kRamWords; ++a) {
        r->we = 1;
        r->waddr = a;
        r->wdata = 0x1000 + a;
        r.tick();
    }
    // read and write address 5 in the same cycle: the read sees the old word
    r->we = 1;
    r->waddr = 5;
    r->wdata = 0xDEADBEEF;
    r->re = 1;
    r->raddr = 5;
    r.tick();
    EXPECT_EQ(r->rdata, 0x1005u) << "read-during-write must return the old data";
    // read enable low: rdata holds, even though the word changed and the address moves
    r->we = 0;
    r->re = 0;
    r->raddr = 7;
    for (int i = 0; i < 3; ++i) {
        r.tick();
        EXPECT_EQ(r->rdata, 0x1005u) << "rdata must hold while re is low";
    }
    // now the new word
    r->re = 1;
    r->raddr = 5;
    r.tick();
    EXPECT_EQ(r->rdata, 0xDEADBEEFu);
    // rdata appears only after the clock edge (registered)
    r->raddr = 6;
    r->eval();
    EXPECT_EQ(r->rdata, 0xDEADBEEFu) << "rdata must be registered";
    r.tick();
    EXPECT_EQ(r->rdata, 0x1006u);
}

TEST(SdpRam, RandomAgainstModel) {
    auto rng = test_rng();
    Ram r;
    std::array<uint32_t, kRamWords> mem{};
    std::array<bool, kRamWords> known{};
    uint32_t rd = 0;
    bool rd_known = false;
    int checked = 0, rdw = 0;
    for (int cyc = 0; cyc < 500000; ++cyc) {
        bool we = pct(rng, 50), re = pct(rng, 60);
        unsigned wa = static_cast<unsigned>(rnd(rng, kRamWords));
        unsigned ra = pct(rng, 20) ? wa : static_cast<unsigned>(rnd(rng, kRamWords));
        uint32_t wd = static_cast<uint32_t>(rng());
        r->we = we;
        r->waddr = wa;
        r->wdata = wd;
        r->re = re;
        r->raddr = ra;
        r.tick();
        if (re) {
            rd = mem[ra];  // old data, before this cycle's write
            rd_known = known[ra];
            if (we && wa == ra) ++rdw;
        }
        if (we) {
            mem[wa] = wd;
            known[wa] = true;
        }
        if (rd_known) {
            ASSERT_EQ(r->rdata, rd) << "cycle " << cyc;
            ++checked;
        }
    }
    EXPECT_GT(checked, 100000);
    EXPECT_GT(rdw, 1000) << "read-during-write cases exercised";
}

// ------------------------------------------------------------------------------ velo_skid
namespace {

// Random valid/ready stress of the skid buffer. The source obeys the valid/ready rules (a word,
// once offered, stays until taken); the bench checks that the buffer does too on its output.
void skid_run(int src_gap_pct, int sink_stall_pct, int words) {
    auto rng = test_rng();
    Harness<Vskid> h;
    h->s_valid = 0;
    h->m_ready = 0;
    h.reset();
    std::deque<uint32_t> exp;
    uint32_t next = static_cast<uint32_t>(rng()) & kSkidMask;
    int sent = 0, got = 0;
    bool offering = false;
    uint32_t offer = 0;
    bool prev_mv = false, prev_mr = false;
    uint32_t prev_md = 0;
    uint64_t cycles = 0;
    while (got < words) {
        ASSERT_LT(cycles, static_cast<uint64_t>(words) * 200 + 1000) << "skid hangs";
        if (!offering && sent < words && !pct(rng, src_gap_pct)) {
            offering = true;
            offer = next;
            next = (next * 2654435761u + 12345u) & kSkidMask;
        }
        h->s_valid = offering;
        h->s_data = offer;
        h->m_ready = !pct(rng, sink_stall_pct);
        h.eval();
        // s_ready, m_valid and m_data are registered: no input may change them in this cycle
        const uint8_t sr = h->s_ready, mv = h->m_valid;
        const uint32_t md = h->m_data;
        h->s_valid = !h->s_valid;
        h->m_ready = !h->m_ready;
        h->s_data ^= kSkidMask;
        h.eval();
        ASSERT_EQ(h->s_ready, sr) << "s_ready must be registered";
        ASSERT_EQ(h->m_valid, mv) << "m_valid must be registered";
        ASSERT_EQ(h->m_data, md) << "m_data must be registered";
        h->s_valid = offering;
        h->s_data = offer;
        h->m_ready = !h->m_ready;
        h.eval();
        // output rules: a word offered and not taken stays, unchanged
        if (prev_mv && !prev_mr) {
            ASSERT_TRUE(h->m_valid) << "m_valid dropped before the word was taken";
            ASSERT_EQ(h->m_data, prev_md) << "m_data changed while stalled";
        }
        if (h->s_valid && h->s_ready) {
            exp.push_back(offer);
            offering = false;
            ++sent;
        }
        if (h->m_valid && h->m_ready) {
            ASSERT_FALSE(exp.empty()) << "word out of nowhere";
            ASSERT_EQ(h->m_data, exp.front()) << "word " << got;
            exp.pop_front();
            ++got;
        }
        prev_mv = h->m_valid;
        prev_mr = h->m_ready;
        prev_md = h->m_data;
        h.tick();
        ++cycles;
    }
    // nothing left behind, nothing extra
    for (int i = 0; i < 4; ++i) {
        h->s_valid = 0;
        h->m_ready = 1;
        h.eval();
        EXPECT_FALSE(h->m_valid) << "extra word";
        h.tick();
    }
    EXPECT_TRUE(exp.empty());
    EXPECT_EQ(sent, words);
}

}  // namespace

TEST(Skid, RandomStress) {
    const int mix[][2] = {{0, 0}, {0, 50}, {50, 0}, {30, 30}, {80, 20}, {10, 90}, {70, 70}};
    for (auto& m : mix) {
        SCOPED_TRACE(testing::Message() << "source gaps " << m[0] << "%, sink stalls " << m[1] << "%");
        skid_run(m[0], m[1], 100000);
        if (HasFatalFailure()) return;
    }
}

TEST(Skid, FullThroughput) {
    Harness<Vskid> h;
    h->s_valid = 0;
    h->m_ready = 1;
    h.reset();
    EXPECT_TRUE(h->s_ready) << "ready after reset";
    EXPECT_FALSE(h->m_valid);
    // always valid, always ready: one word per cycle after one cycle of latency
    const int n = 1000;
    int in = 0, out = 0;
    for (int c = 0; c < n + 1; ++c) {
        h->s_valid = in < n;
        h->s_data = static_cast<uint32_t>(in);
        h->m_ready = 1;
        h.eval();
        if (c > 0) {
            ASSERT_TRUE(h->m_valid) << "bubble at cycle " << c;
            ASSERT_EQ(h->m_data, static_cast<uint32_t>(out));
            ++out;
        }
        if (h->s_valid) {
            ASSERT_TRUE(h->s_ready) << "stall at cycle " << c;
            ++in;
        }
        h.tick();
    }
    EXPECT_EQ(out, n);
    // one stall cycle: the skid register takes the extra word, then the stream runs at full rate
    // again (at most one bubble on the input side while the parked word drains)
    h.reset();
    in = out = 0;
    int in_stalls = 0;
    for (int c = 0; out < n; ++c) {
        ASSERT_LT(c, n + 10);
        h->s_valid = in < n;
        h->s_data = static_cast<uint32_t>(in);
        h->m_ready = (c != 10);
        h.eval();
        if (h->m_valid && h->m_ready) {
            ASSERT_EQ(h->m_data, static_cast<uint32_t>(out));
            ++out;
        }
        if (h->s_valid) {
            if (h->s_ready)
                ++in;
            else
                ++in_stalls;
        }
        h.tick();
    }
    EXPECT_LE(in_stalls, 1);
}

// ------------------------------------------------------------------------------ velo_counters
namespace {

struct CntModel {
    std::array<uint32_t, kCounters> c{};
    void step(uint16_t inc, bool clr, unsigned clr_idx) {
        for (unsigned i = 0; i < kCounters; ++i) {
            if (clr && clr_idx == i)
                c[i] = 0;
            else if ((inc >> i) & 1)
                c[i] += 1;
        }
    }
    uint32_t rd(unsigned idx) const { return idx < kCounters ? c[idx] : 0; }
};

}  // namespace

TEST(Counters, ResetIncrementClear) {
    Harness<Vcounters> h;
    h->inc = kAllCounters;  // counting during reset must not matter
    h->clr = 0;
    h.reset();
    h->inc = 0;
    for (unsigned i = 0; i < kCntIdx; ++i) {
        h->rd_idx = i;
        h.eval();
        EXPECT_EQ(h->rd_data, 0u) << "counter " << i << " after reset";
    }
    // counter i counts i+1 events
    for (unsigned k = 0; k < kCounters; ++k) {
        h->inc = static_cast<uint16_t>(kAllCounters << k);  // counters k..N-1 count on cycle k
        h.tick();
    }
    h->inc = 0;
    for (unsigned i = 0; i < kCounters; ++i) {
        h->rd_idx = i;
        h.eval();
        EXPECT_EQ(h->rd_data, i + 1) << "counter " << i;
    }
    // the read port is combinational
    h->rd_idx = 3;
    h->inc = 1u << 3;
    h.eval();
    EXPECT_EQ(h->rd_data, 4u);
    h.tick();
    h->inc = 0;
    h.eval();
    EXPECT_EQ(h->rd_data, 5u);
    // clear one; the others keep their counts
    h->clr = 1;
    h->clr_idx = 7;
    h.tick();
    h->clr = 0;
    for (unsigned i = 0; i < kCounters; ++i) {
        h->rd_idx = i;
        h.eval();
        EXPECT_EQ(h->rd_data, i == 7 ? 0u : (i == 3 ? 5u : i + 1)) << "counter " << i;
    }
    // clear and increment in the same cycle: the clear wins (the counter reads 0)
    h->clr = 1;
    h->clr_idx = 9;
    h->inc = (1u << 9) | (1u << 10);
    h.tick();
    h->clr = 0;
    h->inc = 0;
    h->rd_idx = 9;
    h.eval();
    EXPECT_EQ(h->rd_data, 0u);
    h->rd_idx = 10;
    h.eval();
    EXPECT_EQ(h->rd_data, 12u);
    // clearing an index >= N touches nothing
    h->clr = 1;
    h->clr_idx = 20;
    h.tick();
    h->clr = 0;
    h->rd_idx = 10;
    h.eval();
    EXPECT_EQ(h->rd_data, 12u);
    // reset clears everything
    h.reset();
    for (unsigned i = 0; i < kCounters; ++i) {
        h->rd_idx = i;
        h.eval();
        EXPECT_EQ(h->rd_data, 0u) << "counter " << i << " after second reset";
    }
}

TEST(Counters, RandomAgainstModel) {
    auto rng = test_rng();
    Harness<Vcounters> h;
    h->inc = 0;
    h->clr = 0;
    h.reset();
    CntModel m;
    for (int cyc = 0; cyc < 500000; ++cyc) {
        // sparse and dense event patterns
        int density = (cyc / 5000) % 3 == 0 ? 90 : 20;
        uint16_t inc = 0;
        for (int i = 0; i < static_cast<int>(kCounters); ++i)
            if (pct(rng, density)) inc = static_cast<uint16_t>(inc | (1u << i));
        bool clr = pct(rng, 5);
        unsigned clr_idx = static_cast<unsigned>(rnd(rng, kCntIdx));
        unsigned rd_idx = static_cast<unsigned>(rnd(rng, kCntIdx));
        h->inc = inc;
        h->clr = clr;
        h->clr_idx = static_cast<uint8_t>(clr_idx);
        h->rd_idx = static_cast<uint8_t>(rd_idx);
        h.eval();
        ASSERT_EQ(h->rd_data, m.rd(rd_idx)) << "cycle " << cyc << " counter " << rd_idx;
        h.tick();
        m.step(inc, clr, clr_idx);
    }
    for (unsigned i = 0; i < kCntIdx; ++i) {
        h->inc = 0;
        h->clr = 0;
        h->rd_idx = static_cast<uint8_t>(i);
        h.eval();
        EXPECT_EQ(h->rd_data, m.rd(i)) << "counter " << i;
    }
    // the counts really got somewhere
    uint64_t total = 0;
    for (auto v : m.c) total += v;
    EXPECT_GT(total, 1000u);
}
