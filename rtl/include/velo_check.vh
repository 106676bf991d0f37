// Checks in the RTL itself (issue 19), one line each, for every module that includes this file.
//
// `VELO_CHECK(g_name, ok, "text"): a parameter check at elaboration. It stands where a generate
// item may stand (the module body or inside a generate region); g_name names its generate block
// (unique in the module, e.g. g_check_np). When the constant expression ok is false, elaboration
// stops: Verilator and Yosys report text with $error (Verilator adds "In instance <path>", Yosys
// the file and line; neither formats %m or arguments in an elaboration task, so text is a plain
// string that names the module and the parameter); any other tool (strict Verilog-2005) stops
// on the instance of velo_check_failed, a module that does not exist, inside block g_name.
//
// `VELO_ASSERT(clk, rst, ok, "text"): a simulation-only invariant (BaseJump style): at every
// rising edge of clk outside reset (rst low) the expression ok, of the values before the edge,
// must hold; otherwise the simulation prints "VELO_ASSERT <instance path>: text" and stops
// ($stop: a Verilated model aborts, so its bench fails). Synthesis (SYNTHESIS defined: Yosys,
// Vivado) never sees it. It stands where a module item may stand.
`ifndef VELO_CHECK_VH
`define VELO_CHECK_VH

`ifdef VERILATOR
`define VELO_CHECK_STOP(TEXT) $error(TEXT);
`elsif YOSYS
`define VELO_CHECK_STOP(TEXT) $error(TEXT);
`else
`define VELO_CHECK_STOP(TEXT) velo_check_failed u_check_failed ();
`endif

`define VELO_CHECK(NAME, OK, TEXT) if (!(OK)) begin : NAME `VELO_CHECK_STOP(TEXT) end

`ifdef SYNTHESIS
`define VELO_ASSERT(CLK, RST, OK, TEXT)
`else
`define VELO_ASSERT(CLK, RST, OK, TEXT) \
    always @(posedge CLK) if (!(RST) && !(OK)) begin $display("VELO_ASSERT %m: %s", TEXT); $stop; end
`endif

// Network ports of a NIC (velo_nic, velo_switch, velo_switch_lite): route code 0 is the local
// port, codes 1..NP the network ports, and the all-ones code stays invalid (docs/routing.md), so
// 2^PB >= NP + 2; the 14-bit route field and the NET.PORTS register allow PB up to 3: NP <= 6.
`define VELO_NP_MAX 6

`endif
