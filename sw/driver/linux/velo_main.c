// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * VELO Linux driver: PCI probe and remove, the "velo" class, module parameters, and the ops
 * table through which the portable driver core (sw/driver/core) reaches the NIC's registers and
 * DMA memory. The character device is in velo_file.c, the sysfs attributes in velo_sysfs.c.
 *
 * Design notes (docs/driver.md has the user's view):
 *  - BAR0 holds the register file: mapped uncached here, and one 4 KiB user page per vpid is
 *    mapped into its owner. BAR2 is the send window (one page per source vpid, destination node
 *    and vpid), made write-combining with the PAT memtype (arch_io_reserve_memtype_wc) or, on a
 *    system without PAT, a write-combining MTRR (arch_phys_wc_add) as in the VELO paper. BAR4,
 *    the RMA command window, is made write-combining the same way; an endpoint maps its own
 *    vpid's page of it (velo_file.c).
 *  - vdev->lock serialises every call into the core (which is not thread-safe), including the
 *    interrupt, which therefore runs threaded.
 *  - A struct velo_dev lives as long as its struct device: open files hold references, so the
 *    PCI device can go away under open files; everything they do then fails with -ENODEV.
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/capability.h>
#include <linux/pci.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/vmalloc.h>
#ifdef CONFIG_X86
#include <asm/memtype.h>
#endif

#include "velo/velo_hw.h"
#include "velo/velo_uapi.h"
#include "velo_drv.h"

/* ---- module parameters */
static int node_id[VELO_MAX_DEVS] = { [0 ... VELO_MAX_DEVS - 1] = -1 };
module_param_array(node_id, int, NULL, 0444);
MODULE_PARM_DESC(node_id,
		 "CTRL.NODE_ID per NIC, indexed by N of /dev/veloN (-1, the default: keep what the NIC holds)");

static unsigned int grant_policy = VELO_POLICY_JOB;
static const char *const velo_policy_names[] = {
	[VELO_POLICY_OPEN] = "open",
	[VELO_POLICY_JOB] = "job",
	[VELO_POLICY_STRICT] = "strict",
};

static int velo_policy_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(velo_policy_names, val);

	if (i < 0)
		return -EINVAL;
	*(unsigned int *)kp->arg = i;
	return 0;
}

static int velo_policy_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%s\n", velo_policy_names[*(unsigned int *)kp->arg]);
}

static const struct kernel_param_ops velo_policy_ops = {
	.set = velo_policy_set,
	.get = velo_policy_get,
};
module_param_cb(grant_policy, &velo_policy_ops, &grant_policy, 0444);
MODULE_PARM_DESC(grant_policy,
		 "Which destinations an endpoint may be granted: open, job (default) or strict (see docs/driver.md)");

static bool use_irq = true;
module_param(use_irq, bool, 0444);
MODULE_PARM_DESC(use_irq, "Sleep on the NIC's MSI-X/MSI interrupt (default Y); N: re-check every poll_interval_us");

static unsigned int poll_interval_us = 1000;
module_param(poll_interval_us, uint, 0444);
MODULE_PARM_DESC(poll_interval_us, "Without an interrupt: how often sleepers re-check their rings, in us (default 1000)");

static unsigned int max_ring_log2 = VELO_MBOX_LOG2_MAX;
module_param(max_ring_log2, uint, 0444);
MODULE_PARM_DESC(max_ring_log2, "Largest mailbox ring an endpoint may ask for, log2 of 64-byte lines (6..16, default 16: 4 MiB)");

static unsigned int max_grants = 1024;
module_param(max_grants, uint, 0444);
MODULE_PARM_DESC(max_grants, "Send-window pages one endpoint may hold (1..4096, default 1024)");

static struct class *velo_class;
static dev_t velo_devt;
static DEFINE_IDA(velo_ida);

/* ---- the core's ops */
static u32 velo_op_rd(void *ctx, u32 off)
{
	struct velo_dev *vdev = ctx;

	if ((off & 3) || off > vdev->regs_len - 4)
		return ~0u;
	return ioread32(vdev->regs + off);
}

static void velo_op_wr(void *ctx, u32 off, u32 v)
{
	struct velo_dev *vdev = ctx;

	if ((off & 3) || off > vdev->regs_len - 4)
		return;
	iowrite32(v, vdev->regs + off);
}

