// SPDX-License-Identifier: MIT
// Fragment recombination (see velo_recombine.h).
#include "velo_recombine.h"

#include <stdlib.h>
#include <string.h>

void velo_rc_init(struct velo_rc* rc, unsigned max_parts) {
    memset(rc, 0, sizeof *rc);
    rc->max_parts = max_parts ? max_parts : 4096;
}

void velo_rc_free(struct velo_rc* rc) {
    free(rc->part);
    rc->part = NULL;
    rc->cap = rc->live = 0;
}

static uint64_t range_mask(unsigned off, unsigned n) {
    uint64_t m = n >= 64 ? ~0ull : ((1ull << n) - 1);
    return m << off;
}

int velo_rc_add(struct velo_rc* rc, unsigned node, unsigned vpid, unsigned msg_len, unsigned off, const uint8_t* bytes,
                unsigned n, uint8_t out[64]) {
    if (n == 0 || msg_len == 0 || msg_len > 64 || off >= msg_len || off + n > msg_len) {
        ++rc->bad;
        return -1;
    }
    ++rc->pieces;
    const uint64_t want = range_mask(off, n);
    const uint64_t full = range_mask(0, msg_len);
    struct velo_rc_part* best = NULL;
    struct velo_rc_part* freep = NULL;
    for (unsigned i = 0; i < rc->cap; ++i) {
        struct velo_rc_part* p = &rc->part[i];
        if (!p->used) {
            if (!freep) freep = p;
            continue;
        }
        if (p->node != node || p->vpid != vpid || p->len != msg_len || (p->have & want)) continue;
        if (!best || p->age < best->age) best = p;
    }
    if (!best) {
        if (!freep || rc->live >= rc->max_parts) {
            if (rc->live >= rc->max_parts) {
                // drop the oldest partial message (its sender died mid-message, or a stray piece)
                struct velo_rc_part* old = NULL;
                for (unsigned i = 0; i < rc->cap; ++i)
                    if (rc->part[i].used && (!old || rc->part[i].age < old->age)) old = &rc->part[i];
                old->used = 0;
                --rc->live;
                ++rc->overflow;
                freep = old;
            } else {
                unsigned ncap = rc->cap ? rc->cap * 2 : 8;
                struct velo_rc_part* np = realloc(rc->part, ncap * sizeof *np);
                if (!np) return -1;
                memset(np + rc->cap, 0, (ncap - rc->cap) * sizeof *np);
                freep = np + rc->cap;
                rc->part = np;
                rc->cap = ncap;
            }
        }
        best = freep;
        best->used = 1;
        best->node = (uint8_t)node;
        best->vpid = (uint8_t)vpid;
        best->len = (uint8_t)msg_len;
        best->have = 0;
        best->age = rc->next_age++;
        ++rc->live;
    }
    memcpy(best->data + off, bytes, n);
    best->have |= want;
    if (best->have != full) return 0;
    memcpy(out, best->data, msg_len);
    best->used = 0;
    --rc->live;
    return 1;
}
