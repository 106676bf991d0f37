/* SPDX-License-Identifier: MIT */
/*
 * A software model of VELO NICs for libvelo's unit tests: endpoints of several "nodes" in one
 * process, their window stores turned into mailbox entries as the RTL does (messages and
 * fragments, clipping, entries written second line first and header last, a full ring holds
 * packets back). Optional split injection turns stores into fragment pairs. Lets the credit
 * protocol, connection handshake and recombination run under ASan/UBSan without the fabric.
 */
#ifndef VELO_LOOPNIC_H
#define VELO_LOOPNIC_H

#include <stdint.h>

#include "velo/velo.h"

#ifdef __cplusplus
extern "C" {
#endif

struct loopnic;
struct loopnic_stats {
    uint64_t packets;   /* packets delivered into rings */
    uint64_t fragments; /* of which fragments */
    uint64_t dropped;   /* to a vpid nobody opened */
    uint64_t held_max;  /* most packets held back by full rings at once */
    uint64_t rp_writes; /* read-pointer register writes */
};

/* split_pct: percent of stores of 2 bytes or more flushed as two pieces */
struct loopnic* loopnic_new(unsigned split_pct, uint64_t seed);
void loopnic_free(struct loopnic* n);
/* an endpoint on node `node` (vpid -1: any) */
int loopnic_open(struct loopnic* n, unsigned node, int vpid, unsigned ring_log2, velo_ep_t** ep);
/* move held packets into rings that have room now; returns packets moved */
unsigned loopnic_pump(struct loopnic* n);
/* packets held back because their ring is full */
unsigned loopnic_held(struct loopnic* n);
/* the NIC's view of an endpoint's data ring: write and read pointers */
void loopnic_ptrs(struct loopnic* n, const velo_ep_t* ep, uint32_t* wp, uint32_t* rp);
void loopnic_stats(struct loopnic* n, struct loopnic_stats* s);
/* close the endpoint as the driver would: later packets for it are dropped */
int loopnic_close(struct loopnic* n, velo_ep_t* ep);

#ifdef __cplusplus
}
#endif

#endif
