// SPDX-License-Identifier: MIT
// Tests of the board tools without hardware: velo-info and velo-flash run on recorded
// config-space dumps (tests/data/*.lspci, libpci's dump method) or on a fake sysfs tree whose
// config files are made from those dumps (libpci's linux-sysfs method), with fake sysfs
// attributes, resource0 files holding an ID block, a fake PAT list and /proc/mtrr, and a fake
// openFPGALoader (a shell script that logs its arguments and what the sysfs writes looked like
// when it ran, and "loads" a new design by replacing resource0). The library functions (parsers)
// are tested directly. Expected values are derived from the fixtures and the spec macros.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "board.hpp"
#include "velo/velo_hw.h"

extern char** environ;

namespace fs = std::filesystem;
using namespace velo::board;

namespace {

const std::string kData = VELO_TOOLS_TESTDATA;
const std::string kA = "0000:03:00.0", kB = "0000:05:00.0";
// sysfs `resource` files of the two boards, as the kernel writes them (start end flags); they
// agree with the BARs of the dumps: BAR0 2 MiB, BAR2 64-bit prefetchable 16 MiB, BAR4 1 MiB
const std::string kZeroRes = "0x0000000000000000 0x0000000000000000 0x0000000000000000\n";
const std::string kResA = "0x00000000f7e00000 0x00000000f7ffffff 0x0000000000040200\n" + kZeroRes +
                          "0x00000000e0000000 0x00000000e0ffffff 0x000000000014220c\n" + kZeroRes +
                          "0x00000000f7d00000 0x00000000f7dfffff 0x0000000000040200\n" + kZeroRes + kZeroRes;
const std::string kResB = "0x00000000f7a00000 0x00000000f7bfffff 0x0000000000040200\n" + kZeroRes +
                          "0x00000000d0000000 0x00000000d0ffffff 0x000000000014220c\n" + kZeroRes +
                          "0x00000000f7900000 0x00000000f79fffff 0x0000000000040200\n" + kZeroRes + kZeroRes;
// CAPS of the fixture design: 16 nodes, 16 vpids -> a 2^(12+4+4+4) = 16 MiB send window
const uint32_t kCaps =
    (uint32_t)(VELO_FIELD_PREP(VELO_REG_ID_CAPS_NODE_BITS, 4) | VELO_FIELD_PREP(VELO_REG_ID_CAPS_VPID_BITS, 4) |
               VELO_FIELD_PREP(VELO_REG_ID_CAPS_TLP_BYTES, 16) | VELO_FIELD_PREP(VELO_REG_ID_CAPS_LINK_BYTES, 2) |
               VELO_FIELD_PREP(VELO_REG_ID_CAPS_MSG_MAX, VELO_MSG_MAX));

struct Result {
    int status = -1;
    std::string out, err;
};

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

std::vector<std::string> lines(const std::string& s) {
    std::vector<std::string> v;
    std::istringstream in(s);
    std::string l;
    while (std::getline(in, l)) v.push_back(l);
    return v;
}

bool has(const std::string& hay, const std::string& needle) {
    return hay.find(needle) != std::string::npos;
}

// A temporary directory holding a fake root (sys/, proc/) and the run's scratch files.
class Fake {
  public:
    Fake() {
        char t[] = "/tmp/velo-board-tools-XXXXXX";
        char* d = mkdtemp(t);
        EXPECT_NE(d, nullptr);
        root = d ? d : "/nonexistent";
        fs::create_directories(root + "/sys/bus/pci/devices");
        fs::create_directories(root + "/proc");
        file("sys/bus/pci/rescan", "");
    }
    ~Fake() {
        std::error_code ec;
        fs::remove_all(root, ec);
    }
    Fake(const Fake&) = delete;
    Fake& operator=(const Fake&) = delete;

    std::string root;
    std::string sys() const { return root + "/sys"; }
    std::string dev(const std::string& addr) const { return root + "/sys/bus/pci/devices/" + addr; }
    std::string path(const std::string& rel) const { return root + "/" + rel; }

    void file(const std::string& rel, const std::string& content) {
        fs::path p = path(rel);
        fs::create_directories(p.parent_path());
        std::ofstream f(p, std::ios::binary | std::ios::trunc);
        f << content;
    }
    void link(const std::string& rel, const std::string& target) {
        fs::path p = path(rel);
        fs::create_directories(p.parent_path());
        fs::remove(p);
        fs::create_symlink(target, p);
    }
    std::string read(const std::string& rel) const { return slurp(path(rel)); }

