// Fabric tests: a velo-fabric per test, clients as real processes (fork) that use libvelo's
// sim backend against the Verilated NICs. Every check is on data, order and counts; the
// children report failures through their exit status and stderr.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fabric_test.hpp"
#include "velo/velo.h"
#include "velo/velo.hpp"
#include "velo/velo_sim_proto.h"

namespace {

using namespace velo_fabric_test;

// connect, retrying while the destination is not open yet
int connect_to(velo_ep_t* ep, velo_addr_t dst, velo_conn_t** c) {
    for (int i = 0; i < 60000; ++i) {
        int r = velo_connect(ep, dst, 0, c);
        if (r != -ECONNREFUSED) return r;
        usleep(1000);
    }
    return -ETIMEDOUT;
}

int send_retry(velo_ep_t* own, velo_conn_t* c, const void* b, size_t n) {
    for (;;) {
        int r = velo_send(c, b, n);
        if (r != -EAGAIN) return r;
        if (own) {
            velo_msg_t m;
            if (velo_poll(own, &m) > 0) return -EPROTO;  // the tests do not expect mail here
        }
        sched_yield();
    }
}

// payload: [tag][thread][seq 32][pattern]
std::vector<uint8_t> tagged(unsigned tag, unsigned thread, uint32_t seq, unsigned len) {
    std::vector<uint8_t> v(len);
    for (unsigned i = 0; i < len; ++i) v[i] = static_cast<uint8_t>(seq * 7 + i * 13 + tag * 3 + thread);
    if (len >= 6) {
        v[0] = static_cast<uint8_t>(tag);
        v[1] = static_cast<uint8_t>(thread);
        std::memcpy(&v[2], &seq, 4);
    }
    return v;
}

// A receiver that expects `per_thread` messages from each of `threads` threads of each sender
// tag: exactly once, byte exact, in order per thread. Returns 0 when all are in.
int receive_tagged(velo_ep_t* ep, std::vector<unsigned> tags, unsigned threads, uint32_t per_thread,
                   uint64_t* frags = nullptr) {
    std::map<std::pair<unsigned, unsigned>, uint32_t> next;
    const uint64_t total = tags.size() * threads * static_cast<uint64_t>(per_thread);
    for (uint64_t got = 0; got < total; ++got) {
        velo_msg_t m;
        int n = velo_wait(ep, &m, 60000);
        CHECK(n >= 6, "velo_wait: %d (%s) after %llu of %llu", n, velo_strerror(n), (unsigned long long)got,
              (unsigned long long)total);
        unsigned tag = m.data[0], th = m.data[1];
        uint32_t seq;
        std::memcpy(&seq, &m.data[2], 4);
        CHECK(std::find(tags.begin(), tags.end(), tag) != tags.end() && th < threads, "unknown sender %u/%u", tag, th);
        uint32_t& nx = next[{tag, th}];
        CHECK(seq == nx, "sender %u thread %u: seq %u, expected %u (lost, duplicated or reordered)", tag, th, seq, nx);
        auto want = tagged(tag, th, seq, static_cast<unsigned>(n));
        CHECK(std::memcmp(m.data, want.data(), static_cast<size_t>(n)) == 0, "bytes differ: sender %u seq %u", tag,
              seq);
        ++nx;
    }
    if (frags) {
        velo_stats_t st;
        velo_stats(ep, &st);
        *frags = st.frags_rx;
    }
    return 0;
}

// A sender process: `threads` threads on one connection, `per_thread` messages each.
int send_tagged(velo_ep_t* ep, velo_conn_t* c, unsigned tag, unsigned threads, uint32_t per_thread, uint64_t seed) {
    std::atomic<int> bad{0};
    std::vector<std::thread> th;
    for (unsigned t = 0; t < threads; ++t)
        th.emplace_back([&, t] {
            std::mt19937 rng(static_cast<uint32_t>(seed * 100 + t));
            for (uint32_t i = 0; i < per_thread; ++i) {
                unsigned len = 6 + rng() % 59;
                auto b = tagged(tag, t, i, len);
                int r;
                while ((r = velo_send(c, b.data(), len)) == -EAGAIN) sched_yield();
                if (r) {
                    std::fprintf(stderr, "send: %s\n", velo_strerror(r));
                    ++bad;
                    return;
                }
            }
        });
    for (auto& x : th) x.join();
    (void)ep;
    return bad ? 1 : 0;
}

}  // namespace

