// velo-fabric: the clients' CPU stores. Each endpoint's shared-memory channel of store slots is
// taken at the start of every simulated cycle and posted as TLPs into the send windows (BAR2),
// the user pages (BAR0) and the RMA command page (BAR4); a store may be cut in two on purpose.
#include <algorithm>
#include <vector>

#include "fabric_private.hpp"

namespace velo::fabric {

bool Fabric::take_store(Endpoint* e, Tlp& t, uint16_t& tid) {
    if (!e->slot_ready()) return false;
    velo_sim_slot& s = e->slots[e->head & (e->nslots - 1)];
    const uint32_t page = s.page;
    const unsigned off = s.off, bytes = s.bytes;
    tid = s.tid;
    std::vector<uint8_t> data(s.data, s.data + (bytes <= 64 ? bytes : 64));
    // hand the slot back for the producer of (head + nslots)
    __atomic_store_n(&s.seq, e->head + e->nslots, __ATOMIC_RELEASE);
    ++e->head;
    __atomic_store_n(&e->chan->head, e->head, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&e->chan->prod_waiters, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&e->chan->prod_waiters, 0, __ATOMIC_RELAXED);
        futex_wake(&e->chan->head);
    }
    ++st_.stores;
    // what a CPU's write-combining buffer can emit: up to one line, inside a mapped page
    if (bytes == 0 || bytes > 64 || (off & 63) + bytes > 64 || off >= 4096) {
        ++st_.bad_stores;
        return false;
    }
    uint64_t addr;
    uint8_t bar;
    if (page == VELO_SIM_PAGE_RMA) {
        // an RMA command into the vpid's own BAR4 page (mapped once RMA_SETUP succeeded)
        if (!e->nq) {
            ++st_.bad_stores;
            return false;
        }
        addr = System::kBar4 + e->rma_page + off;
        bar = VELO_BAR_RMA;
    } else if (page & VELO_SIM_PAGE_USER) {
        const unsigned k = page & ~VELO_SIM_PAGE_USER;
        if (k > 1) {
            ++st_.bad_stores;
            return false;
        }
        addr = System::kBar0 + (k ? e->core->ctl_user_page_off : e->core->user_page_off) + off;
        bar = VELO_BAR_REGS;
    } else {
        const velo_core_grant_ent* g = velo_core_grant_get(core_[e->node], e->vpid, page);
        if (!g) {
            // a store to a page the process never got mapped: a real CPU would fault
            ++st_.bad_stores;
            if (opt_.verbose) logf("client %d: store to an unmapped page %u dropped", e->client->pid, page);
            return false;
        }
        addr = System::kBar2 + g->window_off + off;
        bar = VELO_BAR_SEND;
    }
    t = Tlp::mwr(addr, data, bar);
    // a partial flush on purpose, as an interrupted thread's write-combining buffer makes it:
    // cut between two of the sender's quadword stores; the first piece now, the rest after up to
    // three other stores
    if (bar == VELO_BAR_SEND && opt_.split_rate > 0 && !e->deferred.live) {
        const unsigned len = ((off >> 6) & 63) + 1, o = off & 63;
        const unsigned k = o < len ? std::min(bytes, len - o) : 0;
        const unsigned g = opt_.split_bytes ? 1 : 8;    // byte stores or quadword stores
        const unsigned ncut = k > g ? (k - 1) / g : 0;  // store boundaries inside the message
        if (ncut && std::uniform_real_distribution<double>(0, 1)(rng_) < opt_.split_rate) {
            const unsigned cut = g * (1 + static_cast<unsigned>(rng_() % ncut));
            t = Tlp::mwr(addr, std::vector<uint8_t>(data.begin(), data.begin() + cut), bar);
            e->deferred.live = true;
            e->deferred.tid = tid;
            e->deferred.countdown = static_cast<int>(rng_() % 4);
            e->deferred.tlp = Tlp::mwr(addr + cut, std::vector<uint8_t>(data.begin() + cut, data.end()), bar);
            ++st_.splits;
            if (opt_.verbose)
                logf("split: message of %u bytes, store at %u of %u bytes, cut at +%u", len, o, bytes, cut);
        }
    }
    return true;
}

void Fabric::post(unsigned node, const Tlp& t) {
    sys_->cpu_post(node, t);
    // other stores passing a deferred piece
    for (Endpoint* e : node_eps_[node])
        if (e->deferred.live && e->deferred.countdown > 0) --e->deferred.countdown;
}

// Start of every simulated cycle: the CPUs of the nodes issue the clients' stores.
void Fabric::on_cycle() {
    // the root complex answers the NICs' reads (completions go down in order with the stores)
    for (unsigned n = 0; n < readers_.size(); ++n) {
        Tlp c;
        while (readers_[n]->pop(sys_->cycle(), c)) sys_->cpu_post(n, c);
    }
    for (unsigned n = 0; n < node_eps_.size(); ++n) {
        auto& eps = node_eps_[n];
        if (eps.empty()) continue;
        while (sys_->cpu_queued(n) < kQueue) {
            bool any = false;
            for (size_t k = 0; k < eps.size() && sys_->cpu_queued(n) < kQueue; ++k) {
                Endpoint* e = eps[(rr_[n] + k) % eps.size()];
                Deferred& d = e->deferred;
                // the deferred piece goes before its own thread's next store, when enough other
                // stores passed, or when its channel has nothing else
                if (d.live) {
                    const bool own_next = e->slot_ready() && e->slots[e->head & (e->nslots - 1)].tid == d.tid;
                    if (d.countdown == 0 || own_next || !e->slot_ready()) {
                        d.live = false;
                        post(n, d.tlp);
                        any = true;
                        continue;
                    }
                }
                Tlp t;
                uint16_t tid;
                if (take_store(e, t, tid)) {
                    post(n, t);
                    any = true;
                }
            }
            rr_[n] = (rr_[n] + 1) % eps.size();
            if (!any) break;
        }
    }
    if (!guests_.empty()) guest_cycle();
    __atomic_store_n(&info_->cycle, sys_->cycle(), __ATOMIC_RELAXED);
}

bool Fabric::any_store_ready() const {
    for (auto& eps : node_eps_)
        for (Endpoint* e : eps)
            if (e->slot_ready()) return true;
    return false;
}

bool Fabric::any_deferred() const {
    for (auto& eps : node_eps_)
        for (Endpoint* e : eps)
            if (e->deferred.live) return true;
    return false;
}
}  // namespace velo::fabric
