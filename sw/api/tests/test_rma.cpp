// libvelo RMA unit tests (built with ASan and UBSan): an endpoint on mocked memory (hw fast
// paths), a mocked command page and notification queue written here as the NIC writes them, and
// a fake driver answering REGISTER / DEREGISTER / REPIN. Commands are checked byte for byte
// against the spec's macros (velo_hw.h), completions against the entries posted.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "mock.h"
#include "velo/velo.h"
#include "velo/velo.hpp"
#include "velo/velo_hw.h"
#include "velo/velo_uapi.h"

namespace {

constexpr unsigned kNqLog2 = 7;  // 128 entries: 64 commands outstanding at most
constexpr unsigned kNode = 3, kVpid = 4;

// A peer's region: its key (high bits set, so that RKEY_HI shows in every command) and an NLA
// whose KEY field is the key's bits 7:0.
constexpr uint32_t kKey = 0xA5C3E15Au;
const uint64_t kRemote =
    VELO_FIELD_PREP(VELO_RMA_NLA_KEY, kKey & 0xFF) | VELO_FIELD_PREP(VELO_RMA_NLA_REGION, 17) | 0x1234;

// The driver's side of registration: round-robin region indices, a new 32-bit key each time (bits
// 7:0 in the NLA), and a box per scope kind (the scope as asked is recorded).
struct FakeDriver {
    struct Reg {
        uint64_t addr, len;
        unsigned access;
    };
    std::map<uint64_t, Reg> regs;  // by NLA (offset 0)
    unsigned next_region = 0;
    uint32_t key = 0x1234567u;
    unsigned max_regs = 1000;  // ENOSPC beyond
    int repin_err = 0;         // REPIN answers this (0: ok)
    bool bad_nla_key = false;  // answer an NLA whose KEY field is not the key's bits 7:0
    unsigned bad_out = 0;      // LIST: 1 answer 5 boxes, 2 an empty box, 3 box 0 not in the single fields
    std::vector<uint64_t> registered, deregistered, repinned;
    std::vector<velo_uapi_register> asked;  // every REGISTER as it came in

    static int ioctl(void* ctx, unsigned long req, void* arg) {
        auto* d = static_cast<FakeDriver*>(ctx);
        if (req == VELO_IOC_REGISTER) {
            auto* g = static_cast<velo_uapi_register*>(arg);
            EXPECT_EQ(g->argsz, sizeof *g);
            d->asked.push_back(*g);
            if (g->scope > VELO_SCOPE_LIST) return -EINVAL;
            // LIST: the boxes as given (this fake merges nothing), more than the NIC's 4: E2BIG
            if (g->scope == VELO_SCOPE_LIST && g->nboxes > VELO_SCOPE_NIC_BOXES) return -E2BIG;
            if (d->regs.size() >= d->max_regs) return -ENOSPC;
            d->key = d->key * 1103515245u + 12345u;  // any 32-bit value but 0
            if (d->key == 0) d->key = 1;
            const unsigned region = d->next_region++ % 256;
            g->nla = VELO_FIELD_PREP(VELO_RMA_NLA_KEY, (d->key & 0xFF) ^ (d->bad_nla_key ? 1 : 0)) |
                     VELO_FIELD_PREP(VELO_RMA_NLA_REGION, region);
            g->region = region;
            g->key = d->key;
            switch (g->scope) {
                case VELO_SCOPE_JOB:  // (a fabric without jobs: every node, the vpids no job owns)
                    g->node_lo = 0, g->node_hi = 255, g->vpid_lo = 0, g->vpid_hi = 127;
                    break;
                case VELO_SCOPE_OWNER:
                    g->node_lo = g->node_hi = kNode, g->vpid_lo = g->vpid_hi = kVpid;
                    break;
                case VELO_SCOPE_PEER:
                    g->node_hi = g->node_lo, g->vpid_hi = g->vpid_lo;
                    break;
                case VELO_SCOPE_LIST:
                    g->node_lo = g->boxes[0].node_lo, g->node_hi = g->boxes[0].node_hi;
                    g->vpid_lo = g->boxes[0].vpid_lo, g->vpid_hi = g->boxes[0].vpid_hi;
                    if (d->bad_out == 1) {
                        g->nboxes = 5;
                    } else if (d->bad_out == 2) {
                        g->boxes[1].node_lo = 9, g->boxes[1].node_hi = 8;
                    } else if (d->bad_out == 3) {
                        g->node_lo ^= 1;
                    }
                    break;
                default:
                    break;
            }
            if (g->scope != VELO_SCOPE_LIST) {
                g->nboxes = 1;
                g->boxes[0] = velo_uapi_scope_box{g->node_lo, g->node_hi, g->vpid_lo, g->vpid_hi};
            }
            g->scope = g->nboxes == 1 ? VELO_SCOPE_BOX : VELO_SCOPE_LIST;
            d->regs[g->nla] = {g->addr, g->len, g->flags};
            d->registered.push_back(g->nla);
            return 0;
        }
        if (req == VELO_IOC_DEREGISTER) {
            auto* g = static_cast<velo_uapi_deregister*>(arg);
            if (!d->regs.erase(g->nla)) return -ENOENT;
            d->deregistered.push_back(g->nla);
            return 0;
        }
        if (req == VELO_IOC_REPIN) {
            auto* g = static_cast<velo_uapi_repin*>(arg);
            if (!d->regs.count(g->nla)) return -ENOENT;
            d->repinned.push_back(g->nla);
            return d->repin_err;
        }
        return -ENOTTY;
    }
};

const velo_addr_t kDst{9, 5};

struct Rma : ::testing::Test {
    velo_ep_t* ep = nullptr;
    velo_ep_t* mock = nullptr;  // the mocked endpoint (stays set when a test takes ep over)
    FakeDriver drv;
    uint8_t* nq = nullptr;
    uint8_t* cmd = nullptr;
    uint32_t wp = 0;  // the NIC's write pointer

    void SetUp() override {
        ASSERT_EQ(velo__mock_open(&ep, kNode, kVpid, 8), 0);
        nq = static_cast<uint8_t*>(std::aligned_alloc(4096, 32u << kNqLog2));
        cmd = static_cast<uint8_t*>(std::aligned_alloc(4096, 4096));
        std::memset(nq, 0, 32u << kNqLog2);
        std::memset(cmd, 0xCC, 4096);
        ASSERT_EQ(velo__mock_rma(ep, nq, kNqLog2, cmd, FakeDriver::ioctl, &drv), 0);
        mock = ep;
    }
    void TearDown() override {
        if (ep) {
            EXPECT_EQ(velo_close(ep), 0);
        }
        std::free(nq);
        std::free(cmd);
    }

    // ---- command page
    bool slot_written(unsigned k) const {
        for (unsigned i = 0; i < 32; ++i)
            if (cmd[k * 32 + i] != 0xCC) return true;
        return false;
    }
    std::vector<unsigned> written() const {
        std::vector<unsigned> v;
        for (unsigned k = 0; k < VELO_RMA_SLOTS; ++k)
            if (slot_written(k)) v.push_back(k);
        return v;
    }
    // the 32 bytes of slot k, then the slot is cleared (so a re-issue shows)
    std::vector<uint8_t> take(unsigned k) {
        std::vector<uint8_t> b(cmd + k * 32, cmd + k * 32 + 32);
        std::memset(cmd + k * 32, 0xCC, 32);
        return b;
    }
    static std::vector<uint8_t> bytes(uint64_t w0, uint64_t w1, uint64_t w2, uint64_t w3) {
        std::vector<uint8_t> b(32);
        const uint64_t w[4] = {w0, w1, w2, w3};
        for (unsigned i = 0; i < 32; ++i) b[i] = static_cast<uint8_t>(w[i / 8] >> (8 * (i % 8)));
        return b;
    }
    static uint64_t cmd0(unsigned op, bool lcpl, bool rcpl, bool notify, unsigned node, uint64_t len) {
        return VELO_FIELD_PREP(VELO_RMA_CMD0_OP, op) | VELO_FIELD_PREP(VELO_RMA_CMD0_LCPL, lcpl) |
               VELO_FIELD_PREP(VELO_RMA_CMD0_RCPL, rcpl) | VELO_FIELD_PREP(VELO_RMA_CMD0_NOTIFY, notify) |
               VELO_FIELD_PREP(VELO_RMA_CMD0_REM_NODE, node) | VELO_FIELD_PREP(VELO_RMA_CMD0_LEN, len) |
               VELO_FIELD_PREP(VELO_RMA_CMD0_RKEY_HI, kKey >> 8);
    }

