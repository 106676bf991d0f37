// Simulation top for sim/tests/tb_pcie7.cpp (not synthesised): two 7-series board designs
// (velo_pcie7_shell: PCIe adapters + NIC, one network port) whose network ports are wired to each
// other through one register stage each way, as two cards cabled back to back. Each side's
// pcie_7x core is modelled in C++ on the a_* / b_* ports.
`default_nettype none
module velo_pcie7_pair #(
    parameter integer LINK_W = 16  // network flit width
) (
    input  wire         clk,
    input  wire         rst,
    // ---- card A: the core's user interface
    input  wire         a_m_axis_rx_tvalid,
    output wire         a_m_axis_rx_tready,
    input  wire [63:0]  a_m_axis_rx_tdata,
    input  wire [7:0]   a_m_axis_rx_tkeep,
    input  wire         a_m_axis_rx_tlast,
    input  wire [21:0]  a_m_axis_rx_tuser,
    output wire         a_s_axis_tx_tvalid,
    input  wire         a_s_axis_tx_tready,
    output wire [63:0]  a_s_axis_tx_tdata,
    output wire [7:0]   a_s_axis_tx_tkeep,
    output wire         a_s_axis_tx_tlast,
    output wire [3:0]   a_s_axis_tx_tuser,
    input  wire [7:0]   a_cfg_bus_number,
    input  wire [4:0]   a_cfg_device_number,
    input  wire [2:0]   a_cfg_function_number,
    output wire         a_cfg_interrupt,
    input  wire         a_cfg_interrupt_rdy,
    input  wire         a_cfg_interrupt_msienable,
    output wire         a_cfg_interrupt_assert,
    output wire [7:0]   a_cfg_interrupt_di,
    output wire         a_port_up,
    output wire         a_msi_sent,
    output wire         a_irq_dropped,
    // ---- card B
    input  wire         b_m_axis_rx_tvalid,
    output wire         b_m_axis_rx_tready,
    input  wire [63:0]  b_m_axis_rx_tdata,
    input  wire [7:0]   b_m_axis_rx_tkeep,
    input  wire         b_m_axis_rx_tlast,
    input  wire [21:0]  b_m_axis_rx_tuser,
    output wire         b_s_axis_tx_tvalid,
    input  wire         b_s_axis_tx_tready,
    output wire [63:0]  b_s_axis_tx_tdata,
    output wire [7:0]   b_s_axis_tx_tkeep,
    output wire         b_s_axis_tx_tlast,
    output wire [3:0]   b_s_axis_tx_tuser,
    input  wire [7:0]   b_cfg_bus_number,
    input  wire [4:0]   b_cfg_device_number,
    input  wire [2:0]   b_cfg_function_number,
    output wire         b_cfg_interrupt,
    input  wire         b_cfg_interrupt_rdy,
    input  wire         b_cfg_interrupt_msienable,
    output wire         b_cfg_interrupt_assert,
    output wire [7:0]   b_cfg_interrupt_di,
    output wire         b_port_up,
    output wire         b_msi_sent,
    output wire         b_irq_dropped
);
    localparam integer PW = LINK_W + 2;
    wire [PW-1:0] a_tx, b_tx;
    reg  [PW-1:0] a_rx, b_rx;  // the cable: one register stage each way
    always @(posedge clk) begin
        a_rx <= rst ? {PW{1'b0}} : b_tx;
        b_rx <= rst ? {PW{1'b0}} : a_tx;
    end

    velo_pcie7_shell #(.LINK_W(LINK_W), .NP(1)) u_a (
        .clk(clk), .rst(rst),
        .m_axis_rx_tvalid(a_m_axis_rx_tvalid), .m_axis_rx_tready(a_m_axis_rx_tready),
        .m_axis_rx_tdata(a_m_axis_rx_tdata), .m_axis_rx_tkeep(a_m_axis_rx_tkeep),
        .m_axis_rx_tlast(a_m_axis_rx_tlast), .m_axis_rx_tuser(a_m_axis_rx_tuser),
        .s_axis_tx_tvalid(a_s_axis_tx_tvalid), .s_axis_tx_tready(a_s_axis_tx_tready),
        .s_axis_tx_tdata(a_s_axis_tx_tdata), .s_axis_tx_tkeep(a_s_axis_tx_tkeep),
        .s_axis_tx_tlast(a_s_axis_tx_tlast), .s_axis_tx_tuser(a_s_axis_tx_tuser),
        .cfg_bus_number(a_cfg_bus_number), .cfg_device_number(a_cfg_device_number),
        .cfg_function_number(a_cfg_function_number),
        .cfg_interrupt(a_cfg_interrupt), .cfg_interrupt_rdy(a_cfg_interrupt_rdy),
        .cfg_interrupt_msienable(a_cfg_interrupt_msienable), .cfg_interrupt_assert(a_cfg_interrupt_assert),
        .cfg_interrupt_di(a_cfg_interrupt_di),
        .phy_tx(a_tx), .phy_rx(a_rx), .port_up(a_port_up),
        .msi_sent(a_msi_sent), .irq_dropped(a_irq_dropped));

    velo_pcie7_shell #(.LINK_W(LINK_W), .NP(1)) u_b (
        .clk(clk), .rst(rst),
        .m_axis_rx_tvalid(b_m_axis_rx_tvalid), .m_axis_rx_tready(b_m_axis_rx_tready),
        .m_axis_rx_tdata(b_m_axis_rx_tdata), .m_axis_rx_tkeep(b_m_axis_rx_tkeep),
        .m_axis_rx_tlast(b_m_axis_rx_tlast), .m_axis_rx_tuser(b_m_axis_rx_tuser),
        .s_axis_tx_tvalid(b_s_axis_tx_tvalid), .s_axis_tx_tready(b_s_axis_tx_tready),
        .s_axis_tx_tdata(b_s_axis_tx_tdata), .s_axis_tx_tkeep(b_s_axis_tx_tkeep),
        .s_axis_tx_tlast(b_s_axis_tx_tlast), .s_axis_tx_tuser(b_s_axis_tx_tuser),
        .cfg_bus_number(b_cfg_bus_number), .cfg_device_number(b_cfg_device_number),
        .cfg_function_number(b_cfg_function_number),
        .cfg_interrupt(b_cfg_interrupt), .cfg_interrupt_rdy(b_cfg_interrupt_rdy),
        .cfg_interrupt_msienable(b_cfg_interrupt_msienable), .cfg_interrupt_assert(b_cfg_interrupt_assert),
        .cfg_interrupt_di(b_cfg_interrupt_di),
        .phy_tx(b_tx), .phy_rx(b_rx), .port_up(b_port_up),
        .msi_sent(b_msi_sent), .irq_dropped(b_irq_dropped));
endmodule
`default_nettype wire
