// Test harness for Verilated models: clocking, reset, seeded randomness, optional FST waves.
//
//   SEED=<n>   replay a run (every test prints the seed it used)
//   WAVES=1    dump <test name>.fst into the current directory
#pragma once

#include <verilated.h>
#include <verilated_fst_c.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <utility>

#include <gtest/gtest.h>

namespace velo::sim {

// Seed of this process: SEED from the environment, else fresh. Printed once.
uint64_t test_seed();

// A random generator seeded from test_seed() and the current test's name, so each test replays
// on its own with the same SEED.
std::mt19937_64 test_rng();
// The generator test `name` ("Suite.Name") gets with SEED=seed: a failing seed replayed as a
// directed regression test under another name.
std::mt19937_64 test_rng(uint64_t seed, const std::string& name);

// Uniform integer in [0, n) and "true p percent of the time", for random stimulus.
inline int rnd(std::mt19937_64& r, int n) {
    return static_cast<int>(r() % static_cast<uint64_t>(n));
}
inline bool pct(std::mt19937_64& r, int p) {
    return rnd(r, 100) < p;
}

// Name of the running GoogleTest test, "Suite.Name" with '/' replaced.
std::string test_name();

// View of a Verilated data port of any width as 32-bit words (little-endian word order).
struct Words {
    uint32_t* w;
    int n;
    uint64_t get64(int i) const {
        uint64_t lo = w[2 * i];
        uint64_t hi = (2 * i + 1 < n) ? w[2 * i + 1] : 0;
        return lo | (hi << 32);
    }
    void set64(int i, uint64_t v) const {
        w[2 * i] = static_cast<uint32_t>(v);
        if (2 * i + 1 < n) w[2 * i + 1] = static_cast<uint32_t>(v >> 32);
    }
    void clear() const {
        for (int i = 0; i < n; ++i) w[i] = 0;
    }
};
inline Words words(uint64_t& q) {
    return Words{reinterpret_cast<uint32_t*>(&q), 2};
}
inline Words words(uint32_t& d) {
    return Words{&d, 1};
}
template <std::size_t N>
inline Words words(VlWide<N>& v) {
    return Words{v.data(), static_cast<int>(N)};
}

// A context for one Verilated model, its command arguments loaded: none, or +velo_sim_gate to
// let the model's clock gates of idle units close (rtl/common/velo_sim_gate.v, docs/simulator.md).
// A model that reads a plusarg (every NIC with the RMA unit) stops the simulation when its context
// has no arguments loaded; Harness and System make their contexts here. The context becomes the
// thread's current one, where $test$plusargs looks during the model's first eval.
inline std::unique_ptr<VerilatedContext> new_context(bool sim_gate = false) {
    static const char* args[] = {"velo-sim", "+velo_sim_gate"};
    std::unique_ptr<VerilatedContext> c(new VerilatedContext);
    c->commandArgs(sim_gate ? 2 : 1, args);
    Verilated::threadContextp(c.get());
    return c;
}

// Whether a model has a reset input (a few leaf modules, e.g. RAMs, have none).
template <class M, class = void>
struct HasRst : std::false_type {};
template <class M>
struct HasRst<M, std::void_t<decltype(std::declval<M&>().rst)>> : std::true_type {};

template <class M>
class Harness {
  public:
    Harness() : ctx_(new_context()), top_(new M{ctx_.get(), "top"}) {
        const char* w = std::getenv("WAVES");
        if (w && std::atoi(w) != 0) {
            ctx_->traceEverOn(true);
            tfp_.reset(new VerilatedFstC);
            top_->trace(tfp_.get(), 99);
            std::string f = test_name() + ".fst";
            tfp_->open(f.c_str());
            std::printf("[ waves ] %s\n", f.c_str());
        }
        top_->clk = 0;
        if constexpr (HasRst<M>::value) top_->rst = 1;
        top_->eval();
    }
    ~Harness() {
        top_->final();
        if (tfp_) tfp_->close();
    }
    Harness(const Harness&) = delete;
    Harness& operator=(const Harness&) = delete;

    M* operator->() { return top_.get(); }
    M& top() { return *top_; }
    uint64_t cycle() const { return cycle_; }

    // Settle combinational logic after inputs changed (clock low).
    void eval() { top_->eval(); }

    // One clock cycle: rising edge, then falling edge. Inputs set before tick() are sampled at
    // the rising edge.
    void tick() {
        top_->clk = 1;
        top_->eval();
        if (tfp_) tfp_->dump(2 * cycle_ + 1);
        top_->clk = 0;
        top_->eval();
        ++cycle_;
        if (tfp_) tfp_->dump(2 * cycle_);
    }

    void reset(int cycles = 4) {
        if constexpr (HasRst<M>::value) top_->rst = 1;
        for (int i = 0; i < cycles; ++i) tick();
        if constexpr (HasRst<M>::value) top_->rst = 0;
        top_->eval();
    }

  private:
    std::unique_ptr<VerilatedContext> ctx_;
    std::unique_ptr<M> top_;
    std::unique_ptr<VerilatedFstC> tfp_;
    uint64_t cycle_ = 0;
};

}  // namespace velo::sim
