/* SPDX-License-Identifier: MIT */
/*
 * FI_MSG and FI_TAGGED: send, sendv, sendmsg, senddata, inject, injectdata, recv, recvv, recvmsg
 * (tagged: FI_PEEK, FI_CLAIM, FI_DISCARD), and the arrival of messages (progress). Eager only: a
 * send is one velo_send of the header (velo_fi_wire.h) and the payload; it has completed when
 * velo_send returns, so its completion is written at once. Matching is the matcher's
 * (velo_fi_match.h), one instance for untagged and one for tagged messages.
 */
#include <stdlib.h>
#include <string.h>

#include "velo_fi.h"

static uint64_t src_key(velo_addr_t a) {
    return ((uint64_t)a.node << 32) | a.vpid;
}

static size_t iov_total(const struct iovec* iov, size_t count) {
    size_t n = 0;
    for (size_t i = 0; i < count; i++) n += iov[i].iov_len;
    return n;
}

/* iov_count within limits and no NULL base with a length; returns false with a warning. */
static bool iov_ok(const struct iovec* iov, size_t count, const char* call) {
    if (count > VFI_IOV_MAX) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: %s: %zu iovecs, at most %d\n", call, count, VFI_IOV_MAX);
        return false;
    }
    if (count && !iov) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: %s: NULL iov\n", call);
        return false;
    }
    for (size_t i = 0; i < count; i++)
        if (iov[i].iov_len && !iov[i].iov_base) {
            VFI_WARN(FI_LOG_EP_DATA, "velo: %s: iov[%zu] has a length and a NULL base\n", call, i);
            return false;
        }
    return true;
}

/* ---- send ---- */

struct send_args {
    const struct iovec* iov;
    size_t count;
    fi_addr_t dest;
    unsigned kind; /* VFI_WIRE_MSG / VFI_WIRE_TAGGED */
    uint64_t tag, data;
    void* context;
    uint64_t flags;
    const char* call;
};

