// UART host bridge of the iCE40 board: velo_uart_down (frames -> TLP stream: SLIP, CRC, ring,
// length checks, errors, flow control), velo_uart_up (TLP stream and reports -> frames: order,
// priorities, byte order) and velo_uart_bridge (both over real serial lines, against the host model
// of ice40_host.cpp, with the NIC side looped back). Random TLPs with random header bits (the
// bridge passes them through uninterpreted), random back pressure everywhere, scoreboards.
#include <gtest/gtest.h>

#include <deque>
#include <vector>

#include "Vuart_bridge.h"
#include "Vuart_bridge_params.h"
#include "Vuart_down.h"
#include "Vuart_up.h"
#include "harness.hpp"
#include "ice40_host.hpp"

using namespace velo::sim;
using namespace velo::sim::ice40;

namespace {

// A TLP as the stream carries it: 4 header DWs (DW3 zero for a 3DW header), BAR, payload DWs.
struct StreamTlp {
    uint32_t hdr[4] = {0, 0, 0, 0};
    uint8_t bar = 0;
    std::vector<uint32_t> data;  // payload DWs
    bool operator==(const StreamTlp& o) const {
        for (int i = 0; i < 4; ++i)
            if (hdr[i] != o.hdr[i]) return false;
        return bar == o.bar && data == o.data;
    }
};
std::string str(const StreamTlp& t) {
    char b[120];
    std::snprintf(b, sizeof b, "hdr %08x %08x %08x %08x bar %u dws %zu", t.hdr[0], t.hdr[1], t.hdr[2], t.hdr[3], t.bar,
                  t.data.size());
    return b;
}

bool with_data(const StreamTlp& t) {
    return (t.hdr[0] >> 30) & 1;
}
bool four_dw(const StreamTlp& t) {
    return (t.hdr[0] >> 29) & 1;
}

// Random TLP: any Fmt/Type (the bridge looks only at Fmt[1:0]), random header bits, LENGTH
// 1..max_dw when it has data.
StreamTlp random_tlp(std::mt19937_64& r, unsigned max_dw = kMaxPayloadDw) {
    StreamTlp t;
    for (auto& d : t.hdr) d = static_cast<uint32_t>(r());
    unsigned len = 1 + static_cast<unsigned>(r() % max_dw);
    t.hdr[0] = (t.hdr[0] & ~0x3FFu) | len;
    if (!four_dw(t)) t.hdr[3] = 0;
    t.bar = static_cast<uint8_t>(r() % 8);
    if (with_data(t))
        for (unsigned i = 0; i < len; ++i) t.data.push_back(static_cast<uint32_t>(r()));
    return t;
}

// Host -> board TLP frame body for it.
std::vector<uint8_t> body_of(const StreamTlp& t, uint8_t type = kTlpDown) {
    std::vector<uint8_t> v{type};
    if (type == kTlpDown) v.push_back(t.bar);
    for (int i = 0; i < (four_dw(t) ? 4 : 3); ++i)
        for (int b = 0; b < 4; ++b) v.push_back(static_cast<uint8_t>(t.hdr[i] >> (8 * b)));
    for (uint32_t d : t.data)
        for (int b = 0; b < 4; ++b) v.push_back(static_cast<uint8_t>(d >> (8 * b)));
    return v;
}

// ------------------------------------------------------------------ velo_uart_down bench
struct Down {
    Harness<Vuart_down> h;
    std::mt19937_64& r;
    std::deque<uint8_t> in;  // bytes to the bridge
    std::deque<StreamTlp> out;
    std::vector<uint8_t> pongs;
    std::vector<std::pair<uint8_t, uint8_t>> errs;
    int gap_pct = 30, stall_pct = 20, ack_delay = 0;
    bool honour_cts = true;
    bool ferr_next = false;  // send a UART framing error instead of the next byte
    bool hold_ready = false, hold_err = false;
    uint64_t cts_seen = 0, max_cts_overrun = 0;
    StreamTlp cur;
    bool in_tlp = false;
    std::vector<std::string> errors;
    int pong_wait = 0, err_wait = 0;
    unsigned overrun = 0;  // bytes pushed while CTS asked to stop (models the FT2232H's lag)

