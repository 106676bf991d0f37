// Unit tests of the host models themselves (no RTL), built with ASan and UBSan: the checkers the
// RTL benches rely on must catch what they claim to catch.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "host.hpp"
#include "tlp.hpp"
#include "velo/velo_hw.h"

using namespace velo::sim;

TEST(Model, TlpHeaderRoundTrip) {
    auto r = test_rng();
    for (int i = 0; i < 2000; ++i) {
        Tlp t;
        t.fmt_type = (r() & 1) ? VELO_TLP_FMT_TYPE_MWR64 : VELO_TLP_FMT_TYPE_MWR32;
        t.len_dw = static_cast<uint16_t>(r() % 1024);
        t.first_be = static_cast<uint8_t>(r() & 15);
        t.last_be = static_cast<uint8_t>(r() & 15);
        t.tag = static_cast<uint8_t>(r());
        t.req_id = static_cast<uint16_t>(r());
        t.addr = (t.fmt_type == VELO_TLP_FMT_TYPE_MWR64 ? r() : (r() & 0xFFFFFFFFull)) & ~3ull;
        uint32_t dw[4];
        t.encode(dw);
        Tlp u = Tlp::decode(dw);
        EXPECT_EQ(u.fmt_type, t.fmt_type);
        EXPECT_EQ(u.len_dw, t.len_dw);
        EXPECT_EQ(u.first_be, t.first_be);
        EXPECT_EQ(u.last_be, t.last_be);
        EXPECT_EQ(u.tag, t.tag);
        EXPECT_EQ(u.req_id, t.req_id);
        EXPECT_EQ(u.addr, t.addr);
    }
    Tlp c;
    c.fmt_type = VELO_TLP_FMT_TYPE_CPLD;
    c.cpl_id = 0x1234;
    c.cpl_status = VELO_TLP_CPL_UR;
    c.byte_count = 0xABC;
    c.lower_addr = 0x55;
    c.tag = 9;
    c.req_id = 0x4321;
    uint32_t dw[4];
    c.encode(dw);
    Tlp d = Tlp::decode(dw);
    EXPECT_EQ(d.cpl_id, 0x1234);
    EXPECT_EQ(d.cpl_status, VELO_TLP_CPL_UR);
    EXPECT_EQ(d.byte_count, 0xABC);
    EXPECT_EQ(d.lower_addr, 0x55);
    EXPECT_EQ(d.tag, 9);
    EXPECT_EQ(d.req_id, 0x4321);
}

TEST(Model, MwrByteEnables) {
    // 5 bytes at offset 3: DWs 0..1, first BE 1000, last BE 1111
    Tlp t = Tlp::mwr(0x1003, {1, 2, 3, 4, 5}, 2);
    EXPECT_EQ(t.addr, 0x1000u);
    EXPECT_EQ(t.len_dw, 2);
    EXPECT_EQ(t.first_be, 0x8);
    EXPECT_EQ(t.last_be, 0xF);
    auto b = mwr_bytes(t);
    ASSERT_EQ(b.size(), 5u);
    EXPECT_EQ(b[0].first, 0x1003u);
    EXPECT_EQ(b[4].first, 0x1007u);
    EXPECT_EQ(b[4].second, 5);
    Tlp one = Tlp::mwr(0x2001, {7, 8}, 2);
    EXPECT_EQ(one.len_dw, 1);
    EXPECT_EQ(one.first_be, 0x6);
    EXPECT_EQ(one.last_be, 0);
}

TEST(Model, HostMemKeepsTlpOrderButNotLineOrder) {
    // lines of one TLP appear in varying order; a later TLP never before an earlier one
    bool saw_line1_first = false, saw_line0_first = false;
    for (uint64_t seed = 1; seed < 200; ++seed) {
        HostMem m(seed);
        m.max_delay = 2;
        std::vector<uint8_t> two_lines(128, 0xAA);
        m.post(Tlp::mwr(0x10000, two_lines, 0));
        m.post(Tlp::mwr(0x20000, {0xBB, 0xBB, 0xBB, 0xBB}, 0));
        bool first_done = false;
        for (int c = 0; c < 100 && !m.idle(); ++c) {
            m.step();
            bool l0 = m.read8(0x10000) == 0xAA, l1 = m.read8(0x10040) == 0xAA;
            if (l0 && !l1) saw_line0_first = true;
            if (l1 && !l0) saw_line1_first = true;
            if (m.read8(0x20000) == 0xBB) {
                EXPECT_TRUE(first_done || (l0 && l1)) << "later TLP overtook";
            }
            if (l0 && l1) first_done = true;
        }
        EXPECT_TRUE(m.idle());
    }
    EXPECT_TRUE(saw_line0_first);
    EXPECT_TRUE(saw_line1_first);
}

