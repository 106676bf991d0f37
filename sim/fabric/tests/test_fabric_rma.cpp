// RMA on the fabric: a velo-fabric per test, clients as real processes (fork) that use libvelo's
// RMA calls (velo_register, velo_put, velo_get, velo_rma_wait) on ordinary malloc'd memory.
// Every check is on data, order and counts; the children report failures through their exit
// status and stderr. Random sizes and alignments come from a seed that is printed; SEED=<n>
// replays a run.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fabric_test.hpp"
#include "velo/velo.h"

namespace {

using namespace velo_fabric_test;

// The key of a registration (velo_region_rkey), which the peers get with its NLA.
uint64_t rkey_of(const velo_region_t* rg) {
    uint32_t k = 0;
    velo_region_rkey(rg, &k);
    return k;
}

// Wait for the completion of kind `kind` with `cookie`; anything else is a failure.
int expect_cpl(velo_ep_t* ep, unsigned kind, uint64_t cookie, velo_rma_cpl_t* out = nullptr) {
    velo_rma_cpl_t c;
    if (next_cpl(ep, &c)) return 1;
    CHECK(c.kind == kind && c.cookie == cookie,
          "completion kind %u cookie %llu (expected kind %u cookie %llu), "
          "reason %u (%s) remote %u",
          c.kind, (unsigned long long)c.cookie, kind, (unsigned long long)cookie, c.reason,
          velo_rma_reason_str(c.reason), c.remote);
    if (out) *out = c;
    return 0;
}

const velo_addr_t kTarget = {1, 20};

// One side of a two-process test (in its child): side 1 is the target kTarget (node 1, vpid 20),
// side 0 the initiator (node 0, vpid 21); it keeps its end of link l. 0 or a check failure.
int open_side(FabricProc& f, Link& l, int side, velo_ep_t** ep) {
    l.keep(side);
    int r =
        side ? open_ep(f, static_cast<int>(kTarget.node), static_cast<int>(kTarget.vpid), ep) : open_ep(f, 0, 21, ep);
    CHECK(r == 0, "open: %s", velo_strerror(r));
    return 0;
}

// The end of a two-process test: both children succeeded, the fabric is alive and stops cleanly.
void end_pair(FabricProc& f, Link& l, pid_t ini, pid_t t) {
    l.close_all();
    EXPECT_EQ(join(ini), 0);
    EXPECT_EQ(join(t), 0);
    EXPECT_TRUE(f.alive());
    EXPECT_EQ(f.stop(), 0);
}

// The target of two sources (in its child): endpoint kTarget with a zeroed buffer of `len` bytes
// registered for remote writes, its NLA and key sent to both sources over l0 and l1. 0 or a check
// failure.
int open_target(FabricProc& f, size_t len, Link& l0, Link& l1, velo_ep_t** ep, uint8_t** buf, velo_region_t** rg,
                uint64_t* nla) {
    l0.keep(1);
    l1.keep(1);
    int r = open_ep(f, static_cast<int>(kTarget.node), static_cast<int>(kTarget.vpid), ep);
    CHECK(r == 0, "open: %s", velo_strerror(r));
    *buf = static_cast<uint8_t*>(std::calloc(1, len));
    r = velo_register(*ep, *buf, len, VELO_ACCESS_REMOTE_WRITE, nullptr, rg);
    CHECK(r == 0, "register: %s", velo_strerror(r));
    velo_region_nla(*rg, 0, nla);
    const uint64_t key = rkey_of(*rg);
    CHECK(l0.send(1, *nla, key) && l1.send(1, *nla, key), "link");
    return 0;
}

// Source s (in its child; node 0, vpid 21 + s): its endpoint and the target's NLA and key from link
// l (`other` is the other source's link, closed here). 0 or a check failure.
int open_source(FabricProc& f, unsigned s, Link& l, Link& other, velo_ep_t** ep, uint64_t* nla, uint64_t* key) {
    l.keep(0);
    other.close_all();
    int r = open_ep(f, 0, 21 + static_cast<int>(s), ep);
    CHECK(r == 0, "open: %s", velo_strerror(r));
    CHECK(l.recv(0, nla, key), "target gone");
    return 0;
}

// Start sources 0 and 1 (`source(s, link)` spawns one), then wait for them, the target `t` and
// the fabric.
template <class F>
void run_sources(FabricProc& f, pid_t t, Link& l0, Link& l1, F source) {
    pid_t s0 = source(0, l0), s1 = source(1, l1);
    l0.close_all();
    l1.close_all();
    EXPECT_EQ(join(s0), 0);
    EXPECT_EQ(join(s1), 0);
    EXPECT_EQ(join(t), 0);
    EXPECT_EQ(f.stop(), 0);
}

}  // namespace

// Puts and gets between two processes on malloc'd buffers of random sizes and alignments (1 B,
// page-crossing and random sizes up to 192 KiB): the initiator puts a random piece of its source
// buffer into a random place of the target's buffer, gets it back into another buffer at a
// random alignment and compares byte by byte, with guard bytes around the get's range; a shadow
// of the target's buffer in shared memory is compared with the target's own memory at the end
// (every byte outside the put ranges untouched).
TEST(FabricRma, put_get_random) {
    const uint64_t seed = test_seed();
    FabricProc f;
    const size_t TB = 1u << 20;  // target buffer
    auto* shadow = static_cast<uint8_t*>(mmap(nullptr, TB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(shadow, MAP_FAILED);
    fill(shadow, TB, seed ^ 0x1234);
    Link l;
    pid_t t = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 1, &ep)) return 1;
        int r;
        auto* buf = static_cast<uint8_t*>(std::malloc(TB + 3)) + 3;  // off the allocator's alignment
        fill(buf, TB, seed ^ 0x1234);
        velo_region_t* rg;
        r = velo_register(ep, buf, TB, VELO_ACCESS_REMOTE_READ | VELO_ACCESS_REMOTE_WRITE, nullptr, &rg);
        CHECK(r == 0, "register: %s", velo_strerror(r));
        uint64_t nla, key = 0;
        CHECK(velo_region_nla(rg, 0, &nla) == 0, "nla");
        key = rkey_of(rg);
        CHECK(l.send(1, nla, key), "link");
        uint64_t done;
        CHECK(l.recv(1, &done), "initiator gone");
        for (size_t i = 0; i < TB; ++i)
            CHECK(buf[i] == shadow[i], "target byte %zu: 0x%02x, expected 0x%02x", i, buf[i], shadow[i]);
        CHECK(velo_deregister(rg) == 0, "deregister");
        return velo_close(ep);
    });
    pid_t ini = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 0, &ep)) return 1;
        int r;
        uint64_t nla, key = 0;
        CHECK(l.recv(0, &nla, &key), "target gone");
        std::mt19937_64 rng(seed);
        const size_t SB = 256 << 10, G = 64;
        auto* src = static_cast<uint8_t*>(std::malloc(SB + 64));
        auto* dst = static_cast<uint8_t*>(std::malloc(SB + 64 + 2 * G));
        fill(src, SB + 64, seed ^ 0x5678);
        // the sizes: 1 B, a page crossing, then random (log-uniform up to 192 KiB)
        std::vector<size_t> sizes = {1, 2, 4096 + 17, 7, 64, 8192};
        for (int i = 0; i < 24; ++i) sizes.push_back(1 + rng() % (size_t(1) << (rng() % 18)));
        uint64_t cookie = 1;
        for (size_t len : sizes) {
            const size_t soff = rng() % (SB + 64 - len + 1);
            size_t toff = rng() % (TB - len + 1);
            if (len == 4096 + 17) toff = 4096 - 9;  // crosses pages at the target
            const size_t doff = G + rng() % 64;
            r = velo_put_buf(ep, kTarget, src + soff, nla + toff, key, len, VELO_RMA_F_REMOTE, cookie);
            CHECK(r == 0, "put %zu: %s", len, velo_strerror(r));
            if (expect_cpl(ep, VELO_RMA_KIND_REMOTE, cookie)) return 1;
            std::memcpy(shadow + toff, src + soff, len);
            ++cookie;
            std::memset(dst, 0xA5, SB + 64 + 2 * G);
            r = velo_get_buf(ep, kTarget, dst + doff, nla + toff, key, len, VELO_RMA_F_LOCAL, cookie);
            CHECK(r == 0, "get %zu: %s", len, velo_strerror(r));
            if (expect_cpl(ep, VELO_RMA_KIND_GET_DONE, cookie)) return 1;
            ++cookie;
            CHECK(std::memcmp(dst + doff, src + soff, len) == 0, "get of %zu bytes at +%zu: data differ", len, toff);
            for (size_t i = 0; i < doff; ++i) CHECK(dst[i] == 0xA5, "byte %zu before the get's range written", i);
            for (size_t i = doff + len; i < SB + 64 + 2 * G; ++i)
                CHECK(dst[i] == 0xA5, "byte %zu after the get's range written", i - doff - len);
        }
        // the whole target buffer by one get: the shadow exactly
        auto* all = static_cast<uint8_t*>(std::malloc(TB));
        r = velo_get_buf(ep, kTarget, all, nla, key, TB, VELO_RMA_F_LOCAL, 999);
        CHECK(r == 0, "get all: %s", velo_strerror(r));
        if (expect_cpl(ep, VELO_RMA_KIND_GET_DONE, 999)) return 1;
        for (size_t i = 0; i < TB; ++i) CHECK(all[i] == shadow[i], "target byte %zu differs from the shadow", i);
        CHECK(l.send(0, 1), "link");
        return velo_close(ep);
    });
    l.close_all();
    EXPECT_EQ(join(ini), 0);
    EXPECT_EQ(join(t), 0);
    EXPECT_TRUE(f.alive());
    EXPECT_EQ(f.stop(), 0);
    munmap(shadow, TB);
}

