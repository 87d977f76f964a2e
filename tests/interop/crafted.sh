#!/bin/bash
# crafted.sh BUILD_ROOT [OUTDIR] - malformed-but-parsable packets against rdma_rxe and uroce.
#
# One network namespace, one boot of the rxe VM (docs/interop.md, "Malformed
# packets against rxe"):
#
#   netns iop-crafted-PID ─ tap iop0 ─┬─ qemu (TCG): eth0 10.77.0.2, rxe0; crafted_peer
#                                     └─ kernel 10.77.0.3: the crafter's address
#                         ─ veth cfu0 ── uroced --port net_af_packet0,iface=cfu0 --ip 10.78.0.1
#                           veth cfu1 ── kernel 10.78.0.3: the crafter's address;
#                                        crafted_peer through liburoce.so
#
# crafted.py (scapy) plays the remote end of one connection per case on each
# side: crafted_peer makes the QP and reports completions and QP state, the
# crafter sends the case's frames on iop0 / cfu1 and reads the answers there.
# rxe's outcome per case is the reference (crafted.py EXPECT); uroce's must
# equal it except where a difference is written down (DIFFER, docs/transport.md).
# Exit 0 pass, 1 fail, 77 skip (not root, no netns/tap, no scapy, no VM image).
# CRAFTED_SIDES=uroce runs the uroce side alone (no VM), for quick work.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(realpath "${1:?usage: crafted.sh BUILD_ROOT [OUTDIR]}")
UROCED=$B/emu/uroced
SHIM=$B/verbs/liburoce.so
PEERBIN=$B/tests/interop/crafted_peer
VMOUT=${UROCE_RXEVM_DIR:-$B/tests/interop/rxevm}
OUT=${2:-$B/tests/interop/out-crafted}
SIDES=${CRAFTED_SIDES:-uroce rxe}
NS=iop-crafted-$$
PY=/usr/bin/python3
VM_IP=10.77.0.2 CR_IP=10.77.0.3 VM_MAC=52:54:00:4d:00:02
UR_IP=10.78.0.1 CR_IP2=10.78.0.3 UR_MAC=02:00:00:4e:00:01
PORT_RXE=18700 PORT_UROCE=18701

say() { echo "[crafted] $*"; }
skip() { say "SKIP: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root (network namespace, tap, raw sockets)"
for f in "$UROCED" "$SHIM" "$PEERBIN"; do [ -e "$f" ] || skip "missing $f"; done
"$PY" -c 'import scapy.contrib.roce' 2>/dev/null || skip "no scapy for $PY (python3-scapy)"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
. "$HERE/nsrig.sh"
nsrig_start

case " $SIDES " in *" rxe "*)
	command -v qemu-system-x86_64 >/dev/null || [ -x "$HERE/build-vm.sh" ] || skip "no qemu"
	mkdir -p "$VMOUT"
	# the image interop.sh builds and caches (the same lock)
	(
		flock 9
		if [ ! -f "$VMOUT/initrd.img" ] || [ "$HERE/build-vm.sh" -nt "$VMOUT/initrd.img" ] ||
		   [ "$HERE/guest-init.sh" -nt "$VMOUT/initrd.img" ]; then
			say "building the rxe VM image in $VMOUT"
			OUT=$VMOUT nice "$HERE/build-vm.sh" >"$VMOUT/build.log" 2>&1 || exit 1
		fi
	) 9>"$VMOUT/.lock" || skip "cannot build the rxe VM image (see $VMOUT/build.log)"
	command -v qemu-system-x86_64 >/dev/null || skip "no qemu-system-x86_64"
	;;
esac

rm -rf "$OUT"; mkdir -p "$OUT/run" "$OUT/share"
NSX=(ip netns exec "$NS")
ip -n "$NS" link set lo up
"${NSX[@]}" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 net.ipv6.conf.all.disable_ipv6=1
ip -n "$NS" tuntap add dev iop0 mode tap
ip -n "$NS" link set iop0 up
ip -n "$NS" addr add "$CR_IP/24" dev iop0
ip -n "$NS" link add cfu0 type veth peer name cfu1
ip -n "$NS" link set cfu0 up
ip -n "$NS" link set cfu1 up
ip -n "$NS" addr add "$CR_IP2/24" dev cfu1

SPECS=()
for s in $SIDES; do
	case $s in
	uroce) SPECS+=("uroce=cfu1,$CR_IP2,$UR_IP,$UR_MAC,$PORT_UROCE") ;;
	rxe) SPECS+=("rxe=iop0,$CR_IP,$VM_IP,$VM_MAC,$PORT_RXE") ;;
	esac
done
setsid "${NSX[@]}" "$PY" "$HERE/crafted.py" "$OUT" "${SPECS[@]}" >"$OUT/crafter.log" 2>&1 &
CPID=$!
PIDS+=("$CPID")