/*
 * Rings and notification queues, allocated in an ioctl of the process that will map them: its
 * memory, charged like registered pages to its pinned_vm against RLIMIT_MEMLOCK (NULL, so
 * ENOMEM, beyond it without CAP_IPC_LOCK) and to its memory cgroup (__GFP_ACCOUNT).
 */
static void *velo_op_dma_alloc(void *ctx, size_t size, u64 *dma, void **cookie)
{
	struct velo_dev *vdev = ctx;
	struct velo_dmabuf *b = kzalloc(sizeof(*b), GFP_KERNEL);
	struct mm_struct *mm = current->mm;
	unsigned long pages = PAGE_ALIGN(size) >> PAGE_SHIFT;

	if (!b)
		return NULL;
	if (mm) {
		if (atomic64_add_return(pages, &mm->pinned_vm) > rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT &&
		    !capable(CAP_IPC_LOCK)) {
			atomic64_sub(pages, &mm->pinned_vm);
			kfree(b);
			return NULL;
		}
		mmgrab(mm);
		b->mm = mm;
		b->charged = pages;
	}
	b->cpu = dma_alloc_coherent(&vdev->pdev->dev, size, &b->dma, GFP_KERNEL | __GFP_ACCOUNT);
	if (!b->cpu) {
		if (b->mm) {
			atomic64_sub(b->charged, &b->mm->pinned_vm);
			mmdrop(b->mm);
		}
		kfree(b);
		return NULL;
	}
	b->size = size;
	b->vdev = vdev;
	mutex_lock(&vdev->buf_lock);
	list_add_tail(&b->node, &vdev->bufs);
	mutex_unlock(&vdev->buf_lock);
	*dma = b->dma;
	*cookie = b;
	return b->cpu;
}

/* Free a buffer nobody maps and the core has let go of. buf_lock held. */
static void velo_buf_destroy(struct velo_dmabuf *b)
{
	if (b->cpu)
		dma_free_coherent(&b->vdev->pdev->dev, b->size, b->cpu, b->dma);
	if (b->mm) {
		atomic64_sub(b->charged, &b->mm->pinned_vm);
		mmdrop(b->mm);
	}
	list_del(&b->node);
	kfree(b);
}

static void velo_op_dma_free(void *ctx, void *cpu, size_t size, u64 dma, void *cookie)
{
	struct velo_dev *vdev = ctx;
	struct velo_dmabuf *b = cookie;

	mutex_lock(&vdev->buf_lock);
	b->core_done = true;
	/* still mapped (a reclaimed endpoint's process): freed by the last munmap */
	if (!b->maps)
		velo_buf_destroy(b);
	mutex_unlock(&vdev->buf_lock);
}

void velo_buf_map(struct velo_dmabuf *b)
{
	mutex_lock(&b->vdev->buf_lock);
	b->maps++;
	mutex_unlock(&b->vdev->buf_lock);
}

void velo_buf_unmap(struct velo_dmabuf *b)
{
	struct velo_dev *vdev = b->vdev;

	mutex_lock(&vdev->buf_lock);
	if (!--b->maps && b->core_done)
		velo_buf_destroy(b);
	mutex_unlock(&vdev->buf_lock);
}

static void *velo_op_zalloc(void *ctx, size_t size)
{
	return kvzalloc(size, GFP_KERNEL);
}

static void velo_op_free(void *ctx, void *p)
{
	kvfree(p);
}

static void velo_op_log(void *ctx, int level, const char *msg)
{
	struct velo_dev *vdev = ctx;

	if (!strncmp(msg, "velo: ", 6))
		msg += 6;
	/* probe: every line, the test of a bad device depends on them */
	if (!vdev->core) {
		if (level == VELO_CORE_LOG_ERR)
			dev_err(&vdev->pdev->dev, "%s\n", msg);
		else if (level == VELO_CORE_LOG_WARN)
			dev_warn(&vdev->pdev->dev, "%s\n", msg);
		else
			dev_info(&vdev->pdev->dev, "%s\n", msg);
		return;
	}
	/* after it, unprivileged calls reach some of these (a NIC that never quiesces) */
	if (level == VELO_CORE_LOG_ERR)
		dev_err_ratelimited(&vdev->pdev->dev, "%s\n", msg);
	else if (level == VELO_CORE_LOG_WARN)
		dev_warn_ratelimited(&vdev->pdev->dev, "%s\n", msg);
	else
		dev_info_ratelimited(&vdev->pdev->dev, "%s\n", msg);
}

