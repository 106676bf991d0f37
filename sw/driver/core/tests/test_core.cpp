// Unit tests of the portable driver core against a fake register file that behaves like the
// NIC's (block chain, CAPS, VPID table read-back, quiesce busy for a while) and records every
// access, so the programming sequences and the order "quiesce, then free" are checked.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "velo/velo_hw.h"
#include "velo/velo_uapi.h"
#include "velo_core.h"

namespace {

struct Event {
    char kind;  // 'W' write, 'R' read, 'A' alloc, 'F' free
    uint32_t off;
    uint64_t val;
};

struct FakeNic {
    uint32_t magic = VELO_ID_MAGIC;
    uint32_t spec_hash = VELO_SPEC_HASH;
    uint32_t caps = static_cast<uint32_t>(
        VELO_FIELD_PREP(VELO_REG_ID_CAPS_NODE_BITS, 8) | VELO_FIELD_PREP(VELO_REG_ID_CAPS_VPID_BITS, 8) |
        VELO_FIELD_PREP(VELO_REG_ID_CAPS_TLP_BYTES, 8) | VELO_FIELD_PREP(VELO_REG_ID_CAPS_LINK_BYTES, 2) |
        VELO_FIELD_PREP(VELO_REG_ID_CAPS_MSG_MAX, 64));
    uint32_t num_vpids = 256;
    std::map<uint32_t, uint32_t> next = {{VELO_BLK_ID_BASE, VELO_BLK_CTRL_BASE},
                                         {VELO_BLK_CTRL_BASE, VELO_BLK_COUNTERS_BASE},
                                         {VELO_BLK_COUNTERS_BASE, VELO_BLK_NET_BASE},
                                         {VELO_BLK_NET_BASE, VELO_BLK_VPID_BASE},
                                         {VELO_BLK_VPID_BASE, 0}};
    std::map<uint32_t, uint32_t> type = {{VELO_BLK_ID_BASE, VELO_ID_MAGIC},
                                         {VELO_BLK_CTRL_BASE, VELO_BLK_CTRL_TYPE},
                                         {VELO_BLK_COUNTERS_BASE, VELO_BLK_COUNTERS_TYPE},
                                         {VELO_BLK_NET_BASE, VELO_BLK_NET_TYPE},
                                         {VELO_BLK_VPID_BASE, VELO_BLK_VPID_TYPE}};
    std::map<uint32_t, uint32_t> regs;  // writable registers
    int quiesce_busy_reads = 3;         // reads of QUIESCE_STATUS that say BUSY after a quiesce
    int busy_left = 0;
    bool never_quiesce = false;
    bool cfg_readback_broken = false;
    bool fail_alloc = false;
    std::vector<Event> ev;
    std::map<uint64_t, std::pair<void*, size_t>> live;  // dma -> (cpu, size)
    uint64_t next_dma = 0x100000000ull;
    int allocs = 0, frees = 0, zallocs = 0, zfrees = 0;
    std::vector<std::string> logs;

