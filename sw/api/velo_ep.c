// SPDX-License-Identifier: MIT
// libvelo's endpoints: open (the table of backends, VELO_DEVICE), close, addresses, info,
// statistics, and velo_strerror.
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "velo/velo_uapi.h"
#include "velo_ep.h"
#include "velo_proto.h"

// ============================================================================ errors
// ============================================================================ errors
const char* velo_strerror(int err) {
    if (err < 0) err = -err;
    switch (err) {
        case 0:
            return "success";
        case ENODEV:
            return "no VELO device: no /dev/velo0 and no fabric at the default socket; start a simulated "
                   "cluster with `velo-fabric --nodes 2 &` (or run the program under `velo-run -n 2 -- prog`), "
                   "or set VELO_DEVICE=sim:<socket> or hw:/dev/veloN";
        case ECONNREFUSED:
            return "connection refused: no fabric answers at that socket (stale socket file?) or no endpoint "
                   "is open at the destination";
        case EINVAL:
            return "invalid argument (zero length, NULL pointer, address out of range, unknown flags, an RMA "
                   "handle of another endpoint or region index beyond the NIC's, a remote NLA and key that do not "
                   "belong together (the NLA's KEY field must be bits 7:0 of the key: pass velo_region_nla and "
                   "velo_region_rkey of the same registration), an unknown RMA scope or an empty scope box, or an "
                   "unknown VELO_DEVICE: use hw:/dev/veloN or sim:<socket>)";
        case EMSGSIZE:
            return "message too long: velo_send carries up to velo_info's send_max bytes (64 when either side has "
                   "no RMA or the connection is VELO_CONNECT_SMALL)";
        case ENOTCONN:
            return "not connected to that destination (never connected, disconnected, or refused)";
        case ECONNRESET:
            return "the destination endpoint closed";
        case EBADF:
            return "endpoint closed";
        case EAGAIN:
            return "try again: no message (poll), no credit at the destination yet (send: keep receiving on "
                   "your own endpoint meanwhile), no RMA completion, or too many RMA commands outstanding "
                   "(take completions with velo_rma_poll)";
        case ETIMEDOUT:
            return "timed out";
        case ENOSPC:
            return "no room: no free vpid, too many connections, or the destination has no credit for "
                   "another sender";
        case EADDRINUSE:
            return "the requested vpid is in use";
        case EPROTO:
            return "protocol mismatch: fabric, driver or NIC built from another version/spec";
        case EPIPE:
            return "the fabric (or device) went away";
        case EOPNOTSUPP:
            return "not supported: the NIC has no RMA unit (put, get, register; e.g. a fabric started with "
                   "--wide), or velo_clock on hardware";
        case ENOMEM:
            return "out of memory, or an RMA registration would pin more than RLIMIT_MEMLOCK allows (ulimit -l)";
        case ENFILE:
            return "no room in the NIC's RMA region table (2^RMA_REGION_BITS = 256 regions per node, shared by "
                   "its processes): deregister regions, or wait for transfers to end and retry";
        case EMFILE:
            return "this endpoint holds as many RMA regions as the driver allows one endpoint (all 256 of the "
                   "NIC's by default): deregister some";
        case ENOBUFS:
            return "no room in the NIC's RMA page table (2^RMA_PTE_BITS = 4096 pages per node, 16 MiB of 4 KiB "
                   "pages, shared by its processes): deregister regions, or wait for transfers to end and retry";
        case EFBIG:
            return "RMA registration larger than the NIC's whole page table can translate (4096 pages of 4 KiB "
                   "= 16 MiB): register and transfer it in smaller pieces";
        case EPERM:
            return "permission denied (driver policy, or an RMA region of another endpoint)";
        case EACCES:
            return "permission denied (driver policy, the RMA region was not registered with this access, or an "
                   "RMA scope beyond the owner's job, which only root may give)";
        case ERANGE:
            return "out of range: offset + length beyond the registered region (or beyond the NLA's 40-bit "
                   "offset)";
        case EFAULT:
            return "bad address: memory not mapped, read-only for a write access, or its mapping changed";
        case ENOENT:
            return "no such RMA region, wrong key, or not permitted for this initiator (a stale, deregistered or "
                   "guessed handle, or an initiator outside the region's scope: the target does not say which)";
        case E2BIG:
            return "too big: an RMA registration is at most 2^40-1 bytes, or its scope list needs more than the 4 "
                   "boxes the NIC holds per region (VELO_SCOPE_NIC_BOXES) even after merging adjacent ones: give "
                   "fewer, wider boxes (peers with consecutive vpids or nodes share one; or the job, VELO_SCOPE_JOB)";
        case EHOSTUNREACH:
            return "no route to the RMA peer's node";
        case ENETDOWN:
            return "the RMA unit or the NIC is disabled";
        case EINTR:
            return "interrupted by a signal";
        case EADDRNOTAVAIL:
            return "no such node in the fabric";
        default:
            return "unknown error";
    }
}
// ============================================================================ open / close
void velo_open_attr_init(velo_open_attr_t* a) {
    if (!a) return;
    memset(a, 0, sizeof *a);
    a->node = -1;
    a->vpid = -1;
}

