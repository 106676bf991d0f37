/* SPDX-License-Identifier: MIT */
/*
 * The contract between libvelo's core and its backends (not installed).
 *
 * A backend is what only a device can do: hw (velo_hw.c: a NIC behind /dev/veloN), sim
 * (velo_sim.c: a node of velo-fabric), and the test backends of sw/api/tests. It meets the core
 * the way an rdma-core provider meets libibverbs: its open() sets up one endpoint and fills in a
 * descriptor (struct velo_be: the rings, their sizes, the read-pointer registers, the node and
 * vpid bits) and the core does everything else (credits, trains, receive areas, RMA commands and
 * completions) on what the descriptor maps. For what only the device can do the core calls the
 * backend's operations (struct velo_backend); a backend never calls the core back: it sees no
 * endpoint, connection or ring of the core, only its descriptor.
 *
 * Adding a backend: one file that defines a `const struct velo_backend`, and its entry in the
 * table of velo_open (velo_backends[] in velo_ep.c), which picks it by VELO_DEVICE=<name>[:arg].
 * Fast paths need mappings: a backend whose grant() returns a window mapping and whose rings
 * carry an rp_reg runs velo_send and velo_poll without calls into it; one without mappings
 * (sim) gets every store through store().
 *
 * Threads: grant() may run in velo_connect and, at the same time, in the thread that receives (a
 * connection request to answer); store() from any thread (velo_send from several threads at
 * once): a backend locks what these share (sim: its socket). The RMA operations run under the
 * endpoint's RMA lock; close() runs once.
 */
#ifndef VELO_BACKEND_H
#define VELO_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "velo/velo.h"

struct velo_dev; /* a backend's own state of one endpoint: opaque to the core */

/* One mailbox ring (docs/api.md): 2^log2 lines of 64 bytes the NIC writes (MBOX_HDR). */
struct velo_be_ring {
    uint8_t* base;             /* the ring's mapping, read by the core only */
    unsigned log2;             /* 2^log2 lines */
    volatile uint32_t* rp_reg; /* MB_RP in the vpid's user page: the core stores the read pointer
                                * (VELO_MBOX_PTR_BITS) into it; NULL: write_rp() */
};

/* The endpoint as a backend's open() leaves it. The core owns the storage and sets `be`, the
 * default address widths (VELO_DEFAULT_NODE_BITS, VELO_DEFAULT_VPID_BITS) and nodes 0; the
 * backend's open() ends with velo__be_set and sets what its device reports of the rest;
 * afterwards it writes only `dead`. */
struct velo_be {
    const struct velo_backend* be; /* set by the core */
    struct velo_dev* dev;          /* the backend's state, handed back to every operation */
    uint32_t node, vpid;           /* the data vpid (its control vpid: VELO_CTL_VPID) */
    uint32_t node_bits, vpid_bits; /* of the fabric's addresses */
    uint32_t nodes;                /* nodes of the fabric (0: unknown) */
    struct velo_be_ring data;      /* messages for this endpoint */
    struct velo_be_ring ctl;       /* its control ring: credits and answers to its connections */
    volatile int dead;             /* set by the backend: the device or fabric went away */
};

/* The end of a backend's open(): its state, the endpoint's address and its rings. */
static inline void velo__be_set(struct velo_be* b, struct velo_dev* dev, uint32_t node, uint32_t vpid,
                                struct velo_be_ring data, struct velo_be_ring ctl) {
    b->dev = dev;
    b->node = node;
    b->vpid = vpid;
    b->data = data;
    b->ctl = ctl;
}

/* Rings: index of write_rp(). */
#define VELO_BE_DATA 0u
#define VELO_BE_CTL 1u

/* What velo_wait / velo_connect wait for: the lines at the rings' read pointers (the next entry
 * is there when its phase bit equals the expected one). */
struct velo_be_wait {
    const uint8_t* data_cur;
    uint64_t data_expect;
    uint32_t data_rp; /* read pointer in lines (counting wraps) */
    const uint8_t* ctl_cur;
    uint64_t ctl_expect;
    uint32_t ctl_rp;
    int pending; /* the core has a message to deliver without the ring: do not sleep */
    /* velo_idle also waits for the RMA notification queue (NULL: not watched): its next entry is
     * there when (*nq_hdr & nq_mask) == nq_val. No interrupt announces it on hw. */
    const volatile uint64_t* nq_hdr;
    uint64_t nq_mask, nq_val;
};

/* What a backend's rma_map provides (docs/rma.md §1, §4). */
struct velo_rma_map {
    const volatile uint8_t* nq; /* notification queue: 2^nq_log2 entries of 32 bytes */
    unsigned nq_log2;
    volatile uint32_t* nq_rp; /* NQ_RP in the data vpid's user page (NULL: rma_write_rp) */
    uint8_t* cmd_page;        /* the vpid's BAR4 page (write-combined), 4096 bytes (NULL: rma_cmd) */
    unsigned region_bits;     /* 2^n regions on the NIC */
    unsigned max_regions;     /* regions the endpoint may hold */
};

