/* SPDX-License-Identifier: MIT */
/*
 * libvelo's core: the endpoint, its rings, connections (as a sender) and peers (as a receiver),
 * shared by the API (velo.c: send, poll, connect; velo_ep.c: open, close, info), the protocol
 * (velo_proto.c, velo_proto.h), RMA (velo_rma*.c) and the tests. Backends do not include it:
 * they see their descriptor only (velo_backend.h). Not installed.
 */
#ifndef VELO_EP_H
#define VELO_EP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "velo/velo.h"
#include "velo/velo_hw.h"
#include "velo_backend.h"
#include "velo_recombine.h"

#if defined(__GNUC__)
#define VELO_LIKELY(x) __builtin_expect(!!(x), 1)
#define VELO_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define VELO_NOINLINE __attribute__((noinline))
#define VELO_COLD __attribute__((cold, noinline))
#else
#define VELO_LIKELY(x) (x)
#define VELO_UNLIKELY(x) (x)
#define VELO_NOINLINE
#define VELO_COLD
#endif

/* Header bits of mailbox entries (MBOX_HDR) the fast paths test. */
#define VH_PHASE (1ull << VELO_MBOX_HDR_PHASE_SHIFT)
#define VH_LINES2 (2ull << VELO_MBOX_HDR_LINES_SHIFT)
#define VH_FRAG (1ull << VELO_MBOX_HDR_FRAG_SHIFT)
#define VH_RSVD (1ull << VELO_MBOX_HDR_RSVD1_SHIFT)
#define VH_GET(F, h) ((unsigned)VELO_FIELD_GET(VELO_MBOX_HDR_##F, (h)))

struct velo_ep;

enum velo_conn_state { CONN_PENDING = 1, CONN_OPEN, CONN_CLOSED, CONN_RESET, CONN_REFUSED };

struct velo_conn {
    /* hot: velo_send */
    _Atomic int32_t left; /* window mapped: lines that may be reserved now (fetch-sub); else always negative */
    int32_t rsvd_hot;
    uint8_t* win; /* the write-combined window page; NULL: stores through the backend */
    /* cold */
    _Atomic int32_t* credit; /* the counter credits go to: &left (mapped) or &sim_left */
    _Atomic int32_t sim_left;
    struct velo_ep* ep;
    uint32_t page; /* grant id of the window page */
    _Atomic uint32_t state;
    uint32_t node, vpid; /* destination */
    uint32_t epoch;
    uint32_t window;
    uint32_t limit_seen; /* last cumulative limit granted by the destination */
    int ctl_page;        /* grant: our control vpid -> destination data vpid (CONNECT/DISCONNECT) */
    uint8_t* ctl_win;    /* its mapping */
    /* messages > 64 B (velo_send of a train or through the receive area), one at a time */
    pthread_mutex_t big_lock;
    unsigned flags;              /* velo_connect's */
    uint64_t area_nla;           /* the destination's receive area for us (AREA) */
    uint32_t area_key;           /* and its key */
    uint32_t slot_log2;          /* its slot size (0: no area) */
    uint32_t large_sent;         /* messages put into the area (this epoch) */
    _Atomic uint32_t large_rel;  /* slots the destination released (RELEASE) */
    _Atomic uint32_t credit_gen; /* CREDIT messages received */
    uint32_t req_gen;            /* credit_gen + 1 when the last CREDIT_REQ was sent */
    struct velo_conn* hnext;
    struct velo_conn* all_next;
};

/* Credit counters start this far below zero until the destination grants a window, and drop
 * by it again when the connection ends. */
#define VELO_CREDIT_OFF (1 << 30)

/* A sender as a receiver knows it. */
struct velo_peer {
    uint32_t node, vpid; /* the sender's data vpid */
    uint32_t key;        /* index into the endpoint's per-source line counts */
    uint32_t epoch;
    uint32_t window;     /* 0: not connected */
    uint32_t base;       /* line count of this source when it connected */
    uint32_t limit_sent; /* last limit granted, in lines read since it connected */
    int reply_page;      /* grant: our control vpid -> its control vpid (-1: none yet) */
    uint8_t* reply_win;
    /* messages > 64 B from it */
    uint8_t* area;           /* receive area: VELO_AREA_SLOTS slots of 2^slot_log2 bytes (or NULL) */
    velo_region_t* area_reg; /* its registration (REMOTE_WRITE) */
    uint64_t area_nla;
    uint32_t area_key;
    uint32_t slot_log2;
    uint32_t large_seen; /* LARGE messages received (this epoch) */
    uint32_t large_rel;  /* and released */
    uint8_t* train;      /* a train being joined (VELO_TRAIN_MAX bytes) */
    uint32_t train_len, train_have;
    struct velo_peer* hnext;
};

/* A ring as the core reads it (from the backend's struct velo_be_ring). */
struct velo_ring {
    uint8_t* base;
    uint8_t* end;
    uint8_t* cur; /* control ring (the data ring's is in the endpoint's hot fields) */
    uint64_t expect;
    unsigned log2;
    uint32_t lines;
    uint32_t pass;             /* wraps so far: rp = pass * lines + line index */
    uint32_t rp_nic;           /* last read pointer written to the NIC */
    volatile uint32_t* rp_reg; /* the MB_RP register, or NULL: the backend's write_rp */
    unsigned index;            /* VELO_BE_DATA, VELO_BE_CTL */
};

