// velo-fabric: RMA. Registered memory is "pinned" as frames standing for pages of the client's
// address space; the NICs' DMA writes and reads of those frames reach it with
// process_vm_writev/readv; the driver ABI's RMA requests (VELO_SIM_IOCTL) run the driver core.
#include <errno.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "fabric_private.hpp"
#include "velo/velo_uapi.h"

namespace velo::fabric {

// The core quiesced a region (deregistration, invalidation, endpoint close): no DMA uses its
// frames any more; they are forgotten (never handed out again).
void Fabric::unpin(Pin* p) {
    for (uint64_t f : p->frames) frames_.erase(f);
    delete p;
}

void Fabric::rma_fault(const Frame& f, bool write, uint64_t addr, int err) {
    ++st_.rma_faults;
    if (fault_logged_.insert(f.client).second)
        logf(
            "node %u: RMA DMA %s of pid %d's registered memory at 0x%llx failed (%s): %s; further faults of "
            "this client are only counted",
            f.node, write ? "write" : "read", f.pid, static_cast<unsigned long long>(addr),
            f.pid ? std::strerror(err) : "client gone",
            write ? "the write is dropped" : "the read is answered with UR");
}

// A NIC's DMA write into registered memory (put target, get destination): one TLP never crosses
// a page (the NIC splits at page ends), so it goes to one page of one client.
void Fabric::on_rma_write(unsigned node, const Tlp& t) {
    ++st_.rma_dma_writes;
    const auto bytes = velo::sim::mwr_bytes(t);
    if (bytes.empty()) return;
    size_t i = 0;
    while (i < bytes.size()) {
        const uint64_t a0 = bytes[i].first;
        std::vector<uint8_t> run;
        size_t j = i;
        while (j < bytes.size() && bytes[j].first == a0 + run.size() && (bytes[j].first >> 12) == (a0 >> 12))
            run.push_back(bytes[j++].second);
        i = j;
        auto it = frames_.find(a0 >> 12);
        if (it == frames_.end() || it->second.node != node) {
            ++st_.rma_unknown;
            if (opt_.verbose) logf("node %u: DMA write to an unknown frame dropped (%s)", node, t.str().c_str());
            continue;
        }
        const Frame& f = it->second;
        const uint64_t va = f.vpage + (a0 & 4095);
        if (!f.pid) {
            rma_fault(f, true, va, 0);
            continue;
        }
        iovec l{run.data(), run.size()};
        iovec r{reinterpret_cast<void*>(va), run.size()};
        if (process_vm_writev(f.pid, &l, 1, &r, 1, 0) != static_cast<ssize_t>(run.size()))
            rma_fault(f, true, va, errno);
    }
}

// The data of a NIC's DMA read (put source, get source at the target): registered memory of a
// client, or node memory (rings). false: nothing there (the reader answers UR).
bool Fabric::rma_read(unsigned node, uint64_t a, uint8_t* p, size_t n) {
    ++st_.rma_dma_reads;
    if (a >= kFrameBase) {
        auto it = frames_.find(a >> 12);
        if (it == frames_.end() || it->second.node != node || (a & 4095) + n > 4096) {
            ++st_.rma_unknown;
            if (opt_.verbose) logf("node %u: DMA read of an unknown frame at 0x%llx", node, (unsigned long long)a);
            return false;
        }
        const Frame& f = it->second;
        const uint64_t va = f.vpage + (a & 4095);
        if (!f.pid) {
            rma_fault(f, false, va, 0);
            return false;
        }
        iovec l{p, n};
        iovec r{reinterpret_cast<void*>(va), n};
        if (process_vm_readv(f.pid, &l, 1, &r, 1, 0) != static_cast<ssize_t>(n)) {
            rma_fault(f, false, va, errno);
            return false;
        }
        return true;
    }
    auto& m = allocs_[node];
    auto it = m.upper_bound(a);
    if (it == m.begin()) return false;
    --it;
    Alloc* al = it->second;
    if (a < al->dma || a + n > al->dma + al->size) return false;
    std::memcpy(p, al->p + (a - al->dma), n);
    return true;
}

// Are the pages of [addr, addr + len) mapped in process pid, readable (and writable)? What
// pinning them would find (a real driver's pin_user_pages); from /proc/<pid>/maps.
bool Fabric::mapped(int pid, uint64_t addr, uint64_t len, bool writable) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE* fp = std::fopen(path, "re");
    if (!fp) return false;
    uint64_t cur = addr & ~4095ull;
    const uint64_t end = (addr + len + 4095) & ~4095ull;
    char line[512];
    while (cur < end && std::fgets(line, sizeof line, fp)) {
        unsigned long long lo = 0, hi = 0;
        char perms[8] = {0};
        if (std::sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3) continue;
        if (hi <= cur) continue;
        if (lo > cur) break;  // a hole
        if (perms[0] != 'r' || (writable && perms[1] != 'w')) break;
        cur = hi;
    }
    std::fclose(fp);
    return cur >= end;
}

