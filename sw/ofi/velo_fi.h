/* SPDX-License-Identifier: MIT */
/*
 * The libfabric provider `velo` (docs/ofi.md): internal objects shared by its files.
 *   velo_fi_init.c  fi_prov_ini, fi_getinfo, fabric, domain
 *   velo_fi_av.c    address vectors (FI_AV_MAP, FI_AV_TABLE), address strings
 *   velo_fi_cq.c    completion queues
 *   velo_fi_ep.c    endpoints: create, bind, enable, getname, close, progress (the receive path)
 *   velo_fi_msg.c   FI_MSG and FI_TAGGED data transfer calls
 *   velo_fi_match.c the tag matcher (velo_fi_match.h)
 * Everything sits on libvelo's public API (velo/velo.h).
 */
#ifndef VELO_FI_H
#define VELO_FI_H

#include <pthread.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>
#include <stdbool.h>
#include <velo/velo.h>

#include "velo_fi_match.h"
#include "velo_fi_wire.h"

#define VFI_PROV_NAME "velo"
#define VFI_FABRIC_NAME "velo"
#define VFI_DOMAIN_NAME "velo0"
#define VFI_PROV_VERSION FI_VERSION(0, 1)
#define VFI_FI_VERSION FI_VERSION(1, 17)

/* Longest eager message: libvelo's default send_max (1 MiB, the destination's $VELO_SEND_MAX) less
 * the provider's header. Longer ones (and those above $FI_VELO_RDV_THRESHOLD) go by rendezvous, up
 * to VFI_MAX_MSG. */
#define VFI_SEND_MAX_DEFAULT (1u << 20)
#define VFI_EAGER_MAX (VFI_SEND_MAX_DEFAULT - VFI_HDR_MAX)
#define VFI_MAX_MSG (1ull << 30)
/* fi_inject: what fits one VELO store burst with the tagged header and CQ data. */
#define VFI_INJECT_MAX (VELO_MSG_MAX_BYTES - VFI_HDR_MAX)
#define VFI_IOV_MAX 8
#define VFI_CQ_SIZE_DEFAULT 1024
#define VFI_QUEUE_SIZE 1024 /* tx/rx size reported: posted operations the provider takes */
#define VFI_CQ_DATA_SIZE 8

#define VFI_CAPS \
    (FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM)
#define VFI_TX_CAPS (FI_MSG | FI_TAGGED | FI_SEND)
#define VFI_RX_CAPS (FI_MSG | FI_TAGGED | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE)
#define VFI_TX_OP_FLAGS (FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_REMOTE_CQ_DATA)
#define VFI_RX_OP_FLAGS (FI_COMPLETION | FI_PEEK | FI_CLAIM | FI_DISCARD)

extern struct fi_provider vfi_prov;

#define VFI_WARN(subsys, ...) FI_WARN(&vfi_prov, subsys, __VA_ARGS__)

struct vfi_fabric {
    struct fid_fabric fabric;
    int refs; /* domains open (atomic) */
};

struct vfi_domain {
    struct fid_domain domain;
    struct vfi_fabric* fab;
    int refs; /* AVs, CQs, endpoints open (atomic) */
    uint32_t addr_format;
    enum fi_threading threading;
};

struct vfi_av_entry {
    velo_addr_t addr;
    bool valid;
};

struct vfi_av {
    struct fid_av av;
    struct vfi_domain* dom;
    enum fi_av_type type;
    pthread_mutex_t lock;
    struct vfi_av_entry* tab;
    size_t n, cap;
    int refs; /* endpoints bound */
};

/* One completion as the CQ keeps it (tagged format with the source and the error fields). */
struct vfi_cqe {
    struct fi_cq_tagged_entry e;
    fi_addr_t src;
    int err; /* 0: a completion; else a positive FI_E* error for fi_cq_readerr */
    size_t olen;
};

struct vfi_ep;

#define VFI_CQ_MAX_EPS 64
struct vfi_cq {
    struct fid_cq cq;
    struct vfi_domain* dom;
    enum fi_cq_format format;
    enum fi_wait_obj wait_obj;
    pthread_mutex_t lock;
    struct vfi_cqe* ring; /* grows: completions are never dropped */
    size_t head, count, cap;
    /* endpoints bound: progressed by fi_cq_read. eps_lock (read: progress, write: bind and
     * close) keeps an endpoint alive while another thread progresses it through this CQ. */
    pthread_rwlock_t eps_lock;
    struct vfi_ep* eps[VFI_CQ_MAX_EPS];
    int neps;
};

