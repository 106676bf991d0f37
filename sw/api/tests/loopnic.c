// SPDX-License-Identifier: MIT
// Software NIC model for libvelo's unit tests (see loopnic.h).
#define _GNU_SOURCE
#include "loopnic.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "velo/velo_hw.h"
#include "velo/velo_uapi.h"
#include "velo_backend.h"

#define MAXEP 64
#define MAXGRANT 4096

struct pkt {
    unsigned dnode, dvpid;  // destination
    uint64_t hdr;           // MBOX_HDR without PHASE/TAIL/LINES
    unsigned area_len;
    uint8_t area[64];
    struct pkt* next;
};

struct lep {
    struct velo_ep* ep;
    unsigned node, vpid, ctl_vpid;
    uint32_t wp[2], rp[2];  // NIC pointers: data ring, control ring
    uint8_t* ring[2];
    unsigned log2[2];
    int open;
};

struct grant {
    struct lep* src;
    unsigned from, dnode, dvpid;
};

struct loopnic {
    pthread_mutex_t mu;
    unsigned split_pct;
    uint64_t rng;
    struct lep eps[MAXEP];
    unsigned neps;
    struct grant grants[MAXGRANT];
    unsigned ngrants;
    struct pkt *head, *tail;  // held packets, in order
    unsigned held;
    struct loopnic_stats st;
};

static struct loopnic* g_nic;  // the backend callbacks find their model here (one per test)

static uint64_t rnd(struct loopnic* n) {
    n->rng ^= n->rng << 13;
    n->rng ^= n->rng >> 7;
    n->rng ^= n->rng << 17;
    return n->rng;
}

static struct lep* find_ep(struct loopnic* n, unsigned node, unsigned vpid, int* ring) {
    for (unsigned i = 0; i < n->neps; ++i) {
        struct lep* e = &n->eps[i];
        if (!e->open || e->node != node) continue;
        if (e->vpid == vpid) {
            *ring = 0;
            return e;
        }
        if (e->ctl_vpid == vpid) {
            *ring = 1;
            return e;
        }
    }
    return NULL;
}

// the backend's state of an endpoint is its lep
static struct lep* lep_of_be(const struct velo_be* b) {
    return (struct lep*)(void*)b->dev;
}

static struct lep* lep_of(struct loopnic* n, const velo_ep_t* ep) {
    for (unsigned i = 0; i < n->neps; ++i)
        if (n->eps[i].ep == ep) return &n->eps[i];
    return NULL;
}

// Write one entry into a ring as the completer does: the second line first, each line's header
// word last.
static int deliver(struct loopnic* n, struct pkt* p) {
    int ring;
    struct lep* e = find_ep(n, p->dnode, p->dvpid, &ring);
    if (!e) {
        ++n->st.dropped;
        return 1;
    }
    const unsigned log2 = e->log2[ring];
    const uint32_t size = 1u << log2;
    const unsigned lines = p->area_len > VELO_MBOX_PAYLOAD_LINE0 ? 2 : 1;
    if (e->wp[ring] - e->rp[ring] + lines > size) {
        if (getenv("LOOPNIC_DEBUG"))
            fprintf(stderr, "full: node %u vpid %u ring %d wp %u rp %u lines %u\n", e->node, e->vpid, ring, e->wp[ring],
                    e->rp[ring], lines);
        return 0;  // full: hold (back pressure)
    }
    uint32_t wp = e->wp[ring];
    uint8_t* base = e->ring[ring];
    for (int l = (int)lines - 1; l >= 0; --l) {
        uint32_t pos = wp + (uint32_t)l;
        uint8_t* line = base + 64 * (pos & (size - 1));
        uint64_t phase = ((pos >> log2) & 1) ^ 1;
        uint64_t h = p->hdr | VELO_FIELD_PREP(VELO_MBOX_HDR_PHASE, phase) |
                     VELO_FIELD_PREP(VELO_MBOX_HDR_LINES, lines) | VELO_FIELD_PREP(VELO_MBOX_HDR_TAIL, l == 1);
        unsigned from = l == 0 ? 0 : VELO_MBOX_PAYLOAD_LINE0;
        unsigned to =
            l == 0 ? (p->area_len < VELO_MBOX_PAYLOAD_LINE0 ? p->area_len : VELO_MBOX_PAYLOAD_LINE0) : p->area_len;
        memcpy(line + 8, p->area + from, to - from);
        __atomic_store_n((uint64_t*)line, h, __ATOMIC_RELEASE);
    }
    e->wp[ring] = wp + lines;
    ++n->st.packets;
    if (p->hdr & (1ull << VELO_MBOX_HDR_FRAG_SHIFT)) ++n->st.fragments;
    return 1;
}

