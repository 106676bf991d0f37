// Downstream TLP demultiplexer: sends each TLP from the host to the unit that owns it.
//   posted write, BAR2 (send window)          -> requester
//   posted write, BAR0 (registers)            -> register file
//   any non-posted request (reads, I/O, ...)  -> register file (it answers, with UR if unsupported)
//   posted write, BAR4 (RMA command window)    -> RMA command decoder      (RMA = 1)
//   completions (answers to the NIC's reads)  -> RMA DMA read engine      (RMA = 1; it checks them
//                                                and counts the ones it does not expect)
//   writes to other BARs, messages, stray completions (RMA = 0) -> dropped here and counted
// The route is chosen on the first beat and held to the last; zero latency (PIPE = 0), or (PIPE = 1)
// chosen and registered while the first beat waits one cycle, so that the header's decode does not
// reach in_ready and the units' valid inputs.
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
module velo_tlp_rx_demux #(
    parameter integer TLP_W = 64,  // TLP stream data width: 64 or 128
    parameter integer RMA   = 0,   // 1: route BAR4 writes and completions to the RMA ports
    // 0: the first beat goes to its unit in the cycle it arrives; 1: (smaller devices,
    // docs/board-guide.md) one cycle later, from the registered route
    parameter integer PIPE  = 0
) (
    input  wire             clk,
    input  wire             rst,        // synchronous, active high
    input  wire             in_valid,
    output reg              in_ready,
    input  wire             in_sop,
    input  wire             in_eop,
    input  wire [127:0]     in_hdr,
    input  wire [2:0]       in_bar,     // BAR hit, valid with in_sop
    input  wire [TLP_W-1:0] in_data,
    // to the requester
    output wire             req_valid,
    input  wire             req_ready,
    output wire             req_sop,
    output wire             req_eop,
    output wire [127:0]     req_hdr,
    output wire [TLP_W-1:0] req_data,
    // to the register file
    output wire             reg_valid,
    input  wire             reg_ready,
    output wire             reg_sop,
    output wire             reg_eop,
    output wire [127:0]     reg_hdr,
    output wire [2:0]       reg_bar,
    output wire [TLP_W-1:0] reg_data,
    // to the RMA command decoder (BAR4 posted writes)
    output wire             rma_valid,
    input  wire             rma_ready,
    output wire             rma_sop,
    output wire             rma_eop,
    output wire [127:0]     rma_hdr,
    output wire [TLP_W-1:0] rma_data,
    // to the RMA DMA read engine (completions)
    output wire             cpl_valid,
    input  wire             cpl_ready,
    output wire             cpl_sop,
    output wire             cpl_eop,
    output wire [127:0]     cpl_hdr,
    output wire [TLP_W-1:0] cpl_data,
    // counter events
    output reg              ev_bad_bar,
    output reg              ev_unsupported
);
    `VELO_CHECK_TLP_W
    `VELO_CHECK_FLAG(g_check_rma, RMA, "RMA must be 0 or 1")
    `VELO_CHECK_PIPE

    // RT_WAIT (PIPE): the first beat waits for its registered route
    localparam [2:0] RT_DROP = 3'd0, RT_REQ = 3'd1, RT_REG = 3'd2, RT_RMA = 3'd3, RT_CPL = 3'd4,
                     RT_WAIT = 3'd7;

    wire [7:0] ft      = in_hdr[`VELO_TLP_HDR_FMT_TYPE];
    wire is_mwr        = (ft == `VELO_TLP_FMT_TYPE_MWR32) || (ft == `VELO_TLP_FMT_TYPE_MWR64);
    wire is_msg        = (ft[4:3] == 2'b10);
    wire is_cpl        = (ft[4:1] == 4'b0101);
    reg  [2:0] rt_new;
    always @(*) begin
        if (is_mwr)
            rt_new = (in_bar == `VELO_BAR_SEND) ? RT_REQ :
                     (in_bar == `VELO_BAR_REGS) ? RT_REG :
                     (RMA != 0 && in_bar == `VELO_BAR_RMA) ? RT_RMA : RT_DROP;
        else if (is_cpl && RMA != 0)
            rt_new = RT_CPL;
        else if (is_msg || is_cpl)
            rt_new = RT_DROP;
        else
            rt_new = RT_REG;
    end

    reg        in_pkt;  // inside a TLP
    reg  [2:0] rt_q;
    wire       fire;
    wire [2:0] rt_first;  // the route of a first beat
    generate
        if (PIPE != 0) begin : g_pipe
            reg       dk_q;  // the first beat on the input was there last cycle: rn_q is its route
            reg [2:0] rn_q;
            always @(posedge clk) begin
                if (rst) begin
                    dk_q <= 1'b0;
                    rn_q <= RT_DROP;
                end else begin
                    dk_q <= in_valid && in_sop && !in_pkt && !fire;
                    rn_q <= rt_new;
                end
            end
            assign rt_first = dk_q ? rn_q : RT_WAIT;
        end else begin : g_nopipe
            assign rt_first = rt_new;
        end
    endgenerate
    wire [2:0] rt = (in_sop && !in_pkt) ? rt_first : rt_q;

    always @(*) begin
        case (rt)
            RT_REQ:  in_ready = req_ready;
            RT_REG:  in_ready = reg_ready;
            RT_RMA:  in_ready = rma_ready;
            RT_CPL:  in_ready = cpl_ready;
            RT_WAIT: in_ready = 1'b0;
            default: in_ready = 1'b1;
        endcase
    end

    assign req_valid = in_valid && (rt == RT_REQ);
    assign reg_valid = in_valid && (rt == RT_REG);
    assign req_sop = in_sop;  assign req_eop = in_eop;  assign req_hdr = in_hdr;  assign req_data = in_data;
    assign reg_sop = in_sop;  assign reg_eop = in_eop;  assign reg_hdr = in_hdr;  assign reg_data = in_data;
    assign reg_bar = in_bar;
    assign rma_valid = in_valid && (rt == RT_RMA);
    assign cpl_valid = in_valid && (rt == RT_CPL);
    assign rma_sop = in_sop;  assign rma_eop = in_eop;  assign rma_hdr = in_hdr;  assign rma_data = in_data;
    assign cpl_sop = in_sop;  assign cpl_eop = in_eop;  assign cpl_hdr = in_hdr;  assign cpl_data = in_data;

    assign fire = in_valid && in_ready;
    always @(posedge clk) begin
        if (rst) begin
            in_pkt         <= 1'b0;
            rt_q           <= RT_DROP;
            ev_bad_bar     <= 1'b0;
            ev_unsupported <= 1'b0;
        end else begin
            ev_bad_bar     <= 1'b0;
            ev_unsupported <= 1'b0;
            if (fire) begin
                if (in_sop && !in_pkt) begin
                    rt_q           <= rt_first;
                    ev_bad_bar     <= is_mwr && rt_new == RT_DROP;
                    ev_unsupported <= is_msg || (is_cpl && RMA == 0);
                end
                in_pkt <= !in_eop;
            end
        end
    end
endmodule
`default_nettype wire
