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
# no MPI job), TOOLS (directory of velo-check and velo-pingpong; empty: not run), LONG (1: long mode), VELO_PARAMS (insmod parameters of velo.ko), STEP_TIMEOUT (s, one insmod/mount),
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

# pids_of <program> <argument>: the processes running that program (its path) with that argument
pids_of() {
	ps -o pid,args | awk -v p="$1" -v a=" $2 " '$2 ~ ("/" p "$") && index($0 " ", a) { print $1 }'
}

# in_chroot <seconds> <command...>: run a program of the host's file system as root in the chroot
in_chroot() {
	_s=$1
	shift
	timeout -s KILL "$_s" chroot /host /usr/bin/env -i PATH=/usr/bin:/bin HOME=/run TMPDIR=/run "$@"
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

# 3. the chroot: the guest's own /proc, /sys and /dev, and writable /run and /dev/shm. The host's
# /tmp stays visible (read-only): the build tree may live there (a CI clone in /tmp); programs get
# TMPDIR=/run instead (in_chroot)
_bad=""
for _d in proc sys dev; do
	mount --bind /$_d /host/$_d 2>/dev/null || _bad="$_bad bind /$_d;"
done
mkdir -p /dev/shm
for _d in run dev/shm; do
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

	# 6b. (with TOOLS) velo-check between the guests (rank 0 in guest a on node 0): messages,
	# long messages, velo_wait sleeping in the driver, RMA put/get of registered memory (real
	# pinning), munmap of a registered buffer under a streaming put (the MMU notifier); then
	# velo-pingpong (wall-clock figures: the hw backend has no simulated clock)
	if [ -n "$TOOLS" ]; then
		_rank=0
		[ "$ROLE" = b ] && _rank=1
		_hw="VELO_DEVICE=hw:/dev/velo0 VELO_NODES=2 VELO_RANK=$_rank"
		in_chroot "$MSG_TIMEOUT" $_hw "$TOOLS/velo-check" --seed "$SEED" >/tmp/check.out 2>&1
		_r=$?
		cat /tmp/check.out
		_n=$(grep -c '^velo-check: [a-z]* PASS ' /tmp/check.out)
		check check "velo-check rank $_rank: status $_r, $_n of 5 checks passed" [ $_r -eq 0 -a "$_n" = 5 ]
		if [ "$LONG" = 1 ]; then
			_pp="--puts --iters 50 --stream 50"
		else
			_pp="--sizes 1,8,64,65,1000,4096 --iters 20 --stream 20 --puts --put-sizes 8,4096,65536 --put-iters 2"
		fi
		in_chroot "$MSG_TIMEOUT" $_hw "$TOOLS/velo-pingpong" $_pp >/tmp/pp.out 2>&1
		_r=$?
		cat /tmp/pp.out
		_m=1
		[ $_rank = 0 ] && _m=$(grep -c 'wall-clock times' /tmp/pp.out)
		check pingpong "velo-pingpong rank $_rank: status $_r" [ $_r -eq 0 -a "$_m" = 1 ]

		# 6c. a process killed mid-stream, on this node: a local pair (both ranks on this NIC)
		# ping-pongs and the echoing rank is killed. The driver tears its endpoint down once the
		# NIC is quiesced (page poisoning would catch DMA into freed rings: velo.dmesg); the vpids
		# open again
		_loc="VELO_DEVICE=hw:/dev/velo0"
		_me="--peer-node $NODE"
		_long="$_me --sizes 64 --iters 100000000 --stream 2 --quiet"
		in_chroot 300 $_loc "$TOOLS/velo-pingpong" --rank 1 $_long >/tmp/k1.out 2>&1 &
		in_chroot 300 $_loc "$TOOLS/velo-pingpong" --rank 0 $_long >/tmp/k0.out 2>&1 &
		sleep 3
		_p=$(pids_of velo-pingpong "--rank 1")
		_q=$(pids_of velo-pingpong "--rank 0")
		[ -n "$_p" ] && kill -9 $_p
		sleep 1
		[ -n "$_q" ] && kill -9 $_q
		wait
		check kill.midstream "killed the echoing rank (pid ${_p:-none}) while rank 0 (pid ${_q:-none}) streamed" \
			[ -n "$_p" -a -n "$_q" ]
		# a new local pair on the same vpids: 300 round trips of 8 and 64 bytes, every echo checked
		in_chroot 120 $_loc "$TOOLS/velo-pingpong" --rank 1 $_me --sizes 8,64 --iters 300 --stream 20 --quiet >/tmp/k1.out 2>&1 &
		in_chroot 120 $_loc "$TOOLS/velo-pingpong" --rank 0 $_me --sizes 8,64 --iters 300 --stream 20 --quiet >/tmp/k0.out 2>&1
		_r=$?
		wait
		cat /tmp/k0.out /tmp/k1.out
		check kill.reopen "a new pair on the same vpids: status $_r" [ $_r -eq 0 ]

		# 6d. hot removal under traffic: a local pair ping-pongs while the NIC is removed (sysfs);
		# both processes must end (an error, or SIGBUS on the window), never hang, and /dev/velo0
		# go; a rescan finds the NIC again, velo.ko binds it and an endpoint opens
		in_chroot 300 $_loc "$TOOLS/velo-pingpong" --rank 1 $_long >/tmp/h1.out 2>&1 &
		in_chroot 300 $_loc "$TOOLS/velo-pingpong" --rank 0 $_long >/tmp/h0.out 2>&1 &
		sleep 3
		_e=$(t sh -c "echo 1 > /sys/bus/pci/devices/$VELO_BDF/remove" 2>&1)
		_left=""
		for _i in $(seq 1 300); do
			_left=$(pids_of velo-pingpong "--rank 0")$(pids_of velo-pingpong "--rank 1")
			[ -z "$_left" ] && break
			sleep 0.1
		done
		[ -n "$_left" ] && kill -9 $_left
		wait
		check hotplug.remove "remove: ${_e:-ok}; processes left after 30 s: ${_left:-none}; /dev/velo0 $([ -e /dev/velo0 ] && echo still there || echo gone); rank 0: $(tail -1 /tmp/h0.out)" \
			[ -z "$_e" -a -z "$_left" -a ! -e /dev/velo0 ]
		echo 1 >/sys/bus/pci/rescan
		for _i in $(seq 1 100); do
			[ -c /dev/velo0 ] && break
			sleep 0.1
		done
		VELO_BDF=$(find_pci 0x10ee 0x7e10)
		_e=$(in_chroot "$MSG_TIMEOUT" "$MSG" info --node "$NODE" 2>&1 | grep '^VELOTEST velo.info ')
		_ok=0
		case "$_e" in *" PASS "*) _ok=1 ;; esac
		check hotplug.rescan "device ${VELO_BDF:-none} bound to $(bound_to ${VELO_BDF:-none}); ${_e:-no velo.info line}" \
			[ -c /dev/velo0 -a "$(bound_to ${VELO_BDF:-none})" = velo -a $_ok = 1 ]
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
