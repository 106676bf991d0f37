// Mailbox interrupts end to end: two NICs back to back (the "pair" system), node 0 sends, node 1
// receives. Node 1's driver is the portable driver core (sw/driver/core) running over the
// simulated registers through its ops table: it opens the endpoints, enables, arms and collects
// the interrupts. Its host memory is HostMem (DMA writes become visible line by line, late and in
// adversarial order); a register read's completion and an MSI make every DMA write before them
// visible, as on PCIe (neither passes a posted write).
//
// Checked: an armed vpid's next entry raises exactly one request, after the last beat of the
// entry's last TLP was accepted, and sets its PENDING bit (cleared by the collect); no request
// without an arm, with interrupts disabled, or after the vpid was closed or reconfigured; an arm
// that reaches the NIC while the entry is still inside it (DMA held) still catches that entry;
// requests coalesce while one is outstanding (MSI masked); COUNT counts requests; and receivers
// that sleep until their interrupt (arm, re-check the ring, sleep) get every message under random
// traffic, DMA stalls and masked periods, never waiting for an interrupt that does not come, also
// when the arm races the very entry the receiver waits for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "host.hpp"
#include "system.hpp"
#include "velo/velo_hw.h"
#include "velo/velo_uapi.h"
#include "velo_core.h"

using namespace velo::sim;

namespace {

constexpr unsigned kTx = 0, kRx = 1;  // sending node, receiving node (the driver core's)
constexpr unsigned kSrcVpid = 3;      // sending vpid on node 0

std::vector<uint8_t> random_bytes(std::mt19937_64& r, unsigned len) {
    std::vector<uint8_t> m(len);
    for (auto& b : m) b = static_cast<uint8_t>(r());
    return m;
}

SystemConfig pair_config(uint64_t seed, int dma_stall_pct) {
    SystemConfig c;
    c.topology = "pair";
    c.seed = seed;
    c.dma_stall_pct = dma_stall_pct;
    return c;
}

// One receiving vpid and its software.
struct Waiter {
    const velo_core_ep* ep = nullptr;
    unsigned vpid = 0;
    std::unique_ptr<MailboxReader> rd;
    bool asleep = false;
    uint64_t got = 0, arms = 0, reports = 0, sleeps = 0, wakeups = 0, spurious = 0;
};

class Env {
  public:
    std::mt19937_64 rng;
    System sys;
    HostMem mem;
    velo_core* core = nullptr;
    Scoreboard sb;
    Recombiner rec;
    std::map<unsigned, Waiter> w;  // by vpid
    std::vector<std::string> errors, logs;
    // observations on node 1's upstream stream
    struct Commit {
        uint64_t cycle;  // last beat of the entry's last (head) TLP accepted
        unsigned vpid;
    };
    std::vector<Commit> commits;
    std::vector<uint64_t> requests;  // cycles a new interrupt request appeared (irq_valid)
    uint64_t msi = 0;                // requests taken, not yet handled by the ISR
    uint64_t isr_runs = 0;

    Env(uint64_t seed, int dma_stall_pct) : rng(seed), sys(pair_config(seed, dma_stall_pct)), mem(seed * 7 + 1) {
        sys.on_cycle = [this] { on_cycle(); };
        sys.on_dma_write = [this](unsigned n, const Tlp& t) {
            if (n == kRx)
                on_dma(t);
            else
                errors.push_back("DMA write at the sending node");
        };
        sys.on_irq = [this](unsigned n, uint64_t) {
            if (n != kRx) {
                errors.push_back("interrupt at the sending node");
                return;
            }
            mem.drain();  // the MSI is a posted write behind the data: they are visible first
            ++msi;
        };
        ops_ = velo_core_ops{op_rd, op_wr, op_alloc, op_free, op_zalloc, op_free_mem, op_log, nullptr, op_prf};
    }
    ~Env() {
        try {
            if (core) velo_core_remove(core);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "tb_irq: teardown: %s\n", e.what());
        }
        for (auto& a : allocs_) std::free(a);
    }