static unsigned pump_once(struct loopnic* n);
static unsigned pump_locked(struct loopnic* n) {
    unsigned k = pump_once(n);
    if (n->held > n->st.held_max) n->st.held_max = n->held;  // packets a full ring holds back
    return k;
}

static unsigned pump_once(struct loopnic* n) {
    unsigned moved = 0;
    // packets for different rings do not block each other; for one ring they stay in order
    struct pkt** pp = &n->head;
    struct pkt* prev = NULL;
    unsigned blocked[MAXEP * 2][2];
    unsigned nblocked = 0;
    while (*pp) {
        struct pkt* p = *pp;
        int is_blocked = 0;
        for (unsigned i = 0; i < nblocked; ++i)
            if (blocked[i][0] == p->dnode && blocked[i][1] == p->dvpid) is_blocked = 1;
        if (!is_blocked && deliver(n, p)) {
            *pp = p->next;
            if (n->tail == p) n->tail = prev;
            free(p);
            --n->held;
            ++moved;
            continue;
        }
        if (!is_blocked && nblocked < MAXEP * 2) {
            blocked[nblocked][0] = p->dnode;
            blocked[nblocked][1] = p->dvpid;
            ++nblocked;
        }
        prev = p;
        pp = &p->next;
    }
    return moved;
}

static void enqueue(struct loopnic* n, struct pkt* p) {
    p->next = NULL;
    if (n->tail)
        n->tail->next = p;
    else
        n->head = p;
    n->tail = p;
    ++n->held;
}

// A send-window write of bytes [o, o + k) of a message of length len, as the requester makes it
static void packet(struct loopnic* n, struct grant* g, unsigned len, unsigned o, const uint8_t* data, unsigned k) {
    struct pkt* p = calloc(1, sizeof *p);
    p->dnode = g->dnode;
    p->dvpid = g->dvpid;
    const unsigned src_vpid = g->from ? g->src->ctl_vpid : g->src->vpid;
    const int frag = o != 0 || k != len;
    p->hdr = VELO_FIELD_PREP(VELO_MBOX_HDR_TYPE, VELO_PKT_TYPE_VELO) |
             VELO_FIELD_PREP(VELO_MBOX_HDR_MSG_LEN_M1, len - 1) | VELO_FIELD_PREP(VELO_MBOX_HDR_FRAG_OFF, o) |
             VELO_FIELD_PREP(VELO_MBOX_HDR_SRC_NODE, g->src->node) | VELO_FIELD_PREP(VELO_MBOX_HDR_SRC_VPID, src_vpid) |
             VELO_FIELD_PREP(VELO_MBOX_HDR_DST_VPID, g->dvpid) | VELO_FIELD_PREP(VELO_MBOX_HDR_FRAG_LEN_M1, k - 1) |
             VELO_FIELD_PREP(VELO_MBOX_HDR_FRAG, frag);
    p->area_len = o % 4 + k;
    memset(p->area, 0xEE, o % 4);  // pad bytes: whatever the DW held
    memcpy(p->area + o % 4, data, k);
    enqueue(n, p);
}

