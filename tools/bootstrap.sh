#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine.
#   tools/bootstrap.sh run   install, build, start uroced on its default, run ibv_rc_pingpong through it
#   tools/bootstrap.sh test  install, build (plain + ASan/UBSan with clang), run the whole meson test suite
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential pkg-config meson ninja-build clang libclang-rt-14-dev
      libdpdk-dev dpdk-dev libpcap-dev libbpf-dev libxdp-dev
      libibverbs-dev ibverbs-utils perftest python3-pyverbs
      tshark python3-scapy valgrind iproute2 procps psmisc strace
      gdb        # the stacks of a daemon that does not stop, in the test's log
      iptables   # af_packet hosts answering for the kernel's address (tests/net)
      qemu-system-x86 cpio kmod gzip
      ucx-utils openmpi-bin libopenmpi-dev libfabric-bin infiniband-diags
      rdmacm-utils librdmacm-dev qperf
      libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0  # verbs_pin's allocators (pin-alloc-*)
      dpkg-dev debhelper   # the Debian packages, and their tests (tests/pkg):
      lintian mmdebstrap podman runc systemd-container python3-yaml)

install_deps() {
    local missing=()
    for p in "${PKGS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    # tshark asks whether non-root users may capture; answer no without a prompt
    echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {
    [ -d build ] || meson setup build
    ninja -C build
}

build_asan() {
    [ -d build-asan ] || CC=clang meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
    ninja -C build-asan
}

summarize() {
    # A plain closing line that any CI log reader understands.
    /usr/bin/python3 - "$@" <<'PY'
import json, sys
passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        for line in open(path):
            r = json.loads(line)
            res = r.get("result")
            if res in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif res == "SKIP":
                skipped += 1
            else:
                failed += 1
    except FileNotFoundError:
        failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
}

case "${1:-}" in
run)
    install_deps
    build
    exec tools/demo.sh build
    ;;
test)
    install_deps
    build
    build_asan
    rc=0
    meson test -C build --print-errorlogs --num-processes 2 || rc=1
    meson test -C build-asan --print-errorlogs --num-processes 2 --no-suite nosan || rc=1
    # a test that skipped on this machine without being expected to is a
    # failure (tests/ci-skips.txt, docs/testing.md)
    /usr/bin/python3 tests/ci_skips.py tests/ci-skips.txt plain=build/meson-logs/testlog.json \
        asan=build-asan/meson-logs/testlog.json || rc=1
    summarize build/meson-logs/testlog.json build-asan/meson-logs/testlog.json
    exit $rc
    ;;
*)
    echo "usage: $0 run|test" >&2
    exit 2
    ;;
esac
