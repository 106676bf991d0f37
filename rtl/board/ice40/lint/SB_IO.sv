// LINT-ONLY STUB of the iCE40 I/O primitive for `verilator --lint-only` of velo_ice40_top
// (scripts/rtl_lint.sh). Never synthesised or simulated: Yosys uses its own cell model
// (ice40/cells_sim.v). Ports and parameters are the subset the board RTL uses (Lattice iCE40
// technology library, SB_IO). The .sv extension keeps it out of the RTL file lists (Yosys would
// reject a redefinition of its own cell model); Verilator finds it with -y. Inputs are unused by
// design:
/* verilator lint_off UNUSED */
module SB_IO #(
    parameter [5:0] PIN_TYPE = 6'b000000
) (
    output wire PACKAGE_PIN,
    input  wire OUTPUT_CLK,
    input  wire D_OUT_0,
    input  wire D_OUT_1
);
    assign PACKAGE_PIN = D_OUT_0;
endmodule
/* verilator lint_on UNUSED */
