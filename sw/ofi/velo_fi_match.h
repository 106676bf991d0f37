/* SPDX-License-Identifier: MIT */
/*
 * The provider's tag matcher: a posted-receive queue and an unexpected-message queue with MPI
 * ordering (docs/ofi.md "Matching"). Pure C with no libfabric and no libvelo types, so that it is
 * unit-tested alone (tests/test_match.cpp) and can be replaced by the NIC's matching unit later:
 * the endpoint code calls only the functions below.
 *
 * Rules:
 *  - A receive (tag, ignore, src) matches a message (tag', src') when ((tag ^ tag') & ~ignore) == 0
 *    and (src == VFI_SRC_ANY or src == src').
 *  - An arriving message takes the OLDEST posted receive that matches it.
 *  - A new receive takes the OLDEST unexpected message that matches it and is not claimed.
 *  - A claimed message (FI_PEEK | FI_CLAIM) is skipped by every search except vfi_match_take_claimed
 *    with its claim context.
 * The queues hold caller-owned nodes (embedded in the caller's structures); the matcher never
 * allocates. Not thread safe: the caller holds its endpoint lock.
 */
#ifndef VELO_FI_MATCH_H
#define VELO_FI_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VFI_SRC_ANY UINT64_MAX

struct vfi_mrecv { /* a posted receive */
    struct vfi_mrecv* next;
    uint64_t tag, ignore, src;
};

struct vfi_munexp { /* an unexpected message */
    struct vfi_munexp* next;
    uint64_t tag, src;
    const void* claim; /* non-NULL: claimed by a peek with FI_CLAIM, this is its context */
};

struct vfi_matcher {
    struct vfi_mrecv *posted, **posted_tail;
    struct vfi_munexp *unexp, **unexp_tail;
    size_t n_posted, n_unexp;
};

void vfi_match_init(struct vfi_matcher* m);

/* Does receive (tag, ignore, src) match message (mtag, msrc)? */
static inline bool vfi_match_hit(uint64_t tag, uint64_t ignore, uint64_t src, uint64_t mtag, uint64_t msrc) {
    return ((tag ^ mtag) & ~ignore) == 0 && (src == VFI_SRC_ANY || src == msrc);
}

/* A message arrived: removes and returns the oldest posted receive matching it, NULL if none
 * (the caller then queues the message with vfi_match_add_unexp). */
struct vfi_mrecv* vfi_match_arrival(struct vfi_matcher* m, uint64_t tag, uint64_t src);
/* Append at the tail of a queue. */
void vfi_match_add_unexp(struct vfi_matcher* m, struct vfi_munexp* u);
void vfi_match_add_posted(struct vfi_matcher* m, struct vfi_mrecv* r);

/* A receive is posted (or a peek): the oldest unclaimed unexpected message matching it, removed
 * from the queue if `take`; NULL if none. */
struct vfi_munexp* vfi_match_find_unexp(struct vfi_matcher* m, uint64_t tag, uint64_t ignore, uint64_t src, bool take);
/* The message claimed with context `claim` (non-NULL), removed; NULL if none. */
struct vfi_munexp* vfi_match_take_claimed(struct vfi_matcher* m, const void* claim);
/* Remove a given posted receive (cancel); false if it is not queued. */
bool vfi_match_remove_posted(struct vfi_matcher* m, struct vfi_mrecv* r);
/* Pop the oldest posted receive / unexpected message (teardown); NULL when empty. */
struct vfi_mrecv* vfi_match_pop_posted(struct vfi_matcher* m);
struct vfi_munexp* vfi_match_pop_unexp(struct vfi_matcher* m);

#ifdef __cplusplus
}
#endif

#endif /* VELO_FI_MATCH_H */
