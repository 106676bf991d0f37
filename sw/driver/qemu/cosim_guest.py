# SPDX-License-Identifier: (GPL-2.0 OR MIT)
"""The guest of the co-simulation (docs/cosim.md): its initramfs and its QEMU command line.

The initramfs holds busybox, /init = cosim_init.sh (with guest_lib.sh), velo.ko, the kernel
modules that mount the host's root file system over 9p on virtio-pci (taken from
/lib/modules/<release>/ of the kernel the guest boots, in the order their .modinfo "depends"
give), and /velo/test.conf. Used by velo_cosim.py; the generic pieces (cpio writer, .modinfo
parser, PVH vmlinux) are velo_qemu.py's.
"""
import gzip
import lzma
import os
import shutil
import stat
import subprocess

import velo_qemu

HERE = os.path.dirname(os.path.abspath(__file__))

# What the guest needs for `mount -t 9p -o trans=virtio`: the 9p file system and its virtio
# transport on a virtio-pci device. Their dependencies come from the modules themselves.
NINEP_MODULES = ("virtio_pci", "9pnet_virtio", "9p")
MOD_SUFFIXES = (".ko", ".ko.xz", ".ko.gz", ".ko.zst")


class ModuleError(Exception):
    pass


def mod_name(filename):
    """The module name of a module file (kernel convention: '-' and '_' are the same)."""
    for suf in MOD_SUFFIXES:
        if filename.endswith(suf):
            return filename[: -len(suf)].replace("-", "_")
    return None


def read_module(path):
    """The ELF bytes of a module file, decompressed (.ko.xz, .ko.gz; .ko.zst with zstd(1))."""
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".xz"):
        return lzma.decompress(data)
    if path.endswith(".gz"):
        return gzip.decompress(data)
    if path.endswith(".zst"):
        zstd = shutil.which("zstd")
        if not zstd:
            raise ModuleError("%s is zstd-compressed and zstd(1) is not installed" % path)
        return subprocess.run([zstd, "-dc", path], check=True, capture_output=True).stdout
    return data


def module_files(moddir):
    """{module name: path} of every module file under moddir/kernel (and moddir/updates)."""
    out = {}
    for sub in ("kernel", "updates", "extra"):
        for root, _, files in os.walk(os.path.join(moddir, sub)):
            for fn in files:
                n = mod_name(fn)
                if n:
                    out.setdefault(n, os.path.join(root, fn))
    return out


def builtin_modules(moddir):
    """Names of the modules built into the kernel (modules.builtin), which need no insmod."""
    try:
        with open(os.path.join(moddir, "modules.builtin")) as f:
            return {mod_name(os.path.basename(line.strip())) for line in f if line.strip()}
    except OSError:
        return set()


def load_order(moddir, wanted, krel):
    """[(name, ELF bytes)] of the modules `wanted` needs, each after the modules it depends on.

    The dependencies are each module's own .modinfo "depends=" (not modules.dep), followed
    transitively; modules built into the kernel are left out. Every module's vermagic must name
    krel (a module of another kernel would be refused by insmod)."""
    files = module_files(moddir)
    builtin = builtin_modules(moddir)
    order = []
    state = {}  # name -> "visiting" | "done"

    def visit(name, chain):
        if state.get(name) == "done" or name in builtin and name not in files:
            return
        if state.get(name) == "visiting":
            raise ModuleError("circular module dependency: " + " -> ".join(chain + [name]))
        if name not in files:
            raise ModuleError("module %s (needed by %s) is neither in %s nor built into the kernel"
                              % (name, " -> ".join(chain) or "the guest", moddir))
        state[name] = "visiting"
        data = read_module(files[name])
        info = velo_qemu.modinfo(files[name], data)
        vm = info.get("vermagic", [""])[0].split()
        if not vm or vm[0] != krel:
            raise ModuleError("%s is built for %s, the guest runs %s" % (files[name], vm[0] if vm else "?", krel))
        for dep in info.get("depends", [""])[0].split(","):
            if dep:
                visit(dep.replace("-", "_"), chain + [name])
        state[name] = "done"
        order.append((name, data))

    for w in wanted:
        visit(w, [])
    return order


def build_initramfs(path, busybox, ko, modules, conf):
    """Write the guest's initramfs to path. modules: load_order()'s list; conf: test.conf's
    variables (shell-quoted with single quotes, so no value may hold one)."""
    if not os.path.exists(busybox) or not velo_qemu.is_static_elf(busybox):
        raise ModuleError("%s is missing or not statically linked (Debian package busybox-static)" % busybox)
    c = velo_qemu.Cpio()
    for d in ("bin", "dev", "proc", "sys", "tmp", "host", "velo", "velo/modules"):
        c.dir(d)
    c.add("dev/console", stat.S_IFCHR | 0o600, rdev=(5, 1))
    with open(busybox, "rb") as f:
        c.file("bin/busybox", f.read(), 0o755)
    c.add("bin/sh", stat.S_IFLNK | 0o777, b"busybox")
    with open(os.path.join(HERE, "cosim_init.sh"), "rb") as f:
        c.file("init", f.read(), 0o755)
    with open(os.path.join(HERE, "guest_lib.sh"), "rb") as f:
        c.file("velo/guest_lib.sh", f.read())
    with open(ko, "rb") as f:
        c.file("velo/velo.ko", f.read())
    names = []
    for i, (name, data) in enumerate(modules):
        names.append("%02d-%s" % (i, name))
        c.file("velo/modules/%s.ko" % names[-1], data)
    conf = dict(conf, MODULES=" ".join(names))
    for k, v in conf.items():
        if "'" in str(v):
            raise ModuleError("test.conf value of %s holds a quote: %r" % (k, v))
    c.file("velo/test.conf", "".join("%s='%s'\n" % kv for kv in conf.items()).encode())
    c.write(path)


def qemu_command(qemu, kernel, initrd, append, mem_mb, proxy_fd=None):
    """The command line of one guest: q35 with its RAM in a shared memfd (the device process
    maps it), TCG, one CPU, the serial console on stdout, the host's root read-only over
    virtio-9p (mount tag hostroot) and, with proxy_fd, the VELO NIC as a multi-process PCI proxy
    device on that connected socket."""
    cmd = [qemu, "-machine", "q35,memory-backend=mem",
           "-object", "memory-backend-memfd,id=mem,size=%dM,share=on" % mem_mb, "-m", "%dM" % mem_mb,
           "-smp", "1", "-accel", "tcg", "-cpu", "max", "-nodefaults", "-nographic", "-no-reboot",
           "-monitor", "none", "-serial", "stdio",
           "-kernel", kernel, "-initrd", initrd, "-append", append,
           "-fsdev", "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap",
           "-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot,addr=04.0"]
    if proxy_fd is not None:
        cmd += ["-device", "x-pci-proxy-dev,id=velo0,fd=%d,addr=05.0" % proxy_fd]
    return cmd
