/* SPDX-License-Identifier: MIT */
/*
 * libvelo: the C API of the VELO interconnect. See docs/api.md.
 *
 *   velo_ep_t *ep;   velo_conn_t *c;   velo_msg_t m;
 *   velo_open(NULL, &ep);                          // VELO_DEVICE, else /dev/velo0, else the fabric
 *   velo_connect(ep, (velo_addr_t){1, 5}, 0, &c);  // node 1, vpid 5
 *   velo_send(c, "hello", 5);                      // 1..64 bytes, one atomic store burst
 *   velo_wait(ep, &m, 1000);                       // or velo_poll(ep, &m) (never blocks)
 *   velo_close(ep);
 *
 * Every call returns 0 (or a length) on success and a negative errno value on failure;
 * velo_strerror() explains it.
 *
 * Threads: any number of threads may call velo_send on the same connection or endpoint at once
 * (no locks on the send path). Exactly one thread at a time may receive on an endpoint
 * (velo_poll, velo_wait, and velo_connect without VELO_CONNECT_NOWAIT, which also reads the
 * endpoint while it waits). velo_close must not race with any other call on the endpoint.
 */
#ifndef VELO_H
#define VELO_H

#include <errno.h> /* the error codes velo calls return, negated */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VELO_API_VERSION 3
#define VELO_MSG_MAX_BYTES 64

typedef struct velo_ep velo_ep_t;     /* an endpoint: one receive mailbox (data vpid) */
typedef struct velo_conn velo_conn_t; /* a granted destination of an endpoint */

/* Where an endpoint is: node id and vpid (virtual process id) on that node. */
typedef struct velo_addr {
    uint32_t node;
    uint32_t vpid;
} velo_addr_t;

/* A received message. The source is stamped by the sending NIC (node) and the page the
 * sender's driver mapped (vpid): it cannot be forged by the sender.
 * Up to 64 bytes the message is in data[] (len = its length). A longer one (velo_send of more
 * than 64 bytes, docs/api.md "Messages longer than 64 bytes") has len = 0, size = its length and
 * ptr = its bytes in the library's memory, valid until the next velo_poll, velo_wait, velo_connect
 * or velo_close on the endpoint. velo_msg_bytes() and velo_msg_size() cover both. */
typedef struct velo_msg {
#if defined(__cplusplus)
    alignas(16) uint8_t data[VELO_MSG_MAX_BYTES];
#else
    _Alignas(16) uint8_t data[VELO_MSG_MAX_BYTES];
#endif
    uint8_t src_node; /* sending node */
    uint8_t src_vpid; /* sending endpoint's vpid */
    uint16_t len;     /* payload bytes in data[], 1..64; 0: a longer message (size, ptr) */
    uint32_t size;    /* len 0: the message's length (65 .. velo_info's send_max) */
    const void* ptr;  /* len 0: the message's bytes (library memory, see above) */
} velo_msg_t;

/* The bytes and the length of a received message, short or long. */
static inline const void* velo_msg_bytes(const velo_msg_t* m) {
    return m->len ? (const void*)m->data : m->ptr;
}
static inline size_t velo_msg_size(const velo_msg_t* m) {
    return m->len ? (size_t)m->len : (size_t)m->size;
}

/* Options of velo_open. Initialise with velo_open_attr_init(). */
typedef struct velo_open_attr {
    const char* device;     /* NULL: $VELO_DEVICE, else automatic; "hw:/dev/velo0", "sim:<socket>", "sim" */
    int node;               /* sim: node to attach to; -1: $VELO_NODE, else 0 (hw: ignored, must be -1) */
    int vpid;               /* requested vpid; -1: $VELO_VPID, else any free one */
    unsigned ring_log2;     /* mailbox ring: 2^ring_log2 lines of 64 bytes; 0: $VELO_RING_LOG2 or 11 */
    unsigned flags;         /* 0 */
    int connect_timeout_ms; /* velo_connect's wait for the destination's answer; 0: 10000 */
} velo_open_attr_t;

void velo_open_attr_init(velo_open_attr_t* attr);

/* Open an endpoint. attr may be NULL (defaults). Errors: -EINVAL (bad attribute or device
 * string), -ENODEV (no device: no /dev/velo0 and no fabric; the message says how to start
 * one), -ECONNREFUSED (a fabric socket without a fabric), -EADDRINUSE (requested vpid taken),
 * -ENOSPC (no free vpid), -EPROTO (fabric or driver of another version), -ENOMEM. */