struct vfi_cntr {
    struct fid_cntr cntr;
    struct vfi_domain* dom;
    enum fi_wait_obj wait_obj;
    uint64_t value, err;       /* atomics */
    pthread_rwlock_t eps_lock; /* as the CQ's: endpoints bound, progressed by fi_cntr_read */
    struct vfi_ep* eps[VFI_CQ_MAX_EPS];
    int neps;
};

struct vfi_conn {
    velo_addr_t addr;
    velo_conn_t* conn;
};

/* A posted receive (FI_MSG or FI_TAGGED). */
struct vfi_rx {
    struct vfi_mrecv m; /* first: the matcher's node */
    struct iovec iov[VFI_IOV_MAX];
    size_t iov_count;
    void* context;
    uint64_t flags; /* FI_MSG or FI_TAGGED, FI_COMPLETION */
    uint64_t tag;
};

/* An unexpected message: the header's fields and a copy of its payload (an RTS: its fields). */
struct vfi_ux {
    struct vfi_munexp m; /* first: the matcher's node */
    uint64_t data;
    bool has_data;
    bool rdv;
    struct vfi_wire_rts rts;
    velo_addr_t src_addr;
    size_t len;
    uint8_t payload[];
};

/* A rendezvous send waiting for its FIN. */
struct vfi_tx_rdv {
    struct vfi_tx_rdv* next;
    uint32_t id;
    velo_addr_t dst;
    velo_region_t* region;
    void* context;
    uint64_t flags; /* FI_MSG or FI_TAGGED; FI_COMPLETION: write a completion */
};

/* A rendezvous receive: gets into the receive buffer, then the FIN. */
struct vfi_rx_rdv {
    struct vfi_rx_rdv* next;
    struct vfi_rx* rx; /* owned */
    velo_addr_t src;
    struct vfi_wire_rts rts;
    uint64_t tag, data;
    bool has_data;
    size_t want, issued; /* bytes to get (min of message and buffer), bytes asked for */
    int outstanding;     /* velo_get calls without their completion */
    int err;             /* positive FI_E* of a failed get */
    bool fin_pending;    /* all done, the FIN still to send (no credit) */
};

struct vfi_ep {
    struct fid_ep ep;
    struct vfi_domain* dom;
    pthread_mutex_t lock; /* every call on the endpoint (FI_THREAD_SAFE) */
    velo_ep_t* vep;
    velo_addr_t addr;
    uint32_t send_max; /* velo_info's send_max */
    struct vfi_av* av;
    struct vfi_cq *tx_cq, *rx_cq;
    struct vfi_cntr *send_cntr, *recv_cntr; /* FI_SEND, FI_RECV counters (may be NULL) */
    uint64_t tx_bind_flags, rx_bind_flags;  /* FI_SELECTIVE_COMPLETION */
    uint64_t tx_op_flags, rx_op_flags;
    uint64_t caps;
    bool enabled, closing;
    struct vfi_matcher match_msg, match_tag;
    struct vfi_conn* conns;
    size_t nconns, capconns;
    uint8_t* bounce; /* header + payload of one send longer than a store burst */
    size_t bounce_cap;
    size_t rdv_threshold; /* longer messages go by rendezvous ($FI_VELO_RDV_THRESHOLD) */
    size_t eager_max;     /* what one velo_send carries less the header */
    bool recv_area;       /* connections with libvelo receive areas ($FI_VELO_RECV_AREA) */
    uint32_t next_rdv_id;
    struct vfi_tx_rdv* tx_rdv;
    struct vfi_rx_rdv* rx_rdv;
};

/* velo_fi_init.c */
int vfi_errno(int velo_err); /* a negative errno from libvelo as a negative FI_E* */

/* velo_fi_av.c */
int vfi_av_open(struct fid_domain* domain, struct fi_av_attr* attr, struct fid_av** av, void* context);
/* Destination of fi_addr (0, or -FI_EINVAL when the AV does not have it). */
int vfi_av_resolve(struct vfi_av* av, fi_addr_t fa, velo_addr_t* out);
/* fi_addr of a source (FI_ADDR_NOTAVAIL when the AV does not have it). */
fi_addr_t vfi_av_reverse(struct vfi_av* av, velo_addr_t a);
/* Parse a name (binary velo_addr_t of 8 bytes for FI_FORMAT_UNSPEC, or "fi_velo://node:vpid"). */
int vfi_addr_parse(uint32_t format, const void* name, size_t len, velo_addr_t* out);
/* Format a name in `format` into buf (at most *len bytes); *len = bytes needed. -FI_ETOOSMALL. */
int vfi_addr_format(uint32_t format, velo_addr_t a, void* buf, size_t* len);

