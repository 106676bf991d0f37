// SPDX-License-Identifier: MIT
// libvelo: the API, the fast paths (send, poll), recombination glue and the credit protocol.
// See velo_internal.h for the flow-control design and docs/api.md for the user's view.
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "velo/velo_sim_proto.h"
#include "velo/velo_uapi.h"
#include "velo_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VELO_HAVE_SSE 1
#endif

static inline void cpu_relax(void) {
#if VELO_HAVE_SSE
    _mm_pause();
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

// ============================================================================ stores
// The stores of one message into its 64-byte line of a window page. On hardware the page is
// mapped write-combining: the stores gather in one WC buffer and the fence drains it as one
// burst; bytes past the message length are ignored by the NIC (clipped), so whole quadwords or
// 16-byte chunks are stored.
void velo__hw_store_slow(uint8_t* dst, const void* src, size_t len) {
    uint8_t tmp[64] __attribute__((aligned(16)));
    const uint8_t* s = (const uint8_t*)src;
    if (len & 15) {
        memcpy(tmp, src, len);
        memset(tmp + len, 0, 64 - len);
        s = tmp;
    }
    if (len <= 8) {
        uint64_t q;
        memcpy(&q, s, 8);
        *(volatile uint64_t*)dst = q;
    } else {
        for (size_t i = 0; i < len; i += 16) {
#if VELO_HAVE_SSE
            _mm_store_si128((__m128i*)(dst + i), _mm_loadu_si128((const __m128i*)(s + i)));
#else
            uint64_t a, b;
            memcpy(&a, s + i, 8);
            memcpy(&b, s + i + 8, 8);
            ((volatile uint64_t*)(dst + i))[0] = a;
            ((volatile uint64_t*)(dst + i))[1] = b;
#endif
        }
    }
#if VELO_HAVE_SSE
    _mm_sfence();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

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
                   "handle of another endpoint or region index beyond the NIC's, or an unknown VELO_DEVICE: use "
                   "hw:/dev/veloN or sim:<socket>)";
        case EMSGSIZE:
            return "message too long: VELO messages carry 1..64 bytes";
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
            return "out of memory";
        case EPERM:
            return "permission denied (driver policy, or an RMA region of another endpoint)";
        case EACCES:
            return "permission denied (driver policy, or the RMA region was not registered with this access)";
        case ERANGE:
            return "out of range: offset + length beyond the registered region (or beyond the NLA's 40-bit "
                   "offset)";
        case EFAULT:
            return "bad address: memory not mapped, read-only for a write access, or its mapping changed";
        case ENOENT:
            return "no such RMA region: stale or unknown handle (deregistered, or another endpoint's)";
        case E2BIG:
            return "too big: an RMA registration is at most 2^40-1 bytes";
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

// ============================================================================ rings
void velo__ring_init(struct velo_ring* r, uint8_t* base, unsigned log2) {
    r->base = base;
    r->log2 = log2;
    r->lines = 1u << log2;
    r->end = base + ((size_t)64 << log2);
    r->cur = base;
    r->expect = 1;
    r->pass = 0;
    r->rp_nic = 0;
}

uint32_t velo__ring_rp(const struct velo_ring* r, const uint8_t* cur) {
    return r->pass * r->lines + (uint32_t)((cur - r->base) >> 6);
}

static int poll_p0(struct velo_ep* ep, velo_msg_t* m);
static int poll_p1(struct velo_ep* ep, velo_msg_t* m);
static int poll_slow(struct velo_ep* ep, velo_msg_t* m);

// velo_poll's fast path expects the phase of the current pass; a diverted endpoint (closed, or
// messages queued by velo_connect) always takes the slow path.
void velo__set_phase(struct velo_ep* ep) {
    ep->poll = ep->divert ? poll_slow : (ep->expect & 1) ? poll_p1 : poll_p0;
}

void velo__ep_set_data_ring(struct velo_ep* ep) {
    ep->cur = ep->data.base;
    ep->expect = 1;
    velo__set_phase(ep);
}

static void divert(struct velo_ep* ep, int why) {
    ep->divert = why;
    velo__set_phase(ep);
}

static void undivert(struct velo_ep* ep) {
    ep->divert = 0;
    velo__set_phase(ep);
}

// One entry of a ring, read with the tearing rules of MBOX_HDR: the header word is read first
// (acquire), and the payload only after the phase says the entry is there.
struct entry {
    uint64_t h;
    unsigned lines;
    unsigned node, vpid;
    unsigned off, flen, mlen;
    uint8_t area[128];  // payload area: FRAG_OFF % 4 pad bytes, then the fragment
};

// Read the entry at *cur (phase *expect) of ring r and advance past it. 1: read, 0: none,
// -1: a corrupt line skipped.
static int read_entry(const struct velo_ring* r, const uint8_t** cur, uint64_t* expect, uint32_t* pass,
                      struct entry* e) {
    const uint8_t* line = *cur;
    uint64_t h = __atomic_load_n((const uint64_t*)line, __ATOMIC_ACQUIRE);
    if ((h ^ *expect) & VH_PHASE) return 0;
    unsigned lines = VH_GET(LINES, h);
    int bad = VH_GET(TAIL, h) || lines == 0 || lines > 2;
    unsigned off = VH_GET(FRAG_OFF, h), flen = VH_GET(FRAG_LEN_M1, h) + 1, mlen = VH_GET(MSG_LEN_M1, h) + 1;
    unsigned area = off % 4 + flen;
    if (!bad && lines != (area > VELO_MBOX_PAYLOAD_LINE0 ? 2u : 1u)) bad = 1;
    const uint8_t* next = line + 64;
    uint64_t next_expect = *expect;
    if (next == r->end) {
        next = r->base;
        next_expect ^= 1;
    }
    if (bad) lines = 1;
    if (!bad && lines == 2) {
        // the NIC writes the second line first: if it is not there, the entry is not either
        uint64_t t = __atomic_load_n((const uint64_t*)next, __ATOMIC_ACQUIRE);
        if (((t ^ next_expect) & VH_PHASE) || !VH_GET(TAIL, t)) return 0;
    }
    if (!bad) {
        unsigned first = area < VELO_MBOX_PAYLOAD_LINE0 ? area : VELO_MBOX_PAYLOAD_LINE0;
        memcpy(e->area, line + 8, first);
        if (area > first) memcpy(e->area + first, next + 8, area - first);
        e->h = h;
        e->lines = lines;
        e->node = VH_GET(SRC_NODE, h);
        e->vpid = VH_GET(SRC_VPID, h);
        e->off = off;
        e->flen = flen;
        e->mlen = mlen;
    }
    if (lines == 2) {
        line = next;
        *expect = next_expect;
        if (next == r->base) ++*pass;
    }
    line += 64;
    if (line == r->end) {
        line = r->base;
        *expect ^= 1;
        ++*pass;
    }
    *cur = line;
    return bad ? -1 : 1;
}

// ============================================================================ credits (receiver side)
static unsigned hkey(unsigned node, unsigned vpid) {
    return (node * 31u + vpid) & 255u;
}

static inline uint32_t src_key(unsigned node, unsigned vpid) {
    return (node & 0xFFu) | (vpid & 0xFFu) << 8;  // header bytes 4 and 5, as the fast path reads them
}

static struct velo_peer* peer_find(struct velo_ep* ep, unsigned node, unsigned vpid, int create) {
    struct velo_peer* p = ep->peer_hash[hkey(node, vpid)];
    for (; p; p = p->hnext)
        if (p->node == node && p->vpid == vpid) return p;
    if (!create) return NULL;
    p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->node = node;
    p->vpid = vpid;
    p->key = src_key(node, vpid);
    p->reply_page = -1;
    p->hnext = ep->peer_hash[hkey(node, vpid)];
    ep->peer_hash[hkey(node, vpid)] = p;
    return p;
}

static void active_add(struct velo_ep* ep, struct velo_peer* p) {
    if (ep->nactive == ep->active_cap) {
        unsigned n = ep->active_cap ? 2 * ep->active_cap : 16;
        struct velo_peer** a = realloc(ep->active, n * sizeof *a);
        if (!a) return;
        ep->active = a;
        ep->active_cap = n;
    }
    ep->active[ep->nactive++] = p;
}

static void active_del(struct velo_ep* ep, struct velo_peer* p) {
    for (unsigned i = 0; i < ep->nactive; ++i)
        if (ep->active[i] == p) {
            ep->active[i] = ep->active[--ep->nactive];
            return;
        }
}

static struct velo_conn* conn_find(struct velo_ep* ep, unsigned node, unsigned vpid) {
    struct velo_conn* c = ep->conn_hash[hkey(node, vpid)];
    for (; c; c = c->hnext)
        if (c->node == node && c->vpid == vpid) return c;
    return NULL;
}

static int store_ctl(struct velo_ep* ep, int page, uint8_t* win, const struct velo_ctl_msg* m) {
    return ep->be->store(ep, page, win, (VELO_CTL_BYTES - 1) * 64u, m, VELO_CTL_BYTES);
}

static int send_ctl(struct velo_ep* ep, int page, uint8_t* win, unsigned type, uint32_t epoch, uint32_t limit,
                    uint32_t window) {
    struct velo_ctl_msg m = {.magic = VELO_CTL_MAGIC,
                             .type = (uint8_t)type,
                             .window = (uint16_t)window,
                             .epoch = epoch,
                             .limit = limit,
                             .rsvd = 0};
    return store_ctl(ep, page, win, &m);
}

// Lines between credit batches: a power of two, at most half the smallest window granted (so
// a sender that used its window up always finds its credit returned, docs/api.md), at most
// 1/16 of the ring and 32.
static void recompute_batch(struct velo_ep* ep) {
    uint32_t lim = ep->data.lines / 16;
    if (lim > 32) lim = 32;
    for (unsigned i = 0; i < ep->nactive; ++i)
        if (ep->active[i]->window / 2 < lim) lim = ep->active[i]->window / 2;
    uint32_t b = 1;
    while (b * 2 <= lim) b *= 2;
    ep->batch = b;
    ep->bmask = (uint64_t)b * 64 - 1;
}

// Return ring space: the read pointer to the NIC first (so the space is free in the NIC's eyes
// before a sender can use it), then credits to every sender with half a window read.
static void rp_to_nic(struct velo_ep* ep) {
    struct velo_ring* r = &ep->data;
    const uint32_t rp = velo__ring_rp(r, ep->cur);
    if (rp != r->rp_nic) {
        ep->be->write_rp(ep, r, rp);
        r->rp_nic = rp;
        ++ep->st.rp_updates;
    }
}

// Credit to a sender: everything it sent that we read, plus its window (when half a window was
// read since the last return, or always with `force`: a CREDIT_REQ).
static void credit_peer(struct velo_ep* ep, struct velo_peer* p, int force) {
    const uint32_t consumed = ep->counts[p->key] - p->base;
    const uint32_t unreturned = consumed - (p->limit_sent - p->window);
    if (p->reply_page >= 0 && (unreturned >= p->window / 2 || (force && unreturned))) {
        p->limit_sent = consumed + p->window;
        send_ctl(ep, p->reply_page, p->reply_win, VELO_CTL_CREDIT, p->epoch, p->limit_sent, p->window);
        ++ep->st.credit_msgs_tx;
    }
}

void velo__batch(struct velo_ep* ep) {
    if (ep->closed) return;
    rp_to_nic(ep);
    for (unsigned i = 0; i < ep->nactive; ++i) credit_peer(ep, ep->active[i], 0);
}

// The read pointer moved from `from` to ep->cur (lines, after a wrap possibly): a batch when it
// crossed a batch point.
static inline void crossed(struct velo_ep* ep, uint32_t from) {
    const uint32_t to = velo__ring_rp(&ep->data, ep->cur);
    if ((from ^ to) & ~(ep->batch - 1)) velo__batch(ep);
}

// ---- messages longer than 64 bytes (docs/api.md "Messages longer than 64 bytes")

// The receive area for a sender that asked for one: two slots, registered for its puts. Made
// once per sender and kept across its reconnections (until velo_close).
static void area_make(struct velo_ep* ep, struct velo_peer* p) {
    if (p->area || !ep->slot_log2 || ep->area_failed) return;
    const size_t bytes = (size_t)VELO_AREA_SLOTS << ep->slot_log2;
    void* a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED) return;
    velo_region_t* reg;
    int r = velo_register(ep, a, bytes, VELO_ACCESS_REMOTE_WRITE, &reg);
    if (r < 0) {
        munmap(a, bytes);
        // no RMA here (or no region left): senders get no area, their long messages go as trains
        if (r == -ENOTSUP || r == -EPIPE) ep->area_failed = 1;
        return;
    }
    velo_region_nla(reg, 0, &p->area_nla);
    p->area = a;
    p->area_reg = reg;
    p->slot_log2 = ep->slot_log2;
}

static void area_free(struct velo_peer* p) {
    if (!p->area) return;
    velo_deregister(p->area_reg);  // (after velo_close: only frees the handle; the driver dropped it)
    munmap(p->area, (size_t)VELO_AREA_SLOTS << p->slot_log2);
    p->area = NULL;
    p->area_reg = NULL;
}

// The last long message delivered is no longer the caller's: its area slot goes back to the
// sender, a queued copy is freed.
static void release_held(struct velo_ep* ep) {
    struct velo_peer* p = ep->held;
    if (p) {
        ep->held = NULL;
        ++p->large_rel;
        if (p->reply_page >= 0 && p->window) {
            struct velo_ctl_msg m = {.magic = VELO_CTL_MAGIC,
                                     .type = VELO_CTL_RELEASE,
                                     .window = 0,
                                     .epoch = p->epoch,
                                     .limit = p->large_rel,
                                     .rsvd = 0};
            store_ctl(ep, p->reply_page, p->reply_win, &m);
        }
    }
    free(ep->held_copy);
    ep->held_copy = NULL;
}

// A long message is being delivered: the next receive call takes the slow path to release it.
static void hold(struct velo_ep* ep, struct velo_peer* p, void* copy) {
    ep->held = p;
    ep->held_copy = copy;
    if (!ep->divert) divert(ep, DIVERT_HELD);
}

static int deliver_long(struct velo_msg* m, const struct velo_peer* p, const void* bytes, uint32_t len) {
    m->src_node = (uint8_t)p->node;
    m->src_vpid = (uint8_t)p->vpid;
    m->len = 0;
    m->size = len;
    m->ptr = bytes;
    return (int)len;
}

// A piece of a train. Returns the message's length when it completes one (filled into m), else 0.
static int on_train(struct velo_ep* ep, struct velo_peer* p, const uint8_t* b, unsigned len, velo_msg_t* m) {
    if (!p || !p->window || len < 2) {
        ++ep->st.ctl_bad;
        return 0;
    }
    unsigned n;
    if (b[0] == VELO_CTL_MAGIC) {  // first piece: header, then the first bytes
        struct velo_train_hdr h;
        if (len < sizeof h) {
            ++ep->st.ctl_bad;
            return 0;
        }
        memcpy(&h, b, sizeof h);
        n = len - (unsigned)sizeof h;
        if (h.len <= VELO_MSG_MAX_BYTES || h.len > VELO_TRAIN_MAX ||
            n != (h.len < VELO_TRAIN_FIRST ? h.len : VELO_TRAIN_FIRST)) {
            ++ep->st.ctl_bad;
            p->train_len = 0;
            return 0;
        }
        if (!p->train && !(p->train = malloc(VELO_TRAIN_MAX))) return 0;
        p->train_len = h.len;
        p->train_have = 0;
        b += sizeof h;
    } else {  // continuation
        n = len - 1;
        if (!p->train_len || n > p->train_len - p->train_have) {
            ++ep->st.ctl_bad;
            p->train_len = 0;
            return 0;
        }
        b += 1;
    }
    memcpy(p->train + p->train_have, b, n);
    p->train_have += n;
    if (p->train_have < p->train_len) return 0;
    ++ep->st.trains_rx;
    const uint32_t total = p->train_len;
    p->train_len = 0;
    return deliver_long(m, p, p->train, total);
}

// A connection request: grant the sender a window of ring lines (and a receive area if it asks).
static void on_connect(struct velo_ep* ep, struct velo_peer* p, unsigned node, unsigned ctl_vpid,
                       const struct velo_ctl_msg* m) {
    if (p->window) {  // a new connection replaces the old one
        ep->pool_free += p->window;
        p->window = 0;
        active_del(ep, p);
    }
    if (p->reply_page < 0) {
        int g = ep->be->grant(ep, VELO_GRANT_FROM_CTL, node, ctl_vpid, &p->reply_win);
        if (g < 0) {
            ++ep->st.ctl_bad;
            return;
        }
        p->reply_page = g;
    }
    uint32_t w = ep->window_max < ep->pool_free ? ep->window_max : ep->pool_free;
    p->epoch = m->epoch;
    if (w < 2) {
        send_ctl(ep, p->reply_page, p->reply_win, VELO_CTL_REFUSE, m->epoch, 0, 0);
        return;
    }
    ep->pool_free -= w;
    p->window = w;
    // everything this sender sent before the request has been read (ring order)
    p->base = ep->counts[p->key];
    p->limit_sent = w;
    p->large_seen = p->large_rel = 0;
    p->train_len = 0;
    if (ep->held == p) ep->held = NULL;  // a slot of the old connection: nothing to give back
    active_add(ep, p);
    recompute_batch(ep);
    if (m->window & VELO_CTL_CONNECT_AREA) area_make(ep, p);
    if (p->area && (m->window & VELO_CTL_CONNECT_AREA)) {  // before the credit: the sender has it when it is open
        struct velo_ctl_msg a = {.magic = VELO_CTL_MAGIC,
                                 .type = VELO_CTL_AREA,
                                 .window = (uint16_t)p->slot_log2,
                                 .epoch = m->epoch,
                                 .limit = (uint32_t)p->area_nla,
                                 .rsvd = (uint32_t)(p->area_nla >> 32)};
        store_ctl(ep, p->reply_page, p->reply_win, &a);
    }
    send_ctl(ep, p->reply_page, p->reply_win, VELO_CTL_CREDIT, m->epoch, w, w);
    ++ep->st.credit_msgs_tx;
}

// A message from a sender's control vpid in the data ring: connection requests, the pieces of
// trains and the notices of messages put into the receive area. Returns a message's length when
// one is complete for the user (filled into m), else 0.
static int on_data_ctl(struct velo_ep* ep, unsigned node, unsigned ctl_vpid, const uint8_t* b, unsigned len,
                       velo_msg_t* m) {
    const unsigned vpid = ctl_vpid & ~VELO_CTL_VPID_BIT(ep->vpid_bits);
    if (len >= 2 && (b[0] == VELO_TRAIN_MAGIC || (b[0] == VELO_CTL_MAGIC && b[1] == VELO_CTL_TRAIN)))
        return on_train(ep, peer_find(ep, node, vpid, 0), b, len, m);
    struct velo_ctl_msg c;
    if (len != VELO_CTL_BYTES) {
        ++ep->st.ctl_bad;
        return 0;
    }
    memcpy(&c, b, sizeof c);
    if (c.magic != VELO_CTL_MAGIC || (c.type != VELO_CTL_CONNECT && c.type != VELO_CTL_DISCONNECT &&
                                      c.type != VELO_CTL_LARGE && c.type != VELO_CTL_CREDIT_REQ)) {
        ++ep->st.ctl_bad;
        return 0;
    }
    struct velo_peer* p = peer_find(ep, node, vpid, c.type == VELO_CTL_CONNECT);
    if (!p) {
        if (c.type != VELO_CTL_CONNECT) ++ep->st.ctl_bad;
        return 0;
    }
    switch (c.type) {
        case VELO_CTL_CONNECT:
            on_connect(ep, p, node, ctl_vpid, &c);
            return 0;
        case VELO_CTL_DISCONNECT:
            if (p->window && c.epoch == p->epoch) {
                ep->pool_free += p->window;
                p->window = 0;
                active_del(ep, p);
                recompute_batch(ep);
            }
            return 0;
        case VELO_CTL_CREDIT_REQ:  // a train waits for more credit than the batches returned so far
            if (p->window && c.epoch == p->epoch) {
                rp_to_nic(ep);
                credit_peer(ep, p, 1);
            }
            return 0;
        default: {  // LARGE: a message in slot `window` of its area, c.limit bytes
            const uint32_t slot = c.window;
            if (!p->window || c.epoch != p->epoch || !p->area || slot != p->large_seen % VELO_AREA_SLOTS ||
                c.limit <= VELO_MSG_MAX_BYTES || c.limit > (1u << p->slot_log2) ||
                p->large_seen - p->large_rel >= VELO_AREA_SLOTS) {
                ++ep->st.ctl_bad;
                return 0;
            }
            ++p->large_seen;
            ++ep->st.large_rx;
            hold(ep, p, NULL);
            return deliver_long(m, p, p->area + ((size_t)slot << p->slot_log2), c.limit);
        }
    }
}

// ============================================================================ receive
// Read the data ring, handling control messages and fragments, until a message for the user is
// complete (its length) or the ring is empty (-EAGAIN).
static int poll_ring(struct velo_ep* ep, velo_msg_t* m) {
    for (;;) {
        struct entry e;
        const uint32_t from = velo__ring_rp(&ep->data, ep->cur);
        int r = read_entry(&ep->data, &ep->cur, &ep->expect, &ep->data.pass, &e);
        if (r == 0) return -EAGAIN;
        velo__set_phase(ep);
        if (r < 0) {
            ++ep->st.ctl_bad;
            crossed(ep, from);
            continue;
        }
        const int ctl = VELO_IS_CTL_VPID(e.vpid, ep->vpid_bits);
        const uint8_t* bytes = e.area + e.off % 4;
        uint8_t whole[64];
        unsigned len = e.flen;
        // the lines of the library's messages (trains, LARGE notices) count as the sender's: they
        // take its credit (connection requests are counted before the window begins)
        const uint32_t key = src_key(e.node, e.vpid & ~VELO_CTL_VPID_BIT(ep->vpid_bits));
        if (e.h & VH_FRAG) {
            ++ep->st.frags_rx;
            // a fragmented message counts once, with its first piece
            if (e.off == 0) ep->counts[key] += velo__msg_lines(e.mlen);
            int k = velo_rc_add(&ep->rc, e.node, e.vpid, e.mlen, e.off, bytes, e.flen, whole);
            if (k != 1) {
                crossed(ep, from);
                continue;
            }
            bytes = whole;
            len = e.mlen;
        } else {
            ep->counts[key] += e.lines;
        }
        if (ctl) {
            int n = on_data_ctl(ep, e.node, e.vpid, bytes, len, m);
            crossed(ep, from);
            if (n > 0) return n;
            continue;
        }
        memcpy(m->data, bytes, len);
        m->src_node = (uint8_t)e.node;
        m->src_vpid = (uint8_t)e.vpid;
        m->len = (uint16_t)len;
        crossed(ep, from);
        return (int)len;
    }
}

static int poll_slow(struct velo_ep* ep, velo_msg_t* m) {
    if (!m) return -EINVAL;
    if (ep->divert) {
        if (ep->closed) return -EBADF;
        if (ep->held || ep->held_copy) release_held(ep);
        if (ep->q_len) {
            *m = ep->q[ep->q_head];
            ep->q_head = (ep->q_head + 1) % ep->q_cap;
            if (--ep->q_len == 0) undivert(ep);
            if (m->len) return m->len;
            hold(ep, NULL, (void*)m->ptr);  // the queue's copy: freed at the next receive
            return (int)m->size;
        }
        undivert(ep);
    }
    return poll_ring(ep, m);
}

int velo__poll_slow(struct velo_ep* ep, velo_msg_t* m) {
    return poll_slow(ep, m);
}

// At a batch point (every `batch` lines, the ring end being one): wrap, then return space.
static VELO_COLD void at_batch_point(struct velo_ep* ep) {
    if (ep->cur == ep->data.end) {
        ep->cur = ep->data.base;
        ep->expect ^= 1;
        ++ep->data.pass;
        velo__set_phase(ep);
    }
    velo__batch(ep);
}

// The phase bit of a line: one `testb` on x86-64 (the byte is read again with acquire below).
static inline unsigned phase_bit(const uint8_t* line) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
    int nz;
    __asm__ __volatile__("testb $1, %1" : "=@ccnz"(nz) : "m"(*line));
    return (unsigned)nz;
#else
    return __atomic_load_n(line, __ATOMIC_RELAXED) & 1u;
#endif
}

