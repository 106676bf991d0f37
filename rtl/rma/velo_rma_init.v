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
// Every RMA_PKT_LEN word sent (FIRST put packet, notification packet, GET request) carries the
// command's RKEY_HI (the remote key's bits 31:8) in KEY_HI: the target checks all 32 key bits.
//
// GET: the GET packet (target NLA, length and KEY_HI, initiator NLA) leaves on the request VC, alternating
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
// Rooms: the tag table, intake, the sharing of the ATU and of the notification output, and the
// packetiser are here; the issuer of the put reads is velo_rma_init_issue, the response side
// (responses, get writes) velo_rma_init_rsp.
//
// The ATU ports (lk_*/rs_*/rel_*) follow velo_atu; one lookup is outstanding at a time, so a NIC
// can arbitrate one ATU between this unit and the target (responses in order). TLP data 64 bits.
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_ports.vh"
module velo_rma_init #(
    parameter integer NODE_BITS   = 8,   // node id width (spec param NODE_BITS), 1..8
    parameter integer VPID_BITS   = 8,   // vpid width (spec param VPID_BITS), 1..8
    parameter integer REGION_BITS = 8,   // region index width (spec param RMA_REGION_BITS), 1..12
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
    `VELO_DMARD_CLIENT_PORTS(TAG_BITS),
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
    output wire [127:0]         tx_hdr,
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
    output wire [7:0]           ev_rx_bytes, // get data bytes written this cycle
    output reg                  ev_err,      // an ERROR entry was produced (reasons BAD_HANDLE and up)
    output reg  [3:0]           ev_err_reason,
    output wire                 ev_rsp_drop, // a response packet was dropped (no such command, bad range, malformed)
    // at rest (not busy, packetiser and get sender idle, queues empty, no packet word or lookup
    // held, no event pending): with cmd_valid, rx_valid and rd_valid low no register changes but
    // ev_err_reason, read only with ev_err and rewritten at the edge that raises it (velo_rma
    // gates its clock in simulation)
    output wire                 idle
);
    `VELO_CHECK_NODE_BITS
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK(g_check_region_bits, REGION_BITS >= 1 && REGION_BITS <= 12, "velo_rma_init: REGION_BITS must be 1..12")
    `VELO_CHECK(g_check_tag_bits, TAG_BITS >= 1 && TAG_BITS <= 8, "velo_rma_init: TAG_BITS must be 1..8")
    `VELO_CHECK(g_check_mtu, MTU >= 8 && MTU <= 240 && MTU % 8 == 0, "velo_rma_init: MTU must be 8..240, a multiple of 8")

    localparam integer TAGS = 1 << TAG_BITS;
    localparam integer TB   = TAG_BITS;
    localparam integer QB   = TAG_BITS + 1;            // queue pointer bits
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

    reg [TW-1:0] tag_tab [0:TAGS-1];
    // RMA_CMD0 RKEY_HI (the remote key's bits 31:8) per tag, apart from the table: read by the
    // packetiser and the GET sender only (two read ports: LUT RAM, where the five-port table is
    // flip-flops on xc4v)
    reg [23:0] kh_tab [0:TAGS-1];
    reg [TAGS-1:0] t_busy;             // tag holds a command
    reg [TAGS-1:0] t_sent;             // its last request packet has left (put: LAST; get: GET)
    reg [5*TAGS-1:0] t_lerr;           // {remote, reason} of a failure noted before the end
    reg [TAGS-1:0] t_get;              // tag holds a get
    reg [NODE_BITS*TAGS-1:0] t_node;   // the command's remote node (copy of the table's F_NODE)

    // ================================================================ shared resources: requests
    // ATU lookups: one outstanding; clients LK_INTAKE, LK_ISSUE (issuer), LK_GETWR (get writer),
    // the highest first; lk_taken[c]: client c's lookup is taken, rs_for[c]: its response arrives
    localparam [1:0] LK_INTAKE = 2'd0, LK_ISSUE = 2'd1, LK_GETWR = 2'd2;
    reg        lk_busy;
    reg [1:0]  lk_owner;
    wire       i_lk_req, s_lk_req, g_lk_req;
    wire [63:0] i_lk_nla, s_lk_nla, g_lk_nla;
    wire [23:0] i_lk_len, s_lk_len, g_lk_len;
    wire [VPID_BITS-1:0] i_lk_vpid, s_lk_vpid, g_lk_vpid;
    wire [1:0] lk_sel = g_lk_req ? LK_GETWR : (s_lk_req ? LK_ISSUE : LK_INTAKE);
    assign lk_valid = !lk_busy && (i_lk_req || s_lk_req || g_lk_req);
    assign lk_nla   = (lk_sel == LK_GETWR) ? g_lk_nla : ((lk_sel == LK_ISSUE) ? s_lk_nla : i_lk_nla);
    assign lk_len   = (lk_sel == LK_GETWR) ? g_lk_len : ((lk_sel == LK_ISSUE) ? s_lk_len : i_lk_len);
    assign lk_vpid  = (lk_sel == LK_GETWR) ? g_lk_vpid : ((lk_sel == LK_ISSUE) ? s_lk_vpid : i_lk_vpid);
    assign lk_kind  = (lk_sel == LK_GETWR) ? `VELO_RMA_ACC_LOCAL_WRITE :
                      ((lk_sel == LK_ISSUE) ? `VELO_RMA_ACC_LOCAL_READ : i_lk_kind);
    wire [1:0] i_lk_kind;
    wire lk_fire = lk_valid && lk_ready;
    assign rs_ready = lk_busy;
    wire rs_fire = rs_valid && lk_busy;
    wire [2:0] lk_taken = lk_fire ? (3'b001 << lk_sel) : 3'b000;
    wire [2:0] rs_for   = rs_fire ? (3'b001 << lk_owner) : 3'b000;
    always @(posedge clk) begin
        if (rst) lk_busy <= 1'b0;
        else if (lk_fire) lk_busy <= 1'b1;
        else if (rs_fire) lk_busy <= 1'b0;
        if (lk_fire) lk_owner <= lk_sel;
    end

    // releases: the packetiser's (with a read's last beat) first, then intake, then get writer
    wire p_rel_req;                       // a last beat is being taken this cycle
    wire [REGION_BITS-1:0] p_rel_region;
    wire i_rel_req, g_rel_req;
    reg  [REGION_BITS-1:0] i_rel_region;
    wire [REGION_BITS-1:0] g_rel_region;
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
    wire [TB-1:0] ntf_tag = c_nreq ? c_ntag : b_ntag;
    wire [3:0]    ntf_kind = c_nreq ? c_nkind : b_nkind;
    wire [4:0]    ntf_err = c_nreq ? c_nerr : b_nerr;
    wire [TW-1:0] row_note = tag_tab[ntf_tag];
    reg  [63:0] ntf_w0;
    always @(*) begin
        ntf_w0 = 64'd0;
        ntf_w0[`VELO_RMA_NQ_HDR_KIND]       = ntf_kind;
        ntf_w0[`VELO_RMA_NQ_HDR_ERR]        = ntf_err[3:0];
        ntf_w0[`VELO_RMA_NQ_HDR_ERR_REMOTE] = ntf_err[4];
        ntf_w0[`VELO_RMA_NQ_HDR_SLOT]       = row_note[F_SLOT +: 7];
        ntf_w0[`VELO_RMA_NQ_HDR_SLOT_CNT]   = 8'd1;
        ntf_w0[`VELO_RMA_NQ_HDR_PEER_NODE]  = {{(8-NODE_BITS){1'b0}}, row_note[F_NODE +: NODE_BITS]};
        ntf_w0[`VELO_RMA_NQ_HDR_OP]         = row_note[F_GET] ? `VELO_RMA_OP_GET : `VELO_RMA_OP_PUT;
    end
    wire [255:0] ntf_entry = {row_note[F_RNLA +: 64], 40'd0, row_note[F_LEN +: 24], row_note[F_COOKIE +: 64], ntf_w0};
    wire [3:0] n_reason = a_ngo ? a_nentry[`VELO_RMA_NQ_HDR_ERR] : ntf_err[3:0];
    wire n_is_err = a_ngo || ((c_ngo || b_ngo) && ntf_kind == `VELO_RMA_NQ_KIND_ERROR);
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
            n_vpid  <= row_note[F_VPID +: VPID_BITS];
            n_entry <= ntf_entry;
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
    reg [63:0] intake_w0;
    always @(*) begin
        intake_w0 = 64'd0;
        intake_w0[`VELO_RMA_NQ_HDR_KIND]      = `VELO_RMA_NQ_KIND_ERROR;
        intake_w0[`VELO_RMA_NQ_HDR_ERR]       = i_err;
        intake_w0[`VELO_RMA_NQ_HDR_SLOT]      = cmd_slot;
        intake_w0[`VELO_RMA_NQ_HDR_SLOT_CNT]  = i_torn ? cmd_slot_cnt : 8'd1;
        intake_w0[`VELO_RMA_NQ_HDR_PEER_NODE] = i_torn ? 8'd0 : c_node8;
        intake_w0[`VELO_RMA_NQ_HDR_OP]        = i_torn ? 4'd0 : c0[`VELO_RMA_CMD0_OP];
    end
    assign a_nentry = i_torn ? {192'd0, intake_w0} : {cmd_data[191:128], 40'd0, c_len, cmd_data[255:192], intake_w0};
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
                I_LK: if (lk_taken[LK_INTAKE]) i_st <= I_RS;
                I_RS: if (rs_for[LK_INTAKE]) begin
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
        if (i_alloc) kh_tab[free_tag] <= c0[`VELO_RMA_CMD0_RKEY_HI];
    end
    always @(posedge clk) begin
        if (i_alloc)
            tag_tab[free_tag] <= {i_route, cmd_data[255:64], c_len, c_node8[NODE_BITS-1:0], cmd_slot, cmd_vpid,
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
    wire [TB-1:0] s_tag;                 // the put being issued
    wire          p_abort_issue;         // the packetiser failed this put: stop reading
    wire [TW-1:0] row_issue = tag_tab[s_tag];
    wire [TB-1:0] s_head_tag = q_tag[q_ip[TB-1:0]];
    wire [TW-1:0] row_issue_head = tag_tab[s_head_tag];
    velo_rma_init_issue #(.VPID_BITS(VPID_BITS), .TAG_BITS(TAG_BITS)) u_issue (
        .clk(clk), .rst(rst),
        .head_valid(q_ip != q_wp), .head_tag(s_head_tag), .head_len(row_issue_head[F_LEN +: 24]),
        .tag(s_tag), .tag_lnla(row_issue[F_LNLA +: 64]), .tag_len(row_issue[F_LEN +: 24]), .tag_vpid(row_issue[F_VPID +: VPID_BITS]),
        .put_failed(p_abort_issue),
        .lk_req(s_lk_req), .lk_nla(s_lk_nla), .lk_len(s_lk_len), .lk_vpid(s_lk_vpid), .lk_go(lk_taken[LK_ISSUE]),
        `VELO_ATU_RESULT_CONNECT(rs_for[LK_ISSUE]),
        `VELO_DMARD_REQ_CONNECT,
        .fin(s_fin), .fin_nreq(s_fin_nreq), .fin_err(s_fin_err));

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
    reg [5:0]  p_word;         // word of the current packet
    reg [5:0]  p_nwords;        // words of the current packet
    reg [7:0]  p_ndata;        // data bytes of the current packet
    reg [7:0]  p_dleft;        // data bytes of the current packet not yet emitted
    reg [1:0]  p_pad;
    reg        p_cur_last;     // the current packet is the put's LAST
    reg        p_cur_notify;   // ... with NOTIFY
    reg        p_cur_first;    // the current packet is the FIRST
    reg [7:0]  p_len_m1;       // LEN_M1 of the current packet
    reg [39:0] p_cur_toff;        // target offset of the current packet's first byte
    reg        g_act;       // a GET packet is being emitted
    reg [1:0]  g_word;
    reg [TB-1:0] g_tag;
    reg        g_turn;      // a GET goes next when both are waiting

    wire [TB-1:0] pq_tag = q_tag[q_pp[TB-1:0]];
    wire [TW-1:0] row_pkt_head   = tag_tab[pq_tag];
    wire [TW-1:0] row_pkt    = tag_tab[p_tag];
    wire [23:0] p_len   = row_pkt[F_LEN +: 24];
    wire [63:0] p_rnla  = row_pkt[F_RNLA +: 64];
    // the next packet is computed from the state after the current one (packets follow back to back)
    wire        p_nx     = (p_st == P_EMIT);
    wire [23:0] p_sent_x = p_nx ? (p_sent + {16'd0, p_ndata}) : p_sent;
    wire        p_first_x = p_first && !p_nx;
    wire [39:0] p_next_toff     = p_rnla[39:0] + {16'd0, p_sent_x};
    wire [23:0] p_rem   = p_len - p_sent_x;
    wire        p_notify = row_pkt[F_NOTIFY];
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
    wire [7:0]  nx_lim  = p_first_x ? (MTU8 - {5'd0, p_next_toff[2:0]}) : MTU8;
    wire [7:0]  nx_ndata   = (p_rem < {16'd0, nx_lim}) ? p_rem[7:0] : nx_lim;
    wire        nx_trail = p_notify && (p_rem == 24'd0);
    wire        nx_last  = nx_trail || (!p_notify && {16'd0, nx_ndata} == p_rem);
    wire [1:0]  nx_pad   = (nx_ndata != 8'd0) ? p_next_toff[1:0] : 2'd0;
    wire [8:0]  nx_area  = nx_trail ? 9'd24 :
                          (9'd8 + (p_first_x ? 9'd8 : 9'd0) + ((nx_ndata != 8'd0) ? ({7'd0, nx_pad} + {1'b0, nx_ndata}) : 9'd0));
    wire [8:0]  nx_len_m1   = nx_area - 9'd1;
    wire        nx_ok    = rd_errq || (p_have >= {17'd0, nx_ndata});

    // byte aligner: al_buf holds al_cnt bytes of the put's byte stream (bytes above al_cnt are 0)
    reg  [127:0] al_buf;
    reg  [4:0]   al_cnt;
    wire [5:0]  p_hdr_words     = p_cur_notify ? 6'd4 : (p_cur_first ? 6'd3 : 6'd2);  // header words of the current packet
    wire        w_data = (p_word >= p_hdr_words);
    wire        w_d0   = (p_word == p_hdr_words);
    wire [3:0]  w_room = w_d0 ? (4'd8 - {2'd0, p_pad}) : 4'd8;
    wire [3:0]  w_n    = (p_dleft < {4'd0, w_room}) ? p_dleft[3:0] : w_room;
    wire [2:0]  w_off  = w_d0 ? {1'b0, p_pad} : 3'd0;
    wire        w_lastword = (p_word == p_nwords - 6'd1);
    wire        w_have = p_fail || ({1'b0, al_cnt} >= {2'd0, w_n});
    // the put's last word waits for LOCAL_CPL (or the failure) and for every read to end
    wire        w_end_ok = !(p_cur_last && w_lastword) || ((p_lcpl || p_fail) && p_drained);
    wire        o_free = !pkt_valid || pkt_ready;
    wire        p_emit = (p_st == P_EMIT) && !g_act && o_free && (!w_data || w_have) && w_end_ok;
    wire        g_emit = g_act && o_free;
    wire        take   = p_emit && w_data && !p_fail;
    wire [3:0]  take_n = take ? w_n : 4'd0;

    wire [4:0]  al_cnt_t  = al_cnt - {1'b0, take_n};
    // input side: DMA read beats of the current put; after a failure they are discarded
    // (room is counted after this cycle's take, so a misaligned stream runs at full rate)
    wire in_norm  = (p_st == P_START || p_st == P_EMIT) && !p_fail && (al_cnt_t <= 5'd8);
    wire in_drain = p_fail;
    wire in_cond  = rd_valid && (in_norm || in_drain) && (rd_ctx == p_tag);
    assign rd_ready = p_act && (in_norm || in_drain) && (rd_ctx == p_tag) && (!rd_last || rel_ready);
    wire rd_fire = rd_valid && rd_ready;
    assign p_rel_req    = in_cond && rd_last;
    assign p_rel_region = row_pkt[F_LNLA + 40 +: REGION_BITS];
    // compact the beat: its valid bytes are contiguous from the lowest enabled lane
    reg [2:0] beat_off;
    reg [3:0] beat_cnt;
    integer bi;
    always @(*) begin
        beat_off = 3'd0;
        beat_cnt = 4'd0;
        for (bi = 7; bi >= 0; bi = bi - 1)
            if (rd_be[bi]) beat_off = bi[2:0];
        for (bi = 0; bi < 8; bi = bi + 1)
            if (rd_be[bi]) beat_cnt = beat_cnt + 4'd1;
    end
    wire [63:0]  beat_sh   = rd_data >> {beat_off, 3'b000};
    wire [63:0]  beat_mask = (beat_cnt == 4'd8) ? {64{1'b1}} : ((64'd1 << {beat_cnt[2:0], 3'b000}) - 64'd1);
    wire [63:0]  beat_comp = beat_sh & beat_mask;
    wire         al_append    = rd_fire && in_norm;
    wire [127:0] al_buf_t  = al_buf >> {take_n, 3'b000};
    wire [127:0] al_buf_n  = al_append ? (al_buf_t | ({64'd0, beat_comp} << {al_cnt_t, 3'b000})) : al_buf_t;
    wire [4:0]   al_cnt_n  = al_append ? (al_cnt_t + {1'b0, beat_cnt}) : al_cnt_t;
    wire [63:0]  w_mask = (w_n == 4'd8) ? {64{1'b1}} : ((64'd1 << {w_n[2:0], 3'b000}) - 64'd1);
    wire [63:0]  w_dat  = p_fail ? 64'd0 : ((al_buf[63:0] & w_mask) << {w_off, 3'b000});

    // words
    wire [TW-1:0] row_get = tag_tab[g_tag];
    reg  [63:0] h_put, h_get, w_word, l_put, l_get;
    always @(*) begin
        // RMA_PKT_LEN words: the length and the remote key's bits 31:8 (the target checks all 32)
        l_put = 64'd0;
        l_put[`VELO_RMA_PKT_LEN_LEN]    = p_len;
        l_put[`VELO_RMA_PKT_LEN_KEY_HI] = kh_tab[p_tag];
        l_get = 64'd0;
        l_get[`VELO_RMA_PKT_LEN_LEN]    = row_get[F_LEN +: 24];
        l_get[`VELO_RMA_PKT_LEN_KEY_HI] = kh_tab[g_tag];
        h_put = 64'd0;
        h_put[`VELO_RMA_PKT_HDR_VC]       = `VELO_VC_REQ;
        h_put[`VELO_RMA_PKT_HDR_ROUTE]    = row_pkt[F_ROUTE +: 14];
        h_put[`VELO_RMA_PKT_HDR_TYPE]     = `VELO_PKT_TYPE_RMA_PUT;
        h_put[`VELO_RMA_PKT_HDR_FIRST]    = p_cur_first;
        h_put[`VELO_RMA_PKT_HDR_LAST]     = p_cur_last;
        h_put[`VELO_RMA_PKT_HDR_NOTIFY]   = p_cur_notify;
        h_put[`VELO_RMA_PKT_HDR_SRC_NODE] = {{(8-NODE_BITS){1'b0}}, node_id[NODE_BITS-1:0]};
        h_put[`VELO_RMA_PKT_HDR_SRC_VPID] = {{(8-VPID_BITS){1'b0}}, row_pkt[F_VPID +: VPID_BITS]};
        h_put[`VELO_RMA_PKT_HDR_TAG]      = {{(8-TB){1'b0}}, p_tag};
        h_put[`VELO_RMA_PKT_HDR_LEN_M1]   = p_len_m1;
        h_get = 64'd0;
        h_get[`VELO_RMA_PKT_HDR_VC]       = `VELO_VC_REQ;
        h_get[`VELO_RMA_PKT_HDR_ROUTE]    = row_get[F_ROUTE +: 14];
        h_get[`VELO_RMA_PKT_HDR_TYPE]     = `VELO_PKT_TYPE_RMA_GET;
        h_get[`VELO_RMA_PKT_HDR_SRC_NODE] = {{(8-NODE_BITS){1'b0}}, node_id[NODE_BITS-1:0]};
        h_get[`VELO_RMA_PKT_HDR_SRC_VPID] = {{(8-VPID_BITS){1'b0}}, row_get[F_VPID +: VPID_BITS]};
        h_get[`VELO_RMA_PKT_HDR_TAG]      = {{(8-TB){1'b0}}, g_tag};
        h_get[`VELO_RMA_PKT_HDR_LEN_M1]   = 8'd23;
        if (g_act) begin
            case (g_word)
                2'd0: w_word = h_get;
                2'd1: w_word = row_get[F_RNLA +: 64];
                2'd2: w_word = l_get;
                default: w_word = row_get[F_LNLA +: 64];
            endcase
        end else if (p_word == 6'd0) w_word = h_put;
        else if (p_word == 6'd1) w_word = p_cur_notify ? p_rnla : {p_rnla[63:40], p_cur_toff};
        else if (p_word == 6'd2 && (p_cur_first || p_cur_notify)) w_word = l_put;
        else if (p_word == 6'd3 && p_cur_notify) w_word = row_pkt[F_COOKIE +: 64];
        else w_word = w_dat;
    end

    // a GET starts at a put packet boundary; GET and put packets alternate when both wait
    // the head get waits while a get to its node is outstanding (one get per target node)
    wire [TB-1:0] gq_head_tag = gq_tag[gq_rp[TB-1:0]];
    wire [NODE_BITS-1:0] gq_head_node = t_node[NODE_BITS*gq_head_tag +: NODE_BITS];
    reg  g_node_busy;
    integer gk;
    always @(*) begin
        g_node_busy = 1'b0;
        for (gk = 0; gk < TAGS; gk = gk + 1)
            if (t_busy[gk] && t_sent[gk] && t_get[gk] && t_node[NODE_BITS*gk +: NODE_BITS] == gq_head_node)
                g_node_busy = 1'b1;
    end
    wire g_pend  = (gq_rp != gq_wp) && !g_node_busy;
    wire p_ready_pkt = (p_st == P_START) && !p_fail && nx_ok;
    wire g_start = g_pend && !g_act && (p_st != P_EMIT) && (g_turn || !p_ready_pkt);
    assign g_pop = g_emit && (g_word == 2'd3);
    wire p_end = p_emit && w_lastword && p_cur_last;
    assign p_pop = p_end || (p_st == P_FAIL && b_ngo);
    // load the next packet: from P_START, or straight after the last word of the previous one
    wire p_load = nx_ok && (((p_st == P_START) && !p_fail && !g_start && !g_act) ||
                           (p_emit && w_lastword && !p_cur_last && !p_fail && !g_pend));
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
            al_cnt      <= 5'd0;
            al_buf       <= 128'd0;
        end else begin
            if (o_free) pkt_valid <= 1'b0;
            if (p_emit || g_emit) begin
                pkt_valid <= 1'b1;
                pkt_data  <= w_word;
                pkt_last  <= g_act ? (g_word == 2'd3) : w_lastword;
                pkt_lnb   <= g_act ? 3'd7 : (w_lastword ? p_len_m1[2:0] : 3'd7);
            end
            if (p_emit) p_word <= p_word + 6'd1;
            al_buf  <= al_buf_n;
            al_cnt <= al_cnt_n;
            if (rd_fire) begin
                if (al_append) p_in <= p_in + {20'd0, beat_cnt};
                if (rd_last) p_reqs <= p_reqs + 16'd1;
                if (rd_err) p_dmaerr <= 1'b1;
            end
            if (b_ngo && p_st != P_FAIL) p_lcpl <= 1'b1;
            // GET packets
            if (g_start) begin
                g_act <= 1'b1;
                g_word   <= 2'd0;
                g_tag <= gq_tag[gq_rp[TB-1:0]];
            end else if (g_emit) begin
                g_word <= g_word + 2'd1;
                if (g_word == 2'd3) begin
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
                    p_lcpl   <= !row_pkt_head[F_LCPL];
                    al_cnt     <= 5'd0;
                    al_buf      <= 128'd0;
                end
                P_START: begin
                    if (p_fail) p_st <= P_DRAIN;
                    else if (p_load) p_st <= P_EMIT;
                end
                P_EMIT: if (p_emit) begin
                    if (take) p_dleft <= p_dleft - {4'd0, w_n};
                    if (w_lastword) begin
                        p_sent  <= p_sent + {16'd0, p_ndata};
                        p_first <= 1'b0;
                        g_turn  <= 1'b1;
                        p_st    <= p_cur_last ? P_IDLE : (p_load ? P_EMIT : P_START);
                    end
                end
                P_DRAIN: if (p_drained) begin
                    al_cnt <= 5'd0;
                    al_buf  <= 128'd0;
                    if (p_first) begin
                        p_st <= P_FAIL;  // nothing was sent: report now, no response will come
                    end else begin
                        // a data-less LAST without NOTIFY ends the put at the target
                        p_st      <= P_EMIT;
                        p_word       <= 6'd0;
                        p_nwords      <= 6'd2;
                        p_ndata      <= 8'd0;
                        p_dleft      <= 8'd0;
                        p_pad     <= 2'd0;
                        p_cur_last   <= 1'b1;
                        p_cur_notify <= 1'b0;
                        p_cur_first  <= 1'b0;
                        p_len_m1     <= 8'd7;
                        p_cur_toff      <= p_rnla[39:0];  // the NLA of the put's first byte
                    end
                end
                P_FAIL: if (b_ngo) p_st <= P_IDLE;
                default: p_st <= P_IDLE;
            endcase
            if (p_load) begin
                p_word       <= 6'd0;
                p_nwords      <= 6'd2 + nx_len_m1[8:3];
                p_ndata      <= nx_ndata;
                p_dleft      <= nx_ndata;
                p_pad     <= nx_pad;
                p_cur_last   <= nx_last;
                p_cur_notify <= nx_trail;
                p_cur_first  <= p_first_x;
                p_len_m1     <= nx_len_m1[7:0];
                p_cur_toff      <= p_next_toff;
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
    wire [TB-1:0] rh_tag;                // tag of the response header on rx_*
    wire [TB-1:0] r_tag;                 // tag of the response being handled
    wire [TW-1:0] row_rsp_hdr = tag_tab[rh_tag];
    wire [TW-1:0] row_rsp   = tag_tab[r_tag];
    wire          r_idle, r_quiet;
    velo_rma_init_rsp #(.NODE_BITS(NODE_BITS), .VPID_BITS(VPID_BITS), .REGION_BITS(REGION_BITS),
                        .TAG_BITS(TAG_BITS), .MTU(MTU)) u_rsp (
        .clk(clk), .rst(rst), .req_id(req_id),
        .rx_valid(rx_valid), .rx_ready(rx_ready), .rx_data(rx_data), .rx_last(rx_last),
        .hdr_tag(rh_tag), .hdr_busy(t_busy[rh_tag]), .hdr_sent(t_sent[rh_tag]), .hdr_get(row_rsp_hdr[F_GET]),
        .hdr_node(row_rsp_hdr[F_NODE +: NODE_BITS]),
        .tag(r_tag), .tag_lnla(row_rsp[F_LNLA +: 64]), .tag_len(row_rsp[F_LEN +: 24]), .tag_vpid(row_rsp[F_VPID +: VPID_BITS]),
        .tag_rcpl(row_rsp[F_RCPL]), .tag_lcpl(row_rsp[F_LCPL]), .tag_lerr(t_lerr[5*r_tag +: 5]),
        .lerr_set(c_lerr_set), .lerr_val(c_lerr_val),
        .lk_req(g_lk_req), .lk_nla(g_lk_nla), .lk_len(g_lk_len), .lk_vpid(g_lk_vpid), .lk_go(lk_taken[LK_GETWR]),
        `VELO_ATU_RESULT_CONNECT(rs_for[LK_GETWR]), .rs_region(rs_region),
        .rel_req(g_rel_req), .rel_region(g_rel_region), .rel_go(g_rel_go),
        `VELO_TLP_TX_CONNECT,
        .nreq(c_nreq), .nkind(c_nkind), .nerr(c_nerr), .ngo(c_ngo), .free(c_free),
        .idle(r_idle), .quiet(r_quiet), .ev_rx_bytes(ev_rx_bytes), .ev_rsp_drop(ev_rsp_drop));
    assign c_ntag     = r_tag;
    assign c_free_tag = r_tag;
    assign c_lerr_tag = r_tag;

    // ================================================================ simulation-only invariants
    // (VELO_ASSERT, velo_check.vh): a violation stops the simulation
`ifndef SYNTHESIS
    wire [QB-1:0] q_used  = q_wp - q_pp;     // entries of the put ring
    wire [QB-1:0] q_issue = q_ip - q_pp;     // ... the issuer is done with
    wire [QB-1:0] gq_used = gq_wp - gq_rp;   // entries of the get queue
`endif
    // tags: taken only when free, used only while held, ended once
    `VELO_ASSERT(clk, rst, !(i_alloc && t_busy[free_tag]), "velo_rma_init: a tag allocated while in use")
    `VELO_ASSERT(clk, rst, !(p_end && (!t_busy[p_tag] || t_sent[p_tag])), "velo_rma_init: a put tag ended while free or sent")
    `VELO_ASSERT(clk, rst, !(g_pop && (!t_busy[g_tag] || t_sent[g_tag])), "velo_rma_init: GET of a tag sent while free or sent")
    `VELO_ASSERT(clk, rst, !(c_free && !t_busy[c_free_tag]), "velo_rma_init: response side frees a free tag")
    `VELO_ASSERT(clk, rst, !(p_st == P_FAIL && b_ngo && !t_busy[p_tag]), "velo_rma_init: packetiser frees a free tag")
    // the put ring and the get queue: never written full, never read empty, and the
    // issuer between the packetiser and the writer
    `VELO_ASSERT(clk, rst, !(i_alloc && !c_get && q_used == TAGS[QB-1:0]), "velo_rma_init: put ring written full")
    `VELO_ASSERT(clk, rst, q_issue <= q_used, "velo_rma_init: put ring: issuer outside [packetiser, writer]")
    `VELO_ASSERT(clk, rst, !(s_fin && q_ip == q_wp), "velo_rma_init: issuer finished an entry of the empty put ring")
    `VELO_ASSERT(clk, rst, !(p_pop && q_pp == q_ip), "velo_rma_init: packetiser popped a put the issuer is not done with")
    `VELO_ASSERT(clk, rst, !(i_alloc && c_get && gq_used == TAGS[QB-1:0]), "velo_rma_init: get queue written full")
    `VELO_ASSERT(clk, rst, !(g_pop && gq_used == {QB{1'b0}}), "velo_rma_init: get queue read empty")
    // the byte aligner holds at most 16 bytes
    `VELO_ASSERT(clk, rst, al_cnt <= 5'd16, "velo_rma_init: byte aligner holds more than 16 bytes")

    assign busy = (t_busy != {TAGS{1'b0}}) || (i_st != I_IDLE) || n_valid || !r_idle;
    assign idle = !busy && (p_st == P_IDLE) && !g_act && !pkt_valid && !lk_busy && (q_pp == q_wp) &&
                  (q_ip == q_wp) && (gq_rp == gq_wp) && !s_fin && !ev_cmd && (ev_tx_bytes == 8'd0) && !ev_err &&
                  r_quiet;

    wire unused_ok = &{1'b0, c0, row_issue, row_issue_head, row_rsp, row_rsp_hdr, row_get, node_id};
endmodule
`default_nettype wire
