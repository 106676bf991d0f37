// Register file (BAR0): register-block chain, completions (header fields per PCIe), read-back of
// every writable register against a C++ model, the mailbox table with its completer port (read
// priority, write-pointer port), counters, error handling and the table clear after reset; the
// network layer's registers: the NET block, the route table with the requester's read port (read
// priority), the network port entries (configuration out on port_cfg, link status, link counters)
// and the no-route drop counter; the interrupts: arm bits (ARM, disarmed by MB_CFG writes),
// the completer's commit reports, the pending bitmap (write-1-to-clear), the request handshake
// with coalescing, ENABLE and COUNT, scored cycle by cycle against a model of the commit
// pipeline (a software write of the arm or pending port waits a cycle behind an entry's write).
//
// Volatile inputs (link status, link counters, no-route events, requester reads) change every
// cycle; a read of a register is scored against the model as it was in the cycle the register
// file sampled it (DW d of a request taken in cycle t: cycle t + 1 + d), and writes to the route
// table, port configurations and the no-route counter take effect in that cycle too.
#include <array>
#include <cstdint>
#include <deque>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "Vregfile.h"
#include "Vregfile_params.h"
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

// the model's parameters (sim/CMakeLists.txt, Vregfile_params.h)
using Params = velo::sim::ModelParams<Vregfile>;
constexpr unsigned kVpidBits = Params::VPID_BITS;
constexpr unsigned kNv = 1u << kVpidBits;
constexpr unsigned kNodeBits = Params::NODE_BITS;
constexpr unsigned kTlpW = Params::TLP_W;
constexpr unsigned kLinkW = Params::LINK_W;  // reported in CAPS
constexpr unsigned kNn = 1u << kNodeBits;
constexpr unsigned kInit = kNv > kNn ? kNv : kNn;  // cycles of the table clear after reset
// network geometry (NP 4, PB 3, NVC 2, VC_DEPTH 100: the PORTS fields all differ, so a field in the
// wrong place shows)
constexpr unsigned kNp = Params::NP, kPb = Params::PB, kNvc = Params::NVC, kVcDepth = Params::VC_DEPTH;
constexpr unsigned kLinkCnt = VELO_NET_PORT_COUNTERS;  // link counters per port
// tb_regfile_pipe: the model built with PIPE = 1 (the iCE40 board's): the address decode is
// registered, so each DW of an access is performed one cycle later than its address is set
constexpr unsigned kPipe = Params::PIPE;
constexpr unsigned kNcntIdx = 1u << Params::NCNT_IDX_W;  // link counter indices
constexpr uint32_t kRt = VELO_TBL_ROUTE_TABLE_BASE;
constexpr uint32_t kRtValid = static_cast<uint32_t>(VELO_FIELD_MASK(VELO_TBL_ROUTE_TABLE_ROUTE_VALID));
constexpr uint32_t kRtRoute = static_cast<uint32_t>(VELO_FIELD_MASK(VELO_TBL_ROUTE_TABLE_ROUTE_ROUTE));
constexpr uint32_t kNpt = VELO_TBL_NET_PORT_BASE;
constexpr uint32_t kNpStride = VELO_TBL_NET_PORT_STRIDE;
constexpr uint32_t kNpCnt0 = VELO_TBL_NET_PORT_CNT_CRC_ERR;  // first link counter in an entry
constexpr uint32_t kTbl = VELO_TBL_VPID_TABLE_BASE;
constexpr uint32_t kUsr = VELO_TBL_VPID_USER_BASE;
constexpr uint32_t kCnt = VELO_REG_COUNTERS_COUNTER_BASE;
constexpr unsigned kNpw = (kNv + 31) / 32;  // words of the pending bitmap
constexpr uint32_t kPnd = VELO_TBL_IRQ_PENDING_BASE;
constexpr uint8_t kIORd = 0x02, kIOWr = 0x42, kCfgRd0 = 0x04, kCfgWr0 = 0x44, kCfgRd1 = 0x05, kMRdLk = 0x01;
constexpr uint8_t kMsg = 0x30, kMsgD = 0x70;

uint32_t tbl_off(unsigned v, unsigned field) {
    return kTbl + v * VELO_TBL_VPID_TABLE_STRIDE + 4 * field;
}
uint32_t usr_off(unsigned v) {
    return kUsr + v * VELO_TBL_VPID_USER_STRIDE;
}
uint32_t rt_off(unsigned node) {
    return kRt + node * VELO_TBL_ROUTE_TABLE_STRIDE;
}
// network port p (1..) entry, register at byte offset reg
uint32_t np_off(unsigned p, uint32_t reg) {
    return kNpt + (p - 1) * kNpStride + reg;
}
// link counter c of network port p
uint32_t ncnt_off(unsigned p, unsigned c) {
    return np_off(p, kNpCnt0 + 4 * c);
}
// route table entry as software writes it -> as it reads back (and as rt_data shows it, 15 bits)
uint32_t rt_sw(uint32_t v) {
    return v & (kRtValid | kRtRoute);
}
uint32_t rt_port(uint32_t sw) {
    return ((sw & kRtValid) ? 1u << 14 : 0u) | (sw & kRtRoute);
}
bool is_pnd(uint32_t off) {
    return off >= kPnd && off < kPnd + 4 * kNpw;
}
// RAM-backed registers: read through the shared read ports, so their sampling cycle varies
bool ram_backed(uint32_t off) {
    const bool tbl = off >= kTbl && off < kTbl + kNv * VELO_TBL_VPID_TABLE_STRIDE;
    const bool usr = off >= kUsr && off < kUsr + kNv * VELO_TBL_VPID_USER_STRIDE && (off & 0xFFF) == 0;
    const bool rt = off >= kRt && off < kRt + kNn * VELO_TBL_ROUTE_TABLE_STRIDE;
    return tbl || usr || rt;
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
    // network layer
    std::array<uint32_t, kNn> rt{};               // route table as software reads it
    std::array<uint32_t, kNp> pcfg{};             // port p+1 CFG {DATELINE, DIM} as software reads it
    std::array<uint32_t, kNp * kLinkCnt> ncnt{};  // the link counter unit (port p+1 counter c at 8p+c)
    uint32_t port_up = 0;                         // port_up input
    uint32_t no_route = 0;                        // NET.DROP_NO_ROUTE
    // interrupts
    uint32_t irq_en = 0, irq_count = 0;
    bool irq_valid = false;
    std::array<bool, kNv> arm{};
    std::array<uint32_t, kNpw> pend{};

    void clear_table() {
        t.fill(Entry{});
        rt.fill(0);
    }
    uint32_t port_cfg() const {  // the port_cfg output: {DATELINE, DIM} per port, port 1 low
        uint32_t v = 0;
        for (unsigned p = 0; p < kNp; ++p)
            v |= static_cast<uint32_t>((VELO_FIELD_GET(VELO_TBL_NET_PORT_CFG_DATELINE, pcfg[p]) << 2) |
                                       VELO_FIELD_GET(VELO_TBL_NET_PORT_CFG_DIM, pcfg[p]))
                 << (3 * p);
        return v;
    }
    static uint32_t ports() {
        return static_cast<uint32_t>(
            VELO_FIELD_PREP(VELO_REG_NET_PORTS_NP, kNp) | VELO_FIELD_PREP(VELO_REG_NET_PORTS_PB, kPb) |
            VELO_FIELD_PREP(VELO_REG_NET_PORTS_NVC, kNvc) | VELO_FIELD_PREP(VELO_REG_NET_PORTS_VC_DEPTH, kVcDepth));
    }
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
            case VELO_BLK_NET_BASE + VELO_BLKHDR_TYPE:
                return VELO_BLK_NET_TYPE;
            case VELO_BLK_NET_BASE + VELO_BLKHDR_VERSION:
                return VELO_BLK_NET_VERSION;
            case VELO_BLK_NET_BASE + VELO_BLKHDR_NEXT:
                return VELO_BLK_NET_NEXT;
            case VELO_REG_NET_PORTS:
                return ports();
            case VELO_REG_NET_LINK_STATUS:
                return port_up;
            case VELO_REG_NET_ROUTE_OFFSET:
                return VELO_TBL_ROUTE_TABLE_BASE;
            case VELO_REG_NET_PORT_OFFSET:
                return VELO_TBL_NET_PORT_BASE;
            case VELO_REG_NET_PORT_STRIDE:
                return VELO_TBL_NET_PORT_STRIDE;
            case VELO_REG_NET_DROP_NO_ROUTE:
                return no_route;
            case VELO_BLK_IRQ_BASE + VELO_BLKHDR_TYPE:
                return VELO_BLK_IRQ_TYPE;
            case VELO_BLK_IRQ_BASE + VELO_BLKHDR_VERSION:
                return VELO_BLK_IRQ_VERSION;
            case VELO_BLK_IRQ_BASE + VELO_BLKHDR_NEXT:
                return 0;  // built with RMA = 0: no RMA block, IRQ ends the chain
            case VELO_REG_IRQ_CTRL:
                return irq_en;
            case VELO_REG_IRQ_COUNT:
                return irq_count;
            case VELO_REG_IRQ_PENDING_OFFSET:
                return kPnd;
            case VELO_REG_IRQ_PENDING_WORDS:
                return kNpw;
            default:
                break;
        }
        if (is_pnd(off)) return pend[(off - kPnd) / 4];
        if (off >= kCnt && off < kCnt + 4 * VELO_CNT_NUM) return cnt[(off - kCnt) / 4];
        if (off >= kNpt && off < kNpt + kNp * kNpStride) {  // network port entries 1..NP
            const unsigned p = (off - kNpt) / kNpStride;
            const uint32_t r = (off - kNpt) % kNpStride;
            if (r == VELO_TBL_NET_PORT_CFG) return pcfg[p];
            if (r == VELO_TBL_NET_PORT_STATUS)
                return static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_NET_PORT_STATUS_UP, (port_up >> p) & 1));
            if (r >= kNpCnt0 && r < kNpCnt0 + 4 * kLinkCnt) return ncnt[p * kLinkCnt + (r - kNpCnt0) / 4];
            return 0;
        }
        if (off >= kRt && off < kRt + kNn * VELO_TBL_ROUTE_TABLE_STRIDE) return rt[(off - kRt) / 4];
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
enum class WrKind {
    Global,
    Counter,
    Table,
    User,
    NoRoute,
    PortCfg,
    LinkCounter,
    Route,
    IrqCtrl,
    IrqArm,
    IrqCount,
    IrqPend,
    Bad
};
WrKind wr_kind(uint32_t off) {
    if (is_pnd(off)) return WrKind::IrqPend;
    switch (off) {
        case VELO_REG_IRQ_CTRL:
            return WrKind::IrqCtrl;
        case VELO_REG_IRQ_ARM:
            return WrKind::IrqArm;
        case VELO_REG_IRQ_COUNT:
            return WrKind::IrqCount;
        case VELO_REG_CTRL_NODE_ID:
        case VELO_REG_CTRL_CONTROL:
        case VELO_REG_CTRL_QUIESCE_VPID:
        case VELO_REG_CTRL_SCRATCH:
            return WrKind::Global;
        case VELO_REG_NET_DROP_NO_ROUTE:
            return WrKind::NoRoute;
        default:
            break;
    }
    if (off >= kCnt && off < kCnt + 4 * VELO_CNT_NUM) return WrKind::Counter;
    if (off >= kNpt && off < kNpt + kNp * kNpStride) {  // STATUS and unassigned offsets: bad
        const uint32_t r = (off - kNpt) % kNpStride;
        if (r == VELO_TBL_NET_PORT_CFG) return WrKind::PortCfg;
        if (r >= kNpCnt0 && r < kNpCnt0 + 4 * kLinkCnt) return WrKind::LinkCounter;
        return WrKind::Bad;
    }
    if (off >= kRt && off < kRt + kNn * VELO_TBL_ROUTE_TABLE_STRIDE) return WrKind::Route;
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
    // a read of registers (not RAM-backed): its DWs as the model was in the cycles they were sampled
    bool live = false;
    uint64_t due = 0;  // cycle DW 0 is sampled
    unsigned captured = 0;
    std::array<uint32_t, 2> val{};
};