    uint32_t read(uint32_t off) {
        ev.push_back({'R', off, 0});
        const uint32_t base = off & ~0xFFu, r = off & 0xFFu;
        if (type.count(base) && r == VELO_BLKHDR_TYPE) return base == 0 ? magic : type[base];
        if (next.count(base) && r == VELO_BLKHDR_NEXT) return next[base];
        switch (off) {
            case VELO_REG_ID_SPEC_HASH:
                return spec_hash;
            case VELO_REG_ID_CAPS:
                return caps;
            case VELO_REG_ID_DESIGN_VERSION:
                return 0x010000;
            case VELO_REG_VPID_NUM_VPIDS:
                return num_vpids;
            case VELO_REG_VPID_TABLE_OFFSET:
                return VELO_TBL_VPID_TABLE_BASE;
            case VELO_REG_VPID_TABLE_STRIDE:
                return VELO_TBL_VPID_TABLE_STRIDE;
            case VELO_REG_VPID_USER_OFFSET:
                return VELO_TBL_VPID_USER_BASE;
            case VELO_REG_VPID_USER_STRIDE:
                return VELO_TBL_VPID_USER_STRIDE;
            case VELO_REG_COUNTERS_COUNT:
                return VELO_CNT_NUM;
            case VELO_REG_CTRL_QUIESCE_STATUS:
                if (never_quiesce) return 1;
                if (busy_left > 0) {
                    --busy_left;
                    return 1;
                }
                return 0;
            default:
                break;
        }
        uint32_t v = regs.count(off) ? regs[off] : 0;
        if (off >= VELO_TBL_VPID_TABLE_BASE && off < VELO_TBL_VPID_TABLE_BASE + 256 * VELO_TBL_VPID_TABLE_STRIDE) {
            uint32_t r = (off - VELO_TBL_VPID_TABLE_BASE) % VELO_TBL_VPID_TABLE_STRIDE;
            if (r == VELO_TBL_VPID_TABLE_MB_BASE_LO) v &= ~63u;
            if (r == VELO_TBL_VPID_TABLE_MB_CFG && cfg_readback_broken) v ^= 1;
        }
        return v;
    }
    void write(uint32_t off, uint32_t v) {
        ev.push_back({'W', off, v});
        regs[off] = v;
        if (off == VELO_REG_CTRL_QUIESCE_VPID) busy_left = quiesce_busy_reads;
    }
    uint32_t tbl(unsigned vpid, uint32_t reg) const {
        return VELO_TBL_VPID_TABLE_BASE + vpid * VELO_TBL_VPID_TABLE_STRIDE + reg;
    }
    uint32_t user(unsigned vpid) const { return VELO_TBL_VPID_USER_BASE + vpid * VELO_TBL_VPID_USER_STRIDE; }
};

uint32_t op_rd(void* c, uint32_t off) {
    return static_cast<FakeNic*>(c)->read(off);
}
void op_wr(void* c, uint32_t off, uint32_t v) {
    static_cast<FakeNic*>(c)->write(off, v);
}
void* op_alloc(void* c, size_t size, uint64_t* dma, void** cookie) {
    auto* n = static_cast<FakeNic*>(c);
    if (n->fail_alloc) return nullptr;
    void* p = std::aligned_alloc(4096, size);
    std::memset(p, 0, size);
    *dma = n->next_dma;
    n->next_dma += size;
    *cookie = p;
    n->live[*dma] = {p, size};
    n->ev.push_back({'A', 0, *dma});
    ++n->allocs;
    return p;
}
void op_free(void* c, void* cpu, size_t size, uint64_t dma, void* cookie) {
    auto* n = static_cast<FakeNic*>(c);
    EXPECT_EQ(cpu, cookie);
    ASSERT_TRUE(n->live.count(dma));
    EXPECT_EQ(n->live[dma].second, size);
    n->live.erase(dma);
    n->ev.push_back({'F', 0, dma});
    ++n->frees;
    std::free(cpu);
}
void* op_zalloc(void* c, size_t size) {
    ++static_cast<FakeNic*>(c)->zallocs;
    return std::calloc(1, size);
}
void op_kfree(void* c, void* p) {
    ++static_cast<FakeNic*>(c)->zfrees;
    std::free(p);
}
void op_log(void* c, int, const char* m) {
    static_cast<FakeNic*>(c)->logs.push_back(m);
}

// a keyed mix standing in for the platform's SipHash
uint64_t op_prf(void*, uint64_t a, uint64_t b) {
    uint64_t z = (a + 0x243F6A8885A308D3ull) * 0x9E3779B97F4A7C15ull ^ b;
    z = (z ^ (z >> 29)) * 0xBF58476D1CE4E5B9ull;
    return z ^ (z >> 32);
}

const velo_core_ops kOps = {op_rd, op_wr, op_alloc, op_free, op_zalloc, op_kfree, op_log, nullptr, op_prf};

velo_core_ep_params params(int vpid = -1, unsigned log2 = 8, uint64_t owner = 1) {
    velo_core_ep_params p{};
    p.vpid = vpid;
    p.log2_lines = log2;
    p.ctl_log2_lines = 6;
    p.owner = owner;
    return p;
}

// a parameter block that lives long enough to take its address
const velo_core_ep_params* P(int vpid = -1, unsigned log2 = 8, uint64_t owner = 1) {
    static velo_core_ep_params p;
    p = params(vpid, log2, owner);
    return &p;
}

class Core : public ::testing::Test {
  protected:
    FakeNic nic;
    velo_core* c = nullptr;
    void SetUp() override { ASSERT_EQ(velo_core_probe(&kOps, &nic, &c), 0); }
    void TearDown() override {
        if (c) velo_core_remove(c);
        EXPECT_TRUE(nic.live.empty()) << "DMA memory leaked";
        EXPECT_EQ(nic.zallocs, nic.zfrees) << "core memory leaked";
    }
    // index of the first event matching, from `from`
    size_t find(char kind, uint32_t off, size_t from = 0) {
        for (size_t i = from; i < nic.ev.size(); ++i)
            if (nic.ev[i].kind == kind && nic.ev[i].off == off) return i;
        return SIZE_MAX;
    }
};

}  // namespace

