// Flit serializer and deserializer of the minimal link, for LINK_W 16, 32 and 64: serialization
// order, cut of the last word, last flags, reassembly, zero latency and a tx -> rx loopback.
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "Vflit_rx16.h"
#include "Vflit_rx16_params.h"
#include "Vflit_rx32.h"
#include "Vflit_rx32_params.h"
#include "Vflit_rx64.h"
#include "Vflit_rx64_params.h"
#include "Vflit_tx16.h"
#include "Vflit_tx16_params.h"
#include "Vflit_tx32.h"
#include "Vflit_tx32_params.h"
#include "Vflit_tx64.h"
#include "Vflit_tx64_params.h"
#include "harness.hpp"

using velo::sim::Harness;
using velo::sim::pct;
using velo::sim::rnd;
using velo::sim::test_rng;

namespace {

struct Word {
    uint64_t data = 0;
    bool last = false;
    unsigned lnb = 7;  // valid bytes minus one (last word)
};
using Pkt = std::vector<Word>;

Pkt random_pkt(std::mt19937_64& rng, int max_words = 9) {
    Pkt p(static_cast<size_t>(1 + rnd(rng, max_words)));
    for (auto& w : p) w.data = rng();
    p.back().last = true;
    p.back().lnb = static_cast<unsigned>(rnd(rng, 8));
    return p;
}

uint64_t mask_bytes(unsigned nbytes) {
    return nbytes >= 8 ? ~0ull : ((1ull << (8 * nbytes)) - 1);
}

template <int LW>
struct Cfg {
    static constexpr int W = LW;
    static constexpr int FB = LW / 8;    // bytes per flit
    static constexpr int FPW = 64 / LW;  // flits per word
    static constexpr uint64_t FMASK = LW == 64 ? ~0ull : ((1ull << LW) - 1);
    // flits of a word: whole words carry FPW, the last one up to its last valid byte
    static int flits(const Word& w) { return w.last ? static_cast<int>(w.lnb) / FB + 1 : FPW; }
};

struct FlitBeat {
    uint64_t data;
    bool last;
};

template <class C>
std::vector<FlitBeat> expected_flits(const Pkt& p) {
    std::vector<FlitBeat> f;
    for (size_t i = 0; i < p.size(); ++i) {
        int n = C::flits(p[i]);
        for (int k = 0; k < n; ++k) f.push_back({(p[i].data >> (k * C::W)) & C::FMASK, p[i].last && k == n - 1});
    }
    return f;
}

// a transmitter and a receiver of one LINK_W (their PARAMS in sim/CMakeLists.txt, <model>_params.h)
template <class TX, class RX>
struct Types {
    static constexpr int LW = velo::sim::ModelParams<TX>::LINK_W;
    static_assert(velo::sim::ModelParams<RX>::LINK_W == LW, "transmitter and receiver of one flit width");
    using Tx = TX;
    using Rx = RX;
    using C = Cfg<LW>;
};

template <class T>
class Flit : public ::testing::Test {};
using AllWidths =
    ::testing::Types<Types<Vflit_tx16, Vflit_rx16>, Types<Vflit_tx32, Vflit_rx32>, Types<Vflit_tx64, Vflit_rx64>>;
struct WidthName {
    template <class T>
    static std::string GetName(int) {
        return "W" + std::to_string(T::C::W);
    }
};
TYPED_TEST_SUITE(Flit, AllWidths, WidthName);

}  // namespace

