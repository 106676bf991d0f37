// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The portable VELO driver core (velo_core.h): RMA (docs/rma.md §2, §4). Notification queues,
 * the region table, the page table (best-fit runs, compaction), the RMA ioctls.
 */
#include "velo_core_priv.h"

/* ---- RMA: notification queues, regions, translation (docs/rma.md §2, §4) */
int velo_core_rma_enable(struct velo_core *c, int on)
{
	const int r = core_unit(c, rma_base, -VELO_CORE_EOPNOTSUPP);

	return r ? r : velo_core_write_enable(c, reg_rma(c, VELO_REG_RMA_CONTROL),
					      (uint32_t)VELO_FIELD_MASK(VELO_REG_RMA_CONTROL_ENABLE),
					      on, "velo: RMA CONTROL read back ");
}

static uint32_t rg_reg(const struct velo_core *c, unsigned int r, uint32_t reg)
{
	return c->caps.rma_region_off + r * VELO_TBL_RMA_REGION_STRIDE + reg;
}

static uint32_t pte_reg(const struct velo_core *c, unsigned int i, uint32_t reg)
{
	return c->caps.rma_pte_off + i * VELO_TBL_RMA_PTE_STRIDE + reg;
}

int velo_core_rma_setup(struct velo_core *c)
{
	c->nrg = 1u << c->caps.rma_region_bits;
	c->npte = 1u << c->caps.rma_pte_bits;
	const size_t rg_bytes = sizeof(struct velo_core_region) * c->nrg;
	const size_t pte_bytes = sizeof(uint64_t) * c->npte;

	c->rma_mem = c->ops->zalloc(c->ctx, rg_bytes + 2 * pte_bytes + sizeof(uint16_t) * c->npte);
	if (!c->rma_mem)
		return -VELO_CORE_ENOMEM;
	uint8_t *p = (uint8_t *)c->rma_mem;

	c->rg = (struct velo_core_region *)p;
	c->pte = (uint64_t *)(p + rg_bytes);
	c->tmp = (uint64_t *)(p + rg_bytes + pte_bytes);
	c->pte_rg = (uint16_t *)(p + rg_bytes + 2 * pte_bytes);
	c->pte_nfree = c->npte;
	c->max_regions =
		c->nrg < VELO_CORE_MAX_REGIONS_PER_EP ? c->nrg : VELO_CORE_MAX_REGIONS_PER_EP;
	return 0;
}

void velo_core_set_rma_unpin(struct velo_core *c, void (*unpin)(void *ctx, void *pin))
{
	if (c)
		c->rma_unpin = unpin;
}

uint32_t velo_core_rma_counter(const struct velo_core *c, unsigned int i)
{
	if (!c || !c->caps.rma_base || i >= c->caps.rma_num_counters)
		return 0;
	return rd(c, reg_rma(c, VELO_REG_RMA_CNT_BASE) + 4u * i);
}

uint64_t velo_core_rma_pages(uint64_t addr, uint64_t len)
{
	if (!len)
		return 0;
	return (((addr & 4095u) + len - 1) >> 12) + 1;
}

const struct velo_core_region *velo_core_rma_region(const struct velo_core *c, unsigned int r)
{
	if (!c || !c->rg || r >= c->nrg)
		return NULL;
	return &c->rg[r];
}

/*
 * Free runs of the page table, circular (a region's entries may wrap). Calls back with each
 * run's start and length; returns the number of free entries.
 */
static unsigned int pte_runs(const struct velo_core *c, unsigned int need, unsigned int *best,
			     unsigned int *best_len, unsigned int *longest)
{
	const unsigned int n = c->npte;
	*best = 0;
	*best_len = 0;
	if (longest)
		*longest = 0;
	if (c->pte_nfree == n) { /* all free: one run */
		*best_len = n;
		if (longest)
			*longest = n;
		return n;
	}
	if (!c->pte_nfree)
		return 0;
	unsigned int u = 0; /* a used entry: runs are scanned starting after it */

	while (!c->pte_rg[u])
		++u;
	unsigned int run = 0, start = 0;

	for (unsigned int k = 1; k <= n; ++k) {
		const unsigned int i = (u + k) % n;

		if (!c->pte_rg[i] && k < n) {
			if (!run)
				start = i;
			++run;
			continue;
		}
		if (run) {
			if (longest && run > *longest)
				*longest = run;
			/* best fit: the shortest run that holds `need` */
			if (run >= need && (!*best_len || run < *best_len)) {
				*best = start;
				*best_len = run;
			}
		}
		run = 0;
	}
	return c->pte_nfree;
}

