// VELO completer: writes arriving packets into the destination vpid's mailbox ring in host
// memory by DMA (posted writes on the TLP stream).
//
// No torn reads: an entry whose payload area fits in its first 64-byte line (<= 56 bytes) is one
// write inside one line, so it becomes visible at once. A longer entry takes a second line; that
// line (a TAIL copy of the header plus payload bytes 56..63) is written by an earlier TLP than the
// first line, and posted writes become visible in order. Every line an entry starts in begins with
// the header word carrying the phase of that pass through the ring, so a reader needs no clearing.
//
// Flow control: a packet waits (and with it the network, by back pressure) until the ring has
// room; it is never dropped or overwritten for lack of space. A packet for a disabled vpid is
// dropped and counted and has no effect on other vpids.
//
// Structure: two packet slots. Ingress writes a packet into one slot while egress looks up the
// vpid table, waits for space and emits the DMA of the other slot. The table lookup starts as soon
// as the header word is in, so it is hidden behind the payload's arrival.
`default_nettype none
`include "velo_spec.vh"
module velo_completer #(
    parameter integer TLP_W         = 64,  // TLP stream data width: 64 or 128
    parameter integer VPID_BITS     = 8,   // vpid width (spec param VPID_BITS)
    parameter integer NODE_BITS     = 8,   // node id width (spec param NODE_BITS)
    parameter integer NET_DST_CHECK = 1    // 1: minimal link, drop packets whose NET[7:0] != node id
) (
    input  wire                 clk,
    input  wire                 rst,        // synchronous, active high
    // configuration
    input  wire                 enable,     // CONTROL.ENABLE
    input  wire [7:0]           node_id,    // CTRL.NODE_ID
    input  wire [15:0]          req_id,     // our PCIe requester id (bus/device/function)
    // packet stream in (from the network port)
    input  wire                 pkt_valid,
    output wire                 pkt_ready,
    input  wire [63:0]          pkt_data,
    input  wire                 pkt_last,
    // mailbox table read port (register file RAMs): data the cycle after tbl_re
    output wire                 tbl_re,
    output wire [VPID_BITS-1:0] tbl_vpid,
    input  wire [57:0]          tbl_base,   // ring base, in 64-byte lines
    input  wire                 tbl_en,
    input  wire [4:0]           tbl_log2,
    input  wire [16:0]          tbl_wp,
    input  wire [16:0]          tbl_rp,
    // write pointer update (has priority in the register file); written in the cycle of the
    // entry's last DMA beat, so the next lookup (a cycle later at the earliest) sees it
    output wire                 wp_we,
    output wire [VPID_BITS-1:0] wp_vpid,
    output wire [16:0]          wp_data,
    // software wrote the table or read pointer of this vpid
    input  wire                 sw_wr,
    input  wire [VPID_BITS-1:0] sw_wr_vpid,
    // quiesce
    input  wire [VPID_BITS-1:0] q_vpid,
    output wire                 q_busy,     // a packet for q_vpid is held
    output wire                 busy,       // any packet is held
    // TLP stream out: DMA writes
    output wire                 tx_valid,
    input  wire                 tx_ready,
    output wire                 tx_sop,
    output wire                 tx_eop,
    output reg  [127:0]         tx_hdr,
    output wire [TLP_W-1:0]     tx_data,
    // counter events (one-cycle pulses)
    output reg                  ev_rx_msg,
    output reg                  ev_rx_frag,
    output reg                  ev_drop_disabled,
    output reg                  ev_drop_vpid,
    output reg                  ev_drop_bad,
    output reg                  ev_backpressure
);
    localparam integer R = TLP_W / 64;  // words per TLP beat
    localparam [1:0] S_FREE = 2'd0, S_FILL = 2'd1, S_FULL = 2'd2;
    localparam [1:0] E_IDLE = 2'd0, E_LOOK = 2'd1, E_CHECK = 2'd2, E_EMIT = 2'd3;

    // ================================================================ egress state
    reg [1:0]  e_st;
    reg        e_slot;
    reg        e_reread;   // software touched our vpid since the table was read
    reg [57:0] e_base;
    reg        e_en;
    reg [4:0]  e_log2;
    reg [16:0] e_wp;
    reg [16:0] e_rp;
    wire       e_free;     // egress releases its slot this cycle

    // ================================================================ ingress
    reg [1:0]  slot_st [0:1];
    reg [63:0] slot_hdr [0:1];
    reg [1:0]  slot_bad;
    reg        in_slot;
    reg [3:0]  in_cnt;   // words of the current packet accepted so far (saturates)

    assign pkt_ready = (slot_st[in_slot] != S_FULL);
    wire in_fire = pkt_valid && pkt_ready;

    // expected payload words of a header: ceil(((FRAG_OFF % 4) + FRAG_LEN) / 8)
    function [3:0] payload_words;
        input [1:0] off_lo;      // FRAG_OFF % 4
        input [5:0] frag_len_m1; // FRAG_LEN_M1
        reg [6:0] area;
        begin
            area = {5'd0, off_lo} + {1'b0, frag_len_m1} + 7'd1;
            payload_words = {1'b0, area[5:3]} + {3'd0, area[2:0] != 3'd0} + {area[6], 3'd0};
        end
    endfunction

    wire [63:0] slot_h    = slot_hdr[in_slot];
    wire [1:0]  cur_off   = (in_cnt == 4'd0) ? pkt_data[`VELO_PKT_HDR_FRAG_OFF_LSB +: 2]
                                             : slot_h[`VELO_PKT_HDR_FRAG_OFF_LSB +: 2];
    wire [5:0]  cur_flen  = (in_cnt == 4'd0) ? pkt_data[`VELO_PKT_HDR_FRAG_LEN_M1]
                                             : slot_h[`VELO_PKT_HDR_FRAG_LEN_M1];
    wire [3:0]  exp_words = payload_words(cur_off, cur_flen) + 4'd1;
    wire        in_done   = in_fire && pkt_last;
    wire        in_bad    = (in_cnt + 4'd1 != exp_words) || (in_cnt == 4'd15);

    // payload word i (1..8) goes to beat i/R lane i%R, except word 8 (bytes 56..63 of the area,
    // the second line's payload) which goes to beat 15, top lane, so that the tail TLP's beat is
    // "lane 0 replaced by the marker" like every other first beat.
    wire [3:0] w_beat = (in_cnt == 4'd8) ? 4'd15 : (in_cnt / R[3:0]);
    wire [3:0] w_lane = (in_cnt == 4'd8) ? (R[3:0] - 4'd1) : (in_cnt % R[3:0]);
    wire       w_ok   = in_fire && (in_cnt != 4'd0) && (in_cnt <= 4'd8);

    always @(posedge clk) begin
        if (rst) begin
            slot_st[0] <= S_FREE;
            slot_st[1] <= S_FREE;
            slot_bad   <= 2'b00;
            in_slot    <= 1'b0;
            in_cnt     <= 4'd0;
        end else begin
            if (in_fire) begin
                if (in_cnt == 4'd0) slot_st[in_slot] <= S_FILL;
                if (pkt_last) begin
                    slot_st[in_slot]  <= S_FULL;
                    slot_bad[in_slot] <= in_bad;
                    in_slot <= ~in_slot;
                    in_cnt  <= 4'd0;
                end else if (in_cnt != 4'd15) begin
                    in_cnt <= in_cnt + 4'd1;
                end
            end
            if (e_free) slot_st[e_slot] <= S_FREE;
        end
    end

    always @(posedge clk) begin
        if (in_fire && in_cnt == 4'd0) slot_hdr[in_slot] <= pkt_data;
    end

    // ================================================================ egress

    wire [63:0] eh = slot_hdr[e_slot];
    wire [7:0]  e_dst8  = eh[`VELO_PKT_HDR_DST_VPID];
    wire [VPID_BITS-1:0] e_vpid = e_dst8[VPID_BITS-1:0];
    wire        e_vpid_oor = (VPID_BITS < 8) ? (e_dst8 >> VPID_BITS) != 8'd0 : 1'b0;
    wire [3:0]  e_words = payload_words(eh[`VELO_PKT_HDR_FRAG_OFF_LSB +: 2], eh[`VELO_PKT_HDR_FRAG_LEN_M1]);          // 1..8
    wire        e_two   = (e_words == 4'd8);          // area > 56 bytes: two lines
    wire [1:0]  e_lines = e_two ? 2'd2 : 2'd1;
    wire [3:0]  head_words = e_two ? 4'd8 : e_words + 4'd1;
    wire [3:0]  head_beats = (R == 1) ? head_words : ((head_words + 4'd1) >> 1);
    wire [3:0]  tail_beats = (R == 1) ? 4'd2 : 4'd1;

    wire        slot_hv   = (slot_st[e_slot] != S_FREE);
    wire        done_now  = in_done && (in_slot == e_slot);
    wire        full_reg  = (slot_st[e_slot] == S_FULL);
    wire        e_bad_reg = slot_bad[e_slot];

    // ring arithmetic
    wire [16:0] size   = 17'd1 << e_log2;
    wire [16:0] mask   = size - 17'd1;
    wire [16:0] used   = e_wp - e_rp;
    wire        log2_ok = (e_log2 >= `VELO_MBOX_LOG2_MIN) && (e_log2 <= `VELO_MBOX_LOG2_MAX);
    wire        room   = (used <= size) && ((size - used) >= {15'd0, e_lines});

    wire type_ok = (eh[`VELO_PKT_HDR_TYPE] == `VELO_PKT_TYPE_VELO);
    wire dst_ok  = (NET_DST_CHECK == 0) ||
                   (eh[`VELO_PKT_HDR_NET_LSB +: NODE_BITS] == node_id[NODE_BITS-1:0]);

    // the decision, once the whole packet is in
    wire pkt_in    = full_reg || (done_now && R == 1 && !e_two);   // start without waiting a cycle
    wire pkt_bad   = full_reg ? e_bad_reg : in_bad;
    wire dec       = (e_st == E_CHECK) && pkt_in;
    wire d_bad     = !type_ok || !dst_ok || pkt_bad;
    wire d_dis     = !d_bad && !enable;
    wire d_vpid    = !d_bad && enable && (e_vpid_oor || !e_en || !log2_ok);
    wire d_ok      = !d_bad && enable && !e_vpid_oor && e_en && log2_ok;
    wire d_wait    = dec && d_ok && !room;
    wire d_go      = dec && d_ok && room;
    wire d_drop    = dec && !d_ok;

    assign tbl_re   = (e_st == E_IDLE) && slot_hv;
    assign tbl_vpid = e_vpid;

    // ---- emission sequencer: which beat is read from the slot buffer next
    reg        sq_act;     // beats left to issue
    reg        sq_tail;    // issuing the tail TLP (second line, written first)
    reg [3:0]  sq_beat;
    reg        o_valid, o_sop, o_eop, o_tail, o_subst;
    wire       advance = !o_valid || tx_ready;
    wire       issue   = advance && ((e_st == E_EMIT) ? sq_act : d_go);
    wire [3:0] sq_nb   = sq_tail ? tail_beats : head_beats;
    wire       sq_lastb = (sq_beat == sq_nb - 4'd1);
    wire [3:0] rd_beat = sq_tail ? 4'd15 : sq_beat;
    wire       final_hs = o_valid && tx_ready && o_eop && !o_tail;

    assign e_free = d_drop || ((e_st == E_EMIT) && final_hs);
    assign wp_we   = (e_st == E_EMIT) && final_hs;
    assign wp_vpid = e_vpid;
    assign wp_data = e_wp + {15'd0, e_lines};

    always @(posedge clk) begin
        if (rst) begin
            e_st     <= E_IDLE;
            e_slot   <= 1'b0;
            e_reread <= 1'b0;
            sq_act   <= 1'b0;
            sq_tail  <= 1'b0;
            sq_beat  <= 4'd0;
            o_valid  <= 1'b0;
            o_sop    <= 1'b0;
            o_eop    <= 1'b0;
            o_tail   <= 1'b0;
            o_subst  <= 1'b0;
        end else begin
            case (e_st)
                E_IDLE: if (slot_hv) e_st <= E_LOOK;
                E_LOOK: e_st <= E_CHECK;
                E_CHECK: begin
                    if (d_drop) begin
                        e_st   <= E_IDLE;
                        e_slot <= ~e_slot;
                    end else if (d_go) begin
                        e_st <= E_EMIT;
                    end else if (d_wait && e_reread) begin
                        e_st <= E_IDLE;  // read the table again
                    end
                end
                default: begin  // E_EMIT
                    if (final_hs) begin
                        e_st   <= E_IDLE;
                        e_slot <= ~e_slot;
                    end
                end
            endcase

            // software wrote our vpid: the copy read from the table may be stale
            if (tbl_re) e_reread <= 1'b0;
            if (sw_wr && sw_wr_vpid == e_vpid && e_st != E_EMIT) e_reread <= 1'b1;

            // sequencer
            if (e_st != E_EMIT) begin
                sq_act  <= 1'b1;
                sq_tail <= e_two;
                sq_beat <= 4'd0;
            end
            if (issue) begin
                if (sq_lastb) begin
                    sq_beat <= 4'd0;
                    if (sq_tail) sq_tail <= 1'b0;
                    else         sq_act  <= 1'b0;
                end else begin
                    sq_beat <= sq_beat + 4'd1;
                end
            end

            // output stage (RAM read data arrives together with these flags)
            if (advance) begin
                o_valid <= issue;
                o_sop   <= (sq_beat == 4'd0);
                o_eop   <= sq_lastb;
                o_tail  <= sq_tail;
                o_subst <= (sq_beat == 4'd0);
            end
        end
    end

    always @(posedge clk) begin
        if (e_st == E_LOOK) begin
            e_base <= tbl_base;
            e_en   <= tbl_en;
            e_log2 <= tbl_log2;
            e_wp   <= tbl_wp;
            e_rp   <= tbl_rp;
        end
    end

    // ---- slot buffer: one RAM per 64-bit lane, address {slot, beat}
    wire [TLP_W-1:0] rd_data;
    genvar l;
    generate
        for (l = 0; l < R; l = l + 1) begin : g_lane
            velo_sdp_ram #(.W(64), .ADDR_W(5)) u_buf (
                .clk  (clk),
                .we   (w_ok && (w_lane == l)),
                .waddr({in_slot, w_beat}),
                .wdata(pkt_data),
                .re   (issue),
                .raddr({e_slot, rd_beat}),
                .rdata(rd_data[l*64 +: 64])
            );
        end
    endgenerate

    // ---- mailbox header words
    wire [16:0] head_ptr = e_wp;
    wire [16:0] tail_ptr = e_wp + 17'd1;
    wire        head_phase = ((head_ptr & size) == 17'd0);
    wire        tail_phase = ((tail_ptr & size) == 17'd0);
    reg  [63:0] mb_hdr, mb_tail;
    always @(*) begin
        mb_hdr = eh;
        mb_hdr[`VELO_MBOX_HDR_PHASE] = head_phase;
        mb_hdr[`VELO_MBOX_HDR_TAIL]  = 1'b0;
        mb_hdr[`VELO_MBOX_HDR_LINES] = e_lines;
        mb_hdr[`VELO_MBOX_HDR_RSVD0] = 12'd0;
        mb_hdr[`VELO_MBOX_HDR_RSVD1] = 1'b0;
        mb_tail = mb_hdr;
        mb_tail[`VELO_MBOX_HDR_PHASE] = tail_phase;
        mb_tail[`VELO_MBOX_HDR_TAIL]  = 1'b1;
    end

    generate
        if (R == 1) begin : g_d1
            assign tx_data = o_subst ? (o_tail ? mb_tail : mb_hdr) : rd_data;
        end else begin : g_d2
            assign tx_data = {rd_data[TLP_W-1:64], o_subst ? (o_tail ? mb_tail : mb_hdr) : rd_data[63:0]};
        end
    endgenerate

    // ---- DMA TLP header
    wire [57:0] line = e_base + {41'd0, (o_tail ? tail_ptr : head_ptr) & mask};
    wire [63:0] waddr = {line, 6'd0};
    wire        w64   = (waddr[63:32] != 32'd0);
    wire        unused_ok = &{1'b0, waddr[1:0], node_id, slot_h};
    wire [9:0]  len_dw = {5'd0, head_words, 1'b0};   // head TLP; the tail TLP is 4 DW
    always @(*) begin
        tx_hdr = 128'd0;
        tx_hdr[`VELO_TLP_HDR_FMT_TYPE] = w64 ? `VELO_TLP_FMT_TYPE_MWR64 : `VELO_TLP_FMT_TYPE_MWR32;
        tx_hdr[`VELO_TLP_HDR_LENGTH]   = o_tail ? 10'd4 : len_dw;
        tx_hdr[`VELO_TLP_HDR_FIRST_BE] = 4'hF;
        tx_hdr[`VELO_TLP_HDR_LAST_BE]  = 4'hF;
        tx_hdr[`VELO_TLP_HDR_REQ_ID]   = req_id;
        if (w64) begin
            tx_hdr[`VELO_TLP_HDR_ADDR64_HI] = waddr[63:32];
            tx_hdr[`VELO_TLP_HDR_ADDR64_LO] = waddr[31:2];
        end else begin
            tx_hdr[`VELO_TLP_HDR_ADDR32] = waddr[31:2];
        end
    end

    assign tx_valid = o_valid;
    assign tx_sop   = o_sop;
    assign tx_eop   = o_eop;

    // ---- quiesce / busy
    wire [7:0] h0d = slot_hdr[0][`VELO_PKT_HDR_DST_VPID];
    wire [7:0] h1d = slot_hdr[1][`VELO_PKT_HDR_DST_VPID];
    wire [7:0] qv8 = {{(8-VPID_BITS){1'b0}}, q_vpid};
    assign busy   = (slot_st[0] != S_FREE) || (slot_st[1] != S_FREE);
    assign q_busy = ((slot_st[0] != S_FREE) && (h0d == qv8)) || ((slot_st[1] != S_FREE) && (h1d == qv8));

    // ---- counter events
    always @(posedge clk) begin
        if (rst) begin
            ev_rx_msg        <= 1'b0;
            ev_rx_frag       <= 1'b0;
            ev_drop_disabled <= 1'b0;
            ev_drop_vpid     <= 1'b0;
            ev_drop_bad      <= 1'b0;
            ev_backpressure  <= 1'b0;
        end else begin
            ev_rx_msg        <= (e_st == E_EMIT) && final_hs && !eh[`VELO_PKT_HDR_FRAG_LSB];
            ev_rx_frag       <= (e_st == E_EMIT) && final_hs && eh[`VELO_PKT_HDR_FRAG_LSB];
            ev_drop_disabled <= d_drop && d_dis;
            ev_drop_vpid     <= d_drop && d_vpid;
            ev_drop_bad      <= d_drop && d_bad;
            ev_backpressure  <= d_wait;
        end
    end
endmodule
`default_nettype wire
