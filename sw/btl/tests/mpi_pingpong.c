// SPDX-License-Identifier: MIT
// Ping-pong between ranks 0 and 1 over message sizes around every edge of the VELO BTL (one
// message, squeezed match header, trains, eager limit, rendezvous, max send size); every byte of
// every message checked, and the received count.
//   mpi_pingpong [--sizes a,b,..] [--iters N] [--bench] [--forever]
// --bench: per size the median half round trip (MPI_Wtime; with libvelo_simtime.so preloaded this
// is simulated time) and bandwidth, as "PINGPONG size=.. halfrtt_us=.. mean_us=.. MBps=.." lines.
// --forever: 8-byte ping-pong until killed (prints "pingpong: running" once).
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
    size_t sizes[64];
    int nsizes = 0, iters = -1, bench = 0, forever = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            for (char* t = strtok(argv[++i], ","); t && nsizes < 64; t = strtok(NULL, ","))
                sizes[nsizes++] = (size_t)strtoull(t, NULL, 0);
        } else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--bench")) {
            bench = 1;
        } else if (!strcmp(argv[i], "--forever")) {
            forever = 1;
        } else {
            fprintf(stderr, "usage: mpi_pingpong [--sizes a,b,..] [--iters N] [--bench] [--forever]\n");
            return 2;
        }
    }
    if (!nsizes) {
        // 57/58: payload of one squeezed-match message; 62/63: one SHORT message; 4082/4083: the
        // eager limit (4096) minus ob1's 14-byte match header; 65536: max send size
        const size_t d[] = {0,    1,    7,    8,     14,    15,    48,     49,     56,     57,   58,
                            62,   63,   64,   71,    72,    100,   1000,   4081,   4082,   4083, 4096,
                            4097, 8192, 9999, 65535, 65536, 65537, 131072, 300001, 1048576};
        for (size_t k = 0; k < sizeof d / sizeof d[0]; ++k) sizes[nsizes++] = d[k];
    }
    if (iters < 0) iters = bench ? 100 : 2;
    int rank, size;
    mpi_start(&argc, &argv, &rank, &size, 2);
    size_t maxn = 8;
    for (int s = 0; s < nsizes; ++s)
        if (sizes[s] > maxn) maxn = sizes[s];
    uint8_t* sb = xmalloc(maxn);
    uint8_t* rb = xmalloc(maxn);
    double* t = xmalloc(sizeof(double) * (size_t)(iters + 1));
    const int peer = 1 - rank;
    if (forever && rank < 2) {
        for (uint64_t it = 0;; ++it) {
            if (rank == 0) {
                fill(sb, 8, it);
                MPI_OK(MPI_Send(sb, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
                MPI_OK(MPI_Recv(rb, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                CHECK(verify(rb, 8, it) < 0, "echo %llu wrong", (unsigned long long)it);
                if (it == 100) {
                    printf("pingpong: running\n");
                    fflush(stdout);
                }
            } else {
                MPI_OK(MPI_Recv(rb, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                MPI_OK(MPI_Send(rb, 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
            }
        }
    }
    for (int s = 0; s < nsizes && rank < 2; ++s) {
        const size_t n = sizes[s];
        const int warm = bench ? 5 : 0;
        for (int it = -warm; it < iters; ++it) {
            const uint64_t key = (uint64_t)n * 1000003u + (uint64_t)(it + warm) * 2;
            MPI_Status st;
            int count;
            if (rank == 0) {
                if (!bench || it < 0) fill(sb, n, key);
                const double t0 = MPI_Wtime();
                MPI_OK(MPI_Send(sb, (int)n, MPI_BYTE, peer, 7, MPI_COMM_WORLD));
                MPI_OK(MPI_Recv(rb, (int)n, MPI_BYTE, peer, 8, MPI_COMM_WORLD, &st));
                if (it >= 0) t[it] = (MPI_Wtime() - t0) / 2;
                MPI_Get_count(&st, MPI_BYTE, &count);
                CHECK((size_t)count == n, "size %zu: echo of %d bytes", n, count);
                if (!bench) {
                    long bad = verify(rb, n, key + 1);
                    CHECK(bad < 0, "size %zu round %d: byte %ld of the echo wrong", n, it, bad);
                }
            } else {
                MPI_OK(MPI_Recv(rb, (int)n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &st));
                MPI_Get_count(&st, MPI_BYTE, &count);
                CHECK((size_t)count == n, "size %zu: received %d bytes", n, count);
                if (!bench) {
                    long bad = verify(rb, n, key);
                    CHECK(bad < 0, "size %zu round %d: byte %ld wrong", n, it, bad);
                    fill(sb, n, key + 1);
                    MPI_OK(MPI_Send(sb, (int)n, MPI_BYTE, peer, 8, MPI_COMM_WORLD));
                } else {
                    MPI_OK(MPI_Send(rb, (int)n, MPI_BYTE, peer, 8, MPI_COMM_WORLD));
                }
            }
        }
        if (rank == 0 && bench && iters > 0) {
            double sum = 0;
            for (int k = 0; k < iters; ++k) sum += t[k];
            qsort(t, (size_t)iters, sizeof *t, cmp_double);
            const double med = t[iters / 2];
            printf("PINGPONG size=%zu halfrtt_us=%.4f mean_us=%.4f MBps=%.3f\n", n, med * 1e6, sum / iters * 1e6,
                   med > 0 ? (double)n / med / 1e6 : 0.0);
        }
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0 && !bench) printf("pingpong: %d sizes x %d rounds OK\n", nsizes, iters);
    free(sb);
    free(rb);
    free(t);
    MPI_Finalize();
    return 0;
}
