/* SPDX-License-Identifier: MIT */
/* The provider `velo`: fi_prov_ini, fi_getinfo, fabric and domain objects (docs/ofi.md). */
#include <stdlib.h>
#include <string.h>

#include "velo_fi.h"

int vfi_errno(int e) {
    switch (e) {
        case 0:
            return 0;
        case -EAGAIN:
            return -FI_EAGAIN;
        case -EINVAL:
            return -FI_EINVAL;
        case -EMSGSIZE:
            return -FI_EMSGSIZE;
        case -ENOTCONN:
            return -FI_ENOTCONN;
        case -ECONNRESET:
            return -FI_ECONNRESET;
        case -ECONNREFUSED:
            return -FI_ECONNREFUSED;
        case -ETIMEDOUT:
            return -FI_ETIMEDOUT;
        case -ENOSPC:
            return -FI_ENOSPC;
        case -ENOMEM:
            return -FI_ENOMEM;
        case -ENODEV:
            return -FI_ENODEV;
        case -EADDRINUSE:
            return -FI_EADDRINUSE;
        case -EADDRNOTAVAIL:
            return -FI_EADDRNOTAVAIL;
        case -EACCES:
            return -FI_EACCES;
        case -EPERM:
            return -FI_EPERM;
        case -EBADF:
            return -FI_EBADF;
        case -EFAULT:
            return -FI_EFAULT;
        case -EINTR:
            return -FI_EINTR;
        case -EIO:
            return -FI_EIO;
        default:
            return -FI_EOTHER;
    }
}

int vfi_no_bind(struct fid* fid, struct fid* bfid, uint64_t flags) {
    (void)fid;
    (void)bfid;
    (void)flags;
    VFI_WARN(FI_LOG_CORE, "velo: this object takes no bindings\n");
    return -FI_ENOSYS;
}

int vfi_no_control(struct fid* fid, int command, void* arg) {
    (void)fid;
    (void)arg;
    VFI_WARN(FI_LOG_CORE, "velo: control command %d is not supported on this object\n", command);
    return -FI_ENOSYS;
}

int vfi_no_ops_open(struct fid* fid, const char* name, uint64_t flags, void** ops, void* context) {
    (void)fid;
    (void)flags;
    (void)ops;
    (void)context;
    VFI_WARN(FI_LOG_CORE, "velo: no provider-specific interface %s\n", name ? name : "(null)");
    return -FI_ENOSYS;
}

/* ---- fi_getinfo ---- */

static bool str_is(const char* s, const char* want) {
    return !s || !strcmp(s, want);
}

/* Checks the hints against what the provider offers; 0 or -FI_ENODATA (with the reason at INFO:
 * a provider that does not fit is not an error). */
