// Fabric tests of velo_send of more than 64 bytes (docs/api.md "Messages longer than 64 bytes"):
// trains of VELO messages up to the crossover, RMA puts into the receiver's area above it, both
// delivered by velo_poll as one message, in order with the sender's short messages. Processes on
// a velo-fabric, checks on bytes, order, sources and the library's counters. Random sizes are
// seeded: the seed is printed, SEED=<n> replays it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "fabric_test.hpp"
#include "velo/velo.h"

namespace {

using namespace velo_fabric_test;

int connect_to(velo_ep_t* ep, velo_addr_t dst, velo_conn_t** c, unsigned flags = 0) {
    for (int i = 0; i < 60000; ++i) {
        int r = velo_connect(ep, dst, flags, c);
        if (r != -ECONNREFUSED) return r;
        usleep(1000);
    }
    return -ETIMEDOUT;
}

// The bytes of message `seq` of sender `tag` (length len): the header [tag][seq 32] when it fits.
std::vector<uint8_t> pattern(unsigned tag, uint32_t seq, size_t len) {
    std::vector<uint8_t> v(len);
    uint32_t x = seq * 2654435761u + tag;
    for (size_t i = 0; i < len; ++i) {
        x = x * 1103515245u + 12345u;
        v[i] = static_cast<uint8_t>(x >> 16);
    }
    if (len >= 5) {
        v[0] = static_cast<uint8_t>(tag);
        std::memcpy(&v[1], &seq, 4);
    }
    return v;
}

// Sizes of a random mix: short, trains, around the crossover and the train limit, long puts.
std::vector<size_t> sizes_for(uint64_t seed, unsigned n, size_t max) {
    std::mt19937_64 rng(seed);
    std::vector<size_t> v;
    const size_t corner[] = {65, 100, 1023, 1024, 1025, 1753, 1754, 4096, 65536, max};
    for (size_t s : corner)
        if (s <= max) v.push_back(s);
    while (v.size() < n) {
        switch (rng() % 4) {
            case 0:
                v.push_back(5 + rng() % 60);
                break;
            case 1:
                v.push_back(65 + rng() % 1700);
                break;
            case 2:
                v.push_back(1754 + rng() % 30000);
                break;
            default:
                v.push_back(5 + rng() % (max / 4));
                break;
        }
    }
    std::shuffle(v.begin(), v.end(), rng);
    return v;
}

// Send, reading (and checking) our own endpoint while the destination has no room.
struct Peer {
    velo_ep_t* ep = nullptr;
    velo_conn_t* c = nullptr;
    unsigned tag = 0, from_tag = 0;
    uint32_t rx_seq = 0;
    std::vector<size_t> rx_sizes;  // what the other side sends, in order
    int bad = 0;

