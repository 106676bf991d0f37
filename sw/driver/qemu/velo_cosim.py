#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
"""Co-simulation of the VELO driver and the RTL: Linux guests whose VELO NIC is a node of
velo-fabric (docs/cosim.md).

Starts velo-fabric with `--qemu NODE:SOCKET` for each guest node, connects to each socket and
hands the connection to a qemu-system-x86_64 guest as its multi-process PCI proxy device
(x-pci-proxy-dev, the VELO NIC 10ee:7e10). Each guest boots the Debian kernel velo.ko was built
for (TCG) with an initramfs of busybox, velo.ko and the 9p modules, mounts the host's root
read-only over virtio-9p and runs cosim_msg from the build tree in a chroot of it. The guests
print "VELOTEST <name> PASS|FAIL <detail>" lines (cosim_init.sh), parsed here.

Modes: selftest (one guest, no fabric, no VELO device: modules, 9p, chroot, velo.ko loads),
pair (two guests exchange messages of 1..64 bytes: `make test`), long (more and longer
messages, up to 1 MiB: on demand).

Exit status: 0 all checks passed, 1 a check failed / is missing / timeout / setup error, 77
skipped because qemu-system-x86_64, the kernel image or its modules directory is missing.
"""
import argparse
import ctypes
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cosim_guest  # noqa: E402
import velo_qemu  # noqa: E402

SKIP = 77

# What each mode runs: guests (name, node), messages per direction, largest message, watchdog (s).
MODES = {
    "selftest": dict(guests=[("solo", 0)], count=0, max_size=64, timeout=240),
    "pair": dict(guests=[("a", 0), ("b", 1)], count=512, max_size=64, timeout=540),
    "long": dict(guests=[("a", 0), ("b", 1)], count=400, max_size=1 << 20, timeout=1800),
}
VPID_A, VPID_B = 10, 11
COMMON_CHECKS = ["kernel", "cosim.modules", "cosim.9p", "cosim.chroot", "velo.load"]
END_CHECKS = ["velo.rmmod", "velo.gone", "velo.dmesg"]
PAIR_CHECKS = {"a": ("open", "connect", "send", "echo", "exit"), "b": ("open", "recv", "connect", "send", "fin", "exit")}
# with --tools (velo-check, velo-pingpong): between the guests, then in each guest on its own node
TOOL_CHECKS = ["check", "pingpong", "kill.midstream", "kill.reopen", "hotplug.remove", "hotplug.rescan"]


def log(msg):
    print("velo-cosim: " + msg, flush=True)


def skip(msg):
    log("SKIP: " + msg)
    sys.exit(SKIP)


def die(msg):
    log("FAIL: " + msg)
    sys.exit(1)


def expected_checks(mode, role, mpi, tools=False):
    if mode == "selftest":
        return COMMON_CHECKS + ["velo.nodev"] + (["mpi.collectives"] if mpi else []) + END_CHECKS
    return (COMMON_CHECKS + ["velo.irq", "velo.info", "velo.info_exit"] +
            ["pair.%s.%s" % (role, c) for c in PAIR_CHECKS[role]] + (TOOL_CHECKS if tools else []) +
            (["mpi.collectives"] if mpi else []) + END_CHECKS)


