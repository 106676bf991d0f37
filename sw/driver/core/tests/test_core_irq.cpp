// Unit tests of the driver core's interrupt calls (velo_core_irq_*) against a fake register file
// with an IRQ block that behaves like the NIC's: ARM arms a vpid (values past the vpids are
// ignored), an entry (commit()) of an armed vpid disarms it and sets its PENDING bit, PENDING
// is write-1-to-clear, CTRL holds ENABLE. Every access is recorded, so the order of the writes
// and reads (arm, then the flushing read; read a word, then clear exactly its bits) is checked.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "velo/velo_hw.h"
#include "velo/velo_uapi.h"
#include "velo_core.h"

namespace {

struct Access {
    char kind;  // 'R' read, 'W' write
    uint32_t off;
    uint32_t val;
};

struct IrqNic {
    unsigned vpid_bits = 8;
    bool has_irq = true;
    uint32_t irq_base = VELO_BLK_IRQ_BASE;
    uint32_t pnd_off = VELO_TBL_IRQ_PENDING_BASE;
    int pnd_words = -1;           // PENDING_WORDS as reported; -1: ceil(vpids / 32)
    bool ctrl_sticks = true;      // CTRL keeps what is written
    bool pending_broken = false;  // PENDING reads all ones (a failed read)
    uint32_t ctrl = 0;
    std::vector<bool> arm;
    std::vector<uint32_t> pend;
    std::map<uint32_t, uint32_t> regs;  // table, user pages, everything else written
    std::vector<Access> log;
    // an entry arrives between the read of this PENDING word and the write that clears it
    int race_word = -1;
    unsigned race_vpid = 0;
    std::vector<std::string> msgs;

    IrqNic() { resize(); }
    void resize() {
        arm.assign(nv(), false);
        pend.assign(words(), 0);
    }
    unsigned nv() const { return 1u << vpid_bits; }
    unsigned words() const { return (nv() + 31) / 32; }
    // the chain: ID, CTRL, COUNTERS, NET, VPID and (if present) IRQ, where irq_base says
    uint32_t next_of(uint32_t base) const {
        switch (base) {
            case VELO_BLK_ID_BASE:
                return VELO_BLK_CTRL_BASE;
            case VELO_BLK_CTRL_BASE:
                return VELO_BLK_COUNTERS_BASE;
            case VELO_BLK_COUNTERS_BASE:
                return VELO_BLK_NET_BASE;
            case VELO_BLK_NET_BASE:
                return VELO_BLK_VPID_BASE;
            case VELO_BLK_VPID_BASE:
                return has_irq ? irq_base : 0;
            default:
                return 0;
        }
    }
    uint32_t type_of(uint32_t base) const {
        switch (base) {
            case VELO_BLK_ID_BASE:
                return VELO_ID_MAGIC;
            case VELO_BLK_CTRL_BASE:
                return VELO_BLK_CTRL_TYPE;
            case VELO_BLK_COUNTERS_BASE:
                return VELO_BLK_COUNTERS_TYPE;
            case VELO_BLK_NET_BASE:
                return VELO_BLK_NET_TYPE;
            case VELO_BLK_VPID_BASE:
                return VELO_BLK_VPID_TYPE;
            default:
                return has_irq && base == irq_base ? static_cast<uint32_t>(VELO_BLK_IRQ_TYPE) : 0;
        }
    }
    // (a bitmap claimed at offset 0 does not shadow the ID block: the core must refuse it anyway)
    bool in_pnd(uint32_t off) const { return has_irq && pnd_off != 0 && off >= pnd_off && off < pnd_off + 4 * words(); }
    uint32_t irq_reg(uint32_t reg) const { return reg - VELO_BLK_IRQ_BASE + irq_base; }

