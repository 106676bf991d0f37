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

#define VELO_API_VERSION 1
#define VELO_MSG_MAX_BYTES 64

typedef struct velo_ep velo_ep_t;     /* an endpoint: one receive mailbox (data vpid) */
typedef struct velo_conn velo_conn_t; /* a granted destination of an endpoint */

/* Where an endpoint is: node id and vpid (virtual process id) on that node. */
typedef struct velo_addr {
	uint32_t node;
	uint32_t vpid;
} velo_addr_t;

/* A received message. The source is stamped by the sending NIC (node) and the page the
 * sender's driver mapped (vpid): it cannot be forged by the sender. */
typedef struct velo_msg {
#if defined(__cplusplus)
	alignas(16) uint8_t data[VELO_MSG_MAX_BYTES];
#else
	_Alignas(16) uint8_t data[VELO_MSG_MAX_BYTES];
#endif
	uint8_t src_node; /* sending node */
	uint8_t src_vpid; /* sending endpoint's vpid */
	uint16_t len;     /* payload bytes, 1..64 */
	uint32_t rsvd;
} velo_msg_t;

/* Options of velo_open. Initialise with velo_open_attr_init(). */
typedef struct velo_open_attr {
	const char* device; /* NULL: $VELO_DEVICE, else automatic; "hw:/dev/velo0", "sim:<socket>", "sim" */
	int node;           /* sim: node to attach to; -1: $VELO_NODE, else 0 (hw: ignored, must be -1) */
	int vpid;           /* requested vpid; -1: $VELO_VPID, else any free one */
	unsigned ring_log2; /* mailbox ring: 2^ring_log2 lines of 64 bytes; 0: $VELO_RING_LOG2 or 11 */
	unsigned flags;     /* 0 */
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
int velo_connect(velo_ep_t* ep, velo_addr_t dst, unsigned flags, velo_conn_t** conn);

/* Give a connection up (the destination reclaims its credits). The handle stays valid until
 * velo_close of its endpoint; sends on it return -ENOTCONN; velo_connect revives it. */
int velo_disconnect(velo_conn_t* conn);

/* The destination of a connection. */
int velo_conn_addr(const velo_conn_t* conn, velo_addr_t* dst);

/* Send len (1..64) bytes. Never blocks: returns 0 when the message is handed to the NIC;
 * -EAGAIN when the destination has no room for it now (credits are returned as the receiver
 * reads: keep receiving on your own endpoint meanwhile, or two endpoints that wait for each
 * other never make room). Errors: -EINVAL (len 0, NULL pointers), -EMSGSIZE (len > 64),
 * -ENOTCONN (not connected / disconnected / refused), -ECONNRESET (the destination closed),
 * -EBADF (endpoint closed). */
int velo_send(velo_conn_t* conn, const void* buf, size_t len);

/* Receive one message if one is there. Returns its length (1..64) and fills *msg; -EAGAIN if
 * the mailbox is empty; -EBADF if the endpoint is closed; -EINVAL for NULL pointers. */
int velo_poll(velo_ep_t* ep, velo_msg_t* msg);

/* Like velo_poll, but waits up to timeout_ms (-1: forever, 0: poll once) for a message,
 * spinning briefly, then sleeping. Returns -ETIMEDOUT when the time is up, -EINTR on a signal. */
int velo_wait(velo_ep_t* ep, velo_msg_t* msg, int timeout_ms);

/* Simulated NIC clock cycles (sim backend): the fabric's cycle counter now, and the cycle of
 * the last DMA write into this endpoint's mailbox. -EOPNOTSUPP on hardware. */
int velo_clock(const velo_ep_t* ep, uint64_t* now, uint64_t* last_rx);

/* Facts about the endpoint's device. */
typedef struct velo_info {
	char backend[8];       /* "hw" or "sim" */
	uint32_t node_bits;
	uint32_t vpid_bits;
	uint32_t nodes;        /* sim: nodes of the fabric; hw: 0 (unknown) */
	uint32_t msg_max;      /* 64 */
	uint32_t ring_lines;   /* this endpoint's mailbox ring */
	uint32_t credit_lines; /* ring lines granted to one sender */
	uint32_t rsvd[4];
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
	uint64_t rsvd[6];
} velo_stats_t;
int velo_stats(const velo_ep_t* ep, velo_stats_t* stats);

/* Text of an error code (negative or positive errno). Never NULL. */
const char* velo_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* VELO_H */
