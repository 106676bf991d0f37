# VELO on the Xilinx AC701 evaluation board (XC7A200T-2FBG676C): pins, clocks, configuration.
#
# Pin sources (public): AMD UG952 "AC701 Evaluation Board User Guide" and its master XDC, as
# transcribed in litex-boards (litex_boards/platforms/xilinx_ac701.py: pcie_x4, user_led, HPC
# connector LA pairs). Every pin below was taken from that transcription and NOT checked on a
# board; entries marked UNVERIFIED are choices of ours that a hardware bring-up must confirm.

# ---------------------------------------------------------------- PCIe edge connector
# 100 MHz reference clock from the slot (MGTREFCLK pair of the GTP quad used by the core)
set_property PACKAGE_PIN F11 [get_ports pcie_refclk_p]
set_property PACKAGE_PIN E11 [get_ports pcie_refclk_n]
create_clock -name pcie_refclk -period 10.000 [get_ports pcie_refclk_p]

# PERST# (active low, 2.5 V bank)
set_property PACKAGE_PIN M20 [get_ports pcie_perst_n]
set_property IOSTANDARD LVCMOS25 [get_ports pcie_perst_n]
set_property PULLUP true [get_ports pcie_perst_n]
set_false_path -from [get_ports pcie_perst_n]

# The four lanes are placed by the core: CONFIG.Xlnx_Ref_Board {AC701} makes the generated IP
# constraints LOC its GTPE2_CHANNELs to the AC701's PCIe lanes, and the lane pins follow from the
# GT sites. For reference (litex-boards, lane 0..3): RX_P D12 B13 D14 B11, RX_N C12 A13 C14 A11,
# TX_P D10 B9 D8 B7, TX_N C10 A9 C8 A7. The core's XDC also constrains its internal clocks
# (user_clk_out = 125 MHz from the core's MMCM).

# ---------------------------------------------------------------- LEDs (GPIO_LED_0..3)
set_property PACKAGE_PIN M26 [get_ports {led[0]}]
set_property PACKAGE_PIN T24 [get_ports {led[1]}]
set_property PACKAGE_PIN T25 [get_ports {led[2]}]
set_property PACKAGE_PIN R26 [get_ports {led[3]}]
set_property IOSTANDARD LVCMOS33 [get_ports {led[*]}]
set_false_path -to [get_ports {led[*]}]

# ---------------------------------------------------------------- network port 1: FMC HPC, LA pairs
# LVDS_25 needs VADJ (the FMC banks' VCCO) at 2.5 V: UNVERIFIED that the board's default VADJ
# setting is 2.5 V (UG952 describes how VADJ is selected). The choice of pairs is UNVERIFIED
# against the bank/clock-region rules: the receive clock enters on LA00_CC (a clock-capable
# pin) and drives a BUFR, whose loads (the receive IDDRs) must sit in its clock region; Vivado's
# placer rejects the design if LA02..LA10 are not reachable from it. Pairs (P/N):
#   receive clock  LA00_CC  D18/C18          transmit clock LA17_CC  K21/J21
#   receive  0..8  LA02..LA10                transmit 0..8  LA19..LA27
set_property PACKAGE_PIN D18 [get_ports link_rxclk_p]
set_property PACKAGE_PIN C18 [get_ports link_rxclk_n]
set_property PACKAGE_PIN H14 [get_ports {link_rx_p[0]}]
set_property PACKAGE_PIN H15 [get_ports {link_rx_n[0]}]
set_property PACKAGE_PIN G17 [get_ports {link_rx_p[1]}]
set_property PACKAGE_PIN F17 [get_ports {link_rx_n[1]}]
set_property PACKAGE_PIN F18 [get_ports {link_rx_p[2]}]
set_property PACKAGE_PIN F19 [get_ports {link_rx_n[2]}]
set_property PACKAGE_PIN G15 [get_ports {link_rx_p[3]}]
set_property PACKAGE_PIN F15 [get_ports {link_rx_n[3]}]
set_property PACKAGE_PIN G19 [get_ports {link_rx_p[4]}]
set_property PACKAGE_PIN F20 [get_ports {link_rx_n[4]}]
set_property PACKAGE_PIN H16 [get_ports {link_rx_p[5]}]
set_property PACKAGE_PIN G16 [get_ports {link_rx_n[5]}]
set_property PACKAGE_PIN C17 [get_ports {link_rx_p[6]}]
set_property PACKAGE_PIN B17 [get_ports {link_rx_n[6]}]
set_property PACKAGE_PIN E16 [get_ports {link_rx_p[7]}]
set_property PACKAGE_PIN D16 [get_ports {link_rx_n[7]}]
set_property PACKAGE_PIN A17 [get_ports {link_rx_p[8]}]
set_property PACKAGE_PIN A18 [get_ports {link_rx_n[8]}]
set_property PACKAGE_PIN K21 [get_ports link_txclk_p]
set_property PACKAGE_PIN J21 [get_ports link_txclk_n]
set_property PACKAGE_PIN M14 [get_ports {link_tx_p[0]}]
set_property PACKAGE_PIN L14 [get_ports {link_tx_n[0]}]
set_property PACKAGE_PIN M16 [get_ports {link_tx_p[1]}]
set_property PACKAGE_PIN M17 [get_ports {link_tx_n[1]}]
set_property PACKAGE_PIN J19 [get_ports {link_tx_p[2]}]
set_property PACKAGE_PIN H19 [get_ports {link_tx_n[2]}]
set_property PACKAGE_PIN L17 [get_ports {link_tx_p[3]}]
set_property PACKAGE_PIN L18 [get_ports {link_tx_n[3]}]
set_property PACKAGE_PIN K20 [get_ports {link_tx_p[4]}]
set_property PACKAGE_PIN J20 [get_ports {link_tx_n[4]}]
set_property PACKAGE_PIN J18 [get_ports {link_tx_p[5]}]
set_property PACKAGE_PIN H18 [get_ports {link_tx_n[5]}]
set_property PACKAGE_PIN G22 [get_ports {link_tx_p[6]}]
set_property PACKAGE_PIN F22 [get_ports {link_tx_n[6]}]
set_property PACKAGE_PIN J24 [get_ports {link_tx_p[7]}]
set_property PACKAGE_PIN H24 [get_ports {link_tx_n[7]}]
set_property PACKAGE_PIN F23 [get_ports {link_tx_p[8]}]
set_property PACKAGE_PIN E23 [get_ports {link_tx_n[8]}]
set_property IOSTANDARD LVDS_25 [get_ports {link_rx_p[*] link_rx_n[*] link_rxclk_p link_rxclk_n}]
set_property IOSTANDARD LVDS_25 [get_ports {link_tx_p[*] link_tx_n[*] link_txclk_p link_txclk_n}]