// An effect of a register write that takes place at a known clock edge (the end of cycle `cycle`)
struct Effect {
    enum Kind { Route, PortCfg, NoRouteClear, IrqCtrl, IrqArm, IrqDisarm, IrqCountClear, IrqPendClear } kind;
    uint64_t cycle;
    unsigned idx;
    uint32_t value;
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
    // the network side: requester route reads, no-route events, link status flips, link counter
    // increments (percent of cycles)
    int rt_re_pct = 0, no_route_pct = 0, port_up_pct = 0, ncnt_inc_pct = 0;
    // the completer's commit reports and the interrupt request's ready (percent of cycles)
    int cmt_pct = 0, irq_ready_pct = 100;
    uint64_t commits = 0, irq_hits = 0, irq_raised = 0, irq_taken = 0, irq_stalls = 0;
    // observed / expected events
    uint64_t ev_window = 0, ev_unsup = 0, ev_bad = 0;
    uint64_t x_window = 0, x_unsup = 0, x_bad = 0;
    uint64_t sw_wr_seen = 0, cnt_clr_seen = 0, tbl_reads = 0, wp_writes = 0, cpls = 0, ur_cpls = 0;
    uint64_t rt_reads = 0, rt_writes = 0, cfg_writes = 0, ncnt_clr_seen = 0, no_route_events = 0;
    uint64_t init_cycles = 0;
    std::vector<uint8_t> hot;  // vpids hit often, so reads meet earlier writes
    std::vector<uint8_t> hot_nodes;

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
        for (int i = 0; i < 4; ++i) hot_nodes.push_back(static_cast<uint8_t>(rng() % kNn));
        hot_nodes.push_back(0);
        hot_nodes.push_back(kNn - 1);
        reset();
    }

    // reset, then wait for the table clear: in_ready stays low for 2^max(VPID_BITS, NODE_BITS)
    // cycles (the counter units are reset with it)
    void reset() {
        h->in_valid = 0;
        h->cpl_ready = 0;
        h->tbl_re = 0;
        h->wp_we = 0;
        h->rt_re = 0;
        h->ev_no_route = 0;
        h->cmt_valid = 0;
        h->irq_ready = 0;
        h->link_up = m.link_up;
        h->cpl_busy = m.cpl_busy;
        h->q_busy = m.q_busy;
        h->port_up = static_cast<uint8_t>(m.port_up);
        h->cpl_id = cpl_id;
        h.reset();
        m.node_id = m.enable = m.qvpid = m.scratch = 0;
        m.clear_table();
        m.pcfg.fill(0);
        m.ncnt.fill(0);
        m.no_route = 0;
        m.irq_en = m.irq_count = 0;
        m.irq_valid = false;
        m.arm.fill(false);
        m.pend.fill(0);
        pc_v_ = pc_armed_ = false;
        cmt_q_.clear();
        effects_.clear();
        init_cycles = 0;
        prev_cpl_valid_ = false;
        for (;;) {
            h.eval();
            EXPECT_FALSE(h->cpl_valid) << "completion during init";
            EXPECT_FALSE(h->sw_wr || h->cnt_clr || h->ncnt_clr || h->ev_bad_access || h->ev_unsupported ||
                         h->ev_window_read || h->irq_valid);
            if (h->in_ready) break;
            ASSERT_LT(init_cycles, 10u * (kNv + kNn)) << "table clear never ends";
            h.tick();
            ++init_cycles;
        }
        EXPECT_EQ(h->node_id, 0u);
        EXPECT_EQ(h->enable, 0u);
        EXPECT_EQ(h->q_vpid, 0u);
        EXPECT_EQ(h->port_cfg, 0u);
    }

    uint8_t vpid() {
        return pct(rng, 50) ? hot[static_cast<size_t>(rnd(rng, static_cast<int>(hot.size())))]
                            : static_cast<uint8_t>(rng());
    }
    unsigned node() {
        return pct(rng, 50) ? hot_nodes[static_cast<size_t>(rnd(rng, static_cast<int>(hot_nodes.size())))]
                            : static_cast<unsigned>(rng() % kNn);
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
    // a commit report of vpid v in a coming cycle (one per cycle, in order, before random ones)
    // (PIPE: kPipe cycles later, as the register writes it is scripted against are performed later)
    void commit(unsigned v) {
        for (unsigned i = 0; i < kPipe; ++i) cmt_q_.push_back(-1);
        cmt_q_.push_back(static_cast<int>(v));
    }
    // ... of vpid v in the cycle after the next request is taken
    void commit_on_accept(unsigned v) { cmt_on_accept_ = static_cast<int>(v); }

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
        const uint64_t c = h.cycle();
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
        // the requester's route table port, the switch's no-route events, the links
        const bool rre = pct(rng, rt_re_pct);
        const unsigned rn = node();
        h->rt_re = rre;
        h->rt_node = static_cast<uint8_t>(rn);
        const bool nr = pct(rng, no_route_pct);
        h->ev_no_route = nr;
        no_route_events += nr;
        // the completer's commit reports, the interrupt's ready
        bool cm = pct(rng, cmt_pct);
        unsigned cv = vpid();
        if (!cmt_q_.empty()) {
            cm = cmt_q_.front() >= 0;  // -1: a scripted cycle without a report
            if (cm) cv = static_cast<unsigned>(cmt_q_.front());
            cmt_q_.pop_front();
        }
        h->cmt_valid = cm;
        h->cmt_vpid = static_cast<uint8_t>(cv);
        commits += cm;
        const bool irq_ready = pct(rng, irq_ready_pct);
        h->irq_ready = irq_ready;
        if (pct(rng, port_up_pct)) m.port_up ^= 1u << rnd(rng, kNp);
        h->port_up = static_cast<uint8_t>(m.port_up);
        if (pct(rng, ncnt_inc_pct)) m.ncnt[static_cast<size_t>(rnd(rng, kNp * kLinkCnt))] += 1 + rnd(rng, 3);
        h.eval();
        // the counter units answer cnt_idx and ncnt_idx combinationally (indices past the counters
        // get garbage, which the register file must never show)
        const unsigned ci = h->cnt_idx;
        h->cnt_data = ci < 16 ? m.cnt[ci] : 0xDEAD0000u | ci;
        const unsigned ni = h->ncnt_idx;
        h->ncnt_data = ni < kNp * kLinkCnt ? m.ncnt[ni] : 0xBEEF0000u | ni;
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
        ASSERT_EQ(h->irq_valid, m.irq_valid) << "irq_valid in cycle " << c;
        irq_taken += h->irq_valid && irq_ready;
        for (size_t i = 0; i < 4; ++i) prev_cpl_hdr_[i] = h->cpl_hdr[i];
        // handshakes
        if (!raw_.empty()) {
            if (h->in_ready) {
                if (raw_.front().sop) on_raw_accept(raw_.front());
                raw_.pop_front();
            }
        } else if (drv.sample()) {
            ASSERT_FALSE(queued_.empty());
            on_accept(queued_.front(), queued_wp_.front(), c);
            if (cmt_on_accept_ >= 0) {
                commit(static_cast<unsigned>(cmt_on_accept_));
                cmt_on_accept_ = -1;
            }
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
        // registers read in this cycle, as the model is now
        for (ExpCpl& e : exp_cpl_)
            if (e.live && e.captured < e.req.len_dw && e.due + e.captured * (1 + kPipe) == c) {
                e.val[e.captured] = m.rd(static_cast<uint32_t>(e.req.addr & 0x1FFFFF) + 4 * e.captured);
                ++e.captured;
            }
        // the table ports read the tables as they are before this cycle's writes
        Entry exp = m.t[rv];
        const uint32_t rt_exp = m.rt[rn];
        h.tick();
        // the entry reported last cycle consumes its arm (as the arm bits were after that cycle's
        // writes): the arm bit's clear and the pending bit's set have the ports; a software write
        // to the arm port, or to the pending port for another word, waits a cycle (and with it
        // everything after it)
        const bool c_hit = pc_v_ && pc_armed_;
        irq_hits += c_hit;
        if (!effects_.empty() && effects_.front().cycle == c && c_hit) {
            const Effect& f = effects_.front();
            if (f.kind == Effect::IrqArm || f.kind == Effect::IrqDisarm ||
                (f.kind == Effect::IrqPendClear && f.idx != pc_vpid_ / 32)) {
                for (Effect& e : effects_) ++e.cycle;
                ++irq_stalls;
            }
        }
        if (c_hit) m.arm[pc_vpid_] = false;
        const bool irq_hold = m.irq_valid && !irq_ready;
        const bool irq_raise = c_hit && m.irq_en;
        bool count_clear = false;
        // effects of register writes at this edge
        bool nr_clear = false;
        while (!effects_.empty() && effects_.front().cycle <= c) {
            const Effect f = effects_.front();
            effects_.pop_front();
            ASSERT_EQ(f.cycle, c) << "write effect missed";
            switch (f.kind) {
                case Effect::IrqCtrl:
                    m.irq_en = f.value;
                    break;
                case Effect::IrqArm:
                    m.arm[f.idx] = true;
                    break;
                case Effect::IrqDisarm:
                    m.arm[f.idx] = false;
                    break;
                case Effect::IrqCountClear:
                    count_clear = true;
                    break;
                case Effect::IrqPendClear:
                    m.pend[f.idx] &= ~f.value;
                    break;
                case Effect::Route:
                    m.rt[f.idx] = f.value;
                    break;
                case Effect::PortCfg:
                    m.pcfg[f.idx] = f.value;
                    break;
                case Effect::NoRouteClear:
                    nr_clear = true;
                    break;
            }
        }
        if (nr_clear)
            m.no_route = 0;  // a clear wins over an event in the same cycle
        else if (nr && m.no_route != 0xFFFFFFFFu)
            ++m.no_route;
        if (c_hit) m.pend[pc_vpid_ / 32] |= 1u << (pc_vpid_ % 32);  // wins over a clear
        m.irq_valid = irq_hold || irq_raise;
        irq_raised += irq_raise && !irq_hold;
        if (count_clear)
            m.irq_count = 0;  // wins over a new request
        else if (irq_raise && !irq_hold)
            ++m.irq_count;
        // this cycle's report reads the arm bit as written at this edge
        pc_v_ = cm;
        pc_vpid_ = cv;
        pc_armed_ = cm && m.arm[cv];
        ASSERT_EQ(h->port_cfg, m.port_cfg()) << "port_cfg";
        if (rre) {
            ++rt_reads;
            ASSERT_EQ(h->rt_data, rt_port(rt_exp)) << "rt_data of node " << rn;
        }
        if (h->ncnt_clr) {
            ++ncnt_clr_seen;
            ASSERT_FALSE(exp_nclr_.empty()) << "ncnt_clr without a link counter write";
            ASSERT_EQ(h->ncnt_clr_idx, exp_nclr_.front()) << "ncnt_clr_idx";
            m.ncnt[exp_nclr_.front()] = 0;
            exp_nclr_.pop_front();
        }
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
        return !drv.idle() || !raw_.empty() || !exp_cpl_.empty() || !exp_tbl_.empty() || !exp_clr_.empty() ||
               !exp_nclr_.empty() || !effects_.empty() || !cmt_q_.empty() || pc_v_;
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
        EXPECT_EQ(h->port_cfg, m.port_cfg()) << "port_cfg output";
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
    void set_port_up(uint32_t up) {
        m.port_up = up;
        h->port_up = static_cast<uint8_t>(up);
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
    std::deque<unsigned> exp_nclr_;  // link counter clears due (seen as ncnt_clr)
    std::deque<Effect> effects_;     // write effects at known edges, in order
    std::multiset<unsigned> wp_blocked_;
    std::deque<Tlp> got_;
    std::deque<RawBeat> raw_;
    std::deque<int> cmt_q_;  // scripted commit reports (vpid, or -1: none in that cycle)
    int cmt_on_accept_ = -1;
    bool pc_v_ = false, pc_armed_ = false;  // last cycle's commit report, and its arm bit
    unsigned pc_vpid_ = 0;
    bool prev_cpl_valid_ = false, prev_cpl_ready_ = false;
    std::array<uint32_t, 4> prev_cpl_hdr_{};

    // t was taken (its last beat) in cycle c
    void on_accept(const Tlp& t, int wpv, uint64_t c) {
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
                apply_write(off + 4 * d, v, c + 1 + d + kPipe * (d + 1));
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
            if (!e.ur && !ram_backed(off)) {
                e.live = true;
                e.due = c + 1 + kPipe;
            }
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
    // DW write of v at off, performed at the end of cycle at
    void apply_write(uint32_t off, uint32_t v, uint64_t at) {
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
                if ((off & 0xF) == VELO_TBL_VPID_TABLE_MB_CFG)  // every MB_CFG write disarms
                    effects_.push_back({Effect::IrqDisarm, at, (off - kTbl) / VELO_TBL_VPID_TABLE_STRIDE, 0});
                break;
            case WrKind::IrqCtrl:
                effects_.push_back({Effect::IrqCtrl, at, 0, v & 1});
                break;
            case WrKind::IrqArm:
                if (v < kNv)
                    effects_.push_back({Effect::IrqArm, at, v, 0});
                else
                    ++x_bad;  // not a vpid: ignored
                break;
            case WrKind::IrqCount:
                effects_.push_back({Effect::IrqCountClear, at, 0, 0});
                break;
            case WrKind::IrqPend:
                effects_.push_back({Effect::IrqPendClear, at, (off - kPnd) / 4, v});
                break;
            case WrKind::User:
                exp_tbl_.push_back({((off - kUsr) >> 12) % kNv, 4, v});
                break;
            case WrKind::NoRoute:
                effects_.push_back({Effect::NoRouteClear, at, 0, 0});
                break;
            case WrKind::PortCfg:
                ++cfg_writes;
                effects_.push_back({Effect::PortCfg, at, (off - kNpt) / kNpStride,
                                    v & static_cast<uint32_t>(VELO_FIELD_MASK(VELO_TBL_NET_PORT_CFG_DIM) |
                                                              VELO_FIELD_MASK(VELO_TBL_NET_PORT_CFG_DATELINE))});
                break;
            case WrKind::LinkCounter:
                exp_nclr_.push_back((off - kNpt) / kNpStride * kLinkCnt + ((off - kNpt) % kNpStride - kNpCnt0) / 4);
                break;
            case WrKind::Route:
                ++rt_writes;
                effects_.push_back({Effect::Route, at, (off - kRt) / 4, rt_sw(v)});
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
        if (e.live) {
            ASSERT_EQ(e.captured, q.len_dw) << what << ": completion before every DW was read";
        }
        for (unsigned d = 0; d < q.len_dw; ++d) {
            uint32_t v = 0;
            for (unsigned i = 0; i < 4; ++i) v |= static_cast<uint32_t>(c.payload[4 * d + i]) << (8 * i);
            const uint32_t want = e.live ? e.val[d] : m.rd(off + 4 * d);
            ASSERT_EQ(v, want) << what << " DW " << d << " (offset 0x" << std::hex << off + 4 * d << ")";
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
    EXPECT_EQ(b.init_cycles, kInit) << "in_ready low while the tables are cleared: 2^max(VPID_BITS, NODE_BITS)";
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
    EXPECT_EQ(b.init_cycles, kInit);
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
        ASSERT_LT(waited, 2u * kInit);
    }
    EXPECT_EQ(waited, kInit);
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
                         {VELO_BLK_NET_BASE, VELO_BLK_NET_TYPE, VELO_BLK_NET_VERSION},
                         {VELO_BLK_VPID_BASE, VELO_BLK_VPID_TYPE, VELO_BLK_VPID_VERSION},
                         {VELO_BLK_IRQ_BASE, VELO_BLK_IRQ_TYPE, VELO_BLK_IRQ_VERSION}};
    uint32_t off = 0;
    size_t n = 0;
    std::set<uint32_t> seen;
    do {
        ASSERT_LT(n, 6u) << "chain longer than the spec's";
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
    EXPECT_EQ(n, 6u);
    // RMA = 0: IRQ.NEXT reads 0 instead of the spec's value (the RMA block), which reads as unassigned
    static_assert(VELO_BLK_IRQ_NEXT == VELO_BLK_RMA_BASE, "the spec links the RMA block from IRQ");
    EXPECT_EQ(b.rd32(VELO_BLK_IRQ_BASE + VELO_BLKHDR_NEXT), 0u);
    EXPECT_EQ(b.rd32(VELO_BLK_RMA_BASE + VELO_BLKHDR_TYPE), 0u);
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
    // the NET block: geometry, where the route table and the port entries are
    const uint32_t ports = b.rd32(VELO_REG_NET_PORTS);
    EXPECT_EQ(VELO_FIELD_GET(VELO_REG_NET_PORTS_NP, ports), kNp);
    EXPECT_EQ(VELO_FIELD_GET(VELO_REG_NET_PORTS_PB, ports), kPb);
    EXPECT_EQ(VELO_FIELD_GET(VELO_REG_NET_PORTS_NVC, ports), kNvc);
    EXPECT_EQ(VELO_FIELD_GET(VELO_REG_NET_PORTS_VC_DEPTH, ports), kVcDepth);
    EXPECT_EQ(ports & ~static_cast<uint32_t>(
                          VELO_FIELD_MASK(VELO_REG_NET_PORTS_NP) | VELO_FIELD_MASK(VELO_REG_NET_PORTS_PB) |
                          VELO_FIELD_MASK(VELO_REG_NET_PORTS_NVC) | VELO_FIELD_MASK(VELO_REG_NET_PORTS_VC_DEPTH)),
              0u)
        << "reserved PORTS bits";
    EXPECT_EQ(b.rd32(VELO_REG_NET_ROUTE_OFFSET), kRt);
    EXPECT_EQ(b.rd32(VELO_REG_NET_PORT_OFFSET), kNpt);
    EXPECT_EQ(b.rd32(VELO_REG_NET_PORT_STRIDE), kNpStride);
    EXPECT_EQ(b.rd32(VELO_REG_NET_LINK_STATUS), 0u);
    EXPECT_EQ(b.rd32(VELO_REG_NET_DROP_NO_ROUTE), 0u);
    // the IRQ block: disabled, nothing counted or pending, where the pending bitmap is
    EXPECT_EQ(b.rd32(VELO_REG_IRQ_CTRL), 0u);
    EXPECT_EQ(b.rd32(VELO_REG_IRQ_ARM), 0u);
    EXPECT_EQ(b.rd32(VELO_REG_IRQ_COUNT), 0u);
    EXPECT_EQ(b.rd32(VELO_REG_IRQ_PENDING_OFFSET), kPnd);
    EXPECT_EQ(b.rd32(VELO_REG_IRQ_PENDING_WORDS), kNpw);
    for (unsigned w = 0; w < kNpw; ++w) EXPECT_EQ(b.rd32(kPnd + 4 * w), 0u) << "PENDING word " << w;
    // unassigned offsets read 0 (in the blocks, between the tables, in and past the network port
    // entries, past the route table)
    for (uint32_t o : {0x18u,
                       0x124u,
                       0x324u,
                       0x3FCu,
                       0x420u,
                       0x520u,
                       0x57Cu,
                       kPnd + 4 * kNpw,
                       0x7FFCu,
                       0x9000u,
                       kNpt - 4,
                       np_off(1, 8),
                       np_off(1, 0xC),
                       np_off(kNp, kNpCnt0 + 4 * kLinkCnt),
                       np_off(kNp, 0x3C),
                       np_off(kNp + 1, 0),
                       np_off(kNp + 1, kNpCnt0),
                       kRt - 4,
                       kRt + 4 * kNn,
                       0xFFFFCu,
                       kUsr + 4,
                       kUsr + 0xFFC})
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
                           VELO_REG_IRQ_PENDING_OFFSET,
                           VELO_REG_IRQ_PENDING_WORDS,
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
    expect_events(4, 0, 8 + 18 + 2, "read-only writes");
    EXPECT_EQ(b.rd32(VELO_REG_ID_CAPS), Model::caps());
    EXPECT_EQ(b.rd32(VELO_REG_ID_SPEC_HASH), static_cast<uint32_t>(VELO_SPEC_HASH));
    // 2-DW write not 8-byte aligned, and longer writes (multi-beat): ignored
    b.write2(VELO_REG_CTRL_SCRATCH - 4, 7, 8);
    b.push(Tlp::mwr(0xF0000000ull + VELO_REG_CTRL_SCRATCH, std::vector<uint8_t>(12, 0x77), 0));
    b.push(Tlp::mwr(0xF0000000ull + VELO_REG_CTRL_SCRATCH, std::vector<uint8_t>(64, 0x66), 0));
    b.drain();
    expect_events(4, 0, 28 + 3, "long writes");
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
    expect_events(4, 6, 31, "non-posted");
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
    expect_events(4, 9, 31, "messages and completions");
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

// The route table is cleared (every entry invalid) after reset, whatever it held, as seen
// through software reads and through the requester's port.
TEST(Regfile, RouteTableClearedAfterReset) {
    Bench b;
    for (unsigned n = 0; n < kNn; n += 2) {
        b.write2(rt_off(n), static_cast<uint32_t>(b.rng()) | kRtValid, static_cast<uint32_t>(b.rng()) | kRtValid);
    }
    b.rt_re_pct = 30;
    b.drain();
    ASSERT_FALSE(HasFatalFailure());
    for (unsigned n = 0; n < kNn; ++n) ASSERT_NE(b.m.rt[n] & kRtValid, 0u) << n;
    // the requester's port holds a valid entry before the reset
    b.h->rt_re = 1;
    b.h->rt_node = 7;
    b.h.eval();
    b.h.tick();
    b.h->rt_re = 0;
    ASSERT_EQ(b.h->rt_data, rt_port(b.m.rt[7]));
    b.reset();
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_EQ(b.init_cycles, kInit);
    b.rt_re_pct = 0;
    // requester reads, back to back: every entry reads {VALID=0, ROUTE=0}
    for (unsigned n = 0; n <= kNn; ++n) {
        if (n > 0) {
            EXPECT_EQ(b.h->rt_data, 0u) << "node " << n - 1;
        }
        b.h->rt_re = n < kNn;
        b.h->rt_node = static_cast<uint8_t>(n);
        b.h.eval();
        b.h.tick();
    }
    b.h->rt_re = 0;
    // software reads, 8 bytes at a time
    for (unsigned n = 0; n < kNn; n += 2) {
        Tlp c = b.rd(rt_off(n), 2);
        ASSERT_EQ(c.payload.size(), 8u);
        for (uint8_t x : c.payload) EXPECT_EQ(x, 0u) << "node " << n;
    }
}

// Route entries written and read back: VALID (bit 31) and ROUTE (13:0) kept, the other bits read
// 0; 4- and 8-byte accesses; the requester's port returns the entry the cycle after rt_re.
TEST(Regfile, RouteTableReadWrite) {
    Bench b;
    std::vector<uint32_t> v(kNn);
    for (auto& x : v) x = static_cast<uint32_t>(b.rng());
    for (unsigned n = 0; n < kNn; n += 2) {
        if (b.rng() & 1) {
            b.write2(rt_off(n), v[n], v[n + 1]);
        } else {
            b.write(rt_off(n + 1), v[n + 1]);
            b.write(rt_off(n), v[n]);
        }
    }
    b.drain();
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_EQ(b.rt_writes, kNn);
    for (unsigned n = 0; n < kNn; ++n) ASSERT_EQ(b.m.rt[n], v[n] & 0x80003FFFu) << n;
    for (unsigned n : {0u, 1u, 2u, 100u, kNn - 1}) EXPECT_EQ(b.rd32(rt_off(n)), v[n] & 0x80003FFFu) << n;
    for (unsigned n = 0; n < kNn; n += 2) b.read(rt_off(n), 2);
    b.drain();
    // the requester's port, one read per cycle: the entry the cycle after rt_re (checked by cycle())
    b.rt_re_pct = 100;
    const uint64_t r = b.rt_reads;
    for (int i = 0; i < 2000; ++i) b.cycle();
    EXPECT_EQ(b.rt_reads, r + 2000);
    b.rt_re_pct = 0;
    // by hand: valid and invalid entries
    b.write(rt_off(3), 0x80001234u);
    b.write(rt_off(4), 0x00002345u);
    b.write(rt_off(5), 0xFFFFFFFFu);
    b.drain();
    const std::pair<unsigned, uint32_t> port[] = {{3, 0x5234}, {4, 0x2345}, {5, 0x7FFF}};
    for (auto [n, want] : port) {
        b.h->rt_re = 1;
        b.h->rt_node = static_cast<uint8_t>(n);
        b.h.eval();
        b.h.tick();
        EXPECT_EQ(b.h->rt_data, want) << "node " << n;
    }
    b.h->rt_re = 0;
    EXPECT_EQ(b.rd32(rt_off(3)), 0x80001234u);
    EXPECT_EQ(b.rd32(rt_off(4)), 0x00002345u);
    EXPECT_EQ(b.rd32(rt_off(5)), 0x80003FFFu);
    // past the table: unassigned
    const uint64_t bad = b.x_bad;
    EXPECT_EQ(b.rd32(kRt + 4 * kNn), 0u);
    b.write(kRt + 4 * kNn, 0x80000001u);
    b.drain();
    EXPECT_EQ(b.x_bad, bad + 1);
    EXPECT_EQ(b.rt_writes, kNn + 3);
}

// The requester has priority on the route table's read port: a software read waits while it
// reads every cycle, then completes with the right entry; with the requester reading at random,
// software reads are delayed, never corrupted, and the requester always gets its entry.
TEST(Regfile, RoutePortPriority) {
    Bench b;
    for (unsigned n = 0; n < 16; ++n) b.write(rt_off(n), kRtValid | (0x111u * (n + 1)));
    b.drain();
    b.read(rt_off(9));
    b.rt_re_pct = 100;
    const uint64_t n0 = b.cpls;
    for (int i = 0; i < 50; ++i) b.cycle();
    EXPECT_EQ(b.cpls, n0) << "the requester's reads have priority";
    b.rt_re_pct = 0;
    b.drain();
    EXPECT_EQ(b.cpls, n0 + 1);
    ASSERT_EQ(b.last_cpl.payload.size(), 4u);
    EXPECT_EQ(b.last_cpl.payload[0] | (b.last_cpl.payload[1] << 8), 0xAAA);
    EXPECT_EQ(b.last_cpl.payload[3], 0x80u);
    // an 8-byte read waits for the port twice
    b.read(rt_off(2), 2);
    b.rt_re_pct = 100;
    for (int i = 0; i < 20; ++i) b.cycle();
    EXPECT_EQ(b.cpls, n0 + 1);
    b.rt_re_pct = 0;
    b.drain();
    EXPECT_EQ(b.cpls, n0 + 2);
    // random reads and writes of a few entries against random requester reads of the same ones
    auto& rng = b.rng;
    for (int round = 0; round < 40; ++round) {
        b.rt_re_pct = 30 + rnd(rng, 3) * 30;
        b.sink.stall_pct = rnd(rng, 3) * 25;
        for (int i = 0; i < 50; ++i) {
            const unsigned n = b.node() & ~1u;
            const int k = rnd(rng, 4);
            if (k == 0) b.write(rt_off(n), static_cast<uint32_t>(rng()));
            if (k == 1) b.write2(rt_off(n), static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()));
            if (k == 2) b.read(rt_off(n | (rng() & 1)));
            if (k == 3) b.read(rt_off(n), 2);
        }
        b.drain();
        ASSERT_FALSE(HasFatalFailure()) << "round " << round;
    }
    EXPECT_GT(b.rt_reads, 5000u);
}

// NET_PORT CFG of every port: read back and driven on port_cfg ({DATELINE, DIM}, port 1 in the
// low bits); STATUS and NET.LINK_STATUS follow port_up.
TEST(Regfile, NetPortConfigAndStatus) {
    Bench b;
    for (int round = 0; round < 30; ++round) {
        uint32_t v[kNp];
        for (unsigned p = 1; p <= kNp; ++p) {
            v[p - 1] = static_cast<uint32_t>(b.rng());
            b.write(np_off(p, VELO_TBL_NET_PORT_CFG), v[p - 1]);
        }
        b.drain();  // port_cfg is checked against the model every cycle
        ASSERT_FALSE(HasFatalFailure());
        uint32_t want = 0;
        for (unsigned p = 1; p <= kNp; ++p) {
            EXPECT_EQ(b.rd32(np_off(p, VELO_TBL_NET_PORT_CFG)), v[p - 1] & 7u) << "port " << p;
            want |= (v[p - 1] & 7u) << (3 * (p - 1));
        }
        EXPECT_EQ(b.h->port_cfg, want);
    }
    // 8 bytes at CFG: CFG written, STATUS is read-only (ignored and counted)
    const uint64_t bad = b.x_bad;
    b.write2(np_off(2, VELO_TBL_NET_PORT_CFG), 0x5, 0xFFFFFFFF);
    b.drain();
    EXPECT_EQ(b.x_bad, bad + 1);
    EXPECT_EQ((b.h->port_cfg >> 3) & 7u, 5u);
    EXPECT_EQ(b.cfg_writes, 30u * kNp + 1);
    // status: every combination of port_up
    for (uint32_t up = 0; up < (1u << kNp); ++up) {
        b.set_port_up(up);
        EXPECT_EQ(b.rd32(VELO_REG_NET_LINK_STATUS), up);
        for (unsigned p = 1; p <= kNp; ++p)
            EXPECT_EQ(b.rd32(np_off(p, VELO_TBL_NET_PORT_STATUS)), (up >> (p - 1)) & 1u) << "port " << p;
        Tlp c = b.rd(np_off(1 + (up & 3), VELO_TBL_NET_PORT_CFG), 2);  // CFG and STATUS in one read
        EXPECT_EQ(c.payload.size(), 8u);
    }
    // link status that changes while it is read: scored in the cycle it is sampled
    b.port_up_pct = 50;
    for (int i = 0; i < 400; ++i) {
        const unsigned p = 1 + rnd(b.rng, kNp);
        if (i % 3 == 0) b.read(VELO_REG_NET_LINK_STATUS);
        if (i % 3 == 1) b.read(np_off(p, VELO_TBL_NET_PORT_STATUS));
        if (i % 3 == 2) b.read(np_off(p, VELO_TBL_NET_PORT_CFG), 2);
    }
    b.drain();
    EXPECT_EQ(b.ur_cpls, 0u);
}

// Link counters: each port's eight counters read through ncnt_idx/ncnt_data, a write clears the
// one addressed (ncnt_clr with its index, once), counters that move are read as they are when
// sampled.
TEST(Regfile, LinkCounters) {
    Bench b;
    for (auto& c : b.m.ncnt) c = static_cast<uint32_t>(b.rng()) | 1;
    for (unsigned p = 1; p <= kNp; ++p)
        for (unsigned c = 0; c < kLinkCnt; ++c)
            EXPECT_EQ(b.rd32(ncnt_off(p, c)), b.m.ncnt[(p - 1) * kLinkCnt + c]) << "port " << p << " counter " << c;
    EXPECT_EQ(b.rd32(np_off(3, VELO_TBL_NET_PORT_CNT_RX_PKTS)), b.m.ncnt[2 * kLinkCnt + 7]);
    EXPECT_EQ(b.rd32(np_off(1, VELO_TBL_NET_PORT_CNT_CRC_ERR)), b.m.ncnt[0]);
    for (unsigned p = 1; p <= kNp; ++p) b.read(ncnt_off(p, 2), 2);
    b.drain();
    // write-to-clear: one ncnt_clr pulse with the index port * 8 + counter, whatever the value
    const std::array<uint32_t, kNp* kLinkCnt> before = b.m.ncnt;
    const std::pair<unsigned, unsigned> clr[] = {{1, 0}, {4, 7}, {2, 3}, {3, 5}};
    for (auto [p, c] : clr) {
        const uint64_t n = b.ncnt_clr_seen;
        b.write(ncnt_off(p, c), static_cast<uint32_t>(b.rng()));
        b.drain();
        ASSERT_FALSE(HasFatalFailure());
        EXPECT_EQ(b.ncnt_clr_seen, n + 1);
        EXPECT_EQ(b.m.ncnt[(p - 1) * kLinkCnt + c], 0u);
        EXPECT_EQ(b.rd32(ncnt_off(p, c)), 0u);
    }
    unsigned untouched = 0;
    for (unsigned i = 0; i < kNp * kLinkCnt; ++i)
        if (b.m.ncnt[i] == before[i]) ++untouched;
    EXPECT_EQ(untouched, kNp * kLinkCnt - 4);
    // an 8-byte write clears two
    b.write2(ncnt_off(2, 6), 0, 0);
    b.drain();
    EXPECT_EQ(b.m.ncnt[kLinkCnt + 6], 0u);
    EXPECT_EQ(b.m.ncnt[kLinkCnt + 7], 0u);
    EXPECT_EQ(b.ncnt_clr_seen, 6u);
    EXPECT_EQ(b.x_bad, 0u);
    // counters that move: reads and clears meanwhile
    b.ncnt_inc_pct = 60;
    for (int i = 0; i < 600; ++i) {
        const unsigned p = 1 + rnd(b.rng, kNp), c = static_cast<unsigned>(rnd(b.rng, kLinkCnt));
        if (i % 5 == 0)
            b.write(ncnt_off(p, c), 1);
        else
            b.read(ncnt_off(p, c & ~1u), 1 + (i & 1));
    }
    b.drain();
    EXPECT_EQ(b.ur_cpls, 0u);
    EXPECT_EQ(b.ncnt_clr_seen, 6u + 120u);
}

// NET.DROP_NO_ROUTE counts ev_no_route pulses and clears on a write (a clear wins over an event
// in the same cycle).
TEST(Regfile, DropNoRoute) {
    Bench b;
    EXPECT_EQ(b.rd32(VELO_REG_NET_DROP_NO_ROUTE), 0u);
    b.no_route_pct = 100;
    for (int i = 0; i < 37; ++i) b.cycle();
    b.no_route_pct = 0;
    EXPECT_EQ(b.no_route_events, 37u);
    EXPECT_EQ(b.rd32(VELO_REG_NET_DROP_NO_ROUTE), 37u);
    b.no_route_pct = 30;
    for (int i = 0; i < 200; ++i) b.cycle();
    b.no_route_pct = 0;
    EXPECT_EQ(b.rd32(VELO_REG_NET_DROP_NO_ROUTE), b.no_route_events);
    // a write of any value clears it
    b.write(VELO_REG_NET_DROP_NO_ROUTE, 0xFFFFFFFFu);
    b.drain();
    EXPECT_EQ(b.rd32(VELO_REG_NET_DROP_NO_ROUTE), 0u);
    EXPECT_EQ(b.x_bad, 0u);
    // counted from the clear on: events every cycle while it is cleared (the clear wins in its
    // cycle, the model counts from the next edge)
    b.no_route_pct = 100;
    b.write(VELO_REG_NET_DROP_NO_ROUTE, 0);
    b.drain();
    b.no_route_pct = 0;
    const uint32_t after = b.m.no_route;
    EXPECT_GT(after, 0u);
    EXPECT_LT(after, 20u);
    EXPECT_EQ(b.rd32(VELO_REG_NET_DROP_NO_ROUTE), after);
    // reads and clears with events at random, 8-byte reads with the register after it
    b.no_route_pct = 40;
    for (int i = 0; i < 400; ++i) {
        const int k = rnd(b.rng, 10);
        if (k == 0)
            b.write(VELO_REG_NET_DROP_NO_ROUTE, static_cast<uint32_t>(b.rng()));
        else if (k < 4)
            b.read(VELO_REG_NET_DROP_NO_ROUTE, 2);
        else
            b.read(VELO_REG_NET_DROP_NO_ROUTE);
    }
    b.drain();
    EXPECT_EQ(b.ur_cpls, 0u);
    EXPECT_EQ(b.x_bad, 0u);
}

// Writes to the NET block's read-only registers, to STATUS and unassigned offsets of a port
// entry, to entries of ports the switch does not have (p > NP) and past the route table are
// ignored and counted as bad accesses; the port entries past NP read 0.
TEST(Regfile, NetBadAccesses) {
    Bench b;
    for (unsigned p = 1; p <= kNp; ++p) b.write(np_off(p, VELO_TBL_NET_PORT_CFG), p + 3);
    for (auto& c : b.m.ncnt) c = static_cast<uint32_t>(b.rng()) | 1;
    b.set_port_up((1u << kNp) - 1);
    b.drain();
    const uint32_t cfg = b.h->port_cfg;
    const auto ncnt = b.m.ncnt;
    uint64_t bad = 0;
    // read-only NET registers
    for (uint32_t o :
         {static_cast<uint32_t>(VELO_BLK_NET_BASE + VELO_BLKHDR_TYPE),
          static_cast<uint32_t>(VELO_BLK_NET_BASE + VELO_BLKHDR_NEXT), static_cast<uint32_t>(VELO_REG_NET_PORTS),
          static_cast<uint32_t>(VELO_REG_NET_LINK_STATUS), static_cast<uint32_t>(VELO_REG_NET_ROUTE_OFFSET),
          static_cast<uint32_t>(VELO_REG_NET_PORT_OFFSET), static_cast<uint32_t>(VELO_REG_NET_PORT_STRIDE), 0x324u,
          0x3FCu}) {
        b.write(o, 0xFFFFFFFF);
        ++bad;
    }
    // STATUS and unassigned offsets of real entries
    for (unsigned p = 1; p <= kNp; ++p) {
        for (uint32_t r : {static_cast<uint32_t>(VELO_TBL_NET_PORT_STATUS), 0x8u, 0xCu, 0x30u, 0x3Cu}) {
            b.write(np_off(p, r), 0xFFFFFFFF);
            ++bad;
        }
    }
    // entries of ports past NP, up to the last one before the route table; past the route table
    for (unsigned p : {kNp + 1, kNp + 2, 8u, 9u, 64u, (kRt - kNpt) / kNpStride}) {
        for (uint32_t r :
             {static_cast<uint32_t>(VELO_TBL_NET_PORT_CFG), static_cast<uint32_t>(VELO_TBL_NET_PORT_STATUS), kNpCnt0,
              kNpCnt0 + 4 * (kLinkCnt - 1), 0x3Cu}) {
            b.write(np_off(p, r), 0xFFFFFFFF);
            ++bad;
            EXPECT_EQ(b.rd32(np_off(p, r)), 0u) << "port " << p << " +0x" << std::hex << r;
        }
        b.write2(np_off(p, kNpCnt0), 1, 2);
        bad += 2;
    }
    b.write(kRt + 4 * kNn, 0x80000001u);
    b.write2(kRt + 4 * kNn + 8, 1, 2);
    bad += 3;
    b.drain();
    EXPECT_EQ(b.ev_bad, bad);
    EXPECT_EQ(b.ncnt_clr_seen, 0u) << "a write outside the port entries cleared a link counter";
    EXPECT_EQ(b.h->port_cfg, cfg);
    EXPECT_EQ(b.m.ncnt, ncnt);
    EXPECT_EQ(b.rd32(VELO_REG_NET_PORTS), Model::ports());
    EXPECT_EQ(b.rd32(VELO_REG_NET_LINK_STATUS), (1u << kNp) - 1);
    for (unsigned p = 1; p <= kNp; ++p) {
        EXPECT_EQ(b.rd32(np_off(p, VELO_TBL_NET_PORT_CFG)), p + 3);
        EXPECT_EQ(b.rd32(np_off(p, VELO_TBL_NET_PORT_STATUS)), 1u);
    }
}

TEST(Regfile, Interrupts) {
    Bench b;
    auto pend = [&](unsigned w) { return b.rd32(kPnd + 4 * w); };
    auto arm = [&](unsigned v) {
        b.write(VELO_REG_IRQ_ARM, v);
        b.drain();
    };
    auto commit = [&](unsigned v) {
        b.commit(v);
        b.drain();
    };
    const uint32_t en = static_cast<uint32_t>(VELO_FIELD_PREP(VELO_REG_IRQ_CTRL_ENABLE, 1));
    b.write(VELO_REG_IRQ_CTRL, en);
    b.drain();
    EXPECT_EQ(b.rd32(VELO_REG_IRQ_CTRL), en);
    // armed entry: its bit, one request, taken at once
    arm(5);
    EXPECT_EQ(pend(0), 0u) << "arming sets nothing";
    commit(5);
    EXPECT_EQ(pend(0), 1u << 5);
    EXPECT_EQ(b.rd32(VELO_REG_IRQ_COUNT), 1u);
    EXPECT_EQ(b.irq_taken, 1u);
    // one-shot: the next entry finds it disarmed
    commit(5);
    EXPECT_EQ(b.rd32(VELO_REG_IRQ_COUNT), 1u);
    EXPECT_EQ(b.irq_taken, 1u);
    // not armed: nothing
    commit(6);
    EXPECT_EQ(pend(0), 1u << 5);
    // back-to-back entries of one armed vpid: only the first consumes the arm
    arm(70);
    b.commit(70);
    b.commit(70);
    b.drain();
    EXPECT_EQ(pend(2), 1u << 6);
    EXPECT_EQ(b.rd32(VELO_REG_IRQ_COUNT), 2u);
    EXPECT_EQ(b.irq_taken, 2u);
    // write-1-to-clear: only the bits written as 1
    b.write(kPnd, ~(1u << 5));
    b.drain();
    EXPECT_EQ(pend(0), 1u << 5);
    b.write2(kPnd, 1u << 5, 0xFFFFFFFF);
    b.write(kPnd + 8, 1u << 6);
    b.drain();
    for (unsigned w = 0; w < kNpw; ++w) EXPECT_EQ(pend(w), 0u) << w;
    // coalescing: while the request waits (MSI masked), more bits accumulate without requests
    b.irq_ready_pct = 0;
    for (unsigned v : {40u, 41u, 200u, kNv - 1}) arm(v);
    for (unsigned v : {40u, 41u, 200u, kNv - 1}) commit(v);
    EXPECT_TRUE(b.h->irq_valid);
    EXPECT_EQ(b.rd32(VELO_REG_IRQ_COUNT), 3u) << "one request for four entries";
    EXPECT_EQ(pend(1), (1u << 8) | (1u << 9));
    EXPECT_EQ(pend(6), 1u << 8);
    EXPECT_EQ(pend(7), 1u << 31);
    b.irq_ready_pct = 100;
    b.drain();
    EXPECT_FALSE(b.h->irq_valid);
    EXPECT_EQ(b.irq_taken, 3u);
    // disabled: the bit is set, no request; enabling later raises none for it
    b.write(VELO_REG_IRQ_CTRL, 0);
    arm(9);
    commit(9);
    EXPECT_EQ(pend(0), 1u << 9);
    b.write(VELO_REG_IRQ_CTRL, en);
    b.drain();
    EXPECT_EQ(b.rd32(VELO_REG_IRQ_COUNT), 3u);
    EXPECT_EQ(b.irq_taken, 3u);
    // an MB_CFG write disarms (closing a vpid, and reconfiguring it)
    arm(11);
    b.write(tbl_off(11, 2), 0);
    b.drain();
    commit(11);
    arm(12);
    b.write(tbl_off(12, 2), 0x0601);
    b.drain();
    commit(12);
    EXPECT_EQ(pend(0), 1u << 9) << "disarmed vpids set nothing";
    // ARM with a value past the vpids: ignored (not vpid 0), counted as a bad access
    const uint64_t bad = b.x_bad;
    b.write(VELO_REG_IRQ_ARM, kNv);
    b.drain();
    EXPECT_EQ(b.x_bad, bad + 1);
    commit(0);
    EXPECT_EQ(pend(0), 1u << 9);
    // arm and entry in the same cycle: the entry takes it (the write is forwarded)
    b.commit_on_accept(33);  // reported in the cycle after the TLP is taken: when the write is performed
    b.write(VELO_REG_IRQ_ARM, 33);
    b.drain();
    EXPECT_EQ(pend(1), (1u << 1) | (1u << 8) | (1u << 9));
    EXPECT_EQ(b.rd32(VELO_REG_IRQ_COUNT), 4u);
    // a software write of the arm port in the cycle an entry's arm is cleared waits a cycle (the
    // report in the cycle the write is taken: the clear is in the cycle the write is performed)
    arm(100);
    const uint64_t st0 = b.irq_stalls;
    b.commit(100);
    b.write(VELO_REG_IRQ_ARM, 101);
    b.drain();
    EXPECT_EQ(b.irq_stalls, st0 + 1);
    commit(101);
    EXPECT_EQ(pend(3), (1u << 4) | (1u << 5));
    // ... and a clear of another pending word waits; one of the same word is merged
    arm(2);
    b.commit(2);
    b.write(kPnd + 4, 1u << 1);  // clears word 1 while the entry sets a bit of word 0
    b.drain();
    EXPECT_EQ(b.irq_stalls, st0 + 2);
    arm(38);
    b.commit(38);
    b.write(kPnd + 4, (1u << 6) | (1u << 8));  // word 1 cleared as vpid 38's bit is set in it
    b.drain();
    EXPECT_EQ(b.irq_stalls, st0 + 2);
    EXPECT_EQ(pend(0), (1u << 9) | (1u << 2));
    EXPECT_EQ(pend(1), (1u << 6) | (1u << 9)) << "vpid 38's bit stays, vpid 40's is cleared";
    // COUNT: write clears
    b.write(VELO_REG_IRQ_COUNT, 1234);
    b.drain();
    EXPECT_EQ(b.rd32(VELO_REG_IRQ_COUNT), 0u);
    // reset disarms and clears everything
    arm(3);
    b.reset();
    b.write(VELO_REG_IRQ_CTRL, en);
    b.drain();
    commit(3);
    for (unsigned w = 0; w < kNpw; ++w) EXPECT_EQ(pend(w), 0u) << w;
    EXPECT_EQ(b.rd32(VELO_REG_IRQ_COUNT), 0u);
    EXPECT_EQ(b.irq_hits, 12u) << "arms consumed, counted by the model";
}

TEST(Regfile, RandomTraffic) {
    Bench b;
    auto& rng = b.rng;
    const uint32_t globals[] = {0x00,  0x04,  0x08,  0x0C,  0x10,  0x14,   0x18,  0x100, 0x104, 0x108,
                                0x10C, 0x110, 0x114, 0x118, 0x11C, 0x120,  0x124, 0x200, 0x208, 0x20C,
                                0x300, 0x304, 0x308, 0x30C, 0x310, 0x314,  0x318, 0x31C, 0x320, 0x324,
                                0x400, 0x40C, 0x41C, 0x420, 0x3FC, 0x7FFC, 0x500, 0x508, 0x50C, 0x510,
                                0x514, 0x518, 0x51C, 0x520, 0x57C, 0x580,  0x584, 0x59C, 0x5A0};
    const uint32_t np_regs[] = {VELO_TBL_NET_PORT_CFG,
                                VELO_TBL_NET_PORT_STATUS,
                                0x8,
                                0x10,
                                0x14,
                                0x18,
                                0x1C,
                                0x20,
                                0x24,
                                0x28,
                                0x2C,
                                0x30,
                                0x3C};
    const uint32_t rw[] = {VELO_REG_CTRL_NODE_ID, VELO_REG_CTRL_CONTROL, VELO_REG_CTRL_QUIESCE_VPID,
                           VELO_REG_CTRL_SCRATCH};
    const uint32_t irq[] = {VELO_REG_IRQ_CTRL, VELO_REG_IRQ_ARM, VELO_REG_IRQ_ARM, VELO_REG_IRQ_ARM,
                            VELO_REG_IRQ_COUNT};
    auto offset = [&]() -> uint32_t {
        const int k = rnd(rng, 100);
        if (k < 30) return tbl_off(b.vpid(), static_cast<unsigned>(rnd(rng, 4)));
        if (k < 40) return usr_off(b.vpid()) + (pct(rng, 90) ? 0 : 4 * static_cast<uint32_t>(1 + rnd(rng, 1023)));
        if (k < 52) return rt_off(b.node()) + (pct(rng, 97) ? 0 : 4 * kNn);
        if (k < 62) return np_off(1 + rnd(rng, kNp + 2), np_regs[rnd(rng, sizeof np_regs / sizeof np_regs[0])]);
        if (k < 64) return rw[rnd(rng, 4)];
        if (k < 72) return pct(rng, 60) ? irq[rnd(rng, 5)] : kPnd + 4 * static_cast<uint32_t>(rnd(rng, kNpw));
        if (k < 80) return kCnt + 4 * static_cast<uint32_t>(rnd(rng, 17));
        if (k < 95) return globals[rnd(rng, sizeof globals / sizeof globals[0])];
        return static_cast<uint32_t>(rng() & 0x1FFFFC);
    };
    auto word = [&]() { return static_cast<uint32_t>(rng()); };
    // ARM gets a vpid (mostly a hot one, so entries consume it), PENDING sparse clears
    auto wval = [&](uint32_t off) {
        if (off == VELO_REG_IRQ_ARM && pct(rng, 85)) return static_cast<uint32_t>(b.vpid());
        if (is_pnd(off) && pct(rng, 50)) return word() & word();
        return word();
    };
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
        for (auto& c : b.m.ncnt) c = word();
        b.rt_re_pct = rnd(rng, 5) * 20;
        b.no_route_pct = rnd(rng, 3) * 20;
        b.port_up_pct = rnd(rng, 3) * 10;
        b.ncnt_inc_pct = rnd(rng, 3) * 30;
        b.cmt_pct = rnd(rng, 4) * 20;
        b.irq_ready_pct = 100 - rnd(rng, 4) * 30;
        for (int i = 0; i < 80; ++i, ++n_req) {
            const int k = rnd(rng, 100);
            const uint32_t off = offset();
            if (k < 35) {  // reads, any byte enables
                const bool two = pct(rng, 40);
                const uint8_t fbe = static_cast<uint8_t>(two ? 1 + rnd(rng, 15) : rnd(rng, 16));
                b.read(two ? off & ~7u : off, two ? 2 : 1, fbe, static_cast<uint8_t>(1 + rnd(rng, 15)));
            } else if (k < 80) {  // writes
                if (pct(rng, 35))
                    b.write2(off & ~7u, wval(off & ~7u), wval((off & ~7u) + 4));
                else
                    b.write(off, wval(off));
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
    auto u = [](uint64_t x) { return static_cast<unsigned long long>(x); };
    std::printf(
        "[ info  ] %llu requests, %llu completions (%llu UR), %llu table writes, %llu counter clears, "
        "%llu completer reads, %llu completer WP writes, events window/unsupported/bad %llu/%llu/%llu\n",
        u(n_req), u(b.cpls), u(b.ur_cpls), u(b.sw_wr_seen), u(b.cnt_clr_seen), u(b.tbl_reads), u(b.wp_writes),
        u(b.ev_window), u(b.ev_unsup), u(b.ev_bad));
    std::printf(
        "[ info  ] %llu route writes, %llu requester route reads, %llu port CFG writes, %llu link counter "
        "clears, %llu no-route events\n",
        u(b.rt_writes), u(b.rt_reads), u(b.cfg_writes), u(b.ncnt_clr_seen), u(b.no_route_events));
    EXPECT_GT(b.sw_wr_seen, 5000u);
    EXPECT_GT(b.cpls, 10000u);
    EXPECT_GT(b.tbl_reads, 20000u);
    EXPECT_GT(b.rt_writes, 2000u);
    EXPECT_GT(b.rt_reads, 20000u);
    EXPECT_GT(b.cfg_writes, 300u);
    EXPECT_GT(b.ncnt_clr_seen, 1000u);
    std::printf(
        "[ info  ] %llu commit reports, %llu consumed arms, %llu requests raised, %llu taken, %llu port waits\n",
        u(b.commits), u(b.irq_hits), u(b.irq_raised), u(b.irq_taken), u(b.irq_stalls));
    EXPECT_GT(b.irq_hits, 200u);
    EXPECT_GT(b.irq_raised, 50u);
    EXPECT_GT(b.irq_stalls, 5u);
}
