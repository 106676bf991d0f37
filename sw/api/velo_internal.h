/* SPDX-License-Identifier: MIT */
/*
 * libvelo internals shared by the API layer (velo.c), the protocol (velo_proto.c), the
 * backends (velo_hw.c, velo_sim.c) and the tests. Not installed.
 *
 * Flow control (end-to-end credits, docs/api.md "Flow control"): a receiver grants each
 * connected sender a window of ring lines; the sender reserves the lines of every message
 * (1 for up to 56 bytes, 2 above) before storing it; the receiver returns credits in batches as
 * it reads, so the ring can never overflow and no CPU ever blocks on a full mailbox (which could
 * deadlock two nodes whose read-pointer updates wait behind each other's blocked sends).
 * Connection requests and credits are small messages from an endpoint's control vpid
 * (VELO_CTL_VPID): connection requests go to the destination's data ring, credits to the
 * sender's control ring.
 */
#ifndef VELO_INTERNAL_H
#define VELO_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "velo/velo.h"
#include "velo/velo_hw.h"
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

/* ---- control messages (payload of messages from control vpids) */
#define VELO_CTL_MAGIC 0xC7
enum velo_ctl_type {
	VELO_CTL_CONNECT = 1,    /* sender -> receiver's data ring: epoch */
	VELO_CTL_DISCONNECT = 2, /* sender -> receiver's data ring: epoch */
	VELO_CTL_CREDIT = 3,     /* receiver -> sender's control ring: epoch, limit, window */
	VELO_CTL_REFUSE = 4,     /* receiver -> sender's control ring: epoch (no room for a sender) */
	VELO_CTL_RESET = 5,      /* receiver -> sender's control ring: the receiver closed */
	VELO_CTL_AREA = 6,       /* receiver -> sender's control ring, before CREDIT: epoch, the receive
	                          * area's NLA (limit | rsvd << 32), window = log2 of its slot size */
	VELO_CTL_RELEASE = 7,    /* receiver -> sender's control ring: epoch, limit = area slots released */
	VELO_CTL_LARGE = 8,      /* sender -> receiver's data ring: epoch, window = slot, limit = length */
	VELO_CTL_TRAIN = 9,      /* sender -> receiver's data ring: first piece of a train (velo_train_hdr) */
	VELO_CTL_CREDIT_REQ = 10 /* sender -> receiver's data ring, on a credit line: epoch (return my credit now) */
};
/* CONNECT: flags in `window` */
#define VELO_CTL_CONNECT_AREA 1u /* the sender asks for a receive area (messages > 64 B by RMA) */
struct velo_ctl_msg {
	uint8_t magic;
	uint8_t type;
	uint16_t window; /* CREDIT: lines granted at a time */
	uint32_t epoch;  /* sender's connection generation */
	uint32_t limit;  /* CREDIT: cumulative lines the sender may have reserved */
	uint32_t rsvd;
};
#define VELO_CTL_BYTES 16

/* Trains (velo_send of 65 .. train_max bytes): one-line VELO messages from the sender's control
 * vpid into the receiver's data ring, on the connection's credits: a first piece (velo_train_hdr,
 * then up to VELO_TRAIN_FIRST bytes), then continuations (VELO_TRAIN_MAGIC, up to VELO_TRAIN_NEXT
 * bytes). One sender's pieces arrive in order (one path, one VC); the receiver joins them per
 * sender and delivers the message with its last piece. */
