// Event counters: N free-running 32-bit counters, one increment input each, a combinational read
// port and a clear port. Kept apart from the register file so each unit's cost shows on its own.
//
// Clock gating in simulation (docs/simulator.md, "Clock gating of idle units"): the counters are
// clocked by gclk, which velo_sim_gate stops (Verilator with +velo_sim_gate only; elsewhere gclk =
// clk) in cycles where no counter can change: no reset, no clear and no increment. The read port
// is combinational, so it holds with the counters.
`default_nettype none
`include "velo_check.vh"
module velo_counters #(
    parameter integer N     = 16,  // number of counters, at least 1
    parameter integer IDX_W = 5    // width of a counter index: 2^IDX_W >= N, 1..30
) (
    input  wire             clk,
    input  wire             rst,     // synchronous, active high: all counters to 0
    input  wire [N-1:0]     inc,     // one-cycle event per counter
    input  wire             clr,     // clear counter clr_idx
    input  wire [IDX_W-1:0] clr_idx,
    input  wire [IDX_W-1:0] rd_idx,  // read counter rd_idx
    output wire [31:0]      rd_data  // its value (0 for an index >= N)
);
    `VELO_CHECK(g_check_n, N >= 1, "velo_counters: N must be at least 1")
    `VELO_CHECK(g_check_idx_w, IDX_W >= 1 && IDX_W <= 30 && (1 << IDX_W) >= N, "velo_counters: IDX_W must be 1..30 with 2^IDX_W >= N")
    reg [31:0] cnt [0:N-1];
    integer i;

    // the clock gate (simulation): open when a counter may change at the coming edge
    wire gclk, gate_en;
`ifdef VERILATOR
    assign gate_en = rst || clr || (|inc);
`else
    assign gate_en = 1'b1;  // elsewhere gclk = clk: the enable is not built (synthesis figures unchanged)
`endif
    velo_sim_gate u_gate (.clk(clk), .en(gate_en), .gclk(gclk));

    always @(posedge gclk) begin
        for (i = 0; i < N; i = i + 1) begin
            if (rst || (clr && clr_idx == i[IDX_W-1:0])) cnt[i] <= 32'd0;
            else if (inc[i])                             cnt[i] <= cnt[i] + 32'd1;
        end
    end

    reg [31:0] rd;
    integer j;
    always @(*) begin
        rd = 32'd0;
        for (j = 0; j < N; j = j + 1)
            if (rd_idx == j[IDX_W-1:0]) rd = cnt[j];
    end
    assign rd_data = rd;
endmodule
`default_nettype wire
