// SPDX-License-Identifier: MIT
// libvelo_simtime.so: simulated time for MPI programs measured on the simulator (docs/mpi.md,
// "Measuring"). LD_PRELOAD it into the ranks and gettimeofday() and MPI_Wtime() advance with the
// fabric's NIC clock at VELO_SIMTIME_MHZ (default 100) instead of the wall clock: NetPIPE (which
// times with gettimeofday) and programs timing with MPI_Wtime then report latency and bandwidth
// of the simulated hardware, whatever the load of the machine running the simulation.
//
//   mpirun -x LD_PRELOAD=.../libvelo_simtime.so ... NPopenmpi ...
//
// The clock is read through an endpoint of its own on the fabric of $VELO_DEVICE (opened at the
// first call after the fabric is reachable). Until then, and when there is no fabric, the real
// time is returned; simulated time continues from the real time at that moment.
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

#include "velo/velo.h"

#define EXPORT __attribute__((visibility("default")))

static velo_ep_t* clock_ep;
static int state;  // 0: not tried, 1: opening, 2: open, 3: unavailable
static uint64_t cycle0;
static double real0, mhz = 100.0;

static double real_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void try_open(void) {
    int expect = 0;  // one thread opens; the others (and velo_open itself) get the real time meanwhile
    if (!__atomic_compare_exchange_n(&state, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return;
    const char* dev = getenv("VELO_DEVICE");
    if (!dev || !*dev) {
        __atomic_store_n(&state, 3, __ATOMIC_RELEASE);
        return;
    }
    const char* m = getenv("VELO_SIMTIME_MHZ");
    if (m && atof(m) > 0) mhz = atof(m);
    velo_open_attr_t a;
    velo_open_attr_init(&a);
    a.node = 0;
    a.ring_log2 = 6;  // it receives nothing
    if (velo_open(&a, &clock_ep) != 0 || velo_clock(clock_ep, &cycle0, NULL) != 0) {
        if (clock_ep) velo_close(clock_ep);
        clock_ep = NULL;
        __atomic_store_n(&state, 3, __ATOMIC_RELEASE);
        return;
    }
    real0 = real_now();
    __atomic_store_n(&state, 2, __ATOMIC_RELEASE);
}

// Simulated seconds since the clock endpoint was opened (exact in a double), or -1.
static double sim_elapsed(void) {
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == 0) try_open();
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2) return -1;
    uint64_t c = 0;
    if (velo_clock(clock_ep, &c, NULL) != 0) return -1;
    return (double)(c - cycle0) / (mhz * 1e6);
}

EXPORT int gettimeofday(struct timeval* tv, void* tz) {
    (void)tz;
    const double e = sim_elapsed();
    double sec = e < 0 ? real_now() : real0;
    double frac = e < 0 ? 0 : e;
    const time_t whole = (time_t)sec;
    frac += sec - (double)whole;  // real0 is an offset only: differences of the result stay exact
    tv->tv_sec = whole + (time_t)frac;
    tv->tv_usec = (suseconds_t)((frac - (double)(time_t)frac) * 1e6);
    return 0;
}

// MPI_Wtime counts from the opening of the clock: simulated nanoseconds stay exact in a double.
EXPORT double MPI_Wtime(void) {
    const double e = sim_elapsed();
    return e < 0 ? real_now() : e;
}
EXPORT double PMPI_Wtime(void) {
    return MPI_Wtime();
}

__attribute__((destructor)) static void close_clock(void) {
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == 2) {
        __atomic_store_n(&state, 3, __ATOMIC_RELEASE);
        velo_close(clock_ep);
    }
}
EXPORT double MPI_Wtick(void) {
    return 1.0 / (mhz * 1e6);
}
