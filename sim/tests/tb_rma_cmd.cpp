// velo_rma_cmd: BAR4 command decoder against a reference model.
//
// Vrma_cmd64 / Vrma_cmd128: TLP_W 64 and 128. Vrma_cmd_small: NODE_BITS 3, VPID_BITS 4.
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "Vrma_cmd128.h"
#include "Vrma_cmd128_params.h"
#include "Vrma_cmd64.h"
#include "Vrma_cmd64_params.h"
#include "Vrma_cmd_small.h"
#include "Vrma_cmd_small_params.h"
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

struct Record {
    uint64_t w[4] = {0, 0, 0, 0};
    unsigned vpid = 0, slot = 0, cnt = 0, err = 0;
};

struct Counts {
    unsigned put = 0, get = 0, torn = 0, bad = 0;
};

// a model's parameters: its PARAMS in sim/cmake/rma.cmake (<model>_params.h)
struct Cfg {
    unsigned node_bits, vpid_bits;
};
template <class M>
constexpr Cfg cfg_of() {
    return {velo::sim::ModelParams<M>::NODE_BITS, velo::sim::ModelParams<M>::VPID_BITS};
}

uint64_t cmd0(unsigned op, bool lcpl, bool rcpl, bool notify, unsigned node, uint32_t len, uint32_t rkey_hi = 0) {
    return VELO_FIELD_PREP(VELO_RMA_CMD0_OP, op) | VELO_FIELD_PREP(VELO_RMA_CMD0_LCPL, lcpl) |
           VELO_FIELD_PREP(VELO_RMA_CMD0_RCPL, rcpl) | VELO_FIELD_PREP(VELO_RMA_CMD0_NOTIFY, notify) |
           VELO_FIELD_PREP(VELO_RMA_CMD0_REM_NODE, node) | VELO_FIELD_PREP(VELO_RMA_CMD0_LEN, len) |
           VELO_FIELD_PREP(VELO_RMA_CMD0_RKEY_HI, rkey_hi);
}

uint64_t page_addr(unsigned vpid, unsigned slot, unsigned off = 0) {
    return (static_cast<uint64_t>(vpid) << 12) | (slot << 5) | off;
}

// The decoder's rule for one command word 0.
unsigned check(uint64_t c, const Cfg& cfg) {
    const unsigned op = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_CMD0_OP, c));
    const bool put = op == VELO_RMA_OP_PUT, get = op == VELO_RMA_OP_GET;
    const bool rsvd = VELO_FIELD_GET(VELO_RMA_CMD0_RSVD0, c) != 0;  // the only reserved bit (RKEY_HI is 63:40)
    const bool node = VELO_FIELD_GET(VELO_RMA_CMD0_REM_NODE, c) >> cfg.node_bits;
    const bool getb = get && (VELO_FIELD_GET(VELO_RMA_CMD0_LEN, c) == 0 || VELO_FIELD_GET(VELO_RMA_CMD0_RCPL, c) ||
                              VELO_FIELD_GET(VELO_RMA_CMD0_NOTIFY, c));
    return (!(put || get) || rsvd || node || getb) ? VELO_RMA_ERR_BAD_CMD : VELO_RMA_ERR_NONE;
}

