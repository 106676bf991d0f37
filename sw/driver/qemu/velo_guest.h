// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// What the parts of the QEMU guest program (velo_guest.c and velo_guest_*.c) share: the check
// reporter, BAR and mapping access, the ioctl helpers and the RMA helpers (velo_guest_common.c),
// and each step's entry point.
#pragma once
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "velo/velo_hw.h"
#include "velo/velo_uapi.h"
#include "velo_qemu_img.h"

extern const char* g_prefix;  // the checks' name prefix
extern int g_failed;          // a check failed

struct bar {
    volatile uint32_t* p;
    size_t len;
};

// An endpoint with RMA set up and its notification queue and both rings mapped (the steps that
// failed leave their errno in e / e1 and MAP_FAILED mappings).
struct rma_ep {
    int fd, e, e1;
    struct velo_uapi_ep_open ep;
    struct velo_uapi_rma_setup st;
    void *nq, *ring, *cring;
};

// the rma_notifier attribute: counts[0..8] by kind, [9] ignored, [10] withdrawn
#define MN_N 11
static const char* const mn_names[MN_N] = {"unmap",      "clear",   "protection_vma", "protection_page",
                                           "soft_dirty", "release", "migrate",        "exclusive",
                                           "other",      "ignored", "withdrawn"};

void report(const char* name, int ok, const char* fmt, ...);
int map_bar(const char* path, struct bar* b);
uint32_t rd(const struct bar* b, uint32_t off);
int parse_u32(const char* s, uint32_t* v);
int touch(volatile uint32_t* p, int write, uint32_t v, uint32_t* out);
const char* sig_name(int s);
int ioc(int fd, unsigned long cmd, void* arg);
int ep_open(int fd, int vpid, struct velo_uapi_ep_open* e);
int vpids_lists(const char* sysdir, unsigned v, unsigned ctl, char* first, size_t firstlen);
int write_file(const char* path, const char* text);
void child_results(pid_t pid, int pfd[2], int res[2]);
int wait_gone(int fd, const char* ready);
long vm_pin_kb(void);
long vm_pin_settle(long want);
int mn_read(const char* sysdir, long* c);
int mn_delta(const long* a, const long* b, const long* want, char* out, size_t len);
int rma_reg(int fd, void* addr, size_t len, struct velo_uapi_register* r);
int rma_repin(int fd, uint64_t nla, uint32_t* repinned);
int rma_dereg(int fd, uint64_t nla);
int swiotlb_forced(void);
void rma_ep_open(const char* dev, struct rma_ep* r);

int cmd_uapi(const char* dev, const char* sysdir, unsigned node_id, int want_irq, int want_window);
int cmd_hold(const char* dev, const char* ready);
int cmd_rma(const char* dev, const char* sysdir, const char* ready, const char* go);
int cmd_rmastuck(const char* dev, const char* sysdir, const char* ready, const char* go);
int cmd_uffd(const char* dev, const char* sysdir, const char* bdf);
