// velo_rma_tgt: the RMA target engine with the real velo_atu and velo_dma_rd (sim/tb/velo_rma_tgt_tb.v),
// the host model (HostMem for the DMA writes, HostReader answering the DMA reads) and a C++
// reference of the packet contract (docs/rma.md §3): puts and gets as the initiator sends them,
// segmented per the contract, interleaved between source nodes at packet granularity.
//
// Checked: every DMA write byte belongs to an in-flight put of that region at the right offset
// with the right value, no TLP crosses an MPS boundary; exactly one PUT_RSP per put with the
// predicted ERR, NLA word and header fields; when a PUT_RSP is first presented every byte of its
// put has been written (accepted on the TLP port) and its TARGET entry reported written; a failed
// put wrote nothing; GET_RSP packets byte exact (segmentation, pad, NLA, LAST, LEN_M1, lnb);
// errors as one LAST packet with ERR; host memory of every region page compared byte by byte at
// the end (bytes outside the puts untouched); the unit's event counts. Regions have 32-bit keys
// and scopes (RG_SCOPE): puts and gets carry the key's bits 31:8 in their RMA_PKT_LEN words, and
// an initiator outside the scope or a wrong KEY_HI fails with BAD_HANDLE, touching nothing.
//
// Vtgt48: MTU 48, MPS 128, 4 slots. Vtgt240: MTU 240 (3 TLPs per packet at MPS 128), 2 slots.
#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "Vtgt240.h"
#include "Vtgt240_params.h"
#include "Vtgt48.h"
#include "Vtgt48_params.h"
#include "harness.hpp"
#include "host.hpp"
#include "tlp.hpp"
#include "velo/velo_hw.h"

using velo::sim::Harness;
using velo::sim::HostMem;
using velo::sim::HostReader;
using velo::sim::pct;
using velo::sim::rnd;
using velo::sim::Tlp;
using velo::sim::TlpDriver;
using velo::sim::TlpInPins;
using velo::sim::TlpOutPins;
using velo::sim::TlpSink;
using velo::sim::words;

namespace {

// Parameters of each Verilated model: its PARAMS in sim/cmake/rma_tgt.cmake (<model>_params.h)
struct Cfg {
    unsigned mtu, mps, node_bits, region_bits;
};
template <class M>
constexpr Cfg cfg_of() {
    using P = velo::sim::ModelParams<M>;
    return {P::MTU, P::MPS, P::NODE_BITS, P::REGION_BITS};
}
constexpr Cfg kCfg48 = cfg_of<Vtgt48>();
constexpr Cfg kCfg240 = cfg_of<Vtgt240>();
constexpr unsigned kNodeId = 5;
constexpr uint16_t kReqId = 0x0130;

__attribute__((format(printf, 1, 2))) std::string strf(const char* f, ...) {
    char b[512];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(b, sizeof b, f, ap);
    va_end(ap);
    return b;
}
using ull = unsigned long long;

uint8_t pat(uint64_t a) {
    uint64_t x = (a + 0x77) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    return static_cast<uint8_t>(x >> 40);
}

// an NLA: its KEY field holds the key's bits 7:0
uint64_t mknla(unsigned region, uint32_t key, uint64_t off) {
    return VELO_FIELD_PREP(VELO_RMA_NLA_OFFSET, off) | VELO_FIELD_PREP(VELO_RMA_NLA_REGION, region) |
           VELO_FIELD_PREP(VELO_RMA_NLA_KEY, key & 0xFFu);
}
// an RMA_PKT_LEN word: the length and the key's bits 31:8
uint64_t len_word(uint32_t len, uint32_t key_hi) {
    return VELO_FIELD_PREP(VELO_RMA_PKT_LEN_LEN, len) | VELO_FIELD_PREP(VELO_RMA_PKT_LEN_KEY_HI, key_hi);
}
uint64_t nla_add(uint64_t n, uint64_t d) {
    return (n & ~((1ull << 40) - 1)) | ((n + d) & ((1ull << 40) - 1));
}

struct Region {
    bool alloc = false, valid = false, rr = false, rw = false;
    unsigned owner = 0, first = 0;
    uint32_t key = 0;                                                 // RG_KEY
    unsigned vpid_lo = 0, vpid_hi = 255, node_lo = 0, node_hi = 255;  // RG_SCOPE (default: everybody)
    uint32_t start = 0;
    uint64_t len = 0;
    std::vector<uint64_t> pfn;
    uint32_t cfg_word() const {
        return static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_ALLOC, alloc) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_VALID, valid) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_RR, rr) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_PERM_RW, rw) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_CFG_OWNER_VPID, owner));
    }
    uint32_t scope_word() const {
        return static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_VPID_LO, vpid_lo) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_VPID_HI, vpid_hi) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_NODE_LO, node_lo) |
                                     VELO_FIELD_PREP(VELO_TBL_RMA_REGION_RG_SCOPE_NODE_HI, node_hi));
    }
    bool admits(unsigned node, unsigned vpid) const {
        return node >= node_lo && node <= node_hi && vpid >= vpid_lo && vpid <= vpid_hi;
    }
};
// register index (byte offset / 4) of an RMA_REGION / RMA_PTE entry's registers
constexpr unsigned kRgCfg = VELO_TBL_RMA_REGION_RG_CFG / 4, kRgPte = VELO_TBL_RMA_REGION_RG_PTE / 4,
                   kRgStart = VELO_TBL_RMA_REGION_RG_START / 4, kRgLenLo = VELO_TBL_RMA_REGION_RG_LEN_LO / 4,
                   kRgLenHi = VELO_TBL_RMA_REGION_RG_LEN_HI / 4, kRgKey = VELO_TBL_RMA_REGION_RG_KEY / 4,
                   kRgScope = VELO_TBL_RMA_REGION_RG_SCOPE / 4, kPteLo = VELO_TBL_RMA_PTE_PTE_LO / 4,
                   kPteHi = VELO_TBL_RMA_PTE_PTE_HI / 4;

struct Pkt {
    std::vector<uint64_t> w;
    bool stomp = false;
    bool put = false;
};

struct Put {
    uint64_t id = 0;
    unsigned node = 0, vpid = 0, tag = 0;
    uint64_t nla = 0, last_nla = 0, cookie = 0;
    uint32_t len = 0;
    bool notify = false;
    int region = -1;
    uint32_t key_hi = 0;  // KEY_HI of its RMA_PKT_LEN words
    unsigned exp_err = 0;
    bool maybe = false;     // an invalidation may hit it: OK or NOT_VALID
    bool fail_mid = false;  // fails after some packets were written (exp_err, those bytes stay)
    std::vector<uint8_t> data;
    std::vector<bool> wrote;
    size_t nwrote = 0;
    bool ntf_seen = false, ntf_done = false, ntf_drop = false, answered = false;
};

struct Get {
    unsigned node = 0, vpid = 0, tag = 0;
    uint64_t tnla = 0, inla = 0;
    uint32_t len = 0, key_hi = 0;
    unsigned exp_err = 0;
    bool maybe = false;  // a host read fault may end it early (NOT_VALID)
    std::vector<uint8_t> data;
    size_t next_pkt = 0;  // packets received
    uint32_t got = 0;     // data bytes received
    bool done = false;
};

template <class M>
class Bench {
  public:
    Cfg cfg;
    std::mt19937_64 rng;
    Harness<M> h;
    HostMem mem;
    HostReader reader;
    TlpSink wr, mrd;
    TlpDriver cpl;

    // knobs
    int in_gap = 20, out_stall = 20, n_stall = 30, stomp_pct = 0;
    bool enable = true;
    std::vector<bool> nq_disabled = std::vector<bool>(256, false);

    std::vector<Region> rg;
    unsigned next_pte = 0;
    std::map<uint64_t, std::pair<int, unsigned>> frames;  // pfn -> (region, page)
    std::map<uint64_t, uint8_t> img;                      // expected bytes that differ from pat()
    std::deque<std::array<uint32_t, 4>> cfgq;             // {pte, idx, reg, data}

    std::vector<std::deque<Pkt>> inq;
    std::vector<bool> in_hold;  // a node's packets are held back (not sent)
    std::vector<std::unique_ptr<Put>> puts;
    std::vector<std::unique_ptr<Get>> gets;
    std::map<std::pair<unsigned, unsigned>, Put*> put_by_tag;
    std::map<std::pair<unsigned, unsigned>, Get*> get_by_tag;
    std::vector<unsigned> tag_next;
    std::vector<std::string> errs;

    // input driver state
    int in_node = -1;
    size_t in_w = 0;
    bool in_stomp_phase = false;
    std::vector<uint64_t> stomped;
    // output
    std::vector<uint64_t> ow;
    bool o_presented = false;
    // notification port
    Put* ntf = nullptr;
    uint64_t ntf_due = 0;
    bool ntf_busy = false;

