// SPDX-License-Identifier: MIT
// libvelo's protocol on the rings (velo_proto.h): end-to-end credits (the receiver's windows and
// batches, the sender's reservations), connection requests and their answers on the control
// ring, trains, and the receive areas of messages put by RMA (docs/api.md "Flow control",
// "Messages longer than 64 bytes").
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "velo/velo_uapi.h"
#include "velo_proto.h"

// ============================================================================ credits (receiver side)
static unsigned hkey(unsigned node, unsigned vpid) {
    return (node * 31u + vpid) & 255u;
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
    p->key = velo__src_key(node, vpid);
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

struct velo_conn* velo__conn_find(struct velo_ep* ep, unsigned node, unsigned vpid) {
    struct velo_conn* c = ep->conn_hash[hkey(node, vpid)];
    for (; c; c = c->hnext)
        if (c->node == node && c->vpid == vpid) return c;
    return NULL;
}

_Static_assert(sizeof(struct velo_ctl_msg) == VELO_CTL_BYTES && sizeof(struct velo_ctl_area) == VELO_CTL_AREA_BYTES,
               "control messages are 16 bytes, AREA 24");

static int store_ctl(struct velo_ep* ep, int page, uint8_t* win, const struct velo_ctl_msg* m) {
    return velo__store_msg(ep, page, win, m, VELO_CTL_BYTES);
}

int velo__send_ctl(struct velo_ep* ep, int page, uint8_t* win, unsigned type, uint32_t epoch, uint32_t limit,
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
void velo__recompute_batch(struct velo_ep* ep) {
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
        velo__write_rp(ep, r, rp);
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
        velo__send_ctl(ep, p->reply_page, p->reply_win, VELO_CTL_CREDIT, p->epoch, p->limit_sent, p->window);
        ++ep->st.credit_msgs_tx;
    }
}

void velo__batch(struct velo_ep* ep) {
    if (ep->closed) return;
    rp_to_nic(ep);
    for (unsigned i = 0; i < ep->nactive; ++i) credit_peer(ep, ep->active[i], 0);
}

// ---- messages longer than 64 bytes (docs/api.md "Messages longer than 64 bytes")

// The receive area for a sender that asked for one: two slots, registered for its puts and nobody
// else's (VELO_SCOPE_PEER: the sender's node and data vpid, which its NIC stamps on the puts). Made
// once per sender and kept across its reconnections (until velo_close).
static void area_make(struct velo_ep* ep, struct velo_peer* p) {
    if (p->area || !ep->slot_log2 || ep->area_failed) return;
    const size_t bytes = (size_t)VELO_AREA_SLOTS << ep->slot_log2;
    void* a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED) return;
    velo_region_t* reg;
    const velo_scope_t peer = {.kind = VELO_SCOPE_PEER, .node_lo = (uint8_t)p->node, .vpid_lo = (uint8_t)p->vpid};
    int r = velo_register(ep, a, bytes, VELO_ACCESS_REMOTE_WRITE, &peer, &reg);
    if (r < 0) {
        munmap(a, bytes);
        // no RMA here (or no region left): senders get no area, their long messages go as trains
        if (r == -ENOTSUP || r == -EPIPE) ep->area_failed = 1;
        return;
    }
    velo_region_nla(reg, 0, &p->area_nla);
    velo_region_rkey(reg, &p->area_key);
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
void velo__release_held(struct velo_ep* ep) {
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
void velo__hold(struct velo_ep* ep, struct velo_peer* p, void* copy) {
    ep->held = p;
    ep->held_copy = copy;
    if (!ep->divert) velo__divert(ep, DIVERT_HELD);
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
        int g = ep->be->grant(&ep->b, VELO_GRANT_FROM_CTL, node, ctl_vpid, &p->reply_win);
        if (g < 0) {
            ++ep->st.ctl_bad;
            return;
        }
        p->reply_page = g;
    }
    uint32_t w = ep->window_max < ep->pool_free ? ep->window_max : ep->pool_free;
    p->epoch = m->epoch;
    if (w < 2) {
        velo__send_ctl(ep, p->reply_page, p->reply_win, VELO_CTL_REFUSE, m->epoch, 0, 0);
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
    velo__recompute_batch(ep);
    if (m->window & VELO_CTL_CONNECT_AREA) area_make(ep, p);
    if (p->area && (m->window & VELO_CTL_CONNECT_AREA)) {  // before the credit: the sender has it when it is open
        struct velo_ctl_area a = {.m = {.magic = VELO_CTL_MAGIC,
                                        .type = VELO_CTL_AREA,
                                        .window = (uint16_t)p->slot_log2,
                                        .epoch = m->epoch,
                                        .limit = (uint32_t)p->area_nla,
                                        .rsvd = (uint32_t)(p->area_nla >> 32)},
                                  .key = p->area_key,
                                  .rsvd = 0};
        velo__store_msg(ep, p->reply_page, p->reply_win, &a, VELO_CTL_AREA_BYTES);
    }
    velo__send_ctl(ep, p->reply_page, p->reply_win, VELO_CTL_CREDIT, m->epoch, w, w);
    ++ep->st.credit_msgs_tx;
}

// A message from a sender's control vpid in the data ring: connection requests, the pieces of
// trains and the notices of messages put into the receive area. Returns a message's length when
// one is complete for the user (filled into m), else 0.
int velo__on_data_ctl(struct velo_ep* ep, unsigned node, unsigned ctl_vpid, const uint8_t* b, unsigned len,
                      velo_msg_t* m) {
    const unsigned vpid = ctl_vpid & ~VELO_CTL_VPID_BIT(ep->b.vpid_bits);
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
                velo__recompute_batch(ep);
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
            velo__hold(ep, p, NULL);
            return deliver_long(m, p, p->area + ((size_t)slot << p->slot_log2), c.limit);
        }
    }
}

