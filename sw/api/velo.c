// SPDX-License-Identifier: MIT
// libvelo: the message API (send, poll, wait, connect) with its fast paths, the rings and their
// entries. The protocol behind it (credits, trains, receive areas, control messages) is in
// velo_proto.c, endpoints (open, close, info) in velo_ep.c; docs/api.md has the user's view.
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "velo/velo_uapi.h"
#include "velo_ep.h"
#include "velo_proto.h"

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

int64_t velo__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
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

// The read pointer of a ring to the NIC: a store into its MB_RP register, or the backend's.
int velo__write_rp(struct velo_ep* ep, struct velo_ring* r, uint32_t rp) {
    if (r->rp_reg) {
        // an uncached store into the vpid's own BAR0 page, posted in order behind earlier sends
        *r->rp_reg = rp & ((1u << VELO_MBOX_PTR_BITS) - 1);
        return 0;
    }
    return ep->be->write_rp(&ep->b, r->index, rp);
}

// The backend's sleep until a line at either ring's read pointer may have changed.
static void fill_wait(struct velo_ep* ep, struct velo_be_wait* w) {
    w->data_cur = ep->cur;
    w->data_expect = ep->expect;
    w->data_rp = ep->divert ? 0 : velo__ring_rp(&ep->data, ep->cur);
    w->ctl_cur = ep->ctl.cur;
    w->ctl_expect = ep->ctl.expect;
    w->ctl_rp = velo__ring_rp(&ep->ctl, ep->ctl.cur);
    w->pending = ep->divert;
}

