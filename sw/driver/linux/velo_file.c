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
 *  - ioctl numbers: _IOWR/_IOW under VELO_IOC_MAGIC, direction and size checked; the numbers of
 *    ABI 2/3 get EPROTO. Privilege is the caller's at each call (capable() for the admin calls),
 *    never the opener's. Every file operation but release runs in the device's SRCU read
 *    section: remove waits for them (velo_main.c).
 *  - RMA registration (docs/rma.md §2.4, decoupled pinning as in Open-MX): REGISTER declares
 *    the region in the core, inserts an MMU interval notifier over its pages, pins them
 *    (pin_user_pages_fast, FOLL_LONGTERM, FOLL_WRITE if the NIC may write), maps them for DMA
 *    as one sg table (refused when it would bounce) and hands the bus frames to the core. The
 *    notifier acts on the events that can change the pages (not on protection changes): the
 *    core clears VALID and waits for QUIESCE_STATUS, the DMA mapping goes at once, and a worker
 *    unpins and dirties the pages later (unpin_user_pages_dirty_lock takes the page lock, which
 *    the notifier's caller may hold). The next command fails with NOT_VALID and the library
 *    calls REPIN. Pins are charged to the process's pinned_vm against RLIMIT_MEMLOCK (not
 *    locked_vm through account_locked_vm(), which takes mmap_lock: the notifier runs under it).
 *    Region state in the core is guarded by vdev->rma_lock, under which nothing allocates,
 *    faults or zaps (the notifier takes it alone).
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
	/* who opened it; every ioctl replaces these by its caller's (velo_caller) */
	velo_core_client_init(&f->cl, ++vdev->next_owner, task_tgid_nr(current),
			      from_kuid(&init_user_ns, filp->f_cred->euid), 0);
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
				dev_err_ratelimited(&vdev->pdev->dev, "vpid %u did not quiesce (%d): its rings are leaked\n",
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

static long velo_ioc_wait(struct velo_file *f, struct velo_uapi_wait *w, const struct velo_caller *who)
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
			velo_core_client_caller(&f->cl, who->pid, who->uid, who->privileged);
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

static long velo_ioctl_locked(struct velo_file *f, unsigned int nr, union velo_ioc_arg *k,
			      const struct velo_caller *who)
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
	velo_core_client_caller(&f->cl, who->pid, who->uid, who->privileged);
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

/* the numbers of ABI versions 2 and 3 (_IO('V', 0xB0 + nr)): refused, and the log says why */
static bool velo_ioc_is_v3(unsigned int cmd)
{
	return _IOC_TYPE(cmd) == VELO_IOC_V3_MAGIC && _IOC_DIR(cmd) == _IOC_NONE && !_IOC_SIZE(cmd) &&
	       _IOC_NR(cmd) >= VELO_IOC_V3_BASE && _IOC_NR(cmd) < VELO_IOC_V3_BASE + VELO_IOC_NR_COUNT;
}

/*
 * sizeof(struct velo_uapi_register) in ABI 4 (argsz .. key; ABI 5 added scope and the box) and
 * in ABI 5 (argsz .. vpid_hi; ABI 6 added nboxes, rsvd and the list of boxes)
 */
#define VELO_REGISTER_V4_SIZE 40
#define VELO_REGISTER_V5_SIZE 48
#define VELO_REGISTER_V6_SIZE 120

static long velo_ioctl(struct velo_file *f, unsigned int cmd, void __user *uarg)
{
	struct velo_dev *vdev = f->vdev;
	struct velo_caller who;
	union velo_ioc_arg k;
	u32 argsz, minsz, ksz;
	unsigned int nr, dir;
	int kind;
	long r;

	if (velo_ioc_is_v3(cmd)) {
		dev_warn_ratelimited(&vdev->pdev->dev,
				     "%s[%d] speaks VELO ABI 2 or 3 (ioctl 0x%x); this driver speaks ABI %d: rebuild the program against this libvelo\n",
				     current->comm, task_tgid_nr(current), cmd, VELO_UAPI_VERSION);
		return -EPROTO;
	}
	nr = _IOC_NR(cmd);
	kind = velo_core_uapi_flags(nr);
	if (_IOC_TYPE(cmd) != VELO_IOC_MAGIC || kind < 0)
		return -ENOTTY;
	/* the direction is part of the number: _IOWR when results come back, else _IOW */
	dir = _IOC_WRITE | (kind & VELO_CORE_UAPI_OUT ? _IOC_READ : 0);
	if (_IOC_DIR(cmd) != dir || velo_core_uapi_size(nr, &minsz, &ksz) || ksz > sizeof(k))
		return -ENOTTY;
	/* ABI 4's REGISTER had no scope and 8-bit keys: its library cannot speak RMA to this NIC */
	BUILD_BUG_ON(offsetof(struct velo_uapi_register, scope) != VELO_REGISTER_V4_SIZE);
	if (nr == VELO_IOC_NR_REGISTER && _IOC_SIZE(cmd) == VELO_REGISTER_V4_SIZE) {
		dev_warn_ratelimited(&vdev->pdev->dev,
				     "%s[%d] registers memory as VELO ABI 4 (no scope, 8-bit keys); this driver speaks ABI %d: rebuild the program against this libvelo\n",
				     current->comm, task_tgid_nr(current), VELO_UAPI_VERSION);
		return -EPROTO;
	}
	/* ABI 5's REGISTER had one box: its library does not know what the NIC checks now */
	BUILD_BUG_ON(offsetof(struct velo_uapi_register, nboxes) != VELO_REGISTER_V5_SIZE);
	BUILD_BUG_ON(sizeof(struct velo_uapi_scope_box) != 4);
	BUILD_BUG_ON(sizeof(struct velo_uapi_register) != VELO_REGISTER_V6_SIZE);
	if (nr == VELO_IOC_NR_REGISTER && _IOC_SIZE(cmd) == VELO_REGISTER_V5_SIZE) {
		dev_warn_ratelimited(&vdev->pdev->dev,
				     "%s[%d] registers memory as VELO ABI 5 (one scope box, no lists); this driver speaks ABI %d: rebuild the program against this libvelo\n",
				     current->comm, task_tgid_nr(current), VELO_UAPI_VERSION);
		return -EPROTO;
	}
	if (get_user(argsz, (u32 __user *)uarg))
		return -EFAULT;
	if (argsz < minsz)
		return -EINVAL;
	/* no structure will ever be a page; do not scan gigabytes of user memory for zeros */
	if (argsz > PAGE_SIZE)
		return -E2BIG;
	/* the size in the number is the caller's structure: argsz says the same */
	if (argsz != _IOC_SIZE(cmd))
		return -EINVAL;
	/* older callers: zero-filled; newer callers: E2BIG unless what we do not know is zero */
	r = copy_struct_from_user(&k, ksz, uarg, argsz);
	if (r)
		return r;
	k.argsz = argsz;
	/* privilege at the call: audited for the administrator's calls only */
	who.pid = task_tgid_nr(current);
	who.uid = from_kuid(&init_user_ns, current_euid());
	who.privileged = kind & VELO_CORE_UAPI_ADMIN ? capable(CAP_SYS_ADMIN) :
						       ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN);
	if (nr == VELO_IOC_NR_WAIT)
		r = velo_ioc_wait(f, &k.wait, &who);
	else if (nr == VELO_IOC_NR_REGISTER)
		r = velo_ioc_register(f, &k, &who);
	else if (nr == VELO_IOC_NR_DEREGISTER)
		r = velo_ioc_deregister(f, &k, &who);
	else if (nr == VELO_IOC_NR_REPIN)
		r = velo_ioc_repin(f, &k, &who);
	else
		r = velo_ioctl_locked(f, nr, &k, &who);
	if (r)
		return r;
	if ((kind & VELO_CORE_UAPI_OUT) && copy_to_user(uarg, &k, min(argsz, ksz)))
		return -EFAULT;
	return 0;
}

