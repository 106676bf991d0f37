// The simulated cluster: see system.hpp.
#include "system.hpp"

#include <verilated.h>
#include <verilated_fst_c.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "Vnic_p1.h"
#include "Vnic_p1___024root.h"
#include "Vnic_p1b.h"
#include "Vnic_p1b___024root.h"
#include "Vnic_p1w.h"
#include "Vnic_p1w___024root.h"
#include "Vnic_p2.h"
#include "Vnic_p2___024root.h"
#include "Vnic_p2b.h"
#include "Vnic_p2b___024root.h"
#include "Vnic_p4.h"
#include "Vnic_p4___024root.h"
#include "channel.hpp"
#include "harness.hpp"
#include "host.hpp"
#include "node_pool.hpp"
#include "topology.hpp"
#include "velo/velo_hw.h"

namespace velo::sim {

namespace {

// Bits [lo, lo + w) of a Verilated port of any width (w <= 64), a word at a time: a flit spans at
// most three 32-bit words.
uint64_t get_bits(const Words& v, unsigned lo, unsigned w) {
    uint64_t r = 0;
    for (unsigned got = 0; got < w;) {
        const unsigned b = lo + got, sh = b % 32, take = std::min(32 - sh, w - got);
        r |= static_cast<uint64_t>((v.w[b / 32] >> sh) & (take == 32 ? ~0u : (1u << take) - 1)) << got;
        got += take;
    }
    return r;
}
void set_bits(const Words& v, unsigned lo, unsigned w, uint64_t x) {
    for (unsigned put = 0; put < w;) {
        const unsigned b = lo + put, sh = b % 32, take = std::min(32 - sh, w - put);
        const uint32_t m = (take == 32 ? ~0u : (1u << take) - 1) << sh;
        v.w[b / 32] = (v.w[b / 32] & ~m) | (static_cast<uint32_t>(x >> put) << sh & m);
        put += take;
    }
}

// An idle link transmitter sends its ACK and CREDIT items in rotation (velo_link_tx: NI = NVC + 1
// items), so an idle wire repeats a pattern of this period; a change on a wire is a symbol that
// differs from the one this many cycles before (System::quiet).
constexpr unsigned kIdlePeriod = VELO_NVC + 1;
// A NIC is recorded for skipping (System::node_cycle) only after this many cycles at rest in a
// row: the pauses between the messages of a ping-pong are shorter, and a record costs a copy of
// the model's state per cycle.
constexpr unsigned kStillBeforeRecord = 16;

// The clock gates (rtl/common/velo_sim_gate.v) of a model's units (System::Gated): closed for the
// coming edge when the enable latch holds 0 after the settle eval. A model without the unit (RMA =
// 0, COUNTERS = 0, ...) has no such gate: never closed.
#define VELO_SIM_GATE_PROBE(Name, path)                                     \
    template <class V, class = void>                                        \
    struct Name {                                                           \
        static bool closed(const V&) { return false; }                      \
    };                                                                      \
    template <class V>                                                      \
    struct Name<V, std::void_t<decltype(std::declval<V&>().rootp->path)>> { \
        static bool closed(const V& m) { return !m.rootp->path; }           \
    };
VELO_SIM_GATE_PROBE(RmaGate, velo_nic__DOT__g_rma__DOT__u_rma__DOT__u_gate__DOT__en_l)
VELO_SIM_GATE_PROBE(SwitchGate, velo_nic__DOT__g_switch__DOT__u_sw__DOT__u_gate__DOT__en_l)
VELO_SIM_GATE_PROBE(CountersGate, velo_nic__DOT__g_cnt__DOT__u_cnt__DOT__u_gate__DOT__en_l)
VELO_SIM_GATE_PROBE(LinkCountersGate, velo_nic__DOT__g_ncnt__DOT__u_ncnt__DOT__u_gate__DOT__en_l)
VELO_SIM_GATE_PROBE(RegsGate, velo_nic__DOT__u_regs__DOT__u_gate__DOT__en_l)
VELO_SIM_GATE_PROBE(CompleterGate, velo_nic__DOT__u_cpl__DOT__u_gate__DOT__en_l)
VELO_SIM_GATE_PROBE(RequesterGate, velo_nic__DOT__u_req__DOT__u_gate__DOT__en_l)
VELO_SIM_GATE_PROBE(RmaInitGate, velo_nic__DOT__g_rma__DOT__u_rma__DOT__u_gate_i__DOT__en_l)
VELO_SIM_GATE_PROBE(RmaTgtGate, velo_nic__DOT__g_rma__DOT__u_rma__DOT__u_gate_t__DOT__en_l)
VELO_SIM_GATE_PROBE(DmaReadGate, velo_nic__DOT__g_rma__DOT__u_rma__DOT__u_gate_d__DOT__en_l)
VELO_SIM_GATE_PROBE(AtuGate, velo_nic__DOT__g_rma__DOT__u_rma__DOT__u_gate_a__DOT__en_l)
#undef VELO_SIM_GATE_PROBE

// The one free-running register of a NIC (velo_rma's u_dma_tick: the DMA read engine's timeout
// prescaler, on the ungated clock; it counts 0 .. kDmaTickN - 1, TIMEOUT / 4 of velo_rma's default
// TIMEOUT 65536) and the tick it drives. Skipping a NIC (System::node_cycle) advances it by hand.
constexpr unsigned kDmaTickN = 16384;
template <class V, class = void>
struct DmaTick {
    static bool present(const V&) { return false; }
    static unsigned get(const V&) { return 0; }
    static void set(V&, unsigned) {}
    static std::array<std::pair<size_t, size_t>, 2> fields(const V&) { return {}; }
};
template <class V>
struct DmaTick<
    V, std::void_t<decltype(std::declval<V&>().rootp->velo_nic__DOT__g_rma__DOT__u_rma__DOT__u_dma_tick__DOT__pre)>> {
    static bool present(const V&) { return true; }
    static unsigned get(const V& m) { return m.rootp->velo_nic__DOT__g_rma__DOT__u_rma__DOT__u_dma_tick__DOT__pre; }
    static void set(V& m, unsigned v) {
        m.rootp->velo_nic__DOT__g_rma__DOT__u_rma__DOT__u_dma_tick__DOT__pre = static_cast<uint16_t>(v % kDmaTickN);
        m.rootp->velo_nic__DOT__g_rma__DOT__u_rma__DOT__dma_tick = (v % kDmaTickN) == kDmaTickN - 1;
    }
    // {offset in the root, size} of the prescaler and of the tick
    static std::array<std::pair<size_t, size_t>, 2> fields(const V& m) {
        const auto* r = reinterpret_cast<const uint8_t*>(m.rootp);
        const auto& pre = m.rootp->velo_nic__DOT__g_rma__DOT__u_rma__DOT__u_dma_tick__DOT__pre;
        const auto& tick = m.rootp->velo_nic__DOT__g_rma__DOT__u_rma__DOT__dma_tick;
        return {{{static_cast<size_t>(reinterpret_cast<const uint8_t*>(&pre) - r), sizeof pre},
                 {static_cast<size_t>(reinterpret_cast<const uint8_t*>(&tick) - r), sizeof tick}}};
    }
};

// The units whose closed gates say that the NIC holds no work (System::quiet): each is closed
// only at rest with nothing offered (the enable contract, docs/simulator.md).
constexpr unsigned gate_bit(System::Gated g) {
    return 1u << static_cast<unsigned>(g);
}
constexpr unsigned kRestUnits = gate_bit(System::Gated::Rma) | gate_bit(System::Gated::Switch) |
                                gate_bit(System::Gated::Regs) | gate_bit(System::Gated::Completer) |
                                gate_bit(System::Gated::Requester);

// One NIC model behind a width-independent interface.
class Nic {
  public:
    virtual ~Nic() = default;
    virtual void set_rst(bool r) = 0;
    virtual void eval() = 0;
    virtual void tick(uint64_t cycle) = 0;  // rising and falling edge
    virtual TlpInPins in_pins() = 0;
    virtual TlpOutPins out_pins() = 0;
    virtual uint64_t phy_tx(unsigned port) = 0;  // port 1..NP
    virtual void set_phy_rx(unsigned port, uint64_t flit) = 0;
    virtual bool port_up(unsigned port) = 0;
    virtual void set_cfg_id(uint16_t id) = 0;
    virtual bool irq_valid() = 0;
    virtual void set_irq_ready(bool r) = 0;
    // bit u (System::Gated): unit u's clock gate is closed for the coming edge
    virtual unsigned gated() = 0;
    // The model's whole state (its root: every register, memory, input and output), for skipping
    // a NIC whose cycles repeat (System::node_cycle): save it, compare the state now with a saved
    // one (the free-running prescaler left out: it must read `prescaler` there), put a saved one
    // back with the prescaler at `prescaler` (mod its period). The prescaler: dma_tick().
    virtual void save(std::vector<uint8_t>& b) = 0;
    virtual bool same(const std::vector<uint8_t>& b, unsigned prescaler) = 0;
    virtual void restore(const std::vector<uint8_t>& b, unsigned prescaler) = 0;
    virtual unsigned dma_tick() = 0;
    virtual bool can_skip() = 0;  // the model has the prescaler where the above expects it, no waves
};

template <class V>
class NicT : public Nic {
  public:
    NicT(unsigned link_w, bool waves, const std::string& wave_file, bool sim_gate) : pw_(link_w + 2) {
        ctx_ = new_context(sim_gate);  // the gate reads its plusarg in the first eval below
        if (waves) ctx_->traceEverOn(true);
        m_.reset(new V{ctx_.get(), "nic"});
        if (waves) {
            fst_.reset(new VerilatedFstC);
            m_->trace(fst_.get(), 99);
            fst_->open(wave_file.c_str());
        }
        m_->clk = 0;
        m_->rst = 1;
        m_->eval();
    }
    ~NicT() override {
        m_->final();
        if (fst_) fst_->close();
    }
    void set_rst(bool r) override { m_->rst = r; }
    void eval() override { m_->eval(); }
    // The rising edge. The falling edge is evaluated by the next cycle's eval() (System::step
    // settles every NIC's inputs with the clock low before the next tick): the NIC has no logic on
    // the falling edge, so an eval of its own would change nothing, at a third of the cost of a
    // cycle. With waves on it is evaluated here, for the dump.
    void tick(uint64_t cycle) override {
        m_->clk = 1;
        m_->eval();
        m_->clk = 0;
        if (fst_) {
            fst_->dump(2 * cycle + 1);
            m_->eval();
            fst_->dump(2 * cycle + 2);
        }
    }
    TlpInPins in_pins() override {
        return TlpInPins{&m_->rx_valid,     &m_->rx_ready, &m_->rx_sop,       &m_->rx_eop,
                         words(m_->rx_hdr), &m_->rx_bar,   words(m_->rx_data)};
    }
    TlpOutPins out_pins() override {
        return TlpOutPins{&m_->tx_valid, &m_->tx_ready,     &m_->tx_sop,
                          &m_->tx_eop,   words(m_->tx_hdr), words(m_->tx_data)};
    }
    uint64_t phy_tx(unsigned port) override { return get_bits(words(m_->phy_tx), (port - 1) * pw_, pw_); }
    void set_phy_rx(unsigned port, uint64_t f) override { set_bits(words(m_->phy_rx), (port - 1) * pw_, pw_, f); }
    bool port_up(unsigned port) override { return (m_->port_up >> (port - 1)) & 1; }
    void set_cfg_id(uint16_t id) override { m_->cfg_id = id; }
    bool irq_valid() override { return m_->irq_valid; }
    void set_irq_ready(bool r) override { m_->irq_ready = r; }
    unsigned gated() override {
        const V& m = *m_;
        return unsigned{RmaGate<V>::closed(m)} << static_cast<unsigned>(System::Gated::Rma) |
               unsigned{SwitchGate<V>::closed(m)} << static_cast<unsigned>(System::Gated::Switch) |
               unsigned{CountersGate<V>::closed(m)} << static_cast<unsigned>(System::Gated::Counters) |
               unsigned{LinkCountersGate<V>::closed(m)} << static_cast<unsigned>(System::Gated::LinkCounters) |
               unsigned{RegsGate<V>::closed(m)} << static_cast<unsigned>(System::Gated::Regs) |
               unsigned{CompleterGate<V>::closed(m)} << static_cast<unsigned>(System::Gated::Completer) |
               unsigned{RequesterGate<V>::closed(m)} << static_cast<unsigned>(System::Gated::Requester) |
               unsigned{RmaInitGate<V>::closed(m)} << static_cast<unsigned>(System::Gated::RmaInitiator) |
               unsigned{RmaTgtGate<V>::closed(m)} << static_cast<unsigned>(System::Gated::RmaTarget) |
               unsigned{DmaReadGate<V>::closed(m)} << static_cast<unsigned>(System::Gated::DmaRead) |
               unsigned{AtuGate<V>::closed(m)} << static_cast<unsigned>(System::Gated::Atu);
    }

