// A window of a register block (spec: an rw register with "count"): N counters held elsewhere, one
// DW each from the block's register WOFF on (velo_rb_counters_regs, velo_rb_rma_regs). The address
// names counter idx, read through the block's answer; a write clears it: clr for a cycle, with the
// counter in clr_idx (registered).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_rb.vh"
module velo_rb_window #(
    parameter [20:0]  BASE  = 21'd0,  // the block's offset in BAR0
    parameter [5:0]   WOFF  = 6'd4,   // the first counter's register (DW in the block)
    parameter [31:0]  N     = 32'd1,  // counters
    parameter integer IDX_W = 1       // counter index width: 2^IDX_W >= N, at most 19
) (
    input  wire                      clk,
    input  wire                      rst,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [`VELO_RB_REQ_W-1:0] rb_req,  // the register bus (velo_rb.vh)
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [5:0]                off,     // the block's register (velo_rb_hdr)
    input  wire                      we,      // ... written in this cycle
    output wire                      win,     // the address is in the window
    output wire [IDX_W-1:0]          idx,     // ... of this counter
    output reg                       clr,     // clear counter clr_idx (a write)
    output reg  [IDX_W-1:0]          clr_idx
);
    `VELO_CHECK(g_check_idx_w, (1 << IDX_W) >= N && IDX_W <= 19, "velo_rb_window: IDX_W must give 2^IDX_W >= N, at most 19")
    /* verilator lint_off UNUSEDSIGNAL */
    wire [20:0] win_off = `VELO_RB_ADDR(rb_req) - (BASE + {13'd0, WOFF, 2'b00});
    /* verilator lint_on UNUSEDSIGNAL */
    assign win = (off >= WOFF) && ({26'd0, off} < {26'd0, WOFF} + N);
    assign idx = win_off[2 +: IDX_W];
    always @(posedge clk) begin
        if (rst) begin
            clr     <= 1'b0;
            clr_idx <= {IDX_W{1'b0}};
        end else begin
            clr <= we && win;
            if (we && win) clr_idx <= idx;
        end
    end
endmodule
`default_nettype wire
