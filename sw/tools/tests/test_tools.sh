#!/bin/sh
# velo-run and velo-pingpong end to end: a fabric of velo-run's own, two ranks, rank-prefixed
# output, CSV contents, the worst exit status of the ranks, a stopped fabric afterwards.
#   test_tools.sh <dir of velo-run and velo-pingpong> <velo-fabric>
set -eu
T=$1
export VELO_FABRIC=$2
tmp=$(mktemp -d /tmp/velo-tools-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset VELO_DEVICE || true

# ping-pong through velo-run: rank 0 prints the table and writes the CSV
"$T/velo-run" -n 2 -- "$T/velo-pingpong" --sizes 1,8,64,1000,20000 --iters 20 --stream 40 --csv "$tmp/pp.csv" --bench \
    > "$tmp/out" 2> "$tmp/err"
grep -q '^\[0\] BENCH api.halfrtt_cycles_8B ' "$tmp/out" || { echo "no BENCH line with a rank prefix"; cat "$tmp/out" "$tmp/err"; exit 1; }
[ "$(head -n 1 "$tmp/pp.csv" | cut -d, -f1-2)" = "size,halfrtt_cycles" ] || { echo "CSV header"; exit 1; }
[ "$(wc -l < "$tmp/pp.csv")" -eq 6 ] || { echo "CSV rows"; cat "$tmp/pp.csv"; exit 1; }
# velo_send of more than 64 bytes: a train (1000 B) and a put into the receive area (20000 B)
grep -q '^\[0\] BENCH api.send_halfrtt_cycles_1000B ' "$tmp/out" || { echo "no 1000-byte row"; cat "$tmp/out"; exit 1; }
awk -F, '$1 == 20000 && $2 > 20000 / 2 { ok = 1 } END { exit !ok }' "$tmp/pp.csv" || { echo "20000-byte row"; cat "$tmp/pp.csv"; exit 1; }
# the 8-byte half round trip is a positive number of cycles
awk -F, '$1 == 8 && $2 > 0 { ok = 1 } END { exit !ok }' "$tmp/pp.csv" || { echo "8-byte row"; exit 1; }
# no fabric left behind
if ls /tmp/velo-run-* > /dev/null 2>&1 && [ -n "$(find /tmp -maxdepth 1 -name 'velo-run-*' -newer "$tmp/pp.csv" 2>/dev/null)" ]; then
    echo "velo-run left its fabric directory"; exit 1
fi

# --wall (the only clock on hardware): ns figures, a CSV in ns, no BENCH lines (cycles only)
"$T/velo-run" -n 2 -- "$T/velo-pingpong" --wall --sizes 8,64 --iters 5 --stream 5 --csv "$tmp/wall.csv" --bench \
    > "$tmp/outw" 2> "$tmp/errw"
grep -q 'wall-clock times of this machine' "$tmp/outw" || { echo "--wall: no wall-clock table"; cat "$tmp/outw" "$tmp/errw"; exit 1; }
! grep -q 'BENCH' "$tmp/outw" || { echo "--wall printed BENCH lines"; exit 1; }
[ "$(head -n 1 "$tmp/wall.csv" | cut -d, -f1-2)" = "size,halfrtt_ns" ] || { echo "--wall CSV header"; cat "$tmp/wall.csv"; exit 1; }
awk -F, '$1 == 64 && $2 > 0 { ok = 1 } END { exit !ok }' "$tmp/wall.csv" || { echo "--wall 64-byte row"; cat "$tmp/wall.csv"; exit 1; }

# velo-check: every check of both ranks passes (5 checks x 2 ranks), seeded
"$T/velo-run" -n 2 -- "$T/velo-check" --seed 11 > "$tmp/check" 2>&1 || { echo "velo-check failed"; cat "$tmp/check"; exit 1; }
[ "$(grep -c '^\[[01]\] velo-check: [a-z]* PASS ' "$tmp/check")" -eq 10 ] || { echo "velo-check: not 10 PASS lines"; cat "$tmp/check"; exit 1; }

# worst exit status, ranks and nodes in the environment, prefixes on stdout and stderr
set +e
"$T/velo-run" -n 3 --nodes 2 --keep-going -- sh -c 'echo "node $VELO_NODE of $VELO_NODES rank $VELO_RANK/$VELO_SIZE"; echo oops >&2; exit $((VELO_RANK + 3))' \
    > "$tmp/out2" 2> "$tmp/err2"
rc=$?
set -e
[ "$rc" -eq 5 ] || { echo "worst status: $rc"; exit 1; }
grep -q '^\[2\] node 0 of 2 rank 2/3$' "$tmp/out2" || { echo "rank 2 output"; cat "$tmp/out2"; exit 1; }
grep -q '^\[1\] oops$' "$tmp/err2" || { echo "rank 1 stderr"; cat "$tmp/err2"; exit 1; }

# a failing rank stops the others (without --keep-going)
set +e
"$T/velo-run" -n 2 --timeout 60 -- sh -c 'if [ "$VELO_RANK" = 0 ]; then exit 7; fi; sleep 30' > /dev/null 2>&1
rc=$?
set -e
[ "$rc" -eq 7 ] || { echo "failing rank: status $rc"; exit 1; }
echo "tools: OK"
