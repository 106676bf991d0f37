// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * velo.ko: RMA regions of a file (docs/driver.md, "RMA"): pinning and DMA mapping of registered
 * memory, the MMU interval notifier that withdraws a translation, and the REGISTER, DEREGISTER
 * and REPIN ioctls. The file operations are in velo_file.c.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/uidgid.h>
#include <linux/wait.h>

#include "velo/velo_hw.h"
#include "velo/velo_uapi.h"
#include "velo_drv.h"

/* ---- RMA regions */

/*
 * The pins of one VALID phase of a region: pinned pages, their scatter-gather table mapped for
 * DMA, the pinned_vm charge; the region's pin while the core holds it VALID. The core's
 * rma_unpin op (velo_region_unpin) unmaps the DMA at once and leaves the unpinning to a worker.
 */
struct velo_pin {
	struct list_head node;	/* velo_dev.unpin_list */
	struct mm_struct *mm;	/* mmgrab()ed */
	struct page **pages;	/* [npages] */
	unsigned long npages, npinned;
	struct sg_table sgt;
	bool has_sgt, mapped, charged, writable;
};

static enum dma_data_direction velo_pin_dir(const struct velo_pin *p)
{
	return p->writable ? DMA_BIDIRECTIONAL : DMA_TO_DEVICE;
}

/*
 * Undo what velo_region_pin took, in process context with no lock held (the page lock of
 * unpin_user_pages_dirty_lock may be taken: never inside an MMU notifier) and free the pin.
 */
static void velo_pin_free(struct velo_dev *vdev, struct velo_pin *p)
{
	if (p->mapped)
		dma_unmap_sgtable(&vdev->pdev->dev, &p->sgt, velo_pin_dir(p), 0);
	if (p->has_sgt)
		sg_free_table(&p->sgt);
	if (p->npinned)
		unpin_user_pages_dirty_lock(p->pages, p->npinned, p->writable);
	if (p->charged)
		atomic64_sub(p->npages, &p->mm->pinned_vm);
	mmdrop(p->mm);
	kvfree(p->pages);
	kfree(p);
}

/* the worker: unpin (and dirty, with the page lock) what the NIC let go of */
void velo_unpin_work(struct work_struct *w)
{
	struct velo_dev *vdev = container_of(w, struct velo_dev, unpin_work);
	struct velo_pin *p, *tmp;
	LIST_HEAD(todo);

	spin_lock(&vdev->unpin_list_lock);
	list_splice_init(&vdev->unpin_list, &todo);
	spin_unlock(&vdev->unpin_list_lock);
	list_for_each_entry_safe(p, tmp, &todo, node) {
		list_del(&p->node);
		velo_pin_free(vdev, p);
	}
}

static void velo_region_free(struct velo_region *rg)
{
	mmdrop(rg->mm);
	kvfree(rg->pfns);
	kfree(rg);
}

/*
 * The core's rma_unpin op, and the sweep at remove: the NIC holds no translation of the pages
 * any more (quiesced, or bus mastering is off). rma_lock held, possibly inside an MMU notifier:
 * the DMA mapping goes now, the pages are unpinned and dirtied later by the worker. A region no
 * file holds any more is freed with its last pin.
 */
void velo_region_unpin(struct velo_region *rg)
{
	struct velo_dev *vdev = rg->vdev;
	struct velo_pin *p = rg->pin;

	if (!p)
		return;
	rg->pin = NULL;
	dma_unmap_sgtable(&vdev->pdev->dev, &p->sgt, velo_pin_dir(p), 0);
	p->mapped = false;
	spin_lock(&vdev->unpin_list_lock);
	list_add_tail(&p->node, &vdev->unpin_list);
	spin_unlock(&vdev->unpin_list_lock);
	queue_work(system_unbound_wq, &vdev->unpin_work);
	if (rg->orphan) {
		list_del(&rg->dev_node);
		velo_region_free(rg);
	}
}

/* Remove, bus mastering off: what the NIC never released (STUCK) can go now. */
void velo_regions_sweep(struct velo_dev *vdev)
{
	struct velo_region *rg, *tmp;

	mutex_lock(&vdev->rma_lock);
	list_for_each_entry_safe(rg, tmp, &vdev->regions, dev_node) {
		if (rg->pin) {
			dev_warn(&vdev->pdev->dev, "RMA region %u: unpinned at removal (the NIC never released it)\n",
				 rg->idx);
			velo_region_unpin(rg);	/* frees an orphan */
		}
	}
	mutex_unlock(&vdev->rma_lock);
	flush_work(&vdev->unpin_work);
}

