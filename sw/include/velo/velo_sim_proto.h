/* SPDX-License-Identifier: MIT */
/*
 * The fabric protocol: how libvelo's sim backend talks to velo-fabric (sim/fabric), the daemon
 * that hosts the Verilated NICs. See docs/simulator.md.
 *
 * Control: one SOCK_SEQPACKET connection per endpoint to the fabric's Unix socket. Requests and
 * replies are struct velo_sim_msg; shared memory comes with the reply as file descriptors
 * (SCM_RIGHTS). The connection's end is the endpoint's end: when a process dies, the fabric
 * disables its vpids, waits for the NIC's quiesce barrier and frees the memory.
 *
 * Data: per endpoint a store channel (struct velo_sim_chan_hdr + slots) in shared memory. A
 * slot carries what the CPU's write-combining buffer emits towards the NIC: a page (a granted
 * send-window page or one of the endpoint's own register user pages), an offset in the page, a
 * byte count and the bytes. Any number of threads produce (a slot is claimed with a fetch-add on
 * `tail`, filled, and handed over by a release store of its sequence number, Vyukov style); the
 * fabric consumes in order. Mailbox rings are shared memory the fabric writes like the NIC's DMA
 * writes (every 64-byte line's first 8-byte word stored last, with release semantics).
 *
 * Time: the info page's `cycle` is the simulated NIC clock. The fabric sleeps while nothing
 * moves; a producer that publishes a slot while `sleeping` is set writes 1 to the doorbell
 * eventfd. A client waiting for mail sleeps on the futex `rx_seq` of its channel header.
 */
#ifndef VELO_SIM_PROTO_H
#define VELO_SIM_PROTO_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define VELO_SIM_MAGIC 0x56534D31u /* 'VSM1' */
/* 2: OPEN carries the job key (a fabric of version 1 knew no jobs and would ignore it) */
#define VELO_SIM_VERSION 2

/* Socket path: VELO_DEVICE=sim:<path>; default: $XDG_RUNTIME_DIR/velo-fabric.sock if that
 * directory is set, else /tmp/velo-fabric-<uid>.sock. */
#define VELO_SIM_SOCK_NAME "velo-fabric.sock"

static inline int velo_sim_default_socket(char* buf, size_t n) {
    const char* x = getenv("XDG_RUNTIME_DIR");
    int r;
    if (x && x[0])
        r = snprintf(buf, n, "%s/%s", x, VELO_SIM_SOCK_NAME);
    else
        r = snprintf(buf, n, "/tmp/velo-fabric-%u.sock", (unsigned)getuid());
    return (r < 0 || (size_t)r >= n) ? -1 : 0;
}

/* ---- requests (type), each answered by one reply with the same type and seq */
enum velo_sim_req {
    VELO_SIM_OPEN = 1,     /* arg: node (-1: 0), vpid (-1: any), log2_lines, ctl_log2_lines, pid,
                              job key (VELO_JOB_KEY; 0: none)
                              reply arg: node, vpid, ctl_vpid, node_bits, vpid_bits, nodes, nslots,
                              log2_lines, ctl_log2_lines; fds: info, doorbell, chan, ring, ctl_ring */
    VELO_SIM_GRANT = 2,    /* arg: from (VELO_GRANT_FROM_*), dst_node, dst_vpid
                              reply arg: page id (for velo_sim_slot.page), window page offset lo, hi */
    VELO_SIM_REVOKE = 3,   /* arg: page id */
    VELO_SIM_CLOSE = 4,    /* close the endpoint (same as closing the socket, but acknowledged) */
    VELO_SIM_INFO = 5,     /* no endpoint needed; reply arg: nodes, node_bits, vpid_bits, tlp_bits,
                              link_bits, clients, endpoints, cycle lo, cycle hi; text: topology */
    VELO_SIM_SHUTDOWN = 6, /* the fabric exits (after replying) */
    VELO_SIM_IOCTL = 7     /* an RMA request of the driver ABI (velo/velo_uapi.h) on the endpoint:
                              arg[0]: VELO_IOC_NR_RMA_SETUP / REGISTER / DEREGISTER / REPIN;
                              text: its struct velo_uapi_* (in, and out in the reply);
                              RMA_SETUP's reply carries one fd: the notification queue (read-only) */
};