static int check_hints(const struct fi_info* h) {
#define NODATA(...)                                   \
    do {                                              \
        FI_INFO(&vfi_prov, FI_LOG_CORE, __VA_ARGS__); \
        return -FI_ENODATA;                           \
    } while (0)
    if (h->caps & ~(uint64_t)VFI_CAPS)
        NODATA("velo: capabilities 0x%llx not supported (stage 1: FI_MSG, FI_TAGGED, FI_DIRECTED_RECV, FI_SOURCE)\n",
               (unsigned long long)(h->caps & ~(uint64_t)VFI_CAPS));
    if (h->addr_format != FI_FORMAT_UNSPEC && h->addr_format != FI_ADDR_STR)
        NODATA("velo: address format %u not supported (FI_FORMAT_UNSPEC or FI_ADDR_STR)\n", h->addr_format);
    if (h->ep_attr) {
        if (h->ep_attr->type != FI_EP_UNSPEC && h->ep_attr->type != FI_EP_RDM)
            NODATA("velo: only FI_EP_RDM endpoints\n");
        if (h->ep_attr->max_msg_size > VFI_MAX_MSG)
            NODATA("velo: max_msg_size %zu above %llu\n", h->ep_attr->max_msg_size, (unsigned long long)VFI_MAX_MSG);
        if (h->ep_attr->tx_ctx_cnt > 1 || h->ep_attr->rx_ctx_cnt > 1)
            NODATA("velo: one transmit and one receive context per endpoint\n");
    }
    if (h->domain_attr) {
        const struct fi_domain_attr* d = h->domain_attr;
        if (!str_is(d->name, VFI_DOMAIN_NAME)) NODATA("velo: no domain %s (only %s)\n", d->name, VFI_DOMAIN_NAME);
        if (d->control_progress == FI_PROGRESS_AUTO || d->data_progress == FI_PROGRESS_AUTO)
            NODATA("velo: FI_PROGRESS_AUTO not supported (manual progress only)\n");
        if (d->cq_data_size > VFI_CQ_DATA_SIZE) NODATA("velo: cq_data_size %zu above 8\n", d->cq_data_size);
        if (d->av_type != FI_AV_UNSPEC && d->av_type != FI_AV_MAP && d->av_type != FI_AV_TABLE)
            NODATA("velo: av_type %d unknown\n", (int)d->av_type);
        if (d->caps & ~(uint64_t)(FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SOURCE | FI_DIRECTED_RECV))
            NODATA("velo: domain capabilities 0x%llx not supported\n", (unsigned long long)d->caps);
    }
    if (h->fabric_attr && !str_is(h->fabric_attr->name, VFI_FABRIC_NAME))
        NODATA("velo: no fabric %s (only %s)\n", h->fabric_attr->name, VFI_FABRIC_NAME);
    if (h->tx_attr) {
        if (h->tx_attr->inject_size > VFI_INJECT_MAX)
            NODATA("velo: inject_size %zu above %u\n", h->tx_attr->inject_size, (unsigned)VFI_INJECT_MAX);
        if (h->tx_attr->iov_limit > VFI_IOV_MAX)
            NODATA("velo: tx iov_limit %zu above %d\n", h->tx_attr->iov_limit, VFI_IOV_MAX);
        if (h->tx_attr->op_flags & ~(uint64_t)VFI_TX_OP_FLAGS)
            NODATA("velo: transmit op_flags 0x%llx not supported\n", (unsigned long long)h->tx_attr->op_flags);
    }
    if (h->rx_attr) {
        if (h->rx_attr->iov_limit > VFI_IOV_MAX)
            NODATA("velo: rx iov_limit %zu above %d\n", h->rx_attr->iov_limit, VFI_IOV_MAX);
        if (h->rx_attr->op_flags & ~(uint64_t)(FI_COMPLETION))
            NODATA("velo: receive op_flags 0x%llx not supported\n", (unsigned long long)h->rx_attr->op_flags);
    }
    return 0;
#undef NODATA
}

static int parse_node(const char* node, uint32_t format, velo_addr_t* a) {
    if (format != FI_ADDR_STR && format != FI_FORMAT_UNSPEC) return -FI_ENODATA;
    return vfi_addr_parse(FI_ADDR_STR, node, strlen(node) + 1, a);
}

static int set_addr(void** dst, size_t* dlen, uint32_t format, velo_addr_t a) {
    size_t len = 0;
    vfi_addr_format(format, a, NULL, &len);
    *dst = calloc(1, len);
    if (!*dst) return -FI_ENOMEM;
    *dlen = len;
    return vfi_addr_format(format, a, *dst, &len);
}

