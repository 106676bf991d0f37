// SPDX-License-Identifier: MIT
// cosim_msg: the message exchange of the co-simulation guests (docs/cosim.md), through libvelo's
// hw backend on /dev/velo0. Runs inside a guest, in the chroot of the host's root file system.
//
//   cosim_msg --version
//   cosim_msg info --node N [--vpid V]       open an endpoint (at vpid V), check backend and node id
//   (every mode: --device DEV, libvelo's device string, default hw:/dev/velo0; its backend must be
//   the endpoint's)
//   cosim_msg send --node N --vpid V --peer-node P --peer-vpid W [--count C] [--seed S]
//                  [--max-size B] [--timeout SEC] [--prefix NAME]
//   cosim_msg echo ...the same options, from the other side
//
// send: connects to (P, W), sends C messages (message i: sizes[i % n] bytes of a pattern drawn
// from S and i; sizes 1..64, then doubling up to --max-size), then receives C echoes and checks
// each against the pattern. echo: receives C messages and checks every byte, the order and the
// source (P, W), then connects back and sends each message again; send ends with a 4-byte
// "FIN!" that echo waits for before it closes its endpoint. Both print
// "VELOTEST <prefix>.<step> PASS|FAIL <detail>" lines; exit status 0 when all passed.
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "velo/velo.h"

#define MAX_SIZES 96
static const char FIN[4] = {'F', 'I', 'N', '!'};

struct opts {
    const char* mode;
    long node, vpid, peer_node, peer_vpid;
    unsigned long count, seed, max_size, timeout_s;
    const char* prefix;
    const char* device;
};

static int nfail;

