# guest-cases.sh - what tests/nic runs against the NIC under test (sourced by
# guest.sh, which has the helpers). One VM boot per device; the cases cover
# the issue's matrix once each rather than its product (programs x MTU x IP
# family x peer x direction), because the transport and the CM are proven
# by the interop and net suites: here the PMD path is what is new, so every
# program, both directions, jumbo and 1500, IPv4 and IPv6 and both peers
# appear, each on a device driven by its PMD.
#
# The full matrix runs on virtio-net (the first device, nicvm_cases=full);
# e1000e and vmxnet3 run a short set (nicvm_cases=short: each program
# family, both peers, both IP families, jumbo and 1500 once) beside what
# is theirs - refusals, offloads, VLAN, link flap - to keep the suite's
# time small: in a TCG guest a program takes seconds to start.
#
# perftest runs with -u 18 (local ACK timeout 1.07 s, 7 retries: a guest
# may be descheduled for seconds on a loaded host; its default 14 gives
# 0.5 s in all). ibv_*_pingpong fix theirs at 14 with no option.
#
# Case lines are runcases.sh's (tests/interop/runcases.sh):
#   NAME|SERVER|PROG|GIDFLAG|ARGS|GIDX    SERVER dut, rxe or host
#   NAME|SERVER|PROG|cm|SARGS|CARGS|COUNT|REGEX

cases_jumbo_rxe() {
	cat <<'EOF'
rc_64k|dut|ibv_rc_pingpong|-g|-e -c -m 4096 -s 65536 -n 8|1
ud_4k|rxe|ibv_ud_pingpong|-g|-e -c -s 4096 -n 10|2
read_bw|dut|ib_read_bw|-x|-F -u 18 -n 30 -s 65536 -o 16|1
atomic_bw|rxe|ib_atomic_bw|-x|-F -u 18 -n 30 -o 16|2
rping_32k|dut|rping|cm|-s -a @S4@ -p @P@ -v -V -S 32768 -C 5|-c -a @S4@ -p @P@ -v -V -S 32768 -C 5|5|ping data: rdma-ping-[0-9]+: 
udaddy_v6|rxe|udaddy|cm|-b @S6@ -c 2 -C 4|-s @S6@ -c 2 -C 4|1|return status 0
EOF
}

cases_jumbo_host() {
	cat <<'EOF'
uc_64k|host|ibv_uc_pingpong|-g|-e -c -m 4096 -s 65536 -n 8|2
srq_4k|dut|ibv_srq_pingpong|-g|-e -c -m 4096 -s 4096 -q 4 -n 10|1
write_bw|dut|ib_write_bw|-x|-F -u 18 -n 50 -s 65536|2
send_bw|host|ib_send_bw|-x|-F -u 18 -n 50 -s 65536|1
ucmatose_v6|host|ucmatose|cm|-b @S6@ -p @P@ -c 2 -C 10 -S 4096|-s @S6@ -p @P@ -c 2 -C 10 -S 4096|1|return status 0
EOF
}

# after `uroce-ctl mtu 1500` (applied at run time, no restart)
cases_1500_rxe() {
	cat <<'EOF'
rc_4k_v6|rxe|ibv_rc_pingpong|-g|-e -c -s 4096 -n 20|2
send_lat|dut|ib_send_lat|-x|-F -u 18 -n 50 -s 8|1
ucmatose|dut|ucmatose|cm|-b @S4@ -p @P@ -c 2 -C 10|-s @S4@ -p @P@ -c 2 -C 10|1|return status 0
EOF
}

# --vlan 100:3 on both ends, the frames captured on the bridge port of the
# NIC under test (nic.py checks the tags and IPv4 checksums there)
cases_vlan_host() {
	cat <<'EOF'
rc_16k|dut|ibv_rc_pingpong|-g|-e -c -s 16384 -n 20|1
ud_1k_v6|host|ibv_ud_pingpong|-g|-e -c -s 1024 -n 20|2
write_bw|host|ib_write_bw|-x|-F -u 18 -n 50 -s 65536|1
EOF
}

