// Nodes served to QEMU guests (--qemu, sim/fabric/guest.cpp), without QEMU: this test speaks
// QEMU 7.2's multi-process device channel itself, as the proxy device does (the configuration
// probe, SYNC_SYSMEM with memfd guest RAM, BAR reads and writes of at most 8 bytes), and runs
// the portable driver core (sw/driver/core, as velo.ko does) over it. Two such "guests" on a
// pair exchange messages through their send windows and mailboxes in guest RAM: the NIC's
// register reads, the CPU's write combining, the network and the DMA into guest memory all run
// for real in the fabric's RTL. The QEMU boots themselves are driver.cosim.* (docs/cosim.md).
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <map>

#include "fabric_test.hpp"
#include "velo/velo_hw.h"
#include "velo/velo_uapi.h"
#include "velo_core.h"

using namespace velo_fabric_test;

namespace {

// QEMU's message layout on x86-64 (include/hw/remote/mpqemu-link.h): header {int cmd; size_t
// size}, then the data.
enum : int32_t { SYNC_SYSMEM, RET, CFGWRITE, CFGREAD, BARWRITE, BARREAD, SET_IRQFD, DEVICE_RESET };

constexpr uint64_t kBar0 = 0xE0000000, kBar2 = 0xC0000000, kBar4 = 0xE0400000;
constexpr uint64_t kRamLo = 0, kRamHi = 0x100000000ull, kRamSize = 8u << 20;

struct Qemu {
    int fd = -1;
    int mem[2] = {-1, -1};
    uint8_t* ram[2] = {nullptr, nullptr};
    uint64_t next = kRamHi + 0x10000;  // the DMA allocator: guest RAM above 4 GiB
    velo_core* core = nullptr;
    velo_core_ops ops{};
    bool broken = false;