    // ---- notification queue (the NIC's writes: body first, the header word last)
    uint8_t* entry(uint32_t pos) { return nq + 32 * (pos & ((1u << kNqLog2) - 1)); }
    static uint64_t phase(uint32_t pos) { return ((pos >> kNqLog2) & 1u) ^ 1u; }
    void post_raw(uint64_t h, uint64_t cookie, uint64_t w2, uint64_t nla, bool write_header = true) {
        ASSERT_LT(wp - velo__mock_nq_rp(mock), 1u << kNqLog2) << "the NIC would wait for room";
        uint8_t* e = entry(wp);
        std::memcpy(e + VELO_RMA_NQ_OFF_COOKIE, &cookie, 8);
        std::memcpy(e + VELO_RMA_NQ_OFF_LEN, &w2, 8);
        std::memcpy(e + VELO_RMA_NQ_OFF_NLA, &nla, 8);
        if (write_header) {
            h |= VELO_FIELD_PREP(VELO_RMA_NQ_HDR_PHASE, phase(wp));
            __atomic_store_n(reinterpret_cast<uint64_t*>(e), h, __ATOMIC_RELEASE);
            ++wp;
        }
    }
    static uint64_t hdr(unsigned kind, unsigned slot, unsigned op, unsigned err = 0, unsigned remote = 0,
                        unsigned cnt = 0, unsigned pnode = kDst.node, unsigned pvpid = kDst.vpid) {
        return VELO_FIELD_PREP(VELO_RMA_NQ_HDR_KIND, kind) | VELO_FIELD_PREP(VELO_RMA_NQ_HDR_ERR, err) |
               VELO_FIELD_PREP(VELO_RMA_NQ_HDR_ERR_REMOTE, remote) | VELO_FIELD_PREP(VELO_RMA_NQ_HDR_SLOT, slot) |
               VELO_FIELD_PREP(VELO_RMA_NQ_HDR_SLOT_CNT, cnt) | VELO_FIELD_PREP(VELO_RMA_NQ_HDR_PEER_NODE, pnode) |
               VELO_FIELD_PREP(VELO_RMA_NQ_HDR_PEER_VPID, pvpid) | VELO_FIELD_PREP(VELO_RMA_NQ_HDR_OP, op);
    }
    void post(unsigned kind, unsigned slot, unsigned op, uint64_t cookie = 0, uint64_t len = 0, uint64_t nla = 0,
              unsigned err = 0, unsigned remote = 0, unsigned cnt = 0) {
        post_raw(hdr(kind, slot, op, err, remote, cnt), cookie, VELO_FIELD_PREP(VELO_RMA_NQ_W2_LEN, len), nla);
    }
    // every completion available now
    std::vector<velo_rma_cpl_t> drain() {
        std::vector<velo_rma_cpl_t> v;
        velo_rma_cpl_t c;
        int r;
        while ((r = velo_rma_poll(ep, &c)) == 0) v.push_back(c);
        EXPECT_EQ(r, -EAGAIN);
        return v;
    }
    velo_region_t* reg(uintptr_t addr, size_t len, unsigned access = VELO_ACCESS_ALL) {
        velo_region_t* r = nullptr;
        EXPECT_EQ(velo_register(ep, reinterpret_cast<const void*>(addr), len, access, nullptr, &r), 0);
        return r;
    }
    uint64_t nla_of(const velo_region_t* r, size_t off = 0) {
        uint64_t v = 0;
        EXPECT_EQ(velo_region_nla(r, off, &v), 0);
        return v;
    }
    velo_stats_t stats() {
        velo_stats_t s;
        EXPECT_EQ(velo_stats(ep, &s), 0);
        return s;
    }
};

}  // namespace

// ============================================================================ encoding
TEST_F(Rma, PutEncodingEveryFlagCombination) {
    velo_region_t* r = reg(0x100000, 1 << 20);
    const uint64_t base = nla_of(r);
    unsigned n = 0;
    for (unsigned flags = 0; flags < 8; ++flags) {
        for (uint64_t len : {0ull, 1ull, 4096ull, 123457ull}) {
            const uint64_t cookie = 0xC0FFEE00ull + n, off = 8 * n + 3;
            ASSERT_EQ(velo_put(ep, kDst, r, off, kRemote, kKey, len, flags, cookie), 0);
            auto w = written();
            ASSERT_EQ(w.size(), 1u);
            const unsigned k = w[0];
            EXPECT_EQ(take(k), bytes(cmd0(VELO_RMA_OP_PUT, flags & 1, true, (flags & 4) != 0, kDst.node, len),
                                     base + off, kRemote, cookie))
                << "flags " << flags << " len " << len;
            // completions: exactly the ones asked for, once
            if (flags & VELO_RMA_F_LOCAL) post(VELO_RMA_NQ_KIND_LOCAL_CPL, k, VELO_RMA_OP_PUT, cookie, len);
            post(VELO_RMA_NQ_KIND_REMOTE_CPL, k, VELO_RMA_OP_PUT, cookie, len);
            auto c = drain();
            std::vector<unsigned> kinds;
            for (auto& x : c) {
                kinds.push_back(x.kind);
                EXPECT_EQ(x.cookie, cookie);
                EXPECT_EQ(x.len, len);
                EXPECT_EQ(x.nla, kRemote);
                EXPECT_EQ(x.peer.node, kDst.node);
                EXPECT_EQ(x.op, VELO_RMA_OP_PUT);
            }
            std::vector<unsigned> want;
            if (flags & VELO_RMA_F_LOCAL) want.push_back(VELO_RMA_KIND_LOCAL);
            if (flags & VELO_RMA_F_REMOTE) want.push_back(VELO_RMA_KIND_REMOTE);
            EXPECT_EQ(kinds, want) << "flags " << flags;
            ++n;
        }
    }
    EXPECT_EQ(velo_deregister(r), 0);
}

TEST_F(Rma, GetEncodingAlwaysAsksGetDone) {
    velo_region_t* r = reg(0x200000, 1 << 16, VELO_ACCESS_LOCAL_WRITE);
    for (unsigned flags : {0u, VELO_RMA_F_LOCAL}) {
        ASSERT_EQ(velo_get(ep, kDst, r, 100, kRemote, kKey, 777, flags, 99 + flags), 0);
        auto w = written();
        ASSERT_EQ(w.size(), 1u);
        EXPECT_EQ(take(w[0]), bytes(cmd0(VELO_RMA_OP_GET, true, false, false, kDst.node, 777), nla_of(r, 100), kRemote,
                                    99 + flags));
        post(VELO_RMA_NQ_KIND_GET_DONE, w[0], VELO_RMA_OP_GET, 99 + flags, 777);
        auto c = drain();
        if (flags) {
            ASSERT_EQ(c.size(), 1u);
            EXPECT_EQ(c[0].kind, unsigned(VELO_RMA_KIND_GET_DONE));
            EXPECT_EQ(c[0].cookie, 99u + flags);
            EXPECT_EQ(c[0].op, VELO_RMA_OP_GET);
        } else {
            EXPECT_TRUE(c.empty());
        }
    }
    EXPECT_EQ(velo_deregister(r), 0);
}

TEST_F(Rma, LongTransfersAreSplitAndCompleteOnce) {
    const uint64_t piece = VELO_RMA_LEN_MAX & ~0xFFFull;
    const uint64_t len = 2 * piece + 100;
    velo_region_t* r = reg(0x40000000, len + 64);
    const uint64_t base = nla_of(r, 8);
    ASSERT_EQ(velo_put(ep, kDst, r, 8, kRemote, kKey, len, VELO_RMA_F_REMOTE | VELO_RMA_F_LOCAL, 5), 0);
    auto w = written();
    ASSERT_EQ(w.size(), 3u);
    for (unsigned i = 0; i < 3; ++i) {
        const uint64_t n = i < 2 ? piece : 100;
        EXPECT_EQ(take(w[i]), bytes(cmd0(VELO_RMA_OP_PUT, true, true, false, kDst.node, n), base + i * piece,
                                    kRemote + i * piece, 5))
            << i;
        EXPECT_LE(n, uint64_t(VELO_RMA_LEN_MAX));
    }
    for (unsigned i = 0; i < 3; ++i) post(VELO_RMA_NQ_KIND_LOCAL_CPL, w[i], VELO_RMA_OP_PUT, 5);
    auto c = drain();
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].kind, unsigned(VELO_RMA_KIND_LOCAL));
    EXPECT_EQ(c[0].len, len);
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, w[0], VELO_RMA_OP_PUT, 5);
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, w[1], VELO_RMA_OP_PUT, 5);
    EXPECT_TRUE(drain().empty());
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, w[2], VELO_RMA_OP_PUT, 5);
    c = drain();
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].kind, unsigned(VELO_RMA_KIND_REMOTE));
    EXPECT_EQ(c[0].len, len);
    EXPECT_EQ(velo_deregister(r), 0);
}

TEST_F(Rma, SplitNotifiedPutSendsItsNotifiedPieceLast) {
    const uint64_t piece = VELO_RMA_LEN_MAX & ~0xFFFull;
    const uint64_t len = 2 * piece + 1;
    velo_region_t* r = reg(0x40000000, len);
    ASSERT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey, len, VELO_RMA_F_NOTIFY, 6), 0);
    auto w = written();
    ASSERT_EQ(w.size(), 2u);  // the notified third piece waits for the other two
    for (unsigned i = 0; i < 2; ++i)
        EXPECT_EQ(take(w[i]), bytes(cmd0(VELO_RMA_OP_PUT, false, true, false, kDst.node, piece), nla_of(r, i * piece),
                                    kRemote + i * piece, 6));
    // new calls wait behind it
    EXPECT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey, 1, 0, 7), -EAGAIN);
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, w[0], VELO_RMA_OP_PUT);
    EXPECT_TRUE(drain().empty());
    EXPECT_TRUE(written().empty());
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, w[1], VELO_RMA_OP_PUT);
    EXPECT_TRUE(drain().empty());
    auto w3 = written();
    ASSERT_EQ(w3.size(), 1u);
    EXPECT_EQ(take(w3[0]), bytes(cmd0(VELO_RMA_OP_PUT, false, true, true, kDst.node, 1), nla_of(r, 2 * piece),
                                 kRemote + 2 * piece, 6));
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, w3[0], VELO_RMA_OP_PUT);
    EXPECT_TRUE(drain().empty());  // no completion asked for
    EXPECT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey, 1, 0, 7), 0);
    EXPECT_EQ(velo_deregister(r), 0);
}