// One 8 MiB put between malloc'd buffers, notified: the target sees the TARGET entry with the
// right cookie, length, NLA and source after all the data, and every byte is right (the bytes
// around it untouched).
TEST(FabricRma, put_8MiB) {
    const uint64_t seed = test_seed();
    FabricProc f;
    const size_t N = 8u << 20, G = 4096;
    Link l;
    pid_t t = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 1, &ep)) return 1;
        int r;
        auto* buf = static_cast<uint8_t*>(std::malloc(N + 2 * G + 5)) + 5;
        std::memset(buf, 0x3C, N + 2 * G);
        velo_region_t* rg;
        r = velo_register(ep, buf, N + 2 * G, VELO_ACCESS_REMOTE_WRITE, nullptr, &rg);
        CHECK(r == 0, "register: %s", velo_strerror(r));
        uint64_t nla, key = 0;
        velo_region_nla(rg, G, &nla);
        key = rkey_of(rg);
        CHECK(l.send(1, nla, key), "link");
        velo_rma_cpl_t c;
        if (expect_cpl(ep, VELO_RMA_KIND_TARGET, 77, &c)) return 1;
        CHECK(c.len == N && c.nla == nla && c.peer.node == 0 && c.peer.vpid == 21,
              "TARGET entry: len %llu nla %llx from %u/%u", (unsigned long long)c.len, (unsigned long long)c.nla,
              c.peer.node, c.peer.vpid);
        for (size_t i = 0; i < N; ++i) CHECK(buf[G + i] == pat(seed, i), "byte %zu", i);
        for (size_t i = 0; i < G; ++i) CHECK(buf[i] == 0x3C && buf[G + N + i] == 0x3C, "guard byte %zu", i);
        CHECK(l.send(1, 1), "link");
        return velo_close(ep);
    });
    pid_t ini = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 0, &ep)) return 1;
        int r;
        uint64_t nla, key = 0;
        CHECK(l.recv(0, &nla, &key), "target gone");
        auto* src = static_cast<uint8_t*>(std::malloc(N + 1)) + 1;
        fill(src, N, seed);
        uint64_t c0 = 0, c1 = 0;
        velo_clock(ep, &c0, nullptr);
        r = velo_put_buf(ep, kTarget, src, nla, key, N, VELO_RMA_F_REMOTE | VELO_RMA_F_NOTIFY, 77);
        CHECK(r == 0, "put: %s", velo_strerror(r));
        if (expect_cpl(ep, VELO_RMA_KIND_REMOTE, 77)) return 1;
        velo_clock(ep, &c1, nullptr);
        std::printf("8 MiB put: %llu cycles (%.3f bytes/cycle)\n", (unsigned long long)(c1 - c0),
                    double(N) / double(c1 - c0));
        uint64_t ok;
        CHECK(l.recv(0, &ok), "target failed");
        return velo_close(ep);
    });
    l.close_all();
    EXPECT_EQ(join(ini), 0);
    EXPECT_EQ(join(t), 0);
    EXPECT_EQ(f.stop(), 0);
}