    void save(std::vector<uint8_t>& b) override {
        const auto* r = reinterpret_cast<const uint8_t*>(m_->rootp);
        b.assign(r, r + sizeof(*m_->rootp));
    }
    bool same(const std::vector<uint8_t>& b, unsigned prescaler) override {
        V& m = *m_;
        if (b.size() != sizeof(*m.rootp) || DmaTick<V>::get(m) != prescaler % kDmaTickN) return false;
        // compare with the saved prescaler and tick in place of the current ones
        auto* r = reinterpret_cast<uint8_t*>(m.rootp);
        const auto f = DmaTick<V>::fields(m);
        uint8_t keep[2][8];
        for (int k = 0; k < 2; ++k) {
            std::memcpy(keep[k], r + f[k].first, f[k].second);
            std::memcpy(r + f[k].first, b.data() + f[k].first, f[k].second);
        }
        const bool eq = std::memcmp(r, b.data(), b.size()) == 0;
        for (int k = 0; k < 2; ++k) std::memcpy(r + f[k].first, keep[k], f[k].second);
        return eq;
    }
    void restore(const std::vector<uint8_t>& b, unsigned prescaler) override {
        std::memcpy(reinterpret_cast<void*>(m_->rootp), b.data(), b.size());
        DmaTick<V>::set(*m_, prescaler);
    }
    unsigned dma_tick() override { return DmaTick<V>::get(*m_); }
    bool can_skip() override { return DmaTick<V>::present(*m_) && !fst_; }