int velo_open(const velo_open_attr_t* attr, velo_ep_t** ep);

/* Close an endpoint: every connection is disconnected, peers that send to it are told, the
 * driver (or fabric) disables its vpids and waits for the NIC before the memory is reused.
 * The handle stays valid memory: every later call on it (or its connections) returns -EBADF. */
int velo_close(velo_ep_t* ep);

/* This endpoint's address. */
int velo_addr(const velo_ep_t* ep, velo_addr_t* addr);

/* Connect to a destination endpoint: the driver (or fabric) grants the send-window page, and
 * the destination's library grants credits (room in its ring). Without VELO_CONNECT_NOWAIT the
 * call waits for that answer (reading this endpoint meanwhile: call it from the receiving
 * thread); with it, sends return -EAGAIN until the answer is in. Connecting twice to the same
 * destination returns the same connection. Errors: -EINVAL (vpid out of range or a control
 * vpid), -ECONNREFUSED (no endpoint there: sim), -ETIMEDOUT (no answer), -ENOSPC (the
 * destination has no room for another sender, or this endpoint has too many connections),
 * -EBADF (endpoint closed), -EPERM (the driver refuses the grant). */
#define VELO_CONNECT_NOWAIT 1u
/* Messages of at most 64 bytes on this connection: the destination keeps no receive area for it. */
#define VELO_CONNECT_SMALL 2u
int velo_connect(velo_ep_t* ep, velo_addr_t dst, unsigned flags, velo_conn_t** conn);

/* Give a connection up (the destination reclaims its credits). The handle stays valid until
 * velo_close of its endpoint; sends on it return -ENOTCONN; velo_connect revives it. */
int velo_disconnect(velo_conn_t* conn);

/* The destination of a connection. */
int velo_conn_addr(const velo_conn_t* conn, velo_addr_t* dst);

/* Send len bytes (1 .. velo_info's send_max). Up to 64 bytes: one atomic store burst, never
 * blocks; returns 0 when the message is handed to the NIC. Longer messages (docs/api.md "Messages
 * longer than 64 bytes"): up to the crossover (velo_info's crossover, $VELO_SEND_CROSSOVER) a
 * train of VELO messages the receiver joins, above it an RMA put into the receive area the
 * destination exposed at connect time; both arrive as one message, in order with the sender's
 * other messages, and the call returns once buf may be reused (a put: once the data are at the
 * destination). -EAGAIN when the destination has no room for it now (credits, or both receive
 * slots of the area still held by its receiver: they are returned as the receiver reads; keep
 * receiving on your own endpoint meanwhile, or two endpoints that wait for each other never make
 * room). Errors: -EINVAL (len 0, NULL pointers), -EMSGSIZE (len above what this connection can
 * carry: 64 without RMA on either side or with VELO_CONNECT_SMALL, else send_max), -ENOTCONN (not
 * connected / disconnected / refused), -ECONNRESET (the destination closed), -EBADF (endpoint
 * closed), an RMA put's error (-EFAULT, -EIO, ...) for a message the put failed to deliver. */
int velo_send(velo_conn_t* conn, const void* buf, size_t len);

/* Receive one message if one is there. Returns its length (1..64) and fills *msg; -EAGAIN if
 * the mailbox is empty; -EBADF if the endpoint is closed; -EINVAL for NULL pointers. */
int velo_poll(velo_ep_t* ep, velo_msg_t* msg);

/* Like velo_poll, but waits up to timeout_ms (-1: forever, 0: poll once) for a message,
 * spinning briefly, then sleeping. Returns -ETIMEDOUT when the time is up, -EINTR on a signal. */
int velo_wait(velo_ep_t* ep, velo_msg_t* msg, int timeout_ms);

/* Sleep until the endpoint has something for its owner, taking nothing: a message for velo_poll,
 * an RMA completion for velo_rma_poll, or control traffic (credit a blocked velo_send waits for,
 * a connection's answer), which it handles. For progress loops with several sources (an MPI
 * library): one call instead of spinning on velo_poll and velo_rma_poll, so that the CPU goes to
 * whoever must answer (on the simulator: the fabric). Waits up to timeout_ms (-1: forever, 0: just
 * check), spinning briefly, then sleeping. Returns 1 when there is something, 0 when the time is
 * up; -EINTR on a signal, -EPIPE if the device or fabric is gone, -EBADF if the endpoint is
 * closed, -EINVAL for a NULL endpoint or timeout_ms < -1. */