    // bring-up: links, node ids, routes (System::init), then the driver core on node 1
    void init() {
        ASSERT_TRUE(sys.init()) << "links did not come up";
        ASSERT_EQ(velo_core_probe(&ops_, this, &core), 0);
        velo_core_refresh(core);
        ASSERT_EQ(velo_core_caps(core)->node_id, kRx);
        ASSERT_EQ(velo_core_caps(core)->irq_base, static_cast<uint32_t>(VELO_BLK_IRQ_BASE));
    }
    Waiter& open(int vpid, unsigned log2 = 5) {
        velo_core_ep_params p{};
        p.vpid = vpid;
        p.log2_lines = log2;
        p.ctl_log2_lines = 2;
        p.owner = 1;
        const velo_core_ep* e = nullptr;
        const int r = velo_core_ep_open(core, &p, &e);
        EXPECT_EQ(r, 0) << "ep_open " << vpid;
        if (r) throw std::runtime_error("ep_open failed");
        Waiter& x = w[e->vpid];
        x = Waiter{};
        x.ep = e;
        x.vpid = e->vpid;
        x.rd.reset(new MailboxReader(mem, e->ring_dma, e->log2_lines));
        return x;
    }
    void close(unsigned vpid) {
        EXPECT_EQ(velo_core_ep_close(core, vpid), 0);
        w.erase(vpid);
    }

    // ---- node 0 sends one message (one posted write: one mailbox entry)
    void send(unsigned dst_vpid, unsigned len) {
        std::vector<uint8_t> msg = random_bytes(rng, len);
        Msg m;
        m.src_node = kTx;
        m.src_vpid = kSrcVpid;
        m.dst_node = kRx;
        m.dst_vpid = dst_vpid;
        m.bytes = msg;
        sb.expect(m);
        const uint64_t off = send_offset(VELO_DEFAULT_VPID_BITS, VELO_DEFAULT_NODE_BITS, kSrcVpid, kRx, dst_vpid, len);
        for (const Tlp& t : wc_flush(System::kBar2, off, msg, WcMode::Burst, rng)) sys.cpu_post(kTx, t);
    }
    // run until nothing moves (and everything DMA-written is visible)
    void settle() {
        for (uint64_t i = 0; !(sys.quiet() && sys.cpu_queued(kTx) == 0 && sys.cpu_queued(kRx) == 0); ++i) {
            ASSERT_LT(i, 200000u) << "the system does not settle";
            sys.step(16);
        }
        mem.drain();
    }

    // ---- node 1's software
    uint32_t reg(uint32_t off) { return op_rd(this, off); }
    uint32_t pending_word(unsigned word) { return reg(VELO_TBL_IRQ_PENDING_BASE + 4 * word); }
    // every entry visible in v's ring; returns how many; gives the space back
    unsigned consume(Waiter& x) {
        unsigned n = 0;
        MboxEntry e;
        while (x.rd->poll(e)) {
            ++n;
            ++x.got;
            Msg m;
            if (rec.add(kRx, e, m)) sb.deliver(m);
        }
        if (x.rd->rp() != x.rd->rp_returned) {
            sys.reg_write(kRx, x.ep->user_page_off + VELO_TBL_VPID_USER_MB_RP,
                          x.rd->rp() & ((1u << VELO_MBOX_PTR_BITS) - 1));
            x.rd->rp_returned = x.rd->rp();
        }
        return n;
    }
    int arm(Waiter& x) {
        const int r = velo_core_irq_arm(core, x.vpid);
        if (!r) ++x.arms;
        return r;
    }
    // the interrupt handler: collect, wake the waiters of the reported vpids
    std::vector<unsigned> isr() {
        ++isr_runs;
        std::vector<unsigned> got;
        const int n = velo_core_irq_collect(
            core, [](void* ctx, unsigned v) { static_cast<std::vector<unsigned>*>(ctx)->push_back(v); }, &got);
        EXPECT_EQ(n, static_cast<int>(got.size()));
        for (unsigned v : got) {
            auto it = w.find(v);
            if (it == w.end()) {
                errors.push_back("PENDING bit of vpid " + std::to_string(v) + ", which nobody armed");
                continue;
            }
            Waiter& x = it->second;
            ++x.reports;
            if (x.reports > x.arms) errors.push_back("vpid " + std::to_string(v) + ": more PENDING bits than arms");
            if (x.asleep) {
                x.asleep = false;
                ++x.wakeups;
            } else {
                ++x.spurious;
            }
        }
        return got;
    }
    // one step of a sleeping receiver: drain the ring; when empty: arm, re-check, sleep
    void receiver(Waiter& x) {
        if (x.asleep) return;
        if (consume(x)) return;
        ASSERT_EQ(arm(x), 0);
        if (consume(x)) return;  // arrived before the arm took effect: stay awake
        x.asleep = true;
        ++x.sleeps;
    }
    size_t commits_of(unsigned vpid) const {
        size_t n = 0;
        for (const Commit& c : commits) n += c.vpid == vpid;
        return n;
    }