    // the PCI device's sysfs directory with its resource file and a (writable) remove attribute
    void device(const std::string& addr, const std::string& resource) {
        std::string d = "sys/bus/pci/devices/" + addr;
        file(d + "/resource", resource);
        file(d + "/remove", "");
    }
    // a BAR0 image: the ID block and the CTRL block's NODE_ID
    static std::string id_block(uint32_t version, uint32_t hash, uint32_t node, uint32_t magic = VELO_ID_MAGIC,
                                size_t len = 4096) {
        std::string b(len, '\0');
        auto put = [&](size_t off, uint32_t v) {
            if (off + 4 <= b.size()) memcpy(&b[off], &v, 4);
        };
        put(VELO_BLK_ID_BASE + VELO_BLKHDR_TYPE, magic);
        put(VELO_BLK_ID_BASE + VELO_BLKHDR_VERSION, VELO_BLK_ID_VERSION);
        put(VELO_BLK_ID_BASE + VELO_BLKHDR_NEXT, VELO_BLK_ID_NEXT);
        put(VELO_BLK_ID_BASE + VELO_REG_ID_DESIGN_VERSION, version);
        put(VELO_BLK_ID_BASE + VELO_REG_ID_CAPS, kCaps);
        put(VELO_BLK_ID_BASE + VELO_REG_ID_SPEC_HASH, hash);
        put(VELO_BLK_CTRL_BASE + VELO_BLKHDR_TYPE, VELO_BLK_CTRL_TYPE);
        put(VELO_REG_CTRL_NODE_ID, node);
        return b;
    }
    void resource0(const std::string& addr, const std::string& image) {
        file("sys/bus/pci/devices/" + addr + "/resource0", image);
    }
    void bind(const std::string& addr, const std::string& driver) {
        file("sys/bus/pci/drivers/" + driver + "/unbind", "");
        link("sys/bus/pci/devices/" + addr + "/driver", "../../drivers/" + driver);
    }
    void velo_class(const std::string& name, const std::string& addr, uint32_t version, uint32_t hash, uint32_t node,
                    const std::string& wc) {
        std::string d = "sys/class/velo/" + name;
        link(d + "/device", "../../../bus/pci/devices/" + addr);
        char b[32];
        snprintf(b, sizeof b, "0x%08x\n", version);
        file(d + "/design_version", b);
        snprintf(b, sizeof b, "0x%08x\n", hash);
        file(d + "/spec_hash", b);
        file(d + "/node_id", std::to_string(node) + "\n");
        file(d + "/wc_active", wc + "\n");
    }
};

// Board A as the velo driver sees it (velo0, node 3, WC through PAT), board B unbound (node 5);
// a PAT list with two WC mappings in A's BAR2, an UC- mapping of A's BAR0 and a WC mapping
// elsewhere; MTRRs: write-back RAM and one WC range that covers B's BAR2.
void standard_machine(Fake& f, bool with_b = false) {
    f.device(kA, kResA);
    f.resource0(kA, Fake::id_block(VELO_SPEC_VERSION, VELO_SPEC_HASH, 3));
    f.bind(kA, "velo");
    f.velo_class("velo0", kA, VELO_SPEC_VERSION, VELO_SPEC_HASH, 3, "pat");
    f.file("sys/kernel/debug/x86/pat_memtype_list",
           "PAT memtype list:\n"
           "PAT: [mem 0x00000000c0000000-0x00000000c0001000] write-combining\n"
           "PAT: [mem 0x00000000e0000000-0x00000000e0001000] write-combining\n"
           "PAT: [mem 0x00000000e0040000-0x00000000e0041000] write-combining\n"
           "PAT: [mem 0x00000000f7e00000-0x00000000f7e01000] uncached-minus\n");
    f.file(
        "proc/mtrr",
        "reg00: base=0x000000000 (    0MB), size= 2048MB, count=1: write-back\n"
        "reg01: base=0x080000000 ( 2048MB), size= 1024MB, count=1: write-back\n" +
            std::string(with_b ? "reg02: base=0x0d0000000 ( 3328MB), size=   16MB, count=1: write-combining\n" : ""));
    if (with_b) {
        f.device(kB, kResB);
        f.resource0(kB, Fake::id_block(VELO_SPEC_VERSION, VELO_SPEC_HASH, 5));
    }
}

Result run_tool(const std::string& bin, const std::vector<std::string>& args, const Fake& scratch,
                const std::vector<std::string>& env_extra = {}) {
    std::vector<std::string> argv = {bin};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> av;
    for (auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
    av.push_back(nullptr);
    std::vector<std::string> envs;
    for (char** e = environ; *e; e++) envs.push_back(*e);
    envs.insert(envs.end(), env_extra.begin(), env_extra.end());
    std::vector<char*> ev;
    for (auto& e : envs) ev.push_back(const_cast<char*>(e.c_str()));
    ev.push_back(nullptr);
    std::string out = scratch.root + "/stdout", err = scratch.root + "/stderr";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    Result r;
    int rc = posix_spawn(&pid, bin.c_str(), &fa, nullptr, av.data(), ev.data());
    posix_spawn_file_actions_destroy(&fa);
    EXPECT_EQ(rc, 0) << "cannot start " << bin;
    if (rc != 0) return r;
    int st = 0;
    waitpid(pid, &st, 0);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
}

Result info(const Fake& f, std::vector<std::string> args) {
    args.insert(args.begin(), {"--root", f.root});
    return run_tool(VELO_INFO_BIN, args, f);
}

std::string spec_version() {
    return version_name(VELO_SPEC_VERSION) + " (" + hex32(VELO_SPEC_VERSION) + ")";
}

// The report of board A in standard_machine(), sizes as given.
std::vector<std::string> board_a_report(const std::string& sizes) {
    return {
        "0000:03:00.0 VELO 10ee:7e10 rev 00",
        "  link:      5.0 GT/s x1, capable 5.0 GT/s x4 (degraded: width)",
        "  BAR0:      0xf7e00000, 2 MiB, 32-bit, mapped (registers)",
        "  BAR2:      0xe0000000, 16 MiB, 64-bit prefetchable, mapped (send window)",
        "  BAR4:      0xf7d00000, 1 MiB, 32-bit, mapped (RMA window)",
        "  BAR sizes: " + sizes,
        "  driver:    velo (velo0)",
        "  design:    version " + spec_version() + ", spec hash " + hex32(VELO_SPEC_HASH) +
            " (matches this build), node 3",
        "  id from:   driver sysfs (velo0)",
        "  caps:      node bits 4, vpid bits 4, TLP 16 B, link 2 B, max message " + std::to_string(VELO_MSG_MAX) + " B",
        "  wc:        active via PAT",
        "  wc detail: driver wc_active=pat; PAT: 2 write-combining, 0 other entries in BAR2; MTRR: 0 "
        "write-combining ranges in BAR2",
    };
}

// ---------------------------------------------------------------- velo-info

TEST(velo_info, one_board_dump) {
    Fake f;
    standard_machine(f);
    Result r = info(f, {"--pci-dump", kData + "/one_board.lspci"});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(lines(r.out), board_a_report("sysfs resource file")) << r.out;
    EXPECT_EQ(r.err, "");
}

// The same machine through libpci's linux-sysfs method: config files made from the dump, BAR
// sizes now come from libpci (which reads the resource file itself).
std::map<std::string, std::string> load_dump(const std::string& path) {
    std::map<std::string, std::string> m;
    std::string cur;
    for (const std::string& l : lines(slurp(path))) {
        if (l.empty() || l[0] == '#') continue;
        if (l.size() > 3 && l[2] == ':' && l.find(' ') == 3) {
            unsigned off = (unsigned)strtoul(l.substr(0, 2).c_str(), nullptr, 16);
            std::istringstream in(l.substr(4));
            std::string byte;
            while (in >> byte) m[cur][off++] = (char)strtoul(byte.c_str(), nullptr, 16);
        } else {
            std::string a = l.substr(0, l.find(' '));
            cur = a.size() == 7 ? "0000:" + a : a;
            m[cur] = std::string(256, '\0');
        }
    }
    return m;
}

void sysfs_config_files(Fake& f, const std::string& dump) {
    for (auto& [addr, cfg] : load_dump(dump)) {
        std::string d = "sys/bus/pci/devices/" + addr + "/";
        f.file(d + "config", cfg);
        auto hex = [&](unsigned v, int w) {
            char b[16];
            snprintf(b, sizeof b, "0x%0*x\n", w, v);
            return std::string(b);
        };
        auto u8 = [&](int o) { return (unsigned)(unsigned char)cfg[o]; };
        f.file(d + "vendor", hex(u8(0) | u8(1) << 8, 4));
        f.file(d + "device", hex(u8(2) | u8(3) << 8, 4));
        f.file(d + "class", hex(u8(9) | u8(10) << 8 | u8(11) << 16, 6));
        f.file(d + "revision", hex(u8(8), 2));
        f.file(d + "irq", "16\n");
        if (!fs::exists(f.path(d + "resource"))) {
            std::string z;
            for (int i = 0; i < 13; i++) z += kZeroRes;
            f.file(d + "resource", z);
        }
    }
}

TEST(velo_info, one_board_sysfs_method) {
    Fake f;
    standard_machine(f);
    sysfs_config_files(f, kData + "/one_board.lspci");
    Result r = info(f, {});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(lines(r.out), board_a_report("libpci")) << r.out;
}

TEST(velo_info, two_boards_foreign_skipped) {
    Fake f;
    standard_machine(f, true);
    Result r = info(f, {"--pci-dump", kData + "/two_boards.lspci"});
    EXPECT_EQ(r.status, 0) << r.err;
    std::vector<std::string> want = board_a_report("sysfs resource file");
    // A's MTRR count is 0 too: the WC MTRR covers B's BAR2 only
    want.push_back("");
    std::vector<std::string> b = {
        "0000:05:00.0 VELO 10ee:7e10 rev 00",
        "  link:      5.0 GT/s x4, capable 5.0 GT/s x4",
        "  BAR0:      0xf7a00000, 2 MiB, 32-bit, mapped (registers)",
        "  BAR2:      0xd0000000, 16 MiB, 64-bit prefetchable, mapped (send window)",
        "  BAR4:      0xf7900000, 1 MiB, 32-bit, mapped (RMA window)",
        "  BAR sizes: sysfs resource file",
        "  driver:    none",
        "  design:    version " + spec_version() + ", spec hash " + hex32(VELO_SPEC_HASH) +
            " (matches this build), node 5",
        "  id from:   resource0",
        "  caps:      node bits 4, vpid bits 4, TLP 16 B, link 2 B, max message " + std::to_string(VELO_MSG_MAX) + " B",
        "  wc:        active via MTRR",
        "  wc detail: driver wc_active=-; PAT: 0 write-combining, 0 other entries in BAR2; MTRR: 1 "
        "write-combining ranges in BAR2",
    };
    want.insert(want.end(), b.begin(), b.end());
    EXPECT_EQ(lines(r.out), want) << r.out;
    EXPECT_FALSE(has(r.out, "7024")) << "the foreign Xilinx device must not be listed";
    EXPECT_FALSE(has(r.out, "04:00.0"));
}

TEST(velo_info, select_address) {
    Fake f;
    standard_machine(f, true);
    Result r = info(f, {"--pci-dump", kData + "/two_boards.lspci", "-s", "05:00.0"});
    EXPECT_EQ(r.status, 0) << r.err;
    ASSERT_FALSE(r.out.empty());
    EXPECT_EQ(lines(r.out)[0], "0000:05:00.0 VELO 10ee:7e10 rev 00");
    EXPECT_FALSE(has(r.out, "0000:03:00.0"));
    r = info(f, {"--pci-dump", kData + "/two_boards.lspci", "-s", "0000:04:00.0"});
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "velo-info: 0000:04:00.0 is 10ee:7024, not a VELO board (10ee:7e10)\n");
    r = info(f, {"--pci-dump", kData + "/two_boards.lspci", "-s", "09:00.0"});
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.err, "velo-info: no PCI device at 0000:09:00.0\n");
}

