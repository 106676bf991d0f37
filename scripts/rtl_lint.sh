#!/usr/bin/env bash
# Verilator -Wall lint of every RTL module as its own top, plus the parameter sets we ship.
# Fails on any warning.
set -uo pipefail
cd "$(dirname "$0")/.."
mapfile -t SRC < <(find rtl -name '*.v' | sort)
fail=0
mapfile -t DIRS < <(find rtl -mindepth 0 -type d | sort)
YDIRS=()
for d in "${DIRS[@]}"; do YDIRS+=(-y "$d"); done
# Verilator configuration files with commented waivers (rtl/**/lint/*.vlt; none at present)
mapfile -t VLT < <(find rtl -path '*/lint/*.vlt' | sort)
topfile() { find rtl -name "$1.v" | head -1; }
lint() {  # top [params...]: the top's file, every module below it found by name (-y)
  local top=$1; shift
  if ! out=$(verilator --lint-only -Wall -Irtl/include "${YDIRS[@]}" "${VLT[@]}" "$(topfile "$top")" --top-module "$top" "$@" 2>&1); then
    echo "LINT FAIL: $top $*"; echo "$out"; fail=1
  else
    echo "lint ok: $top $*"
  fi
}
for f in "${SRC[@]}"; do lint "$(basename "$f" .v)"; done
for p in "-GNP=1" "-GNP=4" "-GTLP_W=128" "-GLINK_W=32" "-GLINK_W=64" "-GNP=1 -GTLP_W=128 -GLINK_W=32" \
         "-GTLP_W=128 -GLINK_W=64" "-GNODE_BITS=3 -GVPID_BITS=4" \
         "-GNP=1 -GSWITCH_LITE=1 -GRMA=0 -GNVC=1 -GCOUNTERS=0 -GLINK_COUNTERS=0 -GNODE_BITS=4 -GVPID_BITS=4" \
         "-GNP=1 -GSWITCH_LITE=1 -GRMA=0 -GNVC=2" "-GCOUNTERS=0 -GLINK_COUNTERS=0" \
         "-GMAX_AREA=64" "-GMAX_AREA=128 -GLINK_W=64" "-GPIPE=1" \
         "-GNP=1 -GSWITCH_LITE=1 -GRMA=0 -GNVC=1 -GCOUNTERS=0 -GLINK_COUNTERS=0 -GNODE_BITS=4 -GVPID_BITS=4 -GPIPE=1"; do
  # shellcheck disable=SC2086
  lint velo_nic $p
done
exit $fail
