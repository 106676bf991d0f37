// One network input of the switch: the receive buffer of a link, NVC virtual-channel FIFOs of
// VC_DEPTH flits in one simple dual-port RAM (one write port for the link, one read port for the
// crossbar; VC v owns the region {v, ptr}), plus a small queue per VC of the route codes of the
// packets waiting in it, so that the head packet of every VC is visible at once without using the
// RAM read port.
//
// Write side (the link rx, no back pressure): flits of one packet at a time, {data, last, bad} with
// its VC. A packet is admitted when its first flit finds room for a whole packet (MAX_PKT_FLITS)
// in its VC and a free route-code entry; the link's credits (virtual cut-through admission at the
// sender) guarantee both. Otherwise (a design error upstream) the packet is dropped and counted
// (ev_overflow); a packet longer than MAX_PKT_FLITS is cut: its MAX_PKT_FLITS-th flit is stored as
// last+bad and the rest dropped (counted). Dropped flits are returned as credits at once (in_free),
// so the credit loop never leaks.
//
// Read side: while idle, h_valid[v]/h_code[v] offer the head packet of each VC; acc/acc_vc start
// one (the first flit is read from the RAM in that cycle and appears on the stream the next
// cycle). The packet then streams (s_valid/s_ready, first-word-fall-through on the RAM's output
// register) until its last flit; flits arriving while it streams are read as soon as they are in
// (cut-through). in_free[v] pulses as flits of VC v leave the RAM.
`default_nettype none
`include "velo_check.vh"
module velo_sw_input #(
    parameter integer LINK_W        = 16,  // flit width in bits: 16, 32 or 64
    parameter integer NVC           = 4,   // virtual channels (must be 4: the VC field is 2 bits)
    parameter integer VC_DEPTH      = 64,  // FIFO size per VC in flits, >= MAX_PKT_FLITS
    parameter integer PB            = 2,   // route code bits (the low PB bits of ROUTE)
    parameter integer MAX_PKT_FLITS = 64 / LINK_W + 512 / LINK_W  // longest packet in flits (velo_switch: from MAX_AREA)
) (
    input  wire              clk,
    input  wire              rst,          // synchronous, active high
    // from the link rx
    input  wire              in_valid,     // a flit (no back pressure)
    input  wire [LINK_W-1:0] in_data,      // flit data
    input  wire              in_last,      // last flit of its packet
    input  wire              in_bad,       // with in_last: discard the packet
    input  wire [1:0]        in_vc,        // VC of the packet (constant during a packet)
    output wire [NVC-1:0]    in_free,      // one flit of VC v left the buffer (credit)
    // head packets (valid only while idle)
    output wire [NVC-1:0]    h_valid,      // VC v has a head packet that may be started now
    output wire [NVC*PB-1:0] h_code,       // its route code (ROUTE[PB-1:0]) at [v*PB +: PB]
    input  wire              acc,          // start the head packet of acc_vc (requires h_valid)
    input  wire [1:0]        acc_vc,       // VC to start
    output wire [1:0]        s_vc,         // VC of the packet being streamed
    // the packet being streamed
    output wire              s_valid,      // flit valid
    input  wire              s_ready,      // flit taken
    output wire [LINK_W-1:0] s_data,       // flit data (unchanged; the crossbar rewrites the header)
    output wire              s_last,       // last flit
    output wire              s_bad,        // with s_last: packet bad
    output wire              ev_overflow,  // a packet was dropped or cut (design error upstream)
    // at rest (every VC empty, not streaming, not inside a packet): with in_valid and acc low no
    // register changes (velo_switch gates its clock in simulation)
    output wire              idle
);
    `VELO_CHECK_LINK_W
    `VELO_CHECK(g_check_nvc, NVC == 4, "velo_sw_input: NVC must be 4")
    `VELO_CHECK(g_check_pb, PB >= 1 && PB <= 14, "velo_sw_input: PB must be 1..14 (the route field is 14 bits)")
    `VELO_CHECK(g_check_max_pkt, MAX_PKT_FLITS >= 2, "velo_sw_input: MAX_PKT_FLITS must be at least 2")
    `VELO_CHECK(g_check_vc_depth, VC_DEPTH >= MAX_PKT_FLITS, "velo_sw_input: VC_DEPTH must hold a largest packet (MAX_PKT_FLITS)")

    localparam integer AW   = $clog2(VC_DEPTH);       // address bits inside a VC region
    localparam integer CW   = $clog2(VC_DEPTH + 1);   // occupancy counter bits
    localparam integer FW   = LINK_W + 2;             // stored flit {bad, last, data}
    // Route-code entries per VC: every packet has at least 2 flits (header + last; a truncated
    // one ends with a separate last+bad flit), all queued packets but the newest are complete,
    // so at most (VC_DEPTH-1)/2+1 packets are waiting in a VC.
    localparam integer HN   = (VC_DEPTH - 1) / 2 + 1;
    localparam integer HW   = (HN > 1) ? $clog2(HN) : 1;
    localparam integer LW   = $clog2(MAX_PKT_FLITS + 1);  // flits of the packet being written
    localparam integer ADMIT_MAX = VC_DEPTH - MAX_PKT_FLITS;  // occupancy limit for a new packet
    localparam integer LEN_CUT   = MAX_PKT_FLITS - 1;         // flits before a forced cut
    localparam integer DEPTH_M1  = VC_DEPTH - 1;
    localparam         POW2      = (1 << AW) == VC_DEPTH;  // regions wrap by themselves

    // ---------------------------------------------------------------- per-VC state (g_vc)
    wire [NVC*AW-1:0]     wr_ptr, rd_ptr;  // next write / read address inside each region
    wire [NVC*CW-1:0]     cnt;             // flits stored per VC
    wire [NVC*(HW+1)-1:0] hq_n;            // route codes queued per VC

    // ---------------------------------------------------------------- write side
    reg          w_mid;   // inside a packet (the next flit is not a first flit)
    reg          w_drop;  // dropping the rest of the current packet
    reg [LW-1:0] w_len;   // flits of the current packet stored so far

    wire          first   = !w_mid;
    wire [CW-1:0] cnt_in  = cnt[in_vc*CW +: CW];
    wire [HW:0]   hqn_in  = hq_n[in_vc*(HW+1) +: (HW+1)];
    wire          admit   = (cnt_in <= ADMIT_MAX[CW-1:0]) && (hqn_in != HN[HW:0]);
    // the MAX_PKT_FLITS-th flit without last: store it as last+bad, drop the rest
    wire          cut     = in_valid && !first && !w_drop && !in_last && (w_len == LEN_CUT[LW-1:0]);
    wire          wdrop   = in_valid && (first ? !admit : w_drop);
    wire          we      = in_valid && !wdrop;
    wire          push    = in_valid && first && admit;
    wire [FW-1:0] wdata   = {(in_bad && in_last) || cut, in_last || cut, in_data};
    assign ev_overflow = (in_valid && first && !admit) || cut;

    always @(posedge clk) begin
        if (rst) begin
            w_mid  <= 1'b0;
            w_drop <= 1'b0;
            w_len  <= {LW{1'b0}};
        end else if (in_valid) begin
            w_mid  <= !in_last;
            w_drop <= !in_last && (first ? !admit : (w_drop || cut));
            if (we) w_len <= first ? {{(LW-1){1'b0}}, 1'b1} : w_len + 1'b1;
        end
    end

    // ---------------------------------------------------------------- read side
    reg        act;     // streaming a packet
    reg [1:0]  act_vc;  // its VC
    reg        sv;      // the RAM output register holds the packet's next flit
    wire [FW-1:0] rdata;

    assign s_data  = rdata[LINK_W-1:0];
    assign s_last  = rdata[LINK_W];
    assign s_bad   = rdata[LINK_W+1];
    assign s_valid = act && sv;
    assign s_vc    = act_vc;

    wire consume = act && sv && s_ready;
    wire fin     = consume && s_last;
    // a dropped flit returns its credit in this cycle: the read side leaves that VC alone, so
    // in_free carries at most one pulse per VC and cycle
    wire [NVC-1:0] coll;
    wire [CW-1:0]  cnt_act = cnt[act_vc*CW +: CW];
    wire stream_re = act && !(sv && s_last) && (cnt_act != {CW{1'b0}}) && (!sv || consume) && !coll[act_vc];
    wire       re  = (acc && !act) || stream_re;
    wire [1:0] rvc = act ? act_vc : acc_vc;
    wire [AW-1:0] rptr = rd_ptr[rvc*AW +: AW];
    wire [AW-1:0] wptr = wr_ptr[in_vc*AW +: AW];

    velo_sdp_ram #(.W(FW), .ADDR_W(2 + AW)) u_ram (
        .clk(clk), .we(we), .waddr({in_vc, wptr}), .wdata(wdata),
        .re(re), .raddr({rvc, rptr}), .rdata(rdata));

    always @(posedge clk) begin
        if (rst) begin
            act    <= 1'b0;
            act_vc <= 2'd0;
            sv     <= 1'b0;
        end else begin
            if (acc && !act) begin
                act    <= 1'b1;
                act_vc <= acc_vc;
            end else if (fin) begin
                act <= 1'b0;
            end
            if (re) sv <= 1'b1;
            else if (consume) sv <= 1'b0;
        end
    end

    // ---------------------------------------------------------------- per VC
    wire [NVC-1:0] vc_empty;
    assign idle = !w_mid && !act && !sv && (vc_empty == {NVC{1'b1}});

    genvar v;
    generate
        for (v = 0; v < NVC; v = v + 1) begin : g_vc
            wire wr_v   = we && (in_vc == v);
            wire rd_v   = re && (rvc == v);
            wire push_v = push && (in_vc == v);
            wire pop_v  = acc && !act && (acc_vc == v);
            reg [AW-1:0] wp, rp;    // write / read pointer inside the region
            reg [CW-1:0] n;         // flits stored
            reg [HW:0]   hwp, hrp;  // route-code queue pointers (one wrap bit)
            wire [HW:0]  hn = hwp - hrp;  // route codes queued
            assign wr_ptr[v*AW +: AW]     = wp;
            assign rd_ptr[v*AW +: AW]     = rp;
            assign cnt[v*CW +: CW]        = n;
            assign hq_n[v*(HW+1) +: HW+1] = hn;
            assign vc_empty[v]            = (n == {CW{1'b0}}) && (hwp == hrp);

            assign coll[v]    = wdrop && (in_vc == v);
            assign in_free[v] = rd_v || coll[v];
            assign h_valid[v] = !act && (hwp != hrp) && !coll[v];

            // route codes of the packets waiting in this VC (small: LUT RAM), read asynchronously
            reg [PB-1:0] hq [0:(1<<HW)-1];
            always @(posedge clk) begin
                if (push_v) hq[hwp[HW-1:0]] <= in_data[2 +: PB];
            end
            assign h_code[v*PB +: PB] = hq[hrp[HW-1:0]];

            always @(posedge clk) begin
                if (rst) begin
                    wp  <= {AW{1'b0}};
                    rp  <= {AW{1'b0}};
                    n   <= {CW{1'b0}};
                    hwp <= {(HW+1){1'b0}};
                    hrp <= {(HW+1){1'b0}};
                end else begin
                    if (wr_v) wp <= (!POW2 && wp == DEPTH_M1[AW-1:0]) ? {AW{1'b0}} : wp + 1'b1;
                    if (rd_v) rp <= (!POW2 && rp == DEPTH_M1[AW-1:0]) ? {AW{1'b0}} : rp + 1'b1;
                    if (wr_v && !rd_v) n <= n + 1'b1;
                    else if (rd_v && !wr_v) n <= n - 1'b1;
                    if (push_v) hwp <= hwp + 1'b1;
                    if (pop_v) hrp <= hrp + 1'b1;
                end
            end
        end
    endgenerate
endmodule
`default_nettype wire