    explicit Down(std::mt19937_64& rng) : r(rng) {
        h->in_valid = 0;
        h->in_ferr = 0;
        h->tlp_ready = 0;
        h->pong_ack = 0;
        h->err_ack = 0;
        h.reset();
    }
    void frame(const std::vector<uint8_t>& body) {
        auto f = slip_frame(body);
        in.insert(in.end(), f.begin(), f.end());
    }
    void cycle() {
        // inputs
        h->in_valid = 0;
        h->in_ferr = 0;
        bool can = !in.empty() && !pct(r, gap_pct);
        if (h->cts_n) {
            ++cts_seen;
            if (honour_cts && overrun >= 3) can = false;  // stops within 3 bytes
        } else {
            overrun = 0;
        }
        if (can) {
            if (ferr_next) {
                h->in_ferr = 1;
                ferr_next = false;
            } else {
                h->in_valid = 1;
                h->in_data = in.front();
                in.pop_front();
            }
            if (h->cts_n) ++overrun;
        }
        h->tlp_ready = !hold_ready && !pct(r, stall_pct);
        h->pong_ack = h->pong_valid && pong_wait-- <= 0;
        h->err_ack = h->err_valid && !hold_err && err_wait-- <= 0;
        h.eval();
        // outputs taken in this cycle
        if (h->pong_ack) {
            pongs.push_back(h->pong_token);
            pong_wait = ack_delay;
        }
        if (h->err_ack) {
            errs.emplace_back(h->err_code, h->err_cnt);
            err_wait = ack_delay;
        }
        if (h->tlp_valid && h->tlp_ready) {
            if (h->tlp_sop) {
                if (in_tlp) errors.push_back("sop inside a TLP");
                in_tlp = true;
                cur = StreamTlp();
                auto w = words(h->tlp_hdr);
                for (int i = 0; i < 4; ++i) cur.hdr[i] = w.w[i];
                cur.bar = h->tlp_bar;
            } else if (!in_tlp) {
                errors.push_back("beat outside a TLP");
            }
            uint64_t d = h->tlp_data;
            cur.data.push_back(static_cast<uint32_t>(d));
            cur.data.push_back(static_cast<uint32_t>(d >> 32));
            if (h->tlp_eop) {
                in_tlp = false;
                // keep exactly the payload DWs; the rest of the last beat must be zero
                size_t n = with_data(cur) ? (cur.hdr[0] & 0x3FF) : 0;
                for (size_t i = n; i < cur.data.size(); ++i)
                    if (cur.data[i] != 0) errors.push_back("nonzero pad DW");
                if ((cur.data.size() + 1) / 2 != std::max<size_t>(1, (n + 1) / 2))
                    errors.push_back("wrong number of beats: " + str(cur));
                cur.data.resize(n);
                out.push_back(cur);
            }
        }
        h.tick();
    }
    void run(uint64_t n) {
        for (uint64_t i = 0; i < n; ++i) cycle();
    }
    // run until all input is consumed and everything has come out
    void drain(uint64_t max = 2000000) {
        uint64_t quiet = 0;
        for (uint64_t i = 0; i < max && quiet < 400; ++i) {
            cycle();
            quiet = (in.empty() && !h->tlp_valid && !h->pong_valid && !h->err_valid) ? quiet + 1 : 0;
        }
        EXPECT_GE(quiet, 400u) << "bridge did not drain";
    }
};

void expect_tlps(const std::deque<StreamTlp>& got, const std::vector<StreamTlp>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
        ASSERT_TRUE(got[i] == want[i]) << "TLP " << i << ": got " << str(got[i]) << " want " << str(want[i]);
}

}  // namespace

