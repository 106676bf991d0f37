// Synchronous FIFO, first-word fall-through: the head entry is on m_data while m_valid is high.
// Storage is a velo_sdp_ram (block RAM); its registered read port is the output register, so an
// entry written into an empty FIFO appears two cycles later, then one entry per cycle.
`default_nettype none
`include "velo_check.vh"
module velo_fifo #(
    parameter integer W  = 32,  // entry width in bits
    parameter integer AW = 4    // 2^AW entries
) (
    input  wire         clk,
    input  wire         rst,       // synchronous, active high
    input  wire         s_valid,   // push (ignored when full)
    output wire         s_ready,   // not full
    input  wire [W-1:0] s_data,
    output reg          m_valid,   // head entry present
    input  wire         m_ready,   // pop
    output wire [W-1:0] m_data,
    output wire [AW:0]  count      // entries held, the output register included
);
    reg  [AW:0] wp, rp;           // RAM pointers (rp: next entry to read into the output register)
    wire [AW:0] in_ram = wp - rp; // entries written and not yet read from the RAM
    wire        push   = s_valid && s_ready;
    wire        pop    = m_valid && m_ready;
    wire        re     = (in_ram != {(AW+1){1'b0}}) && (!m_valid || pop);

    `VELO_CHECK(g_check_w, W >= 1, "velo_fifo: W must be at least 1")
    `VELO_CHECK(g_check_aw, AW >= 1, "velo_fifo: AW must be at least 1")
    // the RAM never holds more than 2^AW entries, is never written over an entry not yet read
    // and never read empty
    `VELO_ASSERT(clk, rst, in_ram <= (1 << AW), "velo_fifo: more than 2^AW entries in the RAM")
    `VELO_ASSERT(clk, rst, !push || count < (1 << AW), "velo_fifo: written full")
    `VELO_ASSERT(clk, rst, !re || in_ram != {(AW+1){1'b0}}, "velo_fifo: RAM read empty")

    assign s_ready = (in_ram + {{AW{1'b0}}, m_valid}) < (1 << AW);
    assign count   = in_ram + {{AW{1'b0}}, m_valid};

    velo_sdp_ram #(.W(W), .ADDR_W(AW)) u_ram (
        .clk(clk), .we(push), .waddr(wp[AW-1:0]), .wdata(s_data),
        .re(re), .raddr(rp[AW-1:0]), .rdata(m_data));

    always @(posedge clk) begin
        if (rst) begin
            wp      <= {(AW+1){1'b0}};
            rp      <= {(AW+1){1'b0}};
            m_valid <= 1'b0;
        end else begin
            if (push) wp <= wp + 1'b1;
            if (re) rp <= rp + 1'b1;
            if (re) m_valid <= 1'b1;
            else if (pop) m_valid <= 1'b0;
        end
    end
endmodule
`default_nettype wire