    uint32_t read(uint32_t off) {
        const uint32_t v = read_(off);
        log.push_back({'R', off, v});
        if (in_pnd(off) && static_cast<int>((off - pnd_off) / 4) == race_word) {
            commit(race_vpid);
            race_word = -1;
        }
        return v;
    }
    uint32_t read_(uint32_t off) {
        const uint32_t base = off & ~0xFFu, r = off & 0xFFu;
        const bool blk = base == VELO_BLK_ID_BASE || base == VELO_BLK_CTRL_BASE || base == VELO_BLK_COUNTERS_BASE ||
                         base == VELO_BLK_NET_BASE || base == VELO_BLK_VPID_BASE || (has_irq && base == irq_base);
        if (blk && r == VELO_BLKHDR_TYPE) return type_of(base);
        if (blk && r == VELO_BLKHDR_NEXT) return next_of(base);
        if (blk && r == VELO_BLKHDR_VERSION) return 1;
        if (has_irq) {
            if (off == irq_reg(VELO_REG_IRQ_CTRL)) return ctrl;
            if (off == irq_reg(VELO_REG_IRQ_ARM)) return 0;
            if (off == irq_reg(VELO_REG_IRQ_PENDING_OFFSET)) return pnd_off;
            if (off == irq_reg(VELO_REG_IRQ_PENDING_WORDS))
                return pnd_words < 0 ? words() : static_cast<uint32_t>(pnd_words);
            if (in_pnd(off)) return pending_broken ? 0xFFFFFFFFu : pend[(off - pnd_off) / 4];
        }
        switch (off) {
            case VELO_REG_ID_SPEC_HASH:
                return VELO_SPEC_HASH;
            case VELO_REG_ID_CAPS:
                return static_cast<uint32_t>(VELO_FIELD_PREP(VELO_REG_ID_CAPS_NODE_BITS, 8) |
                                             VELO_FIELD_PREP(VELO_REG_ID_CAPS_VPID_BITS, vpid_bits) |
                                             VELO_FIELD_PREP(VELO_REG_ID_CAPS_TLP_BYTES, 8) |
                                             VELO_FIELD_PREP(VELO_REG_ID_CAPS_LINK_BYTES, 2) |
                                             VELO_FIELD_PREP(VELO_REG_ID_CAPS_MSG_MAX, VELO_MSG_MAX));
            case VELO_REG_ID_DESIGN_VERSION:
                return VELO_SPEC_VERSION;
            case VELO_REG_VPID_NUM_VPIDS:
                return nv();
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
            case VELO_REG_NET_ROUTE_OFFSET:
                return VELO_TBL_ROUTE_TABLE_BASE;
            case VELO_REG_NET_PORT_OFFSET:
                return VELO_TBL_NET_PORT_BASE;
            case VELO_REG_NET_PORT_STRIDE:
                return VELO_TBL_NET_PORT_STRIDE;
            case VELO_REG_CTRL_QUIESCE_STATUS:
                return 0;
            default:
                break;
        }
        uint32_t v = regs.count(off) ? regs[off] : 0;
        if (off >= VELO_TBL_VPID_TABLE_BASE && off < VELO_TBL_VPID_TABLE_BASE + nv() * VELO_TBL_VPID_TABLE_STRIDE &&
            (off - VELO_TBL_VPID_TABLE_BASE) % VELO_TBL_VPID_TABLE_STRIDE == VELO_TBL_VPID_TABLE_MB_BASE_LO)
            v &= ~63u;
        return v;
    }
    void write(uint32_t off, uint32_t v) {
        log.push_back({'W', off, v});
        if (has_irq && off == irq_reg(VELO_REG_IRQ_CTRL)) {
            if (ctrl_sticks) ctrl = v & static_cast<uint32_t>(VELO_FIELD_MASK(VELO_REG_IRQ_CTRL_ENABLE));
            return;
        }
        if (has_irq && off == irq_reg(VELO_REG_IRQ_ARM)) {
            if (v < nv()) arm[v] = true;
            return;
        }
        if (in_pnd(off)) {
            pend[(off - pnd_off) / 4] &= ~v;
            return;
        }
        if (off >= VELO_TBL_VPID_TABLE_BASE && off < VELO_TBL_VPID_TABLE_BASE + nv() * VELO_TBL_VPID_TABLE_STRIDE &&
            (off - VELO_TBL_VPID_TABLE_BASE) % VELO_TBL_VPID_TABLE_STRIDE == VELO_TBL_VPID_TABLE_MB_CFG)
            arm[(off - VELO_TBL_VPID_TABLE_BASE) / VELO_TBL_VPID_TABLE_STRIDE] = false;  // MB_CFG disarms
        regs[off] = v;
    }
    // the NIC wrote an entry into vpid v's ring
    void commit(unsigned v) {
        if (!arm[v]) return;
        arm[v] = false;
        pend[v / 32] |= 1u << (v % 32);
    }
    size_t count(char kind, uint32_t off) const {
        size_t n = 0;
        for (const Access& a : log) n += a.kind == kind && a.off == off;
        return n;
    }
};

uint32_t op_rd(void* c, uint32_t off) {
    return static_cast<IrqNic*>(c)->read(off);
}
void op_wr(void* c, uint32_t off, uint32_t v) {
    static_cast<IrqNic*>(c)->write(off, v);
}
void* op_alloc(void*, size_t size, uint64_t* dma, void** cookie) {
    static uint64_t next = 0x200000000ull;
    void* p = std::aligned_alloc(4096, size);
    std::memset(p, 0, size);
    *dma = next;
    next += size;
    *cookie = p;
    return p;
}
void op_free(void*, void* cpu, size_t, uint64_t, void*) {
    std::free(cpu);
}
void* op_zalloc(void*, size_t size) {
    return std::calloc(1, size);
}
void op_kfree(void*, void* p) {
    std::free(p);
}
void op_log(void* c, int, const char* m) {
    static_cast<IrqNic*>(c)->msgs.push_back(m);
}
uint64_t op_prf(void*, uint64_t a, uint64_t b) {  // region keys are not what this test is about
    return (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full);
}
const velo_core_ops kOps = {op_rd, op_wr, op_alloc, op_free, op_zalloc, op_kfree, op_log, nullptr, op_prf};

void collect_cb(void* ctx, unsigned vpid) {
    static_cast<std::vector<unsigned>*>(ctx)->push_back(vpid);
}

class CoreIrq : public ::testing::Test {
  protected:
    IrqNic nic;
    velo_core* c = nullptr;
    void probe() { ASSERT_EQ(velo_core_probe(&kOps, &nic, &c), 0); }
    void TearDown() override {
        if (c) velo_core_remove(c);
    }
    const velo_core_ep* open(int vpid) {
        velo_core_ep_params p{};
        p.vpid = vpid;
        p.log2_lines = 4;
        p.ctl_log2_lines = 2;
        p.owner = 7;
        const velo_core_ep* e = nullptr;
        EXPECT_EQ(velo_core_ep_open(c, &p, &e), 0);
        return e;
    }
    std::vector<unsigned> collect(int* rc = nullptr) {
        std::vector<unsigned> got;
        const int r = velo_core_irq_collect(c, collect_cb, &got);
        if (rc) *rc = r;
        EXPECT_GE(r, 0);
        if (r >= 0) {
            EXPECT_EQ(static_cast<size_t>(r), got.size());
        }
        return got;
    }
};

}  // namespace