// The poll fast path of one phase: when the mailbox is empty a header load and a bit test; for
// a whole message in one line the payload copy, the source's line count and the pointer
// advance. Everything else (fragments, two-line entries, control messages) goes slow.
static inline int poll_fast(struct velo_ep* ep, velo_msg_t* m, const unsigned phase) {
    const uint8_t* line = ep->cur;
    if (phase_bit(line) != phase) return -EAGAIN;
    const uint64_t h = __atomic_load_n((const uint64_t*)line, __ATOMIC_ACQUIRE);
    if (VELO_UNLIKELY(!m || (h & ep->slow_mask))) return poll_slow(ep, m);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    // FRAG and RSVD are 0 here, so the top byte is FRAG_LEN_M1; bytes 4 and 5 are the source
    const unsigned len = (unsigned)line[7] + 1u;
    uint16_t src;
    memcpy(&src, line + 4, 2);
#else
    const unsigned len = (unsigned)(h >> VELO_MBOX_HDR_FRAG_LEN_M1_SHIFT) + 1u;
    const uint16_t src = (uint16_t)src_key(VH_GET(SRC_NODE, h), VH_GET(SRC_VPID, h));
#endif
    if (VELO_LIKELY(len <= 16))
        memcpy(m->data, line + 8, 16);
    else
        memcpy(m->data, line + 8, VELO_MBOX_PAYLOAD_LINE0);
    m->len = (uint16_t)len;
    __asm__("" : "+m"(m->len));     // two 16-bit stores: cheaper than merging them into one
    memcpy(&m->src_node, &src, 2);  // src_node, src_vpid
    ep->counts[src] += 1;
    line += 64;
    ep->cur = line;
    if (VELO_UNLIKELY(((uintptr_t)line & ep->bmask) == 0)) at_batch_point(ep);
    return (int)len;
}

