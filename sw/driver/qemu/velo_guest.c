// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// Guest-side helper of the QEMU smoke test (sw/driver/qemu), linked statically into the busybox
// initramfs. Checks print "VELOTEST <prefix>.<name> PASS|FAIL <detail>" like guest_init.sh.
//
//   velo_guest poke <resourceN> <image.txt>
//       write every "0x<off> 0x<value>" word of the image into the BAR (sysfs resource file,
//       mmap), read them all back; exit 0 if all read back as written. Works only while no
//       driver holds the BAR.
//   velo_guest uapi <prefix> </dev/veloN> </sys/class/velo/veloN> <node_id> <irq 0|1> <window 0|1>
//       the character device against the fake NIC: INFO, EP_OPEN, the mappings, GRANT/REVOKE,
//       WAIT, poll, reclaim, close. Prints "VELOINFO vpid <v> ctl <c>" for the regs check.
//   velo_guest hold <prefix> </dev/veloN> <readyfile>
//       open an endpoint, map it, create readyfile, sleep in VELO_IOC_WAIT without timeout; the
//       test then removes the device: WAIT must return ENODEV and the mappings must be gone.
//   velo_guest rma <prefix> </dev/veloN> </sys/class/velo/veloN> <readyfile> <gofile>
//       the "rma" image: RMA_SETUP, REGISTER (refused under swiotlb=force), the MMU notifier's
//       events (mprotect, fork: ignored; MADV_DONTNEED, munmap: withdrawn), REPIN, DEREGISTER,
//       the VmPin charges; then, with a region registered, readyfile and WAIT until the device
//       is removed; after gofile appears: the region's pins are gone.
//   velo_guest rmastuck <prefix> </dev/veloN> </sys/class/velo/veloN> <readyfile> <gofile>
//       the "rmastuck" image: a region withdrawn by munmap never quiesces and stays pinned until
//       the device is removed.
//   velo_guest uffd <prefix> </dev/veloN> </sys/class/velo/veloN> <pci address>
//       the "rma" image: REGISTER of a userfaultfd range (the pinning does not wait: EFAULT), then
//       a REGISTER held in its argument access by userfaultfd while this program unbinds the
//       device: the unbind waits for it, REGISTER returns once the fault is answered, the region
//       is unpinned, later ioctls get ENODEV.
//   velo_guest regs <prefix> <resource0> <vpid> <ctl_vpid> <node_id>
//       after unbind: what the driver left in the register file (NODE_ID, ENABLE=0, the endpoint's
//       VPID_TABLE entries programmed then disabled, QUIESCE_VPID, the user page, IRQ disabled).
#define _GNU_SOURCE
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

static const char* g_prefix = "";
static int g_failed;

