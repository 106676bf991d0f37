// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// QEMU guest program: the character device against the fake NIC (uapi) and hot removal (hold).
#define _GNU_SOURCE
#include "velo_guest.h"

// ------------------------------------------------------------------ uapi
int cmd_uapi(const char* dev, const char* sysdir, unsigned node_id, int want_irq, int want_window) {
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
        // REGISTER of ABI 4 (40 bytes: no scope) and ABI 5 (48 bytes: one scope box, no lists):
        // EPROTO before anything else, whatever the device
        rg.argsz = 40;
        int o4 = ioc(fd, _IOC(_IOC_READ | _IOC_WRITE, VELO_IOC_MAGIC, VELO_IOC_NR_REGISTER, 40), &rg);
        rg.argsz = 48;
        int o5 = ioc(fd, _IOC(_IOC_READ | _IOC_WRITE, VELO_IOC_MAGIC, VELO_IOC_NR_REGISTER, 48), &rg);
        report("abi_register", o4 == EPROTO && o5 == EPROTO,
               "ABI-4 REGISTER (40 bytes): %s; ABI-5 REGISTER (48 bytes): %s (want EPROTO, EPROTO; sizeof now %zu)",
               strerror(o4), strerror(o5), sizeof rg);
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

// ------------------------------------------------------------------ hold (hot removal)
int cmd_hold(const char* dev, const char* ready) {
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
