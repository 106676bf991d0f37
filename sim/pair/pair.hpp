// Two VELO NICs back to back (RTL, Verilated) with a host model on each side: a CPU that sends
// through write combining and programs registers, host memory with adversarial DMA visibility,
// and the polling software of every open mailbox. Used by the system tests, the demo and the
// hardware benchmarks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "host.hpp"
#include "velo/velo_hw.h"

namespace velo::sim {

class Pair {
  public:
    struct Config {
        bool wide = false;  // TLP_W=128, LINK_W=32 instead of 64/16
        uint64_t seed = 1;
        int mem_delay = 3;       // host memory: max cycles between two lines becoming visible
        int sink_stall_pct = 0;  // host refuses DMA beats this often (percent of cycles)
        int drv_gap_pct = 0;     // host leaves gaps in its PIO stream (percent of cycles)
        int max_inflight = 2;    // TLPs queued at the CPU side of a NIC at once
        // Senders start a message only when the destination ring has room for it (end-to-end
        // credits, as the API keeps them). Without it two nodes that fill each other's rings while
        // their CPUs block on sends deadlock: a read-pointer update waits in the PCIe posted queue
        // behind the blocked send (the paper's "congestion propagates into the nodes").
        bool credits = true;
    };
    static constexpr uint64_t kBar0 = 0xF0000000ull;    // register BAR (MWr32/MRd32)
    static constexpr uint64_t kBar2 = 0x4000000000ull;  // send window (64-bit BAR)

    explicit Pair(const Config& c);
    ~Pair();
    Pair(const Pair&) = delete;
    Pair& operator=(const Pair&) = delete;

    unsigned tlp_bits() const;
    unsigned link_bits() const;
    uint64_t cycle() const;
    void step(uint64_t n = 1);

    // Register access through the NIC's TLP port, in order with the node's other stores.
    void reg_write(int node, uint32_t off, uint32_t v);  // posted: returns at once
    uint32_t reg_read(int node, uint32_t off);           // waits for the completion
    // A raw TLP from the node's CPU (malformed-input tests).
    void send_tlp(int node, const Tlp& t);

    // The driver's bring-up: node ids, NIC enable.
    void init(unsigned id_a, unsigned id_b);
    unsigned node_id(int node) const;
    // Mailbox setup as the driver does it, and teardown with a quiesce barrier.
    void open_mailbox(int node, unsigned vpid, unsigned log2_lines, uint64_t base);
    void close_mailbox(int node, unsigned vpid);
    // Stop/start the polling software of a mailbox (to fill it up).
    void pause_reader(int node, unsigned vpid, bool paused);

    // A message from (node, src_vpid) to (dst node id, dst_vpid): queued on the sending thread
    // (node, src_vpid), whose writes interleave with other threads'; expected by the scoreboard.
    void send(int node, unsigned src_vpid, unsigned dst_node_id, unsigned dst_vpid, const std::vector<uint8_t>& msg,
              WcMode mode, bool expect = true);
    bool threads_idle() const;

    // Run until every queued write is out and the scoreboard is empty (or max_cycles pass).
    bool run_until_idle(uint64_t max_cycles);

    Scoreboard& scoreboard();
    std::vector<std::string> errors() const;  // every model's complaints
    uint64_t fragments_seen() const;
    uint32_t counter(int node, unsigned idx) { return reg_read(node, VELO_REG_COUNTERS_COUNTER_BASE + 4 * idx); }

    // Measurement points (cycle numbers).
    std::function<void(int node, const Msg&, uint64_t cycle)> on_msg;
    uint64_t last_send_sop[2] = {0, 0};  // first beat of the last send-window write presented
    uint64_t last_dma_eop[2] = {0, 0};   // last beat of the last DMA write accepted
    uint64_t link_flits_ab = 0, link_first_ab = 0, link_last_ab = 0;

    struct Impl;

  private:
    std::unique_ptr<Impl> p_;
};

}  // namespace velo::sim
