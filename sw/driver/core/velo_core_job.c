// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The portable VELO driver core (velo_core.h): the access policy. Jobs partition the vpid space;
 * the policy and the limits decide which vpid an endpoint may hold and whom it may be granted.
 */
#include "velo_core_priv.h"

/* ---- access policy helpers */
static unsigned int half_vpids(const struct velo_core *c)
{
	return VELO_CTL_VPID_BIT(c->caps.vpid_bits);
}

static int job_find(const struct velo_core *c, uint64_t key)
{
	if (!key)
		return -1;
	for (int i = 0; i < VELO_CORE_MAX_JOBS; ++i)
		if (c->jobs[i].key == key)
			return i;
	return -1;
}

/* the job owning data vpid v, -1: none */
static int vpid_job(const struct velo_core *c, unsigned int v)
{
	for (int i = 0; i < VELO_CORE_MAX_JOBS; ++i)
		if (c->jobs[i].key && v >= c->jobs[i].vpid_lo && v <= c->jobs[i].vpid_hi)
			return i;
	return -1;
}

int velo_core_vpid_allowed(const struct velo_core *c, int privileged, int job, unsigned int v)
{
	if (c->policy == VELO_POLICY_OPEN || privileged)
		return 1;
	return vpid_job(c, v) == job;
}

int velo_core_open_policy(const struct velo_core *c, const struct velo_core_ep_params *p, int *job)
{
	*job = -1;
	if (c->policy == VELO_POLICY_OPEN)
		return 0;
	if (p->job_key) {
		const int j = job_find(c, p->job_key);

		if (j < 0)
			return -VELO_CORE_EACCES;
		if (c->jobs[j].uid != VELO_CORE_UID_ANY && c->jobs[j].uid != p->uid &&
		    !p->privileged)
			return -VELO_CORE_EACCES;
		*job = j;
		return 0;
	}
	if (c->policy == VELO_POLICY_STRICT && !p->privileged)
		return -VELO_CORE_EACCES;
	return 0;
}

/* ---- access policy */
int velo_core_set_policy(struct velo_core *c, unsigned int policy)
{
	if (!c || policy > VELO_POLICY_STRICT)
		return -VELO_CORE_EINVAL;
	if (c->nep && policy != c->policy)
		return -VELO_CORE_EBUSY;
	c->policy = policy;
	return 0;
}

unsigned int velo_core_policy(const struct velo_core *c)
{
	return c->policy;
}

int velo_core_set_limits(struct velo_core *c, unsigned int max_ring_log2, unsigned int max_grants)
{
	if (!c || max_ring_log2 < VELO_RING_LOG2_MIN || max_ring_log2 > VELO_MBOX_LOG2_MAX ||
	    max_grants < 1 || max_grants > 4096)
		return -VELO_CORE_EINVAL;
	c->max_log2 = max_ring_log2;
	c->max_grants = max_grants;
	return 0;
}

int velo_core_job_set(struct velo_core *c, const struct velo_core_job *j)
{
	if (!c || !j || !j->key)
		return -VELO_CORE_EINVAL;
	if (j->vpid_lo > j->vpid_hi || j->vpid_hi >= half_vpids(c) || j->node_lo > j->node_hi ||
	    j->node_hi >= (1u << c->caps.node_bits))
		return -VELO_CORE_EINVAL;
	int slot = job_find(c, j->key);

	for (int i = 0; i < VELO_CORE_MAX_JOBS; ++i) {
		const struct velo_core_job *o = &c->jobs[i];

		if (i != slot && o->key && j->vpid_lo <= o->vpid_hi && o->vpid_lo <= j->vpid_hi)
			return -VELO_CORE_EEXIST;
	}
	if (slot >= 0 && c->jobs[slot].nep)
		return -VELO_CORE_EBUSY;
	/*
	 * no endpoint may already sit in the range (it would end up in a job it did not open in),
	 * nor hold a grant into it (the job's vpids would be reachable from outside)
	 */
	for (unsigned int v = j->vpid_lo; v <= j->vpid_hi; ++v)
		if (c->ep[v])
			return -VELO_CORE_EBUSY;
	for (unsigned int v = 0; v < CORE_MAX_VPIDS && c->policy != VELO_POLICY_OPEN; ++v) {
		const struct velo_core_ep *e = c->ep[v];

		for (unsigned int g = 0; e && !e->privileged && g < e->max_grants; ++g) {
			const unsigned int d =
				e->grants[g].dst_vpid & ~VELO_CTL_VPID_BIT(c->caps.vpid_bits);
			if (e->grants[g].used && d >= j->vpid_lo && d <= j->vpid_hi)
				return -VELO_CORE_EBUSY;
		}
	}
	if (slot < 0) {
		for (int i = 0; i < VELO_CORE_MAX_JOBS && slot < 0; ++i)
			if (!c->jobs[i].key)
				slot = i;
		if (slot < 0)
			return -VELO_CORE_ENOSPC;
	}
	c->jobs[slot] = *j;
	c->jobs[slot].nep = 0;
	return 0;
}

