/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * What the files of the portable driver core share (velo_core.h is what its users see):
 *
 *   velo_core_probe.c  the block chain walk, one parser per block type, bring-up, removal, logging
 *   velo_core_ep.c     endpoints (vpid pairs, their rings, the VPID_TABLE sequence, the quiesce
 *                      barrier), their grants, the clients (open files)
 *   velo_core_job.c    the access policy: jobs, limits, which vpid and destination an endpoint may
 *                      have
 *   velo_core_ioctl.c  the ioctl level: argument sizes, one handler per ioctl, ring readiness,
 *                      the mmap check
 *   velo_core_net.c    routes, ports, counters, link and device status
 *   velo_core_irq.c    the IRQ block: arm, collect
 *   velo_core_rma.c    RMA: notification queues, regions, the page table, the RMA ioctls
 *
 * Freestanding C17 as velo_core.h.
 */
#ifndef VELO_CORE_PRIV_H
#define VELO_CORE_PRIV_H

#include "velo_core.h"

#include "velo/velo_hw.h"
#include "velo/velo_uapi.h"

#ifdef __KERNEL__
#include <linux/compiler.h>
#include <linux/kernel.h>
/* a load the compiler may neither drop nor repeat (memory the NIC writes by DMA) */
#define core_read_once(x) READ_ONCE(x)
#else
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define core_read_once(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#endif

#define CORE_MAX_VPIDS 256u
#define CORE_QUIESCE_POLLS 100000u
#define CORE_DEFAULT_GRANTS 1024u

struct velo_core {
	const struct velo_core_ops *ops;
	void *ctx;
	struct velo_core_caps caps;
	unsigned int next_vpid; /* round-robin allocation cursor */
	struct velo_core_ep *ep[CORE_MAX_VPIDS]; /* by data vpid */
	unsigned int nep;
	unsigned int policy; /* VELO_POLICY_* */
	int wedged; /* velo_core_wedged */
	unsigned int max_log2, max_grants; /* limits of VELO_IOC_EP_OPEN */
	struct velo_core_job jobs[VELO_CORE_MAX_JOBS];
	/*
	 * RMA (caps.rma_base != 0): one allocation holding the region table, the page table's
	 * master copy, its owner map and the compaction scratch. The region lock's domain
	 * (velo_core.h, "Locking").
	 */
	void *rma_mem;
	struct velo_core_region *rg; /* [nrg] */
	uint64_t *pte; /* [npte] frame numbers as written to the NIC */
	uint64_t *tmp; /* [npte] compaction scratch */
	uint16_t *pte_rg; /* [npte] region + 1 using the entry, 0: free */
	unsigned int nrg, npte, next_rg, pte_nfree, max_regions;
	void (*rma_unpin)(void *ctx, void *pin);
	int (*present)(void *ctx); /* velo_core_set_present */
};

/* ---- register access and logging (velo_core_probe.c) */
static inline uint32_t rd(const struct velo_core *c, uint32_t off)
{
	return c->ops->reg_read32(c->ctx, off);
}

static inline void wr(const struct velo_core *c, uint32_t off, uint32_t v)
{
	c->ops->reg_write32(c->ctx, off, v);
}

/* register reg (its offset in the spec's map) of the CTRL, IRQ, RMA block where the NIC has it */
static inline uint32_t reg_ctrl(const struct velo_core *c, uint32_t reg)
{
	return reg - VELO_BLK_CTRL_BASE + c->caps.ctrl_base;
}

static inline uint32_t reg_irq(const struct velo_core *c, uint32_t reg)
{
	return reg - VELO_BLK_IRQ_BASE + c->caps.irq_base;
}

static inline uint32_t reg_rma(const struct velo_core *c, uint32_t reg)
{
	return reg - VELO_BLK_RMA_BASE + c->caps.rma_base;
}

/*
 * A call on an optional unit (base: irq_base, rma_base, its block's offset in caps): -EINVAL
 * without a core, `absent` when the NIC has no such block, else 0.
 */
#define core_unit(c, base, absent) (!(c) ? -VELO_CORE_EINVAL : !(c)->caps.base ? (absent) : 0)

/* VPID_TABLE entry of vpid, its user page, its RMA notification queue entry */
static inline uint32_t tbl(const struct velo_core *c, unsigned int vpid, uint32_t reg)
{
	return c->caps.table_off + vpid * c->caps.table_stride + reg;
}

static inline uint32_t user_page(const struct velo_core *c, unsigned int vpid)
{
	return c->caps.user_off + vpid * c->caps.user_stride;
}

static inline uint32_t nq_reg(const struct velo_core *c, unsigned int vpid, uint32_t reg)
{
	return c->caps.rma_nq_off + vpid * VELO_TBL_RMA_NQ_TABLE_STRIDE + reg;
}

/* "a" followed by v in hex, without printf, through ops->log (before the core exists too) */
void velo_core_log_ops(const struct velo_core_ops *ops, void *ctx, int level, const char *a,
		       unsigned long long v);
void velo_core_log(const struct velo_core *c, int level, const char *a, unsigned long long v);
/*
 * Write a unit's enable register (bit: its one-bit ENABLE field, set when on) and read it back:
 * 0, or -EIO logged as `what` and the value read.
 */
int velo_core_write_enable(struct velo_core *c, uint32_t off, uint32_t bit, int on,
			   const char *what);

/* ---- endpoints (velo_core_ep.c) */
/* Disable a vpid and wait until the NIC holds nothing for it. 0 or -ETIMEDOUT. */
int velo_core_quiesce(struct velo_core *c, unsigned int vpid);
/* Wait until the NIC holds nothing for vpid (mailbox and notification queue writes). */
int velo_core_quiesce_poll(struct velo_core *c, unsigned int vpid);
/*
 * Poll the quiesce status register at `off` until its BUSY bit (`busy`) is clear: 0; -ENODEV
 * when it reads all ones and the device is not present (velo_core_set_present); -ETIMEDOUT after
 * CORE_QUIESCE_POLLS reads (VELO_CORE_QUIESCE_POLLS_WEDGED while the core is wedged). A failure
 * wedges the core, a success unwedges it.
 */
int velo_core_poll_quiet(struct velo_core *c, uint32_t off, uint32_t busy);

/* ---- access policy (velo_core_job.c) */
/* may an endpoint of `job` hold data vpid v */
int velo_core_vpid_allowed(const struct velo_core *c, int privileged, int job, unsigned int v);
/* the job an endpoint opens in (-1: none), or -EACCES */
int velo_core_open_policy(const struct velo_core *c, const struct velo_core_ep_params *p,
			  int *job);

/* ---- RMA (velo_core_rma.c) */
/* the region table and page table of a new core: 0 or -ENOMEM */
int velo_core_rma_setup(struct velo_core *c);
/* every region of endpoint vpid (closing); STUCK ones get one more chance to quiesce */
void velo_core_rma_release_ep(struct velo_core *c, unsigned int vpid, uint64_t owner);
/* the RMA ioctls (velo_core_ioctl dispatches, the argument's size already checked) */
int velo_core_ioc_rma_setup(struct velo_core *c, struct velo_core_client *cl, void *arg);
int velo_core_ioc_register(struct velo_core *c, struct velo_core_client *cl, void *arg);
int velo_core_ioc_deregister(struct velo_core *c, struct velo_core_client *cl, void *arg);
int velo_core_ioc_repin(struct velo_core *c, struct velo_core_client *cl, void *arg);

#endif /* VELO_CORE_PRIV_H */