static int poll_p0(struct velo_ep* ep, velo_msg_t* m) {
    return poll_fast(ep, m, 0);
}
static int poll_p1(struct velo_ep* ep, velo_msg_t* m) {
    return poll_fast(ep, m, 1);
}

int velo_poll(velo_ep_t* ep, velo_msg_t* m) {
    if (VELO_UNLIKELY(!ep)) return -EINVAL;
    return ep->poll(ep, m);
}

// Control ring: credits, refusals and resets for this endpoint's connections. Senders that run
// out of credit call it (try-lock: one reader at a time), as do velo_connect and velo_wait.
static void on_ctl_msg(struct velo_ep* ep, unsigned node, unsigned vpid, const uint8_t* b, unsigned len) {
    struct velo_ctl_msg m;
    if (len != VELO_CTL_BYTES || !VELO_IS_CTL_VPID(vpid, ep->vpid_bits)) {
        ++ep->st.ctl_bad;
        return;
    }
    memcpy(&m, b, sizeof m);
    if (m.magic != VELO_CTL_MAGIC) {
        ++ep->st.ctl_bad;
        return;
    }
    struct velo_conn* c = conn_find(ep, node, vpid & ~VELO_CTL_VPID_BIT(ep->vpid_bits));
    if (!c || c->epoch != m.epoch) return;  // stale: an earlier connection
    uint32_t st = atomic_load(&c->state);
    if (st != CONN_PENDING && st != CONN_OPEN) return;
    switch (m.type) {
        case VELO_CTL_CREDIT:
            ++ep->st.credit_msgs_rx;
            if (st == CONN_PENDING) {
                c->window = m.window;
                c->limit_seen = m.limit;
                atomic_fetch_add(c->credit, VELO_CREDIT_OFF + (int32_t)m.limit);
                atomic_store(&c->state, CONN_OPEN);
            } else if ((int32_t)(m.limit - c->limit_seen) > 0) {
                atomic_fetch_add(c->credit, (int32_t)(m.limit - c->limit_seen));
                c->limit_seen = m.limit;
            }
            atomic_fetch_add(&c->credit_gen, 1);
            break;
        case VELO_CTL_AREA:
            if (st == CONN_PENDING && m.window >= VELO_SLOT_LOG2_MIN && m.window <= VELO_SLOT_LOG2_MAX) {
                c->area_nla = (uint64_t)m.limit | (uint64_t)m.rsvd << 32;
                c->slot_log2 = m.window;
            } else {
                ++ep->st.ctl_bad;
            }
            break;
        case VELO_CTL_RELEASE:
            if ((int32_t)(m.limit - atomic_load(&c->large_rel)) > 0) atomic_store(&c->large_rel, m.limit);
            break;
        case VELO_CTL_REFUSE:
        case VELO_CTL_RESET:
            if (st == CONN_OPEN) atomic_fetch_sub(c->credit, VELO_CREDIT_OFF);
            atomic_store(&c->state, m.type == VELO_CTL_REFUSE ? CONN_REFUSED : CONN_RESET);
            break;
        default:
            ++ep->st.ctl_bad;
    }
}

