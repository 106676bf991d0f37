// VELO register file (BAR0) as register blocks on a register bus (Corundum's mqnic_rb idea):
// velo_rb_front turns the TLPs of BAR0 into bus accesses and answers completions and unsupported
// requests; every block of the spec's chain (ID, CTRL, COUNTERS, NET, VPID, IRQ and, with RMA = 1,
// RMA) decodes its own registers and tables. velo_rb_<block>_regs.v is generated from
// spec/velo_spec.json (storage, read data; velo_rb_hdr: select, header, answer); velo_rb_<block>.v
// holds what has behaviour (tables in RAM, counters, interrupts). This module only wires them: the
// request rb_req (rtl/include/velo_rb.vh) is broadcast, the front ORs the blocks' answers (a block
// answers 0 outside its addresses).
//
// Adding a block: its entry in the spec (gen_spec.py writes velo_rb_<block>_regs.v), its module,
// and its instance below with its answer in a slot of rsp (NBLK slots).
//
// RMA (parameter RMA = 1, docs/rma.md §5): the RMA block (IRQ.NEXT reads the spec's value, the
// RMA block; with RMA = 0 IRQ.NEXT reads 0, IRQ is the last block and nothing of RMA exists) and
// two more copies of the route table for the RMA engines' read ports (velo_rb_net).
//
// Clock gating in simulation (docs/simulator.md, "Clock gating of idle units"): the front and
// every block are clocked by gclk, which velo_sim_gate stops (Verilator with +velo_sim_gate only;
// elsewhere gclk = clk) in cycles where no register can change: the front is at rest (its idle:
// no access in work), the IRQ block too (no commit in its pipeline, no interrupt requested), no
// one-cycle pulse of a block is up (counter clears cnt_clr, ncnt_clr, rcnt_clr; software table
// writes sw_wr, nq_sw_wr: outputs of this module), and no input carries anything: reset, a TLP
// (in_valid), a commit (cmt_valid), a no-route event, a table read or write pointer update by the
// requester, completer or RMA unit (rt_re, rt2_re, rt3_re, tbl_re, wp_we, nq_re, nq_wp_we). At rest
// rb_req holds (its address and data are registers of the front; the enables are 0), so the
// registered decodes (PIPE = 1) hold too, and the outputs are functions of registers that hold and
// of the inputs read combinationally (status, counters' read data).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_rb.vh"
`include "velo_ports.vh"
// Parameters checked here: those this module's own logic uses; the others where they are used (the
// block named in their comment), with the instance path in the message.
module velo_regfile #(
    parameter integer TLP_W     = 64,  // TLP stream data width: 64 or 128
    parameter integer VPID_BITS = 8,   // vpid width (spec param VPID_BITS, its range)
    parameter integer NODE_BITS = 8,   // node id width (spec param NODE_BITS, its range: node_id is 8 bits)
    parameter integer LINK_W    = 16,  // network flit width, reported in CAPS: 16, 32 or 64
    parameter integer CNT_IDX_W = 5,   // counter index width (checked in velo_rb_counters_regs)
    parameter integer NP        = 2,   // network ports of the switch (1..VELO_NP_MAX = 6; velo_rb_net)
    parameter integer PB        = 2,   // route code bits per hop (reported in NET.PORTS; velo_rb_net)
    parameter integer NVC       = 4,   // virtual channels per link (reported; velo_rb_net)
    parameter integer VC_DEPTH  = 64,  // receive buffer per VC in flits (reported; velo_rb_net)
    parameter integer NCNT_IDX_W = 6,  // link counter index width: port * 8 + counter (velo_rb_net)
    parameter integer RMA         = 0,  // 1: the RMA block, tables and ports are implemented
    parameter integer REGION_BITS = 8,  // RMA: ATU region index width (reported in RMA.CAPS; velo_rb_rma)
    parameter integer PTE_BITS    = 12, // RMA: ATU page table index width (reported; velo_rb_rma)
    parameter integer RMA_MTU     = 48, // RMA: data bytes per packet (reported; velo_rb_rma)
    // 0: the address of a register access is decoded in the cycle it is used; 1: (smaller devices,
    // docs/board-guide.md) the decode (which block, table or register range) is registered, and
    // an access waits one cycle after its address is set (each DW one cycle longer)
    parameter integer PIPE        = 0
) (
    input  wire                 clk,
    input  wire                 rst,          // synchronous, active high
    `include "velo_rb_front_ports.vh"
    // configuration
    output wire [7:0]           node_id,
    output wire                 enable,
    // the ports of the blocks VPID (the completer's mailbox table port) and NET (route tables, network ports)
    `include "velo_rb_vpid_ports.vh"
    `include "velo_rb_net_ports.vh"
    // status
    input  wire                 link_up,
    input  wire                 cpl_busy,
    output wire [VPID_BITS-1:0] q_vpid,
    input  wire                 q_busy,
    // counters
    output wire [CNT_IDX_W-1:0] cnt_idx,
    input  wire [31:0]          cnt_data,
    output wire                 cnt_clr,
    output wire [CNT_IDX_W-1:0] cnt_clr_idx,
    // counter events
    output wire                 ev_window_read,
    output wire                 ev_unsupported,
    output wire                 ev_bad_access,
    // interrupts: an entry for cmt_vpid was committed (its last TLP accepted upstream), and the
    // interrupt request (valid/ready; held until taken)
    input  wire                 cmt_valid,
    input  wire [VPID_BITS-1:0] cmt_vpid,
    output wire                 irq_valid,
    input  wire                 irq_ready,
    // ---- the ports of the RMA block (used with RMA = 1)
    `include "velo_rb_rma_ports.vh"
    // the BAR4 read event
    output wire                 ev_rma_read
);
    `VELO_CHECK_TLP_W
    `VELO_CHECK_NODE_BITS
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK_LINK_W
    `VELO_CHECK_FLAG(g_check_rma, RMA, "velo_regfile: RMA must be 0 or 1")
    `VELO_CHECK_PIPE
    localparam integer IW = (VPID_BITS > NODE_BITS) ? VPID_BITS : NODE_BITS;  // table clear index width
    localparam [20:0]  IRQ_NEXT = (RMA != 0) ? `VELO_BLK_IRQ_NEXT : 21'd0;
    localparam [31:0]  MSG_MAX  = `VELO_MSG_MAX;

    // ---------------------------------------------------------------- clock gate (simulation)
    wire gclk, gate_en, front_idle, irq_idle;
`ifdef VERILATOR
    assign gate_en = !(front_idle && irq_idle) || rst || in_valid || cmt_valid || ev_no_route || rt_re ||
                     rt2_re || rt3_re || tbl_re || wp_we || nq_re || nq_wp_we || cnt_clr || ncnt_clr || rcnt_clr ||
                     sw_wr || nq_sw_wr;
