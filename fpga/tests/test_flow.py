"""Checks of the FPGA flow's own logic (ctest fpga.flow_selftest): the timing check that makes
the iCE40 flow fail, the PLL and UART settings, the build verification and the report tables.
Runs in a second; the real bitstream build is the test fpga.ice40_bitstream."""
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import zlib
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
FPGA = os.path.dirname(HERE)


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


flow = load("velo_ice40_flow", os.path.join(FPGA, "ice40", "flow.py"))
sta = load("velo_sdf_sta", os.path.join(FPGA, "ice40", "sdf_sta.py"))
report = load("velo_fpga_report", os.path.join(FPGA, "report.py"))


def clocks(**kw):
    return {"fmax": {k: {"achieved": a, "constraint": c} for k, (a, c) in kw.items()}}


class TimingCheck(unittest.TestCase):
    def test_pass(self):
        r = flow.check_timing(clocks(clk=(29.5, 27.0), rx=(110.0, 27.0)), 27.0)
        self.assertEqual(r["clk"], (29.5, 27.0))

    def test_nic_clock_too_slow_fails(self):
        with self.assertRaisesRegex(flow.FlowError, "timing failed: clk: 26.90"):
            flow.check_timing(clocks(clk=(26.9, 27.0), rx=(110.0, 27.0)), 27.0)

    def test_other_clock_too_slow_fails(self):
        with self.assertRaisesRegex(flow.FlowError, "timing failed: rx"):
            flow.check_timing(clocks(clk=(40.0, 27.0), rx=(20.0, 27.0)), 27.0)

    def test_missing_nic_clock_fails(self):
        with self.assertRaisesRegex(flow.FlowError, "not in the timing report"):
            flow.check_timing(clocks(rx=(110.0, 27.0)), 27.0)

    def test_wrong_constraint_fails(self):
        with self.assertRaisesRegex(flow.FlowError, "constrained to 12.00"):
            flow.check_timing(clocks(clk=(40.0, 12.0)), 27.0)

    def test_empty_report_fails(self):
        with self.assertRaises(flow.FlowError):
            flow.check_timing({}, 27.0)


ICEPLL_27 = """
F_PLLIN:    12.000 MHz (given)
F_PLLOUT:   27.000 MHz (requested)
F_PLLOUT:   27.000 MHz (achieved)

FEEDBACK: SIMPLE
F_PFD:   12.000 MHz
F_VCO:  864.000 MHz

DIVR:  0 (4'b0000)
DIVF: 71 (7'b1000111)
DIVQ:  5 (3'b101)

FILTER_RANGE: 1 (3'b001)
"""


class PllAndUart(unittest.TestCase):
    def test_parse(self):
        p = flow.parse_icepll(ICEPLL_27, 27.0)
        self.assertEqual((p["DIVR"], p["DIVF"], p["DIVQ"], p["FILTER_RANGE"]), (0, 71, 5, 1))

    def test_inexact_frequency_fails(self):
        with self.assertRaisesRegex(flow.FlowError, "cannot make 27.1 MHz"):
            flow.parse_icepll(ICEPLL_27.replace("27.000 MHz (achieved)", "27.000 MHz (achieved)"), 27.1)

    def test_inconsistent_parameters_fail(self):
        with self.assertRaisesRegex(flow.FlowError, "give"):
            flow.parse_icepll(ICEPLL_27.replace("DIVF: 71", "DIVF: 70"), 27.0)

    @unittest.skipUnless(shutil.which("icepll"), "icepll not installed")
    def test_icepll_agrees_with_the_pll_formula(self):
        for mhz in (24.0, 27.0, 30.0, 33.0, flow.DEFAULT_MHZ):
            p = flow.pll_params(mhz)
            self.assertAlmostEqual(12.0 * (p["DIVF"] + 1) / 2 ** p["DIVQ"], mhz, places=3)

    def test_uart_divider(self):
        self.assertEqual(flow.uart_divider(27.0, 3000000), 9)
        self.assertEqual(flow.uart_divider(30.0, 3000000), 10)
        with self.assertRaisesRegex(flow.FlowError, "cannot make"):
            flow.uart_divider(26.0, 3000000)  # 8.67 cycles per bit: 4 % off

    def test_default_clock_agrees_with_makefile_and_top(self):
        # the board's clock (docs/board-guide.md): flow.py, fpga/Makefile and velo_ice40_top's defaults
        self.assertEqual(flow.DEFAULT_MHZ, 48.0)
        with open(os.path.join(FPGA, "Makefile")) as f:
            m = re.search(r"^ICE40_MHZ\s*\?=\s*(\S+)", f.read(), re.M)
        self.assertIsNotNone(m)
        self.assertEqual(float(m.group(1)), flow.DEFAULT_MHZ)
        self.assertEqual(flow.uart_divider(flow.DEFAULT_MHZ, 3000000), 16)
        with open(os.path.join(FPGA, "..", "rtl", "board", "ice40", "velo_ice40_top.v")) as f:
            top = f.read()
        divf = int(re.search(r"PLL_DIVF\s*=\s*7'd(\d+)", top).group(1))
        divq = int(re.search(r"PLL_DIVQ\s*=\s*3'd(\d+)", top).group(1))
        self.assertAlmostEqual(12.0 * (divf + 1) / 2 ** divq, flow.DEFAULT_MHZ, places=3)
        self.assertEqual(int(re.search(r"CLKS_PER_BIT\s*=\s*(\d+)", top).group(1)), 16)