TEST(velo_info, no_board) {
    Fake f;
    Result r = info(f, {"--pci-dump", kData + "/no_board.lspci"});
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "velo-info: no VELO board found (2 PCI devices scanned, looking for 10ee:7e10)\n");
}

TEST(velo_info, foreign_only) {
    Fake f;
    Result r = info(f, {"--pci-dump", kData + "/foreign_xilinx.lspci"});
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "velo-info: no VELO board found (2 PCI devices scanned, looking for 10ee:7e10)\n");
}

TEST(velo_info, malformed_dump) {
    Fake f;
    Result r = info(f, {"--pci-dump", kData + "/malformed.lspci"});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "velo-info: libpci: dump: Malformed line\n");
}

TEST(velo_info, missing_dump) {
    Fake f;
    Result r = info(f, {"--pci-dump", f.path("nothing.lspci")});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(has(r.err, "dump: Cannot open " + f.path("nothing.lspci"))) << r.err;
    // a fake root without a PCI tree and without a dump
    Fake empty;
    fs::remove_all(empty.path("sys/bus/pci/devices"));
    r = info(empty, {});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(has(r.err, "sys/bus/pci/devices: not a directory")) << r.err;
}

TEST(velo_info, bad_usage) {
    Fake f;
    Result r = info(f, {"--frobnicate"});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(has(r.err, "unknown argument '--frobnicate'"));
    r = info(f, {"-s", "3:0"});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(has(r.err, "bad PCI address '3:0'"));
    r = info(f, {"--pci-dump"});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(has(r.err, "--pci-dump needs an argument"));
    r = info(f, {"--pci-method", "no-such-method"});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(has(r.err, "unknown libpci access method 'no-such-method'"));
}

// Without the driver the ID block comes from resource0; a short, missing or non-VELO resource0
// is a problem of that board (exit 3) with the reason, the rest of the report stays.
TEST(velo_info, resource0_unreadable) {
    Fake f;
    f.device(kA, kResA);
    f.resource0(kA, Fake::id_block(VELO_SPEC_VERSION, VELO_SPEC_HASH, 3, VELO_ID_MAGIC, 16));
    Result r = info(f, {"--pci-dump", kData + "/one_board.lspci"});
    EXPECT_EQ(r.status, 3);
    std::string res0 = f.dev(kA) + "/resource0";
    EXPECT_TRUE(has(r.out, "  driver:    none\n  design:    unknown\n  PROBLEM:   cannot read the ID block: " + res0 +
                               ": 16 bytes, the ID block needs " + std::to_string(VELO_REG_CTRL_NODE_ID + 4) + "\n"))
        << r.out;
    EXPECT_TRUE(has(r.out, "  BAR2:      0xe0000000, 16 MiB, 64-bit prefetchable, mapped (send window)\n"));
    EXPECT_EQ(r.err, "velo-info: 1 problem(s), see PROBLEM lines\n");
    fs::remove(res0);
    r = info(f, {"--pci-dump", kData + "/one_board.lspci"});
    EXPECT_EQ(r.status, 3);
    EXPECT_TRUE(has(r.out, "cannot read the ID block: " + res0 + ": No such file or directory\n")) << r.out;
    fs::create_directory(res0);
    r = info(f, {"--pci-dump", kData + "/one_board.lspci"});
    EXPECT_EQ(r.status, 3);
    EXPECT_TRUE(has(r.out, "cannot read the ID block: " + res0 + ": is a directory\n")) << r.out;
}

TEST(velo_info, bad_magic) {
    Fake f;
    f.device(kA, kResA);
    f.resource0(kA, Fake::id_block(VELO_SPEC_VERSION, VELO_SPEC_HASH, 3, 0xffffffffu));
    Result r = info(f, {"--pci-dump", kData + "/one_board.lspci"});
    EXPECT_EQ(r.status, 3);
    EXPECT_TRUE(has(r.out, "PROBLEM:   cannot read the ID block: bad magic 0xffffffff at BAR0+0 (expected " +
                               hex32(VELO_ID_MAGIC) + " 'VELO'): the device does not answer"))
        << r.out;
    f.resource0(kA, Fake::id_block(VELO_SPEC_VERSION, VELO_SPEC_HASH, 3, 0x12345678u));
    r = info(f, {"--pci-dump", kData + "/one_board.lspci"});
    EXPECT_EQ(r.status, 3);
    EXPECT_TRUE(
        has(r.out, "bad magic 0x12345678 at BAR0+0 (expected " + hex32(VELO_ID_MAGIC) + " 'VELO'): not a VELO design"))
        << r.out;
}

TEST(velo_info, spec_hash_differs) {
    Fake f;
    standard_machine(f);
    uint32_t other = VELO_SPEC_HASH ^ 0x00010000u;
    f.velo_class("velo0", kA, 0x00000101, other, 7, "pat");  // overwrite the attributes
    Result r = info(f, {"--pci-dump", kData + "/one_board.lspci"});
    EXPECT_EQ(r.status, 3);
    EXPECT_TRUE(has(r.out, "  design:    version 0.1.1 (0x00000101), spec hash " + hex32(other) + " (this build has " +
                               hex32(VELO_SPEC_HASH) + "), node 7\n"))
        << r.out;
    EXPECT_TRUE(has(r.out, "  PROBLEM:   built from another spec (" + hex32(other) +
                               "): the driver and libvelo of this build refuse it\n"))
        << r.out;
}

