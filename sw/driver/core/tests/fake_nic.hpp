// A fake VELO register file for the driver core's policy and fuzz tests: the block chain and
// registers as the generated velo_hw.h describes them (including the NET block), registers that
// keep what is written, QUIESCE_STATUS busy for a few reads after a quiesce, and accounting of
// every DMA and kernel allocation so that the tests can prove nothing leaks.
//
// The RMA block (linked after the IRQ block; drop_rma() unlinks it) models the address
// translation unit's contract (docs/rma.md §2.3): region and page table registers are
// write-only and kept; RMA.QUIESCE_STATUS reads busy for rma_busy_reads reads after each
// QUIESCE_REGION write (forever for regions in rma_stuck). A monitor records a violation when
// the driver changes a region's RG_PTE/RG_START/RG_LEN or a page table entry a region may still
// use (VALID, or withdrawn but not yet seen quiet), or unpins pages of such a region, and when
// it writes RG_KEY or a scope box (RG_SCOPE..RG_SCOPE3) of a region allocated (RG_CFG.ALLOC) or not yet seen quiet.
//
// The PRF (velo_core_ops.prf) is a deterministic keyed mix (prf_key) that a test may replace
// (prf_fn) by a degenerate one: region keys must stay a permutation whatever it returns.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
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
    // RMA
    unsigned rg_bits = 8, pte_bits = 12, rma_mtu = 48;
    int rma_busy_reads = 2;
    int rma_busy_left = 0;
    std::set<unsigned> rma_stuck;
    uint32_t quiesce_region = 0;
    std::vector<bool> rg_quiet = std::vector<bool>(4096, true);
    std::vector<std::string> violations;
    long unpins = 0, rma_quiesce_polls = 0;
    std::vector<std::pair<uint32_t, uint32_t>> wlog;  // (offset, value) of every write when wlog_on
    bool wlog_on = false;
    // PRF
    uint64_t prf_key = 0x5EC2E7C0FFEE1234ull;
    uint64_t (*prf_fn)(uint64_t key, uint64_t a, uint64_t b) = nullptr;  // nullptr: mix()
    long prf_calls = 0;
    static uint64_t mix(uint64_t key, uint64_t a, uint64_t b) {  // splitmix64's finaliser, keyed
        uint64_t z = key ^ (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full + 0x165667B19E3779F9ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }

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
        block(VELO_BLK_RMA_BASE, VELO_BLK_RMA_TYPE,
              VELO_BLK_RMA_NEXT);  // IRQ.NEXT (spec) names it
        regs[VELO_REG_RMA_REGION_OFFSET] = VELO_TBL_RMA_REGION_BASE;
        regs[VELO_REG_RMA_PTE_OFFSET] = VELO_TBL_RMA_PTE_BASE;
        regs[VELO_REG_RMA_NQ_OFFSET] = VELO_TBL_RMA_NQ_TABLE_BASE;
        regs[VELO_REG_RMA_CNT_COUNT] = VELO_RMA_CNT_NUM;
    }
    void drop_rma() {  // a NIC built with RMA = 0: IRQ.NEXT reads 0, IRQ ends the chain
        regs[VELO_BLK_IRQ_BASE + VELO_BLKHDR_NEXT] = 0;
    }
    // ---- the ATU as the driver programmed it
    static bool in(uint32_t off, uint32_t base, uint32_t stride, unsigned n) {
        return off >= base && off < base + stride * n;
    }
    uint32_t rg(unsigned r, uint32_t reg) const {
        return this->reg(VELO_TBL_RMA_REGION_BASE + r * VELO_TBL_RMA_REGION_STRIDE + reg);
    }
    uint32_t rg_cfg(unsigned r) const {
        return rg(r, VELO_TBL_RMA_REGION_RG_CFG);
    }
    bool rg_valid(unsigned r) const {
        const uint32_t c = rg_cfg(r);
        return VELO_FIELD_GET(VELO_TBL_RMA_REGION_RG_CFG_ALLOC, c) &&
               VELO_FIELD_GET(VELO_TBL_RMA_REGION_RG_CFG_VALID, c);
    }
    uint64_t rg_len(unsigned r) const {
        return rg(r, VELO_TBL_RMA_REGION_RG_LEN_LO) | uint64_t(rg(r, VELO_TBL_RMA_REGION_RG_LEN_HI) & 0xFF) << 32;
    }
    uint64_t pte(unsigned i) const {
        const uint32_t b = VELO_TBL_RMA_PTE_BASE + i * VELO_TBL_RMA_PTE_STRIDE;
        return reg(b + VELO_TBL_RMA_PTE_PTE_LO) | uint64_t(reg(b + VELO_TBL_RMA_PTE_PTE_HI) & 0xFF) << 32;
    }
    // page table entries region r's registers name (RG_PTE.FIRST .. + pages - 1, mod the table)
    bool rg_covers(unsigned r, unsigned i) const {
        const uint64_t len = rg_len(r), start = rg(r, VELO_TBL_RMA_REGION_RG_START);
        if (!len) return false;
        const uint64_t pages = ((start + len - 1) >> 12) + 1;
        const unsigned n = 1u << pte_bits;
        const unsigned first = rg(r, VELO_TBL_RMA_REGION_RG_PTE) & 0xFFFF;
        return ((i + n - first) % n) < pages;
    }
    // may the NIC use region r's translation now (valid, or withdrawn but not seen quiet)
    bool rg_live(unsigned r) const {
        return rg_valid(r) || !rg_quiet[r];
    }
    void monitor_write(uint32_t off, uint32_t v) {
        const unsigned nrg = 1u << rg_bits, npte = 1u << pte_bits;
        if (in(off, VELO_TBL_RMA_REGION_BASE, VELO_TBL_RMA_REGION_STRIDE, nrg)) {
            const unsigned r = (off - VELO_TBL_RMA_REGION_BASE) / VELO_TBL_RMA_REGION_STRIDE;
            const uint32_t reg_off = (off - VELO_TBL_RMA_REGION_BASE) % VELO_TBL_RMA_REGION_STRIDE;
            if (reg_off == VELO_TBL_RMA_REGION_RG_CFG) {
                const bool was = rg_valid(r) || VELO_FIELD_GET(VELO_TBL_RMA_REGION_RG_CFG_ALLOC, rg_cfg(r));
                const bool now_valid = VELO_FIELD_GET(VELO_TBL_RMA_REGION_RG_CFG_ALLOC, v) &&
                                       VELO_FIELD_GET(VELO_TBL_RMA_REGION_RG_CFG_VALID, v);
                if (rg_valid(r) && !now_valid) rg_quiet[r] = false;
                if (was && !VELO_FIELD_GET(VELO_TBL_RMA_REGION_RG_CFG_ALLOC, v)) rg_quiet[r] = false;
                if (now_valid && !rg_quiet[r])
                    violations.push_back("region " + std::to_string(r) + " valid again unquiesced");
            } else if (rg_live(r)) {
                violations.push_back("region " + std::to_string(r) + " register changed while in use");
            } else if ((reg_off == VELO_TBL_RMA_REGION_RG_KEY || reg_off == VELO_TBL_RMA_REGION_RG_SCOPE ||
                        reg_off == VELO_TBL_RMA_REGION_RG_SCOPE1 || reg_off == VELO_TBL_RMA_REGION_RG_SCOPE2 ||
                        reg_off == VELO_TBL_RMA_REGION_RG_SCOPE3) &&
                       VELO_FIELD_GET(VELO_TBL_RMA_REGION_RG_CFG_ALLOC, rg_cfg(r))) {
                violations.push_back("region " + std::to_string(r) + " key or scope changed while allocated");
            }
        } else if (in(off, VELO_TBL_RMA_PTE_BASE, VELO_TBL_RMA_PTE_STRIDE, npte)) {
            const unsigned i = (off - VELO_TBL_RMA_PTE_BASE) / VELO_TBL_RMA_PTE_STRIDE;
            for (unsigned r = 0; r < nrg; ++r)
                if (rg_live(r) && rg_covers(r, i))
                    violations.push_back("pte " + std::to_string(i) + " changed under region " + std::to_string(r));
        }
    }
    void block(uint32_t base, uint32_t type, uint32_t next) {
        regs[base + VELO_BLKHDR_TYPE] = type;
        regs[base + VELO_BLKHDR_VERSION] = 1;
        regs[base + VELO_BLKHDR_NEXT] = next;
    }
    bool gone = false;  // surprise removal: every read returns all ones
    uint32_t read(uint32_t off) {
        if (gone) return 0xFFFFFFFFu;
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
            case VELO_REG_RMA_CAPS:
                return static_cast<uint32_t>(VELO_FIELD_PREP(VELO_REG_RMA_CAPS_REGION_BITS, rg_bits) |
                                             VELO_FIELD_PREP(VELO_REG_RMA_CAPS_PTE_BITS, pte_bits) |
                                             VELO_FIELD_PREP(VELO_REG_RMA_CAPS_MTU, rma_mtu));
            case VELO_REG_RMA_QUIESCE_STATUS:
                ++rma_quiesce_polls;
                if (rma_stuck.count(quiesce_region)) return 1;
                if (rma_busy_left > 0) {
                    --rma_busy_left;
                    return 1;
                }
                if (quiesce_region < rg_quiet.size()) rg_quiet[quiesce_region] = true;
                return 0;
            default:
                break;
        }
        auto it = regs.find(off);
        uint32_t v = it == regs.end() ? 0 : it->second;
        if (off >= VELO_TBL_VPID_TABLE_BASE && off < VELO_TBL_VPID_TABLE_BASE + 256 * VELO_TBL_VPID_TABLE_STRIDE &&
            (off - VELO_TBL_VPID_TABLE_BASE) % VELO_TBL_VPID_TABLE_STRIDE == VELO_TBL_VPID_TABLE_MB_BASE_LO)
            v &= ~63u;
        if (in(off, VELO_TBL_RMA_NQ_TABLE_BASE, VELO_TBL_RMA_NQ_TABLE_STRIDE, 256) &&
            (off - VELO_TBL_RMA_NQ_TABLE_BASE) % VELO_TBL_RMA_NQ_TABLE_STRIDE == VELO_TBL_RMA_NQ_TABLE_NQ_BASE_LO)
            v &= ~63u;
        // region and page tables are write-only (read 0)
        if (in(off, VELO_TBL_RMA_REGION_BASE, VELO_TBL_RMA_REGION_STRIDE, 1u << rg_bits) ||
            in(off, VELO_TBL_RMA_PTE_BASE, VELO_TBL_RMA_PTE_STRIDE, 1u << pte_bits))
            v = 0;
        return v;
    }
    void write(uint32_t off, uint32_t v) {
        ++writes;
        if (wlog_on) wlog.emplace_back(off, v);
        monitor_write(off, v);
        regs[off] = v;
        if (off == VELO_REG_CTRL_QUIESCE_VPID) busy_left = quiesce_busy_reads;
        if (off == VELO_REG_RMA_QUIESCE_REGION) {
            quiesce_region = v;
            rma_busy_left = rma_busy_reads;
        }
    }
    uint32_t nq(unsigned vpid, uint32_t reg) const {
        return this->reg(VELO_TBL_RMA_NQ_TABLE_BASE + vpid * VELO_TBL_RMA_NQ_TABLE_STRIDE + reg);
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
inline uint64_t op_prf(void* c, uint64_t a, uint64_t b) {
    auto* n = static_cast<Nic*>(c);
    ++n->prf_calls;
    return n->prf_fn ? n->prf_fn(n->prf_key, a, b) : Nic::mix(n->prf_key, a, b);
}
// What a test passes as the pin handle of velo_core_rma_map.
struct Pin {
    unsigned region = 0;
    int unpinned = 0;
};
inline void op_unpin(void* c, void* p) {
    auto* n = static_cast<Nic*>(c);
    auto* pin = static_cast<Pin*>(p);
    ++n->unpins;
    if (++pin->unpinned != 1) n->violations.push_back("pin released twice");
    if (n->rg_live(pin->region)) n->violations.push_back("unpinned region " + std::to_string(pin->region) + " in use");
}

inline const velo_core_ops* ops() {
    static const velo_core_ops o = {op_rd, op_wr, op_alloc, op_free, op_zalloc, op_kfree, op_log, nullptr, op_prf};
    return &o;
}

// probe with the fake's ops and its unpin hook
inline int probe(Nic* nic, velo_core** c) {
    const int r = velo_core_probe(ops(), nic, c);
    if (!r) velo_core_set_rma_unpin(*c, op_unpin);
    return r;
}

// Write the header of ring line `line` with the phase bit of pass `pass` (0 or 1).
inline void put_entry(void* ring, unsigned line, unsigned phase) {
    uint64_t h = static_cast<uint64_t>(VELO_FIELD_PREP(VELO_MBOX_HDR_PHASE, phase)) |
                 static_cast<uint64_t>(VELO_FIELD_PREP(VELO_MBOX_HDR_LINES, 1));
    std::memcpy(static_cast<uint8_t*>(ring) + 64u * line, &h, sizeof h);
}

}  // namespace fake
