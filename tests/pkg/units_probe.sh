#!/bin/bash
# SPDX-License-Identifier: MIT
# Run by uroce-probe.service inside a booted container (deb_systemd.py):
# the packaged units started and stopped by systemd, used by a member of
# group uroce, refused to a non-member, and the per-user unit in a user's
# manager. One "ok   what" / "FAIL what" line per check in /probe.out, then
# "done", then the container powers off. Every wait ends when the unit it
# waits for is no longer starting or running.
set -euo pipefail
out=/probe.out
log=/probe.log
: > "$out"

ok() { echo "ok   $*" >> "$out"; }
bad() { echo "FAIL $*" >> "$out"; }
t() { # t WHAT CMD...: the command's exit status decides
    what=$1; shift
    echo "+ $*" >> "$log"
    if "$@" >> "$log" 2>&1; then ok "$what"; else bad "$what"; fi
}
# sock_up SOCKET STATE_CMD...: the socket exists, while the unit is up
sock_up() {
    s=$1; shift
    i=0
    while [ ! -S "$s" ] && [ $i -lt 1200 ]; do
        st=$("$@" 2>/dev/null)
        case "$st" in active|activating|reloading) ;; *) echo "unit is $st" >> "$log"; break ;; esac
        sleep 0.1; i=$((i + 1))
    done
    [ -S "$s" ]
}
# pingpong USER RUN_DIR_ENV...: ibv_rc_pingpong -c server and client as USER
pingpong() {
    u=$1; shift
    runuser -u "$u" -- env "$@" LD_PRELOAD=liburoce.so \
        ibv_rc_pingpong -d uroce0 -g 1 -c -n 100 -p 18515 > /tmp/srv.log 2>&1 &
    srv=$!
    i=0
    while :; do
        runuser -u "$u" -- env "$@" LD_PRELOAD=liburoce.so \
            ibv_rc_pingpong -d uroce0 -g 1 -c -n 100 -p 18515 127.0.0.1 > /tmp/cli.log 2>&1 && break
        # before the server listens the client is refused at once
        kill -0 $srv 2>/dev/null && grep -q "Couldn't connect" /tmp/cli.log && [ $i -lt 100 ] || break
        sleep 0.2; i=$((i + 1))
    done
    wait $srv; s=$?
    cat /tmp/srv.log /tmp/cli.log >> "$log"
    [ $s -eq 0 ] && grep -q "iters in" /tmp/cli.log && grep -q "iters in" /tmp/srv.log
}
result_ok() { # the unit ended well: Result=success, main process 0 or SIGTERM
    [ "$("$@" show -p Result --value uroced)" = success ]
}

# --- the system-wide daemon (uroced.service) ---
t "systemctl start uroced" systemctl start uroced
t "/run/uroce/uroce0.sock appears" sock_up /run/uroce/uroce0.sock systemctl is-active uroced
t "the socket is group uroce's, 0660" \
    sh -c '[ "$(stat -c "%G %a" /run/uroce/uroce0.sock)" = "uroce 660" ]'
t "a member of group uroce runs ibv_rc_pingpong -c through it" \
    pingpong alice UROCE_RUN_DIR=/run/uroce
t "a user outside group uroce does not see uroce0" \
    sh -c '! runuser -u bob -- env UROCE_RUN_DIR=/run/uroce LD_PRELOAD=liburoce.so ibv_devinfo -d uroce0'
t "uroce-ctl devices (root)" env UROCE_RUN_DIR=/run/uroce uroce-ctl devices
t "systemctl stop uroced" systemctl stop uroced
t "it stopped cleanly (Result=success)" result_ok systemctl
t "its socket is gone" sh -c '[ ! -e /run/uroce/uroce0.sock ]'

# --- the per-user daemon (systemctl --user, in alice's manager) ---
uid=$(id -u alice)
rt=/run/user/$uid
uctl() { runuser -u alice -- env XDG_RUNTIME_DIR="$rt" systemctl --user "$@"; }
t "alice's user manager starts" systemctl start "user@$uid.service"
t "systemctl --user start uroced" uctl start uroced
t "$rt/uroce/uroce0.sock appears" sock_up "$rt/uroce/uroce0.sock" uctl is-active uroced
t "alice runs ibv_rc_pingpong -c through her daemon (the default run directory)" \
    pingpong alice XDG_RUNTIME_DIR="$rt"
t "systemctl --user stop uroced" uctl stop uroced
t "it stopped cleanly (Result=success)" result_ok uctl
t "alice's user manager stops" systemctl stop "user@$uid.service"

journalctl -b --no-pager -o short-monotonic -n 300 > /probe.journal 2>&1 || true
# every line both daemons wrote, judged by the test (sanitizer, assertion)
journalctl -b --no-pager -o cat _COMM=uroced > /probe.uroced 2>&1 || true
echo done >> "$out"
systemctl --no-block poweroff