static ssize_t do_send(struct vfi_ep* ep, const struct send_args* a) {
    if (!iov_ok(a->iov, a->count, a->call)) return -FI_EINVAL;
    if (a->flags & ~(uint64_t)(VFI_TX_OP_FLAGS | FI_MSG | FI_TAGGED | FI_TRANSMIT)) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: %s: flags 0x%llx not supported\n", a->call,
                 (unsigned long long)(a->flags & ~(uint64_t)VFI_TX_OP_FLAGS));
        return -FI_EBADFLAGS;
    }
    size_t len = iov_total(a->iov, a->count);
    if (len > VFI_MAX_MSG) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: %s: %zu bytes, at most %llu\n", a->call, len, (unsigned long long)VFI_MAX_MSG);
        return -FI_EMSGSIZE;
    }
    if ((a->flags & FI_INJECT) && len > VFI_INJECT_MAX) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: %s: %zu bytes with FI_INJECT, at most %u\n", a->call, len,
                 (unsigned)VFI_INJECT_MAX);
        return -FI_EMSGSIZE;
    }
    if (!(ep->caps & FI_SEND) || !(ep->caps & (a->kind == VFI_WIRE_TAGGED ? FI_TAGGED : FI_MSG))) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: %s: the endpoint was not opened with this capability\n", a->call);
        return -FI_EOPNOTSUPP;
    }
    pthread_mutex_lock(&ep->lock);
    ssize_t rc = 0;
    if (!ep->enabled) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: %s on an endpoint that is not enabled (fi_enable)\n", a->call);
        rc = -FI_EOPBADSTATE;
        goto out;
    }
    velo_addr_t dst;
    if (vfi_av_resolve(ep->av, a->dest, &dst)) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: %s: fi_addr 0x%llx is not in the endpoint's AV\n", a->call,
                 (unsigned long long)a->dest);
        rc = -FI_EINVAL;
        goto out;
    }
    velo_conn_t* conn;
    rc = vfi_ep_conn(ep, dst, &conn);
    if (rc) goto out;
    struct vfi_wire_hdr h = {a->kind, (a->flags & FI_REMOTE_CQ_DATA) != 0, 0, a->tag, a->data};
    size_t with_data = 0;
    for (size_t i = 0; i < a->count; i++) with_data += a->iov[i].iov_len != 0;
    /* rendezvous above the threshold; a message in several iovecs goes eagerly while one velo_send
     * carries it (a rendezvous send takes one iovec) */
    if (len > ep->rdv_threshold && (with_data <= 1 || len > ep->eager_max)) {
        uint64_t f = (a->kind == VFI_WIRE_TAGGED ? FI_TAGGED : FI_MSG) |
                     (vfi_wants_completion(ep->tx_bind_flags, a->flags) ? FI_COMPLETION : 0);
        rc = vfi_rdv_send(ep, conn, dst, a->iov, a->count, len, &h, a->context, f);
        goto out;
    }
    uint8_t small[VELO_MSG_MAX_BYTES];
    uint8_t* buf = small;
    size_t need = VFI_HDR_MAX + len;
    if (need > sizeof(small)) {
        if (ep->bounce_cap < need) {
            uint8_t* b = realloc(ep->bounce, need);
            if (!b) {
                rc = -FI_ENOMEM;
                goto out;
            }
            ep->bounce = b;
            ep->bounce_cap = need;
        }
        buf = ep->bounce;
    }
    size_t n = vfi_wire_put(buf, &h);
    for (size_t i = 0; i < a->count; i++) {
        if (a->iov[i].iov_len) memcpy(buf + n, a->iov[i].iov_base, a->iov[i].iov_len);
        n += a->iov[i].iov_len;
    }
    int vr = velo_send(conn, buf, n);
    if (vr == -EMSGSIZE && len > VFI_INJECT_MAX) {
        /* more than this connection carries (the destination granted a smaller window or has no
         * receive area): by rendezvous instead */
        uint64_t f = (a->kind == VFI_WIRE_TAGGED ? FI_TAGGED : FI_MSG) |
                     (vfi_wants_completion(ep->tx_bind_flags, a->flags) ? FI_COMPLETION : 0);
        rc = vfi_rdv_send(ep, conn, dst, a->iov, a->count, len, &h, a->context, f);
        goto out;
    }
    if (vr == -EAGAIN) { /* no credit (or the connection's answer not in yet): progress, then retry */
        vfi_ep_progress_locked(ep);
        rc = -FI_EAGAIN;
        goto out;
    }
    if (vr < 0) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: %s to node %u vpid %u: %s\n", a->call, dst.node, dst.vpid, velo_strerror(vr));
        rc = vfi_errno(vr);
        goto out;
    }
    vfi_cntr_inc(ep->send_cntr, false);
    if (!(a->flags & FI_INJECT) && vfi_wants_completion(ep->tx_bind_flags, a->flags)) {
        struct vfi_cqe e = {0};
        e.e.op_context = a->context;
        e.e.flags = FI_SEND | (a->kind == VFI_WIRE_TAGGED ? FI_TAGGED : FI_MSG);
        e.src = FI_ADDR_NOTAVAIL;
        rc = vfi_cq_push(ep->tx_cq, &e);
    }
out:
    pthread_mutex_unlock(&ep->lock);
    return rc;
}

#define EP(fid) ((struct vfi_ep*)(fid))

