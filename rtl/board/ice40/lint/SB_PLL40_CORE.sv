// LINT-ONLY STUB of the iCE40 PLL primitive for `verilator --lint-only` of velo_ice40_top
// (scripts/rtl_lint.sh). Never synthesised or simulated: Yosys uses its own cell model
// (ice40/cells_sim.v) and nextpnr the real PLL. Ports and parameters are the subset the board RTL
// uses (Lattice iCE40 sysCLOCK PLL design and usage guide, TN1251). The .sv extension keeps it out
// of the RTL file lists (Yosys would reject a redefinition of its own cell model); Verilator finds
// it with -y. Inputs are unused by design:
/* verilator lint_off UNUSED */
module SB_PLL40_CORE #(
    parameter FEEDBACK_PATH = "SIMPLE",
    parameter [3:0] DIVR = 4'd0,
    parameter [6:0] DIVF = 7'd0,
    parameter [2:0] DIVQ = 3'd0,
    parameter [2:0] FILTER_RANGE = 3'd0
) (
    input  wire REFERENCECLK,
    output wire PLLOUTGLOBAL,
    output wire LOCK,
    input  wire RESETB,
    input  wire BYPASS
);
    assign PLLOUTGLOBAL = REFERENCECLK;
    assign LOCK         = RESETB;
endmodule
/* verilator lint_on UNUSED */
