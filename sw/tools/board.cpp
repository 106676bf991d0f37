// SPDX-License-Identifier: MIT
// Shared code of the board tools; see board.hpp and docs/board-tools.md.
#include "board.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

extern "C" {
#include <pci/pci.h>
}

#include <nlohmann/json.hpp>

#include "velo/velo_hw.h"

namespace velo::board {

// ---------------------------------------------------------------- small helpers

std::string hex32(uint32_t v) {
    char b[16];
    snprintf(b, sizeof b, "0x%08x", v);
    return b;
}

bool read_file(const std::string& path, std::vector<uint8_t>& out, std::string& err) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        err = path + ": " + strerror(errno);
        return false;
    }
    out.clear();
    uint8_t buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            err = path + ": " + strerror(errno);
            close(fd);
            return false;
        }
        if (n == 0) break;
        out.insert(out.end(), buf, buf + n);
    }
    close(fd);
    return true;
}

bool read_text(const std::string& path, std::string& out, std::string& err) {
    std::vector<uint8_t> b;
    if (!read_file(path, b, err)) return false;
    out.assign(b.begin(), b.end());
    return true;
}

std::optional<std::string> read_attr(const std::string& path) {
    std::string s, err;
    if (!read_text(path, s, err)) return std::nullopt;
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

bool write_attr(const std::string& path, const std::string& value, std::string& err) {
    int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        err = path + ": " + strerror(errno);
        return false;
    }
    ssize_t n = write(fd, value.data(), value.size());
    int e = errno;
    if (close(fd) != 0 && n >= 0) {
        n = -1;
        e = errno;
    }
    if (n != (ssize_t)value.size()) {
        err = path + ": " + (n < 0 ? strerror(e) : "short write");
        return false;
    }
    return true;
}

static bool parse_u64(const std::string& s, uint64_t& v, int base = 0) {
    if (s.empty() || s[0] == '-' || s[0] == '+' || s[0] == ' ') return false;
    errno = 0;
    char* end = nullptr;
    unsigned long long x = strtoull(s.c_str(), &end, base);
    if (errno || end == s.c_str() || *end) return false;
    v = x;
    return true;
}

bool parse_u32(const std::string& s, uint32_t& v) {
    uint64_t x;
    if (!parse_u64(s, x) || x > 0xffffffffull) return false;
    v = (uint32_t)x;
    return true;
}

static std::string basename_of(const std::string& p) {
    size_t k = p.find_last_of('/');
    return k == std::string::npos ? p : p.substr(k + 1);
}

static std::optional<std::string> link_name(const std::string& path) {
    char buf[4096];
    ssize_t n = readlink(path.c_str(), buf, sizeof buf - 1);
    if (n < 0) return std::nullopt;
    buf[n] = 0;
    return basename_of(buf);
}