TEST(CoreProbe, ReadsCapsAndBlocks) {
    FakeNic nic;
    velo_core* c = nullptr;
    ASSERT_EQ(velo_core_probe(&kOps, &nic, &c), 0);
    const struct velo_core_caps* k = velo_core_caps(c);
    EXPECT_EQ(k->node_bits, 8u);
    EXPECT_EQ(k->vpid_bits, 8u);
    EXPECT_EQ(k->num_vpids, 256u);
    EXPECT_EQ(k->msg_max, 64u);
    EXPECT_EQ(k->ctrl_base, static_cast<uint32_t>(VELO_BLK_CTRL_BASE));
    EXPECT_EQ(k->vpid_base, static_cast<uint32_t>(VELO_BLK_VPID_BASE));
    EXPECT_EQ(k->table_off, static_cast<uint32_t>(VELO_TBL_VPID_TABLE_BASE));
    EXPECT_EQ(k->user_stride, 4096u);
    EXPECT_EQ(k->num_counters, static_cast<uint32_t>(VELO_CNT_NUM));
    EXPECT_EQ(k->spec_hash, static_cast<uint32_t>(VELO_SPEC_HASH));
    // probing only reads
    for (auto& e : nic.ev) EXPECT_EQ(e.kind, 'R');
    velo_core_remove(c);
}

TEST(CoreProbe, RefusesOpsWithoutPrf) {
    // no secret to derive region keys from: no core, and the device is not even read
    FakeNic nic;
    velo_core_ops o = kOps;
    o.prf = nullptr;
    velo_core* c = reinterpret_cast<velo_core*>(1);
    EXPECT_EQ(velo_core_probe(&o, &nic, &c), -VELO_CORE_EINVAL);
    EXPECT_TRUE(nic.ev.empty());
    o.prf = op_prf;
    ASSERT_EQ(velo_core_probe(&o, &nic, &c), 0);
    velo_core_remove(c);
}

TEST(CoreProbe, RefusesWrongMagic) {
    FakeNic nic;
    nic.magic = 0x12345678;
    velo_core* c = reinterpret_cast<velo_core*>(1);
    EXPECT_EQ(velo_core_probe(&kOps, &nic, &c), -VELO_CORE_ENODEV);
    EXPECT_EQ(c, nullptr);
    ASSERT_FALSE(nic.logs.empty());
    EXPECT_NE(nic.logs[0].find("0x12345678"), std::string::npos) << nic.logs[0];
}

TEST(CoreProbe, RefusesOtherSpecHash) {
    FakeNic nic;
    nic.spec_hash = VELO_SPEC_HASH ^ 1;
    velo_core* c = nullptr;
    EXPECT_EQ(velo_core_probe(&kOps, &nic, &c), -VELO_CORE_EPROTO);
    EXPECT_EQ(nic.zallocs, 0);
}

TEST(CoreProbe, RefusesBrokenChainAndMissingBlocks) {
    {
        FakeNic nic;
        nic.next[VELO_BLK_COUNTERS_BASE] = VELO_BLK_CTRL_BASE;  // the chain loops back
        velo_core* c = nullptr;
        EXPECT_EQ(velo_core_probe(&kOps, &nic, &c), -VELO_CORE_ENODEV);
    }
    {
        FakeNic nic;
        nic.next[VELO_BLK_NET_BASE] = 0;  // VPID block never reached
        velo_core* c = nullptr;
        EXPECT_EQ(velo_core_probe(&kOps, &nic, &c), -VELO_CORE_ENODEV);
    }
    {
        FakeNic nic;
        nic.num_vpids = 100;  // disagrees with CAPS
        velo_core* c = nullptr;
        EXPECT_EQ(velo_core_probe(&kOps, &nic, &c), -VELO_CORE_ENODEV);
    }
    velo_core* c = nullptr;
    EXPECT_EQ(velo_core_probe(nullptr, nullptr, &c), -VELO_CORE_EINVAL);
}

