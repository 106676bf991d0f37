// Link receiver: decodes the PHY stream {sync, flit}, checks control symbols (CRC-5) and hands
// them to the transmitter and the training logic, receives packets (length from the header),
// checks their CRC-16 with the implicit sequence number, forwards them to the switch input with
// one cycle of latency (cut-through; the last data flit waits for its CRC flit so that last/bad
// are exact), drops duplicates of a replay, keeps the per-VC stored/freed flit counts that the
// transmitter returns as CREDIT and SYNC symbols, and requests NACKs. See docs/net-link.md.
//
// A packet that fails after its first flits went on is ended with bad=1 on its last flit; one that
// is cut short (invalid sync, REPLAY or link down inside it) is padded with zero flits to the length
// its forwarded header announces (zero length field if the header itself was cut), so every packet
// handed to the switch is consistent with its header and can be forwarded as it is (stomped).
`default_nettype none
`include "velo_spec.vh"
module velo_link_rx #(
    parameter integer LINK_W       = 16,  // flit width: 16, 32 or 64
    parameter integer NVC          = 4,   // virtual channels (VC field of PKT_HDR; at most 4)
    parameter integer VC_DEPTH     = 64,  // switch input buffer per VC in flits = credits per VC
    parameter integer NACK_TIMEOUT = 256  // cycles between NACKs while waiting for a REPLAY
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
    // decoded symbol of this cycle (combinational from phy_rx)
    output wire                 sym_ok,    // a valid symbol: a data flit or a control symbol passing its checks
    output wire                 ctl_ok,    // a valid control symbol
    output wire [1:0]           ctl_type,  // its LINK_CTL TYPE
    output wire [8:0]           ctl_val,   // its LINK_CTL VALUE
    // state for the transmitter
    output wire [6:0]           exp_seq,   // next sequence number expected (ACK, NACK, TS value)
    output wire [NVC*7-1:0]     rcnt,      // per VC: flits stored into the switch, mod 128 (SYNC value)
    output wire [NVC*7-1:0]     fcnt,      // per VC: flits freed by the switch, mod 128 (CREDIT value)
    output reg                  req_nack,  // pulse: send NACK(exp_seq)
    output reg                  req_sync,  // pulse: send SYNC(v, rcnt[v]) for every VC
    // event pulses
    output reg                  ev_crc_err,  // a packet failed its check (CRC, framing, lost flit, overflow)
    output reg                  ev_stomp,    // a stomped packet was accepted (with its bad last flit)
    output reg                  ev_rx_pkt,   // a good packet was accepted (with its last flit; stomped ones not)
    output reg                  ev_ctl_drop  // a control symbol failed its check, or an invalid sync outside a packet
);
    localparam integer HF      = 64 / LINK_W;            // header flits
    localparam integer MAXF    = HF + 512 / LINK_W;      // data flits of the largest packet
    localparam integer LEN_IDX = 56 / LINK_W;            // flit holding FRAG_LEN_M1 (header bits 61:56)
    localparam integer LEN_OFF = 56 % LINK_W;            // its position in that flit
    localparam integer LFB     = $clog2(LINK_W / 8);     // log2(bytes per flit)
    localparam integer OFF_IDX = 26 / LINK_W;            // flit holding FRAG_OFF[1:0] (header bits 27:26)
    localparam integer OFF_POS = 26 % LINK_W;            // its position in that flit
    localparam integer ROOM_I = VC_DEPTH - MAXF;
    localparam [6:0]   ROOM    = ROOM_I[6:0];        // a packet may start while occupancy <= this
    localparam [5:0]   HF6     = HF[5:0];
    localparam [5:0]   LENI6   = LEN_IDX[5:0];
    localparam [15:0]  CINIT   = `VELO_LINK_CRC16_INIT;
    localparam [15:0]  STOMP   = `VELO_LINK_CRC16_STOMP;
    localparam integer NTW     = $clog2(NACK_TIMEOUT + 1);

    // ------------------------------------------------------------------ symbol decode
    wire [1:0]        sync = phy_rx[LINK_W+1:LINK_W];
    wire [LINK_W-1:0] d    = phy_rx[LINK_W-1:0];
    wire is_data  = (sync == `VELO_LINK_SYNC_DATA);
    wire is_ctl   = (sync == `VELO_LINK_SYNC_CTL);
    wire bad_sync = !is_data && !is_ctl;
    wire upper0;  // flit bits above the 16-bit symbol / CRC are zero
    generate
        if (LINK_W > 16) begin : g_up
            assign upper0 = ~|d[LINK_W-1:16];
        end else begin : g_noup
            assign upper0 = 1'b1;
        end
    endgenerate
    wire [4:0] c5;
    velo_crc5 u_c5 (.data(d[15:5]), .crc(c5));
    assign ctl_type = d[`VELO_LINK_CTL_TYPE];
    assign ctl_val  = d[`VELO_LINK_CTL_VALUE];
    // ACK has no SUB field: its bits must be zero
    wire rsvd_ok = (ctl_type != `VELO_LINK_CTL_TYPE_ACK) || (ctl_val[`VELO_LINK_CTLV_SUB] == 2'b00);
    assign ctl_ok = is_ctl && upper0 && (c5 == d[`VELO_LINK_CTL_CRC5]) && rsvd_ok;
    assign sym_ok = is_data || ctl_ok;

    // ------------------------------------------------------------------ state
    reg              wait_rep;   // discarding data until a REPLAY (after an error, link down, reset)
    reg              in_pkt;     // a packet is in progress (also while padding it)
    reg  [5:0]       pos;        // data flits of this packet received (next flit index)
    reg  [5:0]       last_idx;   // index of its last data flit (valid with len_known)
    reg              len_known;
    reg              fwd;        // a new packet, forwarded (else a duplicate, dropped)
    reg  [1:0]       pvc;        // its VC
    reg  [15:0]      crc;        // CRC over its data flits so far
    reg              hold_v;     // the last data flit is held, waiting for the CRC flit
    reg  [LINK_W-1:0] hold;
    reg              pad;        // emitting filler flits to complete a cut packet
    reg  [6:0]       exp_q;      // next new sequence number
    reg  [6:0]       chk_seq;    // sequence number of the packet arriving (older than exp_q in a replay)
    reg              rep_pend;   // a REPLAY arrived while padding
    reg  [6:0]       rep_seq;
    reg              lu_q;       // link_up, last cycle
    reg  [NVC*7-1:0] rc, fc;     // stored / freed flit counts per VC
    reg  [NTW-1:0]   ntmr;       // NACK re-send timer

    assign exp_seq = exp_q;
    assign rcnt    = rc;
    assign fcnt    = fc;

    wire down_edge = lu_q && !link_up;
    wire rep_now   = ctl_ok && (ctl_type == `VELO_LINK_CTL_TYPE_LINK) &&
                     (ctl_val[`VELO_LINK_CTLV_SUB] == `VELO_LINK_SUB_REPLAY);
    wire [6:0] rep_e   = ctl_val[`VELO_LINK_CTLV_SEQ];
    wire [6:0] rep_age = exp_q - rep_e;
    wire rep_ok  = rep_now && !rep_age[6];
    wire unused_age = &{1'b0, rep_age[5:0]};  // at most 63 packets back (the transmitter's window)
    wire active  = link_up && !wait_rep && !pad;

    // CRC of this flit
    wire [15:0] crc_seed = CINIT ^ {9'b0, chk_seq};
    wire [15:0] crc_nx;
    velo_crc16 #(.W(LINK_W)) u_crc (.crc_in(in_pkt ? crc : crc_seed), .data(d), .crc_out(crc_nx));
    wire crc_good  = upper0 && (d[15:0] == crc);
    wire crc_stomp = upper0 && (d[15:0] == (crc ^ STOMP));

    // length of the packet: its payload area is FRAG_OFF % 4 pad bytes plus FRAG_LEN_M1 + 1
    // bytes (PKT_HDR); FRAG_OFF[1:0] comes in the same flit as FRAG_LEN_M1 or an earlier one
    reg  [1:0] off2_q;
    wire [1:0] off2     = (OFF_IDX == LEN_IDX) ? d[OFF_POS +: 2] : off2_q;
    wire [6:0] area_m1  = {1'b0, d[LEN_OFF +: 6]} + {5'd0, off2};
    wire [6:0] lidx_7   = {1'b0, HF6} + (area_m1 >> LFB);
    wire [5:0] lidx_new = lidx_7[5:0];
    wire       unused_l7 = lidx_7[6];  // at most 4 + 66 / 2 = 37

    // room in the switch buffer of VC v for a largest packet
    reg [NVC-1:0] room_ok;
    integer k;
    always @(*) begin
        for (k = 0; k < NVC; k = k + 1)
            room_ok[k] = ((rc[k*7 +: 7] - fc[k*7 +: 7]) <= ROOM);
    end
    wire [1:0] d_vc = d[`VELO_PKT_HDR_VC];

    // ------------------------------------------------------------------ next state
    reg              n_wait, n_in, n_lk, n_fwd, n_holdv, n_pad, n_rp;
    reg  [5:0]       n_pos, n_lidx;
    reg  [1:0]       n_pvc;
    reg  [15:0]      n_crc;
    reg  [LINK_W-1:0] n_hold;
    reg  [6:0]       n_exp, n_chk, n_rs;
    reg              o_v, o_l, o_b;
    reg  [LINK_W-1:0] o_d;
    reg  [1:0]       o_c;
    reg              cnt_dup;    // a dropped duplicate flit: counted stored and freed at once
    reg  [1:0]       dup_vc;
    reg              e_crc, e_stomp, e_pkt, e_nack, e_sync, e_trunc;

    // end the packet in progress early: task-like block used by several cases below
    always @(*) begin
        n_wait = wait_rep;  n_in = in_pkt;   n_pos = pos;      n_lidx = last_idx; n_lk = len_known;
        n_fwd = fwd;        n_pvc = pvc;     n_crc = crc;      n_holdv = hold_v;  n_hold = hold;
        n_pad = pad;        n_exp = exp_q;   n_chk = chk_seq;  n_rp = rep_pend;   n_rs = rep_seq;
        o_v = 1'b0; o_l = 1'b0; o_b = 1'b0; o_d = {LINK_W{1'b0}}; o_c = pvc;
        cnt_dup = 1'b0; dup_vc = pvc;
        e_crc = 1'b0; e_stomp = 1'b0; e_pkt = 1'b0; e_nack = 1'b0; e_sync = 1'b0; e_trunc = 1'b0;

        if (pad) begin
            // one zero filler flit per cycle up to the announced length; the last one is bad
            o_v   = 1'b1;
            n_pos = pos + 1'b1;
            if (down_edge) begin
                n_rp = 1'b0;
            end else if (rep_ok) begin
                n_rp = 1'b1;
                n_rs = rep_e;
            end
            if (pos == last_idx) begin
                o_l   = 1'b1;
                o_b   = 1'b1;
                n_pad = 1'b0;
                n_in  = 1'b0;
                if (!down_edge && (rep_pend || rep_ok)) begin
                    n_chk  = rep_ok ? rep_e : rep_seq;
                    n_wait = 1'b0;
                    n_rp   = 1'b0;
                    e_sync = 1'b1;
                end
            end
        end else if (down_edge || rep_ok || (active && in_pkt && bad_sync)) begin
            // the packet in progress (if any) ends here
            if (in_pkt) begin
                n_in = 1'b0;
                if (fwd && hold_v) begin
                    o_v = 1'b1; o_d = hold; o_l = 1'b1; o_b = 1'b1;
                end else if (fwd) begin
                    n_in  = 1'b1;
                    n_pad = 1'b1;
                    e_trunc = 1'b1;
                    if (!len_known) begin
                        n_lidx = HF6;  // the zero fillers make FRAG_LEN_M1 = 0
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
                    n_wait = 1'b0;
                    e_sync = 1'b1;
                end
            end else begin  // invalid sync inside a packet
                n_wait = 1'b1;
                e_crc  = 1'b1;
                e_nack = 1'b1;
            end
        end else if (active && is_data) begin
            if (!in_pkt) begin
                // first flit of a packet: new (forward at once) or a duplicate of a replay (drop)
                if (chk_seq == exp_q && !room_ok[d_vc]) begin
                    // no room for it: a corrupted VC or a protocol error; never forwarded
                    n_wait = 1'b1;
                    e_crc  = 1'b1;
                    e_nack = 1'b1;
                end else begin
                    n_in    = 1'b1;
                    n_fwd   = (chk_seq == exp_q);
                    n_pvc   = d_vc;
                    n_pos   = 6'd1;
                    n_crc   = crc_nx;
                    n_lk    = (LEN_IDX == 0);
                    n_lidx  = lidx_new;
                    n_holdv = 1'b0;
                    if (chk_seq == exp_q) begin
                        o_v = 1'b1; o_d = d; o_c = d_vc;
                    end else begin
                        cnt_dup = 1'b1; dup_vc = d_vc;
                    end
                end
            end else if (hold_v) begin
                // the CRC flit
                n_in    = 1'b0;
                n_holdv = 1'b0;
                if (fwd) begin
                    o_v = 1'b1; o_d = hold; o_l = 1'b1; o_b = !crc_good;
                end
                if (crc_good || crc_stomp) begin
                    n_chk = chk_seq + 1'b1;
                    if (fwd) begin
                        n_exp   = exp_q + 1'b1;
                        e_pkt   = crc_good;
                        e_stomp = crc_stomp;
                    end
                end else begin
                    n_wait = 1'b1;
                    e_crc  = 1'b1;
                    e_nack = 1'b1;
                end
            end else begin
                n_crc = crc_nx;
                n_pos = pos + 1'b1;
                if (pos == LENI6) begin
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
                    o_v = 1'b1; o_d = d;
                end else begin
                    cnt_dup = 1'b1;
                end
            end
        end
    end

    // ------------------------------------------------------------------ registers
    integer v;
    always @(posedge clk) begin
        if (rst) begin
            wait_rep  <= 1'b1;
            in_pkt    <= 1'b0;
            pos       <= 6'd0;
            last_idx  <= 6'd0;
            len_known <= 1'b0;
            fwd       <= 1'b0;
            pvc       <= 2'd0;
            crc       <= 16'd0;
            hold_v    <= 1'b0;
            pad       <= 1'b0;
            exp_q     <= 7'd0;
            chk_seq   <= 7'd0;
            rep_pend  <= 1'b0;
            rep_seq   <= 7'd0;
            lu_q      <= 1'b0;
            rc        <= {NVC*7{1'b0}};
            fc        <= {NVC*7{1'b0}};
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
            if (n_pos == OFF_IDX[5:0] + 6'd1 && n_pos != pos) off2_q <= d[OFF_POS +: 2];
            last_idx  <= n_lidx;
            len_known <= n_lk;
            fwd       <= n_fwd;
            pvc       <= n_pvc;
            crc       <= n_crc;
            hold_v    <= n_holdv;
            pad       <= n_pad;
            exp_q     <= n_exp;
            chk_seq   <= n_chk;
            rep_pend  <= n_rp;
            rep_seq   <= n_rs;
            lu_q      <= link_up;
            for (v = 0; v < NVC; v = v + 1) begin
                rc[v*7 +: 7] <= rc[v*7 +: 7] + {6'd0, o_v && (o_c == v[1:0])} + {6'd0, cnt_dup && (dup_vc == v[1:0])};
                fc[v*7 +: 7] <= fc[v*7 +: 7] + {6'd0, rx_free[v]} + {6'd0, cnt_dup && (dup_vc == v[1:0])};
            end
            // NACK at once on an error, then every NACK_TIMEOUT cycles until the REPLAY
            if (!link_up || !n_wait || e_nack || ntmr == NACK_TIMEOUT[NTW-1:0] - 1'b1) begin
                ntmr <= {NTW{1'b0}};
            end else if (wait_rep && !pad) begin
                ntmr <= ntmr + 1'b1;
            end
            req_nack  <= link_up && (e_nack || (wait_rep && n_wait && !pad && ntmr == NACK_TIMEOUT[NTW-1:0] - 1'b1));
            req_sync  <= e_sync;
            rx_valid  <= o_v;
            rx_last   <= o_l;
            rx_bad    <= o_b;
            rx_vc     <= o_c;
            ev_crc_err  <= e_crc;
            ev_stomp    <= e_stomp;
            ev_rx_pkt   <= e_pkt;
            ev_ctl_drop <= link_up && ((is_ctl && !ctl_ok) || (bad_sync && !(active && in_pkt)));
        end
    end

    // data needs no reset (qualified by rx_valid / hold_v)
    always @(posedge clk) begin
        rx_data <= o_d;
        hold    <= n_hold;
    end

    wire unused_ok = &{1'b0, e_trunc};
endmodule
`default_nettype wire