    // observations and counters
    uint64_t wr_bytes = 0, rd_bytes = 0, x_put_pkts = 0, x_gets = 0, x_bad = 0, n_err_rsp = 0, n_put_rsp = 0;
    uint64_t n_bh_rsp = 0, c_err_bh = 0;  // BAD_HANDLE responses seen / counted by the unit's events
    uint64_t n_reads = 0;                 // DMA read requests
    uint64_t x_no_route = 0;
    uint64_t c_put_pkt = 0, c_get = 0, c_bad = 0, c_wr = 0, c_rd = 0, c_err = 0, c_no_route = 0, c_put_rsp = 0;
    uint64_t first_tx = ~0ull, last_tx = 0, first_out = ~0ull, last_out = 0, out_bytes = 0;
    std::function<void(const Tlp&)> on_write;  // extra hook for directed tests

    explicit Bench(const Cfg& c)
        : cfg(c),
          rng(velo::sim::test_rng()),
          mem(rng()),
          reader(mem, rng()),
          wr(TlpOutPins{&h->tx_valid, &h->tx_ready, &h->tx_sop, &h->tx_eop, words(h->tx_hdr), words(h->tx_data)}),
          mrd(TlpOutPins{&h->mrd_valid, &h->mrd_ready, &h->mrd_sop, &h->mrd_eop, words(h->mrd_hdr),
                         words(h->mrd_data)}),
          cpl(TlpInPins{&h->cpl_valid, &h->cpl_ready, &h->cpl_sop, &h->cpl_eop, words(h->cpl_hdr), nullptr,
                        words(h->cpl_data)}),
          rg(1u << c.region_bits),
          inq(1u << c.node_bits),
          in_hold(1u << c.node_bits, false),
          tag_next(1u << c.node_bits, 0) {
        wr.rng = &rng;
        wr.stall_pct = 20;
        mrd.rng = &rng;
        mrd.stall_pct = 10;
        cpl.rng = &rng;
        cpl.gap_pct = 10;
        reader.latency_min = 10;
        reader.latency_max = 120;
        reader.gap_max = 4;
        wr.on_tlp = [this](const Tlp& t) { on_tlp(t); };
        mrd.on_tlp = [this](const Tlp& t) {
            ++n_reads;
            if (!reader.request(t, h.cycle())) err("bad memory read " + t.str());
        };
        h->enable = 1;
        h->node_id = kNodeId;
        h->req_id = kReqId;
        h->cfg_valid = 0;
        h->in_valid = 0;
        h->out_ready = 0;
        h->n_ready = 0;
        h->n_done = 0;
        h->n_drop = 0;
        h->q_region = 0;
        h.reset();
        for (int i = 0; i < (1 << 12) && !h->cfg_ready; ++i) h.tick();
    }

    void err(const std::string& s) {
        if (errs.size() < 20) errs.push_back(strf("cycle %llu: ", ull(h.cycle())) + s);
    }

