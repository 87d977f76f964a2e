#!/bin/sh
# runcases.sh SIDE CASES OUTDIR - run one side of every interop case, in order.
#
# Runs on both ends of the rig: on the host (SIDE=uroce, verbs programs through
# liburoce.so) and inside the rxe VM (SIDE=rxe, dash + busybox). Both ends walk
# the same CASES file, so no other synchronisation is needed: the server side
# of a case simply runs its command, and the client side retries while the
# server is not listening yet (each case has its own TCP port, so a client can
# never reach the server of another case).
#
# CASES: one case a line, fields separated by '|':
#   NAME|SERVER|PROG|GIDFLAG|ARGS[|GIDX]
#     SERVER  uroce or rxe: the side that runs PROG as the server
#     GIDFLAG -g (ibv_*_pingpong) or -x (perftest)
#     GIDX    GID index for this case on both sides (default: $GID); the rig gives
#             both sides the same GID order (0 fe80::, 1 ::ffff:IPv4, 2 global IPv6)
#   NAME|SERVER|PROG|cm|SARGS|CARGS|COUNT|REGEX   an RDMA CM program (no TCP side channel):
#     the server runs PROG SARGS, the client PROG CARGS, after substituting @S4@ / @S6@
#     (the server side's RoCE IPv4 / IPv6 address: $ADDR4_uroce, $ADDR4_rxe, $ADDR6_...),
#     @P@ (the case's port) and @D@ ($DEV); both sides' output must hold exactly COUNT
#     lines matching REGEX (grep -E; COUNT empty: at least one; cN: N, the client only),
#     or the case fails.
# Environment: DEV (verbs device), GID (GID index), PEER (the other side's TCP
# address), PORT0 (first TCP port), WRAP (command prefix, e.g. env LD_PRELOAD=..),
# CASE_TIMEOUT (seconds per command), CONNECT_TRIES, SYNC (a directory both sides
# see, the 9p share: RDMA CM cases restart both sides through it, below).
# Writes OUTDIR/NAME.SIDE.log and OUTDIR/NAME.SIDE.rc.
#
# RDMA CM cases have no TCP side channel to tell "not listening yet" from a
# failure after the connection was made: a client whose first REQ/SIDR_REQ came
# before the server's listen fails (REJECTED 8, UNREACHABLE), and a program with
# several connections (udaddy -c 2, perftest -R's two connections) leaves its
# server waiting for connections the failed client will never make again. So a
# CM client that fails in its connect phase asks the server side to start again
# (SYNC/NAME.retry.N), waits until it has (SYNC/NAME.up.N), and tries again;
# a CM client's first attempt waits for SYNC/NAME.up.0. Never on a failure after
# the connect phase (the error patterns below). CM_FIRST_PAUSE / CM_PAUSE: seconds
# the client gives a server that started (again) before it connects (default
# 0 / 1; tests/nic's guests start a program in seconds, not milliseconds);
# attempt N after a restart waits N * CM_PAUSE.
side=$1 cases=$2 out=$3
: "${DEV:?}" "${GID:=1}" "${PEER:?}" "${PORT0:=18600}" "${WRAP:=}"
: "${CASE_TIMEOUT:=60}" "${CONNECT_TRIES:=100}" "${SYNC:=}"
: "${CM_FIRST_PAUSE:=0}" "${CM_PAUSE:=1}"
[ -z "$SYNC" ] || mkdir -p "$SYNC"

# wait_file FILE SECONDS: 0 once FILE exists, 1 after SECONDS without it
wait_file() {
	n=$(($2 * 5))
	while [ "$n" -gt 0 ]; do
		[ -e "$1" ] && return 0
		sleep 0.2
		n=$((n - 1))
	done
	return 1
}

