// SPDX-License-Identifier: MIT
// mca_btl_velo: the module. Endpoints (peers, added lazily), send descriptors, the send path
// (sendi/send, per-peer queues, trains), progress (receive, queued sends, completion callbacks),
// failures reported to the PML. See docs/mpi.md.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "btl_velo.h"

#include "opal/class/opal_bitmap.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

static int bv_add_procs(struct mca_btl_base_module_t* btl, size_t nprocs, struct opal_proc_t** procs,
                        struct mca_btl_base_endpoint_t** peers, struct opal_bitmap_t* reachable);
static int bv_del_procs(struct mca_btl_base_module_t* btl, size_t nprocs, struct opal_proc_t** procs,
                        struct mca_btl_base_endpoint_t** peers);
static int bv_finalize(struct mca_btl_base_module_t* btl);
static mca_btl_base_descriptor_t* bv_alloc(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep,
                                           uint8_t order, size_t size, uint32_t flags);
static int bv_free(struct mca_btl_base_module_t* btl, mca_btl_base_descriptor_t* des);
static mca_btl_base_descriptor_t* bv_prepare_src(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep,
                                                 struct opal_convertor_t* convertor, uint8_t order, size_t reserve,
                                                 size_t* size, uint32_t flags);
static int bv_send(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep,
                   struct mca_btl_base_descriptor_t* des, mca_btl_base_tag_t tag);
static int bv_sendi(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep,
                    struct opal_convertor_t* convertor, void* header, size_t header_size, size_t payload_size,
                    uint8_t order, uint32_t flags, mca_btl_base_tag_t tag, mca_btl_base_descriptor_t** descriptor);
static int bv_register_error(struct mca_btl_base_module_t* btl, mca_btl_base_module_error_cb_fn_t cb);
static void bv_dump(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep, int verbose);

mca_btl_velo_module_t mca_btl_velo_module = {
    .super =
        {
            .btl_component = &mca_btl_velo_component.super,
            .btl_add_procs = bv_add_procs,
            .btl_del_procs = bv_del_procs,
            .btl_finalize = bv_finalize,
            .btl_alloc = bv_alloc,
            .btl_free = bv_free,
            .btl_prepare_src = bv_prepare_src,
            .btl_send = bv_send,
            .btl_sendi = bv_sendi,
            .btl_dump = bv_dump,
            .btl_register_error = bv_register_error,
            // RDMA (btl_put, btl_get, btl_register_mem, btl_deregister_mem, btl_flush): set at init
            // when the device has an RMA unit (btl_velo_rdma.c)
        },
};

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// ============================================================================ descriptors
static void frag_ctor(opal_object_t* o) {
    mca_btl_velo_frag_t* f = (mca_btl_velo_frag_t*)o;
    f->base.des_segments = f->segments;
    f->base.des_segment_count = 1;
    f->data = (uint8_t*)(f + 1);  // the inline buffer follows the descriptor (free list element size)
    f->endpoint = NULL;
    f->list = NULL;
    f->cap = 0;
}
OBJ_CLASS_INSTANCE(mca_btl_velo_frag_t, mca_btl_base_descriptor_t, frag_ctor, NULL);

static size_t round64(size_t n) {
    return (n + 63) & ~(size_t)63;
}

static mca_btl_velo_frag_t* frag_get(mca_btl_velo_module_t* m, size_t size) {
    opal_free_list_t* list;
    size_t cap;
    if (size <= m->super.btl_eager_limit) {
        list = &m->frags_eager;
        cap = round64(m->super.btl_eager_limit);
    } else if (size <= m->super.btl_max_send_size) {
        list = &m->frags_max;
        cap = round64(m->super.btl_max_send_size);
    } else {
        return NULL;
    }
    mca_btl_velo_frag_t* f = (mca_btl_velo_frag_t*)opal_free_list_get(list);
    if (!f) return NULL;
    f->list = list;
    f->cap = cap;
    f->base.des_segments = f->segments;
    f->base.des_segment_count = 1;
    f->base.des_cbfunc = NULL;
    f->base.des_cbdata = NULL;
    f->base.des_context = NULL;
    f->base.des_flags = 0;
    f->base.order = MCA_BTL_NO_ORDER;
    f->off = 0;
    f->started = 0;
    f->internal = 0;
    f->tag = 0;
    return f;
}

static void frag_return(mca_btl_velo_frag_t* f) {
    opal_free_list_return(f->list, &f->base.super);
}

