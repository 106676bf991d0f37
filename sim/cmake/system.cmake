# The simulated cluster: the NIC top level Verilated once per port count (NP = 1 for a pair,
# 2 for rings, 4 for 2D tori; the wide datapath for the pair; 16 nodes x 64 vpids for QEMU guests), C++ link channels, topology
# from the route library (sw/route), and the host models on top (Cluster).
add_library(velo_system STATIC system/system.cpp system/node_pool.cpp system/topology.cpp system/cluster.cpp
                                system/rma_host.cpp)
target_include_directories(velo_system PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/system)
target_link_libraries(velo_system PUBLIC velo_simmodel velo_route Threads::Threads)
set_source_files_properties(system/system.cpp system/node_pool.cpp system/topology.cpp system/cluster.cpp system/rma_host.cpp
                            PROPERTIES COMPILE_OPTIONS "${VELO_WARN}")
velo_model(velo_system Vnic_p1 velo_nic PARAMS -GNP=1)
velo_model(velo_system Vnic_p1w velo_nic PARAMS -GNP=1 -GTLP_W=128 -GLINK_W=32)
velo_model(velo_system Vnic_p2 velo_nic PARAMS -GNP=2)
velo_model(velo_system Vnic_p4 velo_nic PARAMS -GNP=4)
# for QEMU guests (velo-fabric --qemu): a send window of 2^28 bytes, which a 32-bit BAR holds
velo_model(velo_system Vnic_p1b velo_nic PARAMS -GNP=1 -GNODE_BITS=4 -GVPID_BITS=6)
velo_model(velo_system Vnic_p2b velo_nic PARAMS -GNP=2 -GNODE_BITS=4 -GVPID_BITS=6)

# system and network tests on the cluster
velo_tb(tb_system tests/tb_system.cpp)
velo_tb(tb_net tests/tb_net.cpp)
target_link_libraries(tb_system PRIVATE velo_system)
target_link_libraries(tb_net PRIVATE velo_system)

# the RTL demo (two NICs, host models) and the hardware benchmarks
add_executable(velo-demo demo/velo_demo.cpp)
target_link_libraries(velo-demo PRIVATE velo_system)
set_source_files_properties(demo/velo_demo.cpp PROPERTIES COMPILE_OPTIONS "${VELO_WARN}")
add_executable(velo-bench-hw bench/bench_hw.cpp)
target_link_libraries(velo-bench-hw PRIVATE velo_system)
set_source_files_properties(bench/bench_hw.cpp PROPERTIES COMPILE_OPTIONS "${VELO_WARN}")
velo_model(velo-bench-hw Vbreq velo_requester PARAMS -GTLP_W=64)
velo_model(velo-bench-hw Vbcpl velo_completer PARAMS -GTLP_W=64)
