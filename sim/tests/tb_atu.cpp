// velo_atu: the RMA address translation unit against a C++ reference model.
//
// Vatu: default build (256 regions, 4096 page table entries, 6-bit in-use counters).
// Vatu_small: 8 regions, 64 entries, 2-bit in-use counters, 4-bit vpids, 3-bit nodes (saturation,
// wrap, the scope compared at narrow widths).
//
// The scope is RMA_SCOPE_BOXES boxes per region (RG_SCOPE..RG_SCOPE3): a remote initiator is
// admitted iff it lies in at least one; a box with LO > HI is empty; all boxes are empty after reset.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <vector>

#include "Vatu.h"
#include "Vatu_params.h"
#include "Vatu_small.h"
#include "Vatu_small_params.h"
#include "harness.hpp"
#include "velo/velo_hw.h"

using velo::sim::Harness;
using velo::sim::pct;
using velo::sim::rnd;
using velo::sim::test_rng;

namespace {

constexpr uint64_t kOffMask = (1ull << 40) - 1;

// An NLA: its KEY field holds the key's bits 7:0 (the rest travels as KEY_HI)
uint64_t nla(unsigned region, uint32_t key, uint64_t off) {
    return VELO_FIELD_PREP(VELO_RMA_NLA_OFFSET, off) | VELO_FIELD_PREP(VELO_RMA_NLA_REGION, region) |
           VELO_FIELD_PREP(VELO_RMA_NLA_KEY, key & 0xFFu);
}
uint32_t key_hi(uint32_t key) {
    return key >> 8;
}

// register index (byte offset / 4) of an RMA_REGION / RMA_PTE entry's registers
constexpr unsigned kRgCfg = VELO_TBL_RMA_REGION_RG_CFG / 4, kRgPte = VELO_TBL_RMA_REGION_RG_PTE / 4,
                   kRgStart = VELO_TBL_RMA_REGION_RG_START / 4, kRgLenLo = VELO_TBL_RMA_REGION_RG_LEN_LO / 4,
                   kRgLenHi = VELO_TBL_RMA_REGION_RG_LEN_HI / 4, kRgKey = VELO_TBL_RMA_REGION_RG_KEY / 4,
                   kRgScope = VELO_TBL_RMA_REGION_RG_SCOPE / 4, kRgScope1 = VELO_TBL_RMA_REGION_RG_SCOPE1 / 4,
                   kRgScope2 = VELO_TBL_RMA_REGION_RG_SCOPE2 / 4, kRgScope3 = VELO_TBL_RMA_REGION_RG_SCOPE3 / 4,
                   kPteLo = VELO_TBL_RMA_PTE_PTE_LO / 4, kPteHi = VELO_TBL_RMA_PTE_PTE_HI / 4;

// perm bits indexed by RMA_ACC_*
constexpr unsigned kLR = 1u << VELO_RMA_ACC_LOCAL_READ, kLW = 1u << VELO_RMA_ACC_LOCAL_WRITE,
                   kRR = 1u << VELO_RMA_ACC_REMOTE_READ, kRW = 1u << VELO_RMA_ACC_REMOTE_WRITE;

constexpr unsigned kBoxes = VELO_RMA_SCOPE_BOXES;
static_assert(kBoxes == 4, "the bench writes RG_SCOPE..RG_SCOPE3");
constexpr unsigned kRgScopeN[kBoxes] = {kRgScope, kRgScope1, kRgScope2, kRgScope3};

// One scope box (format RG_SCOPE): LO > HI in either field is empty
struct Box {
    unsigned vpid_lo, vpid_hi, node_lo, node_hi;
    bool has(unsigned node, unsigned vpid) const {
        return node >= node_lo && node <= node_hi && vpid >= vpid_lo && vpid <= vpid_hi;
    }
    uint32_t word() const {
        return static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_VPID_LO, vpid_lo) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_VPID_HI, vpid_hi) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_NODE_LO, node_lo) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_NODE_HI, node_hi));
    }
};
constexpr Box kEmpty{255, 0, 255, 0};

struct Region {
    bool alloc = false, valid = false, p2m = false;
    unsigned perm = 0, owner = 0;
    uint32_t key = 0;                                                 // RG_KEY
    unsigned vpid_lo = 0, vpid_hi = 255, node_lo = 0, node_hi = 255;  // RG_SCOPE, box 0 (default: everybody)
    Box more[kBoxes - 1] = {kEmpty, kEmpty, kEmpty};                  // RG_SCOPE1..3 (default: empty)
    unsigned first = 0;
    uint32_t start = 0;
    uint64_t len = 0;
    uint32_t cfg_word() const {
        return static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_ALLOC, alloc) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_VALID, valid) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PAGE_2M, p2m) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_LR, (perm & kLR) != 0) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_LW, (perm & kLW) != 0) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_RR, (perm & kRR) != 0) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_RW, (perm & kRW) != 0) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_OWNER_VPID, owner));
    }
    Box box(unsigned b) const { return b == 0 ? Box{vpid_lo, vpid_hi, node_lo, node_hi} : more[b - 1]; }
    bool admits(unsigned node, unsigned vpid) const {
        for (unsigned b = 0; b < kBoxes; ++b)
            if (box(b).has(node, vpid)) return true;
        return false;
    }
};

// vpid: local kinds the issuing vpid, remote kinds the initiator's; node and key_hi (the key's
// bits 31:8) are looked at for remote kinds only
struct Lookup {
    uint64_t nla = 0;
    uint32_t len = 0;
    unsigned vpid = 0, kind = 0, tag = 0;
    uint32_t key_hi = 0;
    unsigned node = 0;
};

struct Result {
    unsigned err = 0;
    uint64_t addr = 0;
    uint32_t room = 0;
    unsigned region = 0, owner = 0, tag = 0;
    bool foreign = false;    // model only: BAD_HANDLE for a remote kind's key bits 31:8 or scope alone
    bool later_box = false;  // model only: a remote kind admitted by box 1..3 and not by box 0
};

// The reference model: tables and the translation rule of docs/rma.md §2.2.
struct Model {
    unsigned region_bits, pte_bits;
    std::vector<Region> rg;
    std::vector<uint64_t> pte;
    Model(unsigned rb, unsigned pb) : region_bits(rb), pte_bits(pb), rg(1u << rb), pte(1u << pb, 0) {}

    Result translate(const Lookup& l) const {
        Result r;
        r.tag = l.tag;
        const unsigned idx = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_NLA_REGION, l.nla));
        const unsigned key = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_NLA_KEY, l.nla));
        const uint64_t off = VELO_FIELD_GET(VELO_RMA_NLA_OFFSET, l.nla);
        r.region = idx & ((1u << region_bits) - 1);
        const bool remote = l.kind == VELO_RMA_ACC_REMOTE_READ || l.kind == VELO_RMA_ACC_REMOTE_WRITE;
        if (idx >= rg.size() || !rg[idx].alloc || (rg[idx].key & 0xFFu) != key) {
            r.err = VELO_RMA_ERR_BAD_HANDLE;
            return r;
        }
        const Region& g = rg[idx];
        // remote kinds: the whole key and the initiator inside one of the scope boxes, before anything else
        if (remote && (key_hi(g.key) != l.key_hi || !g.admits(l.node, l.vpid))) {
            r.err = VELO_RMA_ERR_BAD_HANDLE;
            r.foreign = true;
            return r;
        }
        r.later_box = remote && !g.box(0).has(l.node, l.vpid);
        if (!remote && l.vpid != g.owner) {
            r.err = VELO_RMA_ERR_NOT_OWNER;
        } else if (!((g.perm >> l.kind) & 1)) {
            r.err = VELO_RMA_ERR_PERM;
        } else if (off + l.len > g.len) {
            r.err = VELO_RMA_ERR_RANGE;
        } else if (!g.valid) {
            r.err = VELO_RMA_ERR_NOT_VALID;
        }
        if (r.err) return r;
        const unsigned shift = g.p2m ? 21 : 12;
        const uint64_t a = g.start + off;
        const uint64_t psz = 1ull << shift;
        const uint64_t pfn = pte[(g.first + (a >> shift)) & ((1u << pte_bits) - 1)];
        r.addr = g.p2m ? (((pfn >> 9) << 21) | (a & (psz - 1))) : ((pfn << 12) | (a & (psz - 1)));
        r.room = static_cast<uint32_t>(psz - (a & (psz - 1)));
        r.owner = g.owner;
        return r;
    }
};

