// Port bundles that several modules declare alike, one definition each (issue 19). A macro
// stands in a module's port list for its ports, without the comma that follows it:
//     `VELO_DMARD_CLIENT_PORTS(TAG_BITS),
// Its ports keep their names (rq_valid, rd_data, ...), so the module's body and its instances
// read as before; the comments below say what each port means. Widths are given as arguments
// (parameters of the module that uses the macro).
//
// The matching connections of an instance whose parent uses the same names (a unit handing a
// bundle of its own ports to a sub-unit, or a result broadcast to several sub-units) are the
// *_CONNECT macros, again without the comma that follows.
`ifndef VELO_PORTS_VH
`define VELO_PORTS_VH

// ---------------------------------------------------------------- DMA reads (velo_dma_rd)
// `VELO_DMARD_REQ_PORTS(CTX_W): a client's read requests to velo_dma_rd (or velo_rma_rdmux):
//   rq_valid (out), rq_ready (in): handshake; rq_addr (out, 64): host byte address;
//   rq_len_m1 (out, 12): length - 1 (1..4096 bytes); rq_ctx (out, CTX_W): the caller's context,
//   returned with every beat of the request (rd_ctx).
`define VELO_DMARD_REQ_PORTS(CTX_W) \
    output wire             rq_valid, \
    input  wire             rq_ready, \
    output wire [63:0]      rq_addr, \
    output wire [11:0]      rq_len_m1, \
    output wire [CTX_W-1:0] rq_ctx

// `VELO_DMARD_DATA_PORTS(CTX_W): the read data a client takes from velo_dma_rd, 64-bit beats in
// request order (byte A of a request in lane A mod 8):
//   rd_valid (in), rd_ready (out): handshake; rd_data (in, 64); rd_be (in, 8): valid bytes of the
//   beat (0 on an error beat); rd_last (in): the request's last beat; rd_err (in): the request
//   failed (an error beat, with rd_last); rd_ctx (in, CTX_W): the request's rq_ctx.
`define VELO_DMARD_DATA_PORTS(CTX_W) \
    input  wire             rd_valid, \
    output wire             rd_ready, \
    input  wire [63:0]      rd_data, \
    input  wire [7:0]       rd_be, \
    input  wire             rd_last, \
    input  wire             rd_err, \
    input  wire [CTX_W-1:0] rd_ctx

// `VELO_DMARD_CLIENT_PORTS(CTX_W): both, a client that issues reads and takes their data.
`define VELO_DMARD_CLIENT_PORTS(CTX_W) `VELO_DMARD_REQ_PORTS(CTX_W), `VELO_DMARD_DATA_PORTS(CTX_W)

// `VELO_DMARD_REQ_CONNECT, `VELO_DMARD_DATA_CONNECT: the same ports, to the parent's of the same name.
`define VELO_DMARD_REQ_CONNECT \
    .rq_valid(rq_valid), .rq_ready(rq_ready), .rq_addr(rq_addr), .rq_len_m1(rq_len_m1), .rq_ctx(rq_ctx)