int velo_core_job_del(struct velo_core *c, uint64_t key)
{
	const int slot = c ? job_find(c, key) : -1;

	if (slot < 0)
		return -VELO_CORE_ENOENT;
	if (c->jobs[slot].nep)
		return -VELO_CORE_EBUSY;
	c->jobs[slot].key = 0;
	return 0;
}

const struct velo_core_job *velo_core_job_at(const struct velo_core *c, unsigned int i)
{
	if (!c || i >= VELO_CORE_MAX_JOBS || !c->jobs[i].key)
		return NULL;
	return &c->jobs[i];
}

int velo_core_may_reach(const struct velo_core *c, const struct velo_core_ep *e,
			unsigned int dst_node, unsigned int dst_vpid)
{
	if (c->policy == VELO_POLICY_OPEN || e->privileged)
		return 0;
	const unsigned int data = dst_vpid & ~VELO_CTL_VPID_BIT(c->caps.vpid_bits);

	if (vpid_job(c, data) != e->job)
		return -VELO_CORE_EACCES;
	if (e->job >= 0 &&
	    (dst_node < c->jobs[e->job].node_lo || dst_node > c->jobs[e->job].node_hi))
		return -VELO_CORE_EACCES;
	return 0;
}

/* ---- RMA scopes */
int velo_core_rma_allowed(const struct velo_core *c, const struct velo_core_ep *e,
			  unsigned int privileged)
{
	if (!c || !e)
		return -VELO_CORE_EINVAL;
	if (c->policy == VELO_POLICY_STRICT && !privileged && e->job < 0)
		return -VELO_CORE_EACCES;
	return 0;
}

/*
 * The JOB box of endpoint e: everybody under VELO_POLICY_OPEN; else its job (the one it opened
 * in, or the one its data vpid belongs to) x the job's nodes; else the run of data vpids no job
 * owns around its own x every node.
 */
static void scope_job(const struct velo_core *c, const struct velo_core_ep *e,
		      struct velo_core_scope *b)
{
	const unsigned int half = half_vpids(c);
	const int j = e->job >= 0 ? e->job : vpid_job(c, e->vpid);

	b->node_lo = 0;
	b->node_hi = (1u << c->caps.node_bits) - 1;
	b->vpid_lo = 0;
	b->vpid_hi = half - 1;
	if (c->policy == VELO_POLICY_OPEN)
		return;
	if (j >= 0) {
		b->node_lo = c->jobs[j].node_lo;
		b->node_hi = c->jobs[j].node_hi;
		b->vpid_lo = c->jobs[j].vpid_lo;
		b->vpid_hi = c->jobs[j].vpid_hi;
		return;
	}
	b->vpid_lo = e->vpid;
	b->vpid_hi = e->vpid;
	while (b->vpid_lo > 0 && vpid_job(c, b->vpid_lo - 1) < 0)
		--b->vpid_lo;
	while (b->vpid_hi + 1 < half && vpid_job(c, b->vpid_hi + 1) < 0)
		++b->vpid_hi;
}

static int scope_inside(const struct velo_core_scope *a, const struct velo_core_scope *b)
{
	return a->node_lo >= b->node_lo && a->node_hi <= b->node_hi && a->vpid_lo >= b->vpid_lo &&
	       a->vpid_hi <= b->vpid_hi;
}

int velo_core_rma_scope(const struct velo_core *c, unsigned int vpid, unsigned int privileged,
			unsigned int kind, const struct velo_core_scope *in,
			struct velo_core_scope *out)
{
	if (!c || !in || !out)
		return -VELO_CORE_EINVAL;
	if (!c->caps.rma_base)
		return -VELO_CORE_EOPNOTSUPP;
	if (vpid >= CORE_MAX_VPIDS || !c->ep[vpid])
		return -VELO_CORE_ENOENT;
	const struct velo_core_ep *e = c->ep[vpid];
	const uint32_t nodes = 1u << c->caps.node_bits;
	const uint32_t vpids = half_vpids(c);
	struct velo_core_scope job, b;

	scope_job(c, e, &job);
	switch (kind) {
	case VELO_SCOPE_JOB:
	case VELO_SCOPE_OWNER:
		if (in->node_lo || in->node_hi || in->vpid_lo || in->vpid_hi)
			return -VELO_CORE_EINVAL;
		if (kind == VELO_SCOPE_JOB) {
			b = job;
		} else {
			b.node_lo = c->caps.node_id;
			b.node_hi = c->caps.node_id;
			b.vpid_lo = vpid;
			b.vpid_hi = vpid;
		}
		break;
	case VELO_SCOPE_PEER:
		if (in->node_hi || in->vpid_hi)
			return -VELO_CORE_EINVAL;
		b.node_lo = in->node_lo;
		b.node_hi = in->node_lo;
		b.vpid_lo = in->vpid_lo;
		b.vpid_hi = in->vpid_lo;
		break;
	case VELO_SCOPE_BOX:
		b = *in;
		break;
	default:
		return -VELO_CORE_EINVAL;
	}
	if (b.node_lo > b.node_hi || b.node_hi >= nodes || b.vpid_lo > b.vpid_hi ||
	    b.vpid_hi >= vpids)
		return -VELO_CORE_EINVAL;
	if (velo_core_rma_allowed(c, e, privileged))
		return -VELO_CORE_EACCES;
	/* the owner itself is in every partition's view of it */
	if (!privileged && kind != VELO_SCOPE_OWNER && !scope_inside(&b, &job))
		return -VELO_CORE_EACCES;
	*out = b;
	return 0;
}

