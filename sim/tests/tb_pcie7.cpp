// 7-series PCIe board target (rtl/board/xc7): the adapters between the Xilinx pcie_7x core's
// 64-bit AXI4-Stream interface and the NIC's TLP stream, the MSI adapter, the link PHY's elastic
// buffer, and two complete board designs (adapters + NIC) cabled together, all driven by a C++
// model of the core's user interface (what PG054 describes the core to emit and accept: packed
// header and payload DWs, DW0 in tdata[31:0], payload bytes in wire order within a DW, tkeep on
// the last beat, BAR hit in tuser[8:2], the cfg_interrupt/cfg_interrupt_rdy handshake). The real
// hard block is not simulated here; docs/board-xc7.md says what this does and does not prove.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "Velastic.h"
#include "Vpcie7_irq.h"
#include "Vpcie7_pair.h"
#include "Vpcie7_rx.h"
#include "Vpcie7_tx.h"
#include "harness.hpp"
#include "host.hpp"
#include "tlp.hpp"
#include "velo/velo_hw.h"

using velo::sim::Harness;
using velo::sim::HostMem;
using velo::sim::MailboxReader;
using velo::sim::MboxEntry;
using velo::sim::Msg;
using velo::sim::pct;
using velo::sim::Recombiner;
using velo::sim::rnd;
using velo::sim::Scoreboard;
using velo::sim::test_name;
using velo::sim::test_rng;
using velo::sim::test_seed;
using velo::sim::Tlp;
using velo::sim::TlpDriver;
using velo::sim::TlpInPins;
using velo::sim::WcMode;
using velo::sim::Words;
using velo::sim::words;

namespace {

// ------------------------------------------------------------------------------------------------
// Model of the pcie_7x core's user interface
// ------------------------------------------------------------------------------------------------

constexpr uint32_t kTdBit = 1u << 15;  // header DW0: TLP digest present

bool with_data(uint8_t fmt_type) {
    return (fmt_type & 0x40) != 0;
}
unsigned len_of(const Tlp& t) {
    return t.len_dw ? t.len_dw : 1024;
}
// Payload DW i in the core's byte order: the byte at the lowest address in [31:24].
uint32_t wire_dw(const std::vector<uint8_t>& p, size_t i) {
    uint32_t w = 0;
    for (size_t b = 0; b < 4; ++b) {
        size_t k = 4 * i + b;
        w |= static_cast<uint32_t>(k < p.size() ? p[k] : 0) << (24 - 8 * b);
    }
    return w;
}
void append_wire_dw(std::vector<uint8_t>& p, uint32_t w) {
    for (int b = 0; b < 4; ++b) p.push_back(static_cast<uint8_t>(w >> (24 - 8 * b)));
}
// A TLP as the core's AXI4-Stream carries it: header DWs, payload DWs, optional digest.
std::vector<uint32_t> core_dws(const Tlp& t, bool digest, uint32_t digest_value) {
    uint32_t h[4];
    t.encode(h);
    if (digest) h[0] |= kTdBit;
    std::vector<uint32_t> v(h, h + (t.is_4dw() ? 4 : 3));
    if (with_data(t.fmt_type))
        for (unsigned i = 0; i < len_of(t); ++i) v.push_back(wire_dw(t.payload, i));
    if (digest) v.push_back(digest_value);
    return v;
}
// BAR index (0..5, 6 expansion ROM, 7 none) -> the core's one-hot rx_bar_hit
uint8_t bar_hit(uint8_t bar) {
    return bar >= 7 ? 0 : static_cast<uint8_t>(1u << bar);
}
std::string hex_dws(const uint32_t* d, int n) {
    std::string s;
    char b[12];
    for (int i = 0; i < n; ++i) {
        std::snprintf(b, sizeof b, "%s%08x", i ? "." : "", d[i]);
        s += b;
    }
    return s;
}

struct RxPins {  // the core's m_axis_rx, core -> DUT
    uint8_t* tvalid;
    uint8_t* tready;
    uint64_t* tdata;
    uint8_t* tkeep;
    uint8_t* tlast;
    uint32_t* tuser;
};

// The core's receive side: presents queued TLPs beat by beat (3/4-DW header packed with the
// payload), holds a beat until it is taken, leaves random gaps between and inside TLPs. The BAR
// hit (and is_sof) is on the first beat, is_eof on the last; the unused upper DW of an odd last
// beat and tuser[8:2] on later beats carry junk, as the adapter must not look at them.
class CoreRx {
  public:
    CoreRx(RxPins p, std::mt19937_64& r) : p_(p), r_(r) {}
    void push(const Tlp& t, bool digest = false) {
        q_.push_back(Item{core_dws(t, digest, static_cast<uint32_t>(r_())), bar_hit(t.bar)});
    }
    bool idle() const { return q_.empty(); }
    size_t queued() const { return q_.size(); }
    int gap_pct = 0;
    uint64_t beats = 0;

    void drive() {
        if (q_.empty()) {
            *p_.tvalid = 0;
            return;
        }
        if (!shown_ && gap_pct && pct(r_, gap_pct)) {
            *p_.tvalid = 0;
            return;
        }
        shown_ = true;
        const Item& it = q_.front();
        size_t n = (it.dws.size() + 1) / 2;
        bool last = beat_ == n - 1;
        uint32_t junk = 0xA5C3E187u ^ static_cast<uint32_t>(beat_ * 0x9E3779B9u);
        uint32_t lo = it.dws[2 * beat_];
        uint32_t hi = 2 * beat_ + 1 < it.dws.size() ? it.dws[2 * beat_ + 1] : junk;
        bool odd = last && (it.dws.size() & 1);
        *p_.tvalid = 1;
        *p_.tdata = static_cast<uint64_t>(hi) << 32 | lo;
        *p_.tkeep = odd ? 0x0F : 0xFF;
        *p_.tlast = last;
        uint32_t u = beat_ == 0 ? (static_cast<uint32_t>(it.hit) << 2 | 1u << 14) : ((junk & 0x7F) << 2);
        if (last) u |= (1u << 21) | (odd ? 3u : 7u) << 17;
        *p_.tuser = u;
    }
    void sample() {
        if (q_.empty() || !*p_.tvalid || !*p_.tready) return;
        ++beats;
        shown_ = false;
        if (++beat_ == (q_.front().dws.size() + 1) / 2) {
            beat_ = 0;
            q_.pop_front();
        }
    }

  private:
    struct Item {
        std::vector<uint32_t> dws;
        uint8_t hit;
    };
    RxPins p_;
    std::mt19937_64& r_;
    std::deque<Item> q_;
    size_t beat_ = 0;
    bool shown_ = false;
};

struct TxPins {  // the core's s_axis_tx, DUT -> core
    uint8_t* tvalid;
    uint8_t* tready;
    uint64_t* tdata;
    uint8_t* tkeep;
    uint8_t* tlast;
    uint8_t* tuser;
};

// The core's transmit side: takes beats with random back pressure, checks the AXI4-Stream rules
// (a beat offered is held unchanged until taken) and the packing the core requires (header DWs
// then payload DWs, as many as Length says, tkeep 0xFF on all beats but the last, tuser 0), and
// decodes each TLP (payload bytes back to address order).
class CoreTx {
  public:
    explicit CoreTx(TxPins p, std::mt19937_64& r) : p_(p), r_(r) {}
    int stall_pct = 0;
    std::function<void(const Tlp&, const std::array<uint32_t, 4>&)> on_tlp;
    std::vector<std::string> errors;
    uint64_t tlps = 0;
    bool eop = false;  // a TLP's last beat was taken this cycle