int velo__ctl_progress(struct velo_ep* ep, int blocking) {
    if (blocking) {
        pthread_mutex_lock(&ep->ctl_lock);
    } else if (pthread_mutex_trylock(&ep->ctl_lock)) {
        return 0;
    }
    int n = 0;
    if (!ep->closed) {
        struct velo_ring* r = &ep->ctl;
        for (;;) {
            struct entry e;
            const uint8_t* cur = r->cur;
            int k = read_entry(r, &cur, &r->expect, &r->pass, &e);
            if (k == 0) break;
            r->cur = (uint8_t*)cur;
            if (k < 0) {
                ++ep->st.ctl_bad;
                continue;
            }
            const uint8_t* bytes = e.area + e.off % 4;
            uint8_t whole[64];
            unsigned len = e.flen;
            if (e.h & VH_FRAG) {
                if (velo_rc_add(&ep->ctl_rc, e.node, e.vpid, e.mlen, e.off, bytes, e.flen, whole) != 1) continue;
                bytes = whole;
                len = e.mlen;
            }
            on_ctl_msg(ep, e.node, e.vpid, bytes, len);
            ++n;
        }
        const uint32_t rp = velo__ring_rp(r, r->cur);
        if (rp - r->rp_nic >= r->lines / 4) {
            ep->be->write_rp(ep, r, rp);
            r->rp_nic = rp;
            ++ep->st.rp_updates;
        }
    }
    pthread_mutex_unlock(&ep->ctl_lock);
    return n;
}

