// SPDX-License-Identifier: MIT
// velo-pingpong: a NetPIPE-style sweep over message sizes between two ranks (the paper's
// Figures 5-7): half-round-trip latency, ping-pong bandwidth, streaming bandwidth and message
// rate, in NIC clock cycles and in ns / MB/s at 100 MHz (the paper's FPGA) and 250 MHz.
// Cycle counts come from the fabric's simulated clock (sim backend); on hardware (hw backend, a
// board or a QEMU guest of the co-simulation) the figures are wall-clock ns. With --puts, a second sweep
// (8 B .. 1 MiB): ping-pong of RMA puts, each a notified put into the peer's registered buffer
// that the peer answers with a put of the same size once it sees the notification.
//
//   velo-run -n 2 -- velo-pingpong [--csv out.csv] [--png out.png]
//
// Rank 0 measures and prints; rank 1 echoes. Ranks come from VELO_RANK (velo-run) or --rank;
// rank r opens vpid 10 + r on its node (VELO_NODE) and talks to the other rank on node
// (1 - r) % VELO_NODES.
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "velo/velo.h"

#define BASE_VPID 10
#define MAXSIZES 64

static const double kMhz[2] = {100.0, 250.0};

struct row {
    unsigned size;
    double halfrtt;   // cycles
    double interval;  // cycles per message, streaming
};

static void die(const char* what, int r) {
    fprintf(stderr, "velo-pingpong: %s: %s\n", what, velo_strerror(r));
    exit(1);
}

static void send_all(velo_ep_t* ep, velo_conn_t* c, const void* b, size_t n) {
    (void)ep;
    int r;
    while ((r = velo_send(c, b, n)) == -EAGAIN) sched_yield();
    if (r) die("velo_send", r);
}

static int recv_one(velo_ep_t* ep, velo_msg_t* m) {
    int r = velo_wait(ep, m, 120000);
    if (r < 0) die("velo_wait", r);
    return r;
}

// Time: the fabric's simulated NIC clock (cycles) on the sim backend; on hardware, where there is
// no such clock (velo_clock: -EOPNOTSUPP), the CPU's monotonic clock in ns (wall mode).
static int wall;

static uint64_t wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t tnow(velo_ep_t* ep) {
    if (wall) return wall_ns();
    uint64_t t = 0;
    int r = velo_clock(ep, &t, NULL);
    if (r) die("velo_clock", r);
    return t;
}

// When the last message arrived: the fabric stamps it; in wall mode, now (just after receiving).
static uint64_t last_rx(velo_ep_t* ep) {
    if (wall) return wall_ns();
    uint64_t rx = 0;
    int r = velo_clock(ep, NULL, &rx);
    if (r) die("velo_clock", r);
    return rx;
}

// ---- the put sweep: ping-pong of notified puts (velo_put + VELO_RMA_F_NOTIFY), per size
#define MAXPUT (1u << 20)

// The next completion of kind `want`: TARGET (the peer's notified put into our buffer) or
// REMOTE (our last put, the only one that asks for it, is complete). A REMOTE while waiting for a
// TARGET is counted in *remotes; other kinds are errors.
static velo_rma_cpl_t wait_kind(velo_ep_t* ep, unsigned want, unsigned* remotes) {
    for (;;) {
        velo_rma_cpl_t c;
        int r = velo_rma_wait(ep, &c, 120000);
        if (r) die("velo_rma_wait", r);
        if (c.kind == want) return c;
        if (c.kind == VELO_RMA_KIND_REMOTE && remotes) {
            ++*remotes;
            continue;
        }
        fprintf(stderr, "velo-pingpong: RMA completion kind %u, reason %s\n", c.kind, velo_rma_reason_str(c.reason));
        exit(1);
    }
}

