/* SPDX-License-Identifier: MIT */
/*
 * mca_btl_velo: an Open MPI 4.1 BTL (byte transfer layer) on libvelo. See docs/mpi.md.
 *
 * One module per process, over one libvelo endpoint. Send path (MCA_BTL_FLAGS_SEND): small
 * fragments are one VELO message, larger ones a train of messages (btl_velo_wire.h). RDMA path
 * (MCA_BTL_FLAGS_PUT | MCA_BTL_FLAGS_GET, when the device has an RMA unit): btl_put/btl_get on
 * libvelo's RMA (btl_velo_rdma.c). docs/mpi.md.
 *
 * Files, as Open MPI's own BTLs: btl_velo_component.c (MCA parameters, init), btl_velo_module.c
 * (endpoints, descriptors, failures, finalize), btl_velo_frag.c/.h (send descriptors),
 * btl_velo_send.c (send path), btl_velo_progress.c (progress, receive), btl_velo_rdma.c (put/get),
 * btl_velo_wire.c/.h (wire format, no Open MPI).
 */
#ifndef BTL_VELO_H
#define BTL_VELO_H

/* Open MPI's headers (system headers for the warning flags: -isystem) */
#include "opal_config.h"

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_list.h"
#include "opal/mca/btl/btl.h"
#include "opal/threads/mutex.h"
#include "opal/util/proc.h"

#include <stdint.h>
#include <time.h>

#include "btl_velo_wire.h"
#include "velo/velo.h"

BEGIN_C_DECLS

#define MCA_BTL_VELO_MODEX_MAGIC 0x56454c4fu /* 'VELO' */
#define MCA_BTL_VELO_MODEX_VERSION 1u

/* What a rank publishes in the modex: where its endpoint is. */
typedef struct mca_btl_velo_modex {
    uint32_t magic;
    uint16_t version;
    uint8_t node_bits;
    uint8_t vpid_bits;
    uint32_t node;
    uint32_t vpid;
    char backend[8]; /* "hw" or "sim": two ranks reach each other only on the same kind */
} mca_btl_velo_modex_t;

enum mca_btl_velo_ep_state {
    MCA_BTL_VELO_EP_NEW = 0,    /* no velo_connect yet */
    MCA_BTL_VELO_EP_CONNECTING, /* velo_connect (NOWAIT) done, no message has gone out yet */
    MCA_BTL_VELO_EP_OPEN,       /* a message went out */
    MCA_BTL_VELO_EP_FAILED      /* the peer cannot be reached: sends return OPAL_ERR_UNREACH */
};

/* One peer process (what add_procs returns). */
struct mca_btl_base_endpoint_t {
    opal_proc_t* proc;
    velo_addr_t addr;
    velo_conn_t* conn;
    opal_mutex_t lock;   /* the send side: queue, sequence numbers, the train in flight */
    opal_list_t pending; /* fragments not (completely) stored yet, in order */
    uint8_t tx_seq;      /* wire sequence number of the next message */
    volatile int state;
    int64_t connect_ns;                               /* when velo_connect was called (connect timeout) */
    int fail_code;                                    /* negative errno of the failure */
    int releasing;                                    /* del_procs/finalize: a failure now is not reported to the PML */
    uint64_t st_msgs, st_frags, st_trains, st_queued; /* counters (under lock) */
};
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;

/* A send descriptor (btl_velo_frag.h). */
typedef struct mca_btl_velo_frag mca_btl_velo_frag_t;

/* Receive state of one source (node, vpid): sources need not be added procs. */
typedef struct mca_btl_velo_rx_node {
    vw_rx_t* vpid[256];
} mca_btl_velo_rx_node_t;

