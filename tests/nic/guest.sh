#!/bin/bash
# guest.sh - the NIC VM's side of tests/nic (run by guest-init.sh with the
# host's bash; docs/interop.md "PMDs in a VM"). From the kernel command line:
#   nicvm_nics=NAME:DRIVER:SLOT:N:QMPID:TAP,...   the NICs under test, driven
#                                      in turn: NAME virtio|e1000e|vmxnet3 at PCI
#                                      0000:00:SLOT.0, bound to DRIVER (vfio-pci
#                                      or uio_pci_generic), ours 10.78.0.N and
#                                      fd78::N; QMPID and TAP name it on the host
#   nicvm_src=DIR nicvm_build=DIR      the source tree and the build under test
#   nicvm_out=DIR                      the share (read-write): requests to the
#                                      host and the rxe VM, results, logs
#   nicvm_mode=test|bench
#   nicvm_cases=full|short|ci          guest-cases.sh: the set each NIC runs
# The kernel's own NIC (virtio-net at 0000:00:11.0, eth0) carries the
# programs' TCP side channel. Peers on the bridge: the rxe VM (10.78.0.2,
# fd78::2; TCP on the same address) and uroced on the host side through
# af_packet (10.78.0.4, fd78::4; TCP 10.78.0.3). Ours: 10.78.0.N, fd78::N
# per NIC (TCP 10.78.0.10, fd78::10).
#
# Every check prints "ok  WHAT" or "FAIL WHAT" into OUT/result.log; the host
# (nic.py) turns that into the verdict. Requests to the host and to the rxe
# VM are files in OUT/req and OUT/rxe (nic.py and peer.sh answer them).
set -u
for kv in $(cat /proc/cmdline); do
	case "$kv" in nicvm_*=*) k=${kv%%=*}; eval "${k#nicvm_}=\${kv#*=}" ;; esac
done
: "${nics:?}" "${src:?}" "${build:?}" "${out:?}" "${mode:=test}"
UROCED=$build/emu/uroced
SHIM=$build/verbs/liburoce.so
CTL=$build/tools/ctl/uroce-ctl
RUNCASES=$src/tests/interop/runcases.sh
KNIC=0000:00:11.0 RTL=0000:00:12.0
MYTCP=10.78.0.10 MYTCP6=fd78::10
# use_nic NAME:DRIVER:SLOT:N:QMPID:TAP - the NIC the next checks are about
use_nic() {
	local IFS=:
	set -- $1
	dev=$1 bind=$2 DUT=0000:00:$3.0 MY4=10.78.0.$4 MY6=fd78::$4 QMPID=$5 TAP=$6
	MAC=52:54:00:4e:00:$3
	# TCP ports of its cases: its own range (the peers' listeners of one
	# NIC's cases never meet another's)
	PBASE=$((18000 + 0x$3 * 32))
}
use_nic "${nics%%,*}"
RXE4=10.78.0.2 RXE6=fd78::2 HOST4=10.78.0.4 HOST6=fd78::4 HOSTTCP=10.78.0.3
RUN=/run/uroce-nic
# a program takes seconds to start in a TCG guest: an RDMA CM client gives
# its server that long before connecting (runcases.sh)
CM_FIRST_PAUSE=3 CM_PAUSE=5
LOG=$out/dut-uroced.log
RES=$out/result.log
mkdir -p "$RUN" "$out/req" "$out/rxe" "$out/res" && chmod 700 "$RUN"
export UROCE_RUN_DIR=$RUN