class Cells(unittest.TestCase):
    def test_last_stat_block_counts(self):
        log = ("Printing statistics.\n   SB_LUT4  10\n"
               "Printing statistics.\n\n=== velo_ice40_top ===\n   SB_LUT4    5021\n   SB_DFFE  800\n"
               "   SB_RAM40_4K   22\n")
        c = flow.yosys_cells(log)
        self.assertEqual(c, {"SB_LUT4": 5021, "SB_DFFE": 800, "SB_RAM40_4K": 22})


def summary(fmax=29.0):
    return {"clock_mhz": 27.0, "uart_baud": 3000000, "nic_clock": "clk",
            "params": {"NODE_BITS": 4, "VPID_BITS": 4, "COUNTERS": 0, "LINK_COUNTERS": 0},
            "fmax_mhz": {"clk": fmax, "rx": 100.0}, "constraint_mhz": {"clk": 27.0, "rx": 27.0},
            "utilization": {"ICESTORM_LC": {"used": 6700, "available": 7680},
                            "ICESTORM_RAM": {"used": 22, "available": 32}},
            "cells": {"SB_LUT4": 5000, "SB_DFF": 100, "SB_DFFE": 900},
            "bitstream": "build/fpga/ice40/velo_ice40.bin", "bitstream_bytes": 20,
            "seconds": {"total": 100, "synth": 40, "pnr": 55, "pack": 5}}


