#!/bin/bash
# interop.sh GROUP BUILD_ROOT [OUTDIR] - uroce against a live Linux Soft-RoCE (rdma_rxe) peer.
#
# One boot of an rxe VM per GROUP (see cases_GROUP below), in a private network
# namespace:
#
#   netns iop-GROUP-PID ─ tap iop0 ─┬─ qemu (TCG): eth0 10.77.0.2, rxe0 on eth0
#                                   ├─ uroced --port net_af_packet0,iface=iop0 --ip 10.77.0.1
#                                   │    (answers ARP for 10.77.0.1 itself; own MAC)
#                                   └─ kernel 10.77.0.3: TCP only, for the programs'
#                                      out-of-band QPN/GID exchange
#
# Unmodified ibv_*_pingpong / perftest run with LD_PRELOAD=liburoce.so in the
# namespace and, in the same order, inside the VM against rxe0 (runcases.sh).
# The daemon captures every frame on the tap (--pcap); the capture must pass
# `uroce-pcap check` (every RoCE frame of both sides valid, ICRC included) and
# hold RoCE traffic in both directions.
#
# The VM image is built at run time from Debian packages (build-vm.sh) and
# cached in $UROCE_RXEVM_DIR (default BUILD_ROOT/tests/interop/rxevm).
# Exit 0 pass, 1 fail, 77 skip (not root, no netns/tap, image cannot be built).
# Everything started here is stopped on exit, also on failure or a signal.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
GROUP=${1:?usage: interop.sh GROUP BUILD_ROOT [OUTDIR]}
B=$(realpath "${2:?usage: interop.sh GROUP BUILD_ROOT [OUTDIR]}")
UROCED=$B/emu/uroced
SHIM=$B/verbs/liburoce.so
PCAPTOOL=$B/tools/uroce-pcap
VMOUT=${UROCE_RXEVM_DIR:-$B/tests/interop/rxevm}
OUT=${3:-$B/tests/interop/out-$GROUP}
NS=iop-$GROUP-$$
UROCE_IP=10.77.0.1 VM_IP=10.77.0.2 HOST_IP=10.77.0.3
# IPv6 (group basic): both sides then have the same GID order, 0 = fe80:: (EUI-64 of the
# MAC), 1 = ::ffff:IPv4, 2 = the global IPv6 address below
UROCE_IP6=fd77::1 VM_IP6=fd77::2 HOST_IP6=
UROCE_LL=fe80::ff:fe4d:1 VM_LL=fe80::5054:ff:fe4d:2   # EUI-64 of the MACs
UROCE_MAC=02:00:00:4d:00:01
TAP=iop0

say() { echo "[interop:$GROUP] $*"; }
skip() { say "SKIP: $*"; exit 77; }