#define VELO_SIM_NARG 12
struct velo_sim_msg {
    uint32_t magic;   /* VELO_SIM_MAGIC */
    uint16_t version; /* VELO_SIM_VERSION */
    uint16_t type;    /* enum velo_sim_req */
    uint32_t seq;
    int32_t status; /* reply: 0 or a negative errno */
    int64_t arg[VELO_SIM_NARG];
    char text[128]; /* reply: human-readable detail of an error */
};

/* Number of fds in the OPEN reply, in this order. */
#define VELO_SIM_OPEN_NFDS 5

/* ---- the info page (one per fabric, mapped read-only by every client) */
struct velo_sim_info {
    uint32_t magic;
    uint32_t version;
    uint32_t nodes;
    uint32_t node_bits;
    uint32_t vpid_bits;
    uint32_t tlp_bits;
    uint32_t link_bits;
    uint32_t pid;               /* the fabric's pid */
    volatile uint64_t cycle;    /* simulated NIC clock cycles (atomic 64-bit store) */
    volatile uint32_t sleeping; /* the fabric waits for a doorbell */
    volatile uint32_t frozen;   /* simulated time stands while woken clients react (docs/simulator.md) */
    char topology[64];
};

/* ---- store channel */
#define VELO_SIM_PAGE_USER 0x40000000u /* page = VELO_SIM_PAGE_USER | 0 (data vpid) or 1 (ctl) */
#define VELO_SIM_PAGE_RMA 0x20000000u  /* the data vpid's RMA command page (BAR4), after RMA_SETUP */

struct velo_sim_slot {
    uint32_t seq;  /* Vyukov sequence: == pos free for the producer of pos; == pos + 1 full */
    uint32_t page; /* grant id from VELO_SIM_GRANT, or VELO_SIM_PAGE_USER | k */
    uint16_t off;  /* byte offset inside the 4 KiB page */
    uint8_t bytes; /* 1..64; off % 64 + bytes <= 64 (one write-combining buffer) */
    uint8_t rsvd;
    uint16_t tid; /* sending thread (the fabric splits bursts only between other threads' stores) */
    uint16_t rsvd2;
    uint8_t data[64];
};

struct velo_sim_chan_hdr {
    uint32_t magic;
    uint32_t nslots;   /* power of two */
    uint32_t endpoint; /* the fabric's id of the endpoint */
    uint32_t rsvd0[13];
    /* producers (cache line 1) */
    volatile uint32_t tail;         /* next slot to claim (fetch-add) */
    volatile uint32_t prod_waiters; /* a producer sleeps on `head` (futex) */
    uint32_t rsvd1[14];
    /* consumer (cache line 2) */
    volatile uint32_t head; /* next slot the fabric takes; futex word for producers */
    uint32_t rsvd2[15];
    /* mailbox status (cache line 3) */
    volatile uint32_t rx_seq;     /* futex: bumped after every DMA write into the endpoint's rings */
    volatile uint32_t rx_waiters; /* the client sleeps (or is about to) on rx_seq */
    volatile uint64_t rx_cycle;   /* cycle of the last DMA write into the data ring */
    uint32_t rsvd3[12];
};

#define VELO_SIM_CHAN_SLOTS_OFF 4096u
#define VELO_SIM_CHAN_NSLOTS 256u
#define VELO_SIM_CHAN_BYTES(n) (VELO_SIM_CHAN_SLOTS_OFF + (n) * sizeof(struct velo_sim_slot))

#endif /* VELO_SIM_PROTO_H */
