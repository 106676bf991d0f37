#include "pair.hpp"

#include <cstdio>
#include <deque>
#include <map>
#include <stdexcept>

#include "Vpair.h"
#include "Vpair_wide.h"

namespace velo::sim {

namespace {

struct PendingMsg {
    std::deque<Tlp> tlps;
    int dnode = -1;  // index of the destination node (-1: not one of ours)
    unsigned dvpid = 0;
    unsigned lines = 0;
    bool started = false;
};

struct Thread {
    std::deque<PendingMsg> msgs;
    bool empty() const { return msgs.empty(); }
    size_t size() const {
        size_t n = 0;
        for (auto& m : msgs) n += m.tlps.size();
        return n;
    }
};

struct NodeState {
    std::unique_ptr<TlpDriver> drv;
    std::unique_ptr<TlpSink> sink;
    std::unique_ptr<HostMem> mem;
    std::map<unsigned, std::unique_ptr<MailboxReader>> readers;
    std::map<unsigned, bool> paused;
    std::map<unsigned, unsigned> log2;
    std::map<unsigned, int> credit;  // free lines per receiving vpid, as senders see them
    Recombiner rec;
    std::map<unsigned, Thread> threads;  // by source vpid
    std::map<uint8_t, uint64_t> cpl;     // tag -> data (once completed)
    uint8_t next_tag = 0;
    unsigned id = 0;
    std::vector<std::string> errors;
    std::deque<bool> send_q;  // for each queued TLP: is it a send-window write
};

}  // namespace

struct Pair::Impl {
    virtual ~Impl() = default;
    virtual void cycle() = 0;
    virtual uint64_t cyc() const = 0;
    virtual unsigned tlp_bits() const = 0;
    virtual unsigned link_bits() const = 0;
    NodeState n[2];
    Scoreboard sb;
    std::mt19937_64 rng;
    Config cfg;
    Pair* owner = nullptr;
};

namespace {

template <class M>
struct ImplT final : Pair::Impl {
    Harness<M> h;

    explicit ImplT(const Pair::Config& c) {
        cfg = c;
        rng.seed(c.seed);
        M& t = h.top();
        n[0].drv.reset(new TlpDriver(TlpInPins{&t.a_rx_valid, &t.a_rx_ready, &t.a_rx_sop, &t.a_rx_eop,
                                               words(t.a_rx_hdr), &t.a_rx_bar, words(t.a_rx_data)}));
        n[1].drv.reset(new TlpDriver(TlpInPins{&t.b_rx_valid, &t.b_rx_ready, &t.b_rx_sop, &t.b_rx_eop,
                                               words(t.b_rx_hdr), &t.b_rx_bar, words(t.b_rx_data)}));
        n[0].sink.reset(new TlpSink(
            TlpOutPins{&t.a_tx_valid, &t.a_tx_ready, &t.a_tx_sop, &t.a_tx_eop, words(t.a_tx_hdr), words(t.a_tx_data)}));
        n[1].sink.reset(new TlpSink(
            TlpOutPins{&t.b_tx_valid, &t.b_tx_ready, &t.b_tx_sop, &t.b_tx_eop, words(t.b_tx_hdr), words(t.b_tx_data)}));
        for (int i = 0; i < 2; ++i) {
            NodeState& s = n[i];
            s.mem.reset(new HostMem(c.seed * 31 + static_cast<uint64_t>(i)));
            s.mem->max_delay = c.mem_delay;
            s.drv->rng = &rng;
            s.drv->gap_pct = c.drv_gap_pct;
            s.drv->mid_tlp_gaps = true;
            s.sink->rng = &rng;
            s.sink->stall_pct = c.sink_stall_pct;
            s.sink->on_tlp = [this, i](const Tlp& tlp) { on_upstream(i, tlp); };
        }
        h.reset();
    }

    uint64_t cyc() const override { return h.cycle(); }
    unsigned tlp_bits() const override { return sizeof(M::a_rx_data) * 8; }
    unsigned link_bits() const override { return cfg.wide ? 32 : 16; }

    void on_upstream(int i, const Tlp& t) {
        NodeState& s = n[i];
        if (t.is_mwr()) {
            s.mem->post(t);
            return;
        }
        if (t.is_cpl()) {
            uint64_t v = 0;
            for (size_t k = 0; k < t.payload.size() && k < 8; ++k) v |= static_cast<uint64_t>(t.payload[k]) << (8 * k);
            if (t.cpl_status != VELO_TLP_CPL_SC) v = ~0ull;  // as a CPU sees a failed read
            s.cpl[t.tag] = v;
            return;
        }
        s.errors.push_back("host: unexpected upstream " + t.str());
    }

