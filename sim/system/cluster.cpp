#include "cluster.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>

namespace velo::sim {

namespace {

struct PendingMsg {
    std::deque<Tlp> tlps;
    unsigned dnode = 0;
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

struct Host {
    std::unique_ptr<HostMem> mem;
    std::unique_ptr<HostReader> reader;
    std::map<unsigned, std::unique_ptr<MailboxReader>> readers;
    std::map<unsigned, bool> paused;
    std::map<unsigned, unsigned> log2;
    std::map<unsigned, int> credit;  // free lines per receiving vpid, as senders see them
    // Lines read but not yet free in the NIC's eyes. Senders get them only once the NIC has
    // applied the read-pointer write that frees them: before that, a packet into those lines waits
    // at the completer (and holds up what queues behind it) while the read-pointer write can wait
    // behind this node's own sends — the back-pressure deadlock again. libvelo orders its credit
    // message behind the read-pointer write; this model confirms with a register read behind it
    // (reads do not pass posted writes) and gives the credit when the completion is in.
    std::map<unsigned, int> unreturned;
    struct Return {
        unsigned vpid;
        int lines;
    };
    std::deque<Return> returns;  // read-pointer writes posted, credit not given yet
    size_t confirming = 0;       // returns the outstanding confirmation read covers (0: none)
    uint8_t confirm_tag = 0;
    Recombiner rec;
    std::map<unsigned, Thread> threads;  // by source vpid
    std::vector<std::string> errors;
};

std::vector<uint8_t> le32(uint32_t v) {
    return {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v >> 16),
            static_cast<uint8_t>(v >> 24)};
}

}  // namespace

struct Cluster::Impl {
    Config cfg;
    std::unique_ptr<System> sys;
    std::vector<Host> h;
    Scoreboard sb;
    std::mt19937_64 rng;
    Cluster* owner = nullptr;

    void feed_threads(unsigned i) {
        Host& s = h[i];
        // The CPU: threads' writes interleave at write granularity; a few in flight at once.
        while (sys->cpu_queued(i) < static_cast<size_t>(cfg.max_inflight)) {
            std::vector<unsigned> ready;
            for (auto& [v, th] : s.threads) {
                if (th.empty()) continue;
                PendingMsg& m = th.msgs.front();
                if (!m.started && cfg.credits && m.dnode < h.size() && h[m.dnode].credit.count(m.dvpid) &&
                    h[m.dnode].credit[m.dvpid] < static_cast<int>(m.lines))
                    continue;  // no room at the receiver yet
                ready.push_back(v);
            }
            if (ready.empty()) return;
            unsigned v = ready[rng() % ready.size()];
            PendingMsg& m = s.threads[v].msgs.front();
            if (!m.started) {
                m.started = true;
                if (cfg.credits && m.dnode < h.size() && h[m.dnode].credit.count(m.dvpid))
                    h[m.dnode].credit[m.dvpid] -= static_cast<int>(m.lines);
            }
            sys->cpu_post(i, m.tlps.front());
            m.tlps.pop_front();
            if (m.tlps.empty()) s.threads[v].msgs.pop_front();
        }
    }

    void poll(unsigned i) {
        Host& s = h[i];
        for (auto& [v, r] : s.readers) {
            if (s.paused[v]) continue;
            MboxEntry e;
            int got = 0;
            while (got < 4 && r->poll(e)) {
                ++got;
                if (s.credit.count(v)) s.unreturned[v] += static_cast<int>(e.lines());
                Msg m;
                if (s.rec.add(i, e, m)) {
                    sb.deliver(m);
                    if (owner->on_msg) owner->on_msg(i, m, sys->cycle());
                }
            }
            // return space lazily: a quarter of the ring, or whatever is consumed once idle
            uint32_t size = 1u << s.log2[v];
            uint32_t gone = r->rp() - r->rp_returned;
            if (gone && (gone >= std::max(1u, size / 4) || got == 0)) {
                uint32_t off = VELO_TBL_VPID_USER_BASE + v * VELO_TBL_VPID_USER_STRIDE + VELO_TBL_VPID_USER_MB_RP;
                sys->cpu_post(i,
                              Tlp::mwr(kBar0 + off, le32(r->rp() & ((1u << VELO_MBOX_PTR_BITS) - 1)), VELO_BAR_REGS));
                r->rp_returned = r->rp();
                if (s.credit.count(v)) {
                    s.returns.push_back({v, s.unreturned[v]});
                    s.unreturned[v] = 0;
                }
            }
        }
        if (s.confirming && sys->reg_read_result(i, s.confirm_tag)) {
            // every read-pointer write posted before the read is applied: their lines are free
            for (; s.confirming; --s.confirming) {
                if (s.credit.count(s.returns.front().vpid)) s.credit[s.returns.front().vpid] += s.returns.front().lines;
                s.returns.pop_front();
            }
        }
        if (!s.confirming && !s.returns.empty()) {
            s.confirm_tag = sys->reg_read_post(i, VELO_REG_CTRL_SCRATCH);
            s.confirming = s.returns.size();
        }
    }

