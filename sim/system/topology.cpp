// Topology for the simulated cluster, from the route library (sw/route).
#include "topology.hpp"

#include <memory>

#include "velo_route.h"

namespace velo::sim {

bool load_topology(const std::string& desc, Topology& t, std::string& err) {
    char msg[512] = {0};
    velo_route* raw = nullptr;
    if (velo_route_create(&raw, desc.c_str(), nullptr, msg, sizeof msg) < 0) {
        err = msg;
        return false;
    }
    std::unique_ptr<velo_route, void (*)(velo_route*)> r(raw, velo_route_free);
    t = Topology{};
    t.nodes = static_cast<unsigned>(velo_route_nodes(r.get()));
    t.ports = static_cast<unsigned>(velo_route_ports(r.get()));
    t.pb = static_cast<unsigned>(velo_route_pb(r.get()));
    const int nl = velo_route_num_links(r.get());
    for (int i = 0; i < nl; ++i) {
        velo_route_link l{};
        if (velo_route_get_link(r.get(), static_cast<unsigned>(i), &l) < 0) {
            err = "route library: bad link index";
            return false;
        }
        t.links.push_back(Topology::Link{l.a_node, l.a_port, l.b_node, l.b_port});
    }
    t.wiring.assign(t.nodes, std::vector<Peer>(t.ports));
    t.port_dim.assign(t.nodes, std::vector<uint8_t>(t.ports, 0));
    t.port_dl.assign(t.nodes, std::vector<uint8_t>(t.ports, 0));
    t.routes.assign(t.nodes, std::vector<uint16_t>(t.nodes, 0));
    t.hops.assign(t.nodes, std::vector<unsigned>(t.nodes, 0));
    for (unsigned n = 0; n < t.nodes; ++n) {
        for (unsigned p = 1; p <= t.ports; ++p) {
            unsigned pn = 0, pp = 0;
            if (velo_route_peer(r.get(), n, p, &pn, &pp) == 0) t.wiring[n][p - 1] = Peer{static_cast<int>(pn), pp};
            velo_route_port_cfg cfg{};
            if (velo_route_port_config(r.get(), n, p, &cfg) == 0) {
                t.port_dim[n][p - 1] = static_cast<uint8_t>(cfg.dim);
                t.port_dl[n][p - 1] = static_cast<uint8_t>(cfg.dateline);
            }
        }
        for (unsigned d = 0; d < t.nodes; ++d) {
            uint16_t v = 0;
            if (velo_route_value(r.get(), n, d, &v) < 0) {
                err = "route library: no route from " + std::to_string(n) + " to " + std::to_string(d);
                return false;
            }
            t.routes[n][d] = v;
            t.hops[n][d] = static_cast<unsigned>(velo_route_hops(r.get(), n, d));
        }
    }
    return true;
}

}  // namespace velo::sim
