// SPDX-License-Identifier: MIT
// The hw backend: a VELO NIC behind the Linux driver (/dev/veloN, ABI in velo/velo_uapi.h).
// Rings and the read-pointer user pages are mapped from the driver, each granted send-window
// page is mapped write-combined; sends and polls then run without the kernel (velo_backend.h).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "velo/velo_hw.h"
#include "velo/velo_uapi.h"
#include "velo_backend.h"

struct velo_dev {
    int fd;
    void* ring;
    size_t ring_bytes;
    void* ctl_ring;
    size_t ctl_ring_bytes;
    void* user_page;
    void* ctl_user_page;
    // RMA (after RMA_SETUP): the notification queue and the command page
    void* nq;
    size_t nq_bytes;
    void* rma_cmd;
    // the mapped window pages (unmapped at close)
    uint8_t** wins;
    unsigned nwins, wins_cap;
};

static int neg_errno(void) {
    return errno ? -errno : -EIO;
}

static int win_add(struct velo_dev* h, uint8_t* w) {
    if (h->nwins == h->wins_cap) {
        unsigned n = h->wins_cap ? 2 * h->wins_cap : 16;
        uint8_t** a = realloc(h->wins, n * sizeof *a);
        if (!a) return -ENOMEM;
        h->wins = a;
        h->wins_cap = n;
    }
    h->wins[h->nwins++] = w;
    return 0;
}

static void win_del(struct velo_dev* h, uint8_t* w) {
    for (unsigned i = 0; i < h->nwins; ++i)
        if (h->wins[i] == w) {
            h->wins[i] = h->wins[--h->nwins];
            return;
        }
}

static int hw_revoke(struct velo_be* b, int page, uint8_t* win);

static int hw_grant(struct velo_be* b, unsigned from, unsigned node, unsigned vpid, uint8_t** win) {
    struct velo_dev* h = b->dev;
    struct velo_uapi_grant g;
    memset(&g, 0, sizeof g);
    g.argsz = sizeof g;
    g.from = from;
    g.dst_node = node;
    g.dst_vpid = vpid;
    if (ioctl(h->fd, VELO_IOC_GRANT, &g) < 0) return neg_errno();
    void* p = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, h->fd, (off_t)(VELO_MMAP_WINDOW + (uint64_t)g.grant_id * 4096));
    if (p == MAP_FAILED) {
        int e = neg_errno();
        struct velo_uapi_revoke rv = {.argsz = sizeof rv, .flags = 0, .grant_id = g.grant_id, .rsvd = 0};
        ioctl(h->fd, VELO_IOC_REVOKE, &rv);
        return e;
    }
    if (win_add(h, (uint8_t*)p)) {
        hw_revoke(b, (int)g.grant_id, (uint8_t*)p);
        return -ENOMEM;
    }
    *win = (uint8_t*)p;
    return (int)g.grant_id;
}

static int hw_revoke(struct velo_be* b, int page, uint8_t* win) {
    struct velo_dev* h = b->dev;
    if (win) {
        win_del(h, win);
        munmap(win, 4096);
    }
    struct velo_uapi_revoke rv = {.argsz = sizeof rv, .flags = 0, .grant_id = (uint32_t)page, .rsvd = 0};
    return ioctl(h->fd, VELO_IOC_REVOKE, &rv) < 0 ? neg_errno() : 0;
}

#define VELO_HW_NQ_POLL_NS 50000

static int hw_sleep(struct velo_be* b, const struct velo_be_wait* wt, int64_t timeout_ns) {
    struct velo_dev* h = b->dev;
    if (wt->pending) return 0;
    // both rings: a credit or a connection answer on the control ring wakes us as well (the
    // driver arms the NIC's interrupt for both vpids, checks the lines again, then sleeps)
    struct velo_uapi_wait w;
    memset(&w, 0, sizeof w);
    w.argsz = sizeof w;
    w.flags = VELO_WAIT_DATA | VELO_WAIT_CTL;
    w.rp = wt->data_rp;
    w.ctl_rp = wt->ctl_rp;
    // no interrupt announces a notification-queue entry: a watched queue is looked at every 50 us
    if (wt->nq_hdr && (timeout_ns < 0 || timeout_ns > VELO_HW_NQ_POLL_NS)) timeout_ns = VELO_HW_NQ_POLL_NS;
    w.timeout_ns = timeout_ns < 0 ? VELO_WAIT_FOREVER : (uint64_t)timeout_ns;
    if (ioctl(h->fd, VELO_IOC_WAIT, &w) < 0) {
        if (errno == ETIMEDOUT) return 0;
        if (errno == EINTR) return -EINTR;
        if (errno == ENODEV) {
            b->dead = 1;
            return -EPIPE;
        }
        return neg_errno();
    }
    return 0;
}