// Reference: the records (in order) and counter events a TLP produces.
std::vector<Record> expect_of(const Tlp& t, const Cfg& cfg, Counts& c) {
    std::vector<Record> out;
    const unsigned page = static_cast<unsigned>((t.addr >> 12) & 0xFF);
    const unsigned slot = static_cast<unsigned>((t.addr >> 5) & 127);
    const unsigned ndw = t.len_dw ? t.len_dw : 1024;
    if (page >> cfg.vpid_bits) {
        c.torn++;
        return out;
    }
    const bool whole = t.is_mwr() && !t.ep && t.first_be == 0xF && t.last_be == 0xF && (t.addr & 31) == 0 &&
                       (ndw == 8 || (ndw == 16 && slot != 127));
    if (!whole) {
        Record r;
        r.vpid = page;
        r.slot = slot;
        unsigned last = static_cast<unsigned>((t.addr >> 2) & 1023) + ndw - 1;
        if (last > 1023) last = 1023;
        r.cnt = (last >> 3) - slot + 1;
        r.err = VELO_RMA_ERR_TORN;
        c.torn++;
        out.push_back(r);
        return out;
    }
    for (unsigned k = 0; k < ndw / 8; ++k) {
        Record r;
        for (unsigned i = 0; i < 4; ++i)
            for (unsigned b = 0; b < 8; ++b) r.w[i] |= static_cast<uint64_t>(t.payload[32 * k + 8 * i + b]) << (8 * b);
        r.vpid = page;
        r.slot = slot + k;
        r.cnt = 1;
        r.err = check(r.w[0], cfg);
        if (r.err)
            c.bad++;
        else if (VELO_FIELD_GET(VELO_RMA_CMD0_OP, r.w[0]) == VELO_RMA_OP_PUT)
            c.put++;
        else
            c.get++;
        out.push_back(r);
    }
    return out;
}

std::vector<uint8_t> cmd_bytes(const uint64_t w[4]) {
    std::vector<uint8_t> b(32);
    for (unsigned i = 0; i < 32; ++i) b[i] = static_cast<uint8_t>(w[i / 8] >> (8 * (i % 8)));
    return b;
}

uint64_t random_cmd0(std::mt19937_64& r, const Cfg& cfg, bool allow_bad) {
    const unsigned op = pct(r, 50) ? VELO_RMA_OP_PUT : VELO_RMA_OP_GET;
    const bool get = op == VELO_RMA_OP_GET;
    uint64_t c = cmd0(op, pct(r, 50), !get && pct(r, 50), !get && pct(r, 30), rnd(r, 1 << cfg.node_bits),
                      static_cast<uint32_t>((r() & 0xFFFFFF) | (get ? 1 : 0)), static_cast<uint32_t>(r() & 0xFFFFFF));
    if (allow_bad && pct(r, 30)) {
        switch (rnd(r, 6)) {
            case 0:
                c = (c & ~VELO_FIELD_MASK(VELO_RMA_CMD0_OP)) | VELO_FIELD_PREP(VELO_RMA_CMD0_OP, 3 + rnd(r, 13));
                break;
            case 1:
                c |= VELO_FIELD_PREP(VELO_RMA_CMD0_RSVD0, 1);
                break;
            case 2:  // the reserved bit with every RKEY_HI bit set: still bad
                c |= VELO_FIELD_PREP(VELO_RMA_CMD0_RSVD0, 1) | VELO_FIELD_MASK(VELO_RMA_CMD0_RKEY_HI);
                break;
            case 3:  // bits 63:16 (the old reserved fields) all set: LEN and RKEY_HI, a good put
                c = cmd0(VELO_RMA_OP_PUT, pct(r, 50), pct(r, 50), pct(r, 50), 0, 0xFFFFFF, 0xFFFFFF);
                break;
            case 4:
                c = cmd0(VELO_RMA_OP_GET, false, pct(r, 50), pct(r, 50), 0, pct(r, 50) ? 0 : 5);
                break;
            default:
                if (cfg.node_bits < 8)
                    c = (c & ~VELO_FIELD_MASK(VELO_RMA_CMD0_REM_NODE)) |
                        VELO_FIELD_PREP(VELO_RMA_CMD0_REM_NODE,
                                        (1u << cfg.node_bits) + rnd(r, 256 - (1 << cfg.node_bits)));
                else
                    c = cmd0(VELO_RMA_OP_GET, false, false, false, 0, 0);
        }
    }
    return c;
}

