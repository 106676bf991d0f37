// SPDX-License-Identifier: MIT
// velo-check: does this VELO installation carry messages and remote memory correctly? Two ranks
// (velo-run -n 2, or VELO_RANK / --rank on two machines or QEMU guests) check, on any backend
// (a board, a QEMU guest of the co-simulation, the fabric):
//   msg     messages of every size 1..64 B each way, byte exact, in order
//   long    messages of 65 B .. 64 KiB (VELO trains and puts into the receive area)
//   wait    velo_wait sleeping: a timeout with nothing sent, then a message sent 200 ms late
//   rma     seeded puts and gets at random offsets and lengths into the peer's registered buffer,
//           the whole buffer read back and compared with a shadow, guard bytes untouched
//   munmap  the target unmaps its registered buffer while a 2 MiB put streams into it: the put
//           ends (completed or failed, never hung), the target's memory holds only the put's
//           bytes, and a new registration works
// Each check prints "velo-check: <name> PASS|FAIL <detail>"; the exit status is the number of
// failed checks (rank 0 and rank 1 each check what they can see).
//
//   velo-run -n 2 -- velo-check [--seed S] [--only msg,long,wait,rma,munmap]
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "velo/velo.h"

#define BASE_VPID 20
#define RMA_BYTES (1u << 20)
#define GUARD 4096u
#define UNMAP_BYTES (2u << 20)

static velo_ep_t* ep;
static velo_conn_t* conn;
static velo_addr_t peer;
static int rank;
static uint64_t seed;
static int failed;

