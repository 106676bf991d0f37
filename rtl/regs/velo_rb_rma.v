// Register block RMA (docs/rma.md §5) and its tables: the notification queue table (RMA_NQ_TABLE)
// and NQ_RP in the user pages (a queue table like the mailbox table, velo_rb_qtable, whose writer
// is velo_rma_notify), the ATU's region and
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
    `include "velo_rb_rma_ports.vh"
    `VELO_RB_PORTS  // clk, rst and the register bus (velo_rb.vh)
);
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK(g_check_region_bits, REGION_BITS >= `VELO_MIN_RMA_REGION_BITS && REGION_BITS <= `VELO_MAX_RMA_REGION_BITS, "velo_rb_rma: REGION_BITS outside the spec's RMA_REGION_BITS range")
    `VELO_CHECK(g_check_pte_bits, PTE_BITS >= `VELO_MIN_RMA_PTE_BITS && PTE_BITS <= `VELO_MAX_RMA_PTE_BITS, "velo_rb_rma: PTE_BITS outside the spec's RMA_PTE_BITS range")
    `VELO_CHECK(g_check_rma_mtu, RMA_MTU >= `VELO_MIN_RMA_MTU && RMA_MTU <= `VELO_MAX_RMA_MTU && RMA_MTU % 8 == 0, "velo_rb_rma: RMA_MTU outside the spec's range or not a multiple of 8")
    `VELO_CHECK_PIPE
    localparam integer NRG  = 1 << REGION_BITS;
    localparam integer NPTE = 1 << PTE_BITS;
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

    wire [`VELO_RB_RSP_W-1:0] t_rsp;
    wire                      unused_cfg_wr;
    wire [VPID_BITS-1:0]      unused_cfg_vpid;
    velo_rb_qtable #(.VPID_BITS(VPID_BITS), .TBL_LO(`VELO_TBL_RMA_NQ_TABLE_BASE), .RP_OFF(`VELO_TBL_VPID_USER_NQ_RP),
                     .EN_LSB(`VELO_TBL_RMA_NQ_TABLE_NQ_CFG_ENABLE_LSB),
                     .LOG2_LSB(`VELO_TBL_RMA_NQ_TABLE_NQ_CFG_LOG2_ENTRIES_LSB), .PIPE(PIPE)) u_nq (
        .clk(clk), .rst(rst), .rb_req(rb_req), .rb_rsp(t_rsp), .tbl_re(nq_re), .tbl_vpid(nq_vpid),
        .tbl_base(nq_base), .tbl_en(nq_en), .tbl_log2(nq_log2), .tbl_wp(nq_wp), .tbl_rp(nq_rp), .wp_we(nq_wp_we),
        .wp_vpid(nq_wp_vpid), .wp_data(nq_wp_data), .sw_wr(nq_sw_wr), .sw_wr_vpid(nq_sw_wr_vpid), .cfg_wr(unused_cfg_wr),
        .cfg_vpid(unused_cfg_vpid));

    // ATU table writes: forwarded one DW at a time. Entry strides and the register index widths
    // come from the spec (RMA_REGION: 0x40 bytes, 16 registers; RMA_PTE: 8 bytes, 2 registers); the
    // register index port (acfg_reg) is as wide as the region entry's and carries the page table's too.
    localparam integer RG_RW  = `VELO_TBL_RMA_REGION_REG_W;   // register index bits of a region entry
    localparam integer PTE_RW = `VELO_TBL_RMA_PTE_REG_W;      // register index bits of a page table entry
    localparam integer RG_SW  = RG_RW + 2;                    // log2(RMA_REGION stride)
    localparam integer PTE_SW = PTE_RW + 2;                   // log2(RMA_PTE stride)
    `VELO_CHECK(g_check_rg_stride, (1 << RG_SW) == `VELO_TBL_RMA_REGION_STRIDE && (1 << PTE_SW) == `VELO_TBL_RMA_PTE_STRIDE, "velo_rb_rma: the spec's RMA_REGION/RMA_PTE strides are not 4 << REG_W")
    `VELO_CHECK(g_check_pte_rw, PTE_RW <= RG_RW, "velo_rb_rma: a page table entry has more registers than a region entry (acfg_reg too narrow)")
    `VELO_CHECK(g_check_rg_span, {11'd0, RG_LO} + (NRG << RG_SW) <= {11'd0, PTE_LO} && {11'd0, PTE_LO} + (NPTE << PTE_SW) <= (1 << `VELO_BAR_REGS_BITS), "velo_rb_rma: the region table runs into the page table, or the page table past BAR0")
    wire in_rg, in_pte;
    velo_rb_range #(.LO(RG_LO), .HI({11'd0, RG_LO} + NRG * `VELO_TBL_RMA_REGION_STRIDE), .PIPE(PIPE)) u_drg (
        .clk(clk), .rst(rst), .rb_req(rb_req), .hit(in_rg));
    velo_rb_range #(.LO(PTE_LO), .HI({11'd0, PTE_LO} + NPTE * `VELO_TBL_RMA_PTE_STRIDE), .PIPE(PIPE)) u_dpte (
        .clk(clk), .rst(rst), .rb_req(rb_req), .hit(in_pte));
    wire [20:0] rg_off  = `VELO_RB_ADDR(rb_req) - RG_LO;
    wire [20:0] pte_off = `VELO_RB_ADDR(rb_req) - PTE_LO;
    wire [20:0] rg_idx  = rg_off >> RG_SW;
    wire [20:0] pte_idx = pte_off >> PTE_SW;
    wire unused_off = &{1'b0, rg_off, pte_off, rg_idx, pte_idx, unused_cfg_wr, unused_cfg_vpid};
    wire acfg_wr = `VELO_RB_WR_EN(rb_req) && (in_rg || in_pte);
    assign acfg_valid = acfg_wr;
    assign acfg_pte   = in_pte;
    assign acfg_idx   = in_pte ? pte_idx[15:0] : rg_idx[15:0];
    assign acfg_reg   = in_pte ? {{(RG_RW-PTE_RW){1'b0}}, pte_off[PTE_SW-1:2]} : rg_off[RG_SW-1:2];
    assign acfg_data  = `VELO_RB_WDATA(rb_req);

    // the block's answer: its registers', the queue table's, or the ATU tables' (a write waits while
    // the ATU is clearing)
    assign rb_rsp = r_rsp | t_rsp | `VELO_RB_RSP(32'd0, in_rg || in_pte, 1'b0, 1'b0, acfg_wr && !acfg_ready);
endmodule
`default_nettype wire