static int vfi_getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
                       const struct fi_info* hints, struct fi_info** info) {
    if (!info) {
        VFI_WARN(FI_LOG_CORE, "velo: fi_getinfo without an info pointer\n");
        return -FI_EINVAL;
    }
    *info = NULL;
    if (FI_MAJOR(version) != 1) {
        FI_INFO(&vfi_prov, FI_LOG_CORE, "velo: API version %u.%u not supported\n", FI_MAJOR(version),
                FI_MINOR(version));
        return -FI_ENODATA;
    }
    if (hints) {
        int rc = check_hints(hints);
        if (rc) return rc;
    }
    uint32_t format = hints && hints->addr_format == FI_ADDR_STR ? FI_ADDR_STR : FI_FORMAT_UNSPEC;
    velo_addr_t node_addr = {0, 0};
    if (service) {
        FI_INFO(&vfi_prov, FI_LOG_CORE, "velo: no services (the address is node:vpid)\n");
        return -FI_ENODATA;
    }
    if (node && parse_node(node, format, &node_addr)) {
        FI_INFO(&vfi_prov, FI_LOG_CORE, "velo: node \"%s\" is not a velo address (fi_velo://<node>:<vpid>)\n", node);
        return -FI_ENODATA;
    }

    struct fi_info* fi = fi_allocinfo();
    if (!fi) return -FI_ENOMEM;
    uint64_t caps = hints && hints->caps ? hints->caps : (uint64_t)VFI_CAPS;
    caps |= FI_LOCAL_COMM | FI_REMOTE_COMM;
    if (!(caps & (FI_SEND | FI_RECV))) caps |= FI_SEND | FI_RECV;
    if (!(caps & (FI_MSG | FI_TAGGED))) caps |= FI_MSG | FI_TAGGED;
    fi->caps = caps;
    fi->mode = 0;
    fi->addr_format = format;

    fi->tx_attr->caps = caps & (VFI_TX_CAPS | FI_LOCAL_COMM | FI_REMOTE_COMM);
    fi->tx_attr->mode = 0;
    fi->tx_attr->op_flags = hints && hints->tx_attr ? hints->tx_attr->op_flags : 0;
    fi->tx_attr->msg_order = FI_ORDER_SAS;
    fi->tx_attr->comp_order = FI_ORDER_NONE;
    fi->tx_attr->inject_size = VFI_INJECT_MAX;
    fi->tx_attr->size = VFI_QUEUE_SIZE;
    fi->tx_attr->iov_limit = VFI_IOV_MAX;
    fi->tx_attr->rma_iov_limit = 0;

    fi->rx_attr->caps = caps & (VFI_RX_CAPS | FI_LOCAL_COMM | FI_REMOTE_COMM);
    fi->rx_attr->mode = 0;
    fi->rx_attr->op_flags = hints && hints->rx_attr ? hints->rx_attr->op_flags : 0;
    fi->rx_attr->msg_order = FI_ORDER_SAS;
    fi->rx_attr->comp_order = FI_ORDER_NONE;
    fi->rx_attr->total_buffered_recv = 0;
    fi->rx_attr->size = VFI_QUEUE_SIZE;
    fi->rx_attr->iov_limit = VFI_IOV_MAX;

    fi->ep_attr->type = FI_EP_RDM;
    fi->ep_attr->protocol = FI_PROTO_UNSPEC;
    fi->ep_attr->protocol_version = 1;
    fi->ep_attr->max_msg_size = VFI_MAX_MSG;
    fi->ep_attr->msg_prefix_size = 0;
    fi->ep_attr->mem_tag_format = UINT64_MAX; /* all 64 tag bits are matched */
    fi->ep_attr->tx_ctx_cnt = 1;
    fi->ep_attr->rx_ctx_cnt = 1;

    struct fi_domain_attr* d = fi->domain_attr;
    d->name = strdup(VFI_DOMAIN_NAME);
    d->threading = hints && hints->domain_attr && hints->domain_attr->threading != FI_THREAD_UNSPEC
                       ? hints->domain_attr->threading
                       : FI_THREAD_SAFE;
    d->control_progress = FI_PROGRESS_MANUAL;
    d->data_progress = FI_PROGRESS_MANUAL;
    d->resource_mgmt = FI_RM_ENABLED;
    d->av_type = hints && hints->domain_attr ? hints->domain_attr->av_type : FI_AV_UNSPEC;
    d->mr_mode = 0;
    d->mr_key_size = 0;
    d->cq_data_size = VFI_CQ_DATA_SIZE;
    d->cq_cnt = 1024;
    d->ep_cnt = 128; /* data vpids of a node (docs/api.md "Concepts") */
    d->tx_ctx_cnt = 1;
    d->rx_ctx_cnt = 1;
    d->max_ep_tx_ctx = 1;
    d->max_ep_rx_ctx = 1;
    d->max_ep_stx_ctx = 0;
    d->max_ep_srx_ctx = 0;
    d->cntr_cnt = 1024;
    d->mr_iov_limit = 0;
    d->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
    d->mode = 0;
    d->max_err_data = 0;
    d->mr_cnt = 0;

    fi->fabric_attr->name = strdup(VFI_FABRIC_NAME);
    fi->fabric_attr->prov_version = VFI_PROV_VERSION;
    fi->fabric_attr->api_version = VFI_FI_VERSION;
    if (!d->name || !fi->fabric_attr->name) goto nomem;
    if (node) {
        int rc = (flags & FI_SOURCE) ? set_addr(&fi->src_addr, &fi->src_addrlen, format, node_addr)
                                     : set_addr(&fi->dest_addr, &fi->dest_addrlen, format, node_addr);
        if (rc) goto nomem;
    } else if (hints && hints->dest_addr) {
        velo_addr_t a;
        if (vfi_addr_parse(format, hints->dest_addr, hints->dest_addrlen, &a) ||
            set_addr(&fi->dest_addr, &fi->dest_addrlen, format, a)) {
            fi_freeinfo(fi);
            FI_INFO(&vfi_prov, FI_LOG_CORE, "velo: hints' dest_addr is not a velo address\n");
            return -FI_ENODATA;
        }
    }
    if (hints && hints->src_addr) {
        velo_addr_t a;
        if (vfi_addr_parse(format, hints->src_addr, hints->src_addrlen, &a) ||
            set_addr(&fi->src_addr, &fi->src_addrlen, format, a)) {
            fi_freeinfo(fi);
            FI_INFO(&vfi_prov, FI_LOG_CORE, "velo: hints' src_addr is not a velo address\n");
            return -FI_ENODATA;
        }
    }
    *info = fi;
    return 0;
nomem:
    fi_freeinfo(fi);
    return -FI_ENOMEM;
}