    void drive() { *p_.tready = (stall_pct && pct(r_, stall_pct)) ? 0 : 1; }
    void sample() {
        eop = false;
        if (held_ && !(*p_.tvalid && *p_.tdata == hd_ && *p_.tkeep == hk_ && *p_.tlast == hl_))
            err("s_axis_tx: an offered beat changed or was withdrawn before it was taken");
        held_ = *p_.tvalid && !*p_.tready;
        hd_ = *p_.tdata;
        hk_ = *p_.tkeep;
        hl_ = *p_.tlast;
        if (!*p_.tvalid || !*p_.tready) return;
        if (*p_.tuser) err("s_axis_tx: tuser is not 0");
        dws_.push_back(static_cast<uint32_t>(*p_.tdata));
        if (*p_.tkeep == 0xFF) {
            dws_.push_back(static_cast<uint32_t>(*p_.tdata >> 32));
        } else if (!*p_.tlast || *p_.tkeep != 0x0F) {
            err("s_axis_tx: tkeep " + std::to_string(*p_.tkeep) + (*p_.tlast ? " on the last beat" : " mid-TLP"));
        }
        if (*p_.tlast) finish();
    }

  private:
    void err(const std::string& s) {
        if (errors.size() < 20) errors.push_back(s);
    }
    void finish() {
        eop = true;
        ++tlps;
        std::vector<uint32_t> d;
        d.swap(dws_);
        if (d.size() < 3) return err("s_axis_tx: TLP shorter than a header");
        bool is4 = (d[0] >> 29) & 1;
        bool wd = (d[0] >> 30) & 1;
        unsigned len = d[0] & 0x3FF;
        if (!len) len = 1024;
        size_t hn = is4 ? 4 : 3;
        size_t want = hn + (wd ? len : 0);
        if (d.size() != want)
            return err("s_axis_tx: TLP has " + std::to_string(d.size()) + " DWs, header says " + std::to_string(want));
        std::array<uint32_t, 4> h{d[0], d[1], d[2], is4 ? d[3] : 0u};
        Tlp t = Tlp::decode(h.data());
        for (size_t i = hn; i < d.size(); ++i) append_wire_dw(t.payload, d[i]);
        if (on_tlp) on_tlp(t, h);
    }
    TxPins p_;
    std::mt19937_64& r_;
    std::vector<uint32_t> dws_;
    bool held_ = false;
    uint64_t hd_ = 0;
    uint8_t hk_ = 0, hl_ = 0;
};

// ------------------------------------------------------------------------------------------------
// TLP shapes
// ------------------------------------------------------------------------------------------------

std::vector<uint8_t> random_bytes(std::mt19937_64& r, size_t n) {
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = static_cast<uint8_t>(r());
    return b;
}
Tlp cpl(bool data, unsigned len_dw, uint8_t tag, std::mt19937_64& r) {
    Tlp t;
    t.fmt_type = data ? VELO_TLP_FMT_TYPE_CPLD : VELO_TLP_FMT_TYPE_CPL;
    t.len_dw = static_cast<uint16_t>(data ? len_dw : 0);
    t.cpl_id = 0x0100;
    t.cpl_status = data ? VELO_TLP_CPL_SC : VELO_TLP_CPL_UR;
    t.byte_count = static_cast<uint16_t>(4 * len_dw);
    t.req_id = 0x0008;
    t.tag = tag;
    t.lower_addr = static_cast<uint8_t>(r() & 0x7C);
    if (data) t.payload = random_bytes(r, 4 * len_dw);
    return t;
}
Tlp msg(bool data, unsigned len_dw, std::mt19937_64& r) {
    Tlp t;
    t.fmt_type = data ? 0x70 : 0x30;  // Msg(D), routed to the root complex, 4-DW header
    t.len_dw = static_cast<uint16_t>(data ? len_dw : 0);
    t.req_id = 0x0000;
    t.addr = r() & ~3ull;
    t.bar = 7;
    if (data) t.payload = random_bytes(r, 4 * len_dw);
    return t;
}
// A random TLP of any kind the core delivers to an endpoint (rx) or the NIC sends (tx).
Tlp random_tlp(std::mt19937_64& r, bool for_rx) {
    int k = rnd(r, for_rx ? 8 : 6);
    uint64_t a32 = 0xF0000000ull + (r() & 0x1FFFFF);
    uint64_t a64 = 0x4000000000ull + (r() & 0xFFFFFFFFFull);
    uint8_t bar = static_cast<uint8_t>(rnd(r, 8));
    switch (k) {
        case 0:
        case 1: {  // memory write, any length and alignment (mostly short, sometimes long)
            size_t n = 1 + static_cast<size_t>(pct(r, 10) ? rnd(r, 1024) : rnd(r, 72));
            return Tlp::mwr(k ? a64 : a32, random_bytes(r, n), bar);
        }
        case 2:
            return Tlp::mrd(pct(r, 50) ? a64 : a32, 1 + static_cast<unsigned>(rnd(r, 2)), static_cast<uint8_t>(r()),
                            bar);
        case 3:
            return cpl(true, 1 + static_cast<unsigned>(rnd(r, pct(r, 20) ? 128 : 4)), static_cast<uint8_t>(r()), r);
        case 4:
            return cpl(false, 1, static_cast<uint8_t>(r()), r);
        case 5:
            return Tlp::mwr(pct(r, 50) ? a64 : a32, random_bytes(r, 1 + static_cast<size_t>(rnd(r, 64))), bar);
        case 6:
            return msg(false, 0, r);
        default:
            return msg(true, 1 + static_cast<unsigned>(rnd(r, 3)), r);
    }
}
// Directed shapes: every length 1..10 DW at every first-byte alignment, 3- and 4-DW headers,
// reads, completions with and without data, messages, and the largest payload (Length 0 = 1024).
std::vector<Tlp> directed_tlps(std::mt19937_64& r, bool for_rx) {
    std::vector<Tlp> v;
    for (uint64_t base : {0xF0001000ull, 0x4000002000ull})
        for (unsigned off = 0; off < 4; ++off)
            for (unsigned ndw = 1; ndw <= 10; ++ndw) {
                size_t n = 4 * ndw - off - (ndw > 1 ? r() % 4 : 0);
                v.push_back(Tlp::mwr(base + off, random_bytes(r, std::max<size_t>(1, n)), VELO_BAR_SEND));
            }
    v.push_back(Tlp::mrd(0xF0000010, 1, 1, VELO_BAR_REGS));
    v.push_back(Tlp::mrd(0xF0000010, 2, 2, VELO_BAR_REGS));
    v.push_back(Tlp::mrd(0x4000000010ull, 1, 3, VELO_BAR_SEND));
    for (unsigned n : {1u, 2u, 3u, 16u}) v.push_back(cpl(true, n, static_cast<uint8_t>(n), r));
    v.push_back(cpl(false, 1, 9, r));
    if (for_rx) {
        v.push_back(msg(false, 0, r));
        v.push_back(msg(true, 1, r));
        v.push_back(msg(true, 2, r));
    }
    v.push_back(Tlp::mwr(0xF0000000ull, random_bytes(r, 4096), VELO_BAR_REGS));    // Length 0: 1024 DW
    v.push_back(Tlp::mwr(0x4000000000ull, random_bytes(r, 4096), VELO_BAR_SEND));  // 4-DW header
    return v;
}

// ------------------------------------------------------------------------------------------------
// velo_pcie7_rx: core -> NIC stream
// ------------------------------------------------------------------------------------------------

struct RxOut {  // one TLP as the NIC received it
    std::array<uint32_t, 4> hdr{};
    uint8_t bar = 0;
    std::vector<uint8_t> bytes;
    unsigned beats = 0;
};

class RxBench {
  public:
    explicit RxBench(std::mt19937_64& r)
        : r_(r),
          core_(RxPins{&h->m_axis_rx_tvalid, &h->m_axis_rx_tready, &h->m_axis_rx_tdata, &h->m_axis_rx_tkeep,
                       &h->m_axis_rx_tlast, &h->m_axis_rx_tuser},
                r) {
        h->rx_ready = 1;
        h.reset();
    }
    Harness<Vpcie7_rx> h;
    int stall_pct = 0;
    std::vector<std::string> errors;

