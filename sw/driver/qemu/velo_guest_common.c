// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// QEMU guest program: the check reporter, BAR and mapping access, ioctl and RMA helpers.
#define _GNU_SOURCE
#include "velo_guest.h"

const char* g_prefix = "";
int g_failed;

void report(const char* name, int ok, const char* fmt, ...) {
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    printf("VELOTEST %s.%s %s %s\n", g_prefix, name, ok ? "PASS" : "FAIL", detail);
    fflush(stdout);
    if (!ok) g_failed = 1;
}

// ------------------------------------------------------------------ BAR access (sysfs resource)

int map_bar(const char* path, struct bar* b) {
    int fd = open(path, O_RDWR | O_SYNC);
    if (fd < 0) {
        fprintf(stderr, "velo_guest: open %s: %s\n", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) || st.st_size <= 0) {
        fprintf(stderr, "velo_guest: %s: no size\n", path);
        close(fd);
        return -1;
    }
    void* p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        fprintf(stderr, "velo_guest: mmap %s: %s\n", path, strerror(errno));
        return -1;
    }
    b->p = (volatile uint32_t*)p;
    b->len = (size_t)st.st_size;
    return 0;
}

uint32_t rd(const struct bar* b, uint32_t off) {
    return b->p[off / 4];
}

int parse_u32(const char* s, uint32_t* v) {
    char* end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || end == s || *end || x > UINT32_MAX) return -1;
    *v = (uint32_t)x;
    return 0;
}

// ------------------------------------------------------------------ touching mappings
static sigjmp_buf g_jmp;
static volatile sig_atomic_t g_sig;

static void on_fault(int sig) {
    g_sig = sig;
    siglongjmp(g_jmp, 1);
}

// Read (write) 32 bits at p; returns 0, or the signal that stopped the access.
int touch(volatile uint32_t* p, int write, uint32_t v, uint32_t* out) {
    struct sigaction sa, old_bus, old_segv;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fault;
    sigaction(SIGBUS, &sa, &old_bus);
    sigaction(SIGSEGV, &sa, &old_segv);
    g_sig = 0;
    if (!sigsetjmp(g_jmp, 1)) {
        if (write)
            *p = v;
        else if (out)
            *out = *p;
        else
            (void)*p;
    }
    sigaction(SIGBUS, &old_bus, NULL);
    sigaction(SIGSEGV, &old_segv, NULL);
    return g_sig;
}

const char* sig_name(int s) {
    return s == 0 ? "no signal" : s == SIGBUS ? "SIGBUS" : s == SIGSEGV ? "SIGSEGV" : "signal";
}

// ------------------------------------------------------------------ ioctl helpers
int ioc(int fd, unsigned long cmd, void* arg) {
    return ioctl(fd, cmd, arg) ? errno : 0;
}

int ep_open(int fd, int vpid, struct velo_uapi_ep_open* e) {
    memset(e, 0, sizeof *e);
    e->argsz = sizeof *e;
    e->vpid = vpid;
    return ioc(fd, VELO_IOC_EP_OPEN, e);
}

// Does /sys/class/velo/veloN/vpids list data vpid v (as "<v> <ctl> <pid> ...")?
int vpids_lists(const char* sysdir, unsigned v, unsigned ctl, char* first, size_t firstlen) {
    char path[512], line[256];
    snprintf(path, sizeof path, "%s/vpids", sysdir);
    FILE* f = fopen(path, "r");
    if (!f) {
        snprintf(first, firstlen, "vpids: %s", strerror(errno));
        return -1;
    }
    int found = 0, n = 0;
    first[0] = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (n++ == 0) snprintf(first, firstlen, "%s", line);
        unsigned a, b, pid;
        if (sscanf(line, "%u %u %u", &a, &b, &pid) == 3 && a == v && b == ctl && pid == (unsigned)getpid()) found = 1;
    }
    fclose(f);
    return found;
}

int write_file(const char* path, const char* text) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) return errno;
    ssize_t n = write(fd, text, strlen(text));
    int e = n < 0 ? errno : 0;
    close(fd);
    return e;
}

// The parent's side of a check run in a child (fork): the two results the child writes into the
// pipe before it exits (res[0] = -1 if it wrote none), then the child reaped. pid <= 0: nothing.
void child_results(pid_t pid, int pfd[2], int res[2]) {
    if (pid <= 0) return;
    close(pfd[1]);
    if (read(pfd[0], res, 2 * sizeof res[0]) != (ssize_t)(2 * sizeof res[0])) res[0] = -1;
    close(pfd[0]);
    waitpid(pid, NULL, 0);
}

