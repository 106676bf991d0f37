// One step of the link's packet CRC: CRC-16-CCITT (x^16 + x^12 + x^5 + 1, LINK_CRC16_POLY), MSB
// first, no reflection, no final XOR. Feeds a whole flit of W bits, bit W-1 first, into the CRC
// register in one cycle (combinational; the caller holds the register). The packet CRC starts at
// LINK_CRC16_INIT ^ {9'b0, seq} (implicit sequence numbers, see docs/net-link.md).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
module velo_crc16 #(
    parameter integer W = 16  // bits fed per step (the flit width LINK_W: 16, 32 or 64)
) (
    input  wire [15:0]  crc_in,   // CRC register before the flit
    input  wire [W-1:0] data,     // the flit, bit W-1 first
    output reg  [15:0]  crc_out   // CRC register after the flit
);
    `VELO_CHECK(g_check_w, W == 16 || W == 32 || W == 64, "velo_crc16: W must be 16, 32 or 64")

    localparam [15:0] POLY = `VELO_LINK_CRC16_POLY;
    integer i;
    reg fb;
    always @(*) begin
        crc_out = crc_in;
        for (i = W - 1; i >= 0; i = i - 1) begin
            fb      = crc_out[15] ^ data[i];
            crc_out = {crc_out[14:0], 1'b0} ^ (fb ? POLY : 16'h0000);
        end
    end
endmodule
`default_nettype wire