    void push(const Tlp& t, bool digest) {
        core_.push(t, digest);
        uint32_t d[4];
        t.encode(d);
        if (digest) d[0] |= kTdBit;
        if (!t.is_4dw()) d[3] = 0;
        Exp e;
        std::copy(d, d + 4, e.hdr.begin());
        e.bar = t.bar;
        if (with_data(t.fmt_type)) e.bytes.assign(t.payload.begin(), t.payload.begin() + 4 * len_of(t));
        e.beats = with_data(t.fmt_type) ? (len_of(t) + 1) / 2 : 1;
        exp_.push_back(e);
    }
    void gaps(int gap) { core_.gap_pct = gap; }
    uint64_t core_beats() const { return core_.beats; }

    // Runs until every TLP came out (or max_cycles); returns the cycles used.
    uint64_t run(uint64_t max_cycles) {
        uint64_t c0 = h.cycle();
        while ((!core_.idle() || !exp_.empty()) && h.cycle() - c0 < max_cycles) step();
        for (int i = 0; i < 8; ++i) step();  // nothing more may come out
        return h.cycle() - c0;
    }
    bool done() const { return exp_.empty(); }

  private:
    struct Exp : RxOut {};
    void err(const std::string& s) {
        if (errors.size() < 20) errors.push_back(s);
    }
    void step() {
        core_.drive();
        h->rx_ready = (stall_pct && pct(r_, stall_pct)) ? 0 : 1;
        h.eval();
        // the NIC side: an offered beat stays unchanged until taken
        Words hw = words(h->rx_hdr);
        std::array<uint32_t, 4> hdr{hw.w[0], hw.w[1], hw.w[2], hw.w[3]};
        if (held_ && !(h->rx_valid && h->rx_data == hd_ && h->rx_sop == hs_ && h->rx_eop == he_ &&
                       (!hs_ || (hdr == hh_ && h->rx_bar == hb_))))
            err("rx: an offered NIC beat changed before it was taken");
        held_ = h->rx_valid && !h->rx_ready;
        hd_ = h->rx_data;
        hs_ = h->rx_sop;
        he_ = h->rx_eop;
        hh_ = hdr;
        hb_ = h->rx_bar;
        if (h->rx_valid && h->rx_ready) take(hdr);
        core_.sample();
        h.tick();
    }
    void take(const std::array<uint32_t, 4>& hdr) {
        if (h->rx_sop) {
            if (in_) err("rx: sop inside a TLP");
            in_ = true;
            cur_ = RxOut{};
            cur_.hdr = hdr;
            cur_.bar = h->rx_bar;
        } else if (!in_) {
            return err("rx: beat outside a TLP");
        }
        ++cur_.beats;
        for (int i = 0; i < 8; ++i) cur_.bytes.push_back(static_cast<uint8_t>(h->rx_data >> (8 * i)));
        if (!h->rx_eop) return;
        in_ = false;
        if (exp_.empty()) return err("rx: unexpected TLP " + hex_dws(cur_.hdr.data(), 4));
        Exp e = exp_.front();
        exp_.pop_front();
        std::string who = "TLP " + hex_dws(e.hdr.data(), 4);
        if (cur_.hdr != e.hdr) err(who + ": header came out as " + hex_dws(cur_.hdr.data(), 4));
        if (cur_.bar != e.bar) err(who + ": BAR " + std::to_string(cur_.bar) + ", want " + std::to_string(e.bar));
        if (cur_.beats != e.beats)
            err(who + ": " + std::to_string(cur_.beats) + " beats, want " + std::to_string(e.beats));
        cur_.bytes.resize(std::min(cur_.bytes.size(), e.bytes.size()));
        if (cur_.bytes != e.bytes) err(who + ": payload differs");
    }
    std::mt19937_64& r_;
    CoreRx core_;
    std::deque<Exp> exp_;
    bool in_ = false;
    RxOut cur_;
    bool held_ = false;
    uint64_t hd_ = 0;
    uint8_t hs_ = 0, he_ = 0, hb_ = 0;
    std::array<uint32_t, 4> hh_{};
};

TEST(Pcie7Rx, DirectedShapesAllBarsFullRate) {
    auto r = test_rng();
    RxBench b(r);
    auto v = directed_tlps(r, true);
    unsigned i = 0;
    for (auto& t : v) {
        if (t.bar != 7 || !(t.fmt_type & 0x10)) t.bar = static_cast<uint8_t>(i++ % 8);  // every BAR index, none
        b.push(t, false);
    }
    uint64_t tlps = v.size();
    uint64_t cycles = b.run(200000);
    EXPECT_TRUE(b.done());
    for (auto& e : b.errors) ADD_FAILURE() << e;
    // no bubbles beyond the one realigned last DW per 3-DW TLP with an even payload length
    EXPECT_LE(cycles, b.core_beats() + tlps + 16) << "adapter stalls without back pressure";
}

TEST(Pcie7Rx, DigestDwIsDropped) {
    auto r = test_rng();
    RxBench b(r);
    for (unsigned n = 1; n <= 6; ++n) {
        b.push(Tlp::mwr(0xF0000100 + 4 * n, random_bytes(r, 4 * n), VELO_BAR_REGS), true);
        b.push(Tlp::mwr(0x4000000100ull + 4 * n, random_bytes(r, 4 * n), VELO_BAR_SEND), true);
    }
    b.push(Tlp::mrd(0xF0000010, 1, 5, VELO_BAR_REGS), true);
    b.push(cpl(false, 1, 6, r), true);
    b.run(20000);
    EXPECT_TRUE(b.done());
    for (auto& e : b.errors) ADD_FAILURE() << e;
}

TEST(Pcie7Rx, RandomWithBackPressureBothSides) {
    auto r = test_rng();
    RxBench b(r);
    for (int round = 0; round < 4; ++round) {
        b.gaps(rnd(r, 60));
        b.stall_pct = rnd(r, 60);
        for (int i = 0; i < 400; ++i) b.push(random_tlp(r, true), pct(r, 5));
        b.run(400000);
        ASSERT_TRUE(b.done()) << "round " << round << " did not drain";
    }
    for (auto& e : b.errors) ADD_FAILURE() << e;
}

// ------------------------------------------------------------------------------------------------
// velo_pcie7_tx: NIC stream -> core
// ------------------------------------------------------------------------------------------------

class TxBench {
  public:
    explicit TxBench(std::mt19937_64& r)
        : drv_(TlpInPins{&h->tx_valid, &h->tx_ready, &h->tx_sop, &h->tx_eop, words(h->tx_hdr), nullptr,
                         words(h->tx_data)}),
          core_(TxPins{&h->s_axis_tx_tvalid, &h->s_axis_tx_tready, &h->s_axis_tx_tdata, &h->s_axis_tx_tkeep,
                       &h->s_axis_tx_tlast, &h->s_axis_tx_tuser},
                r) {
        drv_.rng = &r;
        core_.on_tlp = [this](const Tlp& t, const std::array<uint32_t, 4>& hdr) { check(t, hdr); };
        h.reset();
    }
    Harness<Vpcie7_tx> h;
    std::vector<std::string> errors;

