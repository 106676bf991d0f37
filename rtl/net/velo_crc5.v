// CRC-5 of a link control symbol (LINK_CTL): x^5 + x^2 + 1 (LINK_CRC5_POLY, the USB token CRC),
// initial value LINK_CRC5_INIT, MSB first over the 11 bits TYPE and VALUE (symbol bits 15:5), no
// final XOR. Combinational. The 16-bit symbol {TYPE, VALUE, CRC5} has Hamming distance 3: every
// 1- and 2-bit error is detected.
`default_nettype none
`include "velo_spec.vh"
module velo_crc5 (
    input  wire [10:0] data,  // symbol bits 15:5 ({TYPE, VALUE}), bit 10 first
    output reg  [4:0]  crc    // symbol bits 4:0
);
    localparam [4:0] POLY = `VELO_LINK_CRC5_POLY;
    localparam [4:0] INIT = `VELO_LINK_CRC5_INIT;
    integer i;
    reg fb;
    always @(*) begin
        crc = INIT;
        for (i = 10; i >= 0; i = i - 1) begin
            fb  = crc[4] ^ data[i];
            crc = {crc[3:0], 1'b0} ^ (fb ? POLY : 5'h00);
        end
    end
endmodule
`default_nettype wire
