// velo_rma_notify: notification queue writer. The bench plays the register file (queue table RAM
// with a one-cycle read, write pointer updates, software writes), host memory (checks every DMA
// write) and the readers (poll their rings with the phase rule, return space through NQ_RP).
//
// Vnq64 / Vnq128: TLP_W 64 and 128 (VPID_BITS 4 to keep the table small).
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <vector>

#include "Vnq128.h"
#include "Vnq128_params.h"
#include "Vnq64.h"
#include "Vnq64_params.h"
#include "harness.hpp"
#include "tlp.hpp"
#include "velo/velo_hw.h"

using velo::sim::Harness;
using velo::sim::pct;
using velo::sim::rnd;
using velo::sim::test_rng;
using velo::sim::Tlp;
using velo::sim::Words;
using velo::sim::words;

namespace {

// vpids of both models (VPID_BITS, sim/cmake/rma.cmake)
constexpr unsigned kVpids = 1u << velo::sim::ModelParams<Vnq64>::VPID_BITS;
static_assert(velo::sim::ModelParams<Vnq128>::VPID_BITS == velo::sim::ModelParams<Vnq64>::VPID_BITS,
              "one vpid table size for both models");

struct Queue {
    uint64_t base = 0;  // bytes, 64-byte aligned
    bool en = false;
    unsigned log2 = 1;
    uint32_t wp = 0, rp = 0;                 // the register file's pointers (17-bit free-running)
    uint32_t rd = 0;                         // the reader's own pointer; written to rp by a software write
    std::deque<std::vector<uint64_t>> sent;  // entries accepted for this vpid, in order, not yet read
    uint64_t read = 0;
};

struct Entry {
    unsigned vpid;
    std::vector<uint64_t> w;
};

template <class M>
class Tb {
  public:
    Harness<M> h;
    unsigned R;
    std::mt19937_64 rng;
    Queue q[kVpids];
    std::map<uint64_t, uint8_t> mem;
    // pending table read: the row (as read: old data if written in the read's cycle)
    bool rd_pend = false;
    Queue row;
    uint64_t entries_ev = 0, drops_ev = 0, bp_ev = 0, cmt = 0, tlps = 0;
    std::deque<Entry> in;  // entries to offer, in order
    std::vector<Tlp> writes;
    std::vector<uint64_t> beats;
    Tlp cur;
    bool in_tlp = false;
    int tx_ready_pct = 100;

    Tb(unsigned tlp_w) : R(tlp_w / 64), rng(test_rng()) {
        h->n_valid = 0;
        h->tx_ready = 1;
        h->sw_wr = 0;
        h->req_id = 0x0100;
        h->q_vpid = 0;
        h.reset();
    }

    void present_table() {
        if (rd_pend) {
            const Queue& x = row;
            h->tbl_base = x.base >> 6;
            h->tbl_en = x.en;
            h->tbl_log2 = x.log2;
            h->tbl_wp = x.wp;
            h->tbl_rp = x.rp;
        } else {
            // anything: the unit must not look at the outputs without a read
            h->tbl_base = rng() & ((1ull << 58) - 1);
            h->tbl_en = rng() & 1;
            h->tbl_log2 = rnd(rng, 32);
            h->tbl_wp = rnd(rng, 1 << 17);
            h->tbl_rp = rnd(rng, 1 << 17);
        }
    }

    // One cycle. sw: a read pointer update by vpid sv this cycle (the register file's sw_wr).
    void step(int sv = -1) {
        h->n_valid = !in.empty();
        if (!in.empty()) {
            h->n_vpid = in.front().vpid;
            Words e = words(h->n_entry);
            for (int i = 0; i < 4; ++i) e.set64(i, in.front().w[i]);
        }
        h->tx_ready = pct(rng, tx_ready_pct);
        h->sw_wr = sv >= 0;
        h->sw_wr_vpid = sv >= 0 ? sv : 0;
        present_table();
        h.eval();
        // sample
        const bool n_fire = h->n_valid && h->n_ready;
        const bool re = h->tbl_re;
        const unsigned re_v = h->tbl_vpid;
        const bool wp_we = h->wp_we;
        const unsigned wp_v = h->wp_vpid, wp_d = h->wp_data;
        if (h->tx_valid && h->tx_ready) take_beat();
        entries_ev += h->ev_entry;
        drops_ev += h->ev_drop;
        bp_ev += h->ev_backpressure;
        cmt += h->cmt_valid;
        if (n_fire) {
            Entry e = in.front();
            in.pop_front();
            Queue& x = q[e.vpid];
            if (x.en && x.log2 >= VELO_RMA_NQ_LOG2_MIN && x.log2 <= VELO_RMA_NQ_LOG2_MAX) x.sent.push_back(e.w);
        }
        // the table RAM reads old data when written in the same cycle
        if (re) row = q[re_v];
        rd_pend = re;
        h.tick();
        // register file: our write pointer update and the software write land at this edge
        if (wp_we) q[wp_v].wp = wp_d;
        if (sv >= 0) q[sv].rp = q[sv].rd;
    }

