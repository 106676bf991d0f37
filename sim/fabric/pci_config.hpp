// The PCI configuration space of a VELO NIC that a QEMU guest probes (through the device channel
// of guest.cpp): a type-0 header with the spec's vendor and device id, 32-bit memory BARs 0, 2
// and 4 with the sizing protocol, the command register (memory decode, bus master) and no
// capabilities: no MSI or MSI-X, because the device process cannot deliver one to an emulated
// CPU (docs/cosim.md), and no interrupt pin.
#pragma once

#include <array>
#include <cstdint>

namespace velo::fabric {

class PciConfig {
  public:
    static constexpr unsigned kBars = 6;
    // bar_bits[i]: log2 of BAR i's size (12..31), 0 if BAR i is not implemented.
    PciConfig(uint16_t vendor, uint16_t device, uint8_t revision, const std::array<unsigned, kBars>& bar_bits);

    // Accesses of len 1, 2 or 4 bytes at addr (0..255, not crossing a DW); others read as all
    // ones and are ignored on write, as a root complex does with a malformed config access.
    uint32_t read(uint32_t addr, unsigned len) const;
    void write(uint32_t addr, uint32_t val, unsigned len);
    void reset();  // the values after a device reset (BARs unassigned, decode and DMA off)

    bool memory_enabled() const { return cmd_ & 0x2; }
    bool bus_master() const { return cmd_ & 0x4; }
    // The BAR that decodes the guest physical address a (with memory decode on), and the offset
    // into it; false if none does.
    bool decode(uint64_t a, unsigned* bar, uint64_t* off) const;
    uint64_t bar_base(unsigned bar) const { return base_[bar]; }
    uint64_t bar_size(unsigned bar) const { return bits_[bar] ? 1ull << bits_[bar] : 0; }

  private:
    uint32_t dword(unsigned i) const;
    void write_dword(unsigned i, uint32_t v, uint32_t byte_mask);

    uint16_t vendor_, device_;
    uint8_t revision_;
    std::array<unsigned, kBars> bits_;
    std::array<uint32_t, kBars> base_{};
    uint16_t cmd_ = 0;
    uint8_t int_line_ = 0, cache_line_ = 0, latency_ = 0;
};

}  // namespace velo::fabric
