// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The portable VELO driver core (velo_core.h): endpoints. A vpid pair per endpoint, its two rings
 * and the VPID_TABLE sequence that hands them to the NIC, the quiesce barrier before ring memory
 * is freed, the endpoint's grants (which send-window pages it may map) and the clients (open
 * files) that own endpoints.
 */
#include "velo_core_priv.h"

/* ---- mailbox programming */
static int program_mailbox(struct velo_core *c, unsigned int vpid, uint64_t dma, unsigned int log2)
{
	wr(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_CFG), 0);
	wr(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_BASE_LO), (uint32_t)dma);
	wr(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_BASE_HI), (uint32_t)(dma >> 32));
	wr(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_WP), 0);
	wr(c, user_page(c, vpid) + VELO_TBL_VPID_USER_MB_RP, 0);
	const uint32_t cfg =
		(uint32_t)(VELO_FIELD_PREP(VELO_TBL_VPID_TABLE_MB_CFG_ENABLE, 1) |
			   VELO_FIELD_PREP(VELO_TBL_VPID_TABLE_MB_CFG_LOG2_LINES, log2));
	wr(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_CFG), cfg);
	/* read back: flushes the posted writes and checks them */
	uint32_t back = rd(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_CFG));
	uint32_t lo = rd(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_BASE_LO));

	if (back != cfg || lo != ((uint32_t)dma & ~63u)) {
		velo_core_log(c, VELO_CORE_LOG_ERR, "velo: MB_CFG read back wrong: ", back);
		wr(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_CFG), 0);
		return -VELO_CORE_EIO;
	}
	return 0;
}

int velo_core_quiesce(struct velo_core *c, unsigned int vpid)
{
	wr(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_CFG), 0);
	return velo_core_quiesce_poll(c, vpid);
}

int velo_core_poll_quiet(struct velo_core *c, uint32_t off, uint32_t busy)
{
	const unsigned int polls = c->wedged ? VELO_CORE_QUIESCE_POLLS_WEDGED : CORE_QUIESCE_POLLS;

	for (unsigned int i = 0; i < polls; ++i) {
		const uint32_t s = rd(c, off);

		if (s == 0xFFFFFFFFu && (!c->present || !c->present(c->ctx))) {
			/* surprise removal, link down: nothing to wait for, and nobody to ask */
			c->wedged = 1;
			return -VELO_CORE_ENODEV;
		}
		if (s != 0xFFFFFFFFu && !(s & busy)) {
			c->wedged = 0;
			return 0;
		}
		if (c->ops->relax)
			c->ops->relax(c->ctx);
	}
	c->wedged = 1;
	return -VELO_CORE_ETIMEDOUT;
}

int velo_core_quiesce_poll(struct velo_core *c, unsigned int vpid)
{
	wr(c, reg_ctrl(c, VELO_REG_CTRL_QUIESCE_VPID), vpid);
	const int r =
		velo_core_poll_quiet(c, reg_ctrl(c, VELO_REG_CTRL_QUIESCE_STATUS),
				     (uint32_t)VELO_FIELD_MASK(VELO_REG_CTRL_QUIESCE_STATUS_BUSY));

	if (r == -VELO_CORE_ETIMEDOUT)
		velo_core_log(c, VELO_CORE_LOG_ERR, "velo: vpid never quiesced: ", vpid);
	return r;
}

void velo_core_set_present(struct velo_core *c, int (*present)(void *ctx))
{
	if (c)
		c->present = present;
}

int velo_core_wedged(const struct velo_core *c)
{
	return c && c->wedged;
}

void velo_core_disable(struct velo_core *c)
{
	if (!c)
		return;
	if (c->caps.irq_base)
		wr(c, reg_irq(c, VELO_REG_IRQ_CTRL), 0);
	if (c->caps.rma_base)
		wr(c, reg_rma(c, VELO_REG_RMA_CONTROL), 0);
	wr(c, reg_ctrl(c, VELO_REG_CTRL_CONTROL), 0);
	/* read back: the writes have reached the NIC when this returns */
	(void)rd(c, reg_ctrl(c, VELO_REG_CTRL_CONTROL));
}

static size_t ring_bytes(unsigned int log2)
{
	size_t b = (size_t)64 << log2;

	return b < 4096 ? 4096 : b;
}

