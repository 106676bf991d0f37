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
    unsigned policy;                // VELO_POLICY_*
    unsigned max_log2, max_grants;  // limits of VELO_IOC_EP_OPEN
    struct velo_core_job jobs[VELO_CORE_MAX_JOBS];
    // RMA (caps.rma_base != 0): one allocation holding the region table, the page table's
    // master copy, its owner map and the compaction scratch
    void* rma_mem;
    struct velo_core_region* rg;  // [nrg]
    uint64_t* pte;                // [npte] frame numbers as written to the NIC
    uint64_t* tmp;                // [npte] compaction scratch
    uint16_t* pte_rg;             // [npte] region + 1 using the entry, 0: free
    unsigned nrg, npte, next_rg, pte_nfree, max_regions;
    void (*rma_unpin)(void* ctx, void* pin);
};

static int rma_setup(struct velo_core* c);
static void rma_release_ep(struct velo_core* c, unsigned vpid, uint64_t owner);

// ------------------------------------------------------------------ small freestanding helpers
static void log_io(const struct velo_core_ops* ops, void* ctx, int level, const char* a, unsigned long long v) {
    // "a" followed by v in hex, without printf
    char buf[160];
    unsigned n = 0;
    if (!ops->log) return;
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
    ops->log(ctx, level, buf);
}

static void core_log(const struct velo_core* c, int level, const char* a, unsigned long long v) {
    log_io(c->ops, c->ctx, level, a, v);
}

static uint32_t rd(const struct velo_core* c, uint32_t off) {
    return c->ops->reg_read32(c->ctx, off);
}
static void wr(const struct velo_core* c, uint32_t off, uint32_t v) {
    c->ops->reg_write32(c->ctx, off, v);
}
// register read before the core exists (probe keeps no large object on the stack)
static uint32_t prd(const struct velo_core_ops* ops, void* ctx, uint32_t off) {
    return ops->reg_read32(ctx, off);
}