/* ---- domain ---- */

static int domain_close(struct fid* fid) {
    struct vfi_domain* dom = (struct vfi_domain*)fid;
    if (__atomic_load_n(&dom->refs, __ATOMIC_ACQUIRE)) {
        VFI_WARN(FI_LOG_DOMAIN, "velo: domain still has %d open objects (close endpoints, CQs, AVs first)\n",
                 dom->refs);
        return -FI_EBUSY;
    }
    __atomic_fetch_sub(&dom->fab->refs, 1, __ATOMIC_ACQ_REL);
    free(dom);
    return 0;
}

static struct fi_ops domain_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = domain_close,
    .bind = vfi_no_bind,
    .control = vfi_no_control,
    .ops_open = vfi_no_ops_open,
};

static int no_scalable_ep(struct fid_domain* d, struct fi_info* i, struct fid_ep** e, void* c) {
    (void)d, (void)i, (void)e, (void)c;
    VFI_WARN(FI_LOG_DOMAIN, "velo: no scalable endpoints\n");
    return -FI_ENOSYS;
}
static int no_poll(struct fid_domain* d, struct fi_poll_attr* a, struct fid_poll** p) {
    (void)d, (void)a, (void)p;
    VFI_WARN(FI_LOG_DOMAIN, "velo: no poll sets\n");
    return -FI_ENOSYS;
}
static int no_stx(struct fid_domain* d, struct fi_tx_attr* a, struct fid_stx** s, void* c) {
    (void)d, (void)a, (void)s, (void)c;
    VFI_WARN(FI_LOG_DOMAIN, "velo: no shared transmit contexts\n");
    return -FI_ENOSYS;
}
static int no_srx(struct fid_domain* d, struct fi_rx_attr* a, struct fid_ep** e, void* c) {
    (void)d, (void)a, (void)e, (void)c;
    VFI_WARN(FI_LOG_DOMAIN, "velo: no shared receive contexts\n");
    return -FI_ENOSYS;
}
static int no_query_atomic(struct fid_domain* d, enum fi_datatype t, enum fi_op o, struct fi_atomic_attr* a,
                           uint64_t f) {
    (void)d, (void)t, (void)o, (void)a, (void)f;
    return -FI_EOPNOTSUPP;
}
static int no_query_coll(struct fid_domain* d, enum fi_collective_op c, struct fi_collective_attr* a, uint64_t f) {
    (void)d, (void)c, (void)a, (void)f;
    return -FI_EOPNOTSUPP;
}
static int endpoint2(struct fid_domain* d, struct fi_info* i, struct fid_ep** e, uint64_t flags, void* c) {
    if (flags) {
        VFI_WARN(FI_LOG_DOMAIN, "velo: fi_endpoint2 flags 0x%llx not supported\n", (unsigned long long)flags);
        return -FI_EINVAL;
    }
    return vfi_endpoint(d, i, e, c);
}

