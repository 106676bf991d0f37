// RMA target engine, get engine (part of velo_rma_tgt; docs/rma.md §3, §6): serves the GET
// requests the translate stage hands over, at once when it is idle and its queue is empty
// (direct), else through the GET queue (push; 2^GQ_LOG2 entries, block RAM).
//
// Issue side: checks [NLA, NLA + LEN) with REMOTE_READ, then walks the region page by page (one
// lookup per page, the first one being the check; every lookup names the request's KEY_HI and the
// initiator's node and vpid, so each checks the whole key and the region's scope), issuing DMA reads (velo_dma_rd, <= 4 KiB, not
// across a page end) whose context carries the region to release with the last read of each
// translation (rd_rel_*).
// Data side: the data (host lanes) go through a 16-byte gather register into GET_RSP packets
// (packet lanes), segmented per docs/rma.md and built whole in one of two packet buffers before
// they are offered to the response output (buf_*), so a read error never leaves a packet half
// sent: it discards the packet being built, waits for the reads already issued, and ends the get
// with one LAST packet carrying ERR.
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_ports.vh"
module velo_rma_tgt_get #(
    parameter integer REGION_BITS = 8,    // region index width (spec param RMA_REGION_BITS), 1..12
    parameter integer MTU         = 48,   // data bytes per packet (spec param RMA_MTU), multiple of 8, 8..240
    parameter integer CTX_W       = 16,   // DMA read context width (velo_dma_rd CTX_W), >= REGION_BITS + 1
    parameter integer GQ_LOG2     = 8     // GET queue: 2^GQ_LOG2 requests, >= 1
) (
    input  wire                   clk,
    input  wire                   rst,        // synchronous, active high
    input  wire                   enable,     // RMA CONTROL.ENABLE: else gets fail with DISABLED
    input  wire [7:0]             node_id,    // CTRL.NODE_ID, stamped into responses
    // a GET request from the translate stage (t_get: offered this cycle)
    input  wire                   t_get,
    input  wire [63:0]            req_tnla,   // target NLA
    input  wire [23:0]            req_len,    // length in bytes
    input  wire [63:0]            req_inla,   // initiator NLA
    input  wire [7:0]             req_tag,    // the initiator's tag
    input  wire [7:0]             req_vpid,   // the initiator's vpid
    input  wire [7:0]             req_node,   // the initiator's node (SRC_NODE)
    input  wire [23:0]            req_key_hi, // key bits 31:8 (RMA_PKT_LEN KEY_HI of the request)
    input  wire [14:0]            req_route,  // {VALID, ROUTE} back to the initiator
    output wire                   direct,     // the idle engine takes it now (queue empty)
    output wire                   push,       // it goes into the GET queue now
    output wire                   start,      // the engine starts a get this cycle
    output wire                   start_no_route, // ... that has no route back (nothing is sent)
    output wire                   idle,       // no get being served
    output wire                   q_empty,    // the GET queue is empty
    // ATU lookups (granted by velo_rma_tgt: lk_go when taken, rs_go with this engine's response)
    `VELO_ATU_LOOKUP_PORTS,
    output wire                   rs_wait,    // waiting for the response (the ATU may give it)
    output wire [23:0]            lk_key_hi,  // with each lookup: the get's KEY_HI, node and vpid
    output wire [7:0]             lk_node,
    output wire [7:0]             lk_vpid,
    `VELO_ATU_RESULT_PORTS,
    input  wire [REGION_BITS-1:0] rs_region,
    // ATU releases: of an unused translation (rel_go when taken), and with a read's last beat
    `VELO_ATU_RELEASE_PORTS(REGION_BITS),
    input  wire                   rel_other,  // another release is under way: hold the read data
    output wire                   rd_rel,
    output wire [REGION_BITS-1:0] rd_rel_region,
    // DMA read engine (velo_dma_rd rq_*/rd_*, 64-bit data)
    `VELO_DMARD_CLIENT_PORTS(CTX_W),
    // the GET_RSP buffer the response output sends next: header, NLA word, data words (read
    // through buf_re/buf_ra, data on buf_rd the next cycle), last word's valid bytes minus one
    output wire                   buf_valid,
    output wire [63:0]            buf_hdr,
    output wire [63:0]            buf_nla,
    output wire [$clog2(MTU / 8 + 2):0] buf_nw,
    output wire [2:0]             buf_lnb,
    input  wire                   buf_take,   // the output takes the buffer (its last word leaves)
    input  wire                   buf_re,
    input  wire [$clog2(MTU / 8 + 2)-1:0] buf_ra,
    output wire [63:0]            buf_rd,
    output wire                   bufs_busy,  // a buffer holds a packet
    // events
    output wire                   final_err,  // an error GET_RSP was built (reason err_code)
    output wire [3:0]             err_code,
    output wire [7:0]             pkt_bytes   // data bytes of a GET_RSP packet built this cycle
);
    localparam integer GWB  = $clog2(MTU / 8 + 2);   // word index bits of a GET_RSP buffer
    localparam [8:0]   MTU9 = MTU[8:0];
    localparam [3:0] E_NONE = `VELO_RMA_ERR_NONE;

    `VELO_CHECK(g_check_region_bits, REGION_BITS >= 1 && REGION_BITS <= 12, "velo_rma_tgt_get: REGION_BITS must be 1..12")
    `VELO_CHECK(g_check_mtu, MTU >= 8 && MTU <= 240 && MTU % 8 == 0, "velo_rma_tgt_get: MTU must be 8..240, a multiple of 8")
    `VELO_CHECK(g_check_ctx_w, CTX_W >= REGION_BITS + 1, "velo_rma_tgt_get: CTX_W must be at least REGION_BITS + 1")
    `VELO_CHECK(g_check_gq_log2, GQ_LOG2 >= 1, "velo_rma_tgt_get: GQ_LOG2 must be at least 1")

    // ================================================================ issue side
    localparam [2:0] G_IDLE = 3'd0, G_LK = 3'd1, G_RS = 3'd2, G_RQ = 3'd3, G_REL = 3'd4, G_END = 3'd5;
    reg [2:0]   g_st;
    // the get: its request's fields
    reg [63:0]  g_tnla, g_inla;  // target NLA, initiator NLA
    reg [23:0]  g_len;
    reg [7:0]   g_vpid, g_tag;   // the initiator's vpid and tag (SRC_VPID, TAG of the request)
    reg [7:0]   g_node;          // the initiator's node (SRC_NODE)
    reg [23:0]  g_key_hi;        // the request's KEY_HI
    reg [14:0]  g_route;
    // the walk: offset of the next read, its host address, the bytes its translation has left
    // (to the page end) and the translation's region
    reg [23:0]  g_off;
    reg [63:0]  g_addr;
    reg [21:0]  g_room;
    reg [REGION_BITS-1:0] g_region;
    // outcome: the get failed (reason g_err); a read failed (discard data)
    reg         g_fail, g_dfail;
    reg [3:0]   g_err;
    reg [6:0]   g_outst;     // requests issued and not yet ended
    wire        d_done;      // the data side sent the last packet
    wire        g_final_go;  // the final (error or empty) packet is queued
    wire        rd_fire_last;

    // the GET queue: {KEY_HI, SRC_NODE, route, SRC_VPID, TAG, initiator NLA, LEN, target NLA} of each
    // request (215 bits: six 36-bit wide block RAMs, as the 183 bits before KEY_HI and SRC_NODE)
    localparam integer GQW = 24 + 8 + 15 + 8 + 8 + 64 + 24 + 64;
    wire           gq_s_ready, gq_valid;
    wire [GQW-1:0] gq_q;
    wire [GQ_LOG2:0] gq_count;
    // an idle engine with an empty queue takes the GET from T directly (no queue latency)
    wire   g_direct = t_get && (g_st == G_IDLE) && (gq_count == {(GQ_LOG2+1){1'b0}});
    wire   gq_push  = t_get && !g_direct && gq_s_ready;
    wire   g_pop    = gq_valid && (g_st == G_IDLE);
    assign direct   = g_direct;
    assign push     = gq_push;
    assign q_empty  = (gq_count == {(GQ_LOG2+1){1'b0}});
    velo_fifo #(.W(GQW), .AW(GQ_LOG2)) u_gq (
        .clk(clk), .rst(rst),
        .s_valid(gq_push), .s_ready(gq_s_ready),
        .s_data({req_key_hi, req_node, req_route, req_vpid, req_tag, req_inla, req_len, req_tnla}),
        .m_valid(gq_valid), .m_ready(g_pop), .m_data(gq_q), .count(gq_count));
    wire [63:0] q_tnla  = g_direct ? req_tnla : gq_q[63:0];
    wire [23:0] q_len   = g_direct ? req_len : gq_q[87:64];
    wire [63:0] q_inla  = g_direct ? req_inla : gq_q[151:88];
    wire [7:0]  q_tag   = g_direct ? req_tag : gq_q[159:152];
    wire [7:0]  q_vpid  = g_direct ? req_vpid : gq_q[167:160];
    wire [14:0] q_route = g_direct ? req_route : gq_q[182:168];
    wire [7:0]  q_node  = g_direct ? req_node : gq_q[190:183];
    wire [23:0] q_key_hi = g_direct ? req_key_hi : gq_q[214:191];

    wire   g_start = g_pop || g_direct;
    assign idle    = (g_st == G_IDLE);
    assign start   = g_start;
    wire [23:0] g_rem   = g_len - g_off;
    wire [21:0] g_room4k   = (g_room > 22'd4096) ? 22'd4096 : g_room;
    wire [23:0] g_q_len  = ({2'd0, g_room4k} < g_rem) ? {2'd0, g_room4k} : g_rem;
    wire        g_q_uses_tr   = ({2'd0, g_room} == g_q_len);      // uses up the translation
    assign lk_req  = (g_st == G_LK);
    assign lk_nla  = {g_tnla[63:40], g_tnla[39:0] + {16'd0, g_off}};
    assign lk_len  = g_rem;
    assign lk_key_hi = g_key_hi;
    assign lk_node   = g_node;
    assign lk_vpid   = g_vpid;
    assign rs_wait = (g_st == G_RS);
    assign rq_valid  = (g_st == G_RQ) && !g_dfail;
    assign rq_addr   = g_addr;
    wire [23:0] g_q_len_m1 = g_q_len - 24'd1;
    assign rq_len_m1 = g_q_len_m1[11:0];
    // the translation is released with the last beat of its last read: the read that uses it
    // up, or the get's last read when the get ends before the translation does (without the
    // second case every get ending inside a page kept its region busy for ever: no quiesce)
    wire        g_q_last = (g_q_len == g_rem);
    assign rq_ctx    = {{(CTX_W-REGION_BITS-1){1'b0}}, g_q_uses_tr || g_q_last, g_region};
    assign rel_req    = (g_st == G_REL);
    assign rel_region = g_region;
    wire   rq_fire   = rq_valid && rq_ready;

    always @(posedge clk) begin
        if (rst) begin
            g_st    <= G_IDLE;
            g_outst <= 7'd0;
        end else begin
            g_outst <= g_outst + {6'd0, rq_fire} - {6'd0, rd_fire_last};
            case (g_st)
                G_IDLE: if (g_start) begin
                    if (!q_route[14]) g_st <= G_IDLE;
                    else if (!enable || q_len == 24'd0) g_st <= G_END;
                    else g_st <= G_LK;
                end
                G_LK: if (lk_go) g_st <= G_RS;
                G_RS: if (rs_go) g_st <= (rs_err != E_NONE || g_dfail) ? ((rs_err == E_NONE) ? G_REL : G_END) : G_RQ;
                G_RQ: if (g_dfail) g_st <= G_REL;
                      else if (rq_fire) begin
                          if (g_q_len == g_rem) g_st <= G_END;
                          else if (g_q_uses_tr) g_st <= G_LK;
                      end
                G_REL: if (rel_go) g_st <= G_END;
                default: if (d_done || g_final_go) g_st <= G_IDLE;   // G_END
            endcase
        end
    end

    always @(posedge clk) begin
        if (g_start) begin
            g_tnla  <= q_tnla;
            g_len   <= q_len;
            g_inla  <= q_inla;
            g_vpid  <= q_vpid;
            g_node  <= q_node;
            g_key_hi <= q_key_hi;
            g_tag   <= q_tag;
            g_route <= q_route;
            g_off   <= 24'd0;
            g_fail  <= !enable;
            g_err   <= enable ? E_NONE : `VELO_RMA_ERR_DISABLED;
        end
        if (rs_go) begin
            g_addr   <= rs_addr;
            g_room   <= rs_room;
            g_region <= rs_region;
            if (rs_err != E_NONE) begin
                g_fail <= 1'b1;
                g_err  <= rs_err;
            end
        end
        if (rq_fire) begin
            g_addr   <= g_addr + {40'd0, g_q_len};
            g_room   <= g_room - g_q_len[21:0];
            g_off <= g_off + g_q_len;
        end
        if (rd_valid && rd_ready && rd_err && !g_fail) begin
            g_fail <= 1'b1;
            g_err  <= `VELO_RMA_ERR_NOT_VALID;
        end
    end

    // ================================================================ data side
    // two GET_RSP packet buffers (pbuf_*); a packet being gathered into buffer pbuf_fill: p_need
    // data bytes still to take
    reg [1:0]   pbuf_full;        // per buffer: holds a packet ready to send
    reg [63:0]  pbuf_hdr [0:1];
    reg [63:0]  pbuf_nla [0:1];
    reg [GWB:0] pbuf_nw  [0:1];   // data words
    reg [2:0]   pbuf_lnb [0:1];
    reg         pbuf_fill;        // buffer being filled
    reg         p_act;
    reg         p_first;        // the next packet is the get's first
    reg [7:0]   p_need;
    reg [7:0]   p_n;
    reg [1:0]   p_pad;
    reg [63:0]  p_nla;
    reg [GWB:0] p_wi;
    reg [127:0] acc;
    reg [4:0]   acc_n;
    reg [23:0]  d_left;
    reg [2:0]   rd_lanes_used;           // lanes of the current read beat already taken

    wire g_active = (g_st != G_IDLE);
    wire g_disc   = g_fail;     // discard data: the get ends with an error
    // lanes of the beat
    reg [2:0] be_lo, be_hi;
    always @(*) begin : lanes
        integer k;
        be_lo = 3'd0;
        be_hi = 3'd0;
        for (k = 7; k >= 0; k = k - 1) if (rd_be[k]) be_lo = k[2:0];
        for (k = 0; k < 8; k = k + 1) if (rd_be[k]) be_hi = k[2:0];
    end
    wire [2:0]  b_lo    = (rd_lanes_used > be_lo) ? rd_lanes_used : be_lo;
    wire [3:0]  b_avail = {1'b0, be_hi} - {1'b0, b_lo} + 4'd1;
    wire [3:0]  b_take  = ({4'd0, b_avail} <= p_need) ? b_avail : p_need[3:0];
    wire        b_all   = ({4'd0, b_avail} <= p_need);
    wire        emit    = p_act && ((acc_n >= 5'd8) || (p_need == 8'd0 && acc_n != 5'd0));
    wire [4:0]  acc_n1  = emit ? ((acc_n >= 5'd8) ? acc_n - 5'd8 : 5'd0) : acc_n;
    wire [127:0] acc1   = emit ? {64'd0, acc[127:64]} : acc;
    // a beat is used when no other release is under way (its last beat may release a translation)
    wire        rd_use   = g_active && !rel_other;
    wire        rd_disc  = g_disc || rd_err || (rd_be == 8'd0);       // beats thrown away whole
    wire        take_ok  = p_act && (p_need != 8'd0) && !rd_disc;
    assign rd_ready = rd_use && (rd_disc || (take_ok && b_all));      // the beat is done with
    wire rd_fire = rd_valid && rd_ready;
    wire rd_take = rd_valid && rd_use && take_ok;                     // bytes of the beat taken
    assign rd_fire_last = rd_fire && rd_last;
    // the release of a translation with its last read (whether it ended well or not)
    assign rd_rel        = rd_fire_last && rd_ctx[REGION_BITS];
    assign rd_rel_region = rd_ctx[REGION_BITS-1:0];

    wire [63:0]  b_shift = rd_data >> {b_lo, 3'b000};
    wire [63:0]  b_mask  = ~(64'hFFFF_FFFF_FFFF_FFFF << {b_take, 3'b000});
    wire [127:0] b_place = {64'd0, b_shift & b_mask} << {acc_n1[3:0], 3'b000};
    wire         p_done  = p_act && p_need == 8'd0 && acc_n == 5'd0 && !g_fail;
    wire [7:0]   p_room  = p_first ? (MTU9[7:0] - {5'd0, g_inla[2:0]}) : MTU9[7:0];
    wire [7:0]   p_len   = ({16'd0, p_room} < d_left) ? p_room : d_left[7:0];
    wire         p_start = g_active && !p_act && !g_disc && (d_left != 24'd0) && !pbuf_full[pbuf_fill] && (g_st != G_IDLE);

    // the final packet without data: an error, or a get of length 0
    assign g_final_go = (g_st == G_END) && !pbuf_full[pbuf_fill] &&
                        ((g_fail && g_outst == 7'd0) || (!g_fail && g_len == 24'd0));
    reg [63:0] gr_hdr;
    wire [8:0] p_area = 9'd8 + {7'd0, p_pad} + {1'b0, p_n};
    wire [8:0] p_am1  = p_area - 9'd1;
    wire       p_lastpk = (d_left == 24'd0);
    always @(*) begin
        gr_hdr = 64'd0;
        gr_hdr[`VELO_RMA_PKT_HDR_VC]       = 2'b10;
        gr_hdr[`VELO_RMA_PKT_HDR_ROUTE]    = g_route[13:0];
        gr_hdr[`VELO_RMA_PKT_HDR_TYPE]     = `VELO_PKT_TYPE_RMA_GET_RSP;
        gr_hdr[`VELO_RMA_PKT_HDR_LAST]     = g_final_go ? 1'b1 : p_lastpk;
        gr_hdr[`VELO_RMA_PKT_HDR_ERR]      = g_final_go ? g_err : E_NONE;
        gr_hdr[`VELO_RMA_PKT_HDR_SRC_NODE] = node_id;
        gr_hdr[`VELO_RMA_PKT_HDR_SRC_VPID] = g_vpid;
        gr_hdr[`VELO_RMA_PKT_HDR_TAG]      = g_tag;
        gr_hdr[`VELO_RMA_PKT_HDR_LEN_M1]   = g_final_go ? 8'd7 : p_am1[7:0];
    end
    assign d_done = (g_st == G_END) && !g_fail && (g_len != 24'd0) && (d_left == 24'd0) && !p_act;

    wire pbuf_take   = buf_take;    // the output takes buffer pbuf_send
    reg  pbuf_send;                 // buffer the output sends next
    wire pbuf_commit = p_done || g_final_go;
    always @(posedge clk) begin
        if (rst) begin
            pbuf_full <= 2'b00;
            pbuf_fill <= 1'b0;
            pbuf_send <= 1'b0;
            p_act   <= 1'b0;
            acc_n   <= 5'd0;
            rd_lanes_used    <= 3'd0;
            d_left  <= 24'd0;
            g_dfail <= 1'b0;
        end else begin
            if (pbuf_take) begin
                pbuf_full[pbuf_send] <= 1'b0;
                pbuf_send <= ~pbuf_send;
            end
            if (pbuf_commit) begin
                pbuf_full[pbuf_fill] <= 1'b1;
                pbuf_fill <= ~pbuf_fill;
            end
            if (g_start) begin
                d_left  <= (enable && q_route[14]) ? q_len : 24'd0;
                g_dfail <= 1'b0;
            end
            if (rd_fire && rd_err) g_dfail <= 1'b1;
            if (g_st == G_END && g_fail) begin
                p_act <= 1'b0;
                acc_n <= 5'd0;
            end else if (p_start) begin
                p_act <= 1'b1;
                acc_n <= {3'd0, g_inla[1:0] & {2{p_first}}};
            end else if (p_done) begin
                p_act <= 1'b0;
            end else if (p_act) begin
                acc_n <= acc_n1 + (rd_take ? {1'b0, b_take} : 5'd0);
            end
            if (g_start) rd_lanes_used <= 3'd0;
            else if (rd_fire) rd_lanes_used <= 3'd0;
            else if (rd_take) rd_lanes_used <= b_lo + b_take[2:0];
            if (rd_take) d_left <= d_left - {20'd0, b_take};
        end
    end
    always @(posedge clk) begin
        if (g_start) begin
            p_first <= 1'b1;
            p_nla   <= q_inla;
        end
        if (p_start) begin
            p_need  <= p_len;
            p_n     <= p_len;
            p_pad   <= p_first ? g_inla[1:0] : 2'd0;
            p_wi    <= {(GWB+1){1'b0}};
            acc     <= 128'd0;
            p_first <= 1'b0;
        end else if (p_act) begin
            acc <= acc1 | (rd_take ? b_place : 128'd0);
            if (rd_take) p_need <= p_need - {4'd0, b_take};
            if (emit) p_wi <= p_wi + 1'b1;
        end
        if (pbuf_commit) begin
            pbuf_hdr[pbuf_fill] <= gr_hdr;
            pbuf_nla[pbuf_fill] <= p_nla;
            pbuf_nw[pbuf_fill]  <= g_final_go ? {(GWB+1){1'b0}} : p_wi;
            pbuf_lnb[pbuf_fill] <= g_final_go ? 3'd7 : p_am1[2:0];
        end
        if (p_done) p_nla <= {p_nla[63:40], p_nla[39:0] + {32'd0, p_n}};
    end

    // GET_RSP buffers: word i of buffer b at {b, i}
    velo_sdp_ram #(.W(64), .ADDR_W(GWB + 1)) u_gbuf (
        .clk(clk), .we(emit), .waddr({pbuf_fill, p_wi[GWB-1:0]}), .wdata(acc[63:0]), .re(buf_re), .raddr({pbuf_send, buf_ra}),
        .rdata(buf_rd));

    // ================================================================ simulation-only invariants
    // (VELO_ASSERT, velo_check.vh): a violation stops the simulation
    // the count of reads issued and not yet ended never wraps
    `VELO_ASSERT(clk, rst, !(rq_fire && !rd_fire_last && g_outst == 7'h7F), "velo_rma_tgt_get: count of outstanding reads wraps")
    `VELO_ASSERT(clk, rst, !(rd_fire_last && !rq_fire && g_outst == 7'd0), "velo_rma_tgt_get: a read ended with none outstanding")
    // a packet buffer is committed only when free, taken only when full
    `VELO_ASSERT(clk, rst, !(pbuf_commit && pbuf_full[pbuf_fill]), "velo_rma_tgt_get: a GET_RSP buffer overwritten before it was sent")
    `VELO_ASSERT(clk, rst, !(pbuf_take && !pbuf_full[pbuf_send]), "velo_rma_tgt_get: an empty GET_RSP buffer taken")

    assign buf_valid = pbuf_full[pbuf_send];
    assign buf_hdr   = pbuf_hdr[pbuf_send];
    assign buf_nla   = pbuf_nla[pbuf_send];
    assign buf_nw    = pbuf_nw[pbuf_send];
    assign buf_lnb   = pbuf_lnb[pbuf_send];
    assign bufs_busy = (pbuf_full != 2'b00);
    assign start_no_route = g_start && !q_route[14];
    assign final_err = g_final_go && g_fail;
    assign err_code  = g_err;
    assign pkt_bytes = p_done ? p_n : 8'd0;

    wire unused_ok = &{1'b0, rd_ctx, g_q_len_m1, g_inla, g_route[14], p_am1[8]};
endmodule
`default_nettype wire
