#!/usr/bin/env bash
# Build the VELO bitstream for the Xilinx AC701 (Artix-7 PCIe board) with Vivado.
#
#   fpga/xc7/build.sh [--node-bits N] [--vpid-bits V] [OUT_DIR]     (default OUT_DIR: build/fpga/xc7)
#
# REQUIRES VIVADO (not available where the tests run: this flow has never been run by CI). The free
# Vivado edition supports the XC7A200T. The PCIe core, its transceivers and clocking come from
# the vendor IP catalogue; the open 7-series flow (openXC7) cannot build the PCIe hard block.
# Outputs: velo_ac701.bit (JTAG), velo_ac701.bin / .mcs (configuration flash), the .bit and .bin
# manifests for velo-flash (velo_ac701.bit.json, .bin.json), reports and checkpoints.
# The flow stops with an error if timing is not met.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
gen_args=()
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --node-bits|--vpid-bits) gen_args+=("$1" "$2"); shift 2 ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) out="$1"; shift ;;
    esac
done
out="${out:-$root/build/fpga/xc7}"
if ! command -v vivado >/dev/null 2>&1; then
    echo "build.sh: 'vivado' not found in PATH. This flow needs AMD/Xilinx Vivado (source its settings64.sh)." >&2
    exit 2
fi
mkdir -p "$out"
python3 "$here/gen_config.py" -o "$out/pcie_config.tcl" "${gen_args[@]}"
cd "$out"
vivado -mode batch -nojournal -log "$out/vivado.log" -source "$here/build.tcl" -tclargs "$out" "$out/pcie_config.tcl"
# the images' manifests for velo-flash (board name ac701 as in its board table; the .bin has no
# header naming its part, so velo-flash needs the manifest for it): velo-flash from VELO_FLASH,
# PATH or this tree's build/
flash="${VELO_FLASH:-$(command -v velo-flash || true)}"
if [ -z "$flash" ] && [ -x "$root/build/sw/tools/velo-flash" ]; then flash="$root/build/sw/tools/velo-flash"; fi
if [ -n "$flash" ]; then
    for f in velo_ac701.bit velo_ac701.bin; do "$flash" --board ac701 --write-manifest "$out/$f"; done
else
    echo "build.sh: velo-flash not found (make build, or set VELO_FLASH): no manifests written" >&2
fi
