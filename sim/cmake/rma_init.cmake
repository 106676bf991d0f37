# RMA initiator engine (rtl/rma/velo_rma_init.v, docs/rma.md §6), benched with the real velo_atu and
# velo_dma_rd (sim/tb/velo_rma_init_tb.v). sim/tests/tb_rma_init.cpp reads each model's parameters
# from its generated <model>_params.h.
velo_tb(tb_rma_init tests/tb_rma_init.cpp)
velo_model(tb_rma_init Vrma_init velo_rma_init_tb PARAMS -GTAG_BITS=4 -GMTU=48
           EXTRA ${CMAKE_SOURCE_DIR}/sim/tb/velo_rma_init_tb.v)
velo_model(tb_rma_init Vrma_init_small velo_rma_init_tb PARAMS -GTAG_BITS=1 -GMTU=16
           EXTRA ${CMAKE_SOURCE_DIR}/sim/tb/velo_rma_init_tb.v)