    void push(const Tlp& t) {
        drv_.push(t);
        exp_.push_back(t);
    }
    void pressure(int nic_gap, bool mid, int core_stall) {
        drv_.gap_pct = nic_gap;
        drv_.mid_tlp_gaps = mid;
        core_.stall_pct = core_stall;
    }
    uint64_t run(uint64_t max_cycles) {
        uint64_t c0 = h.cycle();
        while ((!drv_.idle() || !exp_.empty()) && h.cycle() - c0 < max_cycles) step();
        for (int i = 0; i < 8; ++i) step();
        return h.cycle() - c0;
    }
    bool done() const { return exp_.empty(); }
    uint64_t nic_beats() const { return drv_.beats_sent; }
    unsigned max_pending = 0;

  private:
    void err(const std::string& s) {
        if (errors.size() < 20) errors.push_back(s);
    }
    void check(const Tlp& got, const std::array<uint32_t, 4>& hdr) {
        if (exp_.empty()) return err("tx: unexpected TLP " + hex_dws(hdr.data(), 4));
        Tlp e = exp_.front();
        exp_.pop_front();
        uint32_t d[4];
        e.encode(d);
        if (!e.is_4dw()) d[3] = 0;
        std::string who = "TLP " + hex_dws(d, 4);
        if (!std::equal(d, d + 4, hdr.begin())) err(who + ": header went out as " + hex_dws(hdr.data(), 4));
        std::vector<uint8_t> want;
        if (with_data(e.fmt_type)) want.assign(e.payload.begin(), e.payload.begin() + 4 * len_of(e));
        if (got.payload != want) err(who + ": payload differs");
    }
    void step() {
        drv_.drive();
        core_.drive();
        h.eval();
        bool nic_eop = drv_.sample();
        core_.sample();
        in_adapter_ += nic_eop ? 1 : 0;
        in_adapter_ -= core_.eop ? 1 : 0;
        h.tick();
        // pending: TLPs handed over by the NIC whose last beat the core has not taken yet
        if (h->pending != in_adapter_)
            err("tx: pending " + std::to_string(h->pending) + ", want " + std::to_string(in_adapter_));
        max_pending = std::max(max_pending, in_adapter_);
    }
    TlpDriver drv_;
    CoreTx core_;
    std::deque<Tlp> exp_;
    unsigned in_adapter_ = 0;
};

TEST(Pcie7Tx, DirectedShapesFullRate) {
    auto r = test_rng();
    TxBench b(r);
    auto v = directed_tlps(r, false);
    for (auto& t : v) b.push(t);
    uint64_t cycles = b.run(200000);
    EXPECT_TRUE(b.done());
    for (auto& e : b.errors) ADD_FAILURE() << e;
    // two header beats ahead of the payload, plus the realigned last DW
    EXPECT_LE(cycles, b.nic_beats() + 2 * v.size() + 16) << "adapter stalls without back pressure";
    EXPECT_LE(b.max_pending, 1u);
}

TEST(Pcie7Tx, RandomWithBackPressureBothSides) {
    auto r = test_rng();
    TxBench b(r);
    for (int round = 0; round < 4; ++round) {
        b.pressure(rnd(r, 60), pct(r, 50), rnd(r, 60));
        for (int i = 0; i < 400; ++i) b.push(random_tlp(r, false));
        b.run(400000);
        ASSERT_TRUE(b.done()) << "round " << round << " did not drain";
    }
    for (auto& e : b.errors) ADD_FAILURE() << e;
    EXPECT_LE(b.max_pending, 2u);
}

// ------------------------------------------------------------------------------------------------
// velo_pcie7_irq: NIC request -> cfg_interrupt, ordered behind the data TLPs
// ------------------------------------------------------------------------------------------------

// The interrupt adapter against a model of the transmit adapter (TLPs handed over by the NIC
// and later taken by the core, at most three inside) and of the core's cfg_interrupt side.
class IrqBench {
  public:
    explicit IrqBench(std::mt19937_64& r) : r_(r) {
        h->irq_valid = 0;
        h->tx_pending = 0;
        h->tx_nic_eop = 0;
        h->tx_core_eop = 0;
        h->cfg_interrupt_rdy = 0;
        h->cfg_interrupt_msienable = 1;
        h.reset();
    }
    Harness<Vpcie7_irq> h;
    std::vector<std::string> errors;
    int tlp_pct = 30;   // NIC hands over a TLP's last beat
    int take_pct = 40;  // the core takes the oldest TLP's last beat
    int irq_pct = 5;    // the NIC raises a request (when it has none outstanding)
    bool msi_enabled = true;
    int rdy_delay_max = 4;
    bool answer = true;  // the core answers cfg_interrupt at all
    uint64_t requests = 0, msis = 0, dropped = 0, withdrawn = 0;

    void run(uint64_t cycles) {
        for (uint64_t i = 0; i < cycles; ++i) step();
    }
    // no request in flight anywhere
    bool quiet() { return !irq_ && !h->cfg_interrupt; }

