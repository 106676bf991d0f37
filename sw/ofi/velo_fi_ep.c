/* SPDX-License-Identifier: MIT */
/*
 * Endpoints (FI_EP_RDM): one libvelo endpoint each (velo_open at fi_endpoint), bindings to an AV
 * and CQs, fi_enable, fi_getname, fi_cancel, close; and progress: the receive path that reads the
 * libvelo mailbox and hands each message to the matcher (velo_fi_msg.c). Connections to peers are
 * made on first send with VELO_CONNECT_NOWAIT: the send returns -FI_EAGAIN until the peer's answer
 * is in (read by progress), so no call blocks.
 */
#include <stdlib.h>
#include <string.h>

#include "velo_fi.h"

int vfi_ep_conn(struct vfi_ep* ep, velo_addr_t dst, velo_conn_t** conn) {
    for (size_t i = 0; i < ep->nconns; i++)
        if (ep->conns[i].addr.node == dst.node && ep->conns[i].addr.vpid == dst.vpid) {
            *conn = ep->conns[i].conn;
            return 0;
        }
    if (ep->nconns == ep->capconns) {
        size_t cap = ep->capconns ? 2 * ep->capconns : 8;
        struct vfi_conn* c = realloc(ep->conns, cap * sizeof(*c));
        if (!c) return -FI_ENOMEM;
        ep->conns = c;
        ep->capconns = cap;
    }
    velo_conn_t* c;
    /* without a receive area (the default) the destination pins nothing for this sender: longer
     * messages go by rendezvous, registered only while they are in flight */
    int rc = velo_connect(ep->vep, dst, VELO_CONNECT_NOWAIT | (ep->recv_area ? 0u : VELO_CONNECT_SMALL), &c);
    if (rc) {
        VFI_WARN(FI_LOG_EP_DATA, "velo: cannot connect to node %u vpid %u: %s\n", dst.node, dst.vpid,
                 velo_strerror(rc));
        return vfi_errno(rc);
    }
    ep->conns[ep->nconns++] = (struct vfi_conn){dst, c};
    *conn = c;
    return 0;
}

void vfi_ep_progress_locked(struct vfi_ep* ep) {
    if (!ep->enabled || ep->closing) return;
    vfi_rdv_progress(ep); /* completions of rendezvous gets, and what is left to issue */
    /* bounded, so that one busy sender cannot hold the caller forever */
    bool idled = false;
    for (int i = 0; i < 256; i++) {
        velo_msg_t m;
        int rc = velo_poll(ep->vep, &m);
        if (rc == -EAGAIN) {
            /* velo_poll takes data messages only; control traffic (connection requests and
             * answers, credit returns) is handled by velo_idle, which here does not sleep */
            if (idled) return;
            idled = true;
            rc = velo_idle(ep->vep, 0);
            if (rc <= 0) {
                if (rc < 0) FI_WARN_ONCE(&vfi_prov, FI_LOG_EP_DATA, "velo: velo_idle: %s\n", velo_strerror(rc));
                return;
            }
            continue;
        }
        if (rc < 0) {
            FI_WARN_ONCE(&vfi_prov, FI_LOG_EP_DATA, "velo: velo_poll: %s\n", velo_strerror(rc));
            return;
        }
        vfi_msg_arrived(ep, &m);
    }
}

void vfi_ep_progress(struct vfi_ep* ep) {
    pthread_mutex_lock(&ep->lock);
    vfi_ep_progress_locked(ep);
    pthread_mutex_unlock(&ep->lock);
}

/* ---- fi_ops ---- */

