// The ports of velo_rb_front besides the register bus, which velo_regfile has too: the BAR0 TLPs
// in, the completions out. Stands in a port list (every line ends with a comma).
    input  wire [15:0]          cpl_id,       // our completer id (bus/device/function)
    // TLP stream in: BAR0 writes and every non-posted request
    input  wire                 in_valid,
    output wire                 in_ready,
    input  wire                 in_sop,
    input  wire                 in_eop,
    // TC, attributes, digest and the address bits above BAR0's size are of no use here.
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [127:0]         in_hdr,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [2:0]           in_bar,
    // register writes carry at most 2 DW (the low 64 bits of the first beat)
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [TLP_W-1:0]     in_data,
    /* verilator lint_on UNUSEDSIGNAL */
    // completions out (single beat)
    output wire                 cpl_valid,
    input  wire                 cpl_ready,
    output wire                 cpl_sop,
    output wire                 cpl_eop,
    output wire [127:0]         cpl_hdr,
    output wire [TLP_W-1:0]     cpl_data,
