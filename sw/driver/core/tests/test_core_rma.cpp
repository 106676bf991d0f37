// Directed tests of the driver core's RMA part (docs/rma.md §2, §4): the RMA block at probe,
// notification queue setup and teardown, region declaration, translation (page table runs,
// RG_CFG written last), invalidation with the quiesce barrier, key rotation, deregistration
// while the NIC still uses a region, a NIC that never quiesces, page table compaction, the
// ioctl argument checks and the mmaps. The fake NIC's monitor (fake_nic.hpp) flags every
// register change or unpin while a region may still be in use; every test ends with no DMA
// memory, no core memory and no pin left.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "fake_nic.hpp"
#include "velo/velo_uapi.h"

namespace {

constexpr unsigned kAll = VELO_REG_ACCESS_ALL;
// RG_SCOPE of an empty box (VPID_LO = NODE_LO = 0xFF > VPID_HI = NODE_HI = 0)
constexpr uint32_t kEmptyBox = 0x00FF00FFu;
// the ABI-6 layout (velo.ko checks the same with BUILD_BUG_ON)
static_assert(sizeof(velo_uapi_scope_box) == 4, "a scope box is 4 bytes");
static_assert(offsetof(velo_uapi_register, nboxes) == 48, "ABI 5 ended at nboxes");
static_assert(offsetof(velo_uapi_register, boxes) == 56, "boxes after nboxes and rsvd");
static_assert(sizeof(velo_uapi_register) == 120, "REGISTER is 120 bytes in ABI 6");

class Rma : public ::testing::Test {
  protected:
    fake::Nic nic;
    velo_core* c = nullptr;
    uint64_t next_owner = 1;
    std::vector<std::unique_ptr<fake::Pin>> pins;

    void probe() {
        ASSERT_EQ(fake::probe(&nic, &c), 0);
        ASSERT_EQ(velo_core_enable(c, 3), 0);
    }
    void SetUp() override {}
    void TearDown() override {
        if (c) velo_core_remove(c);
        EXPECT_TRUE(nic.live.empty()) << "DMA memory leaked";
        EXPECT_EQ(nic.zallocs, nic.zfrees) << "core memory leaked";
        for (auto& p : pins) EXPECT_LE(p->unpinned, 1);
        for (auto& v : nic.violations) ADD_FAILURE() << "monitor: " << v;
    }
    velo_core_client client() {
        velo_core_client cl;
        velo_core_client_init(&cl, next_owner++, 4242, 1000, 0);
        return cl;
    }
    void open(velo_core_client& cl) {
        velo_uapi_ep_open o{};
        o.argsz = sizeof o;
        o.vpid = -1;
        o.log2_lines = 6;
        o.ctl_log2_lines = 6;
        ASSERT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_EP_OPEN, &o), 0);
    }
    int setup(velo_core_client& cl, unsigned log2 = 0, velo_uapi_rma_setup* out = nullptr) {
        velo_uapi_rma_setup a{};
        a.argsz = sizeof a;
        a.log2_entries = log2;
        const int r = velo_core_ioctl(c, &cl, VELO_IOC_NR_RMA_SETUP, &a);
        if (out) *out = a;
        return r;
    }
    int reg(velo_core_client& cl, uint64_t addr, uint64_t len, unsigned flags, velo_uapi_register* out = nullptr) {
        velo_uapi_register a{};
        a.argsz = sizeof a;
        a.flags = flags;
        a.addr = addr;
        a.len = len;
        const int r = velo_core_ioctl(c, &cl, VELO_IOC_NR_REGISTER, &a);
        if (out) *out = a;
        return r;
    }
    int dereg(velo_core_client& cl, uint64_t nla) {
        velo_uapi_deregister a{};
        a.argsz = sizeof a;
        a.nla = nla;
        return velo_core_ioctl(c, &cl, VELO_IOC_NR_DEREGISTER, &a);
    }
    int repin(velo_core_client& cl, uint64_t nla, uint32_t* again = nullptr) {
        velo_uapi_repin a{};
        a.argsz = sizeof a;
        a.nla = nla;
        const int r = velo_core_ioctl(c, &cl, VELO_IOC_NR_REPIN, &a);
        if (again) *again = a.out_repinned;
        return r;
    }
    // what the OS glue does after REGISTER / REPIN: pin (here: made-up frames) and map
    static std::vector<uint64_t> frames(uint64_t n, uint64_t salt) {
        std::vector<uint64_t> f(n);
        for (uint64_t i = 0; i < n; ++i) f[i] = 0x100000 + salt * 0x1000 + i * 3;
        return f;
    }
    int map(const velo_uapi_register& a, uint64_t salt, fake::Pin** pin_out = nullptr) {
        const velo_core_region* g = velo_core_rma_region(c, a.region);
        if (!g) return -1;
        auto f = frames(velo_core_rma_pages(g->addr, g->len), salt);
        pins.push_back(std::make_unique<fake::Pin>());
        pins.back()->region = a.region;
        if (pin_out) *pin_out = pins.back().get();
        return velo_core_rma_map(c, a.region, a.key, f.data(), f.size(), pins.back().get());
    }
    // the NIC's view of region r's translation equals frames(.., salt)
    void expect_translation(unsigned r, uint64_t salt) {
        const velo_core_region* g = velo_core_rma_region(c, r);
        ASSERT_NE(g, nullptr);
        ASSERT_EQ(g->state, VELO_CORE_RG_VALID);
        const auto f = frames(g->npte, salt);
        const unsigned n = 1u << nic.pte_bits;
        EXPECT_EQ(nic.rg(r, VELO_TBL_RMA_REGION_RG_PTE), g->pte_first);
        for (unsigned k = 0; k < g->npte; ++k) EXPECT_EQ(nic.pte((g->pte_first + k) % n), f[k]) << "region " << r;
        EXPECT_TRUE(nic.rg_valid(r));
    }
};

TEST_F(Rma, ProbeReadsTheBlock) {
    nic.rg_bits = 6;
    nic.pte_bits = 9;
    probe();
    const struct velo_core_caps* k = velo_core_caps(c);
    EXPECT_EQ(k->rma_base, static_cast<uint32_t>(VELO_BLK_RMA_BASE));
    EXPECT_EQ(k->rma_region_bits, 6u);
    EXPECT_EQ(k->rma_pte_bits, 9u);
    EXPECT_EQ(k->rma_mtu, 48u);
    EXPECT_EQ(k->rma_region_off, static_cast<uint32_t>(VELO_TBL_RMA_REGION_BASE));
    unsigned longest = 0;
    EXPECT_EQ(velo_core_rma_pte_free(c, &longest), 512u);
    EXPECT_EQ(longest, 512u);
}

TEST_F(Rma, EnableWritesControl) {
    probe();
    EXPECT_EQ(velo_core_rma_enable(c, 1), 0);
    EXPECT_EQ(nic.reg(VELO_REG_RMA_CONTROL), 1u << VELO_REG_RMA_CONTROL_ENABLE_SHIFT);
    EXPECT_EQ(velo_core_rma_enable(c, 0), 0);
    EXPECT_EQ(nic.reg(VELO_REG_RMA_CONTROL), 0u);
    EXPECT_EQ(velo_core_rma_enable(nullptr, 1), -VELO_CORE_EINVAL);
}

TEST_F(Rma, ImplausibleBlockRefused) {
    for (int bad = 0; bad < 4; ++bad) {
        fake::Nic n;
        if (bad == 0) n.rg_bits = 13;
        if (bad == 1) n.pte_bits = 3;
        if (bad == 2) n.rma_mtu = 44;
        if (bad == 3) n.regs[VELO_REG_RMA_PTE_OFFSET] = 0x1FC000;  // table past BAR0
        velo_core* x = nullptr;
        EXPECT_EQ(velo_core_probe(fake::ops(), &n, &x), -VELO_CORE_ENODEV) << bad;
        EXPECT_EQ(n.zallocs, 0);
    }
}

TEST_F(Rma, NoBlockMeansNotSupported) {
    nic.drop_rma();
    probe();
    EXPECT_EQ(velo_core_caps(c)->rma_base, 0u);
    auto cl = client();
    open(cl);
    EXPECT_EQ(setup(cl), -VELO_CORE_EOPNOTSUPP);
    EXPECT_EQ(velo_core_rma_enable(c, 1), -VELO_CORE_EOPNOTSUPP);
    EXPECT_EQ(reg(cl, 0x1000, 4096, kAll), -VELO_CORE_EOPNOTSUPP);
    EXPECT_EQ(dereg(cl, 0), -VELO_CORE_EOPNOTSUPP);
    EXPECT_EQ(repin(cl, 0), -VELO_CORE_EOPNOTSUPP);
    uint64_t nla;
    const velo_core_scope all{0, 255, 0, 127};
    const velo_core_scope_list all_list{1, {all}};
    EXPECT_EQ(velo_core_rma_declare(c, 0, 0x1000, 1, kAll, &all_list, &nla), -VELO_CORE_EOPNOTSUPP);
    velo_core_scope box;
    EXPECT_EQ(velo_core_rma_scope(c, static_cast<unsigned>(cl.vpid), 0, VELO_SCOPE_JOB, &all, &box),
              -VELO_CORE_EOPNOTSUPP);
    velo_core_scope_list list;
    EXPECT_EQ(velo_core_rma_scope_list(c, static_cast<unsigned>(cl.vpid), 0, VELO_SCOPE_LIST, &all, 1, &list),
              -VELO_CORE_EOPNOTSUPP);
    EXPECT_EQ(velo_core_rma_invalidate(c, 0, 0), -VELO_CORE_EOPNOTSUPP);
    velo_core_map m;
    EXPECT_EQ(velo_core_mmap_check(c, &cl, VELO_MMAP_RMA_CMD, 4096, VELO_CORE_MAP_WRITE | VELO_CORE_MAP_SHARED, &m),
              -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_client_close(c, &cl), 0);
}

