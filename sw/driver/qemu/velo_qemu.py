#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
"""QEMU smoke test of the VELO Linux driver (velo.ko).

Boots the Debian kernel velo.ko was built for (/boot/vmlinuz-<vermagic release>) in
qemu-system-x86_64 with a busybox initramfs built here, runs guest_init.sh as /init and parses
its "VELOTEST <name> PASS|FAIL <detail>" console lines. See docs/driver-qemu.md.

Exit status: 0 all checks passed, 1 a check failed / a check is missing / timeout / setup error,
77 skipped because qemu-system-x86_64 or the kernel image is missing (ctest SKIP_RETURN_CODE).
"""
import argparse
import glob
import lzma
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import threading
import time

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))

# Check names each mode must report (the guest prints them; a missing one fails the test).
LOAD_CHECKS = ["kernel"] + [
    "load%d.%s" % (i, c)
    for i in (1, 2)
    for c in ("insmod", "module", "params", "class", "pcidrv", "nobound", "nodev", "rmmod", "gone", "dmesg")
] + ["load.badparam", "load.badparam_gone", "load.badparam_dmesg"]
EDU_CHECKS = ["probe.edu." + c for c in ("new_id", "unbound", "message", "bind", "nodev", "remove_id")]
BAD_CHECKS = ("image", "bind", "unbound", "message", "nodev")
UAPI_CHECKS = ("open", "info", "info_bad", "abi", "priv", "ep_open", "ep_open_bad", "rma_absent", "abi_register", "vpids", "mmap_ring", "mmap_bad",
               "mmap_user", "grant", "wait", "reclaim", "close", "reopen")
UAPI_WINDOW_CHECKS = ("grant_bad", "mmap_window", "revoke")

# Kernel console lines that mean the kernel itself went wrong (the guest checks dmesg too; this
# also catches a splat that kills the guest script).
SPLAT = re.compile(
    r"(^|[^A-Za-z_])(BUG|WARNING)[: ]|Oops|Call Trace|general protection|KASAN|UBSAN|"
    r"list_(add|del) corruption|refcount_t: |Poison overwritten|Redzone|Object already free|"
    r"Bad page|soft lockup|blocked for more than|Kernel panic|Unable to handle"
)

# The probe boot's emulated PCI devices (guest_init.sh finds them by vendor:device):
#  edu            1234:11e8  QEMU's teaching device: BAR0 is its register block, not VELO's
#  virtio-vga     1af4:1050  BAR0 = VRAM (RAM, 8 MiB), BAR2 = 8 MiB with page-per-vq, MSI-X;
#                            no virtio driver in the initramfs, so nothing else claims it
#  bochs-display  1234:1111  BAR0 = VRAM (RAM, 16 MiB), BAR2 = 4 KiB, no MSI
PROBE_DEVICES = ["-device", "edu,addr=05.0", "-device", "virtio-vga,page-per-vq=on,addr=06.0",
                 "-device", "bochs-display,addr=07.0"]


def log(msg):
    print("velo-qemu: " + msg, flush=True)


def skip(msg):
    log("SKIP: " + msg)
    sys.exit(SKIP)


def die(msg):
    log("FAIL: " + msg)
    sys.exit(1)


def modinfo(ko, data=None):
    """The .modinfo key=value strings of a .ko (or of its bytes, data), parsed without kmod."""
    if data is None:
        with open(ko, "rb") as f:
            data = f.read()
    out = {}
    for m in re.finditer(rb"(?<![\x21-\x7e])(vermagic|parmtype|parm|name|license|depends)=([\x20-\x7e]*)\x00", data):
        out.setdefault(m.group(1).decode(), []).append(m.group(2).decode())
    return out


def is_static_elf(path):
    with open(path, "rb") as f:
        data = f.read()
    return data[:4] == b"\x7fELF" and b"ld-linux" not in data[:4096]