`define VELO_DMARD_DATA_CONNECT \
    .rd_valid(rd_valid), .rd_ready(rd_ready), .rd_data(rd_data), .rd_be(rd_be), .rd_last(rd_last), \
    .rd_err(rd_err), .rd_ctx(rd_ctx)

// ---------------------------------------------------------------- ATU (velo_atu), shared by sub-units
// A unit (velo_rma_init, velo_rma_tgt) shares its ATU port between sub-units: each asks for a
// lookup, the unit grants one at a time and hands the ATU's response to the sub-unit it belongs to.
//
// `VELO_ATU_LOOKUP_PORTS: a sub-unit's lookup request:
//   lk_req (out): a lookup is wanted; lk_nla (out, 64): its NLA; lk_len (out, 24): its length in
//   bytes; lk_go (in): the unit passes the lookup to the ATU this cycle (lk_* taken).
`define VELO_ATU_LOOKUP_PORTS \
    output wire        lk_req, \
    output wire [63:0] lk_nla, \
    output wire [23:0] lk_len, \
    input  wire        lk_go

// `VELO_ATU_RESULT_PORTS: the ATU's response to that lookup, for the sub-unit that asked:
//   rs_go (in): the response is this sub-unit's and is taken this cycle; rs_err (in, 4): reason
//   (RMA_ERR_NONE: translated); rs_addr (in, 64): host address of the NLA; rs_room (in, 22):
//   bytes from there to the end of its page (the translation covers them).
`define VELO_ATU_RESULT_PORTS \
    input  wire        rs_go, \
    input  wire [3:0]  rs_err, \
    input  wire [63:0] rs_addr, \
    input  wire [21:0] rs_room

// `VELO_ATU_RESULT_CONNECT(GO): the response, broadcast from the unit's rs_* ports; GO says
// whose it is.
`define VELO_ATU_RESULT_CONNECT(GO) \
    .rs_go(GO), .rs_err(rs_err), .rs_addr(rs_addr), .rs_room(rs_room)

// `VELO_ATU_RELEASE_PORTS(REGION_W): a sub-unit gives a translation back (releases its region):
//   rel_req (out): a release is wanted; rel_region (out, REGION_W): the region of the lookup's
//   response (rs_region); rel_go (in): the unit passes the release to the ATU this cycle.
`define VELO_ATU_RELEASE_PORTS(REGION_W) \
    output wire                rel_req, \
    output wire [REGION_W-1:0] rel_region, \
    input  wire                rel_go

// ---------------------------------------------------------------- queue tables (velo_rb_qtable)
// A per-vpid queue table of the register file (the mailbox table, the notification queue table)
// and the unit that writes the queue (velo_completer, velo_rma_notify) meet at one port, declared
// by both ends with the same names: the writer reads a row and writes the write pointer back.
//
// `VELO_QTBL_PORTS(VPID_W, WR, TBL): that port; WR is the direction of the writer's signals and
// TBL of the table's (output and input in the writer, input and output in the table):
//   tbl_re (WR): read the row of tbl_vpid (WR, VPID_W); the table returns it the cycle after:
//   tbl_base (TBL, 58): the ring base, in 64-byte lines; tbl_en (TBL): the queue is enabled;
//   tbl_log2 (TBL, 5): CFG's LOG2 field (the ring size); tbl_wp, tbl_rp (TBL, 17): the write
//   pointer and the read pointer (software's, in the vpid's user page);
//   wp_we (WR): write wp_data (WR, 17) as the write pointer of wp_vpid (WR, VPID_W) (the writer
//   has priority over software on the table's ports);
//   sw_wr (TBL): software wrote the row or read pointer of sw_wr_vpid (TBL, VPID_W), the cycle
//   after the write landed.
`define VELO_QTBL_PORTS(VPID_W, WR, TBL) \
    WR  wire              tbl_re, \
    WR  wire [VPID_W-1:0] tbl_vpid, \
    TBL wire [57:0]       tbl_base, \
    TBL wire              tbl_en, \
    TBL wire [4:0]        tbl_log2, \
    TBL wire [16:0]       tbl_wp, \
    TBL wire [16:0]       tbl_rp, \
    WR  wire              wp_we, \
    WR  wire [VPID_W-1:0] wp_vpid, \
    WR  wire [16:0]       wp_data, \
    TBL wire              sw_wr, \
    TBL wire [VPID_W-1:0] sw_wr_vpid

// `VELO_QTBL_WRITER_PORTS(VPID_W): the port as the queue's writer declares it.
`define VELO_QTBL_WRITER_PORTS(VPID_W) `VELO_QTBL_PORTS(VPID_W, output, input)
// `VELO_QTBL_TABLE_PORTS(VPID_W): the port as the table declares it.
`define VELO_QTBL_TABLE_PORTS(VPID_W) `VELO_QTBL_PORTS(VPID_W, input, output)

// `VELO_QTBL_CONNECT: the same ports, to the parent's of the same name.
`define VELO_QTBL_CONNECT \
    .tbl_re(tbl_re), .tbl_vpid(tbl_vpid), .tbl_base(tbl_base), .tbl_en(tbl_en), .tbl_log2(tbl_log2), \
    .tbl_wp(tbl_wp), .tbl_rp(tbl_rp), .wp_we(wp_we), .wp_vpid(wp_vpid), .wp_data(wp_data), .sw_wr(sw_wr), \
    .sw_wr_vpid(sw_wr_vpid)

// ---------------------------------------------------------------- TLP stream (device-independent)
// `VELO_TLP_TX_CONNECT: a TLP stream output (tx_valid, tx_ready, tx_sop, tx_eop, tx_hdr,
// tx_data: the device-independent stream of rtl/host/, header fields VELO_TLP_HDR_* of
// velo_spec.vh) to the parent's of the same name.
`define VELO_TLP_TX_CONNECT \
    .tx_valid(tx_valid), .tx_ready(tx_ready), .tx_sop(tx_sop), .tx_eop(tx_eop), .tx_hdr(tx_hdr), .tx_data(tx_data)

`endif