TEST_F(Rma, OutstandingLimitAndBacklog) {
    velo_region_t* r = reg(0x100000, 1 << 20);
    // 128 queue entries: at most 64 commands outstanding
    for (unsigned i = 0; i < 64; ++i) ASSERT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey, 8, 0, i), 0) << i;
    std::vector<uint8_t> before(cmd, cmd + 4096);
    EXPECT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey, 8, 0, 64), -EAGAIN);
    EXPECT_EQ(velo_get(ep, kDst, r, 0, kRemote, kKey, 8, 0, 64), -EAGAIN);
    EXPECT_EQ(std::memcmp(before.data(), cmd, 4096), 0) << "a refused call stores nothing";
    auto w = written();
    ASSERT_EQ(w.size(), 64u);
    for (unsigned k : w) {
        take(k);
        post(VELO_RMA_NQ_KIND_REMOTE_CPL, k, VELO_RMA_OP_PUT);
    }
    EXPECT_TRUE(drain().empty());
    // a call of 100 commands: 64 now, the rest as completions come in
    ASSERT_EQ(velo__rma_set_limits(ep, 64, 4096), 0);
    ASSERT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey, 100 * 4096, VELO_RMA_F_REMOTE, 1), 0);
    EXPECT_EQ(written().size(), 64u);
    EXPECT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey, 8, 0, 2), -EAGAIN) << "new calls wait behind the rest";
    std::vector<uint64_t> remote_seen;
    unsigned rounds = 0;
    for (;;) {
        auto ws = written();
        if (ws.empty()) break;
        EXPECT_LE(ws.size(), 64u);
        for (unsigned k : ws) {
            auto b = take(k);
            uint64_t w2;
            std::memcpy(&w2, b.data() + 16, 8);
            remote_seen.push_back(w2);
            post(VELO_RMA_NQ_KIND_REMOTE_CPL, k, VELO_RMA_OP_PUT, 1);
        }
        auto c = drain();
        ++rounds;
        if (remote_seen.size() < 100) {
            EXPECT_TRUE(c.empty());
        } else {
            ASSERT_EQ(c.size(), 1u);
            EXPECT_EQ(c[0].kind, unsigned(VELO_RMA_KIND_REMOTE));
            EXPECT_EQ(c[0].len, 100u * 4096);
        }
    }
    ASSERT_EQ(remote_seen.size(), 100u);
    for (unsigned i = 0; i < 100; ++i) EXPECT_EQ(remote_seen[i], kRemote + i * 4096ull) << i;
    EXPECT_GE(rounds, 2u);
    EXPECT_EQ(velo_deregister(r), 0);
}

// ============================================================================ region cache
TEST_F(Rma, CacheHitsContainmentOverlapAccess) {
    velo_region_t* a = reg(0x10000, 1000, VELO_ACCESS_LOCAL_READ | VELO_ACCESS_REMOTE_WRITE);
    EXPECT_EQ(drv.registered.size(), 1u);
    velo_region_t* b = reg(0x10000 + 100, 200, VELO_ACCESS_LOCAL_READ);  // contained, fewer rights
    EXPECT_EQ(drv.registered.size(), 1u);
    EXPECT_EQ(drv.repinned.size(), 1u) << "a handle handed out is made valid";
    EXPECT_EQ(nla_of(b), drv.registered[0] + 100);
    EXPECT_EQ(nla_of(b, 200), drv.registered[0] + 300);
    uint64_t v;
    EXPECT_EQ(velo_region_nla(b, 201, &v), -ERANGE);
    velo_region_t* c = reg(0x10000 + 500, 1000, VELO_ACCESS_LOCAL_READ);  // overlaps, not contained
    EXPECT_EQ(drv.registered.size(), 2u);
    velo_region_t* d = reg(0x10000, 10, VELO_ACCESS_LOCAL_WRITE);  // contained, access missing
    EXPECT_EQ(drv.registered.size(), 3u);
    // the buffer form finds registrations without any ioctl
    const size_t repins = drv.repinned.size();
    ASSERT_EQ(velo_put_buf(ep, kDst, reinterpret_cast<const void*>(0x10000 + 900), kRemote, kKey, 500, 0, 1), 0);
    EXPECT_EQ(drv.registered.size(), 3u);
    EXPECT_EQ(drv.repinned.size(), repins);
    auto w = written();
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(take(w[0]),
              bytes(cmd0(VELO_RMA_OP_PUT, false, true, false, kDst.node, 500), drv.registered[1] + 400, kRemote, 1));
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, w[0], VELO_RMA_OP_PUT);
    drain();
    auto s = stats();
    EXPECT_EQ(s.rma_cache_miss, 3u);
    EXPECT_EQ(s.rma_cache_hits, 2u);
    for (auto* h : {a, b, c, d}) EXPECT_EQ(velo_deregister(h), 0);
    EXPECT_EQ(drv.regs.size(), 0u);
}

TEST_F(Rma, LruEvictionDeregistersIdleOnly) {
    ASSERT_EQ(velo__rma_set_limits(ep, 2, 0), 0);
    std::vector<uint64_t> nla;
    std::vector<unsigned> slots;
    for (unsigned i = 0; i < 3; ++i) {
        ASSERT_EQ(velo_put_buf(ep, kDst, reinterpret_cast<const void*>(0x100000 * (i + 1)), kRemote, kKey, 64, 0, i),
                  0);
        nla.push_back(drv.registered.back());
        auto w = written();
        ASSERT_EQ(w.size(), 1u);
        take(w[0]);
        slots.push_back(w[0]);
    }
    EXPECT_TRUE(drv.deregistered.empty()) << "registrations in use are never evicted";
    // buffer 1 is used again (most recent), then everything completes: the LRU idle one goes
    ASSERT_EQ(velo_put_buf(ep, kDst, reinterpret_cast<const void*>(0x100000 + 8), kRemote, kKey, 8, 0, 9), 0);
    slots.push_back(written()[0]);
    take(slots.back());
    for (unsigned k : slots) post(VELO_RMA_NQ_KIND_REMOTE_CPL, k, VELO_RMA_OP_PUT);
    drain();
    ASSERT_EQ(drv.deregistered.size(), 1u);
    EXPECT_EQ(drv.deregistered[0], nla[1]) << "least recently used";
    EXPECT_EQ(stats().rma_evictions, 1u);
    // buffers 1 and 3 still hit
    ASSERT_EQ(velo_put_buf(ep, kDst, reinterpret_cast<const void*>(0x300000), kRemote, kKey, 64, 0, 1), 0);
    ASSERT_EQ(velo_put_buf(ep, kDst, reinterpret_cast<const void*>(0x100000), kRemote, kKey, 64, 0, 1), 0);
    EXPECT_EQ(drv.registered.size(), 3u);
    // buffer 2 registers anew
    ASSERT_EQ(velo_put_buf(ep, kDst, reinterpret_cast<const void*>(0x200000), kRemote, kKey, 64, 0, 1), 0);
    EXPECT_EQ(drv.registered.size(), 4u);
}

TEST_F(Rma, NoRoomInTheNicEvictsIdleAndRetries) {
    drv.max_regs = 2;
    for (unsigned i = 0; i < 2; ++i) {
        ASSERT_EQ(velo_put_buf(ep, kDst, reinterpret_cast<const void*>(0x100000 * (i + 1)), kRemote, kKey, 64, 0, i),
                  0);
        const unsigned k = written()[0];
        take(k);
        post(VELO_RMA_NQ_KIND_REMOTE_CPL, k, VELO_RMA_OP_PUT);
        drain();
    }
    EXPECT_TRUE(drv.deregistered.empty());
    velo_region_t* r = reg(0x900000, 64);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(drv.deregistered.size(), 2u);
    // nothing idle to give back: the driver's ENOSPC (a declaration without a free region) is the
    // answer, told apart as the region table (-ENFILE, docs/api.md "Out of translation resources")
    velo_region_t* r2 = nullptr;
    EXPECT_EQ(velo_register(ep, reinterpret_cast<const void*>(0xA00000), 64, VELO_ACCESS_ALL, nullptr, &r2), 0);
    velo_region_t* r3 = nullptr;
    EXPECT_EQ(velo_register(ep, reinterpret_cast<const void*>(0xB00000), 64, VELO_ACCESS_ALL, nullptr, &r3), -ENFILE);
    EXPECT_EQ(r3, nullptr);
    EXPECT_NE(std::strstr(velo_strerror(-ENFILE), "region table"), nullptr);
    // no room, and more pages than the NIC's whole page table: -EFBIG (register smaller pieces)
    EXPECT_EQ(velo_register(ep, reinterpret_cast<const void*>(0x10000000), (size_t)(4096 + 1) * 4096, VELO_ACCESS_ALL,
                            nullptr, &r3),
              -EFBIG);
    EXPECT_NE(std::strstr(velo_strerror(-EFBIG), "page table"), nullptr);
    EXPECT_EQ(velo_deregister(r), 0);
    EXPECT_EQ(velo_deregister(r2), 0);
}

TEST_F(Rma, DeregisterInvalidatesAndWaitsForCommands) {
    velo_region_t* r = reg(0x500000, 4096);
    const uint64_t n = drv.registered.back();
    ASSERT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey, 64, VELO_RMA_F_REMOTE, 1), 0);
    const unsigned k = written()[0];
    take(k);
    EXPECT_EQ(velo_deregister(r), 0);
    EXPECT_TRUE(drv.deregistered.empty()) << "a command in flight still uses it";
    // but lookups do not find it any more
    ASSERT_EQ(velo_put_buf(ep, kDst, reinterpret_cast<const void*>(0x500000), kRemote, kKey, 64, 0, 2), 0);
    EXPECT_EQ(drv.registered.size(), 2u);
    const unsigned k2 = written()[0];
    take(k2);
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, k, VELO_RMA_OP_PUT, 1);
    auto c = drain();
    ASSERT_EQ(c.size(), 1u);
    ASSERT_EQ(drv.deregistered.size(), 1u);
    EXPECT_EQ(drv.deregistered[0], n);
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, k2, VELO_RMA_OP_PUT, 2);
    drain();
    EXPECT_EQ(drv.deregistered.size(), 1u) << "the cache keeps the implicit registration";
    // a registration the driver lost is replaced at the next velo_register
    drv.regs.clear();
    velo_region_t* again = reg(0x500000, 64, VELO_ACCESS_LOCAL_READ);
    EXPECT_EQ(drv.registered.size(), 3u);
    EXPECT_EQ(velo_deregister(again), 0);
}

