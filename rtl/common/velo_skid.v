// Skid buffer (register slice): registers valid, data and ready so that neither path is
// combinational across it, at full throughput (one transfer per cycle). Used as the wire of the
// minimal link and wherever a timing cut is needed.
`default_nettype none
`include "velo_check.vh"
module velo_skid #(
    parameter integer W = 16  // payload width in bits
) (
    input  wire         clk,
    input  wire         rst,     // synchronous, active high
    input  wire         s_valid, // upstream valid
    output wire         s_ready, // upstream ready (registered)
    input  wire [W-1:0] s_data,  // upstream payload
    output wire         m_valid, // downstream valid (registered)
    input  wire         m_ready, // downstream ready
    output wire [W-1:0] m_data   // downstream payload (registered)
);
    reg         out_valid;
    reg [W-1:0] out_data;
    reg         skid_valid;
    reg [W-1:0] skid_data;

    `VELO_CHECK(g_check_w, W >= 1, "velo_skid: W must be at least 1")
    // a word waits in the skid register only behind a stalled output register
    `VELO_ASSERT(clk, rst, !skid_valid || out_valid, "velo_skid: skid register full, output register empty")

    assign s_ready = !skid_valid;
    assign m_valid = out_valid;
    assign m_data  = out_data;

    always @(posedge clk) begin
        if (rst) begin
            out_valid  <= 1'b0;
            skid_valid <= 1'b0;
        end else begin
            if (!out_valid || m_ready) begin
                // output register free: refill from the skid register first, then upstream
                if (skid_valid) begin
                    out_valid  <= 1'b1;
                    skid_valid <= 1'b0;
                end else begin
                    out_valid <= s_valid;
                end
            end else if (s_valid && !skid_valid) begin
                // output stalled: park the upstream word
                skid_valid <= 1'b1;
            end
        end
    end

    // data registers need no reset (qualified by the valid bits)
    always @(posedge clk) begin
        if (!out_valid || m_ready) begin
            out_data <= skid_valid ? skid_data : s_data;
        end
        if (s_valid && s_ready && out_valid && !m_ready) begin
            skid_data <= s_data;
        end
    end
endmodule
`default_nettype wire
