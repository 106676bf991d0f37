// RMA initiator engine: executes put and get commands (docs/rma.md §1, §3) and reports their
// completion.
//
// Commands (records of velo_rma_cmd) get a tag from a table of 2^TAG_BITS; a command that finds
// every tag in use is refused at once with an ERROR entry, reason BUSY (nothing executed; software
// issues it again), so the command input never waits for a command to end: a BAR4 posted write
// must not wait for the host reads of the puts holding the tags (docs/rma.md §6.1). Intake per
// command: error records (TORN, BAD_CMD) and commands while disabled become ERROR entries at once;
// out of tags: ERROR BUSY; else the route to REM_NODE is read (invalid: ERROR
// NO_ROUTE) and the whole local buffer is checked with the ATU (PUT: LOCAL_READ, GET: LOCAL_WRITE;
// a failure is reported with its reason, nothing is sent). The check's translation is given back at
// once; the buffer is translated again piece by piece when it is used.
//
// PUT: the issuer translates the source buffer (one lookup per DMA read of at most 4 KiB, split at
// page ends) and issues DMA reads (rq_*, velo_dma_rd) with the tag as context; every read's
// translation is released when the read's last beat arrives (rd_last). The packetiser takes the
// data in order (velo_dma_rd delivers in request order), packs the bytes through a 16-byte byte
// aligner (from host-address lanes to packet lanes) and cuts packets by target NLA: the first
// carries at most RMA_MTU - (T mod 8) data bytes, all others start 8-byte aligned, data after the
// header words and (T mod 4) pad bytes. A packet starts only when its data bytes are waiting at
// rd_* (rd_avail, the bytes in the read FIFO, plus the aligner's; or an error beat is waiting),
// so once its header left it never waits for a host read: a host read completion may wait
// behind the CPU's posted writes, which may wait for the request-class local input this packet
// holds (docs/rma.md §6.1, "host reads and posted writes").
// Puts are sent one after the other (never interleaved: the ordering assumption of §3). A put with
// NOTIFY ends with a data-less LAST|NOTIFY packet, sent only after every data byte was read
// without error, so the target's TARGET entry never announces a failed put. LOCAL_CPL is written
// when the last byte has been read, before the LAST packet's last word leaves.
// A put that fails at the initiator after its check (a later ATU lookup, a DMA read error) ends
// at the next packet boundary (the current packet is completed with zeros): if no packet left yet,
// nothing is sent and ERROR is written at once; else a data-less LAST packet without NOTIFY (NLA
// word: the put's first byte) ends it at the target, and ERROR (the local reason) is written when its PUT_RSP arrives.
//
// GET: the GET packet (target NLA, length, initiator NLA) leaves on the request VC, alternating
// with put packets, in command order, and only when no earlier get to the same node is
// outstanding (sent, tag not yet free): one get per target node at a time, so a target's GET
// queue of 2^NODE_BITS entries never fills and a target never holds its request input for a get
// (velo_rma_tgt; docs/rma.md §6.1, "host reads and posted writes"). Each GET_RSP packet is checked against the get's buffer (same region and key,
// inside [NLA, NLA + LEN), from the node the get went to), stored (at most RMA_MTU data bytes),
// translated (LOCAL_WRITE, split at page ends) and written with posted memory writes (byte
// enables, realigned from packet lanes to host lanes). After the LAST response: GET_DONE (LCPL) or
// ERROR (the target's reason, or the local one).
//
// Responses: PUT_RSP and GET_RSP on rx_* (the NIC steers RMA response packets here); a response
// whose tag is not an outstanding command of that kind to that node is dropped and counted.
// Notification entries (kind, reason, slot, node, OP, cookie, length, remote NLA) leave on n_*
// towards velo_rma_notify, in the order they are produced.
//
// The ATU ports (lk_*/rs_*/rel_*) follow velo_atu; one lookup is outstanding at a time, so a NIC
// can arbitrate one ATU between this unit and the target (responses in order). TLP data 64 bits.
`default_nettype none
`include "velo_spec.vh"
module velo_rma_init #(
    parameter integer NODE_BITS   = 8,   // node id width (spec param NODE_BITS)
    parameter integer VPID_BITS   = 8,   // vpid width (spec param VPID_BITS)
    parameter integer REGION_BITS = 8,   // region index width (spec param RMA_REGION_BITS)
    parameter integer TAG_BITS    = 4,   // 2^TAG_BITS command tags (outstanding commands), 1..8
    parameter integer MTU         = 48   // RMA_MTU: most data bytes per packet, multiple of 8, 8..240
) (
    input  wire                 clk,
    input  wire                 rst,        // synchronous, active high
    input  wire                 enable,     // RMA CONTROL.ENABLE (and the NIC's): else commands fail DISABLED
    input  wire [7:0]           node_id,    // CTRL.NODE_ID (low NODE_BITS used)
    input  wire [15:0]          req_id,     // our PCIe requester id
    // command records (velo_rma_cmd)
    input  wire                 cmd_valid,
    output wire                 cmd_ready,
    input  wire [255:0]         cmd_data,   // RMA_CMD0, local NLA, remote NLA, cookie
    input  wire [VPID_BITS-1:0] cmd_vpid,
    input  wire [6:0]           cmd_slot,
    input  wire [7:0]           cmd_slot_cnt,
    input  wire [3:0]           cmd_err,    // RMA_ERR_NONE, TORN or BAD_CMD
    // route table read port: data the cycle after rt_re
    output wire                 rt_re,
    output wire [NODE_BITS-1:0] rt_node,
    input  wire [14:0]          rt_data,    // {VALID, ROUTE}
    // ATU lookup (velo_atu lk_*/rs_*), one outstanding
    output wire                 lk_valid,
    input  wire                 lk_ready,
    output wire [63:0]          lk_nla,
    output wire [23:0]          lk_len,
    output wire [VPID_BITS-1:0] lk_vpid,
    output wire [1:0]           lk_kind,
    input  wire                 rs_valid,
    output wire                 rs_ready,
    input  wire [3:0]           rs_err,
    input  wire [63:0]          rs_addr,
    input  wire [21:0]          rs_room,
    input  wire [REGION_BITS-1:0] rs_region,
    // ATU release of a translation
    output wire                 rel_valid,
    input  wire                 rel_ready,  // velo_atu: always 1
    output wire [REGION_BITS-1:0] rel_region,
    // DMA reads (velo_dma_rd rq_*/rd_*, TLP_W 64, CTX_W = TAG_BITS)
    output wire                 rq_valid,
    input  wire                 rq_ready,
    output wire [63:0]          rq_addr,
    output wire [11:0]          rq_len_m1,
    output wire [TAG_BITS-1:0]  rq_ctx,
    input  wire                 rd_valid,
    output wire                 rd_ready,
    input  wire [63:0]          rd_data,
    input  wire [7:0]           rd_be,
    input  wire                 rd_last,
    input  wire                 rd_err,
    input  wire [TAG_BITS-1:0]  rd_ctx,
    input  wire [13:0]          rd_avail,   // data bytes waiting at rd_* (velo_rma_rdmux FIFO), registered
    input  wire                 rd_errq,    // an error beat waits at rd_* (behind rd_avail's bytes)
    // packets out (request VC), 64-bit words, header word first
    output reg                  pkt_valid,
    input  wire                 pkt_ready,
    output reg  [63:0]          pkt_data,
    output reg                  pkt_last,
    output reg  [2:0]           pkt_lnb,    // last word: valid bytes minus one
    // packets in: RMA responses (PUT_RSP, GET_RSP)
    input  wire                 rx_valid,
    output wire                 rx_ready,
    input  wire [63:0]          rx_data,
    input  wire                 rx_last,
    // TLP stream out: DMA writes of get data
    output wire                 tx_valid,
    input  wire                 tx_ready,
    output wire                 tx_sop,
    output wire                 tx_eop,
    output reg  [127:0]         tx_hdr,
    output wire [63:0]          tx_data,
    // notification entries (velo_rma_notify n_*)
    output reg                  n_valid,
    input  wire                 n_ready,
    output reg  [VPID_BITS-1:0] n_vpid,
    output reg  [255:0]         n_entry,
    // status and events (one-cycle pulses)
    output wire                 busy,        // a command is held or being taken
    output reg                  ev_cmd,      // a command got a tag (is executed)
    output reg  [7:0]           ev_tx_bytes, // put data bytes sent this cycle
    output reg  [7:0]           ev_rx_bytes, // get data bytes written this cycle
    output reg                  ev_err,      // an ERROR entry was produced (reasons BAD_HANDLE and up)
    output reg  [3:0]           ev_err_reason,
    output reg                  ev_rsp_drop  // a response packet was dropped (no such command, bad range, malformed)
);
    function integer clog2;
        input integer v;
        integer i;
        begin
            clog2 = 0;
            for (i = v - 1; i > 0; i = i >> 1) clog2 = clog2 + 1;
        end
    endfunction

    localparam integer TAGS = 1 << TAG_BITS;
    localparam integer TB   = TAG_BITS;
    localparam integer QB   = TAG_BITS + 1;            // queue pointer bits
    localparam integer GBB  = clog2(MTU / 8 + 4);      // get packet buffer: 2^GBB words
    localparam [7:0]   MTU8 = MTU[7:0];

    // ================================================================ tag table
    // fields written once when a command gets its tag
    localparam integer F_GET = 0, F_LCPL = 1, F_RCPL = 2, F_NOTIFY = 3, F_VPID = 4;
    localparam integer F_SLOT   = F_VPID + VPID_BITS;
    localparam integer F_NODE   = F_SLOT + 7;
    localparam integer F_LEN    = F_NODE + NODE_BITS;
    localparam integer F_LNLA   = F_LEN + 24;
    localparam integer F_RNLA   = F_LNLA + 64;
    localparam integer F_COOKIE = F_RNLA + 64;
    localparam integer F_ROUTE  = F_COOKIE + 64;
    localparam integer TW       = F_ROUTE + 14;

    reg [TW-1:0] tt [0:TAGS-1];
    reg [TAGS-1:0] t_busy;             // tag holds a command
    reg [TAGS-1:0] t_sent;             // its last request packet has left (put: LAST; get: GET)
    reg [5*TAGS-1:0] t_lerr;           // {remote, reason} of a failure noted before the end
    reg [TAGS-1:0] t_get;              // tag holds a get
    reg [NODE_BITS*TAGS-1:0] t_node;   // the command's remote node (copy of the table's F_NODE)

    // ================================================================ shared resources: requests
    // ATU lookups: one outstanding; clients 0 intake, 1 issuer, 2 get writer
    reg        l_busy;
    reg [1:0]  l_own;
    wire       i_lk_req, s_lk_req, g_lk_req;
    wire [63:0] i_lk_nla, s_lk_nla, g_lk_nla;
    wire [23:0] i_lk_len, s_lk_len, g_lk_len;
    wire [VPID_BITS-1:0] i_lk_vpid, s_lk_vpid, g_lk_vpid;
    wire [1:0] l_sel = g_lk_req ? 2'd2 : (s_lk_req ? 2'd1 : 2'd0);
    assign lk_valid = !l_busy && (i_lk_req || s_lk_req || g_lk_req);
    assign lk_nla   = (l_sel == 2'd2) ? g_lk_nla : ((l_sel == 2'd1) ? s_lk_nla : i_lk_nla);
    assign lk_len   = (l_sel == 2'd2) ? g_lk_len : ((l_sel == 2'd1) ? s_lk_len : i_lk_len);
    assign lk_vpid  = (l_sel == 2'd2) ? g_lk_vpid : ((l_sel == 2'd1) ? s_lk_vpid : i_lk_vpid);
    assign lk_kind  = (l_sel == 2'd2) ? `VELO_RMA_ACC_LOCAL_WRITE :
                      ((l_sel == 2'd1) ? `VELO_RMA_ACC_LOCAL_READ : i_lk_kind);
    wire [1:0] i_lk_kind;
    wire lk_fire = lk_valid && lk_ready;
    assign rs_ready = l_busy;
    wire rs_fire = rs_valid && l_busy;
    wire i_rs = rs_fire && l_own == 2'd0;
    wire s_rs = rs_fire && l_own == 2'd1;
    wire g_rs = rs_fire && l_own == 2'd2;
    wire i_lk_go = lk_fire && l_sel == 2'd0;
    wire s_lk_go = lk_fire && l_sel == 2'd1;
    wire g_lk_go = lk_fire && l_sel == 2'd2;
    always @(posedge clk) begin
        if (rst) l_busy <= 1'b0;
        else if (lk_fire) l_busy <= 1'b1;
        else if (rs_fire) l_busy <= 1'b0;
        if (lk_fire) l_own <= l_sel;
    end

    // releases: the packetiser's (with a read's last beat) first, then intake, then get writer
    wire p_rel_req;                       // a last beat is being taken this cycle
    wire [REGION_BITS-1:0] p_rel_region;
    wire i_rel_req, g_rel_req;
    reg  [REGION_BITS-1:0] i_rel_region, g_rel_region;
    assign rel_valid  = p_rel_req || i_rel_req || g_rel_req;
    assign rel_region = p_rel_req ? p_rel_region : (i_rel_req ? i_rel_region : g_rel_region);
    wire i_rel_go = rel_ready && !p_rel_req && i_rel_req;
    wire g_rel_go = rel_ready && !p_rel_req && !i_rel_req && g_rel_req;

    // notifications: registered output; sources C (responses) > B (packetiser) > A (intake)
    wire a_nreq, b_nreq, c_nreq;
    wire [TB-1:0] b_ntag, c_ntag;
    wire [3:0] b_nkind, c_nkind;
    wire [4:0] b_nerr, c_nerr;            // {remote, reason}
    wire [255:0] a_nentry;
    wire [VPID_BITS-1:0] a_nvpid;
    wire n_free = !n_valid || n_ready;
    wire c_ngo = n_free && c_nreq;
    wire b_ngo = n_free && b_nreq && !c_nreq;
    wire a_ngo = n_free && a_nreq && !c_nreq && !b_nreq;
    wire [TB-1:0] nb_tag = c_nreq ? c_ntag : b_ntag;
    wire [3:0]    nb_kind = c_nreq ? c_nkind : b_nkind;
    wire [4:0]    nb_err = c_nreq ? c_nerr : b_nerr;
    wire [TW-1:0] tn = tt[nb_tag];
    reg  [63:0] nb_w0;
    always @(*) begin
        nb_w0 = 64'd0;
        nb_w0[`VELO_RMA_NQ_HDR_KIND]       = nb_kind;
        nb_w0[`VELO_RMA_NQ_HDR_ERR]        = nb_err[3:0];
        nb_w0[`VELO_RMA_NQ_HDR_ERR_REMOTE] = nb_err[4];
        nb_w0[`VELO_RMA_NQ_HDR_SLOT]       = tn[F_SLOT +: 7];
        nb_w0[`VELO_RMA_NQ_HDR_SLOT_CNT]   = 8'd1;
        nb_w0[`VELO_RMA_NQ_HDR_PEER_NODE]  = {{(8-NODE_BITS){1'b0}}, tn[F_NODE +: NODE_BITS]};
        nb_w0[`VELO_RMA_NQ_HDR_OP]         = tn[F_GET] ? `VELO_RMA_OP_GET : `VELO_RMA_OP_PUT;
    end
    wire [255:0] nb_entry = {tn[F_RNLA +: 64], 40'd0, tn[F_LEN +: 24], tn[F_COOKIE +: 64], nb_w0};
    wire [3:0] n_reason = a_ngo ? a_nentry[`VELO_RMA_NQ_HDR_ERR] : nb_err[3:0];
    wire n_is_err = a_ngo || ((c_ngo || b_ngo) && nb_kind == `VELO_RMA_NQ_KIND_ERROR);
    always @(posedge clk) begin
        if (rst) begin
            n_valid <= 1'b0;
            ev_err  <= 1'b0;
        end else begin
            if (c_ngo || b_ngo || a_ngo) n_valid <= 1'b1;
            else if (n_ready) n_valid <= 1'b0;
            ev_err <= n_is_err && (n_reason >= `VELO_RMA_ERR_BAD_HANDLE);
        end
        ev_err_reason <= n_reason;
        if (c_ngo || b_ngo) begin
            n_vpid  <= tn[F_VPID +: VPID_BITS];
            n_entry <= nb_entry;
        end else if (a_ngo) begin
            n_vpid  <= a_nvpid;
            n_entry <= a_nentry;
        end
    end

    // ================================================================ intake
    localparam [2:0] I_IDLE = 3'd0, I_RT = 3'd1, I_LK = 3'd2, I_RS = 3'd3, I_REL = 3'd4, I_ERR = 3'd5,
                     I_ALLOC = 3'd6;
    reg [2:0]  i_st;
    reg [3:0]  i_err;
    reg [13:0] i_route;
    wire [63:0] c0     = cmd_data[63:0];
    wire        c_get  = (c0[`VELO_RMA_CMD0_OP] == `VELO_RMA_OP_GET);
    wire [23:0] c_len  = c0[`VELO_RMA_CMD0_LEN];
    wire [7:0]  c_node8 = c0[`VELO_RMA_CMD0_REM_NODE];

    // lowest free tag
    reg [TB-1:0] free_tag;
    reg          have_free;
    integer ft;
    always @(*) begin
        free_tag  = {TB{1'b0}};
        have_free = 1'b0;
        for (ft = TAGS - 1; ft >= 0; ft = ft - 1)
            if (!t_busy[ft]) begin
                free_tag  = ft[TB-1:0];
                have_free = 1'b1;
            end
    end

    assign rt_re   = (i_st == I_IDLE) && cmd_valid && cmd_err == `VELO_RMA_ERR_NONE && enable && have_free;
    assign rt_node = c_node8[NODE_BITS-1:0];
    assign i_lk_req  = (i_st == I_LK);
    assign i_lk_nla  = cmd_data[127:64];
    assign i_lk_len  = c_len;
    assign i_lk_vpid = cmd_vpid;
    assign i_lk_kind = c_get ? `VELO_RMA_ACC_LOCAL_WRITE : `VELO_RMA_ACC_LOCAL_READ;
    assign i_rel_req = (i_st == I_REL);
    assign a_nreq    = (i_st == I_ERR);
    assign a_nvpid   = cmd_vpid;
    wire i_torn = (i_err == `VELO_RMA_ERR_TORN);
    reg [63:0] a_w0;
    always @(*) begin
        a_w0 = 64'd0;
        a_w0[`VELO_RMA_NQ_HDR_KIND]      = `VELO_RMA_NQ_KIND_ERROR;
        a_w0[`VELO_RMA_NQ_HDR_ERR]       = i_err;
        a_w0[`VELO_RMA_NQ_HDR_SLOT]      = cmd_slot;
        a_w0[`VELO_RMA_NQ_HDR_SLOT_CNT]  = i_torn ? cmd_slot_cnt : 8'd1;
        a_w0[`VELO_RMA_NQ_HDR_PEER_NODE] = i_torn ? 8'd0 : c_node8;
        a_w0[`VELO_RMA_NQ_HDR_OP]        = i_torn ? 4'd0 : c0[`VELO_RMA_CMD0_OP];
    end
    assign a_nentry = i_torn ? {192'd0, a_w0} : {cmd_data[191:128], 40'd0, c_len, cmd_data[255:192], a_w0};
    wire i_alloc = (i_st == I_ALLOC);
    assign cmd_ready = i_alloc || a_ngo;

    always @(posedge clk) begin
        if (rst) begin
            i_st <= I_IDLE;
        end else begin
            case (i_st)
                I_IDLE: if (cmd_valid) begin
                    if (cmd_err != `VELO_RMA_ERR_NONE) begin
                        i_err <= cmd_err;
                        i_st  <= I_ERR;
                    end else if (!enable) begin
                        i_err <= `VELO_RMA_ERR_DISABLED;
                        i_st  <= I_ERR;
                    end else if (have_free) begin
                        i_st <= I_RT;
                    end else begin
                        // out of tags: refused at once (ERROR BUSY, software issues it again),
                        // so the BAR4 write is taken and the posted writes behind it never wait
                        // for the commands holding the tags (docs/rma.md §6.1)
                        i_err <= `VELO_RMA_ERR_BUSY;
                        i_st  <= I_ERR;
                    end
                end
                I_RT: begin
                    i_route <= rt_data[13:0];
                    if (!rt_data[14]) begin
                        i_err <= `VELO_RMA_ERR_NO_ROUTE;
                        i_st  <= I_ERR;
                    end else if (c_len == 24'd0) begin
                        i_st <= I_ALLOC;
                    end else begin
                        i_st <= I_LK;
                    end
                end
                I_LK: if (i_lk_go) i_st <= I_RS;
                I_RS: if (i_rs) begin
                    i_rel_region <= rs_region;
                    if (rs_err != `VELO_RMA_ERR_NONE) begin
                        i_err <= rs_err;
                        i_st  <= I_ERR;
                    end else begin
                        i_st <= I_REL;
                    end
                end
                I_REL: if (i_rel_go) i_st <= I_ALLOC;
                I_ERR: if (a_ngo) i_st <= I_IDLE;
                default: i_st <= I_IDLE;  // I_ALLOC: the command is taken
            endcase
        end
    end
    always @(posedge clk) begin
        if (i_alloc)
            tt[free_tag] <= {i_route, cmd_data[255:64], c_len, c_node8[NODE_BITS-1:0], cmd_slot, cmd_vpid,
                             c0[`VELO_RMA_CMD0_NOTIFY], c0[`VELO_RMA_CMD0_RCPL], c0[`VELO_RMA_CMD0_LCPL], c_get};
    end
    always @(posedge clk) begin
        if (rst) ev_cmd <= 1'b0;
        else     ev_cmd <= i_alloc;
    end

    // ---------------------------------------------------------------- command queues
    // puts: one ring, written by intake, followed by the issuer (ip) and the packetiser (pp)
    reg [TB-1:0] q_tag   [0:TAGS-1];
    reg [15:0]   q_nreq  [0:TAGS-1];     // DMA reads issued for the put (valid with q_idone)
    reg [3:0]    q_ierr  [0:TAGS-1];     // issue failed with this reason
    reg [TAGS-1:0] q_idone;              // the issuer is done with the entry
    reg [QB-1:0] q_wp, q_ip, q_pp;
    // gets
    reg [TB-1:0] gq_tag [0:TAGS-1];
    reg [QB-1:0] gq_wp, gq_rp;
    wire s_fin;                          // issuer finishes its entry
    wire [15:0] s_fin_nreq;
    wire [3:0]  s_fin_err;
    wire p_pop;                          // packetiser is done with its entry
    wire g_pop;                          // GET packet sent
    always @(posedge clk) begin
        if (rst) begin
            q_wp <= {QB{1'b0}};
            q_ip <= {QB{1'b0}};
            q_pp <= {QB{1'b0}};
            gq_wp <= {QB{1'b0}};
            gq_rp <= {QB{1'b0}};
            q_idone <= {TAGS{1'b0}};
        end else begin
            if (i_alloc && !c_get) begin
                q_wp <= q_wp + 1'b1;
                q_idone[q_wp[TB-1:0]] <= 1'b0;
            end
            if (i_alloc && c_get) gq_wp <= gq_wp + 1'b1;
            if (s_fin) begin
                q_ip <= q_ip + 1'b1;
                q_idone[q_ip[TB-1:0]] <= 1'b1;
            end
            if (p_pop) q_pp <= q_pp + 1'b1;
            if (g_pop) gq_rp <= gq_rp + 1'b1;
        end
    end
    always @(posedge clk) begin
        if (i_alloc && !c_get) q_tag[q_wp[TB-1:0]] <= free_tag;
        if (i_alloc && c_get) gq_tag[gq_wp[TB-1:0]] <= free_tag;
        if (i_alloc) begin
            t_get[free_tag] <= c_get;
            t_node[NODE_BITS*free_tag +: NODE_BITS] <= c_node8[NODE_BITS-1:0];
        end
        if (s_fin) begin
            q_nreq[q_ip[TB-1:0]] <= s_fin_nreq;
            q_ierr[q_ip[TB-1:0]] <= s_fin_err;
        end
    end

    // ================================================================ issuer (put source reads)
    localparam [1:0] S_IDLE = 2'd0, S_LK = 2'd1, S_RS = 2'd2, S_RQ = 2'd3;
    reg [1:0]  s_st;
    reg [TB-1:0] s_tag;
    reg [23:0] s_off;
    reg [15:0] s_nreq;
    reg [63:0] s_addr;
    reg [12:0] s_n;
    reg [3:0]  s_err;
    reg        s_done;      // finish the entry this cycle (registered decision)
    wire [TW-1:0] ts = tt[s_tag];
    wire [TW-1:0] ts_new = tt[q_tag[q_ip[TB-1:0]]];
    wire [63:0] s_lnla = ts[F_LNLA +: 64];
    wire [23:0] s_len  = ts[F_LEN +: 24];
    wire [23:0] s_rem  = s_len - s_off;
    wire        p_abort_issue;  // the packetiser failed this put: stop reading
    assign s_lk_req  = (s_st == S_LK) && !p_abort_issue;
    assign s_lk_nla  = {s_lnla[63:40], s_lnla[39:0] + {16'd0, s_off}};
    assign s_lk_len  = s_rem;
    assign s_lk_vpid = ts[F_VPID +: VPID_BITS];
    assign rq_valid  = (s_st == S_RQ);
    assign rq_addr   = s_addr;
    assign rq_len_m1 = s_n[11:0] - 12'd1;
    assign rq_ctx    = s_tag;
    assign s_fin      = s_done;
    assign s_fin_nreq = s_nreq;
    assign s_fin_err  = s_err;
    // bytes of the next read: to the end of the page, at most 4 KiB
    wire [21:0] s_room = rs_room;
    wire [23:0] s_lim  = (s_room > 22'd4096) ? 24'd4096 : {2'd0, s_room};
    wire [23:0] s_take = (s_rem < s_lim) ? s_rem : s_lim;
    always @(posedge clk) begin
        if (rst) begin
            s_st   <= S_IDLE;
            s_done <= 1'b0;
        end else begin
            s_done <= 1'b0;
            case (s_st)
                S_IDLE: if (q_ip != q_wp && !s_done) begin
                    s_tag  <= q_tag[q_ip[TB-1:0]];
                    s_off  <= 24'd0;
                    s_nreq <= 16'd0;
                    s_err  <= `VELO_RMA_ERR_NONE;
                    if (ts_new[F_LEN +: 24] == 24'd0) s_done <= 1'b1;
                    else s_st <= S_LK;
                end
                S_LK: begin
                    if (p_abort_issue) begin
                        s_err  <= `VELO_RMA_ERR_NOT_VALID;
                        s_done <= 1'b1;
                        s_st   <= S_IDLE;
                    end else if (s_lk_go) begin
                        s_st <= S_RS;
                    end
                end
                S_RS: if (s_rs) begin
                    s_addr <= rs_addr;
                    s_n    <= s_take[12:0];
                    if (rs_err != `VELO_RMA_ERR_NONE) begin
                        s_err  <= rs_err;
                        s_done <= 1'b1;
                        s_st   <= S_IDLE;
                    end else begin
                        s_st <= S_RQ;
                    end
                end
                default: if (rq_ready) begin  // S_RQ
                    s_off  <= s_off + {11'd0, s_n};
                    s_nreq <= s_nreq + 16'd1;
                    if (s_off + {11'd0, s_n} == s_len) begin
                        s_done <= 1'b1;
                        s_st   <= S_IDLE;
                    end else begin
                        s_st <= S_LK;
                    end
                end
            endcase
        end
    end

    // ================================================================ packetiser (put packets)
    localparam [2:0] P_IDLE = 3'd0, P_START = 3'd1, P_EMIT = 3'd2, P_DRAIN = 3'd3, P_FAIL = 3'd4;
    reg [2:0]  p_st;
    reg [TB-1:0] p_tag;
    reg [23:0] p_sent;      // data bytes of the packets started before the current one
    reg [23:0] p_in;        // data bytes taken from the DMA reads
    reg [15:0] p_reqs;      // DMA reads ended (last beat taken)
    reg        p_first;     // no packet has started yet
    reg        p_dmaerr;    // a DMA read of this put failed
    reg        p_lcpl;      // LOCAL_CPL written (or not asked for)
    reg [5:0]  p_w;         // word of the current packet
    reg [5:0]  p_nw;        // words of the current packet
    reg [7:0]  p_nd;        // data bytes of the current packet
    reg [7:0]  p_dl;        // data bytes of the current packet not yet emitted
    reg [1:0]  p_pad;
    reg        p_plast;     // the current packet is the put's LAST
    reg        p_pnotify;   // ... with NOTIFY
    reg        p_pfirst;    // the current packet is the FIRST
    reg [7:0]  p_am1;       // LEN_M1 of the current packet
    reg [39:0] p_pT;        // target offset of the current packet's first byte
    reg        g_act;       // a GET packet is being emitted
    reg [1:0]  g_w;
    reg [TB-1:0] g_tag;
    reg        g_turn;      // a GET goes next when both are waiting

    wire [TB-1:0] pq_tag = q_tag[q_pp[TB-1:0]];
    wire [TW-1:0] tpq   = tt[pq_tag];
    wire [TW-1:0] tp    = tt[p_tag];
    wire [23:0] p_len   = tp[F_LEN +: 24];
    wire [63:0] p_rnla  = tp[F_RNLA +: 64];
    // the next packet is computed from the state after the current one (packets follow back to back)
    wire        p_nx     = (p_st == P_EMIT);
    wire [23:0] p_sent_x = p_nx ? (p_sent + {16'd0, p_nd}) : p_sent;
    wire        p_first_x = p_first && !p_nx;
    wire [39:0] p_T     = p_rnla[39:0] + {16'd0, p_sent_x};
    wire [23:0] p_rem   = p_len - p_sent_x;
    wire        p_notify = tp[F_NOTIFY];
    wire        p_act   = (p_st != P_IDLE);
    wire        pe_idone = q_idone[q_pp[TB-1:0]];
    wire [15:0] pe_nreq  = q_nreq[q_pp[TB-1:0]];
    wire [3:0]  pe_ierr  = q_ierr[q_pp[TB-1:0]];
    wire        p_fail  = p_act && (p_dmaerr || (pe_idone && pe_ierr != `VELO_RMA_ERR_NONE));
    wire [3:0]  p_reason = p_dmaerr ? `VELO_RMA_ERR_NOT_VALID : pe_ierr;
    wire        p_drained = pe_idone && (p_reqs == pe_nreq);
    // the data of the next packet are here: in the aligner (taken, not in earlier packets) or in
    // the read FIFO; data arrive in request order, so bytes of a later put there mean all of
    // this put's are; an error beat waiting ends the packet with zeros when reached
    wire [24:0] p_have  = {1'b0, p_in} - {1'b0, p_sent_x} + {11'd0, rd_avail};
    assign p_abort_issue = p_act && p_dmaerr && (s_tag == p_tag) && (q_ip == q_pp);

    // the next packet of the put: data-less LAST|NOTIFY trailer once the data are out
    wire [7:0]  n_lim  = p_first_x ? (MTU8 - {5'd0, p_T[2:0]}) : MTU8;
    wire [7:0]  n_nd   = (p_rem < {16'd0, n_lim}) ? p_rem[7:0] : n_lim;
    wire        n_trail = p_notify && (p_rem == 24'd0);
    wire        n_last  = n_trail || (!p_notify && {16'd0, n_nd} == p_rem);
    wire [1:0]  n_pad   = (n_nd != 8'd0) ? p_T[1:0] : 2'd0;
    wire [8:0]  n_area  = n_trail ? 9'd24 :
                          (9'd8 + (p_first_x ? 9'd8 : 9'd0) + ((n_nd != 8'd0) ? ({7'd0, n_pad} + {1'b0, n_nd}) : 9'd0));
    wire [8:0]  n_am1   = n_area - 9'd1;
    wire        n_ok    = rd_errq || (p_have >= {17'd0, n_nd});

    // byte aligner: acc holds acnt bytes of the put's byte stream (bytes above acnt are 0)
    reg  [127:0] acc;
    reg  [4:0]   acnt;
    wire [5:0]  hw     = p_pnotify ? 6'd4 : (p_pfirst ? 6'd3 : 6'd2);  // header words of the current packet
    wire        w_data = (p_w >= hw);
    wire        w_d0   = (p_w == hw);
    wire [3:0]  w_room = w_d0 ? (4'd8 - {2'd0, p_pad}) : 4'd8;
    wire [3:0]  w_n    = (p_dl < {4'd0, w_room}) ? p_dl[3:0] : w_room;
    wire [2:0]  w_off  = w_d0 ? {1'b0, p_pad} : 3'd0;
    wire        w_lastword = (p_w == p_nw - 6'd1);
    wire        w_have = p_fail || ({1'b0, acnt} >= {2'd0, w_n});
    // the put's last word waits for LOCAL_CPL (or the failure) and for every read to end
    wire        w_end_ok = !(p_plast && w_lastword) || ((p_lcpl || p_fail) && p_drained);
    wire        o_free = !pkt_valid || pkt_ready;
    wire        p_emit = (p_st == P_EMIT) && !g_act && o_free && (!w_data || w_have) && w_end_ok;
    wire        g_emit = g_act && o_free;
    wire        take   = p_emit && w_data && !p_fail;
    wire [3:0]  take_n = take ? w_n : 4'd0;

    wire [4:0]  cnt_t  = acnt - {1'b0, take_n};
    // input side: DMA read beats of the current put; after a failure they are discarded
    // (room is counted after this cycle's take, so a misaligned stream runs at full rate)
    wire in_norm  = (p_st == P_START || p_st == P_EMIT) && !p_fail && (cnt_t <= 5'd8);
    wire in_drain = p_fail;
    wire in_cond  = rd_valid && (in_norm || in_drain) && (rd_ctx == p_tag);
    assign rd_ready = p_act && (in_norm || in_drain) && (rd_ctx == p_tag) && (!rd_last || rel_ready);
    wire rd_fire = rd_valid && rd_ready;
    assign p_rel_req    = in_cond && rd_last;
    assign p_rel_region = tp[F_LNLA + 40 +: REGION_BITS];
    // compact the beat: its valid bytes are contiguous from the lowest enabled lane
    reg [2:0] b_off;
    reg [3:0] b_cnt;
    integer bi;
    always @(*) begin
        b_off = 3'd0;
        b_cnt = 4'd0;
        for (bi = 7; bi >= 0; bi = bi - 1)
            if (rd_be[bi]) b_off = bi[2:0];
        for (bi = 0; bi < 8; bi = bi + 1)
            if (rd_be[bi]) b_cnt = b_cnt + 4'd1;
    end
    wire [63:0]  b_sh   = rd_data >> {b_off, 3'b000};
    wire [63:0]  b_mask = (b_cnt == 4'd8) ? {64{1'b1}} : ((64'd1 << {b_cnt[2:0], 3'b000}) - 64'd1);
    wire [63:0]  b_comp = b_sh & b_mask;
    wire         app    = rd_fire && in_norm;
    wire [127:0] acc_t  = acc >> {take_n, 3'b000};
    wire [127:0] acc_n  = app ? (acc_t | ({64'd0, b_comp} << {cnt_t, 3'b000})) : acc_t;
    wire [4:0]   cnt_n  = app ? (cnt_t + {1'b0, b_cnt}) : cnt_t;
    wire [63:0]  w_mask = (w_n == 4'd8) ? {64{1'b1}} : ((64'd1 << {w_n[2:0], 3'b000}) - 64'd1);
    wire [63:0]  w_dat  = p_fail ? 64'd0 : ((acc[63:0] & w_mask) << {w_off, 3'b000});

    // words
    wire [TW-1:0] tg = tt[g_tag];
    reg  [63:0] h_put, h_get, w_word;
    always @(*) begin
        h_put = 64'd0;
        h_put[`VELO_RMA_PKT_HDR_VC]       = `VELO_VC_REQ;
        h_put[`VELO_RMA_PKT_HDR_ROUTE]    = tp[F_ROUTE +: 14];
        h_put[`VELO_RMA_PKT_HDR_TYPE]     = `VELO_PKT_TYPE_RMA_PUT;
        h_put[`VELO_RMA_PKT_HDR_FIRST]    = p_pfirst;
        h_put[`VELO_RMA_PKT_HDR_LAST]     = p_plast;
        h_put[`VELO_RMA_PKT_HDR_NOTIFY]   = p_pnotify;
        h_put[`VELO_RMA_PKT_HDR_SRC_NODE] = {{(8-NODE_BITS){1'b0}}, node_id[NODE_BITS-1:0]};
        h_put[`VELO_RMA_PKT_HDR_SRC_VPID] = {{(8-VPID_BITS){1'b0}}, tp[F_VPID +: VPID_BITS]};
        h_put[`VELO_RMA_PKT_HDR_TAG]      = {{(8-TB){1'b0}}, p_tag};
        h_put[`VELO_RMA_PKT_HDR_LEN_M1]   = p_am1;
        h_get = 64'd0;
        h_get[`VELO_RMA_PKT_HDR_VC]       = `VELO_VC_REQ;
        h_get[`VELO_RMA_PKT_HDR_ROUTE]    = tg[F_ROUTE +: 14];
        h_get[`VELO_RMA_PKT_HDR_TYPE]     = `VELO_PKT_TYPE_RMA_GET;
        h_get[`VELO_RMA_PKT_HDR_SRC_NODE] = {{(8-NODE_BITS){1'b0}}, node_id[NODE_BITS-1:0]};
        h_get[`VELO_RMA_PKT_HDR_SRC_VPID] = {{(8-VPID_BITS){1'b0}}, tg[F_VPID +: VPID_BITS]};
        h_get[`VELO_RMA_PKT_HDR_TAG]      = {{(8-TB){1'b0}}, g_tag};
        h_get[`VELO_RMA_PKT_HDR_LEN_M1]   = 8'd23;
        if (g_act) begin
            case (g_w)
                2'd0: w_word = h_get;
                2'd1: w_word = tg[F_RNLA +: 64];
                2'd2: w_word = {40'd0, tg[F_LEN +: 24]};
                default: w_word = tg[F_LNLA +: 64];
            endcase
        end else if (p_w == 6'd0) w_word = h_put;
        else if (p_w == 6'd1) w_word = p_pnotify ? p_rnla : {p_rnla[63:40], p_pT};
        else if (p_w == 6'd2 && (p_pfirst || p_pnotify)) w_word = {40'd0, p_len};
        else if (p_w == 6'd3 && p_pnotify) w_word = tp[F_COOKIE +: 64];
        else w_word = w_dat;
    end

    // a GET starts at a put packet boundary; GET and put packets alternate when both wait
    // the head get waits while a get to its node is outstanding (one get per target node)
    wire [TB-1:0] gh_tag = gq_tag[gq_rp[TB-1:0]];
    wire [NODE_BITS-1:0] gh_node = t_node[NODE_BITS*gh_tag +: NODE_BITS];
    reg  g_same;
    integer gk;
    always @(*) begin
        g_same = 1'b0;
        for (gk = 0; gk < TAGS; gk = gk + 1)
            if (t_busy[gk] && t_sent[gk] && t_get[gk] && t_node[NODE_BITS*gk +: NODE_BITS] == gh_node)
                g_same = 1'b1;
    end
    wire g_pend  = (gq_rp != gq_wp) && !g_same;
    wire p_ready_pkt = (p_st == P_START) && !p_fail && n_ok;
    wire g_start = g_pend && !g_act && (p_st != P_EMIT) && (g_turn || !p_ready_pkt);
    assign g_pop = g_emit && (g_w == 2'd3);
    wire p_end = p_emit && w_lastword && p_plast;
    assign p_pop = p_end || (p_st == P_FAIL && b_ngo);
    // load the next packet: from P_START, or straight after the last word of the previous one
    wire p_load = n_ok && (((p_st == P_START) && !p_fail && !g_start && !g_act) ||
                           (p_emit && w_lastword && !p_plast && !p_fail && !g_pend));
    wire p_lcpl_req = p_act && (p_st != P_FAIL) && !p_lcpl && !p_fail && (p_in == p_len) && p_drained;
    assign b_nreq  = (p_st == P_FAIL) || p_lcpl_req;
    assign b_ntag  = p_tag;
    assign b_nkind = (p_st == P_FAIL) ? `VELO_RMA_NQ_KIND_ERROR : `VELO_RMA_NQ_KIND_LOCAL_CPL;
    assign b_nerr  = (p_st == P_FAIL) ? {1'b0, p_reason} : 5'd0;

    always @(posedge clk) begin
        if (rst) begin
            p_st      <= P_IDLE;
            g_act     <= 1'b0;
            g_turn    <= 1'b0;
            pkt_valid <= 1'b0;
            acnt      <= 5'd0;
            acc       <= 128'd0;
        end else begin
            if (o_free) pkt_valid <= 1'b0;
            if (p_emit || g_emit) begin
                pkt_valid <= 1'b1;
                pkt_data  <= w_word;
                pkt_last  <= g_act ? (g_w == 2'd3) : w_lastword;
                pkt_lnb   <= g_act ? 3'd7 : (w_lastword ? p_am1[2:0] : 3'd7);
            end
            if (p_emit) p_w <= p_w + 6'd1;
            acc  <= acc_n;
            acnt <= cnt_n;
            if (rd_fire) begin
                if (app) p_in <= p_in + {20'd0, b_cnt};
                if (rd_last) p_reqs <= p_reqs + 16'd1;
                if (rd_err) p_dmaerr <= 1'b1;
            end
            if (b_ngo && p_st != P_FAIL) p_lcpl <= 1'b1;
            // GET packets
            if (g_start) begin
                g_act <= 1'b1;
                g_w   <= 2'd0;
                g_tag <= gq_tag[gq_rp[TB-1:0]];
            end else if (g_emit) begin
                g_w <= g_w + 2'd1;
                if (g_w == 2'd3) begin
                    g_act  <= 1'b0;
                    g_turn <= 1'b0;
                end
            end
            // put packets
            case (p_st)
                P_IDLE: if (q_pp != q_wp) begin
                    p_st     <= P_START;
                    p_tag    <= pq_tag;
                    p_sent   <= 24'd0;
                    p_in     <= 24'd0;
                    p_reqs   <= 16'd0;
                    p_first  <= 1'b1;
                    p_dmaerr <= 1'b0;
                    p_lcpl   <= !tpq[F_LCPL];
                    acnt     <= 5'd0;
                    acc      <= 128'd0;
                end
                P_START: begin
                    if (p_fail) p_st <= P_DRAIN;
                    else if (p_load) p_st <= P_EMIT;
                end
                P_EMIT: if (p_emit) begin
                    if (take) p_dl <= p_dl - {4'd0, w_n};
                    if (w_lastword) begin
                        p_sent  <= p_sent + {16'd0, p_nd};
                        p_first <= 1'b0;
                        g_turn  <= 1'b1;
                        p_st    <= p_plast ? P_IDLE : (p_load ? P_EMIT : P_START);
                    end
                end
                P_DRAIN: if (p_drained) begin
                    acnt <= 5'd0;
                    acc  <= 128'd0;
                    if (p_first) begin
                        p_st <= P_FAIL;  // nothing was sent: report now, no response will come
                    end else begin
                        // a data-less LAST without NOTIFY ends the put at the target
                        p_st      <= P_EMIT;
                        p_w       <= 6'd0;
                        p_nw      <= 6'd2;
                        p_nd      <= 8'd0;
                        p_dl      <= 8'd0;
                        p_pad     <= 2'd0;
                        p_plast   <= 1'b1;
                        p_pnotify <= 1'b0;
                        p_pfirst  <= 1'b0;
                        p_am1     <= 8'd7;
                        p_pT      <= p_rnla[39:0];  // the NLA of the put's first byte
                    end
                end
                P_FAIL: if (b_ngo) p_st <= P_IDLE;
                default: p_st <= P_IDLE;
            endcase
            if (p_load) begin
                p_w       <= 6'd0;
                p_nw      <= 6'd2 + n_am1[8:3];
                p_nd      <= n_nd;
                p_dl      <= n_nd;
                p_pad     <= n_pad;
                p_plast   <= n_last;
                p_pnotify <= n_trail;
                p_pfirst  <= p_first_x;
                p_am1     <= n_am1[7:0];
                p_pT      <= p_T;
            end
        end
    end

    // tag state: allocation, sent, local failure, free
    wire c_free;                 // response side frees c_ntag
    wire [TB-1:0] c_free_tag;
    wire c_lerr_set;
    wire [TB-1:0] c_lerr_tag;
    wire [4:0] c_lerr_val;
    integer k;
    always @(posedge clk) begin
        if (rst) begin
            t_busy <= {TAGS{1'b0}};
            t_sent <= {TAGS{1'b0}};
            t_lerr <= {5*TAGS{1'b0}};
        end else begin
            for (k = 0; k < TAGS; k = k + 1) begin
                if (i_alloc && free_tag == k[TB-1:0]) begin
                    t_busy[k] <= 1'b1;
                    t_sent[k] <= 1'b0;
                    t_lerr[5*k +: 5] <= 5'd0;
                end
                if (p_end && p_tag == k[TB-1:0]) begin
                    t_sent[k] <= 1'b1;
                    if (p_fail) t_lerr[5*k +: 5] <= {1'b0, p_reason};
                end
                if (g_pop && g_tag == k[TB-1:0]) t_sent[k] <= 1'b1;
                if (p_st == P_FAIL && b_ngo && p_tag == k[TB-1:0]) t_busy[k] <= 1'b0;
                if (c_lerr_set && c_lerr_tag == k[TB-1:0] && t_lerr[5*k +: 4] == 4'd0) t_lerr[5*k +: 5] <= c_lerr_val;
                if (c_free && c_free_tag == k[TB-1:0]) t_busy[k] <= 1'b0;
            end
        end
    end

    always @(posedge clk) begin
        if (rst) ev_tx_bytes <= 8'd0;
        else     ev_tx_bytes <= take ? {4'd0, w_n} : 8'd0;
    end

    // ================================================================ responses and get writes
    localparam [3:0] R_HDR = 4'd0, R_NLA = 4'd1, R_DROP = 4'd2, R_PNOTE = 4'd3, R_DATA = 4'd4, R_LK = 4'd5,
                     R_RS = 4'd6, R_TX = 4'd7, R_REL = 4'd8, R_END = 4'd9, R_GFIN = 4'd10, R_SKIP = 4'd11;
    reg [3:0]  r_st;
    reg [TB-1:0] r_tag;
    reg        r_last;        // the packet has LAST
    reg [3:0]  r_err;         // its ERR
    reg [7:0]  r_am1;         // its LEN_M1
    reg        r_get;
    reg [63:0] r_nla;
    reg        r_bad;         // data outside the buffer or malformed: not written
    reg [GBB-1:0] r_wi;       // next buffer word
    reg [63:0] gbuf [0:(1<<GBB)-1];
    reg [39:0] g_off;         // NLA offset of the next byte to write
    reg [7:0]  g_rem;         // bytes of the packet left to write
    reg [7:0]  g_k;           // packet data index of the piece's first byte
    reg [63:0] g_addr;
    reg [7:0]  g_n;           // bytes of the current piece
    reg [5:0]  g_beat;
    reg [5:0]  g_nbeat;
    reg [1:0]  r_pad;

    wire [63:0]   rh     = rx_data;
    wire [7:0]    rh_tag8 = rh[`VELO_RMA_PKT_HDR_TAG];
    wire [TB-1:0] rh_tag = rh_tag8[TB-1:0];
    wire [TW-1:0] tr_h   = tt[rh_tag];
    wire [TW-1:0] tr     = tt[r_tag];
    wire [7:0]    rh_src = rh[`VELO_RMA_PKT_HDR_SRC_NODE];
    wire [3:0]    rh_type = rh[`VELO_RMA_PKT_HDR_TYPE];
    wire rh_tag_ok = ((rh_tag8 >> TB) == 8'd0) && t_busy[rh_tag] && t_sent[rh_tag] &&
                     (rh_src == {{(8-NODE_BITS){1'b0}}, tr_h[F_NODE +: NODE_BITS]});
    wire rh_put = rh_tag_ok && !tr_h[F_GET] && rh_type == `VELO_PKT_TYPE_RMA_PUT_RSP;
    wire rh_get = rh_tag_ok && tr_h[F_GET] && rh_type == `VELO_PKT_TYPE_RMA_GET_RSP;

    // data of a GET_RSP: area - 8 - pad bytes (none if the area is the NLA word alone)
    wire [63:0] r_lnla = tr[F_LNLA +: 64];
    wire [23:0] r_glen = tr[F_LEN +: 24];
    wire [8:0]  r_area = {1'b0, r_am1} + 9'd1;
    wire [1:0]  rn_pad = rx_data[1:0];
    wire [8:0]  rn_nd  = (r_area <= 9'd8) ? 9'd0 : (r_area - 9'd8 - {7'd0, rn_pad});
    wire [40:0] rn_end = {1'b0, rx_data[39:0]} + {32'd0, rn_nd};
    wire [40:0] rb_end = {1'b0, r_lnla[39:0]} + {17'd0, r_glen};
    wire rn_ok = (rx_data[63:40] == r_lnla[63:40]) && (rx_data[39:0] >= r_lnla[39:0]) && (rn_end <= rb_end) &&
                 (r_area <= 9'd8 + {1'b0, MTU8}) && !(r_area > 9'd8 && r_area <= 9'd8 + {7'd0, rn_pad}) &&
                 (r_area[2:0] == 3'd0 || 1'b1);
    wire r_lerr_any = (t_lerr[5*r_tag +: 4] != 4'd0);

    assign rx_ready = (r_st == R_HDR) || (r_st == R_NLA) || (r_st == R_DROP) || (r_st == R_DATA) ||
                      (r_st == R_SKIP);
    wire rx_fire = rx_valid && rx_ready;

    // get write pieces
    assign g_lk_req  = (r_st == R_LK);
    assign g_lk_nla  = {r_nla[63:40], g_off};
    assign g_lk_len  = {16'd0, g_rem};
    assign g_lk_vpid = tr[F_VPID +: VPID_BITS];
    assign g_rel_req = (r_st == R_REL);
    wire [7:0]  gp_n   = ({14'd0, g_rem} < rs_room) ? g_rem : rs_room[7:0];
    // host DWs of a piece: from addr & ~3 to the end
    wire [9:0]  gp_span = {8'd0, rs_addr[1:0]} + {2'd0, gp_n} + 10'd3;
    wire [7:0]  gp_ndw  = gp_span[9:2];
    wire [9:0]  g_span  = {8'd0, g_addr[1:0]} + {2'd0, g_n} + 10'd3;
    wire [7:0]  g_ndw   = g_span[9:2];
    wire [9:0]  g_endb  = {8'd0, g_addr[1:0]} + {2'd0, g_n};            // end byte in the payload
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
    wire [10:0]    g_pos  = 11'd8 + {9'd0, r_pad} + {3'd0, g_k} - {9'd0, g_addr[1:0]} + {2'd0, g_beat, 3'b000};
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
    assign c_nreq  = r_nreq;
    assign c_ntag  = r_tag;
    assign c_nkind = r_nkind;
    assign c_nerr  = r_nerr;
    assign c_free     = (r_st == R_PNOTE) && (!r_nreq || c_ngo);
    assign c_free_tag = r_tag;
    reg        c_lset;
    reg [4:0]  c_lval;
    assign c_lerr_set = c_lset;
    assign c_lerr_tag = r_tag;
    assign c_lerr_val = c_lval;

    wire [4:0] r_lerr = t_lerr[5*r_tag +: 5];
    always @(posedge clk) begin
        if (rst) begin
            r_st   <= R_HDR;
            r_nreq <= 1'b0;
            c_lset <= 1'b0;
            ev_rsp_drop <= 1'b0;
            ev_rx_bytes <= 8'd0;
        end else begin
            c_lset <= 1'b0;
            ev_rsp_drop <= 1'b0;
            ev_rx_bytes <= 8'd0;
            case (r_st)
                R_HDR: if (rx_fire) begin
                    r_tag  <= rh_tag;
                    r_last <= rh[`VELO_RMA_PKT_HDR_LAST];
                    r_err  <= rh[`VELO_RMA_PKT_HDR_ERR];
                    r_am1  <= rh[`VELO_RMA_PKT_HDR_LEN_M1];
                    r_get  <= rh_get;
                    if (rx_last || !(rh_put || rh_get)) begin
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
                    r_wi  <= {{(GBB-1){1'b0}}, 1'b1};
                    g_off <= rx_data[39:0];
                    g_k   <= 8'd0;
                    g_rem <= rn_nd[7:0];
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
                            r_nreq  <= tr[F_RCPL];
                        end
                        r_st <= rx_last ? R_PNOTE : R_SKIP;
                    end else if (r_err != 4'd0) begin
                        // the get failed at the target
                        c_lset <= 1'b1;
                        c_lval <= {1'b1, r_err};
                        r_last <= 1'b1;
                        r_st   <= rx_last ? R_END : R_SKIP;
                    end else begin
                        r_bad <= !rn_ok;
                        if (!rn_ok) begin
                            ev_rsp_drop <= 1'b1;
                            c_lset <= 1'b1;
                            c_lval <= {1'b0, `VELO_RMA_ERR_RANGE};
                        end
                        if (rx_last) r_st <= (rn_ok && rn_nd != 9'd0 && !r_lerr_any) ? R_LK : R_END;
                        else r_st <= R_DATA;
                    end
                end
                R_DATA: if (rx_fire) begin
                    r_wi <= r_wi + 1'b1;
                    if (rx_last) r_st <= (!r_bad && g_rem != 8'd0 && !r_lerr_any) ? R_LK : R_END;
                end
                R_LK: if (g_lk_go) r_st <= R_RS;
                R_RS: if (g_rs) begin
                    g_addr <= rs_addr;
                    g_n    <= gp_n;
                    g_beat <= 6'd0;
                    g_nbeat <= gp_ndw[6:1] - ((gp_ndw[0] == 1'b0) ? 6'd1 : 6'd0);
                    g_rel_region <= rs_region;
                    if (rs_err != `VELO_RMA_ERR_NONE) begin
                        c_lset <= 1'b1;
                        c_lval <= {1'b0, rs_err};
                        r_st   <= R_END;
                    end else begin
                        r_st <= R_TX;
                    end
                end
                R_TX: if (tx_fire) begin
                    g_beat <= g_beat + 6'd1;
                    if (tx_eop) r_st <= R_REL;
                end
                R_REL: if (g_rel_go) begin
                    ev_rx_bytes <= g_n;
                    g_off <= g_off + {32'd0, g_n};
                    g_k   <= g_k + g_n;
                    g_rem <= g_rem - g_n;
                    r_st  <= (g_rem == g_n) ? R_END : R_LK;
                end
                R_END: r_st <= r_last ? R_GFIN : R_HDR;
                R_GFIN: begin
                    // decided here (a failure noted by this packet is in t_lerr now)
                    if (!r_nreq) begin
                        r_nreq  <= (r_lerr[3:0] != 4'd0) || tr[F_LCPL];
                        r_nkind <= (r_lerr[3:0] != 4'd0) ? `VELO_RMA_NQ_KIND_ERROR : `VELO_RMA_NQ_KIND_GET_DONE;
                        r_nerr  <= r_lerr;
                        r_st    <= R_PNOTE;
                    end
                end
                default: begin  // R_PNOTE
                    if (!r_nreq || c_ngo) begin
                        r_nreq <= 1'b0;
                        r_st   <= R_HDR;
                    end
                end
            endcase
        end
    end
    always @(posedge clk) begin
        if (r_st == R_DATA && rx_fire) gbuf[r_wi] <= rx_data;
        if (r_st == R_NLA && rx_fire) gbuf[{GBB{1'b0}}] <= 64'd0;
    end

    assign busy = (t_busy != {TAGS{1'b0}}) || (i_st != I_IDLE) || n_valid || (r_st != R_HDR);

    wire unused_ok = &{1'b0, c0, ts, ts_new, s_take, tg, r_nla, rh, gp_span, gp_ndw, g_span, g_ndw, g_pos, g_endb, g_sh, node_id};
endmodule
`default_nettype wire