    void on_cycle() {
        for (unsigned i = 0; i < h.size(); ++i) {
            h[i].mem->step();
            Tlp c;
            while (h[i].reader->pop(sys->cycle(), c)) sys->cpu_post(i, c);
            poll(i);
            feed_threads(i);
        }
        if (owner->on_host_cycle) owner->on_host_cycle();
    }
};

Cluster::Cluster(const Config& c) : p_(new Impl) {
    auto& s = *p_;
    s.cfg = c;
    s.owner = this;
    s.rng.seed(c.sys.seed * 7 + 1);
    s.sys.reset(new System(c.sys));
    s.h.resize(s.sys->nodes());
    last_send_sop.assign(s.h.size(), 0);
    last_dma_eop.assign(s.h.size(), 0);
    for (unsigned i = 0; i < s.h.size(); ++i) {
        s.h[i].mem.reset(new HostMem(c.sys.seed * 31 + i));
        s.h[i].mem->max_delay = c.mem_delay;
        s.h[i].reader.reset(new HostReader(*s.h[i].mem, c.sys.seed * 37 + i));
        s.h[i].reader->cpl_id = 0;
    }
    s.sys->on_dma_read = [this](unsigned n, const Tlp& t) { p_->h[n].reader->request(t, p_->sys->cycle()); };
    s.sys->on_cycle = [this] { p_->on_cycle(); };
    s.sys->on_dma_write = [this](unsigned n, const Tlp& t) { p_->h[n].mem->post(t); };
    s.sys->on_send_sop = [this](unsigned n, uint64_t cyc) { last_send_sop[n] = cyc; };
    s.sys->on_dma_eop = [this](unsigned n, uint64_t cyc) { last_dma_eop[n] = cyc; };
}

Cluster::~Cluster() = default;

System& Cluster::sys() {
    return *p_->sys;
}
unsigned Cluster::nodes() const {
    return static_cast<unsigned>(p_->h.size());
}
uint64_t Cluster::cycle() const {
    return p_->sys->cycle();
}
void Cluster::step(uint64_t n) {
    p_->sys->step(n);
}
bool Cluster::init() {
    return p_->sys->init();
}
void Cluster::reg_write(unsigned node, uint32_t off, uint32_t v) {
    p_->sys->reg_write(node, off, v);
}
uint32_t Cluster::reg_read(unsigned node, uint32_t off) {
    return p_->sys->reg_read(node, off);
}
HostMem& Cluster::mem(unsigned node) {
    return *p_->h.at(node).mem;
}
HostReader& Cluster::reader(unsigned node) {
    return *p_->h.at(node).reader;
}
void Cluster::send_tlp(unsigned node, const Tlp& t) {
    p_->sys->cpu_post(node, t);
}

void Cluster::open_mailbox(unsigned node, unsigned vpid, unsigned log2_lines, uint64_t base) {
    auto& s = p_->h.at(node);
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

void Cluster::close_mailbox(unsigned node, unsigned vpid) {
    auto& s = p_->h.at(node);
    uint32_t t = VELO_TBL_VPID_TABLE_BASE + vpid * VELO_TBL_VPID_TABLE_STRIDE;
    reg_write(node, t + VELO_TBL_VPID_TABLE_MB_CFG, 0);
    reg_write(node, VELO_REG_CTRL_QUIESCE_VPID, vpid);
    for (int i = 0; i < 1000; ++i) {
        if (!(reg_read(node, VELO_REG_CTRL_QUIESCE_STATUS) & 1)) {
            s.readers.erase(vpid);
            s.credit.erase(vpid);
            s.unreturned.erase(vpid);
            for (auto& r : s.returns)
                if (r.vpid == vpid) r.lines = 0;  // a reopened ring starts with full credit
            return;
        }
    }
    s.errors.push_back("close_mailbox: vpid never quiesced");
}

void Cluster::pause_reader(unsigned node, unsigned vpid, bool paused) {
    p_->h.at(node).paused[vpid] = paused;
}

void Cluster::send(unsigned node, unsigned src_vpid, unsigned dst_node, unsigned dst_vpid,
                   const std::vector<uint8_t>& msg, WcMode mode, bool expect) {
    auto& s = p_->h.at(node);
    uint64_t off = send_offset(VELO_DEFAULT_VPID_BITS, VELO_DEFAULT_NODE_BITS, src_vpid, dst_node, dst_vpid,
                               static_cast<unsigned>(msg.size()));
    PendingMsg pm;
    for (auto& t : wc_flush(kBar2, off, msg, mode, p_->rng)) {
        pm.lines += entry_lines(t);
        pm.tlps.push_back(t);
    }
    pm.dnode = dst_node;
    pm.dvpid = dst_vpid;
    s.threads[src_vpid].msgs.push_back(std::move(pm));
    if (expect) {
        Msg m;
        m.src_node = node;
        m.src_vpid = src_vpid;
        m.dst_node = dst_node;
        m.dst_vpid = dst_vpid;
        m.bytes = msg;
        p_->sb.expect(m);
    }
}

bool Cluster::threads_idle() const {
    for (auto& s : p_->h)
        for (auto& [v, th] : s.threads)
            if (!th.empty()) return false;
    return true;
}

size_t Cluster::queued_writes(unsigned node) const {
    size_t n = 0;
    for (auto& [v, th] : p_->h.at(node).threads) n += th.size();
    return n;
}

bool Cluster::run_until_idle(uint64_t max_cycles) {
    auto& s = *p_;
    for (uint64_t i = 0; i < max_cycles; ++i) {
        bool idle = threads_idle() && s.sb.outstanding() == 0;
        for (unsigned n = 0; idle && n < s.h.size(); ++n) idle = s.sys->cpu_queued(n) == 0 && s.h[n].mem->idle();
        if (idle) return true;
        step();
    }
    for (unsigned i = 0; i < s.h.size(); ++i) {  // say where it is stuck
        auto& hs = s.h[i];
        char b[256];
        std::snprintf(b, sizeof b, "stuck: node %u: %zu writes queued in threads, %zu at the port, mem idle %d", i,
                      queued_writes(i), s.sys->cpu_queued(i), hs.mem->idle());
        hs.errors.push_back(b);
        for (auto& [v, r] : hs.readers) {
            std::snprintf(b, sizeof b, "stuck: node %u vpid %u: rp %u returned %u paused %d", i, v, r->rp(),
                          r->rp_returned, static_cast<int>(hs.paused[v]));
            hs.errors.push_back(b);
        }
    }
    return false;
}

Scoreboard& Cluster::scoreboard() {
    return p_->sb;
}

std::vector<std::string> Cluster::errors() const {
    std::vector<std::string> e = p_->sb.errors;
    for (auto& s : p_->h) {
        e.insert(e.end(), s.errors.begin(), s.errors.end());
        e.insert(e.end(), s.rec.errors.begin(), s.rec.errors.end());
        for (auto& [v, r] : s.readers) e.insert(e.end(), r->errors.begin(), r->errors.end());
        e.insert(e.end(), s.reader->errors.begin(), s.reader->errors.end());
    }
    auto se = p_->sys->errors();
    e.insert(e.end(), se.begin(), se.end());
    return e;
}

uint64_t Cluster::fragments_seen() const {
    uint64_t n = 0;
    for (auto& s : p_->h) n += s.rec.fragments;
    return n;
}

}  // namespace velo::sim