static const char *const velo_mn_event_names[VELO_MN_EVENTS] = {
	[MMU_NOTIFY_UNMAP] = "unmap",
	[MMU_NOTIFY_CLEAR] = "clear",
	[MMU_NOTIFY_PROTECTION_VMA] = "protection_vma",
	[MMU_NOTIFY_PROTECTION_PAGE] = "protection_page",
	[MMU_NOTIFY_SOFT_DIRTY] = "soft_dirty",
	[MMU_NOTIFY_RELEASE] = "release",
	[MMU_NOTIFY_MIGRATE] = "migrate",
#ifdef VELO_HAVE_MMU_NOTIFY_EXCLUSIVE
	[MMU_NOTIFY_EXCLUSIVE] = "exclusive",
#endif
};

/* the rma_notifier attribute: invalidations by kind, then what was done about them */
ssize_t velo_mn_stats_show(struct velo_dev *vdev, char *buf)
{
	ssize_t n = 0;
	unsigned int i;

	for (i = 0; i < VELO_MN_EVENTS; i++)
		n += sysfs_emit_at(buf, n, "%s %lu\n", velo_mn_event_names[i] ? velo_mn_event_names[i] : "other",
				   atomic_long_read(&vdev->mn_events[i]));
	n += sysfs_emit_at(buf, n, "ignored %lu\n", atomic_long_read(&vdev->mn_ignored));
	n += sysfs_emit_at(buf, n, "withdrawn %lu\n", atomic_long_read(&vdev->mn_withdrawn));
	return n;
}

/*
 * Act on invalidations that can change the pages behind the range: unmap (munmap, mremap),
 * clear (MADV_DONTNEED, page reclaim or migration attempts, KSM), release (exit), migrate,
 * exclusive. Protection changes (NUMA hinting, mprotect, fork's write-protection of COW
 * mappings: a pinned page is copied for the child and stays the parent's) and soft-dirty
 * tracking keep the same pages mapped: the region stays valid.
 */
static bool velo_region_invalidate(struct mmu_interval_notifier *mni, const struct mmu_notifier_range *range,
				   unsigned long cur_seq)
{
	struct velo_region *rg = container_of(mni, struct velo_region, mni);
	struct velo_dev *vdev = rg->vdev;
	bool act;
	int r;

	if (!mmu_notifier_range_blockable(range))
		return false;
	atomic_long_inc(&vdev->mn_events[min_t(unsigned int, range->event, VELO_MN_EVENTS - 1)]);
	act = range->event != MMU_NOTIFY_PROTECTION_VMA && range->event != MMU_NOTIFY_PROTECTION_PAGE &&
	      range->event != MMU_NOTIFY_SOFT_DIRTY;
	mutex_lock(&vdev->rma_lock);
	mmu_interval_set_seq(mni, cur_seq);
	/* pinned: the core holds the region VALID with this region's pin */
	if (!act) {
		atomic_long_inc(&vdev->mn_ignored);
	} else if (rg->pin && vdev->core) {
		atomic_long_inc(&vdev->mn_withdrawn);
		r = velo_core_rma_invalidate(vdev->core, rg->idx, rg->key);
		if (r)
			dev_err_ratelimited(&vdev->pdev->dev,
					    "RMA region %u never quiesced (%d): its pages stay pinned until the device goes\n",
					    rg->idx, r);
	}
	mutex_unlock(&vdev->rma_lock);
	return true;
}

static const struct mmu_interval_notifier_ops velo_region_mn_ops = {
	.invalidate = velo_region_invalidate,
};

/*
 * Map the pin's pages for DMA as one scatter-gather table and collect the bus frame of every
 * page for the core. Refused (-EOPNOTSUPP) when the mapping would bounce (swiotlb) or need
 * syncs, which the NIC's direct access cannot honour, or lies beyond the 52 bits the NIC's
 * page table holds.
 */
