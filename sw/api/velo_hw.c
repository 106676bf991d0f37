// SPDX-License-Identifier: MIT
// The hw backend: a VELO NIC behind the Linux driver (/dev/veloN, ABI in velo/velo_uapi.h).
// Rings and the read-pointer user pages are mapped from the driver, each granted send-window
// page is mapped write-combined; sends and polls then run without the kernel. The "mock"
// variant puts the same fast paths on plain memory (tests, instruction-count benchmark).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "velo/velo_uapi.h"
#include "velo_internal.h"

struct velo_hw_state {
    int fd;
    int mock;
    void* ring;
    size_t ring_bytes;
    void* ctl_ring;
    size_t ctl_ring_bytes;
    void* user_page;
    void* ctl_user_page;
    volatile uint32_t mock_rp[2];  // mock: the MB_RP registers
    // RMA (after RMA_SETUP): the notification queue and the command page
    void* nq;
    size_t nq_bytes;
    void* rma_cmd;
    // mock RMA: test memory and a test driver for the RMA ioctls
    void* mock_nq;
    unsigned mock_nq_log2;
    void* mock_cmd;
    int (*mock_ioctl)(void* ctx, unsigned long req, void* arg);
    void* mock_ctx;
    volatile uint32_t mock_nq_rp;  // mock: NQ_RP
};

static int neg_errno(void) {
    return errno ? -errno : -EIO;
}

static int hw_grant(struct velo_ep* ep, unsigned from, unsigned node, unsigned vpid, uint8_t** win) {
    struct velo_hw_state* h = ep->hw;
    if (h->mock) return -EOPNOTSUPP;
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
    *win = (uint8_t*)p;
    return (int)g.grant_id;
}

static int hw_revoke(struct velo_ep* ep, int page, uint8_t* win) {
    struct velo_hw_state* h = ep->hw;
    if (h->mock) return 0;
    if (win) munmap(win, 4096);
    struct velo_uapi_revoke rv = {.argsz = sizeof rv, .flags = 0, .grant_id = (uint32_t)page, .rsvd = 0};
    return ioctl(h->fd, VELO_IOC_REVOKE, &rv) < 0 ? neg_errno() : 0;
}

static int hw_store(struct velo_ep* ep, int page, uint8_t* win, unsigned off, const void* data, unsigned bytes) {
    (void)ep;
    (void)page;
    if (!win || off + bytes > 4096) return -EINVAL;
    velo__hw_store_slow(win + off, data, bytes);
    return 0;
}

static int hw_write_rp(struct velo_ep* ep, struct velo_ring* r, uint32_t rp) {
    (void)ep;
    // an uncached store into the vpid's own BAR0 page, posted in order behind earlier sends
    *r->rp_reg = rp & ((1u << VELO_MBOX_PTR_BITS) - 1);
    return 0;
}

static int hw_sleep(struct velo_ep* ep, int64_t timeout_ns) {
    struct velo_hw_state* h = ep->hw;
    if (h->mock) {
        const int64_t t = timeout_ns < 0 || timeout_ns > 100000 ? 100000 : timeout_ns;
        struct timespec ts = {0, (long)t};
        nanosleep(&ts, NULL);
        return 0;
    }
    if (ep->divert) return 0;
    // both rings: a credit or a connection answer on the control ring wakes us as well (the
    // driver arms the NIC's interrupt for both vpids, checks the lines again, then sleeps)
    struct velo_uapi_wait w;
    memset(&w, 0, sizeof w);
    w.argsz = sizeof w;
    w.flags = VELO_WAIT_DATA | VELO_WAIT_CTL;
    w.rp = velo__ring_rp(&ep->data, ep->cur);
    w.ctl_rp = velo__ring_rp(&ep->ctl, ep->ctl.cur);
    w.timeout_ns = timeout_ns < 0 ? VELO_WAIT_FOREVER : (uint64_t)timeout_ns;
    if (ioctl(h->fd, VELO_IOC_WAIT, &w) < 0) {
        if (errno == ETIMEDOUT) return 0;
        if (errno == EINTR) return -EINTR;
        if (errno == ENODEV) {
            ep->dead = 1;
            return -EPIPE;
        }
        return neg_errno();
    }
    return 0;
}

static int hw_clock(const struct velo_ep* ep, uint64_t* now, uint64_t* last_rx) {
    (void)ep;
    (void)now;
    (void)last_rx;
    return -EOPNOTSUPP;
}

