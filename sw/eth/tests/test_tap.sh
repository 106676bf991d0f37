#!/bin/sh
# SPDX-License-Identifier: MIT
# IP over VELO with velo-tap on the fabric: one network namespace per node, each with a velo-tap
# whose TAP device carries IPv4 and IPv6 (docs/ethernet.md).
#   test_tap.sh <velo-tap> <eth_inject> <velo-fabric> pair|ring4
# pair:  ping (IPv4, IPv6), TCP and UDP (iperf3), NPtcp, a bridge and a VLAN over the device,
#        bad frames from a hostile endpoint dropped and counted, a node's velo-tap killed and
#        restarted (its peer recovers).
# ring4: every node pings every other (ARP by broadcast, frames over two hops), TCP across.
# Exit 77 (skipped) without root, TUN or network namespaces.
set -u
TAP=$1
INJECT=$2
FABRIC=$3
MODE=$4
case $MODE in
pair) N=2 TOPO=pair ;;
ring4) N=4 TOPO=ring:4 ;;
*) echo "unknown mode $MODE"; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (network namespaces, TAP devices)"; exit 77; }
[ -c /dev/net/tun ] || { echo "SKIP: no /dev/net/tun"; exit 77; }
for t in ip ping iperf3 NPtcp; do
    command -v $t > /dev/null || { echo "FAIL: $t is missing (scripts/deps.sh installs it)"; exit 1; }
