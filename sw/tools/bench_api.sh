#!/bin/sh
# API and fabric benchmarks (not tests): BENCH lines on stdout.
#   sw/tools/bench_api.sh <build dir>
# needs the targets velo-bench-api, velo-pingpong, velo-run, velo-fabric and valgrind.
#  api.send_instr_8B, api.poll_instr_hit, api.poll_instr_miss: callgrind instruction counts of
#    the hw fast paths (velo_send of 8 bytes, velo_poll finding / not finding a one-line message)
#    over a mocked mapping, per call, including every instruction from entry to return (the
#    amortised read-pointer/credit batch of the poll is included in the hit figure)
#  api.halfrtt_cycles_8B (and friends): velo-pingpong between two processes on a 2-node fabric
#  api.put_halfrtt_cycles_<size>: the same with RMA puts (64 B, 4 KiB; larger ping-pong puts stall
#    in the NIC for now, docs/simulator.md)
#  (how fast the fabric itself runs: sw/tools/bench_fabric.sh)
set -u
B=${1:?usage: bench_api.sh <build dir>}
T=$B/sw/tools
for f in "$T/velo-bench-api" "$T/velo-pingpong" "$T/velo-run"; do
    [ -x "$f" ] || { echo "bench_api.sh: $f not built" >&2; exit 1; }
done
export VELO_FABRIC="${VELO_FABRIC:-$B/velo-fabric}"

instr() {  # mode function calls name
    if ! command -v valgrind > /dev/null 2>&1; then
        echo "# valgrind not found (Debian: apt-get install valgrind): no $4"
        return
    fi
    total=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect="$2" \
        "$T/velo-bench-api" "$1" "$3" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
    if [ -z "$total" ]; then
        echo "# callgrind gave no count for $4"
        return
    fi
    awk -v t="$total" -v n="$3" -v name="$4" 'BEGIN { printf "BENCH %s %.1f instructions\n", name, t / n }'
}

instr send8 velo_send 200000 api.send_instr_8B
instr poll-hit velo_poll 60000 api.poll_instr_hit
instr poll-miss velo_poll 200000 api.poll_instr_miss
echo "# targets: send <= 20, poll hit <= 30, poll miss <= 8 (x86-64, gcc -O2)"

"$T/velo-run" -n 2 -q -- "$T/velo-pingpong" --sizes 8,64 --bench --quiet 2>/dev/null | grep '^BENCH'
echo "# sim host model: stores reach the NIC's TLP port the cycle they are taken, DMA writes are visible at once,"
echo "# a woken client reacts in zero simulated time: the paper's ~350 ns of CPU/northbridge are not modelled"

# RMA: ping-pong of notified puts (velo_put + notification each way) on malloc'd buffers
"$T/velo-run" -n 2 -q --timeout 900 -- "$T/velo-pingpong" --puts-only --put-sizes 64,4096 --bench \
    --quiet 2>/dev/null | grep '^BENCH'
echo "# put half RTT: command store to the peer seeing its TARGET notification, and back; host reads take 20 cycles"

# velo_send of more than 64 B: half round trips of trains (crossover forced high) and of puts into
# the receive area (crossover 0) over the train range; the crossover is the smallest size from
# which the put is at least as fast at every measured size; reported is the longest size still sent
# as a train (VELO_SEND_CROSSOVER's meaning; libvelo's default, VELO_CROSSOVER_DEFAULT,
# is set from it: docs/measurement.md)
XS=128,256,384,512,640,768,896,1024,1152,1280,1408,1536,1664,1753
tmp=${TMPDIR:-/tmp}/velo-bench-x.$$
for mode in train put; do
    if [ $mode = train ]; then x=100000; else x=0; fi
    VELO_SEND_CROSSOVER=$x "$T/velo-run" -n 2 -q --timeout 900 -- "$T/velo-pingpong" --sizes $XS --iters 40 \
        --stream 10 --quiet --csv "$tmp.$mode.csv" > /dev/null 2>&1 || echo "# crossover: the $mode sweep failed"
done
if [ -s "$tmp.train.csv" ] && [ -s "$tmp.put.csv" ]; then
    awk -F, 'FNR == 1 { next } NR == FNR { t[$1] = $2; next } { p[$1] = $2; s[++n] = $1 }
        END {
            i0 = n + 1
            for (i = n; i >= 1; --i) { if (p[s[i]] <= t[s[i]]) i0 = i; else break }
            for (i = 1; i <= n; ++i) printf "# %5d B: train %7.1f cycles, put %7.1f cycles\n", s[i], t[s[i]], p[s[i]]
            # the crossover: the longest message still sent as a train (longer ones go by put)
            x = i0 > n ? s[n] : i0 > 1 ? s[i0 - 1] : 64
            printf "BENCH api.send_crossover_bytes %d bytes\n", x
            printf "BENCH api.send_halfrtt_cycles_1KiB_train %.1f cycles\n", t[1024]
            printf "BENCH api.send_halfrtt_cycles_1KiB_put %.1f cycles\n", p[1024]
        }' "$tmp.train.csv" "$tmp.put.csv"
fi
rm -f "$tmp.train.csv" "$tmp.put.csv"
# the whole message sweep, 1 B .. 1 MiB (trains and puts at the default crossover)
"$T/velo-run" -n 2 -q --timeout 900 -- "$T/velo-pingpong" --sizes 4096,65536,1048576 --bench --quiet 2>/dev/null |
    grep '^BENCH api.send'

