# Mailbox interrupts end to end (tb_irq): the pair of NICs, node 1 driven by the portable driver
# core (sw/driver/core) through its ops table. velo_system comes from system.cmake (included after
# this file): set up at the end of this directory.
function(velo_irq_setup)
  if(NOT TARGET velo_system OR NOT TARGET velo_core)
    message(STATUS "velo: tb_irq skipped (needs velo_system, velo_core)")
    return()
  endif()
  velo_tb(tb_irq tests/tb_irq.cpp)
  if(TARGET tb_irq)
    target_link_libraries(tb_irq PRIVATE velo_system velo_core)
  endif()
endfunction()
cmake_language(DEFER CALL velo_irq_setup)
