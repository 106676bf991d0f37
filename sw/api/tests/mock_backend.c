// SPDX-License-Identifier: MIT
// A test-only backend (mock.h): the hw fast paths over plain memory. Its rings and read-pointer
// registers are memory the test writes and reads as the NIC would; the window pages of its
// connections are the test's; RMA runs on a test notification queue, command page and driver.
// Used by the unit tests and the instruction-count benchmark (velo-bench-api).
#define _GNU_SOURCE
#include "mock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "velo/velo_uapi.h"
#include "velo_ep.h"
#include "velo_rma_state.h"

struct velo_dev {
    void* ring;
    size_t ring_bytes;
    void* ctl_ring;
    volatile uint32_t rp[2];  // the MB_RP registers
    // RMA: test memory and a test driver for the RMA ioctls (velo__mock_rma)
    struct mock_rma {
        void* nq;
        unsigned nq_log2;
        void* cmd;
        int (*ioctl)(void* ctx, unsigned long req, void* arg);
        void* ctx;
    } rma;
    volatile uint32_t nq_rp;  // NQ_RP
};

static int mock_grant(struct velo_be* b, unsigned from, unsigned node, unsigned vpid, uint8_t** win) {
    (void)b;
    (void)from;
    (void)node;
    (void)vpid;
    (void)win;
    return -EOPNOTSUPP;  // connections come from velo__mock_connect
}

static int mock_revoke(struct velo_be* b, int page, uint8_t* win) {
    (void)b;
    (void)page;
    (void)win;
    return 0;
}

static int mock_sleep(struct velo_be* b, const struct velo_be_wait* w, int64_t timeout_ns) {
    (void)b;
    (void)w;
    const int64_t t = timeout_ns < 0 || timeout_ns > 100000 ? 100000 : timeout_ns;
    struct timespec ts = {0, (long)t};
    nanosleep(&ts, NULL);
    return 0;
}

static void mock_free(struct velo_dev* d) {
    free(d->ring);
    free(d->ctl_ring);
    free(d);
}

static void mock_close(struct velo_be* b) {
    mock_free(b->dev);
}

static int mock_rma_map(struct velo_be* b, struct velo_rma_map* m) {
    struct velo_dev* d = b->dev;
    if (!d->rma.nq) return -EOPNOTSUPP;
    m->nq = (const volatile uint8_t*)d->rma.nq;
    m->nq_log2 = d->rma.nq_log2;
    m->nq_rp = &d->nq_rp;
    m->cmd_page = (uint8_t*)d->rma.cmd;
    m->region_bits = VELO_DEFAULT_RMA_REGION_BITS;
    m->max_regions = 1u << VELO_DEFAULT_RMA_REGION_BITS;
    return 0;
}

static int mock_rma_ioctl(struct velo_be* b, unsigned long req, void* arg) {
    struct velo_dev* d = b->dev;
    return d->rma.ioctl ? d->rma.ioctl(d->rma.ctx, req, arg) : -EOPNOTSUPP;
}

// a->node, a->vpid: the endpoint's address; a->ring_log2: its data ring
static int mock_open(struct velo_be* b, const char* arg, const velo_open_attr_t* a) {
    (void)arg;
    struct velo_dev* d = calloc(1, sizeof *d);
    if (!d) return -ENOMEM;
    d->ring_bytes = (size_t)64 << a->ring_log2;
    d->ring = aligned_alloc(4096, d->ring_bytes < 4096 ? 4096 : d->ring_bytes);
    d->ctl_ring = aligned_alloc(4096, 4096);
    if (!d->ring || !d->ctl_ring) {
        mock_free(d);
        return -ENOMEM;
    }
    memset(d->ring, 0, d->ring_bytes);
    memset(d->ctl_ring, 0, 4096);
    velo__be_set(b, d, (uint32_t)a->node, (uint32_t)a->vpid,
                 (struct velo_be_ring){(uint8_t*)d->ring, a->ring_log2, &d->rp[0]},
                 (struct velo_be_ring){(uint8_t*)d->ctl_ring, VELO_RING_LOG2_MIN, &d->rp[1]});
    return 0;
}

static const struct velo_backend mock_backend = {
    VELO_BACKEND_OPS(mock, "mock"),
    .spin_polls = 20000,
    .rma_map = mock_rma_map,
    .rma_ioctl = mock_rma_ioctl,
};

int velo__mock_open(struct velo_ep** out, unsigned node, unsigned vpid, unsigned log2_lines) {
    velo_open_attr_t a;
    velo_open_attr_init(&a);
    a.node = (int)node;
    a.vpid = (int)vpid;
    a.ring_log2 = log2_lines;
    return velo__ep_open(&mock_backend, NULL, &a, out);
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
    return ep->b.dev ? ep->b.dev->rp[0] : 0;
}

uint32_t velo__mock_batch(struct velo_ep* ep) {
    return ep->batch;
}

int velo__mock_rma(struct velo_ep* ep, void* nq, unsigned log2, void* cmd_page,
                   int (*fn)(void* ctx, unsigned long req, void* arg), void* ctx) {
    struct velo_dev* d = ep->b.dev;
    if (!d || ep->be != &mock_backend) return -EINVAL;
    d->rma = (struct mock_rma){nq, log2, cmd_page, fn, ctx};
    return 0;
}

uint32_t velo__mock_nq_rp(struct velo_ep* ep) {
    return ep->b.dev ? ep->b.dev->nq_rp : 0;
}

int velo__rma_set_limits(struct velo_ep* ep, unsigned cache_max, uint32_t piece_max) {
    struct velo_rma* s;
    pthread_mutex_lock(&ep->rma_lock);
    int r = velo__rma_get(ep, &s);
    if (r == 0) {
        s->cache_max = cache_max;
        if (piece_max) s->piece_max = piece_max;
    }
    pthread_mutex_unlock(&ep->rma_lock);
    return r;
}
