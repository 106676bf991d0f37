// SPDX-License-Identifier: MIT
// velo-flash: programs a VELO board with openFPGALoader and brings the new design back on the
// PCI bus. Before anything is changed it checks that the bitstream was built for this board
// (the part in the Xilinx .bit header, the board/part/spec hash in the sidecar manifest
// <bitstream>.json, and the FPGA that openFPGALoader --detect finds on the JTAG chain). Then:
// unbind the driver (only with --force-unbind), remove the PCI device, program, rescan the bus,
// and wait (bounded) until libpci sees the device again with the VELO ids and its ID block
// reports the expected design version and spec hash. --dry-run prints every step and does none.
// See docs/board-tools.md.
//
//   velo-flash --board ac701 build/fpga/xc7/velo_ac701.bit
//   velo-flash --board ac701 --dry-run velo.bit
//   velo-flash --board ac701 --write-manifest velo.bit          (writes velo.bit.json)
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "board.hpp"
#include "board_cli.hpp"
#include "velo/velo_hw.h"

extern char** environ;

using namespace velo::board;

namespace {

// exit statuses
enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_REFUSED = 3, EXIT_NO_DEVICE = 4 };

void usage(FILE* f) {
    fprintf(f,
            "usage: velo-flash --board NAME [options] BITSTREAM\n"
            "       velo-flash --board NAME --write-manifest [--design-version V] [--spec-hash H] BITSTREAM\n"
            "       velo-flash --list-boards\n"
            "  --board NAME         the board in this machine (see --list-boards)\n"
            "  --manifest FILE      the bitstream's manifest (default: BITSTREAM.json when it exists;\n"
            "                       required for bitstreams without a .bit header)\n"
            "  -s ADDR              the PCI device to reflash (default: the only VELO board found)\n"
            "  --dry-run            check everything, print every step, change nothing\n"
            "  --force-unbind       unbind the bound driver first (default: refuse while a driver is bound)\n"
            "  --flash              write the configuration flash (openFPGALoader -f) instead of the SRAM\n"
            "  --cable NAME         openFPGALoader cable (-c NAME) instead of the board table's\n"
            "  --loader PATH        openFPGALoader program (default: openFPGALoader from PATH)\n"
            "  --no-detect          skip the check of the FPGA part on the JTAG chain\n"
            "  --any-spec           flash a design built from another spec than this build's\n"
            "  --timeout SEC        wait up to SEC seconds for the device to come back (default 10)\n"
            "  --pci-dump FILE      config space before flashing from an lspci -xxx dump (tests)\n"
            "  --pci-dump-after FILE  config space after the rescan from this dump (tests)\n"
            "  --pci-method NAME    libpci access method\n"
            "  --root DIR           look for sys/, proc/ under DIR (tests); also --sysfs-root DIR\n"
            "Exit status: 0 flashed and verified (or dry run passed), 1 programming or verification failed,\n"
            "2 bad usage or unreadable input, 3 refused (bitstream for another board/part/spec, driver\n"
            "bound), 4 no (single) board found.\n");
}

std::string shell_quote(const std::string& s) {
    if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%") ==
                          std::string::npos)
        return s;
    std::string o = "'";
    for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return o + "'";
}

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& a : v) s += (s.empty() ? "" : " ") + shell_quote(a);
    return s;
}