static ssize_t msg_send(struct fid_ep* fep, const void* buf, size_t len, void* desc, fi_addr_t dest, void* ctx) {
    (void)desc;
    struct iovec iov = {(void*)buf, len};
    struct send_args a = {&iov, 1, dest, VFI_WIRE_MSG, 0, 0, ctx, EP(fep)->tx_op_flags, "fi_send"};
    return do_send(EP(fep), &a);
}
static ssize_t msg_sendv(struct fid_ep* fep, const struct iovec* iov, void** desc, size_t count, fi_addr_t dest,
                         void* ctx) {
    (void)desc;
    struct send_args a = {iov, count, dest, VFI_WIRE_MSG, 0, 0, ctx, EP(fep)->tx_op_flags, "fi_sendv"};
    return do_send(EP(fep), &a);
}
static ssize_t msg_sendmsg(struct fid_ep* fep, const struct fi_msg* msg, uint64_t flags) {
    if (!msg) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: fi_sendmsg with a NULL message\n");
        return -FI_EINVAL;
    }
    struct send_args a = {msg->msg_iov, msg->iov_count, msg->addr, VFI_WIRE_MSG, 0,
                          msg->data,    msg->context,   flags,     "fi_sendmsg"};
    return do_send(EP(fep), &a);
}
static ssize_t msg_senddata(struct fid_ep* fep, const void* buf, size_t len, void* desc, uint64_t data, fi_addr_t dest,
                            void* ctx) {
    (void)desc;
    struct iovec iov = {(void*)buf, len};
    struct send_args a = {&iov,         1, dest, VFI_WIRE_MSG, 0, data, ctx, EP(fep)->tx_op_flags | FI_REMOTE_CQ_DATA,
                          "fi_senddata"};
    return do_send(EP(fep), &a);
}
static ssize_t msg_inject(struct fid_ep* fep, const void* buf, size_t len, fi_addr_t dest) {
    struct iovec iov = {(void*)buf, len};
    struct send_args a = {&iov, 1, dest, VFI_WIRE_MSG, 0, 0, NULL, FI_INJECT, "fi_inject"};
    return do_send(EP(fep), &a);
}
static ssize_t msg_injectdata(struct fid_ep* fep, const void* buf, size_t len, uint64_t data, fi_addr_t dest) {
    struct iovec iov = {(void*)buf, len};
    struct send_args a = {&iov, 1, dest, VFI_WIRE_MSG, 0, data, NULL, FI_INJECT | FI_REMOTE_CQ_DATA, "fi_injectdata"};
    return do_send(EP(fep), &a);
}

static ssize_t tag_send(struct fid_ep* fep, const void* buf, size_t len, void* desc, fi_addr_t dest, uint64_t tag,
                        void* ctx) {
    (void)desc;
    struct iovec iov = {(void*)buf, len};
    struct send_args a = {&iov, 1, dest, VFI_WIRE_TAGGED, tag, 0, ctx, EP(fep)->tx_op_flags, "fi_tsend"};
    return do_send(EP(fep), &a);
}
static ssize_t tag_sendv(struct fid_ep* fep, const struct iovec* iov, void** desc, size_t count, fi_addr_t dest,
                         uint64_t tag, void* ctx) {
    (void)desc;
    struct send_args a = {iov, count, dest, VFI_WIRE_TAGGED, tag, 0, ctx, EP(fep)->tx_op_flags, "fi_tsendv"};
    return do_send(EP(fep), &a);
}
static ssize_t tag_sendmsg(struct fid_ep* fep, const struct fi_msg_tagged* msg, uint64_t flags) {
    if (!msg) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: fi_tsendmsg with a NULL message\n");
        return -FI_EINVAL;
    }
    struct send_args a = {msg->msg_iov, msg->iov_count, msg->addr, VFI_WIRE_TAGGED, msg->tag,
                          msg->data,    msg->context,   flags,     "fi_tsendmsg"};
    return do_send(EP(fep), &a);
}
static ssize_t tag_senddata(struct fid_ep* fep, const void* buf, size_t len, void* desc, uint64_t data, fi_addr_t dest,
                            uint64_t tag, void* ctx) {
    (void)desc;
    struct iovec iov = {(void*)buf, len};
    struct send_args a = {
        &iov, 1, dest, VFI_WIRE_TAGGED, tag, data, ctx, EP(fep)->tx_op_flags | FI_REMOTE_CQ_DATA, "fi_tsenddata"};
    return do_send(EP(fep), &a);
}
static ssize_t tag_inject(struct fid_ep* fep, const void* buf, size_t len, fi_addr_t dest, uint64_t tag) {
    struct iovec iov = {(void*)buf, len};
    struct send_args a = {&iov, 1, dest, VFI_WIRE_TAGGED, tag, 0, NULL, FI_INJECT, "fi_tinject"};
    return do_send(EP(fep), &a);
}
static ssize_t tag_injectdata(struct fid_ep* fep, const void* buf, size_t len, uint64_t data, fi_addr_t dest,
                              uint64_t tag) {
    struct iovec iov = {(void*)buf, len};
    struct send_args a = {
        &iov, 1, dest, VFI_WIRE_TAGGED, tag, data, NULL, FI_INJECT | FI_REMOTE_CQ_DATA, "fi_tinjectdata"};
    return do_send(EP(fep), &a);
}

