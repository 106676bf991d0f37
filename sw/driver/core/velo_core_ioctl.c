// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The portable VELO driver core (velo_core.h): the ioctl level. One handler per ioctl (the RMA
 * ones in velo_core_rma.c), the table of ioctls (the size of each one's structure, its handler)
 * and the dispatch, the rings' readiness for WAIT and poll(), and the mmap check.
 */
#include "velo_core_priv.h"

/* ---- ring state (sleep/wake) */
/*
 * Is there an entry at read pointer rp: the line's PHASE is that of rp's pass (docs/spec.md).
 */
static int ring_entry_at(const void *ring, unsigned int log2, uint32_t rp)
{
	const size_t line = (size_t)(rp & ((1u << log2) - 1u)) << 6;
	const uint64_t h = core_read_once(*(const uint64_t *)((const uint8_t *)ring + line));

	return VELO_FIELD_GET(VELO_MBOX_HDR_PHASE, h) == (((rp >> log2) & 1u) ^ 1u);
}

/* VELO_WAIT_* mask of the client's rings (of `rings`) holding an entry at rp / ctl_rp */
static int ring_ready(const struct velo_core *c, const struct velo_core_client *cl,
		      unsigned int rings, uint32_t rp, uint32_t ctl_rp)
{
	int err;
	const struct velo_core_ep *e = velo_core_client_ep(c, cl, &err);

	if (!e)
		return err;
	if (!rings || (rings & ~(unsigned int)(VELO_WAIT_DATA | VELO_WAIT_CTL)))
		return -VELO_CORE_EINVAL;
	int m = 0;

	if ((rings & VELO_WAIT_DATA) && ring_entry_at(e->ring, e->log2_lines, rp))
		m |= VELO_WAIT_DATA;
	if ((rings & VELO_WAIT_CTL) && ring_entry_at(e->ctl_ring, e->ctl_log2_lines, ctl_rp))
		m |= VELO_WAIT_CTL;
	return m;
}

/* ---- the ioctls (arg: the structure of the ioctl, its size already checked) */
static int ioc_info(struct velo_core *c, struct velo_core_client *cl, void *arg)
{
	struct velo_uapi_info *a = arg;
	const struct velo_core_caps *k = &c->caps;

	(void)cl; /* any client */
	if (a->flags)
		return -VELO_CORE_EINVAL;
	const uint32_t status = velo_core_status(c);
	const uint32_t links = velo_core_link_status(c);

	*a = (struct velo_uapi_info){
		.argsz = a->argsz,
		.uapi_version = VELO_UAPI_VERSION,
		.spec_hash = k->spec_hash,
		.design_version = k->design_version,
		.node_id = k->node_id,
		.node_bits = k->node_bits,
		.vpid_bits = k->vpid_bits,
		.msg_max = k->msg_max,
		.num_vpids = k->num_vpids,
		.link_up = (uint32_t)VELO_FIELD_GET(VELO_REG_CTRL_STATUS_LINK_UP, status),
		.clock_khz = 0,
		.policy = c->policy,
		.out_flags = 0,
		.nports = k->nports,
		.link_status = links,
	};
	return 0;
}

static int ioc_ep_open(struct velo_core *c, struct velo_core_client *cl, void *arg)
{
	struct velo_uapi_ep_open *a = arg;

	if (a->flags || a->rsvd0 || a->vpid < -1)
		return -VELO_CORE_EINVAL;
	if (cl->vpid >= 0)
		return -VELO_CORE_EBUSY; /* one endpoint per file, even after a reclaim */
	const unsigned int log2 = a->log2_lines ? a->log2_lines : VELO_RING_LOG2_DEFAULT;
	const unsigned int ctl = a->ctl_log2_lines ? a->ctl_log2_lines : VELO_CTL_RING_LOG2_DEFAULT;

	if (log2 < VELO_RING_LOG2_MIN || log2 > c->max_log2 || ctl < VELO_RING_LOG2_MIN ||
	    ctl > c->max_log2)
		return -VELO_CORE_EINVAL;
	const struct velo_core_ep_params p = {
		.vpid = a->vpid,
		.log2_lines = log2,
		.ctl_log2_lines = ctl,
		.max_grants = c->max_grants,
		.owner = cl->owner,
		.job_key = a->job_key,
		.pid = cl->pid,
		.uid = cl->uid,
		.privileged = cl->privileged,
	};
	const struct velo_core_ep *e = NULL;
	const int r = velo_core_ep_open(c, &p, &e);

	if (r)
		return r;
	cl->vpid = (int)e->vpid;
	a->out_vpid = e->vpid;
	a->out_ctl_vpid = e->ctl_vpid;
	a->out_log2_lines = e->log2_lines;
	a->out_ctl_log2_lines = e->ctl_log2_lines;
	a->ring_bytes = e->ring_bytes;
	a->ctl_ring_bytes = e->ctl_ring_bytes;
	a->user_page_off = VELO_TBL_VPID_USER_MB_RP;
	a->max_grants = e->max_grants;
	return 0;
}

static int ioc_grant(struct velo_core *c, struct velo_core_client *cl, void *arg)
{
	struct velo_uapi_grant *a = arg;

	if (a->flags)
		return -VELO_CORE_EINVAL;
	int err;
	const struct velo_core_ep *e = velo_core_client_ep(c, cl, &err);

	if (!e)
		return err;
	uint64_t off = 0;
	const int g = velo_core_grant(c, e->vpid, a->from, a->dst_node, a->dst_vpid, &off);

	if (g < 0)
		return g;
	a->grant_id = (uint32_t)g;
	a->window_off = off;
	return 0;
}

static int ioc_revoke(struct velo_core *c, struct velo_core_client *cl, void *arg)
{
	const struct velo_uapi_revoke *a = arg;

	if (a->flags || a->rsvd)
		return -VELO_CORE_EINVAL;
	int err;
	const struct velo_core_ep *e = velo_core_client_ep(c, cl, &err);

	if (!e)
		return err;
	return velo_core_revoke(c, e->vpid, a->grant_id);
}

static int ioc_wait(struct velo_core *c, struct velo_core_client *cl, void *arg)
{
	struct velo_uapi_wait *a = arg;
	const uint32_t rings = VELO_WAIT_DATA | VELO_WAIT_CTL;

	if (!a->flags || (a->flags & ~rings) || a->rsvd)
		return -VELO_CORE_EINVAL;
	const int m = ring_ready(c, cl, a->flags, a->rp, a->ctl_rp);

	if (m < 0)
		return m;
	a->out_ready = (uint32_t)m;
	return 0;
}

/* an ioctl of the administrator: -EPERM for other clients, then -EINVAL when bad */
static int ioc_admin(const struct velo_core_client *cl, int bad)
{
	if (!cl->privileged)
		return -VELO_CORE_EPERM;
	return bad ? -VELO_CORE_EINVAL : 0;
}

static int ioc_job_set(struct velo_core *c, struct velo_core_client *cl, void *arg)
{
	const struct velo_uapi_job *a = arg;
	const int r = ioc_admin(cl, (a->flags & ~(uint32_t)VELO_JOB_F_UID) || a->rsvd);

	if (r)
		return r;
	if ((a->flags & VELO_JOB_F_UID) ? a->uid == VELO_CORE_UID_ANY : a->uid != 0)
		return -VELO_CORE_EINVAL;
	struct velo_core_job j = { 0 };

	j.key = a->job_key;
	j.uid = (a->flags & VELO_JOB_F_UID) ? a->uid : VELO_CORE_UID_ANY;
	j.vpid_lo = a->vpid_lo;
	j.vpid_hi = a->vpid_hi;
	j.node_lo = a->node_lo;
	j.node_hi = a->node_hi;
	return velo_core_job_set(c, &j);
}

static int ioc_job_del(struct velo_core *c, struct velo_core_client *cl, void *arg)
{
	const struct velo_uapi_job_del *a = arg;
	const int r = ioc_admin(cl, a->flags != 0);

	return r ? r : velo_core_job_del(c, a->job_key);
}

static int ioc_node_set(struct velo_core *c, struct velo_core_client *cl, void *arg)
{
	const struct velo_uapi_node *a = arg;
	const int r = ioc_admin(cl, a->flags || a->rsvd || a->node_id >= (1u << c->caps.node_bits));

	if (r)
		return r;
	if (c->nep)
		return -VELO_CORE_EBUSY; /* endpoints were told the old id */
	return velo_core_enable(c, a->node_id);
}

static int ioc_route_set(struct velo_core *c, struct velo_core_client *cl, void *arg)
{
	const struct velo_uapi_route *a = arg;
	const int r = ioc_admin(cl, (a->flags & ~(uint32_t)VELO_ROUTE_F_VALID) ||
					    (!(a->flags & VELO_ROUTE_F_VALID) && a->route));

	if (r)
		return r;
	return velo_core_route_set(c, a->dst_node, (a->flags & VELO_ROUTE_F_VALID) != 0, a->route);
}

static int ioc_port_set(struct velo_core *c, struct velo_core_client *cl, void *arg)
{
	const struct velo_uapi_port *a = arg;
	const int r = ioc_admin(cl, a->flags != 0);

	return r ? r : velo_core_port_set(c, a->port, a->cfg);
}

/* ---- the table of ioctls and the dispatch */
struct ioc_desc {
	uint32_t size; /* of its structure; 0: no such ioctl */
	int (*fn)(struct velo_core *c, struct velo_core_client *cl, void *arg);
	int flags; /* VELO_CORE_UAPI_*: as the direction of its number in velo_uapi.h says */
};

#define OUT VELO_CORE_UAPI_OUT
#define ADMIN VELO_CORE_UAPI_ADMIN
static const struct ioc_desc ioc_table[VELO_IOC_NR_COUNT] = {
	[VELO_IOC_NR_INFO] = { sizeof(struct velo_uapi_info), ioc_info, OUT },
	[VELO_IOC_NR_EP_OPEN] = { sizeof(struct velo_uapi_ep_open), ioc_ep_open, OUT },
	[VELO_IOC_NR_GRANT] = { sizeof(struct velo_uapi_grant), ioc_grant, OUT },
	[VELO_IOC_NR_REVOKE] = { sizeof(struct velo_uapi_revoke), ioc_revoke, 0 },
	[VELO_IOC_NR_WAIT] = { sizeof(struct velo_uapi_wait), ioc_wait, OUT },
	[VELO_IOC_NR_JOB_SET] = { sizeof(struct velo_uapi_job), ioc_job_set, ADMIN },
	[VELO_IOC_NR_JOB_DEL] = { sizeof(struct velo_uapi_job_del), ioc_job_del, ADMIN },
	[VELO_IOC_NR_NODE_SET] = { sizeof(struct velo_uapi_node), ioc_node_set, ADMIN },
	[VELO_IOC_NR_ROUTE_SET] = { sizeof(struct velo_uapi_route), ioc_route_set, ADMIN },
	[VELO_IOC_NR_PORT_SET] = { sizeof(struct velo_uapi_port), ioc_port_set, ADMIN },
	[VELO_IOC_NR_RMA_SETUP] = { sizeof(struct velo_uapi_rma_setup), velo_core_ioc_rma_setup,
				    OUT },
	[VELO_IOC_NR_REGISTER] = { sizeof(struct velo_uapi_register), velo_core_ioc_register, OUT },
	[VELO_IOC_NR_DEREGISTER] = { sizeof(struct velo_uapi_deregister), velo_core_ioc_deregister,
				     0 },
	[VELO_IOC_NR_REPIN] = { sizeof(struct velo_uapi_repin), velo_core_ioc_repin, OUT },
};
#undef OUT
#undef ADMIN

int velo_core_uapi_flags(unsigned int nr)
{
	if (nr >= VELO_IOC_NR_COUNT || !ioc_table[nr].size)
		return -VELO_CORE_ENOTTY;
	return ioc_table[nr].flags;
}

int velo_core_uapi_size(unsigned int nr, uint32_t *minsz, uint32_t *ksz)
{
	const uint32_t n = nr < VELO_IOC_NR_COUNT ? ioc_table[nr].size : 0;

	if (!n)
		return -VELO_CORE_ENOTTY;
	/*
	 * the smallest accepted is the whole structure (REGISTER grew in ABI 5 by its scope: an
	 * ABI-4 caller's smaller one is refused)
	 */
	if (minsz)
		*minsz = n;
	if (ksz)
		*ksz = n;
	return 0;
}

int velo_core_ioctl(struct velo_core *c, struct velo_core_client *cl, unsigned int nr, void *arg)
{
	uint32_t minsz = 0;

	if (!c || !cl || !arg)
		return -VELO_CORE_EINVAL;
	const int r = velo_core_uapi_size(nr, &minsz, NULL);

	if (r)
		return r;
	/* every structure starts with __u32 argsz */
	if (*(const uint32_t *)arg < minsz)
		return -VELO_CORE_EINVAL;
	/* privilege is the caller's: a privileged endpoint used without privilege loses it */
	if (!cl->privileged && cl->vpid >= 0 && (unsigned int)cl->vpid < CORE_MAX_VPIDS &&
	    c->ep[cl->vpid] && c->ep[cl->vpid]->owner == cl->owner)
		c->ep[cl->vpid]->privileged = 0;
	return ioc_table[nr].fn(c, cl, arg);
}

int velo_core_ring_ready_nic(const struct velo_core *c, const struct velo_core_client *cl)
{
	int err;
	const struct velo_core_ep *e = velo_core_client_ep(c, cl, &err);

	if (!e)
		return err;
	const uint32_t rp = rd(c, e->user_page_off + VELO_TBL_VPID_USER_MB_RP);
	const uint32_t ctl_rp = rd(c, e->ctl_user_page_off + VELO_TBL_VPID_USER_MB_RP);

	return ring_ready(c, cl, VELO_WAIT_DATA | VELO_WAIT_CTL, rp, ctl_rp);
}

/* ---- mmap */
int velo_core_mmap_check(const struct velo_core *c, const struct velo_core_client *cl, uint64_t off,
			 uint64_t len, unsigned int acc, struct velo_core_map *m)
{
	const unsigned int all = VELO_CORE_MAP_READ | VELO_CORE_MAP_WRITE | VELO_CORE_MAP_EXEC |
				 VELO_CORE_MAP_SHARED;
	if (!c || !cl || !m)
		return -VELO_CORE_EINVAL;
	int err;
	const struct velo_core_ep *e = velo_core_client_ep(c, cl, &err);

	if (!e)
		return err;
	if ((off & 4095u) || !len || (len & 4095u) || (acc & ~all) || !(acc & VELO_CORE_MAP_SHARED))
		return -VELO_CORE_EINVAL;
	if (acc & VELO_CORE_MAP_EXEC)
		return -VELO_CORE_EACCES;
	*m = (struct velo_core_map){ 0 };
	if (off == VELO_MMAP_RING || off == VELO_MMAP_CTL_RING) {
		const int ctl = off == VELO_MMAP_CTL_RING;

		if (len != (ctl ? e->ctl_ring_bytes : e->ring_bytes))
			return -VELO_CORE_EINVAL;
		if (acc & VELO_CORE_MAP_WRITE)
			return -VELO_CORE_EACCES; /* the NIC's, read-only */
		m->kind = ctl ? VELO_CORE_MAP_CTL_RING : VELO_CORE_MAP_RING;
		m->cpu = ctl ? e->ctl_ring : e->ring;
		m->dma = ctl ? e->ctl_ring_dma : e->ring_dma;
		m->cookie = ctl ? e->ctl_ring_cookie : e->ring_cookie;
		m->bytes = ctl ? e->ctl_ring_bytes : e->ring_bytes;
		return 0;
	}
	if (off == VELO_MMAP_USER_PAGE || off == VELO_MMAP_CTL_USER_PAGE) {
		const int ctl = off == VELO_MMAP_CTL_USER_PAGE;

		if (len != 4096)
			return -VELO_CORE_EINVAL;
		m->kind = ctl ? VELO_CORE_MAP_CTL_USER : VELO_CORE_MAP_USER;
		m->bar = VELO_BAR_REGS;
		m->bar_off = ctl ? e->ctl_user_page_off : e->user_page_off;
		return 0;
	}
	if (off == VELO_MMAP_NQ) {
		if (!e->nq || len != e->nq_bytes)
			return -VELO_CORE_EINVAL;
		if (acc & VELO_CORE_MAP_WRITE)
			return -VELO_CORE_EACCES; /* the NIC's, read-only */
		m->kind = VELO_CORE_MAP_NQ;
		m->cpu = e->nq;
		m->dma = e->nq_dma;
		m->cookie = e->nq_cookie;
		m->bytes = e->nq_bytes;
		return 0;
	}
	if (off == VELO_MMAP_RMA_CMD) {
		if (!c->caps.rma_base || !e->nq || len != 4096)
			return -VELO_CORE_EINVAL;
		if (acc & VELO_CORE_MAP_READ)
			return -VELO_CORE_EACCES; /* BAR4 reads are UR */
		/* the policy's rule for RMA, as for sends (the caller's privilege at the call) */
		if (velo_core_rma_allowed(c, e, cl->privileged))
			return -VELO_CORE_EACCES;
		m->kind = VELO_CORE_MAP_RMA_CMD;
		m->bar = VELO_BAR_RMA;
		m->bar_off = (uint64_t)e->vpid
			     << VELO_RMA_ADDR_SRC_VPID_SHIFT(c->caps.vpid_bits, c->caps.node_bits);
		return 0;
	}
	if (off >= VELO_MMAP_WINDOW && off < VELO_MMAP_NQ) {
		const uint64_t g = (off - VELO_MMAP_WINDOW) >> 12;

		if (g >= e->max_grants || len != 4096)
			return -VELO_CORE_EINVAL;
		const struct velo_core_grant_ent *ge =
			velo_core_grant_get(c, e->vpid, (unsigned int)g);
		if (!ge)
			return -VELO_CORE_EINVAL; /* nothing granted under that id */
		if (acc & VELO_CORE_MAP_READ)
			return -VELO_CORE_EACCES; /* window reads are UR */
		m->kind = VELO_CORE_MAP_WINDOW;
		m->bar = VELO_BAR_SEND;
		m->bar_off = ge->window_off;
		return 0;
	}
	return -VELO_CORE_EINVAL;
}
