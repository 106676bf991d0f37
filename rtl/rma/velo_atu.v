// RMA address translation unit: network logical address (region, key, offset) -> physical address.
//
// Tables (written by the driver through the register file, cfg_* port, one 32-bit register per
// cycle): the region table (RMA_REGION: RG_CFG, RG_PTE, RG_START, RG_LEN_LO, RG_LEN_HI, RG_KEY and
// the RMA_SCOPE_BOXES scope boxes RG_SCOPE..RG_SCOPE3; one block RAM per register) and the page
// table (RMA_PTE: PTE_LO, PTE_HI, page frame numbers). After reset the unit clears every RG_CFG
// and in-use counter and empties every scope box (2^REGION_BITS cycles, cfg_ready and lk_ready low).
//
// Lookup (valid/ready, one per cycle): NLA, length, vpid, node, bits 31:8 of the key and access
// kind. For local kinds the vpid is the issuing vpid (the node and the key bits 31:8 are not
// looked at: the owner check authorises them); for remote kinds vpid and node are the initiator's
// (SRC_VPID, SRC_NODE of the request packet) and the key bits 31:8 come from its RMA_PKT_LEN word.
// Checked in this order, the first failure is the reason (RMA_ERR_*): BAD_HANDLE (region index
// beyond the table, not ALLOC, NLA KEY != RG_KEY bits 7:0; remote kinds also: key bits 31:8 !=
// RG_KEY bits 31:8, or the initiator (node, vpid) in none of the region's scope boxes: a box
// admits node in [NODE_LO, NODE_HI] and vpid in [VPID_LO, VPID_HI], a box with LO > HI nobody;
// so a foreign initiator learns nothing from the reason), NOT_OWNER (local kinds only: vpid !=
// OWNER_VPID), PERM, RANGE (offset + length past the region's length), NOT_VALID (VALID = 0). On
// success the response carries the physical address of the first byte, the bytes left to the end
// of its page (4 KiB or 2 MiB), the region (to release it) and the owner vpid; on failure only the
// reason, the region and the tag.
//
// Pipeline: stage A holds the request and the region entry (RAM read in the accept cycle) and makes
// the checks (the key and the four scope box comparisons too, in parallel with the others: no
// extra cycle); a successful lookup increments the region's in-use counter as it leaves stage A
// and reads its page table entry; stage B holds the result and presents it with the page table
// data.
//
// In-use counts (quiesce for the driver's invalidation, docs/rma.md §2.3): the user gives every
// successful translation back with rel_valid/rel_region when it no longer uses it. The counts are
// kept per region, exactly, in IU_SLOTS entries {region, count} (a small CAM: an entry is in use
// while its count is not 0), so q_busy is 1 while q_region has a translation held or a lookup of
// q_region sits in stage A (it may have read the region entry before the driver's write and is
// not counted yet), and 0 as soon as the region's own translations are given back, however busy
// other regions are. (Counters shared by the regions with the same low index bits made the status
// conservative: a region that shared its counter with one streaming a long transfer never read
// quiet, its deregistration timed out and its pages stayed pinned.) A lookup waits while its
// region's count is saturated, for one cycle when another region is released in its cycle, and
// while all IU_SLOTS entries hold other regions (they are given back whatever the lookups do, so
// the wait ends). A release of a region without a translation held changes nothing and is
// reported (ev_rel_underflow: a bug of the user).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
module velo_atu #(
    parameter integer REGION_BITS = 8,   // region index width (spec param RMA_REGION_BITS), 1..12
    parameter integer PTE_BITS    = 12,  // page table index width (spec param RMA_PTE_BITS), 4..16
    parameter integer VPID_BITS   = 8,   // vpid width (spec param VPID_BITS), 1..8
    parameter integer NODE_BITS   = 8,   // node id width (spec param NODE_BITS), 1..8
    parameter integer TAG_W       = 8,   // width of the opaque tag passed from lookup to response, >= 1
    parameter integer INUSE_W     = 6,   // in-use counter width: up to 2^INUSE_W-1 translations per region, >= 1
    parameter integer IU_SLOTS    = 16   // regions with translations held at once (a lookup of one more waits), >= 1
) (
    input  wire                   clk,
    input  wire                   rst,        // synchronous, active high
    // table writes (register file): RMA_REGION (cfg_pte = 0) or RMA_PTE (cfg_pte = 1) entry cfg_idx,
    // register cfg_reg (byte offset in the entry / 4); writes to indexes beyond the tables are ignored
    input  wire                   cfg_valid,
    output wire                   cfg_ready,  // low while the tables are being cleared after reset
    input  wire                   cfg_pte,
    input  wire [15:0]            cfg_idx,
    input  wire [`VELO_TBL_RMA_REGION_REG_W-1:0] cfg_reg,
    input  wire [31:0]            cfg_data,
    // lookup
    input  wire                   lk_valid,
    output wire                   lk_ready,
    input  wire [63:0]            lk_nla,     // format RMA_NLA
    input  wire [23:0]            lk_len,     // bytes from the NLA that must lie inside the region
    input  wire [VPID_BITS-1:0]   lk_vpid,    // local kinds: the issuing vpid; remote: the initiator's
    input  wire [NODE_BITS-1:0]   lk_node,    // remote kinds: the initiator's node (local: not used)
    input  wire [23:0]            lk_key_hi,  // remote kinds: key bits 31:8 (RMA_PKT_LEN KEY_HI; local: not used)
    input  wire [1:0]             lk_kind,    // RMA_ACC_*
    input  wire [TAG_W-1:0]       lk_tag,     // returned with the response
    // response
    output wire                   rs_valid,
    input  wire                   rs_ready,
    output wire [3:0]             rs_err,     // RMA_ERR_* (0: translated)
    output wire [63:0]            rs_addr,    // physical address of the first byte (0 on error)
    output wire [21:0]            rs_room,    // bytes from rs_addr to the end of its page (0 on error)
    output wire [REGION_BITS-1:0] rs_region,  // region to release (a translation is held iff rs_err = 0)
    output wire [VPID_BITS-1:0]   rs_owner,   // the region's owner vpid (0 on error)
    output wire [TAG_W-1:0]       rs_tag,
    // release of a translation (always accepted)
    input  wire                   rel_valid,
    input  wire [REGION_BITS-1:0] rel_region,
    // quiesce status (RMA.QUIESCE_REGION / QUIESCE_STATUS)
    input  wire [REGION_BITS-1:0] q_region,
    output wire                   q_busy,
    // at rest (table initialised, no lookup in the pipeline, no event pending): with no valid input
    // (lk_valid, rel_valid, cfg_valid) no register changes (velo_rma gates its clock in simulation)
    output wire                   idle,
    // events (one-cycle pulses)
    output reg                    ev_rel_underflow,
    output reg                    ev_cfg_bad   // a table write beyond the tables or registers
);
    `VELO_CHECK(g_check_region_bits, REGION_BITS >= 1 && REGION_BITS <= 12, "velo_atu: REGION_BITS must be 1..12")
    `VELO_CHECK(g_check_pte_bits, PTE_BITS >= 4 && PTE_BITS <= 16, "velo_atu: PTE_BITS must be 4..16")
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK_NODE_BITS
    `VELO_CHECK(g_check_tag_w, TAG_W >= 1, "velo_atu: TAG_W must be at least 1")
    `VELO_CHECK(g_check_inuse_w, INUSE_W >= 1, "velo_atu: INUSE_W must be at least 1")
    `VELO_CHECK(g_check_iu_slots, IU_SLOTS >= 1, "velo_atu: IU_SLOTS must be at least 1")

    localparam [INUSE_W-1:0] IU_MAX = {INUSE_W{1'b1}};

    // ---------------------------------------------------------------- reset sweep
    reg                   init;
    reg [REGION_BITS-1:0] init_idx;
    always @(posedge clk) begin
        if (rst) begin
            init     <= 1'b1;
            init_idx <= {REGION_BITS{1'b0}};
        end else if (init) begin
            init_idx <= init_idx + 1'b1;
            if (init_idx == {REGION_BITS{1'b1}}) init <= 1'b0;
        end
    end
    assign cfg_ready = !init;

    // ---------------------------------------------------------------- table writes
    wire cfg_fire = cfg_valid && !init;
    wire rg_idx_ok  = (cfg_idx >> REGION_BITS) == 16'd0;
    wire pte_idx_ok = (cfg_idx >> PTE_BITS) == 16'd0;
    wire w_rg   = cfg_fire && !cfg_pte && rg_idx_ok;
    wire w_pte  = cfg_fire && cfg_pte && pte_idx_ok;
    // register index in the entry (byte offset / 4)
    localparam integer RW = `VELO_TBL_RMA_REGION_REG_W;  // register index bits (spec stride / 4)
    localparam integer NBOX = `VELO_RMA_SCOPE_BOXES;     // scope boxes per region (spec)
    localparam [20:0] O_CFG = `VELO_TBL_RMA_REGION_RG_CFG, O_PTE = `VELO_TBL_RMA_REGION_RG_PTE,
                      O_START = `VELO_TBL_RMA_REGION_RG_START, O_LENLO = `VELO_TBL_RMA_REGION_RG_LEN_LO,
                      O_LENHI = `VELO_TBL_RMA_REGION_RG_LEN_HI, O_KEY = `VELO_TBL_RMA_REGION_RG_KEY,
                      O_SCOPE = `VELO_TBL_RMA_REGION_RG_SCOPE, O_SCOPE1 = `VELO_TBL_RMA_REGION_RG_SCOPE1,
                      O_SCOPE2 = `VELO_TBL_RMA_REGION_RG_SCOPE2, O_SCOPE3 = `VELO_TBL_RMA_REGION_RG_SCOPE3,
                      O_PFLO = `VELO_TBL_RMA_PTE_PTE_LO, O_PFHI = `VELO_TBL_RMA_PTE_PTE_HI;
    localparam [RW-1:0] R_CFG = O_CFG[RW+1:2], R_PTE = O_PTE[RW+1:2], R_START = O_START[RW+1:2],
                        R_LENLO = O_LENLO[RW+1:2], R_LENHI = O_LENHI[RW+1:2], R_KEY = O_KEY[RW+1:2],
                        R_SCOPE = O_SCOPE[RW+1:2], R_PFLO = O_PFLO[RW+1:2], R_PFHI = O_PFHI[RW+1:2];
    localparam [RW-1:0] R_SCOPE_LAST = R_SCOPE + NBOX[RW-1:0] - 1'b1;
    // the boxes are consecutive registers RG_SCOPE .. RG_SCOPE + NBOX - 1 (box b at R_SCOPE + b)
    `VELO_CHECK(g_check_nbox, NBOX == 4 && O_SCOPE1 == O_SCOPE + 4 && O_SCOPE2 == O_SCOPE + 8 && O_SCOPE3 == O_SCOPE + 12, "velo_atu: the spec's scope boxes are not RMA_SCOPE_BOXES = 4 consecutive registers RG_SCOPE..RG_SCOPE3")
    `VELO_CHECK(g_check_rw, RW >= 1 && (1 << (RW + 2)) == `VELO_TBL_RMA_REGION_STRIDE && O_SCOPE3 < `VELO_TBL_RMA_REGION_STRIDE, "velo_atu: the spec's RMA_REGION stride is not 4 << REG_W or RG_SCOPE3 lies outside it")
    wire we_cfg   = init || (w_rg && cfg_reg == R_CFG);
    wire we_first = w_rg && cfg_reg == R_PTE;
    wire we_start = w_rg && cfg_reg == R_START;
    wire we_lenlo = w_rg && cfg_reg == R_LENLO;
    wire we_lenhi = w_rg && cfg_reg == R_LENHI;
    wire we_key   = w_rg && cfg_reg == R_KEY;
    wire we_pflo  = w_pte && cfg_reg == R_PFLO;
    wire we_pfhi  = w_pte && cfg_reg == R_PFHI;
    wire [REGION_BITS-1:0] rg_wa = init ? init_idx : cfg_idx[REGION_BITS-1:0];
    // RG_CFG as stored: {OWNER_VPID, PERM_RW, PERM_RR, PERM_LW, PERM_LR, PAGE_2M, VALID, ALLOC}
    wire [14:0] cfg_w = init ? 15'd0 :
        {cfg_data[`VELO_TBL_RMA_REGION_RG_CFG_OWNER_VPID],
         cfg_data[`VELO_TBL_RMA_REGION_RG_CFG_PERM_RW], cfg_data[`VELO_TBL_RMA_REGION_RG_CFG_PERM_RR],
         cfg_data[`VELO_TBL_RMA_REGION_RG_CFG_PERM_LW], cfg_data[`VELO_TBL_RMA_REGION_RG_CFG_PERM_LR],
         cfg_data[`VELO_TBL_RMA_REGION_RG_CFG_PAGE_2M], cfg_data[`VELO_TBL_RMA_REGION_RG_CFG_VALID],
         cfg_data[`VELO_TBL_RMA_REGION_RG_CFG_ALLOC]};

    always @(posedge clk) begin
        if (rst) ev_cfg_bad <= 1'b0;
        else     ev_cfg_bad <= cfg_fire && (cfg_pte ? (!pte_idx_ok || cfg_reg > R_PFHI)
                                                    : (!rg_idx_ok || cfg_reg > R_SCOPE_LAST));
    end

    // ---------------------------------------------------------------- accept, region read
    reg                   a_valid;
    wire                  a_go;
    assign lk_ready = !init && (!a_valid || a_go);
    wire acc = lk_valid && lk_ready;
    wire [15:0] lk_region16 = lk_nla[`VELO_RMA_NLA_REGION];
    wire [REGION_BITS-1:0] rd_region = lk_region16[REGION_BITS-1:0];

    wire [14:0]          r_cfg;
    wire [31:0]          r_key;
    wire [32*NBOX-1:0]   r_scope;     // box b at bits 32b+31:32b (format RG_SCOPE)
    wire [PTE_BITS-1:0]  r_first;
    wire [20:0]          r_start;
    wire [31:0]          r_lenlo;
    wire [7:0]           r_lenhi;
    velo_sdp_ram #(.W(15), .ADDR_W(REGION_BITS)) u_cfg (
        .clk(clk), .we(we_cfg), .waddr(rg_wa), .wdata(cfg_w), .re(acc), .raddr(rd_region), .rdata(r_cfg));
    velo_sdp_ram #(.W(PTE_BITS), .ADDR_W(REGION_BITS)) u_first (
        .clk(clk), .we(we_first), .waddr(rg_wa), .wdata(cfg_data[PTE_BITS-1:0]), .re(acc), .raddr(rd_region),
        .rdata(r_first));
    velo_sdp_ram #(.W(21), .ADDR_W(REGION_BITS)) u_start (
        .clk(clk), .we(we_start), .waddr(rg_wa), .wdata(cfg_data[`VELO_TBL_RMA_REGION_RG_START_START]),
        .re(acc), .raddr(rd_region), .rdata(r_start));
    velo_sdp_ram #(.W(32), .ADDR_W(REGION_BITS)) u_lenlo (
        .clk(clk), .we(we_lenlo), .waddr(rg_wa), .wdata(cfg_data), .re(acc), .raddr(rd_region), .rdata(r_lenlo));
    velo_sdp_ram #(.W(8), .ADDR_W(REGION_BITS)) u_lenhi (
        .clk(clk), .we(we_lenhi), .waddr(rg_wa), .wdata(cfg_data[`VELO_TBL_RMA_REGION_RG_LEN_HI_LEN_HI]),
        .re(acc), .raddr(rd_region), .rdata(r_lenhi));
    // RG_KEY and the scope boxes: written by the driver only while the region is not ALLOC; the key
    // is not cleared after reset, the boxes are emptied (so a box software never wrote admits nobody)
    velo_sdp_ram #(.W(32), .ADDR_W(REGION_BITS)) u_key (
        .clk(clk), .we(we_key), .waddr(rg_wa), .wdata(cfg_data), .re(acc), .raddr(rd_region), .rdata(r_key));
    // an empty box: VPID_LO = NODE_LO = 0xFF > VPID_HI = NODE_HI = 0
    localparam [31:0] BOX_EMPTY = (32'hFF << `VELO_TBL_RMA_REGION_RG_SCOPE_VPID_LO_LSB) |
                                  (32'hFF << `VELO_TBL_RMA_REGION_RG_SCOPE_NODE_LO_LSB);
    genvar gb;
    generate
        for (gb = 0; gb < NBOX; gb = gb + 1) begin : g_box
            localparam integer R_BOX = {13'd0, O_SCOPE[20:2]} + gb;  // box gb: RG_SCOPE + 4 * gb (checked above)
            wire we_box = init || (w_rg && cfg_reg == R_BOX[RW-1:0]);
            velo_sdp_ram #(.W(32), .ADDR_W(REGION_BITS)) u_scope (
                .clk(clk), .we(we_box), .waddr(rg_wa), .wdata(init ? BOX_EMPTY : cfg_data), .re(acc),
                .raddr(rd_region), .rdata(r_scope[32*gb +: 32]));
        end
    endgenerate

    // ---------------------------------------------------------------- stage A: checks
    reg [REGION_BITS-1:0] a_region;
    reg                   a_oor;      // region index beyond the table
    reg [7:0]             a_key;      // NLA KEY (key bits 7:0)
    reg [23:0]            a_key_hi;   // key bits 31:8 (remote kinds)
    reg [NODE_BITS-1:0]   a_node;     // the initiator's node (remote kinds)
    reg [39:0]            a_off;
    reg [23:0]            a_len;
    reg [VPID_BITS-1:0]   a_vpid;
    reg [1:0]             a_kind;
    reg [TAG_W-1:0]       a_tag;

    wire       c_alloc = r_cfg[0];
    wire       c_valid = r_cfg[1];
    wire       c_2m    = r_cfg[2];
    wire [3:0] c_perm  = r_cfg[6:3];   // indexed by RMA_ACC_*: {RW, RR, LW, LR}
    wire [7:0] c_owner = r_cfg[14:7];
    wire [7:0] a_vpid8 = {{(8-VPID_BITS){1'b0}}, a_vpid};
    wire [7:0] a_node8 = {{(8-NODE_BITS){1'b0}}, a_node};
    wire       a_remote = a_kind[1];   // RMA_ACC_REMOTE_READ, RMA_ACC_REMOTE_WRITE

    // key and scope: local kinds compare the key's bits 7:0 only (the owner check authorises them),
    // remote kinds all 32 bits and the initiator's (node, vpid) against the scope boxes, all four in
    // parallel (an empty box, LO > HI, matches nobody by these comparisons)
    reg  [NBOX-1:0] in_box;
    reg  [31:0]     s_box;
    integer ib;
    always @(*) begin
        for (ib = 0; ib < NBOX; ib = ib + 1) begin
            s_box      = r_scope[32*ib +: 32];
            in_box[ib] = (a_node8 >= s_box[`VELO_TBL_RMA_REGION_RG_SCOPE_NODE_LO]) &&
                         (a_node8 <= s_box[`VELO_TBL_RMA_REGION_RG_SCOPE_NODE_HI]) &&
                         (a_vpid8 >= s_box[`VELO_TBL_RMA_REGION_RG_SCOPE_VPID_LO]) &&
                         (a_vpid8 <= s_box[`VELO_TBL_RMA_REGION_RG_SCOPE_VPID_HI]);
        end
    end
    wire       e_key_lo = (r_key[7:0] != a_key);
    wire       e_key_hi = (r_key[31:8] != a_key_hi);
    wire       e_scope  = (in_box == {NBOX{1'b0}});
    wire       e_handle = a_oor || !c_alloc || e_key_lo || (a_remote && (e_key_hi || e_scope));
    wire       e_owner  = !a_remote && (c_owner != a_vpid8);
    wire       e_perm   = !c_perm[a_kind];
    wire [40:0] a_end   = {1'b0, a_off} + {17'd0, a_len};
    wire       e_range  = a_end > {1'b0, r_lenhi, r_lenlo};
    wire       e_valid  = !c_valid;
    reg  [3:0] a_err;
    always @(*) begin
        if (e_handle)      a_err = `VELO_RMA_ERR_BAD_HANDLE;
        else if (e_owner)  a_err = `VELO_RMA_ERR_NOT_OWNER;
        else if (e_perm)   a_err = `VELO_RMA_ERR_PERM;
        else if (e_range)  a_err = `VELO_RMA_ERR_RANGE;
        else if (e_valid)  a_err = `VELO_RMA_ERR_NOT_VALID;
        else               a_err = `VELO_RMA_ERR_NONE;
    end
    wire a_ok = (a_err == `VELO_RMA_ERR_NONE);

    // address in the region's page run, page index, page table index
    wire [40:0] a_pa  = {20'd0, r_start} + {1'b0, a_off};
    wire [28:0] a_pg  = c_2m ? {9'd0, a_pa[40:21]} : a_pa[40:12];
    wire [PTE_BITS-1:0] a_pte = r_first + a_pg[PTE_BITS-1:0];

    // in-use counters: IU_SLOTS entries {region, count}, an entry in use while its count is not 0
    // (a small CAM: exact per region, without a counter for each of the 2^REGION_BITS regions)
    reg  [REGION_BITS-1:0] iu_rg  [0:IU_SLOTS-1];
    reg  [INUSE_W-1:0]     iu_cnt [0:IU_SLOTS-1];
    reg  [IU_SLOTS-1:0]    hit_a, hit_rel, hit_q, free_e;
    integer ie;
    always @(*) begin
        for (ie = 0; ie < IU_SLOTS; ie = ie + 1) begin
            free_e[ie]  = (iu_cnt[ie] == {INUSE_W{1'b0}});
            hit_a[ie]   = !free_e[ie] && (iu_rg[ie] == a_region);
            hit_rel[ie] = !free_e[ie] && (iu_rg[ie] == rel_region);
            hit_q[ie]   = !free_e[ie] && (iu_rg[ie] == q_region);
        end
    end
    // the entry a lookup of a_region counts in: its own, else the lowest free one
    reg  [IU_SLOTS-1:0] pick_free;
    always @(*) begin
        pick_free = {IU_SLOTS{1'b0}};
        for (ie = IU_SLOTS - 1; ie >= 0; ie = ie - 1)
            if (free_e[ie]) begin
                pick_free     = {IU_SLOTS{1'b0}};
                pick_free[ie] = 1'b1;
            end
    end
    wire [IU_SLOTS-1:0] e_a   = (hit_a != {IU_SLOTS{1'b0}}) ? hit_a : pick_free;
    wire                a_has = (hit_a != {IU_SLOTS{1'b0}});
    reg  [INUSE_W-1:0]  iu_a;
    always @(*) begin
        iu_a = {INUSE_W{1'b0}};
        for (ie = 0; ie < IU_SLOTS; ie = ie + 1)
            if (hit_a[ie]) iu_a = iu_cnt[ie];
    end
    wire rel_hit = (hit_rel != {IU_SLOTS{1'b0}});
    wire same   = rel_valid && (rel_region == a_region);
    // a lookup waits while its region's count is saturated, for one cycle when another region is
    // released (as with one counter write per cycle), and while every entry is in use by others
    wire full   = !a_has && (free_e == {IU_SLOTS{1'b0}});
    wire stall  = a_ok && ((iu_a == IU_MAX && !same) || (rel_valid && !same) || full);

    reg  b_valid;
    wire b_free = !b_valid || rs_ready;
    assign a_go = a_valid && b_free && !stall;
    wire inc = a_go && a_ok;

    // a release and an increment of the same region cancel; a release of a region without a
    // translation held is ignored
    wire rel_eff = rel_valid && rel_hit;
    always @(posedge clk) begin
        for (ie = 0; ie < IU_SLOTS; ie = ie + 1) begin
            if (init) begin
                iu_cnt[ie] <= {INUSE_W{1'b0}};
            end else if (inc && e_a[ie] && !(rel_eff && hit_rel[ie])) begin
                iu_cnt[ie] <= iu_cnt[ie] + 1'b1;
                iu_rg[ie]  <= a_region;
            end else if (rel_eff && hit_rel[ie] && !(inc && e_a[ie])) begin
                iu_cnt[ie] <= iu_cnt[ie] - 1'b1;
            end
        end
    end

    // simulation-only invariants (VELO_ASSERT, velo_check.vh): an in-use count never wraps, a
    // region is counted in one entry at most
    `VELO_ASSERT(clk, rst, !(!init && inc && !same && iu_a == IU_MAX), "velo_atu: an in-use counter wraps")
    `VELO_ASSERT(clk, rst, init || ((hit_a & (hit_a - 1'b1)) == {IU_SLOTS{1'b0}}), "velo_atu: a region in two entries")

    always @(posedge clk) begin
        if (rst) ev_rel_underflow <= 1'b0;
        else     ev_rel_underflow <= rel_valid && !init && !rel_hit;
    end

    always @(posedge clk) begin
        if (rst) a_valid <= 1'b0;
        else if (acc) a_valid <= 1'b1;
        else if (a_go) a_valid <= 1'b0;
    end
    always @(posedge clk) begin
        if (acc) begin
            a_region <= rd_region;
            a_oor    <= (lk_region16 >> REGION_BITS) != 16'd0;
            a_key    <= lk_nla[`VELO_RMA_NLA_KEY];
            a_key_hi <= lk_key_hi;
            a_node   <= lk_node;
            a_off    <= lk_nla[`VELO_RMA_NLA_OFFSET];
            a_len    <= lk_len;
            a_vpid   <= lk_vpid;
            a_kind   <= lk_kind;
            a_tag    <= lk_tag;
        end
    end

    // ---------------------------------------------------------------- stage B: page table
    wire [31:0] p_lo;
    wire [7:0]  p_hi;
    velo_sdp_ram #(.W(32), .ADDR_W(PTE_BITS)) u_pflo (
        .clk(clk), .we(we_pflo), .waddr(cfg_idx[PTE_BITS-1:0]), .wdata(cfg_data), .re(inc), .raddr(a_pte),
        .rdata(p_lo));
    velo_sdp_ram #(.W(8), .ADDR_W(PTE_BITS)) u_pfhi (
        .clk(clk), .we(we_pfhi), .waddr(cfg_idx[PTE_BITS-1:0]), .wdata(cfg_data[`VELO_TBL_RMA_PTE_PTE_HI_PFN_HI]),
        .re(inc), .raddr(a_pte), .rdata(p_hi));

    reg [3:0]             b_err;
    reg                   b_2m;
    reg [20:0]            b_low;
    reg [REGION_BITS-1:0] b_region;
    reg [VPID_BITS-1:0]   b_owner;
    reg [TAG_W-1:0]       b_tag;
    always @(posedge clk) begin
        if (rst) b_valid <= 1'b0;
        else if (a_go) b_valid <= 1'b1;
        else if (rs_ready) b_valid <= 1'b0;
    end
    always @(posedge clk) begin
        if (a_go) begin
            b_err    <= a_err;
            b_2m     <= c_2m;
            b_low    <= a_pa[20:0];
            b_region <= a_region;
            b_owner  <= a_ok ? c_owner[VPID_BITS-1:0] : {VPID_BITS{1'b0}};
            b_tag    <= a_tag;
        end
    end

    wire        b_ok  = (b_err == `VELO_RMA_ERR_NONE);
    wire [39:0] pfn   = {p_hi, p_lo};
    wire [51:0] pa4k  = {pfn, b_low[11:0]};
    wire [51:0] pa2m  = {pfn[39:9], b_low};
    wire [21:0] room4k = 22'd4096 - {10'd0, b_low[11:0]};
    wire [21:0] room2m = 22'h200000 - {1'b0, b_low};
    assign rs_valid  = b_valid;
    assign rs_err    = b_err;
    assign rs_addr   = b_ok ? {12'd0, b_2m ? pa2m : pa4k} : 64'd0;
    assign rs_room   = b_ok ? (b_2m ? room2m : room4k) : 22'd0;
    assign rs_region = b_region;
    assign rs_owner  = b_owner;
    assign rs_tag    = b_tag;

    // ---------------------------------------------------------------- quiesce
    assign q_busy = (hit_q != {IU_SLOTS{1'b0}}) || (a_valid && a_region == q_region);
    assign idle   = !init && !a_valid && !b_valid && !ev_rel_underflow && !ev_cfg_bad;

    wire unused_ok = &{1'b0, c_owner, lk_region16, cfg_data, a_pg, rel_region, q_region};
endmodule
`default_nettype wire