// ------------------------------------------------------------------ probe
int velo_core_probe(const struct velo_core_ops* ops, void* ctx, struct velo_core** out) {
    if (!ops || !out || !ops->reg_read32 || !ops->reg_write32 || !ops->dma_alloc || !ops->dma_free || !ops->zalloc ||
        !ops->free)
        return -VELO_CORE_EINVAL;
    *out = NULL;
    struct velo_core_caps k = {0};
    // walk the block chain: ID first, each block names the next, at most 16 blocks, forward only
    uint32_t off = 0;
    int nblk = 0;
    int have_ctrl = 0, have_vpid = 0, have_cnt = 0, have_net = 0;
    for (;;) {
        uint32_t type = prd(ops, ctx, off + VELO_BLKHDR_TYPE);
        if (off == 0 && type != VELO_ID_MAGIC) {
            log_io(ops, ctx, VELO_CORE_LOG_ERR, "velo: not a VELO device, ID type ", type);
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
        } else if (type == VELO_BLK_NET_TYPE) {
            k.net_base = off;
            have_net = 1;
        } else if (type == VELO_BLK_IRQ_TYPE) {
            k.irq_base = off;
        } else if (type == VELO_BLK_RMA_TYPE) {
            k.rma_base = off;
        }
        uint32_t next = prd(ops, ctx, off + VELO_BLKHDR_NEXT);
        if (next == 0) break;
        if (next <= off || next >= (1u << VELO_BAR_REGS_BITS) || ++nblk > 16) {
            log_io(ops, ctx, VELO_CORE_LOG_ERR, "velo: broken register block chain at ", off);
            return -VELO_CORE_ENODEV;
        }
        off = next;
    }
    if (!have_ctrl || !have_vpid || !have_cnt) {
        log_io(ops, ctx, VELO_CORE_LOG_ERR, "velo: register blocks missing, found mask ",
               (unsigned)(have_ctrl | have_vpid << 1 | have_cnt << 2));
        return -VELO_CORE_ENODEV;
    }
    k.spec_hash = prd(ops, ctx, VELO_REG_ID_SPEC_HASH);
    if (k.spec_hash != VELO_SPEC_HASH) {
        log_io(ops, ctx, VELO_CORE_LOG_ERR, "velo: NIC built from another spec, SPEC_HASH ", k.spec_hash);
        return -VELO_CORE_EPROTO;
    }
    k.design_version = prd(ops, ctx, VELO_REG_ID_DESIGN_VERSION);
    uint32_t caps = prd(ops, ctx, VELO_REG_ID_CAPS);
    k.node_bits = (uint32_t)VELO_FIELD_GET(VELO_REG_ID_CAPS_NODE_BITS, caps);
    k.vpid_bits = (uint32_t)VELO_FIELD_GET(VELO_REG_ID_CAPS_VPID_BITS, caps);
    k.tlp_bytes = (uint32_t)VELO_FIELD_GET(VELO_REG_ID_CAPS_TLP_BYTES, caps);
    k.link_bytes = (uint32_t)VELO_FIELD_GET(VELO_REG_ID_CAPS_LINK_BYTES, caps);
    k.msg_max = (uint32_t)VELO_FIELD_GET(VELO_REG_ID_CAPS_MSG_MAX, caps);
    const uint32_t vb = k.vpid_base - VELO_BLK_VPID_BASE;  // registers relative to the found block
    k.num_vpids = prd(ops, ctx, VELO_REG_VPID_NUM_VPIDS + vb);
    k.table_off = prd(ops, ctx, VELO_REG_VPID_TABLE_OFFSET + vb);
    k.table_stride = prd(ops, ctx, VELO_REG_VPID_TABLE_STRIDE + vb);
    k.user_off = prd(ops, ctx, VELO_REG_VPID_USER_OFFSET + vb);
    k.user_stride = prd(ops, ctx, VELO_REG_VPID_USER_STRIDE + vb);
    k.num_counters = prd(ops, ctx, VELO_REG_COUNTERS_COUNT + (k.counters_base - VELO_BLK_COUNTERS_BASE));
    k.node_id = prd(ops, ctx, VELO_REG_CTRL_NODE_ID + (k.ctrl_base - VELO_BLK_CTRL_BASE));
    if (k.node_bits < VELO_MIN_NODE_BITS || k.node_bits > VELO_MAX_NODE_BITS || k.vpid_bits < 2 ||
        k.vpid_bits > VELO_MAX_VPID_BITS || k.num_vpids != (1u << k.vpid_bits) || k.msg_max != VELO_MSG_MAX ||
        k.table_stride < 16 || k.user_stride < 4096 ||
        k.table_off + (uint64_t)k.num_vpids * k.table_stride > (1u << VELO_BAR_REGS_BITS) ||
        k.user_off + (uint64_t)k.num_vpids * k.user_stride > (1u << VELO_BAR_REGS_BITS) || k.num_counters > 64) {
        log_io(ops, ctx, VELO_CORE_LOG_ERR, "velo: implausible CAPS/VPID block, CAPS ", caps);
        return -VELO_CORE_ENODEV;
    }
    if (have_net) {
        const uint32_t nb = k.net_base - VELO_BLK_NET_BASE;
        const uint32_t ports = prd(ops, ctx, VELO_REG_NET_PORTS + nb);
        k.nports = (uint32_t)VELO_FIELD_GET(VELO_REG_NET_PORTS_NP, ports);
        k.route_off = prd(ops, ctx, VELO_REG_NET_ROUTE_OFFSET + nb);
        k.port_off = prd(ops, ctx, VELO_REG_NET_PORT_OFFSET + nb);
        k.port_stride = prd(ops, ctx, VELO_REG_NET_PORT_STRIDE + nb);
        if (k.route_off + ((uint64_t)VELO_TBL_ROUTE_TABLE_STRIDE << k.node_bits) > (1u << VELO_BAR_REGS_BITS) ||
            (k.nports && (k.port_stride < VELO_TBL_NET_PORT_STRIDE ||
                          k.port_off + (uint64_t)k.nports * k.port_stride > (1u << VELO_BAR_REGS_BITS)))) {
            log_io(ops, ctx, VELO_CORE_LOG_ERR, "velo: implausible NET block, PORTS ", ports);
            return -VELO_CORE_ENODEV;
        }
    }
    if (k.irq_base) {  // IRQ block: where the pending bitmap is, one bit per vpid
        const uint32_t ib = k.irq_base - VELO_BLK_IRQ_BASE;
        k.irq_pending_off = prd(ops, ctx, VELO_REG_IRQ_PENDING_OFFSET + ib);
        k.irq_pending_words = prd(ops, ctx, VELO_REG_IRQ_PENDING_WORDS + ib);
        if (k.irq_pending_words != (k.num_vpids + 31) / 32 || !k.irq_pending_off || (k.irq_pending_off & 3) ||
            k.irq_pending_off + 4ull * k.irq_pending_words > (1u << VELO_BAR_REGS_BITS)) {
            log_io(ops, ctx, VELO_CORE_LOG_ERR, "velo: implausible IRQ block, PENDING_OFFSET ", k.irq_pending_off);
            return -VELO_CORE_ENODEV;
        }
    }
    if (k.rma_base) {  // RMA block: the geometry of the translation unit and where its tables are
        const uint32_t rb = k.rma_base - VELO_BLK_RMA_BASE;
        const uint32_t rc = prd(ops, ctx, VELO_REG_RMA_CAPS + rb);
        k.rma_region_bits = (uint32_t)VELO_FIELD_GET(VELO_REG_RMA_CAPS_REGION_BITS, rc);
        k.rma_pte_bits = (uint32_t)VELO_FIELD_GET(VELO_REG_RMA_CAPS_PTE_BITS, rc);
        k.rma_mtu = (uint32_t)VELO_FIELD_GET(VELO_REG_RMA_CAPS_MTU, rc);
        k.rma_region_off = prd(ops, ctx, VELO_REG_RMA_REGION_OFFSET + rb);
        k.rma_pte_off = prd(ops, ctx, VELO_REG_RMA_PTE_OFFSET + rb);
        k.rma_nq_off = prd(ops, ctx, VELO_REG_RMA_NQ_OFFSET + rb);
        k.rma_num_counters = prd(ops, ctx, VELO_REG_RMA_CNT_COUNT + rb);
        const uint64_t bar = 1u << VELO_BAR_REGS_BITS;
        if (k.rma_region_bits < VELO_MIN_RMA_REGION_BITS || k.rma_region_bits > VELO_MAX_RMA_REGION_BITS ||
            k.rma_pte_bits < VELO_MIN_RMA_PTE_BITS || k.rma_pte_bits > VELO_MAX_RMA_PTE_BITS ||
            k.rma_mtu < VELO_MIN_RMA_MTU || k.rma_mtu > VELO_MAX_RMA_MTU || (k.rma_mtu & 7) || !k.rma_region_off ||
            !k.rma_pte_off || !k.rma_nq_off || ((k.rma_region_off | k.rma_pte_off | k.rma_nq_off) & 3) ||
            k.rma_region_off + ((uint64_t)VELO_TBL_RMA_REGION_STRIDE << k.rma_region_bits) > bar ||
            k.rma_pte_off + ((uint64_t)VELO_TBL_RMA_PTE_STRIDE << k.rma_pte_bits) > bar ||
            k.rma_nq_off + (uint64_t)VELO_TBL_RMA_NQ_TABLE_STRIDE * k.num_vpids > bar || k.rma_num_counters > 64) {
            log_io(ops, ctx, VELO_CORE_LOG_ERR, "velo: implausible RMA block, CAPS ", rc);
            return -VELO_CORE_ENODEV;
        }
    }
    struct velo_core* c = (struct velo_core*)ops->zalloc(ctx, sizeof *c);
    if (!c) return -VELO_CORE_ENOMEM;
    c->ops = ops;
    c->ctx = ctx;
    c->caps = k;
    c->next_vpid = 0;
    c->policy = VELO_POLICY_JOB;
    c->max_log2 = VELO_MBOX_LOG2_MAX;
    c->max_grants = CORE_DEFAULT_GRANTS;
    if (k.rma_base && rma_setup(c)) {
        ops->free(ctx, c);
        return -VELO_CORE_ENOMEM;
    }
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
static uint32_t nq_reg(const struct velo_core* c, unsigned vpid, uint32_t reg) {
    return c->caps.rma_nq_off + vpid * VELO_TBL_RMA_NQ_TABLE_STRIDE + reg;
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
static int quiesce_poll(struct velo_core* c, unsigned vpid);
static int quiesce(struct velo_core* c, unsigned vpid) {
    wr(c, tbl(c, vpid, VELO_TBL_VPID_TABLE_MB_CFG), 0);
    return quiesce_poll(c, vpid);
}
// Wait until the NIC holds nothing for vpid (mailbox and notification queue writes).
static int quiesce_poll(struct velo_core* c, unsigned vpid) {
    wr(c, reg_ctrl(c, VELO_REG_CTRL_QUIESCE_VPID), vpid);
    for (unsigned i = 0; i < CORE_QUIESCE_POLLS; ++i) {
        uint32_t s = rd(c, reg_ctrl(c, VELO_REG_CTRL_QUIESCE_STATUS));
        if (s != 0xFFFFFFFFu && !VELO_FIELD_GET(VELO_REG_CTRL_QUIESCE_STATUS_BUSY, s)) return 0;
        if (c->ops->relax) c->ops->relax(c->ctx);
    }
    core_log(c, VELO_CORE_LOG_ERR, "velo: vpid never quiesced: ", vpid);
    return -VELO_CORE_ETIMEDOUT;
}

// ------------------------------------------------------------------ access policy helpers
static unsigned half_vpids(const struct velo_core* c) {
    return VELO_CTL_VPID_BIT(c->caps.vpid_bits);
}

static int job_find(const struct velo_core* c, uint64_t key) {
    if (!key) return -1;
    for (int i = 0; i < VELO_CORE_MAX_JOBS; ++i)
        if (c->jobs[i].key == key) return i;
    return -1;
}

// the job owning data vpid v, -1: none
static int vpid_job(const struct velo_core* c, unsigned v) {
    for (int i = 0; i < VELO_CORE_MAX_JOBS; ++i)
        if (c->jobs[i].key && v >= c->jobs[i].vpid_lo && v <= c->jobs[i].vpid_hi) return i;
    return -1;
}

// may an endpoint of `job` hold data vpid v
static int vpid_allowed(const struct velo_core* c, int privileged, int job, unsigned v) {
    if (c->policy == VELO_POLICY_OPEN || privileged) return 1;
    return vpid_job(c, v) == job;
}

// the job an endpoint opens in (-1: none), or -EACCES
static int open_policy(const struct velo_core* c, const struct velo_core_ep_params* p, int* job) {
    *job = -1;
    if (c->policy == VELO_POLICY_OPEN) return 0;
    if (p->job_key) {
        const int j = job_find(c, p->job_key);
        if (j < 0) return -VELO_CORE_EACCES;
        if (c->jobs[j].uid != VELO_CORE_UID_ANY && c->jobs[j].uid != p->uid && !p->privileged) return -VELO_CORE_EACCES;
        *job = j;
        return 0;
    }
    if (c->policy == VELO_POLICY_STRICT && !p->privileged) return -VELO_CORE_EACCES;
    return 0;
}

static size_t ring_bytes(unsigned log2) {
    size_t b = (size_t)64 << log2;
    return b < 4096 ? 4096 : b;
}

int velo_core_ep_open(struct velo_core* c, const struct velo_core_ep_params* p, const struct velo_core_ep** out) {
    if (!c || !p || !out) return -VELO_CORE_EINVAL;
    *out = NULL;
    const unsigned vb = c->caps.vpid_bits;
    const unsigned half = VELO_CTL_VPID_BIT(vb);  // endpoints live in [0, half)
    if (p->log2_lines < VELO_MBOX_LOG2_MIN || p->log2_lines > VELO_MBOX_LOG2_MAX ||
        p->ctl_log2_lines < VELO_MBOX_LOG2_MIN || p->ctl_log2_lines > VELO_MBOX_LOG2_MAX)
        return -VELO_CORE_EINVAL;
    if (p->vpid >= 0 && (unsigned)p->vpid >= half) return -VELO_CORE_EINVAL;
    int job = -1;
    const int pr = open_policy(c, p, &job);
    if (pr) return pr;
    unsigned vpid;
    if (p->vpid >= 0) {
        vpid = (unsigned)p->vpid;
        if (!vpid_allowed(c, p->privileged != 0, job, vpid)) return -VELO_CORE_EACCES;
        if (c->ep[vpid]) return -VELO_CORE_EADDRINUSE;
    } else {
        // any free vpid of the endpoint's partition (privilege does not widen the choice)
        unsigned i;
        for (i = 0; i < half; ++i) {
            unsigned v = (c->next_vpid + i) % half;
            if (!c->ep[v] && vpid_allowed(c, 0, job, v)) break;
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
    e->job_key = p->job_key;
    e->pid = p->pid;
    e->uid = p->uid;
    e->privileged = p->privileged ? 1u : 0u;
    e->job = job;
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
            e->ring = NULL;
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
    if (job >= 0) ++c->jobs[job].nep;
    *out = e;
    return 0;
}

const struct velo_core_ep* velo_core_ep_find(const struct velo_core* c, unsigned vpid) {
    if (!c || vpid >= CORE_MAX_VPIDS) return NULL;
    return c->ep[vpid];
}

int velo_core_ep_close(struct velo_core* c, unsigned vpid) {
    if (!c || vpid >= CORE_MAX_VPIDS || !c->ep[vpid]) return -VELO_CORE_ENOENT;
    struct velo_core_ep* e = c->ep[vpid];
    c->ep[vpid] = NULL;
    --c->nep;
    if (e->job >= 0) --c->jobs[e->job].nep;
    for (unsigned i = 0; i < e->max_grants; ++i) e->grants[i].used = 0;
    e->ngrants = 0;
    // regions first (each quiesced, then unpinned), then the notification queue goes with the
    // data vpid's quiesce (CTRL.QUIESCE_STATUS covers it)
    rma_release_ep(c, e->vpid, e->owner);
    if (e->nq) wr(c, nq_reg(c, e->vpid, VELO_TBL_RMA_NQ_TABLE_NQ_CFG), 0);
    int q1 = quiesce(c, e->vpid);
    int q2 = quiesce(c, e->ctl_vpid);
    // memory is reused only after the NIC has nothing left for the vpid
    if (!q1) c->ops->dma_free(c->ctx, e->ring, e->ring_bytes, e->ring_dma, e->ring_cookie);
    if (!q2) c->ops->dma_free(c->ctx, e->ctl_ring, e->ctl_ring_bytes, e->ctl_ring_dma, e->ctl_ring_cookie);
    if (!q1 && e->nq) c->ops->dma_free(c->ctx, e->nq, e->nq_bytes, e->nq_dma, e->nq_cookie);
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
    if (c->rma_mem) c->ops->free(c->ctx, c->rma_mem);
    c->ops->free(c->ctx, c);
}

unsigned velo_core_ep_count(const struct velo_core* c) {
    return c->nep;
}

int velo_core_reclaim(struct velo_core* c, unsigned vpid, uint64_t* owner) {
    if (!c || vpid >= c->caps.num_vpids) return -VELO_CORE_ENOENT;
    const unsigned data = vpid & ~VELO_CTL_VPID_BIT(c->caps.vpid_bits);
    if (!c->ep[data]) return -VELO_CORE_ENOENT;
    if (owner) *owner = c->ep[data]->owner;
    return velo_core_ep_close(c, data);
}

// ------------------------------------------------------------------ access policy
int velo_core_set_policy(struct velo_core* c, unsigned policy) {
    if (!c || policy > VELO_POLICY_STRICT) return -VELO_CORE_EINVAL;
    if (c->nep && policy != c->policy) return -VELO_CORE_EBUSY;
    c->policy = policy;
    return 0;
}

unsigned velo_core_policy(const struct velo_core* c) {
    return c->policy;
}

int velo_core_set_limits(struct velo_core* c, unsigned max_ring_log2, unsigned max_grants) {
    if (!c || max_ring_log2 < VELO_RING_LOG2_MIN || max_ring_log2 > VELO_MBOX_LOG2_MAX || max_grants < 1 ||
        max_grants > 4096)
        return -VELO_CORE_EINVAL;
    c->max_log2 = max_ring_log2;
    c->max_grants = max_grants;
    return 0;
}

int velo_core_job_set(struct velo_core* c, const struct velo_core_job* j) {
    if (!c || !j || !j->key) return -VELO_CORE_EINVAL;
    if (j->vpid_lo > j->vpid_hi || j->vpid_hi >= half_vpids(c) || j->node_lo > j->node_hi ||
        j->node_hi >= (1u << c->caps.node_bits))
        return -VELO_CORE_EINVAL;
    int slot = job_find(c, j->key);
    for (int i = 0; i < VELO_CORE_MAX_JOBS; ++i) {
        const struct velo_core_job* o = &c->jobs[i];
        if (i != slot && o->key && j->vpid_lo <= o->vpid_hi && o->vpid_lo <= j->vpid_hi) return -VELO_CORE_EEXIST;
    }
    if (slot >= 0 && c->jobs[slot].nep) return -VELO_CORE_EBUSY;
    // no endpoint may already sit in the range (it would end up in a job it did not open in),
    // nor hold a grant into it (the job's vpids would be reachable from outside)
    for (unsigned v = j->vpid_lo; v <= j->vpid_hi; ++v)
        if (c->ep[v]) return -VELO_CORE_EBUSY;
    for (unsigned v = 0; v < CORE_MAX_VPIDS && c->policy != VELO_POLICY_OPEN; ++v) {
        const struct velo_core_ep* e = c->ep[v];
        for (unsigned g = 0; e && !e->privileged && g < e->max_grants; ++g) {
            const unsigned d = e->grants[g].dst_vpid & ~VELO_CTL_VPID_BIT(c->caps.vpid_bits);
            if (e->grants[g].used && d >= j->vpid_lo && d <= j->vpid_hi) return -VELO_CORE_EBUSY;
        }
    }
    if (slot < 0) {
        for (int i = 0; i < VELO_CORE_MAX_JOBS && slot < 0; ++i)
            if (!c->jobs[i].key) slot = i;
        if (slot < 0) return -VELO_CORE_ENOSPC;
    }
    c->jobs[slot] = *j;
    c->jobs[slot].nep = 0;
    return 0;
}

int velo_core_job_del(struct velo_core* c, uint64_t key) {
    const int slot = c ? job_find(c, key) : -1;
    if (slot < 0) return -VELO_CORE_ENOENT;
    if (c->jobs[slot].nep) return -VELO_CORE_EBUSY;
    c->jobs[slot].key = 0;
    return 0;
}

const struct velo_core_job* velo_core_job_at(const struct velo_core* c, unsigned i) {
    if (!c || i >= VELO_CORE_MAX_JOBS || !c->jobs[i].key) return NULL;
    return &c->jobs[i];
}

int velo_core_may_reach(const struct velo_core* c, const struct velo_core_ep* e, unsigned dst_node, unsigned dst_vpid) {
    if (c->policy == VELO_POLICY_OPEN || e->privileged) return 0;
    const unsigned data = dst_vpid & ~VELO_CTL_VPID_BIT(c->caps.vpid_bits);
    if (vpid_job(c, data) != e->job) return -VELO_CORE_EACCES;
    if (e->job >= 0 && (dst_node < c->jobs[e->job].node_lo || dst_node > c->jobs[e->job].node_hi))
        return -VELO_CORE_EACCES;
    return 0;
}

// ------------------------------------------------------------------ clients (open files)
void velo_core_client_init(struct velo_core_client* cl, uint64_t owner, uint32_t pid, uint32_t uid,
                           uint32_t privileged) {
    cl->owner = owner;
    cl->pid = pid;
    cl->uid = uid;
    cl->privileged = privileged ? 1u : 0u;
    cl->vpid = -1;
}

const struct velo_core_ep* velo_core_client_ep(const struct velo_core* c, const struct velo_core_client* cl, int* err) {
    const struct velo_core_ep* e = NULL;
    int r = -VELO_CORE_EBADFD;
    if (c && cl && cl->vpid >= 0) {
        r = -VELO_CORE_ENODEV;
        if ((unsigned)cl->vpid < CORE_MAX_VPIDS && c->ep[cl->vpid] && c->ep[cl->vpid]->owner == cl->owner) {
            e = c->ep[cl->vpid];
            r = 0;
        }
    }
    if (err) *err = r;
    return e;
}

int velo_core_client_close(struct velo_core* c, struct velo_core_client* cl) {
    const struct velo_core_ep* e = velo_core_client_ep(c, cl, NULL);
    return e ? velo_core_ep_close(c, e->vpid) : 0;
}

// ------------------------------------------------------------------ ioctl arguments
// size of the structure of ioctl nr, 0 for an unknown nr
static uint32_t uapi_size(unsigned nr) {
    switch (nr) {
        case VELO_IOC_NR_INFO:
            return sizeof(struct velo_uapi_info);
        case VELO_IOC_NR_EP_OPEN:
            return sizeof(struct velo_uapi_ep_open);
        case VELO_IOC_NR_GRANT:
            return sizeof(struct velo_uapi_grant);
        case VELO_IOC_NR_REVOKE:
            return sizeof(struct velo_uapi_revoke);
        case VELO_IOC_NR_WAIT:
            return sizeof(struct velo_uapi_wait);
        case VELO_IOC_NR_JOB_SET:
            return sizeof(struct velo_uapi_job);
        case VELO_IOC_NR_JOB_DEL:
            return sizeof(struct velo_uapi_job_del);
        case VELO_IOC_NR_NODE_SET:
            return sizeof(struct velo_uapi_node);
        case VELO_IOC_NR_ROUTE_SET:
            return sizeof(struct velo_uapi_route);
        case VELO_IOC_NR_PORT_SET:
            return sizeof(struct velo_uapi_port);
        case VELO_IOC_NR_RMA_SETUP:
            return sizeof(struct velo_uapi_rma_setup);
        case VELO_IOC_NR_REGISTER:
            return sizeof(struct velo_uapi_register);
        case VELO_IOC_NR_DEREGISTER:
            return sizeof(struct velo_uapi_deregister);
        case VELO_IOC_NR_REPIN:
            return sizeof(struct velo_uapi_repin);
        default:
            return 0;
    }
}

int velo_core_uapi_size(unsigned nr, uint32_t* minsz, uint32_t* ksz) {
    const uint32_t n = uapi_size(nr);
    if (!n) return -VELO_CORE_ENOTTY;
    // every structure is still its version-1 self: the smallest accepted is the whole of it
    if (minsz) *minsz = n;
    if (ksz) *ksz = n;
    return 0;
}

static int ioc_info(const struct velo_core* c, struct velo_uapi_info* a) {
    if (a->flags) return -VELO_CORE_EINVAL;
    const struct velo_core_caps* k = &c->caps;
    a->uapi_version = VELO_UAPI_VERSION;
    a->spec_hash = k->spec_hash;
    a->design_version = k->design_version;
    a->node_id = k->node_id;
    a->node_bits = k->node_bits;
    a->vpid_bits = k->vpid_bits;
    a->msg_max = k->msg_max;
    a->num_vpids = k->num_vpids;
    a->link_up = (uint32_t)VELO_FIELD_GET(VELO_REG_CTRL_STATUS_LINK_UP, velo_core_status(c));
    a->clock_khz = 0;
    a->policy = c->policy;
    a->out_flags = 0;
    a->nports = k->nports;
    a->link_status = velo_core_link_status(c);
    return 0;
}

static int ioc_ep_open(struct velo_core* c, struct velo_core_client* cl, struct velo_uapi_ep_open* a) {
    if (a->flags || a->rsvd0 || a->vpid < -1) return -VELO_CORE_EINVAL;
    if (cl->vpid >= 0) return -VELO_CORE_EBUSY;  // one endpoint per file, even after a reclaim
    const unsigned log2 = a->log2_lines ? a->log2_lines : VELO_RING_LOG2_DEFAULT;
    const unsigned ctl = a->ctl_log2_lines ? a->ctl_log2_lines : VELO_CTL_RING_LOG2_DEFAULT;
    if (log2 < VELO_RING_LOG2_MIN || log2 > c->max_log2 || ctl < VELO_RING_LOG2_MIN || ctl > c->max_log2)
        return -VELO_CORE_EINVAL;
    struct velo_core_ep_params p = {0};
    p.vpid = a->vpid;
    p.log2_lines = log2;
    p.ctl_log2_lines = ctl;
    p.max_grants = c->max_grants;
    p.owner = cl->owner;
    p.job_key = a->job_key;
    p.pid = cl->pid;
    p.uid = cl->uid;
    p.privileged = cl->privileged;
    const struct velo_core_ep* e = NULL;
    const int r = velo_core_ep_open(c, &p, &e);
    if (r) return r;
    cl->vpid = (int)e->vpid;
    a->out_vpid = e->vpid;
    a->out_ctl_vpid = e->ctl_vpid;
    a->out_log2_lines = e->log2_lines;
    a->out_ctl_log2_lines = e->ctl_log2_lines;
    a->ring_bytes = e->ring_bytes;
    a->ctl_ring_bytes = e->ctl_ring_bytes;
    a->user_page_off = VELO_TBL_VPID_USER_MB_RP;
    a->max_grants = e->max_grants;
    return 0;
}

static int ioc_grant(struct velo_core* c, struct velo_core_client* cl, struct velo_uapi_grant* a) {
    if (a->flags) return -VELO_CORE_EINVAL;
    int err;
    const struct velo_core_ep* e = velo_core_client_ep(c, cl, &err);
    if (!e) return err;
    uint64_t off = 0;
    const int g = velo_core_grant(c, e->vpid, a->from, a->dst_node, a->dst_vpid, &off);
    if (g < 0) return g;
    a->grant_id = (uint32_t)g;
    a->window_off = off;
    return 0;
}

static int ioc_revoke(struct velo_core* c, struct velo_core_client* cl, const struct velo_uapi_revoke* a) {
    if (a->flags || a->rsvd) return -VELO_CORE_EINVAL;
    int err;
    const struct velo_core_ep* e = velo_core_client_ep(c, cl, &err);
    if (!e) return err;
    return velo_core_revoke(c, e->vpid, a->grant_id);
}

static int ioc_wait(const struct velo_core* c, const struct velo_core_client* cl, struct velo_uapi_wait* a) {
    const uint32_t rings = VELO_WAIT_DATA | VELO_WAIT_CTL;
    if (!a->flags || (a->flags & ~rings) || a->rsvd) return -VELO_CORE_EINVAL;
    const int m = velo_core_ring_ready(c, cl, a->flags, a->rp, a->ctl_rp);
    if (m < 0) return m;
    a->out_ready = (uint32_t)m;
    return 0;
}

static int ioc_job_set(struct velo_core* c, const struct velo_core_client* cl, const struct velo_uapi_job* a) {
    if (!cl->privileged) return -VELO_CORE_EPERM;
    if ((a->flags & ~(uint32_t)VELO_JOB_F_UID) || a->rsvd) return -VELO_CORE_EINVAL;
    if ((a->flags & VELO_JOB_F_UID) ? a->uid == VELO_CORE_UID_ANY : a->uid != 0) return -VELO_CORE_EINVAL;
    struct velo_core_job j = {0};
    j.key = a->job_key;
    j.uid = (a->flags & VELO_JOB_F_UID) ? a->uid : VELO_CORE_UID_ANY;
    j.vpid_lo = a->vpid_lo;
    j.vpid_hi = a->vpid_hi;
    j.node_lo = a->node_lo;
    j.node_hi = a->node_hi;
    return velo_core_job_set(c, &j);
}

static int ioc_job_del(struct velo_core* c, const struct velo_core_client* cl, const struct velo_uapi_job_del* a) {
    if (!cl->privileged) return -VELO_CORE_EPERM;
    if (a->flags) return -VELO_CORE_EINVAL;
    return velo_core_job_del(c, a->job_key);
}

static int ioc_node_set(struct velo_core* c, const struct velo_core_client* cl, const struct velo_uapi_node* a) {
    if (!cl->privileged) return -VELO_CORE_EPERM;
    if (a->flags || a->rsvd || a->node_id >= (1u << c->caps.node_bits)) return -VELO_CORE_EINVAL;
    if (c->nep) return -VELO_CORE_EBUSY;  // endpoints were told the old id
    return velo_core_enable(c, a->node_id);
}

static int ioc_route_set(struct velo_core* c, const struct velo_core_client* cl, const struct velo_uapi_route* a) {
    if (!cl->privileged) return -VELO_CORE_EPERM;
    if (a->flags & ~(uint32_t)VELO_ROUTE_F_VALID) return -VELO_CORE_EINVAL;
    if (!(a->flags & VELO_ROUTE_F_VALID) && a->route) return -VELO_CORE_EINVAL;
    return velo_core_route_set(c, a->dst_node, (a->flags & VELO_ROUTE_F_VALID) != 0, a->route);
}

static int ioc_port_set(struct velo_core* c, const struct velo_core_client* cl, const struct velo_uapi_port* a) {
    if (!cl->privileged) return -VELO_CORE_EPERM;
    if (a->flags) return -VELO_CORE_EINVAL;
    return velo_core_port_set(c, a->port, a->cfg);
}

static int ioc_rma_setup(struct velo_core* c, const struct velo_core_client* cl, struct velo_uapi_rma_setup* a);
static int ioc_register(struct velo_core* c, const struct velo_core_client* cl, struct velo_uapi_register* a);
static int ioc_deregister(struct velo_core* c, const struct velo_core_client* cl, const struct velo_uapi_deregister* a);
static int ioc_repin(struct velo_core* c, const struct velo_core_client* cl, struct velo_uapi_repin* a);

int velo_core_ioctl(struct velo_core* c, struct velo_core_client* cl, unsigned nr, void* arg) {
    uint32_t minsz = 0;
    if (!c || !cl || !arg) return -VELO_CORE_EINVAL;
    const int r = velo_core_uapi_size(nr, &minsz, NULL);
    if (r) return r;
    // every structure starts with __u32 argsz
    if (*(const uint32_t*)arg < minsz) return -VELO_CORE_EINVAL;
    switch (nr) {
        case VELO_IOC_NR_INFO:
            return ioc_info(c, (struct velo_uapi_info*)arg);
        case VELO_IOC_NR_EP_OPEN:
            return ioc_ep_open(c, cl, (struct velo_uapi_ep_open*)arg);
        case VELO_IOC_NR_GRANT:
            return ioc_grant(c, cl, (struct velo_uapi_grant*)arg);
        case VELO_IOC_NR_REVOKE:
            return ioc_revoke(c, cl, (const struct velo_uapi_revoke*)arg);
        case VELO_IOC_NR_WAIT:
            return ioc_wait(c, cl, (struct velo_uapi_wait*)arg);
        case VELO_IOC_NR_JOB_SET:
            return ioc_job_set(c, cl, (const struct velo_uapi_job*)arg);
        case VELO_IOC_NR_JOB_DEL:
            return ioc_job_del(c, cl, (const struct velo_uapi_job_del*)arg);
        case VELO_IOC_NR_NODE_SET:
            return ioc_node_set(c, cl, (const struct velo_uapi_node*)arg);
        case VELO_IOC_NR_ROUTE_SET:
            return ioc_route_set(c, cl, (const struct velo_uapi_route*)arg);
        case VELO_IOC_NR_PORT_SET:
            return ioc_port_set(c, cl, (const struct velo_uapi_port*)arg);
        case VELO_IOC_NR_RMA_SETUP:
            return ioc_rma_setup(c, cl, (struct velo_uapi_rma_setup*)arg);
        case VELO_IOC_NR_REGISTER:
            return ioc_register(c, cl, (struct velo_uapi_register*)arg);
        case VELO_IOC_NR_DEREGISTER:
            return ioc_deregister(c, cl, (const struct velo_uapi_deregister*)arg);
        case VELO_IOC_NR_REPIN:
            return ioc_repin(c, cl, (struct velo_uapi_repin*)arg);
        default:
            return -VELO_CORE_ENOTTY;
    }
}

// ------------------------------------------------------------------ ring state (sleep/wake)
// Is there an entry at read pointer rp: the line's PHASE is that of rp's pass (docs/spec.md).
static int ring_entry_at(const void* ring, unsigned log2, uint32_t rp) {
    const size_t line = (size_t)(rp & ((1u << log2) - 1u)) << 6;
    const uint64_t h = *(const volatile uint64_t*)((const uint8_t*)ring + line);
    return VELO_FIELD_GET(VELO_MBOX_HDR_PHASE, h) == (((rp >> log2) & 1u) ^ 1u);
}

int velo_core_ring_ready(const struct velo_core* c, const struct velo_core_client* cl, unsigned rings, uint32_t rp,
                         uint32_t ctl_rp) {
    int err;
    const struct velo_core_ep* e = velo_core_client_ep(c, cl, &err);
    if (!e) return err;
    if (!rings || (rings & ~(unsigned)(VELO_WAIT_DATA | VELO_WAIT_CTL))) return -VELO_CORE_EINVAL;
    int m = 0;
    if ((rings & VELO_WAIT_DATA) && ring_entry_at(e->ring, e->log2_lines, rp)) m |= VELO_WAIT_DATA;
    if ((rings & VELO_WAIT_CTL) && ring_entry_at(e->ctl_ring, e->ctl_log2_lines, ctl_rp)) m |= VELO_WAIT_CTL;
    return m;
}

int velo_core_ring_ready_nic(const struct velo_core* c, const struct velo_core_client* cl) {
    int err;
    const struct velo_core_ep* e = velo_core_client_ep(c, cl, &err);
    if (!e) return err;
    const uint32_t rp = rd(c, e->user_page_off + VELO_TBL_VPID_USER_MB_RP);
    const uint32_t ctl_rp = rd(c, e->ctl_user_page_off + VELO_TBL_VPID_USER_MB_RP);
    return velo_core_ring_ready(c, cl, VELO_WAIT_DATA | VELO_WAIT_CTL, rp, ctl_rp);
}

// ------------------------------------------------------------------ mmap
int velo_core_mmap_check(const struct velo_core* c, const struct velo_core_client* cl, uint64_t off, uint64_t len,
                         unsigned acc, struct velo_core_map* m) {
    const unsigned all = VELO_CORE_MAP_READ | VELO_CORE_MAP_WRITE | VELO_CORE_MAP_EXEC | VELO_CORE_MAP_SHARED;
    if (!c || !cl || !m) return -VELO_CORE_EINVAL;
    int err;
    const struct velo_core_ep* e = velo_core_client_ep(c, cl, &err);
    if (!e) return err;
    if ((off & 4095u) || !len || (len & 4095u) || (acc & ~all) || !(acc & VELO_CORE_MAP_SHARED))
        return -VELO_CORE_EINVAL;
    if (acc & VELO_CORE_MAP_EXEC) return -VELO_CORE_EACCES;
    *m = (struct velo_core_map){0};
    if (off == VELO_MMAP_RING || off == VELO_MMAP_CTL_RING) {
        const int ctl = off == VELO_MMAP_CTL_RING;
        if (len != (ctl ? e->ctl_ring_bytes : e->ring_bytes)) return -VELO_CORE_EINVAL;
        if (acc & VELO_CORE_MAP_WRITE) return -VELO_CORE_EACCES;  // the NIC's, read-only
        m->kind = ctl ? VELO_CORE_MAP_CTL_RING : VELO_CORE_MAP_RING;
        m->cpu = ctl ? e->ctl_ring : e->ring;
        m->dma = ctl ? e->ctl_ring_dma : e->ring_dma;
        m->cookie = ctl ? e->ctl_ring_cookie : e->ring_cookie;
        m->bytes = ctl ? e->ctl_ring_bytes : e->ring_bytes;
        return 0;
    }
    if (off == VELO_MMAP_USER_PAGE || off == VELO_MMAP_CTL_USER_PAGE) {
        const int ctl = off == VELO_MMAP_CTL_USER_PAGE;
        if (len != 4096) return -VELO_CORE_EINVAL;
        m->kind = ctl ? VELO_CORE_MAP_CTL_USER : VELO_CORE_MAP_USER;
        m->bar = VELO_BAR_REGS;
        m->bar_off = ctl ? e->ctl_user_page_off : e->user_page_off;
        return 0;
    }
    if (off == VELO_MMAP_NQ) {
        if (!e->nq || len != e->nq_bytes) return -VELO_CORE_EINVAL;
        if (acc & VELO_CORE_MAP_WRITE) return -VELO_CORE_EACCES;  // the NIC's, read-only
        m->kind = VELO_CORE_MAP_NQ;
        m->cpu = e->nq;
        m->dma = e->nq_dma;
        m->cookie = e->nq_cookie;
        m->bytes = e->nq_bytes;
        return 0;
    }
    if (off == VELO_MMAP_RMA_CMD) {
        if (!c->caps.rma_base || !e->nq || len != 4096) return -VELO_CORE_EINVAL;
        if (acc & VELO_CORE_MAP_READ) return -VELO_CORE_EACCES;  // BAR4 reads are UR
        m->kind = VELO_CORE_MAP_RMA_CMD;
        m->bar = VELO_BAR_RMA;
        m->bar_off = (uint64_t)e->vpid << VELO_RMA_ADDR_SRC_VPID_SHIFT(c->caps.vpid_bits, c->caps.node_bits);
        return 0;
    }
    if (off >= VELO_MMAP_WINDOW && off < VELO_MMAP_NQ) {
        const uint64_t g = (off - VELO_MMAP_WINDOW) >> 12;
        if (g >= e->max_grants || len != 4096) return -VELO_CORE_EINVAL;
        const struct velo_core_grant_ent* ge = velo_core_grant_get(c, e->vpid, (unsigned)g);
        if (!ge) return -VELO_CORE_EINVAL;                       // nothing granted under that id
        if (acc & VELO_CORE_MAP_READ) return -VELO_CORE_EACCES;  // window reads are UR
        m->kind = VELO_CORE_MAP_WINDOW;
        m->bar = VELO_BAR_SEND;
        m->bar_off = ge->window_off;
        return 0;
    }
    return -VELO_CORE_EINVAL;
}

// ------------------------------------------------------------------ network control, status
int velo_core_route_set(struct velo_core* c, unsigned dst_node, int valid, uint32_t route) {
    if (!c->caps.net_base || !c->caps.route_off) return -VELO_CORE_EOPNOTSUPP;
    if (dst_node >= (1u << c->caps.node_bits) || route >= (1u << VELO_TBL_ROUTE_TABLE_ROUTE_ROUTE_WIDTH))
        return -VELO_CORE_EINVAL;
    const uint32_t v = valid ? (uint32_t)(VELO_FIELD_PREP(VELO_TBL_ROUTE_TABLE_ROUTE_VALID, 1) |
                                          VELO_FIELD_PREP(VELO_TBL_ROUTE_TABLE_ROUTE_ROUTE, route))
                             : 0u;
    wr(c, c->caps.route_off + dst_node * VELO_TBL_ROUTE_TABLE_STRIDE + VELO_TBL_ROUTE_TABLE_ROUTE, v);
    return 0;
}

int velo_core_port_set(struct velo_core* c, unsigned port, uint32_t cfg) {
    const uint64_t known = VELO_FIELD_MASK(VELO_TBL_NET_PORT_CFG_DIM) | VELO_FIELD_MASK(VELO_TBL_NET_PORT_CFG_DATELINE);
    if (port < 1 || port > c->caps.nports || (cfg & ~known)) return -VELO_CORE_EINVAL;
    wr(c, c->caps.port_off + (port - 1) * c->caps.port_stride + VELO_TBL_NET_PORT_CFG, cfg);
    return 0;
}

uint32_t velo_core_counter(const struct velo_core* c, unsigned i) {
    if (i >= c->caps.num_counters) return 0;
    return rd(c, c->caps.counters_base - VELO_BLK_COUNTERS_BASE + VELO_REG_COUNTERS_COUNTER_BASE + 4u * i);
}

uint32_t velo_core_link_status(const struct velo_core* c) {
    if (!c->caps.net_base || !c->caps.nports) return 0;
    const uint32_t s = rd(c, c->caps.net_base - VELO_BLK_NET_BASE + VELO_REG_NET_LINK_STATUS);
    return c->caps.nports >= 32 ? s : s & ((1u << c->caps.nports) - 1u);
}

uint32_t velo_core_status(const struct velo_core* c) {
    return rd(c, reg_ctrl(c, VELO_REG_CTRL_STATUS));
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
    if (velo_core_may_reach(c, e, dst_node, dst_vpid)) return -VELO_CORE_EACCES;
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
    if (!c || vpid >= CORE_MAX_VPIDS || !c->ep[vpid]) return NULL;
    const struct velo_core_ep* e = c->ep[vpid];
    if (grant_id >= e->max_grants || !e->grants[grant_id].used) return NULL;
    return &e->grants[grant_id];
}

/* ---- interrupts */
static uint32_t reg_irq(const struct velo_core* c, uint32_t reg) {
    return reg - VELO_BLK_IRQ_BASE + c->caps.irq_base;
}

int velo_core_irq_enable(struct velo_core* c, int on) {
    if (!c) return -VELO_CORE_EINVAL;
    if (!c->caps.irq_base) return -VELO_CORE_ENODEV;
    const uint32_t v = (uint32_t)VELO_FIELD_PREP(VELO_REG_IRQ_CTRL_ENABLE, on ? 1 : 0);
    wr(c, reg_irq(c, VELO_REG_IRQ_CTRL), v);
    const uint32_t back = rd(c, reg_irq(c, VELO_REG_IRQ_CTRL));
    if ((back & (uint32_t)VELO_FIELD_MASK(VELO_REG_IRQ_CTRL_ENABLE)) != v) {
        log_io(c->ops, c->ctx, VELO_CORE_LOG_ERR, "velo: IRQ CTRL read back ", back);
        return -VELO_CORE_EIO;
    }
    return 0;
}

int velo_core_irq_arm(struct velo_core* c, unsigned vpid) {
    if (!c) return -VELO_CORE_EINVAL;
    if (!c->caps.irq_base) return -VELO_CORE_ENODEV;
    if (vpid >= c->caps.num_vpids || vpid >= CORE_MAX_VPIDS) return -VELO_CORE_EINVAL;
    const unsigned data = vpid & ~VELO_CTL_VPID_BIT(c->caps.vpid_bits);
    const struct velo_core_ep* e = c->ep[data];
    if (!e || (e->vpid != vpid && e->ctl_vpid != vpid)) return -VELO_CORE_ENOENT;
    wr(c, reg_irq(c, VELO_REG_IRQ_ARM), vpid);
    // a non-posted read: returns after the arm was performed and after every DMA write the NIC
    // issued before it (completions do not pass posted writes)
    (void)rd(c, reg_irq(c, VELO_REG_IRQ_CTRL));
    return 0;
}

int velo_core_irq_collect(struct velo_core* c, void (*cb)(void*, unsigned), void* ctx) {
    if (!c) return -VELO_CORE_EINVAL;
    if (!c->caps.irq_base) return -VELO_CORE_ENODEV;
    int n = 0;
    for (uint32_t w = 0; w < c->caps.irq_pending_words; ++w) {
        const uint32_t off = c->caps.irq_pending_off + 4 * w;
        uint32_t p = rd(c, off);
        const uint32_t first = 32 * w;
        const uint32_t valid = c->caps.num_vpids - first >= 32 ? 0xFFFFFFFFu : (1u << (c->caps.num_vpids - first)) - 1;
        if (p & ~valid) {
            log_io(c->ops, c->ctx, VELO_CORE_LOG_ERR, "velo: IRQ PENDING read failed, word ", w);
            return -VELO_CORE_EIO;
        }
        if (!p) continue;
        wr(c, off, p);  // write-1-to-clear what is handled now; later entries set their bits again
        for (unsigned b = 0; p; ++b, p >>= 1) {
            if (!(p & 1)) continue;
            ++n;
            if (cb) cb(ctx, first + b);
        }
    }
    return n;
}

/* ---- RMA: notification queues, regions, translation (docs/rma.md §2, §4) */
static uint32_t reg_rma(const struct velo_core* c, uint32_t reg) {
    return reg - VELO_BLK_RMA_BASE + c->caps.rma_base;
}
int velo_core_rma_enable(struct velo_core* c, int on) {
    if (!c) return -VELO_CORE_EINVAL;
    if (!c->caps.rma_base) return -VELO_CORE_EOPNOTSUPP;
    const uint32_t v = (uint32_t)VELO_FIELD_PREP(VELO_REG_RMA_CONTROL_ENABLE, on ? 1 : 0);
    wr(c, reg_rma(c, VELO_REG_RMA_CONTROL), v);
    const uint32_t back = rd(c, reg_rma(c, VELO_REG_RMA_CONTROL));
    if ((back & (uint32_t)VELO_FIELD_MASK(VELO_REG_RMA_CONTROL_ENABLE)) != v) {
        core_log(c, VELO_CORE_LOG_ERR, "velo: RMA CONTROL read back ", back);
        return -VELO_CORE_EIO;
    }
    return 0;
}

static uint32_t rg_reg(const struct velo_core* c, unsigned r, uint32_t reg) {
    return c->caps.rma_region_off + r * VELO_TBL_RMA_REGION_STRIDE + reg;
}
static uint32_t pte_reg(const struct velo_core* c, unsigned i, uint32_t reg) {
    return c->caps.rma_pte_off + i * VELO_TBL_RMA_PTE_STRIDE + reg;
}

static int rma_setup(struct velo_core* c) {
    c->nrg = 1u << c->caps.rma_region_bits;
    c->npte = 1u << c->caps.rma_pte_bits;
    const size_t rg_bytes = sizeof(struct velo_core_region) * c->nrg;
    const size_t pte_bytes = sizeof(uint64_t) * c->npte;
    c->rma_mem = c->ops->zalloc(c->ctx, rg_bytes + 2 * pte_bytes + sizeof(uint16_t) * c->npte);
    if (!c->rma_mem) return -VELO_CORE_ENOMEM;
    uint8_t* p = (uint8_t*)c->rma_mem;
    c->rg = (struct velo_core_region*)p;
    c->pte = (uint64_t*)(p + rg_bytes);
    c->tmp = (uint64_t*)(p + rg_bytes + pte_bytes);
    c->pte_rg = (uint16_t*)(p + rg_bytes + 2 * pte_bytes);
    c->pte_nfree = c->npte;
    c->max_regions = c->nrg < VELO_CORE_MAX_REGIONS_PER_EP ? c->nrg : VELO_CORE_MAX_REGIONS_PER_EP;
    return 0;
}

void velo_core_set_rma_unpin(struct velo_core* c, void (*unpin)(void* ctx, void* pin)) {
    if (c) c->rma_unpin = unpin;
}

uint32_t velo_core_rma_counter(const struct velo_core* c, unsigned i) {
    if (!c || !c->caps.rma_base || i >= c->caps.rma_num_counters) return 0;
    return rd(c, reg_rma(c, VELO_REG_RMA_CNT_BASE) + 4u * i);
}

uint64_t velo_core_rma_pages(uint64_t addr, uint64_t len) {
    if (!len) return 0;
    return (((addr & 4095u) + len - 1) >> 12) + 1;
}

const struct velo_core_region* velo_core_rma_region(const struct velo_core* c, unsigned r) {
    if (!c || !c->rg || r >= c->nrg) return NULL;
    return &c->rg[r];
}

uint64_t velo_core_rma_pte(const struct velo_core* c, unsigned i) {
    if (!c || !c->pte || i >= c->npte) return 0;
    return c->pte[i];
}

// Free runs of the page table, circular (a region's entries may wrap). Calls back with each
// run's start and length; returns the number of free entries.
static unsigned pte_runs(const struct velo_core* c, unsigned need, unsigned* best, unsigned* best_len,
                         unsigned* longest) {
    const unsigned n = c->npte;
    *best = 0;
    *best_len = 0;
    if (longest) *longest = 0;
    if (c->pte_nfree == n) {  // all free: one run
        *best_len = n;
        if (longest) *longest = n;
        return n;
    }
    if (!c->pte_nfree) return 0;
    unsigned u = 0;  // a used entry: runs are scanned starting after it
    while (!c->pte_rg[u]) ++u;
    unsigned run = 0, start = 0;
    for (unsigned k = 1; k <= n; ++k) {
        const unsigned i = (u + k) % n;
        if (!c->pte_rg[i] && k < n) {
            if (!run) start = i;
            ++run;
            continue;
        }
        if (run) {
            if (longest && run > *longest) *longest = run;
            // best fit: the shortest run that holds `need`
            if (run >= need && (!*best_len || run < *best_len)) {
                *best = start;
                *best_len = run;
            }
        }
        run = 0;
    }
    return c->pte_nfree;
}

unsigned velo_core_rma_pte_free(const struct velo_core* c, unsigned* longest) {
    unsigned b, bl, lg = 0;
    if (!c || !c->pte_rg) {
        if (longest) *longest = 0;
        return 0;
    }
    const unsigned f = pte_runs(c, 1, &b, &bl, &lg);
    if (longest) *longest = lg;
    return f;
}

static uint32_t rg_cfg(const struct velo_core_region* g, int alloc, int valid) {
    return (uint32_t)(VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_ALLOC, alloc ? 1 : 0) |
                      VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_VALID, valid ? 1 : 0) |
                      VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_LR, (g->access & VELO_REG_LOCAL_READ) != 0) |
                      VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_LW, (g->access & VELO_REG_LOCAL_WRITE) != 0) |
                      VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_RR, (g->access & VELO_REG_REMOTE_READ) != 0) |
                      VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_RW, (g->access & VELO_REG_REMOTE_WRITE) != 0) |
                      VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_OWNER_VPID, g->owner_vpid) |
                      VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_KEY, g->key));
}

