// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// QEMU guest program: RMA registration (rma) and a region that never quiesces (rmastuck).
#define _GNU_SOURCE
#include "velo_guest.h"

// RMA registration in a real kernel against the RAM register file (QUIESCE_STATUS reads 0):
// pinning, the sg mapping (refused under swiotlb=force), the notifier's events, the charges,
// then removal with a region registered (readyfile / gofile as hold).
int cmd_rma(const char* dev, const char* sysdir, const char* ready, const char* go) {
    const int bounce = swiotlb_forced();
    const long pin0 = vm_pin_kb();
    struct rma_ep r;
    rma_ep_open(dev, &r);
    int fd = r.fd, e = r.e, e1 = r.e1;
    struct velo_uapi_ep_open ep = r.ep;
    struct velo_uapi_rma_setup st = r.st;
    void *nq = r.nq, *ring = r.ring, *cring = r.cring;
    report("setup",
           !e && !e1 && nq != MAP_FAILED && ring != MAP_FAILED && cring != MAP_FAILED &&
               st.region_bits == IMG_RMA_REGION_BITS && st.pte_bits == IMG_RMA_PTE_BITS && st.mtu == IMG_RMA_MTU,
           "EP_OPEN %s, RMA_SETUP %s (regions 2^%u, ptes 2^%u, mtu %u), NQ %s", e ? strerror(e) : "ok",
           e1 ? strerror(e1) : "ok", st.region_bits, st.pte_bits, st.mtu, nq == MAP_FAILED ? "not mapped" : "mapped");
    if (e || e1 || nq == MAP_FAILED || ring == MAP_FAILED || cring == MAP_FAILED) return 1;
    // rings and the queue are charged to this process (pinned_vm, shown as VmPin)
    const long rings = (long)((ep.ring_bytes + ep.ctl_ring_bytes + st.nq_bytes) >> 10);
    long kb = vm_pin_kb();
    report("charge", kb - pin0 == rings, "VmPin %ld kB, %ld before (want + %ld: rings %llu + %llu, queue %llu bytes)",
           kb, pin0, rings, (unsigned long long)ep.ring_bytes, (unsigned long long)ep.ctl_ring_bytes,
           (unsigned long long)st.nq_bytes);

    // without CAP_IPC_LOCK the rings count against RLIMIT_MEMLOCK: a child that dropped to
    // nobody, on a descriptor root opened, with 64 KiB allowed, then 1 MiB
    {
        int fd2 = open(dev, O_RDWR | O_CLOEXEC);
        int pfd[2] = {-1, -1}, res[2] = {-1, -1};
        pid_t pid = fd2 < 0 || pipe(pfd) ? -1 : fork();
        if (pid == 0) {
            close(pfd[0]);
            int r[2] = {-1, -1};
            struct rlimit rl = {64 << 10, 1 << 20};
            struct velo_uapi_ep_open o;
            if (!setrlimit(RLIMIT_MEMLOCK, &rl) && !setgid(65534) && !setuid(65534)) {
                r[0] = ep_open(fd2, -1, &o);
                rl.rlim_cur = 1 << 20;
                r[1] = setrlimit(RLIMIT_MEMLOCK, &rl) ? errno : ep_open(fd2, -1, &o);
            }
            if (write(pfd[1], r, sizeof r) != (ssize_t)sizeof r) _exit(1);
            _exit(0);
        }
        child_results(pid, pfd, res);
        if (fd2 >= 0) close(fd2);
        report("rlimit", res[0] == ENOMEM && res[1] == 0,
               "unprivileged EP_OPEN (192 KiB of rings) with RLIMIT_MEMLOCK 64 KiB: %s (want ENOMEM); with 1 MiB: %s",
               res[0] < 0 ? "no result" : strerror(res[0]), res[1] < 0 ? "no result" : strerror(res[1]));
    }

    const size_t n1 = 16 * 4096, n2 = 4 * 4096;
    uint8_t* b1 = mmap(NULL, n1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t* b2 = mmap(NULL, n2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b1 == MAP_FAILED || b2 == MAP_FAILED) return 1;
    memset(b1, 0x5a, n1);
    memset(b2, 0xa5, n2);
    struct velo_uapi_register r1, r2, r3;
    memset(&r3, 0, sizeof r3);
    long m0[MN_N], m1[MN_N];
    char d[256];
    if (bounce) {
        e = rma_reg(fd, b1, n1, &r1);
        kb = vm_pin_kb();
        report("bounce", e == EOPNOTSUPP && kb - pin0 == rings,
               "swiotlb=force: REGISTER %s (want EOPNOTSUPP: the mapping would bounce); VmPin %ld kB (want %ld: "
               "nothing kept)",
               strerror(e), kb - pin0, rings);
    } else {
        e = rma_reg(fd, b1, n1, &r1);
        kb = vm_pin_kb();
        report("register", !e && kb - pin0 == rings + 64,
               "REGISTER 16 pages: %s, nla 0x%llx; VmPin + %ld kB (want %ld)", e ? strerror(e) : "ok",
               (unsigned long long)r1.nla, kb - pin0, rings + 64);
        // protection changes keep the same pages: counted, ignored, the region stays valid
        uint32_t rp = 99;
        int ok = !mn_read(sysdir, m0);
        int em = mprotect(b1, n1, PROT_READ) || mprotect(b1, n1, PROT_READ | PROT_WRITE) ? errno : 0;
        pid_t pid = fork();
        if (pid == 0) _exit(0);
        if (pid > 0) waitpid(pid, NULL, 0);
        e1 = rma_repin(fd, r1.nla, &rp);
        ok = ok && !mn_read(sysdir, m1);
        const long want_prot[MN_N] = {0, 0, 2, 1, 0, 0, 0, 0, 0, 3, 0};
        report("protection", ok && !em && pid > 0 && !e1 && rp == 0 && mn_delta(m0, m1, want_prot, d, sizeof d),
               "mprotect twice and fork: %s; REPIN %s repinned %u (want 0: still valid)", d, e1 ? strerror(e1) : "ok",
               rp);
        // MADV_DONTNEED clears the pages: withdrawn, REPIN pins the new ones
        ok = !mn_read(sysdir, m0);
        em = madvise(b1, n1, MADV_DONTNEED) ? errno : 0;
        ok = ok && !mn_read(sysdir, m1);
        const long want_clear[MN_N] = {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        const int delta_ok = mn_delta(m0, m1, want_clear, d, sizeof d);
        kb = vm_pin_settle(pin0 + rings);
        e1 = rma_repin(fd, r1.nla, &rp);
        long kb2 = vm_pin_kb();
        report("clear", ok && !em && delta_ok && kb == pin0 + rings && !e1 && rp == 1 && kb2 == pin0 + rings + 64,
               "MADV_DONTNEED: %s; VmPin + %ld kB once unpinned (want %ld); REPIN %s repinned %u, VmPin + %ld kB", d,
               kb - pin0, rings, e1 ? strerror(e1) : "ok", rp, kb2 - pin0);
        // munmap: withdrawn; REPIN finds nothing mapped
        e = rma_reg(fd, b2, n2, &r2);
        ok = !e && !mn_read(sysdir, m0);
        em = munmap(b2, n2) ? errno : 0;
        ok = ok && !mn_read(sysdir, m1);
        const long want_unmap[MN_N] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        const int unmap_ok = mn_delta(m0, m1, want_unmap, d, sizeof d);
        e1 = rma_repin(fd, r2.nla, &rp);
        int e2 = rma_dereg(fd, r2.nla);
        report("unmap", ok && !em && unmap_ok && e1 == EFAULT && !e2,
               "REGISTER %s; munmap: %s; REPIN %s (want EFAULT); DEREGISTER %s", e ? strerror(e) : "ok", d,
               strerror(e1), e2 ? strerror(e2) : "ok");
        e = rma_dereg(fd, r1.nla);
        e1 = rma_dereg(fd, r1.nla);
        kb = vm_pin_settle(pin0 + rings);
        report("deregister", !e && e1 == ENOENT && kb == pin0 + rings,
               "DEREGISTER %s, again %s (want ENOENT); VmPin + %ld kB (want %ld)", e ? strerror(e) : "ok", strerror(e1),
               kb - pin0, rings);
    }
    // removal with a region registered (none under swiotlb=force): its pins go at remove
    e = bounce ? 0 : rma_reg(fd, b1, n1, &r3);
    const long held = vm_pin_kb() - pin0;
    e1 = wait_gone(fd, ready);
    for (int i = 0; i < 3000 && access(go, F_OK); ++i) usleep(10000);
    kb = vm_pin_kb();
    int e2 = rma_dereg(fd, r3.nla);
    report("removed", !e && held == rings + (bounce ? 0 : 64) && e1 == ENODEV && kb == pin0 + rings && e2 == ENODEV,
           "REGISTER %s, VmPin + %ld kB; WAIT %s (want ENODEV); after remove VmPin + %ld kB (want %ld: region "
           "unpinned, the mapped rings still charged); DEREGISTER %s",
           e ? strerror(e) : "ok", held, strerror(e1), kb - pin0, rings, strerror(e2));
    munmap(nq, st.nq_bytes);
    munmap(ring, ep.ring_bytes);
    munmap(cring, ep.ctl_ring_bytes);
    e = close(fd) ? errno : 0;
    kb = vm_pin_kb();
    report("close", !e && kb == pin0, "close: %s; VmPin + %ld kB (want 0)", e ? strerror(e) : "ok", kb - pin0);
    return g_failed;
}

// The "rmastuck" image: RMA.QUIESCE_STATUS says BUSY for ever. A region the notifier withdraws
// never quiesces: it stays pinned (STUCK), REPIN fails with EIO, DEREGISTER with ETIMEDOUT, and
// only the device's removal, once bus mastering is off, unpins it.
int cmd_rmastuck(const char* dev, const char* sysdir, const char* ready, const char* go) {
    const long pin0 = vm_pin_kb();
    int fd = open(dev, O_RDWR | O_CLOEXEC);
    struct velo_uapi_ep_open ep;
    int e = fd < 0 ? errno : ep_open(fd, -1, &ep);
    struct velo_uapi_rma_setup st;
    memset(&st, 0, sizeof st);
    st.argsz = sizeof st;
    int e1 = e ? e : ioc(fd, VELO_IOC_RMA_SETUP, &st);
    const size_t n1 = 16 * 4096;
    uint8_t* b1 = mmap(NULL, n1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (e || e1 || b1 == MAP_FAILED) {
        report("setup", 0, "EP_OPEN %s, RMA_SETUP %s", strerror(e), strerror(e1));
        return 1;
    }
    memset(b1, 0x3c, n1);
    const long rings = (long)((ep.ring_bytes + ep.ctl_ring_bytes + st.nq_bytes) >> 10);
    struct velo_uapi_register r1;
    e = rma_reg(fd, b1, n1, &r1);
    long kb = vm_pin_kb();
    report("setup", !e && kb - pin0 == rings + 64, "REGISTER 16 pages: %s; VmPin + %ld kB (want %ld)",
           e ? strerror(e) : "ok", kb - pin0, rings + 64);
    long m0[MN_N], m1[MN_N];
    char d[256];
    int ok = !mn_read(sysdir, m0);
    int em = munmap(b1, n1) ? errno : 0;
    ok = ok && !mn_read(sysdir, m1);
    const long want_unmap[MN_N] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    ok = ok && mn_delta(m0, m1, want_unmap, d, sizeof d);
    kb = vm_pin_kb();
    uint32_t rp = 99;
    e = rma_repin(fd, r1.nla, &rp);
    e1 = rma_dereg(fd, r1.nla);
    int e2 = rma_dereg(fd, r1.nla);
    long kb2 = vm_pin_kb();
    report(
        "stuck",
        ok && !em && kb - pin0 == rings + 64 && e == EIO && e1 == ETIMEDOUT && e2 == ENOENT && kb2 - pin0 == rings + 64,
        "munmap: %s; VmPin + %ld kB (want %ld: never quiesced, pages stay pinned); REPIN %s (want EIO); "
        "DEREGISTER %s (want ETIMEDOUT), again %s (want ENOENT); VmPin + %ld kB",
        d, kb - pin0, rings + 64, strerror(e), strerror(e1), strerror(e2), kb2 - pin0);
    e = wait_gone(fd, ready);
    for (int i = 0; i < 3000 && access(go, F_OK); ++i) usleep(10000);
    kb = vm_pin_kb();
    report("removed", e == ENODEV && kb == pin0,
           "WAIT %s (want ENODEV); after remove VmPin + %ld kB (want 0: the stuck region unpinned once bus "
           "mastering was off, nothing mapped)",
           strerror(e), kb - pin0);
    e = close(fd) ? errno : 0;
    report("close", !e, "close: %s", e ? strerror(e) : "ok");
    return g_failed;
}
