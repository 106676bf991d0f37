// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// The portable VELO driver core (see velo_core.h). Freestanding: no libc.
#include "velo_core.h"

#include "velo/velo_hw.h"
#include "velo/velo_uapi.h"

#define CORE_MAX_VPIDS 256u
#define CORE_QUIESCE_POLLS 100000u
#define CORE_DEFAULT_GRANTS 1024u

struct velo_core {
    const struct velo_core_ops* ops;
    void* ctx;
    struct velo_core_caps caps;
    unsigned next_vpid;                       // round-robin allocation cursor
    struct velo_core_ep* ep[CORE_MAX_VPIDS];  // by data vpid
    unsigned nep;
};

// ------------------------------------------------------------------ small freestanding helpers
static void core_log(const struct velo_core* c, int level, const char* a, unsigned long long v) {
    // "a" followed by v in hex, without printf
    char buf[160];
    unsigned n = 0;
    if (!c->ops->log) return;
    while (*a && n < sizeof buf - 20) buf[n++] = *a++;
    buf[n++] = '0';
    buf[n++] = 'x';
    int started = 0;
    for (int s = 60; s >= 0; s -= 4) {
        unsigned d = (unsigned)(v >> s) & 0xF;
        if (d || started || s == 0) {
            buf[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
            started = 1;
        }
    }
    buf[n] = 0;
    c->ops->log(c->ctx, level, buf);
}

static uint32_t rd(const struct velo_core* c, uint32_t off) {
    return c->ops->reg_read32(c->ctx, off);
}
static void wr(const struct velo_core* c, uint32_t off, uint32_t v) {
    c->ops->reg_write32(c->ctx, off, v);
}

// ------------------------------------------------------------------ probe
int velo_core_probe(const struct velo_core_ops* ops, void* ctx, struct velo_core** out) {
    if (!ops || !out || !ops->reg_read32 || !ops->reg_write32 || !ops->dma_alloc || !ops->dma_free || !ops->zalloc ||
        !ops->free)
        return -VELO_CORE_EINVAL;
    *out = 0;
    struct velo_core tmp = {.ops = ops, .ctx = ctx};
    struct velo_core_caps k = {0};
    // walk the block chain: ID first, each block names the next, at most 16 blocks, forward only
    uint32_t off = 0;
    int nblk = 0;
    int have_ctrl = 0, have_vpid = 0, have_cnt = 0;
    for (;;) {
        uint32_t type = rd(&tmp, off + VELO_BLKHDR_TYPE);
        if (off == 0 && type != VELO_ID_MAGIC) {
            core_log(&tmp, VELO_CORE_LOG_ERR, "velo: not a VELO device, ID type ", type);
            return -VELO_CORE_ENODEV;
        }
        if (type == VELO_BLK_CTRL_TYPE) {
            k.ctrl_base = off;
            have_ctrl = 1;
        } else if (type == VELO_BLK_COUNTERS_TYPE) {
            k.counters_base = off;
            have_cnt = 1;
        } else if (type == VELO_BLK_VPID_TYPE) {
            k.vpid_base = off;
            have_vpid = 1;
        }
        uint32_t next = rd(&tmp, off + VELO_BLKHDR_NEXT);
        if (next == 0) break;
        if (next <= off || next >= (1u << VELO_BAR_REGS_BITS) || ++nblk > 16) {
            core_log(&tmp, VELO_CORE_LOG_ERR, "velo: broken register block chain at ", off);
            return -VELO_CORE_ENODEV;
        }
        off = next;
    }
    if (!have_ctrl || !have_vpid || !have_cnt) {
        core_log(&tmp, VELO_CORE_LOG_ERR, "velo: register blocks missing, found mask ",
                 (unsigned)(have_ctrl | have_vpid << 1 | have_cnt << 2));
        return -VELO_CORE_ENODEV;
    }
    k.spec_hash = rd(&tmp, VELO_REG_ID_SPEC_HASH);
    if (k.spec_hash != VELO_SPEC_HASH) {
        core_log(&tmp, VELO_CORE_LOG_ERR, "velo: NIC built from another spec, SPEC_HASH ", k.spec_hash);
        return -VELO_CORE_EPROTO;
    }
    k.design_version = rd(&tmp, VELO_REG_ID_DESIGN_VERSION);
    uint32_t caps = rd(&tmp, VELO_REG_ID_CAPS);
    k.node_bits = (uint32_t)VELO_FIELD_GET(VELO_REG_ID_CAPS_NODE_BITS, caps);
    k.vpid_bits = (uint32_t)VELO_FIELD_GET(VELO_REG_ID_CAPS_VPID_BITS, caps);
    k.tlp_bytes = (uint32_t)VELO_FIELD_GET(VELO_REG_ID_CAPS_TLP_BYTES, caps);
    k.link_bytes = (uint32_t)VELO_FIELD_GET(VELO_REG_ID_CAPS_LINK_BYTES, caps);
    k.msg_max = (uint32_t)VELO_FIELD_GET(VELO_REG_ID_CAPS_MSG_MAX, caps);
    const uint32_t vb = k.vpid_base - VELO_BLK_VPID_BASE;  // registers relative to the found block
    k.num_vpids = rd(&tmp, VELO_REG_VPID_NUM_VPIDS + vb);
    k.table_off = rd(&tmp, VELO_REG_VPID_TABLE_OFFSET + vb);
    k.table_stride = rd(&tmp, VELO_REG_VPID_TABLE_STRIDE + vb);
    k.user_off = rd(&tmp, VELO_REG_VPID_USER_OFFSET + vb);
    k.user_stride = rd(&tmp, VELO_REG_VPID_USER_STRIDE + vb);
    k.num_counters = rd(&tmp, VELO_REG_COUNTERS_COUNT + (k.counters_base - VELO_BLK_COUNTERS_BASE));
    k.node_id = rd(&tmp, VELO_REG_CTRL_NODE_ID + (k.ctrl_base - VELO_BLK_CTRL_BASE));
    if (k.node_bits < VELO_MIN_NODE_BITS || k.node_bits > VELO_MAX_NODE_BITS || k.vpid_bits < 2 ||
        k.vpid_bits > VELO_MAX_VPID_BITS || k.num_vpids != (1u << k.vpid_bits) || k.msg_max != VELO_MSG_MAX ||
        k.table_stride < 16 || k.user_stride < 4096 ||
        k.table_off + (uint64_t)k.num_vpids * k.table_stride > (1u << VELO_BAR_REGS_BITS) ||
        k.user_off + (uint64_t)k.num_vpids * k.user_stride > (1u << VELO_BAR_REGS_BITS)) {
        core_log(&tmp, VELO_CORE_LOG_ERR, "velo: implausible CAPS/VPID block, CAPS ", caps);
        return -VELO_CORE_ENODEV;
    }
    struct velo_core* c = (struct velo_core*)ops->zalloc(ctx, sizeof *c);
    if (!c) return -VELO_CORE_ENOMEM;
    c->ops = ops;
    c->ctx = ctx;
    c->caps = k;
    c->next_vpid = 0;
    *out = c;
    return 0;
}

const struct velo_core_caps* velo_core_caps(const struct velo_core* c) {
    return &c->caps;
}

static uint32_t reg_ctrl(const struct velo_core* c, uint32_t reg) {
    return reg - VELO_BLK_CTRL_BASE + c->caps.ctrl_base;
}

int velo_core_enable(struct velo_core* c, uint32_t node_id) {
    if (node_id >= (1u << c->caps.node_bits)) return -VELO_CORE_EINVAL;
    wr(c, reg_ctrl(c, VELO_REG_CTRL_CONTROL), 0);
    wr(c, reg_ctrl(c, VELO_REG_CTRL_NODE_ID), node_id);
    wr(c, reg_ctrl(c, VELO_REG_CTRL_CONTROL), (uint32_t)VELO_FIELD_PREP(VELO_REG_CTRL_CONTROL_ENABLE, 1));
    uint32_t back = rd(c, reg_ctrl(c, VELO_REG_CTRL_NODE_ID));
    if (back != node_id) {
        core_log(c, VELO_CORE_LOG_ERR, "velo: NODE_ID read back ", back);
        return -VELO_CORE_EIO;
    }
    c->caps.node_id = node_id;
    return 0;
}

void velo_core_refresh(struct velo_core* c) {
    c->caps.node_id = rd(c, reg_ctrl(c, VELO_REG_CTRL_NODE_ID));
}

// ------------------------------------------------------------------ mailbox programming
static uint32_t tbl(const struct velo_core* c, unsigned vpid, uint32_t reg) {
    return c->caps.table_off + vpid * c->caps.table_stride + reg;
}
static uint32_t user_page(const struct velo_core* c, unsigned vpid) {
    return c->caps.user_off + vpid * c->caps.user_stride;
}

static int program_mailbox(struct velo_core* c, unsigned vpid, uint64_t dma, unsigned log2) {
    wr(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_CFG), 0);
    wr(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_BASE_LO), (uint32_t)dma);
    wr(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_BASE_HI), (uint32_t)(dma >> 32));
    wr(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_WP), 0);
    wr(c, user_page(c, vpid) + VELO_TBL_VPID_USER_MB_RP, 0);
    const uint32_t cfg = (uint32_t)(VELO_FIELD_PREP(VELO_TBL_VPID_TABLE_MB_CFG_ENABLE, 1) |
                                    VELO_FIELD_PREP(VELO_TBL_VPID_TABLE_MB_CFG_LOG2_LINES, log2));
    wr(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_CFG), cfg);
    // read back: flushes the posted writes and checks them
    uint32_t back = rd(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_CFG));
    uint32_t lo = rd(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_BASE_LO));
    if (back != cfg || lo != ((uint32_t)dma & ~63u)) {
        core_log(c, VELO_CORE_LOG_ERR, "velo: MB_CFG read back wrong: ", back);
        wr(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_CFG), 0);
        return -VELO_CORE_EIO;
    }
    return 0;
}

