// velo-fabric: the command line (see fabric.hpp).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fabric.hpp"
#include "velo/velo_uapi.h"

namespace velo::fabric {

namespace {

// s is a decimal number 0..max
bool dec(const std::string& s, unsigned long long max, unsigned long long& out) {
    if (s.empty() || s.size() > 20 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    errno = 0;
    out = std::strtoull(s.c_str(), nullptr, 10);
    return errno == 0 && out <= max;
}

// "LO-HI", both 0..max, LO <= HI
bool range(const std::string& s, unsigned max, unsigned& lo, unsigned& hi) {
    const size_t d = s.find('-');
    unsigned long long a, b;
    if (d == std::string::npos || !dec(s.substr(0, d), max, a) || !dec(s.substr(d + 1), max, b) || a > b) return false;
    lo = static_cast<unsigned>(a);
    hi = static_cast<unsigned>(b);
    return true;
}

// --job KEY:VLO-VHI[:NLO-NHI[:UID]] (an empty NLO-NHI: all nodes)
bool parse_job(const std::string& spec, JobOpt& j, std::string& err) {
    std::vector<std::string> f;
    for (size_t at = 0;;) {
        const size_t c = spec.find(':', at);
        f.push_back(spec.substr(at, c == std::string::npos ? std::string::npos : c - at));
        if (c == std::string::npos) break;
        at = c + 1;
    }
    const std::string bad = "bad --job " + spec + ": ", form = " (expected KEY:VLO-VHI[:NLO-NHI[:UID]])";
    if (f.size() < 2 || f.size() > 4) {
        err = bad + "wrong number of fields" + form;
        return false;
    }
    // the key as libvelo reads VELO_JOB_KEY: a number in C notation (0x.. hex), nonzero
    char* end = nullptr;
    errno = 0;
    j.key = std::strtoull(f[0].c_str(), &end, 0);
    if (f[0].empty() || f[0][0] == '-' || f[0][0] == '+' || errno || !end || *end || !j.key) {
        err = bad + "the key must be a nonzero 64-bit number (decimal, or hex with 0x)" + form;
        return false;
    }
    if (!range(f[1], 255, j.vpid_lo, j.vpid_hi)) {
        err = bad + "the data vpids must be LO-HI with LO <= HI <= 255" + form;
        return false;
    }
    j.all_nodes = f.size() < 3 || f[2].empty();
    if (!j.all_nodes && !range(f[2], 255, j.node_lo, j.node_hi)) {
        err = bad + "the nodes must be LO-HI with LO <= HI <= 255, or empty for all" + form;
        return false;
    }
    if (f.size() == 4) {
        unsigned long long u;
        if (!dec(f[3], 0xFFFFFFFEull, u)) {
            err = bad + "the uid must be a decimal number below 4294967295" + form;
            return false;
        }
        j.has_uid = true;
        j.uid = static_cast<uint32_t>(u);
    }
    return true;
}

}  // namespace

const char* usage() {
    return "usage: velo-fabric [--nodes N] [--topology pair|ring:N|torus:XxY] [--socket PATH]\n"
           "                   [--split-rate P [--split-bytes]] [--seed S] [--sync-timeout-ms MS] [--wide]\n"
           "                   [--spin-us US] [--threads T] [--ready-fd FD] [--no-sim-gate] [--no-skip-idle] "
           "[--verbose]\n"
           "                   [--policy open|job|strict] [--job KEY:VLO-VHI[:NLO-NHI[:UID]]]...\n"
           "                   [--qemu NODE:PATH]...\n"
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
           "                        clock gating of idle units: the same cycles, slower)\n"
           "  --no-skip-idle        evaluate NICs at rest in every cycle instead of playing their\n"
           "                        idle cycles from a record (the same cycles, slower)\n"
           "  --policy P            every node's grant policy, as the driver's grant_policy (default: job)\n"
           "  --job KEY:VLO-VHI[:NLO-NHI[:UID]]\n"
           "                        register a job on every node's driver core at start, as a resource\n"
           "                        manager's prolog does (VELO_IOC_JOB_SET): key (nonzero, 0x for hex),\n"
           "                        data vpids VLO..VHI, nodes NLO..NHI (default: all), only user UID;\n"
           "                        repeatable. Clients join with VELO_JOB_KEY=KEY in their environment\n"
           "  --qemu NODE:PATH      node NODE is the NIC of a QEMU guest: listen on the Unix socket PATH\n"
           "                        for one connection, QEMU's multi-process device channel\n"
           "                        (-device x-pci-proxy-dev,fd=N); the guest's velo.ko drives the NIC\n"
           "                        (docs/cosim.md). Repeatable, one per guest node\n";
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
        } else if (a == "--job") {
            JobOpt j;
            if (!(v = val("--job")) || !parse_job(v, j, err)) return false;
            for (const JobOpt& o2 : o.jobs) {
                if (o2.key == j.key) {
                    err = std::string("bad --job ") + v + ": a second job with the same key";
                    return false;
                }
                if (j.vpid_lo <= o2.vpid_hi && o2.vpid_lo <= j.vpid_hi) {
                    char other[64];
                    std::snprintf(other, sizeof other, "0x%llx (%u-%u)", static_cast<unsigned long long>(o2.key),
                                  o2.vpid_lo, o2.vpid_hi);
                    err = std::string("bad --job ") + v + ": its data vpids overlap those of job " + other +
                          "; jobs partition the vpids";
                    return false;
                }
            }
            o.jobs.push_back(j);
        } else if (a == "--policy") {
            if (!(v = val("--policy"))) return false;
            const std::string p = v;
            if (p == "open") {
                o.policy = VELO_POLICY_OPEN;
            } else if (p == "job") {
                o.policy = VELO_POLICY_JOB;
            } else if (p == "strict") {
                o.policy = VELO_POLICY_STRICT;
            } else {
                err = "bad value for --policy: " + p + " (open, job or strict)";
                return false;
            }
        } else if (a == "--qemu") {
            if (!(v = val("--qemu"))) return false;
            const std::string q = v;
            const size_t c = q.find(':');
            unsigned long long nd;
            if (c == std::string::npos || !dec(q.substr(0, c), 255, nd) || c + 1 >= q.size()) {
                err = "bad --qemu " + q + " (expected NODE:PATH, NODE a node number, PATH a socket path)";
                return false;
            }
            for (const QemuOpt& g : o.qemu)
                if (g.node == nd || g.path == q.substr(c + 1)) {
                    err = "bad --qemu " + q + ": node or path given twice";
                    return false;
                }
            o.qemu.push_back(QemuOpt{static_cast<unsigned>(nd), q.substr(c + 1)});
        } else if (a == "--split-bytes") {
            o.split_bytes = true;
        } else if (a == "--wide") {
            o.wide = true;
        } else if (a == "--no-sim-gate") {
            o.sim_gate = false;
        } else if (a == "--no-skip-idle") {
            o.skip_idle = false;
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