// Ping-pong between two processes on the two nodes: payloads of every length come back
// unchanged, and the simulated cycle count of a round is the same every round (the fabric
// holds simulated time while the woken client reacts).
TEST(Fabric, pingpong) {
    FabricProc f({"--sync-timeout-ms", "20000"});
    const int N = 64;
    int pipefd[2];
    ASSERT_EQ(pipe(pipefd), 0);
    auto side = [&](int rank) {
        return spawn([&, rank] {
            velo_ep_t* ep;
            int r = open_ep(f, rank, 3, &ep);
            CHECK(r == 0, "open: %s", velo_strerror(r));
            velo_conn_t* c;
            r = connect_to(ep, {static_cast<uint32_t>(1 - rank), 3}, &c);
            CHECK(r == 0, "connect: %s", velo_strerror(r));
            std::vector<uint64_t> rounds;
            for (int i = 0; i < N; ++i) {
                unsigned len = 1 + static_cast<unsigned>(i) % 64;
                velo_msg_t m;
                if (rank == 0) {
                    uint64_t t0;
                    velo_clock(ep, &t0, nullptr);
                    auto b = tagged(0, 0, static_cast<uint32_t>(i), len);
                    r = send_retry(ep, c, b.data(), len);
                    CHECK(r == 0, "send: %s", velo_strerror(r));
                    int n = velo_wait(ep, &m, 60000);
                    CHECK(n == static_cast<int>(len), "round %d: got %d (%s)", i, n, velo_strerror(n));
                    CHECK(std::memcmp(m.data, b.data(), len) == 0, "round %d: bytes differ", i);
                    CHECK(m.src_node == 1 && m.src_vpid == 3, "source %d/%d", m.src_node, m.src_vpid);
                    uint64_t t1, rx;
                    velo_clock(ep, &t1, &rx);
                    CHECK(rx > t0 && t1 >= rx, "clock: t0 %llu rx %llu now %llu", (unsigned long long)t0,
                          (unsigned long long)rx, (unsigned long long)t1);
                    if (len == 8) rounds.push_back(rx - t0);
                } else {
                    int n = velo_wait(ep, &m, 60000);
                    CHECK(n == static_cast<int>(len), "round %d: got %d (%s)", i, n, velo_strerror(n));
                    CHECK(m.src_node == 0 && m.src_vpid == 3, "source %d/%d", m.src_node, m.src_vpid);
                    r = send_retry(ep, c, m.data, static_cast<size_t>(n));
                    CHECK(r == 0, "send: %s", velo_strerror(r));
                }
            }
            if (rank == 0) {
                CHECK(!rounds.empty(), "no 8-byte rounds");
                for (uint64_t x : rounds)
                    CHECK(x == rounds[0], "round trips of %llu and %llu cycles", (unsigned long long)x,
                          (unsigned long long)rounds[0]);
                CHECK(rounds[0] > 10 && rounds[0] < 1000, "round trip %llu cycles", (unsigned long long)rounds[0]);
                uint64_t rt = rounds[0];
                if (write(pipefd[1], &rt, sizeof rt) != sizeof rt) return 1;
            }
            return velo_close(ep) == 0 ? 0 : 1;
        });
    };
    pid_t a = side(0), b = side(1);
    EXPECT_EQ(join(a), 0);
    EXPECT_EQ(join(b), 0);
    uint64_t rt = 0;
    ASSERT_EQ(read(pipefd[0], &rt, sizeof rt), static_cast<ssize_t>(sizeof rt));
    std::printf("8-byte round trip: %llu cycles (half: %.1f)\n", static_cast<unsigned long long>(rt), rt / 2.0);
    close(pipefd[0]);
    close(pipefd[1]);
    EXPECT_TRUE(f.alive());
    EXPECT_EQ(f.stop(), 0);
}

