// SPDX-License-Identifier: MIT
// mca_btl_velo: progress. Completion callbacks, queued fragments (stored as credit allows), the
// RDMA path's completions, then the mailbox: messages reassembled into fragments and delivered to
// the PML's callbacks; an idle wait in velo_idle when nothing moves. See docs/mpi.md.
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "btl_velo.h"
#include "btl_velo_frag.h"

#include "opal/util/output.h"

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
            // sleep until a message, a credit or an RMA completion is there (whatever the PML
            // waits for comes that way), then take the messages; the rest is the next call's
            m->idle = 0;
            ++m->st.idle_waits;
            r = velo_idle(m->ep, c->idle_wait_ms);
            if (r == 1) {
                while (n < c->poll_batch && (r = velo_poll(m->ep, &msg)) > 0) {
                    rx_msg(m, &msg);
                    ++n;
                }
            } else if (r == 0 || r == -EINTR) {
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
            r = mca_btl_velo_push(m, ep, (mca_btl_velo_frag_t*)it);
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
    while ((it = opal_list_remove_first(&done))) mca_btl_velo_frag_complete(m, (mca_btl_velo_frag_t*)it, OPAL_SUCCESS);
    OBJ_DESTRUCT(&done);
    return n;
}

int mca_btl_velo_progress_done(mca_btl_velo_module_t* m) {
    opal_list_t done;
    OBJ_CONSTRUCT(&done, opal_list_t);
    OPAL_THREAD_LOCK(&m->done_lock);
    opal_list_join(&done, opal_list_get_end(&done), &m->done);
    __atomic_store_n(&m->ndone, 0, __ATOMIC_RELAXED);
    OPAL_THREAD_UNLOCK(&m->done_lock);
    int n = 0;
    opal_list_item_t* it;
    while ((it = opal_list_remove_first(&done))) {
        mca_btl_velo_frag_complete(m, (mca_btl_velo_frag_t*)it, OPAL_SUCCESS);
        ++n;
    }
    OBJ_DESTRUCT(&done);
    return n;
}

int mca_btl_velo_progress(void) {
    mca_btl_velo_module_t* m = mca_btl_velo_component.module;
    if (OPAL_UNLIKELY(!m || !m->ep)) return 0;
    int n = 0;
    if (__atomic_load_n(&m->ndone, __ATOMIC_ACQUIRE)) n += mca_btl_velo_progress_done(m);
    if (__atomic_load_n(&m->npending, __ATOMIC_ACQUIRE)) n += progress_pending(m);
    // queued fragments wait for credit and RMA operations for their completions: velo_idle wakes
    // for both, so a rank with work in flight sleeps too instead of taking the CPU from the fabric
    const int idle_ok = n == 0 && mca_btl_velo_component.idle_wait_ms > 0 &&
                        __atomic_load_n(&m->ndone, __ATOMIC_ACQUIRE) == 0 && !m->finalizing &&
                        !mca_btl_velo_rdma_deferred(m);
    const int k = mca_btl_velo_rdma_progress(m);
    n += k;
    n += progress_rx(m, idle_ok && k == 0);
    if (__atomic_load_n(&m->ndone, __ATOMIC_ACQUIRE)) n += mca_btl_velo_progress_done(m);
    return n;
}
