/* SPDX-License-Identifier: MIT */
/*
 * Event queues. FI_EP_RDM endpoints of this provider raise no events (none with errors), so an EQ holds
 * only what the application writes with fi_eq_write (programs such as fi_pingpong open one
 * regardless). FI_WAIT_NONE and FI_WAIT_UNSPEC (fi_eq_sread sleeps on a condition variable).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "velo_fi.h"

#define VFI_EQ_ENTRY_MAX 256 /* bytes of one event */

struct vfi_eqe {
    struct vfi_eqe* next;
    uint32_t event;
    size_t len;
    uint8_t buf[];
};

struct vfi_eq {
    struct fid_eq eq;
    struct vfi_fabric* fab;
    enum fi_wait_obj wait_obj;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct vfi_eqe *head, **tail;
    size_t count, size;
};

static int eq_close(struct fid* fid) {
    struct vfi_eq* eq = (struct vfi_eq*)fid;
    while (eq->head) {
        struct vfi_eqe* e = eq->head;
        eq->head = e->next;
        free(e);
    }
    pthread_mutex_destroy(&eq->lock);
    pthread_cond_destroy(&eq->cond);
    __atomic_fetch_sub(&eq->fab->refs, 1, __ATOMIC_ACQ_REL);
    free(eq);
    return 0;
}

static ssize_t eq_read_locked(struct vfi_eq* eq, uint32_t* event, void* buf, size_t len, uint64_t flags) {
    struct vfi_eqe* e = eq->head;
    if (!e) return -FI_EAGAIN;
    if (len < e->len) {
        VFI_WARN(FI_LOG_EQ, "velo: fi_eq_read buffer of %zu bytes, the event has %zu\n", len, e->len);
        return -FI_ETOOSMALL;
    }
    *event = e->event;
    memcpy(buf, e->buf, e->len);
    ssize_t n = (ssize_t)e->len;
    if (!(flags & FI_PEEK)) {
        eq->head = e->next;
        if (!eq->head) eq->tail = &eq->head;
        eq->count--;
        free(e);
    }
    return n;
}

static ssize_t eq_read(struct fid_eq* feq, uint32_t* event, void* buf, size_t len, uint64_t flags) {
    struct vfi_eq* eq = (struct vfi_eq*)feq;
    if (!event || (len && !buf) || (flags & ~(uint64_t)FI_PEEK)) {
        VFI_WARN(FI_LOG_EQ, "velo: fi_eq_read: NULL event or buffer, or flags other than FI_PEEK\n");
        return -FI_EINVAL;
    }
    pthread_mutex_lock(&eq->lock);
    ssize_t n = eq_read_locked(eq, event, buf, len, flags);
    pthread_mutex_unlock(&eq->lock);
    return n;
}

/* No error events: the provider raises none and fi_eq_write writes ordinary events only. */
static ssize_t eq_readerr(struct fid_eq* feq, struct fi_eq_err_entry* buf, uint64_t flags) {
    (void)feq;
    if (!buf || (flags & ~(uint64_t)FI_PEEK)) {
        VFI_WARN(FI_LOG_EQ, "velo: fi_eq_readerr: NULL buffer or flags other than FI_PEEK\n");
        return -FI_EINVAL;
    }
    return -FI_EAGAIN;
}