// Wait until the NIC holds no translation of region r (its RG_CFG already withdrawn).
static int rg_quiesce(struct velo_core* c, unsigned r) {
    wr(c, reg_rma(c, VELO_REG_RMA_QUIESCE_REGION), r);
    for (unsigned i = 0; i < CORE_QUIESCE_POLLS; ++i) {
        const uint32_t s = rd(c, reg_rma(c, VELO_REG_RMA_QUIESCE_STATUS));
        if (s != 0xFFFFFFFFu && !VELO_FIELD_GET(VELO_REG_RMA_QUIESCE_STATUS_BUSY, s)) return 0;
        if (c->ops->relax) c->ops->relax(c->ctx);
    }
    core_log(c, VELO_CORE_LOG_ERR, "velo: RMA region never quiesced (its pages stay pinned): ", r);
    return -VELO_CORE_ETIMEDOUT;
}

static void pte_write(struct velo_core* c, unsigned i, uint64_t pfn) {
    c->pte[i] = pfn;
    wr(c, pte_reg(c, i, VELO_TBL_RMA_PTE_PTE_LO), (uint32_t)pfn);
    wr(c, pte_reg(c, i, VELO_TBL_RMA_PTE_PTE_HI), (uint32_t)VELO_FIELD_PREP(VELO_TBL_RMA_PTE_PTE_HI_PFN_HI, pfn >> 32));
}

