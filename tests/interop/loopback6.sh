#!/bin/bash
# loopback6.sh UROCED SHIM UROCE_PCAP [PRELOAD_FIRST] - RoCEv2 over IPv6 GIDs on the
# default looped-back port (no VM, no root).
#
# One uroced with --ip 127.0.0.1 --ip fd77::1 (GID 0 = fe80:: EUI-64 of its MAC,
# GID 1 = ::ffff:127.0.0.1, GID 2 = fd77::1) and --pcap; stock ibv_rc_pingpong -c and
# ibv_ud_pingpong -c (LD_PRELOAD liburoce.so, TCP exchange over 127.0.0.1) over the
# link-local GID 0 and the global GID 2. The capture must hold RoCE frames with those
# IPv6 addresses that `uroce-pcap check` accepts (IPv6 ICRC: traffic class, flow label
# and hop limit masked), with UDP checksum 0 as rxe sends over IPv6 (docs/interop.md).
# PRELOAD_FIRST: a sanitizer runtime preloaded before the shim (sanitized builds).
# Exit 0 pass, 1 fail, 77 skip. The daemon and the programs are stopped on exit.
set -uo pipefail
UROCED=${1:?usage: loopback6.sh UROCED SHIM UROCE_PCAP [PRELOAD_FIRST]}
SHIM=${2:?} PCAPTOOL=${3:?} FIRST=${4:-}
say() { echo "[loopback6] $*"; }
for p in ibv_rc_pingpong ibv_ud_pingpong timeout; do
	command -v "$p" >/dev/null || { say "SKIP: missing $p"; exit 77; }
done
R=$(mktemp -d "${TMPDIR:-/tmp}/uroce-lo6.XXXXXX") || exit 1
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$R"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

PRE=$SHIM
[ -n "$FIRST" ] && PRE=$FIRST:$SHIM
RUN=(env UROCE_RUN_DIR="$R" LD_PRELOAD="$PRE" ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}")

UROCE_RUN_DIR=$R timeout 150 "$UROCED" --ip 127.0.0.1 --ip fd77::1 --pcap "$R/u.pcap" \
	>"$R/uroced.log" 2>&1 &
UPID=$!
PIDS+=("$UPID")
for _ in $(seq 100); do
	[ -S "$R/uroce0.sock" ] && break
	kill -0 "$UPID" 2>/dev/null || break
	sleep 0.1
done
[ -S "$R/uroce0.sock" ] || { cat "$R/uroced.log"; say "FAIL: uroced did not start"; exit 1; }
# the GID table is logged once the device is up, which may follow the socket
for _ in $(seq 100); do
	grep -q '^uroce0: mac ' "$R/uroced.log" && break
	sleep 0.1
done
LL=$(sed -n 's/^uroce0: gid 0 \(fe80:[0-9a-f:]*\)$/\1/p' "$R/uroced.log")
grep -q '^uroce0: gid 2 fd77::1$' "$R/uroced.log" && [ -n "$LL" ] ||
	{ cat "$R/uroced.log"; say "FAIL: GID 0 is not fe80:: or GID 2 is not fd77::1"; exit 1; }

