// SPDX-License-Identifier: MIT
// The BTL's wire format over VELO messages: encoding of fragments into messages, reassembly and
// reordering at the receiver. See btl_velo_wire.h and docs/mpi.md.
#include "btl_velo_wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

// Copy fragment bytes [off, off + n) into dst, across the fragment's segments.
static void gather(const vw_frag_t* f, size_t off, uint8_t* dst, size_t n) {
    for (unsigned s = 0; s < f->nseg && n; ++s) {
        if (off >= f->n[s]) {
            off -= f->n[s];
            continue;
        }
        size_t k = f->n[s] - off < n ? f->n[s] - off : n;
        memcpy(dst, f->p[s] + off, k);
        dst += k;
        n -= k;
        off = 0;
    }
}

// ob1's match header: type, flags, ctx (u16), src (i32), tag (i32), seq (u16), little endian. It
// is squeezed when the type is MATCH, ctx and src are below 256 and tag is a sign-extended byte.
// Only the bytes decide: a header that does not fit is sent as it is.
static int match_squeezable(const uint8_t* b) {
    const uint8_t ext = (b[8] & 0x80) ? 0xff : 0x00;
    return b[0] == VW_MATCH_TAG && b[3] == 0 && b[5] == 0 && b[6] == 0 && b[7] == 0 && b[9] == ext && b[10] == ext &&
           b[11] == ext;
}

static int use_match(uint8_t tag, const uint8_t* first, size_t len, int compress) {
    return compress && tag == VW_MATCH_TAG && len >= VW_MATCH_HDR_LEN &&
           len - VW_MATCH_HDR_LEN <= VW_MSG_MAX - VW_MATCH_WIRE_HDR && match_squeezable(first);
}

int vw_fits_one(uint8_t tag, const uint8_t* bytes, size_t len, int compress) {
    return len <= VW_MSG_MAX - VW_SHORT_HDR || use_match(tag, bytes, len, compress);
}