unsigned int velo_core_rma_pte_free(const struct velo_core *c, unsigned int *longest)
{
	unsigned int b, bl, lg = 0;

	if (!c || !c->pte_rg) {
		if (longest)
			*longest = 0;
		return 0;
	}
	const unsigned int f = pte_runs(c, 1, &b, &bl, &lg);

	if (longest)
		*longest = lg;
	return f;
}

static uint32_t rg_cfg(const struct velo_core_region *g, int alloc, int valid)
{
	return (uint32_t)(VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_ALLOC, alloc ? 1 : 0) |
			  VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_VALID, valid ? 1 : 0) |
			  VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_LR,
					  (g->access & VELO_REG_LOCAL_READ) != 0) |
			  VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_LW,
					  (g->access & VELO_REG_LOCAL_WRITE) != 0) |
			  VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_RR,
					  (g->access & VELO_REG_REMOTE_READ) != 0) |
			  VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_RW,
					  (g->access & VELO_REG_REMOTE_WRITE) != 0) |
			  VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_OWNER_VPID, g->owner_vpid));
}

/* Wait until the NIC holds no translation of region r (its RG_CFG already withdrawn). */
static int rg_quiesce(struct velo_core *c, unsigned int r)
{
	wr(c, reg_rma(c, VELO_REG_RMA_QUIESCE_REGION), r);
	const int q = velo_core_poll_quiet(c, reg_rma(c, VELO_REG_RMA_QUIESCE_STATUS),
					   (uint32_t)VELO_FIELD_MASK(VELO_REG_RMA_QUIESCE_STATUS_BUSY));

	if (q == -VELO_CORE_ETIMEDOUT)
		velo_core_log(c, VELO_CORE_LOG_ERR,
			      "velo: RMA region never quiesced (its pages stay pinned): ", r);
	return q ? -VELO_CORE_ETIMEDOUT : 0;
}

static void pte_write(struct velo_core *c, unsigned int i, uint64_t pfn)
{
	c->pte[i] = pfn;
	wr(c, pte_reg(c, i, VELO_TBL_RMA_PTE_PTE_LO), (uint32_t)pfn);
	wr(c, pte_reg(c, i, VELO_TBL_RMA_PTE_PTE_HI),
	   (uint32_t)VELO_FIELD_PREP(VELO_TBL_RMA_PTE_PTE_HI_PFN_HI, pfn >> 32));
}

/* A withdrawn, quiesced region gives its page table run back. */
static void pte_free_run(struct velo_core *c, struct velo_core_region *g)
{
	for (unsigned int k = 0; k < g->npte; ++k) {
		const unsigned int i = (g->pte_first + k) % c->npte;

		c->pte_rg[i] = 0;
		c->pte[i] = 0;
	}
	c->pte_nfree += g->npte;
	g->npte = 0;
	g->pte_first = 0;
}

/* Region r is quiesced with VALID = 0: unpin and forget its translation. */
static void rg_drop_translation(struct velo_core *c, struct velo_core_region *g)
{
	void *pin = g->pin;

	pte_free_run(c, g);
	g->pin = NULL;
	if (c->rma_unpin && pin)
		c->rma_unpin(c->ctx, pin);
}

/*
 * Relocate every VALID region to the start of the page table. Each is withdrawn and quiesced
 * first; if one does not quiesce it stays STUCK (pins kept) and the others are made valid again
 * where they were. 0 or -ETIMEDOUT.
 */
