/* SPDX-License-Identifier: MIT */
/*
 * Completion queues: FI_CQ_FORMAT_CONTEXT, MSG, DATA, TAGGED; error entries for fi_cq_readerr;
 * FI_WAIT_NONE, and FI_WAIT_UNSPEC for fi_cq_sread (it sleeps in velo_idle on the bound endpoints).
 * Progress is manual: fi_cq_read/readfrom/sread first read every message of the endpoints bound to
 * the CQ. Completions are never dropped: the queue grows past its size when it must.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "velo_fi.h"

static size_t entry_size(enum fi_cq_format f) {
    switch (f) {
        case FI_CQ_FORMAT_CONTEXT:
            return sizeof(struct fi_cq_entry);
        case FI_CQ_FORMAT_MSG:
            return sizeof(struct fi_cq_msg_entry);
        case FI_CQ_FORMAT_DATA:
            return sizeof(struct fi_cq_data_entry);
        case FI_CQ_FORMAT_TAGGED:
            return sizeof(struct fi_cq_tagged_entry);
        default:
            return 0;
    }
}

int vfi_cq_push(struct vfi_cq* cq, const struct vfi_cqe* e) {
    pthread_mutex_lock(&cq->lock);
    if (cq->count == cq->cap) {
        size_t cap = cq->cap * 2;
        struct vfi_cqe* r = malloc(cap * sizeof(*r));
        if (!r) {
            pthread_mutex_unlock(&cq->lock);
            VFI_WARN(FI_LOG_CQ, "velo: out of memory growing a CQ past %zu entries\n", cq->cap);
            return -FI_ENOMEM;
        }
        for (size_t i = 0; i < cq->count; i++) r[i] = cq->ring[(cq->head + i) % cq->cap];
        free(cq->ring);
        cq->ring = r;
        cq->head = 0;
        cq->cap = cap;
    }
    cq->ring[(cq->head + cq->count) % cq->cap] = *e;
    cq->count++;
    pthread_mutex_unlock(&cq->lock);
    return 0;
}

int vfi_cq_attach(struct vfi_cq* cq, struct vfi_ep* ep) {
    int rc = 0;
    pthread_rwlock_wrlock(&cq->eps_lock);
    bool have = false;
    for (int i = 0; i < cq->neps; i++) have |= cq->eps[i] == ep;
    if (!have) {
        if (cq->neps == VFI_CQ_MAX_EPS) {
            VFI_WARN(FI_LOG_CQ, "velo: a CQ serves at most %d endpoints\n", VFI_CQ_MAX_EPS);
            rc = -FI_ENOSPC;
        } else {
            cq->eps[cq->neps++] = ep;
        }
    }
    pthread_rwlock_unlock(&cq->eps_lock);
    return rc;
}

void vfi_cq_detach(struct vfi_cq* cq, struct vfi_ep* ep) {
    pthread_rwlock_wrlock(&cq->eps_lock); /* waits for progress through this CQ to end */
    for (int i = 0; i < cq->neps; i++)
        if (cq->eps[i] == ep) {
            cq->eps[i] = cq->eps[--cq->neps];
            break;
        }
    pthread_rwlock_unlock(&cq->eps_lock);
}

/* Progress every bound endpoint. The CQ's queue lock is not held while an endpoint lock is
 * taken (progress pushes completions: endpoint lock, then queue lock); the read side of eps_lock
 * keeps the endpoints from being closed meanwhile. */
static void cq_progress(struct vfi_cq* cq) {
    pthread_rwlock_rdlock(&cq->eps_lock);
    for (int i = 0; i < cq->neps; i++) vfi_ep_progress(cq->eps[i]);
    pthread_rwlock_unlock(&cq->eps_lock);
}

static ssize_t cq_take(struct vfi_cq* cq, void* buf, size_t count, fi_addr_t* src) {
    size_t esz = entry_size(cq->format);
    size_t n = 0;
    pthread_mutex_lock(&cq->lock);
    while (n < count && cq->count) {
        struct vfi_cqe* e = &cq->ring[cq->head];
        if (e->err) break;
        memcpy((uint8_t*)buf + n * esz, &e->e, esz);
        if (src) src[n] = e->src;
        cq->head = (cq->head + 1) % cq->cap;
        cq->count--;
        n++;
    }
    bool err = cq->count && cq->ring[cq->head].err;
    pthread_mutex_unlock(&cq->lock);
    if (n) return (ssize_t)n;
    return err ? -FI_EAVAIL : -FI_EAGAIN;
}

