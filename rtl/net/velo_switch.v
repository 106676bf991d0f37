// The NIC's switch: a cut-through crossbar with NP network ports and one local port (port 0).
//
//   inputs                                                     outputs
//   port 0  lin_*  -> skid ---------------------+            +-> lout_*        (port 0, completer)
//   port p  in_*   -> velo_sw_input (NVC FIFOs  |  crossbar  +-> out_* p       (link p tx)
//                     in one RAM, route codes) -+- (mux per -+-> drop          (bad route codes)
//                                                  output)
//   per output: round-robin over all (input, VC) heads (velo_rr_arb); per input: round-robin
//   accept among the grants offered to its VCs (velo_rr_arb).
//
// Routing (source routes, see docs/net-switch.md): the first flit of a packet carries VC (bits
// 1:0) and ROUTE (bits 15:2); the output is ROUTE[PB-1:0] (0 = local, p = network port p, > NP =
// invalid: the packet is dropped and counted). The first flit leaves with ROUTE shifted right by PB
// and, for a network output o, VC[0] = dateline[o] | (VC[0] & (input != 0) & (dim[input] ==
// dim[o])); VC[1] never changes; the local output gets the VC unchanged.
//
// Allocation (one cycle, combinational): an idle output o requests nothing itself; a head packet
// (input idle, its VC has a packet) requests its output if that output is idle and may start it:
// out_start_ok[vc_out] for a network output (virtual cut-through: the link has credits for a whole
// packet), lout_ready for the local output, always for the drop sink. Each output grants one
// request round-robin; each input accepts one of its grants round-robin; the accepted pairs are
// connected until the packet's last flit has passed. An output is allocated again in the cycle
// after its last flit (this gap falls on the link's CRC flit), an input likewise.
//
// Latency: a header flit on in_* (or lin_*) in cycle t is on out_* (or lout_*) in cycle t+2 when
// the output is idle and may start, then one flit per cycle as they come (cut-through).
//
// Second local port (NLOC = 2, the RMA unit's responses): input lin2_* (a skid like lin_*, index
// NP+1 among the inputs) and output lout2_* (index NP+2 among the outputs). A packet whose route
// code is 0 leaves on lout2_* when its VC is of the response class (VC[1] = 1), else on lout_*;
// so the local consumers of the two classes stall independently and a response never waits
// behind a request at the local output, and a response injected on lin2_* never waits behind a
// request header at the local input. With NLOC = 1 the lin2_* inputs are ignored and lout2_* is
// idle: every local packet leaves on lout_*.
//
// Clock gating in simulation (docs/simulator.md): every register of the switch is clocked by
// gclk, which velo_sim_gate stops (Verilator with +velo_sim_gate only; elsewhere gclk = clk) in
// cycles where none can change: no output connected, both local input skids empty and no packet
// streaming from them, every network input at rest (velo_sw_input idle: every VC empty), and no
// flit arriving (in_valid, lin_valid, lin2_valid) nor reset. With no head the arbiters request
// nothing, so the readys and out_start_ok do not matter; the outputs (valids low, in_free,
// ev_*) are functions of held registers and inputs. The skids' data registers are rewritten every
// cycle while empty and read only with their valid (the edge that raises it rewrites them).
`default_nettype none
`include "velo_check.vh"
module velo_switch #(
    parameter integer NP            = 2,   // network ports (1..VELO_NP_MAX = 6): 2 for a ring, 4 for a 2D torus
    parameter integer LINK_W        = 16,  // flit width in bits: 16, 32 or 64
    parameter integer NVC           = 4,   // virtual channels (must be 4: the VC field is 2 bits)
    parameter integer VC_DEPTH      = 64,  // input FIFO per (network port, VC) in flits, >= MAX_PKT_FLITS
    parameter integer PB            = (NP <= 2) ? 2 : 3,  // route code bits, 2^PB >= NP + 2 (the all-ones code is invalid)
    parameter integer MAX_AREA      = 64,  // largest payload area in bytes (64, or up to 256 for RMA packets)
    parameter integer MAX_PKT_FLITS = (64 + 8 * MAX_AREA) / LINK_W,  // longest packet in flits (header + area)
    parameter integer NLOC          = 1    // local ports: 1, or 2 (second pair for the response class)
) (
    input  wire                 clk,
    input  wire                 rst,            // synchronous, active high
    // network inputs from the link receivers (port p at index p-1), no back pressure
    input  wire [NP-1:0]        in_valid,       // flit valid
    input  wire [NP*LINK_W-1:0] in_data,        // flit data
    input  wire [NP-1:0]        in_last,        // last flit of the packet
    input  wire [NP-1:0]        in_bad,         // with in_last: packet bad
    input  wire [NP*2-1:0]      in_vc,          // VC of the packet
    output wire [NP*NVC-1:0]    in_free,        // credit: one flit of (port, VC) left the buffer
    // local input (the requester's flit stream)
    input  wire                 lin_valid,
    output wire                 lin_ready,
    input  wire [LINK_W-1:0]    lin_data,
    input  wire                 lin_last,
    // second local input (NLOC = 2: response-class packets)
    input  wire                 lin2_valid,
    output wire                 lin2_ready,
    input  wire [LINK_W-1:0]    lin2_data,
    input  wire                 lin2_last,
    // network outputs to the link transmitters (port p at index p-1)
    output wire [NP-1:0]        out_valid,
    input  wire [NP-1:0]        out_ready,
    output wire [NP*LINK_W-1:0] out_data,
    output wire [NP-1:0]        out_last,
    output wire [NP-1:0]        out_bad,        // with out_last: stomp the packet
    input  wire [NP*NVC-1:0]    out_start_ok,   // the link may start a packet on (port, VC)
    // local output (to the completer's flit stream)
    output wire                 lout_valid,
    input  wire                 lout_ready,
    output wire [LINK_W-1:0]    lout_data,
    output wire                 lout_last,
    output wire                 lout_bad,       // with lout_last: discard the packet
    // second local output (NLOC = 2: response-class packets for this node)
    output wire                 lout2_valid,
    input  wire                 lout2_ready,
    output wire [LINK_W-1:0]    lout2_data,
    output wire                 lout2_last,
    output wire                 lout2_bad,
    // configuration per network port
    input  wire [2*NP-1:0]      port_dim,       // dimension of the port's link
    input  wire [NP-1:0]        port_dateline,  // the port's link crosses the dateline of its ring
    // events (one-cycle pulses)
    output wire [NP-1:0]        ev_credit_stall, // an idle output has a head packet waiting only for out_start_ok
    output wire                 ev_bad_route,    // a packet with an invalid route code was dropped
    output wire                 ev_overflow      // an input dropped or cut a packet (link credit error)
);
    localparam integer NI   = NP + NLOC;         // inputs: 0 local, 1..NP network, NP+1 local 2
    localparam integer NO   = NP + 1 + NLOC;     // outputs: 0 local, 1..NP network, NP+1 drop, NP+2 local 2
    localparam integer DROP = NP + 1;
    localparam integer LO2  = NP + 2;            // second local output (NLOC = 2)
    localparam integer R    = NI * NVC;          // requesters: (input, VC) heads, r = i*NVC + v

    `VELO_CHECK_NP
    `VELO_CHECK_LINK_W
    `VELO_CHECK(g_check_nvc, NVC == 4, "velo_switch: NVC must be 4")
    `VELO_CHECK(g_check_pb, (1 << PB) >= NP + 2 && PB <= 14, "velo_switch: PB must give 2^PB >= NP + 2 (at most 14: the route field)")
    `VELO_CHECK_MAX_AREA
    `VELO_CHECK(g_check_vc_depth, VC_DEPTH >= MAX_PKT_FLITS, "velo_switch: VC_DEPTH must hold a largest packet (MAX_PKT_FLITS)")
    `VELO_CHECK(g_check_nloc, NLOC == 1 || NLOC == 2, "velo_switch: NLOC must be 1 or 2")

    // ---------------------------------------------------------------- clock gate (simulation)
    wire gclk, gate_en;
    wire [NP-1:0] in_idle;  // network inputs at rest
    wire          l2_quiet; // second local input empty and not streaming (or absent)

    // ---------------------------------------------------------------- input streams
    wire [NI-1:0]        s_valid, s_last, s_bad, s_ready;
    wire [NI*LINK_W-1:0] s_data;
    wire [NI*2-1:0]      s_vc;     // VC of the packet each input streams
    wire [R-1:0]         h_valid;  // head of (input, VC) may be started
    wire [R*PB-1:0]      h_code;   // its route code
    wire [R-1:0]         acc;      // accepted grants (one-hot per input)
    wire [NP-1:0]        ovf;

    // local input: a skid buffer (registers both directions), one packet at a time
    wire              l_valid, l_ready;
    wire [LINK_W:0]   l_q;     // {last, data}
    reg               l_act;   // streaming a packet
    velo_skid #(.W(LINK_W + 1)) u_lin (
        .clk(gclk), .rst(rst),
        .s_valid(lin_valid), .s_ready(lin_ready), .s_data({lin_last, lin_data}),
        .m_valid(l_valid), .m_ready(l_ready), .m_data(l_q));
    assign s_valid[0]          = l_act && l_valid;
    assign s_data[0 +: LINK_W] = l_q[LINK_W-1:0];
    assign s_last[0]           = l_q[LINK_W];
    assign s_bad[0]            = 1'b0;
    assign s_vc[1:0]           = l_q[1:0];
    assign l_ready             = l_act && s_ready[0];

    genvar gi, gv, go;
    generate
        for (gv = 0; gv < NVC; gv = gv + 1) begin : g_lhead
            // the local input's head uses the requester slot of its header's VC
            assign h_valid[gv]         = !l_act && l_valid && (l_q[1:0] == gv);
            assign h_code[gv*PB +: PB] = l_q[2 +: PB];
        end
    endgenerate

    always @(posedge gclk) begin
        if (rst) begin
            l_act <= 1'b0;
        end else if (|acc[NVC-1:0]) begin
            l_act <= 1'b1;
        end else if (s_valid[0] && s_ready[0] && s_last[0]) begin
            l_act <= 1'b0;
        end
    end

    // second local input (NLOC = 2): the same structure as the first
    generate
        if (NLOC > 1) begin : g_lin2
            wire            l2_valid, l2_ready;
            wire [LINK_W:0] l2_q;
            reg             l2_act;
            velo_skid #(.W(LINK_W + 1)) u_lin2 (
                .clk(gclk), .rst(rst),
                .s_valid(lin2_valid), .s_ready(lin2_ready), .s_data({lin2_last, lin2_data}),
                .m_valid(l2_valid), .m_ready(l2_ready), .m_data(l2_q));
            assign s_valid[NP+1]              = l2_act && l2_valid;
            assign s_data[(NP+1)*LINK_W +: LINK_W] = l2_q[LINK_W-1:0];
            assign s_last[NP+1]               = l2_q[LINK_W];
            assign s_bad[NP+1]                = 1'b0;
            assign s_vc[2*(NP+1) +: 2]        = l2_q[1:0];
            assign l2_ready                   = l2_act && s_ready[NP+1];
            assign l2_quiet                   = !l2_act && !l2_valid;
            for (gv = 0; gv < NVC; gv = gv + 1) begin : g_l2head
                assign h_valid[(NP+1)*NVC + gv]         = !l2_act && l2_valid && (l2_q[1:0] == gv);
                assign h_code[((NP+1)*NVC + gv)*PB +: PB] = l2_q[2 +: PB];
            end
            always @(posedge gclk) begin
                if (rst) begin
                    l2_act <= 1'b0;
                end else if (|acc[(NP+1)*NVC +: NVC]) begin
                    l2_act <= 1'b1;
                end else if (s_valid[NP+1] && s_ready[NP+1] && s_last[NP+1]) begin
                    l2_act <= 1'b0;
                end
            end
        end else begin : g_nolin2
            assign lin2_ready = 1'b0;
            assign l2_quiet   = 1'b1;
            wire unused_l2 = &{1'b0, lin2_valid, lin2_data, lin2_last};
        end
    endgenerate

    // network inputs
    generate
        for (gi = 1; gi <= NP; gi = gi + 1) begin : g_in
            wire [1:0] acc_vc;
            // one-hot accept -> VC number (NVC = 4)
            assign acc_vc = {acc[gi*NVC+3] | acc[gi*NVC+2], acc[gi*NVC+3] | acc[gi*NVC+1]};
            velo_sw_input #(.LINK_W(LINK_W), .NVC(NVC), .VC_DEPTH(VC_DEPTH), .PB(PB),
                            .MAX_PKT_FLITS(MAX_PKT_FLITS)) u_in (
                .clk(gclk), .rst(rst),
                .in_valid(in_valid[gi-1]), .in_data(in_data[(gi-1)*LINK_W +: LINK_W]),
                .in_last(in_last[gi-1]), .in_bad(in_bad[gi-1]), .in_vc(in_vc[2*(gi-1) +: 2]),
                .in_free(in_free[(gi-1)*NVC +: NVC]),
                .h_valid(h_valid[gi*NVC +: NVC]), .h_code(h_code[gi*NVC*PB +: NVC*PB]),
                .acc(|acc[gi*NVC +: NVC]), .acc_vc(acc_vc), .s_vc(s_vc[2*gi +: 2]),
                .s_valid(s_valid[gi]), .s_ready(s_ready[gi]), .s_data(s_data[gi*LINK_W +: LINK_W]),
                .s_last(s_last[gi]), .s_bad(s_bad[gi]), .ev_overflow(ovf[gi-1]), .idle(in_idle[gi-1]));
        end
    endgenerate
    assign ev_overflow = |ovf;

    // ---------------------------------------------------------------- routing rules
    // same[i*NO + o]: input i is a network port in the same dimension as network output o (the
    // dateline bit is kept); dl0/dl1[o]: dateline bit a packet leaves output o with when it came
    // in with dateline bit 0 / 1 (per input)
    wire [NI*NO-1:0] same;
    generate
        for (gi = 0; gi < NI; gi = gi + 1) begin : g_same
            for (go = 0; go < NO; go = go + 1) begin : g_o
                if (gi >= 1 && gi <= NP && go >= 1 && go <= NP) begin : g_net
                    assign same[gi*NO + go] = port_dim[2*(gi-1) +: 2] == port_dim[2*(go-1) +: 2];
                end else begin : g_none
                    assign same[gi*NO + go] = 1'b0;
                end
            end
        end
    endgenerate

    // per requester r = (input, VC): its head's output, one-hot (code > NP: the drop sink)
    wire [R*NO-1:0] dsel;
    generate
        for (gi = 0; gi < R; gi = gi + 1) begin : g_dsel
            wire [PB-1:0] code = h_code[gi*PB +: PB];
            localparam integer RV = gi % NVC;  // the head's VC (RV / 2: its class)
            for (go = 0; go < NO; go = go + 1) begin : g_o
                if (go == DROP) begin : g_drop  // 2^PB >= NP + 2: the all-ones code at least
                    assign dsel[gi*NO + go] = code > NP[PB-1:0];
                end else if (go == 0 && NLOC > 1) begin : g_loc1  // local, request class
                    assign dsel[gi*NO + go] = (code == 0) && (RV / 2 == 0);
                end else if (go == LO2) begin : g_loc2            // local, response class
                    assign dsel[gi*NO + go] = (code == 0) && (RV / 2 == 1);
                end else begin : g_port
                    assign dsel[gi*NO + go] = code == go[PB-1:0];
                end
            end
        end
    endgenerate

    // ---------------------------------------------------------------- allocation
    reg  [NO*NI-1:0] conn;        // output o connected to input i: conn[o*NI + i] (one-hot per o)
    reg  [NO-1:0]    conn_first;  // the next flit is the header
    wire [NO-1:0]    conn_v;      // output busy
    wire [NO-1:0]    o_ready;     // the output takes a flit
    wire [NO-1:0]    won;         // output allocated in this cycle
    wire [NO*R-1:0]  gnt;         // grant of each output (one-hot)
    wire [NP-1:0]    wait_ok;     // a head for network output waits only for out_start_ok
    wire [NO-1:0]        xfer, x_last, x_valid, x_bad;  // crossbar outputs
    wire [NO*LINK_W-1:0] x_data;

    assign o_ready[0]      = lout_ready;
    assign o_ready[NP:1]   = out_ready;
    assign o_ready[DROP]   = 1'b1;
    generate
        if (NLOC > 1) begin : g_ordy2
            assign o_ready[LO2] = lout2_ready;
        end
    endgenerate

    generate
        for (go = 0; go < NO; go = go + 1) begin : g_arb
            wire [R-1:0]  req, blk;
            wire [NI-1:0] gin;  // input of the grant
            assign conn_v[go] = |conn[go*NI +: NI];
            for (gi = 0; gi < R; gi = gi + 1) begin : g_req
                localparam integer II = gi / NVC;  // input
                localparam integer VV = gi % NVC;  // VC
                wire mine = h_valid[gi] && dsel[gi*NO + go];
                wire may;
                if (go == 0) begin : g_loc
                    assign may = lout_ready;
                end else if (go == LO2) begin : g_loc2
                    assign may = lout2_ready;
                end else if (go == DROP) begin : g_drop
                    assign may = 1'b1;
                end else begin : g_net
                    // the VC it leaves with: class kept, dateline bit per the rule
                    wire dl = port_dateline[go-1] || ((VV % 2 == 1) && same[II*NO + go]);
                    assign may = out_start_ok[(go-1)*NVC + (VV / 2) * 2 + 1] && dl ||
                                 out_start_ok[(go-1)*NVC + (VV / 2) * 2] && !dl;
                end
                assign req[gi] = mine && !conn_v[go] && may;
                assign blk[gi] = mine && !may;
            end
            for (gi = 0; gi < NI; gi = gi + 1) begin : g_gin
                assign gin[gi] = |gnt[go*R + gi*NVC +: NVC];
            end
            velo_rr_arb #(.N(R)) u_arb (
                .clk(gclk), .rst(rst), .req(req), .gnt(gnt[go*R +: R]), .adv(won[go]));
            assign won[go] = |(gnt[go*R +: R] & acc);
            if (go >= 1 && go <= NP) begin : g_stall
                assign wait_ok[go-1] = !conn_v[go] && (|blk);
            end else begin : g_nostall
                wire unused_ok = &{1'b0, blk};  // never blocked by credits
            end

            always @(posedge gclk) begin
                if (rst) begin
                    conn[go*NI +: NI] <= {NI{1'b0}};
                    conn_first[go]    <= 1'b0;
                end else if (won[go]) begin
                    conn[go*NI +: NI] <= gin;
                    conn_first[go]    <= 1'b1;
                end else if (xfer[go]) begin
                    conn_first[go] <= 1'b0;
                    if (x_last[go]) conn[go*NI +: NI] <= {NI{1'b0}};
                end
            end
            // invariant (simulation only): an output is connected to one input at most
            `VELO_ASSERT(gclk, rst, (conn[go*NI +: NI] & (conn[go*NI +: NI] - 1'b1)) == {NI{1'b0}}, "velo_switch: an output connected to two inputs")
        end

        for (gi = 0; gi < NI; gi = gi + 1) begin : g_acc
            // grants offered to this input's VCs (each (input, VC) wants one output)
            wire [NVC-1:0] offer;
            wire [NO-1:0]  rdy;  // outputs connected to this input, ready
            for (gv = 0; gv < NVC; gv = gv + 1) begin : g_off
                wire [NO-1:0] by;
                for (go = 0; go < NO; go = go + 1) begin : g_by
                    assign by[go] = gnt[go*R + gi*NVC + gv];
                end
                assign offer[gv] = |by;
            end
            velo_rr_arb #(.N(NVC)) u_acc (
                .clk(gclk), .rst(rst), .req(offer), .gnt(acc[gi*NVC +: NVC]), .adv(|offer));
            // the input's flits are taken when the output it is connected to takes them
            for (go = 0; go < NO; go = go + 1) begin : g_rdy
                assign rdy[go] = conn[go*NI + gi] && o_ready[go];
            end
            assign s_ready[gi] = |rdy;
        end
    endgenerate
    assign ev_credit_stall = wait_ok;

    wire idle = !l_act && !l_valid && l2_quiet && (conn == {(NO*NI){1'b0}}) && (in_idle == {NP{1'b1}});
    assign gate_en = !idle || rst || (|in_valid) || lin_valid || (NLOC > 1 && lin2_valid);
    velo_sim_gate u_gate (.clk(clk), .en(gate_en), .gclk(gclk));
    assign ev_bad_route    = won[DROP];

    // ---------------------------------------------------------------- crossbar
    // AND-OR multiplexers on the one-hot connections; the header leaves with ROUTE shifted and the
    // VC rewritten (from the VC the input streams: its FIFO, or the local header's)
    generate
        for (go = 0; go < NO; go = go + 1) begin : g_xbar
            reg [LINK_W-1:0] d;
            reg [1:0]        vin;
            reg              v, l, b, sm;
            integer          k;
            always @* begin
                d   = {LINK_W{1'b0}};
                vin = 2'd0;
                {v, l, b, sm} = 4'd0;
                for (k = 0; k < NI; k = k + 1) begin
                    if (conn[go*NI + k]) begin
                        d   = d | s_data[k*LINK_W +: LINK_W];
                        vin = vin | s_vc[2*k +: 2];
                        v   = v | s_valid[k];
                        l   = l | s_last[k];
                        b   = b | s_bad[k];
                        sm  = sm | same[k*NO + go];
                    end
                end
            end
            wire [13:0] route_sh = d[15:2] >> PB;
            wire [1:0]  vc_o;
            if (go >= 1 && go <= NP) begin : g_net
                assign vc_o = {vin[1], port_dateline[go-1] || (vin[0] && sm)};
            end else begin : g_loc  // local outputs and the drop sink
                assign vc_o = vin;  // local output: VC unchanged
            end
            assign x_valid[go] = v;
            assign x_last[go]  = l;
            assign x_bad[go]   = b;
            if (LINK_W > 16) begin : g_wide
                assign x_data[go*LINK_W +: LINK_W] = conn_first[go] ? {d[LINK_W-1:16], route_sh, vc_o} : d;
            end else begin : g_narrow
                assign x_data[go*LINK_W +: LINK_W] = conn_first[go] ? {route_sh, vc_o} : d;
            end
            assign xfer[go] = x_valid[go] && o_ready[go];
        end
    endgenerate

    assign lout_valid = x_valid[0];
    assign lout_data  = x_data[0 +: LINK_W];
    assign lout_last  = x_last[0];
    assign lout_bad   = x_bad[0];
    assign out_valid  = x_valid[NP:1];
    assign out_data   = x_data[LINK_W +: NP*LINK_W];
    assign out_last   = x_last[NP:1];
    assign out_bad    = x_bad[NP:1];
    generate
        if (NLOC > 1) begin : g_lout2
            assign lout2_valid = x_valid[LO2];
            assign lout2_data  = x_data[LO2*LINK_W +: LINK_W];
            assign lout2_last  = x_last[LO2];
            assign lout2_bad   = x_bad[LO2];
        end else begin : g_nolout2
            assign lout2_valid = 1'b0;
            assign lout2_data  = {LINK_W{1'b0}};
            assign lout2_last  = 1'b0;
            assign lout2_bad   = 1'b0;
            wire unused_l2o = &{1'b0, lout2_ready};
        end
    endgenerate
    wire unused_ok = &{1'b0, x_data[DROP*LINK_W +: LINK_W], x_bad[DROP], same[NO-1:0]};
endmodule
`default_nettype wire