TEST_F(CoreIrq, ProbeFindsTheIrqBlock) {
    probe();
    const struct velo_core_caps* k = velo_core_caps(c);
    EXPECT_EQ(k->irq_base, static_cast<uint32_t>(VELO_BLK_IRQ_BASE));
    EXPECT_EQ(k->irq_pending_off, static_cast<uint32_t>(VELO_TBL_IRQ_PENDING_BASE));
    EXPECT_EQ(k->irq_pending_words, 8u);
}

TEST_F(CoreIrq, BlockFoundWhereTheChainSays) {
    // another design may place the block and its bitmap elsewhere: the core follows the chain
    nic.irq_base = 0x0700;
    nic.pnd_off = 0x0F00;
    probe();
    EXPECT_EQ(velo_core_caps(c)->irq_base, 0x0700u);
    const velo_core_ep* e = open(3);
    ASSERT_NE(e, nullptr);
    ASSERT_EQ(velo_core_irq_enable(c, 1), 0);
    EXPECT_EQ(nic.count('W', 0x0700 + VELO_REG_IRQ_CTRL - VELO_BLK_IRQ_BASE), 1u);
    ASSERT_EQ(velo_core_irq_arm(c, 3), 0);
    EXPECT_TRUE(nic.arm[3]);
    nic.commit(3);
    EXPECT_EQ(nic.pend[0], 1u << 3);
    EXPECT_EQ(collect(), std::vector<unsigned>{3});
    EXPECT_EQ(nic.count('W', 0x0F00), 1u);
}