// Disable a vpid and wait until the NIC holds nothing for it. 0 or -ETIMEDOUT.
static int quiesce(struct velo_core* c, unsigned vpid) {
    wr(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_CFG), 0);
    wr(c, reg_ctrl(c, VELO_REG_CTRL_QUIESCE_VPID), vpid);
    for (unsigned i = 0; i < CORE_QUIESCE_POLLS; ++i) {
        uint32_t s = rd(c, reg_ctrl(c, VELO_REG_CTRL_QUIESCE_STATUS));
        if (s != 0xFFFFFFFFu && !VELO_FIELD_GET(VELO_REG_CTRL_QUIESCE_STATUS_BUSY, s)) return 0;
        if (c->ops->relax) c->ops->relax(c->ctx);
    }
    core_log(c, VELO_CORE_LOG_ERR, "velo: vpid never quiesced: ", vpid);
    return -VELO_CORE_ETIMEDOUT;
}

static size_t ring_bytes(unsigned log2) {
    size_t b = (size_t)64 << log2;
    return b < 4096 ? 4096 : b;
}

int velo_core_ep_open(struct velo_core* c, const struct velo_core_ep_params* p, const struct velo_core_ep** out) {
    if (!c || !p || !out) return -VELO_CORE_EINVAL;
    *out = 0;
    const unsigned vb = c->caps.vpid_bits;
    const unsigned half = VELO_CTL_VPID_BIT(vb);  // endpoints live in [0, half)
    if (p->log2_lines < VELO_MBOX_LOG2_MIN || p->log2_lines > VELO_MBOX_LOG2_MAX ||
        p->ctl_log2_lines < VELO_MBOX_LOG2_MIN || p->ctl_log2_lines > VELO_MBOX_LOG2_MAX)
        return -VELO_CORE_EINVAL;
    unsigned vpid;
    if (p->vpid >= 0) {
        if ((unsigned)p->vpid >= half) return -VELO_CORE_EINVAL;
        vpid = (unsigned)p->vpid;
        if (c->ep[vpid]) return -VELO_CORE_EADDRINUSE;
    } else {
        unsigned i;
        for (i = 0; i < half; ++i) {
            unsigned v = (c->next_vpid + i) % half;
            if (!c->ep[v]) break;
        }
        if (i == half) return -VELO_CORE_ENOSPC;
        vpid = (c->next_vpid + i) % half;
        c->next_vpid = (vpid + 1) % half;
    }
    struct velo_core_ep* e = (struct velo_core_ep*)c->ops->zalloc(c->ctx, sizeof *e);
    if (!e) return -VELO_CORE_ENOMEM;
    e->max_grants = p->max_grants ? p->max_grants : CORE_DEFAULT_GRANTS;
    e->grants = (struct velo_core_grant_ent*)c->ops->zalloc(c->ctx, sizeof(struct velo_core_grant_ent) * e->max_grants);
    if (!e->grants) {
        c->ops->free(c->ctx, e);
        return -VELO_CORE_ENOMEM;
    }
    e->vpid = vpid;
    e->ctl_vpid = VELO_CTL_VPID(vpid, vb);
    e->log2_lines = p->log2_lines;
    e->ctl_log2_lines = p->ctl_log2_lines;
    e->owner = p->owner;
    e->ring_bytes = ring_bytes(p->log2_lines);
    e->ctl_ring_bytes = ring_bytes(p->ctl_log2_lines);
    e->user_page_off = user_page(c, e->vpid);
    e->ctl_user_page_off = user_page(c, e->ctl_vpid);
    e->ring = c->ops->dma_alloc(c->ctx, e->ring_bytes, &e->ring_dma, &e->ring_cookie);
    e->ctl_ring = c->ops->dma_alloc(c->ctx, e->ctl_ring_bytes, &e->ctl_ring_dma, &e->ctl_ring_cookie);
    int rc = (!e->ring || !e->ctl_ring) ? -VELO_CORE_ENOMEM : 0;
    if (!rc && ((e->ring_dma | e->ctl_ring_dma) & 63)) rc = -VELO_CORE_EINVAL;
    if (!rc) rc = program_mailbox(c, e->vpid, e->ring_dma, e->log2_lines);
    if (!rc) {
        rc = program_mailbox(c, e->ctl_vpid, e->ctl_ring_dma, e->ctl_log2_lines);
        if (rc && quiesce(c, e->vpid)) {
            // the data vpid does not quiesce: leak its ring rather than reuse it
            e->ring = 0;
        }
    }
    if (rc) {
        if (e->ring) c->ops->dma_free(c->ctx, e->ring, e->ring_bytes, e->ring_dma, e->ring_cookie);
        if (e->ctl_ring) c->ops->dma_free(c->ctx, e->ctl_ring, e->ctl_ring_bytes, e->ctl_ring_dma, e->ctl_ring_cookie);
        c->ops->free(c->ctx, e->grants);
        c->ops->free(c->ctx, e);
        return rc;
    }
    c->ep[vpid] = e;
    ++c->nep;
    *out = e;
    return 0;
}