TEST(UartDown, RandomTlpsAndPings) {
    auto r = test_rng();
    Down d(r);
    d.ack_delay = 3;
    std::vector<StreamTlp> want;
    std::vector<uint8_t> tokens;
    for (int i = 0; i < 300; ++i) {
        if (pct(r, 10)) {
            uint8_t tok = static_cast<uint8_t>(r());
            tokens.push_back(tok);
            d.frame(ping_body(tok));
        }
        if (pct(r, 5)) d.in.insert(d.in.end(), {kSlipEnd, kSlipEnd});  // empty frames are ignored
        want.push_back(random_tlp(r));
        d.frame(body_of(want.back()));
    }
    d.drain();
    expect_tlps(d.out, want);
    EXPECT_EQ(d.pongs, tokens);
    EXPECT_TRUE(d.errs.empty()) << "first error code " << int(d.errs.empty() ? 0 : d.errs[0].first);
    for (auto& e : d.errors) ADD_FAILURE() << e;
}

TEST(UartDown, DamagedFramesNeverReachTheNic) {
    auto r = test_rng();
    Down d(r);
    std::vector<StreamTlp> want;
    std::vector<uint8_t> codes;
    auto good = [&] {
        want.push_back(random_tlp(r));
        d.frame(body_of(want.back()));
    };
    for (int round = 0; round < 30; ++round) {
        good();
        StreamTlp t = random_tlp(r);
        auto body = body_of(t);
        switch (rnd(r, 8)) {
            case 0: {  // one ordinary byte changed into another ordinary byte: the CRC catches it
                auto f = slip_frame(body);
                size_t i;
                do i = 1 + static_cast<size_t>(rnd(r, static_cast<int>(f.size()) - 2));
                while (f[i] == kSlipEsc || f[i - 1] == kSlipEsc);
                uint8_t x;
                do x = f[i] ^ static_cast<uint8_t>(1 + rnd(r, 255));
                while (x == kSlipEnd || x == kSlipEsc);
                f[i] = x;
                d.in.insert(d.in.end(), f.begin(), f.end());
                codes.push_back(kErrCrc);
                break;
            }
            case 1: {  // ESC followed by an ordinary byte
                auto f = slip_frame(body);
                f.insert(f.begin() + 3, {kSlipEsc, 0x11});
                d.in.insert(d.in.end(), f.begin(), f.end());
                codes.push_back(kErrEsc);
                break;
            }
            case 2: {  // payload longer than 32 DWs: the frame is too long
                StreamTlp l = t;
                l.hdr[0] = (l.hdr[0] & ~0x3FFu) | 0x40000000u | 40;
                l.data.assign(40, 0x12345678u);
                d.frame(body_of(l));
                codes.push_back(kErrLong);
                break;
            }
            case 3:  // unknown frame type
                body[0] = static_cast<uint8_t>(2 + rnd(r, 100));
                d.frame(body);
                codes.push_back(kErrType);
                break;
            case 4:  // frame length does not match the header's LENGTH
                if (with_data(t) && rnd(r, 2))
                    body.resize(body.size() - 4);
                else
                    body.push_back(0x55);
                d.frame(body);
                // (one byte more than the longest TLP frame is a frame too long)
                codes.push_back(body.size() + 1 > 19 + 4 * kMaxPayloadDw ? kErrLong : kErrLen);
                break;
            case 5:  // BAR above 7
                body[1] = static_cast<uint8_t>(8 + rnd(r, 200));
                d.frame(body);
                codes.push_back(kErrLen);
                break;
            case 6: {  // a UART framing error inside the frame
                auto f = slip_frame(body);
                size_t cut = 2 + static_cast<size_t>(rnd(r, static_cast<int>(f.size()) - 3));
                d.in.insert(d.in.end(), f.begin(), f.begin() + static_cast<long>(cut));
                d.drain();
                d.ferr_next = true;
                d.run(3);
                d.in.insert(d.in.end(), f.begin() + static_cast<long>(cut), f.end());
                codes.push_back(kErrUart);
                break;
            }
            default: {  // a PING with a missing token byte, and a one-byte frame
                d.frame({kPing});
                codes.push_back(kErrLen);
                d.in.insert(d.in.end(), {kSlipEnd, 0x42, kSlipEnd});
                codes.push_back(kErrLen);
                break;
            }
        }
        d.drain();
    }
    good();
    d.drain();
    expect_tlps(d.out, want);
    std::vector<uint8_t> got;
    for (auto& [c, n] : d.errs) {
        EXPECT_EQ(n, 1) << "each error was reported at once";
        got.push_back(c);
    }
    EXPECT_EQ(got, codes);
    for (auto& e : d.errors) ADD_FAILURE() << e;
}

