// VELO register file (BAR0): the register-block chain (ID, CTRL, COUNTERS, NET, VPID, IRQ), the
// per-vpid mailbox table, the per-vpid user pages holding the read pointers, the route table (block
// RAM, read port shared with the requester, which has priority), the network port entries
// (configuration, link status, link counters) and the mailbox interrupts.
//
// Register writes and reads arrive as TLPs (1 DW, or 2 DW 8-byte aligned); reads are answered
// with completions. Requests the NIC does not support are answered with UR completions and
// counted, never left hanging. The mailbox table and read pointers live in block RAM with one
// read port shared with the completer (the completer has priority) and, for the write pointer,
// one write port shared with the completer (again with priority). After reset the table is
// cleared (every vpid disabled, every route invalid) before the first request is taken.
//
// Interrupts: the arm bits live in a one-bit-wide RAM (a vpid each) with a read port of its own;
// the completer reports every committed entry (its last TLP accepted upstream) with its vpid, the
// arm bit is read in that cycle and, if set, cleared in the next one, where the vpid's PENDING
// bit is set and the interrupt requested. A write of the arm bit in the cycle it is read is
// forwarded. The decision's clear has the write port: a software write of the arm bit (ARM sets,
// any MB_CFG write clears) waits a cycle behind it. The pending bitmap is a small RAM of 32-bit
// words with asynchronous reads (distributed RAM; flip-flops where there is none), updated by
// read-modify-write: an entry sets its bit, a software write-1-to-clear of the same word in the
// same cycle is merged into that write (the entry's bit stays set), one of another word waits a
// cycle.
//
// RMA (parameter RMA = 1, docs/rma.md §5): the RMA block (IRQ.NEXT reads the spec's value, the
// RMA block; with RMA = 0 IRQ.NEXT reads 0, IRQ is the last block and nothing of RMA exists), the
// notification queue table (RAMs like the mailbox table, read port and write-pointer port shared
// with velo_rma_notify, which has priority), NQ_RP
// in the user pages, the ATU's region and page tables (write-only: every write is forwarded to
// the ATU's configuration port, waiting while it is busy clearing after reset), the RMA counters
// (read through rcnt_*), and two more copies of the route table for the RMA engines' read ports
// (written together with the first, so they never differ).
`default_nettype none
`include "velo_spec.vh"
module velo_regfile #(
    parameter integer TLP_W     = 64,  // TLP stream data width: 64 or 128
    parameter integer VPID_BITS = 8,   // vpid width (spec param VPID_BITS)
    parameter integer NODE_BITS = 8,   // node id width (spec param NODE_BITS)
    parameter integer LINK_W    = 16,  // network flit width, reported in CAPS
    parameter integer CNT_IDX_W = 5,   // counter index width
    parameter integer NP        = 2,   // network ports of the switch (1..7)
    parameter integer PB        = 2,   // route code bits per hop (reported in NET.PORTS)
    parameter integer NVC       = 4,   // virtual channels per link (reported)
    parameter integer VC_DEPTH  = 64,  // receive buffer per VC in flits (reported)
    parameter integer NCNT_IDX_W = 6,  // link counter index width: port * 8 + counter
    parameter integer RMA         = 0,  // 1: the RMA block, tables and ports are implemented
    parameter integer REGION_BITS = 8,  // RMA: ATU region index width (reported in RMA.CAPS)
    parameter integer PTE_BITS    = 12, // RMA: ATU page table index width (reported)
    parameter integer RMA_MTU     = 48, // RMA: data bytes per packet (reported)
    // 0: the address of a register access is decoded in the cycle it is used; 1: (smaller devices,
    // docs/board-guide.md) the decode (which block, table or register range) is registered, and
    // an access waits one cycle after its address is set (each DW one cycle longer)
    parameter integer PIPE        = 0
) (
    input  wire                 clk,
    input  wire                 rst,          // synchronous, active high
    input  wire [15:0]          cpl_id,       // our completer id (bus/device/function)
    // TLP stream in: BAR0 writes and every non-posted request
    input  wire                 in_valid,
    output reg                  in_ready,
    input  wire                 in_sop,
    input  wire                 in_eop,
    // TC, attributes, digest and the address bits above BAR0's size are of no use here.
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [127:0]         in_hdr,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [2:0]           in_bar,
    // register writes carry at most 2 DW (the low 64 bits of the first beat)
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [TLP_W-1:0]     in_data,
    /* verilator lint_on UNUSEDSIGNAL */
    // completions out (single beat)
    output reg                  cpl_valid,
    input  wire                 cpl_ready,
    output wire                 cpl_sop,
    output wire                 cpl_eop,
    output reg  [127:0]         cpl_hdr,
    output wire [TLP_W-1:0]     cpl_data,
    // configuration
    output reg  [7:0]           node_id,
    output wire                 enable,
    // mailbox table port of the completer
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
    // route table port of the requester: data the cycle after rt_re
    input  wire                 rt_re,
    input  wire [NODE_BITS-1:0] rt_node,
    output wire [14:0]          rt_data,      // {VALID, ROUTE}
    // network ports: configuration {DATELINE, DIM} per port (port 1 in the low bits), status,
    // link counters (read combinationally, cleared by a write) and the no-route drop event
    output wire [3*NP-1:0]      port_cfg,
    input  wire [NP-1:0]        port_up,
    output wire [NCNT_IDX_W-1:0] ncnt_idx,
    input  wire [31:0]          ncnt_data,
    output reg                  ncnt_clr,
    output reg  [NCNT_IDX_W-1:0] ncnt_clr_idx,
    input  wire                 ev_no_route,
    // status
    input  wire                 link_up,
    input  wire                 cpl_busy,
    output wire [VPID_BITS-1:0] q_vpid,
    input  wire                 q_busy,
    // counters
    output wire [CNT_IDX_W-1:0] cnt_idx,
    input  wire [31:0]          cnt_data,
    output reg                  cnt_clr,
    output reg  [CNT_IDX_W-1:0] cnt_clr_idx,
    // counter events
    output reg                  ev_window_read,
    output reg                  ev_unsupported,
    output reg                  ev_bad_access,
    // interrupts: an entry for cmt_vpid was committed (its last TLP accepted upstream), and the
    // interrupt request (valid/ready; held until taken)
    input  wire                 cmt_valid,
    input  wire [VPID_BITS-1:0] cmt_vpid,
    output reg                  irq_valid,
    input  wire                 irq_ready,
    // ---- RMA (used with RMA = 1)
    output wire                 rma_enable,   // RMA.CONTROL.ENABLE
    input  wire                 rma_busy,     // RMA.STATUS.BUSY
    output wire [REGION_BITS-1:0] rq_region,  // RMA.QUIESCE_REGION
    input  wire                 rq_busy,      // RMA.QUIESCE_STATUS.BUSY
    // route table read ports of the RMA initiator and target (data the cycle after *_re)
    input  wire                 rt2_re,
    input  wire [NODE_BITS-1:0] rt2_node,
    output wire [14:0]          rt2_data,
    input  wire                 rt3_re,
    input  wire [NODE_BITS-1:0] rt3_node,
    output wire [14:0]          rt3_data,
    // ATU table writes (RMA_REGION, RMA_PTE)
    output wire                 acfg_valid,
    input  wire                 acfg_ready,
    output wire                 acfg_pte,
    output wire [15:0]          acfg_idx,
    output wire [2:0]           acfg_reg,
    output wire [31:0]          acfg_data,
    // notification queue table port of velo_rma_notify
    input  wire                 nq_re,
    input  wire [VPID_BITS-1:0] nq_vpid,
    output wire [57:0]          nq_base,
    output wire                 nq_en,
    output wire [4:0]           nq_log2,
    output wire [16:0]          nq_wp,
    output wire [16:0]          nq_rp,
    input  wire                 nq_wp_we,
    input  wire [VPID_BITS-1:0] nq_wp_vpid,
    input  wire [16:0]          nq_wp_data,
    output reg                  nq_sw_wr,     // software wrote the queue table row or NQ_RP of ...
    output reg  [VPID_BITS-1:0] nq_sw_wr_vpid,// ... this vpid
    // RMA counters (read combinationally, cleared by a write) and the BAR4 read event
    output wire [4:0]           rcnt_idx,
    input  wire [31:0]          rcnt_data,
    output reg                  rcnt_clr,
    output reg  [4:0]           rcnt_clr_idx,
    output reg                  ev_rma_read
);
    localparam integer NV = 1 << VPID_BITS;
    localparam [31:0] MSG_MAX = `VELO_MSG_MAX;
    localparam [7:0]  NODE_MASK = 8'hFF >> (8 - NODE_BITS);  // NODE_ID keeps NODE_BITS bits
    localparam [20:0] TBL_LO  = `VELO_TBL_VPID_TABLE_BASE;
    localparam [31:0] TBL_HI  = {11'd0, TBL_LO} + NV * 16;
    localparam [20:0] USR_LO  = `VELO_TBL_VPID_USER_BASE;
    localparam [31:0] USR_HI  = {11'd0, USR_LO} + NV * 4096;
    localparam [20:0] CNT_LO  = `VELO_REG_COUNTERS_COUNTER_BASE;
    localparam [31:0] CNT_HI  = {11'd0, CNT_LO} + 4 * `VELO_CNT_NUM;
    localparam integer NN = 1 << NODE_BITS;
    localparam integer IW = (VPID_BITS > NODE_BITS) ? VPID_BITS : NODE_BITS;  // init index width
    localparam integer NI = 1 << IW;
    localparam [20:0] RT_LO   = `VELO_TBL_ROUTE_TABLE_BASE;
    localparam [31:0] RT_HI   = {11'd0, RT_LO} + NN * 4;
    localparam [20:0] NP_LO   = `VELO_TBL_NET_PORT_BASE;
    localparam [31:0] NP_HI   = {11'd0, NP_LO} + NP * `VELO_TBL_NET_PORT_STRIDE;
    localparam integer NPW    = (NV + 31) / 32;   // words of the pending bitmap
    localparam integer PWA    = (NPW > 1) ? $clog2(NPW) : 1;  // pending word address width
    localparam [20:0] PND_LO  = `VELO_TBL_IRQ_PENDING_BASE;
    localparam [31:0] PND_HI  = {11'd0, PND_LO} + NPW * 4;
    localparam [31:0] NPW32   = NPW;
    localparam integer NRG    = 1 << REGION_BITS;
    localparam integer NPTE   = 1 << PTE_BITS;
    localparam [20:0] NQ_LO   = `VELO_TBL_RMA_NQ_TABLE_BASE;
    localparam [31:0] NQ_HI   = {11'd0, NQ_LO} + NV * 16;
    localparam [20:0] RG_LO   = `VELO_TBL_RMA_REGION_BASE;
    localparam [31:0] RG_HI   = {11'd0, RG_LO} + NRG * 32;
    localparam [20:0] PTE_LO  = `VELO_TBL_RMA_PTE_BASE;
    localparam [31:0] PTE_HI  = {11'd0, PTE_LO} + NPTE * 8;
    localparam [20:0] RC_LO   = `VELO_REG_RMA_CNT_BASE;
    localparam [31:0] RC_HI   = {11'd0, RC_LO} + 4 * `VELO_RMA_CNT_NUM;
    localparam [20:0] RB_LO   = `VELO_BLK_RMA_BASE;
    localparam [2:0] R_INIT = 3'd0, R_IDLE = 3'd1, R_DRAIN = 3'd2, R_WR = 3'd3,
                     R_RD = 3'd4, R_RDW = 3'd5, R_CPL = 3'd6;

    // ------------------------------------------------------------------ state
    reg [2:0]  st, st_after_drain;
    reg [IW-1:0] init_idx;
    reg [2:0]  pcfg [0:7];     // {DATELINE, DIM} of network port p+1 (entries >= NP unused)
    reg [31:0] no_route;       // NET.DROP_NO_ROUTE
    integer    pi;
    reg [31:0] scratch;
    reg        ctrl_enable;
    reg [VPID_BITS-1:0] quiesce_vpid;
    reg        irq_en;         // IRQ.CTRL.ENABLE
    reg [31:0] irq_count;      // IRQ.COUNT
    reg        rma_en;         // RMA.CONTROL.ENABLE
    reg [REGION_BITS-1:0] rma_qregion;  // RMA.QUIESCE_REGION

    reg [20:0] a;          // current register offset (DW aligned)
    reg        two;        // 2-DW access
    reg        second;     // working on the second DW
    reg [63:0] wdata;      // write data (DW0 in 31:0)
    reg [63:0] rdata;      // read data gathered for the completion
    reg        ur;         // answer with UR
    reg [15:0] rq_id;
    reg [7:0]  rq_tag;
    reg [6:0]  lower;
    reg [11:0] bcnt;

    assign enable  = ctrl_enable;
    assign q_vpid  = quiesce_vpid;
    assign cpl_sop = 1'b1;
    assign cpl_eop = 1'b1;

    // ------------------------------------------------------------------ request decode
    wire        is4dw    = in_hdr[`VELO_TLP_HDR_FMT_TYPE_LSB + 5];
    wire [7:0]  fmt_type = in_hdr[`VELO_TLP_HDR_FMT_TYPE];
    wire [31:0] req_addr = is4dw ? {in_hdr[`VELO_TLP_HDR_ADDR64_LO], 2'b00}
                                 : {in_hdr[`VELO_TLP_HDR_ADDR32], 2'b00};
    wire [9:0]  len_dw   = in_hdr[`VELO_TLP_HDR_LENGTH];
    wire [3:0]  fbe      = in_hdr[`VELO_TLP_HDR_FIRST_BE];
    wire [3:0]  lbe      = in_hdr[`VELO_TLP_HDR_LAST_BE];
    wire is_mwr  = (fmt_type == `VELO_TLP_FMT_TYPE_MWR32) || (fmt_type == `VELO_TLP_FMT_TYPE_MWR64);
    wire is_mrd  = (fmt_type == `VELO_TLP_FMT_TYPE_MRD32) || (fmt_type == `VELO_TLP_FMT_TYPE_MRD64);
    // no completion: memory writes, messages and (stray) completions; every other request
    // that reaches us needs one
    wire is_cpl    = (fmt_type[4:1] == 4'b0101);
    wire is_posted = is_mwr || (fmt_type[4:3] == 2'b10) || is_cpl;
    wire on_bar0 = (in_bar == `VELO_BAR_REGS);
    // 1 DW, or 2 DW 8-byte aligned with a non-zero last byte enable (PCIe forbids 0 there)
    wire len_ok  = (len_dw == 10'd1 && lbe == 4'd0) ||
                   (len_dw == 10'd2 && req_addr[2] == 1'b0 && lbe != 4'd0);
    // poisoned writes are dropped (and counted) like malformed ones
    wire wr_ok   = len_ok && fbe == 4'hF && (len_dw == 10'd1 || lbe == 4'hF) &&
                   !in_hdr[`VELO_TLP_HDR_EP_LSB];

    // byte count and lower address of a read completion (PCIe rules for 1 or 2 DW reads)
    reg [1:0] lead;
    reg [2:0] fspan, ltop;
    always @(*) begin
        casez (fbe)  // zero-length read (fbe 0000): lower address bits 00
            4'b0000: lead = 2'd0;
            4'b???1: lead = 2'd0;
            4'b??10: lead = 2'd1;
            4'b?100: lead = 2'd2;
            default: lead = 2'd3;
        endcase
        casez (fbe)  // first DW of a 1-DW read: from lowest to highest enabled byte
            4'b1??1: fspan = 3'd4;
            4'b01?1, 4'b1?10: fspan = 3'd3;
            4'b0011, 4'b0110, 4'b1100: fspan = 3'd2;
            default: fspan = 3'd1;
        endcase
        casez (lbe)
            4'b1???: ltop = 3'd4;
            4'b01??: ltop = 3'd3;
            4'b001?: ltop = 3'd2;
            default: ltop = 3'd1;
        endcase
    end
    wire [11:0] rd_bcnt = (len_dw == 10'd1) ? {9'd0, fspan}
                                            : (12'd4 - {10'd0, lead} + {9'd0, ltop});

    // ------------------------------------------------------------------ address map
    // The decode of the access address a and its write data (dc_*), used as it is or (PIPE)
    // registered: then a_ok is low in the cycle after a changes (wd changes only with a), and every
    // use of the decode (the states R_WR and R_RD and the table and RAM ports they drive) waits for it
    wire in_np, in_rt, in_glob, in_tbl, in_user, in_cnt, in_rblk, in_rcnt, in_nq, in_nqrp, in_rg,
         in_pte, in_pnd, np_cnt;
    wire arm_ok;  // the DW written names a vpid (an IRQ.ARM value)
    wire is_arm;  // a is IRQ.ARM
    wire a_ok;
    reg  a_new;  // a was set in the last cycle (PIPE)
    wire dc_np = (a >= NP_LO) && ({11'd0, a} < NP_HI);
    wire dc_rt = (a >= RT_LO) && ({11'd0, a} < RT_HI);
    wire dc_glob = (a < TBL_LO) || dc_np;
    wire [20:0] np_off = a - NP_LO;
    wire [2:0]  np_port = np_off[6 +: 3];   // port - 1
    wire [5:0]  np_reg  = np_off[5:0];
    wire        dc_npcnt = (np_reg >= 6'h10) && ({26'd0, np_reg} < 32'h10 + 32'd4 * `VELO_NET_PORT_COUNTERS);
    wire [5:0]  np_cidx = np_reg - 6'h10;
    assign ncnt_idx = {np_port, np_cidx[4:2]};
    wire [NODE_BITS-1:0] rt_sw_node = a[2 +: NODE_BITS];
    wire [7:0]  up8 = {{(8-NP){1'b0}}, port_up};
    wire dc_tbl = (a >= TBL_LO) && ({11'd0, a} < TBL_HI);
    wire dc_user = (a >= USR_LO) && ({11'd0, a} < USR_HI) && (a[11:0] == 12'd0);
    wire [VPID_BITS-1:0] tv = in_user ? a[12 +: VPID_BITS] : a[4 +: VPID_BITS];
    wire [1:0] tfield = a[3:2];
    wire dc_cnt = (a >= CNT_LO) && ({11'd0, a} < CNT_HI);
    // RMA address ranges (none with RMA = 0)
    wire has_rma = (RMA != 0);
    wire dc_rblk = has_rma && (a >= RB_LO) && (a < RB_LO + 21'h100);
    wire dc_rcnt = has_rma && (a >= RC_LO) && ({11'd0, a} < RC_HI);
    wire dc_nq = has_rma && (a >= NQ_LO) && ({11'd0, a} < NQ_HI);
    wire dc_nqrp = has_rma && (a >= USR_LO) && ({11'd0, a} < USR_HI) && (a[11:0] == 12'd4);
    wire dc_rg = has_rma && (a >= RG_LO) && ({11'd0, a} < RG_HI);
    wire dc_pte = has_rma && (a >= PTE_LO) && ({11'd0, a} < PTE_HI);
    wire [VPID_BITS-1:0] ntv = in_nqrp ? a[12 +: VPID_BITS] : a[4 +: VPID_BITS];
    wire [20:0] rc_off  = a - RC_LO;
    wire [20:0] rg_off  = a - RG_LO;
    wire [20:0] pte_off = a - PTE_LO;
    assign rcnt_idx = rc_off[6:2];
    assign rma_enable = rma_en;
    assign rq_region  = rma_qregion;
    wire dc_pnd = (a >= PND_LO) && ({11'd0, a} < PND_HI);
    wire [20:0] pnd_off = a - PND_LO;
    wire [PWA-1:0] pnd_w = pnd_off[2 +: PWA];   // pending word
    reg  [31:0] pnd_mem [0:(1<<PWA)-1];         // the pending bitmap (see below)
    wire [31:0] pnd_rd   = pnd_mem[pnd_w];
    wire [31:0] wd      = second ? wdata[63:32] : wdata[31:0];  // write data of the current DW
    wire        dc_armok = (wd >> VPID_BITS) == 32'd0;         // an ARM value names a vpid
    wire        dc_isarm = (a == `VELO_REG_IRQ_ARM);
    // the global registers' items (g_sel; G_NONE: the address ranges of the value's default branch)
    localparam [5:0] G_NONE                = 6'd0,
                     G_ID_TYPE             = 6'd1,
                     G_ID_VERSION          = 6'd2,
                     G_ID_NEXT             = 6'd3,
                     G_ID_DESIGN_VERSION   = 6'd4,
                     G_ID_CAPS             = 6'd5,
                     G_ID_SPEC_HASH        = 6'd6,
                     G_CTRL_TYPE           = 6'd7,
                     G_CTRL_VERSION        = 6'd8,
                     G_CTRL_NEXT           = 6'd9,
                     G_CTRL_NODE_ID        = 6'd10,
                     G_CTRL_CONTROL        = 6'd11,
                     G_CTRL_STATUS         = 6'd12,
                     G_CTRL_QUIESCE_VPID   = 6'd13,
                     G_CTRL_QUIESCE_STATUS = 6'd14,
                     G_CTRL_SCRATCH        = 6'd15,
                     G_COUNTERS_TYPE       = 6'd16,
                     G_COUNTERS_VERSION    = 6'd17,
                     G_COUNTERS_NEXT       = 6'd18,
                     G_COUNTERS_COUNT      = 6'd19,
                     G_VPID_TYPE           = 6'd20,
                     G_VPID_VERSION        = 6'd21,
                     G_VPID_NEXT           = 6'd22,
                     G_VPID_NUM_VPIDS      = 6'd23,
                     G_VPID_TABLE_OFFSET   = 6'd24,
                     G_VPID_TABLE_STRIDE   = 6'd25,
                     G_VPID_USER_OFFSET    = 6'd26,
                     G_VPID_USER_STRIDE    = 6'd27,
                     G_NET_TYPE            = 6'd28,
                     G_NET_VERSION         = 6'd29,
                     G_NET_NEXT            = 6'd30,
                     G_NET_PORTS           = 6'd31,
                     G_NET_LINK_STATUS     = 6'd32,
                     G_NET_ROUTE_OFFSET    = 6'd33,
                     G_NET_PORT_OFFSET     = 6'd34,
                     G_NET_PORT_STRIDE     = 6'd35,
                     G_NET_DROP_NO_ROUTE   = 6'd36,
                     G_IRQ_TYPE            = 6'd37,
                     G_IRQ_VERSION         = 6'd38,
                     G_IRQ_NEXT            = 6'd39,
                     G_IRQ_CTRL            = 6'd40,
                     G_IRQ_ARM             = 6'd41,
                     G_IRQ_COUNT           = 6'd42,
                     G_IRQ_PENDING_OFFSET  = 6'd43,
                     G_IRQ_PENDING_WORDS   = 6'd44;
    // global registers: which one a names (its item in the value's case below; 0: none, the
    // ranges of that case's default branch), used as it is or (PIPE) registered with the decode
    reg [5:0] g_sel;
    always @(*) begin
        g_sel = G_NONE;
        case (a)
            `VELO_BLK_ID_BASE + `VELO_BLKHDR_TYPE:          g_sel = G_ID_TYPE;
            `VELO_BLK_ID_BASE + `VELO_BLKHDR_VERSION:       g_sel = G_ID_VERSION;
            `VELO_BLK_ID_BASE + `VELO_BLKHDR_NEXT:          g_sel = G_ID_NEXT;
            `VELO_REG_ID_DESIGN_VERSION:                    g_sel = G_ID_DESIGN_VERSION;
            `VELO_REG_ID_CAPS:                              g_sel = G_ID_CAPS;
            `VELO_REG_ID_SPEC_HASH:                         g_sel = G_ID_SPEC_HASH;
            `VELO_BLK_CTRL_BASE + `VELO_BLKHDR_TYPE:        g_sel = G_CTRL_TYPE;
            `VELO_BLK_CTRL_BASE + `VELO_BLKHDR_VERSION:     g_sel = G_CTRL_VERSION;
            `VELO_BLK_CTRL_BASE + `VELO_BLKHDR_NEXT:        g_sel = G_CTRL_NEXT;
            `VELO_REG_CTRL_NODE_ID:                         g_sel = G_CTRL_NODE_ID;
            `VELO_REG_CTRL_CONTROL:                         g_sel = G_CTRL_CONTROL;
            `VELO_REG_CTRL_STATUS:                          g_sel = G_CTRL_STATUS;
            `VELO_REG_CTRL_QUIESCE_VPID:                    g_sel = G_CTRL_QUIESCE_VPID;
            `VELO_REG_CTRL_QUIESCE_STATUS:                  g_sel = G_CTRL_QUIESCE_STATUS;
            `VELO_REG_CTRL_SCRATCH:                         g_sel = G_CTRL_SCRATCH;
            `VELO_BLK_COUNTERS_BASE + `VELO_BLKHDR_TYPE:    g_sel = G_COUNTERS_TYPE;
            `VELO_BLK_COUNTERS_BASE + `VELO_BLKHDR_VERSION: g_sel = G_COUNTERS_VERSION;
            `VELO_BLK_COUNTERS_BASE + `VELO_BLKHDR_NEXT:    g_sel = G_COUNTERS_NEXT;
            `VELO_REG_COUNTERS_COUNT:                       g_sel = G_COUNTERS_COUNT;
            `VELO_BLK_VPID_BASE + `VELO_BLKHDR_TYPE:        g_sel = G_VPID_TYPE;
            `VELO_BLK_VPID_BASE + `VELO_BLKHDR_VERSION:     g_sel = G_VPID_VERSION;
            `VELO_BLK_VPID_BASE + `VELO_BLKHDR_NEXT:        g_sel = G_VPID_NEXT;
            `VELO_REG_VPID_NUM_VPIDS:                       g_sel = G_VPID_NUM_VPIDS;
            `VELO_REG_VPID_TABLE_OFFSET:                    g_sel = G_VPID_TABLE_OFFSET;
            `VELO_REG_VPID_TABLE_STRIDE:                    g_sel = G_VPID_TABLE_STRIDE;
            `VELO_REG_VPID_USER_OFFSET:                     g_sel = G_VPID_USER_OFFSET;
            `VELO_REG_VPID_USER_STRIDE:                     g_sel = G_VPID_USER_STRIDE;
            `VELO_BLK_NET_BASE + `VELO_BLKHDR_TYPE:         g_sel = G_NET_TYPE;
            `VELO_BLK_NET_BASE + `VELO_BLKHDR_VERSION:      g_sel = G_NET_VERSION;
            `VELO_BLK_NET_BASE + `VELO_BLKHDR_NEXT:         g_sel = G_NET_NEXT;
            `VELO_REG_NET_PORTS:                            g_sel = G_NET_PORTS;
            `VELO_REG_NET_LINK_STATUS:                      g_sel = G_NET_LINK_STATUS;
            `VELO_REG_NET_ROUTE_OFFSET:                     g_sel = G_NET_ROUTE_OFFSET;
            `VELO_REG_NET_PORT_OFFSET:                      g_sel = G_NET_PORT_OFFSET;
            `VELO_REG_NET_PORT_STRIDE:                      g_sel = G_NET_PORT_STRIDE;
            `VELO_REG_NET_DROP_NO_ROUTE:                    g_sel = G_NET_DROP_NO_ROUTE;
            `VELO_BLK_IRQ_BASE + `VELO_BLKHDR_TYPE:         g_sel = G_IRQ_TYPE;
            `VELO_BLK_IRQ_BASE + `VELO_BLKHDR_VERSION:      g_sel = G_IRQ_VERSION;
            `VELO_BLK_IRQ_BASE + `VELO_BLKHDR_NEXT:         g_sel = G_IRQ_NEXT;
            `VELO_REG_IRQ_CTRL:                             g_sel = G_IRQ_CTRL;
            `VELO_REG_IRQ_ARM:                              g_sel = G_IRQ_ARM;
            `VELO_REG_IRQ_COUNT:                            g_sel = G_IRQ_COUNT;
            `VELO_REG_IRQ_PENDING_OFFSET:                   g_sel = G_IRQ_PENDING_OFFSET;
            `VELO_REG_IRQ_PENDING_WORDS:                    g_sel = G_IRQ_PENDING_WORDS;
            default: g_sel = G_NONE;
        endcase
    end
    wire [5:0] g_su;  // the item used
    generate
        if (PIPE != 0) begin : g_dpipe
            reg [15:0] dq;
            always @(posedge clk) begin
                if (rst) dq <= 16'd0;
                else     dq <= {dc_np, dc_rt, dc_glob, dc_tbl, dc_user, dc_cnt, dc_rblk, dc_rcnt, dc_nq,
                                dc_nqrp, dc_rg, dc_pte, dc_pnd, dc_npcnt, dc_armok, dc_isarm};
            end
            assign {in_np, in_rt, in_glob, in_tbl, in_user, in_cnt, in_rblk, in_rcnt, in_nq, in_nqrp,
                    in_rg, in_pte, in_pnd, np_cnt, arm_ok, is_arm} = dq;
            assign a_ok = !a_new;
            reg [5:0] g_sq;
            always @(posedge clk) begin
                if (rst) g_sq <= G_NONE;
                else     g_sq <= g_sel;
            end
            assign g_su = g_sq;
        end else begin : g_dnopipe
            assign {in_np, in_rt, in_glob, in_tbl, in_user, in_cnt, in_rblk, in_rcnt, in_nq, in_nqrp,
                    in_rg, in_pte, in_pnd, np_cnt, arm_ok, is_arm} = {dc_np, dc_rt, dc_glob, dc_tbl,
                    dc_user, dc_cnt, dc_rblk, dc_rcnt, dc_nq, dc_nqrp, dc_rg, dc_pte, dc_pnd, dc_npcnt,
                    dc_armok, dc_isarm};
            assign a_ok = 1'b1;
            assign g_su = g_sel;
            wire unused_an = &{1'b0, a_new};
        end
    endgenerate
    wire [20:0] cnt_off = a - CNT_LO;
    assign cnt_idx = cnt_off[2 +: CNT_IDX_W];
    wire unused_ok = &{1'b0, req_addr[31:21], cnt_off, np_off, np_cidx[5], np_cidx[1:0], pnd_off,
                       NPW32, rc_off, rg_off, pte_off};
    genvar gp;
    generate
        for (gp = 0; gp < NP; gp = gp + 1) begin : g_pcfg
            assign port_cfg[3*gp +: 3] = pcfg[gp];
        end
    endgenerate
    localparam [31:0] NP32 = NP, PB32 = PB, NVC32 = NVC, VCD32 = VC_DEPTH;
    wire [3:0] NP4 = NP32[3:0], PB4 = PB32[3:0], NVC4 = NVC32[3:0];
    wire [7:0] VCD8 = VCD32[7:0];
    wire unused_par = &{1'b0, NP32[31:4], PB32[31:4], NVC32[31:4], VCD32[31:8]};

    // RMA block registers (combinational read)
    localparam [31:0] RGB32 = REGION_BITS, PTB32 = PTE_BITS, MTU32 = RMA_MTU;
    reg [31:0] rma_rd;
    reg        rma_wr_ok;
    always @(*) begin
        rma_rd = 32'd0;
        rma_wr_ok = 1'b0;
        case (a)
            RB_LO + `VELO_BLKHDR_TYPE:    rma_rd = `VELO_BLK_RMA_TYPE;
            RB_LO + `VELO_BLKHDR_VERSION: rma_rd = `VELO_BLK_RMA_VERSION;
            RB_LO + `VELO_BLKHDR_NEXT:    rma_rd = {11'd0, `VELO_BLK_RMA_NEXT};
            `VELO_REG_RMA_CAPS: begin
                rma_rd[`VELO_REG_RMA_CAPS_REGION_BITS] = RGB32[4:0];
                rma_rd[`VELO_REG_RMA_CAPS_PTE_BITS]    = PTB32[4:0];
                rma_rd[`VELO_REG_RMA_CAPS_MTU]         = MTU32[7:0];
            end
            `VELO_REG_RMA_CONTROL: begin rma_rd[`VELO_REG_RMA_CONTROL_ENABLE] = rma_en; rma_wr_ok = 1'b1; end
            `VELO_REG_RMA_STATUS:  rma_rd[`VELO_REG_RMA_STATUS_BUSY] = rma_busy;
            `VELO_REG_RMA_QUIESCE_REGION: begin rma_rd = {{(32-REGION_BITS){1'b0}}, rma_qregion}; rma_wr_ok = 1'b1; end
            `VELO_REG_RMA_QUIESCE_STATUS: rma_rd[`VELO_REG_RMA_QUIESCE_STATUS_BUSY] = rq_busy;
            `VELO_REG_RMA_REGION_OFFSET:  rma_rd = {11'd0, `VELO_TBL_RMA_REGION_BASE};
            `VELO_REG_RMA_PTE_OFFSET:     rma_rd = {11'd0, `VELO_TBL_RMA_PTE_BASE};
            `VELO_REG_RMA_NQ_OFFSET:      rma_rd = {11'd0, `VELO_TBL_RMA_NQ_TABLE_BASE};
            `VELO_REG_RMA_CNT_COUNT:      rma_rd = `VELO_RMA_CNT_NUM;
            default: begin
                if (in_rcnt) begin
                    rma_rd = rcnt_data;
                    rma_wr_ok = 1'b1;
                end
            end
        endcase
    end
    wire unused_rp = &{1'b0, RGB32[31:5], PTB32[31:5], MTU32[31:8]};

    // global registers: the value of the item a names (g_su, above; combinational read of
    // the registers themselves)
    reg  [31:0] g_rd;
    reg         g_wr_ok;
    always @(*) begin
        g_rd = 32'd0;
        g_wr_ok = 1'b0;
        case (g_su)
            G_ID_TYPE:             g_rd = `VELO_BLK_ID_TYPE;
            G_ID_VERSION:          g_rd = `VELO_BLK_ID_VERSION;
            G_ID_NEXT:             g_rd = {11'd0, `VELO_BLK_ID_NEXT};
            G_ID_DESIGN_VERSION:   g_rd = `VELO_SPEC_VERSION;
            G_ID_CAPS:             begin
                g_rd[`VELO_REG_ID_CAPS_NODE_BITS]  = NODE_BITS[3:0];
                g_rd[`VELO_REG_ID_CAPS_VPID_BITS]  = VPID_BITS[3:0];
                g_rd[`VELO_REG_ID_CAPS_TLP_BYTES]  = TLP_W[10:3];
                g_rd[`VELO_REG_ID_CAPS_LINK_BYTES] = LINK_W[10:3];
                g_rd[`VELO_REG_ID_CAPS_MSG_MAX]    = MSG_MAX[7:0];
            end
            G_ID_SPEC_HASH:        g_rd = `VELO_SPEC_HASH;
            G_CTRL_TYPE:           g_rd = `VELO_BLK_CTRL_TYPE;
            G_CTRL_VERSION:        g_rd = `VELO_BLK_CTRL_VERSION;
            G_CTRL_NEXT:           g_rd = {11'd0, `VELO_BLK_CTRL_NEXT};
            G_CTRL_NODE_ID:        begin g_rd = {24'd0, node_id}; g_wr_ok = 1'b1; end
            G_CTRL_CONTROL:        begin g_rd[`VELO_REG_CTRL_CONTROL_ENABLE] = ctrl_enable; g_wr_ok = 1'b1; end
            G_CTRL_STATUS:         begin
                g_rd[`VELO_REG_CTRL_STATUS_LINK_UP]  = link_up;
                g_rd[`VELO_REG_CTRL_STATUS_CPL_BUSY] = cpl_busy;
            end
            G_CTRL_QUIESCE_VPID:   begin g_rd = {{(32-VPID_BITS){1'b0}}, quiesce_vpid}; g_wr_ok = 1'b1; end
            G_CTRL_QUIESCE_STATUS: g_rd[`VELO_REG_CTRL_QUIESCE_STATUS_BUSY] = q_busy;
            G_CTRL_SCRATCH:        begin g_rd = scratch; g_wr_ok = 1'b1; end
            G_COUNTERS_TYPE:       g_rd = `VELO_BLK_COUNTERS_TYPE;
            G_COUNTERS_VERSION:    g_rd = `VELO_BLK_COUNTERS_VERSION;
            G_COUNTERS_NEXT:       g_rd = {11'd0, `VELO_BLK_COUNTERS_NEXT};
            G_COUNTERS_COUNT:      g_rd = `VELO_CNT_NUM;
            G_VPID_TYPE:           g_rd = `VELO_BLK_VPID_TYPE;
            G_VPID_VERSION:        g_rd = `VELO_BLK_VPID_VERSION;
            G_VPID_NEXT:           g_rd = {11'd0, `VELO_BLK_VPID_NEXT};
            G_VPID_NUM_VPIDS:      g_rd = NV;
            G_VPID_TABLE_OFFSET:   g_rd = {11'd0, `VELO_TBL_VPID_TABLE_BASE};
            G_VPID_TABLE_STRIDE:   g_rd = {11'd0, `VELO_TBL_VPID_TABLE_STRIDE};
            G_VPID_USER_OFFSET:    g_rd = {11'd0, `VELO_TBL_VPID_USER_BASE};
            G_VPID_USER_STRIDE:    g_rd = {11'd0, `VELO_TBL_VPID_USER_STRIDE};
            G_NET_TYPE:            g_rd = `VELO_BLK_NET_TYPE;
            G_NET_VERSION:         g_rd = `VELO_BLK_NET_VERSION;
            G_NET_NEXT:            g_rd = {11'd0, `VELO_BLK_NET_NEXT};
            G_NET_PORTS:           begin
                g_rd[`VELO_REG_NET_PORTS_NP]       = NP4;
                g_rd[`VELO_REG_NET_PORTS_PB]       = PB4;
                g_rd[`VELO_REG_NET_PORTS_NVC]      = NVC4;
                g_rd[`VELO_REG_NET_PORTS_VC_DEPTH] = VCD8;
            end
            G_NET_LINK_STATUS:     g_rd = {{(32-NP){1'b0}}, port_up};
            G_NET_ROUTE_OFFSET:    g_rd = {11'd0, `VELO_TBL_ROUTE_TABLE_BASE};
            G_NET_PORT_OFFSET:     g_rd = {11'd0, `VELO_TBL_NET_PORT_BASE};
            G_NET_PORT_STRIDE:     g_rd = {11'd0, `VELO_TBL_NET_PORT_STRIDE};
            G_NET_DROP_NO_ROUTE:   begin g_rd = no_route; g_wr_ok = 1'b1; end
            G_IRQ_TYPE:            g_rd = `VELO_BLK_IRQ_TYPE;
            G_IRQ_VERSION:         g_rd = `VELO_BLK_IRQ_VERSION;
            G_IRQ_NEXT:            g_rd = has_rma ? {11'd0, `VELO_BLK_IRQ_NEXT} : 32'd0;
            G_IRQ_CTRL:            begin g_rd[`VELO_REG_IRQ_CTRL_ENABLE] = irq_en; g_wr_ok = 1'b1; end
            G_IRQ_ARM:             g_wr_ok = arm_ok;
            G_IRQ_COUNT:           begin g_rd = irq_count; g_wr_ok = 1'b1; end
            G_IRQ_PENDING_OFFSET:  g_rd = {11'd0, `VELO_TBL_IRQ_PENDING_BASE};
            G_IRQ_PENDING_WORDS:   g_rd = NPW32;
            default: begin
                if (in_rblk) begin
                    g_rd = rma_rd;
                    g_wr_ok = rma_wr_ok;
                end else if (in_pnd) begin
                    g_rd = pnd_rd;
                    g_wr_ok = 1'b1;
                end else if (in_cnt) begin
                    g_rd = cnt_data;
                    g_wr_ok = 1'b1;
                end else if (in_np) begin
                    if ({15'd0, np_reg} == `VELO_TBL_NET_PORT_CFG) begin
                        g_rd[`VELO_TBL_NET_PORT_CFG_DIM]      = pcfg[np_port][1:0];
                        g_rd[`VELO_TBL_NET_PORT_CFG_DATELINE] = pcfg[np_port][2];
                        g_wr_ok = 1'b1;
                    end else if ({15'd0, np_reg} == `VELO_TBL_NET_PORT_STATUS) begin
                        g_rd[`VELO_TBL_NET_PORT_STATUS_UP] = up8[np_port];
                    end else if (np_cnt) begin
                        g_rd = ncnt_data;
                        g_wr_ok = 1'b1;
                    end
                end
            end
        endcase
    end

    // ------------------------------------------------------------------ table RAMs
    wire        init_busy = (st == R_INIT);
    wire        rd_go     = (st == R_RD) && a_ok;
    wire        sw_re     = rd_go && (in_tbl || in_user) && !tbl_re;
    wire        rt_sw_re  = rd_go && in_rt && !rt_re;
    wire        nq_sw_re  = rd_go && (in_nq || in_nqrp) && !nq_re;
    wire        ram_re    = tbl_re || sw_re;
    wire [VPID_BITS-1:0] ram_ra = tbl_re ? tbl_vpid : tv;

    wire        do_wr   = (st == R_WR) && a_ok;
    wire        wr_tbl  = do_wr && in_tbl;
    wire        wr_user = do_wr && in_user;
    wire        wp_busy = wr_tbl && tfield == 2'd3 && wp_we;  // the completer has the port
    wire        wr_nq   = do_wr && in_nq;
    wire        nwp_busy = wr_nq && tfield == 2'd3 && nq_wp_we; // the notification writer has the port
    wire        acfg_busy = do_wr && (in_rg || in_pte) && !acfg_ready; // the ATU is clearing
    wire        arm_busy;                                     // the interrupt unit has the arm port ...
    wire        pnd_busy;                                     // ... or the pending port
    wire        wr_busy = wp_busy || arm_busy || pnd_busy || nwp_busy || acfg_busy;
    wire        we_lo   = init_busy || (wr_tbl && tfield == 2'd0);
    wire        we_hi   = init_busy || (wr_tbl && tfield == 2'd1);
    wire        we_cfg  = init_busy || (wr_tbl && tfield == 2'd2 && !arm_busy);
    wire        we_wp   = wp_we || init_busy || (wr_tbl && tfield == 2'd3);
    wire        we_rp   = init_busy || wr_user;
    wire [VPID_BITS-1:0] wa = init_busy ? init_idx[VPID_BITS-1:0] : tv;
    wire        we_rt   = init_busy || (do_wr && in_rt);

    wire [25:0] r_lo;
    wire [31:0] r_hi;
    wire [5:0]  r_cfg;
    wire [16:0] r_wp, r_rp;
    wire [5:0]  cfg_w = {wd[`VELO_TBL_VPID_TABLE_MB_CFG_LOG2_LINES], wd[`VELO_TBL_VPID_TABLE_MB_CFG_ENABLE]};

    velo_sdp_ram #(.W(26), .ADDR_W(VPID_BITS)) u_lo (
        .clk(clk), .we(we_lo), .waddr(wa), .wdata(init_busy ? 26'd0 : wd[31:6]),
        .re(ram_re), .raddr(ram_ra), .rdata(r_lo));
    velo_sdp_ram #(.W(32), .ADDR_W(VPID_BITS)) u_hi (
        .clk(clk), .we(we_hi), .waddr(wa), .wdata(init_busy ? 32'd0 : wd),
        .re(ram_re), .raddr(ram_ra), .rdata(r_hi));
    velo_sdp_ram #(.W(6), .ADDR_W(VPID_BITS)) u_cfg (
        .clk(clk), .we(we_cfg), .waddr(wa), .wdata(init_busy ? 6'd0 : cfg_w),
        .re(ram_re), .raddr(ram_ra), .rdata(r_cfg));
    velo_sdp_ram #(.W(17), .ADDR_W(VPID_BITS)) u_wp (
        .clk(clk), .we(we_wp), .waddr(wp_we ? wp_vpid : wa),
        .wdata(wp_we ? wp_data : (init_busy ? 17'd0 : wd[16:0])),
        .re(ram_re), .raddr(ram_ra), .rdata(r_wp));
    velo_sdp_ram #(.W(17), .ADDR_W(VPID_BITS)) u_rp (
        .clk(clk), .we(we_rp), .waddr(wa), .wdata(init_busy ? 17'd0 : wd[16:0]),
        .re(ram_re), .raddr(ram_ra), .rdata(r_rp));

    // ATU table writes: forwarded one DW at a time
    assign acfg_valid = do_wr && (in_rg || in_pte) && !(wp_busy || arm_busy || pnd_busy);
    assign acfg_pte   = in_pte;
    assign acfg_idx   = in_pte ? pte_off[18:3] : {rg_off[20:5]};
    assign acfg_reg   = in_pte ? {2'b00, pte_off[2]} : rg_off[4:2];
    assign acfg_data  = wd;

    // route table: {VALID, ROUTE}; the requester's reads have priority
    wire [14:0] r_rt;
    velo_sdp_ram #(.W(15), .ADDR_W(NODE_BITS)) u_rt (
        .clk(clk), .we(we_rt), .waddr(init_busy ? init_idx[NODE_BITS-1:0] : rt_sw_node),
        .wdata(init_busy ? 15'd0 : {wd[`VELO_TBL_ROUTE_TABLE_ROUTE_VALID_LSB], wd[`VELO_TBL_ROUTE_TABLE_ROUTE_ROUTE]}),
        .re(rt_re || rt_sw_re), .raddr(rt_re ? rt_node : rt_sw_node), .rdata(r_rt));
    assign rt_data = r_rt;

    // ------------------------------------------------------------------ RMA tables
    generate
        if (RMA != 0) begin : g_rma_tbl
            // route table copies for the RMA engines (same writes)
            velo_sdp_ram #(.W(15), .ADDR_W(NODE_BITS)) u_rt2 (
                .clk(clk), .we(we_rt), .waddr(init_busy ? init_idx[NODE_BITS-1:0] : rt_sw_node),
                .wdata(init_busy ? 15'd0 : {wd[`VELO_TBL_ROUTE_TABLE_ROUTE_VALID_LSB], wd[`VELO_TBL_ROUTE_TABLE_ROUTE_ROUTE]}),
                .re(rt2_re), .raddr(rt2_node), .rdata(rt2_data));
            velo_sdp_ram #(.W(15), .ADDR_W(NODE_BITS)) u_rt3 (
                .clk(clk), .we(we_rt), .waddr(init_busy ? init_idx[NODE_BITS-1:0] : rt_sw_node),
                .wdata(init_busy ? 15'd0 : {wd[`VELO_TBL_ROUTE_TABLE_ROUTE_VALID_LSB], wd[`VELO_TBL_ROUTE_TABLE_ROUTE_ROUTE]}),
                .re(rt3_re), .raddr(rt3_node), .rdata(rt3_data));
            // notification queue table: the writer's reads and write-pointer updates have priority
            wire nre = nq_re || nq_sw_re;
            wire [VPID_BITS-1:0] nra = nq_re ? nq_vpid : ntv;
            wire [VPID_BITS-1:0] nwa = init_busy ? init_idx[VPID_BITS-1:0] : ntv;
            wire [5:0] ncfg_w = {wd[`VELO_TBL_RMA_NQ_TABLE_NQ_CFG_LOG2_ENTRIES], wd[`VELO_TBL_RMA_NQ_TABLE_NQ_CFG_ENABLE]};
            wire [25:0] n_lo;
            wire [31:0] n_hi;
            wire [5:0]  n_cfg;
            velo_sdp_ram #(.W(26), .ADDR_W(VPID_BITS)) u_nlo (
                .clk(clk), .we(init_busy || (wr_nq && tfield == 2'd0)), .waddr(nwa),
                .wdata(init_busy ? 26'd0 : wd[31:6]), .re(nre), .raddr(nra), .rdata(n_lo));
            velo_sdp_ram #(.W(32), .ADDR_W(VPID_BITS)) u_nhi (
                .clk(clk), .we(init_busy || (wr_nq && tfield == 2'd1)), .waddr(nwa),
                .wdata(init_busy ? 32'd0 : wd), .re(nre), .raddr(nra), .rdata(n_hi));
            velo_sdp_ram #(.W(6), .ADDR_W(VPID_BITS)) u_ncfg (
                .clk(clk), .we(init_busy || (wr_nq && tfield == 2'd2)), .waddr(nwa),
                .wdata(init_busy ? 6'd0 : ncfg_w), .re(nre), .raddr(nra), .rdata(n_cfg));
            velo_sdp_ram #(.W(17), .ADDR_W(VPID_BITS)) u_nwp (
                .clk(clk), .we(nq_wp_we || init_busy || (wr_nq && tfield == 2'd3)),
                .waddr(nq_wp_we ? nq_wp_vpid : nwa),
                .wdata(nq_wp_we ? nq_wp_data : (init_busy ? 17'd0 : wd[16:0])),
                .re(nre), .raddr(nra), .rdata(nq_wp));
            velo_sdp_ram #(.W(17), .ADDR_W(VPID_BITS)) u_nrp (
                .clk(clk), .we(init_busy || (do_wr && in_nqrp)), .waddr(nwa),
                .wdata(init_busy ? 17'd0 : wd[16:0]), .re(nre), .raddr(nra), .rdata(nq_rp));
            assign nq_base = {n_hi, n_lo};
            assign nq_en   = n_cfg[0];
            assign nq_log2 = n_cfg[5:1];
        end else begin : g_no_rma_tbl
            assign rt2_data = 15'd0;
            assign rt3_data = 15'd0;
            assign nq_base  = 58'd0;
            assign nq_en    = 1'b0;
            assign nq_log2  = 5'd0;
            assign nq_wp    = 17'd0;
            assign nq_rp    = 17'd0;
            wire unused_nq = &{1'b0, rt2_re, rt2_node, rt3_re, rt3_node, nq_re, nq_vpid, nq_wp_we, nq_wp_vpid,
                               nq_wp_data, nq_sw_re, nwp_busy};
        end
    endgenerate

    assign tbl_base = {r_hi, r_lo};
    assign tbl_en   = r_cfg[0];
    assign tbl_log2 = r_cfg[5:1];
    assign tbl_wp   = r_wp;
    assign tbl_rp   = r_rp;

    // ------------------------------------------------------------------ interrupts
    reg                 c_v;      // an entry was committed last cycle: its arm bit is on r_arm
    reg [VPID_BITS-1:0] c_vpid;
    reg                 fw_v;     // the arm bit of c_vpid was written in the cycle it was read ...
    reg                 fw_d;     // ... with this value
    wire                r_arm;
    wire c_hit      = c_v && (fw_v ? fw_d : r_arm);   // the entry consumes the arm
    wire arm_sw_set = do_wr && is_arm && arm_ok;
    wire arm_sw_clr = wr_tbl && tfield == 2'd2;        // every MB_CFG write disarms
    assign arm_busy = c_hit && (arm_sw_set || arm_sw_clr);
    wire arm_we     = init_busy || c_hit || arm_sw_set || arm_sw_clr;
    wire [VPID_BITS-1:0] arm_wa = init_busy ? init_idx[VPID_BITS-1:0] :
                                  c_hit ? c_vpid : (arm_sw_set ? wd[VPID_BITS-1:0] : tv);
    wire arm_wd     = !init_busy && !c_hit && arm_sw_set;
    velo_sdp_ram #(.W(1), .ADDR_W(VPID_BITS)) u_arm (
        .clk(clk), .we(arm_we), .waddr(arm_wa), .wdata(arm_wd),
        .re(cmt_valid), .raddr(cmt_vpid), .rdata(r_arm));

    always @(posedge clk) begin
        if (rst) begin
            c_v  <= 1'b0;
            fw_v <= 1'b0;
        end else begin
            c_v <= cmt_valid && !init_busy;
            if (cmt_valid) fw_v <= arm_we && (arm_wa == cmt_vpid);
        end
    end
    // data of the commit pipeline (used only with c_v)
    always @(posedge clk) begin
        if (cmt_valid) begin
            c_vpid <= cmt_vpid;
            fw_d   <= arm_wd;
        end
    end

    // pending bitmap: the entry's bit, merged with a software clear of the same word; a clear of
    // another word waits (pnd_busy)
    wire [7:0]     c_v8    = {{(8-VPID_BITS){1'b0}}, c_vpid};
    wire [PWA-1:0] c_word  = c_v8[5 +: PWA];
    wire [31:0]    c_bit   = 32'd1 << c_v8[4:0];
    wire           unused_cv = &{1'b0, c_v8};
    wire           pnd_sw  = do_wr && in_pnd;
    assign         pnd_busy = c_hit && pnd_sw && (c_word != pnd_w);
    wire           pnd_swgo = pnd_sw && !pnd_busy;
    wire           pnd_we  = init_busy || c_hit || pnd_swgo;
    wire [PWA-1:0] pnd_wa  = init_busy ? init_idx[PWA-1:0] : (c_hit ? c_word : pnd_w);
    wire [31:0]    pnd_old = pnd_mem[pnd_wa];
    wire [31:0]    pnd_new = init_busy ? 32'd0 : ((pnd_old & ~(pnd_swgo ? wd : 32'd0)) | (c_hit ? c_bit : 32'd0));
    always @(posedge clk) begin
        if (pnd_we) pnd_mem[pnd_wa] <= pnd_new;
    end
    // a new request for an entry's bit unless one is outstanding (then the bit just waits)
    wire irq_hold  = irq_valid && !irq_ready;
    wire irq_raise = c_hit && irq_en;

    reg [31:0] t_rd;  // RAM-backed register as software sees it
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
        end else if (in_rt) begin
            t_rd[`VELO_TBL_ROUTE_TABLE_ROUTE_VALID] = r_rt[14];
            t_rd[`VELO_TBL_ROUTE_TABLE_ROUTE_ROUTE] = r_rt[13:0];
        end else if (in_user) begin
            t_rd = {15'd0, r_rp};
        end else begin
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

    // ------------------------------------------------------------------ control
    wire in_fire = in_valid && in_ready;
    always @(*) begin
        case (st)
            R_IDLE, R_DRAIN: in_ready = 1'b1;
            default:         in_ready = 1'b0;
        endcase
    end

    always @(posedge clk) begin
        if (rst) begin
            st             <= R_INIT;
            st_after_drain <= R_IDLE;
            init_idx       <= {IW{1'b0}};
            for (pi = 0; pi < 8; pi = pi + 1) pcfg[pi] <= 3'd0;
            no_route       <= 32'd0;
            ncnt_clr       <= 1'b0;
            ncnt_clr_idx   <= {NCNT_IDX_W{1'b0}};
            node_id        <= 8'd0;
            ctrl_enable    <= 1'b0;
            quiesce_vpid   <= {VPID_BITS{1'b0}};
            scratch        <= 32'd0;
            cpl_valid      <= 1'b0;
            sw_wr          <= 1'b0;
            sw_wr_vpid     <= {VPID_BITS{1'b0}};
            cnt_clr        <= 1'b0;
            cnt_clr_idx    <= {CNT_IDX_W{1'b0}};
            ev_window_read <= 1'b0;
            ev_unsupported <= 1'b0;
            ev_bad_access  <= 1'b0;
            irq_en         <= 1'b0;
            irq_count      <= 32'd0;
            irq_valid      <= 1'b0;
            rma_en         <= 1'b0;
            rma_qregion    <= {REGION_BITS{1'b0}};
            nq_sw_wr       <= 1'b0;
            nq_sw_wr_vpid  <= {VPID_BITS{1'b0}};
            rcnt_clr       <= 1'b0;
            rcnt_clr_idx   <= 5'd0;
            ev_rma_read    <= 1'b0;
            a              <= 21'd0;
            a_new          <= 1'b0;
            two            <= 1'b0;
            second         <= 1'b0;
            ur             <= 1'b0;
        end else begin
            a_new          <= 1'b0;
            sw_wr          <= 1'b0;
            cnt_clr        <= 1'b0;
            ncnt_clr       <= 1'b0;
            ev_window_read <= 1'b0;
            nq_sw_wr       <= 1'b0;
            rcnt_clr       <= 1'b0;
            ev_rma_read    <= 1'b0;
            if (ev_no_route && no_route != 32'hFFFF_FFFF) no_route <= no_route + 32'd1;
            irq_valid <= irq_hold || irq_raise;
            if (irq_raise && !irq_hold) irq_count <= irq_count + 32'd1;  // a write clear wins
            ev_unsupported <= 1'b0;
            ev_bad_access  <= 1'b0;
            case (st)
                R_INIT: begin
                    init_idx <= init_idx + 1'b1;
                    if (init_idx == NI[IW-1:0] - 1'b1) st <= R_IDLE;
                end
                R_IDLE: begin
                    if (in_fire && in_sop) begin
                        a      <= req_addr[20:0];
                        a_new  <= 1'b1;
                        two    <= (len_dw == 10'd2);
                        second <= 1'b0;
                        ur     <= 1'b0;
                        if (is_posted) begin
                            if (is_mwr && on_bar0 && wr_ok) st_after_drain <= R_WR;
                            else begin
                                st_after_drain <= R_IDLE;
                                ev_bad_access  <= is_mwr && on_bar0;
                                ev_unsupported <= !(is_mwr && on_bar0);
                            end
                        end else begin
                            st_after_drain <= (is_mrd && on_bar0 && len_ok) ? R_RD : R_CPL;
                            if (!(is_mrd && on_bar0 && len_ok)) begin
                                ur <= 1'b1;
                                ev_window_read <= is_mrd && !on_bar0 && !(has_rma && in_bar == `VELO_BAR_RMA);
                                ev_rma_read    <= is_mrd && has_rma && in_bar == `VELO_BAR_RMA;
                                ev_bad_access  <= is_mrd && on_bar0;
                                ev_unsupported <= !is_mrd;
                            end
                        end
                        if (in_eop) begin
                            if (is_posted) st <= (is_mwr && on_bar0 && wr_ok) ? R_WR : R_IDLE;
                            else           st <= (is_mrd && on_bar0 && len_ok) ? R_RD : R_CPL;
                        end else begin
                            st <= R_DRAIN;
                        end
                    end
                end
                R_DRAIN: if (in_fire && in_eop) st <= st_after_drain;
                R_WR: begin
                    if (a_ok && !wr_busy) begin
                        if (in_glob) begin
                            if (!g_wr_ok) ev_bad_access <= 1'b1;
                            case (a)
                                `VELO_REG_CTRL_NODE_ID:      node_id      <= wd[7:0] & NODE_MASK;
                                `VELO_REG_CTRL_CONTROL:      ctrl_enable  <= wd[`VELO_REG_CTRL_CONTROL_ENABLE_LSB];
                                `VELO_REG_CTRL_QUIESCE_VPID: quiesce_vpid <= wd[VPID_BITS-1:0];
                                `VELO_REG_CTRL_SCRATCH:      scratch      <= wd;
                                `VELO_REG_NET_DROP_NO_ROUTE: no_route     <= 32'd0;
                                `VELO_REG_IRQ_CTRL:          irq_en       <= wd[`VELO_REG_IRQ_CTRL_ENABLE_LSB];
                                `VELO_REG_IRQ_COUNT:         irq_count    <= 32'd0;
                                default: ;
                            endcase
                            if (in_rblk && a == `VELO_REG_RMA_CONTROL) rma_en <= wd[`VELO_REG_RMA_CONTROL_ENABLE_LSB];
                            if (in_rblk && a == `VELO_REG_RMA_QUIESCE_REGION) rma_qregion <= wd[REGION_BITS-1:0];
                            if (in_rcnt) begin
                                rcnt_clr     <= 1'b1;
                                rcnt_clr_idx <= rcnt_idx;
                            end
                            if (in_cnt) begin
                                cnt_clr     <= 1'b1;
                                cnt_clr_idx <= cnt_idx;
                            end
                            if (in_np && {15'd0, np_reg} == `VELO_TBL_NET_PORT_CFG)
                                pcfg[np_port] <= {wd[`VELO_TBL_NET_PORT_CFG_DATELINE_LSB], wd[`VELO_TBL_NET_PORT_CFG_DIM]};
                            if (in_np && np_cnt) begin
                                ncnt_clr     <= 1'b1;
                                ncnt_clr_idx <= ncnt_idx;
                            end
                        end else if (in_tbl || in_user || in_rt) begin
                            sw_wr      <= !in_rt;
                            sw_wr_vpid <= tv;
                        end else if (in_nq || in_nqrp) begin
                            nq_sw_wr      <= 1'b1;
                            nq_sw_wr_vpid <= ntv;
                        end else if (in_rg || in_pte) begin
                            // forwarded to the ATU (acfg_*)
                        end else begin
                            ev_bad_access <= 1'b1;
                        end
                        if (two && !second) begin
                            second <= 1'b1;
                            a      <= a + 21'd4;
                            a_new  <= 1'b1;
                        end else begin
                            st <= R_IDLE;
                        end
                    end
                end
                R_RD: if (a_ok) begin
                    if (in_tbl || in_user || in_rt || in_nq || in_nqrp) begin
                        // RAM-backed: use the read port when the completer (requester) leaves it free
                        if (sw_re || rt_sw_re || nq_sw_re) st <= R_RDW;
                    end else begin
                        if (second) rdata[63:32] <= g_rd;
                        else        rdata[31:0]  <= g_rd;
                        if (two && !second) begin
                            second <= 1'b1;
                            a      <= a + 21'd4;
                            a_new  <= 1'b1;
                        end else begin
                            st <= R_CPL;
                        end
                    end
                end
                R_RDW: begin
                    if (second) rdata[63:32] <= t_rd;
                    else        rdata[31:0]  <= t_rd;
                    if (two && !second) begin
                        second <= 1'b1;
                        a      <= a + 21'd4;
                        a_new  <= 1'b1;
                        st     <= R_RD;
                    end else begin
                        st <= R_CPL;
                    end
                end
                R_CPL: begin
                    if (!cpl_valid) cpl_valid <= 1'b1;
                    else if (cpl_ready) begin
                        cpl_valid <= 1'b0;
                        st        <= R_IDLE;
                    end
                end
                default: st <= R_IDLE;
            endcase
        end
    end

    // request fields kept for the completion (no reset needed: used only after being set)
    always @(posedge clk) begin
        if (st == R_IDLE && in_fire && in_sop) begin
            wdata  <= in_data[63:0];
            rq_id  <= in_hdr[`VELO_TLP_HDR_REQ_ID];
            rq_tag <= in_hdr[`VELO_TLP_HDR_REQ_TAG];
            lower  <= (is_mrd) ? {req_addr[6:2], lead} : 7'd0;
            bcnt   <= (is_mrd && on_bar0 && len_ok) ? rd_bcnt : 12'd4;
        end
    end

    always @(*) begin
        cpl_hdr = 128'd0;
        cpl_hdr[`VELO_TLP_HDR_FMT_TYPE]       = ur ? `VELO_TLP_FMT_TYPE_CPL : `VELO_TLP_FMT_TYPE_CPLD;
        cpl_hdr[`VELO_TLP_HDR_LENGTH]         = ur ? 10'd0 : (two ? 10'd2 : 10'd1);
        cpl_hdr[`VELO_TLP_HDR_CPL_ID]         = cpl_id;
        cpl_hdr[`VELO_TLP_HDR_CPL_STATUS]     = ur ? `VELO_TLP_CPL_UR : `VELO_TLP_CPL_SC;
        cpl_hdr[`VELO_TLP_HDR_CPL_BYTE_COUNT] = bcnt;
        cpl_hdr[`VELO_TLP_HDR_CPL_REQ_ID]     = rq_id;
        cpl_hdr[`VELO_TLP_HDR_CPL_TAG]        = rq_tag;
        cpl_hdr[`VELO_TLP_HDR_CPL_LOWER_ADDR] = lower;
    end
    generate
        if (TLP_W > 64) begin : g_wide
            assign cpl_data = {{(TLP_W-64){1'b0}}, rdata};
        end else begin : g_narrow
            assign cpl_data = rdata;
        end
    endgenerate
endmodule
`default_nettype wire