// Returns 0; fills halfrtt[k] (cycles, or ns in wall mode) on rank 0.
static int put_sweep(velo_ep_t* ep, velo_conn_t* c, velo_addr_t peer, int rank, const unsigned* sizes, unsigned n,
                     unsigned iters, double* halfrtt) {
    unsigned maxsz = 1;
    for (unsigned k = 0; k < n; ++k)
        if (sizes[k] > maxsz) maxsz = sizes[k];
    uint8_t* rx = calloc(1, maxsz);
    uint8_t* tx = malloc(maxsz);
    if (!rx || !tx) die("malloc", -ENOMEM);
    for (unsigned k = 0; k < maxsz; ++k) tx[k] = (uint8_t)(k * 13 + 5);
    velo_region_t *rrx, *rtx;
    // the receive buffer: for the peer's puts only (its NIC stamps its node and vpid on them)
    const velo_scope_t only_peer = {
        .kind = VELO_SCOPE_PEER, .node_lo = (uint8_t)peer.node, .vpid_lo = (uint8_t)peer.vpid};
    int r = velo_register(ep, rx, maxsz, VELO_ACCESS_REMOTE_WRITE, &only_peer, &rrx);
    if (r) die("velo_register", r);
    r = velo_register(ep, tx, maxsz, VELO_ACCESS_LOCAL_READ, NULL, &rtx);
    if (r) die("velo_register", r);
    // exchange the receive buffers' NLAs and keys by a message
    struct {
        uint64_t nla;
        uint32_t key, rsvd;
    } mine = {0, 0, 0}, theirs;
    velo_region_nla(rrx, 0, &mine.nla);
    velo_region_rkey(rrx, &mine.key);
    velo_msg_t m;
    if (rank == 0) {
        send_all(ep, c, &mine, sizeof mine);
        if (recv_one(ep, &m) != (int)sizeof theirs) die("NLA exchange", -EPROTO);
    } else {
        if (recv_one(ep, &m) != (int)sizeof theirs) die("NLA exchange", -EPROTO);
        send_all(ep, c, &mine, sizeof mine);
    }
    memcpy(&theirs, m.data, sizeof theirs);
    unsigned remotes = 0;
    for (unsigned si = 0; si < n; ++si) {
        const unsigned len = sizes[si];
        // fewer rounds for large sizes (each round moves 2 x len bytes through the simulation)
        unsigned it_n = iters ? iters : (len <= 4096 ? 50 : len <= 65536 ? 8 : 2);
        const unsigned warm = 1;
        uint64_t t0 = 0;
        for (unsigned it = 0; it < warm + it_n; ++it) {
            // the very last put of each rank also reports REMOTE: the rank must not deregister
            // its source or close while that put is still reading it (the NIC still has the
            // reads to do when the peer has seen the put's first bytes)
            const unsigned fl = VELO_RMA_F_NOTIFY | (si + 1 == n && it + 1 == warm + it_n ? VELO_RMA_F_REMOTE : 0);
            if (rank == 0) {
                if (it == warm) t0 = tnow(ep);
                tx[0] = (uint8_t)it;
                r = velo_put(ep, peer, rtx, 0, theirs.nla, theirs.key, len, fl, it);
                if (r) die("velo_put", r);
                velo_rma_cpl_t k = wait_kind(ep, VELO_RMA_KIND_TARGET, &remotes);
                if (k.len != len || k.cookie != it || rx[0] != (uint8_t)it || rx[len - 1] != tx[len - 1]) {
                    fprintf(stderr, "velo-pingpong: put size %u round %u: wrong answer\n", len, it);
                    return 1;
                }
            } else {
                velo_rma_cpl_t k = wait_kind(ep, VELO_RMA_KIND_TARGET, &remotes);
                tx[0] = rx[0];
                r = velo_put(ep, peer, rtx, 0, theirs.nla, theirs.key, k.len, fl, k.cookie);
                if (r) die("velo_put", r);
            }
        }
        if (rank == 0) {
            const uint64_t t1 = tnow(ep);  // the fabric held the clock while we reacted to the last entry
            halfrtt[si] = (double)(t1 - t0) / (2.0 * it_n);
        }
    }
    // both sides done before the buffers go: our last put is complete (rank 1's echo put was
    // still reading its source when rank 1 deregistered it and closed, so the put broke off
    // part-way and rank 0 waited for its TARGET in vain)
    if (n && !remotes) wait_kind(ep, VELO_RMA_KIND_REMOTE, NULL);
    velo_rma_cpl_t k;
    while (velo_rma_poll(ep, &k) == 0) {
    }
    velo_deregister(rrx);
    velo_deregister(rtx);
    return 0;
}