    void feed_threads(NodeState& s) {
        // The CPU: threads' writes interleave at write granularity; a few in flight at once.
        while (s.drv->pending() < static_cast<size_t>(cfg.max_inflight)) {
            std::vector<unsigned> ready;
            for (auto& [v, th] : s.threads) {
                if (th.empty()) continue;
                PendingMsg& m = th.msgs.front();
                if (!m.started && cfg.credits && m.dnode >= 0 && n[m.dnode].credit.count(m.dvpid) &&
                    n[m.dnode].credit[m.dvpid] < static_cast<int>(m.lines))
                    continue;  // no room at the receiver yet
                ready.push_back(v);
            }
            if (ready.empty()) return;
            unsigned v = ready[rng() % ready.size()];
            PendingMsg& m = s.threads[v].msgs.front();
            if (!m.started) {
                m.started = true;
                if (cfg.credits && m.dnode >= 0 && n[m.dnode].credit.count(m.dvpid))
                    n[m.dnode].credit[m.dvpid] -= static_cast<int>(m.lines);
            }
            s.drv->push(m.tlps.front());
            s.send_q.push_back(true);
            m.tlps.pop_front();
            if (m.tlps.empty()) s.threads[v].msgs.pop_front();
        }
    }

    void poll(int i) {
        NodeState& s = n[i];
        for (auto& [v, r] : s.readers) {
            if (s.paused[v]) continue;
            MboxEntry e;
            int got = 0;
            while (got < 4 && r->poll(e)) {
                ++got;
                if (s.credit.count(v)) s.credit[v] += static_cast<int>(e.lines());
                Msg m;
                if (s.rec.add(s.id, e, m)) {
                    sb.deliver(m);
                    if (owner->on_msg) owner->on_msg(i, m, h.cycle());
                }
            }
            // return space lazily: a quarter of the ring, or whatever is consumed once idle
            uint32_t size = 1u << s.log2[v];
            uint32_t gone = r->rp() - r->rp_returned;
            if (gone && (gone >= std::max(1u, size / 4) || got == 0)) {
                uint32_t off = VELO_TBL_VPID_USER_BASE + v * VELO_TBL_VPID_USER_STRIDE + VELO_TBL_VPID_USER_MB_RP;
                s.drv->push(
                    Tlp::mwr(Pair::kBar0 + off, le32(r->rp() & ((1u << VELO_MBOX_PTR_BITS) - 1)), VELO_BAR_REGS));
                s.send_q.push_back(false);
                r->rp_returned = r->rp();
            }
        }
    }

    static std::vector<uint8_t> le32(uint32_t v) {
        return {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v >> 16),
                static_cast<uint8_t>(v >> 24)};
    }

    void cycle() override {
        for (int i = 0; i < 2; ++i) feed_threads(n[i]);
        for (int i = 0; i < 2; ++i) {
            n[i].drv->drive();
            n[i].sink->drive();
        }
        h.eval();
        for (int i = 0; i < 2; ++i) {
            bool was_send = !n[i].send_q.empty() && n[i].send_q.front();
            bool done = n[i].drv->sample();
            if (n[i].drv->sop_presented && was_send) owner->last_send_sop[i] = h.cycle();
            if (done) n[i].send_q.pop_front();
            n[i].sink->sample();
            if (n[i].sink->eop_fired) owner->last_dma_eop[i] = h.cycle();
        }
        M& t = h.top();
        if (t.ab_tx_fire) {
            if (owner->link_flits_ab == 0) owner->link_first_ab = h.cycle();
            ++owner->link_flits_ab;
            owner->link_last_ab = h.cycle();
        }
        h.tick();
        for (int i = 0; i < 2; ++i) {
            n[i].mem->step();
            poll(i);
        }
    }
};

}  // namespace

Pair::Pair(const Config& c) {
    if (c.wide)
        p_.reset(new ImplT<Vpair_wide>(c));
    else
        p_.reset(new ImplT<Vpair>(c));
    p_->owner = this;
}
Pair::~Pair() = default;

unsigned Pair::tlp_bits() const {
    return p_->tlp_bits();
}
unsigned Pair::link_bits() const {
    return p_->link_bits();
}
uint64_t Pair::cycle() const {
    return p_->cyc();
}
void Pair::step(uint64_t k) {
    for (uint64_t i = 0; i < k; ++i) p_->cycle();
}