def die_with_parent():
    """In a child before exec: SIGKILL when this script dies, even by SIGKILL (PR_SET_PDEATHSIG)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)


class Procs:
    """The processes this run started, each in a session of its own: all are killed (the whole
    process group) on every way out, including SIGTERM from ctest's timeout; the kernel kills
    them if this script is killed outright."""

    def __init__(self):
        self.procs = []

    def start(self, cmd, **kw):
        p = subprocess.Popen(cmd, start_new_session=True, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent, **kw)
        self.procs.append(p)
        return p

    def kill_all(self, grace=0.0):
        for p in self.procs:
            if p.poll() is None and grace:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except OSError:
                    pass
        end = time.monotonic() + grace
        for p in self.procs:
            while p.poll() is None and time.monotonic() < end:
                time.sleep(0.05)
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait()


class Console:
    """A guest's serial console: every line into a log file and a list, read by a thread."""

    def __init__(self, name, proc, path, t0):
        self.name, self.proc, self.lines, self.t0 = name, proc, [], t0
        self.f = open(path, "w")
        self.th = threading.Thread(target=self._read, daemon=True)
        self.th.start()

    def _read(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            self.lines.append(line)
            self.f.write(line + "\n")
            self.f.flush()
            if line.startswith("VELOTEST ") or line.startswith("VELOTEST-DONE"):
                print("[%s %6.1f s] %s" % (self.name, time.monotonic() - self.t0, line), flush=True)

    def close(self):
        self.th.join(5)
        self.f.close()


def start_fabric(procs, args, guests, workdir):
    """velo-fabric with a --qemu NODE:SOCKET per guest; waits for its "ready" line.
    Returns (process, {guest name: socket path})."""
    socks = {name: os.path.join(workdir, "node%d.sock" % node) for name, node in guests}
    for s in socks.values():
        if os.path.exists(s):
            os.unlink(s)
    rfd, wfd = os.pipe()
    cmd = [args.fabric, "--nodes", str(max(2, args.nodes)), "--socket", os.path.join(workdir, "fabric.sock"),
           "--ready-fd", str(wfd)]
    for name, node in guests:
        cmd += ["--qemu", "%d:%s" % (node, socks[name])]
    log(" ".join(cmd))
    flog = open(os.path.join(workdir, "fabric.log"), "w")
    p = procs.start(cmd, stdout=flog, stderr=subprocess.STDOUT, pass_fds=(wfd,))
    os.close(wfd)
    got = b""
    end = time.monotonic() + 60
    while b"\n" not in got and time.monotonic() < end and p.poll() is None:
        r, _, _ = select.select([rfd], [], [], 0.2)
        if r:
            chunk = os.read(rfd, 64)
            if not chunk:
                break
            got += chunk
    os.close(rfd)
    if got.strip() != b"ready":
        tail = open(os.path.join(workdir, "fabric.log")).read()[-2000:]
        die("velo-fabric did not get ready (status %s, said %r); its log:\n%s" % (p.poll(), got, tail))
    return p, socks


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=sorted(MODES), required=True)
    ap.add_argument("--ko", required=True, help="velo.ko to load in the guests")
    ap.add_argument("--fabric", help="velo-fabric (not for --mode selftest)")
    ap.add_argument("--msg", required=True, help="cosim_msg of the build tree (runs in the guests' chroot)")
    ap.add_argument("--workdir", required=True, help="where initramfs, sockets and logs go")
    ap.add_argument("--mpi-app", help="mpi_collectives of the build tree: a 2-rank MPI job in each guest "
                    "(selftest: over shared memory; long: over the VELO BTL, with --velo-run)")
    ap.add_argument("--velo-run", help="velo-run of the build tree (long mode's MPI job)")
    ap.add_argument("--tools", help="directory of velo-check and velo-pingpong (pair and long: run between the "
                    "guests, then a process killed mid-stream and hot removal under traffic in each)")
    ap.add_argument("--kernel", help="kernel image (default: /boot/vmlinuz-<release of velo.ko's vermagic>)")
    ap.add_argument("--moddir", help="its modules (default: /lib/modules/<release>)")
    ap.add_argument("--qemu", default="qemu-system-x86_64")
    ap.add_argument("--busybox", default="/bin/busybox")
    ap.add_argument("--mem", type=int, default=512, help="guest RAM in MiB (a memfd shared with the fabric)")
    ap.add_argument("--nodes", type=int, default=2, help="nodes of the fabric (the guests' and others)")
    ap.add_argument("--count", type=int, help="messages each way (default: the mode's)")
    ap.add_argument("--max-size", type=int, help="largest message (default: the mode's)")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("VELO_COSIM_SEED", "1")))
    ap.add_argument("--poll-us", type=int, default=50, help="velo.ko's poll_interval_us (no interrupt under TCG)")
    ap.add_argument("--timeout", type=float, help="watchdog in s (default: the mode's; env VELO_COSIM_TIMEOUT)")
    ap.add_argument("--append", default="", help="extra kernel command line")
    args = ap.parse_args()
    mode = MODES[args.mode]
    timeout = args.timeout or float(os.environ.get("VELO_COSIM_TIMEOUT", mode["timeout"]))

    qemu = shutil.which(args.qemu)
    if not qemu:
        skip("%s not found (Debian package qemu-system-x86)" % args.qemu)
    if not os.path.exists(args.ko):
        die("%s does not exist: build the velo-kmod target first (cmake --build <dir> --target velo-cosim)" % args.ko)
    mi = velo_qemu.modinfo(args.ko)
    if "vermagic" not in mi or mi.get("name", ["velo"])[0] != "velo":
        die("%s is not the velo module" % args.ko)
    krel = mi["vermagic"][0].split()[0]
    kernel = args.kernel or "/boot/vmlinuz-" + krel
    if not os.access(kernel, os.R_OK):
        skip("kernel image %s is missing or unreadable (velo.ko is built for %s: Debian package linux-image-%s)"
             % (kernel, krel, krel))
    moddir = args.moddir or "/lib/modules/" + krel
    if not os.path.isdir(os.path.join(moddir, "kernel")):
        skip("the modules of %s are missing (%s/kernel): the guests need its 9p and virtio modules "
             "(Debian package linux-image-%s)" % (krel, moddir, krel))
    if not os.access(args.msg, os.X_OK):
        die("%s is missing: build the cosim_msg target" % args.msg)
    if args.mode != "selftest" and not (args.fabric and os.access(args.fabric, os.X_OK)):
        die("velo-fabric %s is missing: build the velo-fabric target" % args.fabric)
    mpi = bool(args.mpi_app) and args.mode != "pair"
    if mpi and not os.access(args.mpi_app, os.X_OK):
        die("%s is missing: build the mpi_collectives target" % args.mpi_app)
    if mpi and args.mode == "long" and not (args.velo_run and os.access(args.velo_run, os.X_OK)):
        die("the long mode's MPI job needs --velo-run (the velo-run target)")

    tools = bool(args.tools) and args.mode != "selftest"
    if tools and not all(os.access(os.path.join(args.tools, t), os.X_OK) for t in ("velo-check", "velo-pingpong")):
        die("--tools %s: velo-check and velo-pingpong are missing (build them)" % args.tools)
    os.makedirs(args.workdir, exist_ok=True)
    try:
        wanted = list(cosim_guest.NINEP_MODULES) + [d for d in mi.get("depends", [""])[0].split(",") if d]
        modules = cosim_guest.load_order(moddir, wanted, krel)
    except (cosim_guest.ModuleError, OSError) as e:
        die(str(e))
    log("kernel %s, velo.ko %s, modules: %s" % (kernel, args.ko, " ".join(n for n, _ in modules)))
    guests = mode["guests"]
    count = args.count or mode["count"]
    max_size = args.max_size or mode["max_size"]
    step_timeout = 60
    msg_timeout = max(60, int(timeout) - 120)
    initrds = {}
    for name, node in guests:
        peer = [n for g, n in guests if g != name]
        conf = {
            "MODE": "selftest" if args.mode == "selftest" else "pair",
            "KREL": krel,
            "ROLE": name,
            "NODE": node,
            "PEER_NODE": peer[0] if peer else -1,
            "VPID_A": VPID_A,
            "VPID_B": VPID_B,
            "COUNT": count,
            "MAX_SIZE": max_size,
            "SEED": args.seed,
            "MSG": os.path.abspath(args.msg),
            "MPI_COLLECTIVES": os.path.abspath(args.mpi_app) if mpi else "",
            "VELO_RUN": os.path.abspath(args.velo_run) if mpi and args.velo_run else "",
            "TOOLS": os.path.abspath(args.tools) if tools else "",
            "LONG": 1 if args.mode == "long" else 0,
            "VELO_PARAMS": "poll_interval_us=%d" % args.poll_us,
            "STEP_TIMEOUT": step_timeout,
            "MSG_TIMEOUT": msg_timeout,
        }
        initrds[name] = os.path.join(args.workdir, "initramfs-%s.cpio" % name)
        try:
            cosim_guest.build_initramfs(initrds[name], args.busybox, args.ko, modules, conf)
        except (cosim_guest.ModuleError, OSError) as e:
            die(str(e))
    boot = velo_qemu.pvh_vmlinux(kernel, os.path.dirname(os.path.abspath(args.workdir))) or kernel
    append = ("console=ttyS0,115200 panic=-1 loglevel=5 slub_debug=FZPU page_poison=1 tsc=reliable "
              "no_timer_check edd=off " + args.append).strip()

    procs = Procs()

    def on_signal(sig, _frame):
        log("signal %d: stopping every guest and the fabric" % sig)
        procs.kill_all()
        sys.exit(1)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    consoles = []
    fabric = None
    t0 = time.monotonic()
    try:
        socks = {}
        if args.mode != "selftest":
            fabric, socks = start_fabric(procs, args, guests, args.workdir)
        for name, node in guests:
            sock = None
            if name in socks:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    sock.connect(socks[name])
                except OSError as e:
                    die("cannot connect to velo-fabric's node %d at %s: %s" % (node, socks[name], e))
            cmd = cosim_guest.qemu_command(qemu, boot, initrds[name], append, args.mem,
                                           None if sock is None else sock.fileno())
            log("guest %s (node %d): %s" % (name, node, " ".join(cmd)))
            p = procs.start(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            pass_fds=() if sock is None else (sock.fileno(),))
            if sock is not None:
                sock.close()  # qemu holds its own copy
            consoles.append(Console(name, p, os.path.join(args.workdir, "console-%s.log" % name), t0))
        timed_out = False
        fabric_died = None
        while any(c.proc.poll() is None for c in consoles):
            if time.monotonic() - t0 > timeout:
                timed_out = True
                break
            if fabric is not None and fabric.poll() is not None:
                fabric_died = fabric.returncode
                break
            time.sleep(0.2)
    finally:
        procs.kill_all(grace=3)
        for c in consoles:
            c.close()
    secs = time.monotonic() - t0

    problems = []
    if timed_out:
        problems.append("timed out after %.0f s (everything was killed)" % timeout)
    if fabric_died is not None:
        problems.append("velo-fabric exited with status %d while the guests ran" % fabric_died)
    for c in consoles:
        results, done, failed, splats = velo_qemu.parse_console(c.lines)
        expect = expected_checks(args.mode, c.name, mpi, tools)
        missing = [n for n in expect if n not in results]
        unexpected = [n for n in results if n not in expect]
        mine = []
        if done is None:
            mine.append("never reported VELOTEST-DONE (crash, panic, hang or killed)")
        if c.proc.returncode not in (0, None) and not timed_out and fabric_died is None:
            mine.append("qemu exited with status %d" % c.proc.returncode)
        if failed:
            mine.append("failed checks: " + " ".join(failed))
        if missing:
            mine.append("missing checks: " + " ".join(missing))
        if unexpected:
            mine.append("unexpected checks (update velo_cosim.py): " + " ".join(unexpected))
        if splats:
            mine.append("kernel console shows: " + " | ".join(splats[:5]))
        if mine:
            print("---- guest %s: last console lines ----" % c.name)
            print("\n".join(c.lines[-40:]))
            problems += ["guest %s: %s" % (c.name, m) for m in mine]
        else:
            log("guest %s: %d checks passed" % (c.name, len(results)))
    log("%s: %.1f s, logs in %s" % (args.mode, secs, args.workdir))
    if problems:
        if fabric is not None:
            with open(os.path.join(args.workdir, "fabric.log")) as f:
                tail = f.read()[-3000:]
            print("---- velo-fabric log (end) ----\n" + tail)
        for pr in problems:
            log("FAIL: " + pr)
        return 1
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
