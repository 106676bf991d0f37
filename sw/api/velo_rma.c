// SPDX-License-Identifier: MIT
// libvelo RMA transfers (docs/rma.md, docs/api.md "RMA"; registrations and their bounded LRU cache
// are in velo_rma_reg.c): put/get as 32-byte commands in the vpid's BAR4 page, completions from the
// notification queue, re-pin and re-issue of commands that failed with NOT_VALID (decoupled
// pinning) and of torn command writes.
//
// Command accounting. Every command ends with exactly one final entry the library can see: a
// put always asks for REMOTE_CPL (RCPL), a get always for GET_DONE (LCPL); ERROR ends either.
// A slot is busy from the command's store to its final entry, so a slot names one command
// (docs/rma.md §1). At most min(RMA_SLOTS, queue entries / 2) commands are outstanding (§4: a
// command writes at most two initiator entries, so the library's own entries never fill the
// queue); beyond that velo_put/velo_get return -EAGAIN. A call longer than one command is split
// into pieces of piece_max bytes: the pieces that fit are issued at once, the rest from
// velo_rma_poll as slots free up (meanwhile new calls get -EAGAIN, so commands keep call
// order). The completions the caller asked for are reported once per call, after all pieces.
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "velo/velo_uapi.h"
#include "velo_rma_state.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VELO_RMA_SSE 1
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libvelo RMA encodes commands as little-endian words"
#endif

_Static_assert(VELO_ACCESS_LOCAL_READ == VELO_REG_LOCAL_READ && VELO_ACCESS_LOCAL_WRITE == VELO_REG_LOCAL_WRITE &&
                   VELO_ACCESS_REMOTE_READ == VELO_REG_REMOTE_READ &&
                   VELO_ACCESS_REMOTE_WRITE == VELO_REG_REMOTE_WRITE && VELO_ACCESS_ALL == VELO_REG_ACCESS_ALL,
               "access flags follow the driver's");
_Static_assert(VELO_RMA_KIND_LOCAL == VELO_RMA_NQ_KIND_LOCAL_CPL &&
                   VELO_RMA_KIND_REMOTE == VELO_RMA_NQ_KIND_REMOTE_CPL &&
                   VELO_RMA_KIND_GET_DONE == VELO_RMA_NQ_KIND_GET_DONE &&
                   VELO_RMA_KIND_ERROR == VELO_RMA_NQ_KIND_ERROR && VELO_RMA_KIND_TARGET == VELO_RMA_NQ_KIND_TARGET,
               "completion kinds are the spec's");
_Static_assert(VELO_RMA_R_BAD_CMD == VELO_RMA_ERR_BAD_CMD && VELO_RMA_R_TORN == VELO_RMA_ERR_TORN &&
                   VELO_RMA_R_BAD_HANDLE == VELO_RMA_ERR_BAD_HANDLE && VELO_RMA_R_NOT_OWNER == VELO_RMA_ERR_NOT_OWNER &&
                   VELO_RMA_R_PERM == VELO_RMA_ERR_PERM && VELO_RMA_R_RANGE == VELO_RMA_ERR_RANGE &&
                   VELO_RMA_R_NOT_VALID == VELO_RMA_ERR_NOT_VALID && VELO_RMA_R_NO_ROUTE == VELO_RMA_ERR_NO_ROUTE &&
                   VELO_RMA_R_NQ_DISABLED == VELO_RMA_ERR_NQ_DISABLED && VELO_RMA_R_DISABLED == VELO_RMA_ERR_DISABLED &&
                   VELO_RMA_R_BUSY == VELO_RMA_ERR_BUSY,
               "error reasons are the spec's");
_Static_assert(VELO_RMA_SLOTS* VELO_RMA_CMD_BYTES == 4096, "one 4 KiB command page per vpid");