int velo_core_ep_open(struct velo_core *c, const struct velo_core_ep_params *p,
		      const struct velo_core_ep **out)
{
	if (!c || !p || !out)
		return -VELO_CORE_EINVAL;
	*out = NULL;
	const unsigned int vb = c->caps.vpid_bits;
	const unsigned int half = VELO_CTL_VPID_BIT(vb); /* endpoints live in [0, half) */

	if (p->log2_lines < VELO_MBOX_LOG2_MIN || p->log2_lines > VELO_MBOX_LOG2_MAX ||
	    p->ctl_log2_lines < VELO_MBOX_LOG2_MIN || p->ctl_log2_lines > VELO_MBOX_LOG2_MAX)
		return -VELO_CORE_EINVAL;
	if (p->vpid >= 0 && (unsigned int)p->vpid >= half)
		return -VELO_CORE_EINVAL;
	int job = -1;
	const int pr = velo_core_open_policy(c, p, &job);

	if (pr)
		return pr;
	unsigned int vpid;

	if (p->vpid >= 0) {
		vpid = (unsigned int)p->vpid;
		if (!velo_core_vpid_allowed(c, p->privileged != 0, job, vpid))
			return -VELO_CORE_EACCES;
		if (c->ep[vpid])
			return -VELO_CORE_EADDRINUSE;
	} else {
		/* any free vpid of the endpoint's partition (privilege does not widen it) */
		unsigned int i;

		for (i = 0; i < half; ++i) {
			unsigned int v = (c->next_vpid + i) % half;

			if (!c->ep[v] && velo_core_vpid_allowed(c, 0, job, v))
				break;
		}
		if (i == half)
			return -VELO_CORE_ENOSPC;
		vpid = (c->next_vpid + i) % half;
		c->next_vpid = (vpid + 1) % half;
	}
	struct velo_core_ep *e = (struct velo_core_ep *)c->ops->zalloc(c->ctx, sizeof(*e));

	if (!e)
		return -VELO_CORE_ENOMEM;
	e->max_grants = p->max_grants ? p->max_grants : CORE_DEFAULT_GRANTS;
	e->grants = c->ops->zalloc(c->ctx, sizeof(struct velo_core_grant_ent) * e->max_grants);
	if (!e->grants) {
		c->ops->free(c->ctx, e);
		return -VELO_CORE_ENOMEM;
	}
	/* the data vpid and its ring, the control vpid and its ring */
	e->vpid = vpid;
	e->log2_lines = p->log2_lines;
	e->ring_bytes = ring_bytes(p->log2_lines);
	e->user_page_off = user_page(c, e->vpid);
	e->ctl_vpid = VELO_CTL_VPID(vpid, vb);
	e->ctl_log2_lines = p->ctl_log2_lines;
	e->ctl_ring_bytes = ring_bytes(p->ctl_log2_lines);
	e->ctl_user_page_off = user_page(c, e->ctl_vpid);
	/* who opened it */
	e->owner = p->owner;
	e->job_key = p->job_key;
	e->pid = p->pid;
	e->uid = p->uid;
	e->privileged = p->privileged ? 1u : 0u;
	e->job = job;
	e->ring = c->ops->dma_alloc(c->ctx, e->ring_bytes, &e->ring_dma, &e->ring_cookie);
	e->ctl_ring =
		c->ops->dma_alloc(c->ctx, e->ctl_ring_bytes, &e->ctl_ring_dma, &e->ctl_ring_cookie);
	int rc = (!e->ring || !e->ctl_ring) ? -VELO_CORE_ENOMEM : 0;

	if (!rc && ((e->ring_dma | e->ctl_ring_dma) & 63))
		rc = -VELO_CORE_EINVAL;
	if (!rc)
		rc = program_mailbox(c, e->vpid, e->ring_dma, e->log2_lines);
	if (!rc) {
		rc = program_mailbox(c, e->ctl_vpid, e->ctl_ring_dma, e->ctl_log2_lines);
		if (rc && velo_core_quiesce(c, e->vpid)) {
			/* the data vpid does not quiesce: leak its ring rather than reuse it */
			e->ring = NULL;
		}
	}
	if (rc) {
		if (e->ring)
			c->ops->dma_free(c->ctx, e->ring, e->ring_bytes, e->ring_dma,
					 e->ring_cookie);
		if (e->ctl_ring)
			c->ops->dma_free(c->ctx, e->ctl_ring, e->ctl_ring_bytes, e->ctl_ring_dma,
					 e->ctl_ring_cookie);
		c->ops->free(c->ctx, e->grants);
		c->ops->free(c->ctx, e);
		return rc;
	}
	c->ep[vpid] = e;
	++c->nep;
	if (job >= 0)
		++c->jobs[job].nep;
	*out = e;
	return 0;
}