// Runs argv; captures stdout into *out when out is given. Returns the exit status, or -1 with
// err set when the program could not be started.
int run(const std::vector<std::string>& argv, std::string* out, std::string& err) {
    std::vector<char*> av;
    for (const std::string& a : argv) av.push_back(const_cast<char*>(a.c_str()));
    av.push_back(nullptr);
    int pfd[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out) {
        if (pipe2(pfd, O_CLOEXEC) != 0) {
            err = std::string("pipe: ") + strerror(errno);
            posix_spawn_file_actions_destroy(&fa);
            return -1;
        }
        posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid;
    int rc = posix_spawnp(&pid, av[0], &fa, nullptr, av.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (out) close(pfd[1]);
    if (rc != 0) {
        err = "cannot run " + argv[0] + ": " + strerror(rc);
        if (out) close(pfd[0]);
        return -1;
    }
    if (out) {
        char buf[4096];
        for (;;) {
            ssize_t n = read(pfd[0], buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            out->append(buf, (size_t)n);
        }
        close(pfd[0]);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            err = std::string("waitpid: ") + strerror(errno);
            return -1;
        }
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

// Is the program runnable (a path, or a name found in PATH)?
bool runnable(const std::string& prog) {
    if (prog.find('/') != std::string::npos) return access(prog.c_str(), X_OK) == 0;
    const char* path = getenv("PATH");
    std::string p = path ? path : "/usr/bin:/bin";
    size_t s = 0;
    for (;;) {
        size_t e = p.find(':', s);
        std::string dir = p.substr(s, e == std::string::npos ? std::string::npos : e - s);
        if (dir.empty()) dir = ".";
        std::string f = dir + "/" + prog;
        struct stat st;
        if (stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(f.c_str(), X_OK) == 0) return true;
        if (e == std::string::npos) return false;
        s = e + 1;
    }
}

// FPGA models in `openFPGALoader --detect` output ("\tmodel  xc7a200").
std::vector<std::string> detected_models(const std::string& out) {
    std::vector<std::string> m;
    size_t s = 0;
    while (s < out.size()) {
        size_t e = out.find('\n', s);
        std::string line = out.substr(s, e == std::string::npos ? std::string::npos : e - s);
        s = e == std::string::npos ? out.size() : e + 1;
        size_t k = line.find_first_not_of(" \t");
        if (k == std::string::npos || line.compare(k, 6, "model ") != 0) continue;
        std::string v = line.substr(k + 6);
        v.erase(0, v.find_first_not_of(" \t"));
        while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.pop_back();
        if (!v.empty()) m.push_back(v);
    }
    return m;
}

double now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void step(const char* what, const std::string& detail) {
    printf("%-10s %s\n", what, detail.c_str());
    fflush(stdout);
}

int fail(int code, const std::string& msg) {
    fflush(stdout);
    fprintf(stderr, "velo-flash: %s\n", msg.c_str());
    return code;
}

struct Options {
    std::string board, bitstream, manifest, sel, cable, loader = "openFPGALoader";
    bool dry_run = false, force_unbind = false, flash = false, detect = true, any_spec = false;
    bool write_manifest = false;
    std::string design_version, spec_hash;
    double timeout = 10;
    PciSource before, after;
    bool have_after = false;
    Roots roots;
};

// What the bitstream is and what it must come back as.
struct Expect {
    const BoardInfo* board = nullptr;
    BitHeader hdr;
    bool have_manifest = false;
    Manifest man;
    std::string man_path;
    uint32_t design_version = VELO_SPEC_VERSION, spec_hash = VELO_SPEC_HASH;
};

// The read-only checks of the bitstream against the board. Returns EXIT_OK or an exit status.
int check_bitstream(const Options& o, Expect& x, std::vector<uint8_t>& bits) {
    std::string err;
    if (!read_file(o.bitstream, bits, err)) return fail(EXIT_USAGE, "cannot read the bitstream: " + err);
    if (!parse_bit_header(bits, x.hdr, err)) return fail(EXIT_USAGE, o.bitstream + ": " + err);
    const BoardInfo& b = *x.board;
    if (x.hdr.present)
        step("bitstream:", o.bitstream + ": part " + x.hdr.part + ", design " + x.hdr.design + ", built " + x.hdr.date +
                               " " + x.hdr.time + ", " + std::to_string(x.hdr.data_len) + " bytes");
    else
        step("bitstream:", o.bitstream + ": no .bit header, " + std::to_string(bits.size()) + " bytes");

    x.man_path = o.manifest.empty() ? o.bitstream + ".json" : o.manifest;
    struct stat st;
    if (!o.manifest.empty() || stat(x.man_path.c_str(), &st) == 0) {
        std::string text;
        if (!read_text(x.man_path, text, err)) return fail(EXIT_USAGE, "cannot read the manifest: " + err);
        if (!parse_manifest(text, x.man, err)) return fail(EXIT_USAGE, x.man_path + ": " + err);
        x.have_manifest = true;
        uint32_t crc = crc32(bits);
        std::string base = o.bitstream.substr(o.bitstream.find_last_of('/') + 1);
        if (x.man.have_crc && x.man.crc32 != crc)
            return fail(EXIT_REFUSED, x.man_path + " does not describe " + o.bitstream + ": crc32 " +
                                          hex32(x.man.crc32) + " in the manifest, " + hex32(crc) +
                                          " computed (stale manifest?)");
        if (!x.man.bitstream.empty() && x.man.bitstream != base)
            return fail(EXIT_REFUSED, x.man_path + " describes '" + x.man.bitstream + "', not '" + base + "'");
        step("manifest:", x.man_path + ": board " + x.man.board + ", part " + x.man.part + ", design version " +
                              hex32(x.man.design_version) + ", spec hash " + hex32(x.man.spec_hash) +
                              (x.man.have_crc ? ", crc32 matches" : ", no crc32"));
        x.design_version = x.man.design_version;
        x.spec_hash = x.man.spec_hash;
    } else if (!x.hdr.present) {
        return fail(EXIT_REFUSED, o.bitstream + " has no .bit header naming its FPGA part: a manifest (" + x.man_path +
                                      " or --manifest) is required to check that it is built for board " + b.name);
    }

    // the decisions
    if (x.have_manifest && x.man.board != b.name)
        return fail(EXIT_REFUSED, "refusing: the bitstream was built for board '" + x.man.board + "' (" + x.man_path +
                                      "), this is board '" + b.name + "'");
    if (x.have_manifest && normalize_part(x.man.part) != normalize_part(b.part))
        return fail(EXIT_REFUSED,
                    "refusing: the manifest names part " + x.man.part + ", board " + b.name + " has " + b.part);
    if (x.hdr.present && normalize_part(x.hdr.part) != normalize_part(b.part))
        return fail(EXIT_REFUSED, "refusing: the bitstream is for part " + x.hdr.part + " (.bit header), board " +
                                      b.name + " has " + b.part);
    if (x.spec_hash != VELO_SPEC_HASH && !o.any_spec)
        return fail(EXIT_REFUSED, "refusing: the design was built from spec " + hex32(x.spec_hash) +
                                      ", this build (velo-flash, driver, libvelo) from " + hex32(VELO_SPEC_HASH) +
                                      "; pass --any-spec to flash it anyway");
    return EXIT_OK;
}

std::vector<std::string> loader_base(const Options& o, const BoardInfo& b) {
    std::vector<std::string> a = {o.loader};
    std::string cable = o.cable.empty() ? b.cable : o.cable;
    if (b.ofl_board[0]) {
        a.push_back("-b");
        a.push_back(b.ofl_board);
    }
    if (!cable.empty()) {
        a.push_back("-c");
        a.push_back(cable);
    }
    return a;
}

// After the rescan: is the device back with the VELO ids and the expected ID block?
bool verify_once(const Options& o, const Expect& x, const PciAddr& addr, std::string& why, std::string& source) {
    std::vector<PciDevice> devs;
    std::string err;
    if (!scan(o.have_after ? o.after : o.before, o.roots, devs, err)) {
        why = "cannot scan the bus: " + err;
        return false;
    }
    const PciDevice* d = nullptr;
    std::string elsewhere;
    for (const PciDevice& e : devs) {
        if (e.addr == addr) d = &e;
        if (e.is_velo() && !(e.addr == addr)) elsewhere += " " + e.addr.str();
    }
    if (!d) {
        why = "no PCI device at " + addr.str() + " after the rescan" +
              (elsewhere.empty() ? "" : " (VELO boards now at" + elsewhere + ")");
        return false;
    }
    if (!d->is_velo()) {
        char b[160];
        snprintf(b, sizeof b, "%s came back as %04x:%04x, expected %04x:%04x", addr.str().c_str(), d->vendor, d->device,
                 VELO_PCI_VENDOR_ID, VELO_PCI_DEVICE_ID);
        why = b;
        return false;
    }
    IdBlock id = read_id_resource0(o.roots.pci_dev_dir(addr.str()) + "/resource0");
    if (!id.ok && !id.have_magic) {
        // BAR0 could not be mapped: with CONFIG_IO_STRICT_DEVMEM the kernel refuses while a driver
        // holds it, and the velo driver binds on the rescan. Then its attributes tell.
        std::string cdev = velo_class_dev(o.roots, addr);
        IdBlock drv = cdev.empty() ? IdBlock() : read_id_driver(o.roots, cdev);
        if (drv.ok)
            id = drv;
        else if (!cdev.empty())
            id.err += "; " + drv.err;
    }
    if (!id.ok) {
        why = "cannot read the ID block: " + id.err;
        return false;
    }
    source = id.source;
    if (id.design_version != x.design_version || id.spec_hash != x.spec_hash) {
        why = "the device reports design version " + hex32(id.design_version) + ", spec hash " + hex32(id.spec_hash) +
              "; expected " + hex32(x.design_version) + ", " + hex32(x.spec_hash) + " (the new design did not load?)";
        return false;
    }
    return true;
}

int write_manifest(const Options& o, const BoardInfo& b) {
    std::vector<uint8_t> bits;
    BitHeader hdr;
    std::string err;
    if (!read_file(o.bitstream, bits, err)) return fail(EXIT_USAGE, "cannot read the bitstream: " + err);
    if (!parse_bit_header(bits, hdr, err)) return fail(EXIT_USAGE, o.bitstream + ": " + err);
    if (hdr.present && normalize_part(hdr.part) != normalize_part(b.part))
        return fail(EXIT_REFUSED, "refusing: the bitstream is for part " + hdr.part + " (.bit header), board " +
                                      b.name + " has " + b.part);
    Manifest m;
    m.format = 1;
    m.board = b.name;
    m.part = b.part;
    m.bitstream = o.bitstream.substr(o.bitstream.find_last_of('/') + 1);
    m.design_version = VELO_SPEC_VERSION;
    m.spec_hash = VELO_SPEC_HASH;
    auto num = [&](const std::string& s, uint32_t& v, const char* what) {
        if (s.empty() || parse_u32(s, v)) return true;
        fprintf(stderr, "velo-flash: bad %s '%s' (a 32-bit number, 0x... or decimal)\n", what, s.c_str());
        return false;
    };
    if (!num(o.design_version, m.design_version, "--design-version") || !num(o.spec_hash, m.spec_hash, "--spec-hash"))
        return EXIT_USAGE;
    m.have_crc = true;
    m.crc32 = crc32(bits);
    std::string path = o.manifest.empty() ? o.bitstream + ".json" : o.manifest;
    std::string text = manifest_json(m);
    FILE* f = fopen(path.c_str(), "w");
    if (!f || fwrite(text.data(), 1, text.size(), f) != text.size() || fclose(f) != 0)
        return fail(EXIT_USAGE, "cannot write " + path + ": " + strerror(errno));
    step("wrote:", path);
    return EXIT_OK;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    MachineOptions mo;
    std::string timeout;
    bool list = false;
    Args args("velo-flash", argc, argv);
    while (args.more()) {
        std::string a = args.next();
        Taken t = mo.take(a, args);
        if (t == Taken::error) return EXIT_USAGE;
        if (t == Taken::yes) continue;
        bool ok = true;
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return EXIT_OK;
        } else if (a == "--list-boards") {
            list = true;
        } else if (a == "--board") {
            ok = args.value(a, o.board);
        } else if (a == "--manifest") {
            ok = args.value(a, o.manifest);
        } else if (a == "-s") {
            ok = args.value(a, o.sel);
        } else if (a == "--dry-run") {
            o.dry_run = true;
        } else if (a == "--force-unbind") {
            o.force_unbind = true;
        } else if (a == "--flash") {
            o.flash = true;
        } else if (a == "--cable") {
            ok = args.value(a, o.cable);
        } else if (a == "--loader") {
            ok = args.value(a, o.loader);
        } else if (a == "--no-detect") {
            o.detect = false;
        } else if (a == "--any-spec") {
            o.any_spec = true;
        } else if (a == "--timeout") {
            ok = args.value(a, timeout);
        } else if (a == "--pci-dump-after") {
            ok = args.value(a, o.after.dump);
            o.have_after = true;
        } else if (a == "--write-manifest") {
            o.write_manifest = true;
        } else if (a == "--design-version") {
            ok = args.value(a, o.design_version);
        } else if (a == "--spec-hash") {
            ok = args.value(a, o.spec_hash);
        } else if (!a.empty() && a[0] == '-') {
            fprintf(stderr, "velo-flash: unknown option '%s'\n", a.c_str());
            usage(stderr);
            return EXIT_USAGE;
        } else if (o.bitstream.empty()) {
            o.bitstream = a;
        } else {
            fprintf(stderr, "velo-flash: more than one bitstream given ('%s', '%s')\n", o.bitstream.c_str(), a.c_str());
            return EXIT_USAGE;
        }
        if (!ok) return EXIT_USAGE;
    }
    if (list) {
        for (const BoardInfo& b : boards()) printf("%-14s %-16s %s\n", b.name, b.part, b.doc);
        return EXIT_OK;
    }
    o.roots = mo.roots();
    o.before = mo.pci;
    o.after.method = o.before.method;
    if (!timeout.empty()) {
        char* end = nullptr;
        o.timeout = strtod(timeout.c_str(), &end);
        if (*end || !(o.timeout >= 0 && o.timeout <= 3600)) {
            fprintf(stderr, "velo-flash: bad --timeout '%s' (seconds, 0..3600)\n", timeout.c_str());
            return EXIT_USAGE;
        }
    }
    if (o.board.empty() || o.bitstream.empty()) {
        usage(stderr);
        return EXIT_USAGE;
    }
    Expect x;
    x.board = find_board(o.board);
    if (!x.board) return fail(EXIT_USAGE, "unknown board '" + o.board + "' (known: " + board_names() + ")");
    const BoardInfo& b = *x.board;
    if (o.write_manifest) return write_manifest(o, b);

    // 1. the bitstream and its manifest
    std::vector<uint8_t> bits;
    if (int rc = check_bitstream(o, x, bits)) return rc;

    // 2. a board without PCIe: program it; no device to remove, rescan or read back (its host
    // talks to it over the UART bridge, docs/board-guide.md)
    if (!b.pcie) {
        step("board:", std::string(b.name) + " (" + b.part + "), no PCIe: nothing to remove, rescan or verify");
        if (!o.dry_run && !runnable(o.loader))
            return fail(EXIT_USAGE,
                        "cannot find " + o.loader + " (install the openfpgaloader package or pass --loader)");
        std::vector<std::string> prog = loader_base(o, b);
        if (o.flash) prog.push_back("-f");
        prog.push_back(o.bitstream);
        step("run:", join(prog));
        if (o.dry_run) {
            step("dry run:", "nothing was changed");
            return EXIT_OK;
        }
        std::string perr;
        int prc = run(prog, nullptr, perr);
        if (prc != 0)
            return fail(EXIT_FAILED, prc < 0 ? perr : o.loader + " failed (exit status " + std::to_string(prc) + ")");
        step("done:", "programmed (check it through the UART host bridge: PING, ID registers)");
        return EXIT_OK;
    }

    // 3. the device
    std::vector<PciDevice> devs;
    std::string err;
    if (!scan(o.before, o.roots, devs, err)) return fail(EXIT_USAGE, err);
    const PciDevice* dev = nullptr;
    std::vector<const PciDevice*> velo;
    std::optional<PciAddr> want;
    if (!parse_selection(o.sel, want, err)) return fail(EXIT_USAGE, err);
    for (const PciDevice& d : devs) {
        if (want && d.addr == *want) dev = &d;
        if (d.is_velo()) velo.push_back(&d);
    }
    if (want && !dev) return fail(EXIT_NO_DEVICE, "no PCI device at " + want->str());
    if (!want) {
        if (velo.empty())
            return fail(EXIT_NO_DEVICE, "no VELO board found (" + std::to_string(devs.size()) +
                                            " PCI devices scanned); if the FPGA holds another design, name its PCI "
                                            "address with -s");
        if (velo.size() > 1) {
            std::string l;
            for (const PciDevice* d : velo) l += (l.empty() ? "" : ", ") + d->addr.str();
            return fail(EXIT_NO_DEVICE,
                        std::to_string(velo.size()) + " VELO boards found (" + l + "): choose one with -s");
        }
        dev = velo[0];
    }
    const PciAddr addr = dev->addr;
    std::string devdir = o.roots.pci_dev_dir(addr.str());
    auto drv = bound_driver(o.roots, addr);
    if (!drv) return fail(EXIT_NO_DEVICE, addr.str() + " has no sysfs directory (" + devdir + "): cannot remove it");
    char ids[32];
    snprintf(ids, sizeof ids, "%04x:%04x", dev->vendor, dev->device);
    step("board:", std::string(b.name) + " (" + b.part + "), device " + addr.str() + " (" + ids +
                       (dev->is_velo() ? "" : ", not a VELO design") + "), driver " + (drv->empty() ? "none" : *drv));
    if (!drv->empty() && !o.force_unbind)
        return fail(EXIT_REFUSED, "refusing: " + addr.str() + " is bound to driver '" + *drv + "'; unload it (rmmod " +
                                      *drv + ") or pass --force-unbind");
    if (!o.dry_run && !runnable(o.loader))
        return fail(EXIT_USAGE, "cannot find " + o.loader + " (install the openfpgaloader package or pass --loader)");

    // 4. the FPGA on the JTAG chain must be the board's
    std::vector<std::string> base = loader_base(o, b);
    if (o.detect) {
        std::vector<std::string> cmd = base;
        cmd.push_back("--detect");
        step("run:", join(cmd));
        if (!o.dry_run) {
            std::string out;
            int rc = run(cmd, &out, err);
            if (rc != 0)
                return fail(EXIT_FAILED, rc < 0 ? err
                                                : o.loader + " --detect failed (exit status " + std::to_string(rc) +
                                                      "): is the JTAG cable connected?");
            std::vector<std::string> models = detected_models(out);
            std::string want_part = normalize_part(b.part), seen;
            bool match = false;
            for (const std::string& m : models) {
                std::string nm = normalize_part(m);
                if (!nm.empty() && want_part.compare(0, nm.size(), nm) == 0) match = true;
                seen += (seen.empty() ? "" : ", ") + m;
            }
            if (models.empty()) return fail(EXIT_FAILED, o.loader + " --detect found no FPGA on the JTAG chain");
            if (!match)
                return fail(EXIT_REFUSED, "refusing: the JTAG chain has " + seen + ", board " + b.name + " has " +
                                              b.part + " (wrong --board or cable?)");
            step("detect:", seen + " on the JTAG chain (matches " + b.part + ")");
        }
    }

    // 5. off the bus, program, back on the bus
    auto do_write = [&](const std::string& path, const std::string& value) {
        step("write:", value + " > " + path);
        if (o.dry_run) return true;
        std::string e;
        if (!write_attr(path, value, e)) {
            fail(EXIT_FAILED, e);
            return false;
        }
        return true;
    };
    if (!drv->empty() && !do_write(devdir + "/driver/unbind", addr.str())) return EXIT_FAILED;
    if (!do_write(devdir + "/remove", "1")) return EXIT_FAILED;
    std::vector<std::string> prog = base;
    if (o.flash) {
        prog.push_back("-f");
        if (!b.ofl_board[0]) {
            prog.push_back("--fpga-part");
            prog.push_back(b.part);
        }
    }
    prog.push_back(o.bitstream);
    step("run:", join(prog));
    int prc = 0;
    std::string perr;
    if (!o.dry_run) prc = run(prog, nullptr, perr);
    // rescan whatever happened: the bus should see what the FPGA now holds
    if (!do_write(o.roots.sysfs + "/bus/pci/rescan", "1")) return EXIT_FAILED;
    if (prc != 0)
        return fail(EXIT_FAILED, (prc < 0 ? perr : o.loader + " failed (exit status " + std::to_string(prc) + ")") +
                                     "; the bus was rescanned");

    // 6. wait for the device and check what it reports
    // whatever the device was before, it must come back as a VELO NIC
    snprintf(ids, sizeof ids, "%04x:%04x", VELO_PCI_VENDOR_ID, VELO_PCI_DEVICE_ID);
    char tmo[32];
    snprintf(tmo, sizeof tmo, "%g", o.timeout);
    step("wait:", std::string("up to ") + tmo + " s for " + addr.str() + " " + ids + " with design version " +
                      hex32(x.design_version) + ", spec hash " + hex32(x.spec_hash));
    if (o.dry_run) {
        step("dry run:", "nothing was changed");
        return EXIT_OK;
    }
    double deadline = now_s() + o.timeout;
    std::string why, source;
    for (;;) {
        if (verify_once(o, x, addr, why, source)) break;
        if (now_s() >= deadline)
            return fail(EXIT_FAILED, "verification failed after " + std::string(tmo) + " s: " + why);
        poll(nullptr, 0, 250);
    }
    step("verify:", addr.str() + " " + ids + ", design version " + hex32(x.design_version) + ", spec hash " +
                        hex32(x.spec_hash) + ": OK (" + source + ")");
    return EXIT_OK;
}