const struct velo_core_ep* velo_core_ep_find(const struct velo_core* c, unsigned vpid) {
    if (!c || vpid >= CORE_MAX_VPIDS) return 0;
    return c->ep[vpid];
}

int velo_core_ep_close(struct velo_core* c, unsigned vpid) {
    if (!c || vpid >= CORE_MAX_VPIDS || !c->ep[vpid]) return -VELO_CORE_ENOENT;
    struct velo_core_ep* e = c->ep[vpid];
    c->ep[vpid] = 0;
    --c->nep;
    for (unsigned i = 0; i < e->max_grants; ++i) e->grants[i].used = 0;
    e->ngrants = 0;
    int q1 = quiesce(c, e->vpid);
    int q2 = quiesce(c, e->ctl_vpid);
    // memory is reused only after the NIC has nothing left for the vpid
    if (!q1) c->ops->dma_free(c->ctx, e->ring, e->ring_bytes, e->ring_dma, e->ring_cookie);
    if (!q2) c->ops->dma_free(c->ctx, e->ctl_ring, e->ctl_ring_bytes, e->ctl_ring_dma, e->ctl_ring_cookie);
    c->ops->free(c->ctx, e->grants);
    c->ops->free(c->ctx, e);
    return q1 ? q1 : q2;
}

