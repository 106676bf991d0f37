// SPDX-License-Identifier: MIT
// mca_btl_velo: the RDMA path. btl_put/btl_get on libvelo's RMA (zero-copy put/get of the NIC's
// RMA engine), memory registration through libvelo's region cache, completions reaped in
// progress. See docs/mpi.md, "The RDMA path".
//
// Completion semantics: a put completes when the NIC reported REMOTE_CPL, i.e. the data are
// visible in the target's memory (docs/rma.md §4.4); a get when GET_DONE said the data are in
// ours. That is what ob1 needs: its FIN message, sent after the callback, never overtakes the
// data. Errors the NIC reports complete the operation with OPAL_ERROR (ob1 then falls back).
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "btl_velo.h"
#include "velo/velo_hw.h"

#include "opal/util/output.h"

// What a peer receives of a registration (btl_registration_handle_size bytes): where the
// registration starts in the owner's address space (ob1 names remote bytes by address), the NLA
// of that byte and the region's 32-bit key (velo_region_rkey), which the target's NIC checks with
// the initiator's node and vpid against the region's scope (the default: this job). Nothing else:
// no region index beyond the NLA's, nothing about other registrations.
struct mca_btl_base_registration_handle_t {
    uint64_t base;
    uint64_t nla;
    uint32_t key;
    uint32_t rsvd;  // 0
};

// A local registration: the public part first (ob1 hands the pointer back to us). `region` is
// NULL for a deferred one: a handle for this process's own side of a get or put (never sent to a
// peer) that the NIC had no room for; the transfer registers it (or waits for room), see below.
typedef struct bv_reg {
    mca_btl_base_registration_handle_t h;
    velo_region_t* region;
    int kind;        // BV_REG_*
    unsigned pages;  // NIC pages it holds (counted in the budget of its kind)
} bv_reg_t;

// What ob1 registers, by the flags it asks for: the whole source of an RGET send (REMOTE_READ,
// held until the peer's FIN), a pipeline piece of a receive buffer (REMOTE_WRITE alone, held
// until the peer's put), or this process's own side of a get or put (LOCAL_WRITE|REMOTE_WRITE for
// a get's destination, nothing for a put's source; never sent to a peer).
enum { BV_REG_LOCAL = 0, BV_REG_RGET = 1, BV_REG_PIPE = 2 };

// One put or get in flight (its address is the RMA cookie), or deferred (queued until the NIC
// has room for its local registration).
typedef struct bv_rdma_op {
    opal_list_item_t super;
    mca_btl_base_endpoint_t* ep;
    void* local_address;
    mca_btl_base_registration_handle_t* local_handle;
    mca_btl_base_rdma_completion_fn_t cb;
    void* ctx;
    void* data;
    int is_put;
    uint64_t nla;  // remote
    uint32_t key;  // and its region's key
    size_t size;
    int bouncing;       // moved through the bounce buffer, a piece at a time
    size_t boff, blen;  // bytes done, bytes of the piece in flight
} bv_rdma_op_t;
OBJ_CLASS_INSTANCE(bv_rdma_op_t, opal_list_item_t, NULL, NULL);

#define BV_RMA_BATCH 16          // completions reaped per progress call at most
#define BV_BOUNCE (64u * 1024u)  // the bounce buffer (registered at start: 1 region, 16 pages)

size_t mca_btl_velo_rdma_handle_size(void) {
    return sizeof(mca_btl_base_registration_handle_t);
}