struct velo_rma;

struct velo_ep {
    /* ---- hot: velo_poll (the offsets are part of the fast path; keep them first) */
    const uint8_t* cur;                             /* data ring line at the read pointer */
    int (*poll)(struct velo_ep* ep, velo_msg_t* m); /* fast path of the current phase, or the slow one */
    uint64_t slow_mask;                             /* header bits that send an entry to the slow path */
    uint64_t bmask;   /* (batch lines * 64) - 1: a batch point every batch lines, the ring end is one */
    uint32_t* counts; /* message lines read per source (node << 8 | vpid) */
    /* ---- the rest */
    uint64_t expect; /* phase that marks an entry at cur */
    const struct velo_backend* be;
    struct velo_be b; /* the backend's descriptor: addresses, rings, dead */
    struct velo_ring data, ctl;
    int divert; /* 0, DIVERT_CLOSED, DIVERT_QUEUE: velo_poll goes to the slow path */
    int closed;
    uint32_t batch;      /* lines between credit batches (a power of two) */
    uint32_t pool_free;  /* lines not granted to any sender */
    uint32_t window_max; /* lines granted to one sender at most */
    uint32_t max_conns;  /* outgoing connections the control ring can serve */
    uint32_t nconns;
    int connect_timeout_ms;
    pthread_mutex_t lock;     /* connect, control message handling, sim socket */
    pthread_mutex_t ctl_lock; /* reading the control ring */
    struct velo_conn* conn_hash[256];
    struct velo_conn* conns;
    struct velo_peer* peer_hash[256];
    struct velo_peer** active; /* connected senders */
    unsigned nactive, active_cap;
    uint32_t epoch_next;
    struct velo_rc rc;     /* recombination of the data ring's fragments */
    struct velo_rc ctl_rc; /* and the control ring's */
    /* messages read while velo_connect waited, delivered before the ring */
    velo_msg_t* q;
    unsigned q_head, q_len, q_cap;
    velo_stats_t st;
    _Atomic uint64_t send_eagain;
    struct velo_ep* grave_next;
    struct velo_rma* rma;     /* RMA state (velo_rma.c), NULL until the first RMA call */
    pthread_mutex_t rma_lock; /* every RMA call */
    /* messages > 64 B */
    uint32_t crossover;     /* longer messages go by RMA when the destination has an area */
    uint32_t slot_log2;     /* receive area slots offered to senders (0: none) */
    int area_failed;        /* no areas (no RMA here): stop trying */
    struct velo_peer* held; /* the last delivered LARGE message's sender: its slot is released at the next receive */
    void* held_copy;        /* a long message delivered from the queue: freed at the next receive */
};

#define DIVERT_CLOSED 1
#define DIVERT_QUEUE 2
#define DIVERT_HELD 3 /* a long message was delivered: release it at the next receive */

/* velo.c: rings and receive paths */
void velo__ring_init(struct velo_ring* r, uint8_t* base, unsigned log2);
uint32_t velo__ring_rp(const struct velo_ring* r, const uint8_t* cur);
/* the read pointer of a ring to the NIC (its rp_reg, or the backend's write_rp) */
int velo__write_rp(struct velo_ep* ep, struct velo_ring* r, uint32_t rp);
/* the backend's sleep until a line at a ring's read pointer may have changed */
int velo__sleep(struct velo_ep* ep, int64_t timeout_ns);
/* velo_idle's RMA side: 1 if velo_rma_poll has work now (a completion queued or written, refused
 * commands to issue again); else 0 and the notification queue to watch in *w (nq_hdr NULL: none). */
int velo__rma_ready(struct velo_ep* ep, struct velo_be_wait* w);
void velo__ep_set_data_ring(struct velo_ep* ep);
void velo__set_phase(struct velo_ep* ep);
/* velo_poll takes the slow path (DIVERT_*) */
void velo__divert(struct velo_ep* ep, int why);
/* One entry of a ring, read with the tearing rules of MBOX_HDR. */
struct velo_entry {
    uint64_t h;
    unsigned lines;
    unsigned node, vpid;
    unsigned off, flen, mlen;
    uint8_t area[128]; /* payload area: FRAG_OFF % 4 pad bytes, then the fragment */
};
int velo__read_entry(const struct velo_ring* r, const uint8_t** cur, uint64_t* expect, uint32_t* pass,
                     struct velo_entry* e);
/* the stores of one message of 1..64 bytes into its line of a granted page */
int velo__store_msg(struct velo_ep* ep, int page, uint8_t* win, const void* buf, size_t len);
int64_t velo__now_ns(void);

/* velo_rma.c */
void velo__rma_close(struct velo_ep* ep);
/* velo_send of a long message: put len bytes of buf to remote_nla (key remote_key) on dst.node and wait until the
 * data are visible there (not reported by velo_rma_poll). 0, -EAGAIN (no command slot now), or the
 * put's / registration's error. */
int velo__rma_put_sync(struct velo_ep* ep, velo_addr_t dst, const void* buf, uint64_t remote_nla, uint32_t remote_key,
                       size_t len);

static inline unsigned velo__msg_lines(unsigned len) {
    return len > VELO_MBOX_PAYLOAD_LINE0 ? 2u : 1u;
}

#endif /* VELO_EP_H */