  private:
    unsigned pw_;
    std::unique_ptr<VerilatedContext> ctx_;
    std::unique_ptr<V> m_;
    std::unique_ptr<VerilatedFstC> fst_;
};

}  // namespace

struct System::Impl {
    SystemConfig cfg;
    Topology topo;
    unsigned np = 1, link_w = 16, tlp_w = 64;
    uint64_t cycle = 0;

    // What a node's cycle reports to the owner (System's callbacks), kept in order and handed
    // over on the stepping thread after every node's cycle (the nodes may run on several threads).
    struct Event {
        enum Kind : uint8_t { Flit, SendSop, DmaWrite, DmaRead, Irq } kind;
        unsigned port = 0;
        uint64_t flit = 0;
        Tlp tlp;
    };
    struct Node {
        std::unique_ptr<Nic> nic;
        std::unique_ptr<TlpDriver> drv;
        std::unique_ptr<TlpSink> sink;
        std::deque<bool> is_send;         // per queued TLP: a send-window write (measurement point)
        std::map<uint8_t, uint32_t> cpl;  // register read completions by tag
        uint8_t next_tag = 0;
        bool irq_hold = false;                              // MSI masked: irq_ready low
        uint64_t irqs = 0;                                  // interrupt requests taken
        std::array<uint64_t, System::kGatedUnits> gated{};  // cycles each unit's clock was gated
        std::vector<Channel*> rx;                           // per port 1..NP: the channel it hears (null: none)
        std::vector<Channel*> tx;                           // per port 1..NP: the channel it drives (null: none)
        bool active = false;                                // data flits, changed symbols or TLP beats this cycle
        bool at_rest = false;                               // every gated unit of the NIC closed for this cycle's edge
        // per port 1..NP: the symbols it drove in the last kIdlePeriod cycles (by cycle mod it)
        std::vector<std::array<uint64_t, kIdlePeriod>> last_tx;
        // Skipping (SystemConfig::skip_idle): a NIC at rest whose inputs repeat with the period
        // of an idle wire repeats its whole state with it; once it is seen to (the state at the
        // start of a cycle equal to the one kIdlePeriod cycles before), its cycles are played
        // from the record instead of evaluated, until an input differs.
        struct Skip {
            bool on = false;
            unsigned have = 0;      // consecutive cycles recorded (0 .. kIdlePeriod)
            uint64_t t0 = 0;        // the cycle of phase 0
            uint64_t retry_at = 0;  // after an orbit that did not close: not before this cycle
            unsigned still = 0;     // cycles in a row evaluated at rest and without activity
            std::array<std::vector<uint8_t>, kIdlePeriod> state;          // at the start of each phase
            std::array<unsigned, kIdlePeriod> tick{};                     // the prescaler then
            std::array<std::array<uint64_t, 5>, kIdlePeriod> rx{}, tx{};  // per phase, per port 1..4
            std::array<unsigned, kIdlePeriod> gated{};
            std::array<bool, kIdlePeriod> irq_ready{};
        } skip;
        uint64_t skipped = 0;       // cycles played from the record
        std::vector<Event> events;  // this cycle's, in order
        std::mt19937_64 rng;        // CPU gaps, DMA stalls
    };
    std::vector<Node> nodes;
    // one channel per direction of every link: ch[(node * 8 + port)] carries what (node, port) sends
    std::map<unsigned, std::unique_ptr<Channel>> ch;
    uint64_t last_activity = 0;
    std::unique_ptr<NodePool> pool;
    std::function<void(unsigned)> node_cycle;  // one node's part of a cycle (System::node_cycle)

