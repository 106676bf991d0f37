// SPDX-License-Identifier: MIT
// eth_inject: sends malformed Ethernet-over-VELO messages to a velo-tap, for test_tap.sh: what a
// hostile process with a VELO endpoint can do. Each must be dropped and counted by the receiver.
//   eth_inject <dst node> <vpid bits> <instance> <mtu>    (VELO_DEVICE, VELO_NODE as usual)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "velo/velo.h"
#include "velo_eth_proto.h"

static int send_or_die(velo_conn_t* c, const uint8_t* b, size_t n) {
    int r;
    for (int i = 0; (r = velo_send(c, b, n)) == -EAGAIN && i < 100000; ++i) usleep(100);
    if (r) fprintf(stderr, "eth_inject: velo_send of %zu bytes: %s\n", n, velo_strerror(r));
    return r;
}

int main(int argc, char** argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: eth_inject <dst node> <vpid bits> <instance> <mtu>\n");
        return 2;
    }
    const unsigned dst = (unsigned)atoi(argv[1]), vb = (unsigned)atoi(argv[2]), inst = (unsigned)atoi(argv[3]),
                   mtu = (unsigned)atoi(argv[4]);
    velo_ep_t* ep;
    velo_open_attr_t a;
    velo_open_attr_init(&a);
    int r = velo_open(&a, &ep);
    if (r) {
        fprintf(stderr, "eth_inject: velo_open: %s\n", velo_strerror(r));
        return 1;
    }
    velo_addr_t me;
    velo_addr(ep, &me);
    velo_conn_t* c;
    if ((r = velo_connect(ep, (velo_addr_t){dst, VELO_ETH_VPID(vb, inst)}, 0, &c))) {
        fprintf(stderr, "eth_inject: velo_connect: %s\n", velo_strerror(r));
        return 1;
    }
    size_t big = VELO_ETH_HDR_BYTES + velo_eth_max_frame(mtu) + 64;
    uint8_t* b = calloc(1, big);
    if (!b) return 1;
    // 1: junk (no header)
    memset(b, 0x5A, 60);
    if (send_or_die(c, b, 60)) return 1;
    // 2: a well-formed frame to the destination, from this endpoint: not the interface's vpid,
    // and a source MAC claiming another node (spoofed twice over)
    b[0] = VELO_ETH_MAGIC;
    b[1] = VELO_ETH_VERSION;
    b[2] = b[3] = 0;
    velo_eth_mac(b + VELO_ETH_HDR_BYTES, dst, inst);
    velo_eth_mac(b + VELO_ETH_HDR_BYTES + 6, me.node + 1, inst);
    b[VELO_ETH_HDR_BYTES + 12] = 0x08;
    if (send_or_die(c, b, VELO_ETH_HDR_BYTES + 60)) return 1;
    // 3: longer than the MTU allows (if this endpoint can send it)
    velo_info_t info;
    velo_info(ep, &info);
    if (big <= info.send_max && send_or_die(c, b, big)) return 1;
    printf("eth_inject: sent junk, a spoofed frame%s\n", big <= info.send_max ? " and an oversized frame" : "");
    velo_close(ep);
    free(b);
    return 0;
}
