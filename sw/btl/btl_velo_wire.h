/* SPDX-License-Identifier: MIT */
/*
 * The BTL's wire format over VELO messages (1..64 bytes each), independent of Open MPI so that it
 * can be tested on its own (tests/test_wire.c). See docs/mpi.md, "Wire format".
 *
 * A BTL fragment is a tag (the active-message tag of the PML, e.g. ob1's MATCH) and N bytes (the
 * PML header followed by the payload). It travels as one VELO message when it fits, otherwise as
 * a train: a HEAD message with the tag and the length, then BODY messages. Byte 0 of every message
 * holds the kind (2 bits) and a per-destination sequence number (6 bits):
 *
 *   SHORT  [k|seq] [tag] [fragment bytes ...]                       fragment <= 62 bytes
 *   MATCH  [k|seq] [flags] [ctx] [src] [tag8] [seq lo] [seq hi] [payload ...]
 *          ob1's 14-byte match header squeezed to 6 bytes when its bytes allow (lossless: a
 *          header whose bytes do not fit the pattern goes as SHORT or a train)
 *   HEAD   [k|seq] [tag] [length, 4 bytes LE] [fragment bytes ...]
 *   BODY   [k|seq] [fragment bytes ...]
 *
 * The sender sends one fragment's messages back to back (per-destination lock), so a receiver
 * sees at most one train per source at a time. The sequence number puts messages back in order
 * should they overtake each other (a store cut in two by interrupted write combining can complete
 * after a later one of another thread; the simulator models that), within a window of 64.
 */
#ifndef BTL_VELO_WIRE_H
#define BTL_VELO_WIRE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VW_MSG_MAX 64u /* a VELO message */
#define VW_KIND_SHIFT 6u
#define VW_SEQ_MASK 63u
#define VW_WINDOW 64u          /* sequence numbers */
#define VW_SHORT_HDR 2u        /* kind|seq, tag */
#define VW_HEAD_HDR 6u         /* kind|seq, tag, u32 length */
#define VW_BODY_HDR 1u         /* kind|seq */
#define VW_MATCH_WIRE_HDR 7u   /* kind|seq + 6 header bytes */
#define VW_MATCH_TAG 0x41u     /* ob1's MATCH tag (MCA_BTL_TAG_PML + 1) */
#define VW_MATCH_HDR_LEN 14u   /* ob1's match header on the wire of the PML */
#define VW_FRAG_MAX (1u << 24) /* largest fragment a receiver accepts (16 MiB) */

enum vw_kind { VW_SHORT = 0, VW_MATCH = 1, VW_HEAD = 2, VW_BODY = 3 };

/* A fragment on its way out: the tag and up to two byte ranges (the PML header plus packed data,
 * and data sent in place from the user's buffer). */
typedef struct vw_frag {
    uint8_t tag;
    uint8_t nseg;
    const uint8_t* p[2];
    size_t n[2];
    size_t total; /* n[0] + n[1] */
} vw_frag_t;

/* Build the message of fragment `f` that starts at fragment byte `off` (0: the first message).
 * `train_bytes` (16..64) is the size of the messages of a train; `compress` allows MATCH. Writes
 * the message to `msg`, returns its length (2..64) and sets *carried to the fragment bytes it
 * carries: the caller adds it to `off` once the message is sent. The first message of a fragment
 * carries everything when the fragment fits one message (then *carried == f->total). */
unsigned vw_encode(const vw_frag_t* f, size_t off, unsigned seq, unsigned train_bytes, int compress, uint8_t* msg,
                   size_t* carried);

/* Does a fragment of this tag and these first bytes (len of them) go as one message? */
int vw_fits_one(uint8_t tag, const uint8_t* bytes, size_t len, int compress);

/* Receive state for one source. Zero-initialise; vw_rx_free releases what it allocated. */
typedef struct vw_stash {
    uint8_t len;
    uint8_t data[VW_MSG_MAX];
} vw_stash_t;

typedef struct vw_rx {
    uint8_t expect;   /* next sequence number */
    uint8_t in_train; /* a HEAD came, the BODYs are still coming */
    uint8_t tag;
    uint32_t total, got;
    uint8_t* buf; /* train reassembly, cap bytes */
    size_t cap;
    uint64_t stash_mask; /* sequence numbers held in stash */
    vw_stash_t* stash;   /* VW_WINDOW entries, allocated at the first message out of order */
    uint64_t msgs, frags, reordered;
} vw_rx_t;

/* Called for every complete fragment: tag, bytes (8-byte aligned), length. */
typedef void (*vw_deliver_fn)(void* ctx, uint8_t tag, const uint8_t* data, size_t len);

/* Take one message from the source. Complete fragments are delivered in order, possibly several
 * (a message that closes a gap releases the ones held back). Returns 0, or a negative errno for a
 * malformed stream (-EPROTO: unknown kind, BODY without HEAD, HEAD inside a train, a train longer
 * than announced, a sequence number seen twice; -EMSGSIZE: fragment larger than max_frag;
 * -ENOMEM). After an error the state is reset and further messages are taken as a new stream. */
int vw_rx_msg(vw_rx_t* rx, const uint8_t* msg, size_t len, size_t max_frag, vw_deliver_fn fn, void* ctx);

void vw_rx_free(vw_rx_t* rx);

#ifdef __cplusplus
}
#endif

#endif /* BTL_VELO_WIRE_H */
