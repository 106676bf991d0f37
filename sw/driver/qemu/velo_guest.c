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
#include "velo_guest.h"

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