# ------------------------------------------------------------------ cases
# NAME|SERVER|PROG|GIDFLAG|ARGS   (runcases.sh). Sizes: 1 B, 4 KiB, 64 KiB.
both() {  # NAME PROG GIDFLAG ARGS [GIDX]: one case with each side as the server
	echo "$1_us|uroce|$2|$3|$4${5:+|$5}"
	echo "$1_rs|rxe|$2|$3|$4${5:+|$5}"
}
cases_basic() {
	both rc_1 ibv_rc_pingpong -g "-e -c -s 1 -n 20"
	both rc_4k ibv_rc_pingpong -g "-e -c -s 4096 -n 20"
	both rc_64k ibv_rc_pingpong -g "-e -c -s 65536 -n 10"
	both uc_4k ibv_uc_pingpong -g "-e -c -s 4096 -n 20"
	both ud_1k ibv_ud_pingpong -g "-e -c -s 1024 -n 20"
	# IPv6: global GID 2 (fd77::) and link-local GID 0 (fe80::); ND both ways
	both rc_4k_v6 ibv_rc_pingpong -g "-e -c -s 4096 -n 20" 2
	both rc_64k_v6 ibv_rc_pingpong -g "-e -c -s 65536 -n 10" 2
	both ud_1k_v6 ibv_ud_pingpong -g "-e -c -s 1024 -n 20" 2
	both write_bw_v6 ib_write_bw -x "-F -n 50 -s 65536" 2
	both rc_4k_ll ibv_rc_pingpong -g "-e -c -s 4096 -n 20" 0
	both ud_1k_ll ibv_ud_pingpong -g "-e -c -s 1024 -n 20" 0
}
cases_mtu4096() {
	both rc_4k ibv_rc_pingpong -g "-e -c -m 4096 -s 4096 -n 20"
	both rc_64k ibv_rc_pingpong -g "-e -c -m 4096 -s 65536 -n 10"
	both uc_64k ibv_uc_pingpong -g "-e -c -m 4096 -s 65536 -n 10"
	both ud_4k ibv_ud_pingpong -g "-e -c -s 4096 -n 20"
}
cases_perftest() {
	# -F: do not fail on the CPU frequency check (VMs, TCG).
	# -o 16 on READ/atomic tests: perftest sets its initiator depth (max_rd_atomic) to the
	# PEER's responder depth, which defaults to the peer device's max_qp_rd_atom: 128 on
	# rxe, 16 on uroce (as on ConnectX). Both refuse a max_rd_atomic above their own
	# maximum (EINVAL at RTS), so mixed pairs need -o <= the smaller one, as rxe-mlx5 does.
	# -u 18: a 1.07 s ACK timeout (perftest's default 14 is 67 ms, 0.5 s over its 7
	# retries): nothing is lost here, but rxe in a TCG guest on a loaded host answered
	# READs more than a second late (read_bw_rs: retry exceeded at load ~10-40).
	both write_bw ib_write_bw -x "-F -u 18 -n 50 -s 65536"
	both read_bw ib_read_bw -x "-F -u 18 -n 50 -s 65536 -o 16"
	both send_bw ib_send_bw -x "-F -u 18 -n 50 -s 65536"
	both atomic_bw ib_atomic_bw -x "-F -u 18 -n 50 -o 16"
	both atomic_cas_bw ib_atomic_bw -x "-F -u 18 -n 50 -o 16 -A CMP_AND_SWAP"
	both write_lat ib_write_lat -x "-F -u 18 -n 50 -s 64"
	both read_lat ib_read_lat -x "-F -u 18 -n 50 -s 64 -o 16"
	both send_lat ib_send_lat -x "-F -u 18 -n 50 -s 64"
	both atomic_lat ib_atomic_lat -x "-F -u 18 -n 50 -o 16"
}
cases_loss() {
	both rc_4k ibv_rc_pingpong -g "-e -c -s 4096 -n 100"
	both rc_64k ibv_rc_pingpong -g "-e -c -s 65536 -n 20"
	# -u 18 as in the perftest group: with 5 % of the frames dropped rxe in a
	# TCG guest answers READ re-issues late (it RNR-NAKs READs it has no room
	# for, and each NAK resends what followed); at perftest's 67 ms timeout a
	# CI run's read_bw_rs ended in RETRY_EXC_ERR when uroce still resent every
	# READ behind each gap (docs/interop.md, "READ re-issues under loss").
	# What is tested is recovery, not how fast
	both write_bw ib_write_bw -x "-F -u 18 -n 50 -s 65536"
	both read_bw ib_read_bw -x "-F -u 18 -n 50 -s 65536 -o 16"
}
# RDMA CM programs (runcases.sh: NAME|SERVER|PROG|cm|SARGS|CARGS|COUNT|REGEX): no TCP
# side channel, the connection is made by the two CM protocol engines (uroce's
# emu/cm/ibcm.c, the VM kernel's ib_cm) with MADs on QP1. @S4@/@S6@ = the server side's
# RoCE address. Each case runs twice, with each side as the server.
cm_both() {  # NAME PROG SARGS CARGS COUNT REGEX
	echo "$1_us|uroce|$2|cm|$3|$4|$5|$6"
	echo "$1_rs|rxe|$2|cm|$3|$4|$5|$6"
}
# rping -V checks every ping's payload; -v prints each one (COUNT of them on each side)
cm_rping() {  # NAME ADDR SIZE COUNT
	cm_both "$1" rping "-s -a $2 -p @P@ -v -V -S $3 -C $4" "-c -a $2 -p @P@ -v -V -S $3 -C $4" \
		"$4" 'ping data: rdma-ping-[0-9]+: '
}
# perftest 4.5's -R resolves its server address as IPv4 only (getaddrinfo AF_INET:
# "Address family for hostname not supported" for an IPv6 one), so no IPv6 perftest
cm_perf() {  # NAME PROG
	cm_both "$1" "$2" "-R -d @D@ -p @P@ -F -n 50 -s 65536" "-R -d @D@ -p @P@ -F -n 50 -s 65536 @S4@" \
		c1 '^ *65536 +50 +[0-9.]+ +[0-9.]+'
}
cases_cm() {
	cm_rping rping_1k @S4@ 1024 10
	cm_rping rping_64k @S4@ 65535 5
	cm_both ucmatose_c4 ucmatose "-b @S4@ -p @P@ -c 4 -C 10 -S 1000" "-s @S4@ -p @P@ -c 4 -C 10 -S 1000" \
		1 'return status 0'
	cm_both udaddy_c2 udaddy "-b @S4@ -c 2 -C 10" "-s @S4@ -c 2 -C 10" 1 'return status 0'
	cm_perf send_bw ib_send_bw
	cm_perf write_bw ib_write_bw
	# ECE both ways through both rdma_cm stacks (tests/interop/ece_peer.c, from the
	# share): each side prints "ece-peer: ok" when it read the peer's vendor ID and
	# options as sent (the kernel's REQ/REP vendor ID and attribute modifier)
	cm_both ece ece_peer "server @S4@ @P@" "client @S4@ @P@" 1 'ece-peer: ok'
	# IPv6: the global ULA GIDs (fd77::1 uroce, fd77::2 rxe)
	cm_rping rping_1k_v6 @S6@ 1024 10
	cm_both ucmatose_c4_v6 ucmatose "-b @S6@ -p @P@ -c 4 -C 10 -S 1000" "-s @S6@ -p @P@ -c 4 -C 10 -S 1000" \
		1 'return status 0'
	cm_both udaddy_c2_v6 udaddy "-b @S6@ -c 2 -C 10" "-s @S6@ -c 2 -C 10" 1 'return status 0'
}
cases_cmloss() {
	# Programs whose both sides wait for the other's MADs to the end: ucmatose waits for
	# every DISCONNECTED before it destroys its ids, so a lost DREQ is retransmitted.
	# Not rping: its client destroys its id right after rdma_disconnect(), which stops
	# the DREQ's retransmission (the kernel's cm_destroy_id does the same), so a lost
	# DREQ leaves the rping server waiting for DISCONNECTED forever, whoever the server
	# is. Not udaddy: SIDR keeps no state once answered (the kernel's
	# cm_send_sidr_rep_locked forgets the request, uroce too), so a lost SIDR_REP turns
	# the retransmitted SIDR_REQ into a new request udaddy's server never answers.
	cm_both ucmatose_c4 ucmatose "-b @S4@ -p @P@ -c 4 -C 10 -S 1000" "-s @S4@ -p @P@ -c 4 -C 10 -S 1000" \
		1 'return status 0'
	# perftest -R makes two connections to one port (its handshake, then the test QP);
	# the rxe server, slow under TCG, may reject the second one (REJ 8, not listening
	# again yet), and perftest's retry after that leaves the server's QP without
	# receive buffers (RNR NAKs until the timeout) whatever the CM does: uroce server only
	cm_perf send_bw ib_send_bw | grep '_us|'
	cm_both ucmatose_c4_v6 ucmatose "-b @S6@ -p @P@ -c 4 -C 10 -S 1000" "-s @S6@ -p @P@ -c 4 -C 10 -S 1000" \
		1 'return status 0'
}
# seconds per program run: a healthy case takes 1-3 s even under TCG
CASE_TIMEOUT=30
# CM seed of the cmloss group (uroced --fault cm_drop): printed, UROCE_CM_LOSS_SEED replays
CM_SEED=${UROCE_CM_LOSS_SEED:-9}
CM_LOSS=0.2
VM_MTU= UROCED_ARGS=() VM_PRE= VM_IP6ARG=() VM_SETUP=
# IPv6 in the VM: while eth0's fe80:: address is still tentative (DAD, ~1 s after link
# up) the VM kernel sends no neighbour solicitation at all, so rxe's RTR (which resolves
# the peer's MAC through the kernel with a 1 s limit) fails with "Failed to modify QP
# to RTR" for an IPv6 GID whose neighbour is not cached yet. Start once DAD is done.
V6_SETUP='i=0; while [ $i -lt 100 ] && [ -n "$(ip -6 addr show dev eth0 tentative)" ]; do sleep 0.1; i=$((i + 1)); done; '
case "$GROUP" in
basic)
	# IPv6 rides along with the IPv4 cases (one boot): uroced's GID 2 = fd77::1, rxe's
	# GID 2 = fd77::2; GID 0 on both = fe80:: link-local
	UROCED_ARGS=(--ip "$UROCE_IP6")
	VM_IP6ARG=(--ip6 "$VM_IP6/64")
	VM_SETUP=$V6_SETUP
	;;
