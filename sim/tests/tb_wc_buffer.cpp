// Unit tests of the write-combining buffer model (sim/model/wc_buffer.hpp), part of tb_model:
// what leaves for the NIC is exactly the bytes stored, as few writes as the line's stores allow,
// in the order the CPU would drain them.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "harness.hpp"
#include "wc_buffer.hpp"

using velo::sim::WcBuffers;

namespace {
struct Out {
    uint64_t addr;
    std::vector<uint8_t> b;
};
struct Rig {
    std::vector<Out> out;
    std::function<bool(uint64_t, uint64_t)> complete;
    WcBuffers wc;
    explicit Rig(unsigned n = 4, int64_t timeout = 1000)
        : wc(
              n, timeout,
              [this](uint64_t a, const uint8_t* p, size_t k) {
                  out.push_back({a, {p, p + k}});
              },
              [this](uint64_t l, uint64_t m) { return complete ? complete(l, m) : false; }) {}
    void q(uint64_t a, uint64_t v, unsigned n = 8, int64_t t = 0) {
        uint8_t b[8];
        for (unsigned i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
        wc.store(a, b, n, t);
    }
};
}  // namespace

TEST(WcBuffer, FullLineIsOneWrite) {
    Rig r;
    for (unsigned i = 0; i < 8; ++i) r.q(0x1000 + 8 * i, 0x0101010101010101ull * i);
    ASSERT_EQ(r.out.size(), 1u);
    EXPECT_EQ(r.out[0].addr, 0x1000u);
    ASSERT_EQ(r.out[0].b.size(), 64u);
    for (unsigned i = 0; i < 64; ++i) EXPECT_EQ(r.out[0].b[i], i / 8);
    EXPECT_TRUE(r.wc.empty());
    EXPECT_EQ(r.wc.full_lines, 1u);
}

TEST(WcBuffer, CompleteRuleFlushesTheLineAtOnce) {
    Rig r;
    r.complete = [](uint64_t, uint64_t m) { return (m & 0xFFFFull) == 0xFFFFull; };
    r.q(0x2000, 1);
    EXPECT_TRUE(r.out.empty());
    r.q(0x2008, 2);
    ASSERT_EQ(r.out.size(), 1u);
    EXPECT_EQ(r.out[0].b.size(), 16u);
    EXPECT_EQ(r.out[0].b[0], 1);
    EXPECT_EQ(r.out[0].b[8], 2);
}

TEST(WcBuffer, HolesLeaveAsOneWritePerRunInAddressOrder) {
    Rig r;
    r.q(0x3010, 0xAA, 1);
    r.q(0x3000, 0x1111, 2);
    r.q(0x3011, 0xBB, 1);
    r.q(0x3030, 0xCCCCCCCC, 4);
    EXPECT_TRUE(r.out.empty());
    r.wc.flush_all();
    ASSERT_EQ(r.out.size(), 3u);
    EXPECT_EQ(r.out[0].addr, 0x3000u);
    EXPECT_EQ(r.out[0].b.size(), 2u);
    EXPECT_EQ(r.out[1].addr, 0x3010u);
    EXPECT_EQ(r.out[1].b, (std::vector<uint8_t>{0xAA, 0xBB}));
    EXPECT_EQ(r.out[2].addr, 0x3030u);
    EXPECT_EQ(r.out[2].b.size(), 4u);
    EXPECT_EQ(r.wc.writes, 3u);
}

TEST(WcBuffer, LaterStoreToTheSameBytesWins) {
    Rig r;
    r.q(0x4000, 0x1111111111111111ull);
    r.q(0x4004, 0x22222222, 4);
    r.wc.flush_all();
    ASSERT_EQ(r.out.size(), 1u);
    EXPECT_EQ(r.out[0].b, (std::vector<uint8_t>{0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x22, 0x22}));
    EXPECT_EQ(r.wc.merged_overwrites, 1u);
}

TEST(WcBuffer, StoreAcrossALineBoundaryIsTwoLines) {
    Rig r;
    r.q(0x503C, 0x0807060504030201ull);
    r.wc.flush_all();
    ASSERT_EQ(r.out.size(), 2u);
    EXPECT_EQ(r.out[0].addr, 0x503Cu);
    EXPECT_EQ(r.out[0].b, (std::vector<uint8_t>{1, 2, 3, 4}));
    EXPECT_EQ(r.out[1].addr, 0x5040u);
    EXPECT_EQ(r.out[1].b, (std::vector<uint8_t>{5, 6, 7, 8}));
}

TEST(WcBuffer, AllBuffersTakenEvictsTheOldest) {
    Rig r(2);
    r.q(0x6000, 1);
    r.q(0x6040, 2);
    EXPECT_TRUE(r.out.empty());
    r.q(0x6080, 3);  // evicts 0x6000
    ASSERT_EQ(r.out.size(), 1u);
    EXPECT_EQ(r.out[0].addr, 0x6000u);
    r.q(0x6048, 4);  // 0x6040 is still buffered: combines
    EXPECT_EQ(r.out.size(), 1u);
    r.wc.flush_all();
    ASSERT_EQ(r.out.size(), 3u);
    EXPECT_EQ(r.out[1].addr, 0x6040u);
    EXPECT_EQ(r.out[1].b.size(), 16u);
    EXPECT_EQ(r.out[2].addr, 0x6080u);
    EXPECT_EQ(r.wc.evictions, 1u);
}

TEST(WcBuffer, TimeoutFlushesOnlyLinesWithoutRecentStores) {
    Rig r(4, 100);
    r.q(0x7000, 1, 8, 0);
    r.q(0x7040, 2, 8, 50);
    r.q(0x7008, 3, 8, 60);  // the first line's timeout restarts
    EXPECT_EQ(r.wc.deadline(), 150);
    r.wc.flush_expired(149);
    EXPECT_TRUE(r.out.empty());
    r.wc.flush_expired(150);
    ASSERT_EQ(r.out.size(), 1u);
    EXPECT_EQ(r.out[0].addr, 0x7040u);
    EXPECT_EQ(r.wc.deadline(), 160);
    r.wc.flush_expired(160);
    ASSERT_EQ(r.out.size(), 2u);
    EXPECT_EQ(r.out[1].addr, 0x7000u);
    EXPECT_EQ(r.out[1].b.size(), 16u);
    EXPECT_EQ(r.wc.timeouts, 2u);
    EXPECT_TRUE(r.wc.empty());
}

TEST(WcBuffer, BadArgumentsThrow) {
    auto emit = [](uint64_t, const uint8_t*, size_t) {};
    EXPECT_THROW(WcBuffers(0, 1, emit, nullptr), std::invalid_argument);
    EXPECT_THROW(WcBuffers(65, 1, emit, nullptr), std::invalid_argument);
    EXPECT_THROW(WcBuffers(1, -1, emit, nullptr), std::invalid_argument);
    EXPECT_THROW(WcBuffers(1, 1, nullptr, nullptr), std::invalid_argument);
    Rig r;
    uint8_t b[9] = {};
    EXPECT_THROW(r.wc.store(0, b, 0, 0), std::invalid_argument);
    EXPECT_THROW(r.wc.store(0, b, 9, 0), std::invalid_argument);
}

// Seeded random stores over a few lines, drained at random: the bytes that leave, replayed in
// order into a memory, equal the stores replayed in order; no write crosses a line or is empty;
// every flushed line's runs are maximal (no two writes of one flush touch).
TEST(WcBuffer, RandomStoresReachTheDeviceExactly) {
    auto rng = velo::sim::test_rng();
    for (int round = 0; round < 200; ++round) {
        Rig r(1 + rng() % 6, 1000);
        std::map<uint64_t, uint8_t> want, got;
        int64_t t = 0;
        for (int i = 0; i < 100; ++i) {
            const unsigned n = 1 + rng() % 8;
            const uint64_t a = 0x10000 + rng() % 256;
            uint64_t v = rng();
            for (unsigned k = 0; k < n; ++k) want[a + k] = static_cast<uint8_t>(v >> (8 * k));
            r.q(a, v, n, t);
            t += static_cast<int64_t>(rng() % 300);
            if (rng() % 10 == 0) r.wc.flush_expired(t);
            if (rng() % 25 == 0) r.wc.flush_all();
        }
        r.wc.flush_all();
        for (const auto& o : r.out) {
            ASSERT_FALSE(o.b.empty());
            ASSERT_LE(o.b.size(), 64u);
            ASSERT_EQ(o.addr >> 6, (o.addr + o.b.size() - 1) >> 6) << "a write crosses a line";
            for (size_t k = 0; k < o.b.size(); ++k) got[o.addr + k] = o.b[k];
        }
        ASSERT_EQ(got, want) << "round " << round;
    }
}
