// Directed tests of the driver core's ioctl level (velo_core_ioctl), the access policy (jobs,
// policies, privileged endpoints), mmap checks, the ring readiness the sleepers use, reclaim
// and the network-control registers. Every test ends with no DMA memory and no core memory left.
#include <gtest/gtest.h>

#include <cstring>

#include "fake_nic.hpp"
#include "velo/velo_uapi.h"

namespace {

constexpr uint32_t kUid = 1000, kOther = 1001;
constexpr uint64_t kKeyA = 0xA11CE5EC2E7ull, kKeyB = 0xB0B5EC2E7ull;

class Policy : public ::testing::Test {
  protected:
    fake::Nic nic;
    velo_core* c = nullptr;
    uint64_t next_owner = 1;
    void SetUp() override {
        ASSERT_EQ(velo_core_probe(fake::ops(), &nic, &c), 0);
        ASSERT_EQ(velo_core_enable(c, 3), 0);
    }
    void TearDown() override {
        if (c) velo_core_remove(c);
        EXPECT_TRUE(nic.live.empty()) << "DMA memory leaked";
        EXPECT_EQ(nic.zallocs, nic.zfrees) << "core memory leaked";
    }
    velo_core_client client(uint32_t uid, bool root = false) {
        velo_core_client cl;
        velo_core_client_init(&cl, next_owner++, 4242, uid, root ? 1 : 0);
        return cl;
    }
    int open(velo_core_client& cl, int vpid = -1, uint64_t key = 0, velo_uapi_ep_open* out = nullptr) {
        velo_uapi_ep_open o{};
        o.argsz = sizeof o;
        o.vpid = vpid;
        o.log2_lines = 6;
        o.ctl_log2_lines = 6;
        o.job_key = key;
        int r = velo_core_ioctl(c, &cl, VELO_IOC_NR_EP_OPEN, &o);
        if (out) *out = o;
        return r;
    }
    int grant(velo_core_client& cl, unsigned from, unsigned node, unsigned vpid, velo_uapi_grant* out = nullptr) {
        velo_uapi_grant g{};
        g.argsz = sizeof g;
        g.from = from;
        g.dst_node = node;
        g.dst_vpid = vpid;
        int r = velo_core_ioctl(c, &cl, VELO_IOC_NR_GRANT, &g);
        if (out) *out = g;
        return r;
    }
    int job(velo_core_client& cl, uint64_t key, unsigned lo, unsigned hi, unsigned nlo = 0, unsigned nhi = 255,
            int uid = -1) {
        velo_uapi_job j{};
        j.argsz = sizeof j;
        j.job_key = key;
        j.vpid_lo = lo;
        j.vpid_hi = hi;
        j.node_lo = nlo;
        j.node_hi = nhi;
        if (uid >= 0) {
            j.flags = VELO_JOB_F_UID;
            j.uid = static_cast<uint32_t>(uid);
        }
        return velo_core_ioctl(c, &cl, VELO_IOC_NR_JOB_SET, &j);
    }
    int job_del(velo_core_client& cl, uint64_t key) {
        velo_uapi_job_del d{};
        d.argsz = sizeof d;
        d.job_key = key;
        return velo_core_ioctl(c, &cl, VELO_IOC_NR_JOB_DEL, &d);
    }
    void close(velo_core_client& cl) { EXPECT_EQ(velo_core_client_close(c, &cl), 0); }
};

}  // namespace

TEST_F(Policy, UapiSizesAndArgsz) {
    uint32_t minsz = 0, ksz = 0;
    ASSERT_EQ(velo_core_uapi_size(VELO_IOC_NR_GRANT, &minsz, &ksz), 0);
    EXPECT_EQ(minsz, sizeof(velo_uapi_grant));
    EXPECT_EQ(ksz, sizeof(velo_uapi_grant));
    EXPECT_EQ(velo_core_uapi_size(VELO_IOC_NR_COUNT, &minsz, &ksz), -VELO_CORE_ENOTTY);
    // every structure keeps 64-bit fields 8-byte aligned and is a multiple of 8 (same layout for
    // 32- and 64-bit callers)
    for (unsigned nr = 0; nr < VELO_IOC_NR_COUNT; ++nr) {
        ASSERT_EQ(velo_core_uapi_size(nr, &minsz, &ksz), 0) << nr;
        EXPECT_EQ(ksz % 8, 0u) << nr;
    }
    EXPECT_EQ(offsetof(velo_uapi_ep_open, job_key) % 8, 0u);
    EXPECT_EQ(offsetof(velo_uapi_grant, window_off) % 8, 0u);
    EXPECT_EQ(offsetof(velo_uapi_wait, timeout_ns) % 8, 0u);
    velo_core_client cl = client(kUid);
    velo_uapi_info info{};
    info.argsz = sizeof info - 4;  // too small: refused before anything is read
    EXPECT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_INFO, &info), -VELO_CORE_EINVAL);
    info.argsz = sizeof info;
    info.flags = 1;
    EXPECT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_INFO, &info), -VELO_CORE_EINVAL);
    info.flags = 0;
    ASSERT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_INFO, &info), 0);
    EXPECT_EQ(info.uapi_version, static_cast<uint32_t>(VELO_UAPI_VERSION));
    EXPECT_EQ(info.spec_hash, static_cast<uint32_t>(VELO_SPEC_HASH));
    EXPECT_EQ(info.node_id, 3u);
    EXPECT_EQ(info.num_vpids, 256u);
    EXPECT_EQ(info.policy, static_cast<uint32_t>(VELO_POLICY_JOB));
    EXPECT_EQ(info.nports, 2u);
    EXPECT_EQ(info.link_status, 1u);
    EXPECT_EQ(info.link_up, 1u);
    EXPECT_EQ(velo_core_ioctl(c, &cl, 77, &info), -VELO_CORE_ENOTTY);
}

