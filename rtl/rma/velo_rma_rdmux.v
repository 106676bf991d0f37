// Sharing of one DMA read engine (velo_dma_rd) between the RMA initiator (put source reads) and
// the RMA target (get source reads).
//
// The engine delivers data in request order, so a consumer that stops taking data holds back the
// other's. The target's consumer (GET_RSP packets, response class) only waits for responses to
// drain; the initiator's (PUT packets, request class) waits for request credits, which may in turn
// wait for a target behind this very engine. To keep responses from ever waiting behind requests,
// the initiator's data go through a FIFO of 2^FIFO_AW beats, and an initiator read is passed to the
// engine only when the FIFO has room reserved for all its beats (plus the error beat): its data
// never stall the engine's output. Reservations are counted in beats (credits); a request returns
// what it reserved and did not use when its last beat arrives, each beat its credit when it leaves
// the FIFO. Requests are taken round robin when both wait.
//
// Context: the engine's context is {source, caller context}; an initiator request carries its
// reservation in the context too (so no bookkeeping queue is needed).
//
// i_rd_bytes / i_rd_errq tell the initiator what its FIFO holds (data bytes; whether an error beat
// is in it), counted at the FIFO's input and output: the initiator starts a put packet only when
// the packet's data are here (docs/rma.md §6.1, "host reads and posted writes"), so a packet that
// has started never waits for a host read.
`default_nettype none
`include "velo_check.vh"
module velo_rma_rdmux #(
    parameter integer TAG_BITS = 4,   // initiator context width (its command tag), 1..6
    parameter integer TCTX_W   = 16,  // target context width (>= TAG_BITS + 10)
    parameter integer FIFO_AW  = 10   // initiator data FIFO: 2^FIFO_AW beats (>= 10: one 4 KiB request fits)
) (
    input  wire                clk,
    input  wire                rst,        // synchronous, active high
    // initiator
    input  wire                i_rq_valid,
    output wire                i_rq_ready,
    input  wire [63:0]         i_rq_addr,
    input  wire [11:0]         i_rq_len_m1,
    input  wire [TAG_BITS-1:0] i_rq_ctx,
    output wire                i_rd_valid,
    input  wire                i_rd_ready,
    output wire [63:0]         i_rd_data,
    output wire [7:0]          i_rd_be,
    output wire                i_rd_last,
    output wire                i_rd_err,
    output wire [TAG_BITS-1:0] i_rd_ctx,
    output reg  [FIFO_AW+3:0]  i_rd_bytes, // data bytes (rd_be set, not error beats) in the FIFO
    output wire                i_rd_errq,  // an error beat is in the FIFO
    // target
    input  wire                t_rq_valid,
    output wire                t_rq_ready,
    input  wire [63:0]         t_rq_addr,
    input  wire [11:0]         t_rq_len_m1,
    input  wire [TCTX_W-1:0]   t_rq_ctx,
    output wire                t_rd_valid,
    input  wire                t_rd_ready,
    output wire [63:0]         t_rd_data,
    output wire [7:0]          t_rd_be,
    output wire                t_rd_first,
    output wire                t_rd_last,
    output wire                t_rd_err,
    output wire [TCTX_W-1:0]   t_rd_ctx,
    // the engine (CTX_W = TCTX_W + 1)
    output wire                rq_valid,
    input  wire                rq_ready,
    output wire [63:0]         rq_addr,
    output wire [11:0]         rq_len_m1,
    output wire [TCTX_W:0]     rq_ctx,
    input  wire                rd_valid,
    output wire                rd_ready,
    input  wire [63:0]         rd_data,
    input  wire [7:0]          rd_be,
    input  wire                rd_first,
    input  wire                rd_last,
    input  wire                rd_err,
    input  wire [TCTX_W:0]     rd_ctx,
    // the initiator's FIFO is empty: with no valid input (i_rq_valid, t_rq_valid, rd_valid) no
    // register changes (velo_rma gates its clock in simulation)
    output wire                idle
);
    `VELO_CHECK(g_check_tag_bits, TAG_BITS >= 1 && TAG_BITS <= 6, "velo_rma_rdmux: TAG_BITS must be 1..6")
    `VELO_CHECK(g_check_tctx_w, TCTX_W >= TAG_BITS + 10, "velo_rma_rdmux: TCTX_W must be at least TAG_BITS + 10")
    `VELO_CHECK(g_check_fifo_aw, FIFO_AW >= 10, "velo_rma_rdmux: FIFO_AW must be at least 10")

    localparam integer FW = 64 + 8 + 2 + TAG_BITS;          // FIFO entry {ctx, err, last, be, data}
    localparam [FIFO_AW:0] DEPTH = 1 << FIFO_AW;

    // ---------------------------------------------------------------- requests
    // beats of an initiator request (data beats of its span, plus one for a possible error beat)
    wire [12:0] span  = {10'd0, i_rq_addr[2:0]} + {1'b0, i_rq_len_m1};
    wire [9:0]  need  = span[12:3] + 10'd2;
    reg  [FIFO_AW:0] cred;                                  // beats of FIFO not reserved
    wire        i_ok  = i_rq_valid && ({{(FIFO_AW-9){1'b0}}, need} <= cred);
    reg         last_i;                                     // the initiator was served last
    wire        sel_i = i_ok && (!t_rq_valid || !last_i);   // present the initiator's request

    assign rq_valid   = sel_i || t_rq_valid;
    assign rq_addr    = sel_i ? i_rq_addr : t_rq_addr;
    assign rq_len_m1  = sel_i ? i_rq_len_m1 : t_rq_len_m1;
    assign rq_ctx     = sel_i ? {1'b1, {(TCTX_W-10-TAG_BITS){1'b0}}, need, i_rq_ctx} : {1'b0, t_rq_ctx};
    assign i_rq_ready = sel_i && rq_ready;
    assign t_rq_ready = !sel_i && rq_ready;
    wire   i_issue    = sel_i && rq_ready;

    // ---------------------------------------------------------------- data
    wire        d_init = rd_ctx[TCTX_W];
    wire        push   = rd_valid && d_init;                // never refused: the room is reserved
    assign rd_ready   = d_init ? 1'b1 : t_rd_ready;
    assign t_rd_valid = rd_valid && !d_init;
    assign t_rd_data  = rd_data;
    assign t_rd_be    = rd_be;
    assign t_rd_first = rd_first;
    assign t_rd_last  = rd_last;
    assign t_rd_err   = rd_err;
    assign t_rd_ctx   = rd_ctx[TCTX_W-1:0];

    wire [FW-1:0] f_q;
    wire          f_in_ready;
    wire [FIFO_AW:0] f_count;
    velo_fifo #(.W(FW), .AW(FIFO_AW)) u_fifo (
        .clk(clk), .rst(rst),
        .s_valid(push), .s_ready(f_in_ready),
        .s_data({rd_ctx[TAG_BITS-1:0], rd_err, rd_last, rd_be, rd_data}),
        .m_valid(i_rd_valid), .m_ready(i_rd_ready), .m_data(f_q), .count(f_count));
    assign i_rd_data = f_q[63:0];
    assign i_rd_be   = f_q[71:64];
    assign i_rd_last = f_q[72];
    assign i_rd_err  = f_q[73];
    assign i_rd_ctx  = f_q[74 +: TAG_BITS];
    wire pop = i_rd_valid && i_rd_ready;

    // credits: a request reserves `need`; its last beat returns the part it did not use; every beat
    // returns its credit when it leaves the FIFO
    reg  [9:0] got;                                         // beats of the current request pushed
    wire [9:0] r_need = rd_ctx[TAG_BITS +: 10];
    wire [9:0] unused_beats = r_need - got - 10'd1;
    wire [FIFO_AW:0] ret = (push && rd_last) ? {{(FIFO_AW-9){1'b0}}, unused_beats} : {(FIFO_AW+1){1'b0}};
    always @(posedge clk) begin
        if (rst) begin
            cred   <= DEPTH;
            got    <= 10'd0;
            last_i <= 1'b0;
        end else begin
            cred <= cred - (i_issue ? {{(FIFO_AW-9){1'b0}}, need} : {(FIFO_AW+1){1'b0}})
                         + {{FIFO_AW{1'b0}}, pop} + ret;
            if (push) got <= rd_last ? 10'd0 : got + 10'd1;
            if (rq_valid && rq_ready) last_i <= sel_i;
        end
    end

    // what the FIFO holds: data bytes and error beats, pushed minus popped
    function [3:0] ones8;
        input [7:0] v;
        integer b;
        begin
            ones8 = 4'd0;
            for (b = 0; b < 8; b = b + 1) ones8 = ones8 + {3'd0, v[b]};
        end
    endfunction
    reg  [FIFO_AW:0] errs;
    wire [3:0] push_n = (push && !rd_err) ? ones8(rd_be) : 4'd0;
    wire [3:0] pop_n  = (pop && !i_rd_err) ? ones8(i_rd_be) : 4'd0;
    assign i_rd_errq = (errs != {(FIFO_AW+1){1'b0}});
    always @(posedge clk) begin
        if (rst) begin
            i_rd_bytes <= {(FIFO_AW+4){1'b0}};
            errs       <= {(FIFO_AW+1){1'b0}};
        end else begin
            i_rd_bytes <= i_rd_bytes + {{FIFO_AW{1'b0}}, push_n} - {{FIFO_AW{1'b0}}, pop_n};
            errs <= errs + {{FIFO_AW{1'b0}}, push && rd_err} - {{FIFO_AW{1'b0}}, pop && i_rd_err};
        end
    end

    // ---------------------------------------------------------------- simulation-only invariants
    // (VELO_ASSERT, velo_check.vh): a violation stops the simulation
    // the room of every initiator beat was reserved with its request
    `VELO_ASSERT(clk, rst, !(push && !f_in_ready), "velo_rma_rdmux: initiator data FIFO written full")
    `VELO_ASSERT(clk, rst, cred <= DEPTH, "velo_rma_rdmux: FIFO credits above its beats")
    `VELO_ASSERT(clk, rst, !(push && !rd_last && got == 10'h3FF), "velo_rma_rdmux: beat count of a request wraps")
    `VELO_ASSERT(clk, rst, !(pop && i_rd_err && errs == {(FIFO_AW+1){1'b0}}), "velo_rma_rdmux: error beat count below zero")
    `VELO_ASSERT(clk, rst, i_rd_bytes >= {{FIFO_AW{1'b0}}, pop_n}, "velo_rma_rdmux: byte count below zero")

    assign idle = (f_count == {(FIFO_AW+1){1'b0}});

    wire unused_ok = &{1'b0, f_in_ready, span[2:0], rd_ctx[TCTX_W-1:TAG_BITS+10]};
endmodule
`default_nettype wire