static int pte_compact(struct velo_core *c)
{
	for (unsigned int r = 0; r < c->nrg; ++r)
		if (c->rg[r].state == VELO_CORE_RG_STUCK)
			return -VELO_CORE_ENOSPC; /* fixed runs: no compaction */
	for (unsigned int r = 0; r < c->nrg; ++r)
		if (c->rg[r].state == VELO_CORE_RG_VALID)
			wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_CFG), rg_cfg(&c->rg[r], 1, 0));
	int stuck = 0;

	for (unsigned int r = 0; r < c->nrg; ++r) {
		if (c->rg[r].state != VELO_CORE_RG_VALID)
			continue;
		if (rg_quiesce(c, r)) {
			c->rg[r].state = VELO_CORE_RG_STUCK;
			stuck = 1;
		}
	}
	if (stuck) {
		for (unsigned int r = 0; r < c->nrg; ++r)
			if (c->rg[r].state == VELO_CORE_RG_VALID)
				wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_CFG),
				   rg_cfg(&c->rg[r], 1, 1));
		return -VELO_CORE_ETIMEDOUT;
	}
	unsigned int pos = 0;

	for (unsigned int r = 0; r < c->nrg; ++r) {
		struct velo_core_region *g = &c->rg[r];

		if (g->state != VELO_CORE_RG_VALID)
			continue;
		for (unsigned int k = 0; k < g->npte; ++k)
			c->tmp[pos + k] = c->pte[(g->pte_first + k) % c->npte];
		g->pte_first = pos;
		pos += g->npte;
	}
	for (unsigned int i = 0; i < c->npte; ++i) {
		c->pte_rg[i] = 0;
		c->pte[i] = 0;
	}
	for (unsigned int r = 0; r < c->nrg; ++r) {
		struct velo_core_region *g = &c->rg[r];

		if (g->state != VELO_CORE_RG_VALID)
			continue;
		for (unsigned int k = 0; k < g->npte; ++k) {
			const unsigned int i = g->pte_first + k;

			pte_write(c, i, c->tmp[i]);
			c->pte_rg[i] = (uint16_t)(r + 1);
		}
		wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_PTE),
		   (uint32_t)VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_PTE_FIRST, g->pte_first));
		wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_CFG), rg_cfg(g, 1, 1));
	}
	c->pte_nfree = c->npte - pos;
	velo_core_log(c, VELO_CORE_LOG_INFO, "velo: RMA page table compacted, entries in use ",
		      pos);
	return 0;
}

/*
 * Compaction withdraws every VALID region for a moment (a command racing with it fails with
 * NOT_VALID). Only a privileged endpoint may do that to others' regions; an unprivileged one
 * only when every VALID region is its own owner's.
 */
static int compact_allowed(const struct velo_core *c, const struct velo_core_region *g)
{
	const struct velo_core_ep *e = g->owner_vpid < CORE_MAX_VPIDS ? c->ep[g->owner_vpid] : NULL;

	if (e && e->privileged)
		return 1;
	for (unsigned int r = 0; r < c->nrg; ++r)
		if (c->rg[r].state == VELO_CORE_RG_VALID && c->rg[r].owner != g->owner)
			return 0;
	return 1;
}

/* Endpoint vpid of an NIC with an RMA unit: 0 with *e set, -EOPNOTSUPP or -ENOENT. */
static int rma_ep(struct velo_core *c, unsigned int vpid, struct velo_core_ep **e)
{
	if (!c->caps.rma_base)
		return -VELO_CORE_EOPNOTSUPP;
	if (vpid >= CORE_MAX_VPIDS || !c->ep[vpid])
		return -VELO_CORE_ENOENT;
	*e = c->ep[vpid];
	return 0;
}

/*
 * Set up (log2 entries, VELO_NQ_LOG2_MIN..RMA_NQ_LOG2_MAX) the notification queue of endpoint
 * `vpid`: zeroed ring, NQ_CFG = 0, base, NQ_WP = 0, user NQ_RP = 0, NQ_CFG = ENABLE | LOG2,
 * read back. -EOPNOTSUPP, -ENOENT, -EINVAL, -EEXIST (already set up), -ENOMEM, -EIO.
 */