static void hw_close(struct velo_ep* ep) {
    struct velo_hw_state* h = ep->hw;
    if (!h) return;
    if (h->mock) {
        free(h->ring);
        free(h->ctl_ring);
    } else {
        for (struct velo_conn* c = ep->conns; c; c = c->all_next) {
            if (c->win) munmap(c->win, 4096);
            if (c->ctl_win) munmap(c->ctl_win, 4096);
        }
        for (unsigned i = 0; i < 256; ++i)
            for (struct velo_peer* p = ep->peer_hash[i]; p; p = p->hnext)
                if (p->reply_win) munmap(p->reply_win, 4096);
        if (h->ring) munmap(h->ring, h->ring_bytes);
        if (h->ctl_ring) munmap(h->ctl_ring, h->ctl_ring_bytes);
        if (h->user_page) munmap(h->user_page, 4096);
        if (h->ctl_user_page) munmap(h->ctl_user_page, 4096);
        if (h->nq) munmap(h->nq, h->nq_bytes);
        if (h->rma_cmd) munmap(h->rma_cmd, 4096);
        close(h->fd);  // the driver disables and quiesces both vpids before freeing the rings
    }
    free(h);
    ep->hw = NULL;
}

// RMA: the data vpid's notification queue and its BAR4 command page (docs/driver.md "RMA").
static int hw_rma_map(struct velo_ep* ep, struct velo_rma_map* m) {
    struct velo_hw_state* h = ep->hw;
    memset(m, 0, sizeof *m);
    if (h->mock) {
        if (!h->mock_nq) return -EOPNOTSUPP;
        m->nq = (const volatile uint8_t*)h->mock_nq;
        m->nq_log2 = h->mock_nq_log2;
        m->nq_rp = &h->mock_nq_rp;
        m->cmd_page = (uint8_t*)h->mock_cmd;
        m->region_bits = VELO_DEFAULT_RMA_REGION_BITS;
        m->max_regions = 1u << VELO_DEFAULT_RMA_REGION_BITS;
        return 0;
    }
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

static int hw_rma_ioctl(struct velo_ep* ep, unsigned long req, void* arg) {
    struct velo_hw_state* h = ep->hw;
    if (h->mock) return h->mock_ioctl ? h->mock_ioctl(h->mock_ctx, req, arg) : -EOPNOTSUPP;
    if (ioctl(h->fd, req, arg) < 0) {
        if (errno == ENODEV) ep->dead = 1;
        return neg_errno();
    }
    return 0;
}

static const struct velo_backend hw_backend = {
    .name = "hw",
    .grant = hw_grant,
    .revoke = hw_revoke,
    .store = hw_store,
    .write_rp = hw_write_rp,
    .sleep = hw_sleep,
    .spin_polls = 20000,
    .clock = hw_clock,
    .close = hw_close,
    .rma_map = hw_rma_map,
    .rma_ioctl = hw_rma_ioctl,
};

int velo__hw_open(struct velo_ep* ep, const char* dev, const velo_open_attr_t* a) {
    if (a->node >= 0) return -EINVAL;  // the node is the board's
    int fd = open(dev, O_RDWR | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT || errno == ENXIO ? -ENODEV : neg_errno();
    struct velo_hw_state* h = calloc(1, sizeof *h);
    if (!h) {
        close(fd);
        return -ENOMEM;
    }
    h->fd = fd;
    ep->hw = h;
    ep->be = &hw_backend;
    int r;
    struct velo_uapi_info info;
    memset(&info, 0, sizeof info);
    info.argsz = sizeof info;
    if (ioctl(fd, VELO_IOC_INFO, &info) < 0) {
        r = errno == ENOTTY || errno == EINVAL ? -ENODEV : neg_errno();  // not a VELO device
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
    ep->node = info.node_id;
    ep->node_bits = info.node_bits;
    ep->vpid_bits = info.vpid_bits;
    ep->nodes = 0;
    ep->vpid = o.out_vpid;
    ep->ctl_vpid = o.out_ctl_vpid;
    velo__ring_init(&ep->data, (uint8_t*)h->ring, o.out_log2_lines);
    velo__ring_init(&ep->ctl, (uint8_t*)h->ctl_ring, o.out_ctl_log2_lines);
    ep->data.rp_reg = (volatile uint32_t*)((uint8_t*)h->user_page + o.user_page_off);
    ep->ctl.rp_reg = (volatile uint32_t*)((uint8_t*)h->ctl_user_page + o.user_page_off);
    velo__ep_set_data_ring(ep);
    return 0;
fail:
    hw_close(ep);
    return r;
}

// ---------------------------------------------------------------------------- mock mapping
int velo__mock_open(struct velo_ep** out, unsigned node, unsigned vpid, unsigned log2_lines) {
    velo_open_attr_t a;
    velo_open_attr_init(&a);
    struct velo_ep* ep = calloc(1, sizeof *ep);
    struct velo_hw_state* h = calloc(1, sizeof *h);
    if (!ep || !h) {
        free(ep);
        free(h);
        return -ENOMEM;
    }
    if (velo__ep_init(ep, &a)) {
        free(ep);
        free(h);
        return -ENOMEM;
    }
    h->mock = 1;
    h->fd = -1;
    h->ring_bytes = (size_t)64 << log2_lines;
    h->ctl_ring_bytes = (size_t)64 << VELO_RING_LOG2_MIN;
    h->ring = aligned_alloc(4096, h->ring_bytes < 4096 ? 4096 : h->ring_bytes);
    h->ctl_ring = aligned_alloc(4096, 4096);
    if (!h->ring || !h->ctl_ring) {
        free(h->ring);
        free(h->ctl_ring);
        free(h);
        free(ep);
        return -ENOMEM;
    }
    memset(h->ring, 0, h->ring_bytes);
    memset(h->ctl_ring, 0, 4096);
    ep->hw = h;
    ep->be = &hw_backend;
    ep->node = node;
    ep->vpid = vpid;
    ep->node_bits = VELO_DEFAULT_NODE_BITS;
    ep->vpid_bits = VELO_DEFAULT_VPID_BITS;
    ep->ctl_vpid = VELO_CTL_VPID(vpid, ep->vpid_bits);
    velo__ring_init(&ep->data, (uint8_t*)h->ring, log2_lines);
    velo__ring_init(&ep->ctl, (uint8_t*)h->ctl_ring, VELO_RING_LOG2_MIN);
    ep->data.rp_reg = &h->mock_rp[0];
    ep->ctl.rp_reg = &h->mock_rp[1];
    velo__ep_set_data_ring(ep);
    // the same thresholds as velo_open
    velo__ep_finish(ep);
    *out = ep;
    return 0;
}

int velo__mock_connect(struct velo_ep* ep, velo_addr_t dst, uint8_t* window, uint32_t credit, velo_conn_t** out) {
    struct velo_conn* c = calloc(1, sizeof *c);
    if (!c) return -ENOMEM;
    c->ep = ep;
    c->node = dst.node;
    c->vpid = dst.vpid;
    c->win = window;
    c->ctl_page = -1;
    pthread_mutex_init(&c->big_lock, NULL);  // (no window granted: messages > 64 B get -EMSGSIZE)
    atomic_store(&c->left, (int32_t)credit);
    c->credit = &c->left;
    c->limit_seen = credit;
    atomic_store(&c->state, CONN_OPEN);
    c->all_next = ep->conns;
    ep->conns = c;
    ++ep->nconns;
    *out = c;
    return 0;
}

uint8_t* velo__mock_ring(struct velo_ep* ep) {
    return ep->data.base;
}

uint32_t velo__mock_rp(struct velo_ep* ep) {
    return ep->hw ? ep->hw->mock_rp[0] : 0;
}

uint32_t velo__mock_batch(struct velo_ep* ep) {
    return ep->batch;
}

// RMA on the mock: the notification queue (2^log2 entries, written by the test), the command
// page (4096 bytes) and a test driver answering REGISTER / DEREGISTER / REPIN (0 or -errno).
int velo__mock_rma(struct velo_ep* ep, void* nq, unsigned log2, void* cmd_page,
                   int (*fn)(void* ctx, unsigned long req, void* arg), void* ctx) {
    struct velo_hw_state* h = ep->hw;
    if (!h || !h->mock) return -EINVAL;
    h->mock_nq = nq;
    h->mock_nq_log2 = log2;
    h->mock_cmd = cmd_page;
    h->mock_ioctl = fn;
    h->mock_ctx = ctx;
    return 0;
}

uint32_t velo__mock_nq_rp(struct velo_ep* ep) {
    return ep->hw ? ep->hw->mock_nq_rp : 0;
}