TEST(Model, MailboxReaderCatchesATornEntry) {
    HostMem m(1);
    const uint64_t base = 0x100000;
    // a 2-line entry whose first line is visible but whose second is not: torn
    uint64_t h = VELO_FIELD_PREP(VELO_MBOX_HDR_PHASE, 1) | VELO_FIELD_PREP(VELO_MBOX_HDR_LINES, 2) |
                 VELO_FIELD_PREP(VELO_MBOX_HDR_MSG_LEN_M1, 63) | VELO_FIELD_PREP(VELO_MBOX_HDR_FRAG_LEN_M1, 63) |
                 VELO_FIELD_PREP(VELO_MBOX_HDR_TYPE, VELO_PKT_TYPE_VELO);
    uint8_t hb[8];
    for (int i = 0; i < 8; ++i) hb[i] = static_cast<uint8_t>(h >> (8 * i));
    m.write(base, hb, 8);
    MailboxReader rd(m, base, 3);
    MboxEntry e;
    EXPECT_TRUE(rd.poll(e));
    EXPECT_FALSE(rd.errors.empty()) << "a torn two-line entry must be reported";
    // the same entry, second line present: clean
    HostMem m2(1);
    m2.write(base, hb, 8);
    uint64_t t = h | VELO_FIELD_PREP(VELO_MBOX_HDR_TAIL, 1);
    for (int i = 0; i < 8; ++i) hb[i] = static_cast<uint8_t>(t >> (8 * i));
    m2.write(base + 64, hb, 8);
    MailboxReader rd2(m2, base, 3);
    EXPECT_TRUE(rd2.poll(e));
    EXPECT_TRUE(rd2.errors.empty());
    EXPECT_EQ(rd2.rp(), 2u);
    EXPECT_FALSE(rd2.poll(e)) << "nothing more";
}

TEST(Model, RecombinerAndScoreboard) {
    Recombiner rc;
    Scoreboard sb;
    Msg want;
    want.src_node = 3;
    want.src_vpid = 4;
    want.dst_node = 9;
    want.dst_vpid = 5;
    for (int i = 0; i < 20; ++i) want.bytes.push_back(static_cast<uint8_t>(i + 1));
    sb.expect(want);
    auto frag = [&](unsigned off, unsigned len) {
        MboxEntry e;
        e.hdr = VELO_FIELD_PREP(VELO_MBOX_HDR_SRC_NODE, 3) | VELO_FIELD_PREP(VELO_MBOX_HDR_SRC_VPID, 4) |
                VELO_FIELD_PREP(VELO_MBOX_HDR_DST_VPID, 5) | VELO_FIELD_PREP(VELO_MBOX_HDR_MSG_LEN_M1, 19) |
                VELO_FIELD_PREP(VELO_MBOX_HDR_FRAG_OFF, off) | VELO_FIELD_PREP(VELO_MBOX_HDR_FRAG_LEN_M1, len - 1) |
                VELO_FIELD_PREP(VELO_MBOX_HDR_FRAG, 1);
        e.area.assign(off % 4, 0xEE);
        for (unsigned i = 0; i < len; ++i) e.area.push_back(want.bytes[off + i]);
        return e;
    };
    Msg m;
    EXPECT_FALSE(rc.add(9, frag(13, 7), m));
    EXPECT_FALSE(rc.add(9, frag(0, 8), m));
    EXPECT_TRUE(rc.add(9, frag(8, 5), m));
    sb.deliver(m);
    EXPECT_TRUE(sb.errors.empty());
    EXPECT_TRUE(rc.errors.empty());
    EXPECT_EQ(sb.outstanding(), 0u);
    // a duplicate is caught, and so is a message nobody sent
    sb.deliver(m);
    EXPECT_EQ(sb.errors.size(), 1u);
    EXPECT_FALSE(rc.add(9, frag(0, 8), m));
    EXPECT_FALSE(rc.add(9, frag(4, 8), m));
    EXPECT_FALSE(rc.errors.empty()) << "overlapping fragments must be reported";
}