/* a and b admit exactly the initiators one box admits: *a = that box, 1; else 0 */
static int scope_merge(struct velo_core_scope *a, const struct velo_core_scope *b)
{
	if (scope_inside(b, a))
		return 1;
	if (scope_inside(a, b)) {
		*a = *b;
		return 1;
	}
	if (a->node_lo == b->node_lo && a->node_hi == b->node_hi &&
	    b->vpid_lo <= a->vpid_hi + 1 && a->vpid_lo <= b->vpid_hi + 1) {
		a->vpid_lo = a->vpid_lo < b->vpid_lo ? a->vpid_lo : b->vpid_lo;
		a->vpid_hi = a->vpid_hi > b->vpid_hi ? a->vpid_hi : b->vpid_hi;
		return 1;
	}
	if (a->vpid_lo == b->vpid_lo && a->vpid_hi == b->vpid_hi &&
	    b->node_lo <= a->node_hi + 1 && a->node_lo <= b->node_hi + 1) {
		a->node_lo = a->node_lo < b->node_lo ? a->node_lo : b->node_lo;
		a->node_hi = a->node_hi > b->node_hi ? a->node_hi : b->node_hi;
		return 1;
	}
	return 0;
}

/* the order of boxes in a list: node_lo, node_hi, vpid_lo, vpid_hi */
static int scope_before(const struct velo_core_scope *a, const struct velo_core_scope *b)
{
	if (a->node_lo != b->node_lo)
		return a->node_lo < b->node_lo;
	if (a->node_hi != b->node_hi)
		return a->node_hi < b->node_hi;
	if (a->vpid_lo != b->vpid_lo)
		return a->vpid_lo < b->vpid_lo;
	return a->vpid_hi < b->vpid_hi;
}

int velo_core_rma_scope_list(const struct velo_core *c, unsigned int vpid, unsigned int privileged,
			     unsigned int kind, const struct velo_core_scope *in, unsigned int nin,
			     struct velo_core_scope_list *out)
{
	struct velo_core_scope b[VELO_SCOPE_LIST_MAX];
	unsigned int i, j, n = 0;
	int r, again;

	if (!c || !in || !out)
		return -VELO_CORE_EINVAL;
	if (kind != VELO_SCOPE_LIST) {
		if (nin != 1)
			return -VELO_CORE_EINVAL;
		r = velo_core_rma_scope(c, vpid, privileged, kind, in, &b[0]);
		if (r)
			return r;
		*out = (struct velo_core_scope_list){ .n = 1, .box = { b[0] } };
		return 0;
	}
	if (!nin || nin > VELO_SCOPE_LIST_MAX)
		return -VELO_CORE_EINVAL;
	/*
	 * every box as a BOX scope: a malformed one anywhere first (-EINVAL: checked as if
	 * privileged, which passes every box of the NIC's bits), then the policy (-EACCES)
	 */
	for (i = 0; i < nin; ++i) {
		r = velo_core_rma_scope(c, vpid, 1, VELO_SCOPE_BOX, &in[i], &b[i]);
		if (r)
			return r;
	}
	for (i = 0; i < nin; ++i) {
		r = velo_core_rma_scope(c, vpid, privileged, VELO_SCOPE_BOX, &in[i], &b[n]);
		if (r)
			return r;
		++n;
	}
	/* merge until no two boxes merge (each merge takes one box away: at most nin - 1 rounds) */
	do {
		again = 0;
		for (i = 0; i < n && !again; ++i)
			for (j = i + 1; j < n && !again; ++j)
				if (scope_merge(&b[i], &b[j])) {
					b[j] = b[--n];
					again = 1;
				}
	} while (again);
	if (n > VELO_CORE_SCOPE_BOXES) {
		velo_core_log(c, VELO_CORE_LOG_INFO,
			      "velo: REGISTER refused: the scope list needs more than the 4 boxes the NIC holds per region; boxes after merging: ",
			      n);
		return -VELO_CORE_E2BIG;
	}
	/* sorted: equal sets of boxes give equal lists */
	for (i = 1; i < n; ++i)
		for (j = i; j > 0 && scope_before(&b[j], &b[j - 1]); --j) {
			const struct velo_core_scope t = b[j];

			b[j] = b[j - 1];
			b[j - 1] = t;
		}
	*out = (struct velo_core_scope_list){ .n = n };
	for (i = 0; i < n; ++i)
		out->box[i] = b[i];
	return 0;
}
