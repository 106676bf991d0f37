// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * VELO Linux driver: the character device /dev/veloN. One open file is one endpoint.
 *
 *  - ioctl: the arguments are copied in VFIO style (argsz, flags; see velo_uapi.h), checked and
 *    carried out by the portable core under vdev->lock, and copied out. No user memory is
 *    touched while the lock is held (a fault on a VELO mapping takes the lock too).
 *  - mmap: the core checks offset, length and protection. Rings are DMA-coherent memory, mapped
 *    cacheable and read-only with dma_mmap_coherent(). BAR pages (the vpid's user page and the
 *    send-window page of a grant) are inserted by the fault handler, which checks again under
 *    the lock: a revoke or a reclaim zaps them (unmap_mapping_range) and no stale mapping can
 *    come back. The window's write-combining comes from its memtype (PAT) or an MTRR.
 *  - sleep: VELO_IOC_WAIT and poll() arm the NIC's interrupt for the vpids, check the ring
 *    lines again and only then sleep; the interrupt (velo_main.c) bumps wake_seq.
 *  - RMA registration (docs/rma.md §2.4, decoupled pinning as in Open-MX): REGISTER declares
 *    the region in the core, inserts an MMU interval notifier over its pages, pins them
 *    (pin_user_pages_fast, FOLL_LONGTERM, FOLL_WRITE if the NIC may write), maps them for DMA
 *    and hands the bus frames to the core. The notifier withdraws the translation (the core
 *    clears VALID and waits for QUIESCE_STATUS) before it unpins; the next command fails with
 *    NOT_VALID and the library calls REPIN. Pins are charged to the process's pinned_vm
 *    against RLIMIT_MEMLOCK (not locked_vm through account_locked_vm(), which takes mmap_lock:
 *    the notifier runs under it). Region state in the core is guarded by vdev->rma_lock,
 *    under which nothing allocates, faults or zaps (the notifier takes it alone).
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
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uidgid.h>
#include <linux/wait.h>

#include "velo/velo_hw.h"
#include "velo/velo_uapi.h"
#include "velo_drv.h"

/* every ioctl structure, for one buffer on the stack */
union velo_ioc_arg {
	__u32 argsz;
	struct velo_uapi_info info;
	struct velo_uapi_ep_open ep_open;
	struct velo_uapi_grant grant;
	struct velo_uapi_revoke revoke;
	struct velo_uapi_wait wait;
	struct velo_uapi_job job;
	struct velo_uapi_job_del job_del;
	struct velo_uapi_node node;
	struct velo_uapi_route route;
	struct velo_uapi_port port;
	struct velo_uapi_rma_setup rma_setup;
	struct velo_uapi_register reg;
	struct velo_uapi_deregister dereg;
	struct velo_uapi_repin repin;
};

void velo_file_wake(struct velo_file *f)
{
	WRITE_ONCE(f->wake_seq, f->wake_seq + 1);
	wake_up_interruptible_all(&f->wq);
}

/*
 * vdev->lock held. The BAR pages of the file's endpoint; all: the rings too (device removal).
 * The mapping is the device node's, shared with other open files: their BAR pages at the same
 * offsets are zapped as well and simply fault in again (each fault checks its own file).
 */
void velo_file_zap(struct velo_file *f, bool all)
{
	struct address_space *mapping = f->filp->f_mapping;

	if (all) {
		unmap_mapping_range(mapping, 0, 0, 1);
		return;
	}
	unmap_mapping_range(mapping, VELO_MMAP_USER_PAGE, 2 * PAGE_SIZE, 1);
	unmap_mapping_range(mapping, VELO_MMAP_WINDOW, (loff_t)4096 * PAGE_SIZE, 1);
	unmap_mapping_range(mapping, VELO_MMAP_RMA_CMD, PAGE_SIZE, 1);
}

/* ---- RMA regions */

/*
 * Release what velo_region_pin took. rma_lock held (or the region never reached the core):
 * no allocation, no page lock (the notifier may run under one), no mmap_lock.
 */