static int ep_close(struct fid* fid) {
    struct vfi_ep* ep = (struct vfi_ep*)fid;
    pthread_mutex_lock(&ep->lock);
    ep->closing = true;
    pthread_mutex_unlock(&ep->lock);
    if (ep->tx_cq) vfi_cq_detach(ep->tx_cq, ep);
    if (ep->rx_cq && ep->rx_cq != ep->tx_cq) vfi_cq_detach(ep->rx_cq, ep);
    if (ep->send_cntr) vfi_cntr_detach(ep->send_cntr, ep);
    if (ep->recv_cntr && ep->recv_cntr != ep->send_cntr) vfi_cntr_detach(ep->recv_cntr, ep);
    if (ep->av) __atomic_fetch_sub(&ep->av->refs, 1, __ATOMIC_ACQ_REL);
    vfi_msg_teardown(ep);
    int rc = velo_close(ep->vep);
    if (rc) VFI_WARN(FI_LOG_EP_CTRL, "velo: velo_close: %s\n", velo_strerror(rc));
    __atomic_fetch_sub(&ep->dom->refs, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_destroy(&ep->lock);
    free(ep->conns);
    free(ep->bounce);
    free(ep);
    return 0;
}

static int ep_bind(struct fid* fid, struct fid* bfid, uint64_t flags) {
    struct vfi_ep* ep = (struct vfi_ep*)fid;
    if (!bfid) {
        VFI_WARN(FI_LOG_EP_CTRL, "velo: fi_ep_bind with a NULL object\n");
        return -FI_EINVAL;
    }
    pthread_mutex_lock(&ep->lock);
    int rc = 0;
    if (ep->enabled) {
        VFI_WARN(FI_LOG_EP_CTRL, "velo: fi_ep_bind after fi_enable\n");
        rc = -FI_EOPBADSTATE;
        goto out;
    }
    switch (bfid->fclass) {
        case FI_CLASS_AV: {
            struct vfi_av* av = (struct vfi_av*)bfid;
            if (flags) {
                VFI_WARN(FI_LOG_EP_CTRL, "velo: AV binding takes no flags\n");
                rc = -FI_EINVAL;
            } else if (ep->av) {
                VFI_WARN(FI_LOG_EP_CTRL, "velo: the endpoint already has an AV\n");
                rc = -FI_EINVAL;
            } else if (av->dom != ep->dom) {
                VFI_WARN(FI_LOG_EP_CTRL, "velo: AV of another domain\n");
                rc = -FI_EINVAL;
            } else {
                ep->av = av;
                __atomic_fetch_add(&av->refs, 1, __ATOMIC_ACQ_REL);
            }
            break;
        }
        case FI_CLASS_CQ: {
            struct vfi_cq* cq = (struct vfi_cq*)bfid;
            if (flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)) {
                VFI_WARN(FI_LOG_EP_CTRL, "velo: CQ binding flags 0x%llx not supported\n", (unsigned long long)flags);
                rc = -FI_EINVAL;
                break;
            }
            if (!(flags & (FI_TRANSMIT | FI_RECV))) {
                VFI_WARN(FI_LOG_EP_CTRL, "velo: CQ binding needs FI_TRANSMIT and/or FI_RECV\n");
                rc = -FI_EINVAL;
                break;
            }
            if (cq->dom != ep->dom) {
                VFI_WARN(FI_LOG_EP_CTRL, "velo: CQ of another domain\n");
                rc = -FI_EINVAL;
                break;
            }
            if (((flags & FI_TRANSMIT) && ep->tx_cq) || ((flags & FI_RECV) && ep->rx_cq)) {
                VFI_WARN(FI_LOG_EP_CTRL, "velo: the endpoint already has a CQ for this direction\n");
                rc = -FI_EINVAL;
                break;
            }
            /* not under the endpoint lock: a thread progressing the CQ holds the CQ's eps_lock
             * and takes endpoint locks */
            pthread_mutex_unlock(&ep->lock);
            rc = vfi_cq_attach(cq, ep);
            pthread_mutex_lock(&ep->lock);
            if (rc) break;
            if (flags & FI_TRANSMIT) {
                ep->tx_cq = cq;
                ep->tx_bind_flags = flags & FI_SELECTIVE_COMPLETION;
            }
            if (flags & FI_RECV) {
                ep->rx_cq = cq;
                ep->rx_bind_flags = flags & FI_SELECTIVE_COMPLETION;
            }
            break;
        }
        case FI_CLASS_EQ:
            break; /* an RDM endpoint of this provider raises no events: nothing to report there */
        case FI_CLASS_CNTR: {
            struct vfi_cntr* c = (struct vfi_cntr*)bfid;
            if (!(flags & (FI_SEND | FI_RECV)) || (flags & ~(uint64_t)(FI_SEND | FI_RECV))) {
                VFI_WARN(FI_LOG_EP_CTRL,
                         "velo: counter binding flags 0x%llx: FI_SEND and/or FI_RECV only (no "
                         "FI_RMA)\n",
                         (unsigned long long)flags);
                rc = -FI_EINVAL;
                break;
            }
            if (c->dom != ep->dom) {
                VFI_WARN(FI_LOG_EP_CTRL, "velo: counter of another domain\n");
                rc = -FI_EINVAL;
                break;
            }
            if (((flags & FI_SEND) && ep->send_cntr) || ((flags & FI_RECV) && ep->recv_cntr)) {
                VFI_WARN(FI_LOG_EP_CTRL, "velo: the endpoint already has a counter for this direction\n");
                rc = -FI_EINVAL;
                break;
            }
            pthread_mutex_unlock(&ep->lock); /* as for CQs */
            rc = vfi_cntr_attach(c, ep);
            pthread_mutex_lock(&ep->lock);
            if (rc) break;
            if (flags & FI_SEND) ep->send_cntr = c;
            if (flags & FI_RECV) ep->recv_cntr = c;
            break;
        }
        default:
            VFI_WARN(FI_LOG_EP_CTRL, "velo: cannot bind an object of class %d to an endpoint\n", (int)bfid->fclass);
            rc = -FI_EINVAL;
    }
out:
    pthread_mutex_unlock(&ep->lock);
    return rc;
}