/*
 * Between two reads of QUIESCE_STATUS: the core reads it at most 100000 times, so a NIC that
 * never drains costs about a second, then the rings are leaked rather than reused; after that
 * the core is wedged and polls 1000 times (about 10 ms) per vpid, and a device that reads all ones and is no
 * longer present ends every poll at once (velo_op_present).
 */
static void velo_op_relax(void *ctx)
{
	usleep_range(5, 10);
}

static int velo_op_present(void *ctx)
{
	struct velo_dev *vdev = ctx;

	return pci_device_is_present(vdev->pdev);
}

static void velo_rma_unpin(void *ctx, void *pin)
{
	velo_region_unpin(pin);
}

/* the core's PRF: SipHash-2-4 keyed with the device's secret (region keys, velo_core.h) */
static u64 velo_op_prf(void *ctx, u64 a, u64 b)
{
	struct velo_dev *vdev = ctx;

	return siphash_2u64(a, b, &vdev->key_secret);
}

static const struct velo_core_ops velo_core_ops = {
	.reg_read32 = velo_op_rd,
	.reg_write32 = velo_op_wr,
	.dma_alloc = velo_op_dma_alloc,
	.dma_free = velo_op_dma_free,
	.zalloc = velo_op_zalloc,
	.free = velo_op_free,
	.log = velo_op_log,
	.relax = velo_op_relax,
	.prf = velo_op_prf,
};

/* ---- interrupt: threaded, as it needs vdev->lock to call the core */
static void velo_irq_wake(void *ctx, unsigned int vpid)
{
	struct velo_dev *vdev = ctx;
	const struct velo_core_caps *k = velo_core_caps(vdev->core);
	unsigned int data = vpid & ~VELO_CTL_VPID_BIT(k->vpid_bits);

	if (data < ARRAY_SIZE(vdev->vpid_file) && vdev->vpid_file[data])
		velo_file_wake(vdev->vpid_file[data]);
}

static irqreturn_t velo_irq_thread(int irq, void *data)
{
	struct velo_dev *vdev = data;

	mutex_lock(&vdev->lock);
	if (!vdev->gone && vdev->core)
		velo_core_irq_collect(vdev->core, velo_irq_wake, vdev);
	mutex_unlock(&vdev->lock);
	return IRQ_HANDLED;
}

/* ---- no interrupt: poll() sleepers are woken now and then to re-check */
static void velo_tick(struct timer_list *t)
{
	struct velo_dev *vdev = container_of(t, struct velo_dev, tick);

	wake_up_interruptible_all(&vdev->tick_wq);
}

const char *velo_wc_mode(const struct velo_dev *vdev)
{
	if (!vdev->win_ok)
		return "none";
#ifdef CONFIG_X86
	if (pat_enabled())
		return vdev->wc_memtype ? "pat" : "none";
	return arch_phys_wc_index(vdev->wc_handle) >= 0 ? "mtrr" : "none";
#else
	return "pat";	/* the page-table attribute of pgprot_writecombine() */
#endif
}

/*
 * Close the endpoint owning vpid on root's request: its BAR pages are zapped first (no more
 * sends, no more read-pointer writes), then the core quiesces the vpids; the rings stay mapped
 * (and allocated) until the process unmaps them.
 */
