// TLPs of the device-independent stream (spec format TLP_HDR), built and parsed with the field
// positions of the generated header velo/velo_hw.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace velo::sim {

struct Tlp {
    uint8_t fmt_type = 0;
    uint16_t len_dw = 0;  // 0 means 1024
    uint8_t first_be = 0xF;
    uint8_t last_be = 0;
    uint8_t tag = 0;
    uint16_t req_id = 0;
    uint64_t addr = 0;
    uint8_t bar = 0;  // downstream only
    bool ep = false;
    // completions
    uint16_t cpl_id = 0;
    uint8_t cpl_status = 0;
    uint16_t byte_count = 0;
    uint8_t lower_addr = 0;
    // payload, DW aligned: payload[0..3] is the first DW
    std::vector<uint8_t> payload;

    bool is_mwr() const;
    bool is_mrd() const;
    bool is_cpl() const;  // with or without data
    bool is_4dw() const { return (fmt_type & 0x20) != 0; }
    // Header as 4 DWs (DW0 first).
    void encode(uint32_t dw[4]) const;
    static Tlp decode(const uint32_t dw[4]);
    std::string str() const;

    // A memory write of `bytes` at byte address `addr` (any alignment, contiguous bytes),
    // with first/last byte enables set as a root complex would.
    static Tlp mwr(uint64_t addr, const std::vector<uint8_t>& bytes, uint8_t bar);
    static Tlp mrd(uint64_t addr, unsigned len_dw, uint8_t tag, uint8_t bar, uint8_t first_be = 0xF,
                   uint8_t last_be = 0xF);
};

// Bytes a memory write actually writes: (address, byte) pairs in address order.
std::vector<std::pair<uint64_t, uint8_t>> mwr_bytes(const Tlp& t);

}  // namespace velo::sim
