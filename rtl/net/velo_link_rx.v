// Link receiver: decodes the PHY stream {sync, flit}, checks control symbols (CRC-5) and hands
// them to the transmitter and the training logic, receives packets (length from the header),
// checks their CRC-16 with the implicit sequence number, forwards them to the switch input with
// one cycle of latency (cut-through; the last data flit waits for its CRC flit so that last/bad
// are exact), drops duplicates of a replay, keeps the per-VC stored/freed flit counts that the
// transmitter returns as CREDIT and SYNC symbols, and requests NACKs. See docs/net-link.md.
//
// Framing (PKT_HDR, RMA_PKT_HDR): a packet is its header word and its payload area. For TYPE < 2
// (VELO) the area is FRAG_OFF % 4 + FRAG_LEN_M1 + 1 bytes (at most 64); for TYPE >= 2 (RMA) it is
// the 8-bit LEN_M1 (header bits 63:56) + 1 bytes, at most MAX_AREA. TYPE (header bits 19:16)
// arrives in the length field's flit or earlier at every width.
//
// A packet that fails after its first flits went on is ended with bad=1 on its last flit; one that
// is cut short (invalid sync, REPLAY or link down inside it) is padded with zero flits to the length
// its forwarded header announces (zero length field if the header itself was cut), so every packet
// handed to the switch is consistent with its header and can be forwarded as it is (stomped). A
// header announcing more than its type allows (a framing error: only a corrupted or misframed
// header does) is forwarded with its length field cleared and ended bad at that length.
//
// Credit unit: the CREDIT and SYNC symbols carry 7-bit counts in units of CU = 2^CUB flits (CUB > 0
// when VC_DEPTH plus a largest packet exceeds 127 flits). To keep the counts exact, every packet is
// charged a whole number of units: when a packet ends, the flits that round its count up to a
// multiple of CU are added to the stored and the freed count at once (they occupy nothing), so both
// counts are multiples of CU at every packet boundary and the SYNC value is exact.
//
// Epoch: after a reset (and after every link-up with the epoch bit) the receiver has no sequence
// state for the peer: it adopts the sequence number of the first REPLAY it accepts (unsync), and
// at the epoch link-up it rebases its credit counts (freed := 0, stored := what its switch holds).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
module velo_link_rx #(
    parameter integer LINK_W       = 16,  // flit width: 16, 32 or 64
    parameter integer NVC          = 4,   // virtual channels (VC field of PKT_HDR; at most 4)
    parameter integer VC_DEPTH     = 64,  // switch input buffer per VC in flits = credits per VC
    parameter integer MAX_AREA     = 64,  // largest payload area in bytes (RMA packets; 64..256, multiple of 8)
    parameter integer CUB          = 0,   // log2 of the credit unit in flits (CREDIT/SYNC counts; velo_link)
    parameter integer NACK_TIMEOUT = 256, // cycles between NACKs while waiting for a REPLAY
    // 0: the symbol is decoded from phy_rx in the cycle it arrives; 1: (smaller devices,
    // docs/board-guide.md) phy_rx and its control-symbol check (CRC-5) are registered first, one
    // more cycle on the wire, and the NACK timer restarts a cycle later (from registers)
    parameter integer PIPE         = 0
) (
    input  wire                 clk,
    input  wire                 rst,       // synchronous, active high
    input  wire [LINK_W+1:0]    phy_rx,    // {sync[1:0], flit} from the wire, one every cycle
    // packets to the switch input (no back pressure: the credits guarantee room)
    output reg                  rx_valid,
    output reg  [LINK_W-1:0]    rx_data,
    output reg                  rx_last,
    output reg                  rx_bad,    // with rx_last: discard this packet
    output reg  [1:0]           rx_vc,     // VC of the packet (constant within a packet)
    input  wire [NVC-1:0]       rx_free,   // one flit of VC v left the switch input buffer
    // link state
    input  wire                 link_up,   // trained (from the training logic)
    input  wire                 rep_en,    // a REPLAY may be taken: up, or going up this cycle
    input  wire                 epoch,     // pulse: the link goes up in a new epoch
    // decoded symbol of this cycle (combinational from phy_rx)
    output wire                 sym_ok,    // a valid symbol: a data flit (sync code data or stomp) or a control symbol passing its checks
    output wire                 sym_nx,    // PIPE: sym_ok of the next cycle (the word being registered); else sym_ok
    output wire                 ctl_ok,    // a valid control symbol
    output wire [1:0]           ctl_type,  // its LINK_CTL TYPE
    output wire [8:0]           ctl_val,   // its LINK_CTL VALUE
    // state for the transmitter and the training logic
    output wire [6:0]           exp_seq,   // next sequence number expected (ACK, NACK, TS value)
    output wire                 unsync,    // no sequence state for the peer (adopts the next REPLAY)
    output wire [NVC*(7+CUB)-1:0] rcnt,      // per VC: flits stored into the switch, mod 128 units
    output wire [NVC*(7+CUB)-1:0] scnt,      // per VC: the same when the last REPLAY was taken (SYNC value)
    output wire [NVC*(7+CUB)-1:0] fcnt,      // per VC: flits freed by the switch, mod 128 units (CREDIT value)
    output reg                  req_nack,  // pulse: send NACK(exp_seq)
    output reg                  req_sync,  // pulse: send SYNC(v, scnt[v]) for every VC
    // event pulses
    output reg                  ev_crc_err,  // a packet failed its check (CRC, framing, lost flit, overflow)
    output reg                  ev_stomp,    // a stomped packet was accepted (with its bad last flit)
    output reg                  ev_rx_pkt,   // a good packet was accepted (with its last flit; stomped ones not)
    output reg                  ev_ctl_drop  // a control symbol failed its check, or an invalid sync outside a packet
);
    localparam integer HF      = 64 / LINK_W;            // header flits
    localparam integer MAXF    = HF + MAX_AREA * 8 / LINK_W;  // data flits of the largest packet
    localparam integer XW      = $clog2(MAXF + 1);       // flit index within a packet
    localparam integer KW      = 7 + CUB;                // stored / freed counts (mod 128 units)
    localparam integer UW      = (CUB > 0) ? CUB : 1;    // flits of the packet mod CU
    localparam integer LEN_IDX = 56 / LINK_W;            // flit holding the length (header bits 63:56)
    localparam integer LEN_OFF = 56 % LINK_W;            // its position in that flit
    localparam integer LFB     = $clog2(LINK_W / 8);     // log2(bytes per flit)
    localparam integer OFF_IDX = 26 / LINK_W;            // flit holding FRAG_OFF[1:0] (header bits 27:26)
    localparam integer OFF_POS = 26 % LINK_W;            // its position in that flit
    localparam integer TYP_IDX = 16 / LINK_W;            // flit holding TYPE (header bits 19:16)
    localparam integer TYP_POS = 16 % LINK_W;            // its position in that flit
    localparam integer ROOM_I  = VC_DEPTH - MAXF;
    localparam [KW-1:0] ROOM   = ROOM_I[KW-1:0];         // a packet may start while occupancy <= this
    localparam [XW-1:0] HFX    = HF[XW-1:0];
    localparam [XW-1:0] LENIX  = LEN_IDX[XW-1:0];
    localparam [XW-1:0] OFFIX  = OFF_IDX[XW-1:0];
    localparam [XW-1:0] TYPIX  = TYP_IDX[XW-1:0];
    localparam integer AMAX_I = MAX_AREA - 1;
    localparam [8:0]    AMAX   = AMAX_I[8:0];           // largest RMA LEN_M1
    // the length field in its flit: FRAG_LEN_M1 (bits 61:56) of a VELO header, LEN_M1 (63:56) of RMA
    localparam [LINK_W-1:0] LENMASK6 = {{(LINK_W - 6){1'b0}}, 6'h3F} << LEN_OFF;
    localparam [LINK_W-1:0] LENMASK8 = {{(LINK_W - 8){1'b0}}, 8'hFF} << LEN_OFF;
    localparam [15:0]  CINIT   = `VELO_LINK_CRC16_INIT;
    localparam [15:0]  STOMP   = `VELO_LINK_CRC16_STOMP;
    localparam integer NTW     = $clog2(NACK_TIMEOUT + 1);

    `VELO_CHECK_LINK_HALF
    `VELO_CHECK(g_check_vc_depth, VC_DEPTH >= MAXF, "velo_link_rx: VC_DEPTH must hold a largest packet")
    `VELO_CHECK(g_check_nack_timeout, NACK_TIMEOUT >= 2, "velo_link_rx: NACK_TIMEOUT must be at least 2")

    // ------------------------------------------------------------------ symbol decode
    // the control-symbol check of the word on phy_rx (r_*), used at once or (PIPE) registered
    // with the word (px)
    wire [LINK_W-1:0] r_d  = phy_rx[LINK_W-1:0];
    wire r_upper0;  // flit bits above the 16-bit symbol / CRC are zero
    generate
        if (LINK_W > 16) begin : g_up
            assign r_upper0 = ~|r_d[LINK_W-1:16];
        end else begin : g_noup
            assign r_upper0 = 1'b1;
        end
    endgenerate
    wire [4:0] c5;
    velo_crc5 u_c5 (.data(r_d[15:5]), .crc(c5));
    // ACK has no SUB field: its bits must be zero
    wire [8:0]  r_val = r_d[`VELO_LINK_CTL_VALUE];
    wire r_rsvd_ok = (r_d[`VELO_LINK_CTL_TYPE] != `VELO_LINK_CTL_TYPE_ACK) ||
                     (r_val[`VELO_LINK_CTLV_SUB] == 2'b00);
    wire unused_rv = &{1'b0, r_val};
    wire r_ctl_ok  = (phy_rx[LINK_W+1:LINK_W] == `VELO_LINK_SYNC_CTL) && r_upper0 &&
                     (c5 == r_d[`VELO_LINK_CTL_CRC5]) && r_rsvd_ok;
    wire r_sym_ok  = (phy_rx[LINK_W+1:LINK_W] == `VELO_LINK_SYNC_DATA) ||
                     (phy_rx[LINK_W+1:LINK_W] == `VELO_LINK_SYNC_STOMP) || r_ctl_ok;
    wire r_rep     = r_ctl_ok && (r_d[`VELO_LINK_CTL_TYPE] == `VELO_LINK_CTL_TYPE_LINK) &&
                     (r_val[`VELO_LINK_CTLV_SUB] == `VELO_LINK_SUB_REPLAY);
    wire [LINK_W+1:0] px;      // the symbol decoded this cycle
    wire              px_ok;   // ... is a control symbol passing its checks
    wire              px_rep;  // ... is a valid REPLAY
    wire              upper0;  // ... has its flit bits above the 16-bit symbol / CRC zero
    generate
        if (PIPE != 0) begin : g_pipe
            reg [LINK_W+1:0] px_q;
            reg              px_ok_q, px_rep_q, px_up0_q;
            always @(posedge clk) begin
                if (rst) begin
                    px_q     <= {(LINK_W+2){1'b0}};  // "no signal"
                    px_ok_q  <= 1'b0;
                    px_rep_q <= 1'b0;
                    px_up0_q <= 1'b1;
                end else begin
                    px_q     <= phy_rx;
                    px_ok_q  <= r_ctl_ok;
                    px_rep_q <= r_rep;
                    px_up0_q <= r_upper0;
                end
            end
            assign px     = px_q;
            assign px_ok  = px_ok_q;
            assign px_rep = px_rep_q;
            assign upper0 = px_up0_q;
            assign sym_nx = r_sym_ok && !rst;
        end else begin : g_nopipe
            assign px     = phy_rx;
            assign px_ok  = r_ctl_ok;
            assign px_rep = r_rep;
            assign upper0 = r_upper0;
            assign sym_nx = r_sym_ok;  // = sym_ok
        end
    endgenerate
    wire [1:0]        sync = px[LINK_W+1:LINK_W];
    wire [LINK_W-1:0] d    = px[LINK_W-1:0];
    wire is_data  = (sync == `VELO_LINK_SYNC_DATA);
    wire is_ctl   = (sync == `VELO_LINK_SYNC_CTL);
    wire is_sx    = (sync == `VELO_LINK_SYNC_STOMP);  // a stomped packet's CRC flit
    assign ctl_type = d[`VELO_LINK_CTL_TYPE];
    assign ctl_val  = d[`VELO_LINK_CTL_VALUE];
    assign sym_ok = is_data || is_sx || ctl_ok;

    // ------------------------------------------------------------------ state
    reg              wait_rep;   // discarding data until a REPLAY (after an error, link down, reset)
    reg              in_pkt;     // a packet is in progress (also while padding it)
    reg  [XW-1:0]    pos;        // data flits of this packet received (next flit index)
    reg  [XW-1:0]    last_idx;   // index of its last data flit (valid with len_known)
    reg              len_known;
    reg              fwd;        // a new packet, forwarded (else a duplicate, dropped)
    reg  [1:0]       pvc;        // its VC
    reg  [1:0]       off2_q;     // its FRAG_OFF[1:0] (valid once pos > OFF_IDX)
    reg              rma_q;      // its TYPE >= 2: framed by LEN_M1 (valid once pos > TYP_IDX)
    reg  [15:0]      crc;        // CRC over its data flits so far
    reg              hold_v;     // the last data flit is held, waiting for the CRC flit
    reg  [LINK_W-1:0] hold;
    reg              pad;        // emitting filler flits to complete a cut packet
    reg              pnack;      // ... and NACK once it is complete (the packet failed a check)
    reg  [6:0]       exp_q;      // next new sequence number
    reg  [6:0]       chk_seq;    // sequence number of the packet arriving (older than exp_q in a replay)
    reg              adopt;      // no sequence state: the next REPLAY taken sets exp_q as well
    reg              rep_pend;   // a REPLAY arrived while padding
    reg  [6:0]       rep_seq;
    reg              lu_q;       // link_up, last cycle
    reg  [NVC*KW-1:0] rc, fc;    // stored / freed flit counts per VC
    reg  [NVC*KW-1:0] snap;      // rc when the last REPLAY was taken
    reg  [UW-1:0]    cu_n;       // flits of the current packet counted in rc, mod CU
    reg  [NTW-1:0]   ntmr;       // NACK re-send timer

    // the stomp code is valid only where a CRC flit is due (hold_v: the last data flit is held)
    wire sx_ok    = is_sx && in_pkt && hold_v;
    wire bad_sync = !is_data && !is_ctl && !sx_ok;

    assign exp_seq = exp_q;
    assign unsync  = adopt;
    assign rcnt    = rc;
    assign scnt    = snap;
    assign fcnt    = fc;

    wire active  = link_up && !wait_rep && !pad;
    // Where a CRC flit is due the transmitter sends nothing else (its CRC flit goes before every
    // control symbol; only training replaces it, when its link went down): a control code there is
    // a corrupted CRC flit (the stomp code 11 is one sync bit from the control code 10) and ends
    // the packet as an error; it is never a control symbol to act on.
    wire crc_due = active && in_pkt && hold_v;
    assign ctl_ok = px_ok && !crc_due;
    wire down_edge = lu_q && !link_up;
    wire rep_now   = px_rep && !crc_due;
    wire [6:0] rep_e   = ctl_val[`VELO_LINK_CTLV_SEQ];
    wire [6:0] rep_age = exp_q - rep_e;
    wire ad_eff  = adopt || epoch;
    // taken while up (or going up) only: older REPLAYs of the peer must not reach a fresh receiver
    wire rep_ok  = rep_en && rep_now && (ad_eff || !rep_age[6]);
    wire unused_age = &{1'b0, rep_age[5:0]};  // at most 63 packets back (the transmitter's window)

    // CRC of this flit
    wire [15:0] crc_seed = CINIT ^ {9'b0, chk_seq};
    wire [15:0] crc_nx;
    velo_crc16 #(.W(LINK_W)) u_crc (.crc_in(in_pkt ? crc : crc_seed), .data(d), .crc_out(crc_nx));
    // good: data sync code and the CRC; stomped: both stomp marks (sync code and inverted CRC),
    // anything else is a CRC error (replayed)
    wire crc_good  = upper0 && is_data && (d[15:0] == crc);
    wire crc_stomp = upper0 && is_sx && (d[15:0] == (crc ^ STOMP));

    // length of the packet: its payload area is FRAG_OFF % 4 pad bytes plus FRAG_LEN_M1 + 1 bytes
    // (TYPE < 2, at most 64) or LEN_M1 + 1 bytes (TYPE >= 2, at most MAX_AREA); FRAG_OFF[1:0] and
    // TYPE come in the same flit as the length field or earlier
    wire [XW-1:0] cidx     = in_pkt ? pos : {XW{1'b0}};        // index of this flit in the packet
    wire [1:0] off2     = (cidx == OFFIX) ? d[OFF_POS +: 2] : off2_q;
    wire       rma      = (cidx == TYPIX) ? (d[TYP_POS + 1 +: 3] != 3'd0) : rma_q;
    wire [7:0] len8     = d[LEN_OFF +: 8];
    wire [8:0] area_m1  = rma ? {1'b0, len8} : ({3'd0, len8[5:0]} + {7'd0, off2});
    // more than the type allows: a framing error
    wire       ovl      = rma ? (area_m1 > AMAX) : (area_m1 > 9'd63);
    wire [8:0] lidx_9   = {{(9 - XW){1'b0}}, HFX} + (area_m1 >> LFB);
    wire [XW-1:0] lidx_new = lidx_9[XW-1:0];                   // valid unless ovl
    wire [XW-1:0] lz_len   = HFX + (rma ? {XW{1'b0}} : {{(XW-2){1'b0}}, off2 >> LFB});  // length field cleared
    // a packet cut before its length field: the zero fillers make the length field (and FRAG_OFF[1:0]
    // and TYPE, if their flit is missing too) zero
    wire [1:0] off2_cut = (pos > OFFIX) ? off2_q : 2'd0;
    wire       rma_cut  = (pos > TYPIX) && rma_q;
    wire [XW-1:0] lz_cut   = HFX + (rma_cut ? {XW{1'b0}} : {{(XW-2){1'b0}}, off2_cut >> LFB});
    wire [LINK_W-1:0] d_len0 = d & ~(rma ? LENMASK8 : LENMASK6);  // the length flit with its length cleared
    wire unused_l9 = &{1'b0, lidx_9};

    // room in the switch buffer of VC v for a largest packet
    // (d_room: that of the packet's VC; none for a VC >= NVC, only possible with a corrupted header)
    wire [1:0] d_vc = d[`VELO_PKT_HDR_VC];
    reg [NVC-1:0] room_ok;
    reg           d_room;
    integer k;
    always @(*) begin
        d_room = 1'b0;
        for (k = 0; k < NVC; k = k + 1) begin
            room_ok[k] = ((rc[k*KW +: KW] - fc[k*KW +: KW]) <= ROOM);
            if (d_vc == k[1:0]) d_room = room_ok[k];
        end
    end

    // ------------------------------------------------------------------ next state
    reg              n_wait, n_in, n_lk, n_fwd, n_holdv, n_pad, n_pnk, n_rp, n_ad;
    reg  [XW-1:0]    n_pos, n_lidx;
    reg  [1:0]       n_pvc, n_o2;
    reg              n_rma;
    reg  [15:0]      n_crc;
    reg  [LINK_W-1:0] n_hold;
    reg  [6:0]       n_exp, n_chk, n_rs;
    reg              out_valid, out_last, out_bad;   // the flit for the switch (rx_*, registered)
    reg  [LINK_W-1:0] out_data;
    reg  [1:0]       out_vc;
    reg              cnt_dup;    // a dropped duplicate flit: counted stored and freed at once
    reg  [1:0]       dup_vc;
    // this cycle: a CRC error, a stomped packet, a good packet (events); a NACK to send; a REPLAY
    // received (SYNCs to send)
    reg              crc_err_now, stomp_now, pkt_now, nack_now, sync_now;

    always @(*) begin
        n_wait      = wait_rep;  n_in = in_pkt;   n_pos = pos;      n_lidx = last_idx; n_lk = len_known;
        n_fwd       = fwd;        n_pvc = pvc;     n_crc = crc;      n_holdv = hold_v;  n_hold = hold;
        n_pad       = pad;        n_pnk = pnack;   n_exp = exp_q;    n_chk = chk_seq;   n_rp = rep_pend;
        n_rs        = rep_seq;     n_o2 = off2_q;   n_rma = rma_q;    n_ad = epoch ? 1'b1 : adopt;
        out_valid   = 1'b0; out_last = 1'b0; out_bad = 1'b0; out_data = {LINK_W{1'b0}}; out_vc = pvc;
        cnt_dup     = 1'b0; dup_vc = pvc;
        crc_err_now = 1'b0; stomp_now = 1'b0; pkt_now = 1'b0; nack_now = 1'b0; sync_now = 1'b0;

        if (pad) begin
            // one zero filler flit per cycle up to the announced length; the last one is bad
            out_valid = 1'b1;
            n_pos     = pos + 1'b1;
            if (down_edge) begin
                n_rp = 1'b0;
            end else if (rep_ok) begin
                n_rp = 1'b1;
                n_rs = rep_e;
            end
            if (pos == last_idx) begin
                out_last = 1'b1;
                out_bad  = 1'b1;
                n_pad    = 1'b0;
                n_pnk    = 1'b0;
                n_in     = 1'b0;
                if (!down_edge && (rep_pend || rep_ok)) begin
                    n_chk  = rep_ok ? rep_e : rep_seq;
                    if (ad_eff) begin
                        n_exp = n_chk;
                        n_ad  = 1'b0;
                    end
                    n_wait   = 1'b0;
                    n_rp     = 1'b0;
                    sync_now = 1'b1;
                end else if (pnack && link_up && !down_edge) begin
                    // the NACK of a packet that failed, once it is complete: the REPLAY it brings
                    // must not arrive while fillers are still going out (the data behind it would
                    // be lost)
                    nack_now = 1'b1;
                end
            end
        end else if (down_edge || rep_ok || (active && in_pkt && (bad_sync || (hold_v && is_ctl)))) begin
            // the packet in progress (if any) ends here
            if (in_pkt) begin
                n_in = 1'b0;
                if (fwd && hold_v) begin
                    out_valid = 1'b1; out_data = hold; out_last = 1'b1; out_bad = 1'b1;
                end else if (fwd) begin
                    n_in  = 1'b1;
                    n_pad = 1'b1;
                    if (!len_known) begin
                        n_lidx = lz_cut;
                        n_lk   = 1'b1;
                    end
                end
                n_holdv = 1'b0;
            end
            if (down_edge) begin
                n_wait = 1'b1;
            end else if (rep_ok) begin
                if (n_pad) begin
                    n_rp   = 1'b1;
                    n_rs   = rep_e;
                    n_wait = 1'b1;
                end else begin
                    n_chk  = rep_e;
                    if (ad_eff) begin
                        n_exp = rep_e;
                        n_ad  = 1'b0;
                    end
                    n_wait   = 1'b0;
                    sync_now = 1'b1;
                end
            end else begin  // invalid sync inside a packet (a lost flit), or a control code for its CRC flit
                n_wait      = 1'b1;
                crc_err_now = 1'b1;
                if (n_pad) n_pnk = 1'b1;
                else nack_now = 1'b1;
            end
        end else if (active && (is_data || sx_ok)) begin
            if (!in_pkt) begin
                // first flit of a packet: new (forward at once) or a duplicate of a replay (drop)
                if (chk_seq == exp_q && !d_room) begin
                    // no room for it: a corrupted VC or a protocol error; never forwarded
                    n_wait      = 1'b1;
                    crc_err_now = 1'b1;
                    nack_now    = 1'b1;
                end else if (LEN_IDX == 0 && ovl) begin
                    // the first flit holds the length field, and it announces too much
                    n_wait      = 1'b1;
                    crc_err_now = 1'b1;
                    if (chk_seq == exp_q) begin
                        n_in      = 1'b1;
                        n_fwd     = 1'b1;
                        n_pvc     = d_vc;
                        n_pos     = {{(XW-1){1'b0}}, 1'b1};
                        n_pad     = 1'b1;
                        n_pnk     = 1'b1;
                        n_lk      = 1'b1;
                        n_lidx    = lz_len;
                        n_o2      = off2;
                        n_rma     = rma;
                        out_valid = 1'b1; out_data = d_len0; out_vc = d_vc;
                    end else begin
                        cnt_dup  = 1'b1; dup_vc = d_vc;
                        nack_now = 1'b1;
                    end
                end else begin
                    n_in    = 1'b1;
                    n_fwd   = (chk_seq == exp_q);
                    n_pvc   = d_vc;
                    n_pos   = {{(XW-1){1'b0}}, 1'b1};
                    n_crc   = crc_nx;
                    n_lk    = (LEN_IDX == 0);
                    n_lidx  = lidx_new;
                    n_holdv = 1'b0;
                    if (OFF_IDX == 0) n_o2 = off2;
                    if (TYP_IDX == 0) n_rma = rma;
                    if (chk_seq == exp_q) begin
                        out_valid = 1'b1; out_data = d; out_vc = d_vc;
                    end else begin
                        cnt_dup = 1'b1; dup_vc = d_vc;
                    end
                end
            end else if (hold_v) begin
                // the CRC flit
                n_in    = 1'b0;
                n_holdv = 1'b0;
                if (fwd) begin
                    out_valid = 1'b1; out_data = hold; out_last = 1'b1; out_bad = !crc_good;
                end
                if (crc_good || crc_stomp) begin
                    n_chk = chk_seq + 1'b1;
                    if (fwd) begin
                        n_exp     = exp_q + 1'b1;
                        pkt_now   = crc_good;
                        stomp_now = crc_stomp;
                    end
                end else begin
                    n_wait      = 1'b1;
                    crc_err_now = 1'b1;
                    nack_now    = 1'b1;
                end
            end else if (pos == LENIX && ovl) begin
                // the length field announces more than the type allows: a framing error. The header
                // goes on with its length field cleared and the packet ends bad at that length.
                n_wait      = 1'b1;
                crc_err_now = 1'b1;
                if (fwd) begin
                    out_valid = 1'b1;
                    out_data  = d_len0;
                    n_pos     = pos + 1'b1;
                    n_pad     = 1'b1;
                    n_pnk     = 1'b1;
                    n_lk      = 1'b1;
                    n_lidx    = lz_len;
                    if (pos == OFFIX) n_o2 = off2;
                    if (pos == TYPIX) n_rma = rma;
                end else begin
                    cnt_dup  = 1'b1;
                    n_in     = 1'b0;
                    nack_now = 1'b1;
                end
            end else begin
                n_crc = crc_nx;
                n_pos = pos + 1'b1;
                if (pos == OFFIX) n_o2 = off2;
                if (pos == TYPIX) n_rma = rma;
                if (pos == LENIX) begin
                    n_lk   = 1'b1;
                    n_lidx = lidx_new;
                end
                if (len_known && pos == last_idx) begin
                    n_holdv = 1'b1;
                    n_hold  = d;
                    if (!fwd) begin
                        cnt_dup = 1'b1;
                    end
                end else if (fwd) begin
                    out_valid = 1'b1; out_data = d;
                end else begin
                    cnt_dup = 1'b1;
                end
            end
        end
    end

    // ------------------------------------------------------------------ registers
    // Every flit handed to the switch (or dropped as a duplicate) counts as stored; when a packet
    // ends, the flits that round its count up to a multiple of CU count as stored and freed at once
    wire          cred    = out_valid || cnt_dup;  // a flit counted this cycle (at most one)
    wire [1:0]    cred_vc = out_valid ? out_vc : dup_vc;
    wire [UW-1:0] cu_nx   = cu_n + {{(UW-1){1'b0}}, cred};  // flits of the packet so far, mod CU
    wire          p_end   = !n_in;                          // no packet in progress after this cycle
    wire [UW-1:0] rnd_n   = (CUB > 0 && p_end) ? (~cu_nx + 1'b1) : {UW{1'b0}};  // (-flits) mod CU
    wire [1:0]    end_vc  = cred ? cred_vc : pvc;
    reg [NVC*KW-1:0] rc_nx, fc_nx;
    reg [KW-1:0]     held, adj, rnd_v;
    integer v;
    always @(*) begin
        for (v = 0; v < NVC; v = v + 1) begin
            // an epoch link-up rebases the counts: stored - freed stays what the switch holds, freed
            // restarts near 0, and stored is made congruent to the packet in progress (mod CU) so
            // that it is a multiple of CU again when that packet ends
            held  = rc[v*KW +: KW] - fc[v*KW +: KW];
            adj   = {KW{1'b0}};
            if (CUB > 0) adj[UW-1:0] = cu_n - held[UW-1:0];
            rnd_v = {KW{1'b0}};
            if (end_vc == v[1:0]) rnd_v[UW-1:0] = rnd_n;
            rc_nx[v*KW +: KW] = (epoch ? held + adj : rc[v*KW +: KW]) + rnd_v
                                + {{(KW-1){1'b0}}, cred && (cred_vc == v[1:0])};
            fc_nx[v*KW +: KW] = (epoch ? adj : fc[v*KW +: KW]) + rnd_v
                                + {{(KW-1){1'b0}}, rx_free[v]} + {{(KW-1){1'b0}}, cnt_dup && (dup_vc == v[1:0])};
        end
    end

    always @(posedge clk) begin
        if (rst) begin
            wait_rep  <= 1'b1;
            in_pkt    <= 1'b0;
            pos       <= {XW{1'b0}};
            last_idx  <= {XW{1'b0}};
            len_known <= 1'b0;
            fwd       <= 1'b0;
            pvc       <= 2'd0;
            off2_q    <= 2'd0;
            rma_q     <= 1'b0;
            crc       <= 16'd0;
            hold_v    <= 1'b0;
            pad       <= 1'b0;
            pnack     <= 1'b0;
            exp_q     <= 7'd0;
            chk_seq   <= 7'd0;
            adopt     <= 1'b1;
            rep_pend  <= 1'b0;
            rep_seq   <= 7'd0;
            lu_q      <= 1'b0;
            rc        <= {NVC*KW{1'b0}};
            fc        <= {NVC*KW{1'b0}};
            snap      <= {NVC*KW{1'b0}};
            cu_n      <= {UW{1'b0}};
            ntmr      <= {NTW{1'b0}};
            rx_valid  <= 1'b0;
            rx_last   <= 1'b0;
            rx_bad    <= 1'b0;
            rx_vc     <= 2'd0;
            req_nack  <= 1'b0;
            req_sync  <= 1'b0;
            ev_crc_err  <= 1'b0;
            ev_stomp    <= 1'b0;
            ev_rx_pkt   <= 1'b0;
            ev_ctl_drop <= 1'b0;
        end else begin
            wait_rep  <= n_wait;
            in_pkt    <= n_in;
            pos       <= n_pos;
            off2_q    <= n_o2;
            rma_q     <= n_rma;
            last_idx  <= n_lidx;
            len_known <= n_lk;
            fwd       <= n_fwd;
            pvc       <= n_pvc;
            crc       <= n_crc;
            hold_v    <= n_holdv;
            pad       <= n_pad;
            pnack     <= n_pnk;
            exp_q     <= n_exp;
            chk_seq   <= n_chk;
            adopt     <= n_ad;
            rep_pend  <= n_rp;
            rep_seq   <= n_rs;
            lu_q      <= link_up;
            rc        <= rc_nx;
            fc        <= fc_nx;
            cu_n      <= p_end ? {UW{1'b0}} : cu_nx;
            if (sync_now) snap <= rc_nx;  // R up to the REPLAY: what the SYNCs report
            // NACK at once on an error, then every NACK_TIMEOUT cycles until the REPLAY (PIPE: the
            // timer restarts from registers, a cycle after the NACK or the end of the wait, so that
            // the receiver's next-state logic does not reach it; the timeout NACK comes
            // NACK_TIMEOUT + 1 cycles after the previous one)
            if (!link_up || ((PIPE != 0) ? (!wait_rep || req_nack) : (!n_wait || nack_now)) ||
                ntmr == NACK_TIMEOUT[NTW-1:0] - 1'b1) begin
                ntmr <= {NTW{1'b0}};
            end else if (wait_rep && !pad) begin
                ntmr <= ntmr + 1'b1;
            end
            req_nack    <= link_up && (nack_now || (wait_rep && n_wait && !pad && ntmr == NACK_TIMEOUT[NTW-1:0] - 1'b1));
            req_sync    <= sync_now;
            rx_valid    <= out_valid;
            rx_last     <= out_last;
            rx_bad      <= out_bad;
            rx_vc       <= out_vc;
            ev_crc_err  <= crc_err_now;
            ev_stomp    <= stomp_now;
            ev_rx_pkt   <= pkt_now;
            ev_ctl_drop <= link_up && ((is_ctl && !px_ok && !crc_due) || (bad_sync && !(active && in_pkt)));
        end
    end

    // data needs no reset (qualified by rx_valid / hold_v)
    always @(posedge clk) begin
        rx_data <= out_data;
        hold    <= n_hold;
    end
endmodule
`default_nettype wire
