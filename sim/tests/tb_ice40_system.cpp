// Two iCE40 boards back to back (velo_ice40_board: the board's NIC configuration, the UART host
// bridge, the network port pins with forwarded clocks and elastic buffers), each with a host PC
// model behind its serial line (ice40_host.cpp: bit-level UART, SLIP frames, TLPs). The hosts
// bring the boards up with register reads and writes as the driver does, open mailboxes in their
// own memory, and send messages through the send window; every message must arrive exactly once,
// in order, as mailbox DMA writes in the other host's memory (fragments recombined by software).
// The boards run from clocks of their own (same frequency at random phases, or 0.5 % apart so
// that the elastic buffers slip and the link layer must repair it). Interrupts arrive after the
// DMA writes they announce.
#include <gtest/gtest.h>
#include <verilated_fst_c.h>

#include <array>
#include <cstdlib>
#include <map>
#include <memory>

#include "Vice40_board.h"
#include "Vice40_board_params.h"
#include "harness.hpp"
#include "host.hpp"
#include "ice40_host.hpp"
#include "velo/velo_hw.h"

using namespace velo::sim;
using namespace velo::sim::ice40;

namespace {

// the model's parameters (sim/cmake/ice40.cmake, Vice40_board_params.h)
constexpr unsigned kCpb = velo::sim::ModelParams<Vice40_board>::CLKS_PER_BIT;    // UART clock cycles per bit
constexpr unsigned kNodeBits = velo::sim::ModelParams<Vice40_board>::NODE_BITS;  // the board's configuration
constexpr unsigned kVpidBits = velo::sim::ModelParams<Vice40_board>::VPID_BITS;
constexpr uint8_t kConfirmTag = 0xFF;  // the host's read-pointer confirmation reads (reg_read skips it)

std::vector<uint8_t> le32(uint32_t v) {
    return {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v >> 16),
            static_cast<uint8_t>(v >> 24)};
}

struct PendingMsg {
    std::vector<Tlp> tlps;
    unsigned dnode = 0, dvpid = 0, lines = 0;
};

struct Node {
    unsigned id = 0;
    std::unique_ptr<Vice40_board> m;
    std::unique_ptr<VerilatedFstC> tfp;
    BoardHost host{kCpb};
    std::unique_ptr<HostMem> mem;
    std::map<unsigned, std::unique_ptr<MailboxReader>> readers;
    std::map<unsigned, unsigned> log2;
    std::map<unsigned, int> credit;  // free lines of this node's mailboxes, as senders see them
    // Lines read but not yet known free by the NIC: senders may use them only once the NIC has
    // applied the read-pointer write that frees them. "The write has left the host" is not enough:
    // on the serial line (as in a PCIe posted queue) it can wait behind this node's own sends, and
    // those can wait behind a packet at the completer that used the lines too early (head of line)
    // — the back-pressure deadlock of docs/spec.md. libvelo orders its credit message behind the
    // read-pointer write; this model confirms with a register read behind it (reads do not pass
    // posted writes) and gives the credit when the completion arrives.
    std::map<unsigned, int> unreturned;
    struct Return {
        unsigned vpid;
        int lines;
    };
    std::deque<Return> returns;  // read-pointer writes sent, credit not given yet
    size_t confirming = 0;       // returns the outstanding confirmation read covers (0: none)
    Recombiner rec;
    std::deque<PendingMsg> sendq;
    std::map<uint8_t, Tlp> cpl;  // completions by tag
    uint8_t next_tag = 0;
    uint64_t cycles = 0;
    uint64_t dma_tlps = 0;
    unsigned led_seen = 0;
    std::vector<uint64_t> dma_at_irq;  // DMA TLPs received when each IRQ frame arrived
    uint64_t irqs_seen = 0;
};

