// SPDX-License-Identifier: MIT
// All-to-all by point-to-point messages: every rank posts receives from and sends to every other
// rank at once, with a different size per pair (one message, trains, rendezvous); all checked.
#include "check.h"

static size_t pair_size(int src, int dst, int round) {
    const size_t s[] = {0, 9, 57, 63, 700, 4083, 4500, 33000};
    return s[(unsigned)(src * 3 + dst * 5 + round) % 8];
}

static uint64_t key(int src, int dst, int round) {
    return (uint64_t)src << 32 | (uint64_t)dst << 16 | (uint64_t)round;
}

int main(int argc, char** argv) {
    MPI_OK(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int rounds = 4;
    uint8_t** sb = xmalloc(sizeof(uint8_t*) * (size_t)size);
    uint8_t** rb = xmalloc(sizeof(uint8_t*) * (size_t)size);
    MPI_Request* rq = xmalloc(sizeof(MPI_Request) * 2 * (size_t)size);
    MPI_Status* st = xmalloc(sizeof(MPI_Status) * 2 * (size_t)size);
    for (int round = 0; round < rounds; ++round) {
        int k = 0;
        for (int p = 0; p < size; ++p) {
            if (p == rank) continue;
            const size_t rn = pair_size(p, rank, round), sn = pair_size(rank, p, round);
            rb[p] = xmalloc(rn);
            sb[p] = xmalloc(sn);
            fill(sb[p], sn, key(rank, p, round));
            MPI_OK(MPI_Irecv(rb[p], (int)rn, MPI_BYTE, p, round, MPI_COMM_WORLD, &rq[k++]));
        }
        for (int i = 1; i < size; ++i) {  // sends in a different order on every rank
            const int p = (rank + i) % size;
            MPI_OK(MPI_Isend(sb[p], (int)pair_size(rank, p, round), MPI_BYTE, p, round, MPI_COMM_WORLD, &rq[k++]));
        }
        MPI_OK(MPI_Waitall(k, rq, st));
        int j = 0;
        for (int p = 0; p < size; ++p) {
            if (p == rank) continue;
            const size_t rn = pair_size(p, rank, round);
            int count;
            MPI_Get_count(&st[j++], MPI_BYTE, &count);
            CHECK((size_t)count == rn, "round %d from %d: %d bytes, expected %zu", round, p, count, rn);
            long bad = verify(rb[p], rn, key(p, rank, round));
            CHECK(bad < 0, "round %d from %d (%zu bytes): byte %ld wrong", round, p, rn, bad);
            free(rb[p]);
            free(sb[p]);
        }
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("alltoall: %d ranks x %d rounds OK\n", size, rounds);
    free(sb);
    free(rb);
    free(rq);
    free(st);
    MPI_Finalize();
    return 0;
}