  private:
    void err(const std::string& s) {
        if (errors.size() < 20) errors.push_back(s + " (cycle " + std::to_string(h.cycle()) + ")");
    }
    void step() {
        // transmit adapter model: at most three TLPs inside (the real one holds at most two)
        bool nic_eop = pending_ < 3 && pct(r_, tlp_pct);
        bool core_eop = pending_ > 0 && pct(r_, take_pct);
        h->tx_pending = static_cast<uint8_t>(pending_);
        h->tx_nic_eop = nic_eop;
        h->tx_core_eop = core_eop;
        // the NIC: raise a request, hold it until taken
        if (!irq_ && pct(r_, irq_pct)) irq_ = true;
        h->irq_valid = irq_;
        h->cfg_interrupt_msienable = msi_enabled;
        // the core: answer cfg_interrupt after a random delay
        h->cfg_interrupt_rdy = h->cfg_interrupt && answer && rdy_wait_ == 0;
        h.eval();
        handed_ += nic_eop ? 1 : 0;
        if (irq_ && h->irq_ready) {
            irq_ = false;
            ++requests;
            // every TLP the NIC handed over up to now (this cycle included) must be in the core first
            need_.push_back(handed_);
        }
        if (h->cfg_interrupt) {
            if (need_.empty()) {
                err("cfg_interrupt without a request");
            } else if (taken_ < need_.front()) {
                err("cfg_interrupt while " + std::to_string(need_.front() - taken_) +
                    " earlier TLP(s) are not in the core yet");
            }
            if (h->cfg_interrupt_assert || h->cfg_interrupt_di)
                err("cfg_interrupt_assert/di must be 0 for a single-vector MSI");
            // the adapter sees MSI disabled in this cycle and must let go at the next edge
            if (!msi_enabled && !msi_was_) err("cfg_interrupt asserted while MSI is disabled");
        }
        bool accepted = h->cfg_interrupt && h->cfg_interrupt_rdy;
        if (h->irq_dropped) {
            ++dropped;
            if (!need_.empty()) need_.pop_front();
        }
        if (h->msi_sent) ++msis;
        taken_ += core_eop ? 1 : 0;
        pending_ = pending_ + (nic_eop ? 1 : 0) - (core_eop ? 1 : 0);
        bool was = h->cfg_interrupt;
        msi_was_ = msi_enabled;
        h.tick();
        if (accepted) {
            if (!need_.empty()) need_.pop_front();
            rdy_wait_ = rnd(r_, rdy_delay_max + 1);
            if (h->cfg_interrupt) err("cfg_interrupt still high after cfg_interrupt_rdy");
        } else if (was) {
            if (!h->cfg_interrupt && msi_enabled) err("cfg_interrupt dropped before cfg_interrupt_rdy");
            if (!h->cfg_interrupt && !msi_enabled) ++withdrawn;
            if (rdy_wait_ > 0) --rdy_wait_;
        } else if (!was) {
            rdy_wait_ = rnd(r_, rdy_delay_max + 1);
        }
    }
    std::mt19937_64& r_;
    unsigned pending_ = 0;
    uint64_t handed_ = 0, taken_ = 0;
    bool irq_ = false;
    std::deque<uint64_t> need_;
    int rdy_wait_ = 0;
    bool msi_was_ = true;
};

TEST(Pcie7Irq, MsiOnlyAfterTheEarlierTlpsAreInTheCore) {
    auto r = test_rng();
    IrqBench b(r);
    for (int round = 0; round < 6; ++round) {
        b.tlp_pct = 10 + rnd(r, 60);
        b.take_pct = 5 + rnd(r, 60);
        b.irq_pct = 1 + rnd(r, 20);
        b.rdy_delay_max = rnd(r, 6);
        b.run(4000);
    }
    b.irq_pct = 0;
    b.tlp_pct = 0;
    b.run(200);
    for (auto& e : b.errors) ADD_FAILURE() << e;
    EXPECT_TRUE(b.quiet());
    EXPECT_GT(b.requests, 100u);
    EXPECT_EQ(b.msis, b.requests) << "every request became exactly one MSI";
    EXPECT_EQ(b.dropped, 0u);
}

TEST(Pcie7Irq, DisabledMsiIsDroppedNeverAsserted) {
    auto r = test_rng();
    IrqBench b(r);
    b.msi_enabled = false;
    b.irq_pct = 10;
    b.run(5000);
    b.irq_pct = 0;
    b.tlp_pct = 0;
    b.run(200);
    for (auto& e : b.errors) ADD_FAILURE() << e;
    EXPECT_GT(b.requests, 50u);
    EXPECT_EQ(b.msis, 0u);
    EXPECT_EQ(b.dropped, b.requests);
    // enabling MSI again: requests go out as MSIs
    b.msi_enabled = true;
    b.irq_pct = 10;
    b.tlp_pct = 30;
    uint64_t before = b.requests;
    b.run(3000);
    b.irq_pct = 0;
    b.tlp_pct = 0;
    b.run(200);
    for (auto& e : b.errors) ADD_FAILURE() << e;
    EXPECT_EQ(b.msis, b.requests - before);
}

TEST(Pcie7Irq, RequestWithdrawnWhenMsiIsDisabledWhileWaiting) {
    auto r = test_rng();
    IrqBench b(r);
    b.answer = false;  // the core does not answer (yet)
    b.irq_pct = 100;
    b.run(50);
    ASSERT_TRUE(b.h->cfg_interrupt) << "request should be waiting for cfg_interrupt_rdy";
    EXPECT_EQ(b.requests, 1u);
    b.msi_enabled = false;  // the driver disables MSI
    b.irq_pct = 0;
    b.run(50);
    EXPECT_FALSE(b.h->cfg_interrupt);
    EXPECT_EQ(b.withdrawn, 1u);
    // the waiting request is withdrawn, a request the NIC raised meanwhile is dropped
    EXPECT_EQ(b.dropped, b.requests);
    EXPECT_LE(b.requests, 2u);
    EXPECT_EQ(b.msis, 0u);
    for (auto& e : b.errors) ADD_FAILURE() << e;
}

// ------------------------------------------------------------------------------------------------
// velo_elastic: one word per cycle from one clock domain into another
// ------------------------------------------------------------------------------------------------

// Runs the elastic buffer with a writer and a reader clock of the given periods (picoseconds)
// for `words` written words. Written words carry a sequence number (sync bits 01, the 16-bit
// flit = number); the reader's non-idle words must be written words, in order, each at most
// once. Returns the read sequence.
struct ElasticRun {
    std::vector<uint32_t> got;  // sequence numbers read, in order
    uint64_t idle_after_data = 0, slips = 0, drops = 0;
    uint64_t written = 0, read_cycles = 0;
};
ElasticRun run_elastic(uint64_t wr_ps, uint64_t rd_ps, uint64_t phase_ps, uint64_t nwords) {
    auto ctx = std::make_unique<VerilatedContext>();
    auto m = std::make_unique<Velastic>(ctx.get(), "top");
    std::unique_ptr<VerilatedFstC> tfp;
    const char* w = std::getenv("WAVES");
    if (w && std::atoi(w)) {
        ctx->traceEverOn(true);
        tfp.reset(new VerilatedFstC);
        m->trace(tfp.get(), 99);
        tfp->open((test_name() + "_" + std::to_string(wr_ps) + "_" + std::to_string(rd_ps) + ".fst").c_str());
    }
    ElasticRun out;
    m->wr_clk = 0;
    m->rd_clk = 0;
    m->wr_rst = 1;
    m->rd_rst = 1;
    m->wr_data = 0;
    m->eval();
    uint64_t t = 0, next_wr = wr_ps / 2, next_rd = phase_ps + rd_ps / 2;
    uint64_t wr_edges = 0, rd_edges = 0;
    uint32_t seq = 0;
    bool seen_data = false;
    while (out.written < nwords) {
        t = std::min(next_wr, next_rd);
        bool wr_edge = t == next_wr, rd_edge = t == next_rd;
        if (wr_edge) {
            m->wr_clk = !m->wr_clk;
            if (m->wr_clk) {
                ++wr_edges;
                if (wr_edges == 4) m->wr_rst = 0;
            }
            next_wr += wr_ps / 2;
        }
        if (rd_edge) {
            m->rd_clk = !m->rd_clk;
            if (m->rd_clk) {
                ++rd_edges;
                if (rd_edges == 4) m->rd_rst = 0;
            }
            next_rd += rd_ps / 2;
        }
        m->eval();
        if (tfp) tfp->dump(t);
        // after a rising write edge with reset released: the next word goes in
        if (wr_edge && m->wr_clk && !m->wr_rst) {
            if (m->wr_drop) ++out.drops;
            m->wr_data = (1u << 16) | (seq & 0xFFFF);  // sync 01 (data) + sequence number
            ++seq;
            ++out.written;
        }
        if (rd_edge && m->rd_clk && !m->rd_rst) {
            ++out.read_cycles;
            uint32_t d = m->rd_data;
            if (m->rd_slip) ++out.slips;
            if (d == 0) {
                if (seen_data) ++out.idle_after_data;
            } else {
                seen_data = true;
                out.got.push_back(d & 0xFFFF);
            }
        }
        m->eval();
    }
    m->final();
    if (tfp) tfp->close();
    return out;
}

// checks: sequence numbers strictly increasing (mod 2^16), no duplicates
std::string check_order(const std::vector<uint32_t>& got, uint64_t* gaps) {
    *gaps = 0;
    for (size_t i = 1; i < got.size(); ++i) {
        uint32_t d = (got[i] - got[i - 1]) & 0xFFFF;
        if (d == 0 || d > 0x8000) return "word " + std::to_string(i) + " out of order or repeated";
        if (d > 1) *gaps += d - 1;
    }
    return "";
}

TEST(Xc7Elastic, SameFrequencyAnyPhaseNeverSlips) {
    auto r = test_rng();
    for (int i = 0; i < 6; ++i) {
        uint64_t phase = static_cast<uint64_t>(rnd(r, 8000));
        ElasticRun e = run_elastic(8000, 8000, phase, 20000);
        uint64_t gaps = 0;
        std::string o = check_order(e.got, &gaps);
        EXPECT_EQ(o, "") << "phase " << phase;
        EXPECT_EQ(gaps, 0u) << "words lost at phase " << phase;
        EXPECT_EQ(e.drops, 0u);
        EXPECT_EQ(e.slips, 0u) << "phase " << phase;
        EXPECT_EQ(e.idle_after_data, 0u) << "phase " << phase;
        EXPECT_GT(e.got.size(), 19900u);
    }
}

TEST(Xc7Elastic, FasterWriterDropsFasterReaderInsertsNeverReorders) {
    // 1 % frequency offset (far beyond the +-300 ppm PCIe allows) to get many slips quickly
    for (auto [wr, rd] : {std::pair<uint64_t, uint64_t>{7920, 8000}, {8000, 7920}}) {
        ElasticRun e = run_elastic(wr, rd, 1234, 40000);
        uint64_t gaps = 0;
        std::string o = check_order(e.got, &gaps);
        EXPECT_EQ(o, "") << "wr " << wr << " rd " << rd;
        if (wr < rd) {  // writer faster: words are dropped, never idles inserted after the fill
            EXPECT_GT(e.drops, 100u);
            // every dropped word is a gap, nothing else is lost (the latest drop may not have
            // reached the reader yet)
            EXPECT_LE(gaps, e.drops);
            EXPECT_GE(gaps + 1, e.drops);
        } else {  // reader faster: idles inserted, no word lost
            EXPECT_EQ(gaps, 0u);
            EXPECT_EQ(e.drops, 0u);
            EXPECT_GT(e.slips, 10u);
            EXPECT_GE(e.idle_after_data, e.slips);
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Two board designs (adapters + NIC) cabled together, each with a model of its PCIe core
// ------------------------------------------------------------------------------------------------

constexpr uint64_t kBar0 = 0xF0000000ull;    // register BAR as the host assigned it (3-DW requests)
constexpr uint64_t kBar2 = 0x4000000000ull;  // send window (64-bit BAR: 4-DW requests)

std::vector<uint8_t> le32(uint32_t v) {
    return {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v >> 16),
            static_cast<uint8_t>(v >> 24)};
}

// One card's host side: its core model (receive and transmit streams, configuration), the host
// memory the NIC writes by DMA, completions by tag, and the MSIs the core would send.
struct Card {
    Card(RxPins rp, TxPins tp, uint16_t id, std::mt19937_64& r) : rx(rp, r), tx(tp, r), mem(r()), cfg_id(id) {}
    CoreRx rx;
    CoreTx tx;
    HostMem mem;
    uint16_t cfg_id;
    std::map<uint8_t, Tlp> cpl;
    uint8_t next_tag = 0;
    bool msienable = true;
    int rdy_wait = 0;
    std::vector<uint64_t> dma_eop_cycles;  // cycle each DMA write's last beat was taken
    std::vector<uint64_t> msi_cycles;      // cycle each MSI was accepted by the core
    std::vector<uint64_t> irq_rise;        // cycle cfg_interrupt went high
    bool irq_was = false;
    uint64_t irq_dropped = 0;
    std::vector<std::string> errors;
    std::map<unsigned, std::unique_ptr<MailboxReader>> readers;
    Recombiner rec;
};

class PairBench {
  public:
    explicit PairBench(std::mt19937_64& r)
        : r_(r),
          a_(RxPins{&h->a_m_axis_rx_tvalid, &h->a_m_axis_rx_tready, &h->a_m_axis_rx_tdata, &h->a_m_axis_rx_tkeep,
                    &h->a_m_axis_rx_tlast, &h->a_m_axis_rx_tuser},
             TxPins{&h->a_s_axis_tx_tvalid, &h->a_s_axis_tx_tready, &h->a_s_axis_tx_tdata, &h->a_s_axis_tx_tkeep,
                    &h->a_s_axis_tx_tlast, &h->a_s_axis_tx_tuser},
             0x0300, r),
          b_(RxPins{&h->b_m_axis_rx_tvalid, &h->b_m_axis_rx_tready, &h->b_m_axis_rx_tdata, &h->b_m_axis_rx_tkeep,
                    &h->b_m_axis_rx_tlast, &h->b_m_axis_rx_tuser},
             TxPins{&h->b_s_axis_tx_tvalid, &h->b_s_axis_tx_tready, &h->b_s_axis_tx_tdata, &h->b_s_axis_tx_tkeep,
                    &h->b_s_axis_tx_tlast, &h->b_s_axis_tx_tuser},
             0x8128, r) {
        // our PCIe ids (bus 3 dev 0 fn 0, bus 0x81 dev 5 fn 0)
        h->a_cfg_bus_number = 0x03;
        h->a_cfg_device_number = 0;
        h->a_cfg_function_number = 0;
        h->b_cfg_bus_number = 0x81;
        h->b_cfg_device_number = 5;
        h->b_cfg_function_number = 0;
        for (Card* c : {&a_, &b_})
            c->tx.on_tlp = [this, c](const Tlp& t, const std::array<uint32_t, 4>&) { from_nic(*c, t); };
        h.reset();
    }
    Harness<Vpcie7_pair> h;
    Card& card(unsigned n) { return n ? b_ : a_; }
    Scoreboard sb;

    void pressure(int core_gap, int core_stall) {
        for (Card* c : {&a_, &b_}) {
            c->rx.gap_pct = core_gap;
            c->tx.stall_pct = core_stall;
        }
    }
    void step() {
        for (Card* c : {&a_, &b_}) {
            c->rx.drive();
            c->tx.drive();
        }
        h->a_cfg_interrupt_msienable = a_.msienable;
        h->b_cfg_interrupt_msienable = b_.msienable;
        h->a_cfg_interrupt_rdy = h->a_cfg_interrupt && a_.rdy_wait == 0;
        h->b_cfg_interrupt_rdy = h->b_cfg_interrupt && b_.rdy_wait == 0;
        h.eval();
        msi(a_, h->a_cfg_interrupt, h->a_cfg_interrupt_rdy, h->a_cfg_interrupt_assert, h->a_cfg_interrupt_di,
            h->a_irq_dropped);
        msi(b_, h->b_cfg_interrupt, h->b_cfg_interrupt_rdy, h->b_cfg_interrupt_assert, h->b_cfg_interrupt_di,
            h->b_irq_dropped);
        for (Card* c : {&a_, &b_}) {
            c->rx.sample();
            c->tx.sample();
        }
        h.tick();
        for (unsigned n = 0; n < 2; ++n) {
            card(n).mem.step();
            poll(n);
        }
    }
    void run(uint64_t n) {
        for (uint64_t i = 0; i < n; ++i) step();
    }

    void post(unsigned n, const Tlp& t) { card(n).rx.push(t); }
    void reg_write(unsigned n, uint32_t off, uint32_t v) { post(n, Tlp::mwr(kBar0 + off, le32(v), VELO_BAR_REGS)); }
    // A read of BAR0 (3-DW or, at a 64-bit address, 4-DW request); returns the completion.
    Tlp read(unsigned n, uint64_t addr, unsigned len_dw, uint8_t bar = VELO_BAR_REGS) {
        Card& c = card(n);
        uint8_t tag = c.next_tag++;
        c.cpl.erase(tag);
        post(n, Tlp::mrd(addr, len_dw, tag, bar));
        for (int i = 0; i < 20000; ++i) {
            auto it = c.cpl.find(tag);
            if (it != c.cpl.end()) {
                Tlp t = it->second;
                c.cpl.erase(it);
                return t;
            }
            step();
        }
        ADD_FAILURE() << "no completion for tag " << int(tag);
        return Tlp{};
    }
    uint32_t reg_read(unsigned n, uint32_t off) {
        Tlp t = read(n, kBar0 + off, 1);
        uint32_t v = 0;
        for (size_t i = 0; i < 4 && i < t.payload.size(); ++i) v |= static_cast<uint32_t>(t.payload[i]) << (8 * i);
        return v;
    }

    // Bring-up as the driver does it: node id, route to the other node (out of port 1, then
    // eject), enable; then both links up.
    bool init() {
        for (unsigned n = 0; n < 2; ++n) {
            reg_write(n, VELO_REG_CTRL_NODE_ID, n);
            uint32_t route = static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_ROUTE_TABLE_ROUTE_VALID, 1) |
                                                   VELO_FIELD_PREP(VELO_TBL_ROUTE_TABLE_ROUTE_ROUTE, 1));
            reg_write(n, VELO_TBL_ROUTE_TABLE_BASE + VELO_TBL_ROUTE_TABLE_STRIDE * (1 - n), route);
            reg_write(n, VELO_REG_CTRL_CONTROL, 1u << VELO_REG_CTRL_CONTROL_ENABLE_SHIFT);
        }
        for (unsigned n = 0; n < 2; ++n)
            if (reg_read(n, VELO_REG_CTRL_NODE_ID) != n) return false;
        for (int i = 0; i < 20000 && !(h->a_port_up && h->b_port_up); ++i) step();
        return h->a_port_up && h->b_port_up;
    }
    void open_mailbox(unsigned n, unsigned vpid, unsigned log2_lines, uint64_t base) {
        Card& c = card(n);
        uint32_t t = VELO_TBL_VPID_TABLE_BASE + vpid * VELO_TBL_VPID_TABLE_STRIDE;
        reg_write(n, t + VELO_TBL_VPID_TABLE_MB_CFG, 0);
        c.mem.fill(base, 64ull << log2_lines, 0);
        reg_write(n, t + VELO_TBL_VPID_TABLE_MB_BASE_LO, static_cast<uint32_t>(base));
        reg_write(n, t + VELO_TBL_VPID_TABLE_MB_BASE_HI, static_cast<uint32_t>(base >> 32));
        reg_write(n, t + VELO_TBL_VPID_TABLE_MB_WP, 0);
        reg_write(n, VELO_TBL_VPID_USER_BASE + vpid * VELO_TBL_VPID_USER_STRIDE + VELO_TBL_VPID_USER_MB_RP, 0);
        reg_write(n, t + VELO_TBL_VPID_TABLE_MB_CFG,
                  static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_VPID_TABLE_MB_CFG_ENABLE, 1) |
                                        VELO_FIELD_PREP(VELO_TBL_VPID_TABLE_MB_CFG_LOG2_LINES, log2_lines)));
        EXPECT_NE(reg_read(n, t + VELO_TBL_VPID_TABLE_MB_CFG), 0u);
        c.readers[vpid].reset(new MailboxReader(c.mem, base, log2_lines));
    }
    // One message from (node s, vpid sv) to (node 1-s, vpid dv), flushed as the CPU would.
    void send(unsigned s, unsigned sv, unsigned dv, const std::vector<uint8_t>& m, WcMode mode) {
        uint64_t off = velo::sim::send_offset(VELO_DEFAULT_VPID_BITS, VELO_DEFAULT_NODE_BITS, sv, 1 - s, dv,
                                              static_cast<unsigned>(m.size()));
        for (auto& t : velo::sim::wc_flush(kBar2, off, m, mode, r_)) post(s, t);
        sb.expect(Msg{s, sv, 1 - s, dv, m});
    }
    bool idle() const { return a_.rx.idle() && b_.rx.idle() && a_.mem.idle() && b_.mem.idle(); }

  private:
    void from_nic(Card& c, const Tlp& t) {
        if (t.is_cpl()) {
            if (t.cpl_id != c.cfg_id) c.errors.push_back("completion with completer id " + std::to_string(t.cpl_id));
            c.cpl[t.tag] = t;
        } else if (t.is_mwr()) {
            if (t.req_id != c.cfg_id) c.errors.push_back("DMA write with requester id " + std::to_string(t.req_id));
            c.mem.post(t);
            c.dma_eop_cycles.push_back(h.cycle());
        } else {
            c.errors.push_back("unexpected TLP from the NIC: " + t.str());
        }
    }
    void msi(Card& c, uint8_t irq, uint8_t rdy, uint8_t assert_, uint8_t di, uint8_t dropped) {
        if (irq && !c.irq_was) c.irq_rise.push_back(h.cycle());
        c.irq_was = irq;
        if (irq) {
            if (assert_ || di) c.errors.push_back("cfg_interrupt_assert/di not 0");
            if (rdy) {
                c.msi_cycles.push_back(h.cycle());
                c.rdy_wait = rnd(r_, 4);
            } else if (c.rdy_wait) {
                --c.rdy_wait;
            }
        }
        if (dropped) ++c.irq_dropped;
    }
    void poll(unsigned n) {
        Card& c = card(n);
        for (auto& [v, rd] : c.readers) {
            MboxEntry e;
            while (rd->poll(e)) {
                Msg m;
                if (c.rec.add(n, e, m)) sb.deliver(m);
            }
            for (auto& s : rd->errors) c.errors.push_back(s);
            rd->errors.clear();
        }
    }
    std::mt19937_64& r_;
    Card a_, b_;
};

