// Packet split: one packet stream (64-bit words, last, bad) to two outputs, whole packets. The
// output is chosen from the first word (to_b, valid with it) and held to the last word. Zero
// latency (combinational).
`default_nettype none
module velo_pkt_split (
    input  wire        clk,
    input  wire        rst,       // synchronous, active high
    input  wire        in_valid,
    output wire        in_ready,
    input  wire [63:0] in_data,
    input  wire        in_last,
    input  wire        in_bad,    // with in_last
    input  wire        to_b,      // with the first word: the packet goes to b
    output wire        a_valid,
    input  wire        a_ready,
    output wire [63:0] a_data,
    output wire        a_last,
    output wire        a_bad,
    output wire        b_valid,
    input  wire        b_ready,
    output wire [63:0] b_data,
    output wire        b_last,
    output wire        b_bad
);
    reg  mid;     // inside a packet (its first word was taken)
    reg  sel_q;
    wire sel = mid ? sel_q : to_b;

    assign a_valid  = in_valid && !sel;
    assign b_valid  = in_valid && sel;
    assign in_ready = sel ? b_ready : a_ready;
    assign a_data = in_data;  assign a_last = in_last;  assign a_bad = in_bad;
    assign b_data = in_data;  assign b_last = in_last;  assign b_bad = in_bad;

    always @(posedge clk) begin
        if (rst) begin
            mid   <= 1'b0;
            sel_q <= 1'b0;
        end else if (in_valid && in_ready) begin
            mid   <= !in_last;
            sel_q <= sel;
        end
    end
endmodule
`default_nettype wire
