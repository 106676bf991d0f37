/* SPDX-License-Identifier: MIT */
/*
 * The provider's wire format: every fi_send / fi_tsend is one velo_send of a header and the
 * payload (eager). The header is as short as the operation allows, so that small messages keep
 * to one VELO store burst (64 bytes):
 *   byte 0      kind (VFI_WIRE_MSG or VFI_WIRE_TAGGED) | VFI_WIRE_DATA
 *   bytes 1..8  tag (VFI_WIRE_TAGGED only), little endian
 *   next 8      remote CQ data (VFI_WIRE_DATA only), little endian
 * then the payload. The source is the VELO message's hardware-stamped (node, vpid).
 *
 * Rendezvous (messages above the eager limit): the sender registers its buffer (REMOTE_READ, scope:
 * the destination only) and sends the header with VFI_WIRE_RTS and a 24-byte payload (length,
 * NLA, key, id: struct vfi_wire_rts); the receiver, once a receive matches, gets the data with
 * velo_get into the receive buffer and answers with a FIN (kind VFI_WIRE_CTRL, then the id and a
 * status: 0, or a positive FI_E* error), on which the sender completes the send.
 */
#ifndef VELO_FI_WIRE_H
#define VELO_FI_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define VFI_WIRE_MSG 0x1u
#define VFI_WIRE_TAGGED 0x2u
#define VFI_WIRE_CTRL 0x3u /* FIN of a rendezvous: id (4 bytes), status (4 bytes) */
#define VFI_WIRE_KIND_MASK 0x3u
#define VFI_WIRE_DATA 0x4u
#define VFI_WIRE_RTS 0x8u
#define VFI_WIRE_KNOWN (VFI_WIRE_KIND_MASK | VFI_WIRE_DATA | VFI_WIRE_RTS)
#define VFI_HDR_MAX 17u
#define VFI_RTS_BYTES 24u
#define VFI_FIN_BYTES 9u

struct vfi_wire_rts {
    uint64_t len, nla;
    uint32_t key, id;
};

static inline void vfi_put32(uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t vfi_get32(const uint8_t* p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}

struct vfi_wire_hdr {
    unsigned kind; /* VFI_WIRE_MSG or VFI_WIRE_TAGGED (VFI_WIRE_CTRL: parsed by vfi_wire_get_fin) */
    int has_data;
    int rts; /* the payload is a struct vfi_wire_rts */
    uint64_t tag, data;
};

static inline void vfi_put64(uint8_t* p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint64_t vfi_get64(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Write the header into p (VFI_HDR_MAX bytes of room); returns its length. */
static inline size_t vfi_wire_put(uint8_t* p, const struct vfi_wire_hdr* h) {
    size_t n = 1;
    p[0] = (uint8_t)(h->kind | (h->has_data ? VFI_WIRE_DATA : 0) | (h->rts ? VFI_WIRE_RTS : 0));
    if (h->kind == VFI_WIRE_TAGGED) {
        vfi_put64(p + n, h->tag);
        n += 8;
    }
    if (h->has_data) {
        vfi_put64(p + n, h->data);
        n += 8;
    }
    return n;
}

/* Parse a header from a message of len bytes; returns its length, or 0 when malformed. */
static inline size_t vfi_wire_get(const uint8_t* p, size_t len, struct vfi_wire_hdr* h) {
    if (len < 1 || (p[0] & ~VFI_WIRE_KNOWN)) return 0;
    h->kind = p[0] & VFI_WIRE_KIND_MASK;
    h->has_data = (p[0] & VFI_WIRE_DATA) != 0;
    h->rts = (p[0] & VFI_WIRE_RTS) != 0;
    h->tag = 0;
    h->data = 0;
    if (h->kind != VFI_WIRE_MSG && h->kind != VFI_WIRE_TAGGED) return 0;
    size_t n = 1 + (h->kind == VFI_WIRE_TAGGED ? 8 : 0) + (h->has_data ? 8 : 0);
    if (len < n) return 0;
    size_t o = 1;
    if (h->kind == VFI_WIRE_TAGGED) {
        h->tag = vfi_get64(p + o);
        o += 8;
    }
    if (h->has_data) h->data = vfi_get64(p + o);
    return n;
}

static inline void vfi_wire_put_rts(uint8_t* p, const struct vfi_wire_rts* r) {
    vfi_put64(p, r->len);
    vfi_put64(p + 8, r->nla);
    vfi_put32(p + 16, r->key);
    vfi_put32(p + 20, r->id);
}
static inline void vfi_wire_get_rts(const uint8_t* p, struct vfi_wire_rts* r) {
    r->len = vfi_get64(p);
    r->nla = vfi_get64(p + 8);
    r->key = vfi_get32(p + 16);
    r->id = vfi_get32(p + 20);
}

/* A FIN: VFI_FIN_BYTES into p. */
static inline size_t vfi_wire_put_fin(uint8_t* p, uint32_t id, uint32_t status) {
    p[0] = VFI_WIRE_CTRL;
    vfi_put32(p + 1, id);
    vfi_put32(p + 5, status);
    return VFI_FIN_BYTES;
}
/* 1 and *id, *status for a well-formed FIN, else 0. */
static inline int vfi_wire_get_fin(const uint8_t* p, size_t len, uint32_t* id, uint32_t* status) {
    if (len != VFI_FIN_BYTES || p[0] != VFI_WIRE_CTRL) return 0;
    *id = vfi_get32(p + 1);
    *status = vfi_get32(p + 5);
    return 1;
}

#endif /* VELO_FI_WIRE_H */
