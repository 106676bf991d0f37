#!/usr/bin/env python3
"""Open bitstream flow of the VELO NIC on the iCE40-HX8K breakout board.

  flow.py [--build DIR] [--mhz F] [--baud B] [--seed N]
  flow.py --verify [--build DIR] [--mhz F]     check a finished build (bitstream, timing)

Steps (each logged to DIR/ice40/<step>.log, progress on stdout):
  1. PLL    icepll: the PLL parameters for F MHz from the 12 MHz oscillator (exact, or the flow
            stops), and the UART divider F / B (within 1 %)
  2. synth  Yosys synth_ice40 -abc9 of velo_ice40_top (rtl/board/ice40) with those parameters
  3. pnr    nextpnr-ice40 --hx8k --package ct256 --freq F, pins from
            fpga/ice40/constraints/hx8k-breakout.pcf, timing report as JSON
  4. check  every clock's achieved Fmax from the report >= its constraint (nextpnr's own check
            too: it exits non-zero on a timing failure); the NIC clock must be among them. Then
            the NIC clock's register endpoints from nextpnr's SDF (sdf_sta.py): how many miss
            10 ns (the paper's 100 MHz) in which unit; its worst path must be nextpnr's
  5. pack   icepack: DIR/ice40/velo_ice40.bin, and its manifest velo_ice40.bin.json (velo-flash's
            sidecar format 1: board, part, design version, spec hash, CRC-32; docs/board-tools.md)

DIR/ice40/summary.json gets the figures (clock, Fmax per clock, logic cells, block RAMs, cells
by type), which fpga/report.py prints. Exit status 0 only if all steps pass.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdf_sta  # noqa: E402  (fpga/ice40/sdf_sta.py)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PCF = os.path.join(HERE, "constraints", "hx8k-breakout.pcf")
TOP = "velo_ice40_top"
NIC_CLOCK = "clk"  # the PLL output net in velo_ice40_top
REF_MHZ = 12.0
# the board's NIC clock: the highest 3 MHz step that meets timing with margin (docs/board-guide.md)
DEFAULT_MHZ = 48.0
# the clock target the endpoint profile counts against: the paper's 100 MHz
TARGET_NS = 10.0

# the board's name and FPGA part in the bitstream's manifest (velo_ice40.bin.json, format 1 of
# velo-flash's manifests, docs/board-tools.md): what the image was built for
BOARD_NAME = "ice40-hx8k-breakout"
BOARD_PART = "ice40hx8k-ct256"

# the board's NIC configuration (docs/board-guide.md); velo_ice40_top's defaults say the same
BOARD_PARAMS = {"NODE_BITS": 4, "VPID_BITS": 4, "COUNTERS": 0, "LINK_COUNTERS": 0, "PIPE": 1}


class FlowError(Exception):
    pass


def rtl_files():
    """The NIC's RTL (every file outside rtl/board) and this board's (rtl/board/ice40)."""
    out = []
    for d, _, files in os.walk(os.path.join(ROOT, "rtl")):
        rel = os.path.relpath(d, ROOT)
        if rel.startswith(os.path.join("rtl", "board")) and rel != os.path.join("rtl", "board", "ice40"):
            continue
        out += [os.path.join(rel, f) for f in files if f.endswith(".v")]
    return sorted(out)


def pll_params(mhz, icepll="icepll"):
    """PLL parameters for mhz from the 12 MHz oscillator, from icepll; FlowError if not exact."""
    r = subprocess.run([icepll, "-i", "%g" % REF_MHZ, "-o", "%g" % mhz], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise FlowError("icepll failed for %g MHz:\n%s" % (mhz, r.stdout))
    return parse_icepll(r.stdout, mhz)


def parse_icepll(text, mhz):
    vals = {}
    for key in ("DIVR", "DIVF", "DIVQ", "FILTER_RANGE"):
        m = re.search(r"^%s:\s+(\d+)" % key, text, re.M)
        if not m:
            raise FlowError("icepll output without %s" % key)
        vals[key] = int(m.group(1))
    m = re.search(r"F_PLLOUT:\s+([\d.]+) MHz \(achieved\)", text)
    if not m:
        raise FlowError("icepll output without the achieved frequency")
    got = float(m.group(1))
    if abs(got - mhz) > 1e-3:
        raise FlowError("the PLL cannot make %g MHz from 12 MHz exactly (icepll: %g MHz)" % (mhz, got))
    if vals["DIVR"] != 0:
        raise FlowError("velo_ice40_top assumes DIVR = 0 (icepll chose %d)" % vals["DIVR"])
    # the PLL's own formula (SIMPLE feedback): F = 12 MHz * (DIVF + 1) / 2^DIVQ
    f = REF_MHZ * (vals["DIVF"] + 1) / (1 << vals["DIVQ"]) / (vals["DIVR"] + 1)
    if abs(f - mhz) > 1e-3:
        raise FlowError("icepll's parameters give %g MHz, not %g" % (f, mhz))
    vals["MHZ"] = got
    return vals


def uart_divider(mhz, baud):
    div = int(round(mhz * 1e6 / baud))
    err = abs(mhz * 1e6 / div - baud) / baud
    if div < 4 or err > 0.01:
        raise FlowError("%g MHz cannot make %d baud (divider %d, %.1f %% off); pick another clock"
                        % (mhz, baud, div, 100 * err))
    return div


def check_timing(report, mhz):
    """Fmax per clock from nextpnr's --report JSON; FlowError if a clock misses its constraint
    or the NIC clock is not in the report. Returns {clock: (achieved, constraint)}."""
    fmax = report.get("fmax")
    if not isinstance(fmax, dict) or not fmax:
        raise FlowError("the timing report has no clocks")
    out = {}
    fails = []
    for clk, v in fmax.items():
        a, c = float(v["achieved"]), float(v["constraint"])
        out[clk] = (a, c)
        if a < c:
            fails.append("%s: %.2f MHz < %.2f MHz" % (clk, a, c))
    if NIC_CLOCK not in out:
        raise FlowError("the NIC clock '%s' is not in the timing report (clocks: %s)" % (NIC_CLOCK, ", ".join(out)))
    if abs(out[NIC_CLOCK][1] - mhz) > 1e-3:
        raise FlowError("the NIC clock was constrained to %.2f MHz, not %g" % (out[NIC_CLOCK][1], mhz))
    if fails:
        raise FlowError("timing failed: " + "; ".join(fails))
    return out


def endpoint_profile(sdf, fmax_mhz):
    """The NIC clock's endpoint profile (sdf_sta.profile) from nextpnr's SDF; FlowError if its
    worst path does not give nextpnr's Fmax (within 1 %): the two analyses must agree."""
    try:
        with open(sdf) as f:
            p = sdf_sta.profile(f, clock="pll", period_ns=TARGET_NS)
    except (OSError, sdf_sta.StaError) as e:
        raise FlowError("endpoint profile from %s: %s" % (sdf, e))
    mhz = 1000.0 / p["worst_ns"]
    if abs(mhz - fmax_mhz) > 0.01 * fmax_mhz:
        raise FlowError("the SDF's worst path (%.2f ns, %.2f MHz) is not nextpnr's Fmax %.2f MHz"
                        % (p["worst_ns"], mhz, fmax_mhz))
    return p