static int wait_loop(velo_ep_t* ep, velo_msg_t* msg, int timeout_ms) {
    const int64_t deadline = timeout_ms < 0 ? INT64_MAX : now_ns() + (int64_t)timeout_ms * 1000000;
    int r;
    for (unsigned i = 0; i < ep->be->spin_polls; ++i) {
        r = velo_poll(ep, msg);
        if (r != -EAGAIN) return r;
        cpu_relax();
    }
    for (;;) {
        // idle: give the NIC the read pointer now rather than at the next batch point
        if (!ep->divert && velo__ring_rp(&ep->data, ep->cur) != ep->data.rp_nic) velo__batch(ep);
        velo__ctl_progress(ep, 0);
        r = velo_poll(ep, msg);
        if (r != -EAGAIN) return r;
        if (ep->dead) return -EPIPE;
        int64_t left = deadline == INT64_MAX ? -1 : deadline - now_ns();
        if (deadline != INT64_MAX && left <= 0) return -ETIMEDOUT;
        r = ep->be->sleep(ep, left);
        if (r == -EINTR || r == -EPIPE) return r;
    }
}

int velo_wait(velo_ep_t* ep, velo_msg_t* msg, int timeout_ms) {
    if (!ep || !msg || timeout_ms < -1) return -EINVAL;
    int r = velo_poll(ep, msg);
    if (r != -EAGAIN) return r;
    if (timeout_ms == 0) return -ETIMEDOUT;
    if (ep->be->wait_state) ep->be->wait_state(ep, 1);
    r = wait_loop(ep, msg, timeout_ms);
    if (ep->be->wait_state && !ep->closed) ep->be->wait_state(ep, 0);
    return r;
}

// ============================================================================ send
static int send_big(velo_conn_t* c, const void* buf, size_t len);
static int take_credit(velo_conn_t* c, int32_t lines);

static VELO_COLD int send_bad(velo_conn_t* c, const void* buf, size_t len) {
    if (!c || !buf || len == 0) return -EINVAL;
    if (len > VELO_MSG_MAX_BYTES) return send_big(c, buf, len);
    return -EINVAL;
}

// One message of 1..64 bytes into its line of a granted page: the hw stores, or the sim store
// channel with what those stores would put in the WC buffer.
static int store_msg(struct velo_ep* ep, int page, uint8_t* win, const void* buf, size_t len) {
    if (win) {
        velo__hw_store_slow(win + (len - 1) * 64, buf, len);
        return 0;
    }
    uint8_t tmp[64] __attribute__((aligned(16)));
    unsigned bytes = len <= 8 ? 8u : (unsigned)((len + 15) & ~(size_t)15);
    memcpy(tmp, buf, len);
    memset(tmp + len, 0, 64 - len);
    return ep->be->store(ep, page, NULL, (unsigned)(len - 1) * 64u, tmp, bytes);
}

int velo__sim_send(struct velo_conn* c, const void* buf, size_t len) {
    return store_msg(c->ep, (int)c->page, NULL, buf, len);
}

// No credit on the fast path (or a sim connection): the state, the control ring, a reservation
// on the connection's credit counter, the stores.
static VELO_NOINLINE int send_slow(velo_conn_t* c, const void* buf, size_t len, int32_t lines) {
    atomic_fetch_add_explicit(&c->left, lines, memory_order_relaxed);  // undo the fast path's reservation
    struct velo_ep* ep = c->ep;
    if (ep->closed) return -EBADF;
    int r = take_credit(c, lines);
    return r ? r : store_msg(ep, (int)c->page, c->win, buf, len);
}

// Take `lines` of the connection's credit (reading the control ring once if there is too little).
// 0, or the connection's state as an error, or -EAGAIN.
static int take_credit(velo_conn_t* c, int32_t lines) {
    struct velo_ep* ep = c->ep;
    for (int attempt = 0; attempt < 2; ++attempt) {
        uint32_t st = atomic_load(&c->state);
        if (st == CONN_CLOSED || st == CONN_REFUSED) return -ENOTCONN;
        if (st == CONN_RESET) return -ECONNRESET;
        if (ep->dead) return -EPIPE;
        int32_t cur = atomic_load(c->credit);
        while (cur >= lines)
            if (atomic_compare_exchange_weak(c->credit, &cur, cur - lines)) return 0;
        if (attempt == 0) velo__ctl_progress(ep, 0);
    }
    atomic_fetch_add(&ep->send_eagain, 1);
    if (ep->be->no_credit) ep->be->no_credit(ep);
    return -EAGAIN;
}

