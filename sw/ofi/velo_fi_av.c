/* SPDX-License-Identifier: MIT */
/*
 * Address vectors. An address is libvelo's (node, vpid). Names (fi_getname, fi_av_insert):
 * FI_FORMAT_UNSPEC: the 8 bytes of a velo_addr_t (node, vpid as host-order uint32);
 * FI_ADDR_STR: "fi_velo://<node>:<vpid>" with its NUL. fi_av_straddr gives the string form.
 * FI_AV_TABLE: fi_addr is the index (0, 1, ... in insertion order, never reused).
 * FI_AV_MAP: fi_addr encodes the address itself ((node << 32) | vpid).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "velo_fi.h"

#define VFI_ADDR_PREFIX "fi_velo://"

int vfi_addr_parse(uint32_t format, const void* name, size_t len, velo_addr_t* out) {
    if (!name) return -FI_EINVAL;
    if (format == FI_ADDR_STR) {
        const char* s = name;
        size_t n = strnlen(s, len);
        if (n == len || n < strlen(VFI_ADDR_PREFIX) + 3 || strncmp(s, VFI_ADDR_PREFIX, strlen(VFI_ADDR_PREFIX)))
            return -FI_EINVAL;
        unsigned long node, vpid;
        char tail;
        if (sscanf(s + strlen(VFI_ADDR_PREFIX), "%lu:%lu%c", &node, &vpid, &tail) != 2 || node > 0xFFFF ||
            vpid > 0xFFFF)
            return -FI_EINVAL;
        out->node = (uint32_t)node;
        out->vpid = (uint32_t)vpid;
        return 0;
    }
    if (len != sizeof(velo_addr_t)) return -FI_EINVAL;
    memcpy(out, name, sizeof(*out));
    if (out->node > 0xFFFF || out->vpid > 0xFFFF) return -FI_EINVAL;
    return 0;
}

int vfi_addr_format(uint32_t format, velo_addr_t a, void* buf, size_t* len) {
    if (format == FI_ADDR_STR) {
        char s[48];
        int n = snprintf(s, sizeof(s), VFI_ADDR_PREFIX "%" PRIu32 ":%" PRIu32, a.node, a.vpid);
        size_t need = (size_t)n + 1;
        size_t room = *len;
        *len = need;
        if (!buf || room < need) return -FI_ETOOSMALL;
        memcpy(buf, s, need);
        return 0;
    }
    size_t room = *len;
    *len = sizeof(a);
    if (!buf || room < sizeof(a)) return -FI_ETOOSMALL;
    memcpy(buf, &a, sizeof(a));
    return 0;
}

static fi_addr_t map_addr(velo_addr_t a) {
    return ((uint64_t)a.node << 32) | a.vpid;
}

int vfi_av_resolve(struct vfi_av* av, fi_addr_t fa, velo_addr_t* out) {
    int rc = -FI_EINVAL;
    pthread_mutex_lock(&av->lock);
    if (av->type == FI_AV_TABLE) {
        if (fa < av->n && av->tab[fa].valid) {
            *out = av->tab[fa].addr;
            rc = 0;
        }
    } else if (fa != FI_ADDR_NOTAVAIL && fa != FI_ADDR_UNSPEC && (fa >> 48) == 0 && ((fa >> 16) & 0xFFFF) == 0) {
        out->node = (uint32_t)(fa >> 32);
        out->vpid = (uint32_t)fa;
        for (size_t i = 0; i < av->n; i++)
            if (av->tab[i].valid && av->tab[i].addr.node == out->node && av->tab[i].addr.vpid == out->vpid) {
                rc = 0;
                break;
            }
    }
    pthread_mutex_unlock(&av->lock);
    return rc;
}

fi_addr_t vfi_av_reverse(struct vfi_av* av, velo_addr_t a) {
    fi_addr_t r = FI_ADDR_NOTAVAIL;
    if (!av) return r;
    pthread_mutex_lock(&av->lock);
    for (size_t i = 0; i < av->n; i++)
        if (av->tab[i].valid && av->tab[i].addr.node == a.node && av->tab[i].addr.vpid == a.vpid) {
            r = av->type == FI_AV_TABLE ? (fi_addr_t)i : map_addr(a);
            break;
        }
    pthread_mutex_unlock(&av->lock);
    return r;
}

static int av_insert(struct fid_av* fav, const void* addr, size_t count, fi_addr_t* fi_addr, uint64_t flags,
                     void* context) {
    struct vfi_av* av = (struct vfi_av*)fav;
    (void)context;
    if ((count && !addr) || flags) {
        VFI_WARN(FI_LOG_AV, "velo: fi_av_insert: NULL addresses or flags 0x%llx (none supported)\n",
                 (unsigned long long)flags);
        return -FI_EINVAL;
    }
    uint32_t format = av->dom->addr_format;
    const uint8_t* p = addr;
    int done = 0;
    pthread_mutex_lock(&av->lock);
    for (size_t i = 0; i < count; i++) {
        velo_addr_t a;
        size_t len = format == FI_ADDR_STR ? strlen((const char*)p) + 1 : sizeof(velo_addr_t);
        int rc = vfi_addr_parse(format, p, len, &a);
        p += len;
        if (rc) {
            VFI_WARN(FI_LOG_AV, "velo: fi_av_insert: address %zu is not a velo address\n", i);
            if (fi_addr) fi_addr[i] = FI_ADDR_NOTAVAIL;
            continue;
        }
        if (av->n == av->cap) {
            size_t cap = av->cap ? 2 * av->cap : 16;
            struct vfi_av_entry* t = realloc(av->tab, cap * sizeof(*t));
            if (!t) {
                if (fi_addr) fi_addr[i] = FI_ADDR_NOTAVAIL;
                continue;
            }
            av->tab = t;
            av->cap = cap;
        }
        av->tab[av->n] = (struct vfi_av_entry){a, true};
        if (fi_addr) fi_addr[i] = av->type == FI_AV_TABLE ? (fi_addr_t)av->n : map_addr(a);
        av->n++;
        done++;
    }
    pthread_mutex_unlock(&av->lock);
    return done;
}

static int av_insertsvc(struct fid_av* av, const char* node, const char* service, fi_addr_t* fi_addr, uint64_t flags,
                        void* context) {
    (void)av, (void)node, (void)service, (void)fi_addr, (void)flags, (void)context;
    VFI_WARN(FI_LOG_AV, "velo: fi_av_insertsvc not supported (use fi_av_insert with fi_getname's names)\n");
    return -FI_ENOSYS;
}

static int av_insertsym(struct fid_av* av, const char* node, size_t nodecnt, const char* service, size_t svccnt,
                        fi_addr_t* fi_addr, uint64_t flags, void* context) {
    (void)av, (void)node, (void)nodecnt, (void)service, (void)svccnt, (void)fi_addr, (void)flags, (void)context;
    VFI_WARN(FI_LOG_AV, "velo: fi_av_insertsym not supported\n");
    return -FI_ENOSYS;
}

static int av_remove(struct fid_av* fav, fi_addr_t* fi_addr, size_t count, uint64_t flags) {
    struct vfi_av* av = (struct vfi_av*)fav;
    if ((count && !fi_addr) || flags) {
        VFI_WARN(FI_LOG_AV, "velo: fi_av_remove: NULL addresses or flags\n");
        return -FI_EINVAL;
    }
    int rc = 0;
    pthread_mutex_lock(&av->lock);
    for (size_t i = 0; i < count; i++) {
        bool found = false;
        if (av->type == FI_AV_TABLE) {
            if (fi_addr[i] < av->n && av->tab[fi_addr[i]].valid) {
                av->tab[fi_addr[i]].valid = false;
                found = true;
            }
        } else {
            for (size_t j = 0; j < av->n; j++)
                if (av->tab[j].valid && map_addr(av->tab[j].addr) == fi_addr[i]) {
                    av->tab[j].valid = false;
                    found = true;
                }
        }
        if (!found) {
            VFI_WARN(FI_LOG_AV, "velo: fi_av_remove: fi_addr 0x%llx is not in the AV\n",
                     (unsigned long long)fi_addr[i]);
            rc = -FI_EINVAL;
        }
    }
    pthread_mutex_unlock(&av->lock);
    return rc;
}

static int av_lookup(struct fid_av* fav, fi_addr_t fi_addr, void* addr, size_t* addrlen) {
    struct vfi_av* av = (struct vfi_av*)fav;
    if (!addrlen || (*addrlen && !addr)) {
        VFI_WARN(FI_LOG_AV, "velo: fi_av_lookup: NULL address or length\n");
        return -FI_EINVAL;
    }
    velo_addr_t a;
    if (vfi_av_resolve(av, fi_addr, &a)) {
        VFI_WARN(FI_LOG_AV, "velo: fi_av_lookup: fi_addr 0x%llx is not in the AV\n", (unsigned long long)fi_addr);
        return -FI_EINVAL;
    }
    size_t room = *addrlen;
    int rc = vfi_addr_format(av->dom->addr_format, a, room ? addr : NULL, addrlen);
    if (rc == -FI_ETOOSMALL && room) { /* fill what fits, as fi_av_lookup specifies */
        uint8_t full[64];
        size_t n = sizeof(full);
        vfi_addr_format(av->dom->addr_format, a, full, &n);
        memcpy(addr, full, room);
    }
    return rc;
}

