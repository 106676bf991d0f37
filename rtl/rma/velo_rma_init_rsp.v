// RMA initiator engine, response side (part of velo_rma_init; docs/rma.md §3, §6): takes the
// PUT_RSP and GET_RSP packets on rx_*, drops and counts those whose tag is not an outstanding
// command of that kind to that node, stores each GET_RSP's data (at most RMA_MTU bytes), checks it
// against the get's buffer, translates it (ATU LOCAL_WRITE, split at page ends) and writes it with
// posted memory writes (byte enables, realigned from packet lanes to host lanes). It asks for the
// command's completion entry (REMOTE_CPL, GET_DONE or ERROR) and frees the tag once that entry is
// taken; a failure it notes before the end goes to the tag's local error (lerr_*).
//
// The tag table stays in velo_rma_init: this unit names the tag of the header on rx_* (hdr_tag)
// and of the packet it holds (tag) and is given those tags' fields the same cycle.
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_ports.vh"
module velo_rma_init_rsp #(
    // velo_rma_init's parameters (the same meaning and ranges, checked below)
    parameter integer NODE_BITS = 8, VPID_BITS = 8, REGION_BITS = 8, TAG_BITS = 4, MTU = 48
) (
    input  wire                 clk,
    input  wire                 rst,        // synchronous, active high
    input  wire [15:0]          req_id,     // our PCIe requester id
    // packets in: RMA responses (PUT_RSP, GET_RSP)
    input  wire                 rx_valid,
    output wire                 rx_ready,
    input  wire [63:0]          rx_data,
    input  wire                 rx_last,
    // tag table: the tag of the header word on rx_* and its state and fields
    output wire [TAG_BITS-1:0]  hdr_tag,
    input  wire                 hdr_busy,   // the tag holds a command
    input  wire                 hdr_sent,   // its last request packet has left
    input  wire                 hdr_get,    // the command is a get
    input  wire [NODE_BITS-1:0] hdr_node,   // its remote node
    // tag table: the tag of the packet being handled and its fields
    output wire [TAG_BITS-1:0]  tag,
    input  wire [63:0]          tag_lnla,   // local NLA
    input  wire [23:0]          tag_len,    // length in bytes
    input  wire [VPID_BITS-1:0] tag_vpid,
    input  wire                 tag_rcpl,   // REMOTE_CPL asked for
    input  wire                 tag_lcpl,   // LOCAL_CPL (GET_DONE) asked for
    input  wire [4:0]           tag_lerr,   // {remote, reason} of a failure noted before the end
    output reg                  lerr_set,   // note a failure of tag: lerr_val (if none is noted yet)
    output reg  [4:0]           lerr_val,
    // ATU lookups (granted by velo_rma_init: lk_go when taken, rs_go with this lookup's response)
    `VELO_ATU_LOOKUP_PORTS,
    output wire [VPID_BITS-1:0] lk_vpid,
    `VELO_ATU_RESULT_PORTS,
    input  wire [REGION_BITS-1:0] rs_region,
    // ATU release of a translation (rel_go when taken)
    `VELO_ATU_RELEASE_PORTS(REGION_BITS),
    // TLP stream out: DMA writes of get data
    output wire                 tx_valid,
    input  wire                 tx_ready,
    output wire                 tx_sop,
    output wire                 tx_eop,
    output reg  [127:0]         tx_hdr,
    output wire [63:0]          tx_data,
    // completion entry of tag (ngo when taken) and the tag's release
    output wire                 nreq,
    output wire [3:0]           nkind,
    output wire [4:0]           nerr,       // {remote, reason}
    input  wire                 ngo,
    output wire                 free,       // tag is free from the next cycle
    // status and events
    output wire                 idle,       // waiting for a header word
    output wire                 quiet,      // idle, no notification or event pending: with rx_valid low no register changes
    output reg  [7:0]           ev_rx_bytes, // get data bytes written this cycle
    output reg                  ev_rsp_drop  // a response packet was dropped
);
    function integer clog2;
        input integer v;
        integer i;
        begin
            clog2 = 0;
            for (i = v - 1; i > 0; i = i >> 1) clog2 = clog2 + 1;
        end
    endfunction

    localparam integer TB   = TAG_BITS;
    localparam integer GBB  = clog2(MTU / 8 + 4);      // get packet buffer: 2^GBB words
    localparam [7:0]   MTU8 = MTU[7:0];

    `VELO_CHECK_NODE_BITS
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK(g_check_region_bits, REGION_BITS >= 1 && REGION_BITS <= 12, "velo_rma_init_rsp: REGION_BITS must be 1..12")
    `VELO_CHECK(g_check_tag_bits, TAG_BITS >= 1 && TAG_BITS <= 8, "velo_rma_init_rsp: TAG_BITS must be 1..8")
    `VELO_CHECK(g_check_mtu, MTU >= 8 && MTU <= 240 && MTU % 8 == 0, "velo_rma_init_rsp: MTU must be 8..240, a multiple of 8")

    localparam [3:0] R_HDR = 4'd0, R_NLA = 4'd1, R_DROP = 4'd2, R_PNOTE = 4'd3, R_DATA = 4'd4, R_LK = 4'd5,
                     R_RS = 4'd6, R_TX = 4'd7, R_REL = 4'd8, R_END = 4'd9, R_GFIN = 4'd10, R_SKIP = 4'd11;
    reg [3:0]  r_st;
    reg [TB-1:0] r_tag;
    reg        r_last;        // the packet has LAST
    reg [3:0]  r_err;         // its ERR
    reg [7:0]  r_len_m1;         // its LEN_M1
    reg        r_get;
    reg [63:0] r_nla;
    reg        r_bad;         // data outside the buffer or malformed: not written
    reg [GBB-1:0] r_buf_wi;       // next buffer word
    reg [63:0] gbuf [0:(1<<GBB)-1];
    reg [39:0] g_off;         // NLA offset of the next byte to write
    reg [7:0]  g_rem;         // bytes of the packet left to write
    reg [7:0]  g_pkt_idx;           // packet data index of the piece's first byte
    reg [63:0] g_addr;
    reg [7:0]  g_piece_n;           // bytes of the current piece
    reg [5:0]  g_beat;
    reg [5:0]  g_nbeat;
    reg [1:0]  r_pad;

    wire [63:0]   rx_hdr     = rx_data;
    wire [7:0]    rx_hdr_tag8 = rx_hdr[`VELO_RMA_PKT_HDR_TAG];
    wire [TB-1:0] rx_hdr_tag = rx_hdr_tag8[TB-1:0];
    assign hdr_tag = rx_hdr_tag;
    assign tag     = r_tag;
    wire [7:0]    rx_hdr_src = rx_hdr[`VELO_RMA_PKT_HDR_SRC_NODE];
    wire [3:0]    rx_hdr_type = rx_hdr[`VELO_RMA_PKT_HDR_TYPE];
    wire rx_hdr_tag_ok = ((rx_hdr_tag8 >> TB) == 8'd0) && hdr_busy && hdr_sent &&
                     (rx_hdr_src == {{(8-NODE_BITS){1'b0}}, hdr_node});
    wire rx_hdr_put = rx_hdr_tag_ok && !hdr_get && rx_hdr_type == `VELO_PKT_TYPE_RMA_PUT_RSP;
    wire rx_hdr_get = rx_hdr_tag_ok && hdr_get && rx_hdr_type == `VELO_PKT_TYPE_RMA_GET_RSP;

    // data of a GET_RSP: area - 8 - pad bytes (none if the area is the NLA word alone)
    wire [63:0] r_lnla = tag_lnla;
    wire [23:0] r_glen = tag_len;
    wire [8:0]  r_area = {1'b0, r_len_m1} + 9'd1;
    wire [1:0]  nla_pad = rx_data[1:0];
    wire [8:0]  nla_ndata  = (r_area <= 9'd8) ? 9'd0 : (r_area - 9'd8 - {7'd0, nla_pad});
    wire [40:0] nla_end = {1'b0, rx_data[39:0]} + {32'd0, nla_ndata};
    wire [40:0] buf_end = {1'b0, r_lnla[39:0]} + {17'd0, r_glen};
    wire nla_ok = (rx_data[63:40] == r_lnla[63:40]) && (rx_data[39:0] >= r_lnla[39:0]) && (nla_end <= buf_end) &&
                 (r_area <= 9'd8 + {1'b0, MTU8}) && !(r_area > 9'd8 && r_area <= 9'd8 + {7'd0, nla_pad}) &&
                 (r_area[2:0] == 3'd0 || 1'b1);
    wire r_lerr_any = (tag_lerr[3:0] != 4'd0);

    assign rx_ready = (r_st == R_HDR) || (r_st == R_NLA) || (r_st == R_DROP) || (r_st == R_DATA) ||
                      (r_st == R_SKIP);
    wire rx_fire = rx_valid && rx_ready;
    // the GET_RSP's data words into the packet buffer from word 1; word 0 (the NLA word's place)
    // is cleared, so the realignment below reads zeros in front of the first data byte
    always @(posedge clk) begin
        if (r_st == R_DATA && rx_fire) gbuf[r_buf_wi] <= rx_data;
        if (r_st == R_NLA && rx_fire) gbuf[{GBB{1'b0}}] <= 64'd0;
    end

    // get write pieces
    assign lk_req  = (r_st == R_LK);
    assign lk_nla  = {r_nla[63:40], g_off};
    assign lk_len  = {16'd0, g_rem};
    assign lk_vpid = tag_vpid;
    assign rel_req = (r_st == R_REL);
    reg [REGION_BITS-1:0] r_rel_region;   // the region of the piece's translation
    assign rel_region = r_rel_region;
    wire [7:0]  gp_piece_n   = ({14'd0, g_rem} < rs_room) ? g_rem : rs_room[7:0];
    // host DWs of a piece: from addr & ~3 to the end
    wire [9:0]  gp_span = {8'd0, rs_addr[1:0]} + {2'd0, gp_piece_n} + 10'd3;
    wire [7:0]  gp_ndw  = gp_span[9:2];
    wire [9:0]  g_span  = {8'd0, g_addr[1:0]} + {2'd0, g_piece_n} + 10'd3;
    wire [7:0]  g_ndw   = g_span[9:2];
    wire [9:0]  g_endb  = {8'd0, g_addr[1:0]} + {2'd0, g_piece_n};            // end byte in the payload
    reg  [3:0]  g_fbe, g_lbe;
    always @(*) begin
        g_fbe = 4'hF << g_addr[1:0];
        g_lbe = (g_endb[1:0] == 2'd0) ? 4'hF : ((4'h1 << g_endb[1:0]) - 4'h1);
        if (g_ndw == 8'd1) begin
            g_fbe = g_fbe & g_lbe;
            g_lbe = 4'h0;
        end
    end
    wire [127:0] g_hdr0;
    velo_mwr_hdr u_hdr (.addr(g_addr), .len_dw({2'd0, g_ndw}), .req_id(req_id), .hdr(g_hdr0));
    always @(*) begin
        tx_hdr = g_hdr0;
        tx_hdr[`VELO_TLP_HDR_FIRST_BE] = g_fbe;
        tx_hdr[`VELO_TLP_HDR_LAST_BE]  = g_lbe;
    end
    // payload byte j of beat b sits at buffer byte 8 + pad + k - (addr mod 4) + 8b + j
    wire [10:0]    g_pos  = 11'd8 + {9'd0, r_pad} + {3'd0, g_pkt_idx} - {9'd0, g_addr[1:0]} + {2'd0, g_beat, 3'b000};
    wire [GBB-1:0] g_wa   = g_pos[GBB+2:3];
    wire [GBB-1:0] g_wb   = g_wa + 1'b1;
    wire [127:0]   g_two  = {gbuf[g_wb], gbuf[g_wa]};
    wire [127:0]   g_sh   = g_two >> {g_pos[2:0], 3'b000};
    assign tx_data  = g_sh[63:0];
    assign tx_valid = (r_st == R_TX);
    assign tx_sop   = (g_beat == 6'd0);
    assign tx_eop   = (g_beat == g_nbeat);
    wire tx_fire = tx_valid && tx_ready;

    // notifications and tag release of the response side
    reg        r_nreq;
    reg [3:0]  r_nkind;
    reg [4:0]  r_nerr;
    assign nreq  = r_nreq;
    assign nkind = r_nkind;
    assign nerr  = r_nerr;
    assign free  = (r_st == R_PNOTE) && (!r_nreq || ngo);
    wire [4:0] r_lerr = tag_lerr;
    always @(posedge clk) begin
        if (rst) begin
            r_st   <= R_HDR;
            r_nreq <= 1'b0;
            lerr_set <= 1'b0;
            ev_rsp_drop <= 1'b0;
            ev_rx_bytes <= 8'd0;
        end else begin
            lerr_set <= 1'b0;
            ev_rsp_drop <= 1'b0;
            ev_rx_bytes <= 8'd0;
            case (r_st)
                R_HDR: if (rx_fire) begin
                    r_tag  <= rx_hdr_tag;
                    r_last <= rx_hdr[`VELO_RMA_PKT_HDR_LAST];
                    r_err  <= rx_hdr[`VELO_RMA_PKT_HDR_ERR];
                    r_len_m1  <= rx_hdr[`VELO_RMA_PKT_HDR_LEN_M1];
                    r_get  <= rx_hdr_get;
                    if (rx_last || !(rx_hdr_put || rx_hdr_get)) begin
                        ev_rsp_drop <= 1'b1;
                        if (!rx_last) r_st <= R_DROP;
                    end else begin
                        r_st <= R_NLA;
                    end
                end
                R_DROP: if (rx_fire && rx_last) r_st <= R_HDR;
                R_SKIP: if (rx_fire && rx_last) r_st <= r_get ? R_END : R_PNOTE;
                R_NLA: if (rx_fire) begin
                    r_nla <= rx_data;
                    r_pad <= rx_data[1:0];
                    r_buf_wi  <= {{(GBB-1){1'b0}}, 1'b1};
                    g_off <= rx_data[39:0];
                    g_pkt_idx   <= 8'd0;
                    g_rem <= nla_ndata[7:0];
                    if (!r_get) begin
                        // PUT_RSP: the put is complete; the local reason wins over the remote one
                        r_nreq <= 1'b1;
                        if (r_lerr[3:0] != 4'd0) begin
                            r_nkind <= `VELO_RMA_NQ_KIND_ERROR;
                            r_nerr  <= r_lerr;
                        end else if (r_err != 4'd0) begin
                            r_nkind <= `VELO_RMA_NQ_KIND_ERROR;
                            r_nerr  <= {1'b1, r_err};
                        end else begin
                            r_nkind <= `VELO_RMA_NQ_KIND_REMOTE_CPL;
                            r_nerr  <= 5'd0;
                            r_nreq  <= tag_rcpl;
                        end
                        r_st <= rx_last ? R_PNOTE : R_SKIP;
                    end else if (r_err != 4'd0) begin
                        // the get failed at the target
                        lerr_set <= 1'b1;
                        lerr_val <= {1'b1, r_err};
                        r_last <= 1'b1;
                        r_st   <= rx_last ? R_END : R_SKIP;
                    end else begin
                        r_bad <= !nla_ok;
                        if (!nla_ok) begin
                            ev_rsp_drop <= 1'b1;
                            lerr_set <= 1'b1;
                            lerr_val <= {1'b0, `VELO_RMA_ERR_RANGE};
                        end
                        if (rx_last) r_st <= (nla_ok && nla_ndata != 9'd0 && !r_lerr_any) ? R_LK : R_END;
                        else r_st <= R_DATA;
                    end
                end
                R_DATA: if (rx_fire) begin
                    r_buf_wi <= r_buf_wi + 1'b1;
                    if (rx_last) r_st <= (!r_bad && g_rem != 8'd0 && !r_lerr_any) ? R_LK : R_END;
                end
                R_LK: if (lk_go) r_st <= R_RS;
                R_RS: if (rs_go) begin
                    g_addr <= rs_addr;
                    g_piece_n    <= gp_piece_n;
                    g_beat <= 6'd0;
                    g_nbeat <= gp_ndw[6:1] - ((gp_ndw[0] == 1'b0) ? 6'd1 : 6'd0);
                    r_rel_region <= rs_region;
                    if (rs_err != `VELO_RMA_ERR_NONE) begin
                        lerr_set <= 1'b1;
                        lerr_val <= {1'b0, rs_err};
                        r_st   <= R_END;
                    end else begin
                        r_st <= R_TX;
                    end
                end
                R_TX: if (tx_fire) begin
                    g_beat <= g_beat + 6'd1;
                    if (tx_eop) r_st <= R_REL;
                end
                R_REL: if (rel_go) begin
                    ev_rx_bytes <= g_piece_n;
                    g_off <= g_off + {32'd0, g_piece_n};
                    g_pkt_idx   <= g_pkt_idx + g_piece_n;
                    g_rem <= g_rem - g_piece_n;
                    r_st  <= (g_rem == g_piece_n) ? R_END : R_LK;
                end
                R_END: r_st <= r_last ? R_GFIN : R_HDR;
                R_GFIN: begin
                    // decided here (a failure noted by this packet is in t_lerr now)
                    if (!r_nreq) begin
                        r_nreq  <= (r_lerr[3:0] != 4'd0) || tag_lcpl;
                        r_nkind <= (r_lerr[3:0] != 4'd0) ? `VELO_RMA_NQ_KIND_ERROR : `VELO_RMA_NQ_KIND_GET_DONE;
                        r_nerr  <= r_lerr;
                        r_st    <= R_PNOTE;
                    end
                end
                default: begin  // R_PNOTE
                    if (!r_nreq || ngo) begin
                        r_nreq <= 1'b0;
                        r_st   <= R_HDR;
                    end
                end
            endcase
        end
    end

    assign idle = (r_st == R_HDR);
    assign quiet = idle && !r_nreq && !lerr_set && !ev_rsp_drop && (ev_rx_bytes == 8'd0);

    wire unused_ok = &{1'b0, r_nla, rx_hdr, gp_span, gp_ndw, g_span, g_ndw, g_pos, g_endb, g_sh};
endmodule
`default_nettype wire
