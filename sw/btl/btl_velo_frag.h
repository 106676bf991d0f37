/* SPDX-License-Identifier: MIT */
/*
 * mca_btl_velo: send descriptors. Two free lists: descriptors of the eager limit and of the max
 * send size, each with its inline buffer behind it (btl_velo_frag.c). See docs/mpi.md.
 */
#ifndef BTL_VELO_FRAG_H
#define BTL_VELO_FRAG_H

#include "btl_velo.h"

BEGIN_C_DECLS

/* A send descriptor: alloc/prepare_src/sendi (internal copies). Its inline buffer follows it. */
struct mca_btl_velo_frag {
    mca_btl_base_descriptor_t base;
    mca_btl_base_segment_t segments[2];
    mca_btl_base_endpoint_t* endpoint;
    opal_free_list_t* list; /* where it returns */
    size_t cap;             /* bytes of data[] */
    size_t off;             /* fragment bytes already stored */
    uint8_t tag;
    uint8_t started;  /* its first message is out */
    uint8_t internal; /* made by the BTL (sendi that could not go out at once): no callback */
    uint8_t* data;    /* the inline buffer */
};
OBJ_CLASS_DECLARATION(mca_btl_velo_frag_t);

int mca_btl_velo_frag_lists_init(mca_btl_velo_module_t* m); /* the two free lists (module open) */
/* A descriptor that will not be (or was) sent: its callback and release by ownership. */
void mca_btl_velo_frag_complete(mca_btl_velo_module_t* m, mca_btl_velo_frag_t* f, int status);

static inline size_t mca_btl_velo_round64(size_t n) {
    return (n + 63) & ~(size_t)63;
}

static inline mca_btl_velo_frag_t* mca_btl_velo_frag_get(mca_btl_velo_module_t* m, size_t size) {
    opal_free_list_t* list;
    size_t cap;
    if (size <= m->super.btl_eager_limit) {
        list = &m->frags_eager;
        cap = mca_btl_velo_round64(m->super.btl_eager_limit);
    } else if (size <= m->super.btl_max_send_size) {
        list = &m->frags_max;
        cap = mca_btl_velo_round64(m->super.btl_max_send_size);
    } else {
        return NULL;
    }
    mca_btl_velo_frag_t* f = (mca_btl_velo_frag_t*)opal_free_list_get(list);
    if (!f) return NULL;
    f->list = list;
    f->cap = cap;
    f->base.des_segments = f->segments;
    f->base.des_segment_count = 1;
    f->base.des_cbfunc = NULL;
    f->base.des_cbdata = NULL;
    f->base.des_context = NULL;
    f->base.des_flags = 0;
    f->base.order = MCA_BTL_NO_ORDER;
    f->off = 0;
    f->started = 0;
    f->internal = 0;
    f->tag = 0;
    return f;
}

static inline void mca_btl_velo_frag_return(mca_btl_velo_frag_t* f) {
    opal_free_list_return(f->list, &f->base.super);
}

END_C_DECLS

#endif /* BTL_VELO_FRAG_H */