# The neighbour's forwarded clock: 125 MHz, centre-aligned DDR data (its edges sit in the middle
# of the data eye: the sender forwards its clock shifted by 90 degrees). Vivado's template for a
# centre-aligned source-synchronous DDR input; the 1.5 ns valid window either side of each edge
# assumes at most 0.5 ns of skew between the pairs of the cable and the boards (UNVERIFIED).
create_clock -name link_rxclk -period 8.000 [get_ports link_rxclk_p]
set link_dv 1.5
set_input_delay -clock link_rxclk -max [expr {4.0 - $link_dv}] [get_ports {link_rx_p[*]}]
set_input_delay -clock link_rxclk -min $link_dv [get_ports {link_rx_p[*]}]
set_input_delay -clock link_rxclk -max [expr {4.0 - $link_dv}] [get_ports {link_rx_p[*]}] -clock_fall -add_delay
set_input_delay -clock link_rxclk -min $link_dv [get_ports {link_rx_p[*]}] -clock_fall -add_delay

# Transmit: data and forwarded clock come from ODDRs in the IOBs (fixed launch timing); the
# output delays are not constrained (check_timing lists these ports as unconstrained outputs).

# Clock-domain crossing in the elastic buffer (rtl/common/velo_elastic.v): Gray-coded
# pointers and the reset into the receive domain through two-flop synchronisers, the word read
# from the LUT RAM two or more cycles after it was written. Bound the crossing paths to one
# period instead of analysing them as synchronous.
set nic_clk [get_clocks -of_objects [get_nets clk]]
set_max_delay -datapath_only -from [get_clocks link_rxclk] -to $nic_clk 8.000
set_max_delay -datapath_only -from $nic_clk -to [get_clocks link_rxclk] 8.000

# ---------------------------------------------------------------- configuration
set_property CFGBVS VCCO [current_design]
set_property CONFIG_VOLTAGE 3.3 [current_design]
set_property CONFIG_MODE SPIx4 [current_design]
set_property BITSTREAM.CONFIG.SPI_BUSWIDTH 4 [current_design]
set_property BITSTREAM.GENERAL.COMPRESS TRUE [current_design]
# UNVERIFIED: the fastest configuration clock the AC701's flash supports with the internal
# oscillator; a faster load helps the FPGA be ready before the host enumerates (see the guide)
set_property BITSTREAM.CONFIG.CONFIGRATE 33 [current_design]