// "Pin" region `region` (key) of client c: check the pages are there, give each a frame, and make
// the region valid through the driver core (velo_core_rma_map), as the Linux driver does after
// pin_user_pages. On error nothing is kept.
int Fabric::rma_pin(Client* c, unsigned region, unsigned key, uint64_t addr, uint64_t len, unsigned access) {
    const bool writable = access & (VELO_REG_LOCAL_WRITE | VELO_REG_REMOTE_WRITE);
    if (!c->peer_pid || !mapped(c->peer_pid, addr, len, writable)) return -EFAULT;
    const uint64_t npages = velo_core_rma_pages(addr, len);
    auto* p = new Pin;
    p->client = c->id;
    p->frames.reserve(npages);
    for (uint64_t i = 0; i < npages; ++i) {
        const uint64_t f = next_frame_++;
        frames_[f] = Frame{c->ep->node, c->id, c->peer_pid, (addr & ~4095ull) + i * 4096};
        p->frames.push_back(f);
    }
    int r = velo_core_rma_map(core_[c->ep->node], region, key, p->frames.data(), npages, p);
    if (r < 0) unpin(p);
    // the core's map says -ENOSPC when the page table has no room (the declaration, which took a
    // region, succeeded): told apart from a full region table for libvelo (docs/api.md "RMA")
    if (r == -ENOSPC) r = -ENOBUFS;
    return r;
}

// VELO_SIM_IOCTL: the driver ABI's RMA requests, carried out by the driver core as the Linux
// driver's ioctls are (docs/simulator.md "RMA").
// the driver's structures travel whole in a message's text (REGISTER of uapi 6: 120 bytes)
static_assert(sizeof(velo_uapi_register) <= sizeof(velo_sim_msg::text), "REGISTER does not fit a message");
static_assert(sizeof(velo_uapi_rma_setup) <= sizeof(velo_sim_msg::text), "RMA_SETUP does not fit a message");

void Fabric::req_ioctl(Client* c, velo_sim_msg& m) {
    if (!c->ep) {
        m.status = -EBADF;
        return reply(c, m, nullptr, 0);
    }
    const int64_t nr = m.arg[0];
    uint32_t minsz = 0, ksz = 0;
    union {
        velo_uapi_rma_setup st;
        velo_uapi_register rg;
        velo_uapi_deregister dr;
        velo_uapi_repin rp;
    } u;
    std::memset(&u, 0, sizeof u);
    uint32_t argsz;
    std::memcpy(&argsz, m.text, 4);
    if ((nr != VELO_IOC_NR_RMA_SETUP && nr != VELO_IOC_NR_REGISTER && nr != VELO_IOC_NR_DEREGISTER &&
         nr != VELO_IOC_NR_REPIN) ||
        velo_core_uapi_size(static_cast<unsigned>(nr), &minsz, &ksz) < 0 || ksz > sizeof u || argsz < minsz) {
        m.status = -EINVAL;
        return reply(c, m, nullptr, 0);
    }
    std::memcpy(&u, m.text, std::min<size_t>(ksz, sizeof m.text));
    u.st.argsz = ksz;
    Endpoint* e = c->ep.get();
    velo_core* core = core_[e->node];
    int r = velo_core_ioctl(core, &c->cl, static_cast<unsigned>(nr), &u);
    int fd = -1;
    if (r == 0 && nr == VELO_IOC_NR_RMA_SETUP) {
        // the queue: node memory from the core's dma_alloc, which the NIC writes and the client
        // maps read-only; the command page: the vpid's BAR4 page, as the core's mmap check says
        velo_core_map map{};
        r = velo_core_mmap_check(core, &c->cl, VELO_MMAP_RMA_CMD, 4096, VELO_CORE_MAP_WRITE | VELO_CORE_MAP_SHARED,
                                 &map);
        if (r == 0) {
            e->nq = static_cast<Alloc*>(e->core->nq_cookie);
            e->nq->ep = e;
            e->nq->nq = true;
            e->rma_page = map.bar_off;
            seal_readonly(e->nq->fd);
            fd = e->nq->fd;
        }
    } else if (r == 0 && nr == VELO_IOC_NR_REGISTER) {
        ++st_.registers;
        r = rma_pin(c, u.rg.region, u.rg.key, u.rg.addr, u.rg.len, u.rg.flags);
        if (r < 0) {  // undo the declaration
            velo_uapi_deregister d{};
            d.argsz = sizeof d;
            d.nla = u.rg.nla;
            velo_core_ioctl(core, &c->cl, VELO_IOC_NR_DEREGISTER, &d);
        }
    } else if (r == 0 && nr == VELO_IOC_NR_REPIN && u.rp.out_repinned) {
        const unsigned idx = static_cast<unsigned>(VELO_FIELD_GET(VELO_RMA_NLA_REGION, u.rp.nla));
        const velo_core_region* g = velo_core_rma_region(core, idx);
        r = g ? rma_pin(c, idx, g->key, g->addr, g->len, g->access) : -ENOENT;
    }
    m.status = r < 0 ? r : 0;
    if (r == 0) std::memcpy(m.text, &u, std::min<size_t>(ksz, sizeof m.text));
    reply(c, m, fd >= 0 ? &fd : nullptr, fd >= 0 ? 1 : 0);
}
}  // namespace velo::fabric
