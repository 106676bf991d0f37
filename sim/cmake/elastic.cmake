# velo_elastic (rtl/common): the dual-clock elastic buffer of both boards' network ports
# (iCE40-HX8K: velo_ice40_board; 7-series: velo_xc7_link_phy). tb_elastic runs it at the iCE40
# board's word width with two real clocks; tb_pcie7 (xc7.cmake) runs it again at other clock ratios.
velo_tb(tb_elastic tests/tb_elastic.cpp)
velo_model(tb_elastic Velastic velo_elastic PARAMS -GW=18 -GAW=4)