struct velo_train_hdr {
	uint8_t magic; /* VELO_CTL_MAGIC */
	uint8_t type;  /* VELO_CTL_TRAIN */
	uint16_t rsvd;
	uint32_t len; /* the message's length */
};
#define VELO_TRAIN_MAGIC 0xC8
#define VELO_TRAIN_PIECE 56u /* bytes of a piece: one mailbox line */
#define VELO_TRAIN_FIRST (VELO_TRAIN_PIECE - 8u)
#define VELO_TRAIN_NEXT (VELO_TRAIN_PIECE - 1u)
static inline unsigned velo__train_pieces(size_t len) {
	return len <= VELO_TRAIN_FIRST ? 1u : 1u + (unsigned)((len - VELO_TRAIN_FIRST + VELO_TRAIN_NEXT - 1) / VELO_TRAIN_NEXT);
}
/* Receive areas: two slots of 2^k bytes per sender (k from $VELO_SEND_MAX, default 20). */
#define VELO_AREA_SLOTS 2u
#define VELO_SLOT_LOG2_DEFAULT 20u
#define VELO_SLOT_LOG2_MIN 12u
#define VELO_SLOT_LOG2_MAX 26u
/* Default of the train/RMA crossover: the longest message sent as a train when the destination has
 * an area. Measured (make bench: api.send_crossover_bytes, docs/measurement.md): on the simulated
 * fabric the put is slower than a train at every train length up to the train limit (1753 B with
 * the default ring), so the crossover is that limit. The simulated host charges nothing for the
 * CPU's stores of a train's pieces: on a board measure it again (VELO_SEND_CROSSOVER overrides). */
#define VELO_CROSSOVER_DEFAULT 1753u

/* Credit parameters (lines of 64 bytes). */
#define VELO_CREDIT_WINDOW_MAX 64u /* lines granted to one sender */
#define VELO_CONNECT_RESERVE 64u   /* data ring lines kept for connection requests */
#define VELO_FRAG_RESERVE 64u      /* extra lines fragments may take beyond their message's */
#define VELO_CTL_PER_CONN 4u       /* control ring lines one connection can occupy */

struct velo_ep;

enum velo_conn_state { CONN_PENDING = 1, CONN_OPEN, CONN_CLOSED, CONN_RESET, CONN_REFUSED };

struct velo_conn {
	/* hot: velo_send */
	_Atomic int32_t left; /* hw: lines that may be reserved now (fetch-sub); sim: always negative */
	int32_t rsvd_hot;
	uint8_t* win;         /* hw: the write-combined window page; NULL: sim */
	/* cold */
	_Atomic int32_t* credit; /* the counter credits go to: &left (hw) or &sim_left (sim) */
	_Atomic int32_t sim_left;
	struct velo_ep* ep;
	uint32_t page; /* sim: grant id of the window page */
	_Atomic uint32_t state;
	uint32_t node, vpid; /* destination */
	uint32_t epoch;
	uint32_t window;
	uint32_t limit_seen; /* last cumulative limit granted by the destination */
	int ctl_page;     /* grant: our control vpid -> destination data vpid (CONNECT/DISCONNECT) */
	uint8_t* ctl_win; /* hw mapping of it */
	/* messages > 64 B (velo_send of a train or through the receive area), one at a time */
	pthread_mutex_t big_lock;
	unsigned flags;             /* velo_connect's */
	uint64_t area_nla;          /* the destination's receive area for us (AREA) */
	uint32_t slot_log2;         /* its slot size (0: no area) */
	uint32_t large_sent;        /* messages put into the area (this epoch) */
	_Atomic uint32_t large_rel; /* slots the destination released (RELEASE) */
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
	uint8_t* area;              /* receive area: VELO_AREA_SLOTS slots of 2^slot_log2 bytes (or NULL) */
	velo_region_t* area_reg;    /* its registration (REMOTE_WRITE) */
	uint64_t area_nla;
	uint32_t slot_log2;
	uint32_t large_seen;        /* LARGE messages received (this epoch) */
	uint32_t large_rel;         /* and released */
	uint8_t* train;             /* a train being joined (VELO_TRAIN_MAX bytes) */
	uint32_t train_len, train_have;
	struct velo_peer* hnext;
};

struct velo_ring {
	uint8_t* base;
	uint8_t* end;
	uint8_t* cur; /* control ring (the data ring's is in the endpoint's hot fields) */
	uint64_t expect;
	unsigned log2;
	uint32_t lines;
	uint32_t pass;   /* wraps so far: rp = pass * lines + line index */
	uint32_t rp_nic; /* last read pointer written to the NIC */
	volatile uint32_t* rp_reg; /* hw: MB_RP in the vpid's user page */
	uint32_t user_page;        /* sim: VELO_SIM_PAGE_USER | k */
};