// Tell the shell we are ready (create the file `ready`), then sleep in WAIT without a timeout
// until the device goes away under us: the WAIT's errno (ENODEV wanted).
int wait_gone(int fd, const char* ready) {
    int rf = open(ready, O_WRONLY | O_CREAT, 0644);
    if (rf >= 0) close(rf);
    struct velo_uapi_wait wt;
    memset(&wt, 0, sizeof wt);
    wt.argsz = sizeof wt;
    wt.flags = VELO_WAIT_DATA;
    wt.timeout_ns = VELO_WAIT_FOREVER;
    return ioc(fd, VELO_IOC_WAIT, &wt);
}

// ------------------------------------------------------------------ rma (the "rma" image)
// VmPin of this process in kB (mm->pinned_vm: registered pages, rings, notification queue)
long vm_pin_kb(void) {
    FILE* f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmPin: %ld kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb;
}

// the pins of a region go to a worker after the NIC let go of them: wait for it (bounded)
long vm_pin_settle(long want) {
    long kb = vm_pin_kb();
    for (int i = 0; i < 500 && kb != want; ++i) {
        usleep(10000);
        kb = vm_pin_kb();
    }
    return kb;
}

int mn_read(const char* sysdir, long* c) {
    char path[512], name[64];
    long v;
    snprintf(path, sizeof path, "%s/rma_notifier", sysdir);
    FILE* f = fopen(path, "r");
    int n = 0;
    while (f && fscanf(f, "%63s %ld", name, &v) == 2 && n < MN_N) {
        if (strcmp(name, mn_names[n])) break;
        c[n++] = v;
    }
    if (f) fclose(f);
    return n == MN_N ? 0 : -1;
}

// the counters moved by exactly `want` (the other kinds by nothing)
int mn_delta(const long* a, const long* b, const long* want, char* out, size_t len) {
    int ok = 1;
    size_t n = 0;
    for (int i = 0; i < MN_N; ++i) {
        long d = b[i] - a[i];
        if (d != want[i]) ok = 0;
        if (d && n < len) n += (size_t)snprintf(out + n, len - n, "%s+%ld ", mn_names[i], d);
    }
    if (!n && len) out[0] = 0;
    return ok;
}

int rma_reg(int fd, void* addr, size_t len, struct velo_uapi_register* r) {
    memset(r, 0, sizeof *r);
    r->argsz = sizeof *r;
    r->flags = VELO_REG_ACCESS_ALL;
    r->addr = (uint64_t)(uintptr_t)addr;
    r->len = len;
    return ioc(fd, VELO_IOC_REGISTER, r);
}

int rma_repin(int fd, uint64_t nla, uint32_t* repinned) {
    struct velo_uapi_repin p;
    memset(&p, 0, sizeof p);
    p.argsz = sizeof p;
    p.nla = nla;
    int e = ioc(fd, VELO_IOC_REPIN, &p);
    *repinned = e ? 99 : p.out_repinned;
    return e;
}

int rma_dereg(int fd, uint64_t nla) {
    struct velo_uapi_deregister d;
    memset(&d, 0, sizeof d);
    d.argsz = sizeof d;
    d.nla = nla;
    return ioc(fd, VELO_IOC_DEREGISTER, &d);
}

// The guest was booted with swiotlb=force (every DMA mapping bounces).
int swiotlb_forced(void) {
    char cmdline[1024] = "";
    FILE* cf = fopen("/proc/cmdline", "r");
    if (cf) {
        if (!fgets(cmdline, sizeof cmdline, cf)) cmdline[0] = 0;
        fclose(cf);
    }
    return strstr(cmdline, "swiotlb=force") != NULL;
}

void rma_ep_open(const char* dev, struct rma_ep* r) {
    memset(r, 0, sizeof *r);
    r->fd = open(dev, O_RDWR | O_CLOEXEC);
    r->e = r->fd < 0 ? errno : ep_open(r->fd, -1, &r->ep);
    r->st.argsz = sizeof r->st;
    r->e1 = r->e ? r->e : ioc(r->fd, VELO_IOC_RMA_SETUP, &r->st);
    r->nq = r->e1 ? MAP_FAILED : mmap(NULL, r->st.nq_bytes, PROT_READ, MAP_SHARED, r->fd, VELO_MMAP_NQ);
    r->ring = r->e ? MAP_FAILED : mmap(NULL, r->ep.ring_bytes, PROT_READ, MAP_SHARED, r->fd, VELO_MMAP_RING);
    r->cring = r->e ? MAP_FAILED : mmap(NULL, r->ep.ctl_ring_bytes, PROT_READ, MAP_SHARED, r->fd, VELO_MMAP_CTL_RING);
}
