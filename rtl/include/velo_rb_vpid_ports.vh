// The ports of velo_rb_vpid besides the register bus, which velo_regfile has too: the mailbox table
// port of the completer (velo_completer).
// Stands in a port list (every line ends with a comma).
    input  wire                 tbl_re,
    input  wire [VPID_BITS-1:0] tbl_vpid,
    output wire [57:0]          tbl_base,
    output wire                 tbl_en,
    output wire [4:0]           tbl_log2,
    output wire [16:0]          tbl_wp,
    output wire [16:0]          tbl_rp,
    input  wire                 wp_we,
    input  wire [VPID_BITS-1:0] wp_vpid,
    input  wire [16:0]          wp_data,
    output wire                 sw_wr,        // software wrote the table or read pointer of ...
    output wire [VPID_BITS-1:0] sw_wr_vpid,   // ... this vpid
