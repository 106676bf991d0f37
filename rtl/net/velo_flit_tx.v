// Serializer of the minimal link: cuts the NIC's 64-bit packet stream into LINK_W-bit flits,
// lowest bits first. Combinational (zero latency): flit k of a word is a slice of the word, and
// the word is accepted with its last flit. The last word of a packet is cut after its last
// valid byte (rounded up to a whole flit).
`default_nettype none
`include "velo_check.vh"
module velo_flit_tx #(
    parameter integer LINK_W = 16  // flit width in bits: 16, 32 or 64
) (
    input  wire              clk,
    input  wire              rst,        // synchronous, active high
    input  wire              pkt_valid,  // packet word valid
    output wire              pkt_ready,  // packet word accepted (with its last flit)
    input  wire [63:0]       pkt_data,   // packet word
    input  wire              pkt_last,   // last word of the packet
    input  wire [2:0]        pkt_lnb,    // last word: valid bytes minus one
    output wire              flit_valid, // flit valid
    input  wire              flit_ready, // flit accepted
    output wire [LINK_W-1:0] flit_data,  // flit
    output wire              flit_last   // last flit of the packet
);
    `VELO_CHECK_LINK_W

    localparam integer FPW = 64 / LINK_W;        // flits per word
    localparam integer CW  = (FPW > 1) ? $clog2(FPW) : 1;

    reg  [CW-1:0] cnt;  // flit index inside the current word
    wire [CW-1:0] nlast; // index of the word's last flit

    generate
        if (FPW > 1) begin : g_multi
            // index of the last flit = (valid bytes - 1) / FB = the top CW bits of pkt_lnb
            assign nlast = pkt_last ? pkt_lnb[2 -: CW] : FPW[CW-1:0] - 1'b1;
            wire unused_ok = &{1'b0, pkt_lnb[2-CW:0]};  // bytes inside the last flit
            assign flit_data = pkt_data[cnt*LINK_W +: LINK_W];
        end else begin : g_single
            assign nlast = 1'b0;
            assign flit_data = pkt_data;
            wire unused_ok = &{1'b0, pkt_lnb};
        end
    endgenerate

    wire word_done = (cnt == nlast);
    assign flit_valid = pkt_valid;
    assign flit_last  = pkt_last && word_done;
    assign pkt_ready  = flit_ready && word_done;

    always @(posedge clk) begin
        if (rst) begin
            cnt <= {CW{1'b0}};
        end else if (flit_valid && flit_ready) begin
            cnt <= word_done ? {CW{1'b0}} : cnt + 1'b1;
        end
    end
endmodule
`default_nettype wire