class Cpio:
    """A newc (SVR4, no CRC) archive writer: files owned by root without needing root."""

    def __init__(self):
        self.parts = []
        self.ino = 1000

    def _hdr(self, name, mode, size, nlink=1, rdev=(0, 0)):
        self.ino += 1
        fields = [self.ino, mode, 0, 0, nlink, 0, size, 0, 0, rdev[0], rdev[1], len(name) + 1, 0]
        h = b"070701" + b"".join(b"%08X" % v for v in fields) + name.encode() + b"\0"
        return h + b"\0" * (-len(h) % 4)

    def add(self, name, mode, data=b"", rdev=(0, 0)):
        self.parts.append(self._hdr(name, mode, len(data), 2 if stat.S_ISDIR(mode) else 1, rdev))
        self.parts.append(data + b"\0" * (-len(data) % 4))

    def dir(self, name):
        self.add(name, stat.S_IFDIR | 0o755)

    def file(self, name, data, mode=0o644):
        self.add(name, stat.S_IFREG | mode, data)

    def write(self, path):
        self.add("TRAILER!!!", 0)
        with open(path, "wb") as f:
            f.write(b"".join(self.parts))


def build_initramfs(args, krel, params, path):
    busybox = args.busybox
    if not os.path.exists(busybox) or not is_static_elf(busybox):
        die("%s is missing or not statically linked (Debian package busybox-static)" % busybox)
    c = Cpio()
    for d in ("bin", "dev", "proc", "sys", "tmp", "root", "velo"):
        c.dir(d)
    c.add("dev/console", stat.S_IFCHR | 0o600, rdev=(5, 1))
    with open(busybox, "rb") as f:
        c.file("bin/busybox", f.read(), 0o755)
    c.add("bin/sh", stat.S_IFLNK | 0o777, b"busybox")
    with open(os.path.join(HERE, "guest_init.sh"), "rb") as f:
        c.file("init", f.read(), 0o755)
    with open(os.path.join(HERE, "guest_lib.sh"), "rb") as f:
        c.file("velo/guest_lib.sh", f.read())
    with open(args.ko, "rb") as f:
        c.file("velo/velo.ko", f.read())
    conf = {
        "MODE": args.test,
        "KREL": krel,
        "PARAMS": " ".join(params),
        "STEP_TIMEOUT": str(args.step_timeout),
        "SHELL_AFTER": "1" if args.shell else "0",
    }
    variants = []
    if args.test == "probe":
        if not os.path.exists(args.guest) or not is_static_elf(args.guest):
            die("%s is missing or not statically linked (target velo_qemu_guest)" % args.guest)
        with open(args.guest, "rb") as f:
            c.file("bin/velo_guest", f.read(), 0o755)
        imgdir = os.path.join(args.workdir, "regimg")
        shutil.rmtree(imgdir, ignore_errors=True)
        r = subprocess.run([args.regimg, imgdir], capture_output=True, text=True)
        if r.returncode:
            die("velo_regimg failed: " + r.stderr.strip())
        c.dir("velo/regimg")
        c.dir("velo/regimg/expect")
        for root, _, files in os.walk(imgdir):
            for fn in sorted(files):
                full = os.path.join(root, fn)
                with open(full, "rb") as f:
                    c.file("velo/regimg/" + os.path.relpath(full, imgdir), f.read())
        with open(os.path.join(imgdir, "variants.txt")) as f:
            variants = [line.split(None, 2)[:2] for line in f if line.strip()]
        with open(os.path.join(imgdir, "expect", "node_id")) as f:
            conf["IMG_NODE_ID"] = f.read().strip()
    c.file("velo/test.conf", "".join("%s='%s'\n" % kv for kv in conf.items()).encode())
    c.write(path)
    return variants