  private:
    velo_core_ops ops_{};
    std::vector<void*> allocs_;
    uint64_t next_dma_ = 0;
    bool prev_valid_ = false, prev_taken_ = false;

    void on_cycle() {
        mem.step();
        // a new request: irq_valid rises, or stays up right after one was taken
        const bool v = sys.irq_valid(kRx);
        if (v && (!prev_valid_ || prev_taken_)) {
            const uint64_t x = sys.cycle();
            requests.push_back(x);
            // each request has an entry of its own, whose last beat was accepted before it
            size_t before = 0;
            for (const Commit& c : commits) before += c.cycle < x;
            if (before < requests.size())
                errors.push_back("cycle " + std::to_string(x) + ": interrupt request " +
                                 std::to_string(requests.size()) + " with only " + std::to_string(before) +
                                 " entries written before it");
        }
        prev_valid_ = v;
        prev_taken_ = v && !hold_;
    }
    void on_dma(const Tlp& t) {
        mem.post(t);
        if (t.payload.size() < 8) {
            errors.push_back("short DMA write " + t.str());
            return;
        }
        uint64_t hd = 0;
        for (int i = 0; i < 8; ++i) hd |= static_cast<uint64_t>(t.payload[static_cast<size_t>(i)]) << (8 * i);
        if (!VELO_FIELD_GET(VELO_MBOX_HDR_TAIL, hd))
            commits.push_back({sys.cycle(), static_cast<unsigned>(VELO_FIELD_GET(VELO_MBOX_HDR_DST_VPID, hd))});
    }

  public:
    bool hold_ = false;
    void hold(bool h) {
        hold_ = h;
        sys.set_irq_hold(kRx, h);
    }

  private:
    // the driver core's view of node 1: BAR0 accesses, ring memory at bus addresses of HostMem
    static uint32_t op_rd(void* ctx, uint32_t off) {
        Env* e = static_cast<Env*>(ctx);
        const uint32_t v = e->sys.reg_read(kRx, off);
        e->mem.drain();  // the completion came after every DMA write before it
        return v;
    }
    static void op_wr(void* ctx, uint32_t off, uint32_t v) { static_cast<Env*>(ctx)->sys.reg_write(kRx, off, v); }
    static void* op_alloc(void* ctx, size_t size, uint64_t* dma, void** cookie) {
        Env* e = static_cast<Env*>(ctx);
        // rings alternately below 4 GiB (3DW DMA headers) and above (4DW)
        const uint64_t base = (e->allocs_.size() % 2) ? 0x7700000000ull : 0x40000000ull;
        *dma = base + e->next_dma_;
        e->next_dma_ += (size + 0xFFFF) & ~0xFFFFull;
        e->mem.fill(*dma, size, 0);
        void* p = std::calloc(1, size);  // the CPU's side is HostMem at *dma; this is the cookie
        e->allocs_.push_back(p);
        *cookie = p;
        return p;
    }
    static void op_free(void* ctx, void* cpu, size_t, uint64_t, void*) {
        Env* e = static_cast<Env*>(ctx);
        e->allocs_.erase(std::find(e->allocs_.begin(), e->allocs_.end(), cpu));
        std::free(cpu);
    }
    static void* op_zalloc(void*, size_t size) { return std::calloc(1, size); }
    static void op_free_mem(void*, void* p) { std::free(p); }
    static void op_log(void* ctx, int, const char* m) { static_cast<Env*>(ctx)->logs.push_back(m); }
    // region keys play no part here: a fixed keyed mix stands in for the platform's SipHash
    static uint64_t op_prf(void*, uint64_t a, uint64_t b) {
        uint64_t z = (a + 0x243F6A8885A308D3ull) * 0x9E3779B97F4A7C15ull ^ b;
        return z ^ (z >> 31);
    }
};