void Pair::reg_write(int node, uint32_t off, uint32_t v) {
    auto& s = p_->n[node];
    s.drv->push(Tlp::mwr(kBar0 + off,
                         {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v >> 16),
                          static_cast<uint8_t>(v >> 24)},
                         VELO_BAR_REGS));
    s.send_q.push_back(false);
}

uint32_t Pair::reg_read(int node, uint32_t off) {
    auto& s = p_->n[node];
    uint8_t tag = s.next_tag++;
    s.cpl.erase(tag);
    s.drv->push(Tlp::mrd(kBar0 + off, 1, tag, VELO_BAR_REGS));
    s.send_q.push_back(false);
    for (int i = 0; i < 100000; ++i) {
        p_->cycle();
        auto it = s.cpl.find(tag);
        if (it != s.cpl.end()) {
            uint32_t v = static_cast<uint32_t>(it->second);
            s.cpl.erase(it);
            return v;
        }
    }
    s.errors.push_back("host: register read timed out (completion never came)");
    return ~0u;
}

void Pair::send_tlp(int node, const Tlp& t) {
    p_->n[node].drv->push(t);
    p_->n[node].send_q.push_back(t.bar == VELO_BAR_SEND);
}

void Pair::init(unsigned id_a, unsigned id_b) {
    p_->n[0].id = id_a;
    p_->n[1].id = id_b;
    for (int i = 0; i < 2; ++i) {
        reg_write(i, VELO_REG_CTRL_NODE_ID, p_->n[i].id);
        // the peer is one hop away: route code 1 (network port 1), then eject
        reg_write(i, VELO_TBL_ROUTE_TABLE_BASE + VELO_TBL_ROUTE_TABLE_STRIDE * p_->n[1 - i].id,
                  VELO_FIELD_PREP(VELO_TBL_ROUTE_TABLE_ROUTE_VALID, 1) | VELO_FIELD_PREP(VELO_TBL_ROUTE_TABLE_ROUTE_ROUTE, 1));
        reg_write(i, VELO_REG_CTRL_CONTROL, 1u << VELO_REG_CTRL_CONTROL_ENABLE_SHIFT);
        if (reg_read(i, VELO_REG_CTRL_NODE_ID) != p_->n[i].id) p_->n[i].errors.push_back("init: NODE_ID readback");
    }
}

unsigned Pair::node_id(int node) const {
    return p_->n[node].id;
}

void Pair::open_mailbox(int node, unsigned vpid, unsigned log2_lines, uint64_t base) {
    auto& s = p_->n[node];
    uint32_t t = VELO_TBL_VPID_TABLE_BASE + vpid * VELO_TBL_VPID_TABLE_STRIDE;
    reg_write(node, t + VELO_TBL_VPID_TABLE_MB_CFG, 0);
    s.mem->fill(base, 64ull << log2_lines, 0);  // the driver hands out zeroed rings
    reg_write(node, t + VELO_TBL_VPID_TABLE_MB_BASE_LO, static_cast<uint32_t>(base));
    reg_write(node, t + VELO_TBL_VPID_TABLE_MB_BASE_HI, static_cast<uint32_t>(base >> 32));
    reg_write(node, t + VELO_TBL_VPID_TABLE_MB_WP, 0);
    reg_write(node, VELO_TBL_VPID_USER_BASE + vpid * VELO_TBL_VPID_USER_STRIDE + VELO_TBL_VPID_USER_MB_RP, 0);
    reg_write(node, t + VELO_TBL_VPID_TABLE_MB_CFG,
              static_cast<uint32_t>(VELO_FIELD_PREP(VELO_TBL_VPID_TABLE_MB_CFG_ENABLE, 1) |
                                    VELO_FIELD_PREP(VELO_TBL_VPID_TABLE_MB_CFG_LOG2_LINES, log2_lines)));
    // read back: flushes the posted writes (as a driver does before telling senders) and checks them
    uint32_t cfg = reg_read(node, t + VELO_TBL_VPID_TABLE_MB_CFG);
    if (VELO_FIELD_GET(VELO_TBL_VPID_TABLE_MB_CFG_LOG2_LINES, cfg) != log2_lines ||
        !VELO_FIELD_GET(VELO_TBL_VPID_TABLE_MB_CFG_ENABLE, cfg))
        s.errors.push_back("open_mailbox: MB_CFG read back wrong");
    s.readers[vpid].reset(new MailboxReader(*s.mem, base, log2_lines));
    s.paused[vpid] = false;
    s.log2[vpid] = log2_lines;
    s.credit[vpid] = 1 << log2_lines;
}

