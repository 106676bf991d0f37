// SPDX-License-Identifier: MIT
// Shared code of the board tools (velo-info, velo-flash): finding VELO boards with libpci, what
// sysfs, procfs and debugfs say about them (driver, BAR sizes, ID block, write combining), the
// board table, the Xilinx .bit header and the bitstream manifest. Every path is taken from a
// Roots object, so the tests run the same code on recorded config-space dumps and a fake sysfs.
// See docs/board-tools.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace velo::board {

// Where the kernel's file systems are. Defaults: /sys, /proc, /sys/kernel/debug.
struct Roots {
    std::string sysfs = "/sys";
    std::string procfs = "/proc";
    std::string debugfs = "/sys/kernel/debug";
    // --root DIR: DIR/sys, DIR/proc, DIR/sys/kernel/debug
    static Roots under(const std::string& prefix);
    std::string pci_dev_dir(const std::string& addr) const { return sysfs + "/bus/pci/devices/" + addr; }
};

// How libpci reaches config space. dump: a file in `lspci -x`/`-xxx`/`-xxxx` format (the libpci
// dump method). Otherwise method (a libpci method name, "" = automatic); when the sysfs root is
// not /sys the linux-sysfs method reads that tree.
struct PciSource {
    std::string dump;
    std::string method;
};

// A PCI address "dddd:bb:dd.f".
struct PciAddr {
    int domain = 0, bus = 0, dev = 0, func = 0;
    std::string str() const;
    bool operator==(const PciAddr& o) const {
        return domain == o.domain && bus == o.bus && dev == o.dev && func == o.func;
    }
    bool operator<(const PciAddr& o) const;
};
// Parses "[domain:]bus:dev.fn" (hex, function decimal 0-7).
std::optional<PciAddr> parse_pci_addr(const std::string& s);

enum class SizeSource { libpci, sysfs_resource, unknown };
const char* size_source_name(SizeSource s);

struct Bar {
    int index = 0;
    uint64_t base = 0;  // address without the flag bits
    uint64_t size = 0;  // 0: unknown or not implemented
    bool io = false, is64 = false, prefetch = false;
    bool present = false;  // the BAR register is implemented (or libpci/sysfs reports a size)
};

struct Link {
    bool present = false;  // the device has a PCI Express capability
    unsigned cur_speed = 0, cur_width = 0, cap_speed = 0, cap_width = 0;
};

struct PciDevice {
    PciAddr addr;
    uint16_t vendor = 0, device = 0;
    uint8_t rev = 0;
    uint32_t class_code = 0;  // base, sub, prog-if
    uint16_t command = 0;
    Bar bars[6];
    SizeSource sizes = SizeSource::unknown;
    Link link;
    bool is_velo() const;
    bool mem_decode() const { return command & 0x2; }
};

// Scans the bus. Fills devs (sorted by address) or returns false with err set (libpci errors such
// as a malformed dump are caught and reported, never exit the program). BAR sizes: from libpci
// when the method knows them (linux-sysfs), else from the sysfs `resource` file of the device.
bool scan(const PciSource& src, const Roots& roots, std::vector<PciDevice>& devs, std::string& err);

// "2.5 GT/s" ... for the PCIe link speed code (1..6), "unknown (code N)" otherwise.
std::string link_speed_name(unsigned code);
// "2 MiB", "16 KiB", "4096 B"
std::string size_name(uint64_t bytes);

// --- sysfs views of one device
// Name of the bound driver ("" = none); nullopt if the device has no sysfs directory.
std::optional<std::string> bound_driver(const Roots& roots, const PciAddr& a);
// The driver's class device for this PCI device ("velo0"), "" if none.
std::string velo_class_dev(const Roots& roots, const PciAddr& a);
// Contents of a small sysfs attribute, without the trailing newline.
std::optional<std::string> read_attr(const std::string& path);
bool write_attr(const std::string& path, const std::string& value, std::string& err);

