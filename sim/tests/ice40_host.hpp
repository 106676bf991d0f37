// Host side of the iCE40 board's UART host bridge (rtl/board/ice40/velo_uart_*.v; protocol in
// docs/board-guide.md): the serial line at bit level, SLIP framing with CRC-8, and the frames
// (TLPs both ways, PING/PONG, IRQ, ERROR). The benches tb_ice40_bridge and tb_ice40_system use it
// as the PC behind the FT2232H; it is written from the documented protocol, not from the RTL.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "tlp.hpp"

namespace velo::sim::ice40 {

// Frame types and error codes (docs/board-guide.md, "UART host protocol").
enum : uint8_t {
    kPing = 0x00,
    kTlpDown = 0x01,
    kPong = 0x80,
    kTlpUp = 0x81,
    kIrq = 0x83,
    kError = 0x8F,
};
enum : uint8_t {
    kErrCrc = 1,
    kErrEsc = 2,
    kErrLong = 3,
    kErrUart = 4,
    kErrFull = 5,
    kErrType = 6,
    kErrLen = 7,
};
constexpr uint8_t kSlipEnd = 0xC0, kSlipEsc = 0xDB, kSlipEscEnd = 0xDC, kSlipEscEsc = 0xDD;
constexpr uint8_t kProtocolVersion = 1;
constexpr unsigned kMaxPayloadDw = 32;  // longest TLP payload a frame may carry

// CRC-8, polynomial 0x07, initial value 0, MSB first, no final XOR.
uint8_t crc8(const uint8_t* p, size_t n, uint8_t c = 0);

// {END, SLIP(body + CRC-8), END}.
std::vector<uint8_t> slip_frame(const std::vector<uint8_t>& body);

// Frame bodies (type byte first, without CRC).
std::vector<uint8_t> tlp_body(const Tlp& t);  // host -> board TLP frame (uses t.bar)
std::vector<uint8_t> ping_body(uint8_t token);
// The TLP of a board -> host (or host -> board) TLP frame body; false if the body is not one.
bool parse_tlp_body(const std::vector<uint8_t>& body, Tlp& t, bool with_bar);

// Byte stream -> frame bodies (CRC checked and removed). Empty frames are skipped.
class SlipDecoder {
  public:
    // Feed one byte; returns true when a frame ended (good or bad).
    bool push(uint8_t b);
    std::deque<std::vector<uint8_t>> frames;  // good frames, CRC removed
    uint64_t bad_crc = 0, bad_escape = 0;

  private:
    std::vector<uint8_t> cur_;
    bool esc_ = false;
    bool bad_ = false;
};

// A UART transmitter (8N1) driving the board's rx pin one clock cycle at a time.
class UartTxModel {
  public:
    explicit UartTxModel(unsigned clks_per_bit) : cpb_(clks_per_bit) {}
    void push(uint8_t b) { q_.push_back(b); }
    void push(const std::vector<uint8_t>& v) { q_.insert(q_.end(), v.begin(), v.end()); }
    bool idle() const { return q_.empty() && bit_ < 0; }
    size_t queued() const { return q_.size(); }
    // Line level for this cycle. cts_n: the board's CTS# (a byte starts only while it is low,
    // unless ignore_cts). Call once per cycle.
    uint8_t step(bool cts_n);
    bool ignore_cts = false;
    int gap_pct = 0;  // chance of an idle bit time between bytes
    unsigned* rng_state = nullptr;
    // Send the next byte with a bad (low) stop bit.
    bool break_next_stop = false;
    uint64_t bytes_sent = 0;

  private:
    unsigned cpb_;
    std::deque<uint8_t> q_;
    int bit_ = -1;  // -1 idle, 0 start, 1..8 data, 9 stop
    unsigned cnt_ = 0;
    uint16_t frame_ = 0;
    unsigned idle_ = 0;
};

// A UART receiver (8N1) sampling the board's tx pin once per clock cycle, at mid-bit.
class UartRxModel {
  public:
    explicit UartRxModel(unsigned clks_per_bit) : cpb_(clks_per_bit) {}
    // Returns true and sets b when a byte completed in this cycle.
    bool step(uint8_t line, uint8_t& b);
    uint64_t frame_errors = 0;
    bool busy() const { return state_ != 0; }

  private:
    unsigned cpb_;
    int state_ = 0;  // 0 idle, 1 start, 2 data, 3 stop
    unsigned cnt_ = 0, nbit_ = 0;
    uint8_t shift_ = 0;
};

// The PC behind the FT2232H: sends TLP and PING frames, collects what the board sends.
class BoardHost {
  public:
    explicit BoardHost(unsigned clks_per_bit) : tx(clks_per_bit), rx(clks_per_bit) {}
    // One board clock cycle: give the board's txd and cts_n, get the line level for its rxd.
    uint8_t step(uint8_t txd, uint8_t cts_n);

    void send_tlp(const Tlp& t) { tx.push(slip_frame(tlp_body(t))); }
    void send_ping(uint8_t token) { tx.push(slip_frame(ping_body(token))); }
    void send_raw(const std::vector<uint8_t>& bytes) { tx.push(bytes); }
    bool tx_idle() const { return tx.idle(); }

    std::function<void(const Tlp&)> on_tlp;                    // every TLP frame from the board, in order
    std::deque<uint8_t> pongs;                                 // tokens
    std::vector<std::pair<uint8_t, uint8_t>> errors_reported;  // (code, count) of ERROR frames
    uint64_t irqs = 0;
    uint64_t tlps = 0;
    std::vector<std::string> errors;  // protocol violations seen by the host
    // The kind of every frame received, in order (0x80, 0x81, 0x83, 0x8F).
    std::vector<uint8_t> kinds;

    UartTxModel tx;
    UartRxModel rx;
    SlipDecoder dec;
};

}  // namespace velo::sim::ice40