static void put32(uint8_t* p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t* p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

unsigned vw_encode(const vw_frag_t* f, size_t off, unsigned seq, unsigned train_bytes, int compress, uint8_t* msg,
                   size_t* carried) {
    seq &= VW_SEQ_MASK;
    if (train_bytes > VW_MSG_MAX) train_bytes = VW_MSG_MAX;
    if (train_bytes < 16) train_bytes = 16;
    if (off == 0) {
        uint8_t h[VW_MATCH_HDR_LEN];
        if (f->total >= VW_MATCH_HDR_LEN) gather(f, 0, h, VW_MATCH_HDR_LEN);
        if (f->total >= VW_MATCH_HDR_LEN && use_match(f->tag, h, f->total, compress)) {
            msg[0] = (uint8_t)(VW_MATCH << VW_KIND_SHIFT | seq);
            msg[1] = h[1];
            msg[2] = h[2];
            msg[3] = h[4];
            msg[4] = h[8];
            msg[5] = h[12];
            msg[6] = h[13];
            const size_t pay = f->total - VW_MATCH_HDR_LEN;
            gather(f, VW_MATCH_HDR_LEN, msg + VW_MATCH_WIRE_HDR, pay);
            *carried = f->total;
            return (unsigned)(VW_MATCH_WIRE_HDR + pay);
        }
        if (f->total <= VW_MSG_MAX - VW_SHORT_HDR) {
            msg[0] = (uint8_t)(VW_SHORT << VW_KIND_SHIFT | seq);
            msg[1] = f->tag;
            gather(f, 0, msg + VW_SHORT_HDR, f->total);
            *carried = f->total;
            return (unsigned)(VW_SHORT_HDR + f->total);
        }
        const size_t n = f->total < train_bytes - VW_HEAD_HDR ? f->total : train_bytes - VW_HEAD_HDR;
        msg[0] = (uint8_t)(VW_HEAD << VW_KIND_SHIFT | seq);
        msg[1] = f->tag;
        put32(msg + 2, (uint32_t)f->total);
        gather(f, 0, msg + VW_HEAD_HDR, n);
        *carried = n;
        return (unsigned)(VW_HEAD_HDR + n);
    }
    const size_t left = f->total - off;
    const size_t n = left < train_bytes - VW_BODY_HDR ? left : train_bytes - VW_BODY_HDR;
    msg[0] = (uint8_t)(VW_BODY << VW_KIND_SHIFT | seq);
    gather(f, off, msg + VW_BODY_HDR, n);
    *carried = n;
    return (unsigned)(VW_BODY_HDR + n);
}

// ---------------------------------------------------------------------------------------- receive
static void rx_reset(vw_rx_t* rx) {
    rx->in_train = 0;
    rx->got = rx->total = 0;
    rx->stash_mask = 0;
}

// One message in sequence order.
static int take(vw_rx_t* rx, const uint8_t* msg, size_t len, size_t max_frag, vw_deliver_fn fn, void* ctx) {
    uint64_t tmp[10];  // aligned copy of a one-message fragment (<= 14 + 57 bytes)
    uint8_t* b = (uint8_t*)tmp;
    switch (msg[0] >> VW_KIND_SHIFT) {
        case VW_SHORT:
            if (rx->in_train || len < VW_SHORT_HDR) return -EPROTO;
            memcpy(b, msg + VW_SHORT_HDR, len - VW_SHORT_HDR);
            ++rx->frags;
            fn(ctx, msg[1], b, len - VW_SHORT_HDR);
            return 0;
        case VW_MATCH: {
            if (rx->in_train || len < VW_MATCH_WIRE_HDR) return -EPROTO;
            const uint8_t ext = (msg[4] & 0x80) ? 0xff : 0x00;
            const uint8_t h[VW_MATCH_HDR_LEN] = {VW_MATCH_TAG, msg[1], msg[2], 0,   msg[3], 0,     0, 0,
                                                 msg[4],       ext,    ext,    ext, msg[5], msg[6]};
            memcpy(b, h, sizeof h);
            memcpy(b + VW_MATCH_HDR_LEN, msg + VW_MATCH_WIRE_HDR, len - VW_MATCH_WIRE_HDR);
            ++rx->frags;
            fn(ctx, VW_MATCH_TAG, b, VW_MATCH_HDR_LEN + len - VW_MATCH_WIRE_HDR);
            return 0;
        }
        case VW_HEAD: {
            if (rx->in_train || len < VW_HEAD_HDR) return -EPROTO;
            const uint32_t total = get32(msg + 2);
            if (total > max_frag || total > VW_FRAG_MAX) return -EMSGSIZE;
            const size_t n = len - VW_HEAD_HDR;
            if (n > total) return -EPROTO;
            if (rx->cap < total) {
                size_t cap = rx->cap ? rx->cap : 4096;
                while (cap < total) cap *= 2;
                uint8_t* nb = malloc(cap);
                if (!nb) return -ENOMEM;
                free(rx->buf);
                rx->buf = nb;
                rx->cap = cap;
            }
            memcpy(rx->buf, msg + VW_HEAD_HDR, n);
            rx->tag = msg[1];
            rx->total = total;
            rx->got = (uint32_t)n;
            rx->in_train = 1;
            break;
        }
        default: {  // VW_BODY
            if (!rx->in_train) return -EPROTO;
            const size_t n = len - VW_BODY_HDR;
            if (rx->got + n > rx->total) return -EPROTO;
            memcpy(rx->buf + rx->got, msg + VW_BODY_HDR, n);
            rx->got += (uint32_t)n;
            break;
        }
    }
    if (rx->got == rx->total) {
        rx->in_train = 0;
        ++rx->frags;
        fn(ctx, rx->tag, rx->buf, rx->total);
    }
    return 0;
}

int vw_rx_msg(vw_rx_t* rx, const uint8_t* msg, size_t len, size_t max_frag, vw_deliver_fn fn, void* ctx) {
    if (len < 1 || len > VW_MSG_MAX) return -EPROTO;
    ++rx->msgs;
    const unsigned s = msg[0] & VW_SEQ_MASK;
    if (s != rx->expect) {
        // early: hold it until the gap before it is filled
        if (!rx->stash) {
            rx->stash = calloc(VW_WINDOW, sizeof *rx->stash);
            if (!rx->stash) return -ENOMEM;
        }
        if (rx->stash_mask >> s & 1) {
            rx_reset(rx);
            return -EPROTO;
        }
        rx->stash[s].len = (uint8_t)len;
        memcpy(rx->stash[s].data, msg, len);
        rx->stash_mask |= 1ull << s;
        ++rx->reordered;
        return 0;
    }
    int r = take(rx, msg, len, max_frag, fn, ctx);
    rx->expect = (uint8_t)((rx->expect + 1) & VW_SEQ_MASK);
    while (r == 0 && (rx->stash_mask >> rx->expect & 1)) {
        const unsigned e = rx->expect;
        rx->stash_mask &= ~(1ull << e);
        r = take(rx, rx->stash[e].data, rx->stash[e].len, max_frag, fn, ctx);
        rx->expect = (uint8_t)((rx->expect + 1) & VW_SEQ_MASK);
    }
    if (r < 0) rx_reset(rx);
    return r;
}

void vw_rx_free(vw_rx_t* rx) {
    free(rx->buf);
    free(rx->stash);
    rx->buf = NULL;
    rx->stash = NULL;
    rx->cap = 0;
    rx_reset(rx);
}
