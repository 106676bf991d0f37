// The ports of velo_rb_vpid besides the register bus, which velo_regfile has too: the mailbox table
// port of the completer (velo_completer).
// Stands in a port list (every line ends with a comma).
    // the queue table port (velo_ports.vh, included before): a row, the write pointer updates and
    // software's writes of a row or read pointer
    `VELO_QTBL_TABLE_PORTS(VPID_BITS),
