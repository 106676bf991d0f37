// LINT-ONLY STUB of a Xilinx primitive/IP for `verilator --lint-only` of the board top
// (scripts/rtl_lint.sh). Never synthesised or simulated: Vivado uses its own UNISIM library and the
// generated IP. Ports and parameters are the subset the VELO board RTL uses, as documented in
// UG953 (7 Series Libraries Guide). The .sv extension keeps it out of the RTL file lists (Yosys
// would reject a redefinition of its own cell models); Verilator still finds it with -y.
// Inputs are unused by design:
/* verilator lint_off UNUSED */
module MMCME2_BASE #(
    parameter BANDWIDTH = "OPTIMIZED",
    parameter real CLKFBOUT_MULT_F = 5.0,
    parameter real CLKFBOUT_PHASE = 0.0,
    parameter real CLKIN1_PERIOD = 0.0,
    parameter real CLKOUT0_DIVIDE_F = 1.0,
    parameter real CLKOUT0_DUTY_CYCLE = 0.5,
    parameter real CLKOUT0_PHASE = 0.0,
    parameter integer DIVCLK_DIVIDE = 1,
    parameter real REF_JITTER1 = 0.0,
    parameter STARTUP_WAIT = "FALSE"
) (
    output wire CLKFBOUT,
    output wire CLKFBOUTB,
    output wire CLKOUT0,
    output wire CLKOUT0B,
    output wire LOCKED,
    input  wire CLKFBIN,
    input  wire CLKIN1,
    input  wire PWRDWN,
    input  wire RST
);
    assign CLKFBOUT = CLKIN1;
    assign CLKFBOUTB = ~CLKIN1;
    assign CLKOUT0 = CLKIN1;
    assign CLKOUT0B = ~CLKIN1;
    assign LOCKED = ~RST;
endmodule
/* verilator lint_on UNUSED */
