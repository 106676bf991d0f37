# RMA end to end (sim/tests/tb_rma_system.cpp): NICs with the RMA unit over real links, the RMA
# host side of sim/system/rma_host.cpp (part of velo_system). velo_system comes from system.cmake
# (included after this file): set up at the end of this directory.
function(velo_rma_system_setup)
  if(NOT TARGET velo_system)
    message(STATUS "velo: tb_rma_system skipped (needs velo_system)")
    return()
  endif()
  velo_tb(tb_rma_system tests/tb_rma_system.cpp)
  if(TARGET tb_rma_system)
    target_link_libraries(tb_rma_system PRIVATE velo_system)
    set_tests_properties(tb_rma_system PROPERTIES TIMEOUT 600)
  endif()
endfunction()
cmake_language(DEFER CALL velo_rma_system_setup)