TEST_F(Rma, NotificationQueueSetupMapAndTeardown) {
    probe();
    auto cl = client();
    EXPECT_EQ(setup(cl), -VELO_CORE_EBADFD);
    open(cl);
    const unsigned v = static_cast<unsigned>(cl.vpid);
    EXPECT_EQ(setup(cl, VELO_NQ_LOG2_MIN - 1), -VELO_CORE_EINVAL);
    EXPECT_EQ(setup(cl, VELO_RMA_NQ_LOG2_MAX + 1), -VELO_CORE_EINVAL);
    velo_uapi_rma_setup bad{};
    bad.argsz = sizeof bad;
    bad.rsvd = 1;
    EXPECT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_RMA_SETUP, &bad), -VELO_CORE_EINVAL);
    velo_core_map m;
    EXPECT_EQ(velo_core_mmap_check(c, &cl, VELO_MMAP_NQ, 4096, VELO_CORE_MAP_READ | VELO_CORE_MAP_SHARED, &m),
              -VELO_CORE_EINVAL)
        << "no queue yet";
    const size_t live0 = nic.live.size();
    velo_uapi_rma_setup s{};
    ASSERT_EQ(setup(cl, 0, &s), 0);
    EXPECT_EQ(s.out_log2_entries, static_cast<uint32_t>(VELO_NQ_LOG2_DEFAULT));
    EXPECT_EQ(s.nq_bytes, 32ull << VELO_NQ_LOG2_DEFAULT);
    EXPECT_EQ(s.nq_rp_off, static_cast<uint32_t>(VELO_TBL_VPID_USER_NQ_RP));
    EXPECT_EQ(s.region_bits, 8u);
    EXPECT_EQ(s.pte_bits, 12u);
    EXPECT_EQ(s.mtu, 48u);
    EXPECT_EQ(nic.live.size(), live0 + 1);
    const velo_core_ep* e = velo_core_ep_find(c, v);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(nic.nq(v, VELO_TBL_RMA_NQ_TABLE_NQ_BASE_LO), static_cast<uint32_t>(e->nq_dma));
    EXPECT_EQ(nic.nq(v, VELO_TBL_RMA_NQ_TABLE_NQ_BASE_HI), static_cast<uint32_t>(e->nq_dma >> 32));
    EXPECT_EQ(nic.nq(v, VELO_TBL_RMA_NQ_TABLE_NQ_CFG),
              static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_RMA_NQ_TABLE_NQ_CFG_ENABLE, 1) |
                                    VELO_FIELD_PREP(VELO_TBL_RMA_NQ_TABLE_NQ_CFG_LOG2_ENTRIES, VELO_NQ_LOG2_DEFAULT)));
    EXPECT_EQ(setup(cl), -VELO_CORE_EEXIST);
    // mmaps: the queue read-only at its size, the command page write-only at the vpid's page
    const unsigned r = VELO_CORE_MAP_READ | VELO_CORE_MAP_SHARED, w = VELO_CORE_MAP_WRITE | VELO_CORE_MAP_SHARED;
    EXPECT_EQ(velo_core_mmap_check(c, &cl, VELO_MMAP_NQ, s.nq_bytes, r, &m), 0);
    EXPECT_EQ(m.kind, static_cast<unsigned>(VELO_CORE_MAP_NQ));
    EXPECT_EQ(m.cpu, e->nq);
    EXPECT_EQ(velo_core_mmap_check(c, &cl, VELO_MMAP_NQ, s.nq_bytes, r | w, &m), -VELO_CORE_EACCES);
    EXPECT_EQ(velo_core_mmap_check(c, &cl, VELO_MMAP_NQ, 4096, r, &m), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_mmap_check(c, &cl, VELO_MMAP_RMA_CMD, 4096, w, &m), 0);
    EXPECT_EQ(m.kind, static_cast<unsigned>(VELO_CORE_MAP_RMA_CMD));
    EXPECT_EQ(m.bar, static_cast<unsigned>(VELO_BAR_RMA));
    EXPECT_EQ(m.bar_off, uint64_t(v) << 12);
    EXPECT_EQ(velo_core_mmap_check(c, &cl, VELO_MMAP_RMA_CMD, 4096, w | r, &m), -VELO_CORE_EACCES);
    EXPECT_EQ(velo_core_mmap_check(c, &cl, VELO_MMAP_RMA_CMD, 8192, w, &m), -VELO_CORE_EINVAL);
    // close: the queue is disabled before the vpid's quiesce, the ring freed after it
    nic.wlog_on = true;
    EXPECT_EQ(velo_core_client_close(c, &cl), 0);
    size_t nq_off = 0, q_off = 0;
    for (size_t i = 0; i < nic.wlog.size(); ++i) {
        if (nic.wlog[i].first == VELO_TBL_RMA_NQ_TABLE_BASE + v * 16 + VELO_TBL_RMA_NQ_TABLE_NQ_CFG && !nq_off)
            nq_off = i + 1;
        if (nic.wlog[i].first == VELO_REG_CTRL_QUIESCE_VPID && nic.wlog[i].second == v && !q_off) q_off = i + 1;
    }
    ASSERT_TRUE(nq_off && q_off);
    EXPECT_LT(nq_off, q_off);
    EXPECT_EQ(nic.nq(v, VELO_TBL_RMA_NQ_TABLE_NQ_CFG), 0u);
    EXPECT_EQ(nic.live.size(), 0u);
}

TEST_F(Rma, RegisterMapInvalidateRepin) {
    probe();
    auto cl = client();
    open(cl);
    const unsigned v = static_cast<unsigned>(cl.vpid);
    velo_uapi_register a{};
    const uint64_t addr = 0x7f0000001234ull, len = 3 * 4096 + 100;
    ASSERT_EQ(reg(cl, addr, len, VELO_REG_LOCAL_READ | VELO_REG_REMOTE_WRITE, &a), 0);
    EXPECT_EQ(a.nla, VELO_FIELD_PREP(VELO_RMA_NLA_KEY, a.key & 0xFF) | VELO_FIELD_PREP(VELO_RMA_NLA_REGION, a.region));
    EXPECT_NE(a.key, 0u);
    const unsigned r = a.region;
    // declared: ALLOC without VALID, owner, key, permissions, start and length
    const uint32_t cfg = nic.rg_cfg(r);
    EXPECT_EQ(VELO_FIELD_GET(VELO_TBL_RMA_REGION_RG_CFG_ALLOC, cfg), 1u);
    EXPECT_EQ(VELO_FIELD_GET(VELO_TBL_RMA_REGION_RG_CFG_VALID, cfg), 0u);
    EXPECT_EQ(VELO_FIELD_GET(VELO_TBL_RMA_REGION_RG_CFG_OWNER_VPID, cfg), v);
    EXPECT_EQ(nic.rg(r, VELO_TBL_RMA_REGION_RG_KEY), a.key);
    // the default scope (JOB) without jobs: every node, every data vpid
    EXPECT_EQ(a.scope, static_cast<uint32_t>(VELO_SCOPE_BOX));
    EXPECT_EQ(a.node_lo, 0u);
    EXPECT_EQ(a.node_hi, 255u);
    EXPECT_EQ(a.vpid_lo, 0u);
    EXPECT_EQ(a.vpid_hi, 127u);
    EXPECT_EQ(nic.rg(r, VELO_TBL_RMA_REGION_RG_SCOPE), 0xFF007F00u);
    EXPECT_EQ(a.nboxes, 1u);
    EXPECT_EQ(a.boxes[0].node_hi, 255u);
    EXPECT_EQ(a.boxes[0].vpid_hi, 127u);
    for (uint32_t off : {VELO_TBL_RMA_REGION_RG_SCOPE1, VELO_TBL_RMA_REGION_RG_SCOPE2, VELO_TBL_RMA_REGION_RG_SCOPE3})
        EXPECT_EQ(nic.rg(r, off), kEmptyBox) << "boxes 1..3 of a one-box scope are empty";
    EXPECT_EQ(VELO_FIELD_GET(VELO_TBL_RMA_REGION_RG_CFG_PERM_LR, cfg), 1u);
    EXPECT_EQ(VELO_FIELD_GET(VELO_TBL_RMA_REGION_RG_CFG_PERM_LW, cfg), 0u);
    EXPECT_EQ(VELO_FIELD_GET(VELO_TBL_RMA_REGION_RG_CFG_PERM_RR, cfg), 0u);
    EXPECT_EQ(VELO_FIELD_GET(VELO_TBL_RMA_REGION_RG_CFG_PERM_RW, cfg), 1u);
    EXPECT_EQ(nic.rg(r, VELO_TBL_RMA_REGION_RG_START), 0x234u);
    EXPECT_EQ(nic.rg_len(r), len);
    EXPECT_EQ(velo_core_rma_pages(addr, len), 4u);
    uint32_t again = 9;
    EXPECT_EQ(repin(cl, a.nla, &again), 0);
    EXPECT_EQ(again, 1u) << "declared, not pinned";
    // map: wrong page count and frames beyond 40 bits refused, nothing kept
    std::vector<uint64_t> f3(3, 1), big(4, 1ull << 40);
    fake::Pin dummy;
    EXPECT_EQ(velo_core_rma_map(c, r, a.key, f3.data(), 3, &dummy), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_rma_map(c, r, a.key, big.data(), 4, &dummy), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_rma_map(c, r, a.key ^ 1, f3.data(), 4, &dummy), -VELO_CORE_ENOENT);
    nic.wlog_on = true;
    fake::Pin* pin = nullptr;
    ASSERT_EQ(map(a, 7, &pin), 0);
    expect_translation(r, 7);
    // RG_CFG is the last write of the sequence
    ASSERT_FALSE(nic.wlog.empty());
    EXPECT_EQ(nic.wlog.back().first, VELO_TBL_RMA_REGION_BASE + r * VELO_TBL_RMA_REGION_STRIDE);
    EXPECT_EQ(repin(cl, a.nla, &again), 0);
    EXPECT_EQ(again, 0u) << "valid: nothing to do";
    EXPECT_EQ(velo_core_rma_map(c, r, a.key, f3.data(), 4, &dummy), -VELO_CORE_ENOENT) << "mapped twice";
    // the MMU notifier: withdraw, quiesce (busy for a while), unpin; the handle stays
    nic.rma_busy_reads = 20;
    nic.rma_quiesce_polls = 0;
    EXPECT_EQ(velo_core_rma_invalidate(c, r, a.key ^ 1), 0) << "another key: nothing";
    EXPECT_EQ(pin->unpinned, 0);
    EXPECT_EQ(velo_core_rma_invalidate(c, r, a.key), 0);
    EXPECT_EQ(nic.rma_quiesce_polls, 21);
    EXPECT_EQ(pin->unpinned, 1);
    EXPECT_FALSE(nic.rg_valid(r));
    EXPECT_EQ(VELO_FIELD_GET(VELO_TBL_RMA_REGION_RG_CFG_ALLOC, nic.rg_cfg(r)), 1u) << "still declared";
    EXPECT_EQ(velo_core_rma_region(c, r)->state, VELO_CORE_RG_DECLARED);
    EXPECT_EQ(velo_core_rma_pte_free(c, nullptr), 4096u);
    EXPECT_EQ(velo_core_rma_invalidate(c, r, a.key), 0) << "twice";
    EXPECT_EQ(pin->unpinned, 1);
    // next use: re-pin (other frames now) and map again
    EXPECT_EQ(repin(cl, a.nla, &again), 0);
    EXPECT_EQ(again, 1u);
    ASSERT_EQ(map(a, 8), 0);
    expect_translation(r, 8);
    EXPECT_EQ(velo_core_client_close(c, &cl), 0);
    EXPECT_EQ(nic.rg_cfg(r), 0u);
    EXPECT_EQ(nic.unpins, 2);
}