/* every file operation but release runs inside the device's SRCU read section (remove fence) */
static long velo_fop_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct velo_file *f = filp->private_data;
	int idx = srcu_read_lock(&f->vdev->srcu);
	long r = velo_ioctl(f, cmd, (void __user *)arg);

	srcu_read_unlock(&f->vdev->srcu, idx);
	return r;
}

static __poll_t velo_poll(struct file *filp, poll_table *pt)
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
static vm_fault_t velo_bar_fault_locked(struct vm_fault *vmf)
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
				  velo_vma_acc(vma), &m) && PAGE_ALIGNED(m.bar_off)) {
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

static vm_fault_t velo_bar_fault(struct vm_fault *vmf)
{
	struct velo_file *f = vmf->vma->vm_private_data;
	int idx = srcu_read_lock(&f->vdev->srcu);
	vm_fault_t ret = velo_bar_fault_locked(vmf);

	srcu_read_unlock(&f->vdev->srcu, idx);
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

static int velo_mmap(struct file *filp, struct vm_area_struct *vma)
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
	/* the policy's RMA rule is checked with the privilege of who maps, as for an ioctl */
	velo_core_client_caller(&f->cl, task_tgid_nr(current), from_kuid(&init_user_ns, current_euid()),
				ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN));
	r = velo_core_mmap_check(vdev->core, &f->cl, (u64)vma->vm_pgoff << PAGE_SHIFT, vma->vm_end - vma->vm_start,
				 velo_vma_acc(vma), &m);
	if (r == -EACCES && ((u64)vma->vm_pgoff << PAGE_SHIFT) == VELO_MMAP_RMA_CMD)
		dev_info_ratelimited(&vdev->pdev->dev,
				     "%s[%d]: RMA command page refused: it is write-only, and policy strict allows RMA only to endpoints of a job or to root\n",
				     current->comm, task_tgid_nr(current));
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

static __poll_t velo_fop_poll(struct file *filp, poll_table *pt)
{
	struct velo_file *f = filp->private_data;
	int idx = srcu_read_lock(&f->vdev->srcu);
	__poll_t r = velo_poll(filp, pt);

	srcu_read_unlock(&f->vdev->srcu, idx);
	return r;
}

static int velo_fop_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct velo_file *f = filp->private_data;
	int idx = srcu_read_lock(&f->vdev->srcu);
	int r = velo_mmap(filp, vma);

	srcu_read_unlock(&f->vdev->srcu, idx);
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