TEST(Model, WcFlushCoversTheMessage) {
    auto r = test_rng();
    for (int i = 0; i < 500; ++i) {
        unsigned len = 1 + static_cast<unsigned>(r() % 64);
        std::vector<uint8_t> msg(len);
        for (auto& b : msg) b = static_cast<uint8_t>(r());
        WcMode mode = static_cast<WcMode>(r() % 5);
        uint64_t off = send_offset(8, 8, 1, 2, 3, len);
        std::vector<bool> have(len, false);
        for (auto& t : wc_flush(0x4000000000ull, off, msg, mode, r)) {
            EXPECT_LE(t.len_dw, 16);
            EXPECT_GE(entry_lines(t), 1u);
            for (auto& [a, v] : mwr_bytes(t)) {
                uint64_t o = a - 0x4000000000ull - off;
                ASSERT_LT(o, 64u);
                if (o < len) {
                    EXPECT_EQ(v, msg[o]);
                    have[o] = true;
                }
            }
        }
        for (unsigned k = 0; k < len; ++k) EXPECT_TRUE(have[k]) << "byte " << k << " never written";
    }
}

TEST(Model, HostReaderAnswersReadsAtRcbBoundaries) {
    auto r = test_rng();
    HostMem mem(1);
    std::vector<uint8_t> img(3 * 4096);
    for (auto& b : img) b = static_cast<uint8_t>(r());
    const uint64_t base = 0x1'2345'6000ull;
    mem.write(base, img.data(), img.size());
    HostReader hr(mem, 2);
    hr.latency_min = 5;
    hr.latency_max = 40;
    hr.gap_max = 3;
    hr.mps = 128;
    hr.ur_pct = 10;
    hr.drop_pct = 5;
    struct Rd {
        uint64_t start, end;
        std::vector<uint8_t> got;
        uint64_t next;
        bool ended = false, failed = false;
    };
    std::map<uint8_t, Rd> open;  // by tag
    uint64_t now = 0, ended = 0, issued = 0, good_bytes = 0;
    uint8_t tag = 0;
    while (issued < 400 || !hr.idle()) {
        if (issued < 400 && open.size() < 8 && pct(r, 30)) {
            // a read of 1..4096 bytes inside one page, any byte alignment
            uint64_t page = base + 4096ull * static_cast<uint64_t>(rnd(r, 3));
            unsigned off = static_cast<unsigned>(rnd(r, 4096));
            unsigned len = 1 + static_cast<unsigned>(rnd(r, static_cast<int>(4096 - off)));
            uint64_t a = page + off, e = a + len;
            uint64_t a0 = a & ~3ull, a1 = (e + 3) & ~3ull;
            unsigned ndw = static_cast<unsigned>((a1 - a0) / 4);
            uint8_t fbe = static_cast<uint8_t>((0xF << (a & 3)) & 0xF), lbe = static_cast<uint8_t>(0xF >> (a1 - e));
            if (ndw == 1) fbe &= lbe;
            while (open.count(tag)) ++tag;
            Tlp m = Tlp::mrd(a0, ndw & 0x3FF, tag, 0, fbe, lbe);
            ASSERT_TRUE(hr.request(m, now));
            open[tag] = Rd{a, e, {}, a};
            ++issued;
        }
        Tlp c;
        if (hr.pop(now, c)) {
            ASSERT_TRUE(open.count(c.tag)) << "completion for a tag not outstanding";
            Rd& d = open[c.tag];
            ASSERT_FALSE(d.ended);
            EXPECT_EQ(c.lower_addr, d.next & 0x7F);
            EXPECT_EQ(c.byte_count ? c.byte_count : 4096u, d.end - d.next);
            if (c.cpl_status != VELO_TLP_CPL_SC) {
                EXPECT_EQ(c.fmt_type, VELO_TLP_FMT_TYPE_CPL);
                d.ended = d.failed = true;
            } else {
                unsigned n = cpl_bytes(c);
                ASSERT_GT(n, 0u);
                EXPECT_LE(c.payload.size(), 128u);
                uint64_t e = d.next + n;
                if (e != d.end) {
                    EXPECT_EQ(e % 64, 0u) << "a completion other than the last must end at an RCB boundary";
                }
                for (unsigned i = 0; i < n; ++i)
                    EXPECT_EQ(c.payload[(d.next & 3) + i], img[d.next + i - base]) << "byte at " << d.next + i;
                d.next = e;
                good_bytes += n;
                if (e == d.end) d.ended = true;
            }
            if (d.ended) {
                open.erase(c.tag);
                ++ended;
            }
        }
        // a dropped read never ends: forget it once the host has nothing more for it
        for (auto it = open.begin(); it != open.end();) {
            auto t = hr.pending_tags();
            if (std::find(t.begin(), t.end(), it->first) == t.end() && !it->second.ended) {
                it = open.erase(it);
                continue;
            }
            ++it;
        }
        ++now;
    }
    EXPECT_EQ(hr.reads, 400u);
    EXPECT_EQ(hr.sc_bytes, good_bytes);
    EXPECT_GT(hr.faults, 0u);
    EXPECT_LT(ended, 400u);
    EXPECT_TRUE(hr.errors.empty());
}
