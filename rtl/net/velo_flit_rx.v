// Deserializer of the minimal link: gathers LINK_W-bit flits back into 64-bit packet words.
// The word is presented in the cycle its last flit arrives (zero latency); earlier flits wait in
// a register. Bytes after the last flit of a packet read as zero.
`default_nettype none
`include "velo_check.vh"
module velo_flit_rx #(
    parameter integer LINK_W = 16  // flit width in bits: 16, 32 or 64
) (
    input  wire              clk,
    input  wire              rst,        // synchronous, active high
    input  wire              flit_valid, // flit valid
    output wire              flit_ready, // flit accepted
    input  wire [LINK_W-1:0] flit_data,  // flit
    input  wire              flit_last,  // last flit of the packet
    output wire              pkt_valid,  // packet word valid
    input  wire              pkt_ready,  // packet word accepted
    output wire [63:0]       pkt_data,   // packet word
    output wire              pkt_last,   // last word of the packet
    output wire [2:0]        pkt_lnb     // valid bytes minus one (flit granular)
);
    `VELO_CHECK_LINK_W

    localparam integer FPW = 64 / LINK_W;
    localparam integer CW  = (FPW > 1) ? $clog2(FPW) : 1;

    reg [CW-1:0] cnt;
    wire word_end = flit_last || (cnt == FPW[CW-1:0] - 1'b1);

    assign pkt_valid  = flit_valid && word_end;
    assign flit_ready = word_end ? pkt_ready : 1'b1;
    assign pkt_last   = flit_last;

    generate
        if (FPW > 1) begin : g_multi
            reg [64-LINK_W-1:0] acc;  // flits 0..FPW-2 of the current word
            integer i;
            reg [63:0] word;
            always @(*) begin
                word = 64'd0;
                for (i = 0; i < FPW; i = i + 1) begin
                    if (i[CW-1:0] == cnt)
                        word[i*LINK_W +: LINK_W] = flit_data;
                    else if (i < FPW - 1 && i[CW-1:0] < cnt)
                        word[i*LINK_W +: LINK_W] = acc[i*LINK_W +: LINK_W];
                end
            end
            assign pkt_data = word;
            // (cnt + 1) * FB - 1: the flit index above log2(FB) one bits
            assign pkt_lnb = {cnt, {(3-CW){1'b1}}};
            always @(posedge clk) begin
                if (flit_valid && flit_ready && !word_end)
                    acc[cnt*LINK_W +: LINK_W] <= flit_data;
            end
        end else begin : g_single
            assign pkt_data = flit_data;
            assign pkt_lnb  = 3'd7;
        end
    endgenerate

    always @(posedge clk) begin
        if (rst) begin
            cnt <= {CW{1'b0}};
        end else if (flit_valid && flit_ready) begin
            cnt <= word_end ? {CW{1'b0}} : cnt + 1'b1;
        end
    end
endmodule
`default_nettype wire
