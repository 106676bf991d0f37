// C++ models of the host side of a VELO NIC: TLP stream driver and sink, host memory with the
// visibility guarantees of a real root complex (and nothing more), the CPU's write-combining
// buffer, the mailbox-polling software, fragment recombination and a scoreboard.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "harness.hpp"
#include "tlp.hpp"

namespace velo::sim {

// Pins of a TLP stream into the DUT.
struct TlpInPins {
    uint8_t* valid;
    uint8_t* ready;
    uint8_t* sop;
    uint8_t* eop;
    Words hdr;
    uint8_t* bar;  // may be null
    Words data;
};
// Pins of a TLP stream out of the DUT.
struct TlpOutPins {
    uint8_t* valid;
    uint8_t* ready;
    uint8_t* sop;
    uint8_t* eop;
    Words hdr;
    Words data;
};

// Drives queued TLPs into the DUT, beat by beat, honouring ready. Call drive() before eval()
// and sample() after it, every cycle.
class TlpDriver {
  public:
    explicit TlpDriver(TlpInPins p) : p_(p) {}
    void push(const Tlp& t) { q_.push_back(t); }
    bool idle() const { return q_.empty(); }
    size_t pending() const { return q_.size(); }
    // Percent of cycles valid is held low (between and, if mid_tlp_gaps, inside TLPs).
    int gap_pct = 0;
    bool mid_tlp_gaps = false;
    std::mt19937_64* rng = nullptr;
    void drive();
    // Returns true when the last beat of a TLP was accepted this cycle.
    bool sample();
    uint64_t beats_sent = 0;
    // Set when the first beat of the head TLP was accepted in this cycle.
    bool sop_fired = false;
    // Set in the cycle the head TLP's first beat is presented for the first time (the moment a
    // write "enters" the port for latency measurements, whether or not it is accepted at once).
    bool sop_presented = false;

  private:
    int beats_of(const Tlp& t) const;
    TlpInPins p_;
    std::deque<Tlp> q_;
    int beat_ = 0;
    bool gap_ = false;
    bool presented_ = false;
    bool holding_ = false;
};

// Accepts TLPs from the DUT. Call drive() before eval() and sample() after it.
class TlpSink {
  public:
    explicit TlpSink(TlpOutPins p) : p_(p) {}
    int stall_pct = 0;  // percent of cycles ready is held low
    std::mt19937_64* rng = nullptr;
    std::function<void(const Tlp&)> on_tlp;
    void drive();
    void sample();
    uint64_t tlps = 0;
    bool eop_fired = false;  // last beat of a TLP accepted this cycle
    std::vector<std::string> errors;

  private:
    TlpOutPins p_;
    bool in_ = false;
    Tlp cur_;
    int beat_ = 0;
};

// Host memory as the NIC's DMA writes reach it. A posted write becomes visible one 64-byte line
// at a time: the lines of one TLP in random order with random delays, strictly after all lines
// of the TLPs before it. That is all a root complex promises.
class HostMem {
  public:
    explicit HostMem(uint64_t seed) : rng_(seed) {}
    void post(const Tlp& t);
    void step();   // one cycle: maybe make one pending line chunk visible
    void drain();  // make everything visible
    bool idle() const { return pending_.empty(); }
    uint8_t read8(uint64_t a) const;
    uint64_t read64(uint64_t a) const;
    void write(uint64_t a, const uint8_t* p, size_t n);
    void fill(uint64_t a, size_t n, uint8_t v);
    int max_delay = 3;  // cycles between two lines becoming visible: 0..max_delay

  private:
    struct Chunk {
        uint64_t line;
        std::vector<std::pair<unsigned, uint8_t>> bytes;  // offset in line, value
    };
    std::map<uint64_t, std::array<uint8_t, 64>> mem_;
    std::deque<std::vector<Chunk>> pending_;
    std::mt19937_64 rng_;
    int wait_ = 0;
};

// PCIe completion status Completer Abort. The spec lists only the statuses the NIC sends; the
// host's root complex may send this one too.
#ifdef VELO_TLP_CPL_CA
constexpr uint8_t kCplStatusCA = VELO_TLP_CPL_CA;
#else
constexpr uint8_t kCplStatusCA = 4;
#endif

// The host answering the NIC's memory reads (the root complex as completer). Each read is
// answered from HostMem as it is when the read arrives, after a configurable latency, with
// completions split at RCB (64-byte) boundaries and never over the max payload size; completions
// of one read keep address order, those of different reads interleave in random order when
// `reorder` is set. Faults: UR or CA instead of (the rest of) the data, or no (further)
// completions at all (the NIC must time out), and extra delay (late completions).
class HostReader {
  public:
    enum class Fault { None, UR, CA, Drop };
    struct Plan {
        Fault fault = Fault::None;
        unsigned after = 0;        // completions with data sent before the fault
        unsigned extra_delay = 0;  // cycles added to the read's latency
    };
    HostReader(const HostMem& mem, uint64_t seed) : mem_(&mem), rng_(seed) {}
    // A reader whose data come from `source` alone (set it before the first read).
    explicit HostReader(uint64_t seed) : rng_(seed) {}
    unsigned latency_min = 20;  // cycles from the read's arrival to its first completion
    unsigned latency_max = 20;
    unsigned gap_max = 0;                      // extra cycles (0..gap_max) before each further completion of a read
    unsigned mps = 256;                        // max payload size: a multiple of 64, 64..4096
    int split_pct = 50;                        // percent of completions cut at a random RCB boundary, not the largest
    bool reorder = true;                       // interleave the completions of different reads
    int ur_pct = 0, ca_pct = 0, drop_pct = 0;  // random faults per read (when `plan` is not set)
    uint16_t cpl_id = 0;                       // completer id of the root port
    std::function<Plan(const Tlp& mrd, uint64_t seq)> plan;  // per-read faults (directed tests)
    // Where the data come from instead of HostMem (the fabric: its clients' memory): fill n bytes
    // at address a, or return false (nothing there); such a read is answered with
    // `source_fault` (a completion without data) instead of its first completion.
    std::function<bool(uint64_t a, uint8_t* p, size_t n)> source;
    Fault source_fault = Fault::UR;
    uint64_t source_faults = 0;