void expect_clean(Env& e) {
    for (size_t i = 0; i < e.errors.size() && i < 20; ++i) ADD_FAILURE() << e.errors[i];
    for (auto& x : e.sys.errors()) ADD_FAILURE() << x;
    for (auto& x : e.sb.errors) ADD_FAILURE() << x;
    for (auto& x : e.rec.errors) ADD_FAILURE() << x;
    for (auto& [v, x] : e.w)
        for (auto& s : x.rd->errors) ADD_FAILURE() << "vpid " << v << ": " << s;
    EXPECT_EQ(e.sb.outstanding(), 0u);
}

}  // namespace

// An armed vpid's next entry: one request, after the entry's last beat, PENDING set and collected;
// one-shot (the entry after it raises nothing), again after a re-arm. One- and two-line entries,
// with and without DMA stalls.
TEST(Irq, ArmedEntryRaisesOneInterruptAfterItsData) {
    auto r = test_rng();
    for (int stall : {0, 60}) {
        Env e(r(), stall);
        e.init();
        if (HasFatalFailure()) return;
        Waiter& x = e.open(-1);
        const unsigned v = x.vpid;
        ASSERT_EQ(velo_core_irq_enable(e.core, 1), 0);
        uint64_t n = 0;
        for (unsigned len : {1u, 8u, 52u, 53u, 60u, 64u}) {
            ASSERT_EQ(e.arm(x), 0);
            for (unsigned wd = 0; wd < 8; ++wd) EXPECT_EQ(e.pending_word(wd), 0u) << "arming sets nothing";
            const size_t c0 = e.commits.size();
            e.send(v, len);
            e.settle();
            ++n;
            ASSERT_EQ(e.commits.size(), c0 + 1) << "one entry";
            ASSERT_EQ(e.requests.size(), n) << "len " << len << ": one request";
            EXPECT_EQ(e.sys.irq_count(kRx), n);
            EXPECT_GT(e.requests.back(), e.commits.back().cycle) << "the request follows the entry's last beat";
            EXPECT_EQ(e.pending_word(v / 32), 1u << (v % 32));
            EXPECT_EQ(e.reg(VELO_REG_IRQ_COUNT), n);
            EXPECT_EQ(e.msi, n);
            EXPECT_EQ(e.isr(), std::vector<unsigned>{v});
            EXPECT_EQ(e.pending_word(v / 32), 0u) << "collect clears";
            EXPECT_EQ(e.consume(x), 1u) << "the entry is there when the interrupt is handled";
            // not armed any more: the next entry raises nothing
            e.send(v, len);
            e.settle();
            EXPECT_EQ(e.requests.size(), n);
            EXPECT_EQ(e.pending_word(v / 32), 0u);
            EXPECT_EQ(e.consume(x), 1u);
        }
        expect_clean(e);
    }
}

