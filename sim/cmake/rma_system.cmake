# RMA end to end (sim/tests/tb_rma_system.cpp): NICs with the RMA unit over real links, the RMA
# host side of sim/system/rma_host.cpp (part of velo_system, system.cmake).
velo_tb(tb_rma_system tests/tb_rma_system.cpp)
target_link_libraries(tb_rma_system PRIVATE velo_system)
set_tests_properties(tb_rma_system PROPERTIES TIMEOUT 600)
