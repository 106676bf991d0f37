// Network port PHY of the 7-series board: the NIC's {sync[1:0], flit} word (W = LINK_W + 2 bits,
// one per NIC clock cycle) carried source-synchronously over LVDS pairs of the FMC connector.
//
//   transmit: W/2 data pairs, double data rate (pair i: bit i on the rising edge, bit i + W/2 on
//             the falling edge of the forwarded clock's period), ODDR in the IOB; plus one pair
//             with the forwarded clock, generated from clk90 (the NIC clock shifted by 90
//             degrees), so its edges sit in the middle of the data eye.
//   receive:  the neighbour's forwarded clock through a regional buffer (BUFR) clocks the IDDRs
//             and the write side of an elastic buffer (velo_elastic, rtl/common) that crosses into the
//             NIC clock.
//
// At LINK_W = 16 and a 125 MHz NIC clock: 9 pairs at 250 Mb/s plus a clock pair each way,
// 2.25 Gb/s of raw link capacity per direction (2.0 Gb/s of flits).
//
// The two ends run from different clocks (each NIC runs on its own PCIe core's user clock). When
// those have the same frequency (both cards in one host, sharing the reference clock), the
// elastic buffer never slips; between hosts the reference clocks differ (+-300 ppm allowed by
// PCIe, more with spread-spectrum clocking) and the buffer slips now and then: a lost or an
// inserted "no signal" word, which the link layer detects and repairs by retransmission (slip
// pulses for every inserted word). This is a board-level PHY for a bench pair, not a substitute
// for a transceiver PHY with clock compensation; see docs/board-xc7.md.
//
// Pin placement (clock-capable pin for the received clock, all receive pairs in its clock region)
// is a constraint matter: fpga/xc7/constraints/ac701.xdc.
`default_nettype none
`include "velo_check.vh"
module velo_xc7_link_phy #(
    parameter integer W  = 18,  // word width: LINK_W + 2 (even)
    parameter integer AW = 4    // log2 of the elastic buffer depth
) (
    input  wire           clk,      // NIC clock
    input  wire           clk90,    // NIC clock shifted by 90 degrees (forwarded clock)
    input  wire           rst,      // synchronous to clk, active high
    input  wire [W-1:0]   phy_tx,   // from the NIC
    output wire [W-1:0]   phy_rx,   // to the NIC
    output wire           slip,     // pulse (clk): the receive side inserted a "no signal" word
    // pins
    output wire [W/2-1:0] tx_p,
    output wire [W/2-1:0] tx_n,
    output wire           txclk_p,
    output wire           txclk_n,
    input  wire [W/2-1:0] rx_p,
    input  wire [W/2-1:0] rx_n,
    input  wire           rxclk_p,
    input  wire           rxclk_n
);
    `VELO_CHECK(g_check_w, W >= 4 && W % 2 == 0, "velo_xc7_link_phy: W must be even, at least 4")
    `VELO_CHECK(g_check_aw, AW >= 2, "velo_xc7_link_phy: AW must be at least 2")

    localparam integer H = W / 2;

    // ---------------------------------------------------------------- transmit
    reg [W-1:0] tx_q;  // one register stage ahead of the IOB
    always @(posedge clk) tx_q <= rst ? {W{1'b0}} : phy_tx;

    genvar i;
    generate
        for (i = 0; i < H; i = i + 1) begin : g_tx
            wire q;
            ODDR #(.DDR_CLK_EDGE("SAME_EDGE"), .INIT(1'b0), .SRTYPE("SYNC")) u_oddr (
                .Q(q), .C(clk), .CE(1'b1), .D1(tx_q[i]), .D2(tx_q[i + H]), .R(1'b0), .S(1'b0));
            OBUFDS #(.IOSTANDARD("LVDS_25")) u_obuf (.O(tx_p[i]), .OB(tx_n[i]), .I(q));
        end
    endgenerate

    wire txclk_q;
    ODDR #(.DDR_CLK_EDGE("SAME_EDGE"), .INIT(1'b0), .SRTYPE("SYNC")) u_oddr_clk (
        .Q(txclk_q), .C(clk90), .CE(1'b1), .D1(1'b1), .D2(1'b0), .R(1'b0), .S(1'b0));
    OBUFDS #(.IOSTANDARD("LVDS_25")) u_obuf_clk (.O(txclk_p), .OB(txclk_n), .I(txclk_q));

    // ---------------------------------------------------------------- receive
    wire rxclk_i, rx_clk;
    IBUFDS #(.DIFF_TERM("TRUE"), .IOSTANDARD("LVDS_25")) u_ibuf_clk (
        .O(rxclk_i), .I(rxclk_p), .IB(rxclk_n));
    BUFR #(.BUFR_DIVIDE("BYPASS"), .SIM_DEVICE("7SERIES")) u_bufr (
        .O(rx_clk), .CE(1'b1), .CLR(1'b0), .I(rxclk_i));

    wire [W-1:0] rx_word;
    generate
        for (i = 0; i < H; i = i + 1) begin : g_rx
            wire d;
            IBUFDS #(.DIFF_TERM("TRUE"), .IOSTANDARD("LVDS_25")) u_ibuf (.O(d), .I(rx_p[i]), .IB(rx_n[i]));
            IDDR #(.DDR_CLK_EDGE("SAME_EDGE_PIPELINED"), .INIT_Q1(1'b0), .INIT_Q2(1'b0), .SRTYPE("SYNC")) u_iddr (
                .Q1(rx_word[i]), .Q2(rx_word[i + H]), .C(rx_clk), .CE(1'b1), .D(d), .R(1'b0), .S(1'b0));
        end
    endgenerate

    // the NIC reset, brought into the received clock's domain
    (* ASYNC_REG = "TRUE" *) reg [1:0] rx_rst_s;
    always @(posedge rx_clk) rx_rst_s <= {rx_rst_s[0], rst};

    wire wr_drop;
    velo_elastic #(.W(W), .AW(AW), .IDLE({W{1'b0}})) u_elastic (
        .wr_clk(rx_clk), .wr_rst(rx_rst_s[1]), .wr_data(rx_word), .wr_drop(wr_drop),
        .rd_clk(clk), .rd_rst(rst), .rd_data(phy_rx), .rd_slip(slip));

    // a dropped word (the neighbour's clock is faster) is seen by the link layer as a CRC error
    wire unused_ok = &{1'b0, wr_drop};
endmodule
`default_nettype wire