// A random BAR4 write: whole commands (one or two), or one of the ways a write is torn.
Tlp random_write(std::mt19937_64& r, const Cfg& cfg, bool allow_bad, bool allow_torn) {
    const unsigned vpid = rnd(r, 1 << cfg.vpid_bits);
    if (!allow_torn || pct(r, 65)) {
        const unsigned n = pct(r, 50) ? 1 : 2;
        const unsigned slot = rnd(r, n == 2 ? 127 : 128);
        std::vector<uint8_t> b;
        for (unsigned k = 0; k < n; ++k) {
            uint64_t w[4] = {random_cmd0(r, cfg, allow_bad), r(), r(), r()};
            auto cb = cmd_bytes(w);
            b.insert(b.end(), cb.begin(), cb.end());
        }
        return Tlp::mwr(page_addr(vpid, slot), b, VELO_BAR_RMA);
    }
    Tlp t;
    switch (rnd(r, 7)) {
        case 0: {  // a piece of a burst: fewer bytes, anywhere in a slot
            const unsigned off = 4 * rnd(r, 8);
            std::vector<uint8_t> b(4 * (1 + rnd(r, 7)));
            for (auto& x : b) x = static_cast<uint8_t>(r());
            t = Tlp::mwr(page_addr(vpid, rnd(r, 128), off), b, VELO_BAR_RMA);
            break;
        }
        case 1: {  // misaligned whole-length write
            std::vector<uint8_t> b(32);
            for (auto& x : b) x = static_cast<uint8_t>(r());
            t = Tlp::mwr(page_addr(vpid, rnd(r, 127), 4 * (1 + rnd(r, 7))), b, VELO_BAR_RMA);
            break;
        }
        case 2: {  // byte-granular store
            std::vector<uint8_t> b(1 + rnd(r, 40));
            for (auto& x : b) x = static_cast<uint8_t>(r());
            t = Tlp::mwr(page_addr(vpid, rnd(r, 120), rnd(r, 32)), b, VELO_BAR_RMA);
            break;
        }
        case 3: {  // 16 DW at the last slot: crosses into the next page
            std::vector<uint8_t> b(64, 0x11);
            t = Tlp::mwr(page_addr(vpid, 127), b, VELO_BAR_RMA);
            break;
        }
        case 4: {  // poisoned whole command
            uint64_t w[4] = {random_cmd0(r, cfg, false), 1, 2, 3};
            t = Tlp::mwr(page_addr(vpid, rnd(r, 128)), cmd_bytes(w), VELO_BAR_RMA);
            t.ep = true;
            break;
        }
        case 5: {  // longer than two commands (up to the page end)
            const unsigned slot = rnd(r, 125);
            std::vector<uint8_t> b(96 + 32 * rnd(r, 2));
            for (auto& x : b) x = static_cast<uint8_t>(r());
            t = Tlp::mwr(page_addr(vpid, slot), b, VELO_BAR_RMA);
            break;
        }
        default: {  // whole length, a byte enable missing
            uint64_t w[4] = {random_cmd0(r, cfg, false), 1, 2, 3};
            t = Tlp::mwr(page_addr(vpid, rnd(r, 128)), cmd_bytes(w), VELO_BAR_RMA);
            if (pct(r, 50))
                t.first_be = 0xE;
            else
                t.last_be = 0x7;
            break;
        }
    }
    return t;
}

template <class M>
class Tb {
  public:
    Harness<M> h;
    Cfg cfg;
    unsigned R;
    Counts ev;
    std::deque<Record> got;
    int ready_pct = 100, gap_pct = 0;
    std::mt19937_64 rng;

    Tb() : cfg(cfg_of<M>()), R(velo::sim::ModelParams<M>::TLP_W / 64), rng(test_rng()) {
        h->in_valid = 0;
        h->out_ready = 0;
        h.reset();
    }

    void cycle_monitor() {
        h->out_ready = pct(rng, ready_pct);
        h.eval();
        if (h->out_valid && h->out_ready) {
            Record rc;
            Words ow = words(h->out_cmd);
            for (int i = 0; i < 4; ++i) rc.w[i] = ow.get64(i);
            rc.vpid = h->out_vpid;
            rc.slot = h->out_slot;
            rc.cnt = h->out_slot_cnt;
            rc.err = h->out_err;
            got.push_back(rc);
        }
    }
    void count_events() {
        ev.put += h->ev_cmd_put;
        ev.get += h->ev_cmd_get;
        ev.torn += h->ev_cmd_torn;
        ev.bad += h->ev_cmd_bad;
    }
    void tick() {
        h.tick();
        h.eval();
        count_events();
    }