TEST(velo_info, write_combining) {
    // driver says none, no WC anywhere
    {
        Fake f;
        standard_machine(f);
        f.file("sys/class/velo/velo0/wc_active", "none\n");
        f.file("sys/kernel/debug/x86/pat_memtype_list", "PAT memtype list:\n");
        Result r = info(f, {"--pci-dump", kData + "/one_board.lspci"});
        EXPECT_EQ(r.status, 0) << r.out;
        EXPECT_TRUE(has(r.out,
                        "  wc:        not active (driver: none)\n"
                        "  wc detail: driver wc_active=none; PAT: 0 write-combining, 0 other entries in BAR2; "
                        "MTRR: 0 write-combining ranges in BAR2\n"))
            << r.out;
    }
    // not root: no PAT list, no /proc/mtrr; the driver's word is all there is
    {
        Fake f;
        standard_machine(f);
        fs::remove(f.path("sys/kernel/debug/x86/pat_memtype_list"));
        fs::remove(f.path("proc/mtrr"));
        Result r = info(f, {"--pci-dump", kData + "/one_board.lspci"});
        EXPECT_EQ(r.status, 0);
        EXPECT_TRUE(has(r.out, "  wc:        active via pat (reported by the driver)\n")) << r.out;
        EXPECT_TRUE(has(r.out, "PAT: not readable (" + f.path("sys/kernel/debug/x86/pat_memtype_list") +
                                   ": No such file or directory); MTRR: not readable (" + f.path("proc/mtrr") +
                                   ": No such file or directory)\n"))
            << r.out;
    }
    // BAR2 mapped uncached: a problem
    {
        Fake f;
        standard_machine(f);
        f.file("sys/kernel/debug/x86/pat_memtype_list",
               "PAT: [mem 0x00000000e0001000-0x00000000e0002000] uncached-minus\n");
        Result r = info(f, {"--pci-dump", kData + "/one_board.lspci", "--debugfs-root", f.path("sys/kernel/debug")});
        EXPECT_EQ(r.status, 3);
        EXPECT_TRUE(
            has(r.out, "  wc:        set up by the driver (pat), no write-combining mapping of BAR2 at the moment\n"))
            << r.out;
        EXPECT_TRUE(has(r.out, "PAT: 0 write-combining, 1 other entries in BAR2")) << r.out;
        EXPECT_TRUE(has(r.out, "PROBLEM:   BAR2 is mapped with another memory type than write-combining")) << r.out;
    }
}

// A BAR the kernel did not assign (base 0 in config space) and a wrong BAR0 size are problems.
TEST(velo_info, unassigned_bar) {
    Fake f;
    standard_machine(f);
    std::string dump = slurp(kData + "/one_board.lspci");
    size_t k = dump.find("20: 00 00 d0 f7");
    ASSERT_NE(k, std::string::npos);
    dump.replace(k, 15, "20: 00 00 00 00");
    f.file("unassigned.lspci", dump);
    std::string res = kResA;
    res.replace(res.find("0x00000000f7ffffff"), 18, "0x00000000f7efffff");  // BAR0 1 MiB
    res.replace(res.find("0x00000000f7d00000 0x00000000f7dfffff"), 37, "0x0000000000000000 0x00000000000fffff");
    f.file("sys/bus/pci/devices/" + kA + "/resource", res);
    Result r = info(f, {"--pci-dump", f.path("unassigned.lspci")});
    EXPECT_EQ(r.status, 3);
    EXPECT_TRUE(has(r.out, "  BAR0:      0xf7e00000, 1 MiB, 32-bit, mapped (registers)\n")) << r.out;
    EXPECT_TRUE(
        has(r.out, "  BAR4:      0x0, 1 MiB, 32-bit, not assigned (RMA window)\n  PROBLEM:   BAR4 is not assigned\n"))
        << r.out;
    EXPECT_TRUE(has(r.out, "  PROBLEM:   BAR0 is 1 MiB, the spec says 2 MiB\n")) << r.out;
}

TEST(velo_info, parsers) {
    auto a = parse_pci_addr("0000:03:00.0");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->str(), "0000:03:00.0");
    a = parse_pci_addr("1:1f.7");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->str(), "0000:01:1f.7");
    a = parse_pci_addr("10000:00:00.0");
    EXPECT_FALSE(a);
    EXPECT_FALSE(parse_pci_addr("00:20.0"));  // device > 31
    EXPECT_FALSE(parse_pci_addr("00:00.8"));
    EXPECT_FALSE(parse_pci_addr("00:00"));
    EXPECT_FALSE(parse_pci_addr("zz:00.0"));
    EXPECT_EQ(size_name(2u << 20), "2 MiB");
    EXPECT_EQ(size_name(4096), "4 KiB");
    EXPECT_EQ(size_name(1000), "1000 B");
    EXPECT_EQ(size_name(3ull << 30), "3 GiB");
    EXPECT_EQ(link_speed_name(1), "2.5 GT/s");
    EXPECT_EQ(link_speed_name(3), "8.0 GT/s");
    EXPECT_EQ(link_speed_name(9), "unknown (code 9)");
    int wc, other;
    count_pat(
        "PAT: [mem 0x0000000000001000-0x0000000000002000] write-combining\n"
        "PAT: [mem 0x0000000000002000-0x0000000000003000] write-combining\n"
        "PAT: [mem 0x0000000000000000-0x0000000000001000] uncached-minus\n"
        "garbage\n",
        0x2000, 0x3000, wc, other);
    EXPECT_EQ(wc, 1);  // [0x1000, 0x2000) ends where the BAR starts
    EXPECT_EQ(other, 0);
    count_pat("PAT: [mem 0x0000000000000000-0x0000000000003000] uncached-minus\n", 0x2000, 0x3000, wc, other);
    EXPECT_EQ(other, 1);
    const std::string mtrr =
        "reg00: base=0x0e0000000 ( 3584MB), size=  256MB, count=1: write-combining\n"
        "reg01: base=0x0f0000000 ( 3840MB), size=    4KB, count=1: write-combining\n"
        "reg02: base=0x000000000 (    0MB), size= 4096MB, count=1: write-back\n";
    EXPECT_EQ(count_mtrr_wc(mtrr, 0xe0000000, 0xe1000000), 1);
    EXPECT_EQ(count_mtrr_wc(mtrr, 0xf0000000, 0xf0001000), 1);
    EXPECT_EQ(count_mtrr_wc(mtrr, 0xf0001000, 0xf0002000), 0);
    WcState w;
    EXPECT_EQ(w.verdict(), "unknown (no driver attribute; PAT list and MTRRs not readable)");
    w.mtrr_wc = 0;
    EXPECT_EQ(w.verdict(), "not active");
    w.driver = "mtrr";
    EXPECT_EQ(w.verdict(), "set up by the driver (mtrr), no write-combining mapping of BAR2 at the moment");
    w.pat_wc = 2;
    EXPECT_EQ(w.verdict(), "active via PAT");
}

// ---------------------------------------------------------------- velo-flash

// A Xilinx .bit file: header fields a..d, then 'e' and the configuration data (dummy words,
// bus width detection, sync word, filler).
std::string make_bit(const std::string& part, size_t filler = 256, bool sync = true) {
    std::string b("\x00\x09\x0f\xf0\x0f\xf0\x0f\xf0\x0f\xf0\x00\x00\x01", 13);
    auto field = [&](char k, const std::string& v) {
        std::string s = v + '\0';
        b += k;
        b += (char)(s.size() >> 8);
        b += (char)(s.size() & 0xff);
        b += s;
    };
    field('a', "velo_top;UserID=0XFFFFFFFF;Version=2022.2");
    field('b', part);
    field('c', "2024/05/06");
    field('d', "12:34:56");
    std::string data(16, '\xff');
    data += std::string("\x00\x00\x00\xbb\x11\x22\x00\x44\xff\xff\xff\xff\xff\xff\xff\xff", 16);
    if (sync) data += "\xaa\x99\x55\x66";
    for (size_t i = 0; i < filler; i++) data += (char)(i * 7);
    uint32_t n = (uint32_t)data.size();
    b += 'e';
    b += (char)(n >> 24);
    b += (char)(n >> 16);
    b += (char)(n >> 8);
    b += (char)n;
    return b + data;
}

std::string manifest(const std::string& board, const std::string& part, uint32_t version, uint32_t hash,
                     const std::string& bits, const std::string& name = "velo.bit") {
    Manifest m;
    m.format = 1;
    m.board = board;
    m.part = part;
    m.bitstream = name;
    m.design_version = version;
    m.spec_hash = hash;
    m.have_crc = true;
    m.crc32 = crc32(std::vector<uint8_t>(bits.begin(), bits.end()));
    return manifest_json(m);
}

