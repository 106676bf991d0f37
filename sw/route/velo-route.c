/*
 * velo-route: print the wiring, route tables and port configuration of a VELO topology, and
 * optionally check it for deadlock freedom (docs/routing.md).
 *
 *   velo-route <topology> [--node N] [--check] [--no-dateline] [--no-updown]
 *
 * Exit status: 0 success, 1 bad topology or failed check, 2 usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "velo_route.h"

static void usage(FILE* f) {
    fprintf(f,
            "usage: velo-route <topology> [--node N] [--check] [--no-dateline] [--no-updown]\n"
            "  <topology>     pair | ring:N | torus:XxY | links:<file> (lines '<node>.<port> <node>.<port>')\n"
            "  --node N       print only node N's ports and route table\n"
            "  --check        check that the routes are deadlock-free (channel dependency graph acyclic)\n"
            "  --no-dateline  (demonstration) ring/torus without datelines: not deadlock-free\n"
            "  --no-updown    (demonstration) link lists with plain shortest paths: not deadlock-free\n");
}

/* Parse a node number strictly (decimal digits only). */
static int parse_node(const char* s, unsigned* v) {
    if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 9) return -1;
    *v = (unsigned)strtoul(s, NULL, 10);
    return 0;
}

/* Wiring and port configuration of one node. */
static void print_node_ports(const velo_route* r, unsigned n) {
    printf("  node %u:", n);
    for (int p = 1; p <= velo_route_ports(r); p++) {
        unsigned pn, pp;
        struct velo_route_port_cfg c;
        velo_route_port_config(r, n, (unsigned)p, &c);
        if (velo_route_peer(r, n, (unsigned)p, &pn, &pp) == 0)
            printf("  port %d -> %u.%u dim %u dl %u", p, pn, pp, c.dim, c.dateline);
        else
            printf("  port %d unconnected", p);
    }
    printf("\n");
}

static int print_table(const velo_route* r, unsigned n) {
    int len = velo_route_render_node(r, n, NULL, 0);
    if (len < 0) return len;
    char* buf = malloc((size_t)len + 1);
    if (!buf) return -ENOMEM;
    velo_route_render_node(r, n, buf, (size_t)len + 1);
    fputs(buf, stdout);
    free(buf);
    return 0;
}

int main(int argc, char** argv) {
    const char* desc = NULL;
    unsigned node = 0;
    int one_node = 0, check = 0;
    struct velo_route_opts opts = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--node")) {
            if (i + 1 >= argc || parse_node(argv[i + 1], &node)) {
                fprintf(stderr, "velo-route: --node needs a node number\n");
                usage(stderr);
                return 2;
            }
            one_node = 1;
            i++;
        } else if (!strcmp(argv[i], "--check")) {
            check = 1;
        } else if (!strcmp(argv[i], "--no-dateline")) {
            opts.flags |= VELO_ROUTE_F_NO_DATELINE;
        } else if (!strcmp(argv[i], "--no-updown")) {
            opts.flags |= VELO_ROUTE_F_NO_UPDOWN;
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            fprintf(stderr, "velo-route: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (desc) {
            fprintf(stderr, "velo-route: more than one topology ('%s' and '%s')\n", desc, argv[i]);
            usage(stderr);
            return 2;
        } else {
            desc = argv[i];
        }
    }
    if (!desc) {
        usage(stderr);
        return 2;
    }

    char err[1024];
    velo_route* r;
    int rc = velo_route_create(&r, desc, &opts, err, sizeof err);
    if (rc) {
        fprintf(stderr, "velo-route: %s\n", err);
        return 1;
    }
    const unsigned nodes = (unsigned)velo_route_nodes(r);
    if (one_node && node >= nodes) {
        fprintf(stderr, "velo-route: --node %u: the topology has nodes 0..%u\n", node, nodes - 1);
        velo_route_free(r);
        return 2;
    }

    printf("topology %s: %u nodes, %d links, highest port %d, %d-bit port codes, at most %d hops\n", velo_route_desc(r),
           nodes, velo_route_num_links(r), velo_route_ports(r), velo_route_pb(r), velo_route_max_hops(r));
    if (!one_node) {
        printf("links:\n");
        for (int i = 0; i < velo_route_num_links(r); i++) {
            struct velo_route_link l;
            velo_route_get_link(r, (unsigned)i, &l);
            printf("  %u.%u <-> %u.%u\n", l.a_node, l.a_port, l.b_node, l.b_port);
        }
    }
    printf("ports (peer, NET_PORT.CFG dim and dateline):\n");
    for (unsigned n = one_node ? node : 0; n < (one_node ? node + 1 : nodes); n++) print_node_ports(r, n);
    for (unsigned n = one_node ? node : 0; n < (one_node ? node + 1 : nodes) && !rc; n++) rc = print_table(r, n);
    if (rc) {
        fprintf(stderr, "velo-route: %s\n", strerror(-rc));
        velo_route_free(r);
        return 1;
    }
    if (check) {
        rc = velo_route_check_deadlock_free(r, err, sizeof err);
        if (rc) {
            fprintf(stderr, "velo-route: %s\n", err);
            velo_route_free(r);
            return 1;
        }
        printf("deadlock check: the channel dependency graph of all %u x %u routes in both classes is acyclic\n", nodes,
               nodes);
    }
    velo_route_free(r);
    return 0;
}
