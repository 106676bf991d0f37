// A simulated cluster with its hosts: the System (N Verilated NICs wired by a topology over
// faulty links) plus, on every node, the host model: a CPU whose threads send through write
// combining, host memory with adversarial DMA visibility, and the polling software of every open
// mailbox, with a scoreboard over all of it. Used by the system and network tests, the demo and
// the hardware benchmarks. Node ids are node indices.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "host.hpp"
#include "system.hpp"
#include "velo/velo_hw.h"

namespace velo::sim {

class Cluster {
  public:
    struct Config {
        SystemConfig sys;
        int mem_delay = 3;     // host memory: max cycles between two lines becoming visible
        int max_inflight = 2;  // TLPs queued at the CPU side of a NIC at once
        // Senders start a message only when the destination ring has room for it (end-to-end
        // credits, as the API keeps them). Without them two nodes that fill each other's rings
        // while their CPUs block on sends deadlock: a read-pointer update waits in the PCIe posted
        // queue behind the blocked send (the paper's "congestion propagates into the nodes").
        bool credits = true;
    };
    static constexpr uint64_t kBar0 = System::kBar0;
    static constexpr uint64_t kBar2 = System::kBar2;

    explicit Cluster(const Config& c);
    ~Cluster();
    Cluster(const Cluster&) = delete;
    Cluster& operator=(const Cluster&) = delete;

    System& sys();
    unsigned nodes() const;
    uint64_t cycle() const;
    void step(uint64_t n = 1);

    // Board bring-up (System::init). False if the links do not come up.
    bool init();

    void reg_write(unsigned node, uint32_t off, uint32_t v);  // posted
    uint32_t reg_read(unsigned node, uint32_t off);           // waits for the completion
    void send_tlp(unsigned node, const Tlp& t);               // a raw TLP from the node's CPU
    uint32_t counter(unsigned node, unsigned idx) { return reg_read(node, VELO_REG_COUNTERS_COUNTER_BASE + 4 * idx); }
    uint32_t link_counter(unsigned node, unsigned port, uint32_t reg) {
        return reg_read(node, VELO_TBL_NET_PORT_BASE + VELO_TBL_NET_PORT_STRIDE * (port - 1) + reg);
    }

    // Mailbox setup as the driver does it, and teardown with a quiesce barrier.
    void open_mailbox(unsigned node, unsigned vpid, unsigned log2_lines, uint64_t base);
    void close_mailbox(unsigned node, unsigned vpid);
    void pause_reader(unsigned node, unsigned vpid, bool paused);

    // A message from (node, src_vpid) to (dst_node, dst_vpid), queued on the sending thread
    // (node, src_vpid), whose writes interleave with other threads'; expected by the scoreboard.
    void send(unsigned node, unsigned src_vpid, unsigned dst_node, unsigned dst_vpid, const std::vector<uint8_t>& msg,
              WcMode mode, bool expect = true);
    bool threads_idle() const;
    size_t queued_writes(unsigned node) const;  // writes of the node's threads not yet at the port

    // Run until every queued write is out and the scoreboard is empty (or max_cycles pass).
    bool run_until_idle(uint64_t max_cycles);

    // Host memory of a node (mailboxes, RMA buffers and queues) and the host's answers to the
    // NIC's memory reads (RMA): every read the NIC issues is answered from that memory.
    HostMem& mem(unsigned node);
    HostReader& reader(unsigned node);
    // Called every cycle after the host models (RMA software polls its queues here).
    std::function<void()> on_host_cycle;

    Scoreboard& scoreboard();
    std::vector<std::string> errors() const;  // every model's complaints
    uint64_t fragments_seen() const;

    // Measurement points (cycle numbers) and observation.
    std::function<void(unsigned node, const Msg&, uint64_t cycle)> on_msg;
    std::vector<uint64_t> last_send_sop;  // per node: first beat of the last send-window write presented
    std::vector<uint64_t> last_dma_eop;   // per node: last beat of the last DMA write accepted

    struct Impl;

  private:
    std::unique_ptr<Impl> p_;
};

}  // namespace velo::sim