template <class M>
class Tb {
  public:
    Model m;
    Harness<M> h;
    unsigned vpid_bits, node_bits;
    uint64_t responses = 0;

    // the model's parameters: its PARAMS in sim/cmake/rma.cmake (<model>_params.h)
    Tb()
        : m(velo::sim::ModelParams<M>::REGION_BITS, velo::sim::ModelParams<M>::PTE_BITS),
          vpid_bits(velo::sim::ModelParams<M>::VPID_BITS),
          node_bits(velo::sim::ModelParams<M>::NODE_BITS) {
        const unsigned rb = m.region_bits;
        idle();
        h.reset();
        // the reset sweep: cfg_ready and lk_ready stay low for 2^REGION_BITS cycles
        unsigned n = 0;
        while (true) {
            h.eval();
            if (h->cfg_ready) break;
            EXPECT_FALSE(h->lk_ready);
            h.tick();
            ++n;
            if (n > (1u << rb) + 4) break;
        }
        EXPECT_GE(n, (1u << rb) - 1) << "tables cleared after reset";
        EXPECT_LE(n, (1u << rb) + 1);
    }

    void idle() {
        h->cfg_valid = 0;
        h->lk_valid = 0;
        h->rs_ready = 0;
        h->rel_valid = 0;
        h->q_region = 0;
    }

    // One register write (the register file's forwarding), taking effect at this clock edge.
    void cfg(bool pte, unsigned idx, unsigned reg, uint32_t data) {
        h->cfg_valid = 1;
        h->cfg_pte = pte;
        h->cfg_idx = idx;
        h->cfg_reg = reg;
        h->cfg_data = data;
        h.eval();
        EXPECT_TRUE(h->cfg_ready);
        h.tick();
        h->cfg_valid = 0;
    }
    // as the driver does: RG_CFG last (RG_KEY and the scope boxes while the region is not ALLOC);
    // boxes: how many of the scope boxes to write (the others keep what the NIC holds, which the
    // caller puts into g)
    void write_region(unsigned i, const Region& g, unsigned boxes = kBoxes) {
        cfg(false, i, kRgPte, g.first);
        cfg(false, i, kRgStart, g.start);
        cfg(false, i, kRgLenLo, static_cast<uint32_t>(g.len));
        cfg(false, i, kRgLenHi, static_cast<uint32_t>(g.len >> 32));
        cfg(false, i, kRgKey, g.key);
        for (unsigned b = 0; b < boxes; ++b) cfg(false, i, kRgScopeN[b], g.box(b).word());
        cfg(false, i, kRgCfg, g.cfg_word());
        m.rg[i] = g;
    }
    void write_pte(unsigned i, uint64_t pfn) {
        cfg(true, i, kPteLo, static_cast<uint32_t>(pfn));
        cfg(true, i, kPteHi, static_cast<uint32_t>(pfn >> 32));
        m.pte[i] = pfn;
    }

    Result response() {
        Result r;
        r.err = h->rs_err;
        r.addr = h->rs_addr;
        r.room = h->rs_room;
        r.region = h->rs_region;
        r.owner = h->rs_owner;
        r.tag = h->rs_tag;
        return r;
    }

    void drive(const Lookup& l) {
        h->lk_valid = 1;
        h->lk_nla = l.nla;
        h->lk_len = l.len;
        h->lk_vpid = l.vpid;
        h->lk_node = l.node;
        h->lk_key_hi = l.key_hi;
        h->lk_kind = l.kind;
        h->lk_tag = l.tag;
    }

    // One lookup with nothing else in flight: its response.
    Result lookup_one(const Lookup& l) {
        drive(l);
        h->rs_ready = 1;
        for (int i = 0; i < 20; ++i) {
            h.eval();
            const bool fire = h->lk_ready;
            const bool got = h->rs_valid;
            Result r = response();
            h.tick();
            if (fire) h->lk_valid = 0;
            if (got) {
                h->rs_ready = 0;
                return r;
            }
        }
        ADD_FAILURE() << "no response";
        return Result{};
    }

    void release(unsigned region) {
        h->rel_valid = 1;
        h->rel_region = region;
        h.tick();
        h->rel_valid = 0;
    }
};

void expect_same(const Result& got, const Result& exp, const char* what) {
    EXPECT_EQ(got.err, exp.err) << what;
    EXPECT_EQ(got.tag, exp.tag) << what;
    EXPECT_EQ(got.region, exp.region) << what;
    if (exp.err == 0) {
        EXPECT_EQ(got.addr, exp.addr) << what;
        EXPECT_EQ(got.room, exp.room) << what;
        EXPECT_EQ(got.owner, exp.owner) << what;
    } else {
        EXPECT_EQ(got.addr, 0u) << what;
        EXPECT_EQ(got.room, 0u) << what;
    }
}

// A random scope bound pair of a b-bit field: everybody, one value, a range, or empty (lo > hi)
void random_box(std::mt19937_64& r, unsigned b, unsigned& lo, unsigned& hi) {
    const unsigned n = 1u << b;
    const int k = rnd(r, 10);
    if (k < 3) {
        lo = 0;
        hi = 255;  // everybody (bounds wider than the field)
    } else if (k < 5) {
        lo = hi = rnd(r, n);
    } else if (k < 9) {
        lo = rnd(r, n);
        hi = lo + rnd(r, n - lo);
    } else {
        hi = rnd(r, n - 1);
        lo = hi + 1 + rnd(r, n - 1 - hi);  // empty
    }
}

// A random region of n pages at page table index first.
Region random_region(std::mt19937_64& r, unsigned vb, unsigned nb) {
    Region g;
    g.alloc = true;
    g.valid = true;
    g.p2m = pct(r, 30);
    g.perm = static_cast<unsigned>(r() & 15);
    g.owner = rnd(r, 1 << vb);
    g.key = static_cast<uint32_t>(r());
    random_box(r, vb, g.vpid_lo, g.vpid_hi);
    random_box(r, nb, g.node_lo, g.node_hi);
    // boxes 1..3: empty (as a single-box scope leaves them) or random (a list)
    for (Box& b : g.more) {
        if (pct(r, 40)) continue;
        random_box(r, vb, b.vpid_lo, b.vpid_hi);
        random_box(r, nb, b.node_lo, b.node_hi);
    }
    const uint64_t psz = g.p2m ? (1ull << 21) : (1ull << 12);
    const unsigned npages = 1 + rnd(r, g.p2m ? 3 : 8);
    g.start = static_cast<uint32_t>(r() % psz);
    const uint64_t span = npages * psz - g.start;
    g.len = pct(r, 5) ? 0 : 1 + r() % span;
    return g;
}

uint64_t random_pfn(std::mt19937_64& r) {
    return r() & ((1ull << 40) - 1);
}