say() { echo "[guest:$dev $(cut -d' ' -f1 /proc/uptime)] $*"; }
uptime_s() { local u; read -r u _ < /proc/uptime; echo "${u%.*}"; }
# Progress, for the host's watchdog (nic.py): step names what the guest is
# doing (it is in the watchdog's verdict), beat says a wait loop still
# turns (a uroce-ctl call answered). The host fails the test when neither
# the console nor anything the guest writes in the share changed for
# UROCE_NIC_STALL_S (240 s), and asks the watcher below for a dump first.
step() { echo "$dev: $*" > "$out/step"; say "step: $*"; }
beat() { : > "$out/beat"; }
# stall_dump: where every process of the guest is, uroced's threads in
# detail (kernel stacks, and user stacks by gdb from the host's /usr)
stall_dump() {
	local d p
	echo "== processes (pid state wchan command)"
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		echo "$p $(awk '{print $3}' "$d/stat" 2>/dev/null) $(cat "$d/wchan" 2>/dev/null)" \
			"$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null | cut -c1-150)"
	done
	for d in /proc/[0-9]*; do
		[ "$(cat "$d/comm" 2>/dev/null)" = uroced ] || continue
		p=${d#/proc/}
		for t in "$d"/task/*; do
			echo "== uroced $p thread ${t##*/} ($(cat "$t/comm" 2>/dev/null)," \
				"state $(awk '{print $3}' "$t/stat" 2>/dev/null), wchan $(cat "$t/wchan" 2>/dev/null))"
			cat "$t/stack" 2>/dev/null
		done
		echo "== gdb: uroced $p"
		timeout 120 gdb -q -batch -nx -p "$p" -ex 'info threads' -ex 'thread apply all bt' 2>&1 | tail -150
	done
	echo "== /proc/interrupts"; cat /proc/interrupts
	echo "== dmesg"; dmesg | tail -40
}
# the host asks for the dump by creating dump.req (its watchdog fired)
stall_watch() {
	while :; do
		if [ -e "$out/dump.req" ]; then
			rm -f "$out/dump.req"
			stall_dump > "$out/stall-dump.tmp" 2>&1
			mv "$out/stall-dump.tmp" "$out/stall-dump.txt"
		fi
		sleep 1
	done
}
# the checks of one NIC carry its name when the VM drives several
ok() { echo "ok   ${NICTAG}$*" >> "$RES"; say "ok   $*"; }
bad() { echo "FAIL ${NICTAG}$*" >> "$RES"; say "FAIL $*"; }
NICTAG=
ck() { # WHAT COMMAND...: ok when the command succeeds
	local what=$1; shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}
# kmod NAME [PARAM=V...]: the module, its dependencies first; the
# parameters go to NAME itself (the last file)
kmod() {
	local m=$1 f last; shift
	last=$(tail -1 "/kmod/$m.load")
	for f in $(cat "/kmod/$m.load"); do
		if [ "$f" = "$last" ]; then /busybox/insmod "$f" "$@" 2>/dev/null
		else /busybox/insmod "$f" 2>/dev/null; fi
	done
}

# ------------------------------------------------------------------ requests
# req DIR CMD...: one request to the host (DIR=req) or the rxe VM (DIR=rxe);
# its answer (exit status, then output) when it is done. Bounded by the
# other side: nic.py kills this VM when it cannot serve any more.
req() {
	local d=$1; shift
	# unique also from a background subshell (a phase's peer side)
	local f=$out/$d/$(date +%s%N).$BASHPID
	echo "$*" > "$f.tmp" && mv "$f.tmp" "$f.req"
	while [ ! -e "$f.done" ]; do sleep 0.1; done
	tail -n +2 "$f.done"
	return "$(head -1 "$f.done")"
}
host() { req req "$@"; }
rxe() { req rxe "$@"; }

# ------------------------------------------------------------------ devices
bind() { # ADDR DRIVER: what the kernel holds it with afterwards
	local d=/sys/bus/pci/devices/$1
	[ -e "$d/driver" ] && echo "$1" > "$d/driver/unbind"
	echo "$2" > "$d/driver_override"
	echo "$1" > /sys/bus/pci/drivers_probe 2>/dev/null
	basename "$(readlink "$d/driver" 2>/dev/null)"
}
unbind() { local d=/sys/bus/pci/devices/$1; [ -e "$d/driver" ] && echo "$1" > "$d/driver/unbind"; echo > "$d/driver_override"; }