TEST(UartDown, ErrorsCountedWhileReportWaits) {
    auto r = test_rng();
    Down d(r);
    d.hold_err = true;
    for (int i = 0; i < 5; ++i) {
        auto body = body_of(random_tlp(r));
        body[0] = 0x33;  // unknown type
        d.frame(body);
    }
    d.frame({kPing});  // too short
    d.run(20000);
    d.hold_err = false;
    d.drain();
    ASSERT_EQ(d.errs.size(), 1u);
    EXPECT_EQ(d.errs[0].first, kErrType) << "the first error's code";
    EXPECT_EQ(d.errs[0].second, 6) << "all six counted";
    EXPECT_TRUE(d.out.empty());
}

TEST(UartDown, FlowControlStopsTheHostBeforeTheRingFills) {
    auto r = test_rng();
    Down d(r);
    d.gap_pct = 0;
    d.hold_ready = true;  // the NIC takes nothing: frames pile up in the ring
    std::vector<StreamTlp> want;
    for (int i = 0; i < 40; ++i) {
        want.push_back(random_tlp(r));
        d.frame(body_of(want.back()));
    }
    d.run(20000);
    EXPECT_GT(d.cts_seen, 0u) << "CTS must ask the host to stop";
    EXPECT_FALSE(d.in.empty()) << "the host stopped with frames left";
    d.hold_ready = false;
    d.drain();
    expect_tlps(d.out, want);
    EXPECT_TRUE(d.errs.empty()) << "no frame lost when the host honours CTS";
}

TEST(UartDown, HostIgnoringCtsLosesWholeFramesOnly) {
    auto r = test_rng();
    Down d(r);
    d.gap_pct = 0;
    d.honour_cts = false;
    d.hold_ready = true;
    std::vector<StreamTlp> sent;
    for (int i = 0; i < 30; ++i) {
        sent.push_back(random_tlp(r));
        d.frame(body_of(sent.back()));
    }
    d.run(30000);
    d.hold_ready = false;
    d.drain();
    // what came out is a prefix-ordered subsequence of what was sent, lost frames reported
    size_t j = 0;
    for (auto& t : d.out) {
        while (j < sent.size() && !(sent[j] == t)) ++j;
        ASSERT_LT(j, sent.size()) << "a TLP that was not sent (or out of order): " << str(t);
        ++j;
    }
    unsigned full = 0;
    for (auto& [c, n] : d.errs) {
        EXPECT_EQ(c, kErrFull);
        full += n;
    }
    EXPECT_GT(full, 0u);
    EXPECT_EQ(d.out.size() + full, sent.size()) << "every frame either delivered whole or reported lost";
    // afterwards the bridge works normally
    std::vector<StreamTlp> more;
    d.honour_cts = true;
    d.out.clear();
    for (int i = 0; i < 10; ++i) {
        more.push_back(random_tlp(r));
        d.frame(body_of(more.back()));
    }
    d.drain();
    expect_tlps(d.out, more);
    for (auto& e : d.errors) ADD_FAILURE() << e;
}

// ------------------------------------------------------------------ velo_uart_up bench
namespace {

struct Up {
    Harness<Vuart_up> h;
    std::mt19937_64& r;
    std::deque<StreamTlp> q;  // TLPs the NIC sends
    size_t beat = 0;          // next beat of q.front()
    SlipDecoder dec;
    int stall_pct = 30, gap_pct = 20;
    uint64_t tlps_done = 0;
    std::vector<uint64_t> done_at;  // frame count of the decoder when each TLP's last beat went
    std::vector<std::string> errors;