TEST_F(Rma, KeyRotatesOnReuse) {
    nic.rg_bits = 2;  // four regions: indices come back soon
    probe();
    auto cl = client();
    open(cl);
    std::vector<velo_uapi_register> seen;
    for (int i = 0; i < 12; ++i) {
        velo_uapi_register a{};
        ASSERT_EQ(reg(cl, 0x10000, 4096, kAll, &a), 0);
        ASSERT_EQ(map(a, i), 0);
        for (const auto& old : seen) {
            if (old.region != a.region) continue;
            EXPECT_NE(old.key, a.key) << "index " << a.region << " reused with its old key";
            EXPECT_EQ(dereg(cl, old.nla), -VELO_CORE_ENOENT) << "stale handle accepted";
            EXPECT_EQ(repin(cl, old.nla), -VELO_CORE_ENOENT);
        }
        seen.push_back(a);
        ASSERT_EQ(dereg(cl, a.nla), 0);
        EXPECT_EQ(nic.rg_cfg(a.region), 0u);
        EXPECT_EQ(dereg(cl, a.nla), -VELO_CORE_ENOENT) << "twice";
    }
    // round robin: index i % 4
    for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i].region, i % 4);
    EXPECT_EQ(nic.unpins, 12);
    // all four taken: ENOSPC, then one freed is available again
    std::vector<velo_uapi_register> all(4);
    for (auto& a : all) ASSERT_EQ(reg(cl, 0x10000, 1, kAll, &a), 0);
    EXPECT_EQ(reg(cl, 0x10000, 1, kAll), -VELO_CORE_ENOSPC);
    ASSERT_EQ(dereg(cl, all[2].nla), 0);
    velo_uapi_register b{};
    ASSERT_EQ(reg(cl, 0x10000, 1, kAll, &b), 0);
    EXPECT_EQ(b.region, all[2].region);
    EXPECT_NE(b.key, all[2].key);
    EXPECT_EQ(velo_core_client_close(c, &cl), 0);
}

TEST_F(Rma, DeregisterWaitsForTheNic) {
    probe();
    auto cl = client();
    open(cl);
    velo_uapi_register a{};
    ASSERT_EQ(reg(cl, 0x20000, 8 * 4096, kAll, &a), 0);
    fake::Pin* pin = nullptr;
    ASSERT_EQ(map(a, 1, &pin), 0);
    // a transfer in flight: the in-use counter stays busy for 500 reads
    nic.rma_busy_reads = 500;
    nic.rma_quiesce_polls = 0;
    nic.wlog_on = true;
    EXPECT_EQ(dereg(cl, a.nla), 0);
    EXPECT_EQ(nic.rma_quiesce_polls, 501);
    EXPECT_EQ(pin->unpinned, 1);
    // RG_CFG = 0 first, then QUIESCE_REGION
    ASSERT_GE(nic.wlog.size(), 2u);
    EXPECT_EQ(nic.wlog[0], std::make_pair(uint32_t(VELO_TBL_RMA_REGION_BASE + a.region * 32), 0u));
    EXPECT_EQ(nic.wlog[1], std::make_pair(uint32_t(VELO_REG_RMA_QUIESCE_REGION), a.region));
    EXPECT_EQ(velo_core_client_close(c, &cl), 0);
}

TEST_F(Rma, NicThatNeverQuiescesKeepsThePins) {
    probe();
    auto cl = client();
    open(cl);
    velo_uapi_register a{}, b{};
    ASSERT_EQ(reg(cl, 0x20000, 4 * 4096, kAll, &a), 0);
    fake::Pin* pin = nullptr;
    ASSERT_EQ(map(a, 1, &pin), 0);
    const unsigned first = velo_core_rma_region(c, a.region)->pte_first;
    nic.rma_stuck.insert(a.region);
    EXPECT_EQ(velo_core_rma_invalidate(c, a.region, a.key), -VELO_CORE_ETIMEDOUT);
    EXPECT_EQ(pin->unpinned, 0) << "pages unpinned under a busy NIC";
    EXPECT_EQ(velo_core_rma_region(c, a.region)->state, VELO_CORE_RG_STUCK);
    EXPECT_FALSE(nic.logs.empty());
    EXPECT_EQ(repin(cl, a.nla), -VELO_CORE_EIO);
    // its page table entries are not given to anyone else
    ASSERT_EQ(reg(cl, 0x90000, 4092 * 4096, kAll, &b), 0);
    ASSERT_EQ(map(b, 2), 0);
    const velo_core_region* gb = velo_core_rma_region(c, b.region);
    for (unsigned k = 0; k < gb->npte; ++k) {
        const unsigned i = (gb->pte_first + k) % 4096;
        EXPECT_FALSE(i >= first && i < first + 4) << i;
    }
    // deregistration retries the quiesce: still stuck, then the NIC lets go
    EXPECT_EQ(dereg(cl, a.nla), -VELO_CORE_ETIMEDOUT);
    EXPECT_EQ(pin->unpinned, 0);
    EXPECT_EQ(dereg(cl, a.nla), -VELO_CORE_ENOENT) << "out of use for good";
    nic.rma_stuck.clear();
    EXPECT_EQ(velo_core_client_close(c, &cl), 0);
    EXPECT_EQ(pin->unpinned, 0) << "a stuck, deregistered region stays pinned until the device goes";
    velo_core_remove(c);
    c = nullptr;
    EXPECT_EQ(pin->unpinned, 0);
}

TEST_F(Rma, FragmentedPageTableIsCompacted) {
    nic.pte_bits = 4;  // 16 entries
    probe();
    auto cl = client();
    open(cl);
    velo_uapi_register r[4];
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(reg(cl, 0x100000 * (i + 1), 4 * 4096, kAll, &r[i]), 0);
        ASSERT_EQ(map(r[i], 10 + i), 0);
    }
    unsigned longest = 0;
    EXPECT_EQ(velo_core_rma_pte_free(c, &longest), 0u);
    velo_uapi_register big{};
    ASSERT_EQ(reg(cl, 0x900000, 8 * 4096, kAll, &big), 0);
    EXPECT_EQ(map(big, 20), -VELO_CORE_ENOSPC) << "full";
    ASSERT_EQ(dereg(cl, r[0].nla), 0);
    ASSERT_EQ(dereg(cl, r[2].nla), 0);
    EXPECT_EQ(velo_core_rma_pte_free(c, &longest), 8u);
    EXPECT_EQ(longest, 4u) << "two runs of four";
    ASSERT_EQ(map(big, 20), 0) << "compaction makes a run of 8";
    expect_translation(r[1].region, 11);
    expect_translation(r[3].region, 13);
    expect_translation(big.region, 20);
    EXPECT_EQ(velo_core_rma_pte_free(c, &longest), 0u);
    // a larger region than the table can never be registered
    EXPECT_EQ(reg(cl, 0, 17 * 4096, kAll), -VELO_CORE_ENOSPC);
    EXPECT_EQ(velo_core_client_close(c, &cl), 0);
    EXPECT_EQ(nic.unpins, 5);
}

