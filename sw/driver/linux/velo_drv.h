/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * VELO Linux driver: the state shared by velo_main.c (PCI, module), velo_sysfs.c, velo_file.c (the
 * character device: ioctl, mmap, poll) and velo_region.c (RMA regions). The policy lives in the
 * portable core (velo_core_job.c); these files glue it to the kernel.
 */
#ifndef VELO_DRV_H
#define VELO_DRV_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/siphash.h>
#include <linux/srcu.h>
#include <linux/timer.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "velo/velo_uapi.h"
#include "velo_core.h"

#define VELO_DRV_NAME "velo"
#define VELO_MAX_DEVS 32
/* MMU notifier events counted by kind (enum mmu_notifier_event), the last slot for newer kinds */
#ifdef VELO_HAVE_MMU_NOTIFY_EXCLUSIVE
#define VELO_MN_EVENTS (MMU_NOTIFY_EXCLUSIVE + 2)
#else
#define VELO_MN_EVENTS (MMU_NOTIFY_MIGRATE + 2)	/* before 5.14 */
#endif

/*
 * ---- compatibility with the kernels the module builds for (>= 5.10): Kbuild finds out which
 * interfaces the kernel's headers have (VELO_HAVE_*)
 */
#ifdef VELO_HAVE_VM_FLAGS_SET
#define velo_vm_flags_set(vma, f) vm_flags_set(vma, f)
#define velo_vm_flags_clear(vma, f) vm_flags_clear(vma, f)
#else
#define velo_vm_flags_set(vma, f) ((vma)->vm_flags |= (f))
#define velo_vm_flags_clear(vma, f) ((vma)->vm_flags &= ~(f))
#endif
#ifdef VELO_HAVE_TIMER_DELETE_SYNC
#define velo_timer_delete_sync(t) timer_delete_sync(t)
#else
#define velo_timer_delete_sync(t) del_timer_sync(t)
#endif

/* DMA memory the core asked for (a mailbox ring), possibly mapped into user space. */
struct velo_dmabuf {
	struct list_head node;	/* velo_dev.bufs */
	struct velo_dev *vdev;
	void *cpu;		/* NULL once freed (device removed) */
	dma_addr_t dma;
	size_t size;
	unsigned int maps;	/* user mappings (vmas) of it */
	struct mm_struct *mm;	/* charged (pinned_vm) to this process, mmgrab()ed; NULL: none */
	unsigned long charged;	/* pages */
	bool core_done;		/* the core let go of it */
};

/* One NIC. Lives until its last open file is closed (refcount of dev). */
struct velo_dev {
	struct device dev;	/* /sys/class/velo/veloN */
	struct cdev cdev;
	struct pci_dev *pdev;
	int minor;
	struct velo_core_caps caps;	/* copy taken at probe (fixed but for node_id) */

	void __iomem *regs;	/* BAR0 */
	resource_size_t regs_len;
	resource_size_t win_start, win_len;	/* BAR2: send window */
	resource_size_t rma_start, rma_len;	/* BAR4: RMA window (0 if absent) */
	int rma_wc_handle;	/* arch_phys_wc_add() of BAR4 */
	bool rma_wc_memtype;	/* arch_io_reserve_memtype_wc() of BAR4 succeeded */
	bool win_ok;		/* BAR2 holds the whole send window */
	int wc_handle;		/* arch_phys_wc_add() */
	bool wc_memtype;	/* arch_io_reserve_memtype_wc() succeeded */

	/*
	 * Fences file operations against remove (as ib_uverbs disassociates): every ioctl, mmap,
	 * poll and fault runs inside a read section; remove sets gone, wakes sleepers and waits for
	 * the sections to end before it tears anything down. Later calls see gone: -ENODEV.
	 */
	struct srcu_struct srcu;
	bool srcu_ok;		/* init_srcu_struct() succeeded */

	/*
	 * The secret of the core's PRF (velo_core_ops.prf): region keys are derived from it. Drawn
	 * from get_random_bytes() at probe, never shown anywhere.
	 */
	siphash_key_t key_secret;

	/* serialises every core call and the fields below */
	struct mutex lock;
	struct velo_core *core;	/* NULL after remove */
	bool gone;		/* removed: every call fails with -ENODEV */
	struct list_head files;	/* open velo_files */
	struct velo_file *vpid_file[256];	/* data vpid -> file owning it */
	u64 next_owner;

	/*
	 * The core's RMA region state (regions, page table, their registers). Taken inside lock
	 * (never the other way round) and alone by the MMU notifier. Nothing under it allocates
	 * memory, takes mmap_lock or zaps mappings: the notifier may run in any of those.
	 */
	struct mutex rma_lock;
	/* every velo_region of every file, and the ones files let go of while pinned (rma_lock) */
	struct list_head regions;
	/* pins the NIC let go of, unpinned and dirtied by unpin_work (never inside a notifier) */
	spinlock_t unpin_list_lock;
	struct list_head unpin_list;
	struct work_struct unpin_work;
	/* the MMU notifier: invalidations by event kind; ignored (same pages); regions withdrawn */
	atomic_long_t mn_events[VELO_MN_EVENTS];
	atomic_long_t mn_ignored, mn_withdrawn;

