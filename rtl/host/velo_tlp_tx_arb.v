// Upstream TLP arbiter: merges the completer's DMA writes (port a) and the register file's
// completions (port b) onto the NIC's TLP stream to the host, one whole TLP at a time. Port a has
// priority: a completion is never sent ahead of a posted write that was ready before it, which is
// what makes QUIESCE_STATUS reads a DMA barrier. Zero latency.
`default_nettype none
module velo_tlp_tx_arb #(
    parameter integer TLP_W = 64  // TLP stream data width: 64 or 128
) (
    input  wire             clk,
    input  wire             rst,        // synchronous, active high
    input  wire             a_valid,
    output wire             a_ready,
    input  wire             a_sop,
    input  wire             a_eop,
    input  wire [127:0]     a_hdr,
    input  wire [TLP_W-1:0] a_data,
    input  wire             b_valid,
    output wire             b_ready,
    input  wire             b_sop,
    input  wire             b_eop,
    input  wire [127:0]     b_hdr,
    input  wire [TLP_W-1:0] b_data,
    output wire             out_valid,
    input  wire             out_ready,
    output wire             out_sop,
    output wire             out_eop,
    output wire [127:0]     out_hdr,
    output wire [TLP_W-1:0] out_data
);
    // A TLP is under way, or its first beat was offered and not yet taken: an offered beat must
    // stay on the output until it is taken (valid/ready rules), so a stalled b is not pre-empted
    // by an a that becomes valid later.
    reg  locked;
    reg  owner;   // 0: a, 1: b
    wire sel = locked ? owner : !a_valid;

    assign out_valid = sel ? b_valid : a_valid;
    assign out_sop   = sel ? b_sop   : a_sop;
    assign out_eop   = sel ? b_eop   : a_eop;
    assign out_hdr   = sel ? b_hdr   : a_hdr;
    assign out_data  = sel ? b_data  : a_data;
    assign a_ready   = !sel && out_ready;
    assign b_ready   = sel && out_ready;

    always @(posedge clk) begin
        if (rst) begin
            locked <= 1'b0;
            owner  <= 1'b0;
        end else if (out_valid) begin
            locked <= !(out_ready && out_eop);
            owner  <= sel;
        end
    end
endmodule
`default_nettype wire
