#!/bin/sh
# Checks of the velo-route tool: exit status and key lines of its output, for good and bad input.
# usage: test_tool.sh <velo-route binary> <directory of the test link lists>
set -u
tool=$1
data=$2
fail=0

# check <name> <expected exit status> <grep pattern> <tool arguments...>
check() {
    name=$1
    want=$2
    pat=$3
    shift 3
    out=$("$tool" "$@" 2>&1)
    rc=$?
    if [ "$rc" -ne "$want" ]; then
        printf 'FAIL %s: exit status %s, expected %s\n%s\n' "$name" "$rc" "$want" "$out"
        fail=1
    elif ! printf '%s\n' "$out" | grep -q -- "$pat"; then
        printf 'FAIL %s: output lacks "%s"\n%s\n' "$name" "$pat" "$out"
        fail=1
    else
        echo "ok $name"
    fi
}

check torus_check 0 'deadlock check: .* acyclic' torus:4x4 --check
check ring_table 0 '^ *2  0x0005     2  0\.1 -> 1\.1 -> 2$' ring:5 --node 0
check ring_dateline 0 '^ *0  0x0005     2  3\.1 -> 4\.1\* -> 0$' ring:5 --node 3
check ring_ports 0 'node 0:  port 1 -> 1.2 dim 0 dl 0  port 2 -> 4.1 dim 0 dl 1' ring:5
check links_file 0 '9 nodes, 12 links, highest port 4, 3-bit port codes' "links:$data/mesh3x3.links" --check
check bound 1 'from node 0 to node 8 needs 8 link hops' ring:16
check no_dateline 1 'deadlock possible' ring:6 --no-dateline --check
check bad_file 1 'bad_port.links:5: port 2.1 is already used by the link on line 3' "links:$data/bad_port.links"
check missing_file 1 'cannot open the links file' "links:$data/does-not-exist.links"
check usage 2 'usage: velo-route'
check bad_node 2 'the topology has nodes 0..4' ring:5 --node 5
check bad_option 2 "unknown option '--frob'" ring:5 --frob
exit $fail
