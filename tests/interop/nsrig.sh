# nsrig.sh - sourced by interop.sh and crafted.sh: the private network
# namespace NS that holds the VM's tap and everything the script starts in
# it, and the one cleanup both need. The caller sets NS and fills PIDS with
# the process groups it started (setsid).
PIDS=()

cleanup() {
	local p left
	for p in "${PIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null; done
	# the VM and anything else in our namespace first, without a pause:
	# meson follows its SIGTERM with a SIGKILL 0.5 s later, and a qemu
	# left running would hold its tap and its cores until its own timeout
	left=$(ip netns pids "$NS" 2>/dev/null)
	[ -n "$left" ] && kill -KILL $left 2>/dev/null
	sleep 0.3
	for p in "${PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null; done
	left=$(ip netns pids "$NS" 2>/dev/null)
	[ -n "$left" ] && kill -KILL $left 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	return 0
}

# the namespace, or a skip; cleanup from here on, whatever ends the script
nsrig_start() {
	ip netns add "$NS" 2>/dev/null || skip "cannot create a network namespace"
	trap cleanup EXIT
	trap 'exit 1' INT TERM HUP
}