    int check(const velo_msg_t& m, int n) {
        CHECK(rx_seq < rx_sizes.size(), "message %u beyond the %zu expected", rx_seq, rx_sizes.size());
        const size_t want = rx_sizes[rx_seq];
        CHECK(n == static_cast<int>(want) && velo_msg_size(&m) == want, "message %u: %d bytes, expected %zu (%s)",
              rx_seq, n, want, n < 0 ? velo_strerror(n) : "");
        CHECK((want <= 64) == (m.len != 0), "message %u of %zu bytes: len %u", rx_seq, want, m.len);
        auto b = pattern(from_tag, rx_seq, want);
        CHECK(std::memcmp(velo_msg_bytes(&m), b.data(), want) == 0, "message %u (%zu bytes): bytes differ", rx_seq,
              want);
        ++rx_seq;
        return 0;
    }
    // Open vpid `vpid` on node `rank` and connect to the same vpid on the other node of the pair.
    int open_pair(const FabricProc& f, int rank, int vpid, unsigned flags = 0) {
        int r = open_ep(f, rank, vpid, &ep);
        CHECK(r == 0, "open: %s", velo_strerror(r));
        r = connect_to(ep, {static_cast<uint32_t>(1 - rank), static_cast<uint32_t>(vpid)}, &c, flags);
        CHECK(r == 0, "connect: %s", velo_strerror(r));
        return 0;
    }
    // The receiver's end: tell the sender everything is in, linger until it closes, close.
    int ack_and_close() {
        uint8_t ack = 1;
        CHECK(velo_send(c, &ack, 1) == 0, "ack");
        velo_msg_t m;
        velo_wait(ep, &m, 2000);
        return velo_close(ep) == 0 ? 0 : 1;
    }
    int recv_some(int timeout_ms) {
        velo_msg_t m;
        int n = velo_wait(ep, &m, timeout_ms);
        if (n == -ETIMEDOUT) return 0;
        CHECK(n > 0, "velo_wait: %s", velo_strerror(n));
        return check(m, n);
    }
    int send(uint32_t seq, size_t len) {
        auto b = pattern(tag, seq, len);
        for (;;) {
            int r = velo_send(c, b.data(), len);
            if (r == 0) return 0;
            CHECK(r == -EAGAIN, "send %u (%zu bytes): %s", seq, len, velo_strerror(r));
            velo_msg_t m;
            int n = velo_poll(ep, &m);
            if (n > 0 && check(m, n)) return 1;
            if (n <= 0) sched_yield();
        }
    }
};

// Both directions at once (each process sends its list while it receives the other's), then the
// counters: every message > 64 B went by train or by put as the crossover says.
void exchange(unsigned n, size_t max, uint64_t seed) {
    FabricProc f({"--sync-timeout-ms", "60000"});
    auto mine = [&](int rank) { return sizes_for(seed + static_cast<uint64_t>(rank), n, max); };
    auto side = [&](int rank) {
        return spawn([&, rank] {
            Peer p;
            if (p.open_pair(f, rank, 4)) return 1;
            int r;
            velo_info_t info;
            velo_info(p.ep, &info);
            CHECK(info.send_max == 1u << 20 && info.crossover > 64 && info.train_max > 1000,
                  "info: send_max %u crossover %u train_max %u", info.send_max, info.crossover, info.train_max);
            p.tag = static_cast<unsigned>(rank) + 1;
            p.from_tag = static_cast<unsigned>(1 - rank) + 1;
            p.rx_sizes = mine(1 - rank);
            const auto tx = mine(rank);
            for (uint32_t i = 0; i < tx.size(); ++i)
                if (p.send(i, tx[i])) return 1;
            while (p.rx_seq < p.rx_sizes.size())
                if (p.recv_some(60000)) return 1;
            uint64_t trains = 0, large = 0;
            for (size_t s : tx) {
                trains += s > 64 && s <= info.crossover;
                large += s > info.crossover;
            }
            velo_stats_t st;
            velo_stats(p.ep, &st);
            CHECK(st.trains_tx == trains && st.large_tx == large, "sent %llu trains, %llu puts; expected %llu, %llu",
                  (unsigned long long)st.trains_tx, (unsigned long long)st.large_tx, (unsigned long long)trains,
                  (unsigned long long)large);
            uint64_t rtrains = 0, rlarge = 0;
            for (size_t s : p.rx_sizes) {
                rtrains += s > 64 && s <= info.crossover;
                rlarge += s > info.crossover;
            }
            CHECK(st.trains_rx == rtrains && st.large_rx == rlarge, "got %llu trains, %llu puts; expected %llu, %llu",
                  (unsigned long long)st.trains_rx, (unsigned long long)st.large_rx, (unsigned long long)rtrains,
                  (unsigned long long)rlarge);
            CHECK(st.ctl_bad == 0 && st.rma_nq_bad == 0, "ctl_bad %llu rma_nq_bad %llu", (unsigned long long)st.ctl_bad,
                  (unsigned long long)st.rma_nq_bad);
            // both sides done before either closes (a close resets the other's connection)
            const uint8_t done = 0xD0;
            while ((r = velo_send(p.c, &done, 1)) == -EAGAIN) sched_yield();
            CHECK(r == 0, "done: %s", velo_strerror(r));
            velo_msg_t m;
            int k = velo_wait(p.ep, &m, 60000);
            CHECK(k == 1 && m.data[0] == 0xD0, "done message: %d", k);
            return velo_close(p.ep) == 0 ? 0 : 1;
        });
    };
    pid_t a = side(0), b = side(1);
    EXPECT_EQ(join(a), 0);
    EXPECT_EQ(join(b), 0);
    EXPECT_TRUE(f.alive());
    EXPECT_EQ(f.stop(), 0);
}

}  // namespace

