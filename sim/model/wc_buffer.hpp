// The write-combining buffers of a CPU as a device sees them when the CPU is emulated (QEMU):
// the stores into a write-combining mapping arrive one by one, at most 8 bytes each, and the
// fence that drains the buffers on a real CPU is not visible. This model gathers the stores of
// one 64-byte line in a line buffer and turns it into posted writes when
//   - the line holds what its sender meant to store (`complete`, which the owner decides from
//     the address: a send-window line's length field, whole RMA command slots),
//   - a store goes to a line not in a buffer and all buffers are taken (the oldest is evicted),
//   - an uncached access or another serialising event happens (flush_all), or
//   - no store came to the line for longer than the timeout (flush_expired).
// A flushed line becomes one write per run of contiguous bytes (a whole line: one 64-byte
// write), oldest line first, as a CPU's partial flushes do; what does not combine travels as
// fragments, which the NIC handles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace velo::sim {

class WcBuffers {
  public:
    // One posted write of n contiguous bytes at addr (n <= 64, never crossing a line).
    using Emit = std::function<void(uint64_t addr, const uint8_t* bytes, size_t n)>;
    // Whether the line at `line` (64-byte aligned) is complete with the bytes in `mask` (bit i:
    // byte i of the line written).
    using Complete = std::function<bool(uint64_t line, uint64_t mask)>;

    // buffers: line buffers, 1..64 (Intel cores have 6..12); timeout_ns: how long a line may wait.
    WcBuffers(unsigned buffers, int64_t timeout_ns, Emit emit, Complete complete);

    // A store of n bytes (1..8) at addr, made at time now_ns. A store that crosses a line
    // boundary is two stores.
    void store(uint64_t addr, const uint8_t* p, unsigned n, int64_t now_ns);
    void flush_all();                    // a serialising event: every line, oldest first
    void flush_expired(int64_t now_ns);  // lines without a store for the timeout, oldest first
    bool empty() const { return used_ == 0; }
    // The time the first line expires (valid only when !empty()).
    int64_t deadline() const;

    uint64_t stores = 0, writes = 0, full_lines = 0, evictions = 0, timeouts = 0, merged_overwrites = 0;

  private:
    struct Line {
        bool live = false;
        uint64_t addr = 0;
        uint64_t mask = 0;
        uint64_t order = 0;  // allocation order: lower is older
        int64_t since = 0;   // time of the line's last store
        uint8_t data[64] = {};
    };
    void store_in_line(uint64_t addr, const uint8_t* p, unsigned n, int64_t now_ns);
    void flush(Line& l);
    Line* oldest();

    std::vector<Line> lines_;
    int64_t timeout_ns_;
    Emit emit_;
    Complete complete_;
    unsigned used_ = 0;
    uint64_t next_order_ = 0;
};

}  // namespace velo::sim
