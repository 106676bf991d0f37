# Link layer: the channel model (also used by the cluster simulator) and the link bench, with
# velo_link Verilated for each flit width.
target_sources(velo_simmodel PRIVATE model/channel.cpp)
velo_tb(tb_link tests/tb_link.cpp)
velo_model(tb_link Vlink16 velo_link PARAMS -GLINK_W=16)
velo_model(tb_link Vlink32 velo_link PARAMS -GLINK_W=32)
velo_model(tb_link Vlink64 velo_link PARAMS -GLINK_W=64)