    void set_data(uint64_t lo, uint64_t hi) {
        if constexpr (sizeof(h->in_data) == 8) {
            h->in_data = lo;
            (void)hi;
        } else {
            Words d = words(h->in_data);
            d.set64(0, lo);
            d.set64(1, hi);
        }
    }

    // Send a TLP; cut_beats > 0 ends it early after that many beats (eop on the last one sent).
    void send(const Tlp& t, unsigned cut_beats = 0) {
        uint32_t dw[4];
        t.encode(dw);
        Words hw = words(h->in_hdr);
        for (int i = 0; i < 4; ++i) hw.w[i] = dw[i];
        std::vector<uint64_t> wv((t.payload.size() + 7) / 8, 0);
        for (size_t i = 0; i < t.payload.size(); ++i) wv[i / 8] |= static_cast<uint64_t>(t.payload[i]) << (8 * (i % 8));
        unsigned beats = static_cast<unsigned>((wv.size() + R - 1) / R);
        if (beats == 0) beats = 1;
        if (cut_beats) beats = cut_beats;
        for (unsigned b = 0; b < beats; ++b) {
            while (pct(rng, gap_pct)) {
                h->in_valid = 0;
                cycle_monitor();
                tick();
            }
            h->in_valid = 1;
            h->in_sop = (b == 0);
            h->in_eop = (b + 1 == beats);
            const size_t i0 = b * R, i1 = b * R + 1;
            set_data(i0 < wv.size() ? wv[i0] : 0, i1 < wv.size() ? wv[i1] : 0);
            for (int guard = 0;; ++guard) {
                ASSERT_LT(guard, 1000) << "in_ready stuck";
                cycle_monitor();
                const bool fire = h->in_ready;
                tick();
                if (fire) break;
            }
        }
        h->in_valid = 0;
    }

    void drain(int cycles = 40) {
        h->in_valid = 0;
        for (int i = 0; i < cycles; ++i) {
            cycle_monitor();
            tick();
        }
    }
};

void expect_record(const Record& g, const Record& e, int i) {
    EXPECT_EQ(g.err, e.err) << "record " << i;
    EXPECT_EQ(g.vpid, e.vpid) << "record " << i;
    EXPECT_EQ(g.slot, e.slot) << "record " << i;
    EXPECT_EQ(g.cnt, e.cnt) << "record " << i;
    if (e.err != VELO_RMA_ERR_TORN) {
        for (int k = 0; k < 4; ++k) EXPECT_EQ(g.w[k], e.w[k]) << "record " << i << " word " << k;
    }
}

template <class M>
void random_stream(bool bad, bool torn, int n) {
    Tb<M> t;
    const Cfg& cfg = t.cfg;
    auto& r = t.rng;
    std::vector<Record> exp;
    Counts ce;
    for (int i = 0; i < n; ++i) {
        t.ready_pct = (i / 100) % 2 ? 100 : 30;  // phases of back pressure
        t.gap_pct = (i / 50) % 2 ? 0 : 40;
        Tlp w = random_write(r, cfg, bad, torn);
        auto e = expect_of(w, cfg, ce);
        exp.insert(exp.end(), e.begin(), e.end());
        t.send(w);
    }
    t.ready_pct = 100;
    t.drain();
    ASSERT_EQ(t.got.size(), exp.size());
    for (size_t i = 0; i < exp.size(); ++i) expect_record(t.got[i], exp[i], static_cast<int>(i));
    EXPECT_EQ(t.ev.put, ce.put);
    EXPECT_EQ(t.ev.get, ce.get);
    EXPECT_EQ(t.ev.torn, ce.torn);
    EXPECT_EQ(t.ev.bad, ce.bad);
    if (bad) {
        EXPECT_GT(ce.bad, 10u);
    }
    if (torn) {
        EXPECT_GT(ce.torn, 10u);
    }
    EXPECT_GT(ce.put + ce.get, 10u);
}

}  // namespace