// ============================================================================ notifications
TEST_F(Rma, TargetEntriesAcrossPhaseWraps) {
    for (uint32_t i = 0; i < 3 * (1u << kNqLog2) + 17; ++i) {
        post_raw(hdr(VELO_RMA_NQ_KIND_TARGET, 0, VELO_RMA_OP_PUT, 0, 0, 0, i % 256, (i * 7) % 128), 1000 + i,
                 VELO_FIELD_PREP(VELO_RMA_NQ_W2_LEN, i * 3), kRemote + i);
        velo_rma_cpl_t c;
        ASSERT_EQ(velo_rma_poll(ep, &c), 0) << i;
        EXPECT_EQ(c.kind, unsigned(VELO_RMA_KIND_TARGET));
        EXPECT_EQ(c.op, VELO_RMA_OP_PUT);
        EXPECT_EQ(c.cookie, 1000u + i);
        EXPECT_EQ(c.len, i * 3u);
        EXPECT_EQ(c.nla, kRemote + i);
        EXPECT_EQ(c.peer.node, i % 256);
        EXPECT_EQ(c.peer.vpid, (i * 7) % 128);
        ASSERT_EQ(velo_rma_poll(ep, &c), -EAGAIN) << "an entry of the previous pass is not read again";
        EXPECT_EQ(velo__mock_nq_rp(ep), i + 1) << "idle: the read pointer is returned";
    }
}

// velo_idle reports a completion in the notification queue without taking it.
TEST_F(Rma, IdleReportsACompletionAndTakesNothing) {
    velo_rma_cpl_t c;
    ASSERT_EQ(velo_rma_poll(ep, &c), -EAGAIN) << "sets RMA up (as any RMA call would: a target registers)";
    EXPECT_EQ(velo_idle(ep, 0), 0);
    EXPECT_EQ(velo_idle(ep, 2), 0) << "nothing came";
    post_raw(hdr(VELO_RMA_NQ_KIND_TARGET, 0, VELO_RMA_OP_PUT, 0, 0, 0, 3, 4), 55,
             VELO_FIELD_PREP(VELO_RMA_NQ_W2_LEN, 9), kRemote);
    EXPECT_EQ(velo_idle(ep, -1), 1);
    EXPECT_EQ(velo_idle(ep, 0), 1) << "still there";
    ASSERT_EQ(velo_rma_poll(ep, &c), 0);
    EXPECT_EQ(c.cookie, 55u);
    EXPECT_EQ(velo_idle(ep, 0), 0);
}

TEST_F(Rma, ReadPointerReturnedInBatches) {
    for (unsigned i = 0; i < 40; ++i) post(VELO_RMA_NQ_KIND_TARGET, 0, VELO_RMA_OP_PUT, i);
    velo_rma_cpl_t c;
    for (unsigned i = 0; i < 31; ++i) ASSERT_EQ(velo_rma_poll(ep, &c), 0);
    EXPECT_EQ(velo__mock_nq_rp(ep), 0u);
    ASSERT_EQ(velo_rma_poll(ep, &c), 0);
    EXPECT_EQ(velo__mock_nq_rp(ep), 32u) << "every quarter of the queue";
    for (unsigned i = 32; i < 40; ++i) ASSERT_EQ(velo_rma_poll(ep, &c), 0);
    EXPECT_EQ(velo_rma_poll(ep, &c), -EAGAIN);
    EXPECT_EQ(velo__mock_nq_rp(ep), 40u);
}

TEST_F(Rma, TornAndMalformedEntriesRejected) {
    // body written, header still of the previous pass (the DMA write not there yet): not taken
    post_raw(hdr(VELO_RMA_NQ_KIND_TARGET, 0, VELO_RMA_OP_PUT), 77, VELO_FIELD_PREP(VELO_RMA_NQ_W2_LEN, 5), kRemote,
             false);
    velo_rma_cpl_t c;
    EXPECT_EQ(velo_rma_poll(ep, &c), -EAGAIN);
    EXPECT_EQ(velo__mock_nq_rp(ep), 0u);
    // the header lands: taken whole
    post(VELO_RMA_NQ_KIND_TARGET, 0, VELO_RMA_OP_PUT, 77, 5, kRemote);
    ASSERT_EQ(velo_rma_poll(ep, &c), 0);
    EXPECT_EQ(c.cookie, 77u);
    EXPECT_EQ(c.len, 5u);
    // unknown kinds, reserved bits, stray slots: skipped and counted, the next entry delivered
    post_raw(hdr(0, 0, 0), 1, 0, 0);
    post_raw(hdr(6, 0, 0), 1, 0, 0);
    post_raw(hdr(VELO_RMA_NQ_KIND_TARGET, 0, 1) | VELO_FIELD_PREP(VELO_RMA_NQ_HDR_RSVD3, 1), 1, 0, 0);
    post_raw(hdr(VELO_RMA_NQ_KIND_TARGET, 0, 1), 1, VELO_FIELD_PREP(VELO_RMA_NQ_W2_RSVD, 1), 0);
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, 5, VELO_RMA_OP_PUT);  // no command in slot 5
    post(VELO_RMA_NQ_KIND_TARGET, 0, VELO_RMA_OP_PUT, 78);
    ASSERT_EQ(velo_rma_poll(ep, &c), 0);
    EXPECT_EQ(c.cookie, 78u);
    EXPECT_EQ(stats().rma_nq_bad, 5u);
    EXPECT_EQ(velo_rma_poll(ep, &c), -EAGAIN);
}

// ============================================================================ refused: BUSY
// The NIC refuses a command when all its tags are in use (ERROR BUSY, docs/rma.md §6.1): the
// library keeps it in its slot and issues it again when a command of ours ends, or after a short
// wait when none of ours is in flight; the caller sees only the final outcome.
TEST_F(Rma, BusyRefusalIsIssuedAgain) {
    velo_region_t* r = reg(0x700000, 8192);
    ASSERT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey, 100, VELO_RMA_F_REMOTE, 1), 0);
    ASSERT_EQ(velo_put(ep, kDst, r, 100, kRemote, kKey, 200, VELO_RMA_F_REMOTE, 2), 0);
    const auto w = written();
    ASSERT_EQ(w.size(), 2u);
    const unsigned a = w[0], b = w[1];
    take(a);
    const auto cmd_b = take(b);
    post(VELO_RMA_NQ_KIND_ERROR, b, VELO_RMA_OP_PUT, 2, 200, kRemote, VELO_RMA_ERR_BUSY, 0);
    EXPECT_TRUE(drain().empty()) << "the caller does not see the refusal";
    EXPECT_FALSE(slot_written(b)) << "issued again only when one of ours ends";
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, a, VELO_RMA_OP_PUT, 1);
    auto c = drain();
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].cookie, 1u);
    ASSERT_TRUE(slot_written(b));
    EXPECT_EQ(take(b), cmd_b) << "the same command, same slot";
    EXPECT_EQ(stats().rma_reissues, 1u);
    // refused again, none of ours in flight now: issued again after a short wait, as often as it
    // takes (no retry limit: the tags are held by other vpids' commands, which end)
    for (unsigned round = 0; round < 3; ++round) {
        post(VELO_RMA_NQ_KIND_ERROR, b, VELO_RMA_OP_PUT, 2, 200, kRemote, VELO_RMA_ERR_BUSY, 0);
        velo_rma_cpl_t x;
        EXPECT_EQ(velo_rma_wait(ep, &x, 0), -ETIMEDOUT);
        for (int i = 0; i < 10000000 && !slot_written(b); ++i) EXPECT_EQ(velo_rma_poll(ep, &x), -EAGAIN);
        ASSERT_TRUE(slot_written(b));
        EXPECT_EQ(take(b), cmd_b);
    }
    EXPECT_EQ(stats().rma_reissues, 4u);
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, b, VELO_RMA_OP_PUT, 2);
    c = drain();
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].kind, unsigned(VELO_RMA_KIND_REMOTE));
    EXPECT_EQ(c[0].cookie, 2u);
    EXPECT_EQ(c[0].len, 200u);
    EXPECT_STREQ(velo_rma_reason_str(VELO_RMA_R_BUSY),
                 "BUSY: the NIC had no free command tag (the library issues the command again)");
    velo_deregister(r);
}

// ============================================================================ errors, re-pin
TEST_F(Rma, NotValidLocalRepinsAndReissues) {
    velo_region_t* r = reg(0x700000, 8192);
    const uint64_t n = drv.registered.back();
    ASSERT_EQ(velo_put(ep, kDst, r, 4000, kRemote, kKey, 100, VELO_RMA_F_REMOTE, 3), 0);
    const unsigned k = written()[0];
    const auto first = take(k);
    const size_t repins = drv.repinned.size();
    post(VELO_RMA_NQ_KIND_ERROR, k, VELO_RMA_OP_PUT, 3, 0, kRemote, VELO_RMA_ERR_NOT_VALID, 0);
    EXPECT_TRUE(drain().empty()) << "the caller does not see the retry";
    ASSERT_EQ(drv.repinned.size(), repins + 1);
    EXPECT_EQ(drv.repinned.back(), n) << "REPIN names the region (offset 0)";
    ASSERT_TRUE(slot_written(k));
    EXPECT_EQ(take(k), first) << "the same command, same slot";
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, k, VELO_RMA_OP_PUT, 3);
    auto c = drain();
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].kind, unsigned(VELO_RMA_KIND_REMOTE));
    EXPECT_EQ(stats().rma_repins, 1u);
    EXPECT_EQ(stats().rma_reissues, 1u);
    // a get's destination as well
    ASSERT_EQ(velo_get(ep, kDst, r, 0, kRemote, kKey, 10, VELO_RMA_F_LOCAL, 4), 0);
    const unsigned g = written()[0];
    take(g);
    post(VELO_RMA_NQ_KIND_ERROR, g, VELO_RMA_OP_GET, 4, 0, 0, VELO_RMA_ERR_NOT_VALID, 0);
    EXPECT_TRUE(drain().empty());
    EXPECT_TRUE(slot_written(g));
    take(g);
    post(VELO_RMA_NQ_KIND_GET_DONE, g, VELO_RMA_OP_GET, 4);
    c = drain();
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].kind, unsigned(VELO_RMA_KIND_GET_DONE));
    EXPECT_EQ(velo_deregister(r), 0);
}