// Notified puts: the target's TARGET completion comes after the put's data (checked when it is
// seen), with cookie, length, NLA and source; one per put, in order; a notification-only put.
TEST(FabricRma, notified_put) {
    const uint64_t seed = test_seed();
    FabricProc f;
    const size_t TB = 256 << 10;
    const int K = 12;
    Link l;
    pid_t t = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 1, &ep)) return 1;
        int r;
        auto* buf = static_cast<uint8_t*>(std::calloc(1, TB));
        velo_region_t* rg;
        r = velo_register(ep, buf, TB, VELO_ACCESS_REMOTE_WRITE, nullptr, &rg);
        CHECK(r == 0, "register: %s", velo_strerror(r));
        uint64_t nla, key = 0;
        velo_region_nla(rg, 0, &nla);
        key = rkey_of(rg);
        CHECK(l.send(1, nla, key), "link");
        for (int k = 0; k <= K; ++k) {
            velo_rma_cpl_t c;
            if (k % 2) {
                if (next_cpl(ep, &c)) return 1;
            } else {  // the way a progress loop waits: velo_idle, then the poll finds the entry
                while ((r = velo_rma_poll(ep, &c)) == -EAGAIN) {
                    uint64_t c0 = 0, c1 = 0;
                    velo_clock(ep, &c0, nullptr);
                    r = velo_idle(ep, 10000);
                    velo_clock(ep, &c1, nullptr);
                    CHECK(r == 1 || (r == 0 && c1 != c0), "velo_idle: %d (%s) at cycle %llu", r,
                          r < 0 ? velo_strerror(r) : "nothing came, the clock stands", (unsigned long long)c1);
                }
                CHECK(r == 0, "velo_rma_poll: %s", velo_strerror(r));
            }
            CHECK(c.kind == VELO_RMA_KIND_TARGET && c.cookie == 100u + k && c.peer.node == 0 && c.peer.vpid == 21,
                  "notification %d: kind %u cookie %llu from %u/%u", k, c.kind, (unsigned long long)c.cookie,
                  c.peer.node, c.peer.vpid);
            if (k == K) {
                CHECK(c.len == 0, "notification-only put: len %llu", (unsigned long long)c.len);
                break;
            }
            const size_t off = c.nla - nla, len = c.len;
            CHECK(off + len <= TB && len == (size_t(1) << (k + 4)) + k, "put %d: off %zu len %zu", k, off, len);
            for (size_t i = 0; i < len; ++i)
                CHECK(buf[off + i] == pat(seed + k, i), "put %d: byte %zu not there at its notification", k, i);
        }
        velo_rma_cpl_t c;
        CHECK(velo_rma_poll(ep, &c) == -EAGAIN, "one notification per put");
        CHECK(l.send(1, 1), "link");
        return velo_close(ep);
    });
    pid_t ini = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 0, &ep)) return 1;
        int r;
        uint64_t nla, key = 0;
        CHECK(l.recv(0, &nla, &key), "target gone");
        std::vector<std::vector<uint8_t>> bufs;
        size_t off = 3;
        for (int k = 0; k < K; ++k) {  // issued back to back, completions taken afterwards
            const size_t len = (size_t(1) << (k + 4)) + k;
            bufs.emplace_back(len);
            for (size_t i = 0; i < len; ++i) bufs.back()[i] = pat(seed + k, i);
            r = velo_put_buf(ep, kTarget, bufs.back().data(), nla + off, key, len, VELO_RMA_F_NOTIFY, 100 + k);
            CHECK(r == 0, "put %d: %s", k, velo_strerror(r));
            off += len + 5;
        }
        r = velo_put(ep, kTarget, nullptr, 0, nla, key, 0, VELO_RMA_F_NOTIFY | VELO_RMA_F_REMOTE, 100 + K);
        CHECK(r == 0, "notification-only put: %s", velo_strerror(r));
        if (expect_cpl(ep, VELO_RMA_KIND_REMOTE, 100 + K)) return 1;
        uint64_t ok;
        CHECK(l.recv(0, &ok), "target failed");
        return velo_close(ep);
    });
    l.close_all();
    EXPECT_EQ(join(ini), 0);
    EXPECT_EQ(join(t), 0);
    EXPECT_EQ(f.stop(), 0);
}

// Two source processes put into one target at once (interleaved pieces into their own halves):
// every piece's TARGET entry comes once, from the right source, after its data.
TEST(FabricRma, concurrent_puts) {
    const uint64_t seed = test_seed();
    FabricProc f;
    const size_t HALF = 128 << 10, PIECE = 8 << 10;
    const unsigned NP = HALF / PIECE;
    Link l0, l1;
    pid_t t = spawn([&] {
        velo_ep_t* ep;
        uint8_t* buf;
        velo_region_t* rg;
        uint64_t nla;
        if (open_target(f, 2 * HALF, l0, l1, &ep, &buf, &rg, &nla)) return 1;
        unsigned seen[2] = {0, 0};
        for (unsigned k = 0; k < 2 * NP; ++k) {
            velo_rma_cpl_t c;
            if (next_cpl(ep, &c)) return 1;
            CHECK(c.kind == VELO_RMA_KIND_TARGET && c.peer.node == 0 && (c.peer.vpid == 21 || c.peer.vpid == 22),
                  "kind %u from %u/%u", c.kind, c.peer.node, c.peer.vpid);
            const unsigned s = c.peer.vpid - 21;
            CHECK(c.cookie == 1000u * s + seen[s], "source %u: cookie %llu, expected %u (order)", s,
                  (unsigned long long)c.cookie, 1000u * s + seen[s]);
            CHECK(c.nla == nla + s * HALF + seen[s] * PIECE && c.len == PIECE, "source %u piece %u: nla/len", s,
                  seen[s]);
            for (size_t i = 0; i < PIECE; ++i)
                CHECK(buf[s * HALF + seen[s] * PIECE + i] == pat(seed + s, seen[s] * PIECE + i),
                      "source %u piece %u byte %zu", s, seen[s], i);
            ++seen[s];
        }
        CHECK(seen[0] == NP && seen[1] == NP, "pieces %u %u", seen[0], seen[1]);
        CHECK(l0.send(1, 1) && l1.send(1, 1), "link");
        return velo_close(ep);
    });
    auto source = [&](unsigned s, Link& l) {
        return spawn([&, s] {
            velo_ep_t* ep;
            uint64_t nla, key = 0;
            if (open_source(f, s, l, s ? l0 : l1, &ep, &nla, &key)) return 1;
            int r;
            std::vector<uint8_t> src(HALF);
            for (size_t i = 0; i < HALF; ++i) src[i] = pat(seed + s, i);
            // W puts outstanding per source (more than the NIC's 16 command tags: many_outstanding)
            const unsigned W = 4;
            unsigned issued = 0;
            for (unsigned p = 0; p < NP; ++p) {
                while (issued < NP && issued < p + W) {
                    r = velo_put_buf(ep, kTarget, src.data() + issued * PIECE, nla + s * HALF + issued * PIECE, key,
                                     PIECE, VELO_RMA_F_NOTIFY | VELO_RMA_F_REMOTE, 1000u * s + issued);
                    CHECK(r == 0, "put: %s", velo_strerror(r));
                    ++issued;
                }
                if (expect_cpl(ep, VELO_RMA_KIND_REMOTE, 1000u * s + p)) return 1;
            }
            uint64_t ok;
            CHECK(l.recv(0, &ok), "target failed");
            return velo_close(ep);
        });
    };
    run_sources(f, t, l0, l1, source);
}

