// A simulated cluster: one Verilated VELO NIC per node, their network ports wired by C++ link
// channels after a topology (pair, ring:N, torus:XxY, or an explicit link list), each channel
// with a latency and optional fault injection (bit errors, lost flits, link down). Cycle
// accurate: every NIC and every wire advance together, one clock per step().
//
// The host side of each node is left to the owner: it posts the TLPs its CPU would issue
// (send-window stores, register accesses) and receives every DMA write the NIC makes, in PCIe
// order. The system tests put the host model (HostMem, MailboxReader) there; the fabric daemon
// puts the shared memory of its client processes there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "node_pool.hpp"
#include "tlp.hpp"

namespace velo::sim {

struct SystemConfig {
    // "pair" (two nodes, one link), "ring:N", "torus:XxY", or "links:<file>" (one link per
    // line: "<node>.<port> <node>.<port>", ports numbered from 1)
    std::string topology = "pair";
    bool wide = false;  // TLP_W=128 and LINK_W=32 instead of 64 and 16
    // NODE_BITS=4 and VPID_BITS=6 instead of 8 and 8: the send window is 2^28 bytes (the paper's
    // 256 MiB) and fits the 32-bit BAR QEMU's proxy device maps (pair and ring)
    bool bar32 = false;
    uint64_t seed = 1;          // fault injection and host-side randomness
    unsigned link_latency = 2;  // cycles a flit spends on a wire
    double ber = 0.0;           // bit error rate on every wire
    double flit_loss = 0.0;     // probability that a flit is lost on a wire
    int cpu_gap_pct = 0;        // the CPU leaves gaps in its TLP stream (percent of cycles)
    int dma_stall_pct = 0;      // host memory refuses DMA beats (percent of cycles)
    bool waves = false;         // dump an FST per node (WAVES=1 does the same)
    std::string waves_prefix = "system";
    // Clock gating of idle units in the models (docs/simulator.md): each NIC's RMA unit, switch,
    // counters, register file, completer and requester are not evaluated in cycles where they provably change nothing
    // (velo_sim_gate, enabled by the plusarg +velo_sim_gate in the model's context). The same cycles either way; false
    // evaluates them always (for comparison). The gates need a settle eval with clk low after the inputs of an edge are
    // set and before it (step() does one).
    bool sim_gate = true;
    // Skipping NICs at rest (docs/simulator.md "Skipping idle NICs"): a NIC whose units are all at
    // rest and whose inputs repeat the idle links' pattern is seen to repeat its whole state with
    // the same period; its cycles are then played from a record instead of evaluated, until an
    // input differs (the same cycles either way; needs sim_gate; off with waves).
    bool skip_idle = true;
    // Threads that evaluate the nodes of a cycle (NodePool, docs/simulator.md "Threads"): the
    // same cycles with any number; 1 evaluates them in order on the stepping thread.
    unsigned threads = 1;
};

class System {
  public:
    static constexpr uint64_t kBar0 = 0xF0000000ull;    // register BAR as the host sees it
    static constexpr uint64_t kBar2 = 0x4000000000ull;  // send window (64-bit BAR)
    static constexpr uint64_t kBar4 = 0x5000000000ull;  // RMA command window (64-bit BAR)

    explicit System(const SystemConfig& c);
    ~System();
    System(const System&) = delete;
    System& operator=(const System&) = delete;

    unsigned nodes() const;
    unsigned net_ports() const;  // network ports per NIC
    unsigned tlp_bits() const;
    unsigned link_bits() const;
    unsigned link_latency() const;  // cycles a flit spends on a wire
    uint64_t cycle() const;
    void step(uint64_t n = 1);

    // ---- CPU side of a node: TLPs into its NIC's TLP port, in order.
    void cpu_post(unsigned node, const Tlp& t);
    size_t cpu_queued(unsigned node) const;                   // posted but not yet taken by the NIC
    void reg_write(unsigned node, uint32_t off, uint32_t v);  // posted, in order with cpu_post
    uint32_t reg_read(unsigned node, uint32_t off);           // steps until the completion is in
    // A register read that does not wait (host models issue it from on_cycle): the tag, then
    // reg_read_result() is true once its completion is in (the value in *v).
    uint8_t reg_read_post(unsigned node, uint32_t off);
    bool reg_read_result(unsigned node, uint8_t tag, uint32_t* v = nullptr);
    // A one-DW memory read of any BAR at the host address addr with byte enables be (a QEMU
    // guest's access): the tag, answered like reg_read_post (an unsupported request: all ones).
    uint8_t mem_read_post(unsigned node, uint8_t bar, uint64_t addr, uint8_t be);