static void usage(FILE* f) {
    fprintf(f,
            "usage: velo-pingpong [--iters N] [--stream M] [--sizes a,b,c | --all] [--csv FILE] [--png FILE]\n"
            "                     [--rank R] [--bench] [--quiet]\n"
            "  run two ranks: velo-run -n 2 -- velo-pingpong ...\n"
            "  --iters N    ping-pong round trips per size (default 200)\n"
            "  --stream M   messages per size in the streaming test (default 500)\n"
            "  --sizes LIST message sizes in bytes, 1..1048576 (default 1,2,4,8,12,16,24,32,40,48,56,57,64,\n"
            "               128,256,512,1K,2K,4K,16K,64K,256K,1M: above 64 B velo_send sends trains of VELO\n"
            "               messages up to the crossover ($VELO_SEND_CROSSOVER), RMA puts above it)\n"
            "  --all        every size 1..64\n"
            "  --bench      print BENCH lines (api.halfrtt_cycles_8B, ..., api.put_halfrtt_cycles_<size>)\n"
            "  --puts       also a put ping-pong sweep, 8 B .. 1 MiB (RMA: notified puts each way)\n"
            "  --put-sizes LIST  sizes of the put sweep (1..1048576; implies --puts)\n"
            "  --put-iters N     rounds per put size (default: 50 up to 4 KiB, 8 up to 64 KiB, else 2)\n"
            "  --puts-only  only the put sweep\n"
            "  --peer-node N  the other rank's node (default (1 - rank) %% VELO_NODES; a pair on one node\n"
            "               other than 0: its own node)\n"
            "  --wall       wall-clock ns of this machine instead of the fabric's NIC cycles (the only\n"
            "               clock on hardware: the hw backend has no simulated clock)\n");
}