// The fake openFPGALoader: logs its arguments; --detect prints FAKE_MODEL; programming logs the
// state of the remove and rescan attributes at that moment, fails if FAKE_FAIL is set, and
// "loads" the new design by copying FAKE_NEW_RESOURCE0 over board A's resource0.
const char* kFakeLoader = R"SH(#!/bin/sh
echo "args: $*" >> "$FAKE_LOG"
case " $* " in
*" --detect "*)
    printf 'index 0:\n\tidcode 0x3636093\n\tmanufacturer xilinx\n\tfamily artix a7\n\tmodel  %s\n\tirlength 6\n' "${FAKE_MODEL:-xc7a200}"
    exit 0;;
esac
echo "state: remove=$(cat "$FAKE_SYS/bus/pci/devices/0000:03:00.0/remove") rescan=$(cat "$FAKE_SYS/bus/pci/rescan")" >> "$FAKE_LOG"
if [ -n "$FAKE_FAIL" ]; then echo "fake openFPGALoader: JTAG init failed" >&2; exit 1; fi
if [ -n "$FAKE_RM_RESOURCE0" ]; then rm "$FAKE_SYS/bus/pci/devices/0000:03:00.0/resource0"; fi
if [ -n "$FAKE_NEW_RESOURCE0" ]; then cp "$FAKE_NEW_RESOURCE0" "$FAKE_SYS/bus/pci/devices/0000:03:00.0/resource0"; fi
exit 0
)SH";

// Board A bound to velo and holding an old design; velo.bit (+ manifest) for the AC701 next to it.
struct FlashSetup {
    Fake f;
    std::string bit, loader, log, newres;
    uint32_t old_version = 0x00000001;
    explicit FlashSetup(bool with_manifest = true, const std::string& part = "7a200tfbg676") {
        standard_machine(f);
        f.resource0(kA, Fake::id_block(old_version, VELO_SPEC_HASH, 3));
        bit = f.path("velo.bit");
        std::string b = make_bit(part);
        f.file("velo.bit", b);
        if (with_manifest)
            f.file("velo.bit.json", manifest("ac701", "xc7a200tfbg676-2", VELO_SPEC_VERSION, VELO_SPEC_HASH, b));
        loader = f.path("bin/openFPGALoader");
        f.file("bin/openFPGALoader", kFakeLoader);
        fs::permissions(loader, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
        log = f.path("loader.log");
        newres = f.path("new_resource0");
        f.file("new_resource0", Fake::id_block(VELO_SPEC_VERSION, VELO_SPEC_HASH, 3));
    }
    std::vector<std::string> env(std::vector<std::string> extra = {}) const {
        extra.push_back("FAKE_LOG=" + log);
        extra.push_back("FAKE_SYS=" + f.sys());
        return extra;
    }
    Result flash(std::vector<std::string> args, std::vector<std::string> extra_env = {},
                 const std::string& dump = "/one_board.lspci") {
        std::vector<std::string> a = {"--root",   f.root, "--pci-dump", kData + dump,
                                      "--loader", loader, "--timeout",  "0"};
        a.insert(a.end(), args.begin(), args.end());
        return run_tool(VELO_FLASH_BIN, a, f, env(extra_env));
    }
    std::string dev_file(const std::string& name) const { return f.read("sys/bus/pci/devices/" + kA + "/" + name); }
    bool untouched() const {
        return dev_file("remove").empty() && f.read("sys/bus/pci/rescan").empty() &&
               f.read("sys/bus/pci/drivers/velo/unbind").empty() && !fs::exists(log);
    }
    std::string head_lines() const {
        std::string b = f.read("velo.bit");
        BitHeader h;
        std::string err;
        EXPECT_TRUE(parse_bit_header(std::vector<uint8_t>(b.begin(), b.end()), h, err)) << err;
        return "bitstream: " + bit +
               ": part 7a200tfbg676, design velo_top;UserID=0XFFFFFFFF;Version=2022.2, built 2024/05/06 12:34:56, " +
               std::to_string(h.data_len) + " bytes\n" + "manifest:  " + bit +
               ".json: board ac701, part xc7a200tfbg676-2, design version " + hex32(VELO_SPEC_VERSION) +
               ", spec hash " + hex32(VELO_SPEC_HASH) + ", crc32 matches\n" +
               "board:     ac701 (xc7a200tfbg676), device 0000:03:00.0 (10ee:7e10), driver velo\n";
    }
};

TEST(velo_flash, dry_run) {
    FlashSetup s;
    Result r = s.flash({"--board", "ac701", "--force-unbind", "--dry-run", s.bit});
    EXPECT_EQ(r.status, 0) << r.err;
    std::string devdir = s.f.dev(kA);
    EXPECT_EQ(r.out, s.head_lines() + "run:       " + s.loader + " -b ac701 --detect\n" + "write:     0000:03:00.0 > " +
                         devdir + "/driver/unbind\n" + "write:     1 > " + devdir + "/remove\n" +
                         "run:       " + s.loader + " -b ac701 " + s.bit + "\n" + "write:     1 > " + s.f.sys() +
                         "/bus/pci/rescan\n" + "wait:      up to 0 s for 0000:03:00.0 10ee:7e10 with design version " +
                         hex32(VELO_SPEC_VERSION) + ", spec hash " + hex32(VELO_SPEC_HASH) + "\n" +
                         "dry run:   nothing was changed\n");
    EXPECT_EQ(r.err, "");
    EXPECT_TRUE(s.untouched()) << "a dry run must not write sysfs or run the loader";
}

TEST(velo_flash, flash_ok) {
    FlashSetup s;
    Result r = s.flash({"--board", "ac701", "--force-unbind", s.bit}, {"FAKE_NEW_RESOURCE0=" + s.newres});
    EXPECT_EQ(r.status, 0) << r.err;
    std::string devdir = s.f.dev(kA);
    EXPECT_EQ(r.out,
              s.head_lines() + "run:       " + s.loader + " -b ac701 --detect\n" +
                  "detect:    xc7a200 on the JTAG chain (matches xc7a200tfbg676)\n" + "write:     0000:03:00.0 > " +
                  devdir + "/driver/unbind\n" + "write:     1 > " + devdir + "/remove\n" + "run:       " + s.loader +
                  " -b ac701 " + s.bit + "\n" + "write:     1 > " + s.f.sys() + "/bus/pci/rescan\n" +
                  "wait:      up to 0 s for 0000:03:00.0 10ee:7e10 with design version " + hex32(VELO_SPEC_VERSION) +
                  ", spec hash " + hex32(VELO_SPEC_HASH) + "\n" + "verify:    0000:03:00.0 10ee:7e10, design version " +
                  hex32(VELO_SPEC_VERSION) + ", spec hash " + hex32(VELO_SPEC_HASH) + ": OK (resource0)\n");
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(s.f.read("sys/bus/pci/drivers/velo/unbind"), kA);
    EXPECT_EQ(s.dev_file("remove"), "1");
    EXPECT_EQ(s.f.read("sys/bus/pci/rescan"), "1");
    // the loader ran twice, and when it programmed the device was already removed, not yet rescanned
    EXPECT_EQ(slurp(s.log), "args: -b ac701 --detect\nargs: -b ac701 " + s.bit + "\nstate: remove=1 rescan=\n");
}

// BAR0 cannot be mapped after the rescan (the driver bound again and holds it): the driver's
// attributes give the identity; without them the reason is reported.
TEST(velo_flash, verify_via_driver) {
    FlashSetup s;
    Result r = s.flash({"--board", "ac701", "--force-unbind", s.bit}, {"FAKE_RM_RESOURCE0=1"});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(has(r.out, "verify:    0000:03:00.0 10ee:7e10, design version " + hex32(VELO_SPEC_VERSION) +
                               ", spec hash " + hex32(VELO_SPEC_HASH) + ": OK (driver sysfs (velo0))\n"))
        << r.out;
    // the driver reports the old design
    s.f.resource0(kA, Fake::id_block(s.old_version, VELO_SPEC_HASH, 3));
    s.f.velo_class("velo0", kA, s.old_version, VELO_SPEC_HASH, 3, "pat");
    r = s.flash({"--board", "ac701", "--force-unbind", s.bit}, {"FAKE_RM_RESOURCE0=1"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(has(r.err, "the device reports design version " + hex32(s.old_version))) << r.err;
    // neither resource0 nor a driver
    s.f.resource0(kA, Fake::id_block(s.old_version, VELO_SPEC_HASH, 3));
    fs::remove_all(s.f.path("sys/class/velo"));
    r = s.flash({"--board", "ac701", "--force-unbind", s.bit}, {"FAKE_RM_RESOURCE0=1"});
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.err, "velo-flash: verification failed after 0 s: cannot read the ID block: " + s.f.dev(kA) +
                         "/resource0: No such file or directory\n");
}

TEST(velo_flash, refuses_bound_driver) {
    FlashSetup s;
    Result r = s.flash({"--board", "ac701", s.bit});
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.err,
              "velo-flash: refusing: 0000:03:00.0 is bound to driver 'velo'; unload it (rmmod velo) or pass "
              "--force-unbind\n");
    EXPECT_TRUE(s.untouched());
    // unbound: no unbind step at all
    fs::remove(s.f.path("sys/bus/pci/devices/" + kA + "/driver"));
    r = s.flash({"--board", "ac701", s.bit}, {"FAKE_NEW_RESOURCE0=" + s.newres});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(has(r.out, "unbind"));
    EXPECT_TRUE(s.f.read("sys/bus/pci/drivers/velo/unbind").empty());
}

TEST(velo_flash, wrong_part_header) {
    FlashSetup s(false, "7a100tfgg484");
    Result r = s.flash({"--board", "ac701", "--force-unbind", s.bit});
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.err,
              "velo-flash: refusing: the bitstream is for part 7a100tfgg484 (.bit header), board ac701 has "
              "xc7a200tfbg676\n");
    EXPECT_TRUE(s.untouched());
    // the same with --dry-run: refused as well
    r = s.flash({"--board", "ac701", "--dry-run", s.bit});
    EXPECT_EQ(r.status, 3);
    // and the right board for that part passes the check (LiteFury: xc7a100tfgg484)
    r = s.flash({"--board", "litefury", "--force-unbind", "--dry-run", "--no-detect", s.bit});
    EXPECT_EQ(r.status, 0) << r.err;
}

