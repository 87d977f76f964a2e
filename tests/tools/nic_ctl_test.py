#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The port's Ethernet device through uroce-ctl, no VM (docs/running.md
"PCI NICs"; tests/nic runs the same on emulated NICs and their PMDs).

  nic_ctl_test.py --uroced U --ctl C --traffic T [--shim S]

A default uroced (looped-back ring port, MTU 9000, private run directory):
  devices    the nic line: net_ring, one queue pair, no link of its own;
             JSON's nic object
  counters   nic.* (uroce's counters of the device) and the ring PMD's
             xstats, xstat.rx_good_packets growing with ctl_traffic (an
             RC pair, every byte checked)
  mtu        refused, nothing changed (exit 1): 100 (below 576), 9216
             (more than the mbufs sized for --mtu 9000 hold), 1500 while
             ctl_traffic's QPs are connected at path MTU 4096; applied once
             they are gone (active MTU 1024 in devices, ibv_query_port
             through the traffic's QPs: their path MTU 1024), and back to
             9000
With --shim (the plain build: stock programs preloaded), two devices of one
daemon wired back to back (link:NAME):
  vlan       both on VLAN 100 priority 3: ibv_rc_pingpong -c across, the
             tags inserted and stripped in software (nic.vlan_tx_sw,
             nic.vlan_rx_sw on both), nothing dropped for its VLAN;
             on VLANs 100 and 200: every frame of the other dropped and
             counted (drop.vlan), the pingpong never connects
Every daemon must exit 0 without a sanitizer report. Exit 0 pass, 1 fail."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness as h  # noqa: E402
from harness import check  # noqa: E402


def ctl(a, env, *args):
    r = subprocess.run([a.ctl] + list(args), env=env, capture_output=True, text=True, timeout=30)
    return r.returncode, r.stdout + r.stderr


def counters(a, env, dev='uroce0'):
    """name -> value of the port section (port, nic.*, xstat.*, drop.*)"""
    rc, out = ctl(a, env, '-d', dev, 'counters', '--port')
    vals = {}
    for ln in out.splitlines():
        f = ln.split()
        if len(f) == 2 and f[1].isdigit():
            vals[f[0]] = int(f[1])
    return vals


class Daemon:
    """one uroced in a private run directory (harness.Rig: judged by its
    exit status and log at the end)"""
    def __init__(self, a, args, devs=('uroce0',)):
        self.rig = h.Rig(a.uroced, 'uroce-nicctl-')
        self.env = self.rig.env
        try:
            self.rig.start(args, devs=devs)
            self.ok = True
        except h.RigError as e:
            print(e)
            self.ok = False

    def close(self):
        why = self.rig.close(show=0)
        check(not why, 'uroced ended cleanly: %s' % (why or 'exit 0'))
        if why:
            sys.stdout.write(self.rig.text[-3000:])
        self.rig.remove()


def traffic(a, env):
    p = subprocess.Popen([a.traffic], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    line = p.stdout.readline()
    return p, line.startswith('ready')


def traffic_end(p):
    p.stdin.close()
    out = p.stdout.read()
    p.wait(60)
    return p.returncode == 0 and 'done' in out


def loopback(a):
    d = Daemon(a, [])
    if not check(d.ok, 'default uroced serves'):
        d.close()
        return
    env = d.env
    rc, out = ctl(a, env, 'devices')
    check(rc == 0 and 'nic net_ring' in out and 'link none (ring)' in out and
          'queues 1/1 of 1/1' in out, 'devices: the ring port as the nic line')
    rc, out = ctl(a, env, '--json', 'devices')
    nic = json.loads(out)['devices'][0]['nic'] if rc == 0 else {}
    check(nic.get('driver') == 'net_ring' and nic.get('rx_queues') == 1 and
          nic.get('link_of_its_own') is False and nic.get('vlan', 0) is None,
          'devices --json: nic object %s' % {k: nic.get(k) for k in ('driver', 'rx_queues', 'vlan')})
    before = counters(a, env)
    check('nic.link_down' in before and 'xstat.rx_good_packets' in before,
          'counters: nic.* and the PMD\'s xstats shown')
    p, ready = traffic(a, env)
    check(ready, 'ctl_traffic connected')
    end = time.monotonic() + 30
    while counters(a, env).get('xstat.rx_good_packets', 0) <= before.get('xstat.rx_good_packets', 0) + 100 \
            and time.monotonic() < end and p.poll() is None:
        time.sleep(0.05)
    check(counters(a, env).get('xstat.rx_good_packets', 0) > before.get('xstat.rx_good_packets', 0) + 100,
          'xstat.rx_good_packets grows with the traffic')
    # ctl_traffic's QPs are connected at path MTU 1024 (vt.c): an active
    # MTU of 512 (Ethernet 600) would strand them
    for mtu, why in (('100', 'outside 576..9216'), ('9216', 'larger than the port\'s buffers'),
                     ('600', 'a connected QP\'s path MTU')):
        rc, out = ctl(a, env, 'mtu', mtu)
        check(rc == 1 and why in out, 'mtu %s refused: %s' % (mtu, out.strip()))
    rc, out = ctl(a, env, 'devices')
    check('mtu 9000 (active 4096' in out, 'refusals changed nothing (mtu 9000, active 4096)')
    check(traffic_end(p), 'ctl_traffic: every byte checked while refused')
    rc, out = ctl(a, env, 'mtu', '1500')
    check(rc == 0 and 'active mtu 1024' in out, 'mtu 1500 applied without QPs: %s' % out.strip())
    rc, out = ctl(a, env, 'devices')
    check('mtu 1500 (active 1024' in out, 'devices: mtu 1500, active 1024')
    p, ready = traffic(a, env)
    check(ready and traffic_end(p), 'ctl_traffic at MTU 1500: every byte checked')
    rc, out = ctl(a, env, 'mtu', '9000')
    check(rc == 0 and 'active mtu 4096' in out, 'back to 9000: %s' % out.strip())
    d.close()


def pingpong(a, env, srv_dev, cli_dev, limit):
    """ibv_rc_pingpong -c between two devices, the client once the server
    listens on its TCP port"""
    port = h.free_tcp_port()
    base = ['ibv_rc_pingpong', '-g', '1', '-c', '-s', '4096', '-n', '50', '-p', str(port)]
    e = dict(env, LD_PRELOAD=a.shim)
    try:
        ok, out, sout = h.pair(base + ['-d', srv_dev], base + ['-d', cli_dev, '127.0.0.1'], e,
                               ready=port, timeout=limit)
    except subprocess.TimeoutExpired:
        return False   # connected over TCP, but the QPs never talk
    return ok


def vlan(a):
    for v0, v1, same in (('100:3', '100:3', True), ('100', '200', False)):
        d = Daemon(a, ['--dev', 'uroce0,port=link:nv,ip=10.91.0.1,vlan=' + v0,
                       '--dev', 'uroce1,port=link:nv,ip=10.91.0.2,vlan=' + v1],
                   devs=('uroce0', 'uroce1'))
        if not check(d.ok, 'link pair on VLANs %s / %s serves' % (v0, v1)):
            d.close()
            continue
        ok = pingpong(a, d.env, 'uroce0', 'uroce1', 30 if same else 8)
        c0, c1 = counters(a, d.env, 'uroce0'), counters(a, d.env, 'uroce1')
        if same:
            check(ok, 'VLAN 100 both ends: ibv_rc_pingpong -c across')
            check(all(c.get('nic.vlan_tx_sw', 0) > 0 and c.get('nic.vlan_rx_sw', 0) > 0
                      for c in (c0, c1)), 'tags inserted and stripped in software on both')
            check(c0.get('drop.vlan', 1) == 0 and c1.get('drop.vlan', 1) == 0,
                  'nothing dropped for its VLAN')
        else:
            check(not ok, 'VLANs 100 / 200: the pingpong cannot connect')
            check(c0.get('drop.vlan', 0) > 0 and c1.get('drop.vlan', 0) > 0,
                  'the other VLAN\'s frames dropped on both (drop.vlan %d / %d)' % (
                      c0.get('drop.vlan', 0), c1.get('drop.vlan', 0)))
        d.close()


def test():
    ap = argparse.ArgumentParser()
    ap.add_argument('--uroced', required=True)
    ap.add_argument('--ctl', required=True)
    ap.add_argument('--traffic', required=True)
    ap.add_argument('--shim')
    a = ap.parse_args()
    loopback(a)
    if not a.shim:
        # the sanitized build: stock programs cannot preload its shim
        print('vlan: not in this build (stock programs need the shim preloaded)')
    elif shutil.which('ibv_rc_pingpong'):
        vlan(a)
    else:
        h.part_skipped('vlan: ibv_rc_pingpong is not installed')
    return h.verdict()


if __name__ == '__main__':
    sys.exit(h.main(test))