# pick NAME...: the lines of stdin whose case is named, all with cases=full
pick() {
	if [ "${cases:-full}" = full ]; then cat; return; fi
	local re
	re="^($(echo "$@" | tr ' ' '|'))\|"
	grep -E "$re"
}

# the offloads uroce uses, as uroce-ctl devices shows them:
# has_offload rx|tx NAME
has_offload() {
	local l
	l=$(ctl devices | sed -n "s/^  $1 offloads \[\([^]]*\)\].*/\1/p")
	case " $l " in *" $2 "*) return 0 ;; esac
	return 1
}
# uroce-ctl once more when a call fails (a loaded TCG guest: a reading of
# 0 from a failed call would decide a check)
ctlr() { local i; for i in 1 2 3; do ctl "$@" && { beat; return 0; }; sleep 1; done; return 1; }
counter() { # NAME: a port/nic/xstat counter of uroce0
	ctlr counters --port | awk -v n="$1" '$1 == n {print $2; f=1} END {if (!f) print 0}'
}
gt0() { [ "$(counter "$1")" -gt 0 ]; }
# the sum of a counter over the QPs
qsum() { ctlr counters | awk -v n="$1" '/^qp / {q = 1} q && $1 == n {s += $2} END {print s + 0}'; }

# the lines of a uroced run that must fail at once, before or after EAL
expect_refusal() { # WHAT PATTERN ARGS...: uroced exits 1 with one line matching
	local what=$1 pat=$2; shift 2
	"$UROCED" --run-dir "$RUN.x" "$@" > "$out/refusal.log" 2>&1
	local st=$?
	if [ $st = 1 ] && grep -qE "$pat" "$out/refusal.log"; then
		ok "refused: $what: $(grep -m1 -E "$pat" "$out/refusal.log")"
	else
		bad "refused: $what: exit $st, expected a line matching '$pat':"
		sed 's/^/    | /' "$out/refusal.log" | tail -5
	fi
	rm -rf "$RUN.x"
}

# ways uroced cannot use a device, each one clear line (docs/running.md)
nic_refusals() {
	step "refusals"
	expect_refusal "bound to a kernel network driver" \
		"PCI device $KNIC \(1af4:1000\) is bound to the kernel's virtio-pci driver" --port "$KNIC"
	unbind "$DUT"
	expect_refusal "bound to no driver" "PCI device $DUT .* is bound to no driver" --port "$DUT"
	expect_refusal "no such device" "no PCI device 0000:00:1f.7" --port 0000:00:1f.7
	local hp=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages keep
	keep=$(cat $hp)
	echo 0 > $hp
	[ "$(bind "$DUT" "$bind")" = "$bind" ] || bad "$DUT not bound to $bind"
	expect_refusal "no hugepages" "needs [0-9]+ MB of hugepages, 0 MB are free" --port "$DUT"
	echo "$keep" > $hp
	# a NIC DPDK has no PMD for (e1000e's VM has an rtl8139 besides)
	if [ -e "/sys/bus/pci/devices/$RTL" ]; then
		[ "$(bind "$RTL" uio_pci_generic)" = uio_pci_generic ] || bad "$RTL not bound to uio_pci_generic"
		expect_refusal "no PMD for the device" "no DPDK driver took PCI device $RTL \\(10ec:8139" --port "$RTL"
		unbind "$RTL"
	fi
}