int velo_idle(velo_ep_t* ep, int timeout_ms);

/* Simulated NIC clock cycles (sim backend): the fabric's cycle counter now, and the cycle of
 * the last DMA write into this endpoint's mailbox. -EOPNOTSUPP on hardware. */
int velo_clock(const velo_ep_t* ep, uint64_t* now, uint64_t* last_rx);

/* Facts about the endpoint's device. */
typedef struct velo_info {
    char backend[8]; /* "hw" or "sim" */
    uint32_t node_bits;
    uint32_t vpid_bits;
    uint32_t nodes;        /* sim: nodes of the fabric; hw: 0 (unknown) */
    uint32_t msg_max;      /* 64: one store burst */
    uint32_t ring_lines;   /* this endpoint's mailbox ring */
    uint32_t credit_lines; /* ring lines granted to one sender */
    uint32_t send_max;     /* longest velo_send to a destination with a receive area (RMA) */
    uint32_t crossover;    /* velo_send: longer messages go by RMA, shorter ones as VELO trains */
    uint32_t train_max;    /* longest VELO train (a full credit window allows) */
    uint32_t rsvd[1];
} velo_info_t;
int velo_info(const velo_ep_t* ep, velo_info_t* info);

/* Counters of this endpoint's library side. */
typedef struct velo_stats {
    uint64_t frags_rx;       /* fragment entries seen (recombined into messages) */
    uint64_t credit_msgs_tx; /* credit returns sent */
    uint64_t credit_msgs_rx; /* credit returns received */
    uint64_t rp_updates;     /* read pointer writes to the NIC */
    uint64_t send_eagain;    /* velo_send found no credit */
    uint64_t ctl_bad;        /* malformed control messages ignored */
    uint64_t rma_cache_hits; /* RMA: registrations served by the region cache */
    uint64_t rma_cache_miss; /* RMA: registrations made (REGISTER ioctl) */
    uint64_t rma_evictions;  /* RMA: idle cached regions deregistered to bound the cache */
    uint64_t rma_repins;     /* RMA: re-pins after NOT_VALID (the command was issued again) */
    uint64_t rma_reissues;   /* RMA: commands issued again (NOT_VALID, torn command writes, BUSY) */
    uint64_t rma_nq_bad;     /* RMA: malformed or stray notification entries skipped */
    uint64_t trains_tx;      /* messages > 64 B sent as VELO trains */
    uint64_t trains_rx;      /* and received */
    uint64_t large_tx;       /* messages > 64 B sent by RMA into the receiver's area */
    uint64_t large_rx;       /* and received */
    uint64_t large_eagain;   /* velo_send found no free slot in the destination's area */
} velo_stats_t;
int velo_stats(const velo_ep_t* ep, velo_stats_t* stats);

/*
 * ---- RMA: zero-copy put/get on registered memory (docs/api.md "RMA", docs/rma.md).
 *
 *   velo_region_t *r;   velo_rma_cpl_t cpl;
 *   velo_register(ep, buf, len, VELO_ACCESS_LOCAL_READ, NULL, &r);   // NULL: VELO_SCOPE_JOB
 *   velo_put(ep, dst, r, 0, remote_nla, remote_key, len, VELO_RMA_F_REMOTE, 42);
 *   velo_rma_wait(ep, &cpl, -1);           // cpl.kind == VELO_RMA_KIND_REMOTE, cpl.cookie == 42
 *   velo_deregister(r);
 *
 * remote_nla and remote_key are the peer's (velo_region_nla, velo_region_rkey), passed over a
 * message. The target's NIC checks the whole 32-bit key and who asks (the region's scope) on every
 * remote put and get; anything else fails with BAD_HANDLE and touches nothing (docs/api.md "RMA
 * protection").
 *
 * Both backends: on hardware and on the simulated fabric (which serves RMA on the ordinary memory
 * of its client processes, docs/simulator.md); on a NIC without an RMA unit every call returns
 * -EOPNOTSUPP (= -ENOTSUP on Linux).
 * All RMA calls of one endpoint are serialised by a lock (any thread may call them).
 */
typedef struct velo_region velo_region_t; /* a registration handle (velo_register) */

