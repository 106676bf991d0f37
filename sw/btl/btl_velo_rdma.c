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

#include "opal/util/output.h"

// What a peer receives of a registration (btl_registration_handle_size bytes): where the
// registration starts in the owner's address space and the NLA of that byte.
struct mca_btl_base_registration_handle_t {
    uint64_t base;
    uint64_t nla;
};

// A local registration: the public part first (ob1 hands the pointer back to us).
typedef struct bv_reg {
    mca_btl_base_registration_handle_t h;
    velo_region_t* region;
} bv_reg_t;

// One put or get in flight (its address is the RMA cookie).
typedef struct bv_rdma_op {
    opal_list_item_t super;
    mca_btl_base_endpoint_t* ep;
    void* local_address;
    mca_btl_base_registration_handle_t* local_handle;
    mca_btl_base_rdma_completion_fn_t cb;
    void* ctx;
    void* data;
} bv_rdma_op_t;
OBJ_CLASS_INSTANCE(bv_rdma_op_t, opal_list_item_t, NULL, NULL);

#define BV_RMA_BATCH 16  // completions reaped per progress call at most

size_t mca_btl_velo_rdma_handle_size(void) {
    return sizeof(mca_btl_base_registration_handle_t);
}

int mca_btl_velo_rdma_open(mca_btl_velo_module_t* m) {
    OBJ_CONSTRUCT(&m->rdma_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&m->rdma_ops, opal_list_t);
    m->rdma_outstanding = 0;
    m->rdma_ok = 0;
    memset(&m->rdma_st, 0, sizeof m->rdma_st);
    if (!mca_btl_velo_component.rdma) return 0;
    // the first RMA call sets the endpoint's notification queue up: -EAGAIN = RMA there, queue empty
    velo_rma_cpl_t cpl;
    const int r = velo_rma_poll(m->ep, &cpl);
    if (r == -EAGAIN || r == 0) {
        m->rdma_ok = 1;
        return 0;
    }
    opal_output_verbose(1, mca_btl_velo_component.output, "btl velo: no RDMA (put/get) on this device: %s",
                        velo_strerror(r));
    return r;
}

static mca_btl_base_registration_handle_t* bv_register_mem(struct mca_btl_base_module_t* btl,
                                                           struct mca_btl_base_endpoint_t* ep, void* base, size_t size,
                                                           uint32_t flags) {
    mca_btl_velo_module_t* m = (mca_btl_velo_module_t*)btl;
    (void)ep;
    unsigned access = VELO_ACCESS_LOCAL_READ | VELO_ACCESS_LOCAL_WRITE;
    if (flags & MCA_BTL_REG_FLAG_REMOTE_READ) access |= VELO_ACCESS_REMOTE_READ;
    if (flags & MCA_BTL_REG_FLAG_REMOTE_WRITE) access |= VELO_ACCESS_REMOTE_WRITE;
    bv_reg_t* g = malloc(sizeof *g);
    if (!g) return NULL;
    int r = velo_register(m->ep, base, size, access, &g->region);
    if (r == 0) r = velo_region_nla(g->region, 0, &g->h.nla);
    if (r) {
        opal_output_verbose(1, mca_btl_velo_component.output, "btl velo: registering %zu bytes at %p failed: %s", size,
                            base, velo_strerror(r));
        if (g->region) velo_region_release(g->region);
        free(g);
        return NULL;
    }
    g->h.base = (uint64_t)(uintptr_t)base;
    __atomic_add_fetch(&m->rdma_st.registrations, 1, __ATOMIC_RELAXED);
    return &g->h;
}

// The registration stays in libvelo's cache (bounded, LRU): the next rendezvous from the same
// buffer finds it without pinning again (docs/rma.md §2.4: the driver withdraws a translation
// whose memory changed, and libvelo re-pins on the next use).
static int bv_deregister_mem(struct mca_btl_base_module_t* btl, mca_btl_base_registration_handle_t* handle) {
    (void)btl;
    if (!handle) return OPAL_ERR_BAD_PARAM;
    bv_reg_t* g = (bv_reg_t*)handle;
    const int r = velo_region_release(g->region);
    free(g);
    return r == 0 || r == -EBADF ? OPAL_SUCCESS : OPAL_ERROR;
}

static bv_rdma_op_t* op_new(mca_btl_velo_module_t* m, mca_btl_base_endpoint_t* ep, void* local_address,
                            mca_btl_base_registration_handle_t* local_handle, mca_btl_base_rdma_completion_fn_t cb,
                            void* ctx, void* data) {
    bv_rdma_op_t* o = OBJ_NEW(bv_rdma_op_t);
    if (!o) return NULL;
    o->ep = ep;
    o->local_address = local_address;
    o->local_handle = local_handle;
    o->cb = cb;
    o->ctx = ctx;
    o->data = data;
    OPAL_THREAD_LOCK(&m->rdma_lock);
    opal_list_append(&m->rdma_ops, &o->super);
    __atomic_add_fetch(&m->rdma_outstanding, 1, __ATOMIC_RELEASE);
    OPAL_THREAD_UNLOCK(&m->rdma_lock);
    return o;
}