# the device's link flaps during traffic (QMP set_link on the host)
nic_flap() {
	# recovery: ib_write_bw with no end of its own (-n 100000000, killed
	# below), retransmit timeout 8.6 s (-u 21; 7 retries: a minute) which
	# outlasts the outage the host makes however slow the guest is: the
	# link goes off once the QP carries writes, on again once a timeout
	# expired with frames dropped at the port; recovered = the QP's
	# packets flow again (ACKs received after the link came back) while
	# the program lives, i.e. no completion in error
	local big=100000000
	# TCP ports of its own per NIC (its PBASE range, above its phases')
	local fp=$((PBASE + 28))
	step "flap: ib_write_bw -u 21 against the host, link off once it carries writes"
	host bg wbw ib_write_bw -d uroce0 -x 1 -F -u 21 -n $big -s 65536 -p $fp > /dev/null
	env LD_PRELOAD=$SHIM ib_write_bw -d uroce0 -x 1 -F -u 21 -n $big -s 65536 -p $fp $HOSTTCP \
		> "$out/flap-wbw.log" 2>&1 &
	local cp=$! n=0 down=0 t0 rx0 alive=0
	# the link goes once the QP carries the writes
	while [ "$(qsum tx_pkts)" -lt 100 ] && kill -0 $cp 2>/dev/null && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
	t0=$(counter nic.link_down)
	host link off "$QMPID" > /dev/null
	step "flap: link off, waiting for drop.link-down and a retransmit timeout"
	# a retransmit timeout expired with frames dropped at the port
	n=0; while { [ "$(qsum timeouts)" = 0 ] || [ "$(counter drop.link-down)" = 0 ]; } &&
		kill -0 $cp 2>/dev/null && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
	ctl devices | grep -q "state DOWN" && down=1
	local lost to; lost=$(counter drop.link-down) to=$(qsum timeouts)
	rx0=$(qsum rx_pkts)
	host link on "$QMPID" > /dev/null
	step "flap: link on, waiting for the QP's packets to flow again"
	# the QP's packets flow again: ACKs beyond those seen while down
	n=0; while [ "$(qsum rx_pkts)" -le $((rx0 + 20)) ] && kill -0 $cp 2>/dev/null && [ $n -lt 900 ]; do
		sleep 0.1; n=$((n + 1)); done
	local rx1; rx1=$(qsum rx_pkts)
	kill -0 $cp 2>/dev/null && alive=1
	kill $cp 2>/dev/null; wait $cp
	host bgkill wbw > /dev/null
	ck "flap: the port went DOWN with the link" [ $down = 1 ]
	ck "flap: link down counted ($(counter nic.link_down) after $t0)" [ "$(counter nic.link_down)" -gt "$t0" ]
	ck "flap: frames sent while down dropped at the port ($lost)" [ "$lost" -gt 0 ]
	ck "flap: retransmit timeouts while the link was down: $to" [ "$to" -gt 0 ]
	ck "flap: ib_write_bw -u 21 recovered after the link came back (QP packets received $rx0 -> $rx1, no error)" \
		eval "[ $alive = 1 ] && [ $rx1 -gt $((rx0 + 20)) ]"
	[ $alive = 1 ] || tail -5 "$out/flap-wbw.log"
	n=0; while ! ctl devices | grep -q "state ACTIVE" && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
	ck "flap: the port is ACTIVE again" eval "ctl devices | grep -q 'state ACTIVE'"
	ck "flap: link up counted" gt0 nic.link_up
	step "flap: rc_pingpong with the link kept down"
	# no recovery: rc_pingpong's fixed timeout (14: 67 ms, 7 retries)
	# expires while the link stays down: IBV_WC_RETRY_EXC_ERR, as an HCA,
	# on the side whose message was in flight when the link went. That is
	# ours, or the peer's if its reply was (ours then had its SEND acked
	# and waits for a receive that cannot come, as on an HCA: the guest
	# stalled here twice, the peer's log saying retry exceeded for its
	# SEND, wr_id 2). So wait for ours to end or for the peer's verdict in
	# its log on the share (bounded; the beats keep the watchdog away).
	host bg rcpp ibv_rc_pingpong -d uroce0 -g 1 -e -c -s 4096 -n 1000000 -p $((fp + 1)) > /dev/null
	env LD_PRELOAD=$SHIM ibv_rc_pingpong -d uroce0 -g 1 -e -c -s 4096 -n 1000000 -p $((fp + 1)) $HOSTTCP \
		> "$out/flap-rcpp.log" 2>&1 &
	cp=$!
	n=0; while [ "$(qsum tx_pkts)" -lt 50 ] && kill -0 $cp 2>/dev/null && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
	host link off "$QMPID" > /dev/null
	local exc="transport retry counter exceeded (12)" peerlog="$out/res/bg-rcpp.log" side=none
	n=0; while kill -0 $cp 2>/dev/null && ! grep -qF "$exc" "$peerlog" 2>/dev/null && [ $n -lt 1800 ]; do
		sleep 0.1; n=$((n + 1)); [ $((n % 20)) != 0 ] || beat; done
	kill $cp 2>/dev/null # still waiting: for the peer's lost reply, or past the bound
	wait $cp; rc=$?
	step "flap: link on after rc_pingpong's end (exit $rc)"
	host link on "$QMPID" > /dev/null
	host bgkill rcpp > /dev/null
	if grep -qF "$exc" "$out/flap-rcpp.log"; then side=ours
	elif grep -qF "$exc" "$peerlog" 2>/dev/null; then side="the peer's (its reply was in flight)"; fi
	ck "flap: a link that stays down ends the rc_pingpong whose message was in flight with retry exceeded (status 12): $side" \
		[ "$side" != none ]
	if [ "$side" = none ]; then tail -3 "$peerlog" 2>/dev/null | sed 's/^/    peer| /'; fi
	[ $rc != 0 ] || bad "flap: rc_pingpong exited 0 with the link down"
}