// Both directions at once: a random mix of 5 B .. 256 KiB, and the corners up to 1 MiB.
TEST(FabricLong, random_mix) {
    exchange(50, 1u << 20, test_seed());
}

// The crossover by environment: 0 sends every message > 64 B by put, a large value every one a
// train fits by train; above the train limit always by put; beyond send_max -EMSGSIZE.
TEST(FabricLong, crossover_override) {
    for (const char* x : {"0", "100000"}) {
        FabricProc f;
        auto side = [&](int rank) {
            return spawn([&, rank] {
                setenv("VELO_SEND_CROSSOVER", x, 1);
                setenv("VELO_SEND_MAX", "65536", 1);
                Peer p;
                if (p.open_pair(f, rank, 5)) return 1;
                velo_info_t info;
                velo_info(p.ep, &info);
                CHECK(info.send_max == 65536, "send_max %u", info.send_max);
                const std::vector<size_t> s = {65, 200, 1000, info.train_max, info.train_max + 1u, 65536};
                p.tag = 9;
                p.from_tag = 9;
                p.rx_sizes = s;
                if (rank == 0) {
                    for (uint32_t i = 0; i < s.size(); ++i)
                        if (p.send(i, s[i])) return 1;
                    std::vector<uint8_t> big(65537);
                    CHECK(velo_send(p.c, big.data(), big.size()) == -EMSGSIZE, "65537 bytes: not -EMSGSIZE");
                    velo_stats_t st;
                    velo_stats(p.ep, &st);
                    const uint64_t want_large = x[0] == '0' ? 6 : 2;
                    CHECK(st.large_tx == want_large && st.trains_tx == 6 - want_large,
                          "crossover %s: %llu puts %llu trains", x, (unsigned long long)st.large_tx,
                          (unsigned long long)st.trains_tx);
                    velo_msg_t m;
                    int n = velo_wait(p.ep, &m, 60000);  // the receiver's "all in"
                    CHECK(n == 1, "ack: %d", n);
                    return velo_close(p.ep) == 0 ? 0 : 1;
                }
                while (p.rx_seq < s.size())
                    if (p.recv_some(60000)) return 1;
                return p.ack_and_close();
            });
        };
        pid_t a = side(0), b = side(1);
        EXPECT_EQ(join(a), 0) << "crossover " << x;
        EXPECT_EQ(join(b), 0) << "crossover " << x;
        EXPECT_EQ(f.stop(), 0);
    }
}

