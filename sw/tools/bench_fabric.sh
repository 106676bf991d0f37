#!/bin/sh
# How fast the simulated fabric runs (not tests): BENCH lines, each measured side by side with the
# same measurement of a base commit built in a tree of its own, in the same run (this machine is
# shared and noisy: the ratios compare like with like; the absolute figures move with the load).
#   sh sw/tools/bench_fabric.sh <build dir>
# VELO_BENCH_BASE=<rev>: the base (default: 12a4880, the last commit before the fabric was made
# fast). It is built once in <build dir>/bench/base-<rev> (git archive + cmake; minutes) and reused.
#
#  fabric.sim_cycles_per_s_2nodes   simulated NIC cycles per wall second while a put streams: RMA
#                                   ping-pong of 256 KiB puts on the pair, cycles from the fabric's
#                                   exit line; the difference of a 1-round and a 3-round run, so
#                                   that start-up and teardown cancel
#  fabric.sim_cycles_per_s_8nodes   the same between nodes 0 and 1 of an 8-node ring
#  fabric.speedup_sim_cycles        2 nodes: this over the base's (and _8nodes)
#  fabric.instr_per_cycle           the fabric's instructions (callgrind) per simulated cycle in an
#                                   8-byte velo-pingpong (difference of two lengths), on one thread:
#                                   the engine's cost, whatever the load (and
#                                   fabric.speedup_instr_per_cycle)
#  fabric.wall_us_per_halfrtt_8B    wall time of one 8-byte half round trip of velo-pingpong
#                                   (difference of 1200 and 200 round trips)
#  fabric.speedup_wall_rtt          the base's over this
#  mpi.wall_s_pt2pt_suite           wall time of the point-to-point MPI test programs through the
#                                   BTL (sw/btl/tests/run_mpi.sh: pingpong ssend datatype threads on
#                                   2 ranks, ring alltoall sendrecv anysource many on 4)
#  mpi.speedup_pt2pt_suite          the base's over this
# Every figure is the best of two runs of each tree, the runs of the two trees interleaved.
set -u
B=$(cd "${1:?usage: bench_fabric.sh <build dir>}" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REV=${VELO_BENCH_BASE:-12a4880}
BASE=$B/bench/base-$REV
tmp=$(mktemp -d /tmp/velo-bench-fabric-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset VELO_DEVICE VELO_NODE VELO_NODES VELO_RANK VELO_SIZE VELO_VPID VELO_FABRIC 2>/dev/null || true
TARGETS="velo-fabric velo-run velo-pingpong velo_btl_tests"

if [ ! -f "$BASE/built" ]; then
    echo "# building the base $REV in $BASE (once)"
    rm -rf "$BASE" && mkdir -p "$BASE/src" || exit 1
    git -C "$ROOT" archive "$REV" | tar -x -C "$BASE/src" || { echo "# cannot export $REV"; exit 1; }
    launcher=
    command -v ccache > /dev/null 2>&1 &&
        launcher="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
    # shellcheck disable=SC2086
    cmake -S "$BASE/src" -B "$BASE/build" -G Ninja $launcher > "$BASE/build.log" 2>&1 &&
        cmake --build "$BASE/build" -j "$(nproc)" --target $TARGETS >> "$BASE/build.log" 2>&1 ||
        { echo "# the base did not build: $BASE/build.log"; exit 1; }
    touch "$BASE/built"
fi
# shellcheck disable=SC2086
cmake --build "$B" -j "$(nproc)" --target $TARGETS > "$tmp/build.log" 2>&1 ||
    { cat "$tmp/build.log"; echo "# this tree did not build"; exit 1; }

now() { date +%s.%N; }

# cycles <tree> <velo-run args...>: run, print "<cycles> <wall seconds>" (cycles from the fabric)
cycles() {
    t=$1
    shift
    s=$(now)
    VELO_FABRIC=$t/velo-fabric "$t/sw/tools/velo-run" --timeout 900 "$@" > "$tmp/run" 2>&1 ||
        { echo "# run failed: $*" >&2; sed 's/^/#   /' "$tmp/run" >&2; echo "0 0"; return; }
    e=$(now)
    c=$(sed -n 's/.*exit after \([0-9]*\) cycles.*/\1/p' "$tmp/run")
    echo "${c:-0} $(echo "$e - $s" | bc)"
}

# rate <tree> <topology>: cycles per second of the put stream
rate() {
    set -- "$1" "$2" "$(cycles "$1" -n 2 -q --topology "$2" -- "$1/sw/tools/velo-pingpong" --puts-only \
        --put-sizes 262144 --put-iters 1 --quiet)" \
        "$(cycles "$1" -n 2 -q --topology "$2" -- "$1/sw/tools/velo-pingpong" --puts-only --put-sizes 262144 \
            --put-iters 3 --quiet)"
    echo "$3 $4" | awk '{ d = $4 - $2; print (d > 0 && $3 > $1) ? ($3 - $1) / d : 0 }'
}

# halfrtt <tree>: wall microseconds per 8-byte half round trip
halfrtt() {
    set -- "$1" "$(cycles "$1" -n 2 -q -- "$1/sw/tools/velo-pingpong" --sizes 8 --iters 200 --stream 10 --quiet)" \
        "$(cycles "$1" -n 2 -q -- "$1/sw/tools/velo-pingpong" --sizes 8 --iters 1200 --stream 10 --quiet)"
    echo "$2 $3" | awk '{ print ($4 - $2) * 1e6 / 2000 }'
}

# suite <tree> <source tree>: wall seconds of the MPI programs
suite() {
    s=$(now)
    for c in pingpong ssend datatype threads ring alltoall sendrecv anysource many; do
        sh "$2/sw/btl/tests/run_mpi.sh" $c "$1/sw/tools" "$1/sw/btl/components" "$1/sw/btl" "$1/velo-fabric" \
            > "$tmp/suite" 2>&1 || { echo "# MPI case $c failed:" >&2; sed 's/^/#   /' "$tmp/suite" >&2; }
    done
    echo "$(now) - $s" | bc
}

# instr <tree>: fabric instructions per simulated cycle (callgrind), 8-byte ping-pong
instr() {
    for n in 100 400; do
        rm -f "$tmp"/vg.*
        # one thread: a worker's polling would count as instructions of the engine
        one=
        "$1/velo-fabric" --help 2>&1 | grep -q -- --threads && one="--threads 1"
        cat > "$tmp/vfab" << EOF
#!/bin/sh
exec valgrind --tool=callgrind --callgrind-out-file=/dev/null --log-file=$tmp/vg.%p "$1/velo-fabric" $one "\$@"
EOF
        chmod +x "$tmp/vfab"
        VELO_FABRIC=$tmp/vfab "$1/sw/tools/velo-run" -n 2 -q --timeout 900 -- "$1/sw/tools/velo-pingpong" \
            --sizes 8 --iters $n --stream 10 --quiet > "$tmp/run" 2>&1
        sleep 1
        ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp"/vg.* 2> /dev/null)
        c=$(sed -n 's/.*exit after \([0-9]*\) cycles.*/\1/p' "$tmp/run")
        echo "${c:-0} ${ir:-0}"
    done | awk 'NR == 1 { c = $1; i = $2 } NR == 2 { print ($1 > c) ? ($2 - i) / ($1 - c) : 0 }'
}

best() {  # best <max|min> values...: the best of the values
    m=$1
    shift
    echo "$@" | tr ' ' '\n' | awk -v m="$m" 'NR == 1 || (m == "max" && $1 > b) || (m == "min" && $1 < b) { b = $1 } END { print b }'
}

echo "# base: $REV ($BASE), this: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
r2n=$(best max "$(rate "$B" pair)" "$(rate "$B" pair)")
r2b=$(best max "$(rate "$BASE/build" pair)" "$(rate "$BASE/build" pair)")
r8n=$(best max "$(rate "$B" ring:8)" "$(rate "$B" ring:8)")
r8b=$(best max "$(rate "$BASE/build" ring:8)" "$(rate "$BASE/build" ring:8)")
hn1=$(halfrtt "$B")
hb1=$(halfrtt "$BASE/build")
hn=$(best min "$hn1" "$(halfrtt "$B")")
hb=$(best min "$hb1" "$(halfrtt "$BASE/build")")
sn1=$(suite "$B" "$ROOT")
sb1=$(suite "$BASE/build" "$BASE/src")
sn=$(best min "$sn1" "$(suite "$B" "$ROOT")")
sb=$(best min "$sb1" "$(suite "$BASE/build" "$BASE/src")")
awk -v r2n="$r2n" -v r2b="$r2b" -v r8n="$r8n" -v r8b="$r8b" -v hn="$hn" -v hb="$hb" -v sn="$sn" -v sb="$sb" 'BEGIN {
    printf "BENCH fabric.sim_cycles_per_s_2nodes %.0f cycles/s\n", r2n
    printf "BENCH fabric.sim_cycles_per_s_8nodes %.0f cycles/s\n", r8n
    printf "# base: %.0f and %.0f cycles/s\n", r2b, r8b
    if (r2b > 0) printf "BENCH fabric.speedup_sim_cycles %.2f ratio\n", r2n / r2b
    if (r8b > 0) printf "BENCH fabric.speedup_sim_cycles_8nodes %.2f ratio\n", r8n / r8b
    printf "BENCH fabric.wall_us_per_halfrtt_8B %.1f us\n# base: %.1f us\n", hn, hb
    if (hn > 0) printf "BENCH fabric.speedup_wall_rtt %.2f ratio\n", hb / hn
    printf "BENCH mpi.wall_s_pt2pt_suite %.1f s\n# base: %.1f s\n", sn, sb
    if (sn > 0) printf "BENCH mpi.speedup_pt2pt_suite %.2f ratio\n", sb / sn
}'
if command -v valgrind > /dev/null 2>&1; then
    in=$(instr "$B")
    ib=$(instr "$BASE/build")
    awk -v n="$in" -v b="$ib" 'BEGIN {
        printf "BENCH fabric.instr_per_cycle %.0f instructions\n# base: %.0f instructions\n", n, b
        if (n > 0) printf "BENCH fabric.speedup_instr_per_cycle %.2f ratio\n", b / n }'
else
    echo "# valgrind not found (Debian: apt-get install valgrind): no fabric.instr_per_cycle"
fi
