// velo-fabric: the command line (see fabric.hpp).
#include <cstdlib>
#include <string>

#include "fabric.hpp"

namespace velo::fabric {

const char* usage() {
    return "usage: velo-fabric [--nodes N] [--topology pair|ring:N|torus:XxY] [--socket PATH]\n"
           "                   [--split-rate P [--split-bytes]] [--seed S] [--sync-timeout-ms MS] [--wide]\n"
           "                   [--spin-us US] [--threads T] [--ready-fd FD] [--no-sim-gate] [--verbose]\n"
           "Serves a simulated VELO cluster (Verilated NICs) to programs using libvelo:\n"
           "  VELO_DEVICE=sim:PATH VELO_NODE=<node> ./program\n"
           "Default socket: $XDG_RUNTIME_DIR/velo-fabric.sock, else /tmp/velo-fabric-<uid>.sock.\n"
           "  --split-rate P        flush that fraction of stores as two pieces (fragments), cut\n"
           "                        between two quadword stores (--split-bytes: at any byte)\n"
           "  --sync-timeout-ms MS  simulated time stands while a woken client reacts (0: off)\n"
           "  --spin-us US          poll this long for a woken client's reaction or a new store before\n"
           "                        sleeping (default: 50 with two or more CPUs online, else 0)\n"
           "  --threads T           evaluate the NICs of a cycle on T threads (the same cycles; default:\n"
           "                        2 with two or more CPUs online and two or more nodes, else 1)\n"
           "  --no-sim-gate         evaluate every NIC's RMA unit and switch in every cycle (no\n"
           "                        clock gating of idle units: the same cycles, slower)\n";
}

bool parse_options(int argc, char** argv, Options& o, std::string& err) {
    for (int i = 0; i < argc; ++i) {
        std::string a = argv[i];
        auto val = [&](const char* name) -> const char* {
            if (i + 1 >= argc) {
                err = std::string(name) + " needs a value";
                return nullptr;
            }
            return argv[++i];
        };
        auto num = [&](const char* s, double lo, double hi, double& out) {
            char* end = nullptr;
            out = std::strtod(s, &end);
            if (!*s || *end || out < lo || out > hi) {
                err = "bad value for " + a + ": " + s;
                return false;
            }
            return true;
        };
        double d;
        const char* v;
        if (a == "--nodes" || a == "-n") {
            if (!(v = val("--nodes")) || !num(v, 2, 256, d)) return false;
            o.nodes = static_cast<unsigned>(d);
        } else if (a == "--topology" || a == "-t") {
            if (!(v = val("--topology"))) return false;
            o.topology = v;
        } else if (a == "--socket" || a == "-s") {
            if (!(v = val("--socket"))) return false;
            o.socket = v;
        } else if (a == "--split-rate") {
            if (!(v = val("--split-rate")) || !num(v, 0, 1, d)) return false;
            o.split_rate = d;
        } else if (a == "--seed") {
            if (!(v = val("--seed")) || !num(v, 0, 1e18, d)) return false;
            o.seed = static_cast<uint64_t>(d);
        } else if (a == "--sync-timeout-ms") {
            if (!(v = val("--sync-timeout-ms")) || !num(v, 0, 600000, d)) return false;
            o.sync_timeout_ms = static_cast<int>(d);
        } else if (a == "--spin-us") {
            if (!(v = val("--spin-us")) || !num(v, 0, 1000000, d)) return false;
            o.spin_us = static_cast<int>(d);
        } else if (a == "--threads") {
            if (!(v = val("--threads")) || !num(v, 1, 64, d)) return false;
            o.threads = static_cast<int>(d);
        } else if (a == "--ready-fd") {
            if (!(v = val("--ready-fd")) || !num(v, 0, 1 << 20, d)) return false;
            o.ready_fd = static_cast<int>(d);
        } else if (a == "--split-bytes") {
            o.split_bytes = true;
        } else if (a == "--wide") {
            o.wide = true;
        } else if (a == "--no-sim-gate") {
            o.sim_gate = false;
        } else if (a == "--verbose" || a == "-v") {
            o.verbose = true;
        } else {
            err = "unknown option: " + a;
            return false;
        }
    }
    return true;
}
}  // namespace velo::fabric
