// The RMA unit of the NIC (docs/rma.md): everything of RMA behind one block, so that velo_nic
// instantiates one unit.
//
//   BAR4 writes --> velo_rma_cmd --> velo_rma_init --request packets (class 0)--> (switch, local 0)
//                                      |  ^    ^ \--response packets in <-- velo_pkt_filter <-- (local 2)
//   request packets in (local 0) --> velo_rma_tgt --response packets (class 1)--> (switch, local 2)
//                                      |  |
//   ATU lookups of both ---------> velo_atu (one, round robin; responses routed by tag)
//   DMA reads of both ----------> velo_rma_rdmux --> velo_dma_rd (one; completions from the demux)
//   notification entries of both -> velo_rma_notify (one; the target waits for its report)
//   DMA writes (init, tgt), notification writes, DMA reads --> velo_tlp_merge --> tx (arbiter port c)
//
// Host read completions arrive behind the CPU's posted writes (PCIe ordering), so nothing the NIC
// needs to accept a posted write may wait for one of its own reads (docs/rma.md §6.1): a put packet
// starts only when its data are in the initiator's read FIFO (velo_rma_init, rd_avail from
// velo_rma_rdmux), and the target queues GETs instead of holding its request input while a get
// waits for host reads (velo_rma_tgt GET queue; one get per target node from each initiator).
// Responses must never wait behind requests: the initiator's read data are buffered with reserved
// room (velo_rma_rdmux) so they never stall the shared read engine; the response input is a
// store-and-forward filter (bad packets, e.g. truncated by a link error after cut-through, are
// dropped whole: the initiator has no bad input). Known limit: the one notification writer serves
// both engines in order, so a TARGET entry waiting for room in a full queue also holds the
// initiator's entries (software keeps its queues from filling, docs/rma.md §4).
//
// Counters (spec list rma_counters, RMA.CNT_BASE): kept here, read combinationally (rcnt_*),
// cleared by a register write; byte counters add the bytes of the cycle.
//
// Clock gating in simulation (docs/simulator.md): every register of the unit is clocked by gclk,
// which velo_sim_gate stops (Verilator with +velo_sim_gate only; elsewhere gclk = clk) in cycles
// where no register can change: every block is at rest (its idle output: FSMs in their rest
// state, FIFOs and queues empty, no tag outstanding, no quarantined DMA read slot, no lookup,
// release, notification or event pending) and no input carries anything (reset, a BAR4 write,
// a completion, a request or response packet, an ATU table write, a notification queue write by
// software, a counter clear or a BAR4 read event). At rest the outputs are functions of registers
// that hold and of inputs (q_region_busy, q_vpid_busy, rcnt_data), so they hold too. Data
// registers rewritten every cycle but read only with a valid (the blocks' idle comments) may
// differ while gated; the edge that raises their valid rewrites them. The one free-running
// register, the DMA read engine's timeout prescaler, stays on clk (u_dma_tick). Inside the unit,
// the initiator (with its response filter), the target, the DMA read engine and the ATU have gates of
// their own, each open while its block is not at rest or one of its inputs carries something.
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_ports.vh"
module velo_rma #(
    parameter integer NODE_BITS   = 8,    // node id width (spec param NODE_BITS), 1..8
    parameter integer VPID_BITS   = 8,    // vpid width (spec param VPID_BITS), 1..8
    parameter integer REGION_BITS = 8,    // ATU regions (spec param RMA_REGION_BITS), 1..12
    parameter integer PTE_BITS    = 12,   // ATU page table entries (spec param RMA_PTE_BITS), 4..16
    parameter integer MTU         = 48,   // data bytes per packet (spec param RMA_MTU), multiple of 8, 8..240
    parameter integer TAG_BITS    = 4,    // 2^TAG_BITS initiator commands outstanding, 1..6
    parameter integer MPS         = 256,  // max payload of a DMA write (target): power of 2, 64..4096
    parameter integer MRRS        = 512,  // max read request size (DMA reads): power of 2, 128..4096
    parameter integer SLOTS_LOG2  = 2,    // 2^SLOTS_LOG2 target request packet slots, >= 1
    parameter integer TIMEOUT     = 65536 // DMA read completion timeout in cycles, >= 4
) (
    input  wire                 clk,
    input  wire                 rst,        // synchronous, active high
    input  wire                 enable,     // CTRL.CONTROL.ENABLE and RMA.CONTROL.ENABLE
    input  wire [7:0]           node_id,
    input  wire [15:0]          req_id,
    // BAR4 posted writes (demux)
    input  wire                 w_valid,
    output wire                 w_ready,
    input  wire                 w_sop,
    input  wire                 w_eop,
    input  wire [127:0]         w_hdr,
    input  wire [63:0]          w_data,
    // completions (demux)
    input  wire                 c_valid,
    output wire                 c_ready,
    input  wire                 c_sop,
    input  wire                 c_eop,
    input  wire [127:0]         c_hdr,
    input  wire [63:0]          c_data,
    // TLPs to the host (upstream arbiter port c)
    output wire                 tx_valid,
    input  wire                 tx_ready,
    output wire                 tx_sop,
    output wire                 tx_eop,
    output wire [127:0]         tx_hdr,
    output wire [63:0]          tx_data,
    // request packets out (initiator; request class), packets in (target; request class)
    output wire                 qo_valid,
    input  wire                 qo_ready,
    output wire [63:0]          qo_data,
    output wire                 qo_last,
    output wire [2:0]           qo_lnb,
    input  wire                 qi_valid,
    output wire                 qi_ready,
    input  wire [63:0]          qi_data,
    input  wire                 qi_last,
    input  wire                 qi_bad,
    // response packets out (target; response class), packets in (initiator; response class)
    output wire                 so_valid,
    input  wire                 so_ready,
    output wire [63:0]          so_data,
    output wire                 so_last,
    output wire [2:0]           so_lnb,
    input  wire                 si_valid,
    output wire                 si_ready,
    input  wire [63:0]          si_data,
    input  wire                 si_last,
    input  wire                 si_bad,
    // route table read ports (initiator, target): data the cycle after *_re
    output wire                 ri_re,
    output wire [NODE_BITS-1:0] ri_node,
    input  wire [14:0]          ri_data,
    output wire                 rt_re,
    output wire [NODE_BITS-1:0] rt_node,
    input  wire [14:0]          rt_data,
    // ATU table writes (register file)
    input  wire                 cfg_valid,
    output wire                 cfg_ready,
    input  wire                 cfg_pte,
    input  wire [15:0]          cfg_idx,
    input  wire [`VELO_TBL_RMA_REGION_REG_W-1:0] cfg_reg,  // register index in the entry (byte offset / 4)
    input  wire [31:0]          cfg_data,
    input  wire [REGION_BITS-1:0] q_region,
    output wire                 q_region_busy,
    // notification queue table port of velo_rma_notify (register file RAMs, like the mailbox
    // table; velo_ports.vh)
    `VELO_QTBL_WRITER_PORTS(VPID_BITS),
    input  wire [VPID_BITS-1:0] q_vpid,
    output wire                 q_vpid_busy,
    // status, counters
    output wire                 busy,
    input  wire                 ev_cmd_read,  // a read of BAR4 was answered with UR (register file)
    input  wire [4:0]           rcnt_idx,
    output reg  [31:0]          rcnt_data,
    input  wire                 rcnt_clr,
    input  wire [4:0]           rcnt_clr_idx
);
    `VELO_CHECK_NODE_BITS
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK(g_check_region_bits, REGION_BITS >= 1 && REGION_BITS <= 12, "velo_rma: REGION_BITS must be 1..12")
    `VELO_CHECK(g_check_pte_bits, PTE_BITS >= 4 && PTE_BITS <= 16, "velo_rma: PTE_BITS must be 4..16")
    `VELO_CHECK(g_check_mtu, MTU >= 8 && MTU <= 240 && MTU % 8 == 0, "velo_rma: MTU must be 8..240, a multiple of 8")
    `VELO_CHECK(g_check_tag_bits, TAG_BITS >= 1 && TAG_BITS <= 6, "velo_rma: TAG_BITS must be 1..6")
    `VELO_CHECK(g_check_mps, MPS >= 64 && MPS <= 4096 && (MPS & (MPS - 1)) == 0, "velo_rma: MPS must be a power of 2, 64..4096")
    `VELO_CHECK(g_check_mrrs, MRRS >= 128 && MRRS <= 4096 && (MRRS & (MRRS - 1)) == 0, "velo_rma: MRRS must be a power of 2, 128..4096")
    `VELO_CHECK(g_check_slots_log2, SLOTS_LOG2 >= 1, "velo_rma: SLOTS_LOG2 must be at least 1")
    `VELO_CHECK(g_check_timeout, TIMEOUT >= 4, "velo_rma: TIMEOUT must be at least 4")

    localparam integer TCTX = 16;           // target DMA read context

    // ---------------------------------------------------------------- clock gates (simulation)
    // the unit's (gclk: command decoder, read multiplexer, notification writer, counters,
    // arbiters) and one each for the four big blocks, which are mostly not all busy at once (a
    // put keeps the initiator and the DMA read engine of one NIC and the target of the other
    // busy, and the ATU only for a lookup per page or packet): the initiator with its response
    // filter (gclk_i), the target (gclk_t), the DMA read engine (gclk_d), the ATU (gclk_a). Each block's enable is its own contract (its idle comment): not at rest, or
    // a valid on one of the inputs that its contract names; a block's enable implies the unit's.
    wire gclk, gate_en, gclk_i, gate_en_i, gclk_t, gate_en_t, gclk_d, gate_en_d, gclk_a, gate_en_a;
    velo_sim_gate u_gate (.clk(clk), .en(gate_en), .gclk(gclk));
    velo_sim_gate u_gate_i (.clk(clk), .en(gate_en_i), .gclk(gclk_i));
    velo_sim_gate u_gate_t (.clk(clk), .en(gate_en_t), .gclk(gclk_t));
    velo_sim_gate u_gate_d (.clk(clk), .en(gate_en_d), .gclk(gclk_d));
    velo_sim_gate u_gate_a (.clk(clk), .en(gate_en_a), .gclk(gclk_a));
    localparam integer NRC  = `VELO_RMA_CNT_NUM;

    // ---------------------------------------------------------------- command decoder
    wire         cm_valid, cm_ready;
    wire [255:0] cm_data;
    wire [VPID_BITS-1:0] cm_vpid;
    wire [6:0]   cm_slot;
    wire [7:0]   cm_slot_cnt;
    wire [3:0]   cm_err;
    wire         ev_put, ev_get_cmd, ev_torn, ev_badcmd, cmd_idle;
    velo_rma_cmd #(.TLP_W(64), .NODE_BITS(NODE_BITS), .VPID_BITS(VPID_BITS)) u_cmd (
        .clk(gclk), .rst(rst),
        .in_valid(w_valid), .in_ready(w_ready), .in_sop(w_sop), .in_eop(w_eop), .in_hdr(w_hdr), .in_data(w_data),
        .out_valid(cm_valid), .out_ready(cm_ready), .out_cmd(cm_data), .out_vpid(cm_vpid), .out_slot(cm_slot),
        .out_slot_cnt(cm_slot_cnt), .out_err(cm_err),
        .ev_cmd_put(ev_put), .ev_cmd_get(ev_get_cmd), .ev_cmd_torn(ev_torn), .ev_cmd_bad(ev_badcmd),
        .idle(cmd_idle));

    // ---------------------------------------------------------------- ATU, shared
    wire        i_lk_valid, i_lk_ready, i_rs_valid, i_rs_ready, i_rel_valid, i_rel_ready;
    wire [63:0] i_lk_nla;
    wire [23:0] i_lk_len;
    wire [VPID_BITS-1:0] i_lk_vpid;
    wire [1:0]  i_lk_kind;
    wire [REGION_BITS-1:0] i_rel_region;
    wire        t_lk_valid, t_lk_ready, t_lk_tag, t_rs_valid, t_rs_ready, t_rel_valid;
    wire [63:0] t_lk_nla;
    wire [23:0] t_lk_len;
    wire [VPID_BITS-1:0] t_lk_vpid;
    wire [NODE_BITS-1:0] t_lk_node;
    wire [23:0] t_lk_key_hi;
    wire [1:0]  t_lk_kind;
    wire [REGION_BITS-1:0] t_rel_region;
    wire        a_lk_ready, a_rs_valid;
    wire [3:0]  a_rs_err;
    wire [63:0] a_rs_addr;
    wire [21:0] a_rs_room;
    wire [REGION_BITS-1:0] a_rs_region;
    wire [VPID_BITS-1:0] a_rs_owner;
    wire [1:0]  a_rs_tag;
    wire        ev_rel_underflow, ev_cfg_bad, atu_idle;

    // lookups round robin (the engine not served last first); tag = {target, target's tag}
    reg  lk_last_t;
    wire lk_sel_t = t_lk_valid && (!i_lk_valid || !lk_last_t);
    assign i_lk_ready = !lk_sel_t && a_lk_ready;
    assign t_lk_ready = lk_sel_t && a_lk_ready;
    always @(posedge gclk) begin
        if (rst) lk_last_t <= 1'b0;
        else if ((i_lk_valid || t_lk_valid) && a_lk_ready) lk_last_t <= lk_sel_t;
    end
    // responses in lookup order, to the engine named by the tag
    assign i_rs_valid = a_rs_valid && !a_rs_tag[1];
    assign t_rs_valid = a_rs_valid && a_rs_tag[1];
    wire a_rs_ready = a_rs_tag[1] ? t_rs_ready : i_rs_ready;
    // releases: the target's cannot wait, the initiator's can
    assign i_rel_ready = !t_rel_valid;

    // the initiator's lookups are local kinds (the ATU ignores node and key bits 31:8 for them);
    // the target's name the requesting initiator and the key bits 31:8 of the request
    velo_atu #(.REGION_BITS(REGION_BITS), .PTE_BITS(PTE_BITS), .VPID_BITS(VPID_BITS), .NODE_BITS(NODE_BITS),
               .TAG_W(2)) u_atu (
        .clk(gclk_a), .rst(rst),
        .cfg_valid(cfg_valid), .cfg_ready(cfg_ready), .cfg_pte(cfg_pte), .cfg_idx(cfg_idx), .cfg_reg(cfg_reg),
        .cfg_data(cfg_data),
        .lk_valid(i_lk_valid || t_lk_valid), .lk_ready(a_lk_ready),
        .lk_nla(lk_sel_t ? t_lk_nla : i_lk_nla), .lk_len(lk_sel_t ? t_lk_len : i_lk_len),
        .lk_vpid(lk_sel_t ? t_lk_vpid : i_lk_vpid), .lk_kind(lk_sel_t ? t_lk_kind : i_lk_kind),
        .lk_node(lk_sel_t ? t_lk_node : {NODE_BITS{1'b0}}), .lk_key_hi(lk_sel_t ? t_lk_key_hi : 24'd0),
        .lk_tag({lk_sel_t, lk_sel_t && t_lk_tag}),
        .rs_valid(a_rs_valid), .rs_ready(a_rs_ready), .rs_err(a_rs_err), .rs_addr(a_rs_addr), .rs_room(a_rs_room),
        .rs_region(a_rs_region), .rs_owner(a_rs_owner), .rs_tag(a_rs_tag),
        .rel_valid(t_rel_valid || i_rel_valid), .rel_region(t_rel_valid ? t_rel_region : i_rel_region),
        .q_region(q_region), .q_busy(q_region_busy),
        .idle(atu_idle), .ev_rel_underflow(ev_rel_underflow), .ev_cfg_bad(ev_cfg_bad));

    // ---------------------------------------------------------------- DMA reads, shared
    wire        i_rq_valid, i_rq_ready, i_rd_valid, i_rd_ready, i_rd_last, i_rd_err;
    wire [63:0] i_rq_addr, i_rd_data;
    wire [11:0] i_rq_len_m1;
    wire [TAG_BITS-1:0] i_rq_ctx, i_rd_ctx;
    wire [7:0]  i_rd_be;
    wire [13:0] i_rd_avail;
    wire        i_rd_errq;
    wire        t_rq_valid, t_rq_ready, t_rd_valid, t_rd_ready, t_rd_first, t_rd_last, t_rd_err;
    wire [63:0] t_rq_addr, t_rd_data;
    wire [11:0] t_rq_len_m1;
    wire [TCTX-1:0] t_rq_ctx, t_rd_ctx;
    wire [7:0]  t_rd_be;
    wire        d_rq_valid, d_rq_ready, d_rd_valid, d_rd_ready, d_rd_first, d_rd_last, d_rd_err;
    wire [63:0] d_rq_addr, d_rd_data;
    wire [11:0] d_rq_len_m1;
    wire [TCTX:0] d_rq_ctx, d_rd_ctx;
    wire [7:0]  d_rd_be;
    wire        rdmux_idle;

    velo_rma_rdmux #(.TAG_BITS(TAG_BITS), .TCTX_W(TCTX), .FIFO_AW(10)) u_rdmux (
        .clk(gclk), .rst(rst),
        .i_rq_valid(i_rq_valid), .i_rq_ready(i_rq_ready), .i_rq_addr(i_rq_addr), .i_rq_len_m1(i_rq_len_m1),
        .i_rq_ctx(i_rq_ctx), .i_rd_valid(i_rd_valid), .i_rd_ready(i_rd_ready), .i_rd_data(i_rd_data),
        .i_rd_be(i_rd_be), .i_rd_last(i_rd_last), .i_rd_err(i_rd_err), .i_rd_ctx(i_rd_ctx),
        .i_rd_bytes(i_rd_avail), .i_rd_errq(i_rd_errq),
        .t_rq_valid(t_rq_valid), .t_rq_ready(t_rq_ready), .t_rq_addr(t_rq_addr), .t_rq_len_m1(t_rq_len_m1),
        .t_rq_ctx(t_rq_ctx), .t_rd_valid(t_rd_valid), .t_rd_ready(t_rd_ready), .t_rd_data(t_rd_data),
        .t_rd_be(t_rd_be), .t_rd_first(t_rd_first), .t_rd_last(t_rd_last), .t_rd_err(t_rd_err), .t_rd_ctx(t_rd_ctx),
        .rq_valid(d_rq_valid), .rq_ready(d_rq_ready), .rq_addr(d_rq_addr), .rq_len_m1(d_rq_len_m1), .rq_ctx(d_rq_ctx),
        .rd_valid(d_rd_valid), .rd_ready(d_rd_ready), .rd_data(d_rd_data), .rd_be(d_rd_be), .rd_first(d_rd_first),
        .rd_last(d_rd_last), .rd_err(d_rd_err), .rd_ctx(d_rd_ctx), .idle(rdmux_idle));

    wire         mrd_valid, mrd_ready, mrd_sop, mrd_eop, dma_busy, dma_idle, dma_tick;
    wire [127:0] mrd_hdr;
    wire [63:0]  mrd_data;
    wire [31:0]  dc0, dc1, dc2, dc3, dc4;
    velo_dma_rd #(.TLP_W(64), .MRRS(MRRS), .TAGS(32), .TAG_W(8), .CB_LOG2(13), .CTX_W(TCTX + 1),
                  .TIMEOUT(TIMEOUT), .TICK_IN(1)) u_dma (
        .clk(gclk_d), .rst(rst), .req_id(req_id), .tick_in(dma_tick),
        .rq_valid(d_rq_valid), .rq_ready(d_rq_ready), .rq_addr(d_rq_addr), .rq_len_m1(d_rq_len_m1), .rq_ctx(d_rq_ctx),
        .rd_valid(d_rd_valid), .rd_ready(d_rd_ready), .rd_data(d_rd_data), .rd_be(d_rd_be), .rd_first(d_rd_first),
        .rd_last(d_rd_last), .rd_err(d_rd_err), .rd_ctx(d_rd_ctx),
        .tx_valid(mrd_valid), .tx_ready(mrd_ready), .tx_sop(mrd_sop), .tx_eop(mrd_eop), .tx_hdr(mrd_hdr),
        .tx_data(mrd_data),
        .cpl_valid(c_valid), .cpl_ready(c_ready), .cpl_sop(c_sop), .cpl_eop(c_eop), .cpl_hdr(c_hdr), .cpl_data(c_data),
        .busy(dma_busy), .idle(dma_idle), .cnt_reads(dc0), .cnt_cpl_bytes(dc1), .cnt_errors(dc2), .cnt_timeouts(dc3),
        .cnt_unexpected(dc4));

    // its timeout prescaler on the free-running clock: gating the idle engine never shifts a timeout
    velo_tick #(.N((TIMEOUT / 4 > 0) ? TIMEOUT / 4 : 1)) u_dma_tick (.clk(clk), .rst(rst), .tick(dma_tick));

    // ---------------------------------------------------------------- notifications, shared
    wire         i_n_valid, i_n_ready, t_n_valid, t_n_ready, n_ready, n_done, n_drop;
    wire [VPID_BITS-1:0] i_n_vpid, t_n_vpid;
    wire [255:0] i_n_entry, t_n_entry;
    // one entry at a time; the choice is held until the writer takes the entry, and the writer's
    // report (written / dropped) on an entry of the target goes back to the target
    reg  n_lock, n_own_t, n_last_t, n_cur_t;
    wire n_pick_t = t_n_valid && (!i_n_valid || !n_last_t);
    wire n_sel_t  = n_lock ? n_own_t : n_pick_t;
    wire n_valid  = n_sel_t ? t_n_valid : i_n_valid;
    assign i_n_ready = !n_sel_t && n_ready;
    assign t_n_ready = n_sel_t && n_ready;
    wire nq_cmt, nq_ev_entry, nq_ev_drop, nq_ev_bp, nq_busy, nq_idle;
    wire [VPID_BITS-1:0] nq_cmt_vpid;
    always @(posedge gclk) begin
        if (rst) begin
            n_lock   <= 1'b0;
            n_own_t  <= 1'b0;
            n_last_t <= 1'b0;
            n_cur_t  <= 1'b0;
        end else if (n_valid) begin
            n_lock  <= !n_ready;
            n_own_t <= n_sel_t;
            if (n_ready) begin
                n_last_t <= n_sel_t;
                n_cur_t  <= n_sel_t;
            end
        end
    end
    assign n_done = nq_cmt && n_cur_t;
    assign n_drop = nq_ev_drop && n_cur_t;

    wire         nw_valid, nw_ready, nw_sop, nw_eop;
    wire [127:0] nw_hdr;
    wire [63:0]  nw_data;
    velo_rma_notify #(.TLP_W(64), .VPID_BITS(VPID_BITS)) u_nq (
        .clk(gclk), .rst(rst), .req_id(req_id),
        .n_valid(n_valid), .n_ready(n_ready), .n_vpid(n_sel_t ? t_n_vpid : i_n_vpid),
        .n_entry(n_sel_t ? t_n_entry : i_n_entry),
        `VELO_QTBL_CONNECT, .q_vpid(q_vpid), .q_busy(q_vpid_busy), .busy(nq_busy),
        .tx_valid(nw_valid), .tx_ready(nw_ready), .tx_sop(nw_sop), .tx_eop(nw_eop), .tx_hdr(nw_hdr),
        .tx_data(nw_data),
        .ev_entry(nq_ev_entry), .ev_drop(nq_ev_drop), .ev_backpressure(nq_ev_bp),
        .cmt_valid(nq_cmt), .cmt_vpid(nq_cmt_vpid), .idle(nq_idle));

    // ---------------------------------------------------------------- initiator
    wire         iw_valid, iw_ready, iw_sop, iw_eop, i_busy, i_idle;
    wire [127:0] iw_hdr;
    wire [63:0]  iw_data;
    wire         i_ev_cmd, i_ev_err, i_ev_rsp_drop;
    wire [7:0]   i_ev_tx_bytes, i_ev_rx_bytes;
    wire [3:0]   i_ev_err_reason;
    wire         f_valid, f_ready, f_last, f_drop, f_idle;
    wire [63:0]  f_data;

    velo_pkt_filter #(.AW(6)) u_rspf (
        .clk(gclk_i), .rst(rst),
        .in_valid(si_valid), .in_ready(si_ready), .in_data(si_data), .in_last(si_last), .in_bad(si_bad),
        .out_valid(f_valid), .out_ready(f_ready), .out_data(f_data), .out_last(f_last), .ev_drop(f_drop),
        .idle(f_idle));

    velo_rma_init #(.NODE_BITS(NODE_BITS), .VPID_BITS(VPID_BITS), .REGION_BITS(REGION_BITS),
                    .TAG_BITS(TAG_BITS), .MTU(MTU)) u_init (
        .clk(gclk_i), .rst(rst), .enable(enable), .node_id(node_id), .req_id(req_id),
        .cmd_valid(cm_valid), .cmd_ready(cm_ready), .cmd_data(cm_data), .cmd_vpid(cm_vpid), .cmd_slot(cm_slot),
        .cmd_slot_cnt(cm_slot_cnt), .cmd_err(cm_err),
        .rt_re(ri_re), .rt_node(ri_node), .rt_data(ri_data),
        .lk_valid(i_lk_valid), .lk_ready(i_lk_ready), .lk_nla(i_lk_nla), .lk_len(i_lk_len), .lk_vpid(i_lk_vpid),
        .lk_kind(i_lk_kind), .rs_valid(i_rs_valid), .rs_ready(i_rs_ready), .rs_err(a_rs_err), .rs_addr(a_rs_addr),
        .rs_room(a_rs_room), .rs_region(a_rs_region),
        .rel_valid(i_rel_valid), .rel_ready(i_rel_ready), .rel_region(i_rel_region),
        .rq_valid(i_rq_valid), .rq_ready(i_rq_ready), .rq_addr(i_rq_addr), .rq_len_m1(i_rq_len_m1), .rq_ctx(i_rq_ctx),
        .rd_valid(i_rd_valid), .rd_ready(i_rd_ready), .rd_data(i_rd_data), .rd_be(i_rd_be), .rd_last(i_rd_last),
        .rd_err(i_rd_err), .rd_ctx(i_rd_ctx), .rd_avail(i_rd_avail), .rd_errq(i_rd_errq),
        .pkt_valid(qo_valid), .pkt_ready(qo_ready), .pkt_data(qo_data), .pkt_last(qo_last), .pkt_lnb(qo_lnb),
        .rx_valid(f_valid), .rx_ready(f_ready), .rx_data(f_data), .rx_last(f_last),
        .tx_valid(iw_valid), .tx_ready(iw_ready), .tx_sop(iw_sop), .tx_eop(iw_eop), .tx_hdr(iw_hdr), .tx_data(iw_data),
        .n_valid(i_n_valid), .n_ready(i_n_ready), .n_vpid(i_n_vpid), .n_entry(i_n_entry),
        .busy(i_busy), .ev_cmd(i_ev_cmd), .ev_tx_bytes(i_ev_tx_bytes), .ev_rx_bytes(i_ev_rx_bytes),
        .ev_err(i_ev_err), .ev_err_reason(i_ev_err_reason), .ev_rsp_drop(i_ev_rsp_drop), .idle(i_idle));

    // ---------------------------------------------------------------- target
    wire         tw_valid, tw_ready, tw_sop, tw_eop, t_busy, t_idle;
    wire [127:0] tw_hdr;
    wire [63:0]  tw_data;
    wire         t_ev_put_pkt, t_ev_get, t_ev_bad, t_ev_err, t_ev_gerr, t_ev_put_rsp;
    wire [1:0]   t_ev_no_route;
    wire [9:0]   t_ev_wr_bytes;
    wire [7:0]   t_ev_rd_bytes;
    wire [3:0]   t_ev_err_code, t_ev_gerr_code;

    velo_rma_tgt #(.TLP_W(64), .NODE_BITS(NODE_BITS), .VPID_BITS(VPID_BITS), .REGION_BITS(REGION_BITS), .MTU(MTU),
                   .MPS(MPS), .SLOTS_LOG2(SLOTS_LOG2), .CTX_W(TCTX)) u_tgt (
        .clk(gclk_t), .rst(rst), .enable(enable), .node_id(node_id), .req_id(req_id),
        .in_valid(qi_valid), .in_ready(qi_ready), .in_data(qi_data), .in_last(qi_last), .in_bad(qi_bad),
        .out_valid(so_valid), .out_ready(so_ready), .out_data(so_data), .out_last(so_last), .out_lnb(so_lnb),
        .rt_re(rt_re), .rt_node(rt_node), .rt_data(rt_data),
        .lk_valid(t_lk_valid), .lk_ready(t_lk_ready), .lk_nla(t_lk_nla), .lk_len(t_lk_len), .lk_vpid(t_lk_vpid),
        .lk_node(t_lk_node), .lk_key_hi(t_lk_key_hi), .lk_kind(t_lk_kind), .lk_tag(t_lk_tag), .rs_valid(t_rs_valid), .rs_ready(t_rs_ready), .rs_err(a_rs_err),
        .rs_addr(a_rs_addr), .rs_room(a_rs_room), .rs_region(a_rs_region), .rs_owner(a_rs_owner),
        .rs_tag(a_rs_tag[0]), .rel_valid(t_rel_valid), .rel_region(t_rel_region),
        .rq_valid(t_rq_valid), .rq_ready(t_rq_ready), .rq_addr(t_rq_addr), .rq_len_m1(t_rq_len_m1), .rq_ctx(t_rq_ctx),
        .rd_valid(t_rd_valid), .rd_ready(t_rd_ready), .rd_data(t_rd_data), .rd_be(t_rd_be), .rd_first(t_rd_first),
        .rd_last(t_rd_last), .rd_err(t_rd_err), .rd_ctx(t_rd_ctx),
        .tx_valid(tw_valid), .tx_ready(tw_ready), .tx_sop(tw_sop), .tx_eop(tw_eop), .tx_hdr(tw_hdr), .tx_data(tw_data),
        .n_valid(t_n_valid), .n_ready(t_n_ready), .n_vpid(t_n_vpid), .n_entry(t_n_entry), .n_done(n_done),
        .n_drop(n_drop),
        .busy(t_busy), .ev_put_pkt(t_ev_put_pkt), .ev_get(t_ev_get), .ev_bad(t_ev_bad), .ev_wr_bytes(t_ev_wr_bytes),
        .ev_rd_bytes(t_ev_rd_bytes), .ev_err(t_ev_err), .ev_err_code(t_ev_err_code), .ev_gerr(t_ev_gerr),
        .ev_gerr_code(t_ev_gerr_code), .ev_no_route(t_ev_no_route),
        .ev_put_rsp(t_ev_put_rsp), .idle(t_idle));

    // ---------------------------------------------------------------- upstream TLPs
    // target writes first in the list (the merge is round robin; order does not matter for PCIe
    // ordering, which is the order of acceptance)
    velo_tlp_merge #(.TLP_W(64), .N(4)) u_txm (
        .clk(gclk), .rst(rst),
        .in_valid({mrd_valid, nw_valid, iw_valid, tw_valid}),
        .in_ready({mrd_ready, nw_ready, iw_ready, tw_ready}),
        .in_sop({mrd_sop, nw_sop, iw_sop, tw_sop}),
        .in_eop({mrd_eop, nw_eop, iw_eop, tw_eop}),
        .in_hdr({mrd_hdr, nw_hdr, iw_hdr, tw_hdr}),
        .in_data({mrd_data, nw_data, iw_data, tw_data}),
        .out_valid(tx_valid), .out_ready(tx_ready), .out_sop(tx_sop), .out_eop(tx_eop), .out_hdr(tx_hdr),
        .out_data(tx_data));

    assign busy = cm_valid || i_busy || t_busy || nq_busy || dma_busy || f_valid;

    // the clock gate's enable: not at rest, or an input carries something (see the top)
    wire idle = cmd_idle && atu_idle && rdmux_idle && dma_idle && nq_idle && f_idle && i_idle && t_idle && !n_lock;
    assign gate_en = !idle || rst || w_valid || c_valid || qi_valid || si_valid || cfg_valid || sw_wr ||
                     ev_cmd_read || rcnt_clr;
    // initiator (velo_rma_init: cmd_valid, rx_valid, rd_valid; its ATU responses come only to a
    // lookup it holds, taken as well) and response filter (velo_pkt_filter: in_valid)
    assign gate_en_i = !i_idle || !f_idle || rst || cm_valid || si_valid || i_rd_valid || i_rs_valid;
    // target (velo_rma_tgt: in_valid, rd_valid; ATU responses as above)
    assign gate_en_t = !t_idle || rst || qi_valid || t_rd_valid || t_rs_valid;
    // DMA read engine (velo_dma_rd: a request or a completion; its tick ages stale slots only,
    // which keep it from rest)
    assign gate_en_d = !dma_idle || rst || d_rq_valid || c_valid;
    // ATU (velo_atu: lk_valid, rel_valid, cfg_valid)
    assign gate_en_a = !atu_idle || rst || i_lk_valid || t_lk_valid || i_rel_valid || t_rel_valid || cfg_valid;

    // ---------------------------------------------------------------- counters
    reg [10:0] add [0:NRC-1];
    integer k;
    always @(*) begin
        for (k = 0; k < NRC; k = k + 1) add[k] = 11'd0;
        add[`VELO_RMA_CNT_CMD_PUT]  = {10'd0, ev_put};
        add[`VELO_RMA_CNT_CMD_GET]  = {10'd0, ev_get_cmd};
        add[`VELO_RMA_CNT_CMD_TORN] = {10'd0, ev_torn};
        add[`VELO_RMA_CNT_CMD_BAD]  = {10'd0, ev_badcmd};
        add[`VELO_RMA_CNT_CMD_READ] = {10'd0, ev_cmd_read};
        add[`VELO_RMA_CNT_TX_BYTES] = {3'd0, i_ev_tx_bytes} + {3'd0, t_ev_rd_bytes};
        add[`VELO_RMA_CNT_RX_BYTES] = {1'd0, t_ev_wr_bytes} + {3'd0, i_ev_rx_bytes};
        // ERR_* counters are in reason order: BAD_HANDLE (3) .. DISABLED (10) at 7 .. 14
        for (k = 3; k <= 10; k = k + 1) begin
            add[k + 4] = {10'd0, i_ev_err && (i_ev_err_reason == k[3:0])} +
                         {10'd0, t_ev_err && (t_ev_err_code == k[3:0])} +
                         {10'd0, t_ev_gerr && (t_ev_gerr_code == k[3:0])};
        end
        add[`VELO_RMA_CNT_ERR_NO_ROUTE] = add[`VELO_RMA_CNT_ERR_NO_ROUTE] + {9'd0, t_ev_no_route};
        add[`VELO_RMA_CNT_NQ_ENTRIES] = {10'd0, nq_ev_entry};
        add[`VELO_RMA_CNT_NQ_DROP]    = {10'd0, nq_ev_drop};
        add[`VELO_RMA_CNT_NQ_BACKPRESSURE_CYCLES] = {10'd0, nq_ev_bp};
        add[`VELO_RMA_CNT_ERR_BUSY]   = {10'd0, i_ev_err && (i_ev_err_reason == `VELO_RMA_ERR_BUSY)};
    end

    reg [31:0] cnt [0:NRC-1];
    integer j;
    always @(posedge gclk) begin
        for (j = 0; j < NRC; j = j + 1) begin
            if (rst || (rcnt_clr && rcnt_clr_idx == j[4:0])) cnt[j] <= 32'd0;
            else cnt[j] <= cnt[j] + {21'd0, add[j]};
        end
    end
    always @(*) begin
        rcnt_data = 32'd0;
        for (j = 0; j < NRC; j = j + 1)
            if (rcnt_idx == j[4:0]) rcnt_data = cnt[j];
    end

    wire unused_ok = &{1'b0, ev_rel_underflow, ev_cfg_bad, dc0, dc1, dc2, dc3, dc4, nq_cmt_vpid, i_ev_cmd,
                       i_ev_rsp_drop, f_drop, t_ev_put_pkt, t_ev_get, t_ev_bad, t_ev_put_rsp};
endmodule
`default_nettype wire