    ~Qemu() {
        if (core) velo_core_remove(core);
        if (fd >= 0) close(fd);
        for (int i = 0; i < 2; ++i) {
            if (ram[i]) munmap(ram[i], kRamSize);
            if (mem[i] >= 0) close(mem[i]);
        }
    }
    bool connect_to(const std::string& path) {
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
        return fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
    }
    void send_msg(int32_t cmd, const void* data, uint64_t size, const int* fds = nullptr, unsigned nfds = 0) {
        unsigned char b[16 + 192] = {};
        std::memcpy(b, &cmd, 4);
        std::memcpy(b + 8, &size, 8);
        if (size) std::memcpy(b + 16, data, size);
        iovec iov{b, 16 + size};
        alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * 8)] = {};
        msghdr mh{};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        if (nfds) {
            mh.msg_control = cbuf;
            mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
            cmsghdr* c = CMSG_FIRSTHDR(&mh);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
            std::memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
        }
        if (sendmsg(fd, &mh, MSG_NOSIGNAL) != static_cast<ssize_t>(16 + size)) broken = true;
    }
    uint64_t ret() {
        unsigned char b[24];
        size_t got = 0;
        while (got < sizeof b) {
            pollfd p{fd, POLLIN, 0};
            if (poll(&p, 1, 60000) <= 0) break;
            const ssize_t r = read(fd, b + got, sizeof b - got);
            if (r <= 0) break;
            got += static_cast<size_t>(r);
        }
        int32_t cmd;
        uint64_t size, v;
        std::memcpy(&cmd, b, 4);
        std::memcpy(&size, b + 8, 8);
        std::memcpy(&v, b + 16, 8);
        if (got != sizeof b || cmd != RET || size != 8) {
            broken = true;
            return ~0ull;
        }
        return v;
    }
    uint32_t cfg_read(uint32_t addr, int len) {
        struct {
            uint32_t addr, val;
            int32_t len;
        } d{addr, 0, len};
        send_msg(CFGREAD, &d, sizeof d);
        return static_cast<uint32_t>(ret());
    }
    void cfg_write(uint32_t addr, uint32_t val, int len) {
        struct {
            uint32_t addr, val;
            int32_t len;
        } d{addr, val, len};
        send_msg(CFGWRITE, &d, sizeof d);
        ret();
    }
    struct Bar {
        uint64_t addr, val;
        uint32_t size;
        bool memory;
    };
    void bar_write(uint64_t a, uint64_t v, unsigned size) {
        Bar d{a, v, size, true};
        send_msg(BARWRITE, &d, sizeof d);
        ret();
    }
    uint64_t bar_read(uint64_t a, unsigned size) {
        Bar d{a, 0, size, true};
        send_msg(BARREAD, &d, sizeof d);
        return ret();
    }
    // guest RAM: two memfds, below and above 4 GiB, as QEMU's memory listener sends them
    bool share_ram() {
        for (int i = 0; i < 2; ++i) {
            mem[i] = memfd_create("guest-ram", MFD_CLOEXEC);
            if (mem[i] < 0 || ftruncate(mem[i], kRamSize) < 0) return false;
            void* p = mmap(nullptr, kRamSize, PROT_READ | PROT_WRITE, MAP_SHARED, mem[i], 0);
            if (p == MAP_FAILED) return false;
            ram[i] = static_cast<uint8_t*>(p);
        }
        struct {
            uint64_t gpas[8], sizes[8];
            int64_t offsets[8];
        } s{};
        s.gpas[0] = kRamLo;
        s.gpas[1] = kRamHi;
        s.sizes[0] = s.sizes[1] = kRamSize;
        send_msg(SYNC_SYSMEM, &s, sizeof s, mem, 2);
        int ev[2] = {eventfd(0, EFD_CLOEXEC), eventfd(0, EFD_CLOEXEC)};
        send_msg(SET_IRQFD, nullptr, 0, ev, 2);
        close(ev[0]);
        close(ev[1]);
        return !broken;
    }
    uint8_t* at(uint64_t gpa) {
        if (gpa >= kRamHi && gpa - kRamHi < kRamSize) return ram[1] + (gpa - kRamHi);
        if (gpa < kRamSize) return ram[0] + gpa;
        return nullptr;
    }
    // BAR sizing as QEMU's proxy (probe_pci_info) and a BIOS do it; returns the sizes
    std::vector<uint64_t> size_bars() {
        std::vector<uint64_t> sz;
        for (int i = 0; i < 6; ++i) {
            const uint32_t a = 0x10 + 4 * i, orig = cfg_read(a, 4);
            cfg_write(a, 0xFFFFFFFFu, 4);
            const uint32_t v = cfg_read(a, 4);
            cfg_write(a, orig, 4);
            sz.push_back(static_cast<uint32_t>(~(v & 0xFFFFFFF0u) + 1));
        }
        return sz;
    }
    void assign_bars() {
        cfg_write(0x10, static_cast<uint32_t>(kBar0), 4);
        cfg_write(0x18, static_cast<uint32_t>(kBar2), 4);
        cfg_write(0x20, static_cast<uint32_t>(kBar4), 4);
        cfg_write(0x04, 0x0006, 2);  // memory decode and bus master
    }
    bool probe_core(unsigned node) {
        ops.reg_read32 = [](void* c, uint32_t off) {
            return static_cast<uint32_t>(static_cast<Qemu*>(c)->bar_read(kBar0 + off, 4));
        };
        ops.reg_write32 = [](void* c, uint32_t off, uint32_t v) {
            static_cast<Qemu*>(c)->bar_write(kBar0 + off, v, 4);
        };
        ops.dma_alloc = [](void* c, size_t size, uint64_t* dma, void** cookie) -> void* {
            auto* q = static_cast<Qemu*>(c);
            const uint64_t al = size < 4096 ? 4096 : size;
            const uint64_t d = (q->next + al - 1) & ~(al - 1);
            if (d + size > kRamHi + kRamSize) return nullptr;
            q->next = d + size;
            *dma = d;
            *cookie = nullptr;
            std::memset(q->at(d), 0, size);
            return q->at(d);
        };
        ops.dma_free = [](void*, void*, size_t, uint64_t, void*) {};
        ops.zalloc = [](void*, size_t n) { return std::calloc(1, n); };
        ops.free = [](void*, void* p) { std::free(p); };
        ops.prf = [](void*, uint64_t a, uint64_t b) -> uint64_t { return a * 0x9E3779B97F4A7C15ull ^ b; };
        if (velo_core_probe(&ops, this, &core) < 0) return false;
        velo_core_refresh(core);
        return velo_core_caps(core)->node_id == node && velo_core_set_policy(core, VELO_POLICY_OPEN) == 0;
    }
    // stores of one message into its line of the window, as libvelo makes them: one quadword up
    // to 8 bytes, else 16-byte chunks (two quadwords each under QEMU)
    void send(uint64_t page_off, const uint8_t* msg, unsigned len) {
        uint8_t buf[64] = {};
        std::memcpy(buf, msg, len);
        const uint64_t line = kBar2 + page_off + (static_cast<uint64_t>(len - 1) << VELO_SEND_ADDR_LEN_M1_SHIFT);
        const unsigned n = len <= 8 ? 8 : (len + 15) & ~15u;
        for (unsigned o = 0; o < n; o += 8) {
            uint64_t q;
            std::memcpy(&q, buf + o, 8);
            bar_write(line + o, q, 8);
        }
    }
};