uint32_t crc32(const std::vector<uint8_t>& data) {
    static uint32_t table[256];
    static bool init = false;
    if (!init) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
        init = true;
    }
    uint32_t c = 0xffffffffu;
    for (uint8_t b : data) c = table[(c ^ b) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

// ---------------------------------------------------------------- roots, addresses

Roots Roots::under(const std::string& prefix) {
    Roots r;
    r.sysfs = prefix + "/sys";
    r.procfs = prefix + "/proc";
    r.debugfs = prefix + "/sys/kernel/debug";
    return r;
}

std::string PciAddr::str() const {
    char b[32];
    snprintf(b, sizeof b, "%04x:%02x:%02x.%d", domain, bus, dev, func);
    return b;
}

bool PciAddr::operator<(const PciAddr& o) const {
    if (domain != o.domain) return domain < o.domain;
    if (bus != o.bus) return bus < o.bus;
    if (dev != o.dev) return dev < o.dev;
    return func < o.func;
}

std::optional<PciAddr> parse_pci_addr(const std::string& s) {
    // [dddd:]bb:dd.f
    PciAddr a;
    std::string rest = s;
    size_t c1 = s.find(':'), c2 = s.find(':', c1 == std::string::npos ? 0 : c1 + 1);
    auto hex = [](const std::string& t, int maxv, int& out) {
        if (t.empty() || t.size() > 8) return false;
        for (char ch : t)
            if (!isxdigit((unsigned char)ch)) return false;
        unsigned long v = strtoul(t.c_str(), nullptr, 16);
        if (v > (unsigned long)maxv) return false;
        out = (int)v;
        return true;
    };
    if (c1 == std::string::npos) return std::nullopt;
    if (c2 != std::string::npos) {
        if (!hex(s.substr(0, c1), 0xffff, a.domain)) return std::nullopt;
        rest = s.substr(c1 + 1);
    }
    size_t c = rest.find(':'), dot = rest.find('.');
    if (c == std::string::npos || dot == std::string::npos || dot < c) return std::nullopt;
    if (!hex(rest.substr(0, c), 0xff, a.bus) || !hex(rest.substr(c + 1, dot - c - 1), 0x1f, a.dev)) return std::nullopt;
    std::string f = rest.substr(dot + 1);
    if (f.size() != 1 || f[0] < '0' || f[0] > '7') return std::nullopt;
    a.func = f[0] - '0';
    return a;
}

const char* size_source_name(SizeSource s) {
    switch (s) {
        case SizeSource::libpci:
            return "libpci";
        case SizeSource::sysfs_resource:
            return "sysfs resource file";
        default:
            return "unknown";
    }
}

bool PciDevice::is_velo() const {
    return vendor == VELO_PCI_VENDOR_ID && device == VELO_PCI_DEVICE_ID;
}

std::string link_speed_name(unsigned code) {
    static const char* names[] = {"", "2.5 GT/s", "5.0 GT/s", "8.0 GT/s", "16.0 GT/s", "32.0 GT/s", "64.0 GT/s"};
    if (code >= 1 && code <= 6) return names[code];
    return "unknown (code " + std::to_string(code) + ")";
}

std::string size_name(uint64_t b) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && b >= 1024 && b % 1024 == 0) {
        b /= 1024;
        u++;
    }
    return std::to_string(b) + " " + units[u];
}

// ---------------------------------------------------------------- libpci

namespace {
// libpci reports fatal errors through a->error, which must not return: the default one exits the
// program. Ours records the message and jumps back into scan_raw(). Only C frames (libpci) and
// scan_raw's trivially destructible locals lie between the setjmp and the longjmp.
std::jmp_buf g_pci_jmp;
char g_pci_err[512];

[[noreturn]] void pci_error_cb(char* msg, ...) {
    va_list ap;
    va_start(ap, msg);
    vsnprintf(g_pci_err, sizeof g_pci_err, msg, ap);
    va_end(ap);
    std::longjmp(g_pci_jmp, 1);
}

void pci_warning_cb(char* msg, ...) {
    va_list ap;
    va_start(ap, msg);
    fputs("velo: libpci: ", stderr);
    vfprintf(stderr, msg, ap);
    fputc('\n', stderr);
    va_end(ap);
}

struct RawDev {
    int domain, bus, dev, func;
    unsigned known;
    uint16_t vendor, device, command;
    uint8_t rev, hdr;
    uint32_t class_code;
    uint64_t base[6], size[6];
    int exp;  // position of the PCIe capability, 0 = none
    uint32_t lnkcap;
    uint16_t lnksta;
};

// Everything that calls into libpci; returns false after a libpci error (message in g_pci_err).
bool scan_raw(pci_access* a, std::vector<RawDev>* out) {
    if (setjmp(g_pci_jmp)) return false;
    pci_init(a);
    pci_scan_bus(a);
    for (pci_dev* d = a->devices; d; d = d->next) {
        RawDev r;
        memset(&r, 0, sizeof r);
        r.known = (unsigned)pci_fill_info(d, PCI_FILL_IDENT | PCI_FILL_BASES | PCI_FILL_SIZES | PCI_FILL_CLASS);
        r.domain = d->domain;
        r.bus = d->bus;
        r.dev = d->dev;
        r.func = d->func;
        r.vendor = d->vendor_id;
        r.device = d->device_id;
        r.command = pci_read_word(d, PCI_COMMAND);
        r.rev = pci_read_byte(d, PCI_REVISION_ID);
        r.hdr = pci_read_byte(d, PCI_HEADER_TYPE) & 0x7f;
        r.class_code = (uint32_t)pci_read_byte(d, PCI_CLASS_DEVICE + 1) << 16 |
                       (uint32_t)pci_read_byte(d, PCI_CLASS_DEVICE) << 8 | pci_read_byte(d, PCI_CLASS_PROG);
        for (int i = 0; i < 6; i++) {
            r.base[i] = d->base_addr[i];
            r.size[i] = d->size[i];
        }
        pci_cap* cap = pci_find_cap(d, PCI_CAP_ID_EXP, PCI_CAP_NORMAL);
        if (cap) {
            r.exp = (int)cap->addr;
            r.lnkcap = pci_read_long(d, (int)cap->addr + PCI_EXP_LNKCAP);
            r.lnksta = pci_read_word(d, (int)cap->addr + PCI_EXP_LNKSTA);
        }
        out->push_back(r);
    }
    return true;
}

// BAR sizes and flags of the sysfs `resource` file: "start end flags" per line, hex.
bool sysfs_resources(const std::string& path, uint64_t size[6], uint64_t flags[6]) {
    std::string text, err;
    if (!read_text(path, text, err)) return false;
    std::istringstream in(text);
    std::string line;
    for (int i = 0; i < 6; i++) {
        if (!std::getline(in, line)) return false;
        unsigned long long s, e, f;
        if (sscanf(line.c_str(), "%llx %llx %llx", &s, &e, &f) != 3) return false;
        size[i] = e > s ? e - s + 1 : 0;
        flags[i] = f;
    }
    return true;
}
}  // namespace

