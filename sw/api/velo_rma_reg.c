// SPDX-License-Identifier: MIT
// libvelo RMA registrations (docs/rma.md, docs/api.md "RMA"): the endpoint's RMA state (set up
// at the first call from the backend's mappings), registrations through the driver with a
// bounded LRU cache of idle ones (velo_register, velo_deregister, velo_region_*), and close.
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "velo/velo_uapi.h"
#include "velo_rma_state.h"

// ============================================================================ setup
int velo__rma_get(struct velo_ep* ep, struct velo_rma** out) {
    if (ep->rma) {
        *out = ep->rma;
        return 0;
    }
    if (ep->b.dead) return -EPIPE;
    if (!ep->be->rma_map || !ep->be->rma_ioctl) return -ENOTSUP;
    struct velo_rma_map m;
    memset(&m, 0, sizeof m);
    int r = ep->be->rma_map(&ep->b, &m);
    if (r < 0) return r;
    if (m.nq_log2 < VELO_RMA_NQ_LOG2_MIN || m.nq_log2 > VELO_RMA_NQ_LOG2_MAX || !m.nq ||
        (!m.cmd_page && !ep->be->rma_cmd) || (!m.nq_rp && !ep->be->rma_write_rp))
        return -EPROTO;
    struct velo_rma* s = calloc(1, sizeof *s);
    if (!s) return -ENOMEM;
    s->ep = ep;
    s->m = m;
    s->mask = (1u << m.nq_log2) - 1;
    s->rp_batch = (1u << m.nq_log2) / 4 ? (1u << m.nq_log2) / 4 : 1;
    const unsigned half = (1u << m.nq_log2) / 2;
    s->limit = half < VELO_RMA_SLOTS ? half : VELO_RMA_SLOTS;
    if (s->limit == 0) s->limit = 1;
    s->piece_max = VELO_RMA_LEN_MAX & ~0xFFFu;
    s->ops = calloc(s->limit, sizeof *s->ops);
    s->evq = calloc(RMA_EVQ, sizeof *s->evq);
    s->evq_cap = RMA_EVQ;
    if (!s->ops || !s->evq) {
        free(s->ops);
        free(s->evq);
        free(s);
        return -ENOMEM;
    }
    for (unsigned i = 0; i < s->limit; ++i) s->ops[i].next_free = i + 1 < s->limit ? (int)i + 1 : -1;
    s->op_free = 0;
    s->backlog = -1;
    s->cache_max = m.max_regions && m.max_regions < RMA_CACHE_DEFAULT ? m.max_regions : RMA_CACHE_DEFAULT;
    ep->rma = s;
    *out = s;
    return 0;
}

// ============================================================================ region cache
static int drv_deregister(struct velo_ep* ep, uint64_t nla) {
    struct velo_uapi_deregister d;
    memset(&d, 0, sizeof d);
    d.argsz = sizeof d;
    d.nla = nla;
    return ep->be->rma_ioctl(&ep->b, VELO_IOC_DEREGISTER, &d);
}

int velo__rma_repin(struct velo_ep* ep, uint64_t nla) {
    struct velo_uapi_repin p;
    memset(&p, 0, sizeof p);
    p.argsz = sizeof p;
    p.nla = nla & ~NLA_OFFSET_MASK;
    return ep->be->rma_ioctl(&ep->b, VELO_IOC_REPIN, &p);
}

