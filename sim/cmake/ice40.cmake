# iCE40-HX8K board (rtl/board/ice40): UART host bridge, network port stage, elastic buffer and
# the whole board design, two boards back to back. The board RTL is one directory below rtl/, so
# its directory is added to the module search path; the board's link has NVC = 1, whose lint
# waiver (rtl/board/ice40/lint/velo_link_nvc.vlt) the models that contain it pass to Verilator.
set(ICE40_RTL ${RTL_DIR}/board/ice40)
set(ICE40_VLT ${ICE40_RTL}/lint/velo_link_nvc.vlt)

velo_tb(tb_ice40_uart tests/tb_ice40_uart.cpp)
velo_model(tb_ice40_uart Vuart_rx4 velo_uart_rx PARAMS -GCLKS_PER_BIT=4 LINT_ARGS -y ${ICE40_RTL})
velo_model(tb_ice40_uart Vuart_rx9 velo_uart_rx PARAMS -GCLKS_PER_BIT=9 LINT_ARGS -y ${ICE40_RTL})
velo_model(tb_ice40_uart Vuart_tx4 velo_uart_tx PARAMS -GCLKS_PER_BIT=4 LINT_ARGS -y ${ICE40_RTL})
velo_model(tb_ice40_uart Vuart_tx9 velo_uart_tx PARAMS -GCLKS_PER_BIT=9 LINT_ARGS -y ${ICE40_RTL})

velo_tb(tb_ice40_bridge tests/tb_ice40_bridge.cpp tests/ice40_host.cpp)
velo_model(tb_ice40_bridge Vuart_down velo_uart_down LINT_ARGS -y ${ICE40_RTL})
velo_model(tb_ice40_bridge Vuart_up velo_uart_up LINT_ARGS -y ${ICE40_RTL})
velo_model(tb_ice40_bridge Vuart_bridge velo_uart_bridge PARAMS -GCLKS_PER_BIT=4 LINT_ARGS -y ${ICE40_RTL})

velo_tb(tb_ice40_port tests/tb_ice40_port.cpp)
velo_model(tb_ice40_port Vice40_port1 velo_ice40_port PARAMS -GNVC=1 LINT_ARGS -y ${ICE40_RTL})
velo_model(tb_ice40_port Vice40_port4 velo_ice40_port PARAMS -GNVC=4 LINT_ARGS -y ${ICE40_RTL})

velo_tb(tb_ice40_elastic tests/tb_ice40_elastic.cpp)
velo_model(tb_ice40_elastic Vice40_elastic velo_ice40_elastic PARAMS -GW=18 -GAW=4 LINT_ARGS -y ${ICE40_RTL})

# two boards: velo_ice40_board (NIC configuration of the board + bridge + port pins), UART at
# 4 cycles per bit and a short LED period so that the benches run quickly
velo_tb(tb_ice40_system tests/tb_ice40_system.cpp tests/ice40_host.cpp)
velo_model(tb_ice40_system Vice40_board velo_ice40_board PARAMS -GCLKS_PER_BIT=4 -GLED_BITS=8
           LINT_ARGS -y ${ICE40_RTL} ${ICE40_VLT})