TEST_F(Rma, NotValidGivesUpAfterRetriesOrFailedRepin) {
    velo_region_t* r = reg(0x700000, 8192);
    ASSERT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey, 100, 0, 3), 0);
    unsigned k = written()[0];
    unsigned issues = 0;
    for (;;) {
        ASSERT_TRUE(slot_written(k));
        take(k);
        ++issues;
        post(VELO_RMA_NQ_KIND_ERROR, k, VELO_RMA_OP_PUT, 3, 0, 0, VELO_RMA_ERR_NOT_VALID, 0);
        auto c = drain();
        if (!c.empty()) {
            ASSERT_EQ(c.size(), 1u);
            EXPECT_EQ(c[0].kind, unsigned(VELO_RMA_KIND_ERROR));
            EXPECT_EQ(c[0].reason, unsigned(VELO_RMA_R_NOT_VALID));
            EXPECT_EQ(c[0].status, -EFAULT);
            break;
        }
        ASSERT_LT(issues, 10u);
    }
    EXPECT_EQ(issues, 5u) << "issued once, then four times again";
    // REPIN fails: reported at once
    drv.repin_err = -ENOMEM;
    ASSERT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey, 100, 0, 4), 0);
    k = written()[0];
    take(k);
    post(VELO_RMA_NQ_KIND_ERROR, k, VELO_RMA_OP_PUT, 4, 0, 0, VELO_RMA_ERR_NOT_VALID, 0);
    auto c = drain();
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].reason, unsigned(VELO_RMA_R_NOT_VALID));
    EXPECT_FALSE(slot_written(k));
    drv.repin_err = 0;
    // remote NOT_VALID: not our region, so no re-pin; the owner's driver may be compacting its
    // page table (every region withdrawn for a moment), so the command is issued again after a
    // wait, four times, then the error is reported
    const size_t repins = drv.repinned.size();
    ASSERT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey, 100, VELO_RMA_F_LOCAL, 5), 0);
    k = written()[0];
    unsigned sent = 0;
    std::vector<velo_rma_cpl_t> got;
    for (;;) {
        velo_rma_cpl_t x;
        for (int i = 0; i < 10000000 && !slot_written(k); ++i) ASSERT_EQ(velo_rma_poll(ep, &x), -EAGAIN);
        ASSERT_TRUE(slot_written(k));
        take(k);
        ++sent;
        post(VELO_RMA_NQ_KIND_LOCAL_CPL, k, VELO_RMA_OP_PUT, 5);
        post(VELO_RMA_NQ_KIND_ERROR, k, VELO_RMA_OP_PUT, 5, 0, 0, VELO_RMA_ERR_NOT_VALID, 1);
        c = drain();
        got.insert(got.end(), c.begin(), c.end());
        if (!got.empty() && got.back().kind == VELO_RMA_KIND_ERROR) break;
        ASSERT_LT(sent, 10u);
    }
    EXPECT_EQ(sent, 5u) << "issued once, then four times again";
    ASSERT_EQ(got.size(), 2u) << "one LOCAL (the first), one ERROR";
    EXPECT_EQ(got[0].kind, unsigned(VELO_RMA_KIND_LOCAL));
    EXPECT_EQ(got[1].kind, unsigned(VELO_RMA_KIND_ERROR));
    EXPECT_EQ(got[1].remote, 1u);
    EXPECT_EQ(got[1].cookie, 5u);
    EXPECT_EQ(drv.repinned.size(), repins);
    EXPECT_FALSE(slot_written(k));
    EXPECT_EQ(velo_deregister(r), 0);
}

TEST_F(Rma, ErrorReasonsMapToErrno) {
    velo_region_t* r = reg(0x700000, 8192);
    const std::map<unsigned, int> want = {
        {VELO_RMA_ERR_BAD_HANDLE, -ENOENT}, {VELO_RMA_ERR_NOT_OWNER, -EPERM},       {VELO_RMA_ERR_PERM, -EACCES},
        {VELO_RMA_ERR_RANGE, -ERANGE},      {VELO_RMA_ERR_NO_ROUTE, -EHOSTUNREACH}, {VELO_RMA_ERR_DISABLED, -ENETDOWN},
        {VELO_RMA_ERR_BAD_CMD, -EPROTO},    {VELO_RMA_ERR_NQ_DISABLED, -ENOTCONN}};
    for (auto [reason, err] : want) {
        ASSERT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey, 1, 0, reason), 0);
        const unsigned k = written()[0];
        take(k);
        post(VELO_RMA_NQ_KIND_ERROR, k, VELO_RMA_OP_PUT, reason, 0, 0, reason, 1);
        auto c = drain();
        ASSERT_EQ(c.size(), 1u);
        EXPECT_EQ(c[0].reason, reason);
        EXPECT_EQ(c[0].status, err);
        EXPECT_EQ(c[0].cookie, reason);
        EXPECT_STRNE(velo_rma_reason_str(reason), velo_rma_reason_str(99));
        EXPECT_STRNE(velo_strerror(err), "unknown error") << reason;
    }
    EXPECT_EQ(velo_deregister(r), 0);
}

TEST_F(Rma, TornCommandWritesAreReissued) {
    velo_region_t* r = reg(0x700000, 8192);
    ASSERT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey, 10, VELO_RMA_F_REMOTE, 1), 0);
    ASSERT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey, 20, VELO_RMA_F_REMOTE, 2), 0);
    auto w = written();
    ASSERT_EQ(w.size(), 2u);
    ASSERT_EQ(w[1], w[0] + 1);
    const auto a = take(w[0]), b = take(w[1]);
    post(VELO_RMA_NQ_KIND_ERROR, w[0], 0, 0, 0, 0, VELO_RMA_ERR_TORN, 0, 2);
    EXPECT_TRUE(drain().empty());
    EXPECT_EQ(take(w[0]), a);
    EXPECT_EQ(take(w[1]), b);
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, w[1], VELO_RMA_OP_PUT);
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, w[0], VELO_RMA_OP_PUT);
    auto c = drain();
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].cookie, 2u);
    EXPECT_EQ(c[1].cookie, 1u);
    EXPECT_EQ(velo_deregister(r), 0);
}