done
tmp=$(mktemp -d /tmp/velo-eth-XXXXXX)
ns=velo-eth-$$
fails=0
fabric_pid=
cleanup() {
    for n in $(seq 0 $((N - 1))); do
        [ -f "$tmp/tap$n.pid" ] && kill "$(cat "$tmp/tap$n.pid")" 2> /dev/null
        ip netns pids "$ns$n" 2> /dev/null | xargs -r kill 2> /dev/null
    done
    sleep 0.3
    for n in $(seq 0 $((N - 1))); do ip netns del "$ns$n" 2> /dev/null; done
    [ -n "$fabric_pid" ] && kill "$fabric_pid" 2> /dev/null && wait "$fabric_pid" 2> /dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
check() { # name, command...: one line per check
    name=$1
    shift
    if "$@" > "$tmp/check.out" 2>&1; then
        echo "PASS $name"
    else
        echo "FAIL $name"
        sed 's/^/    /' "$tmp/check.out" | tail -20
        fails=$((fails + 1))
    fi
}
in_ns() { # node, command...
    n=$1
    shift
    ip netns exec "$ns$n" "$@"
}
start_tap() { # node
    VELO_DEVICE=sim:$tmp/fabric.sock VELO_NODE=$1 ip netns exec "$ns$1" "$TAP" --dev velo0 --up \
        --stats-file "$tmp/stats$1" >> "$tmp/tap$1.log" 2>&1 &
    echo $! > "$tmp/tap$1.pid"
    for _ in $(seq 100); do
        in_ns "$1" ip link show velo0 > /dev/null 2>&1 && break
        sleep 0.1
    done
    in_ns "$1" ip addr add 10.77.0.$(($1 + 1))/24 dev velo0 &&
        in_ns "$1" ip -6 addr add fd77::$(($1 + 1))/64 dev velo0 nodad
}
stat_of() { # node, counter: its value in the node's stats file (rewritten every second)
    awk -v k="$2" '$1 == k { print $2 }' "$tmp/stats$1"
}

ip netns add "$ns"probe 2> /dev/null || { echo "SKIP: cannot create network namespaces"; exit 77; }
ip netns del "$ns"probe
# the fabric (job policy open: the interfaces of all nodes may send to each other)
"$FABRIC" --socket "$tmp/fabric.sock" --topology "$TOPO" --policy open --ready-fd 3 3> "$tmp/ready" \
    > "$tmp/fabric.log" 2>&1 &
fabric_pid=$!
for _ in $(seq 600); do
    grep -q ready "$tmp/ready" 2> /dev/null && break
    sleep 0.1
done
grep -q ready "$tmp/ready" || { echo "FAIL: the fabric did not start"; cat "$tmp/fabric.log"; exit 1; }
for n in $(seq 0 $((N - 1))); do
    ip netns add "$ns$n" && in_ns "$n" ip link set lo up || { echo "FAIL: namespace $n"; exit 1; }
    start_tap "$n" || { echo "FAIL: velo-tap of node $n"; cat "$tmp/tap$n.log"; exit 1; }
done

if [ "$MODE" = ring4 ]; then
    for a in 0 1 2 3; do
        for b in 0 1 2 3; do
            [ $a = $b ] && continue
            check "ping $a->$b" in_ns $a ping -c 2 -W 10 10.77.0.$((b + 1))
        done
    done
    check "ping6 0->2" in_ns 0 ping -6 -c 2 -W 10 fd77::3
    in_ns 2 iperf3 -s -1 -D --logfile "$tmp/iperf-s.log"
    sleep 0.3
    check "tcp 0->2 (two hops)" in_ns 0 iperf3 -c 10.77.0.3 -n 256K
    echo "eth.tap_ring4: $fails failed"
    [ $fails -eq 0 ]
    exit
fi

check "ping IPv4" in_ns 0 ping -c 3 -W 10 10.77.0.2
check "ping IPv6" in_ns 0 ping -6 -c 3 -W 10 fd77::2
# a large ping: an ICMP echo of 8000 bytes (one 8 KiB frame each way: an RMA put into the area)
check "ping 8000 B" in_ns 0 ping -c 2 -W 10 -s 8000 -M do 10.77.0.2
in_ns 1 iperf3 -s -1 -D --logfile "$tmp/iperf-s.log"
sleep 0.3
check "tcp (iperf3)" in_ns 0 iperf3 -c 10.77.0.2 -n 512K
in_ns 1 iperf3 -s -1 -D --logfile "$tmp/iperf-s2.log"
sleep 0.3
# UDP at 2 Mbit/s for 2 s: every datagram arrives (credits: no loss on a slow receiver)
check "udp (iperf3), no loss" sh -c "ip netns exec $ns""0 iperf3 -u -c 10.77.0.2 -b 2M -t 2 --json > $tmp/udp.json &&
    python3 -c 'import json,sys; e=json.load(open(\"$tmp/udp.json\"))[\"end\"][\"sum\"]; print(e); sys.exit(e[\"lost_packets\"] != 0 or e[\"packets\"] == 0)'"
in_ns 1 sh -c "NPtcp -u 8192 -p 0 -n 10 > $tmp/np-r.log 2>&1 &"
sleep 0.5
check "NPtcp" in_ns 0 NPtcp -h 10.77.0.2 -u 8192 -p 0 -n 10 -o "$tmp/np.out"
# a VLAN over the device (if this kernel has 802.1Q: the sandbox's may not; the co-simulation
# guests' Debian kernel has it)
if in_ns 0 ip link add link velo0 name velo0.7 type vlan id 7 2> "$tmp/vlan.err"; then
    in_ns 1 ip link add link velo0 name velo0.7 type vlan id 7
    in_ns 0 ip addr add 10.78.0.1/24 dev velo0.7
    in_ns 1 ip addr add 10.78.0.2/24 dev velo0.7
    in_ns 0 ip link set velo0.7 up
    in_ns 1 ip link set velo0.7 up
    check "VLAN 7 over velo0" in_ns 0 ping -c 2 -W 10 10.78.0.2
else
    echo "SKIP VLAN 7 over velo0: this kernel cannot make VLAN devices ($(cat "$tmp/vlan.err"))"
fi
# a bridge over the device on node 1: its address moves to the bridge
in_ns 1 ip link add br0 type bridge
in_ns 1 ip addr del 10.77.0.2/24 dev velo0
in_ns 1 ip link set velo0 master br0
in_ns 1 ip addr add 10.77.0.2/24 dev br0
in_ns 1 ip link set br0 up
check "bridge over velo0" in_ns 0 ping -c 2 -W 10 10.77.0.2
in_ns 1 ip link set velo0 nomaster
in_ns 1 ip link del br0
in_ns 1 ip addr add 10.77.0.2/24 dev velo0
# bad frames: junk, a spoofed source, an oversized frame from a hostile endpoint on node 0
before_bad=$(stat_of 1 drop_rx_bad_header)
before_spoof=$(stat_of 1 drop_rx_spoofed_source)
check "hostile endpoint sends" env VELO_DEVICE=sim:$tmp/fabric.sock VELO_NODE=0 "$INJECT" 1 8 0 9000
sleep 2.2
check "junk dropped and counted" test "$(stat_of 1 drop_rx_bad_header)" -gt "$before_bad"
check "spoofed source dropped and counted" test "$(stat_of 1 drop_rx_spoofed_source)" -gt "$before_spoof"
check "oversized frame dropped and counted" test "$(stat_of 1 drop_too_long)" -gt 0
check "still carries IP" in_ns 0 ping -c 2 -W 10 10.77.0.2
check "no frames lost to credits or sends" test "$(stat_of 0 drop_tx_send_failed)" -eq 0
# node 1's velo-tap killed and started again: the peer reconnects
kill "$(cat "$tmp/tap1.pid")"
sleep 1
check "restart node 1" start_tap 1
check "ping after restart" in_ns 0 ping -c 3 -W 10 10.77.0.2
echo "eth.tap_pair: $fails failed"
[ $fails -eq 0 ]
