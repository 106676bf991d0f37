#!/usr/bin/env python3
"""Register-to-register timing profile of a placed and routed iCE40 design, from the SDF file
nextpnr-ice40 writes (--sdf): for every register endpoint of one clock domain, its worst
arrival (clock-to-output, every cell and routing delay on the way, setup), grouped by the
design unit the endpoint belongs to.

nextpnr's report names one critical path per clock. This says how many endpoints miss a given
period and where they are, so the distance to a clock target can be measured per unit, not only
as one Fmax (docs/board-guide.md, "What limits the clock").

  sdf_sta.py FILE.sdf [--clock SUBSTR] [--period-ns P] [--depth N]

The model is nextpnr's own: the SDF carries its delays (IOPATH: a cell's input-to-output and
clock-to-output delays; INTERCONNECT: every routed connection; SETUPHOLD: the setup time of a
register or block-RAM input). Clock network delays are not in it and nextpnr's analysis ignores
them too, so the worst endpoint found here is nextpnr's critical path (the flow checks that they
agree). Start points and endpoints are the pins of cells clocked by the same clock source (the
cell driving their clock pin, e.g. the PLL's global buffer): paths between clock domains are not
timed, as in nextpnr.
"""
import argparse
import collections
import re
import sys

_IC = re.compile(r"\(INTERCONNECT (\S+) (\S+) \((\d+):(\d+):(\d+)\)")
_IO = re.compile(r"\(IOPATH (\S+) (\S+) \((\d+):(\d+):(\d+)\)")
_SU = re.compile(r"\(SETUPHOLD \(posedge (\S+)\) \(posedge (\S+)\) \((\d+):(\d+):(\d+)\)")
CLOCK_PINS = ("CLK", "RCLK", "WCLK")


class StaError(Exception):
    pass


def parse(lines):
    """The timing graph of an SDF file (lines): (edges, starts, setups, clock_src).
    edges: pin -> [(pin, ps)]; starts: pin -> (clock pin, clock-to-output ps);
    setups: pin -> (clock pin, setup ps); clock_src: cell/clock pin -> the pin driving it.
    Pins are 'instance/port' with the SDF's escapes removed; delays are the max values."""
    edges = collections.defaultdict(list)
    starts, setups, clock_src = {}, {}, {}
    inst = None
    for raw in lines:
        line = raw.strip().replace("\\", "")
        if line.startswith("(INSTANCE"):
            inst = line[len("(INSTANCE"):].rstrip(")").strip()
        elif line.startswith("(INTERCONNECT"):
            m = _IC.match(line)
            if not m:
                raise StaError("unreadable INTERCONNECT: %s" % line[:120])
            src, dst, d = m.group(1), m.group(2), int(m.group(5))
            if dst.rsplit("/", 1)[-1] in CLOCK_PINS:
                clock_src[dst] = src
            else:
                edges[src].append((dst, d))
        elif line.startswith("(IOPATH"):
            m = _IO.match(line)
            if not m:
                raise StaError("unreadable IOPATH in %s: %s" % (inst, line[:120]))
            a, b, d = m.group(1), m.group(2), int(m.group(5))
            if a in CLOCK_PINS:
                starts[inst + "/" + b] = (inst + "/" + a, d)
            else:
                edges[inst + "/" + a].append((inst + "/" + b, d))
        elif line.startswith("(SETUPHOLD (posedge"):
            m = _SU.match(line)
            if m:
                p = inst + "/" + m.group(1)
                s = int(m.group(4))
                if p not in setups or setups[p][1] < s:
                    setups[p] = (inst + "/" + m.group(2), s)
    return edges, starts, setups, clock_src


def arrivals(edges, starts):
    """Worst arrival (ps) of every pin reached from the start points, and the pin each came from
    (longest paths over the graph in topological order; a combinational loop is an error)."""
    indeg = collections.Counter()
    for dsts in edges.values():
        for d, _ in dsts:
            indeg[d] += 1
    nodes = set(edges) | set(starts)
    arr = {p: d for p, (_, d) in starts.items()}
    pred = {}
    q = collections.deque(p for p in nodes if indeg[p] == 0)
    seen = 0
    while q:
        p = q.popleft()
        seen += 1
        a = arr.get(p)
        for d, dl in edges.get(p, ()):
            if a is not None and arr.get(d, -1) < a + dl:
                arr[d] = a + dl
                pred[d] = p
            indeg[d] -= 1
            if indeg[d] == 0:
                q.append(d)
    if any(v > 0 for v in indeg.values()):
        raise StaError("combinational loop in the timing graph")
    return arr, pred