TEST(velo_flash, wrong_board_manifest) {
    FlashSetup s;
    std::string b = s.f.read("velo.bit");
    s.f.file("velo.bit.json", manifest("kc705", "xc7k325tffg900-2", VELO_SPEC_VERSION, VELO_SPEC_HASH, b));
    Result r = s.flash({"--board", "ac701", "--force-unbind", s.bit});
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.err, "velo-flash: refusing: the bitstream was built for board 'kc705' (" + s.bit +
                         ".json), this is board 'ac701'\n");
    EXPECT_TRUE(s.untouched());
    // manifest for the right board but another part than the board's
    s.f.file("velo.bit.json", manifest("ac701", "xc7a100tfgg484", VELO_SPEC_VERSION, VELO_SPEC_HASH, b));
    r = s.flash({"--board", "ac701", "--force-unbind", s.bit});
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.err, "velo-flash: refusing: the manifest names part xc7a100tfgg484, board ac701 has xc7a200tfbg676\n");
    // unknown board
    r = s.flash({"--board", "icebreaker", s.bit});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "velo-flash: unknown board 'icebreaker' (known: " + board_names() + ")\n");
}

TEST(velo_flash, headerless_needs_manifest) {
    FlashSetup s;
    std::string raw(4096, '\x5a');  // e.g. a raw .bin: no header naming a part
    s.f.file("velo.bin", raw);
    std::string bin = s.f.path("velo.bin");
    Result r = s.flash({"--board", "ac701", "--force-unbind", "--dry-run", bin});
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.err, "velo-flash: " + bin + " has no .bit header naming its FPGA part: a manifest (" + bin +
                         ".json or --manifest) is required to check that it is built for board ac701\n");
    s.f.file("velo.bin.json", manifest("ac701", "xc7a200tfbg676", VELO_SPEC_VERSION, VELO_SPEC_HASH, raw, "velo.bin"));
    r = s.flash({"--board", "ac701", "--force-unbind", "--dry-run", bin});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(has(r.out, "bitstream: " + bin + ": no .bit header, 4096 bytes\n")) << r.out;
    // an explicit --manifest for another board
    s.f.file("other.json", manifest("nitefury", "xc7a200tfbg484", VELO_SPEC_VERSION, VELO_SPEC_HASH, raw, "velo.bin"));
    r = s.flash({"--board", "ac701", "--dry-run", "--manifest", s.f.path("other.json"), bin});
    EXPECT_EQ(r.status, 3);
    EXPECT_TRUE(has(r.err, "built for board 'nitefury'")) << r.err;
}

TEST(velo_flash, stale_manifest) {
    FlashSetup s;
    std::string b = s.f.read("velo.bit");
    std::string other = make_bit("7a200tfbg676", 300);  // the manifest of an older build
    s.f.file("velo.bit.json", manifest("ac701", "xc7a200tfbg676", VELO_SPEC_VERSION, VELO_SPEC_HASH, other));
    Result r = s.flash({"--board", "ac701", "--force-unbind", "--dry-run", s.bit});
    EXPECT_EQ(r.status, 3);
    uint32_t c_old = crc32(std::vector<uint8_t>(other.begin(), other.end()));
    uint32_t c_new = crc32(std::vector<uint8_t>(b.begin(), b.end()));
    EXPECT_EQ(r.err, "velo-flash: " + s.bit + ".json does not describe " + s.bit + ": crc32 " + hex32(c_old) +
                         " in the manifest, " + hex32(c_new) + " computed (stale manifest?)\n");
    // a manifest naming another file
    s.f.file("velo.bit.json", manifest("ac701", "xc7a200tfbg676", VELO_SPEC_VERSION, VELO_SPEC_HASH, b, "old.bit"));
    r = s.flash({"--board", "ac701", "--force-unbind", "--dry-run", s.bit});
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.err, "velo-flash: " + s.bit + ".json describes 'old.bit', not 'velo.bit'\n");
    // a broken manifest
    s.f.file("velo.bit.json", "{\"velo_manifest\": 1,\n \"board\": \"ac701\",\n \"part\" \"x\"}");
    r = s.flash({"--board", "ac701", "--force-unbind", "--dry-run", s.bit});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "velo-flash: " + s.bit + ".json: line 3 column 9: expected ':'\n");
}

TEST(velo_flash, spec_hash_differs) {
    FlashSetup s;
    std::string b = s.f.read("velo.bit");
    uint32_t other = VELO_SPEC_HASH + 1;
    s.f.file("velo.bit.json", manifest("ac701", "xc7a200tfbg676", VELO_SPEC_VERSION, other, b));
    Result r = s.flash({"--board", "ac701", "--force-unbind", "--dry-run", s.bit});
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.err, "velo-flash: refusing: the design was built from spec " + hex32(other) +
                         ", this build (velo-flash, driver, libvelo) from " + hex32(VELO_SPEC_HASH) +
                         "; pass --any-spec to flash it anyway\n");
    r = s.flash({"--board", "ac701", "--force-unbind", "--dry-run", "--any-spec", s.bit});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(has(r.out, "spec hash " + hex32(other) + "\ndry run:")) << r.out;  // what it waits for
}