case " $SIDES " in *" rxe "*)
	cp "$PEERBIN" "$OUT/share/"
	echo "/mnt/host/crafted_peer $CR_IP $PORT_RXE rxe0 1" >"$OUT/share/cmd.sh"
	say "booting the rxe VM"
	OUT=$VMOUT setsid "$HERE/run-peer.sh" --netns "$NS" --tap iop0 --ip "$VM_IP/24" \
		--mac "$VM_MAC" --share "$OUT/share" --timeout 900 --log "$OUT/vm-console.log" \
		>/dev/null 2>"$OUT/run-peer.log" &
	VPID=$!
	PIDS+=("$VPID")
	;;
esac

case " $SIDES " in *" uroce "*)
	setsid "${NSX[@]}" env UROCE_RUN_DIR="$OUT/run" "$UROCED" --port "net_af_packet0,iface=cfu0" \
		--ip "$UR_IP" --mac "$UR_MAC" --pcap "$OUT/uroce.pcap" >"$OUT/uroced.log" 2>&1 &
	UPID=$!
	PIDS+=("$UPID")
	for _ in $(seq 100); do
		[ -S "$OUT/run/uroce0.sock" ] && break
		kill -0 "$UPID" 2>/dev/null || break
		sleep 0.1
	done
	[ -S "$OUT/run/uroce0.sock" ] || { cat "$OUT/uroced.log"; say "FAIL: uroced did not start"; exit 1; }
	setsid "${NSX[@]}" env UROCE_RUN_DIR="$OUT/run" LD_PRELOAD="$SHIM" \
		"$PEERBIN" "$CR_IP2" "$PORT_UROCE" uroce0 1 >"$OUT/peer-uroce.log" 2>&1 &
	PPID_UROCE=$!
	PIDS+=("$PPID_UROCE")
	;;
esac

# The crafter waits for its peers (CRAFTED_WAIT, 600 s, a last bound only):
# whatever it waits for that ends first - uroced, the VM or the uroce side's
# peer ending in error - fails the test at once, with its reason.
# (A peer or VM that ends well has answered every case already: the crafter
# only writes its verdict after that.)
gone() {	# gone PID: PID has exited; its status in $GONE_RC
	kill -0 "$1" 2>/dev/null && return 1
	wait "$1" 2>/dev/null
	GONE_RC=$?
	return 0
}
dead=""
while kill -0 "$CPID" 2>/dev/null; do
	if [ -n "${UPID:-}" ] && gone "$UPID"; then
		dead="uroced exited (status $GONE_RC) while the crafter ran"; URC=$GONE_RC; UPID=""
	elif [ -n "${VPID:-}" ] && gone "$VPID"; then
		VPID=""
		[ "$GONE_RC" = 0 ] || dead="the rxe VM ended with status $GONE_RC ($(tail -1 "$OUT/run-peer.log" 2>/dev/null))"
	elif [ -n "${PPID_UROCE:-}" ] && gone "$PPID_UROCE"; then
		PPID_UROCE=""
		[ "$GONE_RC" = 0 ] || dead="crafted_peer (uroce side) ended with status $GONE_RC: $(tail -3 "$OUT/peer-uroce.log" | tr '\n' ' ')"
	fi
	[ -n "$dead" ] && break
	sleep 0.2
done
if [ -n "$dead" ]; then
	kill -TERM -- "-$CPID" 2>/dev/null
	RC=1
else
	wait "$CPID"
	RC=$?
fi
sed 's/^/  /' "$OUT/crafter.log"
[ -n "$dead" ] && say "FAIL: $dead"
# uroced's end: its exit status and its log (sanitizer, leak, assertion
# reports), as every test that starts it (docs/testing.md)
if [ -n "${UPID:-}" ]; then
	kill -USR1 "$UPID" 2>/dev/null && sleep 0.3   # counters into uroced.log
	grep -E 'drop|nak|bad-resp|xport_drop' "$OUT/uroced.log" | sed 's/^/  uroced: /' | head -20
	kill -TERM "$UPID" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$UPID" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$UPID" 2>/dev/null && { say "uroced ignored SIGTERM: killed"; kill -KILL -- "-$UPID" 2>/dev/null; }
	wait "$UPID" 2>/dev/null
	URC=$?
fi
if [ -n "${URC:-}" ] && ! python3 "$HERE/../lib/harness.py" daemon-verdict "$URC" "$OUT/uroced.log"; then
	say "FAIL: uroced's end (exit status $URC)"; tail -20 "$OUT/uroced.log"; RC=1
fi
[ "$RC" = 0 ] && say "pass" || say "FAILED (logs in $OUT)"
exit "$RC"