static const char* av_straddr(struct fid_av* fav, const void* addr, char* buf, size_t* len) {
    struct vfi_av* av = (struct vfi_av*)fav;
    velo_addr_t a;
    uint32_t format = av->dom->addr_format;
    size_t alen = format == FI_ADDR_STR ? (addr ? strlen(addr) + 1 : 0) : sizeof(velo_addr_t);
    if (!buf || !len || vfi_addr_parse(format, addr, alen, &a)) return NULL;
    char s[48];
    size_t n = sizeof(s);
    vfi_addr_format(FI_ADDR_STR, a, s, &n);
    if (*len) {
        size_t c = n < *len ? n : *len;
        memcpy(buf, s, c);
        buf[c - 1] = '\0';
    }
    *len = n;
    return buf;
}

static int av_set(struct fid_av* av, struct fi_av_set_attr* attr, struct fid_av_set** set, void* context) {
    (void)av, (void)attr, (void)set, (void)context;
    VFI_WARN(FI_LOG_AV, "velo: no AV sets (no collectives)\n");
    return -FI_ENOSYS;
}

static int av_close(struct fid* fid) {
    struct vfi_av* av = (struct vfi_av*)fid;
    if (__atomic_load_n(&av->refs, __ATOMIC_ACQUIRE)) {
        VFI_WARN(FI_LOG_AV, "velo: AV still bound to %d endpoints (close them first)\n", av->refs);
        return -FI_EBUSY;
    }
    __atomic_fetch_sub(&av->dom->refs, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_destroy(&av->lock);
    free(av->tab);
    free(av);
    return 0;
}

static struct fi_ops av_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = av_close,
    .bind = vfi_no_bind,
    .control = vfi_no_control,
    .ops_open = vfi_no_ops_open,
};