// More commands outstanding on one NIC than it has command tags (16): two processes on node 0 put
// 40 pieces each into one target at once. The NIC refuses the commands beyond its tags (ERROR
// BUSY) and libvelo issues them again (rma_reissues), so every put completes once with REMOTE and
// the target's buffer is byte-exact.
TEST(FabricRma, many_outstanding) {
    const uint64_t seed = test_seed();
    FabricProc f;
    const unsigned NP = 40;
    const size_t PIECE = 6000, HALF = NP * PIECE;
    Link l0, l1;
    pid_t t = spawn([&] {
        velo_ep_t* ep;
        uint8_t* buf;
        velo_region_t* rg;
        uint64_t nla;
        if (open_target(f, 2 * HALF, l0, l1, &ep, &buf, &rg, &nla)) return 1;
        uint64_t reissues = 0;
        for (Link* l : {&l0, &l1}) {
            uint64_t done, n;
            CHECK(l->recv(1, &done, &n), "source gone");
            reissues += n;
        }
        for (unsigned s = 0; s < 2; ++s)
            for (size_t i = 0; i < HALF; ++i) CHECK(buf[s * HALF + i] == pat(seed + s, i), "source %u byte %zu", s, i);
        CHECK(reissues > 0, "no command was refused and issued again: the test did not test anything");
        std::printf("many_outstanding: %llu commands issued again\n", (unsigned long long)reissues);
        CHECK(l0.send(1, 1) && l1.send(1, 1), "link");
        velo_deregister(rg);
        return velo_close(ep);
    });
    auto source = [&](unsigned s, Link& l) {
        return spawn([&, s] {
            velo_ep_t* ep;
            uint64_t nla, key = 0;
            if (open_source(f, s, l, s ? l0 : l1, &ep, &nla, &key)) return 1;
            int r;
            std::vector<uint8_t> src(HALF);
            for (size_t i = 0; i < HALF; ++i) src[i] = pat(seed + s, i);
            velo_region_t* rs;
            r = velo_register(ep, src.data(), HALF, VELO_ACCESS_LOCAL_READ, nullptr, &rs);
            CHECK(r == 0, "register: %s", velo_strerror(r));
            for (unsigned p = 0; p < NP; ++p) {
                r = velo_put(ep, kTarget, rs, p * PIECE, nla + s * HALF + p * PIECE, key, PIECE, VELO_RMA_F_REMOTE,
                             1000u * s + p);
                CHECK(r == 0, "put %u: %s", p, velo_strerror(r));
            }
            std::vector<bool> seen(NP);
            for (unsigned k = 0; k < NP; ++k) {
                velo_rma_cpl_t c;
                if (next_cpl(ep, &c)) return 1;
                const uint64_t p = c.cookie - 1000u * s;
                CHECK(c.kind == VELO_RMA_KIND_REMOTE && p < NP && !seen[p] && c.len == PIECE,
                      "kind %u cookie %llu len %llu reason %u (%s)", c.kind, (unsigned long long)c.cookie,
                      (unsigned long long)c.len, c.reason, velo_rma_reason_str(c.reason));
                seen[p] = true;
            }
            velo_rma_cpl_t c;
            CHECK(velo_rma_poll(ep, &c) == -EAGAIN, "a completion too many");
            velo_stats_t st;
            CHECK(velo_stats(ep, &st) == 0, "stats");
            CHECK(l.send(0, 1, st.rma_reissues), "link");
            uint64_t ok;
            CHECK(l.recv(0, &ok), "target failed");
            velo_deregister(rs);
            return velo_close(ep);
        });
    };
    run_sources(f, t, l0, l1, source);
}

// Errors give the documented negative errno and touch no memory: a stale handle (deregistered),
// out of range, a read-only region written, a write-only region read; registering unmapped
// memory, or read-only memory for writing, is -EFAULT.
TEST(FabricRma, errors) {
    FabricProc f;
    const size_t B = 16 << 10;
    Link l;
    pid_t t = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 1, &ep)) return 1;
        int r;
        // -EFAULT: unmapped memory, read-only memory for a write access
        const size_t pg = 4096;
        void* m = mmap(nullptr, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(m != MAP_FAILED, "mmap");
        munmap(static_cast<uint8_t*>(m) + pg, pg);  // a hole in the middle
        velo_region_t* h = nullptr;
        r = velo_register(ep, m, 4 * pg, VELO_ACCESS_REMOTE_READ, nullptr, &h);
        CHECK(r == -EFAULT, "register over a hole: %d (%s)", r, velo_strerror(r));
        r = velo_register(ep, static_cast<uint8_t*>(m) + pg, 16, VELO_ACCESS_REMOTE_READ, nullptr, &h);
        CHECK(r == -EFAULT, "register of unmapped memory: %d", r);
        mprotect(m, pg, PROT_READ);
        r = velo_register(ep, m, pg, VELO_ACCESS_REMOTE_WRITE, nullptr, &h);
        CHECK(r == -EFAULT, "register of read-only memory for writing: %d", r);
        r = velo_register(ep, m, pg, VELO_ACCESS_REMOTE_READ, nullptr, &h);
        CHECK(r == 0, "register of read-only memory for reading: %d", r);
        CHECK(velo_deregister(h) == 0, "deregister");
        // regions: rw, read-only, write-only, and a stale one
        auto* rw = static_cast<uint8_t*>(std::malloc(B));
        auto* ro = static_cast<uint8_t*>(std::malloc(B));
        auto* wo = static_cast<uint8_t*>(std::malloc(B));
        auto* st = static_cast<uint8_t*>(std::malloc(B));
        for (auto* p : {rw, ro, wo, st}) std::memset(p, 0x5A, B);
        velo_region_t *hrw, *hro, *hwo, *hst;
        CHECK(velo_register(ep, rw, B, VELO_ACCESS_REMOTE_READ | VELO_ACCESS_REMOTE_WRITE, nullptr, &hrw) == 0, "reg");
        CHECK(velo_register(ep, ro, B, VELO_ACCESS_REMOTE_READ, nullptr, &hro) == 0, "reg");
        CHECK(velo_register(ep, wo, B, VELO_ACCESS_REMOTE_WRITE, nullptr, &hwo) == 0, "reg");
        CHECK(velo_register(ep, st, B, VELO_ACCESS_REMOTE_READ | VELO_ACCESS_REMOTE_WRITE, nullptr, &hst) == 0, "reg");
        uint64_t n[4];
        velo_region_nla(hrw, 0, &n[0]);
        velo_region_nla(hro, 0, &n[1]);
        velo_region_nla(hwo, 0, &n[2]);
        velo_region_nla(hst, 0, &n[3]);
        const velo_region_t* hs[4] = {hrw, hro, hwo, hst};
        uint64_t k[4];
        for (unsigned i = 0; i < 4; ++i) k[i] = rkey_of(hs[i]);
        CHECK(velo_deregister(hst) == 0, "deregister");
        for (unsigned i = 0; i < 4; ++i) CHECK(l.send(1, n[i], k[i]), "link");
        uint64_t done;
        CHECK(l.recv(1, &done), "initiator gone");
        for (size_t i = 0; i < B; ++i)
            CHECK(rw[i] == 0x5A && ro[i] == 0x5A && wo[i] == 0x5A && st[i] == 0x5A, "byte %zu written", i);
        // every region quiesces (the good get's translation was released), so deregistering succeeds
        for (velo_region_t* h2 : {hrw, hro, hwo}) {
            r = velo_deregister(h2);
            CHECK(r == 0, "deregister: %d (%s)", r, velo_strerror(r));
        }
        return velo_close(ep);
    });
    pid_t ini = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 0, &ep)) return 1;
        int r;
        uint64_t n[4], k[4];
        for (unsigned i = 0; i < 4; ++i) CHECK(l.recv(0, &n[i], &k[i]), "target gone");
        std::vector<uint8_t> src(B, 0xEE), dst(B + 64, 0x11);
        struct Case {
            int op;  // 1 put, 2 get
            uint64_t nla, key;
            size_t len;
            int status;
            unsigned reason;
        } cases[] = {
            {1, n[3], k[3], 64, -ENOENT, VELO_RMA_R_BAD_HANDLE},  // stale handle
            {2, n[3], k[3], 64, -ENOENT, VELO_RMA_R_BAD_HANDLE},
            {1, n[0] + B - 10, k[0], 11, -ERANGE, VELO_RMA_R_RANGE},  // one byte beyond
            {2, n[0] + 100, k[0], B, -ERANGE, VELO_RMA_R_RANGE},
            {1, n[1], k[1], 100, -EACCES, VELO_RMA_R_PERM},  // read-only region written
            {2, n[2], k[2], 100, -EACCES, VELO_RMA_R_PERM},  // write-only region read
        };
        uint64_t cookie = 50;
        for (const Case& c : cases) {
            if (c.op == 1)
                r = velo_put_buf(ep, kTarget, src.data(), c.nla, c.key, c.len, VELO_RMA_F_REMOTE, cookie);
            else
                r = velo_get_buf(ep, kTarget, dst.data() + 32, c.nla, c.key, c.len, VELO_RMA_F_LOCAL, cookie);
            CHECK(r == 0, "issue: %s", velo_strerror(r));
            velo_rma_cpl_t k;
            if (next_cpl(ep, &k)) return 1;
            CHECK(k.kind == VELO_RMA_KIND_ERROR && k.cookie == cookie && k.status == c.status && k.reason == c.reason &&
                      k.remote == 1,
                  "case %llu: kind %u status %d reason %u remote %u (expected status %d reason %u)",
                  (unsigned long long)cookie - 50, k.kind, k.status, k.reason, k.remote, c.status, c.reason);
            ++cookie;
        }
        for (size_t i = 0; i < dst.size(); ++i) CHECK(dst[i] == 0x11, "get destination byte %zu written", i);
        // the fabric still serves: a good put and get
        r = velo_put_buf(ep, kTarget, src.data(), n[0], k[0], 1, VELO_RMA_F_REMOTE, 1);
        CHECK(r == 0, "put: %s", velo_strerror(r));
        if (expect_cpl(ep, VELO_RMA_KIND_REMOTE, 1)) return 1;
        r = velo_get_buf(ep, kTarget, dst.data(), n[0], k[0], 2, VELO_RMA_F_LOCAL, 2);
        CHECK(r == 0, "get: %s", velo_strerror(r));
        if (expect_cpl(ep, VELO_RMA_KIND_GET_DONE, 2)) return 1;
        CHECK(dst[0] == 0xEE && dst[1] == 0x5A && dst[2] == 0x11, "good get: %02x %02x %02x", dst[0], dst[1], dst[2]);
        // restore the byte the good put wrote through the same path
        uint8_t orig = 0x5A;
        r = velo_put_buf(ep, kTarget, &orig, n[0], k[0], 1, VELO_RMA_F_REMOTE, 3);
        CHECK(r == 0, "put: %s", velo_strerror(r));
        if (expect_cpl(ep, VELO_RMA_KIND_REMOTE, 3)) return 1;
        CHECK(l.send(0, 1), "link");
        return velo_close(ep);
    });
    l.close_all();
    EXPECT_EQ(join(ini), 0);
    EXPECT_EQ(join(t), 0);
    EXPECT_EQ(f.stop(), 0);
}

