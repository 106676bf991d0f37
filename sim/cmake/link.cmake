# Link layer: the channel model (also used by the cluster simulator) and the link bench, with
# velo_link Verilated for each flit width: tb_link with MAX_AREA 64 (a NIC without RMA), tb_link256
# with MAX_AREA 256 and the buffers velo_nic gives it (a NIC with RMA: VC_DEPTH 192 / 128 / 88,
# REPLAY_DEPTH 512 / 256 / 256 at LINK_W 16 / 32 / 64). Same source, models chosen by VELO_LINK_AREA;
# every parameter the bench relies on is given (its generated <model>_params.h), defaults too:
# the timing ones, the same for every model, in VELO_LINK_BENCH_TIMING.
set(VELO_LINK_BENCH_TIMING -GNVC=4 -GDOWN_TIMEOUT=128 -GREPLAY_TIMEOUT=512 -GACK_URGENT=8)
target_sources(velo_simmodel PRIVATE model/channel.cpp)
velo_tb(tb_link tests/tb_link.cpp)
velo_model(tb_link Vlink16 velo_link PARAMS -GLINK_W=16 -GMAX_AREA=64 -GVC_DEPTH=64 -GREPLAY_DEPTH=256 -GPIPE=0
           ${VELO_LINK_BENCH_TIMING})
velo_model(tb_link Vlink32 velo_link PARAMS -GLINK_W=32 -GMAX_AREA=64 -GVC_DEPTH=64 -GREPLAY_DEPTH=256 -GPIPE=0
           ${VELO_LINK_BENCH_TIMING})
velo_model(tb_link Vlink64 velo_link PARAMS -GLINK_W=64 -GMAX_AREA=64 -GVC_DEPTH=64 -GREPLAY_DEPTH=256 -GPIPE=0
           ${VELO_LINK_BENCH_TIMING})
velo_tb(tb_link256 tests/tb_link.cpp)
target_compile_definitions(tb_link256 PRIVATE VELO_LINK_AREA=256)
velo_model(tb_link256 Vlink16r velo_link PARAMS -GLINK_W=16 -GMAX_AREA=256 -GVC_DEPTH=192 -GREPLAY_DEPTH=512 -GPIPE=0
           ${VELO_LINK_BENCH_TIMING})
velo_model(tb_link256 Vlink32r velo_link PARAMS -GLINK_W=32 -GMAX_AREA=256 -GVC_DEPTH=128 -GREPLAY_DEPTH=256 -GPIPE=0
           ${VELO_LINK_BENCH_TIMING})
velo_model(tb_link256 Vlink64r velo_link PARAMS -GLINK_W=64 -GMAX_AREA=256 -GVC_DEPTH=88 -GREPLAY_DEPTH=256 -GPIPE=0
           ${VELO_LINK_BENCH_TIMING})
# tb_link_pipe: the iCE40 board's link (PIPE = 1: one more register in the receiver's symbol decode
# and in the transmitter's cut-through, ACK/CREDIT urgency registered), same source and tests
velo_tb(tb_link_pipe tests/tb_link.cpp)
target_compile_definitions(tb_link_pipe PRIVATE VELO_LINK_PIPE=1)
velo_model(tb_link_pipe Vlink16p velo_link PARAMS -GLINK_W=16 -GMAX_AREA=64 -GVC_DEPTH=64 -GREPLAY_DEPTH=256
           -GPIPE=1 ${VELO_LINK_BENCH_TIMING})