void expect_clean(PairBench& p) {
    for (unsigned n = 0; n < 2; ++n) {
        Card& c = p.card(n);
        for (auto& e : c.errors) ADD_FAILURE() << "card " << n << ": " << e;
        for (auto& e : c.tx.errors) ADD_FAILURE() << "card " << n << ": " << e;
        for (auto& e : c.rec.errors) ADD_FAILURE() << "card " << n << ": " << e;
    }
    for (auto& e : p.sb.errors) ADD_FAILURE() << e;
}

TEST(Pcie7Pair, RegisterReadsComeBackAsCompletions) {
    auto r = test_rng();
    PairBench p(r);
    p.pressure(30, 30);
    // the ID block: TYPE/VERSION (8-byte read), CAPS and SPEC_HASH, on both cards
    for (unsigned n = 0; n < 2; ++n) {
        const uint16_t id = p.card(n).cfg_id;
        Tlp t = p.read(n, kBar0 + VELO_BLK_ID_BASE, 2);
        EXPECT_EQ(t.fmt_type, VELO_TLP_FMT_TYPE_CPLD);
        EXPECT_EQ(t.cpl_status, VELO_TLP_CPL_SC);
        EXPECT_EQ(t.cpl_id, id) << "completer id = bus/device/function from the core";
        EXPECT_EQ(t.req_id, 0x0100) << "requester id echoed";
        EXPECT_EQ(t.byte_count, 8u);
        EXPECT_EQ(t.len_dw, 2u);
        ASSERT_EQ(t.payload.size(), 8u);
        uint32_t type = 0;
        for (int i = 0; i < 4; ++i) type |= static_cast<uint32_t>(t.payload[static_cast<size_t>(i)]) << (8 * i);
        EXPECT_EQ(type, static_cast<uint32_t>(VELO_BLK_ID_TYPE)) << "'VELO' through both adapters, bytes in order";
        EXPECT_EQ(p.reg_read(n, VELO_REG_ID_SPEC_HASH), static_cast<uint32_t>(VELO_SPEC_HASH));
        uint32_t caps = p.reg_read(n, VELO_REG_ID_CAPS);
        EXPECT_EQ(VELO_FIELD_GET(VELO_REG_ID_CAPS_TLP_BYTES, caps), 8u) << "64-bit TLP stream";
        // the same register through a 4-DW read request (BAR0 above 4 GiB)
        Tlp t4 = p.read(n, 0x7F00000000ull + VELO_REG_ID_SPEC_HASH, 1);
        ASSERT_EQ(t4.payload.size(), 4u);
        EXPECT_EQ(t4.payload[0], static_cast<uint8_t>(VELO_SPEC_HASH));
        EXPECT_EQ(t4.lower_addr, VELO_REG_ID_SPEC_HASH & 0x7F);
        // scratch register: write, read back (posted write ordered before the read)
        p.reg_write(n, VELO_REG_CTRL_SCRATCH, 0xC0FFEE00u + n);
        EXPECT_EQ(p.reg_read(n, VELO_REG_CTRL_SCRATCH), 0xC0FFEE00u + n);
        // a read of the send window is answered with Unsupported Request, without data
        Tlp ur = p.read(n, kBar2 + 0x40, 1, VELO_BAR_SEND);
        EXPECT_EQ(ur.fmt_type, VELO_TLP_FMT_TYPE_CPL);
        EXPECT_EQ(ur.cpl_status, VELO_TLP_CPL_UR);
    }
    expect_clean(p);
}

