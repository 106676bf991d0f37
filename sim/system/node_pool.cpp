// The node pool: see node_pool.hpp.
#include "node_pool.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

namespace velo::sim {

namespace {

int64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

void futex_wait(std::atomic<uint32_t>* a, uint32_t v) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(a), FUTEX_WAIT_PRIVATE, v, nullptr, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* a) {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(a), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

// Waiting longer than this for a worker's node means the worker lost its core (a node takes a
// few microseconds).
constexpr int64_t kStallNs = 100000;
// runs in each probe window, and in the stretch that keeps the faster way
constexpr uint64_t kProbeRuns = 1024, kKeepRuns = 16384;

}  // namespace

NodePool::NodePool(unsigned threads, int64_t spin_ns) : spin_ns_(spin_ns) {
    for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { worker(); });
}

NodePool::~NodePool() {
    stop_.store(true, std::memory_order_seq_cst);
    gen_.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_all(&gen_);
    for (auto& t : workers_) t.join();
}

void NodePool::park() {
    if (!workers_.empty()) park_.store(true, std::memory_order_relaxed);
}

NodePool::Stats NodePool::stats() const {
    Stats s;
    s.runs = runs_;
    s.shared_runs = shared_runs_;
    s.worker_nodes = worker_nodes_.load(std::memory_order_relaxed);
    s.stalls = stalls_;
    s.alone_runs = alone_runs_;
    return s;
}

// Claim nodes of the current run until none is left.
void NodePool::claim(bool is_worker) {
    for (;;) {
        const unsigned i = next_.fetch_add(1, std::memory_order_acq_rel);
        if (i >= n_.load(std::memory_order_relaxed)) return;
        (*fn_.load(std::memory_order_relaxed))(i);
        if (is_worker) {
            worker_nodes_.fetch_add(1, std::memory_order_relaxed);
            done_.fetch_add(1, std::memory_order_release);
        }
    }
}

void NodePool::worker() {
    uint32_t seen = gen_.load(std::memory_order_acquire);
    for (;;) {
        // the next run: poll for spin_ns, then sleep until one is offered
        int64_t end = 0;
        for (unsigned k = 0; gen_.load(std::memory_order_acquire) == seen; ++k) {
            relax();
            if ((k & 255) != 255) continue;
            const int64_t t = now_ns();
            if (!end) end = t + spin_ns_;
            if (t < end && !park_.load(std::memory_order_relaxed)) continue;
            sleepers_.fetch_add(1, std::memory_order_seq_cst);
            if (gen_.load(std::memory_order_seq_cst) == seen) futex_wait(&gen_, seen);
            sleepers_.fetch_sub(1, std::memory_order_seq_cst);
            end = 0;
        }
        seen = gen_.load(std::memory_order_acquire);
        if (stop_.load(std::memory_order_acquire)) return;
        claim(true);
    }
}

// Whether sharing pays is measured, not assumed: the pool alternates a window of runs alone and
// one shared, then keeps the faster way (shared only if it saves a tenth) for a longer stretch,
// and measures again. A shared run that waits for a worker that lost its core ends a shared
// stretch at once.
void NodePool::run(unsigned n, const std::function<void(unsigned)>& fn) {
    ++runs_;
    if (workers_.empty() || n < 2) {
        for (unsigned i = 0; i < n; ++i) fn(i);
        return;
    }
    const bool shared = phase_ == Phase::ProbeShared || (phase_ == Phase::Keep && keep_shared_);
    const int64_t t0 = now_ns();
    bool stalled = false;
    if (!shared) {
        ++alone_runs_;
        for (unsigned i = 0; i < n; ++i) fn(i);
    } else {
        stalled = run_shared(n, fn);
    }
    const int64_t dt = now_ns() - t0;
    if (phase_ != Phase::Keep) {
        probe_ns_[shared] += dt;
        ++probe_runs_[shared];
    }
    if (stalled) {
        ++stalls_;
        if (phase_ == Phase::ProbeShared) probe_ns_[1] = INT64_MAX / 2;  // lost
    }
    if (++phase_runs_ < (phase_ == Phase::Keep ? kKeepRuns : kProbeRuns) && !stalled) return;
    phase_runs_ = 0;
    switch (phase_) {
        case Phase::ProbeAlone:
            phase_ = Phase::ProbeShared;
            break;
        case Phase::ProbeShared: {
            // per run: shared must beat alone by a tenth (it costs a second core)
            const double a =
                static_cast<double>(probe_ns_[0]) / static_cast<double>(std::max<uint64_t>(1, probe_runs_[0]));
            const double b =
                static_cast<double>(probe_ns_[1]) / static_cast<double>(std::max<uint64_t>(1, probe_runs_[1]));
            keep_shared_ = b < 0.9 * a;
            phase_ = Phase::Keep;
            break;
        }
        case Phase::Keep:
            phase_ = Phase::ProbeAlone;
            probe_ns_[0] = probe_ns_[1] = 0;
            probe_runs_[0] = probe_runs_[1] = 0;  // keep_shared_ is decided again after the probes
            break;
    }
}

// One run shared with the workers; true if it waited for a worker that had lost its core.
bool NodePool::run_shared(unsigned n, const std::function<void(unsigned)>& fn) {
    ++shared_runs_;
    if (park_.load(std::memory_order_relaxed)) park_.store(false, std::memory_order_relaxed);
    fn_.store(&fn, std::memory_order_relaxed);
    n_.store(n, std::memory_order_relaxed);
    // done_ first: a worker's claim synchronises with the store to next_ and so sees done_ reset
    done_.store(0, std::memory_order_relaxed);
    next_.store(0, std::memory_order_release);
    gen_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst)) futex_wake_all(&gen_);
    // this thread's share (all of it while the workers sleep or are away)
    unsigned mine = 0;
    for (;;) {
        const unsigned i = next_.fetch_add(1, std::memory_order_acq_rel);
        if (i >= n) break;
        fn(i);
        ++mine;
    }
    // nodes still in a worker's hands (a late worker's claim finds next_ past n: nothing of this
    // run is left to take)
    const unsigned theirs = n - mine;
    int64_t start = 0;
    bool stalled = false;
    for (unsigned k = 0; done_.load(std::memory_order_acquire) != theirs; ++k) {
        relax();
        if ((k & 255) != 255 || stalled) continue;
        const int64_t t = now_ns();
        if (!start)
            start = t;
        else if (t - start > kStallNs)
            stalled = true;
    }
    return stalled;
}

}  // namespace velo::sim
