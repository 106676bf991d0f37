// SPDX-License-Identifier: MIT
// The board tools' shared command line; see board_cli.hpp.
#include "board_cli.hpp"

#include <cstdio>

namespace velo::board {

bool Args::value(const std::string& opt, std::string& v) {
    if (i_ >= argc_) {
        fprintf(stderr, "%s: %s needs an argument\n", prog_, opt.c_str());
        return false;
    }
    v = argv_[i_++];
    return true;
}

Taken MachineOptions::take(const std::string& a, Args& args) {
    std::string* v = a == "--pci-dump"       ? &pci.dump
                     : a == "--pci-method"   ? &pci.method
                     : a == "--root"         ? &root
                     : a == "--sysfs-root"   ? &sysfs
                     : a == "--proc-root"    ? &procfs
                     : a == "--debugfs-root" ? &debugfs
                                             : nullptr;
    if (!v) return Taken::no;
    return args.value(a, *v) ? Taken::yes : Taken::error;
}

Roots MachineOptions::roots() const {
    Roots r = root.empty() ? Roots() : Roots::under(root);
    if (!sysfs.empty()) r.sysfs = sysfs;
    if (!procfs.empty()) r.procfs = procfs;
    if (!debugfs.empty()) r.debugfs = debugfs;
    return r;
}

bool parse_selection(const std::string& sel, std::optional<PciAddr>& want, std::string& err) {
    want.reset();
    if (sel.empty()) return true;
    want = parse_pci_addr(sel);
    if (!want) err = "bad PCI address '" + sel + "' (expected [domain:]bus:dev.fn)";
    return want.has_value();
}

}  // namespace velo::board
