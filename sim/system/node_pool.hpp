// Runs one cycle's work of every node of the simulated cluster on several threads (System::step,
// docs/simulator.md "Threads"). The nodes of a cluster are coupled only by their link channels,
// which are read before and advanced after a cycle's node work, so within a cycle the nodes are
// independent: run(n, fn) calls fn(i) once for every node i, on the calling thread and on the
// workers, and returns when all are done. Which thread evaluates which node changes nothing
// simulated; the callers keep every side effect of fn node-local.
//
// Kind to a machine with fewer cores than runnable processes: the calling thread claims nodes
// too, so a worker that is asleep or descheduled only costs its share of speed; a worker spins
// for the next cycle at most spin_ns after its last one, or not at all once the caller says it
// stops stepping (park()), and then sleeps (futex). Whether sharing pays is measured while it
// runs (a window of runs alone, one shared, then the faster way for a longer stretch), so a busy
// machine, where a worker keeps losing its core, falls back to one thread by itself.
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

    // The caller stops running cycles for a while (it waits for its clients or sleeps): the
    // workers sleep at once instead of polling for spin_ns, leaving the cores to the processes
    // the caller waits for. The next run() wakes them.
    void park();

    unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }
    struct Stats {
        uint64_t runs = 0;          // run() calls
        uint64_t shared_runs = 0;   // ... offered to the workers
        uint64_t worker_nodes = 0;  // nodes the workers evaluated
        uint64_t stalls = 0;        // waits for a worker that had lost its core
        uint64_t alone_runs = 0;    // runs on the calling thread alone (sharing did not pay)
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
    std::atomic<bool> park_{false};
    alignas(64) std::atomic<unsigned> next_{0};  // next node to claim
    alignas(64) std::atomic<unsigned> done_{0};  // nodes the workers finished in this run
    alignas(64) std::atomic<uint64_t> worker_nodes_{0};
    bool run_shared(unsigned n, const std::function<void(unsigned)>& fn);
    // the calling thread's state: counts, and the measurement that decides between alone and shared
    uint64_t runs_ = 0, shared_runs_ = 0, stalls_ = 0, alone_runs_ = 0;
    enum class Phase { ProbeAlone, ProbeShared, Keep } phase_ = Phase::ProbeAlone;
    uint64_t phase_runs_ = 0;
    int64_t probe_ns_[2] = {0, 0};  // [0] alone, [1] shared: time in run() during the probes
    uint64_t probe_runs_[2] = {0, 0};
    bool keep_shared_ = false;
};

}  // namespace velo::sim
