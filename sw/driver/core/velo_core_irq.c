// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * The portable VELO driver core (velo_core.h): mailbox interrupts (the IRQ block).
 */
#include "velo_core_priv.h"

/* ---- interrupts */
int velo_core_irq_enable(struct velo_core *c, int on)
{
	const int r = core_unit(c, irq_base, -VELO_CORE_ENODEV);

	return r ? r : velo_core_write_enable(c, reg_irq(c, VELO_REG_IRQ_CTRL),
					      (uint32_t)VELO_FIELD_MASK(VELO_REG_IRQ_CTRL_ENABLE),
					      on, "velo: IRQ CTRL read back ");
}

int velo_core_irq_arm(struct velo_core *c, unsigned int vpid)
{
	const int r = core_unit(c, irq_base, -VELO_CORE_ENODEV);

	if (r)
		return r;
	if (vpid >= c->caps.num_vpids || vpid >= CORE_MAX_VPIDS)
		return -VELO_CORE_EINVAL;
	const unsigned int data = vpid & ~VELO_CTL_VPID_BIT(c->caps.vpid_bits);
	const struct velo_core_ep *e = c->ep[data];

	if (!e || (e->vpid != vpid && e->ctl_vpid != vpid))
		return -VELO_CORE_ENOENT;
	wr(c, reg_irq(c, VELO_REG_IRQ_ARM), vpid);
	/*
	 * a non-posted read: returns after the arm was performed and after every DMA write the NIC
	 * issued before it (completions do not pass posted writes)
	 */
	(void)rd(c, reg_irq(c, VELO_REG_IRQ_CTRL));
	return 0;
}

int velo_core_irq_collect(struct velo_core *c, void (*cb)(void *, unsigned int), void *ctx)
{
	const int r = core_unit(c, irq_base, -VELO_CORE_ENODEV);
	int n = 0;

	if (r)
		return r;

	for (uint32_t w = 0; w < c->caps.irq_pending_words; ++w) {
		const uint32_t off = c->caps.irq_pending_off + 4 * w;
		uint32_t p = rd(c, off);
		const uint32_t first = 32 * w;
		const uint32_t valid = c->caps.num_vpids - first >= 32 ?
					       0xFFFFFFFFu :
					       (1u << (c->caps.num_vpids - first)) - 1;
		if (p & ~valid) {
			velo_core_log(c, VELO_CORE_LOG_ERR, "velo: IRQ PENDING read failed, word ",
				      w);
			return -VELO_CORE_EIO;
		}
		if (!p)
			continue;
		/* write-1-to-clear what is handled now; later entries set their bits again */
		wr(c, off, p);
		for (unsigned int b = 0; p; ++b, p >>= 1) {
			if (!(p & 1))
				continue;
			++n;
			if (cb)
				cb(ctx, first + b);
		}
	}
	return n;
}