template <class M>
void fill_random(Tb<M>& t, std::mt19937_64& r, unsigned nregions) {
    for (unsigned i = 0; i < (1u << t.m.pte_bits); ++i) t.write_pte(i, random_pfn(r));
    for (unsigned i = 0; i < nregions; ++i) {
        Region g = random_region(r, t.vpid_bits, t.node_bits);
        g.first = rnd(r, 1 << t.m.pte_bits);        // may wrap around the table's end
        if (pct(r, 10) || i == 1) g.valid = false;  // every table has some of each
        if (i == 1) {  // reachable NOT_VALID: no earlier reason (permission, empty range) hides it
            g.perm = 15;
            if (g.len == 0) g.len = 1;
        }
        if ((pct(r, 5) && i != 1) || i == 2) g.alloc = false;
        t.write_region(i, g);
    }
}

// A value of a b-bit field for a scope bound pair: inside, at or just beyond a bound, or any
unsigned random_in_box(std::mt19937_64& r, unsigned b, unsigned lo, unsigned hi) {
    const unsigned n = 1u << b;
    const int k = rnd(r, 10);
    unsigned v;
    if (k < 5 && lo <= hi && lo < n) {
        v = lo + rnd(r, std::min(hi, n - 1) - lo + 1);
    } else if (k < 9) {
        const unsigned cand[4] = {lo - 1, lo, hi, hi + 1};
        v = cand[rnd(r, 4)];
    } else {
        v = rnd(r, n);
    }
    return v & (n - 1);
}

// A random lookup, biased towards the interesting cases.
Lookup random_lookup(std::mt19937_64& r, const Model& m, unsigned vb, unsigned nb, unsigned tag) {
    Lookup l;
    l.tag = tag;
    const unsigned nreg = static_cast<unsigned>(m.rg.size());
    unsigned idx = pct(r, 3) ? nreg + rnd(r, 65536 - nreg) : rnd(r, nreg);
    const Region g = idx < nreg ? m.rg[idx] : Region{};
    const uint32_t key = pct(r, 90) ? g.key : static_cast<uint32_t>(r());
    l.kind = rnd(r, 4);
    // the initiator aims at one of the scope boxes (inside, at or just beyond its bounds)
    const Box aim = g.box(rnd(r, kBoxes));
    if (l.kind == VELO_RMA_ACC_REMOTE_READ || l.kind == VELO_RMA_ACC_REMOTE_WRITE)
        l.vpid = random_in_box(r, vb, aim.vpid_lo, aim.vpid_hi);
    else
        l.vpid = pct(r, 80) ? g.owner : rnd(r, 1 << vb);
    // bits 31:8 of the key: right, wrong in one bit, or any (only remote kinds look)
    l.key_hi = pct(r, 85) ? key_hi(key) : (pct(r, 50) ? key_hi(key) ^ (1u << rnd(r, 24)) : rnd(r, 1 << 24));
    l.node = random_in_box(r, nb, aim.node_lo, aim.node_hi);
    uint64_t off;
    if (pct(r, 85) && g.len > 0) {
        off = r() % g.len;
        const uint64_t rest = g.len - off;
        l.len =
            static_cast<uint32_t>(pct(r, 90) ? r() % (std::min<uint64_t>(rest, 0xFFFFFF) + 1) : rest + 1 + rnd(r, 64));
        if (l.len > 0xFFFFFF) l.len = 0xFFFFFF;
    } else {
        off = pct(r, 50) ? g.len : (r() & kOffMask);
        l.len = rnd(r, 4096);
    }
    l.nla = nla(idx, key, off);
    return l;
}

// Random traffic: lookups, random back pressure, holding and releasing translations. Checks every
// response against the model, in order, and that every error reason occurs.
template <class M>
void random_traffic(int n_lookups) {
    auto r = test_rng();
    Tb<M> t;
    const unsigned rb = t.m.region_bits, vb = t.vpid_bits, nb = t.node_bits;
    fill_random(t, r, 1u << rb);
    std::deque<Result> expq;
    std::vector<std::pair<unsigned, uint64_t>> held;  // region, release cycle
    std::map<unsigned, unsigned> held_n;              // region -> translations held by us
    std::map<unsigned, int> reasons;
    int sent = 0, got = 0, foreign = 0, later_box = 0;
    unsigned tag = 0;
    Lookup cur = random_lookup(r, t.m, vb, nb, tag);
    bool cur_valid = false;
    uint64_t guard = 0;
    while (got < n_lookups) {
        ASSERT_LT(++guard, 200000u) << "stuck";
        if (!cur_valid && sent < n_lookups && pct(r, 70)) {
            cur = random_lookup(r, t.m, vb, nb, tag++ & 0xFF);
            cur_valid = true;
        }
        t.h->lk_valid = cur_valid;
        if (cur_valid) t.drive(cur);
        t.h->rs_ready = pct(r, 70);
        // at most one release per cycle, of a translation whose time has come
        t.h->rel_valid = 0;
        for (size_t i = 0; i < held.size(); ++i) {
            if (held[i].second <= t.h.cycle()) {
                t.h->rel_valid = 1;
                t.h->rel_region = held[i].first;
                if (--held_n[held[i].first] == 0) held_n.erase(held[i].first);
                held.erase(held.begin() + static_cast<long>(i));
                break;
            }
        }
        const unsigned qr = rnd(r, 1 << rb);
        t.h->q_region = qr;
        t.h.eval();
        // quiesce status: busy whenever we hold a translation of that region
        if (held_n.count(qr)) {
            EXPECT_TRUE(t.h->q_busy) << "q_busy with held translations";
        }
        EXPECT_FALSE(t.h->ev_rel_underflow);
        const bool fire = cur_valid && t.h->lk_ready;
        if (t.h->rs_valid && t.h->rs_ready) {
            ASSERT_FALSE(expq.empty()) << "response without lookup";
            Result g = t.response();
            expect_same(g, expq.front(), "random lookup");
            reasons[g.err]++;
            if (expq.front().foreign) ++foreign;
            if (expq.front().later_box) ++later_box;
            if (g.err == 0) {
                held.push_back({g.region, t.h.cycle() + 1 + rnd(r, 40)});
                held_n[g.region]++;
            }
            expq.pop_front();
            ++got;
        }
        if (fire) {
            expq.push_back(t.m.translate(cur));
            cur_valid = false;
            ++sent;
        }
        t.h.tick();
    }
    // everything released: no region busy
    t.h->lk_valid = 0;
    while (!held.empty()) {
        t.release(held.back().first);
        held.pop_back();
    }
    for (unsigned q = 0; q < (1u << rb); ++q) {
        t.h->q_region = q;
        t.h.eval();
        EXPECT_FALSE(t.h->q_busy) << "region " << q << " still busy after all releases";
    }
    for (unsigned e : {VELO_RMA_ERR_NONE, VELO_RMA_ERR_BAD_HANDLE, VELO_RMA_ERR_NOT_OWNER, VELO_RMA_ERR_PERM,
                       VELO_RMA_ERR_RANGE, VELO_RMA_ERR_NOT_VALID})
        EXPECT_GT(reasons[e], 5) << "reason " << e << " barely exercised";
    EXPECT_GT(foreign, n_lookups / 50) << "remote lookups failing on key bits 31:8 or scope alone barely exercised";
    EXPECT_GT(later_box, n_lookups / 50) << "remote lookups admitted by box 1..3 alone barely exercised";
}

}  // namespace

TEST(Atu, RandomLookupsAgainstModel) {
    random_traffic<Vatu>(6000);
}

TEST(Atu, RandomLookupsSmallTables) {
    // 2-bit in-use counters: lookups wait for releases when three translations of a region are held
    random_traffic<Vatu_small>(4000);
}