int mca_btl_velo_module_open(mca_btl_velo_module_t* m) {
    mca_btl_velo_component_t* c = &mca_btl_velo_component;
    OBJ_CONSTRUCT(&m->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&m->done_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&m->done, opal_list_t);
    OBJ_CONSTRUCT(&m->frags_eager, opal_free_list_t);
    OBJ_CONSTRUCT(&m->frags_max, opal_free_list_t);
    m->eps = NULL;
    m->neps = m->cap_eps = 0;
    m->npending = 0;
    m->ndone = 0;
    m->rx_busy = 0;
    memset(m->rx, 0, sizeof m->rx);
    m->rx_last = NULL;
    m->rx_last_key = 0;
    m->idle = 0;
    m->error_cb = NULL;
    m->finalizing = 0;
    memset(&m->st, 0, sizeof m->st);
    int r = opal_free_list_init(&m->frags_eager, sizeof(mca_btl_velo_frag_t) + round64(m->super.btl_eager_limit),
                                opal_cache_line_size, OBJ_CLASS(mca_btl_velo_frag_t), 0, opal_cache_line_size,
                                c->free_list_num, c->free_list_max, c->free_list_inc, NULL, 0, NULL, NULL, NULL);
    if (r == OPAL_SUCCESS)
        r = opal_free_list_init(&m->frags_max, sizeof(mca_btl_velo_frag_t) + round64(m->super.btl_max_send_size),
                                opal_cache_line_size, OBJ_CLASS(mca_btl_velo_frag_t), 0, opal_cache_line_size, 0,
                                c->free_list_max, 4, NULL, 0, NULL, NULL, NULL);
    return r;
}

// ============================================================================ endpoints
static int bv_add_procs(struct mca_btl_base_module_t* btl, size_t nprocs, struct opal_proc_t** procs,
                        struct mca_btl_base_endpoint_t** peers, struct opal_bitmap_t* reachable) {
    mca_btl_velo_module_t* m = (mca_btl_velo_module_t*)btl;
    mca_btl_velo_component_t* c = &mca_btl_velo_component;
    opal_proc_t* self = opal_proc_local_get();
    OPAL_THREAD_LOCK(&m->lock);
    for (size_t i = 0; i < nprocs; ++i) {
        opal_proc_t* p = procs[i];
        peers[i] = NULL;
        if (p == self) continue;  // the self BTL
        mca_btl_base_endpoint_t* ep = NULL;
        for (size_t k = 0; k < m->neps && !ep; ++k)
            if (m->eps[k]->proc == p) ep = m->eps[k];
        if (!ep) {
            mca_btl_velo_modex_t* mx = NULL;
            size_t sz = 0;
            int rc;
            OPAL_MODEX_RECV(rc, &c->super.btl_version, &p->proc_name, (void**)&mx, &sz);
            if (rc != OPAL_SUCCESS || !mx) {
                opal_output_verbose(2, c->output, "btl velo: %s published no VELO address: not reachable",
                                    OPAL_NAME_PRINT(p->proc_name));
                free(mx);
                continue;
            }
            const int ok = sz == sizeof *mx && mx->magic == MCA_BTL_VELO_MODEX_MAGIC &&
                           mx->version == MCA_BTL_VELO_MODEX_VERSION && mx->node_bits == m->info.node_bits &&
                           mx->vpid_bits == m->info.vpid_bits &&
                           strncmp(mx->backend, m->info.backend, sizeof mx->backend) == 0 &&
                           mx->node < (1u << m->info.node_bits) && mx->vpid < (1u << m->info.vpid_bits);
            if (!ok) {
                opal_output_verbose(1, c->output,
                                    "btl velo: %s is on another VELO network (%.8s) or of another version: not "
                                    "reachable",
                                    OPAL_NAME_PRINT(p->proc_name), sz == sizeof *mx ? mx->backend : "?");
                free(mx);
                continue;
            }
            if (m->neps == m->cap_eps) {
                size_t ncap = m->cap_eps ? 2 * m->cap_eps : 64;
                mca_btl_base_endpoint_t** n = realloc(m->eps, ncap * sizeof *n);
                if (!n) {
                    free(mx);
                    OPAL_THREAD_UNLOCK(&m->lock);
                    return OPAL_ERR_OUT_OF_RESOURCE;
                }
                m->eps = n;
                m->cap_eps = ncap;
            }
            ep = calloc(1, sizeof *ep);
            if (!ep) {
                free(mx);
                OPAL_THREAD_UNLOCK(&m->lock);
                return OPAL_ERR_OUT_OF_RESOURCE;
            }
            ep->proc = p;
            ep->addr.node = mx->node;
            ep->addr.vpid = mx->vpid;
            ep->state = MCA_BTL_VELO_EP_NEW;
            OBJ_CONSTRUCT(&ep->lock, opal_mutex_t);
            OBJ_CONSTRUCT(&ep->pending, opal_list_t);
            free(mx);
            m->eps[m->neps++] = ep;
            // (bml adds a peer on first use with one proc and no reachability bitmap)
            opal_output_verbose(2, c->output, "btl velo: peer %s at node %u vpid %u%s", OPAL_NAME_PRINT(p->proc_name),
                                ep->addr.node, ep->addr.vpid, reachable ? "" : " (added on first use)");
        }
        peers[i] = ep;
        if (reachable) opal_bitmap_set_bit(reachable, (int)i);
    }
    OPAL_THREAD_UNLOCK(&m->lock);
    return OPAL_SUCCESS;
}

