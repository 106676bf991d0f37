/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * The portable VELO driver core: everything the Linux driver and the simulated fabric share.
 * Device discovery and verification (ID block magic 'VELO', SPEC_HASH of the spec this code was
 * generated from), endpoint (vpid pair) allocation, mailbox ring allocation and the VPID_TABLE
 * programming sequence, destination grants (which send-window pages an endpoint may map),
 * and teardown with the quiesce barrier before ring memory is freed.
 *
 * Freestanding C17: no libc calls; memory, register access and logging come through the ops
 * table. The code is split by concern; velo_core_priv.h says which file holds what.
 *
 * Locking. The core takes no lock; its caller keeps two lock domains per device (the fabric,
 * single-threaded, needs neither):
 *  - The device lock (the Linux driver's vdev->lock) serialises every call on a device but
 *    velo_core_rma_map, velo_core_rma_invalidate, velo_core_rma_region and
 *    velo_core_rma_pte_free.
 *  - The region lock (vdev->rma_lock) guards the region table and the page table. Those four
 *    calls touch nothing else and need the region lock alone (the Linux driver's MMU notifier
 *    takes it and must not wait for the device lock; velo_file.c calls velo_core_rma_map and
 *    velo_core_rma_invalidate under it alone). The other calls that touch regions need both,
 *    the device lock taken first: velo_core_ioctl of VELO_IOC_NR_REGISTER, _DEREGISTER and
 *    _REPIN, velo_core_rma_declare, velo_core_ep_close, velo_core_client_close,
 *    velo_core_release_owner, velo_core_reclaim and velo_core_remove (an endpoint's regions go
 *    with it). Nothing under the region lock allocates memory.
 *  - velo_core_irq_collect reads nothing of the core but the caps: an interrupt handler may
 *    call it while another call runs.
 *  - velo_core_rma_scope and velo_core_rma_allowed read endpoints and jobs: the device lock.
 *    velo_core_rma_key reads nothing of the core's state (it calls ops->prf): any context.
 */
#ifndef VELO_CORE_H
#define VELO_CORE_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stddef.h>
#include <stdint.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Errors: negative errno values (the numbers the Linux kernel uses). */
#define VELO_CORE_EPERM 1
#define VELO_CORE_ENOENT 2
#define VELO_CORE_EIO 5
#define VELO_CORE_E2BIG 7
#define VELO_CORE_ENOMEM 12
#define VELO_CORE_EACCES 13
#define VELO_CORE_EBUSY 16
#define VELO_CORE_EEXIST 17
#define VELO_CORE_ENODEV 19
#define VELO_CORE_EINVAL 22
#define VELO_CORE_ENOTTY 25
#define VELO_CORE_ENOSPC 28
#define VELO_CORE_EPROTO 71
#define VELO_CORE_EBADFD 77
#define VELO_CORE_EOPNOTSUPP 95
#define VELO_CORE_EADDRINUSE 98
#define VELO_CORE_ETIMEDOUT 110

#define VELO_CORE_LOG_ERR 0
#define VELO_CORE_LOG_WARN 1
#define VELO_CORE_LOG_INFO 2

struct velo_core_ops {
	/* BAR0 register access, 32 bits. reg_read32 returns 0xFFFFFFFF for a failed read. */
	uint32_t (*reg_read32)(void *ctx, uint32_t off);
	void (*reg_write32)(void *ctx, uint32_t off, uint32_t v);
	/*
	 * Zeroed DMA-able memory of `size` bytes (a multiple of 4096), 4096-byte aligned. Returns
	 * the CPU address (NULL on failure), the bus address in *dma and a cookie for dma_free.
	 */
	void *(*dma_alloc)(void *ctx, size_t size, uint64_t *dma, void **cookie);
	void (*dma_free)(void *ctx, void *cpu, size_t size, uint64_t dma, void *cookie);
	/* Zeroed kernel memory and its release. */
	void *(*zalloc)(void *ctx, size_t size);
	void (*free)(void *ctx, void *p);
	/* One line of log text (no newline). May be NULL. */
	void (*log)(void *ctx, int level, const char *msg);
	/* Called between two polls of QUIESCE_STATUS (cpu_relax, udelay). May be NULL. */
	void (*relax)(void *ctx);
	/*
	 * A pseudo-random function keyed with a secret the platform draws once from its RNG and
	 * never reveals (Linux: siphash_2u64 with a key from get_random_bytes; the fabric: SipHash
	 * with a key from getrandom). The region keys are derived from it (velo_core_rma_key), so
	 * whoever knows the secret can predict them. Required: velo_core_probe refuses NULL.
	 */
	uint64_t (*prf)(void *ctx, uint64_t a, uint64_t b);
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
	uint32_t user_off, user_stride; /* VPID_USER pages */
	/* NET block (0 ports when the design has none) */
	uint32_t net_base;
	uint32_t nports; /* NET.PORTS.NP */
	uint32_t route_off; /* ROUTE_TABLE */
	uint32_t port_off, port_stride; /* NET_PORT entries (port 1 at port_off) */
	uint32_t irq_base, irq_pending_off,
		irq_pending_words; /* IRQ block (0: none), IRQ_PENDING words */
	/* RMA block (rma_base 0: the NIC has no RMA unit; every RMA call fails with -EOPNOTSUPP) */
	uint32_t rma_base;
	uint32_t rma_region_bits, rma_pte_bits, rma_mtu; /* RMA CAPS */
	uint32_t rma_region_off, rma_pte_off, rma_nq_off; /* table offsets */
	uint32_t rma_num_counters; /* RMA CNT_COUNT */
};

struct velo_core;

/* Parameters of a new endpoint. */
struct velo_core_ep_params {
	/* requested data vpid, -1: any (round robin: a just-freed vpid is reused as late as possible) */
	int vpid;
	unsigned int log2_lines; /* data ring: 2^log2_lines lines (VELO_MBOX_LOG2_MIN..MAX) */
	unsigned int ctl_log2_lines; /* control ring */
	unsigned int max_grants; /* grants the endpoint may hold; 0: 1024 */
	uint64_t owner; /* opaque owner (file, client); velo_core_release_owner closes all */
	/* who opens it (the access policy, the sysfs vpid table); the fabric: never privileged */
	uint64_t job_key; /* 0: no job (the vpids no job owns) */
	uint32_t pid, uid;
	uint32_t privileged; /* CAP_SYS_ADMIN: any vpid, any destination */
};

/* One endpoint: a data vpid and its control vpid (VELO_CTL_VPID), each with a ring. */
struct velo_core_ep {
	unsigned int vpid, ctl_vpid;
	unsigned int log2_lines, ctl_log2_lines;
	void *ring; /* CPU address of the data ring */
	void *ctl_ring; /* CPU address of the control ring */
	uint64_t ring_dma, ctl_ring_dma;
	void *ring_cookie;
	void *ctl_ring_cookie;
	size_t ring_bytes, ctl_ring_bytes;
	uint64_t owner;
	uint32_t user_page_off; /* BAR0 offset of the data vpid's user page */
	uint32_t ctl_user_page_off; /* BAR0 offset of the control vpid's user page */
	unsigned int ngrants, max_grants;
	struct velo_core_grant_ent *grants; /* [max_grants], slot in use when .used */
	uint64_t job_key;
	uint32_t pid, uid, privileged;
	int job; /* index of its job, -1: the vpids no job owns */
	/* RMA notification queue of the data vpid (nq NULL: not set up) */
	void *nq;
	uint64_t nq_dma;
	void *nq_cookie;
	size_t nq_bytes;
	unsigned int nq_log2;
	unsigned int nregions; /* regions it owns */
};

struct velo_core_grant_ent {
	uint8_t used;
	uint8_t from; /* 0: data vpid, 1: control vpid */
	uint16_t rsvd;
	uint32_t dst_node, dst_vpid;
	uint64_t window_off; /* BAR2 offset of the granted page */
};

/*
 * Verify the device (walk the block chain; ID magic, block types, SPEC_HASH, sane CAPS) and
 * create the core. Does not touch NIC state. Errors: -EINVAL (an op missing), -ENODEV (not a
 * VELO device, or a broken block chain), -EPROTO (SPEC_HASH differs: built from another spec),
 * -ENOMEM.
 */
int velo_core_probe(const struct velo_core_ops *ops, void *ctx, struct velo_core **out);

/* Close every endpoint (quiesced) and free the core. */
void velo_core_remove(struct velo_core *c);

/*
 * Stop the NIC before bus mastering goes (error paths, remove, shutdown): IRQ CTRL.ENABLE,
 * RMA CONTROL.ENABLE and CTRL.CONTROL.ENABLE = 0 (arriving packets and sends are dropped from
 * then on; QUIESCE_STATUS still says when what was in flight has drained).
 */
void velo_core_disable(struct velo_core *c);

/*
 * The device is unreachable (all-ones reads, surprise removal) or never quiesced: 1. Set by a
 * quiesce that found the device gone or timed out; while set, every quiesce polls only
 * VELO_CORE_QUIESCE_POLLS_WEDGED times, so closing many endpoints of a dead NIC does not hold
 * the caller's device lock for a second each. A quiesce that succeeds clears it.
 */
int velo_core_wedged(const struct velo_core *c);
/*
 * Is the device still reachable (Linux: pci_device_is_present)? Asked when a quiesce status
 * reads all ones. Not set: all ones means the device is gone. (A setter, as for rma_unpin.)
 */
void velo_core_set_present(struct velo_core *c, int (*present)(void *ctx));
#define VELO_CORE_QUIESCE_POLLS_WEDGED 1000

const struct velo_core_caps *velo_core_caps(const struct velo_core *c);

/*
 * Bring-up (what the Linux driver does at probe time; the simulated System does it itself):
 * disable, set NODE_ID, enable. Reads NODE_ID back.
 */
int velo_core_enable(struct velo_core *c, uint32_t node_id);
/* Re-read NODE_ID into the caps (after someone else set it). */
void velo_core_refresh(struct velo_core *c);

/*
 * Allocate an endpoint: vpid pair, both rings (zeroed), program both VPID_TABLE entries
 * (MB_CFG = 0, base, WP = 0, user MB_RP = 0, MB_CFG = ENABLE | LOG2_LINES, read back).
 * Errors: -EINVAL (bad sizes or vpid), -EADDRINUSE (requested vpid taken), -ENOSPC (none
 * free), -ENOMEM, -EIO (read-back mismatch).
 */
int velo_core_ep_open(struct velo_core *c, const struct velo_core_ep_params *p,
		      const struct velo_core_ep **out);

/* Find an open endpoint by its data vpid (NULL if none). */
const struct velo_core_ep *velo_core_ep_find(const struct velo_core *c, unsigned int vpid);

/*
 * Close: drop every grant, disable both vpids (MB_CFG = 0), QUIESCE_VPID = v and poll
 * QUIESCE_STATUS until BUSY = 0 (for both), then free the rings. -ENOENT if not open,
 * -ETIMEDOUT if the NIC never quiesces (the rings are then leaked, never reused).
 */
int velo_core_ep_close(struct velo_core *c, unsigned int vpid);

/* Close every endpoint of an owner (a process that died). Returns how many were closed. */
int velo_core_release_owner(struct velo_core *c, uint64_t owner);

/*
 * Grant the endpoint `vpid` the right to send from its data (from = 0) or control (from = 1)
 * vpid to (dst_node, dst_vpid). Data vpids may send to data vpids only; control vpids to
 * anything. Returns the grant id (>= 0) and the page's BAR2 offset in *window_off; a repeated
 * grant returns the same id. Errors: -ENOENT (no such endpoint), -EINVAL (destination out of
 * range, or a data page towards a control vpid), -ENOSPC (max_grants reached).
 */
int velo_core_grant(struct velo_core *c, unsigned int vpid, unsigned int from, unsigned int dst_node,
		    unsigned int dst_vpid, uint64_t *window_off);
/* Drop a grant. -ENOENT if there is none with that id. */
int velo_core_revoke(struct velo_core *c, unsigned int vpid, unsigned int grant_id);
/* The grant with that id, or NULL. */
const struct velo_core_grant_ent *velo_core_grant_get(const struct velo_core *c, unsigned int vpid,
						      unsigned int grant_id);

/* BAR2 offset of the page (src vpid -> dst node, dst vpid) (SEND_ADDR format). */
uint64_t velo_core_window_off(const struct velo_core *c, unsigned int src_vpid, unsigned int dst_node,
			      unsigned int dst_vpid);

/* Number of open endpoints. */
unsigned int velo_core_ep_count(const struct velo_core *c);

/*
 * Close the endpoint owning data or control vpid `vpid` on the administrator's request (sysfs
 * "reclaim"): as velo_core_ep_close; *owner (may be NULL) tells whose it was. -ENOENT if none.
 */
int velo_core_reclaim(struct velo_core *c, unsigned int vpid, uint64_t *owner);

/*
 * ---- access policy (docs/driver.md, "Security model")
 *
 * The vpid space of a node is partitioned: every registered job owns a range of data vpids (and
 * their control vpids); all other vpids belong to no job. Under VELO_POLICY_JOB an endpoint
 * holds a vpid of its own partition and is granted only destinations of that partition (on the
 * job's nodes); VELO_POLICY_STRICT also refuses unprivileged endpoints without a job;
 * VELO_POLICY_OPEN restricts nothing. A privileged endpoint may take any free vpid and reach any
 * destination. The default is VELO_POLICY_JOB, which restricts nothing until a job exists.
 */
int velo_core_set_policy(struct velo_core *c, unsigned int policy); /* VELO_POLICY_*; -EINVAL, -EBUSY */
unsigned int velo_core_policy(const struct velo_core *c);
/*
 * Limits of what an unprivileged VELO_IOC_EP_OPEN may ask: the largest ring (log2 of lines,
 * VELO_RING_LOG2_MIN..VELO_MBOX_LOG2_MAX; default the latter) and the grants per endpoint
 * (1..4096; default 1024). -EINVAL.
 */
int velo_core_set_limits(struct velo_core *c, unsigned int max_ring_log2, unsigned int max_grants);

#define VELO_CORE_MAX_JOBS 64
#define VELO_CORE_UID_ANY 0xFFFFFFFFu
struct velo_core_job {
	uint64_t key; /* nonzero (0 marks a free slot) */
	uint32_t uid; /* VELO_CORE_UID_ANY: whoever knows the key */
	uint32_t vpid_lo, vpid_hi; /* data vpids, inclusive */
	uint32_t node_lo, node_hi; /* destination nodes, inclusive */
	uint32_t nep; /* endpoints of the job (output of velo_core_job_at) */
};
/*
 * Register a job or change one no endpoint uses. -EINVAL (key 0, bad range), -EEXIST (vpid range
 * overlaps another job's), -EBUSY (in use, or an endpoint outside the job holds a vpid of the
 * range or, unprivileged, a grant into it), -ENOSPC (VELO_CORE_MAX_JOBS).
 */
int velo_core_job_set(struct velo_core *c, const struct velo_core_job *j);
int velo_core_job_del(struct velo_core *c, uint64_t key); /* -ENOENT, -EBUSY */
/* Job slot i (0..VELO_CORE_MAX_JOBS-1), NULL when free. */
const struct velo_core_job *velo_core_job_at(const struct velo_core *c, unsigned int i);
/* 0 if endpoint e may be granted (dst_node, dst_vpid) under the policy, else -EACCES. */
int velo_core_may_reach(const struct velo_core *c, const struct velo_core_ep *e, unsigned int dst_node,
			unsigned int dst_vpid);

/*
 * ---- the ioctl level (velo_uapi.h): what one open file asks, validated field by field.
 * The Linux driver keeps a client per open file and copies the arguments in and out; the core
 * checks them and acts. (The fabric speaks its own protocol and calls the functions above.)
 */
struct velo_core_client {
	uint64_t owner; /* unique per client and never reused: endpoints record it */
	/*
	 * The caller of the current call: the OS sets them before every call
	 * (velo_core_client_caller), so privilege is that of who calls, not of who opened.
	 */
	uint32_t pid, uid;
	uint32_t privileged;
	int vpid; /* data vpid of its endpoint, -1 before VELO_IOC_EP_OPEN */
};
void velo_core_client_init(struct velo_core_client *cl, uint64_t owner, uint32_t pid, uint32_t uid,
			   uint32_t privileged);
/*
 * Who makes the next call on the client. An endpoint opened privileged that is then used by an
 * unprivileged caller (a descriptor passed on, or privileges dropped) loses its privilege for
 * good at that call: its later grants follow the policy like any other endpoint's.
 */
void velo_core_client_caller(struct velo_core_client *cl, uint32_t pid, uint32_t uid,
			     uint32_t privileged);
/* The client's endpoint, or NULL with *err = -EBADFD (none opened) or -ENODEV (reclaimed). */
const struct velo_core_ep *velo_core_client_ep(const struct velo_core *c,
					       const struct velo_core_client *cl, int *err);
/* Close the client's endpoint if it still has one (file release). As velo_core_ep_close; 0 if none. */
int velo_core_client_close(struct velo_core *c, struct velo_core_client *cl);

/*
 * Sizes of ioctl nr's structure (VELO_IOC_NR_*): *minsz the smallest argsz accepted, *ksz the
 * size this code knows. -ENOTTY for an unknown nr. The caller copies min(argsz, ksz) bytes in
 * (zero-filling the rest; refusing -E2BIG when bytes past ksz are nonzero) and out again.
 */
int velo_core_uapi_size(unsigned int nr, uint32_t *minsz, uint32_t *ksz);
/*
 * What kind of ioctl nr is: VELO_CORE_UAPI_OUT (results are written back: its number is _IOWR,
 * else _IOW) | VELO_CORE_UAPI_ADMIN (an administrator's call: the OS asks for the capability
 * with auditing); -ENOTTY for an unknown nr.
 */
#define VELO_CORE_UAPI_OUT 0x1
#define VELO_CORE_UAPI_ADMIN 0x2
int velo_core_uapi_flags(unsigned int nr);
/*
 * Carry out ioctl nr on its structure `arg` (ksz bytes, argsz as the caller passed): every field
 * is checked, out fields are filled. For VELO_IOC_NR_WAIT it only checks and reports the rings
 * that have an entry (out_ready; the sleeping is the caller's). Returns >= 0 or -errno.
 */
int velo_core_ioctl(struct velo_core *c, struct velo_core_client *cl, unsigned int nr, void *arg);

/*
 * VELO_WAIT_* mask of the client's rings holding an entry at the read pointers the NIC holds
 * (MB_RP of both user pages): poll().
 */
int velo_core_ring_ready_nic(const struct velo_core *c, const struct velo_core_client *cl);

/* ---- mmap: offset (VELO_MMAP_*), length and access of a mapping, checked */
#define VELO_CORE_MAP_READ 0x1
#define VELO_CORE_MAP_WRITE 0x2
#define VELO_CORE_MAP_EXEC 0x4
#define VELO_CORE_MAP_SHARED 0x8
#define VELO_CORE_MAP_RING 1 /* data ring (read-only, cached) */
#define VELO_CORE_MAP_CTL_RING 2 /* control ring */
#define VELO_CORE_MAP_USER 3 /* data vpid's user page (BAR0, uncached) */
#define VELO_CORE_MAP_CTL_USER 4 /* control vpid's user page */
#define VELO_CORE_MAP_WINDOW 5 /* send-window page of a grant (BAR2, write-combined, write-only) */
#define VELO_CORE_MAP_NQ 6 /* RMA notification queue (read-only, cached) */
#define VELO_CORE_MAP_RMA_CMD \
	7 /* the data vpid's RMA command page (BAR4, write-combined, write-only) */
struct velo_core_map {
	unsigned int kind; /* VELO_CORE_MAP_* */
	unsigned int bar; /* USER: VELO_BAR_REGS, WINDOW: VELO_BAR_SEND, RMA_CMD: VELO_BAR_RMA */
	uint64_t bar_off; /* offset of the page in that BAR */
	/* rings */
	void *cpu;
	uint64_t dma;
	void *cookie;
	size_t bytes;
};
/*
 * 0, or -EINVAL (offset or length not one of the mappings), -EACCES (access not allowed; the
 * RMA command page to an endpoint the policy allows no RMA, velo_core_rma_allowed with the
 * client's caller: the OS sets it, velo_core_client_caller, before the check), -EBADFD /
 * -ENODEV (no endpoint).
 */
int velo_core_mmap_check(const struct velo_core *c, const struct velo_core_client *cl, uint64_t off,
			 uint64_t len, unsigned int acc, struct velo_core_map *m);

/* ---- network control and status */
int velo_core_route_set(struct velo_core *c, unsigned int dst_node, int valid,
			uint32_t route); /* -EINVAL */
int velo_core_port_set(struct velo_core *c, unsigned int port, uint32_t cfg); /* -EINVAL */
uint32_t velo_core_counter(const struct velo_core *c,
			   unsigned int i); /* COUNTERS[i], i < num_counters */
uint32_t velo_core_link_status(const struct velo_core *c); /* bit p-1: port p up */
uint32_t velo_core_status(const struct velo_core *c); /* CTRL.STATUS */

/* ---- interrupts */
/*
 * Mailbox interrupts (the IRQ block): one interrupt (MSI vector 0) for the device. A vpid armed
 * with velo_core_irq_arm is disarmed by the next entry the NIC writes into its ring, which sets
 * the vpid's PENDING bit and, once the entry's DMA writes are out, requests the interrupt (while
 * a request is outstanding, further bits join it). Wait protocol: velo_core_irq_arm, re-check
 * the ring at rp (phase bit), sleep only if it is still empty; the interrupt handler calls
 * velo_core_irq_collect and wakes the waiters of the vpids it reports. Closing a vpid (any
 * MB_CFG write) disarms it. Each call returns -EINVAL for a NULL core and -ENODEV if the device
 * has no IRQ block (caps.irq_base 0). velo_core_irq_collect uses nothing of the core but the
 * caps, so an interrupt handler may call it while another call runs.
 */
/* CTRL.ENABLE = on (read back: -EIO if it does not stick). 0 or error. */
int velo_core_irq_enable(struct velo_core *c, int on);
/*
 * Arm vpid (the data or control vpid of an open endpoint): ARM = vpid, then a read of the IRQ
 * block, so on return the arm is in effect and every entry written before it is visible in
 * memory. 0, -EINVAL (vpid >= num_vpids), -ENOENT (no open endpoint has that vpid).
 */
int velo_core_irq_arm(struct velo_core *c, unsigned int vpid);
/*
 * Read and clear PENDING: every word is read and its set bits written back (write-1-to-clear),
 * then cb(ctx, vpid) runs per pending vpid in ascending order (cb may be NULL). Returns how many
 * vpids were pending, or -EIO if a word has bits past num_vpids set (a failed read; nothing is
 * cleared or reported from that word on).
 */
int velo_core_irq_collect(struct velo_core *c, void (*cb)(void *, unsigned int), void *ctx);

/*
 * ---- RMA: notification queues, regions, translation (docs/rma.md §2, §4)
 *
 * Region index r (0 .. 2^rma_region_bits - 1) is in one of these states:
 *   FREE      RG_CFG = 0 in the NIC (BAD_HANDLE); the index is reused round robin, each time
 *             with the next key, so an old NLA of it fails;
 *   DECLARED  ALLOC = 1, VALID = 0: the handle exists, no pages are pinned (NOT_VALID);
 *   VALID     ALLOC = VALID = 1: the page table entries hold its pinned pages;
 *   STUCK     the NIC never quiesced it: the index, its page table entries and its pins are
 *             never reused (pages stay pinned, so no DMA can reach freed memory);
 *   RETIRED   RG_CFG = 0; every key the index can have was given out once (2^32 - 1
 *             registrations): it is never used again.
 *
 * Keys. Registration n (n = 0, 1, 2, ...) of index r gets key(r, n): a permutation of the 32-bit
 * counter n (four Feistel rounds on its 16-bit halves, the round function ops->prf(r, round and
 * half)), skipping the one n whose key is 0. A permutation never maps two counters to one key,
 * so an index never gets a key it had before, whatever the PRF; the secret in the PRF makes the
 * keys unpredictable. RG_KEY and the scope boxes RG_SCOPE..RG_SCOPE3 (all of them, unused ones
 * empty) are written only while the index is FREE in the NIC (RG_CFG = 0, quiesced), before
 * RG_CFG.
 * Page table entries are allocated per VALID region as one run of consecutive entries (mod
 * 2^rma_pte_bits), best fit; when no run is long enough but enough entries are free in all,
 * every VALID region is withdrawn (VALID = 0, quiesced), the table is compacted and they are
 * made valid again (a command racing with it sees NOT_VALID and is retried by its library).
 *
 * Locking: the region lock, see the top of this file.
 */
#define VELO_CORE_RG_FREE 0
#define VELO_CORE_RG_DECLARED 1
#define VELO_CORE_RG_VALID 2
#define VELO_CORE_RG_STUCK 3
#define VELO_CORE_RG_RETIRED 4
#define VELO_CORE_MAX_REGIONS_PER_EP 4096
/* Scope boxes per region: the spec's RMA_SCOPE_BOXES (velo_core_rma.c checks). */
#define VELO_CORE_SCOPE_BOXES 4

struct velo_core_region {
	uint8_t state; /* VELO_CORE_RG_* */
	uint8_t access; /* VELO_REG_* */
	uint16_t rsvd;
	uint32_t key; /* RG_KEY of the current (or, FREE, the last) use; never 0 */
	uint32_t scope[VELO_CORE_SCOPE_BOXES]; /* RG_SCOPE..RG_SCOPE3 of the current use */
	uint64_t gen; /* the counter n of the index's next key; 2^32: RETIRED */
	uint32_t owner_vpid; /* data vpid */
	uint64_t owner; /* client owner */
	uint64_t addr, len; /* user address and length */
	uint32_t pte_first, npte; /* VALID: its run of page table entries */
	void *pin; /* VALID: the OS's pin handle (velo_core_ops.rma_unpin) */
};

/*
 * RMA: the NIC no longer uses the pages of a region (its translation was withdrawn and the
 * region quiesced): unpin(ctx, pin) unpins them, `pin` being what velo_core_rma_map was given.
 * Called from the region calls and endpoint close; must not allocate memory or sleep on locks
 * the caller of those calls may hold. Not set (the fabric): nothing is pinned. (A setter rather
 * than an ops member, so that existing ops tables stay complete.)
 */
void velo_core_set_rma_unpin(struct velo_core *c, void (*unpin)(void *ctx, void *pin));
/* RMA counter i (VELO_RMA_CNT_*), 0 when i >= rma_num_counters. */
uint32_t velo_core_rma_counter(const struct velo_core *c, unsigned int i);
/* Number of 4 KiB pages (page table entries) a buffer [addr, addr + len) needs. */
uint64_t velo_core_rma_pages(uint64_t addr, uint64_t len);
/* Region r or NULL (out of range, or no RMA). */
const struct velo_core_region *velo_core_rma_region(const struct velo_core *c, unsigned int r);
/* Free page table entries (all runs) and the longest run. */
unsigned int velo_core_rma_pte_free(const struct velo_core *c, unsigned int *longest);

/*
 * RMA CONTROL.ENABLE = on, read back (bring-up, after velo_core_enable: a disabled unit answers
 * every command with ERROR/DISABLED). 0, -EOPNOTSUPP (no RMA unit), -EIO (it does not stick).
 */
int velo_core_rma_enable(struct velo_core *c, int on);

/*
 * One box of initiators a region lets in (format RG_SCOPE): nodes node_lo..node_hi x data vpids
 * vpid_lo..vpid_hi, inclusive.
 */
struct velo_core_scope {
	uint32_t node_lo, node_hi, vpid_lo, vpid_hi;
};
/*
 * A region's scope: n (1..VELO_CORE_SCOPE_BOXES) boxes, an initiator is in it if it is in any;
 * box[n..] unused (the NIC's boxes beyond n are written empty).
 */
struct velo_core_scope_list {
	uint32_t n;
	struct velo_core_scope box[VELO_CORE_SCOPE_BOXES];
};
/*
 * The box the scope `kind` (VELO_SCOPE_*, velo_uapi.h) of endpoint `vpid` stands for, checked
 * against the policy (docs/driver.md, "Security model"): JOB: the partition of the endpoint's
 * data vpid (its job's vpids x the job's nodes; outside any job the run of vpids no job owns
 * around it, x every node; under VELO_POLICY_OPEN everybody); OWNER: this node, its data vpid;
 * PEER: (in->node_lo, in->vpid_lo); BOX: *in. `in` holds only what the kind takes, the rest 0.
 * An unprivileged caller under VELO_POLICY_JOB or _STRICT may ask only for a box inside its
 * JOB box (OWNER always is), and none under _STRICT without a job (velo_core_rma_allowed).
 * Vpids are data vpids (below 2^(vpid_bits - 1)), nodes below 2^node_bits. 0 with *out set,
 * -EINVAL (unknown kind, a field beyond the NIC's bits, LO > HI, a field the kind does not
 * take), -EACCES, -ENOENT (no such endpoint), -EOPNOTSUPP (no RMA unit).
 */
int velo_core_rma_scope(const struct velo_core *c, unsigned int vpid, unsigned int privileged,
			unsigned int kind, const struct velo_core_scope *in,
			struct velo_core_scope *out);
/*
 * The boxes the scope `kind` of endpoint `vpid` stands for. JOB, OWNER, PEER, BOX: nin = 1, in[0]
 * as velo_core_rma_scope takes it, one box out. LIST: in[0 .. nin - 1] (nin 1..VELO_SCOPE_LIST_MAX),
 * each checked as a BOX (-EINVAL, -EACCES as there), then merged: a box contained in another,
 * or adjacent to it (same node range and vpid ranges that overlap or touch, or the other way
 * round), becomes one with it, until no two merge; the boxes left are sorted by (node_lo,
 * node_hi, vpid_lo, vpid_hi). More than VELO_CORE_SCOPE_BOXES left: -E2BIG (the NIC holds that
 * many per region; logged). The boxes out admit exactly the initiators the boxes in admit.
 */
int velo_core_rma_scope_list(const struct velo_core *c, unsigned int vpid, unsigned int privileged,
			     unsigned int kind, const struct velo_core_scope *in, unsigned int nin,
			     struct velo_core_scope_list *out);
/*
 * May endpoint e use RMA under the policy (the caller `privileged` or not)? As for sends: 0,
 * or -EACCES under VELO_POLICY_STRICT for an unprivileged caller whose endpoint has no job (an
 * endpoint opened with privilege that lost it). VELO_IOC_REGISTER and the mmap of the command
 * page (VELO_MMAP_RMA_CMD) ask it.
 */
int velo_core_rma_allowed(const struct velo_core *c, const struct velo_core_ep *e,
			  unsigned int privileged);
/*
 * Key number n of region index r (see "Keys" above; may be 0, which registration skips). What
 * velo_core_rma_declare gives; for tests of the permutation.
 */
uint32_t velo_core_rma_key(const struct velo_core *c, unsigned int r, uint32_t n);
/*
 * Declare a region for endpoint `vpid` (owner: its client) reachable by the initiators in
 * *scope (boxes velo_core_rma_scope_list made): a FREE index (round robin), its next key,
 * RG_PTE/RG_START/RG_LEN, RG_KEY, RG_SCOPE..RG_SCOPE3 (boxes beyond scope->n empty), then
 * RG_CFG = ALLOC | perms | owner (VALID = 0).
 * *nla = the NLA of byte 0 (its KEY field: the key's bits 7:0). Returns the index.
 * -EOPNOTSUPP, -ENOENT, -EINVAL (access, len, scope beyond the NIC's bits), -ENOSPC.
 */
int velo_core_rma_declare(struct velo_core *c, unsigned int vpid, uint64_t addr, uint64_t len,
			  unsigned int access, const struct velo_core_scope_list *scope, uint64_t *nla);
/*
 * Make DECLARED region r (with the 32-bit key) VALID: npages = velo_core_rma_pages(addr, len) frame
 * numbers (physical address >> 12) of its pinned pages, `pin` the handle for rma_unpin.
 * Allocates the page table run (compacting if needed), writes the entries, RG_PTE, RG_START,
 * RG_LEN, RG_CFG last. -ENOENT (not DECLARED with that key: deregistered meanwhile), -EINVAL
 * (npages wrong, a frame beyond 40 bits), -ENOSPC (page table too small / full). On error
 * nothing is kept (the caller unpins).
 */
int velo_core_rma_map(struct velo_core *c, unsigned int r, unsigned int key, const uint64_t *pfns,
		      uint64_t npages, void *pin);
/*
 * Withdraw the translation of VALID region r (key): RG_CFG.VALID = 0, QUIESCE_REGION = r,
 * poll QUIESCE_STATUS until BUSY = 0, free its page table run, rma_unpin; the region stays
 * DECLARED (its handle still good: NOT_VALID until re-pinned). 0 (also when it was not VALID or
 * the key is another's), -ETIMEDOUT (now STUCK, pins kept). What the MMU notifier calls.
 */
int velo_core_rma_invalidate(struct velo_core *c, unsigned int r, unsigned int key);

#ifdef __cplusplus
}
#endif

#endif /* VELO_CORE_H */
