#!/bin/sh
# /init of a co-simulation guest (busybox ash, PID 1; docs/cosim.md). Built into the initramfs by
# velo_cosim.py with /velo/velo.ko, the 9p modules in /velo/modules (in load order) and
# /velo/test.conf. Mounts the host's root file system read-only over virtio-9p at /host, loads
# velo.ko for the guest's VELO NIC (a node of velo-fabric) and runs the build tree's programs in
# `chroot /host`, so that they use the host's glibc and libraries. Prints one line per check:
#   VELOTEST <name> PASS|FAIL <detail>
# then the kernel log, "VELOTEST-DONE <passed> <failed>", and powers the VM off.
#
# test.conf: MODE (selftest: no VELO device; pair: the two-guest exchange), KREL, ROLE (a, b or
# solo), NODE (this guest's node), PEER_NODE, VPID_A, VPID_B, COUNT, MAX_SIZE, SEED, MSG (absolute path of
# cosim_msg), VELO_RUN and MPI_COLLECTIVES (velo-run and mpi_collectives of the build tree; empty:
# no MPI job), VELO_PARAMS (insmod parameters of velo.ko), STEP_TIMEOUT (s, one insmod/mount),
# MSG_TIMEOUT (s, one program in the chroot), MODULES (files of /velo/modules in load order).
export PATH=/bin
/bin/busybox mkdir -p /proc /sys /dev /tmp /host
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
. /velo/test.conf
. /velo/guest_lib.sh

echo "VELOTEST-START $MODE $ROLE $(uname -r)"
check kernel "uname -r=$(uname -r) vermagic=$KREL" [ "$(uname -r)" = "$KREL" ]

# in_chroot <seconds> <command...>: run a program of the host's file system as root in the chroot
in_chroot() {
	_s=$1
	shift
	timeout -s KILL "$_s" chroot /host /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp "$@"
}

# 1. the 9p modules, each after what it depends on
_bad=""
for _m in $MODULES; do
	_e=$(t insmod /velo/modules/$_m.ko 2>&1) || _bad="$_bad $_m: ${_e:-failed};"
done
check cosim.modules "${_bad:-loaded:$(echo " $MODULES" | sed 's/ [0-9]*-/ /g')}" [ -z "$_bad" ]

# 2. the host's root, read-only. cache=loose: nobody changes the files a guest reads meanwhile
# (the build tree is built before the guests boot).
_e=$(t mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=262144,cache=loose hostroot /host 2>&1)
_r=$?
check cosim.9p "${_e:-mounted}; $MSG $([ -x /host$MSG ] && echo present || echo missing)" [ $_r -eq 0 -a -x /host$MSG ]

# 3. the chroot: the guest's own /proc, /sys and /dev, and writable /tmp and /run
_bad=""
for _d in proc sys dev; do
	mount --bind /$_d /host/$_d 2>/dev/null || _bad="$_bad bind /$_d;"
done
mkdir -p /dev/shm
for _d in tmp run dev/shm; do
	mount -t tmpfs -o mode=1777 tmpfs /host/$_d 2>/dev/null || _bad="$_bad tmpfs /$_d;"
done
# the loopback interface and a host name (Open MPI's launcher talks to its ranks over TCP on it
# and refuses the kernel's "(none)")
ip link set lo up 2>/dev/null || _bad="$_bad lo up;"
hostname "cosim-node$NODE"
_e=$(in_chroot "$MSG_TIMEOUT" "$MSG" --version 2>&1)
_r=$?
check cosim.chroot "${_bad:-mounts ok}; $MSG --version: status $_r: $_e" [ -z "$_bad" -a $_r -eq 0 ]

# 4. velo.ko. With a device (the fabric's NIC, 10ee:7e10) it must bind and make /dev/velo0; it has
# no MSI capability under TCG, so sleepers fall back to timer wakeups.
dmesg_mark
_e=$(t insmod /velo/velo.ko $VELO_PARAMS 2>&1)
_r=$?
VELO_BDF=$(find_pci 0x10ee 0x7e10)
if [ "$MODE" = selftest ]; then
	check velo.load "insmod ${_e:-ok}; device ${VELO_BDF:-none}; $(ls -d /dev/velo* 2>/dev/null | tr '\n' ' ')" \
		[ $_r -eq 0 -a -z "$VELO_BDF" -a ! -e /dev/velo0 -a "$(cat /sys/module/velo/initstate 2>/dev/null)" = live ]
	# libvelo's hw backend in the chroot sees no device
	_e=$(in_chroot "$MSG_TIMEOUT" "$MSG" info --node 0 2>&1)
	_r=$?
	_m=$(echo "$_e" | grep '^VELOTEST velo.info FAIL ' | cut -d' ' -f4-)
	case "$_m" in *hw:/dev/velo0*) _mm=1 ;; *) _mm=0 ;; esac
	check velo.nodev "cosim_msg info: status $_r: ${_m:-no velo.info line}" [ $_r -eq 1 -a $_mm = 1 ]
	echo "$_e" | grep -v '^VELO'
	# Open MPI runs in the guest (over shared memory here: there is no VELO device)
	if [ -n "$MPI_COLLECTIVES" ]; then
		{
			in_chroot "$MSG_TIMEOUT" mpirun --allow-run-as-root --oversubscribe -n 2 --mca pml ob1 \
				--mca btl self,vader "$MPI_COLLECTIVES"
			echo $? >/tmp/mpi.rc
		} 2>&1 | tee /tmp/mpi.out
		_r=$(cat /tmp/mpi.rc)
		_m=$(grep -E '^collectives: 2 ranks OK' /tmp/mpi.out)
		check mpi.collectives "status $_r (btl self,vader); ${_m:-no 'collectives: 2 ranks OK' line}" [ $_r -eq 0 -a -n "$_m" ]
	fi