static void complete_frag(mca_btl_velo_module_t* m, mca_btl_velo_frag_t* f, int status);

// Best effort: let the endpoint's queue drain for a while (finalize), then drop the rest.
static void drain(mca_btl_velo_module_t* m, mca_btl_base_endpoint_t* ep) {
    const int64_t deadline = now_ns() + (int64_t)mca_btl_velo_component.connect_timeout_ms * 1000000;
    while (!opal_list_is_empty(&ep->pending) && ep->state != MCA_BTL_VELO_EP_FAILED && now_ns() < deadline)
        mca_btl_velo_progress();
    OPAL_THREAD_LOCK(&ep->lock);
    opal_list_t left;
    OBJ_CONSTRUCT(&left, opal_list_t);
    if (!opal_list_is_empty(&ep->pending)) {
        opal_list_join(&left, opal_list_get_end(&left), &ep->pending);
        __atomic_sub_fetch(&m->npending, 1, __ATOMIC_RELAXED);
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    opal_list_item_t* it;
    while ((it = opal_list_remove_first(&left))) complete_frag(m, (mca_btl_velo_frag_t*)it, OPAL_ERR_UNREACH);
    OBJ_DESTRUCT(&left);
}

static void endpoint_release(mca_btl_velo_module_t* m, mca_btl_base_endpoint_t* ep) {
    ep->releasing = 1;
    drain(m, ep);
    OPAL_THREAD_LOCK(&m->lock);
    m->st.msgs_tx += ep->st_msgs;
    m->st.frags_tx += ep->st_frags;
    m->st.trains_tx += ep->st_trains;
    m->st.queued += ep->st_queued;
    OPAL_THREAD_UNLOCK(&m->lock);
    if (ep->conn && ep->state != MCA_BTL_VELO_EP_FAILED) velo_disconnect(ep->conn);
    OBJ_DESTRUCT(&ep->pending);
    OBJ_DESTRUCT(&ep->lock);
    free(ep);
}

static int bv_del_procs(struct mca_btl_base_module_t* btl, size_t nprocs, struct opal_proc_t** procs,
                        struct mca_btl_base_endpoint_t** peers) {
    mca_btl_velo_module_t* m = (mca_btl_velo_module_t*)btl;
    (void)procs;
    for (size_t i = 0; i < nprocs; ++i) {
        mca_btl_base_endpoint_t* ep = peers[i];
        if (!ep) continue;
        OPAL_THREAD_LOCK(&m->lock);
        size_t k = 0;
        while (k < m->neps && m->eps[k] != ep) ++k;
        const int found = k < m->neps;
        if (found) m->eps[k] = m->eps[--m->neps];
        OPAL_THREAD_UNLOCK(&m->lock);
        if (found) endpoint_release(m, ep);
    }
    return OPAL_SUCCESS;
}

static int bv_register_error(struct mca_btl_base_module_t* btl, mca_btl_base_module_error_cb_fn_t cb) {
    ((mca_btl_velo_module_t*)btl)->error_cb = cb;
    return OPAL_SUCCESS;
}

// ============================================================================ failures
// Completion of a descriptor that will not be (or was) sent: callback and release by ownership.
static void complete_frag(mca_btl_velo_module_t* m, mca_btl_velo_frag_t* f, int status) {
    if (f->internal) {
        frag_return(f);
        return;
    }
    const uint32_t flags = f->base.des_flags;
    if (f->base.des_cbfunc) f->base.des_cbfunc(&m->super, f->endpoint, &f->base, status);
    if (flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) frag_return(f);
}

// The peer cannot be reached any more: fail its queue and tell the PML (which decides: ob1 ends
// the job with the message). Called without locks held.
void mca_btl_velo_fail_endpoint(mca_btl_velo_module_t* m, mca_btl_base_endpoint_t* ep, int err, const char* what) {
    OPAL_THREAD_LOCK(&ep->lock);
    if (ep->state == MCA_BTL_VELO_EP_FAILED) {
        OPAL_THREAD_UNLOCK(&ep->lock);
        return;
    }
    ep->state = MCA_BTL_VELO_EP_FAILED;
    ep->fail_code = err;
    opal_list_t left;
    OBJ_CONSTRUCT(&left, opal_list_t);
    if (!opal_list_is_empty(&ep->pending)) {
        opal_list_join(&left, opal_list_get_end(&left), &ep->pending);
        __atomic_sub_fetch(&m->npending, 1, __ATOMIC_RELAXED);
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    if (!m->finalizing && !ep->releasing) {
        char info[512];
        snprintf(info, sizeof info, "btl velo: %s (node %u vpid %u) cannot be reached: %s while %s",
                 OPAL_NAME_PRINT(ep->proc->proc_name), ep->addr.node, ep->addr.vpid, velo_strerror(err), what);
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        mca_btl_velo_help("peer failed", host, OPAL_NAME_PRINT(OPAL_PROC_MY_NAME), m->addr.node, m->addr.vpid,
                          OPAL_NAME_PRINT(ep->proc->proc_name), ep->addr.node, ep->addr.vpid, what, velo_strerror(err));
        if (m->error_cb) m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_NONFATAL, ep->proc, info);
    }
    opal_list_item_t* it;
    while ((it = opal_list_remove_first(&left))) complete_frag(m, (mca_btl_velo_frag_t*)it, OPAL_ERR_UNREACH);
    OBJ_DESTRUCT(&left);
}

// ============================================================================ the send path
static void describe(const mca_btl_velo_frag_t* f, vw_frag_t* w) {
    w->tag = f->tag;
    w->nseg = (uint8_t)f->base.des_segment_count;
    w->total = 0;
    for (unsigned s = 0; s < w->nseg; ++s) {
        w->p[s] = f->segments[s].seg_addr.pval;
        w->n[s] = (size_t)f->segments[s].seg_len;
        w->total += w->n[s];
    }
}

// First send to a peer: velo_connect without waiting (the answer arrives while we poll; sends
// return -EAGAIN until then). Under ep->lock.
static int ep_connect(mca_btl_base_endpoint_t* ep, velo_ep_t* vep) {
    int r = velo_connect(vep, ep->addr, VELO_CONNECT_NOWAIT | VELO_CONNECT_SMALL, &ep->conn);
    if (r) return r;
    ep->state = MCA_BTL_VELO_EP_CONNECTING;
    ep->connect_ns = now_ns();
    opal_output_verbose(2, mca_btl_velo_component.output, "btl velo: connecting to node %u vpid %u", ep->addr.node,
                        ep->addr.vpid);
    return 0;
}

// Store the messages of a fragment until it is out (0), credit runs out (-EAGAIN) or the peer
// fails (other negative errno). Under ep->lock.
static int push(mca_btl_velo_module_t* m, mca_btl_base_endpoint_t* ep, mca_btl_velo_frag_t* f) {
    const mca_btl_velo_component_t* c = &mca_btl_velo_component;
    if (ep->state == MCA_BTL_VELO_EP_NEW) {
        int r = ep_connect(ep, m->ep);
        if (r) return r;
    }
    vw_frag_t w;
    describe(f, &w);
    uint8_t msg[VW_MSG_MAX];
    while (!f->started || f->off < w.total) {
        size_t carried;
        const unsigned len = vw_encode(&w, f->off, ep->tx_seq, (unsigned)c->train_bytes, c->compress, msg, &carried);
        int r = velo_send(ep->conn, msg, len);
        if (r) {
            if (r == -EAGAIN && ep->state == MCA_BTL_VELO_EP_CONNECTING &&
                now_ns() - ep->connect_ns > (int64_t)c->connect_timeout_ms * 1000000)
                return -ETIMEDOUT;
            return r;
        }
        ep->state = MCA_BTL_VELO_EP_OPEN;
        ep->tx_seq = (uint8_t)((ep->tx_seq + 1) & VW_SEQ_MASK);
        if (!f->started && carried < w.total) ++ep->st_trains;
        f->off += carried;
        f->started = 1;
        ++ep->st_msgs;
    }
    ++ep->st_frags;
    return 0;
}

static void queue_done(mca_btl_velo_module_t* m, mca_btl_velo_frag_t* f) {
    if (f->internal) {
        frag_return(f);
        return;
    }
    OPAL_THREAD_LOCK(&m->done_lock);
    opal_list_append(&m->done, &f->base.super.super);
    __atomic_add_fetch(&m->ndone, 1, __ATOMIC_RELEASE);
    OPAL_THREAD_UNLOCK(&m->done_lock);
}

// Send a fragment or queue it behind the peer's earlier ones (per-peer order). Returns an OPAL code.
static int submit(mca_btl_velo_module_t* m, mca_btl_base_endpoint_t* ep, mca_btl_velo_frag_t* f) {
    OPAL_THREAD_LOCK(&ep->lock);
    if (ep->state == MCA_BTL_VELO_EP_FAILED) {
        OPAL_THREAD_UNLOCK(&ep->lock);
        return OPAL_ERR_UNREACH;
    }
    int r = -EAGAIN;
    const int empty = opal_list_is_empty(&ep->pending);
    if (empty) r = push(m, ep, f);
    if (r == -EAGAIN) {
        opal_list_append(&ep->pending, &f->base.super.super);
        if (empty) __atomic_add_fetch(&m->npending, 1, __ATOMIC_RELEASE);
        ++ep->st_queued;
        OPAL_THREAD_UNLOCK(&ep->lock);
        return OPAL_SUCCESS;
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    if (r == 0) {
        queue_done(m, f);
        return OPAL_SUCCESS;
    }
    // the peer is gone: its queue fails, this descriptor stays the caller's (error return)
    mca_btl_velo_fail_endpoint(m, ep, r, "sending");
    if (f->internal) frag_return(f);
    return OPAL_ERR_UNREACH;
}

static mca_btl_base_descriptor_t* bv_alloc(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep,
                                           uint8_t order, size_t size, uint32_t flags) {
    (void)order;
    mca_btl_velo_frag_t* f = frag_get((mca_btl_velo_module_t*)btl, size);
    if (!f) return NULL;
    f->segments[0].seg_addr.pval = f->data;
    f->segments[0].seg_len = size;
    f->base.des_segment_count = 1;
    f->base.des_flags = flags;
    f->endpoint = ep;
    return &f->base;
}

static int bv_free(struct mca_btl_base_module_t* btl, mca_btl_base_descriptor_t* des) {
    (void)btl;
    frag_return((mca_btl_velo_frag_t*)des);
    return OPAL_SUCCESS;
}

// The PML's header (reserve bytes) in our buffer; the data packed behind it, or, when the
// convertor describes contiguous memory, sent in place from the user's buffer (second segment).
static mca_btl_base_descriptor_t* bv_prepare_src(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep,
                                                 struct opal_convertor_t* convertor, uint8_t order, size_t reserve,
                                                 size_t* size, uint32_t flags) {
    mca_btl_velo_module_t* m = (mca_btl_velo_module_t*)btl;
    (void)order;
    if (reserve > m->super.btl_max_send_size) return NULL;
    if (*size > m->super.btl_max_send_size - reserve) *size = m->super.btl_max_send_size - reserve;
    const int inplace = !opal_convertor_need_buffers(convertor) && *size > 0;
    mca_btl_velo_frag_t* f = frag_get(m, inplace ? reserve : reserve + *size);
    if (!f) return NULL;
    struct iovec iov;
    uint32_t iov_count = 1;
    size_t max_data = *size;
    iov.iov_len = max_data;
    iov.iov_base = inplace ? NULL : f->data + reserve;
    if (opal_convertor_pack(convertor, &iov, &iov_count, &max_data) < 0) {
        frag_return(f);
        return NULL;
    }
    f->segments[0].seg_addr.pval = f->data;
    if (inplace) {
        f->segments[0].seg_len = reserve;
        f->segments[1].seg_addr.pval = iov.iov_base;
        f->segments[1].seg_len = max_data;
        f->base.des_segment_count = 2;
    } else {
        f->segments[0].seg_len = reserve + max_data;
        f->base.des_segment_count = 1;
    }
    *size = max_data;
    f->base.des_flags = flags;
    f->endpoint = ep;
    return &f->base;
}

// Never returns 1: the descriptor completes through its callback, from progress (ob1 4.1 retries
// its pending work only from completion callbacks).
static int bv_send(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep,
                   struct mca_btl_base_descriptor_t* des, mca_btl_base_tag_t tag) {
    mca_btl_velo_frag_t* f = (mca_btl_velo_frag_t*)des;
    f->tag = tag;
    f->off = 0;
    f->started = 0;
    f->internal = 0;
    f->endpoint = ep;
    return submit((mca_btl_velo_module_t*)btl, ep, f);
}

// Header + payload. A fragment that fits one message goes straight from the stack when the peer's
// queue is empty and credit is there; otherwise (and for trains) the bytes go into a descriptor of
// the BTL's own, which is sent or queued: once this returns OPAL_SUCCESS the data are ours.
static int bv_sendi(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep,
                    struct opal_convertor_t* convertor, void* header, size_t header_size, size_t payload_size,
                    uint8_t order, uint32_t flags, mca_btl_base_tag_t tag, mca_btl_base_descriptor_t** descriptor) {
    mca_btl_velo_module_t* m = (mca_btl_velo_module_t*)btl;
    const mca_btl_velo_component_t* c = &mca_btl_velo_component;
    (void)order;
    (void)flags;
    if (descriptor) *descriptor = NULL;
    if (OPAL_UNLIKELY(ep->state == MCA_BTL_VELO_EP_FAILED)) return OPAL_ERR_UNREACH;
    const size_t total = header_size + payload_size;
    if (total <= VW_MATCH_HDR_LEN + VW_MSG_MAX - VW_MATCH_WIRE_HDR) {
        uint64_t buf[(VW_MATCH_HDR_LEN + VW_MSG_MAX + 7) / 8];
        uint8_t* b = (uint8_t*)buf;
        memcpy(b, header, header_size);
        const size_t pos0 = convertor->bConverted;
        if (payload_size) {
            struct iovec iov = {.iov_base = b + header_size, .iov_len = payload_size};
            uint32_t n = 1;
            size_t max_data = payload_size;
            if (opal_convertor_pack(convertor, &iov, &n, &max_data) < 0 || max_data != payload_size) {
                size_t p = pos0;
                opal_convertor_set_position(convertor, &p);
                return OPAL_ERR_RESOURCE_BUSY;
            }
        }
        if (vw_fits_one(tag, b, total, c->compress)) {
            OPAL_THREAD_LOCK(&ep->lock);
            if (OPAL_LIKELY(ep->state == MCA_BTL_VELO_EP_OPEN && opal_list_is_empty(&ep->pending))) {
                const vw_frag_t w = {.tag = tag, .nseg = 1, .p = {b, NULL}, .n = {total, 0}, .total = total};
                uint8_t msg[VW_MSG_MAX];
                size_t carried;
                const unsigned len = vw_encode(&w, 0, ep->tx_seq, (unsigned)c->train_bytes, c->compress, msg, &carried);
                if (OPAL_LIKELY(velo_send(ep->conn, msg, len) == 0)) {
                    ep->tx_seq = (uint8_t)((ep->tx_seq + 1) & VW_SEQ_MASK);
                    ++ep->st_msgs;
                    ++ep->st_frags;
                    OPAL_THREAD_UNLOCK(&ep->lock);
                    return OPAL_SUCCESS;
                }
            }
            OPAL_THREAD_UNLOCK(&ep->lock);
        }
        // not now, or a train: keep the bytes in a descriptor of our own
        mca_btl_velo_frag_t* f = frag_get(m, total);
        if (!f) {
            size_t p = pos0;
            opal_convertor_set_position(convertor, &p);
            return OPAL_ERR_RESOURCE_BUSY;
        }
        memcpy(f->data, b, total);
        f->segments[0].seg_addr.pval = f->data;
        f->segments[0].seg_len = total;
        f->tag = tag;
        f->internal = 1;
        f->endpoint = ep;
        return submit(m, ep, f);
    }
    mca_btl_velo_frag_t* f = frag_get(m, total);
    if (!f) return OPAL_ERR_RESOURCE_BUSY;
    memcpy(f->data, header, header_size);
    if (payload_size) {
        const size_t pos0 = convertor->bConverted;
        struct iovec iov = {.iov_base = f->data + header_size, .iov_len = payload_size};
        uint32_t n = 1;
        size_t max_data = payload_size;
        if (opal_convertor_pack(convertor, &iov, &n, &max_data) < 0 || max_data != payload_size) {
            size_t p = pos0;
            opal_convertor_set_position(convertor, &p);
            frag_return(f);
            return OPAL_ERR_RESOURCE_BUSY;
        }
    }
    f->segments[0].seg_addr.pval = f->data;
    f->segments[0].seg_len = total;
    f->tag = tag;
    f->internal = 1;
    f->endpoint = ep;
    return submit(m, ep, f);
}

// ============================================================================ progress
static void deliver(void* ctx, uint8_t tag, const uint8_t* data, size_t len) {
    mca_btl_velo_module_t* m = ctx;
    mca_btl_base_segment_t seg = {.seg_addr.pval = (void*)data, .seg_len = len};
    mca_btl_base_descriptor_t des = {.des_segments = &seg, .des_segment_count = 1};
    const mca_btl_active_message_callback_t* reg = mca_btl_base_active_message_trigger + tag;
    ++m->st.frags_rx;
    if (OPAL_UNLIKELY(!reg->cbfunc)) {
        opal_output(0, "btl velo: a fragment with tag 0x%02x nobody registered: dropped", tag);
        return;
    }
    reg->cbfunc(&m->super, tag, &des, reg->cbdata);
}

static vw_rx_t* rx_state(mca_btl_velo_module_t* m, unsigned node, unsigned vpid) {
    const uint32_t key = node << 8 | vpid;
    if (OPAL_LIKELY(m->rx_last && m->rx_last_key == key)) return m->rx_last;
    mca_btl_velo_rx_node_t* n = m->rx[node & 255];
    if (!n) {
        n = calloc(1, sizeof *n);
        if (!n) return NULL;
        m->rx[node & 255] = n;
    }
    vw_rx_t* rx = n->vpid[vpid & 255];
    if (!rx) {
        rx = calloc(1, sizeof *rx);
        if (!rx) return NULL;
        n->vpid[vpid & 255] = rx;
    }
    m->rx_last = rx;
    m->rx_last_key = key;
    return rx;
}

static void rx_msg(mca_btl_velo_module_t* m, const velo_msg_t* msg) {
    ++m->st.msgs_rx;
    vw_rx_t* rx = rx_state(m, msg->src_node, msg->src_vpid);
    int r = rx ? vw_rx_msg(rx, msg->data, msg->len, VW_FRAG_MAX, deliver, m) : -ENOMEM;
    if (OPAL_UNLIKELY(r < 0)) {
        ++m->st.rx_errors;
        opal_output(0, "btl velo: malformed message stream from node %u vpid %u (%s): fragment dropped", msg->src_node,
                    msg->src_vpid, velo_strerror(r));
    }
}

// Everything the VELO endpoint has for us, at most poll_batch messages. One receiver at a time.
static int progress_rx(mca_btl_velo_module_t* m, int may_wait) {
    int expected = 0;
    if (!__atomic_compare_exchange_n(&m->rx_busy, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return 0;
    const mca_btl_velo_component_t* c = &mca_btl_velo_component;
    velo_msg_t msg;
    int n = 0, r = 0;
    while (n < c->poll_batch && (r = velo_poll(m->ep, &msg)) > 0) {
        rx_msg(m, &msg);
        ++n;
    }
    if (n == 0 && r == -EAGAIN && may_wait) {
        if (++m->idle >= (unsigned)c->idle_polls) {
            m->idle = 0;
            ++m->st.idle_waits;
            r = velo_wait(m->ep, &msg, c->idle_wait_ms);
            if (r > 0) {
                rx_msg(m, &msg);
                ++n;
            } else if (r == -ETIMEDOUT || r == -EINTR) {
                r = -EAGAIN;
            }
        }
    } else if (n) {
        m->idle = 0;
    }
    __atomic_store_n(&m->rx_busy, 0, __ATOMIC_RELEASE);
    if (OPAL_UNLIKELY(r < 0 && r != -EAGAIN && !m->finalizing)) {
        // the endpoint itself is gone (fabric stopped, device removed): every peer is lost
        OPAL_THREAD_LOCK(&m->lock);
        size_t k = m->neps;
        mca_btl_base_endpoint_t** eps = k ? malloc(k * sizeof *eps) : NULL;
        if (eps) memcpy(eps, m->eps, k * sizeof *eps);
        OPAL_THREAD_UNLOCK(&m->lock);
        for (size_t i = 0; eps && i < k; ++i) mca_btl_velo_fail_endpoint(m, eps[i], r, "receiving");
        free(eps);
        if (!eps && m->error_cb) m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_FATAL, NULL, "btl velo: endpoint lost");
    }
    return n;
}

// Queued fragments: store what credit allows, then fire the callbacks of the finished ones with
// no lock held (a callback may send again).
static int progress_pending(mca_btl_velo_module_t* m) {
    opal_list_t done;
    OBJ_CONSTRUCT(&done, opal_list_t);
    mca_btl_base_endpoint_t* failed[8];
    int fail_code[8];
    int nfailed = 0, n = 0;
    OPAL_THREAD_LOCK(&m->lock);
    for (size_t i = 0; i < m->neps; ++i) {
        mca_btl_base_endpoint_t* ep = m->eps[i];
        if (opal_list_is_empty(&ep->pending)) continue;
        if (OPAL_THREAD_TRYLOCK(&ep->lock)) continue;
        if (opal_list_is_empty(&ep->pending)) {  // (failed meanwhile)
            OPAL_THREAD_UNLOCK(&ep->lock);
            continue;
        }
        opal_list_item_t* it;
        int r = 0;
        while ((it = opal_list_get_first(&ep->pending)) != opal_list_get_end(&ep->pending)) {
            r = push(m, ep, (mca_btl_velo_frag_t*)it);
            if (r) break;
            opal_list_remove_item(&ep->pending, it);
            opal_list_append(&done, it);
            ++n;
        }
        if (opal_list_is_empty(&ep->pending)) __atomic_sub_fetch(&m->npending, 1, __ATOMIC_RELEASE);
        OPAL_THREAD_UNLOCK(&ep->lock);
        if (r && r != -EAGAIN && nfailed < 8) {
            failed[nfailed] = ep;
            fail_code[nfailed++] = r;
        }
    }
    OPAL_THREAD_UNLOCK(&m->lock);
    for (int i = 0; i < nfailed; ++i) mca_btl_velo_fail_endpoint(m, failed[i], fail_code[i], "sending");
    opal_list_item_t* it;
    while ((it = opal_list_remove_first(&done))) complete_frag(m, (mca_btl_velo_frag_t*)it, OPAL_SUCCESS);
    OBJ_DESTRUCT(&done);
    return n;
}

static int progress_done(mca_btl_velo_module_t* m) {
    opal_list_t done;
    OBJ_CONSTRUCT(&done, opal_list_t);
    OPAL_THREAD_LOCK(&m->done_lock);
    opal_list_join(&done, opal_list_get_end(&done), &m->done);
    __atomic_store_n(&m->ndone, 0, __ATOMIC_RELAXED);
    OPAL_THREAD_UNLOCK(&m->done_lock);
    int n = 0;
    opal_list_item_t* it;
    while ((it = opal_list_remove_first(&done))) {
        complete_frag(m, (mca_btl_velo_frag_t*)it, OPAL_SUCCESS);
        ++n;
    }
    OBJ_DESTRUCT(&done);
    return n;
}

int mca_btl_velo_progress(void) {
    mca_btl_velo_module_t* m = mca_btl_velo_component.module;
    if (OPAL_UNLIKELY(!m || !m->ep)) return 0;
    int n = 0;
    if (__atomic_load_n(&m->ndone, __ATOMIC_ACQUIRE)) n += progress_done(m);
    if (__atomic_load_n(&m->npending, __ATOMIC_ACQUIRE)) n += progress_pending(m);
    const int idle_ok = n == 0 && mca_btl_velo_component.idle_wait_ms > 0 &&
                        __atomic_load_n(&m->npending, __ATOMIC_ACQUIRE) == 0 &&
                        __atomic_load_n(&m->ndone, __ATOMIC_ACQUIRE) == 0 && !m->finalizing;
    n += mca_btl_velo_rdma_progress(m);
    n += progress_rx(m, idle_ok && !__atomic_load_n(&m->rdma_outstanding, __ATOMIC_ACQUIRE));
    if (__atomic_load_n(&m->ndone, __ATOMIC_ACQUIRE)) n += progress_done(m);
    return n;
}

// ============================================================================ finalize, dump
static void sum_stats(mca_btl_velo_module_t* m, uint64_t* msgs, uint64_t* frags, uint64_t* trains, uint64_t* queued) {
    *msgs = m->st.msgs_tx;
    *frags = m->st.frags_tx;
    *trains = m->st.trains_tx;
    *queued = m->st.queued;
    for (size_t i = 0; i < m->neps; ++i) {
        *msgs += m->eps[i]->st_msgs;
        *frags += m->eps[i]->st_frags;
        *trains += m->eps[i]->st_trains;
        *queued += m->eps[i]->st_queued;
    }
}

static int bv_finalize(struct mca_btl_base_module_t* btl) {
    mca_btl_velo_module_t* m = (mca_btl_velo_module_t*)btl;
    const mca_btl_velo_component_t* c = &mca_btl_velo_component;
    if (!m->ep) return OPAL_SUCCESS;
    m->finalizing = 1;
    while (m->neps) {
        mca_btl_base_endpoint_t* ep = m->eps[--m->neps];
        endpoint_release(m, ep);
    }
    progress_done(m);
    mca_btl_velo_rdma_close(m);
    uint64_t msgs, frags, trains, queued;
    sum_stats(m, &msgs, &frags, &trains, &queued);
    velo_stats_t vs;
    memset(&vs, 0, sizeof vs);
    velo_stats(m->ep, &vs);
    opal_output_verbose(1, c->output,
                        "btl velo: node %u vpid %u: sent %llu fragments (%llu trains) in %llu messages, %llu queued; "
                        "received %llu fragments in %llu messages (%llu malformed); %llu idle waits; libvelo: %llu "
                        "-EAGAIN sends, %llu fragments recombined",
                        m->addr.node, m->addr.vpid, (unsigned long long)frags, (unsigned long long)trains,
                        (unsigned long long)msgs, (unsigned long long)queued, (unsigned long long)m->st.frags_rx,
                        (unsigned long long)m->st.msgs_rx, (unsigned long long)m->st.rx_errors,
                        (unsigned long long)m->st.idle_waits, (unsigned long long)vs.send_eagain,
                        (unsigned long long)vs.frags_rx);
    opal_output_verbose(1, c->output,
                        "btl velo: RDMA %s: %llu puts, %llu gets (%llu refused for lack of room, %llu failed), %llu "
                        "registrations; libvelo region cache: %llu hits, %llu misses, %llu evictions, %llu re-pins",
                        m->rdma_ok ? "on" : "off", (unsigned long long)m->rdma_st.puts,
                        (unsigned long long)m->rdma_st.gets, (unsigned long long)m->rdma_st.eagain,
                        (unsigned long long)m->rdma_st.errors, (unsigned long long)m->rdma_st.registrations,
                        (unsigned long long)vs.rma_cache_hits, (unsigned long long)vs.rma_cache_miss,
                        (unsigned long long)vs.rma_evictions, (unsigned long long)vs.rma_repins);
    free(m->eps);
    m->eps = NULL;
    m->cap_eps = 0;
    velo_close(m->ep);
    m->ep = NULL;
    mca_btl_velo_component.module = NULL;
    for (unsigned i = 0; i < 256; ++i) {
        mca_btl_velo_rx_node_t* n = m->rx[i];
        if (!n) continue;
        for (unsigned k = 0; k < 256; ++k)
            if (n->vpid[k]) {
                vw_rx_free(n->vpid[k]);
                free(n->vpid[k]);
            }
        free(n);
        m->rx[i] = NULL;
    }
    m->rx_last = NULL;
    OBJ_DESTRUCT(&m->frags_eager);
    OBJ_DESTRUCT(&m->frags_max);
    OBJ_DESTRUCT(&m->done);
    OBJ_DESTRUCT(&m->done_lock);
    OBJ_DESTRUCT(&m->lock);
    return OPAL_SUCCESS;
}

static void bv_dump(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep, int verbose) {
    mca_btl_velo_module_t* m = (mca_btl_velo_module_t*)btl;
    (void)verbose;
    opal_output(0, "btl velo: node %u vpid %u (%s), %zu peers, %d with queued fragments", m->addr.node, m->addr.vpid,
                m->info.backend, m->neps, (int)m->npending);
    if (ep)
        opal_output(0, "btl velo:   peer node %u vpid %u state %d, %zu queued, next sequence %u", ep->addr.node,
                    ep->addr.vpid, ep->state, opal_list_get_size(&ep->pending), ep->tx_seq);
}