static int nq_setup(struct velo_core *c, unsigned int vpid, unsigned int log2)
{
	struct velo_core_ep *e;
	const int err = c ? rma_ep(c, vpid, &e) : -VELO_CORE_EINVAL;

	if (err)
		return err;

	if (log2 < VELO_NQ_LOG2_MIN || log2 > VELO_RMA_NQ_LOG2_MAX)
		return -VELO_CORE_EINVAL;
	if (e->nq)
		return -VELO_CORE_EEXIST;
	const size_t bytes = (size_t)VELO_RMA_NQ_ENTRY_BYTES << log2;
	void *cookie = NULL;
	uint64_t dma = 0;
	void *ring = c->ops->dma_alloc(c->ctx, bytes, &dma, &cookie);

	if (!ring)
		return -VELO_CORE_ENOMEM;
	int rc = (dma & 63) ? -VELO_CORE_EINVAL : 0;
	const uint32_t cfg =
		(uint32_t)(VELO_FIELD_PREP(VELO_TBL_RMA_NQ_TABLE_NQ_CFG_ENABLE, 1) |
			   VELO_FIELD_PREP(VELO_TBL_RMA_NQ_TABLE_NQ_CFG_LOG2_ENTRIES, log2));
	if (!rc) {
		wr(c, nq_reg(c, vpid, VELO_TBL_RMA_NQ_TABLE_NQ_CFG), 0);
		wr(c, nq_reg(c, vpid, VELO_TBL_RMA_NQ_TABLE_NQ_BASE_LO), (uint32_t)dma);
		wr(c, nq_reg(c, vpid, VELO_TBL_RMA_NQ_TABLE_NQ_BASE_HI), (uint32_t)(dma >> 32));
		wr(c, nq_reg(c, vpid, VELO_TBL_RMA_NQ_TABLE_NQ_WP), 0);
		wr(c, user_page(c, vpid) + VELO_TBL_VPID_USER_NQ_RP, 0);
		wr(c, nq_reg(c, vpid, VELO_TBL_RMA_NQ_TABLE_NQ_CFG), cfg);
		const uint32_t back = rd(c, nq_reg(c, vpid, VELO_TBL_RMA_NQ_TABLE_NQ_CFG));
		const uint32_t lo = rd(c, nq_reg(c, vpid, VELO_TBL_RMA_NQ_TABLE_NQ_BASE_LO));

		if (back != cfg || lo != ((uint32_t)dma & ~63u)) {
			velo_core_log(c, VELO_CORE_LOG_ERR, "velo: NQ_CFG read back wrong: ", back);
			wr(c, nq_reg(c, vpid, VELO_TBL_RMA_NQ_TABLE_NQ_CFG), 0);
			/* the ring is free once the vpid is quiet; if it never is, leaked, never reused */
			if (velo_core_quiesce_poll(c, vpid))
				return -VELO_CORE_EIO;
			rc = -VELO_CORE_EIO;
		}
	}
	if (rc) {
		c->ops->dma_free(c->ctx, ring, bytes, dma, cookie);
		return rc;
	}
	e->nq = ring;
	e->nq_dma = dma;
	e->nq_cookie = cookie;
	e->nq_bytes = bytes;
	e->nq_log2 = log2;
	return 0;
}

uint32_t velo_core_rma_key(const struct velo_core *c, unsigned int r, uint32_t n)
{
	/* a Feistel network is a permutation whatever its round function */
	uint32_t hi = n >> 16, lo = n & 0xFFFFu;

	for (uint32_t k = 0; k < 4; ++k) {
		const uint32_t f = (uint32_t)c->ops->prf(c->ctx, r, (uint64_t)k << 16 | lo) & 0xFFFFu;
		const uint32_t t = hi ^ f;

		hi = lo;
		lo = t;
	}
	return hi << 16 | lo;
}

/* The next key of FREE index r: nonzero, or 0 when it has none left (it is RETIRED). */
static uint32_t rg_next_key(struct velo_core *c, unsigned int r)
{
	struct velo_core_region *g = &c->rg[r];
	uint32_t key = 0;

	/* one counter value maps to 0: at most two draws */
	while (!key && g->gen <= 0xFFFFFFFFull)
		key = velo_core_rma_key(c, r, (uint32_t)g->gen++);
	if (!key)
		g->state = VELO_CORE_RG_RETIRED;
	return key;
}

/* access flags and a buffer REGISTER accepts */
static int reg_args_ok(uint64_t addr, uint64_t len, unsigned int access)
{
	return access && !(access & ~(unsigned int)VELO_REG_ACCESS_ALL) && len &&
	       len <= VELO_REG_LEN_MAX && addr + (len - 1) >= addr;
}

