# velo-fabric: the daemon that serves the simulated cluster (velo_system) to processes using
# libvelo's sim backend, running the portable driver core (sw/driver/core). Its tests start real
# processes (fabric.*). The targets it needs come from sw/ (added after sim/) and from
# system.cmake (included after this file), so the setup runs at the end of the top directory.
function(velo_fabric_setup)
  if(NOT TARGET velo_system OR NOT TARGET velo_core OR NOT TARGET velo_static)
    message(STATUS "velo: velo-fabric skipped (needs velo_system, velo_core, libvelo)")
    return()
  endif()
  set(dir ${CMAKE_SOURCE_DIR}/sim/fabric)
  # one file per concern; fabric_private.hpp says which (setup and run loop, clients, stores, DMA, RMA)
  add_library(velo_fabric STATIC ${dir}/fabric.cpp ${dir}/clients.cpp ${dir}/stores.cpp ${dir}/dma.cpp ${dir}/rma.cpp
                                 ${dir}/options.cpp)
  target_include_directories(velo_fabric PUBLIC ${dir})
  target_link_libraries(velo_fabric PUBLIC velo_system velo_core)
  target_compile_options(velo_fabric PRIVATE -Wall -Wextra -Werror)
  add_executable(velo-fabric ${dir}/main.cpp)
  target_link_libraries(velo-fabric PRIVATE velo_fabric)
  target_compile_options(velo-fabric PRIVATE -Wall -Wextra -Werror)
  install(TARGETS velo-fabric RUNTIME DESTINATION bin COMPONENT velo)
  if(TARGET velo-run)  # velo-run finds the fabric of the build tree too
    target_compile_definitions(velo-run PRIVATE VELO_FABRIC_PATH="$<TARGET_FILE:velo-fabric>")
    add_dependencies(velo-run velo-fabric)
  endif()

  # fabric tests: real processes (forked clients using libvelo) through a fabric per test
  if(NOT EXISTS ${dir}/tests/test_fabric.cpp)
    return()
  endif()
  if(NOT TARGET GTest::gtest_main)
    find_package(GTest REQUIRED)
  endif()
  find_package(Threads REQUIRED)
  # one test binary per file, one ctest test per GoogleTest case: fabric.<prefix><case>
  function(velo_fabric_tests name suite prefix)
    add_executable(${name} ${dir}/tests/${name}.cpp)
    target_link_libraries(${name} PRIVATE velo_static GTest::gtest_main Threads::Threads)
    target_compile_options(${name} PRIVATE -Wall -Wextra -Werror)
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
                    many_outstanding errors deregister_in_flight munmap_in_flight client_killed)
  # velo_send of more than 64 bytes: trains and puts into the receive area
  velo_fabric_tests(test_fabric_long FabricLong long_ random_mix crossover_override no_area held_until_next_receive
                    queued_during_connect)
  # the tools end to end (velo-run starts its own fabric)
  if(TARGET velo-run AND TARGET velo-pingpong)
    add_test(NAME fabric.tools COMMAND sh ${CMAKE_SOURCE_DIR}/sw/tools/tests/test_tools.sh
                                       $<TARGET_FILE_DIR:velo-run> $<TARGET_FILE:velo-fabric>)
    set_tests_properties(fabric.tools PROPERTIES TIMEOUT 300)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL velo_fabric_setup)