# cm_server: run $cmd as a CM case's server; start it again whenever the client
# asks (SYNC/$name.retry.K); rc = its exit status
cm_server() {
	k=0
	while :; do
		# shellcheck disable=SC2086
		timeout "$CASE_TIMEOUT" $cmd >> "$log" 2>&1 </dev/null &
		spid=$!
		: > "$SYNC/$name.up.$k"
		again=
		while kill -0 "$spid" 2>/dev/null; do
			if [ -e "$SYNC/$name.retry.$((k + 1))" ]; then
				again=1
				break
			fi
			sleep 0.2
		done
		if [ -n "$again" ]; then
			kill "$spid" 2>/dev/null
			wait "$spid" 2>/dev/null
			k=$((k + 1))
			echo "(server started again for the client's attempt $((k + 1)))" >> "$log"
			continue
		fi
		wait "$spid"
		rc=$?
		return
	done
}
mkdir -p "$out"
port=$PORT0
fails=0
while IFS='|' read -r name server prog gidflag args gidx; do
	case "$name" in ''|'#'*) continue ;; esac
	port=$((port + 1))
	log=$out/$name.$side.log
	cmd="$WRAP $prog -d $DEV $gidflag ${gidx:-$GID} -p $port $args"
	want= regex=
	if [ "$gidflag" = cm ]; then
		# the rest of the line: SARGS|CARGS|COUNT|REGEX (REGEX may hold '|': last field)
		cargs=${gidx%%|*} rest=${gidx#*|}
		want=${rest%%|*} regex=${rest#*|}
		[ "$server" = "$side" ] || args=$cargs
		eval "s4=\$ADDR4_$server s6=\$ADDR6_$server"
		args=$(printf '%s' "$args" | sed -e "s/@S4@/$s4/g" -e "s/@S6@/$s6/g" \
			-e "s/@P@/$port/g" -e "s/@D@/$DEV/g")
		cmd="$WRAP $prog $args"
		[ -n "$regex" ] || regex=.
		case $want in
		c*) want=${want#c}; [ "$server" = "$side" ] && regex= ;;  # the client's output only
		esac
		peer=
	else
		peer=$PEER
	fi
	if [ "$server" = "$side" ]; then
		echo "== $name: server: $cmd" > "$log"
		if [ "$gidflag" = cm ] && [ -n "$SYNC" ]; then
			cm_server
		else
			# shellcheck disable=SC2086
			timeout "$CASE_TIMEOUT" $cmd >> "$log" 2>&1 </dev/null
			rc=$?
		fi
	else
		echo "== $name: client: $cmd $peer" > "$log"
		try=0
		cmsync=
		if [ "$gidflag" = cm ] && [ -n "$SYNC" ]; then
			cmsync=1
			wait_file "$SYNC/$name.up.0" "$CASE_TIMEOUT" ||
				echo "(the server side did not start in $CASE_TIMEOUT s)" >> "$log"
			sleep "$CM_FIRST_PAUSE"
		fi
		while :; do
			# shellcheck disable=SC2086
			timeout "$CASE_TIMEOUT" $cmd $peer > "$log.try" 2>&1 </dev/null
			rc=$?
			try=$((try + 1))
			# the server is not listening yet: the connect() failed, nothing else ran
			# (RDMA CM: the server's CM answered REJECTED / UNREACHABLE: no listener yet)
			if [ $rc -ne 0 ] && [ $try -lt "$CONNECT_TRIES" ] &&
			   grep -q -e "onnect to" -e "Unable to init the socket connection" \
				-e "_REJECTED" -e "_UNREACHABLE" -e "Unable to perform rdma_client" \
				-e "failure connecting" "$log.try"; then
				if [ -n "$cmsync" ]; then
					# the server starts again (cm_server) before the next attempt;
					# a few times only: each costs both sides a start
					[ "$try" -lt 6 ] || break
					cat "$log.try" >> "$log"
					echo "(attempt $try failed in its connect phase: server side restarts)" >> "$log"
					: > "$SYNC/$name.retry.$try"
					wait_file "$SYNC/$name.up.$try" "$CASE_TIMEOUT" || break
					# longer each time: a server that is slow to start
					# (a loaded TCG guest) is restarted no sooner than it
					# could listen
					sleep $((CM_PAUSE * try))
					continue
				fi
				sleep 0.3
				continue
			fi
			break
		done
		echo "(connect attempts: $try)" >> "$log"
		cat "$log.try" >> "$log"
		rm -f "$log.try"
	fi
	# rping's CM thread exits(-1) when it reads the event channel after the
	# main thread, done with every ping, has destroyed it (a DISCONNECTED
	# event arriving as rping exits; rping's own race, on any stack): the
	# ping count below decides
	if [ "$prog" = rping ] && [ "$rc" = 255 ] &&
	   [ "$(grep -c 'rdma_get_cm_event: Bad file descriptor' "$log")" = 1 ]; then
		echo "(rping's exit race: rdma_get_cm_event after its channel was destroyed)" >> "$log"
		rc=0
	fi
	if [ -n "$regex" ] && [ "$rc" = 0 ]; then
		n=$(grep -c -E "$regex" "$log")
		if { [ -n "$want" ] && [ "$n" != "$want" ]; } || [ "$n" = 0 ]; then
			echo "(expected ${want:-some} lines matching '$regex', found $n)" >> "$log"
			rc=99
		fi
	fi
	echo "$rc" > "$out/$name.$side.rc"
	echo "CASE $name $side rc=$rc"
	[ "$rc" = 0 ] || fails=$((fails + 1))
done < "$cases"
echo "RUNCASES $side done, $fails failed"
[ "$fails" = 0 ]