static int ep_control(struct fid* fid, int command, void* arg) {
    struct vfi_ep* ep = (struct vfi_ep*)fid;
    int rc = 0;
    pthread_mutex_lock(&ep->lock);
    switch (command) {
        case FI_ENABLE:
            if (!ep->av) {
                VFI_WARN(FI_LOG_EP_CTRL, "velo: fi_enable without an AV bound\n");
                rc = -FI_ENOAV;
            } else if (((ep->caps & FI_SEND) && !ep->tx_cq) || ((ep->caps & FI_RECV) && !ep->rx_cq)) {
                VFI_WARN(FI_LOG_EP_CTRL, "velo: fi_enable without a transmit and a receive CQ bound\n");
                rc = -FI_ENOCQ;
            } else {
                ep->enabled = true;
            }
            break;
        case FI_GETOPSFLAG:
        case FI_SETOPSFLAG: {
            uint64_t* flags = arg;
            if (!flags || !(*flags & (FI_TRANSMIT | FI_RECV)) || ((*flags & FI_TRANSMIT) && (*flags & FI_RECV))) {
                VFI_WARN(FI_LOG_EP_CTRL, "velo: FI_GETOPSFLAG/FI_SETOPSFLAG need FI_TRANSMIT or FI_RECV\n");
                rc = -FI_EINVAL;
                break;
            }
            bool tx = *flags & FI_TRANSMIT;
            if (command == FI_GETOPSFLAG) {
                *flags = (tx ? ep->tx_op_flags : ep->rx_op_flags) | (tx ? FI_TRANSMIT : FI_RECV);
                break;
            }
            uint64_t f = *flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV);
            if (f & ~(uint64_t)(tx ? VFI_TX_OP_FLAGS : FI_COMPLETION)) {
                VFI_WARN(FI_LOG_EP_CTRL, "velo: op flags 0x%llx not supported\n", (unsigned long long)f);
                rc = -FI_EINVAL;
            } else if (tx) {
                ep->tx_op_flags = f;
            } else {
                ep->rx_op_flags = f;
            }
            break;
        }
        default:
            VFI_WARN(FI_LOG_EP_CTRL, "velo: endpoint control command %d not supported\n", command);
            rc = -FI_ENOSYS;
    }
    pthread_mutex_unlock(&ep->lock);
    return rc;
}

static struct fi_ops ep_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = ep_close,
    .bind = ep_bind,
    .control = ep_control,
    .ops_open = vfi_no_ops_open,
};

/* ---- fi_ops_ep ---- */

static ssize_t ep_cancel(fid_t fid, void* context) {
    struct vfi_ep* ep = (struct vfi_ep*)fid;
    if (!context) {
        VFI_WARN(FI_LOG_EP_CTRL, "velo: fi_cancel with a NULL context\n");
        return -FI_EINVAL;
    }
    return vfi_msg_cancel(ep, context);
}

static int ep_getopt(fid_t fid, int level, int optname, void* optval, size_t* optlen) {
    (void)fid, (void)optval, (void)optlen;
    VFI_WARN(FI_LOG_EP_CTRL, "velo: endpoint option %d/%d not supported\n", level, optname);
    return -FI_ENOPROTOOPT;
}

static int ep_setopt(fid_t fid, int level, int optname, const void* optval, size_t optlen) {
    (void)fid, (void)optval, (void)optlen;
    VFI_WARN(FI_LOG_EP_CTRL, "velo: endpoint option %d/%d not supported\n", level, optname);
    return -FI_ENOPROTOOPT;
}

