// RMA initiator engine, put source issuer (part of velo_rma_init; docs/rma.md §3, §6): follows
// the ring of puts and, for each, translates the source buffer with the ATU (LOCAL_READ, one
// lookup per DMA read of at most 4 KiB, split at page ends) and issues the DMA reads (rq_*,
// velo_dma_rd) with the command's tag as context. When it is done with a put it hands the number
// of reads issued and the reason of a failed lookup (or NONE) to the packetiser (fin_*); put_failed
// (the packetiser failed this put) stops the reads at the next lookup.
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_ports.vh"
module velo_rma_init_issue #(
    parameter integer VPID_BITS = 8,   // vpid width (spec param VPID_BITS), 1..8
    parameter integer TAG_BITS  = 4    // 2^TAG_BITS command tags, 1..8
) (
    input  wire                 clk,
    input  wire                 rst,        // synchronous, active high
    // the ring of puts: its next entry for the issuer
    input  wire                 head_valid, // an entry waits
    input  wire [TAG_BITS-1:0]  head_tag,   // its command's tag
    input  wire [23:0]          head_len,   // its length in bytes
    // tag table: the put being issued and its fields
    output wire [TAG_BITS-1:0]  tag,
    input  wire [63:0]          tag_lnla,   // local NLA (the source buffer)
    input  wire [23:0]          tag_len,    // length in bytes
    input  wire [VPID_BITS-1:0] tag_vpid,
    input  wire                 put_failed,      // the packetiser failed this put: stop reading
    // ATU lookups (granted by velo_rma_init: lk_go when taken, rs_go with this lookup's response)
    `VELO_ATU_LOOKUP_PORTS,
    output wire [VPID_BITS-1:0] lk_vpid,
    `VELO_ATU_RESULT_PORTS,
    // DMA reads (velo_dma_rd rq_*)
    `VELO_DMARD_REQ_PORTS(TAG_BITS),
    // the entry is done (a one-cycle pulse): reads issued, reason of a failed lookup
    output wire                 fin,
    output wire [15:0]          fin_nreq,
    output wire [3:0]           fin_err
);
    localparam integer TB = TAG_BITS;

    `VELO_CHECK_VPID_BITS
    `VELO_CHECK(g_check_tag_bits, TAG_BITS >= 1 && TAG_BITS <= 8, "velo_rma_init_issue: TAG_BITS must be 1..8")

    localparam [1:0] S_IDLE = 2'd0, S_LK = 2'd1, S_RS = 2'd2, S_RQ = 2'd3;
    reg [1:0]  s_st;
    reg [TB-1:0] s_tag;
    reg [23:0] s_off;
    reg [15:0] s_nreq;
    reg [63:0] s_addr;
    reg [12:0] s_n;
    reg [3:0]  s_err;
    reg        s_done;      // finish the entry this cycle (registered decision)
    wire [63:0] s_lnla = tag_lnla;
    wire [23:0] s_len  = tag_len;
    wire [23:0] s_rem  = s_len - s_off;
    assign tag     = s_tag;
    assign lk_req  = (s_st == S_LK) && !put_failed;
    assign lk_nla  = {s_lnla[63:40], s_lnla[39:0] + {16'd0, s_off}};
    assign lk_len  = s_rem;
    assign lk_vpid = tag_vpid;
    assign rq_valid  = (s_st == S_RQ);
    assign rq_addr   = s_addr;
    assign rq_len_m1 = s_n[11:0] - 12'd1;
    assign rq_ctx    = s_tag;
    assign fin      = s_done;
    assign fin_nreq = s_nreq;
    assign fin_err  = s_err;
    // bytes of the next read: to the end of the page, at most 4 KiB
    wire [21:0] s_room = rs_room;
    wire [23:0] s_lim  = (s_room > 22'd4096) ? 24'd4096 : {2'd0, s_room};
    wire [23:0] s_take = (s_rem < s_lim) ? s_rem : s_lim;
    always @(posedge clk) begin
        if (rst) begin
            s_st   <= S_IDLE;
            s_done <= 1'b0;
        end else begin
            s_done <= 1'b0;
            case (s_st)
                S_IDLE: if (head_valid && !s_done) begin
                    s_tag  <= head_tag;
                    s_off  <= 24'd0;
                    s_nreq <= 16'd0;
                    s_err  <= `VELO_RMA_ERR_NONE;
                    if (head_len == 24'd0) s_done <= 1'b1;
                    else s_st <= S_LK;
                end
                S_LK: begin
                    if (put_failed) begin
                        s_err  <= `VELO_RMA_ERR_NOT_VALID;
                        s_done <= 1'b1;
                        s_st   <= S_IDLE;
                    end else if (lk_go) begin
                        s_st <= S_RS;
                    end
                end
                S_RS: if (rs_go) begin
                    s_addr <= rs_addr;
                    s_n    <= s_take[12:0];
                    if (rs_err != `VELO_RMA_ERR_NONE) begin
                        s_err  <= rs_err;
                        s_done <= 1'b1;
                        s_st   <= S_IDLE;
                    end else begin
                        s_st <= S_RQ;
                    end
                end
                default: if (rq_ready) begin  // S_RQ
                    s_off  <= s_off + {11'd0, s_n};
                    s_nreq <= s_nreq + 16'd1;
                    if (s_off + {11'd0, s_n} == s_len) begin
                        s_done <= 1'b1;
                        s_st   <= S_IDLE;
                    end else begin
                        s_st <= S_LK;
                    end
                end
            endcase
        end
    end

    wire unused_ok = &{1'b0, s_take};
endmodule
`default_nettype wire
