#!/usr/bin/env python3
"""Synthesize VELO units with Yosys and report resources.

  synth.py --check [UNIT]   every unit must synthesize for xc4v, xc7 and ice40, the whole NIC for
                            xc7 (the test; the NIC's xc4v figures come from --bench); with UNIT,
                            that unit's checks only (ctest runs one test per unit)
  synth.py --bench          BENCH lines for the units the paper's Table 1 lists (xc4v)
  synth.py --table          a resource table for all units and families
  synth.py --blocks UNIT    UNIT on xc4v, the figures of each submodule instance of its top (with
                            everything below it) and of the top's own logic: the register file's
                            blocks (synth.py --blocks regfile)

Logs go to $VELO_SYNTH_LOG, else build/synth/ (ctest sets it to its build directory, so that
builds of several trees do not share logs). Counting: flip-flops are FD* cells (Xilinx) or SB_DFF* (iCE40); LUTs
are LUT1..LUT6 plus INV (an inverter takes a LUT) for Xilinx, SB_LUT4 for iCE40; block RAMs
are listed apart (the paper's table counts flip-flops and LUTs only).
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOG = os.environ.get("VELO_SYNTH_LOG") or os.path.join(ROOT, "build", "synth")

# the register file's front and blocks (rtl/regs/velo_rb_*.v, some generated from the spec)
RB_FILES = sorted(os.path.relpath(os.path.join(ROOT, "rtl", "regs", f), ROOT)
                  for f in os.listdir(os.path.join(ROOT, "rtl", "regs")) if f.startswith("velo_rb_") and f.endswith(".v"))
COMMON = ["rtl/common/velo_sdp_ram.v", "rtl/common/velo_skid.v", "rtl/common/velo_mwr_hdr.v", "rtl/common/velo_tick.v",
          "rtl/common/velo_sim_gate.v"]
UNITS = {
    "requester": ("velo_requester", ["rtl/velo/velo_requester.v"]),
    "completer": ("velo_completer", ["rtl/velo/velo_completer.v"]),
    "regfile": ("velo_regfile", ["rtl/regs/velo_regfile.v"] + RB_FILES),  # the front and every register block
    "counters": ("velo_counters", ["rtl/regs/velo_counters.v"]),
    "host": ("velo_tlp_rx_demux", ["rtl/host/velo_tlp_rx_demux.v"]),
    "flit": ("velo_flit_tx", ["rtl/net/velo_flit_tx.v"]),
    "link": ("velo_link", None),      # one network port's link layer (LINK_W 16, MAX_AREA 64: no RMA)
    "switch": ("velo_switch", None),  # the switch, NP = 2 (a ring node), LINK_W 16, MAX_AREA 64
    # the same as velo_nic builds them with RMA (packets of up to 256 bytes of payload area)
    "link256": ("velo_link", None, {"MAX_AREA": 256, "VC_DEPTH": 192, "REPLAY_DEPTH": 512}),
    "switch256": ("velo_switch", None, {"MAX_AREA": 256, "VC_DEPTH": 192}),
    "switch_lite": ("velo_switch_lite", ["rtl/net/velo_switch_lite.v"]),  # velo_nic SWITCH_LITE (NP = 1)
    "nic": ("velo_nic", None),        # everything, NP = 2
    "pcie7_rx": ("velo_pcie7_rx", ["rtl/board/xc7/velo_pcie7_rx.v"]),     # 7-series PCIe board adapters
    "pcie7_tx": ("velo_pcie7_tx", ["rtl/board/xc7/velo_pcie7_tx.v"]),
    "pcie7_irq": ("velo_pcie7_irq", ["rtl/board/xc7/velo_pcie7_irq.v"]),
    "atu": ("velo_atu", ["rtl/rma/velo_atu.v"]),                  # RMA units (docs/rma.md)
    "rma_cmd": ("velo_rma_cmd", ["rtl/rma/velo_rma_cmd.v"]),
    "rma_notify": ("velo_rma_notify", ["rtl/rma/velo_rma_notify.v"]),
    "dma_rd": ("velo_dma_rd", ["rtl/rma/velo_dma_rd.v"]),        # RMA DMA read engine (docs/rma-dma.md)
    "rma_init": ("velo_rma_init", ["rtl/rma/velo_rma_init.v", "rtl/rma/velo_rma_init_issue.v",
                                  "rtl/rma/velo_rma_init_rsp.v"]),  # RMA initiator engine (docs/rma.md §6)
    "rma_tgt": ("velo_rma_tgt", ["rtl/rma/velo_rma_tgt.v", "rtl/rma/velo_rma_tgt_get.v"]),  # RMA target engine (docs/rma.md §6)
    "rma": ("velo_rma", None),        # the whole RMA unit as velo_nic instantiates it (docs/rma.md §6)
}
PAPER = {"requester": (88, 143), "completer": (274, 365), "regfile": (222, 199)}
CHECK_UNITS = ("requester", "completer", "regfile", "link", "switch", "switch_lite", "nic")  # --check; nic last
FAMILIES = {
    "xc4v": "synth_xilinx -family xc4v -top {top}",
    "xc7": "synth_xilinx -family xc7 -top {top}",
    "ice40": "synth_ice40 -top {top}",
}


def all_rtl():
    out = []
    for d, _, files in os.walk(os.path.join(ROOT, "rtl")):
        out += [os.path.relpath(os.path.join(d, f), ROOT) for f in files if f.endswith(".v")]
    return sorted(out)


def synth(unit, family):
    top, files = UNITS[unit][:2]
    params = UNITS[unit][2] if len(UNITS[unit]) > 2 else {}
    files = all_rtl() if files is None else files + COMMON
    os.makedirs(LOG, exist_ok=True)
    log = os.path.join(LOG, "%s_%s.log" % (unit, family))
    # all at once: each chparam elaborates the module, and a half-changed set may fail its checks
    chparam = ("chparam %s %s; " % (" ".join("-set %s %d" % kv for kv in sorted(params.items())), top)) if params else ""
    script = "read_verilog -Irtl/include %s; %s%s; stat" % (" ".join(files), chparam,
                                                           FAMILIES[family].format(top=top))
    r = subprocess.run(["yosys", "-l", log, "-q", "-p", script], cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError("yosys failed for %s/%s (see %s):\n%s" % (unit, family, log, r.stdout[-2000:]))
    with open(log) as f:
        text = f.read()
    # the last statistics: with submodules, the "design hierarchy" block holds the totals (the
    # per-module blocks before it must not be added again); without, the top module's block
    stat = text[text.rfind("Printing statistics"):]
    if "=== design hierarchy ===" in stat:
        stat = stat[stat.rfind("=== design hierarchy ==="):]
    else:
        stat = stat[stat.rfind("=== %s ===" % top):]
    cells = {}
    for m in re.finditer(r"^\s+(\S+)\s+(\d+)\s*$", stat, re.M):
        cells[m.group(1)] = cells.get(m.group(1), 0) + int(m.group(2))
    if family == "ice40":
        ff = sum(v for k, v in cells.items() if k.startswith("SB_DFF"))
        lut = cells.get("SB_LUT4", 0)
        ram = cells.get("SB_RAM40_4K", 0)
    else:
        ff = sum(v for k, v in cells.items() if re.match(r"^FD", k))
        lut = sum(v for k, v in cells.items() if re.match(r"^LUT\d$", k)) + cells.get("INV", 0)
        ram = sum(v for k, v in cells.items() if k.startswith("RAMB"))
    lutram = sum(v for k, v in cells.items() if re.match(r"^RAM(32|64|16|128|256)", k))
    return {"ff": ff, "lut": lut, "bram": ram, "lutram": lutram, "log": text}


def count(cells, family):
    """(flip-flops, LUTs) of a cell list as synth() counts them."""
    if family == "ice40":
        return (sum(v for k, v in cells.items() if k.startswith("SB_DFF")), cells.get("SB_LUT4", 0))
    return (sum(v for k, v in cells.items() if re.match(r"^FD", k)),
            sum(v for k, v in cells.items() if re.match(r"^LUT\d$", k)) + cells.get("INV", 0))


def blocks(text, family):
    """Per instance below the top of a synth() log (the design is not flattened): [(instance's
    module, ff, lut)] with everything below it, the top's own logic last."""
    stat = text[text.rfind("Printing statistics"):]
    own = {}
    for m in re.finditer(r"^=== (\S+) ===\n(.*?)(?=^=== |\Z)", stat, re.M | re.S):
        cells = {}
        for c in re.finditer(r"^\s+(\S+)\s+(\d+)\s*$", m.group(2), re.M):
            cells[c.group(1)] = cells.get(c.group(1), 0) + int(c.group(2))
        own[m.group(1)] = count(cells, family)
    tree = stat[stat.rfind("=== design hierarchy ==="):].split("\n")[2:]
    rows = []  # (depth, module, instances)
    for line in tree:
        m = re.match(r"^(\s+)(\S+)\s+(\d+)$", line)
        if not m:
            break
        rows.append((len(m.group(1)) // 2, m.group(2), int(m.group(3))))
    out = []
    for i, (d, mod, n) in enumerate(rows):
        if d != rows[0][0] + 1:
            continue
        ff, lut, mult = n * own[mod][0], n * own[mod][1], {d: n}
        for d2, mod2, n2 in rows[i + 1:]:
            if d2 <= d:
                break
            mult[d2] = mult[d2 - 1] * n2
            ff += mult[d2] * own[mod2][0]
            lut += mult[d2] * own[mod2][1]
        out.append((mod.split("\\")[-1] if mod.startswith("$paramod$") else mod.split("\\")[1] if "\\" in mod else mod,
                    ff, lut))
    top = rows[0][1]
    out.append((top + " (own)", own[top][0], own[top][1]))
    return out


def main(argv):
    if "--check" in argv:
        ok = True
        # the whole NIC (with RMA, ~45k LUTs) takes minutes per family: one family checks that Yosys
        # takes it, its units are checked on all three, and make bench synthesizes it for xc4v
        checks = [(u, f) for u in CHECK_UNITS[:-1] for f in FAMILIES] + [("nic", "xc7")]
        only = [a for a in argv if not a.startswith("--")]
        if only:
            if only[0] not in CHECK_UNITS:
                print("synth.py: --check takes one of %s" % ", ".join(CHECK_UNITS))
                return 2
            checks = [(u, f) for u, f in checks if u == only[0]]
        for unit, fam in checks:
            try:
                r = synth(unit, fam)
                print("synth ok: %-10s %-6s ff=%d lut=%d bram=%d" % (unit, fam, r["ff"], r["lut"], r["bram"]))
            except RuntimeError as e:
                print(e)
                ok = False
        return 0 if ok else 1
    if "--blocks" in argv:
        unit = [a for a in argv if not a.startswith("--")][0]
        r = synth(unit, "xc4v")
        for mod, ff, lut in blocks(r["log"], "xc4v"):
            print("syn.xc4v %-26s %5d ff %5d lut" % (mod, ff, lut))
        print("syn.xc4v %-26s %5d ff %5d lut" % (unit + " (total)", r["ff"], r["lut"]))
        return 0
    if "--bench" in argv:
        for unit in ("requester", "completer", "regfile", "counters", "link", "switch", "link256", "switch256", "rma",
                     "nic"):
            r = synth(unit, "xc4v")
            if unit in PAPER:
                print("# %s on xc4v: paper Table 1: %d flip-flops, %d LUTs" % (unit, *PAPER[unit]))
            print("BENCH syn.xc4v.%s.ff %d ff" % (unit, r["ff"]))
            print("BENCH syn.xc4v.%s.lut %d lut" % (unit, r["lut"]))
            print("BENCH syn.xc4v.%s.bram %d ramb16" % (unit, r["bram"]))
            if unit == "regfile":  # the register file per block (front, blocks, the bus's OR)
                for mod, ff, lut in blocks(r["log"], "xc4v"):
                    name = re.sub(r"[^A-Za-z0-9_]+", "_", mod).strip("_")
                    print("BENCH syn.xc4v.regfile.%s.ff %d ff" % (name, ff))
                    print("BENCH syn.xc4v.regfile.%s.lut %d lut" % (name, lut))
        return 0
    print("%-10s %-6s %6s %6s %6s %7s" % ("unit", "family", "FF", "LUT", "BRAM", "LUTRAM"))
    for unit in UNITS:
        for fam in FAMILIES:
            r = synth(unit, fam)
            print("%-10s %-6s %6d %6d %6d %7d" % (unit, fam, r["ff"], r["lut"], r["bram"], r["lutram"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