TEST(velo_flash, detect_other_fpga) {
    FlashSetup s;
    Result r = s.flash({"--board", "ac701", "--force-unbind", s.bit}, {"FAKE_MODEL=xc7a100"});
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.err,
              "velo-flash: refusing: the JTAG chain has xc7a100, board ac701 has xc7a200tfbg676 (wrong --board "
              "or cable?)\n");
    // only --detect ran; nothing was written
    EXPECT_EQ(slurp(s.log), "args: -b ac701 --detect\n");
    EXPECT_TRUE(s.dev_file("remove").empty());
    EXPECT_TRUE(s.f.read("sys/bus/pci/drivers/velo/unbind").empty());
}

TEST(velo_flash, no_device) {
    FlashSetup s;
    Result r = s.flash({"--board", "ac701", "--force-unbind", s.bit}, {}, "/no_board.lspci");
    EXPECT_EQ(r.status, 4);
    EXPECT_EQ(r.err,
              "velo-flash: no VELO board found (2 PCI devices scanned); if the FPGA holds another design, name "
              "its PCI address with -s\n");
    EXPECT_TRUE(s.untouched());
    r = s.flash({"--board", "ac701", "-s", "0000:07:00.0", s.bit});
    EXPECT_EQ(r.status, 4);
    EXPECT_EQ(r.err, "velo-flash: no PCI device at 0000:07:00.0\n");
    // in the dump but without a sysfs directory: cannot be removed
    fs::remove_all(s.f.dev(kA));
    r = s.flash({"--board", "ac701", s.bit});
    EXPECT_EQ(r.status, 4);
    EXPECT_EQ(r.err, "velo-flash: 0000:03:00.0 has no sysfs directory (" + s.f.dev(kA) + "): cannot remove it\n");
}

TEST(velo_flash, several_devices) {
    FlashSetup s;
    s.f.device(kB, kResB);
    Result r = s.flash({"--board", "ac701", s.bit}, {}, "/two_boards.lspci");
    EXPECT_EQ(r.status, 4);
    EXPECT_EQ(r.err, "velo-flash: 2 VELO boards found (0000:03:00.0, 0000:05:00.0): choose one with -s\n");
    r = s.flash({"--board", "ac701", "-s", "05:00.0", "--dry-run", s.bit}, {}, "/two_boards.lspci");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(has(r.out, "board:     ac701 (xc7a200tfbg676), device 0000:05:00.0 (10ee:7e10), driver none\n"))
        << r.out;
    EXPECT_TRUE(has(r.out, "write:     1 > " + s.f.dev(kB) + "/remove\n")) << r.out;
    // the foreign Xilinx device can be chosen explicitly (the FPGA holds another design)
    s.f.device("0000:04:00.0", kZeroRes);
    r = s.flash({"--board", "ac701", "-s", "04:00.0", "--dry-run", s.bit}, {}, "/two_boards.lspci");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(has(r.out, "device 0000:04:00.0 (10ee:7024, not a VELO design), driver none\n")) << r.out;
    EXPECT_TRUE(has(r.out, "wait:      up to 0 s for 0000:04:00.0 10ee:7e10 with")) << r.out;
}

TEST(velo_flash, device_missing_after) {
    FlashSetup s;
    Result r = s.flash({"--board", "ac701", "--force-unbind", "--pci-dump-after", kData + "/no_board.lspci", s.bit},
                       {"FAKE_NEW_RESOURCE0=" + s.newres});
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.err, "velo-flash: verification failed after 0 s: no PCI device at 0000:03:00.0 after the rescan\n");
    EXPECT_EQ(s.f.read("sys/bus/pci/rescan"), "1");
    EXPECT_FALSE(has(r.out, "verify:"));
}

TEST(velo_flash, wrong_id_after) {
    FlashSetup s;
    Result r =
        s.flash({"--board", "ac701", "--force-unbind", "--pci-dump-after", kData + "/after_foreign.lspci", s.bit},
                {"FAKE_NEW_RESOURCE0=" + s.newres});
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.err,
              "velo-flash: verification failed after 0 s: 0000:03:00.0 came back as 10ee:7024, expected "
              "10ee:7e10\n");
}

TEST(velo_flash, version_mismatch_after) {
    // the loader "succeeds" but the old design is still there (no new resource0)
    FlashSetup s;
    Result r = s.flash({"--board", "ac701", "--force-unbind", s.bit});
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.err, "velo-flash: verification failed after 0 s: the device reports design version " +
                         hex32(s.old_version) + ", spec hash " + hex32(VELO_SPEC_HASH) + "; expected " +
                         hex32(VELO_SPEC_VERSION) + ", " + hex32(VELO_SPEC_HASH) + " (the new design did not load?)\n");
    // the device answers all-ones after the flash
    s.f.file("dead", Fake::id_block(0, 0, 0, 0xffffffffu));
    r = s.flash({"--board", "ac701", "--force-unbind", s.bit}, {"FAKE_NEW_RESOURCE0=" + s.f.path("dead")});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(has(r.err, "cannot read the ID block: bad magic 0xffffffff")) << r.err;
}

TEST(velo_flash, loader_fails) {
    FlashSetup s;
    Result r = s.flash({"--board", "ac701", "--force-unbind", s.bit}, {"FAKE_FAIL=1"});
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.err, "fake openFPGALoader: JTAG init failed\nvelo-flash: " + s.loader +
                         " failed (exit status 1); the bus was rescanned\n");
    EXPECT_EQ(s.f.read("sys/bus/pci/rescan"), "1");
    EXPECT_FALSE(has(r.out, "wait:"));
    // a loader that does not exist: refused before anything is changed
    r = s.flash({"--board", "ac701", "--force-unbind", "--loader", s.f.path("bin/none"), s.bit});
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "velo-flash: cannot find " + s.f.path("bin/none") +
                         " (install the openfpgaloader package or pass --loader)\n");
}

TEST(velo_flash, write_manifest) {
    FlashSetup s(false);
    Result r = run_tool(VELO_FLASH_BIN, {"--board", "ac701", "--write-manifest", s.bit}, s.f);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "wrote:     " + s.bit + ".json\n");
    std::string b = s.f.read("velo.bit");
    EXPECT_EQ(s.f.read("velo.bit.json"), manifest("ac701", "xc7a200tfbg676", VELO_SPEC_VERSION, VELO_SPEC_HASH, b));
    r = s.flash({"--board", "ac701", "--force-unbind", "--dry-run", s.bit});
    EXPECT_EQ(r.status, 0) << r.err;
    // explicit values
    r = run_tool(VELO_FLASH_BIN,
                 {"--board", "ac701", "--write-manifest", "--design-version", "0x000102", "--spec-hash", "0xdeadbeef",
                  "--manifest", s.f.path("m.json"), s.bit},
                 s.f);
    EXPECT_EQ(r.status, 0) << r.err;
    Manifest m;
    std::string err;
    ASSERT_TRUE(parse_manifest(s.f.read("m.json"), m, err)) << err;
    EXPECT_EQ(m.design_version, 0x102u);
    EXPECT_EQ(m.spec_hash, 0xdeadbeefu);
    // refused for a board with another part
    r = run_tool(VELO_FLASH_BIN, {"--board", "kc705", "--write-manifest", s.bit}, s.f);
    EXPECT_EQ(r.status, 3);
    EXPECT_EQ(r.err,
              "velo-flash: refusing: the bitstream is for part 7a200tfbg676 (.bit header), board kc705 has "
              "xc7k325tffg900\n");
    r = run_tool(VELO_FLASH_BIN, {"--board", "ac701", "--write-manifest", "--spec-hash", "0x1g", s.bit}, s.f);
    EXPECT_EQ(r.status, 2);
}