static void report(const char* name, int ok, const char* fmt, ...) {
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
struct bar {
    volatile uint32_t* p;
    size_t len;
};

static int map_bar(const char* path, struct bar* b) {
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

static uint32_t rd(const struct bar* b, uint32_t off) {
    return b->p[off / 4];
}

static int parse_u32(const char* s, uint32_t* v) {
    char* end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || end == s || *end || x > UINT32_MAX) return -1;
    *v = (uint32_t)x;
    return 0;
}

static int cmd_poke(const char* res, const char* image) {
    struct bar b;
    if (map_bar(res, &b)) return 1;
    FILE* f = fopen(image, "r");
    if (!f) {
        fprintf(stderr, "velo_guest: %s: %s\n", image, strerror(errno));
        return 1;
    }
    enum { MAXW = 4096 };
    static uint32_t off[MAXW], val[MAXW];
    unsigned n = 0;
    char a[32], v[32];
    while (fscanf(f, "%31s %31s", a, v) == 2) {
        if (n == MAXW || parse_u32(a, &off[n]) || parse_u32(v, &val[n]) || (off[n] & 3) || off[n] + 4 > b.len) {
            fprintf(stderr, "velo_guest: %s: bad line %u (%s %s) for a BAR of %zu bytes\n", image, n + 1, a, v, b.len);
            fclose(f);
            return 1;
        }
        n++;
    }
    fclose(f);
    for (unsigned i = 0; i < n; ++i) b.p[off[i] / 4] = val[i];
    unsigned bad = 0;
    for (unsigned i = 0; i < n; ++i) {
        uint32_t r = rd(&b, off[i]);
        if (r != val[i]) {
            if (bad < 5) fprintf(stderr, "velo_guest: 0x%x reads 0x%08x, wrote 0x%08x\n", off[i], r, val[i]);
            bad++;
        }
    }
    munmap((void*)b.p, b.len);
    return bad ? 1 : 0;
}

// ------------------------------------------------------------------ touching mappings
static sigjmp_buf g_jmp;
static volatile sig_atomic_t g_sig;

static void on_fault(int sig) {
    g_sig = sig;
    siglongjmp(g_jmp, 1);
}

// Read (write) 32 bits at p; returns 0, or the signal that stopped the access.
static int touch(volatile uint32_t* p, int write, uint32_t v, uint32_t* out) {
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

static const char* sig_name(int s) {
    return s == 0 ? "no signal" : s == SIGBUS ? "SIGBUS" : s == SIGSEGV ? "SIGSEGV" : "signal";
}

// ------------------------------------------------------------------ ioctl helpers
static int ioc(int fd, unsigned long cmd, void* arg) {
    return ioctl(fd, cmd, arg) ? errno : 0;
}

static int ep_open(int fd, int vpid, struct velo_uapi_ep_open* e) {
    memset(e, 0, sizeof *e);
    e->argsz = sizeof *e;
    e->vpid = vpid;
    return ioc(fd, VELO_IOC_EP_OPEN, e);
}

// Does /sys/class/velo/veloN/vpids list data vpid v (as "<v> <ctl> <pid> ...")?
static int vpids_lists(const char* sysdir, unsigned v, unsigned ctl, char* first, size_t firstlen) {
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

static int write_file(const char* path, const char* text) {
    int fd = open(path, O_WRONLY);
    if (fd < 0) return errno;
    ssize_t n = write(fd, text, strlen(text));
    int e = n < 0 ? errno : 0;
    close(fd);
    return e;
}

// The parent's side of a check run in a child (fork): the two results the child writes into the
// pipe before it exits (res[0] = -1 if it wrote none), then the child reaped. pid <= 0: nothing.
static void child_results(pid_t pid, int pfd[2], int res[2]) {
    if (pid <= 0) return;
    close(pfd[1]);
    if (read(pfd[0], res, 2 * sizeof res[0]) != (ssize_t)(2 * sizeof res[0])) res[0] = -1;
    close(pfd[0]);
    waitpid(pid, NULL, 0);
}

// ------------------------------------------------------------------ uapi
static int cmd_uapi(const char* dev, const char* sysdir, unsigned node_id, int want_irq, int want_window) {
    const unsigned vb = IMG_VPID_BITS, nb = IMG_NODE_BITS;
    int fd = open(dev, O_RDWR | O_CLOEXEC);
    report("open", fd >= 0, "%s: %s", dev, fd >= 0 ? "ok" : strerror(errno));
    if (fd < 0) return 1;

    // INFO, and the argsz/flags rules
    struct velo_uapi_info in;
    memset(&in, 0, sizeof in);
    in.argsz = sizeof in;
    int e = ioc(fd, VELO_IOC_INFO, &in);
    const unsigned want_flags = (want_irq ? VELO_INFO_F_IRQ : 0) | (want_window ? VELO_INFO_F_WC : 0);
    report("info",
           !e && in.uapi_version == VELO_UAPI_VERSION && in.spec_hash == VELO_SPEC_HASH &&
               in.design_version == VELO_SPEC_VERSION && in.node_id == node_id && in.node_bits == nb &&
               in.vpid_bits == vb && in.msg_max == VELO_MSG_MAX && in.num_vpids == (1u << vb) &&
               in.nports == IMG_PORTS && in.link_status == IMG_LINK_UP_MASK &&
               (in.out_flags & (VELO_INFO_F_IRQ | VELO_INFO_F_WC)) == want_flags,
           "%s uapi %u spec 0x%08x design 0x%08x node %u bits %u/%u msg_max %u vpids %u ports %u links 0x%x "
           "flags 0x%x (want 0x%x)",
           e ? strerror(e) : "ok", in.uapi_version, in.spec_hash, in.design_version, in.node_id, in.node_bits,
           in.vpid_bits, in.msg_max, in.num_vpids, in.nports, in.link_status, in.out_flags, want_flags);
    struct velo_uapi_info bad;
    memset(&bad, 0, sizeof bad);
    bad.argsz = 4;
    int e1 = ioc(fd, VELO_IOC_INFO, &bad);
    bad.argsz = sizeof bad;
    bad.flags = 0x80000000u;
    int e2 = ioc(fd, VELO_IOC_INFO, &bad);
    int e3 = ioc(fd, _IOWR(VELO_IOC_MAGIC, VELO_IOC_NR_COUNT, struct velo_uapi_info), &bad);
    report("info_bad", e1 == EINVAL && e2 == EINVAL && e3 == ENOTTY, "argsz 4: %s; unknown flag: %s; unknown ioctl: %s",
           strerror(e1), strerror(e2), strerror(e3));

    // the numbers (ABI 4): direction and size are checked; ABI 2/3 numbers get EPROTO
    bad.flags = 0;
    e1 = ioc(fd, VELO_IOC_INFO_V3, &bad);
    e2 = ioc(fd, _IOW(VELO_IOC_MAGIC, VELO_IOC_NR_INFO, struct velo_uapi_info), &bad);  // no READ
    e3 = ioc(fd, _IOWR('V', VELO_IOC_NR_INFO, struct velo_uapi_info), &bad);            // another type
    int e4 = ioc(fd, _IOC(_IOC_READ | _IOC_WRITE, VELO_IOC_MAGIC, VELO_IOC_NR_INFO, sizeof bad + 8), &bad);
    int e5 = ioc(fd, _IOWR(VELO_IOC_MAGIC, VELO_IOC_NR_REVOKE, struct velo_uapi_revoke), &bad);  // REVOKE is _IOW
    report("abi", e1 == EPROTO && e2 == ENOTTY && e3 == ENOTTY && e4 == EINVAL && e5 == ENOTTY,
           "ABI 3 INFO: %s (want EPROTO); _IOW INFO: %s; type 'V': %s; size %zu with argsz %zu: %s; _IOWR REVOKE: %s",
           strerror(e1), strerror(e2), strerror(e3), sizeof bad + 8, sizeof bad, strerror(e4), strerror(e5));

    // privilege is the caller's at each call: the same file, root, then after dropping to nobody
    {
        struct velo_uapi_job_del jd;
        memset(&jd, 0, sizeof jd);
        jd.argsz = sizeof jd;
        jd.flags = 1;  // invalid: root gets past the privilege check and stops here (EINVAL)
        e1 = ioc(fd, VELO_IOC_JOB_DEL, &jd);
        int pfd[2] = {-1, -1};
        int child_res[2] = {-1, -1};
        pid_t pid = pipe(pfd) ? -1 : fork();
        if (pid == 0) {
            close(pfd[0]);
            int r[2] = {-1, -1};
            if (!setgid(65534) && !setuid(65534)) {
                r[0] = ioc(fd, VELO_IOC_JOB_DEL, &jd);  // inherited descriptor, opened by root
                struct velo_uapi_info i2;
                memset(&i2, 0, sizeof i2);
                i2.argsz = sizeof i2;
                r[1] = ioc(fd, VELO_IOC_INFO, &i2);
            }
            if (write(pfd[1], r, sizeof r) != (ssize_t)sizeof r) _exit(1);
            _exit(0);
        }
        child_results(pid, pfd, child_res);
        report("priv", e1 == EINVAL && child_res[0] == EPERM && child_res[1] == 0,
               "root: %s (want EINVAL: past the privilege check); after setuid(nobody) on the same file: %s (want "
               "EPERM), INFO %s",
               strerror(e1), child_res[0] < 0 ? "no result" : strerror(child_res[0]),
               child_res[1] < 0 ? "no result" : strerror(child_res[1]));
    }

    // EP_OPEN: any vpid of the lower half, its control vpid, the default ring sizes
    struct velo_uapi_ep_open ep;
    e = ep_open(fd, -1, &ep);
    const unsigned v = ep.out_vpid, c = ep.out_ctl_vpid;
    report("ep_open",
           !e && v < VELO_CTL_VPID_BIT(vb) && c == VELO_CTL_VPID(v, vb) &&
               ep.out_log2_lines == VELO_RING_LOG2_DEFAULT && ep.out_ctl_log2_lines == VELO_CTL_RING_LOG2_DEFAULT &&
               ep.ring_bytes == ((uint64_t)VELO_LINE_BYTES << VELO_RING_LOG2_DEFAULT) &&
               ep.ctl_ring_bytes == ((uint64_t)VELO_LINE_BYTES << VELO_CTL_RING_LOG2_DEFAULT) &&
               ep.user_page_off + 4 <= 4096,
           "%s vpid %u ctl %u log2 %u/%u ring %llu/%llu user_page_off %u max_grants %u", e ? strerror(e) : "ok", v, c,
           ep.out_log2_lines, ep.out_ctl_log2_lines, (unsigned long long)ep.ring_bytes,
           (unsigned long long)ep.ctl_ring_bytes, ep.user_page_off, ep.max_grants);
    if (e) return 1;
    printf("VELOINFO vpid %u ctl %u\n", v, c);
    struct velo_uapi_ep_open ep2;
    e1 = ep_open(fd, -1, &ep2);  // a second endpoint on the same file
    int fd2 = open(dev, O_RDWR | O_CLOEXEC);
    e2 = fd2 < 0 ? errno : ep_open(fd2, (int)v, &ep2);  // the vpid another file holds
    e3 = fd2 < 0 ? errno : ep_open(fd2, (int)c, &ep2);  // a control vpid as data vpid
    report("ep_open_bad", e1 != 0 && e2 == EADDRINUSE && e3 == EINVAL,
           "again on the file: %s; vpid %u of another file: %s; control vpid %u: %s", strerror(e1), v, strerror(e2), c,
           strerror(e3));
    if (fd2 >= 0) close(fd2);

    // RMA ioctls: the fake register image has no RMA block, so every call is refused with
    // EOPNOTSUPP after its argument checks, and nothing RMA can be mapped
    {
        struct velo_uapi_rma_setup rs;
        memset(&rs, 0, sizeof rs);
        rs.argsz = sizeof rs;
        int r1 = ioc(fd, VELO_IOC_RMA_SETUP, &rs);
        static char buf[8192];
        struct velo_uapi_register rg;
        memset(&rg, 0, sizeof rg);
        rg.argsz = sizeof rg;
        rg.flags = VELO_REG_ACCESS_ALL;
        rg.addr = (uint64_t)(uintptr_t)buf;
        rg.len = sizeof buf;
        int r2 = ioc(fd, VELO_IOC_REGISTER, &rg);
        rg.flags = 0;
        int r3 = ioc(fd, VELO_IOC_REGISTER, &rg);
        rg.flags = VELO_REG_ACCESS_ALL;
        rg.argsz = 8;
        int r4 = ioc(fd, VELO_IOC_REGISTER, &rg);
        struct velo_uapi_deregister dr;
        memset(&dr, 0, sizeof dr);
        dr.argsz = sizeof dr;
        int r5 = ioc(fd, VELO_IOC_DEREGISTER, &dr);
        struct velo_uapi_repin rp;
        memset(&rp, 0, sizeof rp);
        rp.argsz = sizeof rp;
        rp.rsvd = 1;
        int r6 = ioc(fd, VELO_IOC_REPIN, &rp);
        void* cmd = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd, VELO_MMAP_RMA_CMD);
        int r7 = cmd == MAP_FAILED ? errno : 0;
        if (cmd != MAP_FAILED) munmap(cmd, 4096);
        report("rma_absent",
               r1 == EOPNOTSUPP && r2 == EOPNOTSUPP && r3 == EINVAL && r4 == EINVAL && r5 == EOPNOTSUPP &&
                   r6 == EINVAL && r7 == EINVAL,
               "RMA_SETUP: %s; REGISTER: %s; no access flags: %s; argsz 8: %s; DEREGISTER: %s; REPIN rsvd: %s; "
               "mmap command page: %s",
               strerror(r1), strerror(r2), strerror(r3), strerror(r4), strerror(r5), strerror(r6), strerror(r7));
    }

    char first[256];
    int listed = vpids_lists(sysdir, v, c, first, sizeof first);
    report("vpids", listed == 1, "header '%s', line '%u %u %d ...' %s", first, v, c, (int)getpid(),
           listed == 1 ? "listed" : "missing");

    // rings: read-only, of exactly their size, zeroed
    void* ring = mmap(NULL, ep.ring_bytes, PROT_READ, MAP_SHARED, fd, VELO_MMAP_RING);
    void* ctl_ring = mmap(NULL, ep.ctl_ring_bytes, PROT_READ, MAP_SHARED, fd, VELO_MMAP_CTL_RING);
    int zero = ring != MAP_FAILED && ctl_ring != MAP_FAILED;
    for (size_t i = 0; zero && i < ep.ring_bytes; ++i) zero = ((const uint8_t*)ring)[i] == 0;
    for (size_t i = 0; zero && i < ep.ctl_ring_bytes; ++i) zero = ((const uint8_t*)ctl_ring)[i] == 0;
    report("mmap_ring", zero, "data ring %s, control ring %s, %s", ring == MAP_FAILED ? "not mapped" : "mapped",
           ctl_ring == MAP_FAILED ? "not mapped" : "mapped", zero ? "zeroed" : "not zeroed");
    void* w = mmap(NULL, ep.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, VELO_MMAP_RING);
    e1 = w == MAP_FAILED ? errno : 0;
    void* s = mmap(NULL, ep.ring_bytes / 2, PROT_READ, MAP_SHARED, fd, VELO_MMAP_RING);
    e2 = s == MAP_FAILED ? errno : 0;
    void* o = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0x4000000000ull);
    e3 = o == MAP_FAILED ? errno : 0;
    report("mmap_bad", e1 == EACCES && e2 == EINVAL && e3 == EINVAL,
           "writable ring: %s; half a ring: %s; unknown offset: %s", strerror(e1), strerror(e2), strerror(e3));

    // the user page: the data vpid's page of BAR0 (in the fake NIC: RAM), MB_RP inside it
    volatile uint32_t* up = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, VELO_MMAP_USER_PAGE);
    uint32_t rp = 0xFFFFFFFFu, back = 0;
    int s1 = -1, s2 = -1, s3 = -1;
    if (up != MAP_FAILED) {
        volatile uint32_t* mbrp = up + ep.user_page_off / 4;
        s1 = touch(mbrp, 0, 0, &rp);
        s2 = touch(mbrp, 1, IMG_USER_MAGIC | v, NULL);
        s3 = touch(mbrp, 0, 0, &back);
        touch(mbrp, 1, 0, NULL);  // poll() below reads MB_RP from the NIC: leave it at 0
    }
    report("mmap_user", up != MAP_FAILED && !s1 && !s2 && !s3 && rp == 0 && back == (IMG_USER_MAGIC | v),
           "%s; MB_RP read %s 0x%08x (want 0), wrote 0x%08x, read back 0x%08x",
           up == MAP_FAILED ? strerror(errno) : "mapped", sig_name(s1), rp, IMG_USER_MAGIC | v, back);

    // GRANT: a send-window page, write-only, at the SEND_ADDR of (own vpid -> node 1, vpid 2)
    struct velo_uapi_grant g;
    memset(&g, 0, sizeof g);
    g.argsz = sizeof g;
    g.from = VELO_GRANT_FROM_DATA;
    g.dst_node = 1;
    g.dst_vpid = 2;
    e = ioc(fd, VELO_IOC_GRANT, &g);
    if (want_window) {
        const uint64_t want_off = (uint64_t)v << VELO_SEND_ADDR_SRC_VPID_SHIFT(vb, nb) |
                                  (uint64_t)g.dst_node << VELO_SEND_ADDR_DST_NODE_SHIFT(vb, nb) |
                                  (uint64_t)g.dst_vpid << VELO_SEND_ADDR_DST_VPID_SHIFT(vb, nb);
        report("grant", !e && g.window_off == want_off, "%s id %u window_off 0x%llx (want 0x%llx)",
               e ? strerror(e) : "ok", g.grant_id, (unsigned long long)g.window_off, (unsigned long long)want_off);
        struct velo_uapi_grant g2 = g;
        g2.dst_vpid = VELO_CTL_VPID(2, vb);  // a data page towards a control vpid
        e1 = ioc(fd, VELO_IOC_GRANT, &g2);
        g2 = g;
        g2.dst_node = 1u << nb;  // no such node
        e2 = ioc(fd, VELO_IOC_GRANT, &g2);
        report("grant_bad", e1 != 0 && e2 == EINVAL, "data page to a control vpid: %s; node %u: %s", strerror(e1),
               1u << nb, strerror(e2));
        const off_t woff = (off_t)(VELO_MMAP_WINDOW + (uint64_t)g.grant_id * 4096);
        void* rw = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, woff);
        e1 = rw == MAP_FAILED ? errno : 0;
        volatile uint32_t* win = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd, woff);
        // a write is what a send does; in this BAR2 the page is unassigned, the write is dropped
        int sw = win == MAP_FAILED ? -1 : touch(win, 1, 0x5E4D0000u, NULL);
        report("mmap_window", e1 == EACCES && win != MAP_FAILED && sw == 0,
               "readable window: %s; write-only window: %s, store: %s", strerror(e1),
               win == MAP_FAILED ? strerror(errno) : "mapped", sw < 0 ? "-" : sig_name(sw));
        struct velo_uapi_revoke rv;
        memset(&rv, 0, sizeof rv);
        rv.argsz = sizeof rv;
        rv.grant_id = g.grant_id;
        e = ioc(fd, VELO_IOC_REVOKE, &rv);
        int sr = win == MAP_FAILED ? -1 : touch(win, 1, 0x5E4D0001u, NULL);
        e1 = ioc(fd, VELO_IOC_REVOKE, &rv);
        report("revoke", !e && sr == SIGBUS && e1 == ENOENT, "revoke: %s; store after it: %s; again: %s",
               e ? strerror(e) : "ok", sr < 0 ? "-" : sig_name(sr), strerror(e1));
        if (win != MAP_FAILED) munmap((void*)win, 4096);
    } else {
        report("grant", e == ENXIO, "%s (want ENXIO: BAR2 cannot hold the window)", e ? strerror(e) : "granted");
    }

    // WAIT and poll on an empty ring: they time out (with an interrupt: armed in the NIC)
    struct velo_uapi_wait wt;
    memset(&wt, 0, sizeof wt);
    wt.argsz = sizeof wt;
    wt.flags = VELO_WAIT_DATA | VELO_WAIT_CTL;
    wt.timeout_ns = 20 * 1000 * 1000;
    e = ioc(fd, VELO_IOC_WAIT, &wt);
    wt.timeout_ns = 0;
    e1 = ioc(fd, VELO_IOC_WAIT, &wt);
    wt.flags = 0;
    e2 = ioc(fd, VELO_IOC_WAIT, &wt);
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    int pr = poll(&pf, 1, 20);
    report("wait", e == ETIMEDOUT && e1 == ETIMEDOUT && e2 == EINVAL && pr == 0,
           "20 ms: %s; check once: %s; no ring: %s; poll 20 ms: %d revents 0x%x", strerror(e), strerror(e1),
           strerror(e2), pr, pr > 0 ? pf.revents : 0);

    // reclaim (root): the endpoint is closed under the process, its BAR pages go away
    char path[512], num[32];
    snprintf(path, sizeof path, "%s/reclaim", sysdir);
    snprintf(num, sizeof num, "%u", v);
    e = write_file(path, num);
    e1 = write_file(path, num);
    listed = vpids_lists(sysdir, v, c, first, sizeof first);
    int su = up == MAP_FAILED ? -1 : touch(up + ep.user_page_off / 4, 0, 0, &rp);
    report("reclaim", !e && e1 == ENOENT && listed == 0 && su == SIGBUS,
           "reclaim %u: %s; again: %s; vpids lists it: %d; user page read: %s", v, e ? strerror(e) : "ok", strerror(e1),
           listed, su < 0 ? "-" : sig_name(su));

    // close: the file and its mappings go; a new endpoint can have the vpid again
    if (up != MAP_FAILED) munmap((void*)up, 4096);
    if (ring != MAP_FAILED) munmap(ring, ep.ring_bytes);
    if (ctl_ring != MAP_FAILED) munmap(ctl_ring, ep.ctl_ring_bytes);
    e = close(fd) ? errno : 0;
    listed = vpids_lists(sysdir, v, c, first, sizeof first);
    report("close", !e && listed == 0, "close: %s; listed after close: %d", e ? strerror(e) : "ok", listed);

    // the vpid is free again; the new endpoint's user page is the same BAR0 page, MB_RP reset.
    // The magic written here is what the regs check finds in BAR0 after the unbind.
    fd = open(dev, O_RDWR | O_CLOEXEC);
    e = fd < 0 ? errno : ep_open(fd, (int)v, &ep2);
    s1 = s2 = s3 = -1;
    rp = back = 0xFFFFFFFFu;
    up = e ? MAP_FAILED : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, VELO_MMAP_USER_PAGE);
    if (up != MAP_FAILED) {
        volatile uint32_t* mbrp = up + ep2.user_page_off / 4;
        s1 = touch(mbrp, 0, 0, &rp);
        s2 = touch(mbrp, 1, IMG_USER_MAGIC | v, NULL);
        s3 = touch(mbrp, 0, 0, &back);
        munmap((void*)up, 4096);
    }
    e1 = fd < 0 ? -1 : close(fd) ? errno : 0;
    report("reopen", !e && !s1 && !s2 && !s3 && rp == 0 && back == (IMG_USER_MAGIC | v) && !e1,
           "vpid %u again: %s; MB_RP %s 0x%08x (want 0); wrote 0x%08x, read 0x%08x; close: %s", v,
           e ? strerror(e) : "ok", s1 < 0 ? "-" : sig_name(s1), rp, IMG_USER_MAGIC | v, back, e1 ? strerror(e1) : "ok");
    return g_failed;
}

