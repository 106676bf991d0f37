// The register bus's decode of one address range [LO, HI) (a table of a register block), as it is
// or (PIPE) registered: the front then waits a cycle after each address change. With PAGE >= 0
// only the offset PAGE of every 4 KiB page in the range is taken (the user pages' registers).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_rb.vh"
module velo_rb_range #(
    parameter [20:0]  LO   = 21'h8000,  // first byte offset in BAR0 of the range
    parameter [31:0]  HI   = 32'h9000,  // the offset after it: LO < HI <= 2^VELO_BAR_REGS_BITS
    parameter integer PAGE = -1,        // -1: every address; 0..4092 (DW aligned): that offset in each 4 KiB page
    parameter integer PIPE = 0          // 1: the decode is registered (hit a cycle after addr)
) (
    input  wire        clk,
    input  wire        rst,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [`VELO_RB_REQ_W-1:0] rb_req,  // the register bus (its address)
    /* verilator lint_on UNUSEDSIGNAL */
    output wire        hit
);
    // LO aligned to the range's size rounded up to a power of two (2^K, as every table's is): the
    // range is the addresses whose bits 20:K are LO's and whose bits K-1:0 stay below the size
    `VELO_CHECK(g_check_range, HI > {11'd0, LO} && HI <= (32'd1 << `VELO_BAR_REGS_BITS), "velo_rb_range: [LO, HI) must be non-empty and inside BAR0")
    `VELO_CHECK(g_check_page, PAGE == -1 || (PAGE >= 0 && PAGE < 4096 && PAGE % 4 == 0), "velo_rb_range: PAGE must be -1 or a DW offset in a 4 KiB page (0..4092)")
    `VELO_CHECK_PIPE
    localparam [31:0]  SIZE = HI - {11'd0, LO};
    localparam integer K    = (SIZE > 1) ? $clog2(SIZE) : 1;
    localparam [31:0]  S2   = 32'd1 << K;
    localparam [21:0]  LO22 = {1'b0, LO};
    wire [20:0] addr = `VELO_RB_ADDR(rb_req);
    wire [21:0] a22 = {1'b0, addr};
    wire        unused_a = &{1'b0, a22};  // bits K-1:0 only with the size below 2^K
    wire        in_rng;
    generate
        if ((LO22 & (S2[21:0] - 22'd1)) != 22'd0) begin : g_any  // LO not aligned: two compares
            assign in_rng = (addr >= LO) && ({11'd0, addr} < HI);
        end else if (SIZE == S2) begin : g_pow2
            assign in_rng = (a22[21:K] == LO22[21:K]);
        end else begin : g_part
            wire [31:0] low = {{(32-K){1'b0}}, addr[K-1:0]};
            assign in_rng = (a22[21:K] == LO22[21:K]) && (low < SIZE);
        end
    endgenerate
    wire d;
    generate
        if (PAGE >= 0) begin : g_page
            localparam [11:0] PO = PAGE[11:0];
            assign d = in_rng && (addr[11:0] == PO);
        end else begin : g_all
            assign d = in_rng;
        end
        if (PIPE != 0) begin : g_pipe
            reg q;
            always @(posedge clk) begin
                if (rst) q <= 1'b0;
                else     q <= d;
            end
            assign hit = q;
        end else begin : g_comb
            assign hit = d;
            wire unused_clk = &{1'b0, clk, rst};
        end
    endgenerate
endmodule
`default_nettype wire