int main(int argc, char** argv) {
    unsigned iters = 200, stream = 500;
    unsigned sizes[MAXSIZES];
    unsigned nsizes = 0;
    const char *csv = NULL, *png = NULL;
    int rank = -1, bench = 0, quiet = 0, puts = 0, puts_only = 0, peer_node = -1;
    unsigned put_sizes[MAXSIZES], nput = 0, put_iters = 0;
    for (int i = 1; i < argc; ++i) {
        const char* a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--iters") && has) {
            iters = (unsigned)atoi(argv[++i]);
        } else if (!strcmp(a, "--stream") && has) {
            stream = (unsigned)atoi(argv[++i]);
        } else if (!strcmp(a, "--sizes") && has) {
            char* s = argv[++i];
            for (char* t = strtok(s, ","); t && nsizes < MAXSIZES; t = strtok(NULL, ","))
                sizes[nsizes++] = (unsigned)atoi(t);
        } else if (!strcmp(a, "--all")) {
            for (unsigned k = 1; k <= 64; ++k) sizes[nsizes++] = k;
        } else if (!strcmp(a, "--csv") && has) {
            csv = argv[++i];
        } else if (!strcmp(a, "--png") && has) {
            png = argv[++i];
        } else if (!strcmp(a, "--rank") && has) {
            rank = atoi(argv[++i]);
        } else if (!strcmp(a, "--peer-node") && has) {
            peer_node = atoi(argv[++i]);
        } else if (!strcmp(a, "--puts")) {
            puts = 1;
        } else if (!strcmp(a, "--puts-only")) {
            puts = puts_only = 1;
        } else if (!strcmp(a, "--put-sizes") && has) {
            puts = 1;
            char* s = argv[++i];
            for (char* t = strtok(s, ","); t && nput < MAXSIZES; t = strtok(NULL, ","))
                put_sizes[nput++] = (unsigned)atoi(t);
        } else if (!strcmp(a, "--put-iters") && has) {
            put_iters = (unsigned)atoi(argv[++i]);
        } else if (!strcmp(a, "--bench")) {
            bench = 1;
        } else if (!strcmp(a, "--wall")) {
            wall = 1;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "velo-pingpong: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!nsizes && !puts_only) {
        const unsigned d[] = {1,  2,   4,   8,   12,   16,   24,   32,    40,    48,     56,     57,
                              64, 128, 256, 512, 1024, 2048, 4096, 16384, 65536, 262144, 1048576};
        for (unsigned k = 0; k < sizeof d / sizeof d[0]; ++k) sizes[nsizes++] = d[k];
    }
    if (puts_only) nsizes = 0;
    if (puts && !nput) {
        // 8 B .. 1 MiB by default: 8, 32, 128, ..., 512 KiB (times 4), 4 KiB and 1 MiB, ascending
        for (unsigned v = 8; v <= MAXPUT; v *= 4) {
            if (v > 4096 && put_sizes[nput - 1] < 4096) put_sizes[nput++] = 4096;
            put_sizes[nput++] = v;
        }
        if (put_sizes[nput - 1] != MAXPUT) put_sizes[nput++] = MAXPUT;
    }
    for (unsigned k = 0; k < nput; ++k)
        if (put_sizes[k] < 1 || put_sizes[k] > MAXPUT) {
            fprintf(stderr, "velo-pingpong: put sizes are 1..%u bytes\n", MAXPUT);
            return 2;
        }
    unsigned maxsize = 64;
    for (unsigned k = 0; k < nsizes; ++k) {
        if (sizes[k] < 1 || sizes[k] > MAXPUT) {
            fprintf(stderr, "velo-pingpong: sizes are 1..%u bytes\n", MAXPUT);
            return 2;
        }
        if (sizes[k] > maxsize) maxsize = sizes[k];
    }
    if (iters < 1 || stream < 2) {
        usage(stderr);
        return 2;
    }
    if (rank < 0) rank = getenv("VELO_RANK") ? atoi(getenv("VELO_RANK")) : 0;
    const int nodes = getenv("VELO_NODES") ? atoi(getenv("VELO_NODES")) : 2;
    if (rank > 1 || nodes < 1) {
        fprintf(stderr, "velo-pingpong: two ranks (0 and 1)\n");
        return 2;
    }
    velo_open_attr_t at;
    velo_open_attr_init(&at);
    at.vpid = BASE_VPID + rank;
    velo_ep_t* ep;
    int r = velo_open(&at, &ep);
    if (r) die("velo_open", r);
    uint64_t probe_t;
    r = velo_clock(ep, &probe_t, NULL);
    if (r == -EOPNOTSUPP)
        wall = 1;  // hardware: wall-clock ns
    else if (r)
        die("velo_clock", r);
    if (wall) bench = 0;  // BENCH lines are simulated cycles
    velo_addr_t me,
        peer = {(uint32_t)(peer_node >= 0 ? peer_node : (1 - rank) % nodes), (uint32_t)(BASE_VPID + 1 - rank)};
    velo_addr(ep, &me);
    velo_conn_t* c = NULL;
    // the peer may not be open yet (sim: refused; hw: no answer): retry for up to 5 minutes
    const time_t give_up = time(NULL) + 300;
    while ((r = velo_connect(ep, peer, 0, &c)) == -ECONNREFUSED || r == -ETIMEDOUT) {
        if (time(NULL) >= give_up) break;
        usleep(1000);
    }
    if (r) die("velo_connect", r);
    velo_info_t info;
    velo_info(ep, &info);
    if (rank == 0 && !quiet)
        printf("velo-pingpong: rank 0 at node %u vpid %u <-> rank 1 at node %u vpid %u (%s backend)\n", me.node,
               me.vpid, peer.node, peer.vpid, info.backend);

    struct row rows[MAXSIZES];
    uint8_t* buf = malloc(maxsize);
    if (!buf) die("malloc", -ENOMEM);
    velo_msg_t m;
    for (unsigned si = 0; si < nsizes; ++si) {
        const unsigned len = sizes[si];
        for (unsigned k = 0; k < len; ++k) buf[k] = (uint8_t)(k * 7 + len);
        // fewer rounds for long messages (each moves 2 x len bytes through the simulation)
        const unsigned it_n = len <= 4096 ? iters : len <= 65536 ? 8 : 2;
        const unsigned st_n = len <= 64 ? stream : len <= 4096 ? (stream + 4) / 5 : 4;
        // ping-pong (a few warm-up rounds first: connection requests, first credit returns)
        const unsigned warm = len <= 4096 ? 4 : 1;
        uint64_t t0 = 0;
        for (unsigned it = 0; it < warm + it_n; ++it) {
            if (rank == 0) {
                if (it == warm) t0 = tnow(ep);
                buf[0] = (uint8_t)it;
                send_all(ep, c, buf, len);
                int n = recv_one(ep, &m);
                if ((unsigned)n != len || memcmp(velo_msg_bytes(&m), buf, len) != 0) {
                    fprintf(stderr, "velo-pingpong: size %u round %u: wrong echo (%d bytes) from node %u vpid %u\n",
                            len, it, n, m.src_node, m.src_vpid);
                    const uint8_t* got = velo_msg_bytes(&m);
                    for (unsigned k = 0; k < len && k < (unsigned)n && k < 128; ++k)
                        if (got[k] != buf[k]) fprintf(stderr, "  byte %u: 0x%02x, sent 0x%02x\n", k, got[k], buf[k]);
                    velo_stats_t vs;
                    if (velo_stats(ep, &vs) == 0)
                        fprintf(stderr, "  frags_rx %llu ctl_bad %llu\n", (unsigned long long)vs.frags_rx,
                                (unsigned long long)vs.ctl_bad);
                    return 1;
                }
            } else {
                int n = recv_one(ep, &m);
                send_all(ep, c, velo_msg_bytes(&m), (size_t)n);
            }
        }
        double halfrtt = 0;
        if (rank == 0) halfrtt = (double)(last_rx(ep) - t0) / (2.0 * it_n);
        // streaming: rank 0 sends back to back; rank 1 times the arrivals, answers with them
        double interval = 0;
        if (rank == 0) {
            for (unsigned k = 0; k < st_n; ++k) {
                buf[0] = (uint8_t)k;
                send_all(ep, c, buf, len);
            }
            int n = recv_one(ep, &m);
            if (n != 16) {
                fprintf(stderr, "velo-pingpong: stream answer of %d bytes\n", n);
                return 1;
            }
            uint64_t first, last;
            memcpy(&first, m.data, 8);
            memcpy(&last, m.data + 8, 8);
            interval = (double)(last - first) / (st_n - 1);
        } else {
            uint64_t first = 0, last = 0;
            for (unsigned k = 0; k < st_n; ++k) {
                int n = recv_one(ep, &m);
                if ((unsigned)n != len || *(const uint8_t*)velo_msg_bytes(&m) != (uint8_t)k) {
                    fprintf(stderr, "velo-pingpong: stream message %u of size %u wrong\n", k, len);
                    return 1;
                }
                if (k == 0) first = last_rx(ep);
            }
            last = last_rx(ep);
            uint8_t ans[16];
            memcpy(ans, &first, 8);
            memcpy(ans + 8, &last, 8);
            send_all(ep, c, ans, 16);
        }
        rows[si] = (struct row){len, halfrtt, interval};
    }

    double put_rtt[MAXSIZES];
    if (nput && put_sweep(ep, c, peer, rank, put_sizes, nput, put_iters, put_rtt)) return 1;

    if (rank == 0) {
        if (!quiet && nsizes && wall) {
            printf("\n     size |  half RTT | ping-pong MB/s | stream ns/msg | stream MB/s | msg rate M/s\n");
            printf("      (B) |      (ns) |                |               |             |\n");
            for (unsigned si = 0; si < nsizes; ++si) {
                const struct row* w = &rows[si];
                printf("  %7u | %9.0f | %14.2f | %13.0f | %11.2f | %12.3f\n", w->size, w->halfrtt,
                       w->size * 1000.0 / w->halfrtt, w->interval, w->size * 1000.0 / w->interval,
                       1000.0 / w->interval);
            }
            printf("\n  wall-clock times of this machine (%s backend), not simulated NIC cycles\n", info.backend);
        }
        if (!quiet && nsizes && !wall) {
            printf(
                "\n     size |  half RTT | ns @100MHz | ns @250MHz | ping-pong MB/s      | stream cyc/msg | stream MB/s"
                "         | msg rate M/s\n");
            printf(
                "      (B) |  (cycles) |            |            | @100MHz   @250MHz   |                | @100MHz  "
                " @250MHz  | @100MHz @250MHz\n");
            for (unsigned si = 0; si < nsizes; ++si) {
                const struct row* w = &rows[si];
                printf("  %7u | %9.1f | %10.0f | %10.0f | %8.1f  %8.1f  | %14.2f | %8.1f  %8.1f  | %6.2f  %6.2f\n",
                       w->size, w->halfrtt, w->halfrtt * 1000 / kMhz[0], w->halfrtt * 1000 / kMhz[1],
                       w->size * kMhz[0] / w->halfrtt, w->size * kMhz[1] / w->halfrtt, w->interval,
                       w->size * kMhz[0] / w->interval, w->size * kMhz[1] / w->interval, kMhz[0] / w->interval,
                       kMhz[1] / w->interval);
            }
            printf(
                "\n  cycles are NIC clock cycles of the simulated RTL; the simulated host adds no CPU, cache or\n"
                "  PCIe root-complex time (paper, FPGA at 100 MHz, measured with CPUs: 970 ns half round trip,\n"
                "  of which ~350 ns CPU and northbridge; 4.8 M msg/s)\n");
        }
        if (csv && wall) {
            FILE* f = fopen(csv, "w");
            if (!f) {
                perror(csv);
                return 1;
            }
            fprintf(f, "size,halfrtt_ns,pingpong_MBps,stream_ns_per_msg,stream_MBps,msgrate_M\n");
            for (unsigned si = 0; si < nsizes; ++si) {
                const struct row* w = &rows[si];
                fprintf(f, "%u,%.1f,%.3f,%.1f,%.3f,%.4f\n", w->size, w->halfrtt, w->size * 1000.0 / w->halfrtt,
                        w->interval, w->size * 1000.0 / w->interval, 1000.0 / w->interval);
            }
            fclose(f);
            if (!quiet) printf("  wrote %s\n", csv);
        } else if (csv) {
            FILE* f = fopen(csv, "w");
            if (!f) {
                perror(csv);
                return 1;
            }
            fprintf(f,
                    "size,halfrtt_cycles,halfrtt_ns_100MHz,halfrtt_ns_250MHz,pingpong_MBps_100MHz,pingpong_MBps_"
                    "250MHz,stream_cycles_per_msg,stream_MBps_100MHz,stream_MBps_250MHz,msgrate_M_100MHz,msgrate_M_"
                    "250MHz\n");
            for (unsigned si = 0; si < nsizes; ++si) {
                const struct row* w = &rows[si];
                fprintf(f, "%u,%.2f,%.1f,%.1f,%.3f,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f\n", w->size, w->halfrtt,
                        w->halfrtt * 1000 / kMhz[0], w->halfrtt * 1000 / kMhz[1], w->size * kMhz[0] / w->halfrtt,
                        w->size * kMhz[1] / w->halfrtt, w->interval, w->size * kMhz[0] / w->interval,
                        w->size * kMhz[1] / w->interval, kMhz[0] / w->interval, kMhz[1] / w->interval);
            }
            fclose(f);
            if (!quiet) printf("  wrote %s\n", csv);
        }
        if (png && wall) {
            fprintf(stderr, "velo-pingpong: --png plots the simulated NIC clock's figures only\n");
        } else if (png) {
            if (!csv) {
                fprintf(stderr, "velo-pingpong: --png needs --csv (the plot reads it)\n");
            } else if (system("command -v gnuplot > /dev/null 2>&1") != 0) {
                fprintf(stderr, "velo-pingpong: gnuplot not found, no plot (Debian: apt-get install gnuplot-nox)\n");
            } else {
                FILE* g = popen("gnuplot", "w");
                if (g) {
                    fprintf(g,
                            "set terminal pngcairo size 1200,900 noenhanced\n"
                            "set output '%s'\nset datafile separator ','\nset key top left\nset grid\n"
                            "set multiplot layout 2,2 title 'VELO (simulated RTL): NetPIPE-style sweep'\n"
                            "set xlabel 'message size (bytes)'\nset logscale x 2\nset format x '%%.0b%%B'\n"
                            "set ylabel 'half round trip (ns)'\nset logscale y\n"
                            "plot '%s' using 1:3 every ::1 with linespoints title '100 MHz', '' using 1:4 every ::1 "
                            "with linespoints title '250 MHz'\n"
                            "unset logscale y\nset ylabel 'ping-pong bandwidth (MB/s)'\n"
                            "plot '%s' using 1:5 every ::1 with linespoints title '100 MHz', '' using 1:6 every ::1 "
                            "with linespoints title '250 MHz'\n"
                            "set ylabel 'streaming bandwidth (MB/s)'\n"
                            "plot '%s' using 1:8 every ::1 with linespoints title '100 MHz', '' using 1:9 every ::1 "
                            "with linespoints title '250 MHz'\n"
                            "set ylabel 'message rate (M msg/s)'\n"
                            "plot '%s' using 1:10 every ::1 with linespoints title '100 MHz', '' using 1:11 every ::1 "
                            "with linespoints title '250 MHz'\n"
                            "unset multiplot\n",
                            png, csv, csv, csv, csv);
                    if (pclose(g) == 0 && !quiet) printf("  wrote %s\n", png);
                }
            }
        }
        if (!quiet && nput && wall) {
            printf("\n  put ping-pong (a notified put each way; the peer answers when it sees the notification)\n");
            printf("      size | half RTT (us) | MB/s\n");
            for (unsigned k = 0; k < nput; ++k)
                printf("  %8u | %13.2f | %8.2f\n", put_sizes[k], put_rtt[k] / 1000.0,
                       put_sizes[k] * 1000.0 / put_rtt[k]);
        }
        if (!quiet && nput && !wall) {
            printf("\n  put ping-pong (a notified put each way; the peer answers when it sees the notification)\n");
            printf("      size | half RTT (cycles) | us @100MHz | us @250MHz | MB/s @100MHz | MB/s @250MHz\n");
            for (unsigned k = 0; k < nput; ++k)
                printf("  %8u | %17.1f | %10.2f | %10.2f | %12.1f | %12.1f\n", put_sizes[k], put_rtt[k],
                       put_rtt[k] / kMhz[0], put_rtt[k] / kMhz[1], put_sizes[k] * kMhz[0] / put_rtt[k],
                       put_sizes[k] * kMhz[1] / put_rtt[k]);
        }
        if (bench)
            for (unsigned k = 0; k < nput; ++k) {
                if (put_sizes[k] >= 1024)
                    printf("BENCH api.put_halfrtt_cycles_%uKiB %.1f cycles\n", put_sizes[k] / 1024, put_rtt[k]);
                else
                    printf("BENCH api.put_halfrtt_cycles_%uB %.1f cycles\n", put_sizes[k], put_rtt[k]);
            }
        if (bench) {
            for (unsigned si = 0; si < nsizes; ++si) {
                const struct row* w = &rows[si];
                if (w->size == 8) {
                    printf("BENCH api.halfrtt_cycles_8B %.1f cycles\n", w->halfrtt);
                    printf("BENCH api.halfrtt_ns_8B_100MHz %.0f ns\n", w->halfrtt * 1000 / kMhz[0]);
                    printf("BENCH api.stream_cycles_per_msg_8B %.2f cycles\n", w->interval);
                    printf("BENCH api.msgrate_8B_100MHz %.2f Mmsg/s\n", kMhz[0] / w->interval);
                }
                if (w->size == 64) {
                    printf("BENCH api.halfrtt_cycles_64B %.1f cycles\n", w->halfrtt);
                    printf("BENCH api.stream_MBps_64B_100MHz %.1f MB/s\n", w->size * kMhz[0] / w->interval);
                }
                if (w->size > 64 && w->size % 1024 == 0)
                    printf("BENCH api.send_halfrtt_cycles_%uKiB %.1f cycles\n", w->size / 1024, w->halfrtt);
                else if (w->size > 64)
                    printf("BENCH api.send_halfrtt_cycles_%uB %.1f cycles\n", w->size, w->halfrtt);
            }
        }
    }
    velo_close(ep);
    return 0;
}