class Pair {
  public:
    // periods in ps; phase of node 1's clock against node 0's
    Pair(uint64_t p0, uint64_t p1, uint64_t phase, uint64_t seed) : rng_(seed) {
        period_ = {p0, p1};
        rise_ = {1, 1 + phase};
        fall_ = {1 + p0 / 2, 1 + phase + p1 / 2};
        const char* w = std::getenv("WAVES");
        bool waves = w && std::atoi(w) != 0;
        if (waves) ctx_->traceEverOn(true);
        for (unsigned i = 0; i < 2; ++i) {
            Node& n = n_[i];
            n.id = i;
            n.m.reset(new Vice40_board{ctx_.get(), i ? "b" : "a"});
            n.mem.reset(new HostMem(seed * 7 + i));
            n.host.on_tlp = [this, i](const Tlp& t) { on_tlp(i, t); };
            if (waves) {
                n.tfp.reset(new VerilatedFstC);
                n.m->trace(n.tfp.get(), 99);
                n.tfp->open((test_name() + (i ? "_b" : "_a") + ".fst").c_str());
            }
            n.m->clk = 0;
            n.m->rst = 1;
            n.m->uart_rxd = 1;
            n.m->net_rx_clk = 0;
            n.m->net_rx = 0;
            n.m->eval();
        }
    }
    ~Pair() {
        for (auto& n : n_) {
            n.m->final();
            if (n.tfp) n.tfp->close();
        }
    }
    Node& node(unsigned i) { return n_[i]; }
    Scoreboard& sb() { return sb_; }
    std::vector<std::string> errors;

    // one clock edge of either board (whichever comes next)
    void edge() {
        uint64_t t = std::min(std::min(rise_[0], fall_[0]), std::min(rise_[1], fall_[1]));
        bool rise[2], fall[2];
        for (unsigned i = 0; i < 2; ++i) {
            rise[i] = rise_[i] == t;
            fall[i] = fall_[i] == t;
            if (rise[i]) on_cycle(i);
        }
        for (unsigned i = 0; i < 2; ++i) {
            Node& n = n_[i];
            if (rise[i]) n.m->clk = 1;
            if (fall[i]) n.m->clk = 0;
            // the other board's forwarded clock
            if (rise[1 - i]) n.m->net_rx_clk = 1;
            if (fall[1 - i]) n.m->net_rx_clk = 0;
        }
        for (auto& n : n_) n.m->eval();
        // the wires (our word changes after our rising edge; the other side samples it on its
        // forwarded clock's falling edge)
        n_[1].m->net_rx = n_[0].m->net_tx;
        n_[0].m->net_rx = n_[1].m->net_tx;
        for (auto& n : n_) n.m->eval();
        for (unsigned i = 0; i < 2; ++i) {
            if (rise[i]) {
                rise_[i] += period_[i];
                ++n_[i].cycles;
                n_[i].led_seen |= n_[i].m->led;
            }
            if (fall[i]) fall_[i] += period_[i];
            if (n_[i].tfp) n_[i].tfp->dump(t);
        }
    }
    void cycles(uint64_t n) {  // node 0's cycles
        uint64_t end = n_[0].cycles + n;
        while (n_[0].cycles < end) edge();
    }
    template <class F>
    bool run_until(F done, uint64_t max_cycles) {
        uint64_t end = n_[0].cycles + max_cycles;
        while (n_[0].cycles < end)
            if (done())
                return true;
            else
                edge();
        return done();
    }
    void reset() {
        for (auto& n : n_) n.m->rst = 1;
        cycles(8);
        for (auto& n : n_) n.m->rst = 0;
    }

    // ---- the host's register accesses (BAR0), over the serial line
    void reg_write(unsigned i, uint32_t off, uint32_t v) { n_[i].host.send_tlp(Tlp::mwr(off, le32(v), VELO_BAR_REGS)); }
    uint32_t reg_read(unsigned i, uint32_t off) {
        Node& n = n_[i];
        uint8_t tag = n.next_tag++;
        if (tag == kConfirmTag) tag = n.next_tag++;
        n.cpl.erase(tag);
        n.host.send_tlp(Tlp::mrd(off, 1, tag, VELO_BAR_REGS));
        if (!run_until([&] { return n.cpl.count(tag) != 0; }, 200000)) {
            errors.push_back("register read timed out");
            return 0xDEADBEEF;
        }
        const Tlp& c = n.cpl[tag];
        if (c.cpl_status != VELO_TLP_CPL_SC || c.payload.size() < 4) {
            errors.push_back("register read not successful");
            return 0xDEADBEEF;
        }
        return static_cast<uint32_t>(c.payload[0] | c.payload[1] << 8 | c.payload[2] << 16 |
                                     static_cast<uint32_t>(c.payload[3]) << 24);
    }