/* Access a registration permits (at least one). Same values as the driver's VELO_REG_*. */
#define VELO_ACCESS_LOCAL_READ 0x1u   /* source of this endpoint's puts */
#define VELO_ACCESS_LOCAL_WRITE 0x2u  /* destination of this endpoint's gets */
#define VELO_ACCESS_REMOTE_READ 0x4u  /* source of other nodes' gets */
#define VELO_ACCESS_REMOTE_WRITE 0x8u /* target of other nodes' puts */
#define VELO_ACCESS_ALL 0xFu

/* Who may reach a region remotely (its protection scope): the NIC of the region's node checks the
 * initiator's node and data vpid, both stamped by the initiating NIC, against up to
 * VELO_SCOPE_NIC_BOXES boxes [node_lo, node_hi] x [vpid_lo, vpid_hi] on every remote put and get
 * and lets it in if it is inside any of them. Same values as the driver's VELO_SCOPE_*
 * (docs/driver.md "Security model"). */
#define VELO_SCOPE_JOB 0        /* the default: the owner's job (its data vpids on its nodes); without a */
                                /* job, the vpids no job owns; under the `open` policy, everybody */
#define VELO_SCOPE_OWNER 1      /* only the owning endpoint itself (its node and data vpid) */
#define VELO_SCOPE_PEER 2       /* one endpoint: node_lo, vpid_lo (its data vpid) */
#define VELO_SCOPE_BOX 3        /* node_lo..node_hi x vpid_lo..vpid_hi as given */
#define VELO_SCOPE_LIST 4       /* boxes[0 .. nboxes-1]: a list of peers (lo = hi) or boxes, e.g. the peers */
                                /* of a communicator; the driver merges boxes that are contained in or */
                                /* adjacent to another (peers with consecutive vpids or nodes take one box) */
#define VELO_SCOPE_MAX_BOXES 16 /* boxes a VELO_SCOPE_LIST may name */
#define VELO_SCOPE_NIC_BOXES 4  /* boxes the NIC holds per region: a list that needs more after */
                                /* merging is refused (-E2BIG) */
typedef struct velo_scope_box {
    uint8_t node_lo, node_hi, vpid_lo, vpid_hi; /* inclusive; vpids are data vpids */
} velo_scope_box_t;
typedef struct velo_scope {
    unsigned kind;                                /* VELO_SCOPE_* */
    uint8_t node_lo, node_hi, vpid_lo, vpid_hi;   /* PEER, BOX (velo_region_scope: box 0) */
    unsigned nboxes;                              /* LIST: 1..VELO_SCOPE_MAX_BOXES (velo_region_scope: */
                                                  /* the boxes the NIC checks, 1..VELO_SCOPE_NIC_BOXES) */
    velo_scope_box_t boxes[VELO_SCOPE_MAX_BOXES]; /* LIST: the boxes (the rest ignored) */
} velo_scope_t;

/* Register [addr, addr + len) (len 1 .. 2^40-1) for RMA with protection scope `scope` (NULL:
 * VELO_SCOPE_JOB; the fields a kind does not use are ignored: nboxes and boxes for all but LIST,
 * the single fields for LIST). A registration of the endpoint's region cache that contains the
 * range with at least this access and the same scope (a LIST: the same boxes in the same order)
 * is reused
 * (and made valid again if the kernel withdrew its translation); otherwise the driver pins and
 * maps it. The handle names the caller's range: velo_region_nla and velo_region_rkey give what to
 * hand to the peers the scope admits. Errors: -EINVAL (NULL, len 0 or too long, wraps, access 0
 * or unknown bits, unknown scope kind, an empty box: node_lo > node_hi or vpid_lo > vpid_hi, a
 * node or vpid beyond the fabric's, a LIST of 0 or more than VELO_SCOPE_MAX_BOXES boxes),
 * -EACCES (a scope beyond the owner's job: only root may give one), -E2BIG (a LIST that needs
 * more than VELO_SCOPE_NIC_BOXES boxes after merging: give fewer, wider boxes), -EFAULT (not mapped memory, or
 * read-only memory for a write access), -ENOMEM (RLIMIT_MEMLOCK), -EBADF, -ENOTSUP, and when the NIC has no room for it
 * even after the cache gave its idle registrations back, which resource ran out: -ENFILE (the NIC's region table,
 * shared by the node's processes), -EMFILE (this endpoint holds as many regions as the driver
 * allows one endpoint), -ENOBUFS (the NIC's page table), -EFBIG (more pages than the whole page
 * table has: register smaller pieces). velo_strerror says which; the first three pass when
 * registrations are released (transfers end, regions deregistered). */