class Verify(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.out = os.path.join(self.dir, "ice40")
        os.makedirs(self.out)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, s, data, man=True):
        with open(os.path.join(self.out, "summary.json"), "w") as f:
            json.dump(s, f)
        binf = os.path.join(self.out, "velo_ice40.bin")
        with open(binf, "wb") as f:
            f.write(data)
        if man and data:
            with open(binf + ".json", "w") as f:
                json.dump(flow.manifest(binf, *flow.spec_ids()), f)

    def test_good_build(self):
        self.write(summary(), b"\xff\x00\x00\xff" + flow.SYNC_WORD + b"\x00" * 12)
        with redirect_stdout(io.StringIO()):
            flow.verify(self.out, 27.0)

    def test_missing_bitstream(self):
        self.write(summary(), b"")
        os.remove(os.path.join(self.out, "velo_ice40.bin"))
        with self.assertRaisesRegex(flow.FlowError, "no bitstream"):
            flow.verify(self.out, 27.0)

    def test_not_a_bitstream(self):
        self.write(summary(), b"\x00" * 20)
        with self.assertRaisesRegex(flow.FlowError, "not the iCE40 bitstream"):
            flow.verify(self.out, 27.0)

    def test_timing_failure_recorded(self):
        self.write(summary(fmax=26.0), b"\xff\x00\x00\xff" + flow.SYNC_WORD + b"\x00" * 12)
        with self.assertRaisesRegex(flow.FlowError, "timing failed"):
            flow.verify(self.out, 27.0)

    def test_manifest_written_for_the_board(self):
        self.write(summary(), b"\xff\x00\x00\xff" + flow.SYNC_WORD + b"\x00" * 12)
        with open(os.path.join(self.out, "velo_ice40.bin.json")) as f:
            m = json.load(f)
        version, spec_hash = flow.spec_ids()
        self.assertEqual(m["velo_manifest"], 1)
        self.assertEqual((m["board"], m["part"], m["bitstream"]), (flow.BOARD_NAME, flow.BOARD_PART, "velo_ice40.bin"))
        self.assertEqual((int(m["design_version"], 16), int(m["spec_hash"], 16)), (version, spec_hash))
        self.assertEqual(m["crc32"], "0x%08x" % (zlib.crc32(b"\xff\x00\x00\xff" + flow.SYNC_WORD + b"\x00" * 12)))

    def test_missing_manifest(self):
        self.write(summary(), b"\xff\x00\x00\xff" + flow.SYNC_WORD + b"\x00" * 12, man=False)
        with self.assertRaisesRegex(flow.FlowError, "no manifest"):
            flow.verify(self.out, 27.0)

    def test_stale_manifest(self):
        data = b"\xff\x00\x00\xff" + flow.SYNC_WORD + b"\x00" * 12
        self.write(summary(), data)
        with open(os.path.join(self.out, "velo_ice40.bin"), "wb") as f:
            f.write(data[:-1] + b"\x01")  # rebuilt, same size, manifest left behind
        with self.assertRaisesRegex(flow.FlowError, "manifest .* does not match"):
            flow.verify(self.out, 27.0)

    def test_other_clock(self):
        self.write(summary(), b"\xff\x00\x00\xff" + flow.SYNC_WORD + b"\x00" * 12)
        with self.assertRaisesRegex(flow.FlowError, "built for 27 MHz, not 30"):
            flow.verify(self.out, 30.0)


def sdf(cells, nets):
    """A small SDF in nextpnr's layout: cells (type, instance, [iopath], [setup]) and nets
    (source pin, destination pin, ps)."""
    out = ['(DELAYFILE', '  (SDFVERSION "3.0")', '  (TIMESCALE 1ps)', '  (CELL', '    (CELLTYPE "top")',
           '    (INSTANCE )', '    (DELAY', '      (ABSOLUTE']
    out += ["        (INTERCONNECT %s %s (%d:%d:%d) (%d:%d:%d))" % (a, b, d, d, d, d, d, d) for a, b, d in nets]
    out += ['      )', '    )', '    )']
    for ctype, inst, iop, setups in cells:
        out += ['  (CELL', '    (CELLTYPE "%s")' % ctype, '    (INSTANCE %s)' % inst, '    (DELAY', '      (ABSOLUTE']
        out += ["        (IOPATH %s %s (%d:%d:%d) (%d:%d:%d))" % (a, b, d, d, d, d, d, d) for a, b, d in iop]
        out += ['      )', '    )']
        if setups:
            out += ['    (TIMINGCHECK']
            for pin, ck, d in setups:
                out += ["      (SETUPHOLD (posedge %s) (posedge %s) (%d:%d:%d) (0:0:0))" % (pin, ck, d, d, d),
                        "      (SETUPHOLD (negedge %s) (posedge %s) (%d:%d:%d) (0:0:0))" % (pin, ck, d, d, d)]
            out += ['    )']
        out += ['    )']
    out += [')']
    return "\n".join(out).splitlines(True)


def ff(inst):
    return ("ICESTORM_LC", inst, [("CLK", "O", 540)], [("I0", "CLK", 470)])


def lut(inst, d=450):
    return ("ICESTORM_LC", inst, [("I0", "O", d), ("I1", "O", d - 50)], [])


