# DMA read engine of the RMA unit (rtl/rma/velo_dma_rd.v, docs/rma-dma.md). sim/tests/tb_dma_rd.cpp
# reads each model's parameters from its generated <model>_params.h.
velo_tb(tb_dma_rd tests/tb_dma_rd.cpp)
velo_model(tb_dma_rd Vdma64 velo_dma_rd PARAMS -GTLP_W=64 -GMRRS=512 -GTAGS=32 -GTAG_W=8 -GCB_LOG2=13 -GTIMEOUT=4096)
velo_model(tb_dma_rd Vdma128 velo_dma_rd PARAMS -GTLP_W=128 -GMRRS=512 -GTAGS=32 -GTAG_W=8 -GCB_LOG2=13 -GTIMEOUT=4096)
velo_model(tb_dma_rd Vdma_m128 velo_dma_rd PARAMS -GTLP_W=64 -GMRRS=128 -GTAGS=32 -GTAG_W=8 -GCB_LOG2=12 -GTIMEOUT=4096)
velo_model(tb_dma_rd Vdma_m4096 velo_dma_rd PARAMS -GTLP_W=128 -GMRRS=4096 -GTAGS=16 -GTAG_W=8 -GCB_LOG2=14 -GTIMEOUT=8192)
velo_model(tb_dma_rd Vdma_small velo_dma_rd PARAMS -GTLP_W=64 -GMRRS=256 -GTAGS=4 -GTAG_W=5 -GCB_LOG2=9 -GTIMEOUT=1024)
velo_model(tb_dma_rd Vdma_t5 velo_dma_rd PARAMS -GTLP_W=64 -GMRRS=256 -GTAGS=32 -GTAG_W=5 -GCB_LOG2=12 -GTIMEOUT=1024)
