// The NIC configuration of the iCE40-HX8K board: velo_nic's units, unchanged, with one network
// port, minus what does not fit in 7,680 logic cells (measured with Yosys 0.23 + nextpnr-ice40:
// velo_nic with NP = 1 packs into ~8,800 cells, 115 % of the device, before any host bridge):
//
//   kept:     TLP demux, register file (ID, CTRL, COUNTERS, NET, VPID, IRQ blocks; mailbox and
//             route tables), requester, flit serializer/deserializer, completer, upstream
//             arbiter, one link (CRC-16, go-back-N replay, credits per VC, training)
//   replaced: the switch (~2,000 cells at NP = 1) by velo_ice40_port (~300): the same routing,
//             header rewrite and credit rules for the one port, a single receive FIFO
//   optional: the 16 event counters (COUNTERS = 1, ~1,000 cells) and the link's 8 counters
//             (LINK_COUNTERS = 1, ~500 cells); left out they read as 0 (the register map is
//             unchanged, software sees counters that never move)
//
// Ports as velo_nic with NP = 1. The wiring of the kept units follows velo_nic line by line.
`default_nettype none
`include "velo_spec.vh"
module velo_ice40_nic #(
    parameter integer NODE_BITS     = 8,   // node id width (spec param NODE_BITS)
    parameter integer VPID_BITS     = 8,   // vpid width (spec param VPID_BITS)
    parameter integer LINK_W        = 16,  // network flit width: 16, 32 or 64
    parameter integer NVC           = 1,   // virtual channels of the link: VC 0 (request class) only
    parameter integer VC_DEPTH      = 64,  // receive buffer credits per VC, in flits
    parameter integer REPLAY_DEPTH  = 256, // link replay buffer, in flits (power of two)
    parameter integer COUNTERS      = 0,   // 1: the 16 event counters; 0: they read as 0
    parameter integer LINK_COUNTERS = 0    // 1: the link's 8 counters; 0: they read as 0
) (
    input  wire              clk,
    input  wire              rst,          // synchronous, active high
    input  wire [15:0]       cfg_id,       // our PCIe-style id (completer id of completions)
    // TLP stream from the host (downstream), TLP_W = 64
    input  wire              rx_valid,
    output wire              rx_ready,
    input  wire              rx_sop,
    input  wire              rx_eop,
    input  wire [127:0]      rx_hdr,
    input  wire [2:0]        rx_bar,
    input  wire [63:0]       rx_data,
    // TLP stream to the host (upstream)
    output wire              tx_valid,
    input  wire              tx_ready,
    output wire              tx_sop,
    output wire              tx_eop,
    output wire [127:0]      tx_hdr,
    output wire [63:0]       tx_data,
    // the network port: one {sync[1:0], flit} per cycle each way
    output wire [LINK_W+1:0] phy_tx,
    input  wire [LINK_W+1:0] phy_rx,
    output wire              port_up,      // link status
    // interrupt request, valid/ready (as velo_nic)
    output wire              irq_valid,
    input  wire              irq_ready
);
    localparam integer TLP_W = 64;
    localparam integer NP    = 1;
    localparam integer NCNT  = `VELO_CNT_NUM;
    localparam integer PB    = 2;
    localparam integer NLC   = `VELO_NET_PORT_COUNTERS;
    wire link_up = port_up;

    // ---------------------------------------------------------------- host side demux
    wire             req_valid, req_ready, req_sop, req_eop;
    wire [127:0]     req_hdr;
    wire [TLP_W-1:0] req_data;
    wire             reg_valid, reg_ready, reg_sop, reg_eop;
    wire [127:0]     reg_hdr;
    wire [2:0]       reg_bar;
    wire [TLP_W-1:0] reg_data;
    wire             ev_bad_bar, ev_unsup_dmx;

    velo_tlp_rx_demux #(.TLP_W(TLP_W)) u_demux (
        .clk(clk), .rst(rst),
        .in_valid(rx_valid), .in_ready(rx_ready), .in_sop(rx_sop), .in_eop(rx_eop),
        .in_hdr(rx_hdr), .in_bar(rx_bar), .in_data(rx_data),
        .req_valid(req_valid), .req_ready(req_ready), .req_sop(req_sop), .req_eop(req_eop),
        .req_hdr(req_hdr), .req_data(req_data),
        .reg_valid(reg_valid), .reg_ready(reg_ready), .reg_sop(reg_sop), .reg_eop(reg_eop),
        .reg_hdr(reg_hdr), .reg_bar(reg_bar), .reg_data(reg_data),
        .rma_valid(n4_valid), .rma_ready(1'b1), .rma_sop(n4_sop), .rma_eop(n4_eop), .rma_hdr(n4_hdr),
        .rma_data(n4_data), .cpl_valid(nc_valid), .cpl_ready(1'b1), .cpl_sop(nc_sop), .cpl_eop(nc_eop),
        .cpl_hdr(nc_hdr), .cpl_data(nc_data),
        .ev_bad_bar(ev_bad_bar), .ev_unsupported(ev_unsup_dmx));
    // no RMA on this board (the demux and register file are built with RMA = 0: these stay idle)
    wire              n4_valid, n4_sop, n4_eop, nc_valid, nc_sop, nc_eop;
    wire [127:0]      n4_hdr, nc_hdr;
    wire [TLP_W-1:0]  n4_data, nc_data;
    wire              nr_en, nr_acfg_v, nr_acfg_pte, nr_nq_en, nr_nq_sw,
                      nr_rclr, nr_rread;
    wire [7:0]        nr_region;
    wire [14:0]       nr_rt2d, nr_rt3d;
    wire [15:0]       nr_acfg_idx;
    wire [2:0]        nr_acfg_reg;
    wire [31:0]       nr_acfg_d;
    wire [57:0]       nr_nq_base;
    wire [4:0]        nr_nq_log2, nr_ridx, nr_rclr_idx;
    wire [16:0]       nr_nq_wp, nr_nq_rp;
    wire [VPID_BITS-1:0] nr_nq_sw_vpid;
    wire nr_c_ready;
    wire unused_rma = &{1'b0, nr_c_ready, n4_valid, n4_sop, n4_eop, n4_hdr, n4_data, nc_valid, nc_sop, nc_eop, nc_hdr, nc_data,
                        nr_en, nr_acfg_v, nr_acfg_pte, nr_nq_en, nr_nq_sw, nr_rclr,
                        nr_rread, nr_region, nr_rt2d, nr_rt3d, nr_acfg_idx, nr_acfg_reg, nr_acfg_d, nr_nq_base,
                        nr_nq_log2, nr_ridx, nr_rclr_idx, nr_nq_wp, nr_nq_rp, nr_nq_sw_vpid};

    // ---------------------------------------------------------------- register file
    wire        enable;
    wire [7:0]  node_id;
    wire        tbl_re;
    wire [VPID_BITS-1:0] tbl_vpid, wp_vpid, sw_wr_vpid, q_vpid;
    wire [57:0] tbl_base;
    wire        tbl_en;
    wire [4:0]  tbl_log2;
    wire [16:0] tbl_wp, tbl_rp, wp_data;
    wire        wp_we, sw_wr, q_busy, cpl_busy;
    wire [4:0]  cnt_idx, cnt_clr_idx;
    wire [31:0] cnt_data;
    wire        cnt_clr;
    wire        ev_window_read, ev_unsup_reg, ev_bad_access;
    wire        rt_re;
    wire [NODE_BITS-1:0] rt_node;
    wire [14:0] rt_data;
    wire [3*NP-1:0] port_cfg;
    wire [5:0]  ncnt_idx, ncnt_clr_idx;
    wire        ncnt_clr;
    wire [31:0] ncnt_data;
    wire        ev_no_route;
    wire             c_valid, c_ready, c_sop, c_eop;
    wire [127:0]     c_hdr;
    wire [TLP_W-1:0] c_data;
    wire             cmt_valid;
    wire [VPID_BITS-1:0] cmt_vpid;

    velo_regfile #(.TLP_W(TLP_W), .VPID_BITS(VPID_BITS), .NODE_BITS(NODE_BITS), .LINK_W(LINK_W),
                   .CNT_IDX_W(5), .NP(NP), .PB(PB), .NVC(NVC), .VC_DEPTH(VC_DEPTH),
                   .NCNT_IDX_W(6)) u_regs (
        .clk(clk), .rst(rst), .cpl_id(cfg_id),
        .in_valid(reg_valid), .in_ready(reg_ready), .in_sop(reg_sop), .in_eop(reg_eop),
        .in_hdr(reg_hdr), .in_bar(reg_bar), .in_data(reg_data),
        .cpl_valid(c_valid), .cpl_ready(c_ready), .cpl_sop(c_sop), .cpl_eop(c_eop),
        .cpl_hdr(c_hdr), .cpl_data(c_data),
        .node_id(node_id), .enable(enable),
        .tbl_re(tbl_re), .tbl_vpid(tbl_vpid), .tbl_base(tbl_base), .tbl_en(tbl_en),
        .tbl_log2(tbl_log2), .tbl_wp(tbl_wp), .tbl_rp(tbl_rp),
        .wp_we(wp_we), .wp_vpid(wp_vpid), .wp_data(wp_data),
        .sw_wr(sw_wr), .sw_wr_vpid(sw_wr_vpid),
        .rt_re(rt_re), .rt_node(rt_node), .rt_data(rt_data),
        .port_cfg(port_cfg), .port_up(port_up), .ncnt_idx(ncnt_idx), .ncnt_data(ncnt_data),
        .ncnt_clr(ncnt_clr), .ncnt_clr_idx(ncnt_clr_idx), .ev_no_route(ev_no_route),
        .link_up(link_up), .cpl_busy(cpl_busy), .q_vpid(q_vpid), .q_busy(q_busy),
        .cnt_idx(cnt_idx), .cnt_data(cnt_data), .cnt_clr(cnt_clr), .cnt_clr_idx(cnt_clr_idx),
        .ev_window_read(ev_window_read), .ev_unsupported(ev_unsup_reg), .ev_bad_access(ev_bad_access),
        .cmt_valid(cmt_valid), .cmt_vpid(cmt_vpid), .irq_valid(irq_valid), .irq_ready(irq_ready),
        .rma_enable(nr_en), .rma_busy(1'b0), .rq_region(nr_region), .rq_busy(1'b0),
        .rt2_re(1'b0), .rt2_node({NODE_BITS{1'b0}}), .rt2_data(nr_rt2d), .rt3_re(1'b0), .rt3_node({NODE_BITS{1'b0}}),
        .rt3_data(nr_rt3d), .acfg_valid(nr_acfg_v), .acfg_ready(1'b1), .acfg_pte(nr_acfg_pte), .acfg_idx(nr_acfg_idx),
        .acfg_reg(nr_acfg_reg), .acfg_data(nr_acfg_d), .nq_re(1'b0), .nq_vpid({VPID_BITS{1'b0}}), .nq_base(nr_nq_base),
        .nq_en(nr_nq_en), .nq_log2(nr_nq_log2), .nq_wp(nr_nq_wp), .nq_rp(nr_nq_rp), .nq_wp_we(1'b0),
        .nq_wp_vpid({VPID_BITS{1'b0}}), .nq_wp_data(17'd0), .nq_sw_wr(nr_nq_sw), .nq_sw_wr_vpid(nr_nq_sw_vpid),
        .rcnt_idx(nr_ridx), .rcnt_data(32'd0), .rcnt_clr(nr_rclr), .rcnt_clr_idx(nr_rclr_idx),
        .ev_rma_read(nr_rread));

    // ---------------------------------------------------------------- requester
    wire        p_valid, p_ready, p_last;
    wire [63:0] p_data;
    wire [2:0]  p_lnb;
    wire ev_tx_msg, ev_tx_frag, ev_tx_dis, ev_tx_mal, ev_tx_long, ev_tx_page;

    velo_requester #(.TLP_W(TLP_W), .NODE_BITS(NODE_BITS), .VPID_BITS(VPID_BITS)) u_req (
        .clk(clk), .rst(rst), .enable(enable), .node_id(node_id),
        .rt_re(rt_re), .rt_node(rt_node), .rt_data(rt_data),
        .in_valid(req_valid), .in_ready(req_ready), .in_sop(req_sop), .in_eop(req_eop),
        .in_hdr(req_hdr), .in_data(req_data),
        .pkt_valid(p_valid), .pkt_ready(p_ready), .pkt_data(p_data), .pkt_last(p_last), .pkt_lnb(p_lnb),
        .ev_tx_msg(ev_tx_msg), .ev_tx_frag(ev_tx_frag), .ev_drop_disabled(ev_tx_dis),
        .ev_drop_malformed(ev_tx_mal), .ev_drop_too_long(ev_tx_long), .ev_drop_cross_page(ev_tx_page));

    wire              li_valid, li_ready, li_last;
    wire [LINK_W-1:0] li_data;
    velo_flit_tx #(.LINK_W(LINK_W)) u_ftx (
        .clk(clk), .rst(rst),
        .pkt_valid(p_valid), .pkt_ready(p_ready), .pkt_data(p_data), .pkt_last(p_last), .pkt_lnb(p_lnb),
        .flit_valid(li_valid), .flit_ready(li_ready), .flit_data(li_data), .flit_last(li_last));

    // ---------------------------------------------------------------- port stage and link
    wire              lo_valid, lo_ready, lo_last, lo_bad;
    wire [LINK_W-1:0] lo_data;
    wire              si_valid, si_last, si_bad;
    wire [LINK_W-1:0] si_data;
    wire [1:0]        si_vc;
    wire [NVC-1:0]    si_free;
    wire              so_valid, so_ready, so_last, so_bad;
    wire [LINK_W-1:0] so_data;
    wire [NVC-1:0]    so_start_ok;

    velo_ice40_port #(.LINK_W(LINK_W), .NVC(NVC), .VC_DEPTH(VC_DEPTH), .PB(PB)) u_port (
        .clk(clk), .rst(rst),
        .lin_valid(li_valid), .lin_ready(li_ready), .lin_data(li_data), .lin_last(li_last),
        .lout_valid(lo_valid), .lout_ready(lo_ready), .lout_data(lo_data), .lout_last(lo_last),
        .lout_bad(lo_bad),
        .out_valid(so_valid), .out_ready(so_ready), .out_data(so_data), .out_last(so_last),
        .out_bad(so_bad), .out_start_ok(so_start_ok),
        .in_valid(si_valid), .in_data(si_data), .in_last(si_last), .in_bad(si_bad), .in_vc(si_vc),
        .in_free(si_free),
        .port_dateline(port_cfg[2]), .ev_bad_route(ev_no_route));

    wire ev_crc_err, ev_nack, ev_replay, ev_stomp, ev_link_down, ev_ctl_drop, ev_rx_pkt;
    velo_link #(.LINK_W(LINK_W), .NVC(NVC), .VC_DEPTH(VC_DEPTH), .REPLAY_DEPTH(REPLAY_DEPTH)) u_link (
        .clk(clk), .rst(rst),
        .phy_tx(phy_tx), .phy_rx(phy_rx),
        .tx_valid(so_valid), .tx_ready(so_ready), .tx_data(so_data),
        .tx_last(so_last), .tx_bad(so_bad), .tx_start_ok(so_start_ok),
        .rx_valid(si_valid), .rx_data(si_data), .rx_last(si_last),
        .rx_bad(si_bad), .rx_vc(si_vc), .rx_free(si_free),
        .link_up(port_up),
        .ev_crc_err(ev_crc_err), .ev_nack(ev_nack), .ev_replay(ev_replay), .ev_stomp(ev_stomp),
        .ev_link_down(ev_link_down), .ev_ctl_drop(ev_ctl_drop), .ev_rx_pkt(ev_rx_pkt));
    // counter order: NET_PORT CNT_CRC_ERR, NACK, REPLAY, STOMP, CREDIT_STALL, LINK_DOWN, CTL_DROP,
    // RX_PKTS (no credit-stall event without the switch's allocator)
    wire [NLC-1:0] link_ev = {ev_rx_pkt, ev_ctl_drop, ev_link_down, 1'b0, ev_stomp, ev_replay, ev_nack,
                              ev_crc_err};

    generate
        if (LINK_COUNTERS != 0) begin : g_ncnt
            velo_counters #(.N(NP * NLC), .IDX_W(6)) u_ncnt (
                .clk(clk), .rst(rst), .inc(link_ev), .clr(ncnt_clr), .clr_idx(ncnt_clr_idx),
                .rd_idx(ncnt_idx), .rd_data(ncnt_data));
        end else begin : g_no_ncnt
            assign ncnt_data = 32'd0;
            wire unused_ok = &{1'b0, link_ev, ncnt_clr, ncnt_clr_idx, ncnt_idx};
        end
    endgenerate

    // ---------------------------------------------------------------- completer
    wire        r_valid, r_ready, r_last;
    wire [63:0] r_data;
    wire [2:0]  r_lnb;
    wire             d_valid, d_ready, d_sop, d_eop;
    wire [127:0]     d_hdr;
    wire [TLP_W-1:0] d_data;
    wire ev_rx_msg, ev_rx_frag, ev_rx_dis, ev_rx_vpid, ev_rx_bad, ev_bp;

    velo_flit_rx #(.LINK_W(LINK_W)) u_frx (
        .clk(clk), .rst(rst),
        .flit_valid(lo_valid), .flit_ready(lo_ready), .flit_data(lo_data), .flit_last(lo_last),
        .pkt_valid(r_valid), .pkt_ready(r_ready), .pkt_data(r_data), .pkt_last(r_last), .pkt_lnb(r_lnb));

    velo_completer #(.TLP_W(TLP_W), .VPID_BITS(VPID_BITS)) u_cpl (
        .clk(clk), .rst(rst), .enable(enable), .req_id(cfg_id),
        .pkt_valid(r_valid), .pkt_ready(r_ready), .pkt_data(r_data), .pkt_last(r_last), .pkt_bad(lo_bad),
        .tbl_re(tbl_re), .tbl_vpid(tbl_vpid), .tbl_base(tbl_base), .tbl_en(tbl_en),
        .tbl_log2(tbl_log2), .tbl_wp(tbl_wp), .tbl_rp(tbl_rp),
        .wp_we(wp_we), .wp_vpid(wp_vpid), .wp_data(wp_data),
        .sw_wr(sw_wr), .sw_wr_vpid(sw_wr_vpid), .q_vpid(q_vpid), .q_busy(q_busy), .busy(cpl_busy),
        .tx_valid(d_valid), .tx_ready(d_ready), .tx_sop(d_sop), .tx_eop(d_eop),
        .tx_hdr(d_hdr), .tx_data(d_data),
        .ev_rx_msg(ev_rx_msg), .ev_rx_frag(ev_rx_frag), .ev_drop_disabled(ev_rx_dis),
        .ev_drop_vpid(ev_rx_vpid), .ev_drop_bad(ev_rx_bad), .ev_backpressure(ev_bp),
        .cmt_valid(cmt_valid), .cmt_vpid(cmt_vpid));

    // flit granularity of the last word (the completer sizes packets from their headers); the
    // port's dimension (one port: no dimension change to detect)
    wire unused_lnb = &{1'b0, r_lnb, port_cfg[1:0]};

    // ---------------------------------------------------------------- upstream arbiter
    velo_tlp_tx_arb #(.TLP_W(TLP_W)) u_arb (
        .clk(clk), .rst(rst),
        .a_valid(d_valid), .a_ready(d_ready), .a_sop(d_sop), .a_eop(d_eop), .a_hdr(d_hdr), .a_data(d_data),
        .b_valid(c_valid), .b_ready(c_ready), .b_sop(c_sop), .b_eop(c_eop), .b_hdr(c_hdr), .b_data(c_data),
        .c_valid(1'b0), .c_ready(nr_c_ready), .c_sop(1'b0), .c_eop(1'b0), .c_hdr(128'd0), .c_data({TLP_W{1'b0}}),
        .out_valid(tx_valid), .out_ready(tx_ready), .out_sop(tx_sop), .out_eop(tx_eop),
        .out_hdr(tx_hdr), .out_data(tx_data));

    // ---------------------------------------------------------------- counters
    reg [NCNT-1:0] inc;
    always @(*) begin
        inc = {NCNT{1'b0}};
        inc[`VELO_CNT_TX_MSGS]               = ev_tx_msg;
        inc[`VELO_CNT_TX_FRAGS]              = ev_tx_frag;
        inc[`VELO_CNT_RX_MSGS]               = ev_rx_msg;
        inc[`VELO_CNT_RX_FRAGS]              = ev_rx_frag;
        inc[`VELO_CNT_DROP_TX_DISABLED]      = ev_tx_dis;
        inc[`VELO_CNT_DROP_TX_MALFORMED]     = ev_tx_mal;
        inc[`VELO_CNT_DROP_TX_TOO_LONG]      = ev_tx_long;
        inc[`VELO_CNT_DROP_TX_CROSS_PAGE]    = ev_tx_page;
        inc[`VELO_CNT_DROP_TLP_BAD_BAR]      = ev_bad_bar;
        inc[`VELO_CNT_DROP_TLP_UNSUPPORTED]  = ev_unsup_dmx || ev_unsup_reg;
        inc[`VELO_CNT_DROP_WINDOW_READ]      = ev_window_read;
        inc[`VELO_CNT_DROP_REG_BAD_ACCESS]   = ev_bad_access;
        inc[`VELO_CNT_DROP_RX_DISABLED]      = ev_rx_dis;
        inc[`VELO_CNT_DROP_RX_VPID_DISABLED] = ev_rx_vpid;
        inc[`VELO_CNT_DROP_RX_BAD_PKT]       = ev_rx_bad;
        inc[`VELO_CNT_RX_BACKPRESSURE_CYCLES] = ev_bp;
    end

    generate
        if (COUNTERS != 0) begin : g_cnt
            velo_counters #(.N(NCNT), .IDX_W(5)) u_cnt (
                .clk(clk), .rst(rst), .inc(inc), .clr(cnt_clr), .clr_idx(cnt_clr_idx),
                .rd_idx(cnt_idx), .rd_data(cnt_data));
        end else begin : g_no_cnt
            assign cnt_data = 32'd0;
            wire unused_ok = &{1'b0, inc, cnt_clr, cnt_clr_idx, cnt_idx};
        end
    endgenerate
endmodule
`default_nettype wire
