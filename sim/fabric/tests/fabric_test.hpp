// Helpers of the fabric tests (test_fabric.cpp, test_fabric_rma.cpp): a velo-fabric per test on
// its own socket, clients as forked processes whose exit status is their verdict.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "velo/velo.h"

namespace velo_fabric_test {

// In a client process: print where and why, and return 1 (the client's exit status).
#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            std::fprintf(stderr, "[pid %d] %s:%d: check failed: %s: ", getpid(), __FILE__, __LINE__, #cond); \
            std::fprintf(stderr, __VA_ARGS__);                                                               \
            std::fprintf(stderr, "\n");                                                                      \
            return 1;                                                                                        \
        }                                                                                                    \
    } while (0)

// A fabric on its own socket in a temporary directory.
struct FabricProc {
    std::string dir, sock;
    pid_t pid = -1;
    explicit FabricProc(std::vector<std::string> args = {}, bool start_now = true) {
        char t[] = "/tmp/velo-fabric-test-XXXXXX";
        dir = mkdtemp(t);
        sock = dir + "/fabric.sock";
        if (start_now) {
            EXPECT_TRUE(start(args));
        }
    }
    // true once the fabric says "ready"; false if it exited (status in exit_status)
    bool start(std::vector<std::string> args, int* exit_status = nullptr) {
        int p[2];
        if (pipe(p) < 0) return false;
        pid_t c = fork();
        if (c == 0) {
            close(p[0]);
            std::vector<std::string> a = {VELO_FABRIC_BIN, "--socket", sock, "--ready-fd", std::to_string(p[1])};
            a.insert(a.end(), args.begin(), args.end());
            if (std::getenv("FABRIC_VERBOSE")) a.push_back("--verbose");  // debugging: the NICs' counters
            std::vector<char*> av;
            for (auto& s : a) av.push_back(const_cast<char*>(s.c_str()));
            av.push_back(nullptr);
            execv(av[0], av.data());
            _exit(127);
        }
        close(p[1]);
        char buf[16] = {};
        pollfd pf{p[0], POLLIN, 0};
        poll(&pf, 1, 120000);
        ssize_t n = read(p[0], buf, sizeof buf - 1);
        close(p[0]);
        if (n > 0 && std::string(buf) == "ready\n") {
            if (pid < 0) pid = c;
            return true;
        }
        int st = 0;
        waitpid(c, &st, 0);
        if (exit_status) *exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        return false;
    }
    bool alive() const { return pid > 0 && waitpid(pid, nullptr, WNOHANG) == 0; }
    int stop(int sig = SIGTERM) {
        if (pid < 0) return -1;
        kill(pid, sig);
        int st = 0;
        waitpid(pid, &st, 0);
        pid = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    std::string device() const { return "sim:" + sock; }
    ~FabricProc() {
        if (pid > 0) stop();
        std::system(("rm -rf " + dir).c_str());
    }
};

pid_t spawn(const std::function<int()>& fn) {
    std::fflush(nullptr);
    pid_t p = fork();
    if (p == 0) {
        alarm(150);  // a child stuck on a failed peer dies instead of hanging the test
        int rc = 1;
        try {
            rc = fn();
        } catch (...) {
            rc = 99;
        }
        std::fflush(nullptr);
        _exit(rc);
    }
    return p;
}

int join(pid_t p) {
    int st = 0;
    if (waitpid(p, &st, 0) < 0) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int open_ep(const FabricProc& f, int node, int vpid, velo_ep_t** ep, unsigned ring_log2 = 0) {
    velo_open_attr_t a;
    velo_open_attr_init(&a);
    std::string d = f.device();
    a.device = d.c_str();
    a.node = node;
    a.vpid = vpid;
    a.ring_log2 = ring_log2;
    a.connect_timeout_ms = 60000;
    return velo_open(&a, ep);
}

// The seed of a randomised test: SEED=<n> or a random one, printed so that a run can be replayed.
inline uint64_t test_seed() {
    const char* s = std::getenv("SEED");
    uint64_t seed = s && *s ? std::strtoull(s, nullptr, 0) : std::random_device()();
    std::printf("SEED=%llu\n", static_cast<unsigned long long>(seed));
    std::fflush(stdout);
    return seed;
}

// A bidirectional channel between two processes (socketpair made before fork): 16-byte records.
struct Link {
    int fd[2] = {-1, -1};
    Link() {
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) < 0) fd[0] = fd[1] = -1;
    }
    ~Link() { close_all(); }
    // a child keeps its own side only (so it sees EOF when its peer dies)
    void keep(int side) {
        if (fd[1 - side] >= 0) close(fd[1 - side]);
        fd[1 - side] = -1;
    }
    void close_all() {
        for (int& f : fd)
            if (f >= 0) {
                close(f);
                f = -1;
            }
    }
    // side 0 or 1
    bool send(int side, uint64_t a, uint64_t b = 0) {
        uint64_t v[2] = {a, b};
        return write(fd[side], v, sizeof v) == static_cast<ssize_t>(sizeof v);
    }
    // timeout_ms 0: only if a record is there now
    bool recv(int side, uint64_t* a, uint64_t* b = nullptr, int timeout_ms = 120000) {
        pollfd pf{fd[side], POLLIN, 0};
        if (poll(&pf, 1, timeout_ms) != 1) return false;
        uint64_t v[2];
        size_t got = 0;
        while (got < sizeof v) {
            ssize_t n = read(fd[side], reinterpret_cast<char*>(v) + got, sizeof v - got);
            if (n <= 0) return false;
            got += static_cast<size_t>(n);
        }
        if (a) *a = v[0];
        if (b) *b = v[1];
        return true;
    }
};

// A byte of a seeded test pattern, and a buffer filled with it.
inline uint8_t pat(uint64_t seed, uint64_t i) {
    uint64_t x = (seed + i) * 0x9E3779B97F4A7C15ull;
    return static_cast<uint8_t>((x >> 29) ^ (x >> 47));
}
inline void fill(uint8_t* p, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; ++i) p[i] = pat(seed, i);
}

// The next completion: 0 and *c, or a check failure. No wall-clock limit (a loaded machine may
// take minutes over a long put; ctest's timeout is the backstop): it fails when a 10-second wait
// ends with the simulated clock where it was, i.e. when nothing moves that could complete.
inline int next_cpl(velo_ep_t* ep, velo_rma_cpl_t* c) {
    for (;;) {
        uint64_t c0 = 0, c1 = 0;
        velo_clock(ep, &c0, nullptr);
        const int r = velo_rma_wait(ep, c, 10000);
        if (r == 0) return 0;
        velo_clock(ep, &c1, nullptr);
        CHECK(r == -ETIMEDOUT && c1 != c0, "velo_rma_wait: %d (%s) at cycle %llu", r, velo_strerror(r),
              (unsigned long long)c1);
    }
}

}  // namespace velo_fabric_test