int velo_core_release_owner(struct velo_core* c, uint64_t owner) {
    int n = 0;
    for (unsigned v = 0; v < CORE_MAX_VPIDS; ++v) {
        if (c->ep[v] && c->ep[v]->owner == owner) {
            velo_core_ep_close(c, v);
            ++n;
        }
    }
    return n;
}

void velo_core_remove(struct velo_core* c) {
    if (!c) return;
    for (unsigned v = 0; v < CORE_MAX_VPIDS; ++v)
        if (c->ep[v]) velo_core_ep_close(c, v);
    c->ops->free(c->ctx, c);
}

unsigned velo_core_ep_count(const struct velo_core* c) {
    return c->nep;
}

// ------------------------------------------------------------------ grants
uint64_t velo_core_window_off(const struct velo_core* c, unsigned src_vpid, unsigned dst_node, unsigned dst_vpid) {
    const unsigned vb = c->caps.vpid_bits, nb = c->caps.node_bits;
    return ((uint64_t)dst_vpid << VELO_SEND_ADDR_DST_VPID_SHIFT(vb, nb)) |
           ((uint64_t)dst_node << VELO_SEND_ADDR_DST_NODE_SHIFT(vb, nb)) |
           ((uint64_t)src_vpid << VELO_SEND_ADDR_SRC_VPID_SHIFT(vb, nb));
}