bool scan(const PciSource& src, const Roots& roots, std::vector<PciDevice>& devs, std::string& err) {
    devs.clear();
    pci_access* a = pci_alloc();
    a->error = pci_error_cb;
    a->warning = pci_warning_cb;
    std::string sysfs_bus = roots.sysfs + "/bus/pci";
    if (!src.dump.empty()) {
        a->method = PCI_ACCESS_DUMP;
        pci_set_param(a, const_cast<char*>("dump.name"), const_cast<char*>(src.dump.c_str()));
    } else {
        if (!src.method.empty()) {
            int m = pci_lookup_method(const_cast<char*>(src.method.c_str()));
            if (m < 0) {
                err = "unknown libpci access method '" + src.method + "'";
                pci_cleanup(a);
                return false;
            }
            a->method = (unsigned)m;
        } else if (roots.sysfs != "/sys") {
            a->method = PCI_ACCESS_SYS_BUS_PCI;
        }
        if (roots.sysfs != "/sys") {
            struct stat st;
            if (stat((sysfs_bus + "/devices").c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
                err = sysfs_bus + "/devices: not a directory (is " + roots.sysfs + " a sysfs tree?)";
                pci_cleanup(a);
                return false;
            }
        }
        pci_set_param(a, const_cast<char*>("sysfs.path"), const_cast<char*>(sysfs_bus.c_str()));
    }
    std::vector<RawDev> raw;
    bool ok = scan_raw(a, &raw);
    pci_cleanup(a);
    if (!ok) {
        err = std::string("libpci: ") + g_pci_err;
        return false;
    }
    for (const RawDev& r : raw) {
        PciDevice d;
        d.addr = PciAddr{r.domain, r.bus, r.dev, r.func};
        d.vendor = r.vendor;
        d.device = r.device;
        d.rev = r.rev;
        d.class_code = r.class_code;
        d.command = r.command;
        uint64_t rsize[6] = {0}, rflags[6] = {0};
        bool have_libpci = r.known & PCI_FILL_SIZES;
        bool have_res = !have_libpci && sysfs_resources(roots.pci_dev_dir(d.addr.str()) + "/resource", rsize, rflags);
        d.sizes = have_libpci ? SizeSource::libpci : have_res ? SizeSource::sysfs_resource : SizeSource::unknown;
        int nbars = r.hdr == 0 ? 6 : r.hdr == 1 ? 2 : 0;
        for (int i = 0; i < 6; i++) {
            Bar& b = d.bars[i];
            b.index = i;
            if (i >= nbars) continue;
            uint64_t v = r.base[i];
            b.io = v & PCI_BASE_ADDRESS_SPACE_IO;
            b.base = v & (b.io ? PCI_ADDR_IO_MASK : PCI_ADDR_MEM_MASK);
            b.is64 = !b.io && (v & PCI_BASE_ADDRESS_MEM_TYPE_MASK) == PCI_BASE_ADDRESS_MEM_TYPE_64;
            b.prefetch = !b.io && (v & PCI_BASE_ADDRESS_MEM_PREFETCH);
            b.size = have_libpci ? r.size[i] : have_res ? rsize[i] : 0;
            b.present = b.size != 0 || b.base != 0;
            if (b.is64 && i + 1 < 6) {
                // the upper half of a 64-bit BAR is not a BAR of its own
                d.bars[i + 1].index = i + 1;
                i++;
            }
        }
        if (r.exp) {
            d.link.present = true;
            d.link.cap_speed = r.lnkcap & PCI_EXP_LNKCAP_SPEED;
            d.link.cap_width = (r.lnkcap & PCI_EXP_LNKCAP_WIDTH) >> 4;
            d.link.cur_speed = r.lnksta & PCI_EXP_LNKSTA_SPEED;
            d.link.cur_width = (r.lnksta & PCI_EXP_LNKSTA_WIDTH) >> 4;
        }
        devs.push_back(d);
    }
    std::sort(devs.begin(), devs.end(), [](const PciDevice& x, const PciDevice& y) { return x.addr < y.addr; });
    return true;
}

// ---------------------------------------------------------------- sysfs views

std::optional<std::string> bound_driver(const Roots& roots, const PciAddr& a) {
    std::string dir = roots.pci_dev_dir(a.str());
    struct stat st;
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
    auto l = link_name(dir + "/driver");
    return l ? *l : std::string();
}

std::string velo_class_dev(const Roots& roots, const PciAddr& a) {
    std::string cls = roots.sysfs + "/class/velo";
    std::vector<std::string> names;
    if (DIR* d = opendir(cls.c_str())) {
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.') names.push_back(e->d_name);
        closedir(d);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
        auto l = link_name(cls + "/" + n + "/device");
        if (l && *l == a.str()) return n;
    }
    return "";
}

// ---------------------------------------------------------------- ID block

std::string version_name(uint32_t v) {
    return std::to_string((v >> 16) & 0xff) + "." + std::to_string((v >> 8) & 0xff) + "." + std::to_string(v & 0xff);
}

IdBlock read_id_resource0(const std::string& path) {
    IdBlock id;
    id.source = "resource0";
    // the ID block and the CTRL block's NODE_ID: everything read lies below this
    const size_t need = VELO_REG_CTRL_NODE_ID + 4;
    const size_t map_len = 4096;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        id.err = path + ": " + strerror(errno);
        return id;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        id.err = path + ": " + strerror(errno);
        close(fd);
        return id;
    }
    if (S_ISDIR(st.st_mode)) {
        id.err = path + ": is a directory";
        close(fd);
        return id;
    }
    if (S_ISREG(st.st_mode) && (size_t)st.st_size < need) {
        id.err = path + ": " + std::to_string(st.st_size) + " bytes, the ID block needs " + std::to_string(need);
        close(fd);
        return id;
    }
    void* p = mmap(nullptr, map_len, PROT_READ, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        id.err = path + ": mmap: " + strerror(e);
        if (e == EINVAL && !S_ISREG(st.st_mode)) id.err += " (a driver holds BAR0 and the kernel has IO_STRICT_DEVMEM)";
        return id;
    }
    // 32-bit loads only: BAR0 answers 1-DW reads
    const volatile uint32_t* r = static_cast<const volatile uint32_t*>(p);
    auto rd = [&](unsigned off) { return r[off / 4]; };
    id.magic = rd(VELO_BLK_ID_BASE + VELO_BLKHDR_TYPE);
    id.have_magic = true;
    if (id.magic != VELO_ID_MAGIC) {
        id.err =
            "bad magic " + hex32(id.magic) + " at BAR0+0 (expected " + hex32(VELO_ID_MAGIC) + " 'VELO'): " +
            (id.magic == 0xffffffffu ? "the device does not answer (link down or BAR disabled)" : "not a VELO design");
        munmap(p, map_len);
        return id;
    }
    id.design_version = rd(VELO_BLK_ID_BASE + VELO_REG_ID_DESIGN_VERSION);
    id.caps = rd(VELO_BLK_ID_BASE + VELO_REG_ID_CAPS);
    id.spec_hash = rd(VELO_BLK_ID_BASE + VELO_REG_ID_SPEC_HASH);
    id.have_caps = true;
    if (rd(VELO_BLK_CTRL_BASE + VELO_BLKHDR_TYPE) == VELO_BLK_CTRL_TYPE) {
        unsigned nb = (unsigned)VELO_FIELD_GET(VELO_REG_ID_CAPS_NODE_BITS, id.caps);
        uint32_t mask = nb >= 32 ? 0xffffffffu : (1u << nb) - 1;
        id.node_id = rd(VELO_REG_CTRL_NODE_ID) & mask;
        id.have_node = true;
    }
    munmap(p, map_len);
    id.ok = true;
    return id;
}

