/*
 * velo_route.h - topology description, source routes and virtual-channel configuration for VELO
 * (see docs/routing.md).
 *
 * A topology ("pair", "ring:N", "torus:XxY", "links:<file>" or an inline link list) is parsed into
 * an immutable context that holds the wiring of every network port, the source route of every
 * (source, destination) pair and the routing configuration (dim, dateline) of every network port.
 * Software programs these into each NIC: the route of (n, d) into node n's ROUTE_TABLE entry d,
 * the port configuration into NET_PORT.CFG.
 *
 * Conventions: every function validates its arguments and returns a negative errno value on
 * error; functions that can fail for reasons a user has to fix (bad topology, deadlock) also fill
 * a caller-provided message buffer (err, errlen; may be NULL / 0) with an actionable message.
 * There is no global state: a context is created by one call, only read afterwards, and may be
 * used from several threads at once; velo_route_free() releases it.
 *
 * Nodes are numbered 0..N-1, network ports 1..P (port code 0 is local delivery).
 */
#ifndef VELO_ROUTE_H
#define VELO_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "velo/velo_hw.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most nodes a topology may have (node ids fit NODE_BITS = 8). */
#define VELO_ROUTE_MAX_NODES 256
/* Most network ports per node (numbered 1..6; port code 7 stays the invalid code at PB = 3). */
#define VELO_ROUTE_MAX_PORTS 6
/* Width of the source route field of a packet header. */
#define VELO_ROUTE_FIELD_BITS VELO_PKT_HDR_ROUTE_WIDTH
/* Most link hops of any route: floor(14 / 2) with the narrowest port code (PB = 2). */
#define VELO_ROUTE_MAX_HOPS (VELO_ROUTE_FIELD_BITS / 2)

/* Topology kinds (velo_route_kind()). */
enum velo_route_kind {
    VELO_ROUTE_PAIR = 1,  /* two nodes, one link 0.1 <-> 1.1 */
    VELO_ROUTE_RING = 2,  /* ring:N */
    VELO_ROUTE_TORUS = 3, /* torus:XxY */
    VELO_ROUTE_LINKS = 4, /* explicit link list, up*-down* routing */
};

/* Option flags (velo_route_opts.flags). Both exist to demonstrate that the deadlock check can fail;
 * routes computed with them are NOT deadlock-free and must not be programmed into hardware. */
#define VELO_ROUTE_F_NO_DATELINE 0x1u /* ring/torus: leave every dateline bit 0 */
#define VELO_ROUTE_F_NO_UPDOWN 0x2u   /* explicit lists: plain shortest paths instead of up*-down* */

/* Options of velo_route_create(); NULL means all defaults (zero-initialised struct). */
struct velo_route_opts {
    unsigned flags; /* VELO_ROUTE_F_* */
};

/* One link hop of a route: the packet leaves `node` through network port `port`; `dateline` is
 * the dateline bit (VC bit 0) it carries on that link. */
struct velo_route_hop {
    unsigned node;
    unsigned port;
    unsigned dateline;
};

/* A link between two network ports (a_node, a_port) <-> (b_node, b_port). */
struct velo_route_link {
    unsigned a_node, a_port;
    unsigned b_node, b_port;
};

/* Routing configuration of one network port (NET_PORT.CFG): a packet leaving through port o of a
 * node, having entered through input i, carries the dateline bit
 *   dl_out = dateline[o] | (dl_in & (i is a network port) & (dim[i] == dim[o])). */
struct velo_route_port_cfg {
    unsigned dim;      /* 2-bit dimension of the port */
    unsigned dateline; /* 1: a packet leaving through this port crosses the dateline */
};

/* A channel of the channel dependency graph: the link leaving `node` through `port`, used on
 * virtual channel `vc` ({class, dateline}, 0..3). */
struct velo_route_channel {
    unsigned node;
    unsigned port;
    unsigned vc;
};

/* Opaque context. */
typedef struct velo_route velo_route;

/* Parse a topology description and compute everything: "pair", "ring:N" (2 <= N), "torus:XxY"
 * (X, Y >= 2) or "links:<path>" (a link list file, see velo_route_create_links). On success *out
 * is the new context and 0 is returned. Errors: -EINVAL (bad description, a limit exceeded, or a
 * route longer than the route field holds), -ENOMEM, or the errno of reading the links file;
 * *out is then NULL and err holds the reason. */
int velo_route_create(velo_route** out, const char* desc, const struct velo_route_opts* opts, char* err, size_t errlen);

/* The same for an explicit link list given as text: one link per line "<node>.<port> <node>.<port>",
 * '#' starts a comment, blank lines are ignored. `name` is used in messages ("<name>:<line>: ...";
 * NULL: "links"). */
int velo_route_create_links(velo_route** out, const char* text, const char* name, const struct velo_route_opts* opts,
                            char* err, size_t errlen);

