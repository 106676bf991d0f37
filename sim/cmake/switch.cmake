# The switch (rtl/net/velo_switch.v, velo_sw_input.v, velo_rr_arb.v): a ring node (NP 2), a torus
# node (NP 4), 64-bit links, and 32-bit links with a FIFO depth that is not a power of two.
velo_tb(tb_switch tests/tb_switch.cpp)
velo_model(tb_switch Vrr_arb velo_rr_arb PARAMS -GN=5)
velo_model(tb_switch Vsw_p2 velo_switch PARAMS -GNP=2 -GLINK_W=16)
velo_model(tb_switch Vsw_p4 velo_switch PARAMS -GNP=4 -GLINK_W=16)
velo_model(tb_switch Vsw_p2w velo_switch PARAMS -GNP=2 -GLINK_W=64)
velo_model(tb_switch Vsw_p2d velo_switch PARAMS -GNP=2 -GLINK_W=32 -GVC_DEPTH=40 -GPB=3)