    static unsigned key(unsigned node, unsigned port) { return node * 8 + port; }
};

System::System(const SystemConfig& c) : p_(new Impl) {
    auto& s = *p_;
    s.cfg = c;
    std::string err;
    if (!load_topology(c.topology, s.topo, err)) throw std::invalid_argument("velo: topology: " + err);
    s.np = s.topo.ports;
    s.link_w = c.wide ? 32 : 16;
    s.tlp_w = c.wide ? 128 : 64;
    const char* w = std::getenv("WAVES");
    const bool waves = c.waves || (w && std::atoi(w) != 0);
    s.nodes.resize(s.topo.nodes);
    for (unsigned i = 0; i < s.topo.nodes; ++i) {
        auto& n = s.nodes[i];
        std::string f = c.waves_prefix + "_node" + std::to_string(i) + ".fst";
        if (c.bar32 && (c.wide || s.np > 2))
            throw std::invalid_argument(
                "velo: the NICs whose send window fits a 32-bit BAR are built for a pair or a ring only");
        else if (c.bar32 && s.np == 1)
            n.nic.reset(new NicT<Vnic_p1b>(s.link_w, waves, f, c.sim_gate));
        else if (c.bar32)
            n.nic.reset(new NicT<Vnic_p2b>(s.link_w, waves, f, c.sim_gate));
        else if (c.wide && s.np == 1)
            n.nic.reset(new NicT<Vnic_p1w>(s.link_w, waves, f, c.sim_gate));
        else if (c.wide)
            throw std::invalid_argument("velo: the wide configuration (TLP 128, LINK 32) is built for the pair only");
        else if (s.np == 1)
            n.nic.reset(new NicT<Vnic_p1>(s.link_w, waves, f, c.sim_gate));
        else if (s.np == 2)
            n.nic.reset(new NicT<Vnic_p2>(s.link_w, waves, f, c.sim_gate));
        else if (s.np <= 4)
            n.nic.reset(new NicT<Vnic_p4>(s.link_w, waves, f, c.sim_gate));
        else
            throw std::invalid_argument("velo: at most 4 network ports per NIC are built");
        n.nic->set_cfg_id(static_cast<uint16_t>(0x0100 + i));
        n.drv.reset(new TlpDriver(n.nic->in_pins()));
        n.sink.reset(new TlpSink(n.nic->out_pins()));
        // the host side's randomness (CPU gaps, DMA stalls): a generator per node, so that the
        // nodes' cycles draw the same numbers in any order and on any thread
        n.rng.seed(c.seed ^ (0x9E3779B97F4A7C15ull * (i + 1)));
        n.drv->rng = &n.rng;
        n.sink->rng = &n.rng;
        n.drv->gap_pct = c.cpu_gap_pct;
        n.sink->stall_pct = c.dma_stall_pct;
        Impl::Node* np = &n;
        n.sink->on_tlp = [np](const Tlp& t) {
            if (t.is_cpl()) {
                uint32_t v = t.payload.size() >= 4
                                 ? static_cast<uint32_t>(t.payload[0]) | (t.payload[1] << 8) | (t.payload[2] << 16) |
                                       (static_cast<uint32_t>(t.payload[3]) << 24)
                                 : 0xFFFFFFFFu;
                np->cpl[t.tag] = v;
            } else if (t.is_mwr()) {
                np->events.push_back(Impl::Event{Impl::Event::DmaWrite, 0, 0, t});
            } else if (t.is_mrd()) {
                np->events.push_back(Impl::Event{Impl::Event::DmaRead, 0, 0, t});
            }
        };
    }
    if (s.np > 4) throw std::invalid_argument("velo: at most 4 network ports per NIC");
    // wires: every (node, port) that the topology connects sends into its own channel
    for (const auto& l : s.topo.links) {
        for (int d = 0; d < 2; ++d) {
            unsigned n = d ? l.b_node : l.a_node, p = d ? l.b_port : l.a_port;
            ChannelConfig cc;
            cc.width = s.link_w + 2;
            cc.latency = c.link_latency;
            cc.ber = c.ber;
            cc.flit_loss = c.flit_loss;
            cc.seed = c.seed * 1000003u + Impl::key(n, p);
            s.ch[Impl::key(n, p)].reset(new Channel(cc));
        }
    }
    for (unsigned i = 0; i < s.topo.nodes; ++i) {
        auto& nd = s.nodes[i];
        nd.rx.assign(s.np + 1, nullptr);
        nd.tx.assign(s.np + 1, nullptr);
        nd.last_tx.assign(s.np + 1, std::array<uint64_t, kIdlePeriod>{});
        for (unsigned p = 1; p <= s.np; ++p) {
            const Peer& pr = s.topo.peer(i, p);
            if (pr.node >= 0) nd.rx[p] = s.ch.at(Impl::key(static_cast<unsigned>(pr.node), pr.port)).get();
            auto it = s.ch.find(Impl::key(i, p));
            if (it != s.ch.end()) nd.tx[p] = it->second.get();
        }
    }
    s.pool.reset(new NodePool(std::max(1u, c.threads)));
    s.node_cycle = [this](unsigned i) { node_cycle(i); };
}

System::~System() = default;

unsigned System::nodes() const {
    return p_->topo.nodes;
}
unsigned System::net_ports() const {
    return p_->np;
}
unsigned System::tlp_bits() const {
    return p_->tlp_w;
}
unsigned System::link_bits() const {
    return p_->link_w;
}
unsigned System::link_latency() const {
    return p_->cfg.link_latency;
}
uint64_t System::cycle() const {
    return p_->cycle;
}

// One node's part of a cycle: drive its inputs (the wires into it as they were at the end of the
// last cycle, its CPU stream, DMA ready), settle, sample its outputs, clock it. It touches only
// the node's own state and the input side of the channels it drives, and notes what it reports
// (Impl::Event), so the nodes of a cycle may run in any order and on several threads.
void System::node_cycle(unsigned i) {
    auto& s = *p_;
    auto& nd = s.nodes[i];
    nd.events.clear();
    auto& k = nd.skip;
    const auto rx_of = [&](unsigned p) { return nd.rx[p] ? nd.rx[p]->out() : 0; };
    // this cycle's inputs are those of the record's phase (CPU port empty, DMA always ready)
    const auto as_recorded = [&](unsigned ph) {
        if (!nd.drv->idle() || nd.sink->stall_pct != 0 || k.irq_ready[ph] != !nd.irq_hold) return false;
        for (unsigned p = 1; p <= s.np; ++p)
            if (rx_of(p) != k.rx[ph][p]) return false;
        return true;
    };
    if (k.on) {
        const auto ph = static_cast<unsigned>((s.cycle - k.t0) % kIdlePeriod);
        if (as_recorded(ph)) {
            // the cycle as recorded: the same symbols out, nothing else (the record has no TLP, DMA,
            // interrupt or activity), the same gates closed; the model is not evaluated
            nd.active = false;
            for (unsigned p = 1; p <= s.np; ++p) {
                if (!nd.tx[p]) continue;
                const uint64_t f = k.tx[ph][p];
                if (on_flit) nd.events.push_back(Impl::Event{Impl::Event::Flit, p, f, Tlp{}});
                nd.last_tx[p][s.cycle % kIdlePeriod] = f;
                nd.tx[p]->in(f);
            }
            for (unsigned g = k.gated[ph], u = 0; g != 0; g >>= 1, ++u)
                if (g & 1) ++nd.gated[u];
            ++nd.skipped;
            return;
        }
        // an input differs: the model takes the state of this phase, the prescaler where the
        // cycles not evaluated have taken it, and this cycle is evaluated
        nd.nic->restore(k.state[ph], static_cast<unsigned>(k.tick[ph] + (s.cycle - k.t0 - ph)));
        k.on = false;
        k.have = 0;
    } else if (s.cfg.skip_idle && k.still >= kStillBeforeRecord && s.cycle >= k.retry_at && nd.drv->idle() &&
               nd.sink->stall_pct == 0 && nd.nic->can_skip()) {
        if (k.have == kIdlePeriod) {
            // the orbit closes if the state is the one of phase 0 (prescaler aside)
            if (nd.nic->same(k.state[0], k.tick[0] + kIdlePeriod)) {
                k.on = true;
                k.t0 = s.cycle;
                for (unsigned j = 0; j < kIdlePeriod; ++j) k.tick[j] += kIdlePeriod;  // phase j from t0 on
                node_cycle(i);  // this cycle is phase 0 (played if its inputs are the record's)
                return;
            }
            k.have = 0;
            k.retry_at = s.cycle + 64;
        } else {
            nd.nic->save(k.state[k.have]);
            k.tick[k.have] = nd.nic->dma_tick();
            ++k.have;
        }
    } else {
        k.have = 0;
    }
    for (unsigned p = 1; p <= s.np; ++p) nd.nic->set_phy_rx(p, nd.rx[p] ? nd.rx[p]->out() : 0);  // unconnected: sync 00
    nd.drv->drive();
    nd.sink->drive();
    nd.nic->set_irq_ready(!nd.irq_hold);
    // the settle eval: clk low, the inputs of the coming edge set; clock gates in the models
    // (velo_sim_gate, SystemConfig::sim_gate) take their enable for the edge here
    nd.nic->eval();
    nd.active = false;
    for (unsigned p = 1; p <= s.np; ++p) {
        if (!nd.tx[p]) continue;
        const uint64_t f = nd.nic->phy_tx(p);
        if (on_flit) nd.events.push_back(Impl::Event{Impl::Event::Flit, p, f, Tlp{}});
        uint64_t& then = nd.last_tx[p][s.cycle % kIdlePeriod];
        if (((f >> s.link_w) & 3) == VELO_LINK_SYNC_DATA || f != then) nd.active = true;
        then = f;
        nd.tx[p]->in(f);
    }
    if (nd.drv->sop_presented && !nd.is_send.empty() && nd.is_send.front())
        nd.events.push_back(Impl::Event{Impl::Event::SendSop, 0, 0, Tlp{}});
    if (!nd.drv->idle() || *nd.nic->out_pins().valid) nd.active = true;
    if (nd.drv->sample() && !nd.is_send.empty()) nd.is_send.pop_front();
    nd.sink->sample();
    const unsigned gated = nd.nic->gated();
    for (unsigned g = gated, u = 0; g != 0; g >>= 1, ++u)
        if (g & 1) ++nd.gated[u];
    nd.at_rest = (gated & kRestUnits) == kRestUnits;
    const bool irq = nd.nic->irq_valid();
    if (irq && !nd.irq_hold) {
        ++nd.irqs;
        nd.events.push_back(Impl::Event{Impl::Event::Irq, 0, 0, Tlp{}});
    }
    const bool at_rest_now = !nd.active && nd.at_rest && !irq;
    k.still = at_rest_now ? std::min(k.still + 1, kStillBeforeRecord) : 0;
    if (k.have != 0 && !k.on) {
        // a cycle of a candidate orbit: keep what went in and out, or give up if anything moved
        const unsigned ph = k.have - 1;
        bool still = at_rest_now;
        for (const auto& e : nd.events) still = still && e.kind == Impl::Event::Flit;
        if (!still) {
            k.have = 0;
        } else {
            for (unsigned p = 1; p <= s.np; ++p) {
                k.rx[ph][p] = rx_of(p);
                k.tx[ph][p] = nd.tx[p] ? nd.nic->phy_tx(p) : 0;
            }
            k.gated[ph] = gated;
            k.irq_ready[ph] = !nd.irq_hold;
        }
    }
    nd.nic->tick(s.cycle);
}

void System::step(uint64_t n) {
    auto& s = *p_;
    for (uint64_t k = 0; k < n; ++k) {
        if (on_cycle) on_cycle();
        s.pool->run(s.topo.nodes, s.node_cycle);
        // what they report, node by node in the order they saw it, before the cycle ends
        for (unsigned i = 0; i < s.topo.nodes; ++i) {
            auto& nd = s.nodes[i];
            if (nd.active) s.last_activity = s.cycle;
            for (const auto& e : nd.events) {
                switch (e.kind) {
                    case Impl::Event::Flit:
                        if (on_flit) on_flit(i, e.port, e.flit);
                        break;
                    case Impl::Event::SendSop:
                        if (on_send_sop) on_send_sop(i, s.cycle);
                        break;
                    case Impl::Event::DmaWrite:
                        if (on_dma_write) on_dma_write(i, e.tlp);
                        if (on_dma_eop) on_dma_eop(i, s.cycle);
                        break;
                    case Impl::Event::DmaRead:
                        if (on_dma_read) on_dma_read(i, e.tlp);
                        break;
                    case Impl::Event::Irq:
                        if (on_irq) on_irq(i, s.cycle);
                        break;
                }
            }
        }
        for (auto& c : s.ch) c.second->tick();
        ++s.cycle;
    }
}

void System::cpu_post(unsigned node, const Tlp& t) {
    auto& nd = p_->nodes.at(node);
    nd.drv->push(t);
    nd.is_send.push_back(t.bar == VELO_BAR_SEND && t.is_mwr());
}

size_t System::cpu_queued(unsigned node) const {
    return p_->nodes.at(node).drv->pending();
}

void System::reg_write(unsigned node, uint32_t off, uint32_t v) {
    std::vector<uint8_t> b = {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v >> 16),
                              static_cast<uint8_t>(v >> 24)};
    cpu_post(node, Tlp::mwr(kBar0 + off, b, VELO_BAR_REGS));
}

