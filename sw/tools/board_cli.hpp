// SPDX-License-Identifier: MIT
// The command line both board tools (velo-info, velo-flash) share: walking the arguments and
// taking option values, where the machine is (config space through libpci; the sysfs, procfs and
// debugfs roots) and the -s PCI address. See docs/board-tools.md.
#pragma once

#include <optional>
#include <string>

#include "board.hpp"

namespace velo::board {

// Walks argv[1..]; value() takes an option's argument.
class Args {
  public:
    Args(const char* prog, int argc, char** argv) : prog_(prog), argc_(argc), argv_(argv) {}
    bool more() const { return i_ < argc_; }
    std::string next() { return argv_[i_++]; }
    // The argument after option opt; false with "PROG: OPT needs an argument" on stderr.
    bool value(const std::string& opt, std::string& v);

  private:
    const char* prog_;
    int argc_;
    char** argv_;
    int i_ = 1;
};

enum class Taken { no, yes, error };

// --pci-dump FILE, --pci-method NAME, --root DIR, --sysfs-root DIR, --proc-root DIR,
// --debugfs-root DIR.
struct MachineOptions {
    PciSource pci;
    std::string root, sysfs, procfs, debugfs;
    // Takes option a (and its value from args) if it is one of the above.
    Taken take(const std::string& a, Args& args);
    // The roots: under --root DIR, each overridden by its own option.
    Roots roots() const;
};

// The -s address: sel empty = no selection (want stays empty); false with err on a bad address.
bool parse_selection(const std::string& sel, std::optional<PciAddr>& want, std::string& err);

}  // namespace velo::board