IdBlock read_id_driver(const Roots& roots, const std::string& class_dev) {
    IdBlock id;
    id.source = "driver sysfs (" + class_dev + ")";
    std::string dir = roots.sysfs + "/class/velo/" + class_dev + "/";
    auto get = [&](const char* name, uint32_t& v) {
        auto s = read_attr(dir + name);
        if (!s) {
            id.err = dir + name + ": " + strerror(errno);
            return false;
        }
        if (!parse_u32(*s, v)) {
            id.err = dir + name + ": unexpected contents '" + *s + "'";
            return false;
        }
        return true;
    };
    if (!get("design_version", id.design_version) || !get("spec_hash", id.spec_hash) || !get("node_id", id.node_id))
        return id;
    id.have_node = true;
    id.ok = true;
    return id;
}

// ---------------------------------------------------------------- write combining

void count_pat(const std::string& text, uint64_t lo, uint64_t hi, int& wc, int& other) {
    wc = other = 0;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        size_t k = line.find("[mem ");
        if (k == std::string::npos) continue;
        unsigned long long s, e;
        int n = 0;
        if (sscanf(line.c_str() + k, "[mem %llx-%llx]%n", &s, &e, &n) != 2 || n == 0) continue;
        if (!(s < hi && e > lo)) continue;  // the kernel prints [start, end)
        std::string type = line.substr(k + (size_t)n);
        type.erase(0, type.find_first_not_of(' '));
        if (type == "write-combining")
            wc++;
        else
            other++;
    }
}

