// Simple dual-port RAM: one synchronous write port, one synchronous read port with read enable,
// same clock. Written so that Yosys infers block RAM (Xilinx RAMB, iCE40 EBR) and Verilator
// models it exactly. Read-during-write to the same address returns the old data.
`default_nettype none
`include "velo_check.vh"
module velo_sdp_ram #(
    parameter integer W      = 32,  // data width in bits
    parameter integer ADDR_W = 8    // address width; depth is 2^ADDR_W words
) (
    input  wire              clk,
    input  wire              we,     // write enable
    input  wire [ADDR_W-1:0] waddr,  // write address
    input  wire [W-1:0]      wdata,  // write data
    input  wire              re,     // read enable: rdata updates the next cycle, holds otherwise
    input  wire [ADDR_W-1:0] raddr,  // read address
    output reg  [W-1:0]      rdata   // read data (registered)
);
    `VELO_CHECK(g_check_w, W >= 1, "velo_sdp_ram: W must be at least 1")
    `VELO_CHECK(g_check_addr_w, ADDR_W >= 1, "velo_sdp_ram: ADDR_W must be at least 1")

    reg [W-1:0] mem [0:(1<<ADDR_W)-1];

    always @(posedge clk) begin
        if (we) mem[waddr] <= wdata;
    end

    always @(posedge clk) begin
        if (re) rdata <= mem[raddr];
    end
endmodule
`default_nettype wire
