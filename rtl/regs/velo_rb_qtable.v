// A per-vpid queue table of a register block: the mailbox table (VPID_TABLE, velo_rb_vpid) and the
// notification queue table (RMA_NQ_TABLE, velo_rb_rma) have the same rows, 16 bytes a vpid at
// TBL_LO (base LO and HI, CFG {LOG2, ENABLE}, WP), and a read pointer in each vpid's user page at
// offset RP_OFF. They live in block RAM with one read port shared with the unit that writes the
// queue (it has priority) and, for the write pointer, one write port shared with it (again with
// priority: a software write of WP waits). The table is cleared by the table clear after reset
// (every vpid disabled). A software write of a row or read pointer is reported (sw_wr) the cycle
// after it lands; a CFG write as it is asked for (cfg_wr).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_rb.vh"
`include "velo_ports.vh"
module velo_rb_qtable #(
    parameter integer VPID_BITS = 8,           // vpid width: 2^VPID_BITS rows and user pages (spec range)
    parameter [20:0]  TBL_LO    = `VELO_TBL_VPID_TABLE_BASE,  // the table's offset in BAR0
    parameter [20:0]  RP_OFF    = `VELO_TBL_VPID_USER_MB_RP,  // the read pointer's offset in a user page
    parameter integer EN_LSB    = `VELO_TBL_VPID_TABLE_MB_CFG_ENABLE_LSB,      // CFG's fields
    parameter integer LOG2_LSB  = `VELO_TBL_VPID_TABLE_MB_CFG_LOG2_LINES_LSB,  // (5 bits)
    parameter integer PIPE      = 0            // 1: the decodes are registered (the front waits a cycle)
) (
    // the queue writer's port (velo_ports.vh): a row (data the cycle after tbl_re), its write
    // pointer updates, and software's writes of a row or read pointer (sw_wr)
    `VELO_QTBL_TABLE_PORTS(VPID_BITS),
    output wire                      cfg_wr,      // a CFG write of ...
    output wire [VPID_BITS-1:0]      cfg_vpid,    // ... this vpid is asked for
    `VELO_RB_PORTS  // clk, rst and the register bus (velo_rb.vh): the table's answer
);
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK(g_check_rp_off, RP_OFF < 4096 && RP_OFF % 4 == 0, "velo_rb_qtable: RP_OFF must be a DW offset in a 4 KiB page")
    `VELO_CHECK(g_check_cfg, EN_LSB >= 0 && EN_LSB < 32 && LOG2_LSB >= 0 && LOG2_LSB <= 27, "velo_rb_qtable: the CFG fields must lie in a DW")
    `VELO_CHECK_PIPE
    localparam integer NV     = 1 << VPID_BITS;
    localparam [20:0]  USR_LO = `VELO_TBL_VPID_USER_BASE;
    localparam integer RP_PAGE = {11'd0, RP_OFF};

    wire in_tbl, in_user;
    velo_rb_range #(.LO(TBL_LO), .HI({11'd0, TBL_LO} + NV * 16), .PIPE(PIPE)) u_dtbl (
        .clk(clk), .rst(rst), .rb_req(rb_req), .hit(in_tbl));
    velo_rb_range #(.LO(USR_LO), .HI({11'd0, USR_LO} + NV * 4096), .PAGE(RP_PAGE), .PIPE(PIPE)) u_dusr (
        .clk(clk), .rst(rst), .rb_req(rb_req), .hit(in_user));
    /* verilator lint_off UNUSEDSIGNAL */
    wire [20:0] addr  = `VELO_RB_ADDR(rb_req);
    wire [31:0] wd    = `VELO_RB_WDATA(rb_req);  // bits 5:0 go nowhere (the base's LO)
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
    wire wp_busy = wr_tbl && tfield == 2'd3 && wp_we;  // the queue writer has the port
    wire we_lo   = init || (wr_tbl && tfield == 2'd0);
    wire we_hi   = init || (wr_tbl && tfield == 2'd1);
    wire we_cfg  = init || (wr_go && in_tbl && tfield == 2'd2);
    wire we_wp   = wp_we || init || (wr_tbl && tfield == 2'd3);
    wire we_rp   = init || (wr_en && in_user);
    wire [VPID_BITS-1:0] wa = init ? `VELO_RB_INIT_IDX(rb_req, VPID_BITS) : tv;

    assign cfg_wr   = wr_tbl && tfield == 2'd2;
    assign cfg_vpid = tv;

    wire [25:0] r_lo;
    wire [31:0] r_hi;
    wire [5:0]  r_cfg;
    wire [5:0]  cfg_w = {wd[LOG2_LSB +: 5], wd[EN_LSB]};

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
        .re(ram_re), .raddr(ram_ra), .rdata(tbl_wp));
    velo_sdp_ram #(.W(17), .ADDR_W(VPID_BITS)) u_rp (
        .clk(clk), .we(we_rp), .waddr(wa), .wdata(wd[16:0]),
        .re(ram_re), .raddr(ram_ra), .rdata(tbl_rp));

    assign tbl_base = {r_hi, r_lo};
    assign tbl_en   = r_cfg[0];
    assign tbl_log2 = r_cfg[5:1];

    // the registers as software sees them (valid the cycle after the read starts)
    reg [31:0] t_rd;
    always @(*) begin
        t_rd = 32'd0;
        if (in_user) begin
            t_rd = {15'd0, tbl_rp};
        end else if (in_tbl) begin
            case (tfield)
                2'd0: t_rd = {r_lo, 6'd0};
                2'd1: t_rd = r_hi;
                2'd2: begin
                    t_rd[EN_LSB]         = r_cfg[0];
                    t_rd[LOG2_LSB +: 5] = r_cfg[5:1];
                end
                default: t_rd = {15'd0, tbl_wp};
            endcase
        end
    end
    // the table's answer: reads from RAM; a write of WP waits while the queue writer has the port
    assign rb_rsp = `VELO_RB_RSP(t_rd, in_tbl || in_user, in_tbl || in_user, sw_re, wp_busy);

    // software's writes of a row or read pointer, reported the cycle after they land
    wire                sw_go = wr_go && (in_tbl || in_user);
    reg                 sw_wr_q;
    reg [VPID_BITS-1:0] sw_wr_vpid_q;
    always @(posedge clk) begin
        if (rst) sw_wr_q <= 1'b0;
        else     sw_wr_q <= sw_go;
        if (rst)        sw_wr_vpid_q <= {VPID_BITS{1'b0}};
        else if (sw_go) sw_wr_vpid_q <= tv;
    end
    assign sw_wr      = sw_wr_q;
    assign sw_wr_vpid = sw_wr_vpid_q;
endmodule
`default_nettype wire