TEST(RmaCmd, WholeCommands64) {
    random_stream<Vrma_cmd64>(false, false, 600);
}
TEST(RmaCmd, WholeCommands128) {
    random_stream<Vrma_cmd128>(false, false, 600);
}
TEST(RmaCmd, MixedWithTornAndBad64) {
    random_stream<Vrma_cmd64>(true, true, 1500);
}
TEST(RmaCmd, MixedWithTornAndBad128) {
    random_stream<Vrma_cmd128>(true, true, 1500);
}
TEST(RmaCmd, MixedSmallNodeAndVpidWidths) {
    random_stream<Vrma_cmd_small>(true, true, 1500);
}

TEST(RmaCmd, DirectedTornSlotsAndCounts) {
    Tb<Vrma_cmd64> t;
    // 16 bytes at slot 5 offset 16 (the second half of a burst), 48 bytes from slot 9 offset 16
    // (touches slots 9 and 10), 40 bytes from slot 20 offset 28 (slots 20, 21 and 22), 4 bytes at the page's last DW,
    // 64 bytes at slot 127
    std::vector<uint8_t> b16(16, 1), b48(48, 2), b40(40, 5), b4(4, 3), b64(64, 4);
    t.send(Tlp::mwr(page_addr(7, 5, 16), b16, VELO_BAR_RMA));
    t.send(Tlp::mwr(page_addr(7, 9, 16), b48, VELO_BAR_RMA));
    t.send(Tlp::mwr(page_addr(7, 20, 28), b40, VELO_BAR_RMA));
    t.send(Tlp::mwr(page_addr(200, 127, 28), b4, VELO_BAR_RMA));
    t.send(Tlp::mwr(page_addr(1, 127), b64, VELO_BAR_RMA));
    t.drain();
    ASSERT_EQ(t.got.size(), 5u);
    const unsigned want[5][3] = {{7, 5, 1}, {7, 9, 2}, {7, 20, 3}, {200, 127, 1}, {1, 127, 1}};
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(t.got[i].err, static_cast<unsigned>(VELO_RMA_ERR_TORN));
        EXPECT_EQ(t.got[i].vpid, want[i][0]);
        EXPECT_EQ(t.got[i].slot, want[i][1]);
        EXPECT_EQ(t.got[i].cnt, want[i][2]);
        for (int k = 0; k < 4; ++k) EXPECT_EQ(t.got[i].w[k], 0u) << "a torn record carries no command bytes";
    }
    EXPECT_EQ(t.ev.torn, 5u);
    EXPECT_EQ(t.ev.put + t.ev.get + t.ev.bad, 0u);
}

TEST(RmaCmd, ShortTlpLosesItsCommandOnly) {
    Tb<Vrma_cmd64> t;
    uint64_t a[4] = {cmd0(VELO_RMA_OP_PUT, true, false, false, 1, 100), 0x11, 0x22, 0x33};
    uint64_t b[4] = {cmd0(VELO_RMA_OP_GET, true, false, false, 2, 200), 0x44, 0x55, 0x66};
    auto ab = cmd_bytes(a), bb = cmd_bytes(b);
    std::vector<uint8_t> two(ab);
    two.insert(two.end(), bb.begin(), bb.end());
    // a two-command write that ends after 6 beats: the first command is out, the second is lost
    t.send(Tlp::mwr(page_addr(3, 10), two, VELO_BAR_RMA), 6);
    // then a good one: nothing of the lost command leaks into it
    t.send(Tlp::mwr(page_addr(3, 40), bb, VELO_BAR_RMA));
    t.drain();
    ASSERT_EQ(t.got.size(), 2u);
    EXPECT_EQ(t.got[0].err, 0u);
    EXPECT_EQ(t.got[0].slot, 10u);
    EXPECT_EQ(t.got[0].w[0], a[0]);
    EXPECT_EQ(t.got[0].w[3], a[3]);
    EXPECT_EQ(t.got[1].err, 0u);
    EXPECT_EQ(t.got[1].slot, 40u);
    for (int k = 0; k < 4; ++k) EXPECT_EQ(t.got[1].w[k], b[k]);
    EXPECT_EQ(t.ev.put, 1u);
    EXPECT_EQ(t.ev.get, 1u);
    EXPECT_EQ(t.ev.torn, 1u);
}