typedef struct mca_btl_velo_module {
    mca_btl_base_module_t super;
    velo_ep_t* ep;
    velo_addr_t addr;
    velo_info_t info;
    mca_btl_base_module_error_cb_fn_t error_cb;

    opal_mutex_t lock; /* endpoints array; taken before an endpoint's lock, never after */
    mca_btl_base_endpoint_t** eps;
    size_t neps, cap_eps;
    volatile int32_t npending; /* endpoints with a non-empty queue */

    opal_mutex_t done_lock; /* descriptors stored by btl_send, callbacks due in progress */
    opal_list_t done;
    volatile int32_t ndone;

    volatile int32_t rx_busy; /* one receiver at a time (libvelo) and no nested receive */
    mca_btl_velo_rx_node_t* rx[256];
    vw_rx_t* rx_last; /* one-entry cache */
    uint32_t rx_last_key;
    unsigned idle;

    opal_free_list_t frags_eager; /* cap = eager limit */
    opal_free_list_t frags_max;   /* cap = max send size */

    /* RDMA path (btl_velo_rdma.c) */
    int rdma_ok;                       /* put/get available (MCA_BTL_FLAGS_RDMA set) */
    opal_mutex_t rdma_lock;            /* rdma_ops */
    opal_list_t rdma_ops;              /* puts and gets in flight */
    opal_list_t rdma_deferred;         /* and waiting for room in the NIC for their local registration */
    volatile int32_t rdma_outstanding; /* both */
    volatile int32_t rdma_ndeferred;   /* the deferred ones */
    volatile int32_t rdma_freed;       /* a registration of ours went since the last retry */
    int64_t rdma_retry_ns;             /* last retry of the deferred ones */
    uint8_t* bounce;                   /* registered at start: deferred transfers move through it */
    velo_region_t* bounce_rg;          /* (NULL: none) */
    void* bounce_op;                   /* the transfer using it (btl_velo_rdma.c), or NULL */
    int bounce_stalled;                /* its next piece found no command slot */
    volatile int32_t rdma_retrying;    /* a thread works on the deferred queue and the bounce buffer */
    struct {
        uint64_t pages, regions; /* (atomic) */
    } rdma_held[3];              /* registrations held, by kind (btl_velo_rdma.c BV_REG_*) */
    struct {
        uint64_t registrations, puts, gets, eagain, errors;                     /* (atomic) */
        uint64_t budget, no_room, reg_errors, deferred_regs, deferred, bounced; /* registrations under pressure */
    } rdma_st;

    volatile int finalizing; /* failures are not reported to the PML any more */
    struct {
        uint64_t msgs_rx, frags_rx, rx_errors, idle_waits; /* (under rx_busy) */
        uint64_t msgs_tx, frags_tx, trains_tx, queued;     /* of released endpoints (under lock) */
    } st;
} mca_btl_velo_module_t;

typedef struct mca_btl_velo_component {
    mca_btl_base_component_3_0_0_t super;
    mca_btl_velo_module_t* module; /* the one module, NULL when not initialised */
    /* MCA parameters (docs/mpi.md) */
    char* device;
    int node;
    int nodes;
    int vpid;
    unsigned ring_log2;
    int train_bytes;
    int compress;
    int idle_wait_ms;
    int idle_polls;
    int poll_batch;
    int connect_timeout_ms;
    int free_list_num;
    int free_list_max;
    int free_list_inc;
    int rdma;
    int verbose;
    int warn_no_device;
    int output; /* opal_output stream */
} mca_btl_velo_component_t;

OPAL_DECLSPEC extern mca_btl_velo_component_t mca_btl_velo_component;
extern mca_btl_velo_module_t mca_btl_velo_module;

/* component.c: a message of help-mpi-btl-velo.txt on this process's stderr */
void mca_btl_velo_help(const char* topic, ...);

/* module.c: endpoints, descriptors, failures, finalize */
int mca_btl_velo_module_open(mca_btl_velo_module_t* m);
void mca_btl_velo_fail_endpoint(mca_btl_velo_module_t* m, mca_btl_base_endpoint_t* ep, int err, const char* what);

/* send.c: the send path */
int mca_btl_velo_send(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep,
                      struct mca_btl_base_descriptor_t* des, mca_btl_base_tag_t tag);
int mca_btl_velo_sendi(struct mca_btl_base_module_t* btl, struct mca_btl_base_endpoint_t* ep,
                       struct opal_convertor_t* convertor, void* header, size_t header_size, size_t payload_size,
                       uint8_t order, uint32_t flags, mca_btl_base_tag_t tag, mca_btl_base_descriptor_t** descriptor);
/* Store the messages of a queued fragment: 0 (out), -EAGAIN (no credit) or the peer's failure.
 * Under ep->lock. */
int mca_btl_velo_push(mca_btl_velo_module_t* m, mca_btl_base_endpoint_t* ep, mca_btl_velo_frag_t* f);

/* progress.c */
int mca_btl_velo_progress(void);
int mca_btl_velo_progress_done(mca_btl_velo_module_t* m); /* the completion callbacks due */

/* CLOCK_MONOTONIC in nanoseconds (connect timeout, drain deadline) */
static inline int64_t mca_btl_velo_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* rdma.c: the RDMA path */
size_t mca_btl_velo_rdma_handle_size(void);
int mca_btl_velo_rdma_open(mca_btl_velo_module_t* m);     /* 0: put/get available */
void mca_btl_velo_rdma_install(mca_btl_velo_module_t* m); /* functions, before the common parameters */
void mca_btl_velo_rdma_set(mca_btl_velo_module_t* m);     /* functions and flags after rdma_open */
int mca_btl_velo_rdma_progress(mca_btl_velo_module_t* m);
int mca_btl_velo_rdma_deferred(const mca_btl_velo_module_t* m); /* operations wait for room in the NIC */
void mca_btl_velo_rdma_close(mca_btl_velo_module_t* m);

END_C_DECLS

#endif /* BTL_VELO_H */