struct Entry {
    unsigned src_node, src_vpid, len, off;
    bool frag;
    std::vector<uint8_t> bytes;
};

// Polls the data ring of ep in guest RAM for the next entry (the MailboxReader protocol).
bool poll_ring(const velo_core_ep* ep, uint32_t& rp, Entry& e) {
    const uint32_t size = 1u << ep->log2_lines;
    auto line = [&](uint32_t p) { return static_cast<uint8_t*>(ep->ring) + 64ull * (p & (size - 1)); };
    const uint32_t want = ((rp >> ep->log2_lines) & 1u) ^ 1u;
    const uint64_t h = __atomic_load_n(reinterpret_cast<const uint64_t*>(line(rp)), __ATOMIC_ACQUIRE);
    if (VELO_FIELD_GET(VELO_MBOX_HDR_PHASE, h) != want) return false;
    e.src_node = static_cast<unsigned>(VELO_FIELD_GET(VELO_MBOX_HDR_SRC_NODE, h));
    e.src_vpid = static_cast<unsigned>(VELO_FIELD_GET(VELO_MBOX_HDR_SRC_VPID, h));
    e.len = static_cast<unsigned>(VELO_FIELD_GET(VELO_MBOX_HDR_MSG_LEN_M1, h)) + 1;
    e.frag = VELO_FIELD_GET(VELO_MBOX_HDR_FRAG, h) != 0;
    e.off = static_cast<unsigned>(VELO_FIELD_GET(VELO_MBOX_HDR_FRAG_OFF, h));
    const unsigned flen = static_cast<unsigned>(VELO_FIELD_GET(VELO_MBOX_HDR_FRAG_LEN_M1, h)) + 1;
    const unsigned lines = static_cast<unsigned>(VELO_FIELD_GET(VELO_MBOX_HDR_LINES, h));
    const unsigned area = e.off % 4 + flen;
    e.bytes.assign(flen, 0);
    for (unsigned i = 0; i < flen; ++i) {
        const unsigned a = e.off % 4 + i;
        e.bytes[i] = a < 56 ? line(rp)[8 + a] : line(rp + 1)[8 + a - 56];
    }
    (void)area;
    rp += lines;
    return true;
}

// Polls until an entry arrives: the fabric simulates in its own process; bounded at 60 s so a
// lost message fails the test instead of hanging it.
bool wait_ring(const velo_core_ep* ep, uint32_t& rp, Entry& e) {
    for (int i = 0; i < 600000; ++i) {
        if (poll_ring(ep, rp, e)) return true;
        if (i > 1000) usleep(100);
    }
    return false;
}

std::vector<uint8_t> pattern(uint64_t seed, unsigned i, unsigned len) {
    std::mt19937_64 r(seed * 1000003 + i);
    std::vector<uint8_t> b(len);
    for (auto& x : b) x = static_cast<uint8_t>(r());
    return b;
}