    // Called at the start of every cycle, before the pins are driven (host models advance here:
    // they may cpu_post, and they keep running while reg_read waits).
    std::function<void()> on_cycle;
    // Every flit a NIC drives onto a network port (node, port 1..NP, {sync, data}).
    std::function<void(unsigned node, unsigned port, uint64_t flit)> on_flit;
    // Every memory write a NIC issues towards host memory (mailbox DMA), in PCIe order.
    std::function<void(unsigned node, const Tlp& t)> on_dma_write;
    // Every memory read a NIC issues towards host memory (RMA DMA reads); the host answers with
    // completions through cpu_post (Cluster does it with a HostReader).
    std::function<void(unsigned node, const Tlp& t)> on_dma_read;
    // Measurement points: first beat of a send-window write taken by a NIC, last beat of a DMA
    // write leaving a NIC.
    std::function<void(unsigned node, uint64_t cycle)> on_send_sop;
    std::function<void(unsigned node, uint64_t cycle)> on_dma_eop;

    // ---- interrupts: each NIC's request (irq_valid/irq_ready, MSI vector 0). The system takes
    // a request at once (the MSI), unless the node's interrupt is held (MSI masked: the request
    // waits, later ones coalesce into it). on_irq is called for every request taken, after the
    // DMA writes the NIC issued before it (the cycle is the one the request was taken in).
    std::function<void(unsigned node, uint64_t cycle)> on_irq;
    void set_irq_hold(unsigned node, bool hold);
    bool irq_valid(unsigned node) const;      // the NIC requests (this cycle)
    uint64_t irq_count(unsigned node) const;  // requests taken
    // Host memory of a node refuses DMA beats this percent of cycles (100: none taken, until
    // lowered again); SystemConfig::dma_stall_pct sets it for every node.
    void set_dma_stall_pct(unsigned node, int pct);

    // ---- bring-up as the driver does it: node id = index, route table and port configuration
    // from the topology (sw/route), NIC enable; then waits until every link is up.
    // Returns false if links do not come up within max_cycles.
    bool init(uint64_t max_cycles = 100000);

    // ---- network
    void set_link_down(unsigned node, unsigned port, bool down);  // cut both directions of a link
    void set_faults(double ber, double flit_loss);                // new fault rates on every wire
    bool links_up() const;
    std::vector<std::string> errors() const;  // protocol violations seen on the TLP ports
    // Nothing queued at any CPU port, no DMA pending, every NIC idle and every wire carrying the
    // same symbol (the idle ACK) for long enough that no link timer can still fire: the
    // simulation may sleep until the next cpu_post.
    bool quiet() const;
    // Cycles in which a unit of a node's NIC was clock-gated (not evaluated); 0 without the gate
    // or without the unit: the RMA unit, the switch, the event counters (velo_counters g_cnt),
    // the link counters (g_ncnt), the register file (velo_regfile), the completer, the requester,
    // and inside the RMA unit its initiator (with the response filter), its target, its DMA read
    // engine and its ATU (gated also in cycles where the unit is not).
    enum class Gated {
        Rma,
        Switch,
        Counters,
        LinkCounters,
        Regs,
        Completer,
        Requester,
        RmaInitiator,
        RmaTarget,
        DmaRead,
        Atu
    };
    static constexpr unsigned kGatedUnits = 11;
    uint64_t gated_cycles(unsigned node, Gated unit = Gated::Rma) const;
    // Cycles of a node played from its record instead of evaluated (SystemConfig::skip_idle).
    uint64_t skipped_cycles(unsigned node) const;
    // The NIC's free-running DMA timeout prescaler (velo_rma u_dma_tick) as it stands, skipped or
    // not (for tests: skipping must keep it where evaluation would have taken it).
    unsigned dma_prescaler(unsigned node) const;
    // Cycles without data flits, changed symbols on any wire or TLP beats after which quiet()
    // holds. Every link timer (REPLAY_TIMEOUT 512, NACK_TIMEOUT and SYNC_TIMEOUT 256,
    // DOWN_TIMEOUT 128, CTL_AGE 32 cycles: velo_link's defaults, which velo_nic keeps) is
    // restarted by something that changes a wire's symbol, so once the wires have been steady
    // for longer than the longest of them, none is left to fire. When every NIC is also at rest
    // (the clock gates of its RMA unit, switch, register file, completer and requester all
    // closed: nothing in them, nothing offered) kQuietCyclesAtRest is enough; otherwise
    // (without the gates, --no-sim-gate) the old, wider margin. tb_net's NetQuiet tests check
    // that nothing moves after quiet() under bit errors and lost flits.
    static constexpr uint64_t kQuietCycles = 4096;
    static constexpr uint64_t kQuietCyclesAtRest = 1024;

    // How the node threads shared the work (SystemConfig::threads).
    NodePool::Stats pool_stats() const;
    // The owner stops stepping for a while (it waits for other processes or sleeps): the node
    // threads sleep at once (NodePool::park) instead of polling for the next cycle.
    void park_threads();

    struct Impl;

  private:
    void node_cycle(unsigned i);
    std::unique_ptr<Impl> p_;
};

}  // namespace velo::sim