TEST_F(Core, EnableSetsNodeId) {
    EXPECT_EQ(velo_core_enable(c, 7), 0);
    EXPECT_EQ(velo_core_caps(c)->node_id, 7u);
    size_t d = find('W', VELO_REG_CTRL_CONTROL);
    size_t n = find('W', VELO_REG_CTRL_NODE_ID);
    size_t e = find('W', VELO_REG_CTRL_CONTROL, d + 1);
    ASSERT_NE(e, SIZE_MAX);
    EXPECT_LT(d, n);
    EXPECT_LT(n, e);
    EXPECT_EQ(nic.ev[d].val, 0u);
    EXPECT_EQ(nic.ev[e].val, 1u);
    EXPECT_EQ(velo_core_enable(c, 256), -VELO_CORE_EINVAL);
}

TEST_F(Core, OpenProgramsBothMailboxesInOrder) {
    const velo_core_ep* e = nullptr;
    ASSERT_EQ(velo_core_ep_open(c, P(-1, 9), &e), 0);
    EXPECT_EQ(e->vpid, 0u);
    EXPECT_EQ(e->ctl_vpid, VELO_CTL_VPID(0u, 8));
    EXPECT_EQ(e->ring_bytes, 64u << 9);
    EXPECT_EQ(e->ctl_ring_bytes, 4096u);
    EXPECT_EQ(e->user_page_off, nic.user(0));
    EXPECT_EQ(e->ctl_user_page_off, nic.user(128));
    for (unsigned v : {e->vpid, e->ctl_vpid}) {
        uint64_t dma = v == e->vpid ? e->ring_dma : e->ctl_ring_dma;
        unsigned log2 = v == e->vpid ? 9 : 6;
        size_t off = find('W', nic.tbl(v, VELO_TBL_VPID_TABLE_MB_CFG));
        ASSERT_NE(off, SIZE_MAX);
        EXPECT_EQ(nic.ev[off].val, 0u) << "disable first";
        size_t lo = find('W', nic.tbl(v, VELO_TBL_VPID_TABLE_MB_BASE_LO), off);
        size_t hi = find('W', nic.tbl(v, VELO_TBL_VPID_TABLE_MB_BASE_HI), off);
        size_t wp = find('W', nic.tbl(v, VELO_TBL_VPID_TABLE_MB_WP), off);
        size_t rp = find('W', nic.user(v) + VELO_TBL_VPID_USER_MB_RP, off);
        size_t on = find('W', nic.tbl(v, VELO_TBL_VPID_TABLE_MB_CFG), off + 1);
        size_t rb = find('R', nic.tbl(v, VELO_TBL_VPID_TABLE_MB_CFG), on);
        ASSERT_NE(rb, SIZE_MAX);
        EXPECT_LT(lo, on);
        EXPECT_LT(hi, on);
        EXPECT_LT(wp, on);
        EXPECT_LT(rp, on);
        EXPECT_EQ(nic.ev[lo].val, static_cast<uint32_t>(dma));
        EXPECT_EQ(nic.ev[hi].val, static_cast<uint32_t>(dma >> 32));
        EXPECT_EQ(nic.ev[wp].val, 0u);
        EXPECT_EQ(nic.ev[rp].val, 0u);
        EXPECT_EQ(nic.ev[on].val, VELO_FIELD_PREP(VELO_TBL_VPID_TABLE_MB_CFG_ENABLE, 1) |
                                      VELO_FIELD_PREP(VELO_TBL_VPID_TABLE_MB_CFG_LOG2_LINES, log2));
    }
    EXPECT_EQ(velo_core_ep_count(c), 1u);
    EXPECT_EQ(velo_core_ep_find(c, 0), e);
    EXPECT_EQ(velo_core_ep_find(c, 1), nullptr);
}