int velo__sleep(struct velo_ep* ep, int64_t timeout_ns) {
    struct velo_be_wait w = {0};
    fill_wait(ep, &w);
    return ep->be->sleep(&ep->b, &w, timeout_ns);
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

void velo__divert(struct velo_ep* ep, int why) {
    ep->divert = why;
    velo__set_phase(ep);
}

static void undivert(struct velo_ep* ep) {
    ep->divert = 0;
    velo__set_phase(ep);
}

// One entry of a ring, read with the tearing rules of MBOX_HDR: the header word is read first
// (acquire), and the payload only after the phase says the entry is there.

// Read the entry at *cur (phase *expect) of ring r and advance past it. 1: read, 0: none,
// -1: a corrupt line skipped.
int velo__read_entry(const struct velo_ring* r, const uint8_t** cur, uint64_t* expect, uint32_t* pass,
                     struct velo_entry* e) {
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

// ============================================================================ receive
// Read the data ring, handling control messages and fragments, until a message for the user is
// complete (its length) or the ring is empty (-EAGAIN).
static int poll_ring(struct velo_ep* ep, velo_msg_t* m) {
    for (;;) {
        struct velo_entry e;
        const uint32_t from = velo__ring_rp(&ep->data, ep->cur);
        int r = velo__read_entry(&ep->data, &ep->cur, &ep->expect, &ep->data.pass, &e);
        if (r == 0) return -EAGAIN;
        velo__set_phase(ep);
        if (r < 0) {
            ++ep->st.ctl_bad;
            velo__crossed(ep, from);
            continue;
        }
        const int ctl = VELO_IS_CTL_VPID(e.vpid, ep->b.vpid_bits);
        const uint8_t* bytes = e.area + e.off % 4;
        uint8_t whole[64];
        unsigned len = e.flen;
        // the lines of the library's messages (trains, LARGE notices) count as the sender's: they
        // take its credit (connection requests are counted before the window begins)
        const uint32_t key = velo__src_key(e.node, e.vpid & ~VELO_CTL_VPID_BIT(ep->b.vpid_bits));
        if (e.h & VH_FRAG) {
            ++ep->st.frags_rx;
            // a fragmented message counts once, with its first piece
            if (e.off == 0) ep->counts[key] += velo__msg_lines(e.mlen);
            int k = velo_rc_add(&ep->rc, e.node, e.vpid, e.mlen, e.off, bytes, e.flen, whole);
            if (k != 1) {
                velo__crossed(ep, from);
                continue;
            }
            bytes = whole;
            len = e.mlen;
        } else {
            ep->counts[key] += e.lines;
        }
        if (ctl) {
            int n = velo__on_data_ctl(ep, e.node, e.vpid, bytes, len, m);
            velo__crossed(ep, from);
            if (n > 0) return n;
            continue;
        }
        memcpy(m->data, bytes, len);
        m->src_node = (uint8_t)e.node;
        m->src_vpid = (uint8_t)e.vpid;
        m->len = (uint16_t)len;
        velo__crossed(ep, from);
        return (int)len;
    }
}

static int poll_slow(struct velo_ep* ep, velo_msg_t* m) {
    if (!m) return -EINVAL;
    if (ep->divert) {
        if (ep->closed) return -EBADF;
        if (ep->held || ep->held_copy) velo__release_held(ep);
        if (ep->q_len) {
            *m = ep->q[ep->q_head];
            ep->q_head = (ep->q_head + 1) % ep->q_cap;
            if (--ep->q_len == 0) undivert(ep);
            if (m->len) return m->len;
            velo__hold(ep, NULL, (void*)m->ptr);  // the queue's copy: freed at the next receive
            return (int)m->size;
        }
        undivert(ep);
    }
    return poll_ring(ep, m);
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
    const uint16_t src = (uint16_t)velo__src_key(VH_GET(SRC_NODE, h), VH_GET(SRC_VPID, h));
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
static int wait_loop(velo_ep_t* ep, velo_msg_t* msg, int timeout_ms) {
    const int64_t deadline = timeout_ms < 0 ? INT64_MAX : velo__now_ns() + (int64_t)timeout_ms * 1000000;
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
        if (ep->b.dead) return -EPIPE;
        int64_t left = deadline == INT64_MAX ? -1 : deadline - velo__now_ns();
        if (deadline != INT64_MAX && left <= 0) return -ETIMEDOUT;
        r = velo__sleep(ep, left);
        if (r == -EINTR || r == -EPIPE) return r;
    }
}

int velo_wait(velo_ep_t* ep, velo_msg_t* msg, int timeout_ms) {
    if (!ep || !msg || timeout_ms < -1) return -EINVAL;
    int r = velo_poll(ep, msg);
    if (r != -EAGAIN) return r;
    if (timeout_ms == 0) return -ETIMEDOUT;
    if (ep->be->wait_state) ep->be->wait_state(&ep->b, 1);
    r = wait_loop(ep, msg, timeout_ms);
    if (ep->be->wait_state && !ep->closed) ep->be->wait_state(&ep->b, 0);
    return r;
}

// Whether velo_idle can return: control traffic handled now, a message, or RMA work (1); else 0
// with what to sleep on in *w.
static int idle_ready(velo_ep_t* ep, struct velo_be_wait* w) {
    if (velo__ctl_progress(ep, 0) > 0) return 1;
    if (ep->divert || phase_bit(ep->cur) == (ep->expect & 1)) return 1;
    if (velo__rma_ready(ep, w)) return 1;
    fill_wait(ep, w);
    return 0;
}

int velo_idle(velo_ep_t* ep, int timeout_ms) {
    if (!ep || timeout_ms < -1) return -EINVAL;
    if (ep->closed) return -EBADF;
    struct velo_be_wait w = {0};
    int r = idle_ready(ep, &w);
    if (r || timeout_ms == 0) return r;
    const int64_t deadline = timeout_ms < 0 ? INT64_MAX : velo__now_ns() + (int64_t)timeout_ms * 1000000;
    if (ep->be->wait_state) ep->be->wait_state(&ep->b, 1);
    for (unsigned i = 0;; ++i) {
        if ((r = idle_ready(ep, &w)) != 0) break;
        if (ep->b.dead) {
            r = -EPIPE;
            break;
        }
        if (i < ep->be->spin_polls) {
            cpu_relax();
            continue;
        }
        // idle: give the NIC the read pointer now rather than at the next batch point
        if (!ep->divert && velo__ring_rp(&ep->data, ep->cur) != ep->data.rp_nic) velo__batch(ep);
        const int64_t left = deadline == INT64_MAX ? -1 : deadline - velo__now_ns();
        if (deadline != INT64_MAX && left <= 0) break;
        const int e = ep->be->sleep(&ep->b, &w, left);
        if (e == -EINTR || e == -EPIPE) {
            r = e;
            break;
        }
    }
    if (ep->be->wait_state && !ep->closed) ep->be->wait_state(&ep->b, 0);
    return r;
}

// ============================================================================ send
static VELO_COLD int send_bad(velo_conn_t* c, const void* buf, size_t len) {
    if (!c || !buf || len == 0) return -EINVAL;
    if (len > VELO_MSG_MAX_BYTES) return velo__send_big(c, buf, len);
    return -EINVAL;
}

// One message of 1..64 bytes into its line of a granted page: the hw stores, or the sim store
// channel with what those stores would put in the WC buffer.
int velo__store_msg(struct velo_ep* ep, int page, uint8_t* win, const void* buf, size_t len) {
    if (win) {
        velo__wc_store(win + (len - 1) * 64, buf, len);
        return 0;
    }
    if (!ep->be->store) return -EINVAL;  // a backend with mappings: no window, no store
    uint8_t tmp[64] __attribute__((aligned(16)));
    unsigned bytes = len <= 8 ? 8u : (unsigned)((len + 15) & ~(size_t)15);
    memcpy(tmp, buf, len);
    memset(tmp + len, 0, 64 - len);
    return ep->be->store(&ep->b, page, NULL, (unsigned)(len - 1) * 64u, tmp, bytes);
}

// No credit on the fast path (or a sim connection): the state, the control ring, a reservation
// on the connection's credit counter, the stores.
static VELO_NOINLINE int send_slow(velo_conn_t* c, const void* buf, size_t len, int32_t lines) {
    atomic_fetch_add_explicit(&c->left, lines, memory_order_relaxed);  // undo the fast path's reservation
    struct velo_ep* ep = c->ep;
    if (ep->closed) return -EBADF;
    int r = velo__take_credit(c, lines);
    return r ? r : velo__store_msg(ep, (int)c->page, c->win, buf, len);
}

static VELO_NOINLINE int send_any(velo_conn_t* c, const void* buf, size_t len) {
    if (VELO_UNLIKELY(len - 1 >= VELO_MSG_MAX_BYTES || !c || !buf)) return send_bad(c, buf, len);
    const int32_t lines = (int32_t)velo__msg_lines((unsigned)len);
    if (VELO_UNLIKELY(atomic_fetch_sub_explicit(&c->left, lines, memory_order_relaxed) < lines))
        return send_slow(c, buf, len, lines);
    velo__wc_store(c->win + (len - 1) * 64, buf, len);
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
int velo_connect(velo_ep_t* ep, velo_addr_t dst, unsigned flags, velo_conn_t** out) {
    if (!ep || !out || (flags & ~(VELO_CONNECT_NOWAIT | VELO_CONNECT_SMALL))) return -EINVAL;
    *out = NULL;
    if (ep->closed) return -EBADF;
    if (dst.node >= (1u << ep->b.node_bits) || dst.vpid >= (1u << ep->b.vpid_bits) ||
        VELO_IS_CTL_VPID(dst.vpid, ep->b.vpid_bits))
        return -EINVAL;
    if (ep->b.dead) return -EPIPE;
    pthread_mutex_lock(&ep->lock);
    struct velo_conn* c = velo__conn_find(ep, dst.node, dst.vpid);
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
        int g = ep->be->grant(&ep->b, VELO_GRANT_FROM_DATA, dst.node, dst.vpid, &c->win);
        int k = g >= 0 ? ep->be->grant(&ep->b, VELO_GRANT_FROM_CTL, dst.node, dst.vpid, &c->ctl_win) : g;
        if (g < 0 || k < 0) {
            if (g >= 0) ep->be->revoke(&ep->b, g, c->win);
            free(c);
            pthread_mutex_unlock(&ep->lock);
            return g < 0 ? g : k;
        }
        // hw: credits on the fast path's counter; sim: on their own, the fast path always misses
        c->credit = c->win ? &c->left : &c->sim_left;
        c->page = (uint32_t)g;
        c->ctl_page = k;
        velo__conn_link(ep, c);
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
        int r = velo__send_ctl(ep, c->ctl_page, c->ctl_win, VELO_CTL_CONNECT, c->epoch, 0, want);
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
    if (ep->held || ep->held_copy) velo__release_held(ep);
    const int64_t deadline = velo__now_ns() + (int64_t)ep->connect_timeout_ms * 1000000;
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
                velo__release_held(ep);  // its area slot goes back to the sender
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
        if (ep->q_len) velo__divert(ep, DIVERT_QUEUE);
        if (got) continue;
        if (velo__ring_rp(&ep->data, ep->cur) != ep->data.rp_nic) velo__batch(ep);
        int64_t left = deadline - velo__now_ns();
        if (left <= 0 || ep->b.dead) {
            velo_disconnect(c);
            *out = NULL;
            return ep->b.dead ? -EPIPE : -ETIMEDOUT;
        }
        int r = velo__sleep(ep, left < 10000000 ? left : 10000000);
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
    velo__conn_end(c, CONN_CLOSED);
    int r = velo__send_ctl(ep, c->ctl_page, c->ctl_win, VELO_CTL_DISCONNECT, c->epoch, 0, 0);
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
