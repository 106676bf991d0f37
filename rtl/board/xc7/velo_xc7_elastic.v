// Elastic buffer between two clock domains for a stream that carries one word every cycle on
// both sides (a network link's {sync, flit} from the neighbour's forwarded clock into the NIC
// clock). Dual-clock FIFO with Gray-coded pointers (two-flop synchronisers), no vendor
// primitives.
//
// Write side: every wr_clk cycle one word goes in; when the buffer is full the word is dropped
// (wr_drop pulses). Read side: after reset, and after every underrun, the reader waits until the
// buffer is half full (re-centring), emitting IDLE meanwhile; then it pops one word every rd_clk
// cycle; when it finds the buffer empty it emits IDLE instead and re-centres (rd_slip pulses).
// With both clocks at the same frequency (mesochronous) nothing is ever dropped or inserted
// after the first fill. With different frequencies the buffer slips once every
// 2^(AW-1) / |f_wr - f_rd| * f seconds or so: the faster writer loses a word, or the faster reader
// inserts IDLE words. For a VELO link the IDLE word (sync 00, "no signal") and a lost word are
// both caught by the link layer (invalid sync / CRC: NACK and replay), so a slip costs a
// retransmission, never data.
//
// Read latency: two rd_clk cycles of synchronisation plus the half-buffer fill (2^(AW-1) words).
`default_nettype none
module velo_xc7_elastic #(
    parameter integer W      = 18,        // word width in bits
    parameter integer AW     = 4,         // log2 of the depth in words (>= 2)
    parameter [W-1:0] IDLE   = {W{1'b0}}  // word emitted while no data is available
) (
    input  wire         wr_clk,
    input  wire         wr_rst,    // synchronous to wr_clk, active high
    input  wire [W-1:0] wr_data,   // one word every wr_clk cycle
    output reg          wr_drop,   // pulse: the word of the previous cycle was dropped (full)
    input  wire         rd_clk,
    input  wire         rd_rst,    // synchronous to rd_clk, active high
    output reg  [W-1:0] rd_data,   // one word every rd_clk cycle (IDLE when none)
    output reg          rd_slip    // pulse: an IDLE word was inserted after data (underrun)
);
    localparam integer D = 1 << AW;

    function [AW:0] bin2gray;
        input [AW:0] b;
        bin2gray = b ^ (b >> 1);
    endfunction
    function [AW:0] gray2bin;
        input [AW:0] g;
        integer i;
        begin
            gray2bin[AW] = g[AW];
            for (i = AW - 1; i >= 0; i = i - 1) gray2bin[i] = gray2bin[i + 1] ^ g[i];
        end
    endfunction

    reg [W-1:0] mem [0:D-1];

    // ---------------------------------------------------------------- write side
    reg  [AW:0] wptr, wgray;
    (* ASYNC_REG = "TRUE" *) reg [AW:0] rgray_s1, rgray_s2;
    wire [AW:0] rptr_w = gray2bin(rgray_s2);
    wire [AW:0] wlevel = wptr - rptr_w;
    wire        full   = wlevel[AW];  // level == D (it never exceeds D)
    wire [AW:0] wptr_n = wptr + 1'b1;

    always @(posedge wr_clk) begin
        if (!full) mem[wptr[AW-1:0]] <= wr_data;
    end
    always @(posedge wr_clk) begin
        if (wr_rst) begin
            wptr     <= {(AW + 1){1'b0}};
            wgray    <= {(AW + 1){1'b0}};
            rgray_s1 <= {(AW + 1){1'b0}};
            rgray_s2 <= {(AW + 1){1'b0}};
            wr_drop  <= 1'b0;
        end else begin
            {rgray_s2, rgray_s1} <= {rgray_s1, rgray};
            wr_drop <= full;
            if (!full) begin
                wptr  <= wptr_n;
                wgray <= bin2gray(wptr_n);
            end
        end
    end

    // ---------------------------------------------------------------- read side
    reg  [AW:0] rptr, rgray;
    (* ASYNC_REG = "TRUE" *) reg [AW:0] wgray_s1, wgray_s2;
    reg         run;
    wire [AW:0] wptr_r = gray2bin(wgray_s2);
    wire [AW:0] rlevel = wptr_r - rptr;
    wire [AW:0] rptr_n = rptr + 1'b1;
    wire        half   = |rlevel[AW:AW-1];  // level >= D/2 (it never exceeds D)
    wire        empty  = rlevel == {(AW + 1){1'b0}};

    always @(posedge rd_clk) begin
        if (rd_rst) begin
            rptr     <= {(AW + 1){1'b0}};
            rgray    <= {(AW + 1){1'b0}};
            wgray_s1 <= {(AW + 1){1'b0}};
            wgray_s2 <= {(AW + 1){1'b0}};
            run      <= 1'b0;
            rd_data  <= IDLE;
            rd_slip  <= 1'b0;
        end else begin
            {wgray_s2, wgray_s1} <= {wgray_s1, wgray};
            rd_slip <= 1'b0;
            if (run && !empty) begin
                rd_data <= mem[rptr[AW-1:0]];
                rptr    <= rptr_n;
                rgray   <= bin2gray(rptr_n);
            end else begin
                rd_data <= IDLE;
                if (run) begin
                    run     <= 1'b0;
                    rd_slip <= 1'b1;
                end else if (half) begin
                    run <= 1'b1;
                end
            end
        end
    end
endmodule
`default_nettype wire
