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
# CASE_TIMEOUT (seconds per command), CONNECT_TRIES.
# Writes OUTDIR/NAME.SIDE.log and OUTDIR/NAME.SIDE.rc.
side=$1 cases=$2 out=$3
: "${DEV:?}" "${GID:=1}" "${PEER:?}" "${PORT0:=18600}" "${WRAP:=}"
: "${CASE_TIMEOUT:=60}" "${CONNECT_TRIES:=100}"
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
		# shellcheck disable=SC2086
		timeout "$CASE_TIMEOUT" $cmd >> "$log" 2>&1 </dev/null
		rc=$?
	else
		echo "== $name: client: $cmd $peer" > "$log"
		try=0
		while :; do
			# shellcheck disable=SC2086
			timeout "$CASE_TIMEOUT" $cmd $peer > "$log.try" 2>&1 </dev/null
			rc=$?
			try=$((try + 1))
			# the server is not listening yet: the connect() failed, nothing else ran
			# (RDMA CM: the server's CM answered REJECTED / UNREACHABLE: no listener yet)
			if [ $rc -ne 0 ] && [ $try -lt "$CONNECT_TRIES" ] &&
			   grep -q -e "onnect to" -e "Unable to init the socket connection" \
				-e "_REJECTED" -e "_UNREACHABLE" -e "Unable to perform rdma_client" "$log.try"; then
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
