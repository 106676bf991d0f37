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
constexpr int64_t kStallNs = 200000;
constexpr uint64_t kAloneFirst = 256, kAloneMax = 1u << 16;

}  // namespace

NodePool::NodePool(unsigned threads, int64_t spin_ns) : spin_ns_(spin_ns) {
    for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { worker(); });
    alone_next_ = kAloneFirst;
}

NodePool::~NodePool() {
    stop_.store(true, std::memory_order_seq_cst);
    gen_.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_all(&gen_);
    for (auto& t : workers_) t.join();
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
            if (t < end) continue;
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

void NodePool::run(unsigned n, const std::function<void(unsigned)>& fn) {
    ++runs_;
    if (workers_.empty() || n < 2 || alone_left_) {
        if (alone_left_) {
            --alone_left_;
            ++alone_runs_;
        }
        for (unsigned i = 0; i < n; ++i) fn(i);
        return;
    }
    ++shared_runs_;
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
    // nodes still in a worker's hands
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
    // a late worker's claim finds next_ past n: nothing of this run is left to take
    if (stalled) {
        ++stalls_;
        alone_left_ = alone_next_;
        alone_next_ = std::min(alone_next_ * 2, kAloneMax);
    } else if (alone_next_ > kAloneFirst && (shared_runs_ & (kAloneMax - 1)) == 0) {
        alone_next_ = kAloneFirst;  // a long time without stalls: forgive
    }
}

}  // namespace velo::sim