TEST_F(Rma, BestFitAndWrap) {
    nic.pte_bits = 4;
    probe();
    auto cl = client();
    open(cl);
    velo_uapi_register a{}, b{}, d{}, e{};
    ASSERT_EQ(reg(cl, 0, 6 * 4096, kAll, &a), 0);  // 0..5
    ASSERT_EQ(map(a, 1), 0);
    ASSERT_EQ(reg(cl, 0, 2 * 4096, kAll, &b), 0);  // 6..7
    ASSERT_EQ(map(b, 2), 0);
    ASSERT_EQ(reg(cl, 0, 6 * 4096, kAll, &d), 0);  // 8..13, 14..15 free
    ASSERT_EQ(map(d, 3), 0);
    ASSERT_EQ(dereg(cl, a.nla), 0);  // free: 0..5 and 14..15 join across the end: a run of 8
    unsigned longest = 0;
    EXPECT_EQ(velo_core_rma_pte_free(c, &longest), 8u);
    EXPECT_EQ(longest, 8u);
    ASSERT_EQ(reg(cl, 0, 7 * 4096, kAll, &e), 0);
    ASSERT_EQ(map(e, 4), 0);
    EXPECT_EQ(velo_core_rma_region(c, e.region)->pte_first, 14u) << "the run wraps";
    expect_translation(e.region, 4);
    expect_translation(b.region, 2);
    expect_translation(d.region, 3);
    EXPECT_EQ(velo_core_client_close(c, &cl), 0);
}

TEST_F(Rma, ArgumentsAreChecked) {
    nic.rg_bits = 8;
    probe();
    auto cl = client(), other = client(), none = client();
    open(cl);
    open(other);
    EXPECT_EQ(reg(none, 0x1000, 1, kAll), -VELO_CORE_EBADFD);
    EXPECT_EQ(reg(cl, 0x1000, 1, 0), -VELO_CORE_EINVAL) << "no access";
    EXPECT_EQ(reg(cl, 0x1000, 1, 0x10), -VELO_CORE_EINVAL) << "unknown flag";
    EXPECT_EQ(reg(cl, 0x1000, 0, kAll), -VELO_CORE_EINVAL) << "empty";
    EXPECT_EQ(reg(cl, 0x1000, 1ull << 40, kAll), -VELO_CORE_EINVAL) << "longer than RG_LEN";
    EXPECT_EQ(reg(cl, ~0ull - 10, 100, kAll), -VELO_CORE_EINVAL) << "wraps";
    EXPECT_EQ(reg(cl, 0x1000, 4097ull * 4096, kAll), -VELO_CORE_ENOSPC) << "more pages than the table";
    velo_uapi_register a{};
    ASSERT_EQ(reg(cl, 0x1000, 10, kAll, &a), 0);
    velo_uapi_register small{};
    small.argsz = sizeof small - 4;
    small.flags = kAll;
    small.len = 1;
    EXPECT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_REGISTER, &small), -VELO_CORE_EINVAL) << "argsz";
    // handles: another endpoint's, an offset, a wrong key, a region out of range
    EXPECT_EQ(dereg(other, a.nla), -VELO_CORE_ENOENT);
    EXPECT_EQ(repin(other, a.nla), -VELO_CORE_ENOENT);
    EXPECT_EQ(dereg(cl, a.nla + 1), -VELO_CORE_ENOENT);
    EXPECT_EQ(dereg(cl, a.nla ^ VELO_FIELD_PREP(VELO_RMA_NLA_KEY, 0x80)), -VELO_CORE_ENOENT);
    EXPECT_EQ(dereg(cl, VELO_FIELD_PREP(VELO_RMA_NLA_REGION, 300)), -VELO_CORE_ENOENT);
    velo_uapi_deregister d{};
    d.argsz = sizeof d;
    d.flags = 1;
    d.nla = a.nla;
    EXPECT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_DEREGISTER, &d), -VELO_CORE_EINVAL);
    velo_uapi_repin p{};
    p.argsz = sizeof p;
    p.nla = a.nla;
    p.rsvd = 1;
    EXPECT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_REPIN, &p), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_rma_map(c, a.region, a.key, nullptr, 1, nullptr), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_rma_map(c, 999, a.key, nullptr, 1, nullptr), -VELO_CORE_ENOENT);
    // nothing of the refused calls stuck
    unsigned n = 0;
    for (unsigned r = 0; r < 256; ++r) n += velo_core_rma_region(c, r)->state != VELO_CORE_RG_FREE;
    EXPECT_EQ(n, 1u);
    EXPECT_EQ(velo_core_client_close(c, &cl), 0);
    EXPECT_EQ(velo_core_client_close(c, &other), 0);
}

TEST_F(Rma, CloseAndReclaimTearDownEverything) {
    probe();
    auto cl = client(), cl2 = client();
    open(cl);
    open(cl2);
    ASSERT_EQ(setup(cl), 0);
    ASSERT_EQ(setup(cl2), 0);
    std::vector<velo_uapi_register> rs(6);
    for (size_t i = 0; i < rs.size(); ++i) {
        ASSERT_EQ(reg(i % 2 ? cl2 : cl, 0x1000 * i, 5000, kAll, &rs[i]), 0);
        if (i % 3) {  // some only declared
            ASSERT_EQ(map(rs[i], i), 0);
        }
    }
    nic.rma_busy_reads = 3;
    uint64_t owner = 0;
    ASSERT_EQ(velo_core_reclaim(c, static_cast<unsigned>(cl2.vpid), &owner), 0);
    EXPECT_EQ(owner, cl2.owner);
    for (size_t i = 1; i < rs.size(); i += 2) EXPECT_EQ(nic.rg_cfg(rs[i].region), 0u);
    EXPECT_EQ(velo_core_client_close(c, &cl), 0);
    for (auto& a : rs) EXPECT_EQ(velo_core_rma_region(c, a.region)->state, VELO_CORE_RG_FREE);
    for (auto& p : pins) EXPECT_EQ(p->unpinned, 1);
    EXPECT_EQ(velo_core_rma_pte_free(c, nullptr), 4096u);
}

}  // namespace

// Compaction withdraws every VALID region for a moment: an unprivileged endpoint may trigger
// it only when all of them are its own; a privileged one may always.
TEST_F(Rma, CompactionNeverWithdrawsOthersRegionsForAnUnprivilegedCaller) {
    nic.pte_bits = 4;  // 16 entries
    probe();
    auto me = client(), other = client();
    velo_core_client root;
    velo_core_client_init(&root, next_owner++, 1, 0, 1);
    open(me);
    open(other);
    open(root);
    velo_uapi_register mine[2], theirs[2];
    for (int i = 0; i < 2; ++i) {
        ASSERT_EQ(reg(me, 0x100000 * (2 * i + 1), 4 * 4096, kAll, &mine[i]), 0);
        ASSERT_EQ(map(mine[i], 10 + i), 0);
        ASSERT_EQ(reg(other, 0x100000 * (2 * i + 2), 4 * 4096, kAll, &theirs[i]), 0);
        ASSERT_EQ(map(theirs[i], 20 + i), 0);
    }
    // free two runs of four that are not adjacent: mine[0] (0..3) and mine[1] (8..11)
    ASSERT_EQ(dereg(me, mine[0].nla), 0);
    ASSERT_EQ(dereg(me, mine[1].nla), 0);
    unsigned longest = 0;
    EXPECT_EQ(velo_core_rma_pte_free(c, &longest), 8u);
    EXPECT_EQ(longest, 4u);
    velo_uapi_register big{};
    ASSERT_EQ(reg(me, 0x900000, 8 * 4096, kAll, &big), 0);
    nic.wlog_on = true;
    EXPECT_EQ(map(big, 30), -VELO_CORE_ENOSPC) << "only others' regions could move";
    for (auto& [off, v] : nic.wlog) EXPECT_NE(off, uint32_t(VELO_REG_RMA_QUIESCE_REGION)) << "nothing withdrawn";
    nic.wlog_on = false;
    expect_translation(theirs[0].region, 20);
    expect_translation(theirs[1].region, 21);
    ASSERT_EQ(dereg(me, big.nla), 0);
    // the same for a privileged endpoint: compacted, the others' translations moved intact
    velo_uapi_register rbig{};
    ASSERT_EQ(reg(root, 0xA00000, 8 * 4096, kAll, &rbig), 0);
    ASSERT_EQ(map(rbig, 40), 0);
    expect_translation(theirs[0].region, 20);
    expect_translation(theirs[1].region, 21);
    expect_translation(rbig.region, 40);
    EXPECT_EQ(velo_core_client_close(c, &me), 0);
    EXPECT_EQ(velo_core_client_close(c, &other), 0);
    EXPECT_EQ(velo_core_client_close(c, &root), 0);
}

// ---------------------------------------------------------------- keys (velo_core.h "Keys")
namespace {

// degenerate PRFs: the keys must stay a permutation of the counter whatever the PRF returns
uint64_t prf_zero(uint64_t, uint64_t, uint64_t) {
    return 0;  // every round a plain swap: key(n) = n
}
uint64_t prf_not_first_two(uint64_t, uint64_t, uint64_t b) {
    return (b >> 16) < 2 ? 0xFFFF : 0;  // rounds 0 and 1 invert: key(n) = ~n
}
uint64_t prf_echo(uint64_t, uint64_t a, uint64_t b) {
    return a ^ b;  // depends on the half only
}

}  // namespace