/* velo_fi_cq.c */
int vfi_cq_open(struct fid_domain* domain, struct fi_cq_attr* attr, struct fid_cq** cq, void* context);
/* Queue a completion (err 0) or an error entry. -FI_ENOMEM. */
int vfi_cq_push(struct vfi_cq* cq, const struct vfi_cqe* e);
int vfi_cq_attach(struct vfi_cq* cq, struct vfi_ep* ep);
void vfi_cq_detach(struct vfi_cq* cq, struct vfi_ep* ep);

/* velo_fi_cntr.c */
int vfi_cntr_open(struct fid_domain* domain, struct fi_cntr_attr* attr, struct fid_cntr** cntr, void* context);
void vfi_cntr_inc(struct vfi_cntr* c, bool err); /* c may be NULL */
int vfi_cntr_attach(struct vfi_cntr* c, struct vfi_ep* ep);
void vfi_cntr_detach(struct vfi_cntr* c, struct vfi_ep* ep);

/* velo_fi_ep.c */
int vfi_endpoint(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep, void* context);
/* Read every message there is (ep lock held). */
void vfi_ep_progress_locked(struct vfi_ep* ep);
void vfi_ep_progress(struct vfi_ep* ep);
/* The connection to dst, made on first use (ep lock held). */
int vfi_ep_conn(struct vfi_ep* ep, velo_addr_t dst, velo_conn_t** conn);

/* velo_fi_msg.c */
extern struct fi_ops_msg vfi_msg_ops;
extern struct fi_ops_tagged vfi_tagged_ops;
/* An arrived message (ep lock held): match it or queue it as unexpected. */
void vfi_msg_arrived(struct vfi_ep* ep, const velo_msg_t* m);
/* Free the queues of an endpoint at close (no completions). */
void vfi_msg_teardown(struct vfi_ep* ep);
/* Write receive r's completion: done bytes of a len-byte message (FI_ETRUNC when fewer), or an
 * error entry with err (a positive FI_E*). */
void vfi_rx_complete(struct vfi_ep* ep, struct vfi_rx* r, size_t done, size_t len, uint64_t tag, bool has_data,
                     uint64_t data, velo_addr_t src, int err);
size_t vfi_rx_capacity(const struct vfi_rx* r);
static inline bool vfi_wants_completion(uint64_t bind_flags, uint64_t flags) {
    return !(bind_flags & FI_SELECTIVE_COMPLETION) || (flags & FI_COMPLETION);
}

/* velo_fi_rdv.c (all with the ep lock held) */
/* Send len bytes of iov by rendezvous: register, RTS; the completion comes with the FIN. */
ssize_t vfi_rdv_send(struct vfi_ep* ep, velo_conn_t* conn, velo_addr_t dst, const struct iovec* iov, size_t count,
                     size_t len, const struct vfi_wire_hdr* h, void* context, uint64_t flags);
/* A matched RTS: get into r (owned from here on), complete, FIN. */
void vfi_rdv_start(struct vfi_ep* ep, struct vfi_rx* r, velo_addr_t src, const struct vfi_wire_rts* rts, uint64_t tag,
                   bool has_data, uint64_t data);
/* A discarded RTS: FIN without a get. */
void vfi_rdv_discard(struct vfi_ep* ep, velo_addr_t src, const struct vfi_wire_rts* rts);
void vfi_rdv_fin_arrived(struct vfi_ep* ep, velo_addr_t src, uint32_t id, uint32_t status);
/* RMA completions of rendezvous gets, gets and FINs still to issue. */
void vfi_rdv_progress(struct vfi_ep* ep);
void vfi_rdv_teardown(struct vfi_ep* ep);
/* fi_cancel of a posted receive. */
ssize_t vfi_msg_cancel(struct vfi_ep* ep, void* context);

/* Operations every object lacks: they return -FI_ENOSYS. */
int vfi_no_bind(struct fid* fid, struct fid* bfid, uint64_t flags);
int vfi_no_control(struct fid* fid, int command, void* arg);
int vfi_no_ops_open(struct fid* fid, const char* name, uint64_t flags, void** ops, void* context);

#endif /* VELO_FI_H */