TEST_F(Policy, OneEndpointPerClientAndNothingBeforeIt) {
    velo_core_client cl = client(kUid);
    velo_uapi_grant g{};
    EXPECT_EQ(grant(cl, 0, 1, 1), -VELO_CORE_EBADFD);
    velo_uapi_ep_open o{};
    ASSERT_EQ(open(cl, -1, 0, &o), 0);
    EXPECT_EQ(o.out_ctl_vpid, o.out_vpid | 128u);
    EXPECT_EQ(o.ring_bytes, 4096u);
    EXPECT_EQ(o.max_grants, 1024u);
    EXPECT_EQ(o.user_page_off, static_cast<uint32_t>(VELO_TBL_VPID_USER_MB_RP));
    EXPECT_EQ(open(cl), -VELO_CORE_EBUSY);
    ASSERT_EQ(grant(cl, 0, 1, 1, &g), 0);
    EXPECT_EQ(g.window_off, velo_core_window_off(c, o.out_vpid, 1, 1));
    close(cl);
}

TEST_F(Policy, EpOpenArgumentChecks) {
    velo_core_client cl = client(kUid);
    velo_uapi_ep_open o{};
    o.argsz = sizeof o;
    o.rsvd0 = 1;
    EXPECT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_EP_OPEN, &o), -VELO_CORE_EINVAL);
    o.rsvd0 = 0;
    o.vpid = -2;
    EXPECT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_EP_OPEN, &o), -VELO_CORE_EINVAL);
    o.vpid = 128;  // the control half
    EXPECT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_EP_OPEN, &o), -VELO_CORE_EINVAL);
    o.vpid = -1;
    o.log2_lines = 5;
    EXPECT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_EP_OPEN, &o), -VELO_CORE_EINVAL);
    ASSERT_EQ(velo_core_set_limits(c, 8, 4), 0);
    o.log2_lines = 9;  // over the limit
    EXPECT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_EP_OPEN, &o), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_set_limits(c, 17, 4), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_set_limits(c, 8, 0), -VELO_CORE_EINVAL);
    o.log2_lines = 0;  // defaults: 11 is over the limit of 8
    EXPECT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_EP_OPEN, &o), -VELO_CORE_EINVAL);
    o.log2_lines = 8;
    o.ctl_log2_lines = 7;
    ASSERT_EQ(velo_core_ioctl(c, &cl, VELO_IOC_NR_EP_OPEN, &o), 0);
    EXPECT_EQ(o.out_log2_lines, 8u);
    EXPECT_EQ(o.out_ctl_log2_lines, 7u);
    EXPECT_EQ(o.ring_bytes, 64u << 8);
    EXPECT_EQ(o.ctl_ring_bytes, 64u << 7);
    EXPECT_EQ(o.max_grants, 4u);
    EXPECT_EQ(nic.live.size(), 2u);
    close(cl);
}

