#include "tlp.hpp"

#include <cstdio>

#include "velo/velo_hw.h"

namespace velo::sim {

namespace {
// Put/get a field of a 128-bit header held as 4 DWs.
void put(uint32_t dw[4], unsigned shift, unsigned width, uint64_t v) {
    for (unsigned i = 0; i < width; ++i) {
        unsigned b = shift + i;
        uint32_t m = 1u << (b % 32);
        if ((v >> i) & 1)
            dw[b / 32] |= m;
        else
            dw[b / 32] &= ~m;
    }
}
uint64_t get(const uint32_t dw[4], unsigned shift, unsigned width) {
    uint64_t v = 0;
    for (unsigned i = 0; i < width; ++i) {
        unsigned b = shift + i;
        v |= static_cast<uint64_t>((dw[b / 32] >> (b % 32)) & 1) << i;
    }
    return v;
}
#define PUT(F, v) put(dw, VELO_TLP_HDR_##F##_SHIFT, VELO_TLP_HDR_##F##_WIDTH, (v))
#define GET(F) get(dw, VELO_TLP_HDR_##F##_SHIFT, VELO_TLP_HDR_##F##_WIDTH)
}  // namespace

bool Tlp::is_mwr() const {
    return fmt_type == VELO_TLP_FMT_TYPE_MWR32 || fmt_type == VELO_TLP_FMT_TYPE_MWR64;
}
bool Tlp::is_mrd() const {
    return fmt_type == VELO_TLP_FMT_TYPE_MRD32 || fmt_type == VELO_TLP_FMT_TYPE_MRD64;
}
bool Tlp::is_cpl() const {
    return fmt_type == VELO_TLP_FMT_TYPE_CPL || fmt_type == VELO_TLP_FMT_TYPE_CPLD;
}

void Tlp::encode(uint32_t dw[4]) const {
    dw[0] = dw[1] = dw[2] = dw[3] = 0;
    PUT(FMT_TYPE, fmt_type);
    PUT(LENGTH, len_dw & 0x3FF);
    PUT(EP, ep ? 1 : 0);
    if (is_cpl()) {
        PUT(CPL_ID, cpl_id);
        PUT(CPL_STATUS, cpl_status);
        PUT(CPL_BYTE_COUNT, byte_count);
        PUT(CPL_REQ_ID, req_id);
        PUT(CPL_TAG, tag);
        PUT(CPL_LOWER_ADDR, lower_addr);
        return;
    }
    PUT(FIRST_BE, first_be);
    PUT(LAST_BE, last_be);
    PUT(REQ_TAG, tag);
    PUT(REQ_ID, req_id);
    if (is_4dw()) {
        PUT(ADDR64_HI, addr >> 32);
        PUT(ADDR64_LO, (addr >> 2) & 0x3FFFFFFF);
    } else {
        PUT(ADDR32, (addr >> 2) & 0x3FFFFFFF);
    }
}

Tlp Tlp::decode(const uint32_t dw[4]) {
    Tlp t;
    t.fmt_type = static_cast<uint8_t>(GET(FMT_TYPE));
    t.len_dw = static_cast<uint16_t>(GET(LENGTH));
    t.ep = GET(EP) != 0;
    if (t.is_cpl()) {
        t.cpl_id = static_cast<uint16_t>(GET(CPL_ID));
        t.cpl_status = static_cast<uint8_t>(GET(CPL_STATUS));
        t.byte_count = static_cast<uint16_t>(GET(CPL_BYTE_COUNT));
        t.req_id = static_cast<uint16_t>(GET(CPL_REQ_ID));
        t.tag = static_cast<uint8_t>(GET(CPL_TAG));
        t.lower_addr = static_cast<uint8_t>(GET(CPL_LOWER_ADDR));
        return t;
    }
    t.first_be = static_cast<uint8_t>(GET(FIRST_BE));
    t.last_be = static_cast<uint8_t>(GET(LAST_BE));
    t.tag = static_cast<uint8_t>(GET(REQ_TAG));
    t.req_id = static_cast<uint16_t>(GET(REQ_ID));
    if (t.is_4dw())
        t.addr = (GET(ADDR64_HI) << 32) | (GET(ADDR64_LO) << 2);
    else
        t.addr = GET(ADDR32) << 2;
    return t;
}

std::string Tlp::str() const {
    char b[160];
    std::snprintf(b, sizeof b, "TLP ft=%02x len=%u be=%x/%x addr=%llx tag=%u bar=%u bytes=%zu", fmt_type, len_dw,
                  first_be, last_be, static_cast<unsigned long long>(addr), tag, bar, payload.size());
    return b;
}

Tlp Tlp::mwr(uint64_t addr, const std::vector<uint8_t>& bytes, uint8_t bar) {
    Tlp t;
    uint64_t a0 = addr & ~3ull;
    uint64_t end = addr + bytes.size();  // exclusive
    uint64_t a1 = (end + 3) & ~3ull;
    unsigned ndw = static_cast<unsigned>((a1 - a0) / 4);
    t.fmt_type = (addr >> 32) ? VELO_TLP_FMT_TYPE_MWR64 : VELO_TLP_FMT_TYPE_MWR32;
    t.len_dw = static_cast<uint16_t>(ndw);
    t.addr = a0;
    t.bar = bar;
    t.payload.assign(ndw * 4, 0);
    for (size_t i = 0; i < bytes.size(); ++i) t.payload[addr - a0 + i] = bytes[i];
    unsigned lead = static_cast<unsigned>(addr - a0);
    unsigned tail = static_cast<unsigned>(a1 - end);
    if (ndw == 1) {
        t.first_be = static_cast<uint8_t>(((0xF << lead) & (0xF >> tail)) & 0xF);
        t.last_be = 0;
    } else {
        t.first_be = static_cast<uint8_t>((0xF << lead) & 0xF);
        t.last_be = static_cast<uint8_t>(0xF >> tail);
    }
    return t;
}

Tlp Tlp::mrd(uint64_t addr, unsigned len_dw, uint8_t tag, uint8_t bar, uint8_t first_be, uint8_t last_be) {
    Tlp t;
    t.fmt_type = (addr >> 32) ? VELO_TLP_FMT_TYPE_MRD64 : VELO_TLP_FMT_TYPE_MRD32;
    t.len_dw = static_cast<uint16_t>(len_dw);
    t.addr = addr & ~3ull;
    t.tag = tag;
    t.bar = bar;
    t.first_be = first_be;
    t.last_be = len_dw == 1 ? 0 : last_be;
    t.req_id = 0x0100;
    return t;
}

std::vector<std::pair<uint64_t, uint8_t>> mwr_bytes(const Tlp& t) {
    std::vector<std::pair<uint64_t, uint8_t>> out;
    unsigned n = t.len_dw ? t.len_dw : 1024;
    for (unsigned d = 0; d < n; ++d) {
        uint8_t be = 0xF;
        if (d == 0) be = t.first_be;
        if (d == n - 1 && n > 1) be = t.last_be;
        for (unsigned b = 0; b < 4; ++b) {
            if (!((be >> b) & 1)) continue;
            size_t i = d * 4 + b;
            out.emplace_back(t.addr + i, i < t.payload.size() ? t.payload[i] : 0);
        }
    }
    return out;
}

}  // namespace velo::sim