static void report(const char* name, int ok, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static void report(const char* name, int ok, const char* fmt, ...) {
    char d[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d, sizeof d, fmt, ap);
    va_end(ap);
    printf("velo-check: %s %s %s\n", name, ok ? "PASS" : "FAIL", d);
    fflush(stdout);
    if (!ok) ++failed;
}

static uint8_t pat(uint64_t s, size_t i) {
    uint64_t x = s * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    return (uint8_t)(x * 0x94D049BB133111EBull >> 56);
}

static int send_msg(const void* b, size_t n) {
    int r;
    while ((r = velo_send(conn, b, n)) == -EAGAIN) sched_yield();
    return r;
}

// The next message (bounded: a peer that died fails the check instead of hanging it).
static int recv_msg(velo_msg_t* m, const void** bytes) {
    int r = velo_wait(ep, m, 120000);
    if (r >= 0 && bytes) *bytes = velo_msg_bytes(m);
    return r;
}

// A control record between the ranks: what, and two numbers.
struct ctl {
    uint32_t what, rsvd;
    uint64_t a, b;
};
static int send_ctl(uint32_t what, uint64_t a, uint64_t b) {
    struct ctl c = {what, 0, a, b};
    return send_msg(&c, sizeof c);
}
static int recv_ctl(uint32_t what, uint64_t* a, uint64_t* b) {
    velo_msg_t m;
    const void* p;
    int n = recv_msg(&m, &p);
    if (n != (int)sizeof(struct ctl)) return n < 0 ? n : -EPROTO;
    struct ctl c;
    memcpy(&c, p, sizeof c);
    if (c.what != what) return -EPROTO;
    if (a) *a = c.a;
    if (b) *b = c.b;
    return 0;
}

// Messages of the given sizes, rank 0 -> rank 1, then echoed back: byte exact and in order.
static void check_sizes(const char* name, const unsigned* sizes, unsigned n, unsigned rounds) {
    size_t max = 0;
    for (unsigned i = 0; i < n; ++i)
        if (sizes[i] > max) max = sizes[i];
    uint8_t* b = malloc(max);
    if (!b) return report(name, 0, "out of memory");
    unsigned k = 0, bad = 0, first_bad = 0;
    int err = 0;
    for (unsigned rd = 0; rd < rounds && !err; ++rd)
        for (unsigned i = 0; i < n && !err; ++i, ++k) {
            const size_t len = sizes[i];
            velo_msg_t m;
            const void* p;
            if (rank == 0) {
                for (size_t j = 0; j < len; ++j) b[j] = pat(seed + k, j);
                if ((err = send_msg(b, len))) break;
                const int got = recv_msg(&m, &p);
                if (got < 0) {
                    err = got;
                    break;
                }
                if ((size_t)got != len || memcmp(p, b, len)) {
                    if (!bad++) first_bad = k;
                }
            } else {
                const int got = recv_msg(&m, &p);
                if (got < 0) {
                    err = got;
                    break;
                }
                int ok = (size_t)got == len;
                for (size_t j = 0; ok && j < len; ++j) ok = ((const uint8_t*)p)[j] == pat(seed + k, j);
                if (!ok && !bad++) first_bad = k;
                if ((err = send_msg(p, (size_t)got))) break;
            }
        }
    free(b);
    if (err) return report(name, 0, "after %u messages: %s", k, velo_strerror(err));
    if (bad) return report(name, 0, "%u of %u messages wrong (the first: #%u)", bad, k, first_bad);
    report(name, 1, "%u messages each way", k);
}

static void check_wait(void) {
    velo_msg_t m;
    const void* p;
    if (rank == 1) {
        int r = velo_wait(ep, &m, 100);  // nothing comes: rank 0 waits for our "go"
        if (r != -ETIMEDOUT) return report("wait", 0, "velo_wait with nothing sent: %d, not -ETIMEDOUT", r);
        if ((r = send_ctl(1, 0, 0))) return report("wait", 0, "go: %s", velo_strerror(r));
        r = velo_wait(ep, &m, 30000);
        if (r != 8 || memcmp(velo_msg_bytes(&m), "latewake", 8)) return report("wait", 0, "the late message: %d", r);
        return report("wait", 1, "timed out empty, then woke for a message sent 200 ms later");
    }
    int r = recv_ctl(1, NULL, NULL);
    if (r) return report("wait", 0, "go: %s", velo_strerror(r));
    usleep(200000);
    if ((r = send_msg("latewake", 8))) return report("wait", 0, "send: %s", velo_strerror(r));
    (void)p;
    report("wait", 1, "sent the late message");
}

static int rma_done(uint64_t cookie, unsigned kind) {
    for (;;) {
        velo_rma_cpl_t c;
        int r = velo_rma_wait(ep, &c, 120000);
        if (r) return r;
        if (c.cookie == cookie && c.kind == kind) return 0;
        if (c.kind == VELO_RMA_KIND_ERROR) return -EIO;
    }
}

static void check_rma(void) {
    const size_t n = RMA_BYTES + 2 * GUARD;
    uint8_t* buf = malloc(n);
    uint8_t* shadow = malloc(RMA_BYTES);
    uint8_t* tmp = malloc(RMA_BYTES);
    if (!buf || !shadow || !tmp) return report("rma", 0, "out of memory");
    for (size_t i = 0; i < n; ++i) buf[i] = 0xA5;
    const velo_scope_t only_peer = {
        .kind = VELO_SCOPE_PEER, .node_lo = (uint8_t)peer.node, .vpid_lo = (uint8_t)peer.vpid};
    velo_region_t* rg = NULL;
    int r =
        velo_register(ep, buf + GUARD, RMA_BYTES, VELO_ACCESS_REMOTE_WRITE | VELO_ACCESS_REMOTE_READ, &only_peer, &rg);
    if (r) return report("rma", 0, "register: %s", velo_strerror(r));
    uint64_t nla = 0;
    uint32_t key = 0;
    velo_region_nla(rg, 0, &nla);
    velo_region_rkey(rg, &key);
    uint64_t pnla = 0, pkey = 0;
    if ((r = send_ctl(2, nla, key)) || (r = recv_ctl(2, &pnla, &pkey)))
        return report("rma", 0, "exchange: %s", velo_strerror(r));
    // rank 0 writes and reads rank 1's buffer; rank 1 waits, then checks its own memory
    unsigned puts = 0, gets = 0, wrong = 0;
    if (rank == 0) {
        memset(shadow, 0xA5, RMA_BYTES);
        uint64_t s = seed;
        for (unsigned i = 0; i < 64 && !r; ++i) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            const size_t off = (s >> 33) % RMA_BYTES;
            size_t len = 1 + ((s >> 13) % (i % 8 == 0 ? 65536 : 512));
            if (off + len > RMA_BYTES) len = RMA_BYTES - off;
            if (i % 3 != 2) {
                for (size_t j = 0; j < len; ++j) tmp[j] = shadow[off + j] = pat(s, j);
                r = velo_put_buf(ep, peer, tmp, pnla + off, (uint32_t)pkey, len, VELO_RMA_F_REMOTE, i);
                if (!r) r = rma_done(i, VELO_RMA_KIND_REMOTE);
                ++puts;
            } else {
                memset(tmp, 0, len);
                r = velo_get_buf(ep, peer, tmp, pnla + off, (uint32_t)pkey, len, VELO_RMA_F_LOCAL, i);
                if (!r) r = rma_done(i, VELO_RMA_KIND_GET_DONE);
                if (!r && memcmp(tmp, shadow + off, len)) ++wrong;
                ++gets;
            }
        }
        if (!r) {
            r = velo_get_buf(ep, peer, tmp, pnla, (uint32_t)pkey, RMA_BYTES, VELO_RMA_F_LOCAL, 1000);
            if (!r) r = rma_done(1000, VELO_RMA_KIND_GET_DONE);
            if (!r && memcmp(tmp, shadow, RMA_BYTES)) ++wrong;
        }
        const int r2 = send_ctl(3, (uint64_t)r, 0);
        if (r || r2)
            report("rma", 0, "after %u puts and %u gets: %s", puts, gets, velo_strerror(r ? r : r2));
        else if (wrong)
            report("rma", 0, "%u of %u gets (and the whole buffer read back) differ from the shadow", wrong, gets + 1);
        else
            report("rma", 1, "%u puts, %u gets and 1 MiB read back, byte exact", puts, gets + 1);
    } else {
        uint64_t st = 0;
        r = recv_ctl(3, &st, NULL);
        unsigned guard_bad = 0;
        for (size_t i = 0; i < GUARD; ++i) guard_bad += (buf[i] != 0xA5) + (buf[GUARD + RMA_BYTES + i] != 0xA5);
        if (r)
            report("rma", 0, "the initiator: %s", velo_strerror(r));
        else if (guard_bad)
            report("rma", 0, "%u guard bytes around the region written", guard_bad);
        else
            report("rma", 1, "the guard bytes around the target region are untouched");
    }
    velo_deregister(rg);
    free(buf);
    free(shadow);
    free(tmp);
}

