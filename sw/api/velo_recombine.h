/* SPDX-License-Identifier: MIT */
/*
 * Software recombination of fragments (paper, section 3). When a sender's write-combining
 * buffer is flushed in pieces (the thread was interrupted between its stores), the NIC sends
 * each piece as a fragment tagged with the message length, its offset and its length; this
 * collects them, keyed by the hardware-stamped source (node, vpid) and the message length,
 * until every byte of a message is there. Robust to interleaving: any number of partial
 * messages from any senders at once, whole messages passing them, pieces in any order. A piece
 * goes to the oldest partial message of its key that does not have its bytes yet.
 */
#ifndef VELO_RECOMBINE_H
#define VELO_RECOMBINE_H

#include <stdint.h>

struct velo_rc_part {
    uint64_t have; /* bit i: byte i is there */
    uint64_t age;  /* order of creation (oldest first) */
    uint8_t used;
    uint8_t node, vpid, len;
    uint8_t data[64];
};

struct velo_rc {
    struct velo_rc_part* part;
    unsigned cap;  /* entries allocated */
    unsigned live; /* partial messages held */
    uint64_t next_age;
    uint64_t pieces;   /* fragments added */
    uint64_t bad;      /* malformed fragments dropped (past the message end, zero length) */
    uint64_t overflow; /* partial messages dropped because max_parts was reached */
    unsigned max_parts;
};

#ifdef __cplusplus
extern "C" {
#endif

void velo_rc_init(struct velo_rc* rc, unsigned max_parts);
void velo_rc_free(struct velo_rc* rc);
/* Add a fragment: `n` bytes at offset `off` of a message of `msg_len` bytes from (node, vpid).
 * Returns 1 when it completes a message (copied to out[0..msg_len)), 0 when it is kept, -1 when
 * it is malformed (dropped and counted) or memory runs out. */
int velo_rc_add(struct velo_rc* rc, unsigned node, unsigned vpid, unsigned msg_len, unsigned off, const uint8_t* bytes,
                unsigned n, uint8_t out[64]);

#ifdef __cplusplus
}
#endif

#endif /* VELO_RECOMBINE_H */