cm)
	HOST_IP6=fd77::3
	UROCED_ARGS=(--ip "$UROCE_IP6")
	VM_IP6ARG=(--ip6 "$VM_IP6/64")
	VM_SETUP=$V6_SETUP
	;;
cmloss)
	# The uroce side loses CM_LOSS of the CM MADs it receives and of those it sends
	# (seeded): the kernel's and uroce's REQ/REP/DREQ/SIDR_REQ retransmissions and both
	# sides' answers to duplicates (REP, RTU, DREP resent) must carry every connection.
	# Each lost MAD costs a CM response timeout (~4-6 s on both sides).
	HOST_IP6=fd77::3
	UROCED_ARGS=(--ip "$UROCE_IP6" --fault "cm_drop=$CM_LOSS,seed=$CM_SEED")
	VM_IP6ARG=(--ip6 "$VM_IP6/64")
	VM_SETUP=$V6_SETUP
	CASE_TIMEOUT=120
	;;
perftest) ;;
mtu4096)
	VM_MTU=9000
	UROCED_ARGS=(--mtu 9000)
	;;
loss)
	# Drop 5% of the RoCE request and read-response frames in each direction at the VM's
	# NIC (tc u32 + gact; TCP and ARP untouched), and duplicate/reorder 2% of what uroced
	# receives (its own fault injector): retransmission on timeout, PSN sequence NAKs,
	# duplicate requests and go-back-N must interoperate with rxe. ACKs (0x11) and atomic
	# ACKs (0x12) are never dropped: a stock ping-pong program destroys its QP as soon as
	# its last message has arrived, so a lost final ACK would leave the other side
	# retrying into a dead QP until "retry counter exceeded", whatever the transport does.
	# The BTH opcode is byte 28 of the IP packet (20-byte IPv4 header + UDP).
	UROCED_ARGS=(--fault "dup=0.02,reorder=0.02,seed=7")
	VM_PRE="tc qdisc add dev eth0 clsact && "
	for dir in ingress egress; do
		VM_PRE+="tc filter add dev eth0 $dir prio 1 protocol ip u32 match ip dport 4791 0xffff match u8 0x11 0xff at 28 action ok && "
		VM_PRE+="tc filter add dev eth0 $dir prio 2 protocol ip u32 match ip dport 4791 0xffff match u8 0x12 0xff at 28 action ok && "
		VM_PRE+="tc filter add dev eth0 $dir prio 3 protocol ip u32 match ip dport 4791 0xffff action ok random netrand drop 20 && "
	done
	;;