TEST(Irq, NoInterruptUnlessArmedAndEnabled) {
    auto r = test_rng();
    Env e(r(), 0);
    e.init();
    if (HasFatalFailure()) return;
    Waiter& a = e.open(4);
    Waiter& b = e.open(9);
    ASSERT_EQ(velo_core_irq_enable(e.core, 1), 0);
    // nobody armed
    e.send(4, 20);
    e.send(9, 20);
    e.settle();
    EXPECT_TRUE(e.requests.empty());
    // a armed: b's entry leaves it armed, a's raises the request
    ASSERT_EQ(e.arm(a), 0);
    e.send(9, 30);
    e.settle();
    EXPECT_TRUE(e.requests.empty());
    EXPECT_EQ(e.pending_word(0), 0u);
    e.send(4, 30);
    e.settle();
    EXPECT_EQ(e.requests.size(), 1u);
    EXPECT_EQ(e.isr(), std::vector<unsigned>{4});
    // disabled: the bit is set, no request; enabling does not raise one for it
    ASSERT_EQ(velo_core_irq_enable(e.core, 0), 0);
    ASSERT_EQ(e.arm(b), 0);
    e.send(9, 40);
    e.settle();
    EXPECT_EQ(e.pending_word(0), 1u << 9);
    EXPECT_EQ(e.requests.size(), 1u);
    ASSERT_EQ(velo_core_irq_enable(e.core, 1), 0);
    e.settle();
    EXPECT_EQ(e.requests.size(), 1u);
    EXPECT_EQ(e.sys.irq_count(kRx), 1u);
    EXPECT_EQ(e.reg(VELO_REG_IRQ_COUNT), 1u);
    EXPECT_EQ(e.isr(), std::vector<unsigned>{9});
    // an ARM value past the vpids is refused by the NIC (not taken as vpid 0) and counted
    const uint32_t bad0 = e.reg(VELO_REG_COUNTERS_COUNTER_BASE + 4 * VELO_CNT_DROP_REG_BAD_ACCESS);
    Waiter& z = e.open(0);
    e.sys.reg_write(kRx, VELO_REG_IRQ_ARM, 1u << VELO_DEFAULT_VPID_BITS);
    e.send(0, 12);
    e.settle();
    EXPECT_EQ(e.reg(VELO_REG_COUNTERS_COUNTER_BASE + 4 * VELO_CNT_DROP_REG_BAD_ACCESS), bad0 + 1);
    EXPECT_EQ(e.requests.size(), 1u);
    EXPECT_EQ(e.pending_word(0), 0u);
    for (Waiter* x : {&a, &b, &z}) e.consume(*x);
    expect_clean(e);
}

// The arm reaches the NIC while the entry is inside it (its DMA write held back by the host): the
// entry's commit still finds the arm. And the other order: an entry written before the arm is
// visible when velo_core_irq_arm returns, and raises nothing.
TEST(Irq, ArmWhileEntryInFlight) {
    auto r = test_rng();
    Env e(r(), 0);
    e.init();
    if (HasFatalFailure()) return;
    Waiter& x = e.open(7);
    ASSERT_EQ(velo_core_irq_enable(e.core, 1), 0);
    for (int round = 0; round < 6; ++round) {
        const size_t req0 = e.requests.size();
        e.sys.set_dma_stall_pct(kRx, 100);
        e.send(7, 1 + static_cast<unsigned>(r() % 64));
        e.sys.step(300 + r() % 300);  // the entry is decided, its DMA write waits
        EXPECT_EQ(e.commits_of(7), static_cast<size_t>(round));
        // posted ARM (a read would wait behind the held DMA)
        e.sys.reg_write(kRx, VELO_REG_IRQ_ARM, 7);
        e.sys.step(50 + r() % 50);
        ++x.arms;
        EXPECT_EQ(e.requests.size(), req0);
        e.sys.set_dma_stall_pct(kRx, static_cast<int>(r() % 70));
        e.settle();
        EXPECT_EQ(e.commits_of(7), static_cast<size_t>(round + 1));
        ASSERT_EQ(e.requests.size(), req0 + 1) << "the entry in flight catches the arm";
        EXPECT_GT(e.requests.back(), e.commits.back().cycle);
        EXPECT_EQ(e.isr(), std::vector<unsigned>{7});
        EXPECT_EQ(e.consume(x), 1u);
    }
    // written before the arm: visible on return, nothing raised
    e.send(7, 33);
    e.settle();
    ASSERT_EQ(e.arm(x), 0);
    EXPECT_EQ(e.consume(x), 1u);
    e.settle();
    EXPECT_EQ(e.requests.size(), 6u);
    EXPECT_EQ(e.reg(VELO_REG_IRQ_COUNT), 6u);
    expect_clean(e);
}