class EndpointProfile(unittest.TestCase):
    # u_board.u_nic.u_a.q -> lut1 -> lut2 -> u_board.u_nic.u_b.g_x.r (PLL domain, 0.54 + 1.0 + 0.45 +
    # 1.2 + 0.45 + 0.8 + 0.47 = 4.91 ns); u_a.q -> u_a.s directly (0.54 + 0.3 + 0.47 = 1.31 ns);
    # a register of the other clock feeding u_b.r2 is not timed; a block RAM read port is a start
    # point and its address input an endpoint
    CELLS = [ff("u_board.u_nic.u_a.q_DFFLC"), ff("u_board.u_nic.u_a.s_DFFLC"),
             lut("u_board.u_nic.u_a.l1_LC"), lut("u_board.u_nic.u_b.l2_LC"),
             ff("u_board.u_nic.u_b.g_x.r_DFFLC"), ff("u_board.u_nic.u_b.r2_DFFLC"), ff("u_board.u_el.w_DFFLC"),
             ("ICESTORM_RAM", "u_board.u_nic.u_b.mem.0.0_RAM", [("RCLK", "RDATA_0", 2146)], [("RADDR_0", "RCLK", 100)]),
             ("SB_GB", "$gbuf_u_pll_pllout_a", [("USER_SIGNAL_TO_GLOBAL_BUFFER", "GLOBAL_BUFFER_OUTPUT", 0)], []),
             ("SB_GB", "$gbuf_net_rx_clk$glb_clk", [("USER_SIGNAL_TO_GLOBAL_BUFFER", "GLOBAL_BUFFER_OUTPUT", 0)], [])]
    PLL = "$gbuf_u_pll_pllout_a/GLOBAL_BUFFER_OUTPUT"
    RXC = "$gbuf_net_rx_clk$glb_clk/GLOBAL_BUFFER_OUTPUT"
    NETS = [(PLL, "u_board.u_nic.u_a.q_DFFLC/CLK", 0), (PLL, "u_board.u_nic.u_a.s_DFFLC/CLK", 0),
            (PLL, "u_board.u_nic.u_b.g_x.r_DFFLC/CLK", 0), (PLL, "u_board.u_nic.u_b.r2_DFFLC/CLK", 0),
            (PLL, "u_board.u_nic.u_b.mem.0.0_RAM/RCLK", 0), (RXC, "u_board.u_el.w_DFFLC/CLK", 0),
            ("u_board.u_nic.u_a.q_DFFLC/O", "u_board.u_nic.u_a.l1_LC/I0", 1000),
            ("u_board.u_nic.u_a.l1_LC/O", "u_board.u_nic.u_b.l2_LC/I0", 1200),
            ("u_board.u_nic.u_b.l2_LC/O", "u_board.u_nic.u_b.g_x.r_DFFLC/I0", 800),
            ("u_board.u_nic.u_a.q_DFFLC/O", "u_board.u_nic.u_a.s_DFFLC/I0", 300),
            ("u_board.u_el.w_DFFLC/O", "u_board.u_nic.u_b.r2_DFFLC/I0", 9000),
            ("u_board.u_nic.u_b.mem.0.0_RAM/RDATA_0", "u_board.u_nic.u_b.mem.0.0_RAM/RADDR_0", 3000)]

    def test_arrivals_units_and_domains(self):
        p = sta.profile(sdf(self.CELLS, self.NETS), clock="pll", period_ns=4.0)
        self.assertEqual(p["clock_source"], self.PLL)
        self.assertEqual(p["endpoints"], 3)  # q has no input path, r2 only one from another clock
        self.assertAlmostEqual(p["worst_ns"], 5.246)  # the RAM: 2.146 + 3.0 + 0.1
        self.assertEqual(p["over"], 2)
        self.assertEqual(p["units"]["u_nic.u_a"], [0, 1, 1.31])
        self.assertEqual(p["units"]["u_nic.u_b"], [2, 2, 5.25])  # g_x and mem fold into u_b
        p = sta.profile(sdf(self.CELLS, self.NETS), clock="pll", period_ns=5.0)
        self.assertEqual(p["over"], 1)
        self.assertEqual(p["worst_endpoint"], "u_board.u_nic.u_b.mem.0.0_RAM")
        lines = sta.table(p)
        self.assertIn("1 of 3 register endpoints over 5.0 ns (worst 5.25 ns", lines[0])
        self.assertEqual(lines[3], "| u_nic.u_b | 1 | 2 | 5.25 |")

    def test_the_longer_of_two_paths(self):
        nets = [n for n in self.NETS if "RAM" not in n[1]]
        p = sta.profile(sdf(self.CELLS, nets), clock="pll", period_ns=10.0)
        self.assertAlmostEqual(p["worst_ns"], 4.91)
        self.assertEqual(p["worst_start"], "u_board.u_nic.u_a.q_DFFLC")
        self.assertEqual(p["over"], 0)

    def test_unknown_clock_and_loop_fail(self):
        with self.assertRaisesRegex(sta.StaError, "matches 0"):
            sta.profile(sdf(self.CELLS, self.NETS), clock="nosuch")
        loop = self.NETS + [("u_board.u_nic.u_b.l2_LC/O", "u_board.u_nic.u_a.l1_LC/I1", 100)]
        with self.assertRaisesRegex(sta.StaError, "loop"):
            sta.profile(sdf(self.CELLS, loop), clock="pll")

    def test_flow_requires_agreement_with_nextpnr(self):
        d = tempfile.mkdtemp()
        try:
            f = os.path.join(d, "x.sdf")
            with open(f, "w") as fh:
                fh.writelines(sdf(self.CELLS, self.NETS))
            p = flow.endpoint_profile(f, 1000.0 / 5.246)
            self.assertEqual(p["endpoints"], 3)
            with self.assertRaisesRegex(flow.FlowError, "not nextpnr's Fmax"):
                flow.endpoint_profile(f, 150.0)
        finally:
            shutil.rmtree(d)