TEST_F(Policy, JobsPartitionTheVpids) {
    velo_core_client root = client(0, true), a1 = client(kUid), a2 = client(kUid), b = client(kOther),
                     none = client(kOther);
    EXPECT_EQ(job(a1, kKeyA, 10, 19), -VELO_CORE_EPERM) << "only root registers jobs";
    ASSERT_EQ(job(root, kKeyA, 10, 19, 0, 7), 0);
    ASSERT_EQ(job(root, kKeyB, 20, 29), 0);
    EXPECT_EQ(job(root, 0x77, 15, 25), -VELO_CORE_EEXIST) << "ranges never overlap";
    EXPECT_EQ(job(root, 0, 40, 41), -VELO_CORE_EINVAL);
    EXPECT_EQ(job(root, 0x77, 41, 40), -VELO_CORE_EINVAL);
    EXPECT_EQ(job(root, 0x77, 40, 128), -VELO_CORE_EINVAL) << "control vpids are not for jobs";
    EXPECT_EQ(job(root, 0x77, 40, 41, 9, 8), -VELO_CORE_EINVAL);

    velo_uapi_ep_open o{};
    ASSERT_EQ(open(a1, -1, kKeyA, &o), 0);
    EXPECT_GE(o.out_vpid, 10u);
    EXPECT_LE(o.out_vpid, 19u);
    const unsigned va = o.out_vpid;
    EXPECT_EQ(open(a2, 25, kKeyA), -VELO_CORE_EACCES) << "a vpid of another job";
    EXPECT_EQ(open(a2, 0, kKeyA), -VELO_CORE_EACCES) << "a vpid of no job";
    ASSERT_EQ(open(a2, 11 == va ? 12 : 11, kKeyA, &o), 0);
    ASSERT_EQ(open(b, -1, kKeyB, &o), 0);
    EXPECT_GE(o.out_vpid, 20u);
    EXPECT_LE(o.out_vpid, 29u);
    EXPECT_EQ(open(none, 15), -VELO_CORE_EACCES) << "job vpids are not for endpoints without the key";
    ASSERT_EQ(open(none, -1, 0, &o), 0);
    EXPECT_TRUE(o.out_vpid < 10 || o.out_vpid > 29) << o.out_vpid;

    // grants: the job's vpids on the job's nodes, data and control
    EXPECT_EQ(grant(a1, 0, 5, 12), 0);
    EXPECT_EQ(grant(a1, 1, 5, 12 | 128), 0);
    EXPECT_EQ(grant(a1, 0, 8, 12), -VELO_CORE_EACCES) << "node outside the job";
    EXPECT_EQ(grant(a1, 0, 5, 22), -VELO_CORE_EACCES) << "another job";
    EXPECT_EQ(grant(a1, 1, 5, 22 | 128), -VELO_CORE_EACCES) << "another job's control vpid";
    EXPECT_EQ(grant(a1, 0, 5, 3), -VELO_CORE_EACCES) << "no job's vpid";
    EXPECT_EQ(grant(none, 0, 5, 3), 0);
    EXPECT_EQ(grant(none, 0, 5, 12), -VELO_CORE_EACCES) << "into a job from outside";
    EXPECT_EQ(grant(b, 0, 200, 29), 0);

    // a job in use cannot change or go; an endpoint inside a new range blocks it
    EXPECT_EQ(job(root, kKeyA, 10, 21), -VELO_CORE_EEXIST);
    EXPECT_EQ(job(root, kKeyA, 10, 18), -VELO_CORE_EBUSY);
    EXPECT_EQ(job_del(root, kKeyA), -VELO_CORE_EBUSY);
    const unsigned vnone = velo_core_client_ep(c, &none, nullptr)->vpid;
    EXPECT_EQ(job(root, 0x55, vnone, vnone), -VELO_CORE_EBUSY);
    EXPECT_EQ(job_del(root, 0x99), -VELO_CORE_ENOENT);
    close(a1);
    close(a2);
    EXPECT_EQ(job_del(root, kKeyA), 0);
    velo_core_client a3 = client(kUid);
    EXPECT_EQ(open(a3, -1, kKeyA), -VELO_CORE_EACCES) << "the job is gone";
    close(b);
    close(none);
}

TEST_F(Policy, JobBoundToAUser) {
    velo_core_client root = client(0, true), mine = client(kUid), other = client(kOther);
    ASSERT_EQ(job(root, kKeyA, 10, 19, 0, 255, kUid), 0);
    EXPECT_EQ(open(other, -1, kKeyA), -VELO_CORE_EACCES) << "knowing the key is not enough";
    EXPECT_EQ(open(mine, -1, kKeyA), 0);
    velo_uapi_job j{};
    j.argsz = sizeof j;
    j.job_key = 0x5;
    j.vpid_lo = j.vpid_hi = 50;
    j.node_hi = 1;
    j.uid = 7;  // a uid without VELO_JOB_F_UID
    EXPECT_EQ(velo_core_ioctl(c, &root, VELO_IOC_NR_JOB_SET, &j), -VELO_CORE_EINVAL);
    j.flags = VELO_JOB_F_UID;
    j.uid = VELO_CORE_UID_ANY;
    EXPECT_EQ(velo_core_ioctl(c, &root, VELO_IOC_NR_JOB_SET, &j), -VELO_CORE_EINVAL);
    j.flags = 2;
    j.uid = 0;
    EXPECT_EQ(velo_core_ioctl(c, &root, VELO_IOC_NR_JOB_SET, &j), -VELO_CORE_EINVAL);
    close(mine);
}

TEST_F(Policy, RootTakesAnyVpidAndGrantsAnything) {
    velo_core_client root = client(0, true), root2 = client(0, true);
    ASSERT_EQ(job(root, kKeyA, 10, 19), 0);
    ASSERT_EQ(open(root, 15), 0) << "a vpid inside a job";
    EXPECT_EQ(grant(root, 0, 9, 3), 0);
    EXPECT_EQ(grant(root, 0, 9, 17), 0);
    // without an explicit vpid root is allocated from its own partition, like anyone
    velo_uapi_ep_open o{};
    ASSERT_EQ(open(root2, -1, 0, &o), 0);
    EXPECT_TRUE(o.out_vpid < 10 || o.out_vpid > 19);
    close(root);
    close(root2);
}

TEST_F(Policy, StrictAndOpen) {
    velo_core_client root = client(0, true), u = client(kUid), v = client(kUid);
    ASSERT_EQ(job(root, kKeyA, 10, 19), 0);
    ASSERT_EQ(velo_core_set_policy(c, VELO_POLICY_STRICT), 0);
    EXPECT_EQ(open(u), -VELO_CORE_EACCES) << "strict: no job, no endpoint";
    ASSERT_EQ(open(u, -1, kKeyA), 0);
    EXPECT_EQ(velo_core_set_policy(c, VELO_POLICY_OPEN), -VELO_CORE_EBUSY) << "not under open endpoints";
    close(u);
    ASSERT_EQ(velo_core_set_policy(c, VELO_POLICY_OPEN), 0);
    EXPECT_EQ(velo_core_set_policy(c, 3), -VELO_CORE_EINVAL);
    ASSERT_EQ(open(v, 12), 0) << "open: jobs do not bind";
    EXPECT_EQ(grant(v, 0, 1, 25), 0);
    EXPECT_EQ(grant(v, 0, 1, 128), -VELO_CORE_EINVAL) << "data pages never reach control vpids";
    close(v);
}

