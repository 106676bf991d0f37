// Everything of the iCE40-HX8K board design that is not vendor-specific: the NIC in the board's
// configuration (velo_nic), the UART host bridge (velo_uart_bridge), the network port's pins
// (registered transmit word; receive word captured with the neighbour's forwarded clock and moved
// into the NIC clock by velo_elastic) and the LEDs. velo_ice40_top adds the PLL, the reset
// and the forwarded clock's output buffer; the Verilator benches use this module directly.
//
// Network port timing: the neighbour launches its word on the rising edge of its clock and
// forwards that clock; we sample the word on the falling edge of the forwarded clock (half a
// period after launch: the skew between the wires may use up to nearly half a period) and write
// it into the elastic buffer on the next rising edge.
//
// LEDs (active high): 0 link up, 1 a data flit sent or received, 2 a command frame from the host
// accepted, 3 a byte sent to the host, 4 elastic buffer slip (words lost or IDLE inserted),
// 5 interrupt request waiting, 6 host asked to pause (CTS), 7 heartbeat. Events are stretched to
// one LED period (2^LED_BITS clock cycles) so that single pulses are visible.
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
module velo_ice40_board #(
    parameter integer CLKS_PER_BIT  = 16,       // NIC clock cycles per UART bit (48 MHz / 3 Mbaud)
    parameter integer NODE_BITS     = 4,        // node id width (spec param NODE_BITS): 16 nodes
    parameter integer VPID_BITS     = 4,        // vpid width (spec param VPID_BITS): 16 vpids
    parameter integer COUNTERS      = 0,        // the 16 event counters (1) or reads of 0 (0)
    parameter integer LINK_COUNTERS = 0,        // the link's 8 counters (1) or reads of 0 (0)
    parameter [15:0]  CFG_ID        = 16'h0100, // the NIC's PCIe-style id (bus 1, device 0, function 0)
    parameter integer ELASTIC_AW    = 4,        // log2 of the elastic buffer depth in words
    parameter integer LED_BITS      = 20,       // LED period: 2^LED_BITS NIC clock cycles
    parameter integer PIPE          = 1         // velo_nic's register stages for timing (1), or none (0)
) (
    input  wire         clk,         // NIC clock
    input  wire         rst,         // synchronous to clk, active high
    // UART to the host (FT2232H channel B)
    input  wire         uart_rxd,
    output wire         uart_txd,
    output wire         uart_cts_n,
    // network port: our word and the neighbour's, with its forwarded clock
    output reg  [17:0]  net_tx,      // {sync[1:0], flit[15:0]}, changes on the rising edge of clk
    input  wire         net_rx_clk,
    input  wire [17:0]  net_rx,
    // LEDs
    output wire [7:0]   led
);
    `VELO_CHECK(g_check_clks, CLKS_PER_BIT >= 4, "velo_ice40_board: CLKS_PER_BIT must be at least 4")
    `VELO_CHECK_NODE_BITS
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK_FLAG(g_check_counters, COUNTERS, "COUNTERS must be 0 or 1")
    `VELO_CHECK_FLAG(g_check_link_counters, LINK_COUNTERS, "LINK_COUNTERS must be 0 or 1")
    `VELO_CHECK(g_check_elastic_aw, ELASTIC_AW >= 2, "velo_ice40_board: ELASTIC_AW must be at least 2")
    `VELO_CHECK(g_check_led_bits, LED_BITS >= 1, "velo_ice40_board: LED_BITS must be at least 1")
    `VELO_CHECK_PIPE

    localparam integer LINK_W = 16;
    localparam integer PW     = LINK_W + 2;

    // ---------------------------------------------------------------- NIC
    wire         rx_valid, rx_ready, rx_sop, rx_eop;
    wire [127:0] rx_hdr;
    wire [2:0]   rx_bar;
    wire [63:0]  rx_data;
    wire         tx_valid, tx_ready, tx_sop, tx_eop;
    wire [127:0] tx_hdr;
    wire [63:0]  tx_data;
    wire         irq_valid, irq_ready, port_up;
    wire [PW-1:0] phy_tx, el_rx;
    reg  [PW-1:0] phy_rx;  // the elastic buffer's word, registered

    // velo_nic in the board's configuration (docs/board-guide.md): one network port through
    // velo_switch_lite, one virtual channel, counters as the parameters say
    velo_nic #(.NODE_BITS(NODE_BITS), .VPID_BITS(VPID_BITS), .TLP_W(64), .LINK_W(LINK_W), .NP(1),
               .VC_DEPTH(64), .REPLAY_DEPTH(256), .NVC(1), .SWITCH_LITE(1), .RMA(0),
               .COUNTERS(COUNTERS), .LINK_COUNTERS(LINK_COUNTERS), .PIPE(PIPE)) u_nic (
        .clk(clk), .rst(rst), .cfg_id(CFG_ID),
        .rx_valid(rx_valid), .rx_ready(rx_ready), .rx_sop(rx_sop), .rx_eop(rx_eop),
        .rx_hdr(rx_hdr), .rx_bar(rx_bar), .rx_data(rx_data),
        .tx_valid(tx_valid), .tx_ready(tx_ready), .tx_sop(tx_sop), .tx_eop(tx_eop),
        .tx_hdr(tx_hdr), .tx_data(tx_data),
        .phy_tx(phy_tx), .phy_rx(phy_rx), .port_up(port_up),
        .irq_valid(irq_valid), .irq_ready(irq_ready));

    // ---------------------------------------------------------------- host bridge
    wire act_rx, act_tx;
    velo_uart_bridge #(.CLKS_PER_BIT(CLKS_PER_BIT)) u_bridge (
        .clk(clk), .rst(rst),
        .rxd(uart_rxd), .txd(uart_txd), .cts_n(uart_cts_n),
        .rx_valid(rx_valid), .rx_ready(rx_ready), .rx_sop(rx_sop), .rx_eop(rx_eop),
        .rx_hdr(rx_hdr), .rx_bar(rx_bar), .rx_data(rx_data),
        .tx_valid(tx_valid), .tx_ready(tx_ready), .tx_sop(tx_sop), .tx_eop(tx_eop),
        .tx_hdr(tx_hdr), .tx_data(tx_data),
        .irq_valid(irq_valid), .irq_ready(irq_ready),
        .act_rx(act_rx), .act_tx(act_tx));

    // ---------------------------------------------------------------- network port pins
    always @(posedge clk) begin
        if (rst) net_tx <= {PW{1'b0}};  // "no signal" while in reset
        else     net_tx <= phy_tx;
    end

    // receive side, in the forwarded clock's domain: its reset follows ours through a
    // two-flop synchroniser (these two flip-flops are the reset, they have none themselves)
    reg          rrst1, rrst2;
    reg [PW-1:0] rx_neg;
    always @(posedge net_rx_clk) begin
        rrst1 <= rst;
        rrst2 <= rrst1;
    end
    always @(negedge net_rx_clk) begin
        rx_neg <= net_rx;
    end

    wire wr_drop, rd_slip;
    velo_elastic #(.W(PW), .AW(ELASTIC_AW)) u_elastic (
        .wr_clk(net_rx_clk), .wr_rst(rrst2), .wr_data(rx_neg), .wr_drop(wr_drop),
        .rd_clk(clk), .rd_rst(rst), .rd_data(el_rx), .rd_slip(rd_slip));

    // one register between the buffer's block RAM (and its IDLE select) and the NIC's link
    // receiver: the RAM's clock-to-output time is not added to the receiver's input paths (one
    // more cycle on the wire, which the link does not mind)
    always @(posedge clk) begin
        if (rst) phy_rx <= {PW{1'b0}};  // "no signal"
        else     phy_rx <= el_rx;
    end

    // a word dropped in the forwarded clock's domain, seen in ours (toggle synchroniser)
    reg drop_t;
    reg [2:0] drop_s;
    always @(posedge net_rx_clk) begin
        if (rrst2) drop_t <= 1'b0;
        else if (wr_drop) drop_t <= !drop_t;
    end
    always @(posedge clk) begin
        if (rst) drop_s <= 3'd0;
        else     drop_s <= {drop_s[1:0], drop_t};
    end
    wire ev_drop = drop_s[2] ^ drop_s[1];

    // ---------------------------------------------------------------- LEDs
    reg [LED_BITS-1:0] prescale;
    reg [5:0]          seen, shown;
    reg                beat;
    wire tick = prescale == {LED_BITS{1'b1}};
    wire data_flit = phy_tx[PW-1:PW-2] == 2'b01 || phy_rx[PW-1:PW-2] == 2'b01;
    wire [5:0] ev = {uart_cts_n, irq_valid, rd_slip || ev_drop, act_tx, act_rx, data_flit};
    always @(posedge clk) begin
        if (rst) begin
            prescale <= {LED_BITS{1'b0}};
            seen     <= 6'd0;
            shown    <= 6'd0;
            beat     <= 1'b0;
        end else begin
            prescale <= prescale + 1'b1;
            if (tick) begin
                shown <= seen | ev;
                seen  <= 6'd0;
                beat  <= !beat;
            end else begin
                seen <= seen | ev;
            end
        end
    end
    assign led = {beat, shown, port_up};
endmodule
`default_nettype wire