class FlowCommandLine(unittest.TestCase):
    def test_unbuildable_clock_stops_before_synthesis(self):
        d = tempfile.mkdtemp()
        try:
            r = subprocess.run([sys.executable, os.path.join(FPGA, "ice40", "flow.py"), "--build", d, "--mhz", "26"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("FAILED", r.stdout)
            self.assertFalse(os.path.exists(os.path.join(d, "ice40", "synth.log")))
        finally:
            shutil.rmtree(d)


class ReportTables(unittest.TestCase):
    def test_board_lines(self):
        text = "\n".join(report.board_lines(summary()))
        self.assertIn("ICESTORM_LC     6700 /  7680  (87 %)", text)
        self.assertIn("| NIC clock (PLL) | 27.00 MHz | 29.00 MHz |", text)
        self.assertIn("NODE_BITS 4, VPID_BITS 4", text)
        s = summary()
        s["endpoints"] = {"period_ns": 10.0, "endpoints": 2700, "over": 1100, "worst_ns": 15.7,
                          "worst_start": "a", "worst_endpoint": "b", "units": {"u_nic.u_x": [1000, 2000, 15.7],
                                                                              "u_nic.u_y": [100, 700, 11.0]}}
        text = "\n".join(report.board_lines(s))
        self.assertIn("1100 of 2700 register endpoints over 10.0 ns (worst 15.70 ns: a -> b)", text)
        self.assertIn("| u_nic.u_x | 1000 | 2000 | 15.70 |\n| u_nic.u_y | 100 | 700 | 11.00 |", text)

    def test_board_not_built(self):
        self.assertIn("not built", "\n".join(report.board_lines(None)))

    def test_unit_tables_against_the_fx60(self):
        class Mod:
            UNITS = {"requester": None, "nic": None}
            PAPER = {"requester": (88, 143)}
            FAMILIES = {"xc4v": "", "xc7": "", "ice40": ""}
        res = {}
        for u, (ff, lut) in {"requester": (85, 230), "nic": (5056, 10112)}.items():
            for f in Mod.FAMILIES:
                res[(u, f)] = {"ff": ff, "lut": lut, "bram": 7, "lutram": 0}
        text = report.tables(Mod, res, None)
        self.assertIn("| requester | 85 | 230 | 7 |", text)
        self.assertIn("88 / 143", text)
        self.assertIn("10.00 % / 20.00 %", text)  # 5056 and 10112 of 50,560
        self.assertIn("20.0 % of its LUTs, 10.0 % of its flip-flops", text)


if __name__ == "__main__":
    unittest.main()