`else
    assign gate_en = 1'b1;  // elsewhere gclk = clk: the enable is not built (synthesis figures unchanged)
`endif
    wire unused_idle = &{1'b0, front_idle, irq_idle};
    velo_sim_gate u_gate (.clk(clk), .en(gate_en), .gclk(gclk));

    // ---------------------------------------------------------------- the front and the bus
    localparam integer NBLK = 7;  // blocks: ID, CTRL, COUNTERS, NET, VPID, IRQ, RMA (none with RMA = 0)
    localparam integer RW   = `VELO_RB_RSP_W;
    wire [`VELO_RB_REQ_W-1:0] rb_req;
    wire [NBLK*RW-1:0]        rsp;     // the blocks' answers, in the order above
    reg  [RW-1:0]             rb_rsp;  // ... ORed (a block answers 0 outside its addresses)
    integer                   bi;
    always @(*) begin
        rb_rsp = `VELO_RB_RSP_NONE;
        for (bi = 0; bi < NBLK; bi = bi + 1) rb_rsp = rb_rsp | rsp[bi*RW +: RW];
    end
    velo_rb_front #(.TLP_W(TLP_W), .IW(IW), .RMA(RMA), .PIPE(PIPE)) u_front (
        .clk(gclk), .rst(rst), .cpl_id(cpl_id),
        .in_valid(in_valid), .in_ready(in_ready), .in_sop(in_sop), .in_eop(in_eop), .in_hdr(in_hdr),
        .in_bar(in_bar), .in_data(in_data),
        .cpl_valid(cpl_valid), .cpl_ready(cpl_ready), .cpl_sop(cpl_sop), .cpl_eop(cpl_eop),
        .cpl_hdr(cpl_hdr), .cpl_data(cpl_data), .rb_req(rb_req), .rb_rsp(rb_rsp),
        .ev_window_read(ev_window_read), .ev_unsupported(ev_unsupported), .ev_bad_access(ev_bad_access),
        .ev_rma_read(ev_rma_read), .idle(front_idle));

    // at most one block may answer an address (simulation only)
    wire [NBLK-1:0] answers;
    genvar gb;
    generate
        for (gb = 0; gb < NBLK; gb = gb + 1) begin : g_answers
            /* verilator lint_off UNUSEDSIGNAL */
            wire [RW-1:0] r = rsp[gb*RW +: RW];  // (its WWAIT is no answer)
            /* verilator lint_on UNUSEDSIGNAL */
            assign answers[gb] = `VELO_RB_ANSWERS(r);
        end
    endgenerate
    `VELO_ASSERT(clk, rst, (answers & (answers - 1'b1)) == {NBLK{1'b0}}, "velo_regfile: two register blocks answer the same address")

    // ---------------------------------------------------------------- ID, CTRL, COUNTERS
    wire [31:0] unused_scratch;  // SCRATCH goes nowhere
    localparam [31:0] NB32 = NODE_BITS, VB32 = VPID_BITS, TW32 = TLP_W, LW32 = LINK_W;
    velo_rb_id_regs #(.PIPE(PIPE), .CAPS_NODE_BITS(NB32[3:0]), .CAPS_VPID_BITS(VB32[3:0]),
                      .CAPS_TLP_BYTES(TW32[10:3]), .CAPS_LINK_BYTES(LW32[10:3]), .CAPS_MSG_MAX(MSG_MAX[7:0])) u_id (
        .clk(gclk), .rst(rst), .rb_req(rb_req), .rb_rsp(rsp[0*RW +: RW]));

    wire [NODE_BITS-1:0] node_q;
    assign node_id = {{(8-NODE_BITS){1'b0}}, node_q};
    velo_rb_ctrl_regs #(.PIPE(PIPE), .NODE_BITS(NODE_BITS), .VPID_BITS(VPID_BITS)) u_ctrl (
        .clk(gclk), .rst(rst), .rb_req(rb_req), .rb_rsp(rsp[1*RW +: RW]), .node_id(node_q), .control_enable(enable),
        .status_link_up(link_up), .status_cpl_busy(cpl_busy), .quiesce_vpid(q_vpid), .quiesce_status_busy(q_busy),
        .scratch(unused_scratch));

    velo_rb_counters_regs #(.PIPE(PIPE), .COUNTER_BASE_IDX_W(CNT_IDX_W)) u_cnt (
        .clk(gclk), .rst(rst), .rb_req(rb_req), .rb_rsp(rsp[2*RW +: RW]), .counter_base(cnt_data),
        .counter_base_idx(cnt_idx), .counter_base_clr(cnt_clr), .counter_base_clr_idx(cnt_clr_idx));

    // ---------------------------------------------------------------- NET, VPID, IRQ
    velo_rb_net #(.NODE_BITS(NODE_BITS), .NP(NP), .PB(PB), .NVC(NVC), .VC_DEPTH(VC_DEPTH),
                  .NCNT_IDX_W(NCNT_IDX_W), .RMA(RMA), .PIPE(PIPE)) u_net (
        .clk(gclk), .rst(rst), .rb_req(rb_req), .rb_rsp(rsp[3*RW +: RW]),
        .rt_re(rt_re), .rt_node(rt_node), .rt_data(rt_data), .rt2_re(rt2_re), .rt2_node(rt2_node),
        .rt2_data(rt2_data), .rt3_re(rt3_re), .rt3_node(rt3_node), .rt3_data(rt3_data),
        .port_cfg(port_cfg), .port_up(port_up), .ncnt_idx(ncnt_idx), .ncnt_data(ncnt_data),
        .ncnt_clr(ncnt_clr), .ncnt_clr_idx(ncnt_clr_idx), .ev_no_route(ev_no_route));

    wire                 mbcfg_wr;
    wire [VPID_BITS-1:0] mbcfg_vpid;
    velo_rb_vpid #(.VPID_BITS(VPID_BITS), .PIPE(PIPE)) u_vpid (
        .clk(gclk), .rst(rst), .rb_req(rb_req), .rb_rsp(rsp[4*RW +: RW]),
        `VELO_QTBL_CONNECT, .mbcfg_wr(mbcfg_wr), .mbcfg_vpid(mbcfg_vpid));

    velo_rb_irq #(.VPID_BITS(VPID_BITS), .NEXT(IRQ_NEXT), .PIPE(PIPE)) u_irq (
        .clk(gclk), .rst(rst), .rb_req(rb_req), .rb_rsp(rsp[5*RW +: RW]), .mbcfg_wr(mbcfg_wr), .mbcfg_vpid(mbcfg_vpid),
        .cmt_valid(cmt_valid), .cmt_vpid(cmt_vpid), .irq_valid(irq_valid), .irq_ready(irq_ready),
        .idle(irq_idle));

    // ---------------------------------------------------------------- RMA
    generate
        if (RMA != 0) begin : g_rma
            velo_rb_rma #(.VPID_BITS(VPID_BITS), .REGION_BITS(REGION_BITS), .PTE_BITS(PTE_BITS),
                          .RMA_MTU(RMA_MTU), .PIPE(PIPE)) u_rma (
                .clk(gclk), .rst(rst), .rb_req(rb_req), .rb_rsp(rsp[6*RW +: RW]),
                .rma_enable(rma_enable), .rma_busy(rma_busy), .rq_region(rq_region), .rq_busy(rq_busy),
                .acfg_valid(acfg_valid), .acfg_ready(acfg_ready), .acfg_pte(acfg_pte), .acfg_idx(acfg_idx),
                .acfg_reg(acfg_reg), .acfg_data(acfg_data),
                .nq_re(nq_re), .nq_vpid(nq_vpid), .nq_base(nq_base), .nq_en(nq_en), .nq_log2(nq_log2),
                .nq_wp(nq_wp), .nq_rp(nq_rp), .nq_wp_we(nq_wp_we), .nq_wp_vpid(nq_wp_vpid),
                .nq_wp_data(nq_wp_data), .nq_sw_wr(nq_sw_wr), .nq_sw_wr_vpid(nq_sw_wr_vpid),
                .rcnt_idx(rcnt_idx), .rcnt_data(rcnt_data), .rcnt_clr(rcnt_clr), .rcnt_clr_idx(rcnt_clr_idx));
        end else begin : g_no_rma
            assign rsp[6*RW +: RW] = `VELO_RB_RSP_NONE;
            // no RMA block: its outputs are 0
            localparam integer RMA_OUT_W = 1 + REGION_BITS + 1 + 1 + 16 + `VELO_TBL_RMA_REGION_REG_W + 32 + 58 + 1 + 5 + 17 + 17 + 1 + VPID_BITS
                                           + 5 + 1 + 5;
            assign {rma_enable, rq_region, acfg_valid, acfg_pte, acfg_idx, acfg_reg, acfg_data, nq_base, nq_en, nq_log2,
                    nq_wp, nq_rp, nq_sw_wr, nq_sw_wr_vpid, rcnt_idx, rcnt_clr, rcnt_clr_idx} = {RMA_OUT_W{1'b0}};
            wire unused_rma = &{1'b0, rma_busy, rq_busy, acfg_ready, nq_re, nq_vpid, nq_wp_we, nq_wp_vpid,
                                nq_wp_data, rcnt_data, REGION_BITS, PTE_BITS, RMA_MTU};
        end
    endgenerate
endmodule
`default_nettype wire
