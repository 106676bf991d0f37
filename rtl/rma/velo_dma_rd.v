// DMA read engine of the RMA unit: reads host memory with tagged PCIe memory reads on the NIC's
// TLP stream and delivers the bytes in request order.
//
// Requests: a host physical address (any byte), a length of 1..4096 bytes and a caller context.
// A request may cross a 4 KiB boundary; it is split into memory read TLPs at MRRS and 4 KiB
// boundaries (an MRRS boundary is one, as MRRS divides 4096). Each read gets a tag slot and its
// room in the completion buffer before it is issued, so the completion input is never stalled
// (cpl_ready is always 1) and never more than TAGS reads are outstanding.
//
// Tag slots form a ring in issue order; the head slot is delivered when all its data is in (or it
// ended in error), so data comes out in request order whatever the order of completions between
// tags. Completions of one read arrive in address order (PCIe) and may be split at any RCB
// (64-byte) boundary; each is checked against the read's state: byte count = bytes still
// expected, lower address = address of the next byte, payload length consistent with both, and
// the number of beats matching the length. The wire tag is {generation, slot}: a slot's
// generation changes when its read times out, so a completion for a timed-out read never matches
// the slot's next read (when TAG_W leaves no generation bits, the quarantine below alone
// protects the slot).
//
// Completion buffer: a ring of TLP_W-bit beats laid out by host address (byte A of a read sits in
// lane A mod (TLP_W/8)), one 32-bit RAM bank per DW lane, so the DW rotation between a
// completion's payload (DW-aligned from lane 0) and its address is done by giving each bank its
// own write address: every payload beat is written in one cycle, no realignment state.
//
// Errors: a completion with a status other than SC (UR, CA, CRS), a poisoned or malformed
// completion, or no completion within TIMEOUT cycles ends the read in error. The error is
// delivered in order as a beat with rd_err=1, rd_last=1 and rd_be=0 that ends the request (any
// bytes delivered before it belong to the same request, which is incomplete); the request's
// remaining reads are discarded when they end. A timed-out slot stays in quarantine for another
// TIMEOUT cycles before it is issued again; completions that match no outstanding read (late
// ones after a timeout, wrong requester id, unknown tag, non-completions) are dropped and counted.
//
// Timing of the timeout: ages advance every TIMEOUT/4 cycles; a read times out after 5 ages,
// i.e. between TIMEOUT+1 and 1.25*TIMEOUT cycles after it was issued. The ages advance on a
// prescaler (velo_tick) of the engine's own (TICK_IN = 0) or on tick_in (TICK_IN = 1: velo_rma
// keeps the prescaler on its free-running clock while the engine may be clock-gated in
// simulation when idle, velo_sim_gate).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
module velo_dma_rd #(
    parameter integer TLP_W   = 64,     // TLP stream data width: 64 or 128
    parameter integer MRRS    = 512,    // max read request size in bytes: power of 2, 128..4096
    parameter integer TAGS    = 32,     // tag slots (outstanding reads): power of 2, 2..2^TAG_W
    parameter integer TAG_W   = 8,      // tag bits the host supports: 5, or 8 (extended tags)
    parameter integer CB_LOG2 = 13,     // completion buffer is 2^CB_LOG2 bytes: > log2(MRRS), <= 2^15 beats
    parameter integer CTX_W   = 16,     // width of the caller's request context, >= 1
    parameter integer TIMEOUT = 65536,  // completion timeout in cycles, >= 4
    parameter integer TICK_IN = 0       // 1: the ages advance on tick_in (a velo_tick of TIMEOUT/4 outside)
) (
    input  wire                 clk,
    input  wire                 rst,        // synchronous, active high
    input  wire [15:0]          req_id,     // our PCIe requester id (bus/device/function)
    input  wire                 tick_in,    // TICK_IN = 1: one cycle in TIMEOUT/4 (else unused)
    // read requests
    input  wire                 rq_valid,
    output wire                 rq_ready,
    input  wire [63:0]          rq_addr,    // host physical byte address
    input  wire [11:0]          rq_len_m1,  // length - 1 (1..4096 bytes)
    input  wire [CTX_W-1:0]     rq_ctx,     // returned with every beat of the request
    // read data, in request order: byte A of a request in lane A mod (TLP_W/8) of its beat
    output wire                 rd_valid,
    input  wire                 rd_ready,
    output wire [TLP_W-1:0]     rd_data,
    output wire [TLP_W/8-1:0]   rd_be,      // valid bytes of the beat (0 on an error beat)
    output wire                 rd_first,   // first beat of a request
    output wire                 rd_last,    // last beat of a request
    output wire                 rd_err,     // with rd_last: the request failed
    output wire [CTX_W-1:0]     rd_ctx,
    // TLP stream to the host: memory read requests (one beat each, no payload)
    output wire                 tx_valid,
    input  wire                 tx_ready,
    output wire                 tx_sop,
    output wire                 tx_eop,
    output wire [127:0]         tx_hdr,
    output wire [TLP_W-1:0]     tx_data,
    // TLP stream from the host: completions (anything else is dropped and counted)
    input  wire                 cpl_valid,
    output wire                 cpl_ready,  // always 1
    input  wire                 cpl_sop,
    input  wire                 cpl_eop,
    input  wire [127:0]         cpl_hdr,    // valid with cpl_sop
    input  wire [TLP_W-1:0]     cpl_data,
    // status and counters (32 bits, wrapping)
    output wire                 busy,           // a request is accepted and not fully delivered
    output wire                 idle,           // at rest: not busy, no quarantined slot, no completion half taken
    output reg  [31:0]          cnt_reads,      // memory read TLPs issued
    output reg  [31:0]          cnt_cpl_bytes,  // payload bytes of accepted completions
    output reg  [31:0]          cnt_errors,     // reads that ended in error (timeouts included)
    output reg  [31:0]          cnt_timeouts,   // reads that timed out
    output reg  [31:0]          cnt_unexpected  // completions dropped: no outstanding read matches
);
    localparam integer BEAT   = TLP_W / 8;              // bytes per beat
    localparam integer LB     = $clog2(BEAT);
    localparam integer D      = TLP_W / 32;             // DW lanes (RAM banks)
    localparam integer LD     = $clog2(D);
    localparam integer TB     = $clog2(TAGS);           // slot bits of a tag
    localparam integer GEN_W  = TAG_W - TB;             // generation bits of a tag (may be 0)
    localparam integer GW     = (GEN_W > 0) ? GEN_W : 1;
    localparam integer CB_AW  = CB_LOG2 - LB;           // completion buffer address (beats)
    localparam integer TICK   = (TIMEOUT / 4 > 0) ? TIMEOUT / 4 : 1;
    localparam [2:0]   AGE_LIMIT = 3'd5;

    `VELO_CHECK_TLP_W
    `VELO_CHECK(g_check_mrrs, MRRS >= 128 && MRRS <= 4096 && (MRRS & (MRRS - 1)) == 0, "velo_dma_rd: MRRS must be a power of 2, 128..4096")
    `VELO_CHECK(g_check_tag_w, TAG_W == 5 || TAG_W == 8, "velo_dma_rd: TAG_W must be 5 or 8")
    `VELO_CHECK(g_check_tags, TAGS >= 2 && TAGS <= (1 << TAG_W) && (TAGS & (TAGS - 1)) == 0, "velo_dma_rd: TAGS must be a power of 2, 2..2^TAG_W")
    `VELO_CHECK(g_check_cb_log2, CB_LOG2 > $clog2(MRRS) && CB_AW <= 15, "velo_dma_rd: CB_LOG2 must exceed log2(MRRS), at most 2^15 beats")
    `VELO_CHECK(g_check_ctx_w, CTX_W >= 1, "velo_dma_rd: CTX_W must be at least 1")
    `VELO_CHECK(g_check_timeout, TIMEOUT >= 4, "velo_dma_rd: TIMEOUT must be at least 4")
    `VELO_CHECK_FLAG(g_check_tick_in, TICK_IN, "velo_dma_rd: TICK_IN must be 0 or 1")

    // static per-slot information, written when the read is issued
    localparam integer I_ALO  = 0;                      // address bits 11:0
    localparam integer I_LEN  = 12;                     // length - 1
    localparam integer I_BASE = 24;                     // first completion buffer beat
    localparam integer I_FST  = 24 + CB_AW;             // first read of its request
    localparam integer I_LST  = 25 + CB_AW;             // last read of its request
    localparam integer I_CTX  = 26 + CB_AW;
    localparam integer INFO_W = 26 + CB_AW + CTX_W;

    localparam [12:0]  MRRS13  = MRRS[12:0];
    localparam [TB:0]  TAGS_N  = TAGS[TB:0];

    // ================================================================ slot state
    reg [TAGS-1:0]      t_busy;    // issued, completions outstanding
    reg [TAGS-1:0]      t_done;    // ended (data complete or error), waiting for delivery
    reg [TAGS-1:0]      t_err;     // ended in error
    reg [TAGS-1:0]      t_tmo;     // ended by a timeout
    reg [TAGS-1:0]      t_stale;   // timed out: quarantined until its age limit again
    reg [TAGS-1:0]      t_fresh;   // no completion yet (t_rcv not valid)
    reg [3*TAGS-1:0]    t_age;
    reg [GW*TAGS-1:0]   t_gen;
    reg [INFO_W-1:0]    t_info [0:TAGS-1];  // distributed RAM, written at issue
    reg [12:0]          t_rcv  [0:TAGS-1];  // bytes received, written at completion end

    reg [TB:0]          tq_wr;     // next slot to issue (ring position)
    reg [TB:0]          tq_rd;     // head: next slot to deliver
    reg [CB_AW-1:0]     cb_wr;     // next free completion buffer beat
    reg [CB_AW:0]       cb_free;   // free completion buffer beats

    wire                tick;      // the ages advance
    generate
        if (TICK_IN != 0) begin : g_tick_in
            assign tick = tick_in;
        end else begin : g_tick
            velo_tick #(.N(TICK)) u_tick (.clk(clk), .rst(rst), .tick(tick));
            wire unused_tick = &{1'b0, tick_in};
        end
    endgenerate

    // ================================================================ request splitting, issue
    reg              s_v;      // a request is being split
    reg [63:0]       s_addr;   // address of its next read
    reg [12:0]       s_rem;    // bytes left, 1..4096
    reg [CTX_W-1:0]  s_ctx;
    reg              s_first;  // the next read is the request's first

    wire [12:0] s_off   = {1'b0, s_addr[11:0]} & (MRRS13 - 13'd1);
    wire [12:0] s_bnd   = MRRS13 - s_off;                     // bytes to the next MRRS boundary
    wire [12:0] s_sz    = (s_rem < s_bnd) ? s_rem : s_bnd;    // this read: 1..MRRS bytes
    wire        s_last  = (s_sz == s_rem);
    wire [12:0] s_lead  = {{(13-LB){1'b0}}, s_addr[LB-1:0]};
    wire [15:0] s_nbm1  = {3'd0, (s_lead + s_sz - 13'd1) >> LB};  // beats - 1 it occupies
    wire [CB_AW:0] s_nb = s_nbm1[CB_AW:0] + 1'b1;

    wire [TB:0]    tq_cnt  = tq_wr - tq_rd;
    wire [TB-1:0]  w_slot  = tq_wr[TB-1:0];
    wire           slot_ok = (tq_cnt != TAGS_N) && !t_stale[w_slot];

    reg            tx_v;
    reg [127:0]    tx_h;
    wire           tx_free = !tx_v || tx_ready;
    wire           iss     = s_v && slot_ok && (cb_free >= s_nb) && tx_free;

    assign rq_ready = !s_v || (iss && s_last);

    // memory read header of the read being issued
    wire [12:0] s_span  = {11'd0, s_addr[1:0]} + s_sz - 13'd1;  // last byte, from the first DW
    wire [12:0] s_ndw   = (s_span >> 2) + 13'd1;                // DWs: 1..1024
    wire [1:0]  s_eb    = s_span[1:0];                          // last byte in its DW
    wire [3:0]  s_fbe_a = 4'hF << s_addr[1:0];
    wire [3:0]  s_lbe_a = 4'hF >> (2'd3 - s_eb);
    wire        s_one   = (s_ndw == 13'd1);
    wire [15:0] s_tagw  = {{(16-TB-GW){1'b0}}, t_gen[w_slot*GW +: GW], w_slot};
    wire [7:0]  s_tag   = (GEN_W > 0) ? s_tagw[7:0] : {{(8-TB){1'b0}}, w_slot};
    wire        s_w64   = (s_addr[63:32] != 32'd0);
    reg [127:0] s_hdr;
    always @(*) begin
        s_hdr = 128'd0;
        s_hdr[`VELO_TLP_HDR_FMT_TYPE] = s_w64 ? `VELO_TLP_FMT_TYPE_MRD64 : `VELO_TLP_FMT_TYPE_MRD32;
        s_hdr[`VELO_TLP_HDR_LENGTH]   = s_ndw[9:0];             // 1024 is encoded as 0
        s_hdr[`VELO_TLP_HDR_FIRST_BE] = s_one ? (s_fbe_a & s_lbe_a) : s_fbe_a;
        s_hdr[`VELO_TLP_HDR_LAST_BE]  = s_one ? 4'h0 : s_lbe_a;
        s_hdr[`VELO_TLP_HDR_REQ_TAG]  = s_tag;
        s_hdr[`VELO_TLP_HDR_REQ_ID]   = req_id;
        if (s_w64) begin
            s_hdr[`VELO_TLP_HDR_ADDR64_HI] = s_addr[63:32];
            s_hdr[`VELO_TLP_HDR_ADDR64_LO] = s_addr[31:2];
        end else begin
            s_hdr[`VELO_TLP_HDR_ADDR32] = s_addr[31:2];
        end
    end

    assign tx_valid = tx_v;
    assign tx_sop   = 1'b1;
    assign tx_eop   = 1'b1;
    assign tx_hdr   = tx_h;
    assign tx_data  = {TLP_W{1'b0}};

    always @(posedge clk) begin
        if (iss) t_info[w_slot] <= {s_ctx, s_last, s_first, cb_wr, s_sz[11:0] - 12'd1, s_addr[11:0]};
    end

    // ================================================================ completions
    assign cpl_ready = 1'b1;
    reg            c_in;     // inside a completion TLP (after its first beat)
    wire           c_sop = cpl_valid && cpl_sop && !c_in;
    wire           c_beat = cpl_valid && (c_in || cpl_sop);
    wire           c_eop = c_beat && cpl_eop;

    // header of the completion starting in this beat
    wire [7:0]  h_ft    = cpl_hdr[`VELO_TLP_HDR_FMT_TYPE];
    wire        h_cpl   = (h_ft == `VELO_TLP_FMT_TYPE_CPL) || (h_ft == `VELO_TLP_FMT_TYPE_CPLD);
    wire        h_data  = (h_ft == `VELO_TLP_FMT_TYPE_CPLD);
    wire [2:0]  h_st    = cpl_hdr[`VELO_TLP_HDR_CPL_STATUS];
    wire        h_ep    = cpl_hdr[`VELO_TLP_HDR_EP];
    wire [9:0]  h_len   = cpl_hdr[`VELO_TLP_HDR_LENGTH];
    wire [10:0] h_dw    = (h_len == 10'd0) ? 11'd1024 : {1'b0, h_len};
    wire [11:0] h_bc    = cpl_hdr[`VELO_TLP_HDR_CPL_BYTE_COUNT];
    wire [12:0] h_bcv   = (h_bc == 12'd0) ? 13'd4096 : {1'b0, h_bc};
    wire [6:0]  h_la    = cpl_hdr[`VELO_TLP_HDR_CPL_LOWER_ADDR];
    wire [7:0]  h_tag   = cpl_hdr[`VELO_TLP_HDR_CPL_TAG];
    wire [15:0] h_rid   = cpl_hdr[`VELO_TLP_HDR_CPL_REQ_ID];
    wire [TB-1:0] h_slot = h_tag[TB-1:0];
    wire [15:0] h_tagw  = {8'd0, h_tag};
    wire        h_hi0   = (h_tagw >> TAG_W) == 16'd0;
    wire        h_gen   = (GEN_W == 0) || (h_tagw[TB +: GW] == t_gen[h_slot*GW +: GW]);
    wire [INFO_W-1:0] h_info = t_info[h_slot];
    wire [11:0] h_alo   = h_info[I_ALO +: 12];
    wire [11:0] h_lenm1 = h_info[I_LEN +: 12];
    wire [CB_AW-1:0] h_base = h_info[I_BASE +: CB_AW];
    wire [12:0] h_rcv   = t_fresh[h_slot] ? 13'd0 : t_rcv[h_slot];
    wire [12:0] h_rem   = {1'b0, h_lenm1} + 13'd1 - h_rcv;     // bytes still expected
    wire [12:0] h_pos   = {1'b0, h_alo} + h_rcv;                // page offset of the next byte
    wire [12:0] h_avail = {h_dw, 2'b00} - {11'd0, h_la[1:0]};   // payload bytes from lower address
    wire        h_final = (h_avail >= h_bcv);
    wire [12:0] h_bytes = h_final ? h_bcv : h_avail;
    wire        h_match = h_cpl && (h_rid == req_id) && h_hi0 && t_busy[h_slot] && h_gen;
    wire        h_good  = h_match && (h_st == `VELO_TLP_CPL_SC) && h_data && !h_ep && (h_bcv == h_rem) &&
                          (h_la == h_pos[6:0]) && (!h_final || (h_avail - h_bcv) <= 13'd3);
    // DW index of the first payload DW in the read's beat-aligned frame: its beat and lane
    wire [12:0] h_q0    = ({{(13-LB){1'b0}}, h_alo[LB-1:0]} + h_rcv) >> 2;
    wire [15:0] h_qb    = {3'd0, h_q0 >> LD};
    wire [LD-1:0] h_rot = h_q0[LD-1:0];
    wire [CB_AW-1:0] h_beat0 = h_base + h_qb[CB_AW-1:0];
    wire [10:0] h_beats = (h_dw + D[10:0] - 11'd1) >> LD;        // data beats of the TLP

    // held for the beats after the first
    reg            c_match, c_good, c_final;
    reg [TB-1:0]   c_slot;
    reg [LD-1:0]   c_rot;
    reg [CB_AW-1:0] c_beat0;
    reg [10:0]     c_dw, c_beats;
    reg [12:0]     c_bytes, c_rcv;
    reg [15:0]     c_k;      // beats taken so far (saturates)

    wire           u_match = c_sop ? h_match : c_match;
    wire           u_good  = c_sop ? h_good  : c_good;
    wire           u_final = c_sop ? h_final : c_final;
    wire [TB-1:0]  u_slot  = c_sop ? h_slot  : c_slot;
    wire [LD-1:0]  u_rot   = c_sop ? h_rot   : c_rot;
    wire [CB_AW-1:0] u_beat0 = c_sop ? h_beat0 : c_beat0;
    wire [10:0]    u_dw    = c_sop ? h_dw    : c_dw;
    wire [10:0]    u_beats = c_sop ? h_beats : c_beats;
    wire [12:0]    u_bytes = c_sop ? h_bytes : c_bytes;
    wire [12:0]    u_rcv   = c_sop ? h_rcv   : c_rcv;
    wire [15:0]    u_k     = c_sop ? 16'd0   : c_k;
    wire           u_ok    = u_good && (u_k == {5'd0, u_beats - 11'd1});  // with c_eop: a good completion

    // a slot a completion is working on cannot time out in the same cycle
    wire           hold_v  = (c_in && c_match) || (c_sop && h_match);

    // completion buffer writes: payload DW i of beat k goes to bank (i + rot) mod D, at beat
    // beat0 + k (+1 where the rotation wraps)
    wire [D-1:0]   bk_we;
    wire [D*CB_AW-1:0] bk_wa;
    wire [TLP_W-1:0] bk_wd;
    wire           bk_re;
    wire [CB_AW-1:0] bk_ra;
    wire [TLP_W-1:0] bk_rd;
    genvar b;
    generate
        for (b = 0; b < D; b = b + 1) begin : g_bank
            localparam [LD-1:0] BL = b;
            wire [LD-1:0] i_ln = BL - u_rot;                    // payload DW lane for this bank
            wire [LD:0]   wrap = {1'b0, i_ln} + {1'b0, u_rot};  // MSB: bank < rot, next beat
            wire [15+LD:0] j_dw = {u_k, {LD{1'b0}}} | {{16{1'b0}}, i_ln};
            assign bk_we[b] = c_beat && u_good && (j_dw < {{(5+LD){1'b0}}, u_dw});
            assign bk_wa[b*CB_AW +: CB_AW] = u_beat0 + u_k[CB_AW-1:0] + {{(CB_AW-1){1'b0}}, wrap[LD]};
            assign bk_wd[32*b +: 32] = cpl_data[32*i_ln +: 32];
            velo_sdp_ram #(.W(32), .ADDR_W(CB_AW)) u_ram (
                .clk(clk), .we(bk_we[b]), .waddr(bk_wa[b*CB_AW +: CB_AW]), .wdata(bk_wd[32*b +: 32]),
                .re(bk_re), .raddr(bk_ra), .rdata(bk_rd[32*b +: 32]));
        end
    endgenerate

    always @(posedge clk) begin
        if (c_eop && u_match && u_ok) t_rcv[u_slot] <= u_rcv + u_bytes;
    end

    // ================================================================ delivery
    wire [TB-1:0]  d_slot = tq_rd[TB-1:0];
    wire           d_have = (tq_wr != tq_rd) && t_done[d_slot];
    wire [INFO_W-1:0] d_info = t_info[d_slot];
    wire [11:0]    d_alo   = d_info[I_ALO +: 12];
    wire [11:0]    d_lenm1 = d_info[I_LEN +: 12];
    wire [CB_AW-1:0] d_base = d_info[I_BASE +: CB_AW];
    wire           d_fst   = d_info[I_FST];
    wire           d_lst   = d_info[I_LST];
    wire [CTX_W-1:0] d_ctx = d_info[I_CTX +: CTX_W];
    wire           d_err   = t_err[d_slot];
    wire [15:0]    d_nbm1  = {3'd0, ({{(13-LB){1'b0}}, d_alo[LB-1:0]} + {1'b0, d_lenm1}) >> LB};
    wire [CB_AW:0] d_nb    = d_nbm1[CB_AW:0] + 1'b1;
    wire [LB-1:0]  d_lo    = d_alo[LB-1:0];
    wire [LB-1:0]  d_hi    = d_alo[LB-1:0] + d_lenm1[LB-1:0];

    reg            d_drop;   // discarding the rest of a request that failed
    reg [15:0]     d_k;      // beat of the head read
    reg            o_v, o_first, o_last, o_err;
    reg [BEAT-1:0] o_be;
    reg [CTX_W-1:0] o_ctx;

    wire           o_load  = !o_v || rd_ready;
    wire           d_silent = d_have && d_drop;
    wire           d_emit  = d_have && !d_drop && o_load;
    wire           d_endb  = d_err || (d_k == d_nbm1);
    wire           ret     = d_silent || (d_emit && d_endb);
    assign bk_re = d_emit && !d_err;
    assign bk_ra = d_base + d_k[CB_AW-1:0];

    reg [BEAT-1:0] d_be;
    integer l;
    always @(*) begin
        for (l = 0; l < BEAT; l = l + 1)
            d_be[l] = ((d_k != 16'd0) || (l[LB-1:0] >= d_lo)) && ((d_k != d_nbm1) || (l[LB-1:0] <= d_hi));
    end

    assign rd_valid = o_v;
    assign rd_data  = o_err ? {TLP_W{1'b0}} : bk_rd;
    assign rd_be    = o_be;
    assign rd_first = o_first;
    assign rd_last  = o_last;
    assign rd_err   = o_err;
    assign rd_ctx   = o_ctx;
    assign busy     = s_v || tx_v || (tq_wr != tq_rd) || o_v;
    // with no valid input, nothing changes at rest (every slot not busy ages only while stale)
    assign idle     = !busy && (t_stale == {TAGS{1'b0}}) && !c_in;

    // ================================================================ sequential state
    integer i;
    always @(posedge clk) begin
        if (rst) begin
            t_busy  <= {TAGS{1'b0}};
            t_done  <= {TAGS{1'b0}};
            t_err   <= {TAGS{1'b0}};
            t_tmo   <= {TAGS{1'b0}};
            t_stale <= {TAGS{1'b0}};
            t_fresh <= {TAGS{1'b0}};
            t_age   <= {3*TAGS{1'b0}};
            t_gen   <= {GW*TAGS{1'b0}};
            tq_wr   <= {(TB+1){1'b0}};
            tq_rd   <= {(TB+1){1'b0}};
            cb_wr   <= {CB_AW{1'b0}};
            cb_free <= {1'b1, {CB_AW{1'b0}}};
            s_v     <= 1'b0;
            s_addr  <= 64'd0;
            s_rem   <= 13'd0;
            s_ctx   <= {CTX_W{1'b0}};
            s_first <= 1'b0;
            tx_v    <= 1'b0;
            tx_h    <= 128'd0;
            c_in    <= 1'b0;
            c_match <= 1'b0;
            c_good  <= 1'b0;
            c_final <= 1'b0;
            c_slot  <= {TB{1'b0}};
            c_rot   <= {LD{1'b0}};
            c_beat0 <= {CB_AW{1'b0}};
            c_dw    <= 11'd0;
            c_beats <= 11'd0;
            c_bytes <= 13'd0;
            c_rcv   <= 13'd0;
            c_k     <= 16'd0;
            d_drop  <= 1'b0;
            d_k     <= 16'd0;
            o_v     <= 1'b0;
            o_first <= 1'b0;
            o_last  <= 1'b0;
            o_err   <= 1'b0;
            o_be    <= {BEAT{1'b0}};
            o_ctx   <= {CTX_W{1'b0}};
            cnt_reads      <= 32'd0;
            cnt_cpl_bytes  <= 32'd0;
            cnt_errors     <= 32'd0;
            cnt_timeouts   <= 32'd0;
            cnt_unexpected <= 32'd0;
        end else begin
            // ---- ages, timeouts and quarantine, every slot in parallel
            for (i = 0; i < TAGS; i = i + 1) begin
                if (tick && (t_busy[i] || t_stale[i]) && t_age[3*i +: 3] != 3'd7)
                    t_age[3*i +: 3] <= t_age[3*i +: 3] + 3'd1;
                if (t_busy[i] && t_age[3*i +: 3] >= AGE_LIMIT && !(hold_v && u_slot == i[TB-1:0])) begin
                    t_busy[i]  <= 1'b0;
                    t_done[i]  <= 1'b1;
                    t_err[i]   <= 1'b1;
                    t_tmo[i]   <= 1'b1;
                    t_stale[i] <= 1'b1;
                    t_age[3*i +: 3] <= 3'd0;
                    t_gen[GW*i +: GW] <= t_gen[GW*i +: GW] + 1'b1;
                end else if (t_stale[i] && t_age[3*i +: 3] >= AGE_LIMIT) begin
                    t_stale[i] <= 1'b0;
                end
            end

            // ---- completions
            if (c_beat) begin
                c_in <= !cpl_eop;
                if (c_sop) begin
                    c_match <= h_match;
                    c_good  <= h_good;
                    c_final <= h_final;
                    c_slot  <= h_slot;
                    c_rot   <= h_rot;
                    c_beat0 <= h_beat0;
                    c_dw    <= h_dw;
                    c_beats <= h_beats;
                    c_bytes <= h_bytes;
                    c_rcv   <= h_rcv;
                    if (!h_match) cnt_unexpected <= cnt_unexpected + 32'd1;
                end
                c_k <= (u_k == 16'hFFFF) ? u_k : u_k + 16'd1;
            end
            if (c_eop && u_match) begin
                if (u_ok) begin
                    t_fresh[u_slot] <= 1'b0;
                    cnt_cpl_bytes   <= cnt_cpl_bytes + {19'd0, u_bytes};
                    if (u_final) begin
                        t_busy[u_slot] <= 1'b0;
                        t_done[u_slot] <= 1'b1;
                    end
                end else begin
                    // error status, poisoned or malformed: the read ends in error
                    t_busy[u_slot] <= 1'b0;
                    t_done[u_slot] <= 1'b1;
                    t_err[u_slot]  <= 1'b1;
                end
            end

            // ---- splitting and issue
            if (rq_valid && rq_ready) begin
                s_v     <= 1'b1;
                s_addr  <= rq_addr;
                s_rem   <= {1'b0, rq_len_m1} + 13'd1;
                s_ctx   <= rq_ctx;
                s_first <= 1'b1;
            end else if (iss) begin
                s_v     <= !s_last;
                s_addr  <= s_addr + {51'd0, s_sz};
                s_rem   <= s_rem - s_sz;
                s_first <= 1'b0;
            end
            if (iss) begin
                tx_v  <= 1'b1;
                tx_h  <= s_hdr;
                tq_wr <= tq_wr + 1'b1;
                cb_wr <= cb_wr + s_nb[CB_AW-1:0];
                t_busy[w_slot]  <= 1'b1;
                t_err[w_slot]   <= 1'b0;
                t_tmo[w_slot]   <= 1'b0;
                t_fresh[w_slot] <= 1'b1;
                t_age[3*w_slot +: 3] <= 3'd0;
            end else if (tx_ready) begin
                tx_v <= 1'b0;
            end
            if (tx_v && tx_ready) cnt_reads <= cnt_reads + 32'd1;
            cb_free <= cb_free - (iss ? s_nb : {(CB_AW+1){1'b0}}) + (ret ? d_nb : {(CB_AW+1){1'b0}});

            // ---- delivery
            if (o_load) begin
                o_v <= d_emit;
                if (d_emit) begin
                    o_first <= d_fst && (d_err || d_k == 16'd0);
                    o_last  <= d_err ? 1'b1 : (d_lst && d_k == d_nbm1);
                    o_err   <= d_err;
                    o_be    <= d_err ? {BEAT{1'b0}} : d_be;
                    o_ctx   <= d_ctx;
                end
            end
            if (d_emit && !d_err) d_k <= d_endb ? 16'd0 : d_k + 16'd1;
            if (ret) begin
                t_done[d_slot] <= 1'b0;
                tq_rd <= tq_rd + 1'b1;
                // a failed read ends its request; the request's later reads are discarded
                d_drop <= (d_err || d_drop) && !d_lst;
                if (d_err) cnt_errors <= cnt_errors + 32'd1;
                if (t_tmo[d_slot]) cnt_timeouts <= cnt_timeouts + 32'd1;
            end
        end
    end

    wire unused_ok = &{1'b0, s_tagw, h_info, d_alo, cpl_hdr, h_alo, h_pos, h_qb, s_nbm1, d_nbm1, d_lenm1, s_ndw, s_span};
endmodule
`default_nettype wire