UPID=
# start_uroced ARGS...: uroced on the NIC under test; 0 once it serves
start_uroced() {
	: > "$LOG.cur"
	"$UROCED" --run-dir "$RUN" --ip "$MY4" --ip "$MY6" "$@" > "$LOG.cur" 2>&1 &
	UPID=$!
	local n=0
	while [ ! -S "$RUN/uroce0.sock" ] && kill -0 "$UPID" 2>/dev/null && [ $n -lt 3000 ]; do
		sleep 0.1; n=$((n + 1)); [ $((n % 20)) != 0 ] || beat
	done
	[ -S "$RUN/uroce0.sock" ] || { say "uroced did not start:"; cat "$LOG.cur"; stop_uroced; return 1; }
}
# stop_uroced: its exit status (0 after SIGTERM), log appended to $LOG;
# one that does not stop within 120 s is dumped (where it hangs), killed,
# and fails with 125
stop_uroced() {
	[ -n "$UPID" ] || return 0
	kill -TERM "$UPID" 2>/dev/null
	# by the clock, not by turns: a turn of this loop takes 0.3 s in a
	# TCG guest, 1200 of them were 400 s. The clock is /proc/uptime (boot
	# time, monotonic), and the verdict needs an elapsed time that was
	# computed: twice a run said 'did not stop within 120 s' under a
	# second of uptime after the SIGTERM (once with SECONDS, once with
	# the uptime inside the loop's condition), the daemon then in its
	# normal exit; the line now carries both readings and the turns
	local n=0 st t0 now el=0
	t0=$(uptime_s)
	running() { kill -0 "$UPID" 2>/dev/null && [ -z "$(awk '$3 == "Z"' /proc/$UPID/stat 2>/dev/null)" ]; }
	while running; do
		now=$(uptime_s)
		el=$((now - t0))
		[ "$el" -lt 120 ] || break
		sleep 0.1; n=$((n + 1)); [ $((n % 20)) != 0 ] || beat
	done
	if running && [ "$el" -ge 120 ]; then
		say "uroced $UPID did not stop within 120 s of SIGTERM (uptime $t0 -> $now, $n turns): its stacks in $LOG"
		stall_dump >> "$LOG.cur" 2>&1
		kill -KILL "$UPID" 2>/dev/null
		wait "$UPID"
		cat "$LOG.cur" >> "$LOG"
		echo "uroced exit status 125 (did not stop)" >> "$LOG"
		UPID=
		return 125
	fi
	wait "$UPID"; st=$?
	cat "$LOG.cur" >> "$LOG"
	echo "uroced exit status $st" >> "$LOG"
	UPID=
	return $st
}
ctl() { "$CTL" -r "$RUN" "$@"; }
counter() { # NAME: a port/nic/xstat counter of uroce0
	ctl counters --port | awk -v n="$1" '$1 == n {print $2; f=1} END {if (!f) print 0}'
}

# ------------------------------------------------------------------ cases
# run_phase NAME PEER(rxe|host) PORT0: the cases in $out/cases-NAME.txt, both
# sides at once (runcases.sh: the server runs, the client retries until it
# listens), each case's verdict from both sides' exit status
run_phase() {
	local name=$1 peer=$2 port0=$3 cf=$out/cases-$1.txt ptcp
	[ "$peer" = rxe ] && ptcp=$RXE4 || ptcp=$HOSTTCP
	step "phase $name against $peer: $(grep -c . "$cf") cases"
	if [ "$peer" = rxe ]; then rxe cases "cases-$name.txt" "$port0" "$MY4" "$MY6" > /dev/null &
	else host cases "cases-$name.txt" "$port0" "$MY4" "$MY6" > /dev/null & fi
	local rp=$!
	env DEV=uroce0 GID=1 PEER="$ptcp" PORT0="$port0" CASE_TIMEOUT=60 CONNECT_TRIES=300 \
		CM_FIRST_PAUSE=$CM_FIRST_PAUSE CM_PAUSE=$CM_PAUSE \
		SYNC="$out/sync" ADDR4_dut=$MY4 ADDR6_dut=$MY6 ADDR4_rxe=$RXE4 ADDR6_rxe=$RXE6 \
		ADDR4_host=$HOST4 ADDR6_host=$HOST6 WRAP="env LD_PRELOAD=$SHIM" \
		sh "$RUNCASES" dut "$cf" "$out/res/$name" > "$out/res/$name.dut.out" 2>&1
	wait $rp
	while IFS='|' read -r cn server prog _; do
		[ -n "$cn" ] || continue
		local a b
		a=$(cat "$out/res/$name/$cn.dut.rc" 2>/dev/null || echo none)
		b=$(cat "$out/res/$name/$cn.$peer.rc" 2>/dev/null || echo none)
		if [ "$a" = 0 ] && [ "$b" = 0 ]; then
			ok "$name/$cn: $prog, server $server"
		else
			bad "$name/$cn: $prog, server $server: dut rc=$a $peer rc=$b"
			tail -8 "$out/res/$name/$cn.dut.log" 2>/dev/null | sed 's/^/    dut| /'
		fi
	done < "$cf"
}