TEST_F(Policy, ReclaimLeavesTheClientDead) {
    velo_core_client u = client(kUid), w = client(kUid);
    velo_uapi_ep_open o{};
    ASSERT_EQ(open(u, 7, 0, &o), 0);
    velo_uapi_grant g{};
    ASSERT_EQ(grant(u, 0, 1, 2, &g), 0);
    uint64_t owner = 0;
    EXPECT_EQ(velo_core_reclaim(c, 7 | 128, &owner), 0) << "by the control vpid as well";
    EXPECT_EQ(owner, u.owner);
    EXPECT_EQ(nic.mb_cfg(7), 0u);
    EXPECT_EQ(nic.mb_cfg(7 | 128), 0u);
    EXPECT_TRUE(nic.live.empty());
    EXPECT_EQ(grant(u, 0, 1, 2), -VELO_CORE_ENODEV);
    velo_core_map m;
    EXPECT_EQ(velo_core_mmap_check(c, &u, VELO_MMAP_USER_PAGE, 4096, VELO_CORE_MAP_WRITE | VELO_CORE_MAP_SHARED, &m),
              -VELO_CORE_ENODEV);
    EXPECT_EQ(open(u), -VELO_CORE_EBUSY) << "a file keeps its one endpoint, dead or alive";
    EXPECT_EQ(velo_core_reclaim(c, 7, nullptr), -VELO_CORE_ENOENT);
    EXPECT_EQ(velo_core_reclaim(c, 256, nullptr), -VELO_CORE_ENOENT);
    // the vpid is free for someone else, who is not mistaken for the dead client
    ASSERT_EQ(open(w, 7), 0);
    EXPECT_EQ(grant(u, 0, 1, 2), -VELO_CORE_ENODEV);
    EXPECT_EQ(velo_core_client_close(c, &u), 0) << "closing the dead client closes nothing";
    EXPECT_NE(velo_core_ep_find(c, 7), nullptr);
    close(w);
}

TEST_F(Policy, MmapChecks) {
    velo_core_client u = client(kUid), v = client(kUid);
    velo_core_map m;
    const unsigned rw = VELO_CORE_MAP_READ | VELO_CORE_MAP_WRITE | VELO_CORE_MAP_SHARED;
    const unsigned ro = VELO_CORE_MAP_READ | VELO_CORE_MAP_SHARED, wo = VELO_CORE_MAP_WRITE | VELO_CORE_MAP_SHARED;
    EXPECT_EQ(velo_core_mmap_check(c, &u, VELO_MMAP_RING, 4096, ro, &m), -VELO_CORE_EBADFD);
    velo_uapi_ep_open o{};
    o.argsz = sizeof o;
    o.log2_lines = 8;
    o.ctl_log2_lines = 6;
    o.vpid = 4;
    ASSERT_EQ(velo_core_ioctl(c, &u, VELO_IOC_NR_EP_OPEN, &o), 0);
    ASSERT_EQ(open(v, 5), 0);
    const velo_core_ep* e = velo_core_client_ep(c, &u, nullptr);
    ASSERT_NE(e, nullptr);

    ASSERT_EQ(velo_core_mmap_check(c, &u, VELO_MMAP_RING, 64u << 8, ro, &m), 0);
    EXPECT_EQ(m.kind, static_cast<unsigned>(VELO_CORE_MAP_RING));
    EXPECT_EQ(m.cpu, e->ring);
    EXPECT_EQ(m.dma, e->ring_dma);
    EXPECT_EQ(m.bytes, 64u << 8);
    EXPECT_EQ(velo_core_mmap_check(c, &u, VELO_MMAP_RING, 4096, ro, &m), -VELO_CORE_EINVAL) << "part of a ring";
    EXPECT_EQ(velo_core_mmap_check(c, &u, VELO_MMAP_RING, 64u << 8, rw, &m), -VELO_CORE_EACCES) << "rings are RO";
    EXPECT_EQ(velo_core_mmap_check(c, &u, VELO_MMAP_RING, 64u << 8, VELO_CORE_MAP_READ, &m), -VELO_CORE_EINVAL)
        << "MAP_PRIVATE";
    EXPECT_EQ(velo_core_mmap_check(c, &u, VELO_MMAP_RING, 64u << 8, ro | VELO_CORE_MAP_EXEC, &m), -VELO_CORE_EACCES);
    ASSERT_EQ(velo_core_mmap_check(c, &u, VELO_MMAP_CTL_RING, 4096, ro, &m), 0);
    EXPECT_EQ(m.cpu, e->ctl_ring);

    ASSERT_EQ(velo_core_mmap_check(c, &u, VELO_MMAP_USER_PAGE, 4096, rw, &m), 0);
    EXPECT_EQ(m.bar, static_cast<unsigned>(VELO_BAR_REGS));
    EXPECT_EQ(m.bar_off, nic.user(4));
    ASSERT_EQ(velo_core_mmap_check(c, &u, VELO_MMAP_CTL_USER_PAGE, 4096, wo, &m), 0);
    EXPECT_EQ(m.bar_off, nic.user(4 | 128)) << "its own control vpid's page, never another's";
    EXPECT_EQ(velo_core_mmap_check(c, &u, VELO_MMAP_USER_PAGE, 8192, rw, &m), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_mmap_check(c, &u, VELO_MMAP_USER_PAGE + 8192, 4096, rw, &m), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_mmap_check(c, &u, VELO_MMAP_USER_PAGE + 100, 4096, rw, &m), -VELO_CORE_EINVAL);

    EXPECT_EQ(velo_core_mmap_check(c, &u, VELO_MMAP_WINDOW, 4096, wo, &m), -VELO_CORE_EINVAL) << "nothing granted";
    velo_uapi_grant g{};
    ASSERT_EQ(grant(u, 1, 9, 5 | 128, &g), 0);
    const uint64_t woff = VELO_MMAP_WINDOW + 4096ull * g.grant_id;
    ASSERT_EQ(velo_core_mmap_check(c, &u, woff, 4096, wo, &m), 0);
    EXPECT_EQ(m.kind, static_cast<unsigned>(VELO_CORE_MAP_WINDOW));
    EXPECT_EQ(m.bar, static_cast<unsigned>(VELO_BAR_SEND));
    EXPECT_EQ(m.bar_off, (5ull | 128) << 12 | 9ull << 20 | (4ull | 128) << 28) << "control page: control source";
    EXPECT_EQ(velo_core_mmap_check(c, &u, woff, 4096, rw, &m), -VELO_CORE_EACCES) << "window reads are UR";
    EXPECT_EQ(velo_core_mmap_check(c, &v, woff, 4096, wo, &m), -VELO_CORE_EINVAL) << "another endpoint's grant id";
    EXPECT_EQ(velo_core_mmap_check(c, &u, VELO_MMAP_WINDOW + 4096ull * 1024, 4096, wo, &m), -VELO_CORE_EINVAL);
    velo_uapi_revoke rv{};
    rv.argsz = sizeof rv;
    rv.grant_id = g.grant_id;
    ASSERT_EQ(velo_core_ioctl(c, &u, VELO_IOC_NR_REVOKE, &rv), 0);
    EXPECT_EQ(velo_core_mmap_check(c, &u, woff, 4096, wo, &m), -VELO_CORE_EINVAL) << "revoked";
    EXPECT_EQ(velo_core_ioctl(c, &u, VELO_IOC_NR_REVOKE, &rv), -VELO_CORE_ENOENT);
    rv.rsvd = 1;
    EXPECT_EQ(velo_core_ioctl(c, &u, VELO_IOC_NR_REVOKE, &rv), -VELO_CORE_EINVAL);
    EXPECT_EQ(velo_core_mmap_check(c, &u, 0x5000000000ull, 4096, wo, &m), -VELO_CORE_EINVAL);
    close(u);
    close(v);
}