// A train: one-line pieces from our control vpid, on the connection's credit (all of them taken
// before the first store, so a train never waits half-sent).
static int send_train(velo_conn_t* c, const uint8_t* buf, size_t len) {
    struct velo_ep* ep = c->ep;
    const unsigned n = velo__train_pieces(len);
    int r = take_credit(c, (int32_t)n);
    const uint32_t g = atomic_load(&c->credit_gen);
    if (r == -EAGAIN && c->req_gen != g + 1 && take_credit(c, 1) == 0) {
        // The receiver returns credit in batches: up to a batch of lines may stay unreturned
        // while it has read everything, fewer than a train needs. Ask for it (once per return,
        // on a credit line of its own: there always is one when the window is not used up, and
        // when it is, the batches return it anyway).
        c->req_gen = g + 1;  // asked since credit return g
        send_ctl(ep, c->ctl_page, c->ctl_win, VELO_CTL_CREDIT_REQ, c->epoch, 0, 0);
    }
    if (r) return r;
    uint8_t piece[VELO_TRAIN_PIECE];
    struct velo_train_hdr h = {.magic = VELO_CTL_MAGIC, .type = VELO_CTL_TRAIN, .rsvd = 0, .len = (uint32_t)len};
    memcpy(piece, &h, sizeof h);
    size_t k = len < VELO_TRAIN_FIRST ? len : VELO_TRAIN_FIRST;
    memcpy(piece + sizeof h, buf, k);
    r = store_msg(ep, c->ctl_page, c->ctl_win, piece, sizeof h + k);
    piece[0] = VELO_TRAIN_MAGIC;
    for (size_t off = k; r == 0 && off < len; off += k) {
        k = len - off < VELO_TRAIN_NEXT ? len - off : VELO_TRAIN_NEXT;
        memcpy(piece + 1, buf + off, k);
        r = store_msg(ep, c->ctl_page, c->ctl_win, piece, 1 + k);
    }
    if (r == 0) ++ep->st.trains_tx;
    return r;
}

// A put into the destination's receive area, then (once the data are visible there) the notice
// that delivers it, from our control vpid on the connection's credit: it arrives after every
// message this thread sent before, and before every one it sends after.
static int send_large(velo_conn_t* c, const void* buf, size_t len) {
    struct velo_ep* ep = c->ep;
    if (c->large_sent - atomic_load(&c->large_rel) >= VELO_AREA_SLOTS) {
        velo__ctl_progress(ep, 0);
        if (c->large_sent - atomic_load(&c->large_rel) >= VELO_AREA_SLOTS) {
            ++ep->st.large_eagain;
            atomic_fetch_add(&ep->send_eagain, 1);
            if (ep->be->no_credit) ep->be->no_credit(ep);
            return -EAGAIN;
        }
    }
    int r = take_credit(c, 1);  // the notice's line, before the put: a put is never left undelivered
    if (r) return r;
    const uint32_t slot = c->large_sent % VELO_AREA_SLOTS;
    r = velo__rma_put_sync(ep, (velo_addr_t){c->node, c->vpid}, buf, c->area_nla + ((uint64_t)slot << c->slot_log2),
                           len);
    if (r == 0) {
        struct velo_ctl_msg m = {.magic = VELO_CTL_MAGIC,
                                 .type = VELO_CTL_LARGE,
                                 .window = (uint16_t)slot,
                                 .epoch = c->epoch,
                                 .limit = (uint32_t)len,
                                 .rsvd = 0};
        r = store_ctl(ep, c->ctl_page, c->ctl_win, &m);
    } else {
        atomic_fetch_add(c->credit, 1);
    }
    if (r == 0) {
        ++c->large_sent;
        ++ep->st.large_tx;
    }
    return r;
}

// velo_send of more than 64 bytes: a train up to the crossover, a put into the receive area above
// it (or a train when the destination has no area and the train fits a credit window).
static VELO_COLD int send_big(velo_conn_t* c, const void* buf, size_t len) {
    struct velo_ep* ep = c->ep;
    if (ep->closed) return -EBADF;
    pthread_mutex_lock(&c->big_lock);
    int r;
    uint32_t st = atomic_load(&c->state);
    if (st == CONN_CLOSED || st == CONN_REFUSED)
        r = -ENOTCONN;
    else if (st == CONN_RESET)
        r = -ECONNRESET;
    else if (st == CONN_PENDING)
        r = -EAGAIN;  // (the area, if any, is known when the connection opens)
    else {
        const int train_ok = len <= VELO_TRAIN_MAX && velo__train_pieces(len) <= c->window / 2;
        const int area_ok = c->slot_log2 && len <= (size_t)1 << c->slot_log2;
        if (train_ok && (len <= ep->crossover || !area_ok))
            r = send_train(c, buf, len);
        else if (area_ok) {
            r = send_large(c, buf, len);
            if (r == -ENOTSUP && train_ok) r = send_train(c, buf, len);  // no RMA on this side
            if (r == -ENOTSUP) r = -EMSGSIZE;
        } else
            r = -EMSGSIZE;
    }
    pthread_mutex_unlock(&c->big_lock);
    return r;
}

static VELO_NOINLINE int send_any(velo_conn_t* c, const void* buf, size_t len) {
    if (VELO_UNLIKELY(len - 1 >= VELO_MSG_MAX_BYTES || !c || !buf)) return send_bad(c, buf, len);
    const int32_t lines = (int32_t)velo__msg_lines((unsigned)len);
    if (VELO_UNLIKELY(atomic_fetch_sub_explicit(&c->left, lines, memory_order_relaxed) < lines))
        return send_slow(c, buf, len, lines);
    velo__hw_store_slow(c->win + (len - 1) * 64, buf, len);
    return 0;
}

// The send fast path: take the message's ring lines from the connection's credit (one atomic
// fetch-sub, no lock: any number of threads), then the stores and the fence. Eight bytes (one
// quadword store) is the short path; every other length goes through send_any.
int velo_send(velo_conn_t* c, const void* buf, size_t len) {
    if (VELO_LIKELY(len == 8)) {
        if (VELO_UNLIKELY(!c || !buf)) return -EINVAL;
        if (VELO_UNLIKELY(atomic_fetch_sub_explicit(&c->left, 1, memory_order_relaxed) < 1))
            return send_slow(c, buf, 8, 1);
        uint64_t q;
        memcpy(&q, buf, 8);
        *(volatile uint64_t*)(c->win + 7 * 64) = q;
#if VELO_HAVE_SSE
        _mm_sfence();
#else
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
        return 0;
    }
    return send_any(c, buf, len);
}