// A withdrawn, quiesced region gives its page table run back.
static void pte_free_run(struct velo_core* c, struct velo_core_region* g) {
    for (unsigned k = 0; k < g->npte; ++k) {
        const unsigned i = (g->pte_first + k) % c->npte;
        c->pte_rg[i] = 0;
        c->pte[i] = 0;
    }
    c->pte_nfree += g->npte;
    g->npte = 0;
    g->pte_first = 0;
}

// Region r is quiesced with VALID = 0: unpin and forget its translation.
static void rg_drop_translation(struct velo_core* c, struct velo_core_region* g) {
    void* pin = g->pin;
    pte_free_run(c, g);
    g->pin = NULL;
    if (c->rma_unpin && pin) c->rma_unpin(c->ctx, pin);
}

// Relocate every VALID region to the start of the page table. Each is withdrawn and quiesced
// first; if one does not quiesce it stays STUCK (pins kept) and the others are made valid again
// where they were. 0 or -ETIMEDOUT.
static int pte_compact(struct velo_core* c) {
    for (unsigned r = 0; r < c->nrg; ++r)
        if (c->rg[r].state == VELO_CORE_RG_STUCK) return -VELO_CORE_ENOSPC;  // fixed runs: no compaction
    for (unsigned r = 0; r < c->nrg; ++r)
        if (c->rg[r].state == VELO_CORE_RG_VALID)
            wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_CFG), rg_cfg(&c->rg[r], 1, 0));
    int stuck = 0;
    for (unsigned r = 0; r < c->nrg; ++r) {
        if (c->rg[r].state != VELO_CORE_RG_VALID) continue;
        if (rg_quiesce(c, r)) {
            c->rg[r].state = VELO_CORE_RG_STUCK;
            stuck = 1;
        }
    }
    if (stuck) {
        for (unsigned r = 0; r < c->nrg; ++r)
            if (c->rg[r].state == VELO_CORE_RG_VALID)
                wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_CFG), rg_cfg(&c->rg[r], 1, 1));
        return -VELO_CORE_ETIMEDOUT;
    }
    unsigned pos = 0;
    for (unsigned r = 0; r < c->nrg; ++r) {
        struct velo_core_region* g = &c->rg[r];
        if (g->state != VELO_CORE_RG_VALID) continue;
        for (unsigned k = 0; k < g->npte; ++k) c->tmp[pos + k] = c->pte[(g->pte_first + k) % c->npte];
        g->pte_first = pos;
        pos += g->npte;
    }
    for (unsigned i = 0; i < c->npte; ++i) {
        c->pte_rg[i] = 0;
        c->pte[i] = 0;
    }
    for (unsigned r = 0; r < c->nrg; ++r) {
        struct velo_core_region* g = &c->rg[r];
        if (g->state != VELO_CORE_RG_VALID) continue;
        for (unsigned k = 0; k < g->npte; ++k) {
            const unsigned i = g->pte_first + k;
            pte_write(c, i, c->tmp[i]);
            c->pte_rg[i] = (uint16_t)(r + 1);
        }
        wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_PTE),
           (uint32_t)VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_PTE_FIRST, g->pte_first));
        wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_CFG), rg_cfg(g, 1, 1));
    }
    c->pte_nfree = c->npte - pos;
    core_log(c, VELO_CORE_LOG_INFO, "velo: RMA page table compacted, entries in use ", pos);
    return 0;
}

