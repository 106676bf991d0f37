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
// dropped and counted and has no effect on other vpids. A packet whose length disagrees with its
// header (or whose header claims a payload area over 64 bytes), or that arrives marked bad by the
// network (pkt_bad with its last word: it failed a link check after cut-through forwarding began),
// is dropped as bad. Nothing of a packet reaches host memory before its last word is in, so a bad
// packet never touches a mailbox. The packet's VC and ROUTE bits belong to the network.
//
// Structure: two packet slots, used in turn. Ingress writes a packet into one slot while the
// other may be decided or emitted. Packets are decided in order (head slot): the vpid table is
// read as soon as the head packet's header word is in (in the very cycle it is accepted when the
// slot is already the head), so the lookup is hidden behind the payload's arrival, and the
// decision (drop, wait for room, go) is taken from the read data directly in the cycle they
// arrive. A decided packet is handed to the emission sequencer, which issues one TLP beat per
// cycle; the next packet's lookup and decision overlap the current packet's emission, so the
// beats of consecutive packets follow without gaps.
//
// Our write pointer update is registered and the table RAM returns old data when read during a
// write, so a lookup in the cycle of our update of the same vpid takes the pointer being written. When software writes the table or read pointer of the head
// packet's vpid after its lookup, a packet waiting for room reads the table again.
//
// Clock gating in simulation (docs/simulator.md, "Clock gating of idle units"): every register of
// the completer (and its slot buffer) is clocked by gclk, which velo_sim_gate stops (Verilator
// with +velo_sim_gate only; elsewhere gclk = clk) in cycles where none can change: both slots free,
// no lookup, no emission (sequencer idle, output stage empty), no write pointer update, commit
// report or counter event pulse up, and no packet word offered (pkt_valid) and no reset. At rest
// the outputs are functions of registers that hold and of q_vpid. wp_vpid, wp_data and cmt_vpid
// are rewritten every cycle but read only with wp_we, cmt_valid (low at rest): while gated they
// keep an older value, and the edge that raises their valid rewrites them.
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_ports.vh"
module velo_completer #(
    parameter integer TLP_W         = 64,  // TLP stream data width: 64 or 128
    parameter integer VPID_BITS     = 8,   // vpid width (spec param VPID_BITS), 1..8
    // 0: the decision is taken from the table RAM's read data in the cycle they arrive (the
    // NIC's latency figures); 1: (smaller devices, docs/board-guide.md) the row is registered and
    // the room check registered once more, so the decision comes two cycles after the read data
    // (hidden behind the payload's arrival, except when the lookup could not start early)
    parameter integer PIPE          = 0
) (
    input  wire                 clk,
    input  wire                 rst,        // synchronous, active high
    // configuration
    input  wire                 enable,     // CONTROL.ENABLE
    input  wire [15:0]          req_id,     // our PCIe requester id (bus/device/function)
    // packet stream in (from the network port)
    input  wire                 pkt_valid,
    output wire                 pkt_ready,
    input  wire [63:0]          pkt_data,
    input  wire                 pkt_last,
    input  wire                 pkt_bad,    // with pkt_last: the packet failed a check upstream
    // mailbox table port (register file RAMs, velo_ports.vh): a row (tbl_base in 64-byte lines),
    // data the cycle after tbl_re; the write pointer update (has priority in the register file),
    // written the cycle after an entry is decided (the completer forwards it to its next decision
    // itself); software wrote the table or read pointer of a vpid (sw_wr)
    `VELO_QTBL_WRITER_PORTS(VPID_BITS),
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
    output reg                  ev_backpressure,
    // an entry for cmt_vpid was committed: the last beat of its last TLP was accepted on tx in
    // the cycle before this one-cycle pulse (the interrupt unit's trigger)
    output reg                  cmt_valid,
    output reg  [VPID_BITS-1:0] cmt_vpid
);
    localparam integer R = TLP_W / 64;  // words per TLP beat
    // slot states: free, being filled, complete (not decided), decided (being emitted)
    localparam [1:0] S_FREE = 2'd0, S_FILL = 2'd1, S_FULL = 2'd2, S_EMIT = 2'd3;
    // table lookup of the head packet: none, read issued (data on tbl_* now), data captured,
    // (PIPE only) room check registered
    localparam [1:0] L_NONE = 2'd0, L_PEND = 2'd1, L_HAVE = 2'd2, L_RDY = 2'd3;
    localparam [3:0] TAIL_BEATS = (R == 1) ? 4'd2 : 4'd1;

    `VELO_CHECK_TLP_W
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK_PIPE

    // the clock gate (simulation): open when a register may change at the coming edge (the
    // condition is at the end, with the registers it reads)
    wire gclk, gate_en;
    velo_sim_gate u_gate (.clk(clk), .en(gate_en), .gclk(gclk));

    // payload area of a header in bytes: (FRAG_OFF % 4) + FRAG_LEN, 1..67 (over 64 is bad)
    function [6:0] area_of;
        input [1:0] off_lo;       // FRAG_OFF % 4
        input [5:0] frag_len_m1;  // FRAG_LEN_M1
        begin
            area_of = {5'd0, off_lo} + {1'b0, frag_len_m1} + 7'd1;
        end
    endfunction

    // payload words of an area: ceil(area / 8)
    function [3:0] words_of;
        input [6:0] area;
        begin
            words_of = {area[6], area[5:3]} + {3'd0, area[2:0] != 3'd0};
        end
    endfunction

    // beats of a head TLP of hw words (header word included)
    function [3:0] head_beats;
        input [3:0] hw;
        begin
            head_beats = (R == 1) ? hw : ({1'b0, hw[3:1]} + {3'd0, hw[0]});
        end
    endfunction

    // ================================================================ slots and ingress
    reg [1:0]  slot_st [0:1];
    reg [63:0] slot_hdr [0:1];
    reg [1:0]  slot_bad;
    reg        in_slot;
    reg [3:0]  in_cnt;    // words of the current packet accepted so far (saturates)

    reg        head_slot;    // head: the next packet to decide
    wire       dec_go;      // the head packet is decided for delivery this cycle
    wire       dec_drop;    // the head packet is dropped this cycle
    wire       entry_done;  // the last beat of an entry is accepted: its slot is free
    reg        emit_slot;    // slot of the packet being emitted

    assign pkt_ready = (slot_st[in_slot] == S_FREE) || (slot_st[in_slot] == S_FILL);
    wire in_fire = pkt_valid && pkt_ready;
    wire in_hdr  = in_fire && (in_cnt == 4'd0);
    wire in_done = in_fire && pkt_last;

    // a packet is good if it has exactly 1 + words_of(area) words and area <= 64; both are taken
    // from the header word when it arrives (in_nwords, in_over64), so the check at the last word is a
    // compare with registers (a lone header word is always short: words_of(area) >= 1)
    wire [6:0]  hdr_area  = area_of(pkt_data[`VELO_PKT_HDR_FRAG_OFF_LSB +: 2], pkt_data[`VELO_PKT_HDR_FRAG_LEN_M1]);
    reg  [3:0]  in_nwords;    // payload words the current packet's header announces
    reg         in_over64;   // ... and its area is over 64 bytes
    always @(posedge gclk) begin
        if (rst) begin
            in_nwords  <= 4'd0;
            in_over64 <= 1'b0;
        end else if (in_hdr) begin
            in_nwords  <= words_of(hdr_area);
            in_over64 <= (hdr_area > 7'd64);
        end
    end
    wire        in_bad    = (in_cnt == 4'd0) || (in_cnt != in_nwords) || (in_cnt == 4'd15) || in_over64 || pkt_bad;

    // payload word i (1..8) goes to beat i/R lane i%R, except word 8 (bytes 56..63 of the area,
    // the second line's payload) which goes to beat 15, top lane, so that the tail TLP's beat is
    // "lane 0 replaced by the header copy" like every other first beat.
    wire [3:0] buf_wbeat = (in_cnt == 4'd8) ? 4'd15 : (in_cnt / R[3:0]);
    wire [3:0] buf_wlane = (in_cnt == 4'd8) ? (R[3:0] - 4'd1) : (in_cnt % R[3:0]);
    wire       buf_we   = in_fire && (in_cnt != 4'd0) && (in_cnt <= 4'd8);

    always @(posedge gclk) begin
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
            // the head may be decided in the cycle its last word arrives: these win
            if (dec_go)   slot_st[head_slot] <= S_EMIT;
            if (dec_drop) slot_st[head_slot] <= S_FREE;
            if (entry_done) slot_st[emit_slot] <= S_FREE;
        end
    end

    // with the header, what the decision needs of its length (from hdr_area, so that the head's
    // decision does not wait for the area adder): second line needed, head TLP words
    // (and whether its first TLP is a single beat: the decision's first beat is then its last,
    // without the beat count's arithmetic behind the decision)
    reg        slot_two [0:1];
    reg [3:0]  slot_hw  [0:1];
    reg        slot_one [0:1];
    wire       hdr_two = (hdr_area > 7'd56);
    wire [3:0] hdr_hw  = words_of(hdr_area) + 4'd1;
    always @(posedge gclk) begin
        if (in_hdr) begin
            slot_hdr[in_slot] <= pkt_data;
            slot_two[in_slot] <= hdr_two;
            slot_hw[in_slot]  <= hdr_two ? 4'd8 : hdr_hw;
            slot_one[in_slot] <= hdr_two ? (TAIL_BEATS == 4'd1) : (head_beats(hdr_hw) == 4'd1);
        end
    end

    // ================================================================ head: lookup and decision
    wire [63:0] head_hdr       = slot_hdr[head_slot];
    wire [7:0]  head_dst8   = head_hdr[`VELO_PKT_HDR_DST_VPID];
    wire [VPID_BITS-1:0] head_vpid = head_dst8[VPID_BITS-1:0];
    wire        head_vpid_oor = (VPID_BITS < 8) ? (head_dst8 >> VPID_BITS) != 8'd0 : 1'b0;
    wire        head_two    = slot_two[head_slot];   // second line needed (area > 56 bytes)
    wire [1:0]  head_lines  = head_two ? 2'd2 : 2'd1;
    wire [3:0]  head_hw     = slot_hw[head_slot];    // head TLP words: 8, or 1 + words_of(area)
    wire        head_one    = slot_one[head_slot];   // its first TLP is one beat
    wire [1:0]  head_st     = slot_st[head_slot];
    wire        head_avail  = (head_st == S_FILL) || (head_st == S_FULL);

    reg  [1:0]  lookup_st;       // lookup state of the head packet
    reg         tbl_stale;       // software wrote the head's vpid since the table was read
    reg  [57:0] cap_base;        // the table row as captured the cycle after its read
    reg         cap_en;
    reg  [4:0]  cap_log2;
    reg  [16:0] cap_wp;
    reg  [16:0] cap_rp;

    wire [7:0]  in_dst8   = pkt_data[`VELO_PKT_HDR_DST_VPID];
    // (PIPE: not from the arriving header word, so that the input's handshake and word count do not
    // reach the table RAM's read port and the write-pointer bypass; the lookup starts a cycle later,
    // from the slot's stored header)
    wire        look_hdr  = (PIPE == 0) && (lookup_st == L_NONE) && in_hdr && (in_slot == head_slot);  // header arriving now
    wire        look_slot = (lookup_st == L_NONE) && head_avail;  // header already in
    wire        dec_wait;
    wire        reread    = (lookup_st == ((PIPE != 0) ? L_RDY : L_HAVE)) && dec_wait && tbl_stale;
    assign tbl_re   = look_hdr || look_slot || reread;
    assign tbl_vpid = look_hdr ? in_dst8[VPID_BITS-1:0] : head_vpid;

    // the table row: straight from the RAM in the cycle after the read, else as captured
    wire        row_live = (PIPE == 0) && (lookup_st == L_PEND);  // the read data are on tbl_* now
    wire [57:0] row_base = row_live ? tbl_base : cap_base;
    wire        row_en   = row_live ? tbl_en   : cap_en;
    wire [4:0]  row_log2 = row_live ? tbl_log2 : cap_log2;
    wire [16:0] row_rp   = row_live ? tbl_rp   : cap_rp;

    // our own write pointer update lands in the table RAM at the end of the cycle after the
    // decision; a read in that very cycle returns the old pointer, so it is bypassed
    reg         wp_fwd_valid;
    reg  [16:0] wp_fwd_data;
    wire [16:0] tbl_wp_fwd = wp_fwd_valid ? wp_fwd_data : tbl_wp;
    wire [16:0] row_wp      = row_live ? tbl_wp_fwd : cap_wp;
    wire [16:0] row_wp_next = row_wp + {15'd0, head_lines};

    // ring arithmetic
    wire [16:0] ring_size  = 17'd1 << row_log2;
    wire [16:0] ring_used  = row_wp - row_rp;
    wire        log2_ok    = (row_log2 >= `VELO_MBOX_LOG2_MIN) && (row_log2 <= `VELO_MBOX_LOG2_MAX);
    wire        room_c     = (ring_used <= ring_size) && ((ring_size - ring_used) >= {15'd0, head_lines});
    // PIPE: the check from the captured row (cap_*), registered; the row changes only with a new read
    reg         room_q, log2_ok_q;
    wire        room    = (PIPE != 0) ? room_q : room_c;
    wire        log2_ok_dec = (PIPE != 0) ? log2_ok_q : log2_ok;

    wire type_ok = (head_hdr[`VELO_PKT_HDR_TYPE] == `VELO_PKT_TYPE_VELO);

    // the decision, once the whole packet is in; with one word per beat an entry starts in the
    // cycle its last word arrives (the first beat of its first TLP is a header word, the payload
    // words are read from the slot buffer from the next cycle on)
    // (PIPE: only once the packet is stored complete, a cycle after its last word, so that the
    // input's word count and length checks do not reach the decision)
    wire head_in     = (head_st == S_FULL) || (PIPE == 0 && in_done && in_slot == head_slot && R == 1);
    wire head_bad    = (head_st == S_FULL) ? slot_bad[head_slot] : in_bad;
    wire dec_now      = head_in && ((PIPE != 0) ? (lookup_st == L_RDY) : (lookup_st != L_NONE));  // decide now
    wire dec_bad      = !type_ok || head_bad;     // drop: malformed or marked bad
    wire dec_disabled = !dec_bad && !enable;      // drop: the completer is disabled
    wire dec_bad_vpid = !dec_bad && enable && (head_vpid_oor || !row_en || !log2_ok_dec);  // drop: vpid not usable
    // PIPE: what the decision needs of the header and the table row, registered with room_q (the
    // slot's header and the captured row do not change until the decision)
    reg  vpid_ok_q;
    wire vpid_ok_c    = type_ok && !head_vpid_oor && row_en && log2_ok;
    wire dec_ok       = (PIPE != 0) ? (!head_bad && enable && vpid_ok_q)
                                    : (!dec_bad && enable && !head_vpid_oor && row_en && log2_ok_dec);
    assign dec_wait = dec_now && dec_ok && !room;
    assign dec_drop = dec_now && !dec_ok;

    // ---- emission sequencer: which beat is read from the slot buffer next
    reg        sq_busy;   // beats of the current entry left to issue
    reg        sq_tail;   // issuing the tail TLP (second line, written first)
    reg [3:0]  sq_beat;
    reg [57:0] emit_base;    // the entry being emitted
    reg [4:0]  emit_log2;
    reg [16:0] emit_wp;
    reg        emit_two;
    reg [3:0]  emit_hw;
    reg        o_valid, o_sop, o_eop, o_tail;
    wire       advance = !o_valid || tx_ready;
    assign dec_go = dec_now && dec_ok && room && !sq_busy && advance;
    wire       issue   = advance && (sq_busy || dec_go);
    // the first beat is issued in the decision cycle, the others from the entry registers
    wire       iss_tail  = dec_go ? head_two  : sq_tail;
    wire [3:0] iss_beat  = dec_go ? 4'd0   : sq_beat;
    wire       iss_slot  = dec_go ? head_slot : emit_slot;
    wire [3:0] sq_nbeats   = sq_tail ? TAIL_BEATS : head_beats(emit_hw);
    wire       iss_last  = dec_go ? head_one : (sq_beat == sq_nbeats - 4'd1);
    wire [3:0] buf_rbeat = iss_tail ? 4'd15 : iss_beat;

    assign entry_done = o_valid && tx_ready && o_eop && !o_tail;

    always @(posedge gclk) begin
        if (rst) begin
            head_slot  <= 1'b0;
            lookup_st      <= L_NONE;
            tbl_stale      <= 1'b0;
            wp_fwd_valid    <= 1'b0;
            sq_busy <= 1'b0;
            sq_tail <= 1'b0;
            sq_beat <= 4'd0;
            o_valid <= 1'b0;
            o_sop   <= 1'b0;
            o_eop   <= 1'b0;
            o_tail  <= 1'b0;
        end else begin
            // lookup
            if (lookup_st == L_PEND) lookup_st <= L_HAVE;
            if (PIPE != 0 && lookup_st == L_HAVE) lookup_st <= L_RDY;
            if (tbl_re) lookup_st <= L_PEND;
            if (tbl_re) tbl_stale <= sw_wr && (sw_wr_vpid == tbl_vpid);
            else if (lookup_st != L_NONE && sw_wr && sw_wr_vpid == head_vpid) tbl_stale <= 1'b1;
            if (dec_go || dec_drop) begin
                lookup_st     <= L_NONE;
                head_slot <= ~head_slot;
            end
            if (tbl_re) wp_fwd_valid <= wp_we && (wp_vpid == tbl_vpid);
            // sequencer
            if (issue) begin
                if (iss_last) begin
                    sq_beat <= 4'd0;
                    sq_tail <= 1'b0;
                    sq_busy <= iss_tail;  // the head TLP follows the tail TLP
                end else begin
                    sq_beat <= iss_beat + 4'd1;
                    sq_tail <= iss_tail;
                    sq_busy <= 1'b1;
                end
            end
            // output stage (RAM read data arrive together with these flags)
            if (advance) begin
                o_valid <= issue;
                o_sop   <= (iss_beat == 4'd0);
                o_eop   <= iss_last;
                o_tail  <= iss_tail;
            end
        end
    end

    always @(posedge gclk) begin
        if (tbl_re) wp_fwd_data <= wp_data;
        if (lookup_st == L_HAVE) begin
            room_q  <= room_c;
            log2_ok_q <= log2_ok;
            vpid_ok_q   <= vpid_ok_c;
        end
        if (lookup_st == L_PEND) begin
            cap_base <= tbl_base;
            cap_en   <= tbl_en;
            cap_log2 <= tbl_log2;
            cap_wp   <= tbl_wp_fwd;
            cap_rp   <= tbl_rp;
        end
        if (dec_go) begin
            emit_slot  <= head_slot;
            emit_base  <= row_base;
            emit_log2  <= row_log2;
            emit_wp    <= row_wp;
            emit_two   <= head_two;
            emit_hw    <= head_hw;
        end
    end

    // write pointer update, the cycle after the decision
    reg                 wp_we_q;
    reg [VPID_BITS-1:0] wp_vpid_q;
    reg [16:0]          wp_data_q;
    always @(posedge gclk) begin
        if (rst) wp_we_q <= 1'b0;
        else     wp_we_q <= dec_go;
        wp_vpid_q <= head_vpid;
        wp_data_q <= row_wp_next;
    end
    assign wp_we   = wp_we_q;
    assign wp_vpid = wp_vpid_q;
    assign wp_data = wp_data_q;

    // ---- slot buffer: one RAM per 64-bit lane, address {slot, beat}
    wire [TLP_W-1:0] buf_rdata;
    genvar l;
    generate
        for (l = 0; l < R; l = l + 1) begin : g_lane
            velo_sdp_ram #(.W(64), .ADDR_W(5)) u_buf (
                .clk  (gclk),
                .we   (buf_we && (buf_wlane == l)),
                .waddr({in_slot, buf_wbeat}),
                .wdata(pkt_data),
                .re   (issue),
                .raddr({iss_slot, buf_rbeat}),
                .rdata(buf_rdata[l*64 +: 64])
            );
        end
    endgenerate

    // ---- the beat in the output stage belongs to the entry registers (j_*)
    wire [63:0] emit_hdr      = slot_hdr[emit_slot];
    wire [16:0] emit_size  = 17'd1 << emit_log2;
    wire [16:0] o_ring_ptr   = o_tail ? emit_wp + 17'd1 : emit_wp;
    wire        o_phase = ((o_ring_ptr & emit_size) == 17'd0);
    reg  [63:0] mb_hdr;   // header word of the line the current TLP writes
    always @(*) begin
        mb_hdr = emit_hdr;
        mb_hdr[`VELO_MBOX_HDR_PHASE] = o_phase;
        mb_hdr[`VELO_MBOX_HDR_TAIL]  = o_tail;
        mb_hdr[`VELO_MBOX_HDR_LINES] = emit_two ? 2'd2 : 2'd1;
        mb_hdr[`VELO_MBOX_HDR_RSVD0] = 12'd0;
        mb_hdr[`VELO_MBOX_HDR_RSVD1] = 1'b0;
    end

    generate
        if (R == 1) begin : g_d1
            assign tx_data = o_sop ? mb_hdr : buf_rdata;
        end else begin : g_d2
            assign tx_data = {buf_rdata[TLP_W-1:64], o_sop ? mb_hdr : buf_rdata[63:0]};
        end
    endgenerate

    // ---- DMA TLP header
    // PIPE: the two lines an entry may write (first line, second line) are added up before the
    // decision and registered at it, not in front of the TLP header. The sums are split at bit 17
    // (the ring offset has 17 bits): in L_HAVE, from the captured row (which changes only with a
    // new read, like room_q), the low 17 bits with their carry and the base's upper bits plus one
    // are registered; the decision only selects (timing: no 58-bit carry chain behind the room
    // check and the decision)
    wire [16:0] ring_mask  = ring_size - 17'd1;
    wire [16:0] row_wp_inc   = row_wp + 17'd1;
    reg  [17:0] line0_lo, line1_lo;  // {carry, low 17 bits} of base + offset, first and second line
    reg  [40:0] base_hi_inc;         // base[57:17] + 1
    always @(posedge gclk) begin
        if (lookup_st == L_HAVE) begin
            line0_lo <= {1'b0, row_base[16:0]} + {1'b0, row_wp & ring_mask};
            line1_lo <= {1'b0, row_base[16:0]} + {1'b0, row_wp_inc & ring_mask};
            base_hi_inc <= row_base[57:17] + 41'd1;
        end
    end
    reg  [57:0] emit_line0, emit_line1;
    always @(posedge gclk) begin
        if (dec_go) begin
            emit_line0 <= {line0_lo[17] ? base_hi_inc : row_base[57:17], line0_lo[16:0]};
            emit_line1 <= {line1_lo[17] ? base_hi_inc : row_base[57:17], line1_lo[16:0]};
        end
    end
    wire [57:0] line  = (PIPE != 0) ? (o_tail ? emit_line1 : emit_line0)
                                    : emit_base + {41'd0, o_ring_ptr & (emit_size - 17'd1)};
    wire [63:0] waddr = {line, 6'd0};
    wire        w64   = (waddr[63:32] != 32'd0);
    wire [9:0]  len_dw = o_tail ? 10'd4 : {5'd0, emit_hw, 1'b0};
    always @(*) begin
        tx_hdr = 128'd0;
        tx_hdr[`VELO_TLP_HDR_FMT_TYPE] = w64 ? `VELO_TLP_FMT_TYPE_MWR64 : `VELO_TLP_FMT_TYPE_MWR32;
        tx_hdr[`VELO_TLP_HDR_LENGTH]   = len_dw;
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

    // ---- quiesce / busy: a slot is held from its header word to its entry's last DMA beat
    wire [7:0] slot0_dst = slot_hdr[0][`VELO_PKT_HDR_DST_VPID];
    wire [7:0] slot1_dst = slot_hdr[1][`VELO_PKT_HDR_DST_VPID];
    wire [7:0] q_vpid8 = {{(8-VPID_BITS){1'b0}}, q_vpid};
    assign busy   = (slot_st[0] != S_FREE) || (slot_st[1] != S_FREE);
    assign q_busy = ((slot_st[0] != S_FREE) && (slot0_dst == q_vpid8)) || ((slot_st[1] != S_FREE) && (slot1_dst == q_vpid8));

    wire [7:0] emit_dst8 = emit_hdr[`VELO_PKT_HDR_DST_VPID];
    wire unused_ok = &{1'b0, waddr[1:0], in_dst8, head_hdr, emit_dst8};

    // ---- commit report: the head TLP (written after the tail TLP) ends the entry
    always @(posedge gclk) begin
        if (rst) cmt_valid <= 1'b0;
        else     cmt_valid <= entry_done;
        cmt_vpid <= emit_dst8[VPID_BITS-1:0];
    end

    // at rest (see the top): the gate opens for anything else, a packet word or reset
`ifdef VERILATOR
    wire idle = (slot_st[0] == S_FREE) && (slot_st[1] == S_FREE) && (lookup_st == L_NONE) && !sq_busy &&
                !o_valid && !wp_we_q && !cmt_valid && !ev_rx_msg && !ev_rx_frag && !ev_drop_disabled &&
                !ev_drop_vpid && !ev_drop_bad && !ev_backpressure;
    assign gate_en = !idle || rst || pkt_valid;
`else
    assign gate_en = 1'b1;  // elsewhere gclk = clk: the enable is not built (synthesis figures unchanged)
`endif

    // ---- simulation-only invariants (VELO_ASSERT, velo_check.vh): a violation stops the simulation
    // a lookup or a decision only for a packet that is arriving or in
    `VELO_ASSERT(clk, rst, !(lookup_st != L_NONE && slot_st[head_slot] == S_FREE), "velo_completer: lookup for the free head slot")
    `VELO_ASSERT(clk, rst, !((dec_go || dec_drop) && slot_st[head_slot] != S_FULL && !(in_done && in_slot == head_slot)), "velo_completer: head slot decided before its packet is in")
    // the entry being emitted holds its slot until its last beat is taken
    `VELO_ASSERT(clk, rst, !((sq_busy || entry_done) && slot_st[emit_slot] != S_EMIT), "velo_completer: a slot emitted outside S_EMIT")

    // ---- counter events
    always @(posedge gclk) begin
        if (rst) begin
            ev_rx_msg        <= 1'b0;
            ev_rx_frag       <= 1'b0;
            ev_drop_disabled <= 1'b0;
            ev_drop_vpid     <= 1'b0;
            ev_drop_bad      <= 1'b0;
            ev_backpressure  <= 1'b0;
        end else begin
            ev_rx_msg        <= entry_done && !emit_hdr[`VELO_PKT_HDR_FRAG_LSB];
            ev_rx_frag       <= entry_done && emit_hdr[`VELO_PKT_HDR_FRAG_LSB];
            ev_drop_disabled <= dec_drop && dec_disabled;
            ev_drop_vpid     <= dec_drop && dec_bad_vpid;
            ev_drop_bad      <= dec_drop && dec_bad;
            ev_backpressure  <= dec_wait;
        end
    end
endmodule
`default_nettype wire