int count_mtrr_wc(const std::string& text, uint64_t lo, uint64_t hi) {
    int wc = 0;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        size_t b = line.find("base="), z = line.find("size=");
        if (b == std::string::npos || z == std::string::npos) continue;
        unsigned long long base, size;
        char unit = 0;
        if (sscanf(line.c_str() + b, "base=%llx", &base) != 1) continue;
        if (sscanf(line.c_str() + z, "size=%llu%c", &size, &unit) != 2) continue;
        size <<= unit == 'G' ? 30 : unit == 'M' ? 20 : unit == 'K' ? 10 : 0;
        if (line.find("write-combining") == std::string::npos) continue;
        if (base < hi && base + size > lo) wc++;
    }
    return wc;
}

WcState wc_state(const Roots& roots, const std::string& class_dev, const Bar& bar) {
    WcState w;
    if (!class_dev.empty()) {
        auto s = read_attr(roots.sysfs + "/class/velo/" + class_dev + "/wc_active");
        if (s) w.driver = *s;
    }
    uint64_t lo = bar.base, hi = bar.base + (bar.size ? bar.size : 1);
    std::string text, err;
    if (read_text(roots.debugfs + "/x86/pat_memtype_list", text, err))
        count_pat(text, lo, hi, w.pat_wc, w.pat_other);
    else
        w.pat_err = err;
    if (read_text(roots.procfs + "/mtrr", text, err))
        w.mtrr_wc = count_mtrr_wc(text, lo, hi);
    else
        w.mtrr_err = err;
    return w;
}

std::string WcState::verdict() const {
    if (pat_wc > 0) return "active via PAT";
    if (mtrr_wc > 0) return "active via MTRR";
    if (driver == "pat" || driver == "mtrr") {
        if (pat_wc < 0 && mtrr_wc < 0) return "active via " + driver + " (reported by the driver)";
        return "set up by the driver (" + driver + "), no write-combining mapping of BAR2 at the moment";
    }
    if (driver == "none") return "not active (driver: none)";
    if (!driver.empty()) return "unknown (driver reports '" + driver + "')";
    if (pat_wc == 0 || mtrr_wc == 0) return "not active";
    return "unknown (no driver attribute; PAT list and MTRRs not readable)";
}

// ---------------------------------------------------------------- boards