/* What a backend's rma_map provides (docs/rma.md §1, §4). */
struct velo_rma_map {
	const volatile uint8_t* nq; /* notification queue: 2^nq_log2 entries of 32 bytes */
	unsigned nq_log2;
	volatile uint32_t* nq_rp; /* NQ_RP in the data vpid's user page (NULL: backend rma_write_rp) */
	uint8_t* cmd_page;        /* the vpid's BAR4 page (write-combined), 4096 bytes (NULL: rma_cmd) */
	unsigned region_bits;     /* 2^n regions on the NIC */
	unsigned max_regions;     /* regions the endpoint may hold */
};

struct velo_rma;

/* Backend operations (slow paths only; the fast paths are inline in velo.c). */
struct velo_backend {
	const char* name;
	/* grant a window page: from 0 data / 1 control vpid. Returns the grant id, fills *win (hw) */
	int (*grant)(struct velo_ep* ep, unsigned from, unsigned node, unsigned vpid, uint8_t** win);
	int (*revoke)(struct velo_ep* ep, int page, uint8_t* win);
	/* a store of `bytes` (<= 64, inside one line) at offset `off` of a granted page */
	int (*store)(struct velo_ep* ep, int page, uint8_t* win, unsigned off, const void* data, unsigned bytes);
	/* the read pointer of a ring to the NIC */
	int (*write_rp)(struct velo_ep* ep, struct velo_ring* r, uint32_t rp);
	/* sleep until the data ring's line at cur may have changed, up to timeout_ns (<0 forever) */
	int (*sleep)(struct velo_ep* ep, int64_t timeout_ns);
	/* velo_send found no credit (may be NULL): sim marks the client as waiting, so that the
	 * fabric holds simulated time when the credit comes until the client stored again */
	void (*no_credit)(struct velo_ep* ep);
	/* velo_wait begins (1) / ends (0) (may be NULL): sim tells the fabric, which holds simulated
	 * time while a client woken by mail reacts */
	void (*wait_state)(struct velo_ep* ep, int waiting);
	/* number of polls velo_wait spins before sleeping */
	unsigned spin_polls;
	int (*clock)(const struct velo_ep* ep, uint64_t* now, uint64_t* last_rx);
	void (*close)(struct velo_ep* ep);
	/* RMA (may be NULL: -ENOTSUP): set up the notification queue and the command page */
	int (*rma_map)(struct velo_ep* ep, struct velo_rma_map* m);
	/* RMA: VELO_IOC_REGISTER / DEREGISTER / REPIN with its velo_uapi_* structure; 0 or -errno */
	int (*rma_ioctl)(struct velo_ep* ep, unsigned long req, void* arg);
	/* RMA without mappings (sim; NULL on hw, which stores into cmd_page / nq_rp directly): a
	 * 32-byte command at offset `off` of the command page, the NQ read pointer, and a sleep
	 * until the queue entry at `hdr` may have changed ((*hdr & mask) == val: it is there) */
	int (*rma_cmd)(struct velo_ep* ep, unsigned off, const uint64_t w[4]);
	int (*rma_write_rp)(struct velo_ep* ep, uint32_t rp);
	int (*rma_sleep)(struct velo_ep* ep, const volatile uint64_t* hdr, uint64_t mask, uint64_t val,
			 int64_t timeout_ns);
};

struct velo_sim_state;
struct velo_hw_state;

struct velo_ep {
	/* ---- hot: velo_poll (the offsets are part of the fast path; keep them first) */
	const uint8_t* cur;                           /* data ring line at the read pointer */
	int (*poll)(struct velo_ep* ep, velo_msg_t* m); /* fast path of the current phase, or the slow one */
	uint64_t slow_mask; /* header bits that send an entry to the slow path */
	uint64_t bmask;     /* (batch lines * 64) - 1: a batch point every batch lines, the ring end is one */
	uint32_t* counts;   /* message lines read per source (node << 8 | vpid) */
	/* ---- the rest */
	uint64_t expect; /* phase that marks an entry at cur */
	const struct velo_backend* be;
	struct velo_sim_state* sim;
	struct velo_hw_state* hw;
	struct velo_ring data, ctl;
	int divert; /* 0, DIVERT_CLOSED, DIVERT_QUEUE: velo_poll goes to the slow path */
	int closed;
	int dead; /* the device/fabric went away */
	uint32_t node, vpid, ctl_vpid;
	uint32_t node_bits, vpid_bits, nodes;
	uint32_t batch;       /* lines between credit batches (a power of two) */
	uint32_t pool_free;   /* lines not granted to any sender */
	uint32_t window_max;  /* lines granted to one sender at most */
	uint32_t max_conns;   /* outgoing connections the control ring can serve */
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
	uint32_t crossover;   /* longer messages go by RMA when the destination has an area */
	uint32_t slot_log2;   /* receive area slots offered to senders (0: none) */
	int area_failed;      /* no areas (no RMA here): stop trying */
	struct velo_peer* held; /* the last delivered LARGE message's sender: its slot is released at the next receive */
	void* held_copy;        /* a long message delivered from the queue: freed at the next receive */
};