    // ---- bring-up as the driver does it for a pair: node id, routes, port, enable
    bool init() {
        reset();
        for (unsigned i = 0; i < 2; ++i) {
            reg_write(i, VELO_REG_CTRL_NODE_ID, i);
            for (unsigned d = 0; d < 2; ++d) {
                // source route: port 1 to the other node, then 0 (local); 0 at once to ourselves
                uint32_t route = d == i ? 0 : 1;
                reg_write(i, VELO_TBL_ROUTE_TABLE_BASE + VELO_TBL_ROUTE_TABLE_STRIDE * d,
                          static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_ROUTE_TABLE_ROUTE_VALID, 1) |
                                                VELO_FIELD_PREP(VELO_TBL_ROUTE_TABLE_ROUTE_ROUTE, route)));
            }
            reg_write(i, VELO_TBL_NET_PORT_BASE + VELO_TBL_NET_PORT_CFG, 0);  // dimension 0, no dateline
            reg_write(i, VELO_REG_CTRL_CONTROL, 1u << VELO_REG_CTRL_CONTROL_ENABLE_SHIFT);
        }
        for (unsigned i = 0; i < 2; ++i)
            if (reg_read(i, VELO_REG_CTRL_NODE_ID) != i) return false;
        return run_until(
            [&] {
                return (n_[0].m->led & 1) && (n_[1].m->led & 1);  // LED 0: link up
            },
            100000);
    }

    void open_mailbox(unsigned i, unsigned vpid, unsigned log2_lines, uint64_t base) {
        Node& n = n_[i];
        uint32_t t = VELO_TBL_VPID_TABLE_BASE + vpid * VELO_TBL_VPID_TABLE_STRIDE;
        reg_write(i, t + VELO_TBL_VPID_TABLE_MB_CFG, 0);
        n.mem->fill(base, 64ull << log2_lines, 0);
        reg_write(i, t + VELO_TBL_VPID_TABLE_MB_BASE_LO, static_cast<uint32_t>(base));
        reg_write(i, t + VELO_TBL_VPID_TABLE_MB_BASE_HI, static_cast<uint32_t>(base >> 32));
        reg_write(i, t + VELO_TBL_VPID_TABLE_MB_WP, 0);
        reg_write(i, VELO_TBL_VPID_USER_BASE + vpid * VELO_TBL_VPID_USER_STRIDE + VELO_TBL_VPID_USER_MB_RP, 0);
        reg_write(i, t + VELO_TBL_VPID_TABLE_MB_CFG,
                  static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_VPID_TABLE_MB_CFG_ENABLE, 1) |
                                        VELO_FIELD_PREP(VELO_TBL_VPID_TABLE_MB_CFG_LOG2_LINES, log2_lines)));
        uint32_t cfg = reg_read(i, t + VELO_TBL_VPID_TABLE_MB_CFG);
        if (!VELO_FIELD_GET(VELO_TBL_VPID_TABLE_MB_CFG_ENABLE, cfg)) errors.push_back("MB_CFG read back wrong");
        n.readers[vpid].reset(new MailboxReader(*n.mem, base, log2_lines));
        n.log2[vpid] = log2_lines;
        n.credit[vpid] = 1 << log2_lines;
    }

    void send(unsigned i, unsigned svpid, unsigned dnode, unsigned dvpid, const std::vector<uint8_t>& msg,
              WcMode mode) {
        uint64_t off = send_offset(kVpidBits, kNodeBits, svpid, dnode, dvpid, static_cast<unsigned>(msg.size()));
        PendingMsg pm;
        pm.tlps = wc_flush(0, off, msg, mode, rng_);
        for (auto& t : pm.tlps) pm.lines += entry_lines(t);
        pm.dnode = dnode;
        pm.dvpid = dvpid;
        n_[i].sendq.push_back(pm);
        Msg m;
        m.src_node = i;
        m.src_vpid = svpid;
        m.dst_node = dnode;
        m.dst_vpid = dvpid;
        m.bytes = msg;
        sb_.expect(m);
    }
    bool idle() const {
        for (auto& n : n_)
            if (!n.sendq.empty() || !n.host.tx_idle() || !n.mem->idle() || !n.returns.empty()) return false;
        return sb_.outstanding() == 0;
    }

  private:
    void on_tlp(unsigned i, const Tlp& t) {
        Node& n = n_[i];
        if (t.is_mwr()) {
            ++n.dma_tlps;
            n.mem->post(t);
        } else if (t.is_cpl() && t.tag == kConfirmTag && n.confirming) {
            // every read-pointer write before the read is applied: their lines are free
            for (; n.confirming; --n.confirming) {
                n.credit[n.returns.front().vpid] += n.returns.front().lines;
                n.returns.pop_front();
            }
        } else if (t.is_cpl()) {
            n.cpl[t.tag] = t;
        } else {
            errors.push_back("unexpected TLP from the board: " + t.str());
        }
    }
    // the host's work at each of its board's clock cycles
    void on_cycle(unsigned i) {
        Node& n = n_[i];
        Node& o = n_[1 - i];
        n.mem->step();
        for (auto& [v, r] : n.readers) {
            MboxEntry e;
            int got = 0;
            while (got < 4 && r->poll(e)) {
                ++got;
                n.unreturned[v] += static_cast<int>(e.lines());
                Msg m;
                if (n.rec.add(i, e, m)) sb_.deliver(m);
            }
            uint32_t size = 1u << n.log2[v];
            uint32_t gone = r->rp() - r->rp_returned;
            if (gone && (gone >= std::max(1u, size / 4) || got == 0)) {
                uint32_t off = VELO_TBL_VPID_USER_BASE + v * VELO_TBL_VPID_USER_STRIDE + VELO_TBL_VPID_USER_MB_RP;
                n.host.send_tlp(Tlp::mwr(off, le32(r->rp() & ((1u << VELO_MBOX_PTR_BITS) - 1)), VELO_BAR_REGS));
                r->rp_returned = r->rp();
                n.returns.push_back({v, n.unreturned[v]});
                n.unreturned[v] = 0;
            }
        }
        if (!n.confirming && !n.returns.empty()) {
            n.host.send_tlp(Tlp::mrd(VELO_REG_CTRL_SCRATCH, 1, kConfirmTag, VELO_BAR_REGS));
            n.confirming = n.returns.size();
        }
        // the next message, when the receiver has room for it and the serial line is not busy
        if (!n.sendq.empty() && n.host.tx.queued() < 64) {
            PendingMsg& pm = n.sendq.front();
            Node& d = pm.dnode == i ? n : o;
            if (d.credit.count(pm.dvpid) && d.credit[pm.dvpid] >= static_cast<int>(pm.lines)) {
                d.credit[pm.dvpid] -= static_cast<int>(pm.lines);
                for (auto& t : pm.tlps) n.host.send_tlp(t);
                n.sendq.pop_front();
            }
        }
        n.m->uart_rxd = n.host.step(n.m->uart_txd, n.m->uart_cts_n);
        if (n.host.irqs != n.irqs_seen) {  // an IRQ frame just arrived: how many DMA writes before it
            n.irqs_seen = n.host.irqs;
            n.dma_at_irq.push_back(n.dma_tlps);
        }
    }

    // with its arguments loaded: the simulation-only clock gates of the units read a plusarg
    std::unique_ptr<VerilatedContext> ctx_ = new_context();
    std::array<Node, 2> n_;
    std::array<uint64_t, 2> period_, rise_, fall_;
    Scoreboard sb_;
    std::mt19937_64 rng_;
};

