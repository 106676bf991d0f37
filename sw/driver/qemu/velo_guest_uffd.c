// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// QEMU guest program: hot removal with a REGISTER in flight (uffd).
#define _GNU_SOURCE
#include "velo_guest.h"

// ------------------------------------------------------------------ uffd (REGISTER in flight)
// A REGISTER held inside the ioctl by userfaultfd while the device is unbound under it.
// Debian 6.1's pin_user_pages_fast(FOLL_LONGTERM) takes the mmap lock and faults without
// FAULT_FLAG_ALLOW_RETRY, and handle_userfault answers such a fault with SIGBUS at once: the
// pinning itself cannot be held (REGISTER of a userfaultfd-missing buffer fails with EFAULT and
// the handler never sees the fault). What can be held is the ioctl's own argument access (a
// fault from copy_from_user/copy_to_user may retry, so it waits for the handler), inside the
// driver's SRCU read section: the copy-out, after the region is pinned, mapped and VALID in the
// NIC (write-protect on the argument page), or, under swiotlb=force where REGISTER never gets
// that far, the copy-in (the argument page missing).
// A thread's job: REGISTER (arg) on fd, result in err; or, with touch set, a user-space read of
// *touch, the byte read in seen. done once it returned.
struct uffd_job {
    int fd;
    struct velo_uapi_register* arg;
    const volatile uint8_t* touch;
    uint8_t seen;
    atomic_int done;
    int err;
};

static void* uffd_thread(void* p) {
    struct uffd_job* j = p;
    if (j->touch)
        j->seen = *j->touch;
    else
        j->err = ioc(j->fd, VELO_IOC_REGISTER, j->arg);
    atomic_store(&j->done, 1);
    return NULL;
}

// the next page fault message of the userfaultfd: 1, or 0 once the thread finished (bounded)
static int uffd_next(int uffd, const struct uffd_job* j, struct uffd_msg* m) {
    for (int i = 0; i < 1000; ++i) {
        struct pollfd pf = {.fd = uffd, .events = POLLIN};
        if (poll(&pf, 1, 10) == 1 && read(uffd, m, sizeof *m) == (ssize_t)sizeof *m)
            return m->event == UFFD_EVENT_PAGEFAULT;
        if (atomic_load(&j->done)) return 0;
    }
    return 0;
}

// join the thread once it is done (bounded); -1: still in the kernel (the shell's killer ends us)
static int uffd_join(pthread_t t, struct uffd_job* j) {
    for (int i = 0; i < 1000 && !atomic_load(&j->done); ++i) usleep(10000);
    if (!atomic_load(&j->done)) return -1;
    pthread_join(t, NULL);
    return 0;
}

static int uffd_register(int uffd, void* addr, size_t len, uint64_t mode, uint64_t* ioctls) {
    struct uffdio_register rg = {.range = {.start = (uintptr_t)addr, .len = len}, .mode = mode};
    int e = ioctl(uffd, UFFDIO_REGISTER, &rg) ? errno : 0;
    *ioctls = e ? 0 : rg.ioctls;
    return e;
}

static int uffd_wp(int uffd, void* addr, size_t len, int on) {
    struct uffdio_writeprotect wp = {.range = {.start = (uintptr_t)addr, .len = len},
                                     .mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0};
    return ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) ? errno : 0;
}

static int uffd_copy(int uffd, uint64_t dst, const void* src) {
    struct uffdio_copy c = {.dst = dst & ~4095ull, .src = (uintptr_t)src, .len = 4096};
    return ioctl(uffd, UFFDIO_COPY, &c) ? errno : 0;
}

// /proc/<pid>/stack names both functions
static int stack_has(pid_t pid, const char* a, const char* b) {
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stack", (int)pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    return strstr(buf, a) && strstr(buf, b);
}