TEST_F(Rma, KeysNeverZeroNeverRepeatForAnIndexAndFollowTheDefinition) {
    nic.rg_bits = 2;  // four indices, each reused 10,000 times
    probe();
    auto cl = client();
    open(cl);
    std::vector<std::set<uint32_t>> seen(4);
    std::vector<uint32_t> n(4, 0);  // the model's counter per index
    for (int i = 0; i < 40000; ++i) {
        velo_uapi_register a{};
        ASSERT_EQ(reg(cl, 0x10000, 4096, kAll, &a), 0);
        ASSERT_EQ(a.region, static_cast<uint32_t>(i % 4));
        ASSERT_NE(a.key, 0u);
        ASSERT_TRUE(seen[a.region].insert(a.key).second) << "index " << a.region << " got key " << a.key << " again";
        uint32_t want = 0;
        while (!want) want = velo_core_rma_key(c, a.region, n[a.region]++);
        ASSERT_EQ(a.key, want);
        ASSERT_EQ(nic.rg(a.region, VELO_TBL_RMA_REGION_RG_KEY), a.key);
        ASSERT_EQ(VELO_FIELD_GET(VELO_RMA_NLA_KEY, a.nla), a.key & 0xFF);
        ASSERT_EQ(velo_core_rma_region(c, a.region)->gen, uint64_t(n[a.region]));
        ASSERT_EQ(dereg(cl, a.nla), 0);
    }
    // indices do not share their key sequences (the PRF is keyed by the index): registration n
    // of two indices gets two keys, and of 3 x 10,000 pairs of random 32-bit keys about 0.07
    // coincide anywhere in the sequences (the test allows a few)
    for (unsigned r = 1; r < 4; ++r) {
        size_t common = 0;
        for (uint32_t k : seen[r]) common += seen[0].count(k);
        EXPECT_LE(common, 3u) << "index 0 and " << r;
        for (uint32_t i = 0; i < 10000; ++i)
            ASSERT_NE(velo_core_rma_key(c, 0, i), velo_core_rma_key(c, r, i)) << "counter " << i;
    }
    EXPECT_EQ(velo_core_client_close(c, &cl), 0);
}

TEST_F(Rma, KeysArePermutationsForAnyPrf) {
    probe();
    uint64_t (*prfs[])(uint64_t, uint64_t, uint64_t) = {nullptr, prf_zero, prf_not_first_two, prf_echo};
    for (auto* f : prfs) {
        nic.prf_fn = f;
        std::vector<uint32_t> keys;
        const uint32_t n = 1u << 18;
        keys.reserve(2 * n);
        for (uint32_t i = 0; i < n; ++i) keys.push_back(velo_core_rma_key(c, 5, i));
        for (uint32_t i = 0; i < n; ++i) keys.push_back(velo_core_rma_key(c, 5, 0xFFFFFFFFu - i));  // the top end
        std::sort(keys.begin(), keys.end());
        EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end()) << "two counters, one key";
    }
    nic.prf_fn = prf_zero;
    EXPECT_EQ(velo_core_rma_key(c, 9, 0x12345678u), 0x12345678u);
    nic.prf_fn = prf_not_first_two;
    EXPECT_EQ(velo_core_rma_key(c, 9, 0x12345678u), ~0x12345678u);
    // the real keyed PRF: another secret, other keys
    nic.prf_fn = nullptr;
    const uint32_t k1 = velo_core_rma_key(c, 9, 7);
    nic.prf_key ^= 1;
    EXPECT_NE(velo_core_rma_key(c, 9, 7), k1);
}

TEST_F(Rma, KeyZeroSkippedAndSpentIndexRetired) {
    nic.rg_bits = 2;
    probe();
    auto cl = client();
    open(cl);
    // key(n) = n: the first registration skips counter 0 (key 0)
    nic.prf_fn = prf_zero;
    velo_uapi_register a{};
    ASSERT_EQ(reg(cl, 0x10000, 4096, kAll, &a), 0);
    EXPECT_EQ(a.region, 0u);
    EXPECT_EQ(a.key, 1u);
    ASSERT_EQ(dereg(cl, a.nla), 0);
    // index 1 as after 2^32 - 1 registrations: its last counter gives key 0xFFFFFFFF, then it
    // has none left and is retired at deregistration (the counter is set directly here)
    auto* g1 = const_cast<velo_core_region*>(velo_core_rma_region(c, 1));
    g1->gen = 0xFFFFFFFFull;
    ASSERT_EQ(reg(cl, 0x10000, 4096, kAll, &a), 0);
    EXPECT_EQ(a.region, 1u);
    EXPECT_EQ(a.key, 0xFFFFFFFFu);
    ASSERT_EQ(dereg(cl, a.nla), 0);
    EXPECT_EQ(velo_core_rma_region(c, 1)->state, VELO_CORE_RG_RETIRED);
    EXPECT_EQ(nic.rg_cfg(1), 0u);
    EXPECT_EQ(dereg(cl, a.nla), -VELO_CORE_ENOENT);
    // index 2 with key(n) = ~n: its last counter maps to 0, so it is retired when picked
    nic.prf_fn = prf_not_first_two;
    auto* g2 = const_cast<velo_core_region*>(velo_core_rma_region(c, 2));
    g2->gen = 0xFFFFFFFFull;
    ASSERT_EQ(reg(cl, 0x10000, 4096, kAll, &a), 0);
    EXPECT_EQ(a.region, 3u) << "index 2 has no key left";
    EXPECT_EQ(velo_core_rma_region(c, 2)->state, VELO_CORE_RG_RETIRED);
    EXPECT_EQ(a.key, ~0u) << "index 3's first key: ~0";
    // the retired indices never come back: only 0 and 3 are left
    std::vector<velo_uapi_register> more(1);
    ASSERT_EQ(reg(cl, 0x10000, 4096, kAll, &more[0]), 0);
    EXPECT_EQ(more[0].region, 0u);
    EXPECT_EQ(reg(cl, 0x10000, 4096, kAll), -VELO_CORE_ENOSPC);
    for (int i = 0; i < 8; ++i) {
        ASSERT_EQ(dereg(cl, more[0].nla), 0);
        ASSERT_EQ(reg(cl, 0x10000, 4096, kAll, &more[0]), 0);
        EXPECT_TRUE(more[0].region == 0u) << more[0].region;
    }
    EXPECT_EQ(velo_core_client_close(c, &cl), 0);
    EXPECT_EQ(velo_core_rma_region(c, 1)->state, VELO_CORE_RG_RETIRED);
    EXPECT_EQ(velo_core_rma_region(c, 2)->state, VELO_CORE_RG_RETIRED);
}

// ---------------------------------------------------------------- scopes (velo_uapi.h REGISTER)
namespace {

class Scope : public Rma {
  protected:
    velo_core_client root{};
    void SetUp() override {
        nic.node_bits = 4;  // nodes 0..15: 16 and up are beyond the NIC
        probe();
        velo_core_client_init(&root, 999, 1, 0, 1);
    }
    void TearDown() override {
        velo_core_client_close(c, &root);
        Rma::TearDown();
    }
    void job(uint64_t key, unsigned vlo, unsigned vhi, unsigned nlo, unsigned nhi) {
        velo_uapi_job j{};
        j.argsz = sizeof j;
        j.job_key = key;
        j.vpid_lo = vlo;
        j.vpid_hi = vhi;
        j.node_lo = nlo;
        j.node_hi = nhi;
        ASSERT_EQ(velo_core_ioctl(c, &root, VELO_IOC_NR_JOB_SET, &j), 0);
    }
    void open_at(velo_core_client& cl, int vpid, uint64_t job_key = 0, int want = 0) {
        velo_uapi_ep_open o{};
        o.argsz = sizeof o;
        o.vpid = vpid;
        o.job_key = job_key;
        o.log2_lines = 6;
        o.ctl_log2_lines = 6;
        ASSERT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_EP_OPEN, &o), want);
    }
    // REGISTER with a scope; on success *box = the four output bytes (node_lo, node_hi, vpid_lo,
    // vpid_hi) and the region's RG_SCOPE must say the same
    int reg_scope(velo_core_client& cl, unsigned kind, std::array<unsigned, 4> in, std::array<unsigned, 4>* box) {
        velo_uapi_register a{};
        a.argsz = sizeof a;
        a.flags = kAll;
        a.addr = 0x10000;
        a.len = 4096;
        a.scope = kind;
        a.node_lo = static_cast<uint8_t>(in[0]);
        a.node_hi = static_cast<uint8_t>(in[1]);
        a.vpid_lo = static_cast<uint8_t>(in[2]);
        a.vpid_hi = static_cast<uint8_t>(in[3]);
        const int r = velo_core_ioctl(c, &cl, VELO_IOC_NR_REGISTER, &a);
        if (r) return r;
        EXPECT_EQ(a.scope, static_cast<uint32_t>(VELO_SCOPE_BOX));
        EXPECT_EQ(a.nboxes, 1u);
        EXPECT_EQ(
            (std::array<unsigned, 4>{a.boxes[0].node_lo, a.boxes[0].node_hi, a.boxes[0].vpid_lo, a.boxes[0].vpid_hi}),
            (std::array<unsigned, 4>{a.node_lo, a.node_hi, a.vpid_lo, a.vpid_hi}));
        for (uint32_t off :
             {VELO_TBL_RMA_REGION_RG_SCOPE1, VELO_TBL_RMA_REGION_RG_SCOPE2, VELO_TBL_RMA_REGION_RG_SCOPE3})
            EXPECT_EQ(nic.rg(a.region, off), kEmptyBox) << "one box: the others empty";
        *box = {a.node_lo, a.node_hi, a.vpid_lo, a.vpid_hi};
        EXPECT_EQ(nic.rg(a.region, VELO_TBL_RMA_REGION_RG_SCOPE),
                  a.vpid_lo | uint32_t(a.vpid_hi) << 8 | uint32_t(a.node_lo) << 16 | uint32_t(a.node_hi) << 24);
        EXPECT_EQ(nic.rg(a.region, VELO_TBL_RMA_REGION_RG_KEY), a.key);
        EXPECT_EQ(dereg(cl, a.nla), 0);
        return 0;
    }
    unsigned allocated() const {
        unsigned n = 0;
        for (unsigned r = 0; r < 256; ++r) n += velo_core_rma_region(c, r)->state != VELO_CORE_RG_FREE;
        return n;
    }
};

