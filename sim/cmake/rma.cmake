# RMA engine units (docs/rma.md): address translation, BAR4 command decoder, notification writer.
velo_tb(tb_atu tests/tb_atu.cpp)
velo_model(tb_atu Vatu velo_atu PARAMS -GREGION_BITS=8 -GPTE_BITS=12 -GVPID_BITS=8 -GNODE_BITS=8 -GINUSE_W=6)
velo_model(tb_atu Vatu_small velo_atu PARAMS -GREGION_BITS=3 -GPTE_BITS=6 -GVPID_BITS=4 -GNODE_BITS=3 -GINUSE_W=2)

velo_tb(tb_rma_cmd tests/tb_rma_cmd.cpp)
velo_model(tb_rma_cmd Vrma_cmd64 velo_rma_cmd PARAMS -GTLP_W=64 -GNODE_BITS=8 -GVPID_BITS=8)
velo_model(tb_rma_cmd Vrma_cmd128 velo_rma_cmd PARAMS -GTLP_W=128 -GNODE_BITS=8 -GVPID_BITS=8)
velo_model(tb_rma_cmd Vrma_cmd_small velo_rma_cmd PARAMS -GTLP_W=64 -GNODE_BITS=3 -GVPID_BITS=4)

velo_tb(tb_rma_notify tests/tb_rma_notify.cpp)
velo_model(tb_rma_notify Vnq64 velo_rma_notify PARAMS -GTLP_W=64 -GVPID_BITS=4)
velo_model(tb_rma_notify Vnq128 velo_rma_notify PARAMS -GTLP_W=128 -GVPID_BITS=4)