static ssize_t eq_write(struct fid_eq* feq, uint32_t event, const void* buf, size_t len, uint64_t flags) {
    struct vfi_eq* eq = (struct vfi_eq*)feq;
    if ((len && !buf) || len > VFI_EQ_ENTRY_MAX || flags) {
        VFI_WARN(FI_LOG_EQ, "velo: fi_eq_write: NULL buffer, more than %d bytes, or flags (none supported)\n",
                 VFI_EQ_ENTRY_MAX);
        return -FI_EINVAL;
    }
    pthread_mutex_lock(&eq->lock);
    if (eq->count >= eq->size) {
        pthread_mutex_unlock(&eq->lock);
        return -FI_EAGAIN;
    }
    struct vfi_eqe* e = malloc(sizeof(*e) + len);
    if (!e) {
        pthread_mutex_unlock(&eq->lock);
        return -FI_ENOMEM;
    }
    e->next = NULL;
    e->event = event;
    e->len = len;
    if (len) memcpy(e->buf, buf, len);
    *eq->tail = e;
    eq->tail = &e->next;
    eq->count++;
    pthread_cond_broadcast(&eq->cond);
    pthread_mutex_unlock(&eq->lock);
    return (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq* feq, uint32_t* event, void* buf, size_t len, int timeout, uint64_t flags) {
    struct vfi_eq* eq = (struct vfi_eq*)feq;
    if (eq->wait_obj == FI_WAIT_NONE) {
        VFI_WARN(FI_LOG_EQ, "velo: fi_eq_sread on an EQ opened with FI_WAIT_NONE\n");
        return -FI_EINVAL;
    }
    if (!event || (len && !buf) || (flags & ~(uint64_t)FI_PEEK) || timeout < -1) {
        VFI_WARN(FI_LOG_EQ, "velo: fi_eq_sread: NULL event or buffer, bad flags or timeout\n");
        return -FI_EINVAL;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    if (timeout > 0) {
        until.tv_sec += timeout / 1000;
        until.tv_nsec += (long)(timeout % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&eq->lock);
    ssize_t n;
    while ((n = eq_read_locked(eq, event, buf, len, flags)) == -FI_EAGAIN) {
        if (timeout == 0) break;
        int rc = timeout < 0 ? pthread_cond_wait(&eq->cond, &eq->lock)
                             : pthread_cond_timedwait(&eq->cond, &eq->lock, &until);
        if (rc) {
            n = -FI_EAGAIN;
            break;
        }
    }
    pthread_mutex_unlock(&eq->lock);
    return n;
}

static const char* eq_strerror(struct fid_eq* feq, int prov_errno, const void* err_data, char* buf, size_t len) {
    (void)feq;
    (void)err_data;
    const char* s = velo_strerror(prov_errno);
    if (buf && len) {
        strncpy(buf, s, len - 1);
        buf[len - 1] = '\0';
        return buf;
    }
    return s;
}

static struct fi_ops eq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = eq_close,
    .bind = vfi_no_bind,
    .control = vfi_no_control,
    .ops_open = vfi_no_ops_open,
};

static struct fi_ops_eq eq_ops = {
    .size = sizeof(struct fi_ops_eq),
    .read = eq_read,
    .readerr = eq_readerr,
    .write = eq_write,
    .sread = eq_sread,
    .strerror = eq_strerror,
};

int vfi_eq_open(struct fid_fabric* fabric, struct fi_eq_attr* attr, struct fid_eq** feq, void* context) {
    if (!fabric || !attr || !feq) {
        VFI_WARN(FI_LOG_EQ, "velo: fi_eq_open with a NULL fabric, attribute or EQ pointer\n");
        return -FI_EINVAL;
    }
    if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC) {
        VFI_WARN(FI_LOG_EQ, "velo: EQ wait object %d not supported (FI_WAIT_NONE, FI_WAIT_UNSPEC)\n",
                 (int)attr->wait_obj);
        return -FI_ENOSYS;
    }
    if (attr->flags & ~(uint64_t)FI_WRITE) {
        VFI_WARN(FI_LOG_EQ, "velo: EQ flags 0x%llx not supported\n", (unsigned long long)attr->flags);
        return -FI_EINVAL;
    }
    struct vfi_eq* eq = calloc(1, sizeof(*eq));
    if (!eq) return -FI_ENOMEM;
    eq->eq.fid.fclass = FI_CLASS_EQ;
    eq->eq.fid.context = context;
    eq->eq.fid.ops = &eq_fi_ops;
    eq->eq.ops = &eq_ops;
    eq->fab = (struct vfi_fabric*)fabric;
    eq->wait_obj = attr->wait_obj;
    eq->size = attr->size ? attr->size : 256;
    eq->tail = &eq->head;
    pthread_mutex_init(&eq->lock, NULL);
    pthread_cond_init(&eq->cond, NULL);
    __atomic_fetch_add(&eq->fab->refs, 1, __ATOMIC_ACQ_REL);
    *feq = &eq->eq;
    return 0;
}