void expect_clean(Pair& p) {
    for (auto& e : p.errors) ADD_FAILURE() << e;
    for (unsigned i = 0; i < 2; ++i) {
        Node& n = p.node(i);
        for (auto& e : n.host.errors) ADD_FAILURE() << "node " << i << ": " << e;
        for (auto& [c, k] : n.host.errors_reported)
            ADD_FAILURE() << "node " << i << ": bridge reported error " << int(c) << " x" << int(k);
        for (auto& [v, r] : n.readers)
            for (auto& e : r->errors) ADD_FAILURE() << "node " << i << " vpid " << v << ": " << e;
        for (auto& e : n.rec.errors) ADD_FAILURE() << "node " << i << ": " << e;
        EXPECT_EQ(n.host.rx.frame_errors, 0u);
    }
    for (auto& e : p.sb().errors) ADD_FAILURE() << e;
    EXPECT_EQ(p.sb().outstanding(), 0u);
}

std::vector<uint8_t> random_msg(std::mt19937_64& r, unsigned len) {
    std::vector<uint8_t> m(len);
    for (auto& b : m) b = static_cast<uint8_t>(r());
    return m;
}

uint64_t mbox_base(unsigned node, unsigned vpid) {
    // half of the rings below 4 GiB (3DW DMA headers), half above (4DW)
    return (vpid % 2 ? 0x7654300000ull : 0x20000000ull) + node * 0x1000000ull + vpid * 0x10000ull;
}

