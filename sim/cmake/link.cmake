# Link layer: the channel model (also used by the cluster simulator) and the link bench, with
# velo_link Verilated for each flit width: tb_link with MAX_AREA 64 (a NIC without RMA), tb_link256
# with MAX_AREA 256 and the buffers velo_nic gives it (a NIC with RMA: VC_DEPTH 192 / 128 / 88,
# REPLAY_DEPTH 512 / 256 / 256 at LINK_W 16 / 32 / 64). Same source, models chosen by VELO_LINK_AREA;
# every parameter the bench relies on is given (its generated <model>_params.h), defaults too.
target_sources(velo_simmodel PRIVATE model/channel.cpp)

# velo_link_model(<bench> <prefix> <LINK_W> <MAX_AREA> <VC_DEPTH> <REPLAY_DEPTH> <PIPE>): velo_link
# Verilated for <bench> with these sizes and the timing every link bench relies on (the same for all)
function(velo_link_model bench prefix link_w max_area vc_depth replay_depth pipe)
  velo_model(${bench} ${prefix} velo_link PARAMS -GLINK_W=${link_w} -GMAX_AREA=${max_area} -GVC_DEPTH=${vc_depth}
             -GREPLAY_DEPTH=${replay_depth} -GPIPE=${pipe} -GNVC=4 -GDOWN_TIMEOUT=128 -GREPLAY_TIMEOUT=512
             -GACK_URGENT=8)
endfunction()

velo_tb(tb_link tests/tb_link.cpp)
velo_link_model(tb_link Vlink16 16 64 64 256 0)
velo_link_model(tb_link Vlink32 32 64 64 256 0)
velo_link_model(tb_link Vlink64 64 64 64 256 0)
velo_tb(tb_link256 tests/tb_link.cpp)
target_compile_definitions(tb_link256 PRIVATE VELO_LINK_AREA=256)
velo_link_model(tb_link256 Vlink16r 16 256 192 512 0)
velo_link_model(tb_link256 Vlink32r 32 256 128 256 0)
velo_link_model(tb_link256 Vlink64r 64 256 88 256 0)
# tb_link_pipe: the iCE40 board's link (PIPE = 1: one more register in the receiver's symbol decode
# and in the transmitter's cut-through, ACK/CREDIT urgency registered), same source and tests
velo_tb(tb_link_pipe tests/tb_link.cpp)
target_compile_definitions(tb_link_pipe PRIVATE VELO_LINK_PIPE=1)
velo_link_model(tb_link_pipe Vlink16p 16 64 64 256 1)