TEST(Atu, ErrorReasonsInPriorityOrder) {
    Tb<Vatu> t;
    for (unsigned i = 0; i < 8; ++i) t.write_pte(i, 0x100 + i);
    Region g;
    g.alloc = g.valid = true;
    g.perm = kLR | kRW;
    g.owner = 7;
    g.key = 0x5A;
    g.first = 0;
    g.start = 0x10;
    g.len = 3 * 4096;
    t.write_region(3, g);
    auto look = [&](uint64_t n, uint32_t len, unsigned vpid, unsigned kind) {
        Lookup l{n, len, vpid, kind, 9};
        Result got = t.lookup_one(l);
        expect_same(got, t.m.translate(l), "directed");
        return got.err;
    };
    const unsigned LR = VELO_RMA_ACC_LOCAL_READ, LW = VELO_RMA_ACC_LOCAL_WRITE, RR = VELO_RMA_ACC_REMOTE_READ,
                   RW = VELO_RMA_ACC_REMOTE_WRITE;
    EXPECT_EQ(look(nla(3, 0x5A, 0), 16, 7, LR), VELO_RMA_ERR_NONE);
    EXPECT_EQ(look(nla(3, 0x5A, 100), 16, 1, RW), VELO_RMA_ERR_NONE) << "remote kinds ignore the owner (scope: all)";
    t.release(3);
    t.release(3);
    // bad handle: wrong key, region index beyond the table, unallocated region
    EXPECT_EQ(look(nla(3, 0x5B, 0), 16, 7, LR), VELO_RMA_ERR_BAD_HANDLE);
    EXPECT_EQ(look(nla(256, 0x5A, 0), 16, 7, LR), VELO_RMA_ERR_BAD_HANDLE);
    EXPECT_EQ(look(nla(0x1003, 0x5A, 0), 16, 7, LR), VELO_RMA_ERR_BAD_HANDLE) << "index bits above the table";
    EXPECT_EQ(look(nla(4, 0, 0), 16, 0, LR), VELO_RMA_ERR_BAD_HANDLE);
    // owner before permission before range before valid
    EXPECT_EQ(look(nla(3, 0x5A, 3 * 4096), 16, 6, LW), VELO_RMA_ERR_NOT_OWNER);
    EXPECT_EQ(look(nla(3, 0x5A, 3 * 4096), 16, 7, LW), VELO_RMA_ERR_PERM);
    EXPECT_EQ(look(nla(3, 0x5A, 0), 16, 7, RR), VELO_RMA_ERR_PERM);
    EXPECT_EQ(look(nla(3, 0x5A, 3 * 4096 - 16), 17, 7, LR), VELO_RMA_ERR_RANGE);
    EXPECT_EQ(look(nla(3, 0x5A, 3 * 4096 - 16), 16, 7, LR), VELO_RMA_ERR_NONE) << "exactly to the end";
    EXPECT_EQ(look(nla(3, 0x5A, 3 * 4096), 0, 7, LR), VELO_RMA_ERR_NONE) << "zero length at the end";
    t.release(3);
    t.release(3);
    EXPECT_EQ(look(nla(3, 0x5A, (1ull << 40) - 1), 0xFFFFFF, 9, RW), VELO_RMA_ERR_RANGE) << "no 40-bit wrap";
    g.valid = false;
    t.write_region(3, g);
    EXPECT_EQ(look(nla(3, 0x5A, 0), 16, 6, LR), VELO_RMA_ERR_NOT_OWNER) << "static errors before NOT_VALID";
    EXPECT_EQ(look(nla(3, 0x5A, 3 * 4096), 16, 7, LR), VELO_RMA_ERR_RANGE);
    EXPECT_EQ(look(nla(3, 0x5A, 0), 16, 7, LR), VELO_RMA_ERR_NOT_VALID);
    g.alloc = false;
    t.write_region(3, g);
    EXPECT_EQ(look(nla(3, 0x5A, 0), 16, 7, LR), VELO_RMA_ERR_BAD_HANDLE) << "deregistered";
    t.h->q_region = 3;
    t.h.eval();
    EXPECT_FALSE(t.h->q_busy) << "failed lookups hold nothing";
}

// Remote kinds: the whole 32-bit key (NLA KEY = bits 7:0, lk_key_hi = bits 31:8) and the
// initiator (lk_node, lk_vpid) inside the region's scope box, bounds inclusive, all BAD_HANDLE;
// local kinds compare the key's bits 7:0 only and ignore node, KEY_HI and scope.
TEST(Atu, RemoteKeyAndScope) {
    Tb<Vatu> t;
    for (unsigned i = 0; i < 4; ++i) t.write_pte(i, 0x200 + i);
    Region g;
    g.alloc = g.valid = true;
    g.perm = 15;
    g.owner = 7;
    g.key = 0xA1B2C35Au;
    g.vpid_lo = 4;
    g.vpid_hi = 9;
    g.node_lo = 2;
    g.node_hi = 6;
    g.len = 3 * 4096;
    t.write_region(3, g);
    const uint32_t kh = key_hi(g.key);
    auto look = [&](uint64_t n, unsigned vpid, unsigned kind, uint32_t khi, unsigned node) {
        Lookup l{n, 16, vpid, kind, 9, khi, node};
        Result got = t.lookup_one(l);
        expect_same(got, t.m.translate(l), "scope");
        if (got.err == 0) t.release(got.region);
        return got.err;
    };
    const unsigned LR = VELO_RMA_ACC_LOCAL_READ, LW = VELO_RMA_ACC_LOCAL_WRITE, RR = VELO_RMA_ACC_REMOTE_READ,
                   RW = VELO_RMA_ACC_REMOTE_WRITE;
    const unsigned BH = VELO_RMA_ERR_BAD_HANDLE;
    const uint64_t n = nla(3, g.key, 64);
    for (unsigned kind : {RR, RW}) {
        // just inside each bound
        EXPECT_EQ(look(n, 4, kind, kh, 2), 0u) << "vpid and node at their low bounds";
        EXPECT_EQ(look(n, 9, kind, kh, 6), 0u) << "vpid and node at their high bounds";
        EXPECT_EQ(look(n, 4, kind, kh, 6), 0u);
        EXPECT_EQ(look(n, 9, kind, kh, 2), 0u);
        // just outside each bound
        EXPECT_EQ(look(n, 3, kind, kh, 4), BH) << "vpid below VPID_LO";
        EXPECT_EQ(look(n, 10, kind, kh, 4), BH) << "vpid above VPID_HI";
        EXPECT_EQ(look(n, 6, kind, kh, 1), BH) << "node below NODE_LO";
        EXPECT_EQ(look(n, 6, kind, kh, 7), BH) << "node above NODE_HI";
        EXPECT_EQ(look(n, 0, kind, kh, 255), BH);
        EXPECT_EQ(look(n, 255, kind, kh, 0), BH);
        // the key: each of bits 31:8 wrong alone, bits 7:0 wrong alone, the old 8-bit key alone
        for (unsigned b = 0; b < 24; ++b) EXPECT_EQ(look(n, 5, kind, kh ^ (1u << b), 3), BH) << "KEY_HI bit " << b;
        for (unsigned b = 0; b < 8; ++b)
            EXPECT_EQ(look(nla(3, g.key ^ (1u << b), 64), 5, kind, kh, 3), BH) << "NLA KEY bit " << b;
        EXPECT_EQ(look(n, 5, kind, 0, 3), BH) << "the low 8 bits alone no longer suffice";
        EXPECT_EQ(look(n, 5, kind, kh, 3), 0u);
    }
    // local kinds: the owner authorises; KEY_HI, node and scope are not looked at, bits 7:0 are
    for (unsigned kind : {LR, LW}) {
        EXPECT_EQ(look(n, 7, kind, 0, 200), 0u) << "local kinds ignore KEY_HI and the scope";
        EXPECT_EQ(look(n, 7, kind, kh ^ 0x800000u, 0), 0u);
        EXPECT_EQ(look(nla(3, g.key ^ 1u, 64), 7, kind, kh, 3), BH) << "local kinds compare bits 7:0";
        EXPECT_EQ(look(n, 5, kind, kh, 3), static_cast<unsigned>(VELO_RMA_ERR_NOT_OWNER))
            << "a vpid inside the scope is no owner";
    }
    // empty boxes (LO > HI): nobody remote, whatever the bounds' neighbours; local as before
    Region e = g;
    e.alloc = false;
    t.write_region(3, e);  // RG_KEY and RG_SCOPE only while not ALLOC
    e.alloc = true;
    e.vpid_lo = 5;
    e.vpid_hi = 4;
    t.write_region(3, e);
    for (unsigned v : {0u, 4u, 5u, 255u}) EXPECT_EQ(look(n, v, RW, kh, 3), BH) << "empty vpid box, vpid " << v;
    EXPECT_EQ(look(n, 7, LR, 0, 0), 0u);
    e.vpid_lo = 0;
    e.vpid_hi = 255;
    e.node_lo = 255;
    e.node_hi = 0;
    t.write_region(3, e);
    for (unsigned nd : {0u, 1u, 128u, 255u}) EXPECT_EQ(look(n, 5, RR, kh, nd), BH) << "empty node box, node " << nd;
    EXPECT_EQ(look(n, 7, LW, 0, 0), 0u);
    // a single initiator (node 6, vpid 3)
    e.vpid_lo = e.vpid_hi = 3;
    e.node_lo = e.node_hi = 6;
    t.write_region(3, e);
    EXPECT_EQ(look(n, 3, RW, kh, 6), 0u);
    EXPECT_EQ(look(n, 3, RW, kh, 5), BH);
    EXPECT_EQ(look(n, 4, RW, kh, 6), BH);
    t.h->q_region = 3;
    t.h.eval();
    EXPECT_FALSE(t.h->q_busy) << "everything given back, failed lookups hold nothing";
}

