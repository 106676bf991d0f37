# RMA end to end (sim/tests/tb_rma_system.cpp): NICs with the RMA unit over real links, the RMA
# host side of sim/system/rma_host.cpp (part of velo_system, system.cmake).
velo_tb(tb_rma_system tests/tb_rma_system.cpp)
target_link_libraries(tb_rma_system PRIVATE velo_system)
set_tests_properties(tb_rma_system PROPERTIES TIMEOUT 600)

# clock gating of idle units in simulation changes no cycle (sim/tests/tb_sim_gate.cpp): the same
# workload with the RMA units' clock gates on and off, every NIC output compared cycle by cycle
velo_tb(tb_sim_gate tests/tb_sim_gate.cpp)
target_link_libraries(tb_sim_gate PRIVATE velo_system)
set_tests_properties(tb_sim_gate PROPERTIES TIMEOUT 900)