int mca_btl_velo_rdma_open(mca_btl_velo_module_t* m) {
    OBJ_CONSTRUCT(&m->rdma_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&m->rdma_ops, opal_list_t);
    OBJ_CONSTRUCT(&m->rdma_deferred, opal_list_t);
    m->rdma_outstanding = 0;
    m->rdma_ndeferred = 0;
    m->rdma_retry_ns = 0;
    m->rdma_freed = 0;
    memset(m->rdma_held, 0, sizeof m->rdma_held);
    m->bounce = NULL;
    m->bounce_rg = NULL;
    m->bounce_op = NULL;
    m->bounce_stalled = 0;
    m->rdma_retrying = 0;
    m->rdma_ok = 0;
    memset(&m->rdma_st, 0, sizeof m->rdma_st);
    if (!mca_btl_velo_component.rdma) return 0;
    // the first RMA call sets the endpoint's notification queue up: -EAGAIN = RMA there, queue empty
    velo_rma_cpl_t cpl;
    const int r = velo_rma_poll(m->ep, &cpl);
    if (r == -EAGAIN || r == 0) {
        m->rdma_ok = 1;
        // the bounce buffer: registered first, while the NIC has room, so that a transfer whose own
        // buffer finds none later still moves (through it, a piece at a time)
        m->bounce = aligned_alloc(4096, BV_BOUNCE);
        const int b = m->bounce ? velo_register(m->ep, m->bounce, BV_BOUNCE,
                                                VELO_ACCESS_LOCAL_READ | VELO_ACCESS_LOCAL_WRITE, NULL, &m->bounce_rg)
                                : -ENOMEM;
        if (b) {
            opal_output_verbose(1, mca_btl_velo_component.output,
                                "btl velo: no bounce buffer (%s): a put or get without room in the NIC waits for room",
                                velo_strerror(b));
            free(m->bounce);
            m->bounce = NULL;
            m->bounce_rg = NULL;
        }
        return 0;
    }
    opal_output_verbose(1, mca_btl_velo_component.output, "btl velo: no RDMA (put/get) on this device: %s",
                        velo_strerror(r));
    return r;
}

// The NIC has no room for a registration (or never has, -EFBIG: the bounce buffer moves it).
static int no_room(int r) {
    return r == -ENFILE || r == -EMFILE || r == -ENOBUFS || r == -ENOSPC || r == -EFBIG;
}

static unsigned reg_pages(const void* base, size_t size) {
    return size ? (unsigned)((((uintptr_t)base & 4095u) + size - 1) / 4096 + 1) : 0;
}

// Ranks of this job on our node (they share its NIC's tables): ourselves and the peers there.
static unsigned node_sharers(mca_btl_velo_module_t* m) {
    unsigned n = 1;
    OPAL_THREAD_LOCK(&m->lock);
    for (size_t i = 0; i < m->neps; ++i)
        if (m->eps[i]->addr.node == m->addr.node && m->eps[i]->addr.vpid != m->addr.vpid) ++n;
    OPAL_THREAD_UNLOCK(&m->lock);
    return n;
}

// Registrations a peer must act on before they end (RGET sources, pipeline pieces) take at most a
// quarter of the NIC's regions and of its page table each, shared by the ranks of the node; the
// rest stays for this process's own side of its gets and puts, which end without anybody's help.
// So the NIC always has room for the transfers that end the registrations peers wait for, and no
// two ranks can fill each other's tables with registrations that wait for the other (docs/mpi.md
// "Registration under pressure").
static int over_budget(mca_btl_velo_module_t* m, int kind, unsigned pages) {
    const unsigned share = 4 * node_sharers(m);
    const uint64_t regions = (1u << VELO_DEFAULT_RMA_REGION_BITS) / share;
    const uint64_t ptes = (1u << VELO_DEFAULT_RMA_PTE_BITS) / share;
    const uint64_t held_pages = __atomic_load_n(&m->rdma_held[kind].pages, __ATOMIC_RELAXED);
    const uint64_t held_regions = __atomic_load_n(&m->rdma_held[kind].regions, __ATOMIC_RELAXED);
    return held_regions + 1 > regions || held_pages + pages > ptes;
}

static void held_add(mca_btl_velo_module_t* m, int kind, unsigned pages, int sign) {
    __atomic_add_fetch(&m->rdma_held[kind].pages, (uint64_t)(int64_t)(sign * (int)pages), __ATOMIC_RELAXED);
    __atomic_add_fetch(&m->rdma_held[kind].regions, (uint64_t)(int64_t)sign, __ATOMIC_RELAXED);
}