TEST_F(Policy, WaitSeesThePhaseOfThePass) {
    velo_core_client u = client(kUid);
    velo_uapi_wait w{};
    w.argsz = sizeof w;
    w.flags = VELO_WAIT_DATA;
    EXPECT_EQ(velo_core_ioctl(c, &u, VELO_IOC_NR_WAIT, &w), -VELO_CORE_EBADFD);
    velo_uapi_ep_open o{};
    o.argsz = sizeof o;
    o.vpid = -1;
    o.log2_lines = 6;  // 64 lines
    o.ctl_log2_lines = 6;
    ASSERT_EQ(velo_core_ioctl(c, &u, VELO_IOC_NR_EP_OPEN, &o), 0);
    const velo_core_ep* e = velo_core_client_ep(c, &u, nullptr);
    auto wait = [&](unsigned flags, uint32_t rp, uint32_t ctl_rp) {
        w.flags = flags;
        w.rp = rp;
        w.ctl_rp = ctl_rp;
        w.out_ready = 0xdead;
        int r = velo_core_ioctl(c, &u, VELO_IOC_NR_WAIT, &w);
        return r < 0 ? r : static_cast<int>(w.out_ready);
    };
    EXPECT_EQ(wait(VELO_WAIT_DATA | VELO_WAIT_CTL, 0, 0), 0) << "a zeroed ring is empty";
    fake::put_entry(e->ring, 3, 1);  // first pass writes phase 1
    EXPECT_EQ(wait(VELO_WAIT_DATA, 3, 0), VELO_WAIT_DATA);
    EXPECT_EQ(wait(VELO_WAIT_CTL, 3, 3), 0) << "the other ring";
    EXPECT_EQ(wait(VELO_WAIT_DATA, 3 + 64, 0), 0) << "second pass: phase 1 is last pass's entry";
    fake::put_entry(e->ring, 3, 0);
    EXPECT_EQ(wait(VELO_WAIT_DATA, 3 + 64, 0), VELO_WAIT_DATA);
    EXPECT_EQ(wait(VELO_WAIT_DATA, 3 + 128, 0), 0);
    fake::put_entry(e->ctl_ring, 63, 1);
    EXPECT_EQ(wait(VELO_WAIT_DATA | VELO_WAIT_CTL, 3 + 64, 63), VELO_WAIT_DATA | VELO_WAIT_CTL);
    EXPECT_EQ(wait(0, 0, 0), -VELO_CORE_EINVAL);
    EXPECT_EQ(wait(4, 0, 0), -VELO_CORE_EINVAL);
    w.rsvd = 1;
    EXPECT_EQ(wait(VELO_WAIT_DATA, 0, 0), -VELO_CORE_EINVAL);
    // poll(): at the read pointers the NIC holds
    nic.write(nic.user(e->vpid) + VELO_TBL_VPID_USER_MB_RP, 3 + 64);
    nic.write(nic.user(e->ctl_vpid) + VELO_TBL_VPID_USER_MB_RP, 0);
    EXPECT_EQ(velo_core_ring_ready_nic(c, &u), VELO_WAIT_DATA);
    nic.write(nic.user(e->ctl_vpid) + VELO_TBL_VPID_USER_MB_RP, 63);
    EXPECT_EQ(velo_core_ring_ready_nic(c, &u), VELO_WAIT_DATA | VELO_WAIT_CTL);
    nic.write(nic.user(e->vpid) + VELO_TBL_VPID_USER_MB_RP, 4);
    EXPECT_EQ(velo_core_ring_ready_nic(c, &u), VELO_WAIT_CTL);
    close(u);
}

