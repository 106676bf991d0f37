// Unit bench of velo_requester: posted writes into the send window (BAR2) in, network packets out.
//
// A reference model written from the spec (SEND_ADDR, PKT_HDR, TLP_HDR) and the requester's contract
// decides, for every TLP, the packet it must become or the one counter that must count its drop. A
// seeded random run (SEED= replays) feeds thousands of TLPs (write-combining flushes of every kind,
// raw writes with random and illegal byte enables, poisoned, long, page- and line-crossing, past
// the message, wrong type) with random input gaps, output back pressure and enable toggling, on
// the 64-bit, 128-bit and narrow-id builds. The route table is a model of the register file's RAM
// (registered read; its output also changes when software reads it), and every header must carry
// the route looked up for its destination. Directed tests pin corner cases, the drop priority,
// route insertion under output stalls, throughput and latency.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "Vreq128.h"
#include "Vreq128_params.h"
#include "Vreq64.h"
#include "Vreq64_params.h"
#include "Vreq_pipe.h"
#include "Vreq_pipe_params.h"
#include "Vreq_small.h"
#include "Vreq_small_params.h"
#include "harness.hpp"
#include "host.hpp"
#include "tlp.hpp"
#include "velo/velo_hw.h"

using velo::sim::Harness;
using velo::sim::Tlp;
using velo::sim::TlpDriver;
using velo::sim::TlpInPins;
using velo::sim::WcMode;

namespace {

// ------------------------------------------------------------------------------ build parameters
// each model's PARAMS in sim/CMakeLists.txt (<model>_params.h); with PIPE = 1 (the iCE40 board's
// configuration) the header fields, then the decision are registered: two cycles more per TLP
template <class M>
struct CfgOf {
    using P = velo::sim::ModelParams<M>;
    static constexpr unsigned vb = P::VPID_BITS, nb = P::NODE_BITS, tlp_w = P::TLP_W;
    static constexpr unsigned pipe = 2 * P::PIPE;  // cycles more per TLP
};
template <class M>
struct Cfg;
template <>
struct Cfg<Vreq64> : CfgOf<Vreq64> {
    static constexpr const char* name = "W64";
};
template <>
struct Cfg<Vreq128> : CfgOf<Vreq128> {
    static constexpr const char* name = "W128";
};
template <>
struct Cfg<Vreq_small> : CfgOf<Vreq_small> {
    static constexpr const char* name = "Small";
};
template <>
struct Cfg<Vreq_pipe> : CfgOf<Vreq_pipe> {
    static constexpr const char* name = "Pipe";
};

// ------------------------------------------------------------------------------ reference model
// What one TLP must turn into: one counter event, and for a forwarded write the packet.
enum class Ev { TxMsg, TxFrag, DropDisabled, DropMalformed, DropTooLong, DropCrossPage, N };
constexpr int kEvN = static_cast<int>(Ev::N);
const char* ev_name(Ev e) {
    static const char* n[] = {"tx_msg",        "tx_frag",         "drop_disabled", "drop_malformed",
                              "drop_too_long", "drop_cross_page", "none"};
    return n[static_cast<int>(e)];
}

struct Expect {
    Ev ev = Ev::N;
    uint64_t hdr = 0;
    std::vector<uint8_t> area;  // payload area: (FRAG_OFF % 4) leading bytes, then the fragment
    bool fwd() const { return ev == Ev::TxMsg || ev == Ev::TxFrag; }
    unsigned words() const { return static_cast<unsigned>((area.size() + 7) / 8); }  // payload words
    unsigned lnb() const { return static_cast<unsigned>((area.size() - 1) % 8); }
};

uint64_t bits(uint64_t v, unsigned shift, unsigned width) {
    return (v >> shift) & ((1ull << width) - 1);
}

// The route table the requester reads (register file RAM model): {VALID, ROUTE} per node, as on
// rt_data. Each bench fills it at random, a quarter of the entries invalid.
constexpr uint16_t kRtValid = 1u << 14;
std::array<uint16_t, 256> g_routes{};
uint64_t net_bits(uint64_t dst_node) {
    const uint16_t e = g_routes[dst_node];
    const uint64_t route = (e & kRtValid) ? (e & 0x3FFF) : 0x3FFF;  // no valid route: all-ones
    return VELO_FIELD_PREP(VELO_PKT_HDR_VC, VELO_VC_REQ) | VELO_FIELD_PREP(VELO_PKT_HDR_ROUTE, route);
}

// The requester's contract, from the spec: the window offset (SEND_ADDR) names the message line
// (length) and the destination, the first enabled byte is the offset in the message, bytes past
// the message are clipped, drops in priority order.
Expect reference(const Tlp& t, bool enable, unsigned node_id, unsigned vb, unsigned nb) {
    Expect e;
    if (!enable) {
        e.ev = Ev::DropDisabled;
        return e;
    }
    const unsigned n = t.len_dw ? t.len_dw : 1024;
    // the bytes the write writes, as PCIe byte enables say
    std::vector<bool> en(4 * n, true);
    for (unsigned b = 0; b < 4; ++b) {
        en[b] = (t.first_be >> b) & 1;
        if (n > 1) en[4 * (n - 1) + b] = (t.last_be >> b) & 1;
    }
    const auto first = std::find(en.begin(), en.end(), true);
    const auto last = std::find(en.rbegin(), en.rend(), true);
    // PCIe: a 1-DW request has last BE 0; a longer one has both first and last BE nonzero
    bool be_ok = first != en.end() && (n == 1 ? t.last_be == 0 : t.first_be != 0 && t.last_be != 0);
    unsigned b0 = 0, b1 = 0;  // first and last written byte
    if (be_ok) {
        b0 = static_cast<unsigned>(first - en.begin());
        b1 = static_cast<unsigned>(en.rend() - last) - 1;
        for (unsigned i = b0; i <= b1; ++i) be_ok = be_ok && en[i];
    }
    if (!t.is_mwr() || t.ep || !be_ok) {
        e.ev = Ev::DropMalformed;
        return e;
    }
    if (n > 16) {
        e.ev = Ev::DropTooLong;
        return e;
    }
    const uint64_t a = t.addr;
    if (bits(a, 2, 10) + n > 1024) {
        e.ev = Ev::DropCrossPage;
        return e;
    }
    if (bits(a, 2, 4) + n > 16) {
        e.ev = Ev::DropTooLong;
        return e;
    }
    const unsigned msg_len =
        static_cast<unsigned>(bits(a, VELO_SEND_ADDR_LEN_M1_SHIFT, VELO_SEND_ADDR_LEN_M1_WIDTH)) + 1;
    const unsigned line_pos = static_cast<unsigned>(bits(a, 0, 6));  // DW aligned
    const unsigned off = line_pos + b0;
    if (off >= msg_len) {
        e.ev = Ev::DropMalformed;
        return e;
    }
    const unsigned frag_len = std::min(line_pos + b1 + 1, msg_len) - off;
    const bool frag = off != 0 || frag_len != msg_len;
    e.ev = frag ? Ev::TxFrag : Ev::TxMsg;
    const unsigned area = off % 4 + frag_len;
    e.area.assign(t.payload.begin(), t.payload.begin() + area);
    const uint64_t dst_vpid = bits(a, VELO_SEND_ADDR_DST_VPID_SHIFT(vb, nb), VELO_SEND_ADDR_DST_VPID_WIDTH(vb, nb));
    const uint64_t dst_node = bits(a, VELO_SEND_ADDR_DST_NODE_SHIFT(vb, nb), VELO_SEND_ADDR_DST_NODE_WIDTH(vb, nb));
    const uint64_t src_vpid = bits(a, VELO_SEND_ADDR_SRC_VPID_SHIFT(vb, nb), VELO_SEND_ADDR_SRC_VPID_WIDTH(vb, nb));
    e.hdr = net_bits(dst_node) | VELO_FIELD_PREP(VELO_PKT_HDR_TYPE, VELO_PKT_TYPE_VELO) |
            VELO_FIELD_PREP(VELO_PKT_HDR_MSG_LEN_M1, msg_len - 1) | VELO_FIELD_PREP(VELO_PKT_HDR_FRAG_OFF, off) |
            VELO_FIELD_PREP(VELO_PKT_HDR_SRC_NODE, bits(node_id, 0, nb)) |
            VELO_FIELD_PREP(VELO_PKT_HDR_SRC_VPID, src_vpid) | VELO_FIELD_PREP(VELO_PKT_HDR_DST_VPID, dst_vpid) |
            VELO_FIELD_PREP(VELO_PKT_HDR_FRAG_LEN_M1, frag_len - 1) | VELO_FIELD_PREP(VELO_PKT_HDR_FRAG, frag ? 1 : 0);
    return e;
}

std::string hdr_str(uint64_t h) {
    char b[200];
    std::snprintf(
        b, sizeof b,
        "%016llx{vc=%llu route=%llx type=%llu mlen-1=%llu off=%llu snode=%llu svpid=%llu dvpid=%llu flen-1=%llu "
        "frag=%llu rsvd=%llu}",
        static_cast<unsigned long long>(h), VELO_FIELD_GET(VELO_PKT_HDR_VC, h), VELO_FIELD_GET(VELO_PKT_HDR_ROUTE, h),
        VELO_FIELD_GET(VELO_PKT_HDR_TYPE, h), VELO_FIELD_GET(VELO_PKT_HDR_MSG_LEN_M1, h),
        VELO_FIELD_GET(VELO_PKT_HDR_FRAG_OFF, h), VELO_FIELD_GET(VELO_PKT_HDR_SRC_NODE, h),
        VELO_FIELD_GET(VELO_PKT_HDR_SRC_VPID, h), VELO_FIELD_GET(VELO_PKT_HDR_DST_VPID, h),
        VELO_FIELD_GET(VELO_PKT_HDR_FRAG_LEN_M1, h), VELO_FIELD_GET(VELO_PKT_HDR_FRAG, h),
        VELO_FIELD_GET(VELO_PKT_HDR_RSVD, h));
    return b;
}

// ------------------------------------------------------------------------------ packet collector
struct Packet {
    std::vector<uint64_t> w;  // header word, then payload words
    unsigned lnb = 0;         // pkt_lnb with the last word
    uint64_t hdr_cycle = 0;   // first cycle the header word was valid
    uint64_t end_cycle = 0;   // cycle the last word was accepted
};

// Collects packets from the pkt_* port with random back pressure and checks the handshake: a
// word offered and not taken stays, unchanged, until it is taken.
class PktSink {
  public:
    struct Pins {
        uint8_t* valid;
        uint8_t* ready;
        uint64_t* data;
        uint8_t* last;
        uint8_t* lnb;
    };
    explicit PktSink(Pins p) : p_(p) {}
    int stall_pct = 0;
    std::mt19937_64* rng = nullptr;
    void drive() { *p_.ready = (stall_pct && rng && (*rng)() % 100 < static_cast<unsigned>(stall_pct)) ? 0 : 1; }
    // After eval(), before tick().
    void sample(uint64_t cycle) {
        const bool v = *p_.valid, r = *p_.ready;
        if (held_ && (!v || *p_.data != hd_ || *p_.last != hl_ || *p_.lnb != hn_))
            error(cycle, "pkt word changed or withdrawn while stalled");
        if (v && cur_.empty() && !hdr_seen_) {
            hdr_seen_ = true;
            hdr_cycle_ = cycle;
        }
        if (v && r) {
            cur_.push_back(*p_.data);
            ++words;
            if (*p_.last) {
                packets.push_back(Packet{cur_, *p_.lnb, hdr_cycle_, cycle});
                cur_.clear();
                hdr_seen_ = false;
            }
        }
        held_ = v && !r;
        hd_ = *p_.data;
        hl_ = *p_.last;
        hn_ = *p_.lnb;
    }
    // The word on the port (registered, valid before eval) is a header.
    bool header_visible() const { return *p_.valid && cur_.empty(); }
    bool mid_packet() const { return !cur_.empty(); }
    std::deque<Packet> packets;
    uint64_t words = 0;
    std::vector<std::string> errors;

