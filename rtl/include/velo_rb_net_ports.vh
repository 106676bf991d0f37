// The ports of velo_rb_net besides the register bus, which velo_regfile has too: the route table
// read ports and the network ports.
// Stands in a port list (every line ends with a comma).
    // route table read ports: the requester's, the RMA initiator's and target's (data the cycle
    // after *_re)
    input  wire                  rt_re,
    input  wire [NODE_BITS-1:0]  rt_node,
    output wire [14:0]           rt_data,      // {VALID, ROUTE}
    input  wire                  rt2_re,
    input  wire [NODE_BITS-1:0]  rt2_node,
    output wire [14:0]           rt2_data,
    input  wire                  rt3_re,
    input  wire [NODE_BITS-1:0]  rt3_node,
    output wire [14:0]           rt3_data,
    // network ports: configuration {DATELINE, DIM} per port (port 1 in the low bits), status,
    // link counters (read combinationally, cleared by a write) and the no-route drop event
    output wire [3*NP-1:0]       port_cfg,
    input  wire [NP-1:0]         port_up,
    output wire [NCNT_IDX_W-1:0] ncnt_idx,
    input  wire [31:0]           ncnt_data,
    output wire                  ncnt_clr,
    output wire [NCNT_IDX_W-1:0] ncnt_clr_idx,
    input  wire                  ev_no_route,
