// A topology as the simulated cluster needs it: wiring of network ports, and per node the route
// table and port configuration the driver would program. Computed by the route library
// (sw/route, velo_route.h), so the simulator and real clusters route the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace velo::sim {

struct Peer {
    int node = -1;  // -1: the port is not connected
    unsigned port = 0;
};

struct Topology {
    struct Link {
        unsigned a_node, a_port, b_node, b_port;
    };
    unsigned nodes = 0;
    unsigned ports = 0;  // network ports per NIC (the highest port number used)
    unsigned pb = 2;     // route code bits
    std::vector<Link> links;
    std::vector<std::vector<Peer>> wiring;       // [node][port - 1]
    std::vector<std::vector<uint16_t>> routes;   // [src][dst]: ROUTE field
    std::vector<std::vector<unsigned>> hops;     // [src][dst]: link hops
    std::vector<std::vector<uint8_t>> port_dim;  // [node][port - 1]
    std::vector<std::vector<uint8_t>> port_dl;   // [node][port - 1]

    const Peer& peer(unsigned n, unsigned p) const { return wiring.at(n).at(p - 1); }
    uint16_t route(unsigned s, unsigned d) const { return routes.at(s).at(d); }
    unsigned dim(unsigned n, unsigned p) const { return port_dim.at(n).at(p - 1); }
    unsigned dateline(unsigned n, unsigned p) const { return port_dl.at(n).at(p - 1); }
};

// "pair", "ring:N", "torus:XxY" or "links:<file>". False with a message on error.
bool load_topology(const std::string& desc, Topology& t, std::string& err);

}  // namespace velo::sim
