// Register block NET and its tables: the no-route drop counter (DROP_NO_ROUTE), the network port
// entries (NET_PORT: configuration out on port_cfg, link status, the link counters read through
// ncnt_* and cleared by a write) and the route table (ROUTE_TABLE, block RAM, cleared by the table clear
// after reset, read port shared with the requester, which has priority). With RMA = 1 two more
// copies of the route table serve the RMA engines' read ports (written together with the first, so they
// never differ).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_rb.vh"
module velo_rb_net #(
    parameter integer NODE_BITS  = 8,   // node id width: the route table has 2^NODE_BITS rows (spec range)
    parameter integer NP         = 2,   // network ports of the switch (1..VELO_NP_MAX = 6)
    parameter integer PB         = 2,   // route code bits per hop (reported in PORTS): 2^PB >= NP + 2, at most 14
    parameter integer NVC        = 4,   // virtual channels per link (reported): 1..4
    parameter integer VC_DEPTH   = 64,  // receive buffer per VC in flits (reported in 8 bits): 1..255
    parameter integer NCNT_IDX_W = 6,   // link counter index width: port * 8 + counter, 2^NCNT_IDX_W >= 8 * NP, at most 6
    parameter integer RMA        = 0,   // 1: the route table copies rt2, rt3
    parameter integer PIPE       = 0    // 1: the decodes are registered (the front waits a cycle)
) (
    `include "velo_rb_net_ports.vh"
    `VELO_RB_PORTS  // clk, rst and the register bus (velo_rb.vh)
);
    `VELO_CHECK_NODE_BITS
    `VELO_CHECK_NP
    // the route field of a table row is 14 bits: at least one hop's code must fit
    `VELO_CHECK(g_check_pb, (1 << PB) >= NP + 2 && PB <= 14, "velo_rb_net: PB must give 2^PB >= NP + 2, at most 14")
    `VELO_CHECK_NVC
    `VELO_CHECK(g_check_vc_depth, VC_DEPTH >= 1 && VC_DEPTH <= 255, "velo_rb_net: VC_DEPTH must be 1..255 (PORTS.VC_DEPTH)")
    `VELO_CHECK(g_check_ncnt_idx_w, (1 << NCNT_IDX_W) >= 8 * NP && NCNT_IDX_W <= 6, "velo_rb_net: NCNT_IDX_W must give 2^NCNT_IDX_W >= 8 * NP, at most 6")
    `VELO_CHECK_FLAG(g_check_rma, RMA, "velo_rb_net: RMA must be 0 or 1")
    `VELO_CHECK_PIPE
    localparam integer NN    = 1 << NODE_BITS;
    localparam [20:0]  RT_LO = `VELO_TBL_ROUTE_TABLE_BASE;
    localparam [20:0]  NP_LO = `VELO_TBL_NET_PORT_BASE;
    localparam [31:0]  NP32 = NP, PB32 = PB, NVC32 = NVC, VCD32 = VC_DEPTH;
    wire unused_par = &{1'b0, NP32[31:4], PB32[31:4], NVC32[31:4], VCD32[31:8]};

    wire [20:0] addr  = `VELO_RB_ADDR(rb_req);
    /* verilator lint_off UNUSEDSIGNAL */
    wire [31:0] wd    = `VELO_RB_WDATA(rb_req);  // bits 30:14 go nowhere (ROUTE)
    /* verilator lint_on UNUSEDSIGNAL */
    wire        wr_go = `VELO_RB_WR_GO(rb_req);
    wire        init  = `VELO_RB_INIT(rb_req);

    reg  [31:0] no_route;   // DROP_NO_ROUTE
    wire        no_route_we;
    wire [`VELO_RB_RSP_W-1:0] r_rsp;
    velo_rb_net_regs #(.PIPE(PIPE), .PORTS_NP(NP32[3:0]), .PORTS_PB(PB32[3:0]), .PORTS_NVC(NVC32[3:0]),
                       .PORTS_VC_DEPTH(VCD32[7:0])) u_regs (
        .clk(clk), .rst(rst), .rb_req(rb_req), .rb_rsp(r_rsp), .link_status({{(32-NP){1'b0}}, port_up}),
        .drop_no_route(no_route), .drop_no_route_we(no_route_we));

    always @(posedge clk) begin
        if (rst || no_route_we)                       no_route <= 32'd0;
        else if (ev_no_route && no_route != 32'hFFFF_FFFF) no_route <= no_route + 32'd1;
    end

    // ---------------------------------------------------------------- network port entries
    wire in_np;
    velo_rb_range #(.LO(NP_LO), .HI({11'd0, NP_LO} + NP * `VELO_TBL_NET_PORT_STRIDE), .PIPE(PIPE)) u_dnp (
        .clk(clk), .rst(rst), .rb_req(rb_req), .hit(in_np));
    wire [20:0] np_off  = addr - NP_LO;
    wire [2:0]  np_port = np_off[6 +: 3];   // port - 1
    wire [5:0]  np_reg  = np_off[5:0];
    wire        np_cnt  = (np_reg >= 6'h10) && ({26'd0, np_reg} < 32'h10 + 32'd4 * `VELO_NET_PORT_COUNTERS);
    wire        np_cfg  = ({15'd0, np_reg} == `VELO_TBL_NET_PORT_CFG);
    wire        np_st   = ({15'd0, np_reg} == `VELO_TBL_NET_PORT_STATUS);
    wire [5:0]  np_cidx = np_reg - 6'h10;
    assign ncnt_idx = {np_port, np_cidx[4:2]};
    wire unused_np = &{1'b0, np_off, np_cidx[5], np_cidx[1:0]};
    wire [7:0]  up8 = {{(8-NP){1'b0}}, port_up};
    reg                  ncnt_clr_q;   // a link counter write: clear it (registered)
    reg [NCNT_IDX_W-1:0] ncnt_clr_idx_q;
    assign ncnt_clr     = ncnt_clr_q;
    assign ncnt_clr_idx = ncnt_clr_idx_q;
    reg  [2:0]  pcfg [0:7];     // {DATELINE, DIM} of network port p+1 (entries >= NP unused)
    integer     pi;
    always @(posedge clk) begin
        if (rst) begin
            for (pi = 0; pi < 8; pi = pi + 1) pcfg[pi] <= 3'd0;
            ncnt_clr_q     <= 1'b0;
            ncnt_clr_idx_q <= {NCNT_IDX_W{1'b0}};
        end else begin
            ncnt_clr_q <= 1'b0;
            if (wr_go && in_np && np_cfg)
                pcfg[np_port] <= {wd[`VELO_TBL_NET_PORT_CFG_DATELINE_LSB], wd[`VELO_TBL_NET_PORT_CFG_DIM]};
            if (wr_go && in_np && np_cnt) begin
                ncnt_clr_q     <= 1'b1;
                ncnt_clr_idx_q <= ncnt_idx;
            end
        end
    end
    genvar gp;
    generate
        for (gp = 0; gp < NP; gp = gp + 1) begin : g_pcfg
            assign port_cfg[3*gp +: 3] = pcfg[gp];
        end
    endgenerate
    reg [31:0] np_rd;
    always @(*) begin
        np_rd = 32'd0;
        if (in_np) begin
            if (np_cfg) begin
                np_rd[`VELO_TBL_NET_PORT_CFG_DIM]      = pcfg[np_port][1:0];
                np_rd[`VELO_TBL_NET_PORT_CFG_DATELINE] = pcfg[np_port][2];
            end else if (np_st) begin
                np_rd[`VELO_TBL_NET_PORT_STATUS_UP] = up8[np_port];
            end else if (np_cnt) begin
                np_rd = ncnt_data;
            end
        end
    end

    // ---------------------------------------------------------------- route table
    wire in_rt;
    velo_rb_range #(.LO(RT_LO), .HI({11'd0, RT_LO} + NN * 4), .PIPE(PIPE)) u_drt (
        .clk(clk), .rst(rst), .rb_req(rb_req), .hit(in_rt));
    wire [NODE_BITS-1:0] rt_sw_node = addr[2 +: NODE_BITS];
    wire                 rt_sw_re   = `VELO_RB_RD_EN(rb_req) && in_rt && !rt_re;
    wire                 we_rt      = init || (`VELO_RB_WR_EN(rb_req) && in_rt);
    wire [NODE_BITS-1:0] rt_wa      = init ? `VELO_RB_INIT_IDX(rb_req, NODE_BITS) : rt_sw_node;
    wire [14:0]          rt_wd      = {wd[`VELO_TBL_ROUTE_TABLE_ROUTE_VALID_LSB], wd[`VELO_TBL_ROUTE_TABLE_ROUTE_ROUTE]};
    wire [14:0] r_rt;
    velo_sdp_ram #(.W(15), .ADDR_W(NODE_BITS)) u_rt (
        .clk(clk), .we(we_rt), .waddr(rt_wa), .wdata(rt_wd),
        .re(rt_re || rt_sw_re), .raddr(rt_re ? rt_node : rt_sw_node), .rdata(r_rt));
    assign rt_data = r_rt;
    generate
        if (RMA != 0) begin : g_rt_copies
            // copy c serves port c + 2 (rt2, rt3)
            wire [1:0]             c_re   = {rt3_re, rt2_re};
            wire [2*NODE_BITS-1:0] c_node = {rt3_node, rt2_node};
            wire [2*15-1:0]        c_data;
            genvar gc;
            for (gc = 0; gc < 2; gc = gc + 1) begin : g_copy
                velo_sdp_ram #(.W(15), .ADDR_W(NODE_BITS)) u_rt (
                    .clk(clk), .we(we_rt), .waddr(rt_wa), .wdata(rt_wd),
                    .re(c_re[gc]), .raddr(c_node[gc*NODE_BITS +: NODE_BITS]), .rdata(c_data[gc*15 +: 15]));
            end
            assign {rt3_data, rt2_data} = c_data;
        end else begin : g_no_copies
            assign rt2_data = 15'd0;
            assign rt3_data = 15'd0;
            wire unused_rt = &{1'b0, rt2_re, rt2_node, rt3_re, rt3_node};
        end
    endgenerate
    reg [31:0] rt_rd;  // the entry as software sees it (valid the cycle after its read starts)
    always @(*) begin
        rt_rd = 32'd0;
        if (in_rt) begin
            rt_rd[`VELO_TBL_ROUTE_TABLE_ROUTE_VALID] = r_rt[14];
            rt_rd[`VELO_TBL_ROUTE_TABLE_ROUTE_ROUTE] = r_rt[13:0];
        end
    end

    // the block's answer: its registers', or the port entries' and route table's (from RAM)
    assign rb_rsp = r_rsp | `VELO_RB_RSP(np_rd | rt_rd, in_rt || (in_np && (np_cfg || np_cnt)), in_rt, rt_sw_re, 1'b0);
endmodule
`default_nettype wire
