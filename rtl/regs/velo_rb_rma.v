// Register block RMA (docs/rma.md §5) and its tables: the notification queue table (RMA_NQ_TABLE)
// and NQ_RP in the user pages (RAMs like the mailbox table, cleared by the table clear after reset, read port
// and write-pointer port shared with velo_rma_notify, which has priority), the ATU's region and
// page tables (RMA_REGION, RMA_PTE: write-only, every write forwarded to the ATU's configuration
// port, waiting while it is busy clearing after reset) and the RMA counters (read through rcnt_*).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_rb.vh"
module velo_rb_rma #(
    parameter integer VPID_BITS   = 8,   // vpid width: 2^VPID_BITS queue table rows and user pages (spec range)
    parameter integer REGION_BITS = 8,   // ATU region index width (reported in CAPS; spec RMA_REGION_BITS range)
    parameter integer PTE_BITS    = 12,  // ATU page table index width (reported; spec RMA_PTE_BITS range)
    parameter integer RMA_MTU     = 48,  // data bytes per packet (reported; spec RMA_MTU range, a multiple of 8)
    parameter integer PIPE        = 0    // 1: the decodes are registered (the front waits a cycle)
) (
    input  wire                 clk,
    input  wire                 rst,
    `include "velo_rb_rma_ports.vh"
    input  wire [`VELO_RB_REQ_W-1:0] rb_req,  // the register bus (velo_rb.vh)
    output wire [`VELO_RB_RSP_W-1:0] rb_rsp   // ... and the block's answer
);
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK(g_check_region_bits, REGION_BITS >= `VELO_MIN_RMA_REGION_BITS && REGION_BITS <= `VELO_MAX_RMA_REGION_BITS, "velo_rb_rma: REGION_BITS outside the spec's RMA_REGION_BITS range")
    `VELO_CHECK(g_check_pte_bits, PTE_BITS >= `VELO_MIN_RMA_PTE_BITS && PTE_BITS <= `VELO_MAX_RMA_PTE_BITS, "velo_rb_rma: PTE_BITS outside the spec's RMA_PTE_BITS range")
    `VELO_CHECK(g_check_rma_mtu, RMA_MTU >= `VELO_MIN_RMA_MTU && RMA_MTU <= `VELO_MAX_RMA_MTU && RMA_MTU % 8 == 0, "velo_rb_rma: RMA_MTU outside the spec's range or not a multiple of 8")
    `VELO_CHECK_PIPE
    localparam integer NV   = 1 << VPID_BITS;
    localparam integer NRG  = 1 << REGION_BITS;
    localparam integer NPTE = 1 << PTE_BITS;
    localparam [20:0]  NQ_LO  = `VELO_TBL_RMA_NQ_TABLE_BASE;
    localparam [20:0]  USR_LO = `VELO_TBL_VPID_USER_BASE;
    localparam [20:0]  RG_LO  = `VELO_TBL_RMA_REGION_BASE;
    localparam [20:0]  PTE_LO = `VELO_TBL_RMA_PTE_BASE;
    localparam [31:0]  RGB32 = REGION_BITS, PTB32 = PTE_BITS, MTU32 = RMA_MTU;
    wire unused_rp = &{1'b0, RGB32[31:5], PTB32[31:5], MTU32[31:8]};

    wire [`VELO_RB_RSP_W-1:0] r_rsp;
    velo_rb_rma_regs #(.PIPE(PIPE), .RMA_REGION_BITS(REGION_BITS), .CNT_BASE_IDX_W(5), .CAPS_REGION_BITS(RGB32[4:0]),
                       .CAPS_PTE_BITS(PTB32[4:0]), .CAPS_MTU(MTU32[7:0])) u_regs (
        .clk(clk), .rst(rst), .rb_req(rb_req), .rb_rsp(r_rsp), .control_enable(rma_enable), .status_busy(rma_busy),
        .quiesce_region(rq_region), .quiesce_status_busy(rq_busy), .cnt_base(rcnt_data), .cnt_base_idx(rcnt_idx),
        .cnt_base_clr(rcnt_clr), .cnt_base_clr_idx(rcnt_clr_idx));

    wire in_nq, in_nqrp, in_rg, in_pte;
    velo_rb_range #(.LO(NQ_LO), .HI({11'd0, NQ_LO} + NV * 16), .PIPE(PIPE)) u_dnq (
        .clk(clk), .rst(rst), .rb_req(rb_req), .hit(in_nq));
    velo_rb_range #(.LO(USR_LO), .HI({11'd0, USR_LO} + NV * 4096), .PAGE(4), .PIPE(PIPE)) u_dnqrp (
        .clk(clk), .rst(rst), .rb_req(rb_req), .hit(in_nqrp));
    velo_rb_range #(.LO(RG_LO), .HI({11'd0, RG_LO} + NRG * 32), .PIPE(PIPE)) u_drg (
        .clk(clk), .rst(rst), .rb_req(rb_req), .hit(in_rg));
    velo_rb_range #(.LO(PTE_LO), .HI({11'd0, PTE_LO} + NPTE * 8), .PIPE(PIPE)) u_dpte (
        .clk(clk), .rst(rst), .rb_req(rb_req), .hit(in_pte));
    wire [20:0] addr    = `VELO_RB_ADDR(rb_req);
    wire [31:0] wd      = `VELO_RB_WDATA(rb_req);
    wire        wr_en   = `VELO_RB_WR_EN(rb_req);
    wire        init    = `VELO_RB_INIT(rb_req);
    wire [VPID_BITS-1:0] ntv = in_nqrp ? addr[12 +: VPID_BITS] : addr[4 +: VPID_BITS];
    wire [1:0]  tfield  = addr[3:2];
    wire [20:0] rg_off  = addr - RG_LO;
    wire [20:0] pte_off = addr - PTE_LO;
    wire unused_off = &{1'b0, rg_off, pte_off};

    // ATU table writes: forwarded one DW at a time
    wire acfg_wr = wr_en && (in_rg || in_pte);
    assign acfg_valid = acfg_wr;
    assign acfg_pte   = in_pte;
    assign acfg_idx   = in_pte ? pte_off[18:3] : {rg_off[20:5]};
    assign acfg_reg   = in_pte ? {2'b00, pte_off[2]} : rg_off[4:2];
    assign acfg_data  = wd;

    // notification queue table: the writer's reads and write-pointer updates have priority
    wire nq_sw_re = `VELO_RB_RD_EN(rb_req) && (in_nq || in_nqrp) && !nq_re;
    wire wr_nq    = wr_en && in_nq;
    wire nwp_busy = wr_nq && tfield == 2'd3 && nq_wp_we;  // the notification writer has the port
    wire nre = nq_re || nq_sw_re;
    wire [VPID_BITS-1:0] nra = nq_re ? nq_vpid : ntv;
    wire [VPID_BITS-1:0] nwa = init ? `VELO_RB_INIT_IDX(rb_req, VPID_BITS) : ntv;
    wire [5:0] ncfg_w = {wd[`VELO_TBL_RMA_NQ_TABLE_NQ_CFG_LOG2_ENTRIES], wd[`VELO_TBL_RMA_NQ_TABLE_NQ_CFG_ENABLE]};
    wire [25:0] n_lo;
    wire [31:0] n_hi;
    wire [5:0]  n_cfg;
    velo_sdp_ram #(.W(26), .ADDR_W(VPID_BITS)) u_nlo (
        .clk(clk), .we(init || (wr_nq && tfield == 2'd0)), .waddr(nwa),
        .wdata(wd[31:6]), .re(nre), .raddr(nra), .rdata(n_lo));
    velo_sdp_ram #(.W(32), .ADDR_W(VPID_BITS)) u_nhi (
        .clk(clk), .we(init || (wr_nq && tfield == 2'd1)), .waddr(nwa),
        .wdata(wd), .re(nre), .raddr(nra), .rdata(n_hi));
    velo_sdp_ram #(.W(6), .ADDR_W(VPID_BITS)) u_ncfg (
        .clk(clk), .we(init || (wr_nq && tfield == 2'd2)), .waddr(nwa),
        .wdata(ncfg_w), .re(nre), .raddr(nra), .rdata(n_cfg));
    velo_sdp_ram #(.W(17), .ADDR_W(VPID_BITS)) u_nwp (
        .clk(clk), .we(nq_wp_we || init || (wr_nq && tfield == 2'd3)),
        .waddr(nq_wp_we ? nq_wp_vpid : nwa),
        .wdata(nq_wp_we ? nq_wp_data : wd[16:0]),
        .re(nre), .raddr(nra), .rdata(nq_wp));
    velo_sdp_ram #(.W(17), .ADDR_W(VPID_BITS)) u_nrp (
        .clk(clk), .we(init || (wr_en && in_nqrp)), .waddr(nwa),
        .wdata(wd[16:0]), .re(nre), .raddr(nra), .rdata(nq_rp));
    assign nq_base = {n_hi, n_lo};
    assign nq_en   = n_cfg[0];
    assign nq_log2 = n_cfg[5:1];

    // the RAM-backed registers as software sees them (valid the cycle after the read starts)
    reg [31:0] t_rd;
    always @(*) begin
        t_rd = 32'd0;
        if (in_nqrp) begin
            t_rd = {15'd0, nq_rp};
        end else if (in_nq) begin
            case (tfield)
                2'd0: t_rd = {nq_base[25:0], 6'd0};
                2'd1: t_rd = nq_base[57:26];
                2'd2: begin
                    t_rd[`VELO_TBL_RMA_NQ_TABLE_NQ_CFG_ENABLE]       = nq_en;
                    t_rd[`VELO_TBL_RMA_NQ_TABLE_NQ_CFG_LOG2_ENTRIES] = nq_log2;
                end
                default: t_rd = {15'd0, nq_wp};
            endcase
        end
    end

    reg                 nq_sw_wr_q;
    reg [VPID_BITS-1:0] nq_sw_wr_vpid_q;
    assign nq_sw_wr      = nq_sw_wr_q;
    assign nq_sw_wr_vpid = nq_sw_wr_vpid_q;
    always @(posedge clk) begin
        if (rst) begin
            nq_sw_wr_q      <= 1'b0;
            nq_sw_wr_vpid_q <= {VPID_BITS{1'b0}};
        end else begin
            nq_sw_wr_q <= `VELO_RB_WR_GO(rb_req) && (in_nq || in_nqrp);
            if (`VELO_RB_WR_GO(rb_req) && (in_nq || in_nqrp)) nq_sw_wr_vpid_q <= ntv;
        end
    end

    // the block's answer: its registers', or the tables' (the queue table's from RAM; a write waits
    // while the notification writer has the WP port or the ATU is clearing)
    assign rb_rsp = r_rsp | `VELO_RB_RSP(t_rd, in_nq || in_nqrp || in_rg || in_pte, in_nq || in_nqrp, nq_sw_re,
                                         nwp_busy || (acfg_wr && !acfg_ready));
endmodule
`default_nettype wire
