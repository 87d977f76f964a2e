#!/bin/bash
# build-vm.sh - (copied from shared/interop/rxe-vm; host packages trimmed, tc modules added)
# build a minimal Soft-RoCE (rdma_rxe) VM from Debian packages only.
#
# Output (in $OUT, default ./out beside this script):
#   vmlinuz        Debian bookworm kernel (linux-image-amd64 -> linux-image-6.1.0-*-amd64)
#   initrd.img     gzip'ed cpio: busybox-static + iproute2 (rdma) + rdma-core, libibverbs1,
#                  ibverbs-providers (librxe), ibverbs-utils, perftest, rdmacm-utils,
#                  the kernel modules needed for virtio-net/9p/rxe, /init, and our small
#                  verbs tools built from src/*.c (rxe_ops).
#   kver           kernel version string
#
# Idempotent: host packages are installed only if missing, .debs are downloaded only if
# missing, the rootfs is re-assembled from scratch each run (takes a few seconds).
#
# usage: build-vm.sh [--with-python] | --verify ROOTFS | --verify-initrd INITRD
#   --with-python   build a second image instead, out/initrd-py.img (rootfs in out/rootfs-py):
#                   the default package set plus bash, coreutils, python3(-minimal) and
#                   python3-pyverbs, enough to run rdma-core's pyverbs tests in the VM
#                   (boot it with: run-peer.sh --initrd out/initrd-py.img --mem 1536 ...).
#                   out/initrd.img and out/rootfs are left untouched.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$HERE/out}
DEBS=$OUT/debs
WITH_PY= VERIFY_ONLY= VERIFY_INITRD=
while (($#)); do
    case "$1" in
        --with-python) WITH_PY=1; shift ;;
        # only the verification below, of an assembled rootfs (the harness suite)
        --verify) VERIFY_ONLY=${2:?--verify ROOTFS}; shift 2 ;;
        --verify-initrd) VERIFY_INITRD=${2:?--verify-initrd INITRD}; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "build-vm.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ -n "$WITH_PY" ]; then
    ROOT=$OUT/rootfs-py
    INITRD=$OUT/initrd-py.img
else
    ROOT=$OUT/rootfs
    INITRD=$OUT/initrd.img
fi
export DEBIAN_FRONTEND=noninteractive

log() { echo "[build-vm] $*" >&2; }