static struct fi_ops_domain domain_ops = {
    .size = sizeof(struct fi_ops_domain),
    .av_open = vfi_av_open,
    .cq_open = vfi_cq_open,
    .endpoint = vfi_endpoint,
    .scalable_ep = no_scalable_ep,
    .cntr_open = vfi_cntr_open,
    .poll_open = no_poll,
    .stx_ctx = no_stx,
    .srx_ctx = no_srx,
    .query_atomic = no_query_atomic,
    .query_collective = no_query_coll,
    .endpoint2 = endpoint2,
};

static int no_mr_reg(struct fid* f, const void* b, size_t l, uint64_t a, uint64_t o, uint64_t k, uint64_t fl,
                     struct fid_mr** mr, void* c) {
    (void)f, (void)b, (void)l, (void)a, (void)o, (void)k, (void)fl, (void)mr, (void)c;
    VFI_WARN(FI_LOG_MR,
             "velo: no memory registration yet (mr_mode 0: FI_MSG/FI_TAGGED need none; FI_RMA is not "
             "implemented)\n");
    return -FI_ENOSYS;
}
static int no_mr_regv(struct fid* f, const struct iovec* i, size_t n, uint64_t a, uint64_t o, uint64_t k, uint64_t fl,
                      struct fid_mr** mr, void* c) {
    (void)i, (void)n;
    return no_mr_reg(f, NULL, 0, a, o, k, fl, mr, c);
}
static int no_mr_regattr(struct fid* f, const struct fi_mr_attr* a, uint64_t fl, struct fid_mr** mr) {
    (void)a;
    return no_mr_reg(f, NULL, 0, 0, 0, 0, fl, mr, NULL);
}
static struct fi_ops_mr domain_mr_ops = {
    .size = sizeof(struct fi_ops_mr),
    .reg = no_mr_reg,
    .regv = no_mr_regv,
    .regattr = no_mr_regattr,
};

static int vfi_domain_open(struct fid_fabric* fabric, struct fi_info* info, struct fid_domain** domain, void* context) {
    if (!fabric || !info || !domain) {
        VFI_WARN(FI_LOG_DOMAIN, "velo: fi_domain with a NULL fabric, info or domain pointer\n");
        return -FI_EINVAL;
    }
    if (info->domain_attr && !str_is(info->domain_attr->name, VFI_DOMAIN_NAME)) {
        VFI_WARN(FI_LOG_DOMAIN, "velo: no domain %s (only %s)\n", info->domain_attr->name, VFI_DOMAIN_NAME);
        return -FI_EINVAL;
    }
    if (info->domain_attr && (info->domain_attr->data_progress == FI_PROGRESS_AUTO ||
                              info->domain_attr->control_progress == FI_PROGRESS_AUTO)) {
        VFI_WARN(FI_LOG_DOMAIN, "velo: FI_PROGRESS_AUTO not supported\n");
        return -FI_EINVAL;
    }
    if (info->addr_format != FI_FORMAT_UNSPEC && info->addr_format != FI_ADDR_STR) {
        VFI_WARN(FI_LOG_DOMAIN, "velo: address format %u not supported\n", info->addr_format);
        return -FI_EINVAL;
    }
    struct vfi_domain* dom = calloc(1, sizeof(*dom));
    if (!dom) return -FI_ENOMEM;
    dom->domain.fid.fclass = FI_CLASS_DOMAIN;
    dom->domain.fid.context = context;
    dom->domain.fid.ops = &domain_fi_ops;
    dom->domain.ops = &domain_ops;
    dom->domain.mr = &domain_mr_ops;
    dom->fab = (struct vfi_fabric*)fabric;
    dom->addr_format = info->addr_format;
    dom->threading = info->domain_attr ? info->domain_attr->threading : FI_THREAD_SAFE;
    __atomic_fetch_add(&dom->fab->refs, 1, __ATOMIC_ACQ_REL);
    *domain = &dom->domain;
    return 0;
}

/* ---- fabric ---- */

static int fabric_close(struct fid* fid) {
    struct vfi_fabric* fab = (struct vfi_fabric*)fid;
    if (__atomic_load_n(&fab->refs, __ATOMIC_ACQUIRE)) {
        VFI_WARN(FI_LOG_FABRIC, "velo: fabric still has %d open domains/EQs\n", fab->refs);
        return -FI_EBUSY;
    }
    free(fab);
    return 0;
}