def yosys_cells(log_text):
    """Cell counts of the last 'stat' in a Yosys log (the top module's block)."""
    stat = log_text[log_text.rfind("Printing statistics"):]
    cells = {}
    for m in re.finditer(r"^\s+(SB_\w+)\s+(\d+)\s*$", stat, re.M):
        cells[m.group(1)] = int(m.group(2))
    return cells


def spec_ids(vh=os.path.join(ROOT, "rtl", "include", "velo_spec.vh")):
    """(design version, spec hash) of the RTL the bitstream is built from (generated velo_spec.vh)."""
    with open(vh) as f:
        text = f.read()
    out = []
    for key in ("VELO_SPEC_VERSION", "VELO_SPEC_HASH"):
        m = re.search(r"^`define %s 32'h([0-9A-Fa-f]+)\s*$" % key, text, re.M)
        if not m:
            raise FlowError("%s has no %s" % (vh, key))
        out.append(int(m.group(1), 16))
    return tuple(out)


def manifest(binf, version, spec_hash):
    """The bitstream's sidecar manifest (velo-flash format 1): board, part, file name, the design
    version and spec hash the NIC reports, and the CRC-32 of the file (zlib's)."""
    with open(binf, "rb") as f:
        crc = zlib.crc32(f.read()) & 0xFFFFFFFF
    return {"velo_manifest": 1, "board": BOARD_NAME, "part": BOARD_PART, "bitstream": os.path.basename(binf),
            "design_version": "0x%08x" % version, "spec_hash": "0x%08x" % spec_hash, "crc32": "0x%08x" % crc}


