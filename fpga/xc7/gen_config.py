#!/usr/bin/env python3
"""PCIe core configuration of the 7-series board build, derived from spec/velo_spec.json.

  gen_config.py -o FILE [--node-bits N] [--vpid-bits V]

writes a Tcl file for fpga/xc7/build.tcl with
  velo_pcie_ids      CONFIG.* pairs: vendor/device/subsystem ids, class code
  velo_pcie_bars     CONFIG.* pairs: BAR0 (registers), BAR2 (send window), BAR4 (RMA window, only
                     when the spec gives its size), all others disabled
  velo_generics      synth_design -generic arguments (NODE_BITS, VPID_BITS of velo_xc7_top)
and prints a summary. Nothing here is hand-copied: the ids, BAR indices and sizes come from the
spec's constants (PCI_VENDOR_ID, PCI_DEVICE_ID, BAR_REGS/BAR_SEND/BAR_RMA, BAR_REGS_BITS,
BAR_RMA_BITS if present) and from the SEND_ADDR format (the send window spans every page the
format can address: 2^(12 + 2*VPID_BITS + NODE_BITS) bytes at the spec's default widths).

Only the Python standard library is used; no Vivado is needed (tested by ctest xc7.gen_config).
"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = os.path.join(ROOT, "spec", "velo_spec.json")


def expr(v, env):
    """A spec number: int, '0x..' string or a sum of integers and parameter names."""
    if isinstance(v, int):
        return v
    total = 0
    for term in v.split("+"):
        term = term.strip()
        if re.fullmatch(r"[A-Z_][A-Z0-9_]*", term):
            if term not in env:
                raise ValueError("unknown name %r in %r" % (term, v))
            total += env[term]
        else:
            total += int(term, 0)
    return total


def size_config(nbytes):
    """(scale, size) for the core's BAR size fields: the largest unit giving a whole number."""
    if nbytes < 128 or nbytes & (nbytes - 1):
        raise ValueError("BAR size %d is not a power of two >= 128" % nbytes)
    for scale, unit in (("Gigabytes", 1 << 30), ("Megabytes", 1 << 20), ("Kilobytes", 1 << 10), ("Bytes", 1)):
        if nbytes >= unit:
            return scale, nbytes // unit
    raise AssertionError


def build(node_bits=None, vpid_bits=None):
    with open(SPEC) as f:
        spec = json.load(f)
    params = {p["name"]: p for p in spec["params"]}
    env = {n: p["default"] for n, p in params.items()}
    for name, val in (("NODE_BITS", node_bits), ("VPID_BITS", vpid_bits)):
        if val is not None:
            p = params[name]
            if not p["min"] <= val <= p["max"]:
                raise ValueError("%s=%d outside %d..%d" % (name, val, p["min"], p["max"]))
            env[name] = val
    const = {c["name"]: expr(c["value"], env) for c in spec["constants"]}
    send = next(f for f in spec["formats"] if f["name"] == "SEND_ADDR")
    send_bits = max(expr(fl["lsb"], env) + expr(fl["width"], env) for fl in send["fields"])

    ids = [
        ("Vendor_ID", "%04X" % const["PCI_VENDOR_ID"]),
        ("Device_ID", "%04X" % const["PCI_DEVICE_ID"]),
        ("Subsystem_Vendor_ID", "%04X" % const["PCI_VENDOR_ID"]),
        ("Subsystem_ID", "%04X" % const["PCI_DEVICE_ID"]),
        ("Revision_ID", "%02X" % spec["version"]["minor"]),
        # network controller, "other" (02/80/00)
        ("Use_Class_Code_Lookup_Assistant", "false"),
        ("Class_Code_Base", "02"),
        ("Class_Code_Sub", "80"),
        ("Class_Code_Interface", "00"),
    ]
    bars = {}  # index -> (size bytes, 64-bit, prefetchable, what)
    bars[const["BAR_REGS"]] = (1 << const["BAR_REGS_BITS"], False, False, "registers")
    bars[const["BAR_SEND"]] = (1 << send_bits, True, True, "send window")
    if "BAR_RMA_BITS" in const:
        bars[const["BAR_RMA"]] = (1 << const["BAR_RMA_BITS"], True, True, "RMA window")
    cfg = []
    taken = set()
    for i in sorted(bars):
        size, is64, pf, _ = bars[i]
        if i in taken or (is64 and (i % 2 or i + 1 in bars)):
            raise ValueError("BAR%d overlaps another BAR" % i)
        scale, n = size_config(size)
        cfg += [("Bar%d_Enabled" % i, "true"), ("Bar%d_Type" % i, "Memory"),
                ("Bar%d_64bit" % i, "true" if is64 else "false"),
                ("Bar%d_Prefetchable" % i, "true" if pf else "false"),
                ("Bar%d_Scale" % i, scale), ("Bar%d_Size" % i, str(n))]
        taken.add(i)
        if is64:
            taken.add(i + 1)
    for i in range(6):
        if i not in taken:
            cfg.append(("Bar%d_Enabled" % i, "false"))
    generics = ["NODE_BITS=%d" % env["NODE_BITS"], "VPID_BITS=%d" % env["VPID_BITS"]]
    return ids, cfg, generics, bars, env


def tcl_list(pairs):
    return "[list \\\n" + "".join("    CONFIG.%s {%s} \\\n" % kv for kv in pairs) + "]"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True, help="Tcl file to write")
    ap.add_argument("--node-bits", type=int, help="NODE_BITS of the build (default: the spec's)")
    ap.add_argument("--vpid-bits", type=int, help="VPID_BITS of the build (default: the spec's)")
    a = ap.parse_args(argv)
    try:
        ids, bars_cfg, generics, bars, env = build(a.node_bits, a.vpid_bits)
    except (ValueError, KeyError, StopIteration) as e:
        print("gen_config.py: %s" % e, file=sys.stderr)
        return 1
    text = "# Generated by fpga/xc7/gen_config.py from spec/velo_spec.json. Do not edit.\n"
    text += "set velo_pcie_ids %s\n" % tcl_list(ids)
    text += "set velo_pcie_bars %s\n" % tcl_list(bars_cfg)
    text += "set velo_generics [list %s]\n" % " ".join("-generic %s" % g for g in generics)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        f.write(text)
    for i in sorted(bars):
        size, is64, pf, what = bars[i]
        print("BAR%d %-11s %s %s%s" % (i, what, "%d %s" % size_config(size)[::-1],
                                      "64-bit" if is64 else "32-bit", " prefetchable" if pf else ""))
    print("NODE_BITS=%d VPID_BITS=%d -> %s" % (env["NODE_BITS"], env["VPID_BITS"], a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