static int velo_pin_map(struct velo_dev *vdev, struct velo_region *rg, struct velo_pin *p)
{
	struct device *dev = &vdev->pdev->dev;
	struct sg_dma_page_iter it;
	unsigned long i = 0;
	dma_addr_t a;
	int r;

	r = sg_alloc_table_from_pages(&p->sgt, p->pages, p->npages, 0, p->npages << PAGE_SHIFT, GFP_KERNEL);
	if (r)
		return r;
	p->has_sgt = true;
	r = dma_map_sgtable(dev, &p->sgt, velo_pin_dir(p), 0);
	if (r == -EIO) {
		/* the DMA API's answer for memory the device cannot address (no IOMMU, no bounce) */
		dev_warn_ratelimited(dev, "RMA registration refused: the pages lie beyond the device's DMA mask\n");
		return -EOPNOTSUPP;
	}
	if (r)
		return r;
	p->mapped = true;
	for_each_sgtable_dma_page(&p->sgt, &it, 0) {
		a = sg_page_iter_dma_address(&it);
		if (dma_need_sync(dev, a) || (u64)a >> (40 + PAGE_SHIFT)) {
			dev_warn_ratelimited(dev,
					     "RMA registration refused: DMA to %pad would bounce or needs syncs (swiotlb=force, or memory beyond the DMA mask without an IOMMU); the NIC reads and writes registered memory directly\n",
					     &a);
			return -EOPNOTSUPP;
		}
		if (i < p->npages)
			rg->pfns[i] = (u64)a >> PAGE_SHIFT;
		i++;
	}
	return i == p->npages ? 0 : -EIO;
}

/* Pin the region's pages and make it VALID in the core. reg_lock held, no other lock. */
static int velo_region_pin(struct velo_file *f, struct velo_region *rg)
{
	struct velo_dev *vdev = f->vdev;
	const unsigned int gup = FOLL_LONGTERM | (rg->writable ? FOLL_WRITE : 0);
	unsigned long start = rg->addr & PAGE_MASK, seq, limit;
	struct mm_struct *mm = rg->mm;
	struct velo_pin *p;
	int r, tries = 0;

	if (current->mm != mm)
		return -EPERM;	/* pages are pinned in the registering process only */
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
again:
	if (++tries > 100)
		return -EAGAIN;	/* invalidated again and again while pinning */
	if (fatal_signal_pending(current))
		return -EINTR;
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->pages = kvcalloc(rg->npages, sizeof(*p->pages), GFP_KERNEL);
	if (!p->pages) {
		kfree(p);
		return -ENOMEM;
	}
	mmgrab(mm);
	p->mm = mm;
	p->npages = rg->npages;
	p->writable = rg->writable;
	seq = mmu_interval_read_begin(&rg->mni);
	p->charged = true;
	if (atomic64_add_return(p->npages, &mm->pinned_vm) > limit && !capable(CAP_IPC_LOCK)) {
		r = -ENOMEM;
		goto err;
	}
	while (p->npinned < p->npages) {
		r = pin_user_pages_fast(start + p->npinned * PAGE_SIZE, p->npages - p->npinned, gup,
					p->pages + p->npinned);
		if (r <= 0) {
			r = r ? r : -EFAULT;
			goto err;
		}
		p->npinned += r;
	}
	r = velo_pin_map(vdev, rg, p);
	if (r)
		goto err;
	mutex_lock(&vdev->rma_lock);
	if (mmu_interval_read_retry(&rg->mni, seq)) {
		/* changed while we pinned: these pages may be stale */
		mutex_unlock(&vdev->rma_lock);
		velo_pin_free(vdev, p);
		goto again;
	}
	if (vdev->gone || !vdev->core) {
		r = -ENODEV;
	} else {
		rg->pin = p;
		r = velo_core_rma_map(vdev->core, rg->idx, rg->key, rg->pfns, rg->npages, rg);
		if (r)
			rg->pin = NULL;
		/* no run of page table entries (the region table is full: ENOSPC at declare) */
		if (r == -ENOSPC)
			r = -ENOBUFS;
	}
	mutex_unlock(&vdev->rma_lock);
	if (!r)
		return 0;
err:
	velo_pin_free(vdev, p);
	return r;
}

/*
 * The region left the file: no notifier, and freed unless the core still holds its pins (a
 * region the NIC never quiesced stays pinned, and allocated, until the NIC lets go of it or
 * the device goes: velo_region_unpin frees it then).
 */
static void velo_region_drop(struct velo_region *rg, bool inserted)
{
	struct velo_dev *vdev = rg->vdev;

	if (inserted)
		mmu_interval_notifier_remove(&rg->mni);
	mutex_lock(&vdev->rma_lock);
	if (rg->pin) {
		rg->orphan = true;
		rg = NULL;
	} else {
		list_del(&rg->dev_node);
	}
	mutex_unlock(&vdev->rma_lock);
	if (rg)
		velo_region_free(rg);
}

static struct velo_region *velo_region_find(struct velo_file *f, u64 nla)
{
	struct velo_region *rg;

	list_for_each_entry(rg, &f->regions, node)
		if (rg->nla == nla)
			return rg;
	return NULL;
}

