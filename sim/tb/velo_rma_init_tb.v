// Bench top of tb_rma_init: the initiator engine with the real translation unit (velo_atu), DMA
// read engine (velo_dma_rd) and read sharing (velo_rma_rdmux: the initiator's read FIFO, whose
// fill the engine's packet start waits for; the target side idle) it uses in the NIC; the bench
// plays host, route table and network.
`default_nettype none
`include "velo_spec.vh"
module velo_rma_init_tb #(
    parameter integer TAG_BITS = 4,   // command tags of the engine
    parameter integer MTU      = 48   // RMA_MTU
) (
    input  wire          clk,
    input  wire          rst,
    input  wire          enable,
    input  wire [7:0]    node_id,
    input  wire [15:0]   req_id,
    input  wire          cmd_valid,
    output wire          cmd_ready,
    input  wire [255:0]  cmd_data,
    input  wire [7:0]    cmd_vpid,
    input  wire [6:0]    cmd_slot,
    input  wire [7:0]    cmd_slot_cnt,
    input  wire [3:0]    cmd_err,
    output wire          rt_re,
    output wire [7:0]    rt_node,
    input  wire [14:0]   rt_data,
    input  wire          cfg_valid,
    output wire          cfg_ready,
    input  wire          cfg_pte,
    input  wire [15:0]   cfg_idx,
    input  wire [`VELO_TBL_RMA_REGION_REG_W-1:0] cfg_reg,
    input  wire [31:0]   cfg_data,
    output wire          mrd_valid,
    input  wire          mrd_ready,
    output wire          mrd_sop,
    output wire          mrd_eop,
    output wire [127:0]  mrd_hdr,
    output wire [63:0]   mrd_data,
    input  wire          cpl_valid,
    output wire          cpl_ready,
    input  wire          cpl_sop,
    input  wire          cpl_eop,
    input  wire [127:0]  cpl_hdr,
    input  wire [63:0]   cpl_data,
    output wire          pkt_valid,
    input  wire          pkt_ready,
    output wire [63:0]   pkt_data,
    output wire          pkt_last,
    output wire [2:0]    pkt_lnb,
    input  wire          rx_valid,
    output wire          rx_ready,
    input  wire [63:0]   rx_data,
    input  wire          rx_last,
    output wire          tx_valid,
    input  wire          tx_ready,
    output wire          tx_sop,
    output wire          tx_eop,
    output wire [127:0]  tx_hdr,
    output wire [63:0]   tx_data,
    output wire          n_valid,
    input  wire          n_ready,
    output wire [7:0]    n_vpid,
    output wire [255:0]  n_entry,
    output wire          busy,
    output wire          dma_busy,
    output wire          ev_cmd,
    output wire [7:0]    ev_tx_bytes,
    output wire [7:0]    ev_rx_bytes,
    output wire          ev_err,
    output wire [3:0]    ev_err_reason,
    output wire          ev_rsp_drop,
    output wire          ev_rel_underflow,
    input  wire [7:0]    q_region,
    output wire          q_busy,
    output wire [3:0]    probe       // {rq_valid, rq_ready, rd_valid, rd_ready}: for the throughput analysis
);
    wire lk_valid, lk_ready, rs_valid, rs_ready, rel_valid, rel_ready;
    wire [63:0] lk_nla, rs_addr;
    wire [23:0] lk_len;
    wire [7:0]  lk_vpid, rs_region, rel_region, rs_owner, rs_tag;
    wire [1:0]  lk_kind;
    wire [3:0]  rs_err;
    wire [21:0] rs_room;
    wire rq_valid, rq_ready, rd_valid, rd_ready, rd_first, rd_last, rd_err;
    wire [63:0] rq_addr, rd_data;
    wire [11:0] rq_len_m1;
    wire [TAG_BITS-1:0] rq_ctx, rd_ctx;
    wire [7:0]  rd_be;
    wire [13:0] rd_avail;
    wire        rd_errq;
    wire d_rq_valid, d_rq_ready, d_rd_valid, d_rd_ready, d_rd_first, d_rd_last, d_rd_err;
    wire [63:0] d_rq_addr, d_rd_data;
    wire [11:0] d_rq_len_m1;
    wire [16:0] d_rq_ctx, d_rd_ctx;
    wire [7:0]  d_rd_be;
    wire        t_rq_ready, t_rd_valid, t_rd_first, t_rd_last, t_rd_err;
    wire [63:0] t_rd_data;
    wire [7:0]  t_rd_be;
    wire [15:0] t_rd_ctx;
    wire [31:0] c0, c1, c2, c3, c4;
    wire        ev_cfg_bad;
    assign rel_ready = 1'b1;
    assign probe = {rq_valid, rq_ready, rd_valid, rd_ready};
    assign rd_first = 1'b0;

    // the blocks' idle outputs serve velo_rma's clock gate only
    wire init_idle, atu_idle, rdmux_idle, dma_idle;
    velo_rma_init #(.TAG_BITS(TAG_BITS), .MTU(MTU)) u_init (
        .clk(clk), .rst(rst), .enable(enable), .node_id(node_id), .req_id(req_id),
        .cmd_valid(cmd_valid), .cmd_ready(cmd_ready), .cmd_data(cmd_data), .cmd_vpid(cmd_vpid),
        .cmd_slot(cmd_slot), .cmd_slot_cnt(cmd_slot_cnt), .cmd_err(cmd_err),
        .rt_re(rt_re), .rt_node(rt_node), .rt_data(rt_data),
        .lk_valid(lk_valid), .lk_ready(lk_ready), .lk_nla(lk_nla), .lk_len(lk_len), .lk_vpid(lk_vpid),
        .lk_kind(lk_kind), .rs_valid(rs_valid), .rs_ready(rs_ready), .rs_err(rs_err), .rs_addr(rs_addr),
        .rs_room(rs_room), .rs_region(rs_region), .rel_valid(rel_valid), .rel_ready(rel_ready),
        .rel_region(rel_region),
        .rq_valid(rq_valid), .rq_ready(rq_ready), .rq_addr(rq_addr), .rq_len_m1(rq_len_m1), .rq_ctx(rq_ctx),
        .rd_valid(rd_valid), .rd_ready(rd_ready), .rd_data(rd_data), .rd_be(rd_be), .rd_last(rd_last),
        .rd_err(rd_err), .rd_ctx(rd_ctx), .rd_avail(rd_avail), .rd_errq(rd_errq),
        .pkt_valid(pkt_valid), .pkt_ready(pkt_ready), .pkt_data(pkt_data), .pkt_last(pkt_last), .pkt_lnb(pkt_lnb),
        .rx_valid(rx_valid), .rx_ready(rx_ready), .rx_data(rx_data), .rx_last(rx_last),
        .tx_valid(tx_valid), .tx_ready(tx_ready), .tx_sop(tx_sop), .tx_eop(tx_eop), .tx_hdr(tx_hdr), .tx_data(tx_data),
        .n_valid(n_valid), .n_ready(n_ready), .n_vpid(n_vpid), .n_entry(n_entry),
        .busy(busy), .ev_cmd(ev_cmd), .ev_tx_bytes(ev_tx_bytes), .ev_rx_bytes(ev_rx_bytes), .ev_err(ev_err),
        .ev_err_reason(ev_err_reason), .ev_rsp_drop(ev_rsp_drop), .idle(init_idle));

    velo_atu #(.TAG_W(8)) u_atu (
        .clk(clk), .rst(rst), .cfg_valid(cfg_valid), .cfg_ready(cfg_ready), .cfg_pte(cfg_pte), .cfg_idx(cfg_idx),
        .cfg_reg(cfg_reg), .cfg_data(cfg_data),
        .lk_valid(lk_valid), .lk_ready(lk_ready), .lk_nla(lk_nla), .lk_len(lk_len), .lk_vpid(lk_vpid),
        .lk_kind(lk_kind), .lk_node(8'd0), .lk_key_hi(24'd0), .lk_tag(8'd0),   // local kinds only
        .rs_valid(rs_valid), .rs_ready(rs_ready), .rs_err(rs_err), .rs_addr(rs_addr), .rs_room(rs_room),
        .rs_region(rs_region), .rs_owner(rs_owner), .rs_tag(rs_tag),
        .rel_valid(rel_valid), .rel_region(rel_region), .q_region(q_region), .q_busy(q_busy),
        .idle(atu_idle), .ev_rel_underflow(ev_rel_underflow), .ev_cfg_bad(ev_cfg_bad));

    velo_rma_rdmux #(.TAG_BITS(TAG_BITS), .TCTX_W(16), .FIFO_AW(10)) u_rdmux (
        .clk(clk), .rst(rst),
        .i_rq_valid(rq_valid), .i_rq_ready(rq_ready), .i_rq_addr(rq_addr), .i_rq_len_m1(rq_len_m1),
        .i_rq_ctx(rq_ctx), .i_rd_valid(rd_valid), .i_rd_ready(rd_ready), .i_rd_data(rd_data),
        .i_rd_be(rd_be), .i_rd_last(rd_last), .i_rd_err(rd_err), .i_rd_ctx(rd_ctx),
        .i_rd_bytes(rd_avail), .i_rd_errq(rd_errq),
        .t_rq_valid(1'b0), .t_rq_ready(t_rq_ready), .t_rq_addr(64'd0), .t_rq_len_m1(12'd0),
        .t_rq_ctx(16'd0), .t_rd_valid(t_rd_valid), .t_rd_ready(1'b1), .t_rd_data(t_rd_data),
        .t_rd_be(t_rd_be), .t_rd_first(t_rd_first), .t_rd_last(t_rd_last), .t_rd_err(t_rd_err), .t_rd_ctx(t_rd_ctx),
        .rq_valid(d_rq_valid), .rq_ready(d_rq_ready), .rq_addr(d_rq_addr), .rq_len_m1(d_rq_len_m1), .rq_ctx(d_rq_ctx),
        .rd_valid(d_rd_valid), .rd_ready(d_rd_ready), .rd_data(d_rd_data), .rd_be(d_rd_be), .rd_first(d_rd_first),
        .rd_last(d_rd_last), .rd_err(d_rd_err), .rd_ctx(d_rd_ctx), .idle(rdmux_idle));

    velo_dma_rd #(.TLP_W(64), .MRRS(512), .TAGS(32), .TAG_W(8), .CB_LOG2(13), .CTX_W(17), .TIMEOUT(4096)) u_dma (
        .clk(clk), .rst(rst), .req_id(req_id), .tick_in(1'b0),
        .rq_valid(d_rq_valid), .rq_ready(d_rq_ready), .rq_addr(d_rq_addr), .rq_len_m1(d_rq_len_m1), .rq_ctx(d_rq_ctx),
        .rd_valid(d_rd_valid), .rd_ready(d_rd_ready), .rd_data(d_rd_data), .rd_be(d_rd_be), .rd_first(d_rd_first),
        .rd_last(d_rd_last), .rd_err(d_rd_err), .rd_ctx(d_rd_ctx),
        .tx_valid(mrd_valid), .tx_ready(mrd_ready), .tx_sop(mrd_sop), .tx_eop(mrd_eop), .tx_hdr(mrd_hdr),
        .tx_data(mrd_data),
        .cpl_valid(cpl_valid), .cpl_ready(cpl_ready), .cpl_sop(cpl_sop), .cpl_eop(cpl_eop), .cpl_hdr(cpl_hdr),
        .cpl_data(cpl_data),
        .busy(dma_busy), .idle(dma_idle), .cnt_reads(c0), .cnt_cpl_bytes(c1), .cnt_errors(c2), .cnt_timeouts(c3), .cnt_unexpected(c4));

    wire unused_idle = &{1'b0, init_idle, atu_idle, rdmux_idle, dma_idle};
    wire unused_ok = &{1'b0, rs_owner, rs_tag, rd_first, t_rq_ready, t_rd_valid, t_rd_data, t_rd_be, t_rd_first,
                       t_rd_last, t_rd_err, t_rd_ctx, c0, c1, c2, c3, c4, ev_cfg_bad};
endmodule
`default_nettype wire