/* a box inside what RG_SCOPE holds and the NIC's bits name */
static int scope_ok(const struct velo_core *c, const struct velo_core_scope *s)
{
	const uint32_t nodes = 1u << c->caps.node_bits;
	const uint32_t vpids = VELO_CTL_VPID_BIT(c->caps.vpid_bits);

	return s->node_lo <= s->node_hi && s->node_hi < nodes && s->vpid_lo <= s->vpid_hi &&
	       s->vpid_hi < vpids;
}

#if VELO_CORE_SCOPE_BOXES != VELO_RMA_SCOPE_BOXES || VELO_SCOPE_NIC_BOXES != VELO_RMA_SCOPE_BOXES
#error "velo_core.h and velo_uapi.h disagree with the spec's RMA_SCOPE_BOXES"
#endif

/* a scope list as REGISTER makes it: 1..VELO_CORE_SCOPE_BOXES boxes, each inside the NIC's bits */
static int scope_list_ok(const struct velo_core *c, const struct velo_core_scope_list *l)
{
	unsigned int i;

	if (!l->n || l->n > VELO_CORE_SCOPE_BOXES)
		return 0;
	for (i = 0; i < l->n; ++i)
		if (!scope_ok(c, &l->box[i]))
			return 0;
	return 1;
}

/* RG_SCOPE of an empty box (LO > HI in both fields: admits nobody) */
#define SCOPE_REG_EMPTY                                                  \
	((uint32_t)(VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_VPID_LO, 0xFF) | \
		    VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_NODE_LO, 0xFF)))

static uint32_t scope_reg(const struct velo_core_scope *s)
{
	return (uint32_t)(VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_VPID_LO, s->vpid_lo) |
			  VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_VPID_HI, s->vpid_hi) |
			  VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_NODE_LO, s->node_lo) |
			  VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_NODE_HI, s->node_hi));
}

int velo_core_rma_declare(struct velo_core *c, unsigned int vpid, uint64_t addr, uint64_t len,
			  unsigned int access, const struct velo_core_scope_list *scope, uint64_t *nla)
{
	static const uint32_t box_off[VELO_CORE_SCOPE_BOXES] = {
		VELO_TBL_RMA_REGION_RG_SCOPE, VELO_TBL_RMA_REGION_RG_SCOPE1,
		VELO_TBL_RMA_REGION_RG_SCOPE2, VELO_TBL_RMA_REGION_RG_SCOPE3,
	};
	struct velo_core_ep *e;
	const int err = c && nla && scope ? rma_ep(c, vpid, &e) : -VELO_CORE_EINVAL;

	if (err)
		return err;

	if (!reg_args_ok(addr, len, access) || !scope_list_ok(c, scope))
		return -VELO_CORE_EINVAL;
	if (velo_core_rma_pages(addr, len) > c->npte || e->nregions >= c->max_regions)
		return -VELO_CORE_ENOSPC;
	unsigned int i, r = 0;
	uint32_t key = 0;

	for (i = 0; i < c->nrg && !key; ++i) {
		r = (c->next_rg + i) % c->nrg;
		if (c->rg[r].state == VELO_CORE_RG_FREE)
			key = rg_next_key(c, r);
	}
	if (!key)
		return -VELO_CORE_ENOSPC;
	c->next_rg = (r + 1) % c->nrg; /* round robin: an index comes back as late as possible */
	struct velo_core_region *g = &c->rg[r];

	g->state = VELO_CORE_RG_DECLARED;
	g->key = key;
	for (i = 0; i < VELO_CORE_SCOPE_BOXES; ++i)
		g->scope[i] = i < scope->n ? scope_reg(&scope->box[i]) : SCOPE_REG_EMPTY;
	g->access = (uint8_t)access;
	g->owner_vpid = vpid;
	g->owner = e->owner;
	g->addr = addr;
	g->len = len;
	g->npte = 0;
	g->pte_first = 0;
	g->pin = NULL;
	++e->nregions;
	/*
	 * not allocated in the NIC (RG_CFG = 0) and quiesced since: its fields may change, RG_KEY
	 * and every scope box included (the unused ones empty: an earlier use may have had a list);
	 * RG_CFG last
	 */
	wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_PTE), 0);
	wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_START),
	   (uint32_t)VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_START_START, addr & 4095u));
	wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_LEN_LO), (uint32_t)len);
	wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_LEN_HI),
	   (uint32_t)VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_LEN_HI_LEN_HI, len >> 32));
	wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_KEY), g->key);
	for (i = 0; i < VELO_CORE_SCOPE_BOXES; ++i)
		wr(c, rg_reg(c, r, box_off[i]), g->scope[i]);
	wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_CFG), rg_cfg(g, 1, 0));
	*nla = VELO_FIELD_PREP(VELO_RMA_NLA_KEY, g->key & 0xFFu) |
	       VELO_FIELD_PREP(VELO_RMA_NLA_REGION, r);
	return (int)r;
}