const std::vector<BoardInfo>& boards() {
    // Boards velo-flash knows. part: device + package (the speed grade does not matter for the
    // bitstream check); ofl_board: openFPGALoader's -b name; cable: default -c when the board has
    // no openFPGALoader entry (an external JTAG adapter). The iCE40 board has no PCIe (a UART host
    // bridge): velo-flash checks its image and programs it, and there is no device to rescan; its
    // name and part are those the open flow writes into the image's manifest (fpga/ice40/flow.py).
    static const std::vector<BoardInfo> t = {
        {"ac701", "xc7a200tfbg676", "ac701", "", "Xilinx AC701 (Artix-7 200T, PCIe Gen2 x4)", true},
        {"kc705", "xc7k325tffg900", "kc705", "", "Xilinx KC705 (Kintex-7 325T, PCIe Gen2 x8)", true},
        {"acorn-cle215", "xc7a200tsbg484", "acornCle215", "", "SQRL Acorn CLE-215(+) (Artix-7 200T, M.2 x4)", true},
        {"litefury", "xc7a100tfgg484", "", "digilent_hs2", "RHS LiteFury (Artix-7 100T, M.2 x4)", true},
        {"nitefury", "xc7a200tfbg484", "", "digilent_hs2", "RHS NiteFury (Artix-7 200T, M.2 x4)", true},
        {"ice40-hx8k-breakout", "ice40hx8k-ct256", "ice40_generic", "",
         "Lattice iCE40-HX8K breakout board (UART host bridge, no PCIe)", false},
    };
    return t;
}

const BoardInfo* find_board(const std::string& name) {
    for (const BoardInfo& b : boards())
        if (name == b.name) return &b;
    return nullptr;
}

std::string board_names() {
    std::string s;
    for (const BoardInfo& b : boards()) s += (s.empty() ? "" : ", ") + std::string(b.name);
    return s;
}

std::string normalize_part(const std::string& part) {
    std::string s;
    for (char c : part) s += (char)tolower((unsigned char)c);
    s = s.substr(0, s.find('-'));
    if (s.compare(0, 2, "xc") == 0) s.erase(0, 2);
    return s;
}

// ---------------------------------------------------------------- .bit header

bool parse_bit_header(const std::vector<uint8_t>& f, BitHeader& h, std::string& err) {
    static const uint8_t magic[13] = {0x00, 0x09, 0x0f, 0xf0, 0x0f, 0xf0, 0x0f, 0xf0, 0x0f, 0xf0, 0x00, 0x00, 0x01};
    h = BitHeader();
    if (f.size() < 2 || f[0] != 0x00 || f[1] != 0x09) return true;  // no header
    if (f.size() < sizeof magic || memcmp(f.data(), magic, sizeof magic) != 0) {
        err = "malformed .bit header (bad preamble)";
        return false;
    }
    h.present = true;
    size_t p = sizeof magic;
    bool seen[4] = {false, false, false, false};
    for (;;) {
        if (p >= f.size()) {
            err = "malformed .bit header: ends before the configuration data (field 'e')";
            return false;
        }
        uint8_t key = f[p++];
        if (key == 'e') {
            if (p + 4 > f.size()) {
                err = "malformed .bit header: truncated length of field 'e'";
                return false;
            }
            h.data_len = (uint32_t)f[p] << 24 | (uint32_t)f[p + 1] << 16 | (uint32_t)f[p + 2] << 8 | f[p + 3];
            p += 4;
            if (h.data_len != f.size() - p) {
                err = ".bit header says " + std::to_string(h.data_len) + " bytes of configuration data, the file has " +
                      std::to_string(f.size() - p) + " (truncated or corrupt bitstream)";
                return false;
            }
            static const uint8_t sync[4] = {0xaa, 0x99, 0x55, 0x66};
            auto it = std::search(f.begin() + (long)p, f.begin() + (long)std::min(f.size(), p + 1024), sync, sync + 4);
            if (it == f.begin() + (long)std::min(f.size(), p + 1024)) {
                err = "no sync word (AA 99 55 66) at the start of the configuration data";
                return false;
            }
            break;
        }
        if (key < 'a' || key > 'd') {
            char b[96];
            snprintf(b, sizeof b, "malformed .bit header: unknown field 0x%02x at offset %zu", key, p - 1);
            err = b;
            return false;
        }
        if (p + 2 > f.size()) {
            err = std::string("malformed .bit header: truncated field '") + (char)key + "'";
            return false;
        }
        size_t len = (size_t)f[p] << 8 | f[p + 1];
        p += 2;
        if (p + len > f.size()) {
            err = std::string("malformed .bit header: field '") + (char)key + "' runs past the end of the file";
            return false;
        }
        std::string v(f.begin() + (long)p, f.begin() + (long)(p + len));
        while (!v.empty() && v.back() == '\0') v.pop_back();
        p += len;
        seen[key - 'a'] = true;
        (key == 'a' ? h.design : key == 'b' ? h.part : key == 'c' ? h.date : h.time) = v;
    }
    if (!seen[1] || h.part.empty()) {
        err = "malformed .bit header: no part name (field 'b')";
        return false;
    }
    return true;
}