def run_step(n, total, name, cmd, log, cwd, note=""):
    """Run cmd with its output in log, printing progress (elapsed time and the log's last line)
    every 15 s. FlowError with the log's tail if it fails."""
    print("[ice40] %d/%d %s%s (log: %s)" % (n, total, name, note, os.path.relpath(log, ROOT)), flush=True)
    t0 = time.time()
    with open(log, "w") as f:
        p = subprocess.Popen(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
        done = threading.Event()

        def progress():
            while not done.wait(15):
                print("[ice40]     %s: %d s, %s" % (name, time.time() - t0, last_line(log)), flush=True)
        th = threading.Thread(target=progress, daemon=True)
        th.start()
        rc = p.wait()
        done.set()
    dt = time.time() - t0
    if rc != 0:
        with open(log) as f:
            tail = "".join(f.readlines()[-25:])
        raise FlowError("%s failed (exit %d, %.0f s); end of %s:\n%s" % (name, rc, dt, log, tail))
    print("[ice40]     %s done in %.0f s" % (name, dt), flush=True)
    return dt


def last_line(log):
    try:
        with open(log, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 4000))
            lines = [l for l in f.read().decode(errors="replace").splitlines() if l.strip()]
        return lines[-1].strip()[:100] if lines else "(no output yet)"
    except OSError:
        return "(no log)"


SYNC_WORD = bytes([0x7E, 0xAA, 0x99, 0x7E])  # iCE40 configuration preamble (icepack writes it)