static mca_btl_base_registration_handle_t* bv_register_mem(struct mca_btl_base_module_t* btl,
                                                           struct mca_btl_base_endpoint_t* ep, void* base, size_t size,
                                                           uint32_t flags) {
    mca_btl_velo_module_t* m = (mca_btl_velo_module_t*)btl;
    (void)ep;
    unsigned access = VELO_ACCESS_LOCAL_READ | VELO_ACCESS_LOCAL_WRITE;
    if (flags & MCA_BTL_REG_FLAG_REMOTE_READ) access |= VELO_ACCESS_REMOTE_READ;
    if (flags & MCA_BTL_REG_FLAG_REMOTE_WRITE) access |= VELO_ACCESS_REMOTE_WRITE;
    const int kind = (flags & MCA_BTL_REG_FLAG_REMOTE_READ)                                   ? BV_REG_RGET
                     : (flags & MCA_BTL_REG_FLAG_ACCESS_ANY) == MCA_BTL_REG_FLAG_REMOTE_WRITE ? BV_REG_PIPE
                                                                                              : BV_REG_LOCAL;
    const unsigned pages = reg_pages(base, size);
    if (kind != BV_REG_LOCAL && over_budget(m, kind, pages)) {
        // ob1 sends without RDMA instead (RGET source: a plain rendezvous) or asks again when one
        // of our pieces in flight completes (pipeline piece)
        __atomic_add_fetch(&m->rdma_st.budget, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    bv_reg_t* g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->kind = kind;
    g->h.base = (uint64_t)(uintptr_t)base;
    int r = velo_register(m->ep, base, size, access, NULL, &g->region);  // the default scope: this job
    if (r == 0) r = velo_region_nla(g->region, 0, &g->h.nla);
    if (r == 0) r = velo_region_rkey(g->region, &g->h.key);
    if (r && kind == BV_REG_LOCAL && no_room(r)) {
        // our own side: the put or get registers it itself, waiting for room if need be
        if (g->region) velo_region_release(g->region);
        g->region = NULL;
        g->h.nla = 0;
        g->h.key = 0;
        __atomic_add_fetch(&m->rdma_st.deferred_regs, 1, __ATOMIC_RELAXED);
        return &g->h;
    }
    if (r) {
        __atomic_add_fetch(no_room(r) ? &m->rdma_st.no_room : &m->rdma_st.reg_errors, 1, __ATOMIC_RELAXED);
        opal_output_verbose(no_room(r) ? 2 : 1, mca_btl_velo_component.output,
                            "btl velo: registering %zu bytes at %p failed: %s", size, base, velo_strerror(r));
        if (g->region) velo_region_release(g->region);
        free(g);
        return NULL;
    }
    g->pages = pages;
    held_add(m, kind, pages, 1);
    __atomic_add_fetch(&m->rdma_st.registrations, 1, __ATOMIC_RELAXED);
    return &g->h;
}

// The registration stays in libvelo's cache (bounded, LRU): the next rendezvous from the same
// buffer finds it without pinning again (docs/rma.md §2.4: the driver withdraws a translation
// whose memory changed, and libvelo re-pins on the next use).
static int bv_deregister_mem(struct mca_btl_base_module_t* btl, mca_btl_base_registration_handle_t* handle) {
    mca_btl_velo_module_t* m = (mca_btl_velo_module_t*)btl;
    if (!handle) return OPAL_ERR_BAD_PARAM;
    bv_reg_t* g = (bv_reg_t*)handle;
    int r = 0;
    if (g->region) {
        r = velo_region_release(g->region);
        held_add(m, g->kind, g->pages, -1);
        __atomic_store_n(&m->rdma_freed, 1, __ATOMIC_RELEASE);  // room for a deferred transfer, maybe
    }
    free(g);
    return r == 0 || r == -EBADF ? OPAL_SUCCESS : OPAL_ERROR;
}

static bv_rdma_op_t* op_new(mca_btl_base_endpoint_t* ep, int is_put, void* local_address,
                            mca_btl_base_registration_handle_t* local_handle, uint64_t nla, uint32_t key, size_t size,
                            mca_btl_base_rdma_completion_fn_t cb, void* ctx, void* data) {
    bv_rdma_op_t* o = OBJ_NEW(bv_rdma_op_t);
    if (!o) return NULL;
    o->ep = ep;
    o->is_put = is_put;
    o->local_address = local_address;
    o->local_handle = local_handle;
    o->nla = nla;
    o->key = key;
    o->size = size;
    o->cb = cb;
    o->ctx = ctx;
    o->data = data;
    o->bouncing = 0;
    o->boff = o->blen = 0;
    return o;
}

// An operation is on one of two lists, in flight (rdma_ops) or deferred (rdma_deferred); both
// count in rdma_outstanding (flush and close wait for them).
static void op_link(mca_btl_velo_module_t* m, bv_rdma_op_t* o, int deferred) {
    OPAL_THREAD_LOCK(&m->rdma_lock);
    opal_list_append(deferred ? &m->rdma_deferred : &m->rdma_ops, &o->super);
    if (deferred) ++m->rdma_ndeferred;
    __atomic_add_fetch(&m->rdma_outstanding, 1, __ATOMIC_RELEASE);
    OPAL_THREAD_UNLOCK(&m->rdma_lock);
}

static void op_unlink(mca_btl_velo_module_t* m, bv_rdma_op_t* o, int deferred) {
    OPAL_THREAD_LOCK(&m->rdma_lock);
    opal_list_remove_item(deferred ? &m->rdma_deferred : &m->rdma_ops, &o->super);
    if (deferred) --m->rdma_ndeferred;
    __atomic_sub_fetch(&m->rdma_outstanding, 1, __ATOMIC_RELEASE);
    OPAL_THREAD_UNLOCK(&m->rdma_lock);
}

// Remote NLA of remote_address inside the peer's registration; -ERANGE when it lies outside.
static int remote_nla(const mca_btl_base_registration_handle_t* rh, uint64_t remote_address, size_t size,
                      uint64_t* nla) {
    if (!rh || remote_address < rh->base) return -ERANGE;
    const uint64_t off = remote_address - rh->base;
    if (off + size < off) return -ERANGE;
    *nla = rh->nla + off;
    return 0;
}

// Hand the operation to libvelo: with its registration, or from the plain buffer through the
// region cache (below a registration threshold, or a deferred registration).
static int issue(mca_btl_velo_module_t* m, bv_rdma_op_t* o) {
    const uint64_t cookie = (uint64_t)(uintptr_t)o;
    const bv_reg_t* g = (const bv_reg_t*)o->local_handle;
    if (g && g->region) {
        const size_t off = (size_t)((uintptr_t)o->local_address - g->h.base);
        return o->is_put
                   ? velo_put(m->ep, o->ep->addr, g->region, off, o->nla, o->key, o->size, VELO_RMA_F_REMOTE, cookie)
                   : velo_get(m->ep, o->ep->addr, g->region, off, o->nla, o->key, o->size, VELO_RMA_F_LOCAL, cookie);
    }
    return o->is_put
               ? velo_put_buf(m->ep, o->ep->addr, o->local_address, o->nla, o->key, o->size, VELO_RMA_F_REMOTE, cookie)
               : velo_get_buf(m->ep, o->ep->addr, o->local_address, o->nla, o->key, o->size, VELO_RMA_F_LOCAL, cookie);
}

static void log_fail(const bv_rdma_op_t* o, int r) {
    opal_output_verbose(1, mca_btl_velo_component.output, "btl velo: %s of %zu bytes to node %u failed: %s",
                        o->is_put ? "put" : "get", o->size, o->ep->addr.node, velo_strerror(r));
}

static int rdma(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep, int is_put, void* local_address,
                uint64_t remote_address, mca_btl_base_registration_handle_t* local_handle,
                mca_btl_base_registration_handle_t* remote_handle, size_t size,
                mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext, void* cbdata) {
    mca_btl_velo_module_t* m = (mca_btl_velo_module_t*)btl;
    if (OPAL_UNLIKELY(!m->rdma_ok)) return OPAL_ERR_NOT_AVAILABLE;
    if (OPAL_UNLIKELY(ep->state == MCA_BTL_VELO_EP_FAILED)) return OPAL_ERR_UNREACH;
    uint64_t nla;
    if (remote_nla(remote_handle, remote_address, size, &nla)) return OPAL_ERR_BAD_PARAM;
    bv_rdma_op_t* o =
        op_new(ep, is_put, local_address, local_handle, nla, remote_handle->key, size, cbfunc, cbcontext, cbdata);
    if (!o) return OPAL_ERR_OUT_OF_RESOURCE;
    op_link(m, o, 0);
    const int r = issue(m, o);
    if (OPAL_LIKELY(r == 0)) {
        __atomic_add_fetch(is_put ? &m->rdma_st.puts : &m->rdma_st.gets, 1, __ATOMIC_RELAXED);
        return OPAL_SUCCESS;
    }
    op_unlink(m, o, 0);
    if (no_room(r)) {
        // no room in the NIC for our side of it: it waits here (progress tries again when one of
        // our registrations went or a millisecond passed), nothing of ob1's waits on a list of its own
        op_link(m, o, 1);
        __atomic_add_fetch(&m->rdma_st.deferred, 1, __ATOMIC_RELAXED);
        return OPAL_SUCCESS;
    }
    if (r != -EAGAIN) log_fail(o, r);
    OBJ_RELEASE(o);
    if (r == -EAGAIN) {  // commands outstanding at the limit: their completions make ob1 retry
        __atomic_add_fetch(&m->rdma_st.eagain, 1, __ATOMIC_RELAXED);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    return r == -ERANGE || r == -EINVAL || r == -EACCES ? OPAL_ERR_BAD_PARAM : OPAL_ERROR;
}

static int bv_put(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep, void* local_address,
                  uint64_t remote_address, struct mca_btl_base_registration_handle_t* local_handle,
                  struct mca_btl_base_registration_handle_t* remote_handle, size_t size, int flags, int order,
                  mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext, void* cbdata) {
    (void)flags;
    (void)order;
    return rdma(btl, ep, 1, local_address, remote_address, local_handle, remote_handle, size, cbfunc, cbcontext,
                cbdata);
}

static int bv_get(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep, void* local_address,
                  uint64_t remote_address, struct mca_btl_base_registration_handle_t* local_handle,
                  struct mca_btl_base_registration_handle_t* remote_handle, size_t size, int flags, int order,
                  mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext, void* cbdata) {
    (void)flags;
    (void)order;
    return rdma(btl, ep, 0, local_address, remote_address, local_handle, remote_handle, size, cbfunc, cbcontext,
                cbdata);
}

static void complete(mca_btl_velo_module_t* m, bv_rdma_op_t* o, int deferred, int status) {
    op_unlink(m, o, deferred);
    if (o->cb) o->cb(&m->super, o->ep, o->local_address, o->local_handle, o->ctx, o->data, status);
    OBJ_RELEASE(o);
}

// Fail every operation in flight or deferred (the device or fabric is gone, or the module closes).
static void fail_all(mca_btl_velo_module_t* m) {
    m->bounce_op = NULL;
    m->bounce_stalled = 0;
    for (int deferred = 0; deferred < 2; ++deferred) {
        opal_list_t* l = deferred ? &m->rdma_deferred : &m->rdma_ops;
        for (;;) {
            OPAL_THREAD_LOCK(&m->rdma_lock);
            bv_rdma_op_t* o = (bv_rdma_op_t*)opal_list_get_first(l);
            const int empty = opal_list_is_empty(l);
            OPAL_THREAD_UNLOCK(&m->rdma_lock);
            if (empty) break;
            complete(m, o, deferred, OPAL_ERROR);
        }
    }
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

#define BV_RETRY_NS 1000000  // without a bounce buffer a deferred operation is tried again this often

// The next piece of the operation that has the bounce buffer: a put copies it in first.
static int bounce_next(mca_btl_velo_module_t* m, bv_rdma_op_t* o) {
    const size_t n = o->size - o->boff < BV_BOUNCE ? o->size - o->boff : BV_BOUNCE;
    const uint64_t cookie = (uint64_t)(uintptr_t)o;
    o->blen = n;
    if (o->is_put) {
        memcpy(m->bounce, (const uint8_t*)o->local_address + o->boff, n);
        return velo_put(m->ep, o->ep->addr, m->bounce_rg, 0, o->nla + o->boff, o->key, n, VELO_RMA_F_REMOTE, cookie);
    }
    return velo_get(m->ep, o->ep->addr, m->bounce_rg, 0, o->nla + o->boff, o->key, n, VELO_RMA_F_LOCAL, cookie);
}

// Deferred operations, oldest first. Each tries its own registration once more (room may have
// been freed); if there is none it takes the bounce buffer when that is free, else it waits for
// it. Without a bounce buffer they are tried when one of our registrations went, a completion
// came, or BV_RETRY_NS passed (other processes of the node may have freed room).
static int retry_deferred_locked(mca_btl_velo_module_t* m, int completed);
static int retry_deferred(mca_btl_velo_module_t* m, int completed) {
    if (!__atomic_load_n(&m->rdma_ndeferred, __ATOMIC_ACQUIRE) && !m->bounce_stalled) return 0;
    // one thread at a time (the deferred queue's head and the bounce buffer)
    if (__atomic_exchange_n(&m->rdma_retrying, 1, __ATOMIC_ACQUIRE)) return 0;
    int n = 0;
    if (m->bounce_stalled && m->bounce_op) {
        bv_rdma_op_t* o = m->bounce_op;
        const int r = bounce_next(m, o);
        if (r != -EAGAIN) m->bounce_stalled = 0;
        if (r && r != -EAGAIN) {
            log_fail(o, r);
            m->bounce_op = NULL;
            complete(m, o, 0, OPAL_ERROR);
        }
    }
    if (__atomic_load_n(&m->rdma_ndeferred, __ATOMIC_ACQUIRE)) n = retry_deferred_locked(m, completed);
    __atomic_store_n(&m->rdma_retrying, 0, __ATOMIC_RELEASE);
    return n;
}

static int retry_deferred_locked(mca_btl_velo_module_t* m, int completed) {
    const int64_t t = now_ns();
    const int freed = __atomic_exchange_n(&m->rdma_freed, 0, __ATOMIC_ACQ_REL);
    if (m->bounce_rg) {
        if (m->bounce_op) return 0;  // the bounce buffer is busy: its next user starts when it is free
    } else if (!completed && !freed && t - m->rdma_retry_ns < BV_RETRY_NS) {
        return 0;
    }
    m->rdma_retry_ns = t;
    int n = 0;
    for (;;) {
        OPAL_THREAD_LOCK(&m->rdma_lock);
        bv_rdma_op_t* o =
            opal_list_is_empty(&m->rdma_deferred) ? NULL : (bv_rdma_op_t*)opal_list_get_first(&m->rdma_deferred);
        OPAL_THREAD_UNLOCK(&m->rdma_lock);
        if (!o) break;
        int r = issue(m, o);
        if (no_room(r) && m->bounce_rg && !m->bounce_op) {
            o->bouncing = 1;
            o->boff = 0;
            r = bounce_next(m, o);
            if (r == 0) {
                m->bounce_op = o;
                __atomic_add_fetch(&m->rdma_st.bounced, 1, __ATOMIC_RELAXED);
            } else {
                o->bouncing = 0;
            }
        }
        if (no_room(r) || r == -EAGAIN) break;  // still no room (or no command slot): later
        ++n;
        if (r) {
            log_fail(o, r);
            complete(m, o, 1, OPAL_ERROR);
            continue;
        }
        op_unlink(m, o, 1);
        op_link(m, o, 0);
        __atomic_add_fetch(o->is_put ? &m->rdma_st.puts : &m->rdma_st.gets, 1, __ATOMIC_RELAXED);
        if (m->bounce_op) break;
    }
    return n;
}

// A piece moved through the bounce buffer ended well: a get copies it out; the next piece, or
// the operation is complete. 1 when the operation ended.
static int bounce_done(mca_btl_velo_module_t* m, bv_rdma_op_t* o) {
    if (!o->is_put) memcpy((uint8_t*)o->local_address + o->boff, m->bounce, o->blen);
    o->boff += o->blen;
    o->blen = 0;
    if (o->boff == o->size) {
        m->bounce_op = NULL;
        complete(m, o, 0, OPAL_SUCCESS);
        return 1;
    }
    const int r = bounce_next(m, o);
    if (r == -EAGAIN) {
        m->bounce_stalled = 1;  // no command slot: progress tries again
    } else if (r) {
        log_fail(o, r);
        m->bounce_op = NULL;
        complete(m, o, 0, OPAL_ERROR);
        return 1;
    }
    return 0;
}

int mca_btl_velo_rdma_progress(mca_btl_velo_module_t* m) {
    if (!__atomic_load_n(&m->rdma_outstanding, __ATOMIC_ACQUIRE)) return 0;
    int n = 0;
    for (; n < BV_RMA_BATCH; ++n) {
        velo_rma_cpl_t cpl;
        const int r = velo_rma_poll(m->ep, &cpl);
        if (r == -EAGAIN) break;
        if (r) {
            opal_output(0, "btl velo: reading RMA completions failed (%s): %d put/get operations fail",
                        velo_strerror(r), (int)m->rdma_outstanding);
            fail_all(m);
            return n;
        }
        if (cpl.kind != VELO_RMA_KIND_REMOTE && cpl.kind != VELO_RMA_KIND_GET_DONE && cpl.kind != VELO_RMA_KIND_ERROR)
            continue;  // nothing of ours asks for LOCAL or TARGET completions
        bv_rdma_op_t* o = (bv_rdma_op_t*)(uintptr_t)cpl.cookie;
        if (o->bouncing && cpl.kind != VELO_RMA_KIND_ERROR) {
            bounce_done(m, o);
            continue;
        }
        if (o->bouncing) m->bounce_op = NULL;
        int status = OPAL_SUCCESS;
        if (cpl.kind == VELO_RMA_KIND_ERROR) {
            status = OPAL_ERROR;
            __atomic_add_fetch(&m->rdma_st.errors, 1, __ATOMIC_RELAXED);
            opal_output_verbose(1, mca_btl_velo_component.output,
                                "btl velo: %s of %llu bytes with node %u failed %s: %s", cpl.op == 1 ? "put" : "get",
                                (unsigned long long)cpl.len, cpl.peer.node, cpl.remote ? "at the remote node" : "here",
                                velo_rma_reason_str(cpl.reason));
        }
        complete(m, o, 0, status);
    }
    return n + retry_deferred(m, n);
}

// Operations waiting for room in the NIC (progress must not sleep on them: no completion wakes it).
int mca_btl_velo_rdma_deferred(const mca_btl_velo_module_t* m) {
    return __atomic_load_n(&m->rdma_ndeferred, __ATOMIC_ACQUIRE) != 0;
}

static int bv_flush(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep) {
    mca_btl_velo_module_t* m = (mca_btl_velo_module_t*)btl;
    (void)ep;  // all endpoints (allowed by the interface)
    while (__atomic_load_n(&m->rdma_outstanding, __ATOMIC_ACQUIRE)) mca_btl_velo_progress();
    return OPAL_SUCCESS;
}

void mca_btl_velo_rdma_close(mca_btl_velo_module_t* m) {
    if (m->rdma_ok) {
        // let what is in flight end (its memory is still the caller's) for up to the connect
        // timeout, then fail the rest
        const int64_t t0 = now_ns();
        const int64_t limit_ns = (int64_t)mca_btl_velo_component.connect_timeout_ms * 1000000;
        while (__atomic_load_n(&m->rdma_outstanding, __ATOMIC_ACQUIRE)) {
            mca_btl_velo_rdma_progress(m);
            if (now_ns() - t0 > limit_ns) break;
        }
        fail_all(m);
        m->bounce_op = NULL;
        if (m->bounce_rg) velo_deregister(m->bounce_rg);
        free(m->bounce);
        m->bounce = NULL;
        m->bounce_rg = NULL;
    }
    OBJ_DESTRUCT(&m->rdma_deferred);
    OBJ_DESTRUCT(&m->rdma_ops);
    OBJ_DESTRUCT(&m->rdma_lock);
}

void mca_btl_velo_rdma_install(mca_btl_velo_module_t* m) {
    m->super.btl_put = bv_put;
    m->super.btl_get = bv_get;
    m->super.btl_register_mem = bv_register_mem;
    m->super.btl_deregister_mem = bv_deregister_mem;
    m->super.btl_flush = bv_flush;
}

void mca_btl_velo_rdma_set(mca_btl_velo_module_t* m) {
    if (m->rdma_ok && (m->super.btl_flags & MCA_BTL_FLAGS_RDMA)) return;
    m->rdma_ok = 0;  // no RMA unit, btl_velo_rdma = 0, or the flags exclude put/get
    m->super.btl_flags &= ~(uint32_t)MCA_BTL_FLAGS_RDMA;
    m->super.btl_put = NULL;
    m->super.btl_get = NULL;
    m->super.btl_register_mem = NULL;
    m->super.btl_deregister_mem = NULL;
    m->super.btl_flush = NULL;
}
