#!/usr/bin/env python3
"""Resource and timing report of the VELO NIC (make -C fpga report / bench).

  report.py [--build DIR] [--jobs N]   tables: every unit and the whole NIC synthesized by Yosys
                                       0.23 for Virtex-4 (next to the paper's Table 1 and the
                                       XC4VFX60), 7-series and iCE40; the iCE40-HX8K bitstream's
                                       logic cells, block RAMs, Fmax per clock (nextpnr-ice40)
                                       and the NIC clock's endpoints over 10 ns per unit
  report.py --bench [--build DIR]      BENCH lines: fpga.ice40.fmax_mhz,
                                       fpga.ice40.endpoints_over_10ns, fpga.ice40.lc_used,
                                       fpga.ice40.lc_total, fpga.xc4v.nic.ff, fpga.xc4v.nic.lut

The per-unit synthesis is scripts/synth.py's (same units, scripts, counting rules), with its logs
in DIR/synth/. The board figures come from DIR/ice40/summary.json, written by fpga/ice40/flow.py
(make -C fpga ice40 builds it first).
"""
import argparse
import concurrent.futures
import importlib.util
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Xilinx XC4VFX60: 6,320 CLBs of 4 slices, each slice 2 LUT4s and 2 flip-flops (25,280 slices,
# 50,560 LUTs, 50,560 flip-flops), 232 RAMB16 (Virtex-4 family overview, DS112, table 1)
FX60 = {"slices": 25280, "lut": 50560, "ff": 50560, "ramb16": 232}
# the paper's whole system (HyperTransport core, crossbar, network, link and PHY layers): < 60 %
PAPER_SYSTEM_PCT = 60
ICE40_LC_NAME = "ICESTORM_LC"


def load_module(name, *path):
    """A Python file of the tree (path below ROOT) as a module."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, *path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


STA = load_module("velo_sdf_sta", "fpga", "ice40", "sdf_sta.py")  # the endpoint profile's table


def load_synth(build):
    """scripts/synth.py as a module, its logs redirected under the build directory."""
    mod = load_module("velo_synth", "scripts", "synth.py")
    mod.LOG = os.path.join(build, "synth")
    return mod


def synth_all(mod, pairs, jobs):
    """{(unit, family): result} for the pairs, jobs at a time, with progress."""
    out = {}
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        futs = {ex.submit(mod.synth, u, f): (u, f) for u, f in pairs}
        for n, fut in enumerate(concurrent.futures.as_completed(futs), 1):
            u, f = futs[fut]
            r = fut.result()  # RuntimeError (with the log's name) if Yosys failed
            out[(u, f)] = r
            print("[report] %2d/%d %-10s %-6s ff=%-5d lut=%-5d bram=%d (%.0f s)"
                  % (n, len(pairs), u, f, r["ff"], r["lut"], r["bram"], time.time() - t0), file=sys.stderr, flush=True)
    return out


def load_summary(build):
    p = os.path.join(build, "ice40", "summary.json")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def pct(n, total):
    return 100.0 * n / total


def tables(mod, res, summary):
    units = list(mod.UNITS)
    lines = []
    w = lines.append
    w("Resources per unit, Yosys 0.23, each unit alone with its default parameters (scripts/synth.py);")
    w("'nic' is velo_nic (NP = 2, TLP 64 bits, link 16 bits, 256 nodes x 256 vpids). FF = flip-flops,")
    w("LUT = LUT1..6 + INV (Xilinx) or SB_LUT4 (iCE40), BRAM = RAMB16 / RAMB18+36 / SB_RAM40_4K.")
    w("")
    w("Virtex-4 (synth_xilinx -family xc4v) beside the paper's Table 1 and the XC4VFX60 (%d LUTs, %d FFs):"
      % (FX60["lut"], FX60["ff"]))
    w("")
    w("| unit | FF | LUT | RAMB16 | % of FX60 (FF / LUT) | paper Table 1 (FF / LUT) |")
    w("|---|---|---|---|---|---|")
    for u in units:
        r = res[(u, "xc4v")]
        paper = "%d / %d (< 1 %%)" % mod.PAPER[u] if u in mod.PAPER else ("whole system < %d %%" % PAPER_SYSTEM_PCT
                                                                        if u == "nic" else "-")
        w("| %s | %d | %d | %d | %.2f %% / %.2f %% | %s |" % (u, r["ff"], r["lut"], r["bram"], pct(r["ff"], FX60["ff"]),
                                                         pct(r["lut"], FX60["lut"]), paper))
    nic = res[("nic", "xc4v")]
    w("")
    w("Whole NIC on the XC4VFX60: %.1f %% of its LUTs, %.1f %% of its flip-flops, %.1f %% of its block RAMs "
      "(the paper: < %d %% for the whole system including the HyperTransport core and crossbar, which "
      "this NIC does not contain)." % (pct(nic["lut"], FX60["lut"]), pct(nic["ff"], FX60["ff"]),
                                      pct(nic["bram"], FX60["ramb16"]), PAPER_SYSTEM_PCT))
    w("")
    w("7-series (synth_xilinx -family xc7) and iCE40 (synth_ice40):")
    w("")
    w("| unit | xc7 FF | xc7 LUT | xc7 BRAM | ice40 FF | ice40 LUT | ice40 BRAM |")
    w("|---|---|---|---|---|---|---|")
    for u in units:
        a, b = res[(u, "xc7")], res[(u, "ice40")]
        w("| %s | %d | %d | %d | %d | %d | %d |" % (u, a["ff"], a["lut"], a["bram"], b["ff"], b["lut"], b["bram"]))
    w("")
    lines += board_lines(summary)
    return "\n".join(lines)


def board_lines(summary):
    out = []
    w = out.append
    w("iCE40-HX8K breakout bitstream (fpga/ice40/flow.py: Yosys synth_ice40 -abc9, nextpnr-ice40, icepack):")
    w("")
    if summary is None:
        w("(not built: make -C fpga ice40)")
        return out
    u = summary["utilization"]
    p = summary["params"]
    w("configuration: velo_nic with SWITCH_LITE, NODE_BITS %d, VPID_BITS %d, TLP 64 bits, link 16 bits, one network "
      "port, one VC, event counters %s, link counters %s; UART %d baud"
      % (p["NODE_BITS"], p["VPID_BITS"], "on" if p["COUNTERS"] else "off", "on" if p["LINK_COUNTERS"] else "off",
         summary["uart_baud"]))
    for k in (ICE40_LC_NAME, "ICESTORM_RAM", "SB_IO", "SB_GB", "ICESTORM_PLL"):
        if k in u:
            w("  %-14s %5d / %5d  (%.0f %%)" % (k, u[k]["used"], u[k]["available"], pct(u[k]["used"], u[k]["available"])))
    c = summary.get("cells", {})
    if c:
        ff = sum(v for k, v in c.items() if k.startswith("SB_DFF"))
        w("  cells: %d SB_LUT4, %d flip-flops, %d SB_CARRY, %d SB_RAM40_4K" % (c.get("SB_LUT4", 0), ff,
                                                                           c.get("SB_CARRY", 0), c.get("SB_RAM40_4K", 0)))
    w("")
    w("| clock | constraint | Fmax (nextpnr) |")
    w("|---|---|---|")
    for clk in sorted(summary["fmax_mhz"]):
        name = "NIC clock (PLL)" if clk == summary["nic_clock"] else clk
        w("| %s | %.2f MHz | %.2f MHz |" % (name, summary["constraint_mhz"][clk], summary["fmax_mhz"][clk]))
    e = summary.get("endpoints")
    if e:
        w("")
        w("NIC clock, register endpoints against %.1f ns (the paper's 100 MHz), from nextpnr's SDF "
          "(fpga/ice40/sdf_sta.py):" % e["period_ns"])
        w("")
        lines = STA.table(e, 12)
        w(lines[0])
        w("")
        out.extend(lines[1:])
    w("")
    w("bitstream: %s (%d bytes), built in %d s (synthesis %d s, place and route %d s)"
      % (summary["bitstream"], summary["bitstream_bytes"], summary["seconds"]["total"], summary["seconds"]["synth"],
         summary["seconds"]["pnr"]))
    return out


def bench(mod, summary):
    r = synth_all(mod, [("nic", "xc4v")], 1)[("nic", "xc4v")]
    if summary is None:
        print("report.py: no iCE40 build (make -C fpga ice40)", file=sys.stderr)
        return 1
    lc = summary["utilization"][ICE40_LC_NAME]
    clk = summary["nic_clock"]
    print("# fpga: iCE40-HX8K bitstream built for %g MHz (the paper's clock: 100 MHz); whole NIC on xc4v, "
          "XC4VFX60 has %d LUTs" % (summary["clock_mhz"], FX60["lut"]))
    print("BENCH fpga.ice40.fmax_mhz %.2f MHz" % summary["fmax_mhz"][clk])
    if "endpoints" in summary:
        print("BENCH fpga.ice40.endpoints_over_10ns %d endpoints" % summary["endpoints"]["over"])
    print("BENCH fpga.ice40.lc_used %d lc" % lc["used"])
    print("BENCH fpga.ice40.lc_total %d lc" % lc["available"])
    print("BENCH fpga.xc4v.nic.ff %d ff" % r["ff"])
    print("BENCH fpga.xc4v.nic.lut %d lut" % r["lut"])
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "fpga"), help="build directory (default build/fpga)")
    ap.add_argument("--bench", action="store_true", help="print BENCH lines only")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="Yosys runs at once")
    a = ap.parse_args(argv)
    build = os.path.abspath(a.build)
    mod = load_synth(build)
    summary = load_summary(build)
    try:
        if a.bench:
            return bench(mod, summary)
        res = synth_all(mod, [(u, f) for u in mod.UNITS for f in mod.FAMILIES], a.jobs)
    except RuntimeError as e:
        print("report.py: %s" % e, file=sys.stderr)
        return 1
    text = tables(mod, res, summary)
    print(text)
    with open(os.path.join(build, "report.md"), "w") as f:
        f.write(text + "\n")
    print("\n(written to %s)" % os.path.relpath(os.path.join(build, "report.md"), ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
