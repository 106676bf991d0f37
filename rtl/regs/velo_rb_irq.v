// Register block IRQ and its behaviour: the mailbox interrupts.
//
// The arm bits live in a one-bit-wide RAM (a vpid each) with a read port of its own; the completer
// reports every committed entry (its last TLP accepted upstream) with its vpid, the arm bit is read
// in that cycle and, if set, cleared in the next one, where the vpid's PENDING bit is set and the
// interrupt requested. A write of the arm bit in the cycle it is read is forwarded. The decision's
// clear has the write port: a software write of the arm bit (ARM sets, any MB_CFG write clears)
// waits a cycle behind it (WWAIT). The pending bitmap (IRQ_PENDING) is a small RAM of 32-bit
// words with asynchronous reads (distributed RAM; flip-flops where there is none), updated by
// read-modify-write: an entry sets its bit, a software write-1-to-clear of the same word in the
// same cycle is merged into that write (the entry's bit stays set), one of another word waits a
// cycle. Both are cleared by the table clear after reset.
//
// idle (for the register file's clock gate in simulation, docs/simulator.md): no commit in the
// pipeline (c_v) and no interrupt requested (irq_valid). At rest the block's registers and RAMs
// change only with a register access, a commit (cmt_valid) or reset.
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
`include "velo_rb.vh"
module velo_rb_irq #(
    parameter integer VPID_BITS = 8,  // vpid width: 2^VPID_BITS arm and pending bits (spec range)
    parameter [20:0]  NEXT      = `VELO_BLK_IRQ_NEXT,  // IRQ.NEXT: the spec's, or 0 (the last block; checked in velo_rb_hdr)
    parameter integer PIPE      = 0   // 1: the decodes are registered (the front waits a cycle)
) (
    // an MB_CFG write of this vpid is asked for (velo_rb_vpid): it disarms the vpid
    input  wire                 mbcfg_wr,
    input  wire [VPID_BITS-1:0] mbcfg_vpid,
    // an entry for cmt_vpid was committed (its last TLP accepted upstream), and the interrupt
    // request (valid/ready; held until taken)
    input  wire                 cmt_valid,
    input  wire [VPID_BITS-1:0] cmt_vpid,
    output reg                  irq_valid,
    input  wire                 irq_ready,
    output wire                 idle,
    `VELO_RB_PORTS  // clk, rst and the register bus (velo_rb.vh)
);
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK_PIPE
    localparam integer NV  = 1 << VPID_BITS;
    localparam integer NPW = (NV + 31) / 32;                   // words of the pending bitmap
    localparam integer PWA = (NPW > 1) ? $clog2(NPW) : 1;      // pending word address width
    localparam [20:0]  PND_LO = `VELO_TBL_IRQ_PENDING_BASE;

    wire        irq_en;      // CTRL.ENABLE
    reg  [31:0] irq_count;   // COUNT
    wire        count_we, arm_wr;
    wire [20:0] addr   = `VELO_RB_ADDR(rb_req);
    wire [31:0] wd     = `VELO_RB_WDATA(rb_req);
    wire        init   = `VELO_RB_INIT(rb_req);
    wire        arm_ok = (wd >> VPID_BITS) == 32'd0;  // an ARM value names a vpid
    wire [`VELO_RB_RSP_W-1:0] r_rsp;
    localparam [31:0] NPW32 = NPW;
    velo_rb_irq_regs #(.PIPE(PIPE), .NEXT(NEXT), .PENDING_WORDS(NPW32)) u_regs (
        .clk(clk), .rst(rst), .rb_req(rb_req), .rb_rsp(r_rsp), .ctrl_enable(irq_en), .arm_wr(arm_wr),
        .arm_ok(arm_ok), .count(irq_count), .count_we(count_we));

    wire in_pnd;
    velo_rb_range #(.LO(PND_LO), .HI({11'd0, PND_LO} + NPW * 4), .PIPE(PIPE)) u_dpnd (
        .clk(clk), .rst(rst), .rb_req(rb_req), .hit(in_pnd));
    wire [20:0]    pnd_off = addr - PND_LO;
    wire [PWA-1:0] pnd_w   = pnd_off[2 +: PWA];   // pending word
    wire           unused_po = &{1'b0, pnd_off};
    reg  [31:0]    pnd_mem [0:(1<<PWA)-1];        // the pending bitmap
    wire [31:0]    pnd_rd  = pnd_mem[pnd_w];

    // ---------------------------------------------------------------- arm bits
    reg                 c_v;      // an entry was committed last cycle: its arm bit is on r_arm
    reg [VPID_BITS-1:0] c_vpid;
    reg                 fw_v;     // the arm bit of c_vpid was written in the cycle it was read ...
    reg                 fw_d;     // ... with this value
    wire                r_arm;
    wire c_hit      = c_v && (fw_v ? fw_d : r_arm);   // the entry consumes the arm
    wire arm_sw_set = arm_wr && arm_ok;
    wire arm_sw_clr = mbcfg_wr;                       // every MB_CFG write disarms
    wire arm_busy   = c_hit && (arm_sw_set || arm_sw_clr);
    wire arm_we     = init || c_hit || arm_sw_set || arm_sw_clr;
    wire [VPID_BITS-1:0] arm_wa = init ? `VELO_RB_INIT_IDX(rb_req, VPID_BITS) :
                                  c_hit ? c_vpid : (arm_sw_set ? wd[VPID_BITS-1:0] : mbcfg_vpid);
    wire arm_wd     = !init && !c_hit && arm_sw_set;
    velo_sdp_ram #(.W(1), .ADDR_W(VPID_BITS)) u_arm (
        .clk(clk), .we(arm_we), .waddr(arm_wa), .wdata(arm_wd),
        .re(cmt_valid), .raddr(cmt_vpid), .rdata(r_arm));

    always @(posedge clk) begin
        if (rst) begin
            c_v  <= 1'b0;
            fw_v <= 1'b0;
        end else begin
            c_v <= cmt_valid && !init;
            if (cmt_valid) fw_v <= arm_we && (arm_wa == cmt_vpid);
        end
    end
    // data of the commit pipeline (used only with c_v)
    always @(posedge clk) begin
        if (cmt_valid) begin
            c_vpid <= cmt_vpid;
            fw_d   <= arm_wd;
        end
    end

    // ---------------------------------------------------------------- pending bitmap
    // the entry's bit, merged with a software clear of the same word; a clear of another word
    // waits (pnd_busy)
    wire [7:0]     c_v8    = {{(8-VPID_BITS){1'b0}}, c_vpid};
    wire [PWA-1:0] c_word  = c_v8[5 +: PWA];
    wire [31:0]    c_bit   = 32'd1 << c_v8[4:0];
    wire           unused_cv = &{1'b0, c_v8};
    wire           pnd_sw  = `VELO_RB_WR_EN(rb_req) && in_pnd;
    wire           pnd_busy = c_hit && pnd_sw && (c_word != pnd_w);
    wire           pnd_swgo = pnd_sw && !pnd_busy;
    wire           pnd_we  = init || c_hit || pnd_swgo;
    wire [PWA-1:0] pnd_wa  = init ? `VELO_RB_INIT_IDX(rb_req, PWA) : (c_hit ? c_word : pnd_w);
    wire [31:0]    pnd_old = pnd_mem[pnd_wa];
    wire [31:0]    pnd_new = init ? 32'd0 : ((pnd_old & ~(pnd_swgo ? wd : 32'd0)) | (c_hit ? c_bit : 32'd0));
    always @(posedge clk) begin
        if (pnd_we) pnd_mem[pnd_wa] <= pnd_new;
    end

    // ---------------------------------------------------------------- request and COUNT
    // a new request for an entry's bit unless one is outstanding (then the bit just waits)
    wire irq_hold  = irq_valid && !irq_ready;
    wire irq_raise = c_hit && irq_en;
    always @(posedge clk) begin
        if (rst) begin
            irq_count <= 32'd0;
            irq_valid <= 1'b0;
        end else begin
            irq_valid <= irq_hold || irq_raise;
            if (count_we)                    irq_count <= 32'd0;  // a write clear wins
            else if (irq_raise && !irq_hold) irq_count <= irq_count + 32'd1;
        end
    end

`ifdef VERILATOR
    assign idle = !c_v && !irq_valid;
`else
    assign idle = 1'b0;  // used by the clock gate under Verilator only
`endif

    // the block's answer: its registers', or the pending bitmap's (a write waits while the entry's
    // arm or pending update has the port)
    assign rb_rsp = r_rsp | `VELO_RB_RSP(in_pnd ? pnd_rd : 32'd0, in_pnd, 1'b0, 1'b0, arm_busy || pnd_busy);
endmodule
`default_nettype wire
