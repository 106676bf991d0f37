# 7-series PCIe board target (rtl/board/xc7, fpga/xc7; docs/board-xc7.md "PCIe board (Artix-7)").
# tb_pcie7: the pcie_7x AXI4-Stream adapters, the MSI adapter and the link PHY's elastic buffer
# against a C++ model of the core's user interface, and two complete board designs (adapters +
# NIC, sim/tb/velo_pcie7_pair.v) cabled together. None of this needs Vivado.
velo_tb(tb_pcie7 tests/tb_pcie7.cpp)
velo_model(tb_pcie7 Vpcie7_rx velo_pcie7_rx)
velo_model(tb_pcie7 Vpcie7_tx velo_pcie7_tx)
velo_model(tb_pcie7 Vpcie7_irq velo_pcie7_irq)
velo_model(tb_pcie7 Velastic velo_elastic PARAMS -GW=18 -GAW=4)
velo_model(tb_pcie7 Vpcie7_pair velo_pcie7_pair EXTRA ${CMAKE_CURRENT_SOURCE_DIR}/tb/velo_pcie7_pair.v
           LINT_ARGS -y ${RTL_DIR}/board/xc7)

# The Vivado flow without Vivado: fpga/xc7/build.tcl and the AC701 XDC run in tclsh with the
# Vivado commands recorded (spec-derived PCIe ids and BARs, RTL list, top and generics, timing
# gate, every top-level port pinned).
find_program(VELO_TCLSH NAMES tclsh tclsh8.6)
if(VELO_TCLSH)
  add_test(NAME xc7.flow_dryrun
           COMMAND ${VELO_TCLSH} ${CMAKE_SOURCE_DIR}/fpga/xc7/test_flow.tcl ${CMAKE_BINARY_DIR}/fpga_xc7_dryrun)
else()
  message(STATUS "velo: xc7.flow_dryrun skipped (no tclsh)")
endif()
