// Register block VPID and its tables: the per-vpid mailbox table (VPID_TABLE) and the read pointer
// in each vpid's user page (VPID_USER.MB_RP), in block RAM with one read port shared with the
// completer (the completer has priority) and, for the write pointer, one write port shared with
// the completer (again with priority). The table is cleared while rb_init runs (every vpid
// disabled). A software write of a row or read pointer is reported (sw_wr) the cycle after it
// lands; an MB_CFG write is reported to the interrupts as it is asked for (it disarms the vpid).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
module velo_rb_vpid #(
    parameter integer VPID_BITS = 8,  // vpid width: 2^VPID_BITS table rows and user pages (spec range)
    parameter integer PIPE      = 0   // 1: the decodes are registered (the front waits a cycle)
) (
    input  wire                 clk,
    input  wire                 rst,
    // the register bus (velo_rb_front)
    input  wire [20:0]          rb_addr,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [31:0]          rb_wdata,     // bits 5:0 go nowhere (MB_BASE_LO)
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                 rb_wr_en,
    input  wire                 rb_wr_go,
    input  wire                 rb_rd_en,
    input  wire                 rb_init,
    input  wire [VPID_BITS-1:0] rb_init_idx,
    output wire [31:0]          rb_rdata,
    output wire                 rb_wack,
    output wire                 rb_wwait,
    output wire                 rb_rram,
    output wire                 rb_rgo,
    // the completer's port
    input  wire                 tbl_re,
    input  wire [VPID_BITS-1:0] tbl_vpid,
    output wire [57:0]          tbl_base,
    output wire                 tbl_en,
    output wire [4:0]           tbl_log2,
    output wire [16:0]          tbl_wp,
    output wire [16:0]          tbl_rp,
    input  wire                 wp_we,
    input  wire [VPID_BITS-1:0] wp_vpid,
    input  wire [16:0]          wp_data,
    output reg                  sw_wr,        // software wrote the table or read pointer of ...
    output reg  [VPID_BITS-1:0] sw_wr_vpid,   // ... this vpid
    // an MB_CFG write of this vpid is asked for (the interrupts disarm it)
    output wire                 mbcfg_wr,
    output wire [VPID_BITS-1:0] mbcfg_vpid
);
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK_PIPE
    localparam integer NV = 1 << VPID_BITS;
    localparam [20:0] TBL_LO = `VELO_TBL_VPID_TABLE_BASE;
    localparam [20:0] USR_LO = `VELO_TBL_VPID_USER_BASE;

    wire [31:0] r_rd;
    wire        r_wack;
    wire        unused_sel;
    localparam [31:0] NV32 = NV;
    velo_rb_vpid_regs #(.PIPE(PIPE), .NUM_VPIDS(NV32)) u_regs (
        .clk(clk), .rst(rst), .rb_addr(rb_addr), .rb_wdata(rb_wdata), .rb_wr_en(rb_wr_en),
        .rb_wr_go(rb_wr_go), .rb_sel(unused_sel), .rb_rdata(r_rd), .rb_wack(r_wack));

    wire in_tbl, in_user;
    velo_rb_range #(.LO(TBL_LO), .HI({11'd0, TBL_LO} + NV * 16), .PIPE(PIPE)) u_dtbl (
        .clk(clk), .rst(rst), .addr(rb_addr), .hit(in_tbl));
    velo_rb_range #(.LO(USR_LO), .HI({11'd0, USR_LO} + NV * 4096), .PAGE(0), .PIPE(PIPE)) u_dusr (
        .clk(clk), .rst(rst), .addr(rb_addr), .hit(in_user));
    wire [VPID_BITS-1:0] tv = in_user ? rb_addr[12 +: VPID_BITS] : rb_addr[4 +: VPID_BITS];
    wire [1:0] tfield = rb_addr[3:2];

    wire sw_re   = rb_rd_en && (in_tbl || in_user) && !tbl_re;
    wire ram_re  = tbl_re || sw_re;
    wire [VPID_BITS-1:0] ram_ra = tbl_re ? tbl_vpid : tv;
    wire wr_tbl  = rb_wr_en && in_tbl;
    wire wr_user = rb_wr_en && in_user;
    wire wp_busy = wr_tbl && tfield == 2'd3 && wp_we;  // the completer has the port
    wire we_lo   = rb_init || (wr_tbl && tfield == 2'd0);
    wire we_hi   = rb_init || (wr_tbl && tfield == 2'd1);
    wire we_cfg  = rb_init || (rb_wr_go && in_tbl && tfield == 2'd2);
    wire we_wp   = wp_we || rb_init || (wr_tbl && tfield == 2'd3);
    wire we_rp   = rb_init || wr_user;
    wire [VPID_BITS-1:0] wa = rb_init ? rb_init_idx : tv;
    wire [31:0] wd = rb_wdata;

    assign rb_wwait   = wp_busy;
    assign rb_rram    = in_tbl || in_user;
    assign rb_rgo     = sw_re;
    assign rb_wack    = r_wack || in_tbl || in_user;
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

    // the RAM-backed registers as software sees them (valid the cycle after rb_rgo)
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
    assign rb_rdata = r_rd | t_rd;

    always @(posedge clk) begin
        if (rst) begin
            sw_wr      <= 1'b0;
            sw_wr_vpid <= {VPID_BITS{1'b0}};
        end else begin
            sw_wr <= rb_wr_go && (in_tbl || in_user);
            if (rb_wr_go && (in_tbl || in_user)) sw_wr_vpid <= tv;
        end
    end
endmodule
`default_nettype wire