def expected_checks(test, variants, append=""):
    if test == "load":
        return LOAD_CHECKS
    names = ["kernel", "probe.devices", "probe.insmod"] + EDU_CHECKS + ["probe.override"]
    for v, exp in variants:
        if exp != "OK":
            names += ["probe.%s.%s" % (v, c) for c in BAD_CHECKS]
    names += ["probe.vv." + c for c in ("image", "bind", "bound", "sysfs", "irq")]
    names += ["probe.vv.uapi." + c for c in UAPI_CHECKS + UAPI_WINDOW_CHECKS]
    names += ["probe.vv." + c for c in ("abi_log", "abi_register_log", "rma_notifier")]
    names += ["probe.bo." + c for c in ("image", "bind", "bound", "sysfs", "fallback")]
    names += ["probe.bo.uapi." + c for c in UAPI_CHECKS]
    names += ["probe.vv.unbind", "probe.vv.gone", "probe.vv.irq_freed", "probe.bo.still"]
    names += ["probe.vv.regs." + c for c in ("bringup", "mailbox", "user_page")]
    if any(v == "badirq" for v, _ in variants):  # the spec has the IRQ block
        names.append("probe.vv.regs.irq_off")
    if any(v == "rma" for v, _ in variants):  # the spec has the RMA block
        bounce = "swiotlb=force" in append.split()
        rma = ["bounce"] if bounce else ["register", "protection", "clear", "unmap", "deregister"]
        names += ["probe.rma." + c for c in ["image", "bind", "setup", "charge", "rlimit"] + rma +
                  ["removed", "close", "unbind", "exit", "dmesg"]]
        names += [] if bounce else ["probe.rmastuck." + c for c in ("image", "bind", "setup", "stuck", "removed", "close", "unbind",
                                                  "exit", "dmesg")]
        names += ["probe.uffd." + c for c in ("image", "bind", "setup", "gup", "held", "fence", "released", "after",
                                              "exit", "unbound", "dmesg")]
    names += ["probe.vv.rebind", "probe.vv.rebound"]
    names += ["probe.hold." + c for c in ("setup", "rmmod_busy", "unbind", "wait_woken", "gone", "close", "exit")]
    names += ["probe.rmmod", "probe.gone", "probe.bo.gone"]
    names += ["probe.reload." + c for c in ("insmod", "vv", "bo", "node_id", "rmmod", "gone")]
    return names + ["probe.hold.unbound", "probe.dmesg", "probe.shutdown_armed", "probe.shutdown"]


def parse_console(lines, echo=None):
    """The guest's verdicts in its console lines: (results {name: (PASS|FAIL, detail)}, the
    VELOTEST-DONE line or None, the names of failed checks, kernel splat lines outside the guest's
    own dmesg dump). echo(line) is called for every VELOTEST line."""
    results = {}
    done = None
    failed = []
    in_dmesg = False
    splats = []
    for line in lines:
        if line.startswith("VELOTEST-DMESG-BEGIN"):
            in_dmesg = True
        elif line.startswith("VELOTEST-DMESG-END"):
            in_dmesg = False
        m = re.match(r"VELOTEST (\S+) (PASS|FAIL) ?(.*)$", line)
        if m:
            results[m.group(1)] = (m.group(2), m.group(3))
            if echo:
                echo(line)
            if m.group(2) == "FAIL":
                failed.append(m.group(1))
        elif line.startswith("VELOTEST-DONE"):
            done = line
        elif not in_dmesg and SPLAT.search(line):
            splats.append(line)
    return results, done, failed, splats


def pvh_vmlinux(kernel, cachedir):
    """The uncompressed vmlinux of a bzImage, if it can be booted directly (PVH entry note).

    QEMU boots an ELF vmlinux with a Xen PHYS32_ENTRY note through PVH: no real-mode setup and,
    above all, no XZ decompression in the emulated CPU (about 5 s under TCG). The result is
    cached in cachedir, keyed by the image's path, size and mtime. None: use the bzImage."""
    st = os.stat(kernel)
    key = "%s %d %d" % (os.path.realpath(kernel), st.st_size, int(st.st_mtime))
    out = os.path.join(cachedir, "vmlinux-" + os.path.basename(kernel))
    stamp = out + ".stamp"
    try:
        with open(stamp) as f:
            if f.read() == key and os.path.exists(out):
                return out
    except OSError:
        pass
    with open(kernel, "rb") as f:
        data = f.read()
    i = data.find(b"\xfd7zXZ\x00")
    if i < 0:
        return None
    try:
        elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[i:])
    except lzma.LZMAError:
        return None
    if not has_pvh_note(elf):
        return None
    tmp = "%s.%d.tmp" % (out, os.getpid())
    with open(tmp, "wb") as f:
        f.write(elf)
    os.replace(tmp, out)
    with open(stamp + ".%d" % os.getpid(), "w") as f:
        f.write(key)
    os.replace(stamp + ".%d" % os.getpid(), stamp)
    return out