    void take_beat() {
        if (h->tx_sop) {
            ASSERT_FALSE(in_tlp);
            uint32_t dw[4];
            Words hw = words(h->tx_hdr);
            for (int i = 0; i < 4; ++i) dw[i] = hw.w[i];
            cur = Tlp::decode(dw);
            beats.clear();
            in_tlp = true;
        }
        ASSERT_TRUE(in_tlp);
        if constexpr (sizeof(h->tx_data) == 8) {
            beats.push_back(h->tx_data);
        } else {
            Words d = words(h->tx_data);
            beats.push_back(d.get64(0));
            beats.push_back(d.get64(1));
        }
        if (h->tx_eop) {
            in_tlp = false;
            ASSERT_EQ(beats.size(), 4u) << "one 32-byte write";
            cur.payload.clear();
            for (uint64_t w : beats)
                for (int b = 0; b < 8; ++b) cur.payload.push_back(static_cast<uint8_t>(w >> (8 * b)));
            check_write(cur);
        }
    }

    void check_write(const Tlp& t) {
        ++tlps;
        EXPECT_TRUE(t.is_mwr());
        EXPECT_EQ(t.len_dw, 8u);
        EXPECT_EQ(t.first_be, 0xF);
        EXPECT_EQ(t.last_be, 0xF);
        EXPECT_EQ(t.req_id, 0x0100);
        EXPECT_EQ(t.is_4dw(), (t.addr >> 32) != 0) << "3DW below 4 GiB, else 4DW";
        EXPECT_EQ(t.addr % 32, 0u) << "inside one line";
        // which ring, which entry
        int v = -1;
        for (unsigned i = 0; i < kVpids; ++i)
            if (q[i].en && t.addr >= q[i].base && t.addr < q[i].base + (32ull << q[i].log2)) v = static_cast<int>(i);
        ASSERT_GE(v, 0) << "write outside every enabled ring: " << std::hex << t.addr;
        Queue& x = q[v];
        const uint64_t idx = (t.addr - x.base) / 32;
        // the NIC writes entry wp (it updated wp one cycle after deciding): it must be free
        const uint32_t size = 1u << x.log2;
        EXPECT_LT((x.wp - 1 - x.rp) & 0x1FFFF, size) << "overwrite of an unread entry";
        EXPECT_EQ(idx, (x.wp - 1) & (size - 1)) << "entries in ring order";
        for (size_t i = 0; i < 32; ++i) mem[t.addr + i] = t.payload[i];
    }

    uint64_t rd64(uint64_t a) const {
        uint64_t v = 0;
        for (int i = 0; i < 8; ++i) {
            auto it = mem.find(a + i);
            v |= static_cast<uint64_t>(it == mem.end() ? 0 : it->second) << (8 * i);
        }
        return v;
    }

    // Reader of vpid v: consume the entries there are (phase rule), compare with what was sent.
    // Returns whether the read pointer moved.
    bool poll(unsigned v, unsigned max) {
        Queue& x = q[v];
        const uint32_t size = 1u << x.log2;
        unsigned n = 0;
        while (n < max) {
            const uint64_t a = x.base + 32ull * (x.rd & (size - 1));
            const uint64_t h0 = rd64(a);
            const unsigned want = ((x.rd >> x.log2) & 1) ^ 1;
            if (VELO_FIELD_GET(VELO_RMA_NQ_HDR_PHASE, h0) != want) break;
            if (x.sent.empty()) {
                ADD_FAILURE() << "entry with the right phase that was never sent (vpid " << v << ")";
                return false;
            }
            const auto& e = x.sent.front();
            EXPECT_EQ(h0 & ~1ull, e[0] & ~1ull) << "header";
            for (int i = 1; i < 4; ++i) EXPECT_EQ(rd64(a + 8 * i), e[i]) << "word " << i;
            x.sent.pop_front();
            x.rd = (x.rd + 1) & 0x1FFFF;
            ++x.read;
            ++n;
        }
        return n > 0;
    }