// Random traffic both ways (and some to the own node); returns the number of messages.
unsigned traffic(Pair& p, std::mt19937_64& r, unsigned msgs) {
    for (unsigned i = 0; i < 2; ++i)
        for (unsigned v = 0; v < 3; ++v) p.open_mailbox(i, v, 3 + static_cast<unsigned>(rnd(r, 3)), mbox_base(i, v));
    const WcMode modes[] = {WcMode::Burst, WcMode::FullLine, WcMode::Split, WcMode::Chunk8, WcMode::Bytes};
    for (unsigned k = 0; k < msgs; ++k) {
        unsigned s = static_cast<unsigned>(rnd(r, 2));
        unsigned d = pct(r, 10) ? s : 1 - s;
        p.send(s, 5 + static_cast<unsigned>(rnd(r, 3)), d, static_cast<unsigned>(rnd(r, 3)),
               random_msg(r, 1 + static_cast<unsigned>(rnd(r, 64))), modes[rnd(r, 5)]);
    }
    EXPECT_TRUE(p.run_until([&] { return p.idle(); }, 20000000)) << p.sb().outstanding() << " messages missing";
    return msgs;
}

}  // namespace

TEST(Ice40System, BringUpRegistersAndBoardConfiguration) {
    auto r = test_rng();
    Pair p(33333, 33333, static_cast<uint64_t>(rnd(r, 33333)), r());
    p.reset();
    for (unsigned i = 0; i < 2; ++i) {
        uint8_t tok = static_cast<uint8_t>(r());
        p.node(i).host.send_ping(tok);
        ASSERT_TRUE(p.run_until([&] { return !p.node(i).host.pongs.empty(); }, 100000));
        EXPECT_EQ(p.node(i).host.pongs.front(), tok);
    }
    ASSERT_TRUE(p.init());
    for (unsigned i = 0; i < 2; ++i) {
        EXPECT_EQ(p.reg_read(i, VELO_BLKHDR_TYPE), static_cast<uint32_t>(VELO_ID_MAGIC));
        // the board is built with RMA = 0: IRQ ends the block chain
        EXPECT_EQ(p.reg_read(i, VELO_BLK_IRQ_BASE + VELO_BLKHDR_TYPE), static_cast<uint32_t>(VELO_BLK_IRQ_TYPE));
        EXPECT_EQ(p.reg_read(i, VELO_BLK_IRQ_BASE + VELO_BLKHDR_NEXT), 0u);
        uint32_t caps = p.reg_read(i, VELO_REG_ID_CAPS);
        EXPECT_EQ(VELO_FIELD_GET(VELO_REG_ID_CAPS_NODE_BITS, caps), kNodeBits);
        EXPECT_EQ(VELO_FIELD_GET(VELO_REG_ID_CAPS_VPID_BITS, caps), kVpidBits);
        EXPECT_EQ(VELO_FIELD_GET(VELO_REG_ID_CAPS_TLP_BYTES, caps), 8u);
        EXPECT_EQ(VELO_FIELD_GET(VELO_REG_ID_CAPS_LINK_BYTES, caps), 2u);
        uint32_t ports = p.reg_read(i, VELO_REG_NET_PORTS);
        EXPECT_EQ(VELO_FIELD_GET(VELO_REG_NET_PORTS_NP, ports), 1u);
        EXPECT_EQ(VELO_FIELD_GET(VELO_REG_NET_PORTS_NVC, ports), 1u);
        EXPECT_EQ(p.reg_read(i, VELO_REG_VPID_NUM_VPIDS), 1u << kVpidBits);
        EXPECT_EQ(VELO_FIELD_GET(VELO_REG_CTRL_STATUS_LINK_UP, p.reg_read(i, VELO_REG_CTRL_STATUS)), 1u);
        for (int k = 0; k < 4; ++k) {
            uint32_t v = static_cast<uint32_t>(r());
            p.reg_write(i, VELO_REG_CTRL_SCRATCH, v);
            EXPECT_EQ(p.reg_read(i, VELO_REG_CTRL_SCRATCH), v);
        }
        // a read of an unsupported size is answered (UR), not lost: the bridge carries any TLP
        uint8_t tag = 0x77;
        p.node(i).host.send_tlp(Tlp::mrd(VELO_REG_CTRL_SCRATCH, 3, tag, VELO_BAR_REGS));
        ASSERT_TRUE(p.run_until([&] { return p.node(i).cpl.count(tag) != 0; }, 100000));
        EXPECT_EQ(p.node(i).cpl[tag].cpl_status, VELO_TLP_CPL_UR);
    }
    EXPECT_TRUE(p.node(0).led_seen & 0x80) << "heartbeat";
    expect_clean(p);
}

