// Header of a DMA memory write on the TLP stream (spec format TLP_HDR): a 3DW header for an
// address below 4 GiB, else 4DW; all byte enables set (a whole number of DWs at a DW-aligned
// address). Combinational; shared by the units that write host memory.
`default_nettype none
`include "velo_spec.vh"
module velo_mwr_hdr (
    input  wire [63:0]  addr,    // byte address of the first DW (bits 1:0 ignored)
    input  wire [9:0]   len_dw,  // payload length in DW (2 or more: LAST_BE is set)
    input  wire [15:0]  req_id,  // our requester id
    output reg  [127:0] hdr
);
    wire w64 = (addr[63:32] != 32'd0);
    always @(*) begin
        hdr = 128'd0;
        hdr[`VELO_TLP_HDR_FMT_TYPE] = w64 ? `VELO_TLP_FMT_TYPE_MWR64 : `VELO_TLP_FMT_TYPE_MWR32;
        hdr[`VELO_TLP_HDR_LENGTH]   = len_dw;
        hdr[`VELO_TLP_HDR_FIRST_BE] = 4'hF;
        hdr[`VELO_TLP_HDR_LAST_BE]  = 4'hF;
        hdr[`VELO_TLP_HDR_REQ_ID]   = req_id;
        if (w64) begin
            hdr[`VELO_TLP_HDR_ADDR64_HI] = addr[63:32];
            hdr[`VELO_TLP_HDR_ADDR64_LO] = addr[31:2];
        end else begin
            hdr[`VELO_TLP_HDR_ADDR32] = addr[31:2];
        end
    end

    wire unused_ok = &{1'b0, addr[1:0]};
endmodule
`default_nettype wire