// Three processes with 8 sender threads each send to one receiver (two on the other node, one
// on the receiver's own node through its NIC's switch).
TEST(Fabric, many_to_one) {
    FabricProc f;
    const unsigned T = 8;
    const uint32_t N = 150;
    pid_t r = spawn([&] {
        velo_ep_t* ep;
        int rc = open_ep(f, 1, 5, &ep);
        CHECK(rc == 0, "open: %s", velo_strerror(rc));
        rc = receive_tagged(ep, {1, 2, 3}, T, N);
        velo_close(ep);
        return rc;
    });
    std::vector<pid_t> s;
    for (unsigned k = 1; k <= 3; ++k)
        s.push_back(spawn([&, k] {
            velo_ep_t* ep;
            int rc = open_ep(f, k == 3 ? 1 : 0, -1, &ep);
            CHECK(rc == 0, "open: %s", velo_strerror(rc));
            velo_conn_t* c;
            rc = connect_to(ep, {1, 5}, &c);
            CHECK(rc == 0, "connect: %s", velo_strerror(rc));
            rc = send_tagged(ep, c, k, T, N, k);
            velo_close(ep);
            return rc;
        }));
    for (pid_t p : s) EXPECT_EQ(join(p), 0);
    EXPECT_EQ(join(r), 0);
    EXPECT_EQ(f.stop(), 0);
}

// The fabric flushes 30 % of the stores in two pieces, with other threads' stores between:
// every message still arrives exactly once and byte exact, and fragments did occur.
// 4 threads x 250 tagged messages of random lengths through a fabric that splits stores on
// purpose; every message arrives exactly once, byte-exact, in order per thread.
void partial_flush(const std::vector<std::string>& args) {
    FabricProc f(args);
    const unsigned T = 4;
    const uint32_t N = 250;
    int pfd[2];
    ASSERT_EQ(pipe(pfd), 0);
    pid_t r = spawn([&] {
        velo_ep_t* ep;
        int rc = open_ep(f, 0, 2, &ep);
        CHECK(rc == 0, "open: %s", velo_strerror(rc));
        uint64_t frags = 0;
        rc = receive_tagged(ep, {9}, T, N, &frags);
        if (write(pfd[1], &frags, sizeof frags) != sizeof frags) return 1;
        velo_close(ep);
        return rc;
    });
    pid_t s = spawn([&] {
        velo_ep_t* ep;
        int rc = open_ep(f, 1, -1, &ep);
        CHECK(rc == 0, "open: %s", velo_strerror(rc));
        velo_conn_t* c;
        rc = connect_to(ep, {0, 2}, &c);
        CHECK(rc == 0, "connect: %s", velo_strerror(rc));
        rc = send_tagged(ep, c, 9, T, N, 3);
        velo_close(ep);
        return rc;
    });
    EXPECT_EQ(join(s), 0);
    EXPECT_EQ(join(r), 0);
    uint64_t frags = 0;
    ASSERT_EQ(read(pfd[0], &frags, sizeof frags), static_cast<ssize_t>(sizeof frags));
    // about 0.3 * 1000 messages split, each into two fragments
    EXPECT_GT(frags, 200u);
    std::printf("fragments recombined: %llu\n", static_cast<unsigned long long>(frags));
    close(pfd[0]);
    close(pfd[1]);
    EXPECT_EQ(f.stop(), 0);
}

// cut between two quadword stores (what an interrupted write-combining buffer emits)
TEST(Fabric, partial_flush) {
    partial_flush({"--split-rate", "0.3", "--seed", "7"});
}

// cut at any byte: fragments start at offsets that are not quadword aligned (the link frames the
// pad bytes in front of them) and still arrive byte-exact
TEST(Fabric, partial_flush_bytes) {
    partial_flush({"--split-rate", "0.5", "--split-bytes", "--seed", "11"});
}