*) echo "interop.sh: unknown group $GROUP (basic, mtu4096, perftest, loss, cm, cmloss)" >&2; exit 2 ;;
esac

# ------------------------------------------------------------------ CM verdict
# The CM groups: MADs both ways (IPv4 and IPv6), every MAD either side sent dissected
# by tshark's InfiniBand CM dissector with no malformed flag or expert warning, and for
# cmloss: MADs lost both ways (uroced's counters), uroce's retransmissions, and the
# kernel's retransmissions (the same MAD - attribute and
# transaction ID - sent twice by the VM, in the capture: uroced records a frame before
# its loss, so a lost received MAD and its retransmission are both there).
check_cm() {
	local ok=0 cmline v mads_out mads_in mads6 kdup
	mads_out=$(grep -c " $UROCE_IP:[0-9]* > $VM_IP:4791 .* CM " "$OUT/pcap-decode.log")
	mads_in=$(grep -c " $VM_IP:[0-9]* > $UROCE_IP:4791 .* CM " "$OUT/pcap-decode.log")
	mads6=$(grep -c " \\[$VM_IP6\\]:[0-9]* > \\[$UROCE_IP6\\]:4791 .* CM " "$OUT/pcap-decode.log")
	say "CM: $mads_out MADs uroce->rxe, $mads_in rxe->uroce over IPv4, $mads6 rxe->uroce over IPv6;" \
		"by attribute: $(grep -o ' CM [A-Z_]*' "$OUT/pcap-decode.log" | sort | uniq -c | tr -s ' ' | tr '\n' ',')"
	if [ "$mads_out" = 0 ] || [ "$mads_in" = 0 ] || [ "$mads6" = 0 ]; then
		say "FAIL: no CM MADs in one direction or over IPv6"; ok=1
	fi
	if command -v tshark >/dev/null; then
		if python3 "$HERE/../tools/cm_tshark_check.py" --all "$OUT/uroce.pcap" >"$OUT/tshark-cm.log" 2>&1; then
			say "tshark: $(tail -1 "$OUT/tshark-cm.log")"
		else
			say "FAIL: tshark's CM dissector:"; sed 's/^/    /' "$OUT/tshark-cm.log" | tail -20; ok=1
		fi
	else
		say "FAIL: no tshark to dissect the CM MADs (tools/bootstrap.sh installs it)"; ok=1
	fi
	cmline=$(grep -m1 ': cm: ids' "$OUT/uroced.log")
	say "uroced${cmline#*uroce0}"
	if grep -q '^ece_' "$OUT/share/cases.txt"; then
		# ECE on the wire both ways: ece_peer's REQ (vendor/options) from each side,
		# and each side's REP answering with the peer's vendor ID and its options
		for v in "$UROCE_IP:[0-9]* > $VM_IP:4791 .* CM REQ .*ece=0x0c0ffe/0x11223344" \
			 "$VM_IP:[0-9]* > $UROCE_IP:4791 .* CM REQ .*ece=0x0c0ffe/0x11223344" \
			 "$UROCE_IP:[0-9]* > $VM_IP:4791 .* CM REP .*ece=0x0c0ffe/0x00000055" \
			 "$VM_IP:[0-9]* > $UROCE_IP:4791 .* CM REP .*ece=0x0c0ffe/0x00000055"; do
			grep -q " $v" "$OUT/pcap-decode.log" || { say "FAIL: no MAD matching '$v'"; ok=1; }
		done
	fi
	if [ "$GROUP" = cmloss ]; then
		# the same MAD (sender, attribute, transaction ID) more than once from the VM
		kdup=$(grep -E " \\[?($VM_IP|$VM_IP6)\\]?:[0-9]+ > .* CM [A-Z_]+ tid=" "$OUT/pcap-decode.log" |
			sed -E 's/^ *[0-9]+ +[0-9.]+ +([^ ]+):[0-9]+ .* CM ([A-Z_]+) (tid=[0-9a-fx]+).*/\1 \2 \3/' |
			sort | uniq -d | wc -l)
		say "loss (seed $CM_SEED, UROCE_CM_LOSS_SEED replays): MADs the kernel sent again: $kdup"
		# (answers to duplicates - dup-answered - need one of our answers lost AND the
		# kernel's retransmission in time: too rare in one run to require; shown above)
		for v in "lost rx" "lost tx" "retrans"; do
			n=$(printf '%s' "$cmline" | grep -o "$v [0-9]*" | awk '{print $NF}')
			[ "${n:-0}" -gt 0 ] || { say "FAIL: uroced counted no '$v'"; ok=1; }
		done
		[ "$kdup" -gt 0 ] || { say "FAIL: the kernel retransmitted no MAD"; ok=1; }
	fi
	return $ok
}