    // ---------------------------------------------------------------- regions
    void cfg_write(bool pte, unsigned idx, unsigned reg, uint32_t data) {
        cfgq.push_back({pte ? 1u : 0u, idx, reg, data});
    }
    void write_cfg(unsigned i) { cfg_write(false, i, kRgCfg, rg[i].cfg_word()); }
    // RG_KEY and RG_SCOPE, as the driver writes them: while the region is not ALLOC
    void write_key_scope(unsigned i) {
        cfg_write(false, i, kRgKey, rg[i].key);
        cfg_write(false, i, kRgScope, rg[i].scope_word());
    }
    // A region of len bytes starting at byte `start` of its first page, frames scattered (some
    // above 4 GiB), page contents pat().
    void add_region(unsigned i, uint64_t len, uint32_t start, bool rr, bool rw, unsigned owner) {
        Region& g = rg[i];
        g.alloc = true;
        g.valid = true;
        g.rr = rr;
        g.rw = rw;
        g.owner = owner;
        g.key = static_cast<uint32_t>(rng());
        g.start = start;
        g.len = len;
        g.first = next_pte;
        const unsigned pages = static_cast<unsigned>((start + len + 4095) / 4096);
        g.pfn.clear();
        for (unsigned p = 0; p < pages; ++p) {
            uint64_t f;
            do {
                f = pct(rng, 25) ? 0x100000 + static_cast<uint64_t>(rnd(rng, 1 << 20))
                                 : 0x40 + static_cast<uint64_t>(rnd(rng, 0xFFF00));
            } while (frames.count(f));
            frames[f] = {static_cast<int>(i), p};
            g.pfn.push_back(f);
            cfg_write(true, next_pte, kPteLo, static_cast<uint32_t>(f));
            cfg_write(true, next_pte, kPteHi, static_cast<uint32_t>(f >> 32));
            ++next_pte;
            std::vector<uint8_t> b(4096);
            for (unsigned k = 0; k < 4096; ++k) b[k] = pat(f * 4096 + k);
            mem.write(f * 4096, b.data(), b.size());
        }
        cfg_write(false, i, kRgPte, g.first);
        cfg_write(false, i, kRgStart, start);
        cfg_write(false, i, kRgLenLo, static_cast<uint32_t>(len));
        cfg_write(false, i, kRgLenHi, static_cast<uint32_t>(len >> 32));
        write_key_scope(i);
        write_cfg(i);
    }
    uint64_t phys(unsigned i, uint64_t off) const {
        const Region& g = rg[i];
        const uint64_t a = g.start + off;
        return g.pfn[a / 4096] * 4096 + a % 4096;
    }
    // expected translation outcome (docs/rma.md §2.2) for a remote access by (node, vpid) with the
    // key bits 31:8 key_hi: the whole key and the scope before anything else
    unsigned check(uint64_t nla, uint64_t len, bool write, uint32_t key_hi, unsigned node, unsigned vpid) const {
        const unsigned idx = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_NLA_REGION, nla));
        const unsigned key = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_NLA_KEY, nla));
        const uint64_t off = VELO_FIELD_GET(VELO_RMA_NLA_OFFSET, nla);
        if (!enable) return VELO_RMA_ERR_DISABLED;
        if (idx >= rg.size() || !rg[idx].alloc || (rg[idx].key & 0xFFu) != key) return VELO_RMA_ERR_BAD_HANDLE;
        const Region& g = rg[idx];
        if ((g.key >> 8) != key_hi || !g.admits(node, vpid)) return VELO_RMA_ERR_BAD_HANDLE;
        if (!(write ? g.rw : g.rr)) return VELO_RMA_ERR_PERM;
        if (off + len > g.len) return VELO_RMA_ERR_RANGE;
        if (!g.valid) return VELO_RMA_ERR_NOT_VALID;
        return 0;
    }
    uint8_t expected_byte(uint64_t a) const {
        auto it = img.find(a);
        return it == img.end() ? pat(a) : it->second;
    }

    // ---------------------------------------------------------------- requests
    uint64_t hdr(unsigned type, unsigned node, unsigned vpid, unsigned tag, bool first, bool last, bool notify,
                 unsigned area) {
        return VELO_FIELD_PREP(VELO_RMA_PKT_HDR_ROUTE, rng() & 0x3FFF) | VELO_FIELD_PREP(VELO_RMA_PKT_HDR_TYPE, type) |
               VELO_FIELD_PREP(VELO_RMA_PKT_HDR_FIRST, first) | VELO_FIELD_PREP(VELO_RMA_PKT_HDR_LAST, last) |
               VELO_FIELD_PREP(VELO_RMA_PKT_HDR_NOTIFY, notify) | VELO_FIELD_PREP(VELO_RMA_PKT_HDR_SRC_NODE, node) |
               VELO_FIELD_PREP(VELO_RMA_PKT_HDR_SRC_VPID, vpid) | VELO_FIELD_PREP(VELO_RMA_PKT_HDR_TAG, tag) |
               VELO_FIELD_PREP(VELO_RMA_PKT_HDR_LEN_M1, area - 1);
    }
    static void put_bytes(std::vector<uint64_t>& w, unsigned byte0, const uint8_t* p, size_t n) {
        for (size_t k = 0; k < n; ++k) {
            const size_t b = byte0 + k;
            if (b / 8 >= w.size()) w.resize(b / 8 + 1, 0);
            w[b / 8] |= static_cast<uint64_t>(p[k]) << (8 * (b % 8));
        }
    }
    // the node's next tag, once its previous use is answered
    unsigned new_tag(unsigned node) {
        const unsigned t = tag_next[node]++ & 0xFF;
        const uint64_t end = h.cycle() + 1000000;
        while ((put_by_tag.count({node, t}) || get_by_tag.count({node, t})) && h.cycle() < end && errs.empty()) step();
        return t;
    }

    // the key bits 31:8 a request for nla carries by default: its region's
    uint32_t key_hi_of(uint64_t nla) const {
        const unsigned idx = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_NLA_REGION, nla));
        return idx < rg.size() ? rg[idx].key >> 8 : 0;
    }
    // A put from (node, vpid) (vpid < 0: random) with KEY_HI key_hi (< 0: the region's)
    Put* put(unsigned node, uint64_t nla, uint32_t len, bool notify = false, bool maybe = false, int vpid = -1,
             int64_t key_hi = -1) {
        while (!cfgq.empty()) step();  // the tables as the prediction sees them
        auto p = std::make_unique<Put>();
        p->id = puts.size();
        p->node = node;
        p->vpid = vpid >= 0 ? static_cast<unsigned>(vpid) : static_cast<unsigned>(rnd(rng, 256));
        p->key_hi = key_hi >= 0 ? static_cast<uint32_t>(key_hi) : key_hi_of(nla);
        p->tag = new_tag(node);
        p->nla = nla;
        p->len = len;
        p->notify = notify;
        p->cookie = rng();
        p->maybe = maybe;
        p->region = static_cast<int>(VELO_FIELD_GET(VELO_RMA_NLA_REGION, nla));
        p->exp_err = check(nla, len, true, p->key_hi, node, p->vpid);
        if (!p->exp_err && notify && nq_disabled[rg[p->region].owner]) p->exp_err = VELO_RMA_ERR_NQ_DISABLED;
        p->data.resize(len);
        for (auto& b : p->data) b = static_cast<uint8_t>(rng());
        p->wrote.assign(len, false);
        const uint64_t off0 = VELO_FIELD_GET(VELO_RMA_NLA_OFFSET, nla);
        uint32_t done = 0;
        bool first = true;
        do {
            const uint64_t off = off0 + done;
            const uint32_t room = first ? cfg.mtu - static_cast<uint32_t>(off % 8) : cfg.mtu;
            const uint32_t n = std::min(len - done, room);
            const bool last = (done + n == len) && !notify;
            if (len == 0 && notify) break;
            Pkt k;
            k.put = true;
            const unsigned hw = first ? 16 : 8, pad = static_cast<unsigned>(off % 4);
            const unsigned area = n ? hw + pad + n : hw;
            k.w.push_back(hdr(VELO_PKT_TYPE_RMA_PUT, node, p->vpid, p->tag, first, last, false, area));
            k.w.push_back(nla_add(nla, done));
            if (first) k.w.push_back(len_word(len, p->key_hi));
            put_bytes(k.w, 8 + hw + pad, p->data.data() + done, n);
            k.w.resize(1 + (area + 7) / 8, 0);
            if (last) p->last_nla = nla_add(nla, done);
            k.stomp = pct(rng, stomp_pct);
            inq[node].push_back(k);
            done += n;
            first = false;
        } while (done < len);
        if (notify) {
            Pkt k;
            k.put = true;
            k.w.push_back(hdr(VELO_PKT_TYPE_RMA_PUT, node, p->vpid, p->tag, len == 0, true, true, 24));
            k.w.push_back(nla);
            k.w.push_back(len_word(len, p->key_hi));
            k.w.push_back(p->cookie);
            p->last_nla = nla;
            k.stomp = pct(rng, stomp_pct);
            inq[node].push_back(k);
        }
        if (put_by_tag.count({node, p->tag})) err("bench: tag reused while in flight");
        put_by_tag[{node, p->tag}] = p.get();
        puts.push_back(std::move(p));
        return puts.back().get();
    }

    // A get by (node, vpid) (vpid < 0: random) with KEY_HI key_hi (< 0: the region's)
    Get* get(unsigned node, uint64_t tnla, uint32_t len, uint64_t inla, bool maybe = false, int vpid = -1,
             int64_t key_hi = -1) {
        while (!cfgq.empty()) step();
        auto g = std::make_unique<Get>();
        g->node = node;
        g->vpid = vpid >= 0 ? static_cast<unsigned>(vpid) : static_cast<unsigned>(rnd(rng, 256));
        g->key_hi = key_hi >= 0 ? static_cast<uint32_t>(key_hi) : key_hi_of(tnla);
        g->tag = new_tag(node);
        g->tnla = tnla;
        g->inla = inla;
        g->len = len;
        g->maybe = maybe;
        g->exp_err = check(tnla, len, false, g->key_hi, node, g->vpid);
        if (!g->exp_err) {
            const unsigned r = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_NLA_REGION, tnla));
            const uint64_t off = VELO_FIELD_GET(VELO_RMA_NLA_OFFSET, tnla);
            for (uint32_t k = 0; k < len; ++k) g->data.push_back(expected_byte(phys(r, off + k)));
        }
        Pkt k;
        k.w = {hdr(VELO_PKT_TYPE_RMA_GET, node, g->vpid, g->tag, false, false, false, 24), tnla,
               len_word(len, g->key_hi), inla};
        k.stomp = pct(rng, stomp_pct);
        inq[node].push_back(k);
        if (get_by_tag.count({node, g->tag})) err("bench: tag reused while in flight");
        get_by_tag[{node, g->tag}] = g.get();
        gets.push_back(std::move(g));
        return gets.back().get();
    }

    // ---------------------------------------------------------------- DMA writes
    void on_tlp(const Tlp& t) {
        if (std::getenv("TGT_DEBUG")) std::printf("%llu tlp %s\n", ull(h.cycle()), t.str().c_str());
        if (!t.is_mwr() || t.req_id != kReqId) {
            err("not a memory write: " + t.str());
            return;
        }
        auto bytes = velo::sim::mwr_bytes(t);
        if (bytes.empty() || bytes.size() > cfg.mps) err("write size " + t.str());
        if (t.is_4dw() != ((t.addr >> 32) != 0)) err("3DW/4DW " + t.str());
        const uint64_t a0 = bytes.front().first, a1 = bytes.back().first;
        if (a0 / cfg.mps != a1 / cfg.mps) err("write crosses an MPS boundary " + t.str());
        if (a1 - a0 + 1 != bytes.size()) err("write not contiguous " + t.str());
        wr_bytes += bytes.size();
        if (on_write) on_write(t);
        // which put: the oldest in flight covering the first byte and not having written it; puts
        // that must fail are candidates only when no other is (an answer held back by a stalled
        // response port leaves a failed put in flight while a later put of its node writes there)
        auto fr = frames.find(a0 / 4096);
        if (fr == frames.end()) {
            err(strf("write outside every region page at %llx", ull(a0)));
            mem.post(t);
            return;
        }
        const int r = fr->second.first;
        Put* who = nullptr;
        uint64_t o0 = 0;
        for (int pass = 0; pass < 2 && !who; ++pass)
            for (auto& [k, p] : put_by_tag) {
                const bool must_fail = p->exp_err && !p->maybe && p->exp_err != VELO_RMA_ERR_NQ_DISABLED;
                if (p->region != r || p->answered || must_fail != (pass == 1)) continue;
                const uint64_t a = fr->second.second * 4096ull + a0 % 4096;
                if (a < rg[r].start) continue;
                const uint64_t off = a - rg[r].start;
                const uint64_t po = VELO_FIELD_GET(VELO_RMA_NLA_OFFSET, p->nla);
                if (off < po || off - po >= p->len || p->wrote[off - po]) continue;
                if (!who || p->id < who->id) {
                    who = p;
                    o0 = off - po;
                }
            }
        if (!who) {
            err(strf("write at %llx (region %d) belongs to no put in flight", ull(a0), r));
        } else if (who->exp_err && !who->maybe && who->exp_err != VELO_RMA_ERR_NQ_DISABLED) {
            err(strf("put %llu (expected error %u) writes at %llx", ull(who->id), who->exp_err, ull(a0)));
        } else {
            for (size_t k = 0; k < bytes.size(); ++k) {
                const uint64_t o = o0 + k;
                if (o >= who->len || who->wrote[o]) {
                    err(strf("put %llu: byte %llu written twice or outside", ull(who->id), ull(o)));
                    break;
                }
                if (bytes[k].second != who->data[o]) {
                    err(strf("put %llu (offset %llu): byte %llu is %02x, expected %02x (TLP %s)", ull(who->id),
                             ull(VELO_FIELD_GET(VELO_RMA_NLA_OFFSET, who->nla)), ull(o), bytes[k].second, who->data[o],
                             t.str().c_str()));
                    break;
                }
                if (phys(static_cast<unsigned>(r), VELO_FIELD_GET(VELO_RMA_NLA_OFFSET, who->nla) + o) != bytes[k].first)
                    err(strf("put %llu: byte %llu at the wrong address %llx", ull(who->id), ull(o),
                             ull(bytes[k].first)));
                who->wrote[o] = true;
                ++who->nwrote;
            }
        }
        mem.post(t);
        if (first_tx == ~0ull) first_tx = h.cycle();
        last_tx = h.cycle();
    }

    // ---------------------------------------------------------------- responses
    void on_put_rsp(const std::vector<uint64_t>& w, unsigned node, bool presented_only) {
        const unsigned tag = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_PKT_HDR_TAG, w[0]));
        auto it = put_by_tag.find({node, tag});
        if (it == put_by_tag.end()) {
            err(strf("PUT_RSP for node %u tag %u: no such put", node, tag));
            return;
        }
        Put* p = it->second;
        const unsigned e = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_PKT_HDR_ERR, w[0]));
        if (presented_only) {
            // §3.3: every data write accepted and the TARGET entry written before the response
            if (e == 0 && p->nwrote != p->len)
                err(strf("put %llu: PUT_RSP presented after %zu of %u bytes written", ull(p->id), p->nwrote, p->len));
            if (p->notify && e == 0 && !p->ntf_done) err(strf("put %llu: PUT_RSP before the TARGET entry", ull(p->id)));
            return;
        }
        ++n_put_rsp;
        if (e) ++n_err_rsp;
        if (e == VELO_RMA_ERR_BAD_HANDLE) ++n_bh_rsp;
        const bool ok_maybe = p->maybe && (e == 0 || e == VELO_RMA_ERR_NOT_VALID);
        if (e != p->exp_err && !ok_maybe) err(strf("put %llu: ERR %u, expected %u", ull(p->id), e, p->exp_err));
        if (e && e != VELO_RMA_ERR_NQ_DISABLED && !p->maybe && !p->fail_mid && p->nwrote)
            err(strf("put %llu failed (%u) but wrote %zu bytes", ull(p->id), e, p->nwrote));
        if (w.size() != 2 || w[1] != p->last_nla) err(strf("put %llu: PUT_RSP words/NLA", ull(p->id)));
        const uint64_t h0 = w[0];
        if (VELO_FIELD_GET(VELO_RMA_PKT_HDR_VC, h0) != 2 || VELO_FIELD_GET(VELO_RMA_PKT_HDR_SRC_NODE, h0) != kNodeId ||
            VELO_FIELD_GET(VELO_RMA_PKT_HDR_SRC_VPID, h0) != p->vpid ||
            VELO_FIELD_GET(VELO_RMA_PKT_HDR_LEN_M1, h0) != 7 || VELO_FIELD_GET(VELO_RMA_PKT_HDR_FIRST, h0) ||
            VELO_FIELD_GET(VELO_RMA_PKT_HDR_LAST, h0) || VELO_FIELD_GET(VELO_RMA_PKT_HDR_NOTIFY, h0))
            err(strf("put %llu: PUT_RSP header %016llx", ull(p->id), ull(h0)));
        if (p->notify && (e == 0) != (p->ntf_done && !p->ntf_drop) && e != VELO_RMA_ERR_NQ_DISABLED)
            err(strf("put %llu: notification state vs ERR %u", ull(p->id), e));
        if (e == VELO_RMA_ERR_NQ_DISABLED && !p->ntf_drop)
            err(strf("put %llu: NQ_DISABLED without a drop", ull(p->id)));
        // its bytes become the expected memory (written ones only: all of them unless it failed)
        const uint64_t po = VELO_FIELD_GET(VELO_RMA_NLA_OFFSET, p->nla);
        for (uint32_t k = 0; k < p->len; ++k)
            if (p->wrote[k]) img[phys(static_cast<unsigned>(p->region), po + k)] = p->data[k];
        p->answered = true;
        put_by_tag.erase(it);
    }

    void on_get_rsp(const std::vector<uint64_t>& w, unsigned node, unsigned lnb) {
        const uint64_t h0 = w[0];
        const unsigned tag = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_PKT_HDR_TAG, h0));
        auto it = get_by_tag.find({node, tag});
        if (it == get_by_tag.end()) {
            err(strf("GET_RSP for node %u tag %u: no such get", node, tag));
            return;
        }
        Get* g = it->second;
        const unsigned e = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_PKT_HDR_ERR, h0));
        const bool last = VELO_FIELD_GET(VELO_RMA_PKT_HDR_LAST, h0);
        const unsigned area = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_PKT_HDR_LEN_M1, h0)) + 1;
        if (VELO_FIELD_GET(VELO_RMA_PKT_HDR_VC, h0) != 2 || VELO_FIELD_GET(VELO_RMA_PKT_HDR_SRC_NODE, h0) != kNodeId ||
            VELO_FIELD_GET(VELO_RMA_PKT_HDR_SRC_VPID, h0) != g->vpid || VELO_FIELD_GET(VELO_RMA_PKT_HDR_FIRST, h0))
            err(strf("get %u/%u: header %016llx", node, tag, ull(h0)));
        if (w.size() != 1 + (area + 7) / 8 || lnb != (area - 1) % 8)
            err(strf("get %u/%u: %zu words, lnb %u for area %u", node, tag, w.size(), lnb, area));
        if (w.size() < 2) return;
        const uint64_t exp_nla = nla_add(g->inla, g->got);
        if (w[1] != exp_nla) err(strf("get %u/%u: NLA %llx, expected %llx", node, tag, ull(w[1]), ull(exp_nla)));
        if (e) {
            ++n_err_rsp;
            if (e == VELO_RMA_ERR_BAD_HANDLE) ++n_bh_rsp;
            const bool ok = (e == g->exp_err && g->got == 0) || (g->maybe && e == VELO_RMA_ERR_NOT_VALID);
            if (!ok) err(strf("get %u/%u: ERR %u after %u bytes, expected %u", node, tag, e, g->got, g->exp_err));
            if (!last || area != 8) err(strf("get %u/%u: error packet not LAST or with data", node, tag));
            g->done = true;
            get_by_tag.erase(it);
            return;
        }
        if (g->exp_err) err(strf("get %u/%u: data, expected error %u", node, tag, g->exp_err));
        const uint64_t io = VELO_FIELD_GET(VELO_RMA_NLA_OFFSET, g->inla) + g->got;
        const unsigned pad = static_cast<unsigned>(io % 4);
        const uint32_t room = g->got == 0 ? cfg.mtu - static_cast<uint32_t>(io % 8) : cfg.mtu;
        const uint32_t n = std::min(g->len - g->got, room);
        if (area != 8 + pad + n) err(strf("get %u/%u: area %u, expected %u", node, tag, area, 8 + pad + n));
        for (uint32_t k = 0; k < n && g->got + k < g->data.size(); ++k) {
            const unsigned b = 16 + pad + k;
            if (b / 8 >= w.size()) break;
            const uint8_t v = static_cast<uint8_t>(w[b / 8] >> (8 * (b % 8)));
            if (v != g->data[g->got + k]) {
                err(strf("get %u/%u: byte %u is %02x, expected %02x", node, tag, g->got + k, v, g->data[g->got + k]));
                break;
            }
        }
        g->got += n;
        rd_bytes += n;
        if (last != (g->got >= g->len))
            err(strf("get %u/%u: LAST %d at %u of %u bytes", node, tag, last, g->got, g->len));
        if (last) {
            g->done = true;
            get_by_tag.erase(it);
        }
    }

    void on_packet(const std::vector<uint64_t>& w, unsigned lnb) {
        const unsigned route = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_PKT_HDR_ROUTE, w[0]));
        if ((route - 1) % 5 != 0) {
            err(strf("response route %x", route));
            return;
        }
        const unsigned node = (route - 1) / 5;
        const unsigned type = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_PKT_HDR_TYPE, w[0]));
        if (type == VELO_PKT_TYPE_RMA_PUT_RSP) {
            if (lnb != 7) err("PUT_RSP lnb");
            on_put_rsp(w, node, false);
        } else if (type == VELO_PKT_TYPE_RMA_GET_RSP) {
            on_get_rsp(w, node, lnb);
        } else {
            err(strf("response of type %u", type));
        }
    }

    // ---------------------------------------------------------------- one cycle
    void drive_in() {
        h->in_valid = 0;
        h->in_bad = 0;
        h->in_last = 0;
        if (in_node < 0) {
            std::vector<unsigned> c;
            for (unsigned n = 0; n < inq.size(); ++n)
                if (!inq[n].empty() && !in_hold[n]) c.push_back(n);
            if (c.empty()) return;
            in_node = static_cast<int>(c[static_cast<size_t>(rnd(rng, static_cast<int>(c.size())))]);
            in_w = 0;
            Pkt& p = inq[static_cast<size_t>(in_node)].front();
            in_stomp_phase = p.stomp;
            if (p.stomp) {
                // what a stomped packet may look like: cut anywhere, words corrupted, marked bad
                stomped = p.w;
                stomped.resize(1 + static_cast<size_t>(rnd(rng, static_cast<int>(p.w.size()) + 2)), rng());
                for (size_t i = 1; i < stomped.size(); ++i)
                    if (pct(rng, 30)) stomped[i] ^= 1ull << rnd(rng, 64);
            }
        }
        if (in_gap && pct(rng, in_gap)) return;
        const std::vector<uint64_t>& w = in_stomp_phase ? stomped : inq[static_cast<size_t>(in_node)].front().w;
        h->in_valid = 1;
        h->in_data = w[in_w];
        h->in_last = in_w + 1 == w.size();
        h->in_bad = in_stomp_phase && h->in_last;
    }
    void sample_in() {
        if (!(h->in_valid && h->in_ready)) return;
        if (!h->in_last) {
            ++in_w;
            return;
        }
        if (in_stomp_phase) {
            ++x_bad;
            in_stomp_phase = false;
            in_w = 0;
            return;
        }
        Pkt& p = inq[static_cast<size_t>(in_node)].front();
        if (std::getenv("TGT_DEBUG"))
            std::printf("%llu in node %d %016llx words %zu\n", ull(h.cycle()), in_node, ull(p.w[0]), p.w.size());
        if (p.put)
            ++x_put_pkts;
        else
            ++x_gets;
        inq[static_cast<size_t>(in_node)].pop_front();
        in_node = -1;
    }

    void drive_ntf() {
        h->n_done = 0;
        h->n_drop = 0;
        if (ntf_busy && h.cycle() >= ntf_due) {
            if (ntf->ntf_drop)
                h->n_drop = 1;
            else
                h->n_done = 1;
            ntf->ntf_done = !ntf->ntf_drop;
            ntf_busy = false;
        }
        h->n_ready = !ntf_busy && !(n_stall && pct(rng, n_stall));
    }
    void sample_ntf() {
        if (!(h->n_valid && h->n_ready)) return;
        auto e = words(h->n_entry);
        const uint64_t w0 = e.get64(0), cookie = e.get64(1), w2 = e.get64(2), w3 = e.get64(3);
        Put* p = nullptr;
        for (auto& [k, q] : put_by_tag)
            if (q->cookie == cookie) p = q;
        if (!p) {
            err("TARGET entry with an unknown cookie");
            return;
        }
        if (!p->notify || p->ntf_seen || (p->exp_err && p->exp_err != VELO_RMA_ERR_NQ_DISABLED && !p->maybe))
            err("unexpected TARGET entry");
        if (p->nwrote != p->len) err(strf("put %llu: TARGET entry before its data were written", ull(p->id)));
        const uint64_t x0 =
            VELO_FIELD_PREP(VELO_RMA_NQ_HDR_KIND, VELO_RMA_NQ_KIND_TARGET) |
            VELO_FIELD_PREP(VELO_RMA_NQ_HDR_SLOT_CNT, 1) | VELO_FIELD_PREP(VELO_RMA_NQ_HDR_PEER_NODE, p->node) |
            VELO_FIELD_PREP(VELO_RMA_NQ_HDR_PEER_VPID, p->vpid) | VELO_FIELD_PREP(VELO_RMA_NQ_HDR_OP, VELO_RMA_OP_PUT);
        if (w0 != x0 || w2 != p->len || w3 != p->nla || h->n_vpid != rg[static_cast<size_t>(p->region)].owner)
            err(strf("put %llu: TARGET entry %016llx %llx %llx vpid %u", ull(p->id), ull(w0), ull(w2), ull(w3),
                     unsigned(h->n_vpid)));
        p->ntf_seen = true;
        p->ntf_drop = nq_disabled[h->n_vpid];
        ntf = p;
        ntf_busy = true;
        ntf_due = h.cycle() + 1 + static_cast<uint64_t>(rnd(rng, 8));
    }

    void step() {
        // configuration writes, one per cycle
        h->cfg_valid = !cfgq.empty();
        if (!cfgq.empty()) {
            auto& c = cfgq.front();
            h->cfg_pte = c[0];
            h->cfg_idx = c[1];
            h->cfg_reg = c[2];
            h->cfg_data = c[3];
        }
        h->enable = enable;
        drive_in();
        h->out_ready = !(out_stall && pct(rng, out_stall));
        drive_ntf();
        wr.drive();
        mrd.drive();
        cpl.drive();
        h.eval();
        // sample
        if (h->cfg_valid && h->cfg_ready) cfgq.pop_front();
        sample_in();
        if (h->out_valid && !o_presented && ow.empty()) {
            o_presented = true;
            const uint64_t w0 = h->out_data;
            const unsigned route = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_PKT_HDR_ROUTE, w0));
            if (VELO_FIELD_GET(VELO_RMA_PKT_HDR_TYPE, w0) == VELO_PKT_TYPE_RMA_PUT_RSP && (route - 1) % 5 == 0)
                on_put_rsp({w0}, (route - 1) / 5, true);
        }
        if (h->out_valid && h->out_ready) {
            ow.push_back(h->out_data);
            if (first_out == ~0ull) first_out = h.cycle();
            last_out = h.cycle();
            out_bytes += 8;
            if (h->out_last && std::getenv("TGT_DEBUG"))
                std::printf("%llu out %016llx words %zu\n", ull(h.cycle()), ull(ow[0]), ow.size());
            if (h->out_last) {
                on_packet(ow, h->out_lnb);
                ow.clear();
                o_presented = false;
            }
        }
        sample_ntf();
        wr.sample();
        mrd.sample();
        cpl.sample();
        if (h->atu_rel_underflow) err("ATU release underflow");
        if (!h->cpl_ready) err("cpl_ready low");
        if (h->ev_put_pkt && std::getenv("TGT_DEBUG")) std::printf("%llu ev_put_pkt\n", ull(h.cycle()));
        c_put_pkt += h->ev_put_pkt;
        c_get += h->ev_get;
        c_bad += h->ev_bad;
        c_wr += h->ev_wr_bytes;
        c_rd += h->ev_rd_bytes;
        c_err += h->ev_err + h->ev_gerr;
        c_err_bh += (h->ev_err && h->ev_err_code == VELO_RMA_ERR_BAD_HANDLE) +
                    (h->ev_gerr && h->ev_gerr_code == VELO_RMA_ERR_BAD_HANDLE);
        c_no_route += h->ev_no_route;
        c_put_rsp += h->ev_put_rsp;
        h.tick();
        mem.step();
        if (cpl.idle()) {
            Tlp c;
            if (reader.pop(h.cycle(), c)) cpl.push(c);
        }
    }

    bool quiet() const {
        for (size_t n = 0; n < inq.size(); ++n)
            if (!inq[n].empty() && !in_hold[n]) return false;
        return put_by_tag.empty() && get_by_tag.empty() && cfgq.empty() && !ntf_busy;
    }
    // Run until every put and get is answered (and the unit idle), at most `limit` cycles.
    void run(uint64_t limit = 1000000) {
        const uint64_t end = h.cycle() + limit;
        while (!(quiet() && !h->busy && in_node < 0) && h.cycle() < end && errs.size() < 20) step();
        for (int i = 0; i < 50; ++i) step();
        if (!quiet()) err(strf("not done: %zu puts, %zu gets unanswered", put_by_tag.size(), get_by_tag.size()));
    }
    // everything checked at the end
    void finish(bool counters = true) {
        run();
        // every translation handed out was released: each region reads quiet (a get ending inside
        // a page used to keep its region's in-use counter raised for ever)
        for (unsigned r = 0; r < rg.size(); ++r) {
            h->q_region = r;
            for (int k = 0; k < 4; ++k) step();
            if (h->q_busy) err(strf("region %u never quiesces: a translation was not released", r));
        }
        mem.drain();
        unsigned bad = 0;
        for (auto& [f, rp] : frames) {
            for (uint64_t a = f * 4096; a < f * 4096 + 4096 && bad < 5; ++a)
                if (mem.read8(a) != expected_byte(a)) {
                    err(strf("memory at %llx (region %d) is %02x, expected %02x", ull(a), rp.first, mem.read8(a),
                             expected_byte(a)));
                    ++bad;
                }
        }
        for (auto& e : wr.errors) err(e);
        for (auto& e : mrd.errors) err(e);
        for (auto& e : reader.errors) err(e);
        if (counters) {
            EXPECT_EQ(c_put_pkt, x_put_pkts);
            EXPECT_EQ(c_get, x_gets);
            EXPECT_EQ(c_bad, x_bad);
            EXPECT_EQ(c_wr, wr_bytes);
            EXPECT_EQ(c_rd, rd_bytes);
            EXPECT_EQ(c_err, n_err_rsp);
            EXPECT_EQ(c_err_bh, n_bh_rsp) << "ERR_BAD_HANDLE events";
            EXPECT_EQ(c_put_rsp, n_put_rsp);
            EXPECT_EQ(c_no_route, x_no_route);
        }
        for (auto& e : errs) ADD_FAILURE() << e;
        EXPECT_TRUE(errs.empty());
    }

    // ---------------------------------------------------------------- scenarios
    // Regions: 0..7 writable (each written by one node: n % 4... region i by node i % 6), 8..11
    // readable only, 12 neither. Scopes: 1 admits node 0 with vpids 0..127 only, 3 node 1 with
    // vpids 128..255, 9 nodes 2..5, 11 vpid 7 of every node; the others everybody (random vpids:
    // about half the accesses to 1, 3, 11 fail with BAD_HANDLE, gets from nodes 0 and 1 to 9 too).
    void std_regions() {
        for (unsigned i = 0; i < 8; ++i)
            add_region(i, 70000 + static_cast<uint64_t>(rnd(rng, 30000)), static_cast<uint32_t>(rnd(rng, 4096)), false,
                       true, static_cast<unsigned>(rnd(rng, 16)));
        for (unsigned i = 8; i < 12; ++i)
            add_region(i, 70000 + static_cast<uint64_t>(rnd(rng, 30000)), static_cast<uint32_t>(rnd(rng, 4096)), true,
                       false, static_cast<unsigned>(rnd(rng, 16)));
        add_region(12, 9000, 100, false, false, 3);
        auto scope = [&](unsigned i, unsigned nlo, unsigned nhi, unsigned vlo, unsigned vhi) {
            rg[i].alloc = false;  // RG_KEY and RG_SCOPE only while not ALLOC
            write_cfg(i);
            rg[i].node_lo = nlo;
            rg[i].node_hi = nhi;
            rg[i].vpid_lo = vlo;
            rg[i].vpid_hi = vhi;
            write_key_scope(i);
            rg[i].alloc = true;
            write_cfg(i);
        };
        scope(1, 0, 0, 0, 127);
        scope(3, 1, 1, 128, 255);
        scope(9, 2, 5, 0, 255);
        scope(11, 0, 255, 7, 7);
    }
    uint32_t rnd_len(int maxlog = 16) {
        const int l = rnd(rng, maxlog + 1);
        return 1 + static_cast<uint32_t>(rnd(rng, 1 << l));
    }
    // a random put from node n (to its own regions, or a failing one now and then)
    void random_put(unsigned n, bool notify_ok = true) {
        unsigned r = n % 6 < 4 ? (n % 6) * 2 + static_cast<unsigned>(rnd(rng, 2)) : 0;
        if (n % 6 >= 4) r = 8 + static_cast<unsigned>(rnd(rng, 4));  // read-only: PERM
        uint32_t len = std::min<uint32_t>(rnd_len(), 65536);
        if (pct(rng, 3)) len = 0;
        uint64_t off =
            static_cast<uint64_t>(rnd(rng, static_cast<int>(rg[r].len - std::min<uint64_t>(len, rg[r].len))));
        uint32_t key = rg[r].key;
        const int k = rnd(rng, 100);
        if (k < 4)
            key ^= 1 + static_cast<unsigned>(rnd(rng, 255));  // BAD_HANDLE (bits 7:0)
        else if (k < 8)
            off = rg[r].len - len + 1 + static_cast<uint64_t>(rnd(rng, 64));  // RANGE
        else if (k < 10)
            r = 12;  // PERM
        else if (k < 13)
            key ^= 1u << (8 + rnd(rng, 24));  // BAD_HANDLE (bits 31:8)
        if (r == 12) key = rg[12].key;
        put(n, mknla(r, key, off), len, notify_ok && pct(rng, 15), false, -1, key >> 8);
    }
    void random_get(unsigned n) {
        unsigned r = 8 + static_cast<unsigned>(rnd(rng, 4));
        if (pct(rng, 5)) r = static_cast<unsigned>(rnd(rng, 8));  // not readable
        const uint32_t len = std::min<uint32_t>(rnd_len(), 65536);
        uint64_t off =
            static_cast<uint64_t>(rnd(rng, static_cast<int>(rg[r].len - std::min<uint64_t>(len, rg[r].len))));
        uint32_t key = rg[r].key;
        if (pct(rng, 4)) key ^= 0x40;
        if (pct(rng, 3)) key ^= 1u << (8 + rnd(rng, 24));
        if (pct(rng, 4)) off = rg[r].len - len + 1;
        get(n, mknla(r, key, off), len,
            mknla(static_cast<unsigned>(rnd(rng, 256)), static_cast<unsigned>(rnd(rng, 256)),
                  static_cast<uint64_t>(rnd(rng, 1 << 30))),
            false, -1, key >> 8);
    }
};