// ---------------------------------------------------------------- manifest (JSON, nlohmann-json)

namespace {
using ojson = nlohmann::ordered_json;

// "line L column C" of a byte offset (columns count bytes from 1).
std::string where(const std::string& t, size_t off) {
    int line = 1, col = 1;
    for (size_t i = 0; i < off && i < t.size(); i++) {
        if (t[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    return "line " + std::to_string(line) + " column " + std::to_string(col);
}

// Start of the token that ends at byte `end` (a string, a number or literal, or one structural
// character): the parser's errors and the duplicate-key check point at a token's first byte.
size_t token_start(const std::string& t, size_t end) {
    if (end == 0 || end > t.size()) return std::min(end, t.size());
    size_t p = end - 1;
    if (t[p] == '"') {
        // back to the opening quote: the first quote not escaped by an odd run of backslashes
        while (p > 0) {
            size_t q = --p, bs = 0;
            if (t[q] != '"') continue;
            while (q > bs && t[q - bs - 1] == '\\') bs++;
            if (bs % 2 == 0) return q;
        }
        return 0;
    }
    while (p > 0 && (isalnum((unsigned char)t[p - 1]) || strchr(".+-", t[p - 1]))) p--;
    return p;
}

// Turns one of nlohmann-json's parse errors (byte = bytes read, one past the end for the end of
// the input) into "line L column C: what", the position being the offending token's first byte
// (for a bad character inside a string: that character, or the end of the escape).
std::string parse_error_text(const std::string& t, const ojson::parse_error& e) {
    const std::string m = e.what();
    auto has = [&](const char* s) { return m.find(s) != std::string::npos; };
    const size_t end = std::min<size_t>(e.byte, t.size());
    const bool eof = e.byte > t.size();
    size_t at = eof ? t.size() : token_start(t, end);
    const bool bad_literal = has("invalid literal");
    if (bad_literal) {
        // the lexer stops at the first character that does not continue a literal; where a value
        // was expected, the error is at the start of the word
        at = eof ? t.size() : end - 1;
        if (has("while parsing value -"))
            while (at > 0 && isalpha((unsigned char)t[at - 1])) at--;
    }
    std::string what;
    if (has("; expected end of input")) {
        what = "unexpected text after the JSON value";
    } else if (has("invalid string: control character")) {
        at = end - 1;
        what = "control character in a string";
    } else if (has("invalid string: missing closing quote")) {
        at = t.size();
        what = "unterminated string";
    } else if (has("invalid string: forbidden character after backslash")) {
        at = end;
        what = std::string("bad escape \\") + t[end - 1];
    } else if (has("must be followed by 4 hex digits")) {
        at = eof ? t.rfind("\\u") + 2 : end;
        what = eof ? "truncated \\u escape" : "bad \\u escape";
    } else if (has("invalid string: ")) {
        at = end;
        what = m.substr(m.find("invalid string: ") + 16);
        what = what.substr(0, what.find("; last read"));
    } else if (bad_literal && has("while parsing value -") && at < t.size()) {
        what = std::string("unexpected character '") + t[at] + "'";
    } else if (has("invalid number")) {
        what = "bad number";
    } else if (has("while parsing object separator")) {
        what = "expected ':'";
    } else if (has("while parsing object key")) {
        what = "expected a string key";
    } else if (has("while parsing object -")) {
        what = "expected ',' or '}'";
    } else if (has("while parsing array -")) {
        what = "expected ',' or ']'";
    } else if (eof) {
        what = "unexpected end of input";
    } else {
        what = std::string("unexpected character '") + t[at] + "'";
    }
    return where(t, at) + ": " + what;
}

// Parses text into j. nlohmann-json keeps the last of repeated keys and nests without a limit: the
// callback refuses both (a manifest with two "board" keys is ambiguous), at the first offender.
bool parse_json(const std::string& text, ojson& j, std::string& err) {
    std::istringstream in(text);
    std::vector<std::vector<std::string>> keys;  // the keys of each open object
    std::string first;
    auto note = [&](size_t off, const std::string& what) {
        if (first.empty()) first = where(text, off) + ": " + what;
    };
    auto cb = [&](int depth, ojson::parse_event_t ev, ojson& v) {
        // bytes the parser has taken (from the buffer: tellg() would fail once the end was read)
        const size_t read = (size_t)in.rdbuf()->pubseekoff(0, std::ios_base::cur, std::ios_base::in);
        if (ev == ojson::parse_event_t::object_start || ev == ojson::parse_event_t::array_start) {
            if (depth > 32) note(read - 1, "nested too deeply");
            if (ev == ojson::parse_event_t::object_start) keys.emplace_back();
        } else if (ev == ojson::parse_event_t::value) {
            // a number ends where the lexer read one character past it
            if (depth > 32) note(token_start(text, v.is_number() && !in.eof() ? read - 1 : read), "nested too deeply");
        } else if (ev == ojson::parse_event_t::object_end) {
            keys.pop_back();
        } else if (ev == ojson::parse_event_t::key) {
            std::vector<std::string>& seen = keys.back();
            const std::string& k = v.get_ref<const std::string&>();
            if (std::find(seen.begin(), seen.end(), k) != seen.end())
                note(token_start(text, read), "duplicate key \"" + k + "\"");
            seen.push_back(k);
        }
        return true;
    };
    try {
        j = ojson::parse(in, cb);
    } catch (const ojson::parse_error& e) {
        // the callback's error, if any, lies before the parser's
        err = first.empty() ? parse_error_text(text, e) : first;
        return false;
    }
    if (!first.empty()) {
        err = first;
        return false;
    }
    return true;
}
}  // namespace

bool parse_manifest(const std::string& text, Manifest& m, std::string& err) {
    m = Manifest();
    ojson j;
    if (!parse_json(text, j, err)) return false;
    if (!j.is_object()) {
        err = "the manifest must be a JSON object";
        return false;
    }
    auto missing = [&](const char* k, bool required) {
        if (required) err = std::string("missing \"") + k + "\"";
        return !required;
    };
    auto str = [&](const char* k, std::string& out, bool required) {
        auto v = j.find(k);
        if (v == j.end()) return missing(k, required);
        if (!v->is_string() || v->get_ref<const std::string&>().empty()) {
            err = std::string("\"") + k + "\" must be a non-empty string";
            return false;
        }
        out = v->get<std::string>();
        return true;
    };
    auto u32 = [&](const char* k, uint32_t& out, bool required, bool* have) {
        auto v = j.find(k);
        if (v == j.end()) return missing(k, required);
        bool ok = false;
        if (v->is_string()) {
            ok = parse_u32(v->get<std::string>(), out);
        } else if (v->is_number_unsigned() && v->get<uint64_t>() <= 0xffffffffull) {
            out = (uint32_t)v->get<uint64_t>();
            ok = true;
        }
        if (!ok) {
            err = std::string("\"") + k + "\" must be a 32-bit number (\"0x1234abcd\" or decimal)";
            return false;
        }
        if (have) *have = true;
        return true;
    };
    uint32_t fmt = 0;
    if (!u32("velo_manifest", fmt, true, nullptr)) return false;
    if (fmt != 1) {
        err = "unsupported manifest format " + std::to_string(fmt) + " (this velo-flash reads format 1)";
        return false;
    }
    m.format = (int)fmt;
    return str("board", m.board, true) && str("part", m.part, true) && str("bitstream", m.bitstream, false) &&
           u32("design_version", m.design_version, true, nullptr) && u32("spec_hash", m.spec_hash, true, nullptr) &&
           u32("crc32", m.crc32, false, &m.have_crc);
}

std::string manifest_json(const Manifest& m) {
    ojson j;
    j["velo_manifest"] = 1;
    j["board"] = m.board;
    j["part"] = m.part;
    if (!m.bitstream.empty()) j["bitstream"] = m.bitstream;
    j["design_version"] = hex32(m.design_version);
    j["spec_hash"] = hex32(m.spec_hash);
    if (m.have_crc) j["crc32"] = hex32(m.crc32);
    // a file name that is not UTF-8 is written with U+FFFD in place of the bad bytes
    return j.dump(2, ' ', false, ojson::error_handler_t::replace) + "\n";
}

}  // namespace velo::board
