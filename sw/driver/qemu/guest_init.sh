#!/bin/sh
# /init of the VELO QEMU smoke-test guest (busybox ash, PID 1). Built into the initramfs by
# velo_qemu.py together with /velo/velo.ko and /velo/test.conf. Prints one line per check:
#   VELOTEST <name> PASS|FAIL <detail>
# then "VELOTEST-DONE <passed> <failed>" and powers the VM off (or starts a shell: SHELL_AFTER=1).
# The host knows which check names to expect; a missing line is a failure there.
export PATH=/bin
/bin/busybox mkdir -p /proc /sys /dev /tmp /root
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
. /velo/test.conf
. /velo/guest_lib.sh

errno_text() {
	case $1 in
	ENODEV) echo "No such device" ;;
	EPROTO) echo "Protocol error" ;;
	EIO) echo "I/O error" ;;
	ENOENT) echo "No such file or directory" ;;
	EINVAL) echo "Invalid argument" ;;
	*) echo "$1" ;;
	esac
}

echo "VELOTEST-START $MODE $(uname -r)"
check kernel "uname -r=$(uname -r) vermagic=$KREL" [ "$(uname -r)" = "$KREL" ]

# ------------------------------------------------------------------------------------------------
# load: no VELO device present; load, look, unload, twice
mode_load() {
	for i in 1 2; do
		dmesg_mark
		_e=$(t insmod /velo/velo.ko 2>&1)
		_r=$?
		check load$i.insmod "${_e:-ok}" [ $_r -eq 0 ]
		check load$i.module "initstate=$(cat /sys/module/velo/initstate 2>&1)" \
			[ "$(cat /sys/module/velo/initstate 2>/dev/null)" = live ]
		_miss=""
		_vals=""
		for p in $PARAMS; do
			if [ -r /sys/module/velo/parameters/$p ]; then
				_vals="$_vals $p=$(cat /sys/module/velo/parameters/$p | tr -d '\n')"
			else
				_miss="$_miss $p"
			fi
		done
		check load$i.params "declared:${PARAMS:- none}; missing:${_miss:- none};$_vals" \
			[ -n "$PARAMS" -a -z "$_miss" ]
		check load$i.class "/sys/class/velo: $(ls /sys/class/velo 2>&1 | tr '\n' ' ')" \
			[ -d /sys/class/velo -a -z "$(ls /sys/class/velo 2>/dev/null)" ]
		_drv=/sys/bus/pci/drivers/velo
		check load$i.pcidrv "$(ls $_drv 2>&1 | tr '\n' ' ')" \
			[ -e $_drv/new_id -a -e $_drv/bind -a -e $_drv/unbind \
			-a "$(readlink -f $_drv/module 2>/dev/null)" = /sys/module/velo ]
		check load$i.nobound "devices bound: $(ls -d $_drv/0000:* 2>/dev/null | wc -l)" \
			[ -z "$(ls -d $_drv/0000:* 2>/dev/null)" ]
		no_velo_dev load$i.nodev
		_e=$(t rmmod velo 2>&1)
		_r=$?
		check load$i.rmmod "${_e:-ok}" [ $_r -eq 0 ]
		module_gone load$i.gone
		dmesg_clean load$i.dmesg
	done
	# module parameters the driver refuses: the load fails and leaves nothing behind
	_e1=$(t insmod /velo/velo.ko grant_policy=bogus 2>&1)
	_r1=$?
	_e2=$(t insmod /velo/velo.ko max_grants=0 2>&1)
	_r2=$?
	check load.badparam "grant_policy=bogus: rc $_r1 ${_e1:-}; max_grants=0: rc $_r2 ${_e2:-}" \
		[ $_r1 -ne 0 -a $_r2 -ne 0 ]
	module_gone load.badparam_gone
	dmesg_clean load.badparam_dmesg
}

