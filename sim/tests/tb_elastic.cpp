// velo_elastic (rtl/common): the boards' dual-clock elastic buffer for the network port (the
// neighbour's forwarded clock -> the NIC clock), simulated with two real clocks in picoseconds.
// A counter goes in one word per write clock; every word that comes out (IDLE aside) must be the
// next one written or, where words were dropped, a later one -- never a repeat, never out of order
// -- and the words skipped must equal the drops reported. Same frequency at random phases: no
// slip after the first fill. Writer 1 % faster: drops, no IDLE. Reader 1 % faster: IDLE inserted
// (slips), nothing lost. Writer stopped and restarted (neighbour unplugged): IDLE, then data.
#include <gtest/gtest.h>
#include <verilated_fst_c.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "Velastic.h"
#include "Velastic_params.h"
#include "harness.hpp"

using namespace velo::sim;

namespace {

constexpr unsigned kW = ModelParams<Velastic>::W;  // word width (sim/cmake/elastic.cmake)
constexpr uint32_t kMask = (1u << kW) - 1;

struct ElasticRun {
    uint64_t drops = 0, slips = 0, words = 0, idles_after_start = 0, skipped = 0;
    std::vector<std::string> errors;
};

// Simulates for `rd_cycles` read clock cycles. Periods and phase in ps. The writer pauses for
// writer_pause read cycles after pause_at read cycles (its clock stops).
ElasticRun simulate(uint64_t pw, uint64_t pr, uint64_t phase, uint64_t rd_cycles, uint64_t pause_at = 0,
                    uint64_t writer_pause = 0) {
    VerilatedContext ctx;
    Velastic m{&ctx, "top"};
    std::unique_ptr<VerilatedFstC> tfp;
    const char* w = std::getenv("WAVES");
    if (w && std::atoi(w) != 0) {
        ctx.traceEverOn(true);
        tfp.reset(new VerilatedFstC);
        m.trace(tfp.get(), 99);
        tfp->open((test_name() + ".fst").c_str());
    }
    ElasticRun res;
    m.wr_clk = 0;
    m.rd_clk = 0;
    m.wr_rst = 1;
    m.rd_rst = 1;
    m.wr_data = 0;
    m.eval();
    uint64_t wr = phase + 1, wf = phase + 1 + pw / 2, rr = 1, rf = 1 + pr / 2;  // next edges
    uint64_t wr_edges = 0, rd_edges = 0;
    uint32_t next_w = 1;  // next value to write
    uint32_t expect = 1;  // next value expected out
    bool started = false;
    while (rd_edges < rd_cycles) {
        uint64_t t = std::min(std::min(wr, wf), std::min(rr, rf));
        bool paused = pause_at && rd_edges >= pause_at && rd_edges < pause_at + writer_pause;
        bool w_rise = t == wr && !paused, r_rise = t == rr;
        if (w_rise) {
            m.wr_clk = 1;
            ++wr_edges;
        }
        if (r_rise) {
            m.rd_clk = 1;
            ++rd_edges;
        }
        m.eval();
        if (w_rise) res.drops += m.wr_drop;
        if (r_rise) {
            res.slips += m.rd_slip;
            uint32_t d = m.rd_data;
            if (d != 0) {
                started = true;
                ++res.words;
                if (((d - expect) & kMask) >= (1u << (kW - 1))) {
                    res.errors.push_back("word out of order or repeated: " + std::to_string(d) + " expected " +
                                         std::to_string(expect));
                } else {
                    res.skipped += (d - expect) & kMask;
                }
                expect = (d + 1) & kMask;
                if (expect == 0) expect = 1;
            } else if (started) {
                ++res.idles_after_start;
            }
        }
        if (t == wr) wr += pw;
        if (t == rr) rr += pr;
        if (t == wf) {
            if (!paused) {
                m.wr_clk = 0;
                // the next word, changing after the edge as a register output would
                if (wr_edges > 4) {
                    m.wr_rst = 0;
                    m.wr_data = next_w;
                    next_w = (next_w + 1) & kMask;
                    if (next_w == 0) next_w = 1;
                }
            }
            wf += pw;
        }
        if (t == rf) {
            m.rd_clk = 0;
            if (rd_edges > 4) m.rd_rst = 0;
            rf += pr;
        }
        m.eval();
        if (tfp) tfp->dump(t);
    }
    m.final();
    if (tfp) tfp->close();
    return res;
}

void expect_clean(const ElasticRun& r) {
    for (size_t i = 0; i < r.errors.size() && i < 10; ++i) ADD_FAILURE() << r.errors[i];
    EXPECT_TRUE(r.errors.empty());
}

}  // namespace

TEST(Elastic, SameFrequencyNeverSlips) {
    auto r = test_rng();
    for (int i = 0; i < 6; ++i) {
        uint64_t phase = static_cast<uint64_t>(rnd(r, 37037));
        ElasticRun x = simulate(37037, 37037, phase, 20000);
        expect_clean(x);
        EXPECT_EQ(x.drops, 0u) << "phase " << phase;
        EXPECT_EQ(x.idles_after_start, 0u) << "phase " << phase;
        EXPECT_EQ(x.skipped, 0u);
        EXPECT_GT(x.words, 19900u);
        EXPECT_LE(x.slips, 0u);
    }
}

TEST(Elastic, FasterWriterDropsAndReportsEveryLostWord) {
    auto r = test_rng();
    // writer 1 % faster; its clock stops for the last 300 cycles so that every word still in the
    // buffer comes out and every drop shows as a gap
    ElasticRun x = simulate(37037, 37407, static_cast<uint64_t>(rnd(r, 37037)), 30000, 29700, 1000);
    expect_clean(x);
    EXPECT_GT(x.drops, 100u);
    EXPECT_EQ(x.skipped, x.drops) << "words missing from the output = words reported dropped";
    EXPECT_LE(x.idles_after_start, 300u) << "IDLE only once the writer stopped";
}

TEST(Elastic, FasterReaderInsertsIdleAndLosesNothing) {
    auto r = test_rng();
    ElasticRun x = simulate(37407, 37037, static_cast<uint64_t>(rnd(r, 37037)), 30000);  // reader 1 % faster
    expect_clean(x);
    EXPECT_EQ(x.drops, 0u);
    EXPECT_EQ(x.skipped, 0u);
    EXPECT_GT(x.slips, 10u);
    EXPECT_GE(x.idles_after_start, x.slips) << "each slip is at least one IDLE word";
}

TEST(Elastic, WriterClockStopsAndRestarts) {
    auto r = test_rng();
    ElasticRun x = simulate(37037, 37037, static_cast<uint64_t>(rnd(r, 37037)), 20000, 5000, 3000);
    expect_clean(x);
    EXPECT_GE(x.idles_after_start, 2900u) << "IDLE while the neighbour's clock is gone";
    EXPECT_EQ(x.slips, 1u);
    EXPECT_EQ(x.skipped, 0u);
    EXPECT_GT(x.words, 16000u);
}