/* Release a context (NULL is ignored). */
void velo_route_free(velo_route* r);

/* Topology kind (enum velo_route_kind), or -EINVAL. */
int velo_route_kind(const velo_route* r);
/* Number of nodes N, or -EINVAL. */
int velo_route_nodes(const velo_route* r);
/* Highest network port number P used by the topology, or -EINVAL. */
int velo_route_ports(const velo_route* r);
/* Port code width PB (smallest with 2^PB >= P + 2), or -EINVAL. */
int velo_route_pb(const velo_route* r);
/* Most link hops a route may have: floor(14 / PB), or -EINVAL. */
int velo_route_max_hops(const velo_route* r);
/* The normalised description ("ring:5", "links:<name>"), or NULL if r is NULL. Valid until freed. */
const char* velo_route_desc(const velo_route* r);

/* Number of links, or -EINVAL. */
int velo_route_num_links(const velo_route* r);
/* Link i (0 <= i < velo_route_num_links): 0, or -EINVAL. Links are in the order of the description
 * (generated topologies: by node, then port). */
int velo_route_get_link(const velo_route* r, unsigned i, struct velo_route_link* link);

/* Wiring: the port at the other end of (node, port). 0 with *peer_node and *peer_port set (either may be
 * NULL); -ENOTCONN if the port exists (1..P) but is not connected; -EINVAL for a bad argument. */
int velo_route_peer(const velo_route* r, unsigned node, unsigned port, unsigned* peer_node, unsigned* peer_port);

/* Routing configuration of (node, port), port 1..P (an unconnected port reads {0, 0}): 0 or -EINVAL. */
int velo_route_port_config(const velo_route* r, unsigned node, unsigned port, struct velo_route_port_cfg* cfg);
/* The same as the NET_PORT.CFG register word: 0 or -EINVAL. */
int velo_route_port_cfg_word(const velo_route* r, unsigned node, unsigned port, uint32_t* word);

/* Route field (14 bits) from src to dst (0 when src == dst): 0 or -EINVAL. */
int velo_route_value(const velo_route* r, unsigned src, unsigned dst, uint16_t* route);
/* The ROUTE_TABLE entry word (VALID | ROUTE) that node src holds for dst: 0 or -EINVAL. */
int velo_route_table_word(const velo_route* r, unsigned src, unsigned dst, uint32_t* word);
/* Link hops from src to dst (0 when src == dst), or -EINVAL. */
int velo_route_hops(const velo_route* r, unsigned src, unsigned dst);
/* The hops of the route from src to dst: writes min(hops, max) entries to `hops` (may be NULL when
 * max is 0) and returns the hop count, or -EINVAL. */
int velo_route_path(const velo_route* r, unsigned src, unsigned dst, struct velo_route_hop* hops, size_t max);

/* Apply the hardware rules to the stored route value of (src, dst), independently of the stored
 * path: starting at src with VC {cls, 0} on the local input, every switch takes the low PB bits as
 * output port, computes the dateline bit by the port configuration rule, and the packet follows
 * the wiring. Writes the VC (0..3) of each link hop to vcs[0..min(hops, max)) and, if nodes is not
 * NULL, the node the packet leaves on each hop to nodes[0..min(hops, max)). Returns the hop count
 * at which the packet was ejected. -EINVAL for a bad argument (cls must be 0 or 1); -EIO if the
 * route is inconsistent (invalid code, unconnected port, not ejected at dst within the field). */
int velo_route_hop_vcs(const velo_route* r, unsigned src, unsigned dst, unsigned cls, unsigned* vcs, unsigned* nodes,
                       size_t max);

/* Render the route table of one node as text ("dst route hops path" lines), snprintf-style:
 * writes at most len bytes including the terminating NUL and returns the length of the full text
 * (excluding the NUL), or -EINVAL. */
int velo_route_render_node(const velo_route* r, unsigned node, char* buf, size_t len);

/* Deadlock check: build the channel dependency graph over (directed link, VC) from every route of
 * every (src, dst) pair in both classes, with the VCs the hardware assigns (velo_route_hop_vcs).
 * 0 if it is acyclic; -ELOOP if it has a cycle, described in err; -EIO if a route is inconsistent;
 * -EINVAL or -ENOMEM. */
int velo_route_check_deadlock_free(const velo_route* r, char* err, size_t errlen);

/* The same graph: if it has a cycle, write the channels of one cycle (c0 -> c1 -> ... -> c(k-1) ->
 * c0, each a dependency of some route) to cycle[0..min(k, max)) and return k; return 0 if the graph
 * is acyclic; negative errno as above. */
int velo_route_find_cycle(const velo_route* r, struct velo_route_channel* cycle, size_t max);

#ifdef __cplusplus
}
#endif

#endif /* VELO_ROUTE_H */