template <class M>
void random_mix(const Cfg& c, int ops, int stomp) {
    Bench<M> b(c);
    b.stomp_pct = stomp;
    b.std_regions();
    for (unsigned v = 0; v < 16; ++v) b.nq_disabled[v] = (v == 3);
    for (int i = 0; i < ops; ++i) {
        const unsigned n = static_cast<unsigned>(rnd(b.rng, 6));
        if (pct(b.rng, 30))
            b.random_get(n);
        else
            b.random_put(n);
    }
    b.finish();
    EXPECT_GT(b.n_bh_rsp, 5u) << "BAD_HANDLE (key, scope) barely exercised";
}

}  // namespace

// ---------------------------------------------------------------- random
TEST(RmaTgt, Random48) {
    random_mix<Vtgt48>(kCfg48, 120, 0);
}
TEST(RmaTgt, Random240) {
    random_mix<Vtgt240>(kCfg240, 120, 0);
}
TEST(RmaTgt, RandomStomped48) {
    random_mix<Vtgt48>(kCfg48, 80, 25);
}
TEST(RmaTgt, RandomStomped240) {
    random_mix<Vtgt240>(kCfg240, 80, 25);
}

// ---------------------------------------------------------------- directed
// Every small length at every alignment, regions starting at every byte of a DW (the rotator),
// across 128-byte (MPS) and page boundaries.
template <class M>
void small_aligned(const Cfg& c) {
    Bench<M> b(c);
    for (unsigned i = 0; i < 4; ++i) b.add_region(i, 3 * 4096, 4096 - 300 + i, false, true, 1);
    for (unsigned i = 0; i < 4; ++i)
        for (uint32_t len = 1; len <= 24; ++len)
            for (uint64_t off = 0; off < 16; ++off) b.put(i % 3, mknla(i, b.rg[i].key, 260 + off + (len % 3) * 8), len);
    for (uint32_t len : {1u, 7u, 47u, 48u, 49u, 255u, 256u, 4096u, 4097u, 8000u})
        for (uint64_t off : {0ull, 1ull, 3ull, 4ull, 5ull, 7ull, 290ull, 4000ull})
            b.put(static_cast<unsigned>((off % 4) % 3), mknla(off % 4, b.rg[off % 4].key, off), len);
    b.finish();
}
TEST(RmaTgt, SmallEveryAlignment48) {
    small_aligned<Vtgt48>(kCfg48);
}
TEST(RmaTgt, SmallEveryAlignment240) {
    small_aligned<Vtgt240>(kCfg240);
}

