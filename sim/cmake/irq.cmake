# Mailbox interrupts end to end (tb_irq): the pair of NICs, node 1 driven by the portable driver
# core (sw/driver/core) through its ops table, on velo_system (system.cmake).
velo_tb(tb_irq tests/tb_irq.cpp)
target_link_libraries(tb_irq PRIVATE velo_system velo_core)
