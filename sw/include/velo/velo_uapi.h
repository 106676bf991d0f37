/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * VELO driver ABI: what user space (libvelo's hw backend) and the Linux driver (sw/driver/linux)
 * agree on. One open file of /dev/veloN is one endpoint: a pair of vpids (the data vpid whose
 * mailbox receives messages, and its control vpid, see VELO_CTL_VPID) with their mailbox rings.
 *
 * Sequence: open("/dev/velo0") -> VELO_IOC_INFO -> VELO_IOC_EP_OPEN -> mmap the rings and user
 * pages at the offsets it returns -> VELO_IOC_GRANT per destination -> mmap the window page at the
 * offset it returns (write-combined) -> send/poll without the kernel -> close() (the driver
 * disables both vpids, waits for QUIESCE_STATUS.BUSY = 0, and only then frees the rings).
 *
 * All structures have fixed-size fields and explicit padding (same layout on 32- and 64-bit user
 * space). Every ioctl returns 0 or -1 with errno.
 */
#ifndef VELO_UAPI_H
#define VELO_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define VELO_UAPI_VERSION 1

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

/* ---- mmap offsets (page aligned, in the file's offset space) */
#define VELO_MMAP_RING 0x0000000000ull        /* data ring, read-only, cached: 64 << log2 bytes */
#define VELO_MMAP_CTL_RING 0x1000000000ull    /* control ring, read-only, cached */
#define VELO_MMAP_USER_PAGE 0x2000000000ull   /* data vpid's BAR0 user page (MB_RP), uncached */
#define VELO_MMAP_CTL_USER_PAGE 0x2000001000ull /* control vpid's BAR0 user page, uncached */
#define VELO_MMAP_WINDOW 0x3000000000ull      /* + grant id * 4096: a send-window page, write-combined */

/* VELO_IOC_INFO: the device. */
struct velo_uapi_info {
	__u32 uapi_version;  /* VELO_UAPI_VERSION of the driver */
	__u32 spec_hash;     /* ID.SPEC_HASH of the NIC (the driver refused a mismatch already) */
	__u32 design_version;
	__u32 node_id;       /* this node's id (CTRL.NODE_ID) */
	__u32 node_bits;     /* CAPS */
	__u32 vpid_bits;
	__u32 msg_max;       /* largest message payload in bytes (64) */
	__u32 num_vpids;
	__u32 link_up;       /* STATUS.LINK_UP */
	__u32 clock_khz;     /* NIC core clock, 0 if unknown */
	__u32 rsvd[6];
};

/* VELO_IOC_EP_OPEN: allocate the endpoint of this file (once per file). */
struct velo_uapi_ep_open {
	/* in */
	__s32 vpid;          /* requested data vpid, or -1 for any free one */
	__u32 log2_lines;    /* data ring size, 0: VELO_RING_LOG2_DEFAULT */
	__u32 ctl_log2_lines; /* control ring size, 0: VELO_CTL_RING_LOG2_DEFAULT */
	__u32 flags;         /* 0 */
	/* out */
	__u32 out_vpid;      /* data vpid */
	__u32 out_ctl_vpid;  /* control vpid = VELO_CTL_VPID(out_vpid) */
	__u32 out_log2_lines;
	__u32 out_ctl_log2_lines;
	__u64 ring_bytes;     /* bytes to map at VELO_MMAP_RING */
	__u64 ctl_ring_bytes; /* bytes to map at VELO_MMAP_CTL_RING */
	__u32 user_page_off;  /* offset of MB_RP inside the user page mapping */
	__u32 rsvd[5];
};

/* Which of the endpoint's vpids a granted page sends from. */
#define VELO_GRANT_FROM_DATA 0 /* user messages: to data vpids only */
#define VELO_GRANT_FROM_CTL 1  /* library control messages: to data or control vpids */

/* VELO_IOC_GRANT: allow sending from (own vpid of kind `from`) to (dst_node, dst_vpid). */
struct velo_uapi_grant {
	/* in */
	__u32 from;       /* VELO_GRANT_FROM_* */
	__u32 dst_node;
	__u32 dst_vpid;
	__u32 flags;      /* 0 */
	/* out */
	__u32 grant_id;   /* map VELO_MMAP_WINDOW + grant_id * 4096 (one page, write-combined) */
	__u32 rsvd;
	__u64 window_off; /* BAR2 offset of the page (informational) */
};

/* VELO_IOC_REVOKE: drop a grant (the driver zaps its mapping). */
struct velo_uapi_revoke {
	__u32 grant_id;
	__u32 rsvd;
};

/* VELO_IOC_WAIT: sleep until the line at read pointer `rp` of a ring holds the phase that
 * marks a new entry, or timeout_ns passes (then -1/ETIMEDOUT), or a signal (-1/EINTR). */
#define VELO_WAIT_DATA 0
#define VELO_WAIT_CTL 1
struct velo_uapi_wait {
	__u32 ring;       /* VELO_WAIT_DATA or VELO_WAIT_CTL */
	__u32 rp;         /* free-running read pointer in lines */
	__u64 timeout_ns; /* 0: return at once */
};

#define VELO_IOC_MAGIC 'V'
#define VELO_IOC_INFO _IOR(VELO_IOC_MAGIC, 0x00, struct velo_uapi_info)
#define VELO_IOC_EP_OPEN _IOWR(VELO_IOC_MAGIC, 0x01, struct velo_uapi_ep_open)
#define VELO_IOC_GRANT _IOWR(VELO_IOC_MAGIC, 0x02, struct velo_uapi_grant)
#define VELO_IOC_REVOKE _IOW(VELO_IOC_MAGIC, 0x03, struct velo_uapi_revoke)
#define VELO_IOC_WAIT _IOW(VELO_IOC_MAGIC, 0x04, struct velo_uapi_wait)

#endif /* VELO_UAPI_H */