// Each error reason: one PUT_RSP (or one LAST GET_RSP) with it, nothing written.
TEST(RmaTgt, ErrorsWriteNothing) {
    Bench<Vtgt48> b(kCfg48);
    b.add_region(0, 20000, 17, false, true, 2);
    b.add_region(1, 20000, 0, true, false, 2);
    b.add_region(2, 20000, 5, true, true, 2);
    b.rg[2].valid = false;
    b.write_cfg(2);
    b.out_stall = 0;
    const uint32_t k0 = b.rg[0].key, k1 = b.rg[1].key;
    EXPECT_EQ(b.put(0, mknla(0, k0 ^ 1, 0), 100)->exp_err, unsigned(VELO_RMA_ERR_BAD_HANDLE));
    EXPECT_EQ(b.put(0, mknla(9, 0, 0), 100)->exp_err, unsigned(VELO_RMA_ERR_BAD_HANDLE));
    EXPECT_EQ(b.put(0, mknla(1, k1, 0), 100)->exp_err, unsigned(VELO_RMA_ERR_PERM));
    EXPECT_EQ(b.put(0, mknla(0, k0, 19901), 100)->exp_err, unsigned(VELO_RMA_ERR_RANGE));
    EXPECT_EQ(b.put(0, mknla(0, k0, 19900), 100)->exp_err, 0u);
    EXPECT_EQ(b.put(1, mknla(2, b.rg[2].key, 0), 3000)->exp_err, unsigned(VELO_RMA_ERR_NOT_VALID));
    EXPECT_EQ(b.get(1, mknla(0, k0, 0), 10, 0)->exp_err, unsigned(VELO_RMA_ERR_PERM));
    EXPECT_EQ(b.get(1, mknla(1, k1, 19999), 2, 0)->exp_err, unsigned(VELO_RMA_ERR_RANGE));
    EXPECT_EQ(b.get(1, mknla(1, k1 ^ 2, 0), 2, 0)->exp_err, unsigned(VELO_RMA_ERR_BAD_HANDLE));
    EXPECT_EQ(b.get(1, mknla(2, b.rg[2].key, 0), 2, 0)->exp_err, unsigned(VELO_RMA_ERR_NOT_VALID));
    EXPECT_EQ(b.get(1, mknla(1, k1, 19990), 10, 77)->exp_err, 0u);
    b.run();
    // RMA disabled: DISABLED for both
    b.enable = false;
    EXPECT_EQ(b.put(2, mknla(0, k0, 0), 500)->exp_err, unsigned(VELO_RMA_ERR_DISABLED));
    EXPECT_EQ(b.get(2, mknla(1, k1, 0), 500, 0)->exp_err, unsigned(VELO_RMA_ERR_DISABLED));
    b.run();
    b.enable = true;
    b.finish();
    EXPECT_EQ(b.n_err_rsp, 11u);
}