static ssize_t cq_readfrom(struct fid_cq* fcq, void* buf, size_t count, fi_addr_t* src_addr) {
    struct vfi_cq* cq = (struct vfi_cq*)fcq;
    if (count && !buf) {
        VFI_WARN(FI_LOG_CQ, "velo: fi_cq_read with a NULL buffer\n");
        return -FI_EINVAL;
    }
    cq_progress(cq);
    return cq_take(cq, buf, count, src_addr);
}

static ssize_t cq_read(struct fid_cq* fcq, void* buf, size_t count) {
    return cq_readfrom(fcq, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq* fcq, struct fi_cq_err_entry* buf, uint64_t flags) {
    struct vfi_cq* cq = (struct vfi_cq*)fcq;
    if (!buf || flags) {
        VFI_WARN(FI_LOG_CQ, "velo: fi_cq_readerr with a NULL buffer or flags (none defined)\n");
        return -FI_EINVAL;
    }
    pthread_mutex_lock(&cq->lock);
    if (!cq->count || !cq->ring[cq->head].err) {
        pthread_mutex_unlock(&cq->lock);
        return -FI_EAGAIN;
    }
    struct vfi_cqe* e = &cq->ring[cq->head];
    buf->op_context = e->e.op_context;
    buf->flags = e->e.flags;
    buf->len = e->e.len;
    buf->buf = e->e.buf;
    buf->data = e->e.data;
    buf->tag = e->e.tag;
    buf->olen = e->olen;
    buf->err = e->err;
    buf->prov_errno = e->err;
    buf->err_data_size = 0;
    cq->head = (cq->head + 1) % cq->cap;
    cq->count--;
    pthread_mutex_unlock(&cq->lock);
    return 1;
}

static ssize_t cq_sreadfrom(struct fid_cq* fcq, void* buf, size_t count, fi_addr_t* src_addr, const void* cond,
                            int timeout) {
    struct vfi_cq* cq = (struct vfi_cq*)fcq;
    if (cq->wait_obj == FI_WAIT_NONE) {
        VFI_WARN(FI_LOG_CQ, "velo: fi_cq_sread on a CQ opened with FI_WAIT_NONE (use fi_cq_read)\n");
        return -FI_EINVAL;
    }
    if ((count && !buf) || timeout < -1) {
        VFI_WARN(FI_LOG_CQ, "velo: fi_cq_sread with a NULL buffer or a timeout below -1\n");
        return -FI_EINVAL;
    }
    (void)cond; /* FI_CQ_COND_NONE only (checked at open): any completion ends the wait */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        ssize_t n = cq_readfrom(fcq, buf, count, src_addr);
        if (n != -FI_EAGAIN) return n;
        int slice = 10;
        if (timeout >= 0) {
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            long ms = (t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L;
            if (ms >= timeout) return -FI_EAGAIN;
            if (timeout - ms < slice) slice = (int)(timeout - ms);
        }
        /* sleep on the first bound endpoint's mailbox for a slice; the others are polled */
        pthread_rwlock_rdlock(&cq->eps_lock);
        int neps = cq->neps;
        if (neps) {
            struct vfi_ep* ep = cq->eps[0];
            pthread_mutex_lock(&ep->lock);
            if (ep->enabled && !ep->closing) velo_idle(ep->vep, neps > 1 ? 0 : slice);
            pthread_mutex_unlock(&ep->lock);
        }
        pthread_rwlock_unlock(&cq->eps_lock);
        if (neps != 1) {
            struct timespec d = {0, 1000000L};
            nanosleep(&d, NULL);
        }
    }
}

static ssize_t cq_sread(struct fid_cq* fcq, void* buf, size_t count, const void* cond, int timeout) {
    return cq_sreadfrom(fcq, buf, count, NULL, cond, timeout);
}

static int cq_signal(struct fid_cq* fcq) {
    (void)fcq;
    VFI_WARN(FI_LOG_CQ, "velo: fi_cq_signal not supported\n");
    return -FI_ENOSYS;
}

static const char* cq_strerror(struct fid_cq* fcq, int prov_errno, const void* err_data, char* buf, size_t len) {
    (void)fcq;
    (void)err_data;
    const char* s = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);
    if (buf && len) {
        strncpy(buf, s, len - 1);
        buf[len - 1] = '\0';
        return buf;
    }
    return s;
}

