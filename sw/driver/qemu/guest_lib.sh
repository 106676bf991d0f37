# Shell helpers of the VELO QEMU guests (busybox ash), sourced by their /init scripts
# (guest_init.sh, cosim_init.sh): the VELOTEST verdict lines, time limits, kernel log checks,
# PCI lookups. Expects STEP_TIMEOUT (seconds) from the test configuration.

NPASS=0
NFAIL=0
pass() { NPASS=$((NPASS + 1)); echo "VELOTEST $1 PASS $2"; }
fail() { NFAIL=$((NFAIL + 1)); echo "VELOTEST $1 FAIL $2"; }
# check <name> <detail> <command...>: PASS if the command succeeds
check() {
	_n=$1
	_d=$2
	shift 2
	if "$@"; then pass "$_n" "$_d"; else fail "$_n" "$_d"; fi
}
# run a command with a time limit (a hung driver call must not hang the whole boot)
t() { timeout -s KILL "$STEP_TIMEOUT" "$@"; }

# Kernel log problems: WARN/BUG/oops, slub_debug reports (redzone, poison, double free),
# list/refcount corruption, lockups, leaked slab objects at cache destruction.
SPLAT='(^|[^A-Za-z_])(BUG|WARNING)[: ]|Oops|Call Trace|general protection|KASAN|UBSAN|list_(add|del) corruption|refcount_t: |Poison overwritten|Redzone|Object padding|Object already free|Bad page|soft lockup|blocked for more than|Kernel panic|Unable to handle|stack-protector|Objects remaining|Slab cache still has objects|slab error|cannot create duplicate|nobody cared|free already-free'
# Taint flags that mean something went wrong: M(4) B(5) D(7) W(9) L(14)
TAINT_BAD=$(((1 << 4) | (1 << 5) | (1 << 7) | (1 << 9) | (1 << 14)))

dmesg_mark() { MARK=$(dmesg | wc -l); }
dmesg_since() { dmesg | tail -n +$((MARK + 1)); }
# dmesg_clean <name>: no splat in the whole log, no bad taint flag
dmesg_clean() {
	_s=$(dmesg | grep -E "$SPLAT" | head -3 | tr '\n' '|')
	_t=$(cat /proc/sys/kernel/tainted)
	if [ -z "$_s" ] && [ $((_t & TAINT_BAD)) -eq 0 ]; then
		pass "$1" "no splat, taint=$_t"
	else
		fail "$1" "splat: ${_s:-none} taint=$_t"
	fi
}
# no_velo_dev <name>: no /dev/velo* node and no /sys/class/velo/velo* device
no_velo_dev() {
	_l=$(ls -d /dev/velo* /sys/class/velo/velo* 2>/dev/null | tr '\n' ' ')
	check "$1" "${_l:-none}" [ -z "$_l" ]
}
# module_gone <name>: nothing of the module is left
module_gone() {
	_l=""
	for _p in /sys/module/velo /sys/class/velo /sys/bus/pci/drivers/velo; do
		[ -e $_p ] && _l="$_l $_p"
	done
	grep -q '^velo ' /proc/modules && _l="$_l /proc/modules"
	check "$1" "left:${_l:- nothing}" [ -z "$_l" ]
}
# find_pci <vendor> <device>: the first PCI address with those ids
find_pci() {
	for _d in /sys/bus/pci/devices/*; do
		if [ "$(cat $_d/vendor)" = "$1" ] && [ "$(cat $_d/device)" = "$2" ]; then
			basename $_d
			return 0
		fi
	done
	return 1
}
# write_to <file> <text>: write, leaving the error text (strerror) in $WERR; status of the write
write_to() {
	WERR=$( { echo "$2" >"$1"; } 2>&1)
}
# bound_to <bdf>: name of the driver bound to the device, or "none"
bound_to() {
	if [ -e /sys/bus/pci/devices/$1/driver ]; then
		basename "$(readlink /sys/bus/pci/devices/$1/driver)"
	else
		echo none
	fi
}
