// Upstream TLP arbiter: merges the completer's DMA writes (port a), the RMA unit's TLPs (port c:
// its DMA writes, notification writes and DMA reads, merged inside velo_rma) and the register
// file's completions (port b) onto the NIC's TLP stream to the host, one whole TLP at a time.
// Priority a > c > b: the completer keeps its zero-latency path (the VELO end-to-end latency does
// not change), and a completion is never sent ahead of a posted write (a or c) that was ready
// before it, which is what makes QUIESCE_STATUS reads a DMA barrier for mailboxes and for RMA
// writes alike. Port c may stay idle (c_valid = 0) in NICs without RMA. Zero latency.
`default_nettype none
`include "velo_check.vh"
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
    input  wire             c_valid,
    output wire             c_ready,
    input  wire             c_sop,
    input  wire             c_eop,
    input  wire [127:0]     c_hdr,
    input  wire [TLP_W-1:0] c_data,
    output wire             out_valid,
    input  wire             out_ready,
    output wire             out_sop,
    output wire             out_eop,
    output wire [127:0]     out_hdr,
    output wire [TLP_W-1:0] out_data
);
    `VELO_CHECK_TLP_W

    localparam [1:0] PA = 2'd0, PB = 2'd1, PC = 2'd2;
    // A TLP is under way, or its first beat was offered and not yet taken: an offered beat must
    // stay on the output until it is taken (valid/ready rules), so a stalled b (or c) is not
    // pre-empted by a port that becomes valid later.
    reg        locked;
    reg  [1:0] owner;
    wire [1:0] pick = a_valid ? PA : (c_valid ? PC : PB);
    wire [1:0] sel  = locked ? owner : pick;

    assign out_valid = (sel == PA) ? a_valid : (sel == PC) ? c_valid : b_valid;
    assign out_sop   = (sel == PA) ? a_sop   : (sel == PC) ? c_sop   : b_sop;
    assign out_eop   = (sel == PA) ? a_eop   : (sel == PC) ? c_eop   : b_eop;
    assign out_hdr   = (sel == PA) ? a_hdr   : (sel == PC) ? c_hdr   : b_hdr;
    assign out_data  = (sel == PA) ? a_data  : (sel == PC) ? c_data  : b_data;
    assign a_ready   = (sel == PA) && out_ready;
    assign b_ready   = (sel == PB) && out_ready;
    assign c_ready   = (sel == PC) && out_ready;

    always @(posedge clk) begin
        if (rst) begin
            locked <= 1'b0;
            owner  <= PA;
        end else if (out_valid) begin
            locked <= !(out_ready && out_eop);
            owner  <= sel;
        end
    end
endmodule
`default_nettype wire