# ------------------------------------------------------------------------------------------------
# probe: bind velo to emulated PCI devices that are not VELO NICs
# sysfs_good <name> <N> <wc_active>: /sys/class/velo/veloN shows what the good image holds
sysfs_good() {
	_c=/sys/class/velo/velo$2
	_bad=""
	for _f in /velo/regimg/expect/*; do
		_a=$(basename $_f)
		[ "$(cat $_c/$_a 2>&1)" = "$(cat $_f)" ] || _bad="$_bad $_a='$(cat $_c/$_a 2>&1 | tr '\n' ',')'"
	done
	[ "$(cat $_c/wc_active 2>&1)" = "$3" ] || _bad="$_bad wc_active='$(cat $_c/wc_active 2>&1)'(want $3)"
	check $1 "${_bad:-$(ls /velo/regimg/expect | wc -l) attributes and wc_active=$3 as expected}" [ -z "$_bad" ]
}
# bound_ok <name> <bdf> <N>: the device is bound to velo, /dev/veloN is a char device whose
# class device is the PCI device's child
bound_ok() {
	_l="driver=$(bound_to $2) dev=$(ls -l /dev/velo$3 2>&1 | cut -c1) parent=$(basename "$(readlink /sys/class/velo/velo$3/device 2>/dev/null)")"
	check $1 "$_l" [ "$(bound_to $2)" = velo -a -c /dev/velo$3 -a "$(readlink -f /sys/class/velo/velo$3/device)" = "/sys/devices/pci0000:00/$2" ]
}
# unbound_ok <name> <bdf> <N>: the device is free, /dev/veloN and its class device are gone
unbound_ok() {
	_l="driver=$(bound_to $2) $(ls -d /dev/velo$3 /sys/class/velo/velo$3 2>/dev/null | tr '\n' ' ')"
	check $1 "$_l" [ "$(bound_to $2)" = none -a ! -e /dev/velo$3 -a ! -e /sys/class/velo/velo$3 ]
}

mode_probe() {
	EDU=$(find_pci 0x1234 0x11e8)
	VV=$(find_pci 0x1af4 0x1050)
	BO=$(find_pci 0x1234 0x1111)
	check probe.devices "edu=${EDU:-missing} virtio-vga=${VV:-missing} bochs-display=${BO:-missing}" \
		[ -n "$EDU" -a -n "$VV" -a -n "$BO" ]
	_e=$(t insmod /velo/velo.ko 2>&1)
	_r=$?
	check probe.insmod "${_e:-ok}" [ $_r -eq 0 ]
	DRV=/sys/bus/pci/drivers/velo

	# 1. edu (1234:11e8) through new_id: its BAR0 starts with the identification register
	# 0x010000ed, not the ID block magic, so the probe must refuse it with -ENODEV.
	dmesg_mark
	write_to $DRV/new_id "1234 11e8"
	check probe.edu.new_id "${WERR:-ok}" [ -z "$WERR" ]
	check probe.edu.unbound "driver=$(bound_to $EDU)" [ "$(bound_to $EDU)" = none ]
	_m=$(dmesg_since | grep -E "$EDU: not a VELO device, ID type 0x10000ed" | head -1)
	check probe.edu.message "${_m:-no '$EDU: not a VELO device, ID type 0x10000ed' line}" [ -n "$_m" ]
	write_to $DRV/bind $EDU
	check probe.edu.bind "bind: ${WERR:-succeeded}" [ "${WERR##*: }" = "$(errno_text ENODEV)" ]
	no_velo_dev probe.edu.nodev
	write_to $DRV/remove_id "1234 11e8"
	check probe.edu.remove_id "${WERR:-ok}" [ -z "$WERR" ]

	# 2. virtio-vga: BAR0 is its VRAM (RAM), BAR2 8 MiB, MSI-X. The guest writes register
	# images into BAR0 and binds velo through driver_override, one image per variant.
	for _d in $VV $BO; do
		echo 1 >/sys/bus/pci/devices/$_d/enable
		write_to /sys/bus/pci/devices/$_d/driver_override velo
		[ -z "$WERR" ] || break
	done
	check probe.override "${WERR:-ok}" [ -z "$WERR" ]
	RES_VV=/sys/bus/pci/devices/$VV/resource0
	RES_BO=/sys/bus/pci/devices/$BO/resource0
	while read -r VAR EXP PAT; do
		[ "$EXP" = OK ] && continue
		_e=$(velo_guest poke $RES_VV /velo/regimg/regs-$VAR.txt 2>&1)
		_r=$?
		check probe.$VAR.image "$(wc -l </velo/regimg/regs-$VAR.txt) words written and read back ${_e}" [ $_r -eq 0 ]
		dmesg_mark
		write_to $DRV/bind $VV
		check probe.$VAR.bind "bind: ${WERR:-succeeded}, want $EXP" [ "${WERR##*: }" = "$(errno_text $EXP)" ]
		check probe.$VAR.unbound "driver=$(bound_to $VV)" [ "$(bound_to $VV)" = none ]
		_m=$(dmesg_since | grep -E "$VV: .*$PAT" | head -1)
		check probe.$VAR.message "${_m:-no line matching '$VV: .*$PAT'}" [ -n "$_m" ]
		no_velo_dev probe.$VAR.nodev
	done </velo/regimg/variants.txt

	# 3. the good image: virtio-vga becomes velo0 (MSI-X, send window, PAT write-combining)
	_e=$(velo_guest poke $RES_VV /velo/regimg/regs-good.txt 2>&1)
	_r=$?
	check probe.vv.image "${_e:-ok}" [ $_r -eq 0 ]
	dmesg_mark
	write_to $DRV/bind $VV
	check probe.vv.bind "bind: ${WERR:-ok}" [ -z "$WERR" ]
	bound_ok probe.vv.bound $VV 0
	sysfs_good probe.vv.sysfs 0 pat
	_m=$(dmesg_since | grep -E "$VV: velo0: node $IMG_NODE_ID, .* interrupt$" | head -1)
	check probe.vv.irq "${_m:-no 'velo0: ... interrupt' line}; /proc/interrupts: $(grep -c velo /proc/interrupts)" \
		[ -n "$_m" -a "$(grep -c velo /proc/interrupts)" = 1 ]
	velo_guest uapi probe.vv.uapi /dev/velo0 /sys/class/velo/velo0 $IMG_NODE_ID 1 1 >/tmp/uapi0.out 2>&1
	grep '^VELOTEST ' /tmp/uapi0.out
	set -- $(grep '^VELOINFO vpid' /tmp/uapi0.out)
	VPID0=${3:-0}
	CTL0=${5:-0}
	grep -v '^VELO' /tmp/uapi0.out
	_m=$(dmesg_since | grep -E "$VV: [^ ]+\[[0-9]+\] speaks VELO ABI 2 or 3 \(ioctl 0x[0-9a-f]+\); this driver speaks ABI 6" | head -1)
	check probe.vv.abi_log "${_m:-no 'speaks VELO ABI 2 or 3' line}" [ -n "$_m" ]
	_m=$(dmesg_since | grep -E "$VV: [^ ]+\[[0-9]+\] registers memory as VELO ABI 5 \(one scope box, no lists\); this driver speaks ABI 6" | head -1)
	check probe.vv.abi_register_log "${_m:-no 'registers memory as VELO ABI 5' line}" [ -n "$_m" ]
	# the MMU notifier's counters: every kind there, none seen (no RMA unit in the image)
	_n=$(cat /sys/class/velo/velo0/rma_notifier 2>&1 | tr '\n' ' ')
	check probe.vv.rma_notifier "$_n" [ "$_n" = "unmap 0 clear 0 protection_vma 0 protection_page 0 soft_dirty 0 release 0 migrate 0 exclusive 0 other 0 ignored 0 withdrawn 0 " ]

	# 4. bochs-display: RAM BAR0 too, but a 4 KiB BAR2 and no MSI: velo1 without sending and
	# with timer wakeups
	_e=$(velo_guest poke $RES_BO /velo/regimg/regs-good.txt 2>&1)
	_r=$?
	check probe.bo.image "${_e:-ok}" [ $_r -eq 0 ]
	dmesg_mark
	write_to $DRV/bind $BO
	check probe.bo.bind "bind: ${WERR:-ok}" [ -z "$WERR" ]
	bound_ok probe.bo.bound $BO 1
	sysfs_good probe.bo.sysfs 1 none
	_m1=$(dmesg_since | grep -E "$BO: BAR2 .* cannot hold the send window" | head -1)
	_m2=$(dmesg_since | grep -E "$BO: velo1: node $IMG_NODE_ID, .* timer wakeups$" | head -1)
	check probe.bo.fallback "${_m1:-no 'cannot hold the send window' line} | ${_m2:-no 'velo1: ... timer wakeups' line}" \
		[ -n "$_m1" -a -n "$_m2" ]
	velo_guest uapi probe.bo.uapi /dev/velo1 /sys/class/velo/velo1 $IMG_NODE_ID 0 0 >/tmp/uapi1.out 2>&1
	grep '^VELOTEST ' /tmp/uapi1.out
	grep -v '^VELO' /tmp/uapi1.out

	# 5. unbind velo0 (remove with no file open), then read what the driver left in BAR0
	write_to $DRV/unbind $VV
	check probe.vv.unbind "${WERR:-ok}" [ -z "$WERR" ]
	unbound_ok probe.vv.gone $VV 0
	check probe.vv.irq_freed "/proc/interrupts velo lines: $(grep -c velo /proc/interrupts)" \
		[ "$(grep -c velo /proc/interrupts)" = 0 ]
	bound_ok probe.bo.still $BO 1
	velo_guest regs probe.vv.regs $RES_VV $VPID0 $CTL0 $IMG_NODE_ID

	# rma_case <name> <polls>: the register image regs-<name>.txt on $VV, bound; velo_guest's <name>
	# mode registers, says it is ready (up to <polls> x 0.1 s), the device is unbound under it, and
	# it must exit 0 (its VELOTEST lines and anything else it printed follow); the caller checks
	# the kernel's messages since the image (dmesg_mark)
	rma_case() {
		_e=$(velo_guest poke $RES_VV /velo/regimg/regs-$1.txt 2>&1)
		_r=$?
		check probe.$1.image "${_e:-ok}" [ $_r -eq 0 ]
		dmesg_mark
		write_to $DRV/bind $VV
		check probe.$1.bind "bind: ${WERR:-ok}" [ -z "$WERR" ]
		rm -f /tmp/rma_ready /tmp/rma_go
		velo_guest $1 probe.$1 /dev/velo0 /sys/class/velo/velo0 /tmp/rma_ready /tmp/rma_go >/tmp/$1.out 2>&1 &
		RMA=$!
		_i=0
		while [ ! -e /tmp/rma_ready ] && [ $_i -lt $2 ] && kill -0 $RMA 2>/dev/null; do
			sleep 0.1
			_i=$((_i + 1))
		done
		sleep 0.2
		write_to $DRV/unbind $VV
		check probe.$1.unbind "${WERR:-ok}" [ -z "$WERR" ]
		touch /tmp/rma_go
		(sleep $STEP_TIMEOUT; kill -9 $RMA 2>/dev/null) &
		KILLER=$!
		wait $RMA
		_r=$?
		kill $KILLER 2>/dev/null
		check probe.$1.exit "status $_r" [ $_r -eq 0 ]
		grep '^VELOTEST ' /tmp/$1.out
		grep -v '^VELO' /tmp/$1.out
	}

	# 5b. the "rma" image (RMA block linked into the chain) on 00:06.0: registration, the MMU
	# notifier's events, the charges, then removal while a region is registered and its
	# process sleeps in WAIT. Under swiotlb=force, REGISTER must be refused (bounce).
	rma_case rma 300
	_m=$(dmesg_since | grep -E "$VV: RMA registration refused: DMA to .* would bounce" | head -1)
	if grep -q swiotlb=force /proc/cmdline; then
		check probe.rma.dmesg "${_m:-no 'RMA registration refused' line}" [ -n "$_m" ]
	else
		check probe.rma.dmesg "${_m:-no refusal, as it should be}" [ -z "$_m" ]
	fi

	# 5c. the "rmastuck" image: RMA.QUIESCE_STATUS BUSY for ever. munmap of a registered buffer:
	# the region never quiesces and stays pinned (STUCK) until remove unpins it with bus
	# mastering off.
	# (not under swiotlb=force: nothing can be registered there)
	if ! grep -q swiotlb=force /proc/cmdline; then
		rma_case rmastuck 600
		_m1=$(dmesg_since | grep -E "$VV: RMA region [0-9]+ never quiesced" | head -1)
		_m2=$(dmesg_since | grep -E "$VV: RMA region [0-9]+: unpinned at removal" | head -1)
		check probe.rmastuck.dmesg "${_m1:-no 'never quiesced' line} | ${_m2:-no 'unpinned at removal' line}" \
			[ -n "$_m1" -a -n "$_m2" ]
	fi

	# 5d. hot removal while a REGISTER is in flight: velo_guest holds its REGISTER in the ioctl
	# with userfaultfd (the argument page) and unbinds the device itself from a child; the unbind
	# must wait for the ioctl (SRCU), and nothing may stay pinned
	_e=$(velo_guest poke $RES_VV /velo/regimg/regs-rma.txt 2>&1)
	_r=$?
	check probe.uffd.image "${_e:-ok}" [ $_r -eq 0 ]
	write_to $DRV/bind $VV
	check probe.uffd.bind "bind: ${WERR:-ok}" [ -z "$WERR" ]
	velo_guest uffd probe.uffd /dev/velo0 /sys/class/velo/velo0 $VV >/tmp/uffd.out 2>&1 &
	UFFD=$!
	(sleep $STEP_TIMEOUT; kill -9 $UFFD 2>/dev/null) &
	KILLER=$!
	wait $UFFD
	_r=$?
	kill $KILLER 2>/dev/null
	check probe.uffd.exit "status $_r" [ $_r -eq 0 ]
	grep '^VELOTEST ' /tmp/uffd.out
	grep -v '^VELO' /tmp/uffd.out
	unbound_ok probe.uffd.unbound $VV 0
	dmesg_clean probe.uffd.dmesg

	# 6. remove while a process sleeps in WAIT with the endpoint mapped (hot unplug)
	write_to $DRV/bind $VV
	check probe.vv.rebind "bind: ${WERR:-ok}" [ -z "$WERR" ]
	bound_ok probe.vv.rebound $VV 0
	rm -f /tmp/ready
	velo_guest hold probe.hold /dev/velo0 /tmp/ready >/tmp/hold.out 2>&1 &
	HOLD=$!
	_i=0
	while [ ! -e /tmp/ready ] && [ $_i -lt 100 ] && kill -0 $HOLD 2>/dev/null; do
		sleep 0.1
		_i=$((_i + 1))
	done
	sleep 0.2
	# an open file pins the module
	_e=$(t rmmod velo 2>&1)
	_r=$?
	check probe.hold.rmmod_busy "rmmod: rc $_r ${_e}; initstate $(cat /sys/module/velo/initstate 2>&1)" \
		[ $_r -ne 0 -a "$(cat /sys/module/velo/initstate 2>&1)" = live ]
	write_to $DRV/unbind $VV
	check probe.hold.unbind "${WERR:-ok}" [ -z "$WERR" ]
	(sleep $STEP_TIMEOUT; kill -9 $HOLD 2>/dev/null) &
	KILLER=$!
	wait $HOLD
	_r=$?
	check probe.hold.exit "status $_r" [ $_r -eq 0 ]
	kill $KILLER 2>/dev/null
	grep '^VELOTEST ' /tmp/hold.out
	grep -v '^VELO' /tmp/hold.out
	unbound_ok probe.hold.unbound $VV 0

	# 7. rmmod with velo1 still bound: remove through the driver's unregistration
	_e=$(t rmmod velo 2>&1)
	_r=$?
	check probe.rmmod "${_e:-ok}" [ $_r -eq 0 ]
	module_gone probe.gone
	unbound_ok probe.bo.gone $BO 1

	# 8. insmod with both devices present (driver_override stays): both probed at load time,
	# node ids from the module parameter
	_e=$(t insmod /velo/velo.ko node_id=3,4 2>&1)
	_r=$?
	check probe.reload.insmod "${_e:-ok}" [ $_r -eq 0 ]
	bound_ok probe.reload.vv $VV 0
	bound_ok probe.reload.bo $BO 1
	check probe.reload.node_id "velo0 $(cat /sys/class/velo/velo0/node_id 2>&1), velo1 $(cat /sys/class/velo/velo1/node_id 2>&1)" \
		[ "$(cat /sys/class/velo/velo0/node_id 2>&1)" = 3 -a "$(cat /sys/class/velo/velo1/node_id 2>&1)" = 4 ]
	_e=$(t rmmod velo 2>&1)
	_r=$?
	check probe.reload.rmmod "${_e:-ok}" [ $_r -eq 0 ]
	module_gone probe.reload.gone
	dmesg_clean probe.dmesg

	# 9. leave velo bound to both devices for the power-off: .shutdown runs then, and its debug
	# line (dyndbg) on the console is what the host checks (probe.shutdown)
	_e=$(t insmod /velo/velo.ko dyndbg=+p 2>&1)
	_r=$?
	check probe.shutdown_armed "${_e:-insmod ok}; velo0 on $(bound_to $VV), velo1 on $(bound_to $BO)" \
		[ $_r -eq 0 -a "$(bound_to $VV)" = velo -a "$(bound_to $BO)" = velo ]
	SHUTDOWN_LOG=1
}

case $MODE in
load) mode_load ;;
probe) mode_probe ;;
*) fail mode "unknown mode $MODE" ;;
esac

echo "VELOTEST-DMESG-BEGIN"
dmesg
echo "VELOTEST-DMESG-END"
echo "VELOTEST-DONE $NPASS $NFAIL"
# the driver's shutdown line must reach the console (KERN_DEBUG)
[ "${SHUTDOWN_LOG:-0}" = 1 ] && echo 8 >/proc/sys/kernel/printk
if [ "$SHELL_AFTER" = 1 ]; then
	echo "interactive shell; 'poweroff -f' ends the VM"
	setsid cttyhack sh
fi
poweroff -f