# ------------------------------------------------------------------ prerequisites
[ "$(id -u)" = 0 ] || skip "needs root (network namespace, tap)"
for f in "$UROCED" "$SHIM" "$PCAPTOOL"; do [ -e "$f" ] || skip "missing $f"; done
for p in ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ib_write_bw ip timeout setsid flock; do
	command -v "$p" >/dev/null || skip "missing $p on the host"
done
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
. "$HERE/nsrig.sh"
nsrig_start
PARTIAL=

# ------------------------------------------------------------------ VM image
# Cached by content: the key is a hash of what makes the image (the scripts,
# the guest tools' sources). build-vm.sh verifies the image before writing it
# (every guest program resolves its libraries, /init is in it); the cached
# rootfs is verified again on each use, and a wrong one is rebuilt, never used.
mkdir -p "$VMOUT"
image_key() {
	cat "$HERE/build-vm.sh" "$HERE/guest-init.sh" "$HERE"/src/*.c 2>/dev/null | sha256sum | cut -d' ' -f1
}
image_ok() {
	[ -f "$VMOUT/initrd.img" ] && [ -f "$VMOUT/vmlinuz" ] &&
		[ "$(cat "$VMOUT/image.key" 2>/dev/null)" = "$(image_key)" ] &&
		"$HERE/build-vm.sh" --verify "$VMOUT/rootfs" 2>>"$VMOUT/verify.log"
}
(
	flock 9
	if ! image_ok; then
		say "building the rxe VM image in $VMOUT (Debian packages; cached by content)"
		rm -f "$VMOUT/image.key"
		t0=$SECONDS
		OUT=$VMOUT nice "$HERE/build-vm.sh" >"$VMOUT/build.log" 2>&1 || { tail -20 "$VMOUT/build.log"; exit 1; }
		image_key >"$VMOUT/image.key"
		say "image built and verified in $((SECONDS - t0)) s"
	fi
) 9>"$VMOUT/.lock" || { say "FAIL: the rxe VM image cannot be built or does not verify (see $VMOUT/build.log)"; exit 1; }
command -v qemu-system-x86_64 >/dev/null || skip "no qemu-system-x86_64"

# ------------------------------------------------------------------ rig
rm -rf "$OUT"; mkdir -p "$OUT/run" "$OUT/share/res"
NSX=(ip netns exec "$NS")
ip -n "$NS" link set lo up
"${NSX[@]}" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 net.ipv6.conf.all.disable_ipv6=1
ip -n "$NS" tuntap add dev "$TAP" mode tap
[ -n "$VM_MTU" ] && ip -n "$NS" link set "$TAP" mtu "$VM_MTU"
ip -n "$NS" link set "$TAP" up
ip -n "$NS" addr add "$HOST_IP/24" dev "$TAP"
if [ -n "$HOST_IP6" ]; then
	# getaddrinfo() (AI_ADDRCONFIG) refuses IPv6 literals on a host without a non-loopback
	# IPv6 address: the CM programs' fd77:: addresses need one (TCP-only, like HOST_IP)
	"${NSX[@]}" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf."$TAP".disable_ipv6=0
	ip -n "$NS" addr add "$HOST_IP6/64" dev "$TAP" nodad
fi

# uroced sizes af_packet's ring slots and its mbufs from --mtu (docs/running.md,
# "Port parameters")
PORTARG="net_af_packet0,iface=$TAP"
setsid "${NSX[@]}" env UROCE_RUN_DIR="$OUT/run" "$UROCED" --port "$PORTARG" \
	--ip "$UROCE_IP" --mac "$UROCE_MAC" --pcap "$OUT/uroce.pcap" "${UROCED_ARGS[@]}" \
	>"$OUT/uroced.log" 2>&1 &
UPID=$!
PIDS+=("$UPID")
for _ in $(seq 100); do
	[ -S "$OUT/run/uroce0.sock" ] && break
	kill -0 "$UPID" 2>/dev/null || break
	sleep 0.1
done
[ -S "$OUT/run/uroce0.sock" ] || { cat "$OUT/uroced.log"; say "FAIL: uroced did not start"; exit 1; }
sed 's/^/  uroced: /' "$OUT/uroced.log"

# UROCE_INTEROP_ONLY=REGEX: run only the cases whose name matches (debugging)
"cases_$GROUP" | grep -E "^(${UROCE_INTEROP_ONLY:-.*})\|" >"$OUT/share/cases.txt"
cp "$HERE/runcases.sh" "$OUT/share/"
# the ECE peer runs on both sides from the share (PATH below); without it
# (no librdmacm-dev at build time) its cases go
if [ -x "$B/tests/interop/ece_peer" ]; then
	cp "$B/tests/interop/ece_peer" "$OUT/share/"
elif grep -q '^ece_' "$OUT/share/cases.txt"; then
	# the group runs without them and then ends as a skip (77), not a pass
	sed -i '/^ece_/d' "$OUT/share/cases.txt"
	PARTIAL="ECE cases: no ece_peer (librdmacm-dev missing at build time)"
fi
NCASES=$(grep -c . "$OUT/share/cases.txt")
# both sides' RoCE addresses, for the CM cases' @S4@ / @S6@
ADDRS="ADDR4_uroce=$UROCE_IP ADDR4_rxe=$VM_IP ADDR6_uroce=$UROCE_IP6 ADDR6_rxe=$VM_IP6"
echo "${VM_SETUP}${VM_PRE}$ADDRS PATH=/mnt/host:\$PATH DEV=rxe0 GID=1 PEER=$HOST_IP CASE_TIMEOUT=$CASE_TIMEOUT CONNECT_TRIES=200 SYNC=/mnt/host/sync sh /mnt/host/runcases.sh rxe /mnt/host/cases.txt /mnt/host/res${VM_PRE:+; r=\$?; tc -s filter show dev eth0 ingress; tc -s filter show dev eth0 egress; exit \$r}" \
	>"$OUT/share/cmd.sh"

T0=$SECONDS
VMTIMEOUT=$((60 + NCASES * (CASE_TIMEOUT + 10)))
say "booting the rxe VM ($NCASES cases, VM timeout ${VMTIMEOUT} s)"
OUT=$VMOUT setsid "$HERE/run-peer.sh" --netns "$NS" --tap "$TAP" --ip "$VM_IP/24" ${VM_MTU:+--mtu "$VM_MTU"} "${VM_IP6ARG[@]}" \
	--share "$OUT/share" --timeout "$VMTIMEOUT" --log "$OUT/vm-console.log" >/dev/null 2>"$OUT/run-peer.log" &
VPID=$!
PIDS+=("$VPID")
# Start our side once rxe is up, so that a uroce server's first accept() does not
# spend its CASE_TIMEOUT on a slow boot (TCG on a busy 2-core machine). The wait
# ends as soon as the guest cannot come up any more: qemu exited, the kernel
# panicked or could not run /init, the guest's command ended.
VM_DEAD='Kernel panic|Failed to execute /init|No working init found|Attempted to kill init|RXEVM: exit rc='
vm_state() {
	grep -q 'RXEVM: running' "$OUT/vm-console.log" 2>/dev/null && { echo up; return; }
	grep -qE "$VM_DEAD" "$OUT/vm-console.log" 2>/dev/null && { echo dead; return; }
	kill -0 "$VPID" 2>/dev/null || { echo gone; return; }
	echo booting
}
while [ "$(vm_state)" = booting ] && [ $((SECONDS - T0)) -lt "$VMTIMEOUT" ]; do sleep 0.1; done
st=$(vm_state)
if [ "$st" != up ]; then
	case "$st" in
	dead) why="the guest did not come up" ;;
	gone) why="qemu exited before the guest came up" ;;
	*) why="the guest still boots after $VMTIMEOUT s" ;;
	esac
	say "FAIL: $why; the console's last lines:"
	tail -25 "$OUT/vm-console.log" 2>/dev/null | sed 's/^/    vm| /'
	sed 's/^/    run-peer| /' "$OUT/run-peer.log" 2>/dev/null | tail -5
	exit 1
fi
say "rxe ready after $((SECONDS - T0)) s"
OUT_ABS=$(realpath "$OUT")
# UROCE_CM_CONNECT_DELAY_MS: perftest -R's client connects a second time
# as soon as its first connection ends; perftest in the TCG VM listens
# again slower than that, rejects it (REJECTED 8), and the client's retry
# then meets a server that waits for its second connection: both hang.
# A second before each rdma_connect of ours (verbs/ucma_cmd.c) avoids it.
# shellcheck disable=SC2086
setsid "${NSX[@]}" env $ADDRS PATH="$OUT_ABS/share:$PATH" DEV=uroce0 GID=1 PEER="$VM_IP" CASE_TIMEOUT=$CASE_TIMEOUT CONNECT_TRIES=300 SYNC="$OUT_ABS/share/sync" \
	WRAP="env UROCE_RUN_DIR=$OUT_ABS/run UROCE_CM_CONNECT_DELAY_MS=1000 LD_PRELOAD=$SHIM" \
	sh "$HERE/runcases.sh" uroce "$OUT/share/cases.txt" "$OUT/res" >"$OUT/host-cases.log" 2>&1 &
HPID=$!
PIDS+=("$HPID")
wait "$VPID"
VMRC=$?
say "VM finished after $((SECONDS - T0)) s, rc=$VMRC"
# the host side ends with the VM; give it a moment to collect its last case
for _ in $(seq 100); do kill -0 "$HPID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$HPID" 2>/dev/null && { say "host side still running after the VM ended: stopping it"; kill -TERM -- "-$HPID"; }
wait "$HPID" 2>/dev/null
kill -USR1 "$UPID" 2>/dev/null && sleep 0.3   # counters into uroced.log
kill -TERM "$UPID" 2>/dev/null
for _ in $(seq 100); do kill -0 "$UPID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$UPID" 2>/dev/null && { say "uroced ignored SIGTERM: killed"; kill -KILL -- "-$UPID" 2>/dev/null; }
wait "$UPID" 2>/dev/null
URC=$?

# ------------------------------------------------------------------ verdict
fail=0
# the daemon's end: its exit status and its log (sanitizer, leak, assertion reports)
if ! python3 "$HERE/../lib/harness.py" daemon-verdict "$URC" "$OUT/uroced.log"; then
	say "FAIL: uroced's end (exit status $URC)"; tail -20 "$OUT/uroced.log"; fail=1
fi
while IFS='|' read -r name server prog _; do
	[ -n "$name" ] || continue
	u=$(cat "$OUT/res/$name.uroce.rc" 2>/dev/null || echo none)
	r=$(cat "$OUT/share/res/$name.rxe.rc" 2>/dev/null || echo none)
	line=$(grep -h -m1 -E 'usec/iter|^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+' \
		"$OUT/res/$name.uroce.log" 2>/dev/null | tr -s ' ')
	if [ "$u" = 0 ] && [ "$r" = 0 ]; then
		say "PASS $name ($prog, server $server)${line:+: $line}"
	else
		say "FAIL $name ($prog, server $server): uroce rc=$u rxe rc=$r"
		sed 's/^/    uroce| /' "$OUT/res/$name.uroce.log" 2>/dev/null | tail -15
		sed 's/^/    rxe  | /' "$OUT/share/res/$name.rxe.log" 2>/dev/null | tail -15
		fail=1
	fi
done <"$OUT/share/cases.txt"
if [ "$VMRC" != 0 ] && [ "$fail" = 0 ]; then
	say "FAIL: VM exit status $VMRC"; tail -20 "$OUT/vm-console.log"; fail=1
fi

"$PCAPTOOL" check "$OUT/uroce.pcap" >"$OUT/pcap-check.log" 2>&1
PCRC=$?
say "capture: $(cat "$OUT/pcap-check.log")"
"$PCAPTOOL" decode "$OUT/uroce.pcap" >"$OUT/pcap-decode.log" 2>&1
n_out=$(grep -c " $UROCE_IP:[0-9]* > $VM_IP:4791 " "$OUT/pcap-decode.log")
n_in=$(grep -c " $VM_IP:[0-9]* > $UROCE_IP:4791 " "$OUT/pcap-decode.log")
n_nak=$(grep -c 'NAK' "$OUT/pcap-decode.log")
if [ "$GROUP" = basic ]; then
	# IPv6: global (GID 2) and link-local (GID 0) RoCE frames, each direction
	v6=$(grep -c " \\[$UROCE_IP6\\]:[0-9]* > \\[$VM_IP6\\]:4791 " "$OUT/pcap-decode.log")
	v6in=$(grep -c " \\[$VM_IP6\\]:[0-9]* > \\[$UROCE_IP6\\]:4791 " "$OUT/pcap-decode.log")
	ll=$(grep -c " \\[$UROCE_LL\\]:[0-9]* > \\[$VM_LL\\]:4791 " "$OUT/pcap-decode.log")
	llin=$(grep -c " \\[$VM_LL\\]:[0-9]* > \\[$UROCE_LL\\]:4791 " "$OUT/pcap-decode.log")
	say "capture: IPv6 $v6 RoCE frames uroce->rxe, $v6in rxe->uroce; link-local ($UROCE_LL, $VM_LL) $ll and $llin"
	if [ "$v6" = 0 ] || [ "$v6in" = 0 ] || [ "$ll" = 0 ] || [ "$llin" = 0 ]; then
		say "FAIL: no IPv6 RoCE traffic in one direction"; fail=1
	fi
fi
say "capture: $n_out RoCE frames uroce->rxe, $n_in rxe->uroce, $n_nak with a NAK/RNR syndrome"
if [ "$PCRC" != 0 ] || ! grep -q ' 0 RoCE invalid' "$OUT/pcap-check.log"; then
	say "FAIL: uroce-pcap check"; grep -v 'icrc=ok' "$OUT/pcap-check.log" | head -20; fail=1
fi
# and decoders that are not uroce's (tshark, an Annex A17 ICRC of its own)
python3 "$HERE/../tools/pcap_indep.py" "$OUT/uroce.pcap" >"$OUT/pcap-indep.log" 2>&1
IRC=$?
say "$(grep -m1 'independent check' "$OUT/pcap-indep.log")"
case "$IRC" in
0) ;;
77) PARTIAL="${PARTIAL:+$PARTIAL; }no tshark: the capture has no independent decoder" ;;
*) say "FAIL: the independent capture check"; grep FAIL "$OUT/pcap-indep.log" | head; fail=1 ;;
esac
if [ -n "$VM_PRE" ]; then
	# tc -s in the VM console: "dropped N" of the two random-drop filters
	n_drop=$(grep -o 'dropped [0-9]*' "$OUT/vm-console.log" | awk '{s += $2} END {print s + 0}')
	say "loss: rxe's NIC dropped $n_drop RoCE frames (both directions)"
	[ "$n_drop" -gt 0 ] || { say "FAIL: the loss filters dropped nothing"; fail=1; }
fi
if [ "$n_out" = 0 ] || [ "$n_in" = 0 ]; then
	say "FAIL: no RoCE traffic in one direction"; fail=1
fi
case "$GROUP" in cm*) check_cm || fail=1 ;; esac
grep -E 'counters|drop|retrans|nak' "$OUT/uroced.log" | sed 's/^/  uroced: /' | head -40
[ "$fail" = 0 ] && say "all $NCASES cases passed" || say "FAILED (logs in $OUT)"
if [ "$fail" = 0 ] && [ -n "$PARTIAL" ]; then
	say "SKIP: part of the group did not run: $PARTIAL"; exit 77
fi
exit "$fail"
