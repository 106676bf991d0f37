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
// must hold; otherwise the simulation prints "VELO_ASSERT: text" and stops ($stop: Verilator
// adds the file and line, and a Verilated model aborts, so its bench fails). text names the
// module; the instance path (%m) is left out because it gives a Verilated model scope objects,
// which Verilator 5.006 erases through the thread's current context when the model is destroyed:
// a bench holding several models in contexts of their own (tb_link, the simulated cluster) then
// hangs at its end. Synthesis (SYNTHESIS defined: Yosys, Vivado) never sees it. It stands where
// a module item may stand.
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
    always @(posedge CLK) if (!(RST) && !(OK)) begin $display("VELO_ASSERT: %s", TEXT); $stop; end
`endif

// Checks of the parameters that many modules share, one definition each: the text names the
// parameter (Verilator names the instance, Yosys the file and line of the use). The spec ranges
// need velo_spec.vh included before the use.
`define VELO_CHECK_FLAG(NAME, P, TEXT) `VELO_CHECK(NAME, (P) == 0 || (P) == 1, TEXT)
`define VELO_CHECK_PIPE `VELO_CHECK_FLAG(g_check_pipe, PIPE, "PIPE must be 0 or 1")
`define VELO_CHECK_LINK_W `VELO_CHECK(g_check_link_w, LINK_W == 16 || LINK_W == 32 || LINK_W == 64, "LINK_W must be 16, 32 or 64")
`define VELO_CHECK_TLP_W `VELO_CHECK(g_check_tlp_w, TLP_W == 64 || TLP_W == 128, "TLP_W must be 64 or 128")
`define VELO_CHECK_NVC `VELO_CHECK(g_check_nvc, NVC >= 1 && NVC <= 4, "NVC must be 1..4 (the VC field is 2 bits)")
`define VELO_CHECK_MAX_AREA `VELO_CHECK(g_check_max_area, MAX_AREA >= 64 && MAX_AREA <= 256 && MAX_AREA % 8 == 0, "MAX_AREA must be 64..256, a multiple of 8")
`define VELO_CHECK_NODE_BITS `VELO_CHECK(g_check_node_bits, NODE_BITS >= `VELO_MIN_NODE_BITS && NODE_BITS <= `VELO_MAX_NODE_BITS, "NODE_BITS outside the spec's range")
`define VELO_CHECK_VPID_BITS `VELO_CHECK(g_check_vpid_bits, VPID_BITS >= `VELO_MIN_VPID_BITS && VPID_BITS <= `VELO_MAX_VPID_BITS, "VPID_BITS outside the spec's range")
// the parameters velo_link hands to both of its halves (velo_link_tx, velo_link_rx)
`define VELO_CHECK_LINK_HALF `VELO_CHECK_LINK_W `VELO_CHECK_NVC `VELO_CHECK_MAX_AREA `VELO_CHECK_PIPE \
    `VELO_CHECK(g_check_cub, CUB >= 0 && CUB <= 3, "CUB must be 0..3")
`define VELO_CHECK_NP `VELO_CHECK(g_check_np, NP >= 1 && NP <= `VELO_NP_MAX, "NP (network ports) must be 1..VELO_NP_MAX (6)")

// Network ports of a NIC (velo_nic, velo_switch, velo_switch_lite): route code 0 is the local
// port, codes 1..NP the network ports, and the all-ones code stays invalid (docs/routing.md), so
// 2^PB >= NP + 2; the 14-bit route field and the NET.PORTS register allow PB up to 3: NP <= 6.
`define VELO_NP_MAX 6

`endif
