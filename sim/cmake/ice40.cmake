# iCE40-HX8K board (rtl/board/ice40): UART host bridge and the whole board design, two boards
# back to back (the board's NIC is velo_nic with SWITCH_LITE = 1: tb_switch_lite, switch_lite.cmake;
# its elastic buffer is velo_elastic: tb_elastic, elastic.cmake). The board RTL is one directory
# below rtl/, so its directory is added to the module search path.
set(ICE40_RTL ${RTL_DIR}/board/ice40)

velo_tb(tb_ice40_uart tests/tb_ice40_uart.cpp)
velo_model(tb_ice40_uart Vuart_rx4 velo_uart_rx PARAMS -GCLKS_PER_BIT=4 LINT_ARGS -y ${ICE40_RTL})
velo_model(tb_ice40_uart Vuart_rx9 velo_uart_rx PARAMS -GCLKS_PER_BIT=9 LINT_ARGS -y ${ICE40_RTL})
velo_model(tb_ice40_uart Vuart_tx4 velo_uart_tx PARAMS -GCLKS_PER_BIT=4 LINT_ARGS -y ${ICE40_RTL})
velo_model(tb_ice40_uart Vuart_tx9 velo_uart_tx PARAMS -GCLKS_PER_BIT=9 LINT_ARGS -y ${ICE40_RTL})

velo_tb(tb_ice40_bridge tests/tb_ice40_bridge.cpp tests/ice40_host.cpp)
velo_model(tb_ice40_bridge Vuart_down velo_uart_down LINT_ARGS -y ${ICE40_RTL})
velo_model(tb_ice40_bridge Vuart_up velo_uart_up LINT_ARGS -y ${ICE40_RTL})
velo_model(tb_ice40_bridge Vuart_bridge velo_uart_bridge PARAMS -GCLKS_PER_BIT=4 LINT_ARGS -y ${ICE40_RTL})

# two boards: velo_ice40_board (NIC configuration of the board + bridge + port pins), UART at
# 4 cycles per bit and a short LED period so that the benches run quickly
velo_tb(tb_ice40_system tests/tb_ice40_system.cpp tests/ice40_host.cpp)
velo_model(tb_ice40_system Vice40_board velo_ice40_board PARAMS -GCLKS_PER_BIT=4 -GLED_BITS=8 -GNODE_BITS=4
           -GVPID_BITS=4 LINT_ARGS -y ${ICE40_RTL})
