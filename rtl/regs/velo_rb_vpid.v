// Register block VPID and its tables: the per-vpid mailbox table (VPID_TABLE) and the read pointer
// in each vpid's user page (VPID_USER.MB_RP), a queue table (velo_rb_qtable) whose writer is the
// completer. An MB_CFG write is reported to the interrupts as it is asked for (it disarms the vpid).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_rb.vh"
`include "velo_ports.vh"
module velo_rb_vpid #(
    parameter integer VPID_BITS = 8,  // vpid width: 2^VPID_BITS table rows and user pages (spec range)
    parameter integer PIPE      = 0   // 1: the decodes are registered (the front waits a cycle)
) (
    `include "velo_rb_vpid_ports.vh"
    // an MB_CFG write of this vpid is asked for (the interrupts disarm it)
    output wire                 mbcfg_wr,
    output wire [VPID_BITS-1:0] mbcfg_vpid,
    `VELO_RB_PORTS  // clk, rst and the register bus (velo_rb.vh)
);
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK_PIPE
    localparam [31:0] NV32 = 1 << VPID_BITS;
    wire [`VELO_RB_RSP_W-1:0] r_rsp, t_rsp;
    velo_rb_vpid_regs #(.PIPE(PIPE), .NUM_VPIDS(NV32)) u_regs (.clk(clk), .rst(rst), .rb_req(rb_req), .rb_rsp(r_rsp));
    velo_rb_qtable #(.VPID_BITS(VPID_BITS), .TBL_LO(`VELO_TBL_VPID_TABLE_BASE), .RP_OFF(`VELO_TBL_VPID_USER_MB_RP),
                     .EN_LSB(`VELO_TBL_VPID_TABLE_MB_CFG_ENABLE_LSB),
                     .LOG2_LSB(`VELO_TBL_VPID_TABLE_MB_CFG_LOG2_LINES_LSB), .PIPE(PIPE)) u_tbl (
        .clk(clk), .rst(rst), .rb_req(rb_req), .rb_rsp(t_rsp), `VELO_QTBL_CONNECT,
        .cfg_wr(mbcfg_wr), .cfg_vpid(mbcfg_vpid));
    assign rb_rsp = r_rsp | t_rsp;
endmodule
`default_nettype wire