/* ---- receive ---- */

void vfi_rx_complete(struct vfi_ep* ep, struct vfi_rx* r, size_t done, size_t len, uint64_t tag, bool has_data,
                     uint64_t data, velo_addr_t src, int err) {
    struct vfi_cqe e = {0};
    e.e.op_context = r->context;
    e.e.flags = FI_RECV | (r->flags & (FI_MSG | FI_TAGGED)) | (has_data ? FI_REMOTE_CQ_DATA : 0);
    e.e.len = done;
    e.e.buf = r->iov_count ? r->iov[0].iov_base : NULL;
    e.e.data = has_data ? data : 0;
    e.e.tag = (r->flags & FI_TAGGED) ? tag : 0;
    e.src = (ep->caps & FI_SOURCE) ? vfi_av_reverse(ep->av, src) : FI_ADDR_NOTAVAIL;
    if (err) {
        e.err = err;
    } else if (done < len) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: a message of %zu bytes truncated to the receive buffer's %zu\n", len, done);
        e.err = FI_ETRUNC;
        e.olen = len - done;
    }
    vfi_cntr_inc(ep->recv_cntr, e.err != 0);
    if (e.err || vfi_wants_completion(ep->rx_bind_flags, r->flags)) vfi_cq_push(ep->rx_cq, &e);
}

size_t vfi_rx_capacity(const struct vfi_rx* r) {
    size_t n = 0;
    for (size_t i = 0; i < r->iov_count; i++) n += r->iov[i].iov_len;
    return n;
}

/* Complete receive r with a message's payload (ep lock held). */
static void deliver(struct vfi_ep* ep, struct vfi_rx* r, const uint8_t* p, size_t len, uint64_t tag, bool has_data,
                    uint64_t data, velo_addr_t src) {
    size_t done = 0;
    for (size_t i = 0; i < r->iov_count && done < len; i++) {
        size_t c = r->iov[i].iov_len < len - done ? r->iov[i].iov_len : len - done;
        if (c) memcpy(r->iov[i].iov_base, p + done, c);
        done += c;
    }
    vfi_rx_complete(ep, r, done, len, tag, has_data, data, src, 0);
}

void vfi_msg_arrived(struct vfi_ep* ep, const velo_msg_t* m) {
    const uint8_t* p = velo_msg_bytes(m);
    size_t len = velo_msg_size(m);
    struct vfi_wire_hdr h;
    velo_addr_t src = {m->src_node, m->src_vpid};
    uint32_t fin_id, fin_status;
    if (vfi_wire_get_fin(p, len, &fin_id, &fin_status)) {
        vfi_rdv_fin_arrived(ep, src, fin_id, fin_status);
        return;
    }
    size_t hl = vfi_wire_get(p, len, &h);
    if (hl && h.rts && len - hl != VFI_RTS_BYTES) hl = 0;
    if (!hl) {
        FI_WARN_SPARSE(&vfi_prov, FI_LOG_EP_DATA, "velo: malformed message of %zu bytes from node %u vpid %u dropped\n",
                       len, src.node, src.vpid);
        return;
    }
    p += hl;
    len -= hl;
    struct vfi_wire_rts rts = {0, 0, 0, 0};
    if (h.rts) vfi_wire_get_rts(p, &rts);
    struct vfi_matcher* mt = h.kind == VFI_WIRE_TAGGED ? &ep->match_tag : &ep->match_msg;
    struct vfi_mrecv* hit = vfi_match_arrival(mt, h.tag, src_key(src));
    if (hit) {
        struct vfi_rx* r = (struct vfi_rx*)hit;
        if (h.rts) {
            vfi_rdv_start(ep, r, src, &rts, h.tag, h.has_data, h.data);
            return;
        }
        deliver(ep, r, p, len, h.tag, h.has_data, h.data, src);
        free(r);
        return;
    }
    if (h.rts) len = 0; /* the unexpected entry keeps the RTS, not a payload */
    struct vfi_ux* u = malloc(sizeof(*u) + len);
    if (!u) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: out of memory: an unexpected message of %zu bytes dropped\n", len);
        return;
    }
    u->m.tag = h.tag;
    u->m.src = src_key(src);
    u->m.claim = NULL;
    u->data = h.data;
    u->has_data = h.has_data;
    u->rdv = h.rts;
    u->rts = rts;
    u->src_addr = src;
    u->len = h.rts ? (size_t)rts.len : len;
    if (len) memcpy(u->payload, p, len);
    vfi_match_add_unexp(mt, &u->m);
}