// The target deregisters its buffer while a 1 MiB put into it is in flight: the put ends with
// REMOTE (done before) or an ERROR (BAD_HANDLE / NOT_VALID); whatever was written is the put's
// data, and nothing changes in the buffer after velo_deregister returned.
TEST(FabricRma, deregister_in_flight) {
    const uint64_t seed = test_seed();
    FabricProc f;
    const size_t N = 1u << 20;
    Link l;
    pid_t t = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 1, &ep)) return 1;
        int r;
        auto* buf = static_cast<uint8_t*>(std::malloc(N));
        std::memset(buf, 0x77, N);
        velo_region_t* rg;
        r = velo_register(ep, buf, N, VELO_ACCESS_REMOTE_WRITE, nullptr, &rg);
        CHECK(r == 0, "register: %s", velo_strerror(r));
        uint64_t nla, key = 0;
        velo_region_nla(rg, 0, &nla);
        key = rkey_of(rg);
        CHECK(l.send(1, nla, key), "link");
        uint64_t go;
        CHECK(l.recv(1, &go), "initiator gone");
        usleep(150000);  // the put is under way
        r = velo_deregister(rg);
        CHECK(r == 0, "deregister: %s", velo_strerror(r));
        std::vector<uint8_t> snap(buf, buf + N);
        size_t written = 0;
        for (size_t i = 0; i < N; ++i) {
            CHECK(buf[i] == 0x77 || buf[i] == pat(seed, i), "byte %zu: 0x%02x is not the put's", i, buf[i]);
            written += buf[i] != 0x77;
        }
        CHECK(l.send(1, written), "link");
        uint64_t outcome;
        CHECK(l.recv(1, &outcome), "initiator gone");  // the put ended
        CHECK(std::memcmp(snap.data(), buf, N) == 0, "the buffer changed after velo_deregister returned");
        std::printf("deregistered with %zu of %zu bytes written; put ended with kind %llu\n", written, N,
                    (unsigned long long)outcome);
        return velo_close(ep);
    });
    pid_t ini = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 0, &ep)) return 1;
        int r;
        uint64_t nla, key = 0;
        CHECK(l.recv(0, &nla, &key), "target gone");
        std::vector<uint8_t> src(N);
        fill(src.data(), N, seed);
        r = velo_put_buf(ep, kTarget, src.data(), nla, key, N, VELO_RMA_F_REMOTE, 5);
        CHECK(r == 0, "put: %s", velo_strerror(r));
        CHECK(l.send(0, 1), "link");
        velo_rma_cpl_t c;
        if (next_cpl(ep, &c)) return 1;
        CHECK(c.cookie == 5 && (c.kind == VELO_RMA_KIND_REMOTE || (c.kind == VELO_RMA_KIND_ERROR && c.remote &&
                                                                   (c.status == -ENOENT || c.status == -EFAULT))),
              "put: kind %u status %d remote %u", c.kind, c.status, c.remote);
        uint64_t written;
        CHECK(l.recv(0, &written), "target failed");
        CHECK(c.kind == VELO_RMA_KIND_ERROR || written == N, "REMOTE, but only %llu bytes written",
              (unsigned long long)written);
        CHECK(l.send(0, c.kind), "link");
        return velo_close(ep);
    });
    end_pair(f, l, ini, t);
}

