#!/busybox/sh
# /init of the NIC VM (tests/nic/build-guest.sh). From the kernel command line:
#   nicvm_share=TAG:PATH[:rw],...   9p shares mounted at PATH (read-only unless
#                                   :rw); tag "usr" must be the host's /usr
#   nicvm_run=PATH                  the script to run with the host's bash once
#                                   everything is mounted (its arguments are
#                                   read from /proc/cmdline by the script)
# Prints "NICVM: up" before the script and "NICVM: exit rc=N" after it, then
# powers off; any failure before the script prints the exit line too, so the
# host never waits for a guest that cannot come up.
export PATH=/busybox
fail() { echo "NICVM: init failed: $*"; echo "NICVM: exit rc=125"; sync; poweroff -f; }
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm /dev/hugepages
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=755 tmpfs /run
mount -t hugetlbfs hugetlbfs /dev/hugepages
echo "NICVM: init uptime=$(cut -d' ' -f1 /proc/uptime)s"
for f in $(cat /kmod/9p.load /kmod/9pnet_virtio.load /kmod/virtio_pci.load); do
	insmod "$f" 2>/dev/null
done
RUN= SHARES=
for kv in $(cat /proc/cmdline); do
	case "$kv" in
	nicvm_share=*) SHARES=${kv#nicvm_share=} ;;
	nicvm_run=*) RUN=${kv#nicvm_run=} ;;
	esac
done
for s in $(echo "$SHARES" | tr ',' ' '); do
	tag=${s%%:*} rest=${s#*:}
	path=${rest%%:*} mode=ro
	[ "$rest" = "$path:rw" ] && mode=rw
	mkdir -p "$path" 2>/dev/null
	# cache=loose for what does not change under the guest (/usr, the
	# build); the read-write share is read by the host while we run
	opt=trans=virtio,version=9p2000.L,msize=512000,$mode
	[ "$mode" = ro ] && opt=$opt,cache=loose
	mount -t 9p -o "$opt" "$tag" "$path" || fail "9p share $tag on $path"
done
[ -x /usr/bin/bash ] || fail "no /usr/bin/bash: the host's /usr is not shared as tag usr"
[ -n "$RUN" ] && [ -f "$RUN" ] || fail "no script (nicvm_run=$RUN)"
echo "NICVM: up uptime=$(cut -d' ' -f1 /proc/uptime)s"
cd /tmp
HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/busybox /usr/bin/bash "$RUN"
echo "NICVM: exit rc=$? uptime=$(cut -d' ' -f1 /proc/uptime)s"
sync
poweroff -f