# ---------------------------------------------------------------- verification
# An image built while apt's metadata was incomplete had no libc: the guest's
# /init could not execute and every test ran into its timeout. Every program
# the guest runs must resolve its libraries inside the rootfs (the guest's
# own ld.so, chrooted), and the packed image must hold /init; otherwise
# nothing is written and the build fails (interop.sh then fails, never
# caches a wrong image).
verify_rootfs() {
    local bad=0 p interp ldso=/lib64/ld-linux-x86-64.so.2 out
    [ -x "$ROOT$ldso" ] || { log "VERIFY: no $ldso in the rootfs (libc6 missing)"; return 1; }
    [ -x "$ROOT/init" ] || { log "VERIFY: no executable /init"; return 1; }
    interp=$(sed -n '1s/^#! *\([^ ]*\).*/\1/p' "$ROOT/init")
    chroot "$ROOT" "${interp:-/bin/sh}" -c 'exit 0' ||
        { log "VERIFY: /init's interpreter ${interp:-/bin/sh} does not run"; bad=1; }
    for p in /bin/dash /bin/ip /sbin/tc /usr/bin/ibv_devinfo /usr/bin/ibv_rc_pingpong \
             /usr/bin/ib_write_bw /usr/bin/rping /usr/bin/ucmatose \
             $(cd "$ROOT" && ls usr/lib/x86_64-linux-gnu/libibverbs/librxe-*.so 2>/dev/null | sed 's#^#/#') \
             $(cd "$ROOT" && ls usr/local/bin/* 2>/dev/null | sed 's#^#/#'); do
        [ -e "$ROOT$p" ] || { log "VERIFY: $p missing"; bad=1; continue; }
        if ! out=$(chroot "$ROOT" "$ldso" --list "$p" 2>&1) || grep -q 'not found' <<<"$out"; then
            log "VERIFY: $p does not resolve in the rootfs:"; printf '%s\n' "$out" >&2; bad=1
        fi
    done
    [ -n "$(cd "$ROOT" && ls usr/lib/x86_64-linux-gnu/libibverbs/librxe-*.so 2>/dev/null)" ] ||
        { log "VERIFY: no rxe provider (librxe)"; bad=1; }
    return $bad
}
# the packed image holds /init (cpio lists the names as find gave them: ./init)
# (grep reads the whole listing: with -q it would stop at the match and,
# under pipefail, cpio's SIGPIPE would fail a good image)
verify_initrd() {
    gzip -dc "$1" | cpio -t --quiet 2>/dev/null | grep -xE '(\./)?init' >/dev/null ||
        { log "VERIFY: the packed image holds no /init"; return 1; }
}
if [ -n "$VERIFY_INITRD" ]; then
    verify_initrd "$VERIFY_INITRD" && { log "$VERIFY_INITRD holds /init"; exit 0; }
    exit 1
fi
if [ -n "$VERIFY_ONLY" ]; then
    ROOT=$VERIFY_ONLY
    verify_rootfs && { log "$ROOT verifies"; exit 0; }
    exit 1
fi

# ---------------------------------------------------------------- host packages
# only what building and booting the image needs (tests/interop/ checks captures with
# build/tools/uroce-pcap, not with tshark/scapy)
HOST_PKGS="qemu-system-x86 cpio gzip kmod iproute2"
missing=()
for p in $HOST_PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    log "installing host packages: ${missing[*]}"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ---------------------------------------------------------------- which kernel
if ! apt-cache show linux-image-amd64 >/dev/null 2>&1; then apt-get update -qq; fi
KPKG=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
KVER=${KPKG#linux-image-}
log "kernel package: $KPKG ($KVER)"

# ---------------------------------------------------------------- guest packages
# Explicit list = the dependency closure of
#   busybox-static iproute2 rdma-core libibverbs1 ibverbs-providers ibverbs-utils perftest rdmacm-utils
# minus maintainer-script / init-system packages that are useless in an initramfs
# (debconf, dpkg, adduser, passwd, udev, pam, sysvinit-utils ...).
GUEST_PKGS="busybox-static dash iproute2 rdma-core libibverbs1 ibverbs-providers ibverbs-utils perftest rdmacm-utils"
EXCLUDE_RE='^(adduser|cdebconf|debconf|dpkg|install-info|passwd|tar|udev|sysvinit-utils|lsb-base|readline-common|libdebian-installer4|libnewt0\.52|libslang2|libtextwrap1|libpam.*|libsemanage.*|libaudit.*|init-system-helpers|perl-base|libreadline8)$'
if [ -n "$WITH_PY" ]; then
    # python3-minimal is a Pre-Depends of python3 (not followed below) and ships /usr/bin/python3.
    # bash + coreutils: run-rdma-core-tests.sh is a bash script and uses GNU timeout --kill-after.
    GUEST_PKGS="$GUEST_PKGS bash coreutils python3-minimal python3 python3-pyverbs"
    # perl comes in only through mailcap (python3 -> media-types/mime-support); not needed
    EXCLUDE_RE="${EXCLUDE_RE%)\$}|perl|perl-modules-.*|libperl.*|libgdbm-compat4|mailcap|mime-support|usrmerge|usr-is-merged)\$"
fi
mapfile -t ALL < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances --no-pre-depends $GUEST_PKGS 2>/dev/null |
    grep -E '^[a-z0-9]' | sort -u | grep -Ev "$EXCLUDE_RE")
# Virtual packages (no candidate) are dropped.
mapfile -t PKGS < <(apt-cache policy "${ALL[@]}" 2>/dev/null |
    awk '/^[a-z0-9]/ {sub(/:$/,"",$1); p=$1} /Candidate: [0-9]/ {print p}')
PKGS+=("$KPKG")
mkdir -p "$DEBS"
need=()
for p in "${PKGS[@]}"; do
    ls "$DEBS/${p}_"*.deb >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
    log "downloading ${#need[@]} .debs"
    (cd "$DEBS" && apt-get download -qq "${need[@]}" 2>&1 | grep -v 'unsandboxed' || true)
fi

# ---------------------------------------------------------------- kernel
KDEB=$(ls "$DEBS/${KPKG}_"*.deb | tail -1)
if [ ! -f "$OUT/kernel/boot/vmlinuz-$KVER" ]; then
    log "extracting $KDEB"
    rm -rf "$OUT/kernel"; mkdir -p "$OUT/kernel"
    dpkg-deb -x "$KDEB" "$OUT/kernel"
fi
[ -f "$OUT/kernel/lib/modules/$KVER/modules.dep" ] || depmod -b "$OUT/kernel" "$KVER"
cp -f "$OUT/kernel/boot/vmlinuz-$KVER" "$OUT/vmlinuz"
echo "$KVER" > "$OUT/kver"

# ---------------------------------------------------------------- rootfs
log "assembling rootfs"
rm -rf "$ROOT"; mkdir -p "$ROOT"
for p in "${PKGS[@]}"; do
    [ "$p" = "$KPKG" ] && continue
    dpkg-deb -x "$(ls "$DEBS/${p}_"*.deb | tail -1)" "$ROOT"
done
# trim docs/locales/man pages
rm -rf "$ROOT"/usr/share/{doc,man,info,locale,lintian,bug} "$ROOT"/usr/lib/systemd "$ROOT"/lib/systemd

# busybox applets (do not shadow real binaries shipped by the packages)
mkdir -p "$ROOT"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,mnt/host,root,etc,var/tmp}
for a in $("$ROOT/bin/busybox" --list-full); do
    [ -e "$ROOT/$a" ] || [ -L "$ROOT/$a" ] || ln -s /bin/busybox "$ROOT/$a"
done
# /bin/sh = dash: busybox sh would run its own applets (e.g. a cut-down `ip`) regardless of PATH
ln -sf dash "$ROOT/bin/sh"

# kernel modules: the ones we need + their dependencies
KMOD="$OUT/kernel/lib/modules/$KVER"
# sch_ingress/cls_u32/act_gact: random loss of RoCE frames in both directions (loss tests)
WANT="virtio_pci virtio_net crc32_generic crc32_pclmul rdma_rxe ib_uverbs rdma_ucm ib_umad 9pnet_virtio 9p sch_netem sch_ingress cls_u32 act_gact"
declare -A seen=()
resolve() {  # print relative paths of module $1 and all its deps
    local name=$1 path deps d
    path=$(awk -F: -v n="$name" '{b=$1; sub(/.*\//,"",b); sub(/\.ko(\.[a-z]+)?$/,"",b); gsub(/-/,"_",b); if (b==n) {print $1; exit}}' "$KMOD/modules.dep")
    [ -n "$path" ] || { log "module $name not found (builtin?)"; return 0; }
    [ -n "${seen[$path]:-}" ] && return 0
    seen[$path]=1; echo "$path"
    deps=$(awk -F: -v p="$path" '$1==p {print $2}' "$KMOD/modules.dep")
    for d in $deps; do
        d=${d##*/}; d=${d%%.ko*}; d=${d//-/_}
        resolve "$d"
    done
}
MODS=()
for m in $WANT; do mapfile -t -O "${#MODS[@]}" MODS < <(resolve "$m"); done
GMOD="$ROOT/lib/modules/$KVER"
mkdir -p "$GMOD"
for f in $(printf '%s\n' "${MODS[@]}" | sort -u); do
    mkdir -p "$GMOD/$(dirname "$f")"; cp "$KMOD/$f" "$GMOD/$f"
done
cp "$KMOD"/modules.{builtin,builtin.modinfo,order} "$GMOD/"
depmod -b "$ROOT" "$KVER"
log "modules: $(printf '%s\n' "${MODS[@]}" | sort -u | sed 's#.*/##' | tr '\n' ' ')"

# our own verbs tools (src/*.c), linked against the same Debian libibverbs
if ls "$HERE"/src/*.c >/dev/null 2>&1; then
    mkdir -p "$ROOT/usr/local/bin"
    for c in "$HERE"/src/*.c; do
        gcc -O2 -Wall -o "$ROOT/usr/local/bin/$(basename "$c" .c)" "$c" -libverbs
    done
fi

# minimal /etc
echo rxevm > "$ROOT/etc/hostname"
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$ROOT/etc/passwd"
printf 'root:x:0:\n' > "$ROOT/etc/group"
printf '127.0.0.1 localhost\n' > "$ROOT/etc/hosts"
# interactive shell (--shell) is busybox ash, which prefers its own applets: use the real tools
printf 'alias ip=/bin/ip tc=/sbin/tc\nexport PS1="rxevm# "\n' > "$ROOT/etc/profile"
install -m 0755 "$HERE/guest-init.sh" "$ROOT/init"
ldconfig -r "$ROOT"

# ---------------------------------------------------------------- initramfs
if [ -n "$WITH_PY" ]; then
    # byte-compile the stdlib and pyverbs now, as the Debian postinst would, so that no VM boot
    # compiles them again under TCG. The host's /usr/bin/python3 is the same Python 3.11.
    /usr/bin/python3 -m compileall -q -j0 -s "$ROOT" -p / "$ROOT/usr/lib/python3.11" "$ROOT/usr/lib/python3/dist-packages" \
        >/dev/null 2>&1 || log "warning: compileall reported errors (ignored)"
fi

verify_rootfs || { log "the rootfs does not verify: no image written"; rm -f "$INITRD"; exit 1; }

log "packing initramfs"
(cd "$ROOT" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) > "$INITRD.tmp"
verify_initrd "$INITRD.tmp" || { rm -f "$INITRD.tmp" "$INITRD"; exit 1; }
mv "$INITRD.tmp" "$INITRD"
log "done: $OUT/vmlinuz ($(du -h "$OUT/vmlinuz" | cut -f1)), $INITRD ($(du -h "$INITRD" | cut -f1)), rootfs $(du -sh "$ROOT" | cut -f1)"