TEST_F(Policy, NetworkControlAndStatus) {
    velo_core_client root = client(0, true), u = client(kUid);
    velo_uapi_route rt{};
    rt.argsz = sizeof rt;
    rt.flags = VELO_ROUTE_F_VALID;
    rt.dst_node = 9;
    rt.route = 0x1234;
    EXPECT_EQ(velo_core_ioctl(c, &u, VELO_IOC_NR_ROUTE_SET, &rt), -VELO_CORE_EPERM);
    ASSERT_EQ(velo_core_ioctl(c, &root, VELO_IOC_NR_ROUTE_SET, &rt), 0);
    EXPECT_EQ(nic.reg(VELO_TBL_ROUTE_TABLE_BASE + 9 * VELO_TBL_ROUTE_TABLE_STRIDE),
              VELO_FIELD_PREP(VELO_TBL_ROUTE_TABLE_ROUTE_VALID, 1) | 0x1234u);
    rt.flags = 0;
    EXPECT_EQ(velo_core_ioctl(c, &root, VELO_IOC_NR_ROUTE_SET, &rt), -VELO_CORE_EINVAL) << "a route, not valid";
    rt.route = 0;
    ASSERT_EQ(velo_core_ioctl(c, &root, VELO_IOC_NR_ROUTE_SET, &rt), 0);
    EXPECT_EQ(nic.reg(VELO_TBL_ROUTE_TABLE_BASE + 9 * VELO_TBL_ROUTE_TABLE_STRIDE), 0u);
    rt.flags = VELO_ROUTE_F_VALID;
    rt.route = 1u << 14;
    EXPECT_EQ(velo_core_ioctl(c, &root, VELO_IOC_NR_ROUTE_SET, &rt), -VELO_CORE_EINVAL);
    rt.route = 1;
    rt.dst_node = 256;
    EXPECT_EQ(velo_core_ioctl(c, &root, VELO_IOC_NR_ROUTE_SET, &rt), -VELO_CORE_EINVAL);

    velo_uapi_port pt{};
    pt.argsz = sizeof pt;
    pt.port = 2;
    pt.cfg = static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_NET_PORT_CFG_DIM, 1) |
                                   VELO_FIELD_PREP(VELO_TBL_NET_PORT_CFG_DATELINE, 1));
    ASSERT_EQ(velo_core_ioctl(c, &root, VELO_IOC_NR_PORT_SET, &pt), 0);
    EXPECT_EQ(nic.reg(VELO_TBL_NET_PORT_BASE + VELO_TBL_NET_PORT_STRIDE + VELO_TBL_NET_PORT_CFG), pt.cfg);
    pt.port = 3;
    EXPECT_EQ(velo_core_ioctl(c, &root, VELO_IOC_NR_PORT_SET, &pt), -VELO_CORE_EINVAL);
    pt.port = 0;
    EXPECT_EQ(velo_core_ioctl(c, &root, VELO_IOC_NR_PORT_SET, &pt), -VELO_CORE_EINVAL);
    pt.port = 1;
    pt.cfg = 0x100;
    EXPECT_EQ(velo_core_ioctl(c, &root, VELO_IOC_NR_PORT_SET, &pt), -VELO_CORE_EINVAL);

    velo_uapi_node nd{};
    nd.argsz = sizeof nd;
    nd.node_id = 77;
    EXPECT_EQ(velo_core_ioctl(c, &u, VELO_IOC_NR_NODE_SET, &nd), -VELO_CORE_EPERM);
    ASSERT_EQ(velo_core_ioctl(c, &root, VELO_IOC_NR_NODE_SET, &nd), 0);
    EXPECT_EQ(nic.reg(VELO_REG_CTRL_NODE_ID), 77u);
    EXPECT_EQ(velo_core_caps(c)->node_id, 77u);
    ASSERT_EQ(open(u), 0);
    EXPECT_EQ(velo_core_ioctl(c, &root, VELO_IOC_NR_NODE_SET, &nd), -VELO_CORE_EBUSY) << "endpoints know the id";
    nd.node_id = 256;
    EXPECT_EQ(velo_core_ioctl(c, &root, VELO_IOC_NR_NODE_SET, &nd), -VELO_CORE_EINVAL);

    EXPECT_EQ(velo_core_counter(c, 0), 100u);
    EXPECT_EQ(velo_core_counter(c, VELO_CNT_NUM - 1), 100u + VELO_CNT_NUM - 1);
    EXPECT_EQ(velo_core_counter(c, VELO_CNT_NUM), 0u) << "past the NIC's counters";
    nic.link_status = 0xFF;
    EXPECT_EQ(velo_core_link_status(c), 0x3u) << "two ports";
    close(u);
}