int cmd_uffd(const char* dev, const char* sysdir, const char* bdf) {
    const int bounce = swiotlb_forced();
    const long pin0 = vm_pin_kb();
    struct rma_ep r;
    rma_ep_open(dev, &r);
    int fd = r.fd, e = r.e, e1 = r.e1;
    struct velo_uapi_ep_open ep = r.ep;
    struct velo_uapi_rma_setup st = r.st;
    void *nq = r.nq, *ring = r.ring, *cring = r.cring;
    int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    struct uffdio_api api = {.api = UFFD_API};
    int e2 = uffd < 0 ? errno : ioctl(uffd, UFFDIO_API, &api) ? errno : 0;
    const size_t n1 = 4 * 4096, n2 = 16 * 4096;
    uint8_t* b1 = mmap(NULL, n1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t* b2 = mmap(NULL, n2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t* ap = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    const int ok = !e && !e1 && !e2 && nq != MAP_FAILED && ring != MAP_FAILED && cring != MAP_FAILED &&
                   b1 != MAP_FAILED && b2 != MAP_FAILED && ap != MAP_FAILED;
    report("setup", ok, "EP_OPEN %s, RMA_SETUP %s, userfaultfd %s (API 0x%llx)", e ? strerror(e) : "ok",
           e1 ? strerror(e1) : "ok", e2 ? strerror(e2) : "ok", (unsigned long long)api.api);
    if (!ok) return 1;
    const long rings = (long)((ep.ring_bytes + ep.ctl_ring_bytes + st.nq_bytes) >> 10);
    static uint8_t page[4096];
    struct uffd_msg m;
    pthread_t t;

    // 1. The pinning does not wait for userfaultfd: REGISTER of a missing range fails with EFAULT
    // and the handler sees no fault. A user-space read of the range does reach the handler
    // (answered with UFFDIO_COPY of a pattern), and once populated the range registers.
    uint64_t ioctls;
    e = uffd_register(uffd, b1, n1, UFFDIO_REGISTER_MODE_MISSING, &ioctls);
    struct velo_uapi_register r1;
    memset(&r1, 0, sizeof r1);
    r1.argsz = sizeof r1;
    r1.flags = VELO_REG_ACCESS_ALL;
    r1.addr = (uintptr_t)b1;
    r1.len = n1;
    struct uffd_job j1 = {.fd = fd, .arg = &r1};
    int faults = 0;
    if (e || pthread_create(&t, NULL, uffd_thread, &j1)) return 1;
    memset(page, 0, sizeof page);
    while (uffd_next(uffd, &j1, &m)) {  // a kernel whose pinning waits: answer, or REGISTER hangs
        ++faults;
        uffd_copy(uffd, m.arg.pagefault.address, page);
    }
    if (uffd_join(t, &j1)) {
        report("gup", 0, "REGISTER of a userfaultfd range never returned");
        return 1;
    }
    long kb = vm_pin_kb();
    struct uffd_job j2 = {.touch = b1 + 4096 + 5};
    int faults2 = 0, ec = -1;
    uint64_t fa = 0;
    if (pthread_create(&t, NULL, uffd_thread, &j2)) return 1;
    memset(page, 0x6e, sizeof page);
    while (uffd_next(uffd, &j2, &m)) {
        ++faults2;
        fa = m.arg.pagefault.address;
        ec = uffd_copy(uffd, fa, page);
    }
    if (uffd_join(t, &j2)) {
        report("gup", 0, "a read of a userfaultfd page was never answered");
        return 1;
    }
    // the range out of the userfaultfd, every page populated: REGISTER pins it (refused under
    // swiotlb=force)
    struct uffdio_range ur = {.start = (uintptr_t)b1, .len = n1};
    const int eu = ioctl(uffd, UFFDIO_UNREGISTER, &ur) ? errno : 0;
    for (size_t i = 0; !eu && i < n1; i += 4096) (void)*(volatile uint8_t*)(b1 + i);
    int e3 = ioc(fd, VELO_IOC_REGISTER, &r1);
    long kb2 = vm_pin_kb();
    int e4 = e3 ? 0 : rma_dereg(fd, r1.nla);
    long kb3 = vm_pin_settle(pin0 + rings);
    report("gup",
           (ioctls & (1ull << _UFFDIO_COPY)) && j1.err == EFAULT && faults == 0 && kb == pin0 + rings && faults2 == 1 &&
               fa == (uintptr_t)(b1 + 4096) && !ec && j2.seen == 0x6e && !eu &&
               (bounce ? e3 == EOPNOTSUPP && kb2 == pin0 + rings : !e3 && kb2 == pin0 + rings + 16) && !e4 &&
               kb3 == pin0 + rings,
           "REGISTER of 4 missing pages of a userfaultfd range: %s (want EFAULT: FOLL_LONGTERM pinning faults "
           "without FAULT_FLAG_ALLOW_RETRY, handle_userfault answers SIGBUS), faults seen %d (want 0), VmPin + %ld "
           "kB (want %ld); a user read: %d fault at +0x%llx, COPY %s, read 0x%02x (want 0x6e); populated: REGISTER %s "
           "(VmPin + %ld kB), DEREGISTER %s, VmPin + %ld kB",
           strerror(j1.err), faults, kb - pin0, rings, faults2, (unsigned long long)(fa - (uintptr_t)b1),
           ec ? strerror(ec) : "ok", j2.seen, e3 ? strerror(e3) : "ok", kb2 - pin0,
           e3   ? "-"
           : e4 ? strerror(e4)
                : "ok",
           kb3 - pin0);

    // 2. REGISTER held in the argument access while the device is unbound. The argument page is
    // write-protected (copy-out held: the region is pinned and VALID) or missing (copy-in held).
    struct velo_uapi_register r2;
    memset(&r2, 0, sizeof r2);
    r2.argsz = sizeof r2;
    r2.flags = VELO_REG_ACCESS_ALL;
    r2.addr = (uintptr_t)b2;
    r2.len = n2;
    memset(b2, 0x77, n2);
    struct velo_uapi_register* ua = (struct velo_uapi_register*)ap;
    if (bounce) {
        e = uffd_register(uffd, ap, 4096, UFFDIO_REGISTER_MODE_MISSING, &ioctls);
    } else {
        memcpy(ap, &r2, sizeof r2);
        e = uffd_register(uffd, ap, 4096, UFFDIO_REGISTER_MODE_WP, &ioctls);
        e = e ? e : uffd_wp(uffd, ap, 4096, 1);
    }
    const long before = vm_pin_kb();
    struct uffd_job j3 = {.fd = fd, .arg = ua};
    if (e || pthread_create(&t, NULL, uffd_thread, &j3)) {
        report("held", 0, "userfaultfd on the argument page: %s", strerror(e));
        return 1;
    }
    int held = uffd_next(uffd, &j3, &m);
    const uint64_t want_flags = bounce ? 0 : UFFD_PAGEFAULT_FLAG_WRITE | UFFD_PAGEFAULT_FLAG_WP;
    kb = vm_pin_kb();
    report("held",
           held && m.arg.pagefault.address == (uintptr_t)ap && m.arg.pagefault.flags == want_flags &&
               !atomic_load(&j3.done) && kb - before == (bounce ? 0 : 64),
           "REGISTER %s: fault at %s, flags 0x%llx (want 0x%llx), VmPin + %ld kB while held (want %d)",
           bounce ? "held in the copy-in (argument page missing)"
                  : "held in the copy-out (argument page write-protected), region pinned",
           held ? (m.arg.pagefault.address == (uintptr_t)ap ? "the argument" : "elsewhere") : "none",
           held ? (unsigned long long)m.arg.pagefault.flags : 0ull, (unsigned long long)want_flags, kb - before,
           bounce ? 0 : 64);
    if (!held) return 1;

    // the unbind, from another process: remove starts (the class device goes) and then waits in
    // synchronize_srcu for the held ioctl; it cannot return while the fault is held
    pid_t ub = fork();
    if (ub == 0) _exit(write_file("/sys/bus/pci/drivers/velo/unbind", bdf));
    int gone = 0, fence = 0;
    for (int i = 0; i < 1000 && ub > 0 && !fence; ++i) {
        gone = gone || access(sysdir, F_OK) != 0;
        fence = gone && stack_has(ub, "synchronize_srcu", "velo_remove");
        if (!fence) usleep(10000);
    }
    int ws = 0;
    pid_t w = ub > 0 ? waitpid(ub, &ws, WNOHANG) : -1;
    report("fence", fence && w == 0 && !atomic_load(&j3.done),
           "unbind: class device %s, the unbind %s in synchronize_srcu under velo_remove; unbind %s, REGISTER %s "
           "(want both still in the kernel)",
           gone ? "gone" : "still there", fence ? "waits" : "does not wait", w == 0 ? "running" : "returned",
           atomic_load(&j3.done) ? "returned" : "held");

    // answer the fault: REGISTER returns, then the unbind completes
    if (bounce) {
        memset(page, 0, sizeof page);
        memcpy(page, &r2, sizeof r2);
        e = uffd_copy(uffd, (uintptr_t)ap, page);
    } else {
        e = uffd_wp(uffd, ap, 4096, 0);
    }
    const int joined = !uffd_join(t, &j3);
    for (int i = 0; i < 1000 && w == 0; ++i) {
        w = waitpid(ub, &ws, WNOHANG);
        if (w == 0) usleep(10000);
    }
    const int ubst = w == ub && WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    kb = vm_pin_settle(before);
    report(
        "released",
        !e && joined && (bounce ? j3.err == ENODEV : !j3.err && ua->nla && ua->len == n2) && ubst == 0 && kb == before,
        "%s: %s; REGISTER %s (want %s), unbind %s; VmPin + %ld kB after the remove (want 0: the region unpinned)",
        bounce ? "UFFDIO_COPY of the argument" : "write-protection cleared", e ? strerror(e) : "ok",
        !joined  ? "never returned"
        : j3.err ? strerror(j3.err)
                 : "ok",
        bounce ? "ENODEV: the device was gone when it read its argument" : "success: it finished before the fence",
        ubst < 0 ? "never returned"
        : ubst   ? strerror(ubst)
                 : "ok",
        kb - before);

    // the file is dead: every later ioctl gets ENODEV; close releases the rest
    struct velo_uapi_info in;
    memset(&in, 0, sizeof in);
    in.argsz = sizeof in;
    e = ioc(fd, VELO_IOC_INFO, &in);
    e1 = bounce ? ENODEV : rma_dereg(fd, ua->nla);
    memset(&r1, 0, sizeof r1);
    r1.argsz = sizeof r1;
    r1.flags = VELO_REG_ACCESS_ALL;
    r1.addr = (uintptr_t)b1;
    r1.len = n1;
    e2 = ioc(fd, VELO_IOC_REGISTER, &r1);
    munmap(nq, st.nq_bytes);
    munmap(ring, ep.ring_bytes);
    munmap(cring, ep.ctl_ring_bytes);
    e3 = close(fd) ? errno : 0;
    kb = vm_pin_kb();
    report("after", e == ENODEV && e1 == ENODEV && e2 == ENODEV && !e3 && kb == pin0,
           "INFO %s, DEREGISTER %s, REGISTER %s (want ENODEV); close %s; VmPin + %ld kB (want 0)", strerror(e),
           strerror(e1), strerror(e2), e3 ? strerror(e3) : "ok", kb - pin0);
    close(uffd);
    return g_failed;
}