    // A memory read request from the NIC arrived in cycle `now`; seq numbers reads from 0.
    // Returns false (and answers nothing) if it is not a valid memory read.
    bool request(const Tlp& mrd, uint64_t now);
    // The next completion due at `now`, if any, with the seq of its read.
    bool pop(uint64_t now, Tlp& cpl, uint64_t* seq = nullptr);
    size_t pending() const { return reqs_.size(); }  // reads not completely answered
    bool idle() const { return reqs_.empty(); }
    // Tags of the reads with completions still to send
    std::vector<uint8_t> pending_tags() const;
    uint64_t reads = 0, completions = 0, sc_bytes = 0, faults = 0;
    std::vector<std::string> errors;

  private:
    struct Req {
        uint64_t seq;
        uint64_t due;
        std::deque<Tlp> cpls;
        bool dropped;  // completions after `cpls` withheld for ever
    };
    const HostMem* mem_ = nullptr;
    std::mt19937_64 rng_;
    std::deque<Req> reqs_;
    uint64_t seq_ = 0;
};

// Payload bytes a completion carries for its read: from the lower address to the end of the
// payload, at most the byte count.
unsigned cpl_bytes(const Tlp& c);

// One mailbox entry as software reads it.
struct MboxEntry {
    uint64_t hdr = 0;
    std::vector<uint8_t> area;  // payload area: (FRAG_OFF % 4) bytes before the fragment
    unsigned src_node() const;
    unsigned src_vpid() const;
    unsigned dst_vpid() const;
    unsigned msg_len() const;
    unsigned frag_off() const;
    unsigned frag_len() const;
    bool frag() const;
    unsigned lines() const;
};

// The polling receiver of one vpid: follows the ring protocol of MBOX_HDR, checks that no entry
// is ever seen torn, and tells when to return the read pointer.
class MailboxReader {
  public:
    MailboxReader(const HostMem& mem, uint64_t base, unsigned log2_lines) : mem_(mem), base_(base), log2_(log2_lines) {}
    // Consume one entry if the next one is visible.
    bool poll(MboxEntry& e);
    uint32_t rp() const { return rp_; }
    uint32_t rp_returned = 0;  // last value written to the NIC
    std::vector<std::string> errors;

  private:
    const HostMem& mem_;
    uint64_t base_;
    unsigned log2_;
    uint32_t rp_ = 0;
};

// A whole message as the application receives it.
struct Msg {
    unsigned src_node = 0, src_vpid = 0, dst_node = 0, dst_vpid = 0;
    std::vector<uint8_t> bytes;
};

// Software recombination of fragments (paper, section 3): fragments of one sender (node, vpid)
// are merged until they cover the message.
class Recombiner {
  public:
    // Returns true and fills m when e completes a message.
    bool add(unsigned dst_node, const MboxEntry& e, Msg& m);
    bool idle() const { return part_.empty(); }
    std::vector<std::string> errors;
    uint64_t fragments = 0;

  private:
    struct Part {
        unsigned len = 0;
        std::vector<uint8_t> bytes;
        std::vector<bool> have;
        unsigned dst_vpid = 0;
    };
    std::map<std::pair<unsigned, unsigned>, Part> part_;
};

// Expected messages per (source node, source vpid, destination node, destination vpid), in
// order: every message exactly once, byte exact, in order per sender and receiver.
class Scoreboard {
  public:
    void expect(const Msg& m);
    void deliver(const Msg& m);
    size_t outstanding() const;
    uint64_t delivered = 0;
    std::vector<std::string> errors;

  private:
    std::map<std::array<unsigned, 4>, std::deque<std::vector<uint8_t>>> q_;
};

// How the CPU's write-combining buffer flushes one message's stores.
enum class WcMode {
    Burst,     // one posted write of the stored quadwords (sfence after the stores)
    FullLine,  // the sender pads to the whole 64-byte line: one 64-byte write
    Split,     // interrupted after a random number of stores: two writes (a fragment pair)
    Chunk8,    // every quadword flushed on its own (worst case partial flushes)
    Bytes,     // byte stores, flushed as 1..3 pieces with byte-granular edges
};

// Window offset (SEND_ADDR format) of message length `len` for (src vpid -> node, vpid).
uint64_t send_offset(unsigned vpid_bits, unsigned node_bits, unsigned src_vpid, unsigned dst_node, unsigned dst_vpid,
                     unsigned len);

// Mailbox lines the entry made from this send-window write takes (0 if the NIC drops it).
unsigned entry_lines(const Tlp& t);

// The posted writes one message turns into.
std::vector<Tlp> wc_flush(uint64_t window_base, uint64_t offset, const std::vector<uint8_t>& msg, WcMode mode,
                          std::mt19937_64& rng);

}  // namespace velo::sim