struct TwoGuests {
    FabricProc f{{}, false};
    Qemu g[2];
    const velo_core_ep* ep[2] = {};
    // an endpoint at the same vpid in each guest
    bool open_eps(int vpid, unsigned log2_lines) {
        for (unsigned i = 0; i < 2; ++i) {
            velo_core_ep_params p{};
            p.vpid = vpid;
            p.log2_lines = log2_lines;
            p.ctl_log2_lines = 6;
            p.owner = 1;
            p.privileged = 1;
            if (velo_core_ep_open(g[i].core, &p, &ep[i]) != 0) return false;
        }
        return true;
    }
    // both guests up, an endpoint at vpid in each, guest 0 granted guest 1's: its window page
    bool up_one_way(int vpid, unsigned log2_lines, uint64_t* win) {
        return up() && open_eps(vpid, log2_lines) &&
               velo_core_grant(g[0].core, static_cast<unsigned>(vpid), 0, 1, static_cast<unsigned>(vpid), win) >= 0;
    }
    std::string wc_timeout_us = "30000000";
    bool up() {
        // no write-combining timeout in practice: the test's messages complete, or a BAR0 access
        // drains them; under load their stores may come far apart in wall time
        if (!f.start({"--topology", "pair", "--wc-timeout-us", wc_timeout_us, "--qemu", "0:" + f.dir + "/g0.sock",
                      "--qemu", "1:" + f.dir + "/g1.sock"}))
            return false;
        for (unsigned i = 0; i < 2; ++i) {
            if (!g[i].connect_to(f.dir + "/g" + std::to_string(i) + ".sock") || !g[i].share_ram()) return false;
            g[i].size_bars();
            g[i].assign_bars();
            if (!g[i].probe_core(i)) return false;
        }
        return true;
    }
};

}  // namespace

// What QEMU's proxy and the guest's BIOS see in configuration space, and BAR decoding.
TEST(FabricGuest, ConfigSpaceAndBars) {
    FabricProc f({}, false);
    ASSERT_TRUE(f.start({"--topology", "pair", "--qemu", "1:" + f.dir + "/g.sock"}));
    Qemu q;
    ASSERT_TRUE(q.connect_to(f.dir + "/g.sock"));
    EXPECT_EQ(q.cfg_read(0x00, 2), VELO_PCI_VENDOR_ID);
    EXPECT_EQ(q.cfg_read(0x02, 2), VELO_PCI_DEVICE_ID);
    EXPECT_EQ(q.cfg_read(0x0A, 2), 0x0280u);  // network controller, other
    EXPECT_EQ(q.cfg_read(0x06, 2) & 0x10, 0u) << "no capability list: no MSI the guest could enable";
    EXPECT_EQ(q.cfg_read(0x3D, 1), 0u) << "no interrupt pin";
    const auto sz = q.size_bars();
    EXPECT_EQ(sz[0], 1ull << VELO_BAR_REGS_BITS);
    EXPECT_EQ(sz[1], 0u);
    EXPECT_GT(sz[2], 0u);
    EXPECT_EQ(sz[2] & (sz[2] - 1), 0u);
    EXPECT_EQ(sz[3], 0u);
    EXPECT_EQ(sz[4], 1ull << VELO_BAR_RMA_BITS);
    EXPECT_EQ(sz[5], 0u);
    // before the BARs are assigned and decode is on, nothing answers: all ones
    EXPECT_EQ(q.bar_read(kBar0 + VELO_BLKHDR_TYPE, 4), 0xFFFFFFFFull);
    q.assign_bars();
    EXPECT_EQ(q.cfg_read(0x10, 4), static_cast<uint32_t>(kBar0));
    EXPECT_EQ(q.cfg_read(0x04, 2), 0x0006u);
    // the register file through the NIC: ID magic, and sub-DW / 8-byte reads of it
    const uint32_t magic = static_cast<uint32_t>(q.bar_read(kBar0 + VELO_BLKHDR_TYPE, 4));
    EXPECT_EQ(magic, VELO_ID_MAGIC);
    EXPECT_EQ(q.bar_read(kBar0 + VELO_BLKHDR_TYPE + 1, 2), (magic >> 8) & 0xFFFF);
    EXPECT_EQ(q.bar_read(kBar0 + VELO_BLKHDR_TYPE, 8) & 0xFFFFFFFF, magic);
    EXPECT_EQ(q.bar_read(kBar0 + VELO_REG_CTRL_NODE_ID, 4), 1u);
    // a read of the send window: the NIC answers UR, the CPU sees all ones
    EXPECT_EQ(q.bar_read(kBar2, 4), 0xFFFFFFFFull);
    EXPECT_FALSE(q.broken);
}