TEST_F(CoreIrq, WithoutIrqBlockEveryCallIsENODEV) {
    nic.has_irq = false;
    probe();
    EXPECT_EQ(velo_core_caps(c)->irq_base, 0u);
    ASSERT_NE(open(1), nullptr);
    EXPECT_EQ(velo_core_irq_enable(c, 1), -VELO_CORE_ENODEV);
    EXPECT_EQ(velo_core_irq_arm(c, 1), -VELO_CORE_ENODEV);
    EXPECT_EQ(velo_core_irq_collect(c, collect_cb, nullptr), -VELO_CORE_ENODEV);
    // and a NULL core
    EXPECT_EQ(velo_core_irq_enable(nullptr, 1), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_irq_arm(nullptr, 1), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_irq_collect(nullptr, nullptr, nullptr), -VELO_CORE_EINVAL);
}

TEST_F(CoreIrq, ImplausibleIrqBlockIsRefused) {
    struct Case {
        int words;
        uint32_t off;
    };
    for (const Case& k : {Case{7, VELO_TBL_IRQ_PENDING_BASE}, Case{9, VELO_TBL_IRQ_PENDING_BASE}, Case{-1, 0},
                          Case{-1, VELO_TBL_IRQ_PENDING_BASE + 2}, Case{-1, (1u << VELO_BAR_REGS_BITS) - 16}}) {
        IrqNic bad;
        bad.pnd_words = k.words;
        bad.pnd_off = k.off;
        velo_core* x = nullptr;
        EXPECT_EQ(velo_core_probe(&kOps, &bad, &x), -VELO_CORE_ENODEV) << k.words << " words at " << k.off;
        EXPECT_EQ(x, nullptr);
        ASSERT_FALSE(bad.msgs.empty());
        EXPECT_NE(bad.msgs.back().find("IRQ"), std::string::npos) << bad.msgs.back();
    }
}

TEST_F(CoreIrq, EnableWritesCtrlAndReadsItBack) {
    probe();
    const uint32_t ctrl = VELO_REG_IRQ_CTRL;
    ASSERT_EQ(velo_core_irq_enable(c, 1), 0);
    EXPECT_EQ(nic.ctrl, 1u);
    ASSERT_GE(nic.log.size(), 2u);
    EXPECT_EQ(nic.log[nic.log.size() - 2].kind, 'W');
    EXPECT_EQ(nic.log[nic.log.size() - 2].off, ctrl);
    EXPECT_EQ(nic.log.back().kind, 'R');
    EXPECT_EQ(nic.log.back().off, ctrl);
    ASSERT_EQ(velo_core_irq_enable(c, 0), 0);
    EXPECT_EQ(nic.ctrl, 0u);
    ASSERT_EQ(velo_core_irq_enable(c, 42), 0) << "any nonzero value enables";
    EXPECT_EQ(nic.ctrl, 1u);
    // a device that does not keep it
    nic.ctrl_sticks = false;
    nic.ctrl = 0;
    EXPECT_EQ(velo_core_irq_enable(c, 1), -VELO_CORE_EIO);
}

TEST_F(CoreIrq, ArmChecksTheVpidThenWritesAndFlushes) {
    probe();
    const velo_core_ep* e = open(5);
    ASSERT_NE(e, nullptr);
    const unsigned ctl = e->ctl_vpid;
    EXPECT_EQ(velo_core_irq_arm(c, 256), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_irq_arm(c, ~0u), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_irq_arm(c, 6), -VELO_CORE_ENOENT) << "no endpoint";
    EXPECT_EQ(velo_core_irq_arm(c, VELO_CTL_VPID(6, 8)), -VELO_CORE_ENOENT) << "control vpid of no endpoint";
    EXPECT_EQ(nic.count('W', VELO_REG_IRQ_ARM), 0u) << "refused arms touch nothing";
    for (unsigned v : {5u, ctl}) {
        const size_t at = nic.log.size();
        ASSERT_EQ(velo_core_irq_arm(c, v), 0) << v;
        EXPECT_TRUE(nic.arm[v]);
        // the write, then a read of the device (the flush) and nothing else
        ASSERT_EQ(nic.log.size(), at + 2);
        EXPECT_EQ(nic.log[at].kind, 'W');
        EXPECT_EQ(nic.log[at].off, static_cast<uint32_t>(VELO_REG_IRQ_ARM));
        EXPECT_EQ(nic.log[at].val, v);
        EXPECT_EQ(nic.log[at + 1].kind, 'R');
        EXPECT_EQ(nic.log[at + 1].off & ~0xFFu, static_cast<uint32_t>(VELO_BLK_IRQ_BASE));
    }
    // closed: not any more (and the close disarmed both in the device)
    ASSERT_EQ(velo_core_ep_close(c, 5), 0);
    EXPECT_FALSE(nic.arm[5]);
    EXPECT_FALSE(nic.arm[ctl]);
    EXPECT_EQ(velo_core_irq_arm(c, 5), -VELO_CORE_ENOENT);
    EXPECT_EQ(velo_core_irq_arm(c, ctl), -VELO_CORE_ENOENT);
}

