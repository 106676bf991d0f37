// Clock gate for simulation only (docs/simulator.md, "Clock gating of idle units"): a unit whose
// registers provably keep their values in a cycle need not be evaluated in it. Verilator evaluates
// every always block of a clock on every edge; clocking an idle unit from gclk lets the model skip
// it. The RTL's behaviour is unchanged as long as en is true in every cycle in which a register of
// the unit could change (the unit says so: its state is not at rest, or one of its inputs carries
// something).
//
// Synthesis and every simulator other than Verilator see gclk = clk (en unused). Under Verilator
// the gate is closed only when the run enables it with the plusarg +velo_sim_gate (read once, at
// time 0; Verilated models read it from the VerilatedContext current on their thread, the one
// that constructed them unless the owner set another); without it gclk = clk there too, so every
// bench that does not ask for it simulates exactly the design it always did.
//
// The model of a glitch-free clock gate (latch + AND): en is taken while clk is low and held while
// it is high, gclk = clk & en_l. The owner of the model must therefore evaluate it once with clk
// low after setting the inputs of the coming edge and before raising clk (a settle eval); a bench
// that raised clk right after changing inputs would clock the unit with the enable of the inputs
// before (the simulated cluster, sim/system/system.cpp, settles before every edge).
`default_nettype none
module velo_sim_gate (
    input  wire clk,
    input  wire en,    // the unit may change state at the coming rising edge of clk
    output wire gclk
);
`ifdef VERILATOR
    reg on;            // +velo_sim_gate given: gating enabled
    initial on = $test$plusargs("velo_sim_gate") != 0;
    // the enable latch: transparent while clk is low (a latch by design, hence the waiver)
    reg en_l;
    /* verilator lint_off LATCH */
    always @(*) begin
        if (!clk) en_l = en || !on;
    end
    /* verilator lint_on LATCH */
    assign gclk = clk & en_l;
`else
    assign gclk = clk;
    wire unused_ok = &{1'b0, en};
`endif
endmodule
`default_nettype wire