static void hw_free(struct velo_dev* h) {
    for (unsigned i = 0; i < h->nwins; ++i) munmap(h->wins[i], 4096);
    free(h->wins);
    if (h->ring) munmap(h->ring, h->ring_bytes);
    if (h->ctl_ring) munmap(h->ctl_ring, h->ctl_ring_bytes);
    if (h->user_page) munmap(h->user_page, 4096);
    if (h->ctl_user_page) munmap(h->ctl_user_page, 4096);
    if (h->nq) munmap(h->nq, h->nq_bytes);
    if (h->rma_cmd) munmap(h->rma_cmd, 4096);
    close(h->fd);  // the driver disables and quiesces both vpids before freeing the rings
    free(h);
}

static void hw_close(struct velo_be* b) {
    hw_free(b->dev);
}

// RMA: the data vpid's notification queue and its BAR4 command page (docs/driver.md "RMA").
static int hw_rma_map(struct velo_be* b, struct velo_rma_map* m) {
    struct velo_dev* h = b->dev;
    struct velo_uapi_rma_setup st;
    memset(&st, 0, sizeof st);
    st.argsz = sizeof st;
    int v = 0;
    const char* e = getenv("VELO_NQ_LOG2");  // notification queue size, 0: the driver's default
    if (e && *e) {
        char* end = NULL;
        long l = strtol(e, &end, 0);
        if (*end || l < VELO_NQ_LOG2_MIN || l > VELO_RMA_NQ_LOG2_MAX) return -EINVAL;
        v = (int)l;
    }
    st.log2_entries = (uint32_t)v;
    if (ioctl(h->fd, VELO_IOC_RMA_SETUP, &st) < 0) return errno == ENOTTY ? -EOPNOTSUPP : neg_errno();
    void* nq = mmap(NULL, st.nq_bytes, PROT_READ, MAP_SHARED, h->fd, (off_t)VELO_MMAP_NQ);
    if (nq == MAP_FAILED) return neg_errno();
    void* cmd = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, h->fd, (off_t)VELO_MMAP_RMA_CMD);
    if (cmd == MAP_FAILED) {
        int r = neg_errno();
        munmap(nq, st.nq_bytes);
        return r;
    }
    h->nq = nq;
    h->nq_bytes = st.nq_bytes;
    h->rma_cmd = cmd;
    m->nq = (const volatile uint8_t*)nq;
    m->nq_log2 = st.out_log2_entries;
    m->nq_rp = (volatile uint32_t*)((uint8_t*)h->user_page + st.nq_rp_off);
    m->cmd_page = (uint8_t*)cmd;
    m->region_bits = st.region_bits;
    m->max_regions = st.max_regions;
    return 0;
}

static int hw_rma_ioctl(struct velo_be* b, unsigned long req, void* arg) {
    struct velo_dev* h = b->dev;
    if (ioctl(h->fd, req, arg) < 0) {
        if (errno == ENODEV) b->dead = 1;
        return neg_errno();
    }
    return 0;
}

static int hw_probe(void) {
    return access(VELO_DEV_PREFIX "0", F_OK) == 0;
}