// Initiators outside a region's scope, and requests with a wrong KEY_HI: every put (many packets)
// writes no byte and gets exactly one PUT_RSP BAD_HANDLE, every get gets one LAST BAD_HANDLE and
// reads nothing; initiators at the scope's bounds are served; the unit counts the failures.
TEST(RmaTgt, ForeignInitiatorsTouchNothing) {
    Bench<Vtgt48> b(kCfg48);
    b.add_region(0, 30000, 21, false, true, 2);
    b.add_region(1, 30000, 300, true, false, 2);
    for (unsigned i : {0u, 1u}) {
        b.rg[i].alloc = false;
        b.write_cfg(i);
        b.rg[i].node_lo = 2;
        b.rg[i].node_hi = 3;
        b.rg[i].vpid_lo = 10;
        b.rg[i].vpid_hi = 20;
        b.write_key_scope(i);
        b.rg[i].alloc = true;
        b.write_cfg(i);
    }
    const uint32_t k0 = b.rg[0].key, k1 = b.rg[1].key;
    const unsigned BH = VELO_RMA_ERR_BAD_HANDLE;
    b.run();
    // outside: node 1 and 4 (just below and above), vpid 9 and 21, and a wrong KEY_HI
    struct Who {
        unsigned node;
        int vpid;
        uint32_t xor_hi;
    } bad[] = {{1, 15, 0}, {4, 15, 0}, {2, 9, 0}, {3, 21, 0}, {2, 10, 0x000001}, {3, 20, 0x800000}, {0, 0, 0}};
    const uint64_t reads0 = b.n_reads;
    for (const auto& w : bad) {
        Put* p = b.put(w.node, mknla(0, k0, 1000), 5000, false, false, w.vpid, (k0 >> 8) ^ w.xor_hi);
        EXPECT_EQ(p->exp_err, BH);
        Put* q = b.put(w.node, mknla(0, k0, 9000), 0, true, false, w.vpid, (k0 >> 8) ^ w.xor_hi);
        EXPECT_EQ(q->exp_err, BH) << "a notified zero-length put from outside: no TARGET entry";
        Get* g = b.get(w.node, mknla(1, k1, 100), 3000, mknla(3, 3, 0), false, w.vpid, (k1 >> 8) ^ w.xor_hi);
        EXPECT_EQ(g->exp_err, BH);
    }
    b.run();
    EXPECT_EQ(b.n_reads, reads0) << "a get from outside reads nothing";
    EXPECT_EQ(b.n_bh_rsp, 3u * (sizeof bad / sizeof bad[0]));
    EXPECT_EQ(b.c_err_bh, b.n_bh_rsp) << "the unit's error events count them";
    for (auto& p : b.puts) EXPECT_EQ(p->nwrote, 0u);
    // at the bounds: served, byte exact
    EXPECT_EQ(b.put(2, mknla(0, k0, 1000), 5000, false, false, 10)->exp_err, 0u);
    EXPECT_EQ(b.put(3, mknla(0, k0, 7000), 100, true, false, 20)->exp_err, 0u);
    EXPECT_EQ(b.get(3, mknla(1, k1, 100), 3000, mknla(3, 3, 0), false, 20)->exp_err, 0u);
    EXPECT_EQ(b.get(2, mknla(1, k1, 5000), 30, mknla(3, 3, 0), false, 10)->exp_err, 0u);
    b.finish();
    EXPECT_GT(b.n_reads, reads0);
    EXPECT_EQ(b.n_bh_rsp, 3u * (sizeof bad / sizeof bad[0]));
}