#define DIVERT_CLOSED 1
#define DIVERT_QUEUE 2
#define DIVERT_HELD 3 /* a long message was delivered: release it at the next receive */
#define VELO_TRAIN_MAX (VELO_TRAIN_FIRST + (VELO_CREDIT_WINDOW_MAX / 2 - 1) * VELO_TRAIN_NEXT)

/* velo.c */
int velo__poll_slow(struct velo_ep* ep, velo_msg_t* m);
void velo__batch(struct velo_ep* ep);
int velo__ep_init(struct velo_ep* ep, const velo_open_attr_t* a);
void velo__ep_finish(struct velo_ep* ep);
void velo__ring_init(struct velo_ring* r, uint8_t* base, unsigned log2);
void velo__ep_set_data_ring(struct velo_ep* ep);
int velo__ctl_progress(struct velo_ep* ep, int blocking);
void velo__set_phase(struct velo_ep* ep);
uint32_t velo__ring_rp(const struct velo_ring* r, const uint8_t* cur);

/* velo_rma.c */
void velo__rma_close(struct velo_ep* ep);
/* velo_send of a long message: put len bytes of buf to remote_nla on dst.node and wait until the
 * data are visible there (not reported by velo_rma_poll). 0, -EAGAIN (no command slot now), or the
 * put's / registration's error. */
int velo__rma_put_sync(struct velo_ep* ep, velo_addr_t dst, const void* buf, uint64_t remote_nla, size_t len);

/* backends */
int velo__sim_open(struct velo_ep* ep, const char* sock, const velo_open_attr_t* a);
int velo__hw_open(struct velo_ep* ep, const char* dev, const velo_open_attr_t* a);
int velo__sim_send(struct velo_conn* c, const void* buf, size_t len);
/* an endpoint on plain memory with the hw fast paths (tests, instruction-count benchmark):
 * `window` is 4096 bytes per connection, rings are written by the caller */
int velo__mock_open(struct velo_ep** ep, unsigned node, unsigned vpid, unsigned log2_lines);
int velo__mock_connect(struct velo_ep* ep, velo_addr_t dst, uint8_t* window, uint32_t credit, velo_conn_t** c);
uint8_t* velo__mock_ring(struct velo_ep* ep);
uint32_t velo__mock_rp(struct velo_ep* ep);
uint32_t velo__mock_batch(struct velo_ep* ep);
int velo__mock_rma(struct velo_ep* ep, void* nq, unsigned log2, void* cmd_page,
		   int (*fn)(void* ctx, unsigned long req, void* arg), void* ctx);
uint32_t velo__mock_nq_rp(struct velo_ep* ep);
/* RMA limits for tests: idle registrations kept by the cache, bytes per command (0: keep) */
int velo__rma_set_limits(struct velo_ep* ep, unsigned cache_max, uint32_t piece_max);

/* The CPU stores of one message into its line of a window page (1..64 bytes at offset 0):
 * whole quadwords or 16-byte SSE stores, then a store fence (the write-combining buffer drains
 * as one burst). */
void velo__hw_store_slow(uint8_t* dst, const void* src, size_t len);

static inline unsigned velo__msg_lines(unsigned len) {
	return len > VELO_MBOX_PAYLOAD_LINE0 ? 2u : 1u;
}

#endif /* VELO_INTERNAL_H */
