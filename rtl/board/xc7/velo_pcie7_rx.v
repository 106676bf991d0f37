// Receive adapter: Xilinx 7-series PCIe core (pcie_7x, AXI4-Stream interface, 64-bit) -> the
// NIC's device-independent TLP stream (docs/spec.md, "Host interface").
//
// The core delivers a TLP as packed 64-bit beats, DW0 in tdata[31:0] of the first beat:
//   3-DW header:  {H1,H0} {D0,H2} {D2,D1} ...        4-DW header:  {H1,H0} {H3,H2} {D1,D0} ...
// with tlast (and tkeep 0x0F or 0xFF) on the last beat and the BAR hit one-hot in tuser[8:2]
// (bit 2 BAR0 .. bit 7 BAR5, bit 8 expansion ROM; a 64-bit BAR hits on its lower index). Header
// DWs use PCIe bit numbering (Fmt/Type in [31:24]); payload DWs carry the byte at the lowest
// address in [31:24] (the wire order). The NIC wants the raw header as a 128-bit sideband valid
// with the first beat, the payload from DW lane 0 of the first beat, little-endian bytes within a
// DW, the BAR index (7: no BAR hit) and sop/eop. So this adapter collects the header, realigns
// the payload by one DW for 3-DW headers (D0 sits in the upper half of the second beat), swaps
// the bytes of every payload DW and encodes the BAR hit.
//
// The payload length comes from the header (Length, 0 = 1024 DW); input beats beyond it (a TLP
// digest, should the core not trim it) are consumed and dropped. A TLP the core ends early
// (tlast before Length is reached) is closed with eop at once; the 7-series core never does that
// for a well-formed TLP (it drops malformed ones), so this only keeps the stream framed.
// tuser[0] (ECRC error, only with ECRC checking on, which the build leaves off) and tuser[1]
// (poisoned, the same as the header's EP bit the NIC already sees) are not used.
//
// Registered output (valid/ready); the core's tready is combinational from the NIC's ready only
// through the "output register free" term. Full throughput on 4-DW TLPs; one extra output beat
// per 3-DW TLP with an even number of payload DWs (the realigned last DW).
`default_nettype none
module velo_pcie7_rx (
    input  wire         clk,
    input  wire         rst,                // synchronous, active high
    // from the core (m_axis_rx)
    input  wire         m_axis_rx_tvalid,
    output reg          m_axis_rx_tready,
    input  wire [63:0]  m_axis_rx_tdata,
    input  wire [7:0]   m_axis_rx_tkeep,
    input  wire         m_axis_rx_tlast,
    input  wire [21:0]  m_axis_rx_tuser,
    // to the NIC
    output reg          rx_valid,
    input  wire         rx_ready,
    output reg          rx_sop,
    output reg          rx_eop,
    output reg  [127:0] rx_hdr,
    output reg  [2:0]   rx_bar,
    output reg  [63:0]  rx_data
);
    localparam [2:0] S_H01 = 3'd0,  // expecting the first beat {H1,H0}
                     S_H23 = 3'd1,  // expecting the second beat {H3,H2} or {D0,H2}
                     S_D4  = 3'd2,  // 4-DW header: payload beats pass through aligned
                     S_D3  = 3'd3,  // 3-DW header: payload shifted down by one DW
                     S_TAIL = 3'd4, // 3-DW header: the last payload DW is held, emit it alone
                     S_DROP = 3'd5; // discard input beats up to tlast

    // byte order within one payload DW: wire order (lowest address in [31:24]) <-> little endian
    function [31:0] bswap;
        input [31:0] d;
        bswap = {d[7:0], d[15:8], d[23:16], d[31:24]};
    endfunction

    reg  [2:0]   st;
    reg  [127:0] w_hdr;   // header being collected
    reg  [2:0]   w_bar;
    reg  [10:0]  rem;     // payload DWs still to come from the core (S_D4, S_D3)
    reg  [31:0]  carry;   // S_D3/S_TAIL: payload DW received, not yet sent (little endian)
    reg          first;   // the next output beat is the TLP's first (sop)
    reg          open_in; // the core's TLP has not seen tlast yet

    wire         is4   = w_hdr[29];        // Fmt[0]: 4-DW header
    wire         wdata = w_hdr[30];        // Fmt[1]: with payload
    wire [10:0]  len   = (w_hdr[9:0] == 10'd0) ? 11'd1024 : {1'b0, w_hdr[9:0]};
    wire         can_load = !rx_valid || rx_ready;
    wire         fire  = m_axis_rx_tvalid && m_axis_rx_tready;
    wire [31:0]  lo    = bswap(m_axis_rx_tdata[31:0]);
    wire [31:0]  hi    = bswap(m_axis_rx_tdata[63:32]);
    // header as it is complete with the second beat
    wire [127:0] hdr2  = {is4 ? m_axis_rx_tdata[63:32] : 32'd0, m_axis_rx_tdata[31:0], w_hdr[63:0]};

    // BAR hit (one-hot, tuser[8:2]) -> index, 7 when nothing hit
    reg [2:0] bar_idx;
    always @(*) begin
        casez (m_axis_rx_tuser[8:2])
            7'b??????1: bar_idx = 3'd0;
            7'b?????10: bar_idx = 3'd1;
            7'b????100: bar_idx = 3'd2;
            7'b???1000: bar_idx = 3'd3;
            7'b??10000: bar_idx = 3'd4;
            7'b?100000: bar_idx = 3'd5;
            7'b1000000: bar_idx = 3'd6;
            default:    bar_idx = 3'd7;
        endcase
    end

    // ready towards the core: beats that produce an output beat need the output register
    always @(*) begin
        case (st)
            S_H01:   m_axis_rx_tready = 1'b1;
            S_H23:   m_axis_rx_tready = (!wdata || (!is4 && len == 11'd1)) ? can_load : 1'b1;
            S_D4:    m_axis_rx_tready = can_load;
            S_D3:    m_axis_rx_tready = can_load;
            S_TAIL:  m_axis_rx_tready = 1'b0;
            default: m_axis_rx_tready = 1'b1;  // S_DROP
        endcase
    end

    always @(posedge clk) begin
        if (rst) begin
            st       <= S_H01;
            rx_valid <= 1'b0;
            rx_sop   <= 1'b0;
            rx_eop   <= 1'b0;
            first    <= 1'b0;
            open_in  <= 1'b0;
            rem      <= 11'd0;
        end else begin
            if (rx_valid && rx_ready) rx_valid <= 1'b0;
            if (fire) open_in <= !m_axis_rx_tlast;
            case (st)
                S_H01: if (fire) begin
                    w_hdr[63:0] <= m_axis_rx_tdata;
                    w_bar       <= bar_idx;
                    // a one-beat "TLP" cannot be; stay framed on tlast
                    st          <= m_axis_rx_tlast ? S_H01 : S_H23;
                end
                S_H23: if (fire) begin
                    w_hdr[127:64] <= hdr2[127:64];
                    first         <= 1'b1;
                    if (!wdata || (!is4 && len == 11'd1)) begin
                        // the whole TLP fits into one NIC beat
                        rx_valid <= 1'b1;
                        rx_sop   <= 1'b1;
                        rx_eop   <= 1'b1;
                        rx_hdr   <= hdr2;
                        rx_bar   <= w_bar;
                        rx_data  <= {32'd0, wdata ? hi : 32'd0};
                        first    <= 1'b0;
                        st       <= m_axis_rx_tlast ? S_H01 : S_DROP;
                    end else if (is4) begin
                        rem <= len;
                        st  <= m_axis_rx_tlast ? S_H01 : S_D4;  // early end: nothing to send
                    end else begin
                        carry <= hi;                            // D0
                        rem   <= len - 11'd1;
                        st    <= m_axis_rx_tlast ? S_TAIL : S_D3;  // early end: send D0 alone
                    end
                end
                S_D4: if (fire) begin
                    rx_valid <= 1'b1;
                    rx_sop   <= first;
                    rx_hdr   <= w_hdr;
                    rx_bar   <= w_bar;
                    rx_data  <= {(rem == 11'd1) ? 32'd0 : hi, lo};
                    first    <= 1'b0;
                    rem      <= (rem <= 11'd2) ? 11'd0 : rem - 11'd2;
                    rx_eop   <= (rem <= 11'd2) || m_axis_rx_tlast;
                    if (rem <= 11'd2) st <= m_axis_rx_tlast ? S_H01 : S_DROP;
                    else if (m_axis_rx_tlast) st <= S_H01;
                end
                S_D3: if (fire) begin
                    rx_valid <= 1'b1;
                    rx_sop   <= first;
                    rx_hdr   <= w_hdr;
                    rx_bar   <= w_bar;
                    rx_data  <= {lo, carry};
                    first    <= 1'b0;
                    carry    <= hi;
                    rem      <= (rem <= 11'd2) ? 11'd0 : rem - 11'd2;
                    if (rem == 11'd1) begin
                        rx_eop <= 1'b1;
                        st     <= m_axis_rx_tlast ? S_H01 : S_DROP;
                    end else if (rem == 11'd2) begin
                        rx_eop <= 1'b0;            // the upper DW is the last one: S_TAIL sends it
                        st     <= S_TAIL;
                    end else begin
                        rx_eop <= m_axis_rx_tlast; // early end
                        if (m_axis_rx_tlast) st <= S_H01;
                    end
                end
                S_TAIL: if (can_load) begin
                    rx_valid <= 1'b1;
                    rx_sop   <= first;
                    rx_eop   <= 1'b1;
                    rx_hdr   <= w_hdr;
                    rx_bar   <= w_bar;
                    rx_data  <= {32'd0, carry};
                    first    <= 1'b0;
                    st       <= open_in ? S_DROP : S_H01;
                end
                default: if (fire && m_axis_rx_tlast) st <= S_H01;  // S_DROP
            endcase
        end
    end

    wire unused_ok = &{1'b0, m_axis_rx_tkeep, m_axis_rx_tuser[21:9], m_axis_rx_tuser[1:0]};
endmodule
`default_nettype wire