int velo_core_nq_setup(struct velo_core* c, unsigned vpid, unsigned log2) {
    if (!c) return -VELO_CORE_EINVAL;
    if (!c->caps.rma_base) return -VELO_CORE_EOPNOTSUPP;
    if (vpid >= CORE_MAX_VPIDS || !c->ep[vpid]) return -VELO_CORE_ENOENT;
    struct velo_core_ep* e = c->ep[vpid];
    if (log2 < VELO_NQ_LOG2_MIN || log2 > VELO_RMA_NQ_LOG2_MAX) return -VELO_CORE_EINVAL;
    if (e->nq) return -VELO_CORE_EEXIST;
    const size_t bytes = (size_t)VELO_RMA_NQ_ENTRY_BYTES << log2;
    void* cookie = NULL;
    uint64_t dma = 0;
    void* ring = c->ops->dma_alloc(c->ctx, bytes, &dma, &cookie);
    if (!ring) return -VELO_CORE_ENOMEM;
    int rc = (dma & 63) ? -VELO_CORE_EINVAL : 0;
    const uint32_t cfg = (uint32_t)(VELO_FIELD_PREP(VELO_TBL_RMA_NQ_TABLE_NQ_CFG_ENABLE, 1) |
                                    VELO_FIELD_PREP(VELO_TBL_RMA_NQ_TABLE_NQ_CFG_LOG2_ENTRIES, log2));
    if (!rc) {
        wr(c, nq_reg(c, vpid, VELO_TBL_RMA_NQ_TABLE_NQ_CFG), 0);
        wr(c, nq_reg(c, vpid, VELO_TBL_RMA_NQ_TABLE_NQ_BASE_LO), (uint32_t)dma);
        wr(c, nq_reg(c, vpid, VELO_TBL_RMA_NQ_TABLE_NQ_BASE_HI), (uint32_t)(dma >> 32));
        wr(c, nq_reg(c, vpid, VELO_TBL_RMA_NQ_TABLE_NQ_WP), 0);
        wr(c, user_page(c, vpid) + VELO_TBL_VPID_USER_NQ_RP, 0);
        wr(c, nq_reg(c, vpid, VELO_TBL_RMA_NQ_TABLE_NQ_CFG), cfg);
        const uint32_t back = rd(c, nq_reg(c, vpid, VELO_TBL_RMA_NQ_TABLE_NQ_CFG));
        const uint32_t lo = rd(c, nq_reg(c, vpid, VELO_TBL_RMA_NQ_TABLE_NQ_BASE_LO));
        if (back != cfg || lo != ((uint32_t)dma & ~63u)) {
            core_log(c, VELO_CORE_LOG_ERR, "velo: NQ_CFG read back wrong: ", back);
            wr(c, nq_reg(c, vpid, VELO_TBL_RMA_NQ_TABLE_NQ_CFG), 0);
            // the ring is free once the vpid is quiet; if it never is, it is leaked, never reused
            if (quiesce_poll(c, vpid)) return -VELO_CORE_EIO;
            rc = -VELO_CORE_EIO;
        }
    }
    if (rc) {
        c->ops->dma_free(c->ctx, ring, bytes, dma, cookie);
        return rc;
    }
    e->nq = ring;
    e->nq_dma = dma;
    e->nq_cookie = cookie;
    e->nq_bytes = bytes;
    e->nq_log2 = log2;
    return 0;
}