else
	_nid=$(cat /sys/class/velo/velo0/node_id 2>/dev/null)
	check velo.load "insmod ${_e:-ok}; device ${VELO_BDF:-none} bound to $(bound_to ${VELO_BDF:-none}); /dev/velo0 $([ -c /dev/velo0 ] && echo char device || echo missing); node_id ${_nid:-none} (want $NODE)" \
		[ $_r -eq 0 -a -n "$VELO_BDF" -a "$(bound_to ${VELO_BDF:-none})" = velo -a -c /dev/velo0 -a "$_nid" = "$NODE" ]
	echo "---- velo.ko's kernel messages"
	dmesg_since | grep -E 'velo'
	echo "----"
	_m=$(dmesg_since | grep -E "velo0: node [0-9]+, .* timer wakeups$" | head -1)
	check velo.irq "${_m:-no 'velo0: ... timer wakeups' line}" [ -n "$_m" ]

	# 5. libvelo's hw backend opens an endpoint on /dev/velo0 in the chroot
	in_chroot "$MSG_TIMEOUT" "$MSG" info --node "$NODE" 2>&1
	_r=$?
	check velo.info_exit "status $_r" [ $_r -eq 0 ]

	# 6. the two-guest exchange: A sends COUNT messages to B, B checks and echoes them back
	if [ "$MODE" = pair ]; then
		if [ "$ROLE" = a ]; then
			_args="send --node $NODE --vpid $VPID_A --peer-node $PEER_NODE --peer-vpid $VPID_B"
		else
			_args="echo --node $NODE --vpid $VPID_B --peer-node $PEER_NODE --peer-vpid $VPID_A"
		fi
		in_chroot "$MSG_TIMEOUT" "$MSG" $_args --count "$COUNT" --max-size "$MAX_SIZE" --seed "$SEED" --timeout "$MSG_TIMEOUT" \
			--prefix "pair.$ROLE" 2>&1
		_r=$?
		check pair.$ROLE.exit "status $_r" [ $_r -eq 0 ]
	fi

	# 7. (long mode) an MPI job on this guest's node: velo-run --mpi runs `mpirun -n 2`, whose
	# ranks talk through the VELO BTL over /dev/velo0 (both on this node: the NIC delivers to
	# itself)
	if [ -n "$MPI_COLLECTIVES" ]; then
		{
			in_chroot "$MSG_TIMEOUT" "$VELO_RUN" --mpi -n 2 --device hw:/dev/velo0 \
				--timeout $((MSG_TIMEOUT - 10)) -- "$MPI_COLLECTIVES"
			echo $? >/tmp/mpi.rc
		} 2>&1 | tee /tmp/mpi.out
		_r=$(cat /tmp/mpi.rc)
		_m=$(grep -E '^collectives: 2 ranks OK' /tmp/mpi.out)
		check mpi.collectives "status $_r; ${_m:-no 'collectives: 2 ranks OK' line}" [ $_r -eq 0 -a -n "$_m" ]
	fi
fi

# 7. unload (the remove path with the device bound), then the kernel log must be clean
for _d in dev/shm proc sys dev tmp run; do
	umount /host/$_d 2>/dev/null
done
_e=$(t rmmod velo 2>&1)
_r=$?
check velo.rmmod "${_e:-ok}" [ $_r -eq 0 ]
module_gone velo.gone
dmesg_clean velo.dmesg

echo "guest memory (kB): $(grep -E '^(MemTotal|MemAvailable):' /proc/meminfo | tr -s ' ' | tr '\n' ' ')"
echo "VELOTEST-DMESG-BEGIN"
dmesg
echo "VELOTEST-DMESG-END"
echo "VELOTEST-DONE $NPASS $NFAIL"
umount /host 2>/dev/null
poweroff -f