TEST(PolicyProbe, ReadsTheNetBlock) {
    fake::Nic nic;
    nic.nports = 4;
    velo_core* c = nullptr;
    ASSERT_EQ(velo_core_probe(fake::ops(), &nic, &c), 0);
    EXPECT_EQ(velo_core_caps(c)->nports, 4u);
    EXPECT_EQ(velo_core_caps(c)->net_base, static_cast<uint32_t>(VELO_BLK_NET_BASE));
    EXPECT_EQ(velo_core_caps(c)->route_off, static_cast<uint32_t>(VELO_TBL_ROUTE_TABLE_BASE));
    EXPECT_EQ(velo_core_policy(c), static_cast<unsigned>(VELO_POLICY_JOB));
    velo_core_remove(c);
    fake::Nic bad;
    bad.regs[VELO_REG_NET_PORT_OFFSET] = (1u << VELO_BAR_REGS_BITS) - 16;  // entries run past BAR0
    EXPECT_EQ(velo_core_probe(fake::ops(), &bad, &c), -VELO_CORE_ENODEV);
    EXPECT_EQ(bad.zallocs, 0);
}

// ABI 4: which ioctls write results back (their numbers are _IOWR, the others _IOW) and which
// are the administrator's; the numbers in velo_uapi.h say the same.
TEST_F(Policy, UapiFlagsMatchTheNumbers) {
    const unsigned long cmds[VELO_IOC_NR_COUNT] = {
        VELO_IOC_INFO,      VELO_IOC_EP_OPEN,  VELO_IOC_GRANT,      VELO_IOC_REVOKE,    VELO_IOC_WAIT,
        VELO_IOC_JOB_SET,   VELO_IOC_JOB_DEL,  VELO_IOC_NODE_SET,   VELO_IOC_ROUTE_SET, VELO_IOC_PORT_SET,
        VELO_IOC_RMA_SETUP, VELO_IOC_REGISTER, VELO_IOC_DEREGISTER, VELO_IOC_REPIN};
    unsigned admin = 0, out = 0;
    for (unsigned nr = 0; nr < VELO_IOC_NR_COUNT; ++nr) {
        const int f = velo_core_uapi_flags(nr);
        ASSERT_GE(f, 0) << nr;
        uint32_t minsz = 0, ksz = 0;
        ASSERT_EQ(velo_core_uapi_size(nr, &minsz, &ksz), 0);
        EXPECT_EQ(_IOC_TYPE(cmds[nr]), static_cast<unsigned>(VELO_IOC_MAGIC)) << nr;
        EXPECT_EQ(_IOC_NR(cmds[nr]), nr);
        EXPECT_EQ(_IOC_SIZE(cmds[nr]), ksz) << nr;
        EXPECT_EQ(_IOC_DIR(cmds[nr]), static_cast<unsigned>(_IOC_WRITE | ((f & VELO_CORE_UAPI_OUT) ? _IOC_READ : 0)))
            << nr;
        admin += (f & VELO_CORE_UAPI_ADMIN) != 0;
        out += (f & VELO_CORE_UAPI_OUT) != 0;
    }
    EXPECT_EQ(admin, 5u) << "JOB_SET, JOB_DEL, NODE_SET, ROUTE_SET, PORT_SET";
    EXPECT_EQ(out, 7u) << "INFO, EP_OPEN, GRANT, WAIT, RMA_SETUP, REGISTER, REPIN";
    EXPECT_EQ(velo_core_uapi_flags(VELO_IOC_NR_COUNT), -VELO_CORE_ENOTTY);
    EXPECT_NE(VELO_IOC_MAGIC, VELO_IOC_V3_MAGIC);
    EXPECT_EQ(_IOC_DIR(VELO_IOC_INFO_V3), static_cast<unsigned>(_IOC_NONE));
}

