/* SPDX-License-Identifier: MIT */
/*
 * Counters (FI_CNTR_EVENTS_COMP): bound to an endpoint with FI_SEND and/or FI_RECV, they count the
 * operations that completed (every one, whatever FI_COMPLETION and FI_SELECTIVE_COMPLETION say;
 * injects too) and, in the error count, those that failed. fi_cntr_read progresses the bound
 * endpoints (manual progress); fi_cntr_wait (FI_WAIT_UNSPEC) sleeps in velo_idle between tries.
 */
#include <stdlib.h>
#include <time.h>

#include "velo_fi.h"

void vfi_cntr_inc(struct vfi_cntr* c, bool err) {
    if (!c) return;
    if (err)
        __atomic_fetch_add(&c->err, 1, __ATOMIC_RELEASE);
    else
        __atomic_fetch_add(&c->value, 1, __ATOMIC_RELEASE);
}

int vfi_cntr_attach(struct vfi_cntr* c, struct vfi_ep* ep) {
    int rc = 0;
    pthread_rwlock_wrlock(&c->eps_lock);
    bool have = false;
    for (int i = 0; i < c->neps; i++) have |= c->eps[i] == ep;
    if (!have) {
        if (c->neps == VFI_CQ_MAX_EPS) {
            VFI_WARN(FI_LOG_CNTR, "velo: a counter serves at most %d endpoints\n", VFI_CQ_MAX_EPS);
            rc = -FI_ENOSPC;
        } else {
            c->eps[c->neps++] = ep;
        }
    }
    pthread_rwlock_unlock(&c->eps_lock);
    return rc;
}

void vfi_cntr_detach(struct vfi_cntr* c, struct vfi_ep* ep) {
    pthread_rwlock_wrlock(&c->eps_lock);
    for (int i = 0; i < c->neps; i++)
        if (c->eps[i] == ep) {
            c->eps[i] = c->eps[--c->neps];
            break;
        }
    pthread_rwlock_unlock(&c->eps_lock);
}

static void cntr_progress(struct vfi_cntr* c) {
    pthread_rwlock_rdlock(&c->eps_lock);
    for (int i = 0; i < c->neps; i++) vfi_ep_progress(c->eps[i]);
    pthread_rwlock_unlock(&c->eps_lock);
}

static uint64_t cntr_read(struct fid_cntr* fc) {
    struct vfi_cntr* c = (struct vfi_cntr*)fc;
    cntr_progress(c);
    return __atomic_load_n(&c->value, __ATOMIC_ACQUIRE);
}

static uint64_t cntr_readerr(struct fid_cntr* fc) {
    struct vfi_cntr* c = (struct vfi_cntr*)fc;
    cntr_progress(c);
    return __atomic_load_n(&c->err, __ATOMIC_ACQUIRE);
}

static int cntr_add(struct fid_cntr* fc, uint64_t v) {
    __atomic_fetch_add(&((struct vfi_cntr*)fc)->value, v, __ATOMIC_ACQ_REL);
    return 0;
}
static int cntr_set(struct fid_cntr* fc, uint64_t v) {
    __atomic_store_n(&((struct vfi_cntr*)fc)->value, v, __ATOMIC_RELEASE);
    return 0;
}
static int cntr_adderr(struct fid_cntr* fc, uint64_t v) {
    __atomic_fetch_add(&((struct vfi_cntr*)fc)->err, v, __ATOMIC_ACQ_REL);
    return 0;
}
static int cntr_seterr(struct fid_cntr* fc, uint64_t v) {
    __atomic_store_n(&((struct vfi_cntr*)fc)->err, v, __ATOMIC_RELEASE);
    return 0;
}