    explicit Up(std::mt19937_64& rng) : r(rng) {
        h->tlp_valid = 0;
        h->pong_valid = 0;
        h->err_valid = 0;
        h->irq_valid = 0;
        h->out_ready = 0;
        h.reset();
    }
    void cycle() {
        // the TLP source: a beat stays valid until taken; the header is garbage after the first
        if (!h->tlp_valid && !q.empty() && !pct(r, gap_pct)) h->tlp_valid = 1;
        if (h->tlp_valid) {
            const StreamTlp& t = q.front();
            size_t nb = std::max<size_t>(1, (t.data.size() + 1) / 2);
            h->tlp_sop = beat == 0;
            h->tlp_eop = beat == nb - 1;
            auto w = words(h->tlp_hdr);
            for (int i = 0; i < 4; ++i) w.w[i] = beat == 0 ? t.hdr[i] : static_cast<uint32_t>(r());
            uint64_t lo = 2 * beat < t.data.size() ? t.data[2 * beat] : 0;
            uint64_t hi = 2 * beat + 1 < t.data.size() ? t.data[2 * beat + 1] : 0;
            h->tlp_data = lo | (hi << 32);
        }
        h->out_ready = !pct(r, stall_pct);
        h.eval();
        if (h->out_valid && h->out_ready) dec.push(h->out_data);
        bool took = h->tlp_valid && h->tlp_ready;
        bool pong = h->pong_valid && h->pong_ack, err = h->err_valid && h->err_ack;
        bool irq = h->irq_valid && h->irq_ready;
        if (h->pong_ack && !h->pong_valid) errors.push_back("pong_ack without request");
        if (h->err_ack && !h->err_valid) errors.push_back("err_ack without request");
        h.tick();
        if (pong) h->pong_valid = 0;
        if (err) h->err_valid = 0;
        if (irq) h->irq_valid = 0;
        if (took) {
            const StreamTlp& t = q.front();
            size_t nb = std::max<size_t>(1, (t.data.size() + 1) / 2);
            if (++beat == nb) {
                beat = 0;
                q.pop_front();
                ++tlps_done;
            }
            h->tlp_valid = 0;
        }
    }
    void drain() {
        uint64_t quiet = 0;
        for (uint64_t i = 0; i < 3000000 && quiet < 100; ++i) {
            cycle();
            quiet = (q.empty() && !h->tlp_valid && !h->pong_valid && !h->err_valid && !h->irq_valid && !h->out_valid)
                        ? quiet + 1
                        : 0;
        }
        EXPECT_GE(quiet, 100u);
    }
};

}  // namespace

TEST(UartUp, TlpFramesCarryHeaderAndPayloadExactly) {
    auto r = test_rng();
    Up u(r);
    std::vector<StreamTlp> want;
    for (int i = 0; i < 300; ++i) {
        want.push_back(random_tlp(r));
        u.q.push_back(want.back());
    }
    u.drain();
    EXPECT_EQ(u.dec.bad_crc + u.dec.bad_escape, 0u);
    ASSERT_EQ(u.dec.frames.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        auto exp = body_of(want[i], kTlpUp);
        EXPECT_EQ(u.dec.frames[i], exp) << "frame " << i << " " << str(want[i]);
    }
    for (auto& e : u.errors) ADD_FAILURE() << e;
}