  private:
    void error(uint64_t c, const char* s) {
        if (errors.size() < 20) errors.push_back("cycle " + std::to_string(c) + ": " + s);
    }
    Pins p_;
    std::vector<uint64_t> cur_;
    bool hdr_seen_ = false, held_ = false;
    uint64_t hdr_cycle_ = 0, hd_ = 0;
    uint8_t hl_ = 0, hn_ = 0;
};

// ------------------------------------------------------------------------------ bench
template <class M>
class Bench {
  public:
    static constexpr unsigned VB = Cfg<M>::vb, NB = Cfg<M>::nb, R = Cfg<M>::tlp_w / 64;

    explicit Bench(std::mt19937_64& rng)
        : rng_(rng),
          drv(TlpInPins{&h->in_valid, &h->in_ready, &h->in_sop, &h->in_eop, velo::sim::words(h->in_hdr), nullptr,
                        velo::sim::words(h->in_data)}),
          sink(PktSink::Pins{&h->pkt_valid, &h->pkt_ready, &h->pkt_data, &h->pkt_last, &h->pkt_lnb}) {
        drv.rng = &rng_;
        sink.rng = &rng_;
        for (auto& e : g_routes) e = static_cast<uint16_t>((rng_() % 4 ? kRtValid : 0) | (rng_() & 0x3FFF));
        h->enable = 1;
        h->node_id = 0;
        h->rt_data = 0;
        h->in_valid = 0;
        h->pkt_ready = 1;
        h.reset();
    }

    Harness<M> h;

    // One TLP, the enable and node id the requester must see when it decides, and what it must do.
    struct Item {
        Tlp t;
        bool en;
        unsigned node;
        Expect e;
        uint64_t sop_cycle = ~0ull;  // cycle its first beat was accepted
    };
    std::vector<Item> items;

    void push(const Tlp& t, bool en = true, int node = -1) {
        const unsigned nid = node < 0 ? node_id : static_cast<unsigned>(node);
        items.push_back(Item{t, en, nid, reference(t, en, nid, VB, NB)});
        drv.push(t);
        if (items.back().e.fwd()) ++fwd_expected;
    }

