#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The link of a port's Ethernet device followed by polling, no VM
(emu/daemon/port_nic.c; tests/nic does the same on emulated PCI NICs).

  nic_link_test.py --uroced U --ctl C [--shim S]

uroced on DPDK's net_tap PMD (a device with a link of its own: the tap's
IFF_UP/IFF_RUNNING, which the PMD reads on each link_update) in a network
namespace of its own. The tap is set down and up again from outside, as a
cable pulled and put back:
  down  the port goes DOWN (uroce-ctl devices), nic.link_down counts 1,
        a context gets IBV_EVENT_PORT_ERR (ibv_asyncwatch, with --shim)
  up    the port is ACTIVE again, nic.link_up counts 1, IBV_EVENT_PORT_ACTIVE
Twice, so that a second change is not lost after the first. Each wait is
bounded (60 s, a bound against a hang, never a verdict) and ends at once
if the daemon exits. Needs root (the namespace); exit 77 without it.
Exit 0 pass, 1 fail."""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness as h  # noqa: E402
from harness import check  # noqa: E402

TAP = 'ulk0'


def ctl(a, env, *args):
    r = subprocess.run([a.ctl] + list(args), env=env, capture_output=True, text=True, timeout=30)
    return r.stdout + r.stderr


def counter(a, env, name):
    for ln in ctl(a, env, 'counters', '--port').splitlines():
        f = ln.split()
        if len(f) == 2 and f[0] == name and f[1].isdigit():
            return int(f[1])
    return -1


def state(a, env):
    for w in ctl(a, env, 'devices').split('\n', 1)[0].split('  '):
        if w.startswith('state '):
            return w[6:]
    return '?'


def contexts(a, env):
    f = ctl(a, env, 'devices').split()
    return int(f[f.index('contexts') + 1]) if 'contexts' in f else -1


def flap(a, rig, ns, watch, n):
    env = rig.env
    for up, st, cnt, ev in ((False, 'DOWN', 'nic.link_down', 'IBV_EVENT_PORT_ERR'),
                            (True, 'ACTIVE', 'nic.link_up', 'IBV_EVENT_PORT_ACTIVE')):
        subprocess.run(['ip', '-n', ns, 'link', 'set', TAP, 'up' if up else 'down'], check=True)
        got = h.wait_until(lambda: state(a, env) == st, rig.alive, 60, poll=0.02)
        check(got, 'link %s (%d): the port is %s (%s)' % ('up' if up else 'down', n, st,
                                                          state(a, env)))
        check(counter(a, env, cnt) == n, '%s counted %d (%d)' % (cnt, n, counter(a, env, cnt)))
        if watch:
            seen = h.wait_until(lambda: watch.text().count(ev) >= n, watch.alive, 60)
            check(seen, '%s delivered to a context (%d of %d)' % (ev, watch.text().count(ev), n))


def test():
    ap = argparse.ArgumentParser()
    ap.add_argument('--uroced', required=True)
    ap.add_argument('--ctl', required=True)
    ap.add_argument('--shim')
    a = ap.parse_args()
    if os.geteuid() != 0:
        return h.skip('needs root (a network namespace)')
    if not h.need('ip'):
        return h.skip('ip (iproute2) is not installed')
    ns = 'uroce-niclink-%d' % os.getpid()
    subprocess.run(['ip', 'netns', 'add', ns], check=True)
    rig = h.Rig(a.uroced, 'uroce-niclink-')
    watch = None
    try:
        rig.start(['--port', 'net_tap0,iface=%s' % TAP, '--ip', '10.93.0.1'],
                  cmd=['ip', 'netns', 'exec', ns])
        env = rig.env
        line = [ln for ln in rig.tail().splitlines() if 'net_tap' in ln and 'link' in ln]
        check(line and 'link up' in line[0] and 'polled' in line[0],
              'the tap\'s link is up and polled: %s' % (line[0] if line else rig.tail(400)))
        check(state(a, env) == 'ACTIVE', 'the port starts ACTIVE')
        if not a.shim:
            print('async events: not in this build (stock programs need the shim preloaded)')
        elif not h.need('ibv_asyncwatch'):
            h.part_skipped('async events: ibv_asyncwatch is not installed')
        else:
            # a terminal: it prints each event at once
            k = contexts(a, env)
            watch = h.Bg(['ibv_asyncwatch', '-d', 'uroce0'], rig.penv(a.shim), tty=True,
                         name='asyncwatch')
            # it reports nothing until an event: its context is open once
            # the daemon counts one more (uroce-ctl's own is one)
            check(h.wait_until(lambda: contexts(a, env) > k, watch.alive, 60),
                  'ibv_asyncwatch has its context open')
        for n in (1, 2):
            flap(a, rig, ns, watch, n)
    finally:
        if watch:
            out = watch.kill()
            print('--- ibv_asyncwatch ---\n' + out[-1500:])
        why = rig.close(show=0)
        check(not why, 'uroced ended cleanly: %s' % (why or 'exit 0'))
        if why:
            sys.stdout.write(rig.text[-3000:])
        rig.remove()
        subprocess.run(['ip', 'netns', 'del', ns])
    return h.verdict()


if __name__ == '__main__':
    sys.exit(h.main(test))