# nic_up: uroced on the NIC under test at MTU 9000, a second daemon on it
# refused before EAL touches it, one queue pair used
nic_up() {
	step "uroced on $DUT ($bind)"
	start_uroced --port "$DUT" --mtu 9000 || { bad "uroced on $DUT ($bind)"; return 1; }
	ok "uroced drives $DUT ($dev, $bind): $(grep -m1 "queues rx" "$LOG.cur" | sed 's/^uroce0: //')"
	# a second daemon on the same device is refused, before EAL touches it
	if [ "$bind" = vfio-pci ]; then
		expect_refusal "the IOMMU group is busy" "IOMMU group [0-9]+ of $DUT is busy" --port "$DUT"
	else
		expect_refusal "another uroced drives it" "PCI device $DUT is in use by another uroced" --port "$DUT"
	fi
	ck "one queue pair used of the device's" eval "ctl devices | grep -qE 'queues 1/1 of'"
}

nic_test() {
	nic_refusals
	nic_up || return 1
	cases_jumbo_rxe | pick rc_64k rping_32k udaddy_v6 > "$out/cases-jumbo_rxe.txt"
	cases_jumbo_host | pick write_bw ucmatose_v6 > "$out/cases-jumbo_host.txt"
	run_phase jumbo_rxe rxe 18600
	run_phase jumbo_host host 18620
	# the MTU at run time: more than the buffers hold is refused, less applied
	step "mtu at run time"
	ck "mtu 9216 refused at run time (buffers sized for 9000)" eval "! ctl mtu 9216"
	ck "mtu 1500 applied at run time" ctl mtu 1500
	ck "active MTU 1024 after it" eval "ctl devices | grep -q 'active 1024'"
	rxe mtu 1500 > /dev/null
	cases_1500_rxe | pick rc_4k_v6 > "$out/cases-1500_rxe.txt"
	run_phase 1500_rxe rxe 18640
	ck "xstats visible in uroce-ctl counters" eval "ctl counters --port | grep -q '^  xstat\\.'"
	stop_uroced || bad "uroced exit status $? (jumbo, 1500)"
	nic_vlan 18660 rc_16k ud_1k_v6 || return 1
	nic_flap
	ctl counters --port > "$out/counters-end.txt"
	stop_uroced || bad "uroced exit status $? (vlan, flap)"
}

