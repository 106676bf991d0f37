/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * The portable VELO driver core: everything the Linux driver and the simulated fabric share.
 * Device discovery and verification (ID block magic 'VELO', SPEC_HASH of the spec this code was
 * generated from), endpoint (vpid pair) allocation, mailbox ring allocation and the VPID_TABLE
 * programming sequence, destination grants (which send-window pages an endpoint may map),
 * and teardown with the quiesce barrier before ring memory is freed.
 *
 * Freestanding C17: no libc calls; memory, register access and logging come through the ops
 * table. Not thread-safe: the caller serialises all calls on one device (the Linux driver holds
 * a mutex per device; the fabric is single-threaded).
 */
#ifndef VELO_CORE_H
#define VELO_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Errors: negative errno values (the numbers the Linux kernel uses). */
#define VELO_CORE_EPERM 1
#define VELO_CORE_ENOENT 2
#define VELO_CORE_EIO 5
#define VELO_CORE_ENOMEM 12
#define VELO_CORE_EBUSY 16
#define VELO_CORE_ENODEV 19
#define VELO_CORE_EINVAL 22
#define VELO_CORE_ENOSPC 28
#define VELO_CORE_EPROTO 71
#define VELO_CORE_EADDRINUSE 98
#define VELO_CORE_ETIMEDOUT 110

#define VELO_CORE_LOG_ERR 0
#define VELO_CORE_LOG_WARN 1
#define VELO_CORE_LOG_INFO 2

struct velo_core_ops {
	/* BAR0 register access, 32 bits. reg_read32 returns 0xFFFFFFFF for a failed read. */
	uint32_t (*reg_read32)(void* ctx, uint32_t off);
	void (*reg_write32)(void* ctx, uint32_t off, uint32_t v);
	/* Zeroed DMA-able memory of `size` bytes (a multiple of 4096), 4096-byte aligned. Returns
	 * the CPU address (NULL on failure), the bus address in *dma and a cookie for dma_free. */
	void* (*dma_alloc)(void* ctx, size_t size, uint64_t* dma, void** cookie);
	void (*dma_free)(void* ctx, void* cpu, size_t size, uint64_t dma, void* cookie);
	/* Zeroed kernel memory and its release. */
	void* (*zalloc)(void* ctx, size_t size);
	void (*free)(void* ctx, void* p);
	/* One line of log text (no newline). May be NULL. */
	void (*log)(void* ctx, int level, const char* msg);
	/* Called between two polls of QUIESCE_STATUS (cpu_relax, udelay). May be NULL. */
	void (*relax)(void* ctx);
};

/* What the device says about itself. */
struct velo_core_caps {
	uint32_t design_version;
	uint32_t spec_hash;
	uint32_t node_id;
	uint32_t node_bits, vpid_bits;
	uint32_t tlp_bytes, link_bytes, msg_max;
	uint32_t num_vpids;
	uint32_t ctrl_base, counters_base, vpid_base; /* block offsets found by the chain walk */
	uint32_t num_counters;
	uint32_t table_off, table_stride; /* VPID_TABLE */
	uint32_t user_off, user_stride;   /* VPID_USER pages */
};

struct velo_core;

/* Parameters of a new endpoint. */
struct velo_core_ep_params {
	int vpid;                /* requested data vpid, -1: any (allocated round robin, so a
	                            just-freed vpid is reused as late as possible) */
	unsigned log2_lines;     /* data ring: 2^log2_lines lines (VELO_MBOX_LOG2_MIN..MAX) */
	unsigned ctl_log2_lines; /* control ring */
	unsigned max_grants;     /* grants the endpoint may hold; 0: 1024 */
	uint64_t owner;          /* opaque owner (file, client); velo_core_release_owner closes all */
};

/* One endpoint: a data vpid and its control vpid (VELO_CTL_VPID), each with a ring. */
struct velo_core_ep {
	unsigned vpid, ctl_vpid;
	unsigned log2_lines, ctl_log2_lines;
	void* ring;      /* CPU address of the data ring */
	void* ctl_ring;  /* CPU address of the control ring */
	uint64_t ring_dma, ctl_ring_dma;
	void* ring_cookie;
	void* ctl_ring_cookie;
	size_t ring_bytes, ctl_ring_bytes;
	uint64_t owner;
	uint32_t user_page_off;     /* BAR0 offset of the data vpid's user page */
	uint32_t ctl_user_page_off; /* BAR0 offset of the control vpid's user page */
	unsigned ngrants, max_grants;
	struct velo_core_grant_ent* grants; /* [max_grants], slot in use when .used */
};

