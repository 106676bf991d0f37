/* SPDX-License-Identifier: MIT */
/*
 * Rendezvous for messages above the eager limit (velo_fi_wire.h): the sender registers its buffer
 * for REMOTE_READ by the destination alone (VELO_SCOPE_PEER) and sends an RTS; the receiver, once a
 * receive matched it, gets the data with velo_get straight into the receive buffer (zero copy) and
 * answers with a FIN; the sender then releases the registration (into libvelo's region cache) and
 * completes the send. All under the endpoint lock; progress drives the gets and their completions.
 */
#include <stdlib.h>
#include <string.h>

#include "velo_fi.h"

ssize_t vfi_rdv_send(struct vfi_ep* ep, velo_conn_t* conn, velo_addr_t dst, const struct iovec* iov, size_t count,
                     size_t len, const struct vfi_wire_hdr* h, void* context, uint64_t flags) {
    const struct iovec* one = NULL;
    size_t with_data = 0;
    for (size_t i = 0; i < count; i++)
        if (iov[i].iov_len) {
            one = &iov[i];
            with_data++;
        }
    if (with_data != 1) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: a rendezvous send (above %zu bytes) takes its data in one iovec, not %zu\n",
                 ep->eager_max, with_data);
        return -FI_EMSGSIZE;
    }
    velo_scope_t scope;
    memset(&scope, 0, sizeof(scope));
    scope.kind = VELO_SCOPE_PEER;
    scope.node_lo = scope.node_hi = (uint8_t)dst.node;
    scope.vpid_lo = scope.vpid_hi = (uint8_t)dst.vpid;
    velo_region_t* reg;
    int rc = velo_register(ep->vep, one->iov_base, len, VELO_ACCESS_REMOTE_READ, &scope, &reg);
    if (rc) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: rendezvous: velo_register of %zu bytes: %s\n", len, velo_strerror(rc));
        return vfi_errno(rc);
    }
    struct vfi_tx_rdv* t = calloc(1, sizeof(*t));
    if (!t) {
        velo_region_release(reg);
        return -FI_ENOMEM;
    }
    struct vfi_wire_rts rts = {len, 0, 0, ep->next_rdv_id++};
    velo_region_nla(reg, 0, &rts.nla);
    velo_region_rkey(reg, &rts.key);
    uint8_t msg[VFI_HDR_MAX + VFI_RTS_BYTES];
    struct vfi_wire_hdr rh = *h;
    rh.rts = 1;
    size_t n = vfi_wire_put(msg, &rh);
    vfi_wire_put_rts(msg + n, &rts);
    n += VFI_RTS_BYTES;
    int vr = velo_send(conn, msg, n);
    if (vr < 0) {
        velo_region_release(reg);
        free(t);
        if (vr == -EAGAIN) {
            vfi_ep_progress_locked(ep);
            return -FI_EAGAIN;
        }
        VFI_WARN(FI_LOG_EP_DATA, "velo: rendezvous RTS to node %u vpid %u: %s\n", dst.node, dst.vpid,
                 velo_strerror(vr));
        return vfi_errno(vr);
    }
    t->id = rts.id;
    t->dst = dst;
    t->region = reg;
    t->context = context;
    t->flags = flags;
    t->next = ep->tx_rdv;
    ep->tx_rdv = t;
    return 0;
}

void vfi_rdv_fin_arrived(struct vfi_ep* ep, velo_addr_t src, uint32_t id, uint32_t status) {
    for (struct vfi_tx_rdv** pp = &ep->tx_rdv; *pp; pp = &(*pp)->next) {
        struct vfi_tx_rdv* t = *pp;
        if (t->id != id || t->dst.node != src.node || t->dst.vpid != src.vpid) continue;
        *pp = t->next;
        int rc = velo_region_release(t->region);
        if (rc)
            VFI_WARN(FI_LOG_EP_DATA, "velo: rendezvous: releasing the send buffer's registration: %s\n",
                     velo_strerror(rc));
        struct vfi_cqe e = {0};
        e.e.op_context = t->context;
        e.e.flags = FI_SEND | (t->flags & (FI_MSG | FI_TAGGED));
        e.src = FI_ADDR_NOTAVAIL;
        if (status) {
            VFI_WARN(FI_LOG_EP_DATA, "velo: rendezvous send to node %u vpid %u failed at the receiver: %s\n", src.node,
                     src.vpid, fi_strerror((int)status));
            e.err = status > 0 && status < 4096 ? (int)status : FI_EIO;
        }
        vfi_cntr_inc(ep->send_cntr, e.err != 0);
        if (e.err || (t->flags & FI_COMPLETION)) vfi_cq_push(ep->tx_cq, &e);
        free(t);
        return;
    }
    FI_WARN_SPARSE(&vfi_prov, FI_LOG_EP_DATA, "velo: a FIN from node %u vpid %u for no rendezvous send (id %u)\n",
                   src.node, src.vpid, id);
}

/* Send the FIN of rendezvous `id` to src; false when it must be retried (no credit now). */
static bool send_fin(struct vfi_ep* ep, velo_addr_t src, uint32_t id, uint32_t status) {
    velo_conn_t* conn;
    if (vfi_ep_conn(ep, src, &conn))
        return true; /* no connection can be made: the sender is gone, nobody waits for the FIN */
    uint8_t msg[VFI_FIN_BYTES];
    size_t n = vfi_wire_put_fin(msg, id, status);
    int vr = velo_send(conn, msg, n);
    if (vr == -EAGAIN) return false;
    if (vr < 0)
        VFI_WARN(FI_LOG_EP_DATA, "velo: rendezvous FIN to node %u vpid %u: %s\n", src.node, src.vpid,
                 velo_strerror(vr));
    return true;
}

