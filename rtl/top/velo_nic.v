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
// RMA (parameter RMA = 1, docs/rma.md §6): one velo_rma block (command decoder, ATU, DMA read
// engine, initiator, target, notification writer). BAR4 writes and all completions reach it from
// the TLP demux; its TLPs go to the upstream arbiter's port c (after the completer, before the
// register file's completions). Its request packets share the switch's local input with the
// requester (packet merge, round robin); the switch has a second local port pair (NLOC = 2) for
// the response class: the target's responses enter there and responses for this node leave there
// to the initiator, so a response never waits behind a request at either end. Request-class
// packets for this node are split by TYPE after the local output: RMA_PUT/RMA_GET to the target,
// the rest to the completer. With RMA = 0 (small boards, TLP_W = 128) none of this exists.
//
// Packet size: the switch and the links frame RMA packets (TYPE >= 2) by their 8-bit LEN_M1, up to
// MAX_AREA bytes of payload area (256 with RMA: RMA_MTU 240), VELO packets by FRAG_LEN_M1 (at
// most 64 bytes). MAX_AREA sets the switch buffers (VC_DEPTH), the links' replay buffers and
// credit unit; without RMA it is 64 and the network is what it was for VELO messages alone.
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
`include "velo_check.vh"
`include "velo_ports.vh"
module velo_nic #(
    parameter integer NODE_BITS     = 8,   // node id width (spec param NODE_BITS)
    parameter integer VPID_BITS     = 8,   // vpid width (spec param VPID_BITS)
    parameter integer TLP_W         = 64,  // TLP stream data width: 64 or 128
    parameter integer LINK_W        = 16,  // network flit width: 16, 32 or 64
    parameter integer NP            = 2,   // network ports (1..VELO_NP_MAX = 6): 1 or 2 for a pair or ring, 4 for a 2D torus
    parameter integer RMA           = (TLP_W == 64) ? 1 : 0,  // 1: RMA unit (needs TLP_W = 64)
    // largest packet payload area in bytes the network frames: 256 with RMA (RMA packets up to
    // RMA_MTU 240 data bytes), 64 without (VELO messages only: small buffers, e.g. the iCE40 board)
    parameter integer MAX_AREA      = (RMA != 0) ? 256 : 64,
    // switch receive buffer per (port, VC), in flits: a largest packet plus a credit round trip of
    // about 56 cycles (64 when MAX_AREA = 64); at most 127 * 2^k - MAX_PKT_FLITS (docs/net-link.md §4)
    parameter integer VC_DEPTH      = (MAX_AREA <= 64) ? 64 : (LINK_W == 16) ? 192 : (LINK_W == 32) ? 128 : 88,
    // link replay buffer per port, in flits (power of two, >= 2 largest packets)
    parameter integer REPLAY_DEPTH  = ((64 + 8 * MAX_AREA) / LINK_W * 2 > 256) ? 512 : 256,
    parameter integer RMA_REGION_BITS = 8,  // RMA: ATU regions (spec param RMA_REGION_BITS)
    parameter integer RMA_PTE_BITS  = 12,  // RMA: ATU page table entries (spec param RMA_PTE_BITS)
    // RMA: data bytes per packet (spec param RMA_MTU, multiple of 8): a packet's area is at most
    // 16 (NLA and length words) + RMA_MTU, so the largest that fits MAX_AREA: 240 (48 at 64)
    parameter integer RMA_MTU       = (MAX_AREA - 16 > 240) ? 240 : (MAX_AREA - 16) / 8 * 8,
    parameter integer RMA_TAG_BITS  = 4,  // RMA: 2^n initiator commands outstanding
    parameter integer NVC           = `VELO_NVC, // virtual channels (1..4): VCs 0..NVC-1 (spec NVC: 4)
    parameter integer SWITCH_LITE   = 0,   // 1: velo_switch_lite instead of velo_switch (NP = 1 only)
    parameter integer COUNTERS      = 1,   // 1: the 16 event counters; 0: they read as 0
    parameter integer LINK_COUNTERS = 1,   // 1: the links' counters (8 per port); 0: they read as 0
    // 1: register stages in the register file's address decode, the requester's and the
    // completer's decisions and the links (smaller, slower devices such as the iCE40 board,
    // docs/board-guide.md: a few cycles more latency); 0: none (the latency figures)
    parameter integer PIPE          = 0
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

    // parameter checks (the buffers' sizes, MAX_AREA and NVC are checked by velo_link and the
    // switch, the RMA unit's own parameters by velo_rma)
    `VELO_CHECK_NODE_BITS
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK_TLP_W
    `VELO_CHECK_LINK_W
    `VELO_CHECK_NP
    `VELO_CHECK_FLAG(g_check_rma, RMA, "RMA must be 0 or 1")
    `VELO_CHECK(g_check_rma_tlp_w, RMA == 0 || TLP_W == 64, "velo_nic: RMA needs TLP_W = 64")
    // an RMA packet's payload area (NLA and length words, pad, RMA_MTU data bytes) must be framed
    `VELO_CHECK(g_check_rma_mtu, RMA == 0 || (RMA_MTU + 16 <= MAX_AREA && RMA_MTU % 8 == 0), "velo_nic: RMA_MTU must be a multiple of 8, at most MAX_AREA - 16")
    `VELO_CHECK_FLAG(g_check_switch_lite, SWITCH_LITE, "SWITCH_LITE must be 0 or 1")
    `VELO_CHECK_FLAG(g_check_counters, COUNTERS, "COUNTERS must be 0 or 1")
    `VELO_CHECK_FLAG(g_check_link_counters, LINK_COUNTERS, "LINK_COUNTERS must be 0 or 1")
    `VELO_CHECK_PIPE
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
    wire             w4_valid, w4_ready, w4_sop, w4_eop, hc_valid, hc_ready, hc_sop, hc_eop;
    wire [127:0]     w4_hdr, hc_hdr;
    wire [TLP_W-1:0] w4_data, hc_data;

    velo_tlp_rx_demux #(.TLP_W(TLP_W), .RMA(RMA), .PIPE(PIPE)) u_demux (
        .clk(clk), .rst(rst),
        .in_valid(rx_valid), .in_ready(rx_ready), .in_sop(rx_sop), .in_eop(rx_eop),
        .in_hdr(rx_hdr), .in_bar(rx_bar), .in_data(rx_data),
        .req_valid(req_valid), .req_ready(req_ready), .req_sop(req_sop), .req_eop(req_eop),
        .req_hdr(req_hdr), .req_data(req_data),
        .reg_valid(reg_valid), .reg_ready(reg_ready), .reg_sop(reg_sop), .reg_eop(reg_eop),
        .reg_hdr(reg_hdr), .reg_bar(reg_bar), .reg_data(reg_data),
        .rma_valid(w4_valid), .rma_ready(w4_ready), .rma_sop(w4_sop), .rma_eop(w4_eop), .rma_hdr(w4_hdr),
        .rma_data(w4_data),
        .cpl_valid(hc_valid), .cpl_ready(hc_ready), .cpl_sop(hc_sop), .cpl_eop(hc_eop), .cpl_hdr(hc_hdr),
        .cpl_data(hc_data),
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
    // register file <-> RMA unit
    wire        rma_en, rma_busy, rq_busy, rt2_re, rt3_re, acfg_valid, acfg_ready, acfg_pte;
    wire [RMA_REGION_BITS-1:0] rq_region;
    wire [NODE_BITS-1:0] rt2_node, rt3_node;
    wire [14:0] rt2_data, rt3_data;
    wire [15:0] acfg_idx;
    wire [`VELO_TBL_RMA_REGION_REG_W-1:0] acfg_reg;  // register index in a table entry (spec stride)
    wire [31:0] acfg_data, rcnt_data;
    wire        nq_re, nq_en, nq_wp_we, nq_sw_wr, rcnt_clr, ev_rma_read, nq_q_busy;
    wire [VPID_BITS-1:0] nq_vpid, nq_wp_vpid, nq_sw_wr_vpid;
    wire [57:0] nq_base;
    wire [4:0]  nq_log2, rcnt_idx, rcnt_clr_idx;
    wire [16:0] nq_wp, nq_rp, nq_wp_data;

    velo_regfile #(.TLP_W(TLP_W), .VPID_BITS(VPID_BITS), .NODE_BITS(NODE_BITS), .LINK_W(LINK_W),
                   .CNT_IDX_W(5), .NP(NP), .PB(PB), .NVC(NVC), .VC_DEPTH(VC_DEPTH),
                   .NCNT_IDX_W(6), .RMA(RMA), .REGION_BITS(RMA_REGION_BITS), .PTE_BITS(RMA_PTE_BITS),
                   .RMA_MTU(RMA_MTU), .PIPE(PIPE)) u_regs (
        .clk(clk), .rst(rst), .cpl_id(cfg_id),
        .in_valid(reg_valid), .in_ready(reg_ready), .in_sop(reg_sop), .in_eop(reg_eop),
        .in_hdr(reg_hdr), .in_bar(reg_bar), .in_data(reg_data),
        .cpl_valid(c_valid), .cpl_ready(c_ready), .cpl_sop(c_sop), .cpl_eop(c_eop),
        .cpl_hdr(c_hdr), .cpl_data(c_data),
        .node_id(node_id), .enable(enable),
        `VELO_QTBL_CONNECT,
        .rt_re(rt_re), .rt_node(rt_node), .rt_data(rt_data),
        .port_cfg(port_cfg), .port_up(port_up), .ncnt_idx(ncnt_idx), .ncnt_data(ncnt_data),
        .ncnt_clr(ncnt_clr), .ncnt_clr_idx(ncnt_clr_idx), .ev_no_route(ev_no_route),
        .link_up(link_up), .cpl_busy(cpl_busy), .q_vpid(q_vpid), .q_busy(q_busy || nq_q_busy),
        .cnt_idx(cnt_idx), .cnt_data(cnt_data), .cnt_clr(cnt_clr), .cnt_clr_idx(cnt_clr_idx),
        .ev_window_read(ev_window_read), .ev_unsupported(ev_unsup_reg), .ev_bad_access(ev_bad_access),
        .cmt_valid(cmt_valid), .cmt_vpid(cmt_vpid), .irq_valid(irq_valid), .irq_ready(irq_ready),
        .rma_enable(rma_en), .rma_busy(rma_busy), .rq_region(rq_region), .rq_busy(rq_busy),
        .rt2_re(rt2_re), .rt2_node(rt2_node), .rt2_data(rt2_data), .rt3_re(rt3_re), .rt3_node(rt3_node),
        .rt3_data(rt3_data),
        .acfg_valid(acfg_valid), .acfg_ready(acfg_ready), .acfg_pte(acfg_pte), .acfg_idx(acfg_idx),
        .acfg_reg(acfg_reg), .acfg_data(acfg_data),
        .nq_re(nq_re), .nq_vpid(nq_vpid), .nq_base(nq_base), .nq_en(nq_en), .nq_log2(nq_log2), .nq_wp(nq_wp),
        .nq_rp(nq_rp), .nq_wp_we(nq_wp_we), .nq_wp_vpid(nq_wp_vpid), .nq_wp_data(nq_wp_data),
        .nq_sw_wr(nq_sw_wr), .nq_sw_wr_vpid(nq_sw_wr_vpid),
        .rcnt_idx(rcnt_idx), .rcnt_data(rcnt_data), .rcnt_clr(rcnt_clr), .rcnt_clr_idx(rcnt_clr_idx),
        .ev_rma_read(ev_rma_read));

    // ---------------------------------------------------------------- requester
    wire        p_valid, p_ready, p_last;
    wire [63:0] p_data;
    wire [2:0]  p_lnb;
    wire ev_tx_msg, ev_tx_frag, ev_tx_dis, ev_tx_mal, ev_tx_long, ev_tx_page;

    velo_requester #(.TLP_W(TLP_W), .NODE_BITS(NODE_BITS), .VPID_BITS(VPID_BITS), .PIPE(PIPE)) u_req (
        .clk(clk), .rst(rst), .enable(enable), .node_id(node_id),
        .rt_re(rt_re), .rt_node(rt_node), .rt_data(rt_data),
        .in_valid(req_valid), .in_ready(req_ready), .in_sop(req_sop), .in_eop(req_eop),
        .in_hdr(req_hdr), .in_data(req_data),
        .pkt_valid(p_valid), .pkt_ready(p_ready), .pkt_data(p_data), .pkt_last(p_last), .pkt_lnb(p_lnb),
        .ev_tx_msg(ev_tx_msg), .ev_tx_frag(ev_tx_frag), .ev_drop_disabled(ev_tx_dis),
        .ev_drop_malformed(ev_tx_mal), .ev_drop_too_long(ev_tx_long), .ev_drop_cross_page(ev_tx_page));

    // local injection, request class: the requester's packets and the RMA initiator's, merged
    wire        rq_valid, rq_ready, rq_last;     // RMA initiator's request packets
    wire [63:0] rq_data;
    wire [2:0]  rq_lnb;
    wire        m_valid, m_ready, m_last;
    wire [63:0] m_data;
    wire [2:0]  m_lnb;
    generate
        if (RMA != 0) begin : g_merge
            velo_pkt_merge u_pmerge (
                .clk(clk), .rst(rst),
                .a_valid(p_valid), .a_ready(p_ready), .a_data(p_data), .a_last(p_last), .a_lnb(p_lnb),
                .b_valid(rq_valid), .b_ready(rq_ready), .b_data(rq_data), .b_last(rq_last), .b_lnb(rq_lnb),
                .out_valid(m_valid), .out_ready(m_ready), .out_data(m_data), .out_last(m_last), .out_lnb(m_lnb));
        end else begin : g_nomerge
            assign m_valid = p_valid;  assign p_ready = m_ready;  assign m_data = p_data;
            assign m_last  = p_last;   assign m_lnb   = p_lnb;    assign rq_ready = 1'b0;
            wire unused_rq = &{1'b0, rq_valid, rq_data, rq_last, rq_lnb};
        end
    endgenerate

    wire              li_valid, li_ready, li_last;
    wire [LINK_W-1:0] li_data;
    velo_flit_tx #(.LINK_W(LINK_W)) u_ftx (
        .clk(clk), .rst(rst),
        .pkt_valid(m_valid), .pkt_ready(m_ready), .pkt_data(m_data), .pkt_last(m_last), .pkt_lnb(m_lnb),
        .flit_valid(li_valid), .flit_ready(li_ready), .flit_data(li_data), .flit_last(li_last));

    // local injection, response class (RMA target's responses): the switch's second local input
    wire        rp_valid, rp_ready, rp_last;
    wire [63:0] rp_data;
    wire [2:0]  rp_lnb;
    wire              l2i_valid, l2i_ready, l2i_last;
    wire [LINK_W-1:0] l2i_data;
    velo_flit_tx #(.LINK_W(LINK_W)) u_ftx2 (
        .clk(clk), .rst(rst),
        .pkt_valid(rp_valid), .pkt_ready(rp_ready), .pkt_data(rp_data), .pkt_last(rp_last), .pkt_lnb(rp_lnb),
        .flit_valid(l2i_valid), .flit_ready(l2i_ready), .flit_data(l2i_data), .flit_last(l2i_last));

    // ---------------------------------------------------------------- switch and links
    wire              lo_valid, lo_ready, lo_last, lo_bad;
    wire [LINK_W-1:0] lo_data;
    wire              l2o_valid, l2o_ready, l2o_last, l2o_bad;
    wire [LINK_W-1:0] l2o_data;
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
            `VELO_CHECK(g_check_np, NP == 1, "velo_nic: SWITCH_LITE needs NP = 1")
            `VELO_CHECK(g_check_rma, RMA == 0, "velo_nic: SWITCH_LITE needs RMA = 0 (no second local port)")
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
            // no response-class local port without RMA
            assign l2i_ready = 1'b0;
            assign l2o_valid = 1'b0;
            assign l2o_data  = {LINK_W{1'b0}};
            assign l2o_last  = 1'b0;
            assign l2o_bad   = 1'b0;
            wire unused_lite = &{1'b0, port_dim, l2i_valid, l2i_data, l2i_last, l2o_ready};
        end else begin : g_switch
            `VELO_CHECK(g_check_nvc, NVC == `VELO_NVC, "velo_nic: velo_switch needs all VCs (fewer: SWITCH_LITE only)")
            velo_switch #(.NP(NP), .LINK_W(LINK_W), .NVC(NVC), .VC_DEPTH(VC_DEPTH), .PB(PB), .MAX_AREA(MAX_AREA),
                          .NLOC(RMA != 0 ? 2 : 1)) u_sw (
                .clk(clk), .rst(rst),
                .in_valid(si_valid), .in_data(si_data), .in_last(si_last), .in_bad(si_bad), .in_vc(si_vc),
                .in_free(si_free),
                .lin_valid(li_valid), .lin_ready(li_ready), .lin_data(li_data), .lin_last(li_last),
                .lin2_valid(l2i_valid), .lin2_ready(l2i_ready), .lin2_data(l2i_data), .lin2_last(l2i_last),
                .out_valid(so_valid), .out_ready(so_ready), .out_data(so_data), .out_last(so_last), .out_bad(so_bad),
                .out_start_ok(so_start_ok),
                .lout_valid(lo_valid), .lout_ready(lo_ready), .lout_data(lo_data), .lout_last(lo_last), .lout_bad(lo_bad),
                .lout2_valid(l2o_valid), .lout2_ready(l2o_ready), .lout2_data(l2o_data), .lout2_last(l2o_last),
                .lout2_bad(l2o_bad),
                .port_dim(port_dim), .port_dateline(port_dateline),
                .ev_credit_stall(ev_credit_stall), .ev_bad_route(ev_no_route), .ev_overflow(ev_sw_overflow));
        end
    endgenerate

    wire [NP*NLC-1:0] link_ev;
    generate
        for (gp = 0; gp < NP; gp = gp + 1) begin : g_link
            wire ev_crc_err, ev_nack, ev_replay, ev_stomp, ev_link_down, ev_ctl_drop, ev_rx_pkt;
            velo_link #(.LINK_W(LINK_W), .NVC(NVC), .MAX_AREA(MAX_AREA), .VC_DEPTH(VC_DEPTH),
                        .REPLAY_DEPTH(REPLAY_DEPTH), .PIPE(PIPE)) u_link (
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

    wire        x_valid, x_ready, x_last, x_bad;  // request class for this node, before the split
    wire [63:0] x_data;
    velo_flit_rx #(.LINK_W(LINK_W)) u_frx (
        .clk(clk), .rst(rst),
        .flit_valid(lo_valid), .flit_ready(lo_ready), .flit_data(lo_data), .flit_last(lo_last),
        .pkt_valid(x_valid), .pkt_ready(x_ready), .pkt_data(x_data), .pkt_last(x_last), .pkt_lnb(r_lnb));
    assign x_bad = lo_bad;

    // RMA requests (PUT, GET) to the target, everything else to the completer
    wire        qi_valid, qi_ready, qi_last, qi_bad, r_bad;
    wire [63:0] qi_data;
    wire [3:0]  x_type = x_data[`VELO_PKT_HDR_TYPE];
    generate
        if (RMA != 0) begin : g_split
            velo_pkt_split u_split (
                .clk(clk), .rst(rst),
                .in_valid(x_valid), .in_ready(x_ready), .in_data(x_data), .in_last(x_last), .in_bad(x_bad),
                .to_b(x_type == `VELO_PKT_TYPE_RMA_PUT || x_type == `VELO_PKT_TYPE_RMA_GET),
                .a_valid(r_valid), .a_ready(r_ready), .a_data(r_data), .a_last(r_last), .a_bad(r_bad),
                .b_valid(qi_valid), .b_ready(qi_ready), .b_data(qi_data), .b_last(qi_last), .b_bad(qi_bad));
        end else begin : g_nosplit
            assign r_valid = x_valid;  assign x_ready = r_ready;  assign r_data = x_data;
            assign r_last  = x_last;   assign r_bad   = x_bad;
            assign qi_valid = 1'b0;    assign qi_data = 64'd0;    assign qi_last = 1'b0;  assign qi_bad = 1'b0;
            wire unused_qi = &{1'b0, qi_ready, x_type};
        end
    endgenerate

    // response class for this node (the switch's second local output) to the RMA initiator
    wire        ri_valid, ri_ready, ri_last;
    wire [63:0] ri_data;
    wire [2:0]  ri_lnb;
    velo_flit_rx #(.LINK_W(LINK_W)) u_frx2 (
        .clk(clk), .rst(rst),
        .flit_valid(l2o_valid), .flit_ready(l2o_ready), .flit_data(l2o_data), .flit_last(l2o_last),
        .pkt_valid(ri_valid), .pkt_ready(ri_ready), .pkt_data(ri_data), .pkt_last(ri_last), .pkt_lnb(ri_lnb));

    velo_completer #(.TLP_W(TLP_W), .VPID_BITS(VPID_BITS), .PIPE(PIPE)) u_cpl (
        .clk(clk), .rst(rst), .enable(enable), .req_id(cfg_id),
        .pkt_valid(r_valid), .pkt_ready(r_ready), .pkt_data(r_data), .pkt_last(r_last), .pkt_bad(r_bad),
        `VELO_QTBL_CONNECT, .q_vpid(q_vpid), .q_busy(q_busy), .busy(cpl_busy),
        .tx_valid(d_valid), .tx_ready(d_ready), .tx_sop(d_sop), .tx_eop(d_eop),
        .tx_hdr(d_hdr), .tx_data(d_data),
        .ev_rx_msg(ev_rx_msg), .ev_rx_frag(ev_rx_frag), .ev_drop_disabled(ev_rx_dis),
        .ev_drop_vpid(ev_rx_vpid), .ev_drop_bad(ev_rx_bad), .ev_backpressure(ev_bp),
        .cmt_valid(cmt_valid), .cmt_vpid(cmt_vpid));

    // the completer sizes packets from their headers; a switch buffer overflow cannot happen while
    // the links keep their credits (the switch bench proves it), it is not counted separately
    wire unused_ok = &{1'b0, r_lnb, ri_lnb, ev_sw_overflow};

    // ---------------------------------------------------------------- RMA unit
    wire             rt_valid, rt_ready, rt_sop, rt_eop;  // its TLPs to the host
    wire [127:0]     rt_hdr;
    wire [TLP_W-1:0] rt_data_tlp;
    generate
        if (RMA != 0) begin : g_rma
            velo_rma #(.NODE_BITS(NODE_BITS), .VPID_BITS(VPID_BITS), .REGION_BITS(RMA_REGION_BITS),
                       .PTE_BITS(RMA_PTE_BITS), .MTU(RMA_MTU), .TAG_BITS(RMA_TAG_BITS)) u_rma (
                .clk(clk), .rst(rst), .enable(enable && rma_en), .node_id(node_id), .req_id(cfg_id),
                .w_valid(w4_valid), .w_ready(w4_ready), .w_sop(w4_sop), .w_eop(w4_eop), .w_hdr(w4_hdr),
                .w_data(w4_data[63:0]),
                .c_valid(hc_valid), .c_ready(hc_ready), .c_sop(hc_sop), .c_eop(hc_eop), .c_hdr(hc_hdr),
                .c_data(hc_data[63:0]),
                .tx_valid(rt_valid), .tx_ready(rt_ready), .tx_sop(rt_sop), .tx_eop(rt_eop), .tx_hdr(rt_hdr),
                .tx_data(rt_data_tlp[63:0]),
                .qo_valid(rq_valid), .qo_ready(rq_ready), .qo_data(rq_data), .qo_last(rq_last), .qo_lnb(rq_lnb),
                .qi_valid(qi_valid), .qi_ready(qi_ready), .qi_data(qi_data), .qi_last(qi_last), .qi_bad(qi_bad),
                .so_valid(rp_valid), .so_ready(rp_ready), .so_data(rp_data), .so_last(rp_last), .so_lnb(rp_lnb),
                .si_valid(ri_valid), .si_ready(ri_ready), .si_data(ri_data), .si_last(ri_last), .si_bad(l2o_bad),
                .ri_re(rt2_re), .ri_node(rt2_node), .ri_data(rt2_data),
                .rt_re(rt3_re), .rt_node(rt3_node), .rt_data(rt3_data),
                .cfg_valid(acfg_valid), .cfg_ready(acfg_ready), .cfg_pte(acfg_pte), .cfg_idx(acfg_idx),
                .cfg_reg(acfg_reg), .cfg_data(acfg_data), .q_region(rq_region), .q_region_busy(rq_busy),
                .tbl_re(nq_re), .tbl_vpid(nq_vpid), .tbl_base(nq_base), .tbl_en(nq_en), .tbl_log2(nq_log2),
                .tbl_wp(nq_wp), .tbl_rp(nq_rp), .wp_we(nq_wp_we), .wp_vpid(nq_wp_vpid),
                .wp_data(nq_wp_data), .sw_wr(nq_sw_wr), .sw_wr_vpid(nq_sw_wr_vpid),
                .q_vpid(q_vpid), .q_vpid_busy(nq_q_busy),
                .busy(rma_busy), .ev_cmd_read(ev_rma_read),
                .rcnt_idx(rcnt_idx), .rcnt_data(rcnt_data), .rcnt_clr(rcnt_clr), .rcnt_clr_idx(rcnt_clr_idx));
            if (TLP_W > 64) begin : g_tlpw  // not supported: RMA needs TLP_W = 64 (never built)
                assign rt_data_tlp[TLP_W-1:64] = {(TLP_W-64){1'b0}};
            end
        end else begin : g_norma
            assign w4_ready = 1'b1;  assign hc_ready = 1'b1;
            assign rt_valid = 1'b0;  assign rt_sop = 1'b0;  assign rt_eop = 1'b0;
            assign rt_hdr = 128'd0;  assign rt_data_tlp = {TLP_W{1'b0}};
            assign rq_valid = 1'b0;  assign rq_data = 64'd0;  assign rq_last = 1'b0;  assign rq_lnb = 3'd0;
            assign rp_valid = 1'b0;  assign rp_data = 64'd0;  assign rp_last = 1'b0;  assign rp_lnb = 3'd0;
            assign ri_ready = 1'b1;  assign qi_ready = 1'b1;
            assign rt2_re = 1'b0;    assign rt2_node = {NODE_BITS{1'b0}};
            assign rt3_re = 1'b0;    assign rt3_node = {NODE_BITS{1'b0}};
            assign acfg_ready = 1'b1; assign rq_busy = 1'b0;  assign rma_busy = 1'b0;
            assign nq_re = 1'b0;     assign nq_vpid = {VPID_BITS{1'b0}};
            assign nq_wp_we = 1'b0;  assign nq_wp_vpid = {VPID_BITS{1'b0}};  assign nq_wp_data = 17'd0;
            assign nq_q_busy = 1'b0; assign rcnt_data = 32'd0;
            wire unused_rma = &{1'b0, w4_valid, w4_sop, w4_eop, w4_hdr, w4_data, hc_valid, hc_sop, hc_eop, hc_hdr,
                                hc_data, rt_ready, rq_ready, rp_ready, ri_valid, ri_data, ri_last, l2o_bad, qi_valid,
                                qi_data, qi_last, qi_bad, rt2_data, rt3_data, acfg_valid, acfg_pte, acfg_idx,
                                acfg_reg, acfg_data, rq_region, nq_base, nq_en, nq_log2, nq_wp, nq_rp, nq_sw_wr,
                                nq_sw_wr_vpid, rma_en, ev_rma_read, rcnt_idx, rcnt_clr, rcnt_clr_idx};
        end
    endgenerate

    // ---------------------------------------------------------------- upstream arbiter
    velo_tlp_tx_arb #(.TLP_W(TLP_W)) u_arb (
        .clk(clk), .rst(rst),
        .a_valid(d_valid), .a_ready(d_ready), .a_sop(d_sop), .a_eop(d_eop), .a_hdr(d_hdr), .a_data(d_data),
        .b_valid(c_valid), .b_ready(c_ready), .b_sop(c_sop), .b_eop(c_eop), .b_hdr(c_hdr), .b_data(c_data),
        .c_valid(rt_valid), .c_ready(rt_ready), .c_sop(rt_sop), .c_eop(rt_eop), .c_hdr(rt_hdr), .c_data(rt_data_tlp),
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