static int hw_open(struct velo_be* b, const char* dev, const velo_open_attr_t* a) {
    if (a->node >= 0) return -EINVAL;  // the node is the board's
    if (!dev) dev = VELO_DEV_PREFIX "0";
    int fd = open(dev, O_RDWR | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT || errno == ENXIO ? -ENODEV : neg_errno();
    struct velo_dev* h = calloc(1, sizeof *h);
    if (!h) {
        close(fd);
        return -ENOMEM;
    }
    h->fd = fd;
    int r;
    struct velo_uapi_info info;
    memset(&info, 0, sizeof info);
    info.argsz = sizeof info;
    if (ioctl(fd, VELO_IOC_INFO, &info) < 0) {
        r = errno == ENOTTY || errno == EINVAL ? -ENODEV : neg_errno();  // not a VELO device
        // a driver of ABI 2 or 3 does not know this number but answers its own: too old (EPROTO)
        struct velo_uapi_info old;
        memset(&old, 0, sizeof old);
        old.argsz = sizeof old;
        if (r == -ENODEV && ioctl(fd, VELO_IOC_INFO_V3, &old) == 0) r = -EPROTO;
        goto fail;
    }
    // a newer driver still serves this ABI (argsz): only an older one is refused
    if (info.uapi_version < VELO_UAPI_VERSION || info.spec_hash != VELO_SPEC_HASH || info.msg_max != VELO_MSG_MAX) {
        r = -EPROTO;
        goto fail;
    }
    uint64_t job_key = 0;
    const char* jk = getenv("VELO_JOB_KEY");  // the job's secret, handed out by the launcher
    if (jk && *jk) {
        char* end = NULL;
        errno = 0;
        job_key = strtoull(jk, &end, 0);
        if (errno || !end || *end || !job_key) {
            r = -EINVAL;
            goto fail;
        }
    }
    struct velo_uapi_ep_open o;
    memset(&o, 0, sizeof o);
    o.argsz = sizeof o;
    o.job_key = job_key;
    o.vpid = a->vpid;
    o.log2_lines = a->ring_log2;
    o.ctl_log2_lines = VELO_CTL_RING_LOG2_DEFAULT;
    if (ioctl(fd, VELO_IOC_EP_OPEN, &o) < 0) {
        r = neg_errno();
        goto fail;
    }
    h->ring_bytes = o.ring_bytes;
    h->ctl_ring_bytes = o.ctl_ring_bytes;
    h->ring = mmap(NULL, o.ring_bytes, PROT_READ, MAP_SHARED, fd, (off_t)VELO_MMAP_RING);
    h->ctl_ring = mmap(NULL, o.ctl_ring_bytes, PROT_READ, MAP_SHARED, fd, (off_t)VELO_MMAP_CTL_RING);
    h->user_page = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd, (off_t)VELO_MMAP_USER_PAGE);
    h->ctl_user_page = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd, (off_t)VELO_MMAP_CTL_USER_PAGE);
    if (h->ring == MAP_FAILED || h->ctl_ring == MAP_FAILED || h->user_page == MAP_FAILED ||
        h->ctl_user_page == MAP_FAILED) {
        r = neg_errno();
        if (h->ring == MAP_FAILED) h->ring = NULL;
        if (h->ctl_ring == MAP_FAILED) h->ctl_ring = NULL;
        if (h->user_page == MAP_FAILED) h->user_page = NULL;
        if (h->ctl_user_page == MAP_FAILED) h->ctl_user_page = NULL;
        goto fail;
    }
    velo__be_set(b, h, info.node_id, o.out_vpid,
                 (struct velo_be_ring){(uint8_t*)h->ring, o.out_log2_lines,
                                       (volatile uint32_t*)((uint8_t*)h->user_page + o.user_page_off)},
                 (struct velo_be_ring){(uint8_t*)h->ctl_ring, o.out_ctl_log2_lines,
                                       (volatile uint32_t*)((uint8_t*)h->ctl_user_page + o.user_page_off)});
    b->node_bits = info.node_bits;
    b->vpid_bits = info.vpid_bits;
    return 0;
fail:
    hw_free(h);
    return r;
}

const struct velo_backend velo__backend_hw = {
    VELO_BACKEND_OPS(hw, "hw"), .probe = hw_probe,         .spin_polls = 20000,
    .rma_map = hw_rma_map,      .rma_ioctl = hw_rma_ioctl,
};