static void check_munmap(void) {
    int r;
    if (rank == 1) {
        uint8_t* b = mmap(NULL, UNMAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (b == MAP_FAILED) return report("munmap", 0, "mmap: %s", strerror(errno));
        memset(b, 0x77, UNMAP_BYTES);
        velo_region_t* rg;
        if ((r = velo_register(ep, b, UNMAP_BYTES, VELO_ACCESS_REMOTE_WRITE, NULL, &rg)))
            return report("munmap", 0, "register: %s", velo_strerror(r));
        uint64_t nla;
        uint32_t key;
        velo_region_nla(rg, 0, &nla);
        velo_region_rkey(rg, &key);
        if ((r = send_ctl(4, nla, key)) || (r = recv_ctl(5, NULL, NULL)))
            return report("munmap", 0, "exchange: %s", velo_strerror(r));
        usleep(50000);  // the put is under way
        const size_t half = UNMAP_BYTES / 2;
        if (munmap(b + half, half)) return report("munmap", 0, "munmap: %s", strerror(errno));
        uint64_t kind;
        if ((r = recv_ctl(6, &kind, NULL))) return report("munmap", 0, "the put's end: %s", velo_strerror(r));
        size_t written = 0, foreign = 0;
        for (size_t i = 0; i < half; ++i) {
            const uint8_t v = b[i];
            if (v != 0x77) ++written;
            if (v != 0x77 && v != pat(seed + 7, i) && v != 0) ++foreign;
        }
        velo_deregister(rg);
        munmap(b, half);
        // a new region works
        uint8_t* c = calloc(1, 4096);
        if (!c) return report("munmap", 0, "out of memory");
        if ((r = velo_register(ep, c, 4096, VELO_ACCESS_REMOTE_WRITE, NULL, &rg)))
            return report("munmap", 0, "register again: %s", velo_strerror(r));
        velo_region_nla(rg, 0, &nla);
        velo_region_rkey(rg, &key);
        if ((r = send_ctl(7, nla, key)) || (r = recv_ctl(8, NULL, NULL)))
            return report("munmap", 0, "second exchange: %s", velo_strerror(r));
        size_t bad = 0;
        for (size_t i = 0; i < 4096; ++i) bad += c[i] != pat(seed + 8, i);
        velo_deregister(rg);
        free(c);
        if (foreign) return report("munmap", 0, "%zu bytes of the kept half are not the put's", foreign);
        if (bad) return report("munmap", 0, "the put into the new region: %zu bytes wrong", bad);
        return report("munmap", 1,
                      "the put ended with kind %llu, %zu bytes of the kept half written, a new region works",
                      (unsigned long long)kind, written);
    }
    uint64_t nla, key;
    if ((r = recv_ctl(4, &nla, &key))) return report("munmap", 0, "exchange: %s", velo_strerror(r));
    uint8_t* src = malloc(UNMAP_BYTES);
    if (!src) return report("munmap", 0, "out of memory");
    for (size_t i = 0; i < UNMAP_BYTES; ++i) src[i] = pat(seed + 7, i);
    r = velo_put_buf(ep, peer, src, nla, (uint32_t)key, UNMAP_BYTES, VELO_RMA_F_REMOTE, 77);
    if (r) return report("munmap", 0, "put: %s", velo_strerror(r));
    if ((r = send_ctl(5, 0, 0))) return report("munmap", 0, "go: %s", velo_strerror(r));
    velo_rma_cpl_t c;
    do {
        r = velo_rma_wait(ep, &c, 120000);
    } while (!r && c.cookie != 77);
    if (r) return report("munmap", 0, "the put never ended: %s", velo_strerror(r));
    const int ok_end = c.kind == VELO_RMA_KIND_REMOTE || (c.kind == VELO_RMA_KIND_ERROR && c.remote);
    send_ctl(6, c.kind, 0);
    if ((r = recv_ctl(7, &nla, &key))) return report("munmap", 0, "second exchange: %s", velo_strerror(r));
    for (size_t i = 0; i < 4096; ++i) src[i] = pat(seed + 8, i);
    r = velo_put_buf(ep, peer, src, nla, (uint32_t)key, 4096, VELO_RMA_F_REMOTE, 78);
    if (!r) r = rma_done(78, VELO_RMA_KIND_REMOTE);
    send_ctl(8, 0, 0);
    free(src);
    if (!ok_end)
        return report("munmap", 0, "the put ended with kind %u reason %s", c.kind, velo_rma_reason_str(c.reason));
    if (r) return report("munmap", 0, "a put into the new region: %s", velo_strerror(r));
    report("munmap", 1, "the put ended with kind %u (%s), a put into the new region completed", c.kind,
           c.kind == VELO_RMA_KIND_REMOTE ? "completed" : velo_rma_reason_str(c.reason));
}

static int wanted(const char* only, const char* name) {
    if (!only) return 1;
    const size_t n = strlen(name);
    for (const char* p = only; (p = strstr(p, name)); p += n)
        if ((p == only || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
    return 0;
}

int main(int argc, char** argv) {
    const char* only = NULL;
    seed = (uint64_t)time(NULL);
    rank = -1;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--rank") && i + 1 < argc) {
            rank = atoi(argv[++i]);
        } else {
            fprintf(stderr,
                    "usage: velo-check [--seed S] [--rank R] [--only msg,long,wait,rma,munmap]\n"
                    "  two ranks: velo-run -n 2 -- velo-check, or VELO_RANK=0|1 (and VELO_NODES) on two nodes\n");
            return 2;
        }
    }
    if (rank < 0) rank = getenv("VELO_RANK") ? atoi(getenv("VELO_RANK")) : 0;
    const int nodes = getenv("VELO_NODES") ? atoi(getenv("VELO_NODES")) : 2;
    if (rank < 0 || rank > 1 || nodes < 1) {
        fprintf(stderr, "velo-check: two ranks (0 and 1)\n");
        return 2;
    }
    velo_open_attr_t at;
    velo_open_attr_init(&at);
    at.vpid = BASE_VPID + rank;
    int r = velo_open(&at, &ep);
    if (r) {
        fprintf(stderr, "velo-check: velo_open: %s\n", velo_strerror(r));
        return 2;
    }
    peer = (velo_addr_t){(uint32_t)((1 - rank) % nodes), (uint32_t)(BASE_VPID + 1 - rank)};
    // the peer may not be open yet (sim: refused; hw: no answer): retry for up to 5 minutes
    const time_t give_up = time(NULL) + 300;
    while ((r = velo_connect(ep, peer, 0, &conn)) == -ECONNREFUSED || r == -ETIMEDOUT) {
        if (time(NULL) >= give_up) break;
        usleep(100000);
    }
    if (r) {
        fprintf(stderr, "velo-check: velo_connect to node %u vpid %u: %s\n", peer.node, peer.vpid, velo_strerror(r));
        return 2;
    }
    // both ranks agree on the seed (rank 0's)
    if (rank == 0)
        r = send_ctl(9, seed, 0);
    else
        r = recv_ctl(9, &seed, NULL);
    if (r) {
        fprintf(stderr, "velo-check: seed exchange: %s\n", velo_strerror(r));
        return 2;
    }
    velo_info_t info;
    velo_info(ep, &info);
    printf("velo-check: rank %d, %s backend, peer node %u vpid %u, seed %llu\n", rank, info.backend, peer.node,
           peer.vpid, (unsigned long long)seed);
    if (wanted(only, "msg")) {
        unsigned s[64];
        for (unsigned i = 0; i < 64; ++i) s[i] = i + 1;
        check_sizes("msg", s, 64, 3);
    }
    if (wanted(only, "long")) {
        const unsigned s[] = {65, 100, 1000, 1753, 1754, 4096, 20000, 65536};
        check_sizes("long", s, sizeof s / sizeof s[0], 2);
    }
    if (wanted(only, "wait")) check_wait();
    if (wanted(only, "rma")) check_rma();
    if (wanted(only, "munmap")) check_munmap();
    // the last word: both ranks done before either closes
    if (rank == 0) {
        send_ctl(10, 0, 0);
        recv_ctl(11, NULL, NULL);
    } else {
        recv_ctl(10, NULL, NULL);
        send_ctl(11, 0, 0);
    }
    velo_close(ep);
    return failed;
}
