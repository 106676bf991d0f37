// velo-fabric: node memory. The driver core's dma_alloc gives memfds at made-up DMA addresses
// (the rings, the notification queues); the NICs' DMA writes land in them line by line, header
// word last, and wake the client waiting on them.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "fabric_private.hpp"

namespace velo::fabric {

void* Fabric::dma_alloc(unsigned node, size_t size, uint64_t* dma, void** cookie) {
    void* p = nullptr;
    int fd = make_memfd("velo-ring", size, &p);
    if (fd < 0) return nullptr;
    auto* a = new Alloc;
    a->node = node;
    a->size = size;
    a->fd = fd;
    a->p = static_cast<uint8_t*>(p);
    // node memory addresses: above 4 GiB (64-bit DMA), aligned to the size
    uint64_t al = size < 4096 ? 4096 : size;
    uint64_t d = (next_dma_[node] + al - 1) & ~(al - 1);
    next_dma_[node] = d + al;
    a->dma = d;
    allocs_[node][d] = a;
    *dma = d;
    *cookie = a;
    return p;
}

void Fabric::dma_free(Alloc* a) {
    allocs_[a->node].erase(a->dma);
    munmap(a->p, a->size);
    close(a->fd);
    delete a;
}

size_t store_header_last(const std::vector<std::pair<uint64_t, uint8_t>>& bytes, uint64_t unit,
                         const std::function<uint8_t*(uint64_t unit_addr)>& at) {
    // units in descending order (a two-line entry's second line first); in each unit the bytes
    // after its header word first, then the header word with release semantics, so a reader
    // that acquires the header sees the whole unit
    size_t dropped = 0, i = bytes.size();
    while (i > 0) {
        const uint64_t u = bytes[i - 1].first & ~(unit - 1);
        size_t j = i;
        while (j > 0 && (bytes[j - 1].first & ~(unit - 1)) == u) --j;
        uint8_t* up = at(u);
        if (!up) {
            ++dropped;
            i = j;
            continue;
        }
        bool hdr = false;
        uint8_t word[8];
        std::memcpy(word, up, 8);
        for (size_t k = j; k < i; ++k) {
            const unsigned o = static_cast<unsigned>(bytes[k].first - u);
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
    return dropped;
}

void Fabric::on_dma(unsigned node, const Tlp& t) {
    ++st_.dma_writes;
    if (t.addr >= kFrameBase) return on_rma_write(node, t);
    const auto bytes = velo::sim::mwr_bytes(t);
    if (bytes.empty()) return;
    auto& m = allocs_[node];
    auto it = m.upper_bound(bytes.front().first);
    if (it == m.begin()) {
        ++st_.dma_unknown;
        return;
    }
    --it;
    Alloc* a = it->second;
    if (bytes.front().first < a->dma || bytes.back().first >= a->dma + a->size) {
        ++st_.dma_unknown;
        if (opt_.verbose) logf("node %u: DMA write outside node memory dropped (%s)", node, t.str().c_str());
        return;
    }
    // a notification queue's entries are 32 bytes, each with its own header word
    store_header_last(bytes, a->nq ? VELO_RMA_NQ_ENTRY_BYTES : 64,
                      [a](uint64_t unit) { return a->p + (unit - a->dma); });
    Endpoint* e = a->ep;
    if (!e) return;
    velo_sim_chan_hdr* ch = e->chan;
    // (rx_seq counts writes into the rings and the notification queue: both wake velo_*wait)
    if (a->data_ring) __atomic_store_n(&ch->rx_cycle, sys_->cycle(), __ATOMIC_RELEASE);
    __atomic_add_fetch(&ch->rx_seq, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&ch->rx_waiters, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&ch->rx_waiters, 0, __ATOMIC_RELAXED);
        futex_wake(&ch->rx_seq);
        ++st_.wakeups;
        // the woken client reacts in no simulated time: hold the clock until it stores or
        // waits again (bounded by sync_timeout_ms)
        if (opt_.sync_timeout_ms > 0) {
            if (reacting_.empty()) freeze_start_ = now_ms();
            reacting_.insert(e);
        }
    }
}
}  // namespace velo::fabric