// The serializer on its own: flits in order, lowest bits first, last word cut, last flags, and the
// word taken with its last flit. Random gaps between words and random flit stalls.
TYPED_TEST(Flit, TxSerializes) {
    using C = typename TypeParam::C;
    auto rng = test_rng();
    Harness<typename TypeParam::Tx> h;
    h->pkt_valid = 0;
    h->flit_ready = 0;
    h.reset();
    // directed: every last-word length, then random packets
    std::deque<Pkt> pkts;
    for (unsigned l = 0; l < 8; ++l) {
        Pkt p{Word{0x0706050403020100ull, false, 7}, Word{0xF7F6F5F4F3F2F1F0ull, true, l}};
        pkts.push_back(p);
        pkts.push_back(Pkt{Word{0x1122334455667788ull, true, l}});
    }
    for (int i = 0; i < 10000; ++i) pkts.push_back(random_pkt(rng));
    std::deque<FlitBeat> exp;
    for (auto& p : pkts)
        for (auto& f : expected_flits<C>(p)) exp.push_back(f);
    const size_t total = exp.size();
    std::deque<Word> words;
    for (auto& p : pkts)
        for (auto& w : p) words.push_back(w);
    const int gap = 20, stall = 30;
    bool offering = false;
    int flits_in_word = 0;
    size_t got = 0;
    for (uint64_t c = 0; got < total; ++c) {
        ASSERT_LT(c, total * 10 + 100) << "tx hangs";
        if (!offering && !words.empty() && !pct(rng, gap)) offering = true;
        const Word w = offering ? words.front() : Word{};
        h->pkt_valid = offering;
        h->pkt_data = w.data;
        h->pkt_last = w.last;
        h->pkt_lnb = static_cast<uint8_t>(w.lnb);
        h->flit_ready = !pct(rng, stall);
        h.eval();
        ASSERT_EQ(h->flit_valid, h->pkt_valid);
        if (h->flit_valid && h->flit_ready) {
            ASSERT_FALSE(exp.empty());
            ASSERT_EQ(static_cast<uint64_t>(h->flit_data), exp.front().data) << "flit " << got;
            ASSERT_EQ(static_cast<bool>(h->flit_last), exp.front().last) << "flit " << got;
            exp.pop_front();
            ++got;
            ++flits_in_word;
        }
        if (h->pkt_valid && h->pkt_ready) {
            // the word goes with its last flit, never earlier
            ASSERT_TRUE(h->flit_ready);
            ASSERT_EQ(flits_in_word, C::flits(w)) << "word taken before all its flits went";
            flits_in_word = 0;
            words.pop_front();
            offering = false;
        }
        h.tick();
    }
    EXPECT_TRUE(words.empty());
    EXPECT_TRUE(exp.empty());
}

// The deserializer on its own: words reassembled (bytes after the last flit zero), last flag, lnb
// of the last word rounded up to whole flits, and the word presented in the cycle its last flit
// arrives.
TYPED_TEST(Flit, RxReassembles) {
    using C = typename TypeParam::C;
    auto rng = test_rng();
    Harness<typename TypeParam::Rx> h;
    h->flit_valid = 0;
    h->pkt_ready = 0;
    h.reset();
    std::deque<FlitBeat> flits;
    std::deque<Word> exp;
    for (int i = 0; i < 10000; ++i) {
        Pkt p = random_pkt(rng);
        for (auto& f : expected_flits<C>(p)) flits.push_back(f);
        for (auto w : p) {
            int n = C::flits(w);
            w.data &= mask_bytes(static_cast<unsigned>(n * C::FB));
            w.lnb = static_cast<unsigned>(n * C::FB - 1);
            exp.push_back(w);
        }
    }
    const size_t total = exp.size();
    bool offering = false;
    int pos = 0;  // flit index inside the current word
    size_t got = 0;
    for (uint64_t c = 0; got < total; ++c) {
        ASSERT_LT(c, total * 40 + 100) << "rx hangs";
        if (!offering && !flits.empty() && !pct(rng, 25)) offering = true;
        const FlitBeat f = offering ? flits.front() : FlitBeat{0, false};
        h->flit_valid = offering;
        h->flit_data = f.data;
        h->flit_last = f.last;
        h->pkt_ready = !pct(rng, 30);
        h.eval();
        const bool word_end = offering && (f.last || pos == C::FPW - 1);
        // zero latency: the word is there in the cycle its last flit is
        ASSERT_EQ(static_cast<bool>(h->pkt_valid), word_end) << "cycle " << c;
        if (!word_end && offering) {
            ASSERT_TRUE(h->flit_ready) << "a flit inside a word must never wait";
        }
        if (h->pkt_valid) {
            ASSERT_FALSE(exp.empty());
            ASSERT_EQ(h->pkt_data, exp.front().data) << "word " << got;
            ASSERT_EQ(static_cast<bool>(h->pkt_last), exp.front().last) << "word " << got;
            if (exp.front().last) {
                ASSERT_EQ(h->pkt_lnb, exp.front().lnb) << "word " << got;
            }
            ASSERT_EQ(h->flit_ready, h->pkt_ready);
            if (h->pkt_ready) {
                exp.pop_front();
                ++got;
            }
        }
        if (h->flit_valid && h->flit_ready) {
            flits.pop_front();
            offering = false;
            pos = word_end ? 0 : pos + 1;
        }
        h.tick();
    }
    EXPECT_TRUE(flits.empty());
}