uint8_t System::reg_read_post(unsigned node, uint32_t off) {
    return mem_read_post(node, VELO_BAR_REGS, kBar0 + off, 0xF);
}

uint8_t System::mem_read_post(unsigned node, uint8_t bar, uint64_t addr, uint8_t be) {
    auto& nd = p_->nodes.at(node);
    const uint8_t tag = nd.next_tag++;
    nd.cpl.erase(tag);
    cpu_post(node, Tlp::mrd(addr & ~3ull, 1, tag, bar, be, 0));
    return tag;
}

bool System::reg_read_result(unsigned node, uint8_t tag, uint32_t* v) {
    auto& nd = p_->nodes.at(node);
    auto it = nd.cpl.find(tag);
    if (it == nd.cpl.end()) return false;
    if (v) *v = it->second;
    nd.cpl.erase(it);
    return true;
}

uint32_t System::reg_read(unsigned node, uint32_t off) {
    const uint8_t tag = reg_read_post(node, off);
    for (int i = 0; i < 100000; ++i) {
        uint32_t v;
        if (reg_read_result(node, tag, &v)) return v;
        step();
    }
    throw std::runtime_error("velo: register read timed out (node " + std::to_string(node) + ")");
}

bool System::init(uint64_t max_cycles) {
    auto& s = *p_;
    for (auto& nd : s.nodes) nd.nic->set_rst(true);
    step(4);
    for (auto& nd : s.nodes) nd.nic->set_rst(false);
    for (unsigned i = 0; i < s.topo.nodes; ++i) {
        reg_write(i, VELO_REG_CTRL_NODE_ID, i);
        for (unsigned d = 0; d < s.topo.nodes; ++d) {
            uint32_t e = static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_ROUTE_TABLE_ROUTE_VALID, 1) |
                                               VELO_FIELD_PREP(VELO_TBL_ROUTE_TABLE_ROUTE_ROUTE, s.topo.route(i, d)));
            reg_write(i, VELO_TBL_ROUTE_TABLE_BASE + VELO_TBL_ROUTE_TABLE_STRIDE * d, e);
        }
        for (unsigned p = 1; p <= s.np; ++p) {
            uint32_t cfgv =
                static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_NET_PORT_CFG_DIM, s.topo.dim(i, p)) |
                                      VELO_FIELD_PREP(VELO_TBL_NET_PORT_CFG_DATELINE, s.topo.dateline(i, p)));
            reg_write(i, VELO_TBL_NET_PORT_BASE + VELO_TBL_NET_PORT_STRIDE * (p - 1) + VELO_TBL_NET_PORT_CFG, cfgv);
        }
        reg_write(i, VELO_REG_CTRL_CONTROL, 1u << VELO_REG_CTRL_CONTROL_ENABLE_SHIFT);
    }
    // read back (a non-posted read completes after the posted writes before it)
    for (unsigned i = 0; i < s.topo.nodes; ++i)
        if (reg_read(i, VELO_REG_CTRL_NODE_ID) != i) return false;
    const uint64_t start = s.cycle;
    while (!links_up()) {
        if (s.cycle - start > max_cycles) return false;
        step(16);
    }
    return true;
}

