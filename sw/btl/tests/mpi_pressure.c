// SPDX-License-Identifier: MIT
// Registration under pressure: every rank keeps many large messages in flight to every other rank
// at once (Irecv and Isend of --min..--max bytes, --outstanding per peer and direction), more than
// the NIC's region table (256 regions) and page table (4096 pages = 16 MiB) can translate, for
// --rounds rounds. With --anysource the receives are posted with MPI_ANY_SOURCE (the rendezvous of
// a wildcard receive). Every message is checked byte by byte, its count, source and tag; each
// round uses fresh buffers (malloc/free), so registrations of freed memory must be given back too.
// --hog R,P: before the first round every rank opens a second libvelo endpoint on its node and
// registers R regions holding P pages of the NIC's tables (another process's registrations, as it
// were), so that the job runs out of NIC regions and pages with a few MB in flight; they are
// deregistered after the first round (the later rounds find the tables free again).
#include <velo/velo.h>

#include "check.h"

static int nsizes;
static size_t sizes[32];

// Size of message `seq` of `src` (the same at sender and receiver).
static size_t msg_size(int src, int seq) {
    return sizes[(unsigned)(src * 7 + seq) % (unsigned)nsizes];
}

static uint64_t msg_key(int src, int dst, int round, int seq) {
    return (uint64_t)src << 48 | (uint64_t)dst << 40 | (uint64_t)round << 24 | (uint64_t)seq;
}

// The hog: an endpoint on this rank's node (rank % nodes, as the BTL places ranks) with `regions`
// registrations of `pages` pages in all.
typedef struct hog {
    velo_ep_t* ep;
    velo_region_t** rg;
    int n;
    uint8_t* mem;
} hog_t;

static void hog_start(hog_t* h, int rank, int regions, int pages) {
    memset(h, 0, sizeof *h);
    velo_ep_t* probe;
    velo_info_t info;
    int r = velo_open(NULL, &probe);
    CHECK(r == 0, "hog: velo_open: %s", velo_strerror(r));
    CHECK(velo_info(probe, &info) == 0 && info.nodes > 0, "hog: velo_info");
    velo_close(probe);
    velo_open_attr_t a;
    velo_open_attr_init(&a);
    a.node = rank % (int)info.nodes;
    r = velo_open(&a, &h->ep);
    CHECK(r == 0, "hog: velo_open on node %d: %s", a.node, velo_strerror(r));
    h->mem = xmalloc((size_t)pages * 4096 + 4096);
    uint8_t* base = (uint8_t*)(((uintptr_t)h->mem + 4095) & ~(uintptr_t)4095);
    h->rg = xmalloc(sizeof(velo_region_t*) * (size_t)regions);
    int off = 0;
    for (int i = 0; i < regions; ++i) {
        const int np = pages / regions + (i < pages % regions);
        // nobody else needs them: the owner's own scope
        const velo_scope_t own = {.kind = VELO_SCOPE_OWNER};
        r = velo_register(h->ep, base + (size_t)off * 4096, (size_t)np * 4096, VELO_ACCESS_REMOTE_WRITE, &own,
                          &h->rg[i]);
        CHECK(r == 0, "hog: registration %d of %d pages: %s", i, np, velo_strerror(r));
        off += np;
        h->n = i + 1;
    }
}

static void hog_stop(hog_t* h) {
    for (int i = 0; i < h->n; ++i) CHECK(velo_deregister(h->rg[i]) == 0, "hog: deregister %d", i);
    velo_close(h->ep);
    free(h->rg);
    free(h->mem);
    h->n = 0;
}