struct recv_args {
    const struct iovec* iov;
    size_t count;
    fi_addr_t src;
    bool tagged;
    uint64_t tag, ignore;
    void* context;
    uint64_t flags;
    const char* call;
};

/* A completion about an unexpected message without its payload (peek, discard). */
static void peek_completion(struct vfi_ep* ep, const struct vfi_ux* u, void* context, uint64_t flags, bool with_len) {
    struct vfi_cqe e = {0};
    e.e.op_context = context;
    e.e.flags = FI_RECV | FI_TAGGED | (u->has_data ? FI_REMOTE_CQ_DATA : 0) | (flags & (FI_PEEK | FI_CLAIM));
    e.e.len = with_len ? u->len : 0;
    e.e.data = u->has_data ? u->data : 0;
    e.e.tag = u->m.tag;
    e.src = (ep->caps & FI_SOURCE) ? vfi_av_reverse(ep->av, u->src_addr) : FI_ADDR_NOTAVAIL;
    vfi_cq_push(ep->rx_cq, &e);
}

static ssize_t do_recv(struct vfi_ep* ep, const struct recv_args* a) {
    if (!iov_ok(a->iov, a->count, a->call)) return -FI_EINVAL;
    uint64_t allowed = FI_COMPLETION | FI_MSG | FI_TAGGED | FI_RECV | (a->tagged ? FI_PEEK | FI_CLAIM | FI_DISCARD : 0);
    if (a->flags & ~allowed) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: %s: flags 0x%llx not supported\n", a->call,
                 (unsigned long long)(a->flags & ~allowed));
        return -FI_EBADFLAGS;
    }
    if ((a->flags & FI_DISCARD) && !(a->flags & (FI_PEEK | FI_CLAIM))) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: %s: FI_DISCARD goes with FI_PEEK or FI_CLAIM\n", a->call);
        return -FI_EINVAL;
    }
    if ((a->flags & FI_CLAIM) && !a->context) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: %s: FI_CLAIM needs a context (struct fi_context)\n", a->call);
        return -FI_EINVAL;
    }
    if (!(ep->caps & FI_RECV) || !(ep->caps & (a->tagged ? FI_TAGGED : FI_MSG))) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: %s: the endpoint was not opened with this capability\n", a->call);
        return -FI_EOPNOTSUPP;
    }
    pthread_mutex_lock(&ep->lock);
    ssize_t rc = 0;
    if (!ep->enabled) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: %s on an endpoint that is not enabled (fi_enable)\n", a->call);
        rc = -FI_EOPBADSTATE;
        goto out;
    }
    uint64_t src = VFI_SRC_ANY;
    if ((ep->caps & FI_DIRECTED_RECV) && a->src != FI_ADDR_UNSPEC) {
        velo_addr_t sa;
        if (vfi_av_resolve(ep->av, a->src, &sa)) {
            VFI_WARN(FI_LOG_EP_DATA, "velo: %s: source fi_addr 0x%llx is not in the endpoint's AV\n", a->call,
                     (unsigned long long)a->src);
            rc = -FI_EINVAL;
            goto out;
        }
        src = src_key(sa);
    }
    uint64_t tag = a->tagged ? a->tag : 0, ignore = a->tagged ? a->ignore : 0;
    struct vfi_matcher* mt = a->tagged ? &ep->match_tag : &ep->match_msg;
    vfi_ep_progress_locked(ep); /* the unexpected queue as of now */
    struct vfi_rx tmp = {.iov_count = a->count, .context = a->context, .flags = a->flags, .tag = tag};
    if (a->count) memcpy(tmp.iov, a->iov, a->count * sizeof(struct iovec));
    tmp.flags |= a->tagged ? FI_TAGGED : FI_MSG;
    if (a->flags & FI_PEEK) {
        bool take = (a->flags & FI_DISCARD) && !(a->flags & FI_CLAIM);
        struct vfi_munexp* um = vfi_match_find_unexp(mt, tag, ignore, src, take);
        if (!um) {
            struct vfi_cqe e = {0};
            e.e.op_context = a->context;
            e.e.flags = FI_RECV | FI_TAGGED | FI_PEEK;
            e.e.tag = tag;
            e.err = FI_ENOMSG;
            e.src = FI_ADDR_NOTAVAIL;
            rc = vfi_cq_push(ep->rx_cq, &e);
            goto out;
        }
        struct vfi_ux* u = (struct vfi_ux*)um;
        peek_completion(ep, u, a->context, a->flags, true);
        if (a->flags & FI_CLAIM) u->m.claim = a->context;
        if (take) {
            if (u->rdv) vfi_rdv_discard(ep, u->src_addr, &u->rts);
            free(u);
        }
        goto out;
    }
    struct vfi_munexp* um = (a->flags & FI_CLAIM) ? vfi_match_take_claimed(mt, a->context)
                                                  : vfi_match_find_unexp(mt, tag, ignore, src, true);
    if (!um && (a->flags & FI_CLAIM)) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: %s with FI_CLAIM: no message was claimed with this context\n", a->call);
        rc = -FI_EINVAL;
        goto out;
    }
    if (um) {
        struct vfi_ux* u = (struct vfi_ux*)um;
        if (a->flags & FI_DISCARD) {
            peek_completion(ep, u, a->context, a->flags, false);
            if (u->rdv) vfi_rdv_discard(ep, u->src_addr, &u->rts);
        } else if (u->rdv) {
            struct vfi_rx* r = malloc(sizeof(*r));
            if (!r) {
                vfi_match_add_unexp(mt, &u->m); /* keep it for a later receive */
                rc = -FI_ENOMEM;
                goto out;
            }
            *r = tmp;
            vfi_rdv_start(ep, r, u->src_addr, &u->rts, u->m.tag, u->has_data, u->data);
        } else {
            deliver(ep, &tmp, u->payload, u->len, u->m.tag, u->has_data, u->data, u->src_addr);
        }
        free(u);
        goto out;
    }
    struct vfi_rx* r = malloc(sizeof(*r));
    if (!r) {
        rc = -FI_ENOMEM;
        goto out;
    }
    *r = tmp;
    r->m.tag = tag;
    r->m.ignore = ignore;
    r->m.src = src;
    vfi_match_add_posted(mt, &r->m);
