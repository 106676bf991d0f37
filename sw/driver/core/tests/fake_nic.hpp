// A fake VELO register file for the driver core's policy and fuzz tests: the block chain and
// registers as the generated velo_hw.h describes them (including the NET block), registers that
// keep what is written, QUIESCE_STATUS busy for a few reads after a quiesce, and accounting of
// every DMA and kernel allocation so that the tests can prove nothing leaks.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "velo/velo_hw.h"
#include "velo_core.h"

namespace fake {

struct Nic {
    uint32_t spec_hash = VELO_SPEC_HASH;
    unsigned node_bits = 8, vpid_bits = 8, nports = 2;
    uint32_t link_status = 0x1;  // port 1 up, port 2 down
    std::map<uint32_t, uint32_t> regs;
    int quiesce_busy_reads = 2;
    int busy_left = 0;
    std::map<uint64_t, std::pair<void*, size_t>> live;  // dma -> (cpu, size)
    uint64_t next_dma = 0x200000000ull;
    long zallocs = 0, zfrees = 0;
    std::vector<std::string> logs;
    uint64_t writes = 0;

    Nic() {
        block(VELO_BLK_ID_BASE, VELO_BLK_ID_TYPE, VELO_BLK_ID_NEXT);
        block(VELO_BLK_CTRL_BASE, VELO_BLK_CTRL_TYPE, VELO_BLK_CTRL_NEXT);
        block(VELO_BLK_COUNTERS_BASE, VELO_BLK_COUNTERS_TYPE, VELO_BLK_COUNTERS_NEXT);
        block(VELO_BLK_NET_BASE, VELO_BLK_NET_TYPE, VELO_BLK_NET_NEXT);
        block(VELO_BLK_VPID_BASE, VELO_BLK_VPID_TYPE, VELO_BLK_VPID_NEXT);
#ifdef VELO_BLK_IRQ_BASE
        block(VELO_BLK_IRQ_BASE, VELO_BLK_IRQ_TYPE, VELO_BLK_IRQ_NEXT);
        regs[VELO_REG_IRQ_PENDING_OFFSET] = VELO_TBL_IRQ_PENDING_BASE;
        regs[VELO_REG_IRQ_PENDING_WORDS] = (1u << 8) / 32;
#endif
        regs[VELO_REG_ID_DESIGN_VERSION] = VELO_SPEC_VERSION;
        regs[VELO_REG_COUNTERS_COUNT] = VELO_CNT_NUM;
        for (uint32_t i = 0; i < VELO_CNT_NUM; ++i) regs[VELO_REG_COUNTERS_COUNTER_BASE + 4 * i] = 100 + i;
        regs[VELO_REG_NET_ROUTE_OFFSET] = VELO_TBL_ROUTE_TABLE_BASE;
        regs[VELO_REG_NET_PORT_OFFSET] = VELO_TBL_NET_PORT_BASE;
        regs[VELO_REG_NET_PORT_STRIDE] = VELO_TBL_NET_PORT_STRIDE;
        regs[VELO_REG_VPID_TABLE_OFFSET] = VELO_TBL_VPID_TABLE_BASE;
        regs[VELO_REG_VPID_TABLE_STRIDE] = VELO_TBL_VPID_TABLE_STRIDE;
        regs[VELO_REG_VPID_USER_OFFSET] = VELO_TBL_VPID_USER_BASE;
        regs[VELO_REG_VPID_USER_STRIDE] = VELO_TBL_VPID_USER_STRIDE;
        regs[VELO_REG_CTRL_STATUS] = static_cast<uint32_t>(VELO_FIELD_PREP(VELO_REG_CTRL_STATUS_LINK_UP, 1));
    }
    void block(uint32_t base, uint32_t type, uint32_t next) {
        regs[base + VELO_BLKHDR_TYPE] = type;
        regs[base + VELO_BLKHDR_VERSION] = 1;
        regs[base + VELO_BLKHDR_NEXT] = next;
    }
    uint32_t read(uint32_t off) {
        switch (off) {
            case VELO_REG_ID_SPEC_HASH:
                return spec_hash;
            case VELO_REG_ID_CAPS:
                return static_cast<uint32_t>(VELO_FIELD_PREP(VELO_REG_ID_CAPS_NODE_BITS, node_bits) |
                                             VELO_FIELD_PREP(VELO_REG_ID_CAPS_VPID_BITS, vpid_bits) |
                                             VELO_FIELD_PREP(VELO_REG_ID_CAPS_TLP_BYTES, 8) |
                                             VELO_FIELD_PREP(VELO_REG_ID_CAPS_LINK_BYTES, 2) |
                                             VELO_FIELD_PREP(VELO_REG_ID_CAPS_MSG_MAX, VELO_MSG_MAX));
            case VELO_REG_VPID_NUM_VPIDS:
                return 1u << vpid_bits;
            case VELO_REG_NET_PORTS:
                return static_cast<uint32_t>(VELO_FIELD_PREP(VELO_REG_NET_PORTS_NP, nports));
            case VELO_REG_NET_LINK_STATUS:
                return link_status;
            case VELO_REG_CTRL_QUIESCE_STATUS:
                if (busy_left > 0) {
                    --busy_left;
                    return 1;
                }
                return 0;
            default:
                break;
        }
        auto it = regs.find(off);
        uint32_t v = it == regs.end() ? 0 : it->second;
        if (off >= VELO_TBL_VPID_TABLE_BASE && off < VELO_TBL_VPID_TABLE_BASE + 256 * VELO_TBL_VPID_TABLE_STRIDE &&
            (off - VELO_TBL_VPID_TABLE_BASE) % VELO_TBL_VPID_TABLE_STRIDE == VELO_TBL_VPID_TABLE_MB_BASE_LO)
            v &= ~63u;
        return v;
    }
    void write(uint32_t off, uint32_t v) {
        ++writes;
        regs[off] = v;
        if (off == VELO_REG_CTRL_QUIESCE_VPID) busy_left = quiesce_busy_reads;
    }
    uint32_t reg(uint32_t off) const {
        auto it = regs.find(off);
        return it == regs.end() ? 0 : it->second;
    }
    uint32_t mb_cfg(unsigned vpid) const {
        return reg(VELO_TBL_VPID_TABLE_BASE + vpid * VELO_TBL_VPID_TABLE_STRIDE + VELO_TBL_VPID_TABLE_MB_CFG);
    }
    uint32_t user(unsigned vpid) const {
        return VELO_TBL_VPID_USER_BASE + vpid * VELO_TBL_VPID_USER_STRIDE;
    }
};

inline uint32_t op_rd(void* c, uint32_t off) {
    return static_cast<Nic*>(c)->read(off);
}
inline void op_wr(void* c, uint32_t off, uint32_t v) {
    static_cast<Nic*>(c)->write(off, v);
}
inline void* op_alloc(void* c, size_t size, uint64_t* dma, void** cookie) {
    auto* n = static_cast<Nic*>(c);
    void* p = std::aligned_alloc(4096, size);
    if (!p) return nullptr;
    std::memset(p, 0, size);
    *dma = n->next_dma;
    n->next_dma += size;
    *cookie = p;
    n->live[*dma] = {p, size};
    return p;
}
inline void op_free(void* c, void* cpu, size_t size, uint64_t dma, void* cookie) {
    auto* n = static_cast<Nic*>(c);
    auto it = n->live.find(dma);
    if (it == n->live.end() || it->second.first != cpu || it->second.second != size || cookie != cpu) std::abort();
    n->live.erase(it);
    std::free(cpu);
}
inline void* op_zalloc(void* c, size_t size) {
    ++static_cast<Nic*>(c)->zallocs;
    return std::calloc(1, size);
}
inline void op_kfree(void* c, void* p) {
    ++static_cast<Nic*>(c)->zfrees;
    std::free(p);
}
inline void op_log(void* c, int, const char* m) {
    static_cast<Nic*>(c)->logs.push_back(m);
}

inline const velo_core_ops* ops() {
    static const velo_core_ops o = {op_rd, op_wr, op_alloc, op_free, op_zalloc, op_kfree, op_log, nullptr};
    return &o;
}

// Write the header of ring line `line` with the phase bit of pass `pass` (0 or 1).
inline void put_entry(void* ring, unsigned line, unsigned phase) {
    uint64_t h = static_cast<uint64_t>(VELO_FIELD_PREP(VELO_MBOX_HDR_PHASE, phase)) |
                 static_cast<uint64_t>(VELO_FIELD_PREP(VELO_MBOX_HDR_LINES, 1));
    std::memcpy(static_cast<uint8_t*>(ring) + 64u * line, &h, sizeof h);
}

}  // namespace fake