// ============================================================================ argument checks
TEST_F(Rma, EveryInvalidArgumentHasItsErrno) {
    velo_region_t* r = reg(0x100000, 4096, VELO_ACCESS_LOCAL_READ);
    velo_region_t* wr = reg(0x200000, 4096, VELO_ACCESS_LOCAL_WRITE | VELO_ACCESS_REMOTE_WRITE);
    const std::vector<uint8_t> page(cmd, cmd + 4096);
    auto put = [&](velo_ep_t* e, velo_addr_t d, const velo_region_t* l, size_t off, uint64_t nla, size_t len,
                   unsigned f) { return velo_put(e, d, l, off, nla, kKey, len, f, 0); };
    EXPECT_EQ(put(nullptr, kDst, r, 0, kRemote, 1, 0), -EINVAL);
    EXPECT_EQ(put(ep, kDst, r, 0, kRemote, 1, 8), -EINVAL);           // unknown flag
    EXPECT_EQ(put(ep, kDst, nullptr, 0, kRemote, 1, 0), -EINVAL);     // data without a region
    EXPECT_EQ(put(ep, {256, 5}, r, 0, kRemote, 1, 0), -EINVAL);       // node beyond NODE_BITS
    EXPECT_EQ(put(ep, {1, 256}, r, 0, kRemote, 1, 0), -EINVAL);       // vpid beyond VPID_BITS
    EXPECT_EQ(put(ep, {1, 0x80 | 5}, r, 0, kRemote, 1, 0), -EINVAL);  // a control vpid
    EXPECT_EQ(put(ep, kDst, r, 0, VELO_FIELD_PREP(VELO_RMA_NLA_REGION, 256), 1, 0), -EINVAL);
    EXPECT_EQ(put(ep, kDst, r, 0, VELO_FIELD_PREP(VELO_RMA_NLA_KEY, kKey & 0xFF) | VELO_FIELD_MASK(VELO_RMA_NLA_OFFSET),
                  2, 0),
              -ERANGE);  // past 2^40
    // an NLA and a key of different registrations (the NLA's KEY field is not the key's bits 7:0)
    EXPECT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey ^ 1u, 1, 0, 0), -EINVAL);
    EXPECT_EQ(velo_get(ep, kDst, wr, 0, kRemote, kKey ^ 0x80u, 1, 0, 0), -EINVAL);
    EXPECT_EQ(velo_put_buf(ep, kDst, page.data(), kRemote, 0, 1, 0, 0), -EINVAL);
    EXPECT_EQ(velo_get_buf(ep, kDst, wr, kRemote ^ VELO_FIELD_PREP(VELO_RMA_NLA_KEY, 0x40), kKey, 1, 0, 0), -EINVAL);
    EXPECT_EQ(put(ep, kDst, r, 4000, kRemote, 97, 0), -ERANGE);  // past the region
    EXPECT_EQ(put(ep, kDst, r, 4097, kRemote, 0, 0), -ERANGE);
    EXPECT_EQ(put(ep, kDst, r, 0, kRemote, SIZE_MAX, 0), -ERANGE);
    EXPECT_EQ(put(ep, kDst, wr, 0, kRemote, 1, 0), -EACCES);                // no LOCAL_READ
    EXPECT_EQ(velo_get(ep, kDst, r, 0, kRemote, kKey, 1, 0, 0), -EACCES);   // no LOCAL_WRITE
    EXPECT_EQ(velo_get(ep, kDst, wr, 0, kRemote, kKey, 0, 0, 0), -EINVAL);  // zero-length get
    EXPECT_EQ(velo_get(ep, kDst, wr, 0, kRemote, kKey, 1, VELO_RMA_F_REMOTE, 0), -EINVAL);
    EXPECT_EQ(velo_get(ep, kDst, wr, 0, kRemote, kKey, 1, VELO_RMA_F_NOTIFY, 0), -EINVAL);
    EXPECT_EQ(velo_put_buf(ep, kDst, nullptr, kRemote, kKey, 1, 0, 0), -EINVAL);
    EXPECT_EQ(velo_get_buf(ep, kDst, nullptr, kRemote, kKey, 1, 0, 0), -EINVAL);
    EXPECT_EQ(velo_put_buf(ep, kDst, reinterpret_cast<void*>(~uintptr_t(0) - 10), kRemote, kKey, 100, 0, 0), -EINVAL);
    // a region of another endpoint
    velo_ep_t* other = nullptr;
    ASSERT_EQ(velo__mock_open(&other, 1, 2, 8), 0);
    EXPECT_EQ(put(other, kDst, r, 0, kRemote, 1, 0), -EINVAL);
    EXPECT_EQ(velo_close(other), 0);
    EXPECT_EQ(put(other, kDst, r, 0, kRemote, 1, 0), -EBADF);
    // registration
    velo_region_t* h = reinterpret_cast<velo_region_t*>(1);
    EXPECT_EQ(velo_register(nullptr, page.data(), 1, VELO_ACCESS_ALL, nullptr, &h), -EINVAL);
    EXPECT_EQ(velo_register(ep, page.data(), 1, VELO_ACCESS_ALL, nullptr, nullptr), -EINVAL);
    EXPECT_EQ(velo_register(ep, nullptr, 1, VELO_ACCESS_ALL, nullptr, &h), -EINVAL);
    EXPECT_EQ(h, nullptr);
    EXPECT_EQ(velo_register(ep, page.data(), 0, VELO_ACCESS_ALL, nullptr, &h), -EINVAL);
    EXPECT_EQ(velo_register(ep, page.data(), size_t(1) << 40, VELO_ACCESS_ALL, nullptr, &h), -EINVAL);
    EXPECT_EQ(velo_register(ep, reinterpret_cast<void*>(~uintptr_t(0) - 10), 100, VELO_ACCESS_ALL, nullptr, &h),
              -EINVAL);
    EXPECT_EQ(velo_register(ep, page.data(), 1, 0, nullptr, &h), -EINVAL);
    EXPECT_EQ(velo_register(ep, page.data(), 1, 0x10, nullptr, &h), -EINVAL);
    const velo_scope_t bad_kind = {VELO_SCOPE_LIST + 1, 0, 0, 0, 0, 0, {}};
    EXPECT_EQ(velo_register(ep, page.data(), 1, VELO_ACCESS_ALL, &bad_kind, &h), -EINVAL);
    EXPECT_TRUE(drv.asked.size() == 2u) << "refused before the driver";
    uint32_t key;
    velo_scope_t sc;
    EXPECT_EQ(velo_region_rkey(nullptr, &key), -EINVAL);
    EXPECT_EQ(velo_region_rkey(r, nullptr), -EINVAL);
    EXPECT_EQ(velo_region_scope(nullptr, &sc), -EINVAL);
    EXPECT_EQ(velo_region_scope(r, nullptr), -EINVAL);
    EXPECT_EQ(velo_deregister(nullptr), -EINVAL);
    uint64_t v;
    EXPECT_EQ(velo_region_nla(nullptr, 0, &v), -EINVAL);
    EXPECT_EQ(velo_region_nla(r, 0, nullptr), -EINVAL);
    velo_rma_cpl_t c;
    EXPECT_EQ(velo_rma_poll(nullptr, &c), -EINVAL);
    EXPECT_EQ(velo_rma_poll(ep, nullptr), -EINVAL);
    EXPECT_EQ(velo_rma_wait(ep, &c, 0), -ETIMEDOUT);
    EXPECT_EQ(std::memcmp(page.data(), cmd, 4096), 0) << "no refused call stored anything";
    EXPECT_EQ(drv.registered.size(), 2u);
    // valid edge cases
    EXPECT_EQ(put(ep, kDst, r, 4095, kRemote, 1, 0), 0);
    EXPECT_EQ(put(ep, kDst, nullptr, 0, kRemote, 0, VELO_RMA_F_NOTIFY), 0);  // notification only
    EXPECT_EQ(put(ep, kDst, r, 0, VELO_FIELD_PREP(VELO_RMA_NLA_KEY, kKey & 0xFF) | VELO_FIELD_MASK(VELO_RMA_NLA_OFFSET),
                  1, 0),
              0);
    // messages
    EXPECT_NE(std::string(velo_strerror(-ERANGE)).find("region"), std::string::npos);
    EXPECT_NE(std::string(velo_strerror(-EACCES)).find("access"), std::string::npos);
    EXPECT_NE(std::string(velo_strerror(-EAGAIN)).find("velo_rma_poll"), std::string::npos);
    EXPECT_NE(std::string(velo_strerror(-ENOTSUP)).find("the NIC has no RMA unit"), std::string::npos);
    EXPECT_NE(std::string(velo_strerror(-EINVAL)).find("bits 7:0 of the key"), std::string::npos);
    EXPECT_NE(std::string(velo_strerror(-EACCES)).find("scope"), std::string::npos);
    EXPECT_NE(
        std::string(velo_strerror(-ENOENT)).find("no such RMA region, wrong key, or not permitted for this initiator"),
        std::string::npos);
    EXPECT_NE(std::string(velo_rma_reason_str(VELO_RMA_R_BAD_HANDLE))
                  .find("no such region, wrong key, or not permitted for this initiator"),
              std::string::npos);
    EXPECT_EQ(velo_deregister(r), 0);
    EXPECT_EQ(velo_deregister(wr), 0);
}

// ============================================================================ keys and scopes
// The key's bits 31:8 travel in RMA_CMD0 RKEY_HI of every command of a call (every piece of a long
// one, every re-issue), its bits 7:0 in the remote NLA as the caller gave it.
TEST_F(Rma, RemoteKeyHighBitsInEveryCommand) {
    const size_t piece = VELO_RMA_LEN_MAX & ~0xFFFu;
    velo_region_t* r = reg(0x10000000, 2 * piece);
    unsigned n = 0;
    for (uint32_t key : {0x0000005Au, 0x0000015Au, 0xFFFFFF5Au, 0x8000005Au, 0x1234565Au}) {
        const uint64_t nla = VELO_FIELD_PREP(VELO_RMA_NLA_KEY, key & 0xFF) | VELO_FIELD_PREP(VELO_RMA_NLA_REGION, 3);
        const size_t len = piece + 10;  // two commands
        ASSERT_EQ(velo_put(ep, kDst, r, 0, nla, key, len, VELO_RMA_F_REMOTE, n), 0);
        auto w = written();
        ASSERT_EQ(w.size(), 2u);
        for (unsigned i = 0; i < 2; ++i) {
            auto b = take(w[i]);
            uint64_t w0, w2;
            std::memcpy(&w0, b.data(), 8);
            std::memcpy(&w2, b.data() + 16, 8);
            EXPECT_EQ(VELO_FIELD_GET(VELO_RMA_CMD0_RKEY_HI, w0), key >> 8) << std::hex << key;
            EXPECT_EQ(VELO_FIELD_GET(VELO_RMA_CMD0_LEN, w0), i ? 10u : piece);
            EXPECT_EQ(w2, nla + i * piece);
            post(VELO_RMA_NQ_KIND_REMOTE_CPL, w[i], VELO_RMA_OP_PUT, n, VELO_FIELD_GET(VELO_RMA_CMD0_LEN, w0));
        }
        auto c = drain();
        ASSERT_EQ(c.size(), 1u);
        EXPECT_EQ(c[0].kind, VELO_RMA_KIND_REMOTE);
        ++n;
        // a get: one command
        ASSERT_EQ(velo_get(ep, kDst, r, 0, nla, key, 5, 0, n), 0);
        w = written();
        ASSERT_EQ(w.size(), 1u);
        EXPECT_EQ(take(w[0]),
                  bytes(VELO_FIELD_PREP(VELO_RMA_CMD0_OP, VELO_RMA_OP_GET) | VELO_FIELD_PREP(VELO_RMA_CMD0_LCPL, 1) |
                            VELO_FIELD_PREP(VELO_RMA_CMD0_REM_NODE, kDst.node) | VELO_FIELD_PREP(VELO_RMA_CMD0_LEN, 5) |
                            VELO_FIELD_PREP(VELO_RMA_CMD0_RKEY_HI, key >> 8),
                        nla_of(r), nla, n));
        post(VELO_RMA_NQ_KIND_GET_DONE, w[0], VELO_RMA_OP_GET, n, 5);
        drain();
        ++n;
    }
    EXPECT_EQ(velo_deregister(r), 0);
}

