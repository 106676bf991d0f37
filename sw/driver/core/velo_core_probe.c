// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The portable VELO driver core (velo_core.h): finding the device. The register blocks are
 * enumerated by their chain (ID first, each block names the next); one parser per block type
 * reads and checks what the core needs of it. Also bring-up, removal and the log helpers.
 */
#include "velo_core_priv.h"

/* ---- logging, without printf */
void velo_core_log_ops(const struct velo_core_ops *ops, void *ctx, int level, const char *a,
		       unsigned long long v)
{
	char buf[160];
	unsigned int n = 0;
	int started = 0;
	int s;

	if (!ops->log)
		return;
	while (*a && n < sizeof(buf) - 20)
		buf[n++] = *a++;
	buf[n++] = '0';
	buf[n++] = 'x';
	for (s = 60; s >= 0; s -= 4) {
		unsigned int d = (unsigned int)(v >> s) & 0xF;

		if (d || started || s == 0) {
			buf[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
			started = 1;
		}
	}
	buf[n] = 0;
	ops->log(ctx, level, buf);
}

void velo_core_log(const struct velo_core *c, int level, const char *a, unsigned long long v)
{
	velo_core_log_ops(c->ops, c->ctx, level, a, v);
}

/* ---- the block parsers: what probe knows before the core exists */
struct probe_state {
	const struct velo_core_ops *ops;
	void *ctx;
	struct velo_core_caps k;
	uint32_t id_caps; /* ID.CAPS as read */
	uint32_t blk; /* the parsed block's offset from where the spec's map puts it */
};

/* register read before the core exists (probe keeps no large object on the stack) */
static uint32_t prd(const struct probe_state *s, uint32_t off)
{
	return s->ops->reg_read32(s->ctx, off);
}

/* register reg (its offset in the spec's map) of the block being parsed */
static uint32_t brd(const struct probe_state *s, uint32_t reg)
{
	return prd(s, reg + s->blk);
}

static int probe_err(const struct probe_state *s, int err, const char *what, uint32_t v)
{
	velo_core_log_ops(s->ops, s->ctx, VELO_CORE_LOG_ERR, what, v);
	return err;
}

#define BAR_REGS_BYTES (1u << VELO_BAR_REGS_BITS)

/* ID (at offset 0): the spec this NIC was built from, its version and CAPS */
static int parse_id(struct probe_state *s)
{
	struct velo_core_caps *k = &s->k;
	uint32_t caps;

	k->spec_hash = prd(s, VELO_REG_ID_SPEC_HASH);
	if (k->spec_hash != VELO_SPEC_HASH)
		return probe_err(s, -VELO_CORE_EPROTO,
				 "velo: NIC built from another spec, SPEC_HASH ", k->spec_hash);
	k->design_version = prd(s, VELO_REG_ID_DESIGN_VERSION);
	caps = prd(s, VELO_REG_ID_CAPS);
	s->id_caps = caps;
	k->node_bits = (uint32_t)VELO_FIELD_GET(VELO_REG_ID_CAPS_NODE_BITS, caps);
	k->vpid_bits = (uint32_t)VELO_FIELD_GET(VELO_REG_ID_CAPS_VPID_BITS, caps);
	k->tlp_bytes = (uint32_t)VELO_FIELD_GET(VELO_REG_ID_CAPS_TLP_BYTES, caps);
	k->link_bytes = (uint32_t)VELO_FIELD_GET(VELO_REG_ID_CAPS_LINK_BYTES, caps);
	k->msg_max = (uint32_t)VELO_FIELD_GET(VELO_REG_ID_CAPS_MSG_MAX, caps);
	return 0;
}

/* VPID: the table and the user pages */
static int parse_vpid(struct probe_state *s, struct velo_core_caps *k, uint32_t base)
{
	k->vpid_base = base;
	k->num_vpids = brd(s, VELO_REG_VPID_NUM_VPIDS);
	k->table_off = brd(s, VELO_REG_VPID_TABLE_OFFSET);
	k->table_stride = brd(s, VELO_REG_VPID_TABLE_STRIDE);
	k->user_off = brd(s, VELO_REG_VPID_USER_OFFSET);
	k->user_stride = brd(s, VELO_REG_VPID_USER_STRIDE);
	return 0;
}

static int parse_counters(struct probe_state *s, struct velo_core_caps *k, uint32_t base)
{
	k->counters_base = base;
	k->num_counters = brd(s, VELO_REG_COUNTERS_COUNT);
	return 0;
}

/* CTRL, the last of the blocks every NIC has: then ID's CAPS and VPID are checked together */
static int parse_ctrl(struct probe_state *s, struct velo_core_caps *k, uint32_t base)
{
	k->ctrl_base = base;
	k->node_id = brd(s, VELO_REG_CTRL_NODE_ID);
	if (k->node_bits < VELO_MIN_NODE_BITS || k->node_bits > VELO_MAX_NODE_BITS ||
	    k->vpid_bits < 2 || k->vpid_bits > VELO_MAX_VPID_BITS ||
	    k->num_vpids != (1u << k->vpid_bits) || k->msg_max != VELO_MSG_MAX ||
	    k->table_stride < 16 || k->user_stride < 4096 ||
	    k->table_off + (uint64_t)k->num_vpids * k->table_stride > BAR_REGS_BYTES ||
	    k->user_off + (uint64_t)k->num_vpids * k->user_stride > BAR_REGS_BYTES ||
	    k->num_counters > 64)
		return probe_err(s, -VELO_CORE_ENODEV, "velo: implausible CAPS/VPID block, CAPS ",
				 s->id_caps);
	return 0;
}

/* NET: ports and the route table */
static int parse_net(struct probe_state *s, struct velo_core_caps *k, uint32_t base)
{
	const uint32_t ports = brd(s, VELO_REG_NET_PORTS);

	k->net_base = base;
	k->nports = (uint32_t)VELO_FIELD_GET(VELO_REG_NET_PORTS_NP, ports);
	k->route_off = brd(s, VELO_REG_NET_ROUTE_OFFSET);
	k->port_off = brd(s, VELO_REG_NET_PORT_OFFSET);
	k->port_stride = brd(s, VELO_REG_NET_PORT_STRIDE);
	if (k->route_off + ((uint64_t)VELO_TBL_ROUTE_TABLE_STRIDE << k->node_bits) >
		    BAR_REGS_BYTES ||
	    (k->nports && (k->port_stride < VELO_TBL_NET_PORT_STRIDE ||
			   k->port_off + (uint64_t)k->nports * k->port_stride > BAR_REGS_BYTES)))
		return probe_err(s, -VELO_CORE_ENODEV, "velo: implausible NET block, PORTS ",
				 ports);
	return 0;
}

/* IRQ: where the pending bitmap is, one bit per vpid */
static int parse_irq(struct probe_state *s, struct velo_core_caps *k, uint32_t base)
{
	k->irq_base = base;
	k->irq_pending_off = brd(s, VELO_REG_IRQ_PENDING_OFFSET);
	k->irq_pending_words = brd(s, VELO_REG_IRQ_PENDING_WORDS);
	if (k->irq_pending_words != (k->num_vpids + 31) / 32 || !k->irq_pending_off ||
	    (k->irq_pending_off & 3) ||
	    k->irq_pending_off + 4ull * k->irq_pending_words > BAR_REGS_BYTES)
		return probe_err(s, -VELO_CORE_ENODEV,
				 "velo: implausible IRQ block, PENDING_OFFSET ",
				 k->irq_pending_off);
	return 0;
}

/* RMA: the geometry of the translation unit and where its tables are */
static int parse_rma(struct probe_state *s, struct velo_core_caps *k, uint32_t base)
{
	const uint32_t rc = brd(s, VELO_REG_RMA_CAPS);
	const uint64_t bar = BAR_REGS_BYTES;

	k->rma_base = base;
	k->rma_region_bits = (uint32_t)VELO_FIELD_GET(VELO_REG_RMA_CAPS_REGION_BITS, rc);
	k->rma_pte_bits = (uint32_t)VELO_FIELD_GET(VELO_REG_RMA_CAPS_PTE_BITS, rc);
	k->rma_mtu = (uint32_t)VELO_FIELD_GET(VELO_REG_RMA_CAPS_MTU, rc);
	k->rma_region_off = brd(s, VELO_REG_RMA_REGION_OFFSET);
	k->rma_pte_off = brd(s, VELO_REG_RMA_PTE_OFFSET);
	k->rma_nq_off = brd(s, VELO_REG_RMA_NQ_OFFSET);
	k->rma_num_counters = brd(s, VELO_REG_RMA_CNT_COUNT);
	if (k->rma_region_bits < VELO_MIN_RMA_REGION_BITS ||
	    k->rma_region_bits > VELO_MAX_RMA_REGION_BITS ||
	    k->rma_pte_bits < VELO_MIN_RMA_PTE_BITS || k->rma_pte_bits > VELO_MAX_RMA_PTE_BITS ||
	    k->rma_mtu < VELO_MIN_RMA_MTU || k->rma_mtu > VELO_MAX_RMA_MTU || (k->rma_mtu & 7) ||
	    !k->rma_region_off || !k->rma_pte_off || !k->rma_nq_off ||
	    ((k->rma_region_off | k->rma_pte_off | k->rma_nq_off) & 3) ||
	    k->rma_region_off + ((uint64_t)VELO_TBL_RMA_REGION_STRIDE << k->rma_region_bits) >
		    bar ||
	    k->rma_pte_off + ((uint64_t)VELO_TBL_RMA_PTE_STRIDE << k->rma_pte_bits) > bar ||
	    k->rma_nq_off + (uint64_t)VELO_TBL_RMA_NQ_TABLE_STRIDE * k->num_vpids > bar ||
	    k->rma_num_counters > 64)
		return probe_err(s, -VELO_CORE_ENODEV, "velo: implausible RMA block, CAPS ", rc);
	return 0;
}

/*
 * The block types the core knows, in the order their parsers run (a parser may use what the
 * ones before it found). `spec` is where the spec's map puts the block; `missing` is the block's
 * bit in the "blocks missing" mask; 0: optional.
 */
static const struct probe_block {
	uint32_t type;
	uint32_t spec;
	uint32_t missing;
	int (*parse)(struct probe_state *s, struct velo_core_caps *k, uint32_t base);
} probe_blocks[] = {
	{ VELO_BLK_VPID_TYPE, VELO_BLK_VPID_BASE, 2, parse_vpid },
	{ VELO_BLK_COUNTERS_TYPE, VELO_BLK_COUNTERS_BASE, 4, parse_counters },
	{ VELO_BLK_CTRL_TYPE, VELO_BLK_CTRL_BASE, 1, parse_ctrl },
	{ VELO_BLK_NET_TYPE, VELO_BLK_NET_BASE, 0, parse_net },
	{ VELO_BLK_IRQ_TYPE, VELO_BLK_IRQ_BASE, 0, parse_irq },
	{ VELO_BLK_RMA_TYPE, VELO_BLK_RMA_BASE, 0, parse_rma },
};

#define PROBE_NBLOCKS ARRAY_SIZE(probe_blocks)

/*
 * Walk the block chain: ID first, each block names the next, at most 16 blocks, forward only.
 * base[i]: offset of the (last) block of probe_blocks[i]'s type, 0: none.
 */
static int probe_walk(const struct probe_state *s, uint32_t *base)
{
	uint32_t off = 0;
	int nblk = 0;
	unsigned int i;

	for (;;) {
		uint32_t type = prd(s, off + VELO_BLKHDR_TYPE);
		uint32_t next;

		if (off == 0 && type != VELO_ID_MAGIC)
			return probe_err(s, -VELO_CORE_ENODEV, "velo: not a VELO device, ID type ",
					 type);
		for (i = 0; i < PROBE_NBLOCKS; ++i)
			if (type == probe_blocks[i].type)
				base[i] = off;
		next = prd(s, off + VELO_BLKHDR_NEXT);
		if (next == 0)
			return 0;
		if (next <= off || next >= BAR_REGS_BYTES || ++nblk > 16)
			return probe_err(s, -VELO_CORE_ENODEV,
					 "velo: broken register block chain at ", off);
		off = next;
	}
}

int velo_core_probe(const struct velo_core_ops *ops, void *ctx, struct velo_core **out)
{
	struct probe_state s = { .ops = ops, .ctx = ctx };
	uint32_t base[PROBE_NBLOCKS] = { 0 };
	uint32_t missing = 0;
	struct velo_core *c;
	unsigned int i;
	int r;

	if (!ops || !out || !ops->reg_read32 || !ops->reg_write32 || !ops->dma_alloc ||
	    !ops->dma_free || !ops->zalloc || !ops->free || !ops->prf)
		return -VELO_CORE_EINVAL;
	*out = NULL;
	r = probe_walk(&s, base);
	if (r)
		return r;
	for (i = 0; i < PROBE_NBLOCKS; ++i)
		if (!base[i])
			missing |= probe_blocks[i].missing;
	if (missing)
		return probe_err(&s, -VELO_CORE_ENODEV,
				 "velo: register blocks missing, found mask ", 7u & ~missing);
	r = parse_id(&s);
	for (i = 0; !r && i < PROBE_NBLOCKS; ++i) {
		if (!base[i])
			continue;
		s.blk = base[i] - probe_blocks[i].spec;
		r = probe_blocks[i].parse(&s, &s.k, base[i]);
	}
	if (r)
		return r;

	c = (struct velo_core *)ops->zalloc(ctx, sizeof(*c));
	if (!c)
		return -VELO_CORE_ENOMEM;
	c->ops = ops;
	c->ctx = ctx;
	c->caps = s.k;
	c->next_vpid = 0;
	c->policy = VELO_POLICY_JOB;
	c->max_log2 = VELO_MBOX_LOG2_MAX;
	c->max_grants = CORE_DEFAULT_GRANTS;
	if (s.k.rma_base && velo_core_rma_setup(c)) {
		ops->free(ctx, c);
		return -VELO_CORE_ENOMEM;
	}
	*out = c;
	return 0;
}

void velo_core_remove(struct velo_core *c)
{
	unsigned int v;

	if (!c)
		return;
	for (v = 0; v < CORE_MAX_VPIDS; ++v)
		if (c->ep[v])
			velo_core_ep_close(c, v);
	if (c->rma_mem)
		c->ops->free(c->ctx, c->rma_mem);
	c->ops->free(c->ctx, c);
}

const struct velo_core_caps *velo_core_caps(const struct velo_core *c)
{
	return &c->caps;
}

int velo_core_enable(struct velo_core *c, uint32_t node_id)
{
	uint32_t back;

	if (node_id >= (1u << c->caps.node_bits))
		return -VELO_CORE_EINVAL;
	wr(c, reg_ctrl(c, VELO_REG_CTRL_CONTROL), 0);
	wr(c, reg_ctrl(c, VELO_REG_CTRL_NODE_ID), node_id);
	wr(c, reg_ctrl(c, VELO_REG_CTRL_CONTROL),
	   (uint32_t)VELO_FIELD_PREP(VELO_REG_CTRL_CONTROL_ENABLE, 1));
	back = rd(c, reg_ctrl(c, VELO_REG_CTRL_NODE_ID));
	if (back != node_id) {
		velo_core_log(c, VELO_CORE_LOG_ERR, "velo: NODE_ID read back ", back);
		return -VELO_CORE_EIO;
	}
	c->caps.node_id = node_id;
	return 0;
}

int velo_core_write_enable(struct velo_core *c, uint32_t off, uint32_t bit, int on,
			   const char *what)
{
	const uint32_t v = on ? bit : 0;
	uint32_t back;

	wr(c, off, v);
	back = rd(c, off);
	if ((back & bit) != v) {
		velo_core_log(c, VELO_CORE_LOG_ERR, what, back);
		return -VELO_CORE_EIO;
	}
	return 0;
}

void velo_core_refresh(struct velo_core *c)
{
	c->caps.node_id = rd(c, reg_ctrl(c, VELO_REG_CTRL_NODE_ID));
}
