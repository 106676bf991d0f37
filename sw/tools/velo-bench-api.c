// SPDX-License-Identifier: MIT
// velo-bench-api: workloads for sw/tools/bench_api.sh (not a test).
//   send8 K      K velo_send of 8 bytes on the hw backend over a mocked mapping (plain memory)
//   poll-hit K   K velo_poll that find a one-line message (written as the NIC writes it)
//   poll-miss K  K velo_poll on an empty mailbox
// They run under valgrind --tool=callgrind --toggle-collect=velo_send (velo_poll):
// the instruction count per call is the collected total divided by K.
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "velo/velo.h"
#include "velo/velo_hw.h"

#include "mock.h"  // the test-only mock backend: an endpoint on plain memory with the hw fast paths

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: velo-bench-api send8|poll-hit|poll-miss K\n");
        return 2;
    }
    const char* mode = argv[1];
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