# nic_vlan PORT0 CASE...: VLAN 100, priority 3, on both ends, the named
# cases of cases_vlan_host captured on the NIC's bridge port; the offloads
# used where offered, verified in the capture and the counters. Leaves
# uroced running with --vlan.
nic_vlan() {
	local port0=$1; shift
	step "vlan: the host's uroced and ours with --vlan 100:3"
	host uroced --mtu 1500 --vlan 100:3 > /dev/null || bad "host uroced with --vlan"
	start_uroced --port "$DUT" --mtu 1500 --vlan 100:3 || { bad "uroced --vlan"; return 1; }
	host capture start "$TAP" > /dev/null
	cases_vlan_host | pick "$@" > "$out/cases-vlan_host-$dev.txt"
	run_phase "vlan_host-$dev" host "$port0"
	host badframe "$MAC" "$MY4" > /dev/null
	local n=0; while [ "$(counter drop.vlan)" = 0 ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
	host capture stop > /dev/null
	ck "capture on the peer's side: every frame tagged VLAN 100 PCP 3, IPv4 checksums valid" \
		eval "host capture check 100 3 $MAC > $out/capture-check.log"
	sed 's/^/    capture| /' "$out/capture-check.log"
	ck "an untagged frame dropped (drop.vlan)" gt0 drop.vlan
	# a PMD may report only bad checksums (e1000's em leaves good ones
	# UNKNOWN, which the parser checks): good ones are shown, not required
	if has_offload rx IPV4_CKSUM; then
		ck "RX IPv4 checksum offload: the device flagged the bad one" gt0 nic.rx_ip_csum_bad
		say "RX IPv4 checksums the device found good: $(counter nic.rx_ip_csum_good)"
	fi
	ck "... and dropped as a bad header" gt0 hdr_errors
	if has_offload tx IPV4_CKSUM; then
		ck "TX IPv4 checksum offload used" gt0 nic.tx_ip_csum
	fi
	if has_offload tx VLAN_INSERT; then ck "VLAN tags inserted by the device" gt0 nic.vlan_tx_hw
	else ck "VLAN tags inserted by uroce" gt0 nic.vlan_tx_sw; fi
	if has_offload rx VLAN_STRIP; then ck "VLAN tags stripped by the device" gt0 nic.vlan_rx_hw
	else ck "VLAN tags stripped by uroce" gt0 nic.vlan_rx_sw; fi
	ctl devices > "$out/devices-vlan-$dev.txt"
	ctl counters --port > "$out/counters-vlan-$dev.txt"
}

# The suite nic (nicvm_cases=ci): one VM with the three NICs, each in turn
# (guest.sh), a short representative set on each that fits CI's time; the
# whole matrix per device is the suite nic-full (nic_test above, one VM
# per device; docs/interop.md "PMDs in a VM"). On every NIC: uroced drives
# it through its PMD, a second daemon is refused, one queue pair is used,
# ibv_rc_pingpong checks every byte against the host's uroce (af_packet)
# at jumbo MTU, the PMD's xstats show. On the first (virtio-net, two
# queue pairs, vfio-pci): every refusal line, rping -V (RDMA CM, data
# verified) and ib_write_bw against rxe, the MTU at run time, the link
# flap. On vmxnet3 the pingpong over IPv6 and the link flap. On e1000e (last: it restarts
# the host's peer with --vlan) the VLAN and checksum offloads, captured.
nic_ci() {
	local pb=$1
	if [ "$dev" = virtio ]; then
		nic_refusals
	else
		[ "$(bind "$DUT" "$bind")" = "$bind" ] || { bad "$DUT not bound to $bind"; return 1; }
	fi
	nic_up || return 1
	local gi=1; [ "$dev" = vmxnet3 ] && gi=2
	echo "rc_16k|dut|ibv_rc_pingpong|-g|-e -c -m 4096 -s 16384 -n 8|$gi" > "$out/cases-host-$dev.txt"
	run_phase "host-$dev" host "$pb"
	if [ "$dev" = virtio ]; then
		cases_jumbo_rxe | pick rping_32k read_bw > "$out/cases-rxe-$dev.txt"
		run_phase "rxe-$dev" rxe $((pb + 10))
		step "mtu at run time"
	ck "mtu 9216 refused at run time (buffers sized for 9000)" eval "! ctl mtu 9216"
		ck "mtu 1500 applied at run time" ctl mtu 1500
		ck "active MTU 1024 after it" eval "ctl devices | grep -q 'active 1024'"
	fi
	ck "xstats visible in uroce-ctl counters" eval "ctl counters --port | grep -q '^  xstat\\.'"
	# the flap on vmxnet3 too: its LSC interrupt never came in qemu, and
	# only the polled link saw the change (port_nic.c)
	case "$dev" in virtio|vmxnet3) nic_flap ;; esac
	ctl counters --port > "$out/counters-end-$dev.txt"
	step "stopping uroced"
	stop_uroced || bad "uroced exit status $?"
	if [ "$dev" = e1000e ]; then
		if nic_vlan $((pb + 20)) rc_16k; then
			stop_uroced || bad "uroced exit status $? (vlan)"
		fi
	fi
}