// While a request waits (MSI masked), entries of other armed vpids join it: one request for all,
// every bit in PENDING.
TEST(Irq, RequestsCoalesceWhileOneIsOutstanding) {
    auto r = test_rng();
    Env e(r(), 30);
    e.init();
    if (HasFatalFailure()) return;
    std::vector<unsigned> vs;
    for (int i = 0; i < 6; ++i) vs.push_back(e.open(-1).vpid);
    std::vector<unsigned> ctl;  // control vpids are armed like data vpids
    for (int i = 0; i < 2; ++i) ctl.push_back(e.w.at(vs[static_cast<size_t>(i)]).ep->ctl_vpid);
    ASSERT_EQ(velo_core_irq_enable(e.core, 1), 0);
    e.hold(true);
    for (unsigned v : vs) ASSERT_EQ(e.arm(e.w.at(v)), 0);
    for (unsigned c : ctl) EXPECT_EQ(velo_core_irq_arm(e.core, c), 0);
    for (unsigned v : vs) e.send(v, 1 + static_cast<unsigned>(r() % 64));
    e.settle();
    EXPECT_EQ(e.requests.size(), 1u) << "one request for six entries";
    EXPECT_TRUE(e.sys.irq_valid(kRx));
    EXPECT_EQ(e.sys.irq_count(kRx), 0u);
    EXPECT_EQ(e.reg(VELO_REG_IRQ_COUNT), 1u);
    uint32_t want[8] = {};
    for (unsigned v : vs) want[v / 32] |= 1u << (v % 32);
    for (unsigned wd = 0; wd < 8; ++wd) EXPECT_EQ(e.pending_word(wd), want[wd]) << wd;
    e.hold(false);
    e.sys.step(4);
    EXPECT_EQ(e.sys.irq_count(kRx), 1u);
    EXPECT_FALSE(e.sys.irq_valid(kRx));
    std::vector<unsigned> sorted = vs;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(e.isr(), sorted);
    for (auto& [v, x] : e.w) EXPECT_EQ(e.consume(x), 1u) << v;
    // the control vpids' arms are still set: a control-ring entry raises a request
    e.send(ctl[0], 16);
    e.settle();
    EXPECT_EQ(e.requests.size(), 2u);
    std::vector<unsigned> got;
    EXPECT_EQ(velo_core_irq_collect(
                  e.core, [](void* c, unsigned v) { static_cast<std::vector<unsigned>*>(c)->push_back(v); }, &got),
              1);
    EXPECT_EQ(got, std::vector<unsigned>{ctl[0]});
    const velo_core_ep* ep = e.w.at(vs[0]).ep;
    MailboxReader cr(e.mem, ep->ctl_ring_dma, ep->ctl_log2_lines);
    MboxEntry m;
    ASSERT_TRUE(cr.poll(m)) << "the control-ring entry";
    Msg msg;
    ASSERT_TRUE(e.rec.add(kRx, m, msg));
    e.sb.deliver(msg);
    EXPECT_TRUE(cr.errors.empty());
    expect_clean(e);
}

// Closing a vpid (MB_CFG = 0, quiesce) disarms it: the vpid reopened does not inherit the arm.
// Reprogramming MB_CFG of an open vpid disarms it too.
TEST(Irq, CloseAndReconfigureDisarm) {
    auto r = test_rng();
    Env e(r(), 0);
    e.init();
    if (HasFatalFailure()) return;
    e.open(12);
    ASSERT_EQ(velo_core_irq_enable(e.core, 1), 0);
    ASSERT_EQ(e.arm(e.w.at(12)), 0);
    e.close(12);
    EXPECT_EQ(velo_core_irq_arm(e.core, 12), -VELO_CORE_ENOENT) << "a closed vpid cannot be armed";
    Waiter& x = e.open(12);
    e.send(12, 40);
    e.settle();
    EXPECT_TRUE(e.requests.empty()) << "the reopened vpid inherited the arm";
    EXPECT_EQ(e.pending_word(0), 0u);
    EXPECT_EQ(e.consume(x), 1u);
    // the same MB_CFG written again (as a reconfiguration does): disarmed
    ASSERT_EQ(e.arm(x), 0);
    const uint32_t cfg_off =
        x.ep->vpid * VELO_TBL_VPID_TABLE_STRIDE + VELO_TBL_VPID_TABLE_BASE + VELO_TBL_VPID_TABLE_MB_CFG;
    e.sys.reg_write(kRx, cfg_off, e.reg(cfg_off));
    e.send(12, 41);
    e.settle();
    EXPECT_TRUE(e.requests.empty());
    EXPECT_EQ(e.consume(x), 1u);
    // armed again: works
    ASSERT_EQ(e.arm(x), 0);
    e.send(12, 42);
    e.settle();
    EXPECT_EQ(e.requests.size(), 1u);
    EXPECT_EQ(e.isr(), std::vector<unsigned>{12});
    EXPECT_EQ(e.consume(x), 1u);
    expect_clean(e);
}