void vfi_rdv_discard(struct vfi_ep* ep, velo_addr_t src, const struct vfi_wire_rts* rts) {
    /* the message is consumed: the sender completes normally. A FIN that finds no credit now is
     * kept as a finished receive without a buffer. */
    if (send_fin(ep, src, rts->id, 0)) return;
    struct vfi_rx_rdv* g = calloc(1, sizeof(*g));
    if (!g) return;
    g->src = src;
    g->rts = *rts;
    g->fin_pending = true;
    g->next = ep->rx_rdv;
    ep->rx_rdv = g;
}

/* Ask for what is left of g's data (as far as the RMA unit takes commands). */
static void issue(struct vfi_ep* ep, struct vfi_rx_rdv* g) {
    while (g->issued < g->want && !g->err) {
        size_t off = g->issued, i = 0;
        while (off >= g->rx->iov[i].iov_len) {
            off -= g->rx->iov[i].iov_len;
            i++;
        }
        size_t n = g->rx->iov[i].iov_len - off;
        if (n > g->want - g->issued) n = g->want - g->issued;
        int rc = velo_get_buf(ep->vep, g->src, (uint8_t*)g->rx->iov[i].iov_base + off, g->rts.nla + g->issued,
                              g->rts.key, n, VELO_RMA_F_LOCAL, (uint64_t)(uintptr_t)g);
        if (rc == -EAGAIN) return;
        if (rc < 0) {
            VFI_WARN(FI_LOG_EP_DATA, "velo: rendezvous get of %zu bytes from node %u vpid %u: %s\n", n, g->src.node,
                     g->src.vpid, velo_strerror(rc));
            g->err = FI_EIO;
            return;
        }
        g->outstanding++;
        g->issued += n;
    }
}

/* Complete g's receive once its gets are done, then its FIN; true when g can be freed. */
static bool finish(struct vfi_ep* ep, struct vfi_rx_rdv* g) {
    if (!g->fin_pending) {
        if (g->outstanding || (g->issued < g->want && !g->err)) return false;
        vfi_rx_complete(ep, g->rx, g->err ? 0 : g->want, (size_t)g->rts.len, g->tag, g->has_data, g->data, g->src,
                        g->err);
        free(g->rx);
        g->rx = NULL;
        g->fin_pending = true;
    }
    if (!send_fin(ep, g->src, g->rts.id, (uint32_t)g->err)) return false;
    return true;
}

void vfi_rdv_start(struct vfi_ep* ep, struct vfi_rx* r, velo_addr_t src, const struct vfi_wire_rts* rts, uint64_t tag,
                   bool has_data, uint64_t data) {
    struct vfi_rx_rdv* g = calloc(1, sizeof(*g));
    if (!g) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: out of memory for a rendezvous receive\n");
        vfi_rx_complete(ep, r, 0, (size_t)rts->len, tag, has_data, data, src, FI_ENOMEM);
        free(r);
        send_fin(ep, src, rts->id, FI_ENOMEM);
        return;
    }
    size_t cap = vfi_rx_capacity(r);
    g->rx = r;
    g->src = src;
    g->rts = *rts;
    g->tag = tag;
    g->has_data = has_data;
    g->data = data;
    g->want = rts->len < cap ? (size_t)rts->len : cap;
    issue(ep, g);
    if (finish(ep, g)) {
        free(g);
        return;
    }
    g->next = ep->rx_rdv;
    ep->rx_rdv = g;
}

static struct vfi_rx_rdv* find(struct vfi_ep* ep, uint64_t cookie) {
    for (struct vfi_rx_rdv* g = ep->rx_rdv; g; g = g->next)
        if ((uint64_t)(uintptr_t)g == cookie) return g;
    return NULL;
}

void vfi_rdv_progress(struct vfi_ep* ep) {
    if (!ep->rx_rdv) return;
    velo_rma_cpl_t c;
    int rc;
    while ((rc = velo_rma_poll(ep->vep, &c)) == 0) {
        struct vfi_rx_rdv* g = find(ep, c.cookie);
        if (!g || g->outstanding <= 0) continue; /* not a get of ours (a put's or a peer's notification) */
        if (c.kind == VELO_RMA_KIND_GET_DONE) {
            g->outstanding--;
        } else if (c.kind == VELO_RMA_KIND_ERROR) {
            g->outstanding--;
            VFI_WARN(FI_LOG_EP_DATA, "velo: rendezvous get from node %u vpid %u failed: %s\n", g->src.node, g->src.vpid,
                     velo_rma_reason_str(c.reason));
            g->err = FI_EIO;
        }
    }
    if (rc != -EAGAIN) FI_WARN_ONCE(&vfi_prov, FI_LOG_EP_DATA, "velo: velo_rma_poll: %s\n", velo_strerror(rc));
    for (struct vfi_rx_rdv** pp = &ep->rx_rdv; *pp;) {
        struct vfi_rx_rdv* g = *pp;
        if (!g->fin_pending) issue(ep, g);
        if (finish(ep, g)) {
            *pp = g->next;
            free(g);
        } else {
            pp = &g->next;
        }
    }
}

void vfi_rdv_teardown(struct vfi_ep* ep) {
    while (ep->tx_rdv) {
        struct vfi_tx_rdv* t = ep->tx_rdv;
        ep->tx_rdv = t->next;
        velo_region_release(t->region);
        free(t);
    }
    while (ep->rx_rdv) {
        struct vfi_rx_rdv* g = ep->rx_rdv;
        ep->rx_rdv = g->next;
        free(g->rx);
        free(g);
    }
}