// ---------------------------------------------------------------------------- backend
static int lb_grant(struct velo_be* b, unsigned from, unsigned node, unsigned vpid, uint8_t** win) {
    struct loopnic* n = g_nic;
    pthread_mutex_lock(&n->mu);
    struct lep* src = lep_of_be(b);
    int ring;
    int r;
    if (!find_ep(n, node, vpid, &ring)) {
        r = -ECONNREFUSED;  // what the fabric answers for an empty destination
    } else if (n->ngrants == MAXGRANT) {
        r = -ENOSPC;
    } else {
        n->grants[n->ngrants] = (struct grant){src, from, node, vpid};
        r = (int)n->ngrants++;
    }
    pthread_mutex_unlock(&n->mu);
    *win = NULL;
    return r;
}

static int lb_revoke(struct velo_be* b, int page, uint8_t* win) {
    (void)b;
    (void)page;
    (void)win;
    return 0;
}

static int lb_store(struct velo_be* b, int page, uint8_t* win, unsigned off, const void* data, unsigned bytes) {
    (void)win;
    (void)b;
    struct loopnic* n = g_nic;
    if (page < 0 || (off & 63) + bytes > 64) return -EINVAL;
    pthread_mutex_lock(&n->mu);
    if ((unsigned)page >= n->ngrants) {
        pthread_mutex_unlock(&n->mu);
        return -EINVAL;
    }
    struct grant* g = &n->grants[page];
    const unsigned len = (off >> 6) + 1, o = off & 63;
    unsigned k = bytes;
    if (o < len) {
        if (o + k > len) k = len - o;  // bytes past the message are clipped
        const uint8_t* d = (const uint8_t*)data;
        if (n->split_pct && k >= 2 && rnd(n) % 100 < n->split_pct) {
            unsigned cut = 1 + (unsigned)(rnd(n) % (k - 1));
            packet(n, g, len, o, d, cut);
            packet(n, g, len, o + cut, d + cut, k - cut);
        } else {
            packet(n, g, len, o, d, k);
        }
    }
    pump_locked(n);
    pthread_mutex_unlock(&n->mu);
    return 0;
}

static int lb_write_rp(struct velo_be* b, unsigned ring, uint32_t rp) {
    struct loopnic* n = g_nic;
    pthread_mutex_lock(&n->mu);
    struct lep* e = lep_of_be(b);
    if (e) {
        const unsigned k = ring == VELO_BE_CTL;
        // the NIC keeps MBOX_PTR_BITS; the model keeps the full value for the test's checks
        e->rp[k] = rp;
        ++n->st.rp_writes;
    }
    pump_locked(n);
    pthread_mutex_unlock(&n->mu);
    return 0;
}

static int lb_sleep(struct velo_be* b, const struct velo_be_wait* w, int64_t ns) {
    (void)b;
    (void)w;
    (void)ns;
    loopnic_pump(g_nic);
    sched_yield();
    return 0;
}

static int lb_clock(const struct velo_be* b, uint64_t* now, uint64_t* last) {
    (void)b;
    if (now) *now = 0;
    if (last) *last = 0;
    return 0;
}

static void lb_close(struct velo_be* b) {
    struct loopnic* n = g_nic;
    pthread_mutex_lock(&n->mu);
    struct lep* e = lep_of_be(b);
    if (e) {
        e->open = 0;
        free(e->ring[0]);
        free(e->ring[1]);
        e->ring[0] = e->ring[1] = NULL;
    }
    pthread_mutex_unlock(&n->mu);
}

// the endpoint loopnic_open prepared for a->node, a->vpid
static int lb_open(struct velo_be* b, const char* arg, const velo_open_attr_t* a) {
    (void)arg;
    struct loopnic* n = g_nic;
    int ring;
    struct lep* e = find_ep(n, (unsigned)a->node, (unsigned)a->vpid, &ring);
    if (!e || e->ep) return -ENODEV;
    velo__be_set(b, (struct velo_dev*)(void*)e, e->node, e->vpid,
                 (struct velo_be_ring){e->ring[0], e->log2[0], NULL},  // read pointers: lb_write_rp
                 (struct velo_be_ring){e->ring[1], e->log2[1], NULL});
    return 0;
}