/* Find a region of endpoint `vpid` by NLA (offset must be 0). Its index, or -ENOENT. */
static int rma_lookup(const struct velo_core *c, unsigned int vpid, uint64_t nla)
{
	if (!c || !c->rg || vpid >= CORE_MAX_VPIDS || !c->ep[vpid])
		return -VELO_CORE_ENOENT;
	const uint64_t r = VELO_FIELD_GET(VELO_RMA_NLA_REGION, nla);

	if (VELO_FIELD_GET(VELO_RMA_NLA_OFFSET, nla) || r >= c->nrg)
		return -VELO_CORE_ENOENT;
	const struct velo_core_region *g = &c->rg[r];

	/* the NLA holds the key's bits 7:0; the owner check makes the handle the owner's own */
	if (g->state == VELO_CORE_RG_FREE || g->state == VELO_CORE_RG_RETIRED ||
	    (g->key & 0xFFu) != VELO_FIELD_GET(VELO_RMA_NLA_KEY, nla) || g->owner_vpid != vpid ||
	    g->owner != c->ep[vpid]->owner)
		return -VELO_CORE_ENOENT;
	return (int)r;
}

int velo_core_rma_map(struct velo_core *c, unsigned int r, unsigned int key, const uint64_t *pfns,
		      uint64_t npages, void *pin)
{
	if (!c)
		return -VELO_CORE_EINVAL;
	if (!c->caps.rma_base)
		return -VELO_CORE_EOPNOTSUPP;
	if (r >= c->nrg || c->rg[r].state != VELO_CORE_RG_DECLARED || c->rg[r].key != key)
		return -VELO_CORE_ENOENT;
	struct velo_core_region *g = &c->rg[r];

	if (!pfns || npages != velo_core_rma_pages(g->addr, g->len))
		return -VELO_CORE_EINVAL;
	for (uint64_t k = 0; k < npages; ++k)
		if (pfns[k] >> 40)
			return -VELO_CORE_EINVAL;
	const unsigned int n = (unsigned int)npages;
	unsigned int first, run;

	if (pte_runs(c, n, &first, &run, NULL) < n)
		return -VELO_CORE_ENOSPC;
	if (!run) { /* enough entries, but no run long enough: compact */
		if (!compact_allowed(c, g))
			return -VELO_CORE_ENOSPC;
		const int q = pte_compact(c);

		if (q)
			return q == -VELO_CORE_ETIMEDOUT ? -VELO_CORE_ENOSPC : q;
		pte_runs(c, n, &first, &run, NULL);
		if (!run)
			return -VELO_CORE_ENOSPC;
	}
	for (unsigned int k = 0; k < n; ++k) {
		const unsigned int i = (first + k) % c->npte;

		pte_write(c, i, pfns[k]);
		c->pte_rg[i] = (uint16_t)(r + 1);
	}
	c->pte_nfree -= n;
	g->pte_first = first;
	g->npte = n;
	g->pin = pin;
	g->state = VELO_CORE_RG_VALID;
	wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_PTE),
	   (uint32_t)VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_PTE_FIRST, first));
	wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_CFG), rg_cfg(g, 1, 1));
	/*
	 * read back (flushes the posted writes): the NIC translates the region before the caller
	 * returns to user space, so a peer told of it at once never meets a stale entry
	 */
	(void)rd(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_CFG));
	return 0;
}

