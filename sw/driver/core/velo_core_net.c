// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The portable VELO driver core (velo_core.h): network control (routes, ports) and status
 * (counters, links, CTRL.STATUS).
 */
#include "velo_core_priv.h"

/* ---- network control, status */
int velo_core_route_set(struct velo_core *c, unsigned int dst_node, int valid, uint32_t route)
{
	if (!c->caps.net_base || !c->caps.route_off)
		return -VELO_CORE_EOPNOTSUPP;
	if (dst_node >= (1u << c->caps.node_bits) ||
	    route >= (1u << VELO_TBL_ROUTE_TABLE_ROUTE_ROUTE_WIDTH))
		return -VELO_CORE_EINVAL;
	const uint32_t v =
		valid ? (uint32_t)(VELO_FIELD_PREP(VELO_TBL_ROUTE_TABLE_ROUTE_VALID, 1) |
				   VELO_FIELD_PREP(VELO_TBL_ROUTE_TABLE_ROUTE_ROUTE, route)) :
			0u;
	wr(c,
	   c->caps.route_off + dst_node * VELO_TBL_ROUTE_TABLE_STRIDE + VELO_TBL_ROUTE_TABLE_ROUTE,
	   v);
	return 0;
}

int velo_core_port_set(struct velo_core *c, unsigned int port, uint32_t cfg)
{
	const uint64_t known = VELO_FIELD_MASK(VELO_TBL_NET_PORT_CFG_DIM) |
			       VELO_FIELD_MASK(VELO_TBL_NET_PORT_CFG_DATELINE);
	if (port < 1 || port > c->caps.nports || (cfg & ~known))
		return -VELO_CORE_EINVAL;
	wr(c, c->caps.port_off + (port - 1) * c->caps.port_stride + VELO_TBL_NET_PORT_CFG, cfg);
	return 0;
}

uint32_t velo_core_counter(const struct velo_core *c, unsigned int i)
{
	if (i >= c->caps.num_counters)
		return 0;
	return rd(c, c->caps.counters_base - VELO_BLK_COUNTERS_BASE +
			     VELO_REG_COUNTERS_COUNTER_BASE + 4u * i);
}

uint32_t velo_core_link_status(const struct velo_core *c)
{
	if (!c->caps.net_base || !c->caps.nports)
		return 0;
	const uint32_t s = rd(c, c->caps.net_base - VELO_BLK_NET_BASE + VELO_REG_NET_LINK_STATUS);

	return c->caps.nports >= 32 ? s : s & ((1u << c->caps.nports) - 1u);
}

uint32_t velo_core_status(const struct velo_core *c)
{
	return rd(c, reg_ctrl(c, VELO_REG_CTRL_STATUS));
}
