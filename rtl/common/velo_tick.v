// Prescaler: tick is high one cycle in every N, the first time N cycles after reset (a counter
// 0..N-1, reset to 0, tick at N-1). The DMA read engine's timeout ages advance on it; velo_rma
// keeps the engine's prescaler on its free-running clock, outside the unit's gated clock
// (velo_sim_gate), so that gating the idle unit never shifts a timeout.
`default_nettype none
`include "velo_check.vh"
module velo_tick #(
    parameter integer N = 16384  // cycles per tick, >= 1
) (
    input  wire clk,
    input  wire rst,   // synchronous, active high
    output wire tick
);
    `VELO_CHECK(g_check_n, N >= 1, "velo_tick: N must be at least 1")
    localparam integer PW    = $clog2(N + 1);
    localparam integer NM1I  = N - 1;
    localparam [PW-1:0] N_M1 = NM1I[PW-1:0];

    reg [PW-1:0] pre;
    assign tick = (pre == N_M1);
    always @(posedge clk) begin
        if (rst) pre <= {PW{1'b0}};
        else     pre <= tick ? {PW{1'b0}} : pre + 1'b1;
    end
endmodule
`default_nettype wire