def has_pvh_note(elf):
    """An ELF64 little-endian image with a "Xen" note of type 18 (XEN_ELFNOTE_PHYS32_ENTRY)."""
    if elf[:6] != b"\x7fELF\x02\x01":
        return False
    phoff, = struct.unpack_from("<Q", elf, 32)
    phentsize, phnum = struct.unpack_from("<HH", elf, 54)
    for k in range(phnum):
        ptype, _, off, _, _, filesz = struct.unpack_from("<IIQQQQ", elf, phoff + k * phentsize)
        if ptype != 4:  # PT_NOTE
            continue
        pos, end = off, off + filesz
        while pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", elf, pos)
            name = elf[pos + 12:pos + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and ntype == 18:
                return True
            pos += 12 + ((namesz + 3) & ~3) + ((descsz + 3) & ~3)
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--test", choices=("load", "probe"), required=True)
    ap.add_argument("--ko", required=True, help="velo.ko to test")
    ap.add_argument("--workdir", required=True, help="where the initramfs and console log go")
    ap.add_argument("--regimg", help="the velo_regimg tool (probe test)")
    ap.add_argument("--guest", help="the static velo_guest helper (probe test)")
    ap.add_argument("--kernel", help="kernel image (default: /boot/vmlinuz-<release of velo.ko's vermagic>)")
    ap.add_argument("--qemu", default="qemu-system-x86_64")
    ap.add_argument("--busybox", default="/bin/busybox")
    ap.add_argument("--kvm", choices=("on", "off"), default=os.environ.get("VELO_QEMU_KVM", "off"),
                    help="on: use KVM (-cpu host) instead of TCG; default off (env VELO_QEMU_KVM)")
    ap.add_argument("--bzimage", action="store_true", help="boot the bzImage itself, not the extracted vmlinux")
    ap.add_argument("--timeout", type=float, default=float(os.environ.get("VELO_QEMU_TIMEOUT", "150")),
                    help="watchdog: kill the VM after this many seconds (env VELO_QEMU_TIMEOUT)")
    ap.add_argument("--step-timeout", type=int, default=30, help="guest: limit per insmod/rmmod")
    ap.add_argument("--shell", action="store_true", help="interactive: a shell on the console after the checks")
    ap.add_argument("--append", default="", help="extra kernel command line")
    args = ap.parse_args()

    qemu = shutil.which(args.qemu)
    if not qemu:
        skip("%s not found (Debian package qemu-system-x86)" % args.qemu)
    if not os.path.exists(args.ko):
        if not args.kernel and not glob.glob("/boot/vmlinuz-*-amd64"):
            skip("no Debian kernel image (/boot/vmlinuz-*-amd64, package linux-image-amd64) and no %s" % args.ko)
        die("%s does not exist: build the velo-kmod target first (cmake --build <dir> --target velo-qemu)"
            % args.ko)
    mi = modinfo(args.ko)
    if "vermagic" not in mi or mi.get("name", ["velo"])[0] != "velo":
        die("%s is not the velo module (modinfo: %s)" % (args.ko, mi))
    krel = mi["vermagic"][0].split()[0]
    kernel = args.kernel or "/boot/vmlinuz-" + krel
    if not os.path.exists(kernel):
        skip("kernel image %s is missing (velo.ko is built for %s: Debian package linux-image-%s)"
             % (kernel, krel, krel))
    if not os.access(kernel, os.R_OK):
        skip("kernel image %s is not readable" % kernel)
    if args.test == "probe" and not (args.regimg and args.guest):
        die("--regimg and --guest are required for the probe test")
    # module parameters: "parmtype=name:type" (module_param) and "parm=name:description"
    # (MODULE_PARM_DESC, also for module_param_cb, which has no parmtype)
    params = sorted({p.split(":", 1)[0] for p in mi.get("parmtype", []) + mi.get("parm", [])})

    os.makedirs(args.workdir, exist_ok=True)
    initrd = os.path.join(args.workdir, "initramfs-%s.cpio" % args.test)
    variants = build_initramfs(args, krel, params, initrd)
    expect = expected_checks(args.test, variants, args.append)

    use_kvm = args.kvm == "on"
    if use_kvm and not os.access("/dev/kvm", os.R_OK | os.W_OK):
        die("--kvm on, but /dev/kvm is missing or not accessible")
    boot = None if args.bzimage else pvh_vmlinux(kernel, os.path.dirname(os.path.abspath(args.workdir)))
    accel = ["-accel", "kvm", "-cpu", "host"] if use_kvm else ["-accel", "tcg", "-cpu", "max"]
    append = ("console=ttyS0,115200 panic=-1 loglevel=5 slub_debug=FZPU page_poison=1 init_on_free=1 "
              "tsc=reliable no_timer_check edd=off " + args.append).strip()
    cmd = [qemu, "-M", "q35", "-m", "256M", "-smp", "1"] + accel + [
        "-nodefaults", "-nographic", "-no-reboot", "-monitor", "none",
        "-kernel", boot or kernel, "-initrd", initrd, "-append", append,
    ]
    cmd += ["-serial", "mon:stdio"] if args.shell else ["-serial", "stdio"]
    if args.test == "probe":
        cmd += PROBE_DEVICES
    log("kernel %s%s, module %s (vermagic %s), %s" % (kernel, " (as PVH %s)" % boot if boot else "", args.ko,
                                                     mi["vermagic"][0].strip(), "KVM" if use_kvm else "TCG"))
    log(" ".join(cmd))
    conlog = os.path.join(args.workdir, "console-%s.log" % args.test)

    if args.shell:
        os.execv(qemu, cmd)

    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines = []

    def reader():
        for raw in p.stdout:
            lines.append(raw.decode("utf-8", "replace").rstrip("\r\n"))

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    timed_out = False
    try:
        p.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        p.kill()
        p.wait()
    th.join(5)
    secs = time.monotonic() - t0
    with open(conlog, "w") as f:
        f.write("\n".join(lines) + "\n")

    results, done, failed, splats = parse_console(lines, lambda line: print(line, flush=True))
    if args.test == "probe" and done is not None:
        # after VELOTEST-DONE the guest powers off with velo bound to 00:06.0 and 00:07.0: the
        # driver's .shutdown must have run for both (its dev_dbg line, enabled by dyndbg)
        tail = lines[lines.index(done) + 1:]
        seen = sorted({m.group(1) for m in (re.search(r"velo (0000:00:0[67]\.0): shutdown: NIC and bus mastering off",
                                                       ln) for ln in tail) if m})
        ok = seen == ["0000:00:06.0", "0000:00:07.0"]
        results["probe.shutdown"] = ("PASS" if ok else "FAIL", "shutdown ran for: %s" % (" ".join(seen) or "none"))
        print("VELOTEST probe.shutdown %s %s" % results["probe.shutdown"], flush=True)
        if not ok:
            failed.append("probe.shutdown")
    missing = [n for n in expect if n not in results]
    log("%s boot: %.1f s (%s), console log %s" % (args.test, secs, "KVM" if use_kvm else "TCG", conlog))
    problems = []
    if timed_out:
        problems.append("timed out after %.0f s (the VM was killed)" % args.timeout)
    if done is None:
        problems.append("the guest never reported VELOTEST-DONE (crash, panic or hang)")
    if p.returncode not in (0, None) and not timed_out:
        problems.append("qemu exited with status %d" % p.returncode)
    if failed:
        problems.append("failed checks: " + " ".join(failed))
    if missing:
        problems.append("missing checks: " + " ".join(missing))
    unexpected = [n for n in results if n not in expect]
    if unexpected:
        problems.append("unexpected checks (update velo_qemu.py): " + " ".join(unexpected))
    if splats:
        problems.append("kernel console shows: " + " | ".join(splats[:5]))
    if problems:
        print("---- last console lines ----")
        print("\n".join(lines[-60:]))
        for pr in problems:
            log("FAIL: " + pr)
        return 1
    log("PASS: %d checks" % len(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