void System::set_faults(double ber, double flit_loss) {
    for (auto& [k, c] : p_->ch) c->set_faults(ber, flit_loss);
}

void System::set_link_down(unsigned node, unsigned port, bool down) {
    auto& s = *p_;
    auto it = s.ch.find(Impl::key(node, port));
    if (it == s.ch.end()) throw std::invalid_argument("velo: no link at that port");
    it->second->set_down(down);
    const Peer& pr = s.topo.peer(node, port);
    s.ch.at(Impl::key(static_cast<unsigned>(pr.node), pr.port))->set_down(down);
}

void System::set_irq_hold(unsigned node, bool hold) {
    p_->nodes.at(node).irq_hold = hold;
}

bool System::irq_valid(unsigned node) const {
    return p_->nodes.at(node).nic->irq_valid();
}

uint64_t System::irq_count(unsigned node) const {
    return p_->nodes.at(node).irqs;
}

void System::set_dma_stall_pct(unsigned node, int pct) {
    p_->nodes.at(node).sink->stall_pct = pct;
}

bool System::links_up() const {
    auto& s = *p_;
    for (unsigned i = 0; i < s.topo.nodes; ++i)
        for (unsigned p = 1; p <= s.np; ++p)
            if (s.topo.peer(i, p).node >= 0 && !s.nodes[i].nic->port_up(p)) return false;
    return true;
}