// The race the wait protocol is for: the receiver finds its ring empty and arms while the one
// message it waits for is somewhere on its way (network, completer, DMA, not yet visible in
// memory). Whichever wins, the message must wake it: either the re-check after the arm sees it,
// or its entry raises the interrupt. Each trial starts disarmed (MB_CFG rewritten) and awake.
TEST(Irq, ArmRacesTheEntryItWaitsFor) {
    auto r = test_rng();
    Env e(r(), 0);
    e.init();
    if (HasFatalFailure()) return;
    Waiter& x = e.open(21, 4);
    ASSERT_EQ(velo_core_irq_enable(e.core, 1), 0);
    const uint32_t cfg_off =
        VELO_TBL_VPID_TABLE_BASE + x.ep->vpid * VELO_TBL_VPID_TABLE_STRIDE + VELO_TBL_VPID_TABLE_MB_CFG;
    const uint32_t cfg = e.reg(cfg_off);
    unsigned by_recheck = 0, by_irq = 0, by_poll = 0, stale = 0;
    for (int trial = 0; trial < 300; ++trial) {
        e.sys.reg_write(kRx, cfg_off, cfg);  // disarm
        (void)e.reg(cfg_off);
        x.asleep = false;
        e.sys.set_dma_stall_pct(kRx, static_cast<int>(r() % 60));
        e.send(21, 1 + static_cast<unsigned>(r() % 64));
        e.sys.step(r() % 90);
        const uint64_t got0 = x.got;
        if (e.consume(x)) {
            ++by_poll;
            continue;
        }
        ASSERT_EQ(e.arm(x), 0);
        if (e.consume(x)) {
            ++by_recheck;
            continue;
        }
        x.asleep = true;
        // asleep: only the interrupt wakes it (a wakeup may be stale: the bit of an earlier entry
        // that a re-check found; then the receiver arms and sleeps again)
        bool done = false;
        for (uint64_t k = 0; !done; ++k) {
            ASSERT_LT(k, 20000u) << "trial " << trial << ": lost wakeup, the message never woke the receiver";
            if (e.msi) {
                e.msi = 0;
                e.isr();
            }
            if (!x.asleep) {
                if (e.consume(x)) break;
                ++stale;
                ASSERT_EQ(e.arm(x), 0);
                if (e.consume(x)) {
                    done = true;
                    ++by_recheck;
                    continue;
                }
                x.asleep = true;
            }
            e.sys.step(4);
        }
        if (done) continue;
        EXPECT_EQ(x.got, got0 + 1) << "trial " << trial;
        ++by_irq;
    }
    e.settle();
    if (e.msi) e.isr();
    expect_clean(e);
    std::printf(
        "[ info  ] 300 trials: found polling %u, by the re-check after arming %u, woken %u (%u stale wakeups)\n",
        by_poll, by_recheck, by_irq, stale);
    EXPECT_GT(by_recheck, 5u) << "the race (entry before the arm) was hardly exercised";
    EXPECT_GT(by_irq, 30u);
}