int velo_core_rma_declare(struct velo_core* c, unsigned vpid, uint64_t addr, uint64_t len, unsigned access,
                          uint64_t* nla) {
    if (!c || !nla) return -VELO_CORE_EINVAL;
    if (!c->caps.rma_base) return -VELO_CORE_EOPNOTSUPP;
    if (vpid >= CORE_MAX_VPIDS || !c->ep[vpid]) return -VELO_CORE_ENOENT;
    struct velo_core_ep* e = c->ep[vpid];
    if (!access || (access & ~(unsigned)VELO_REG_ACCESS_ALL) || !len || len > VELO_REG_LEN_MAX ||
        addr + (len - 1) < addr)
        return -VELO_CORE_EINVAL;
    if (velo_core_rma_pages(addr, len) > c->npte || e->nregions >= c->max_regions) return -VELO_CORE_ENOSPC;
    unsigned i;
    for (i = 0; i < c->nrg; ++i)
        if (c->rg[(c->next_rg + i) % c->nrg].state == VELO_CORE_RG_FREE) break;
    if (i == c->nrg) return -VELO_CORE_ENOSPC;
    const unsigned r = (c->next_rg + i) % c->nrg;
    c->next_rg = (r + 1) % c->nrg;  // round robin: an index comes back as late as possible
    struct velo_core_region* g = &c->rg[r];
    g->state = VELO_CORE_RG_DECLARED;
    g->key = (uint8_t)(g->key + 1);  // a new key for every use of the index: stale handles fail
    g->access = (uint8_t)access;
    g->owner_vpid = vpid;
    g->owner = e->owner;
    g->addr = addr;
    g->len = len;
    g->npte = 0;
    g->pte_first = 0;
    g->pin = NULL;
    ++e->nregions;
    // the region is not allocated in the NIC (RG_CFG = 0): its fields may change; RG_CFG last
    wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_PTE), 0);
    wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_START),
       (uint32_t)VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_START_START, addr & 4095u));
    wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_LEN_LO), (uint32_t)len);
    wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_LEN_HI),
       (uint32_t)VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_LEN_HI_LEN_HI, len >> 32));
    wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_CFG), rg_cfg(g, 1, 0));
    *nla = VELO_FIELD_PREP(VELO_RMA_NLA_KEY, g->key) | VELO_FIELD_PREP(VELO_RMA_NLA_REGION, r);
    return (int)r;
}