def unit_of(inst, depth):
    """The design unit of a cell: its hierarchical instance path (the dotted prefix of the cell
    name Yosys derived from the net it drives), without generate blocks and memory arrays (they
    belong to the unit around them), at most depth levels."""
    parts = inst.split(".")[:-1]
    keep = []
    for p in parts:
        if p.startswith("g_") or p == "mem" or p.isdigit():
            continue
        keep.append(p)
    return ".".join(keep[:depth]) or "(top)"


def profile(lines, clock="pll", period_ns=10.0, depth=6, strip="u_board."):
    """Endpoint profile of the clock domain whose clock source contains `clock`: a dict with the
    domain, the period, the number of register endpoints and of those over the period, the worst
    arrival and its path, and per unit [over, endpoints, worst ns]."""
    edges, starts, setups, clock_src = parse(lines)
    domains = collections.Counter(src for pin, src in clock_src.items())
    names = [d for d in domains if clock in d]
    if len(names) != 1:
        raise StaError("clock source '%s' matches %d of the design's clock sources (%s)"
                       % (clock, len(names), ", ".join(sorted(domains))))
    dom = names[0]
    starts = {p: v for p, v in starts.items() if clock_src.get(v[0]) == dom}
    arr, pred = arrivals(edges, starts)
    ends = {}
    for p, (ck, s) in setups.items():
        if clock_src.get(ck) != dom or p not in arr:
            continue
        inst = p.rsplit("/", 1)[0]
        t = arr[p] + s
        if inst not in ends or ends[inst][0] < t:
            ends[inst] = (t, p)
    if not ends:
        raise StaError("no register endpoints in the clock domain of %s" % dom)
    per = int(round(period_ns * 1000))
    units = {}
    for inst, (t, _) in ends.items():
        name = inst[len(strip):] if inst.startswith(strip) else inst
        u = units.setdefault(unit_of(name, depth), [0, 0, 0.0])
        u[0] += t > per
        u[1] += 1
        u[2] = max(u[2], t / 1000.0)
    worst_inst, (worst, wpin) = max(ends.items(), key=lambda kv: kv[1][0])
    path = [wpin]
    while path[-1] in pred:
        path.append(pred[path[-1]])
    return {"clock_source": dom, "period_ns": period_ns, "endpoints": len(ends),
            "over": sum(1 for t, _ in ends.values() if t > per), "worst_ns": worst / 1000.0,
            "worst_endpoint": worst_inst, "worst_start": path[-1].rsplit("/", 1)[0],
            "units": {k: [v[0], v[1], round(v[2], 2)] for k, v in units.items()}}


def table(p, limit=None):
    """The profile as text lines: units with endpoints over the period first."""
    out = ["%d of %d register endpoints over %.1f ns (worst %.2f ns: %s -> %s)"
           % (p["over"], p["endpoints"], p["period_ns"], p["worst_ns"], p["worst_start"], p["worst_endpoint"])]
    rows = sorted(p["units"].items(), key=lambda kv: (-kv[1][0], -kv[1][2]))
    out.append("| unit | endpoints over %.1f ns | endpoints | worst ns |" % p["period_ns"])
    out.append("|---|---:|---:|---:|")
    for name, (n, tot, w) in rows[:limit]:
        out.append("| %s | %d | %d | %.2f |" % (name, n, tot, w))
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sdf")
    ap.add_argument("--clock", default="pll", help="a substring of the clock source's name (default: pll)")
    ap.add_argument("--period-ns", type=float, default=10.0, help="period to count endpoints against (default 10)")
    ap.add_argument("--depth", type=int, default=6, help="unit path levels kept (default 6)")
    a = ap.parse_args(argv)
    try:
        with open(a.sdf) as f:
            p = profile(f, a.clock, a.period_ns, a.depth)
    except (OSError, StaError) as e:
        print("sdf_sta: %s" % e, file=sys.stderr)
        return 1
    print("\n".join(table(p)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
