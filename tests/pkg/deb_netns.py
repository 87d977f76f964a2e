#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Two installed systems across Ethernet: the packages installed into a
clean Debian 12 root (uroce, liburoce, uroce-ports), the root copied, each
copy in a network namespace of its own, joined by a veth pair, uroced on
its veth end through af_packet, and ibv_rc_pingpong -c (every byte
checked) and rping -V across them through the installed shim.

  deb_netns.py --src SOURCE_DIR --build BUILD_DIR

The namespaces are the roots' own (pkgenv.Root): the veth pair goes with
them. Exit 0 pass, 1 fail, 77 skip."""
import random
import re
import subprocess

import pkgenv
from pkgenv import check, h
from deb_install import daemon, pingpong, stop_daemon

SIDES = ('a', 'b')
KIP = {'a': '10.93.0.1', 'b': '10.93.0.2'}        # the kernels': TCP of the programs
UIP = {'a': '10.93.1.1', 'b': '10.93.1.2'}        # uroce's: GID 1
MAC = {'a': '02:00:00:93:00:01', 'b': '02:00:00:93:00:02'}


def install(build, debs, tar):
    root = pkgenv.Root.from_tar(build, tar)
    try:
        root.start()
        inside = root.copy_in([debs[p] for p in pkgenv.PACKAGES], '/tmp/debs')
        rc, out = root.apt_install(inside)
        print(out[-2000:])
        root.stop()
    except BaseException:
        root.remove()
        raise
    if not check(rc == 0, 'apt-get install ./uroce_*.deb ./liburoce_*.deb ./uroce-ports_*.deb'):
        root.remove()
        return None
    return root


def link(roots):
    """A veth pair, one end in each root's namespace, addressed and up."""
    tag = '%x' % random.randrange(1 << 24)
    names = {'a': 'upa' + tag, 'b': 'upb' + tag}
    r = subprocess.run(['ip', 'link', 'add', names['a'], 'type', 'veth', 'peer', 'name',
                        names['b']], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise h.Missing('no veth here: ' + r.stderr.strip())
    try:
        for s in SIDES:
            r = subprocess.run(['ip', 'link', 'set', names[s], 'netns', str(roots[s].pid)],
                               capture_output=True, text=True, timeout=30)
            if r.returncode != 0:
                raise RuntimeError('ip link set netns: ' + r.stderr)
    except BaseException:
        subprocess.run(['ip', 'link', 'del', names['a']], capture_output=True, timeout=30)
        raise
    for s in SIDES:
        for cmd in (['ip', 'link', 'set', 'lo', 'up'],
                    ['ip', 'addr', 'add', KIP[s] + '/24', 'dev', names[s]],
                    ['ip', 'link', 'set', names[s], 'up']):
            rc, out = roots[s].host_net(cmd)
            if rc != 0:
                raise RuntimeError('%s: %s' % (' '.join(cmd), out))
    return names


def body(a):
    debs = pkgenv.deb_paths(pkgenv.debs(a.src, a.build))
    tar = pkgenv.clean_root(a.build)
    pkgenv.sweep(a.build)
    first = install(a.build, debs, tar)
    if not first:
        return None
    roots = {'a': first}
    ds = {}
    try:
        roots['b'] = first.clone(a.build)
        for s in SIDES:
            roots[s].start(net=True)
        names = link(roots)
        for s in SIDES:
            ds[s] = daemon(roots[s], ['--port', 'net_af_packet0,iface=' + names[s], '--ip',
                                      UIP[s], '--mac', MAC[s]], '/tmp/uroce-0/uroce0.sock')
            if not check(ds[s] is not None, '[%s] uroced on af_packet over its veth end' % s):
                return None
        # the server in a, the client in b
        env = {}
        srv_root, cli_root = roots['a'], roots['b']
        ok = pingpong_across(srv_root, cli_root, env)
        check(ok, 'ibv_rc_pingpong -c across the veth, installed uroced and shim on both ends')
        check(rping_across(srv_root, cli_root), 'rping -V across the veth (RDMA CM)')
        for s in SIDES:
            rc, out = roots[s].run(['uroce-ctl', 'counters', '--port'])
            m = re.search(r'^\s*rx_roce\s+(\d+)', out, re.M)
            check(rc == 0 and m and int(m.group(1)) > 0,
                  '[%s] RoCE frames came through the af_packet port (%s)' %
                  (s, m.group(1) if m else '?'))
    finally:
        for s, d in ds.items():
            if d:
                stop_daemon(d, '[%s] uroced stops with 0, no fault in its log' % s)
        for r in roots.values():
            r.remove()
    return None


class _Across:
    """run/popen split over two roots: the server's side and the client's."""

    def __init__(self, srv, cli):
        self.srv, self.cli = srv, cli

    def popen(self, cmd, env=None):
        return self.srv.popen(cmd, env)

    def run(self, cmd, env=None, **kw):
        return self.cli.run(cmd, env, **kw)


def pingpong_across(srv, cli, env):
    return pingpong(_Across(srv, cli), env, KIP['a'])


def rping_across(srv, cli):
    """rping -V, the client retried only while the server does not listen
    yet (the CM's REJ 8)."""
    base = ['-v', '-V', '-C', '20', '-S', '4096', '-a', UIP['a']]
    env = {'LD_PRELOAD': 'liburoce.so'}
    s = srv.popen(['rping', '-s'] + base, env)
    try:
        def client():
            rc, out = cli.run(['rping', '-c'] + base, env, timeout=120)
            return rc == 0, out
        ok, out = h.retry(client, [pkgenv.RPING_NOT_LISTENING], limit=h.LISTEN_RETRIES,
                          what='rping client', alive=s.alive, pause=0.5)
        print(out[-1500:])
        src = s.wait(60)
        sout = s.output()
        print('--- rping server ---\n' + sout[-1500:])
        got_c = len(re.findall(r'^ping data: rdma-ping-\d+: ', out, re.M))
        got_s = len(re.findall(r'^server ping data: rdma-ping-\d+: ', sout, re.M))
        return ok and src == 0 and got_c == 20 and got_s == 20
    finally:
        s.stop()
        s.remove_log()


if __name__ == '__main__':
    raise SystemExit(pkgenv.main(body))