    // While the head TLP is undecided (first beat not taken, no header out) enable and node id are
    // those of the item; at any other time they are random when scramble is set (they must not
    // matter), else enable_idle / node_id.
    bool scramble = false;
    bool enable_idle = true;
    unsigned node_id = 0;
    std::function<void()> hook;  // after the inputs are set, before eval: directed tests override pins
    int rt_noise_pct = 12;       // cycles without rt_re in which the route RAM output changes

    void step() {
        const uint64_t c = h.cycle();
        if (sink.header_visible()) head_decided_ = true;
        drv.drive();
        sink.drive();
        bool en = scramble ? (rng_() & 1) : enable_idle;
        unsigned nid = scramble ? static_cast<unsigned>(rng_() & 0xFF) : node_id;
        if (head_ < items.size() && head_at_sop_ && !head_decided_) {
            en = items[head_].en;
            nid = items[head_].node;
        }
        h->enable = en;
        h->node_id = static_cast<uint8_t>(nid);
        if (hook) hook();
        h.eval();
        const bool eop = drv.sample();
        if (drv.sop_fired) {
            if (head_ < items.size()) items[head_].sop_cycle = c;
            head_at_sop_ = false;
        }
        if (eop) {
            ++head_;
            head_at_sop_ = true;
            head_decided_ = false;
        }
        sink.sample(c);
        // route table RAM: registered read, holds when not read
        const bool rt_re = h->rt_re;
        const unsigned rt_node = h->rt_node;
        const uint8_t ev[kEvN] = {h->ev_tx_msg,         h->ev_tx_frag,       h->ev_drop_disabled,
                                  h->ev_drop_malformed, h->ev_drop_too_long, h->ev_drop_cross_page};
        int k = 0;
        for (int i = 0; i < kEvN; ++i) {
            if (!ev[i]) continue;
            ++k;
            ++ev_count[i];
            events.push_back({static_cast<Ev>(i), c});
        }
        if (k > 1 && sink.errors.size() < 20)
            sink.errors.push_back("two counter events in one cycle " + std::to_string(c));
        h.tick();
        if (rt_re) {
            h->rt_data = g_routes[rt_node] & 0x7FFF;
        } else if (static_cast<int>(rng_() % 100) < rt_noise_pct) {
            // software reads the table: the RAM output changes to some other entry
            h->rt_data = static_cast<uint16_t>((h->rt_data ^ (1 + rng_() % 0x7FFF)) & 0x7FFF);
        }
        h.eval();  // outputs as they are after the RAM output changed
    }

    // Until every TLP is in, every expected packet out and the port has been quiet a while.
    void run() {
        const uint64_t start = h.cycle(), max_cycles = 10000 + 1000 * items.size();
        int quiet = 0;
        while (quiet < 16) {
            step();
            const bool done = drv.idle() && sink.packets.size() >= fwd_expected && !sink.mid_packet();
            quiet = done ? quiet + 1 : 0;
            if (h.cycle() - start > max_cycles) {
                ADD_FAILURE() << "timeout: " << drv.pending() << " TLPs not taken, " << sink.packets.size() << "/"
                              << fwd_expected << " packets";
                return;
            }
        }
    }

    std::string describe(size_t i) const {
        const Item& it = items[i];
        char b[120];
        std::snprintf(b, sizeof b, " [TLP #%zu en=%d node=%u expect %s, sop at cycle %lld] ", i, it.en, it.node,
                      ev_name(it.e.ev), static_cast<long long>(it.sop_cycle));
        return it.t.str() + b;
    }

    // Scoreboard: one event per TLP in TLP order, the right one, at the right time; one packet per
    // forwarded TLP in order, header bit exact, payload area byte exact, pkt_last/pkt_lnb right.
    void check() {
        for (auto& s : sink.errors) ADD_FAILURE() << s;
        int fails = 0;
        size_t pk = 0;
        std::array<uint64_t, kEvN> want{};
        for (size_t i = 0; i < items.size() && fails < 5; ++i) {
            const Item& it = items[i];
            const Expect& e = it.e;
            ++want[static_cast<int>(e.ev)];
            if (i >= events.size()) {
                ADD_FAILURE() << "no counter event for" << describe(i);
                ++fails;
                continue;
            }
            if (events[i].first != e.ev) {
                ADD_FAILURE() << "event " << ev_name(events[i].first) << " at cycle " << events[i].second << " for"
                              << describe(i);
                ++fails;
                continue;
            }
            if (!e.fwd()) {
                if (events[i].second != it.sop_cycle + 1) {
                    ADD_FAILURE() << "drop event at cycle " << events[i].second << " for" << describe(i);
                    ++fails;
                }
                continue;
            }
            if (pk >= sink.packets.size()) {
                ADD_FAILURE() << "no packet for" << describe(i);
                ++fails;
                continue;
            }
            const Packet& p = sink.packets[pk++];
            std::string why;
            if (p.w.size() != 1 + e.words())
                why += "words " + std::to_string(p.w.size()) + " != " + std::to_string(1 + e.words()) + "; ";
            if (p.w[0] != e.hdr) why += "header " + hdr_str(p.w[0]) + " != " + hdr_str(e.hdr) + "; ";
            for (size_t b = 0; b < e.area.size() && 1 + b / 8 < p.w.size(); ++b) {
                const uint8_t got = static_cast<uint8_t>(p.w[1 + b / 8] >> (8 * (b % 8)));
                if (got != e.area[b]) {
                    why += "area byte " + std::to_string(b) + " = " + std::to_string(got) +
                           " != " + std::to_string(e.area[b]) + "; ";
                    break;
                }
            }
            if (p.lnb != e.lnb()) why += "lnb " + std::to_string(p.lnb) + " != " + std::to_string(e.lnb()) + "; ";
            if (events[i].second != p.hdr_cycle)
                why += "tx event at cycle " + std::to_string(events[i].second) + ", header out at " +
                       std::to_string(p.hdr_cycle) + "; ";
            if (!why.empty()) {
                ADD_FAILURE() << "packet " << pk - 1 << ": " << why << "for" << describe(i);
                ++fails;
            }
        }
        if (fails) return;
        EXPECT_EQ(events.size(), items.size()) << "counter events vs TLPs";
        EXPECT_EQ(sink.packets.size(), pk) << "packets vs forwarded TLPs";
        EXPECT_EQ(sink.packets.size(), fwd_expected);
        for (int i = 0; i < kEvN; ++i)
            EXPECT_EQ(ev_count[i], want[i]) << "pulses of ev_" << ev_name(static_cast<Ev>(i));
        EXPECT_TRUE(drv.idle());
        EXPECT_EQ(h->in_ready, 1) << "requester not ready when idle";
    }

    std::mt19937_64& rng_;
    TlpDriver drv;
    PktSink sink;
    std::vector<std::pair<Ev, uint64_t>> events;  // in order, with the cycle of the pulse
    std::array<uint64_t, kEvN> ev_count{};
    size_t fwd_expected = 0;