int velo_core_rma_lookup(const struct velo_core* c, unsigned vpid, uint64_t nla) {
    if (!c || !c->rg || vpid >= CORE_MAX_VPIDS || !c->ep[vpid]) return -VELO_CORE_ENOENT;
    const uint64_t r = VELO_FIELD_GET(VELO_RMA_NLA_REGION, nla);
    if (VELO_FIELD_GET(VELO_RMA_NLA_OFFSET, nla) || r >= c->nrg) return -VELO_CORE_ENOENT;
    const struct velo_core_region* g = &c->rg[r];
    if (g->state == VELO_CORE_RG_FREE || g->key != VELO_FIELD_GET(VELO_RMA_NLA_KEY, nla) || g->owner_vpid != vpid ||
        g->owner != c->ep[vpid]->owner)
        return -VELO_CORE_ENOENT;
    return (int)r;
}

int velo_core_rma_map(struct velo_core* c, unsigned r, unsigned key, const uint64_t* pfns, uint64_t npages, void* pin) {
    if (!c) return -VELO_CORE_EINVAL;
    if (!c->caps.rma_base) return -VELO_CORE_EOPNOTSUPP;
    if (r >= c->nrg || c->rg[r].state != VELO_CORE_RG_DECLARED || c->rg[r].key != key) return -VELO_CORE_ENOENT;
    struct velo_core_region* g = &c->rg[r];
    if (!pfns || npages != velo_core_rma_pages(g->addr, g->len)) return -VELO_CORE_EINVAL;
    for (uint64_t k = 0; k < npages; ++k)
        if (pfns[k] >> 40) return -VELO_CORE_EINVAL;
    const unsigned n = (unsigned)npages;
    unsigned first, run;
    if (pte_runs(c, n, &first, &run, NULL) < n) return -VELO_CORE_ENOSPC;
    if (!run) {  // enough entries, but no run long enough: compact
        const int q = pte_compact(c);
        if (q) return q == -VELO_CORE_ETIMEDOUT ? -VELO_CORE_ENOSPC : q;
        pte_runs(c, n, &first, &run, NULL);
        if (!run) return -VELO_CORE_ENOSPC;
    }
    for (unsigned k = 0; k < n; ++k) {
        const unsigned i = (first + k) % c->npte;
        pte_write(c, i, pfns[k]);
        c->pte_rg[i] = (uint16_t)(r + 1);
    }
    c->pte_nfree -= n;
    g->pte_first = first;
    g->npte = n;
    g->pin = pin;
    g->state = VELO_CORE_RG_VALID;
    wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_PTE), (uint32_t)VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_PTE_FIRST, first));
    wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_CFG), rg_cfg(g, 1, 1));
    // read back (flushes the posted writes): the NIC translates the region before the caller
    // returns to user space, so a peer told of it at once never meets a stale entry
    (void)rd(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_CFG));
    return 0;
}

