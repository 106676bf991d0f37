// Register file (BAR0): register-block chain, completions (header fields per PCIe), read-back of
// every writable register against a C++ model, the mailbox table with its completer port (read
// priority, write-pointer port), counters, error handling and the table clear after reset.
#include <array>
#include <cstdint>
#include <deque>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "Vregfile.h"
#include "harness.hpp"
#include "host.hpp"
#include "tlp.hpp"
#include "velo/velo_hw.h"

using velo::sim::Harness;
using velo::sim::pct;
using velo::sim::rnd;
using velo::sim::test_rng;
using velo::sim::Tlp;
using velo::sim::TlpDriver;
using velo::sim::TlpSink;
using velo::sim::words;

namespace {

constexpr unsigned kVpidBits = 8;
constexpr unsigned kNv = 1u << kVpidBits;
constexpr unsigned kNodeBits = 8;  // model built with the default NODE_BITS
constexpr unsigned kTlpW = 64;
constexpr unsigned kLinkW = 16;  // model built with the default LINK_W (reported in CAPS)
constexpr uint32_t kTbl = VELO_TBL_VPID_TABLE_BASE;
constexpr uint32_t kUsr = VELO_TBL_VPID_USER_BASE;
constexpr uint32_t kCnt = VELO_REG_COUNTERS_COUNTER_BASE;
constexpr uint8_t kIORd = 0x02, kIOWr = 0x42, kCfgRd0 = 0x04, kCfgWr0 = 0x44, kCfgRd1 = 0x05, kMRdLk = 0x01;
constexpr uint8_t kMsg = 0x30, kMsgD = 0x70;

uint32_t tbl_off(unsigned v, unsigned field) {
    return kTbl + v * VELO_TBL_VPID_TABLE_STRIDE + 4 * field;
}
uint32_t usr_off(unsigned v) {
    return kUsr + v * VELO_TBL_VPID_USER_STRIDE;
}

// PCIe rules for the byte count and lower address of a read completion (1 DW, or 2 DW QW aligned)
unsigned lowest(uint8_t be) {
    for (unsigned i = 0; i < 4; ++i)
        if ((be >> i) & 1) return i;
    return 0;
}
unsigned highest(uint8_t be) {
    for (unsigned i = 4; i-- > 0;)
        if ((be >> i) & 1) return i;
    return 0;
}
unsigned pcie_byte_count(unsigned len, uint8_t fbe, uint8_t lbe) {
    if (len == 1) return fbe == 0 ? 1 : highest(fbe) - lowest(fbe) + 1;
    return (len - 1) * 4 + highest(lbe) + 1 - lowest(fbe);
}
unsigned pcie_lower_addr(uint64_t addr, uint8_t fbe) {
    return static_cast<unsigned>(addr & 0x7C) | (fbe == 0 ? 0 : lowest(fbe));
}

bool needs_cpl(uint8_t ft) {
    const bool mwr = ft == VELO_TLP_FMT_TYPE_MWR32 || ft == VELO_TLP_FMT_TYPE_MWR64;
    const bool msg = (ft & 0x18) == 0x10;
    const bool cpl = (ft & 0x1E) == 0x0A;
    return !mwr && !msg && !cpl;
}

// ------------------------------------------------------------------------------ C++ model
struct Entry {
    uint32_t lo = 0, hi = 0, cfg = 0, wp = 0, rp = 0;  // as software reads them back
};

struct Model {
    uint32_t node_id = 0, enable = 0, qvpid = 0, scratch = 0;
    std::array<Entry, kNv> t{};
    std::array<uint32_t, 16> cnt{};  // the counter unit, driven into cnt_data by cnt_idx
    bool link_up = false, cpl_busy = false, q_busy = false;

    void clear_table() { t.fill(Entry{}); }
    static uint32_t caps() {
        return static_cast<uint32_t>(VELO_FIELD_PREP(VELO_REG_ID_CAPS_NODE_BITS, kNodeBits) |
                                     VELO_FIELD_PREP(VELO_REG_ID_CAPS_VPID_BITS, kVpidBits) |
                                     VELO_FIELD_PREP(VELO_REG_ID_CAPS_TLP_BYTES, kTlpW / 8) |
                                     VELO_FIELD_PREP(VELO_REG_ID_CAPS_LINK_BYTES, kLinkW / 8) |
                                     VELO_FIELD_PREP(VELO_REG_ID_CAPS_MSG_MAX, VELO_MSG_MAX));
    }
    // the register as software reads it at BAR0 offset `off` (DW aligned)
    uint32_t rd(uint32_t off) const {
        switch (off) {
            case VELO_BLK_ID_BASE + VELO_BLKHDR_TYPE:
                return VELO_BLK_ID_TYPE;
            case VELO_BLK_ID_BASE + VELO_BLKHDR_VERSION:
                return VELO_BLK_ID_VERSION;
            case VELO_BLK_ID_BASE + VELO_BLKHDR_NEXT:
                return VELO_BLK_ID_NEXT;
            case VELO_REG_ID_DESIGN_VERSION:
                return VELO_SPEC_VERSION;
            case VELO_REG_ID_CAPS:
                return caps();
            case VELO_REG_ID_SPEC_HASH:
                return VELO_SPEC_HASH;
            case VELO_BLK_CTRL_BASE + VELO_BLKHDR_TYPE:
                return VELO_BLK_CTRL_TYPE;
            case VELO_BLK_CTRL_BASE + VELO_BLKHDR_VERSION:
                return VELO_BLK_CTRL_VERSION;
            case VELO_BLK_CTRL_BASE + VELO_BLKHDR_NEXT:
                return VELO_BLK_CTRL_NEXT;
            case VELO_REG_CTRL_NODE_ID:
                return node_id;
            case VELO_REG_CTRL_CONTROL:
                return enable;
            case VELO_REG_CTRL_STATUS:
                return static_cast<uint32_t>(VELO_FIELD_PREP(VELO_REG_CTRL_STATUS_LINK_UP, link_up) |
                                             VELO_FIELD_PREP(VELO_REG_CTRL_STATUS_CPL_BUSY, cpl_busy));
            case VELO_REG_CTRL_QUIESCE_VPID:
                return qvpid;
            case VELO_REG_CTRL_QUIESCE_STATUS:
                return static_cast<uint32_t>(VELO_FIELD_PREP(VELO_REG_CTRL_QUIESCE_STATUS_BUSY, q_busy));
            case VELO_REG_CTRL_SCRATCH:
                return scratch;
            case VELO_BLK_COUNTERS_BASE + VELO_BLKHDR_TYPE:
                return VELO_BLK_COUNTERS_TYPE;
            case VELO_BLK_COUNTERS_BASE + VELO_BLKHDR_VERSION:
                return VELO_BLK_COUNTERS_VERSION;
            case VELO_BLK_COUNTERS_BASE + VELO_BLKHDR_NEXT:
                return VELO_BLK_COUNTERS_NEXT;
            case VELO_REG_COUNTERS_COUNT:
                return VELO_CNT_NUM;
            case VELO_BLK_VPID_BASE + VELO_BLKHDR_TYPE:
                return VELO_BLK_VPID_TYPE;
            case VELO_BLK_VPID_BASE + VELO_BLKHDR_VERSION:
                return VELO_BLK_VPID_VERSION;
            case VELO_BLK_VPID_BASE + VELO_BLKHDR_NEXT:
                return VELO_BLK_VPID_NEXT;
            case VELO_REG_VPID_NUM_VPIDS:
                return kNv;
            case VELO_REG_VPID_TABLE_OFFSET:
                return VELO_TBL_VPID_TABLE_BASE;
            case VELO_REG_VPID_TABLE_STRIDE:
                return VELO_TBL_VPID_TABLE_STRIDE;
            case VELO_REG_VPID_USER_OFFSET:
                return VELO_TBL_VPID_USER_BASE;
            case VELO_REG_VPID_USER_STRIDE:
                return VELO_TBL_VPID_USER_STRIDE;
            default:
                break;
        }
        if (off >= kCnt && off < kCnt + 4 * VELO_CNT_NUM) return cnt[(off - kCnt) / 4];
        if (off >= kTbl && off < kTbl + kNv * VELO_TBL_VPID_TABLE_STRIDE) {
            const Entry& e = t[(off - kTbl) / VELO_TBL_VPID_TABLE_STRIDE];
            switch (off & 0xF) {
                case VELO_TBL_VPID_TABLE_MB_BASE_LO:
                    return e.lo;
                case VELO_TBL_VPID_TABLE_MB_BASE_HI:
                    return e.hi;
                case VELO_TBL_VPID_TABLE_MB_CFG:
                    return e.cfg;
                default:
                    return e.wp;
            }
        }
        if (off >= kUsr && (off & 0xFFF) == VELO_TBL_VPID_USER_MB_RP) return t[((off - kUsr) >> 12) % kNv].rp;
        return 0;  // unassigned
    }
};

// What a 1-DW register write does
enum class WrKind { Global, Counter, Table, User, Bad };
WrKind wr_kind(uint32_t off) {
    switch (off) {
        case VELO_REG_CTRL_NODE_ID:
        case VELO_REG_CTRL_CONTROL:
        case VELO_REG_CTRL_QUIESCE_VPID:
        case VELO_REG_CTRL_SCRATCH:
            return WrKind::Global;
        default:
            break;
    }
    if (off >= kCnt && off < kCnt + 4 * VELO_CNT_NUM) return WrKind::Counter;
    if (off >= kTbl && off < kTbl + kNv * VELO_TBL_VPID_TABLE_STRIDE) return WrKind::Table;
    if (off >= kUsr && (off & 0xFFF) == 0) return WrKind::User;
    return WrKind::Bad;
}

struct TblWr {
    unsigned vpid;
    unsigned field;  // 0..3 table, 4 read pointer
    uint32_t value;
};

struct ExpCpl {
    Tlp req;
    bool ur;
    int wp_vpid;  // vpid whose write pointer this read returns (wp_we kept off it), or -1
};

// Beat of a hand-made TLP (for garbage the TLP driver cannot express, e.g. a multi-beat MsgD)
struct RawBeat {
    uint32_t hdr[4];
    uint64_t data;
    bool sop, eop;
    uint8_t bar;
};

// ------------------------------------------------------------------------------ bench
class Bench {
  public:
    Harness<Vregfile> h;
    std::mt19937_64 rng;
    TlpDriver drv;
    TlpSink sink;
    Model m;
    uint16_t cpl_id = 0x0A08;
    int tbl_re_pct = 0, wp_we_pct = 0;
    // observed / expected events
    uint64_t ev_window = 0, ev_unsup = 0, ev_bad = 0;
    uint64_t x_window = 0, x_unsup = 0, x_bad = 0;
    uint64_t sw_wr_seen = 0, cnt_clr_seen = 0, tbl_reads = 0, wp_writes = 0, cpls = 0, ur_cpls = 0;
    uint64_t init_cycles = 0;
    std::vector<uint8_t> hot;  // vpids hit often, so reads meet earlier writes

