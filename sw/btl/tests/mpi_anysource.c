// SPDX-License-Identifier: MIT
// Wildcard receives: every rank but 0 sends a stream of messages with three tags to rank 0, which
// takes them with MPI_ANY_SOURCE / MPI_ANY_TAG (MPI_Probe + MPI_Recv of the probed size, plain
// wildcard MPI_Recv, preposted wildcard MPI_Irecv). Checked: status source/tag/count, contents,
// and MPI's non-overtaking order per (source, tag); every message exactly once.
#include "check.h"

#define MSGS 36
#define MAXN 9000

static size_t msg_size(int src, int seq) {
    const size_t s[] = {8, 57, 100, 4083, 9000};
    return s[(unsigned)(src + seq) % 5];
}
static int msg_tag(int seq) {
    return 10 + seq % 3;
}

int main(int argc, char** argv) {
    int rank, size;
    mpi_start(&argc, &argv, &rank, &size, 2);
    uint8_t* b = xmalloc(MAXN);
    if (rank != 0) {
        for (int seq = 0; seq < MSGS; ++seq) {
            const size_t n = msg_size(rank, seq);
            fill(b, n, (uint64_t)rank << 32 | (uint64_t)seq);
            memcpy(b, &seq, sizeof seq);  // the sequence number leads every message
            MPI_OK(MPI_Send(b, (int)n, MPI_BYTE, 0, msg_tag(seq), MPI_COMM_WORLD));
        }
    } else {
        // next[src][tag]: the sequence number that must come next from src with that tag
        int* next = xmalloc(sizeof(int) * (size_t)size * 3);
        int* seen = xmalloc(sizeof(int) * (size_t)size * MSGS);
        memset(seen, 0, sizeof(int) * (size_t)size * MSGS);
        for (int s = 0; s < size; ++s)
            for (int t = 0; t < 3; ++t) next[s * 3 + t] = t;
        const int total = (size - 1) * MSGS;
        MPI_Request pre;
        uint8_t* pb = xmalloc(MAXN);
        MPI_OK(MPI_Irecv(pb, MAXN, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &pre));
        int pre_active = 1;
        for (int got = 0; got < total; ++got) {
            MPI_Status st;
            uint8_t* data = b;
            const int way = got % 3;
            if (pre_active) {  // posted before any other receive: it takes the earliest message
                MPI_OK(MPI_Wait(&pre, &st));
                data = pb;
                pre_active = 0;
            } else if (way == 1) {
                MPI_OK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                int count;
                MPI_Get_count(&st, MPI_BYTE, &count);
                MPI_OK(MPI_Recv(b, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st));
            } else {
                MPI_OK(MPI_Recv(b, MAXN, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            }
            const int src = st.MPI_SOURCE, tag = st.MPI_TAG;
            CHECK(src > 0 && src < size && tag >= 10 && tag < 13, "status source %d tag %d", src, tag);
            int count;
            MPI_Get_count(&st, MPI_BYTE, &count);
            int seq;
            memcpy(&seq, data, sizeof seq);
            CHECK(seq == next[src * 3 + tag - 10], "from %d tag %d: sequence %d, expected %d (overtaken)", src, tag,
                  seq, next[src * 3 + tag - 10]);
            next[src * 3 + tag - 10] += 3;
            CHECK(!seen[src * MSGS + seq]++, "message %d of %d twice", seq, src);
            const size_t n = msg_size(src, seq);
            CHECK((size_t)count == n, "from %d seq %d: %d bytes, expected %zu", src, seq, count, n);
            uint8_t* want = xmalloc(n);
            fill(want, n, (uint64_t)src << 32 | (uint64_t)seq);
            const int same = !memcmp(data + sizeof seq, want + sizeof seq, n - sizeof seq);
            free(want);
            CHECK(same, "from %d seq %d: contents wrong", src, seq);
            if (!pre_active && got + 1 < total && way == 2) {
                MPI_OK(MPI_Irecv(pb, MAXN, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &pre));
                pre_active = 1;
            }
        }
        CHECK(!pre_active, "a preposted wildcard receive is left");
        for (int s = 1; s < size; ++s)
            for (int q = 0; q < MSGS; ++q) CHECK(seen[s * MSGS + q] == 1, "message %d of %d missing", q, s);
        printf("anysource: %d messages from %d senders OK\n", total, size - 1);
        free(next);
        free(seen);
        free(pb);
    }
    free(b);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Finalize();
    return 0;
}