// tx -> rx back to back with random stalls on both ends: every packet reproduced exactly (valid
// bytes), with the right last flags, and each word leaves rx in the cycle tx gives up its last flit.
TYPED_TEST(Flit, Loopback) {
    using C = typename TypeParam::C;
    auto rng = test_rng();
    Harness<typename TypeParam::Tx> tx;
    Harness<typename TypeParam::Rx> rx;
    tx->pkt_valid = 0;
    rx->flit_valid = 0;
    rx->pkt_ready = 0;
    tx.reset();
    rx.reset();
    std::deque<Word> in, exp;
    int npkts = 0;
    for (int i = 0; i < 20000; ++i) {
        Pkt p = random_pkt(rng);
        for (auto& w : p) {
            in.push_back(w);
            exp.push_back(w);
        }
        ++npkts;
    }
    const size_t total = exp.size();
    size_t got = 0;
    int pkts_out = 0;
    bool offering = false;
    int phase_gap = 0, phase_stall = 0;
    for (uint64_t c = 0; got < total; ++c) {
        ASSERT_LT(c, total * 40 + 100) << "loopback hangs";
        if (c % 2000 == 0) {  // change the stall pattern now and then
            phase_gap = rnd(rng, 4) * 25;
            phase_stall = rnd(rng, 4) * 25;
        }
        if (!offering && !in.empty() && !pct(rng, phase_gap)) offering = true;
        const Word w = offering ? in.front() : Word{};
        tx->pkt_valid = offering;
        tx->pkt_data = w.data;
        tx->pkt_last = w.last;
        tx->pkt_lnb = static_cast<uint8_t>(w.lnb);
        tx.eval();
        rx->flit_valid = tx->flit_valid;
        rx->flit_data = tx->flit_data;
        rx->flit_last = tx->flit_last;
        rx->pkt_ready = !pct(rng, phase_stall);
        rx.eval();
        tx->flit_ready = rx->flit_ready;
        tx.eval();
        const bool tx_word = tx->pkt_valid && tx->pkt_ready;
        const bool rx_word = rx->pkt_valid && rx->pkt_ready;
        ASSERT_EQ(tx_word, rx_word) << "zero latency: the word must leave rx in the cycle tx gives it up";
        if (rx_word) {
            ASSERT_FALSE(exp.empty());
            const Word& e = exp.front();
            const unsigned nb = e.last ? e.lnb + 1 : 8;
            const unsigned nb_flit = static_cast<unsigned>(C::flits(e) * C::FB);
            ASSERT_EQ(rx->pkt_data & mask_bytes(nb), e.data & mask_bytes(nb)) << "word " << got;
            ASSERT_EQ(rx->pkt_data & ~mask_bytes(nb_flit), 0ull) << "bytes after the last flit must be 0";
            ASSERT_EQ(static_cast<bool>(rx->pkt_last), e.last) << "word " << got;
            if (e.last) {
                ASSERT_EQ(rx->pkt_lnb, nb_flit - 1) << "word " << got;
                ASSERT_GE(rx->pkt_lnb, e.lnb);
                ++pkts_out;
            }
            exp.pop_front();
            ++got;
        }
        if (tx_word) {
            in.pop_front();
            offering = false;
        }
        tx.tick();
        rx.tick();
    }
    EXPECT_EQ(pkts_out, npkts);
    EXPECT_TRUE(in.empty());
}