    void configure(unsigned v, uint64_t base, unsigned log2, bool en, uint32_t ptr = 0) {
        q[v].base = base;
        q[v].log2 = log2;
        q[v].en = en;
        q[v].wp = q[v].rp = q[v].rd = ptr;
        // the ring as earlier passes left it (zeroed when ptr = 0): entries below ptr's index were
        // written in ptr's pass, the others in the pass before
        if (log2 > 16) return;
        const uint32_t size = 1u << log2, pass = ptr >> log2;
        for (uint32_t i = 0; i < size; ++i) {
            for (unsigned b = 0; b < 32; ++b) mem[base + 32ull * i + b] = 0;
            const uint32_t p = i < (ptr & (size - 1)) ? pass : pass - 1;
            if (ptr != 0) mem[base + 32ull * i] = static_cast<uint8_t>((p & 1) ^ 1);
        }
    }
};

std::vector<uint64_t> random_entry(std::mt19937_64& r) {
    uint64_t h = VELO_FIELD_PREP(VELO_RMA_NQ_HDR_KIND, 1 + rnd(r, 5)) |
                 VELO_FIELD_PREP(VELO_RMA_NQ_HDR_ERR, rnd(r, 16)) | VELO_FIELD_PREP(VELO_RMA_NQ_HDR_SLOT, rnd(r, 128)) |
                 VELO_FIELD_PREP(VELO_RMA_NQ_HDR_SLOT_CNT, 1) |
                 VELO_FIELD_PREP(VELO_RMA_NQ_HDR_PEER_NODE, rnd(r, 256)) |
                 VELO_FIELD_PREP(VELO_RMA_NQ_HDR_OP, 1 + rnd(r, 2)) | (r() & 1);  // garbage PHASE in: overwritten
    return {h, r(), r() & 0xFFFFFF, r()};
}

template <class M>
void random_run(unsigned tlp_w, int n) {
    Tb<M> t(tlp_w);
    auto& r = t.rng;
    // rings: small ones (wrap often, fill up), some above 4 GiB, two disabled, one misconfigured
    for (unsigned v = 0; v < kVpids; ++v) {
        const uint64_t base = (pct(r, 50) ? 0x1'0000'0000ull : 0) + 0x100000ull * (v + 1) + 64ull * rnd(r, 1000);
        const unsigned log2 = v < 8 ? 1 + rnd(r, 3) : 4 + rnd(r, 4);
        t.configure(v, base, log2, v != 3 && v != 9, pct(r, 50) ? 0 : static_cast<uint32_t>(r() & 0x1FFFF));
    }
    t.q[12].log2 = 17;  // out of range: dropped
    uint64_t offered = 0, dropped = 0;
    for (int i = 0; i < n || !t.in.empty(); ++i) {
        ASSERT_LT(i, n * 50) << "stuck";
        if (i < n && t.in.size() < 4 && pct(r, 40)) {
            const unsigned v = pct(r, 50) ? rnd(r, 4) : rnd(r, kVpids);  // hot vpids fill their rings
            t.in.push_back(Entry{v, random_entry(r)});
            ++offered;
            const Queue& x = t.q[v];
            if (!x.en || x.log2 > VELO_RMA_NQ_LOG2_MAX) ++dropped;
        }
        t.tx_ready_pct = (i / 300) % 2 ? 100 : 50;
        // readers: slow ones make back pressure; every read pointer update is a software write
        int sv = -1;
        const unsigned v = rnd(r, kVpids);
        if (pct(r, (i / 500) % 2 ? 30 : 5) && t.q[v].en && t.q[v].log2 <= 16 && t.poll(v, 1 + rnd(r, 3)))
            sv = static_cast<int>(v);
        t.step(sv);
    }
    for (int i = 0; i < 200; ++i) {
        int sv = -1;
        const unsigned v = static_cast<unsigned>(i) % kVpids;
        if (t.q[v].en && t.q[v].log2 <= 16 && t.poll(v, 1000)) sv = static_cast<int>(v);
        t.step(sv);
    }
    uint64_t read = 0;
    for (unsigned v = 0; v < kVpids; ++v) {
        EXPECT_TRUE(t.q[v].sent.empty()) << "vpid " << v << ": " << t.q[v].sent.size() << " entries never seen";
        read += t.q[v].read;
    }
    EXPECT_EQ(read + dropped, offered);
    EXPECT_EQ(t.entries_ev, read);
    EXPECT_EQ(t.cmt, read);
    EXPECT_EQ(t.tlps, read);
    EXPECT_EQ(t.drops_ev, dropped);
    EXPECT_GT(dropped, 5u);
    EXPECT_GT(t.bp_ev, 100u) << "back pressure exercised";
}

}  // namespace

