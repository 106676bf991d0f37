// UART host bridge of the iCE40 board: the host (a program on the PC, through the FT2232H's
// second channel) plays the PCIe root complex: it sends TLPs (register reads and writes,
// send-window stores) and receives the NIC's TLPs (mailbox DMA writes, read completions) and
// interrupt requests, each as a SLIP-framed message with a CRC over a serial line (8N1;
// protocol: docs/board-guide.md, "UART host protocol").
//
//   rxd -> velo_uart_rx -> velo_uart_down (SLIP, CRC, ring, frames -> TLPs) -> NIC rx stream
//   txd <- velo_uart_tx <- velo_uart_up (TLPs, PONG, ERROR, IRQ -> SLIP frames) <- NIC tx stream
`default_nettype none
module velo_uart_bridge #(
    parameter integer CLKS_PER_BIT = 12  // clock cycles per UART bit (clock / baud rate: 36 MHz / 3 Mbaud; the board passes its own)
) (
    input  wire         clk,
    input  wire         rst,        // synchronous, active high
    // serial line
    input  wire         rxd,        // from the host (asynchronous)
    output wire         txd,        // to the host
    output wire         cts_n,      // 1: the host must pause (RTS/CTS flow control)
    // TLP stream to the NIC
    output wire         rx_valid,
    input  wire         rx_ready,
    output wire         rx_sop,
    output wire         rx_eop,
    output wire [127:0] rx_hdr,
    output wire [2:0]   rx_bar,
    output wire [63:0]  rx_data,
    // TLP stream from the NIC
    input  wire         tx_valid,
    output wire         tx_ready,
    input  wire         tx_sop,
    input  wire         tx_eop,
    input  wire [127:0] tx_hdr,
    input  wire [63:0]  tx_data,
    // interrupt request of the NIC
    input  wire         irq_valid,
    output wire         irq_ready,
    // activity (pulses, for LEDs)
    output wire         act_rx,     // a command frame was accepted
    output wire         act_tx      // a byte went to the host
);
    wire       b_valid, b_ferr;
    wire [7:0] b_data;
    velo_uart_rx #(.CLKS_PER_BIT(CLKS_PER_BIT)) u_rx (
        .clk(clk), .rst(rst), .rxd(rxd), .valid(b_valid), .data(b_data), .frame_err(b_ferr));

    wire       pong_valid, pong_ack, err_valid, err_ack;
    wire [7:0] pong_token, err_code, err_cnt;
    velo_uart_down u_down (
        .clk(clk), .rst(rst),
        .in_valid(b_valid), .in_data(b_data), .in_ferr(b_ferr), .cts_n(cts_n),
        .tlp_valid(rx_valid), .tlp_ready(rx_ready), .tlp_sop(rx_sop), .tlp_eop(rx_eop),
        .tlp_hdr(rx_hdr), .tlp_bar(rx_bar), .tlp_data(rx_data),
        .pong_valid(pong_valid), .pong_token(pong_token), .pong_ack(pong_ack),
        .err_valid(err_valid), .err_code(err_code), .err_cnt(err_cnt), .err_ack(err_ack),
        .frame_ok(act_rx));

    wire       o_valid, o_ready;
    wire [7:0] o_data;
    velo_uart_up u_up (
        .clk(clk), .rst(rst),
        .tlp_valid(tx_valid), .tlp_ready(tx_ready), .tlp_sop(tx_sop), .tlp_eop(tx_eop),
        .tlp_hdr(tx_hdr), .tlp_data(tx_data),
        .pong_valid(pong_valid), .pong_token(pong_token), .pong_ack(pong_ack),
        .err_valid(err_valid), .err_code(err_code), .err_cnt(err_cnt), .err_ack(err_ack),
        .irq_valid(irq_valid), .irq_ready(irq_ready),
        .out_valid(o_valid), .out_ready(o_ready), .out_data(o_data));

    velo_uart_tx #(.CLKS_PER_BIT(CLKS_PER_BIT)) u_tx (
        .clk(clk), .rst(rst), .valid(o_valid), .ready(o_ready), .data(o_data), .txd(txd));
    assign act_tx = o_valid && o_ready;
endmodule
`default_nettype wire