. "$src/tests/nic/guest-cases.sh"

# ------------------------------------------------------------------ set-up
stall_watch &
say "start: $(uname -r), $(nproc) cpu, $(awk '/HugePages_Total/ {print $2}' /proc/meminfo) hugepages"
kmod virtio_net
kmod uio_pci_generic
# qemu's intel-iommu runs here without interrupt remapping (TCG's IO-APIC
# timer does not go through it): vfio type1 refuses such a platform unless
# told that MSIs the device could forge are acceptable (a VM's own NIC)
kmod vfio_iommu_type1 allow_unsafe_interrupts=1
kmod vfio_pci
KIF=$(ls /sys/bus/pci/devices/$KNIC/virtio*/net 2>/dev/null | head -1)
[ -n "$KIF" ] || { bad "the kernel's NIC ($KNIC) has no interface"; exit 1; }
ip link set lo up
ip link set "$KIF" mtu 9000 up
ip addr add $MYTCP/24 dev "$KIF"
ip addr add $MYTCP6/64 dev "$KIF" nodad
# the programs' TCP reaches the peers' kernels; wait for the link-local
# address too (a tentative one makes the first IPv6 connect fail)
n=0; while [ -n "$(ip -6 addr show dev "$KIF" tentative)" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done

case "$mode" in
test)
	case "$nics" in
	*,*)
		for n in $(echo "$nics" | tr ',' ' '); do
			use_nic "$n"; NICTAG="$dev: "
			nic_ci "$PBASE"
		done ;;
	*) nic_test ;;
	esac ;;
bench) nic_bench ;;
stall)
	# nic.py --selftest-stall: a daemon that ignores SIGTERM, then a
	# guest that makes no progress (the host's watchdog must catch both)
	echo "$DUT" > /sys/bus/pci/devices/$DUT/driver/unbind 2>/dev/null
	bind "$DUT" "$bind" > /dev/null
	step "selftest: uroced stopped with SIGSTOP, then SIGTERM"
	if start_uroced --port "$DUT" --mtu 1500; then
		kill -STOP "$UPID"
		stop_uroced; say "stop_uroced: $?"
	fi
	step "selftest: stalled on purpose"
	exec -a selftest-sleep sleep 100000 ;;
probe)
	echo "$DUT" > /sys/bus/pci/devices/$DUT/driver/unbind 2>/dev/null
	say "bound to: $(bind "$DUT" "$bind")"
	ls -l /sys/bus/pci/devices/$DUT/iommu_group /dev/vfio 2>&1
	ls /sys/class/iommu /sys/kernel/iommu_groups/*/devices 2>&1 | head -40
	dmesg | grep -iE 'dmar|iommu|vfio' | head -30
	"$UROCED" --run-dir "$RUN" --ip "$MY4" --port "$DUT" --mtu 1500 \
		--eal "--log-level=eal,debug --log-level=pmd.net.virtio.*,debug" > "$out/probe.log" 2>&1 &
	UPID=$!; n=0
	while [ ! -S "$RUN/uroce0.sock" ] && kill -0 $UPID 2>/dev/null && [ $n -lt 1200 ]; do sleep 0.1; n=$((n + 1)); done
	kill $UPID 2>/dev/null; wait $UPID; UPID=
	grep -iE 'iommu|vfio|error|fail|cannot' "$out/probe.log" | head -40
	;;
esac
stop_uroced
say "done"