using Box = std::array<unsigned, 4>;  // node_lo, node_hi, vpid_lo, vpid_hi

}  // namespace

TEST_F(Scope, JobPolicyBoxesOfJobsAndOfRunsWithoutAJob) {
    job(0x11, 10, 19, 2, 5);
    job(0x22, 40, 49, 0, 7);
    auto a = client(), x = client(), lo = client(), hi = client();
    open_at(a, -1, 0x11);
    open_at(x, 30);
    open_at(lo, 0);
    open_at(hi, 100);
    Box b{};
    ASSERT_EQ(reg_scope(a, VELO_SCOPE_JOB, {}, &b), 0);
    EXPECT_EQ(b, (Box{2, 5, 10, 19})) << "the job's vpids on its nodes";
    ASSERT_EQ(reg_scope(x, VELO_SCOPE_JOB, {}, &b), 0);
    EXPECT_EQ(b, (Box{0, 15, 20, 39})) << "the run between the jobs, every node";
    ASSERT_EQ(reg_scope(lo, VELO_SCOPE_JOB, {}, &b), 0);
    EXPECT_EQ(b, (Box{0, 15, 0, 9}));
    ASSERT_EQ(reg_scope(hi, VELO_SCOPE_JOB, {}, &b), 0);
    EXPECT_EQ(b, (Box{0, 15, 50, 127}));
    // OWNER: this node (3), its own data vpid
    const unsigned va = static_cast<unsigned>(a.vpid);
    ASSERT_EQ(reg_scope(a, VELO_SCOPE_OWNER, {}, &b), 0);
    EXPECT_EQ(b, (Box{3, 3, va, va}));
    // PEER and BOX inside the job; outside: EACCES; malformed: EINVAL; nothing kept
    ASSERT_EQ(reg_scope(a, VELO_SCOPE_PEER, {4, 0, 12, 0}, &b), 0);
    EXPECT_EQ(b, (Box{4, 4, 12, 12}));
    ASSERT_EQ(reg_scope(a, VELO_SCOPE_BOX, {2, 5, 10, 19}, &b), 0);
    EXPECT_EQ(b, (Box{2, 5, 10, 19}));
    ASSERT_EQ(reg_scope(a, VELO_SCOPE_BOX, {3, 3, 11, 12}, &b), 0);
    EXPECT_EQ(b, (Box{3, 3, 11, 12}));
    EXPECT_EQ(reg_scope(a, VELO_SCOPE_PEER, {6, 0, 12, 0}, &b), -VELO_CORE_EACCES) << "node outside the job";
    EXPECT_EQ(reg_scope(a, VELO_SCOPE_PEER, {4, 0, 30, 0}, &b), -VELO_CORE_EACCES) << "vpid of no job";
    EXPECT_EQ(reg_scope(a, VELO_SCOPE_BOX, {2, 6, 10, 19}, &b), -VELO_CORE_EACCES);
    EXPECT_EQ(reg_scope(a, VELO_SCOPE_BOX, {2, 5, 9, 19}, &b), -VELO_CORE_EACCES);
    EXPECT_EQ(reg_scope(x, VELO_SCOPE_PEER, {0, 0, 12, 0}, &b), -VELO_CORE_EACCES) << "into a job from outside";
    EXPECT_EQ(reg_scope(x, VELO_SCOPE_BOX, {0, 15, 0, 127}, &b), -VELO_CORE_EACCES);
    EXPECT_EQ(reg_scope(a, VELO_SCOPE_PEER, {16, 0, 12, 0}, &b), -VELO_CORE_EINVAL) << "node beyond 4 bits";
    EXPECT_EQ(reg_scope(a, VELO_SCOPE_PEER, {4, 0, 128, 0}, &b), -VELO_CORE_EINVAL) << "a control vpid";
    EXPECT_EQ(reg_scope(a, VELO_SCOPE_PEER, {4, 4, 12, 0}, &b), -VELO_CORE_EINVAL) << "PEER takes no node_hi";
    EXPECT_EQ(reg_scope(a, VELO_SCOPE_BOX, {5, 2, 10, 19}, &b), -VELO_CORE_EINVAL) << "node LO > HI";
    EXPECT_EQ(reg_scope(a, VELO_SCOPE_BOX, {2, 5, 19, 10}, &b), -VELO_CORE_EINVAL) << "vpid LO > HI";
    EXPECT_EQ(reg_scope(a, VELO_SCOPE_BOX, {2, 16, 10, 19}, &b), -VELO_CORE_EINVAL);
    EXPECT_EQ(reg_scope(a, VELO_SCOPE_JOB, {0, 0, 1, 0}, &b), -VELO_CORE_EINVAL) << "JOB takes no field";
    EXPECT_EQ(reg_scope(a, VELO_SCOPE_OWNER, {0, 1, 0, 0}, &b), -VELO_CORE_EINVAL);
    EXPECT_EQ(reg_scope(a, VELO_SCOPE_LIST, {}, &b), -VELO_CORE_EINVAL) << "a list of no boxes";
    EXPECT_EQ(reg_scope(a, 5, {}, &b), -VELO_CORE_EINVAL) << "unknown scope";
    EXPECT_EQ(reg_scope(a, 0xFFFFFFFFu, {}, &b), -VELO_CORE_EINVAL);
    EXPECT_EQ(allocated(), 0u) << "a refused REGISTER kept a region";
    // root may give any box, from inside a job or not
    open_at(root, 11, 0x11);
    ASSERT_EQ(reg_scope(root, VELO_SCOPE_BOX, {0, 15, 0, 127}, &b), 0);
    EXPECT_EQ(b, (Box{0, 15, 0, 127}));
    ASSERT_EQ(reg_scope(root, VELO_SCOPE_PEER, {9, 0, 45, 0}, &b), 0);
    EXPECT_EQ(b, (Box{9, 9, 45, 45}));
    ASSERT_EQ(reg_scope(root, VELO_SCOPE_JOB, {}, &b), 0);
    EXPECT_EQ(b, (Box{2, 5, 10, 19}));
    EXPECT_EQ(reg_scope(root, VELO_SCOPE_BOX, {0, 16, 0, 127}, &b), -VELO_CORE_EINVAL) << "root too: the NIC's bits";
    for (auto* k : {&a, &x, &lo, &hi}) EXPECT_EQ(velo_core_client_close(c, k), 0);
}

namespace {
// REGISTER with scope LIST: *out = the boxes the NIC checks (node_lo, node_hi, vpid_lo, vpid_hi),
// checked against RG_SCOPE..RG_SCOPE3 (the unused ones empty), the output fields and zeros
// beyond nboxes; the region is deregistered again
int reg_list(velo_core* c, fake::Nic& nic, velo_core_client& cl, const std::vector<Box>& in, std::vector<Box>* out,
             velo_uapi_register* raw = nullptr) {
    velo_uapi_register a{};
    if (raw) a = *raw;
    a.argsz = sizeof a;
    a.flags = kAll;
    a.addr = 0x10000;
    a.len = 4096;
    a.scope = VELO_SCOPE_LIST;
    if (!raw) a.nboxes = static_cast<uint32_t>(in.size());
    for (size_t i = 0; i < in.size() && i < VELO_SCOPE_LIST_MAX; ++i)
        a.boxes[i] = velo_uapi_scope_box{static_cast<uint8_t>(in[i][0]), static_cast<uint8_t>(in[i][1]),
                                         static_cast<uint8_t>(in[i][2]), static_cast<uint8_t>(in[i][3])};
    const int r = velo_core_ioctl(c, &cl, VELO_IOC_NR_REGISTER, &a);
    if (r) return r;
    EXPECT_GE(a.nboxes, 1u);
    EXPECT_LE(a.nboxes, 4u);
    EXPECT_EQ(a.scope, static_cast<uint32_t>(a.nboxes == 1 ? VELO_SCOPE_BOX : VELO_SCOPE_LIST));
    EXPECT_EQ((Box{a.node_lo, a.node_hi, a.vpid_lo, a.vpid_hi}),
              (Box{a.boxes[0].node_lo, a.boxes[0].node_hi, a.boxes[0].vpid_lo, a.boxes[0].vpid_hi}));
    const uint32_t off[4] = {VELO_TBL_RMA_REGION_RG_SCOPE, VELO_TBL_RMA_REGION_RG_SCOPE1, VELO_TBL_RMA_REGION_RG_SCOPE2,
                             VELO_TBL_RMA_REGION_RG_SCOPE3};
    out->clear();
    for (unsigned i = 0; i < VELO_SCOPE_LIST_MAX; ++i) {
        const velo_uapi_scope_box& x = a.boxes[i];
        if (i < a.nboxes) {
            out->push_back(Box{x.node_lo, x.node_hi, x.vpid_lo, x.vpid_hi});
            EXPECT_EQ(nic.rg(a.region, off[i]),
                      x.vpid_lo | uint32_t(x.vpid_hi) << 8 | uint32_t(x.node_lo) << 16 | uint32_t(x.node_hi) << 24)
                << "RG_SCOPE box " << i;
        } else {
            EXPECT_EQ(x.node_lo | x.node_hi | x.vpid_lo | x.vpid_hi, 0) << "output box " << i << " beyond nboxes";
            if (i < 4) {
                EXPECT_EQ(nic.rg(a.region, off[i]), kEmptyBox) << "unused box " << i;
            }
        }
    }
    velo_uapi_deregister d{};
    d.argsz = sizeof d;
    d.nla = a.nla;
    EXPECT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_DEREGISTER, &d), 0);
    return 0;
}
}  // namespace

