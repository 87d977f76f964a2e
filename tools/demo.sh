#!/usr/bin/env bash
# The main job: start uroced on its embedded default (one device uroce0 on a
# looped-back DPDK ring port: no NIC, no hugepages, no root) and run the
# unmodified Debian ibv_rc_pingpong, server and client, through it.
set -euo pipefail
cd "$(dirname "$0")/.."
B=$(realpath "${1:-build}")
RUN_DIR=$(mktemp -d /tmp/uroce-demo.XXXXXX)
export UROCE_RUN_DIR=$RUN_DIR
cleanup() {
    [ -n "${DPID:-}" ] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null || true
    [ -n "${SPID:-}" ] && kill -KILL "$SPID" 2>/dev/null || true
    rm -rf "$RUN_DIR"
}
trap cleanup EXIT

"$B/emu/uroced" &
DPID=$!
for _ in $(seq 100); do [ -S "$RUN_DIR/uroce0.sock" ] && break; sleep 0.1; done
[ -S "$RUN_DIR/uroce0.sock" ] || { echo "uroced did not come up" >&2; exit 1; }

export LD_PRELOAD=$B/verbs/liburoce.so
ibv_devinfo -d uroce0
PORT=$((20000 + RANDOM % 10000))
timeout 60 ibv_rc_pingpong -d uroce0 -g 1 -p "$PORT" -n 1000 -s 4096 -e -c &
SPID=$!
sleep 0.5
timeout 60 ibv_rc_pingpong -d uroce0 -g 1 -p "$PORT" -n 1000 -s 4096 -e -c 127.0.0.1
wait "$SPID"
SPID=
echo "demo: ibv_rc_pingpong exchanged 1000 x 4096-byte messages, every byte checked (-c), through uroce0"