// --- the ID block at the start of BAR0
struct IdBlock {
    bool ok = false;
    std::string err;     // why it could not be read
    std::string source;  // "driver sysfs (velo0)" or "resource0"
    bool have_magic = false, have_caps = false, have_node = false;
    uint32_t magic = 0, design_version = 0, caps = 0, spec_hash = 0, node_id = 0;
};
// Reads TYPE, DESIGN_VERSION, CAPS, SPEC_HASH and (if the CTRL block is where the spec puts it)
// NODE_ID with 32-bit loads from a read-only mapping of the first page of BAR0 (sysfs resource0;
// a plain file in the tests). Checks that the file is long enough and the magic is 'VELO'.
IdBlock read_id_resource0(const std::string& path);
// Reads design_version, spec_hash, node_id from the driver's attributes in /sys/class/velo/<name>.
IdBlock read_id_driver(const Roots& roots, const std::string& class_dev);
std::string version_name(uint32_t v);  // "0.1.0"

// --- write combining of the send window (BAR2)
struct WcState {
    std::string driver;  // the driver's wc_active ("pat", "mtrr", "none"), "" if not available
    int pat_wc = -1;     // write-combining PAT entries overlapping BAR2; -1: list not readable
    int pat_other = 0;   // other PAT entries (uncached...) overlapping BAR2
    int mtrr_wc = -1;    // write-combining MTRRs overlapping BAR2; -1: /proc/mtrr not readable
    std::string pat_err, mtrr_err;
    std::string verdict() const;  // one line: "active via PAT ...", "not active ...", ...
};
// Counts entries of /sys/kernel/debug/x86/pat_memtype_list ("PAT: [mem 0x..-0x..] write-combining")
// overlapping [lo, hi).
void count_pat(const std::string& text, uint64_t lo, uint64_t hi, int& wc, int& other);
// Counts write-combining lines of /proc/mtrr ("reg01: base=0x0e0000000 (3584MB), size=  256MB,
// count=1: write-combining") overlapping [lo, hi).
int count_mtrr_wc(const std::string& text, uint64_t lo, uint64_t hi);
WcState wc_state(const Roots& roots, const std::string& class_dev, const Bar& send_bar);

// --- boards, bitstreams, manifests
struct BoardInfo {
    const char* name;       // VELO board name (manifests, --board)
    const char* part;       // FPGA part: device + package, no speed grade
    const char* ofl_board;  // openFPGALoader -b name, "" if it has none (then a cable is needed)
    const char* cable;      // default openFPGALoader -c cable, "" = the board's own
    const char* doc;
    bool pcie;  // false: no PCIe host interface (nothing to remove, rescan or read back)
};
const std::vector<BoardInfo>& boards();
const BoardInfo* find_board(const std::string& name);
std::string board_names();  // "ac701, kc705, ..."

// Parts are compared as device + package, lower case, without the "xc" prefix and the speed grade:
// "xc7a200tfbg676-2" and the .bit header's "7a200tfbg676" both become "7a200tfbg676".
std::string normalize_part(const std::string& part);

struct BitHeader {
    bool present = false;  // the file starts with the Xilinx .bit header
    std::string design, part, date, time;
    uint32_t data_len = 0;
};
// Parses the .bit header: 00 09 0f f0 0f f0 0f f0 0f f0 00 00 01, then the fields 'a' design
// name, 'b' part, 'c' date, 'd' time (16-bit big-endian length, NUL-terminated string) and 'e'
// (32-bit length of the configuration data, which must fill the rest of the file and contain the
// sync word AA 99 55 66). Returns false with err on a malformed header; present=false (and true)
// when the file does not start with the header at all.
bool parse_bit_header(const std::vector<uint8_t>& file, BitHeader& h, std::string& err);

struct Manifest {
    int format = 0;
    std::string board, part, bitstream;
    uint32_t design_version = 0, spec_hash = 0;
    bool have_crc = false;
    uint32_t crc32 = 0;
};
// Parses the sidecar manifest (JSON object, see docs/board-tools.md).
bool parse_manifest(const std::string& text, Manifest& m, std::string& err);
std::string manifest_json(const Manifest& m);

uint32_t crc32(const std::vector<uint8_t>& data);
bool read_file(const std::string& path, std::vector<uint8_t>& out, std::string& err);
bool read_text(const std::string& path, std::string& out, std::string& err);
std::string hex32(uint32_t v);  // "0x%08x"
// "0x1234abcd" or decimal, at most 32 bits, nothing else on the line
bool parse_u32(const std::string& s, uint32_t& v);

}  // namespace velo::board
