// SPDX-License-Identifier: MIT
// velo-info: lists the VELO boards of this machine (libpci, vendor/device from the spec) with
// their PCI address, PCIe link (current and capable), BARs, bound driver, design identity (ID
// block through the driver's sysfs attributes or resource0) and whether the send window (BAR2)
// is write-combined (the driver's wc_active, the PAT memtype list, /proc/mtrr).
// See docs/board-tools.md.
//
//   velo-info
//   velo-info -s 0000:03:00.0
//   velo-info --pci-dump machine.lspci --root /tmp/fake     (recorded config space, fake /sys)
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "board.hpp"
#include "board_cli.hpp"
#include "velo/velo_hw.h"

using namespace velo::board;

namespace {

void usage(FILE* f) {
    fprintf(f,
            "usage: velo-info [options]\n"
            "  -s ADDR              only the board at this PCI address ([domain:]bus:dev.fn)\n"
            "  --pci-dump FILE      read config space from an `lspci -xxx` (or -x, -xxxx) dump instead of\n"
            "                       the machine (libpci dump method)\n"
            "  --pci-method NAME    libpci access method (default: automatic; linux-sysfs under --root)\n"
            "  --root DIR           look for sys/, proc/ and sys/kernel/debug/ under DIR\n"
            "  --sysfs-root DIR     sysfs (default /sys)\n"
            "  --proc-root DIR      procfs (default /proc)\n"
            "  --debugfs-root DIR   debugfs (default /sys/kernel/debug)\n"
            "  -h, --help           this text\n"
            "Exit status: 0 boards listed, 1 no VELO board, 2 bad usage or unreadable input,\n"
            "3 a board was listed with a problem (marked PROBLEM).\n");
}

const char* bar_role(int i) {
    if (i == VELO_BAR_REGS) return "registers";
    if (i == VELO_BAR_SEND) return "send window";
    if (i == VELO_BAR_RMA) return "RMA window";
    return nullptr;
}

struct Report {
    int problems = 0;
    void problem(const std::string& what) {
        printf("  PROBLEM:   %s\n", what.c_str());
        problems++;
    }
};

void print_board(const PciDevice& d, const Roots& roots, Report& rep) {
    printf("%s VELO %04x:%04x rev %02x\n", d.addr.str().c_str(), d.vendor, d.device, d.rev);

    // PCIe link
    if (!d.link.present) {
        printf("  link:      no PCI Express capability\n");
    } else {
        const Link& l = d.link;
        std::string deg;
        if (l.cur_speed < l.cap_speed) deg += "speed";
        if (l.cur_width < l.cap_width) deg += deg.empty() ? "width" : " and width";
        printf("  link:      %s x%u, capable %s x%u%s\n", link_speed_name(l.cur_speed).c_str(), l.cur_width,
               link_speed_name(l.cap_speed).c_str(), l.cap_width,
               deg.empty() ? "" : (" (degraded: " + deg + ")").c_str());
        if (l.cur_width == 0) rep.problem("link is down (negotiated width 0)");
    }

    // BARs: the three of the spec always, others when present
    for (int i = 0; i < 6; i++) {
        const Bar& b = d.bars[i];
        const char* role = bar_role(i);
        if (!role && !b.present) continue;
        if (i > 0 && d.bars[i - 1].is64) continue;  // upper half of a 64-bit BAR
        if (!b.present) {
            printf("  BAR%d:      absent (%s)\n", i, role);
            rep.problem(std::string("BAR") + std::to_string(i) + " (" + role + ") is not implemented");
            continue;
        }
        std::string size = b.size ? size_name(b.size) : "size unknown";
        std::string kind =
            b.io ? "I/O" : std::string(b.is64 ? "64-bit" : "32-bit") + (b.prefetch ? " prefetchable" : "");
        std::string state = b.base == 0 ? "not assigned" : d.mem_decode() ? "mapped" : "assigned, memory decoding off";
        printf("  BAR%d:      0x%llx, %s, %s, %s%s%s%s\n", i, (unsigned long long)b.base, size.c_str(), kind.c_str(),
               state.c_str(), role ? " (" : "", role ? role : "", role ? ")" : "");
        if (role && state != "mapped") rep.problem(std::string("BAR") + std::to_string(i) + " is " + state);
    }
    printf("  BAR sizes: %s\n", d.sizes == SizeSource::unknown
                                    ? "unknown (libpci did not report them and there is no sysfs resource file)"
                                    : size_source_name(d.sizes));
    const Bar& regs = d.bars[VELO_BAR_REGS];
    if (regs.size && regs.size != (1ull << VELO_BAR_REGS_BITS))
        rep.problem("BAR0 is " + size_name(regs.size) + ", the spec says " + size_name(1ull << VELO_BAR_REGS_BITS));

    // driver
    auto drv = bound_driver(roots, d.addr);
    std::string cdev = velo_class_dev(roots, d.addr);
    if (!drv)
        printf("  driver:    unknown (no %s)\n", roots.pci_dev_dir(d.addr.str()).c_str());
    else if (drv->empty())
        printf("  driver:    none\n");
    else
        printf("  driver:    %s%s\n", drv->c_str(), cdev.empty() ? "" : (" (" + cdev + ")").c_str());

    // design identity: the driver's attributes if it is bound, else resource0 (root only)
    std::string res0 = roots.pci_dev_dir(d.addr.str()) + "/resource0";
    IdBlock id = cdev.empty() ? read_id_resource0(res0) : read_id_driver(roots, cdev);
    IdBlock raw = cdev.empty() ? id : read_id_resource0(res0);  // CAPS only come from BAR0
    if (!id.ok) {
        printf("  design:    unknown\n");
        rep.problem("cannot read the ID block: " + id.err);
    } else {
        std::string match =
            id.spec_hash == VELO_SPEC_HASH ? "matches this build" : "this build has " + hex32(VELO_SPEC_HASH);
        printf("  design:    version %s (%s), spec hash %s (%s), node %s\n", version_name(id.design_version).c_str(),
               hex32(id.design_version).c_str(), hex32(id.spec_hash).c_str(), match.c_str(),
               id.have_node ? std::to_string(id.node_id).c_str() : "unknown");
        printf("  id from:   %s\n", id.source.c_str());
        if (id.spec_hash != VELO_SPEC_HASH)
            rep.problem("built from another spec (" + hex32(id.spec_hash) +
                        "): the driver and libvelo of this build refuse it");
    }
    if (raw.ok) {
        unsigned nb = (unsigned)VELO_FIELD_GET(VELO_REG_ID_CAPS_NODE_BITS, raw.caps);
        unsigned vb = (unsigned)VELO_FIELD_GET(VELO_REG_ID_CAPS_VPID_BITS, raw.caps);
        printf("  caps:      node bits %u, vpid bits %u, TLP %u B, link %u B, max message %u B\n", nb, vb,
               (unsigned)VELO_FIELD_GET(VELO_REG_ID_CAPS_TLP_BYTES, raw.caps),
               (unsigned)VELO_FIELD_GET(VELO_REG_ID_CAPS_LINK_BYTES, raw.caps),
               (unsigned)VELO_FIELD_GET(VELO_REG_ID_CAPS_MSG_MAX, raw.caps));
        unsigned bits = VELO_SEND_ADDR_SRC_VPID_SHIFT(vb, nb) + VELO_SEND_ADDR_SRC_VPID_WIDTH(vb, nb);
        const Bar& send = d.bars[VELO_BAR_SEND];
        if (bits < 64 && send.size && send.size != (1ull << bits))
            rep.problem("BAR2 is " + size_name(send.size) + ", the send window of these CAPS needs " +
                        size_name(1ull << bits));
    } else if (id.ok) {
        printf("  caps:      unknown (%s)\n", raw.err.c_str());
    }

    // write combining of the send window
    WcState wc = wc_state(roots, cdev, d.bars[VELO_BAR_SEND]);
    printf("  wc:        %s\n", wc.verdict().c_str());
    std::string pat = wc.pat_wc < 0 ? "not readable (" + wc.pat_err + ")"
                                    : std::to_string(wc.pat_wc) + " write-combining, " + std::to_string(wc.pat_other) +
                                          " other entries in BAR2";
    std::string mtrr = wc.mtrr_wc < 0 ? "not readable (" + wc.mtrr_err + ")"
                                      : std::to_string(wc.mtrr_wc) + " write-combining ranges in BAR2";
    printf("  wc detail: driver wc_active=%s; PAT: %s; MTRR: %s\n", wc.driver.empty() ? "-" : wc.driver.c_str(),
           pat.c_str(), mtrr.c_str());
    if (wc.pat_other > 0 && wc.pat_wc == 0)
        rep.problem("BAR2 is mapped with another memory type than write-combining (see the PAT list)");
}

}  // namespace