int velo_reclaim_vpid(struct velo_dev *vdev, unsigned int vpid)
{
	const struct velo_core_caps *k;
	struct velo_file *f;
	unsigned int data;
	int r;

	mutex_lock(&vdev->lock);
	if (vdev->gone) {
		r = -ENODEV;
		goto out;
	}
	k = velo_core_caps(vdev->core);
	data = vpid & ~VELO_CTL_VPID_BIT(k->vpid_bits);
	r = -ENOENT;
	if (vpid >= k->num_vpids || data >= ARRAY_SIZE(vdev->vpid_file) || !velo_core_ep_find(vdev->core, data))
		goto out;
	f = vdev->vpid_file[data];
	if (f)
		velo_file_zap(f, false);
	/* regions are released too: quiesced, then unpinned */
	mutex_lock(&vdev->rma_lock);
	r = velo_core_reclaim(vdev->core, data, NULL);
	mutex_unlock(&vdev->rma_lock);
	vdev->vpid_file[data] = NULL;
	if (f)
		velo_file_wake(f);
	dev_info(&vdev->pdev->dev, "vpid %u (pid %u) reclaimed by the administrator%s\n", data,
		 f ? f->cl.pid : 0, r == -ETIMEDOUT ? "; it never quiesced, its rings are leaked" : "");
	if (r == -ETIMEDOUT)
		r = 0;
out:
	mutex_unlock(&vdev->lock);
	return r;
}

/* ---- PCI */
static void velo_dev_release(struct device *dev)
{
	struct velo_dev *vdev = to_vdev(dev);

	flush_work(&vdev->unpin_work);
	if (vdev->srcu_ok)
		cleanup_srcu_struct(&vdev->srcu);
	mutex_destroy(&vdev->lock);
	mutex_destroy(&vdev->rma_lock);
	mutex_destroy(&vdev->buf_lock);
	pci_dev_put(vdev->pdev);
	memzero_explicit(&vdev->key_secret, sizeof(vdev->key_secret));
	kfree(vdev);
}

/* Undo velo_setup_windows (the BAR claims are devres-managed); safe to call twice. */
static void velo_release_windows(struct velo_dev *vdev)
{
	if (vdev->rma_len) {
		arch_phys_wc_del(vdev->rma_wc_handle);
		if (vdev->rma_wc_memtype)
			arch_io_free_memtype_wc(vdev->rma_start, vdev->rma_len);
		vdev->rma_len = 0;
		vdev->rma_wc_handle = 0;
		vdev->rma_wc_memtype = false;
	}
	if (!vdev->win_ok)
		return;
	arch_phys_wc_del(vdev->wc_handle);
	if (vdev->wc_memtype)
		arch_io_free_memtype_wc(vdev->win_start, vdev->win_len);
	vdev->win_ok = false;
	vdev->wc_handle = 0;
	vdev->wc_memtype = false;
}

/*
 * BAR2 (send window) and BAR4 (RMA window). A BAR2 too small for the window of this design
 * (2^(12 + 2 * VPID_BITS + NODE_BITS) bytes) leaves the NIC usable for everything but sending.
 */
static int velo_setup_windows(struct velo_dev *vdev)
{
	struct pci_dev *pdev = vdev->pdev;
	const struct velo_core_caps *k = &vdev->caps;
	u64 need = 1ULL << (VELO_PAGE_BITS + 2 * k->vpid_bits + k->node_bits);

	vdev->win_start = pci_resource_start(pdev, VELO_BAR_SEND);
	vdev->win_len = pci_resource_len(pdev, VELO_BAR_SEND);
	if (!(pci_resource_flags(pdev, VELO_BAR_SEND) & IORESOURCE_MEM) || vdev->win_len < need) {
		dev_warn(&pdev->dev,
			 "BAR2 %pR cannot hold the send window (%llu bytes for %u node and %u vpid bits): sending is disabled\n",
			 &pdev->resource[VELO_BAR_SEND], need, k->node_bits, k->vpid_bits);
		vdev->win_ok = false;
	} else {
		if (!devm_request_mem_region(&pdev->dev, vdev->win_start, vdev->win_len, VELO_DRV_NAME)) {
			dev_err(&pdev->dev, "BAR2 %pR is in use\n", &pdev->resource[VELO_BAR_SEND]);
			return -EBUSY;
		}
		vdev->win_ok = true;
		/* PAT: the window's memtype is WC, so every page faulted in maps WC */
		vdev->wc_memtype = !arch_io_reserve_memtype_wc(vdev->win_start, vdev->win_len);
		/* no PAT: a write-combining MTRR over the BAR, the paper's mechanism (no-op with PAT) */
		vdev->wc_handle = arch_phys_wc_add(vdev->win_start, vdev->win_len);
		if (!strcmp(velo_wc_mode(vdev), "none"))
			dev_warn(&pdev->dev, "the send window is not write-combining (memtype %d, MTRR %d): messages will fragment\n",
				 vdev->wc_memtype, vdev->wc_handle);
	}
	if ((pci_resource_flags(pdev, VELO_BAR_RMA) & IORESOURCE_MEM) && pci_resource_len(pdev, VELO_BAR_RMA)) {
		vdev->rma_start = pci_resource_start(pdev, VELO_BAR_RMA);
		vdev->rma_len = pci_resource_len(pdev, VELO_BAR_RMA);
		if (!devm_request_mem_region(&pdev->dev, vdev->rma_start, vdev->rma_len, VELO_DRV_NAME)) {
			dev_err(&pdev->dev, "BAR4 %pR is in use\n", &pdev->resource[VELO_BAR_RMA]);
			vdev->rma_start = 0;
			vdev->rma_len = 0;
			velo_release_windows(vdev);	/* BAR2's memtype and MTRR */
			return -EBUSY;
		}
		/* commands are single 32-byte write-combined bursts (docs/rma.md §1) */
		vdev->rma_wc_memtype = !arch_io_reserve_memtype_wc(vdev->rma_start, vdev->rma_len);
		vdev->rma_wc_handle = arch_phys_wc_add(vdev->rma_start, vdev->rma_len);
	}
	return 0;
}

