#!/bin/bash
# build-guest.sh RXEVM OUT - the NIC VM's initramfs (tests/nic, docs/interop.md
# "PMDs in a VM"): nothing of the guest's userland is built or installed here.
#
# The guest boots the Debian kernel that the rxe rig already fetched
# (RXEVM = tests/interop/build-vm.sh's output: kernel/, kver, rootfs/bin/busybox)
# with a tiny initramfs: busybox, the kernel modules the rig needs and
# guest-init.sh as /init. /init mounts the host's /usr read-only over 9p, so
# the guest runs exactly the host's DPDK libraries and PMD plugins, bash,
# iproute2, perftest and rdmacm-utils, and the uroced and liburoce.so of the
# build under test (a second 9p share) - never a copy.
#
# Writes OUT/nic-initrd.img (and OUT/nic-root/, the tree it packs). Modules
# go to /kmod with, per module, the list of files to insmod in order
# (/kmod/NAME.load): /lib becomes the host's /usr/lib once /usr is mounted,
# so the guest cannot use modprobe's /lib/modules; and a NIC driver
# (e1000e, vmxnet3, virtio_net) must be loaded only when the script wants
# the kernel to take a NIC, never at boot.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RXEVM=$(realpath "${1:?usage: build-guest.sh RXEVM OUT}")
OUT=$(realpath -m "${2:?usage: build-guest.sh RXEVM OUT}")
KVER=$(cat "$RXEVM/kver")
KMOD=$RXEVM/kernel/lib/modules/$KVER
ROOT=$OUT/nic-root

[ -f "$KMOD/modules.dep" ] || { echo "build-guest: no modules in $KMOD" >&2; exit 1; }
[ -x "$RXEVM/rootfs/bin/busybox" ] || { echo "build-guest: no busybox in $RXEVM/rootfs" >&2; exit 1; }

# the modules the rig loads: 9p (the host's /usr, the build, the share),
# uio_pci_generic and vfio-pci (the NIC under test), the kernel's own NIC
# drivers (the TCP side NIC; the af_packet benchmark on the same NIC model)
WANT="9p 9pnet_virtio virtio_pci virtio_net e1000e vmxnet3 uio_pci_generic vfio_pci vfio_iommu_type1"

rm -rf "$ROOT"
mkdir -p "$ROOT"/{busybox,kmod,proc,sys,dev,tmp,run,usr,etc,root,mnt,var}
cp "$RXEVM/rootfs/bin/busybox" "$ROOT/busybox/busybox"
for a in $("$ROOT/busybox/busybox" --list); do
	[ "$a" = busybox ] || ln -s busybox "$ROOT/busybox/$a"
done
# the host's layout (Debian 12 is usr-merged): these point into the 9p /usr
for d in bin sbin lib lib64; do ln -s "usr/$d" "$ROOT/$d"; done
ln -s /run "$ROOT/var/run"

# path of module $1 in modules.dep, its dependencies first
mod_path() {
	awk -F: -v n="$1" '{b=$1; sub(/.*\//,"",b); sub(/\.ko(\.[a-z]+)?$/,"",b); gsub(/-/,"_",b);
		if (b==n) {print $1; exit}}' "$KMOD/modules.dep"
}
mod_order() {  # every file module $1 needs, dependencies first, each once
	local p d
	p=$(mod_path "$1")
	[ -n "$p" ] || { echo "build-guest: module $1 not in $KVER (built in?)" >&2; return 0; }
	for d in $(awk -F: -v p="$p" '$1==p {print $2}' "$KMOD/modules.dep"); do
		d=${d##*/}; d=${d%%.ko*}; mod_order "${d//-/_}"
	done
	echo "$p"
}
for m in $WANT; do
	: > "$ROOT/kmod/$m.load"
	for f in $(mod_order "$m" | awk '!seen[$0]++'); do
		mkdir -p "$ROOT/kmod/$(dirname "$f")"
		cp -n "$KMOD/$f" "$ROOT/kmod/$f"
		echo "/kmod/$f" >> "$ROOT/kmod/$m.load"
	done
done

printf 'root:x:0:0:root:/root:/bin/bash\n' > "$ROOT/etc/passwd"
printf 'root:x:0:\n' > "$ROOT/etc/group"
printf '127.0.0.1 localhost\n::1 localhost\n' > "$ROOT/etc/hosts"
printf 'hosts: files\n' > "$ROOT/etc/nsswitch.conf"
echo nicvm > "$ROOT/etc/hostname"
install -m 0755 "$HERE/guest-init.sh" "$ROOT/init"

(cd "$ROOT" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) > "$OUT/nic-initrd.img.tmp"
# the packed image must hold /init and busybox, or the guest cannot start
gzip -dc "$OUT/nic-initrd.img.tmp" | cpio -t --quiet > "$OUT/nic-initrd.list"
grep -qx init "$OUT/nic-initrd.list" && grep -qx busybox/busybox "$OUT/nic-initrd.list" ||
	{ echo "build-guest: the packed image lacks /init or busybox" >&2; exit 1; }
mv "$OUT/nic-initrd.img.tmp" "$OUT/nic-initrd.img"
echo "build-guest: $OUT/nic-initrd.img ($(du -h "$OUT/nic-initrd.img" | cut -f1), kernel $KVER)"