// out of credit call it (try-lock: one reader at a time), as do velo_connect and velo_wait.
static void on_ctl_msg(struct velo_ep* ep, unsigned node, unsigned vpid, const uint8_t* b, unsigned len) {
    struct velo_ctl_msg m;
    if ((len != VELO_CTL_BYTES && len != VELO_CTL_AREA_BYTES) || !VELO_IS_CTL_VPID(vpid, ep->b.vpid_bits)) {
        ++ep->st.ctl_bad;
        return;
    }
    memcpy(&m, b, sizeof m);
    if (m.magic != VELO_CTL_MAGIC || (m.type == VELO_CTL_AREA) != (len == VELO_CTL_AREA_BYTES)) {
        ++ep->st.ctl_bad;
        return;
    }
    struct velo_conn* c = velo__conn_find(ep, node, vpid & ~VELO_CTL_VPID_BIT(ep->b.vpid_bits));
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
                struct velo_ctl_area a;
                memcpy(&a, b, sizeof a);
                c->area_nla = (uint64_t)m.limit | (uint64_t)m.rsvd << 32;
                c->area_key = a.key;
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
            struct velo_entry e;
            const uint8_t* cur = r->cur;
            int k = velo__read_entry(r, &cur, &r->expect, &r->pass, &e);
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
            velo__write_rp(ep, r, rp);
            r->rp_nic = rp;
            ++ep->st.rp_updates;
        }
    }
    pthread_mutex_unlock(&ep->ctl_lock);
    return n;
}

// Take `lines` of the connection's credit (reading the control ring once if there is too little).
// 0, or the connection's state as an error, or -EAGAIN.
int velo__take_credit(velo_conn_t* c, int32_t lines) {
    struct velo_ep* ep = c->ep;
    for (int attempt = 0; attempt < 2; ++attempt) {
        uint32_t st = atomic_load(&c->state);
        if (st == CONN_CLOSED || st == CONN_REFUSED) return -ENOTCONN;
        if (st == CONN_RESET) return -ECONNRESET;
        if (ep->b.dead) return -EPIPE;
        int32_t cur = atomic_load(c->credit);
        while (cur >= lines)
            if (atomic_compare_exchange_weak(c->credit, &cur, cur - lines)) return 0;
        if (attempt == 0) velo__ctl_progress(ep, 0);
    }
    atomic_fetch_add(&ep->send_eagain, 1);
    if (ep->be->no_credit) ep->be->no_credit(&ep->b);
    return -EAGAIN;
}

