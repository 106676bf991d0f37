// VELO requester: turns a posted write into the send window (BAR2) into a network packet.
//
// Stateless: everything it needs is in the TLP. The window offset carries destination node,
// destination vpid and source vpid (page bits) and message length and byte offset (12 low bits,
// spec format SEND_ADDR); the source node comes from the NODE_ID register, which only the kernel
// can write. A write that covers the whole message makes a message packet; a piece of a
// write-combining flush makes a fragment tagged with original length, own length and offset.
// Bytes written past the message length are clipped.
//
// Routing: the destination node indexes the route table (block RAM in the register file) in the
// cycle the header word is formed; the route and VC (request class, dateline bit 0) are put into
// the header word's low 16 bits as it leaves, so the lookup costs no cycle. A destination without
// a valid route gets the all-ones route, which no switch accepts (dropped and counted there).
//
// Cut-through: the packet header word leaves the cycle after the TLP's first beat arrives; the
// payload follows the TLP data beats unchanged (the payload area is DW aligned, see PKT_HDR), so
// nothing is stored and forwarded. Malformed writes are dropped whole and counted by reason.
//
// Clock gating in simulation (docs/simulator.md, "Clock gating of idle units"): every register of
// the requester is clocked by gclk, which velo_sim_gate stops (Verilator with +velo_sim_gate only;
// elsewhere gclk = clk) in cycles where none can change: no TLP in work (outside a TLP, no header
// sent for a waiting first beat, with PIPE no decision in its stages), no packet word offered
// (pkt_valid), no route lookup in flight, no counter event pulse up, and no TLP beat offered
// (in_valid) and no reset. At rest the outputs are functions of registers that hold and of the
// inputs. With PIPE the decode stages (addr_q ... ep_q, hw_q ... fr_q, dr_q) are rewritten every
// cycle but read only two open edges after in_valid rises (d_known): while gated they keep an
// older value, and the edges of the new TLP's first cycles rewrite them.
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
module velo_requester #(
    parameter integer TLP_W     = 64,  // TLP stream data width: 64 or 128
    parameter integer NODE_BITS = 8,   // node id width (spec param NODE_BITS), 1..8
    parameter integer VPID_BITS = 8,   // vpid width (spec param VPID_BITS), 1..8
    // 0: a TLP is decoded (drop or forward) in the cycle its first beat arrives; 1: (smaller
    // devices, docs/board-guide.md) the header's fields, then the decision and the header word are
    // registered while the first beat waits, so neither the header's format select nor its
    // arithmetic reaches in_ready or the packet register: two cycles more per TLP (latency, and
    // two idle output cycles per TLP); 0 or 1
    parameter integer PIPE      = 0
) (
    input  wire             clk,
    input  wire             rst,            // synchronous, active high
    // configuration (register file)
    input  wire             enable,         // CONTROL.ENABLE
    input  wire [7:0]       node_id,        // CTRL.NODE_ID (low NODE_BITS used)
    // route table read port: data the cycle after rt_re
    output wire             rt_re,
    output wire [NODE_BITS-1:0] rt_node,
    input  wire [14:0]      rt_data,        // {VALID, ROUTE}
    // TLP stream in: posted writes that hit BAR2
    input  wire             in_valid,
    output reg              in_ready,
    input  wire             in_sop,
    input  wire             in_eop,
    // Tag, requester id, TC and attributes mean nothing to a posted window write.
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [127:0]     in_hdr,         // valid with in_sop
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [TLP_W-1:0] in_data,
    // packet stream out (to the network port)
    output reg              pkt_valid,
    input  wire             pkt_ready,
    output wire [63:0]      pkt_data,
    output reg              pkt_last,
    output reg  [2:0]       pkt_lnb,        // last word: valid bytes minus one
    // counter events (one-cycle pulses)
    output reg              ev_tx_msg,
    output reg              ev_tx_frag,
    output reg              ev_drop_disabled,
    output reg              ev_drop_malformed,
    output reg              ev_drop_too_long,
    output reg              ev_drop_cross_page
);
    `VELO_CHECK_TLP_W
    `VELO_CHECK_NODE_BITS
    `VELO_CHECK_VPID_BITS
    `VELO_CHECK_PIPE

    localparam integer R = TLP_W / 64;  // 64-bit words per TLP beat

    // the clock gate (simulation): open when a register may change at the coming edge (the
    // condition is at the end, with the registers it reads)
    wire gclk, gate_en;
    velo_sim_gate u_gate (.clk(clk), .en(gate_en), .gclk(gclk));

    // ---------------------------------------------------------------- decode of the first beat
    // the header's fields: from in_hdr, or (PIPE) registered from it every cycle (stage A: while a
    // first beat waits, its header; the decision and the header word are registered from these,
    // stage B, a cycle later)
    wire        is4dw   = in_hdr[`VELO_TLP_HDR_FMT_TYPE_LSB + 5];
    wire [31:0] h_alo   = is4dw ? {in_hdr[`VELO_TLP_HDR_ADDR64_LO], 2'b00}
                                : {in_hdr[`VELO_TLP_HDR_ADDR32], 2'b00};
    wire [31:0] h_ahi   = is4dw ? in_hdr[`VELO_TLP_HDR_ADDR64_HI] : 32'd0;
    wire [63:0] addr;
    wire [7:0]  fmt_type;
    wire [9:0]  len_dw;
    wire [3:0]  fbe, lbe;
    wire        ep;
    generate
        if (PIPE != 0) begin : g_apipe
            reg [63:0] addr_q;
            reg [7:0]  ft_q;
            reg [9:0]  len_q;
            reg [3:0]  fbe_q, lbe_q;
            reg        ep_q;
            always @(posedge gclk) begin
                addr_q <= {h_ahi, h_alo};
                ft_q   <= in_hdr[`VELO_TLP_HDR_FMT_TYPE];
                len_q  <= in_hdr[`VELO_TLP_HDR_LENGTH];
                fbe_q  <= in_hdr[`VELO_TLP_HDR_FIRST_BE];
                lbe_q  <= in_hdr[`VELO_TLP_HDR_LAST_BE];
                ep_q   <= in_hdr[`VELO_TLP_HDR_EP_LSB];
            end
            assign {addr, fmt_type, len_dw, fbe, lbe, ep} = {addr_q, ft_q, len_q, fbe_q, lbe_q, ep_q};
        end else begin : g_anopipe
            assign {addr, fmt_type, len_dw, fbe, lbe, ep} =
                {h_ahi, h_alo, in_hdr[`VELO_TLP_HDR_FMT_TYPE], in_hdr[`VELO_TLP_HDR_LENGTH],
                 in_hdr[`VELO_TLP_HDR_FIRST_BE], in_hdr[`VELO_TLP_HDR_LAST_BE], in_hdr[`VELO_TLP_HDR_EP_LSB]};
        end
    endgenerate

    wire is_mwr = (fmt_type == `VELO_TLP_FMT_TYPE_MWR32) || (fmt_type == `VELO_TLP_FMT_TYPE_MWR64);
    wire one_dw = (len_dw == 10'd1);

    // byte enables: one run of ones; first DW ends at the top, last DW starts at the bottom
    reg       fbe_ok, lbe_ok;
    reg [1:0] lead;    // disabled bytes below the first enabled one
    reg [2:0] fbytes;  // enabled bytes in the first DW
    reg [2:0] lbytes;  // enabled bytes in the last DW
    always @(*) begin
        case (fbe)
            4'b0001: begin fbe_ok = one_dw; lead = 2'd0; fbytes = 3'd1; end
            4'b0011: begin fbe_ok = one_dw; lead = 2'd0; fbytes = 3'd2; end
            4'b0111: begin fbe_ok = one_dw; lead = 2'd0; fbytes = 3'd3; end
            4'b1111: begin fbe_ok = 1'b1;   lead = 2'd0; fbytes = 3'd4; end
            4'b0010: begin fbe_ok = one_dw; lead = 2'd1; fbytes = 3'd1; end
            4'b0110: begin fbe_ok = one_dw; lead = 2'd1; fbytes = 3'd2; end
            4'b1110: begin fbe_ok = 1'b1;   lead = 2'd1; fbytes = 3'd3; end
            4'b0100: begin fbe_ok = one_dw; lead = 2'd2; fbytes = 3'd1; end
            4'b1100: begin fbe_ok = 1'b1;   lead = 2'd2; fbytes = 3'd2; end
            4'b1000: begin fbe_ok = 1'b1;   lead = 2'd3; fbytes = 3'd1; end
            default: begin fbe_ok = 1'b0;   lead = 2'd0; fbytes = 3'd1; end
        endcase
        case (lbe)
            4'b0000: begin lbe_ok = one_dw;  lbytes = 3'd0; end
            4'b0001: begin lbe_ok = !one_dw; lbytes = 3'd1; end
            4'b0011: begin lbe_ok = !one_dw; lbytes = 3'd2; end
            4'b0111: begin lbe_ok = !one_dw; lbytes = 3'd3; end
            4'b1111: begin lbe_ok = !one_dw; lbytes = 3'd4; end
            default: begin lbe_ok = 1'b0;    lbytes = 3'd0; end
        endcase
    end

    wire [4:0]  len5      = len_dw[4:0];
    wire        too_big   = (len_dw == 10'd0) || (len_dw > 10'd16);
    wire [4:0]  line_end  = {1'b0, addr[5:2]} + len5;          // in DW; len5 <= 16 here
    wire        cross_ln  = line_end > 5'd16;
    // a write of at most 16 DW crosses the 4 KiB page exactly when it runs past the page's last line
    wire        cross_pg  = cross_ln && (addr[11:6] == 6'h3F);
    wire [5:0]  off       = {addr[5:2], lead};
    wire [6:0]  msg_len   = {1'b0, addr[`VELO_SEND_ADDR_LEN_M1]} + 7'd1;
    // end of the write (exclusive byte offset): last DW's offset plus its enabled bytes reaching up
    wire [4:0]  last_dw   = line_end - 5'd1;
    wire [2:0]  top_bytes = one_dw ? ({1'b0, lead} + fbytes) : lbytes;
    wire [6:0]  wr_end    = {last_dw, 2'b00} + {4'd0, top_bytes};
    wire        beyond    = {1'b0, off} >= msg_len;
    wire [6:0]  frag_end  = (wr_end < msg_len) ? wr_end : msg_len;
    wire [6:0]  frag_len  = frag_end - {1'b0, off};
    // payload area: from the DW the fragment starts in to its end
    wire [6:0]  area      = frag_end - {1'b0, addr[5:2], 2'b00};  // 1..64
    wire [6:0]  area_m1   = area - 7'd1;
    wire [3:0]  nwords    = {1'b0, area_m1[5:3]} + 4'd1;       // payload words, 1..8
    wire        is_frag   = (off != 6'd0) || (frag_len != msg_len);

    // one reason per dropped write, in this order
    wire c_dis  = !enable;
    wire c_mal  = !is_mwr || ep || !fbe_ok || !lbe_ok;
    wire c_long = too_big;
    wire c_page = cross_pg;
    wire c_line = cross_ln;
    wire c_beyond = beyond;
    // the decision and its reasons as used: from this cycle's first beat, or (PIPE) registered
    // from the stage-A fields of the cycle before (the first beat waits on the input meanwhile,
    // unchanged: two cycles); d_known says the decision of the waiting first beat is there
    wire drop_dis, drop_mal, drop_long, drop_page, drop_line, drop_beyond, d_known, pipe_idle;
    wire new_tlp;
    wire sop_fire;
    generate
        if (PIPE != 0) begin : g_pipe
            reg       dka_q;  // the waiting first beat's header is in the stage-A fields
            reg       dk_q;
            reg [5:0] dr_q;
            always @(posedge gclk) begin
                if (rst) begin
                    dka_q <= 1'b0;
                    dk_q  <= 1'b0;
                    dr_q  <= 6'd0;
                end else begin
                    dka_q <= new_tlp && !sop_fire;
                    dk_q  <= new_tlp && !sop_fire && dka_q;
                    dr_q  <= {c_dis, c_mal, c_long, c_page, c_line, c_beyond};
                end
            end
            assign {drop_dis, drop_mal, drop_long, drop_page, drop_line, drop_beyond} = dr_q;
            assign d_known = dk_q;
            assign pipe_idle = !dka_q && !dk_q;
        end else begin : g_nopipe
            assign {drop_dis, drop_mal, drop_long, drop_page, drop_line, drop_beyond} =
                {c_dis, c_mal, c_long, c_page, c_line, c_beyond};
            assign d_known = 1'b1;
            assign pipe_idle = 1'b1;
        end
    endgenerate
    wire drop = drop_dis || drop_mal || drop_long || drop_page || drop_line || drop_beyond;

    wire [VPID_BITS-1:0] dst_vpid = addr[`VELO_SEND_ADDR_DST_VPID];
    wire [NODE_BITS-1:0] dst_node = addr[`VELO_SEND_ADDR_DST_NODE];
    wire [VPID_BITS-1:0] src_vpid = addr[`VELO_SEND_ADDR_SRC_VPID];

    reg [63:0] hdr_word;
    always @(*) begin
        hdr_word = 64'd0;
        hdr_word[`VELO_PKT_HDR_TYPE]        = `VELO_PKT_TYPE_VELO;
        hdr_word[`VELO_PKT_HDR_MSG_LEN_M1]  = addr[`VELO_SEND_ADDR_LEN_M1];
        hdr_word[`VELO_PKT_HDR_FRAG_OFF]    = off;
        hdr_word[`VELO_PKT_HDR_SRC_NODE]    = {{(8-NODE_BITS){1'b0}}, node_id[NODE_BITS-1:0]};
        hdr_word[`VELO_PKT_HDR_SRC_VPID]    = {{(8-VPID_BITS){1'b0}}, src_vpid};
        hdr_word[`VELO_PKT_HDR_DST_VPID]    = {{(8-VPID_BITS){1'b0}}, dst_vpid};
        hdr_word[`VELO_PKT_HDR_FRAG_LEN_M1] = frag_len[5:0] - 6'd1;
        hdr_word[`VELO_PKT_HDR_FRAG]        = is_frag;
    end

    // what send_hdr stores: the header word, the payload word count, the last word's valid bytes
    // minus one and the fragment flag, formed from this cycle's first beat or (PIPE) registered
    // with the decision (data registers, qualified by d_known: no reset needed)
    wire [63:0] s_hdr;
    wire [3:0]  s_nwords;
    wire [2:0]  s_lnb;
    wire        s_frag;
    generate
        if (PIPE != 0) begin : g_hpipe
            reg [63:0] hw_q;
            reg [3:0]  nw_q;
            reg [2:0]  lb_q;
            reg        fr_q;
            always @(posedge gclk) begin
                hw_q <= hdr_word;
                nw_q <= nwords;
                lb_q <= area_m1[2:0];
                fr_q <= is_frag;
            end
            assign s_hdr    = hw_q;
            assign s_nwords = nw_q;
            assign s_lnb    = lb_q;
            assign s_frag   = fr_q;
        end else begin : g_hnopipe
            assign s_hdr    = hdr_word;
            assign s_nwords = nwords;
            assign s_lnb    = area_m1[2:0];
            assign s_frag   = is_frag;
        end
    endgenerate

    // ---------------------------------------------------------------- datapath
    // No copy of the TLP is kept: the first beat waits on the input while the header word goes
    // out, then each beat is accepted with its last needed word.
    reg       st_in;       // inside a TLP (first beat accepted, last not yet)
    reg       st_fwd;      // the current TLP is forwarded
    reg       hdr_done;    // the header word of the waiting first beat has been sent
    reg [3:0] words_left;  // payload words still to send
    reg [2:0] lnb_q;       // last word's valid bytes minus one
    reg [R-1:0] lane;      // next 64-bit lane of the current beat (0 when R == 1)

    wire o_free    = !pkt_valid || pkt_ready;
    assign new_tlp = in_valid && in_sop && !st_in;
    wire drop_new  = drop && !hdr_done;   // decided once: a header already sent commits the TLP
    wire fwd_beat  = new_tlp ? hdr_done : (st_in && st_fwd);
    wire send_hdr  = new_tlp && d_known && !drop && !hdr_done && o_free;
    wire send_word = in_valid && fwd_beat && (words_left != 4'd0) && o_free;
    wire last_lane = (R == 1) ? 1'b1 : (lane == R[R-1:0] - 1'b1);
    wire beat_done = send_word && (last_lane || words_left == 4'd1);
    // the last word: by the header's count, or cut short by a TLP that ends early
    wire word_last = (words_left == 4'd1) || (beat_done && in_eop);

    always @(*) begin
        if (new_tlp)
            in_ready = !d_known ? 1'b0 : (drop_new ? 1'b1 : beat_done);
        else if (st_in && st_fwd && words_left != 4'd0)
            in_ready = beat_done;
        else
            in_ready = 1'b1;  // dropped TLPs, clipped tail beats and stray beats are eaten
    end

    wire in_fire  = in_valid && in_ready;
    assign sop_fire = in_fire && new_tlp;
    wire drop_ev  = sop_fire && drop_new;

    always @(posedge gclk) begin
        if (rst) begin
            st_in      <= 1'b0;
            st_fwd     <= 1'b0;
            hdr_done   <= 1'b0;
            words_left <= 4'd0;
            lnb_q      <= 3'd0;
            lane       <= {R{1'b0}};
            pkt_valid  <= 1'b0;
            pkt_last   <= 1'b0;
            pkt_lnb    <= 3'd0;
        end else begin
            if (send_hdr) begin
                pkt_valid  <= 1'b1;
                pkt_last   <= 1'b0;
                pkt_lnb    <= 3'd7;
                hdr_done   <= 1'b1;
                words_left <= s_nwords;
                lnb_q      <= s_lnb;
                lane       <= {R{1'b0}};
            end else if (send_word) begin
                pkt_valid  <= 1'b1;
                pkt_last   <= word_last;
                pkt_lnb    <= word_last ? lnb_q : 3'd7;
                words_left <= word_last ? 4'd0 : words_left - 4'd1;
                lane       <= beat_done ? {R{1'b0}} : lane + 1'b1;
            end else if (o_free) begin
                pkt_valid <= 1'b0;
            end
            if (in_fire) begin
                if (new_tlp) begin
                    st_in    <= !in_eop;
                    st_fwd   <= !drop_new;
                    hdr_done <= 1'b0;
                end else if (in_eop) begin
                    st_in <= 1'b0;
                end
                if (in_eop && !send_word) words_left <= 4'd0;
            end
        end
    end

    // data register: no reset needed (qualified by pkt_valid)
    reg [63:0] data_q;
    always @(posedge gclk) begin
        if (send_hdr)       data_q <= s_hdr;
        else if (send_word) data_q <= in_data[lane*64 +: 64];
    end

    // route lookup: read with the header word, inserted as it leaves (kept while it waits)
    assign rt_re   = send_hdr;
    assign rt_node = dst_node;
    reg        hdr_out;    // pkt_data is a header word
    reg        hdr_fresh;  // ... formed last cycle: the route is on rt_data now
    reg [13:0] route_q;
    always @(posedge gclk) begin
        if (rst) begin
            hdr_out   <= 1'b0;
            hdr_fresh <= 1'b0;
        end else begin
            hdr_fresh <= send_hdr;
            if (send_hdr) hdr_out <= 1'b1;
            else if (send_word) hdr_out <= 1'b0;
        end
    end
    wire [13:0] route_now = rt_data[14] ? rt_data[13:0] : 14'h3FFF;
    always @(posedge gclk) begin
        if (hdr_fresh) route_q <= route_now;
    end
    reg [15:0] net_bits;
    always @(*) begin
        net_bits = 16'd0;
        net_bits[`VELO_PKT_HDR_VC]    = `VELO_VC_REQ;
        net_bits[`VELO_PKT_HDR_ROUTE] = hdr_fresh ? route_now : route_q;
    end
    assign pkt_data = hdr_out ? {data_q[63:16], net_bits} : data_q;

    // ---- counter events (registered: one pulse per accepted TLP)
    always @(posedge gclk) begin
        if (rst) begin
            ev_tx_msg          <= 1'b0;
            ev_tx_frag         <= 1'b0;
            ev_drop_disabled   <= 1'b0;
            ev_drop_malformed  <= 1'b0;
            ev_drop_too_long   <= 1'b0;
            ev_drop_cross_page <= 1'b0;
        end else begin
            ev_tx_msg          <= send_hdr && !s_frag;
            ev_tx_frag         <= send_hdr && s_frag;
            ev_drop_disabled   <= drop_ev && drop_dis;
            ev_drop_malformed  <= drop_ev && !drop_dis && (drop_mal || (!drop_long && !drop_page && !drop_line && drop_beyond));
            ev_drop_too_long   <= drop_ev && !drop_dis && !drop_mal && (drop_long || (!drop_page && drop_line));
            ev_drop_cross_page <= drop_ev && !drop_dis && !drop_mal && !drop_long && drop_page;
        end
    end

    // address bits above the window and the unused header bits are ignored by design
    // at rest (see the top): the gate opens for anything else, a TLP beat or reset
`ifdef VERILATOR
    wire idle = !st_in && !hdr_done && pipe_idle && !pkt_valid && !hdr_fresh && !ev_tx_msg && !ev_tx_frag &&
                !ev_drop_disabled && !ev_drop_malformed && !ev_drop_too_long && !ev_drop_cross_page;
    assign gate_en = !idle || rst || in_valid;
`else
    assign gate_en = 1'b1;  // elsewhere gclk = clk: the enable is not built (synthesis figures unchanged)
`endif
    wire unused_pipe_idle = &{1'b0, pipe_idle};

    wire unused_ok = &{1'b0, addr[63:12+2*VPID_BITS+NODE_BITS], addr[1:0], data_q[15:0],
                       node_id, area_m1[6], frag_len[6]};
endmodule
`default_nettype wire
