// RMA target engine (docs/rma.md §3): serves RMA_PUT and RMA_GET packets arriving on the request
// class, writes put data into host memory by DMA and answers on the response class (PUT_RSP,
// GET_RSP).
//
// Ingress: a packet is stored whole in one of 2^SLOTS_LOG2 slots (two 64-bit RAM banks, even and
// odd words) before anything is decided, so a packet marked bad (in_bad with its last word: it was
// stomped after cut-through forwarding began) or malformed is dropped without effect: it writes
// nothing and does not touch the per-source put state (the link replays it intact).
//
// Translate stage (T, in packet order). PUT: the per-source-node outcome (fail flag + reason,
// 2^NODE_BITS x 5 bits of LUT RAM) is read; a FIRST packet clears it and is looked up with the
// put's whole length [NLA, NLA + LEN) (REMOTE_WRITE); a later packet of a failed put is skipped,
// otherwise it is looked up with its own data length; a packet whose data cross a page end takes a
// second lookup for the rest (all-or-nothing per packet: if the second fails, the first
// translation is released and nothing of the packet is written). A failure sets the outcome.
// Every lookup carries the initiator (SRC_NODE, SRC_VPID: the ATU checks the region's scope) and
// the key's bits 31:8: from the packet's RMA_PKT_LEN word (FIRST, notification packet), else
// those the put's FIRST packet brought, kept per source node (2^NODE_BITS x 24 bits, block RAM
// read when T takes the packet): every packet of a put is checked with the full 32-bit key, so a
// region index reused mid-put with a key of the same low 8 bits takes no more of the put.
// GET: queued for the get engine (GET queue: the request's fields, its KEY_HI, the initiator's
// node and the route back to the source, read here), so T never waits for a get being served,
// i.e. for host reads (below); every page lookup of the get checks the key and the scope.
//
// Write stage (W, in packet order): the packet's data go out as posted MWr TLPs, cut at the ends
// of the translated pieces and at MPS boundaries, with byte enables; the payload bytes are read
// from the slot two words at a time (one word from each bank) through a byte rotator (packet
// offset - host address alignment), so any RG_START works and the common case is a pass-through.
// A translation is released when the last beat of its last TLP is accepted. For the LAST packet
// W waits until its last beat was accepted, then (NOTIFY, no failure) hands the TARGET entry to
// the notification writer and waits until it reports the entry written (n_done) or dropped
// (n_drop: NQ_DISABLED), and only then loads the PUT_RSP (docs/rma.md §3.3).
//
// Get engine (velo_rma_tgt_get): checks [NLA, NLA + LEN) with REMOTE_READ, then walks the region page by page (one
// lookup per page, the first one being the check), issuing DMA reads (velo_dma_rd, <= 4 KiB, not
// across a page end) whose context carries the region to release with the last read of each
// translation. The data (host lanes) go through a 16-byte gather register into GET_RSP packets
// (packet lanes), segmented per docs/rma.md and built whole in one of two packet buffers before
// they are sent, so a read error never leaves a packet half sent: it discards the packet being
// built, waits for the reads already issued, and ends the get with one LAST packet carrying ERR.
//
// Host reads and posted writes (docs/rma.md §6.1): the get engine waits for host read completions,
// which reach the NIC behind its CPU's posted writes, which may wait for the network's request
// class, which waits at this NIC's (and other NICs') request input. So the request input must
// never wait for a get being served: T hands every GET to the get engine at once if it is idle
// and the queue empty, else into the GET queue (2^GQ_LOG2 entries of 215 bits, block RAM), and
// frees its slot. The initiator keeps at most one get outstanding
// per target node (velo_rma_init), so with GQ_LOG2 >= NODE_BITS the queue never fills; if it
// does (GETs from an initiator that breaks that rule), T waits for room as before.
//
// No head-of-line deadlock: responses never wait for requests. The response output takes whole
// packets from two independent sources, the PUT_RSP register and the GET_RSP buffers, round
// robin; both are filled by logic that waits only for the response output, the host (TLP
// port, DMA reads) and the notification writer, never for the request input. A request may wait
// for the response class (W holding a PUT_RSP until the register is free), which is the allowed
// direction (request -> response), as in any request/response protocol on separate virtual
// channels; it never waits for a host read.
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_ports.vh"
module velo_rma_tgt #(
    parameter integer TLP_W       = 64,   // TLP stream data width: 64 (the only width implemented)
    parameter integer NODE_BITS   = 8,    // node id width (spec param NODE_BITS), 1..8
    parameter integer VPID_BITS   = 8,    // vpid width (spec param VPID_BITS), 1..8
    parameter integer REGION_BITS = 8,    // region index width (spec param RMA_REGION_BITS), 1..12
    parameter integer MTU         = 48,   // data bytes per packet (spec param RMA_MTU), multiple of 8, 8..240
    parameter integer MPS         = 256,  // max payload size of a DMA write: power of 2, 64..4096
    parameter integer SLOTS_LOG2  = 2,    // 2^SLOTS_LOG2 request packet slots (>= 1)
    parameter integer CTX_W       = 16,   // DMA read context width (velo_dma_rd CTX_W), >= REGION_BITS + 1
    parameter integer GQ_LOG2     = NODE_BITS // GET queue: 2^GQ_LOG2 requests (>= NODE_BITS: never full)
) (
    input  wire                   clk,
    input  wire                   rst,        // synchronous, active high
    input  wire                   enable,     // RMA CONTROL.ENABLE: else requests fail with DISABLED
    input  wire [7:0]             node_id,    // CTRL.NODE_ID, stamped into responses
    input  wire [15:0]            req_id,     // our PCIe requester id
    // request packets in (request class): 64-bit words, header first
    input  wire                   in_valid,
    output wire                   in_ready,
    input  wire [63:0]            in_data,
    input  wire                   in_last,
    input  wire                   in_bad,     // with in_last: the packet failed a check upstream
    // response packets out (response class)
    output wire                   out_valid,
    input  wire                   out_ready,
    output wire [63:0]            out_data,
    output wire                   out_last,
    output wire [2:0]             out_lnb,    // last word: valid bytes minus one
    // route table read port: data the cycle after rt_re
    output wire                   rt_re,
    output wire [NODE_BITS-1:0]   rt_node,
    input  wire [14:0]            rt_data,    // {VALID, ROUTE}
    // ATU lookup (velo_atu lk_*/rs_*/rel_*); lk_tag 0: put path, 1: get engine
    output wire                   lk_valid,
    input  wire                   lk_ready,
    output wire [63:0]            lk_nla,
    output wire [23:0]            lk_len,
    output wire [VPID_BITS-1:0]   lk_vpid,    // the initiator's vpid (SRC_VPID of the request)
    output wire [NODE_BITS-1:0]   lk_node,    // the initiator's node (SRC_NODE)
    output wire [23:0]            lk_key_hi,  // key bits 31:8 the request names (RMA_PKT_LEN KEY_HI)
    output wire [1:0]             lk_kind,
    output wire                   lk_tag,
    input  wire                   rs_valid,
    output wire                   rs_ready,
    input  wire [3:0]             rs_err,
    input  wire [63:0]            rs_addr,
    input  wire [21:0]            rs_room,
    input  wire [REGION_BITS-1:0] rs_region,
    input  wire [VPID_BITS-1:0]   rs_owner,
    input  wire                   rs_tag,
    output wire                   rel_valid,
    output wire [REGION_BITS-1:0] rel_region,
    // DMA read engine (velo_dma_rd rq_*/rd_*, TLP_W 64)
    `VELO_DMARD_CLIENT_PORTS(CTX_W),
    input  wire                   rd_first,   // (not used)
    // TLP stream out: DMA writes of put data
    output wire                   tx_valid,
    input  wire                   tx_ready,
    output wire                   tx_sop,
    output wire                   tx_eop,
    output reg  [127:0]           tx_hdr,
    output wire [TLP_W-1:0]       tx_data,
    // TARGET notification entries (velo_rma_notify n_*), and its report on the entry handed over
    output wire                   n_valid,
    input  wire                   n_ready,
    output wire [VPID_BITS-1:0]   n_vpid,
    output wire [255:0]           n_entry,
    input  wire                   n_done,     // the entry was written (its last beat accepted)
    input  wire                   n_drop,     // the entry was dropped (queue disabled)
    // status and events (one-cycle pulses / per-cycle counts)
    output wire                   busy,
    output reg                    ev_put_pkt, // a PUT packet was taken (written, skipped or failed)
    output reg                    ev_get,     // a GET request was taken
    output reg                    ev_bad,     // a packet was dropped: marked bad or malformed
    output reg  [9:0]             ev_wr_bytes,// bytes of a DMA write issued this cycle
    output reg  [7:0]             ev_rd_bytes,// data bytes of a GET_RSP packet built this cycle
    output reg                    ev_err,     // an error PUT_RSP was generated (reason ev_err_code)
    output reg  [3:0]             ev_err_code,
    output reg                    ev_gerr,    // an error GET_RSP was generated (reason ev_gerr_code); both
    output reg  [3:0]             ev_gerr_code, // kinds can happen in one cycle, so they are separate
    output reg  [1:0]             ev_no_route,// responses dropped this cycle (0..2): no valid route
    output reg                    ev_put_rsp, // a PUT_RSP was generated
    // at rest (not busy, source table initialised, no route read or release pending, no event
    // pending): with in_valid and rd_valid low no register changes but ev_err_code, ev_gerr_code
    // and the output word register (ol, oram, olnb, oword), read only with ev_err, ev_gerr and ov
    // and rewritten at the edge that raises them (velo_rma gates its clock in simulation)
    output wire                   idle
);
    `VELO_CHECK(g_check_tlp_w, TLP_W == 64, "velo_rma_tgt: TLP_W must be 64")
    `VELO_CHECK_NODE_BITS
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK(g_check_region_bits, REGION_BITS >= 1 && REGION_BITS <= 12, "velo_rma_tgt: REGION_BITS must be 1..12")
    `VELO_CHECK(g_check_mtu, MTU >= 8 && MTU <= 240 && MTU % 8 == 0, "velo_rma_tgt: MTU must be 8..240, a multiple of 8")
    `VELO_CHECK(g_check_mps, MPS >= 64 && MPS <= 4096 && (MPS & (MPS - 1)) == 0, "velo_rma_tgt: MPS must be a power of 2, 64..4096")
    `VELO_CHECK(g_check_slots_log2, SLOTS_LOG2 >= 1, "velo_rma_tgt: SLOTS_LOG2 must be at least 1")
    `VELO_CHECK(g_check_ctx_w, CTX_W >= REGION_BITS + 1, "velo_rma_tgt: CTX_W must be at least REGION_BITS + 1")
    `VELO_CHECK(g_check_gq_log2, GQ_LOG2 >= NODE_BITS, "velo_rma_tgt: GQ_LOG2 must be at least NODE_BITS")

    // ================================================================ sizes
    localparam integer NS   = 1 << SLOTS_LOG2;
    localparam integer SB   = (SLOTS_LOG2 > 0) ? SLOTS_LOG2 : 1;
    localparam integer PW   = 3 + MTU / 8;           // most words of a request packet
    localparam integer SWB  = $clog2(PW + 2);        // word index bits within a slot
    localparam integer BAW  = SB + SWB - 1;          // bank address bits
    localparam integer GWB  = $clog2(MTU / 8 + 2);   // word index bits of a GET_RSP buffer
    localparam [8:0]   MTU9 = MTU[8:0];
    localparam [12:0]  MPS13 = MPS[12:0];
    localparam [GWB+1:0] TWO = 2;

    // slot states: free, being filled, complete (for T), handed to W (being written)
    localparam [1:0] SL_FREE = 2'd0, SL_FILL = 2'd1, SL_FULL = 2'd2, SL_W = 2'd3;
    localparam [3:0] E_NONE = `VELO_RMA_ERR_NONE;

    // ================================================================ ingress
    reg [1:0]   sl_st  [0:NS-1];
    reg [NS-1:0] sl_bad;
    reg [63:0]  sl_h   [0:NS-1];   // header word
    reg [63:0]  sl_w1  [0:NS-1];   // NLA word
    reg [63:0]  sl_w2  [0:NS-1];   // LEN word (FIRST/NOTIFY/GET)
    reg [63:0]  sl_w3  [0:NS-1];   // cookie (NOTIFY) or initiator NLA (GET)
    reg [SB-1:0] in_slot;
    reg [5:0]   in_cnt;            // words of the current packet so far (saturates at 63)

    wire [SB-1:0] t_slot_w;
    wire        t_free;            // T frees its slot this cycle
    wire        w_free;            // W frees its slot this cycle
    wire        t_to_w;            // T hands its slot to W this cycle (W writes from it)
    wire [SB-1:0] w_slot_w;

    assign in_ready = (sl_st[in_slot] == SL_FREE) || (sl_st[in_slot] == SL_FILL);
    wire in_fire = in_valid && in_ready;
    wire [63:0] in_h = (in_cnt == 6'd0) ? in_data : sl_h[in_slot];
    wire [7:0]  in_lm1 = in_h[`VELO_RMA_PKT_HDR_LEN_M1];
    wire [8:0]  in_ar  = {1'b0, in_lm1} + 9'd8;
    wire [6:0]  in_exp = 7'd1 + {1'b0, in_ar[8:3]};
    wire        in_bad_now = in_bad || (in_cnt == 6'd63) || ({1'b0, in_cnt} + 7'd1 != in_exp);

    always @(posedge clk) begin : ingress
        integer i;
        if (rst) begin
            for (i = 0; i < NS; i = i + 1) sl_st[i] <= SL_FREE;
            sl_bad  <= {NS{1'b0}};
            in_slot <= {SB{1'b0}};
            in_cnt  <= 6'd0;
        end else begin
            if (in_fire) begin
                sl_st[in_slot] <= SL_FILL;
                if (in_last) begin
                    sl_st[in_slot]  <= SL_FULL;
                    sl_bad[in_slot] <= in_bad_now;
                    in_slot <= (NS == 1) ? {SB{1'b0}} : in_slot + 1'b1;
                    in_cnt  <= 6'd0;
                end else if (in_cnt != 6'd63) begin
                    in_cnt <= in_cnt + 6'd1;
                end
            end
            if (t_free) sl_st[t_slot_w] <= SL_FREE;
            if (t_to_w) sl_st[t_slot_w] <= SL_W;
            if (w_free) sl_st[w_slot_w] <= SL_FREE;
        end
    end
    always @(posedge clk) begin
        if (in_fire && in_cnt == 6'd0) sl_h[in_slot]  <= in_data;
        if (in_fire && in_cnt == 6'd1) sl_w1[in_slot] <= in_data;
        if (in_fire && in_cnt == 6'd2) sl_w2[in_slot] <= in_data;
        if (in_fire && in_cnt == 6'd3) sl_w3[in_slot] <= in_data;
    end

    // slot RAM: word w of slot s in bank w[0] at {s, w >> 1}
    wire in_wr = in_fire && ({1'b0, in_cnt} < (7'd1 << SWB));
    wire [SWB-1:0] in_w = in_cnt[SWB-1:0];
    wire [BAW-1:0] in_ba = {in_slot, in_w[SWB-1:1]};
    wire           b_re;
    wire [BAW-1:0] b_ra_e, b_ra_o;
    wire [63:0]    b_rd_e, b_rd_o;
    velo_sdp_ram #(.W(64), .ADDR_W(BAW)) u_bank_e (
        .clk(clk), .we(in_wr && !in_w[0]), .waddr(in_ba), .wdata(in_data), .re(b_re), .raddr(b_ra_e), .rdata(b_rd_e));
    velo_sdp_ram #(.W(64), .ADDR_W(BAW)) u_bank_o (
        .clk(clk), .we(in_wr && in_w[0]), .waddr(in_ba), .wdata(in_data), .re(b_re), .raddr(b_ra_o), .rdata(b_rd_o));

    // ================================================================ per-source put outcome
    reg [4:0] src_st [0:(1<<NODE_BITS)-1];   // {fail, reason}
    reg       src_init;
    reg [NODE_BITS-1:0] src_idx;
    // ... and the KEY_HI of the current put (written with its FIRST packet, cleared after reset;
    // read when T takes a packet, held for its lookups)
    wire        src_kh_we;
    wire [NODE_BITS-1:0] src_kh_wa;
    wire [23:0] src_kh_wd;
    wire        src_kh_re;
    wire [NODE_BITS-1:0] src_kh_ra;
    wire [23:0] src_kh;
    velo_sdp_ram #(.W(24), .ADDR_W(NODE_BITS)) u_src_kh (
        .clk(clk), .we(src_kh_we), .waddr(src_kh_wa), .wdata(src_kh_wd), .re(src_kh_re), .raddr(src_kh_ra),
        .rdata(src_kh));

    // ================================================================ release arbitration
    reg                   w_rel_q;     // W: a translation's last write was accepted (priority)
    reg [REGION_BITS-1:0] w_rel_r;
    wire                  t_rel_req;
    wire [REGION_BITS-1:0] t_rel_r;
    wire                  g_rel_req;
    wire [REGION_BITS-1:0] g_rel_r;
    wire t_rel_go = t_rel_req && !w_rel_q;
    wire                  rd_rel;      // the get data side: a translation's last read ended
    wire [REGION_BITS-1:0] rd_rel_r;
    wire g_rel_go = g_rel_req && !w_rel_q && !t_rel_req && !rd_rel;
    assign rel_valid  = w_rel_q || t_rel_req || rd_rel || g_rel_req;
    assign rel_region = w_rel_q ? w_rel_r : (t_rel_req ? t_rel_r : (rd_rel ? rd_rel_r : g_rel_r));

    // ================================================================ lookup arbitration
    wire        t_lk_req, g_lk_req;
    wire [63:0] t_lk_nla, g_lk_nla;
    wire [23:0] t_lk_len, g_lk_len;
    wire [23:0] t_lk_key_hi, g_lk_key_hi;
    wire [7:0]  t_lk_node8, g_lk_node8, t_lk_vpid8, g_lk_vpid8;
    reg         lk_last_g;         // the get engine had the last grant
    wire        lk_sel_g = g_lk_req && (!t_lk_req || !lk_last_g);
    assign lk_valid = t_lk_req || g_lk_req;
    assign lk_nla   = lk_sel_g ? g_lk_nla : t_lk_nla;
    assign lk_len   = lk_sel_g ? g_lk_len : t_lk_len;
    // the initiator and the key's bits 31:8: the ATU checks the scope and the whole key
    wire [7:0]  lk_node8 = lk_sel_g ? g_lk_node8 : t_lk_node8;
    wire [7:0]  lk_vpid8 = lk_sel_g ? g_lk_vpid8 : t_lk_vpid8;
    assign lk_vpid   = lk_vpid8[VPID_BITS-1:0];
    assign lk_node   = lk_node8[NODE_BITS-1:0];
    assign lk_key_hi = lk_sel_g ? g_lk_key_hi : t_lk_key_hi;
    assign lk_kind  = lk_sel_g ? `VELO_RMA_ACC_REMOTE_READ : `VELO_RMA_ACC_REMOTE_WRITE;
    assign lk_tag   = lk_sel_g;
    wire t_lk_go = lk_ready && t_lk_req && !lk_sel_g;
    wire g_lk_go = lk_ready && lk_sel_g;
    always @(posedge clk) begin
        if (rst) lk_last_g <= 1'b0;
        else if (lk_valid && lk_ready) lk_last_g <= lk_sel_g;
    end
    wire t_rs_wait, g_rs_wait;
    assign rs_ready = rs_tag ? g_rs_wait : t_rs_wait;
    wire t_rs = rs_valid && !rs_tag && t_rs_wait;
    wire g_rs = rs_valid && rs_tag && g_rs_wait;

    // ================================================================ T: translate stage
    localparam [2:0] T_IDLE = 3'd0, T_LK1 = 3'd1, T_RS1 = 3'd2, T_LK2 = 3'd3, T_RS2 = 3'd4, T_REL = 3'd5,
                     T_HAND = 3'd6, T_GET = 3'd7;
    reg [2:0]    t_st;
    reg [SB-1:0] t_slot;
    assign t_slot_w = t_slot;
    wire [63:0] t_hdr = sl_h[t_slot];
    wire [63:0] t_nla = sl_w1[t_slot];
    wire [63:0] t_len_word = sl_w2[t_slot];
    wire [63:0] t_word3 = sl_w3[t_slot];
    wire [3:0]  t_type   = t_hdr[`VELO_RMA_PKT_HDR_TYPE];
    wire        t_first  = t_hdr[`VELO_RMA_PKT_HDR_FIRST_LSB];
    wire        t_lastp  = t_hdr[`VELO_RMA_PKT_HDR_LAST_LSB];
    wire        t_notify = t_hdr[`VELO_RMA_PKT_HDR_NOTIFY_LSB];
    wire [7:0]  t_src8   = t_hdr[`VELO_RMA_PKT_HDR_SRC_NODE];
    wire [NODE_BITS-1:0] t_node = t_src8[NODE_BITS-1:0];
    wire [7:0]  t_vpid8  = t_hdr[`VELO_RMA_PKT_HDR_SRC_VPID];
    wire [8:0]  t_area   = {1'b0, t_hdr[`VELO_RMA_PKT_HDR_LEN_M1]} + 9'd1;
    wire [8:0]  t_hwb    = 9'd8 + ((t_first || t_notify) ? 9'd8 : 9'd0) + (t_notify ? 9'd8 : 9'd0);
    wire [1:0]  t_pad    = t_nla[1:0];
    wire        t_nodata = (t_area == t_hwb);
    wire [8:0]  t_dlen   = t_nodata ? 9'd0 : t_area - t_hwb - {7'd0, t_pad};
    wire [23:0] t_plen24 = t_len_word[`VELO_RMA_PKT_LEN_LEN];
    wire        t_is_put = (t_type == `VELO_PKT_TYPE_RMA_PUT);
    wire        t_is_get = (t_type == `VELO_PKT_TYPE_RMA_GET);
    wire        t_node_oor = (NODE_BITS < 8) ? ((t_src8 >> NODE_BITS) != 8'd0) : 1'b0;
    wire        t_vpid_oor = (VPID_BITS < 8) ? ((t_vpid8 >> VPID_BITS) != 8'd0) : 1'b0;
    wire        t_put_bad = (t_area < t_hwb) || (!t_nodata && (t_area < t_hwb + {7'd0, t_pad} + 9'd1)) ||
                            (t_notify && (!t_lastp || !t_nodata)) ||
                            (t_first && ({15'd0, t_dlen} > t_plen24)) || (t_dlen > MTU9);
    wire        t_get_bad = (t_area != 9'd24);
    wire        t_mal = t_node_oor || t_vpid_oor || t_hdr[`VELO_RMA_PKT_HDR_ZERO] != 2'd0 ||
                        !(t_is_put || t_is_get) || (t_is_put && t_put_bad) || (t_is_get && t_get_bad);
    wire        t_full = (sl_st[t_slot] == SL_FULL);
    wire        t_dec  = (t_st == T_IDLE) && t_full && !src_init;
    wire        t_drop = t_dec && (sl_bad[t_slot] || t_mal);

    reg         t_rt_pend;
    reg [14:0]  t_route;
    wire [14:0] t_route_now = t_rt_pend ? rt_data : t_route;
    assign rt_re   = t_dec && !t_drop;
    assign rt_node = t_node;

    wire [4:0]  t_src_cur = src_st[t_node];
    reg         t_skip;       // earlier failure of this put: nothing looked up
    reg [3:0]   t_err;        // this packet's failure
    reg [3:0]   t_oerr;       // outcome reason before this packet (valid when t_skip)
    reg [63:0]  t_a1, t_a2;
    reg [8:0]   t_l1, t_l2;
    reg [REGION_BITS-1:0] t_r1, t_r2;
    reg [1:0]   t_np;         // pieces
    reg [VPID_BITS-1:0] t_owner;
    reg [8:0]   t_dl;         // data bytes of the packet
    wire        w_take;       // W takes the packet from T this cycle
    wire        g_start;      // the get engine takes the GET this cycle
    wire        g_idle;

    assign t_lk_req = (t_st == T_LK1) || (t_st == T_LK2);
    assign t_lk_nla = (t_st == T_LK1) ? t_nla : {t_nla[63:40], t_nla[39:0] + {31'd0, t_l1}};
    assign t_lk_len = (t_st == T_LK1) ? (t_first ? t_plen24 : {15'd0, t_dlen}) : {15'd0, t_dl - t_l1};
    assign t_lk_key_hi = (t_first || t_notify) ? t_len_word[`VELO_RMA_PKT_LEN_KEY_HI] : src_kh;
    assign t_lk_node8  = t_src8;
    assign t_lk_vpid8  = t_vpid8;
    // the put's KEY_HI per source: written with its FIRST packet (when W takes it), read for every packet
    assign src_kh_we = src_init || (w_take && t_first);
    assign src_kh_wa = src_init ? src_idx : t_node;
    assign src_kh_wd = src_init ? 24'd0 : t_len_word[`VELO_RMA_PKT_LEN_KEY_HI];
    assign src_kh_re = t_dec;
    assign src_kh_ra = t_node;
    assign t_rs_wait = (t_st == T_RS1) || (t_st == T_RS2);
    assign t_rel_req = (t_st == T_REL);
    assign t_rel_r   = t_r1;
    wire        gq_push;      // T moves the GET into the GET queue this cycle
    wire        g_direct;     // the idle get engine takes the GET straight from T (queue empty)
    assign t_free    = t_drop || gq_push || g_direct || (w_take && t_np == 2'd0);
    assign t_to_w    = w_take && t_np != 2'd0;

    // outcome after this packet
    wire        t_fail_new = (t_err != E_NONE) || t_skip;
    wire [3:0]  t_reason   = (t_err != E_NONE) ? t_err : t_oerr;
    wire        rs_fits    = ({13'd0, t_dl} <= rs_room);

    always @(posedge clk) begin
        if (rst) begin
            t_st      <= T_IDLE;
            t_slot    <= {SB{1'b0}};
            t_rt_pend <= 1'b0;
            src_init  <= 1'b1;
            src_idx   <= {NODE_BITS{1'b0}};
        end else begin
            t_rt_pend <= rt_re;
            if (src_init) begin
                src_idx <= src_idx + 1'b1;
                if (src_idx == {NODE_BITS{1'b1}}) src_init <= 1'b0;
            end
            case (t_st)
                T_IDLE: if (t_dec) begin
                    if (t_drop) t_slot <= (NS == 1) ? {SB{1'b0}} : t_slot + 1'b1;
                    else if (t_is_get) t_st <= T_GET;
                    else if (!enable || (!t_first && t_src_cur[4])) t_st <= T_HAND;
                    else t_st <= T_LK1;
                end
                T_LK1: if (t_lk_go) t_st <= T_RS1;
                T_RS1: if (t_rs) begin
                    if (rs_err != E_NONE) t_st <= T_HAND;
                    else if (t_dl == 9'd0) t_st <= T_REL;
                    else if (rs_fits) t_st <= T_HAND;
                    else t_st <= T_LK2;
                end
                T_LK2: if (t_lk_go) t_st <= T_RS2;
                T_RS2: if (t_rs) t_st <= (rs_err != E_NONE) ? T_REL : T_HAND;
                T_REL: if (t_rel_go) t_st <= T_HAND;
                T_HAND: if (w_take) begin
                    t_st   <= T_IDLE;
                    t_slot <= (NS == 1) ? {SB{1'b0}} : t_slot + 1'b1;
                end
                default: if (gq_push || g_direct) begin   // T_GET
                    t_st   <= T_IDLE;
                    t_slot <= (NS == 1) ? {SB{1'b0}} : t_slot + 1'b1;
                end
            endcase
        end
    end

    always @(posedge clk) begin
        if (t_rt_pend) t_route <= rt_data;
        if (t_dec) begin
            t_skip  <= enable && !t_first && t_src_cur[4];
            t_oerr  <= t_src_cur[3:0];
            t_err   <= enable ? E_NONE : `VELO_RMA_ERR_DISABLED;
            t_np    <= 2'd0;
            t_dl    <= t_dlen;
            t_owner <= {VPID_BITS{1'b0}};
        end
        if (t_st == T_RS1 && t_rs) begin
            t_err   <= rs_err;
            t_a1    <= rs_addr;
            t_r1    <= rs_region;
            t_owner <= rs_owner;
            t_l1    <= rs_fits ? t_dl : rs_room[8:0];
            if (rs_err == E_NONE && t_dl != 9'd0) t_np <= rs_fits ? 2'd1 : 2'd2;
        end
        if (t_st == T_RS2 && t_rs) begin
            t_err <= rs_err;
            t_a2  <= rs_addr;
            t_r2  <= rs_region;
            t_l2  <= t_dl - t_l1;
            if (rs_err != E_NONE) t_np <= 2'd0;
        end
        // outcome of the put so far (written once per packet, when W takes it); cleared after reset
        if (src_init) src_st[src_idx] <= 5'd0;
        else if (w_take) src_st[t_node] <= {t_fail_new, t_fail_new ? t_reason : E_NONE};
    end

    // ================================================================ W: write stage
    localparam [2:0] W_IDLE = 3'd0, W_TLP = 3'd1, W_FIN = 3'd2, W_NTF = 3'd3, W_NWT = 3'd4, W_RSP = 3'd5;
    reg [2:0]    w_st;
    reg [SB-1:0] w_slot;
    assign w_slot_w = w_slot;
    reg [1:0]    w_np;
    reg [63:0]   w_a2;
    reg [8:0]    w_l1, w_l2;
    reg [REGION_BITS-1:0] w_r2;
    reg          w_last, w_ntf, w_fail;
    reg [3:0]    w_reason;
    reg [VPID_BITS-1:0] w_owner;
    reg [63:0]   w_hdr, w_nla, w_len, w_cookie;
    reg [14:0]   w_route;
    reg [8:0]    w_p0;         // packet byte offset of data byte 0
    // current piece
    reg [63:0]   pc_addr;
    reg [8:0]    pc_rem;
    reg [8:0]    pc_pos;
    reg [REGION_BITS-1:0] pc_region;
    reg          pc_second;
    reg [5:0]    tlp_beat;

    wire         put_rsp_free;
    assign w_take = (t_st == T_HAND) && (w_st == W_IDLE);

    // TLP geometry of the current piece position
    wire [12:0]    tlp_mps_room   = MPS13 - {1'b0, pc_addr[11:0] & (MPS13[11:0] - 12'd1)};
    wire [8:0]     tlp_len        = ({4'd0, pc_rem} <= tlp_mps_room) ? pc_rem : tlp_mps_room[8:0];
    wire [9:0]     tlp_span       = {8'd0, pc_addr[1:0]} + {1'b0, tlp_len};  // bytes from the DW start
    wire [9:0]     tlp_ndw10      = (tlp_span + 10'd3) >> 2;
    wire [7:0]     tlp_ndw        = tlp_ndw10[7:0];
    wire [7:0]     tlp_nbeats8    = (tlp_ndw + 8'd1) >> 1;
    wire [5:0]     tlp_nbeats     = tlp_nbeats8[5:0];
    wire [8:0]     tlp_pkt_pos    = pc_pos - {7'd0, pc_addr[1:0]};  // packet byte of payload byte 0
    wire [8:0]     slot_wi9       = {3'd0, tlp_pkt_pos[8:3]} + {3'd0, tlp_beat};
    wire [SWB-1:0] slot_wi        = slot_wi9[SWB-1:0];
    wire [SWB-1:0] slot_wi_next   = slot_wi + 1'b1;
    wire           tlp_last_beat  = (tlp_beat == tlp_nbeats - 6'd1);
    wire           piece_last_tlp = (tlp_len == pc_rem);  // last TLP of the piece
    wire           pkt_last_tlp   = piece_last_tlp && (!pc_second ? (w_np == 2'd1) : 1'b1);

    // TLP output stage, txs_* (the bank RAMs' output registers hold its data)
    reg         txs_valid, txs_sop, txs_eop, txs_rel, txs_swap;
    reg [2:0]   txs_shift;
    reg [REGION_BITS-1:0] txs_rel_region;
    wire         advance = !txs_valid || tx_ready;
    wire         issue   = (w_st == W_TLP) && advance;
    assign b_re   = issue;
    assign b_ra_e = {w_slot, slot_wi[0] ? slot_wi_next[SWB-1:1] : slot_wi[SWB-1:1]};
    assign b_ra_o = {w_slot, slot_wi[SWB-1:1]};
    assign w_free = issue && tlp_last_beat && pkt_last_tlp;   // (a packet without writes is freed by T)

    // header of the TLP being started
    wire [3:0]   tlp_fbe0     = 4'hF << pc_addr[1:0];
    wire [1:0]   tlp_end_byte = tlp_span[1:0];                            // (a + len) mod 4
    wire [3:0]   tlp_lbe0     = (tlp_end_byte == 2'd0) ? 4'hF : (4'hF >> (3'd4 - {1'b0, tlp_end_byte}));
    wire         tlp_one_dw   = (tlp_ndw == 8'd1);
    wire [3:0]   tlp_fbe      = tlp_one_dw ? (tlp_fbe0 & tlp_lbe0) : tlp_fbe0;
    wire [3:0]   tlp_lbe      = tlp_one_dw ? 4'h0 : tlp_lbe0;
    wire         tlp_addr64   = (pc_addr[63:32] != 32'd0);

    always @(posedge clk) begin
        if (rst) begin
            w_st      <= W_IDLE;
            w_slot    <= {SB{1'b0}};
            txs_valid <= 1'b0;
            txs_sop   <= 1'b0;
            txs_eop   <= 1'b0;
            txs_rel   <= 1'b0;
            w_rel_q   <= 1'b0;
            tlp_beat  <= 6'd0;
        end else begin
            w_rel_q <= txs_valid && tx_ready && txs_eop && txs_rel;
            if (advance) begin
                txs_valid <= issue;
                txs_sop   <= (tlp_beat == 6'd0);
                txs_eop   <= tlp_last_beat;
                txs_rel   <= tlp_last_beat && piece_last_tlp;
            end
            case (w_st)
                W_IDLE: if (w_take) begin
                    w_slot <= t_slot;
                    w_st   <= (t_np != 2'd0) ? W_TLP : (t_lastp ? W_FIN : W_IDLE);
                end
                W_TLP: if (issue) begin
                    if (!tlp_last_beat) tlp_beat <= tlp_beat + 6'd1;
                    else begin
                        tlp_beat <= 6'd0;
                        if (pkt_last_tlp) w_st <= w_last ? W_FIN : W_IDLE;
                    end
                end
                W_FIN: if (!txs_valid) w_st <= (w_ntf && !w_fail) ? W_NTF : W_RSP;
                W_NTF: if (n_ready) w_st <= W_NWT;
                W_NWT: if (n_done || n_drop) w_st <= W_RSP;
                default: if (put_rsp_free) w_st <= W_IDLE;   // W_RSP
            endcase
        end
    end

    always @(posedge clk) begin
        if (w_take) begin
            w_np      <= t_np;
            w_a2      <= t_a2;
            w_l1      <= t_l1;
            w_l2      <= t_l2;
            w_r2      <= t_r2;
            w_last    <= t_lastp;
            w_ntf     <= t_notify;
            w_fail    <= t_fail_new;
            w_reason  <= t_fail_new ? t_reason : E_NONE;
            w_owner   <= t_owner;
            w_hdr     <= t_hdr;
            w_nla     <= t_nla;
            w_len     <= t_len_word;
            w_cookie  <= t_word3;
            w_route   <= t_route_now;
            w_p0      <= 9'd8 + t_hwb + {7'd0, t_pad};
            pc_addr   <= t_a1;
            pc_rem    <= t_l1;
            pc_pos    <= 9'd8 + t_hwb + {7'd0, t_pad};
            pc_region <= t_r1;
            pc_second <= 1'b0;
        end else if (issue && tlp_last_beat) begin
            if (piece_last_tlp && !pc_second) begin
                pc_addr   <= w_a2;
                pc_rem    <= w_l2;
                pc_pos    <= w_p0 + w_l1;
                pc_region <= w_r2;
                pc_second <= 1'b1;
            end else begin
                pc_addr <= pc_addr + {55'd0, tlp_len};
                pc_rem  <= pc_rem - tlp_len;
                pc_pos  <= pc_pos + tlp_len;
            end
        end
        if (w_st == W_NWT && n_drop) begin
            w_fail   <= 1'b1;
            w_reason <= `VELO_RMA_ERR_NQ_DISABLED;
        end
        if (advance && issue) begin
            txs_shift      <= tlp_pkt_pos[2:0];
            txs_swap       <= slot_wi[0];
            txs_rel_region <= pc_region;
            if (tlp_beat == 6'd0) begin
                tx_hdr <= 128'd0;
                tx_hdr[`VELO_TLP_HDR_FMT_TYPE] <= tlp_addr64 ? `VELO_TLP_FMT_TYPE_MWR64 : `VELO_TLP_FMT_TYPE_MWR32;
                tx_hdr[`VELO_TLP_HDR_LENGTH]   <= {2'd0, tlp_ndw};
                tx_hdr[`VELO_TLP_HDR_FIRST_BE] <= tlp_fbe;
                tx_hdr[`VELO_TLP_HDR_LAST_BE]  <= tlp_lbe;
                tx_hdr[`VELO_TLP_HDR_REQ_ID]   <= req_id;
                if (tlp_addr64) begin
                    tx_hdr[`VELO_TLP_HDR_ADDR64_HI] <= pc_addr[63:32];
                    tx_hdr[`VELO_TLP_HDR_ADDR64_LO] <= pc_addr[31:2];
                end else begin
                    tx_hdr[`VELO_TLP_HDR_ADDR32] <= pc_addr[31:2];
                end
            end
        end
        if (txs_valid && tx_ready && txs_eop && txs_rel) w_rel_r <= txs_rel_region;
    end

    wire [127:0] txs_pair = txs_swap ? {b_rd_e, b_rd_o} : {b_rd_o, b_rd_e};
    wire [127:0] txs_rot  = txs_pair >> {txs_shift, 3'b000};
    assign tx_data  = txs_rot[63:0];
    assign tx_valid = txs_valid;
    assign tx_sop   = txs_sop;
    assign tx_eop   = txs_eop;

    // notification entry
    reg [63:0] nq_hdr;
    always @(*) begin
        nq_hdr = 64'd0;
        nq_hdr[`VELO_RMA_NQ_HDR_KIND]      = `VELO_RMA_NQ_KIND_TARGET;
        nq_hdr[`VELO_RMA_NQ_HDR_SLOT_CNT]  = 8'd1;
        nq_hdr[`VELO_RMA_NQ_HDR_PEER_NODE] = w_hdr[`VELO_RMA_PKT_HDR_SRC_NODE];
        nq_hdr[`VELO_RMA_NQ_HDR_PEER_VPID] = w_hdr[`VELO_RMA_PKT_HDR_SRC_VPID];
        nq_hdr[`VELO_RMA_NQ_HDR_OP]        = `VELO_RMA_OP_PUT;
    end
    assign n_valid = (w_st == W_NTF);
    assign n_vpid  = w_owner;
    assign n_entry = {w_nla, {40'd0, w_len[`VELO_RMA_PKT_LEN_LEN]}, w_cookie, nq_hdr};

    // PUT_RSP register
    reg        pr_valid;
    reg [63:0] pr_hdr, pr_nla;
    wire       pr_take;   // the output takes it
    wire       w_rsp_go = (w_st == W_RSP) && put_rsp_free;
    assign put_rsp_free = !pr_valid;
    reg [63:0] rsp_hdr;
    always @(*) begin
        rsp_hdr = 64'd0;
        rsp_hdr[`VELO_RMA_PKT_HDR_VC]       = 2'b10;
        rsp_hdr[`VELO_RMA_PKT_HDR_ROUTE]    = w_route[13:0];
        rsp_hdr[`VELO_RMA_PKT_HDR_TYPE]     = `VELO_PKT_TYPE_RMA_PUT_RSP;
        rsp_hdr[`VELO_RMA_PKT_HDR_ERR]      = w_reason;
        rsp_hdr[`VELO_RMA_PKT_HDR_SRC_NODE] = node_id;
        rsp_hdr[`VELO_RMA_PKT_HDR_SRC_VPID] = w_hdr[`VELO_RMA_PKT_HDR_SRC_VPID];
        rsp_hdr[`VELO_RMA_PKT_HDR_TAG]      = w_hdr[`VELO_RMA_PKT_HDR_TAG];
        rsp_hdr[`VELO_RMA_PKT_HDR_LEN_M1]   = 8'd7;
    end
    always @(posedge clk) begin
        if (rst) pr_valid <= 1'b0;
        else if (w_rsp_go && w_route[14]) pr_valid <= 1'b1;
        else if (pr_take) pr_valid <= 1'b0;
        if (w_rsp_go) begin
            pr_hdr <= rsp_hdr;
            pr_nla <= w_nla;
        end
    end

    // ================================================================ get engine (velo_rma_tgt_get)
    wire        g_buf_valid, g_bufs_busy, g_q_empty, g_start_no_route, g_final_err;
    wire [63:0] g_buf_hdr, g_buf_nla, g_buf_rd;
    wire [GWB:0] g_buf_nw;
    wire [2:0]  g_buf_lnb;
    wire [3:0]  g_err_code;
    wire [7:0]  g_pkt_bytes;
    wire        g_buf_take, g_buf_re;
    wire [GWB:0] g_buf_ra;
    velo_rma_tgt_get #(.REGION_BITS(REGION_BITS), .MTU(MTU), .CTX_W(CTX_W), .GQ_LOG2(GQ_LOG2)) u_get (
        .clk(clk), .rst(rst), .enable(enable), .node_id(node_id),
        .t_get(t_st == T_GET), .req_tnla(t_nla), .req_len(t_len_word[`VELO_RMA_PKT_LEN_LEN]), .req_inla(t_word3),
        .req_tag(t_hdr[`VELO_RMA_PKT_HDR_TAG]), .req_vpid(t_vpid8), .req_node(t_src8),
        .req_key_hi(t_len_word[`VELO_RMA_PKT_LEN_KEY_HI]), .req_route(t_route_now),
        .direct(g_direct), .push(gq_push), .start(g_start), .start_no_route(g_start_no_route), .idle(g_idle),
        .q_empty(g_q_empty),
        .lk_req(g_lk_req), .lk_nla(g_lk_nla), .lk_len(g_lk_len), .lk_go(g_lk_go), .rs_wait(g_rs_wait),
        .lk_key_hi(g_lk_key_hi), .lk_node(g_lk_node8), .lk_vpid(g_lk_vpid8),
        `VELO_ATU_RESULT_CONNECT(g_rs), .rs_region(rs_region),
        .rel_req(g_rel_req), .rel_region(g_rel_r), .rel_go(g_rel_go), .rel_other(w_rel_q || t_rel_req),
        .rd_rel(rd_rel), .rd_rel_region(rd_rel_r),
        `VELO_DMARD_REQ_CONNECT, `VELO_DMARD_DATA_CONNECT,
        .buf_valid(g_buf_valid), .buf_hdr(g_buf_hdr), .buf_nla(g_buf_nla), .buf_nw(g_buf_nw), .buf_lnb(g_buf_lnb),
        .buf_take(g_buf_take), .buf_re(g_buf_re), .buf_ra(g_buf_ra[GWB-1:0]), .buf_rd(g_buf_rd), .bufs_busy(g_bufs_busy),
        .final_err(g_final_err), .err_code(g_err_code), .pkt_bytes(g_pkt_bytes));

    // ================================================================ response output
    reg        rsp_busy;          // a packet is being sent
    reg        rsp_get;           // ... from a GET_RSP buffer (else the PUT_RSP register)
    reg [GWB+1:0] rsp_wi;          // next word index (0 header, 1 NLA, 2.. data)
    reg [GWB+1:0] rsp_nw;          // words of the packet
    reg        rsp_last_put;      // round robin: the last packet sent was a PUT_RSP
    reg        rsp_valid, rsp_last, rsp_from_ram;
    reg [2:0]  rsp_lnb;
    reg [63:0] rsp_word;
    wire           rsp_adv  = !rsp_valid || out_ready;
    wire           pick_g   = g_buf_valid && (!pr_valid || rsp_last_put);
    wire           pick     = !rsp_busy && (pr_valid || g_buf_valid);
    wire           rsp_go   = rsp_adv && (rsp_busy || pick);
    wire           cur_g    = rsp_busy ? rsp_get : pick_g;
    wire [GWB+1:0] cur_i    = rsp_busy ? rsp_wi : {(GWB+2){1'b0}};
    wire [GWB+1:0] cur_n    = rsp_busy ? rsp_nw : (pick_g ? {1'b0, g_buf_nw} + TWO : TWO);
    wire           cur_last = (cur_i == cur_n - 1'b1);
    assign pr_take    = rsp_go && !cur_g && cur_last;
    assign g_buf_take = rsp_go && cur_g && cur_last;
    assign g_buf_re   = rsp_go && cur_g && (cur_i >= 2);
    wire [GWB+1:0] cur_im2 = cur_i - TWO;
    assign g_buf_ra = cur_im2[GWB:0];
    always @(posedge clk) begin
        if (rst) begin
            rsp_busy     <= 1'b0;
            rsp_last_put <= 1'b0;
            rsp_valid    <= 1'b0;
        end else begin
            if (rsp_go) begin
                rsp_busy <= !cur_last;
                rsp_wi   <= cur_i + 1'b1;
                if (!rsp_busy) begin
                    rsp_get      <= pick_g;
                    rsp_nw       <= cur_n;
                    rsp_last_put <= !pick_g;
                end
            end
            if (rsp_adv) begin
                rsp_valid    <= rsp_go;
                rsp_last     <= cur_last;
                rsp_from_ram <= cur_g && (cur_i >= 2);
                rsp_lnb      <= (cur_last && cur_g) ? g_buf_lnb : 3'd7;
                if (cur_i == 0) rsp_word <= cur_g ? g_buf_hdr : pr_hdr;
                else rsp_word <= cur_g ? g_buf_nla : pr_nla;
            end
        end
    end
    assign out_valid = rsp_valid;
    assign out_last  = rsp_last;
    assign out_lnb   = rsp_lnb;
    assign out_data  = rsp_from_ram ? g_buf_rd : rsp_word;

    // ================================================================ simulation-only invariants
    // (VELO_ASSERT, velo_check.vh): a violation stops the simulation
    // slots: T frees or hands over only a complete packet, W frees only a slot it was given
    `VELO_ASSERT(clk, rst, !((t_free || t_to_w) && sl_st[t_slot_w] != SL_FULL), "velo_rma_tgt: T releases a slot that is not full")
    `VELO_ASSERT(clk, rst, !(w_free && sl_st[w_slot_w] != SL_W), "velo_rma_tgt: W frees a slot it was not given")
    `VELO_ASSERT(clk, rst, !(t_free && t_to_w), "velo_rma_tgt: T frees a slot and hands it to W")

    // ================================================================ status, events
    reg slots_busy;
    always @(*) begin : sbusy
        integer i;
        slots_busy = 1'b0;
        for (i = 0; i < NS; i = i + 1) if (sl_st[i] != SL_FREE) slots_busy = 1'b1;
    end
    assign busy = slots_busy || (t_st != T_IDLE) || (w_st != W_IDLE) || txs_valid || pr_valid || !g_idle ||
                  !g_q_empty ||
                  g_bufs_busy || rsp_busy || rsp_valid;

    assign idle = !busy && !src_init && !w_rel_q && !t_rt_pend && !ev_put_pkt && !ev_get && !ev_bad &&
                  (ev_wr_bytes == 10'd0) && (ev_rd_bytes == 8'd0) && !ev_err && !ev_gerr && (ev_no_route == 2'd0) &&
                  !ev_put_rsp;

    always @(posedge clk) begin
        if (rst) begin
            ev_put_pkt  <= 1'b0;
            ev_get      <= 1'b0;
            ev_bad      <= 1'b0;
            ev_wr_bytes <= 10'd0;
            ev_rd_bytes <= 8'd0;
            ev_err      <= 1'b0;
            ev_err_code <= 4'd0;
            ev_gerr     <= 1'b0;
            ev_gerr_code <= 4'd0;
            ev_no_route <= 2'd0;
            ev_put_rsp  <= 1'b0;
        end else begin
            ev_put_pkt   <= w_take;
            ev_get       <= g_start;
            ev_bad       <= t_drop;
            ev_wr_bytes  <= (issue && tlp_beat == 6'd0) ? {1'b0, tlp_len} : 10'd0;
            ev_rd_bytes  <= g_pkt_bytes;
            ev_err       <= w_rsp_go && w_fail;
            ev_err_code  <= w_reason;
            ev_gerr      <= g_final_err;
            ev_gerr_code <= g_err_code;
            ev_no_route  <= {1'b0, w_rsp_go && !w_route[14]} + {1'b0, g_start_no_route};
            ev_put_rsp   <= w_rsp_go && w_route[14];
        end
    end

    wire unused_ok = &{1'b0, rd_first, rd_ctx, t_hdr, t_len_word, t_word3, in_h, w_hdr, w_len, slot_wi9, tlp_span, tlp_mps_room, rs_room,
                       tlp_nbeats8, tlp_ndw10, in_ar[2:0], slot_wi_next[0], txs_rot[127:64], g_buf_ra[GWB], cur_im2[GWB+1],
                       t_plen24, src_st[0], pc_rem, lk_node8, lk_vpid8};
endmodule
`default_nettype wire
