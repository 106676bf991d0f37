// The ports of velo_rb_rma besides the register bus, which velo_regfile has too: the RMA unit's
// control, the ATU table writes, the notification queue table port and the RMA counters.
// Stands in a port list (every line ends with a comma).
    // the unit: control and quiesce
    output wire                 rma_enable,   // CONTROL.ENABLE
    input  wire                 rma_busy,     // STATUS.BUSY
    output wire [REGION_BITS-1:0] rq_region,  // QUIESCE_REGION
    input  wire                 rq_busy,      // QUIESCE_STATUS.BUSY
    // ATU table writes (RMA_REGION, RMA_PTE)
    output wire                 acfg_valid,
    input  wire                 acfg_ready,
    output wire                 acfg_pte,
    output wire [15:0]          acfg_idx,
    output wire [`VELO_TBL_RMA_REGION_REG_W-1:0] acfg_reg,  // register index in the entry (byte offset / 4)
    output wire [31:0]          acfg_data,
    // notification queue table port of velo_rma_notify
    input  wire                 nq_re,
    input  wire [VPID_BITS-1:0] nq_vpid,
    output wire [57:0]          nq_base,
    output wire                 nq_en,
    output wire [4:0]           nq_log2,
    output wire [16:0]          nq_wp,
    output wire [16:0]          nq_rp,
    input  wire                 nq_wp_we,
    input  wire [VPID_BITS-1:0] nq_wp_vpid,
    input  wire [16:0]          nq_wp_data,
    output wire                 nq_sw_wr,     // software wrote the queue table row or NQ_RP of ...
    output wire [VPID_BITS-1:0] nq_sw_wr_vpid,// ... this vpid
    // RMA counters (read combinationally, cleared by a write)
    output wire [4:0]           rcnt_idx,
    input  wire [31:0]          rcnt_data,
    output wire                 rcnt_clr,
    output wire [4:0]           rcnt_clr_idx,
