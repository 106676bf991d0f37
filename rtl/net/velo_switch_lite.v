// A reduced switch for a NIC with one network port (velo_nic SWITCH_LITE = 1): what velo_switch
// does at NP = 1, in a few hundred iCE40 logic cells instead of about 2,000 (no per-VC input
// FIFOs, no allocator). It sits between the requester's flit stream, the completer's flit stream
// and the one link (velo_link), with the switch's interfaces and rules:
//
//   local input (requester)  -> skid -> route code of the header flit:
//        1 (port 1): waits for the link's credits for the packet's outgoing VC, then streams
//                    (an outgoing VC the link does not have, >= NVC, is dropped: ev_bad_route)
//        0 (local):  loopback to the local output
//        other:      dropped (ev_bad_route)
//   link rx -> receive buffer (one FIFO in block RAM for all VCs, credits returned per VC as
//        flits leave it) -> route code 0: local output; other codes: dropped (ev_bad_route)
//   local output (completer) <- the buffer's or the loopback's packets, whole packets, taking
//        turns (round robin) when both wait
//
// Register slices (velo_skid) on the local input and on both outputs: no combinational path
// runs from the link or the completer through this stage into another unit.
//
// The header flit leaves with ROUTE shifted right by PB and, towards the link, VC[0] = the
// port's dateline bit (VC[1] kept); towards the local output the VC is kept: the switch's
// rewrite for a packet from the local port. Differences from velo_switch: a packet from the link
// whose route names port 1 again (a U-turn, never part of a route the route library makes) is
// dropped, not sent back; no credit-stall event. One FIFO instead of one per VC is enough here:
// every packet from the link goes to the one local output, in order, so a per-VC buffer could
// not let one pass another anyway; the link's per-VC credits (VC_DEPTH flits each) bound the
// FIFO's fill to NVC * VC_DEPTH.
`default_nettype none
`include "velo_check.vh"
module velo_switch_lite #(
    parameter integer LINK_W   = 16,  // flit width in bits: 16, 32 or 64
    parameter integer NVC      = 4,   // virtual channels of the link (1..4: VCs 0..NVC-1)
    parameter integer VC_DEPTH = 64,  // credits per VC (the link's), in flits
    parameter integer PB       = 2    // route code bits per hop (2 for one network port)
) (
    input  wire              clk,
    input  wire              rst,          // synchronous, active high
    // local input (the requester's flit stream)
    input  wire              lin_valid,
    output wire              lin_ready,
    input  wire [LINK_W-1:0] lin_data,
    input  wire              lin_last,
    // local output (the completer's flit stream)
    output wire              lout_valid,
    input  wire              lout_ready,
    output wire [LINK_W-1:0] lout_data,
    output wire              lout_last,
    output wire              lout_bad,     // with lout_last: discard the packet
    // to the link transmitter
    output wire              out_valid,
    input  wire              out_ready,
    output wire [LINK_W-1:0] out_data,
    output wire              out_last,
    output wire              out_bad,      // with out_last: stomp (never: local packets are good)
    input  wire [NVC-1:0]    out_start_ok, // a packet of VC v may start
    // from the link receiver (no back pressure: credits)
    input  wire              in_valid,
    input  wire [LINK_W-1:0] in_data,
    input  wire              in_last,
    input  wire              in_bad,
    input  wire [1:0]        in_vc,
    output reg  [NVC-1:0]    in_free,      // one flit of VC v left the buffer
    // configuration and events
    input  wire              port_dateline, // the port's link crosses the dateline of its ring
    output reg               ev_bad_route   // a packet with an invalid route code was dropped
);
    `VELO_CHECK_LINK_W
    `VELO_CHECK_NVC
    `VELO_CHECK(g_check_vc_depth, VC_DEPTH >= 2, "velo_switch_lite: VC_DEPTH must be at least 2")
    `VELO_CHECK(g_check_pb, (1 << PB) >= 1 + 2 && PB <= 14, "velo_switch_lite: PB must be 2..14 (codes 0, 1 and an invalid one)")

    localparam integer AW = $clog2(NVC * VC_DEPTH);
    localparam integer FW = LINK_W + 4;  // buffered flit {vc, bad, last, data}

    // header rewrite: route shifted by PB, VC as given
    function [LINK_W-1:0] rewrite;
        input [LINK_W-1:0] d;
        input [1:0]        vc;
        reg   [13:0]       r;
        begin
            r       = d[15:2] >> PB;
            rewrite = d;
            rewrite[15:0] = {r, vc};
        end
    endfunction

    // ---------------------------------------------------------------- local input
    wire              l_valid;
    reg               l_ready;
    wire [LINK_W:0]   l_q;  // {last, data}
    velo_skid #(.W(LINK_W + 1)) u_lin (
        .clk(clk), .rst(rst),
        .s_valid(lin_valid), .s_ready(lin_ready), .s_data({lin_last, lin_data}),
        .m_valid(l_valid), .m_ready(l_ready), .m_data(l_q));
    wire [PB-1:0] l_code = l_q[2 +: PB];
    wire [1:0]    l_vcn  = {l_q[1], port_dateline};  // VC towards the link
    wire          l_vcok = {30'd0, l_vcn} < NVC;
    wire          l_net  = l_code == {{(PB-1){1'b0}}, 1'b1};

    localparam [1:0] T_IDLE = 2'd0, T_NET = 2'd1, T_LOOP = 2'd2, T_DROP = 2'd3;
    reg  [1:0] ts;
    reg        t_first;

    // ---------------------------------------------------------------- receive buffer
    reg  [AW:0]   wp, rp;  // RAM write / read pointers
    reg           f_valid; // the RAM's output register holds the head flit
    wire [FW-1:0] f_q;
    wire          f_take;
    wire          f_re = (wp != rp) && (!f_valid || f_take);
    velo_sdp_ram #(.W(FW), .ADDR_W(AW)) u_buf (
        .clk(clk), .we(in_valid), .waddr(wp[AW-1:0]), .wdata({in_vc, in_bad, in_last, in_data}),
        .re(f_re), .raddr(rp[AW-1:0]), .rdata(f_q));
    wire [LINK_W-1:0] f_data = f_q[LINK_W-1:0];
    wire              f_last = f_q[LINK_W];
    wire              f_bad  = f_q[LINK_W+1];
    wire [1:0]        f_vc   = f_q[LINK_W+3:LINK_W+2];
    wire [PB-1:0]     f_code = f_data[2 +: PB];
    // invariant (simulation only): the link's credits keep the buffer from being written full
    `VELO_ASSERT(clk, rst, !in_valid || wp - rp < {1'b1, {AW{1'b0}}}, "velo_switch_lite: receive buffer written full (credits not kept)")

    always @(posedge clk) begin
        if (rst) begin
            wp      <= {(AW+1){1'b0}};
            rp      <= {(AW+1){1'b0}};
            f_valid <= 1'b0;
            in_free <= {NVC{1'b0}};
        end else begin
            if (in_valid) wp <= wp + 1'b1;
            if (f_re) rp <= rp + 1'b1;
            if (f_re) f_valid <= 1'b1;
            else if (f_take) f_valid <= 1'b0;
            in_free <= free_n;
        end
    end

    // per VC v < NVC: the credit of a flit leaving, the link's permission for the outgoing VC
    reg [NVC-1:0] free_n;
    reg           l_start_ok;
    integer       v;
    always @(*) begin
        l_start_ok = 1'b0;
        for (v = 0; v < NVC; v = v + 1) begin
            free_n[v] = f_take && f_vc == v[1:0];
            if (l_vcn == v[1:0]) l_start_ok = out_start_ok[v];
        end
    end

    localparam [1:0] R_IDLE = 2'd0, R_LOCAL = 2'd1, R_DROP = 2'd2;
    reg  [1:0] rs;

    // ---------------------------------------------------------------- local output
    localparam [1:0] O_NONE = 2'd0, O_NET = 2'd1, O_LOOP = 2'd2;
    reg  [1:0] os;
    reg        o_first;
    reg        o_prio;  // 1: the loopback wins a tie
    wire net_req  = rs == R_IDLE && f_valid && f_code == {PB{1'b0}};
    wire loop_req = ts == T_IDLE && l_valid && l_code == {PB{1'b0}};
    wire gnt_loop = os == O_NONE && loop_req && (!net_req || o_prio);
    wire gnt_net  = os == O_NONE && net_req && !gnt_loop;

    // (through a register slice: the block RAM's output and the merge do not add to the
    // completer's input paths)
    wire [LINK_W-1:0] o_src  = (os == O_LOOP) ? l_q[LINK_W-1:0] : f_data;
    wire [1:0]        o_vc   = (os == O_LOOP) ? l_q[1:0] : f_data[1:0];
    wire              o_valid = (os == O_LOOP) ? l_valid : (os == O_NET) && f_valid;
    wire              o_ready;
    wire [LINK_W-1:0] o_data = o_first ? rewrite(o_src, o_vc) : o_src;
    wire              o_last = (os == O_LOOP) ? l_q[LINK_W] : f_last;
    wire              o_bad  = (os == O_NET) && f_bad;
    wire              o_xfer = o_valid && o_ready;
    velo_skid #(.W(LINK_W + 2)) u_lout (
        .clk(clk), .rst(rst),
        .s_valid(o_valid), .s_ready(o_ready), .s_data({o_bad, o_last, o_data}),
        .m_valid(lout_valid), .m_ready(lout_ready), .m_data({lout_bad, lout_last, lout_data}));

    // ---------------------------------------------------------------- link output
    // through a register slice, so that no combinational path runs from the link's transmitter
    // through this stage back into it (the board's critical path otherwise)
    wire              n_valid = (ts == T_NET) && l_valid;
    wire              n_ready;
    wire [LINK_W-1:0] n_data  = t_first ? rewrite(l_q[LINK_W-1:0], l_vcn) : l_q[LINK_W-1:0];
    velo_skid #(.W(LINK_W + 1)) u_out (
        .clk(clk), .rst(rst),
        .s_valid(n_valid), .s_ready(n_ready), .s_data({l_q[LINK_W], n_data}),
        .m_valid(out_valid), .m_ready(out_ready), .m_data({out_last, out_data}));
    assign out_bad = 1'b0;

    always @(*) begin
        case (ts)
            T_NET:   l_ready = n_ready;
            T_LOOP:  l_ready = o_ready;
            T_DROP:  l_ready = 1'b1;
            default: l_ready = 1'b0;
        endcase
    end
    assign f_take = f_valid && ((rs == R_LOCAL && o_ready) || rs == R_DROP);

    // starts of drops (a packet from the buffer waits a cycle if the local input starts one)
    wire t_drop = ts == T_IDLE && l_valid && (l_code > 1 || (l_net && !l_vcok));
    wire r_drop = rs == R_IDLE && f_valid && f_code != {PB{1'b0}} && !t_drop;

    always @(posedge clk) begin
        if (rst) begin
            ts           <= T_IDLE;
            t_first      <= 1'b0;
            rs           <= R_IDLE;
            os           <= O_NONE;
            o_first      <= 1'b0;
            o_prio       <= 1'b0;
            ev_bad_route <= 1'b0;
        end else begin
            ev_bad_route <= t_drop || r_drop;
            // local input
            case (ts)
                T_IDLE: begin
                    if (l_valid && l_net && l_vcok && l_start_ok) begin
                        ts      <= T_NET;
                        t_first <= 1'b1;
                    end else if (gnt_loop) begin
                        ts <= T_LOOP;
                    end else if (t_drop) begin
                        ts <= T_DROP;
                    end
                end
                T_NET: begin
                    if (l_valid && n_ready) begin
                        t_first <= 1'b0;
                        if (l_q[LINK_W]) ts <= T_IDLE;
                    end
                end
                default: begin  // T_LOOP, T_DROP
                    if (l_valid && l_ready && l_q[LINK_W]) ts <= T_IDLE;
                end
            endcase
            // receive buffer
            case (rs)
                R_IDLE: begin
                    if (gnt_net) rs <= R_LOCAL;
                    else if (r_drop) rs <= R_DROP;
                end
                default: begin  // R_LOCAL, R_DROP
                    if (f_take && f_last) rs <= R_IDLE;
                end
            endcase
            // local output
            if (gnt_loop || gnt_net) begin
                os      <= gnt_loop ? O_LOOP : O_NET;
                o_first <= 1'b1;
                o_prio  <= !gnt_loop;
            end else if (o_xfer) begin
                o_first <= 1'b0;
                if (o_last) os <= O_NONE;
            end
        end
    end
endmodule
`default_nettype wire
