// SPDX-License-Identifier: MIT
// mca_btl_velo: the module. Endpoints (peers, added lazily), descriptors (alloc, prepare_src),
// failures reported to the PML, finalize. The send path is btl_velo_send.c, progress
// btl_velo_progress.c, the descriptors' class and free lists btl_velo_frag.c. See docs/mpi.md.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "btl_velo.h"
#include "btl_velo_frag.h"

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
            .btl_send = mca_btl_velo_send,
            .btl_sendi = mca_btl_velo_sendi,
            .btl_dump = bv_dump,
            .btl_register_error = bv_register_error,
            // RDMA (btl_put, btl_get, btl_register_mem, btl_deregister_mem, btl_flush): set at init
            // when the device has an RMA unit (btl_velo_rdma.c)
        },
};

int mca_btl_velo_module_open(mca_btl_velo_module_t* m) {
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
    return mca_btl_velo_frag_lists_init(m);
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

// Best effort: let the endpoint's queue drain for a while (finalize), then drop the rest.
static void drain(mca_btl_velo_module_t* m, mca_btl_base_endpoint_t* ep) {
    const int64_t deadline = mca_btl_velo_now_ns() + (int64_t)mca_btl_velo_component.connect_timeout_ms * 1000000;
    while (!opal_list_is_empty(&ep->pending) && ep->state != MCA_BTL_VELO_EP_FAILED && mca_btl_velo_now_ns() < deadline)
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
    while ((it = opal_list_remove_first(&left)))
        mca_btl_velo_frag_complete(m, (mca_btl_velo_frag_t*)it, OPAL_ERR_UNREACH);
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
    while ((it = opal_list_remove_first(&left)))
        mca_btl_velo_frag_complete(m, (mca_btl_velo_frag_t*)it, OPAL_ERR_UNREACH);
    OBJ_DESTRUCT(&left);
}

// ============================================================================ descriptors
static mca_btl_base_descriptor_t* bv_alloc(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep,
                                           uint8_t order, size_t size, uint32_t flags) {
    (void)order;
    mca_btl_velo_frag_t* f = mca_btl_velo_frag_get((mca_btl_velo_module_t*)btl, size);
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
    mca_btl_velo_frag_return((mca_btl_velo_frag_t*)des);
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
    mca_btl_velo_frag_t* f = mca_btl_velo_frag_get(m, inplace ? reserve : reserve + *size);
    if (!f) return NULL;
    struct iovec iov;
    uint32_t iov_count = 1;
    size_t max_data = *size;
    iov.iov_len = max_data;
    iov.iov_base = inplace ? NULL : f->data + reserve;
    if (opal_convertor_pack(convertor, &iov, &iov_count, &max_data) < 0) {
        mca_btl_velo_frag_return(f);
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
    mca_btl_velo_progress_done(m);
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
    opal_output_verbose(1, c->output,
                        "btl velo: registrations under pressure: %llu not made (budget), %llu refused by the NIC "
                        "(no room), %llu other failures; %llu local sides deferred, %llu transfers waited for room, "
                        "%llu moved through the bounce buffer",
                        (unsigned long long)m->rdma_st.budget, (unsigned long long)m->rdma_st.no_room,
                        (unsigned long long)m->rdma_st.reg_errors, (unsigned long long)m->rdma_st.deferred_regs,
                        (unsigned long long)m->rdma_st.deferred, (unsigned long long)m->rdma_st.bounced);
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