TEST(Ice40System, MessagesBothWaysArriveExactlyOnce) {
    auto r = test_rng();
    Pair p(33333, 33333, static_cast<uint64_t>(rnd(r, 33333)), r());
    ASSERT_TRUE(p.init());
    unsigned n = traffic(p, r, 160);
    expect_clean(p);
    EXPECT_EQ(p.sb().delivered, n);
    EXPECT_GT(p.node(0).rec.fragments + p.node(1).rec.fragments, 0u) << "the mix should produce fragments";
    // the event counters are not part of the board's configuration: they read 0
    EXPECT_EQ(p.reg_read(0, VELO_REG_COUNTERS_COUNTER_BASE + 4 * VELO_CNT_TX_MSGS), 0u);
    for (unsigned i = 0; i < 2; ++i) EXPECT_TRUE(p.node(i).led_seen & 0x0E) << "activity LEDs";
}

TEST(Ice40System, ClocksApartElasticSlipsRepairedByTheLink) {
    // 30 MHz against 30.15 MHz: the elastic buffers slip every ~1,600 cycles; every slip costs a
    // replay (or nothing, between packets), never a message
    auto r = test_rng();
    Pair p(33333, 33167, static_cast<uint64_t>(rnd(r, 33167)), r());
    ASSERT_TRUE(p.init());
    unsigned n = traffic(p, r, 120);
    expect_clean(p);
    EXPECT_EQ(p.sb().delivered, n);
    EXPECT_TRUE((p.node(0).led_seen | p.node(1).led_seen) & 0x10) << "the slip LED must have lit";
}

TEST(Ice40System, InterruptFollowsItsMailboxWrite) {
    auto r = test_rng();
    Pair p(33333, 33333, static_cast<uint64_t>(rnd(r, 33333)), r());
    ASSERT_TRUE(p.init());
    p.open_mailbox(1, 2, 4, mbox_base(1, 2));
    p.reg_write(1, VELO_REG_IRQ_CTRL, 1u << VELO_REG_IRQ_CTRL_ENABLE_SHIFT);
    for (int k = 0; k < 3; ++k) {
        p.reg_write(1, VELO_REG_IRQ_ARM, 2);
        (void)p.reg_read(1, VELO_REG_IRQ_CTRL);  // the arm is in before the message is sent
        uint64_t dma_before = p.node(1).dma_tlps;
        unsigned len = 1 + static_cast<unsigned>(rnd(r, 64));
        p.send(0, 3, 1, 2, random_msg(r, len), WcMode::Burst);
        ASSERT_TRUE(p.run_until([&] { return p.node(1).host.irqs == static_cast<uint64_t>(k + 1); }, 2000000));
        ASSERT_EQ(p.node(1).dma_at_irq.size(), static_cast<size_t>(k + 1));
        EXPECT_GE(p.node(1).dma_at_irq.back(), dma_before + (len + 8 > 64 ? 2 : 1))
            << "the IRQ frame came before the entry's DMA writes";
        ASSERT_TRUE(p.run_until([&] { return p.idle(); }, 2000000));
        uint32_t pend = p.reg_read(1, VELO_TBL_IRQ_PENDING_BASE);
        EXPECT_EQ(pend, 1u << 2);
        p.reg_write(1, VELO_TBL_IRQ_PENDING_BASE, pend);  // write 1 to clear
        EXPECT_EQ(p.reg_read(1, VELO_TBL_IRQ_PENDING_BASE), 0u);
    }
    EXPECT_EQ(p.reg_read(1, VELO_REG_IRQ_COUNT), 3u);
    // not armed: no interrupt
    p.send(0, 3, 1, 2, random_msg(r, 8), WcMode::Burst);
    ASSERT_TRUE(p.run_until([&] { return p.idle(); }, 2000000));
    p.cycles(2000);
    EXPECT_EQ(p.node(1).host.irqs, 3u);
    expect_clean(p);
}