static int env_int(const char* name, int dflt, int* out) {
    const char* s = getenv(name);
    if (!s || !*s) {
        *out = dflt;
        return 0;
    }
    char* e;
    long v = strtol(s, &e, 0);
    if (*e || v < INT_MIN || v > INT_MAX) return -EINVAL;
    *out = (int)v;
    return 0;
}

// Messages > 64 B: the crossover and the receive area's slot size (docs/api.md).
static int env_long_messages(uint32_t* crossover, uint32_t* slot_log2) {
    int x, smax;
    if (env_int("VELO_SEND_CROSSOVER", VELO_CROSSOVER_DEFAULT, &x) || x < 0) return -EINVAL;
    if (env_int("VELO_SEND_MAX", 1 << VELO_SLOT_LOG2_DEFAULT, &smax) || smax < 0 ||
        (smax && (smax < 1 << VELO_SLOT_LOG2_MIN || smax > 1 << VELO_SLOT_LOG2_MAX)))
        return -EINVAL;
    *crossover = (uint32_t)x;
    *slot_log2 = 0;
    if (smax)
        while ((1u << *slot_log2) < (unsigned)smax) ++*slot_log2;
    return 0;
}

static int ep_init(struct velo_ep* ep, const velo_open_attr_t* a) {
    if (env_long_messages(&ep->crossover, &ep->slot_log2)) return -EINVAL;
    ep->counts = calloc(1u << 16, sizeof(uint32_t));
    if (!ep->counts) return -ENOMEM;
    pthread_mutex_init(&ep->lock, NULL);
    pthread_mutex_init(&ep->ctl_lock, NULL);
    pthread_mutex_init(&ep->rma_lock, NULL);
    velo_rc_init(&ep->rc, 4096);
    velo_rc_init(&ep->ctl_rc, 1024);
    ep->connect_timeout_ms = a && a->connect_timeout_ms > 0 ? a->connect_timeout_ms : 10000;
    return 0;
}

// After the backend set up the rings: credit pool and thresholds.
static void ep_finish(struct velo_ep* ep) {
    const uint32_t lines = ep->data.lines;
    uint32_t batch_max = lines / 16 > 32 ? 32 : lines / 16;
    uint32_t resv = (lines / 8 > VELO_CONNECT_RESERVE ? VELO_CONNECT_RESERVE : lines / 8) +
                    (lines / 8 > VELO_FRAG_RESERVE ? VELO_FRAG_RESERVE : lines / 8);
    ep->pool_free = lines - batch_max - 2 - resv;
    ep->window_max = ep->pool_free < VELO_CREDIT_WINDOW_MAX ? ep->pool_free : VELO_CREDIT_WINDOW_MAX;
    ep->max_conns = (ep->ctl.lines - ep->ctl.lines / 4) / VELO_CTL_PER_CONN;
    ep->slow_mask = VH_FRAG | VH_LINES2 | VH_RSVD | (1ull << VELO_MBOX_HDR_TAIL_SHIFT) |
                    (1ull << (VELO_MBOX_HDR_SRC_VPID_SHIFT + ep->b.vpid_bits - 1));
    velo__recompute_batch(ep);
    velo__set_phase(ep);
}

