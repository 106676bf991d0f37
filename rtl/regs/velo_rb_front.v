// The register file's front: turns the TLPs of BAR0 into accesses of the register bus and answers
// every request that needs a completion (Corundum's register-bus idea: every block on the bus
// decodes its own addresses, velo_rb_*_regs.v generated from the spec plus its hand-written
// behaviour).
//
// Register writes and reads arrive as TLPs (1 DW, or 2 DW 8-byte aligned); reads are answered with
// completions. Requests the NIC does not support are answered with UR completions and counted,
// never left hanging. After reset the front first runs the table clear (rb_init for 2^IW cycles,
// rb_init_idx counting up, rb_wdata 0: every block writes it into row rb_init_idx of its tables)
// before the first request is taken.
//
// The bus (rtl/include/velo_rb.vh says how an access goes): the request rb_req goes to every block,
// rb_rsp is their answers ORed (velo_regfile).
// With PIPE = 1 every block registers its decode: the front waits a cycle after each address change.
//
// idle (for the register file's clock gate in simulation, docs/simulator.md): no access in work
// (IDLE, no address set in the last cycle, no event pulse to end). At rest no register of the
// front changes unless a TLP is offered (in_valid) or reset.
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_rb.vh"
module velo_rb_front #(
    parameter integer TLP_W = 64,  // TLP stream data width: 64 or 128
    parameter integer IW    = 8,   // table clear: 2^IW cycles (the widest table index: 1..8, the spec's bits)
    parameter integer RMA   = 0,   // 1: reads of BAR4 are counted as RMA reads
    parameter integer PIPE  = 0    // 1: an access waits a cycle after its address is set
) (
    input  wire                 clk,
    input  wire                 rst,          // synchronous, active high
    `include "velo_rb_front_ports.vh"
    // the register bus: the request, and the blocks' answers ORed
    output wire [`VELO_RB_REQ_W-1:0] rb_req,
    input  wire [`VELO_RB_RSP_W-1:0] rb_rsp,
    // counter events
    output reg                  ev_window_read,
    output reg                  ev_unsupported,
    output reg                  ev_bad_access,
    output reg                  ev_rma_read,
    output wire                 idle
);
    `VELO_CHECK_TLP_W
    `VELO_CHECK(g_check_iw, IW >= 1 && (IW <= `VELO_MAX_NODE_BITS || IW <= `VELO_MAX_VPID_BITS), "velo_rb_front: IW must be 1..8 (the widest table index, NODE_BITS or VPID_BITS)")
    `VELO_CHECK_FLAG(g_check_rma, RMA, "velo_rb_front: RMA must be 0 or 1")
    `VELO_CHECK_PIPE
    localparam integer NI = 1 << IW;
    localparam [2:0] R_INIT = 3'd0, R_IDLE = 3'd1, R_DRAIN = 3'd2, R_WR = 3'd3,
                     R_RD = 3'd4, R_RDW = 3'd5, R_CPL = 3'd6;

    reg [2:0]  st, st_after_drain;
    reg        two;        // 2-DW access
    reg        second;     // working on the second DW
    reg [63:0] wdata;      // write data (DW0 in 31:0)
    reg [63:0] rdata;      // read data gathered for the completion
    reg        ur;         // answer with UR
    reg [15:0] rq_id;
    reg [7:0]  rq_tag;
    reg [6:0]  lower;
    reg [11:0] bcnt;
    reg        a_new;      // rb_addr was set in the last cycle (PIPE)
    reg        cpl_v;      // the completion is offered (cpl_valid)
    reg [20:0] rb_addr;    // the bus's request ...
    reg [IW-1:0] rb_init_idx;
    wire [31:0] rb_wdata;
    wire       rb_wr_en, rb_wr_go, rb_rd_en, rb_init;
    wire [31:0] rb_rdata = `VELO_RB_RDATA(rb_rsp);
    wire        rb_wack  = `VELO_RB_WACK(rb_rsp);
    wire        rb_wwait = `VELO_RB_WWAIT(rb_rsp);
    wire        rb_rram  = `VELO_RB_RRAM(rb_rsp);
    wire        rb_rgo   = `VELO_RB_RGO(rb_rsp);
    assign rb_req = `VELO_RB_REQ(rb_addr, rb_wdata, rb_wr_en, rb_wr_go, rb_rd_en, rb_init,
                                 {{(`VELO_RB_IDX_W-IW){1'b0}}, rb_init_idx});

    assign cpl_valid = cpl_v;
    assign cpl_sop = 1'b1;
    assign cpl_eop = 1'b1;

    // ------------------------------------------------------------------ request decode
    wire        is4dw    = in_hdr[`VELO_TLP_HDR_FMT_TYPE_LSB + 5];
    wire [7:0]  fmt_type = in_hdr[`VELO_TLP_HDR_FMT_TYPE];
    wire [31:0] req_addr = is4dw ? {in_hdr[`VELO_TLP_HDR_ADDR64_LO], 2'b00}
                                 : {in_hdr[`VELO_TLP_HDR_ADDR32], 2'b00};
    wire [9:0]  len_dw   = in_hdr[`VELO_TLP_HDR_LENGTH];
    wire [3:0]  fbe      = in_hdr[`VELO_TLP_HDR_FIRST_BE];
    wire [3:0]  lbe      = in_hdr[`VELO_TLP_HDR_LAST_BE];
    wire is_mwr  = (fmt_type == `VELO_TLP_FMT_TYPE_MWR32) || (fmt_type == `VELO_TLP_FMT_TYPE_MWR64);
    wire is_mrd  = (fmt_type == `VELO_TLP_FMT_TYPE_MRD32) || (fmt_type == `VELO_TLP_FMT_TYPE_MRD64);
    // no completion: memory writes, messages and (stray) completions; every other request
    // that reaches us needs one
    wire is_cpl    = (fmt_type[4:1] == 4'b0101);
    wire is_posted = is_mwr || (fmt_type[4:3] == 2'b10) || is_cpl;
    wire on_bar0 = (in_bar == `VELO_BAR_REGS);
    wire has_rma = (RMA != 0);
    // 1 DW, or 2 DW 8-byte aligned with a non-zero last byte enable (PCIe forbids 0 there)
    wire len_ok  = (len_dw == 10'd1 && lbe == 4'd0) ||
                   (len_dw == 10'd2 && req_addr[2] == 1'b0 && lbe != 4'd0);
    // poisoned writes are dropped (and counted) like malformed ones
    wire wr_ok   = len_ok && fbe == 4'hF && (len_dw == 10'd1 || lbe == 4'hF) &&
                   !in_hdr[`VELO_TLP_HDR_EP_LSB];
    wire unused_ra = &{1'b0, req_addr[31:21]};

    // byte count and lower address of a read completion (PCIe rules for 1 or 2 DW reads)
    reg [1:0] lead;
    reg [2:0] fspan, ltop;
    always @(*) begin
        casez (fbe)  // zero-length read (fbe 0000): lower address bits 00
            4'b0000: lead = 2'd0;
            4'b???1: lead = 2'd0;
            4'b??10: lead = 2'd1;
            4'b?100: lead = 2'd2;
            default: lead = 2'd3;
        endcase
        casez (fbe)  // first DW of a 1-DW read: from lowest to highest enabled byte
            4'b1??1: fspan = 3'd4;
            4'b01?1, 4'b1?10: fspan = 3'd3;
            4'b0011, 4'b0110, 4'b1100: fspan = 3'd2;
            default: fspan = 3'd1;
        endcase
        casez (lbe)
            4'b1???: ltop = 3'd4;
            4'b01??: ltop = 3'd3;
            4'b001?: ltop = 3'd2;
            default: ltop = 3'd1;
        endcase
    end
    wire [11:0] rd_bcnt = (len_dw == 10'd1) ? {9'd0, fspan}
                                            : (12'd4 - {10'd0, lead} + {9'd0, ltop});

    // ------------------------------------------------------------------ the bus
    wire a_ok;
    generate
        if (PIPE != 0) begin : g_pipe
            assign a_ok = !a_new;
        end else begin : g_nopipe
            assign a_ok = 1'b1;
            wire unused_an = &{1'b0, a_new};
        end
    endgenerate
    // write data of the current DW; 0 while the table clear runs (the tables are cleared with it)
    assign rb_wdata = rb_init ? 32'd0 : (second ? wdata[63:32] : wdata[31:0]);
    assign rb_init  = (st == R_INIT);
    assign rb_wr_en = (st == R_WR) && a_ok;
    assign rb_wr_go = rb_wr_en && !rb_wwait;
    assign rb_rd_en = (st == R_RD) && a_ok;

    // the current DW is done (written, read, or its read from RAM taken): then the next one, if any
    wire dw_done = (st == R_WR && rb_wr_go) || (st == R_RD && a_ok && !rb_rram) || (st == R_RDW);
    wire dw_next = dw_done && two && !second;

    // ------------------------------------------------------------------ control
    wire in_fire = in_valid && in_ready;
    assign in_ready = (st == R_IDLE) || (st == R_DRAIN);

    always @(posedge clk) begin
        if (rst) begin
            st             <= R_INIT;
            st_after_drain <= R_IDLE;
            rb_init_idx    <= {IW{1'b0}};
            cpl_v          <= 1'b0;
            ev_window_read <= 1'b0;
            ev_unsupported <= 1'b0;
            ev_bad_access  <= 1'b0;
            ev_rma_read    <= 1'b0;
            rb_addr        <= 21'd0;
            a_new          <= 1'b0;
            two            <= 1'b0;
            second         <= 1'b0;
            ur             <= 1'b0;
        end else begin
            a_new          <= 1'b0;
            ev_window_read <= 1'b0;
            ev_rma_read    <= 1'b0;
            ev_unsupported <= 1'b0;
            ev_bad_access  <= 1'b0;
            case (st)
                R_INIT: begin
                    rb_init_idx <= rb_init_idx + 1'b1;
                    if (rb_init_idx == NI[IW-1:0] - 1'b1) st <= R_IDLE;
                end
                R_IDLE: begin
                    if (in_fire && in_sop) begin
                        rb_addr <= req_addr[20:0];
                        a_new   <= 1'b1;
                        two     <= (len_dw == 10'd2);
                        second  <= 1'b0;
                        ur      <= 1'b0;
                        if (is_posted) begin
                            if (is_mwr && on_bar0 && wr_ok) st_after_drain <= R_WR;
                            else begin
                                st_after_drain <= R_IDLE;
                                ev_bad_access  <= is_mwr && on_bar0;
                                ev_unsupported <= !(is_mwr && on_bar0);
                            end
                        end else begin
                            st_after_drain <= (is_mrd && on_bar0 && len_ok) ? R_RD : R_CPL;
                            if (!(is_mrd && on_bar0 && len_ok)) begin
                                ur <= 1'b1;
                                ev_window_read <= is_mrd && !on_bar0 && !(has_rma && in_bar == `VELO_BAR_RMA);
                                ev_rma_read    <= is_mrd && has_rma && in_bar == `VELO_BAR_RMA;
                                ev_bad_access  <= is_mrd && on_bar0;
                                ev_unsupported <= !is_mrd;
                            end
                        end
                        if (in_eop) begin
                            if (is_posted) st <= (is_mwr && on_bar0 && wr_ok) ? R_WR : R_IDLE;
                            else           st <= (is_mrd && on_bar0 && len_ok) ? R_RD : R_CPL;
                        end else begin
                            st <= R_DRAIN;
                        end
                    end
                end
                R_DRAIN: if (in_fire && in_eop) st <= st_after_drain;
                R_WR: begin
                    if (rb_wr_go && !rb_wack) ev_bad_access <= 1'b1;
                    if (dw_done && !dw_next) st <= R_IDLE;
                end
                R_RD: begin
                    // RAM-backed: the block reads when its port is free
                    if (a_ok && rb_rram) begin
                        if (rb_rgo) st <= R_RDW;
                    end else if (dw_done && !dw_next) begin
                        st <= R_CPL;
                    end
                end
                R_RDW: st <= dw_next ? R_RD : R_CPL;
                R_CPL: begin
                    if (!cpl_v) cpl_v <= 1'b1;
                    else if (cpl_ready) begin
                        cpl_v <= 1'b0;
                        st        <= R_IDLE;
                    end
                end
                default: st <= R_IDLE;
            endcase
            if (dw_next) begin  // on to the second DW
                second  <= 1'b1;
                rb_addr <= rb_addr + 21'd4;
                a_new   <= 1'b1;
            end
        end
    end

`ifdef VERILATOR
    assign idle = (st == R_IDLE) && !a_new && !ev_window_read && !ev_unsupported && !ev_bad_access &&
                  !ev_rma_read;
`else
    assign idle = 1'b0;  // used by the clock gate under Verilator only
`endif

    // invariants of the state machine and the bus (simulation only)
    `VELO_ASSERT(clk, rst, st <= R_CPL, "velo_rb_front: the state machine is in no state")
    `VELO_ASSERT(clk, rst, st_after_drain == R_IDLE || st_after_drain == R_WR || st_after_drain == R_RD || st_after_drain == R_CPL, "velo_rb_front: the state after a drain is none of IDLE, WR, RD, CPL")
    `VELO_ASSERT(clk, rst, !cpl_valid || st == R_CPL, "velo_rb_front: a completion is offered outside CPL")
    `VELO_ASSERT(clk, rst, !rb_wwait || rb_wr_en, "velo_rb_front: a block holds rb_wwait with no write asked")
    `VELO_ASSERT(clk, rst, !rb_rgo || (rb_rd_en && rb_rram), "velo_rb_front: a block starts a RAM read no read asked for")

    // read data of the current DW (no reset needed: sent only after being set)
    wire rd_take = (rb_rd_en && !rb_rram) || (st == R_RDW);
    always @(posedge clk) begin
        if (rd_take) begin
            if (second) rdata[63:32] <= rb_rdata;
            else        rdata[31:0]  <= rb_rdata;
        end
    end

    // request fields kept for the completion (no reset needed: used only after being set)
    always @(posedge clk) begin
        if (st == R_IDLE && in_fire && in_sop) begin
            wdata  <= in_data[63:0];
            rq_id  <= in_hdr[`VELO_TLP_HDR_REQ_ID];
            rq_tag <= in_hdr[`VELO_TLP_HDR_REQ_TAG];
            lower  <= (is_mrd) ? {req_addr[6:2], lead} : 7'd0;
            bcnt   <= (is_mrd && on_bar0 && len_ok) ? rd_bcnt : 12'd4;
        end
    end

    reg [127:0] hdr_c;  // the completion's header
    assign cpl_hdr = hdr_c;
    always @(*) begin
        hdr_c = 128'd0;
        hdr_c[`VELO_TLP_HDR_FMT_TYPE]       = ur ? `VELO_TLP_FMT_TYPE_CPL : `VELO_TLP_FMT_TYPE_CPLD;
        hdr_c[`VELO_TLP_HDR_LENGTH]         = ur ? 10'd0 : (two ? 10'd2 : 10'd1);
        hdr_c[`VELO_TLP_HDR_CPL_ID]         = cpl_id;
        hdr_c[`VELO_TLP_HDR_CPL_STATUS]     = ur ? `VELO_TLP_CPL_UR : `VELO_TLP_CPL_SC;
        hdr_c[`VELO_TLP_HDR_CPL_BYTE_COUNT] = bcnt;
        hdr_c[`VELO_TLP_HDR_CPL_REQ_ID]     = rq_id;
        hdr_c[`VELO_TLP_HDR_CPL_TAG]        = rq_tag;
        hdr_c[`VELO_TLP_HDR_CPL_LOWER_ADDR] = lower;
    end
    generate
        if (TLP_W > 64) begin : g_wide
            assign cpl_data = {{(TLP_W-64){1'b0}}, rdata};
        end else begin : g_narrow
            assign cpl_data = rdata;
        end
    endgenerate
endmodule
`default_nettype wire
