// UART receiver, 8 data bits, no parity, one stop bit (8N1), LSB first. The line is synchronised
// by two flip-flops; a start bit is a falling edge that is still low at the middle of the bit;
// every data bit is sampled at the middle of its bit time; a byte whose stop bit is low is not
// delivered (frame_err pulses instead) and the receiver waits for the line to go idle (high)
// before it looks for the next start bit, so a break or a baud-rate mismatch cannot produce a
// stream of garbage bytes.
`default_nettype none
`include "velo_check.vh"
module velo_uart_rx #(
    parameter integer CLKS_PER_BIT = 10  // clock cycles per bit (clock / baud rate), >= 4
) (
    input  wire       clk,
    input  wire       rst,        // synchronous, active high
    input  wire       rxd,        // serial line (idle high), asynchronous
    output reg        valid,      // pulse: a byte was received
    output reg  [7:0] data,       // the byte (held until the next one)
    output reg        frame_err   // pulse: a byte with a bad stop bit was discarded
);
    `VELO_CHECK(g_check_clks, CLKS_PER_BIT >= 4, "velo_uart_rx: CLKS_PER_BIT must be at least 4")

    localparam integer CW   = $clog2(CLKS_PER_BIT + 1);
    localparam [CW-1:0] FULL = CLKS_PER_BIT[CW-1:0] - 1'b1;
    localparam [CW-1:0] HALF = CLKS_PER_BIT[CW-1:0] / 2 - 1'b1;
    localparam [1:0] S_IDLE = 2'd0, S_START = 2'd1, S_BITS = 2'd2, S_STOP = 2'd3;

    // the synchroniser flip-flops start (and reset) at the idle level
    reg        rx_s1, rx_s2;
    reg [1:0]  state;
    reg [CW-1:0] cnt;     // cycles left in the current (half) bit
    reg [2:0]  nbit;      // data bit being received
    reg [7:0]  shift;
    reg        armed;     // the line was seen idle since the last stop bit (or error)

    always @(posedge clk) begin
        if (rst) begin
            rx_s1 <= 1'b1;
            rx_s2 <= 1'b1;
        end else begin
            rx_s1 <= rxd;
            rx_s2 <= rx_s1;
        end
    end

    always @(posedge clk) begin
        if (rst) begin
            state     <= S_IDLE;
            cnt       <= {CW{1'b0}};
            nbit      <= 3'd0;
            valid     <= 1'b0;
            frame_err <= 1'b0;
            armed     <= 1'b0;
        end else begin
            valid     <= 1'b0;
            frame_err <= 1'b0;
            case (state)
                S_IDLE: begin
                    if (rx_s2) armed <= 1'b1;
                    else if (armed) begin
                        state <= S_START;
                        cnt   <= HALF;
                    end
                end
                S_START: begin
                    if (cnt != 0) cnt <= cnt - 1'b1;
                    else if (rx_s2) state <= S_IDLE;  // a glitch, not a start bit
                    else begin
                        state <= S_BITS;
                        cnt   <= FULL;
                        nbit  <= 3'd0;
                    end
                end
                S_BITS: begin
                    if (cnt != 0) cnt <= cnt - 1'b1;
                    else begin
                        cnt <= FULL;
                        if (nbit == 3'd7) state <= S_STOP;
                        nbit <= nbit + 1'b1;
                    end
                end
                default: begin  // S_STOP
                    if (cnt != 0) cnt <= cnt - 1'b1;
                    else begin
                        state <= S_IDLE;
                        armed <= rx_s2;
                        if (rx_s2) valid <= 1'b1;
                        else       frame_err <= 1'b1;
                    end
                end
            endcase
        end
    end

    // data path: sampled bits (no reset needed, qualified by valid)
    always @(posedge clk) begin
        if (state == S_BITS && cnt == 0) shift <= {rx_s2, shift[7:1]};
        if (state == S_STOP && cnt == 0 && rx_s2) data <= shift;
    end
endmodule
`default_nettype wire