const struct velo_core_ep *velo_core_ep_find(const struct velo_core *c, unsigned int vpid)
{
	if (!c || vpid >= CORE_MAX_VPIDS)
		return NULL;
	return c->ep[vpid];
}

int velo_core_ep_close(struct velo_core *c, unsigned int vpid)
{
	if (!c || vpid >= CORE_MAX_VPIDS || !c->ep[vpid])
		return -VELO_CORE_ENOENT;
	struct velo_core_ep *e = c->ep[vpid];

	c->ep[vpid] = NULL;
	--c->nep;
	if (e->job >= 0)
		--c->jobs[e->job].nep;
	for (unsigned int i = 0; i < e->max_grants; ++i)
		e->grants[i].used = 0;
	e->ngrants = 0;
	/*
	 * regions first (each quiesced, then unpinned), then the notification queue goes with the
	 * data vpid's quiesce (CTRL.QUIESCE_STATUS covers it)
	 */
	velo_core_rma_release_ep(c, e->vpid, e->owner);
	if (e->nq)
		wr(c, nq_reg(c, e->vpid, VELO_TBL_RMA_NQ_TABLE_NQ_CFG), 0);
	int q1 = velo_core_quiesce(c, e->vpid);
	int q2 = velo_core_quiesce(c, e->ctl_vpid);
	/* memory is reused only after the NIC has nothing left for the vpid */
	if (!q1)
		c->ops->dma_free(c->ctx, e->ring, e->ring_bytes, e->ring_dma, e->ring_cookie);
	if (!q2)
		c->ops->dma_free(c->ctx, e->ctl_ring, e->ctl_ring_bytes, e->ctl_ring_dma,
				 e->ctl_ring_cookie);
	if (!q1 && e->nq)
		c->ops->dma_free(c->ctx, e->nq, e->nq_bytes, e->nq_dma, e->nq_cookie);
	c->ops->free(c->ctx, e->grants);
	c->ops->free(c->ctx, e);
	return q1 ? q1 : q2;
}

int velo_core_release_owner(struct velo_core *c, uint64_t owner)
{
	int n = 0;

	for (unsigned int v = 0; v < CORE_MAX_VPIDS; ++v) {
		if (c->ep[v] && c->ep[v]->owner == owner) {
			velo_core_ep_close(c, v);
			++n;
		}
	}
	return n;
}

unsigned int velo_core_ep_count(const struct velo_core *c)
{
	return c->nep;
}

int velo_core_reclaim(struct velo_core *c, unsigned int vpid, uint64_t *owner)
{
	if (!c || vpid >= c->caps.num_vpids)
		return -VELO_CORE_ENOENT;
	const unsigned int data = vpid & ~VELO_CTL_VPID_BIT(c->caps.vpid_bits);

	if (!c->ep[data])
		return -VELO_CORE_ENOENT;
	if (owner)
		*owner = c->ep[data]->owner;
	return velo_core_ep_close(c, data);
}

/* ---- clients (open files) */
void velo_core_client_init(struct velo_core_client *cl, uint64_t owner, uint32_t pid, uint32_t uid,
			   uint32_t privileged)
{
	cl->owner = owner;
	cl->pid = pid;
	cl->uid = uid;
	cl->privileged = privileged ? 1u : 0u;
	cl->vpid = -1;
}

const struct velo_core_ep *velo_core_client_ep(const struct velo_core *c,
					       const struct velo_core_client *cl, int *err)
{
	const struct velo_core_ep *e = NULL;
	int r = -VELO_CORE_EBADFD;

	if (c && cl && cl->vpid >= 0) {
		r = -VELO_CORE_ENODEV;
		if ((unsigned int)cl->vpid < CORE_MAX_VPIDS && c->ep[cl->vpid] &&
		    c->ep[cl->vpid]->owner == cl->owner) {
			e = c->ep[cl->vpid];
			r = 0;
		}
	}
	if (err)
		*err = r;
	return e;
}

