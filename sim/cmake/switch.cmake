# The switch (rtl/net/velo_switch.v, velo_sw_input.v, velo_rr_arb.v): a ring node (NP 2), a torus
# node (NP 4), 64-bit links, and 32-bit links with a FIFO depth that is not a power of two. Every
# parameter sim/tests/tb_switch.cpp relies on is given (its generated <model>_params.h), defaults too.
velo_tb(tb_switch tests/tb_switch.cpp)
velo_model(tb_switch Vrr_arb velo_rr_arb PARAMS -GN=5)
velo_model(tb_switch Vsw_p2 velo_switch PARAMS -GNP=2 -GLINK_W=16 -GVC_DEPTH=64 -GPB=2 -GMAX_AREA=64)
velo_model(tb_switch Vsw_p4 velo_switch PARAMS -GNP=4 -GLINK_W=16 -GVC_DEPTH=64 -GPB=3 -GMAX_AREA=64)
velo_model(tb_switch Vsw_p2w velo_switch PARAMS -GNP=2 -GLINK_W=64 -GVC_DEPTH=64 -GPB=2 -GMAX_AREA=64)
velo_model(tb_switch Vsw_p2d velo_switch PARAMS -GNP=2 -GLINK_W=32 -GVC_DEPTH=40 -GPB=3 -GMAX_AREA=64)
# MAX_AREA 256 (a NIC with RMA: packets of up to 256 bytes of payload area) with velo_nic's buffers
# for it: ring and torus nodes at 16 bits (VC_DEPTH 192), a ring node at 64 bits (VC_DEPTH 88)
velo_model(tb_switch Vsw_p2r velo_switch PARAMS -GNP=2 -GLINK_W=16 -GVC_DEPTH=192 -GPB=2 -GMAX_AREA=256)
velo_model(tb_switch Vsw_p4r velo_switch PARAMS -GNP=4 -GLINK_W=16 -GVC_DEPTH=192 -GPB=3 -GMAX_AREA=256)
velo_model(tb_switch Vsw_p2wr velo_switch PARAMS -GNP=2 -GLINK_W=64 -GVC_DEPTH=88 -GPB=2 -GMAX_AREA=256)