    Bench()
        : rng(test_rng()),
          drv({&h->in_valid, &h->in_ready, &h->in_sop, &h->in_eop, words(h->in_hdr), &h->in_bar, words(h->in_data)}),
          sink({&h->cpl_valid, &h->cpl_ready, &h->cpl_sop, &h->cpl_eop, words(h->cpl_hdr), words(h->cpl_data)}) {
        drv.rng = &rng;
        sink.rng = &rng;
        sink.on_tlp = [this](const Tlp& t) { got_.push_back(t); };
        for (int i = 0; i < 6; ++i) hot.push_back(static_cast<uint8_t>(rng()));
        hot.push_back(0);
        hot.push_back(kNv - 1);
        reset();
    }

    // reset, then wait for the table clear: in_ready stays low for 2^VPID_BITS cycles
    void reset() {
        h->in_valid = 0;
        h->cpl_ready = 0;
        h->tbl_re = 0;
        h->wp_we = 0;
        h->link_up = m.link_up;
        h->cpl_busy = m.cpl_busy;
        h->q_busy = m.q_busy;
        h->cpl_id = cpl_id;
        h.reset();
        m.node_id = m.enable = m.qvpid = m.scratch = 0;
        m.clear_table();
        init_cycles = 0;
        prev_cpl_valid_ = false;
        for (;;) {
            h.eval();
            EXPECT_FALSE(h->cpl_valid) << "completion during init";
            EXPECT_FALSE(h->sw_wr || h->cnt_clr || h->ev_bad_access || h->ev_unsupported || h->ev_window_read);
            if (h->in_ready) break;
            ASSERT_LT(init_cycles, 10u * kNv) << "table clear never ends";
            h.tick();
            ++init_cycles;
        }
        EXPECT_EQ(h->node_id, 0u);
        EXPECT_EQ(h->enable, 0u);
        EXPECT_EQ(h->q_vpid, 0u);
    }

    uint8_t vpid() {
        return pct(rng, 50) ? hot[static_cast<size_t>(rnd(rng, static_cast<int>(hot.size())))]
                            : static_cast<uint8_t>(rng());
    }
    uint64_t bar_base() {
        switch (rnd(rng, 3)) {
            case 0:
                return 0xF0000000ull;  // 32-bit BAR
            case 1:
                return 0x80200000ull;  // 32-bit BAR, another 2 MiB slot
            default:
                return 0x3800000000000ull;  // 64-bit BAR: 4-DW headers
        }
    }
    uint16_t req_id() { return static_cast<uint16_t>(rng()); }