	struct mutex buf_lock;	/* bufs, velo_dmabuf.maps / core_done / cpu */
	struct list_head bufs;

	int irq;		/* Linux irq number, -1: none (timer polling) */
	struct timer_list tick;	/* no interrupt: wakes poll() now and then */
	wait_queue_head_t tick_wq;
	unsigned long tick_jiffies;
};

/* One open file of /dev/veloN: one endpoint. */
struct velo_file {
	struct list_head node;	/* velo_dev.files */
	struct velo_dev *vdev;	/* holds a reference on vdev->dev */
	struct file *filp;
	struct velo_core_client cl;
	wait_queue_head_t wq;	/* VELO_IOC_WAIT and poll() sleep here */
	unsigned long wake_seq;	/* bumped by the interrupt for its vpids */
	struct mutex reg_lock;	/* REGISTER / DEREGISTER / REPIN of this file; regions */
	struct list_head regions;	/* velo_region */
};

/*
 * A registered region (decoupled pinning, docs/rma.md §2.4): declared in the core at
 * REGISTER; pinned (pages, DMA mappings, pinned_vm) while the core holds it VALID; the MMU
 * interval notifier withdraws the translation (core invalidate + quiesce) and unpins; REPIN
 * pins again. Freed at DEREGISTER or file release, after the notifier is removed.
 */
struct velo_region {
	struct mmu_interval_notifier mni;
	struct list_head node;	/* velo_file.regions */
	struct list_head dev_node;	/* velo_dev.regions (rma_lock) */
	struct velo_dev *vdev;
	struct mm_struct *mm;	/* mmgrab()ed: pinned_vm is charged to it */
	bool orphan;		/* no file holds it: freed once unpinned (rma_lock) */
	u64 nla;		/* the handle (key, region, offset 0) */
	unsigned int idx, key;
	unsigned long addr;	/* user address of byte 0 */
	u64 len;
	bool writable;		/* FOLL_WRITE: the NIC may write the pages */
	unsigned long npages;
	u64 *pfns;		/* [npages] scratch: bus frame numbers for the core */
	struct velo_pin *pin;	/* while the core holds it VALID (or STUCK): its pins (rma_lock) */
};

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

/*
 * Who makes an ioctl, taken at the call (not at open: a descriptor handed to another process,
 * or kept across a privilege drop, carries no privilege of its opener). The core gets it with
 * every call (velo_core_client_caller).
 */
struct velo_caller {
	u32 pid, uid, privileged;
};

static inline struct velo_dev *to_vdev(struct device *dev)
{
	return container_of(dev, struct velo_dev, dev);
}

extern const struct file_operations velo_fops;
extern const struct attribute_group *velo_dev_groups[];

/* velo_file.c: drop every user mapping of a file's BAR pages (all = rings too). */
void velo_file_zap(struct velo_file *f, bool all);
/* velo_file.c: wake everything sleeping on a file. */
void velo_file_wake(struct velo_file *f);
/* velo_main.c: a user mapping of a ring appears / goes (the last one frees a released ring). */
void velo_buf_map(struct velo_dmabuf *b);
void velo_buf_unmap(struct velo_dmabuf *b);
/* velo_region.c: the core's rma_unpin op (rma_lock held). */
void velo_region_unpin(struct velo_region *rg);
/* velo_region.c: unpin_work's function */
void velo_unpin_work(struct work_struct *w);
/* velo_region.c: the rma_notifier attribute */
ssize_t velo_mn_stats_show(struct velo_dev *vdev, char *buf);
/* velo_region.c: remove, bus mastering off: unpin what the NIC never released, free orphans. */
void velo_regions_sweep(struct velo_dev *vdev);
/* velo_region.c: the RMA ioctls (vdev->lock held) and the file's regions at release. */
long velo_ioc_register(struct velo_file *f, union velo_ioc_arg *k, const struct velo_caller *who);
long velo_ioc_deregister(struct velo_file *f, union velo_ioc_arg *k, const struct velo_caller *who);
long velo_ioc_repin(struct velo_file *f, union velo_ioc_arg *k, const struct velo_caller *who);
void velo_regions_release(struct velo_file *f);
/* velo_main.c: reclaim (sysfs). */
int velo_reclaim_vpid(struct velo_dev *vdev, unsigned int vpid);
/* velo_main.c: text for the wc_active attribute */
const char *velo_wc_mode(const struct velo_dev *vdev);

#endif /* VELO_DRV_H */