void velo_core_client_caller(struct velo_core_client *cl, uint32_t pid, uint32_t uid,
			     uint32_t privileged)
{
	cl->pid = pid;
	cl->uid = uid;
	cl->privileged = privileged ? 1u : 0u;
}

int velo_core_client_close(struct velo_core *c, struct velo_core_client *cl)
{
	const struct velo_core_ep *e = velo_core_client_ep(c, cl, NULL);

	return e ? velo_core_ep_close(c, e->vpid) : 0;
}

/* ---- grants */
uint64_t velo_core_window_off(const struct velo_core *c, unsigned int src_vpid,
			      unsigned int dst_node, unsigned int dst_vpid)
{
	const unsigned int vb = c->caps.vpid_bits, nb = c->caps.node_bits;

	return ((uint64_t)dst_vpid << VELO_SEND_ADDR_DST_VPID_SHIFT(vb, nb)) |
	       ((uint64_t)dst_node << VELO_SEND_ADDR_DST_NODE_SHIFT(vb, nb)) |
	       ((uint64_t)src_vpid << VELO_SEND_ADDR_SRC_VPID_SHIFT(vb, nb));
}

int velo_core_grant(struct velo_core *c, unsigned int vpid, unsigned int from,
		    unsigned int dst_node, unsigned int dst_vpid, uint64_t *window_off)
{
	if (!c || vpid >= CORE_MAX_VPIDS || !c->ep[vpid])
		return -VELO_CORE_ENOENT;
	struct velo_core_ep *e = c->ep[vpid];
	const unsigned int vb = c->caps.vpid_bits;

	if (from > 1 || dst_node >= (1u << c->caps.node_bits) || dst_vpid >= c->caps.num_vpids)
		return -VELO_CORE_EINVAL;
	if (from == 0 && VELO_IS_CTL_VPID(dst_vpid, vb))
		return -VELO_CORE_EINVAL;
	if (velo_core_may_reach(c, e, dst_node, dst_vpid))
		return -VELO_CORE_EACCES;
	int free_slot = -1;

	for (unsigned int i = 0; i < e->max_grants; ++i) {
		struct velo_core_grant_ent *g = &e->grants[i];

		if (!g->used) {
			if (free_slot < 0)
				free_slot = (int)i;
			continue;
		}
		if (g->from == from && g->dst_node == dst_node && g->dst_vpid == dst_vpid) {
			if (window_off)
				*window_off = g->window_off;
			return (int)i;
		}
	}
	if (free_slot < 0)
		return -VELO_CORE_ENOSPC;
	struct velo_core_grant_ent *g = &e->grants[free_slot];

	g->used = 1;
	g->from = (uint8_t)from;
	g->dst_node = dst_node;
	g->dst_vpid = dst_vpid;
	g->window_off = velo_core_window_off(c, from ? e->ctl_vpid : e->vpid, dst_node, dst_vpid);
	++e->ngrants;
	if (window_off)
		*window_off = g->window_off;
	return free_slot;
}

int velo_core_revoke(struct velo_core *c, unsigned int vpid, unsigned int grant_id)
{
	if (!c || vpid >= CORE_MAX_VPIDS || !c->ep[vpid])
		return -VELO_CORE_ENOENT;
	struct velo_core_ep *e = c->ep[vpid];

	if (grant_id >= e->max_grants || !e->grants[grant_id].used)
		return -VELO_CORE_ENOENT;
	e->grants[grant_id].used = 0;
	--e->ngrants;
	return 0;
}

const struct velo_core_grant_ent *velo_core_grant_get(const struct velo_core *c, unsigned int vpid,
						      unsigned int grant_id)
{
	if (!c || vpid >= CORE_MAX_VPIDS || !c->ep[vpid])
		return NULL;
	const struct velo_core_ep *e = c->ep[vpid];

	if (grant_id >= e->max_grants || !e->grants[grant_id].used)
		return NULL;
	return &e->grants[grant_id];
}
