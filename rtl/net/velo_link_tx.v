// Link transmitter: replay buffer (go-back-N), packet CRC with the implicit sequence number,
// credits per VC, control symbols (ACK, CREDIT, NACK, REPLAY, SYNC, training) and the replay
// handshake. One symbol per cycle on phy_tx, registered; never silent. See docs/net-link.md.
//
// Every flit accepted from the switch is written into the replay RAM and sent from there; when
// the sender has caught up with the writer, the flit goes from tx_data straight into the PHY
// register (bypass), so a packet costs no latency for being buffered. The per-sequence RAM holds
// {VC, end address} of every packet accepted, for the cumulative ACK that frees the buffer.
// Every write checks the room in the buffer (tx_ready, and padding waits), so no unacknowledged
// flit is ever overwritten; a header announcing more payload area than its type allows (more than
// 64 bytes for TYPE < 2, more than MAX_AREA for TYPE >= 2: docs/net-link.md) has its length field
// cleared and the packet goes out stomped.
//
// Credits (flits, per VC): T = flits admitted (accepted from the switch or queued for replay),
// S = flits sent, F = flits freed by the receiver's switch (CREDIT). tx_start_ok needs room for a
// largest packet in T - F (so that a started packet never waits); a packet's first flit is sent
// only while S - F leaves room for it. S never undercounts what the receiver holds (it counts
// every flit sent, and a packet abandoned mid-way is charged the fillers the receiver may pad it
// with), so the replayed data go out right behind the REPLAY. The receiver's
// SYNC(v, R), R = its count when the REPLAY arrived, then repairs what an error episode leaked:
// S := R + flits of VC v sent since the REPLAY, T moved by the same amount. Internally the counts
// are wider than the 7-bit wire values (which are taken modulo 128 relative to F). The wire values
// count units of CU = 2^CUB flits; every packet is charged a whole number of units (T when its last
// flit is written, S when its CRC flit goes out, as the receiver does when it ends), so F, and S
// and T at packet boundaries, are multiples of CU and the counts settle back exactly.
//
// Epoch (a link-up with the epoch bit, after a reset of either end): the replay buffer's complete
// packets are discarded (counted by the caller), F := 0 and S := VC_DEPTH (the peer's buffers may
// hold anything up to VC_DEPTH of the old epoch: nothing is sent before its SYNC says how much).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
module velo_link_tx #(
    parameter integer LINK_W         = 16,   // flit width: 16, 32 or 64
    parameter integer NVC            = 4,    // virtual channels (at most 4)
    parameter integer VC_DEPTH       = 64,   // receiver buffer per VC in flits (credits)
    parameter integer MAX_AREA       = 64,   // largest payload area in bytes (RMA packets; 64..256, multiple of 8)
    parameter integer CUB            = 0,    // log2 of the credit unit in flits (CREDIT/SYNC counts; velo_link)
    parameter integer REPLAY_DEPTH   = 256,  // replay buffer in flits (power of two, >= 2 largest packets)
    parameter integer REPLAY_TIMEOUT = 512,  // cycles without ACK progress on sent packets before a replay
    parameter integer SYNC_TIMEOUT   = 256,  // cycles after a REPLAY before it is repeated if a SYNC is missing
    parameter integer SYNC_RETRIES   = 4,    // REPLAYs answered by no SYNC at all before the link is declared down
    parameter integer ACK_URGENT     = 8,    // packets received but not acknowledged that make an ACK urgent
    parameter integer CREDIT_MARGIN  = 8,    // flits of slack: CREDIT is urgent when the peer may run short
    parameter integer CTL_AGE        = 32,   // cycles a changed ACK/CREDIT value may wait for an idle slot
    // 0: a flit written while the sender has caught up is sent in the same cycle; 1: (smaller
    // devices, docs/board-guide.md) it goes through the aux register first, one cycle later, so
    // that the switch's handshake does not reach the slot choice, the ACK/CREDIT pending and
    // urgent flags of the slot choice are registered (a change is seen one cycle later), and so is
    // the credit check of a packet's first flit (S - F <= ROOM - CU of the last cycle: S grows by
    // at most CU flits a cycle, F never shrinks but at an epoch; none in the cycle after a SYNC or
    // an epoch moved the counts)
    parameter integer PIPE           = 0
) (
    input  wire                 clk,
    input  wire                 rst,          // synchronous, active high
    output wire [LINK_W+1:0]    phy_tx,       // {sync[1:0], flit} to the wire, one every cycle
    // packets from the switch output port
    input  wire                 tx_valid,
    output wire                 tx_ready,
    input  wire [LINK_W-1:0]    tx_data,
    input  wire                 tx_last,
    input  wire                 tx_bad,       // with tx_last: send the packet stomped
    output reg  [NVC-1:0]       tx_start_ok,  // a packet of VC v may start (credits, buffer room, link up)
    // link state (training logic)
    input  wire                 link_up,      // trained
    input  wire                 ep,           // epoch bit: sent in TS symbols; while up, this link-up began an epoch
    input  wire                 heard,        // training: the peer is heard (send TS2, else TS1)
    input  wire [5:0]           peer_seq,     // the peer's expected sequence number mod 64 (from its TS)
    output wire                 ts2_sent,     // a TS2 goes out this cycle
    output reg                  retry_fail,   // pulse: SYNC_RETRIES REPLAYs in a row answered by no SYNC
    output wire                 disc_ld,      // pulse: an epoch link-up discards disc_num packets
    output wire [6:0]           disc_num,
    // control symbol received this cycle (receiver's decode)
    input  wire                 ctl_ok,
    input  wire [1:0]           ctl_type,
    input  wire [8:0]           ctl_val,
    // receiver state and requests
    input  wire [6:0]           rx_exp,       // next expected sequence number
    input  wire [NVC*(7+CUB)-1:0] rx_rcnt,    // flits stored per VC, now (mod 128 units)
    input  wire [NVC*(7+CUB)-1:0] rx_scnt,    // flits stored per VC when the last REPLAY arrived (SYNC values)
    input  wire [NVC*(7+CUB)-1:0] rx_fcnt,    // flits freed per VC (CREDIT values)
    input  wire                 req_nack,     // pulse: send NACK(rx_exp)
    input  wire                 req_sync,     // pulse: send SYNC for every VC
    // event pulses
    output reg                  ev_nack,      // a NACK went out
    output reg                  ev_replay     // a REPLAY went out (a replay starts)
);
    localparam integer PW    = LINK_W + 2;
    localparam integer HF    = 64 / LINK_W;
    localparam integer MAXF  = HF + MAX_AREA * 8 / LINK_W;  // data flits of the largest packet
    localparam integer CU    = 1 << CUB;                    // credit unit in flits
    localparam integer MAXC  = (MAXF + CU - 1) / CU * CU;   // ... the credits it is charged
    localparam integer KW    = 7 + CUB;                     // receiver counts (mod 128 units)
    localparam integer UW    = (CUB > 0) ? CUB : 1;         // flits of a packet mod CU
    localparam integer XW    = $clog2(MAXF + 1);            // flit index within a packet
    localparam integer RA    = $clog2(REPLAY_DEPTH);
    localparam integer CW    = (RA + 2 > KW + 2) ? RA + 2 : KW + 2;  // internal credit counters
    localparam integer NI    = NVC + 1;                     // ACK/CREDIT items: 0 = ACK, 1 + v = CREDIT(v)
    localparam integer TMAX  = (REPLAY_TIMEOUT > SYNC_TIMEOUT) ? REPLAY_TIMEOUT : SYNC_TIMEOUT;
    localparam integer TMW   = $clog2(TMAX + 1);
    localparam integer AGW   = $clog2(CTL_AGE + 1);
    localparam integer RTW   = $clog2(SYNC_RETRIES + 1);
    localparam integer LEN_IDX = 56 / LINK_W;                 // flit holding the length (header bits 63:56)
    localparam integer LEN_OFF = 56 % LINK_W;                 // its position in that flit
    localparam integer LFB     = $clog2(LINK_W / 8);          // log2(bytes per flit)
    localparam integer OFF_IDX = 26 / LINK_W;                 // flit holding FRAG_OFF[1:0] (header bits 27:26)
    localparam integer OFF_POS = 26 % LINK_W;                 // its position in that flit
    localparam integer TYP_IDX = 16 / LINK_W;                 // flit holding TYPE (header bits 19:16)
    localparam integer TYP_POS = 16 % LINK_W;                 // its position in that flit
    localparam [XW-1:0] HFX    = HF[XW-1:0];
    localparam [XW-1:0] LENIX  = LEN_IDX[XW-1:0];
    localparam [XW-1:0] OFFIX  = OFF_IDX[XW-1:0];
    localparam [XW-1:0] TYPIX  = TYP_IDX[XW-1:0];
    localparam integer AMAX_I = MAX_AREA - 1;
    localparam [8:0]    AMAX   = AMAX_I[8:0];                // largest RMA LEN_M1
    // the length field in its flit: FRAG_LEN_M1 (bits 61:56) of a VELO header, LEN_M1 (63:56) of RMA
    localparam [LINK_W-1:0] LENMASK6 = {{(LINK_W - 6){1'b0}}, 6'h3F} << LEN_OFF;
    localparam [LINK_W-1:0] LENMASK8 = {{(LINK_W - 8){1'b0}}, 8'hFF} << LEN_OFF;
    localparam integer ROOM_I  = VC_DEPTH - MAXC;
    localparam integer BROOM_I = REPLAY_DEPTH - MAXF;
    localparam integer URG_I   = ROOM_I - CREDIT_MARGIN;
    localparam [CW-1:0] ROOM   = ROOM_I[CW-1:0];            // credits: start while T - F <= ROOM
    localparam integer ROOMP_I = (ROOM_I >= CU) ? ROOM_I - CU : 0;
    localparam [CW-1:0] ROOMP  = ROOMP_I[CW-1:0];           // PIPE: registered first-flit check (velo_link: ROOM >= CU)
    localparam [CW-1:0] VCD    = VC_DEPTH[CW-1:0];
    localparam [2:0]    NVC3   = NVC[2:0];
    localparam [RA:0]   BROOM  = BROOM_I[RA:0];             // replay buffer: start while used <= BROOM
    localparam [RA:0]   RDEPTH = REPLAY_DEPTH[RA:0];
    localparam [KW:0]   CURG   = (URG_I < 0) ? {(KW+1){1'b0}} : URG_I[KW:0];
    localparam [6:0]    AURG   = ACK_URGENT[6:0];
    localparam [TMW-1:0] RTO   = REPLAY_TIMEOUT[TMW-1:0] - 1'b1;
    localparam [TMW-1:0] STO   = SYNC_TIMEOUT[TMW-1:0] - 1'b1;
    localparam [AGW-1:0] AGE   = CTL_AGE[AGW-1:0];
    localparam [RTW-1:0] RETR  = SYNC_RETRIES[RTW-1:0];

    `VELO_CHECK_LINK_HALF
    `VELO_CHECK(g_check_vc_depth, VC_DEPTH >= MAXC, "velo_link_tx: VC_DEPTH must hold a largest packet's credits")
    `VELO_CHECK(g_check_replay_depth, REPLAY_DEPTH >= 2 * MAXF && (REPLAY_DEPTH & (REPLAY_DEPTH - 1)) == 0, "velo_link_tx: REPLAY_DEPTH must be a power of two, at least two largest packets")
    `VELO_CHECK(g_check_replay_timeout, REPLAY_TIMEOUT >= 2, "velo_link_tx: REPLAY_TIMEOUT must be at least 2")
    `VELO_CHECK(g_check_sync_timeout, SYNC_TIMEOUT >= 2, "velo_link_tx: SYNC_TIMEOUT must be at least 2")
    `VELO_CHECK(g_check_sync_retries, SYNC_RETRIES >= 1, "velo_link_tx: SYNC_RETRIES must be at least 1")
    `VELO_CHECK(g_check_ack_urgent, ACK_URGENT >= 1 && ACK_URGENT <= 62, "velo_link_tx: ACK_URGENT must be 1..62 (packets outstanding)")
    `VELO_CHECK(g_check_credit_margin, CREDIT_MARGIN >= 0, "velo_link_tx: CREDIT_MARGIN must not be negative")
    `VELO_CHECK(g_check_ctl_age, CTL_AGE >= 1, "velo_link_tx: CTL_AGE must be at least 1")
    localparam [15:0]   CINIT  = `VELO_LINK_CRC16_INIT;
    localparam [15:0]   STOMP  = `VELO_LINK_CRC16_STOMP;
    localparam [1:0]    SY_D   = `VELO_LINK_SYNC_DATA;
    localparam [1:0]    SY_C   = `VELO_LINK_SYNC_CTL;
    localparam [1:0]    SY_S   = `VELO_LINK_SYNC_STOMP;

    localparam [1:0] ST_TRAIN = 2'd0;  // link down: training symbols only
    localparam [1:0] ST_ACKW  = 2'd1;  // replay pending: finish freeing acknowledged packets, then REPLAY
    localparam [1:0] ST_WSYNC = 2'd2;  // REPLAY sent, data flowing; waiting for the SYNC of every VC
    localparam [1:0] ST_SEND  = 2'd3;  // normal operation

    localparam [2:0] K_TS = 3'd0, K_CRC = 3'd1, K_REP = 3'd2, K_NACK = 3'd3, K_SYNC = 3'd4,
                     K_DATA = 3'd5, K_CTL = 3'd6;

    reg [1:0]        st;
    reg              lu_q;
    // replay buffer
    reg [RA:0]       wr_ptr, rd_ptr, tail;
    reg              acc_in;      // a packet is being written (from the switch, or padded)
    reg [XW-1:0]     w_pos;       // index of the next flit written in it
    reg              w_lk;        // its length is known (length field seen)
    reg [XW-1:0]     w_lidx;      // index of its last data flit
    reg [1:0]        w_off2q;     // its FRAG_OFF[1:0]
    reg              w_rmaq;      // its TYPE >= 2 (framed by LEN_M1)
    reg              w_ovlq;      // its header announced too much (length cleared): send it stomped
    reg              wpad;        // writing zero fillers (the switch ended it early)
    reg              wdrop;       // dropping flits past its length
    reg [1:0]        acc_vc;
    reg [6:0]        done_seq;    // sequence number of the next packet to complete at the write side
    reg [6:0]        ack_seq;     // oldest unacknowledged packet (buffer freed up to it)
    reg [6:0]        ack_tgt;     // acknowledged up to here (freeing catches up one packet per cycle)
    reg              ack_busy;    // a per-sequence RAM read is in flight
    reg [NVC*(RA+1)-1:0] ucnt;    // flits per VC in the buffer from tail
    reg [NVC*CW-1:0] tcnt, scnt, fcnt;
    reg [NVC*CW-1:0] srep;        // S of every VC when the last REPLAY went out
    // sender
    reg              rv;          // the replay RAM output holds the flit at rd_ptr
    reg              av;          // aux holds the flit at rd_ptr
    reg [PW-1:0]     aux;
    reg              s_in;        // a packet is being sent (first flit out, last not yet)
    reg [1:0]        s_vc;
    reg [XW-1:0]     s_pos;       // its flits sent (kept with the CRC flit due)
    reg [1:0]        s_off2q;     // its FRAG_OFF[1:0] (valid once s_pos > OFFIX)
    reg              s_rmaq;      // its TYPE >= 2 (valid once s_pos > TYPIX)
    reg [XW-1:0]     s_lidx;      // index of its last data flit (valid once s_pos > LENIX)
    reg [15:0]       crc_s;
    reg              crc_pend;    // the CRC flit is due
    reg              bad_s;       // ... and stomped
    reg [6:0]        snd_seq;     // sequence number of the packet being / next sent
    // replay handshake
    reg [NVC-1:0]    sync_got;    // SYNCs received since the last REPLAY
    reg              abandon;     // ACKW on a NACK: drop the packet being sent (the receiver discards it)
    reg              ab_pad;      // ... and the NACK names that packet: the receiver may have padded it
    reg [TMW-1:0]    tmr;
    reg [RTW-1:0]    retries;     // REPLAYs in a row answered by no SYNC
    // control symbols
    reg              nack_pend;
    reg [NVC-1:0]    sync_pend;   // SYNCs still to send
    reg              sync_two;    // ... and then the set once more (each SYNC goes out twice)
    reg [6:0]        ack_sent;
    reg [NVC*7-1:0]  fsent;       // CREDIT values (units) last sent
    reg [NI-1:0]     dirty;       // sent once since it changed: repeat it (a lost symbol is repaired)
    reg [3:0]        rr;          // rotation among the ACK/CREDIT items
    reg [AGW-1:0]    age;
    reg [PW-1:0]     phy_q;

    assign phy_tx = phy_q;

    // ------------------------------------------------------------------ received control symbols
    wire [6:0] ctl_seq       = ctl_val[`VELO_LINK_CTLV_SEQ];
    wire [1:0] ctl_sub       = ctl_val[`VELO_LINK_CTLV_SUB];  // LINK sub type, or VC
    wire       ctl_is_ack    = ctl_ok && ctl_type == `VELO_LINK_CTL_TYPE_ACK;
    wire       ctl_is_nack   = ctl_ok && ctl_type == `VELO_LINK_CTL_TYPE_LINK && ctl_sub == `VELO_LINK_SUB_NACK;
    wire       ctl_is_credit = ctl_ok && ctl_type == `VELO_LINK_CTL_TYPE_CREDIT;
    wire       ctl_is_sync   = ctl_ok && ctl_type == `VELO_LINK_CTL_TYPE_SYNC;

    // a sequence number inside [ack_tgt, done_seq]: a valid ACK / NACK
    wire [6:0]  win_n  = done_seq - ack_tgt;
    wire [6:0]  seq_d  = ctl_seq - ack_tgt;
    wire        seq_in = (seq_d <= win_n);
    // the peer's TS value is mod 64: the window holds at most 64 values, so it names one of them
    wire [5:0] peer_d = peer_seq - ack_tgt[5:0];
    wire       peer_in = ({1'b0, peer_d} <= win_n);

    // ------------------------------------------------------------------ write side
    // Packets are written as their header's length says (the receiver frames by it): a packet the
    // switch ends early is padded with zero flits (a zero length field if it ends before that field;
    // tx_ready is low meanwhile), one that goes on past its length is cut there (the rest is taken
    // and dropped); a header announcing more payload area than its type allows gets its length field
    // cleared and is cut or padded to that. All of them go out stomped. A consistent switch causes
    // none.
    // used = max(wr_ptr - rd_ptr, wr_ptr - tail) (rd behind tail while resending duplicates) never
    // exceeds RDEPTH, so "used == RDEPTH" is "either distance is RDEPTH", and "used <= BROOM" is
    // "both are": equality tests on the pointers and two independent comparisons, no compare-and-
    // select of the two distances in front of tx_ready and tx_start_ok (timing)
    wire [RA:0]      dist_t  = wr_ptr - tail;
    wire [RA:0]      dist_r  = wr_ptr - rd_ptr;
    wire             full_t  = ((wr_ptr ^ tail) == RDEPTH);               // wr_ptr - tail == RDEPTH
    wire             full_r  = ((wr_ptr ^ rd_ptr) == RDEPTH);
    wire             room    = !full_t && !full_r;                       // every write checks it: used <= RDEPTH
    wire             broom   = (dist_t <= BROOM) && (dist_r <= BROOM);   // used <= BROOM
    assign tx_ready = room && !wpad;
    wire             acc     = tx_valid && tx_ready;
    wire [XW-1:0]    w_idx   = acc_in ? w_pos : {XW{1'b0}};         // index of this flit in its packet
    wire             w_lenf  = (w_idx == LENIX);                    // it holds the length field
    // FRAG_OFF[1:0] and TYPE >= 2 as far as known (zero until their flit: a cut header reads as
    // zero there)
    wire [1:0]       w_off2  = (w_idx == OFFIX) ? tx_data[OFF_POS +: 2] : ((w_idx > OFFIX) ? w_off2q : 2'd0);
    wire             w_rma   = (w_idx == TYPIX) ? (tx_data[TYP_POS + 1 +: 3] != 3'd0) : ((w_idx > TYPIX) && w_rmaq);
    // payload area: FRAG_OFF % 4 pad bytes plus FRAG_LEN_M1 + 1 bytes (PKT_HDR, TYPE < 2, at most
    // 64), or LEN_M1 + 1 bytes (RMA_PKT_HDR, TYPE >= 2, at most MAX_AREA)
    wire [7:0]       w_len8  = tx_data[LEN_OFF +: 8];
    wire [8:0]       w_am1   = w_rma ? {1'b0, w_len8} : ({3'd0, w_len8[5:0]} + {7'd0, w_off2});
    wire             w_ovl   = w_lenf && (w_rma ? (w_am1 > AMAX) : (w_am1 > 9'd63));  // framing error
    wire [8:0]       w_ln9   = {{(9 - XW){1'b0}}, HFX} + (w_am1 >> LFB);
    // last flit with the length field cleared
    wire [XW-1:0]    w_lz    = HFX + (w_rma ? {XW{1'b0}} : {{(XW-2){1'b0}}, w_off2 >> LFB});
    wire [XW-1:0]    w_lnew  = w_ovl ? w_lz : w_ln9[XW-1:0];
    wire             unused_l9 = &{1'b0, w_ln9};
    wire             w_lk_n  = w_lk || w_lenf;
    wire [XW-1:0]    w_li_n  = w_lenf ? w_lnew : w_lidx;
    // The header's last flit. The length field is in the header's last flit (LENIX = HF - 1) and a
    // packet's last flit is at HF or later (w_lnew >= HFX), so the flit holding the length is never
    // the last: w_atl needs the length known from an earlier flit (w_lk, which implies acc_in, so
    // w_idx = w_pos) and is a comparison of two registers, not the length parse of this cycle
    // (timing). Padding (wpad implies w_lk) ends on the same comparison.
    wire             w_peq   = (w_pos == w_lidx);
    wire             w_atl   = w_lk && w_peq;                       // ... or the last filler
    wire             w_early = tx_last && !w_atl;                   // ends before its length
    wire             w_en    = (wpad && room) || (acc && !wdrop);   // a flit is written this cycle
    wire             w_bad   = wpad ? w_peq : (w_atl && (w_ovlq || !(tx_last && !tx_bad)));
    wire [LINK_W-1:0] w_dat  = wpad ? {LINK_W{1'b0}} : (w_ovl ? (tx_data & ~(w_rma ? LENMASK8 : LENMASK6)) : tx_data);
    wire [PW-1:0]    w_word  = {w_bad, w_atl, w_dat};
    wire [1:0]       avc     = (acc_in || wpad) ? acc_vc : tx_data[`VELO_PKT_HDR_VC];

    // per-sequence RAM: {VC, end address} of every accepted packet, read for the ACKs
    wire [6:0]    ack_nx = ack_seq + 1'b1;
    wire          sr_re  = ack_busy ? (ack_nx != ack_tgt) : (ack_seq != ack_tgt);
    wire [6:0]    sr_ra  = ack_busy ? ack_nx : ack_seq;
    wire [RA+2:0] sr_rd;
    velo_sdp_ram #(.W(RA + 3), .ADDR_W(7)) u_seq (
        .clk(clk), .we(w_en && w_atl), .waddr(done_seq), .wdata({avc, wr_ptr + 1'b1}),
        .re(sr_re), .raddr(sr_ra), .rdata(sr_rd));
    wire [1:0]  f_vc  = sr_rd[RA+2:RA+1];
    wire [RA:0] f_end = sr_rd[RA:0];
    wire [RA:0] f_len = f_end - tail;
    // credit rounding (units of CU flits): a packet is charged its flits rounded up to a multiple of
    // CU, in T when its last flit is written, in S when its CRC flit goes out, and in the replay
    // buffer's per-VC count (ucnt) from its last write until it is freed
    wire [UW-1:0] w_cidx = wpad ? w_pos[UW-1:0] : w_idx[UW-1:0];  // index of the flit written, mod CU
    wire [UW-1:0] w_rnd  = (CUB > 0 && w_en && w_atl) ? ~w_cidx : {UW{1'b0}};  // (-(idx+1)) mod CU
    wire [UW-1:0] f_rnd  = (CUB > 0) ? (~f_len[UW-1:0] + 1'b1) : {UW{1'b0}};            // (-len) mod CU
    wire [RA:0]   f_lenr = f_len + {{(RA+1-UW){1'b0}}, f_rnd};
    wire        ack_done = !ack_busy && (ack_seq == ack_tgt);

    // replay RAM: {bad, last, data}
    reg          rb_re;
    reg [RA-1:0] rb_ra;
    wire [PW-1:0] rb_rd;
    velo_sdp_ram #(.W(PW), .ADDR_W(RA)) u_rb (
        .clk(clk), .we(w_en), .waddr(wr_ptr[RA-1:0]), .wdata(w_word),
        .re(rb_re), .raddr(rb_ra), .rdata(rb_rd));

    // ------------------------------------------------------------------ sender
    wire          caught = (rd_ptr == wr_ptr);
    wire          direct = caught && w_en;
    wire          cur_v  = rv || av || (direct && PIPE == 0);
    wire [PW-1:0] cur    = rv ? rb_rd : ((av || PIPE != 0) ? aux : w_word);
    wire [1:0]    cur_vc = s_in ? s_vc : cur[1:0];
    // S - F <= ROOM of every VC from the registers, then the one of cur_vc (the comparisons do not
    // wait for the flit to be chosen); a VC >= NVC has no counts, S - F reads 0 there as before.
    // PIPE: the registered check (sf_okq, at the counters below)
    reg  [NVC-1:0] sf_ok, sf_okp, sf_okq;
    reg            cur_sf_ok;
    integer i;
    always @(*) begin
        cur_sf_ok = 1'b1;
        for (i = 0; i < NVC; i = i + 1) begin
            sf_ok[i]  = (scnt[i*CW +: CW] - fcnt[i*CW +: CW] <= ROOM);
            sf_okp[i] = (scnt[i*CW +: CW] - fcnt[i*CW +: CW] <= ROOMP);
            if (cur_vc == i[1:0]) cur_sf_ok = (PIPE != 0) ? sf_okq[i] : sf_ok[i];
        end
    end
    wire sending  = (st == ST_SEND) || (st == ST_WSYNC);
    // a replay on a timeout first finishes the packet being sent: a REPLAY inside a packet would
    // make the receiver pad it, and the replayed data behind the REPLAY would be lost meanwhile
    wire finish   = (st == ST_ACKW) && s_in && !abandon;
    wire data_ok  = (sending || finish) && cur_v && (s_in || cur_sf_ok);

    wire [15:0] crc_nx;
    velo_crc16 #(.W(LINK_W)) u_crc (
        .crc_in(s_in ? crc_s : (CINIT ^ {9'b0, snd_seq})), .data(cur[LINK_W-1:0]), .crc_out(crc_nx));

    // The framing of the packet being sent, read as the receiver reads it (the buffered header
    // never announces more than its type allows: the write side cleared such a length field). A
    // packet abandoned after its first flit (a NACK naming it, the link going down) may have been
    // cut at the receiver and padded with fillers the transmitter never sends: up to the length its
    // header announces, or, cut before the length field, to the length of a zero length field
    // (and zero FRAG_OFF[1:0] and TYPE if their flit is missing too). S is charged those fillers
    // and the packet's rounding to CU when it is abandoned, so that S - F never understates what
    // the receiver holds; the SYNCs of the REPLAY then return what it did not pad.
    wire [XW-1:0] s_idx  = s_in ? s_pos : {XW{1'b0}};  // index of cur in its packet
    wire [1:0]    s_off2 = (s_idx == OFFIX) ? cur[OFF_POS +: 2] : s_off2q;
    wire          s_rma  = (s_idx == TYPIX) ? (cur[TYP_POS + 1 +: 3] != 3'd0) : s_rmaq;
    wire [7:0]    s_len8 = cur[LEN_OFF +: 8];
    wire [8:0]    s_am1  = s_rma ? {1'b0, s_len8} : ({3'd0, s_len8[5:0]} + {7'd0, s_off2});
    wire [8:0]    s_li9  = {{(9 - XW){1'b0}}, HFX} + (s_am1 >> LFB);
    wire          unused_sl9 = &{1'b0, s_li9};
    wire [1:0]    s_o2c  = (s_pos > OFFIX) ? s_off2q : 2'd0;
    wire          s_rmc  = (s_pos > TYPIX) && s_rmaq;
    // flits the receiver may hold of the packet: its announced length while it is being sent,
    // the flits sent once its last data flit is out (its CRC flit due)
    wire [XW-1:0] s_plen = !s_in ? s_pos :
                           (s_pos > LENIX) ? s_lidx + 1'b1 :
                           HFX + (s_rmc ? {XW{1'b0}} : {{(XW-2){1'b0}}, s_o2c >> LFB}) + 1'b1;
    wire [CW-1:0] s_pl_w = {{(CW-XW){1'b0}}, s_plen};
    wire [CW-1:0] s_plr  = (s_pl_w + CU[CW-1:0] - 1'b1) & ~(CU[CW-1:0] - 1'b1);  // rounded up to CU
    wire [CW-1:0] ab_chg = s_plr - {{(CW-XW){1'b0}}, s_pos};                     // not yet in S
    // abandoned this cycle: at the REPLAY after a NACK that named it, or by the link going down
    // (also with its CRC flit due: the receiver ends the packet without it)
    wire          ab_en  = ((kind == K_REP) && s_in && ab_pad) || (!link_up && (s_in || crc_pend));

    // ------------------------------------------------------------------ ACK / CREDIT items
    reg [NI-1:0] pend, need;
    reg [KW:0]   rdiff;
    always @(*) begin
        pend[0] = (rx_exp != ack_sent);
        need[0] = ((rx_exp - ack_sent) >= AURG);
        rdiff   = {(KW+1){1'b0}};
        for (i = 0; i < NVC; i = i + 1) begin
            pend[i+1] = (rx_fcnt[i*KW + CUB +: 7] != fsent[i*7 +: 7]);
            // the peer's view of our buffer if it had all our CREDITs: R - Fsent (flits)
            rdiff     = {1'b0, rx_rcnt[i*KW +: KW] - ({{(KW-7){1'b0}}, fsent[i*7 +: 7]} << CUB)};
            need[i+1] = (rdiff > CURG);
        end
    end
    // PIPE: the slot choice uses pend and need registered (last cycle's), without the item sent
    // last cycle (its value was just sent): a change shows one cycle later. The bookkeeping
    // (dirty, age) uses the exact pend.
    reg  [NI-1:0] pend_q, need_q, sent_q;
    wire [NI-1:0] pend_c = (PIPE != 0) ? (pend_q & ~sent_q) : pend;
    wire [NI-1:0] need_c = (PIPE != 0) ? need_q : need;
    wire [NI-1:0] urg    = (pend_c & need_c) | ((age >= AGE) ? (pend_c | dirty) : {NI{1'b0}});
    wire [NI-1:0] ctlset = (|urg) ? urg : ((|pend_c) ? pend_c : {NI{1'b1}});
    // rotate: first item of ctlset at or after rr
    wire [2*NI-1:0] set2 = {ctlset, ctlset} >> rr;
    reg  [3:0] j;
    always @(*) begin
        j = 4'd0;
        for (i = NI - 1; i >= 0; i = i - 1)
            if (set2[i]) j = i[3:0];
    end
    wire [3:0] pk_sum = rr + j;
    wire [3:0] pick   = (pk_sum >= NI[3:0]) ? pk_sum - NI[3:0] : pk_sum;
    wire [3:0] pick_vc = pick - 4'd1;  // CREDIT item: its VC
    wire       unused_pv = &{1'b0, pick_vc[3:2]};
    wire [3:0] pick1  = (pick + 1'b1 == NI[3:0]) ? 4'd0 : pick + 1'b1;

    // SYNC and NACK requests act in the cycle they arrive (req_* are registered pulses); the SYNC
    // set goes out twice, one round after the other, so that one lost SYNC costs no repeated REPLAY
    wire [NVC-1:0] sy_set = sync_pend | {NVC{req_sync}};
    wire [NVC-1:0] sy_left;  // still due after this slot
    wire           nk     = nack_pend || req_nack;
    // lowest VC with a SYNC due
    reg [1:0] svc;
    always @(*) begin
        svc = 2'd0;
        for (i = NVC - 1; i >= 0; i = i - 1)
            if (sy_set[i]) svc = i[1:0];
    end

    // ------------------------------------------------------------------ slot choice
    // SYNC goes before NACK: every SYNC answering a REPLAY leaves before any NACK about the data
    // that follows that REPLAY (the transmitter relies on this order, see ST_WSYNC).
    reg [2:0] kind;
    always @(*) begin
        if (!link_up)                         kind = K_TS;
        else if (crc_pend)                    kind = K_CRC;
        else if (st == ST_ACKW && ack_done && !finish) kind = K_REP;
        else if (|sy_set)                     kind = K_SYNC;
        else if (nk)                          kind = K_NACK;
        else if (|urg)                        kind = K_CTL;
        else if (data_ok)                     kind = K_DATA;
        else                                  kind = K_CTL;
    end
    assign ts2_sent = (kind == K_TS) && heard;
    assign sy_left  = sy_set & ~((kind == K_SYNC) ? ({{(NVC-1){1'b0}}, 1'b1} << svc) : {NVC{1'b0}});

    // the control symbol of this slot: LINK_CTL {TYPE, VALUE, CRC5}
    reg [8:0]  val;
    reg [1:0]  typ;
    reg [6:0]  cval;
    always @(*) begin
        cval = 7'd0;
        for (i = 0; i < NVC; i = i + 1)
            if (pick == i[3:0] + 4'd1) cval = rx_fcnt[i*KW + CUB +: 7];
        for (i = 0; i < NVC; i = i + 1)
            if (kind == K_SYNC && svc == i[1:0]) cval = rx_scnt[i*KW + CUB +: 7];
        val = 9'd0;
        typ = `VELO_LINK_CTL_TYPE_LINK;
        case (kind)
            K_TS: begin
                val[`VELO_LINK_CTLV_SUB]      = heard ? `VELO_LINK_SUB_TS2 : `VELO_LINK_SUB_TS1;
                val[`VELO_LINK_CTLV_TS_SEQ]   = rx_exp[`VELO_LINK_CTLV_TS_SEQ_W-1:0];
                val[`VELO_LINK_CTLV_TS_EPOCH] = ep;
            end
            K_REP: begin
                val[`VELO_LINK_CTLV_SUB] = `VELO_LINK_SUB_REPLAY;
                val[`VELO_LINK_CTLV_SEQ] = ack_seq;
            end
            K_NACK: begin
                val[`VELO_LINK_CTLV_SUB] = `VELO_LINK_SUB_NACK;
                val[`VELO_LINK_CTLV_SEQ] = rx_exp;
            end
            K_SYNC: begin
                typ = `VELO_LINK_CTL_TYPE_SYNC;
                val[`VELO_LINK_CTLV_SUB]   = svc;
                val[`VELO_LINK_CTLV_COUNT] = cval;
            end
            default: begin
                if (pick == 4'd0) begin
                    typ = `VELO_LINK_CTL_TYPE_ACK;
                    val[`VELO_LINK_CTLV_SEQ] = rx_exp;
                end else begin
                    typ = `VELO_LINK_CTL_TYPE_CREDIT;
                    val[`VELO_LINK_CTLV_SUB]   = pick_vc[1:0];
                    val[`VELO_LINK_CTLV_COUNT] = cval;
                end
            end
        endcase
    end
    reg [15:0] sym16;
    wire [4:0] sym_crc;
    always @(*) begin
        sym16 = 16'd0;
        sym16[`VELO_LINK_CTL_TYPE]  = typ;
        sym16[`VELO_LINK_CTL_VALUE] = val;
    end
    velo_crc5 u_c5 (.data(sym16[15:5]), .crc(sym_crc));
    reg [15:0] ctl16;
    always @(*) begin
        ctl16 = sym16;
        ctl16[`VELO_LINK_CTL_CRC5] = sym_crc;
    end
    wire [PW-1:0] ctl_flit = {SY_C, {(LINK_W - 16){1'b0}}, ctl16};
    // a stomped packet's CRC flit carries both marks: the stomp sync code and the inverted CRC
    wire [PW-1:0] crc_flit = {bad_s ? SY_S : SY_D, {(LINK_W - 16){1'b0}}, crc_s ^ (bad_s ? STOMP : 16'h0000)};
    wire          send_item = (kind == K_CTL);
    always @(posedge clk) begin
        if (rst) begin
            pend_q <= {NI{1'b0}};
            need_q <= {NI{1'b0}};
            sent_q <= {NI{1'b0}};
        end else begin
            pend_q <= pend;
            need_q <= need;
            sent_q <= send_item ? ({{(NI-1){1'b0}}, 1'b1} << pick) : {NI{1'b0}};
        end
    end

    // ------------------------------------------------------------------ replay RAM read (prefetch)
    always @(*) begin
        rb_re = 1'b0;
        rb_ra = rd_ptr[RA-1:0];
        if (kind == K_DATA) begin
            if (!direct && (rd_ptr + 1'b1 != wr_ptr)) begin
                rb_re = 1'b1;
                rb_ra = rd_ptr[RA-1:0] + 1'b1;
            end
        end else if (!rv && !av && !caught) begin
            rb_re = 1'b1;
        end
    end

    // ------------------------------------------------------------------ start_ok
    // room for a largest packet in the receiver's buffer and in the replay buffer (not while the
    // previous packet is still being padded: its fillers come on top), at most 62 outstanding
    wire [6:0] outst = done_seq - ack_seq;

    // invariants (simulation only): the replay buffer never holds more than REPLAY_DEPTH flits and
    // no write reaches a flit not yet acknowledged. Not asserted: per VC, S - F within 0..VC_DEPTH.
    // It holds while the peer's control symbols are true, but a corrupted SYNC whose symbol CRC
    // still matches is taken as it is and can set S below F (tb_link256,
    // UnansweredReplaysTakeTheLinkDown, SEED=6080553410653: S 480 -> 80 with F 480): the value of
    // a SYNC is not yet checked for plausibility (docs/net-link.md, "Known limitations").
    `VELO_ASSERT(clk, rst, dist_t <= RDEPTH && dist_r <= RDEPTH, "velo_link_tx: replay buffer holds more than REPLAY_DEPTH flits")
    `VELO_ASSERT(clk, rst, !w_en || room, "velo_link_tx: unacknowledged replay flit overwritten")
    always @(*) begin
        for (i = 0; i < NVC; i = i + 1)
            tx_start_ok[i] = link_up && sending && (tcnt[i*CW +: CW] - fcnt[i*CW +: CW] <= ROOM) &&
                             broom && !wpad && (outst <= 7'd62);
    end

    // SYNC / CREDIT arithmetic for the VC named by the symbol
    reg [CW-1:0] f_of, s_of, r_of, t_of;
    always @(*) begin
        f_of = {CW{1'b0}};
        s_of = {CW{1'b0}};
        r_of = {CW{1'b0}};
        t_of = {CW{1'b0}};
        for (i = 0; i < NVC; i = i + 1)
            if (ctl_sub == i[1:0]) begin
                f_of = fcnt[i*CW +: CW];
                s_of = scnt[i*CW +: CW];
                r_of = srep[i*CW +: CW];
                t_of = tcnt[i*CW +: CW];
            end
    end
    // per VC: this cycle's additions to S (a data flit; the rounding with the CRC flit) and to T (a
    // flit written; the rounding with a packet's last flit)
    reg [NVC*CW-1:0] inc_s, inc_t;
    reg [NVC*UW-1:0] inc_tv;     // the rounding part of inc_t (also added to ucnt)
    wire [UW-1:0]    s_rnd = (CUB > 0 && kind == K_CRC) ? (~s_pos[UW-1:0] + 1'b1) : {UW{1'b0}};  // (-flits) mod CU
    always @(*) begin
        for (i = 0; i < NVC; i = i + 1) begin
            inc_s[i*CW +: CW] = {{(CW-1){1'b0}}, (kind == K_DATA) && (cur_vc == i[1:0])}
                                + ((s_vc == i[1:0]) ? {{(CW-UW){1'b0}}, s_rnd} : {CW{1'b0}});
            inc_tv[i*UW +: UW] = (avc == i[1:0]) ? w_rnd : {UW{1'b0}};
            inc_t[i*CW +: CW] = {{(CW-1){1'b0}}, w_en && (avc == i[1:0])} + {{(CW-UW){1'b0}}, inc_tv[i*UW +: UW]};
        end
    end
    // per VC: the charge of a packet abandoned this cycle (ab_chg on its VC)
    reg [NVC*CW-1:0] ab_v;
    always @(*) begin
        for (i = 0; i < NVC; i = i + 1)
            ab_v[i*CW +: CW] = (ab_en && s_vc == i[1:0]) ? ab_chg : {CW{1'b0}};
    end
    reg [CW-1:0] is_of, it_of;   // inc_s, inc_t of the symbol's VC
    always @(*) begin
        is_of = {CW{1'b0}};
        it_of = {CW{1'b0}};
        for (i = 0; i < NVC; i = i + 1)
            if (ctl_sub == i[1:0]) begin
                is_of = inc_s[i*CW +: CW];
                it_of = inc_t[i*CW +: CW];
            end
    end
    // the 7-bit values count units of CU flits; F is always a multiple of CU
    wire [6:0]     credit_inc       = ctl_seq - f_of[CUB +: 7];             // CREDIT: newly freed units
    wire [CW-1:0]  credit_inc_flits = {{(CW-7){1'b0}}, credit_inc} << CUB;  // ... in flits
    wire           credit_ok        = (credit_inc_flits <= s_of - f_of);    // never more than sent
    wire [CW-1:0]  s_base           = f_of + credit_inc_flits;              // CREDIT: F; SYNC: R, unwrapped
    wire [CW-1:0]  s_dlt            = s_base - r_of;                        // SYNC: R - S at the REPLAY
    // SYNC: S := R + flits sent since the REPLAY (and this cycle's); T moves with S
    wire [CW-1:0]  s_syn     = s_of + s_dlt + is_of;
    wire [CW-1:0]  t_syn     = t_of + s_dlt + it_of;
    wire           ctl_vc_ok = ({1'b0, ctl_sub} < NVC3);
    reg           got_sub;  // sync_got of the symbol's VC (0 for a VC >= NVC)
    always @(*) begin
        got_sub = 1'b0;
        for (i = 0; i < NVC; i = i + 1)
            if (ctl_sub == i[1:0]) got_sub = sync_got[i];
    end
    wire           take_sync   = ctl_is_sync && ctl_vc_ok && (st == ST_WSYNC) && !got_sub;
    wire [NVC-1:0] got_nx      = sync_got | (take_sync ? ({{(NVC-1){1'b0}}, 1'b1} << ctl_sub) : {NVC{1'b0}});
    wire [6:0]     snd_d       = snd_seq - ack_tgt;
    wire           outstanding = (snd_d != 7'd0) && !snd_d[6];
    wire           up_edge     = link_up && !lu_q;
    wire           tr_ep       = (st == ST_TRAIN) && up_edge && ep;  // an epoch begins
    assign disc_ld  = tr_ep;
    assign disc_num = done_seq - ack_tgt;

    // ------------------------------------------------------------------ registers
    integer v;
    always @(posedge clk) begin
        if (rst) begin
            st        <= ST_TRAIN;
            lu_q      <= 1'b0;
            wr_ptr    <= {(RA+1){1'b0}};
            rd_ptr    <= {(RA+1){1'b0}};
            tail      <= {(RA+1){1'b0}};
            acc_in    <= 1'b0;
            w_pos     <= {XW{1'b0}};
            w_lk      <= 1'b0;
            w_lidx    <= {XW{1'b0}};
            w_off2q   <= 2'd0;
            w_rmaq    <= 1'b0;
            w_ovlq    <= 1'b0;
            wpad      <= 1'b0;
            wdrop     <= 1'b0;
            acc_vc    <= 2'd0;
            done_seq  <= 7'd0;
            ack_seq   <= 7'd0;
            ack_tgt   <= 7'd0;
            ack_busy  <= 1'b0;
            ucnt      <= {NVC*(RA+1){1'b0}};
            tcnt      <= {NVC*CW{1'b0}};
            scnt      <= {NVC*CW{1'b0}};
            fcnt      <= {NVC*CW{1'b0}};
            sf_okq    <= {NVC{1'b0}};
            srep      <= {NVC*CW{1'b0}};
            rv        <= 1'b0;
            av        <= 1'b0;
            s_in      <= 1'b0;
            s_vc      <= 2'd0;
            s_pos     <= {XW{1'b0}};
            s_off2q   <= 2'd0;
            s_rmaq    <= 1'b0;
            s_lidx    <= {XW{1'b0}};
            crc_s     <= 16'd0;
            crc_pend  <= 1'b0;
            bad_s     <= 1'b0;
            snd_seq   <= 7'd0;
            sync_got  <= {NVC{1'b0}};
            abandon   <= 1'b0;
            ab_pad    <= 1'b0;
            tmr       <= {TMW{1'b0}};
            retries   <= {RTW{1'b0}};
            nack_pend <= 1'b0;
            sync_pend <= {NVC{1'b0}};
            sync_two  <= 1'b0;
            ack_sent  <= 7'd0;
            fsent     <= {NVC*7{1'b0}};
            dirty     <= {NI{1'b0}};
            rr        <= 4'd0;
            age       <= {AGW{1'b0}};
            phy_q     <= {PW{1'b0}};
            retry_fail <= 1'b0;
            ev_nack   <= 1'b0;
            ev_replay <= 1'b0;
        end else begin
            lu_q       <= link_up;
            retry_fail <= 1'b0;
            ev_nack    <= (kind == K_NACK);
            ev_replay  <= (kind == K_REP);

            // ---- write side
            if (w_en) wr_ptr <= wr_ptr + 1'b1;
            if (w_en && w_atl) done_seq <= done_seq + 1'b1;
            if (wpad) begin
                if (room) begin
                    w_pos <= w_pos + 1'b1;
                    if (w_peq) begin
                        wpad   <= 1'b0;
                        acc_in <= 1'b0;
                        w_lk   <= 1'b0;
                        w_ovlq <= 1'b0;
                    end
                end
            end else if (acc && wdrop) begin
                if (tx_last) wdrop <= 1'b0;
            end else if (acc) begin
                if (!acc_in) acc_vc <= tx_data[`VELO_PKT_HDR_VC];
                if (w_idx == OFFIX) w_off2q <= tx_data[OFF_POS +: 2];
                if (w_idx == TYPIX) w_rmaq <= w_rma;
                w_pos <= w_idx + 1'b1;
                if (w_atl) begin
                    acc_in <= 1'b0;
                    wdrop  <= !tx_last;
                    w_lk   <= 1'b0;
                    w_ovlq <= 1'b0;
                end else if (w_early) begin
                    acc_in <= 1'b1;
                    wpad   <= 1'b1;
                    w_lk   <= 1'b1;
                    w_lidx <= w_lk_n ? w_li_n : w_lz;  // zero fillers: length field 0
                end else begin
                    acc_in <= 1'b1;
                    w_lk   <= w_lk_n;
                    w_lidx <= w_li_n;
                    if (w_ovl) w_ovlq <= 1'b1;
                end
            end

            // ---- ACK processing: free one packet per cycle up to ack_tgt
            ack_busy <= sr_re;
            if (ack_busy) begin
                tail    <= f_end;
                ack_seq <= ack_nx;
            end

            // ---- per-VC counters
            for (v = 0; v < NVC; v = v + 1) begin
                ucnt[v*(RA+1) +: RA+1] <= ucnt[v*(RA+1) +: RA+1]
                    + {{(RA+1-UW){1'b0}}, inc_tv[v*UW +: UW]} + {{RA{1'b0}}, w_en && (avc == v[1:0])}
                    - ((ack_busy && f_vc == v[1:0]) ? f_lenr : {(RA+1){1'b0}});
                if (tr_ep) begin
                    // a new epoch: assume the peer's buffer full until its SYNC says otherwise
                    scnt[v*CW +: CW] <= VCD;
                    tcnt[v*CW +: CW] <= VCD;
                end else if (kind == K_REP) begin
                    // everything from tail is sent again; no data flit goes out in this slot (a
                    // packet abandoned now is charged its fillers first: S_rep includes them)
                    scnt[v*CW +: CW] <= scnt[v*CW +: CW] + ab_v[v*CW +: CW];
                    srep[v*CW +: CW] <= scnt[v*CW +: CW] + ab_v[v*CW +: CW];
                    tcnt[v*CW +: CW] <= scnt[v*CW +: CW] + ab_v[v*CW +: CW]
                                        + {{(CW-RA-1){1'b0}}, ucnt[v*(RA+1) +: RA+1]} + inc_t[v*CW +: CW];
                end else if (take_sync && ctl_sub == v[1:0]) begin
                    scnt[v*CW +: CW] <= s_syn + ab_v[v*CW +: CW];
                    tcnt[v*CW +: CW] <= t_syn + ab_v[v*CW +: CW];
                end else begin
                    scnt[v*CW +: CW] <= scnt[v*CW +: CW] + inc_s[v*CW +: CW] + ab_v[v*CW +: CW];
                    tcnt[v*CW +: CW] <= tcnt[v*CW +: CW] + inc_t[v*CW +: CW] + ab_v[v*CW +: CW];
                end
                if (tr_ep)
                    fcnt[v*CW +: CW] <= {CW{1'b0}};
                else if (ctl_is_credit && credit_ok && ctl_sub == v[1:0])
                    fcnt[v*CW +: CW] <= s_base;
                // PIPE's first-flit check for the next cycle: this cycle's S and F, with room for
                // this cycle's growth of S; none while an epoch, a SYNC or an abandoned packet's
                // charge moves S or F
                sf_okq[v] <= sf_okp[v] && !tr_ep && !take_sync && !ab_en;
            end

            // ---- sender
            case (kind)
                K_TS, K_REP, K_NACK, K_SYNC, K_CTL: phy_q <= ctl_flit;
                K_CRC:  phy_q <= crc_flit;
                default: phy_q <= {SY_D, cur[LINK_W-1:0]};
            endcase
            if (kind == K_CRC) begin
                crc_pend <= 1'b0;
                snd_seq  <= snd_seq + 1'b1;
            end
            if (kind == K_DATA) begin
                rd_ptr <= rd_ptr + 1'b1;
                crc_s  <= crc_nx;
                if (!s_in) s_vc <= cur[1:0];
                s_pos <= s_idx + 1'b1;
                if (s_idx == OFFIX) s_off2q <= s_off2;
                if (s_idx == TYPIX) s_rmaq <= s_rma;
                if (s_idx == LENIX) s_lidx <= s_li9[XW-1:0];
                if (cur[LINK_W]) begin
                    s_in     <= 1'b0;
                    crc_pend <= 1'b1;
                    bad_s    <= cur[LINK_W+1];
                end else begin
                    s_in <= 1'b1;
                end
                if (direct) begin
                    rv <= 1'b0;
                    av <= 1'b0;
                end else if (rd_ptr + 1'b1 != wr_ptr) begin
                    rv <= 1'b1;
                    av <= 1'b0;
                end else if (w_en) begin
                    aux <= w_word;
                    av  <= 1'b1;
                    rv  <= 1'b0;
                end else begin
                    rv <= 1'b0;
                    av <= 1'b0;
                end
            end else if (!rv && !av) begin
                if (direct) begin
                    aux <= w_word;  // written but not sent this cycle
                    av  <= 1'b1;
                end else if (!caught) begin
                    rv <= 1'b1;
                end
            end

            // ---- control symbol bookkeeping
            nack_pend <= link_up && nk && (kind != K_NACK);
            if (!link_up) begin
                sync_pend <= {NVC{1'b0}};
                sync_two  <= 1'b0;
            end else if (sy_left == {NVC{1'b0}} && (sync_two || req_sync)) begin
                sync_pend <= {NVC{1'b1}};  // the second round (NVC = 1: req_sync sent the first)
                sync_two  <= 1'b0;
            end else begin
                sync_pend <= sy_left;
                if (req_sync) sync_two <= 1'b1;
            end
            if (send_item) begin
                if (pick == 4'd0) begin
                    ack_sent <= rx_exp;
                end
                for (v = 0; v < NVC; v = v + 1)
                    if (pick == v[3:0] + 4'd1) fsent[v*7 +: 7] <= rx_fcnt[v*KW + CUB +: 7];
                for (v = 0; v < NI; v = v + 1)
                    if (pick == v[3:0]) dirty[v] <= pend[v];
                rr  <= pick1;
                age <= {AGW{1'b0}};
            end else if ((|pend || |dirty) && kind != K_TS) begin
                if (age != AGE) age <= age + 1'b1;
            end else begin
                age <= {AGW{1'b0}};
            end

            // ---- link state and replay handshake
            case (st)
                ST_TRAIN: begin
                    tmr     <= {TMW{1'b0}};
                    retries <= {RTW{1'b0}};
                    if (up_edge) begin
                        st    <= ST_ACKW;
                        dirty <= {NI{1'b1}};  // repeat every ACK/CREDIT value after a link-up
                        if (ep)
                            ack_tgt <= done_seq;  // epoch: discard every complete packet
                        else if (peer_in)
                            ack_tgt <= ack_tgt + {1'b0, peer_d};
                    end
                end
                ST_ACKW: begin
                    tmr <= {TMW{1'b0}};
                    if (kind == K_REP) begin
                        st       <= ST_WSYNC;
                        rd_ptr   <= tail;
                        snd_seq  <= ack_seq;
                        rv       <= 1'b0;
                        av       <= 1'b0;
                        s_in     <= 1'b0;
                        sync_got <= {NVC{1'b0}};
                    end
                end
                ST_WSYNC: begin
                    // The replay streams out. SYNCs arriving now answer this REPLAY: the receiver
                    // sends its SYNCs (the set twice) right after each REPLAY and before any NACK, a
                    // new REPLAY follows only a NACK in SEND (behind those SYNCs on the wire) or
                    // SYNC_TIMEOUT here (longer than a round trip). ACKs and NACKs count as
                    // acknowledgements once a SYNC shows that the receiver has taken the REPLAY
                    // (before that they may predate it, or an epoch); a NACK starts no replay here:
                    // one that crossed the REPLAY is answered by it, a later one follows the SYNCs.
                    sync_got <= got_nx;
                    tmr      <= tmr + 1'b1;
                    if ((ctl_is_ack || ctl_is_nack) && seq_in && |sync_got) ack_tgt <= ctl_seq;
                    if (&got_nx) begin
                        st      <= ST_SEND;
                        tmr     <= {TMW{1'b0}};
                        retries <= {RTW{1'b0}};
                    end else if (tmr == STO) begin
                        st      <= ST_ACKW;  // repeat the REPLAY (and the replay)
                        tmr     <= {TMW{1'b0}};
                        abandon <= 1'b0;
                        if (|got_nx) begin
                            retries <= {RTW{1'b0}};
                        end else begin
                            retries <= retries + 1'b1;
                            if (retries + 1'b1 >= RETR) retry_fail <= 1'b1;
                        end
                    end
                end
                default: begin  // ST_SEND
                    if (ctl_is_nack && seq_in) begin
                        ack_tgt <= ctl_seq;
                        st      <= ST_ACKW;
                        tmr     <= {TMW{1'b0}};
                        abandon <= 1'b1;
                        ab_pad  <= s_in && (ctl_seq == snd_seq);
                    end else if (ctl_is_ack && seq_in && ctl_seq != ack_tgt) begin
                        ack_tgt <= ctl_seq;
                        tmr     <= {TMW{1'b0}};
                    end else if (!outstanding) begin
                        tmr <= {TMW{1'b0}};
                    end else if (tmr == RTO) begin
                        st      <= ST_ACKW;  // no ACK progress: replay from the oldest unacknowledged packet
                        tmr     <= {TMW{1'b0}};
                        abandon <= 1'b0;
                    end else begin
                        tmr <= tmr + 1'b1;
                    end
                end
            endcase
            if (!link_up) begin
                st       <= ST_TRAIN;
                crc_pend <= 1'b0;
                s_in     <= 1'b0;
            end
        end
    end
endmodule
`default_nettype wire