static int cq_close(struct fid* fid) {
    struct vfi_cq* cq = (struct vfi_cq*)fid;
    pthread_rwlock_rdlock(&cq->eps_lock);
    int neps = cq->neps;
    pthread_rwlock_unlock(&cq->eps_lock);
    if (neps) {
        VFI_WARN(FI_LOG_CQ, "velo: CQ still bound to %d endpoints (close them first)\n", neps);
        return -FI_EBUSY;
    }
    __atomic_fetch_sub(&cq->dom->refs, 1, __ATOMIC_ACQ_REL);
    pthread_rwlock_destroy(&cq->eps_lock);
    pthread_mutex_destroy(&cq->lock);
    free(cq->ring);
    free(cq);
    return 0;
}

static struct fi_ops cq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = cq_close,
    .bind = vfi_no_bind,
    .control = vfi_no_control,
    .ops_open = vfi_no_ops_open,
};

static struct fi_ops_cq cq_ops = {
    .size = sizeof(struct fi_ops_cq),
    .read = cq_read,
    .readfrom = cq_readfrom,
    .readerr = cq_readerr,
    .sread = cq_sread,
    .sreadfrom = cq_sreadfrom,
    .signal = cq_signal,
    .strerror = cq_strerror,
};

int vfi_cq_open(struct fid_domain* domain, struct fi_cq_attr* attr, struct fid_cq** fcq, void* context) {
    if (!domain || !attr || !fcq) {
        VFI_WARN(FI_LOG_CQ, "velo: fi_cq_open with a NULL domain, attribute or CQ pointer\n");
        return -FI_EINVAL;
    }
    enum fi_cq_format format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
    if (!entry_size(format)) {
        VFI_WARN(FI_LOG_CQ, "velo: CQ format %d unknown\n", (int)attr->format);
        return -FI_EINVAL;
    }
    if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC) {
        VFI_WARN(FI_LOG_CQ,
                 "velo: CQ wait object %d not supported (FI_WAIT_NONE, or FI_WAIT_UNSPEC for "
                 "fi_cq_sread; no FI_WAIT_FD yet)\n",
                 (int)attr->wait_obj);
        return -FI_ENOSYS;
    }
    if (attr->wait_cond != FI_CQ_COND_NONE) {
        VFI_WARN(FI_LOG_CQ, "velo: CQ wait condition %d not supported\n", (int)attr->wait_cond);
        return -FI_ENOSYS;
    }
    if (attr->flags & ~(uint64_t)FI_AFFINITY) {
        VFI_WARN(FI_LOG_CQ, "velo: CQ flags 0x%llx not supported\n", (unsigned long long)attr->flags);
        return -FI_EINVAL;
    }
    struct vfi_cq* cq = calloc(1, sizeof(*cq));
    if (!cq) return -FI_ENOMEM;
    cq->cap = attr->size ? attr->size : VFI_CQ_SIZE_DEFAULT;
    cq->ring = calloc(cq->cap, sizeof(*cq->ring));
    if (!cq->ring) {
        free(cq);
        return -FI_ENOMEM;
    }
    cq->cq.fid.fclass = FI_CLASS_CQ;
    cq->cq.fid.context = context;
    cq->cq.fid.ops = &cq_fi_ops;
    cq->cq.ops = &cq_ops;
    cq->dom = (struct vfi_domain*)domain;
    cq->format = format;
    cq->wait_obj = attr->wait_obj;
    pthread_mutex_init(&cq->lock, NULL);
    pthread_rwlock_init(&cq->eps_lock, NULL);
    __atomic_fetch_add(&cq->dom->refs, 1, __ATOMIC_ACQ_REL);
    *fcq = &cq->cq;
    return 0;
}