int velo_register(velo_ep_t* ep, const void* addr, size_t len, unsigned access, const velo_scope_t* scope,
                  velo_region_t** region);

/* Release a handle (freed by this call, whatever it returns). The registration leaves the cache at
 * once (later lookups do not find it) and is deregistered when no other handle and no command in
 * flight uses it. Errors: -EINVAL (NULL), -EBADF (endpoint closed; the driver dropped every
 * registration at close), -ENOENT (the driver no longer knows it), -ETIMEDOUT (the NIC never
 * released it). */
int velo_deregister(velo_region_t* region);

/* Release a handle but keep its registration in the endpoint's region cache (the handle is freed
 * by this call, whatever it returns): a later velo_register or velo_put_buf/velo_get_buf of a
 * range it contains finds it without pinning again, until the bounded cache evicts it (least
 * recently used, idle ones only) or the endpoint closes. For handles taken and dropped per
 * transfer (an MPI rendezvous); velo_deregister when the memory is about to go. Errors: -EINVAL
 * (NULL), -EBADF (endpoint closed), the driver's when the registration was deregistered meanwhile
 * and this was its last user. */
int velo_region_release(velo_region_t* region);

/* The NLA of byte `offset` of the handle's range (offset <= its length): what a peer passes to
 * velo_put/velo_get as remote_nla. Errors: -EINVAL (NULL), -ERANGE (offset beyond the range). */
int velo_region_nla(const velo_region_t* region, size_t offset, uint64_t* nla);

/* The region's 32-bit key: what a peer passes to velo_put/velo_get as remote_key with the NLA
 * (the NLA's KEY field holds its bits 7:0). Random, never 0, never given to the NIC's region index
 * before. Hand it only to the peers the scope admits (it is the region's secret). Errors: -EINVAL
 * (NULL). */
int velo_region_rkey(const velo_region_t* region, uint32_t* key);

/* The boxes the NIC checks for the region (what the driver made of the scope asked for): kind
 * VELO_SCOPE_BOX with one box (in node_lo..vpid_hi and boxes[0], nboxes 1), or VELO_SCOPE_LIST with
 * nboxes (2..VELO_SCOPE_NIC_BOXES) boxes, sorted, box 0 also in node_lo..vpid_hi; the rest of
 * boxes[] zero. Errors: -EINVAL (NULL). */
int velo_region_scope(const velo_region_t* region, velo_scope_t* scope);

/* Flags of velo_put / velo_get: which completions velo_rma_poll reports. Errors are always
 * reported. */
#define VELO_RMA_F_LOCAL 0x1u  /* put: the source may be reused (LOCAL); get: the data arrived (GET_DONE) */
#define VELO_RMA_F_REMOTE 0x2u /* put: the data are visible at the target (REMOTE) */
#define VELO_RMA_F_NOTIFY 0x4u /* put: the target's owner gets a TARGET completion with the cookie */

/* Put len bytes from local region `local` at `local_off` to the remote NLA remote_nla of the
 * region with key remote_key (velo_region_nla, velo_region_rkey of the peer's registration) on
 * node dst.node (dst.vpid must be a valid data vpid; the region's owner is whoever registered
 * it). len may be 0 (a notification-only put; local may then be NULL). Transfers longer than one
 * command (VELO_RMA_LEN_MAX bytes) are split; the completions cover the whole transfer.
 * Never blocks: -EAGAIN when the commands outstanding reach the limit (poll completions to free
 * them). Errors: -EINVAL (NULL, unknown flags, node/vpid out of range, a remote NLA whose region
 * index the NIC does not have, a remote NLA whose KEY field is not bits 7:0 of remote_key: the
 * two come from different registrations), -ERANGE (local_off + len beyond the region, remote
 * offset + len beyond 2^40), -EACCES (the region does not permit LOCAL_READ), -EBADF, -ENOTSUP.
 * A wrong key, a deregistered region or a target outside the region's scope is known only at the
 * target: the completion is an ERROR with reason BAD_HANDLE. */
int velo_put(velo_ep_t* ep, velo_addr_t dst, const velo_region_t* local, size_t local_off, uint64_t remote_nla,
             uint32_t remote_key, size_t len, unsigned flags, uint64_t cookie);
/* The same from a plain buffer: it is registered through the region cache (repeated transfers
 * from the same buffer find their registration; a new one gets VELO_SCOPE_JOB), with the cache's
 * errors. */