// The backends velo_open knows, in the order it tries them without VELO_DEVICE.
static const struct velo_backend* const velo_backends[] = {&velo__backend_hw, &velo__backend_sim};

// VELO_DEVICE (or attr->device): "<name>" or "<name>:<arg>"; unset: the first backend whose
// default device is there.
static int pick_backend(const char* dev, const struct velo_backend** be, const char** arg) {
    const size_t n = sizeof velo_backends / sizeof velo_backends[0];
    *arg = NULL;
    if (!dev || !*dev) {
        for (size_t i = 0; i < n; ++i)
            if (velo_backends[i]->probe && velo_backends[i]->probe()) {
                *be = velo_backends[i];
                return 0;
            }
        return -ENODEV;
    }
    const char* colon = strchr(dev, ':');
    const size_t len = colon ? (size_t)(colon - dev) : strlen(dev);
    if (colon && !colon[1]) return -EINVAL;
    for (size_t i = 0; i < n; ++i)
        if (strlen(velo_backends[i]->name) == len && strncmp(dev, velo_backends[i]->name, len) == 0) {
            *be = velo_backends[i];
            *arg = colon ? colon + 1 : NULL;
            return 0;
        }
    return -EINVAL;
}

static void ep_free(struct velo_ep* ep) {
    free(ep->counts);
    velo_rc_free(&ep->rc);
    velo_rc_free(&ep->ctl_rc);
    pthread_mutex_destroy(&ep->lock);
    pthread_mutex_destroy(&ep->ctl_lock);
    pthread_mutex_destroy(&ep->rma_lock);
    free(ep);
}

static void ring_from(struct velo_ring* r, const struct velo_be_ring* d, unsigned index) {
    velo__ring_init(r, d->base, d->log2);
    r->rp_reg = d->rp_reg;
    r->index = index;
}

int velo__ep_open(const struct velo_backend* be, const char* arg, const velo_open_attr_t* a, velo_ep_t** out) {
    struct velo_ep* ep = calloc(1, sizeof *ep);
    if (!ep) return -ENOMEM;
    int r = ep_init(ep, a);
    if (r != 0) {
        free(ep);
        return r;
    }
    ep->be = be;
    ep->b.be = be;
    ep->b.node_bits = VELO_DEFAULT_NODE_BITS;
    ep->b.vpid_bits = VELO_DEFAULT_VPID_BITS;
    r = be->open(&ep->b, arg, a);
    if (r < 0) {
        ep_free(ep);
        return r;
    }
    ring_from(&ep->data, &ep->b.data, VELO_BE_DATA);
    ring_from(&ep->ctl, &ep->b.ctl, VELO_BE_CTL);
    velo__ep_set_data_ring(ep);
    ep_finish(ep);
    *out = ep;
    return 0;
}

int velo_open(const velo_open_attr_t* attr, velo_ep_t** out) {
    if (!out) return -EINVAL;
    *out = NULL;
    velo_open_attr_t a;
    if (attr)
        a = *attr;
    else
        velo_open_attr_init(&a);
    if (a.flags) return -EINVAL;
    if (a.node < -1 || a.vpid < -1) return -EINVAL;
    if (a.node == -1 && env_int("VELO_NODE", -1, &a.node)) return -EINVAL;
    if (a.vpid == -1 && env_int("VELO_VPID", -1, &a.vpid)) return -EINVAL;
    if (a.ring_log2 == 0) {
        int v;
        if (env_int("VELO_RING_LOG2", VELO_RING_LOG2_DEFAULT, &v)) return -EINVAL;
        a.ring_log2 = (unsigned)v;
    }
    if (a.ring_log2 < VELO_RING_LOG2_MIN || a.ring_log2 > VELO_MBOX_LOG2_MAX) return -EINVAL;
    const struct velo_backend* be;
    const char* arg;
    int r = pick_backend(a.device ? a.device : getenv("VELO_DEVICE"), &be, &arg);
    if (r < 0) {
        uint32_t x, s;  // (the environment's errors come first, as they always did)
        return env_long_messages(&x, &s) ? -EINVAL : r;
    }
    return velo__ep_open(be, arg, &a, out);
}