def verify(out, mhz):
    """Reads a finished build back: the bitstream is there and is an iCE40 configuration image,
    the summary says every clock met its constraint at the requested clock. FlowError if not."""
    sp = os.path.join(out, "summary.json")
    if not os.path.exists(sp):
        raise FlowError("no %s: the flow did not finish" % sp)
    with open(sp) as f:
        s = json.load(f)
    binf = os.path.join(out, "velo_ice40.bin")
    if not os.path.exists(binf):
        raise FlowError("no bitstream %s" % binf)
    with open(binf, "rb") as f:
        data = f.read()
    if len(data) != s["bitstream_bytes"] or SYNC_WORD not in data[:64]:
        raise FlowError("%s is not the iCE40 bitstream the flow wrote" % binf)
    if abs(s["clock_mhz"] - mhz) > 1e-3:
        raise FlowError("built for %g MHz, not %g" % (s["clock_mhz"], mhz))
    mp = binf + ".json"
    if not os.path.exists(mp):
        raise FlowError("no manifest %s" % mp)
    with open(mp) as f:
        man = json.load(f)
    want = manifest(binf, *spec_ids())
    if man != want:
        raise FlowError("the manifest %s does not match the bitstream and the RTL (%s, expected %s)" % (mp, man, want))
    check_timing({"fmax": {k: {"achieved": v, "constraint": s["constraint_mhz"][k]}
                           for k, v in s["fmax_mhz"].items()}}, mhz)
    lc = s["utilization"]["ICESTORM_LC"]
    print("[ice40] verified: %s, %d bytes, %d/%d logic cells, NIC clock %g MHz, Fmax %.2f MHz"
          % (os.path.relpath(binf, ROOT) if binf.startswith(ROOT) else binf, len(data), lc["used"], lc["available"],
             mhz, s["fmax_mhz"][NIC_CLOCK]))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "fpga"), help="build directory (default build/fpga)")
    ap.add_argument("--mhz", type=float, default=DEFAULT_MHZ, help="NIC clock in MHz (default %g)" % DEFAULT_MHZ)
    ap.add_argument("--baud", type=int, default=3000000, help="UART baud rate (default 3 Mbaud)")
    ap.add_argument("--seed", type=int, default=1, help="nextpnr placement seed (default 1)")
    ap.add_argument("--verify", action="store_true", help="only check a finished build")
    a = ap.parse_args(argv)
    out = os.path.join(os.path.abspath(a.build), "ice40")
    if a.verify:
        try:
            verify(out, a.mhz)
            return 0
        except (FlowError, KeyError, ValueError) as e:
            print("[ice40] verify FAILED: %s" % e, file=sys.stderr)
            return 1
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    for stale in ("summary.json", "velo_ice40.bin", "velo_ice40.bin.json", "velo_ice40.asc", "timing.json",
                  "velo_ice40.json", "velo_ice40.sdf"):
        if os.path.exists(os.path.join(out, stale)):
            os.remove(os.path.join(out, stale))
    try:
        print("[ice40] 1/5 PLL: %g MHz from the 12 MHz oscillator, UART %d baud" % (a.mhz, a.baud), flush=True)
        pll = pll_params(a.mhz)
        div = uart_divider(a.mhz, a.baud)
        print("[ice40]     DIVR %d DIVF %d DIVQ %d FILTER_RANGE %d, %d cycles per UART bit"
              % (pll["DIVR"], pll["DIVF"], pll["DIVQ"], pll["FILTER_RANGE"], div), flush=True)

        params = dict(BOARD_PARAMS)
        params.update({"PLL_DIVF": pll["DIVF"], "PLL_DIVQ": pll["DIVQ"], "PLL_FILTER": pll["FILTER_RANGE"],
                       "CLKS_PER_BIT": div})
        chparam = " ".join("-set %s %d" % kv for kv in sorted(params.items()))
        js = os.path.join(out, "velo_ice40.json")
        script = "read_verilog -Irtl/include %s; chparam %s %s; synth_ice40 -abc9 -top %s -json %s; stat" % (
            " ".join(rtl_files()), chparam, TOP, TOP, js)
        with open(os.path.join(out, "synth.ys"), "w") as f:
            f.write(script.replace("; ", "\n") + "\n")
        t_syn = run_step(2, 5, "synth", ["yosys", "-s", os.path.join(out, "synth.ys")], os.path.join(out, "synth.log"),
                         ROOT, " (Yosys synth_ice40 -abc9)")

        asc = os.path.join(out, "velo_ice40.asc")
        rep = os.path.join(out, "timing.json")
        sdf = os.path.join(out, "velo_ice40.sdf")
        t_pnr = run_step(3, 5, "pnr", ["nextpnr-ice40", "--hx8k", "--package", "ct256", "--json", js, "--pcf", PCF,
                                       "--freq", "%g" % a.mhz, "--seed", str(a.seed), "--report", rep, "--asc", asc,
                                       "--sdf", sdf],
                         os.path.join(out, "pnr.log"), ROOT, " (nextpnr-ice40 --hx8k --package ct256 --freq %g)" % a.mhz)

        print("[ice40] 4/5 check: timing at %g MHz" % a.mhz, flush=True)
        with open(rep) as f:
            report = json.load(f)
        fmax = check_timing(report, a.mhz)
        for clk, (ach, con) in sorted(fmax.items()):
            print("[ice40]     %-34s Fmax %7.2f MHz (constraint %.2f MHz) PASS" % (clk, ach, con), flush=True)
        prof = endpoint_profile(sdf, fmax[NIC_CLOCK][0])
        for line in sdf_sta.table(prof, limit=8):
            print("[ice40]     %s" % line, flush=True)

        binf = os.path.join(out, "velo_ice40.bin")
        t_pack = run_step(5, 5, "pack", ["icepack", asc, binf], os.path.join(out, "pack.log"), ROOT, " (icepack)")
        if not os.path.exists(binf) or os.path.getsize(binf) == 0:
            raise FlowError("icepack wrote no bitstream")

        man = manifest(binf, *spec_ids())
        with open(binf + ".json", "w") as f:
            json.dump(man, f, indent=2)
            f.write("\n")
        print("[ice40]     manifest %s.json: board %s, part %s, design version %s, spec hash %s"
              % (os.path.basename(binf), man["board"], man["part"], man["design_version"], man["spec_hash"]), flush=True)

        util = report.get("utilization", {})
        with open(os.path.join(out, "synth.log")) as f:
            cells = yosys_cells(f.read())
        summary = {
            "device": "iCE40HX8K-CT256", "board": "iCE40-HX8K breakout (ICE40HX8K-B-EVN)", "top": TOP,
            "clock_mhz": a.mhz, "uart_baud": a.baud, "pll": pll, "params": params, "seed": a.seed,
            "fmax_mhz": {k: v[0] for k, v in fmax.items()},
            "constraint_mhz": {k: v[1] for k, v in fmax.items()},
            "nic_clock": NIC_CLOCK, "endpoints": prof,
            "utilization": util, "cells": cells,
            "bitstream": os.path.relpath(binf, ROOT) if binf.startswith(ROOT) else binf,
            "bitstream_bytes": os.path.getsize(binf), "manifest": man,
            "seconds": {"synth": round(t_syn), "pnr": round(t_pnr), "pack": round(t_pack),
                        "total": round(time.time() - t0)},
        }
        with open(os.path.join(out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        lc = util.get("ICESTORM_LC", {})
        ram = util.get("ICESTORM_RAM", {})
        print("[ice40] bitstream %s (%d bytes): %d/%d logic cells, %d/%d block RAMs, NIC clock %g MHz "
              "(Fmax %.2f MHz), %.0f s" % (os.path.relpath(binf, ROOT), summary["bitstream_bytes"], lc.get("used", 0),
                                          lc.get("available", 0), ram.get("used", 0), ram.get("available", 0), a.mhz,
                                          fmax[NIC_CLOCK][0], time.time() - t0), flush=True)
        return 0
    except FlowError as e:
        print("[ice40] FAILED: %s" % e, file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