static int cntr_wait(struct fid_cntr* fc, uint64_t threshold, int timeout) {
    struct vfi_cntr* c = (struct vfi_cntr*)fc;
    if (c->wait_obj == FI_WAIT_NONE) {
        VFI_WARN(FI_LOG_CNTR, "velo: fi_cntr_wait on a counter opened with FI_WAIT_NONE\n");
        return -FI_EINVAL;
    }
    if (timeout < -1) {
        VFI_WARN(FI_LOG_CNTR, "velo: fi_cntr_wait with a timeout below -1\n");
        return -FI_EINVAL;
    }
    const uint64_t err0 = __atomic_load_n(&c->err, __ATOMIC_ACQUIRE);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (cntr_read(fc) >= threshold) return 0;
        if (__atomic_load_n(&c->err, __ATOMIC_ACQUIRE) != err0) return -FI_EAVAIL; /* an operation failed */
        int slice = 10;
        if (timeout >= 0) {
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            long ms = (t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L;
            if (ms >= timeout) return -FI_ETIMEDOUT;
            if (timeout - ms < slice) slice = (int)(timeout - ms);
        }
        pthread_rwlock_rdlock(&c->eps_lock);
        int neps = c->neps;
        if (neps) {
            struct vfi_ep* ep = c->eps[0];
            pthread_mutex_lock(&ep->lock);
            if (ep->enabled && !ep->closing) velo_idle(ep->vep, neps > 1 ? 0 : slice);
            pthread_mutex_unlock(&ep->lock);
        }
        pthread_rwlock_unlock(&c->eps_lock);
        if (neps != 1) {
            struct timespec d = {0, 1000000L};
            nanosleep(&d, NULL);
        }
    }
}

static int cntr_close(struct fid* fid) {
    struct vfi_cntr* c = (struct vfi_cntr*)fid;
    pthread_rwlock_rdlock(&c->eps_lock);
    int neps = c->neps;
    pthread_rwlock_unlock(&c->eps_lock);
    if (neps) {
        VFI_WARN(FI_LOG_CNTR, "velo: counter still bound to %d endpoints (close them first)\n", neps);
        return -FI_EBUSY;
    }
    __atomic_fetch_sub(&c->dom->refs, 1, __ATOMIC_ACQ_REL);
    pthread_rwlock_destroy(&c->eps_lock);
    free(c);
    return 0;
}

static struct fi_ops cntr_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = cntr_close,
    .bind = vfi_no_bind,
    .control = vfi_no_control,
    .ops_open = vfi_no_ops_open,
};

static struct fi_ops_cntr cntr_ops = {
    .size = sizeof(struct fi_ops_cntr),
    .read = cntr_read,
    .readerr = cntr_readerr,
    .add = cntr_add,
    .set = cntr_set,
    .wait = cntr_wait,
    .adderr = cntr_adderr,
    .seterr = cntr_seterr,
};

int vfi_cntr_open(struct fid_domain* domain, struct fi_cntr_attr* attr, struct fid_cntr** fc, void* context) {
    if (!domain || !attr || !fc) {
        VFI_WARN(FI_LOG_CNTR, "velo: fi_cntr_open with a NULL domain, attribute or counter pointer\n");
        return -FI_EINVAL;
    }
    if (attr->events != FI_CNTR_EVENTS_COMP) {
        VFI_WARN(FI_LOG_CNTR, "velo: counter events %d not supported (FI_CNTR_EVENTS_COMP)\n", (int)attr->events);
        return -FI_ENOSYS;
    }
    if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC) {
        VFI_WARN(FI_LOG_CNTR, "velo: counter wait object %d not supported (FI_WAIT_NONE, FI_WAIT_UNSPEC)\n",
                 (int)attr->wait_obj);
        return -FI_ENOSYS;
    }
    if (attr->flags) {
        VFI_WARN(FI_LOG_CNTR, "velo: counter flags 0x%llx not supported\n", (unsigned long long)attr->flags);
        return -FI_EINVAL;
    }
    struct vfi_cntr* c = calloc(1, sizeof(*c));
    if (!c) return -FI_ENOMEM;
    c->cntr.fid.fclass = FI_CLASS_CNTR;
    c->cntr.fid.context = context;
    c->cntr.fid.ops = &cntr_fi_ops;
    c->cntr.ops = &cntr_ops;
    c->dom = (struct vfi_domain*)domain;
    c->wait_obj = attr->wait_obj;
    pthread_rwlock_init(&c->eps_lock, NULL);
    __atomic_fetch_add(&c->dom->refs, 1, __ATOMIC_ACQ_REL);
    *fc = &c->cntr;
    return 0;
}
