// SPDX-License-Identifier: MIT
// Many outstanding requests between rank pairs (0-1, 2-3, ...): 200 MPI_Irecv posted in reverse
// order and 200 MPI_Isend of mixed sizes in flight at once; then a flood of 1500 small messages the
// receiver has not asked for yet (unexpected messages; the sender runs out of VELO credit), taken
// afterwards in order; then 24 rendezvous-sized transfers in flight each way. Every message checked.
#include "check.h"

#define K 200
#define FLOOD 1500
#define BIG 24
#define BIGN 12000

static size_t msize(int k) {
    const size_t s[] = {0, 1, 8, 57, 58, 62, 63, 120, 1000, 4083, 4084, 6000};
    return s[(unsigned)k % 12];
}

int main(int argc, char** argv) {
    MPI_OK(MPI_Init(&argc, &argv));
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int peer = rank ^ 1;
    if (peer < size) {
        // ---- 1: K receives and K sends outstanding
        uint8_t** sb = xmalloc(sizeof(uint8_t*) * K);
        uint8_t** rb = xmalloc(sizeof(uint8_t*) * K);
        MPI_Request* rq = xmalloc(sizeof(MPI_Request) * 2 * K);
        MPI_Status* st = xmalloc(sizeof(MPI_Status) * 2 * K);
        for (int k = K - 1; k >= 0; --k) {
            rb[k] = xmalloc(msize(k));
            MPI_OK(MPI_Irecv(rb[k], (int)msize(k), MPI_BYTE, peer, k, MPI_COMM_WORLD, &rq[k]));
        }
        for (int k = 0; k < K; ++k) {
            sb[k] = xmalloc(msize(k));
            fill(sb[k], msize(k), (uint64_t)rank << 20 | (uint64_t)k);
            MPI_OK(MPI_Isend(sb[k], (int)msize(k), MPI_BYTE, peer, k, MPI_COMM_WORLD, &rq[K + k]));
        }
        MPI_OK(MPI_Waitall(2 * K, rq, st));
        for (int k = 0; k < K; ++k) {
            int count;
            MPI_Get_count(&st[k], MPI_BYTE, &count);
            CHECK((size_t)count == msize(k) && st[k].MPI_TAG == k, "request %d: %d bytes tag %d", k, count,
                  st[k].MPI_TAG);
            long bad = verify(rb[k], msize(k), (uint64_t)peer << 20 | (uint64_t)k);
            CHECK(bad < 0, "request %d (%zu bytes): byte %ld wrong", k, msize(k), bad);
            free(rb[k]);
            free(sb[k]);
        }
        // ---- 2: a flood the receiver has not asked for yet
        if (rank % 2 == 0) {
            uint64_t* m = xmalloc(sizeof(uint64_t) * FLOOD);
            MPI_Request* fr = xmalloc(sizeof(MPI_Request) * FLOOD);
            for (int k = 0; k < FLOOD; ++k) {
                m[k] = (uint64_t)k * 2654435761u;
                MPI_OK(MPI_Isend(&m[k], 1, MPI_UINT64_T, peer, 5, MPI_COMM_WORLD, &fr[k]));
            }
            MPI_OK(MPI_Waitall(FLOOD, fr, MPI_STATUSES_IGNORE));
            uint8_t done = 1;
            MPI_OK(MPI_Send(&done, 1, MPI_BYTE, peer, 6, MPI_COMM_WORLD));
            free(m);
            free(fr);
        } else {
            uint8_t done;
            MPI_OK(MPI_Recv(&done, 1, MPI_BYTE, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));  // all are there now
            for (int k = 0; k < FLOOD; ++k) {
                uint64_t v;
                MPI_OK(MPI_Recv(&v, 1, MPI_UINT64_T, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                CHECK(v == (uint64_t)k * 2654435761u, "flood message %d out of order or wrong", k);
            }
        }
        // ---- 3: rendezvous transfers in flight both ways
        for (int k = 0; k < BIG; ++k) {
            rb[k] = xmalloc(BIGN);
            sb[k] = xmalloc(BIGN);
            fill(sb[k], BIGN, (uint64_t)rank << 30 | (uint64_t)k);
            MPI_OK(MPI_Irecv(rb[k], BIGN, MPI_BYTE, peer, 1000 + k, MPI_COMM_WORLD, &rq[k]));
            MPI_OK(MPI_Isend(sb[k], BIGN, MPI_BYTE, peer, 1000 + k, MPI_COMM_WORLD, &rq[BIG + k]));
        }
        MPI_OK(MPI_Waitall(2 * BIG, rq, MPI_STATUSES_IGNORE));
        for (int k = 0; k < BIG; ++k) {
            long bad = verify(rb[k], BIGN, (uint64_t)peer << 30 | (uint64_t)k);
            CHECK(bad < 0, "rendezvous %d: byte %ld wrong", k, bad);
            free(rb[k]);
            free(sb[k]);
        }
        free(sb);
        free(rb);
        free(rq);
        free(st);
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0)
        printf("many: %d outstanding, %d flooded, %d rendezvous in flight per pair OK\n", 2 * K, FLOOD, 2 * BIG);
    MPI_Finalize();
    return 0;
}