void velo_region_unpin(struct velo_region *rg)
{
	struct device *dev = &rg->vdev->pdev->dev;
	enum dma_data_direction dir = rg->writable ? DMA_BIDIRECTIONAL : DMA_TO_DEVICE;
	unsigned long i;

	if (!rg->pinned)
		return;
	for (i = 0; i < rg->npages; i++) {
		dma_unmap_page(dev, rg->dma[i], PAGE_SIZE, dir);
		if (rg->writable)
			set_page_dirty(rg->pages[i]);
	}
	unpin_user_pages(rg->pages, rg->npages);
	atomic64_sub(rg->npages, &rg->mni.mm->pinned_vm);
	rg->pinned = false;
}

static bool velo_region_invalidate(struct mmu_interval_notifier *mni, const struct mmu_notifier_range *range,
				   unsigned long cur_seq)
{
	struct velo_region *rg = container_of(mni, struct velo_region, mni);
	struct velo_dev *vdev = rg->vdev;
	int r;

	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&vdev->rma_lock);
	mmu_interval_set_seq(mni, cur_seq);
	/* pinned: the core holds the region VALID with this region as its pin */
	if (rg->pinned && vdev->core) {
		r = velo_core_rma_invalidate(vdev->core, rg->idx, rg->key);
		if (r)
			dev_err(&vdev->pdev->dev,
				"RMA region %u never quiesced (%d): its pages stay pinned until the device goes\n",
				rg->idx, r);
	}
	mutex_unlock(&vdev->rma_lock);
	return true;
}

static const struct mmu_interval_notifier_ops velo_region_mn_ops = {
	.invalidate = velo_region_invalidate,
};