  private:
    size_t head_ = 0;  // index of the driver's head TLP
    bool head_at_sop_ = true, head_decided_ = false;
};

// ------------------------------------------------------------------------------ traffic
unsigned rnd(std::mt19937_64& r, unsigned n) {
    return static_cast<unsigned>(r() % n);
}

// Base of the send window: the requester ignores address bits above the window.
uint64_t window_base(std::mt19937_64& r, unsigned vb, unsigned nb) {
    const unsigned wbits = 12 + 2 * vb + nb;
    switch (rnd(r, 3)) {
        case 0:
            return 0;
        case 1:  // below 4 GiB: 3DW headers where the window fits
            return (r() << wbits) & 0xFFFFFFFFull;
        default:
            return r() << wbits;
    }
}

// Window offset of a random page of a message line.
uint64_t random_line(std::mt19937_64& r, unsigned vb, unsigned nb, unsigned len) {
    return window_base(r, vb, nb) +
           velo::sim::send_offset(vb, nb, rnd(r, 1u << vb), rnd(r, 1u << nb), rnd(r, 1u << vb), len);
}

Tlp raw_mwr(uint64_t addr, unsigned n, uint8_t fbe, uint8_t lbe, std::mt19937_64& r) {
    Tlp t;
    t.fmt_type = (addr >> 32) ? VELO_TLP_FMT_TYPE_MWR64 : VELO_TLP_FMT_TYPE_MWR32;
    t.len_dw = static_cast<uint16_t>(n & 0x3FF);
    t.first_be = fbe;
    t.last_be = lbe;
    t.addr = addr & ~3ull;
    t.bar = VELO_BAR_SEND;
    t.tag = static_cast<uint8_t>(r());
    t.req_id = static_cast<uint16_t>(r());
    t.payload.resize(4 * (n ? n : 1024));
    for (auto& b : t.payload) b = static_cast<uint8_t>(r());
    return t;
}

// Byte enables of one contiguous run (legal), for an n-DW write.
void legal_be(std::mt19937_64& r, unsigned n, uint8_t& fbe, uint8_t& lbe) {
    if (n == 1) {
        const unsigned b0 = rnd(r, 4), b1 = b0 + rnd(r, 4 - b0);
        fbe = static_cast<uint8_t>(((0xFu << b0) & (0xFu >> (3 - b1))) & 0xF);
        lbe = 0;
    } else {
        fbe = static_cast<uint8_t>((0xFu << rnd(r, 4)) & 0xF);
        lbe = static_cast<uint8_t>(0xFu >> rnd(r, 4));
    }
}

// Random traffic: write-combining flushes of whole messages and every kind of odd or bad write.
template <class M>
void random_traffic(Bench<M>& b, std::mt19937_64& r, size_t n_tlps) {
    constexpr unsigned VB = Bench<M>::VB, NB = Bench<M>::NB;
    const WcMode modes[] = {WcMode::Burst, WcMode::FullLine, WcMode::Split, WcMode::Chunk8, WcMode::Bytes};
    auto en = [&] { return rnd(r, 100) >= 6; };
    auto node = [&] { return static_cast<int>(rnd(r, 256)); };
    while (b.items.size() < n_tlps) {
        const unsigned kind = rnd(r, 100);
        if (kind < 50) {
            // a whole message as the CPU's write-combining buffer flushes it
            const unsigned len = 1 + rnd(r, 64);
            std::vector<uint8_t> msg(len);
            for (auto& x : msg) x = static_cast<uint8_t>(r());
            const uint64_t line = random_line(r, VB, NB, len);
            for (Tlp t : velo::sim::wc_flush(0, line, msg, modes[rnd(r, 5)], r)) {
                t.tag = static_cast<uint8_t>(r());
                t.req_id = static_cast<uint16_t>(r());
                if (rnd(r, 2)) {  // bytes the enables leave out carry junk, not zeros
                    std::vector<bool> on(t.payload.size(), false);
                    for (auto& [a, v] : velo::sim::mwr_bytes(t)) on[a - t.addr] = true;
                    for (size_t i = 0; i < on.size(); ++i)
                        if (!on[i]) t.payload[i] = static_cast<uint8_t>(r());
                }
                b.push(t, en(), node());
            }
        } else if (kind < 80) {
            // a raw write somewhere in a line, mostly legal byte enables
            const unsigned len = rnd(r, 5) == 0 ? 64 : 1 + rnd(r, 64);
            const unsigned dw = rnd(r, 16), n = 1 + rnd(r, rnd(r, 3) ? 16 - dw : 16);
            uint8_t fbe, lbe;
            legal_be(r, n, fbe, lbe);
            if (rnd(r, 4) == 0) fbe = static_cast<uint8_t>(rnd(r, 16));
            if (rnd(r, 4) == 0) lbe = static_cast<uint8_t>(rnd(r, 16));
            Tlp t = raw_mwr(random_line(r, VB, NB, len) + 4 * dw, n, fbe, lbe, r);
            if (rnd(r, 8) == 0) t.fmt_type = VELO_TLP_FMT_TYPE_MWR64;  // 4DW header below 4 GiB is legal
            b.push(t, en(), node());
        } else {
            // something the requester must drop
            uint8_t fbe, lbe;
            const unsigned sub = rnd(r, 6);
            const unsigned len = 1 + rnd(r, 64);
            unsigned dw = rnd(r, 16), n = 1 + rnd(r, 16);
            if (sub == 0) n = rnd(r, 20) == 0 ? 0 : 17 + rnd(r, 48);  // too long (0 = 1024 DW)
            if (sub == 1) {                                           // page crossing: the last line of the page
                dw = 8 + rnd(r, 8);
                n = 16 - dw + 1 + rnd(r, dw);
            }
            if (sub == 2) {  // line crossing
                dw = 1 + rnd(r, 15);
                n = 16 - dw + 1 + rnd(r, dw);
            }
            legal_be(r, n, fbe, lbe);
            Tlp t = raw_mwr(random_line(r, VB, NB, sub == 1 ? 64 : len) + 4 * dw, n, fbe, lbe, r);
            if (sub == 3) t.ep = true;
            if (sub == 4) {  // offset at or past the message length
                const unsigned mlen = 1 + rnd(r, 63), off = mlen + rnd(r, 64 - mlen);
                n = 1 + rnd(r, 16 - off / 4);
                legal_be(r, n, fbe, lbe);
                fbe = static_cast<uint8_t>((0xFu << (off % 4)) & 0xF);  // the first written byte is at off
                t = raw_mwr(random_line(r, VB, NB, mlen) + (off & ~3u), n, fbe, lbe, r);
            }
            if (sub == 5) {  // not a memory write
                const uint8_t ft[] = {VELO_TLP_FMT_TYPE_MRD32, VELO_TLP_FMT_TYPE_MRD64, VELO_TLP_FMT_TYPE_CPL,
                                      VELO_TLP_FMT_TYPE_CPLD,  0x44 /* CfgWr0 */,       0x70 /* Msg with data */};
                t.fmt_type = ft[rnd(r, 6)];
                if (t.fmt_type != VELO_TLP_FMT_TYPE_CPLD) t.payload.clear();  // one header-only beat
            }
            b.push(t, en(), node());
        }
    }
}

// ------------------------------------------------------------------------------ tests
struct ModelNames {
    template <class T>
    static std::string GetName(int) {
        return Cfg<T>::name;
    }
};
using Models = ::testing::Types<Vreq64, Vreq128, Vreq_small, Vreq_pipe>;

template <class M>
class Requester : public ::testing::Test {};
TYPED_TEST_SUITE(Requester, Models, ModelNames);

// Thousands of random TLPs per input/output timing profile, scored against the reference model.
TYPED_TEST(Requester, RandomTraffic) {
    auto rng = velo::sim::test_rng();
    struct Profile {
        int gap, stall;
        bool mid;
    };
    const Profile profiles[] = {{0, 0, false}, {15, 25, true}, {40, 10, true}, {5, 60, true}, {0, 35, false}};
    size_t tlps = 0, pkts = 0;
    uint64_t cycles = 0;
    for (const Profile& p : profiles) {
        Bench<TypeParam> b(rng);
        b.drv.gap_pct = p.gap;
        b.drv.mid_tlp_gaps = p.mid;
        b.sink.stall_pct = p.stall;
        b.scramble = true;
        SCOPED_TRACE("gap " + std::to_string(p.gap) + " stall " + std::to_string(p.stall));
        random_traffic(b, rng, 15000);
        b.run();
        b.check();
        if (::testing::Test::HasFailure()) return;
        tlps += b.items.size();
        pkts += b.sink.packets.size();
        cycles += b.h.cycle();
        // every drop reason and both packet kinds were exercised
        for (int i = 0; i < kEvN; ++i) EXPECT_GT(b.ev_count[i], 0u) << ev_name(static_cast<Ev>(i));
    }
    std::printf("[ info  ] %s: %zu TLPs, %zu packets, %llu cycles\n", Cfg<TypeParam>::name, tlps, pkts,
                static_cast<unsigned long long>(cycles));
}

// Header fields by hand (not by the model): page fields, node id, type, reserved bit.
TYPED_TEST(Requester, HeaderFields) {
    using M = TypeParam;
    constexpr unsigned VB = Cfg<M>::vb, NB = Cfg<M>::nb;
    auto rng = velo::sim::test_rng();
    Bench<M> b(rng);
    const unsigned sv = (1u << VB) - 2, dn = (1u << NB) - 1, dv = 1;  // all fields distinct and wide
    std::vector<uint8_t> msg(40);
    for (unsigned i = 0; i < msg.size(); ++i) msg[i] = static_cast<uint8_t>(3 * i + 1);
    const uint64_t base = 0xABCD0000ull << (12 + 2 * VB + NB);  // bits above the window are ignored
    const uint64_t off = velo::sim::send_offset(VB, NB, sv, dn, dv, 40);
    b.node_id = 0xF6;  // only the low NODE_BITS count
    b.enable_idle = true;
    for (const Tlp& t : velo::sim::wc_flush(base, off, msg, WcMode::Burst, rng)) b.push(t, true, 0xF6);
    b.run();
    b.check();
    ASSERT_EQ(b.sink.packets.size(), 1u);
    const Packet& p = b.sink.packets[0];
    const uint64_t h = p.w[0];
    EXPECT_EQ(h & 0xFFFF, net_bits(dn));
    EXPECT_EQ(VELO_FIELD_GET(VELO_PKT_HDR_TYPE, h), static_cast<unsigned>(VELO_PKT_TYPE_VELO));
    EXPECT_EQ(VELO_FIELD_GET(VELO_PKT_HDR_MSG_LEN_M1, h), 39u);
    EXPECT_EQ(VELO_FIELD_GET(VELO_PKT_HDR_FRAG_OFF, h), 0u);
    EXPECT_EQ(VELO_FIELD_GET(VELO_PKT_HDR_SRC_NODE, h), 0xF6u & ((1u << NB) - 1));
    EXPECT_EQ(VELO_FIELD_GET(VELO_PKT_HDR_SRC_VPID, h), sv);
    EXPECT_EQ(VELO_FIELD_GET(VELO_PKT_HDR_DST_VPID, h), dv);
    EXPECT_EQ(VELO_FIELD_GET(VELO_PKT_HDR_FRAG_LEN_M1, h), 39u);
    EXPECT_EQ(VELO_FIELD_GET(VELO_PKT_HDR_FRAG, h), 0u);
    EXPECT_EQ(VELO_FIELD_GET(VELO_PKT_HDR_RSVD, h), 0u);
    ASSERT_EQ(p.w.size(), 6u);
    for (unsigned i = 0; i < 40; ++i) EXPECT_EQ(static_cast<uint8_t>(p.w[1 + i / 8] >> (8 * (i % 8))), msg[i]) << i;
    EXPECT_EQ(p.lnb, 7u);
    EXPECT_EQ(b.ev_count[static_cast<int>(Ev::TxMsg)], 1u);
}

// The route is looked up with the header and inserted exactly: a valid entry gives its ROUTE, an
// invalid one the all-ones route, and VC is the request class. The output stalls for up to many
// cycles after the header while the route RAM's output changes every cycle it is not read (software
// reads of the table) and the entry itself is rewritten: the header on the port stays the one
// formed with the lookup.
TYPED_TEST(Requester, RouteInsertedUnderStall) {
    using M = TypeParam;
    constexpr unsigned VB = Cfg<M>::vb, NB = Cfg<M>::nb;
    auto rng = velo::sim::test_rng();
    Bench<M> b(rng);
    b.rt_noise_pct = 100;
    struct Case {
        uint16_t entry;  // {VALID, ROUTE} in the table
        uint64_t route;  // ROUTE the packet must carry (worked out by hand)
        const char* what;
    };
    const Case cases[] = {
        {kRtValid | 0x2A5C, 0x2A5C, "valid"},
        {0x2A5C, 0x3FFF, "invalid, route bits set"},
        {0, 0x3FFF, "invalid, all zero"},
        {kRtValid, 0, "valid, route 0"},
        {kRtValid | 0x3FFE, 0x3FFE, "valid, all but the low bit"},
        {kRtValid | 0x0001, 0x0001, "valid, the low bit"},
    };
    const unsigned stalls[] = {0, 1, 2, 7, 60};
    size_t n = 0;
    for (const Case& c : cases) {
        for (unsigned stall : stalls) {
            SCOPED_TRACE(std::string(c.what) + ", stall " + std::to_string(stall));
            const unsigned node = rnd(rng, 1u << NB);
            g_routes[node] = c.entry;
            std::vector<uint8_t> msg(1 + rnd(rng, 64));
            for (auto& x : msg) x = static_cast<uint8_t>(rng());
            const uint64_t line =
                velo::sim::send_offset(VB, NB, rnd(rng, 1u << VB), node, rnd(rng, 1u << VB), msg.size());
            for (const Tlp& t : velo::sim::wc_flush(0, line, msg, WcMode::Burst, rng)) b.push(t);
            unsigned visible = 0, noisy = 0;
            b.hook = [&] {
                if (!b.sink.header_visible()) return;
                if (visible == 0) g_routes[node] ^= 0x7FFF;  // rewritten once the lookup is done
                if ((b.h->rt_data & 0x7FFF) != c.entry) ++noisy;
                if (visible++ < stall) b.h->pkt_ready = 0;
            };
            b.run();
            b.hook = nullptr;
            ASSERT_FALSE(::testing::Test::HasFailure());
            ASSERT_EQ(b.sink.packets.size(), ++n);
            const uint64_t h = b.sink.packets.back().w[0];
            EXPECT_EQ(VELO_FIELD_GET(VELO_PKT_HDR_ROUTE, h), c.route);
            EXPECT_EQ(VELO_FIELD_GET(VELO_PKT_HDR_VC, h), static_cast<uint64_t>(VELO_VC_REQ));
            EXPECT_EQ(visible, stall + 1) << "cycles the header was on the port";
            if (stall >= 1) {
                EXPECT_GE(noisy, stall - 1) << "the route RAM output did not change meanwhile";
            }
        }
    }
    b.check();
    EXPECT_EQ(b.sink.packets.size(), std::size(cases) * std::size(stalls));
}

// Corner cases and the drop priority, each row with its outcome worked out by hand (and the
// reference model must agree with the hand).
TYPED_TEST(Requester, DirectedCorners) {
    using M = TypeParam;
    constexpr unsigned VB = Cfg<M>::vb, NB = Cfg<M>::nb;
    constexpr int kMWr = -1;
    struct Row {
        const char* what;
        unsigned n, fbe, lbe, dw, msg_len;
        bool en, ep;
        int ft;  // TLP fmt/type, kMWr: a memory write of the right header size
        Ev ev;
        unsigned off, frag_len, words, lnb;  // forwarded rows
    };
    const Row rows[] = {
        {"1 byte message", 1, 0x1, 0, 0, 1, true, false, kMWr, Ev::TxMsg, 0, 1, 1, 0},
        {"64 byte message", 16, 0xF, 0xF, 0, 64, true, false, kMWr, Ev::TxMsg, 0, 64, 8, 7},
        {"64 byte write clipped to 5", 16, 0xF, 0xF, 0, 5, true, false, kMWr, Ev::TxMsg, 0, 5, 1, 4},
        {"64 byte write clipped to 9", 16, 0xF, 0xF, 0, 9, true, false, kMWr, Ev::TxMsg, 0, 9, 2, 0},
        {"fragment at 63, length 1", 1, 0x8, 0, 15, 64, true, false, kMWr, Ev::TxFrag, 63, 1, 1, 3},
        {"be 0110", 1, 0x6, 0, 2, 64, true, false, kMWr, Ev::TxFrag, 9, 2, 1, 2},
        {"be 1100/0011", 2, 0xC, 0x3, 0, 64, true, false, kMWr, Ev::TxFrag, 2, 4, 1, 5},
        {"be 1000/.../0001", 3, 0x8, 0x1, 13, 64, true, false, kMWr, Ev::TxFrag, 55, 6, 2, 0},
        {"tail clipped, fragment", 4, 0xE, 0xF, 1, 10, true, false, kMWr, Ev::TxFrag, 5, 5, 1, 5},
        {"last DW of the page", 1, 0xF, 0, 15, 64, true, false, kMWr, Ev::TxFrag, 60, 4, 1, 3},
        {"whole 3 byte message at 0", 1, 0x7, 0, 0, 3, true, false, kMWr, Ev::TxMsg, 0, 3, 1, 2},
        {"be 1010", 1, 0xA, 0, 0, 64, true, false, kMWr, Ev::DropMalformed, 0, 0, 0, 0},
        {"be 1001", 1, 0x9, 0, 0, 64, true, false, kMWr, Ev::DropMalformed, 0, 0, 0, 0},
        {"zero length", 1, 0x0, 0, 0, 64, true, false, kMWr, Ev::DropMalformed, 0, 0, 0, 0},
        {"1 DW with last be", 1, 0xF, 0x1, 0, 64, true, false, kMWr, Ev::DropMalformed, 0, 0, 0, 0},
        {"2 DW, last be 0", 2, 0xF, 0x0, 0, 64, true, false, kMWr, Ev::DropMalformed, 0, 0, 0, 0},
        {"2 DW, first be 0", 2, 0x0, 0xF, 0, 64, true, false, kMWr, Ev::DropMalformed, 0, 0, 0, 0},
        {"2 DW, hole after first", 2, 0x7, 0xF, 0, 64, true, false, kMWr, Ev::DropMalformed, 0, 0, 0, 0},
        {"2 DW, hole before last", 2, 0xF, 0xE, 0, 64, true, false, kMWr, Ev::DropMalformed, 0, 0, 0, 0},
        {"2 DW, 0011/0011", 2, 0x3, 0x3, 0, 64, true, false, kMWr, Ev::DropMalformed, 0, 0, 0, 0},
        {"poisoned", 2, 0xF, 0xF, 0, 64, true, true, kMWr, Ev::DropMalformed, 0, 0, 0, 0},
        {"memory read", 2, 0xF, 0xF, 0, 64, true, false, VELO_TLP_FMT_TYPE_MRD32, Ev::DropMalformed, 0, 0, 0, 0},
        {"completion with data", 2, 0xF, 0xF, 0, 64, true, false, VELO_TLP_FMT_TYPE_CPLD, Ev::DropMalformed, 0, 0, 0,
         0},
        {"17 DW", 17, 0xF, 0xF, 0, 64, true, false, kMWr, Ev::DropTooLong, 0, 0, 0, 0},
        {"1024 DW", 0, 0xF, 0xF, 0, 64, true, false, kMWr, Ev::DropTooLong, 0, 0, 0, 0},
        {"crosses the line", 2, 0xF, 0xF, 15, 20, true, false, kMWr, Ev::DropTooLong, 0, 0, 0, 0},
        {"crosses the page", 2, 0xF, 0xF, 15, 64, true, false, kMWr, Ev::DropCrossPage, 0, 0, 0, 0},
        {"offset == length", 1, 0xF, 0, 1, 4, true, false, kMWr, Ev::DropMalformed, 0, 0, 0, 0},
        {"offset 3 in a 3 byte message", 1, 0x8, 0, 0, 3, true, false, kMWr, Ev::DropMalformed, 0, 0, 0, 0},
        {"offset 3 in a 4 byte message", 1, 0x8, 0, 0, 4, true, false, kMWr, Ev::TxFrag, 3, 1, 1, 3},
        // priority: disabled > malformed > too long > cross page > line > past the message
        {"disabled beats malformed", 1, 0xA, 0, 0, 64, false, true, kMWr, Ev::DropDisabled, 0, 0, 0, 0},
        {"disabled, legal", 1, 0xF, 0, 0, 64, false, false, kMWr, Ev::DropDisabled, 0, 0, 0, 0},
        {"malformed beats too long", 20, 0x7, 0xF, 0, 64, true, false, kMWr, Ev::DropMalformed, 0, 0, 0, 0},
        {"malformed beats page", 2, 0xF, 0xF, 15, 64, true, true, kMWr, Ev::DropMalformed, 0, 0, 0, 0},
        {"too long beats page", 17, 0xF, 0xF, 15, 64, true, false, kMWr, Ev::DropTooLong, 0, 0, 0, 0},
        {"line beats past length", 2, 0xF, 0xF, 15, 10, true, false, kMWr, Ev::DropTooLong, 0, 0, 0, 0},
    };
    auto rng = velo::sim::test_rng();
    for (int pass = 0; pass < 2; ++pass) {  // pass 1: with input gaps and output stalls
        Bench<M> b(rng);
        if (pass) {
            b.drv.gap_pct = 30;
            b.drv.mid_tlp_gaps = true;
            b.sink.stall_pct = 40;
            b.scramble = true;
        }
        const uint64_t base = pass ? 0 : (1ull << 40);
        for (const Row& w : rows) {
            uint64_t line = velo::sim::send_offset(VB, NB, 1, 2, 3, w.msg_len);
            // the page cases use the last line of the page; their "message length" is 64 by construction
            Tlp t = raw_mwr(base + line + 4 * w.dw, w.n, static_cast<uint8_t>(w.fbe), static_cast<uint8_t>(w.lbe), rng);
            t.ep = w.ep;
            if (w.ft != kMWr) {
                t.fmt_type = static_cast<uint8_t>(w.ft);
                if (w.ft != VELO_TLP_FMT_TYPE_CPLD) t.payload.clear();
            }
            b.push(t, w.en, 7);
            const Expect& e = b.items.back().e;
            ASSERT_EQ(e.ev, w.ev) << "reference model disagrees with the table: " << w.what;
            if (!e.fwd()) continue;
            ASSERT_EQ(VELO_FIELD_GET(VELO_PKT_HDR_FRAG_OFF, e.hdr), w.off) << w.what;
            ASSERT_EQ(VELO_FIELD_GET(VELO_PKT_HDR_FRAG_LEN_M1, e.hdr) + 1, w.frag_len) << w.what;
            ASSERT_EQ(VELO_FIELD_GET(VELO_PKT_HDR_FRAG, e.hdr), w.ev == Ev::TxFrag ? 1u : 0u) << w.what;
            ASSERT_EQ(e.words(), w.words) << w.what;
            ASSERT_EQ(e.lnb(), w.lnb) << w.what;
        }
        b.run();
        b.check();
        // the hand table, once more straight against the wire
        size_t pk = 0;
        for (const Row& w : rows) {
            if (w.ev != Ev::TxMsg && w.ev != Ev::TxFrag) continue;
            ASSERT_LT(pk, b.sink.packets.size());
            const Packet& p = b.sink.packets[pk++];
            EXPECT_EQ(VELO_FIELD_GET(VELO_PKT_HDR_FRAG_OFF, p.w[0]), w.off) << w.what;
            EXPECT_EQ(VELO_FIELD_GET(VELO_PKT_HDR_FRAG_LEN_M1, p.w[0]) + 1, w.frag_len) << w.what;
            EXPECT_EQ(p.w.size(), 1 + w.words) << w.what;
            EXPECT_EQ(p.lnb, w.lnb) << w.what;
        }
    }
}

// Message lengths 1..64 flushed every way, both at line offset 0 and shifted: beats in and words
// out by count.
TYPED_TEST(Requester, EveryLengthEveryFlush) {
    using M = TypeParam;
    constexpr unsigned VB = Cfg<M>::vb, NB = Cfg<M>::nb, R = Cfg<M>::tlp_w / 64;
    auto rng = velo::sim::test_rng();
    const WcMode modes[] = {WcMode::Burst, WcMode::FullLine, WcMode::Split, WcMode::Chunk8, WcMode::Bytes};
    for (WcMode m : modes) {
        Bench<M> b(rng);
        b.sink.stall_pct = 20;
        for (unsigned len = 1; len <= 64; ++len) {
            std::vector<uint8_t> msg(len);
            for (auto& x : msg) x = static_cast<uint8_t>(rng());
            for (const Tlp& t : velo::sim::wc_flush(
                     0x100000000ull, velo::sim::send_offset(VB, NB, len % 3, len % 5, len % 7, len), msg, m, rng))
                b.push(t);
        }
        b.run();
        b.check();
        uint64_t beats = 0;
        for (auto& it : b.items) beats += std::max<uint64_t>(1, (it.t.payload.size() + 8 * R - 1) / (8 * R));
        EXPECT_EQ(b.drv.beats_sent, beats);
        if (m == WcMode::Burst || m == WcMode::FullLine) {
            EXPECT_EQ(b.sink.packets.size(), 64u);
            EXPECT_EQ(b.ev_count[static_cast<int>(Ev::TxMsg)], 64u);  // one whole-message packet each
        }
    }
    // the 64-byte message: 8 beats at 64 bits, 4 at 128, 8 payload words either way
    Bench<M> b(rng);
    std::vector<uint8_t> msg(64);
    for (auto& x : msg) x = static_cast<uint8_t>(rng());
    for (const Tlp& t : velo::sim::wc_flush(0, velo::sim::send_offset(VB, NB, 0, 1, 0, 64), msg, WcMode::Burst, rng))
        b.push(t);
    b.run();
    b.check();
    EXPECT_EQ(b.drv.beats_sent, 8u / R);
    ASSERT_EQ(b.sink.packets.size(), 1u);
    EXPECT_EQ(b.sink.packets[0].w.size(), 9u);
}

// Enable falls after a header went out: that TLP still completes. Enable falls while a first beat
// waits behind a busy output: that TLP is dropped (disabled) and the packet in flight is untouched.
TYPED_TEST(Requester, EnableToggle) {
    using M = TypeParam;
    constexpr unsigned VB = Cfg<M>::vb, NB = Cfg<M>::nb;
    auto rng = velo::sim::test_rng();
    auto msg_tlp = [&](unsigned len) {
        std::vector<uint8_t> m(len);
        for (auto& x : m) x = static_cast<uint8_t>(rng());
        return velo::sim::wc_flush(0, velo::sim::send_offset(VB, NB, 1, 1, 1, len), m, WcMode::Burst, rng).at(0);
    };
    {
        Bench<M> b(rng);
        int en = 1, ready = 0;
        b.hook = [&] {
            b.h->enable = static_cast<uint8_t>(en);
            b.h->pkt_ready = static_cast<uint8_t>(ready);
        };
        b.push(msg_tlp(64), true);
        int n = 0;
        while (!b.h->pkt_valid && n++ < 10) b.step();
        ASSERT_TRUE(b.h->pkt_valid) << "no header";
        EXPECT_EQ(b.h->pkt_data, b.items[0].e.hdr);
        en = 0;  // the header is out: the TLP is committed
        for (int i = 0; i < 6; ++i) b.step();
        EXPECT_EQ(b.drv.beats_sent, 0u) << "first beat taken while its header is stalled";
        EXPECT_EQ(b.h->pkt_data, b.items[0].e.hdr);
        ready = 1;
        for (int i = 0; i < 4; ++i) b.step();
        ready = 0;  // stall in the middle, still disabled
        for (int i = 0; i < 4; ++i) b.step();
        ready = 1;
        b.push(msg_tlp(8), false);  // disabled from the start: dropped
        b.run();
        b.check();
        EXPECT_EQ(b.sink.packets.size(), 1u);
        EXPECT_EQ(b.ev_count[static_cast<int>(Ev::DropDisabled)], 1u);
    }
    {
        Bench<M> b(rng);
        bool hold = false;
        bool dropped_mid_packet = false;
        b.hook = [&] {
            // after A's last beat went in, stall the output so B's first beat waits with no header
            if (hold) b.h->pkt_ready = 0;
        };
        b.push(msg_tlp(64), true);   // A
        b.push(msg_tlp(16), false);  // B: enable falls while it waits
        b.push(msg_tlp(24), true);   // C
        for (int i = 0; i < 200 && b.drv.pending() == 3; ++i) b.step();
        ASSERT_EQ(b.drv.pending(), 2u);
        hold = true;
        for (unsigned i = 0; i < 3 + Cfg<M>::pipe; ++i) {  // B's decision: PIPE's cycles later
            b.step();
            if (b.ev_count[static_cast<int>(Ev::DropDisabled)] && b.sink.mid_packet()) dropped_mid_packet = true;
        }
        EXPECT_TRUE(dropped_mid_packet) << "B not dropped while A's packet was still on the port";
        hold = false;
        b.run();
        b.check();
        EXPECT_EQ(b.sink.packets.size(), 2u);
    }
}

// Output always ready, input always valid, no TLP dropped or clipped: one packet word every cycle
// from the first header to the last word (PIPE: and one idle cycle before each TLP's header, the
// decision's, no other).
TYPED_TEST(Requester, Throughput) {
    using M = TypeParam;
    constexpr unsigned VB = Cfg<M>::vb, NB = Cfg<M>::nb;
    auto rng = velo::sim::test_rng();
    Bench<M> b(rng);
    uint64_t first = ~0ull, last = 0, idle = 0;
    b.hook = [&] {
        if (b.h->pkt_valid) {
            first = std::min(first, b.h.cycle());
            last = b.h.cycle();
        } else if (first != ~0ull && b.sink.packets.size() < b.fwd_expected) {
            ++idle;
            if (!Cfg<M>::pipe) ADD_FAILURE() << "idle output cycle " << b.h.cycle();
        }
    };
    for (int i = 0; i < 300; ++i) {
        const unsigned len = 8 * (1 + rnd(rng, 8));  // Burst writes of whole quadwords: nothing clipped
        std::vector<uint8_t> m(len);
        for (auto& x : m) x = static_cast<uint8_t>(rng());
        const uint64_t line = velo::sim::send_offset(VB, NB, rnd(rng, 4), rnd(rng, 4), rnd(rng, 4), len);
        for (const Tlp& t : velo::sim::wc_flush(0, line, m, rnd(rng, 2) ? WcMode::Burst : WcMode::Chunk8, rng))
            b.push(t);
    }
    b.run();
    b.check();
    EXPECT_EQ(b.sink.words + idle, last - first + 1) << "words out vs cycles";
    EXPECT_EQ(idle, Cfg<M>::pipe * (b.items.size() - 1)) << "idle output cycles";
    std::printf("[ info  ] %s: %llu words in %llu cycles\n", Cfg<M>::name,
                static_cast<unsigned long long>(b.sink.words), static_cast<unsigned long long>(last - first + 1));
}

// Dropped TLPs and clipped tails are eaten at one beat per cycle.
TYPED_TEST(Requester, DropsAtFullRate) {
    using M = TypeParam;
    constexpr unsigned VB = Cfg<M>::vb, NB = Cfg<M>::nb, R = Cfg<M>::tlp_w / 64;
    auto rng = velo::sim::test_rng();
    Bench<M> b(rng);
    uint64_t beats = 0;
    for (int i = 0; i < 100; ++i) {
        const unsigned n = 17 + rnd(rng, 48);
        b.push(raw_mwr(velo::sim::send_offset(VB, NB, 0, 0, 0, 64), n, 0xF, 0xF, rng));
        beats += (4 * n + 8 * R - 1) / (8 * R);
    }
    uint64_t start = b.h.cycle();
    while (!b.drv.idle() && b.h.cycle() - start < 100000) b.step();
    EXPECT_EQ(b.h.cycle() - start, beats + 100 * Cfg<M>::pipe) << "cycles to eat " << beats << " beats of dropped TLPs";
    b.run();
    b.check();
    // 64-byte writes of 1-byte messages: one header and one word out, the other beats eaten
    Bench<M> c(rng);
    for (int i = 0; i < 50; ++i) c.push(raw_mwr(velo::sim::send_offset(VB, NB, 0, 0, 0, 1), 16, 0xF, 0xF, rng));
    start = c.h.cycle();
    while (!c.drv.idle() && c.h.cycle() - start < 100000) c.step();
    // per TLP: one cycle for the header, then 16/(2R) beats, the first with the payload word (PIPE:
    // and the decision's cycle)
    EXPECT_EQ(c.h.cycle() - start, 50 * (1 + 8 / R + Cfg<M>::pipe));
    c.run();
    c.check();
}

// Latency: the first beat of a TLP arrives at cycle t, its header word is valid at t + 1, the first
// payload word at t + 2 (the first beat is taken at t + 1, or t + 2 at 128 bits with two words);
// one cycle later each with PIPE.
TYPED_TEST(Requester, Latency) {
    using M = TypeParam;
    constexpr unsigned VB = Cfg<M>::vb, NB = Cfg<M>::nb, R = Cfg<M>::tlp_w / 64;
    auto rng = velo::sim::test_rng();
    Bench<M> b(rng);
    for (int i = 0; i < 50; ++i) {
        const unsigned len = 1 + rnd(rng, 64);
        std::vector<uint8_t> m(len);
        for (auto& x : m) x = static_cast<uint8_t>(rng());
        Tlp t = velo::sim::wc_flush(0, velo::sim::send_offset(VB, NB, 2, 3, 4, len), m, WcMode::Burst, rng).at(0);
        b.push(t);
        uint64_t arrive = ~0ull, taken = ~0ull, hdr = ~0ull, word1 = ~0ull;
        b.hook = [&] {
            const uint64_t c = b.h.cycle();
            if (b.h->in_valid && b.h->in_sop && arrive == ~0ull) arrive = c;
            if (b.h->pkt_valid && hdr == ~0ull) hdr = c;
            if (b.h->pkt_valid && hdr != ~0ull && hdr != c && word1 == ~0ull) word1 = c;
        };
        while (!b.drv.idle()) {
            b.step();
            if (b.drv.sop_fired && taken == ~0ull) taken = b.h.cycle() - 1;
        }
        b.run();
        b.hook = nullptr;
        ASSERT_NE(arrive, ~0ull);
        constexpr unsigned P = Cfg<M>::pipe;
        EXPECT_EQ(hdr, arrive + 1 + P) << "header latency (len " << len << ")";
        // the first beat is taken with its last needed word: lane 0 at 64 bits, lane 1 at 128 if used
        const unsigned lanes = std::min<unsigned>(R, b.items.back().e.words());
        EXPECT_EQ(taken, arrive + lanes + P) << "first beat taken";
        EXPECT_EQ(word1, arrive + 2 + P) << "first payload word";
        const unsigned idle = rnd(rng, 4);
        for (unsigned k = 0; k < idle; ++k) b.step();  // idle cycles between
    }
    b.check();
    std::printf("[ info  ] %s: requester latency %u cycle(s) (first beat in -> header word valid)\n", Cfg<M>::name,
                1 + Cfg<M>::pipe);
}

}  // namespace