// A receiver with a small ring stops reading: the sender gets exactly its credit window in,
// then -EAGAIN (nothing dropped, nothing overwritten, no CPU blocked); after the receiver
// drains, the stream continues and everything arrives in order.
TEST(Fabric, mailbox_full_drain) {
    FabricProc f;
    int to_s[2], to_r[2];
    ASSERT_EQ(pipe(to_s), 0);
    ASSERT_EQ(pipe(to_r), 0);
    const uint32_t N = 600;
    pid_t r = spawn([&] {
        velo_ep_t* ep;
        int rc = open_ep(f, 1, 4, &ep, 6);  // 64 lines
        CHECK(rc == 0, "open: %s", velo_strerror(rc));
        velo_info_t info;
        velo_info(ep, &info);
        CHECK(info.ring_lines == 64, "ring of %u lines", info.ring_lines);
        uint32_t w = info.credit_lines;
        if (write(to_s[1], &w, 4) != 4) return 1;
        // answer the sender's connection request until it says it is connected, then stop reading
        for (;;) {
            velo_msg_t m;
            int n = velo_wait(ep, &m, 10);
            CHECK(n == -ETIMEDOUT, "unexpected mail: %d", n);
            pollfd pf{to_r[0], POLLIN, 0};
            if (poll(&pf, 1, 0) == 1) break;
        }
        char go;
        if (read(to_r[0], &go, 1) != 1 || go != 'c') return 1;
        if (write(to_s[1], "p", 1) != 1) return 1;              // not reading from now on
        if (read(to_r[0], &go, 1) != 1 || go != 'g') return 1;  // the sender is stuck at its credit limit
        return (receive_tagged(ep, {4}, 1, N) || velo_close(ep)) ? 1 : 0;
    });
    pid_t s = spawn([&] {
        uint32_t window;
        if (read(to_s[0], &window, 4) != 4) return 1;
        velo_ep_t* ep;
        int rc = open_ep(f, 0, -1, &ep);
        CHECK(rc == 0, "open: %s", velo_strerror(rc));
        velo_conn_t* c;
        rc = connect_to(ep, {1, 4}, &c);
        CHECK(rc == 0, "connect: %s", velo_strerror(rc));
        if (write(to_r[1], "c", 1) != 1) return 1;
        char p;
        if (read(to_s[0], &p, 1) != 1 || p != 'p') return 1;
        uint32_t i = 0;
        for (; i < N; ++i) {
            auto b = tagged(4, 0, i, 40);
            rc = velo_send(c, b.data(), b.size());
            if (rc == -EAGAIN) break;
            CHECK(rc == 0, "send: %s", velo_strerror(rc));
        }
        CHECK(i == window, "sent %u one-line messages into a window of %u lines", i, window);
        // the ring stays full while nobody reads
        for (int k = 0; k < 200; ++k) {
            auto b = tagged(4, 0, i, 40);
            rc = velo_send(c, b.data(), b.size());
            CHECK(rc == -EAGAIN, "send into a full mailbox gave %d", rc);
            usleep(500);
        }
        if (write(to_r[1], "g", 1) != 1) return 1;
        for (; i < N; ++i) {
            auto b = tagged(4, 0, i, 40);
            rc = send_retry(nullptr, c, b.data(), b.size());
            CHECK(rc == 0, "send: %s", velo_strerror(rc));
        }
        velo_stats_t st;
        velo_stats(ep, &st);
        CHECK(st.credit_msgs_rx > 5, "credit returns: %llu", (unsigned long long)st.credit_msgs_rx);
        return velo_close(ep);
    });
    EXPECT_EQ(join(s), 0);
    EXPECT_EQ(join(r), 0);
    EXPECT_EQ(f.stop(), 0);
}