static struct fi_ops_av av_ops = {
    .size = sizeof(struct fi_ops_av),
    .insert = av_insert,
    .insertsvc = av_insertsvc,
    .insertsym = av_insertsym,
    .remove = av_remove,
    .lookup = av_lookup,
    .straddr = av_straddr,
    .av_set = av_set,
};

int vfi_av_open(struct fid_domain* domain, struct fi_av_attr* attr, struct fid_av** fav, void* context) {
    if (!domain || !attr || !fav) {
        VFI_WARN(FI_LOG_AV, "velo: fi_av_open with a NULL domain, attribute or AV pointer\n");
        return -FI_EINVAL;
    }
    if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE) {
        VFI_WARN(FI_LOG_AV, "velo: AV type %d unknown\n", (int)attr->type);
        return -FI_EINVAL;
    }
    if (attr->name || attr->rx_ctx_bits || attr->flags) {
        VFI_WARN(FI_LOG_AV,
                 "velo: named/shared AVs, rx_ctx_bits and AV flags (FI_EVENT, FI_READ, FI_SYMMETRIC) "
                 "are not supported\n");
        return -FI_ENOSYS;
    }
    struct vfi_av* av = calloc(1, sizeof(*av));
    if (!av) return -FI_ENOMEM;
    av->av.fid.fclass = FI_CLASS_AV;
    av->av.fid.context = context;
    av->av.fid.ops = &av_fi_ops;
    av->av.ops = &av_ops;
    av->dom = (struct vfi_domain*)domain;
    av->type = attr->type == FI_AV_UNSPEC ? FI_AV_TABLE : attr->type;
    pthread_mutex_init(&av->lock, NULL);
    __atomic_fetch_add(&av->dom->refs, 1, __ATOMIC_ACQ_REL);
    *fav = &av->av;
    return 0;
}