// Scope lists: four boxes checked together. An initiator in box 2 alone is admitted, one in no box
// gets BAD_HANDLE (also where PERM or RANGE would fail for an admitted one), empty boxes admit
// nobody, local kinds ignore every box, and boxes software never wrote are empty after reset.
TEST(Atu, ScopeListOfFourBoxes) {
    Tb<Vatu> t;
    for (unsigned i = 0; i < 4; ++i) t.write_pte(i, 0x700 + i);
    const unsigned LR = VELO_RMA_ACC_LOCAL_READ, LW = VELO_RMA_ACC_LOCAL_WRITE, RR = VELO_RMA_ACC_REMOTE_READ,
                   RW = VELO_RMA_ACC_REMOTE_WRITE;
    const unsigned BH = VELO_RMA_ERR_BAD_HANDLE;
    // after reset, only box 0 written: boxes 1..3 must be empty (admit not even node 0, vpid 0)
    Region f;
    f.alloc = f.valid = true;
    f.perm = 15;
    f.owner = 1;
    f.key = 0x5EED0001u;
    f.vpid_lo = f.vpid_hi = 9;
    f.node_lo = f.node_hi = 9;
    f.len = 4096;
    t.write_region(6, f, 1);
    auto look = [&](unsigned region, uint32_t key, uint32_t off, uint32_t len, unsigned vpid, unsigned kind,
                    unsigned node) {
        Lookup l{nla(region, key, off), len, vpid, kind, 4, key_hi(key), node};
        Result got = t.lookup_one(l);
        expect_same(got, t.m.translate(l), "scope list");
        if (got.err == 0) t.release(got.region);
        return got.err;
    };
    EXPECT_EQ(look(6, f.key, 0, 8, 9, RW, 9), 0u) << "box 0";
    for (unsigned nd : {0u, 1u, 8u, 10u, 255u})
        for (unsigned v : {0u, 1u, 9u, 255u})
            if (nd != 9) {
                EXPECT_EQ(look(6, f.key, 0, 8, v, RR, nd), BH) << "unwritten boxes after reset: " << nd;
            }

    Region g;
    g.alloc = g.valid = true;
    g.perm = kLR | kLW | kRR;  // remote write not permitted: PERM tells admitted from foreign
    g.owner = 7;
    g.key = 0x0BADF00Du;
    g.vpid_lo = g.vpid_hi = 3;  // box 0: (node 1, vpid 3)
    g.node_lo = g.node_hi = 1;
    g.more[0] = kEmpty;                 // box 1: empty
    g.more[1] = Box{4, 5, 10, 12};      // box 2: nodes 10..12, vpids 4..5
    g.more[2] = Box{200, 255, 0, 255};  // box 3: vpids 200..255 on every node
    g.len = 2 * 4096;
    t.write_region(2, g);
    {
        const unsigned kind = RR;
        EXPECT_EQ(look(2, g.key, 0, 64, 3, kind, 1), 0u) << "box 0";
        EXPECT_EQ(look(2, g.key, 0, 64, 4, kind, 10), 0u) << "box 2 alone, low corner";
        EXPECT_EQ(look(2, g.key, 0, 64, 5, kind, 12), 0u) << "box 2 alone, high corner";
        EXPECT_EQ(look(2, g.key, 0, 64, 5, kind, 11), 0u) << "box 2 alone";
        EXPECT_EQ(look(2, g.key, 0, 64, 200, kind, 0), 0u) << "box 3 alone";
        EXPECT_EQ(look(2, g.key, 0, 64, 255, kind, 255), 0u) << "box 3 alone";
        // in none of the boxes
        EXPECT_EQ(look(2, g.key, 0, 64, 3, kind, 2), BH) << "box 0's vpid on another node";
        EXPECT_EQ(look(2, g.key, 0, 64, 6, kind, 11), BH) << "just past box 2's vpids";
        EXPECT_EQ(look(2, g.key, 0, 64, 4, kind, 9), BH) << "just below box 2's nodes";
        EXPECT_EQ(look(2, g.key, 0, 64, 4, kind, 13), BH) << "just past box 2's nodes";
        EXPECT_EQ(look(2, g.key, 0, 64, 199, kind, 11), BH) << "just below box 3's vpids";
        EXPECT_EQ(look(2, g.key, 0, 64, 0, kind, 0), BH) << "node 0, vpid 0: the empty box 1 admits nobody";
        EXPECT_EQ(look(2, g.key, 0, 64, 7, kind, 0), BH) << "the owner's vpid is no remote initiator";
        // foreign: BAD_HANDLE before RANGE; admitted by box 2: RANGE
        EXPECT_EQ(look(2, g.key, 8190, 64, 4, kind, 10), static_cast<unsigned>(VELO_RMA_ERR_RANGE));
        EXPECT_EQ(look(2, g.key, 8190, 64, 4, kind, 13), BH);
    }
    EXPECT_EQ(look(2, g.key, 0, 64, 4, RW, 10), static_cast<unsigned>(VELO_RMA_ERR_PERM)) << "box 2: PERM";
    EXPECT_EQ(look(2, g.key, 0, 64, 6, RW, 10), BH) << "in no box: not PERM";
    // local kinds: the owner, whatever the boxes
    EXPECT_EQ(look(2, g.key, 0, 64, 7, LR, 200), 0u);
    EXPECT_EQ(look(2, g.key, 0, 64, 7, LW, 0), 0u);
    EXPECT_EQ(look(2, g.key, 0, 64, 4, LR, 10), static_cast<unsigned>(VELO_RMA_ERR_NOT_OWNER))
        << "inside box 2 is no owner";

    // all four boxes empty (each in its own way): nobody remote, the owner still local
    Region e = g;
    e.alloc = false;
    t.write_region(2, e);  // keys and boxes only while not ALLOC
    e.alloc = true;
    e.vpid_lo = 5;
    e.vpid_hi = 4;  // box 0: empty vpids, every node
    e.node_lo = 0;
    e.node_hi = 255;
    e.more[0] = kEmpty;
    e.more[1] = Box{0, 255, 12, 10};  // empty nodes
    e.more[2] = Box{1, 0, 1, 0};
    t.write_region(2, e);
    for (unsigned nd : {0u, 1u, 10u, 11u, 12u, 255u})
        for (unsigned v : {0u, 3u, 4u, 5u, 200u, 255u})
            EXPECT_EQ(look(2, e.key, 0, 8, v, RR, nd), BH) << "all boxes empty: node " << nd << " vpid " << v;
    EXPECT_EQ(look(2, e.key, 0, 8, 7, LR, 0), 0u) << "local kinds unaffected by empty boxes";
    t.h->q_region = 2;
    t.h.eval();
    EXPECT_FALSE(t.h->q_busy);
}

