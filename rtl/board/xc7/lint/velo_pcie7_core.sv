// LINT-ONLY STUB of the PCIe core IP that fpga/xc7/build.tcl generates with
//   create_ip -name pcie_7x -module_name velo_pcie7_core
// (7 Series Integrated Block for PCI Express, AXI4-Stream, 64-bit, x4; configuration in
// fpga/xc7/build.tcl). Declares the ports the board top connects, with the widths of the core's
// generated stub (PG054, "Core Interfaces"); the generated core has more ports (status outputs),
// which the top leaves open. For `verilator --lint-only` of velo_xc7_top only: never synthesised
// or simulated (the .sv extension keeps it out of the RTL file lists). Outputs are tied off and
// inputs unused by design:
/* verilator lint_off UNUSED */
module velo_pcie7_core (
    // PCI Express lanes
    output wire [3:0]  pci_exp_txp,
    output wire [3:0]  pci_exp_txn,
    input  wire [3:0]  pci_exp_rxp,
    input  wire [3:0]  pci_exp_rxn,
    // common
    output wire        user_clk_out,
    output wire        user_reset_out,
    output wire        user_lnk_up,
    // transmit
    output wire        s_axis_tx_tready,
    input  wire [63:0] s_axis_tx_tdata,
    input  wire [7:0]  s_axis_tx_tkeep,
    input  wire        s_axis_tx_tlast,
    input  wire        s_axis_tx_tvalid,
    input  wire [3:0]  s_axis_tx_tuser,
    // receive
    output wire [63:0] m_axis_rx_tdata,
    output wire [7:0]  m_axis_rx_tkeep,
    output wire        m_axis_rx_tlast,
    output wire        m_axis_rx_tvalid,
    input  wire        m_axis_rx_tready,
    output wire [21:0] m_axis_rx_tuser,
    // configuration: interrupts
    input  wire        cfg_interrupt,
    output wire        cfg_interrupt_rdy,
    input  wire        cfg_interrupt_assert,
    input  wire [7:0]  cfg_interrupt_di,
    output wire        cfg_interrupt_msienable,
    input  wire        cfg_interrupt_stat,
    input  wire [4:0]  cfg_pciecap_interrupt_msgnum,
    // configuration: status
    output wire [15:0] cfg_command,
    output wire [7:0]  cfg_bus_number,
    output wire [4:0]  cfg_device_number,
    output wire [2:0]  cfg_function_number,
    // system
    input  wire        sys_clk,
    input  wire        sys_rst_n
);
    assign pci_exp_txp = 4'd0;
    assign pci_exp_txn = 4'd0;
    assign user_clk_out = sys_clk;
    assign user_reset_out = ~sys_rst_n;
    assign user_lnk_up = 1'b0;
    assign s_axis_tx_tready = 1'b0;
    assign m_axis_rx_tdata = 64'd0;
    assign m_axis_rx_tkeep = 8'd0;
    assign m_axis_rx_tlast = 1'b0;
    assign m_axis_rx_tvalid = 1'b0;
    assign m_axis_rx_tuser = 22'd0;
    assign cfg_interrupt_rdy = 1'b0;
    assign cfg_interrupt_msienable = 1'b0;
    assign cfg_command = 16'd0;
    assign cfg_bus_number = 8'd0;
    assign cfg_device_number = 5'd0;
    assign cfg_function_number = 3'd0;
endmodule
/* verilator lint_on UNUSED */
