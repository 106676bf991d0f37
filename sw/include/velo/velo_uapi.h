/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * VELO driver ABI: what user space (libvelo's hw backend) and the Linux driver (sw/driver/linux)
 * agree on. One open file of /dev/veloN is one endpoint: a pair of vpids (the data vpid whose
 * mailbox receives messages, and its control vpid, see VELO_CTL_VPID) with their mailbox rings.
 *
 * Sequence: open("/dev/velo0") -> VELO_IOC_INFO -> VELO_IOC_EP_OPEN -> mmap the rings and user
 * pages at the VELO_MMAP_* offsets -> VELO_IOC_GRANT per destination -> mmap the window page of
 * the grant (write-combined) -> send/poll without the kernel -> VELO_IOC_WAIT or poll() to sleep
 * -> close() (the driver disables both vpids, waits for QUIESCE_STATUS.BUSY = 0, and only then
 * frees the rings).
 *
 * Forward compatibility (as VFIO does it): every ioctl takes a pointer to a structure that starts
 * with __u32 argsz (the caller's sizeof) and __u32 flags (input flags; unknown bits are refused
 * with EINVAL). The driver reads min(argsz, its size) bytes (zero-filling what an older caller
 * did not pass; refusing with E2BIG a newer caller's nonzero bytes it does not understand),
 * refuses argsz below the version-1 size with EINVAL (above 4096 with E2BIG), and writes back
 * min(argsz, its size) bytes (_IOWR numbers only). Fields named rsvd must be zero.
 *
 * ioctl numbers (version 4): _IOWR (the driver writes results back) or _IOW (input only) under
 * the type VELO_IOC_MAGIC, number VELO_IOC_NR_*, with the size of the caller's structure; argsz
 * must equal that size (EINVAL). A structure that grows changes the size field of its number,
 * never the type, number or direction: the driver matches those and takes the size as argsz.
 * The _IO('V', 0xB0 + n) numbers of versions 2 and 3 are refused with EPROTO (and a line in the
 * kernel log) so that an old library says why it cannot work.
 *
 * All structures have fixed-size fields and explicit padding (same layout on 32- and 64-bit user
 * space). Every ioctl returns 0 or -1 with errno. docs/driver.md lists every errno.
 */
#ifndef VELO_UAPI_H
#define VELO_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

/*
 * 2: argsz/flags in every structure, job keys, WAIT on both rings, admin ioctls.
 * 3: RMA: RMA_SETUP (notification queue), REGISTER, DEREGISTER, REPIN, mmaps VELO_MMAP_NQ and
 *    VELO_MMAP_RMA_CMD.
 * 4: ioctl numbers with direction and size under their own type (VELO_IOC_MAGIC); privilege is
 *    that of the calling process at each call, not of the opener.
 * 5: RMA protection: REGISTER takes a scope and returns a 32-bit key; commands carry the
 *    key's bits 31:8 (RMA_CMD0 RKEY_HI), LEN moved to bits 39:16.
 * 6: scope lists: REGISTER takes VELO_SCOPE_LIST (up to VELO_SCOPE_LIST_MAX boxes, the NIC checks
 *    up to VELO_SCOPE_NIC_BOXES per region) and returns the boxes the NIC checks; an ABI-5
 *    REGISTER (48 bytes) is refused with EPROTO.
 */
#define VELO_UAPI_VERSION 6

/* Device nodes: /dev/velo0, /dev/velo1, ... (one per NIC). */
#define VELO_DEV_PREFIX "/dev/velo"

/*
 * Control vpid of an endpoint: the data vpid with the top vpid bit set. The driver allocates
 * endpoints in the lower half of the vpid space only, so a receiver tells library control
 * traffic (connection requests, credit returns) from data by the hardware-stamped source vpid.
 */
#define VELO_CTL_VPID_BIT(vpid_bits) (1u << ((vpid_bits) - 1))
#define VELO_CTL_VPID(vpid, vpid_bits) ((vpid) | VELO_CTL_VPID_BIT(vpid_bits))
#define VELO_IS_CTL_VPID(vpid, vpid_bits) (((vpid) & VELO_CTL_VPID_BIT(vpid_bits)) != 0)

/* Default and allowed ring sizes (log2 of 64-byte lines; the hardware allows 1..16). */
#define VELO_RING_LOG2_DEFAULT 11
#define VELO_CTL_RING_LOG2_DEFAULT 10
#define VELO_RING_LOG2_MIN 6

/*
 * ---- mmap offsets (page aligned, in the file's offset space). Every mapping is MAP_SHARED, of
 * exactly the size given, at exactly these offsets; anything else fails with EINVAL (bad offset
 * or size) or EACCES (bad protection).
 */
/* data ring: PROT_READ only, cached, ring_bytes */
#define VELO_MMAP_RING 0x0000000000ull
/* control ring: PROT_READ only, cached */
#define VELO_MMAP_CTL_RING 0x1000000000ull
/* data vpid's BAR0 user page (MB_RP), uncached, 4096 */
#define VELO_MMAP_USER_PAGE 0x2000000000ull
/* control vpid's BAR0 user page, uncached, 4096 */
#define VELO_MMAP_CTL_USER_PAGE 0x2000001000ull
/* + grant id * 4096: a send-window page, PROT_WRITE only, write-combined, 4096 */
#define VELO_MMAP_WINDOW 0x3000000000ull
/* RMA notification queue: PROT_READ only, cached, nq_bytes (after VELO_IOC_RMA_SETUP) */
#define VELO_MMAP_NQ 0x4000000000ull
/*
 * the data vpid's RMA command page (BAR4), PROT_WRITE only, write-combined, 4096 (after
 * VELO_IOC_RMA_SETUP)
 */
#define VELO_MMAP_RMA_CMD 0x5000000000ull

/* Access policies (module parameter grant_policy; VELO_IOC_INFO reports the one in force). */
#define VELO_POLICY_OPEN 0   /* any endpoint may be granted any destination */
#define VELO_POLICY_JOB 1    /* endpoints reach only their job's vpids (default) */
#define VELO_POLICY_STRICT 2 /* as JOB, and unprivileged endpoints must name a job */

/* VELO_IOC_INFO: the device. Needs no endpoint. */
#define VELO_INFO_F_IRQ 0x1 /* out_flags: WAIT and poll() sleep on the NIC's interrupt */
#define VELO_INFO_F_WC 0x2  /* out_flags: send-window pages are write-combined (PAT or MTRR) */
struct velo_uapi_info {
	__u32 argsz;
	__u32 flags;          /* in: 0 */
	__u32 uapi_version;   /* VELO_UAPI_VERSION of the driver */
	__u32 spec_hash;      /* ID.SPEC_HASH of the NIC (the driver refused a mismatch already) */
	__u32 design_version;
	__u32 node_id;        /* this node's id (CTRL.NODE_ID) */
	__u32 node_bits;      /* CAPS */
	__u32 vpid_bits;
	__u32 msg_max;        /* largest message payload in bytes (64) */
	__u32 num_vpids;
	__u32 link_up;        /* CTRL.STATUS.LINK_UP */
	__u32 clock_khz;      /* NIC core clock, 0 if unknown */
	__u32 policy;         /* VELO_POLICY_* */
	__u32 out_flags;      /* VELO_INFO_F_* */
	__u32 nports;         /* network ports of the NIC's switch */
	__u32 link_status;    /* bit p-1: the link of port p is up */
};

/* VELO_IOC_EP_OPEN: allocate the endpoint of this file (once per file). */
struct velo_uapi_ep_open {
	__u32 argsz;
	__u32 flags;          /* in: 0 */
	__s32 vpid;           /* in: requested data vpid, or -1 for any free one of the job */
	__u32 log2_lines;     /* in: data ring size, 0: VELO_RING_LOG2_DEFAULT */
	__u32 ctl_log2_lines; /* in: control ring size, 0: VELO_CTL_RING_LOG2_DEFAULT */
	__u32 rsvd0;
	__u64 job_key;        /* in: the job (VELO_IOC_JOB_SET), 0: none */
	/* out */
	__u32 out_vpid;       /* data vpid */
	__u32 out_ctl_vpid;   /* control vpid = VELO_CTL_VPID(out_vpid) */
	__u32 out_log2_lines;
	__u32 out_ctl_log2_lines;
	__u64 ring_bytes;     /* bytes to map at VELO_MMAP_RING */
	__u64 ctl_ring_bytes; /* bytes to map at VELO_MMAP_CTL_RING */
	__u32 user_page_off;  /* offset of MB_RP inside the user page mapping */
	__u32 max_grants;     /* grant ids are 0 .. max_grants-1 */
};

/* Which of the endpoint's vpids a granted page sends from. */
#define VELO_GRANT_FROM_DATA 0 /* user messages: to data vpids only */
#define VELO_GRANT_FROM_CTL 1  /* library control messages: to data or control vpids */

/* VELO_IOC_GRANT: allow sending from (own vpid of kind `from`) to (dst_node, dst_vpid). */
struct velo_uapi_grant {
	__u32 argsz;
	__u32 flags;      /* in: 0 */
	__u32 from;       /* in: VELO_GRANT_FROM_* */
	__u32 dst_node;   /* in */
	__u32 dst_vpid;   /* in */
	__u32 grant_id;   /* out: map VELO_MMAP_WINDOW + grant_id * 4096 (one page) */
	__u64 window_off; /* out: BAR2 offset of the page (informational) */
};

/* VELO_IOC_REVOKE: drop a grant; the driver zaps every mapping of its page. */
struct velo_uapi_revoke {
	__u32 argsz;
	__u32 flags;    /* in: 0 */
	__u32 grant_id; /* in */
	__u32 rsvd;
};

/*
 * VELO_IOC_WAIT: sleep until the line at read pointer rp (ctl_rp) of the data (control) ring
 * holds the phase that marks a new entry, or timeout_ns passes (-1/ETIMEDOUT), or a signal
 * arrives (-1/EINTR). The driver arms the NIC's interrupt for the vpids, re-checks the lines
 * and only then sleeps. Returns 0 with out_ready saying which rings have an entry.
 */
#define VELO_WAIT_DATA 0x1        /* flags, out_ready: the data ring */
#define VELO_WAIT_CTL 0x2         /* flags, out_ready: the control ring */
#define VELO_WAIT_FOREVER (~0ull) /* timeout_ns: no timeout */
struct velo_uapi_wait {
	__u32 argsz;
	__u32 flags;      /* in: VELO_WAIT_DATA and/or VELO_WAIT_CTL (at least one) */
	__u32 rp;         /* in: data ring read pointer, free-running, in lines */
	__u32 ctl_rp;     /* in: control ring read pointer */
	__u64 timeout_ns; /* in: 0: check once */
	__u32 out_ready;  /* out: VELO_WAIT_* of the rings with an entry */
	__u32 rsvd;
};

/*
 * ---- administration (CAP_SYS_ADMIN; needs no endpoint)
 *
 * VELO_IOC_JOB_SET: register (or, while no endpoint uses it, change) a job on this node. The
 * processes of a job share job_key (a secret the launcher hands them); they own the data vpids
 * vpid_lo..vpid_hi and their control vpids, and may send to those vpids on nodes
 * node_lo..node_hi. The resource manager registers the same job on every node of the job.
 * Ranges of two jobs never overlap (EEXIST).
 */
#define VELO_JOB_F_UID 0x1 /* only user `uid` may open endpoints of the job */
struct velo_uapi_job {
	__u32 argsz;
	__u32 flags;     /* in: VELO_JOB_F_* */
	__u64 job_key;   /* in: nonzero */
	__u32 uid;       /* in: with VELO_JOB_F_UID (initial user namespace) */
	__u32 vpid_lo;   /* in: data vpids, inclusive, below VELO_CTL_VPID_BIT */
	__u32 vpid_hi;
	__u32 node_lo;   /* in: destination nodes, inclusive */
	__u32 node_hi;
	__u32 rsvd;
};

/* VELO_IOC_JOB_DEL: remove a job (EBUSY while endpoints use it). */
struct velo_uapi_job_del {
	__u32 argsz;
	__u32 flags;   /* in: 0 */
	__u64 job_key; /* in */
};

/* VELO_IOC_NODE_SET: set CTRL.NODE_ID (EBUSY while endpoints are open). */
struct velo_uapi_node {
	__u32 argsz;
	__u32 flags;   /* in: 0 */
	__u32 node_id; /* in */
	__u32 rsvd;
};

/* VELO_IOC_ROUTE_SET: ROUTE_TABLE[dst_node] = route (VELO_ROUTE_F_VALID), or invalid. */
#define VELO_ROUTE_F_VALID 0x1
struct velo_uapi_route {
	__u32 argsz;
	__u32 flags;    /* in: VELO_ROUTE_F_* */
	__u32 dst_node; /* in */
	__u32 route;    /* in: source route (ROUTE_TABLE.ROUTE, 14 bits), with VELO_ROUTE_F_VALID */
};

/* VELO_IOC_PORT_SET: NET_PORT[port].CFG (dimension, dateline; from the route library). */
struct velo_uapi_port {
	__u32 argsz;
	__u32 flags; /* in: 0 */
	__u32 port;  /* in: 1..nports */
	__u32 cfg;   /* in: NET_PORT.CFG */
};

/*
 * ---- RMA (docs/rma.md). Sequence: VELO_IOC_EP_OPEN -> VELO_IOC_RMA_SETUP (the data vpid's
 * notification queue) -> mmap VELO_MMAP_NQ and VELO_MMAP_RMA_CMD -> VELO_IOC_REGISTER per
 * buffer -> 32-byte commands into the command page, notifications from the queue (its read
 * pointer NQ_RP is at nq_rp_off in the data vpid's user page) -> VELO_IOC_DEREGISTER.
 * Every call fails with EOPNOTSUPP on a NIC without an RMA unit, EBADFD without an endpoint.
 */

/* VELO_IOC_RMA_SETUP: create (once per endpoint) the data vpid's notification queue. */
struct velo_uapi_rma_setup {
	__u32 argsz;
	__u32 flags;            /* in: 0 */
	__u32 log2_entries;     /* in: 2^n entries of 32 bytes, 0: VELO_NQ_LOG2_DEFAULT */
	__u32 rsvd;
	/* out */
	__u64 nq_bytes;         /* bytes to map at VELO_MMAP_NQ */
	__u32 out_log2_entries;
	__u32 nq_rp_off;        /* offset of NQ_RP inside the user page mapping */
	__u32 region_bits;      /* RMA CAPS: 2^n regions on the NIC */
	__u32 pte_bits;         /* 2^n page table entries (4 KiB pages) on the NIC */
	__u32 mtu;              /* data bytes per RMA packet */
	__u32 max_regions;      /* regions one endpoint may hold */
};
#define VELO_NQ_LOG2_DEFAULT 10
#define VELO_NQ_LOG2_MIN 7 /* at least one page (4096 / 32) */

/* Access a region permits (REGISTER flags; at least one). */
#define VELO_REG_LOCAL_READ 0x1   /* put source */
#define VELO_REG_LOCAL_WRITE 0x2  /* get destination */
#define VELO_REG_REMOTE_READ 0x4  /* get source for other nodes' vpids */
#define VELO_REG_REMOTE_WRITE 0x8 /* put target for other nodes' vpids */
#define VELO_REG_ACCESS_ALL 0xF

/*
 * VELO_IOC_REGISTER: declare [addr, addr + len) of the caller's memory as a region and pin it
 * (pin_user_pages FOLL_LONGTERM, FOLL_WRITE when it may be written: LOCAL_WRITE or
 * REMOTE_WRITE), accounted against RLIMIT_MEMLOCK (ENOMEM beyond it, without CAP_IPC_LOCK).
 * Returns the region's NLA (key, region, offset 0): byte i of the buffer is nla + i. An MMU
 * notifier withdraws the translation when the mapping changes (munmap, fork COW, migration);
 * the next command using it ends with ERROR NOT_VALID and VELO_IOC_REPIN makes it valid again.
 * Errors: EINVAL (flags, len 0 or above VELO_REG_LEN_MAX, addr + len wraps, unknown scope, an
 * empty box, nboxes 0 or above VELO_SCOPE_LIST_MAX, nonzero fields the kind does not take),
 * EACCES (a scope beyond what the policy lets the caller give), E2BIG (a LIST that needs more
 * than VELO_SCOPE_NIC_BOXES boxes after merging), ENOSPC (no free region, page table full, or
 * the endpoint's region limit), EFAULT (not mapped memory, or not writable for a write access),
 * ENOMEM (RLIMIT_MEMLOCK).
 */
#define VELO_REG_LEN_MAX ((1ull << 40) - 1)
/*
 * Who may reach a region remotely (REGISTER scope; docs/driver.md "Security model"): the NIC
 * of the region's node checks the initiator's node and vpid (both stamped by the initiating
 * NIC) against up to VELO_SCOPE_NIC_BOXES boxes [node_lo, node_hi] x [vpid_lo, vpid_hi]
 * (RG_SCOPE..RG_SCOPE3) on every remote put and get, admits it if it is inside any of them,
 * and answers a request from outside all of them like a wrong key (BAD_HANDLE).
 *   JOB (0, the default): the owner's partition under the grant policy: the owner's job (its
 *        data vpids on its nodes); without a job, the run of vpids no job owns around the
 *        owner's, on every node; under `open`, everybody.
 *   OWNER: only the owning endpoint itself (its node and data vpid).
 *   PEER:  one endpoint: node_lo, vpid_lo.
 *   BOX:   node_lo..node_hi x vpid_lo..vpid_hi as given.
 *   LIST:  boxes[0 .. nboxes - 1] (1..VELO_SCOPE_LIST_MAX), each as a BOX (a peer: lo = hi);
 *          the driver merges boxes that are contained in another or adjacent to it (same node
 *          range and touching vpid ranges, or the other way round), so a list of peers with
 *          consecutive vpids or nodes takes one box; more than VELO_SCOPE_NIC_BOXES left after
 *          merging: E2BIG. The single fields node_lo..vpid_hi must be 0.
 * JOB, OWNER, PEER and BOX take one box of the NIC (its other boxes are empty).
 * An unprivileged caller under `job` or `strict` may only ask for boxes inside its JOB box
 * (else EACCES); root (CAP_SYS_ADMIN) may ask for any box.
 * Out: scope = VELO_SCOPE_BOX (one box) or VELO_SCOPE_LIST (more), nboxes and boxes[] the boxes
 * the NIC checks (sorted by node_lo, node_hi, vpid_lo, vpid_hi; the rest zero), node_lo..vpid_hi
 * box 0.
 */
#define VELO_SCOPE_JOB 0
#define VELO_SCOPE_OWNER 1
#define VELO_SCOPE_PEER 2
#define VELO_SCOPE_BOX 3
#define VELO_SCOPE_LIST 4
#define VELO_SCOPE_LIST_MAX 16 /* boxes a LIST may name */
#define VELO_SCOPE_NIC_BOXES 4 /* boxes the NIC checks per region (spec RMA_SCOPE_BOXES) */
struct velo_uapi_scope_box {
	__u8 node_lo;
	__u8 node_hi;
	__u8 vpid_lo; /* data vpids */
	__u8 vpid_hi;
};
struct velo_uapi_register {
	__u32 argsz;
	__u32 flags;  /* in: VELO_REG_* access */
	__u64 addr;   /* in: user address of the buffer (any alignment) */
	__u64 len;    /* in: bytes */
	__u64 nla;    /* out: RMA_NLA of byte 0 (the handle; its KEY field is key bits 7:0) */
	__u32 region; /* out: region index (= RMA_NLA REGION) */
	__u32 key;    /* out: the region's 32-bit key (RG_KEY; never 0, never given to the index before) */
	__u32 scope;  /* in: VELO_SCOPE_*; out: VELO_SCOPE_BOX (the box below is what the NIC checks) */
	__u8 node_lo; /* in (PEER: the peer's node; BOX: the box) / out: RG_SCOPE NODE_LO */
	__u8 node_hi; /* in (BOX) / out: RG_SCOPE NODE_HI */
	__u8 vpid_lo; /* in (PEER: the peer's data vpid; BOX) / out: RG_SCOPE VPID_LO */
	__u8 vpid_hi; /* in (BOX) / out: RG_SCOPE VPID_HI */
	/* ABI 6 (72 bytes more; an ABI-5 REGISTER of 48 bytes is refused with EPROTO) */
	__u32 nboxes; /* in (LIST): boxes named; out: boxes the NIC checks (1..VELO_SCOPE_NIC_BOXES) */
	__u32 rsvd;   /* 0 */
	struct velo_uapi_scope_box boxes[VELO_SCOPE_LIST_MAX]; /* in (LIST) / out, see above */
};

/*
 * VELO_IOC_DEREGISTER: withdraw a region of this endpoint. The driver clears ALLOC, waits until
 * the NIC holds no translation of it (a transfer in flight finishes its current DMA or fails
 * with BAD_HANDLE; no DMA reaches the pages afterwards), unpins and forgets it. The region index
 * is reused with another key, so the old NLA fails (BAD_HANDLE). Errors: ENOENT (no region of
 * this endpoint with that NLA's region and key, or offset != 0), ETIMEDOUT (the NIC never
 * released the region: it stays pinned and out of use until the device goes).
 */
struct velo_uapi_deregister {
	__u32 argsz;
	__u32 flags; /* in: 0 */
	__u64 nla;   /* in: the handle REGISTER returned */
};

/*
 * VELO_IOC_REPIN: make a region's translation valid again after an invalidation (NOT_VALID);
 * nothing happens when it is valid. out_repinned: 1 if it was re-pinned now. Errors as
 * REGISTER's, and ENOENT as DEREGISTER's.
 */
struct velo_uapi_repin {
	__u32 argsz;
	__u32 flags;        /* in: 0 */
	__u64 nla;          /* in: the handle */
	__u32 out_repinned; /* out */
	__u32 rsvd;
};

/*
 * 0xB9: a type no ioctl of the kernel uses (Documentation/userspace-api/ioctl/ioctl-number.rst
 * of Linux 6.1 lists none, nor do its uapi headers).
 */
#define VELO_IOC_MAGIC 0xB9
#define VELO_IOC_NR_INFO 0
#define VELO_IOC_NR_EP_OPEN 1
#define VELO_IOC_NR_GRANT 2
#define VELO_IOC_NR_REVOKE 3
#define VELO_IOC_NR_WAIT 4
#define VELO_IOC_NR_JOB_SET 5
#define VELO_IOC_NR_JOB_DEL 6
#define VELO_IOC_NR_NODE_SET 7
#define VELO_IOC_NR_ROUTE_SET 8
#define VELO_IOC_NR_PORT_SET 9
#define VELO_IOC_NR_RMA_SETUP 10
#define VELO_IOC_NR_REGISTER 11
#define VELO_IOC_NR_DEREGISTER 12
#define VELO_IOC_NR_REPIN 13
#define VELO_IOC_NR_COUNT 14

#define VELO_IOC_INFO _IOWR(VELO_IOC_MAGIC, VELO_IOC_NR_INFO, struct velo_uapi_info)
#define VELO_IOC_EP_OPEN _IOWR(VELO_IOC_MAGIC, VELO_IOC_NR_EP_OPEN, struct velo_uapi_ep_open)
#define VELO_IOC_GRANT _IOWR(VELO_IOC_MAGIC, VELO_IOC_NR_GRANT, struct velo_uapi_grant)
#define VELO_IOC_REVOKE _IOW(VELO_IOC_MAGIC, VELO_IOC_NR_REVOKE, struct velo_uapi_revoke)
#define VELO_IOC_WAIT _IOWR(VELO_IOC_MAGIC, VELO_IOC_NR_WAIT, struct velo_uapi_wait)
#define VELO_IOC_JOB_SET _IOW(VELO_IOC_MAGIC, VELO_IOC_NR_JOB_SET, struct velo_uapi_job)
#define VELO_IOC_JOB_DEL _IOW(VELO_IOC_MAGIC, VELO_IOC_NR_JOB_DEL, struct velo_uapi_job_del)
#define VELO_IOC_NODE_SET _IOW(VELO_IOC_MAGIC, VELO_IOC_NR_NODE_SET, struct velo_uapi_node)
#define VELO_IOC_ROUTE_SET _IOW(VELO_IOC_MAGIC, VELO_IOC_NR_ROUTE_SET, struct velo_uapi_route)
#define VELO_IOC_PORT_SET _IOW(VELO_IOC_MAGIC, VELO_IOC_NR_PORT_SET, struct velo_uapi_port)
#define VELO_IOC_RMA_SETUP _IOWR(VELO_IOC_MAGIC, VELO_IOC_NR_RMA_SETUP, struct velo_uapi_rma_setup)
#define VELO_IOC_REGISTER _IOWR(VELO_IOC_MAGIC, VELO_IOC_NR_REGISTER, struct velo_uapi_register)
#define VELO_IOC_DEREGISTER _IOW(VELO_IOC_MAGIC, VELO_IOC_NR_DEREGISTER, struct velo_uapi_deregister)
#define VELO_IOC_REPIN _IOWR(VELO_IOC_MAGIC, VELO_IOC_NR_REPIN, struct velo_uapi_repin)

/*
 * The numbers of ABI versions 2 and 3: _IO('V', 0xB0 + nr), no size, no direction. The driver
 * refuses every one of them with EPROTO; a library uses VELO_IOC_INFO_V3 to tell an older driver
 * (which answers it) from a device that is no VELO NIC.
 */
#define VELO_IOC_V3_MAGIC 'V'
#define VELO_IOC_V3_BASE 0xB0
#define VELO_IOC_INFO_V3 _IO(VELO_IOC_V3_MAGIC, VELO_IOC_V3_BASE + VELO_IOC_NR_INFO)

#endif /* VELO_UAPI_H */