// A foreign initiator (outside the scope, or with a wrong key) gets BAD_HANDLE whatever else is
// wrong: PERM, RANGE and NOT_VALID are reported only to initiators the region admits, so a
// failure tells nothing about a region the initiator may not use.
TEST(Atu, BadHandleBeforePermRangeValidForForeignInitiators) {
    Tb<Vatu> t;
    t.write_pte(0, 0x300);
    Region g;
    g.alloc = g.valid = true;
    g.perm = kLR;  // no remote access at all
    g.owner = 1;
    g.key = 0x00C0FFEEu;
    g.vpid_lo = g.vpid_hi = 2;
    g.node_lo = g.node_hi = 5;
    g.len = 100;
    t.write_region(9, g);
    const uint32_t kh = key_hi(g.key);
    auto look = [&](uint64_t off, uint32_t len, unsigned vpid, unsigned kind, uint32_t khi, unsigned node) {
        Lookup l{nla(9, g.key, off), len, vpid, kind, 1, khi, node};
        Result got = t.lookup_one(l);
        expect_same(got, t.m.translate(l), "precedence");
        if (got.err == 0) t.release(got.region);
        return got.err;
    };
    const unsigned RR = VELO_RMA_ACC_REMOTE_READ, RW = VELO_RMA_ACC_REMOTE_WRITE;
    const unsigned BH = VELO_RMA_ERR_BAD_HANDLE;
    for (unsigned kind : {RR, RW}) {
        EXPECT_EQ(look(0, 8, 2, kind, kh, 5), static_cast<unsigned>(VELO_RMA_ERR_PERM)) << "admitted: PERM";
        EXPECT_EQ(look(0, 8, 3, kind, kh, 5), BH) << "vpid outside: not PERM";
        EXPECT_EQ(look(0, 8, 2, kind, kh, 4), BH) << "node outside: not PERM";
        EXPECT_EQ(look(0, 8, 2, kind, kh + 1, 5), BH) << "wrong KEY_HI: not PERM";
    }
    g.perm = 15;
    t.write_region(9, g);
    for (unsigned kind : {RR, RW}) {
        EXPECT_EQ(look(96, 8, 2, kind, kh, 5), static_cast<unsigned>(VELO_RMA_ERR_RANGE)) << "admitted: RANGE";
        EXPECT_EQ(look(96, 8, 1, kind, kh, 5), BH) << "vpid outside: not RANGE";
        EXPECT_EQ(look(96, 8, 2, kind, kh, 6), BH) << "node outside: not RANGE";
        EXPECT_EQ(look(96, 8, 2, kind, kh ^ 0x10000u, 5), BH) << "wrong KEY_HI: not RANGE";
        EXPECT_EQ(look(0, 8, 2, kind, kh, 5), 0u);
    }
    g.valid = false;
    t.write_region(9, g);
    for (unsigned kind : {RR, RW}) {
        EXPECT_EQ(look(0, 8, 2, kind, kh, 5), static_cast<unsigned>(VELO_RMA_ERR_NOT_VALID)) << "admitted: NOT_VALID";
        EXPECT_EQ(look(0, 8, 0, kind, kh, 5), BH) << "vpid outside: not NOT_VALID";
        EXPECT_EQ(look(0, 8, 2, kind, kh, 0), BH) << "node outside: not NOT_VALID";
        EXPECT_EQ(look(0, 8, 2, kind, 0, 5), BH) << "wrong KEY_HI: not NOT_VALID";
    }
}

// Narrow vpid and node fields (4 and 3 bits) are compared zero-extended with the 8-bit bounds.
TEST(Atu, ScopeAtNarrowWidths) {
    Tb<Vatu_small> t;
    t.write_pte(0, 0x9);
    Region g;
    g.alloc = g.valid = true;
    g.perm = 15;
    g.owner = 1;
    g.key = 0xFFFFFF01u;
    g.vpid_lo = 8;
    g.vpid_hi = 200;  // beyond the 4-bit vpids: 8..15
    g.node_lo = 4;
    g.node_hi = 255;  // 4..7
    g.len = 64;
    t.write_region(5, g);
    auto look = [&](unsigned vpid, unsigned node) {
        Lookup l{nla(5, g.key, 0), 8, vpid, VELO_RMA_ACC_REMOTE_WRITE, 0, key_hi(g.key), node};
        Result got = t.lookup_one(l);
        expect_same(got, t.m.translate(l), "narrow");
        if (got.err == 0) t.release(got.region);
        return got.err;
    };
    EXPECT_EQ(look(15, 7), 0u);
    EXPECT_EQ(look(8, 4), 0u);
    EXPECT_EQ(look(7, 4), static_cast<unsigned>(VELO_RMA_ERR_BAD_HANDLE));
    EXPECT_EQ(look(8, 3), static_cast<unsigned>(VELO_RMA_ERR_BAD_HANDLE));
    EXPECT_EQ(look(0, 0), static_cast<unsigned>(VELO_RMA_ERR_BAD_HANDLE));
}

TEST(Atu, PageBoundariesFourKilobyteAndTwoMegabyte) {
    Tb<Vatu> t;
    // a 4 KiB region starting 0xFF0 into its first page, its page table run wrapping the table end
    const uint64_t pf[3] = {0xAB12345678ull, 0x0000000001ull, 0xFFFFFFFFFFull};
    t.write_pte(4094, pf[0]);
    t.write_pte(4095, pf[1]);
    t.write_pte(0, pf[2]);
    Region g;
    g.alloc = g.valid = true;
    g.perm = 15;
    g.owner = 1;
    g.key = 1;
    g.first = 4094;
    g.start = 0xFF0;
    g.len = 2 * 4096 + 0x10;
    t.write_region(10, g);
    struct Case {
        uint64_t off;
        uint64_t addr;
        uint32_t room;
    } cases[] = {{0, (pf[0] << 12) | 0xFF0, 0x10}, {0xF, (pf[0] << 12) | 0xFFF, 1},
                 {0x10, pf[1] << 12, 4096},        {0x10 + 4095, (pf[1] << 12) | 0xFFF, 1},
                 {0x10 + 4096, pf[2] << 12, 4096}, {0x10 + 8191, (pf[2] << 12) | 0xFFF, 1}};
    for (const auto& c : cases) {
        Result got = t.lookup_one(Lookup{nla(10, 1, c.off), 1, 1, VELO_RMA_ACC_LOCAL_READ, 0});
        EXPECT_EQ(got.err, 0u) << c.off;
        EXPECT_EQ(got.addr, c.addr) << std::hex << c.off;
        EXPECT_EQ(got.room, c.room) << c.off;
        t.release(10);
    }
    // a 2 MiB region: frames are 2 MiB aligned, the frame number's low 9 bits are ignored
    t.write_pte(7, 0x12345600ull | 0x1FF);
    t.write_pte(8, 0x00000200ull);
    Region h = g;
    h.p2m = true;
    h.first = 7;
    h.start = 0x1FFFF8;
    h.len = 8 + (2u << 20) - 8;
    t.write_region(11, h);
    const uint64_t b0 = (0x12345600ull >> 9) << 21, b1 = (0x200ull >> 9) << 21;
    struct Case2 {
        uint64_t off, addr;
        uint32_t room;
    } c2[] = {{0, b0 | 0x1FFFF8, 8},
              {7, b0 | 0x1FFFFF, 1},
              {8, b1, 2u << 20},
              {8 + 0x12345, b1 | 0x12345, 0x200000 - 0x12345}};
    for (const auto& c : c2) {
        Result got = t.lookup_one(Lookup{nla(11, 1, c.off), 1, 1, VELO_RMA_ACC_REMOTE_WRITE, 0});
        EXPECT_EQ(got.err, 0u) << c.off;
        EXPECT_EQ(got.addr, c.addr) << std::hex << c.off;
        EXPECT_EQ(got.room, c.room) << c.off;
        t.release(11);
    }
}