// Two guests, each with the driver core over its channel: 200 messages of 1..64 bytes each way,
// byte exact, in order, the sender's node from the NIC; the read pointer returned through BAR0.
TEST(FabricGuest, TwoGuestsExchangeMessages) {
    const uint64_t seed = test_seed();
    TwoGuests t;
    ASSERT_TRUE(t.up());
    ASSERT_TRUE(t.open_eps(3, 10));
    const velo_core_ep* const* ep = t.ep;
    uint64_t win[2];
    for (unsigned i = 0; i < 2; ++i)
        ASSERT_GE(velo_core_grant(t.g[i].core, ep[i]->vpid, 0, 1 - i, ep[1 - i]->vpid, &win[i]), 0);
    constexpr unsigned kMsgs = 200;
    uint32_t rp[2] = {0, 0};
    unsigned got[2] = {0, 0};
    std::mt19937_64 rng(seed);
    for (unsigned k = 0; k < kMsgs; ++k) {
        for (unsigned i = 0; i < 2; ++i) {
            const unsigned len = 1 + (k * 7 + i * 13) % 64;
            const auto b = pattern(seed + i, k, len);
            t.g[i].send(win[i], b.data(), len);
        }
        // drain what arrived (the rings hold 1024 lines: never full here)
        for (unsigned i = 0; i < 2; ++i) {
            Entry e;
            while (got[i] <= k && wait_ring(ep[i], rp[i], e)) {
                const unsigned n = got[i]++;
                const unsigned len = 1 + (n * 7 + (1 - i) * 13) % 64;
                ASSERT_EQ(e.src_node, 1 - i);
                ASSERT_EQ(e.src_vpid, ep[1 - i]->vpid);
                ASSERT_FALSE(e.frag) << "message " << n << " to guest " << i << " fragmented";
                ASSERT_EQ(e.len, len);
                ASSERT_EQ(e.bytes, pattern(seed + 1 - i, n, len)) << "message " << n << " to guest " << i;
            }
            ASSERT_EQ(got[i], k + 1) << "guest " << i << " waits for message " << k;
            if (rng() % 4 == 0) t.g[i].bar_write(kBar0 + ep[i]->user_page_off + VELO_TBL_VPID_USER_MB_RP, rp[i], 4);
        }
    }
    for (unsigned i = 0; i < 2; ++i) EXPECT_FALSE(t.g[i].broken);
}

