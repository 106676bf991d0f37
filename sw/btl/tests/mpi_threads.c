// SPDX-License-Identifier: MIT
// MPI_THREAD_MULTIPLE: on ranks 0 and 1, four threads each send a stream of messages to the other
// rank (tag = thread) while receiving the peer thread's stream, all at the same time through the
// one VELO endpoint of the process. Every message checked, in order per thread (MPI's
// non-overtaking rule for one source and tag).
#include <pthread.h>

#include "check.h"

#define THREADS 4
#define MSGS 25

static int rank, peer;

static size_t msize(int t, int k) {
    const size_t s[] = {8, 57, 63, 300, 4083, 7000};
    return s[(unsigned)(t + k) % 6];
}
static uint64_t key(int r, int t, int k) {
    return (uint64_t)r << 40 | (uint64_t)t << 20 | (uint64_t)k;
}

static void* worker(void* arg) {
    const int t = (int)(intptr_t)arg;
    uint8_t* s = xmalloc(7000);
    uint8_t* r = xmalloc(7000);
    for (int k = 0; k < MSGS; ++k) {
        const size_t n = msize(t, k);
        fill(s, n, key(rank, t, k));
        MPI_Request rq;
        MPI_Status st;
        MPI_OK(MPI_Isend(s, (int)n, MPI_BYTE, peer, t, MPI_COMM_WORLD, &rq));
        MPI_OK(MPI_Recv(r, 7000, MPI_BYTE, peer, t, MPI_COMM_WORLD, &st));
        int count;
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK((size_t)count == n, "thread %d message %d: %d bytes, expected %zu", t, k, count, n);
        long bad = verify(r, n, key(peer, t, k));
        CHECK(bad < 0, "thread %d message %d: byte %ld wrong (mixed up with another thread's?)", t, k, bad);
        MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    }
    free(s);
    free(r);
    return NULL;
}

int main(int argc, char** argv) {
    int provided;
    MPI_OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided (%d)", provided);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs 2 ranks");
    peer = 1 - rank;
    if (rank < 2) {
        pthread_t th[THREADS];
        for (int t = 0; t < THREADS; ++t) CHECK(!pthread_create(&th[t], NULL, worker, (void*)(intptr_t)t), "thread");
        for (int t = 0; t < THREADS; ++t) pthread_join(th[t], NULL);
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) printf("threads: %d threads x %d messages each way OK\n", THREADS, MSGS);
    MPI_Finalize();
    return 0;
}
