// The CPU's write-combining buffers as an emulated CPU's device sees them (wc_buffer.hpp).
#include "wc_buffer.hpp"

#include <cstring>
#include <stdexcept>

namespace velo::sim {

WcBuffers::WcBuffers(unsigned buffers, int64_t timeout_ns, Emit emit, Complete complete)
    : lines_(buffers), timeout_ns_(timeout_ns), emit_(std::move(emit)), complete_(std::move(complete)) {
    if (buffers < 1 || buffers > 64) throw std::invalid_argument("WcBuffers: 1..64 line buffers");
    if (timeout_ns < 0) throw std::invalid_argument("WcBuffers: negative timeout");
    if (!emit_) throw std::invalid_argument("WcBuffers: no emit function");
}

void WcBuffers::store(uint64_t addr, const uint8_t* p, unsigned n, int64_t now_ns) {
    if (n < 1 || n > 8) throw std::invalid_argument("WcBuffers: a store is 1..8 bytes");
    ++stores;
    const unsigned in_first = static_cast<unsigned>(64 - (addr & 63));
    if (n > in_first) {
        store_in_line(addr, p, in_first, now_ns);
        store_in_line(addr + in_first, p + in_first, n - in_first, now_ns);
    } else {
        store_in_line(addr, p, n, now_ns);
    }
}

void WcBuffers::store_in_line(uint64_t addr, const uint8_t* p, unsigned n, int64_t now_ns) {
    const uint64_t line = addr & ~63ull;
    Line* l = nullptr;
    for (auto& x : lines_)
        if (x.live && x.addr == line) l = &x;
    if (!l) {
        for (auto& x : lines_)
            if (!x.live) {
                l = &x;
                break;
            }
        if (!l) {
            l = oldest();
            ++evictions;
            flush(*l);
        }
        l->live = true;
        l->addr = line;
        l->mask = 0;
        l->order = next_order_++;
        l->since = now_ns;
        ++used_;
    }
    l->since = now_ns;  // the timeout runs from the line's last store
    const unsigned off = static_cast<unsigned>(addr & 63);
    const uint64_t bits = (n == 64 ? ~0ull : ((1ull << n) - 1)) << off;
    if (l->mask & bits) ++merged_overwrites;
    std::memcpy(l->data + off, p, n);
    l->mask |= bits;
    if (l->mask == ~0ull || (complete_ && complete_(l->addr, l->mask))) flush(*l);
}

void WcBuffers::flush(Line& l) {
    if (!l.live) return;
    if (l.mask == ~0ull) ++full_lines;
    unsigned i = 0;
    while (i < 64) {
        if (!(l.mask >> i & 1)) {
            ++i;
            continue;
        }
        unsigned j = i;
        while (j < 64 && (l.mask >> j & 1)) ++j;
        ++writes;
        emit_(l.addr + i, l.data + i, j - i);
        i = j;
    }
    l.live = false;
    l.mask = 0;
    --used_;
}

WcBuffers::Line* WcBuffers::oldest() {
    Line* o = nullptr;
    for (auto& x : lines_)
        if (x.live && (!o || x.order < o->order)) o = &x;
    return o;
}

void WcBuffers::flush_all() {
    while (Line* l = oldest()) flush(*l);
}

void WcBuffers::flush_expired(int64_t now_ns) {
    // in the order the lines were opened
    for (;;) {
        Line* e = nullptr;
        for (auto& x : lines_)
            if (x.live && now_ns - x.since >= timeout_ns_ && (!e || x.order < e->order)) e = &x;
        if (!e) return;
        ++timeouts;
        flush(*e);
    }
}

int64_t WcBuffers::deadline() const {
    int64_t d = INT64_MAX;
    for (const auto& x : lines_)
        if (x.live && x.since + timeout_ns_ < d) d = x.since + timeout_ns_;
    return d;
}

}  // namespace velo::sim
