// velo-fabric: serves the nodes of a simulated VELO cluster (velo::sim::System, the Verilated
// NICs) to ordinary processes that use libvelo's sim backend. See docs/simulator.md and the
// protocol in sw/include/velo/velo_sim_proto.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace velo::fabric {

// A job registered on every node's driver core at start (--job), as a resource manager's prolog
// does with VELO_IOC_JOB_SET on every node of the job (docs/driver.md, "Security model").
struct JobOpt {
    uint64_t key = 0;                   // nonzero
    unsigned vpid_lo = 0, vpid_hi = 0;  // data vpids, inclusive
    bool all_nodes = true;              // nodes 0 .. nodes-1 (else node_lo..node_hi)
    unsigned node_lo = 0, node_hi = 0;
    bool has_uid = false;  // only this user may open endpoints of the job
    uint32_t uid = 0;
};

// A node served to a QEMU guest (--qemu NODE:PATH, docs/cosim.md).
struct QemuOpt {
    unsigned node = 0;
    std::string path;  // the Unix socket QEMU's device channel connects through
};

struct Options {
    std::string socket;         // empty: velo_sim_default_socket()
    std::string topology;       // empty: "pair" for 2 nodes, else "ring:N"
    unsigned nodes = 0;         // 0: from the topology (2 for the default pair)
    bool wide = false;          // TLP 128 / link 32 bits (pair only)
    double split_rate = 0.0;    // probability that a store is flushed as two pieces
    bool split_bytes = false;   // cut at any byte (byte stores), not between quadwords
    uint64_t seed = 1;          // split injection and System randomness
    int sync_timeout_ms = 100;  // time stands while woken clients react, at most this long (0: off)
    int spin_us = -1;           // poll this long for a reaction or a store before sleeping (-1: by cores)
    int threads = 0;            // threads evaluating the NICs (SystemConfig::threads; 0: by cores)
    int ready_fd = -1;          // write "ready\n" here once clients can connect
    bool verbose = false;
    bool skip_idle = true;  // play idle NICs' cycles from a record (SystemConfig::skip_idle)
    bool sim_gate = true;   // clock-gate idle RMA units and switches in the models (SystemConfig::sim_gate)
    unsigned policy = 1;    // grant policy, VELO_POLICY_* (velo/velo_uapi.h): 0 open, 1 job, 2 strict
    std::vector<JobOpt> jobs;
    std::vector<QemuOpt> qemu;
};

// Parse argv (without argv[0]); false with a message in err.
bool parse_options(int argc, char** argv, Options& o, std::string& err);
const char* usage();

// Run until SIGINT/SIGTERM or a SHUTDOWN request. Returns the process exit status.
int run(const Options& o);

}  // namespace velo::fabric
