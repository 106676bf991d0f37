// SPDX-License-Identifier: MIT
// velo-bench-api: workloads for sw/tools/bench_api.sh (not a test).
//   send8 K      K velo_send of 8 bytes on the hw backend over a mocked mapping (plain memory)
//   poll-hit K   K velo_poll that find a one-line message (written as the NIC writes it)
//   poll-miss K  K velo_poll on an empty mailbox
//   simrate S    under velo-run -n N: every rank streams to the next one for S seconds; rank 0
//                prints the simulated cycles per wall-clock second (BENCH fabric.sim_cycles_per_s)
// The first three run under valgrind --tool=callgrind --toggle-collect=velo_send (velo_poll):
// the instruction count per call is the collected total divided by K.
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
#include "velo/velo_hw.h"

#include "mock.h"  // the test-only mock backend: an endpoint on plain memory with the hw fast paths

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int simrate(double seconds) {
    const int rank = getenv("VELO_RANK") ? atoi(getenv("VELO_RANK")) : 0;
    const int size = getenv("VELO_SIZE") ? atoi(getenv("VELO_SIZE")) : 2;
    const int nodes = getenv("VELO_NODES") ? atoi(getenv("VELO_NODES")) : 2;
    velo_open_attr_t a;
    velo_open_attr_init(&a);
    a.vpid = 20 + rank / nodes;
    velo_ep_t* ep;
    int r = velo_open(&a, &ep);
    if (r) {
        fprintf(stderr, "open: %s\n", velo_strerror(r));
        return 1;
    }
    const int to = (rank + 1) % size;
    velo_addr_t dst = {(uint32_t)(to % nodes), (uint32_t)(20 + to / nodes)};
    velo_conn_t* c = NULL;
    for (int k = 0; k < 60000; ++k) {
        r = velo_connect(ep, dst, VELO_CONNECT_NOWAIT, &c);
        if (r != -ECONNREFUSED) break;
        usleep(1000);
    }
    if (r) {
        fprintf(stderr, "connect: %s\n", velo_strerror(r));
        return 1;
    }
    uint8_t b[32] = {1};
    velo_msg_t m;
    uint64_t c0 = 0, c1 = 0, got = 0;
    double t0 = 0;
    const double start = now_s();
    for (;;) {
        const double t = now_s();
        if (t0 == 0 && t - start > 0.2) {  // after the connections settled
            t0 = t;
            velo_clock(ep, &c0, NULL);
        }
        if (t0 != 0 && t - t0 > seconds) break;
        for (int k = 0; k < 16; ++k) {
            r = velo_send(c, b, sizeof b);
            if (r == -EAGAIN) break;
            if (r) {
                fprintf(stderr, "send: %s\n", velo_strerror(r));
                return 1;
            }
        }
        while (velo_poll(ep, &m) > 0) ++got;
        sched_yield();
    }
    velo_clock(ep, &c1, NULL);
    const double dt = now_s() - t0;
    if (rank == 0) {
        printf("BENCH fabric.sim_cycles_per_s_%dnodes %.0f cycles/s\n", nodes, (double)(c1 - c0) / dt);
        printf("# %d ranks streaming 32-byte messages to their neighbour; rank 0 received %llu\n", size,
               (unsigned long long)got);
    }
    // keep reading until the neighbours are done too (they may wait for credit from us)
    const double end = now_s() + 0.3;
    while (now_s() < end) {
        if (velo_poll(ep, &m) <= 0) sched_yield();
    }
    velo_close(ep);
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: velo-bench-api send8|poll-hit|poll-miss K | simrate SECONDS\n");
        return 2;
    }
    const char* mode = argv[1];
    if (!strcmp(mode, "simrate")) return simrate(atof(argv[2]));
    const long k = atol(argv[2]);
    velo_ep_t* ep;
    if (velo__mock_open(&ep, 0, 1, 16)) return 1;
    if (!strcmp(mode, "send8")) {
        static uint8_t window[4096] __attribute__((aligned(4096)));
        velo_conn_t* c;
        if (velo__mock_connect(ep, (velo_addr_t){1, 2}, window, 0x7FFFFFFF, &c)) return 1;
        uint64_t msg = 0x0102030405060708ull;
        for (long i = 0; i < k; ++i) {
            msg += (uint64_t)i;
            if (velo_send(c, &msg, 8)) return 1;
        }
        return window[7 * 64] == (uint8_t)msg ? 0 : 1;
    }
    velo_msg_t m;
    if (!strcmp(mode, "poll-miss")) {
        long n = 0;
        for (long i = 0; i < k; ++i) n += velo_poll(ep, &m) == -EAGAIN;
        return n == k ? 0 : 1;
    }
    if (!strcmp(mode, "poll-hit")) {
        // 8-byte messages from node 3 vpid 4, one line each, phase 1 (first pass)
        uint8_t* ring = velo__mock_ring(ep);
        const long lines = 1L << 16;
        if (k > lines) return 2;
        for (long i = 0; i < k; ++i) {
            uint64_t h = VELO_FIELD_PREP(VELO_MBOX_HDR_PHASE, 1) | VELO_FIELD_PREP(VELO_MBOX_HDR_LINES, 1) |
                         VELO_FIELD_PREP(VELO_MBOX_HDR_TYPE, VELO_PKT_TYPE_VELO) |
                         VELO_FIELD_PREP(VELO_MBOX_HDR_MSG_LEN_M1, 7) | VELO_FIELD_PREP(VELO_MBOX_HDR_SRC_NODE, 3) |
                         VELO_FIELD_PREP(VELO_MBOX_HDR_SRC_VPID, 4) | VELO_FIELD_PREP(VELO_MBOX_HDR_FRAG_LEN_M1, 7);
            memcpy(ring + 64 * i + 8, &i, 8);
            memcpy(ring + 64 * i, &h, 8);
        }
        long sum = 0;
        for (long i = 0; i < k; ++i) {
            if (velo_poll(ep, &m) != 8) return 1;
            long v;
            memcpy(&v, m.data, 8);
            sum += v == i;
        }
        return sum == k ? 0 : 1;
    }
    return 2;
}