// A sender is killed mid-stream: the fabric survives, tears its endpoint down (its vpid can be
// opened again), and another sender's stream to the same receiver completes.
TEST(Fabric, client_killed) {
    FabricProc f;
    const uint32_t N = 1500;
    int pfd[2];
    ASSERT_EQ(pipe(pfd), 0);
    pid_t r = spawn([&] {
        velo_ep_t* ep;
        int rc = open_ep(f, 1, 6, &ep);
        CHECK(rc == 0, "open: %s", velo_strerror(rc));
        uint32_t from_victim = 0, next = 0;
        bool told = false;
        while (next < N) {
            velo_msg_t m;
            int n = velo_wait(ep, &m, 60000);
            CHECK(n >= 6, "wait: %s", velo_strerror(n));
            uint32_t seq;
            std::memcpy(&seq, &m.data[2], 4);
            if (m.data[0] == 66) {  // the victim
                ++from_victim;
                if (from_victim == 100 && !told) {
                    told = true;
                    if (write(pfd[1], "k", 1) != 1) return 1;
                }
                continue;
            }
            CHECK(m.data[0] == 77 && seq == next, "survivor: seq %u expected %u", seq, next);
            CHECK(std::memcmp(m.data, tagged(77, 0, seq, static_cast<unsigned>(n)).data(), static_cast<size_t>(n)) == 0,
                  "bytes");
            ++next;
        }
        CHECK(from_victim >= 100, "victim messages %u", from_victim);
        return velo_close(ep);
    });
    pid_t victim = spawn([&] {
        velo_ep_t* ep;
        int rc = open_ep(f, 0, 9, &ep);
        CHECK(rc == 0, "open: %s", velo_strerror(rc));
        velo_conn_t* c;
        rc = connect_to(ep, {1, 6}, &c);
        CHECK(rc == 0, "connect: %s", velo_strerror(rc));
        for (uint32_t i = 0;; ++i) {  // until killed
            auto b = tagged(66, 0, i, 48);
            while (velo_send(c, b.data(), b.size()) == -EAGAIN) sched_yield();
        }
    });
    pid_t survivor = spawn([&] {
        velo_ep_t* ep;
        int rc = open_ep(f, 0, 10, &ep);
        CHECK(rc == 0, "open: %s", velo_strerror(rc));
        velo_conn_t* c;
        rc = connect_to(ep, {1, 6}, &c);
        CHECK(rc == 0, "connect: %s", velo_strerror(rc));
        for (uint32_t i = 0; i < N; ++i) {
            auto b = tagged(77, 0, i, 8 + i % 50);
            rc = send_retry(nullptr, c, b.data(), b.size());
            CHECK(rc == 0, "send: %s", velo_strerror(rc));
            if (i % 64 == 0) usleep(200);  // let the victim interleave
        }
        return velo_close(ep);
    });
    char k;
    ASSERT_EQ(read(pfd[0], &k, 1), 1);
    kill(victim, SIGKILL);
    EXPECT_EQ(join(victim), 128 + SIGKILL);
    EXPECT_EQ(join(survivor), 0);
    EXPECT_EQ(join(r), 0);
    EXPECT_TRUE(f.alive());
    // the victim's vpid is free again (torn down), and the node works
    pid_t again = spawn([&] {
        velo_ep_t* ep = nullptr;
        int rc = -1;
        for (int i = 0; i < 2000 && rc != 0; ++i) {
            rc = open_ep(f, 0, 9, &ep);
            if (rc == -EADDRINUSE) usleep(1000);
        }
        CHECK(rc == 0, "reopen vpid 9: %s", velo_strerror(rc));
        return velo_close(ep);
    });
    EXPECT_EQ(join(again), 0);
    close(pfd[0]);
    close(pfd[1]);
    EXPECT_EQ(f.stop(), 0);
}