// The per-source KEY_HI: a put's later packets (no RMA_PKT_LEN word) are checked with the KEY_HI
// its FIRST packet brought. The region index is deregistered and registered again mid-put with a
// key of the same bits 7:0: with the same key the rest of the put is written (control); with new
// bits 31:8 the rest fails BAD_HANDLE and writes nothing, although the NLA words still match.
TEST(RmaTgt, KeyReusedMidPutTakesNoMoreOfThePut) {
    Bench<Vtgt48> b(kCfg48);
    b.add_region(0, 60000, 77, false, true, 2);
    b.run();
    for (int round = 0; round < 4; ++round) {
        const bool new_hi = round & 1;
        const uint32_t k_old = b.rg[0].key;
        const unsigned node = 1 + static_cast<unsigned>(round % 3);
        Put* p = b.put(node, mknla(0, k_old, 1000 + 100 * static_cast<unsigned>(round)), 20000, round >= 2, false, 6);
        ASSERT_EQ(p->exp_err, 0u);
        // let the FIRST packet and two more in, hold the rest
        std::deque<Pkt> rest(b.inq[node].begin() + 3, b.inq[node].end());
        b.inq[node].erase(b.inq[node].begin() + 3, b.inq[node].end());
        for (int n = 0; (!b.inq[node].empty() || b.in_node >= 0 || b.h->busy) && n < 100000; ++n) b.step();
        for (int n = 0; n < 50; ++n) b.step();
        const size_t before = p->nwrote;
        ASSERT_GT(before, 0u);
        ASSERT_LT(before, 20000u);
        // deregister (ALLOC = 0), quiesce, a key with the same bits 7:0, register again
        b.rg[0].alloc = false;
        b.write_cfg(0);
        b.h->q_region = 0;
        while (!b.cfgq.empty()) b.step();
        for (int n = 0; b.h->q_busy && n < 100000; ++n) b.step();
        ASSERT_FALSE(b.h->q_busy);
        b.rg[0].key = new_hi ? (k_old ^ (0x10101u << (8 + round))) : k_old;
        ASSERT_EQ(b.rg[0].key & 0xFFu, k_old & 0xFFu);
        b.write_key_scope(0);
        b.rg[0].alloc = true;
        b.write_cfg(0);
        while (!b.cfgq.empty()) b.step();
        if (new_hi) {
            p->exp_err = VELO_RMA_ERR_BAD_HANDLE;  // a write from now on is an error (on_tlp)
            p->fail_mid = true;
        }
        for (auto& k : rest) b.inq[node].push_back(k);
        b.run();
        if (new_hi) {
            EXPECT_EQ(p->nwrote, before) << "round " << round << ": the rest of the put was written with the new key";
        } else {
            EXPECT_EQ(p->nwrote, 20000u) << "round " << round << ": the same key takes the whole put";
        }
        EXPECT_TRUE(p->answered);
        // a new put with the region's key now works
        EXPECT_EQ(b.put(node, mknla(0, b.rg[0].key, 40000), 3000, false, false, 6)->exp_err, 0u);
        b.run();
    }
    b.finish();
    EXPECT_EQ(b.n_bh_rsp, 2u);
}

// A failed FIRST packet fails the whole put; the next put from that node starts clean; another
// node's put in between is unaffected (per-source outcome).
TEST(RmaTgt, PerSourceOutcome) {
    Bench<Vtgt48> b(kCfg48);
    b.add_region(0, 40000, 3, false, true, 2);
    b.add_region(1, 40000, 3000, false, true, 2);
    const uint32_t k0 = b.rg[0].key, k1 = b.rg[1].key;
    for (int i = 0; i < 20; ++i) {
        b.put(0, mknla(0, k0, 39000), 2000);  // RANGE, many packets
        b.put(1, mknla(1, k1, 100 + 1000 * i), 999);
        b.put(0, mknla(0, k0, 1000 * i + 7), 999);
    }
    b.finish();
}