# ------------------------------------------------------------------ bench
# One program against the host's uroced (its server in the background on
# the host); prints its figure: BW average (MB/s) or typical latency (us)
bench_one() { # NAME PORT PROG ARGS...
	local name=$1 port=$2 prog=$3; shift 3
	host bg "b$name" "$prog" -d uroce0 -x 1 -F -p "$port" "$@" > /dev/null
	sleep 3
	env LD_PRELOAD=$SHIM "$prog" -d uroce0 -x 1 -F -p "$port" "$@" $HOSTTCP > "$out/bench-$name.log" 2>&1
	host bgwait "b$name" > /dev/null
	case "$prog" in
	*lat) awk '$1 == 8 && NF >= 6 {print $5; exit}' "$out/bench-$name.log" ;;
	*) awk '$1 == 65536 && NF >= 5 {print $4; exit}' "$out/bench-$name.log" ;;
	esac
}
bench_set() { # TAG PORT0: write/read bandwidth 64 KiB, send latency 8 B
	local w r l
	w=$(bench_one "$1-write" "$2" ib_write_bw -s 65536 -n 200)
	r=$(bench_one "$1-read" $(($2 + 1)) ib_read_bw -s 65536 -n 200)
	l=$(bench_one "$1-lat" $(($2 + 2)) ib_send_lat -s 8 -n 200)
	echo "$w $r $l"
}
# the same NIC model through its PMD and through the guest kernel's driver
# and af_packet, in one boot: ratios (TCG makes absolute numbers meaningless)
nic_bench() {
	local kdrv pmd afp ifc
	case "$dev" in virtio) kdrv=virtio-pci ;; e1000e) kdrv=e1000e ;; vmxnet3) kdrv=vmxnet3 ;; esac
	echo "$DUT" > /sys/bus/pci/devices/$DUT/driver/unbind 2>/dev/null
	[ "$(bind "$DUT" "$bind")" = "$bind" ] || { bad "bench: $DUT not bound to $bind"; return 1; }
	start_uroced --port "$DUT" --mtu 9000 || { bad "bench: uroced on $DUT"; return 1; }
	pmd=$(bench_set pmd 18900)
	stop_uroced
	kmod e1000e; kmod vmxnet3
	unbind "$DUT"
	bind "$DUT" "$kdrv" > /dev/null
	local n=0
	while [ -z "$(ls /sys/bus/pci/devices/$DUT/net /sys/bus/pci/devices/$DUT/virtio*/net 2>/dev/null | grep -v :)" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
	ifc=$(ls /sys/bus/pci/devices/$DUT/net /sys/bus/pci/devices/$DUT/virtio*/net 2>/dev/null | grep -v : | head -1)
	[ -n "$ifc" ] || { bad "bench: no kernel interface for $DUT ($kdrv)"; return 1; }
	ip link set "$ifc" mtu 9000 up
	start_uroced --port "net_af_packet0,iface=$ifc" --mtu 9000 || { bad "bench: uroced on af_packet $ifc"; return 1; }
	afp=$(bench_set afp 18910)
	stop_uroced
	set -- $pmd $afp
	say "bench $dev: PMD write ${1:-?} MB/s read ${2:-?} MB/s send_lat ${3:-?} us; af_packet write ${4:-?} read ${5:-?} lat ${6:-?}"
	echo "bench $dev pmd_write_MBps=${1:-0} pmd_read_MBps=${2:-0} pmd_lat_us=${3:-0} afp_write_MBps=${4:-0} afp_read_MBps=${5:-0} afp_lat_us=${6:-0}" >> "$out/bench.txt"
	awk -v w="$1" -v r="$2" -v l="$3" -v W="$4" -v R="$5" -v L="$6" 'BEGIN {
		if (W > 0 && R > 0 && l > 0) printf "bench %s: PMD/af_packet write %.2f read %.2f, latency af_packet/PMD %.2f\n", "'"$dev"'", w / W, r / R, L / l }' | tee -a "$out/bench.txt"
	[ -n "$6" ] && ok "bench ran (figures in bench.txt)" || bad "bench: figures missing"
}