static void op_unlink(mca_btl_velo_module_t* m, bv_rdma_op_t* o) {
    OPAL_THREAD_LOCK(&m->rdma_lock);
    opal_list_remove_item(&m->rdma_ops, &o->super);
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

static int rdma(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep, int is_put, void* local_address,
                uint64_t remote_address, mca_btl_base_registration_handle_t* local_handle,
                mca_btl_base_registration_handle_t* remote_handle, size_t size,
                mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext, void* cbdata) {
    mca_btl_velo_module_t* m = (mca_btl_velo_module_t*)btl;
    if (OPAL_UNLIKELY(!m->rdma_ok)) return OPAL_ERR_NOT_AVAILABLE;
    if (OPAL_UNLIKELY(ep->state == MCA_BTL_VELO_EP_FAILED)) return OPAL_ERR_UNREACH;
    uint64_t nla;
    if (remote_nla(remote_handle, remote_address, size, &nla)) return OPAL_ERR_BAD_PARAM;
    bv_rdma_op_t* o = op_new(m, ep, local_address, local_handle, cbfunc, cbcontext, cbdata);
    if (!o) return OPAL_ERR_OUT_OF_RESOURCE;
    const uint64_t cookie = (uint64_t)(uintptr_t)o;
    int r;
    if (local_handle) {
        const bv_reg_t* g = (const bv_reg_t*)local_handle;
        const size_t off = (size_t)((uintptr_t)local_address - g->h.base);
        r = is_put ? velo_put(m->ep, ep->addr, g->region, off, nla, size, VELO_RMA_F_REMOTE, cookie)
                   : velo_get(m->ep, ep->addr, g->region, off, nla, size, VELO_RMA_F_LOCAL, cookie);
    } else {  // below the local registration threshold: libvelo's cache registers it
        r = is_put ? velo_put_buf(m->ep, ep->addr, local_address, nla, size, VELO_RMA_F_REMOTE, cookie)
                   : velo_get_buf(m->ep, ep->addr, local_address, nla, size, VELO_RMA_F_LOCAL, cookie);
    }
    if (OPAL_LIKELY(r == 0)) {
        __atomic_add_fetch(is_put ? &m->rdma_st.puts : &m->rdma_st.gets, 1, __ATOMIC_RELAXED);
        return OPAL_SUCCESS;
    }
    op_unlink(m, o);
    OBJ_RELEASE(o);
    if (r == -EAGAIN) {  // commands outstanding at the limit: their completions make ob1 retry
        __atomic_add_fetch(&m->rdma_st.eagain, 1, __ATOMIC_RELAXED);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    opal_output_verbose(1, mca_btl_velo_component.output, "btl velo: %s of %zu bytes to node %u failed: %s",
                        is_put ? "put" : "get", size, ep->addr.node, velo_strerror(r));
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

static void complete(mca_btl_velo_module_t* m, bv_rdma_op_t* o, int status) {
    op_unlink(m, o);
    if (o->cb) o->cb(&m->super, o->ep, o->local_address, o->local_handle, o->ctx, o->data, status);
    OBJ_RELEASE(o);
}

// Fail every operation in flight (the device or fabric is gone, or the module closes).
static void fail_all(mca_btl_velo_module_t* m) {
    for (;;) {
        OPAL_THREAD_LOCK(&m->rdma_lock);
        bv_rdma_op_t* o = (bv_rdma_op_t*)opal_list_get_first(&m->rdma_ops);
        const int empty = opal_list_is_empty(&m->rdma_ops);
        OPAL_THREAD_UNLOCK(&m->rdma_lock);
        if (empty) return;
        complete(m, o, OPAL_ERROR);
    }
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
            break;
        }
        if (cpl.kind != VELO_RMA_KIND_REMOTE && cpl.kind != VELO_RMA_KIND_GET_DONE && cpl.kind != VELO_RMA_KIND_ERROR)
            continue;  // nothing of ours asks for LOCAL or TARGET completions
        bv_rdma_op_t* o = (bv_rdma_op_t*)(uintptr_t)cpl.cookie;
        int status = OPAL_SUCCESS;
        if (cpl.kind == VELO_RMA_KIND_ERROR) {
            status = OPAL_ERROR;
            __atomic_add_fetch(&m->rdma_st.errors, 1, __ATOMIC_RELAXED);
            opal_output_verbose(1, mca_btl_velo_component.output,
                                "btl velo: %s of %llu bytes with node %u failed %s: %s", cpl.op == 1 ? "put" : "get",
                                (unsigned long long)cpl.len, cpl.peer.node, cpl.remote ? "at the remote node" : "here",
                                velo_rma_reason_str(cpl.reason));
        }
        complete(m, o, status);
    }
    return n;
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
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        const int64_t limit_ns = (int64_t)mca_btl_velo_component.connect_timeout_ms * 1000000;
        while (__atomic_load_n(&m->rdma_outstanding, __ATOMIC_ACQUIRE)) {
            mca_btl_velo_rdma_progress(m);
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((int64_t)(t.tv_sec - t0.tv_sec) * 1000000000 + (t.tv_nsec - t0.tv_nsec) > limit_ns) break;
        }
        fail_all(m);
    }
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
