/*
 * velo_route.c - topology parsing, source routes, VC/dateline configuration and the deadlock
 * check of VELO (API and conventions: velo_route.h; design: docs/routing.md).
 *
 * Pipeline of velo_route_create():
 *   1. the description becomes a list of links (generated for pair/ring/torus, parsed for lists);
 *   2. the links are wired into per-node port tables (each port used once, no self links);
 *   3. N, P, PB and the hop bound follow; every node 0..N-1 must appear and be reachable;
 *   4. ring/torus get their (dim, dateline) port configuration;
 *   5. every (src, dst) pair gets its path, checked against the hop bound, encoded as the route
 *      value; the dateline bit of each hop is derived from the topology (has the packet crossed
 *      the wraparound link of the ring it travels in), independently of the hardware rule that
 *      velo_route_hop_vcs() applies, so tests can hold the two against each other.
 * The context is immutable afterwards.
 */
#define _POSIX_C_SOURCE 200809L /* XSI strerror_r */

#include "velo_route.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Most links any topology can have: every port of every node used once. */
#define MAX_LINKS (VELO_ROUTE_MAX_NODES * VELO_ROUTE_MAX_PORTS / 2)
/* Largest links file read (far beyond any legal list of MAX_LINKS lines with comments). */
#define LINKS_FILE_MAX (1u << 20)
/* Number of VCs per link and channels of the dependency graph. */
#define NVC VELO_NVC
#define NCHAN (VELO_ROUTE_MAX_NODES * VELO_ROUTE_MAX_PORTS * NVC)

/* One link hop of a stored path. */
struct rt_hop {
    uint8_t node;
    uint8_t port;
    uint8_t dl;
};

/* Everything about one (src, dst) pair. */
struct rt_pair {
    uint16_t route;
    uint8_t hops;
    struct rt_hop path[VELO_ROUTE_MAX_HOPS];
};

/* One network port of one node. */
struct rt_port {
    int16_t peer_node; /* -1: not connected */
    uint8_t peer_port;
    uint8_t dim;
    uint8_t dl;
    unsigned line; /* line of the link that uses the port (parse messages) */
};

struct velo_route {
    int kind;
    unsigned flags;
    unsigned n;        /* nodes */
    unsigned p;        /* highest port number used */
    unsigned pb;       /* port code bits */
    unsigned max_hops; /* floor(14 / pb) */
    unsigned dim_x;    /* ring: N; torus: X */
    unsigned dim_y;    /* torus: Y */
    char* desc;
    unsigned nlinks;
    struct velo_route_link links[MAX_LINKS];
    struct rt_port port[VELO_ROUTE_MAX_NODES][VELO_ROUTE_MAX_PORTS]; /* [node][port - 1] */
    struct rt_pair* pairs;                                           /* [src * n + dst] */
};

/* ---- messages ---------------------------------------------------------------------------- */

#if defined(__GNUC__)
#define RT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define RT_PRINTF(f, a)
#endif

static int seterr(char* err, size_t errlen, int rc, const char* fmt, ...) RT_PRINTF(4, 5);

