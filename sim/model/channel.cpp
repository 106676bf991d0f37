// Link channel model with fault injection: see channel.hpp.
#include "channel.hpp"

#include <stdexcept>
#include <string>

namespace velo::sim {

namespace {

std::geometric_distribution<uint64_t> gap_dist(double p) {
    // a probability of 0 never draws (see Channel::draw); 1 is a fault every time
    return std::geometric_distribution<uint64_t>(p > 0 ? p : 0.5);
}

}  // namespace

Channel::Channel(const ChannelConfig& c)
    : cfg_(c), rng_(c.seed), bit_gap_(gap_dist(c.ber)), loss_gap_(gap_dist(c.flit_loss)) {
    if (c.width < 1 || c.width > 128)
        throw std::invalid_argument("velo: channel width must be 1..128 bits, not " + std::to_string(c.width));
    if (c.latency < 1) throw std::invalid_argument("velo: channel latency must be at least 1 cycle");
    if (!(c.ber >= 0 && c.ber <= 1)) throw std::invalid_argument("velo: channel ber must be in [0, 1]");
    if (!(c.flit_loss >= 0 && c.flit_loss <= 1))
        throw std::invalid_argument("velo: channel flit_loss must be in [0, 1]");
    mask_lo_ = c.width >= 64 ? ~0ull : ((1ull << c.width) - 1);
    mask_hi_ = c.width <= 64 ? 0 : c.width == 128 ? ~0ull : ((1ull << (c.width - 64)) - 1);
    wire_.assign(c.latency, Slot{});
    next_flip_ = draw(bit_gap_, c.ber);
    next_loss_ = draw(loss_gap_, c.flit_loss);
}

void Channel::set_faults(double ber, double flit_loss) {
    if (!(ber >= 0 && ber <= 1)) throw std::invalid_argument("velo: channel ber must be in [0, 1]");
    if (!(flit_loss >= 0 && flit_loss <= 1)) throw std::invalid_argument("velo: channel flit_loss must be in [0, 1]");
    cfg_.ber = ber;
    cfg_.flit_loss = flit_loss;
    bit_gap_ = gap_dist(ber);
    loss_gap_ = gap_dist(flit_loss);
    next_flip_ = draw(bit_gap_, ber);
    next_loss_ = draw(loss_gap_, flit_loss);
}

uint64_t Channel::draw(std::geometric_distribution<uint64_t>& g, double p) {
    if (p <= 0) return ~0ull;
    return g(rng_);
}

void Channel::in(uint64_t lo, uint64_t hi) {
    if (has_pending_) throw std::logic_error("velo: Channel::in called twice in one cycle");
    has_pending_ = true;
    ++flits_in_;
    lo &= mask_lo_;
    hi &= mask_hi_;
    // the fault processes advance with every flit driven, whatever happens to it
    bool lost = false;
    if (next_loss_ == 0) {
        lost = true;
        next_loss_ = draw(loss_gap_, cfg_.flit_loss);
    } else if (next_loss_ != ~0ull) {
        --next_loss_;
    }
    uint64_t flips = 0, flips_hi = 0;
    unsigned pos = 0;
    while (next_flip_ != ~0ull && next_flip_ < cfg_.width - pos) {
        pos += static_cast<unsigned>(next_flip_);
        if (pos < 64)
            flips |= 1ull << pos;
        else
            flips_hi |= 1ull << (pos - 64);
        ++pos;
        next_flip_ = draw(bit_gap_, cfg_.ber);
    }
    if (next_flip_ != ~0ull) next_flip_ -= cfg_.width - pos;
    if (down_) {
        ++cut_;
        pending_ = Slot{};
    } else if (lost) {
        ++lost_;
        pending_ = Slot{};
    } else {
        if (flips || flips_hi) {
            ++corrupted_;
            flipped_ += static_cast<uint64_t>(__builtin_popcountll(flips) + __builtin_popcountll(flips_hi));
        }
        pending_ = Slot{lo ^ flips, hi ^ flips_hi, true};
    }
}

uint64_t Channel::out() const {
    return down_ ? 0 : wire_[head_].flit;
}

uint64_t Channel::out_hi() const {
    return down_ ? 0 : wire_[head_].hi;
}

void Channel::tick() {
    if (wire_[head_].live) ++delivered_;              // it arrived this cycle
    wire_[head_] = has_pending_ ? pending_ : Slot{};  // nothing driven: no signal
    has_pending_ = false;
    head_ = (head_ + 1) % wire_.size();
}

void Channel::set_down(bool down) {
    if (down && !down_) {
        // flits in flight never arrive
        for (auto& s : wire_) {
            if (s.live) ++cut_;
            s = Slot{};
        }
    }
    down_ = down;
}

}  // namespace velo::sim