// Scope lists: each box checked as a BOX (EINVAL before EACCES), boxes merged when one holds
// the other or they touch along one axis with the other axis equal, sorted, at most 4 after
// merging (E2BIG), written into RG_SCOPE..RG_SCOPE3 with the rest empty.
TEST_F(Scope, ListsMergedCheckedAndWritten) {
    job(0x11, 10, 29, 2, 9);  // nodes 2..9, vpids 10..29
    auto a = client();
    open_at(a, -1, 0x11);
    std::vector<Box> out;
    // two peers on different, not adjacent nodes: two boxes (sorted)
    ASSERT_EQ(reg_list(c, nic, a, {{7, 7, 20, 20}, {2, 2, 12, 12}}, &out), 0);
    EXPECT_EQ(out, (std::vector<Box>{{2, 2, 12, 12}, {7, 7, 20, 20}}));
    // peers with consecutive vpids on one node: one box
    ASSERT_EQ(reg_list(c, nic, a, {{3, 3, 12, 12}, {3, 3, 10, 10}, {3, 3, 11, 11}, {3, 3, 13, 13}}, &out), 0);
    EXPECT_EQ(out, (std::vector<Box>{{3, 3, 10, 13}}));
    // one vpid on consecutive nodes: one box
    ASSERT_EQ(reg_list(c, nic, a, {{4, 4, 15, 15}, {2, 2, 15, 15}, {3, 3, 15, 15}}, &out), 0);
    EXPECT_EQ(out, (std::vector<Box>{{2, 4, 15, 15}}));
    // a 2 x 2 grid of peers: one box, whatever the order
    ASSERT_EQ(reg_list(c, nic, a, {{2, 2, 10, 10}, {3, 3, 11, 11}, {3, 3, 10, 10}, {2, 2, 11, 11}}, &out), 0);
    EXPECT_EQ(out, (std::vector<Box>{{2, 3, 10, 11}}));
    // contained, overlapping: merged; corner-touching (no common axis range): not merged
    ASSERT_EQ(reg_list(c, nic, a, {{3, 3, 12, 12}, {2, 5, 10, 19}}, &out), 0);
    EXPECT_EQ(out, (std::vector<Box>{{2, 5, 10, 19}}));
    ASSERT_EQ(reg_list(c, nic, a, {{2, 2, 10, 14}, {2, 2, 12, 18}}, &out), 0);
    EXPECT_EQ(out, (std::vector<Box>{{2, 2, 10, 18}}));
    ASSERT_EQ(reg_list(c, nic, a, {{2, 2, 10, 10}, {3, 3, 11, 11}}, &out), 0);
    EXPECT_EQ(out, (std::vector<Box>{{2, 2, 10, 10}, {3, 3, 11, 11}}));
    // 16 peers (the most a list names) that merge into 4 boxes: 4 nodes x (4 consecutive vpids)
    std::vector<Box> many;
    for (unsigned n : {2u, 4u, 6u, 8u})
        for (unsigned v = 20; v < 24; ++v) many.push_back({n, n, v, v});
    ASSERT_EQ(reg_list(c, nic, a, many, &out), 0);
    EXPECT_EQ(out, (std::vector<Box>{{2, 2, 20, 23}, {4, 4, 20, 23}, {6, 6, 20, 23}, {8, 8, 20, 23}}));
    // five boxes that do not merge: E2BIG; six peers that merge into five: E2BIG
    EXPECT_EQ(
        reg_list(c, nic, a, {{2, 2, 10, 10}, {4, 4, 10, 10}, {6, 6, 10, 10}, {8, 8, 10, 10}, {9, 9, 12, 12}}, &out),
        -VELO_CORE_E2BIG);
    EXPECT_EQ(reg_list(c, nic, a,
                       {{2, 2, 10, 10}, {2, 2, 11, 11}, {4, 4, 10, 10}, {6, 6, 10, 10}, {8, 8, 10, 10}, {8, 8, 20, 20}},
                       &out),
              -VELO_CORE_E2BIG);
    // malformed: no boxes, too many, a bad box anywhere (before EACCES of another), fields the
    // kind does not take; outside the job: EACCES
    EXPECT_EQ(reg_list(c, nic, a, {}, &out), -VELO_CORE_EINVAL);
    std::vector<Box> seventeen(17, Box{2, 2, 10, 10});
    EXPECT_EQ(reg_list(c, nic, a, seventeen, &out), -VELO_CORE_EINVAL);
    velo_uapi_register raw{};
    raw.nboxes = 17;
    EXPECT_EQ(reg_list(c, nic, a, {{2, 2, 10, 10}}, &out, &raw), -VELO_CORE_EINVAL) << "nboxes 17";
    EXPECT_EQ(reg_list(c, nic, a, {{2, 2, 10, 10}, {3, 2, 10, 10}}, &out), -VELO_CORE_EINVAL) << "node LO > HI";
    EXPECT_EQ(reg_list(c, nic, a, {{2, 2, 10, 10}, {3, 3, 11, 10}}, &out), -VELO_CORE_EINVAL) << "vpid LO > HI";
    EXPECT_EQ(reg_list(c, nic, a, {{2, 2, 10, 10}, {16, 16, 10, 10}}, &out), -VELO_CORE_EINVAL) << "node bits";
    EXPECT_EQ(reg_list(c, nic, a, {{2, 2, 128, 128}}, &out), -VELO_CORE_EINVAL) << "a control vpid";
    EXPECT_EQ(reg_list(c, nic, a, {{1, 1, 10, 10}, {3, 2, 10, 10}}, &out), -VELO_CORE_EINVAL)
        << "malformed before refused";
    raw = velo_uapi_register{};
    raw.nboxes = 1;
    raw.boxes[1].vpid_lo = 1;
    EXPECT_EQ(reg_list(c, nic, a, {{2, 2, 10, 10}}, &out, &raw), -VELO_CORE_EINVAL) << "a box past nboxes";
    raw = velo_uapi_register{};
    raw.nboxes = 1;
    raw.node_lo = 2;
    EXPECT_EQ(reg_list(c, nic, a, {{2, 2, 10, 10}}, &out, &raw), -VELO_CORE_EINVAL) << "a single field";
    raw = velo_uapi_register{};
    raw.nboxes = 1;
    raw.rsvd = 1;
    EXPECT_EQ(reg_list(c, nic, a, {{2, 2, 10, 10}}, &out, &raw), -VELO_CORE_EINVAL) << "rsvd";
    EXPECT_EQ(reg_list(c, nic, a, {{2, 2, 10, 10}, {1, 1, 10, 10}}, &out), -VELO_CORE_EACCES) << "node 1";
    EXPECT_EQ(reg_list(c, nic, a, {{2, 2, 30, 30}, {2, 2, 10, 10}}, &out), -VELO_CORE_EACCES) << "vpid 30";
    // boxes with the other kinds: EINVAL
    velo_uapi_register o{};
    o.argsz = sizeof o;
    o.flags = kAll;
    o.addr = 0x10000;
    o.len = 4096;
    o.scope = VELO_SCOPE_JOB;
    o.nboxes = 1;
    EXPECT_EQ(velo_core_ioctl(c, &a, VELO_IOC_NR_REGISTER, &o), -VELO_CORE_EINVAL) << "JOB with nboxes";
    o.nboxes = 0;
    o.boxes[3].node_hi = 1;
    EXPECT_EQ(velo_core_ioctl(c, &a, VELO_IOC_NR_REGISTER, &o), -VELO_CORE_EINVAL) << "JOB with a box";
    EXPECT_EQ(allocated(), 0u) << "a refused REGISTER kept a region";
    // root: any boxes of the NIC's bits, still at most 4 after merging
    open_at(root, 40);
    ASSERT_EQ(reg_list(c, nic, root, {{0, 15, 0, 9}, {0, 0, 100, 127}, {15, 15, 60, 60}, {1, 1, 10, 10}}, &out), 0);
    EXPECT_EQ(out, (std::vector<Box>{{0, 0, 100, 127}, {0, 15, 0, 9}, {1, 1, 10, 10}, {15, 15, 60, 60}}));
    EXPECT_EQ(reg_list(c, nic, root, {{0, 0, 0, 0}, {2, 2, 0, 0}, {4, 4, 0, 0}, {6, 6, 0, 0}, {8, 8, 0, 0}}, &out),
              -VELO_CORE_E2BIG);
    EXPECT_EQ(velo_core_client_close(c, &a), 0);
}