// munmap of registered memory while a put uses it, at the target and then at the source: the put
// ends (REMOTE if it was through, else ERROR), nothing outside the put's range changes, the bytes
// before the hole are the put's or untouched (a failed source read: one packet of zeros), and the
// NIC and fabric go on: a put after it arrives whole. (The fabric has no MMU notifier: its DMA into the unmapped pages
// fails and is answered as a fault, docs/simulator.md; on hardware the driver's notifier withdraws the pages.)
TEST(FabricRma, munmap_in_flight) {
    const uint64_t seed = test_seed();
    FabricProc f;
    const size_t N = 2u << 20, H = N / 2, S = 64u << 10;
    Link l;
    pid_t t = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 1, &ep)) return 1;
        int r;
        auto* buf = static_cast<uint8_t*>(mmap(nullptr, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        CHECK(buf != MAP_FAILED, "mmap");
        std::memset(buf, 0x77, N);
        velo_region_t* rg;
        r = velo_register(ep, buf, N, VELO_ACCESS_REMOTE_WRITE, nullptr, &rg);
        CHECK(r == 0, "register: %s", velo_strerror(r));
        uint64_t nla, key = 0;
        velo_region_nla(rg, 0, &nla);
        key = rkey_of(rg);
        CHECK(l.send(1, nla, key), "link");
        uint64_t go;
        CHECK(l.recv(1, &go), "initiator gone");
        usleep(100000);                            // the put is under way
        CHECK(munmap(buf + H, H) == 0, "munmap");  // the upper half goes, still registered
        uint64_t outcome;
        CHECK(l.recv(1, &outcome), "initiator gone");  // the put ended
        size_t written = 0;
        for (size_t i = 0; i < H; ++i) {
            CHECK(buf[i] == 0x77 || buf[i] == pat(seed, i), "byte %zu: 0x%02x is not the put's", i, buf[i]);
            written += buf[i] != 0x77;
        }
        std::printf("target munmap: %zu bytes of the lower half written, put ended with kind %llu\n", written,
                    (unsigned long long)outcome);
        velo_deregister(rg);
        // phase 2: the source's memory goes; then a last put must arrive whole
        std::vector<uint8_t> dst(N + S, 0x55);
        r = velo_register(ep, dst.data(), dst.size(), VELO_ACCESS_REMOTE_WRITE, nullptr, &rg);
        CHECK(r == 0, "register: %s", velo_strerror(r));
        velo_region_nla(rg, 0, &nla);
        key = rkey_of(rg);
        CHECK(l.send(1, nla, key), "link");
        CHECK(l.recv(1, &outcome), "initiator gone");  // both puts ended
        // the put's bytes or untouched; where it failed, the packet under way was completed with
        // zeros (velo_rma_init: its header had left; docs/rma.md §6): at most one packet of them
        size_t zeros = 0;
        for (size_t i = 0; i < N; ++i) {
            CHECK(dst[i] == 0x55 || dst[i] == pat(seed + 1, i) || dst[i] == 0, "byte %zu: 0x%02x is not the put's", i,
                  dst[i]);
            zeros += dst[i] == 0 && pat(seed + 1, i) != 0;
        }
        CHECK(zeros <= 256, "%zu zero bytes: more than one packet", zeros);
        for (size_t i = 0; i < S; ++i)
            CHECK(dst[N + i] == pat(seed + 2, i), "last put: byte %zu is 0x%02x", i, dst[N + i]);
        CHECK(l.send(1, 1), "link");
        return velo_close(ep);
    });
    pid_t ini = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 0, &ep)) return 1;
        int r;
        uint64_t nla, key = 0;
        CHECK(l.recv(0, &nla, &key), "target gone");
        std::vector<uint8_t> src(N);
        fill(src.data(), N, seed);
        r = velo_put_buf(ep, kTarget, src.data(), nla, key, N, VELO_RMA_F_REMOTE, 1);
        CHECK(r == 0, "put: %s", velo_strerror(r));
        CHECK(l.send(0, 1), "link");
        velo_rma_cpl_t c;
        if (next_cpl(ep, &c)) return 1;
        CHECK(c.cookie == 1 && (c.kind == VELO_RMA_KIND_REMOTE || (c.kind == VELO_RMA_KIND_ERROR && c.remote)),
              "put into unmapped memory: kind %u status %d remote %u", c.kind, c.status, c.remote);
        CHECK(l.send(0, c.kind), "link");
        // phase 2: our source's upper half goes while the put reads it
        CHECK(l.recv(0, &nla, &key), "target gone");
        auto* s2 = static_cast<uint8_t*>(mmap(nullptr, N, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        CHECK(s2 != MAP_FAILED, "mmap");
        fill(s2, N, seed + 1);
        r = velo_put_buf(ep, kTarget, s2, nla, key, N, VELO_RMA_F_REMOTE, 2);
        CHECK(r == 0, "put: %s", velo_strerror(r));
        usleep(100000);
        CHECK(munmap(s2 + H, H) == 0, "munmap");
        if (next_cpl(ep, &c)) return 1;
        CHECK(c.cookie == 2 && (c.kind == VELO_RMA_KIND_REMOTE || c.kind == VELO_RMA_KIND_ERROR),
              "put from unmapped memory: kind %u", c.kind);
        std::printf("source munmap: put ended with kind %u (%s)\n", c.kind,
                    c.kind == VELO_RMA_KIND_ERROR ? velo_rma_reason_str(c.reason) : "complete");
        std::vector<uint8_t> s3(S);
        fill(s3.data(), S, seed + 2);
        r = velo_put_buf(ep, kTarget, s3.data(), nla + N, key, S, VELO_RMA_F_REMOTE, 3);
        CHECK(r == 0, "put: %s", velo_strerror(r));
        if (expect_cpl(ep, VELO_RMA_KIND_REMOTE, 3)) return 1;
        CHECK(l.send(0, 1), "link");
        uint64_t ok;
        CHECK(l.recv(0, &ok), "target failed");
        return velo_close(ep);
    });
    end_pair(f, l, ini, t);
}

// Clients killed mid-transfer (the initiator of a 2 MiB put, then the target of one): the
// fabric survives, and new clients on the same vpids put and get byte-exact.
TEST(FabricRma, client_killed) {
    const uint64_t seed = test_seed();
    FabricProc f;
    const size_t N = 2u << 20;
    for (int victim = 0; victim < 2; ++victim) {  // 0: the initiator dies, 1: the target
        Link l, started;
        pid_t t = spawn([&] {
            l.keep(1);
            started.close_all();
            velo_ep_t* ep;
            int r = open_ep(f, 1, 20, &ep);
            CHECK(r == 0, "open: %s", velo_strerror(r));
            auto* buf = static_cast<uint8_t*>(std::malloc(N));
            std::memset(buf, 0, N);
            velo_region_t* rg;
            r = velo_register(ep, buf, N, VELO_ACCESS_REMOTE_WRITE, nullptr, &rg);
            CHECK(r == 0, "register: %s", velo_strerror(r));
            uint64_t nla, key = 0;
            velo_region_nla(rg, 0, &nla);
            key = rkey_of(rg);
            CHECK(l.send(1, nla, key), "link");
            uint64_t x;
            l.recv(1, &x);  // until the initiator is gone (or we are killed)
            return velo_close(ep);
        });
        pid_t ini = spawn([&] {
            l.keep(0);
            started.keep(0);
            velo_ep_t* ep;
            int r = open_ep(f, 0, 21, &ep);
            CHECK(r == 0, "open: %s", velo_strerror(r));
            uint64_t nla, key = 0;
            CHECK(l.recv(0, &nla, &key), "target gone");
            auto* src = static_cast<uint8_t*>(std::malloc(N));
            fill(src, N, seed);
            r = velo_put_buf(ep, kTarget, src, nla, key, N, VELO_RMA_F_REMOTE, 1);
            CHECK(r == 0, "put: %s", velo_strerror(r));
            CHECK(started.send(0, 1), "link");
            velo_rma_cpl_t c;
            r = velo_rma_wait(ep, &c, 120000);  // the initiator is killed here, or the target is
            CHECK(r == 0 && c.cookie == 1, "wait: %s", velo_strerror(r));
            return velo_close(ep);
        });
        uint64_t x;
        ASSERT_TRUE(started.recv(1, &x)) << "the put did not start";
        usleep(200000);
        if (victim == 0) {
            kill(ini, SIGKILL);
            EXPECT_EQ(join(ini), 128 + SIGKILL);
            l.send(0, 1);
            EXPECT_EQ(join(t), 0);
        } else {
            kill(t, SIGKILL);
            EXPECT_EQ(join(t), 128 + SIGKILL);
            EXPECT_EQ(join(ini), 0);  // its put ended (REMOTE or an ERROR), it closed
        }
        ASSERT_TRUE(f.alive());
    }
    // new clients work
    Link l;
    pid_t t = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 1, &ep)) return 1;
        int r;
        std::vector<uint8_t> buf(64 << 10);
        fill(buf.data(), buf.size(), seed + 9);
        velo_region_t* rg;
        r = velo_register(ep, buf.data(), buf.size(), VELO_ACCESS_REMOTE_READ | VELO_ACCESS_REMOTE_WRITE, nullptr, &rg);
        CHECK(r == 0, "register: %s", velo_strerror(r));
        uint64_t nla, key = 0;
        velo_region_nla(rg, 0, &nla);
        key = rkey_of(rg);
        CHECK(l.send(1, nla, key), "link");
        velo_rma_cpl_t c;
        if (expect_cpl(ep, VELO_RMA_KIND_TARGET, 3)) return 1;
        (void)c;
        for (size_t i = 0; i < 1000; ++i) CHECK(buf[100 + i] == pat(seed + 10, i), "byte %zu", i);
        CHECK(l.send(1, 1), "link");
        return velo_close(ep);
    });
    pid_t ini = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 0, &ep)) return 1;
        int r;
        uint64_t nla, key = 0;
        CHECK(l.recv(0, &nla, &key), "target gone");
        std::vector<uint8_t> got(64 << 10), src(1000);
        fill(src.data(), src.size(), seed + 10);
        r = velo_get_buf(ep, kTarget, got.data(), nla, key, got.size(), VELO_RMA_F_LOCAL, 2);
        CHECK(r == 0, "get: %s", velo_strerror(r));
        if (expect_cpl(ep, VELO_RMA_KIND_GET_DONE, 2)) return 1;
        for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == pat(seed + 9, i), "get byte %zu", i);
        r = velo_put_buf(ep, kTarget, src.data(), nla + 100, key, src.size(), VELO_RMA_F_NOTIFY | VELO_RMA_F_REMOTE, 3);
        CHECK(r == 0, "put: %s", velo_strerror(r));
        if (expect_cpl(ep, VELO_RMA_KIND_REMOTE, 3)) return 1;
        uint64_t ok;
        CHECK(l.recv(0, &ok), "target failed");
        return velo_close(ep);
    });
    end_pair(f, l, ini, t);
}

