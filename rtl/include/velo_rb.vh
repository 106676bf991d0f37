// The register bus of the register file (rtl/regs/, docs/spec.md): velo_rb_front drives one request
// vector, every register block answers with one response vector, 0 outside its addresses, and the
// front takes them ORed (velo_regfile). A block's port list is its own ports, then VELO_RB_PORTS
// (clk, rst, rb_req, rb_rsp); the macros below name the fields.
//
// One DW at a time (the address, and the write data, stay until the DW is done):
//   write: WR_EN asks; while a block holds WWAIT the front waits, else the DW is done in this
//          cycle (WR_GO); WACK (some block takes the write) low then: a bad access, counted.
//   read:  RD_EN asks; a register RRAM does not name is read in this cycle (RDATA); one that RRAM
//          names lives in RAM: the block starts its read (RGO) when its port is free and the front
//          takes RDATA in the next cycle.
//   table clear: after reset INIT runs for 2^IW cycles, INIT_IDX counting up and WDATA 0: every
//          block writes it into row INIT_IDX of its tables.
`ifndef VELO_RB_VH
`define VELO_RB_VH
// what every register block uses besides: the spec's items and the checks
`include "velo_spec.vh"
`include "velo_check.vh"

// request {INIT_IDX, INIT, RD_EN, WR_GO, WR_EN, WDATA, ADDR}: ADDR the byte offset in BAR0 (DW
// aligned), INIT_IDX as wide as the widest table index (VELO_MAX_NODE_BITS, VELO_MAX_VPID_BITS: 8)
`define VELO_RB_IDX_W 8
`define VELO_RB_REQ_W 65
`define VELO_RB_REQ(ADDR, WDATA, WR_EN, WR_GO, RD_EN, INIT, INIT_IDX) {INIT_IDX, INIT, RD_EN, WR_GO, WR_EN, WDATA, ADDR}
`define VELO_RB_ADDR(Q)   Q[20:0]
`define VELO_RB_WDATA(Q)  Q[52:21]
`define VELO_RB_WR_EN(Q)  Q[53]
`define VELO_RB_WR_GO(Q)  Q[54]
`define VELO_RB_RD_EN(Q)  Q[55]
`define VELO_RB_INIT(Q)   Q[56]
// the low W bits of INIT_IDX (a table of 2^W rows)
`define VELO_RB_INIT_IDX(Q, W) Q[57 +: (W)]

// response {WWAIT, RGO, RRAM, WACK, RDATA}
`define VELO_RB_RSP_W 36
`define VELO_RB_RSP(RDATA, WACK, RRAM, RGO, WWAIT) {WWAIT, RGO, RRAM, WACK, RDATA}
`define VELO_RB_RSP_NONE 36'd0
`define VELO_RB_RDATA(R)  R[31:0]
`define VELO_RB_WACK(R)   R[32]
`define VELO_RB_RRAM(R)   R[33]
`define VELO_RB_RGO(R)    R[34]
`define VELO_RB_WWAIT(R)  R[35]
// the block answers the address (read data, a write taken, a read from RAM); WWAIT is left out:
// a block may hold a write of another block's address (velo_rb_irq, an MB_CFG write)
`define VELO_RB_ANSWERS(R) (|R[34:0])

// What every generated register block (rtl/regs/velo_rb_<block>_regs.v) has, written once (the
// hand-written blocks end their port lists with VELO_RB_PORTS too):
//   VELO_RB_PARAMS(B_NEXT) its parameters PIPE and NEXT (velo_rb_hdr's; B_NEXT the spec's NEXT),
//                          the first of its parameter list
//   VELO_RB_PORTS          its bus ports, the last of its port list
//   VELO_RB_HDR(B_BASE, B_NEXT, B_WR, B_CMD, B_OK)
//                          its velo_rb_hdr (BASE, SPEC_NEXT, WR, CMD and ok as there):
//                          declares sel, off, we, wreq and rd, the read data the block's mux gives
//   VELO_RB_READ(T, V)     opens the read mux (always block, rd = 0, a case of off while sel) with
//                          the header TYPE = T, VERSION = V and NEXT; the block's items follow
//   VELO_RB_READ_END(D)    ... and this closes it: rd = D for every other register (0, or a window)
`define VELO_RB_PARAMS(B_NEXT) \
    parameter integer PIPE = 0,     /* 1: the block select is registered (the front then waits a cycle) */ \
    parameter [20:0]  NEXT = B_NEXT /* NEXT as read: the spec's, or 0 (the last block) */
`define VELO_RB_PORTS \
    input  wire                      clk, \
    input  wire                      rst, \
    input  wire [`VELO_RB_REQ_W-1:0] rb_req, \
    output wire [`VELO_RB_RSP_W-1:0] rb_rsp
`define VELO_RB_HDR(B_BASE, B_NEXT, B_WR, B_CMD, B_OK) \
    wire        sel, we, wreq; \
    wire [5:0]  off; \
    reg  [31:0] rd; \
    velo_rb_hdr #(.BASE(B_BASE), .SPEC_NEXT(B_NEXT), .NEXT(NEXT), .WR(B_WR), .CMD(B_CMD), .PIPE(PIPE)) u_hdr ( \
        .clk(clk), .rst(rst), .rb_req(rb_req), .rb_rsp(rb_rsp), .sel(sel), .off(off), .we(we), .wreq(wreq), \
        .rd(rd), .ok(B_OK)); \
    wire        unused_hdr = &{1'b0, we, wreq};
`define VELO_RB_READ(B_TYPE, B_VERSION) \
    always @(*) begin \
        rd = 32'd0; \
        if (sel) case (off) \
            6'h00: rd = B_TYPE; \
            6'h01: rd = B_VERSION; \
            6'h02: rd = {11'd0, NEXT};
`define VELO_RB_READ_END(D) \
            default: rd = D; \
        endcase \
    end

`endif // VELO_RB_VH