// RKEY_HI (bits 63:40) and LEN (39:16) are carried into the record bit for bit; only RSVD0 is
// reserved now (bits 16..31 and 56..63 were reserved before the 32-bit keys).
TEST(RmaCmd, RkeyHiIsCarriedNotReserved) {
    Tb<Vrma_cmd64> t;
    uint64_t a[4] = {cmd0(VELO_RMA_OP_PUT, true, true, false, 3, 0x123456, 0xABCDEF), 0x11, 0x22, 0x33};
    uint64_t b[4] = {cmd0(VELO_RMA_OP_GET, false, false, false, 4, 0xFFFFFF, 0xFFFFFF), 0x44, 0x55, 0x66};
    uint64_t c[4] = {
        cmd0(VELO_RMA_OP_PUT, false, false, false, 5, 1, 0x800001) | VELO_FIELD_PREP(VELO_RMA_CMD0_RSVD0, 1), 0x77,
        0x88, 0x99};
    t.send(Tlp::mwr(page_addr(2, 0), cmd_bytes(a), VELO_BAR_RMA));
    t.send(Tlp::mwr(page_addr(2, 1), cmd_bytes(b), VELO_BAR_RMA));
    t.send(Tlp::mwr(page_addr(2, 2), cmd_bytes(c), VELO_BAR_RMA));
    t.drain();
    ASSERT_EQ(t.got.size(), 3u);
    EXPECT_EQ(t.got[0].err, 0u);
    EXPECT_EQ(VELO_FIELD_GET(VELO_RMA_CMD0_RKEY_HI, t.got[0].w[0]), 0xABCDEFu);
    EXPECT_EQ(VELO_FIELD_GET(VELO_RMA_CMD0_LEN, t.got[0].w[0]), 0x123456u);
    EXPECT_EQ(t.got[0].w[0], a[0]);
    EXPECT_EQ(t.got[1].err, 0u) << "bits 63:16 all set are LEN and RKEY_HI, not reserved";
    EXPECT_EQ(t.got[1].w[0], b[0]);
    EXPECT_EQ(t.got[2].err, static_cast<unsigned>(VELO_RMA_ERR_BAD_CMD)) << "RSVD0 set";
    EXPECT_EQ(t.got[2].w[3], c[3]) << "its cookie, to report it";
    EXPECT_EQ(t.ev.put, 1u);
    EXPECT_EQ(t.ev.get, 1u);
    EXPECT_EQ(t.ev.bad, 1u);
}

TEST(RmaCmd, PagesBeyondTheVpidsAreDroppedWithoutRecord) {
    Tb<Vrma_cmd_small> t;
    uint64_t a[4] = {cmd0(VELO_RMA_OP_PUT, true, false, false, 1, 100), 1, 2, 3};
    t.send(Tlp::mwr(page_addr(16, 0), cmd_bytes(a), VELO_BAR_RMA));
    t.send(Tlp::mwr(page_addr(255, 3), cmd_bytes(a), VELO_BAR_RMA));
    t.send(Tlp::mwr(page_addr(15, 3), cmd_bytes(a), VELO_BAR_RMA));
    t.drain();
    ASSERT_EQ(t.got.size(), 1u);
    EXPECT_EQ(t.got[0].vpid, 15u);
    EXPECT_EQ(t.ev.torn, 2u);
    EXPECT_EQ(t.ev.put, 1u);
}

TEST(RmaCmd, BackToBackCommandsFullThroughput) {
    // with out_ready held high, one 32-byte command every 4 beats (64-bit) is taken without stalls
    Tb<Vrma_cmd64> t;
    uint64_t a[4] = {cmd0(VELO_RMA_OP_PUT, false, true, true, 9, 4096), 7, 8, 9};
    const uint64_t c0 = t.h.cycle();
    for (int i = 0; i < 20; ++i) t.send(Tlp::mwr(page_addr(2, i), cmd_bytes(a), VELO_BAR_RMA));
    EXPECT_EQ(t.h.cycle() - c0, 80u) << "one beat per cycle";
    t.drain(3);
    EXPECT_EQ(t.got.size(), 20u);
}