// closed endpoints (reachable, so leak checkers do not count them)
static struct velo_ep* graveyard;
static pthread_mutex_t graveyard_lock = PTHREAD_MUTEX_INITIALIZER;

int velo_close(velo_ep_t* ep) {
    if (!ep) return -EINVAL;
    if (ep->closed) return -EBADF;
    pthread_mutex_lock(&ep->lock);
    if (!ep->b.dead) {
        velo__say_goodbye(ep);  // tell the destinations we leave, and the senders that we are gone
    }
    pthread_mutex_lock(&ep->ctl_lock);
    for (struct velo_conn* c = ep->conns; c; c = c->all_next) {
        velo__conn_end(c, CONN_CLOSED);
        c->ctl_win = NULL;  // (win stays: a racing sender's store lands in a page that is unmapped or never used)
    }
    ep->closed = 1;
    velo__rma_close(ep);    // the driver deregisters the regions at close
    ep->be->close(&ep->b);  // the driver/fabric quiesces the vpids before it frees the rings
    ep->b.dev = NULL;
    pthread_mutex_unlock(&ep->ctl_lock);
    velo__peers_free(ep);
    free(ep->counts);
    ep->counts = NULL;
    velo_rc_free(&ep->rc);
    velo_rc_free(&ep->ctl_rc);
    for (unsigned i = 0; i < ep->q_len; ++i) {
        const velo_msg_t* qm = &ep->q[(ep->q_head + i) % ep->q_cap];
        if (!qm->len) free((void*)qm->ptr);
    }
    free(ep->q);
    ep->q = NULL;
    ep->q_len = ep->q_cap = 0;
    free(ep->held_copy);
    ep->held_copy = NULL;
    ep->held = NULL;
    // every later velo_poll lands in the slow path, which answers -EBADF
    velo__divert(ep, DIVERT_CLOSED);
    ep->data.base = ep->data.end = NULL;
    ep->cur = NULL;
    pthread_mutex_unlock(&ep->lock);
    // the endpoint and its connections stay allocated (tombstones) so stale handles get -EBADF
    pthread_mutex_lock(&graveyard_lock);
    ep->grave_next = graveyard;
    graveyard = ep;
    pthread_mutex_unlock(&graveyard_lock);
    return 0;
}

int velo_addr(const velo_ep_t* ep, velo_addr_t* addr) {
    if (!ep || !addr) return -EINVAL;
    if (ep->closed) return -EBADF;
    addr->node = ep->b.node;
    addr->vpid = ep->b.vpid;
    return 0;
}

int velo_info(const velo_ep_t* ep, velo_info_t* info) {
    if (!ep || !info) return -EINVAL;
    if (ep->closed) return -EBADF;
    memset(info, 0, sizeof *info);
    snprintf(info->backend, sizeof info->backend, "%s", ep->be->name);
    info->node_bits = ep->b.node_bits;
    info->vpid_bits = ep->b.vpid_bits;
    info->nodes = ep->b.nodes;
    info->msg_max = VELO_MSG_MAX;
    info->ring_lines = ep->data.lines;
    info->credit_lines = ep->window_max;
    info->send_max = ep->slot_log2 ? 1u << ep->slot_log2 : 0;
    info->crossover = ep->crossover;
    const uint32_t tmax = VELO_TRAIN_FIRST + (ep->window_max / 2 - 1) * VELO_TRAIN_NEXT;
    info->train_max = tmax < VELO_TRAIN_MAX ? tmax : VELO_TRAIN_MAX;
    if (info->send_max < info->train_max) info->send_max = info->train_max;
    return 0;
}

int velo_stats(const velo_ep_t* ep, velo_stats_t* s) {
    if (!ep || !s) return -EINVAL;
    *s = ep->st;
    s->send_eagain = atomic_load(&((struct velo_ep*)ep)->send_eagain);
    return 0;
}

int velo_clock(const velo_ep_t* ep, uint64_t* now, uint64_t* last_rx) {
    if (!ep) return -EINVAL;
    if (ep->closed) return -EBADF;
    return ep->be->clock ? ep->be->clock(&ep->b, now, last_rx) : -EOPNOTSUPP;
}