/* lock and rma_lock around a core ioctl that changes regions */
static long velo_rma_ioctl_locked(struct velo_file *f, unsigned int nr, union velo_ioc_arg *k,
				  const struct velo_caller *who)
{
	struct velo_dev *vdev = f->vdev;
	long r;

	mutex_lock(&vdev->lock);
	mutex_lock(&vdev->rma_lock);
	if (vdev->gone) {
		r = -ENODEV;
	} else {
		velo_core_client_caller(&f->cl, who->pid, who->uid, who->privileged);
		r = velo_core_ioctl(vdev->core, &f->cl, nr, k);
	}
	mutex_unlock(&vdev->rma_lock);
	mutex_unlock(&vdev->lock);
	return r;
}

long velo_ioc_register(struct velo_file *f, union velo_ioc_arg *k, const struct velo_caller *who)
{
	struct velo_dev *vdev = f->vdev;
	union velo_ioc_arg d = { .dereg = { .argsz = sizeof(d.dereg) } };
	struct velo_region *rg;
	unsigned long start;
	long r;

	if (!current->mm)
		return -EFAULT;
	mutex_lock(&f->reg_lock);
	r = velo_rma_ioctl_locked(f, VELO_IOC_NR_REGISTER, k, who);	/* checks everything, declares */
	if (r)
		goto out;
	d.dereg.nla = k->reg.nla;
	rg = kzalloc(sizeof(*rg), GFP_KERNEL);
	if (!rg) {
		r = -ENOMEM;
		goto undo;
	}
	rg->vdev = vdev;
	rg->nla = k->reg.nla;
	rg->idx = k->reg.region;
	rg->key = k->reg.key;
	rg->addr = k->reg.addr;
	rg->len = k->reg.len;
	rg->writable = k->reg.flags & (VELO_REG_LOCAL_WRITE | VELO_REG_REMOTE_WRITE);
	rg->npages = velo_core_rma_pages(rg->addr, rg->len);
	mmgrab(current->mm);
	rg->mm = current->mm;
	rg->pfns = kvcalloc(rg->npages, sizeof(*rg->pfns), GFP_KERNEL);
	if (!rg->pfns) {
		velo_region_free(rg);
		r = -ENOMEM;
		goto undo;
	}
	start = rg->addr & PAGE_MASK;
	r = mmu_interval_notifier_insert(&rg->mni, current->mm, start, rg->npages << PAGE_SHIFT,
					 &velo_region_mn_ops);
	if (r) {
		velo_region_free(rg);
		goto undo;
	}
	mutex_lock(&vdev->rma_lock);
	list_add_tail(&rg->dev_node, &vdev->regions);
	mutex_unlock(&vdev->rma_lock);
	r = velo_region_pin(f, rg);
	if (r) {
		velo_region_drop(rg, true);
		goto undo;
	}
	list_add_tail(&rg->node, &f->regions);
	goto out;
undo:
	velo_rma_ioctl_locked(f, VELO_IOC_NR_DEREGISTER, &d, who);
out:
	mutex_unlock(&f->reg_lock);
	return r;
}

long velo_ioc_deregister(struct velo_file *f, union velo_ioc_arg *k, const struct velo_caller *who)
{
	struct velo_region *rg;
	long r;

	mutex_lock(&f->reg_lock);
	r = velo_rma_ioctl_locked(f, VELO_IOC_NR_DEREGISTER, k, who);	/* quiesced and unpinned */
	rg = velo_region_find(f, k->dereg.nla);
	/* ETIMEDOUT: the core keeps the region (and its pins) out of use for good */
	if (rg && (!r || r == -ETIMEDOUT)) {
		list_del(&rg->node);
		velo_region_drop(rg, true);
	}
	mutex_unlock(&f->reg_lock);
	return r;
}

long velo_ioc_repin(struct velo_file *f, union velo_ioc_arg *k, const struct velo_caller *who)
{
	struct velo_region *rg;
	long r;

	mutex_lock(&f->reg_lock);
	r = velo_rma_ioctl_locked(f, VELO_IOC_NR_REPIN, k, who);
	if (!r && k->repin.out_repinned) {
		rg = velo_region_find(f, k->repin.nla);
		r = rg ? velo_region_pin(f, rg) : -ENOENT;
	}
	mutex_unlock(&f->reg_lock);
	return r;
}

/* file release: the core has released every region of the file (endpoint closed) */
void velo_regions_release(struct velo_file *f)
{
	struct velo_region *rg, *tmp;

	list_for_each_entry_safe(rg, tmp, &f->regions, node) {
		list_del(&rg->node);
		velo_region_drop(rg, true);
	}
}