static void velo_setup_irq(struct velo_dev *vdev)
{
	struct pci_dev *pdev = vdev->pdev;
	int r;

	vdev->irq = -1;
	if (!use_irq)
		return;
	r = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSIX | PCI_IRQ_MSI);
	if (r < 0) {
		dev_info(&pdev->dev, "no MSI-X/MSI vector (%d): sleepers re-check every %u us\n", r,
			 poll_interval_us);
		return;
	}
	r = request_threaded_irq(pci_irq_vector(pdev, 0), NULL, velo_irq_thread, IRQF_ONESHOT, VELO_DRV_NAME,
				 vdev);
	if (r) {
		dev_warn(&pdev->dev, "cannot request the interrupt (%d): sleepers re-check every %u us\n", r,
			 poll_interval_us);
		pci_free_irq_vectors(pdev);
		return;
	}
	vdev->irq = pci_irq_vector(pdev, 0);
}

static void velo_release_irq(struct velo_dev *vdev)
{
	if (vdev->irq < 0)
		return;
	free_irq(vdev->irq, vdev);
	pci_free_irq_vectors(vdev->pdev);
	vdev->irq = -1;
}

static int velo_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct velo_dev *vdev;
	int nid, r;

	vdev = kzalloc(sizeof(*vdev), GFP_KERNEL);
	if (!vdev)
		return -ENOMEM;
	/* from here on the reference count owns vdev: the last put_device frees it */
	device_initialize(&vdev->dev);
	vdev->dev.release = velo_dev_release;
	vdev->pdev = pci_dev_get(pdev);
	vdev->irq = -1;
	vdev->minor = -1;
	mutex_init(&vdev->lock);
	mutex_init(&vdev->rma_lock);
	mutex_init(&vdev->buf_lock);
	INIT_LIST_HEAD(&vdev->files);
	INIT_LIST_HEAD(&vdev->bufs);
	INIT_LIST_HEAD(&vdev->regions);
	INIT_LIST_HEAD(&vdev->unpin_list);
	spin_lock_init(&vdev->unpin_list_lock);
	INIT_WORK(&vdev->unpin_work, velo_unpin_work);
	init_waitqueue_head(&vdev->tick_wq);
	timer_setup(&vdev->tick, velo_tick, 0);
	vdev->tick_jiffies = max(1UL, usecs_to_jiffies(poll_interval_us));
	r = init_srcu_struct(&vdev->srcu);
	if (r)
		goto err_free;
	vdev->srcu_ok = true;

	r = pcim_enable_device(pdev);
	if (r) {
		dev_err(&pdev->dev, "cannot enable the device (%d)\n", r);
		goto err_free;
	}
	if (!(pci_resource_flags(pdev, VELO_BAR_REGS) & IORESOURCE_MEM) || pci_resource_len(pdev, VELO_BAR_REGS) < 4) {
		dev_err(&pdev->dev, "not a VELO device: BAR0 %pR is no memory BAR\n", &pdev->resource[VELO_BAR_REGS]);
		r = -ENODEV;
		goto err_free;
	}
	r = pcim_iomap_regions(pdev, BIT(VELO_BAR_REGS), VELO_DRV_NAME);
	if (r) {
		dev_err(&pdev->dev, "cannot claim and map BAR0 %pR (%d)\n", &pdev->resource[VELO_BAR_REGS], r);
		goto err_free;
	}
	vdev->regs = pcim_iomap_table(pdev)[VELO_BAR_REGS];
	vdev->regs_len = pci_resource_len(pdev, VELO_BAR_REGS);

	/* the secret region keys derive from (the RNG may not be fully seeded yet: wait for it) */
	r = wait_for_random_bytes();
	if (r)
		goto err_free;
	get_random_bytes(&vdev->key_secret, sizeof(vdev->key_secret));
	/* the ID block, the block chain and SPEC_HASH: refuse anything but a NIC of this spec */
	r = velo_core_probe(&velo_core_ops, vdev, &vdev->core);
	if (r == -EPROTO) {
		dev_err(&pdev->dev,
			"incompatible bitstream: SPEC_HASH 0x%08x, design version 0x%08x; this driver speaks spec 0x%08x (version 0x%x). Load a bitstream and a driver built from the same spec/velo_spec.json\n",
			ioread32(vdev->regs + VELO_REG_ID_SPEC_HASH), ioread32(vdev->regs + VELO_REG_ID_DESIGN_VERSION),
			(u32)VELO_SPEC_HASH, (u32)VELO_SPEC_VERSION);
		goto err_free;
	} else if (r) {
		dev_err(&pdev->dev, "BAR0 %pR is not a VELO register file (%d): refusing the device\n",
			&pdev->resource[VELO_BAR_REGS], r);
		goto err_free;
	}
	vdev->caps = *velo_core_caps(vdev->core);
	velo_core_set_rma_unpin(vdev->core, velo_rma_unpin);
	velo_core_set_present(vdev->core, velo_op_present);
	/* user pages are mapped into processes: the device must not name a page's middle */
	if (!PAGE_ALIGNED(vdev->caps.user_off) || !PAGE_ALIGNED(vdev->caps.user_stride)) {
		dev_err(&pdev->dev, "implausible VPID block: user pages at 0x%x, stride 0x%x, are not page aligned\n",
			vdev->caps.user_off, vdev->caps.user_stride);
		r = -ENODEV;
		goto err_core;
	}
	if (vdev->regs_len < (1UL << VELO_BAR_REGS_BITS)) {
		dev_err(&pdev->dev, "BAR0 %pR is smaller than the %lu KiB register file\n",
			&pdev->resource[VELO_BAR_REGS], (1UL << VELO_BAR_REGS_BITS) >> 10);
		r = -ENODEV;
		goto err_core;
	}

	r = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (r) {
		r = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(32));
		if (r) {
			dev_err(&pdev->dev, "no usable DMA mask (%d)\n", r);
			goto err_core;
		}
		dev_info(&pdev->dev, "64-bit DMA unavailable, mailboxes live below 4 GiB\n");
	}

	r = velo_setup_windows(vdev);
	if (r)
		goto err_core;
	pci_set_master(pdev);

	r = ida_alloc_max(&velo_ida, VELO_MAX_DEVS - 1, GFP_KERNEL);
	if (r < 0) {
		dev_err(&pdev->dev, "more than %d VELO devices\n", VELO_MAX_DEVS);
		goto err_windows;
	}
	vdev->minor = r;

	/* bring-up: the node id stamped into every packet is set here, never by users */
	nid = node_id[vdev->minor] >= 0 ? node_id[vdev->minor] : (int)vdev->caps.node_id;
	r = velo_core_enable(vdev->core, nid);
	if (r) {
		dev_err(&pdev->dev, "cannot set node id %d (%d; the NIC has %u node bits)\n", nid, r,
			vdev->caps.node_bits);
		goto err_ida;
	}
	vdev->caps = *velo_core_caps(vdev->core);
	if (vdev->caps.rma_base) {
		r = velo_core_rma_enable(vdev->core, 1);
		if (r)
			dev_warn(&pdev->dev, "cannot enable the RMA unit (%d): RMA commands end in DISABLED\n", r);
	}
	r = velo_core_set_policy(vdev->core, grant_policy);
	if (!r)
		r = velo_core_set_limits(vdev->core, max_ring_log2, max_grants);
	if (r)
		goto err_ida;

	velo_setup_irq(vdev);
	if (vdev->irq >= 0) {
		mutex_lock(&vdev->lock);
		r = velo_core_irq_enable(vdev->core, 1);
		mutex_unlock(&vdev->lock);
		if (r) {
			dev_warn(&pdev->dev, "the NIC has no usable interrupt block (%d): sleepers re-check every %u us\n",
				 r, poll_interval_us);
			velo_release_irq(vdev);
		}
	}

	vdev->dev.class = velo_class;
	vdev->dev.parent = &pdev->dev;
	vdev->dev.devt = MKDEV(MAJOR(velo_devt), vdev->minor);
	r = dev_set_name(&vdev->dev, "velo%d", vdev->minor);
	if (!r) {
		cdev_init(&vdev->cdev, &velo_fops);
		vdev->cdev.owner = THIS_MODULE;
		r = cdev_device_add(&vdev->cdev, &vdev->dev);
	}
	if (r) {
		dev_err(&pdev->dev, "cannot create /dev/velo%d (%d)\n", vdev->minor, r);
		goto err_irq;
	}
	pci_set_drvdata(pdev, vdev);
	dev_info(&pdev->dev,
		 "velo%d: node %u, %u node bits, %u vpids, design 0x%08x, spec 0x%08x, %u ports, policy %s, window %s, %s\n",
		 vdev->minor, vdev->caps.node_id, vdev->caps.node_bits, vdev->caps.num_vpids, vdev->caps.design_version,
		 vdev->caps.spec_hash, vdev->caps.nports, velo_policy_names[grant_policy], velo_wc_mode(vdev),
		 vdev->irq >= 0 ? "interrupt" : "timer wakeups");
	return 0;