static void lru_unlink(struct velo_rma* s, struct rc_ent* e) {
    if (e->prev)
        e->prev->next = e->next;
    else
        s->lru_head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        s->lru_tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_front(struct velo_rma* s, struct rc_ent* e) {
    e->prev = NULL;
    e->next = s->lru_head;
    if (s->lru_head) s->lru_head->prev = e;
    s->lru_head = e;
    if (!s->lru_tail) s->lru_tail = e;
}

// Out of the lookup list (the registration itself stays until its last reference).
static void rc_uncache(struct velo_rma* s, struct rc_ent* e) {
    if (!e->cached) return;
    lru_unlink(s, e);
    e->cached = 0;
    --s->ncached;
    s->cpages -= e->pages;
}

static int rc_free(struct velo_ep* ep, struct velo_rma* s, struct rc_ent* e) {
    int r = drv_deregister(ep, e->nla);
    if (e->all_prev)
        e->all_prev->all_next = e->all_next;
    else
        s->all = e->all_next;
    if (e->all_next) e->all_next->all_prev = e->all_prev;
    free(e);
    return r;
}

// Evict least recently used idle registrations while the cache holds more than `keep` or more
// than RMA_CACHE_PAGES pages.
static void rc_trim(struct velo_ep* ep, struct velo_rma* s, unsigned keep) {
    struct rc_ent* e = s->lru_tail;
    while (e && (s->ncached > keep || s->cpages > RMA_CACHE_PAGES)) {
        struct rc_ent* p = e->prev;
        if (e->refs == 0) {
            rc_uncache(s, e);
            rc_free(ep, s, e);
            ++ep->st.rma_evictions;
        }
        e = p;
    }
}

int velo__rc_put(struct velo_ep* ep, struct velo_rma* s, struct rc_ent* e) {
    if (--e->refs) return 0;
    if (!e->cached) return rc_free(ep, s, e);
    if (s->ncached > s->cache_max || s->cpages > RMA_CACHE_PAGES) rc_trim(ep, s, s->cache_max);
    return 0;
}

const velo_scope_t velo__scope_default = {VELO_SCOPE_JOB, 0, 0, 0, 0, 0, {{0, 0, 0, 0}}};

_Static_assert(VELO_SCOPE_MAX_BOXES == VELO_SCOPE_LIST_MAX, "velo.h and velo_uapi.h disagree on LIST's boxes");
_Static_assert(VELO_SCOPE_NIC_BOXES == VELO_RMA_SCOPE_BOXES, "velo.h and the spec disagree on the NIC's boxes");
_Static_assert(sizeof(velo_scope_box_t) == sizeof(struct velo_uapi_scope_box), "a scope box is 4 bytes");
_Static_assert(sizeof(struct velo_uapi_register) == 120, "REGISTER of uapi 6 is 120 bytes");

// A scope as the cache compares it: the fields its kind does not use are 0. -EINVAL for an
// unknown kind or a LIST of 0 or more than VELO_SCOPE_MAX_BOXES boxes (the driver checks the
// rest: an empty box, nodes and vpids beyond the fabric's).
static int scope_norm(const velo_scope_t* in, velo_scope_t* out) {
    memset(out, 0, sizeof *out);
    if (!in) return 0;
    out->kind = in->kind;
    switch (in->kind) {
        case VELO_SCOPE_JOB:
        case VELO_SCOPE_OWNER:
            return 0;
        case VELO_SCOPE_PEER:
            out->node_lo = in->node_lo;
            out->vpid_lo = in->vpid_lo;
            return 0;
        case VELO_SCOPE_BOX:
            out->node_lo = in->node_lo;
            out->node_hi = in->node_hi;
            out->vpid_lo = in->vpid_lo;
            out->vpid_hi = in->vpid_hi;
            return 0;
        case VELO_SCOPE_LIST:
            if (in->nboxes == 0 || in->nboxes > VELO_SCOPE_MAX_BOXES) return -EINVAL;
            out->nboxes = in->nboxes;
            memcpy(out->boxes, in->boxes, in->nboxes * sizeof in->boxes[0]);
            return 0;
        default:
            return -EINVAL;
    }
}

// Normalised scopes are equal (a LIST: the same boxes in the same order)
static int scope_same(const velo_scope_t* a, const velo_scope_t* b) {
    if (a->kind != b->kind || a->node_lo != b->node_lo || a->node_hi != b->node_hi || a->vpid_lo != b->vpid_lo ||
        a->vpid_hi != b->vpid_hi || a->nboxes != b->nboxes)
        return 0;
    for (unsigned i = 0; i < a->nboxes; ++i)
        if (a->boxes[i].node_lo != b->boxes[i].node_lo || a->boxes[i].node_hi != b->boxes[i].node_hi ||
            a->boxes[i].vpid_lo != b->boxes[i].vpid_lo || a->boxes[i].vpid_hi != b->boxes[i].vpid_hi)
            return 0;
    return 1;
}

// What the driver says the NIC checks (REGISTER's output) as velo_region_scope reports it; -EPROTO
// when it is no list of 1..VELO_SCOPE_NIC_BOXES non-empty boxes with box 0 in the single fields
static int scope_out(const struct velo_uapi_register* g, velo_scope_t* box) {
    memset(box, 0, sizeof *box);
    if (g->nboxes < 1 || g->nboxes > VELO_SCOPE_NIC_BOXES ||
        g->scope != (g->nboxes == 1 ? (uint32_t)VELO_SCOPE_BOX : (uint32_t)VELO_SCOPE_LIST) ||
        g->node_lo != g->boxes[0].node_lo || g->node_hi != g->boxes[0].node_hi || g->vpid_lo != g->boxes[0].vpid_lo ||
        g->vpid_hi != g->boxes[0].vpid_hi)
        return -EPROTO;
    box->kind = g->scope;
    box->node_lo = g->node_lo;
    box->node_hi = g->node_hi;
    box->vpid_lo = g->vpid_lo;
    box->vpid_hi = g->vpid_hi;
    box->nboxes = g->nboxes;
    for (unsigned i = 0; i < g->nboxes; ++i) {
        const struct velo_uapi_scope_box* x = &g->boxes[i];
        if (x->node_lo > x->node_hi || x->vpid_lo > x->vpid_hi) return -EPROTO;
        box->boxes[i] = (velo_scope_box_t){x->node_lo, x->node_hi, x->vpid_lo, x->vpid_hi};
    }
    return 0;
}

// A cached registration containing the range with at least `access` and the same scope (`asked`,
// normalised): a registration of another scope would let other initiators in (or keep out the
// ones the caller means), so it is never shared.
static struct rc_ent* rc_lookup(struct velo_rma* s, uintptr_t addr, size_t len, unsigned access,
                                const velo_scope_t* asked) {
    for (struct rc_ent* e = s->lru_head; e; e = e->next) {
        if (e->addr <= addr && addr - e->addr <= e->len && len <= e->len - (addr - e->addr) &&
            (e->access & access) == access && scope_same(&e->asked, asked)) {
            if (e != s->lru_head) {
                lru_unlink(s, e);
                lru_front(s, e);
            }
            return e;
        }
    }
    return NULL;
}

// The driver's "no room" answers told apart (docs/api.md "RMA", velo_strerror): a registration
// larger than the NIC's page table can ever hold (-EFBIG), the endpoint's own region limit
// (-EMFILE), the NIC's region table (-ENFILE, node-wide) or its page table (-ENOBUFS: the fabric
// says so itself; a driver that answers -ENOSPC for both tables is taken as the region table).
// Any other error is returned as it is.
static int no_room(const struct velo_rma* s, uintptr_t addr, size_t len, int r) {
    if (r != -ENOSPC && r != -ENOBUFS) return r;
    const uint64_t pages = (((uint64_t)(addr & 4095u) + len - 1) >> 12) + 1;
    if (pages > (1ull << VELO_DEFAULT_RMA_PTE_BITS)) {
        r = -EFBIG;
    } else if (r == -ENOSPC) {
        unsigned n = 0;
        for (const struct rc_ent* e = s->all; e; e = e->all_next) ++n;
        r = s->m.max_regions && n >= s->m.max_regions ? -EMFILE : -ENFILE;
    }
    return r;
}

// A registration containing [addr, addr + len) with `access`, referenced (refs + 1).
int velo__rc_acquire(struct velo_ep* ep, struct velo_rma* s, uintptr_t addr, size_t len, unsigned access,
                     const velo_scope_t* scope, struct rc_ent** out) {
    velo_scope_t asked;
    if (scope_norm(scope, &asked)) return -EINVAL;
    struct rc_ent* e = rc_lookup(s, addr, len, access, &asked);
    if (e) {
        ++ep->st.rma_cache_hits;
        ++e->refs;
        *out = e;
        return 0;
    }
    struct velo_uapi_register g;
    int r = 0;
    for (int attempt = 0; attempt < 2; ++attempt) {
        memset(&g, 0, sizeof g);
        g.argsz = sizeof g;
        g.flags = access;
        g.addr = (uint64_t)addr;
        g.len = (uint64_t)len;
        g.scope = asked.kind;
        g.node_lo = asked.node_lo;
        g.node_hi = asked.node_hi;
        g.vpid_lo = asked.vpid_lo;
        g.vpid_hi = asked.vpid_hi;
        g.nboxes = asked.nboxes;
        for (unsigned i = 0; i < asked.nboxes; ++i)
            g.boxes[i] = (struct velo_uapi_scope_box){asked.boxes[i].node_lo, asked.boxes[i].node_hi,
                                                      asked.boxes[i].vpid_lo, asked.boxes[i].vpid_hi};
        r = ep->be->rma_ioctl(&ep->b, VELO_IOC_REGISTER, &g);
        if ((r != -ENOSPC && r != -ENOBUFS) || attempt || !s->ncached) break;
        rc_trim(ep, s, 0);  // no room in the NIC: give the idle registrations back, try again
    }
    if (r < 0) return no_room(s, addr, len, r);
    // the handle's parts must agree: velo_put checks that a peer's NLA and key do; the scope out
    // is what the NIC checks
    velo_scope_t box;
    if (VELO_FIELD_GET(VELO_RMA_NLA_KEY, g.nla) != (g.key & 0xFFu) || scope_out(&g, &box)) {
        drv_deregister(ep, g.nla);
        return -EPROTO;
    }
    e = calloc(1, sizeof *e);
    if (!e) {
        drv_deregister(ep, g.nla);
        return -ENOMEM;
    }
    ++ep->st.rma_cache_miss;
    e->addr = addr;
    e->len = len;
    e->nla = g.nla;
    e->key = g.key;
    e->access = access;
    e->asked = asked;
    e->box = box;
    e->pages = (unsigned)((((uint64_t)(addr & 4095u) + len - 1) >> 12) + 1);
    e->refs = 1;
    e->cached = 1;
    lru_front(s, e);
    ++s->ncached;
    s->cpages += e->pages;
    e->all_next = s->all;
    if (s->all) s->all->all_prev = e;
    s->all = e;
    if (s->ncached > s->cache_max || s->cpages > RMA_CACHE_PAGES) rc_trim(ep, s, s->cache_max);
    *out = e;
    return 0;
}

int velo__rma_check_range(const void* addr, size_t len) {
    if (!addr || len == 0) return -EINVAL;
    if ((uint64_t)len > VELO_REG_LEN_MAX || (uintptr_t)addr + len < (uintptr_t)addr) return -EINVAL;
    return 0;
}

int velo_register(velo_ep_t* ep, const void* addr, size_t len, unsigned access, const velo_scope_t* scope,
                  velo_region_t** region) {
    if (!ep || !region) return -EINVAL;
    *region = NULL;
    if (ep->closed) return -EBADF;
    int r = velo__rma_check_range(addr, len);
    if (r) return r;
    if (access == 0 || (access & ~VELO_ACCESS_ALL)) return -EINVAL;
    velo_scope_t asked;
    if (scope_norm(scope, &asked)) return -EINVAL;
    struct velo_region* h = calloc(1, sizeof *h);
    if (!h) return -ENOMEM;
    pthread_mutex_lock(&ep->rma_lock);
    struct velo_rma* s;
    r = velo__rma_get(ep, &s);
    struct rc_ent* e = NULL;
    if (r == 0) {
        e = rc_lookup(s, (uintptr_t)addr, len, access, &asked);
        if (e) {
            // handed out: make it valid now (the owner's side of decoupled pinning, docs/rma.md §2.4)
            r = velo__rma_repin(ep, e->nla);
            if (r == 0) {
                ++e->refs;
                ++ep->st.rma_cache_hits;
            } else {
                rc_uncache(s, e);  // the driver lost it: forget it, register anew
                if (e->refs == 0) rc_free(ep, s, e);
                e = NULL;
            }
        }
        if (!e) r = velo__rc_acquire(ep, s, (uintptr_t)addr, len, access, &asked, &e);
    }
    pthread_mutex_unlock(&ep->rma_lock);
    if (r < 0) {
        free(h);
        return r;
    }
    h->ep = ep;
    h->e = e;
    h->addr = (uintptr_t)addr;
    h->len = len;
    h->access = access;
    *region = h;
    return 0;
}

// Drop a handle: its registration leaves the cache first when `uncache` (velo_deregister), and is
// deregistered once nothing else uses it.
static int region_drop(velo_region_t* h, int uncache) {
    if (!h) return -EINVAL;
    struct velo_ep* ep = h->ep;
    if (ep->closed) {
        free(h);
        return -EBADF;
    }
    pthread_mutex_lock(&ep->rma_lock);
    struct velo_rma* s = ep->rma;  // set: the handle came from velo_register
    if (uncache) rc_uncache(s, h->e);
    int r = velo__rc_put(ep, s, h->e);
    pthread_mutex_unlock(&ep->rma_lock);
    free(h);
    return r;
}

int velo_deregister(velo_region_t* h) {
    return region_drop(h, 1);
}

int velo_region_release(velo_region_t* h) {
    return region_drop(h, 0);  // stays cached unless deregistered meanwhile (then freed)
}

int velo_region_nla(const velo_region_t* h, size_t offset, uint64_t* nla) {
    if (!h || !nla) return -EINVAL;
    if (offset > h->len) return -ERANGE;
    *nla = h->e->nla + (h->addr - h->e->addr) + offset;
    return 0;
}

int velo_region_rkey(const velo_region_t* h, uint32_t* key) {
    if (!h || !key) return -EINVAL;
    *key = h->e->key;
    return 0;
}

int velo_region_scope(const velo_region_t* h, velo_scope_t* scope) {
    if (!h || !scope) return -EINVAL;
    *scope = h->e->box;
    return 0;
}

// ============================================================================ close
void velo__rma_close(struct velo_ep* ep) {
    pthread_mutex_lock(&ep->rma_lock);
    struct velo_rma* s = ep->rma;
    if (s) {
        // the driver deregisters every region of the endpoint at close: only the memory goes
        struct rc_ent* e = s->all;
        while (e) {
            struct rc_ent* n = e->all_next;
            free(e);
            e = n;
        }
        free(s->ops);
        free(s->evq);
        free(s);
        ep->rma = NULL;
    }
    pthread_mutex_unlock(&ep->rma_lock);
}