std::vector<std::string> System::errors() const {
    std::vector<std::string> e;
    for (unsigned i = 0; i < p_->nodes.size(); ++i)
        for (auto& x : p_->nodes[i].sink->errors) e.push_back("node " + std::to_string(i) + ": " + x);
    return e;
}

uint64_t System::gated_cycles(unsigned node, Gated unit) const {
    const auto& nd = p_->nodes.at(node);
    return nd.gated.at(static_cast<unsigned>(unit));
}

uint64_t System::skipped_cycles(unsigned node) const {
    return p_->nodes.at(node).skipped;
}

unsigned System::dma_prescaler(unsigned node) const {
    const auto& s = *p_;
    const auto& nd = s.nodes.at(node);
    const auto& k = nd.skip;
    if (!k.on) return nd.nic->dma_tick();
    const auto ph = static_cast<unsigned>((s.cycle - k.t0) % kIdlePeriod);
    return static_cast<unsigned>((k.tick[ph] + (s.cycle - k.t0 - ph)) % kDmaTickN);
}

void System::park_threads() {
    p_->pool->park();
}

NodePool::Stats System::pool_stats() const {
    return p_->pool->stats();
}

bool System::quiet() const {
    auto& s = *p_;
    bool rest = true;
    for (auto& nd : s.nodes) {
        if (!nd.drv->idle()) return false;
        rest = rest && nd.at_rest;
    }
    return s.cycle - s.last_activity > (rest ? kQuietCyclesAtRest : kQuietCycles);
}

}  // namespace velo::sim
