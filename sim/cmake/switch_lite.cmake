# velo_switch_lite (rtl/net): the reduced switch of a NIC with one network port (velo_nic
# SWITCH_LITE = 1, the iCE40-HX8K board's configuration), at NVC 1 (the board's) and 4.
velo_tb(tb_switch_lite tests/tb_switch_lite.cpp)
velo_model(tb_switch_lite Vswitch_lite1 velo_switch_lite PARAMS -GNVC=1 -GVC_DEPTH=64 -GPB=2)
velo_model(tb_switch_lite Vswitch_lite4 velo_switch_lite PARAMS -GNVC=4 -GVC_DEPTH=64 -GPB=2)