TEST(Pcie7Pair, MessagesCrossTheCableBothWays) {
    auto r = test_rng();
    PairBench p(r);
    ASSERT_TRUE(p.init()) << "links did not come up";
    // one mailbox below 4 GiB (3-DW DMA writes) and one above (4-DW), on each card
    const uint64_t lo = 0x10000000ull, hi = 0x280000000ull;
    for (unsigned n = 0; n < 2; ++n) {
        p.open_mailbox(n, 1, 10, lo + 0x100000 * n);
        p.open_mailbox(n, 2, 10, hi + 0x100000 * n);
    }
    p.pressure(20, 20);
    const WcMode modes[] = {WcMode::Burst, WcMode::FullLine, WcMode::Split, WcMode::Chunk8, WcMode::Bytes};
    unsigned sent = 0;
    for (int i = 0; i < 240; ++i) {
        unsigned s = static_cast<unsigned>(rnd(r, 2));
        unsigned len = 1 + static_cast<unsigned>(rnd(r, 64));
        p.send(s, 10 + static_cast<unsigned>(rnd(r, 4)), 1 + static_cast<unsigned>(rnd(r, 2)), random_bytes(r, len),
               modes[rnd(r, 5)]);
        ++sent;
        if (i % 8 == 7) p.run(static_cast<uint64_t>(rnd(r, 200)));
    }
    for (int i = 0; i < 400000 && (p.sb.outstanding() || !p.idle()); ++i) p.step();
    EXPECT_EQ(p.sb.outstanding(), 0u) << "messages not delivered";
    EXPECT_EQ(p.sb.delivered, sent);
    std::printf("[ info  ] %u messages in %llu cycles\n", sent, static_cast<unsigned long long>(p.h.cycle()));
    expect_clean(p);
    // a clean cable: no CRC errors, no NACKs, the link never went down
    for (unsigned n = 0; n < 2; ++n) {
        EXPECT_EQ(p.reg_read(n, VELO_TBL_NET_PORT_BASE + VELO_TBL_NET_PORT_CNT_CRC_ERR), 0u);
        EXPECT_EQ(p.reg_read(n, VELO_TBL_NET_PORT_BASE + VELO_TBL_NET_PORT_CNT_NACK), 0u);
        EXPECT_EQ(p.reg_read(n, VELO_TBL_NET_PORT_BASE + VELO_TBL_NET_PORT_CNT_LINK_DOWN), 0u);
        EXPECT_GT(p.reg_read(n, VELO_TBL_NET_PORT_BASE + VELO_TBL_NET_PORT_CNT_RX_PKTS), 0u);
    }
}

