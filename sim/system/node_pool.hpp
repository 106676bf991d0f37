// Runs one cycle's work of every node of the simulated cluster on several threads (System::step,
// docs/simulator.md "Threads"). The nodes of a cluster are coupled only by their link channels,
// which are read before and advanced after a cycle's node work, so within a cycle the nodes are
// independent: run(n, fn) calls fn(i) once for every node i, on the calling thread and on the
// workers, and returns when all are done. Which thread evaluates which node changes nothing
// simulated; the callers keep every side effect of fn node-local.
//
// Kind to a machine with fewer cores than runnable processes: the calling thread claims nodes
// too, so a worker that is asleep or descheduled only costs its share of speed; a worker spins
// for the next cycle at most spin_ns after its last one and then sleeps (futex); when the caller
// finds itself waiting for a worker's node much longer than a node takes (the worker lost its
// core), it runs alone for a while (doubling while that repeats), so a busy machine falls back
// to one thread instead of waiting for the scheduler every cycle.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace velo::sim {

class NodePool {
  public:
    // threads >= 1 (1: no workers, run() is a loop); spin_ns: how long an idle worker polls
    explicit NodePool(unsigned threads, int64_t spin_ns = 50000);
    ~NodePool();
    NodePool(const NodePool&) = delete;
    NodePool& operator=(const NodePool&) = delete;

    // fn(i) for every i in [0, n), in any order and on any of the threads.
    void run(unsigned n, const std::function<void(unsigned)>& fn);

    unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }
    struct Stats {
        uint64_t runs = 0;          // run() calls
        uint64_t shared_runs = 0;   // ... offered to the workers
        uint64_t worker_nodes = 0;  // nodes the workers evaluated
        uint64_t stalls = 0;        // waits for a worker that had lost its core
        uint64_t alone_runs = 0;    // runs on the calling thread alone after a stall
    };
    Stats stats() const;

  private:
    void worker();
    void claim(bool is_worker);

    int64_t spin_ns_;
    std::vector<std::thread> workers_;
    // the run in progress (written before gen_ is raised; a claim synchronises with the reset of next_)
    std::atomic<const std::function<void(unsigned)>*> fn_{nullptr};
    std::atomic<unsigned> n_{0};
    alignas(64) std::atomic<uint32_t> gen_{0};  // raised once per shared run; the sleepers' futex word
    std::atomic<uint32_t> sleepers_{0};
    std::atomic<bool> stop_{false};
    alignas(64) std::atomic<unsigned> next_{0};  // next node to claim
    alignas(64) std::atomic<unsigned> done_{0};  // nodes the workers finished in this run
    alignas(64) std::atomic<uint64_t> worker_nodes_{0};
    // the calling thread's state
    uint64_t runs_ = 0, shared_runs_ = 0, stalls_ = 0, alone_runs_ = 0;
    uint64_t alone_left_ = 0, alone_next_ = 0;  // runs left to do alone; the length of the next penalty
};

}  // namespace velo::sim
