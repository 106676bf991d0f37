// SPDX-License-Identifier: MIT
// mca_btl_velo: send descriptors (btl_velo_frag.h): their class, the two free lists (eager limit,
// max send size), and the completion of a descriptor by ownership. See docs/mpi.md.
#include "btl_velo_frag.h"

static void frag_ctor(opal_object_t* o) {
    mca_btl_velo_frag_t* f = (mca_btl_velo_frag_t*)o;
    f->base.des_segments = f->segments;
    f->base.des_segment_count = 1;
    f->data = (uint8_t*)(f + 1);  // the inline buffer follows the descriptor (free list element size)
    f->endpoint = NULL;
    f->list = NULL;
    f->cap = 0;
}
OBJ_CLASS_INSTANCE(mca_btl_velo_frag_t, mca_btl_base_descriptor_t, frag_ctor, NULL);

int mca_btl_velo_frag_lists_init(mca_btl_velo_module_t* m) {
    const mca_btl_velo_component_t* c = &mca_btl_velo_component;
    int r = opal_free_list_init(&m->frags_eager,
                                sizeof(mca_btl_velo_frag_t) + mca_btl_velo_round64(m->super.btl_eager_limit),
                                opal_cache_line_size, OBJ_CLASS(mca_btl_velo_frag_t), 0, opal_cache_line_size,
                                c->free_list_num, c->free_list_max, c->free_list_inc, NULL, 0, NULL, NULL, NULL);
    if (r == OPAL_SUCCESS)
        r = opal_free_list_init(&m->frags_max,
                                sizeof(mca_btl_velo_frag_t) + mca_btl_velo_round64(m->super.btl_max_send_size),
                                opal_cache_line_size, OBJ_CLASS(mca_btl_velo_frag_t), 0, opal_cache_line_size, 0,
                                c->free_list_max, 4, NULL, 0, NULL, NULL, NULL);
    return r;
}

// Completion of a descriptor that will not be (or was) sent: callback and release by ownership.
void mca_btl_velo_frag_complete(mca_btl_velo_module_t* m, mca_btl_velo_frag_t* f, int status) {
    if (f->internal) {
        mca_btl_velo_frag_return(f);
        return;
    }
    const uint32_t flags = f->base.des_flags;
    if (f->base.des_cbfunc) f->base.des_cbfunc(&m->super, f->endpoint, &f->base, status);
    if (flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) mca_btl_velo_frag_return(f);
}