TEST_F(Core, VpidAllocationRoundRobinAndRequested) {
    const velo_core_ep* e = nullptr;
    ASSERT_EQ(velo_core_ep_open(c, P(5), &e), 0);
    EXPECT_EQ(e->vpid, 5u);
    const velo_core_ep* e2 = nullptr;
    EXPECT_EQ(velo_core_ep_open(c, P(5), &e2), -VELO_CORE_EADDRINUSE);
    EXPECT_EQ(velo_core_ep_open(c, P(128), &e2), -VELO_CORE_EINVAL) << "control half is not for endpoints";
    std::vector<unsigned> got;
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(velo_core_ep_open(c, P(), &e2), 0);
        got.push_back(e2->vpid);
    }
    EXPECT_EQ(got, (std::vector<unsigned>{0, 1, 2}));
    // a freed vpid is not reused at once
    ASSERT_EQ(velo_core_ep_close(c, 1), 0);
    ASSERT_EQ(velo_core_ep_open(c, P(), &e2), 0);
    EXPECT_EQ(e2->vpid, 3u);
}

TEST_F(Core, VpidSpaceExhausted) {
    const velo_core_ep* e = nullptr;
    for (unsigned i = 0; i < 128; ++i) ASSERT_EQ(velo_core_ep_open(c, P(-1, 6), &e), 0) << i;
    EXPECT_EQ(velo_core_ep_open(c, P(-1, 6), &e), -VELO_CORE_ENOSPC);
    EXPECT_EQ(velo_core_ep_count(c), 128u);
}

TEST_F(Core, BadParamsAndAllocFailure) {
    const velo_core_ep* e = nullptr;
    EXPECT_EQ(velo_core_ep_open(c, P(-1, 0), &e), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_ep_open(c, P(-1, 17), &e), -VELO_CORE_EINVAL);
    nic.fail_alloc = true;
    EXPECT_EQ(velo_core_ep_open(c, P(), &e), -VELO_CORE_ENOMEM);
    EXPECT_EQ(velo_core_ep_count(c), 0u);
    nic.fail_alloc = false;
    nic.cfg_readback_broken = true;
    EXPECT_EQ(velo_core_ep_open(c, P(), &e), -VELO_CORE_EIO);
    EXPECT_EQ(velo_core_ep_count(c), 0u);
}

TEST_F(Core, CloseQuiescesBeforeFreeing) {
    const velo_core_ep* e = nullptr;
    ASSERT_EQ(velo_core_ep_open(c, P(3), &e), 0);
    const uint64_t ring = e->ring_dma, ctl = e->ctl_ring_dma;
    const unsigned ctl_vpid = e->ctl_vpid;
    nic.ev.clear();
    nic.quiesce_busy_reads = 5;
    ASSERT_EQ(velo_core_ep_close(c, 3), 0);
    for (auto [v, dma] : {std::pair<unsigned, uint64_t>{3u, ring}, {ctl_vpid, ctl}}) {
        size_t dis = find('W', nic.tbl(v, VELO_TBL_VPID_TABLE_MB_CFG));
        ASSERT_NE(dis, SIZE_MAX);
        EXPECT_EQ(nic.ev[dis].val, 0u);
        size_t q = SIZE_MAX;
        for (size_t i = dis; i < nic.ev.size(); ++i)
            if (nic.ev[i].kind == 'W' && nic.ev[i].off == VELO_REG_CTRL_QUIESCE_VPID && nic.ev[i].val == v) {
                q = i;
                break;
            }
        ASSERT_NE(q, SIZE_MAX);
        // every status read until the one that says idle, then the free
        size_t last_status = SIZE_MAX;
        int reads = 0;
        for (size_t i = q; i < nic.ev.size(); ++i) {
            if (nic.ev[i].kind == 'R' && nic.ev[i].off == VELO_REG_CTRL_QUIESCE_STATUS) {
                last_status = i;
                ++reads;
            }
            if (nic.ev[i].kind == 'W' && nic.ev[i].off == VELO_REG_CTRL_QUIESCE_VPID && i != q) break;
        }
        EXPECT_EQ(reads, 6) << "5 busy reads, then the idle one";
        size_t fr = SIZE_MAX;
        for (size_t i = 0; i < nic.ev.size(); ++i)
            if (nic.ev[i].kind == 'F' && nic.ev[i].val == dma) fr = i;
        ASSERT_NE(fr, SIZE_MAX);
        EXPECT_GT(fr, last_status) << "ring of vpid " << v << " freed before the NIC quiesced";
    }
    EXPECT_EQ(velo_core_ep_close(c, 3), -VELO_CORE_ENOENT);
}

