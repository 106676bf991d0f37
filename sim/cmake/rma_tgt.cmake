# RMA target engine (rtl/rma/velo_rma_tgt.v, docs/rma.md §3, §6) with the real velo_atu and
# velo_dma_rd (sim/tb/velo_rma_tgt_tb.v). sim/tests/tb_rma_tgt.cpp reads each model's parameters
# from its generated <model>_params.h.
velo_tb(tb_rma_tgt tests/tb_rma_tgt.cpp)
velo_model(tb_rma_tgt Vtgt48 velo_rma_tgt_tb EXTRA ${CMAKE_SOURCE_DIR}/sim/tb/velo_rma_tgt_tb.v
           PARAMS -GNODE_BITS=3 -GREGION_BITS=5 -GPTE_BITS=12 -GMTU=48 -GMPS=128 -GSLOTS_LOG2=2 -GNOROUTE=7)
velo_model(tb_rma_tgt Vtgt240 velo_rma_tgt_tb EXTRA ${CMAKE_SOURCE_DIR}/sim/tb/velo_rma_tgt_tb.v
           PARAMS -GNODE_BITS=3 -GREGION_BITS=5 -GPTE_BITS=12 -GMTU=240 -GMPS=128 -GSLOTS_LOG2=1 -GNOROUTE=7)