err_irq:
	velo_core_disable(vdev->core);	/* IRQ, RMA and NIC off before the vector goes */
	velo_release_irq(vdev);
err_ida:
	velo_core_disable(vdev->core);	/* velo_core_enable may have turned it on */
	ida_free(&velo_ida, vdev->minor);
err_windows:
	pci_clear_master(pdev);
	velo_release_windows(vdev);
err_core:
	velo_core_remove(vdev->core);
	vdev->core = NULL;
err_free:
	put_device(&vdev->dev); /* velo_dev_release: the locks, the pci_dev reference, vdev */
	return r;
}

/*
 * The device goes (unbind, hot unplug, rmmod) with files possibly open:
 *  1. no new opens; gone = true, every mapping zapped, every sleeper woken;
 *  2. synchronize_srcu: every file operation in flight has returned (all see gone from now on);
 *  3. interrupt, RMA unit and NIC off, the vector freed;
 *  4. every endpoint and region quiesced and released (each poll ends at once if the device
 *     reads all ones and is gone; a NIC that never drains wedges the core, see velo_op_relax);
 *  5. bus mastering off: nothing the NIC never released can be reached by DMA any more, so
 *     leaked rings are freed and STUCK regions unpinned.
 */
static void velo_remove(struct pci_dev *pdev)
{
	struct velo_dev *vdev = pci_get_drvdata(pdev);
	struct velo_dmabuf *b, *tmp;
	struct velo_file *f;

	cdev_device_del(&vdev->cdev, &vdev->dev);

	mutex_lock(&vdev->lock);
	vdev->gone = true;
	list_for_each_entry(f, &vdev->files, node) {
		velo_file_zap(f, true);
		velo_file_wake(f);
	}
	mutex_unlock(&vdev->lock);
	synchronize_srcu(&vdev->srcu);

	mutex_lock(&vdev->lock);
	velo_core_disable(vdev->core);
	mutex_unlock(&vdev->lock);
	velo_release_irq(vdev);
	velo_timer_delete_sync(&vdev->tick);

	mutex_lock(&vdev->lock);
	memset(vdev->vpid_file, 0, sizeof(vdev->vpid_file));
	mutex_lock(&vdev->rma_lock);
	velo_core_remove(vdev->core);	/* regions quiesced and unpinned (STUCK ones keep pins) */
	vdev->core = NULL;
	mutex_unlock(&vdev->rma_lock);
	mutex_unlock(&vdev->lock);

	pci_clear_master(pdev);
	velo_regions_sweep(vdev);
	mutex_lock(&vdev->buf_lock);
	list_for_each_entry_safe(b, tmp, &vdev->bufs, node) {
		if (b->cpu)
			dma_free_coherent(&pdev->dev, b->size, b->cpu, b->dma);
		b->cpu = NULL;
		b->core_done = true;
		if (!b->maps)
			velo_buf_destroy(b);
	}
	mutex_unlock(&vdev->buf_lock);

	velo_release_windows(vdev);
	ida_free(&velo_ida, vdev->minor);
	pci_set_drvdata(pdev, NULL);
	put_device(&vdev->dev);
}

