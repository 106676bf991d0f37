// SPDX-License-Identifier: MIT
// MPI_Sendrecv and MPI_Sendrecv_replace: shifts by 1 and by 2 around all ranks, sizes from empty
// to rendezvous, contents and counts checked.
#include "check.h"

static uint64_t key(int src, int shift, size_t n, int rep) {
    return (uint64_t)src << 48 ^ (uint64_t)shift << 40 ^ (uint64_t)n << 4 ^ (uint64_t)rep;
}

int main(int argc, char** argv) {
    MPI_OK(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const size_t sizes[] = {0, 8, 57, 58, 1000, 4083, 20000};
    uint8_t* s = xmalloc(20000);
    uint8_t* r = xmalloc(20000);
    int checks = 0;
    for (int shift = 1; shift <= 2; ++shift) {
        const int to = (rank + shift) % size, from = (rank - shift % size + size) % size;
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
            const size_t n = sizes[k];
            for (int rep = 0; rep < 2; ++rep) {
                fill(s, n, key(rank, shift, n, rep));
                MPI_Status st;
                MPI_OK(MPI_Sendrecv(s, (int)n, MPI_BYTE, to, rep, r, (int)n, MPI_BYTE, from, rep, MPI_COMM_WORLD, &st));
                int count;
                MPI_Get_count(&st, MPI_BYTE, &count);
                CHECK((size_t)count == n && st.MPI_SOURCE == from && st.MPI_TAG == rep, "sendrecv status");
                long bad = verify(r, n, key(from, shift, n, rep));
                CHECK(bad < 0, "sendrecv shift %d size %zu: byte %ld wrong", shift, n, bad);
                // the same through one buffer
                fill(s, n, key(rank, shift, n, rep + 10));
                MPI_OK(MPI_Sendrecv_replace(s, (int)n, MPI_BYTE, to, 50 + rep, from, 50 + rep, MPI_COMM_WORLD, &st));
                bad = verify(s, n, key(from, shift, n, rep + 10));
                CHECK(bad < 0, "sendrecv_replace shift %d size %zu: byte %ld wrong", shift, n, bad);
                checks += 2;
            }
        }
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("sendrecv: %d ranks, %d exchanges each OK\n", size, checks);
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