static struct fi_ops fabric_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = fabric_close,
    .bind = vfi_no_bind,
    .control = vfi_no_control,
    .ops_open = vfi_no_ops_open,
};

static int no_pep(struct fid_fabric* f, struct fi_info* i, struct fid_pep** p, void* c) {
    (void)f, (void)i, (void)p, (void)c;
    VFI_WARN(FI_LOG_FABRIC, "velo: no passive endpoints (FI_EP_RDM only)\n");
    return -FI_ENOSYS;
}
static int no_wait_open(struct fid_fabric* f, struct fi_wait_attr* a, struct fid_wait** w) {
    (void)f, (void)a, (void)w;
    VFI_WARN(FI_LOG_FABRIC, "velo: no wait sets\n");
    return -FI_ENOSYS;
}
static int no_trywait(struct fid_fabric* f, struct fid** fids, int count) {
    (void)f, (void)fids, (void)count;
    VFI_WARN(FI_LOG_FABRIC, "velo: fi_trywait not supported (no wait objects)\n");
    return -FI_ENOSYS;
}
static int domain2(struct fid_fabric* f, struct fi_info* i, struct fid_domain** d, uint64_t flags, void* c) {
    if (flags) {
        VFI_WARN(FI_LOG_FABRIC, "velo: fi_domain2 flags 0x%llx not supported\n", (unsigned long long)flags);
        return -FI_EINVAL;
    }
    return vfi_domain_open(f, i, d, c);
}

int vfi_eq_open(struct fid_fabric* fabric, struct fi_eq_attr* attr, struct fid_eq** eq, void* context);

static struct fi_ops_fabric fabric_ops = {
    .size = sizeof(struct fi_ops_fabric),
    .domain = vfi_domain_open,
    .passive_ep = no_pep,
    .eq_open = vfi_eq_open,
    .wait_open = no_wait_open,
    .trywait = no_trywait,
    .domain2 = domain2,
};

static int vfi_fabric_open(struct fi_fabric_attr* attr, struct fid_fabric** fabric, void* context) {
    if (!attr || !fabric) {
        VFI_WARN(FI_LOG_FABRIC, "velo: fi_fabric with a NULL attribute or fabric pointer\n");
        return -FI_EINVAL;
    }
    if (!str_is(attr->name, VFI_FABRIC_NAME)) {
        VFI_WARN(FI_LOG_FABRIC, "velo: no fabric %s (only %s)\n", attr->name, VFI_FABRIC_NAME);
        return -FI_EINVAL;
    }
    struct vfi_fabric* fab = calloc(1, sizeof(*fab));
    if (!fab) return -FI_ENOMEM;
    fab->fabric.fid.fclass = FI_CLASS_FABRIC;
    fab->fabric.fid.context = context;
    fab->fabric.fid.ops = &fabric_fi_ops;
    fab->fabric.ops = &fabric_ops;
    fab->fabric.api_version = VFI_FI_VERSION;
    *fabric = &fab->fabric;
    return 0;
}

static void vfi_cleanup(void) {}

struct fi_provider vfi_prov = {
    .version = VFI_PROV_VERSION,
    .fi_version = VFI_FI_VERSION,
    .name = VFI_PROV_NAME,
    .getinfo = vfi_getinfo,
    .fabric = vfi_fabric_open,
    .cleanup = vfi_cleanup,
};

FI_EXT_INI {
    fi_param_define(&vfi_prov, "rdv_threshold", FI_PARAM_SIZE_T,
                    "Messages longer than this go by rendezvous (RMA get into the receive buffer); shorter ones "
                    "eagerly in one velo_send (default and maximum: what one velo_send carries less the 17-byte "
                    "header: a VELO train, about 1.7 KiB, or with FI_VELO_RECV_AREA libvelo's send_max, 1 MiB)");
    fi_param_define(&vfi_prov, "recv_area", FI_PARAM_BOOL,
                    "Connect with libvelo receive areas (the destination pins 2 x send_max for every sender): eager "
                    "messages up to send_max. Default no: eager up to a train, rendezvous above");
    return &vfi_prov;
}
