# Dry run of the AC701 Vivado flow without Vivado (ctest xc7.flow_dryrun):
#
#   tclsh fpga/xc7/test_flow.tcl <scratch_dir>
#
# Runs fpga/xc7/build.tcl and constraints/ac701.xdc in plain tclsh with the Vivado commands
# replaced by recorders, and checks what the flow would do: the PCIe core gets the ids and BAR
# sizes of the spec (via gen_config.py), the RTL files exist and include the board top and every
# board module, synthesis gets the right top and generics, the timing gate stops the flow on
# negative slack and lets it write the bitstream and flash images otherwise, and the XDC names
# only ports the top has and pins every non-transceiver port. It cannot tell whether Vivado
# accepts the values (that needs Vivado).

set here [file dirname [file normalize [info script]]]
set root [file normalize [file join $here .. ..]]
if {$argc < 1} { puts stderr "usage: tclsh test_flow.tcl <scratch_dir>"; exit 2 }
set scratch [file normalize [lindex $argv 0]]
file mkdir $scratch
set failures 0
proc check {cond msg} {
    if {![uplevel 1 [list expr $cond]]} { puts "FAIL: $msg"; incr ::failures } else { puts "ok:   $msg" }
}

# ---------------------------------------------------------------- the top's ports
set fh [open [file join $root rtl board xc7 velo_xc7_top.v]]
set top_src [read $fh]
close $fh
set ports {}
foreach {- dir width name} [regexp -all -inline {\n\s*(input|output)\s+wire\s+(\[[0-9]+:0\]\s+)?(\w+)} $top_src] {
    if {$width eq ""} { lappend ports $name } else {
        regexp {\[([0-9]+):0\]} $width - msb
        for {set i 0} {$i <= $msb} {incr i} { lappend ports "$name\[$i\]" }
    }
}
check {[llength $ports] > 40} "velo_xc7_top declares its ports ([llength $ports] port bits)"

