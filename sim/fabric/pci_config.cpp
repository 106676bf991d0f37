// The NIC's PCI configuration space for QEMU guests (pci_config.hpp).
#include "pci_config.hpp"

#include <stdexcept>

namespace velo::fabric {

namespace {
// PCI 3.0 type-0 header offsets (DW index)
constexpr unsigned kDwId = 0, kDwCmd = 1, kDwClass = 2, kDwMisc = 3, kDwBar0 = 4, kDwSubsys = 11, kDwIntr = 15;
constexpr uint16_t kCmdWritable = 0x0002 | 0x0004 | 0x0040 | 0x0100 | 0x0400;  // MEM, MASTER, PERR, SERR, INTX_DIS
constexpr uint32_t kClassNetworkOther = 0x028000;                              // class 02 (network), sub 80 (other)
}  // namespace

PciConfig::PciConfig(uint16_t vendor, uint16_t device, uint8_t revision, const std::array<unsigned, kBars>& bar_bits)
    : vendor_(vendor), device_(device), revision_(revision), bits_(bar_bits) {
    for (unsigned b : bits_)
        if (b != 0 && (b < 12 || b > 31)) throw std::invalid_argument("PciConfig: a BAR is 2^12..2^31 bytes");
}

void PciConfig::reset() {
    base_.fill(0);
    cmd_ = 0;
    int_line_ = cache_line_ = latency_ = 0;
}

uint32_t PciConfig::dword(unsigned i) const {
    switch (i) {
        case kDwId:
            return static_cast<uint32_t>(device_) << 16 | vendor_;
        case kDwCmd:
            return cmd_;  // status 0: no capability list, no errors recorded
        case kDwClass:
            return kClassNetworkOther << 8 | revision_;
        case kDwMisc:
            return static_cast<uint32_t>(latency_) << 8 | cache_line_;  // header type 0, no BIST
        case kDwSubsys:
            return static_cast<uint32_t>(device_) << 16 | vendor_;
        case kDwIntr:
            return int_line_;  // interrupt pin 0: none
        default:
            if (i >= kDwBar0 && i < kDwBar0 + kBars) {
                const unsigned b = i - kDwBar0;
                // 32-bit memory BAR, not prefetchable (type bits 0): base bits only
                return bits_[b] ? base_[b] & ~((1u << bits_[b]) - 1) : 0;
            }
            return 0;
    }
}

void PciConfig::write_dword(unsigned i, uint32_t v, uint32_t byte_mask) {
    const uint32_t old = dword(i);
    const uint32_t nv = (old & ~byte_mask) | (v & byte_mask);
    if (i == kDwCmd) {
        cmd_ = static_cast<uint16_t>(nv & kCmdWritable);  // status bits: RW1C, none ever set
    } else if (i == kDwMisc) {
        cache_line_ = static_cast<uint8_t>(nv);
        latency_ = static_cast<uint8_t>(nv >> 8);
    } else if (i == kDwIntr) {
        int_line_ = static_cast<uint8_t>(nv);
    } else if (i >= kDwBar0 && i < kDwBar0 + kBars) {
        const unsigned b = i - kDwBar0;
        if (bits_[b]) base_[b] = nv & ~((1u << bits_[b]) - 1);
    }
}

uint32_t PciConfig::read(uint32_t addr, unsigned len) const {
    if ((len != 1 && len != 2 && len != 4) || addr > 255 || (addr & 3) + len > 4) return 0xFFFFFFFFu;
    const uint32_t d = dword(addr >> 2) >> (8 * (addr & 3));
    return len == 4 ? d : d & ((1u << (8 * len)) - 1);
}

void PciConfig::write(uint32_t addr, uint32_t val, unsigned len) {
    if ((len != 1 && len != 2 && len != 4) || addr > 255 || (addr & 3) + len > 4) return;
    const unsigned sh = 8 * (addr & 3);
    const uint32_t m = (len == 4 ? 0xFFFFFFFFu : ((1u << (8 * len)) - 1)) << sh;
    write_dword(addr >> 2, val << sh, m);
}

bool PciConfig::decode(uint64_t a, unsigned* bar, uint64_t* off) const {
    if (!memory_enabled()) return false;
    for (unsigned b = 0; b < kBars; ++b) {
        if (!bits_[b] || base_[b] == 0) continue;
        const uint64_t size = 1ull << bits_[b];
        if (a >= base_[b] && a - base_[b] < size) {
            *bar = b;
            *off = a - base_[b];
            return true;
        }
    }
    return false;
}

}  // namespace velo::fabric