// Every bad input gets its documented error.
TEST(Fabric, bad_inputs) {
    FabricProc f;
    pid_t p = spawn([&] {
        velo_ep_t *ep, *peer, *dup;
        int rc = open_ep(f, 0, 1, &ep);
        CHECK(rc == 0, "open: %s", velo_strerror(rc));
        rc = open_ep(f, 1, 1, &peer);
        CHECK(rc == 0, "open: %s", velo_strerror(rc));
        CHECK(open_ep(f, 0, 1, &dup) == -EADDRINUSE, "vpid in use");
        CHECK(open_ep(f, 5, -1, &dup) == -EADDRNOTAVAIL, "node 5 of a pair");
        CHECK(open_ep(f, 0, 200, &dup) == -EINVAL, "vpid in the control half");
        velo_conn_t* c;
        // unconnected destinations
        CHECK((rc = velo_connect(ep, {1, 77}, 0, &c)) == -ECONNREFUSED, "nobody at 1/77: %d", rc);
        CHECK((rc = velo_connect(ep, {3, 1}, 0, &c)) == -EADDRNOTAVAIL, "no node 3: %d", rc);
        CHECK((rc = velo_connect(ep, {1, 129}, 0, &c)) == -EINVAL, "control vpid: %d", rc);
        CHECK((rc = velo_connect(ep, {1, 1}, VELO_CONNECT_NOWAIT, &c)) == 0, "connect: %d", rc);
        uint8_t b[100] = {1, 2, 3};
        velo_msg_t m;
        // answered once the peer reads
        int tries = 0;
        while ((rc = velo_send(c, b, 8)) == -EAGAIN && tries++ < 100000) {
            velo_poll(peer, &m);
            sched_yield();
        }
        CHECK(rc == 0, "send: %s", velo_strerror(rc));
        CHECK(velo_wait(peer, &m, 10000) == 8, "message");
        CHECK(velo_send(c, b, 0) == -EINVAL, "length 0");
        std::vector<uint8_t> huge((1u << 20) + 1);  // beyond send_max (the destination's area slot)
        CHECK(velo_send(c, huge.data(), huge.size()) == -EMSGSIZE, "length 1 MiB + 1");
        CHECK(velo_send(c, nullptr, 4) == -EINVAL, "NULL");
        CHECK(velo_disconnect(c) == 0, "disconnect");
        CHECK(velo_send(c, b, 8) == -ENOTCONN, "send after disconnect");
        CHECK(velo_close(ep) == 0, "close");
        CHECK(velo_send(c, b, 8) == -EBADF, "send on a closed endpoint");
        CHECK(velo_poll(ep, &m) == -EBADF, "poll on a closed endpoint");
        CHECK(velo_close(ep) == -EBADF, "close twice");
        velo_open_attr_t a;
        velo_open_attr_init(&a);
        a.device = "fabric-please";
        CHECK(velo_open(&a, &dup) == -EINVAL, "unknown device string");
        CHECK(velo_close(peer) == 0, "close");
        return 0;
    });
    EXPECT_EQ(join(p), 0);
    // fabric absent: the socket is gone with the fabric
    std::string dev = f.device();
    EXPECT_EQ(f.stop(), 0);
    velo_open_attr_t a;
    velo_open_attr_init(&a);
    a.device = dev.c_str();
    velo_ep_t* ep = nullptr;
    EXPECT_EQ(velo_open(&a, &ep), -ENODEV);
}

// One fabric per socket: a second one refuses to start and the first keeps serving.
TEST(Fabric, second_fabric_refused) {
    FabricProc f;
    FabricProc g({}, false);
    g.sock = f.sock;
    int st = 0;
    EXPECT_FALSE(g.start({}, &st));
    EXPECT_EQ(st, 2);
    EXPECT_TRUE(f.alive());
    pid_t p = spawn([&] {
        velo_ep_t* ep;
        int rc = open_ep(f, 0, -1, &ep);
        CHECK(rc == 0, "open after the refused second fabric: %s", velo_strerror(rc));
        return velo_close(ep);
    });
    EXPECT_EQ(join(p), 0);
    EXPECT_EQ(f.stop(), 0);
}

namespace {
long cpu_ticks(pid_t p) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/stat", p);
    FILE* fp = std::fopen(path, "r");
    if (!fp) return -1;
    char buf[1024];
    size_t n = std::fread(buf, 1, sizeof buf - 1, fp);
    std::fclose(fp);
    buf[n] = 0;
    const char* s = std::strrchr(buf, ')');
    long ut = 0, st = 0;
    // fields after the command: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    std::sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &ut, &st);
    return ut + st;
}
}  // namespace

