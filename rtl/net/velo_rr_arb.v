// Round-robin arbiter: grants one of N requesters per cycle (combinational, one-hot). The
// priority pointer moves just past the granted requester only when the grant is used (adv), so a
// requester that keeps requesting is granted after at most N-1 grants used by others, whatever
// the others do. Used by the switch per output (over all (input, VC) heads) and per input (to
// accept one of the grants offered to its VCs). Written as priority chains (no adders): they map
// to small LUT trees.
`default_nettype none
`include "velo_check.vh"
module velo_rr_arb #(
    parameter integer N = 4  // number of requesters (>= 1)
) (
    input  wire         clk,
    input  wire         rst,  // synchronous, active high
    input  wire [N-1:0] req,  // requests
    output wire [N-1:0] gnt,  // grant: one-hot, or zero when nothing requests
    input  wire         adv   // the grant was used: move the priority past the granted requester
);
    `VELO_CHECK(g_check_n, N >= 1, "velo_rr_arb: N must be at least 1")

    reg  [N-1:0] hi;            // requesters after the last used grant: first in priority
    wire [N-1:0] req_hi = req & hi;
    reg  [N-1:0] g;             // grant
    reg  [N-1:0] above;         // requesters strictly after the grant
    reg          found_hi, found;
    integer      i;
    always @* begin
        found_hi = 1'b0;
        found    = 1'b0;
        g        = {N{1'b0}};
        for (i = 0; i < N; i = i + 1) begin
            // the first requester after the pointer, else the first requester
            if (req_hi[i] && !found_hi) begin
                g[i]     = 1'b1;
                found_hi = 1'b1;
            end
        end
        for (i = 0; i < N; i = i + 1) begin
            if (!found_hi && req[i] && !found) begin
                g[i]  = 1'b1;
                found = 1'b1;
            end
        end
        above[0] = 1'b0;
        for (i = 1; i < N; i = i + 1) above[i] = above[i-1] | g[i-1];
    end
    assign gnt = g;

    // invariant (simulation only): the grant is one-hot or zero and goes to a requester
    `VELO_ASSERT(clk, rst, (g & ~req) == {N{1'b0}} && (g & (g - 1'b1)) == {N{1'b0}}, "velo_rr_arb: grant not one-hot among the requests")

    always @(posedge clk) begin
        if (rst) begin
            hi <= {N{1'b1}};
        end else if (adv && (|g)) begin
            hi <= above;  // empty after the top requester: wrap around
        end
    end
endmodule
`default_nettype wire