TEST(Atu, InvalidationWhileLookupsInFlight) {
    // Lookups of region R (and others) stream with back pressure while translations are held; the
    // driver clears R's VALID, then polls q_busy. Lookups accepted up to the write's cycle may
    // still translate; later ones fail with NOT_VALID; once q_busy reads 0 nothing of R is held
    // and no translation of R comes out any more.
    auto r = test_rng();
    for (int round = 0; round < 40; ++round) {
        Tb<Vatu> t;
        for (unsigned i = 0; i < 16; ++i) t.write_pte(i, 0x1000 + i);
        const unsigned R = 5;
        for (unsigned i = 0; i < 4; ++i) {
            Region g;
            g.alloc = g.valid = true;
            g.perm = 15;
            g.owner = 2;
            g.key = 3;
            g.first = 4 * i;
            g.len = 4 * 4096;
            t.write_region(R + i, g);
        }
        std::deque<Result> expq;
        std::vector<std::pair<unsigned, uint64_t>> held;
        unsigned held_r = 0;
        const uint64_t inval_at = t.h.cycle() + 5 + rnd(r, 60);
        bool invalidated = false, quiet = false;
        uint64_t quiet_at = 0;
        int ok_after_quiet = 0;
        Lookup cur;
        bool cur_valid = false;
        for (int cyc = 0; cyc < 400; ++cyc) {
            if (!cur_valid && pct(r, 80)) {
                cur = Lookup{nla(pct(r, 60) ? R : R + 1 + rnd(r, 3), 3, r() % 4096), 64, 2,
                             static_cast<unsigned>(rnd(r, 4)), 0};
                cur_valid = true;
            }
            t.h->lk_valid = cur_valid;
            if (cur_valid) t.drive(cur);
            t.h->rs_ready = pct(r, 60);
            t.h->rel_valid = 0;
            for (size_t i = 0; i < held.size(); ++i)
                if (held[i].second <= t.h.cycle()) {
                    t.h->rel_valid = 1;
                    t.h->rel_region = held[i].first;
                    if (held[i].first == R) --held_r;
                    held.erase(held.begin() + static_cast<long>(i));
                    break;
                }
            const bool do_inval = !invalidated && t.h.cycle() == inval_at;
            if (do_inval) {
                Region g = t.m.rg[R];
                g.valid = false;
                t.h->cfg_valid = 1;
                t.h->cfg_pte = 0;
                t.h->cfg_idx = R;
                t.h->cfg_reg = 0;
                t.h->cfg_data = g.cfg_word();
            }
            t.h->q_region = R;
            t.h.eval();
            if (held_r) {
                EXPECT_TRUE(t.h->q_busy);
            }
            if (invalidated && !quiet && !t.h->q_busy) {
                quiet = true;
                quiet_at = t.h.cycle();
                EXPECT_EQ(held_r, 0u) << "quiet while a translation is held";
            }
            if (t.h->rs_valid && t.h->rs_ready) {
                Result g = t.response();
                ASSERT_FALSE(expq.empty());
                expect_same(g, expq.front(), "inval");
                expq.pop_front();
                if (g.err == 0) {
                    held.push_back({g.region, t.h.cycle() + 1 + rnd(r, 30)});
                    if (g.region == R) {
                        ++held_r;
                        if (quiet) ++ok_after_quiet;
                    }
                }
            }
            if (cur_valid && t.h->lk_ready) {
                // the model still has VALID=1 in the write's own cycle (the RAM reads old data)
                expq.push_back(t.m.translate(cur));
                cur_valid = false;
            }
            t.h.tick();
            if (do_inval) {
                t.h->cfg_valid = 0;
                t.m.rg[R].valid = false;
                invalidated = true;
            }
        }
        EXPECT_TRUE(quiet) << "round " << round << ": never quiesced";
        EXPECT_EQ(ok_after_quiet, 0) << "translation of R after the quiesce read 0 (at " << quiet_at << ")";
    }
}

TEST(Atu, StageAWaitsAreCountedAsBusy) {
    // A failed lookup waits in stage B (back pressure; it holds nothing), a good one of region 1
    // waits behind it in stage A, not yet counted; the invalidation comes now: busy all the same.
    Tb<Vatu> t;
    t.write_pte(0, 0x42);
    Region g;
    g.alloc = g.valid = true;
    g.perm = 15;
    g.owner = 0;
    g.key = 0;
    g.len = 4096;
    t.write_region(1, g);
    t.h->rs_ready = 0;
    t.drive(Lookup{nla(1, 1, 0), 8, 0, 0, 1});  // wrong key
    t.h.tick();                                 // accepted into A
    t.drive(Lookup{nla(1, 0, 0), 8, 0, 0, 2});
    t.h.tick();  // the first to B, the second into A
    t.h->lk_valid = 0;
    t.h.tick();
    t.h.eval();
    EXPECT_TRUE(t.h->rs_valid);
    g.valid = false;
    t.cfg(false, 1, 0, g.cfg_word());
    t.h->q_region = 1;
    for (int i = 0; i < 5; ++i) {
        t.h.eval();
        EXPECT_TRUE(t.h->q_busy) << "a lookup of region 1 waits in stage A";
        t.h.tick();
    }
    // the second read VALID=1 before the write: it translates
    t.h->rs_ready = 1;
    std::vector<unsigned> errs;
    for (int i = 0; i < 4; ++i) {
        t.h.eval();
        if (t.h->rs_valid) {
            errs.push_back(t.h->rs_err);
            if (t.h->rs_err == 0) {
                EXPECT_EQ(t.h->rs_addr, 0x42000ull);
            }
        }
        t.h.tick();
    }
    ASSERT_EQ(errs.size(), 2u);
    EXPECT_EQ(errs[0], static_cast<unsigned>(VELO_RMA_ERR_BAD_HANDLE));
    EXPECT_EQ(errs[1], 0u);
    t.h->rs_ready = 0;
    t.h.eval();
    EXPECT_TRUE(t.h->q_busy) << "one translation held";
    t.release(1);
    t.h.eval();
    EXPECT_FALSE(t.h->q_busy);
    EXPECT_EQ(t.lookup_one(Lookup{nla(1, 0, 0), 8, 0, 0, 1}).err, static_cast<unsigned>(VELO_RMA_ERR_NOT_VALID));
}