static const struct velo_backend loop_backend = {
    VELO_BACKEND_OPS(lb, "loop"), .store = lb_store, .write_rp = lb_write_rp, .spin_polls = 4, .clock = lb_clock,
};

// ---------------------------------------------------------------------------- API
struct loopnic* loopnic_new(unsigned split_pct, uint64_t seed) {
    struct loopnic* n = calloc(1, sizeof *n);
    pthread_mutex_init(&n->mu, NULL);
    n->split_pct = split_pct;
    n->rng = seed * 2654435761u + 1;
    g_nic = n;
    return n;
}

void loopnic_free(struct loopnic* n) {
    while (n->head) {
        struct pkt* p = n->head;
        n->head = p->next;
        free(p);
    }
    for (unsigned i = 0; i < n->neps; ++i) {
        free(n->eps[i].ring[0]);
        free(n->eps[i].ring[1]);
    }
    pthread_mutex_destroy(&n->mu);
    if (g_nic == n) g_nic = NULL;
    free(n);
}

int loopnic_open(struct loopnic* n, unsigned node, int vpid, unsigned ring_log2, velo_ep_t** out) {
    if (n->neps == MAXEP) return -ENOSPC;
    unsigned v = 0;
    if (vpid >= 0) {
        v = (unsigned)vpid;
    } else {
        for (v = 0; v < 128; ++v) {
            int r;
            if (!find_ep(n, node, v, &r)) break;
        }
    }
    velo_open_attr_t a;
    velo_open_attr_init(&a);
    a.connect_timeout_ms = 2000;
    a.node = (int)node;
    a.vpid = (int)v;
    struct lep* e = &n->eps[n->neps++];
    memset(e, 0, sizeof *e);
    e->node = node;
    e->vpid = v;
    e->ctl_vpid = VELO_CTL_VPID(v, VELO_DEFAULT_VPID_BITS);
    e->log2[0] = ring_log2;
    e->log2[1] = VELO_CTL_RING_LOG2_DEFAULT;
    for (int k = 0; k < 2; ++k) {
        e->ring[k] = aligned_alloc(4096, ((size_t)64 << e->log2[k]) < 4096 ? 4096 : ((size_t)64 << e->log2[k]));
        memset(e->ring[k], 0, (size_t)64 << e->log2[k]);
    }
    e->open = 1;
    velo_ep_t* ep;
    int r = velo__ep_open(&loop_backend, NULL, &a, &ep);
    if (r) return r;
    e->ep = ep;
    *out = ep;
    return 0;
}

unsigned loopnic_pump(struct loopnic* n) {
    pthread_mutex_lock(&n->mu);
    unsigned k = pump_locked(n);
    pthread_mutex_unlock(&n->mu);
    return k;
}

unsigned loopnic_held(struct loopnic* n) {
    pthread_mutex_lock(&n->mu);
    unsigned k = n->held;
    pthread_mutex_unlock(&n->mu);
    return k;
}

void loopnic_ptrs(struct loopnic* n, const velo_ep_t* ep, uint32_t* wp, uint32_t* rp) {
    pthread_mutex_lock(&n->mu);
    struct lep* e = lep_of(n, ep);
    *wp = e ? e->wp[0] : 0;
    *rp = e ? e->rp[0] : 0;
    pthread_mutex_unlock(&n->mu);
}

void loopnic_stats(struct loopnic* n, struct loopnic_stats* s) {
    pthread_mutex_lock(&n->mu);
    *s = n->st;
    pthread_mutex_unlock(&n->mu);
}

int loopnic_close(struct loopnic* n, velo_ep_t* ep) {
    (void)n;
    return velo_close(ep);
}
