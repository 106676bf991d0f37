// Host-to-board half of the UART host bridge: SLIP-framed frames from the UART receiver into
// the NIC's downstream TLP stream (protocol: docs/board-guide.md, "UART host protocol").
//
// A frame is the SLIP encoding (END 0xC0, ESC 0xDB, ESC_END 0xDC, ESC_ESC 0xDD) of
// {type, body, CRC-8}; the CRC-8 (polynomial 0x07, initial value 0, MSB first, no final XOR)
// covers type and body, so a good frame leaves a zero CRC register after its last byte.
//
//   PING  0x00: token                       -> a PONG frame with the token (velo_uart_up)
//   TLP   0x01: bar, header, payload        -> the TLP, with that BAR hit, to the NIC
//
// The header is the TLP's 3 or 4 DWs (4 when Fmt bit 0 says so: DW0 bit 29), DW0 first, each
// DW little endian (the byte order of the stream's 128-bit header field); the payload is the
// TLP's data DWs (LENGTH of them if Fmt bit 1, DW0 bit 30, says it has data, up to MAXDW) in
// the stream's byte order (lane 0 first). The bridge does not interpret the TLP beyond that:
// the host builds register reads and writes and send-window stores itself (fpga/ice40/velo_uart.py,
// sim/tests/ice40_host.cpp), and the NIC handles anything malformed as it would from PCIe.
//
// Store and forward: decoded bytes go into a ring of 2^RING_AW bytes (one block RAM); a frame is
// committed at its END only if its CRC is good, and only committed frames are executed, so a
// damaged frame never reaches the NIC. Bad frames are discarded and reported (err_*): CRC error,
// an escape byte followed by anything but ESC_END/ESC_ESC, a frame longer than the longest
// TLP, a UART stop-bit error inside the frame, a full ring (the host ignored CTS), an unknown
// type, a frame whose length does not match its TLP's header (or a BAR above 7). The ring asks
// the host to pause (cts_n high) while less than two longest frames of room are left; the
// FT2232H stops within a few bytes when its CTS# input goes high (the host enables RTS/CTS).
`default_nettype none
`include "velo_spec.vh"
`include "velo_check.vh"
module velo_uart_down #(
    parameter integer RING_AW = 9,  // log2 of the ring size in bytes (9: one 512 x 8 block RAM)
    parameter integer MAXDW   = 32  // longest TLP payload accepted, in DWs (<= 59: frames fit 255 bytes)
) (
    input  wire         clk,
    input  wire         rst,           // synchronous, active high
    // bytes from the UART receiver
    input  wire         in_valid,
    input  wire [7:0]   in_data,
    input  wire         in_ferr,       // a byte was lost to a bad stop bit
    output reg          cts_n,         // 1: ask the host to stop sending (flow control)
    // TLP stream to the NIC (TLP_W = 64)
    output reg          tlp_valid,
    input  wire         tlp_ready,
    output reg          tlp_sop,
    output reg          tlp_eop,
    output wire [127:0] tlp_hdr,
    output wire [2:0]   tlp_bar,
    output wire [63:0]  tlp_data,
    // PONG request to the upstream half (held until acknowledged; a newer PING replaces the token)
    output reg          pong_valid,
    output reg  [7:0]   pong_token,
    input  wire         pong_ack,
    // error report to the upstream half: first error code and number of errors since the last
    // report (saturating), held until acknowledged
    output reg          err_valid,
    output reg  [7:0]   err_code,
    output reg  [7:0]   err_cnt,
    input  wire         err_ack,
    output wire         frame_ok       // pulse: a command frame was committed (activity LED)
);
    `VELO_CHECK(g_check_maxdw, MAXDW >= 1 && MAXDW <= 59, "velo_uart_down: MAXDW must be 1..59 (a frame fits 255 bytes)")
    `VELO_CHECK(g_check_ring, (1 << RING_AW) > 2 * (19 + 4 * MAXDW), "velo_uart_down: the ring (2^RING_AW) must hold more than two longest frames")

    // frame types and error codes (docs/board-guide.md)
    localparam [7:0] T_PING = 8'h00, T_TLP = 8'h01;
    localparam [7:0] E_CRC = 8'h01, E_ESC = 8'h02, E_LONG = 8'h03, E_UART = 8'h04, E_FULL = 8'h05,
                     E_TYPE = 8'h06, E_LEN = 8'h07;
    localparam [7:0] SLIP_END = 8'hC0, SLIP_ESC = 8'hDB, SLIP_ESC_END = 8'hDC, SLIP_ESC_ESC = 8'hDD;
    localparam integer MAXLEN_I = 1 + 1 + 16 + 4 * MAXDW + 1;  // type, bar, header, payload, CRC
    localparam [7:0]   MAXLEN   = MAXLEN_I[7:0];
    localparam integer RING    = 1 << RING_AW;
    localparam integer PW      = RING_AW + 1;          // ring pointers with a wrap bit
    localparam [PW-1:0] STOP_LEVEL = RING[PW-1:0] - {MAXLEN, 1'b0};  // fill level that stops the host

    function [7:0] crc8;  // one byte into CRC-8, polynomial 0x07, MSB first
        input [7:0] c;
        input [7:0] d;
        integer i;
        reg [7:0] x;
        begin
            x = c ^ d;
            for (i = 0; i < 8; i = i + 1) x = x[7] ? {x[6:0], 1'b0} ^ 8'h07 : {x[6:0], 1'b0};
            crc8 = x;
        end
    endfunction

    // ---------------------------------------------------------------- ring
    reg           ram_we;
    reg  [PW-1:0] ram_wa;
    reg  [7:0]    ram_wd;
    reg           ram_re;
    reg  [PW-1:0] ram_ra;
    wire [7:0]    ram_rd;
    velo_sdp_ram #(.W(8), .ADDR_W(RING_AW)) u_ring (
        .clk(clk), .we(ram_we), .waddr(ram_wa[RING_AW-1:0]), .wdata(ram_wd),
        .re(ram_re), .raddr(ram_ra[RING_AW-1:0]), .rdata(ram_rd));

    // ---------------------------------------------------------------- SLIP decoder
    // Each frame takes a length byte (written at its commit) and its bytes incl. the CRC.
    reg  [PW-1:0] fs;      // slot of the frame being received (its length byte)
    reg  [PW-1:0] wa;      // next byte of it
    reg  [PW-1:0] wc;      // end of the committed frames
    reg  [PW-1:0] rp;      // start of the oldest frame not yet executed (executor)
    reg  [7:0]    len;     // bytes of the frame so far
    reg  [7:0]    crc;
    reg           esc;
    reg  [7:0]    bad;     // error code of the frame being received (0: none)
    wire [PW-1:0] used    = wa - rp;
    wire          room    = !used[PW-1];               // used < RING
    wire          is_end  = in_data == SLIP_END;
    wire          is_esc  = in_data == SLIP_ESC;
    wire          esc_ok  = in_data == SLIP_ESC_END || in_data == SLIP_ESC_ESC;
    wire [7:0]    dec     = !esc ? in_data : (in_data == SLIP_ESC_END ? SLIP_END : SLIP_ESC);
    reg           dec_err;                              // error to report from the decoder
    reg  [7:0]    dec_code;

    always @(*) begin
        ram_we   = 1'b0;
        ram_wa   = wa;
        ram_wd   = dec;
        dec_err  = 1'b0;
        dec_code = bad;
        if (in_valid && is_end && (len != 0 || bad != 8'd0)) begin  // (a frame lost at its first byte has len 0)
            if (bad == 8'd0 && crc == 8'd0 && len >= 8'd2) begin
                ram_we = 1'b1;  // commit: the length byte
                ram_wa = fs;
                ram_wd = len;
            end else begin
                dec_err  = 1'b1;
                dec_code = (bad != 8'd0) ? bad : (len < 8'd2) ? E_LEN : E_CRC;
            end
        end else if (in_valid && !is_end && !(is_esc && !esc) && bad == 8'd0 && !(esc && !esc_ok) &&
                     len != MAXLEN && room) begin
            ram_we = 1'b1;
        end
        if (in_ferr && bad == 8'd0 && len == 8'd0 && !esc) begin
            dec_err  = 1'b1;  // a broken byte between frames
            dec_code = E_UART;
        end
    end

    always @(posedge clk) begin
        if (rst) begin
            fs  <= {PW{1'b0}};
            wa  <= {{(PW-1){1'b0}}, 1'b1};
            wc  <= {PW{1'b0}};
            len <= 8'd0;
            crc <= 8'd0;
            esc <= 1'b0;
            bad <= 8'd0;
        end else begin
            if (in_ferr && (len != 8'd0 || esc) && bad == 8'd0) bad <= E_UART;
            if (in_valid) begin
                if (is_end) begin
                    if (len != 0 && ram_we) begin
                        wc <= wa;
                        fs <= wa;
                        wa <= wa + 1'b1;
                    end else begin
                        wa <= fs + 1'b1;  // discard (or nothing to discard)
                    end
                    len <= 8'd0;
                    crc <= 8'd0;
                    esc <= 1'b0;
                    bad <= 8'd0;
                end else if (is_esc && !esc) begin
                    esc <= 1'b1;
                end else begin
                    esc <= 1'b0;
                    if (bad == 8'd0) begin
                        if (esc && !esc_ok)      bad <= E_ESC;
                        else if (len == MAXLEN)  bad <= E_LONG;
                        else if (!room)          bad <= E_FULL;
                        else begin
                            wa  <= wa + 1'b1;
                            len <= len + 1'b1;
                            crc <= crc8(crc, dec);
                        end
                    end
                end
            end
        end
    end
    assign frame_ok = in_valid && is_end && len != 0 && ram_we;

    // flow control: stop the host while less than two longest frames of room are left
    always @(posedge clk) begin
        if (rst) cts_n <= 1'b0;
        else     cts_n <= (used >= STOP_LEVEL);
    end

    // ---------------------------------------------------------------- executor
    // Reads a committed frame from the ring: the length byte, type, bar and the header bytes (into
    // hdr, cleared first), checks the frame's length against the header, then moves the payload
    // lane by lane into 64-bit beats (two cycles per lane: fetch, shift into the beat; the lanes
    // after the last DW of an odd count are zero) and hands each beat to the NIC.
    // (X_CHECK registers the frame checks, X_DEC acts on them: the checks' adders and comparisons
    // do not reach the beat and handshake registers; one cycle per frame. A beat taken by the NIC
    // clears tlp_valid at once and moves the executor on in the next cycle, from the registered
    // took_q: the NIC's tlp_ready reaches two registers only; one cycle per beat)
    localparam [2:0] X_IDLE = 3'd0, X_LEN = 3'd1, X_HDR = 3'd2, X_CHECK = 3'd3, X_FILL = 3'd4,
                     X_BEAT = 3'd5, X_DONE = 3'd6, X_DEC = 3'd7;
    reg  [2:0]    xs;
    reg  [PW-1:0] ra;        // next ring byte to fetch
    reg  [7:0]    flen;      // frame bytes incl. type and CRC
    reg  [4:0]    k;         // frame byte being fetched (X_HDR): 0 type, 1 bar, 2.. header
    reg           kv;        // a fetched byte arrives this cycle, index kq
    reg  [4:0]    kq;
    reg  [7:0]    ftype, fbar;
    reg  [127:0]  hdr;
    wire [7:0]    plen  = flen - 8'd1;                   // type + body
    wire [7:0]    hft   = hdr[`VELO_TLP_HDR_FMT_TYPE];
    wire          h4    = hft[5];                        // Fmt[0]: 4DW header
    wire          hdata = hft[6];                        // Fmt[1]: with payload
    wire [9:0]    ldw   = hdr[`VELO_TLP_HDR_LENGTH];
    wire [4:0]    hend  = h4 ? 5'd18 : 5'd14;            // frame byte after the header
    wire          ldw_ok = ldw <= MAXDW[9:0];            // (so the sizes below fit 8 bits)
    wire [7:0]    nbyte = hdata ? {ldw[5:0], 2'b00} : 8'd0;  // payload bytes
    wire [7:0]    want  = {3'd0, hend} + nbyte;          // frame bytes before the CRC
    assign tlp_hdr = hdr;
    assign tlp_bar = fbar[2:0];

    wire ok_tlp  = ftype == T_TLP && plen == want && fbar[7:3] == 5'd0 && ldw_ok &&
                   (ldw != 10'd0 || !hdata);
    wire ok_ping = ftype == T_PING && plen == 8'd2;
    wire known   = ftype == T_TLP || ftype == T_PING;
    reg  ok_tlp_q, ok_ping_q, known_q;  // the checks, registered in X_CHECK

    // payload: lane position pos of the beat being filled
    reg  [7:0]  pos;
    reg         pv;        // a lane was fetched last cycle (shift it in now)
    reg         pin;       // ... and it is a payload byte (else a zero pad byte)
    reg  [63:0] beat;
    reg         first;     // the next beat is the TLP's first
    reg         took_q;    // the NIC took the beat last cycle
    wire        in_rng = pos < nbyte;
    wire [7:0]  nlast  = nbyte - 8'd1;                 // the last payload byte
    wire        last_lane = pos[7:3] == nlast[7:3];     // a position in the beat of the last payload byte
    assign tlp_data = beat;

    // error raised by the executor
    reg        x_err;
    reg  [7:0] x_code;

    integer hb;
    wire hdr_fetch = xs == X_HDR && {3'd0, k} < plen && k < hend;
    always @(*) begin
        ram_re = 1'b0;
        ram_ra = ra;
        if (xs == X_IDLE) begin
            ram_re = rp != wc;  // the length byte
            ram_ra = rp;
        end else if (hdr_fetch || (xs == X_FILL && !pv && in_rng)) begin
            ram_re = 1'b1;
        end
    end

    always @(posedge clk) begin
        if (rst) begin
            xs         <= X_IDLE;
            rp         <= {PW{1'b0}};
            kv         <= 1'b0;
            pv         <= 1'b0;
            tlp_valid  <= 1'b0;
            tlp_sop    <= 1'b0;
            tlp_eop    <= 1'b0;
            pong_valid <= 1'b0;
            x_err      <= 1'b0;
            ok_tlp_q   <= 1'b0;
            ok_ping_q  <= 1'b0;
            known_q    <= 1'b0;
            took_q     <= 1'b0;
        end else begin
            x_err <= 1'b0;
            took_q <= tlp_valid && tlp_ready;
            if (tlp_valid && tlp_ready) tlp_valid <= 1'b0;
            if (pong_ack) pong_valid <= 1'b0;
            if (ram_re) ra <= ram_ra + 1'b1;
            case (xs)
                X_IDLE: if (rp != wc) xs <= X_LEN;
                X_LEN: begin
                    flen <= ram_rd;
                    k    <= 5'd0;
                    kv   <= 1'b0;
                    hdr  <= 128'd0;
                    xs   <= X_HDR;
                end
                X_HDR: begin
                    kv <= hdr_fetch;
                    kq <= k;
                    if (hdr_fetch) k <= k + 1'b1;
                    if (kv && kq == 5'd0) ftype <= ram_rd;
                    if (kv && kq == 5'd1) fbar  <= ram_rd;
                    for (hb = 0; hb < 16; hb = hb + 1)
                        if (kv && kq == hb[4:0] + 5'd2) hdr[hb*8 +: 8] <= ram_rd;
                    if (!hdr_fetch && !kv) xs <= X_CHECK;
                end
                X_CHECK: begin
                    ok_tlp_q  <= ok_tlp;
                    ok_ping_q <= ok_ping;
                    known_q   <= known;
                    xs        <= X_DEC;
                end
                X_DEC: begin
                    if (ok_ping_q) begin
                        pong_valid <= 1'b1;
                        pong_token <= fbar;
                        xs <= X_DONE;
                    end else if (ok_tlp_q && hdata) begin
                        pos   <= 8'd0;
                        pv    <= 1'b0;
                        first <= 1'b1;
                        xs    <= X_FILL;
                    end else if (ok_tlp_q) begin
                        tlp_valid <= 1'b1;
                        tlp_sop   <= 1'b1;
                        tlp_eop   <= 1'b1;
                        beat      <= 64'd0;
                        xs        <= X_BEAT;
                    end else begin
                        x_err  <= 1'b1;
                        x_code <= known_q ? E_LEN : E_TYPE;
                        xs     <= X_DONE;
                    end
                end
                X_FILL: begin
                    if (!pv) begin
                        pv  <= 1'b1;
                        pin <= in_rng;
                    end else begin
                        pv   <= 1'b0;
                        pos  <= pos + 1'b1;
                        beat <= {pin ? ram_rd : 8'd0, beat[63:8]};
                        if (pos[2:0] == 3'd7) begin
                            tlp_valid <= 1'b1;
                            tlp_sop   <= first;
                            tlp_eop   <= last_lane;
                            xs        <= X_BEAT;
                        end
                    end
                end
                X_BEAT: begin
                    if (took_q) begin
                        first <= 1'b0;
                        xs    <= tlp_eop ? X_DONE : X_FILL;
                    end
                end
                default: begin  // X_DONE
                    rp <= rp + 1'b1 + {{(PW-8){1'b0}}, flen};
                    xs <= X_IDLE;
                end
            endcase
        end
    end

    // ---------------------------------------------------------------- error report
    wire       any_err  = dec_err || x_err;
    wire [7:0] new_code = dec_err ? dec_code : x_code;
    wire [1:0] n_new    = {1'b0, dec_err} + {1'b0, x_err};
    always @(posedge clk) begin
        if (rst) begin
            err_valid <= 1'b0;
            err_code  <= 8'd0;
            err_cnt   <= 8'd0;
        end else if (err_valid && !err_ack) begin
            if (any_err) err_cnt <= (err_cnt > 8'd253) ? 8'd255 : err_cnt + {6'd0, n_new};
        end else begin
            err_valid <= any_err;
            err_code  <= new_code;
            err_cnt   <= {6'd0, n_new};
        end
    end
    // the ring pointers' wrap bits address nothing; Fmt/Type bits the bridge does not look at
    wire unused_ok = &{1'b0, ram_wa[PW-1], ram_ra[PW-1], hft[7], hft[4:0], nlast[2:0]};
endmodule
`default_nettype wire