int velo_core_grant(struct velo_core* c, unsigned vpid, unsigned from, unsigned dst_node, unsigned dst_vpid,
                    uint64_t* window_off) {
    if (!c || vpid >= CORE_MAX_VPIDS || !c->ep[vpid]) return -VELO_CORE_ENOENT;
    struct velo_core_ep* e = c->ep[vpid];
    const unsigned vb = c->caps.vpid_bits;
    if (from > 1 || dst_node >= (1u << c->caps.node_bits) || dst_vpid >= c->caps.num_vpids) return -VELO_CORE_EINVAL;
    if (from == 0 && VELO_IS_CTL_VPID(dst_vpid, vb)) return -VELO_CORE_EINVAL;
    int free_slot = -1;
    for (unsigned i = 0; i < e->max_grants; ++i) {
        struct velo_core_grant_ent* g = &e->grants[i];
        if (!g->used) {
            if (free_slot < 0) free_slot = (int)i;
            continue;
        }
        if (g->from == from && g->dst_node == dst_node && g->dst_vpid == dst_vpid) {
            if (window_off) *window_off = g->window_off;
            return (int)i;
        }
    }
    if (free_slot < 0) return -VELO_CORE_ENOSPC;
    struct velo_core_grant_ent* g = &e->grants[free_slot];
    g->used = 1;
    g->from = (uint8_t)from;
    g->dst_node = dst_node;
    g->dst_vpid = dst_vpid;
    g->window_off = velo_core_window_off(c, from ? e->ctl_vpid : e->vpid, dst_node, dst_vpid);
    ++e->ngrants;
    if (window_off) *window_off = g->window_off;
    return free_slot;
}

int velo_core_revoke(struct velo_core* c, unsigned vpid, unsigned grant_id) {
    if (!c || vpid >= CORE_MAX_VPIDS || !c->ep[vpid]) return -VELO_CORE_ENOENT;
    struct velo_core_ep* e = c->ep[vpid];
    if (grant_id >= e->max_grants || !e->grants[grant_id].used) return -VELO_CORE_ENOENT;
    e->grants[grant_id].used = 0;
    --e->ngrants;
    return 0;
}

const struct velo_core_grant_ent* velo_core_grant_get(const struct velo_core* c, unsigned vpid, unsigned grant_id) {
    if (!c || vpid >= CORE_MAX_VPIDS || !c->ep[vpid]) return 0;
    const struct velo_core_ep* e = c->ep[vpid];
    if (grant_id >= e->max_grants || !e->grants[grant_id].used) return 0;
    return &e->grants[grant_id];
}
