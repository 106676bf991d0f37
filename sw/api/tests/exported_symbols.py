#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# sw.api.exported_symbols: the dynamic symbols libvelo.so defines (nm -D --defined-only) are
# exactly the functions velo.h declares: no internal symbol exported, no API function missing.
#   exported_symbols.py <libvelo.so> <velo.h> <C compiler>
import re
import subprocess
import sys


def declared(header, cc):
    # the header without comments and preprocessor lines; statements end at ';', '{' or '}'
    inc = header.rsplit("/velo/", 1)[0]
    text = subprocess.run([cc, "-E", "-P", "-I", inc, "-x", "c", header], check=True, capture_output=True,
                          text=True).stdout
    names = set()
    for stmt in re.split(r"[;{}]", text):
        stmt = " ".join(stmt.split())
        if re.match(r"(static|typedef)\b", stmt):  # inline functions, function pointer types
            continue
        m = re.search(r"\b(velo_\w+)\s*\(", stmt)
        if m and not re.search(r"\(\s*\*", stmt):
            names.add(m.group(1))
    return names


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[1] not in ("A",):  # (A: the version node, not a symbol of the code)
            names.add(f[2].split("@")[0])
    return names


def main():
    lib, header, cc = sys.argv[1:4]
    want, have = declared(header, cc), exported(lib)
    extra, missing = sorted(have - want), sorted(want - have)
    for n in extra:
        print(f"exported but not declared in velo.h: {n}")
    for n in missing:
        print(f"declared in velo.h but not exported: {n}")
    print(f"{len(have)} exported, {len(want)} declared")
    return 1 if extra or missing or not want else 0


if __name__ == "__main__":
    sys.exit(main())
