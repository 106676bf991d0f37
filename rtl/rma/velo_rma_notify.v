// RMA notification queue writer: writes 32-byte notification entries (RMA_NQ_HDR, cookie,
// RMA_NQ_W2, NLA) into the per-vpid rings in host memory by DMA (docs/rma.md §4).
//
// No torn reads: an entry is one 8-DW memory write at a 32-byte aligned address, i.e. inside one
// 64-byte line, so it becomes visible at once; its first word carries PHASE, which flips on every
// pass through the ring (the first pass writes 1), so the reader needs no clearing (as mailboxes).
//
// Flow control: an entry waits (back pressure to the engine, counted every cycle) until its ring
// has room (wp - rp < 2^LOG2_ENTRIES); it is never dropped or overwritten for lack of space. When
// software writes the waiting vpid's table entry or read pointer (sw_wr), the table is read again.
// An entry for a disabled or misconfigured queue (LOG2_ENTRIES outside RMA_NQ_LOG2_MIN..MAX) is
// dropped and counted.
//
// Sequence per entry: read the queue table (register file RAMs, data the cycle after tbl_re), decide
// (drop, wait, write), then the write: header with the first beat, one TLP; the write pointer update
// leaves the cycle after the decision (the table RAM has it before the next lookup, which follows
// the last beat). The DMA header comes from velo_mwr_hdr, shared with the other host-memory writers.
// cmt_valid pulses the cycle after the entry's last beat was accepted upstream (interrupt trigger).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_ports.vh"
module velo_rma_notify #(
    parameter integer TLP_W     = 64,  // TLP stream data width: 64 or 128
    parameter integer VPID_BITS = 8    // vpid width (spec param VPID_BITS), 1..8
) (
    input  wire                 clk,
    input  wire                 rst,        // synchronous, active high
    input  wire [15:0]          req_id,     // our PCIe requester id
    // entries from the engine; n_entry word 0 is RMA_NQ_HDR (PHASE is set here), then cookie,
    // RMA_NQ_W2, NLA (bits 64*i+63:64*i = word i)
    input  wire                 n_valid,
    output wire                 n_ready,
    input  wire [VPID_BITS-1:0] n_vpid,
    input  wire [255:0]         n_entry,
    // queue table port (register file RAMs, velo_ports.vh): a row (tbl_base in 64-byte lines), data
    // the cycle after tbl_re; the write pointer update; software wrote the table or read pointer
    // of a vpid (sw_wr)
    `VELO_QTBL_WRITER_PORTS(VPID_BITS),
    // quiesce
    input  wire [VPID_BITS-1:0] q_vpid,
    output wire                 q_busy,     // an entry for q_vpid is being decided or written
    output wire                 busy,
    // TLP stream out: DMA writes
    output wire                 tx_valid,
    input  wire                 tx_ready,
    output wire                 tx_sop,
    output wire                 tx_eop,
    output wire [127:0]         tx_hdr,
    output wire [TLP_W-1:0]     tx_data,
    // events (one-cycle pulses)
    output reg                  ev_entry,
    output reg                  ev_drop,
    output reg                  ev_backpressure,
    output reg                  cmt_valid,
    output reg  [VPID_BITS-1:0] cmt_vpid,
    // at rest (S_IDLE, no table write or event pending): with n_valid and sw_wr low no register
    // changes but wp_vpid, wp_data and cmt_vpid, which are read only with wp_we / cmt_valid and
    // rewritten at the edge that raises them (velo_rma gates its clock in simulation)
    output wire                 idle
);
    `VELO_CHECK_TLP_W
    `VELO_CHECK_VPID_BITS

    localparam integer R     = TLP_W / 64;          // words per beat
    localparam [1:0]   NBEAT = 2'd3 >> (R - 1);     // last beat index: 3 (64-bit) or 1 (128-bit)
    localparam [2:0] S_IDLE = 3'd0, S_LOOK = 3'd1, S_WAIT = 3'd2, S_EMIT = 3'd3;

    reg  [2:0]  st;
    reg         rr;        // software wrote our vpid since the table was read
    reg  [1:0]  beat;
    reg  [VPID_BITS-1:0] e_vpid;
    reg  [255:0] e_entry;
    reg  [63:0] e_addr;

    // ---------------------------------------------------------------- decision on the table row
    wire [16:0] size    = 17'd1 << tbl_log2;
    wire [16:0] used    = tbl_wp - tbl_rp;
    wire        log2_ok = (tbl_log2 >= `VELO_RMA_NQ_LOG2_MIN) && (tbl_log2 <= `VELO_RMA_NQ_LOG2_MAX);
    wire        room    = used < size;
    wire        look    = (st == S_LOOK);
    wire        d_drop  = look && !(tbl_en && log2_ok);
    wire        d_wait  = look && tbl_en && log2_ok && !room;
    wire        d_go    = look && tbl_en && log2_ok && room;
    wire        phase   = (tbl_wp & size) == 17'd0;
    wire [63:0] addr    = {tbl_base, 6'd0} + {42'd0, tbl_wp[15:0] & (size[15:0] - 16'd1), 5'd0};
    wire        sw_hit  = sw_wr && (sw_wr_vpid == e_vpid);

    assign n_ready  = d_drop || d_go;
    assign tbl_re   = (st == S_IDLE && n_valid) || (st == S_WAIT && rr);
    assign tbl_vpid = (st == S_IDLE) ? n_vpid : e_vpid;

    wire advance = tx_valid && tx_ready;
    wire last    = (beat == NBEAT);

    always @(posedge clk) begin
        if (rst) begin
            st   <= S_IDLE;
            rr   <= 1'b0;
            beat <= 2'd0;
        end else begin
            case (st)
                S_IDLE: if (n_valid) st <= S_LOOK;
                S_LOOK: begin
                    if (d_drop) st <= S_IDLE;
                    else if (d_wait) st <= S_WAIT;
                    else st <= S_EMIT;
                end
                S_WAIT: if (rr) st <= S_LOOK;
                default: if (advance && last) st <= S_IDLE;  // S_EMIT
            endcase
            // a software write between the table read and now: read again before sleeping on it
            // (a write in the very cycle of the read is not in the data: the RAM returns old data)
            if (tbl_re) rr <= sw_wr && (sw_wr_vpid == tbl_vpid);
            else if ((st == S_LOOK || st == S_WAIT) && sw_hit) rr <= 1'b1;
            if (advance) beat <= last ? 2'd0 : beat + 2'd1;
        end
    end

    always @(posedge clk) begin
        if (st == S_IDLE && n_valid) e_vpid <= n_vpid;
        if (d_go) begin
            e_entry <= {n_entry[255:1], phase};
            e_addr  <= addr;
        end
    end

    // write pointer update, the cycle after the decision
    reg                 wp_we_q;
    reg [VPID_BITS-1:0] wp_vpid_q;
    reg [16:0]          wp_data_q;
    always @(posedge clk) begin
        if (rst) wp_we_q <= 1'b0;
        else     wp_we_q <= d_go;
        wp_vpid_q <= e_vpid;
        wp_data_q <= tbl_wp + 17'd1;
    end
    assign wp_we   = wp_we_q;
    assign wp_vpid = wp_vpid_q;
    assign wp_data = wp_data_q;

    // ---------------------------------------------------------------- the DMA write
    velo_mwr_hdr u_hdr (.addr(e_addr), .len_dw(10'd8), .req_id(req_id), .hdr(tx_hdr));
    assign tx_valid = (st == S_EMIT);
    assign tx_sop   = (beat == 2'd0);
    assign tx_eop   = last;
    generate
        if (R == 1) begin : g_d1
            assign tx_data = e_entry[beat * 64 +: 64];
        end else begin : g_d2
            assign tx_data = e_entry[beat[0] * 128 +: 128];
        end
    endgenerate

    // ---------------------------------------------------------------- status and events
    assign busy   = (st != S_IDLE);
    assign q_busy = busy && (e_vpid == q_vpid);
    assign idle   = !busy && !wp_we && !ev_entry && !ev_drop && !ev_backpressure && !cmt_valid;

    always @(posedge clk) begin
        if (rst) begin
            ev_entry        <= 1'b0;
            ev_drop         <= 1'b0;
            ev_backpressure <= 1'b0;
            cmt_valid       <= 1'b0;
        end else begin
            ev_entry        <= advance && last;
            ev_drop         <= d_drop;
            ev_backpressure <= d_wait || (st == S_WAIT);
            cmt_valid       <= advance && last;
        end
        cmt_vpid <= e_vpid;
    end

    wire unused_ok = &{1'b0, n_entry[0]};  // PHASE is ours
endmodule
`default_nettype wire
