// Packet merge: two packet streams (64-bit words, last, lnb, as the requester's) onto one, whole
// packets at a time. When both offer a packet the one not served last goes first (round robin);
// a packet whose first word was offered stays selected until its last word is taken. Zero
// latency (combinational), so a lone stream passes with no added cycle.
`default_nettype none
module velo_pkt_merge (
    input  wire        clk,
    input  wire        rst,       // synchronous, active high
    input  wire        a_valid,
    output wire        a_ready,
    input  wire [63:0] a_data,
    input  wire        a_last,
    input  wire [2:0]  a_lnb,
    input  wire        b_valid,
    output wire        b_ready,
    input  wire [63:0] b_data,
    input  wire        b_last,
    input  wire [2:0]  b_lnb,
    output wire        out_valid,
    input  wire        out_ready,
    output wire [63:0] out_data,
    output wire        out_last,
    output wire [2:0]  out_lnb
);
    reg  locked;   // a packet is under way (or its first word was offered)
    reg  owner;    // 0: a, 1: b
    reg  last_b;   // b was served last
    wire pick = (a_valid && b_valid) ? !last_b : b_valid;
    wire sel  = locked ? owner : pick;

    assign out_valid = sel ? b_valid : a_valid;
    assign out_data  = sel ? b_data  : a_data;
    assign out_last  = sel ? b_last  : a_last;
    assign out_lnb   = sel ? b_lnb   : a_lnb;
    assign a_ready   = !sel && out_ready;
    assign b_ready   = sel && out_ready;

    always @(posedge clk) begin
        if (rst) begin
            locked <= 1'b0;
            owner  <= 1'b0;
            last_b <= 1'b0;
        end else if (out_valid) begin
            locked <= !(out_ready && out_last);
            owner  <= sel;
            if (!locked) last_b <= sel;
        end
    end
endmodule
`default_nettype wire