int velo_core_rma_invalidate(struct velo_core *c, unsigned int r, unsigned int key)
{
	if (!c)
		return -VELO_CORE_EINVAL;
	if (!c->caps.rma_base)
		return -VELO_CORE_EOPNOTSUPP;
	if (r >= c->nrg || c->rg[r].state != VELO_CORE_RG_VALID || c->rg[r].key != key)
		return 0;
	struct velo_core_region *g = &c->rg[r];

	wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_CFG), rg_cfg(g, 1, 0));
	if (rg_quiesce(c, r)) {
		g->state = VELO_CORE_RG_STUCK;
		return -VELO_CORE_ETIMEDOUT;
	}
	g->state = VELO_CORE_RG_DECLARED;
	rg_drop_translation(c, g);
	return 0;
}

/* Deregister region r (any state but FREE): RG_CFG = 0, quiesce, unpin, free the index. */
static int rg_release(struct velo_core *c, unsigned int r)
{
	struct velo_core_region *g = &c->rg[r];
	const unsigned int vpid = g->owner_vpid;

	if (g->owner && vpid < CORE_MAX_VPIDS && c->ep[vpid] && c->ep[vpid]->owner == g->owner)
		--c->ep[vpid]->nregions;
	/* no client owns it any more (owners are never 0): a STUCK one stays out of use */
	g->owner = 0;
	wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_CFG), 0);
	if (rg_quiesce(c, r)) {
		g->state = VELO_CORE_RG_STUCK;
		return -VELO_CORE_ETIMEDOUT;
	}
	rg_drop_translation(c, g);
	/* an index with no key left is never used again */
	g->state = g->gen > 0xFFFFFFFFull ? VELO_CORE_RG_RETIRED : VELO_CORE_RG_FREE;
	g->owner = 0;
	g->access = 0;
	g->addr = 0;
	g->len = 0;
	return 0;
}

void velo_core_rma_release_ep(struct velo_core *c, unsigned int vpid, uint64_t owner)
{
	if (!c->rg)
		return;
	for (unsigned int r = 0; r < c->nrg; ++r) {
		const struct velo_core_region *g = &c->rg[r];

		if (g->state != VELO_CORE_RG_FREE && g->owner_vpid == vpid && g->owner == owner &&
		    owner)
			rg_release(c, r);
	}
}

/*
 * What every RMA ioctl checks first, in this order: its arguments (bad: -EINVAL), the RMA unit,
 * the client's endpoint. 0 with *ep set, or the error.
 */
static int rma_ioc_ep(const struct velo_core *c, const struct velo_core_client *cl, int bad,
		      const struct velo_core_ep **ep)
{
	int err;

	if (bad)
		return -VELO_CORE_EINVAL;
	if (!c->caps.rma_base)
		return -VELO_CORE_EOPNOTSUPP;
	*ep = velo_core_client_ep(c, cl, &err);
	return err;
}

/* The same, then the client's region that nla names: its index, or the error. */
static int rma_ioc_region(const struct velo_core *c, const struct velo_core_client *cl, int bad,
			  uint64_t nla)
{
	const struct velo_core_ep *e;
	const int err = rma_ioc_ep(c, cl, bad, &e);

	return err ? err : rma_lookup(c, e->vpid, nla);
}

int velo_core_ioc_rma_setup(struct velo_core *c, struct velo_core_client *cl, void *arg)
{
	struct velo_uapi_rma_setup *a = arg;
	const struct velo_core_ep *e;
	int r = rma_ioc_ep(c, cl, a->flags || a->rsvd, &e);

	if (r)
		return r;
	r = nq_setup(c, e->vpid, a->log2_entries ? a->log2_entries : VELO_NQ_LOG2_DEFAULT);
	if (r)
		return r;
	a->nq_bytes = e->nq_bytes;
	a->out_log2_entries = e->nq_log2;
	a->nq_rp_off = VELO_TBL_VPID_USER_NQ_RP;
	a->region_bits = c->caps.rma_region_bits;
	a->pte_bits = c->caps.rma_pte_bits;
	a->mtu = c->caps.rma_mtu;
	a->max_regions = c->max_regions;
	return 0;
}