TEST(Atu, InUseSaturationAndUnderflow) {
    // 2-bit counters: three translations of a region may be held, the fourth lookup waits
    Tb<Vatu_small> t;
    t.write_pte(0, 0x7);
    Region g;
    g.alloc = g.valid = true;
    g.perm = 15;
    g.owner = 3;
    g.key = 9;
    g.len = 100;
    t.write_region(2, g);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(t.lookup_one(Lookup{nla(2, 9, 0), 1, 3, 0, 0}).err, 0u);
    t.drive(Lookup{nla(2, 9, 0), 1, 3, 0, 5});
    t.h->rs_ready = 1;
    for (int i = 0; i < 20; ++i) {
        t.h.eval();
        EXPECT_FALSE(t.h->rs_valid) << "fourth translation while three held";
        const bool fire = t.h->lk_valid && t.h->lk_ready;
        t.h.tick();
        if (fire) t.h->lk_valid = 0;
    }
    t.h->rel_valid = 1;
    t.h->rel_region = 2;
    bool got = false;
    for (int i = 0; i < 6 && !got; ++i) {
        t.h.eval();
        if (t.h->rs_valid) {
            got = true;
            EXPECT_EQ(t.h->rs_err, 0u);
            EXPECT_EQ(t.h->rs_tag, 5u);
        }
        t.h.tick();
        t.h->rel_valid = 0;
    }
    EXPECT_TRUE(got) << "the waiting lookup goes on after a release";
    // release all three (3 held again), then one more: underflow is reported, nothing changes
    for (int i = 0; i < 3; ++i) t.release(2);
    t.h->q_region = 2;
    t.h.eval();
    EXPECT_FALSE(t.h->q_busy);
    t.h->rel_valid = 1;
    t.h->rel_region = 2;
    t.h.tick();
    t.h->rel_valid = 0;
    t.h.eval();
    EXPECT_TRUE(t.h->ev_rel_underflow);
    t.h.tick();
    t.h.eval();
    EXPECT_FALSE(t.h->ev_rel_underflow);
    EXPECT_FALSE(t.h->q_busy);
    EXPECT_EQ(t.lookup_one(Lookup{nla(2, 9, 0), 1, 3, 0, 0}).err, 0u);
    t.h.eval();
    EXPECT_TRUE(t.h->q_busy) << "the counter still counts after an underflow";
}

// The quiesce status is per region: translations held of one region never make another read busy
// (with counters shared by the regions of the same low index bits, a region sharing its counter
// with one that streams a long transfer never read quiet and its deregistration timed out), and
// every region reads quiet once its own translations are given back.
TEST(Atu, QuiesceStatusIsPerRegion) {
    Tb<Vatu> t;
    t.write_pte(0, 0x11);
    Region g;
    g.alloc = g.valid = true;
    g.perm = 15;
    g.owner = 0;
    g.key = 3;
    g.len = 4096;
    const unsigned regions[] = {5, 37, 69, 101, 133, 165, 197, 229};  // the same low 5 bits
    for (unsigned r : regions) t.write_region(r, g);
    // region 5 holds two translations, 37 one
    EXPECT_EQ(t.lookup_one(Lookup{nla(5, 3, 0), 8, 0, 0, 0}).err, 0u);
    EXPECT_EQ(t.lookup_one(Lookup{nla(5, 3, 64), 8, 0, 0, 0}).err, 0u);
    EXPECT_EQ(t.lookup_one(Lookup{nla(37, 3, 0), 8, 0, 0, 0}).err, 0u);
    auto busy = [&](unsigned r) {
        t.h->q_region = r;
        t.h.eval();
        return static_cast<bool>(t.h->q_busy);
    };
    EXPECT_TRUE(busy(5));
    EXPECT_TRUE(busy(37));
    for (unsigned r : regions) {
        if (r != 5 && r != 37) {
            EXPECT_FALSE(busy(r)) << "region " << r << " busy with another region's translations";
        }
    }
    t.release(37);
    EXPECT_FALSE(busy(37)) << "region 37 quiet while region 5 still holds translations";
    EXPECT_TRUE(busy(5));
    t.release(5);
    EXPECT_TRUE(busy(5)) << "one translation of region 5 still held";
    t.release(5);
    // every region of the table reads quiet again
    for (unsigned r = 0; r < 256; ++r) EXPECT_FALSE(busy(r)) << "region " << r;
}

// The counts live in 16 entries: translations of 16 regions held at once, a lookup of a 17th
// region waits until one of them is given back (then takes its entry; lookups behind it wait
// too: one pipeline). Every region quiet at the end.
TEST(Atu, SeventeenthRegionWaitsForAFreeEntry) {
    Tb<Vatu> t;
    t.write_pte(0, 0x21);
    Region g;
    g.alloc = g.valid = true;
    g.perm = 15;
    g.owner = 0;
    g.key = 1;
    g.len = 4096;
    for (unsigned r = 0; r < 17; ++r) t.write_region(10 + r, g);
    for (unsigned r = 0; r < 16; ++r) EXPECT_EQ(t.lookup_one(Lookup{nla(10 + r, 1, 0), 8, 0, 0, 0}).err, 0u);
    // a second translation of a region already counted needs no entry
    EXPECT_EQ(t.lookup_one(Lookup{nla(10, 1, 8), 8, 0, 0, 0}).err, 0u);
    t.drive(Lookup{nla(26, 1, 0), 8, 0, 0, 7});
    t.h->rs_ready = 1;
    bool fired = false;
    for (int i = 0; i < 30; ++i) {
        t.h.eval();
        EXPECT_FALSE(t.h->rs_valid) << "a 17th region translated while 16 hold every entry";
        if (t.h->lk_valid && t.h->lk_ready) fired = true;
        t.h.tick();
        if (fired) t.h->lk_valid = 0;
    }
    t.release(13);  // region 13's entry is free again
    bool got = false;
    for (int i = 0; i < 6 && !got; ++i) {
        t.h.eval();
        if (t.h->rs_valid) {
            got = true;
            EXPECT_EQ(t.h->rs_err, 0u);
            EXPECT_EQ(t.h->rs_tag, 7u);
        }
        t.h.tick();
    }
    EXPECT_TRUE(got) << "the waiting lookup goes on once an entry is free";
    t.h->rs_ready = 0;
    auto busy = [&](unsigned r) {
        t.h->q_region = r;
        t.h.eval();
        return static_cast<bool>(t.h->q_busy);
    };
    EXPECT_TRUE(busy(26));
    EXPECT_FALSE(busy(13));
    for (unsigned r = 0; r < 17; ++r)
        if (r != 3) t.release(10 + r);
    t.release(10);  // its second translation
    for (unsigned r = 0; r < 256; ++r) EXPECT_FALSE(busy(r)) << "region " << r;
}

TEST(Atu, BadTableWritesAreIgnoredAndReported) {
    Tb<Vatu_small> t;
    t.write_pte(1, 0x55);
    Region g;
    g.alloc = g.valid = true;
    g.perm = 15;
    g.owner = 1;
    g.key = 1;
    g.first = 1;
    g.len = 4096;
    t.write_region(0, g);
    // region 8 and page table entry 64 are beyond the tables (they must not alias 0 and 0),
    // registers 10..15 beyond a region entry (9 is RG_SCOPE3), register 2 beyond a page table entry
    struct W {
        bool pte;
        unsigned idx, reg;
    } bad[] = {{false, 8, 0},  {true, 65, 0}, {false, 0, kRgScope3 + 1},
               {false, 0, 15}, {true, 1, 2},  {false, 0x8000, 0}};
    for (const auto& w : bad) {
        t.cfg(w.pte, w.idx, w.reg, 0);
        t.h.eval();
        EXPECT_TRUE(t.h->ev_cfg_bad) << w.idx << "/" << w.reg;
    }
    t.h.tick();
    t.h.eval();
    EXPECT_FALSE(t.h->ev_cfg_bad);
    for (unsigned reg : {kRgKey, kRgScope, kRgScope1, kRgScope2, kRgScope3}) {  // the last registers of an entry
        t.cfg(false, 7, reg, 0);
        t.h.eval();
        EXPECT_FALSE(t.h->ev_cfg_bad) << "register " << reg;
    }
    Result got = t.lookup_one(Lookup{nla(0, 1, 0x10), 1, 1, 0, 0});
    EXPECT_EQ(got.err, 0u);
    EXPECT_EQ(got.addr, (0x55ull << 12) | 0x10);
}
