// VELO link layer, one per network port: framing, CRC-16 per packet with implicit sequence
// numbers, go-back-N retransmission from a replay buffer, credit flow control per virtual
// channel, control symbols protected by CRC-5, link training and link-down detection.
// velo_link_tx + velo_link_rx + the training state machine here. Protocol: docs/net-link.md.
//
// Training: after reset (or link down) the transmitter sends TS1 (value: the receiver's expected
// sequence number mod 64 and the epoch bit); once it hears the peer (a valid TS1 or TS2) it sends
// TS2. The link is up when TS_COUNT TS2 were sent and TS_COUNT valid TS2 with the same epoch bit
// received since the last TS1 (or, having received at least one such TS2, when a valid
// non-training symbol shows that the peer is up already). The link goes down when no valid
// symbol arrived for DOWN_TIMEOUT cycles, when a TS1 arrives (the peer retrains), when a TS2 asks
// for an epoch this link-up did not start, or when SYNC_RETRIES replays got no answer.
//
// Epoch bit: set while this end's receiver has no sequence state for the peer (from reset until
// it adopts the peer's first REPLAY after an epoch link-up), and set for the rest of a training
// round once the peer's TS carried it. A link-up with the bit (both ends agree: a TS2 counts only
// with the receiver's own bit) starts a new epoch at both ends: the transmitters discard their
// replay buffers (one ev_link_down pulse per discarded packet) and restart credits, the receivers
// adopt the peer's REPLAY. Otherwise the transmitter replays from the peer's expected sequence
// number (REPLAY + SYNC), so nothing is lost or duplicated.
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
module velo_link #(
    parameter integer LINK_W         = 16,   // flit width: 16, 32 or 64 bits
    parameter integer NVC            = 4,    // virtual channels (PKT_HDR VC field; at most 4)
    parameter integer MAX_AREA       = 64,   // largest payload area in bytes: 64 (VELO messages, RMA_MTU <= 48) .. 256, multiple of 8
    parameter integer VC_DEPTH       = 64,   // switch input buffer per VC in flits = credits; MAX_PKT_FLITS..1016-MAX_PKT_FLITS
    parameter integer REPLAY_DEPTH   = 256,  // replay buffer in flits (power of two, >= 2 * MAX_PKT_FLITS)
    parameter integer DOWN_TIMEOUT   = 128,  // cycles without a valid symbol before the link is down
    parameter integer NACK_TIMEOUT   = 256,  // cycles between repeated NACKs while waiting for the REPLAY
    parameter integer REPLAY_TIMEOUT = 512,  // cycles without ACK progress on sent packets before a replay
    parameter integer SYNC_TIMEOUT   = 256,  // cycles after a REPLAY before it is repeated if a SYNC is missing (> round trip)
    parameter integer SYNC_RETRIES   = 4,    // REPLAYs in a row answered by no SYNC before the link retrains
    parameter integer TS_COUNT       = 8,    // TS2 symbols sent and received for link-up
    parameter integer ACK_URGENT     = 8,    // unacknowledged packets that make an ACK pre-empt data
    parameter integer CREDIT_MARGIN  = 8,    // flits of slack before a CREDIT pre-empts data
    parameter integer CTL_AGE        = 32,   // cycles a changed ACK/CREDIT may wait for an idle slot
    parameter integer PIPE           = 0     // 1: register stages for smaller devices (docs/board-guide.md); 0: none
) (
    input  wire                 clk,
    input  wire                 rst,          // synchronous, active high
    // PHY: one {sync[1:0], flit} each way every cycle
    output wire [LINK_W+1:0]    phy_tx,
    input  wire [LINK_W+1:0]    phy_rx,
    // packets from the switch output port (valid/ready; a packet starts only with tx_start_ok[vc])
    input  wire                 tx_valid,
    output wire                 tx_ready,
    input  wire [LINK_W-1:0]    tx_data,
    input  wire                 tx_last,
    input  wire                 tx_bad,       // with tx_last: the packet is bad (sent stomped)
    output wire [NVC-1:0]       tx_start_ok,  // credits and replay room for a largest packet of VC v, link up
    // packets to the switch input (no ready: credits guarantee room)
    output wire                 rx_valid,
    output wire [LINK_W-1:0]    rx_data,
    output wire                 rx_last,
    output wire                 rx_bad,       // with rx_last: discard the packet
    output wire [1:0]           rx_vc,
    input  wire [NVC-1:0]       rx_free,      // one flit of VC v left the switch input buffer
    // status and event pulses (one cycle each)
    output wire                 link_up,
    output wire                 ev_crc_err,   // a received packet failed its check
    output wire                 ev_nack,      // NACK sent
    output wire                 ev_replay,    // replay started (REPLAY sent: on NACK, timeout or link-up)
    output wire                 ev_stomp,     // stomped packet received
    output reg                  ev_link_down, // the link went down; also one per packet discarded by an epoch
    output wire                 ev_ctl_drop,  // control symbol dropped (CRC-5) or invalid sync outside a packet
    output wire                 ev_rx_pkt     // good packet received (accepted with its sequence number, not stomped)
);
    localparam integer HF   = 64 / LINK_W;
    localparam integer MAXF = HF + MAX_AREA * 8 / LINK_W;  // data flits of the largest packet
    // credit unit 2^CUB flits: the CREDIT and SYNC counts are 7 bits and must stay unambiguous over
    // a full buffer plus a largest packet (rounded up to a unit): the smallest unit that allows it
    localparam integer CUB  = (VC_DEPTH + MAXF <= 127) ? 0 : (VC_DEPTH + MAXF + 1 <= 254) ? 1 :
                              (VC_DEPTH + MAXF + 3 <= 508) ? 2 : 3;
    localparam integer TCW  = $clog2(TS_COUNT + 1);
    localparam integer DW   = $clog2(DOWN_TIMEOUT + 1);
    localparam [TCW-1:0] TSN  = TS_COUNT[TCW-1:0];
    localparam [DW-1:0]  DTO  = DOWN_TIMEOUT[DW-1:0] - 1'b1;

    // parameter checks (the timeouts and counts that velo_link_tx and velo_link_rx take are
    // checked there)
    `VELO_CHECK_LINK_W
    `VELO_CHECK_MAX_AREA
    `VELO_CHECK_NVC
    `VELO_CHECK_PIPE
    `VELO_CHECK(g_check_vc_depth, VC_DEPTH >= MAXF && VC_DEPTH + MAXF + (1 << CUB) - 1 <= 127 * (1 << CUB), "velo_link: VC_DEPTH must be MAX_PKT_FLITS..1016-MAX_PKT_FLITS")
    // PIPE's registered credit check needs a credit unit of room beyond a largest packet
    `VELO_CHECK(g_check_pipe_depth, PIPE == 0 || VC_DEPTH >= (MAXF + (1 << CUB) - 1) / (1 << CUB) * (1 << CUB) + (1 << CUB), "velo_link: VC_DEPTH too small for PIPE")
    `VELO_CHECK(g_check_down_timeout, DOWN_TIMEOUT >= 2, "velo_link: DOWN_TIMEOUT must be at least 2")
    `VELO_CHECK(g_check_ts_count, TS_COUNT >= 1, "velo_link: TS_COUNT must be at least 1")

    wire             sym_ok, sym_nx, ctl_ok;
    wire [1:0]       ctl_type;
    wire [8:0]       ctl_val;
    wire [6:0]       exp_seq;
    wire             unsync;
    wire [NVC*(7+CUB)-1:0] rcnt, scnt, fcnt;
    wire             req_nack, req_sync, ts2_sent, retry_fail;
    wire             disc_ld;
    wire [6:0]       disc_num;
    reg              up;
    reg              ep;         // epoch bit of this training round (and of the link-up it led to)
    reg              heard, heard2, peer_up;
    reg  [TCW-1:0]   ts2_rx, ts2_tx;
    reg  [5:0]       peer_seq;
    reg  [DW-1:0]    silence;
    reg  [7:0]       disc_left;  // discarded packets still to be counted on ev_link_down

    assign link_up = up;

    // ------------------------------------------------------------------ training decode
    wire is_link  = ctl_ok && (ctl_type == `VELO_LINK_CTL_TYPE_LINK);
    wire [1:0] sub = ctl_val[`VELO_LINK_CTLV_SUB];
    wire got_ts1  = is_link && (sub == `VELO_LINK_SUB_TS1);
    wire got_ts2  = is_link && (sub == `VELO_LINK_SUB_TS2);
    wire got_ts   = got_ts1 || got_ts2;
    wire ts_ep    = ctl_val[`VELO_LINK_CTLV_TS_EPOCH];
    wire got_other = ctl_ok && !got_ts;                 // only a trained peer sends these
    wire ep_req   = got_ts && ts_ep && !ep;             // the peer asks for an epoch
    wire got_ts2m = got_ts2 && (ts_ep || !ep);          // a TS2 with our epoch bit (after ep_req)
    // PIPE: silent registered, from the next cycle's sym_ok (the receiver's input register) and
    // the next cycle's silence count
    reg  silent_q;
    wire silent   = (PIPE != 0) ? silent_q : (!sym_ok && (silence == DTO));
    wire go_up    = (ts2_tx == TSN) && ((ts2_rx == TSN) || peer_up);
    wire going_up = !up && !silent && go_up;
    wire go_down  = up && (silent || got_ts1 || retry_fail || (got_ts2 && ts_ep && !ep));

    velo_link_rx #(.LINK_W(LINK_W), .NVC(NVC), .VC_DEPTH(VC_DEPTH), .MAX_AREA(MAX_AREA), .CUB(CUB),
                   .NACK_TIMEOUT(NACK_TIMEOUT), .PIPE(PIPE)) u_rx (
        .clk(clk), .rst(rst), .phy_rx(phy_rx),
        .rx_valid(rx_valid), .rx_data(rx_data), .rx_last(rx_last), .rx_bad(rx_bad), .rx_vc(rx_vc),
        .rx_free(rx_free), .link_up(up), .rep_en(up || going_up), .epoch(going_up && ep),
        .sym_ok(sym_ok), .sym_nx(sym_nx), .ctl_ok(ctl_ok), .ctl_type(ctl_type), .ctl_val(ctl_val),
        .exp_seq(exp_seq), .unsync(unsync), .rcnt(rcnt), .scnt(scnt), .fcnt(fcnt),
        .req_nack(req_nack), .req_sync(req_sync),
        .ev_crc_err(ev_crc_err), .ev_stomp(ev_stomp), .ev_rx_pkt(ev_rx_pkt), .ev_ctl_drop(ev_ctl_drop));

    velo_link_tx #(.LINK_W(LINK_W), .NVC(NVC), .VC_DEPTH(VC_DEPTH), .MAX_AREA(MAX_AREA), .CUB(CUB),
                   .REPLAY_DEPTH(REPLAY_DEPTH),
                   .REPLAY_TIMEOUT(REPLAY_TIMEOUT), .SYNC_TIMEOUT(SYNC_TIMEOUT), .SYNC_RETRIES(SYNC_RETRIES),
                   .ACK_URGENT(ACK_URGENT), .CREDIT_MARGIN(CREDIT_MARGIN), .CTL_AGE(CTL_AGE),
                   .PIPE(PIPE)) u_tx (
        .clk(clk), .rst(rst), .phy_tx(phy_tx),
        .tx_valid(tx_valid), .tx_ready(tx_ready), .tx_data(tx_data), .tx_last(tx_last), .tx_bad(tx_bad),
        .tx_start_ok(tx_start_ok),
        .link_up(up), .ep(ep), .heard(heard), .peer_seq(peer_seq), .ts2_sent(ts2_sent),
        .retry_fail(retry_fail), .disc_ld(disc_ld), .disc_num(disc_num),
        .ctl_ok(ctl_ok), .ctl_type(ctl_type), .ctl_val(ctl_val),
        .rx_exp(exp_seq), .rx_rcnt(rcnt), .rx_scnt(scnt), .rx_fcnt(fcnt), .req_nack(req_nack),
        .req_sync(req_sync), .ev_nack(ev_nack), .ev_replay(ev_replay));

    // ------------------------------------------------------------------ training
    always @(posedge clk) begin
        if (rst) begin
            up           <= 1'b0;
            ep           <= 1'b1;
            heard        <= 1'b0;
            heard2       <= 1'b0;
            peer_up      <= 1'b0;
            ts2_rx       <= {TCW{1'b0}};
            ts2_tx       <= {TCW{1'b0}};
            peer_seq     <= 6'd0;
            silence      <= {DW{1'b0}};
            silent_q     <= 1'b0;
            disc_left    <= 8'd0;
            ev_link_down <= 1'b0;
        end else begin
            // one ev_link_down pulse per link-down event and per discarded packet
            ev_link_down <= go_down || (disc_left != 8'd0);
            disc_left    <= disc_left + (disc_ld ? {1'b0, disc_num} : 8'd0)
                            - {7'd0, !go_down && (disc_left != 8'd0)};
            silent_q <= !sym_nx && !sym_ok && ((silence == DTO) || (silence == DTO - 1'b1));
            if (sym_ok)
                silence <= {DW{1'b0}};
            else if (silence != DTO)
                silence <= silence + 1'b1;
            if (up) begin
                if (go_down) begin
                    up      <= 1'b0;
                    heard   <= got_ts;
                    heard2  <= 1'b0;
                    peer_up <= 1'b0;
                    ts2_rx  <= {TCW{1'b0}};
                    ts2_tx  <= {TCW{1'b0}};
                    ep      <= unsync || (got_ts && ts_ep);
                    if (got_ts) peer_seq <= ctl_val[`VELO_LINK_CTLV_TS_SEQ];
                end
            end else if (silent) begin
                // the peer vanished: start over
                heard   <= 1'b0;
                heard2  <= 1'b0;
                peer_up <= 1'b0;
                ts2_rx  <= {TCW{1'b0}};
                ts2_tx  <= {TCW{1'b0}};
                ep      <= unsync;
            end else if (go_up) begin
                up      <= 1'b1;
                heard2  <= 1'b0;
                peer_up <= 1'b0;
                ts2_rx  <= {TCW{1'b0}};
                ts2_tx  <= {TCW{1'b0}};
            end else begin
                if (got_ts) begin
                    heard    <= 1'b1;
                    peer_seq <= ctl_val[`VELO_LINK_CTLV_TS_SEQ];
                end
                if (ep_req) begin
                    // the peer asks for an epoch: count again, with the new bit on both sides
                    ep      <= 1'b1;
                    ts2_rx  <= {{(TCW-1){1'b0}}, got_ts2};
                    ts2_tx  <= {TCW{1'b0}};
                    heard2  <= got_ts2;
                    peer_up <= 1'b0;
                end else begin
                    if (got_ts1)
                        ts2_rx <= {TCW{1'b0}};
                    else if (got_ts2m && ts2_rx != TSN)
                        ts2_rx <= ts2_rx + 1'b1;
                    if (got_ts2m) heard2 <= 1'b1;
                    if (got_other && heard2) peer_up <= 1'b1;
                    if (ts2_sent && ts2_tx != TSN) ts2_tx <= ts2_tx + 1'b1;
                end
            end
        end
    end
endmodule
`default_nettype wire