TEST(Pcie7Pair, MsiFollowsTheMailboxWrite) {
    auto r = test_rng();
    PairBench p(r);
    ASSERT_TRUE(p.init()) << "links did not come up";
    p.open_mailbox(1, 3, 6, 0x20000000ull);
    p.pressure(10, 40);
    p.reg_write(1, VELO_REG_IRQ_CTRL, 1u << VELO_REG_IRQ_CTRL_ENABLE_SHIFT);
    Card& b = p.card(1);
    for (unsigned round = 0; round < 6; ++round) {
        // arm, make the arm take effect (a read), then send; long messages make two-line entries
        p.reg_write(1, VELO_REG_IRQ_ARM, 3);
        p.reg_read(1, VELO_REG_IRQ_CTRL);
        size_t dma0 = b.dma_eop_cycles.size(), msi0 = b.msi_cycles.size();
        unsigned len = round % 2 ? 64 : 1 + static_cast<unsigned>(rnd(r, 48));
        p.send(0, 7, 3, random_bytes(r, len), WcMode::Burst);
        for (int i = 0; i < 20000 && (b.msi_cycles.size() == msi0 || p.sb.outstanding()); ++i) p.step();
        p.run(200);
        ASSERT_EQ(b.msi_cycles.size(), msi0 + 1) << "round " << round << ": exactly one MSI per armed entry";
        ASSERT_GT(b.dma_eop_cycles.size(), dma0) << "round " << round << ": no mailbox write";
        // every DMA write of the entry was in the core before the MSI was requested
        ASSERT_FALSE(b.irq_rise.empty());
        EXPECT_LT(b.dma_eop_cycles.back(), b.irq_rise.back()) << "round " << round;
        EXPECT_LE(b.irq_rise.back(), b.msi_cycles.back());
        uint32_t pend = p.reg_read(1, VELO_TBL_IRQ_PENDING_BASE);
        EXPECT_EQ(pend, 1u << 3) << "round " << round;
        p.reg_write(1, VELO_TBL_IRQ_PENDING_BASE, pend);  // the handler clears what it saw
    }
    EXPECT_EQ(p.sb.outstanding(), 0u);
    // MSI disabled by the driver: the request is dropped at the adapter, the PENDING bit stays
    b.msienable = false;
    p.reg_write(1, VELO_REG_IRQ_ARM, 3);
    p.reg_read(1, VELO_REG_IRQ_CTRL);
    size_t msi0 = b.msi_cycles.size();
    p.send(0, 7, 3, random_bytes(r, 20), WcMode::Burst);
    for (int i = 0; i < 20000 && (p.sb.outstanding() || b.irq_dropped == 0); ++i) p.step();
    p.run(200);
    EXPECT_EQ(b.msi_cycles.size(), msi0);
    EXPECT_EQ(b.irq_dropped, 1u);
    EXPECT_EQ(p.reg_read(1, VELO_TBL_IRQ_PENDING_BASE), 1u << 3);
    expect_clean(p);
}

}  // namespace
