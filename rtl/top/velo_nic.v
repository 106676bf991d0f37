// VELO NIC: host interface (device-independent TLP stream), VELO requester and completer,
// register file, counters and the network layer: a cut-through switch with NP network ports and
// one local port, and one link (CRC, go-back-N retransmission, credits per VC, bring-up) per
// network port.
//
// Send path: TLP demux -> requester (packet words, route from the route table) -> flit
// serializer -> switch local input -> network output -> link -> PHY. Receive path: PHY -> link ->
// switch input buffers (per VC) -> local output -> flit deserializer -> completer -> DMA writes.
// Packets pass through forwarding hops without leaving the switch and links; a packet found bad
// after cut-through forwarding began arrives marked bad and the completer drops it.
//
// Interrupts: the completer reports every entry whose last TLP was accepted on tx; the register
// file's IRQ block turns a report for an armed vpid into a PENDING bit and a request on
// irq_valid/irq_ready (one interrupt, MSI vector 0; the board makes it an MSI).
//
// Smaller configurations (a device like the iCE40-HX8K, docs/board-guide.md): SWITCH_LITE = 1
// puts velo_switch_lite (the switch's rules for one network port, one receive FIFO, no
// allocator) in place of velo_switch (NP = 1 only; the CREDIT_STALL counters then stay 0),
// NVC < 4 gives the links and the switch fewer virtual channels (NET.PORTS reports it), and
// COUNTERS = 0 / LINK_COUNTERS = 0 leave out the event counters and the links' counters (the
// registers are there and read 0). The defaults are the whole NIC.
`default_nettype none
`include "velo_spec.vh"
module velo_nic #(
    parameter integer NODE_BITS     = 8,   // node id width (spec param NODE_BITS)
    parameter integer VPID_BITS     = 8,   // vpid width (spec param VPID_BITS)
    parameter integer TLP_W         = 64,  // TLP stream data width: 64 or 128
    parameter integer LINK_W        = 16,  // network flit width: 16, 32 or 64
    parameter integer NP            = 2,   // network ports (1..6): 1 or 2 for a pair or ring, 4 for a 2D torus
    parameter integer VC_DEPTH      = 64,  // switch receive buffer per (port, VC), in flits (<= 127)
    parameter integer REPLAY_DEPTH  = 256, // link replay buffer per port, in flits (power of two)
    parameter integer NVC           = `VELO_NVC, // virtual channels (1..4): VCs 0..NVC-1 (spec NVC: 4)
    parameter integer SWITCH_LITE   = 0,   // 1: velo_switch_lite instead of velo_switch (NP = 1 only)
    parameter integer COUNTERS      = 1,   // 1: the 16 event counters; 0: they read as 0
    parameter integer LINK_COUNTERS = 1    // 1: the links' counters (8 per port); 0: they read as 0
) (
    input  wire              clk,
    input  wire              rst,          // synchronous, active high
    input  wire [15:0]       cfg_id,       // our PCIe id (bus/device/function), from the host core
    // TLP stream from the host (downstream)
    input  wire              rx_valid,
    output wire              rx_ready,
    input  wire              rx_sop,
    input  wire              rx_eop,
    input  wire [127:0]      rx_hdr,
    input  wire [2:0]        rx_bar,
    input  wire [TLP_W-1:0]  rx_data,
    // TLP stream to the host (upstream)
    output wire              tx_valid,
    input  wire              tx_ready,
    output wire              tx_sop,
    output wire              tx_eop,
    output wire [127:0]      tx_hdr,
    output wire [TLP_W-1:0]  tx_data,
    // network ports: one flit {sync[1:0], data} per cycle each way (port p at [(p-1)*(LINK_W+2) +: LINK_W+2])
    output wire [NP*(LINK_W+2)-1:0] phy_tx,
    input  wire [NP*(LINK_W+2)-1:0] phy_rx,
    output wire [NP-1:0]     port_up,      // link status per network port
    // interrupt request (MSI/MSI-X vector 0), valid/ready: raised after every TLP of the mailbox
    // entry that caused it was accepted on tx, held until taken
    output wire              irq_valid,
    input  wire              irq_ready
);
    localparam integer NCNT = `VELO_CNT_NUM;
    localparam integer PW   = LINK_W + 2;
    // route code bits: codes 0 (local) .. NP, and the all-ones code stays invalid
    localparam integer PB   = (NP + 2 <= 4) ? 2 : 3;
    localparam integer NLC  = `VELO_NET_PORT_COUNTERS;  // link counters per port
    wire link_up = &port_up;

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
        .ev_bad_bar(ev_bad_bar), .ev_unsupported(ev_unsup_dmx));

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
        .cmt_valid(cmt_valid), .cmt_vpid(cmt_vpid), .irq_valid(irq_valid), .irq_ready(irq_ready));

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

    // ---------------------------------------------------------------- switch and links
    wire              lo_valid, lo_ready, lo_last, lo_bad;
    wire [LINK_W-1:0] lo_data;
    wire [NP-1:0]        si_valid, si_last, si_bad;
    wire [NP*LINK_W-1:0] si_data;
    wire [NP*2-1:0]      si_vc;
    wire [NP*NVC-1:0]    si_free;
    wire [NP-1:0]        so_valid, so_ready, so_last, so_bad;
    wire [NP*LINK_W-1:0] so_data;
    wire [NP*NVC-1:0]    so_start_ok;
    wire [NP*2-1:0]      port_dim;
    wire [NP-1:0]        port_dateline;
    wire [NP-1:0]        ev_credit_stall;
    wire                 ev_sw_overflow;

    genvar gp;
    generate
        for (gp = 0; gp < NP; gp = gp + 1) begin : g_cfg
            assign port_dim[2*gp +: 2]  = port_cfg[3*gp +: 2];
            assign port_dateline[gp]    = port_cfg[3*gp + 2];
        end
    endgenerate

    generate
        if (SWITCH_LITE != 0) begin : g_lite
            if (NP != 1) begin : g_bad_np
                velo_nic_error_SWITCH_LITE_needs_NP_1 u_err ();
            end
            velo_switch_lite #(.LINK_W(LINK_W), .NVC(NVC), .VC_DEPTH(VC_DEPTH), .PB(PB)) u_sw (
                .clk(clk), .rst(rst),
                .lin_valid(li_valid), .lin_ready(li_ready), .lin_data(li_data), .lin_last(li_last),
                .lout_valid(lo_valid), .lout_ready(lo_ready), .lout_data(lo_data), .lout_last(lo_last),
                .lout_bad(lo_bad),
                .out_valid(so_valid[0]), .out_ready(so_ready[0]), .out_data(so_data[LINK_W-1:0]),
                .out_last(so_last[0]), .out_bad(so_bad[0]), .out_start_ok(so_start_ok[NVC-1:0]),
                .in_valid(si_valid[0]), .in_data(si_data[LINK_W-1:0]), .in_last(si_last[0]), .in_bad(si_bad[0]),
                .in_vc(si_vc[1:0]), .in_free(si_free[NVC-1:0]),
                .port_dateline(port_dateline[0]), .ev_bad_route(ev_no_route));
            // one port: no dimension change to detect; no allocator, so no credit stall to count
            assign ev_credit_stall = {NP{1'b0}};
            assign ev_sw_overflow  = 1'b0;
            wire unused_lite = &{1'b0, port_dim};
        end else begin : g_switch
            if (NVC != `VELO_NVC) begin : g_bad_nvc
                velo_nic_error_velo_switch_needs_all_VCs u_err ();  // fewer VCs: SWITCH_LITE only
            end
            velo_switch #(.NP(NP), .LINK_W(LINK_W), .NVC(NVC), .VC_DEPTH(VC_DEPTH), .PB(PB)) u_sw (
                .clk(clk), .rst(rst),
                .in_valid(si_valid), .in_data(si_data), .in_last(si_last), .in_bad(si_bad), .in_vc(si_vc),
                .in_free(si_free),
                .lin_valid(li_valid), .lin_ready(li_ready), .lin_data(li_data), .lin_last(li_last),
                .out_valid(so_valid), .out_ready(so_ready), .out_data(so_data), .out_last(so_last), .out_bad(so_bad),
                .out_start_ok(so_start_ok),
                .lout_valid(lo_valid), .lout_ready(lo_ready), .lout_data(lo_data), .lout_last(lo_last), .lout_bad(lo_bad),
                .port_dim(port_dim), .port_dateline(port_dateline),
                .ev_credit_stall(ev_credit_stall), .ev_bad_route(ev_no_route), .ev_overflow(ev_sw_overflow));
        end
    endgenerate

    wire [NP*NLC-1:0] link_ev;
    generate
        for (gp = 0; gp < NP; gp = gp + 1) begin : g_link
            wire ev_crc_err, ev_nack, ev_replay, ev_stomp, ev_link_down, ev_ctl_drop, ev_rx_pkt;
            velo_link #(.LINK_W(LINK_W), .NVC(NVC), .VC_DEPTH(VC_DEPTH), .REPLAY_DEPTH(REPLAY_DEPTH)) u_link (
                .clk(clk), .rst(rst),
                .phy_tx(phy_tx[gp*PW +: PW]), .phy_rx(phy_rx[gp*PW +: PW]),
                .tx_valid(so_valid[gp]), .tx_ready(so_ready[gp]), .tx_data(so_data[gp*LINK_W +: LINK_W]),
                .tx_last(so_last[gp]), .tx_bad(so_bad[gp]), .tx_start_ok(so_start_ok[gp*NVC +: NVC]),
                .rx_valid(si_valid[gp]), .rx_data(si_data[gp*LINK_W +: LINK_W]), .rx_last(si_last[gp]),
                .rx_bad(si_bad[gp]), .rx_vc(si_vc[2*gp +: 2]), .rx_free(si_free[gp*NVC +: NVC]),
                .link_up(port_up[gp]),
                .ev_crc_err(ev_crc_err), .ev_nack(ev_nack), .ev_replay(ev_replay), .ev_stomp(ev_stomp),
                .ev_link_down(ev_link_down), .ev_ctl_drop(ev_ctl_drop), .ev_rx_pkt(ev_rx_pkt));
            // counter order: NET_PORT CNT_CRC_ERR, NACK, REPLAY, STOMP, CREDIT_STALL, LINK_DOWN, CTL_DROP, RX_PKTS
            assign link_ev[gp*NLC +: NLC] = {ev_rx_pkt, ev_ctl_drop, ev_link_down, ev_credit_stall[gp],
                                             ev_stomp, ev_replay, ev_nack, ev_crc_err};
        end
    endgenerate

    generate
        if (LINK_COUNTERS != 0) begin : g_ncnt
            velo_counters #(.N(NP * NLC), .IDX_W(6)) u_ncnt (
                .clk(clk), .rst(rst), .inc(link_ev), .clr(ncnt_clr), .clr_idx(ncnt_clr_idx),
                .rd_idx(ncnt_idx), .rd_data(ncnt_data));
        end else begin : g_no_ncnt
            assign ncnt_data = 32'd0;
            wire unused_ncnt = &{1'b0, link_ev, ncnt_clr, ncnt_clr_idx, ncnt_idx};
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

    // the completer sizes packets from their headers; a switch buffer overflow cannot happen while
    // the links keep their credits (the switch bench proves it), it is not counted separately
    wire unused_ok = &{1'b0, r_lnb, ev_sw_overflow};

    // ---------------------------------------------------------------- upstream arbiter
    velo_tlp_tx_arb #(.TLP_W(TLP_W)) u_arb (
        .clk(clk), .rst(rst),
        .a_valid(d_valid), .a_ready(d_ready), .a_sop(d_sop), .a_eop(d_eop), .a_hdr(d_hdr), .a_data(d_data),
        .b_valid(c_valid), .b_ready(c_ready), .b_sop(c_sop), .b_eop(c_eop), .b_hdr(c_hdr), .b_data(c_data),
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
            wire unused_cnt = &{1'b0, inc, cnt_clr, cnt_clr_idx, cnt_idx};
        end
    endgenerate
endmodule
`default_nettype wire