// velo_register hands the scope to the driver (NULL: JOB; the fields a kind does not use as 0) and
// gives back the driver's key and box; the cache shares a registration only between callers that
// asked for the same scope, and the buffer calls use the default scope.
TEST_F(Rma, ScopeGoesToTheDriverAndSeparatesTheCache) {
    const uintptr_t a = 0x400000;
    velo_region_t *job, *owner, *peer, *peer2, *box, *job2, *peer_again;
    ASSERT_EQ(velo_register(ep, reinterpret_cast<const void*>(a), 4096, VELO_ACCESS_ALL, nullptr, &job), 0);
    const velo_scope_t so = {VELO_SCOPE_OWNER, 9, 9, 9, 9, 2, {{1, 1, 1, 1}}};  // (ignored fields)
    ASSERT_EQ(velo_register(ep, reinterpret_cast<const void*>(a), 4096, VELO_ACCESS_ALL, &so, &owner), 0);
    const velo_scope_t sp = {VELO_SCOPE_PEER, 7, 200, 33, 201, 0, {}};
    ASSERT_EQ(velo_register(ep, reinterpret_cast<const void*>(a), 4096, VELO_ACCESS_ALL, &sp, &peer), 0);
    const velo_scope_t sp2 = {VELO_SCOPE_PEER, 7, 0, 34, 0, 0, {}};
    ASSERT_EQ(velo_register(ep, reinterpret_cast<const void*>(a), 4096, VELO_ACCESS_ALL, &sp2, &peer2), 0);
    const velo_scope_t sb = {VELO_SCOPE_BOX, 1, 4, 10, 20, 0, {}};
    ASSERT_EQ(velo_register(ep, reinterpret_cast<const void*>(a), 4096, VELO_ACCESS_ALL, &sb, &box), 0);
    ASSERT_EQ(drv.asked.size(), 5u) << "five scopes, five registrations";
    const unsigned kinds[5] = {VELO_SCOPE_JOB, VELO_SCOPE_OWNER, VELO_SCOPE_PEER, VELO_SCOPE_PEER, VELO_SCOPE_BOX};
    const uint8_t want[5][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}, {7, 0, 33, 0}, {7, 0, 34, 0}, {1, 4, 10, 20}};
    for (unsigned i = 0; i < 5; ++i) {
        const auto& g = drv.asked[i];
        EXPECT_EQ(g.scope, kinds[i]) << i;
        EXPECT_EQ(g.node_lo, want[i][0]) << i;
        EXPECT_EQ(g.node_hi, want[i][1]) << i;
        EXPECT_EQ(g.vpid_lo, want[i][2]) << i;
        EXPECT_EQ(g.vpid_hi, want[i][3]) << i;
        EXPECT_EQ(g.nboxes, 0u) << i << ": only LIST passes boxes";
        EXPECT_EQ(g.boxes[0].node_lo | g.boxes[0].vpid_lo, 0) << i;
    }
    // the driver's key and box come back; keys differ per registration
    uint32_t kj = 0, ko = 0;
    ASSERT_EQ(velo_region_rkey(job, &kj), 0);
    ASSERT_EQ(velo_region_rkey(owner, &ko), 0);
    EXPECT_NE(kj, ko);
    EXPECT_EQ(VELO_FIELD_GET(VELO_RMA_NLA_KEY, nla_of(job)), kj & 0xFF);
    EXPECT_EQ(VELO_FIELD_GET(VELO_RMA_NLA_KEY, nla_of(owner)), ko & 0xFF);
    velo_scope_t b;
    ASSERT_EQ(velo_region_scope(owner, &b), 0);
    EXPECT_EQ(b.kind, unsigned(VELO_SCOPE_BOX));
    EXPECT_EQ(b.node_lo, kNode);
    EXPECT_EQ(b.node_hi, kNode);
    EXPECT_EQ(b.vpid_lo, kVpid);
    EXPECT_EQ(b.vpid_hi, kVpid);
    ASSERT_EQ(velo_region_scope(peer, &b), 0);
    EXPECT_EQ(b.node_lo, 7);
    EXPECT_EQ(b.node_hi, 7);
    EXPECT_EQ(b.vpid_lo, 33);
    EXPECT_EQ(b.vpid_hi, 33);
    ASSERT_EQ(velo_region_scope(box, &b), 0);
    EXPECT_EQ(b.node_lo, 1);
    EXPECT_EQ(b.node_hi, 4);
    EXPECT_EQ(b.vpid_lo, 10);
    EXPECT_EQ(b.vpid_hi, 20);
    // the same scopes again (a contained range): cache hits, the same keys
    const velo_scope_t sj = {VELO_SCOPE_JOB, 1, 2, 3, 4, 0, {}};
    ASSERT_EQ(velo_register(ep, reinterpret_cast<const void*>(a + 8), 8, VELO_ACCESS_LOCAL_READ, &sj, &job2), 0);
    const velo_scope_t sp3 = {VELO_SCOPE_PEER, 7, 1, 33, 1, 0, {}};  // the same peer (hi fields ignored)
    ASSERT_EQ(velo_register(ep, reinterpret_cast<const void*>(a), 100, VELO_ACCESS_ALL, &sp3, &peer_again), 0);
    EXPECT_EQ(drv.asked.size(), 5u);
    uint32_t k = 0;
    ASSERT_EQ(velo_region_rkey(job2, &k), 0);
    EXPECT_EQ(k, kj);
    uint32_t kp = 0;
    ASSERT_EQ(velo_region_rkey(peer, &kp), 0);
    ASSERT_EQ(velo_region_rkey(peer_again, &k), 0);
    EXPECT_EQ(k, kp);
    // a buffer call finds the JOB registration, not the OWNER or PEER ones (more recently used)
    ASSERT_EQ(velo_put_buf(ep, kDst, reinterpret_cast<const void*>(a + 16), kRemote, kKey, 16, 0, 1), 0);
    EXPECT_EQ(drv.asked.size(), 5u);
    auto w = written();
    ASSERT_EQ(w.size(), 1u);
    uint64_t w1;
    const auto cmdb = take(w[0]);
    std::memcpy(&w1, cmdb.data() + 8, 8);
    EXPECT_EQ(w1, nla_of(job) + 16);
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, w[0], VELO_RMA_OP_PUT, 1, 16);
    drain();
    // with only an OWNER registration cached, a buffer call registers anew with the default scope
    for (velo_region_t* h : {job, job2}) EXPECT_EQ(velo_deregister(h), 0);
    ASSERT_EQ(velo_put_buf(ep, kDst, reinterpret_cast<const void*>(a + 16), kRemote, kKey, 16, 0, 2), 0);
    ASSERT_EQ(drv.asked.size(), 6u);
    EXPECT_EQ(drv.asked[5].scope, unsigned(VELO_SCOPE_JOB));
    w = written();
    ASSERT_EQ(w.size(), 1u);
    post(VELO_RMA_NQ_KIND_REMOTE_CPL, w[0], VELO_RMA_OP_PUT, 2, 16);
    drain();
    for (velo_region_t* h : {owner, peer, peer2, box, peer_again}) EXPECT_EQ(velo_deregister(h), 0);
}

