// What every register block of the spec shares (its generated velo_rb_<block>_regs.v instantiates
// it through VELO_RB_HDR, velo_rb.vh): the block's select on the register bus (0x100 bytes at BASE,
// registered with PIPE), the register the address names in it, whether a write of it is asked for
// or done, and the block's answer on the bus: its read data rd (which the block gives only while
// sel: the header and its registers, VELO_RB_READ) and whether a write is taken (a register of WR,
// or of CMD when the block says ok).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_rb.vh"
module velo_rb_hdr #(
    parameter [20:0]  BASE      = 21'd0,  // the block's offset in BAR0 (0x100 aligned)
    parameter [20:0]  SPEC_NEXT = 21'd0,  // the spec's NEXT
    parameter [20:0]  NEXT      = 21'd0,  // NEXT as read: SPEC_NEXT, or 0 (the last block)
    parameter [63:0]  WR        = 64'd0,  // bit i: the register at 4*i takes every write
    parameter [63:0]  CMD       = 64'd0,  // bit i: the register at 4*i takes a write when ok
    parameter integer PIPE      = 0       // 1: the select is registered (the front then waits a cycle)
) (
    input  wire                      clk,
    input  wire                      rst,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [`VELO_RB_REQ_W-1:0] rb_req,  // the register bus (velo_rb.vh)
    /* verilator lint_on UNUSEDSIGNAL */
    output wire [`VELO_RB_RSP_W-1:0] rb_rsp,
    output wire                      sel,   // the address is in the block
    output wire [5:0]                off,   // ... at this register (its DW in the block)
    output wire                      we,    // a write of it is done in this cycle
    output wire                      wreq,  // ... is asked for (held while the access waits)
    input  wire [31:0]               rd,    // the block's read data (0 without sel)
    input  wire                      ok     // a write of the CMD register off is taken
);
    `VELO_CHECK_PIPE
    `VELO_CHECK(g_check_next, NEXT == 0 || NEXT == SPEC_NEXT, "velo_rb_hdr: NEXT must be 0 (the last block) or the spec's")
    velo_rb_range #(.LO(BASE), .HI({11'd0, BASE} + 32'h100), .PIPE(PIPE)) u_sel (
        .clk(clk), .rst(rst), .rb_req(rb_req), .hit(sel));
    /* verilator lint_off UNUSEDSIGNAL */
    wire [20:0] addr = `VELO_RB_ADDR(rb_req);
    /* verilator lint_on UNUSEDSIGNAL */
    assign off  = addr[7:2];
    assign wreq = `VELO_RB_WR_EN(rb_req) && sel;
    assign we   = `VELO_RB_WR_GO(rb_req) && sel;
    wire wack = sel && (WR[off] || (CMD[off] && ok));
    assign rb_rsp = `VELO_RB_RSP(rd, wack, 1'b0, 1'b0, 1'b0);
endmodule
`default_nettype wire
