// RMA command decoder: turns posted writes into the RMA command window (BAR4) into command records.
//
// The page of the write (format RMA_ADDR) is the issuing vpid: only the driver maps pages, and it
// maps a process only its own vpid's page, so the vpid is trusted. A write is executed only if it
// is whole commands: a memory write, not poisoned, FIRST_BE = LAST_BE = 0xF, starting at a 32-byte
// slot boundary, 8 DW (one command) or 16 DW (two, in address order) long, inside the page. Anything
// else is *torn* (a write-combining burst the CPU flushed in pieces, a partial store): nothing of it
// is executed; one record with err = RMA_ERR_TORN names the first slot it touched and the number of
// slots touched, so software can re-issue exactly those commands. A write to a page beyond the
// vpids (cannot happen through the driver's mappings) is dropped and counted without a record.
//
// A whole command is checked (docs/rma.md §1): OP PUT or GET, the reserved bit 0, REM_NODE below
// 2^NODE_BITS, a get with LEN >= 1 and neither RCPL nor NOTIFY; a failing one is output with
// err = RMA_ERR_BAD_CMD (its cookie lets the engine report it) and must not be executed.
//
// Records: out_cmd holds the command's 32 bytes (bits 64*i+63:64*i = command word i, little-endian
// bytes; word 0 carries RKEY_HI, the remote key's bits 31:8, to the initiator engine), with the
// vpid, slot and error. The command is assembled in the output register itself:
// the beats of a command wait while a previous record has not been taken, so nothing is buffered
// and a command is output in the cycle after its last data beat. A TLP that ends (eop) before the
// header's length loses its incomplete command (counted as torn, no record); beats past the
// header's length are ignored.
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
module velo_rma_cmd #(
    parameter integer TLP_W     = 64,  // TLP stream data width: 64 or 128
    parameter integer NODE_BITS = 8,   // node id width (spec param NODE_BITS), 1..8
    parameter integer VPID_BITS = 8    // vpid width (spec param VPID_BITS), 1..8
) (
    input  wire                 clk,
    input  wire                 rst,        // synchronous, active high
    // TLP stream in: posted writes that hit BAR4
    input  wire                 in_valid,
    output wire                 in_ready,
    input  wire                 in_sop,
    input  wire                 in_eop,
    // Tag, requester id, TC, attributes and the upper address bits mean nothing to a window write.
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [127:0]         in_hdr,     // valid with in_sop
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [TLP_W-1:0]     in_data,
    // command records
    output reg                  out_valid,
    input  wire                 out_ready,
    output reg  [255:0]         out_cmd,    // command words 0..3 (RMA_CMD0, local NLA, remote NLA, cookie)
    output reg  [VPID_BITS-1:0] out_vpid,   // issuing vpid (from the page)
    output reg  [6:0]           out_slot,   // the command's slot (torn: the first slot touched)
    output reg  [7:0]           out_slot_cnt, // torn: slots touched (1..128); else 1
    output wire [3:0]           out_err,    // RMA_ERR_NONE, RMA_ERR_TORN or RMA_ERR_BAD_CMD
    // counter events (one-cycle pulses, when a record is taken or a write is dropped)
    output reg                  ev_cmd_put,
    output reg                  ev_cmd_get,
    output reg                  ev_cmd_torn,
    output reg                  ev_cmd_bad,
    // at rest (no command held, not inside a TLP, no event pending): with in_valid low no register
    // changes (velo_rma gates its clock in simulation)
    output wire                 idle
);
    `VELO_CHECK_TLP_W
    `VELO_CHECK_NODE_BITS
    `VELO_CHECK_VPID_BITS

    localparam integer R = TLP_W / 64;  // 64-bit words per beat

    // ---------------------------------------------------------------- first beat: header decode
    wire        is4dw    = in_hdr[`VELO_TLP_HDR_FMT_TYPE_LSB + 5];
    wire [31:0] addr_lo  = is4dw ? {in_hdr[`VELO_TLP_HDR_ADDR64_LO], 2'b00} : {in_hdr[`VELO_TLP_HDR_ADDR32], 2'b00};
    wire [7:0]  fmt_type = in_hdr[`VELO_TLP_HDR_FMT_TYPE];
    wire [9:0]  len_dw   = in_hdr[`VELO_TLP_HDR_LENGTH];
    wire [3:0]  fbe      = in_hdr[`VELO_TLP_HDR_FIRST_BE];
    wire [3:0]  lbe      = in_hdr[`VELO_TLP_HDR_LAST_BE];
    wire        ep       = in_hdr[`VELO_TLP_HDR_EP_LSB];
    wire        is_mwr   = (fmt_type == `VELO_TLP_FMT_TYPE_MWR32) || (fmt_type == `VELO_TLP_FMT_TYPE_MWR64);

    wire [6:0]  h_slot   = addr_lo[`VELO_RMA_ADDR_SLOT];
    wire [7:0]  h_page   = addr_lo[19:12];
    wire        h_oor    = (VPID_BITS < 8) ? ((h_page >> VPID_BITS) != 8'd0) : 1'b0;
    wire        one      = (len_dw == 10'd8);
    wire        two      = (len_dw == 10'd16) && (h_slot != 7'd127);
    wire        h_whole  = is_mwr && !ep && (fbe == 4'hF) && (lbe == 4'hF) &&
                           (addr_lo[`VELO_RMA_ADDR_OFF] == 5'd0) && (one || two);
    // slots a torn write touches, by DW, clipped to the page
    wire [10:0] ndw      = (len_dw == 10'd0) ? 11'd1024 : {1'b0, len_dw};
    wire [11:0] last_dw  = {2'b00, addr_lo[11:2]} + {1'b0, ndw} - 12'd1;
    wire [9:0]  last_cl  = (last_dw > 12'd1023) ? 10'd1023 : last_dw[9:0];
    wire [7:0]  h_cnt    = {1'b0, last_cl[9:3]} - {1'b0, h_slot} + 8'd1;

    // ---------------------------------------------------------------- TLP state
    reg        in_pkt;    // inside a TLP (its first beat was accepted, its last not yet)
    reg        t_whole;   // the current TLP carries whole commands
    reg [3:0]  t_words;   // command words it carries (4 or 8)
    reg [3:0]  t_w;       // next command word index
    reg        o_torn;    // the record in the output register is a torn one
    reg [6:0]  t_slot;    // slot of the TLP's first command

    wire first   = in_sop && !in_pkt;
    wire whole   = first ? h_whole : t_whole;
    wire [3:0] words = first ? (one ? 4'd4 : 4'd8) : t_words;
    wire [3:0] w     = first ? 4'd0 : t_w;
    wire [6:0] slot_base = first ? h_slot : t_slot;
    wire out_free = !out_valid || out_ready;

    // a beat of a whole TLP writes command words into the output register, which must be free
    wire data_beat = whole && !(first && h_oor) && (w < words);
    wire torn_sop  = first && !h_whole && !h_oor;
    assign in_ready = (data_beat || torn_sop) ? out_free : 1'b1;
    wire fire = in_valid && in_ready;

    // the beat that writes a command's word 3 completes it
    reg  complete;
    reg  [3:0] w_next;
    integer l;
    always @(*) begin
        complete = 1'b0;
        for (l = 0; l < R; l = l + 1)
            if ((w + l[3:0]) < words && ((w + l[3:0]) & 4'd3) == 4'd3) complete = 1'b1;
        w_next = w + R[3:0];
    end

    // ---------------------------------------------------------------- validation of a command
    wire [63:0] c0      = out_cmd[63:0];
    wire [3:0]  c_op    = c0[`VELO_RMA_CMD0_OP];
    wire [7:0]  c_node  = c0[`VELO_RMA_CMD0_REM_NODE];
    wire        c_put   = (c_op == `VELO_RMA_OP_PUT);
    wire        c_get   = (c_op == `VELO_RMA_OP_GET);
    wire        c_rsvd  = (c0[`VELO_RMA_CMD0_RSVD0] != 1'b0);   // the only reserved bit (RKEY_HI is 63:40)
    wire        c_nodeb = (NODE_BITS < 8) ? ((c_node >> NODE_BITS) != 8'd0) : 1'b0;
    wire        c_getb  = c_get && ((c0[`VELO_RMA_CMD0_LEN] == 24'd0) || c0[`VELO_RMA_CMD0_RCPL_LSB] ||
                                    c0[`VELO_RMA_CMD0_NOTIFY_LSB]);
    wire        c_bad   = !(c_put || c_get) || c_rsvd || c_nodeb || c_getb;
    assign out_err = o_torn ? `VELO_RMA_ERR_TORN : (c_bad ? `VELO_RMA_ERR_BAD_CMD : `VELO_RMA_ERR_NONE);

    // ---------------------------------------------------------------- state
    wire out_fire = out_valid && out_ready;
    always @(posedge clk) begin
        if (rst) begin
            in_pkt    <= 1'b0;
            t_whole   <= 1'b0;
            t_words   <= 4'd0;
            t_w       <= 4'd0;
            out_valid <= 1'b0;
            o_torn    <= 1'b0;
        end else begin
            if (out_fire) out_valid <= 1'b0;
            if (fire) begin
                in_pkt <= !in_eop;
                if (first) begin
                    t_whole <= h_whole && !h_oor;
                    t_words <= words;
                    t_slot  <= h_slot;
                end
                if (data_beat) t_w <= w_next;
                else if (first) t_w <= 4'd0;
                if (data_beat && complete) begin
                    out_valid <= 1'b1;
                    o_torn    <= 1'b0;
                end
                if (torn_sop) begin
                    out_valid <= 1'b1;
                    o_torn    <= 1'b1;
                end
            end
        end
    end

    // the output register: command words land in it as they arrive (word i of the TLP is word
    // i % 4 of its command)
    integer k, j;
    always @(posedge clk) begin
        if (fire && data_beat) begin
            for (k = 0; k < R; k = k + 1)
                for (j = 0; j < 4; j = j + 1)
                    if ((w + k[3:0]) < words && (w[1:0] + k[1:0]) == j[1:0])
                        out_cmd[j*64 +: 64] <= in_data[k*64 +: 64];
            // a beat that starts a command (R = 1 or 2: word 0 or 4 is in lane 0) sets its slot
            if ((w & 4'd3) == 4'd0) out_slot <= slot_base + {6'd0, w[2]};
            if (first) begin
                out_vpid     <= addr_lo[12 +: VPID_BITS];
                out_slot_cnt <= 8'd1;
            end
        end
        if (fire && torn_sop) begin
            out_cmd      <= 256'd0;
            out_vpid     <= addr_lo[12 +: VPID_BITS];
            out_slot     <= h_slot;
            out_slot_cnt <= h_cnt;
        end
    end

    // ---------------------------------------------------------------- counter events
    // a TLP that ends before its last command is complete loses that command (torn, no record)
    wire short_eop = fire && in_eop && data_beat && (w_next < words);
    always @(posedge clk) begin
        if (rst) begin
            ev_cmd_put  <= 1'b0;
            ev_cmd_get  <= 1'b0;
            ev_cmd_torn <= 1'b0;
            ev_cmd_bad  <= 1'b0;
        end else begin
            ev_cmd_put  <= out_fire && !o_torn && !c_bad && c_put;
            ev_cmd_get  <= out_fire && !o_torn && !c_bad && c_get;
            ev_cmd_bad  <= out_fire && !o_torn && c_bad;
            ev_cmd_torn <= (out_fire && o_torn) || short_eop || (fire && first && h_oor);
        end
    end

    assign idle = !in_pkt && !out_valid && !ev_cmd_put && !ev_cmd_get && !ev_cmd_torn && !ev_cmd_bad;

    wire unused_ok = &{1'b0, addr_lo[1:0], addr_lo[31:20], last_cl[2:0], c0};
endmodule
`default_nettype wire