static void verdict(const struct opts* o, const char* step, int ok, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void verdict(const struct opts* o, const char* step, int ok, const char* fmt, ...) {
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    printf("VELOTEST %s.%s %s %s\n", o->prefix, step, ok ? "PASS" : "FAIL", detail);
    fflush(stdout);
    if (!ok) nfail++;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// Byte k of message i: splitmix64 of (seed, i, k / 8), so that every message differs from its
// neighbours in every 8-byte word.
static uint8_t pattern(uint64_t seed, uint64_t i, size_t k) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull + (k / 8) * 0x94D049BB133111EBull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (uint8_t)(z >> (8 * (k % 8)));
}

// The sizes of the messages: 1..64 (one store burst each), then 96, 128, 256, ... up to max.
static unsigned make_sizes(size_t max, size_t* sizes) {
    unsigned n = 0;
    for (size_t s = 1; s <= 64 && s <= max; ++s) sizes[n++] = s;
    if (max > 64) sizes[n++] = 96;
    for (size_t s = 128; s <= max && n < MAX_SIZES; s *= 2) sizes[n++] = s;
    if (sizes[n - 1] != max && n < MAX_SIZES && max > 96) sizes[n++] = max;
    return n;
}

static void fill(uint64_t seed, uint64_t i, uint8_t* buf, size_t len) {
    for (size_t k = 0; k < len; ++k) buf[k] = pattern(seed, i, k);
}

// The first byte where buf differs from message i's pattern, or -1.
static long mismatch(uint64_t seed, uint64_t i, const uint8_t* buf, size_t len) {
    for (size_t k = 0; k < len; ++k)
        if (buf[k] != pattern(seed, i, k)) return (long)k;
    return -1;
}

// Which message of the sequence the bytes are: the first index (< count) whose size and
// pattern they have, or -1.
static long identify(const struct opts* o, const size_t* sizes, unsigned nsizes, const uint8_t* b, size_t len) {
    for (unsigned long j = 0; j < o->count; ++j)
        if (sizes[j % nsizes] == len && mismatch(o->seed, j, b, len) < 0) return (long)j;
    return -1;
}

// The bad messages seen so far: how many, and what the first few were.
struct tally {
    unsigned long bad;
    char report[700];
};

// Check the message received at position pos (it must be message pos, from the peer); a bad one
// is counted, described on stderr and, for the first four, in t->report.
static void check_msg(const struct opts* o, const size_t* sizes, unsigned nsizes, unsigned long pos,
                      const velo_msg_t* m, struct tally* t) {
    const uint8_t* b = velo_msg_bytes(m);
    size_t len = velo_msg_size(m), want = sizes[pos % nsizes];
    long k = len == want ? mismatch(o->seed, pos, b, len) : 0;
    if (len == want && k < 0 && m->src_node == o->peer_node && m->src_vpid == o->peer_vpid) return;
    long j = identify(o, sizes, nsizes, b, len);
    char d[200];
    int n = snprintf(d, sizeof d, "#%lu from %u.%u: %zu bytes (want %zu), ", pos, m->src_node, m->src_vpid, len, want);
    if (j >= 0)
        snprintf(d + n, sizeof d - n, "is message %ld", j);
    else
        snprintf(d + n, sizeof d - n, "no message of the sequence (byte %ld differs; bytes %02x %02x %02x %02x ..)", k,
                 len > 0 ? b[0] : 0, len > 1 ? b[1] : 0, len > 2 ? b[2] : 0, len > 3 ? b[3] : 0);
    fprintf(stderr, "cosim_msg: %s: bad message %s\n", o->prefix, d);
    if (t->bad++ < 4) {
        size_t used = strlen(t->report);
        snprintf(t->report + used, sizeof t->report - used, "; %s", d);
    }
}

// The library's counters of the endpoint, for the console (what a failure looked like).
static void print_stats(const struct opts* o, velo_ep_t* ep) {
    velo_stats_t st;
    if (velo_stats(ep, &st)) return;
    fprintf(stderr,
            "cosim_msg: %s: stats: frags_rx %llu credit_msgs_tx %llu credit_msgs_rx %llu send_eagain %llu ctl_bad %llu "
            "trains_tx %llu trains_rx %llu large_tx %llu large_rx %llu large_eagain %llu rma_reissues %llu "
            "rma_nq_bad %llu\n",
            o->prefix, (unsigned long long)st.frags_rx, (unsigned long long)st.credit_msgs_tx,
            (unsigned long long)st.credit_msgs_rx, (unsigned long long)st.send_eagain, (unsigned long long)st.ctl_bad,
            (unsigned long long)st.trains_tx, (unsigned long long)st.trains_rx, (unsigned long long)st.large_tx,
            (unsigned long long)st.large_rx, (unsigned long long)st.large_eagain, (unsigned long long)st.rma_reissues,
            (unsigned long long)st.rma_nq_bad);
}

static int open_ep(const struct opts* o, const char* step, long vpid, velo_ep_t** ep) {
    velo_open_attr_t a;
    velo_open_attr_init(&a);
    a.device = o->device;
    a.vpid = (int)vpid;
    a.connect_timeout_ms = 5000;
    int r = velo_open(&a, ep);
    if (r) {
        verdict(o, step, 0, "velo_open(%s, vpid %ld): %s", o->device, vpid, velo_strerror(r));
        return r;
    }
    velo_addr_t me;
    velo_info_t inf;
    int ra = velo_addr(*ep, &me);
    int ri = velo_info(*ep, &inf);
    int ok = !ra && !ri && !strncmp(inf.backend, o->device, strlen(inf.backend)) &&
             o->device[strlen(inf.backend)] == ':' && (long)me.node == o->node && (vpid < 0 || (long)me.vpid == vpid);
    verdict(o, step, ok,
            "backend %s node %u (want %ld) vpid %u (want %ld) node_bits %u vpid_bits %u "
            "ring_lines %u credit_lines %u send_max %u crossover %u train_max %u",
            ri ? "?" : inf.backend, ra ? 0 : me.node, o->node, ra ? 0 : me.vpid, vpid, ri ? 0 : inf.node_bits,
            ri ? 0 : inf.vpid_bits, ri ? 0 : inf.ring_lines, ri ? 0 : inf.credit_lines, ri ? 0 : inf.send_max,
            ri ? 0 : inf.crossover, ri ? 0 : inf.train_max);
    return ok ? 0 : -EPROTO;
}

// Connect to the peer, again and again until the deadline: the peer's guest may still be booting.
static int connect_peer(const struct opts* o, velo_ep_t* ep, int64_t deadline, velo_conn_t** c) {
    velo_addr_t dst = {(uint32_t)o->peer_node, (uint32_t)o->peer_vpid};
    unsigned tries = 0;
    int r;
    do {
        ++tries;
        r = velo_connect(ep, dst, 0, c);
        if (r == -ECONNREFUSED) nanosleep(&(struct timespec){0, 100000000},
                                          NULL);  // sim: no endpoint there yet
    } while ((r == -ETIMEDOUT || r == -ECONNREFUSED) && now_ms() < deadline);
    verdict(o, "connect", r == 0, "to node %ld vpid %ld: %s after %u attempt(s)", o->peer_node, o->peer_vpid,
            r ? velo_strerror(r) : "connected", tries);
    return r;
}

static int send_msg(velo_ep_t* ep, velo_conn_t* c, const void* buf, size_t len, int64_t deadline) {
    for (;;) {
        int r = velo_send(c, buf, len);
        if (r != -EAGAIN) return r;
        if (now_ms() >= deadline) return -ETIMEDOUT;
        r = velo_idle(ep, 100);  // takes the destination's credit returns
        if (r < 0) return r;
    }
}

static int recv_msg(velo_ep_t* ep, velo_msg_t* m, int64_t deadline) {
    int64_t left = deadline - now_ms();
    return velo_wait(ep, m, left > 0 ? (int)(left > 1000000 ? 1000000 : left) : 0);
}

static int run_info(const struct opts* o) {
    velo_ep_t* ep;
    int r = open_ep(o, "info", o->vpid, &ep);  // --vpid: that one (default: any)
    if (r == 0) r = velo_close(ep);
    return r ? 1 : 0;
}

static int run_send(const struct opts* o, const size_t* sizes, unsigned nsizes, uint8_t* buf) {
    const int64_t deadline = now_ms() + (int64_t)o->timeout_s * 1000;
    velo_ep_t* ep;
    velo_conn_t* c;
    if (open_ep(o, "open", o->vpid, &ep)) return 1;
    if (connect_peer(o, ep, deadline, &c)) return 1;
    uint64_t bytes = 0;
    unsigned long i;
    int r = 0;
    for (i = 0; i < o->count; ++i) {
        size_t len = sizes[i % nsizes];
        fill(o->seed, i, buf, len);
        r = send_msg(ep, c, buf, len, deadline);
        if (r) break;
        bytes += len;
    }
    verdict(o, "send", r == 0, "%lu of %lu messages sent (%llu bytes)%s%s", i, o->count, (unsigned long long)bytes,
            r ? ": " : "", r ? velo_strerror(r) : "");
    if (r) return 1;
    // the echoes: the same messages, in the same order, from the peer
    unsigned long got = 0;
    struct tally t = {0, ""};
    for (; got < o->count; ++got) {
        velo_msg_t m;
        r = recv_msg(ep, &m, deadline);
        if (r < 0) break;
        check_msg(o, sizes, nsizes, got, &m, &t);
    }
    verdict(o, "echo", r >= 0 && !t.bad, "%lu of %lu echoes received, %lu wrong%s%s%s", got, o->count, t.bad, t.report,
            r < 0 ? "; velo_wait: " : "", r < 0 ? velo_strerror(r) : "");
    // the end: the peer keeps its endpoint open until this arrives (its last echoes are then
    // surely delivered before it closes)
    if (r >= 0) {
        r = send_msg(ep, c, FIN, sizeof FIN, deadline);
        if (r) verdict(o, "fin", 0, "velo_send: %s", velo_strerror(r));
    }
    print_stats(o, ep);
    velo_close(ep);
    return nfail ? 1 : 0;
}

static int run_echo(const struct opts* o, const size_t* sizes, unsigned nsizes) {
    const int64_t deadline = now_ms() + (int64_t)o->timeout_s * 1000;
    velo_ep_t* ep;
    velo_conn_t* c;
    if (open_ep(o, "open", o->vpid, &ep)) return 1;
    uint8_t** kept = calloc(o->count, sizeof *kept);
    size_t* lens = calloc(o->count, sizeof *lens);
    if (!kept || !lens) {
        verdict(o, "recv", 0, "out of memory");
        return 1;
    }
    unsigned long got = 0;
    struct tally t = {0, ""};
    uint64_t bytes = 0;
    int r = 0;
    for (; got < o->count; ++got) {
        velo_msg_t m;
        r = recv_msg(ep, &m, deadline);
        if (r < 0) break;
        check_msg(o, sizes, nsizes, got, &m, &t);
        size_t len = velo_msg_size(&m);
        kept[got] = malloc(len);
        if (!kept[got]) {
            r = -ENOMEM;
            break;
        }
        memcpy(kept[got], velo_msg_bytes(&m), len);
        lens[got] = len;
        bytes += len;
    }
    verdict(o, "recv", r >= 0 && !t.bad, "%lu of %lu messages received in order (%llu bytes), %lu wrong%s%s%s", got,
            o->count, (unsigned long long)bytes, t.bad, t.report, r < 0 ? "; velo_wait: " : "",
            r < 0 ? velo_strerror(r) : "");
    // wrong messages are echoed as they came (the sender then reports its side too)
    if (r < 0) {
        print_stats(o, ep);
        return 1;
    }
    if (connect_peer(o, ep, deadline, &c)) return 1;
    unsigned long i;
    for (i = 0; i < o->count; ++i) {
        r = send_msg(ep, c, kept[i], lens[i], deadline);
        if (r) break;
        free(kept[i]);
    }
    verdict(o, "send", r == 0, "%lu of %lu messages echoed%s%s", i, o->count, r ? ": " : "", r ? velo_strerror(r) : "");
    // stay until the sender has taken the last echo and says so
    if (r == 0) {
        velo_msg_t m;
        r = recv_msg(ep, &m, deadline);
        int ok = r == (int)sizeof FIN && !memcmp(m.data, FIN, sizeof FIN) && m.src_node == o->peer_node &&
                 m.src_vpid == o->peer_vpid;
        verdict(o, "fin", ok, "%s", r < 0 ? velo_strerror(r) : ok ? "the end message" : "not the end message");
    }
    print_stats(o, ep);
    velo_close(ep);
    free(kept);
    free(lens);
    return nfail ? 1 : 0;
}

static void usage(FILE* f) {
    fprintf(f,
            "usage: cosim_msg --version\n"
            "       cosim_msg info --node N\n"
            "       cosim_msg send|echo --node N --vpid V --peer-node P --peer-vpid W "
            "[--count C] [--seed S]\n"
            "                           [--max-size B] [--timeout SEC] [--prefix NAME] "
            "[--device DEV]\n"
            "  send: C messages to (P, W), then their echoes checked; echo: receive and "
            "check C messages\n"
            "  from (P, W), then send them back. Message sizes 1..64, then doubling up to B "
            "(default 64).\n");
}

static int num(const char* s, long lo, long hi, long* out) {
    char* end;
    errno = 0;
    long v = strtol(s, &end, 0);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int main(int argc, char** argv) {
    struct opts o = {.node = -1,
                     .vpid = -1,
                     .peer_node = -1,
                     .peer_vpid = -1,
                     .count = 128,
                     .seed = 1,
                     .max_size = 64,
                     .timeout_s = 300,
                     .prefix = "velo",
                     .device = "hw:/dev/velo0"};
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        printf("cosim_msg: libvelo API %d\n", VELO_API_VERSION);
        return 0;
    }
    if (argc < 2 || (strcmp(argv[1], "info") && strcmp(argv[1], "send") && strcmp(argv[1], "echo"))) {
        usage(stderr);
        return 2;
    }
    o.mode = argv[1];
    for (int i = 2; i < argc; ++i) {
        const char* a = argv[i];
        long v;
        if (i + 1 >= argc) {
            usage(stderr);
            return 2;
        }
        const char* s = argv[++i];
        if (!strcmp(a, "--prefix") || !strcmp(a, "--device")) {
            *(a[2] == 'p' ? &o.prefix : &o.device) = s;
            continue;
        }
        long* dst = !strcmp(a, "--node")        ? &o.node
                    : !strcmp(a, "--vpid")      ? &o.vpid
                    : !strcmp(a, "--peer-node") ? &o.peer_node
                    : !strcmp(a, "--peer-vpid") ? &o.peer_vpid
                                                : NULL;
        if (dst) {
            if (num(s, 0, 255, dst)) goto bad;
        } else if (!strcmp(a, "--count") && !num(s, 1, 1000000, &v)) {
            o.count = (unsigned long)v;
        } else if (!strcmp(a, "--seed") && !num(s, 0, 0x7fffffff, &v)) {
            o.seed = (unsigned long)v;
        } else if (!strcmp(a, "--max-size") && !num(s, 1, 1 << 20, &v)) {
            o.max_size = (unsigned long)v;
        } else if (!strcmp(a, "--timeout") && !num(s, 1, 86400, &v)) {
            o.timeout_s = (unsigned long)v;
        } else {
            goto bad;
        }
        continue;
    bad:
        fprintf(stderr, "cosim_msg: bad option %s %s\n", a, s);
        usage(stderr);
        return 2;
    }
    if (o.node < 0) {
        fprintf(stderr, "cosim_msg: --node is required\n");
        return 2;
    }
    if (!strcmp(o.mode, "info")) return run_info(&o);
    if (o.vpid < 0 || o.peer_node < 0 || o.peer_vpid < 0) {
        fprintf(stderr, "cosim_msg: %s needs --vpid, --peer-node and --peer-vpid\n", o.mode);
        return 2;
    }
    size_t sizes[MAX_SIZES];
    unsigned nsizes = make_sizes(o.max_size, sizes);
    if (!strcmp(o.mode, "send")) {
        uint8_t* buf = malloc(o.max_size);
        if (!buf) return 1;
        int r = run_send(&o, sizes, nsizes, buf);
        free(buf);
        return r;
    }
    return run_echo(&o, sizes, nsizes);
}