// ============================================================================ connections
// End a connection locally: no more credit.
static void conn_end(struct velo_conn* c, uint32_t state) {
    if (atomic_exchange(&c->state, state) == CONN_OPEN) atomic_fetch_sub(c->credit, VELO_CREDIT_OFF);
}

int velo_connect(velo_ep_t* ep, velo_addr_t dst, unsigned flags, velo_conn_t** out) {
    if (!ep || !out || (flags & ~(VELO_CONNECT_NOWAIT | VELO_CONNECT_SMALL))) return -EINVAL;
    *out = NULL;
    if (ep->closed) return -EBADF;
    if (dst.node >= (1u << ep->node_bits) || dst.vpid >= (1u << ep->vpid_bits) ||
        VELO_IS_CTL_VPID(dst.vpid, ep->vpid_bits))
        return -EINVAL;
    if (ep->dead) return -EPIPE;
    pthread_mutex_lock(&ep->lock);
    struct velo_conn* c = conn_find(ep, dst.node, dst.vpid);
    uint32_t st = c ? atomic_load(&c->state) : 0;
    if (!c) {
        if (ep->nconns >= ep->max_conns) {
            pthread_mutex_unlock(&ep->lock);
            return -ENOSPC;
        }
        c = calloc(1, sizeof *c);
        if (!c) {
            pthread_mutex_unlock(&ep->lock);
            return -ENOMEM;
        }
        c->ep = ep;
        c->node = dst.node;
        c->vpid = dst.vpid;
        pthread_mutex_init(&c->big_lock, NULL);
        atomic_store(&c->left, -VELO_CREDIT_OFF);
        atomic_store(&c->sim_left, -VELO_CREDIT_OFF);
        int g = ep->be->grant(ep, VELO_GRANT_FROM_DATA, dst.node, dst.vpid, &c->win);
        int k = g >= 0 ? ep->be->grant(ep, VELO_GRANT_FROM_CTL, dst.node, dst.vpid, &c->ctl_win) : g;
        if (g < 0 || k < 0) {
            if (g >= 0) ep->be->revoke(ep, g, c->win);
            free(c);
            pthread_mutex_unlock(&ep->lock);
            return g < 0 ? g : k;
        }
        // hw: credits on the fast path's counter; sim: on their own, the fast path always misses
        c->credit = c->win ? &c->left : &c->sim_left;
        c->page = (uint32_t)g;
        c->ctl_page = k;
        pthread_mutex_lock(&ep->ctl_lock);
        c->hnext = ep->conn_hash[hkey(dst.node, dst.vpid)];
        ep->conn_hash[hkey(dst.node, dst.vpid)] = c;
        c->all_next = ep->conns;
        ep->conns = c;
        ++ep->nconns;
        pthread_mutex_unlock(&ep->ctl_lock);
        st = 0;
    }
    if (st != CONN_OPEN && st != CONN_PENDING) {
        // a new epoch: no credit until the destination answers (do not send on a connection
        // from other threads while it is being revived)
        pthread_mutex_lock(&ep->ctl_lock);
        c->epoch = ++ep->epoch_next;
        atomic_store(c->credit, -VELO_CREDIT_OFF);
        c->limit_seen = 0;
        c->flags = flags;
        c->slot_log2 = 0;  // until the destination offers an area (AREA, before its credit)
        c->large_sent = 0;
        atomic_store(&c->large_rel, 0);
        c->req_gen = atomic_load(&c->credit_gen);  // (never g + 1: no request out)
        atomic_store(&c->state, CONN_PENDING);
        pthread_mutex_unlock(&ep->ctl_lock);
        const unsigned want = (flags & VELO_CONNECT_SMALL) || !ep->be->rma_map ? 0u : VELO_CTL_CONNECT_AREA;
        int r = send_ctl(ep, c->ctl_page, c->ctl_win, VELO_CTL_CONNECT, c->epoch, 0, want);
        if (r < 0) {
            atomic_store(&c->state, CONN_CLOSED);
            pthread_mutex_unlock(&ep->lock);
            return r;
        }
    }
    pthread_mutex_unlock(&ep->lock);
    *out = c;
    if (flags & VELO_CONNECT_NOWAIT) return 0;
    // wait for the answer, reading our own endpoint meanwhile (connection requests of others
    // are answered; their messages are kept for velo_poll; long ones as copies)
    if (ep->held || ep->held_copy) release_held(ep);
    const int64_t deadline = now_ns() + (int64_t)ep->connect_timeout_ms * 1000000;
    for (;;) {
        velo__ctl_progress(ep, 1);
        st = atomic_load(&c->state);
        if (st == CONN_OPEN) return 0;
        if (st != CONN_PENDING) {
            *out = NULL;
            return st == CONN_REFUSED ? -ENOSPC : st == CONN_RESET ? -ECONNRESET : -ENOTCONN;
        }
        velo_msg_t m;
        int got = 0;
        while (poll_ring(ep, &m) > 0) {
            if (m.len == 0) {
                void* copy = malloc(m.size);
                if (copy) memcpy(copy, m.ptr, m.size);
                release_held(ep);  // its area slot goes back to the sender
                if (!copy) {
                    ++ep->st.ctl_bad;  // (out of memory: the message is lost, and counted)
                    continue;
                }
                m.ptr = copy;
            }
            if (ep->q_len == ep->q_cap) {
                unsigned ncap = ep->q_cap ? ep->q_cap * 2 : 64;
                velo_msg_t* nq = malloc(ncap * sizeof *nq);
                if (!nq) {
                    if (!m.len) free((void*)m.ptr);
                    break;
                }
                for (unsigned i = 0; i < ep->q_len; ++i) nq[i] = ep->q[(ep->q_head + i) % ep->q_cap];
                free(ep->q);
                ep->q = nq;
                ep->q_head = 0;
                ep->q_cap = ncap;
            }
            ep->q[(ep->q_head + ep->q_len++) % ep->q_cap] = m;
            got = 1;
        }
        if (ep->q_len) divert(ep, DIVERT_QUEUE);
        if (got) continue;
        if (velo__ring_rp(&ep->data, ep->cur) != ep->data.rp_nic) velo__batch(ep);
        int64_t left = deadline - now_ns();
        if (left <= 0 || ep->dead) {
            velo_disconnect(c);
            *out = NULL;
            return ep->dead ? -EPIPE : -ETIMEDOUT;
        }
        int r = ep->be->sleep(ep, left < 10000000 ? left : 10000000);
        if (r == -EINTR) {
            // keep the connection pending: a later velo_connect waits again
            *out = NULL;
            return -EINTR;
        }
    }
}

int velo_disconnect(velo_conn_t* c) {
    if (!c) return -EINVAL;
    struct velo_ep* ep = c->ep;
    if (ep->closed) return -EBADF;
    pthread_mutex_lock(&ep->lock);
    uint32_t st = atomic_load(&c->state);
    if (st != CONN_OPEN && st != CONN_PENDING) {
        pthread_mutex_unlock(&ep->lock);
        return -ENOTCONN;
    }
    conn_end(c, CONN_CLOSED);
    int r = send_ctl(ep, c->ctl_page, c->ctl_win, VELO_CTL_DISCONNECT, c->epoch, 0, 0);
    pthread_mutex_unlock(&ep->lock);
    return r < 0 ? r : 0;
}