struct velo_backend {
    const char* name; /* VELO_DEVICE=<name> or <name>:<arg>; velo_info's backend */
    /* velo_open without VELO_DEVICE: 1 when this backend's default device is there (the first
     * such entry of the table is opened with arg NULL), else 0. NULL: never chosen by default. */
    int (*probe)(void);
    /* Open an endpoint on device `arg` (NULL: the default) for the attributes `a` (vpid -1: any;
     * ring_log2: the data ring's size). Fills *b (dev, addresses, rings). 0 or -errno; on an
     * error nothing is left open. */
    int (*open)(struct velo_be* b, const char* arg, const velo_open_attr_t* a);
    /* Grant a window page from the data (VELO_GRANT_FROM_DATA) or control vpid
     * (VELO_GRANT_FROM_CTL) to node/vpid. Returns the grant id (>= 0) and *win: its write-combined
     * mapping, or NULL when stores go through store(). */
    int (*grant)(struct velo_be* b, unsigned from, unsigned node, unsigned vpid, uint8_t** win);
    int (*revoke)(struct velo_be* b, int page, uint8_t* win);
    /* A store of `bytes` (<= 64, inside one line) at offset `off` of granted page `page`, one
     * without a mapping (the core stores into a mapping itself: NULL when grant() always gives
     * one). The line of a message of n bytes is (n - 1) * 64. */
    int (*store)(struct velo_be* b, int page, uint8_t* win, unsigned off, const void* data, unsigned bytes);
    /* The read pointer of a ring (VELO_BE_DATA, VELO_BE_CTL) to the NIC; only for rings without
     * rp_reg. */
    int (*write_rp)(struct velo_be* b, unsigned ring, uint32_t rp);
    /* Sleep until a line of w may have changed, up to timeout_ns (< 0: no limit). 0, -EINTR,
     * -EPIPE (the device went away: dead set). */
    int (*sleep)(struct velo_be* b, const struct velo_be_wait* w, int64_t timeout_ns);
    /* velo_send found no credit (may be NULL): sim marks the client as waiting, so that the
     * fabric holds simulated time when the credit comes until the client stored again. */
    void (*no_credit)(struct velo_be* b);
    /* velo_wait begins (1) / ends (0) (may be NULL): sim tells the fabric, which holds simulated
     * time while a client woken by mail reacts. */
    void (*wait_state)(struct velo_be* b, int waiting);
    unsigned spin_polls; /* polls velo_wait spins before it sleeps */
    /* velo_clock (may be NULL: -EOPNOTSUPP) */
    int (*clock)(const struct velo_be* b, uint64_t* now, uint64_t* last_rx);
    /* Close the endpoint (once; the core clears dev afterwards): the device quiesces both vpids,
     * then every mapping goes (windows, rings, RMA). */
    void (*close)(struct velo_be* b);
    /* RMA (may be NULL: -ENOTSUP): set up the notification queue and the command page (*m
     * comes zeroed). */
    int (*rma_map)(struct velo_be* b, struct velo_rma_map* m);
    /* RMA: VELO_IOC_REGISTER / DEREGISTER / REPIN with its velo_uapi_* structure; 0 or -errno. */
    int (*rma_ioctl)(struct velo_be* b, unsigned long req, void* arg);
    /* RMA without mappings (NULL when rma_map gives cmd_page / nq_rp): a 32-byte command at
     * offset `off` of the command page, the queue's read pointer, and a sleep until the queue
     * entry at `hdr` may have changed ((*hdr & mask) == val: it is there). */
    int (*rma_cmd)(struct velo_be* b, unsigned off, const uint64_t w[4]);
    int (*rma_write_rp)(struct velo_be* b, uint32_t rp);
    int (*rma_sleep)(struct velo_be* b, const volatile uint64_t* hdr, uint64_t mask, uint64_t val, int64_t timeout_ns);
};

/* The operations every backend has, when they are called <p>_open, <p>_grant, ...: a backend's
 * table starts with VELO_BACKEND_OPS(p, "name") and adds spin_polls and the others it has. */
#define VELO_BACKEND_OPS(p, nm) \
    .name = (nm), .open = p##_open, .grant = p##_grant, .revoke = p##_revoke, .sleep = p##_sleep, .close = p##_close

/* The backends of velo_open's table. */
extern const struct velo_backend velo__backend_hw;
extern const struct velo_backend velo__backend_sim;

/* For backends with mappings (velo_wc.c, no state): the CPU stores of 1..64 bytes into a line of
 * a write-combined page, whole quadwords or 16-byte SSE stores, then a store fence (the WC
 * buffer drains as one burst; the NIC ignores the bytes past the message's length). */
void velo__wc_store(uint8_t* dst, const void* src, size_t len);

/* The core's entry for opening an endpoint on backend `be` with device `arg`: velo_open after
 * its table lookup, and the test backends, which are in no table (sw/api/tests). */
int velo__ep_open(const struct velo_backend* be, const char* arg, const velo_open_attr_t* a, velo_ep_t** out);

#endif /* VELO_BACKEND_H */