// Quiesce while another region streams: a process on node 0 keeps a 4 MiB source region busy
// with puts to node 1; meanwhile another process of node 0 registers regions until it holds
// every index with the same low 5 bits as the streaming source's, and deregisters them one by
// one while the puts run. Each deregistration must quiesce (0, not -ETIMEDOUT).
TEST(FabricRma, quiesce_while_another_region_streams) {
    const uint64_t seed = test_seed();
    FabricProc f;
    const size_t N = 4u << 20;
    Link l, l2;
    pid_t t = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 1, &ep)) return 1;
        l2.close_all();
        auto* buf = static_cast<uint8_t*>(std::malloc(N));
        velo_region_t* rg;
        int r = velo_register(ep, buf, N, VELO_ACCESS_REMOTE_WRITE, nullptr, &rg);
        CHECK(r == 0, "register: %s", velo_strerror(r));
        uint64_t nla, key = 0;
        velo_region_nla(rg, 0, &nla);
        key = rkey_of(rg);
        CHECK(l.send(1, nla, key), "link");
        uint64_t done;
        CHECK(l.recv(1, &done), "initiator gone");
        for (size_t i = 0; i < N; ++i) CHECK(buf[i] == pat(seed, i), "byte %zu", i);
        return velo_close(ep);
    });
    pid_t ini = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 0, &ep)) return 1;
        l2.keep(0);
        uint64_t nla, key = 0;
        CHECK(l.recv(0, &nla, &key), "target gone");
        auto* src = static_cast<uint8_t*>(std::malloc(N));
        fill(src, N, seed);
        velo_region_t* rg;
        int r = velo_register(ep, src, N, VELO_ACCESS_LOCAL_READ, nullptr, &rg);
        CHECK(r == 0, "register: %s", velo_strerror(r));
        uint64_t snla;
        velo_region_nla(rg, 0, &snla);
        CHECK(l2.send(0, snla), "link");
        for (int k = 0; k < 3; ++k) {
            r = velo_put(ep, kTarget, rg, 0, nla, key, N, VELO_RMA_F_REMOTE, 100 + k);
            CHECK(r == 0, "put: %s", velo_strerror(r));
            if (k == 0) CHECK(l2.send(0, 1), "link");
            if (expect_cpl(ep, VELO_RMA_KIND_REMOTE, 100 + k)) return 1;
        }
        uint64_t ok;
        CHECK(l2.recv(0, &ok), "other process failed");
        CHECK(l.send(0, 1), "link");
        return velo_close(ep);
    });
    pid_t other = spawn([&] {
        l.close_all();
        l2.keep(1);
        velo_ep_t* ep;
        int r = open_ep(f, 0, 30, &ep);
        CHECK(r == 0, "open: %s", velo_strerror(r));
        uint64_t snla, go;
        CHECK(l2.recv(1, &snla), "initiator gone");
        const unsigned sreg = static_cast<unsigned>((snla >> 40) & 0xFFFF);
        static uint8_t page[64][4096];
        std::vector<velo_region_t*> mine;
        int same = 0;
        for (int i = 0; i < 64; ++i) {
            velo_region_t* g;
            r = velo_register(ep, page[i], 4096, VELO_ACCESS_REMOTE_WRITE, nullptr, &g);
            CHECK(r == 0, "register %d: %s", i, velo_strerror(r));
            uint64_t n;
            velo_region_nla(g, 0, &n);
            if ((((n >> 40) & 0xFFFF) ^ sreg) % 32 == 0) {
                mine.push_back(g);
                ++same;
            } else {
                CHECK(velo_deregister(g) == 0, "deregister");
            }
        }
        CHECK(same >= 1, "no region shares the source's counter");
        CHECK(l2.recv(1, &go), "initiator gone");
        usleep(100000);
        for (velo_region_t* g : mine) {
            r = velo_deregister(g);
            CHECK(r == 0, "deregister while the source streams: %s", velo_strerror(r));
        }
        std::printf("%d regions sharing the source's counter deregistered while it streamed\n", same);
        CHECK(l2.send(1, 1), "link");
        return velo_close(ep);
    });
    l.close_all();
    l2.close_all();
    EXPECT_EQ(join(other), 0);
    EXPECT_EQ(join(ini), 0);
    EXPECT_EQ(join(t), 0);
    EXPECT_EQ(f.stop(), 0);
}