static int ep_no_ctx(struct fid_ep* sep, int index, struct fi_tx_attr* attr, struct fid_ep** ctx, void* context) {
    (void)sep, (void)index, (void)attr, (void)ctx, (void)context;
    VFI_WARN(FI_LOG_EP_CTRL, "velo: no scalable endpoint contexts\n");
    return -FI_ENOSYS;
}
static int ep_no_rx_ctx(struct fid_ep* sep, int index, struct fi_rx_attr* attr, struct fid_ep** ctx, void* context) {
    (void)sep, (void)index, (void)attr, (void)ctx, (void)context;
    VFI_WARN(FI_LOG_EP_CTRL, "velo: no scalable endpoint contexts\n");
    return -FI_ENOSYS;
}
static ssize_t ep_no_size_left(struct fid_ep* ep) {
    (void)ep;
    return -FI_ENOSYS;
}

static struct fi_ops_ep ep_ops = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = ep_cancel,
    .getopt = ep_getopt,
    .setopt = ep_setopt,
    .tx_ctx = ep_no_ctx,
    .rx_ctx = ep_no_rx_ctx,
    .rx_size_left = ep_no_size_left,
    .tx_size_left = ep_no_size_left,
};

/* ---- fi_ops_cm: only the names ---- */

static int ep_getname(fid_t fid, void* addr, size_t* addrlen) {
    struct vfi_ep* ep = (struct vfi_ep*)fid;
    if (!addrlen || (*addrlen && !addr)) {
        VFI_WARN(FI_LOG_EP_CTRL, "velo: fi_getname with a NULL address or length\n");
        return -FI_EINVAL;
    }
    return vfi_addr_format(ep->dom->addr_format, ep->addr, addr, addrlen);
}

static int ep_setname(fid_t fid, void* addr, size_t addrlen) {
    (void)fid, (void)addr, (void)addrlen;
    VFI_WARN(FI_LOG_EP_CTRL, "velo: fi_setname not supported (give the address as src_addr in fi_getinfo)\n");
    return -FI_ENOSYS;
}
static int ep_getpeer(struct fid_ep* ep, void* addr, size_t* addrlen) {
    (void)ep, (void)addr, (void)addrlen;
    VFI_WARN(FI_LOG_EP_CTRL, "velo: fi_getpeer: RDM endpoints have no peer\n");
    return -FI_ENOSYS;
}
static int ep_connect(struct fid_ep* ep, const void* addr, const void* param, size_t paramlen) {
    (void)ep, (void)addr, (void)param, (void)paramlen;
    VFI_WARN(FI_LOG_EP_CTRL, "velo: fi_connect: RDM endpoints are connectionless\n");
    return -FI_ENOSYS;
}
static int ep_listen(struct fid_pep* pep) {
    (void)pep;
    return -FI_ENOSYS;
}
static int ep_accept(struct fid_ep* ep, const void* param, size_t paramlen) {
    (void)ep, (void)param, (void)paramlen;
    VFI_WARN(FI_LOG_EP_CTRL, "velo: fi_accept: RDM endpoints are connectionless\n");
    return -FI_ENOSYS;
}
static int ep_reject(struct fid_pep* pep, fid_t handle, const void* param, size_t paramlen) {
    (void)pep, (void)handle, (void)param, (void)paramlen;
    return -FI_ENOSYS;
}
static int ep_shutdown(struct fid_ep* ep, uint64_t flags) {
    (void)ep, (void)flags;
    VFI_WARN(FI_LOG_EP_CTRL, "velo: fi_shutdown: RDM endpoints are connectionless\n");
    return -FI_ENOSYS;
}
static int ep_join(struct fid_ep* ep, const void* addr, uint64_t flags, struct fid_mc** mc, void* context) {
    (void)ep, (void)addr, (void)flags, (void)mc, (void)context;
    VFI_WARN(FI_LOG_EP_CTRL, "velo: no multicast\n");
    return -FI_ENOSYS;
}

static struct fi_ops_cm ep_cm_ops = {
    .size = sizeof(struct fi_ops_cm),
    .setname = ep_setname,
    .getname = ep_getname,
    .getpeer = ep_getpeer,
    .connect = ep_connect,
    .listen = ep_listen,
    .accept = ep_accept,
    .reject = ep_reject,
    .shutdown = ep_shutdown,
    .join = ep_join,
};