// Notified puts: TARGET entry after the data, PUT_RSP after the entry is written; a disabled
// queue gives NQ_DISABLED with the data written; zero-length notified puts.
TEST(RmaTgt, NotifiedPuts) {
    Bench<Vtgt48> b(kCfg48);
    b.add_region(0, 40000, 3, false, true, 4);
    b.add_region(1, 40000, 3, false, true, 9);
    b.nq_disabled[9] = true;
    for (int i = 0; i < 30; ++i) {
        const unsigned r = static_cast<unsigned>(i % 2);
        // puts of one region 2,100 bytes apart (lengths <= 2,048): puts from different nodes run
        // concurrently, so overlapping ones would leave memory to whichever packet came last
        const unsigned off = 2100 * static_cast<unsigned>(i / 2) + static_cast<unsigned>(i);
        Put* p = b.put(static_cast<unsigned>(i % 3), mknla(r, b.rg[r].key, off), i % 5 == 0 ? 0 : b.rnd_len(11), true);
        EXPECT_EQ(p->exp_err, r ? unsigned(VELO_RMA_ERR_NQ_DISABLED) : 0u);
    }
    b.finish();
    for (auto& p : b.puts) EXPECT_TRUE(p->ntf_seen);
}

// No route back to the source: the data are written, the response is dropped and counted.
TEST(RmaTgt, NoRouteDropsResponse) {
    constexpr unsigned kNoRoute = velo::sim::ModelParams<Vtgt48>::NOROUTE;
    Bench<Vtgt48> b(kCfg48);
    b.add_region(0, 40000, 3, false, true, 4);
    b.add_region(1, 40000, 3, true, false, 4);
    Put* p = b.put(kNoRoute, mknla(0, b.rg[0].key, 10), 700);
    b.get(kNoRoute, mknla(1, b.rg[1].key, 10), 700, 0);
    b.put(1, mknla(0, b.rg[0].key, 2000), 300);
    b.x_no_route = 2;
    // nothing will answer them: run until the other put is answered, then account by hand
    const uint64_t end = b.h.cycle() + 200000;
    while (b.put_by_tag.size() > 2 && b.h.cycle() < end) b.step();
    for (int i = 0; i < 2000; ++i) b.step();
    EXPECT_EQ(p->nwrote, 700u);
    EXPECT_EQ(b.put_by_tag.size(), 1u);
    EXPECT_EQ(b.get_by_tag.size(), 1u);
    // the put's bytes are in memory: take them as expected and drop the bookkeeping
    for (uint32_t k = 0; k < p->len; ++k) b.img[b.phys(0, 10 + k)] = p->data[k];
    p->answered = true;
    b.put_by_tag.clear();
    b.get_by_tag.clear();
    b.finish();
}

// Invalidation in the middle of a long put: after the driver's quiesce reads not busy, nothing
// more is written into the region; the put is answered NOT_VALID (or OK had it finished first).
TEST(RmaTgt, InvalidationMidPut) {
    Bench<Vtgt48> b(kCfg48);
    b.add_region(0, 200000, 1234, false, true, 4);
    b.add_region(1, 200000, 99, false, true, 4);
    b.run();
    for (int round = 0; round < 3; ++round) {
        Put* p = b.put(0, mknla(0, b.rg[0].key, 333), 65536, false, true);
        b.put(1, mknla(1, b.rg[1].key, 5000), 40000);  // another region, unaffected
        while (p->nwrote < 20000u + 10000u * static_cast<unsigned>(round) && b.errs.empty()) b.step();
        b.rg[0].valid = false;
        b.write_cfg(0);
        b.h->q_region = 0;
        while (!b.cfgq.empty()) b.step();
        int n = 0;
        while (b.h->q_busy && n < 100000) {
            b.step();
            ++n;
        }
        const size_t at_quiesce = p->nwrote;
        bool late = false;
        b.on_write = [&](const Tlp& t) {
            auto fr = b.frames.find(t.addr / 4096);
            if (fr != b.frames.end() && fr->second.first == 0) late = true;
        };
        b.run();
        b.on_write = nullptr;
        EXPECT_FALSE(late) << "write into the region after quiesce";
        EXPECT_EQ(p->nwrote, at_quiesce);
        EXPECT_LT(p->nwrote, 65536u);
        b.rg[0].valid = true;
        b.write_cfg(0);
        b.run();
        EXPECT_EQ(b.put(0, mknla(0, b.rg[0].key, 100000), 5000)->exp_err, 0u);
        b.run();
    }
    b.finish();
}

// Host read errors during gets: the packets before are exact, then one LAST packet NOT_VALID;
// later gets are served normally.
TEST(RmaTgt, GetHostFaults) {
    Bench<Vtgt48> b(kCfg48);
    b.add_region(0, 100000, 77, true, false, 4);
    uint64_t nth = 0;
    b.reader.plan = [&](const Tlp&, uint64_t) {
        HostReader::Plan p;
        ++nth;
        if (nth % 29 == 5) {
            p.fault = (nth % 2) ? HostReader::Fault::UR : HostReader::Fault::CA;
            p.after = static_cast<unsigned>(rnd(b.rng, 2));
        }
        return p;
    };
    for (int i = 0; i < 12; ++i) {
        b.get(static_cast<unsigned>(i % 3), mknla(0, b.rg[0].key, 1000 * static_cast<uint64_t>(i) + 3),
              3000 + 100 * static_cast<uint32_t>(i), mknla(1, 2, static_cast<uint64_t>(i)), true);
    }
    b.finish();
    unsigned failed = 0;
    for (auto& g : b.gets) {
        EXPECT_TRUE(g->done);
        if (g->got < g->len) ++failed;
    }
    EXPECT_GT(failed, 0u);
    EXPECT_LT(failed, 12u);
}

// Gets are served while PUT_RSPs wait for the response port and the other way round.
TEST(RmaTgt, GetsAndPutsShareTheResponsePort) {
    Bench<Vtgt48> b(kCfg48);
    b.std_regions();
    b.out_stall = 70;
    for (int i = 0; i < 60; ++i) {
        if (i % 2)
            b.random_get(static_cast<unsigned>(i % 6));
        else
            b.random_put(static_cast<unsigned>(i % 4), false);
    }
    b.finish();
}

// ---------------------------------------------------------------- throughput
template <class M>
void put_throughput(const Cfg& c, double min_bpc) {
    Bench<M> b(c);
    b.add_region(0, 600000, 0, false, true, 1);
    b.run();
    b.in_gap = 0;
    b.out_stall = 0;
    b.wr.stall_pct = 0;
    b.first_tx = ~0ull;
    b.put(0, mknla(0, b.rg[0].key, 0), 512 * 1024);
    b.finish();
    const double bpc = static_cast<double>(512 * 1024) / static_cast<double>(b.last_tx - b.first_tx + 1);
    std::printf("rma_tgt MTU %u: put stream %.2f TLP payload bytes/cycle (input bound %.2f)\n", c.mtu, bpc,
                c.mtu * 8.0 / (8.0 * (1 + (8 + c.mtu + 7) / 8)));
    EXPECT_GE(bpc, min_bpc);
}
template <class M>
void get_throughput(const Cfg& c, double min_bpc) {
    Bench<M> b(c);
    b.add_region(0, 600000, 0, true, false, 1);
    b.run();
    b.out_stall = 0;
    b.mrd.stall_pct = 0;
    b.cpl.gap_pct = 0;
    b.reader.latency_min = b.reader.latency_max = 100;
    b.reader.gap_max = 0;
    b.first_out = ~0ull;
    b.out_bytes = 0;
    b.get(0, mknla(0, b.rg[0].key, 0), 512 * 1024, mknla(1, 1, 0));
    b.finish();
    const double bpc = static_cast<double>(b.out_bytes) / static_cast<double>(b.last_out - b.first_out + 1);
    std::printf("rma_tgt MTU %u: get response stream %.2f packet bytes/cycle (%.2f data bytes/cycle)\n", c.mtu, bpc,
                512.0 * 1024 / static_cast<double>(b.last_out - b.first_out + 1));
    EXPECT_GE(bpc, min_bpc);
}
TEST(RmaTgt, PutThroughput48) {
    put_throughput<Vtgt48>(kCfg48, 4.5);
}
TEST(RmaTgt, PutThroughput240) {
    put_throughput<Vtgt240>(kCfg240, 6.5);
}
TEST(RmaTgt, GetThroughput48) {
    get_throughput<Vtgt48>(kCfg48, 6.5);
}
TEST(RmaTgt, GetThroughput240) {
    get_throughput<Vtgt240>(kCfg240, 7.0);
}
