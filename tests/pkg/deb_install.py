#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Debian packages installed as a user installs them (docs/running.md
"Installing"), into a clean Debian 12 root.

  deb_install.py --src SOURCE_DIR --build BUILD_DIR

In a clean root (pkgenv.clean_root: mmdebstrap --variant=apt from this
machine's Debian sources, with ibverbs-utils and rdmacm-utils):

1. `apt-get install --no-install-recommends ./uroce_*.deb ./liburoce_*.deb`
   (without the port drivers): an af_packet port is refused with one line
   naming librte-net-af-packet23;
2. the default daemon (`uroced`, no arguments) and `ibv_rc_pingpong -c`
   (every byte checked) with LD_PRELOAD=liburoce.so by its bare name, then
   uroce-ctl and uroce-stat against that daemon, which stops with 0;
3. uroce-ports: the af_packet driver is found (the port fails on its
   missing interface, not on a missing driver);
4. the ring mempool driver removed by force: uroced names its package;
5. purge and autoremove leave the root as it was, but for group uroce
   (Debian leaves system groups behind on purge).

Exit 0 pass, 1 fail, 77 skip (no dpkg-dev/debhelper, mmdebstrap, Debian
sources)."""
import os
import re

import pkgenv
from pkgenv import check, h

PRELOAD = {'LD_PRELOAD': 'liburoce.so'}  # the bare name: the linker's path finds it
# what the snapshots before install and after purge compare: not the
# kernel's, apt's and dpkg's own state, logs, nor the resolver we copied in
SNAP_SKIP = ('proc', 'sys', 'dev', 'run', 'tmp', 'var/lib/apt', 'var/cache', 'var/log',
             'var/lib/dpkg', 'etc/ld.so.cache', 'etc/resolv.conf')


def pingpong(root, env, server_addr, extra=()):
    """ibv_rc_pingpong -c server and client through the installed shim (its
    default TCP port: root is in a network namespace of its own), the
    client retried only while the server does not listen yet."""
    base = ['ibv_rc_pingpong', '-d', 'uroce0', '-g', '1', '-c', '-n', '200'] + list(extra)
    srv = root.popen(base, dict(PRELOAD, **env))
    try:
        def client():
            rc, out = root.run(base + [server_addr], dict(PRELOAD, **env), timeout=120)
            return rc == 0, out
        ok, out = h.retry(client, [pkgenv.PINGPONG_NOT_LISTENING], limit=h.LISTEN_RETRIES,
                          what='ibv_rc_pingpong client', alive=srv.alive, pause=0.5)
        print(out[-3000:])
        src = srv.wait(120)
        sout = srv.output()
        print('--- server ---\n' + sout)
        return ok and src == 0 and 'iters in' in out and 'iters in' in sout
    finally:
        srv.stop()
        srv.remove_log()


def daemon(root, args, sock, env=None):
    """uroced in the root, once its socket exists (None if it never came:
    it exited, or hung for a minute)."""
    d = root.popen(['uroced'] + args, env)
    if h.wait_until(lambda: os.path.exists(root.path(sock)), d.alive, 60):
        return d
    print(d.output())
    d.stop()
    d.remove_log()
    return None


def stop_daemon(d, what):
    """SIGTERM, and its end judged (harness.daemon_faults)."""
    rc = d.stop()
    log = d.output()
    print('--- uroced ---\n' + log[-1500:])
    d.remove_log()
    return pkgenv.daemon_ended(rc, log, what)


def one_line(out, want):
    lines = [ln for ln in out.splitlines() if ln.strip()]
    return len(lines) == 1 and lines[0].startswith('uroced: ') and want in lines[0]


def install(root, debs):
    inside = root.copy_in([debs['uroce'], debs['liburoce']], '/tmp/debs')
    rc, out = root.apt_install(['--no-install-recommends'] + inside)
    print(out[-3000:])
    ok = check(rc == 0, 'apt-get install ./uroce_*.deb ./liburoce_*.deb into a clean root')
    _, out = root.run(['dpkg-query', '-W', '-f=${Status}', 'uroce-ports'], quiet=True)
    check('install ok installed' not in out, 'uroce-ports is not installed (a Recommends)')
    return ok


def use_default(root):
    """The default daemon and programs through the installed files."""
    root.host_net(['ip', 'link', 'set', 'lo', 'up'])
    rc, out = root.run(['uroced', '--port', 'net_af_packet0,iface=lo'], timeout=60)
    print(out)
    check(rc == 1 and one_line(out, 'apt install librte-net-af-packet23') and
          'failed to parse device' not in out,
          'without uroce-ports an af_packet port is refused naming librte-net-af-packet23')
    # root without XDG_RUNTIME_DIR: the default run directory /tmp/uroce-0
    d = daemon(root, [], '/tmp/uroce-0/uroce0.sock')
    if not check(d is not None, 'uroced with no arguments serves uroce0 (/tmp/uroce-0)'):
        return
    try:
        check(pingpong(root, {}, '127.0.0.1'),
              'ibv_rc_pingpong -c through the installed uroced and liburoce.so')
        rc, out = root.run(['uroce-ctl', '--json', 'devices'])
        print(out)
        check(rc == 0 and '"name":"uroce0"' in out, 'uroce-ctl devices')
        rc, out = root.run(['uroce-ctl', 'counters', '--port'])
        m = re.search(r'^\s*rx_roce\s+(\d+)', out, re.M)
        print(out[:1500])
        check(rc == 0 and m and int(m.group(1)) > 0, 'uroce-ctl counters: the RoCE frames')
        rc, out = root.run(['uroce-stat', '-d', 'uroce0', '-q'])
        check(rc == 0 and 'uroce0' in out, 'uroce-stat')
    finally:
        stop_daemon(d, 'uroced stops on SIGTERM with 0, no fault in its log')
    check(not os.path.exists(root.path('/tmp/uroce-0/uroce0.sock')), 'its socket is removed')


def ports(root, debs):
    inside = root.copy_in([debs['uroce-ports']], '/tmp/debs')
    rc, out = root.apt_install(inside)
    print(out[-2000:])
    check(rc == 0, 'apt-get install ./uroce-ports_*.deb')
    rc, out = root.run(['uroced', '--port', 'net_af_packet0,iface=uroce-none0'], timeout=120)
    print(out)
    check(rc == 1 and 'needs DPDK' not in out and 'failed to parse device' not in out and
          'uroce-none0' in out,
          'with uroce-ports the af_packet driver loads (the missing interface is the error)')


def mempool(root):
    rc, out = root.run(['dpkg', '-r', '--force-depends', 'librte-mempool-ring23'])
    print(out[-1000:])
    rc, out = root.run(['uroced'], timeout=60)
    print(out)
    check(rc == 1 and one_line(out, 'apt install librte-mempool-ring23'),
          'without the ring mempool driver uroced names librte-mempool-ring23')


def purge(root, before):
    rc, out = root.run(['apt-get', 'purge', '-y', '-q'] + list(pkgenv.PACKAGES),
                       timeout=pkgenv.APT_TIMEOUT)
    print(out[-2000:])
    check(rc == 0, 'apt-get purge uroce liburoce uroce-ports')
    rc, out = root.run(['apt-get', 'autoremove', '--purge', '-y', '-q'],
                       timeout=pkgenv.APT_TIMEOUT)
    print(out[-2000:])
    check(rc == 0, 'apt-get autoremove --purge (the DPDK libraries they brought)')
    after = root.snapshot(SNAP_SKIP)
    group = {'/etc/group', '/etc/gshadow', '/etc/group-', '/etc/gshadow-'}
    diff = sorted(p for p in set(before) | set(after)
                  if before.get(p) != after.get(p) and p not in group)
    for p in diff[:40]:
        print('  %s: %s -> %s' % (p, before.get(p), after.get(p)))
    check(not diff, 'purge leaves nothing behind (%d paths differ)' % len(diff))
    with open(root.path('/etc/group')) as f:
        left = [ln for ln in f if ln.startswith('uroce:')]
    check(len(left) == 1, 'group uroce stays (Debian does not remove system groups)')


def body(a):
    debs = pkgenv.deb_paths(pkgenv.debs(a.src, a.build))
    tar = pkgenv.clean_root(a.build)
    pkgenv.sweep(a.build)
    with pkgenv.Root.from_tar(a.build, tar) as root:
        before = root.snapshot(SNAP_SKIP)
        root.start()
        if not install(root, debs):
            return None
        root.stop()
        root.start(net=True)   # its own loopback: ports of nobody else
        use_default(root)
        root.stop()
        root.start()
        ports(root, debs)
        mempool(root)
        purge(root, before)
    return None


if __name__ == '__main__':
    raise SystemExit(pkgenv.main(body))