void Pair::close_mailbox(int node, unsigned vpid) {
    auto& s = p_->n[node];
    uint32_t t = VELO_TBL_VPID_TABLE_BASE + vpid * VELO_TBL_VPID_TABLE_STRIDE;
    reg_write(node, t + VELO_TBL_VPID_TABLE_MB_CFG, 0);
    reg_write(node, VELO_REG_CTRL_QUIESCE_VPID, vpid);
    for (int i = 0; i < 1000; ++i) {
        if (!(reg_read(node, VELO_REG_CTRL_QUIESCE_STATUS) & 1)) {
            s.readers.erase(vpid);
            s.credit.erase(vpid);
            return;
        }
    }
    s.errors.push_back("close_mailbox: vpid never quiesced");
}

void Pair::pause_reader(int node, unsigned vpid, bool paused) {
    p_->n[node].paused[vpid] = paused;
}

void Pair::send(int node, unsigned src_vpid, unsigned dst_node_id, unsigned dst_vpid, const std::vector<uint8_t>& msg,
                WcMode mode, bool expect) {
    auto& s = p_->n[node];
    uint64_t off = send_offset(VELO_DEFAULT_VPID_BITS, VELO_DEFAULT_NODE_BITS, src_vpid, dst_node_id, dst_vpid,
                               static_cast<unsigned>(msg.size()));
    PendingMsg pm;
    for (auto& t : wc_flush(kBar2, off, msg, mode, p_->rng)) {
        pm.lines += entry_lines(t);
        pm.tlps.push_back(t);
    }
    pm.dvpid = dst_vpid;
    for (int i = 0; i < 2; ++i)
        if (p_->n[i].id == dst_node_id) pm.dnode = i;
    s.threads[src_vpid].msgs.push_back(std::move(pm));
    if (expect) {
        Msg m;
        m.src_node = s.id;
        m.src_vpid = src_vpid;
        m.dst_node = dst_node_id;
        m.dst_vpid = dst_vpid;
        m.bytes = msg;
        p_->sb.expect(m);
    }
}

bool Pair::threads_idle() const {
    for (auto& s : p_->n)
        for (auto& [v, th] : s.threads)
            if (!th.empty()) return false;
    return true;
}

bool Pair::run_until_idle(uint64_t max_cycles) {
    for (uint64_t i = 0; i < max_cycles; ++i) {
        if (threads_idle() && p_->sb.outstanding() == 0 && p_->n[0].drv->idle() && p_->n[1].drv->idle() &&
            p_->n[0].mem->idle() && p_->n[1].mem->idle())
            return true;
        p_->cycle();
    }
    // say where it is stuck
    for (int i = 0; i < 2; ++i) {
        auto& s = p_->n[i];
        char b[256];
        size_t th = 0;
        for (auto& [v, t] : s.threads) th += t.size();
        std::snprintf(b, sizeof b, "stuck: node %d: %zu writes queued in threads, %zu at the port, mem idle %d", i, th,
                      s.drv->pending(), s.mem->idle());
        s.errors.push_back(b);
        for (auto& [v, r] : s.readers) {
            std::snprintf(b, sizeof b, "stuck: node %d vpid %u: rp %u returned %u paused %d", i, v, r->rp(),
                          r->rp_returned, static_cast<int>(s.paused[v]));
            s.errors.push_back(b);
        }
    }
    return false;
}

Scoreboard& Pair::scoreboard() {
    return p_->sb;
}

std::vector<std::string> Pair::errors() const {
    std::vector<std::string> e = p_->sb.errors;
    for (auto& s : p_->n) {
        e.insert(e.end(), s.errors.begin(), s.errors.end());
        e.insert(e.end(), s.sink->errors.begin(), s.sink->errors.end());
        e.insert(e.end(), s.rec.errors.begin(), s.rec.errors.end());
        for (auto& [v, r] : s.readers) e.insert(e.end(), r->errors.begin(), r->errors.end());
    }
    return e;
}

uint64_t Pair::fragments_seen() const {
    return p_->n[0].rec.fragments + p_->n[1].rec.fragments;
}

}  // namespace velo::sim
