// Transmit adapter: the NIC's device-independent TLP stream -> Xilinx 7-series PCIe core
// (pcie_7x, AXI4-Stream interface s_axis_tx, 64-bit).
//
// The NIC gives a TLP as the raw 128-bit header (valid with the first beat) and the payload from
// DW lane 0, little-endian bytes within a DW, ceil(Length/2) beats (one beat without payload).
// The core wants header DWs and payload DWs packed, DW0 in tdata[31:0] of the first beat:
//   3-DW header:  {H1,H0} {D0,H2} {D2,D1} ...        4-DW header:  {H1,H0} {H3,H2} {D1,D0} ...
// payload bytes in wire order (lowest address in [31:24] of a DW), tkeep 0xFF on every beat but
// the last (0x0F or 0xFF), tlast on the last, tuser = 0 (no ECRC generation, not poisoned, no
// streaming, no discontinue). Two header beats go out before the first NIC beat is taken (the
// header is latched from the sop beat); 3-DW TLPs are realigned by one DW, which costs one extra
// beat for an even payload length. The core is never offered a beat mid-TLP without data: once
// the first beat is out, the next ones follow as fast as the NIC supplies them (the core allows
// source throttling, PG054, but there is none unless the NIC pauses).
//
// tx_cfg_gnt is left at its default (the core may insert its own configuration completions and
// MSIs between TLPs) and tx_buf_av is not needed: tready is the only flow control used.
//
// For the interrupt adapter (velo_pcie7_irq): `pending` counts TLPs whose last beat the NIC has
// handed over (eop accepted) but whose last beat the core has not yet taken (tlast accepted);
// `nic_eop` and `core_eop` are the two events, in the cycle they happen.
`default_nettype none
module velo_pcie7_tx (
    input  wire         clk,
    input  wire         rst,                // synchronous, active high
    // from the NIC
    input  wire         tx_valid,
    output reg          tx_ready,
    input  wire         tx_sop,
    input  wire         tx_eop,
    input  wire [127:0] tx_hdr,
    input  wire [63:0]  tx_data,
    // to the core (s_axis_tx)
    output reg          s_axis_tx_tvalid,
    input  wire         s_axis_tx_tready,
    output reg  [63:0]  s_axis_tx_tdata,
    output reg  [7:0]   s_axis_tx_tkeep,
    output reg          s_axis_tx_tlast,
    output wire [3:0]   s_axis_tx_tuser,
    // TLPs inside the adapter, for ordering the MSI behind them
    output reg  [1:0]   pending,
    output wire         nic_eop,
    output wire         core_eop
);
    localparam [2:0] S_IDLE = 3'd0,  // a sop beat is awaited; emit {H1,H0} without taking it
                     S_HDR2 = 3'd1,  // emit {H3,H2} (4-DW) or {D0,H2} (3-DW)
                     S_D4   = 3'd2,  // 4-DW header: NIC beats pass through aligned
                     S_D3   = 3'd3;  // 3-DW header: payload shifted up by one DW

    function [31:0] bswap;
        input [31:0] d;
        bswap = {d[7:0], d[15:8], d[23:16], d[31:24]};
    endfunction

    reg  [2:0]   st;
    reg  [63:0]  w_h23;   // header DW2 and DW3 of the TLP under way
    reg  [1:0]   w_fmt;   // its Fmt[1:0]: with payload, 4-DW header
    reg  [9:0]   w_len;   // its Length
    reg  [10:0]  rem;     // payload DWs not yet put into an output beat (S_D4: from the NIC;
                          // S_D3: including the carried DW)
    reg  [31:0]  carry;   // S_D3: next payload DW to send (wire order)

    wire         is4   = w_fmt[0];
    wire         wdata = w_fmt[1];
    wire [10:0]  len   = (w_len == 10'd0) ? 11'd1024 : {1'b0, w_len};
    wire         can_load = !s_axis_tx_tvalid || s_axis_tx_tready;
    wire [31:0]  lo    = bswap(tx_data[31:0]);
    wire [31:0]  hi    = bswap(tx_data[63:32]);

    // which states take the NIC's beat this cycle (when the output register can be loaded)
    always @(*) begin
        case (st)
            S_IDLE:  tx_ready = tx_valid && !tx_sop;  // stray beat outside a TLP: drop it
            S_HDR2:  tx_ready = can_load && (!wdata || !is4);
            S_D4:    tx_ready = can_load;
            default: tx_ready = can_load && rem >= 11'd2;  // S_D3: rem == 1 needs no input
        endcase
    end

    assign s_axis_tx_tuser = 4'd0;
    assign nic_eop  = tx_valid && tx_ready && tx_eop;
    assign core_eop = s_axis_tx_tvalid && s_axis_tx_tready && s_axis_tx_tlast;

    always @(posedge clk) begin
        if (rst) begin
            st               <= S_IDLE;
            s_axis_tx_tvalid <= 1'b0;
            s_axis_tx_tlast  <= 1'b0;
            s_axis_tx_tkeep  <= 8'hFF;
            rem              <= 11'd0;
            pending          <= 2'd0;
        end else begin
            pending <= pending + {1'b0, nic_eop} - {1'b0, core_eop};
            if (s_axis_tx_tvalid && s_axis_tx_tready) s_axis_tx_tvalid <= 1'b0;
            case (st)
                S_IDLE: if (tx_valid && tx_sop && can_load) begin
                    w_h23            <= tx_hdr[127:64];
                    w_fmt            <= tx_hdr[30:29];
                    w_len            <= tx_hdr[9:0];
                    s_axis_tx_tvalid <= 1'b1;
                    s_axis_tx_tdata  <= tx_hdr[63:0];
                    s_axis_tx_tkeep  <= 8'hFF;
                    s_axis_tx_tlast  <= 1'b0;
                    st               <= S_HDR2;
                end
                S_HDR2: if (can_load && (tx_valid || (wdata && is4))) begin
                    s_axis_tx_tvalid <= 1'b1;
                    if (is4) begin
                        s_axis_tx_tdata <= w_h23;
                        s_axis_tx_tkeep <= 8'hFF;
                        s_axis_tx_tlast <= !wdata;
                        rem             <= len;
                        st              <= wdata ? S_D4 : S_IDLE;
                    end else if (!wdata) begin
                        s_axis_tx_tdata <= {32'd0, w_h23[31:0]};
                        s_axis_tx_tkeep <= 8'h0F;
                        s_axis_tx_tlast <= 1'b1;
                        st              <= S_IDLE;
                    end else begin
                        s_axis_tx_tdata <= {lo, w_h23[31:0]};
                        s_axis_tx_tkeep <= 8'hFF;
                        s_axis_tx_tlast <= (len == 11'd1);
                        carry           <= hi;
                        rem             <= len - 11'd1;
                        st              <= (len == 11'd1) ? S_IDLE : S_D3;
                    end
                end
                S_D4: if (can_load && tx_valid) begin
                    s_axis_tx_tvalid <= 1'b1;
                    s_axis_tx_tdata  <= {(rem == 11'd1) ? 32'd0 : hi, lo};
                    s_axis_tx_tkeep  <= (rem == 11'd1) ? 8'h0F : 8'hFF;
                    s_axis_tx_tlast  <= (rem <= 11'd2);
                    rem              <= (rem <= 11'd2) ? 11'd0 : rem - 11'd2;
                    if (rem <= 11'd2) st <= S_IDLE;
                end
                default: if (can_load && (tx_valid || rem == 11'd1)) begin  // S_D3
                    s_axis_tx_tvalid <= 1'b1;
                    if (rem == 11'd1) begin
                        s_axis_tx_tdata <= {32'd0, carry};
                        s_axis_tx_tkeep <= 8'h0F;
                        s_axis_tx_tlast <= 1'b1;
                        rem             <= 11'd0;
                        st              <= S_IDLE;
                    end else begin
                        s_axis_tx_tdata <= {lo, carry};
                        s_axis_tx_tkeep <= 8'hFF;
                        s_axis_tx_tlast <= (rem == 11'd2);
                        carry           <= hi;
                        rem             <= rem - 11'd2;
                        if (rem == 11'd2) st <= S_IDLE;
                    end
                end
            endcase
        end
    end
endmodule
`default_nettype wire
