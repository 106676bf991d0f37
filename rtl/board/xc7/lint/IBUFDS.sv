// LINT-ONLY STUB of a Xilinx primitive/IP for `verilator --lint-only` of the board top
// (scripts/rtl_lint.sh). Never synthesised or simulated: Vivado uses its own UNISIM library and the
// generated IP. Ports and parameters are the subset the VELO board RTL uses, as documented in
// UG953 (7 Series Libraries Guide). The .sv extension keeps it out of the RTL file lists (Yosys
// would reject a redefinition of its own cell models); Verilator still finds it with -y.
// Inputs are unused by design:
/* verilator lint_off UNUSED */
module IBUFDS #(
    parameter DIFF_TERM = "FALSE",
    parameter IOSTANDARD = "DEFAULT"
) (
    output wire O,
    input  wire I,
    input  wire IB
);
    assign O = I;
endmodule
/* verilator lint_on UNUSED */