// A train: one-line pieces from our control vpid, on the connection's credit (all of them taken
// before the first store, so a train never waits half-sent).
static int send_train(velo_conn_t* c, const uint8_t* buf, size_t len) {
    struct velo_ep* ep = c->ep;
    const unsigned n = velo__train_pieces(len);
    int r = velo__take_credit(c, (int32_t)n);
    const uint32_t g = atomic_load(&c->credit_gen);
    if (r == -EAGAIN && c->req_gen != g + 1 && velo__take_credit(c, 1) == 0) {
        // The receiver returns credit in batches: up to a batch of lines may stay unreturned
        // while it has read everything, fewer than a train needs. Ask for it (once per return,
        // on a credit line of its own: there always is one when the window is not used up, and
        // when it is, the batches return it anyway).
        c->req_gen = g + 1;  // asked since credit return g
        velo__send_ctl(ep, c->ctl_page, c->ctl_win, VELO_CTL_CREDIT_REQ, c->epoch, 0, 0);
    }
    if (r) return r;
    uint8_t piece[VELO_TRAIN_PIECE];
    struct velo_train_hdr h = {.magic = VELO_CTL_MAGIC, .type = VELO_CTL_TRAIN, .rsvd = 0, .len = (uint32_t)len};
    memcpy(piece, &h, sizeof h);
    size_t k = len < VELO_TRAIN_FIRST ? len : VELO_TRAIN_FIRST;
    memcpy(piece + sizeof h, buf, k);
    r = velo__store_msg(ep, c->ctl_page, c->ctl_win, piece, sizeof h + k);
    piece[0] = VELO_TRAIN_MAGIC;
    for (size_t off = k; r == 0 && off < len; off += k) {
        k = len - off < VELO_TRAIN_NEXT ? len - off : VELO_TRAIN_NEXT;
        memcpy(piece + 1, buf + off, k);
        r = velo__store_msg(ep, c->ctl_page, c->ctl_win, piece, 1 + k);
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
            if (ep->be->no_credit) ep->be->no_credit(&ep->b);
            return -EAGAIN;
        }
    }
    int r = velo__take_credit(c, 1);  // the notice's line, before the put: a put is never left undelivered
    if (r) return r;
    const uint32_t slot = c->large_sent % VELO_AREA_SLOTS;
    r = velo__rma_put_sync(ep, (velo_addr_t){c->node, c->vpid}, buf, c->area_nla + ((uint64_t)slot << c->slot_log2),
                           c->area_key, len);
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
VELO_COLD int velo__send_big(velo_conn_t* c, const void* buf, size_t len) {
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

// ============================================================================ connections
void velo__conn_link(struct velo_ep* ep, struct velo_conn* c) {
    pthread_mutex_lock(&ep->ctl_lock);
    c->hnext = ep->conn_hash[hkey(c->node, c->vpid)];
    ep->conn_hash[hkey(c->node, c->vpid)] = c;
    c->all_next = ep->conns;
    ep->conns = c;
    ++ep->nconns;
    pthread_mutex_unlock(&ep->ctl_lock);
}

// End a connection locally: no more credit.
void velo__conn_end(struct velo_conn* c, uint32_t state) {
    if (atomic_exchange(&c->state, state) == CONN_OPEN) atomic_fetch_sub(c->credit, VELO_CREDIT_OFF);
}

void velo__say_goodbye(struct velo_ep* ep) {
    for (struct velo_conn* c = ep->conns; c; c = c->all_next) {
        uint32_t st = atomic_load(&c->state);
        if (st == CONN_OPEN || st == CONN_PENDING)
            velo__send_ctl(ep, c->ctl_page, c->ctl_win, VELO_CTL_DISCONNECT, c->epoch, 0, 0);
    }
    for (unsigned i = 0; i < 256; ++i)
        for (struct velo_peer* p = ep->peer_hash[i]; p; p = p->hnext)
            if (p->window && p->reply_page >= 0)
                velo__send_ctl(ep, p->reply_page, p->reply_win, VELO_CTL_RESET, p->epoch, 0, 0);
}

void velo__peers_free(struct velo_ep* ep) {
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
}
