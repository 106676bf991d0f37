#!/usr/bin/env bash
# Install the Debian packages the build and the tests need (Debian 12). As root: installs what is
# missing. Otherwise: prints the exact command and fails.
set -euo pipefail
PKGS=(make cmake ninja-build g++ python3 pkg-config zlib1g-dev libgtest-dev libssl-dev
      verilator yosys nextpnr-ice40 fpga-icestorm clang-format gnuplot-nox valgrind
      libpci-dev nlohmann-json3-dev openfpgaloader linux-headers-amd64 linux-image-amd64 qemu-system-x86
      busybox-static cpio kmod sparse dkms linux-source-6.1 openmpi-bin libopenmpi-dev netpipe-openmpi tcl
      iproute2 iputils-ping iperf3 netpipe-tcp libfabric-dev libfabric-bin)
missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  $cmd
else
  echo "deps: missing Debian packages: ${missing[*]}" >&2
  echo "deps: run as root:  sudo $cmd" >&2
  exit 1
fi