/* Fill the caller's message buffer (if any) and return rc. */
static int seterr(char* err, size_t errlen, int rc, const char* fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* An snprintf-style appender: pos counts every byte asked for, even past the end of the buffer. */
struct sbuf {
    char* buf;
    size_t len;
    size_t pos;
};

static void sb_printf(struct sbuf* sb, const char* fmt, ...) RT_PRINTF(2, 3);

static void sb_printf(struct sbuf* sb, const char* fmt, ...) {
    char* dst = NULL;
    size_t room = 0;
    if (sb->buf && sb->pos < sb->len) {
        dst = sb->buf + sb->pos;
        room = sb->len - sb->pos;
    }
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (k > 0) sb->pos += (size_t)k;
}

/* ---- small helpers ----------------------------------------------------------------------- */

static bool valid_node(const velo_route* r, unsigned node) {
    return r && node < r->n;
}
static bool valid_port(const velo_route* r, unsigned port) {
    return port >= 1 && port <= r->p;
}
static struct rt_port* port_of(velo_route* r, unsigned node, unsigned port) {
    return &r->port[node][port - 1];
}
static const struct rt_port* cport_of(const velo_route* r, unsigned node, unsigned port) {
    return &r->port[node][port - 1];
}
static struct rt_pair* pair_of(const velo_route* r, unsigned src, unsigned dst) {
    return &r->pairs[(size_t)src * r->n + dst];
}

/* Parse a decimal number of at most 9 digits from *s, advancing *s. False if there is no digit or
 * too many (the caller range-checks the value). */
static bool parse_uint(const char** s, unsigned long* v) {
    const char* p = *s;
    unsigned long x = 0;
    unsigned digits = 0;
    while (*p >= '0' && *p <= '9') {
        if (++digits > 9) return false;
        x = x * 10 + (unsigned long)(*p - '0');
        p++;
    }
    if (!digits) return false;
    *s = p;
    *v = x;
    return true;
}

/* ---- wiring ------------------------------------------------------------------------------ */

/* Add a link to r->links (range checks are the caller's). Messages name `where` (e.g. "f:3"). */
static int add_link(velo_route* r, unsigned an, unsigned ap, unsigned bn, unsigned bp, unsigned line, const char* where,
                    char* err, size_t errlen) {
    if (an == bn && ap == bp)
        return seterr(err, errlen, -EINVAL, "%s: link %u.%u - %u.%u connects a port to itself", where, an, ap, bn, bp);
    if (an == bn)
        return seterr(err, errlen, -EINVAL,
                      "%s: link %u.%u - %u.%u connects node %u to itself (a link must join two different nodes)", where,
                      an, ap, bn, bp, an);
    const unsigned en[2] = {an, bn}, ep[2] = {ap, bp};
    for (int e = 0; e < 2; e++) {
        const struct rt_port* q = port_of(r, en[e], ep[e]);
        if (q->peer_node >= 0) {
            if (q->line)
                return seterr(err, errlen, -EINVAL,
                              "%s: port %u.%u is already used by the link on line %u (each port takes one link)", where,
                              en[e], ep[e], q->line);
            return seterr(err, errlen, -EINVAL, "%s: port %u.%u is already used by another link", where, en[e], ep[e]);
        }
    }
    if (r->nlinks >= MAX_LINKS) /* unreachable: port uniqueness bounds the link count */
        return seterr(err, errlen, -EINVAL, "%s: more than %d links", where, MAX_LINKS);
    struct rt_port* a = port_of(r, an, ap);
    struct rt_port* b = port_of(r, bn, bp);
    a->peer_node = (int16_t)bn;
    a->peer_port = (uint8_t)bp;
    a->line = line;
    b->peer_node = (int16_t)an;
    b->peer_port = (uint8_t)ap;
    b->line = line;
    r->links[r->nlinks++] = (struct velo_route_link){an, ap, bn, bp};
    return 0;
}

/* Generate the links of a ring of size k along one dimension: position c has coordinate
 * node(c); port `plus` of position c goes to position c+1 (mod k) and arrives at its port `minus`.
 * This also gives size 2 its two distinct links (0.plus <-> 1.minus and 1.plus <-> 0.minus). */
static void gen_ring_links(velo_route* r, unsigned k, unsigned stride, unsigned base, unsigned plus, unsigned minus) {
    for (unsigned c = 0; c < k; c++) {
        unsigned a = base + c * stride, b = base + ((c + 1) % k) * stride;
        /* cannot fail: every (node, port) of a generated topology is used exactly once */
        (void)add_link(r, a, plus, b, minus, 0, "generated", NULL, 0);
    }
}

/* ---- links parser ------------------------------------------------------------------------ */

/* Parse one "<node>.<port>" token of length len. */
static int parse_endpoint(const char* tok, size_t len, const char* name, unsigned line, unsigned* node, unsigned* port,
                          char* err, size_t errlen) {
    const char* s = tok;
    unsigned long n, p;
    bool ok = parse_uint(&s, &n) && *s == '.';
    if (ok) {
        s++;
        ok = parse_uint(&s, &p) && (size_t)(s - tok) == len;
    }
    if (!ok)
        return seterr(err, errlen, -EINVAL, "%s:%u: '%.*s' is not a port: expected <node>.<port>, e.g. 3.1", name, line,
                      (int)(len > 40 ? 40 : len), tok);
    if (n >= VELO_ROUTE_MAX_NODES)
        return seterr(err, errlen, -EINVAL, "%s:%u: node %lu out of range: at most %d nodes (0..%d)", name, line, n,
                      VELO_ROUTE_MAX_NODES, VELO_ROUTE_MAX_NODES - 1);
    if (p == 0)
        return seterr(err, errlen, -EINVAL,
                      "%s:%u: port %lu.0: network ports are numbered from 1 (code 0 is local delivery)", name, line, n);
    if (p > VELO_ROUTE_MAX_PORTS)
        return seterr(err, errlen, -EINVAL,
                      "%s:%u: port %lu.%lu out of range: at most %d network ports per node (1..%d)", name, line, n, p,
                      VELO_ROUTE_MAX_PORTS, VELO_ROUTE_MAX_PORTS);
    *node = (unsigned)n;
    *port = (unsigned)p;
    return 0;
}

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Parse a link list into r->links / r->port. */
static int parse_links(velo_route* r, const char* text, const char* name, char* err, size_t errlen) {
    unsigned line = 0;
    const char* s = text;
    while (*s) {
        line++;
        const char* eol = strchr(s, '\n');
        if (!eol) eol = s + strlen(s);
        const char* end = memchr(s, '#', (size_t)(eol - s));
        if (!end) end = eol;
        /* split into whitespace-separated tokens */
        const char* tok[3];
        size_t tlen[3];
        unsigned ntok = 0;
        for (const char* q = s; q < end;) {
            while (q < end && is_space(*q)) q++;
            if (q == end) break;
            const char* t = q;
            while (q < end && !is_space(*q)) q++;
            if (ntok < 3) {
                tok[ntok] = t;
                tlen[ntok] = (size_t)(q - t);
            }
            ntok++;
        }
        if (ntok != 0 && ntok != 2)
            return seterr(err, errlen, -EINVAL,
                          "%s:%u: expected one link '<node>.<port> <node>.<port>' per line, found %u field%s", name,
                          line, ntok, ntok == 1 ? "" : "s");
        if (ntok == 2) {
            unsigned an, ap, bn, bp;
            int rc = parse_endpoint(tok[0], tlen[0], name, line, &an, &ap, err, errlen);
            if (!rc) rc = parse_endpoint(tok[1], tlen[1], name, line, &bn, &bp, err, errlen);
            if (rc) return rc;
            char where[300];
            snprintf(where, sizeof where, "%.256s:%u", name, line);
            rc = add_link(r, an, ap, bn, bp, line, where, err, errlen);
            if (rc) return rc;
        }
        s = *eol ? eol + 1 : eol;
    }
    if (r->nlinks == 0)
        return seterr(err, errlen, -EINVAL, "%s: no links (a topology needs at least two connected nodes)", name);
    return 0;
}

/* Read a whole links file (NUL-terminated copy in *out). */
static int read_file(const char* path, char** out, char* err, size_t errlen) {
    FILE* f = fopen(path, "rb");
    if (!f) {
        int e = errno ? errno : EIO;
        char msg[128];
        if (strerror_r(e, msg, sizeof msg)) snprintf(msg, sizeof msg, "error %d", e);
        return seterr(err, errlen, -e, "links:%s: cannot open the links file: %s", path, msg);
    }
    size_t cap = 0, len = 0;
    char* buf = NULL;
    int rc = 0;
    for (;;) {
        if (len + 1 >= cap) { /* keep room for the terminating NUL */
            if (cap >= LINKS_FILE_MAX) {
                rc = seterr(err, errlen, -EFBIG, "links:%s: file larger than %u bytes; not a link list?", path,
                            LINKS_FILE_MAX);
                break;
            }
            size_t ncap = cap ? cap * 2 : 4096;
            char* nb = realloc(buf, ncap);
            if (!nb) {
                rc = seterr(err, errlen, -ENOMEM, "links:%s: out of memory", path);
                break;
            }
            buf = nb;
            cap = ncap;
        }
        size_t k = fread(buf + len, 1, cap - 1 - len, f);
        len += k;
        if (k == 0) {
            if (ferror(f)) rc = seterr(err, errlen, -EIO, "links:%s: read error", path);
            break;
        }
    }
    fclose(f);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[len] = 0;
    if (strlen(buf) != len) {
        unsigned line = 1;
        for (const char* q = buf; *q; q++) line += *q == '\n';
        free(buf);
        return seterr(err, errlen, -EINVAL, "links:%s:%u: contains a NUL byte; not a text file?", path, line);
    }
    *out = buf;
    return 0;
}

/* ---- topology checks --------------------------------------------------------------------- */

/* N, P, PB, hop bound; every node 0..N-1 present and reachable from node 0. level[] gets the BFS
 * distance from node 0 (used by up*-down*). */
static int finish_wiring(velo_route* r, const char* name, unsigned* level, char* err, size_t errlen) {
    unsigned n = 0, p = 0;
    for (unsigned i = 0; i < r->nlinks; i++) {
        const struct velo_route_link* l = &r->links[i];
        n = l->a_node + 1 > n ? l->a_node + 1 : n;
        n = l->b_node + 1 > n ? l->b_node + 1 : n;
        p = l->a_port > p ? l->a_port : p;
        p = l->b_port > p ? l->b_port : p;
    }
    r->n = n;
    r->p = p;
    r->pb = 1;
    while ((1u << r->pb) < p + 2) r->pb++;
    r->max_hops = VELO_ROUTE_FIELD_BITS / r->pb;
    for (unsigned v = 0; v < n; v++) {
        bool used = false;
        for (unsigned q = 1; q <= p; q++) used |= port_of(r, v, q)->peer_node >= 0;
        if (!used)
            return seterr(err, errlen, -EINVAL,
                          "%s: node %u does not appear in any link, but node %u does (nodes must be numbered 0..N-1 "
                          "without gaps)",
                          name, v, n - 1);
    }
    /* BFS from node 0 */
    unsigned queue[VELO_ROUTE_MAX_NODES];
    unsigned head = 0, tail = 0;
    for (unsigned v = 0; v < n; v++) level[v] = ~0u;
    level[0] = 0;
    queue[tail++] = 0;
    while (head < tail) {
        unsigned u = queue[head++];
        for (unsigned q = 1; q <= p; q++) {
            int v = port_of(r, u, q)->peer_node;
            if (v >= 0 && level[v] == ~0u) {
                level[v] = level[u] + 1;
                queue[tail++] = (unsigned)v;
            }
        }
    }
    for (unsigned v = 0; v < n; v++)
        if (level[v] == ~0u)
            return seterr(err, errlen, -EINVAL,
                          "%s: node %u cannot be reached from node 0: the network is not connected", name, v);
    return 0;
}

/* ---- routes ------------------------------------------------------------------------------ */

/* Reject a path longer than the route field holds. */
static int hop_bound_error(const velo_route* r, unsigned src, unsigned dst, unsigned hops, char* err, size_t errlen) {
    const char* hint = r->kind == VELO_ROUTE_RING    ? "rings have at most 15 nodes"
                       : r->kind == VELO_ROUTE_TORUS ? "tori need floor(X/2) + floor(Y/2) <= 4, e.g. 5x5 or 2x6"
                                                     : "add links to shorten the longest up*/down* route";
    return seterr(err, errlen, -EINVAL,
                  "%s: the route from node %u to node %u needs %u link hops, but the %d-bit route field holds at most "
                  "%u hops of %u-bit port codes (highest port %u); %s",
                  r->desc, src, dst, hops, VELO_ROUTE_FIELD_BITS, r->max_hops, r->pb, r->p, hint);
}

/* Encode the stored path of (src, dst) as its route value. */
static void encode(const velo_route* r, struct rt_pair* pr) {
    uint32_t v = 0;
    for (unsigned k = 0; k < pr->hops; k++) v |= (uint32_t)pr->path[k].port << (k * r->pb);
    pr->route = (uint16_t)v;
}

/* One leg along a ring of size k from coordinate a to b: *steps hops in direction *plus. Shortest
 * direction; a tie (k even, distance k/2) goes + from an even coordinate and - from an odd one, so
 * that half of the antipodal traffic uses each direction. */
static void ring_leg(unsigned k, unsigned a, unsigned b, unsigned* steps, bool* plus) {
    unsigned fwd = (b + k - a) % k, bwd = (k - fwd) % k;
    if (fwd < bwd || (fwd == bwd && a % 2 == 0)) {
        *steps = fwd;
        *plus = true;
    } else {
        *steps = bwd;
        *plus = false;
    }
}

/* Append one leg of a ring/torus route to pr, starting at node `start`: the coordinate along the
 * dimension goes from a to b (ring of size k, neighbouring positions `stride` node ids apart, ports
 * `pplus`/`pminus`). The dateline bit of a hop is 1 from the wraparound link of this ring on (the
 * ring's (k-1) -> 0 link going +, its 0 -> (k-1) link going -), and restarts with each leg. */
static unsigned ring_route_leg(const velo_route* r, struct rt_pair* pr, unsigned start, unsigned k, unsigned stride,
                               unsigned a, unsigned b, unsigned pplus, unsigned pminus) {
    unsigned steps;
    bool plus;
    ring_leg(k, a, b, &steps, &plus);
    unsigned node = start, c = a, dl = 0;
    for (unsigned s = 0; s < steps; s++) {
        bool wrap = plus ? c == k - 1 : c == 0;
        if (wrap && !(r->flags & VELO_ROUTE_F_NO_DATELINE)) dl = 1;
        unsigned nc = plus ? (c + 1) % k : (c + k - 1) % k;
        if (pr->hops < VELO_ROUTE_MAX_HOPS)
            pr->path[pr->hops] = (struct rt_hop){(uint8_t)node, (uint8_t)(plus ? pplus : pminus), (uint8_t)dl};
        pr->hops++;
        node = node - c * stride + nc * stride;
        c = nc;
    }
    return node;
}

/* Routes of a ring (one leg) or torus (dimension order: X leg, then Y leg). */
static int route_ring_torus(velo_route* r, char* err, size_t errlen) {
    const unsigned X = r->dim_x, Y = r->kind == VELO_ROUTE_TORUS ? r->dim_y : 1;
    for (unsigned s = 0; s < r->n; s++) {
        for (unsigned d = 0; d < r->n; d++) {
            struct rt_pair* pr = pair_of(r, s, d);
            unsigned sx = s % X, sy = s / X, dx = d % X, dy = d / X;
            /* count the hops first so that an overlong route is reported, not truncated */
            unsigned hx, hy;
            bool dir;
            ring_leg(X, sx, dx, &hx, &dir);
            ring_leg(Y, sy, dy, &hy, &dir);
            if (hx + hy > r->max_hops) return hop_bound_error(r, s, d, hx + hy, err, errlen);
            pr->hops = 0;
            unsigned mid = ring_route_leg(r, pr, s, X, 1, sx, dx, 1, 2);
            if (Y > 1) ring_route_leg(r, pr, mid, Y, X, sy, dy, 3, 4);
            encode(r, pr);
        }
    }
    return 0;
}

/* up*-down* (or, with VELO_ROUTE_F_NO_UPDOWN, plain) shortest routes of an explicit list. A link's
 * "up" end is the end with the smaller BFS level from node 0 (ties: the lower node id); a legal
 * path takes up moves first, then down moves, never an up move after a down move. Per source, a
 * BFS over the states (node, phase), phase 1 = a down move was taken; ports in increasing order,
 * so the chosen path is deterministic. */
static int route_updown(velo_route* r, const unsigned* level, char* err, size_t errlen) {
    const unsigned n = r->n;
    const bool free_routing = r->flags & VELO_ROUTE_F_NO_UPDOWN;
    int dist[2 * VELO_ROUTE_MAX_NODES];
    unsigned parent[2 * VELO_ROUTE_MAX_NODES];
    uint8_t pport[2 * VELO_ROUTE_MAX_NODES];
    unsigned queue[2 * VELO_ROUTE_MAX_NODES];
    for (unsigned s = 0; s < n; s++) {
        for (unsigned i = 0; i < 2 * n; i++) dist[i] = -1;
        unsigned head = 0, tail = 0;
        dist[s] = 0; /* state index: phase * n + node */
        queue[tail++] = s;
        while (head < tail) {
            unsigned st = queue[head++], u = st % n, ph = st / n;
            for (unsigned q = 1; q <= r->p; q++) {
                int pv = port_of(r, u, q)->peer_node;
                if (pv < 0) continue;
                unsigned v = (unsigned)pv, nph = 0;
                if (!free_routing) {
                    bool up = level[v] < level[u] || (level[v] == level[u] && v < u);
                    if (up && ph == 1) continue;
                    nph = up ? 0 : 1;
                }
                unsigned nst = nph * n + v;
                if (dist[nst] >= 0) continue;
                dist[nst] = dist[st] + 1;
                parent[nst] = st;
                pport[nst] = (uint8_t)q;
                queue[tail++] = nst;
            }
        }
        for (unsigned d = 0; d < n; d++) {
            struct rt_pair* pr = pair_of(r, s, d);
            /* the shorter of the two end states; a tie takes the all-up path (phase 0) */
            unsigned st = d;
            if (dist[st] < 0 || (dist[n + d] >= 0 && dist[n + d] < dist[st])) st = n + d;
            unsigned h = (unsigned)dist[st]; /* every node is reachable: up to node 0, then down */
            if (h > r->max_hops) return hop_bound_error(r, s, d, h, err, errlen);
            pr->hops = (uint8_t)h;
            for (unsigned k = h; k-- > 0;) {
                unsigned prev = parent[st];
                pr->path[k] = (struct rt_hop){(uint8_t)(prev % n), pport[st], 0};
                st = prev;
            }
            encode(r, pr);
        }
    }
    return 0;
}

/* Port configuration of ring/torus: dim 0 for ports 1/2, dim 1 for ports 3/4; dateline on both
 * directions of the wraparound link of every ring of every dimension. */
static void config_ring_torus(velo_route* r) {
    const unsigned X = r->dim_x, Y = r->kind == VELO_ROUTE_TORUS ? r->dim_y : 1;
    for (unsigned v = 0; v < r->n; v++) {
        unsigned x = v % X, y = v / X;
        for (unsigned q = 1; q <= r->p; q++) port_of(r, v, q)->dim = q <= 2 ? 0 : 1;
        if (r->flags & VELO_ROUTE_F_NO_DATELINE) continue;
        port_of(r, v, 1)->dl = x == X - 1;
        port_of(r, v, 2)->dl = x == 0;
        if (Y > 1) {
            port_of(r, v, 3)->dl = y == Y - 1;
            port_of(r, v, 4)->dl = y == 0;
        }
    }
}

/* ---- creation ---------------------------------------------------------------------------- */

static int alloc_ctx(velo_route** rp, const struct velo_route_opts* opts, const char* desc, char* err, size_t errlen) {
    if (opts && (opts->flags & ~(VELO_ROUTE_F_NO_DATELINE | VELO_ROUTE_F_NO_UPDOWN)))
        return seterr(err, errlen, -EINVAL, "unknown option flags 0x%x", opts->flags);
    velo_route* r = calloc(1, sizeof *r);
    if (!r) return seterr(err, errlen, -ENOMEM, "out of memory");
    r->flags = opts ? opts->flags : 0;
    r->desc = malloc(strlen(desc) + 1);
    if (!r->desc) {
        free(r);
        return seterr(err, errlen, -ENOMEM, "out of memory");
    }
    strcpy(r->desc, desc);
    for (unsigned v = 0; v < VELO_ROUTE_MAX_NODES; v++)
        for (unsigned q = 0; q < VELO_ROUTE_MAX_PORTS; q++) r->port[v][q].peer_node = -1;
    *rp = r;
    return 0;
}

/* Steps 3-5 of the pipeline (see the top of the file). */
static int build(velo_route* r, char* err, size_t errlen) {
    unsigned level[VELO_ROUTE_MAX_NODES];
    int rc = finish_wiring(r, r->desc, level, err, errlen);
    if (rc) return rc;
    r->pairs = calloc((size_t)r->n * r->n, sizeof *r->pairs);
    if (!r->pairs) return seterr(err, errlen, -ENOMEM, "%s: out of memory", r->desc);
    if (r->kind == VELO_ROUTE_RING || r->kind == VELO_ROUTE_TORUS) {
        config_ring_torus(r);
        return route_ring_torus(r, err, errlen);
    }
    return route_updown(r, level, err, errlen);
}

/* Parse "<a>" or "<a>x<b>" dimensions after "ring:" / "torus:". */
static bool parse_dims(const char* s, unsigned ndims, unsigned long* a, unsigned long* b) {
    if (!parse_uint(&s, a)) return false;
    if (ndims == 2 && (*s++ != 'x' || !parse_uint(&s, b))) return false;
    return *s == 0;
}

int velo_route_create(velo_route** out, const char* desc, const struct velo_route_opts* opts, char* err,
                      size_t errlen) {
    if (!out) return seterr(err, errlen, -EINVAL, "no output pointer");
    *out = NULL;
    if (!desc || !*desc)
        return seterr(err, errlen, -EINVAL,
                      "empty topology description: expected pair, ring:N, torus:XxY or links:<file>");
    if (!strncmp(desc, "links:", 6)) {
        const char* path = desc + 6;
        if (!*path) return seterr(err, errlen, -EINVAL, "links: needs a file name (links:<path>)");
        if (opts && (opts->flags & ~(VELO_ROUTE_F_NO_DATELINE | VELO_ROUTE_F_NO_UPDOWN)))
            return seterr(err, errlen, -EINVAL, "unknown option flags 0x%x", opts->flags);
        char* text = NULL;
        int rc = read_file(path, &text, err, errlen);
        if (rc) return rc;
        rc = velo_route_create_links(out, text, desc, opts, err, errlen);
        free(text);
        return rc;
    }
    velo_route* r;
    int rc = alloc_ctx(&r, opts, desc, err, errlen);
    if (rc) return rc;
    unsigned long a = 0, b = 0;
    if (!strcmp(desc, "pair")) {
        r->kind = VELO_ROUTE_PAIR;
        (void)add_link(r, 0, 1, 1, 1, 0, desc, NULL, 0);
    } else if (!strncmp(desc, "ring:", 5)) {
        r->kind = VELO_ROUTE_RING;
        if (!parse_dims(desc + 5, 1, &a, &b))
            rc = seterr(err, errlen, -EINVAL, "%s: expected ring:N with N the number of nodes (2..15), e.g. ring:4",
                        desc);
        else if (a < 2)
            rc = seterr(err, errlen, -EINVAL, "%s: a ring needs at least 2 nodes", desc);
        else if (a > VELO_ROUTE_MAX_NODES)
            rc = seterr(err, errlen, -EINVAL, "%s: %lu nodes, at most %d", desc, a, VELO_ROUTE_MAX_NODES);
        else {
            r->dim_x = (unsigned)a;
            gen_ring_links(r, r->dim_x, 1, 0, 1, 2);
        }
    } else if (!strncmp(desc, "torus:", 6)) {
        r->kind = VELO_ROUTE_TORUS;
        if (!parse_dims(desc + 6, 2, &a, &b))
            rc = seterr(err, errlen, -EINVAL, "%s: expected torus:XxY with X, Y the ring sizes (>= 2), e.g. torus:4x4",
                        desc);
        else if (a < 2 || b < 2)
            rc = seterr(err, errlen, -EINVAL, "%s: both dimensions of a torus must be at least 2 (use ring:N for one)",
                        desc);
        else if (a > VELO_ROUTE_MAX_NODES || b > VELO_ROUTE_MAX_NODES || a * b > VELO_ROUTE_MAX_NODES)
            rc = seterr(err, errlen, -EINVAL, "%s: %lu nodes, at most %d", desc, a * b, VELO_ROUTE_MAX_NODES);
        else {
            r->dim_x = (unsigned)a;
            r->dim_y = (unsigned)b;
            for (unsigned y = 0; y < r->dim_y; y++) gen_ring_links(r, r->dim_x, 1, y * r->dim_x, 1, 2);
            for (unsigned x = 0; x < r->dim_x; x++) gen_ring_links(r, r->dim_y, r->dim_x, x, 3, 4);
        }
    } else {
        rc = seterr(err, errlen, -EINVAL, "unknown topology '%.64s': expected pair, ring:N, torus:XxY or links:<file>",
                    desc);
    }
    if (!rc) rc = build(r, err, errlen);
    if (rc) {
        velo_route_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

int velo_route_create_links(velo_route** out, const char* text, const char* name, const struct velo_route_opts* opts,
                            char* err, size_t errlen) {
    if (!out) return seterr(err, errlen, -EINVAL, "no output pointer");
    *out = NULL;
    if (!text) return seterr(err, errlen, -EINVAL, "no link list text");
    if (!name) name = "links";
    velo_route* r;
    int rc = alloc_ctx(&r, opts, name, err, errlen);
    if (rc) return rc;
    r->kind = VELO_ROUTE_LINKS;
    rc = parse_links(r, text, name, err, errlen);
    if (!rc) rc = build(r, err, errlen);
    if (rc) {
        velo_route_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

void velo_route_free(velo_route* r) {
    if (!r) return;
    free(r->pairs);
    free(r->desc);
    free(r);
}

/* ---- accessors --------------------------------------------------------------------------- */

int velo_route_kind(const velo_route* r) {
    return r ? r->kind : -EINVAL;
}
int velo_route_nodes(const velo_route* r) {
    return r ? (int)r->n : -EINVAL;
}
int velo_route_ports(const velo_route* r) {
    return r ? (int)r->p : -EINVAL;
}
int velo_route_pb(const velo_route* r) {
    return r ? (int)r->pb : -EINVAL;
}
int velo_route_max_hops(const velo_route* r) {
    return r ? (int)r->max_hops : -EINVAL;
}
const char* velo_route_desc(const velo_route* r) {
    return r ? r->desc : NULL;
}
int velo_route_num_links(const velo_route* r) {
    return r ? (int)r->nlinks : -EINVAL;
}

int velo_route_get_link(const velo_route* r, unsigned i, struct velo_route_link* link) {
    if (!r || !link || i >= r->nlinks) return -EINVAL;
    *link = r->links[i];
    return 0;
}

int velo_route_peer(const velo_route* r, unsigned node, unsigned port, unsigned* peer_node, unsigned* peer_port) {
    if (!valid_node(r, node) || !valid_port(r, port)) return -EINVAL;
    const struct rt_port* q = cport_of(r, node, port);
    if (q->peer_node < 0) return -ENOTCONN;
    if (peer_node) *peer_node = (unsigned)q->peer_node;
    if (peer_port) *peer_port = q->peer_port;
    return 0;
}

int velo_route_port_config(const velo_route* r, unsigned node, unsigned port, struct velo_route_port_cfg* cfg) {
    if (!valid_node(r, node) || !valid_port(r, port) || !cfg) return -EINVAL;
    const struct rt_port* q = cport_of(r, node, port);
    cfg->dim = q->dim;
    cfg->dateline = q->dl;
    return 0;
}

int velo_route_port_cfg_word(const velo_route* r, unsigned node, unsigned port, uint32_t* word) {
    struct velo_route_port_cfg c;
    if (!word) return -EINVAL;
    int rc = velo_route_port_config(r, node, port, &c);
    if (rc) return rc;
    *word = (uint32_t)(VELO_FIELD_PREP(VELO_TBL_NET_PORT_CFG_DIM, c.dim) |
                       VELO_FIELD_PREP(VELO_TBL_NET_PORT_CFG_DATELINE, c.dateline));
    return 0;
}

int velo_route_value(const velo_route* r, unsigned src, unsigned dst, uint16_t* route) {
    if (!valid_node(r, src) || !valid_node(r, dst) || !route) return -EINVAL;
    *route = pair_of(r, src, dst)->route;
    return 0;
}

int velo_route_table_word(const velo_route* r, unsigned src, unsigned dst, uint32_t* word) {
    uint16_t v;
    if (!word) return -EINVAL;
    int rc = velo_route_value(r, src, dst, &v);
    if (rc) return rc;
    *word = (uint32_t)(VELO_FIELD_PREP(VELO_TBL_ROUTE_TABLE_ROUTE_VALID, 1) |
                       VELO_FIELD_PREP(VELO_TBL_ROUTE_TABLE_ROUTE_ROUTE, v));
    return 0;
}

int velo_route_hops(const velo_route* r, unsigned src, unsigned dst) {
    if (!valid_node(r, src) || !valid_node(r, dst)) return -EINVAL;
    return pair_of(r, src, dst)->hops;
}

int velo_route_path(const velo_route* r, unsigned src, unsigned dst, struct velo_route_hop* hops, size_t max) {
    if (!valid_node(r, src) || !valid_node(r, dst) || (max && !hops)) return -EINVAL;
    const struct rt_pair* pr = pair_of(r, src, dst);
    for (unsigned k = 0; k < pr->hops && k < max; k++)
        hops[k] = (struct velo_route_hop){pr->path[k].node, pr->path[k].port, pr->path[k].dl};
    return pr->hops;
}

/* ---- the hardware rules ------------------------------------------------------------------ */

int velo_route_hop_vcs(const velo_route* r, unsigned src, unsigned dst, unsigned cls, unsigned* vcs, unsigned* nodes,
                       size_t max) {
    if (!valid_node(r, src) || !valid_node(r, dst) || cls > 1 || (max && !vcs)) return -EINVAL;
    const unsigned mask = (1u << r->pb) - 1;
    unsigned route = pair_of(r, src, dst)->route;
    unsigned node = src, in = 0 /* local input */, dl = 0;
    unsigned k = 0;
    for (;; k++) {
        unsigned o = route & mask;
        if (o == 0) break; /* eject */
        /* an invalid code (all ones, or a port the topology lacks), or a route longer than the field */
        if (k >= r->max_hops || o > r->p) return -EIO;
        const struct rt_port* po = cport_of(r, node, o);
        if (po->peer_node < 0) return -EIO;
        unsigned same_dim = in != 0 && cport_of(r, node, in)->dim == po->dim;
        unsigned dl_out = po->dl | (dl & same_dim);
        if (k < max) {
            vcs[k] = cls << 1 | dl_out;
            if (nodes) nodes[k] = node;
        }
        dl = dl_out;
        in = po->peer_port;
        node = (unsigned)po->peer_node;
        route >>= r->pb;
    }
    return node == dst ? (int)k : -EIO;
}

/* ---- rendering --------------------------------------------------------------------------- */

int velo_route_render_node(const velo_route* r, unsigned node, char* buf, size_t len) {
    if (!valid_node(r, node) || (len && !buf)) return -EINVAL;
    struct sbuf sb = {buf, len, 0};
    sb_printf(&sb, "route table of node %u (%s: %u nodes, %u-bit port codes)\n", node, r->desc, r->n, r->pb);
    sb_printf(&sb, "  dst  route   hops  path (n.p: leaves node n through port p; *: dateline bit set)\n");
    for (unsigned d = 0; d < r->n; d++) {
        const struct rt_pair* pr = pair_of(r, node, d);
        sb_printf(&sb, "  %3u  0x%04x  %4u  ", d, pr->route, pr->hops);
        if (d == node) sb_printf(&sb, "local");
        for (unsigned k = 0; k < pr->hops; k++)
            sb_printf(&sb, "%u.%u%s -> ", pr->path[k].node, pr->path[k].port, pr->path[k].dl ? "*" : "");
        if (d != node) sb_printf(&sb, "%u", d);
        sb_printf(&sb, "\n");
    }
    if (len) buf[sb.pos < len ? sb.pos : len - 1] = 0;
    return (int)sb.pos;
}

/* ---- deadlock check ---------------------------------------------------------------------- */

/* Channel index of (node, port, vc); its successors are channels leaving the peer node, kept as a
 * 24-bit mask over ((port - 1) * NVC + vc). */
static unsigned chan_index(unsigned node, unsigned port, unsigned vc) {
    return (node * VELO_ROUTE_MAX_PORTS + (port - 1)) * NVC + vc;
}
static struct velo_route_channel chan_of(unsigned c) {
    return (struct velo_route_channel){c / NVC / VELO_ROUTE_MAX_PORTS, c / NVC % VELO_ROUTE_MAX_PORTS + 1, c % NVC};
}

/* The channel sequence of (src, dst, cls) as the hardware assigns it: chans[0..return). */
static int route_channels(const velo_route* r, unsigned src, unsigned dst, unsigned cls, unsigned* chans) {
    unsigned vcs[VELO_ROUTE_MAX_HOPS], nodes[VELO_ROUTE_MAX_HOPS];
    int h = velo_route_hop_vcs(r, src, dst, cls, vcs, nodes, VELO_ROUTE_MAX_HOPS);
    if (h < 0) return h;
    uint16_t route = pair_of(r, src, dst)->route;
    for (int k = 0; k < h; k++) {
        unsigned port = (route >> (k * r->pb)) & ((1u << r->pb) - 1);
        chans[k] = chan_index(nodes[k], port, vcs[k]);
    }
    return h;
}

/* Shared by the check and find_cycle: fills cyc (NCHAN entries) with one cycle and returns its
 * length, 0 if acyclic, or a negative errno. On -EIO, *bad_src and *bad_dst name the route. */
static int find_cycle(const velo_route* r, unsigned* cyc, unsigned* bad_src, unsigned* bad_dst) {
    uint32_t* succ = calloc(NCHAN, sizeof *succ);
    uint8_t* color = calloc(NCHAN, 1); /* 0 unvisited, 1 on the DFS stack, 2 done */
    unsigned* stack = malloc(NCHAN * sizeof *stack);
    uint8_t* next = malloc(NCHAN); /* next successor bit to try, per stack level */
    int rc = 0;
    if (!succ || !color || !stack || !next) {
        rc = -ENOMEM;
        goto out;
    }
    /* dependency graph: consecutive channels of every route, both classes */
    for (unsigned s = 0; s < r->n && !rc; s++)
        for (unsigned d = 0; d < r->n && !rc; d++)
            for (unsigned cls = 0; cls < 2; cls++) {
                unsigned ch[VELO_ROUTE_MAX_HOPS];
                int h = route_channels(r, s, d, cls, ch);
                if (h < 0) {
                    *bad_src = s;
                    *bad_dst = d;
                    rc = h;
                    break;
                }
                for (int k = 0; k + 1 < h; k++) {
                    struct velo_route_channel nc = chan_of(ch[k + 1]);
                    succ[ch[k]] |= 1u << ((nc.port - 1) * NVC + nc.vc);
                }
            }
    /* iterative DFS; a successor found on the stack closes a cycle */
    for (unsigned root = 0; root < NCHAN && !rc; root++) {
        if (color[root] || !succ[root]) continue;
        unsigned depth = 0;
        stack[depth] = root;
        next[depth] = 0;
        color[root] = 1;
        while (!rc) {
            unsigned c = stack[depth];
            uint32_t m = succ[c] >> next[depth];
            if (!m) {
                color[c] = 2;
                if (depth-- == 0) break;
                continue;
            }
            unsigned bit = next[depth] + (unsigned)__builtin_ctz(m);
            next[depth] = (uint8_t)(bit + 1);
            /* the successor leaves the node this channel's link arrives at */
            struct velo_route_channel cc = chan_of(c);
            unsigned peer = (unsigned)cport_of(r, cc.node, cc.port)->peer_node;
            unsigned t = chan_index(peer, bit / NVC + 1, bit % NVC);
            if (color[t] == 1) {
                unsigned from = 0;
                while (stack[from] != t) from++;
                for (unsigned i = from; i <= depth; i++) cyc[i - from] = stack[i];
                rc = (int)(depth - from + 1);
            } else if (color[t] == 0) {
                color[t] = 1;
                stack[++depth] = t;
                next[depth] = 0;
            }
        }
    }
out:
    free(succ);
    free(color);
    free(stack);
    free(next);
    return rc;
}

int velo_route_find_cycle(const velo_route* r, struct velo_route_channel* cycle, size_t max) {
    if (!r || (max && !cycle)) return -EINVAL;
    unsigned* cyc = malloc(NCHAN * sizeof *cyc);
    if (!cyc) return -ENOMEM;
    unsigned bs, bd;
    int k = find_cycle(r, cyc, &bs, &bd);
    for (int i = 0; i < k && (size_t)i < max; i++) cycle[i] = chan_of(cyc[i]);
    free(cyc);
    return k;
}

int velo_route_check_deadlock_free(const velo_route* r, char* err, size_t errlen) {
    if (!r) return seterr(err, errlen, -EINVAL, "no route context");
    unsigned* cyc = malloc(NCHAN * sizeof *cyc);
    if (!cyc) return seterr(err, errlen, -ENOMEM, "out of memory");
    unsigned bs = 0, bd = 0;
    int k = find_cycle(r, cyc, &bs, &bd);
    int rc = 0;
    if (k == -EIO) {
        rc = seterr(err, errlen, -EIO, "%s: the route from node %u to node %u does not reach its destination", r->desc,
                    bs, bd);
    } else if (k < 0) {
        rc = seterr(err, errlen, k, "%s: deadlock check failed (error %d)", r->desc, k);
    } else if (k > 0) {
        struct sbuf sb = {err, errlen, 0};
        sb_printf(&sb, "%s: deadlock possible: the channel dependency graph has a cycle of %d channels: ", r->desc, k);
        for (int i = 0; i <= k; i++) {
            struct velo_route_channel c = chan_of(cyc[i % k]);
            sb_printf(&sb, "%s%u.%u/vc%u", i ? " -> " : "", c.node, c.port, c.vc);
        }
        sb_printf(&sb, " (n.p/vcV: the link leaving node n through port p, on virtual channel V)");
        /* name one route that makes the first dependency, to say where the cycle comes from */
        for (unsigned s = 0; s < r->n; s++)
            for (unsigned d = 0; d < r->n; d++)
                for (unsigned cls = 0; cls < 2; cls++) {
                    unsigned ch[VELO_ROUTE_MAX_HOPS];
                    int h = route_channels(r, s, d, cls, ch);
                    for (int i = 0; i + 1 < h; i++)
                        if (ch[i] == cyc[0] && ch[i + 1] == cyc[1 % k]) {
                            sb_printf(&sb,
                                      "; e.g. the route from node %u to node %u (class %u) makes the first "
                                      "dependency",
                                      s, d, cls);
                            goto found;
                        }
                }
    found:
        if (errlen && sb.pos >= errlen) err[errlen - 1] = 0;
        rc = -ELOOP;
    }
    free(cyc);
    return rc;
}
