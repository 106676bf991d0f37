// Elastic buffer between two clock domains for a stream that carries one word every cycle on
// both sides: a network port's {sync, flit} words, one per cycle of the neighbour's forwarded
// clock, into the NIC clock. Both boards use it (iCE40-HX8K: velo_ice40_board; 7-series:
// velo_xc7_link_phy). A dual-clock FIFO (Gray-coded pointers crossing through two-flop
// synchronisers; separate read and write clocks, as iCE40 and 7-series block RAMs and 7-series
// distributed RAM have), no vendor primitives.
//
// Write side: one word every wr_clk cycle; a word that finds the buffer full is dropped
// (wr_drop). Read side: after reset and after every underrun the reader waits until the buffer
// is half full (re-centring), emitting IDLE meanwhile; then it pops one word every rd_clk cycle;
// finding it empty, it emits IDLE and waits again (rd_slip). With both clocks at the same
// frequency nothing is ever dropped or inserted after the first fill. With different frequencies
// the buffer slips about once every 2^(AW-1) / |f_wr - f_rd| seconds: the faster writer loses a
// word, or the faster reader inserts IDLE words (two iCE40 boards on their own 12 MHz crystals,
// +-50 ppm each: about every 2 ms at 36 MHz with AW = 4). For a VELO link both are errors the
// link layer already handles: an IDLE word is "no signal" (sync 00) and a lost word breaks the
// packet CRC or is a repeated control symbol, answered by a NACK and a replay (or nothing at
// all, between packets), so a slip costs a retransmission, never data.
//
// Read latency: two rd_clk cycles of synchronisation plus the half-buffer fill (2^(AW-1) words).
`default_nettype none
`include "velo_check.vh"
module velo_elastic #(
    parameter integer W    = 18,        // word width in bits
    parameter integer AW   = 4,         // log2 of the depth in words (>= 2)
    parameter [W-1:0] IDLE = {W{1'b0}}  // word emitted while the buffer has none
) (
    input  wire         wr_clk,
    input  wire         wr_rst,   // synchronous to wr_clk, active high
    input  wire [W-1:0] wr_data,  // one word every wr_clk cycle
    output reg          wr_drop,  // pulse: the word of the last cycle was dropped (full)
    input  wire         rd_clk,
    input  wire         rd_rst,   // synchronous to rd_clk, active high
    output wire [W-1:0] rd_data,  // one word every rd_clk cycle (IDLE when none)
    output reg          rd_slip   // pulse: IDLE was emitted after data (underrun)
);
    localparam integer D = 1 << AW;
    localparam integer HALF_I = D / 2;
    localparam [AW:0]  HALF = HALF_I[AW:0];
    localparam [AW:0]  DEPTH = D[AW:0];  // D as a level

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

    `VELO_CHECK(g_check_w, W >= 1, "velo_elastic: W must be at least 1")
    `VELO_CHECK(g_check_aw, AW >= 2, "velo_elastic: AW must be at least 2")

    reg [W-1:0] mem [0:D-1];

    // ---------------------------------------------------------------- write side
    reg  [AW:0] wptr, wgray;
    (* ASYNC_REG = "TRUE" *) reg [AW:0] rgray_w1, rgray_w2;  // read pointer synchronised into wr_clk
    wire [AW:0] wlevel = wptr - gray2bin(rgray_w2);
    wire        full   = wlevel[AW];  // D words in (it never holds more)
    wire [AW:0] wptr_n = wptr + 1'b1;

    always @(posedge wr_clk) begin
        if (!full) mem[wptr[AW-1:0]] <= wr_data;
    end
    always @(posedge wr_clk) begin
        if (wr_rst) begin
            wptr     <= {(AW+1){1'b0}};
            wgray    <= {(AW+1){1'b0}};
            rgray_w1 <= {(AW+1){1'b0}};
            rgray_w2 <= {(AW+1){1'b0}};
            wr_drop  <= 1'b0;
        end else begin
            rgray_w1 <= rgray;
            rgray_w2 <= rgray_w1;
            wr_drop  <= full;
            if (!full) begin
                wptr  <= wptr_n;
                wgray <= bin2gray(wptr_n);
            end
        end
    end

    // ---------------------------------------------------------------- read side
    reg  [AW:0] rptr, rgray;
    (* ASYNC_REG = "TRUE" *) reg [AW:0] wgray_r1, wgray_r2;  // write pointer synchronised into rd_clk
    reg         run;                 // popping (the buffer was filled to half)
    reg         popped;              // q holds the word popped last cycle
    reg  [W-1:0] q;
    wire [AW:0] rlevel = gray2bin(wgray_r2) - rptr;
    wire        pop    = run && rlevel != {(AW+1){1'b0}};
    wire [AW:0] rptr_n = rptr + 1'b1;

    always @(posedge rd_clk) begin
        if (pop) q <= mem[rptr[AW-1:0]];
    end
    assign rd_data = popped ? q : IDLE;

    // either side sees at most D words held (the writer drops a word rather than overwrite)
    // and the reader pops only what it saw written
    `VELO_ASSERT(wr_clk, wr_rst, wlevel <= DEPTH, "velo_elastic: write side sees more than 2^AW words")
    `VELO_ASSERT(rd_clk, rd_rst, rlevel <= DEPTH, "velo_elastic: read side sees more than 2^AW words")
    `VELO_ASSERT(rd_clk, rd_rst, !pop || rlevel != {(AW+1){1'b0}}, "velo_elastic: read empty")

    always @(posedge rd_clk) begin
        if (rd_rst) begin
            rptr     <= {(AW+1){1'b0}};
            rgray    <= {(AW+1){1'b0}};
            wgray_r1 <= {(AW+1){1'b0}};
            wgray_r2 <= {(AW+1){1'b0}};
            run      <= 1'b0;
            popped   <= 1'b0;
            rd_slip  <= 1'b0;
        end else begin
            wgray_r1 <= wgray;
            wgray_r2 <= wgray_r1;
            popped   <= pop;
            rd_slip  <= run && !pop;
            if (pop) begin
                rptr  <= rptr_n;
                rgray <= bin2gray(rptr_n);
            end
            if (!run) run <= rlevel >= HALF;
            else if (!pop) run <= 1'b0;
        end
    end
endmodule
`default_nettype wire