// A board without an openFPGALoader entry goes through its cable; --flash writes the SPI flash.
TEST(velo_flash, cable_board_flash) {
    FlashSetup s(false, "7a100tfgg484");
    Result r = s.flash({"--board", "litefury", "--force-unbind", "--dry-run", "--flash", s.bit});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(has(r.out, "run:       " + s.loader + " -c digilent_hs2 --detect\n")) << r.out;
    EXPECT_TRUE(has(r.out, "run:       " + s.loader + " -c digilent_hs2 -f --fpga-part xc7a100tfgg484 " + s.bit + "\n"))
        << r.out;
    r = s.flash({"--board", "litefury", "--force-unbind", "--dry-run", "--cable", "ft232", s.bit});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(has(r.out, "run:       " + s.loader + " -c ft232 " + s.bit + "\n")) << r.out;
}

// A board without PCIe (the iCE40-HX8K breakout): an image with the manifest the open flow
// writes (fpga/ice40/flow.py; here through --write-manifest) passes for its board, nothing is
// removed or rescanned, and the image is refused for another board.
TEST(velo_flash, uart_board) {
    FlashSetup s(false);
    std::string img = std::string("\xff\x00\x00\xff\x7e\xaa\x99\x7e", 8) + std::string(64, '\x01');
    s.f.file("velo_ice40.bin", img);
    std::string bin = s.f.path("velo_ice40.bin");
    Result r = s.flash({"--board", "ice40-hx8k-breakout", "--dry-run", bin});
    EXPECT_EQ(r.status, 3) << "no manifest: refused";
    r = run_tool(VELO_FLASH_BIN, {"--board", "ice40-hx8k-breakout", "--write-manifest", bin}, s.f);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(s.f.read("velo_ice40.bin.json"), manifest("ice40-hx8k-breakout", "ice40hx8k-ct256", VELO_SPEC_VERSION,
                                                        VELO_SPEC_HASH, img, "velo_ice40.bin"));
    r = s.flash({"--board", "ice40-hx8k-breakout", "--dry-run", bin});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(has(r.out, "board:     ice40-hx8k-breakout (ice40hx8k-ct256), no PCIe")) << r.out;
    EXPECT_TRUE(has(r.out, "run:       " + s.loader + " -b ice40_generic " + bin + "\n")) << r.out;
    EXPECT_TRUE(has(r.out, "dry run:   nothing was changed\n")) << r.out;
    EXPECT_TRUE(s.untouched());
    r = s.flash({"--board", "ice40-hx8k-breakout", "--flash", bin});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(has(s.f.read("loader.log"), "args: -b ice40_generic -f " + bin + "\n")) << s.f.read("loader.log");
    EXPECT_TRUE(s.dev_file("remove").empty() && s.f.read("sys/bus/pci/rescan").empty());
    r = s.flash({"--board", "ac701", "--force-unbind", "--dry-run", bin});
    EXPECT_EQ(r.status, 3);
    EXPECT_TRUE(has(r.err, "refusing: the bitstream was built for board 'ice40-hx8k-breakout'")) << r.err;
}

TEST(velo_flash, bit_header_parser) {
    std::string err;
    BitHeader h;
    std::string good = make_bit("7a200tfbg676");
    auto parse = [&](const std::string& s) {
        err.clear();
        return parse_bit_header(std::vector<uint8_t>(s.begin(), s.end()), h, err);
    };
    ASSERT_TRUE(parse(good)) << err;
    EXPECT_TRUE(h.present);
    EXPECT_EQ(h.design, "velo_top;UserID=0XFFFFFFFF;Version=2022.2");
    EXPECT_EQ(h.part, "7a200tfbg676");
    EXPECT_EQ(h.date, "2024/05/06");
    EXPECT_EQ(h.time, "12:34:56");
    EXPECT_EQ(h.data_len, 16u + 16u + 4u + 256u);
    EXPECT_TRUE(parse(std::string(100, '\xff')));
    EXPECT_FALSE(h.present);
    EXPECT_FALSE(parse(good.substr(0, good.size() - 1)));
    EXPECT_EQ(err,
              ".bit header says 292 bytes of configuration data, the file has 291 (truncated or corrupt bitstream)");
    EXPECT_FALSE(parse(good.substr(0, 20)));
    EXPECT_EQ(err, "malformed .bit header: field 'a' runs past the end of the file");
    EXPECT_FALSE(parse(make_bit("7a200tfbg676", 256, false)));
    EXPECT_EQ(err, "no sync word (AA 99 55 66) at the start of the configuration data");
    std::string bad = good;
    bad[3] = 0x00;
    EXPECT_FALSE(parse(bad));
    EXPECT_EQ(err, "malformed .bit header (bad preamble)");
    bad = good;
    bad[13] = 'z';
    EXPECT_FALSE(parse(bad));
    EXPECT_EQ(err, "malformed .bit header: unknown field 0x7a at offset 13");
    EXPECT_EQ(normalize_part("XC7A200T-2FBG676C"), "7a200t");
    EXPECT_EQ(normalize_part("xc7a200tfbg676-2"), "7a200tfbg676");
    EXPECT_EQ(normalize_part("7a200tfbg676"), "7a200tfbg676");
    // CRC-32 as zlib / Python compute it
    std::string q = "123456789";
    EXPECT_EQ(crc32(std::vector<uint8_t>(q.begin(), q.end())), 0xcbf43926u);
}

TEST(velo_flash, manifest_parser) {
    Manifest m;
    std::string err;
    ASSERT_TRUE(
        parse_manifest("{\"velo_manifest\": 1, \"board\": \"ac701\", \"part\": \"xc7a200tfbg676\", "
                       "\"design_version\": 256, \"spec_hash\": \"0x332ECE82\", \"extra\": [1, {\"x\": null}]}",
                       m, err))
        << err;
    EXPECT_EQ(m.board, "ac701");
    EXPECT_EQ(m.design_version, 256u);
    EXPECT_EQ(m.spec_hash, 0x332ece82u);
    EXPECT_FALSE(m.have_crc);
    struct Case {
        const char* text;
        const char* err;
    } cases[] = {
        {"", "line 1 column 1: unexpected end of input"},
        {"[]", "the manifest must be a JSON object"},
        {"{\"velo_manifest\": 2}", "unsupported manifest format 2 (this velo-flash reads format 1)"},
        {"{\"velo_manifest\": 1, \"part\": \"x\", \"design_version\": 1, \"spec_hash\": 1}", "missing \"board\""},
        {"{\"velo_manifest\": 1, \"board\": 7}", "\"board\" must be a non-empty string"},
        {"{\"velo_manifest\": 1, \"board\": \"a\", \"part\": \"x\", \"design_version\": \"0x1ffffffff\"}",
         "\"design_version\" must be a 32-bit number (\"0x1234abcd\" or decimal)"},
        {"{\"velo_manifest\": 1, \"board\": \"a\", \"board\": \"b\"}", "line 1 column 36: duplicate key \"board\""},
        {"{\"velo_manifest\": 1,}", "line 1 column 21: expected a string key"},
        {"{\"a\": \"x\ny\"}", "line 1 column 9: control character in a string"},
        {"{} x", "line 1 column 4: unexpected text after the JSON value"},
    };
    for (const Case& c : cases) {
        EXPECT_FALSE(parse_manifest(c.text, m, err)) << c.text;
        EXPECT_EQ(err, c.err) << c.text;
    }
    // the writer's output reads back, escapes included
    Manifest w;
    w.board = "a\"b\\c";
    w.part = "p";
    w.design_version = 1;
    w.spec_hash = 2;
    ASSERT_TRUE(parse_manifest(manifest_json(w), m, err)) << err;
    EXPECT_EQ(m.board, "a\"b\\c");
}

}  // namespace
