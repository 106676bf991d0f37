# velo-fabric: the daemon that serves the simulated cluster (velo_system, system.cmake) to processes
# using libvelo's sim backend, running the portable driver core (sw/driver/core). Its tests start
# real processes (fabric.*).
set(VELO_FABRIC_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fabric)
# one file per concern; fabric_private.hpp says which (setup and run loop, clients, stores, DMA, RMA)
add_library(velo_fabric STATIC ${VELO_FABRIC_DIR}/fabric.cpp ${VELO_FABRIC_DIR}/clients.cpp ${VELO_FABRIC_DIR}/stores.cpp
                               ${VELO_FABRIC_DIR}/dma.cpp ${VELO_FABRIC_DIR}/rma.cpp ${VELO_FABRIC_DIR}/options.cpp
                               ${VELO_FABRIC_DIR}/guest.cpp ${VELO_FABRIC_DIR}/pci_config.cpp ${VELO_FABRIC_DIR}/mpqemu.cpp)
target_include_directories(velo_fabric PUBLIC ${VELO_FABRIC_DIR})
# OpenSSL's SIPHASH keys the driver core's PRF (region keys) as siphash_2u64 does in velo.ko
find_package(OpenSSL 3.0 REQUIRED COMPONENTS Crypto)
target_link_libraries(velo_fabric PUBLIC velo_system velo_core OpenSSL::Crypto)
target_compile_options(velo_fabric PRIVATE ${VELO_WARN})
add_executable(velo-fabric ${VELO_FABRIC_DIR}/main.cpp)
# at the top of the build tree, where the scripts look for it (sw/tools/bench_api.sh)
set_target_properties(velo-fabric PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
target_link_libraries(velo-fabric PRIVATE velo_fabric)
target_compile_options(velo-fabric PRIVATE ${VELO_WARN})
install(TARGETS velo-fabric RUNTIME DESTINATION bin COMPONENT velo)
# velo-run (sw/tools) finds the fabric of the build tree too
target_compile_definitions(velo-run PRIVATE VELO_FABRIC_PATH="$<TARGET_FILE:velo-fabric>")
add_dependencies(velo-run velo-fabric)

# fabric tests: real processes (forked clients using libvelo) through a fabric per test; one test
# binary per file, one ctest test per GoogleTest case: fabric.<prefix><case>
function(velo_fabric_tests name suite prefix)
  add_executable(${name} ${VELO_FABRIC_DIR}/tests/${name}.cpp)
  target_link_libraries(${name} PRIVATE velo_static GTest::gtest_main Threads::Threads)
  target_compile_options(${name} PRIVATE ${VELO_WARN})
  target_compile_definitions(${name} PRIVATE VELO_FABRIC_BIN="$<TARGET_FILE:velo-fabric>")
  add_dependencies(${name} velo-fabric)
  foreach(t ${ARGN})
    add_test(NAME fabric.${prefix}${t} COMMAND ${name} --gtest_filter=${suite}.${t})
    set_tests_properties(fabric.${prefix}${t} PROPERTIES TIMEOUT 300)
  endforeach()
endfunction()
velo_fabric_tests(test_fabric Fabric "" pingpong many_to_one partial_flush partial_flush_bytes mailbox_full_drain
                  client_killed bad_inputs second_fabric_refused signals_and_idle cxx_layer)
# RMA on the fabric: put/get between processes on malloc'd memory
velo_fabric_tests(test_fabric_rma FabricRma rma_ put_get_random put_8MiB notified_put concurrent_puts
                  many_outstanding errors deregister_in_flight munmap_in_flight client_killed
                  quiesce_while_another_region_streams more_than_the_nic_translates)
# RMA protection under attack: hostile processes guess, replay and use handles outside their scope;
# a second job with a JOB-scoped region's valid handle
velo_fabric_tests(test_fabric_rma_attack FabricRmaAttack rma_attack_ hostile_processes other_job scope_list)
# velo_send of more than 64 bytes: trains and puts into the receive area
velo_fabric_tests(test_fabric_long FabricLong long_ random_mix crossover_override no_area held_until_next_receive
                  queued_during_connect)
# the tools end to end (velo-run starts its own fabric)
add_test(NAME fabric.tools COMMAND sh ${CMAKE_SOURCE_DIR}/sw/tools/tests/test_tools.sh $<TARGET_FILE_DIR:velo-run>
                                   $<TARGET_FILE:velo-fabric>)
set_tests_properties(fabric.tools PROPERTIES TIMEOUT 300)
# nodes served to QEMU guests, driven over QEMU's device channel by the test itself running the
# driver core (as velo.ko does); the QEMU boots are driver.cosim.*
velo_fabric_tests(test_fabric_guest FabricGuest guest_ ConfigSpaceAndBars TwoGuestsExchangeMessages
                  InterruptedStoresArriveAsFragments NoBusMasterNoDmaAndBadMessagesCloseTheChannel
                  IncompleteLineLeavesAtTheTimeout)
target_link_libraries(test_fabric_guest PRIVATE velo_core)
