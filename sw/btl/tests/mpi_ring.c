// SPDX-License-Identifier: MIT
// A token around the ring of all ranks (every hop checked), then every rank exchanging with both
// neighbours at once (nonblocking), over sizes from one message to rendezvous.
#include "check.h"

static uint64_t key(int lap, size_t n, int from, int dir) {
    return ((uint64_t)lap << 40) ^ ((uint64_t)n << 8) ^ (uint64_t)(from * 4 + dir);
}

int main(int argc, char** argv) {
    int rank, size;
    mpi_start(&argc, &argv, &rank, &size, 2);
    const size_t sizes[] = {1, 57, 200, 4083, 20000};
    const int laps = 3;
    uint8_t* a = xmalloc(20000);
    uint8_t* b = xmalloc(20000);
    uint8_t* c = xmalloc(20000);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
        const size_t n = sizes[s];
        for (int lap = 0; lap < laps; ++lap) {
            // the token
            if (rank == 0) {
                fill(a, n, key(lap, n, 0, 0));
                MPI_OK(MPI_Send(a, (int)n, MPI_BYTE, right, lap, MPI_COMM_WORLD));
                MPI_OK(MPI_Recv(b, (int)n, MPI_BYTE, left, lap, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                long bad = verify(b, n, key(lap, n, left, 0));
                CHECK(bad < 0, "token lap %d size %zu back at rank 0: byte %ld wrong", lap, n, bad);
            } else {
                MPI_OK(MPI_Recv(b, (int)n, MPI_BYTE, left, lap, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                long bad = verify(b, n, key(lap, n, left, 0));
                CHECK(bad < 0, "token lap %d size %zu from rank %d: byte %ld wrong", lap, n, left, bad);
                fill(a, n, key(lap, n, rank, 0));
                MPI_OK(MPI_Send(a, (int)n, MPI_BYTE, right, lap, MPI_COMM_WORLD));
            }
            // both directions at once
            MPI_Request rq[4];
            uint8_t* sr = xmalloc(n);
            uint8_t* sl = xmalloc(n);
            fill(sr, n, key(lap, n, rank, 1));
            fill(sl, n, key(lap, n, rank, 2));
            MPI_OK(MPI_Irecv(b, (int)n, MPI_BYTE, left, 100 + lap, MPI_COMM_WORLD, &rq[0]));
            MPI_OK(MPI_Irecv(c, (int)n, MPI_BYTE, right, 200 + lap, MPI_COMM_WORLD, &rq[1]));
            MPI_OK(MPI_Isend(sr, (int)n, MPI_BYTE, right, 100 + lap, MPI_COMM_WORLD, &rq[2]));
            MPI_OK(MPI_Isend(sl, (int)n, MPI_BYTE, left, 200 + lap, MPI_COMM_WORLD, &rq[3]));
            MPI_OK(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
            long bad = verify(b, n, key(lap, n, left, 1));
            CHECK(bad < 0, "exchange from the left, size %zu: byte %ld wrong", n, bad);
            bad = verify(c, n, key(lap, n, right, 2));
            CHECK(bad < 0, "exchange from the right, size %zu: byte %ld wrong", n, bad);
            free(sr);
            free(sl);
        }
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("ring: %d ranks, %zu sizes x %d laps OK\n", size, sizeof sizes / sizeof sizes[0], laps);
    free(a);
    free(b);
    free(c);
    MPI_Finalize();
    return 0;
}
