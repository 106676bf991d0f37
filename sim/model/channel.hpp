// One direction of a network link between two NICs: a fixed-latency wire of `width`-bit flits
// (LINK_W data bits + 2 sync bits) with fault injection, for the link test bench and the cluster
// simulator.
//
//   cycle c:  out() is the flit arriving at the receiver; in(f) takes the flit the transmitter
//             drives; tick() advances. A flit given to in() in cycle c is out() in cycle c + latency.
//
// Faults, drawn from a seeded mt19937_64 (same seed, same faults):
//   - every bit of every flit flips independently with probability `ber`;
//   - a flit is lost with probability `flit_loss`: the receiver sees 0 in its place (sync 00, no
//     signal), as a lost symbol looks on a real wire;
//   - set_down(true) cuts the wire: the receiver sees 0 from that cycle on, flits in flight are
//     lost, and flits driven while down never arrive (the wire delivers 0 for `latency` cycles
//     after it comes back).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace velo::sim {

struct ChannelConfig {
    unsigned width = 18;   // bits per flit incl. the 2 sync bits (1..128; above 64 see in(lo, hi))
    unsigned latency = 2;  // cycles from in() to out() (>= 1)
    double ber = 0;        // probability that a bit flips
    double flit_loss = 0;  // probability that a flit is lost (delivered as 0)
    uint64_t seed = 1;     // fault generator seed
};

class Channel {
  public:
    explicit Channel(const ChannelConfig& c);  // throws std::invalid_argument on a bad config

    void in(uint64_t flit) { in(flit, 0); }  // the flit the transmitter drives this cycle (once per cycle)
    uint64_t out() const;                    // the flit arriving at the receiver this cycle (call before tick())
    // Flits wider than 64 bits (LINK_W = 64: 66 bits): bits 64 and up in hi.
    void in(uint64_t lo, uint64_t hi);
    uint64_t out_hi() const;
    void tick();  // advance one cycle
    void set_down(bool down);
    bool down() const { return down_; }
    // New fault rates from the next flit on (0 stops that kind of fault; the same checks as the
    // constructor's: std::invalid_argument outside [0, 1]).
    void set_faults(double ber, double flit_loss);

    // What was injected (counted when a flit enters the wire, in()):
    uint64_t flits_in() const { return flits_in_; }          // flits driven (including while down)
    uint64_t flits_delivered() const { return delivered_; }  // flits that arrived (not lost, not cut), maybe corrupted
    uint64_t flits_lost() const { return lost_; }            // flits lost (flit_loss)
    uint64_t flits_cut() const { return cut_; }              // flits dropped while down (incl. in flight)
    uint64_t flits_corrupted() const { return corrupted_; }  // flits put on the wire with >= 1 flipped bit
    uint64_t bits_flipped() const { return flipped_; }       // bits flipped in those flits

  private:
    // Bits / flits until the next fault of each kind (geometric skips: one draw per fault, not per
    // bit, and exactly the per-bit Bernoulli process).
    uint64_t draw(std::geometric_distribution<uint64_t>& g, double p);

    ChannelConfig cfg_;
    uint64_t mask_lo_, mask_hi_;
    std::mt19937_64 rng_;
    std::geometric_distribution<uint64_t> bit_gap_, loss_gap_;
    uint64_t next_flip_ = 0;  // bits to skip before the next flip
    uint64_t next_loss_ = 0;  // flits to skip before the next loss
    struct Slot {
        uint64_t flit = 0;  // what the receiver sees (bits 0..63)
        uint64_t hi = 0;    // bits 64 and up
        bool live = false;  // a driven flit (not lost, not cut)
    };
    std::vector<Slot> wire_;
    size_t head_ = 0;
    Slot pending_;
    bool has_pending_ = false;
    bool down_ = false;
    uint64_t flits_in_ = 0, delivered_ = 0, lost_ = 0, cut_ = 0, corrupted_ = 0, flipped_ = 0;
};

}  // namespace velo::sim
