#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
# Checks of velo.ko (ctest driver.kbuild_w1, driver.sparse, driver.dkms):
#   kbuild_check.sh w1     <src> <kdir> <work>   clean W=1 build: no warning from our files
#   kbuild_check.sh sparse <src> <kdir> <work>   clean W=1 C=2 CHECK=sparse build: no sparse
#                                                 warning from our files
#   kbuild_check.sh dkms   <src> <kdir> <work>   dkms add + build of the staged tree in private
#                                                 DKMS trees (nothing installed, nothing signed)
# Every mode also checks the module (vermagic of <kdir>, the PCI alias from the spec, the
# parameters) and that the source tree holds no build product. Exit 77: skipped (no headers,
# no sparse, no dkms).
set -u
mode=$1 src=$2 kdir=$3 work=$4
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

[ -n "$kdir" ] && [ -f "$kdir/Makefile" ] || skip "no kernel build directory ('$kdir'): install linux-headers-amd64"
# the release modules are built for (Debian overrides kernel.release; UTS_RELEASE is what counts)
krel=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$kdir/include/generated/utsrelease.h" 2>/dev/null)
[ -n "$krel" ] || skip "$kdir has no include/generated/utsrelease.h"
# a make or ninja above us must not hand its jobserver or flags down
unset MAKEFLAGS MFLAGS MAKELEVEL
rm -rf "$work"
mkdir -p "$work"
log=$work/build.log

case $mode in
w1 | sparse)
	extra="W=1"
	if [ "$mode" = sparse ]; then
		command -v sparse >/dev/null || skip "sparse is not installed"
		extra="W=1 C=2 CHECK=sparse"
	fi
	# shellcheck disable=SC2086
	make -C "$src" BUILD="$work/kbuild" KDIR="$kdir" $extra modules >"$log" 2>&1
	rc=$?
	cat "$log"
	[ $rc -eq 0 ] || fail "kbuild failed ($rc)"
	ko=$work/kbuild/velo.ko
	# diagnostics about our files (staged under $work) fail the test; others are kbuild's own
	ours=$(grep -E "(warning|error):" "$log" | grep -F "$work/")
	noise=$(grep -E "(warning|error):" "$log" | grep -vF "$work/")
	[ -z "$noise" ] || printf 'note: kbuild diagnostics not about our files:\n%s\n' "$noise"
	[ -z "$ours" ] || fail "$(printf '%s\n' "$ours" | wc -l) diagnostics in our files (see above)"
	if [ "$mode" = sparse ]; then
		n=$(grep -c "CHECK " "$log")
		# every object of velo.ko (Kbuild's velo-y and velo-core-y) is one file sparse checks
		want=$(grep -o '[a-z_]*\.o\b' "$src/Kbuild" | grep -vx 'velo\.o' | sort -u | wc -l)
		[ "$n" -eq "$want" ] || fail "sparse checked $n files, want $want (the objects of velo.ko in Kbuild)"
	fi
	;;
dkms)
	command -v dkms >/dev/null || skip "dkms is not installed"
	ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$src/dkms.conf")
	[ -n "$ver" ] || fail "no PACKAGE_VERSION in dkms.conf"
	make -s -C "$src" stage BUILD="$work/src/velo-$ver" || fail "staging failed"
	mkdir -p "$work/tree"
	# private trees; sign_file pointing nowhere: dkms neither signs nor makes a key in /var/lib/dkms
	dkms add -m velo -v "$ver" --sourcetree "$work/src" --dkmstree "$work/tree" >"$log" 2>&1 &&
		sign_file=/nonexistent/sign-file dkms build -m velo -v "$ver" -k "$krel" --kernelsourcedir "$kdir" \
			--sourcetree "$work/src" --dkmstree "$work/tree" >>"$log" 2>&1
	rc=$?
	cat "$log"
	grep -q "must be root" "$log" && skip "dkms needs root here"
	[ $rc -eq 0 ] || { cat "$work"/tree/velo/"$ver"/build/make.log 2>/dev/null; fail "dkms failed ($rc)"; }
	ko=$(find "$work/tree" -name velo.ko | head -n 1)
	[ -n "$ko" ] || fail "dkms built no velo.ko"
	;;
*)
	fail "unknown mode $mode"
	;;
esac

[ -f "$ko" ] || fail "no $ko"
vm=$(modinfo -F vermagic "$ko") || fail "modinfo $ko"
case "$vm" in "$krel "*) ;; *) fail "vermagic '$vm' is not for $krel" ;; esac
want=$(sed -n 's/^#define VELO_PCI_\(VENDOR\|DEVICE\)_ID 0x\([0-9A-Fa-f]*\)$/\2/p' "$src/../../include/velo/velo_hw.h" | tr a-f A-F)
alias=$(printf 'pci:v0000%sd0000%ssv*sd*bc*sc*i*' $want)
modinfo -F alias "$ko" | grep -qxF "$alias" || fail "no alias $alias in $(modinfo -F alias "$ko")"
for p in node_id grant_policy use_irq poll_interval_us max_ring_log2 max_grants; do
	modinfo -F parm "$ko" | grep -q "^$p:" || fail "parameter $p is not declared"
done
[ "$(modinfo -F license "$ko")" = "Dual MIT/GPL" ] || fail "license"
left=$(find "$src" "$src/../core" \( -name '*.o' -o -name '*.ko' -o -name '.*.cmd' -o -name '*.mod' -o -name '*.mod.c' \
	-o -name 'Module.symvers' -o -name 'modules.order' \) 2>/dev/null)
[ -z "$left" ] || fail "build products in the source tree: $left"
echo "PASS: $mode ($krel, $(stat -c %s "$ko") bytes)"
