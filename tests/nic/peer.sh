#!/bin/sh
# peer.sh - the rxe VM's side of tests/nic (run from the share by the rxe
# image's /init: tests/interop/guest-init.sh). It answers the NIC VM's
# requests in /mnt/host/rxe (guest.sh's req): NNNN.req holds one command,
# NNNN.done gets its exit status and output.
#   mtu N                 eth0's MTU (rxe0's active MTU follows it)
#   cases FILE PORT0 A4 A6  runcases.sh's rxe side of the cases in FILE
#                         against the NIC under test at A4 / A6
#   exit                  done: power off
S=/mnt/host
: "${PEER:=10.78.0.10}"
mkdir -p "$S/rxe"
echo "PEER: serving requests in $S/rxe"
# the active MTU rxe0 reports, in bytes
active_mtu() { ibv_devinfo -d rxe0 | awk '/active_mtu/ {print $2; exit}'; }
while :; do
	for f in "$S"/rxe/*.req; do
		[ -e "$f" ] || continue
		set -- $(cat "$f")
		cmd=$1
		echo "PEER: $*"
		out=${f%.req}.out
		: > "$out"
		case "$cmd" in
		mtu)
			ip link set eth0 mtu "$2"
			# rxe takes the netdev's new MTU at once (NETDEV_CHANGEMTU)
			want=1024; [ "$2" -ge 4200 ] && want=4096
			n=0
			while [ "$(active_mtu)" != "$want" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
			[ "$(active_mtu)" = "$want" ]; rc=$?
			echo "eth0 mtu $2, rxe0 active_mtu $(active_mtu)" >> "$out"
			;;
		cases)
			name=${2%.txt}; name=${name#cases-}
			env DEV=rxe0 GID=1 PEER="$PEER" PORT0="$3" CASE_TIMEOUT=60 CONNECT_TRIES=300 \
				CM_FIRST_PAUSE=3 CM_PAUSE=5 \
				SYNC="$S/sync" ADDR4_dut="${4:-10.78.0.1}" ADDR6_dut="${5:-fd78::1}" \
				ADDR4_rxe=10.78.0.2 ADDR6_rxe=fd78::2 \
				sh "$S/runcases.sh" rxe "$S/$2" "$S/res/$name" >> "$out" 2>&1
			rc=$?
			;;
		exit)
			{ echo 0; } > "${f%.req}.done.tmp" && mv "${f%.req}.done.tmp" "${f%.req}.done"
			rm -f "$f"
			exit 0
			;;
		*)
			echo "unknown request $cmd" >> "$out"; rc=2 ;;
		esac
		{ echo "$rc"; cat "$out"; } > "${f%.req}.done.tmp"
		mv "${f%.req}.done.tmp" "${f%.req}.done"
		rm -f "$f" "$out"
	done
	sleep 0.1
done