out:
    pthread_mutex_unlock(&ep->lock);
    return rc;
}

static ssize_t msg_recv(struct fid_ep* fep, void* buf, size_t len, void* desc, fi_addr_t src, void* ctx) {
    (void)desc;
    struct iovec iov = {buf, len};
    struct recv_args a = {&iov, 1, src, false, 0, 0, ctx, EP(fep)->rx_op_flags, "fi_recv"};
    return do_recv(EP(fep), &a);
}
static ssize_t msg_recvv(struct fid_ep* fep, const struct iovec* iov, void** desc, size_t count, fi_addr_t src,
                         void* ctx) {
    (void)desc;
    struct recv_args a = {iov, count, src, false, 0, 0, ctx, EP(fep)->rx_op_flags, "fi_recvv"};
    return do_recv(EP(fep), &a);
}
static ssize_t msg_recvmsg(struct fid_ep* fep, const struct fi_msg* msg, uint64_t flags) {
    if (!msg) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: fi_recvmsg with a NULL message\n");
        return -FI_EINVAL;
    }
    struct recv_args a = {msg->msg_iov, msg->iov_count, msg->addr, false, 0, 0, msg->context, flags, "fi_recvmsg"};
    return do_recv(EP(fep), &a);
}
static ssize_t tag_recv(struct fid_ep* fep, void* buf, size_t len, void* desc, fi_addr_t src, uint64_t tag,
                        uint64_t ignore, void* ctx) {
    (void)desc;
    struct iovec iov = {buf, len};
    struct recv_args a = {&iov, 1, src, true, tag, ignore, ctx, EP(fep)->rx_op_flags, "fi_trecv"};
    return do_recv(EP(fep), &a);
}
static ssize_t tag_recvv(struct fid_ep* fep, const struct iovec* iov, void** desc, size_t count, fi_addr_t src,
                         uint64_t tag, uint64_t ignore, void* ctx) {
    (void)desc;
    struct recv_args a = {iov, count, src, true, tag, ignore, ctx, EP(fep)->rx_op_flags, "fi_trecvv"};
    return do_recv(EP(fep), &a);
}
static ssize_t tag_recvmsg(struct fid_ep* fep, const struct fi_msg_tagged* msg, uint64_t flags) {
    if (!msg) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: fi_trecvmsg with a NULL message\n");
        return -FI_EINVAL;
    }
    struct recv_args a = {msg->msg_iov, msg->iov_count, msg->addr, true,         msg->tag,
                          msg->ignore,  msg->context,   flags,     "fi_trecvmsg"};
    return do_recv(EP(fep), &a);
}