/* Pin the region's pages and make it VALID in the core. reg_lock held, no other lock. */
static int velo_region_pin(struct velo_file *f, struct velo_region *rg)
{
	struct velo_dev *vdev = f->vdev;
	struct device *dev = &vdev->pdev->dev;
	enum dma_data_direction dir = rg->writable ? DMA_BIDIRECTIONAL : DMA_TO_DEVICE;
	const unsigned int gup = FOLL_LONGTERM | (rg->writable ? FOLL_WRITE : 0);
	unsigned long start = rg->addr & PAGE_MASK, done, i, seq, limit;
	struct mm_struct *mm = rg->mni.mm;
	int r, tries = 0;

	if (current->mm != mm)
		return -EPERM;	/* pages are pinned in the registering process only */
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
again:
	if (++tries > 100)
		return -EAGAIN;	/* invalidated again and again while pinning */
	if (fatal_signal_pending(current))
		return -EINTR;
	seq = mmu_interval_read_begin(&rg->mni);
	if (atomic64_add_return(rg->npages, &mm->pinned_vm) > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(rg->npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	for (done = 0; done < rg->npages; done += r) {
		r = pin_user_pages_fast(start + done * PAGE_SIZE, rg->npages - done, gup, rg->pages + done);
		if (r <= 0) {
			r = r ? r : -EFAULT;
			goto err_pin;
		}
	}
	for (i = 0; i < rg->npages; i++) {
		rg->dma[i] = dma_map_page(dev, rg->pages[i], 0, PAGE_SIZE, dir);
		if (dma_mapping_error(dev, rg->dma[i])) {
			r = -ENOMEM;
			goto err_dma;
		}
		rg->pfns[i] = (u64)rg->dma[i] >> PAGE_SHIFT;
	}
	mutex_lock(&vdev->rma_lock);
	if (mmu_interval_read_retry(&rg->mni, seq)) {
		/* changed while we pinned: these pages may be stale */
		rg->pinned = true;
		velo_region_unpin(rg);
		mutex_unlock(&vdev->rma_lock);
		goto again;
	}
	rg->pinned = true;
	r = vdev->core ? velo_core_rma_map(vdev->core, rg->idx, rg->key, rg->pfns, rg->npages, rg) : -ENODEV;
	if (r)
		velo_region_unpin(rg);
	mutex_unlock(&vdev->rma_lock);
	return r;

err_dma:
	while (i--)
		dma_unmap_page(dev, rg->dma[i], PAGE_SIZE, dir);
err_pin:
	unpin_user_pages(rg->pages, done);
	atomic64_sub(rg->npages, &mm->pinned_vm);
	return r;
}

static void velo_region_free(struct velo_region *rg)
{
	kvfree(rg->pages);
	kvfree(rg->dma);
	kvfree(rg->pfns);
	kfree(rg);
}

/*
 * The region left the file: no notifier, and freed unless the core still holds its pins (a
 * region the NIC never quiesced stays pinned, and so allocated, until the device goes).
 */
static void velo_region_drop(struct velo_region *rg, bool inserted)
{
	bool pinned;

	if (inserted)
		mmu_interval_notifier_remove(&rg->mni);
	mutex_lock(&rg->vdev->rma_lock);
	pinned = rg->pinned;
	mutex_unlock(&rg->vdev->rma_lock);
	if (!pinned)
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
static long velo_rma_ioctl_locked(struct velo_file *f, unsigned int nr, union velo_ioc_arg *k)
{
	struct velo_dev *vdev = f->vdev;
	long r;

	mutex_lock(&vdev->lock);
	mutex_lock(&vdev->rma_lock);
	r = vdev->gone ? -ENODEV : velo_core_ioctl(vdev->core, &f->cl, nr, k);
	mutex_unlock(&vdev->rma_lock);
	mutex_unlock(&vdev->lock);
	return r;
}

static long velo_ioc_register(struct velo_file *f, union velo_ioc_arg *k)
{
	struct velo_dev *vdev = f->vdev;
	union velo_ioc_arg d = { .dereg = { .argsz = sizeof(d.dereg) } };
	struct velo_region *rg;
	unsigned long start;
	long r;

	if (!current->mm)
		return -EFAULT;
	mutex_lock(&f->reg_lock);
	r = velo_rma_ioctl_locked(f, VELO_IOC_NR_REGISTER, k);	/* checks everything, declares */
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
	rg->pages = kvcalloc(rg->npages, sizeof(*rg->pages), GFP_KERNEL);
	rg->dma = kvcalloc(rg->npages, sizeof(*rg->dma), GFP_KERNEL);
	rg->pfns = kvcalloc(rg->npages, sizeof(*rg->pfns), GFP_KERNEL);
	if (!rg->pages || !rg->dma || !rg->pfns) {
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
	r = velo_region_pin(f, rg);
	if (r) {
		velo_region_drop(rg, true);
		goto undo;
	}
	list_add_tail(&rg->node, &f->regions);
	goto out;
undo:
	velo_rma_ioctl_locked(f, VELO_IOC_NR_DEREGISTER, &d);
out:
	mutex_unlock(&f->reg_lock);
	return r;
}

static long velo_ioc_deregister(struct velo_file *f, union velo_ioc_arg *k)
{
	struct velo_region *rg;
	long r;

	mutex_lock(&f->reg_lock);
	r = velo_rma_ioctl_locked(f, VELO_IOC_NR_DEREGISTER, k);	/* quiesced and unpinned */
	rg = velo_region_find(f, k->dereg.nla);
	/* ETIMEDOUT: the core keeps the region (and its pins) out of use for good */
	if (rg && (!r || r == -ETIMEDOUT)) {
		list_del(&rg->node);
		velo_region_drop(rg, true);
	}
	mutex_unlock(&f->reg_lock);
	return r;
}

static long velo_ioc_repin(struct velo_file *f, union velo_ioc_arg *k)
{
	struct velo_region *rg;
	long r;

	mutex_lock(&f->reg_lock);
	r = velo_rma_ioctl_locked(f, VELO_IOC_NR_REPIN, k);
	if (!r && k->repin.out_repinned) {
		rg = velo_region_find(f, k->repin.nla);
		r = rg ? velo_region_pin(f, rg) : -ENOENT;
	}
	mutex_unlock(&f->reg_lock);
	return r;
}

/* file release: the core has released every region of the file (endpoint closed) */
static void velo_regions_release(struct velo_file *f)
{
	struct velo_region *rg, *tmp;

	list_for_each_entry_safe(rg, tmp, &f->regions, node) {
		list_del(&rg->node);
		velo_region_drop(rg, true);
	}
}

static int velo_fop_open(struct inode *inode, struct file *filp)
{
	struct velo_dev *vdev = container_of(inode->i_cdev, struct velo_dev, cdev);
	struct velo_file *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	init_waitqueue_head(&f->wq);
	mutex_init(&f->reg_lock);
	INIT_LIST_HEAD(&f->regions);
	f->filp = filp;
	f->vdev = vdev;
	get_device(&vdev->dev);
	mutex_lock(&vdev->lock);
	if (vdev->gone) {
		mutex_unlock(&vdev->lock);
		put_device(&vdev->dev);
		kfree(f);
		return -ENODEV;
	}
	/* the opener's credentials: an fd handed to another process keeps them */
	velo_core_client_init(&f->cl, ++vdev->next_owner, task_tgid_nr(current),
			      from_kuid(&init_user_ns, filp->f_cred->euid),
			      ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN));
	list_add_tail(&f->node, &vdev->files);
	mutex_unlock(&vdev->lock);
	filp->private_data = f;
	return 0;
}

static int velo_fop_release(struct inode *inode, struct file *filp)
{
	struct velo_file *f = filp->private_data;
	struct velo_dev *vdev = f->vdev;
	const struct velo_core_ep *e;
	int r;

	/* no mapping of the file is left: every vma holds the file */
	mutex_lock(&vdev->lock);
	if (!vdev->gone) {
		e = velo_core_client_ep(vdev->core, &f->cl, NULL);
		if (e) {
			unsigned int vpid = e->vpid;

			vdev->vpid_file[vpid] = NULL;
			mutex_lock(&vdev->rma_lock);	/* its regions: quiesced, unpinned */
			r = velo_core_client_close(vdev->core, &f->cl);
			mutex_unlock(&vdev->rma_lock);
			if (r)
				dev_err(&vdev->pdev->dev, "vpid %u did not quiesce (%d): its rings are leaked\n",
					vpid, r);
		}
	}
	list_del(&f->node);
	mutex_unlock(&vdev->lock);
	velo_regions_release(f);
	mutex_destroy(&f->reg_lock);
	put_device(&vdev->dev);
	kfree(f);
	return 0;
}

/* arm the interrupt of the rings in `rings` (VELO_WAIT_*); vdev->lock held */
static void velo_arm(struct velo_file *f, unsigned int rings)
{
	struct velo_dev *vdev = f->vdev;
	const struct velo_core_ep *e;

	if (vdev->irq < 0)
		return;
	e = velo_core_client_ep(vdev->core, &f->cl, NULL);
	if (!e)
		return;
	if (rings & VELO_WAIT_DATA)
		velo_core_irq_arm(vdev->core, e->vpid);
	if (rings & VELO_WAIT_CTL)
		velo_core_irq_arm(vdev->core, e->ctl_vpid);
}

static long velo_ioc_wait(struct velo_file *f, struct velo_uapi_wait *w)
{
	struct velo_dev *vdev = f->vdev;
	const bool forever = w->timeout_ns == VELO_WAIT_FOREVER;
	const ktime_t tick = ns_to_ktime((u64)jiffies_to_usecs(vdev->tick_jiffies) * NSEC_PER_USEC);
	ktime_t deadline = 0, left;
	unsigned long seq;
	long r;

	if (!forever)
		deadline = ktime_add_safe(ktime_get(), ns_to_ktime(min_t(u64, w->timeout_ns, KTIME_MAX)));
	for (;;) {
		mutex_lock(&vdev->lock);
		if (vdev->gone) {
			r = -ENODEV;
		} else {
			r = velo_core_ioctl(vdev->core, &f->cl, VELO_IOC_NR_WAIT, w);
			if (!r && !w->out_ready && w->timeout_ns) {
				/*
				 * arm, then look again: an entry that came before the arm is seen now,
				 * one after it raises the interrupt
				 */
				velo_arm(f, w->flags);
				r = velo_core_ioctl(vdev->core, &f->cl, VELO_IOC_NR_WAIT, w);
			}
		}
		seq = READ_ONCE(f->wake_seq);
		mutex_unlock(&vdev->lock);
		if (r || w->out_ready)
			return r;
		if (!w->timeout_ns)
			return -ETIMEDOUT;
		if (forever) {
			left = KTIME_MAX;
		} else {
			left = ktime_sub(deadline, ktime_get());
			if (left <= 0)
				return -ETIMEDOUT;
		}
		if (vdev->irq < 0 && left > tick)
			left = tick;
		r = wait_event_interruptible_hrtimeout(f->wq, READ_ONCE(f->wake_seq) != seq, left);
		if (r == -ERESTARTSYS)
			return -EINTR;
	}
}

static long velo_ioctl_locked(struct velo_file *f, unsigned int nr, union velo_ioc_arg *k)
{
	struct velo_dev *vdev = f->vdev;
	long r;

	mutex_lock(&vdev->lock);
	if (vdev->gone) {
		r = -ENODEV;
		goto out;
	}
	/* a window page that cannot be mapped is not granted */
	if (nr == VELO_IOC_NR_GRANT && !vdev->win_ok) {
		r = -ENXIO;
		goto out;
	}
	r = velo_core_ioctl(vdev->core, &f->cl, nr, k);
	if (r < 0)
		goto out;
	switch (nr) {
	case VELO_IOC_NR_INFO:
		if (vdev->irq >= 0)
			k->info.out_flags |= VELO_INFO_F_IRQ;
		if (strcmp(velo_wc_mode(vdev), "none"))
			k->info.out_flags |= VELO_INFO_F_WC;
		break;
	case VELO_IOC_NR_EP_OPEN:
		vdev->vpid_file[k->ep_open.out_vpid] = f;
		break;
	case VELO_IOC_NR_REVOKE:
		/* before the id can be granted again */
		unmap_mapping_range(f->filp->f_mapping, VELO_MMAP_WINDOW + (loff_t)k->revoke.grant_id * PAGE_SIZE,
				    PAGE_SIZE, 1);
		break;
	case VELO_IOC_NR_NODE_SET:
		vdev->caps = *velo_core_caps(vdev->core);
		break;
	default:
		break;
	}
	r = 0;
out:
	mutex_unlock(&vdev->lock);
	return r;
}

static long velo_fop_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct velo_file *f = filp->private_data;
	void __user *uarg = (void __user *)arg;
	union velo_ioc_arg k;
	u32 argsz, minsz, ksz;
	unsigned int nr;
	long r;

	if (_IOC_TYPE(cmd) != VELO_IOC_MAGIC || _IOC_DIR(cmd) != _IOC_NONE || _IOC_SIZE(cmd) ||
	    _IOC_NR(cmd) < VELO_IOC_BASE)
		return -ENOTTY;
	nr = _IOC_NR(cmd) - VELO_IOC_BASE;
	if (velo_core_uapi_size(nr, &minsz, &ksz) || ksz > sizeof(k))
		return -ENOTTY;
	if (get_user(argsz, (u32 __user *)uarg))
		return -EFAULT;
	if (argsz < minsz)
		return -EINVAL;
	/* no structure will ever be a page; do not scan gigabytes of user memory for zeros */
	if (argsz > PAGE_SIZE)
		return -E2BIG;
	/* older callers: zero-filled; newer callers: E2BIG unless what we do not know is zero */
	r = copy_struct_from_user(&k, ksz, uarg, argsz);
	if (r)
		return r;
	k.argsz = argsz;
	if (nr == VELO_IOC_NR_WAIT)
		r = velo_ioc_wait(f, &k.wait);
	else if (nr == VELO_IOC_NR_REGISTER)
		r = velo_ioc_register(f, &k);
	else if (nr == VELO_IOC_NR_DEREGISTER)
		r = velo_ioc_deregister(f, &k);
	else if (nr == VELO_IOC_NR_REPIN)
		r = velo_ioc_repin(f, &k);
	else
		r = velo_ioctl_locked(f, nr, &k);
	if (r)
		return r;
	if (copy_to_user(uarg, &k, min(argsz, ksz)))
		return -EFAULT;
	return 0;
}

static __poll_t velo_fop_poll(struct file *filp, poll_table *pt)
{
	struct velo_file *f = filp->private_data;
	struct velo_dev *vdev = f->vdev;
	int r;

	poll_wait(filp, &f->wq, pt);
	if (vdev->irq < 0)
		poll_wait(filp, &vdev->tick_wq, pt);
	mutex_lock(&vdev->lock);
	if (vdev->gone) {
		mutex_unlock(&vdev->lock);
		return EPOLLERR | EPOLLHUP;
	}
	/* at the read pointers the NIC holds (MB_RP): write yours before polling */
	r = velo_core_ring_ready_nic(vdev->core, &f->cl);
	if (r == 0) {
		velo_arm(f, VELO_WAIT_DATA | VELO_WAIT_CTL);
		r = velo_core_ring_ready_nic(vdev->core, &f->cl);
		if (r == 0 && vdev->irq < 0)
			mod_timer(&vdev->tick, jiffies + vdev->tick_jiffies);
	}
	mutex_unlock(&vdev->lock);
	if (r < 0)
		return EPOLLERR | (r == -ENODEV ? EPOLLHUP : 0);
	return r ? EPOLLIN | EPOLLRDNORM : 0;
}

/* ---- mappings */
static unsigned int velo_vma_acc(const struct vm_area_struct *vma)
{
	return (vma->vm_flags & VM_READ ? VELO_CORE_MAP_READ : 0) |
	       (vma->vm_flags & VM_WRITE ? VELO_CORE_MAP_WRITE : 0) |
	       (vma->vm_flags & VM_EXEC ? VELO_CORE_MAP_EXEC : 0) |
	       (vma->vm_flags & VM_SHARED ? VELO_CORE_MAP_SHARED : 0);
}

/* BAR pages: inserted here, after checking under the lock that the page is still the file's */
static vm_fault_t velo_bar_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct velo_file *f = vma->vm_private_data;
	struct velo_dev *vdev = f->vdev;
	struct velo_core_map m;
	vm_fault_t ret = VM_FAULT_SIGBUS;
	resource_size_t phys;

	mutex_lock(&vdev->lock);
	if (!vdev->gone &&
	    !velo_core_mmap_check(vdev->core, &f->cl, (u64)vma->vm_pgoff << PAGE_SHIFT, vma->vm_end - vma->vm_start,
				  velo_vma_acc(vma), &m)) {
		if (m.kind == VELO_CORE_MAP_WINDOW && vdev->win_ok && m.bar_off + PAGE_SIZE <= vdev->win_len) {
			phys = vdev->win_start + m.bar_off;
			ret = vmf_insert_pfn(vma, vma->vm_start, PHYS_PFN(phys));
		} else if ((m.kind == VELO_CORE_MAP_USER || m.kind == VELO_CORE_MAP_CTL_USER) &&
			   m.bar_off + PAGE_SIZE <= vdev->regs_len) {
			phys = pci_resource_start(vdev->pdev, VELO_BAR_REGS) + m.bar_off;
			ret = vmf_insert_pfn(vma, vma->vm_start, PHYS_PFN(phys));
		} else if (m.kind == VELO_CORE_MAP_RMA_CMD && m.bar_off + PAGE_SIZE <= vdev->rma_len) {
			phys = vdev->rma_start + m.bar_off;
			ret = vmf_insert_pfn(vma, vma->vm_start, PHYS_PFN(phys));
		}
	}
	mutex_unlock(&vdev->lock);
	return ret;
}

static const struct vm_operations_struct velo_bar_vm_ops = {
	.fault = velo_bar_fault,
};

/* rings: mapped whole at mmap time; a fault means the device went away (pages zapped) */
static void velo_ring_vm_open(struct vm_area_struct *vma)
{
	velo_buf_map(vma->vm_private_data);
}

static void velo_ring_vm_close(struct vm_area_struct *vma)
{
	velo_buf_unmap(vma->vm_private_data);
}

static vm_fault_t velo_ring_fault(struct vm_fault *vmf)
{
	return VM_FAULT_SIGBUS;
}

static const struct vm_operations_struct velo_ring_vm_ops = {
	.open = velo_ring_vm_open,
	.close = velo_ring_vm_close,
	.fault = velo_ring_fault,
};

static int velo_fop_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct velo_file *f = filp->private_data;
	struct velo_dev *vdev = f->vdev;
	struct velo_dmabuf *b;
	struct velo_core_map m;
	unsigned long pgoff;
	int r;

	mutex_lock(&vdev->lock);
	if (vdev->gone) {
		r = -ENODEV;
		goto out;
	}
	r = velo_core_mmap_check(vdev->core, &f->cl, (u64)vma->vm_pgoff << PAGE_SHIFT, vma->vm_end - vma->vm_start,
				 velo_vma_acc(vma), &m);
	if (r)
		goto out;
	/* no mprotect() to exec, or to write a ring, or to read a window */
	velo_vm_flags_clear(vma, VM_MAYEXEC);
	switch (m.kind) {
	case VELO_CORE_MAP_RING:
	case VELO_CORE_MAP_CTL_RING:
	case VELO_CORE_MAP_NQ:
		b = m.cookie;
		velo_vm_flags_clear(vma, VM_MAYWRITE);
		velo_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
		/*
		 * dma_mmap_coherent() reads vm_pgoff as the offset into the buffer; ours names the
		 * ring and must stay (unmap_mapping_range finds the vma by it)
		 */
		pgoff = vma->vm_pgoff;
		vma->vm_pgoff = 0;
		r = dma_mmap_coherent(&vdev->pdev->dev, vma, b->cpu, b->dma, b->size);
		vma->vm_pgoff = pgoff;
		if (r)
			break;
		vma->vm_private_data = b;
		vma->vm_ops = &velo_ring_vm_ops;
		velo_buf_map(b);
		break;
	case VELO_CORE_MAP_USER:
	case VELO_CORE_MAP_CTL_USER:
		vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
		velo_vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
		vma->vm_private_data = f;
		vma->vm_ops = &velo_bar_vm_ops;
		break;
	case VELO_CORE_MAP_RMA_CMD:
		/* the vpid's page of BAR4, write-combined: a command is one 32-byte burst */
		if (m.bar_off + PAGE_SIZE > vdev->rma_len) {
			r = -ENXIO;
			break;
		}
		vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
		velo_vm_flags_clear(vma, VM_MAYREAD);
		velo_vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
		vma->vm_private_data = f;
		vma->vm_ops = &velo_bar_vm_ops;
		break;
	case VELO_CORE_MAP_WINDOW:
		if (!vdev->win_ok) {
			r = -ENXIO;
			break;
		}
		vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
		velo_vm_flags_clear(vma, VM_MAYREAD);
		velo_vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
		vma->vm_private_data = f;
		vma->vm_ops = &velo_bar_vm_ops;
		break;
	default:
		r = -EINVAL;
		break;
	}
out:
	mutex_unlock(&vdev->lock);
	return r;
}

const struct file_operations velo_fops = {
	.owner = THIS_MODULE,
	.open = velo_fop_open,
	.release = velo_fop_release,
	.unlocked_ioctl = velo_fop_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = velo_fop_mmap,
	.poll = velo_fop_poll,
	.llseek = noop_llseek,
};
