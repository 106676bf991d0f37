// Simulation top: two VELO NICs (nodes A and B) back to back over the minimal link, a chain of
// LINK_STAGES register slices in each direction standing for the wire. Both NICs' TLP streams are
// ports, driven by the C++ host models. The A-to-B link handshake is brought out for measurements.
`default_nettype none
module velo_pair #(
    parameter integer NODE_BITS   = 8,   // node id width
    parameter integer VPID_BITS   = 8,   // vpid width
    parameter integer TLP_W       = 64,  // TLP stream data width
    parameter integer LINK_W      = 16,  // flit width
    parameter integer LINK_STAGES = 1    // register slices per link direction (>= 1)
) (
    input  wire              clk,
    input  wire              rst,
    // node A host side
    input  wire              a_rx_valid,
    output wire              a_rx_ready,
    input  wire              a_rx_sop,
    input  wire              a_rx_eop,
    input  wire [127:0]      a_rx_hdr,
    input  wire [2:0]        a_rx_bar,
    input  wire [TLP_W-1:0]  a_rx_data,
    output wire              a_tx_valid,
    input  wire              a_tx_ready,
    output wire              a_tx_sop,
    output wire              a_tx_eop,
    output wire [127:0]      a_tx_hdr,
    output wire [TLP_W-1:0]  a_tx_data,
    // node B host side
    input  wire              b_rx_valid,
    output wire              b_rx_ready,
    input  wire              b_rx_sop,
    input  wire              b_rx_eop,
    input  wire [127:0]      b_rx_hdr,
    input  wire [2:0]        b_rx_bar,
    input  wire [TLP_W-1:0]  b_rx_data,
    output wire              b_tx_valid,
    input  wire              b_tx_ready,
    output wire              b_tx_sop,
    output wire              b_tx_eop,
    output wire [127:0]      b_tx_hdr,
    output wire [TLP_W-1:0]  b_tx_data,
    // link observation: a flit leaves node A's network port
    output wire              ab_tx_fire
);
    wire              at_v, at_r, at_l, ar_v, ar_r, ar_l;
    wire [LINK_W-1:0] at_d, ar_d;
    wire              bt_v, bt_r, bt_l, br_v, br_r, br_l;
    wire [LINK_W-1:0] bt_d, br_d;

    velo_nic #(.NODE_BITS(NODE_BITS), .VPID_BITS(VPID_BITS), .TLP_W(TLP_W), .LINK_W(LINK_W)) u_a (
        .clk(clk), .rst(rst), .cfg_id(16'h0100), .link_up(1'b1),
        .rx_valid(a_rx_valid), .rx_ready(a_rx_ready), .rx_sop(a_rx_sop), .rx_eop(a_rx_eop),
        .rx_hdr(a_rx_hdr), .rx_bar(a_rx_bar), .rx_data(a_rx_data),
        .tx_valid(a_tx_valid), .tx_ready(a_tx_ready), .tx_sop(a_tx_sop), .tx_eop(a_tx_eop),
        .tx_hdr(a_tx_hdr), .tx_data(a_tx_data),
        .net_tx_valid(at_v), .net_tx_ready(at_r), .net_tx_data(at_d), .net_tx_last(at_l),
        .net_rx_valid(ar_v), .net_rx_ready(ar_r), .net_rx_data(ar_d), .net_rx_last(ar_l));

    velo_nic #(.NODE_BITS(NODE_BITS), .VPID_BITS(VPID_BITS), .TLP_W(TLP_W), .LINK_W(LINK_W)) u_b (
        .clk(clk), .rst(rst), .cfg_id(16'h0200), .link_up(1'b1),
        .rx_valid(b_rx_valid), .rx_ready(b_rx_ready), .rx_sop(b_rx_sop), .rx_eop(b_rx_eop),
        .rx_hdr(b_rx_hdr), .rx_bar(b_rx_bar), .rx_data(b_rx_data),
        .tx_valid(b_tx_valid), .tx_ready(b_tx_ready), .tx_sop(b_tx_sop), .tx_eop(b_tx_eop),
        .tx_hdr(b_tx_hdr), .tx_data(b_tx_data),
        .net_tx_valid(bt_v), .net_tx_ready(bt_r), .net_tx_data(bt_d), .net_tx_last(bt_l),
        .net_rx_valid(br_v), .net_rx_ready(br_r), .net_rx_data(br_d), .net_rx_last(br_l));

    // the wires: LINK_STAGES register slices each way
    wire [LINK_W:0] ab_c [0:LINK_STAGES];
    wire [LINK_W:0] ba_c [0:LINK_STAGES];
    wire            ab_v [0:LINK_STAGES];
    wire            ab_r [0:LINK_STAGES];
    wire            ba_v [0:LINK_STAGES];
    wire            ba_r [0:LINK_STAGES];
    assign ab_c[0] = {at_l, at_d};
    assign ab_v[0] = at_v;
    assign at_r    = ab_r[0];
    assign ba_c[0] = {bt_l, bt_d};
    assign ba_v[0] = bt_v;
    assign bt_r    = ba_r[0];
    genvar s;
    generate
        for (s = 0; s < LINK_STAGES; s = s + 1) begin : g_link
            velo_skid #(.W(LINK_W + 1)) u_ab (
                .clk(clk), .rst(rst),
                .s_valid(ab_v[s]), .s_ready(ab_r[s]), .s_data(ab_c[s]),
                .m_valid(ab_v[s+1]), .m_ready(ab_r[s+1]), .m_data(ab_c[s+1]));
            velo_skid #(.W(LINK_W + 1)) u_ba (
                .clk(clk), .rst(rst),
                .s_valid(ba_v[s]), .s_ready(ba_r[s]), .s_data(ba_c[s]),
                .m_valid(ba_v[s+1]), .m_ready(ba_r[s+1]), .m_data(ba_c[s+1]));
        end
    endgenerate
    assign br_v = ab_v[LINK_STAGES];
    assign ab_r[LINK_STAGES] = br_r;
    assign br_d = ab_c[LINK_STAGES][LINK_W-1:0];
    assign br_l = ab_c[LINK_STAGES][LINK_W];
    assign ar_v = ba_v[LINK_STAGES];
    assign ba_r[LINK_STAGES] = ar_r;
    assign ar_d = ba_c[LINK_STAGES][LINK_W-1:0];
    assign ar_l = ba_c[LINK_STAGES][LINK_W];

    assign ab_tx_fire = at_v && at_r;
endmodule
`default_nettype wire