// Tell the shell we are ready (create the file `ready`), then sleep in WAIT without a timeout
// until the device goes away under us: the WAIT's errno (ENODEV wanted).
static int wait_gone(int fd, const char* ready) {
    int rf = open(ready, O_WRONLY | O_CREAT, 0644);
    if (rf >= 0) close(rf);
    struct velo_uapi_wait wt;
    memset(&wt, 0, sizeof wt);
    wt.argsz = sizeof wt;
    wt.flags = VELO_WAIT_DATA;
    wt.timeout_ns = VELO_WAIT_FOREVER;
    return ioc(fd, VELO_IOC_WAIT, &wt);
}

// ------------------------------------------------------------------ hold (hot removal)
static int cmd_hold(const char* dev, const char* ready) {
    int fd = open(dev, O_RDWR | O_CLOEXEC);
    struct velo_uapi_ep_open ep;
    int e = fd < 0 ? errno : ep_open(fd, -1, &ep);
    void* ring = e ? MAP_FAILED : mmap(NULL, ep.ring_bytes, PROT_READ, MAP_SHARED, fd, VELO_MMAP_RING);
    volatile uint32_t* up =
        e ? MAP_FAILED : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, VELO_MMAP_USER_PAGE);
    uint32_t x = 0;
    int s1 = ring == MAP_FAILED ? -1 : touch((volatile uint32_t*)ring, 0, 0, &x);
    int s2 = up == MAP_FAILED ? -1 : touch(up, 0, 0, &x);
    report("setup", !e && ring != MAP_FAILED && up != MAP_FAILED && !s1 && !s2,
           "endpoint %s vpid %u, ring %s, user page %s", e ? strerror(e) : "ok", e ? 0 : ep.out_vpid, sig_name(s1),
           sig_name(s2));
    if (e || ring == MAP_FAILED || up == MAP_FAILED) return 1;
    e = wait_gone(fd, ready);
    report("wait_woken", e == ENODEV, "WAIT without timeout returned %s (want ENODEV: the device is gone)",
           e ? strerror(e) : "ok");
    s1 = touch((volatile uint32_t*)ring, 0, 0, &x);
    s2 = touch(up, 0, 0, &x);
    struct velo_uapi_info in;
    memset(&in, 0, sizeof in);
    in.argsz = sizeof in;
    int e1 = ioc(fd, VELO_IOC_INFO, &in);
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    int pr = poll(&pf, 1, 0);
    report("gone", s1 == SIGBUS && s2 == SIGBUS && e1 == ENODEV && pr == 1 && (pf.revents & (POLLERR | POLLHUP)),
           "ring read: %s; user page read: %s; INFO: %s; poll: %d revents 0x%x", sig_name(s1), sig_name(s2),
           strerror(e1), pr, pf.revents);
    munmap(ring, ep.ring_bytes);
    munmap((void*)up, 4096);
    e = close(fd) ? errno : 0;
    report("close", !e, "close after removal: %s", e ? strerror(e) : "ok");
    return g_failed;
}