// Without a receive area (VELO_CONNECT_SMALL, or a receiver with VELO_SEND_MAX=0) trains still
// go, longer messages fail with -EMSGSIZE and nothing arrives for them.
TEST(FabricLong, no_area) {
    for (int mode = 0; mode < 2; ++mode) {
        FabricProc f;
        auto side = [&](int rank) {
            return spawn([&, rank] {
                if (mode == 1 && rank == 1) setenv("VELO_SEND_MAX", "0", 1);
                Peer p;
                if (p.open_pair(f, rank, 6, mode == 0 ? VELO_CONNECT_SMALL : 0)) return 1;
                velo_info_t info;
                velo_info(p.ep, &info);
                p.tag = p.from_tag = 3;
                p.rx_sizes = {info.train_max, 7};
                if (rank == 0) {
                    std::vector<uint8_t> big(info.train_max + 1u);
                    CHECK(velo_send(p.c, big.data(), big.size()) == -EMSGSIZE, "train_max + 1: not -EMSGSIZE");
                    if (p.send(0, info.train_max) || p.send(1, 7)) return 1;
                    velo_msg_t m;
                    CHECK(velo_wait(p.ep, &m, 60000) == 1, "ack");
                } else {
                    while (p.rx_seq < 2)
                        if (p.recv_some(60000)) return 1;
                    velo_stats_t st;
                    velo_stats(p.ep, &st);
                    CHECK(st.trains_rx == 1 && st.large_rx == 0 && st.ctl_bad == 0, "trains %llu large %llu bad %llu",
                          (unsigned long long)st.trains_rx, (unsigned long long)st.large_rx,
                          (unsigned long long)st.ctl_bad);
                    return p.ack_and_close();
                }
                return velo_close(p.ep) == 0 ? 0 : 1;
            });
        };
        pid_t a = side(0), b = side(1);
        EXPECT_EQ(join(a), 0) << "mode " << mode;
        EXPECT_EQ(join(b), 0) << "mode " << mode;
        EXPECT_EQ(f.stop(), 0);
    }
}

// A delivered long message stays valid until the receiver's next receive call: with both area
// slots in use (one held by the receiver) the sender gets -EAGAIN, and the held message's bytes
// are intact; the next velo_poll releases the slot and the send goes through.
TEST(FabricLong, held_until_next_receive) {
    FabricProc f;
    int go[2], sent[2];
    ASSERT_EQ(pipe(go), 0);
    ASSERT_EQ(pipe(sent), 0);
    const size_t L = 20000;
    pid_t a = spawn([&] {
        Peer p;
        int r = open_ep(f, 0, 7, &p.ep);
        CHECK(r == 0, "open: %s", velo_strerror(r));
        r = connect_to(p.ep, {1, 7}, &p.c);
        CHECK(r == 0, "connect: %s", velo_strerror(r));
        p.tag = 1;
        CHECK(p.send(0, L) == 0, "first");
        char ch;
        CHECK(read(go[0], &ch, 1) == 1, "go");  // the receiver holds message 0
        CHECK(p.send(1, L) == 0, "second");     // the other slot
        auto b = pattern(1, 2, L);
        velo_stats_t st;
        for (int i = 0; i < 50; ++i) {
            r = velo_send(p.c, b.data(), L);
            CHECK(r == -EAGAIN, "third while both slots are taken: %d", r);
            usleep(2000);
        }
        velo_stats(p.ep, &st);
        CHECK(st.large_eagain >= 50, "large_eagain %llu", (unsigned long long)st.large_eagain);
        CHECK(write(sent[1], "s", 1) == 1, "sent");
        CHECK(p.send(2, L) == 0, "third");
        velo_msg_t m;
        CHECK(velo_wait(p.ep, &m, 60000) == 1, "ack");
        return velo_close(p.ep) == 0 ? 0 : 1;
    });
    pid_t b = spawn([&] {
        Peer p;
        int r = open_ep(f, 1, 7, &p.ep);
        CHECK(r == 0, "open: %s", velo_strerror(r));
        velo_msg_t m;
        int n = velo_wait(p.ep, &m, 60000);
        CHECK(n == static_cast<int>(L) && m.len == 0, "first: %d", n);
        CHECK(write(go[1], "g", 1) == 1, "go");
        char ch;
        CHECK(read(sent[0], &ch, 1) == 1, "sent");
        auto want = pattern(1, 0, L);
        CHECK(std::memcmp(m.ptr, want.data(), L) == 0, "the held message changed");
        p.from_tag = 1;
        p.rx_sizes = {L, L, L};
        p.rx_seq = 1;
        while (p.rx_seq < 3)
            if (p.recv_some(60000)) return 1;
        r = connect_to(p.ep, {0, 7}, &p.c);  // (only now: the sender answers from its velo_wait)
        CHECK(r == 0, "connect: %s", velo_strerror(r));
        return p.ack_and_close();
    });
    EXPECT_EQ(join(a), 0);
    EXPECT_EQ(join(b), 0);
    EXPECT_EQ(f.stop(), 0);
}

