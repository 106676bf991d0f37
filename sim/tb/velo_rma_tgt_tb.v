// Simulation top for sim/tests/tb_rma_tgt.cpp (not synthesised): the RMA target engine with the
// real translation unit (velo_atu, tables written through cfg_*) and the real DMA read engine
// (velo_dma_rd, its reads answered by the C++ host model), plus a route table: node n has the
// route (5n + 1) mod 2^14, valid unless n = NOROUTE.
`default_nettype none
`include "velo_spec.vh"
module velo_rma_tgt_tb #(
    parameter integer NODE_BITS   = 8,    // node id width
    parameter integer REGION_BITS = 8,    // ATU regions
    parameter integer PTE_BITS    = 12,   // ATU page table entries
    parameter integer MTU         = 48,   // RMA_MTU
    parameter integer MPS         = 256,  // DMA write max payload
    parameter integer SLOTS_LOG2  = 2,    // request packet slots
    parameter integer NOROUTE     = 255   // the node without a valid route
) (
    input  wire                   clk,
    input  wire                   rst,
    input  wire                   enable,
    input  wire [7:0]             node_id,
    input  wire [15:0]            req_id,
    // ATU tables
    input  wire                   cfg_valid,
    output wire                   cfg_ready,
    input  wire                   cfg_pte,
    input  wire [15:0]            cfg_idx,
    input  wire [`VELO_TBL_RMA_REGION_REG_W-1:0] cfg_reg,
    input  wire [31:0]            cfg_data,
    input  wire [REGION_BITS-1:0] q_region,
    output wire                   q_busy,
    output wire                   atu_rel_underflow,
    // packets
    input  wire                   in_valid,
    output wire                   in_ready,
    input  wire [63:0]            in_data,
    input  wire                   in_last,
    input  wire                   in_bad,
    output wire                   out_valid,
    input  wire                   out_ready,
    output wire [63:0]            out_data,
    output wire                   out_last,
    output wire [2:0]             out_lnb,
    // DMA writes
    output wire                   tx_valid,
    input  wire                   tx_ready,
    output wire                   tx_sop,
    output wire                   tx_eop,
    output wire [127:0]           tx_hdr,
    output wire [63:0]            tx_data,
    // DMA reads and their completions
    output wire                   mrd_valid,
    input  wire                   mrd_ready,
    output wire                   mrd_sop,
    output wire                   mrd_eop,
    output wire [127:0]           mrd_hdr,
    output wire [63:0]            mrd_data,
    input  wire                   cpl_valid,
    output wire                   cpl_ready,
    input  wire                   cpl_sop,
    input  wire                   cpl_eop,
    input  wire [127:0]           cpl_hdr,
    input  wire [63:0]            cpl_data,
    // notifications
    output wire                   n_valid,
    input  wire                   n_ready,
    output wire [7:0]             n_vpid,
    output wire [255:0]           n_entry,
    input  wire                   n_done,
    input  wire                   n_drop,
    // status, events
    output wire                   busy,
    output wire                   dma_busy,
    output wire                   ev_put_pkt,
    output wire                   ev_get,
    output wire                   ev_bad,
    output wire [9:0]             ev_wr_bytes,
    output wire [7:0]             ev_rd_bytes,
    output wire                   ev_err,
    output wire [3:0]             ev_err_code,
    output wire                   ev_gerr,
    output wire [3:0]             ev_gerr_code,
    output wire [1:0]             ev_no_route,
    output wire                   ev_put_rsp
);
    wire                   lk_valid, lk_ready, lk_tag, rs_valid, rs_ready, rs_tag, rel_valid;
    wire [63:0]            lk_nla, rs_addr;
    wire [23:0]            lk_len;
    wire [7:0]             lk_vpid, rs_owner;
    wire [NODE_BITS-1:0]   lk_node;
    wire [23:0]            lk_key_hi;
    wire [1:0]             lk_kind;
    wire [3:0]             rs_err;
    wire [21:0]            rs_room;
    wire [REGION_BITS-1:0] rs_region, rel_region;
    wire                   rq_valid, rq_ready, rd_valid, rd_ready, rd_first, rd_last, rd_err;
    wire [63:0]            rq_addr, rd_data;
    wire [11:0]            rq_len_m1;
    wire [15:0]            rq_ctx, rd_ctx;
    wire [7:0]             rd_be;
    wire                   rt_re;
    wire [NODE_BITS-1:0]   rt_node;
    reg  [14:0]            rt_data;
    localparam [NODE_BITS-1:0] NR = NOROUTE[NODE_BITS-1:0];

    always @(posedge clk) begin
        if (rt_re) begin
            rt_data[13:0] <= (rt_node * 14'd5) + 14'd1;
            rt_data[14]   <= (rt_node != NR);
        end
    end

    // the blocks' idle outputs serve velo_rma's clock gate only
    wire tgt_idle, atu_idle, dma_idle;
    velo_rma_tgt #(.TLP_W(64), .NODE_BITS(NODE_BITS), .VPID_BITS(8), .REGION_BITS(REGION_BITS), .MTU(MTU),
                   .MPS(MPS), .SLOTS_LOG2(SLOTS_LOG2), .CTX_W(16)) u_tgt (
        .clk(clk), .rst(rst), .enable(enable), .node_id(node_id), .req_id(req_id),
        .in_valid(in_valid), .in_ready(in_ready), .in_data(in_data), .in_last(in_last), .in_bad(in_bad),
        .out_valid(out_valid), .out_ready(out_ready), .out_data(out_data), .out_last(out_last), .out_lnb(out_lnb),
        .rt_re(rt_re), .rt_node(rt_node), .rt_data(rt_data),
        .lk_valid(lk_valid), .lk_ready(lk_ready), .lk_nla(lk_nla), .lk_len(lk_len), .lk_vpid(lk_vpid),
        .lk_node(lk_node), .lk_key_hi(lk_key_hi),
        .lk_kind(lk_kind), .lk_tag(lk_tag), .rs_valid(rs_valid), .rs_ready(rs_ready), .rs_err(rs_err),
        .rs_addr(rs_addr), .rs_room(rs_room), .rs_region(rs_region), .rs_owner(rs_owner), .rs_tag(rs_tag),
        .rel_valid(rel_valid), .rel_region(rel_region),
        .rq_valid(rq_valid), .rq_ready(rq_ready), .rq_addr(rq_addr), .rq_len_m1(rq_len_m1), .rq_ctx(rq_ctx),
        .rd_valid(rd_valid), .rd_ready(rd_ready), .rd_data(rd_data), .rd_be(rd_be), .rd_first(rd_first),
        .rd_last(rd_last), .rd_err(rd_err), .rd_ctx(rd_ctx),
        .tx_valid(tx_valid), .tx_ready(tx_ready), .tx_sop(tx_sop), .tx_eop(tx_eop), .tx_hdr(tx_hdr),
        .tx_data(tx_data),
        .n_valid(n_valid), .n_ready(n_ready), .n_vpid(n_vpid), .n_entry(n_entry), .n_done(n_done), .n_drop(n_drop),
        .busy(busy), .ev_put_pkt(ev_put_pkt), .ev_get(ev_get), .ev_bad(ev_bad), .ev_wr_bytes(ev_wr_bytes),
        .ev_rd_bytes(ev_rd_bytes), .ev_err(ev_err), .ev_err_code(ev_err_code), .ev_gerr(ev_gerr),
        .ev_gerr_code(ev_gerr_code), .ev_no_route(ev_no_route),
        .ev_put_rsp(ev_put_rsp), .idle(tgt_idle));

    wire atu_cfg_bad;
    velo_atu #(.REGION_BITS(REGION_BITS), .PTE_BITS(PTE_BITS), .VPID_BITS(8), .NODE_BITS(NODE_BITS), .TAG_W(1),
               .INUSE_W(6)) u_atu (
        .clk(clk), .rst(rst), .cfg_valid(cfg_valid), .cfg_ready(cfg_ready), .cfg_pte(cfg_pte), .cfg_idx(cfg_idx),
        .cfg_reg(cfg_reg), .cfg_data(cfg_data), .lk_valid(lk_valid), .lk_ready(lk_ready), .lk_nla(lk_nla),
        .lk_len(lk_len), .lk_vpid(lk_vpid), .lk_node(lk_node), .lk_key_hi(lk_key_hi), .lk_kind(lk_kind),
        .lk_tag(lk_tag), .rs_valid(rs_valid),
        .rs_ready(rs_ready), .rs_err(rs_err), .rs_addr(rs_addr), .rs_room(rs_room), .rs_region(rs_region),
        .rs_owner(rs_owner), .rs_tag(rs_tag), .rel_valid(rel_valid), .rel_region(rel_region), .q_region(q_region),
        .q_busy(q_busy), .idle(atu_idle), .ev_rel_underflow(atu_rel_underflow), .ev_cfg_bad(atu_cfg_bad));

    wire [31:0] c0, c1, c2, c3, c4;
    velo_dma_rd #(.TLP_W(64), .MRRS(512), .TAGS(32), .TAG_W(8), .CB_LOG2(13), .CTX_W(16), .TIMEOUT(4096)) u_rd (
        .clk(clk), .rst(rst), .req_id(req_id), .tick_in(1'b0), .rq_valid(rq_valid), .rq_ready(rq_ready), .rq_addr(rq_addr),
        .rq_len_m1(rq_len_m1), .rq_ctx(rq_ctx), .rd_valid(rd_valid), .rd_ready(rd_ready), .rd_data(rd_data),
        .rd_be(rd_be), .rd_first(rd_first), .rd_last(rd_last), .rd_err(rd_err), .rd_ctx(rd_ctx),
        .tx_valid(mrd_valid), .tx_ready(mrd_ready), .tx_sop(mrd_sop), .tx_eop(mrd_eop), .tx_hdr(mrd_hdr),
        .tx_data(mrd_data), .cpl_valid(cpl_valid), .cpl_ready(cpl_ready), .cpl_sop(cpl_sop), .cpl_eop(cpl_eop),
        .cpl_hdr(cpl_hdr), .cpl_data(cpl_data), .busy(dma_busy), .cnt_reads(c0), .cnt_cpl_bytes(c1),
        .cnt_errors(c2), .cnt_timeouts(c3), .cnt_unexpected(c4), .idle(dma_idle));

    wire unused_idle = &{1'b0, tgt_idle, atu_idle, dma_idle};
    wire unused_ok = &{1'b0, atu_cfg_bad, c0, c1, c2, c3, c4};
endmodule
`default_nettype wire
