// Everything of the 7-series PCIe board design that sits between the PCIe core's user interface
// and the network PHY, free of vendor primitives: the receive, transmit and interrupt adapters
// and the NIC (64-bit TLP stream). The board top (velo_xc7_top) adds the core, clocking, reset
// and the pins; the Verilator benches (sim/tests/tb_pcie7.cpp) drive this module from a model of
// the core's AXI4-Stream and configuration interfaces.
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
module velo_pcie7_shell #(
    parameter integer NODE_BITS    = 8,   // node id width (spec param NODE_BITS)
    parameter integer VPID_BITS    = 8,   // vpid width (spec param VPID_BITS)
    parameter integer LINK_W       = 16,  // network flit width: 16, 32 or 64
    parameter integer NP           = 1    // network ports (1..VELO_NP_MAX = 6); switch and link buffers: the NIC's defaults
) (
    input  wire                     clk,       // the core's user_clk_out
    input  wire                     rst,       // synchronous, active high
    // core: receive (m_axis_rx)
    input  wire                     m_axis_rx_tvalid,
    output wire                     m_axis_rx_tready,
    input  wire [63:0]              m_axis_rx_tdata,
    input  wire [7:0]               m_axis_rx_tkeep,
    input  wire                     m_axis_rx_tlast,
    input  wire [21:0]              m_axis_rx_tuser,
    // core: transmit (s_axis_tx)
    output wire                     s_axis_tx_tvalid,
    input  wire                     s_axis_tx_tready,
    output wire [63:0]              s_axis_tx_tdata,
    output wire [7:0]               s_axis_tx_tkeep,
    output wire                     s_axis_tx_tlast,
    output wire [3:0]               s_axis_tx_tuser,
    // core: configuration status and interrupt
    input  wire [7:0]               cfg_bus_number,
    input  wire [4:0]               cfg_device_number,
    input  wire [2:0]               cfg_function_number,
    output wire                     cfg_interrupt,
    input  wire                     cfg_interrupt_rdy,
    input  wire                     cfg_interrupt_msienable,
    output wire                     cfg_interrupt_assert,
    output wire [7:0]               cfg_interrupt_di,
    // network ports: one {sync[1:0], flit} per cycle each way, port p at [(p-1)*(LINK_W+2) +: LINK_W+2]
    output wire [NP*(LINK_W+2)-1:0] phy_tx,
    input  wire [NP*(LINK_W+2)-1:0] phy_rx,
    output wire [NP-1:0]            port_up,
    // status pulses
    output wire                     msi_sent,
    output wire                     irq_dropped
);
    `VELO_CHECK_NODE_BITS
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK_LINK_W
    `VELO_CHECK_NP

    // our PCIe id (requester id of DMA writes, completer id of completions)
    wire [15:0] cfg_id = {cfg_bus_number, cfg_device_number, cfg_function_number};

    wire         rx_valid, rx_ready, rx_sop, rx_eop;
    wire [127:0] rx_hdr;
    wire [2:0]   rx_bar;
    wire [63:0]  rx_data;
    wire         tx_valid, tx_ready, tx_sop, tx_eop;
    wire [127:0] tx_hdr;
    wire [63:0]  tx_data;
    wire         irq_valid, irq_ready;
    wire [1:0]   tx_pending;
    wire         tx_nic_eop, tx_core_eop;

    velo_pcie7_rx u_rx (
        .clk(clk), .rst(rst),
        .m_axis_rx_tvalid(m_axis_rx_tvalid), .m_axis_rx_tready(m_axis_rx_tready),
        .m_axis_rx_tdata(m_axis_rx_tdata), .m_axis_rx_tkeep(m_axis_rx_tkeep),
        .m_axis_rx_tlast(m_axis_rx_tlast), .m_axis_rx_tuser(m_axis_rx_tuser),
        .rx_valid(rx_valid), .rx_ready(rx_ready), .rx_sop(rx_sop), .rx_eop(rx_eop),
        .rx_hdr(rx_hdr), .rx_bar(rx_bar), .rx_data(rx_data));

    velo_nic #(.NODE_BITS(NODE_BITS), .VPID_BITS(VPID_BITS), .TLP_W(64), .LINK_W(LINK_W), .NP(NP)) u_nic (
        .clk(clk), .rst(rst), .cfg_id(cfg_id),
        .rx_valid(rx_valid), .rx_ready(rx_ready), .rx_sop(rx_sop), .rx_eop(rx_eop),
        .rx_hdr(rx_hdr), .rx_bar(rx_bar), .rx_data(rx_data),
        .tx_valid(tx_valid), .tx_ready(tx_ready), .tx_sop(tx_sop), .tx_eop(tx_eop),
        .tx_hdr(tx_hdr), .tx_data(tx_data),
        .phy_tx(phy_tx), .phy_rx(phy_rx), .port_up(port_up),
        .irq_valid(irq_valid), .irq_ready(irq_ready));

    velo_pcie7_tx u_tx (
        .clk(clk), .rst(rst),
        .tx_valid(tx_valid), .tx_ready(tx_ready), .tx_sop(tx_sop), .tx_eop(tx_eop),
        .tx_hdr(tx_hdr), .tx_data(tx_data),
        .s_axis_tx_tvalid(s_axis_tx_tvalid), .s_axis_tx_tready(s_axis_tx_tready),
        .s_axis_tx_tdata(s_axis_tx_tdata), .s_axis_tx_tkeep(s_axis_tx_tkeep),
        .s_axis_tx_tlast(s_axis_tx_tlast), .s_axis_tx_tuser(s_axis_tx_tuser),
        .pending(tx_pending), .nic_eop(tx_nic_eop), .core_eop(tx_core_eop));

    velo_pcie7_irq u_irq (
        .clk(clk), .rst(rst),
        .irq_valid(irq_valid), .irq_ready(irq_ready),
        .tx_pending(tx_pending), .tx_nic_eop(tx_nic_eop), .tx_core_eop(tx_core_eop),
        .cfg_interrupt(cfg_interrupt), .cfg_interrupt_rdy(cfg_interrupt_rdy),
        .cfg_interrupt_msienable(cfg_interrupt_msienable),
        .cfg_interrupt_assert(cfg_interrupt_assert), .cfg_interrupt_di(cfg_interrupt_di),
        .msi_sent(msi_sent), .irq_dropped(irq_dropped));
endmodule
`default_nettype wire
