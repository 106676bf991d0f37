// TLP merge: N upstream TLP sources onto one stream, one whole TLP at a time, round robin (the
// source after the one served last goes first). A TLP whose first beat was offered stays selected
// until its last beat is taken (valid/ready rules). Zero latency: a beat accepted here is
// accepted on the output in the same cycle, so "issued on the TLP port" means the same thing
// before and after the merge. Used inside the RMA unit (DMA writes, notification writes, DMA
// reads).
`default_nettype none
`include "velo_check.vh"
module velo_tlp_merge #(
    parameter integer TLP_W = 64,  // TLP stream data width: 64 or 128
    parameter integer N     = 4    // sources (2..8)
) (
    input  wire               clk,
    input  wire               rst,        // synchronous, active high
    input  wire [N-1:0]       in_valid,
    output wire [N-1:0]       in_ready,
    input  wire [N-1:0]       in_sop,
    input  wire [N-1:0]       in_eop,
    input  wire [N*128-1:0]   in_hdr,
    input  wire [N*TLP_W-1:0] in_data,
    output wire               out_valid,
    input  wire               out_ready,
    output wire               out_sop,
    output wire               out_eop,
    output wire [127:0]       out_hdr,
    output wire [TLP_W-1:0]   out_data
);
    `VELO_CHECK_TLP_W
    `VELO_CHECK(g_check_n, N >= 2 && N <= 8, "velo_tlp_merge: N must be 2..8")

    localparam integer IW = (N > 1) ? $clog2(N) : 1;
    reg           locked;
    reg  [IW-1:0] owner, last;
    reg  [IW-1:0] pick;
    reg           found;
    integer       i;
    always @(*) begin
        // the first valid source after the one served last, else the first valid one
        pick  = last;
        found = 1'b0;
        for (i = 0; i < N; i = i + 1) begin
            if (!found && in_valid[i] && i[IW-1:0] > last) begin
                pick  = i[IW-1:0];
                found = 1'b1;
            end
        end
        for (i = 0; i < N; i = i + 1) begin
            if (!found && in_valid[i]) begin
                pick  = i[IW-1:0];
                found = 1'b1;
            end
        end
    end
    wire [IW-1:0] sel = locked ? owner : pick;

    assign out_valid = in_valid[sel];
    assign out_sop   = in_sop[sel];
    assign out_eop   = in_eop[sel];
    assign out_hdr   = in_hdr[sel*128 +: 128];
    assign out_data  = in_data[sel*TLP_W +: TLP_W];
    genvar g;
    generate
        for (g = 0; g < N; g = g + 1) begin : g_rdy
            assign in_ready[g] = (sel == g) && out_ready;
        end
    endgenerate

    always @(posedge clk) begin
        if (rst) begin
            locked <= 1'b0;
            owner  <= {IW{1'b0}};
            last   <= {IW{1'b0}};
        end else if (out_valid) begin
            locked <= !(out_ready && out_eop);
            owner  <= sel;
            if (!locked) last <= sel;
        end
    end
endmodule
`default_nettype wire