struct fi_ops_msg vfi_msg_ops = {
    .size = sizeof(struct fi_ops_msg),
    .recv = msg_recv,
    .recvv = msg_recvv,
    .recvmsg = msg_recvmsg,
    .send = msg_send,
    .sendv = msg_sendv,
    .sendmsg = msg_sendmsg,
    .inject = msg_inject,
    .senddata = msg_senddata,
    .injectdata = msg_injectdata,
};

struct fi_ops_tagged vfi_tagged_ops = {
    .size = sizeof(struct fi_ops_tagged),
    .recv = tag_recv,
    .recvv = tag_recvv,
    .recvmsg = tag_recvmsg,
    .send = tag_send,
    .sendv = tag_sendv,
    .sendmsg = tag_sendmsg,
    .inject = tag_inject,
    .senddata = tag_senddata,
    .injectdata = tag_injectdata,
};

/* ---- cancel, teardown ---- */

static struct vfi_rx* find_posted(struct vfi_matcher* m, void* context) {
    for (struct vfi_mrecv* r = m->posted; r; r = r->next)
        if (((struct vfi_rx*)r)->context == context) return (struct vfi_rx*)r;
    return NULL;
}

ssize_t vfi_msg_cancel(struct vfi_ep* ep, void* context) {
    pthread_mutex_lock(&ep->lock);
    struct vfi_matcher* mt = &ep->match_tag;
    struct vfi_rx* r = find_posted(mt, context);
    if (!r) {
        mt = &ep->match_msg;
        r = find_posted(mt, context);
    }
    ssize_t rc = -FI_ENOENT;
    if (r) {
        vfi_match_remove_posted(mt, &r->m);
        struct vfi_cqe e = {0};
        e.e.op_context = r->context;
        e.e.flags = FI_RECV | (r->flags & (FI_MSG | FI_TAGGED));
        e.e.tag = r->tag;
        e.err = FI_ECANCELED;
        e.src = FI_ADDR_NOTAVAIL;
        rc = vfi_cq_push(ep->rx_cq, &e);
        free(r);
    }
    pthread_mutex_unlock(&ep->lock);
    return rc;
}

void vfi_msg_teardown(struct vfi_ep* ep) {
    vfi_rdv_teardown(ep);
    struct vfi_matcher* ms[2] = {&ep->match_msg, &ep->match_tag};
    for (int i = 0; i < 2; i++) {
        struct vfi_mrecv* r;
        struct vfi_munexp* u;
        while ((r = vfi_match_pop_posted(ms[i]))) free(r);
        while ((u = vfi_match_pop_unexp(ms[i]))) free(u);
    }
}
