/* SPDX-License-Identifier: MIT */
/* Helpers of the BTL's MPI test programs: checks that end the job with a message, data patterns. */
#ifndef VELO_BTL_TESTS_CHECK_H
#define VELO_BTL_TESTS_CHECK_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failed check: say where and what, end the whole job with status 1. */
#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            int rank_ = -1;                                                     \
            MPI_Comm_rank(MPI_COMM_WORLD, &rank_);                              \
            fprintf(stderr, "FAIL rank %d %s:%d: ", rank_, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                       \
            fprintf(stderr, "\n");                                              \
            fflush(stderr);                                                     \
            MPI_Abort(MPI_COMM_WORLD, 1);                                       \
        }                                                                       \
    } while (0)

#define MPI_OK(call)                                             \
    do {                                                         \
        int rc_ = (call);                                        \
        CHECK(rc_ == MPI_SUCCESS, "%s returned %d", #call, rc_); \
    } while (0)

/* MPI_Init, this rank and the job's size; the job needs at least min_ranks ranks. */
static inline void mpi_start(int* argc, char*** argv, int* rank, int* size, int min_ranks) {
    MPI_OK(MPI_Init(argc, argv));
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    CHECK(*size >= min_ranks, "needs %d ranks", min_ranks);
}

/* The byte at position i of message `key`: differs between messages and positions. */
static inline uint8_t pattern(uint64_t key, size_t i) {
    uint64_t x = key * 0x9e3779b97f4a7c15ull + i * 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return (uint8_t)(x ^ (x >> 13));
}

static inline void fill(uint8_t* b, size_t n, uint64_t key) {
    for (size_t i = 0; i < n; ++i) b[i] = pattern(key, i);
}

/* Index of the first wrong byte, or -1. */
static inline long verify(const uint8_t* b, size_t n, uint64_t key) {
    for (size_t i = 0; i < n; ++i)
        if (b[i] != pattern(key, i)) return (long)i;
    return -1;
}

static inline void* xmalloc(size_t n) {
    void* p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

#endif
