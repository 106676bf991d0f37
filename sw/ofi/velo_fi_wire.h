/* SPDX-License-Identifier: MIT */
/*
 * The provider's wire format: every fi_send / fi_tsend is one velo_send of a header and the
 * payload (eager). The header is as short as the operation allows, so that small messages keep
 * to one VELO store burst (64 bytes):
 *   byte 0      kind (VFI_WIRE_MSG or VFI_WIRE_TAGGED) | VFI_WIRE_DATA
 *   bytes 1..8  tag (VFI_WIRE_TAGGED only), little endian
 *   next 8      remote CQ data (VFI_WIRE_DATA only), little endian
 * then the payload. The source is the VELO message's hardware-stamped (node, vpid).
 */
#ifndef VELO_FI_WIRE_H
#define VELO_FI_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define VFI_WIRE_MSG 0x1u
#define VFI_WIRE_TAGGED 0x2u
#define VFI_WIRE_KIND_MASK 0x3u
#define VFI_WIRE_DATA 0x4u
#define VFI_WIRE_KNOWN (VFI_WIRE_KIND_MASK | VFI_WIRE_DATA)
#define VFI_HDR_MAX 17u

struct vfi_wire_hdr {
    unsigned kind; /* VFI_WIRE_MSG or VFI_WIRE_TAGGED */
    int has_data;
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
    p[0] = (uint8_t)(h->kind | (h->has_data ? VFI_WIRE_DATA : 0));
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

#endif /* VELO_FI_WIRE_H */