# A free-ish TCP port per run, so parallel runs of the suite do not meet.
HERE=$(cd "$(dirname "$0")" && pwd)
fail=0
free_port() {  # a TCP port the kernel picked (several checkouts run at once)
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
listening() {  # PORT: something listens on it (no probe connection: the server would take it)
	grep -qE "^ *[0-9]+: [0-9A-F]+:$(printf %04X "$1") [0-9A-F]+:0000 0A " /proc/net/tcp /proc/net/tcp6
}
pair() {  # NAME PROG GID ARGS...: PROG as server, then, once it listens, as client of 127.0.0.1
	local name=$1 prog=$2 gid=$3; shift 3
	local spid rc=1 src port
	port=$(free_port)
	"${RUN[@]}" timeout 30 "$prog" -d uroce0 -g "$gid" -p "$port" "$@" \
		>"$R/$name.server.log" 2>&1 </dev/null &
	spid=$!
	PIDS+=("$spid")
	# bounded by the server being alive (its own timeout 30 is the last bound)
	while ! listening "$port" && kill -0 "$spid" 2>/dev/null; do sleep 0.05; done
	if listening "$port"; then
		"${RUN[@]}" timeout 30 "$prog" -d uroce0 -g "$gid" -p "$port" "$@" 127.0.0.1 \
			>"$R/$name.client.log" 2>&1 </dev/null
		rc=$?
	else
		echo "the server exited before it listened on TCP port $port" >"$R/$name.client.log"
	fi
	wait "$spid"
	src=$?
	if [ $rc = 0 ] && [ $src = 0 ]; then
		say "PASS $name: $(grep -h 'usec/iter' "$R/$name.client.log")"
	else
		say "FAIL $name: client rc=$rc server rc=$src"
		sed 's/^/  client| /' "$R/$name.client.log"
		sed 's/^/  server| /' "$R/$name.server.log"
		fail=1
	fi
}
# 16 KiB RC messages: 4 packets each at the loopback's IB MTU 4096
pair rc_ll ibv_rc_pingpong 0 -c -s 16384 -n 20
pair ud_ll ibv_ud_pingpong 0 -c -s 1024 -n 20
pair rc_v6 ibv_rc_pingpong 2 -c -s 16384 -n 20
pair ud_v6 ibv_ud_pingpong 2 -c -s 1024 -n 20

kill -TERM "$UPID"
wait "$UPID"
urc=$?
PIDS=()
# SIGTERM is a clean stop; anything else (a sanitizer report, a crash) fails the test
if ! python3 "$HERE/../lib/harness.py" daemon-verdict "$urc" "$R/uroced.log"; then
	say "FAIL: uroced's end (exit status $urc)"; tail -30 "$R/uroced.log"; fail=1
fi
# and decoders that are not uroce's (tshark, an Annex A17 ICRC of its own)
python3 "$HERE/../tools/pcap_indep.py" "$R/u.pcap" 100 >"$R/indep.log" 2>&1
irc=$?
say "$(grep -m1 'independent check' "$R/indep.log")"
[ $irc = 77 ] && PARTIAL="no tshark: the capture has no independent decoder"
[ $irc != 0 ] && [ $irc != 77 ] && { say "FAIL: the independent capture check"; grep FAIL "$R/indep.log" | head; fail=1; }
"$PCAPTOOL" check "$R/u.pcap" >"$R/check.log" 2>&1
crc=$?
say "capture: $(cat "$R/check.log")"
if [ $crc != 0 ] || ! grep -q ' 0 RoCE invalid' "$R/check.log"; then
	say "FAIL: uroce-pcap check"; grep -v 'icrc=ok' "$R/check.log" | head -20; fail=1
fi
"$PCAPTOOL" decode "$R/u.pcap" >"$R/decode.log" 2>&1
n_ll=$(grep -c " \[$LL\]:[0-9]* > \[$LL\]:4791 .*icrc=ok" "$R/decode.log")
n_v6=$(grep -c " \[fd77::1\]:[0-9]* > \[fd77::1\]:4791 .*icrc=ok" "$R/decode.log")
say "capture: $n_ll RoCE frames over $LL, $n_v6 over fd77::1"
if [ "$n_ll" -lt 100 ] || [ "$n_v6" -lt 100 ]; then
	say "FAIL: too few IPv6 RoCE frames in the capture"; fail=1
fi
# UDP checksum of every IPv6 RoCE frame: 0, as rxe sends (and RoCE NICs accept)
if command -v python3 >/dev/null; then
	python3 - "$R/u.pcap" <<'EOF' || fail=1
import struct, sys
d = open(sys.argv[1], 'rb').read()
le = d[:4] in (b'\xd4\xc3\xb2\xa1', b'\x4d\x3c\xb2\xa1')
off, n, bad = 24, 0, 0
while off + 16 <= len(d):
    incl = struct.unpack((('<' if le else '>') + 'I'), d[off + 8:off + 12])[0]
    f = d[off + 16:off + 16 + incl]
    off += 16 + incl
    if len(f) >= 62 and f[12:14] == b'\x86\xdd' and f[20] == 17 and f[56:58] == b'\x12\xb7':
        n += 1
        bad += f[60:62] != b'\0\0'
print('[loopback6] capture: %d IPv6 RoCE frames, %d with a non-zero UDP checksum' % (n, bad))
sys.exit(1 if bad or not n else 0)
EOF
fi
[ "$fail" = 0 ] && say "all passed" || { say "FAILED"; sed 's/^/  uroced| /' "$R/uroced.log"; }
[ "$fail" = 0 ] && [ -n "${PARTIAL:-}" ] && { say "SKIP: $PARTIAL"; exit 77; }
exit "$fail"
