// UART transmitter, 8N1, LSB first: takes a byte (valid/ready) and shifts out start bit, eight
// data bits and stop bit. Back-to-back bytes follow without idle time in between.
`default_nettype none
`include "velo_check.vh"
module velo_uart_tx #(
    parameter integer CLKS_PER_BIT = 10  // clock cycles per bit (clock / baud rate), >= 2
) (
    input  wire       clk,
    input  wire       rst,    // synchronous, active high
    input  wire       valid,  // a byte to send
    output wire       ready,  // it is taken (the transmitter is idle)
    input  wire [7:0] data,
    output reg        txd     // serial line, idle high (registered)
);
    `VELO_CHECK(g_check_clks, CLKS_PER_BIT >= 2, "velo_uart_tx: CLKS_PER_BIT must be at least 2")

    localparam integer CW   = $clog2(CLKS_PER_BIT + 1);
    localparam [CW-1:0] FULL = CLKS_PER_BIT[CW-1:0] - 1'b1;

    reg          busy;
    reg [CW-1:0] cnt;    // cycles left in the current bit
    reg [3:0]    nbit;   // bits left after the current one
    reg [8:0]    shift;  // {stop, data}: the bits after the current one

    assign ready = !busy;

    always @(posedge clk) begin
        if (rst) begin
            busy <= 1'b0;
            txd  <= 1'b1;
            cnt  <= {CW{1'b0}};
            nbit <= 4'd0;
        end else if (!busy) begin
            if (valid) begin
                busy <= 1'b1;
                txd  <= 1'b0;  // start bit
                cnt  <= FULL;
                nbit <= 4'd9;
            end
        end else if (cnt != 0) begin
            cnt <= cnt - 1'b1;
        end else if (nbit != 0) begin
            txd  <= shift[0];
            cnt  <= FULL;
            nbit <= nbit - 1'b1;
        end else begin
            busy <= 1'b0;  // the stop bit has had its full time
        end
    end

    always @(posedge clk) begin
        if (!busy && valid) shift <= {1'b1, data};
        else if (busy && cnt == 0 && nbit != 0) shift <= {1'b1, shift[8:1]};
    end
endmodule
`default_nettype wire