TEST_F(Core, NeverQuiescedMemoryIsNotReused) {
    const velo_core_ep* e = nullptr;
    ASSERT_EQ(velo_core_ep_open(c, P(), &e), 0);
    nic.never_quiesce = true;
    const int frees = nic.frees;
    EXPECT_EQ(velo_core_ep_close(c, e->vpid), -VELO_CORE_ETIMEDOUT);
    EXPECT_EQ(nic.frees, frees) << "a ring the NIC may still write must not be freed";
    EXPECT_EQ(nic.live.size(), 2u);
    for (auto& [dma, m] : nic.live) std::free(m.first);  // the test's own cleanup of the leak
    nic.live.clear();
}

TEST_F(Core, GrantsAndWindowOffsets) {
    const velo_core_ep* e = nullptr;
    ASSERT_EQ(velo_core_ep_open(c, P(7), &e), 0);
    uint64_t off = 0;
    int g = velo_core_grant(c, 7, 0, 3, 9, &off);
    ASSERT_GE(g, 0);
    const uint64_t want = (9ull << VELO_SEND_ADDR_DST_VPID_SHIFT(8, 8)) |
                          (3ull << VELO_SEND_ADDR_DST_NODE_SHIFT(8, 8)) | (7ull << VELO_SEND_ADDR_SRC_VPID_SHIFT(8, 8));
    EXPECT_EQ(off, want);
    EXPECT_EQ(velo_core_grant(c, 7, 0, 3, 9, nullptr), g) << "same grant, same id";
    uint64_t off2 = 0;
    int g2 = velo_core_grant(c, 7, 1, 3, 9 | 128, &off2);
    ASSERT_GE(g2, 0);
    EXPECT_NE(g2, g);
    EXPECT_EQ(off2 >> VELO_SEND_ADDR_SRC_VPID_SHIFT(8, 8), 7u | 128u) << "control pages send from the control vpid";
    EXPECT_EQ(velo_core_grant(c, 7, 0, 3, 9 | 128, &off), -VELO_CORE_EINVAL) << "data pages to control vpids";
    EXPECT_EQ(velo_core_grant(c, 7, 0, 256, 1, &off), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_grant(c, 7, 0, 1, 256, &off), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_grant(c, 7, 2, 1, 1, &off), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_grant(c, 8, 0, 1, 1, &off), -VELO_CORE_ENOENT);
    const struct velo_core_grant_ent* gr = velo_core_grant_get(c, 7, static_cast<unsigned>(g));
    ASSERT_NE(gr, nullptr);
    EXPECT_EQ(gr->dst_node, 3u);
    EXPECT_EQ(gr->window_off, want);
    EXPECT_EQ(velo_core_revoke(c, 7, static_cast<unsigned>(g)), 0);
    EXPECT_EQ(velo_core_grant_get(c, 7, static_cast<unsigned>(g)), nullptr);
    EXPECT_EQ(velo_core_revoke(c, 7, static_cast<unsigned>(g)), -VELO_CORE_ENOENT);
}

TEST_F(Core, GrantLimit) {
    velo_core_ep_params p = params();
    p.max_grants = 4;
    const velo_core_ep* e = nullptr;
    ASSERT_EQ(velo_core_ep_open(c, &p, &e), 0);
    for (unsigned i = 0; i < 4; ++i) ASSERT_GE(velo_core_grant(c, e->vpid, 0, 1, i, nullptr), 0);
    EXPECT_EQ(velo_core_grant(c, e->vpid, 0, 1, 10, nullptr), -VELO_CORE_ENOSPC);
    ASSERT_EQ(velo_core_revoke(c, e->vpid, 2), 0);
    EXPECT_EQ(velo_core_grant(c, e->vpid, 0, 1, 10, nullptr), 2);
}

TEST_F(Core, ReleaseOwnerClosesOnlyItsEndpoints) {
    const velo_core_ep* e = nullptr;
    ASSERT_EQ(velo_core_ep_open(c, P(-1, 6, 100), &e), 0);
    ASSERT_EQ(velo_core_ep_open(c, P(-1, 6, 200), &e), 0);
    ASSERT_EQ(velo_core_ep_open(c, P(-1, 6, 100), &e), 0);
    EXPECT_EQ(velo_core_release_owner(c, 100), 2);
    EXPECT_EQ(velo_core_ep_count(c), 1u);
    EXPECT_NE(velo_core_ep_find(c, 1), nullptr);
    EXPECT_EQ(velo_core_release_owner(c, 100), 0);
}