// ------------------------------------------------------------------ rma (the "rma" image)
// VmPin of this process in kB (mm->pinned_vm: registered pages, rings, notification queue)
static long vm_pin_kb(void) {
    FILE* f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmPin: %ld kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb;
}

// the pins of a region go to a worker after the NIC let go of them: wait for it (bounded)
static long vm_pin_settle(long want) {
    long kb = vm_pin_kb();
    for (int i = 0; i < 500 && kb != want; ++i) {
        usleep(10000);
        kb = vm_pin_kb();
    }
    return kb;
}

// the rma_notifier attribute: counts[0..8] by kind, [9] ignored, [10] withdrawn
#define MN_N 11
static const char* const mn_names[MN_N] = {"unmap",      "clear",   "protection_vma", "protection_page",
                                           "soft_dirty", "release", "migrate",        "exclusive",
                                           "other",      "ignored", "withdrawn"};
static int mn_read(const char* sysdir, long* c) {
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
static int mn_delta(const long* a, const long* b, const long* want, char* out, size_t len) {
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

static int rma_reg(int fd, void* addr, size_t len, struct velo_uapi_register* r) {
    memset(r, 0, sizeof *r);
    r->argsz = sizeof *r;
    r->flags = VELO_REG_ACCESS_ALL;
    r->addr = (uint64_t)(uintptr_t)addr;
    r->len = len;
    return ioc(fd, VELO_IOC_REGISTER, r);
}

static int rma_repin(int fd, uint64_t nla, uint32_t* repinned) {
    struct velo_uapi_repin p;
    memset(&p, 0, sizeof p);
    p.argsz = sizeof p;
    p.nla = nla;
    int e = ioc(fd, VELO_IOC_REPIN, &p);
    *repinned = e ? 99 : p.out_repinned;
    return e;
}

static int rma_dereg(int fd, uint64_t nla) {
    struct velo_uapi_deregister d;
    memset(&d, 0, sizeof d);
    d.argsz = sizeof d;
    d.nla = nla;
    return ioc(fd, VELO_IOC_DEREGISTER, &d);
}

// The guest was booted with swiotlb=force (every DMA mapping bounces).
static int swiotlb_forced(void) {
    char cmdline[1024] = "";
    FILE* cf = fopen("/proc/cmdline", "r");
    if (cf) {
        if (!fgets(cmdline, sizeof cmdline, cf)) cmdline[0] = 0;
        fclose(cf);
    }
    return strstr(cmdline, "swiotlb=force") != NULL;
}

// An endpoint with RMA set up and its notification queue and both rings mapped (the steps that
// failed leave their errno in e / e1 and MAP_FAILED mappings).
struct rma_ep {
    int fd, e, e1;
    struct velo_uapi_ep_open ep;
    struct velo_uapi_rma_setup st;
    void *nq, *ring, *cring;
};

static void rma_ep_open(const char* dev, struct rma_ep* r) {
    memset(r, 0, sizeof *r);
    r->fd = open(dev, O_RDWR | O_CLOEXEC);
    r->e = r->fd < 0 ? errno : ep_open(r->fd, -1, &r->ep);
    r->st.argsz = sizeof r->st;
    r->e1 = r->e ? r->e : ioc(r->fd, VELO_IOC_RMA_SETUP, &r->st);
    r->nq = r->e1 ? MAP_FAILED : mmap(NULL, r->st.nq_bytes, PROT_READ, MAP_SHARED, r->fd, VELO_MMAP_NQ);
    r->ring = r->e ? MAP_FAILED : mmap(NULL, r->ep.ring_bytes, PROT_READ, MAP_SHARED, r->fd, VELO_MMAP_RING);
    r->cring = r->e ? MAP_FAILED : mmap(NULL, r->ep.ctl_ring_bytes, PROT_READ, MAP_SHARED, r->fd, VELO_MMAP_CTL_RING);
}

// RMA registration in a real kernel against the RAM register file (QUIESCE_STATUS reads 0):
// pinning, the sg mapping (refused under swiotlb=force), the notifier's events, the charges,
// then removal with a region registered (readyfile / gofile as hold).
static int cmd_rma(const char* dev, const char* sysdir, const char* ready, const char* go) {
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
static int cmd_rmastuck(const char* dev, const char* sysdir, const char* ready, const char* go) {
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

static int cmd_uffd(const char* dev, const char* sysdir, const char* bdf) {
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

// ------------------------------------------------------------------ regs (after unbind)
static int cmd_regs(const char* res, unsigned v, unsigned c, unsigned node_id) {
    struct bar b;
    if (map_bar(res, &b)) {
        report("map", 0, "%s cannot be mapped (still claimed?)", res);
        return 1;
    }
    const uint32_t nid = rd(&b, VELO_REG_CTRL_NODE_ID), ctl = rd(&b, VELO_REG_CTRL_CONTROL);
    report("bringup", nid == node_id && VELO_FIELD_GET(VELO_REG_CTRL_CONTROL_ENABLE, ctl) == 0,
           "NODE_ID %u (want %u: set at bring-up), CONTROL 0x%08x (want ENABLE=0: disabled at remove)", nid, node_id,
           ctl);
    const uint32_t t = VELO_TBL_VPID_TABLE_BASE, st = VELO_TBL_VPID_TABLE_STRIDE;
    const uint32_t cfg = rd(&b, t + v * st + VELO_TBL_VPID_TABLE_MB_CFG);
    const uint32_t ccfg = rd(&b, t + c * st + VELO_TBL_VPID_TABLE_MB_CFG);
    const uint64_t base = rd(&b, t + v * st + VELO_TBL_VPID_TABLE_MB_BASE_LO) |
                          (uint64_t)rd(&b, t + v * st + VELO_TBL_VPID_TABLE_MB_BASE_HI) << 32;
    const uint64_t cbase = rd(&b, t + c * st + VELO_TBL_VPID_TABLE_MB_BASE_LO) |
                           (uint64_t)rd(&b, t + c * st + VELO_TBL_VPID_TABLE_MB_BASE_HI) << 32;
    const uint32_t qv = rd(&b, VELO_REG_CTRL_QUIESCE_VPID);
    report("mailbox",
           cfg == 0 && ccfg == 0 && base && cbase && base != cbase && !(base & 0xFFF) && !(cbase & 0xFFF) && qv == c,
           "vpid %u: MB_CFG 0x%x base 0x%llx; ctl %u: MB_CFG 0x%x base 0x%llx; QUIESCE_VPID %u (want %u)", v, cfg,
           (unsigned long long)base, c, ccfg, (unsigned long long)cbase, qv, c);
    const uint32_t mbrp = rd(&b, VELO_TBL_VPID_USER_BASE + v * VELO_TBL_VPID_USER_STRIDE + VELO_TBL_VPID_USER_MB_RP);
    report("user_page", mbrp == (IMG_USER_MAGIC | v), "MB_RP of vpid %u in BAR0: 0x%08x (want 0x%08x)", v, mbrp,
           IMG_USER_MAGIC | v);
#ifdef VELO_BLK_IRQ_BASE
    const uint32_t ic = rd(&b, VELO_REG_IRQ_CTRL);
    report("irq_off", VELO_FIELD_GET(VELO_REG_IRQ_CTRL_ENABLE, ic) == 0, "IRQ CTRL 0x%08x (want ENABLE=0)", ic);
#endif
    munmap((void*)b.p, b.len);
    return g_failed;
}

int main(int argc, char** argv) {
    uint32_t a, b, c, d, e;
    if (argc == 4 && !strcmp(argv[1], "poke")) return cmd_poke(argv[2], argv[3]);
    if (argc == 8 && !strcmp(argv[1], "uapi") && !parse_u32(argv[5], &a) && !parse_u32(argv[6], &b) &&
        !parse_u32(argv[7], &c)) {
        g_prefix = argv[2];
        return cmd_uapi(argv[3], argv[4], a, b != 0, c != 0);
    }
    if (argc == 5 && !strcmp(argv[1], "hold")) {
        g_prefix = argv[2];
        return cmd_hold(argv[3], argv[4]);
    }
    if (argc == 7 && !strcmp(argv[1], "rmastuck")) {
        g_prefix = argv[2];
        return cmd_rmastuck(argv[3], argv[4], argv[5], argv[6]);
    }
    if (argc == 7 && !strcmp(argv[1], "rma")) {
        g_prefix = argv[2];
        return cmd_rma(argv[3], argv[4], argv[5], argv[6]);
    }
    if (argc == 6 && !strcmp(argv[1], "uffd")) {
        g_prefix = argv[2];
        return cmd_uffd(argv[3], argv[4], argv[5]);
    }
    if (argc == 7 && !strcmp(argv[1], "regs") && !parse_u32(argv[4], &d) && !parse_u32(argv[5], &e) &&
        !parse_u32(argv[6], &a)) {
        g_prefix = argv[2];
        return cmd_regs(argv[3], d, e, a);
    }
    fprintf(stderr,
            "usage: velo_guest poke <resourceN> <image.txt>\n"
            "       velo_guest uapi <prefix> </dev/veloN> </sys/class/velo/veloN> <node_id> <irq> <window>\n"
            "       velo_guest hold <prefix> </dev/veloN> <readyfile>\n"
            "       velo_guest regs <prefix> <resource0> <vpid> <ctl_vpid> <node_id>\n"
            "       velo_guest rma <prefix> </dev/veloN> </sys/class/velo/veloN> <readyfile> <gofile>\n"
            "       velo_guest rmastuck <prefix> </dev/veloN> </sys/class/velo/veloN> <readyfile> <gofile>\n"
            "       velo_guest uffd <prefix> </dev/veloN> </sys/class/velo/veloN> <pci address>\n");
    return 2;
}
