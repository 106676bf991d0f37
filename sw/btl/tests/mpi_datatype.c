// SPDX-License-Identifier: MIT
// Non-contiguous derived datatypes between ranks 0 and 1 (both directions): vector, indexed and a
// resized struct with holes, received as the same type (the holes must stay untouched) and as
// contiguous data (packed order); element counts from one message to rendezvous.
#include <stddef.h>

#include "check.h"

typedef struct {
    char c;
    double d[3];
    int i;
} rec_t;

static int ival(int k, int round) {
    return k * 7919 + round * 104729 + 1;
}

int main(int argc, char** argv) {
    int rank, size;
    mpi_start(&argc, &argv, &rank, &size, 2);
    const int counts[] = {1, 4, 300, 5000};  // vector of 3-of-5 ints: 12 .. 60000 bytes of data
    int checks = 0;
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0] && rank < 2; ++ci) {
        const int cnt = counts[ci];
        for (int dir = 0; dir < 2; ++dir) {
            const int sender = dir, receiver = 1 - dir, round = (int)ci * 2 + dir;
            // ---- vector: cnt blocks of 3 ints, stride 5
            MPI_Datatype vec;
            MPI_OK(MPI_Type_vector(cnt, 3, 5, MPI_INT, &vec));
            MPI_OK(MPI_Type_commit(&vec));
            const size_t nint = (size_t)cnt * 5;
            int* v = xmalloc(nint * sizeof(int));
            int* packed = xmalloc((size_t)cnt * 3 * sizeof(int));
            if (rank == sender) {
                for (size_t k = 0; k < nint; ++k) v[k] = ival((int)k, round);
                MPI_OK(MPI_Send(v, 1, vec, receiver, 1, MPI_COMM_WORLD));
                MPI_OK(MPI_Send(v, 1, vec, receiver, 2, MPI_COMM_WORLD));
            } else {
                for (size_t k = 0; k < nint; ++k) v[k] = -1;
                MPI_OK(MPI_Recv(v, 1, vec, sender, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                for (size_t k = 0; k < nint; ++k) {
                    const int want = k % 5 < 3 ? ival((int)k, round) : -1;
                    CHECK(v[k] == want, "vector count %d: element %zu is %d, expected %d", cnt, k, v[k], want);
                }
                MPI_Status st;
                MPI_OK(MPI_Recv(packed, cnt * 3, MPI_INT, sender, 2, MPI_COMM_WORLD, &st));
                int got;
                MPI_Get_count(&st, MPI_INT, &got);
                CHECK(got == cnt * 3, "vector as contiguous: %d ints", got);
                for (int k = 0; k < cnt * 3; ++k) {
                    const int src = (k / 3) * 5 + k % 3;
                    CHECK(packed[k] == ival(src, round), "vector as contiguous: int %d wrong", k);
                }
                checks += 2;
            }
            free(v);
            free(packed);
            MPI_Type_free(&vec);

            // ---- indexed doubles: blocks of 1, 4, 2, 7 at 0, 3, 10, 20 (of a span of 27) per element
            const int bl[4] = {1, 4, 2, 7}, dp[4] = {0, 3, 10, 20};
            MPI_Datatype idx, idxr;
            MPI_OK(MPI_Type_indexed(4, bl, dp, MPI_DOUBLE, &idx));
            MPI_OK(MPI_Type_create_resized(idx, 0, 27 * (MPI_Aint)sizeof(double), &idxr));
            MPI_OK(MPI_Type_commit(&idxr));
            const size_t nd = (size_t)cnt * 27;
            double* d = xmalloc(nd * sizeof(double));
            if (rank == sender) {
                for (size_t k = 0; k < nd; ++k) d[k] = (double)k * 0.5 + round;
                MPI_OK(MPI_Send(d, cnt, idxr, receiver, 3, MPI_COMM_WORLD));
            } else {
                for (size_t k = 0; k < nd; ++k) d[k] = -1.0;
                MPI_OK(MPI_Recv(d, cnt, idxr, sender, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                for (size_t k = 0; k < nd; ++k) {
                    const int o = (int)(k % 27);
                    const int in = (o == 0) || (o >= 3 && o < 7) || (o >= 10 && o < 12) || (o >= 20 && o < 27);
                    const double want = in ? (double)k * 0.5 + round : -1.0;
                    CHECK(d[k] == want, "indexed count %d: double %zu is %g, expected %g", cnt, k, d[k], want);
                }
                ++checks;
            }
            free(d);
            MPI_Type_free(&idx);
            MPI_Type_free(&idxr);

            // ---- struct with holes (char, 3 doubles, int), resized to sizeof(rec_t)
            MPI_Datatype st0, rec;
            const int sbl[3] = {1, 3, 1};
            const MPI_Aint sdp[3] = {offsetof(rec_t, c), offsetof(rec_t, d), offsetof(rec_t, i)};
            const MPI_Datatype sty[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
            MPI_OK(MPI_Type_create_struct(3, sbl, sdp, sty, &st0));
            MPI_OK(MPI_Type_create_resized(st0, 0, sizeof(rec_t), &rec));
            MPI_OK(MPI_Type_commit(&rec));
            rec_t* r = xmalloc((size_t)cnt * sizeof(rec_t));
            if (rank == sender) {
                for (int k = 0; k < cnt; ++k) {
                    r[k].c = (char)('a' + (k + round) % 26);
                    for (int j = 0; j < 3; ++j) r[k].d[j] = k * 3.25 + j + round;
                    r[k].i = ival(k, round);
                }
                MPI_OK(MPI_Send(r, cnt, rec, receiver, 4, MPI_COMM_WORLD));
            } else {
                memset(r, 0x5a, (size_t)cnt * sizeof(rec_t));
                MPI_OK(MPI_Recv(r, cnt, rec, sender, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                for (int k = 0; k < cnt; ++k) {
                    CHECK(r[k].c == (char)('a' + (k + round) % 26), "struct %d: char", k);
                    for (int j = 0; j < 3; ++j) CHECK(r[k].d[j] == k * 3.25 + j + round, "struct %d: double %d", k, j);
                    CHECK(r[k].i == ival(k, round), "struct %d: int", k);
                    // the hole after the char was not written
                    const unsigned char* raw = (const unsigned char*)&r[k];
                    for (size_t h = offsetof(rec_t, c) + 1; h < offsetof(rec_t, d); ++h)
                        CHECK(raw[h] == 0x5a, "struct %d: hole byte %zu written", k, h);
                }
                ++checks;
            }
            free(r);
            MPI_Type_free(&st0);
            MPI_Type_free(&rec);
        }
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    int total = 0;
    MPI_OK(MPI_Reduce(&checks, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        CHECK(total == 4 * 2 * 4, "%d datatype checks ran, expected %d", total, 4 * 2 * 4);
        printf("datatype: %d checks OK\n", total);
    }
    MPI_Finalize();
    return 0;
}