TEST(UartUp, ReportsTakePriorityAndInterruptsFollowTheirTlps) {
    auto r = test_rng();
    Up u(r);
    // all at once while idle: ERROR, PONG, IRQ, then the TLP
    u.q.push_back(random_tlp(r, 4));
    u.h->err_valid = 1;
    u.h->err_code = kErrCrc;
    u.h->err_cnt = 2;
    u.h->pong_valid = 1;
    u.h->pong_token = 0xC0;  // a token that needs escaping
    u.h->irq_valid = 1;
    u.drain();
    ASSERT_EQ(u.dec.frames.size(), 4u);
    EXPECT_EQ(u.dec.frames[0], (std::vector<uint8_t>{kError, kErrCrc, 2}));
    EXPECT_EQ(u.dec.frames[1], (std::vector<uint8_t>{kPong, 0xC0, kProtocolVersion}));
    EXPECT_EQ(u.dec.frames[2], (std::vector<uint8_t>{kIrq}));
    EXPECT_EQ(u.dec.frames[3][0], kTlpUp);
    // interrupts raised as TLPs finish come after those TLPs' frames
    u.dec.frames.clear();
    uint64_t base = u.tlps_done;
    std::vector<size_t> irq_after;  // TLPs finished when each IRQ was raised
    for (int i = 0; i < 60; ++i) u.q.push_back(random_tlp(r, 16));
    for (uint64_t c = 0; c < 3000000 && (!u.q.empty() || u.h->irq_valid || u.h->out_valid); ++c) {
        if (!u.h->irq_valid && pct(r, 2)) {
            u.h->irq_valid = 1;
            irq_after.push_back(u.tlps_done - base);
        }
        u.cycle();
    }
    u.drain();
    size_t tlps = 0, irqs = 0;
    for (auto& f : u.dec.frames) {
        if (f[0] == kTlpUp) ++tlps;
        if (f[0] == kIrq) {
            ASSERT_LT(irqs, irq_after.size());
            EXPECT_GE(tlps, irq_after[irqs]) << "IRQ " << irqs << " overtook a TLP that finished before it";
            ++irqs;
        }
    }
    EXPECT_EQ(tlps, 60u);
    EXPECT_EQ(irqs, irq_after.size());
    for (auto& e : u.errors) ADD_FAILURE() << e;
}

