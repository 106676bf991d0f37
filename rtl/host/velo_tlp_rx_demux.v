// Downstream TLP demultiplexer: sends each TLP from the host to the unit that owns it.
//   posted write, BAR2 (send window)          -> requester
//   posted write, BAR0 (registers)            -> register file
//   any non-posted request (reads, I/O, ...)  -> register file (it answers, with UR if unsupported)
//   writes to other BARs, messages, stray completions -> dropped here and counted
// The route is chosen on the first beat and held to the last; zero latency.
`default_nettype none
`include "velo_spec.vh"
module velo_tlp_rx_demux #(
    parameter integer TLP_W = 64  // TLP stream data width: 64 or 128
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
    // counter events
    output reg              ev_bad_bar,
    output reg              ev_unsupported
);
    localparam [1:0] RT_DROP = 2'd0, RT_REQ = 2'd1, RT_REG = 2'd2;

    wire [7:0] ft      = in_hdr[`VELO_TLP_HDR_FMT_TYPE];
    wire is_mwr        = (ft == `VELO_TLP_FMT_TYPE_MWR32) || (ft == `VELO_TLP_FMT_TYPE_MWR64);
    wire is_msg        = (ft[4:3] == 2'b10);
    wire is_cpl        = (ft[4:1] == 4'b0101);
    reg  [1:0] rt_new;
    always @(*) begin
        if (is_mwr)
            rt_new = (in_bar == `VELO_BAR_SEND) ? RT_REQ :
                     (in_bar == `VELO_BAR_REGS) ? RT_REG : RT_DROP;
        else if (is_msg || is_cpl)
            rt_new = RT_DROP;
        else
            rt_new = RT_REG;
    end

    reg        in_pkt;  // inside a TLP
    reg  [1:0] rt_q;
    wire [1:0] rt = (in_sop && !in_pkt) ? rt_new : rt_q;

    always @(*) begin
        case (rt)
            RT_REQ:  in_ready = req_ready;
            RT_REG:  in_ready = reg_ready;
            default: in_ready = 1'b1;
        endcase
    end

    assign req_valid = in_valid && (rt == RT_REQ);
    assign reg_valid = in_valid && (rt == RT_REG);
    assign req_sop = in_sop;  assign req_eop = in_eop;  assign req_hdr = in_hdr;  assign req_data = in_data;
    assign reg_sop = in_sop;  assign reg_eop = in_eop;  assign reg_hdr = in_hdr;  assign reg_data = in_data;
    assign reg_bar = in_bar;

    wire fire = in_valid && in_ready;
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
                    rt_q           <= rt_new;
                    ev_bad_bar     <= is_mwr && rt_new == RT_DROP;
                    ev_unsupported <= (is_msg || is_cpl);
                end
                in_pkt <= !in_eop;
            end
        end
    end
endmodule
`default_nettype wire