// Privilege is the caller's at each call, not the opener's: the same client loses the admin
// calls when its caller has no privilege, and a privileged endpoint used without privilege is
// demoted for good (its grants follow the policy from then on).
TEST_F(Policy, PrivilegeIsTheCallersAtEachCall) {
    velo_core_client root = client(0, true);
    ASSERT_EQ(job(root, kKeyA, 0, 9), 0);
    ASSERT_EQ(job(root, kKeyB, 10, 19), 0);
    velo_uapi_ep_open o{};
    ASSERT_EQ(open(root, 5, 0, &o), 0) << "root may hold a vpid of job A without its key";
    ASSERT_EQ(grant(root, 0, 1, 15), 0) << "and reach job B";
    velo_core_client_caller(&root, 4243, kUid, 0);  // the descriptor went to an unprivileged caller
    EXPECT_EQ(job_del(root, kKeyB), -VELO_CORE_EPERM);
    EXPECT_EQ(grant(root, 0, 1, 16), -VELO_CORE_EACCES) << "outside its vpid's job";
    ASSERT_NE(velo_core_ep_find(c, 5), nullptr);
    EXPECT_EQ(velo_core_ep_find(c, 5)->privileged, 0u);
    velo_core_client_caller(&root, 4242, 0, 1);  // privileged again: the admin calls work again
    EXPECT_EQ(grant(root, 0, 1, 17), -VELO_CORE_EACCES) << "the endpoint stays demoted";
    EXPECT_EQ(grant(root, 0, 1, 3), -VELO_CORE_EACCES) << "opened without a key: job A is not its job";
    EXPECT_EQ(grant(root, 0, 1, 30), 0) << "the vpids no job owns: its partition";
    close(root);
    EXPECT_EQ(job_del(root, kKeyA), 0);
    EXPECT_EQ(job_del(root, kKeyB), 0);
    // an unprivileged opener gains the admin calls when a privileged caller uses the client
    velo_core_client user = client(kUid);
    EXPECT_EQ(job(user, kKeyA, 0, 9), -VELO_CORE_EPERM);
    velo_core_client_caller(&user, 1, 0, 1);
    EXPECT_EQ(job(user, kKeyA, 0, 9), 0);
    EXPECT_EQ(job_del(user, kKeyA), 0);
}

// A NIC that never quiesces wedges the core: the first quiesce polls CORE_QUIESCE_POLLS times,
// later ones VELO_CORE_QUIESCE_POLLS_WEDGED times, so closing many endpoints of a dead NIC does
// not hold the caller's lock for a second each; a quiesce that succeeds unwedges it.
TEST_F(Policy, WedgedNicShortensLaterQuiesces) {
    velo_core_client a = client(kUid), b = client(kUid), d = client(kUid);
    ASSERT_EQ(open(a), 0);
    ASSERT_EQ(open(b), 0);
    const int busy = 1000000;
    nic.quiesce_busy_reads = busy;
    EXPECT_EQ(velo_core_wedged(c), 0);
    EXPECT_EQ(velo_core_client_close(c, &a), -VELO_CORE_ETIMEDOUT);
    EXPECT_EQ(velo_core_wedged(c), 1);
    // the control vpid's quiesce ran wedged: busy_left went down by the short budget only
    EXPECT_EQ(nic.busy_left, busy - VELO_CORE_QUIESCE_POLLS_WEDGED);
    EXPECT_EQ(velo_core_client_close(c, &b), -VELO_CORE_ETIMEDOUT);
    EXPECT_EQ(nic.busy_left, busy - VELO_CORE_QUIESCE_POLLS_WEDGED);
    nic.quiesce_busy_reads = 2;
    ASSERT_EQ(open(d), 0);
    EXPECT_EQ(velo_core_client_close(c, &d), 0);
    EXPECT_EQ(velo_core_wedged(c), 0);
    // the leaked rings of a and b (never reused) are the harness's to free
    for (auto& [dma, m] : nic.live) std::free(m.first);
    nic.live.clear();
}

// Surprise removal: registers read all ones and the device is not present: every quiesce ends
// at its first read with -ENODEV (memory is kept, as for a NIC that never quiesces).
static int not_present(void*) {
    return 0;
}
static int present(void*) {
    return 1;
}
TEST_F(Policy, AllOnesAndNotPresentEndsQuiesceAtOnce) {
    velo_core_client a = client(kUid), b = client(kUid);
    ASSERT_EQ(open(a), 0);
    ASSERT_EQ(open(b), 0);
    velo_core_set_present(c, present);
    nic.gone = true;
    nic.quiesce_busy_reads = 0;
    // still present (a transient all-ones read): polled like BUSY until the budget ends
    EXPECT_EQ(velo_core_client_close(c, &a), -VELO_CORE_ETIMEDOUT);
    velo_core_set_present(c, not_present);
    const uint64_t w = nic.writes;
    EXPECT_EQ(velo_core_client_close(c, &b), -VELO_CORE_ENODEV);
    EXPECT_EQ(velo_core_wedged(c), 1);
    EXPECT_LT(nic.writes - w, 16u) << "no polling loop against a device that is gone";
    velo_core_remove(c);
    c = nullptr;
    for (auto& [dma, m] : nic.live) std::free(m.first);
    nic.live.clear();
}

// velo_core_disable: IRQ, RMA and the NIC off (remove, shutdown, probe errors).
TEST_F(Policy, DisableTurnsEverythingOff) {
    EXPECT_NE(VELO_FIELD_GET(VELO_REG_CTRL_CONTROL_ENABLE, nic.regs[VELO_REG_CTRL_CONTROL]), 0u);
    ASSERT_NE(velo_core_caps(c)->rma_base, 0u);
    ASSERT_EQ(velo_core_rma_enable(c, 1), 0);
    EXPECT_NE(nic.regs[VELO_REG_RMA_CONTROL], 0u);
    velo_core_disable(c);
    EXPECT_EQ(nic.regs[VELO_REG_CTRL_CONTROL], 0u);
    EXPECT_EQ(nic.regs[VELO_REG_RMA_CONTROL], 0u);
#ifdef VELO_BLK_IRQ_BASE
    EXPECT_EQ(nic.regs[VELO_REG_IRQ_CTRL], 0u);
#endif
    velo_core_disable(nullptr);
}
