#include "ice40_host.hpp"

#include <cstdio>

namespace velo::sim::ice40 {

uint8_t crc8(const uint8_t* p, size_t n, uint8_t c) {
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = static_cast<uint8_t>((c & 0x80) ? (c << 1) ^ 0x07 : (c << 1));
    }
    return c;
}

std::vector<uint8_t> slip_frame(const std::vector<uint8_t>& body) {
    std::vector<uint8_t> out{kSlipEnd};
    auto put = [&out](uint8_t b) {
        if (b == kSlipEnd) {
            out.push_back(kSlipEsc);
            out.push_back(kSlipEscEnd);
        } else if (b == kSlipEsc) {
            out.push_back(kSlipEsc);
            out.push_back(kSlipEscEsc);
        } else {
            out.push_back(b);
        }
    };
    for (uint8_t b : body) put(b);
    put(crc8(body.data(), body.size()));
    out.push_back(kSlipEnd);
    return out;
}

namespace {
bool has_data(uint8_t fmt_type) {
    return (fmt_type & 0x40) != 0;
}
bool is_4dw(uint8_t fmt_type) {
    return (fmt_type & 0x20) != 0;
}
void put_header(std::vector<uint8_t>& v, const Tlp& t) {
    uint32_t dw[4];
    t.encode(dw);
    unsigned n = t.is_4dw() ? 4 : 3;
    for (unsigned i = 0; i < n; ++i)
        for (unsigned b = 0; b < 4; ++b) v.push_back(static_cast<uint8_t>(dw[i] >> (8 * b)));
}
}  // namespace

std::vector<uint8_t> tlp_body(const Tlp& t) {
    std::vector<uint8_t> v{kTlpDown, t.bar};
    put_header(v, t);
    if (has_data(t.fmt_type)) {
        size_t n = 4u * (t.len_dw ? t.len_dw : 1024);
        for (size_t i = 0; i < n; ++i) v.push_back(i < t.payload.size() ? t.payload[i] : 0);
    }
    return v;
}

std::vector<uint8_t> ping_body(uint8_t token) {
    return {kPing, token};
}

bool parse_tlp_body(const std::vector<uint8_t>& body, Tlp& t, bool with_bar) {
    size_t h = with_bar ? 2 : 1;
    if (body.size() < h + 12) return false;
    uint32_t dw[4] = {0, 0, 0, 0};
    uint8_t ft = body[h + 3];
    unsigned n = is_4dw(ft) ? 4 : 3;
    if (body.size() < h + 4 * n) return false;
    for (unsigned i = 0; i < n; ++i)
        for (unsigned b = 0; b < 4; ++b) dw[i] |= static_cast<uint32_t>(body[h + 4 * i + b]) << (8 * b);
    t = Tlp::decode(dw);
    t.bar = with_bar ? body[1] : 0;
    size_t p = h + 4 * n;
    size_t want = has_data(ft) ? 4u * (t.len_dw ? t.len_dw : 1024) : 0;
    if (body.size() - p != want) return false;
    t.payload.assign(body.begin() + static_cast<long>(p), body.end());
    return true;
}

bool SlipDecoder::push(uint8_t b) {
    if (b == kSlipEnd) {
        if (cur_.empty() && !bad_) return false;
        bool ok = !bad_ && cur_.size() >= 2 && crc8(cur_.data(), cur_.size()) == 0;
        if (!bad_ && !ok) ++bad_crc;
        if (ok) {
            cur_.pop_back();
            frames.push_back(cur_);
        }
        cur_.clear();
        esc_ = bad_ = false;
        return true;
    }
    if (esc_) {
        esc_ = false;
        if (b == kSlipEscEnd)
            cur_.push_back(kSlipEnd);
        else if (b == kSlipEscEsc)
            cur_.push_back(kSlipEsc);
        else {
            if (!bad_) ++bad_escape;
            bad_ = true;
        }
    } else if (b == kSlipEsc) {
        esc_ = true;
    } else {
        cur_.push_back(b);
    }
    return false;
}

uint8_t UartTxModel::step(bool cts_n) {
    if (bit_ < 0) {
        if (idle_) {
            --idle_;
            return 1;
        }
        if (q_.empty() || (cts_n && !ignore_cts)) return 1;
        if (gap_pct && rng_state) {
            *rng_state = *rng_state * 1103515245u + 12345u;
            if ((*rng_state >> 16) % 100 < static_cast<unsigned>(gap_pct)) {
                idle_ = cpb_ - 1;
                return 1;
            }
        }
        uint8_t b = q_.front();
        q_.pop_front();
        bool stop = !break_next_stop;
        break_next_stop = false;
        frame_ = static_cast<uint16_t>((stop ? 1u : 0u) << 9 | static_cast<unsigned>(b) << 1);  // start bit 0
        bit_ = 0;
        cnt_ = 0;
        ++bytes_sent;
    }
    uint8_t level = static_cast<uint8_t>((frame_ >> bit_) & 1);
    if (++cnt_ == cpb_) {
        cnt_ = 0;
        if (++bit_ == 10) bit_ = -1;
    }
    return level;
}

bool UartRxModel::step(uint8_t line, uint8_t& b) {
    switch (state_) {
        case 0:
            if (!line) {
                state_ = 1;
                cnt_ = 1;
            }
            return false;
        case 1:  // wait to the middle of the start bit
            if (++cnt_ >= cpb_ / 2) {
                if (line) {
                    state_ = 0;  // glitch
                } else {
                    state_ = 2;
                    cnt_ = 0;
                    nbit_ = 0;
                }
            }
            return false;
        case 2:
            if (++cnt_ == cpb_) {
                cnt_ = 0;
                shift_ = static_cast<uint8_t>((shift_ >> 1) | (line ? 0x80 : 0));
                if (++nbit_ == 8) state_ = 3;
            }
            return false;
        default:
            if (++cnt_ == cpb_) {
                state_ = 0;
                if (!line) {
                    ++frame_errors;
                    return false;
                }
                b = shift_;
                return true;
            }
            return false;
    }
}

uint8_t BoardHost::step(uint8_t txd, uint8_t cts_n) {
    uint8_t b;
    if (rx.step(txd, b) && dec.push(b)) {
        while (!dec.frames.empty()) {
            std::vector<uint8_t> f = std::move(dec.frames.front());
            dec.frames.pop_front();
            kinds.push_back(f[0]);
            switch (f[0]) {
                case kPong:
                    if (f.size() != 3 || f[2] != kProtocolVersion)
                        errors.push_back("bad PONG frame");
                    else
                        pongs.push_back(f[1]);
                    break;
                case kIrq:
                    if (f.size() != 1) errors.push_back("bad IRQ frame");
                    ++irqs;
                    break;
                case kError:
                    if (f.size() != 3)
                        errors.push_back("bad ERROR frame");
                    else
                        errors_reported.emplace_back(f[1], f[2]);
                    break;
                case kTlpUp: {
                    Tlp t;
                    if (!parse_tlp_body(f, t, false)) {
                        errors.push_back("bad TLP frame");
                        break;
                    }
                    ++tlps;
                    if (on_tlp) on_tlp(t);
                    break;
                }
                default: {
                    char m[64];
                    std::snprintf(m, sizeof m, "unknown frame type 0x%02x", f[0]);
                    errors.push_back(m);
                }
            }
        }
    }
    if (dec.bad_crc || dec.bad_escape) {
        errors.push_back("damaged frame from the board");
        dec.bad_crc = dec.bad_escape = 0;
    }
    return tx.step(cts_n != 0);
}

}  // namespace velo::sim::ice40