/*
 * Reboot, kexec, power off: the NIC must not write into memory the next kernel owns. Stop it
 * and bus mastering; files see the device as gone. Nothing is freed (remove is not called).
 */
static void velo_shutdown(struct pci_dev *pdev)
{
	struct velo_dev *vdev = pci_get_drvdata(pdev);
	struct velo_file *f;

	if (!vdev)
		return;
	mutex_lock(&vdev->lock);
	if (!vdev->gone) {
		vdev->gone = true;
		list_for_each_entry(f, &vdev->files, node)
			velo_file_wake(f);
		velo_core_disable(vdev->core);
	}
	mutex_unlock(&vdev->lock);
	pci_clear_master(pdev);
	dev_dbg(&pdev->dev, "shutdown: NIC and bus mastering off\n");
}

static const struct pci_device_id velo_pci_ids[] = {
	{ PCI_DEVICE(VELO_PCI_VENDOR_ID, VELO_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, velo_pci_ids);

static struct pci_driver velo_pci_driver = {
	.name = VELO_DRV_NAME,
	.id_table = velo_pci_ids,
	.probe = velo_probe,
	.remove = velo_remove,
	.shutdown = velo_shutdown,
};

static int __init velo_init(void)
{
	int r;

	if (PAGE_SIZE != 4096) {
		pr_err("velo: the NIC's windows have 4 KiB pages; this kernel has %lu-byte pages\n", PAGE_SIZE);
		return -EINVAL;
	}
	if (max_ring_log2 < VELO_RING_LOG2_MIN || max_ring_log2 > VELO_MBOX_LOG2_MAX || max_grants < 1 ||
	    max_grants > 4096 || !poll_interval_us) {
		pr_err("velo: bad module parameter (max_ring_log2 %u: %d..%d, max_grants %u: 1..4096, poll_interval_us %u: > 0)\n",
		       max_ring_log2, VELO_RING_LOG2_MIN, VELO_MBOX_LOG2_MAX, max_grants, poll_interval_us);
		return -EINVAL;
	}
	r = alloc_chrdev_region(&velo_devt, 0, VELO_MAX_DEVS, VELO_DRV_NAME);
	if (r)
		return r;
#ifdef class_create /* before 6.4, a macro that takes the owning module */
	velo_class = class_create(THIS_MODULE, VELO_DRV_NAME);
#else
	velo_class = class_create(VELO_DRV_NAME);
#endif
	if (IS_ERR(velo_class)) {
		r = PTR_ERR(velo_class);
		goto err_region;
	}
	velo_class->dev_groups = velo_dev_groups;
	r = pci_register_driver(&velo_pci_driver);
	if (r)
		goto err_class;
	return 0;

err_class:
	class_destroy(velo_class);
err_region:
	unregister_chrdev_region(velo_devt, VELO_MAX_DEVS);
	return r;
}

static void __exit velo_exit(void)
{
	pci_unregister_driver(&velo_pci_driver);
	class_destroy(velo_class);
	unregister_chrdev_region(velo_devt, VELO_MAX_DEVS);
	ida_destroy(&velo_ida);
}

module_init(velo_init);
module_exit(velo_exit);

MODULE_DESCRIPTION("VELO low-latency cluster interconnect NIC");
MODULE_AUTHOR("The VELO project");
MODULE_LICENSE("Dual MIT/GPL");
