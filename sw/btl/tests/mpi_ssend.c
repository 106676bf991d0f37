// SPDX-License-Identifier: MIT
// Synchronous sends: MPI_Issend must not complete while the receiver has not posted the matching
// receive (checked with MPI_Test, which drives progress, before the receiver is told to post it),
// and completes once it has; MPI_Ssend delivers the data. Sizes from empty to rendezvous.
#include "check.h"

int main(int argc, char** argv) {
    int rank, size;
    mpi_start(&argc, &argv, &rank, &size, 2);
    const size_t sizes[] = {0, 8, 57, 4000, 100000};
    uint8_t* b = xmalloc(100000);
    uint8_t go = 1;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0] && rank < 2; ++k) {
        const size_t n = sizes[k];
        if (rank == 0) {
            fill(b, n, n + 1);
            MPI_Request rq;
            MPI_OK(MPI_Issend(b, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &rq));
            for (int i = 0; i < 100; ++i) {
                int done = 0;
                MPI_OK(MPI_Test(&rq, &done, MPI_STATUS_IGNORE));
                CHECK(!done, "size %zu: MPI_Issend completed before the receive was posted", n);
            }
            MPI_OK(MPI_Send(&go, 1, MPI_BYTE, 1, 2, MPI_COMM_WORLD));
            MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            fill(b, n, n + 2);
            MPI_OK(MPI_Ssend(b, (int)n, MPI_BYTE, 1, 3, MPI_COMM_WORLD));
        } else {
            MPI_OK(MPI_Recv(&go, 1, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MPI_Status st;
            int count;
            MPI_OK(MPI_Recv(b, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK((size_t)count == n, "size %zu: %d bytes", n, count);
            long bad = verify(b, n, n + 1);
            CHECK(bad < 0, "issend size %zu: byte %ld wrong", n, bad);
            MPI_OK(MPI_Recv(b, (int)n, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &st));
            bad = verify(b, n, n + 2);
            CHECK(bad < 0, "ssend size %zu: byte %ld wrong", n, bad);
        }
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("ssend: %zu sizes OK\n", sizeof sizes / sizeof sizes[0]);
    free(b);
    MPI_Finalize();
    return 0;
}
