// Packet filter: store-and-forward buffer that passes only good packets. A packet's words are
// written into a ring and become visible to the output only when its last word arrives without
// in_bad; a bad packet is discarded whole (the write pointer returns to the packet's start). For a
// consumer that cannot undo what it did with a packet's first words (the RMA initiator's response
// input). Packets must not be longer than 2^AW words (the input would wait for ever).
`default_nettype none
`include "velo_check.vh"
module velo_pkt_filter #(
    parameter integer AW = 6  // 2^AW words of buffer (block RAM)
) (
    input  wire        clk,
    input  wire        rst,       // synchronous, active high
    input  wire        in_valid,
    output wire        in_ready,
    input  wire [63:0] in_data,
    input  wire        in_last,
    input  wire        in_bad,    // with in_last: drop the packet
    output reg         out_valid,
    input  wire        out_ready,
    output wire [63:0] out_data,
    output wire        out_last,
    output reg         ev_drop,   // a bad packet was discarded (pulse)
    output wire        idle       // empty, no event pending: with in_valid low no register changes
);
    reg  [AW:0] wp, wc, rp;       // write (current packet), committed end, read
    wire        push = in_valid && in_ready;
    wire        pop  = out_valid && out_ready;
    wire        re   = (wc != rp) && (!out_valid || pop);
    wire [64:0] q;

    wire [AW:0] used = wp - rp;   // words held (modulo 2^(AW+1): never more than 2^AW)
    assign in_ready = used < (1 << AW);

    `VELO_CHECK(g_check_aw, AW >= 1, "velo_pkt_filter: AW must be at least 1")
    // the ring never holds more than 2^AW words, the committed end lies between the read and
    // the write pointer, the ring is never written full nor read past the committed end
    `VELO_ASSERT(clk, rst, used <= (1 << AW), "velo_pkt_filter: more than 2^AW words held")
    `VELO_ASSERT(clk, rst, wc - rp <= used, "velo_pkt_filter: committed end outside the held words")
    `VELO_ASSERT(clk, rst, !push || used < (1 << AW), "velo_pkt_filter: written full")
    `VELO_ASSERT(clk, rst, !re || wc != rp, "velo_pkt_filter: read past the committed end")
    assign idle     = (wp == rp) && !out_valid && !ev_drop;
    assign out_data = q[63:0];
    assign out_last = q[64];

    velo_sdp_ram #(.W(65), .ADDR_W(AW)) u_ram (
        .clk(clk), .we(push), .waddr(wp[AW-1:0]), .wdata({in_last, in_data}),
        .re(re), .raddr(rp[AW-1:0]), .rdata(q));

    always @(posedge clk) begin
        if (rst) begin
            wp        <= {(AW+1){1'b0}};
            wc        <= {(AW+1){1'b0}};
            rp        <= {(AW+1){1'b0}};
            out_valid <= 1'b0;
            ev_drop   <= 1'b0;
        end else begin
            ev_drop <= push && in_last && in_bad;
            if (push) begin
                if (in_last && in_bad) wp <= wc;
                else begin
                    wp <= wp + 1'b1;
                    if (in_last) wc <= wp + 1'b1;
                end
            end
            if (re) rp <= rp + 1'b1;
            if (re) out_valid <= 1'b1;
            else if (pop) out_valid <= 1'b0;
        end
    end
endmodule
`default_nettype wire
