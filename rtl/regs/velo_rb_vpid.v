// Register block VPID and its tables: the per-vpid mailbox table (VPID_TABLE) and the read pointer
// in each vpid's user page (VPID_USER.MB_RP), in block RAM with one read port shared with the
// completer (the completer has priority) and, for the write pointer, one write port shared with
// the completer (again with priority). The table is cleared by the table clear after reset
// (every vpid disabled). A software write of a row or read pointer is reported (sw_wr) the cycle after it
// lands; an MB_CFG write is reported to the interrupts as it is asked for (it disarms the vpid).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_rb.vh"
module velo_rb_vpid #(
    parameter integer VPID_BITS = 8,  // vpid width: 2^VPID_BITS table rows and user pages (spec range)
    parameter integer PIPE      = 0   // 1: the decodes are registered (the front waits a cycle)
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire [`VELO_RB_REQ_W-1:0] rb_req,  // the register bus (velo_rb.vh)
    output wire [`VELO_RB_RSP_W-1:0] rb_rsp,  // ... and the block's answer
    `include "velo_rb_vpid_ports.vh"
    // an MB_CFG write of this vpid is asked for (the interrupts disarm it)
    output wire                 mbcfg_wr,
    output wire [VPID_BITS-1:0] mbcfg_vpid
);
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK_PIPE
    localparam integer NV = 1 << VPID_BITS;
    localparam [20:0] TBL_LO = `VELO_TBL_VPID_TABLE_BASE;
    localparam [20:0] USR_LO = `VELO_TBL_VPID_USER_BASE;

    localparam [31:0] NV32 = NV;
    wire [`VELO_RB_RSP_W-1:0] r_rsp;
    velo_rb_vpid_regs #(.PIPE(PIPE), .NUM_VPIDS(NV32)) u_regs (.clk(clk), .rst(rst), .rb_req(rb_req), .rb_rsp(r_rsp));

    wire in_tbl, in_user;
    velo_rb_range #(.LO(TBL_LO), .HI({11'd0, TBL_LO} + NV * 16), .PIPE(PIPE)) u_dtbl (
        .clk(clk), .rst(rst), .rb_req(rb_req), .hit(in_tbl));
    velo_rb_range #(.LO(USR_LO), .HI({11'd0, USR_LO} + NV * 4096), .PAGE(0), .PIPE(PIPE)) u_dusr (
        .clk(clk), .rst(rst), .rb_req(rb_req), .hit(in_user));
    /* verilator lint_off UNUSEDSIGNAL */
    wire [20:0] addr  = `VELO_RB_ADDR(rb_req);
    wire [31:0] wd    = `VELO_RB_WDATA(rb_req);  // bits 5:0 go nowhere (MB_BASE_LO)
    /* verilator lint_on UNUSEDSIGNAL */
    wire        wr_en = `VELO_RB_WR_EN(rb_req);
    wire        wr_go = `VELO_RB_WR_GO(rb_req);
    wire        init  = `VELO_RB_INIT(rb_req);
    wire [VPID_BITS-1:0] tv = in_user ? addr[12 +: VPID_BITS] : addr[4 +: VPID_BITS];
    wire [1:0] tfield = addr[3:2];

    wire sw_re   = `VELO_RB_RD_EN(rb_req) && (in_tbl || in_user) && !tbl_re;
    wire ram_re  = tbl_re || sw_re;
    wire [VPID_BITS-1:0] ram_ra = tbl_re ? tbl_vpid : tv;
    wire wr_tbl  = wr_en && in_tbl;
    wire wr_user = wr_en && in_user;
    wire wp_busy = wr_tbl && tfield == 2'd3 && wp_we;  // the completer has the port
    wire we_lo   = init || (wr_tbl && tfield == 2'd0);
    wire we_hi   = init || (wr_tbl && tfield == 2'd1);
    wire we_cfg  = init || (wr_go && in_tbl && tfield == 2'd2);
    wire we_wp   = wp_we || init || (wr_tbl && tfield == 2'd3);
    wire we_rp   = init || wr_user;
    wire [VPID_BITS-1:0] wa = init ? `VELO_RB_INIT_IDX(rb_req, VPID_BITS) : tv;

    assign mbcfg_wr   = wr_tbl && tfield == 2'd2;
    assign mbcfg_vpid = tv;

    wire [25:0] r_lo;
    wire [31:0] r_hi;
    wire [5:0]  r_cfg;
    wire [16:0] r_wp, r_rp;
    wire [5:0]  cfg_w = {wd[`VELO_TBL_VPID_TABLE_MB_CFG_LOG2_LINES], wd[`VELO_TBL_VPID_TABLE_MB_CFG_ENABLE]};

    velo_sdp_ram #(.W(26), .ADDR_W(VPID_BITS)) u_lo (
        .clk(clk), .we(we_lo), .waddr(wa), .wdata(wd[31:6]),
        .re(ram_re), .raddr(ram_ra), .rdata(r_lo));
    velo_sdp_ram #(.W(32), .ADDR_W(VPID_BITS)) u_hi (
        .clk(clk), .we(we_hi), .waddr(wa), .wdata(wd),
        .re(ram_re), .raddr(ram_ra), .rdata(r_hi));
    velo_sdp_ram #(.W(6), .ADDR_W(VPID_BITS)) u_cfg (
        .clk(clk), .we(we_cfg), .waddr(wa), .wdata(cfg_w),
        .re(ram_re), .raddr(ram_ra), .rdata(r_cfg));
    velo_sdp_ram #(.W(17), .ADDR_W(VPID_BITS)) u_wp (
        .clk(clk), .we(we_wp), .waddr(wp_we ? wp_vpid : wa),
        .wdata(wp_we ? wp_data : wd[16:0]),
        .re(ram_re), .raddr(ram_ra), .rdata(r_wp));
    velo_sdp_ram #(.W(17), .ADDR_W(VPID_BITS)) u_rp (
        .clk(clk), .we(we_rp), .waddr(wa), .wdata(wd[16:0]),
        .re(ram_re), .raddr(ram_ra), .rdata(r_rp));

    assign tbl_base = {r_hi, r_lo};
    assign tbl_en   = r_cfg[0];
    assign tbl_log2 = r_cfg[5:1];
    assign tbl_wp   = r_wp;
    assign tbl_rp   = r_rp;

    // the RAM-backed registers as software sees them (valid the cycle after the read starts)
    reg [31:0] t_rd;
    always @(*) begin
        t_rd = 32'd0;
        if (in_user) begin
            t_rd = {15'd0, r_rp};
        end else if (in_tbl) begin
            case (tfield)
                2'd0: t_rd = {r_lo, 6'd0};
                2'd1: t_rd = r_hi;
                2'd2: begin
                    t_rd[`VELO_TBL_VPID_TABLE_MB_CFG_ENABLE]     = r_cfg[0];
                    t_rd[`VELO_TBL_VPID_TABLE_MB_CFG_LOG2_LINES] = r_cfg[5:1];
                end
                default: t_rd = {15'd0, r_wp};
            endcase
        end
    end
    // the block's answer: its registers', or the table's and user pages' (from RAM; a write of WP
    // waits while the completer has the port)
    assign rb_rsp = r_rsp | `VELO_RB_RSP(t_rd, in_tbl || in_user, in_tbl || in_user, sw_re, wp_busy);

    reg                 sw_wr_q;
    reg [VPID_BITS-1:0] sw_wr_vpid_q;
    assign sw_wr      = sw_wr_q;
    assign sw_wr_vpid = sw_wr_vpid_q;
    always @(posedge clk) begin
        if (rst) begin
            sw_wr_q      <= 1'b0;
            sw_wr_vpid_q <= {VPID_BITS{1'b0}};
        end else begin
            sw_wr_q <= wr_go && (in_tbl || in_user);
            if (wr_go && (in_tbl || in_user)) sw_wr_vpid_q <= tv;
        end
    end
endmodule
`default_nettype wire