int velo_put_buf(velo_ep_t* ep, velo_addr_t dst, const void* buf, uint64_t remote_nla, uint32_t remote_key, size_t len,
                 unsigned flags, uint64_t cookie);
/* Get len (>= 1) bytes from remote_nla (key remote_key) on node src.node into the local region at
 * local_off (LOCAL_WRITE access). Flags: VELO_RMA_F_LOCAL only. Errors as velo_put's. */
int velo_get(velo_ep_t* ep, velo_addr_t src, const velo_region_t* local, size_t local_off, uint64_t remote_nla,
             uint32_t remote_key, size_t len, unsigned flags, uint64_t cookie);
int velo_get_buf(velo_ep_t* ep, velo_addr_t src, void* buf, uint64_t remote_nla, uint32_t remote_key, size_t len,
                 unsigned flags, uint64_t cookie);

/* Completion kinds (the notification queue's KIND values). */
#define VELO_RMA_KIND_LOCAL 1    /* put: source read completely (VELO_RMA_F_LOCAL) */
#define VELO_RMA_KIND_REMOTE 2   /* put: data visible at the target (VELO_RMA_F_REMOTE) */
#define VELO_RMA_KIND_GET_DONE 3 /* get: data written here (VELO_RMA_F_LOCAL) */
#define VELO_RMA_KIND_ERROR 4    /* a put or get failed: reason, status */
#define VELO_RMA_KIND_TARGET 5   /* a notified put of a peer into one of our regions completed */

/* Error reasons (the spec's RMA_ERR_* values). */
#define VELO_RMA_R_BAD_CMD 1     /* the NIC refused the command (library bug) */
#define VELO_RMA_R_TORN 2        /* the command write was torn (re-issued; reported if it persists) */
#define VELO_RMA_R_BAD_HANDLE 3  /* no such region, wrong key, or (remote) not permitted for this initiator */
#define VELO_RMA_R_NOT_OWNER 4   /* local region of another endpoint */
#define VELO_RMA_R_PERM 5        /* the region does not permit the access */
#define VELO_RMA_R_RANGE 6       /* offset + length beyond the region */
#define VELO_RMA_R_NOT_VALID 7   /* translation withdrawn (remote: the owner's memory changed) */
#define VELO_RMA_R_NO_ROUTE 8    /* no route to the node */
#define VELO_RMA_R_NQ_DISABLED 9 /* data written, but the target's notification queue is disabled */
#define VELO_RMA_R_DISABLED 10   /* the RMA unit or the NIC is disabled */
#define VELO_RMA_R_BUSY 11       /* the NIC had no free command tag (re-issued by the library, never reported) */

/* One completion. */
typedef struct velo_rma_cpl {
    uint32_t kind;    /* VELO_RMA_KIND_* */
    uint32_t op;      /* 1 put, 2 get */
    uint64_t cookie;  /* the call's cookie (TARGET: the initiator's cookie) */
    uint64_t len;     /* bytes of the call (TARGET: of the put, its last command if split) */
    uint64_t nla;     /* the call's remote NLA (TARGET: the NLA of the put's first byte here) */
    velo_addr_t peer; /* the call's dst/src (TARGET: the initiator's node and vpid) */
    uint32_t reason;  /* ERROR: VELO_RMA_R_* */
    uint32_t remote;  /* ERROR: 1 if detected at the remote node */
    int32_t status;   /* ERROR: the reason as a negative errno (velo_strerror), else 0 */
    uint32_t rsvd;
} velo_rma_cpl_t;

/* Take one completion. 0 and *cpl filled; -EAGAIN if none (never blocks). Commands that failed
 * with NOT_VALID on this endpoint's own region are re-pinned and issued again here (the caller
 * sees only the final outcome), torn command writes are issued again. Errors: -EINVAL, -EBADF,
 * -ENOTSUP. */
int velo_rma_poll(velo_ep_t* ep, velo_rma_cpl_t* cpl);
/* Like velo_rma_poll, waiting up to timeout_ms (-1: forever, 0: once); -ETIMEDOUT. */
int velo_rma_wait(velo_ep_t* ep, velo_rma_cpl_t* cpl, int timeout_ms);

/* Text of an RMA error reason (VELO_RMA_R_*). Never NULL. */
const char* velo_rma_reason_str(unsigned reason);

/* Text of an error code (negative or positive errno). Never NULL. */
const char* velo_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* VELO_H */