TEST(RmaNotify, RandomEntriesAgainstReaders64) {
    random_run<Vnq64>(64, 4000);
}
TEST(RmaNotify, RandomEntriesAgainstReaders128) {
    random_run<Vnq128>(128, 4000);
}

TEST(RmaNotify, FullRingWaitsForTheReadPointer) {
    Tb<Vnq64> t(64);
    t.configure(2, 0x2000, 1, true);  // two entries
    for (int i = 0; i < 3; ++i) t.in.push_back(Entry{2, random_entry(t.rng)});
    for (int i = 0; i < 40; ++i) t.step();
    EXPECT_EQ(t.tlps, 2u) << "a full ring stops the third entry";
    EXPECT_EQ(t.in.size(), 1u);
    EXPECT_GT(t.bp_ev, 20u);
    t.h->q_vpid = 2;
    t.h.eval();
    EXPECT_TRUE(t.h->q_busy) << "the waiting entry is held";
    // the reader consumes one entry but has not told the NIC yet: still full
    EXPECT_TRUE(t.poll(2, 1));
    for (int i = 0; i < 20; ++i) t.step();
    EXPECT_EQ(t.tlps, 2u);
    // the read pointer write (software) wakes it up; it goes into the entry just freed, phase 0
    t.step(2);
    for (int i = 0; i < 20; ++i) t.step();
    EXPECT_EQ(t.tlps, 3u);
    EXPECT_TRUE(t.poll(2, 2));
    EXPECT_TRUE(t.q[2].sent.empty());
    EXPECT_EQ(VELO_FIELD_GET(VELO_RMA_NQ_HDR_PHASE, t.rd64(0x2000)), 0u) << "second pass writes phase 0";
    t.h.eval();
    EXPECT_FALSE(t.h->q_busy);
    EXPECT_FALSE(t.h->busy);
}

TEST(RmaNotify, ReadPointerWriteInTheCycleOfTheTableRead) {
    // The software write lands in the very cycle of the unit's table read: the RAM returns the old
    // pointer; the unit must read again rather than sleep on stale data.
    for (int delay = 0; delay < 8; ++delay) {
        Tb<Vnq64> t(64);
        t.configure(5, 0x5000, 1, true);
        for (int i = 0; i < 2; ++i) t.in.push_back(Entry{5, random_entry(t.rng)});
        for (int i = 0; i < 30; ++i) t.step();
        ASSERT_EQ(t.tlps, 2u);
        t.in.push_back(Entry{5, random_entry(t.rng)});
        EXPECT_TRUE(t.poll(5, 2));
        for (int i = 0; i < delay; ++i) t.step();
        t.step(5);  // the read pointer update, at some point of the lookup
        for (int i = 0; i < 30; ++i) t.step();
        EXPECT_EQ(t.tlps, 3u) << "delay " << delay;
    }
}

TEST(RmaNotify, DisabledQueueDropsAndCounts) {
    Tb<Vnq128> t(128);
    t.configure(1, 0x1000, 3, false);
    t.configure(4, 0x4000, 0, true);  // LOG2_ENTRIES 0: misconfigured
    t.configure(6, 0x6000, 3, true);
    t.in.push_back(Entry{1, random_entry(t.rng)});
    t.in.push_back(Entry{4, random_entry(t.rng)});
    t.in.push_back(Entry{6, random_entry(t.rng)});
    for (int i = 0; i < 30; ++i) t.step();
    EXPECT_EQ(t.drops_ev, 2u);
    EXPECT_EQ(t.tlps, 1u);
    EXPECT_TRUE(t.poll(6, 1));
}