// More large transfers than the NIC can translate (docs/api.md "Out of translation resources"):
// another endpoint of node 0 (the hog) registers 1-page regions until the region table is full
// (-ENFILE), gives most back, then large regions until the page table is full (-ENOBUFS), and
// leaves a few regions and pages; a 17 MiB registration is -EFBIG. The initiator then keeps 32
// puts of 64 KiB from distinct buffers in flight, then 32 gets into distinct buffers: each
// velo_put_buf/velo_get_buf that finds no room says which resource ran out, the initiator takes a
// completion and tries again. Every transfer completes byte-exact, and afterwards every
// registration of both endpoints deregisters (its region quiesced: 0, not -ETIMEDOUT).
TEST(FabricRma, more_than_the_nic_translates) {
    const uint64_t seed = test_seed();
    FabricProc f;
    const int K = 32;
    const size_t S = 64u << 10, TB = K * S;
    Link l, l2;
    pid_t t = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 1, &ep)) return 1;
        l2.close_all();
        auto* buf = static_cast<uint8_t*>(std::calloc(1, TB));
        velo_region_t* rg;
        int r = velo_register(ep, buf, TB, VELO_ACCESS_REMOTE_WRITE | VELO_ACCESS_REMOTE_READ, nullptr, &rg);
        CHECK(r == 0, "register: %s", velo_strerror(r));
        uint64_t nla, key = 0;
        velo_region_nla(rg, 0, &nla);
        key = rkey_of(rg);
        CHECK(l.send(1, nla, key), "link");
        uint64_t done;
        CHECK(l.recv(1, &done), "initiator gone");
        for (size_t i = 0; i < TB; ++i) CHECK(buf[i] == pat(seed + i / S, i % S), "target byte %zu", i);
        CHECK(l.send(1, 1), "link");
        CHECK(l.recv(1, &done), "initiator gone");  // its gets are done
        r = velo_deregister(rg);
        CHECK(r == 0, "deregister: %s", velo_strerror(r));
        return velo_close(ep);
    });
    pid_t hog = spawn([&] {
        l.close_all();
        l2.keep(1);
        velo_ep_t* ep;
        int r = open_ep(f, 0, 30, &ep);
        CHECK(r == 0, "open: %s", velo_strerror(r));
        std::vector<velo_region_t*> small, big;
        auto* mem = static_cast<uint8_t*>(std::aligned_alloc(4096, 18u << 20));
        std::memset(mem, 0, 18u << 20);
        // -EFBIG: more pages than the whole page table
        velo_region_t* g;
        r = velo_register(ep, mem, 17u << 20, VELO_ACCESS_REMOTE_WRITE, nullptr, &g);
        CHECK(r == -EFBIG, "17 MiB registration: %d (%s), expected -EFBIG", r, velo_strerror(r));
        // the region table: 1-page regions until it is full
        for (;;) {
            r = velo_register(ep, mem + small.size() * 4096, 4096, VELO_ACCESS_REMOTE_WRITE, nullptr, &g);
            if (r) break;
            small.push_back(g);
        }
        CHECK(r == -ENFILE || r == -EMFILE, "region table full: %d (%s)", r, velo_strerror(r));
        CHECK(std::strstr(velo_strerror(r), "region") != nullptr, "strerror: %s", velo_strerror(r));
        CHECK(small.size() >= 200, "only %zu regions", small.size());
        // keep 210 of them: the page table with large regions (1 MiB, then 64 KiB) until it is full
        // (15 + 2 regions, 14 pages left), then give one 1 MiB region back: 29 regions and 270
        // pages are free for the initiator, whose transfers need 32 regions and 544 pages
        while (small.size() > 210) {
            CHECK(velo_deregister(small.back()) == 0, "deregister");
            small.pop_back();
        }
        uint8_t* p = mem + (1u << 20);
        for (size_t sz : {size_t(1) << 20, size_t(64) << 10}) {
            for (;;) {
                r = velo_register(ep, p, sz, VELO_ACCESS_REMOTE_WRITE, nullptr, &g);
                if (r) break;
                big.push_back(g);
                p += sz;
            }
            CHECK(r == -ENOBUFS, "page table full: %d (%s)", r, velo_strerror(r));
        }
        CHECK(std::strstr(velo_strerror(-ENOBUFS), "page table") != nullptr, "strerror: %s", velo_strerror(-ENOBUFS));
        CHECK(big.size() >= 3, "only %zu large regions", big.size());
        CHECK(velo_deregister(big.front()) == 0, "deregister");
        big.erase(big.begin());
        std::printf("hog: %zu small and %zu large regions held\n", small.size(), big.size());
        CHECK(l2.send(1, 1), "link");
        uint64_t done;
        CHECK(l2.recv(1, &done), "initiator gone");
        for (velo_region_t* x : small) CHECK(velo_deregister(x) == 0, "deregister");
        for (velo_region_t* x : big) {
            r = velo_deregister(x);
            CHECK(r == 0, "deregister: %s", velo_strerror(r));
        }
        return velo_close(ep);
    });
    pid_t ini = spawn([&] {
        velo_ep_t* ep;
        if (open_side(f, l, 0, &ep)) return 1;
        l2.keep(0);
        uint64_t nla, key, go;
        CHECK(l.recv(0, &nla, &key), "target gone");
        CHECK(l2.recv(0, &go), "hog gone");
        std::vector<uint8_t*> src(K), dst(K);
        for (int k = 0; k < K; ++k) {
            src[k] = static_cast<uint8_t*>(std::malloc(S));
            dst[k] = static_cast<uint8_t*>(std::malloc(S));
            fill(src[k], S, seed + k);
            std::memset(dst[k], 0, S);
        }
        unsigned no_region = 0, no_pages = 0;
        // issue all K of one kind, taking completions whenever the NIC has no room
        auto run = [&](bool put) -> int {
            int done = 0, k = 0;
            while (done < K) {
                int r = k < K ? (put ? velo_put_buf(ep, kTarget, src[k], nla + k * S, key, S, VELO_RMA_F_REMOTE, k)
                                     : velo_get_buf(ep, kTarget, dst[k], nla + k * S, key, S, VELO_RMA_F_LOCAL, k))
                              : -EAGAIN;
                if (r == 0) {
                    ++k;
                    continue;
                }
                CHECK(r == -EAGAIN || r == -ENFILE || r == -EMFILE || r == -ENOBUFS, "%s %d: %d (%s)",
                      put ? "put" : "get", k, r, velo_strerror(r));
                no_region += r == -ENFILE || r == -EMFILE;
                no_pages += r == -ENOBUFS;
                CHECK(done < k, "no room in the NIC and nothing of ours in flight (%s)", velo_strerror(r));
                velo_rma_cpl_t c;
                if (next_cpl(ep, &c)) return 1;
                CHECK(c.kind == (put ? VELO_RMA_KIND_REMOTE : VELO_RMA_KIND_GET_DONE) && c.cookie < (uint64_t)K,
                      "completion kind %u cookie %llu reason %s", c.kind, (unsigned long long)c.cookie,
                      velo_rma_reason_str(c.reason));
                ++done;
            }
            return 0;
        };
        if (run(true)) return 1;
        CHECK(l.send(0, 1), "link");
        uint64_t ok;
        CHECK(l.recv(0, &ok), "target failed");
        if (run(false)) return 1;
        for (int k = 0; k < K; ++k) CHECK(std::memcmp(dst[k], src[k], S) == 0, "get %d: data differ", k);
        std::printf("%d puts and %d gets of %zu bytes: %u times no region, %u times no pages\n", K, K, S, no_region,
                    no_pages);
        CHECK(no_region + no_pages > 0, "the NIC never ran out: no pressure");
        // every registration the cache made is deregistered: each quiesced
        for (int k = 0; k < K; ++k)
            for (uint8_t* b : {src[k], dst[k]}) {
                velo_region_t* g;
                int r = velo_register(ep, b, S, VELO_ACCESS_LOCAL_READ, nullptr, &g);
                CHECK(r == 0, "register: %s", velo_strerror(r));
                r = velo_deregister(g);
                CHECK(r == 0, "deregister: %s", velo_strerror(r));
            }
        CHECK(l.send(0, 1) && l2.send(0, 1), "link");
        return velo_close(ep);
    });
    l.close_all();
    l2.close_all();
    EXPECT_EQ(join(ini), 0);
    EXPECT_EQ(join(hog), 0);
    EXPECT_EQ(join(t), 0);
    EXPECT_EQ(f.stop(), 0);
}