# ---------------------------------------------------------------- Vivado stand-ins
set calls {}
proc rec {args} { lappend ::calls $args; return {} }
foreach c {create_project create_ip report_property generate_target synth_ip write_checkpoint
           report_utilization opt_design place_design phys_opt_design route_design
           report_timing_summary report_clock_interaction report_drc create_clock set_false_path
           set_input_delay set_max_delay} {
    proc $c {args} "rec $c {*}\$args"
}
proc current_project {} { return proj }
proc current_design {} { return design }
proc get_ips {n} { return $n }
proc get_nets {n} { return $n }
proc get_clocks {args} { return clk }
proc set_property {args} {
    # set_property -dict {k v ...} obj | set_property name value objs
    if {[lindex $args 0] eq "-dict"} {
        foreach {k v} [lindex $args 1] { dict set ::props $k $v }
    } else {
        lassign $args k v objs
        foreach o $objs { lappend ::pinned [list $k $v $o] }
    }
    return {}
}
set ::props {}
set ::pinned {}
proc get_ports {pat} {
    set out {}
    foreach p $pat {
        # Vivado: * and ? are wildcards, brackets are bus indices (literal)
        set g [string map {[ \\[ ] \\]} $p]
        set m [lsearch -all -inline -glob $::ports $g]
        if {![llength $m]} { puts "FAIL: XDC names port '$p', which velo_xc7_top does not have"; incr ::failures }
        lappend out {*}$m
    }
    return $out
}
proc read_verilog {files} {
    foreach f $files { if {![file exists $f]} { error "read_verilog: no such file $f" } }
    set ::rtl $files
}
proc read_xdc {f} { set ::xdc $f; uplevel #0 [list source $f] }
proc synth_design {args} { set ::synth $args }
proc get_timing_paths {args} { return path }
proc get_property {name obj} {
    if {$name ne "SLACK"} { error "unexpected get_property $name" }
    return $::slack
}
proc write_bitstream {args} { lappend ::outputs bit }
proc write_cfgmem {args} { lappend ::outputs [lindex $args [expr {[lsearch $args -format] + 1}]] }

proc run_flow {out} {
    set ::outputs {}
    set ::argv [list $out]
    set ::argc 1
    return [catch {uplevel #0 [list source [file join $::here build.tcl]]} ::flow_err]
}

# ---------------------------------------------------------------- run with met timing
set slack 0.125
set rc [run_flow [file join $scratch met]]
check {$rc == 0} "flow runs to the end with positive slack ([expr {$rc ? $flow_err : {}}])"
check {[dict get $props CONFIG.Vendor_ID] eq "10EE" && [dict get $props CONFIG.Device_ID] eq "7E10"} \
    "PCIe ids from the spec (10EE:7E10)"
check {[dict get $props CONFIG.Bar0_Size] eq "2" && [dict get $props CONFIG.Bar0_Scale] eq "Megabytes"} \
    "BAR0 2 MiB (BAR_REGS_BITS)"
check {[dict get $props CONFIG.Bar2_64bit] && [dict get $props CONFIG.Bar2_Prefetchable] && \
       [dict get $props CONFIG.Bar2_Size] eq "64" && [dict get $props CONFIG.Bar2_Scale] eq "Gigabytes"} \
    "BAR2 64 GiB, 64-bit prefetchable (SEND_ADDR at the default widths)"
check {[dict get $props CONFIG.MSI_Enabled] && ![dict get $props CONFIG.IntX_Generation] && \
       [dict get $props CONFIG.Interface_Width] eq "64_bit" && [dict get $props CONFIG.Maximum_Link_Width] eq "X4"} \
    "MSI, no INTx, 64-bit x4 interface"
check {[lsearch -exact $synth velo_xc7_top] >= 0 && [lsearch -exact $synth NODE_BITS=8] >= 0 && \
       [lsearch -exact $synth VPID_BITS=8] >= 0} "synth_design: top velo_xc7_top, NODE_BITS=8, VPID_BITS=8"
set names [lmap f $rtl {file rootname [file tail $f]}]
foreach m [glob -directory [file join $root rtl board xc7] -tails *.v] {
    check {[lsearch -exact $names [file rootname $m]] >= 0} "RTL list has rtl/board/xc7/$m"
}
foreach m {velo_nic velo_link velo_switch velo_requester velo_completer velo_regfile velo_tlp_rx_demux} {
    check {[lsearch -exact $names $m] >= 0} "RTL list has $m"
}
check {[lsearch -glob $rtl */lint/*] < 0 && [lsearch -glob $rtl */board/ice40/*] < 0} \
    "no lint stubs and no other board's RTL in the list"
check {$outputs eq {bit mcs bin}} "bitstream, .mcs and .bin written ($outputs)"

# every top-level port but the GT lanes (placed by the core) has a package pin and, if it is
# not the GT reference clock, an I/O standard
set pins {}
set stds {}
foreach p $pinned {
    lassign $p k v o
    if {$k eq "PACKAGE_PIN"} { dict set pins $o $v }
    if {$k eq "IOSTANDARD"} { dict set stds $o $v }
}
foreach p $ports {
    if {[string match pcie_rx_* $p] || [string match pcie_tx_* $p]} continue
    check {[dict exists $pins $p]} "XDC pins port $p"
    if {![string match pcie_refclk_* $p]} { check {[dict exists $stds $p]} "XDC gives port $p an I/O standard" }
}
set used [dict values $pins]
check {[llength $used] == [llength [lsort -unique $used]]} "no package pin used twice"

# ---------------------------------------------------------------- run with failing timing
set slack -0.010
set rc [run_flow [file join $scratch failed]]
check {$rc != 0 && [string match "*timing not met*" $flow_err]} "negative slack stops the flow ($flow_err)"
check {[llength $outputs] == 0} "no bitstream after failed timing"

if {$failures} { puts "$failures check(s) failed"; exit 1 }
puts "all checks passed"
exit 0