int velo_core_ioc_register(struct velo_core *c, struct velo_core_client *cl, void *arg)
{
	struct velo_uapi_register *a = arg;
	struct velo_core_scope in[VELO_SCOPE_LIST_MAX];
	struct velo_core_scope_list list;
	const struct velo_core_ep *e;
	const int is_list = a->scope == VELO_SCOPE_LIST;
	unsigned int i, nin = 1, bad = !reg_args_ok(a->addr, a->len, a->flags) || a->rsvd;
	uint64_t nla = 0;
	int r;

	/*
	 * LIST: the boxes, the single fields 0; the other kinds: the single fields, no boxes (every
	 * box beyond nboxes must be 0 too: nothing the driver ignores)
	 */
	if (is_list) {
		nin = a->nboxes;
		bad |= !nin || nin > VELO_SCOPE_LIST_MAX || a->node_lo || a->node_hi || a->vpid_lo ||
		       a->vpid_hi;
	} else {
		bad |= a->nboxes != 0;
	}
	for (i = 0; i < VELO_SCOPE_LIST_MAX; ++i) {
		const struct velo_uapi_scope_box *x = &a->boxes[i];

		if (is_list && i < nin)
			in[i] = (struct velo_core_scope){ .node_lo = x->node_lo, .node_hi = x->node_hi,
							  .vpid_lo = x->vpid_lo, .vpid_hi = x->vpid_hi };
		else
			bad |= x->node_lo || x->node_hi || x->vpid_lo || x->vpid_hi;
	}
	if (!is_list)
		in[0] = (struct velo_core_scope){ .node_lo = a->node_lo, .node_hi = a->node_hi,
						  .vpid_lo = a->vpid_lo, .vpid_hi = a->vpid_hi };
	/* malformed (-EINVAL) before refused (-EACCES) before too many boxes (-E2BIG), no room */
	r = rma_ioc_ep(c, cl, bad, &e);
	if (r)
		return r;
	r = velo_core_rma_scope_list(c, e->vpid, cl->privileged, a->scope, in, nin, &list);
	if (r)
		return r;
	r = velo_core_rma_declare(c, e->vpid, a->addr, a->len, a->flags, &list, &nla);
	if (r < 0)
		return r;
	a->nla = nla;
	a->region = (uint32_t)r;
	a->key = c->rg[r].key;
	a->scope = list.n == 1 ? VELO_SCOPE_BOX : VELO_SCOPE_LIST;
	a->node_lo = (uint8_t)list.box[0].node_lo;
	a->node_hi = (uint8_t)list.box[0].node_hi;
	a->vpid_lo = (uint8_t)list.box[0].vpid_lo;
	a->vpid_hi = (uint8_t)list.box[0].vpid_hi;
	a->nboxes = list.n;
	for (i = 0; i < VELO_SCOPE_LIST_MAX; ++i)
		a->boxes[i] = (struct velo_uapi_scope_box){ 0 };
	for (i = 0; i < list.n; ++i)
		a->boxes[i] = (struct velo_uapi_scope_box){
			.node_lo = (uint8_t)list.box[i].node_lo, .node_hi = (uint8_t)list.box[i].node_hi,
			.vpid_lo = (uint8_t)list.box[i].vpid_lo, .vpid_hi = (uint8_t)list.box[i].vpid_hi,
		};
	return 0;
}

int velo_core_ioc_deregister(struct velo_core *c, struct velo_core_client *cl, void *arg)
{
	const struct velo_uapi_deregister *a = arg;
	const int r = rma_ioc_region(c, cl, a->flags != 0, a->nla);

	if (r < 0)
		return r;
	return rg_release(c, (unsigned int)r);
}

int velo_core_ioc_repin(struct velo_core *c, struct velo_core_client *cl, void *arg)
{
	struct velo_uapi_repin *a = arg;
	const int r = rma_ioc_region(c, cl, a->flags || a->rsvd, a->nla);

	if (r < 0)
		return r;
	if (c->rg[r].state == VELO_CORE_RG_STUCK)
		return -VELO_CORE_EIO;
	/* the caller (the OS glue) pins and calls velo_core_rma_map when asked to */
	a->out_repinned = c->rg[r].state == VELO_CORE_RG_DECLARED ? 1u : 0u;
	return 0;
}
