// SPDX-License-Identifier: MIT
// Collectives over the VELO BTL: MPI_Allreduce (sum of ints, max of doubles; short and long
// vectors), MPI_Bcast from every root (one message to rendezvous sizes), MPI_Alltoall (1 and 1000
// ints per pair), MPI_Barrier. Every element of every result checked against its closed form.
#include "check.h"

int main(int argc, char** argv) {
    MPI_OK(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int lens[] = {1, 1000, 6000};
    for (size_t li = 0; li < 3; ++li) {
        const int n = lens[li];
        int* in = xmalloc(sizeof(int) * (size_t)n);
        int* out = xmalloc(sizeof(int) * (size_t)n);
        for (int k = 0; k < n; ++k) in[k] = (rank + 1) * (k + 3);
        MPI_OK(MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        const int ranks_sum = size * (size + 1) / 2;
        for (int k = 0; k < n; ++k)
            CHECK(out[k] == ranks_sum * (k + 3), "allreduce sum n=%d element %d: %d", n, k, out[k]);
        double* di = xmalloc(sizeof(double) * (size_t)n);
        double* dout = xmalloc(sizeof(double) * (size_t)n);
        for (int k = 0; k < n; ++k) di[k] = (double)((rank * 7 + k) % size) + 0.25 * k;
        MPI_OK(MPI_Allreduce(di, dout, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        for (int k = 0; k < n; ++k)
            CHECK(dout[k] == (double)(size - 1) + 0.25 * k, "allreduce max n=%d element %d", n, k);
        free(in);
        free(out);
        free(di);
        free(dout);
    }
    const size_t bl[] = {1, 60, 5000, 30000};
    uint8_t* b = xmalloc(30000);
    for (int root = 0; root < size; ++root)
        for (size_t k = 0; k < 4; ++k) {
            const uint64_t key = (uint64_t)root << 32 | bl[k];
            if (rank == root)
                fill(b, bl[k], key);
            else
                memset(b, 0, bl[k]);
            MPI_OK(MPI_Bcast(b, (int)bl[k], MPI_BYTE, root, MPI_COMM_WORLD));
            long bad = verify(b, bl[k], key);
            CHECK(bad < 0, "bcast root %d size %zu: byte %ld wrong", root, bl[k], bad);
        }
    free(b);
    const int al[] = {1, 1000};
    for (int k = 0; k < 2; ++k) {
        const int c = al[k];
        int* s = xmalloc(sizeof(int) * (size_t)(c * size));
        int* r = xmalloc(sizeof(int) * (size_t)(c * size));
        for (int p = 0; p < size; ++p)
            for (int j = 0; j < c; ++j) s[p * c + j] = rank * 1000000 + p * 10000 + j;
        MPI_OK(MPI_Alltoall(s, c, MPI_INT, r, c, MPI_INT, MPI_COMM_WORLD));
        for (int p = 0; p < size; ++p)
            for (int j = 0; j < c; ++j)
                CHECK(r[p * c + j] == p * 1000000 + rank * 10000 + j, "alltoall count %d from %d element %d", c, p, j);
        free(s);
        free(r);
    }
    for (int k = 0; k < 5; ++k) MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("collectives: %d ranks OK\n", size);
    MPI_Finalize();
    return 0;
}