// Scope lists: the boxes go to the driver as given (single fields and boxes beyond nboxes 0),
// velo_region_scope returns the list the driver answered, the cache shares a registration only
// with the same list in the same order, E2BIG from the driver comes back with a text naming the
// NIC's 4 boxes, a list of 0 or 17 boxes never reaches the driver, and a driver answer that is
// no list of 1..4 non-empty boxes is refused (-EPROTO, the registration given back).
TEST_F(Rma, ScopeListsGoToTheDriverAndComeBack) {
    const uintptr_t a = 0x500000;
    velo_scope_t l{};
    l.kind = VELO_SCOPE_LIST;
    l.node_lo = 77;  // ignored for a LIST
    l.nboxes = 2;
    l.boxes[0] = velo_scope_box_t{3, 3, 12, 12};
    l.boxes[1] = velo_scope_box_t{7, 7, 20, 20};
    l.boxes[2] = velo_scope_box_t{1, 1, 1, 1};  // beyond nboxes: ignored
    velo_region_t *h1, *h2, *h3, *h4;
    ASSERT_EQ(velo_register(ep, reinterpret_cast<const void*>(a), 4096, VELO_ACCESS_ALL, &l, &h1), 0);
    ASSERT_EQ(drv.asked.size(), 1u);
    const velo_uapi_register& g = drv.asked[0];
    EXPECT_EQ(g.scope, unsigned(VELO_SCOPE_LIST));
    EXPECT_EQ(g.nboxes, 2u);
    EXPECT_EQ(g.node_lo | g.node_hi | g.vpid_lo | g.vpid_hi, 0);
    EXPECT_EQ(g.boxes[0].node_lo, 3);
    EXPECT_EQ(g.boxes[0].vpid_hi, 12);
    EXPECT_EQ(g.boxes[1].node_hi, 7);
    EXPECT_EQ(g.boxes[1].vpid_lo, 20);
    EXPECT_EQ(g.boxes[2].node_lo | g.boxes[2].vpid_lo, 0) << "a box past nboxes is not passed";
    velo_scope_t b;
    ASSERT_EQ(velo_region_scope(h1, &b), 0);
    EXPECT_EQ(b.kind, unsigned(VELO_SCOPE_LIST));
    EXPECT_EQ(b.nboxes, 2u);
    EXPECT_EQ(b.node_lo, 3);
    EXPECT_EQ(b.vpid_hi, 12);
    EXPECT_EQ(b.boxes[1].node_lo, 7);
    EXPECT_EQ(b.boxes[1].vpid_hi, 20);
    EXPECT_EQ(b.boxes[2].node_lo | b.boxes[2].node_hi | b.boxes[2].vpid_lo | b.boxes[2].vpid_hi, 0);
    // the same list (ignored fields differ): a hit; the boxes in another order, another list, or
    // the first box alone as a BOX: registrations of their own
    velo_scope_t same = l;
    same.node_lo = 0;
    same.boxes[2] = velo_scope_box_t{};
    ASSERT_EQ(velo_register(ep, reinterpret_cast<const void*>(a + 64), 64, VELO_ACCESS_LOCAL_READ, &same, &h2), 0);
    EXPECT_EQ(drv.asked.size(), 1u);
    velo_scope_t swapped = l;
    std::swap(swapped.boxes[0], swapped.boxes[1]);
    ASSERT_EQ(velo_register(ep, reinterpret_cast<const void*>(a), 4096, VELO_ACCESS_ALL, &swapped, &h3), 0);
    EXPECT_EQ(drv.asked.size(), 2u);
    const velo_scope_t one = {VELO_SCOPE_BOX, 3, 3, 12, 12, 0, {}};
    ASSERT_EQ(velo_register(ep, reinterpret_cast<const void*>(a), 4096, VELO_ACCESS_ALL, &one, &h4), 0);
    EXPECT_EQ(drv.asked.size(), 3u);
    ASSERT_EQ(velo_region_scope(h4, &b), 0);
    EXPECT_EQ(b.kind, unsigned(VELO_SCOPE_BOX));
    EXPECT_EQ(b.nboxes, 1u);
    EXPECT_EQ(b.boxes[0].node_lo, 3);
    uint32_t k1 = 0, k2 = 0, k3 = 0;
    ASSERT_EQ(velo_region_rkey(h1, &k1), 0);
    ASSERT_EQ(velo_region_rkey(h2, &k2), 0);
    ASSERT_EQ(velo_region_rkey(h3, &k3), 0);
    EXPECT_EQ(k1, k2);
    EXPECT_NE(k1, k3);
    for (velo_region_t* h : {h1, h2, h3, h4}) EXPECT_EQ(velo_deregister(h), 0);
    // five boxes: the driver's E2BIG, with a text that says what the NIC holds
    velo_scope_t five{};
    five.kind = VELO_SCOPE_LIST;
    five.nboxes = 5;
    for (unsigned i = 0; i < 5; ++i) five.boxes[i] = velo_scope_box_t{uint8_t(2 * i), uint8_t(2 * i), 1, 1};
    velo_region_t* h = nullptr;
    EXPECT_EQ(velo_register(ep, reinterpret_cast<const void*>(a), 4096, VELO_ACCESS_ALL, &five, &h), -E2BIG);
    EXPECT_EQ(h, nullptr);
    EXPECT_EQ(drv.asked.size(), 4u);
    EXPECT_EQ(drv.asked.back().nboxes, 5u);
    EXPECT_NE(std::strstr(velo_strerror(-E2BIG), "4 boxes the NIC holds per region"), nullptr);
    // no boxes, too many: refused here
    five.nboxes = 0;
    EXPECT_EQ(velo_register(ep, reinterpret_cast<const void*>(a), 4096, VELO_ACCESS_ALL, &five, &h), -EINVAL);
    five.nboxes = VELO_SCOPE_MAX_BOXES + 1;
    EXPECT_EQ(velo_register(ep, reinterpret_cast<const void*>(a), 4096, VELO_ACCESS_ALL, &five, &h), -EINVAL);
    EXPECT_EQ(drv.asked.size(), 4u);
    // a driver answer that is no list the NIC can hold: -EPROTO, given back
    for (unsigned bad = 1; bad <= 3; ++bad) {
        drv.bad_out = bad;
        const size_t before = drv.deregistered.size();
        EXPECT_EQ(velo_register(ep, reinterpret_cast<const void*>(a + bad * 8192), 64, VELO_ACCESS_ALL, &l, &h),
                  -EPROTO)
            << bad;
        EXPECT_EQ(h, nullptr);
        EXPECT_EQ(drv.deregistered.size(), before + 1) << bad;
    }
    drv.bad_out = 0;
    EXPECT_TRUE(drv.regs.empty());
}

// A driver whose NLA does not carry the key's bits 7:0 is of another ABI: the registration is
// given back and the caller gets -EPROTO.
TEST_F(Rma, DriverHandleNotMatchingItsKeyIsRefused) {
    drv.bad_nla_key = true;
    velo_region_t* h = nullptr;
    EXPECT_EQ(velo_register(ep, reinterpret_cast<const void*>(0x100000), 64, VELO_ACCESS_ALL, nullptr, &h), -EPROTO);
    EXPECT_EQ(h, nullptr);
    EXPECT_EQ(drv.registered.size(), 1u);
    EXPECT_EQ(drv.deregistered.size(), 1u);
    EXPECT_TRUE(drv.regs.empty());
}

TEST_F(Rma, ClosedEndpoint) {
    velo_region_t* r = reg(0x100000, 4096);
    ASSERT_EQ(velo_close(ep), 0);
    velo_rma_cpl_t c;
    EXPECT_EQ(velo_put(ep, kDst, r, 0, kRemote, kKey, 1, 0, 0), -EBADF);
    EXPECT_EQ(velo_rma_poll(ep, &c), -EBADF);
    velo_region_t* h = nullptr;
    EXPECT_EQ(velo_register(ep, cmd, 1, VELO_ACCESS_ALL, nullptr, &h), -EBADF);
    EXPECT_EQ(velo_deregister(r), -EBADF);  // the handle is released
    ep = nullptr;
}

TEST(RmaNoUnit, BackendWithoutRmaIsNotSupported) {
    velo_ep_t* ep = nullptr;
    ASSERT_EQ(velo__mock_open(&ep, 0, 1, 8), 0);  // no RMA mapping: like a NIC without an RMA unit
    velo_region_t* h = nullptr;
    uint8_t buf[64];
    EXPECT_EQ(velo_register(ep, buf, sizeof buf, VELO_ACCESS_ALL, nullptr, &h), -ENOTSUP);
    EXPECT_EQ(velo_put_buf(ep, {1, 1}, buf, 0, 0, sizeof buf, 0, 0), -ENOTSUP);
    velo_rma_cpl_t c;
    EXPECT_EQ(velo_rma_poll(ep, &c), -ENOTSUP);
    EXPECT_EQ(velo_close(ep), 0);
}

// ============================================================================ C++ layer
TEST_F(Rma, CxxRegionAndTransfers) {
    velo::Endpoint e = velo::Endpoint::adopt(ep);
    ep = nullptr;  // the Endpoint closes it
    {
        velo::Region r = e.region(reinterpret_cast<const void*>(0x100000), 4096, VELO_ACCESS_LOCAL_READ);
        EXPECT_EQ(r.nla(10), drv.registered.back() + 10);
        EXPECT_THROW(r.nla(5000), velo::Error);
        EXPECT_TRUE(e.put(kDst, r, 0, velo::RemoteRegion{kRemote, kKey}, 64, VELO_RMA_F_REMOTE, 11));
        const unsigned k = written()[0];
        take(k);
        EXPECT_THROW(e.get(kDst, r, 0, velo::RemoteRegion{kRemote, kKey}, 64), velo::Error);  // no LOCAL_WRITE
        velo::RmaCompletion c{};
        EXPECT_FALSE(e.rma_poll(c));
        post(VELO_RMA_NQ_KIND_REMOTE_CPL, k, VELO_RMA_OP_PUT, 11);
        ASSERT_TRUE(e.rma_wait(c, std::chrono::milliseconds(100)));
        EXPECT_EQ(c.kind, unsigned(VELO_RMA_KIND_REMOTE));
        EXPECT_EQ(c.cookie, 11u);
        velo::Region moved = std::move(r);
        EXPECT_FALSE(r);
        EXPECT_TRUE(moved);
        // what a peer needs: the NLA and the key of the same registration; the scope as asked
        velo::Region p = e.region(reinterpret_cast<const void*>(0x200000), 4096, VELO_ACCESS_REMOTE_WRITE,
                                  velo::scope_peer(velo_addr_t{5, 6}));
        const velo::RemoteRegion rr = p.remote(100);
        EXPECT_EQ(rr.nla, drv.registered.back() + 100);
        EXPECT_EQ(rr.key, p.key());
        EXPECT_EQ(VELO_FIELD_GET(VELO_RMA_NLA_KEY, rr.nla), rr.key & 0xFF);
        EXPECT_EQ(drv.asked.back().scope, unsigned(VELO_SCOPE_PEER));
        EXPECT_EQ(drv.asked.back().node_lo, 5);
        EXPECT_EQ(drv.asked.back().vpid_lo, 6);
        const velo::Scope b = p.scope();
        EXPECT_EQ(b.kind, unsigned(VELO_SCOPE_BOX));
        EXPECT_EQ(b.node_hi, 5);
        EXPECT_EQ(b.vpid_hi, 6);
        // a list of peers
        const std::vector<velo_addr_t> peers{{2, 3}, {4, 5}};
        velo::Region q =
            e.region(reinterpret_cast<const void*>(0x300000), 4096, VELO_ACCESS_REMOTE_WRITE, velo::scope_peers(peers));
        EXPECT_EQ(drv.asked.back().scope, unsigned(VELO_SCOPE_LIST));
        ASSERT_EQ(drv.asked.back().nboxes, 2u);
        EXPECT_EQ(drv.asked.back().boxes[1].node_lo, 4);
        EXPECT_EQ(drv.asked.back().boxes[1].node_hi, 4);
        EXPECT_EQ(drv.asked.back().boxes[1].vpid_lo, 5);
        EXPECT_EQ(drv.asked.back().boxes[1].vpid_hi, 5);
        const velo::Scope qs = q.scope();
        EXPECT_EQ(qs.kind, unsigned(VELO_SCOPE_LIST));
        EXPECT_EQ(qs.nboxes, 2u);
        const std::vector<velo_addr_t> many(VELO_SCOPE_MAX_BOXES + 1, velo_addr_t{1, 1});
        EXPECT_THROW(velo::scope_peers(many), std::system_error);
        EXPECT_THROW(e.put(kDst, moved, 0, velo::RemoteRegion{kRemote, kKey ^ 1u}, 8),
                     velo::Error);  // NLA/key mismatch
    }
    EXPECT_EQ(drv.deregistered.size(), 3u) << "the destructor deregisters";
}
