// Interrupt adapter: the NIC's interrupt request (irq_valid/irq_ready, one vector) -> an MSI
// through the 7-series PCIe core's configuration interrupt interface (PG054, "Generating
// Interrupt Requests", MSI mode): hold cfg_interrupt high until the core answers with
// cfg_interrupt_rdy, then drop it; cfg_interrupt_di = 0 (vector 0 of a single-vector MSI),
// cfg_interrupt_assert = 0 (it selects assert/deassert for legacy INTx only).
//
// Ordering. The NIC raises irq_valid only after it has handed every TLP of the mailbox entry to
// its TLP port. Those TLPs may still sit in the transmit adapter (velo_pcie7_tx); this adapter
// counts them when it accepts the request (the adapter's `pending` plus a TLP whose last beat
// the NIC hands over in that very cycle) and raises cfg_interrupt only after that many TLPs have
// had their last beat taken by the core (s_axis_tx tlast). So the MSI is requested strictly
// after the data TLPs are inside the core. What the core does from there (whether its
// internally generated MSI memory write can be scheduled ahead of user TLPs already in its
// transmit buffer) is the core's business; see docs/board-xc7.md for what PG054 says and what
// is not verified here.
//
// MSI must be enabled by the driver (cfg_interrupt_msienable). While it is not, a request is
// taken from the NIC and dropped (irq_dropped pulses): the NIC keeps the vpid's PENDING bit, so
// software that polls loses nothing, and the core is never asked for a legacy INTx, which would
// need a matching deassert message. If MSI gets disabled while a request is waiting for
// cfg_interrupt_rdy, the request is withdrawn (and counted as dropped).
//
// One request at a time: a new one is taken from the NIC only when the previous MSI is sent (or
// dropped). The NIC coalesces its requests, and one MSI is enough for any number of pending
// vpids (the interrupt handler reads the PENDING bitmap).
`default_nettype none
module velo_pcie7_irq (
    input  wire       clk,
    input  wire       rst,                      // synchronous, active high
    // from the NIC
    input  wire       irq_valid,
    output wire       irq_ready,
    // from the transmit adapter
    input  wire [1:0] tx_pending,               // TLPs handed over by the NIC, not yet taken by the core
    input  wire       tx_nic_eop,               // the NIC hands over a TLP's last beat this cycle
    input  wire       tx_core_eop,              // the core takes a TLP's last beat this cycle
    // to/from the core's configuration interrupt interface
    output reg        cfg_interrupt,
    input  wire       cfg_interrupt_rdy,
    input  wire       cfg_interrupt_msienable,
    output wire       cfg_interrupt_assert,
    output wire [7:0] cfg_interrupt_di,
    // status pulses (LEDs, counters)
    output reg        msi_sent,
    output reg        irq_dropped
);
    localparam [1:0] S_IDLE = 2'd0,  // take a request from the NIC
                     S_WAIT = 2'd1,  // wait until the TLPs before it are in the core
                     S_REQ  = 2'd2;  // cfg_interrupt high, waiting for cfg_interrupt_rdy

    reg [1:0] st;
    reg [2:0] wait_cnt;  // TLPs still to be taken by the core before the MSI may be requested

    assign irq_ready            = (st == S_IDLE);
    assign cfg_interrupt_assert = 1'b0;
    assign cfg_interrupt_di     = 8'd0;

    wire [2:0] ahead  = {1'b0, tx_pending} + {2'b0, tx_nic_eop} - {2'b0, tx_core_eop};
    // TLPs taken by the core after the count reached zero are later ones: saturate
    wire [2:0] left   = (wait_cnt == 3'd0) ? 3'd0 : wait_cnt - {2'b0, tx_core_eop};

    always @(posedge clk) begin
        if (rst) begin
            st            <= S_IDLE;
            wait_cnt      <= 3'd0;
            cfg_interrupt <= 1'b0;
            msi_sent      <= 1'b0;
            irq_dropped   <= 1'b0;
        end else begin
            msi_sent    <= 1'b0;
            irq_dropped <= 1'b0;
            case (st)
                S_IDLE: if (irq_valid) begin
                    wait_cnt <= ahead;
                    st       <= S_WAIT;
                end
                S_WAIT: begin
                    wait_cnt <= left;
                    if (left == 3'd0) begin
                        if (cfg_interrupt_msienable) begin
                            cfg_interrupt <= 1'b1;
                            st            <= S_REQ;
                        end else begin
                            irq_dropped <= 1'b1;
                            st          <= S_IDLE;
                        end
                    end
                end
                default: begin  // S_REQ
                    if (cfg_interrupt_rdy) begin
                        cfg_interrupt <= 1'b0;
                        msi_sent      <= 1'b1;
                        st            <= S_IDLE;
                    end else if (!cfg_interrupt_msienable) begin
                        cfg_interrupt <= 1'b0;
                        irq_dropped   <= 1'b1;
                        st            <= S_IDLE;
                    end
                end
            endcase
        end
    end
endmodule
`default_nettype wire
