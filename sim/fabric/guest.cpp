// velo-fabric: nodes served to QEMU guests (--qemu NODE:PATH; docs/cosim.md). The guest's own
// velo.ko drives the node's NIC: QEMU forwards the guest's configuration cycles and BAR accesses
// over its multi-process device channel (mpqemu.hpp), and shares the guest's RAM as memfds, into
// which the NIC's DMA goes. The fabric runs no driver core for such a node.
//
// What the guest's CPU does, as the NIC sees it:
//   - BAR0 (registers, uncached): each access is one TLP; a read waits (the vCPU with it) for
//     the NIC's completion. Uncached accesses drain the write-combining buffers first, as on x86.
//   - BAR2 (send window) and BAR4 (RMA commands), write-combining: the stores gather in the
//     CPU's line buffers (sim/model/wc_buffer.hpp) and leave as posted writes when the line is
//     complete, evicted, drained or too old. Reads of them go to the NIC (it answers UR).
//   - Bus master off (the command register): the NIC's DMA is dropped (writes) or answered with
//     UR (reads), as the root complex of a device without bus mastering does.
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fabric_private.hpp"

namespace velo::fabric {

namespace {
constexpr unsigned kWcBuffers = 6;  // line buffers of the CPU (Intel cores: 6..12)
// a line waits this long for its next store; the stores of one message reach the fabric one
// round trip apart, which takes longer than a CPU's store burst by far (QEMU, the channel, the
// fabric's loop): a timeout shorter than such round trips would cut messages into fragments
constexpr int64_t kWcTimeoutNs = 2 * 1000 * 1000;
constexpr int64_t kPage = 4096;

// The send window: a line is complete when it holds the stores libvelo makes for the message
// length its address carries (one quadword up to 8 bytes, else whole 16-byte chunks).
bool send_line_complete(uint64_t line, uint64_t mask) {
    const unsigned len = static_cast<unsigned>(VELO_FIELD_GET(VELO_SEND_ADDR_LEN_M1, line)) + 1;
    const unsigned pad = len <= 8 ? 8 : (len + 15) & ~15u;
    const uint64_t want = pad >= 64 ? ~0ull : (1ull << pad) - 1;
    return (mask & want) == want;
}
// The RMA command window: a line is complete when it holds whole 32-byte commands only.
bool rma_line_complete(uint64_t, uint64_t mask) {
    const uint64_t lo = mask & 0xFFFFFFFFull, hi = mask >> 32;
    return mask && (lo == 0 || lo == 0xFFFFFFFFull) && (hi == 0 || hi == 0xFFFFFFFFull);
}
}  // namespace

Guest* Fabric::guest_of(unsigned node) const {
    for (const auto& g : guests_)
        if (g->node == node) return g.get();
    return nullptr;
}

bool Fabric::setup_guests() {
    const uint32_t design = reg_read(0, VELO_REG_ID_DESIGN_VERSION);
    for (auto& g : guests_) {
        std::array<unsigned, PciConfig::kBars> bits{};
        bits[VELO_BAR_REGS] = VELO_BAR_REGS_BITS;
        bits[VELO_BAR_SEND] = VELO_PAGE_BITS + 2 * vpid_bits_ + node_bits_;
        bits[VELO_BAR_RMA] = VELO_BAR_RMA_BITS;
        if (bits[VELO_BAR_SEND] > 31) {
            logf(
                "--qemu %u: the send window (2^%u bytes) does not fit a 32-bit BAR, which is all QEMU's proxy "
                "device maps: build the NICs with fewer node or vpid bits",
                g->node, bits[VELO_BAR_SEND]);
            return false;
        }
        g->cfg.reset(new PciConfig(VELO_PCI_VENDOR_ID, VELO_PCI_DEVICE_ID, static_cast<uint8_t>(design), bits));
        Guest* gp = g.get();
        g->wc.reset(new velo::sim::WcBuffers(
            kWcBuffers, kWcTimeoutNs,
            [this, gp](uint64_t a, const uint8_t* p, size_t n) {
                unsigned bar = 0;
                uint64_t off = 0;
                if (!gp->cfg->decode(a, &bar, &off)) {
                    ++gp->unclaimed;  // the BAR moved while the line waited
                    return;
                }
                sys_->cpu_post(gp->node, Tlp::mwr(a, std::vector<uint8_t>(p, p + n), static_cast<uint8_t>(bar)));
            },
            [gp](uint64_t line, uint64_t mask) {
                unsigned bar = 0;
                uint64_t off = 0;
                if (!gp->cfg->decode(line, &bar, &off)) return true;
                return bar == VELO_BAR_SEND ? send_line_complete(off, mask) : rma_line_complete(off, mask);
            }));
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        if (g->path.size() >= sizeof sa.sun_path) {
            logf("--qemu %u: socket path too long: %s", g->node, g->path.c_str());
            return false;
        }
        std::strcpy(sa.sun_path, g->path.c_str());
        unlink(g->path.c_str());
        g->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (g->listen_fd < 0 || bind(g->listen_fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0 ||
            listen(g->listen_fd, 1) < 0) {
            logf("--qemu %u: cannot listen on %s: %s", g->node, g->path.c_str(), std::strerror(errno));
            return false;
        }
        chmod(g->path.c_str(), 0600);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = g->listen_fd;
        epoll_ctl(epfd_, EPOLL_CTL_ADD, g->listen_fd, &ev);
        logf("node %u: waiting for a QEMU guest at %s", g->node, g->path.c_str());
    }
    return true;
}

bool Fabric::guest_fd(int fd) {
    for (auto& gp : guests_) {
        Guest& g = *gp;
        if (fd == g.listen_fd) {
            const int c = accept4(g.listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (c < 0) return true;
            if (g.fd >= 0) {
                logf("node %u: a second QEMU connected while one is attached: refused", g.node);
                close(c);
                return true;
            }
            g.fd = c;
            g.cfg->reset();
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.fd = c;
            epoll_ctl(epfd_, EPOLL_CTL_ADD, c, &ev);
            logf("node %u: QEMU guest attached", g.node);
            return true;
        }
        if (fd == g.fd) {
            for (;;) {
                mpqemu::Msg m;
                std::string err;
                switch (g.rd.read(g.fd, m, err)) {
                    case mpqemu::Reader::Result::Incomplete:
                        return true;
                    case mpqemu::Reader::Result::Closed:
                        guest_close(g, "QEMU closed the device channel");
                        return true;
                    case mpqemu::Reader::Result::Error:
                        guest_close(g, err.c_str());
                        return true;
                    case mpqemu::Reader::Result::Message:
                        guest_msg(g, m);
                        if (g.fd < 0 || g.reading) return true;  // the rest after the read's completion
                        break;
                }
            }
        }
    }
    return false;
}

void Fabric::guest_close(Guest& g, const char* why) {
    logf("node %u: guest detached: %s (%llu BAR writes, %llu BAR reads, %llu unclaimed, %llu DMA dropped)", g.node, why,
         static_cast<unsigned long long>(g.bar_writes), static_cast<unsigned long long>(g.bar_reads),
         static_cast<unsigned long long>(g.unclaimed), static_cast<unsigned long long>(g.dma_dropped));
    if (g.fd >= 0) {
        epoll_ctl(epfd_, EPOLL_CTL_DEL, g.fd, nullptr);
        close(g.fd);
    }
    g.fd = -1;
    g.rd.reset();
    g.wc->flush_all();  // what the CPU had stored still reaches the NIC
    g.cfg->reset();     // no decode, no bus mastering: the NIC's DMA towards the guest stops
    for (auto& r : g.ram) munmap(r.map, r.map_len);
    g.ram.clear();
    for (int* f : {&g.irq_fd, &g.resample_fd})
        if (*f >= 0) {
            close(*f);
            *f = -1;
        }
    g.reading = false;  // its completion, if any, is ignored
}

void Fabric::guest_msg(Guest& g, mpqemu::Msg& m) {
    using namespace mpqemu;
    auto close_fds = [&m] {
        for (unsigned i = 0; i < m.nfds; ++i) close(m.fds[i]);
        m.nfds = 0;
    };
    switch (m.h.cmd) {
        case kSyncSysmem:
            return guest_sysmem(g, m);
        case kSetIrqfd:
            // KVM's irqfd: under TCG nothing listens on it, and the NIC signals only MSI, which the
            // configuration space does not offer. Kept so the guest's QEMU sees a device that took it.
            if (m.nfds != 2) {
                close_fds();
                return guest_close(g, "SET_IRQFD without its two eventfds");
            }
            for (int* f : {&g.irq_fd, &g.resample_fd})
                if (*f >= 0) close(*f);
            g.irq_fd = m.fds[0];
            g.resample_fd = m.fds[1];
            return;
        default:
            break;
    }
    if (m.nfds) {
        close_fds();
        return guest_close(g, (std::string(cmd_name(m.h.cmd)) + " with file descriptors").c_str());
    }
    switch (m.h.cmd) {
        case kCfgRead:
            ++g.cfg_accesses;
            if (!send_ret(g.fd, g.cfg->read(m.d.cfg.addr, static_cast<unsigned>(m.d.cfg.len))))
                guest_close(g, "the device channel failed");
            return;
        case kCfgWrite:
            ++g.cfg_accesses;
            g.cfg->write(m.d.cfg.addr, m.d.cfg.val, static_cast<unsigned>(m.d.cfg.len));
            if (!send_ret(g.fd, 0)) guest_close(g, "the device channel failed");
            return;
        case kBarWrite:
            guest_bar_write(g, m.d.bar.addr, m.d.bar.val, m.d.bar.size);
            if (g.fd >= 0 && !send_ret(g.fd, 0)) guest_close(g, "the device channel failed");
            return;
        case kBarRead:
            return guest_bar_read(g, m.d.bar.addr, m.d.bar.size);
        case kDeviceReset:
            // the configuration space returns to its reset values (BARs unassigned, no decode, no
            // bus mastering); the NIC itself keeps its state until the guest's driver probes it
            ++g.resets;
            g.wc->flush_all();
            g.cfg->reset();
            if (!send_ret(g.fd, 0)) guest_close(g, "the device channel failed");
            return;
        default:
            guest_close(g, (std::string("unexpected command ") + cmd_name(m.h.cmd)).c_str());
            return;
    }
}

void Fabric::guest_sysmem(Guest& g, mpqemu::Msg& m) {
    const auto& s = m.d.sysmem;
    for (auto& r : g.ram) munmap(r.map, r.map_len);
    g.ram.clear();
    bool ok = m.nfds > 0;
    for (unsigned i = 0; ok && i < m.nfds; ++i) {
        const uint64_t gpa = s.gpas[i], size = s.sizes[i];
        const int64_t off = s.offsets[i];
        if (!size || off < 0 || gpa + size < gpa || size > (1ull << 40)) {
            ok = false;
            break;
        }
        const int64_t base = off & ~(kPage - 1);
        const size_t len = static_cast<size_t>(size + static_cast<uint64_t>(off - base));
        void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, m.fds[i], base);
        if (p == MAP_FAILED) {
            logf("node %u: cannot map guest RAM at 0x%llx (%llu bytes): %s", g.node,
                 static_cast<unsigned long long>(gpa), static_cast<unsigned long long>(size), std::strerror(errno));
            ok = false;
            break;
        }
        g.ram.push_back(GuestRam{gpa, size, static_cast<uint8_t*>(p) + (off - base), p, len});
    }
    for (unsigned i = 0; i < m.nfds; ++i) close(m.fds[i]);
    std::sort(g.ram.begin(), g.ram.end(), [](const GuestRam& a, const GuestRam& b) { return a.gpa < b.gpa; });
    if (!ok) return guest_close(g, "SYNC_SYSMEM with a region the fabric cannot map");
    if (opt_.verbose)
        for (const auto& r : g.ram)
            logf("node %u: guest RAM 0x%llx..0x%llx", g.node, static_cast<unsigned long long>(r.gpa),
                 static_cast<unsigned long long>(r.gpa + r.size - 1));
}

void Fabric::guest_bar_write(Guest& g, uint64_t addr, uint64_t val, unsigned size) {
    ++g.bar_writes;
    unsigned bar = 0;
    uint64_t off = 0;
    if (size < 1 || size > 8 || !g.cfg->decode(addr, &bar, &off) || off + size > g.cfg->bar_size(bar)) {
        ++g.unclaimed;  // no device claims it: the write goes nowhere (master abort)
        return;
    }
    uint8_t b[8];
    for (unsigned i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(val >> (8 * i));
    if (bar == VELO_BAR_SEND || bar == VELO_BAR_RMA) {
        g.wc->store(addr, b, size, now_ns());
        return;
    }
    g.wc->flush_all();  // an uncached access drains the write-combining buffers
    sys_->cpu_post(g.node, Tlp::mwr(addr, std::vector<uint8_t>(b, b + size), static_cast<uint8_t>(bar)));
}

void Fabric::guest_bar_read(Guest& g, uint64_t addr, unsigned size) {
    ++g.bar_reads;
    unsigned bar = 0;
    uint64_t off = 0;
    if (size < 1 || size > 8 || !g.cfg->decode(addr, &bar, &off) || off + size > g.cfg->bar_size(bar)) {
        ++g.unclaimed;  // master abort: all ones
        if (!mpqemu::send_ret(g.fd, size >= 8 ? ~0ull : (1ull << (8 * size)) - 1))
            guest_close(g, "the device channel failed");
        return;
    }
    g.wc->flush_all();
    // one DW read per DW the access touches (at most 3 for an unaligned 8-byte read)
    const uint64_t first = addr & ~3ull, last = (addr + size - 1) & ~3ull;
    g.parts = static_cast<unsigned>((last - first) / 4 + 1);
    g.got = 0;
    g.shift = static_cast<unsigned>(addr & 3);
    g.size = size;
    for (unsigned i = 0; i < g.parts; ++i) {
        const uint64_t dw = first + 4 * i;
        uint8_t be = 0;
        for (unsigned k = 0; k < 4; ++k)
            if (dw + k >= addr && dw + k < addr + size) be |= static_cast<uint8_t>(1u << k);
        g.tags[i] = sys_->mem_read_post(g.node, static_cast<uint8_t>(bar), dw, be);
    }
    g.reading = true;
}

void Fabric::guest_cycle() {
    for (auto& gp : guests_) {
        Guest& g = *gp;
        if (g.reading) {
            for (unsigned i = 0; i < g.parts; ++i)
                if (!(g.got >> i & 1) && sys_->reg_read_result(g.node, g.tags[i], &g.vals[i])) g.got |= 1u << i;
            if (g.got == (1u << g.parts) - 1) {
                g.reading = false;
                uint8_t b[12];
                for (unsigned i = 0; i < g.parts; ++i) std::memcpy(b + 4 * i, &g.vals[i], 4);
                uint64_t v = 0;
                std::memcpy(&v, b + g.shift, g.size);
                if (!mpqemu::send_ret(g.fd, v)) {
                    guest_close(g, "the device channel failed");
                } else {
                    // messages that came while the vCPU waited (none but from QEMU's main loop)
                    guest_fd(g.fd);
                }
            }
        }
        if (g.wc && !g.wc->empty()) g.wc->flush_expired(now_ns());
    }
}

bool Fabric::guests_busy() const {
    for (const auto& g : guests_)
        if (g->reading) return true;
    return false;
}

int Fabric::guest_sleep_ms() const {
    int64_t d = INT64_MAX;
    for (const auto& g : guests_)
        if (g->wc && !g->wc->empty()) d = std::min(d, g->wc->deadline());
    if (d == INT64_MAX) return -1;
    const int64_t left = d - now_ns();
    return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>((left + 999999) / 1000000, 1000));
}

uint8_t* Fabric::guest_ram(Guest& g, uint64_t a, size_t n) {
    for (auto& r : g.ram)
        if (a >= r.gpa && a - r.gpa < r.size && n <= r.size - (a - r.gpa)) return r.p + (a - r.gpa);
    return nullptr;
}

void Fabric::guest_dma_write(Guest& g, const Tlp& t) {
    ++st_.dma_writes;
    const auto bytes = velo::sim::mwr_bytes(t);
    if (bytes.empty()) return;
    if (!g.cfg->bus_master()) {
        ++g.dma_dropped;
        return;
    }
    // 32-byte units (a mailbox line's halves, a notification entry) from the last to the first;
    // in each the bytes after its first quadword, then that quadword with release semantics:
    // the guest's poller that acquires a line's (an entry's) header word sees all of it
    size_t i = bytes.size();
    while (i > 0) {
        const uint64_t unit = bytes[i - 1].first & ~31ull;
        size_t j = i;
        while (j > 0 && (bytes[j - 1].first & ~31ull) == unit) --j;
        uint8_t* up = guest_ram(g, unit, 32);
        if (!up) {
            ++g.dma_dropped;  // not guest RAM: the root complex drops it
            if (opt_.verbose) logf("node %u: DMA write outside guest RAM dropped (%s)", g.node, t.str().c_str());
            i = j;
            continue;
        }
        uint8_t word[8];
        std::memcpy(word, up, 8);
        bool hdr = false;
        for (size_t k = j; k < i; ++k) {
            const unsigned o = static_cast<unsigned>(bytes[k].first - unit);
            if (o < 8) {
                word[o] = bytes[k].second;
                hdr = true;
            } else {
                up[o] = bytes[k].second;
            }
        }
        if (hdr) {
            uint64_t w;
            std::memcpy(&w, word, 8);
            __atomic_store_n(reinterpret_cast<uint64_t*>(up), w, __ATOMIC_RELEASE);
        }
        i = j;
    }
}

bool Fabric::guest_dma_read(Guest& g, uint64_t a, uint8_t* p, size_t n) {
    if (!g.cfg->bus_master()) {
        ++g.dma_dropped;
        return false;
    }
    const uint8_t* s = guest_ram(g, a, n);
    if (!s) return false;
    std::memcpy(p, s, n);
    return true;
}

}  // namespace velo::fabric