    // ---- requests
    void push(Tlp t) {
        if (t.req_id == 0x0100) t.req_id = req_id();
        drv.push(t);
        queued_.push_back(t);
        const bool rd = t.is_mrd() && t.bar == VELO_BAR_REGS && len_ok(t);
        int wpv = -1;
        if (rd) {
            const uint32_t off = static_cast<uint32_t>(t.addr & 0x1FFFFF);
            for (unsigned d = 0; d < t.len_dw; ++d) {
                uint32_t o = off + 4 * d;
                if (wr_kind(o) == WrKind::Table && (o & 0xF) == VELO_TBL_VPID_TABLE_MB_WP)
                    wpv = static_cast<int>((o - kTbl) / VELO_TBL_VPID_TABLE_STRIDE);
            }
            if (wpv >= 0) wp_blocked_.insert(static_cast<unsigned>(wpv));
        }
        queued_wp_.push_back(wpv);
    }
    void read(uint32_t off, unsigned len = 1, uint8_t fbe = 0xF, uint8_t lbe = 0xF, uint8_t tag = 0) {
        Tlp t = Tlp::mrd(bar_base() + off, len, tag ? tag : static_cast<uint8_t>(rng()), VELO_BAR_REGS, fbe, lbe);
        push(t);
    }
    void write(uint32_t off, uint32_t v) {
        std::vector<uint8_t> b(4);
        for (int i = 0; i < 4; ++i) b[static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
        push(Tlp::mwr(bar_base() + off, b, VELO_BAR_REGS));
    }
    void write2(uint32_t off, uint32_t v0, uint32_t v1) {
        std::vector<uint8_t> b(8);
        for (int i = 0; i < 4; ++i) {
            b[static_cast<size_t>(i)] = static_cast<uint8_t>(v0 >> (8 * i));
            b[static_cast<size_t>(4 + i)] = static_cast<uint8_t>(v1 >> (8 * i));
        }
        push(Tlp::mwr(bar_base() + off, b, VELO_BAR_REGS));
    }
    static bool len_ok(const Tlp& t) {
        return (t.len_dw == 1 && t.last_be == 0) || (t.len_dw == 2 && (t.addr & 4) == 0);
    }
    static bool wr_ok(const Tlp& t) { return len_ok(t) && t.first_be == 0xF && (t.len_dw == 1 || t.last_be == 0xF); }

    // ---- one clock cycle with every check
    void cycle() {
        drv.drive();
        if (!raw_.empty()) {
            ASSERT_TRUE(drv.idle());
            const RawBeat& b = raw_.front();
            h->in_valid = 1;
            for (int i = 0; i < 4; ++i) h->in_hdr[static_cast<size_t>(i)] = b.hdr[i];
            h->in_data = b.data;
            h->in_sop = b.sop;
            h->in_eop = b.eop;
            h->in_bar = b.bar;
        }
        sink.drive();
        h->cpl_id = cpl_id;
        // the completer's table port
        bool re = pct(rng, tbl_re_pct);
        unsigned rv = vpid();
        h->tbl_re = re;
        h->tbl_vpid = static_cast<uint8_t>(rv);
        bool we = pct(rng, wp_we_pct);
        unsigned wv = vpid();
        uint32_t wd = static_cast<uint32_t>(rng()) & 0x1FFFF;
        if (wp_blocked_.count(wv)) we = false;
        h->wp_we = we;
        h->wp_vpid = static_cast<uint8_t>(wv);
        h->wp_data = wd;
        h.eval();
        // the counter unit answers cnt_idx combinationally (indices past the counters get garbage,
        // which the register file must never show)
        const unsigned ci = h->cnt_idx;
        h->cnt_data = ci < 16 ? m.cnt[ci] : 0xDEAD0000u | ci;
        h.eval();
        // completion stream: single beat, and a completion offered stays unchanged until taken
        if (h->cpl_valid) {
            ASSERT_TRUE(h->cpl_sop && h->cpl_eop);
        }
        if (prev_cpl_valid_ && !prev_cpl_ready_) {
            ASSERT_TRUE(h->cpl_valid) << "cpl_valid dropped before the completion was taken";
            for (size_t i = 0; i < 4; ++i)
                ASSERT_EQ(h->cpl_hdr[i], prev_cpl_hdr_[i]) << "cpl_hdr changed while stalled";
        }
        prev_cpl_valid_ = h->cpl_valid;
        prev_cpl_ready_ = h->cpl_ready;
        for (size_t i = 0; i < 4; ++i) prev_cpl_hdr_[i] = h->cpl_hdr[i];
        // handshakes
        if (!raw_.empty()) {
            if (h->in_ready) {
                if (raw_.front().sop) on_raw_accept(raw_.front());
                raw_.pop_front();
            }
        } else if (drv.sample()) {
            ASSERT_FALSE(queued_.empty());
            on_accept(queued_.front(), queued_wp_.front());
            queued_.pop_front();
            queued_wp_.pop_front();
        }
        sink.sample();
        ASSERT_TRUE(sink.errors.empty()) << sink.errors.front();
        while (!got_.empty()) {
            check_cpl(got_.front());
            if (::testing::Test::HasFatalFailure()) return;
            got_.pop_front();
        }
        // the table port reads the table as it is before this cycle's writes
        Entry exp = m.t[rv];
        h.tick();
        if (we) {
            m.t[wv].wp = wd;
            ++wp_writes;
        }
        if (h->sw_wr) {
            ++sw_wr_seen;
            ASSERT_FALSE(exp_tbl_.empty()) << "sw_wr without a table write";
            const TblWr w = exp_tbl_.front();
            exp_tbl_.pop_front();
            ASSERT_EQ(h->sw_wr_vpid, w.vpid) << "sw_wr_vpid";
            Entry& e = m.t[w.vpid];
            switch (w.field) {
                case 0:
                    e.lo = w.value & ~0x3Fu;
                    break;
                case 1:
                    e.hi = w.value;
                    break;
                case 2:
                    e.cfg = w.value & static_cast<uint32_t>(VELO_FIELD_MASK(VELO_TBL_VPID_TABLE_MB_CFG_ENABLE) |
                                                            VELO_FIELD_MASK(VELO_TBL_VPID_TABLE_MB_CFG_LOG2_LINES));
                    break;
                case 3:
                    e.wp = w.value & 0x1FFFF;
                    break;
                default:
                    e.rp = w.value & 0x1FFFF;
                    break;
            }
        }
        if (h->cnt_clr) {
            ++cnt_clr_seen;
            ASSERT_FALSE(exp_clr_.empty()) << "cnt_clr without a counter write";
            ASSERT_EQ(h->cnt_clr_idx, exp_clr_.front()) << "cnt_clr_idx";
            m.cnt[exp_clr_.front()] = 0;
            exp_clr_.pop_front();
        }
        ev_window += h->ev_window_read;
        ev_unsup += h->ev_unsupported;
        ev_bad += h->ev_bad_access;
        if (re) {
            ++tbl_reads;
            const uint64_t base = (static_cast<uint64_t>(exp.hi) << 26) | (exp.lo >> 6);
            ASSERT_EQ(h->tbl_base, base) << "tbl_base of vpid " << rv;
            ASSERT_EQ(h->tbl_en, VELO_FIELD_GET(VELO_TBL_VPID_TABLE_MB_CFG_ENABLE, exp.cfg)) << "vpid " << rv;
            ASSERT_EQ(h->tbl_log2, VELO_FIELD_GET(VELO_TBL_VPID_TABLE_MB_CFG_LOG2_LINES, exp.cfg)) << "vpid " << rv;
            ASSERT_EQ(h->tbl_wp, exp.wp) << "tbl_wp of vpid " << rv;
            ASSERT_EQ(h->tbl_rp, exp.rp) << "tbl_rp of vpid " << rv;
        }
    }

    bool busy() const {
        return !drv.idle() || !raw_.empty() || !exp_cpl_.empty() || !exp_tbl_.empty() || !exp_clr_.empty();
    }
    // run until every request is answered and every effect seen, then a few quiet cycles
    void drain(uint64_t max_cycles = 200000) {
        uint64_t c = 0;
        while (busy()) {
            ASSERT_LT(c++, max_cycles) << "register file hangs (" << drv.pending() << " queued, " << exp_cpl_.size()
                                       << " completions due)";
            cycle();
            if (::testing::Test::HasFatalFailure()) return;
        }
        for (int i = 0; i < 6; ++i) {
            cycle();
            if (::testing::Test::HasFatalFailure()) return;
        }
        ASSERT_TRUE(h->in_ready) << "register file not idle after draining";
        EXPECT_EQ(ev_window, x_window) << "ev_window_read pulses";
        EXPECT_EQ(ev_unsup, x_unsup) << "ev_unsupported pulses";
        EXPECT_EQ(ev_bad, x_bad) << "ev_bad_access pulses";
        EXPECT_EQ(h->node_id, m.node_id) << "node_id output";
        EXPECT_EQ(h->enable, m.enable) << "enable output";
        EXPECT_EQ(h->q_vpid, m.qvpid) << "q_vpid output";
    }
    // one read, answered; returns the completion
    Tlp rd(uint32_t off, unsigned len = 1, uint8_t fbe = 0xF, uint8_t lbe = 0xF) {
        read(off, len, fbe, lbe);
        const uint64_t n = cpls;
        drain();
        EXPECT_EQ(cpls, n + 1);
        return last_cpl;
    }
    uint32_t rd32(uint32_t off) {
        Tlp c = rd(off);
        if (c.payload.size() < 4) return 0xFFFFFFFF;
        return static_cast<uint32_t>(c.payload[0]) | (static_cast<uint32_t>(c.payload[1]) << 8) |
               (static_cast<uint32_t>(c.payload[2]) << 16) | (static_cast<uint32_t>(c.payload[3]) << 24);
    }
    void set_status(bool link, bool cbusy, bool qbusy) {
        m.link_up = link;
        m.cpl_busy = cbusy;
        m.q_busy = qbusy;
        h->link_up = link;
        h->cpl_busy = cbusy;
        h->q_busy = qbusy;
    }
    void raw(const std::vector<RawBeat>& beats) {
        for (auto& b : beats) raw_.push_back(b);
    }

    Tlp last_cpl;

  private:
    std::deque<Tlp> queued_;      // pushed, not yet taken by the register file
    std::deque<int> queued_wp_;   // their write-pointer vpids (see ExpCpl)
    std::deque<ExpCpl> exp_cpl_;  // taken, completion due
    std::deque<TblWr> exp_tbl_;   // table writes due (seen as sw_wr)
    std::deque<unsigned> exp_clr_;
    std::multiset<unsigned> wp_blocked_;
    std::deque<Tlp> got_;
    std::deque<RawBeat> raw_;
    bool prev_cpl_valid_ = false, prev_cpl_ready_ = false;
    std::array<uint32_t, 4> prev_cpl_hdr_{};

    void on_accept(const Tlp& t, int wpv) {
        const uint32_t off = static_cast<uint32_t>(t.addr & 0x1FFFFF);
        if (!needs_cpl(t.fmt_type)) {
            if (!t.is_mwr() || t.bar != VELO_BAR_REGS) {
                ++x_unsup;  // messages and stray completions
                return;
            }
            if (!wr_ok(t)) {
                ++x_bad;
                return;
            }
            for (unsigned d = 0; d < t.len_dw; ++d) {
                uint32_t v = 0;
                for (unsigned i = 0; i < 4; ++i) v |= static_cast<uint32_t>(t.payload[4 * d + i]) << (8 * i);
                apply_write(off + 4 * d, v);
            }
            return;
        }
        ExpCpl e{t, true, wpv};
        if (t.is_mrd()) {
            if (t.bar != VELO_BAR_REGS)
                ++x_window;
            else if (!len_ok(t))
                ++x_bad;
            else
                e.ur = false;
        } else {
            ++x_unsup;
        }
        exp_cpl_.push_back(e);
    }
    void on_raw_accept(const RawBeat& b) {
        const uint8_t ft = static_cast<uint8_t>(b.hdr[0] >> 24);
        ASSERT_FALSE(needs_cpl(ft)) << "raw beats are for posted garbage only";
        ++x_unsup;
    }
    void apply_write(uint32_t off, uint32_t v) {
        switch (wr_kind(off)) {
            case WrKind::Global:
                if (off == VELO_REG_CTRL_NODE_ID) m.node_id = v & 0xFF;
                if (off == VELO_REG_CTRL_CONTROL) m.enable = v & 1;
                if (off == VELO_REG_CTRL_QUIESCE_VPID) m.qvpid = v & (kNv - 1);
                if (off == VELO_REG_CTRL_SCRATCH) m.scratch = v;
                break;
            case WrKind::Counter:
                exp_clr_.push_back((off - kCnt) / 4);
                break;
            case WrKind::Table:
                exp_tbl_.push_back({(off - kTbl) / VELO_TBL_VPID_TABLE_STRIDE, (off & 0xF) / 4, v});
                break;
            case WrKind::User:
                exp_tbl_.push_back({((off - kUsr) >> 12) % kNv, 4, v});
                break;
            case WrKind::Bad:
                ++x_bad;
                break;
        }
    }
    void check_cpl(const Tlp& c) {
        ASSERT_FALSE(exp_cpl_.empty()) << "unexpected completion";
        const ExpCpl e = exp_cpl_.front();
        exp_cpl_.pop_front();
        if (e.wp_vpid >= 0) wp_blocked_.erase(wp_blocked_.find(static_cast<unsigned>(e.wp_vpid)));
        ++cpls;
        last_cpl = c;
        const Tlp& q = e.req;
        const std::string what = q.str();
        ASSERT_EQ(c.cpl_id, cpl_id) << what;
        ASSERT_EQ(c.req_id, q.req_id) << what;
        ASSERT_EQ(c.tag, q.tag) << what;
        ASSERT_FALSE(c.ep) << what;
        if (e.ur) {
            ++ur_cpls;
            ASSERT_EQ(c.fmt_type, VELO_TLP_FMT_TYPE_CPL) << what;
            ASSERT_EQ(c.cpl_status, VELO_TLP_CPL_UR) << what;
            ASSERT_EQ(c.len_dw, 0u) << what;
            if (!q.is_mrd()) {  // I/O and configuration completions: byte count 4, lower address 0
                ASSERT_EQ(c.byte_count, 4u) << what;
                ASSERT_EQ(c.lower_addr, 0u) << what;
            }
            return;
        }
        ASSERT_EQ(c.fmt_type, VELO_TLP_FMT_TYPE_CPLD) << what;
        ASSERT_EQ(c.cpl_status, VELO_TLP_CPL_SC) << what;
        ASSERT_EQ(c.len_dw, q.len_dw) << what;
        ASSERT_EQ(c.byte_count, pcie_byte_count(q.len_dw, q.first_be, q.last_be)) << what;
        ASSERT_EQ(c.lower_addr, pcie_lower_addr(q.addr, q.first_be)) << what;
        ASSERT_EQ(c.payload.size(), 4u * q.len_dw) << what;
        const uint32_t off = static_cast<uint32_t>(q.addr & 0x1FFFFF);
        for (unsigned d = 0; d < q.len_dw; ++d) {
            uint32_t v = 0;
            for (unsigned i = 0; i < 4; ++i) v |= static_cast<uint32_t>(c.payload[4 * d + i]) << (8 * i);
            ASSERT_EQ(v, m.rd(off + 4 * d)) << what << " DW " << d << " (offset 0x" << std::hex << off + 4 * d << ")";
        }
    }
};

RawBeat raw_beat(uint8_t ft, unsigned len, bool sop, bool eop, uint64_t data, uint8_t bar = 0) {
    RawBeat b{};
    b.hdr[0] = (static_cast<uint32_t>(ft) << 24) | len;
    b.hdr[1] = 0xFFFF00FFu;
    b.hdr[2] = 0x00000110u;
    b.hdr[3] = 0x12345678u;
    b.data = data;
    b.sop = sop;
    b.eop = eop;
    b.bar = bar;
    return b;
}

}  // namespace

// ------------------------------------------------------------------------------ tests
TEST(Regfile, InitClearsTable) {
    Bench b;
    EXPECT_EQ(b.init_cycles, kNv) << "in_ready low while the table is cleared: 2^VPID_BITS cycles";
    // dirty the whole table: software writes and completer write-pointer writes
    for (unsigned v = 0; v < kNv; ++v) {
        b.write2(tbl_off(v, 0), static_cast<uint32_t>(b.rng()), static_cast<uint32_t>(b.rng()));
        b.write2(tbl_off(v, 2), static_cast<uint32_t>(b.rng()) | 1, static_cast<uint32_t>(b.rng()));
        b.write(usr_off(v), static_cast<uint32_t>(b.rng()));
    }
    b.wp_we_pct = 30;
    b.tbl_re_pct = 30;
    b.drain();
    ASSERT_FALSE(HasFatalFailure());
    // a request waiting at the input during the clear is taken only afterwards
    b.reset();
    EXPECT_EQ(b.init_cycles, kNv);
    b.wp_we_pct = 0;
    b.tbl_re_pct = 0;
    b.read(tbl_off(kNv - 1, 2));
    b.h->rst = 1;
    b.h.tick();
    b.h->rst = 0;
    uint64_t waited = 0;
    while (!(b.h->in_valid && b.h->in_ready)) {
        b.drv.drive();
        b.h.eval();
        ASSERT_FALSE(b.h->cpl_valid);
        if (b.h->in_ready) break;
        b.h.tick();
        ++waited;
        ASSERT_LT(waited, 2u * kNv);
    }
    EXPECT_EQ(waited, kNv);
    b.m.clear_table();
    b.drain();
    // every entry reads 0 through the completer's port and through software
    for (unsigned v = 0; v < kNv; ++v) {
        b.h->tbl_re = 1;
        b.h->tbl_vpid = static_cast<uint8_t>(v);
        b.h->wp_we = 0;
        b.h.eval();
        b.h.tick();
        b.h->tbl_re = 0;
        b.h.eval();
        EXPECT_EQ(b.h->tbl_base, 0u) << v;
        EXPECT_EQ(b.h->tbl_en, 0u) << v;
        EXPECT_EQ(b.h->tbl_log2, 0u) << v;
        EXPECT_EQ(b.h->tbl_wp, 0u) << v;
        EXPECT_EQ(b.h->tbl_rp, 0u) << v;
    }
    for (unsigned v : {0u, 1u, 77u, kNv - 1}) {
        for (unsigned f = 0; f < 4; ++f) EXPECT_EQ(b.rd32(tbl_off(v, f)), 0u) << "vpid " << v << " field " << f;
        EXPECT_EQ(b.rd32(usr_off(v)), 0u);
    }
}

TEST(Regfile, BlockChain) {
    Bench b;
    struct Want {
        uint32_t base, type, version;
    };
    const Want want[] = {{VELO_BLK_ID_BASE, VELO_BLK_ID_TYPE, VELO_BLK_ID_VERSION},
                         {VELO_BLK_CTRL_BASE, VELO_BLK_CTRL_TYPE, VELO_BLK_CTRL_VERSION},
                         {VELO_BLK_COUNTERS_BASE, VELO_BLK_COUNTERS_TYPE, VELO_BLK_COUNTERS_VERSION},
                         {VELO_BLK_VPID_BASE, VELO_BLK_VPID_TYPE, VELO_BLK_VPID_VERSION}};
    uint32_t off = 0;
    size_t n = 0;
    std::set<uint32_t> seen;
    do {
        ASSERT_LT(n, 4u) << "chain longer than the spec's";
        ASSERT_TRUE(seen.insert(off).second) << "chain loops";
        const uint32_t type = b.rd32(off + VELO_BLKHDR_TYPE);
        const uint32_t ver = b.rd32(off + VELO_BLKHDR_VERSION);
        const uint32_t next = b.rd32(off + VELO_BLKHDR_NEXT);
        EXPECT_EQ(off, want[n].base);
        EXPECT_EQ(type, want[n].type) << "block " << n;
        EXPECT_EQ(ver, want[n].version) << "block " << n;
        // the same header through 8-byte reads
        Tlp c = b.rd(off, 2, 0xF, 0xF);
        ASSERT_EQ(c.payload.size(), 8u);
        EXPECT_EQ(
            c.payload[0] | (c.payload[1] << 8) | (c.payload[2] << 16) | (static_cast<uint32_t>(c.payload[3]) << 24),
            type);
        off = next;
        ++n;
    } while (off != 0);
    EXPECT_EQ(n, 4u);
    EXPECT_EQ(b.rd32(VELO_BLK_ID_BASE), static_cast<uint32_t>(VELO_ID_MAGIC));
    EXPECT_EQ(b.rd32(VELO_REG_ID_SPEC_HASH), static_cast<uint32_t>(VELO_SPEC_HASH));
    EXPECT_EQ(b.rd32(VELO_REG_ID_DESIGN_VERSION), static_cast<uint32_t>(VELO_SPEC_VERSION));
    const uint32_t caps = b.rd32(VELO_REG_ID_CAPS);
    EXPECT_EQ(VELO_FIELD_GET(VELO_REG_ID_CAPS_NODE_BITS, caps), kNodeBits);
    EXPECT_EQ(VELO_FIELD_GET(VELO_REG_ID_CAPS_VPID_BITS, caps), kVpidBits);
    EXPECT_EQ(VELO_FIELD_GET(VELO_REG_ID_CAPS_TLP_BYTES, caps), kTlpW / 8);
    EXPECT_EQ(VELO_FIELD_GET(VELO_REG_ID_CAPS_LINK_BYTES, caps), kLinkW / 8);
    EXPECT_EQ(VELO_FIELD_GET(VELO_REG_ID_CAPS_MSG_MAX, caps), static_cast<unsigned>(VELO_MSG_MAX));
    EXPECT_EQ(b.rd32(VELO_REG_COUNTERS_COUNT), static_cast<uint32_t>(VELO_CNT_NUM));
    EXPECT_EQ(b.rd32(VELO_REG_VPID_NUM_VPIDS), kNv);
    EXPECT_EQ(b.rd32(VELO_REG_VPID_TABLE_OFFSET), kTbl);
    EXPECT_EQ(b.rd32(VELO_REG_VPID_TABLE_STRIDE), static_cast<uint32_t>(VELO_TBL_VPID_TABLE_STRIDE));
    EXPECT_EQ(b.rd32(VELO_REG_VPID_USER_OFFSET), kUsr);
    EXPECT_EQ(b.rd32(VELO_REG_VPID_USER_STRIDE), static_cast<uint32_t>(VELO_TBL_VPID_USER_STRIDE));
    // unassigned offsets read 0
    for (uint32_t o : {0x18u, 0x124u, 0x3FCu, 0x420u, 0x7FFCu, 0x9000u, 0xFFFFCu, kUsr + 4, kUsr + 0xFFC})
        EXPECT_EQ(b.rd32(o), 0u) << std::hex << o;
}

TEST(Regfile, CompletionFields) {
    Bench b;
    b.sink.stall_pct = 40;
    b.write(VELO_REG_CTRL_SCRATCH, 0xA1B2C3D4);
    b.write2(tbl_off(9, 0), 0x12345678, 0x9ABCDEF0);
    // every first byte enable of a 1-DW read, at every DW of a 128-byte window (lower address)
    for (unsigned be = 0; be < 16; ++be) {
        for (uint32_t o : {static_cast<uint32_t>(VELO_REG_CTRL_SCRATCH), 0x7Cu, 0x40u, tbl_off(9, 1)}) {
            b.cpl_id = static_cast<uint16_t>(b.rng());
            b.h->cpl_id = b.cpl_id;
            b.read(o, 1, static_cast<uint8_t>(be), 0);
            b.drain();
            ASSERT_FALSE(HasFatalFailure()) << "fbe " << be;
        }
    }
    // every pair of byte enables of a 2-DW read (non-contiguous ones allowed for a QW aligned read)
    for (unsigned f = 1; f < 16; ++f)
        for (unsigned l = 1; l < 16; ++l) b.read(tbl_off(9, 0), 2, static_cast<uint8_t>(f), static_cast<uint8_t>(l));
    b.drain();
    ASSERT_FALSE(HasFatalFailure());
    // tags and requester ids echoed, 32- and 64-bit addresses
    for (int i = 0; i < 200; ++i) b.read(VELO_REG_CTRL_SCRATCH, 1 + (i & 1), 0xF, (i & 1) ? 0xF : 0);
    b.drain();
    EXPECT_EQ(b.cpls, 16u * 4 + 15 * 15 + 200);
    EXPECT_EQ(b.ur_cpls, 0u);
}

TEST(Regfile, ControlRegisters) {
    Bench b;
    for (int i = 0; i < 50; ++i) {
        const uint32_t n = static_cast<uint32_t>(b.rng()), c = static_cast<uint32_t>(b.rng());
        const uint32_t q = static_cast<uint32_t>(b.rng()), s = static_cast<uint32_t>(b.rng());
        b.write(VELO_REG_CTRL_NODE_ID, n);
        b.write(VELO_REG_CTRL_CONTROL, c);
        b.write(VELO_REG_CTRL_QUIESCE_VPID, q);
        b.write(VELO_REG_CTRL_SCRATCH, s);
        b.drain();  // checks node_id, enable and q_vpid outputs against the model
        ASSERT_FALSE(HasFatalFailure());
        EXPECT_EQ(b.h->node_id, n & 0xFF);
        EXPECT_EQ(b.h->enable, c & 1);
        EXPECT_EQ(b.h->q_vpid, q & 0xFF);
        EXPECT_EQ(b.rd32(VELO_REG_CTRL_NODE_ID), n & 0xFF);
        EXPECT_EQ(b.rd32(VELO_REG_CTRL_CONTROL), c & 1);
        EXPECT_EQ(b.rd32(VELO_REG_CTRL_QUIESCE_VPID), q & 0xFF);
        EXPECT_EQ(b.rd32(VELO_REG_CTRL_SCRATCH), s);
        // 8-byte access: QUIESCE_VPID and QUIESCE_STATUS, SCRATCH and the word after it
        b.write2(VELO_REG_CTRL_SCRATCH, ~s, 0x5555);  // second DW unassigned: ignored and counted
        b.drain();
        EXPECT_EQ(b.m.scratch, ~s);
        const bool lu = b.rng() & 1, cb = b.rng() & 1, qb = b.rng() & 1;
        b.set_status(lu, cb, qb);
        EXPECT_EQ(b.rd32(VELO_REG_CTRL_STATUS), (lu ? 1u : 0u) | (cb ? 2u : 0u));
        EXPECT_EQ(b.rd32(VELO_REG_CTRL_QUIESCE_STATUS), qb ? 1u : 0u);
        b.read(VELO_REG_CTRL_QUIESCE_VPID, 2);
        b.drain();
    }
    EXPECT_EQ(b.x_bad, 50u);
}

TEST(Regfile, Counters) {
    Bench b;
    for (unsigned i = 0; i < 16; ++i) b.m.cnt[i] = static_cast<uint32_t>(b.rng());
    for (unsigned i = 0; i < 16; ++i) EXPECT_EQ(b.rd32(kCnt + 4 * i), b.m.cnt[i]) << "counter " << i;
    for (unsigned i = 0; i < 16; i += 2) b.read(kCnt + 4 * i, 2);
    b.drain();
    // write-to-clear: one cnt_clr pulse with the index, whatever the value written
    for (unsigned i : {3u, 0u, 15u}) {
        const uint32_t before = b.m.cnt[i];
        b.write(kCnt + 4 * i, 0);
        const uint64_t n = b.cnt_clr_seen;
        b.drain();
        EXPECT_EQ(b.cnt_clr_seen, n + 1);
        EXPECT_EQ(b.m.cnt[i], 0u);
        EXPECT_NE(before, 0u);
        EXPECT_EQ(b.rd32(kCnt + 4 * i), 0u);
    }
    // an 8-byte write clears two counters
    b.write2(kCnt + 4 * 6, 0xFFFFFFFF, 1);
    b.drain();
    EXPECT_EQ(b.m.cnt[6], 0u);
    EXPECT_EQ(b.m.cnt[7], 0u);
    EXPECT_EQ(b.cnt_clr_seen, 5u);
    // past the last counter: unassigned
    EXPECT_EQ(b.rd32(kCnt + 4 * VELO_CNT_NUM), 0u);
    b.write(kCnt + 4 * VELO_CNT_NUM, 1);
    b.drain();
    EXPECT_EQ(b.x_bad, 1u);
    EXPECT_EQ(b.cnt_clr_seen, 5u);
    // counters that move: a read returns the value of the counter it addresses
    for (int k = 0; k < 100; ++k) {
        const unsigned i = static_cast<unsigned>(b.rng() % 16);
        b.m.cnt[i] = static_cast<uint32_t>(b.rng());
        EXPECT_EQ(b.rd32(kCnt + 4 * i), b.m.cnt[i]);
    }
}

TEST(Regfile, Errors) {
    Bench b;
    b.write(VELO_REG_CTRL_SCRATCH, 0x11111111);
    b.write(tbl_off(5, 2), 0x301);
    b.drain();
    auto expect_events = [&](uint64_t w, uint64_t u, uint64_t a, const char* what) {
        EXPECT_EQ(b.ev_window, w) << what;
        EXPECT_EQ(b.ev_unsup, u) << what;
        EXPECT_EQ(b.ev_bad, a) << what;
    };
    // reads of the send window and of other BARs: UR, ev_window_read
    for (uint8_t bar : {2, 4, 1, 5}) {
        b.push(Tlp::mrd(0xE0000000ull + 0x40, 1, 3, bar));
        b.drain();
    }
    expect_events(4, 0, 0, "window reads");
    EXPECT_EQ(b.ur_cpls, 4u);
    // bad read lengths: UR, ev_bad_access
    b.read(VELO_REG_CTRL_SCRATCH, 3);
    b.read(VELO_REG_CTRL_QUIESCE_STATUS, 2);  // 2 DW, not 8-byte aligned
    b.read(VELO_REG_CTRL_SCRATCH, 4);
    {
        Tlp t = Tlp::mrd(0xF0000000ull + VELO_REG_CTRL_SCRATCH, 1, 9, 0);
        t.last_be = 0xF;  // 1-DW request with a last byte enable
        b.push(t);
    }
    b.drain();
    expect_events(4, 0, 4, "bad reads");
    EXPECT_EQ(b.ur_cpls, 8u);
    // writes with partial byte enables: ignored, ev_bad_access
    {
        Tlp t = Tlp::mwr(0xF0000000ull + VELO_REG_CTRL_SCRATCH + 1, {1, 2, 3}, 0);  // fbe 1110
        b.push(t);
        t = Tlp::mwr(0xF0000000ull + VELO_REG_CTRL_SCRATCH, {1, 2}, 0);  // fbe 0011
        b.push(t);
        t = Tlp::mwr(0xF0000000ull + tbl_off(5, 2), {1, 2, 3, 4, 5, 6, 7}, 0);  // lbe 0111
        b.push(t);
        t = Tlp::mwr(0xF0000000ull + tbl_off(5, 0) + 2, {1, 2, 3, 4, 5, 6}, 0);  // fbe 1100
        b.push(t);
    }
    b.drain();
    expect_events(4, 0, 8, "partial writes");
    EXPECT_EQ(b.rd32(VELO_REG_CTRL_SCRATCH), 0x11111111u);
    EXPECT_EQ(b.rd32(tbl_off(5, 2)), 0x301u);
    EXPECT_EQ(b.sw_wr_seen, 1u);
    // writes to read-only and unassigned registers: ignored, ev_bad_access (one per DW)
    const uint32_t ro[] = {VELO_BLK_ID_BASE,
                           VELO_REG_ID_CAPS,
                           VELO_REG_ID_SPEC_HASH,
                           VELO_REG_CTRL_STATUS,
                           VELO_REG_CTRL_QUIESCE_STATUS,
                           VELO_BLK_CTRL_BASE + VELO_BLKHDR_NEXT,
                           VELO_REG_COUNTERS_COUNT,
                           VELO_REG_VPID_NUM_VPIDS,
                           VELO_REG_VPID_USER_STRIDE,
                           0x18,
                           0x3FC,
                           0x7FFC,
                           0x9000,
                           0xFFFFC,
                           kUsr + 4,
                           kUsr + 0xFFC};
    for (uint32_t o : ro) b.write(o, 0xFFFFFFFF);
    b.write2(VELO_REG_ID_CAPS, 1, 2);  // CAPS (0x10) and SPEC_HASH (0x14)
    b.drain();
    expect_events(4, 0, 8 + 16 + 2, "read-only writes");
    EXPECT_EQ(b.rd32(VELO_REG_ID_CAPS), Model::caps());
    EXPECT_EQ(b.rd32(VELO_REG_ID_SPEC_HASH), static_cast<uint32_t>(VELO_SPEC_HASH));
    // 2-DW write not 8-byte aligned, and longer writes (multi-beat): ignored
    b.write2(VELO_REG_CTRL_SCRATCH - 4, 7, 8);
    b.push(Tlp::mwr(0xF0000000ull + VELO_REG_CTRL_SCRATCH, std::vector<uint8_t>(12, 0x77), 0));
    b.push(Tlp::mwr(0xF0000000ull + VELO_REG_CTRL_SCRATCH, std::vector<uint8_t>(64, 0x66), 0));
    b.drain();
    expect_events(4, 0, 26 + 3, "long writes");
    EXPECT_EQ(b.rd32(VELO_REG_CTRL_SCRATCH), 0x11111111u);
    // other non-posted requests: UR, ev_unsupported
    for (uint8_t ft : {kIORd, kIOWr, kCfgRd0, kCfgWr0, kCfgRd1, kMRdLk}) {
        Tlp t;
        t.fmt_type = ft;
        t.len_dw = 1;
        t.addr = VELO_REG_CTRL_SCRATCH;
        t.tag = 0x5A;
        t.req_id = 0x0200;
        if (ft & 0x40) t.payload = {9, 9, 9, 9};
        b.push(t);
    }
    b.drain();
    expect_events(4, 6, 29, "non-posted");
    EXPECT_EQ(b.ur_cpls, 8u + 6u);
    EXPECT_EQ(b.rd32(VELO_REG_CTRL_SCRATCH), 0x11111111u);
    // messages and stray completions: no answer, ev_unsupported
    {
        Tlp t;
        t.fmt_type = kMsg;
        b.push(t);
        t.fmt_type = VELO_TLP_FMT_TYPE_CPL;
        b.push(t);
        t.fmt_type = VELO_TLP_FMT_TYPE_CPLD;
        t.len_dw = 1;
        t.payload = {1, 2, 3, 4};
        b.push(t);
    }
    b.drain();
    expect_events(4, 9, 29, "messages and completions");
    EXPECT_EQ(b.ur_cpls, 14u);
}

TEST(Regfile, GarbageMultiBeat) {
    Bench b;
    b.sink.stall_pct = 50;
    b.drv.gap_pct = 30;
    b.drv.mid_tlp_gaps = true;
    for (int round = 0; round < 20; ++round) {
        b.write(VELO_REG_CTRL_SCRATCH, static_cast<uint32_t>(round));
        // a multi-beat message with data, sent beat by beat
        b.drain();
        std::vector<RawBeat> beats;
        const unsigned n = 2 + static_cast<unsigned>(b.rng() % 6);
        for (unsigned i = 0; i < n; ++i)
            beats.push_back(raw_beat(kMsgD, 2 * n, i == 0, i == n - 1, b.rng(), static_cast<uint8_t>(b.rng() & 7)));
        b.raw(beats);
        b.drain();
        ASSERT_FALSE(HasFatalFailure());
        // long writes (to registers and the table) and a multi-beat completion
        b.push(Tlp::mwr(0xF0000000ull + VELO_REG_CTRL_SCRATCH, std::vector<uint8_t>(64, 0xEE), 0));
        b.push(Tlp::mwr(0xF0000000ull + tbl_off(3, 0), std::vector<uint8_t>(40, 0xEE), 0));
        Tlp c;
        c.fmt_type = VELO_TLP_FMT_TYPE_CPLD;
        c.len_dw = 8;
        c.payload.assign(32, 0xCC);
        b.push(c);
        b.read(VELO_REG_CTRL_SCRATCH);
        b.read(tbl_off(3, 0), 2);
        b.drain();
        ASSERT_FALSE(HasFatalFailure());
        EXPECT_EQ(b.m.scratch, static_cast<uint32_t>(round));
    }
    EXPECT_EQ(b.ev_unsup, 40u);
    EXPECT_EQ(b.ev_bad, 40u);
}

TEST(Regfile, TablePortPriority) {
    Bench b;
    for (unsigned v = 0; v < 8; ++v) {
        b.write2(tbl_off(v, 0), 0x1000u * (v + 1), v);
        b.write2(tbl_off(v, 2), 0x0601, 0x100 + v);
        b.write(usr_off(v), 0x200 + v);
    }
    b.drain();
    // the completer reads every cycle for a while: a software read waits, then completes
    b.read(tbl_off(4, 3));
    b.tbl_re_pct = 100;
    const uint64_t n = b.cpls;
    for (int i = 0; i < 50; ++i) b.cycle();
    EXPECT_EQ(b.cpls, n) << "the completer's reads have priority";
    b.tbl_re_pct = 0;
    b.drain();
    EXPECT_EQ(b.cpls, n + 1);
    EXPECT_EQ(b.last_cpl.payload.size(), 4u);
    // the completer writes write pointers every cycle: a software write-pointer write waits (and
    // the requests behind it)
    b.wp_we_pct = 100;
    b.write(tbl_off(6, 3), 0x1ABCD);
    b.write(tbl_off(7, 1), 0xCAFE);
    const uint64_t s = b.sw_wr_seen;
    for (int i = 0; i < 50; ++i) b.cycle();
    EXPECT_EQ(b.sw_wr_seen, s) << "the completer's write-pointer writes have priority";
    b.wp_we_pct = 0;
    b.drain();
    EXPECT_EQ(b.sw_wr_seen, s + 2);
    EXPECT_EQ(b.m.t[6].wp, 0x1ABCDu);
    EXPECT_EQ(b.rd32(tbl_off(6, 3)), 0x1ABCDu);
    EXPECT_EQ(b.rd32(tbl_off(7, 1)), 0xCAFEu);
    // and a completer write-pointer write is read back by software
    b.h->wp_we = 1;
    b.h->wp_vpid = 2;
    b.h->wp_data = 0x15555;
    b.h.eval();
    b.h.tick();
    b.h->wp_we = 0;
    b.m.t[2].wp = 0x15555;
    EXPECT_EQ(b.rd32(tbl_off(2, 3)), 0x15555u);
}

TEST(Regfile, RandomTraffic) {
    Bench b;
    auto& rng = b.rng;
    const uint32_t globals[] = {0x00,  0x04,  0x08,  0x0C,  0x10,  0x14,  0x18,  0x100, 0x104,
                                0x108, 0x10C, 0x110, 0x114, 0x118, 0x11C, 0x120, 0x124, 0x200,
                                0x208, 0x20C, 0x400, 0x40C, 0x41C, 0x420, 0x3FC, 0x7FFC};
    const uint32_t rw[] = {VELO_REG_CTRL_NODE_ID, VELO_REG_CTRL_CONTROL, VELO_REG_CTRL_QUIESCE_VPID,
                           VELO_REG_CTRL_SCRATCH};
    auto offset = [&]() -> uint32_t {
        const int k = rnd(rng, 100);
        if (k < 40) return tbl_off(b.vpid(), static_cast<unsigned>(rnd(rng, 4)));
        if (k < 55) return usr_off(b.vpid()) + (pct(rng, 90) ? 0 : 4 * static_cast<uint32_t>(1 + rnd(rng, 1023)));
        if (k < 70) return rw[rnd(rng, 4)];
        if (k < 80) return kCnt + 4 * static_cast<uint32_t>(rnd(rng, 17));
        if (k < 95) return globals[rnd(rng, sizeof globals / sizeof globals[0])];
        return static_cast<uint32_t>(rng() & 0x1FFFFC);
    };
    auto word = [&]() { return static_cast<uint32_t>(rng()); };
    uint64_t n_req = 0;
    for (int batch = 0; batch < 1500; ++batch) {
        // between batches, with nothing in flight: new status inputs, completer id, counters, knobs
        b.set_status(rng() & 1, rng() & 1, rng() & 1);
        b.cpl_id = static_cast<uint16_t>(rng());
        for (auto& c : b.m.cnt) c = word();
        b.sink.stall_pct = rnd(rng, 4) * 25;
        b.drv.gap_pct = rnd(rng, 3) * 25;
        b.drv.mid_tlp_gaps = rng() & 1;
        b.tbl_re_pct = rnd(rng, 5) * 20;
        b.wp_we_pct = rnd(rng, 3) * 20;
        for (int i = 0; i < 80; ++i, ++n_req) {
            const int k = rnd(rng, 100);
            const uint32_t off = offset();
            if (k < 35) {  // reads, any byte enables
                const bool two = pct(rng, 40);
                const uint8_t fbe = static_cast<uint8_t>(two ? 1 + rnd(rng, 15) : rnd(rng, 16));
                b.read(two ? off & ~7u : off, two ? 2 : 1, fbe, static_cast<uint8_t>(1 + rnd(rng, 15)));
            } else if (k < 80) {  // writes
                if (pct(rng, 35))
                    b.write2(off & ~7u, word(), word());
                else
                    b.write(off, word());
            } else {  // everything else
                Tlp t;
                switch (rnd(rng, 10)) {
                    case 0:
                        t = Tlp::mrd(0xE0000000ull + off, 1, static_cast<uint8_t>(rng()), 2);
                        break;
                    case 1:
                        t = Tlp::mrd(0xE0000000ull + off, 1 + static_cast<unsigned>(rnd(rng, 2)),
                                     static_cast<uint8_t>(rng()), static_cast<uint8_t>(1 + rnd(rng, 7)));
                        break;
                    case 2:
                        t = Tlp::mrd(b.bar_base() + off, 3 + static_cast<unsigned>(rnd(rng, 14)),
                                     static_cast<uint8_t>(rng()), 0);
                        break;
                    case 3:
                        t = Tlp::mrd(b.bar_base() + (off | 4), 2, static_cast<uint8_t>(rng()), 0);
                        break;
                    case 4: {  // partial byte enables
                        std::vector<uint8_t> v(static_cast<size_t>(1 + rnd(rng, 7)));
                        for (auto& x : v) x = static_cast<uint8_t>(rng());
                        t = Tlp::mwr(b.bar_base() + off + static_cast<uint32_t>(rnd(rng, 4)), v, 0);
                        if (t.first_be == 0xF && (t.len_dw == 1 || t.last_be == 0xF)) t.first_be = 0x7;
                        break;
                    }
                    case 5: {  // long writes, several beats
                        std::vector<uint8_t> v(static_cast<size_t>(12 + 4 * rnd(rng, 30)));
                        for (auto& x : v) x = static_cast<uint8_t>(rng());
                        t = Tlp::mwr(b.bar_base() + off, v, 0);
                        break;
                    }
                    case 6: {
                        static const uint8_t np[] = {kIORd, kIOWr, kCfgRd0, kCfgWr0, kCfgRd1, kMRdLk};
                        t.fmt_type = np[rnd(rng, 6)];
                        t.len_dw = 1;
                        t.addr = off;
                        t.tag = static_cast<uint8_t>(rng());
                        if (t.fmt_type & 0x40) t.payload = {1, 2, 3, 4};
                        break;
                    }
                    case 7:
                        t.fmt_type = pct(rng, 50) ? kMsg : 0x34;
                        break;
                    case 8:
                        t.fmt_type = VELO_TLP_FMT_TYPE_CPLD;
                        t.len_dw = static_cast<uint16_t>(1 + rnd(rng, 16));
                        t.payload.assign(t.len_dw * 4u, 0xC5);
                        break;
                    default:
                        t.fmt_type = VELO_TLP_FMT_TYPE_CPL;
                        break;
                }
                if (t.req_id == 0) t.req_id = b.req_id();
                b.push(t);
            }
        }
        b.drain();
        ASSERT_FALSE(HasFatalFailure()) << "batch " << batch;
    }
    std::printf(
        "[ info  ] %llu requests, %llu completions (%llu UR), %llu table writes, %llu counter clears, "
        "%llu completer reads, %llu completer WP writes, events window/unsupported/bad %llu/%llu/%llu\n",
        static_cast<unsigned long long>(n_req), static_cast<unsigned long long>(b.cpls),
        static_cast<unsigned long long>(b.ur_cpls), static_cast<unsigned long long>(b.sw_wr_seen),
        static_cast<unsigned long long>(b.cnt_clr_seen), static_cast<unsigned long long>(b.tbl_reads),
        static_cast<unsigned long long>(b.wp_writes), static_cast<unsigned long long>(b.ev_window),
        static_cast<unsigned long long>(b.ev_unsup), static_cast<unsigned long long>(b.ev_bad));
    EXPECT_GT(b.sw_wr_seen, 5000u);
    EXPECT_GT(b.cpls, 10000u);
    EXPECT_GT(b.tbl_reads, 20000u);
}
