/* SPDX-License-Identifier: MIT */
/*
 * libvelo RMA's state, shared by the region cache (velo_rma_reg.c: registrations through the
 * driver, the LRU cache of idle ones, setup and close) and the transfers (velo_rma.c: put/get
 * commands, completions, re-pin and re-issue). Not installed. docs/rma.md.
 */
#ifndef VELO_RMA_STATE_H
#define VELO_RMA_STATE_H

#include "velo_ep.h"

#define RMA_RETRY_MAX 4u                /* re-issues of one command (NOT_VALID, torn) before it fails */
#define RMA_BUSY_WAIT_MIN_NS 1000ull    /* refused (BUSY) with nothing of ours in flight: first wait, */
#define RMA_BUSY_WAIT_MAX_NS 1000000ull /* doubled at every refusal up to this */
#define RMA_CACHE_DEFAULT 64u           /* idle registrations the cache keeps */
/* and the pages the cached registrations may hold before idle ones go: a quarter of the NIC's
 * page table, which the processes of a node share (idle registrations of one must not starve
 * the others, which cannot take them back) */
#define RMA_CACHE_PAGES ((1u << VELO_DEFAULT_RMA_PTE_BITS) / 4u)
#define RMA_EVQ (2u * VELO_RMA_SLOTS + 2u) /* initial room of the completion queue (it grows) */
#define NLA_OFFSET_MASK VELO_FIELD_MASK(VELO_RMA_NLA_OFFSET)
#define NLA_LIMIT (1ull << VELO_RMA_NLA_OFFSET_WIDTH)

// A registration (one driver region), in the lookup list while `cached`.
struct rc_ent {
    uintptr_t addr;
    size_t len;
    uint64_t nla;  // NLA of addr (offset 0)
    uint32_t key;  // the region's 32-bit key (the NLA's KEY field is its bits 7:0)
    unsigned access;
    velo_scope_t asked;                  // the scope asked for, normalised (scope_norm): lookups match it exactly
    velo_scope_t box;                    // the boxes the driver made of it (what the NIC checks)
    unsigned pages;                      // NIC page table entries it holds
    unsigned refs;                       // handles and calls in flight
    int cached;                          // found by lookups (else: deregistered by its owner, waits for refs = 0)
    struct rc_ent *prev, *next;          // LRU list (MRU first) while cached
    struct rc_ent *all_prev, *all_next;  // every entry of the endpoint
};

struct velo_region {
    struct velo_ep* ep;
    struct rc_ent* e;
    uintptr_t addr;  // the caller's range
    size_t len;
    unsigned access;
};

struct rma_op {
    uint64_t cookie, len, issued;  // issued: bytes handed to commands
    uint64_t local_nla, remote_nla;
    uint32_t remote_key;  // bits 31:8 go into every command's RKEY_HI
    uint32_t node, vpid;
    unsigned op, flags;
    unsigned total, nissued, lcpl_seen, final_seen;
    unsigned reason, remote, local_reported;
    struct rc_ent* e;  // the local registration (a reference), or NULL
    int* sync;         // velo__rma_put_sync's result (1 done, -errno failed); no completions reported
    int next_free;
};

struct rma_slot {
    uint64_t w[4];  // the command as stored
    int op;
    unsigned retries;
    int busy, lcpl;
};

struct velo_rma {
    struct velo_ep* ep;
    struct velo_rma_map m;
    uint32_t mask, rp, rp_nic, rp_batch;
    unsigned limit, outstanding, next_slot;
    uint32_t piece_max;
    struct rma_slot slot[VELO_RMA_SLOTS];
    struct rma_op* ops;
    int op_free;
    int backlog;          // op with pieces not yet issued, or -1
    velo_rma_cpl_t* evq;  // completions not taken yet (a ring of evq_cap)
    unsigned evq_head, evq_len, evq_cap;
    // commands the NIC refused for want of a tag (BUSY), oldest first; they keep their slots
    unsigned park[VELO_RMA_SLOTS], park_head, park_len;
    uint64_t park_due_ns, park_wait_ns;  // re-issue time when none of ours is in flight (0: not set)
    struct rc_ent *lru_head, *lru_tail, *all;
    unsigned ncached, cache_max;
    uint64_t cpages;  // pages of the cached registrations
};

/* velo_rma_reg.c */
/* The default scope (VELO_SCOPE_JOB) for registrations that name none (velo_put_buf, velo_get_buf). */
extern const velo_scope_t velo__scope_default;
/* The endpoint's RMA state, set up at the first call (the backend's rma_map). 0 or -errno. */
int velo__rma_get(struct velo_ep* ep, struct velo_rma** out);
int velo__rma_check_range(const void* addr, size_t len);
/* A registration covering [addr, addr + len) with `access` (cached or new), one reference taken. */
int velo__rc_acquire(struct velo_ep* ep, struct velo_rma* s, uintptr_t addr, size_t len, unsigned access,
                     const velo_scope_t* scope, struct rc_ent** out);
/* Drops a reference: the entry stays cached, or is deregistered when it was dropped by its owner. */
int velo__rc_put(struct velo_ep* ep, struct velo_rma* s, struct rc_ent* e);
/* VELO_IOC_REPIN of the region at nla (decoupled pinning: its pages changed). */
int velo__rma_repin(struct velo_ep* ep, uint64_t nla);

#endif /* VELO_RMA_STATE_H */