// Receivers that sleep: each drains its ring, arms, re-checks and sleeps until the interrupt
// handler wakes it; they never poll while asleep, so a lost wakeup leaves messages undelivered.
// Random senders' pacing and lengths, DMA stalls, masked periods (coalescing).
TEST(Irq, SleepingReceiversGetEveryMessage) {
    auto r = test_rng();
    for (int run = 0; run < 3; ++run) {
        Env e(r(), run == 0 ? 0 : 20 + static_cast<int>(r() % 50));
        e.init();
        if (HasFatalFailure()) return;
        const unsigned nw = 2 + static_cast<unsigned>(r() % 5);
        std::vector<unsigned> vs;
        for (unsigned i = 0; i < nw; ++i) vs.push_back(e.open(-1, 3 + static_cast<unsigned>(r() % 3)).vpid);
        ASSERT_EQ(velo_core_irq_enable(e.core, 1), 0);
        const unsigned total = 250;
        unsigned sent = 0;
        uint64_t iter = 0, masked = 0;
        while (sent < total || e.sb.outstanding()) {
            ASSERT_LT(++iter, 200000u) << "stuck: " << e.sb.outstanding() << " messages undelivered";
            // senders: bursts, pauses
            if (sent < total && e.sys.cpu_queued(kTx) < 3 && r() % 4 == 0) {
                const unsigned k = 1 + static_cast<unsigned>(r() % 4);
                for (unsigned i = 0; i < k && sent < total; ++i, ++sent)
                    e.send(vs[r() % vs.size()], 1 + static_cast<unsigned>(r() % 64));
            }
            // the MSI is masked now and then
            if (r() % 50 == 0) {
                e.hold(!e.hold_);
                masked += e.hold_;
            }
            if (e.msi) {
                e.msi = 0;
                e.isr();
            }
            std::vector<unsigned> order = vs;
            std::shuffle(order.begin(), order.end(), r);
            for (unsigned v : order) {
                e.receiver(e.w.at(v));
                if (HasFatalFailure()) return;
            }
            // everyone asleep, nothing in flight and no interrupt coming: a lost wakeup
            bool all_asleep = true;
            for (unsigned v : vs) all_asleep = all_asleep && e.w.at(v).asleep;
            if (all_asleep && e.sb.outstanding() && !e.hold_ && !e.msi && e.sys.quiet()) {
                for (unsigned v : vs) {
                    MboxEntry m;
                    if (e.w.at(v).rd->poll(m)) ADD_FAILURE() << "vpid " << v << " sleeps on a non-empty ring";
                }
                FAIL() << "lost wakeup: " << e.sb.outstanding() << " messages undelivered, all receivers asleep";
            }
            e.sys.step(1 + r() % 24);
        }
        e.hold(false);
        e.settle();
        if (e.msi) e.isr();
        expect_clean(e);
        EXPECT_EQ(e.sb.delivered, total);
        uint64_t arms = 0, reports = 0, sleeps = 0, wakeups = 0, spurious = 0;
        for (auto& [v, x] : e.w) {
            arms += x.arms;
            reports += x.reports;
            sleeps += x.sleeps;
            wakeups += x.wakeups;
            spurious += x.spurious;
            EXPECT_LE(x.reports, x.arms) << "vpid " << v << ": one PENDING bit per arm at most";
            EXPECT_LE(x.reports, e.commits_of(v)) << "vpid " << v << ": a PENDING bit per entry at most";
        }
        const uint32_t count = e.reg(VELO_REG_IRQ_COUNT);
        EXPECT_EQ(count, e.requests.size()) << "COUNT counts the requests";
        EXPECT_EQ(e.sys.irq_count(kRx), e.requests.size()) << "every request taken";
        EXPECT_GT(sleeps, 20u);
        EXPECT_GT(wakeups, 20u);
        std::printf(
            "[ info  ] run %d: %u receivers, %u messages, %llu arms, %llu sleeps, %llu wakeups (%llu spurious), %zu "
            "requests, %llu masked periods, %llu ISR runs\n",
            run, nw, total, static_cast<unsigned long long>(arms), static_cast<unsigned long long>(sleeps),
            static_cast<unsigned long long>(wakeups), static_cast<unsigned long long>(spurious), e.requests.size(),
            static_cast<unsigned long long>(masked), static_cast<unsigned long long>(e.isr_runs));
    }
}