// ============================================================================ commands
// One command into its slot: two 16-byte stores to the same 32-byte aligned half line, then a
// store fence, so the write-combining buffer drains it as one burst (docs/rma.md §1).
static void store_cmd(uint8_t* dst, const uint64_t w[4]) {
#if VELO_RMA_SSE
    const __m128i a = _mm_set_epi64x((long long)w[1], (long long)w[0]);
    const __m128i b = _mm_set_epi64x((long long)w[3], (long long)w[2]);
    _mm_store_si128((__m128i*)dst, a);
    _mm_store_si128((__m128i*)(dst + 16), b);
    _mm_sfence();
#else
    volatile uint64_t* q = (volatile uint64_t*)dst;
    q[0] = w[0];
    q[1] = w[1];
    q[2] = w[2];
    q[3] = w[3];
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

static void issue_slot(struct velo_rma* s, unsigned k) {
    if (VELO_LIKELY(s->m.cmd_page != NULL))
        store_cmd(s->m.cmd_page + (size_t)k * VELO_RMA_CMD_BYTES, s->slot[k].w);
    else  // sim: one store of 32 bytes through the backend (one write-combined burst)
        s->ep->be->rma_cmd(&s->ep->b, k * VELO_RMA_CMD_BYTES, s->slot[k].w);
}

// Issue the pieces of op `i` that fit. A notified put split into several commands sends its
// last (notified) piece only after every other piece ended, so the TARGET entry follows all
// the data even when a piece was issued again. After an error nothing more is issued.
static void issue_more(struct velo_rma* s, int i) {
    struct rma_op* o = &s->ops[i];
    if (o->reason) o->total = o->nissued;
    while (o->nissued < o->total && s->outstanding < s->limit) {
        const int last = o->nissued + 1 == o->total;
        const int notify = last && (o->flags & VELO_RMA_F_NOTIFY);
        if (notify && o->total > 1 && o->final_seen + 1 < o->total) break;
        const uint64_t left = o->len - o->issued;
        const uint64_t n = left < s->piece_max ? left : s->piece_max;
        unsigned k = s->next_slot;
        while (s->slot[k].busy) k = (k + 1) % VELO_RMA_SLOTS;
        s->next_slot = (k + 1) % VELO_RMA_SLOTS;
        struct rma_slot* sl = &s->slot[k];
        const int put = o->op == VELO_RMA_OP_PUT;
        sl->w[0] = VELO_FIELD_PREP(VELO_RMA_CMD0_OP, o->op) |
                   VELO_FIELD_PREP(VELO_RMA_CMD0_LCPL, put ? (o->flags & VELO_RMA_F_LOCAL) != 0 : 1) |
                   VELO_FIELD_PREP(VELO_RMA_CMD0_RCPL, put) | VELO_FIELD_PREP(VELO_RMA_CMD0_NOTIFY, notify) |
                   VELO_FIELD_PREP(VELO_RMA_CMD0_REM_NODE, o->node) | VELO_FIELD_PREP(VELO_RMA_CMD0_LEN, n) |
                   VELO_FIELD_PREP(VELO_RMA_CMD0_RKEY_HI, o->remote_key >> 8);
        sl->w[1] = o->local_nla + (o->e ? o->issued : 0);
        sl->w[2] = o->remote_nla + o->issued;
        sl->w[3] = o->cookie;
        sl->op = i;
        sl->retries = 0;
        sl->busy = 1;
        sl->lcpl = 0;
        ++s->outstanding;
        ++o->nissued;
        o->issued += n;
        issue_slot(s, k);
    }
    if (o->nissued < o->total)
        s->backlog = i;
    else if (s->backlog == i)
        s->backlog = -1;
}

static int submit(struct velo_ep* ep, struct velo_rma* s, unsigned op, velo_addr_t peer, struct rc_ent* e,
                  uint64_t local_nla, uint64_t remote_nla, uint32_t remote_key, uint64_t len, unsigned flags,
                  uint64_t cookie, int* sync) {
    const int i = s->op_free;
    struct rma_op* o = &s->ops[i];
    s->op_free = o->next_free;
    memset(o, 0, sizeof *o);
    o->cookie = cookie;
    o->len = len;
    o->local_nla = local_nla;
    o->remote_nla = remote_nla;
    o->remote_key = remote_key;
    o->node = peer.node;
    o->vpid = peer.vpid;
    o->op = op;
    o->flags = flags;
    o->total = len ? (unsigned)((len + s->piece_max - 1) / s->piece_max) : 1;
    o->e = e;
    o->sync = sync;
    o->next_free = -1;
    (void)ep;
    issue_more(s, i);
    return i;
}

// Argument checks shared by put and get; 0 or the errno of the first bad argument. The NLA carries
// the key's bits 7:0, the command its bits 31:8: both halves must come from one registration.
static int check_remote(const struct velo_ep* ep, const struct velo_rma* s, velo_addr_t peer, uint64_t nla,
                        uint32_t key, size_t len) {
    if (peer.node >= (1u << ep->b.node_bits) || peer.vpid >= (1u << ep->b.vpid_bits) ||
        VELO_IS_CTL_VPID(peer.vpid, ep->b.vpid_bits))
        return -EINVAL;
    if (VELO_FIELD_GET(VELO_RMA_NLA_REGION, nla) >= (1ull << s->m.region_bits)) return -EINVAL;
    if (VELO_FIELD_GET(VELO_RMA_NLA_KEY, nla) != (key & 0xFFu)) return -EINVAL;
    const uint64_t off = VELO_FIELD_GET(VELO_RMA_NLA_OFFSET, nla);
    if ((uint64_t)len > NLA_LIMIT - off) return -ERANGE;
    return 0;
}

static int room(const struct velo_rma* s) {
    return s->backlog >= 0 || s->outstanding >= s->limit || s->op_free < 0 ? -EAGAIN : 0;
}

static int xfer(velo_ep_t* ep, unsigned op, velo_addr_t peer, const velo_region_t* local, size_t local_off,
                uint64_t remote_nla, uint32_t remote_key, size_t len, unsigned flags, uint64_t cookie) {
    if (!ep) return -EINVAL;
    if (ep->closed) return -EBADF;
    const unsigned allowed =
        op == VELO_RMA_OP_PUT ? VELO_RMA_F_LOCAL | VELO_RMA_F_REMOTE | VELO_RMA_F_NOTIFY : VELO_RMA_F_LOCAL;
    if (flags & ~allowed) return -EINVAL;
    if (op == VELO_RMA_OP_GET && len == 0) return -EINVAL;
    if (len && !local) return -EINVAL;
    if (local && local->ep != ep) return -EINVAL;
    pthread_mutex_lock(&ep->rma_lock);
    struct velo_rma* s;
    int r = velo__rma_get(ep, &s);
    if (r == 0) r = check_remote(ep, s, peer, remote_nla, remote_key, len);
    if (r == 0 && local) {
        const unsigned need = op == VELO_RMA_OP_PUT ? VELO_ACCESS_LOCAL_READ : VELO_ACCESS_LOCAL_WRITE;
        if (local_off > local->len || len > local->len - local_off)
            r = -ERANGE;
        else if (!(local->access & need))
            r = -EACCES;
    }
    if (r == 0) r = room(s);
    if (r == 0) {
        struct rc_ent* e = local ? local->e : NULL;
        if (e) ++e->refs;
        const uint64_t lnla = e ? e->nla + (local->addr - e->addr) + local_off : 0;
        r = submit(ep, s, op, peer, e, lnla, remote_nla, remote_key, len, flags, cookie, NULL);
        r = r < 0 ? r : 0;
    }
    pthread_mutex_unlock(&ep->rma_lock);
    return r;
}

// A transfer from/to a plain buffer, registered through the region cache. 0; with `sync` (velo_send's
// puts: no completion is reported, *sync gets the outcome) the op's index.
static int xfer_buf(velo_ep_t* ep, unsigned op, velo_addr_t peer, const void* buf, uint64_t remote_nla,
                    uint32_t remote_key, size_t len, unsigned flags, uint64_t cookie, int* sync) {
    if (!ep) return -EINVAL;
    if (ep->closed) return -EBADF;
    const unsigned allowed =
        op == VELO_RMA_OP_PUT ? VELO_RMA_F_LOCAL | VELO_RMA_F_REMOTE | VELO_RMA_F_NOTIFY : VELO_RMA_F_LOCAL;
    if (flags & ~allowed) return -EINVAL;
    if (op == VELO_RMA_OP_GET && len == 0) return -EINVAL;
    if (len && velo__rma_check_range(buf, len)) return -EINVAL;
    pthread_mutex_lock(&ep->rma_lock);
    struct velo_rma* s;
    int r = velo__rma_get(ep, &s);
    if (r == 0) r = check_remote(ep, s, peer, remote_nla, remote_key, len);
    if (r == 0) r = room(s);
    struct rc_ent* e = NULL;
    if (r == 0 && len) {
        const unsigned need = op == VELO_RMA_OP_PUT ? VELO_ACCESS_LOCAL_READ : VELO_ACCESS_LOCAL_WRITE;
        r = velo__rc_acquire(ep, s, (uintptr_t)buf, len, need, &velo__scope_default, &e);
    }
    if (r == 0) {
        const uint64_t lnla = e ? e->nla + ((uintptr_t)buf - e->addr) : 0;
        r = submit(ep, s, op, peer, e, lnla, remote_nla, remote_key, len, flags, cookie, sync);
        r = r < 0 || sync ? r : 0;
    }
    pthread_mutex_unlock(&ep->rma_lock);
    return r;
}

int velo_put(velo_ep_t* ep, velo_addr_t dst, const velo_region_t* local, size_t local_off, uint64_t remote_nla,
             uint32_t remote_key, size_t len, unsigned flags, uint64_t cookie) {
    return xfer(ep, VELO_RMA_OP_PUT, dst, local, local_off, remote_nla, remote_key, len, flags, cookie);
}

int velo_get(velo_ep_t* ep, velo_addr_t src, const velo_region_t* local, size_t local_off, uint64_t remote_nla,
             uint32_t remote_key, size_t len, unsigned flags, uint64_t cookie) {
    return xfer(ep, VELO_RMA_OP_GET, src, local, local_off, remote_nla, remote_key, len, flags, cookie);
}

int velo_put_buf(velo_ep_t* ep, velo_addr_t dst, const void* buf, uint64_t remote_nla, uint32_t remote_key, size_t len,
                 unsigned flags, uint64_t cookie) {
    return xfer_buf(ep, VELO_RMA_OP_PUT, dst, buf, remote_nla, remote_key, len, flags, cookie, NULL);
}

int velo_get_buf(velo_ep_t* ep, velo_addr_t src, void* buf, uint64_t remote_nla, uint32_t remote_key, size_t len,
                 unsigned flags, uint64_t cookie) {
    return xfer_buf(ep, VELO_RMA_OP_GET, src, buf, remote_nla, remote_key, len, flags, cookie, NULL);
}

// ============================================================================ completions
static int reason_errno(unsigned reason) {
    switch (reason) {
        case VELO_RMA_ERR_BAD_CMD:
            return -EPROTO;
        case VELO_RMA_ERR_TORN:
            return -EIO;
        case VELO_RMA_ERR_BAD_HANDLE:
            return -ENOENT;
        case VELO_RMA_ERR_NOT_OWNER:
            return -EPERM;
        case VELO_RMA_ERR_PERM:
            return -EACCES;
        case VELO_RMA_ERR_RANGE:
            return -ERANGE;
        case VELO_RMA_ERR_NOT_VALID:
            return -EFAULT;
        case VELO_RMA_ERR_NO_ROUTE:
            return -EHOSTUNREACH;
        case VELO_RMA_ERR_NQ_DISABLED:
            return -ENOTCONN;
        case VELO_RMA_ERR_DISABLED:
            return -ENETDOWN;
        case VELO_RMA_ERR_BUSY:
            return -EBUSY;
        default:
            return -EIO;
    }
}

const char* velo_rma_reason_str(unsigned reason) {
    switch (reason) {
        case 0:
            return "no error";
        case VELO_RMA_ERR_BAD_CMD:
            return "BAD_CMD: the NIC refused the command as malformed";
        case VELO_RMA_ERR_TORN:
            return "TORN: the command's write reached the NIC in pieces (issued again, in vain)";
        case VELO_RMA_ERR_BAD_HANDLE:
            return "BAD_HANDLE: no such region, wrong key, or not permitted for this initiator (a stale, "
                   "deregistered or guessed handle, or an initiator outside the region's scope)";
        case VELO_RMA_ERR_NOT_OWNER:
            return "NOT_OWNER: the local region belongs to another endpoint";
        case VELO_RMA_ERR_PERM:
            return "PERM: the region was not registered for this access";
        case VELO_RMA_ERR_RANGE:
            return "RANGE: offset + length beyond the region";
        case VELO_RMA_ERR_NOT_VALID:
            return "NOT_VALID: the region's memory was unmapped or changed (remote: after its handle was "
                   "handed out; local: re-pinning failed)";
        case VELO_RMA_ERR_NO_ROUTE:
            return "NO_ROUTE: no route to the node";
        case VELO_RMA_ERR_NQ_DISABLED:
            return "NQ_DISABLED: data written, but the target's notification queue is disabled";
        case VELO_RMA_ERR_DISABLED:
            return "DISABLED: the RMA unit or the NIC is disabled";
        case VELO_RMA_ERR_BUSY:
            return "BUSY: the NIC had no free command tag (the library issues the command again)";
        default:
            return "unknown RMA error reason";
    }
}

// Room for one more completion. The queue grows: velo__rma_put_sync takes the entries of its
// put from behind others the caller has not polled yet (NULL, and the completion is lost and
// counted, only when memory runs out).
static velo_rma_cpl_t* ev_push(struct velo_rma* s) {
    if (s->evq_len == s->evq_cap) {
        velo_rma_cpl_t* n = malloc(2 * (size_t)s->evq_cap * sizeof *n);
        if (!n) {
            ++s->ep->st.rma_nq_bad;
            return NULL;
        }
        for (unsigned i = 0; i < s->evq_len; ++i) n[i] = s->evq[(s->evq_head + i) % s->evq_cap];
        free(s->evq);
        s->evq = n;
        s->evq_head = 0;
        s->evq_cap *= 2;
    }
    velo_rma_cpl_t* c = &s->evq[(s->evq_head + s->evq_len++) % s->evq_cap];
    memset(c, 0, sizeof *c);
    return c;
}

static void ev_op(struct velo_rma* s, const struct rma_op* o, unsigned kind) {
    velo_rma_cpl_t* c = ev_push(s);
    if (!c) return;
    c->kind = kind;
    c->op = o->op;
    c->cookie = o->cookie;
    c->len = o->len;
    c->nla = o->remote_nla;
    c->peer.node = o->node;
    c->peer.vpid = o->vpid;
    if (kind == VELO_RMA_KIND_ERROR) {
        c->reason = o->reason;
        c->remote = o->remote;
        c->status = reason_errno(o->reason);
    }
}

static void maybe_local(struct velo_rma* s, struct rma_op* o) {
    if ((o->flags & VELO_RMA_F_LOCAL) && o->op == VELO_RMA_OP_PUT && !o->local_reported && !o->reason &&
        o->nissued == o->total && o->lcpl_seen == o->total) {
        o->local_reported = 1;
        ev_op(s, o, VELO_RMA_KIND_LOCAL);
    }
}

// The final entry of the command in slot k.
static void slot_final(struct velo_ep* ep, struct velo_rma* s, unsigned k, unsigned reason, unsigned remote) {
    struct rma_slot* sl = &s->slot[k];
    const int i = sl->op;
    struct rma_op* o = &s->ops[i];
    sl->busy = 0;
    --s->outstanding;
    ++o->final_seen;
    if (reason && !o->reason) {
        o->reason = reason;
        o->remote = remote;
    }
    if (o->reason) o->total = o->nissued;  // abandon the pieces not issued yet
    if (o->final_seen == o->total && o->nissued == o->total) {
        if (o->sync) {
            *o->sync = o->reason ? reason_errno(o->reason) : 1;
        } else if (o->reason) {
            ev_op(s, o, VELO_RMA_KIND_ERROR);
        } else if (o->op == VELO_RMA_OP_PUT) {
            if ((o->flags & VELO_RMA_F_LOCAL) && !o->local_reported) {
                o->local_reported = 1;  // (no LOCAL_CPL for a data-less put: the source is free)
                ev_op(s, o, VELO_RMA_KIND_LOCAL);
            }
            if (o->flags & VELO_RMA_F_REMOTE) ev_op(s, o, VELO_RMA_KIND_REMOTE);
        } else if (o->flags & VELO_RMA_F_LOCAL) {
            ev_op(s, o, VELO_RMA_KIND_GET_DONE);
        }
        if (o->e) velo__rc_put(ep, s, o->e);
        o->e = NULL;
        if (s->backlog == i) s->backlog = -1;
        o->next_free = s->op_free;
        s->op_free = i;
    }
}

static void slot_retry(struct velo_ep* ep, struct velo_rma* s, unsigned k, unsigned reason) {
    struct rma_slot* sl = &s->slot[k];
    if (sl->retries >= RMA_RETRY_MAX) {
        slot_final(ep, s, k, reason, 0);
        return;
    }
    ++sl->retries;
    sl->lcpl = 0;
    ++ep->st.rma_reissues;
    issue_slot(s, k);
}

// ---- commands refused for want of a tag (ERROR BUSY, docs/rma.md §6.1): the NIC's 2^TAG_BITS
// command tags are shared by every vpid, so a refused command waits in its slot (still outstanding)
// and is issued again, oldest first: one each time a command of ours ends (a tag is free again), or,
// when none of ours is in flight (other vpids hold every tag), after a wait that starts at
// RMA_BUSY_WAIT_MIN_NS and doubles with every refusal up to RMA_BUSY_WAIT_MAX_NS.
static uint64_t busy_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void busy_park(struct velo_rma* s, unsigned k) {
    s->slot[k].lcpl = 0;
    s->park[(s->park_head + s->park_len++) % VELO_RMA_SLOTS] = k;
    s->park_due_ns = 0;
}

// `ended`: a command of ours just ended. Returns whether a command was issued again.
static int busy_reissue(struct velo_ep* ep, struct velo_rma* s, int ended) {
    if (s->park_len == 0) return 0;
    if (ended) {
        s->park_wait_ns = 0;
    } else {
        if (s->outstanding > s->park_len) return 0;  // one of ours ends first
        const uint64_t now = busy_now_ns();
        if (s->park_due_ns == 0) {
            s->park_wait_ns = s->park_wait_ns ? s->park_wait_ns * 2 : RMA_BUSY_WAIT_MIN_NS;
            if (s->park_wait_ns > RMA_BUSY_WAIT_MAX_NS) s->park_wait_ns = RMA_BUSY_WAIT_MAX_NS;
            s->park_due_ns = now + s->park_wait_ns;
        }
        if (now < s->park_due_ns) return 0;
    }
    s->park_due_ns = 0;
    const unsigned k = s->park[s->park_head];
    s->park_head = (s->park_head + 1) % VELO_RMA_SLOTS;
    --s->park_len;
    ++ep->st.rma_reissues;
    issue_slot(s, k);
    return 1;
}

#define NQ_RSVD_MASK                                                                   \
    (VELO_FIELD_MASK(VELO_RMA_NQ_HDR_RSVD0) | VELO_FIELD_MASK(VELO_RMA_NQ_HDR_RSVD1) | \
     VELO_FIELD_MASK(VELO_RMA_NQ_HDR_RSVD2) | VELO_FIELD_MASK(VELO_RMA_NQ_HDR_RSVD3))

static void on_entry(struct velo_ep* ep, struct velo_rma* s, const uint64_t w[4]) {
    const uint64_t h = w[0];
    const unsigned kind = (unsigned)VELO_FIELD_GET(VELO_RMA_NQ_HDR_KIND, h);
    if ((h & NQ_RSVD_MASK) || (w[2] & VELO_FIELD_MASK(VELO_RMA_NQ_W2_RSVD)) || kind < VELO_RMA_NQ_KIND_LOCAL_CPL ||
        kind > VELO_RMA_NQ_KIND_TARGET) {
        ++ep->st.rma_nq_bad;
        return;
    }
    if (kind == VELO_RMA_NQ_KIND_TARGET) {
        velo_rma_cpl_t* c = ev_push(s);
        if (!c) return;
        c->kind = kind;
        c->op = (uint32_t)VELO_FIELD_GET(VELO_RMA_NQ_HDR_OP, h);
        c->cookie = w[1];
        c->len = VELO_FIELD_GET(VELO_RMA_NQ_W2_LEN, w[2]);
        c->nla = w[3];
        c->peer.node = (uint32_t)VELO_FIELD_GET(VELO_RMA_NQ_HDR_PEER_NODE, h);
        c->peer.vpid = (uint32_t)VELO_FIELD_GET(VELO_RMA_NQ_HDR_PEER_VPID, h);
        return;
    }
    const unsigned k = (unsigned)VELO_FIELD_GET(VELO_RMA_NQ_HDR_SLOT, h);
    const unsigned err = (unsigned)VELO_FIELD_GET(VELO_RMA_NQ_HDR_ERR, h);
    const unsigned remote = (unsigned)VELO_FIELD_GET(VELO_RMA_NQ_HDR_ERR_REMOTE, h);
    if (kind == VELO_RMA_NQ_KIND_ERROR && err == VELO_RMA_ERR_TORN) {
        // nothing of the write was executed: issue the commands of the slots it touched again
        unsigned cnt = (unsigned)VELO_FIELD_GET(VELO_RMA_NQ_HDR_SLOT_CNT, h);
        if (cnt == 0) cnt = 1;
        if (cnt > VELO_RMA_SLOTS) cnt = VELO_RMA_SLOTS;
        for (unsigned j = 0; j < cnt; ++j) {
            const unsigned t = (k + j) % VELO_RMA_SLOTS;
            if (s->slot[t].busy) slot_retry(ep, s, t, VELO_RMA_ERR_TORN);
        }
        return;
    }
    struct rma_slot* sl = &s->slot[k];
    const unsigned op = (unsigned)VELO_FIELD_GET(VELO_RMA_NQ_HDR_OP, h);
    if (!sl->busy || op != s->ops[sl->op].op) {
        ++ep->st.rma_nq_bad;  // no command of ours in that slot
        return;
    }
    struct rma_op* o = &s->ops[sl->op];
    switch (kind) {
        case VELO_RMA_NQ_KIND_LOCAL_CPL:
            if (op != VELO_RMA_OP_PUT || sl->lcpl) {
                ++ep->st.rma_nq_bad;
                return;
            }
            sl->lcpl = 1;
            ++o->lcpl_seen;
            maybe_local(s, o);
            return;
        case VELO_RMA_NQ_KIND_REMOTE_CPL:
        case VELO_RMA_NQ_KIND_GET_DONE:
            if ((kind == VELO_RMA_NQ_KIND_REMOTE_CPL) != (op == VELO_RMA_OP_PUT)) {
                ++ep->st.rma_nq_bad;
                return;
            }
            slot_final(ep, s, k, 0, 0);
            return;
        default:  // ERROR
            if (err == VELO_RMA_ERR_BUSY && !remote) {
                busy_park(s, k);  // nothing executed: issued again later (busy_reissue)
                return;
            }
            if (err == VELO_RMA_ERR_NOT_VALID && !remote && sl->retries < RMA_RETRY_MAX) {
                // our own region lost its translation (munmap, COW, migration, compaction): re-pin it
                // and issue the command again (decoupled pinning, docs/rma.md §2.4)
                if (velo__rma_repin(ep, sl->w[1]) == 0) {
                    ++ep->st.rma_repins;
                    slot_retry(ep, s, k, err);
                    return;
                }
            }
            if (err == VELO_RMA_ERR_NOT_VALID && remote && sl->retries < RMA_RETRY_MAX) {
                // the peer's region was valid when its handle was handed out and is not now: its
                // driver withdraws every region for a moment to compact the page table (a node
                // short of page table runs, docs/rma.md §2.4); issue the command again after the
                // others of ours in flight or a wait, as a refused one. A region whose memory
                // really changed stays invalid: the call fails after RMA_RETRY_MAX re-issues.
                ++sl->retries;
                busy_park(s, k);
                return;
            }
            slot_final(ep, s, k, err ? err : VELO_RMA_ERR_BAD_CMD, remote);
            return;
    }
}

static void write_rp(struct velo_rma* s) {
    const uint32_t v = s->rp & ((1u << VELO_RMA_NQ_PTR_BITS) - 1);
    if (s->m.nq_rp)
        *s->m.nq_rp = v;
    else
        s->ep->be->rma_write_rp(&s->ep->b, v);
    s->rp_nic = s->rp;
}

// The entry at the read pointer, if the NIC wrote it: the header word first (acquire), its PHASE
// must be the current pass's ((rp >> k) & 1) ^ 1; then the rest. An entry is one DMA write inside
// one line, so a header with the right phase means the whole entry is there (no torn read).
static int nq_next(struct velo_rma* s, uint64_t w[4]) {
    const volatile uint64_t* e =
        (const volatile uint64_t*)(s->m.nq + (size_t)(s->rp & s->mask) * VELO_RMA_NQ_ENTRY_BYTES);
    const uint64_t h = __atomic_load_n(e, __ATOMIC_ACQUIRE);
    const unsigned want = ((s->rp >> s->m.nq_log2) & 1u) ^ 1u;
    if (VELO_FIELD_GET(VELO_RMA_NQ_HDR_PHASE, h) != want) return 0;
    w[0] = h;
    w[1] = e[VELO_RMA_NQ_OFF_COOKIE / 8];
    w[2] = e[VELO_RMA_NQ_OFF_LEN / 8];
    w[3] = e[VELO_RMA_NQ_OFF_NLA / 8];
    ++s->rp;
    if (s->rp - s->rp_nic >= s->rp_batch) write_rp(s);
    return 1;
}

int velo_rma_poll(velo_ep_t* ep, velo_rma_cpl_t* cpl) {
    if (!ep || !cpl) return -EINVAL;
    if (ep->closed) return -EBADF;
    pthread_mutex_lock(&ep->rma_lock);
    struct velo_rma* s;
    int r = velo__rma_get(ep, &s);
    if (r == 0) {
        uint64_t w[4];
        while (s->evq_len == 0 && nq_next(s, w)) {
            const unsigned inflight = s->outstanding;
            on_entry(ep, s, w);
            if (s->outstanding < inflight) busy_reissue(ep, s, 1);  // one of ours ended: its tag is free
            if (s->backlog >= 0) issue_more(s, s->backlog);         // slots freed: the rest of a long call
        }
        busy_reissue(ep, s, 0);
        if (s->evq_len) {
            *cpl = s->evq[s->evq_head];
            s->evq_head = (s->evq_head + 1) % s->evq_cap;
            --s->evq_len;
        } else {
            if (s->rp != s->rp_nic) write_rp(s);  // idle: give the NIC all the room
            r = ep->b.dead ? -EPIPE : -EAGAIN;
        }
    }
    pthread_mutex_unlock(&ep->rma_lock);
    return r;
}

// The queue entry at the read pointer and what its header looks like once it is there.
// The notification queue's next entry: there when (*hdr & *mask) == *val.
static void nq_next_entry(const struct velo_rma* s, const volatile uint64_t** hdr, uint64_t* mask, uint64_t* val) {
    *hdr = (const volatile uint64_t*)(s->m.nq + (size_t)(s->rp & s->mask) * VELO_RMA_NQ_ENTRY_BYTES);
    *mask = VELO_FIELD_MASK(VELO_RMA_NQ_HDR_PHASE);
    *val = VELO_FIELD_PREP(VELO_RMA_NQ_HDR_PHASE, ((s->rp >> s->m.nq_log2) & 1u) ^ 1u);
}

// Refused commands and none of ours in flight: no entry may come, poll for the re-issue.
static int nq_parked(const struct velo_rma* s) {
    return s->park_len && s->outstanding == s->park_len;
}

static int nq_peek(velo_ep_t* ep, const volatile uint64_t** hdr, uint64_t* mask, uint64_t* val, int user) {
    pthread_mutex_lock(&ep->rma_lock);
    struct velo_rma* s = ep->rma;
    int r = s ? 0 : -EAGAIN;
    if (s) {
        nq_next_entry(s, hdr, mask, val);
        if ((user && s->evq_len) || nq_parked(s)) r = -EAGAIN;  // completions queued: poll again at once
    }
    pthread_mutex_unlock(&ep->rma_lock);
    return r;
}

int velo__rma_ready(velo_ep_t* ep, struct velo_be_wait* w) {
    w->nq_hdr = NULL;
    pthread_mutex_lock(&ep->rma_lock);
    struct velo_rma* s = ep->rma;
    int r = 0;
    if (s) {
        nq_next_entry(s, &w->nq_hdr, &w->nq_mask, &w->nq_val);
        r = s->evq_len || nq_parked(s) || (__atomic_load_n(w->nq_hdr, __ATOMIC_ACQUIRE) & w->nq_mask) == w->nq_val;
    }
    pthread_mutex_unlock(&ep->rma_lock);
    return r;
}

// Call step(ep, arg) until it returns something else than -EAGAIN, for up to timeout_ms (-1:
// forever, 0: once; then -ETIMEDOUT). user: completions queued for velo_rma_poll end a sleep. hw: the notification
// queue has no interrupt yet: poll, backing off to short sleeps. sim: spin briefly, then sleep until the fabric writes
// into the queue (it holds simulated time while a client it woke reacts, as for mail: wait_state).
static int wait_loop(velo_ep_t* ep, int (*step)(velo_ep_t*, void*), void* arg, int user, int timeout_ms) {
    const struct velo_backend* be = ep->closed ? NULL : ep->be;
    const int sleeper = be && be->rma_sleep;
    if (sleeper && be->wait_state) be->wait_state(&ep->b, 1);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int r;
    for (unsigned n = 0;; ++n) {
        r = step(ep, arg);
        if (r != -EAGAIN) break;
        r = -ETIMEDOUT;
        if (timeout_ms == 0) break;
        int64_t left_ns = -1;
        if (timeout_ms > 0) {
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            const int64_t ns = (int64_t)(t.tv_sec - t0.tv_sec) * 1000000000 + (t.tv_nsec - t0.tv_nsec);
            left_ns = (int64_t)timeout_ms * 1000000 - ns;
            if (left_ns <= 0) break;
        }
        if (sleeper && n >= be->spin_polls) {
            const volatile uint64_t* hdr;
            uint64_t mask, val;
            if (nq_peek(ep, &hdr, &mask, &val, user) == 0) {
                const int e = be->rma_sleep(&ep->b, hdr, mask, val, left_ns);
                if (e < 0) {
                    r = e;
                    break;
                }
            }
        } else if (!sleeper && n >= 2000) {
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
    if (sleeper && be->wait_state && !ep->closed) be->wait_state(&ep->b, 0);
    return r;
}

static int poll_step(velo_ep_t* ep, void* cpl) {
    return velo_rma_poll(ep, (velo_rma_cpl_t*)cpl);
}

int velo_rma_wait(velo_ep_t* ep, velo_rma_cpl_t* cpl, int timeout_ms) {
    if (!ep || !cpl) return -EINVAL;
    return wait_loop(ep, poll_step, cpl, 1, timeout_ms);
}

// ============================================================================ velo_send's puts
struct sync_put {
    int op;    // the op index
    int done;  // 1 done, -errno failed, 0 in flight
};

// Take notification entries until the put is done (the caller's completions are queued for
// velo_rma_poll); -EAGAIN while it is in flight.
static int sync_step(velo_ep_t* ep, void* arg) {
    struct sync_put* p = arg;
    pthread_mutex_lock(&ep->rma_lock);
    struct velo_rma* s = ep->rma;
    uint64_t w[4];
    while (!p->done && nq_next(s, w)) {
        const unsigned inflight = s->outstanding;
        on_entry(ep, s, w);
        if (s->outstanding < inflight) busy_reissue(ep, s, 1);  // one of ours ended: its tag is free
        if (s->backlog >= 0) issue_more(s, s->backlog);
    }
    busy_reissue(ep, s, 0);
    if (!p->done && s->rp != s->rp_nic) write_rp(s);
    int r = p->done ? 0 : ep->b.dead ? -EPIPE : -EAGAIN;
    if (r == -EPIPE) s->ops[p->op].sync = NULL;  // nothing will end it: forget the caller's stack
    pthread_mutex_unlock(&ep->rma_lock);
    return r;
}

// Take notification entries until one of the endpoint's commands ended (its registration may be
// free then); -EAGAIN before.
struct drain_wait {
    unsigned outstanding;
};
static int drain_step(velo_ep_t* ep, void* arg) {
    struct drain_wait* d = arg;
    pthread_mutex_lock(&ep->rma_lock);
    struct velo_rma* s = ep->rma;
    uint64_t w[4];
    while (s->outstanding >= d->outstanding && nq_next(s, w)) {
        const unsigned inflight = s->outstanding;
        on_entry(ep, s, w);
        if (s->outstanding < inflight) busy_reissue(ep, s, 1);
        if (s->backlog >= 0) issue_more(s, s->backlog);
    }
    busy_reissue(ep, s, 0);
    if (s->rp != s->rp_nic) write_rp(s);
    const int r = s->outstanding < d->outstanding ? 0 : ep->b.dead ? -EPIPE : -EAGAIN;
    pthread_mutex_unlock(&ep->rma_lock);
    return r;
}

static int no_room(int r) {
    return r == -ENFILE || r == -EMFILE || r == -ENOBUFS;
}

int velo__rma_put_sync(struct velo_ep* ep, velo_addr_t dst, const void* buf, uint64_t remote_nla, uint32_t remote_key,
                       size_t len) {
    struct sync_put p = {-1, 0};
    int r;
    // no room in the NIC for the source's registration: while commands of this endpoint are in
    // flight (their registrations go when they end, and the cache gives idle ones back), wait for
    // one to end and try again; with none in flight the caller gets the reason (velo_strerror)
    while (no_room(r = xfer_buf(ep, VELO_RMA_OP_PUT, dst, buf, remote_nla, remote_key, len, 0, 0, &p.done))) {
        pthread_mutex_lock(&ep->rma_lock);
        struct drain_wait d = {ep->rma ? ep->rma->outstanding : 0};
        pthread_mutex_unlock(&ep->rma_lock);
        if (!d.outstanding) break;
        const int w = wait_loop(ep, drain_step, &d, 0, -1);
        if (w < 0) return w;
    }
    if (r < 0) return r;
    p.op = r;
    r = wait_loop(ep, sync_step, &p, 0, -1);
    return r < 0 ? r : p.done < 0 ? p.done : 0;
}
