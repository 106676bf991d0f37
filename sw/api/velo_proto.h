/* SPDX-License-Identifier: MIT */
/*
 * libvelo's protocol (velo_proto.c) on top of the rings: end-to-end credits, connections,
 * trains, receive areas and the control messages that carry them. Not installed.
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
#ifndef VELO_PROTO_H
#define VELO_PROTO_H

#include "velo_ep.h"

/* ---- control messages (payload of messages from control vpids) */
#define VELO_CTL_MAGIC 0xC7
enum velo_ctl_type {
    VELO_CTL_CONNECT = 1,    /* sender -> receiver's data ring: epoch */
    VELO_CTL_DISCONNECT = 2, /* sender -> receiver's data ring: epoch */
    VELO_CTL_CREDIT = 3,     /* receiver -> sender's control ring: epoch, limit, window */
    VELO_CTL_REFUSE = 4,     /* receiver -> sender's control ring: epoch (no room for a sender) */
    VELO_CTL_RESET = 5,      /* receiver -> sender's control ring: the receiver closed */
    VELO_CTL_AREA = 6,       /* receiver -> sender's control ring, before CREDIT: epoch, the receive
                              * area's NLA (limit | rsvd << 32), window = log2 of its slot size, and
                              * after the 16 bytes its key (struct velo_ctl_area) */
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
/* AREA: the control message, then the area's 32-bit key (velo_region_rkey; the NLA holds its bits
 * 7:0) and 4 reserved bytes (0). The area is registered for this sender only (VELO_SCOPE_PEER):
 * the key is of no use to anybody else. */
struct velo_ctl_area {
    struct velo_ctl_msg m;
    uint32_t key;
    uint32_t rsvd;
};
#define VELO_CTL_AREA_BYTES 24

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
    return len <= VELO_TRAIN_FIRST ? 1u
                                   : 1u + (unsigned)((len - VELO_TRAIN_FIRST + VELO_TRAIN_NEXT - 1) / VELO_TRAIN_NEXT);
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

#define VELO_TRAIN_MAX (VELO_TRAIN_FIRST + (VELO_CREDIT_WINDOW_MAX / 2 - 1) * VELO_TRAIN_NEXT)

/* ---- receiver side */
/* Index of a source into the endpoint's line counts: header bytes 4 and 5, as the fast path
 * reads them. */
static inline uint32_t velo__src_key(unsigned node, unsigned vpid) {
    return (node & 0xFFu) | (vpid & 0xFFu) << 8;
}
/* Lines between credit batches from the connected senders' windows. */
void velo__recompute_batch(struct velo_ep* ep);
/* Return ring space: the read pointer to the NIC, credits to the senders owed half a window. */
void velo__batch(struct velo_ep* ep);
/* The read pointer moved from `from` to ep->cur: a batch when it crossed a batch point. */
static inline void velo__crossed(struct velo_ep* ep, uint32_t from) {
    const uint32_t to = velo__ring_rp(&ep->data, ep->cur);
    if ((from ^ to) & ~(ep->batch - 1)) velo__batch(ep);
}
/* A message from a sender's control vpid in the data ring (connection request, train piece,
 * LARGE notice, credit request): a message's length when one is complete for the user (in m). */
int velo__on_data_ctl(struct velo_ep* ep, unsigned node, unsigned ctl_vpid, const uint8_t* b, unsigned len,
                      velo_msg_t* m);
/* The last long message delivered is no longer the caller's: its slot goes back to the sender. */
void velo__release_held(struct velo_ep* ep);
/* A long message copied out of the queue is being delivered: freed at the next receive. */
void velo__hold(struct velo_ep* ep, struct velo_peer* p, void* copy);
/* Read the control ring (credits, refusals, resets, areas, releases); blocking: wait for its
 * lock, else give up when another thread reads it. Returns the messages read. */
int velo__ctl_progress(struct velo_ep* ep, int blocking);
/* Frees the peers (and their areas and trains) of a closed endpoint. */
void velo__peers_free(struct velo_ep* ep);

/* ---- sender side */
struct velo_conn* velo__conn_find(struct velo_ep* ep, unsigned node, unsigned vpid);
/* a new connection into the endpoint's hash and list */
void velo__conn_link(struct velo_ep* ep, struct velo_conn* c);
/* end a connection locally: no more credit */
void velo__conn_end(struct velo_conn* c, uint32_t state);
/* A control message from our control vpid through page/win. */
int velo__send_ctl(struct velo_ep* ep, int page, uint8_t* win, unsigned type, uint32_t epoch, uint32_t limit,
                   uint32_t window);
/* Take `lines` of the connection's credit: 0, -EAGAIN, or the connection's state as an error. */
int velo__take_credit(struct velo_conn* c, int32_t lines);
/* velo_send of more than 64 bytes: a train or a put into the receive area. */
int velo__send_big(struct velo_conn* c, const void* buf, size_t len);
/* The goodbyes of velo_close: DISCONNECT to the destinations, RESET to the senders. */
void velo__say_goodbye(struct velo_ep* ep);

#endif /* VELO_PROTO_H */