int main(int argc, char** argv) {
    MachineOptions mo;
    std::string sel;
    Args args("velo-info", argc, argv);
    while (args.more()) {
        std::string a = args.next();
        Taken t = mo.take(a, args);
        if (t == Taken::error) return 2;
        if (t == Taken::yes) continue;
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        } else if (a == "-s") {
            if (!args.value(a, sel)) return 2;
        } else {
            fprintf(stderr, "velo-info: unknown argument '%s'\n", a.c_str());
            usage(stderr);
            return 2;
        }
    }
    const PciSource& src = mo.pci;
    const Roots roots = mo.roots();
    std::optional<PciAddr> want;
    std::string err;
    if (!parse_selection(sel, want, err)) {
        fprintf(stderr, "velo-info: %s\n", err.c_str());
        return 2;
    }

    std::vector<PciDevice> devs;
    if (!scan(src, roots, devs, err)) {
        fprintf(stderr, "velo-info: %s\n", err.c_str());
        return 2;
    }
    std::vector<const PciDevice*> velo;
    for (const PciDevice& d : devs) {
        if (want && !(d.addr == *want)) continue;
        if (want && !d.is_velo()) {
            fprintf(stderr, "velo-info: %s is %04x:%04x, not a VELO board (%04x:%04x)\n", d.addr.str().c_str(),
                    d.vendor, d.device, VELO_PCI_VENDOR_ID, VELO_PCI_DEVICE_ID);
            return 1;
        }
        if (d.is_velo()) velo.push_back(&d);
    }
    if (velo.empty()) {
        if (want)
            fprintf(stderr, "velo-info: no PCI device at %s\n", want->str().c_str());
        else
            fprintf(stderr, "velo-info: no VELO board found (%zu PCI devices scanned, looking for %04x:%04x)\n",
                    devs.size(), VELO_PCI_VENDOR_ID, VELO_PCI_DEVICE_ID);
        return 1;
    }
    Report rep;
    for (size_t i = 0; i < velo.size(); i++) {
        if (i) printf("\n");
        print_board(*velo[i], roots, rep);
    }
    fflush(stdout);
    if (rep.problems) {
        fprintf(stderr, "velo-info: %d problem(s), see PROBLEM lines\n", rep.problems);
        return 3;
    }
    return 0;
}