// Stores that do not combine (a message stored in two halves with a BAR0 access between them,
// which drains the write-combining buffers) arrive as two fragments that cover the message.
TEST(FabricGuest, InterruptedStoresArriveAsFragments) {
    TwoGuests t;
    uint64_t win = 0;
    ASSERT_TRUE(t.up_one_way(5, 8, &win));
    const velo_core_ep* const* ep = t.ep;
    const auto msg = pattern(7, 0, 48);
    const uint64_t line = kBar2 + win + (47ull << VELO_SEND_ADDR_LEN_M1_SHIFT);
    for (unsigned o = 0; o < 24; o += 8) {
        uint64_t q;
        std::memcpy(&q, msg.data() + o, 8);
        t.g[0].bar_write(line + o, q, 8);
    }
    t.g[0].bar_read(kBar0 + VELO_REG_CTRL_NODE_ID, 4);  // uncached: drains the buffer
    for (unsigned o = 24; o < 48; o += 8) {
        uint64_t q;
        std::memcpy(&q, msg.data() + o, 8);
        t.g[0].bar_write(line + o, q, 8);
    }
    t.g[0].bar_read(kBar0 + VELO_REG_CTRL_NODE_ID, 4);
    std::map<unsigned, std::vector<uint8_t>> frags;
    uint32_t rp = 0;
    Entry e;
    while (frags.size() < 2 && wait_ring(ep[1], rp, e)) {
        ASSERT_TRUE(e.frag);
        ASSERT_EQ(e.len, 48u);
        frags[e.off] = e.bytes;
    }
    ASSERT_EQ(frags.size(), 2u);
    ASSERT_EQ(frags.count(0), 1u);
    ASSERT_EQ(frags.count(24), 1u);
    std::vector<uint8_t> all = frags[0];
    all.insert(all.end(), frags[24].begin(), frags[24].end());
    EXPECT_EQ(all, msg);
}

// Bus mastering off: the NIC's DMA towards the guest is dropped, nothing lands in its RAM;
// a malformed message closes the channel, and a new QEMU can attach to the node again.
TEST(FabricGuest, NoBusMasterNoDmaAndBadMessagesCloseTheChannel) {
    TwoGuests t;
    uint64_t win = 0;
    ASSERT_TRUE(t.up_one_way(2, 8, &win));
    const velo_core_ep* const* ep = t.ep;
    t.g[1].cfg_write(0x04, 0x0002, 2);  // guest 1: decode on, bus master off
    const uint8_t m[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    t.g[0].send(win, m, 8);
    // long enough for the message to arrive (a read round trip of guest 0 takes cycles)
    for (int i = 0; i < 50; ++i) t.g[0].bar_read(kBar0 + VELO_REG_CTRL_NODE_ID, 4);
    uint32_t rp = 0;
    Entry e;
    EXPECT_FALSE(poll_ring(ep[1], rp, e)) << "a DMA write landed with bus mastering off";
    // a header with a size the command cannot have: the fabric drops the channel
    uint64_t junk[4] = {};
    t.g[1].send_msg(BARWRITE, junk, 12);
    pollfd p{t.g[1].fd, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 60000), 1);
    char c;
    EXPECT_LE(read(t.g[1].fd, &c, 1), 0) << "the channel stays open after a malformed message";
    // the node accepts a new QEMU, whose configuration space starts from reset
    Qemu again;
    ASSERT_TRUE(again.connect_to(t.f.dir + "/g1.sock"));
    EXPECT_EQ(again.cfg_read(0x04, 2), 0u);
    EXPECT_EQ(again.cfg_read(0x00, 2), VELO_PCI_VENDOR_ID);
    EXPECT_TRUE(t.f.alive());
}

// A line the CPU never completes (the process died mid-message, or stores of another pattern)
// leaves at the write-combining timeout, even when the guest makes no further access.
TEST(FabricGuest, IncompleteLineLeavesAtTheTimeout) {
    TwoGuests t;
    t.wc_timeout_us = "20000";
    uint64_t win = 0;
    ASSERT_TRUE(t.up_one_way(4, 8, &win));
    const velo_core_ep* const* ep = t.ep;
    const auto msg = pattern(9, 0, 48);
    const uint64_t line = kBar2 + win + (47ull << VELO_SEND_ADDR_LEN_M1_SHIFT);
    for (unsigned o = 0; o < 24; o += 8) {
        uint64_t q;
        std::memcpy(&q, msg.data() + o, 8);
        t.g[0].bar_write(line + o, q, 8);
    }
    uint32_t rp = 0;
    Entry e;
    ASSERT_TRUE(wait_ring(ep[1], rp, e)) << "the incomplete line never left";
    EXPECT_TRUE(e.frag);
    EXPECT_EQ(e.len, 48u);
    EXPECT_EQ(e.off, 0u);
    EXPECT_EQ(e.bytes, std::vector<uint8_t>(msg.begin(), msg.begin() + 24));
}
