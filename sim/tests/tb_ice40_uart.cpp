// UART of the iCE40 board's host bridge at bit level: velo_uart_tx (exact bit timing, every byte
// in order, valid/ready), velo_uart_rx (random bytes at a baud rate off by up to 2 %, random
// idle time, bad stop bits, glitches, a line break) and the two back to back. Models at 4 and 9
// clock cycles per bit (the benches' and the board's setting).
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <vector>

#include "Vuart_rx4.h"
#include "Vuart_rx4_params.h"
#include "Vuart_rx9.h"
#include "Vuart_rx9_params.h"
#include "Vuart_tx4.h"
#include "Vuart_tx4_params.h"
#include "Vuart_tx9.h"
#include "Vuart_tx9_params.h"
#include "harness.hpp"

using namespace velo::sim;

namespace {

// The transmitter: random bytes offered with random gaps; the line must carry exactly them,
// start bit and data bits each exactly cpb cycles (the model's CLKS_PER_BIT, <model>_params.h), the
// stop bit at least cpb cycles.
template <class M>
void tx_exact(bool gaps) {
    const unsigned cpb = velo::sim::ModelParams<M>::CLKS_PER_BIT;
    auto r = test_rng();
    Harness<M> h;
    h.reset();
    std::deque<uint8_t> want;
    std::vector<uint8_t> line;
    unsigned sent = 0, n = 300, idle = 0;
    h->valid = 0;
    for (uint64_t c = 0; c < 200000 && idle <= 2 * cpb; ++c) {
        if (!h->valid && sent < n && (!gaps || pct(r, 60))) {
            h->valid = 1;
            h->data = static_cast<uint8_t>(r());
        }
        h.eval();
        bool fire = h->valid && h->ready;
        if (fire) {
            want.push_back(h->data);
            ++sent;
        }
        h.tick();
        if (fire) h->valid = 0;
        line.push_back(h->txd);
        idle = (sent == n && h->ready) ? idle + 1 : 0;
    }
    // walk the waveform
    size_t i = 0;
    unsigned got = 0;
    std::deque<uint8_t> exp(want);
    while (i < line.size()) {
        if (line[i]) {
            ++i;
            continue;
        }
        ASSERT_FALSE(exp.empty()) << "start bit of an unexpected byte at cycle " << i;
        uint8_t b = exp.front();
        exp.pop_front();
        ASSERT_LE(i + 10 * cpb, line.size()) << "line ends inside a byte";
        for (unsigned k = 0; k < 9; ++k) {
            uint8_t lv = k == 0 ? 0 : (b >> (k - 1)) & 1;
            for (unsigned c = 0; c < cpb; ++c)
                ASSERT_EQ(line[i + k * cpb + c], lv) << "byte " << got << " bit " << k << " cycle " << c;
        }
        for (unsigned c = 0; c < cpb; ++c) ASSERT_EQ(line[i + 9 * cpb + c], 1) << "stop bit of byte " << got;
        i += 10 * cpb;
        ++got;
    }
    EXPECT_EQ(got, n);
    EXPECT_TRUE(exp.empty());
}

// Line levels of 8N1 bytes at a bit time of `bit` cycles (not necessarily whole), starting at
// fractional time t0; stop bit level `stop`.
void put_byte(std::vector<uint8_t>& line, double& t, double bit, uint8_t b, bool stop = true) {
    for (unsigned k = 0; k < 10; ++k) {
        uint8_t lv = k == 0 ? 0 : k == 9 ? (stop ? 1 : 0) : (b >> (k - 1)) & 1;
        double end = t + bit;
        while (static_cast<double>(line.size()) < end) line.push_back(lv);
        t = end;
    }
}
void put_idle(std::vector<uint8_t>& line, double& t, double cycles) {
    t += cycles;
    while (static_cast<double>(line.size()) < t) line.push_back(1);
}

template <class M>
std::vector<uint8_t> run_rx(const std::vector<uint8_t>& line, unsigned& frame_errs) {
    Harness<M> h;
    h->rxd = 1;
    h.reset();
    std::vector<uint8_t> got;
    frame_errs = 0;
    for (uint8_t lv : line) {
        h->rxd = lv;
        h.tick();
        if (h->valid) got.push_back(h->data);
        frame_errs += h->frame_err;
        EXPECT_FALSE(h->valid && h->frame_err);
    }
    for (int i = 0; i < 40; ++i) {
        h->rxd = 1;
        h.tick();
        if (h->valid) got.push_back(h->data);
        frame_errs += h->frame_err;
    }
    return got;
}

template <class M>
void rx_random() {
    const unsigned cpb = velo::sim::ModelParams<M>::CLKS_PER_BIT;
    auto r = test_rng();
    for (double skew : {-0.02, 0.0, 0.02}) {
        std::vector<uint8_t> line, want;
        double t = 3.0 + static_cast<double>(rnd(r, 100)) / 37.0;
        put_idle(line, t, 0);
        for (int i = 0; i < 200; ++i) {
            uint8_t b = static_cast<uint8_t>(r());
            want.push_back(b);
            put_byte(line, t, cpb * (1.0 + skew), b);
            if (pct(r, 30)) put_idle(line, t, rnd(r, 3 * static_cast<int>(cpb)) + 0.3);
        }
        put_idle(line, t, 2.0 * cpb);
        unsigned fe;
        auto got = run_rx<M>(line, fe);
        EXPECT_EQ(got, want) << "skew " << skew;
        EXPECT_EQ(fe, 0u) << "skew " << skew;
    }
}

template <class M>
void rx_errors() {
    const unsigned cpb = velo::sim::ModelParams<M>::CLKS_PER_BIT;
    auto r = test_rng();
    std::vector<uint8_t> line, want;
    double t = 5.0;
    put_idle(line, t, 0);
    uint8_t b0 = static_cast<uint8_t>(r()), b1 = static_cast<uint8_t>(r()), b2 = static_cast<uint8_t>(r());
    put_byte(line, t, cpb, b0);  // good
    want.push_back(b0);
    put_byte(line, t, cpb, 0x5A, false);  // bad stop bit: discarded, one frame error
    put_idle(line, t, 2.0 * cpb);         // (the line returns to idle)
    // a glitch shorter than half a bit: nothing
    put_idle(line, t, 3.0 * cpb);
    for (unsigned c = 0; c < cpb / 2 - 1; ++c) line.push_back(0);
    t = static_cast<double>(line.size());
    put_idle(line, t, 3.0 * cpb);
    put_byte(line, t, cpb, b1);  // good
    want.push_back(b1);
    // a break: the line low for 30 bit times, one frame error and nothing more
    for (unsigned c = 0; c < 30 * cpb; ++c) line.push_back(0);
    t = static_cast<double>(line.size());
    put_idle(line, t, 2.0 * cpb);
    put_byte(line, t, cpb, b2);  // good again
    want.push_back(b2);
    put_idle(line, t, 2.0 * cpb);
    unsigned fe;
    auto got = run_rx<M>(line, fe);
    EXPECT_EQ(got, want);
    EXPECT_EQ(fe, 2u) << "one for the bad stop bit, one for the break";
}

template <class T, class R>
void loopback() {
    static_assert(velo::sim::ModelParams<T>::CLKS_PER_BIT == velo::sim::ModelParams<R>::CLKS_PER_BIT, "one baud rate");
    auto rg = test_rng();
    Harness<T> tx;
    Harness<R> rx;
    rx->rxd = 1;
    tx.reset();
    rx.reset();
    std::deque<uint8_t> want;
    std::vector<uint8_t> got;
    unsigned n = 0;
    for (uint64_t c = 0; c < 200000 && (n < 400 || !want.empty()); ++c) {
        if (!tx->valid && n < 400) {
            tx->valid = 1;
            tx->data = static_cast<uint8_t>(rg());
        }
        tx.eval();
        bool fire = tx->valid && tx->ready;
        if (fire) want.push_back(tx->data);
        tx.tick();
        if (fire) {
            tx->valid = 0;
            ++n;
        }
        rx->rxd = tx->txd;
        rx.tick();
        EXPECT_FALSE(rx->frame_err);
        if (rx->valid) {
            ASSERT_FALSE(want.empty());
            EXPECT_EQ(rx->data, want.front());
            want.pop_front();
            got.push_back(rx->data);
        }
    }
    EXPECT_EQ(got.size(), 400u);
    EXPECT_TRUE(want.empty());
}

}  // namespace

TEST(UartTx, ExactBitTimingBackToBack4) {
    tx_exact<Vuart_tx4>(false);
}
TEST(UartTx, ExactBitTimingWithGaps9) {
    tx_exact<Vuart_tx9>(true);
}
TEST(UartRx, RandomBytesBaudSkew4) {
    rx_random<Vuart_rx4>();
}
TEST(UartRx, RandomBytesBaudSkew9) {
    rx_random<Vuart_rx9>();
}
TEST(UartRx, StopBitErrorGlitchAndBreak4) {
    rx_errors<Vuart_rx4>();
}
TEST(UartRx, StopBitErrorGlitchAndBreak9) {
    rx_errors<Vuart_rx9>();
}
TEST(Uart, LoopbackFullRate4) {
    loopback<Vuart_tx4, Vuart_rx4>();
}
TEST(Uart, LoopbackFullRate9) {
    loopback<Vuart_tx9, Vuart_rx9>();
}