TEST_F(CoreIrq, CollectReportsAndClearsEveryPendingVpid) {
    probe();
    const unsigned vs[] = {0, 5, 31, 32, 63, 200, 255};
    for (unsigned v : vs) {
        nic.arm[v] = true;
        nic.commit(v);
    }
    int rc = 0;
    std::vector<unsigned> got = collect(&rc);
    EXPECT_EQ(got, std::vector<unsigned>(std::begin(vs), std::end(vs))) << "ascending, each once";
    for (unsigned w = 0; w < nic.words(); ++w) EXPECT_EQ(nic.pend[w], 0u) << w;
    // every word read once; only the nonzero ones written, with exactly the bits read
    for (unsigned w = 0; w < nic.words(); ++w) {
        const uint32_t off = VELO_TBL_IRQ_PENDING_BASE + 4 * w;
        EXPECT_EQ(nic.count('R', off), 1u) << w;
        const bool any = w == 0 || w == 1 || w == 6 || w == 7;
        EXPECT_EQ(nic.count('W', off), any ? 1u : 0u) << w;
    }
    for (const Access& a : nic.log)
        if (a.kind == 'W' && a.off == VELO_TBL_IRQ_PENDING_BASE + 4) {
            EXPECT_EQ(a.val, 0x80000001u);
        }
    // nothing left: no writes, no calls
    const size_t writes = nic.count('W', VELO_TBL_IRQ_PENDING_BASE);
    EXPECT_TRUE(collect().empty());
    EXPECT_EQ(nic.count('W', VELO_TBL_IRQ_PENDING_BASE), writes);
    // without a callback: cleared and counted
    nic.arm[77] = true;
    nic.commit(77);
    EXPECT_EQ(velo_core_irq_collect(c, nullptr, nullptr), 1);
    EXPECT_EQ(nic.pend[2], 0u);
}

TEST_F(CoreIrq, EntryBetweenReadAndClearIsKeptForTheNextCollect) {
    probe();
    nic.arm[40] = true;
    nic.commit(40);
    nic.arm[41] = true;
    nic.race_word = 1;  // vpid 41's entry lands after word 1 was read, before it is cleared
    nic.race_vpid = 41;
    EXPECT_EQ(collect(), std::vector<unsigned>{40});
    EXPECT_EQ(nic.pend[1], 1u << 9) << "the clear wrote only the bits it had read";
    EXPECT_EQ(collect(), std::vector<unsigned>{41});
}

TEST_F(CoreIrq, FailedPendingReadIsEIO) {
    nic.vpid_bits = 4;  // 16 vpids: bits 16..31 of the one word must read 0
    nic.resize();
    probe();
    EXPECT_EQ(velo_core_caps(c)->irq_pending_words, 1u);
    nic.arm[15] = true;
    nic.commit(15);
    EXPECT_EQ(collect(), std::vector<unsigned>{15});
    nic.arm[3] = true;
    nic.commit(3);
    nic.pending_broken = true;
    std::vector<unsigned> got;
    EXPECT_EQ(velo_core_irq_collect(c, collect_cb, &got), -VELO_CORE_EIO);
    EXPECT_TRUE(got.empty());
    EXPECT_EQ(nic.pend[0], 1u << 3) << "nothing cleared";
    nic.pending_broken = false;
    EXPECT_EQ(collect(), std::vector<unsigned>{3});
}
