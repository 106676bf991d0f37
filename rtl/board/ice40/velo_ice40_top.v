// Top level of the VELO NIC on the Lattice iCE40-HX8K breakout board (ICE40HX8K-B-EVN): the
// 12 MHz oscillator through the PLL to the NIC clock, the power-on reset, the forwarded clock of
// the network port, and velo_ice40_board (NIC configuration, UART host bridge, port pins, LEDs).
// Pins: fpga/ice40/constraints/hx8k-breakout.pcf; board guide: docs/board-guide.md.
//
// The only vendor primitives of the design are here: SB_PLL40_CORE (the PLL) and SB_IO (a
// double-data-rate output register that forwards the NIC clock to the network connector with the
// same delay as a registered output). For Verilator lint they are matched by the stubs in
// rtl/board/ice40/lint/ (never synthesised; Yosys has the real cell models).
//
// NIC clock: F = 12 MHz * (PLL_DIVF + 1) / 2^PLL_DIVQ (DIVR = 0); the flow computes the
// parameters for the clock it builds for with icepll (fpga/ice40/flow.py) and checks the timing
// at that clock. UART: F / CLKS_PER_BIT baud.
`default_nettype none
`include "velo_check.vh"
module velo_ice40_top #(
    parameter [6:0]   PLL_DIVF     = 7'd63,    // feedback divider (48 MHz: 63, VCO 768 MHz)
    parameter [2:0]   PLL_DIVQ     = 3'd4,     // output divider: VCO / 2^DIVQ (48 MHz: 4)
    parameter [2:0]   PLL_FILTER   = 3'd1,     // loop filter range for a 12 MHz reference
    parameter integer CLKS_PER_BIT = 16,       // NIC clock cycles per UART bit (48 MHz / 3 Mbaud)
    parameter integer NODE_BITS    = 4,        // node id width (spec param NODE_BITS): 16 nodes
    parameter integer VPID_BITS    = 4,        // vpid width (spec param VPID_BITS): 16 vpids
    parameter integer COUNTERS     = 0,        // the 16 event counters (1) or reads of 0 (0)
    parameter integer LINK_COUNTERS = 0,       // the link's 8 counters (1) or reads of 0 (0)
    parameter integer PIPE          = 1        // velo_nic's register stages for timing (1), or none (0)
) (
    input  wire        clk_12m,     // 12 MHz oscillator (ball J3)
    // FT2232H channel B (UART)
    input  wire        uart_rx,     // from the host (FT2232H TXD)
    output wire        uart_tx,     // to the host (FT2232H RXD)
    output wire        uart_cts_n,  // FT2232H CTS#: high asks the host to pause
    // network port (connector J3: transmit, J2: receive)
    output wire [17:0] net_tx,
    output wire        net_tx_clk,
    input  wire [17:0] net_rx,
    input  wire        net_rx_clk,
    // LEDs D2..D9
    output wire [7:0]  led
);
    `VELO_CHECK(g_check_divq, PLL_DIVQ >= 1 && PLL_DIVQ <= 6, "velo_ice40_top: PLL_DIVQ must be 1..6 (iCE40 PLL)")

    // ---------------------------------------------------------------- PLL
    wire clk, lock;
    SB_PLL40_CORE #(
        .FEEDBACK_PATH("SIMPLE"),
        .DIVR(4'd0),
        .DIVF(PLL_DIVF),
        .DIVQ(PLL_DIVQ),
        .FILTER_RANGE(PLL_FILTER)
    ) u_pll (
        .REFERENCECLK(clk_12m),
        .PLLOUTGLOBAL(clk),
        .LOCK(lock),
        .RESETB(1'b1),
        .BYPASS(1'b0)
    );

    // ---------------------------------------------------------------- reset
    // Held while the PLL is not locked and for 2^RW cycles after; the registers start at 0 when
    // the FPGA is configured (reset asserted). lock is asynchronous: two synchroniser stages.
    localparam integer RW = 8;
    reg [1:0]    lock_s;
    reg [RW:0]   rcnt;
    always @(posedge clk) begin
        lock_s <= {lock_s[0], lock};
        if (!lock_s[1])      rcnt <= {(RW+1){1'b0}};
        else if (!rcnt[RW])  rcnt <= rcnt + 1'b1;
    end
    wire rst = !rcnt[RW];

    // ---------------------------------------------------------------- board
    velo_ice40_board #(.CLKS_PER_BIT(CLKS_PER_BIT), .NODE_BITS(NODE_BITS), .VPID_BITS(VPID_BITS),
                       .COUNTERS(COUNTERS), .LINK_COUNTERS(LINK_COUNTERS), .PIPE(PIPE)) u_board (
        .clk(clk), .rst(rst),
        .uart_rxd(uart_rx), .uart_txd(uart_tx), .uart_cts_n(uart_cts_n),
        .net_tx(net_tx), .net_rx_clk(net_rx_clk), .net_rx(net_rx),
        .led(led));

    // ---------------------------------------------------------------- forwarded clock
    // DDR output register: 1 after the rising edge, 0 after the falling edge of the NIC clock
    SB_IO #(
        .PIN_TYPE(6'b010000)  // output: DDR registered; input: none used
    ) u_fwd (
        .PACKAGE_PIN(net_tx_clk),
        .OUTPUT_CLK(clk),
        .D_OUT_0(1'b1),
        .D_OUT_1(1'b0)
    );
endmodule
`default_nettype wire