// ------------------------------------------------------------------ the bridge over serial lines
TEST(UartBridge, SerialRoundTripThroughLoopback) {
    // host -> rxd -> bridge -> (NIC side looped back through a FIFO) -> bridge -> txd -> host
    auto r = test_rng();
    Harness<Vuart_bridge> h;
    BoardHost host(velo::sim::ModelParams<Vuart_bridge>::CLKS_PER_BIT);
    unsigned seed = static_cast<unsigned>(r());
    host.tx.rng_state = &seed;
    host.tx.gap_pct = 20;
    h->rxd = 1;
    h->tx_valid = 0;
    h->irq_valid = 0;
    h.reset();
    std::deque<Tlp> want;
    std::vector<Tlp> got;
    host.on_tlp = [&](const Tlp& t) { got.push_back(t); };
    // random TLPs built by the host model (as a program would), all kinds the NIC sees or sends
    for (int i = 0; i < 80; ++i) {
        Tlp t;
        switch (rnd(r, 4)) {
            case 0: {
                std::vector<uint8_t> b(1 + rnd(r, 64));
                for (auto& x : b) x = static_cast<uint8_t>(r());
                uint64_t a = (pct(r, 50) ? 0x4000000000ull : 0) + static_cast<uint64_t>(rnd(r, 1 << 20));
                t = Tlp::mwr(a, b, 2);
                break;
            }
            case 1:
                t = Tlp::mrd(static_cast<uint64_t>(rnd(r, 1 << 21)) & ~3ull, 1 + rnd(r, 2), static_cast<uint8_t>(r()),
                             0);
                break;
            default: {
                std::vector<uint8_t> b(4 * (1 + rnd(r, 2)));
                for (auto& x : b) x = static_cast<uint8_t>(r());
                t = Tlp::mwr(static_cast<uint64_t>(rnd(r, 1 << 19)) * 4, b, 0);
            }
        }
        want.push_back(t);
        host.send_tlp(t);
        if (pct(r, 10)) host.send_ping(static_cast<uint8_t>(i));
    }
    // the loopback: every beat the bridge emits goes back in, one beat buffered
    std::deque<std::tuple<bool, bool, std::array<uint32_t, 4>, uint64_t>> fifo;
    uint64_t irq_sent = 0;
    for (uint64_t c = 0; c < 4000000; ++c) {
        h->rx_ready = fifo.size() < 4 && !pct(r, 20);
        if (!fifo.empty()) {
            auto& [s, e, hd, d] = fifo.front();
            h->tx_valid = 1;
            h->tx_sop = s;
            h->tx_eop = e;
            auto w = words(h->tx_hdr);
            for (int i = 0; i < 4; ++i) w.w[i] = hd[i];
            h->tx_data = d;
        } else {
            h->tx_valid = 0;
        }
        if (!h->irq_valid && c % 50000 == 1000 && c < 200000) h->irq_valid = 1;
        h.eval();
        if (h->rx_valid && h->rx_ready) {
            std::array<uint32_t, 4> hd;
            auto w = words(h->rx_hdr);
            for (int i = 0; i < 4; ++i) hd[i] = w.w[i];
            fifo.emplace_back(h->rx_sop, h->rx_eop, hd, h->rx_data);
        }
        bool took = h->tx_valid && h->tx_ready;
        bool irq = h->irq_valid && h->irq_ready;
        h->rxd = host.step(h->txd, h->cts_n);
        h.tick();
        if (took) fifo.pop_front();
        if (irq) {
            h->irq_valid = 0;
            ++irq_sent;
        }
        if (got.size() == want.size() && host.tx_idle() && fifo.empty() && c > 200000 && host.irqs == irq_sent &&
            !h->irq_valid)
            break;
    }
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        const Tlp &a = got[i], &b = want[i];
        EXPECT_EQ(a.fmt_type, b.fmt_type) << i;
        EXPECT_EQ(a.len_dw, b.len_dw) << i;
        EXPECT_EQ(a.addr, b.addr) << i;
        EXPECT_EQ(a.first_be, b.first_be) << i;
        EXPECT_EQ(a.last_be, b.last_be) << i;
        EXPECT_EQ(a.tag, b.tag) << i;
        EXPECT_EQ(a.payload, b.payload) << i;
    }
    EXPECT_GT(host.pongs.size(), 0u);
    EXPECT_EQ(host.irqs, irq_sent);
    EXPECT_TRUE(host.errors_reported.empty());
    for (auto& e : host.errors) ADD_FAILURE() << e;
    EXPECT_EQ(host.rx.frame_errors, 0u);
}

TEST(UartProtocol, Crc8CheckValueAndSlipEscapes) {
    // the documented CRC (polynomial 0x07, init 0, no final XOR): check value of "123456789"
    const char* s = "123456789";
    EXPECT_EQ(crc8(reinterpret_cast<const uint8_t*>(s), 9), 0xF4);
    // and the documented example frame: a write of 1 to CTRL.CONTROL (BAR0 0x110)
    Tlp t = Tlp::mwr(0x110, {1, 0, 0, 0}, 0);
    std::vector<uint8_t> body = tlp_body(t);
    std::vector<uint8_t> want{0x01, 0x00, 0x01, 0x00, 0x00, 0x40, 0x0F, 0x00, 0x00,
                              0x00, 0x10, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00};
    EXPECT_EQ(body, want);
    auto f = slip_frame({0xC0, 0xDB, 0x00});
    uint8_t c = crc8(std::vector<uint8_t>{0xC0, 0xDB, 0x00}.data(), 3);
    std::vector<uint8_t> enc{kSlipEnd, kSlipEsc, kSlipEscEnd, kSlipEsc, kSlipEscEsc, 0x00};
    if (c == kSlipEnd || c == kSlipEsc)
        enc.insert(enc.end(), {kSlipEsc, c == kSlipEnd ? kSlipEscEnd : kSlipEscEsc});
    else
        enc.push_back(c);
    enc.push_back(kSlipEnd);
    EXPECT_EQ(f, enc);
}
