#!/bin/sh
# Debian's fi_pingpong between two processes on two nodes of a fabric of velo-run's own, through
# the provider `velo` (ofi.pingpong): FI_EP_RDM, untagged and tagged (-m tagged), sizes from 1 B to
# 2 MiB, data checked by fi_pingpong (-c). By default eager up to a VELO train (about 1.7 KiB) and
# rendezvous (RMA get into the receive buffer) above.
# fi_pingpong exchanges the endpoints' names (fi_getname) over a TCP control connection of its
# own on 127.0.0.1; rank 0 is the server, rank 1 the client.
#   test_pingpong.sh <directory of libvelo-fi.so> <velo-run> <velo-fabric> [max]
# With `max`: with libvelo receive areas (FI_VELO_RECV_AREA=1), the largest eager message (1 MiB
# less the 17-byte header) and a 2 MiB one (rendezvous), once each (ofi.pingpong_max: ~30 s).
set -eu
export FI_PROVIDER_PATH=$1
run=$2
export VELO_FABRIC=$3
unset FI_PROVIDER VELO_DEVICE FI_VELO_RECV_AREA FI_VELO_RDV_THRESHOLD || true
tmp=$(mktemp -d /tmp/velo-ofi-pp-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export PP_TMP=$tmp

# one rank's part: fi_pingpong -S <size> -I <iters> [-m tagged] for each "size:iters:mode" in $PP_CASES
cat > "$tmp/rank.sh" <<'RANK'
#!/bin/sh
set -eu
i=0
for c in $PP_CASES; do
    size=${c%%:*}; rest=${c#*:}; iters=${rest%%:*}; mode=${rest#*:}
    i=$((i + 1))
    if [ "$VELO_RANK" = 0 ]; then
        port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        echo "$port" > "$PP_TMP/port.$i.tmp"
        mv "$PP_TMP/port.$i.tmp" "$PP_TMP/port.$i"
        fi_pingpong -p velo -e rdm -m "$mode" -S "$size" -I "$iters" -c -B "$port"
    else
        while [ ! -f "$PP_TMP/port.$i" ]; do sleep 0.05; done
        port=$(cat "$PP_TMP/port.$i")
        while ! ss -Hltn "sport = :$port" | grep -q .; do sleep 0.05; done
        fi_pingpong -p velo -e rdm -m "$mode" -S "$size" -I "$iters" -c -P "$port" 127.0.0.1
    fi
done
RANK
if [ "${4:-}" = max ]; then
    export PP_CASES="1048559:1:tagged 2097152:1:msg" FI_VELO_RECV_AREA=1
else
    export PP_CASES="1:20:msg 47:20:msg 48:20:msg 64:20:msg 1000:10:msg 65536:2:msg 8:20:tagged 55:10:tagged 4096:5:tagged"
fi
"$run" -n 2 --timeout 240 -- sh "$tmp/rank.sh" > "$tmp/out" 2>&1 || { echo "FAIL: fi_pingpong"; grep -v 'fi_getinfo_\|mrail' "$tmp/out" | tail -40; exit 1; }
# each case: one result row per rank, every message acknowledged (#sent = #ack)
n=0
for c in $PP_CASES; do n=$((n + 1)); done
for r in 0 1; do
    rows=$(grep -c "^\[$r\] [0-9.]*[kmg]* *[0-9][0-9]* *=[0-9]" "$tmp/out" || true)
    [ "$rows" -eq "$n" ] || { echo "FAIL: rank $r has $rows result rows, want $n"; grep -v 'fi_getinfo_\|mrail' "$tmp/out" | tail -40; exit 1; }
done
# the counts: #sent and #ack equal the iterations
awk '/^\[[01]\] [0-9.]+[kmg]? +[0-9]+ +=[0-9]+/ { sent = $3; ack = substr($4, 2); if (sent != ack) bad = 1; rows++ }
     END { exit bad || rows == 0 }' "$tmp/out" || { echo "FAIL: #sent != #ack"; grep "^\[[01]\] [0-9]" "$tmp/out"; exit 1; }
if [ "${4:-}" = max ]; then
    grep -q "^\[1\] 1023k *1 *=1 " "$tmp/out" || { echo "FAIL: no 1 MiB row"; grep "^\[[01]\] [0-9]" "$tmp/out"; exit 1; }
    grep -q "^\[1\] 2m *1 *=1 " "$tmp/out" || { echo "FAIL: no 2 MiB row"; grep "^\[[01]\] [0-9]" "$tmp/out"; exit 1; }
fi
echo "ofi pingpong: OK ($n cases)"