struct velo_core_grant_ent {
	uint8_t used;
	uint8_t from;        /* 0: data vpid, 1: control vpid */
	uint16_t rsvd;
	uint32_t dst_node, dst_vpid;
	uint64_t window_off; /* BAR2 offset of the granted page */
};

/* Verify the device (walk the block chain; ID magic, block types, SPEC_HASH, sane CAPS) and
 * create the core. Does not touch NIC state. Errors: -ENODEV (not a VELO device, or a broken
 * block chain), -EPROTO (SPEC_HASH differs: built from another spec), -ENOMEM. */
int velo_core_probe(const struct velo_core_ops* ops, void* ctx, struct velo_core** out);

/* Close every endpoint (quiesced) and free the core. */
void velo_core_remove(struct velo_core* c);

const struct velo_core_caps* velo_core_caps(const struct velo_core* c);

/* Bring-up (what the Linux driver does at probe time; the simulated System does it itself):
 * disable, set NODE_ID, enable. Reads NODE_ID back. */
int velo_core_enable(struct velo_core* c, uint32_t node_id);
/* Re-read NODE_ID into the caps (after someone else set it). */
void velo_core_refresh(struct velo_core* c);

/* Allocate an endpoint: vpid pair, both rings (zeroed), program both VPID_TABLE entries
 * (MB_CFG = 0, base, WP = 0, user MB_RP = 0, MB_CFG = ENABLE | LOG2_LINES, read back).
 * Errors: -EINVAL (bad sizes or vpid), -EADDRINUSE (requested vpid taken), -ENOSPC (none
 * free), -ENOMEM, -EIO (read-back mismatch). */
int velo_core_ep_open(struct velo_core* c, const struct velo_core_ep_params* p, const struct velo_core_ep** out);

/* Find an open endpoint by its data vpid (NULL if none). */
const struct velo_core_ep* velo_core_ep_find(const struct velo_core* c, unsigned vpid);

/* Close: drop every grant, disable both vpids (MB_CFG = 0), QUIESCE_VPID = v and poll
 * QUIESCE_STATUS until BUSY = 0 (for both), then free the rings. -ENOENT if not open,
 * -ETIMEDOUT if the NIC never quiesces (the rings are then leaked, never reused). */
int velo_core_ep_close(struct velo_core* c, unsigned vpid);

/* Close every endpoint of an owner (a process that died). Returns how many were closed. */
int velo_core_release_owner(struct velo_core* c, uint64_t owner);

/* Grant the endpoint `vpid` the right to send from its data (from = 0) or control (from = 1)
 * vpid to (dst_node, dst_vpid). Data vpids may send to data vpids only; control vpids to
 * anything. Returns the grant id (>= 0) and the page's BAR2 offset in *window_off; a repeated
 * grant returns the same id. Errors: -ENOENT (no such endpoint), -EINVAL (destination out of
 * range, or a data page towards a control vpid), -ENOSPC (max_grants reached). */
int velo_core_grant(struct velo_core* c, unsigned vpid, unsigned from, unsigned dst_node, unsigned dst_vpid,
                    uint64_t* window_off);
/* Drop a grant. -ENOENT if there is none with that id. */
int velo_core_revoke(struct velo_core* c, unsigned vpid, unsigned grant_id);
/* The grant with that id, or NULL. */
const struct velo_core_grant_ent* velo_core_grant_get(const struct velo_core* c, unsigned vpid, unsigned grant_id);

/* BAR2 offset of the page (src vpid -> dst node, dst vpid) (SEND_ADDR format). */
uint64_t velo_core_window_off(const struct velo_core* c, unsigned src_vpid, unsigned dst_node, unsigned dst_vpid);

/* Number of open endpoints. */
unsigned velo_core_ep_count(const struct velo_core* c);

#ifdef __cplusplus
}
#endif

#endif /* VELO_CORE_H */