int vfi_endpoint(struct fid_domain* domain, struct fi_info* info, struct fid_ep** fep, void* context) {
    if (!domain || !info || !fep) {
        VFI_WARN(FI_LOG_EP_CTRL, "velo: fi_endpoint with a NULL domain, info or endpoint pointer\n");
        return -FI_EINVAL;
    }
    struct vfi_domain* dom = (struct vfi_domain*)domain;
    if (info->ep_attr && info->ep_attr->type != FI_EP_RDM && info->ep_attr->type != FI_EP_UNSPEC) {
        VFI_WARN(FI_LOG_EP_CTRL, "velo: endpoint type %d not supported (FI_EP_RDM only)\n", (int)info->ep_attr->type);
        return -FI_EINVAL;
    }
    if (info->caps & ~(uint64_t)VFI_CAPS) {
        VFI_WARN(FI_LOG_EP_CTRL, "velo: endpoint capabilities 0x%llx not supported\n",
                 (unsigned long long)(info->caps & ~(uint64_t)VFI_CAPS));
        return -FI_EINVAL;
    }
    if (info->addr_format != dom->addr_format) {
        VFI_WARN(FI_LOG_EP_CTRL, "velo: endpoint address format differs from its domain's\n");
        return -FI_EINVAL;
    }
    velo_open_attr_t oa;
    velo_open_attr_init(&oa);
    if (info->src_addr) {
        velo_addr_t a;
        if (vfi_addr_parse(info->addr_format, info->src_addr, info->src_addrlen, &a)) {
            VFI_WARN(FI_LOG_EP_CTRL, "velo: src_addr is not a velo address\n");
            return -FI_EINVAL;
        }
        oa.vpid = (int)a.vpid; /* the node is where the process runs ($VELO_NODE on the fabric) */
    }
    struct vfi_ep* ep = calloc(1, sizeof(*ep));
    if (!ep) return -FI_ENOMEM;
    int rc = velo_open(&oa, &ep->vep);
    if (rc) {
        VFI_WARN(FI_LOG_EP_CTRL, "velo: velo_open: %s\n", velo_strerror(rc));
        free(ep);
        return vfi_errno(rc);
    }
    velo_info_t vi;
    if (velo_addr(ep->vep, &ep->addr) || velo_info(ep->vep, &vi)) {
        VFI_WARN(FI_LOG_EP_CTRL, "velo: the new libvelo endpoint does not answer velo_addr/velo_info\n");
        velo_close(ep->vep);
        free(ep);
        return -FI_EOTHER;
    }
    ep->send_max = vi.send_max;
    /* eager up to $FI_VELO_RDV_THRESHOLD, at most what one velo_send carries: a train without
     * receive areas, send_max with them ($FI_VELO_RECV_AREA) */
    int area = 0;
    if (fi_param_get_bool(&vfi_prov, "recv_area", &area) == FI_SUCCESS) ep->recv_area = area != 0;
    size_t carry = ep->recv_area ? vi.send_max : vi.train_max;
    size_t eager = carry > VFI_HDR_MAX + VFI_INJECT_MAX ? carry - VFI_HDR_MAX : VFI_INJECT_MAX;
    if (eager > VFI_EAGER_MAX) eager = VFI_EAGER_MAX;
    ep->eager_max = eager;
    size_t thr = 0;
    if (fi_param_get_size_t(&vfi_prov, "rdv_threshold", &thr) == FI_SUCCESS && thr < eager) eager = thr;
    ep->rdv_threshold = eager;
    ep->ep.fid.fclass = FI_CLASS_EP;
    ep->ep.fid.context = context;
    ep->ep.fid.ops = &ep_fi_ops;
    ep->ep.ops = &ep_ops;
    ep->ep.cm = &ep_cm_ops;
    ep->ep.msg = &vfi_msg_ops;
    ep->ep.tagged = &vfi_tagged_ops;
    ep->dom = dom;
    ep->caps = info->caps ? info->caps : (uint64_t)VFI_CAPS;
    if (!(ep->caps & (FI_SEND | FI_RECV))) ep->caps |= FI_SEND | FI_RECV;
    ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags & VFI_TX_OP_FLAGS : 0;
    ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags & FI_COMPLETION : 0;
    pthread_mutex_init(&ep->lock, NULL);
    vfi_match_init(&ep->match_msg);
    vfi_match_init(&ep->match_tag);
    __atomic_fetch_add(&dom->refs, 1, __ATOMIC_ACQ_REL);
    *fep = &ep->ep;
    return 0;
}