int main(int argc, char** argv) {
    int rank, size;
    mpi_start(&argc, &argv, &rank, &size, 2);
    size_t lo = 65536, hi = 1 << 20;
    int out = 32, rounds = 2, anysource = 0, hog_regions = 0, hog_pages = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--min") && i + 1 < argc)
            lo = strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--max") && i + 1 < argc)
            hi = strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--outstanding") && i + 1 < argc)
            out = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--anysource"))
            anysource = 1;
        else if (!strcmp(argv[i], "--hog") && i + 1 < argc)
            CHECK(sscanf(argv[++i], "%d,%d", &hog_regions, &hog_pages) == 2 && hog_regions > 0 &&
                      hog_pages >= hog_regions,
                  "--hog R,P");
        else
            CHECK(0, "unknown argument %s", argv[i]);
    }
    CHECK(lo >= 1 && lo <= hi && out >= 1 && rounds >= 1, "bad arguments");
    for (size_t s = lo; s <= hi && nsizes < 32; s *= 2) sizes[nsizes++] = s;
    const int peers = size - 1;
    const int n = out * peers;  // receives and sends per rank and round
    uint8_t** rb = xmalloc(sizeof(uint8_t*) * (size_t)n);
    uint8_t** sb = xmalloc(sizeof(uint8_t*) * (size_t)n);
    MPI_Request* rq = xmalloc(sizeof(MPI_Request) * 2 * (size_t)n);
    MPI_Status* st = xmalloc(sizeof(MPI_Status) * 2 * (size_t)n);
    int* seen = xmalloc(sizeof(int) * (size_t)size * (size_t)out);
    size_t bytes = 0;
    hog_t hog = {0};
    if (hog_regions) hog_start(&hog, rank, hog_regions, hog_pages);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int round = 0; round < rounds; ++round) {
        if (round == 1 && hog.n) hog_stop(&hog);
        // receives first (the rendezvous finds them posted), the largest size for wildcards
        for (int i = 0; i < n; ++i) {
            const int src = (rank + 1 + i / out) % size, seq = i % out;
            if (anysource) {
                rb[i] = xmalloc(hi);
                MPI_OK(MPI_Irecv(rb[i], (int)hi, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[i]));
            } else {
                rb[i] = xmalloc(msg_size(src, seq));
                MPI_OK(MPI_Irecv(rb[i], (int)msg_size(src, seq), MPI_BYTE, src, seq, MPI_COMM_WORLD, &rq[i]));
            }
        }
        for (int i = 0; i < n; ++i) {
            const int dst = (rank + 1 + i % peers) % size, seq = i / peers;
            const size_t len = msg_size(rank, seq);
            sb[i] = xmalloc(len);
            fill(sb[i], len, msg_key(rank, dst, round, seq));
            MPI_OK(MPI_Isend(sb[i], (int)len, MPI_BYTE, dst, seq, MPI_COMM_WORLD, &rq[n + i]));
        }
        MPI_OK(MPI_Waitall(2 * n, rq, st));
        memset(seen, 0, sizeof(int) * (size_t)size * (size_t)out);
        for (int i = 0; i < n; ++i) {
            int src = (rank + 1 + i / out) % size, seq = i % out, count = -1;
            if (anysource) {
                src = st[i].MPI_SOURCE;
                seq = st[i].MPI_TAG;
                CHECK(src >= 0 && src < size && src != rank && seq >= 0 && seq < out,
                      "round %d receive %d: source %d tag %d", round, i, src, seq);
            }
            MPI_Get_count(&st[i], MPI_BYTE, &count);
            CHECK(st[i].MPI_SOURCE == src && st[i].MPI_TAG == seq, "round %d receive %d: source %d tag %d, want %d %d",
                  round, i, st[i].MPI_SOURCE, st[i].MPI_TAG, src, seq);
            CHECK((size_t)count == msg_size(src, seq), "round %d: message %d from %d: %d bytes, want %zu", round, seq,
                  src, count, msg_size(src, seq));
            CHECK(seen[src * out + seq]++ == 0, "round %d: message %d from %d twice", round, seq, src);
            const long bad = verify(rb[i], (size_t)count, msg_key(src, rank, round, seq));
            CHECK(bad < 0, "round %d: message %d from %d (%d bytes): byte %ld wrong", round, seq, src, count, bad);
            bytes += (size_t)count;
            free(rb[i]);
            free(sb[i]);
        }
    }
    if (hog.n) hog_stop(&hog);
    unsigned long long total = bytes, all = 0;
    MPI_OK(MPI_Reduce(&total, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    if (rank == 0)
        printf("pressure: %d ranks, %d rounds x %d in flight per peer each way (%zu..%zu bytes%s%s), %llu bytes OK\n",
               size, rounds, out, lo, hi, anysource ? ", wildcard receives" : "",
               hog_regions ? ", NIC tables nearly full in round 1" : "", all);
    free(rb);
    free(sb);
    free(rq);
    free(st);
    free(seen);
    MPI_Finalize();
    return 0;
}