int velo_conn_addr(const velo_conn_t* c, velo_addr_t* dst) {
    if (!c || !dst) return -EINVAL;
    if (c->ep->closed) return -EBADF;
    dst->node = c->node;
    dst->vpid = c->vpid;
    return 0;
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

int velo__ep_init(struct velo_ep* ep, const velo_open_attr_t* a) {
    // messages > 64 B: the crossover and the receive area's slot size (docs/api.md)
    int x, smax;
    if (env_int("VELO_SEND_CROSSOVER", VELO_CROSSOVER_DEFAULT, &x) || x < 0) return -EINVAL;
    if (env_int("VELO_SEND_MAX", 1 << VELO_SLOT_LOG2_DEFAULT, &smax) || smax < 0 ||
        (smax && (smax < 1 << VELO_SLOT_LOG2_MIN || smax > 1 << VELO_SLOT_LOG2_MAX)))
        return -EINVAL;
    ep->crossover = (uint32_t)x;
    ep->slot_log2 = 0;
    if (smax)
        while ((1u << ep->slot_log2) < (unsigned)smax) ++ep->slot_log2;
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
void velo__ep_finish(struct velo_ep* ep) {
    const uint32_t lines = ep->data.lines;
    uint32_t batch_max = lines / 16 > 32 ? 32 : lines / 16;
    uint32_t resv = (lines / 8 > VELO_CONNECT_RESERVE ? VELO_CONNECT_RESERVE : lines / 8) +
                    (lines / 8 > VELO_FRAG_RESERVE ? VELO_FRAG_RESERVE : lines / 8);
    ep->pool_free = lines - batch_max - 2 - resv;
    ep->window_max = ep->pool_free < VELO_CREDIT_WINDOW_MAX ? ep->pool_free : VELO_CREDIT_WINDOW_MAX;
    ep->max_conns = (ep->ctl.lines - ep->ctl.lines / 4) / VELO_CTL_PER_CONN;
    ep->slow_mask = VH_FRAG | VH_LINES2 | VH_RSVD | (1ull << VELO_MBOX_HDR_TAIL_SHIFT) |
                    (1ull << (VELO_MBOX_HDR_SRC_VPID_SHIFT + ep->vpid_bits - 1));
    recompute_batch(ep);
    velo__set_phase(ep);
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
    const char* dev = a.device ? a.device : getenv("VELO_DEVICE");
    struct velo_ep* ep = calloc(1, sizeof *ep);
    if (!ep) return -ENOMEM;
    int r0;
    if ((r0 = velo__ep_init(ep, &a)) != 0) {
        free(ep);
        return r0;
    }
    int r;
    if (dev && *dev) {
        if (strcmp(dev, "hw") == 0)
            r = velo__hw_open(ep, VELO_DEV_PREFIX "0", &a);
        else if (strncmp(dev, "hw:", 3) == 0 && dev[3])
            r = velo__hw_open(ep, dev + 3, &a);
        else if (strcmp(dev, "sim") == 0)
            r = velo__sim_open(ep, NULL, &a);
        else if (strncmp(dev, "sim:", 4) == 0 && dev[4])
            r = velo__sim_open(ep, dev + 4, &a);
        else
            r = -EINVAL;
    } else {
        char sock[256];
        struct stat sb;
        if (access(VELO_DEV_PREFIX "0", F_OK) == 0) {
            r = velo__hw_open(ep, VELO_DEV_PREFIX "0", &a);
        } else if (velo_sim_default_socket(sock, sizeof sock) == 0 && stat(sock, &sb) == 0 && S_ISSOCK(sb.st_mode)) {
            r = velo__sim_open(ep, sock, &a);
        } else {
            r = -ENODEV;
        }
    }
    if (r < 0) {
        free(ep->counts);
        velo_rc_free(&ep->rc);
        velo_rc_free(&ep->ctl_rc);
        pthread_mutex_destroy(&ep->lock);
        pthread_mutex_destroy(&ep->ctl_lock);
        pthread_mutex_destroy(&ep->rma_lock);
        free(ep);
        return r;
    }
    velo__ep_finish(ep);
    *out = ep;
    return 0;
}

// closed endpoints (reachable, so leak checkers do not count them)
static struct velo_ep* graveyard;
static pthread_mutex_t graveyard_lock = PTHREAD_MUTEX_INITIALIZER;

int velo_close(velo_ep_t* ep) {
    if (!ep) return -EINVAL;
    if (ep->closed) return -EBADF;
    pthread_mutex_lock(&ep->lock);
    if (!ep->dead) {
        // tell the destinations we leave, and the senders that we are gone
        for (struct velo_conn* c = ep->conns; c; c = c->all_next) {
            uint32_t st = atomic_load(&c->state);
            if (st == CONN_OPEN || st == CONN_PENDING)
                send_ctl(ep, c->ctl_page, c->ctl_win, VELO_CTL_DISCONNECT, c->epoch, 0, 0);
        }
        for (unsigned i = 0; i < 256; ++i)
            for (struct velo_peer* p = ep->peer_hash[i]; p; p = p->hnext)
                if (p->window && p->reply_page >= 0)
                    send_ctl(ep, p->reply_page, p->reply_win, VELO_CTL_RESET, p->epoch, 0, 0);
    }
    pthread_mutex_lock(&ep->ctl_lock);
    for (struct velo_conn* c = ep->conns; c; c = c->all_next) {
        conn_end(c, CONN_CLOSED);
        c->ctl_win = NULL;  // (win stays: a racing sender's store lands in a page that is unmapped or never used)
    }
    ep->closed = 1;
    velo__rma_close(ep);  // the driver deregisters the regions at close
    ep->be->close(ep);    // the driver/fabric quiesces the vpids before it frees the rings
    pthread_mutex_unlock(&ep->ctl_lock);
    for (unsigned i = 0; i < 256; ++i) {
        struct velo_peer* p = ep->peer_hash[i];
        while (p) {
            struct velo_peer* n = p->hnext;
            area_free(p);  // (the driver dropped the registration and quiesced the NIC at close)
            free(p->train);
            free(p);
            p = n;
        }
        ep->peer_hash[i] = NULL;
    }
    free(ep->active);
    ep->active = NULL;
    ep->nactive = ep->active_cap = 0;
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
    divert(ep, DIVERT_CLOSED);
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
    addr->node = ep->node;
    addr->vpid = ep->vpid;
    return 0;
}

int velo_info(const velo_ep_t* ep, velo_info_t* info) {
    if (!ep || !info) return -EINVAL;
    if (ep->closed) return -EBADF;
    memset(info, 0, sizeof *info);
    snprintf(info->backend, sizeof info->backend, "%s", ep->be->name);
    info->node_bits = ep->node_bits;
    info->vpid_bits = ep->vpid_bits;
    info->nodes = ep->nodes;
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
    return ep->be->clock(ep, now, last_rx);
}