// An index that held a list of four boxes, used again with a one-box scope: boxes 1..3 are
// written empty again (the NIC would otherwise keep admitting the old list's peers).
TEST_F(Scope, ReusedIndexForgetsAnOldList) {
    auto a = client();
    open_at(a, 5);
    velo_uapi_register l{};
    l.argsz = sizeof l;
    l.flags = kAll;
    l.addr = 0x10000;
    l.len = 4096;
    l.scope = VELO_SCOPE_LIST;
    l.nboxes = 4;
    for (unsigned i = 0; i < 4; ++i) l.boxes[i] = velo_uapi_scope_box{uint8_t(2 * i), uint8_t(2 * i), 1, 1};
    ASSERT_EQ(velo_core_ioctl(c, &a, VELO_IOC_NR_REGISTER, &l), 0);
    ASSERT_EQ(l.nboxes, 4u);
    EXPECT_NE(nic.rg(l.region, VELO_TBL_RMA_REGION_RG_SCOPE3), kEmptyBox);
    ASSERT_EQ(dereg(a, l.nla), 0);
    for (int i = 0; i < 255; ++i) {
        velo_uapi_register t{};
        ASSERT_EQ(reg(a, 0x10000, 4096, kAll, &t), 0);
        ASSERT_EQ(dereg(a, t.nla), 0);
    }
    velo_uapi_register again{};
    ASSERT_EQ(reg(a, 0x10000, 4096, kAll, &again), 0);
    ASSERT_EQ(again.region, l.region);
    EXPECT_EQ(again.nboxes, 1u);
    for (uint32_t off : {VELO_TBL_RMA_REGION_RG_SCOPE1, VELO_TBL_RMA_REGION_RG_SCOPE2, VELO_TBL_RMA_REGION_RG_SCOPE3})
        EXPECT_EQ(nic.rg(again.region, off), kEmptyBox);
    EXPECT_EQ(velo_core_client_close(c, &a), 0);
}

TEST_F(Scope, PrivilegedEndpointInAJobsRangeWithoutItsKeyGetsThatJob) {
    job(0x11, 10, 19, 2, 5);
    open_at(root, 12);  // root may hold a job's vpid without the job's key
    Box b{};
    ASSERT_EQ(reg_scope(root, VELO_SCOPE_JOB, {}, &b), 0);
    EXPECT_EQ(b, (Box{2, 5, 10, 19})) << "the partition its vpid belongs to";
}

TEST_F(Scope, OpenPolicyLetsEverybodyIn) {
    ASSERT_EQ(velo_core_set_policy(c, VELO_POLICY_OPEN), 0);
    job(0x11, 10, 19, 2, 5);
    auto a = client();
    open_at(a, 12);
    Box b{};
    ASSERT_EQ(reg_scope(a, VELO_SCOPE_JOB, {}, &b), 0);
    EXPECT_EQ(b, (Box{0, 15, 0, 127}));
    ASSERT_EQ(reg_scope(a, VELO_SCOPE_BOX, {0, 15, 40, 127}, &b), 0);
    EXPECT_EQ(b, (Box{0, 15, 40, 127}));
    EXPECT_EQ(reg_scope(a, VELO_SCOPE_BOX, {0, 15, 40, 128}, &b), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_client_close(c, &a), 0);
}

TEST_F(Scope, StrictPolicyNoRmaWithoutAJobOrPrivilege) {
    ASSERT_EQ(velo_core_set_policy(c, VELO_POLICY_STRICT), 0);
    job(0x11, 10, 19, 2, 5);
    auto a = client(), nobody = client();
    open_at(nobody, -1, 0, -VELO_CORE_EACCES);  // as for sends: no endpoint at all
    open_at(a, -1, 0x11);
    ASSERT_EQ(setup(a), 0);
    Box b{};
    ASSERT_EQ(reg_scope(a, VELO_SCOPE_JOB, {}, &b), 0);
    EXPECT_EQ(b, (Box{2, 5, 10, 19}));
    const unsigned w = VELO_CORE_MAP_WRITE | VELO_CORE_MAP_SHARED;
    velo_core_map m;
    EXPECT_EQ(velo_core_mmap_check(c, &a, VELO_MMAP_RMA_CMD, 4096, w, &m), 0);
    // root without a job: its run, every node; then it drops its privilege (a descriptor passed
    // on, or setuid): no command page and no REGISTER, whatever the scope
    open_at(root, 30);
    ASSERT_EQ(setup(root), 0);
    EXPECT_EQ(velo_core_mmap_check(c, &root, VELO_MMAP_RMA_CMD, 4096, w, &m), 0);
    ASSERT_EQ(reg_scope(root, VELO_SCOPE_JOB, {}, &b), 0);
    EXPECT_EQ(b, (Box{0, 15, 20, 127}));
    velo_core_client_caller(&root, 77, 1000, 0);
    EXPECT_EQ(velo_core_mmap_check(c, &root, VELO_MMAP_RMA_CMD, 4096, w, &m), -VELO_CORE_EACCES);
    EXPECT_EQ(reg_scope(root, VELO_SCOPE_OWNER, {}, &b), -VELO_CORE_EACCES);
    EXPECT_EQ(reg_scope(root, VELO_SCOPE_JOB, {}, &b), -VELO_CORE_EACCES);
    EXPECT_EQ(reg_scope(root, VELO_SCOPE_PEER, {16, 0, 0, 0}, &b), -VELO_CORE_EINVAL) << "malformed first";
    EXPECT_EQ(allocated(), 0u);
    // the endpoint lost its privilege for good; a privileged caller has its own
    velo_core_client_caller(&root, 1, 0, 1);
    EXPECT_EQ(velo_core_mmap_check(c, &root, VELO_MMAP_RMA_CMD, 4096, w, &m), 0);
    EXPECT_EQ(velo_core_ep_find(c, 30)->privileged, 0u);
    EXPECT_EQ(velo_core_client_close(c, &a), 0);
}

TEST_F(Scope, KeyAndScopeWrittenWhileTheIndexIsFreeAndQuiescedBeforeRgCfg) {
    nic.rma_busy_reads = 3;
    auto a = client();
    open_at(a, 5);
    velo_uapi_register first{}, second{};
    ASSERT_EQ(reg(a, 0x10000, 4096, kAll, &first), 0);
    ASSERT_EQ(map(first, 1), 0);
    nic.wlog_on = true;
    ASSERT_EQ(dereg(a, first.nla), 0);
    // the index comes back after a full round (256 indices)
    for (int i = 0; i < 255; ++i) {
        velo_uapi_register t{};
        ASSERT_EQ(reg(a, 0x10000, 4096, kAll, &t), 0);
        ASSERT_EQ(dereg(a, t.nla), 0);
    }
    const size_t before = nic.wlog.size();
    ASSERT_EQ(reg(a, 0x20000, 4096, kAll, &second), 0);
    ASSERT_EQ(second.region, first.region);
    ASSERT_NE(second.key, first.key);
    const uint32_t base = VELO_TBL_RMA_REGION_BASE + first.region * VELO_TBL_RMA_REGION_STRIDE;
    auto at = [&](uint32_t off, size_t from, size_t to) {
        for (size_t i = from; i < to; ++i)
            if (nic.wlog[i].first == off) return i;
        return SIZE_MAX;
    };
    // the release: RG_CFG = 0, then the quiesce of the region
    const size_t cfg0 = at(base + VELO_TBL_RMA_REGION_RG_CFG, 0, before);
    ASSERT_NE(cfg0, SIZE_MAX);
    EXPECT_EQ(nic.wlog[cfg0].second, 0u);
    const size_t q = at(VELO_REG_RMA_QUIESCE_REGION, cfg0, before);
    ASSERT_NE(q, SIZE_MAX);
    EXPECT_EQ(nic.wlog[q].second, first.region);
    // the reuse: RG_KEY and all four scope boxes, then RG_CFG (allocated) last
    const size_t key = at(base + VELO_TBL_RMA_REGION_RG_KEY, before, nic.wlog.size());
    const size_t cfg = at(base + VELO_TBL_RMA_REGION_RG_CFG, before, nic.wlog.size());
    ASSERT_NE(key, SIZE_MAX);
    ASSERT_NE(cfg, SIZE_MAX);
    for (uint32_t off : {VELO_TBL_RMA_REGION_RG_SCOPE, VELO_TBL_RMA_REGION_RG_SCOPE1, VELO_TBL_RMA_REGION_RG_SCOPE2,
                         VELO_TBL_RMA_REGION_RG_SCOPE3}) {
        const size_t scope = at(base + off, before, nic.wlog.size());
        ASSERT_NE(scope, SIZE_MAX) << "scope box at " << off;
        EXPECT_LT(scope, cfg);
    }
    EXPECT_EQ(nic.wlog[key].second, second.key);
    EXPECT_LT(key, cfg);
    EXPECT_EQ(cfg, nic.wlog.size() - 1) << "RG_CFG is the last write";
    EXPECT_EQ(at(base + VELO_TBL_RMA_REGION_RG_KEY, 0, before), SIZE_MAX) << "no key write between";
    // map, invalidate, re-map and compaction never touch RG_KEY or RG_SCOPE
    const size_t mark = nic.wlog.size();
    ASSERT_EQ(map(second, 2), 0);
    ASSERT_EQ(velo_core_rma_invalidate(c, second.region, second.key), 0);
    ASSERT_EQ(map(second, 3), 0);
    EXPECT_EQ(at(base + VELO_TBL_RMA_REGION_RG_KEY, mark, nic.wlog.size()), SIZE_MAX);
    for (uint32_t off : {VELO_TBL_RMA_REGION_RG_SCOPE, VELO_TBL_RMA_REGION_RG_SCOPE1, VELO_TBL_RMA_REGION_RG_SCOPE2,
                         VELO_TBL_RMA_REGION_RG_SCOPE3})
        EXPECT_EQ(at(base + off, mark, nic.wlog.size()), SIZE_MAX);
    EXPECT_EQ(velo_core_client_close(c, &a), 0);
}