// An idle fabric sleeps (no CPU burnt); SIGINT and SIGTERM end it cleanly (status 0, socket
// and lock file removed), also with a client attached.
TEST(Fabric, signals_and_idle) {
    for (int sig : {SIGINT, SIGTERM}) {
        FabricProc f;
        int pfd[2];
        ASSERT_EQ(pipe(pfd), 0);
        pid_t c = spawn([&] {
            velo_ep_t* ep;
            int rc = open_ep(f, 0, -1, &ep);
            CHECK(rc == 0, "open: %s", velo_strerror(rc));
            if (write(pfd[1], "o", 1) != 1) return 1;
            velo_msg_t m;
            rc = velo_wait(ep, &m, 60000);  // the fabric goes away meanwhile
            CHECK(rc == -EPIPE, "wait while the fabric exits: %d (%s)", rc, velo_strerror(rc));
            return 0;
        });
        char x;
        ASSERT_EQ(read(pfd[0], &x, 1), 1);
        // idle: wait for the quiet period (4096 cycles), then it must sleep
        long t0 = -1, t1 = -1;
        for (int i = 0; i < 50; ++i) {
            usleep(100000);
            t1 = cpu_ticks(f.pid);
            if (t0 >= 0 && t1 == t0) break;
            t0 = t1;
        }
        EXPECT_EQ(t1, t0) << "the idle fabric keeps using CPU time";
        EXPECT_EQ(f.stop(sig), 0);
        struct stat sb;
        EXPECT_NE(stat(f.sock.c_str(), &sb), 0) << "socket left behind";
        EXPECT_NE(stat((f.sock + ".lock").c_str(), &sb), 0) << "lock file left behind";
        EXPECT_EQ(join(c), 0);
        close(pfd[0]);
        close(pfd[1]);
    }
}

// The C++ layer: RAII endpoint and connection, string_view sends, exceptions for errors, false
// for "nothing yet".
TEST(Fabric, cxx_layer) {
    FabricProc f;
    pid_t p = spawn([&] {
        try {
            velo::Endpoint a(f.device(), 0, 7), b(f.device(), 1, 7);
            CHECK(a.addr().node == 0 && a.addr().vpid == 7, "address");
            velo::Connection c = a.connect({1, 7}, VELO_CONNECT_NOWAIT);
            velo::Message m;
            while (!c.send(std::string_view("hello, node 1"))) b.poll(m);  // b answers the request
            CHECK(b.wait(m, std::chrono::seconds(30)), "no message");
            CHECK(m.str() == "hello, node 1" && m.source().node == 0 && m.source().vpid == 7, "got %s",
                  m.str().c_str());
            CHECK(!b.poll(m), "a second message");
            const uint32_t words[4] = {1, 2, 3, 4};
            CHECK(c.send(words, 4), "typed send");
            m = b.wait();
            CHECK(m.size() == 16 && std::memcmp(m.data(), words, 16) == 0, "typed payload");
            const std::string longer(1000, 'L');  // a train: one message at the receiver
            CHECK(c.send(longer), "1000 bytes");
            m = b.wait();
            CHECK(m.size() == 1000 && m.m.len == 0 && m.str() == longer, "long message: %zu", m.size());
            bool threw = false;
            try {
                c.send(std::string((1u << 20) + 1, 'x'));
            } catch (const velo::Error& e) {
                threw = e.code().value() == EMSGSIZE;
            }
            CHECK(threw, "1 MiB + 1 bytes must throw EMSGSIZE");
            threw = false;
            try {
                velo::Endpoint bad("no-such-device");
            } catch (const velo::Error& e) {
                threw = e.code().value() == EINVAL;
            }
            CHECK(threw, "an unknown device must throw EINVAL");
            c.reset();
            CHECK(!c, "reset connection");
        } catch (const velo::Error& e) {
            std::fprintf(stderr, "unexpected: %s\n", e.what());
            return 1;
        }
        return 0;
    });
    EXPECT_EQ(join(p), 0);
    EXPECT_EQ(f.stop(), 0);
}
