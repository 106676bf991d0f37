// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * velo.ko: the device attributes in /sys/class/velo/veloN/ (docs/driver.md, "sysfs"): the NIC's
 * identity and state, its counters, the RMA notifier's events, reclaim and the vpid table.
 */
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
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/vmalloc.h>
#ifdef CONFIG_X86
#include <asm/memtype.h>
#endif

#define VELO_HW_WANT_NAMES
#include "velo/velo_hw.h"
#include "velo/velo_uapi.h"
#include "velo_drv.h"

/* ---- sysfs: /sys/class/velo/veloN/ */
/* The caps fields are fixed after probe; reading them needs no lock. */
#define VELO_CAPS_ATTR(name, fmt, field)						\
static ssize_t name##_show(struct device *dev, struct device_attribute *attr, char *buf) \
{											\
	return sysfs_emit(buf, fmt "\n", to_vdev(dev)->caps.field);			\
}											\
static DEVICE_ATTR_RO(name)

VELO_CAPS_ATTR(design_version, "0x%08x", design_version);
VELO_CAPS_ATTR(spec_hash, "0x%08x", spec_hash);
VELO_CAPS_ATTR(num_vpids, "%u", num_vpids);
VELO_CAPS_ATTR(ports, "%u", nports);

static ssize_t node_id_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct velo_dev *vdev = to_vdev(dev);
	ssize_t n = -ENODEV;

	mutex_lock(&vdev->lock);
	if (!vdev->gone) {
		velo_core_refresh(vdev->core);
		n = sysfs_emit(buf, "%u\n", velo_core_caps(vdev->core)->node_id);
	}
	mutex_unlock(&vdev->lock);
	return n;
}
static DEVICE_ATTR_RO(node_id);

static ssize_t link_state_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct velo_dev *vdev = to_vdev(dev);
	ssize_t n = 0;
	unsigned int p;
	u32 s;

	mutex_lock(&vdev->lock);
	if (vdev->gone) {
		mutex_unlock(&vdev->lock);
		return -ENODEV;
	}
	s = velo_core_link_status(vdev->core);
	mutex_unlock(&vdev->lock);
	for (p = 1; p <= vdev->caps.nports; p++)
		n += sysfs_emit_at(buf, n, "port%u %s\n", p, (s >> (p - 1)) & 1 ? "up" : "down");
	return n;
}
static DEVICE_ATTR_RO(link_state);

/*
 * One line per counter of a block: its name (counter<i> beyond the names this driver knows),
 * its value. read(core, i) reads counter i.
 */
static ssize_t counters_emit(struct velo_dev *vdev, char *buf, unsigned int num,
			     const char *const *names, unsigned int nnames,
			     u32 (*read)(const struct velo_core *c, unsigned int i))
{
	ssize_t n = 0;
	unsigned int i;

	mutex_lock(&vdev->lock);
	if (vdev->gone) {
		mutex_unlock(&vdev->lock);
		return -ENODEV;
	}
	for (i = 0; i < num; i++) {
		u32 v = read(vdev->core, i);

		if (i < nnames)
			n += sysfs_emit_at(buf, n, "%s %u\n", names[i], v);
		else
			n += sysfs_emit_at(buf, n, "counter%u %u\n", i, v);
	}
	mutex_unlock(&vdev->lock);
	return n;
}

static ssize_t counters_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct velo_dev *vdev = to_vdev(dev);

	return counters_emit(vdev, buf, vdev->caps.num_counters, velo_counter_names, VELO_CNT_NUM,
			     velo_core_counter);
}
static DEVICE_ATTR_RO(counters);

/* the RMA unit's counters; empty on a NIC without one */
static ssize_t rma_counters_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct velo_dev *vdev = to_vdev(dev);

	return counters_emit(vdev, buf, vdev->caps.rma_num_counters, velo_rma_counter_names,
			     VELO_RMA_CNT_NUM, velo_core_rma_counter);
}
static DEVICE_ATTR_RO(rma_counters);

/* the MMU notifier's invalidations of registered memory, by kind, and what they caused */
static ssize_t rma_notifier_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return velo_mn_stats_show(to_vdev(dev), buf);
}
static DEVICE_ATTR_RO(rma_notifier);

static ssize_t wc_active_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", velo_wc_mode(to_vdev(dev)));
}
static DEVICE_ATTR_RO(wc_active);

static ssize_t reclaim_store(struct device *dev, struct device_attribute *attr, const char *buf, size_t count)
{
	unsigned int vpid;
	int r;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	r = kstrtouint(buf, 0, &vpid);
	if (r)
		return r;
	r = velo_reclaim_vpid(to_vdev(dev), vpid);
	return r ? r : count;
}
static DEVICE_ATTR_WO(reclaim);

/*
 * vpids: who owns what. A binary attribute only because 128 endpoints do not fit in a page;
 * the contents are text. Root only: it shows the job keys.
 */
static ssize_t vpids_read(struct file *filp, struct kobject *kobj, struct bin_attribute *attr, char *buf,
			  loff_t off, size_t count)
{
	struct velo_dev *vdev = to_vdev(kobj_to_dev(kobj));
	const size_t cap = 128 + 64 * ARRAY_SIZE(vdev->vpid_file);
	unsigned int v;
	size_t n = 0;
	char *text;

	text = kvzalloc(cap, GFP_KERNEL);
	if (!text)
		return -ENOMEM;
	mutex_lock(&vdev->lock);
	if (vdev->gone) {
		mutex_unlock(&vdev->lock);
		kvfree(text);
		return -ENODEV;
	}
	n += scnprintf(text + n, cap - n, "vpid ctl_vpid pid uid job_key\n");
	for (v = 0; v < ARRAY_SIZE(vdev->vpid_file); v++) {
		const struct velo_core_ep *e = velo_core_ep_find(vdev->core, v);

		if (e)
			n += scnprintf(text + n, cap - n, "%u %u %u %u 0x%llx\n", e->vpid, e->ctl_vpid, e->pid, e->uid,
				       (unsigned long long)e->job_key);
	}
	mutex_unlock(&vdev->lock);
	if (off >= n) {
		count = 0;
	} else {
		count = min_t(size_t, count, n - off);
		memcpy(buf, text + off, count);
	}
	kvfree(text);
	return count;
}
static BIN_ATTR_ADMIN_RO(vpids, 0);

static struct attribute *velo_attrs[] = {
	&dev_attr_node_id.attr,
	&dev_attr_design_version.attr,
	&dev_attr_spec_hash.attr,
	&dev_attr_num_vpids.attr,
	&dev_attr_ports.attr,
	&dev_attr_link_state.attr,
	&dev_attr_counters.attr,
	&dev_attr_rma_counters.attr,
	&dev_attr_rma_notifier.attr,
	&dev_attr_reclaim.attr,
	&dev_attr_wc_active.attr,
	NULL,
};

static struct bin_attribute *velo_bin_attrs[] = {
	&bin_attr_vpids,
	NULL,
};

static const struct attribute_group velo_group = {
	.attrs = velo_attrs,
	.bin_attrs = velo_bin_attrs,
};

const struct attribute_group *velo_dev_groups[] = {
	&velo_group,
	NULL,
};
