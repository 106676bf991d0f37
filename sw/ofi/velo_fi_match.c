/* SPDX-License-Identifier: MIT */
/* The provider's tag matcher (velo_fi_match.h): two FIFO queues searched oldest first. */
#include "velo_fi_match.h"

void vfi_match_init(struct vfi_matcher* m) {
    m->posted = NULL;
    m->posted_tail = &m->posted;
    m->unexp = NULL;
    m->unexp_tail = &m->unexp;
    m->n_posted = 0;
    m->n_unexp = 0;
}

/* Unlink *pp (a node of the posted list); fixes the tail when the last node goes. */
static struct vfi_mrecv* unlink_posted(struct vfi_matcher* m, struct vfi_mrecv** pp) {
    struct vfi_mrecv* r = *pp;
    *pp = r->next;
    if (m->posted_tail == &r->next) m->posted_tail = pp;
    r->next = NULL;
    m->n_posted--;
    return r;
}

static struct vfi_munexp* unlink_unexp(struct vfi_matcher* m, struct vfi_munexp** pp) {
    struct vfi_munexp* u = *pp;
    *pp = u->next;
    if (m->unexp_tail == &u->next) m->unexp_tail = pp;
    u->next = NULL;
    m->n_unexp--;
    return u;
}

struct vfi_mrecv* vfi_match_arrival(struct vfi_matcher* m, uint64_t tag, uint64_t src) {
    for (struct vfi_mrecv** pp = &m->posted; *pp; pp = &(*pp)->next)
        if (vfi_match_hit((*pp)->tag, (*pp)->ignore, (*pp)->src, tag, src)) return unlink_posted(m, pp);
    return NULL;
}

void vfi_match_add_unexp(struct vfi_matcher* m, struct vfi_munexp* u) {
    u->next = NULL;
    *m->unexp_tail = u;
    m->unexp_tail = &u->next;
    m->n_unexp++;
}

void vfi_match_add_posted(struct vfi_matcher* m, struct vfi_mrecv* r) {
    r->next = NULL;
    *m->posted_tail = r;
    m->posted_tail = &r->next;
    m->n_posted++;
}

struct vfi_munexp* vfi_match_find_unexp(struct vfi_matcher* m, uint64_t tag, uint64_t ignore, uint64_t src, bool take) {
    for (struct vfi_munexp** pp = &m->unexp; *pp; pp = &(*pp)->next) {
        struct vfi_munexp* u = *pp;
        if (u->claim || !vfi_match_hit(tag, ignore, src, u->tag, u->src)) continue;
        return take ? unlink_unexp(m, pp) : u;
    }
    return NULL;
}

struct vfi_munexp* vfi_match_take_claimed(struct vfi_matcher* m, const void* claim) {
    if (!claim) return NULL;
    for (struct vfi_munexp** pp = &m->unexp; *pp; pp = &(*pp)->next)
        if ((*pp)->claim == claim) return unlink_unexp(m, pp);
    return NULL;
}

bool vfi_match_remove_posted(struct vfi_matcher* m, struct vfi_mrecv* r) {
    for (struct vfi_mrecv** pp = &m->posted; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            unlink_posted(m, pp);
            return true;
        }
    return false;
}

struct vfi_mrecv* vfi_match_pop_posted(struct vfi_matcher* m) {
    return m->posted ? unlink_posted(m, &m->posted) : NULL;
}

struct vfi_munexp* vfi_match_pop_unexp(struct vfi_matcher* m) {
    return m->unexp ? unlink_unexp(m, &m->unexp) : NULL;
}