// Long messages that arrive while the receiver waits in velo_connect are kept (as copies) and
// delivered afterwards by velo_poll, in order with the short ones.
TEST(FabricLong, queued_during_connect) {
    FabricProc f;
    int connected[2], deaf[2], sent[2];
    ASSERT_EQ(pipe(connected), 0);
    ASSERT_EQ(pipe(deaf), 0);
    ASSERT_EQ(pipe(sent), 0);
    const std::vector<size_t> s = {300, 9, 50000, 70000, 12, 3000};  // (3000: above the train limit)
    pid_t a = spawn([&] {
        Peer p;
        int r = open_ep(f, 0, 8, &p.ep);
        CHECK(r == 0, "open: %s", velo_strerror(r));
        r = connect_to(p.ep, {1, 8}, &p.c);
        CHECK(r == 0, "connect: %s", velo_strerror(r));
        CHECK(write(connected[1], "c", 1) == 1, "connected");
        char ch;
        CHECK(read(deaf[0], &ch, 1) == 1, "deaf");  // the receiver no longer reads
        p.tag = 4;
        for (uint32_t i = 0; i < 4; ++i) CHECK(p.send(i, s[i]) == 0, "send %u", i);
        CHECK(write(sent[1], "s", 1) == 1, "sent");
        // the receiver's connection request comes now: velo_wait answers it
        velo_msg_t m;
        for (uint32_t i = 4; i < s.size(); ++i) {
            int k;
            while ((k = velo_send(p.c, pattern(4, i, s[i]).data(), s[i])) == -EAGAIN) velo_poll(p.ep, &m);
            CHECK(k == 0, "send %u: %s", i, velo_strerror(k));
        }
        CHECK(velo_wait(p.ep, &m, 60000) == 1, "ack");
        return velo_close(p.ep) == 0 ? 0 : 1;
    });
    pid_t b = spawn([&] {
        Peer p;
        int r = open_ep(f, 1, 8, &p.ep);
        CHECK(r == 0, "open: %s", velo_strerror(r));
        velo_msg_t m;
        char ch;
        // answer the connection request, then read nothing until everything is sent
        for (;;) {
            r = velo_wait(p.ep, &m, 20);
            CHECK(r == -ETIMEDOUT, "a message before connecting: %d", r);
            pollfd pf{connected[0], POLLIN, 0};
            if (poll(&pf, 1, 0) == 1) break;
        }
        CHECK(read(connected[0], &ch, 1) == 1, "connected");
        CHECK(write(deaf[1], "d", 1) == 1, "deaf");
        CHECK(read(sent[0], &ch, 1) == 1, "sent");
        r = connect_to(p.ep, {0, 8}, &p.c);  // reads the ring meanwhile: the four are queued
        CHECK(r == 0, "connect: %s", velo_strerror(r));
        p.from_tag = 4;
        p.rx_sizes = s;
        while (p.rx_seq < s.size())
            if (p.recv_some(60000)) return 1;
        velo_stats_t st;
        velo_stats(p.ep, &st);
        CHECK(st.large_rx == 3 && st.trains_rx == 1, "large %llu trains %llu", (unsigned long long)st.large_rx,
              (unsigned long long)st.trains_rx);
        return p.ack_and_close();
    });
    EXPECT_EQ(join(a), 0);
    EXPECT_EQ(join(b), 0);
    EXPECT_EQ(f.stop(), 0);
}