int velo_core_rma_invalidate(struct velo_core* c, unsigned r, unsigned key) {
    if (!c) return -VELO_CORE_EINVAL;
    if (!c->caps.rma_base) return -VELO_CORE_EOPNOTSUPP;
    if (r >= c->nrg || c->rg[r].state != VELO_CORE_RG_VALID || c->rg[r].key != key) return 0;
    struct velo_core_region* g = &c->rg[r];
    wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_CFG), rg_cfg(g, 1, 0));
    if (rg_quiesce(c, r)) {
        g->state = VELO_CORE_RG_STUCK;
        return -VELO_CORE_ETIMEDOUT;
    }
    g->state = VELO_CORE_RG_DECLARED;
    rg_drop_translation(c, g);
    return 0;
}

// Deregister region r (any state but FREE): RG_CFG = 0, quiesce, unpin, free the index.
static int rg_release(struct velo_core* c, unsigned r) {
    struct velo_core_region* g = &c->rg[r];
    const unsigned vpid = g->owner_vpid;
    if (g->owner && vpid < CORE_MAX_VPIDS && c->ep[vpid] && c->ep[vpid]->owner == g->owner) --c->ep[vpid]->nregions;
    g->owner = 0;  // no client owns it any more (owners are never 0): a STUCK one stays out of use
    wr(c, rg_reg(c, r, VELO_TBL_RMA_REGION_RG_CFG), 0);
    if (rg_quiesce(c, r)) {
        g->state = VELO_CORE_RG_STUCK;
        return -VELO_CORE_ETIMEDOUT;
    }
    rg_drop_translation(c, g);
    g->state = VELO_CORE_RG_FREE;
    g->owner = 0;
    g->access = 0;
    g->addr = g->len = 0;
    return 0;
}

int velo_core_rma_release(struct velo_core* c, unsigned vpid, unsigned r, unsigned key) {
    if (!c) return -VELO_CORE_EINVAL;
    if (!c->caps.rma_base) return -VELO_CORE_EOPNOTSUPP;
    if (vpid >= CORE_MAX_VPIDS || !c->ep[vpid] || r >= c->nrg) return -VELO_CORE_ENOENT;
    const struct velo_core_region* g = &c->rg[r];
    if (g->state == VELO_CORE_RG_FREE || g->key != key || g->owner_vpid != vpid || g->owner != c->ep[vpid]->owner)
        return -VELO_CORE_ENOENT;
    return rg_release(c, r);
}

// every region of endpoint vpid (closing); STUCK ones get one more chance to quiesce
static void rma_release_ep(struct velo_core* c, unsigned vpid, uint64_t owner) {
    if (!c->rg) return;
    for (unsigned r = 0; r < c->nrg; ++r) {
        const struct velo_core_region* g = &c->rg[r];
        if (g->state != VELO_CORE_RG_FREE && g->owner_vpid == vpid && g->owner == owner && owner) rg_release(c, r);
    }
}

static int ioc_rma_setup(struct velo_core* c, const struct velo_core_client* cl, struct velo_uapi_rma_setup* a) {
    if (a->flags || a->rsvd) return -VELO_CORE_EINVAL;
    if (!c->caps.rma_base) return -VELO_CORE_EOPNOTSUPP;
    int err;
    const struct velo_core_ep* e = velo_core_client_ep(c, cl, &err);
    if (!e) return err;
    const unsigned log2 = a->log2_entries ? a->log2_entries : VELO_NQ_LOG2_DEFAULT;
    const int r = velo_core_nq_setup(c, e->vpid, log2);
    if (r) return r;
    a->nq_bytes = e->nq_bytes;
    a->out_log2_entries = e->nq_log2;
    a->nq_rp_off = VELO_TBL_VPID_USER_NQ_RP;
    a->region_bits = c->caps.rma_region_bits;
    a->pte_bits = c->caps.rma_pte_bits;
    a->mtu = c->caps.rma_mtu;
    a->max_regions = c->max_regions;
    return 0;
}

static int ioc_register(struct velo_core* c, const struct velo_core_client* cl, struct velo_uapi_register* a) {
    if (!a->flags || (a->flags & ~(uint32_t)VELO_REG_ACCESS_ALL)) return -VELO_CORE_EINVAL;
    if (!c->caps.rma_base) return -VELO_CORE_EOPNOTSUPP;
    int err;
    const struct velo_core_ep* e = velo_core_client_ep(c, cl, &err);
    if (!e) return err;
    uint64_t nla = 0;
    const int r = velo_core_rma_declare(c, e->vpid, a->addr, a->len, a->flags, &nla);
    if (r < 0) return r;
    a->nla = nla;
    a->region = (uint32_t)r;
    a->key = c->rg[r].key;
    return 0;
}

static int ioc_deregister(struct velo_core* c, const struct velo_core_client* cl,
                          const struct velo_uapi_deregister* a) {
    if (a->flags) return -VELO_CORE_EINVAL;
    if (!c->caps.rma_base) return -VELO_CORE_EOPNOTSUPP;
    int err;
    const struct velo_core_ep* e = velo_core_client_ep(c, cl, &err);
    if (!e) return err;
    const int r = velo_core_rma_lookup(c, e->vpid, a->nla);
    if (r < 0) return r;
    return rg_release(c, (unsigned)r);
}

static int ioc_repin(struct velo_core* c, const struct velo_core_client* cl, struct velo_uapi_repin* a) {
    if (a->flags || a->rsvd) return -VELO_CORE_EINVAL;
    if (!c->caps.rma_base) return -VELO_CORE_EOPNOTSUPP;
    int err;
    const struct velo_core_ep* e = velo_core_client_ep(c, cl, &err);
    if (!e) return err;
    const int r = velo_core_rma_lookup(c, e->vpid, a->nla);
    if (r < 0) return r;
    if (c->rg[r].state == VELO_CORE_RG_STUCK) return -VELO_CORE_EIO;
    // the caller (the OS glue) pins and calls velo_core_rma_map when asked to
    a->out_repinned = c->rg[r].state == VELO_CORE_RG_DECLARED ? 1u : 0u;
    return 0;
}
