// SPDX-License-Identifier: MIT
// mca_btl_velo: the send path. btl_send and btl_sendi, per-peer queues in order, fragments as one
// VELO message or a train (btl_velo_wire.h), the first send connecting to the peer. See docs/mpi.md.
#include <errno.h>
#include <string.h>

#include "btl_velo.h"
#include "btl_velo_frag.h"

#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"

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
    ep->connect_ns = mca_btl_velo_now_ns();
    opal_output_verbose(2, mca_btl_velo_component.output, "btl velo: connecting to node %u vpid %u", ep->addr.node,
                        ep->addr.vpid);
    return 0;
}

// Store the messages of a fragment until it is out (0), credit runs out (-EAGAIN) or the peer
// fails (other negative errno). Under ep->lock.
int mca_btl_velo_push(mca_btl_velo_module_t* m, mca_btl_base_endpoint_t* ep, mca_btl_velo_frag_t* f) {
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
                mca_btl_velo_now_ns() - ep->connect_ns > (int64_t)c->connect_timeout_ms * 1000000)
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
        mca_btl_velo_frag_return(f);
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
    if (empty) r = mca_btl_velo_push(m, ep, f);
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
    if (f->internal) mca_btl_velo_frag_return(f);
    return OPAL_ERR_UNREACH;
}

// Never returns 1: the descriptor completes through its callback, from progress (ob1 4.1 retries
// its pending work only from completion callbacks).
int mca_btl_velo_send(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep,
                      struct mca_btl_base_descriptor_t* des, mca_btl_base_tag_t tag) {
    mca_btl_velo_frag_t* f = (mca_btl_velo_frag_t*)des;
    f->tag = tag;
    f->off = 0;
    f->started = 0;
    f->internal = 0;
    f->endpoint = ep;
    return submit((mca_btl_velo_module_t*)btl, ep, f);
}

// Pack payload_size bytes of the convertor at dst. A short pack puts the convertor back at pos0: -1.
static int pack_payload(struct opal_convertor_t* convertor, uint8_t* dst, size_t payload_size, size_t pos0) {
    struct iovec iov = {.iov_base = dst, .iov_len = payload_size};
    uint32_t n = 1;
    size_t max_data = payload_size;
    if (opal_convertor_pack(convertor, &iov, &n, &max_data) < 0 || max_data != payload_size) {
        size_t p = pos0;
        opal_convertor_set_position(convertor, &p);
        return -1;
    }
    return 0;
}

// A descriptor of the BTL's own holding total bytes (sendi): sent or queued, returned when out.
static int submit_internal(mca_btl_velo_module_t* m, mca_btl_base_endpoint_t* ep, mca_btl_velo_frag_t* f,
                           mca_btl_base_tag_t tag, size_t total) {
    f->segments[0].seg_addr.pval = f->data;
    f->segments[0].seg_len = total;
    f->tag = tag;
    f->internal = 1;
    f->endpoint = ep;
    return submit(m, ep, f);
}

// Header + payload. A fragment that fits one message goes straight from the stack when the peer's
// queue is empty and credit is there; otherwise (and for trains) the bytes go into a descriptor of
// the BTL's own, which is sent or queued: once this returns OPAL_SUCCESS the data are ours.
int mca_btl_velo_sendi(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep,
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
        if (payload_size && pack_payload(convertor, b + header_size, payload_size, pos0)) return OPAL_ERR_RESOURCE_BUSY;
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
        mca_btl_velo_frag_t* f = mca_btl_velo_frag_get(m, total);
        if (!f) {
            size_t p = pos0;
            opal_convertor_set_position(convertor, &p);
            return OPAL_ERR_RESOURCE_BUSY;
        }
        memcpy(f->data, b, total);
        return submit_internal(m, ep, f, tag, total);
    }
    mca_btl_velo_frag_t* f = mca_btl_velo_frag_get(m, total);
    if (!f) return OPAL_ERR_RESOURCE_BUSY;
    memcpy(f->data, header, header_size);
    if (payload_size && pack_payload(convertor, f->data + header_size, payload_size, convertor->bConverted)) {
        mca_btl_velo_frag_return(f);
        return OPAL_ERR_RESOURCE_BUSY;
    }
    return submit_internal(m, ep, f, tag, total);
}
