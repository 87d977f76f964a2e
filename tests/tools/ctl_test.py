#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""uroce-ctl against a running daemon (docs/running.md, uroce-ctl(8)).

  ctl_test.py --uroced U --ctl C --stat S --pcap P --traffic T

Errors first (no daemon, untrusted run directory, bad arguments: exit 2
with one line), then a default uroced (private run directory) with live
traffic from ctl_traffic (an RC pair, every byte checked) while every
command runs, JSON parsed and its fields asserted:
  devices    uroce0, ACTIVE, loopback, 127.0.0.1 as a RoCE v2 GID
  qps        both QPs RTS and peers of each other, PSNs advance
  mrs        the traffic's registration listed, pinned, its pinned pieces
             growing (docs/verbs.md "Registered memory")
  counters   port and per-QP counters grow; uroce-stat still prints them
  fault      set drop=1 for a QPN nobody uses, then for an opcode nobody
             sends: nothing dropped while traffic flows; set drop for a live QP (seeded): drops counted, traffic
             still verified; clear: no more drops
  cc         show: mlx5's defaults; set NAME VALUE echoed (JSON and
             human); a bad value or name refused (exit 2) and nothing of
             that request applied; with CE marked on every received frame
             (fault ce=1): rate cuts grow; `cc set rp off` stops them at
             once while CNPs keep arriving, traffic goes on (paced QPs
             released, none stranded); `cc set np off` stops the CNPs;
             `cc set on` brings both back
  capture    start FILE / stop: frames counted, `uroce-pcap check` passes,
             both QPNs in the file, the file 0600
  link       (plain build) capture started at run time on one end of a
             link: pair: every frame valid, the other end's too; faults set
             there at run time: the traffic goes on
  non-owner  uid 65534 (setpriv): exit 2 against the default daemon; with a
             second daemon (--allow-uid 65534, its own traffic): fault
             set/clear, cc set and capture start/stop refused (exit 1), no QP of
             root's seen, devices and fault show still work; limits: its
             own uid's (rdma_cm connections a quarter of the CM table),
             another uid's refused (root may)
Every wait is bounded (a hang, not a verdict); the daemon and the traffic
are stopped on every path and the daemon must exit 0 without a sanitizer
report. Exit 0 pass, 1 fail."""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from harness import check, part_skipped, verdict  # noqa: E402  (tests/lib/harness.py)

import harness as vrun  # noqa: E402  (tests/lib/harness.py: wait_socket, stop, daemon_faults)

NOBODY = 65534


def ctl(a, env, *args, uid=None, timeout=30):
    cmd = [a.ctl] + list(args)
    if uid is not None:
        cmd = ['setpriv', '--reuid=%d' % uid, '--regid=%d' % uid, '--clear-groups'] + cmd
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    print('+ %s -> %d' % (' '.join(args), r.returncode), flush=True)
    return r


def ctl_json(a, env, *args, uid=None):
    r = ctl(a, env, '--json', *args, uid=uid)
    if r.returncode:
        raise RuntimeError('uroce-ctl %s: %s' % (' '.join(args), r.stderr.strip()))
    return json.loads(r.stdout)


def until(fn, what, limit=30.0):
    """Poll fn until it returns something true; bounded (a hang guard)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    check(False, what + ' (within %.0f s)' % limit)
    return None


def one_line_error(r, code, text, what):
    lines = r.stderr.strip().splitlines()
    ok = r.returncode == code and len(lines) == 1 and text in lines[0]
    if not ok:
        print('   stderr: %r' % r.stderr)
    return check(ok, what)


def errors_without_daemon(a, tmp):
    env = dict(os.environ)
    missing = os.path.join(tmp, 'none')
    r = ctl(a, env, '-r', missing, 'devices')
    one_line_error(r, 2, 'no uroced running', 'no daemon: devices exits 2')
    os.mkdir(missing, 0o700)
    r = ctl(a, env, '-r', missing, 'qps')
    one_line_error(r, 2, 'no uroced serves uroce0', 'no daemon: qps exits 2')
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    stale.bind(os.path.join(missing, 'uroce0.sock'))
    stale.close()
    r = ctl(a, env, '-r', missing, 'devices')
    one_line_error(r, 2, 'no uroced running', 'only a stale socket: devices exits 2')
    os.unlink(os.path.join(missing, 'uroce0.sock'))
    bad = os.path.join(tmp, 'open')
    os.mkdir(bad)
    os.chmod(bad, 0o777)
    r = ctl(a, env, '-r', bad, 'counters')
    one_line_error(r, 2, 'not trusted', 'run directory writable by others: exit 2')
    r = ctl(a, dict(env, UROCE_RUN_DIR=bad), 'fault', 'show')
    one_line_error(r, 2, 'not trusted', 'UROCE_RUN_DIR is the one checked')
    for args in ([], ['bogus'], ['fault'], ['fault', 'set'], ['capture'],
                 ['capture', 'start'], ['counters', '--nope'], ['cc'], ['cc', 'set'],
                 ['cc', 'show', 'x'], ['-d', 'a/b', 'qps'],
                 ['devices', 'extra']):
        r = ctl(a, env, '-r', missing, *args)
        check(r.returncode == 2 and r.stderr.startswith('uroce-ctl: ') or
              (not args and r.returncode == 2), 'bad arguments %r: exit 2' % (args,))
    r = subprocess.run([a.stat, '-r', missing], capture_output=True, text=True, timeout=30)
    check(r.returncode == 1 and r.stderr.startswith('uroce-stat: '),
          'uroce-stat without a daemon: exit 1 as before')


def qp_by_num(js, qpn):
    for q in js['qps']:
        if q['qpn'] == qpn:
            return q
    return None


def live_checks(a, env, qa, qb):
    # a socket nobody listens on (a dead daemon's): skipped, as the shim does
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    stale.bind(os.path.join(env['UROCE_RUN_DIR'], 'stale.sock'))
    stale.close()
    dev = ctl_json(a, env, 'devices')['devices']
    check(len(dev) == 1 and dev[0]['name'] == 'uroce0', 'devices: uroce0 only (stale skipped)')
    r = ctl(a, env, '-d', 'stale', 'qps')
    one_line_error(r, 2, 'no uroced serves stale', 'qps on a stale socket: exit 2')
    d = dev[0]
    check(d['state'] == 'ACTIVE' and d['loopback'] and d['port'] == 'loopback',
          'devices: ACTIVE loopback port')
    check(d['active_mtu'] in (1024, 2048, 4096) and d['mtu'] >= 1500, 'devices: MTUs')
    check(any(g['address'] == '127.0.0.1' and g['type'] == 'RoCE v2' for g in d['gids']),
          'devices: 127.0.0.1 is a RoCE v2 GID')
    check(d['contexts'] >= 2 and d['qps'] >= 2, 'devices: counts our context and QPs')
    r = ctl(a, env, 'devices')
    check(r.returncode == 0 and 'uroce0' in r.stdout and 'RoCE v2' in r.stdout and
          '127.0.0.1' in r.stdout, 'devices: human table')

    js = ctl_json(a, env, 'qps')
    A, B = qp_by_num(js, qa), qp_by_num(js, qb)
    check(A is not None and B is not None, 'qps: both QPs listed')
    if A is None or B is None:
        return
    check(A['state'] == 'RTS' and B['state'] == 'RTS' and A['type'] == 'RC',
          'qps: RC, RTS')
    check(A['peer_qpn'] == qb and B['peer_qpn'] == qa and A['peer'] == '127.0.0.1',
          'qps: each the peer of the other at 127.0.0.1')
    check(A['retry_cnt'] == 7 and A['counters'] is not None, 'qps: retries and counters')
    psn_advance(a, env, qa, 8)
    r = ctl(a, env, 'qps')
    check(r.returncode == 0 and ('0x%x' % qa) in r.stdout and 'RTS' in r.stdout,
          'qps: human table')

    def traffic_mr():
        for m in ctl_json(a, env, 'mrs')['mrs']:
            if m['length'] == 65536 and m['route'] == 'pinned':
                return m
        return None
    m0 = traffic_mr()
    check(m0 is not None and m0['why'] is None and m0['access'] & 15 == 15,
          'mrs: the traffic\'s registration, pinned')
    if m0 is not None:
        until(lambda: (traffic_mr() or m0)['pinned'] > m0['pinned'],
              'mrs: its pinned pieces grow with traffic')
    r = ctl(a, env, 'mrs')
    check(r.returncode == 0 and 'pinned' in r.stdout and 'ROUTE' in r.stdout, 'mrs: human table')

    c0 = ctl_json(a, env, 'counters')
    check(c0['device'] == 'uroce0' and c0['port']['tx_pkts'] > 0 and
          'drops' in c0['port'] and 'xport_drops' in c0['port'], 'counters: port')
    check(qp_by_num(c0, qa) is not None and qp_by_num(c0, qb) is not None,
          'counters: both QPs')
    until(lambda: ctl_json(a, env, 'counters')['port']['tx_pkts'] > c0['port']['tx_pkts'] and
          qp_by_num(ctl_json(a, env, 'counters'), qb)['counters']['rx_pkts'] >
          qp_by_num(c0, qb)['counters']['rx_pkts'], 'counters: grow with traffic')
    p = ctl_json(a, env, 'counters', '--port')
    check('qps' not in p and p['port']['rx_pkts'] > 0, 'counters --port: port only')
    r = subprocess.run([a.stat, '-d', 'uroce0'], env=env, capture_output=True, text=True,
                       timeout=30)
    check(r.returncode == 0 and r.stdout.startswith('port uroce0\n') and
          '  tx_pkts ' in r.stdout and ('qp 0x%x ' % qa) in r.stdout,
          'uroce-stat: the old format')


def sq_psn(a, env, qpn, dev='uroce0'):
    q = qp_by_num(ctl_json(a, env, '-d', dev, 'qps'), qpn)
    return q['sq_psn'] if q else None


def psn_advance(a, env, qpn, n, dev='uroce0'):
    start = sq_psn(a, env, qpn, dev)

    def moved():
        now = sq_psn(a, env, qpn, dev)
        return start is not None and now is not None and (now - start) % (1 << 24) >= n
    return until(moved, 'traffic goes on (QP 0x%x sends %d packets)' % (qpn, n))


def fault_checks(a, env, qa, qb, traffic):
    f = ctl_json(a, env, 'fault', 'show')
    check(not f['active'] and f['qp'] is None, 'fault show: off by default')
    # a QPN nobody uses (the table starts well below): nothing may drop
    f = ctl_json(a, env, 'fault', 'set', 'drop=1', 'qp=0xfffffe')
    check(f['active'] and f['drop'] == 1 and f['qp'] == 0xfffffe, 'fault set: echoed')
    d0 = f['counters']['drop']
    psn_advance(a, env, qa, 16)
    check(ctl_json(a, env, 'fault', 'show')['counters']['drop'] == d0,
          'fault limited to an unused QPN: no frame dropped')
    # UD SEND Only (0x64): never on this RC traffic
    f = ctl_json(a, env, 'fault', 'set', 'drop=1,opcode=0x64')
    check(f['opcode'] == 0x64 and f['qp'] is None, 'fault set opcode: echoed')
    psn_advance(a, env, qb, 16)
    check(ctl_json(a, env, 'fault', 'show')['counters']['drop'] == d0,
          'fault limited to an opcode not sent: no frame dropped')
    seed = 0x2611291  # fixed: a verdict must repeat
    print('fault seed', seed)
    f = ctl_json(a, env, 'fault', 'set', 'drop=0.1,qp=%d' % qb, 'seed=%d' % seed)
    check(f['seed'] == seed and f['qp'] == qb and abs(f['drop'] - 0.1) < 1e-12,
          'fault set: seed, QP, rate')
    d = ctl(a, env, '--json', 'devices')
    check('"fault":true' in d.stdout, 'devices: fault on')
    until(lambda: ctl_json(a, env, 'fault', 'show')['counters']['drop'] > d0,
          'drops counted')
    until(lambda: ctl_json(a, env, 'counters', '--port')['port']['drops']['fault'] > d0,
          'counters: drop.fault')
    psn_advance(a, env, qb, 16)
    check(traffic.poll() is None, 'traffic survives the drops (bytes checked)')
    r = ctl(a, env, 'fault', 'set', 'drop=2')
    one_line_error(r, 2, 'bad fault spec', 'fault set drop=2: exit 2')
    r = ctl(a, env, 'fault', 'set', 'bogus=1')
    one_line_error(r, 2, 'bad fault spec', 'fault set bogus=1: exit 2')
    f = ctl_json(a, env, 'fault', 'clear')
    check(not f['active'], 'fault clear: off')
    n = f['counters']['drop']
    psn_advance(a, env, qb, 16)
    psn_advance(a, env, qa, 16)
    check(ctl_json(a, env, 'fault', 'show')['counters']['drop'] == n,
          'fault clear: no more drops')


def cc_dev(a, env):
    return ctl_json(a, env, 'cc', 'show')['dcqcn']


def cc_grows(a, env, key, what):
    """key of the device's DCQCN totals grows while traffic runs"""
    n0 = cc_dev(a, env)[key]
    return until(lambda: cc_dev(a, env)[key] > n0, what)


def cc_still(a, env, qa, key, what):
    """key stays where it is while QP qa sends 32 more packets"""
    n0 = cc_dev(a, env)[key]
    psn_advance(a, env, qa, 32)
    n1 = cc_dev(a, env)[key]
    check(n1 == n0, '%s (%s %d -> %d)' % (what, key, n0, n1))


def cc_checks(a, env, qa, qb, traffic):
    d = cc_dev(a, env)
    check(d['rp'] == 1 and d['np'] == 1 and d['rpg_ai_rate'] == 5 and d['rpg_gd'] == 11 and
          d['line_rate_mbps'] == 25000, 'cc show: mlx5 defaults')
    d = ctl_json(a, env, 'cc', 'set', 'rpg_ai_rate', '10')
    check(d['device'] == 'uroce0' and d['dcqcn']['rpg_ai_rate'] == 10, 'cc set NAME VALUE: echoed')
    r = ctl(a, env, 'cc', 'set', 'rpg_max_rate=10000', 'rpg_hai_rate=100')
    check(r.returncode == 0 and 'dcqcn.line_rate_mbps 10000' in r.stdout and
          'dcqcn.rpg_hai_rate   100' in r.stdout, 'cc set NAME=VALUE...: human output')
    for bad in (['rpg_ai_rate', '0'], ['rpg_ai_rate=20', 'rpg_gd=99'], ['bogus', '1'],
                ['rp', 'maybe'], ['rpg_min_rate', '20000']):
        r = ctl(a, env, 'cc', 'set', *bad)
        one_line_error(r, 2, 'bad cc setting', 'cc set %s: exit 2' % ' '.join(bad))
    d = cc_dev(a, env)
    check(d['rpg_ai_rate'] == 10 and d['rpg_gd'] == 11 and d['rpg_min_rate'] == 1,
          'a refused cc set changes nothing (all or nothing)')
    # every received frame CE-marked: CNPs both ways, the reaction points cut
    ctl_json(a, env, 'fault', 'set', 'ce=1')
    cc_grows(a, env, 'rate_cuts', 'ce=1: rate cuts')
    ctl_json(a, env, 'cc', 'set', 'rp', 'off')
    cc_still(a, env, qa, 'rate_cuts', 'cc set rp off: no more cuts')
    cc_grows(a, env, 'cnp_rcvd', 'rp off: CNPs still arrive')
    psn_advance(a, env, qb, 32)
    ctl_json(a, env, 'cc', 'set', 'np=off')
    cc_still(a, env, qa, 'cnp_sent', 'cc set np off: no more CNPs')
    cc_grows(a, env, 'ce_rcvd', 'np off: CE still counted')
    d = ctl_json(a, env, 'cc', 'set', 'on')['dcqcn']
    check(d['rp'] == 1 and d['np'] == 1 and d['ect'] == 1, 'cc set on: all three on')
    cc_grows(a, env, 'rate_cuts', 'cc set on: cuts again')
    ctl_json(a, env, 'fault', 'clear')
    check(traffic.poll() is None, 'traffic goes on through every change (bytes checked)')


def capture_checks(a, env, qa, qb, tmp):
    pcap = os.path.join(tmp, 'run.pcap')
    c = ctl_json(a, env, 'capture', 'start', pcap)
    check(c['capture'] and c['file'] == pcap, 'capture start')
    r = ctl(a, env, 'capture', 'start', pcap + '2')
    one_line_error(r, 1, 'already running', 'a second capture: exit 1')
    check(ctl_json(a, env, 'devices')['devices'][0]['capture'], 'devices: capture on')
    psn_advance(a, env, qa, 16)
    psn_advance(a, env, qb, 16)
    c = ctl_json(a, env, 'capture', 'stop')
    check(not c['capture'] and c['frames'] >= 32 and c['error'] is None,
          'capture stop: %s frames' % c['frames'])
    r = ctl(a, env, 'capture', 'stop')
    one_line_error(r, 1, 'none is running', 'capture stop again: exit 1')
    r = subprocess.run([a.pcap, 'check', pcap], capture_output=True, text=True, timeout=120)
    print(r.stdout.strip())
    check(r.returncode == 0, 'uroce-pcap check passes the capture')
    check(('%s: %d packets, %d RoCE valid' % (pcap, c['frames'], c['frames'])) in r.stdout,
          'the file holds the frames counted, all RoCE')
    r = subprocess.run([a.pcap, 'decode', pcap], capture_output=True, text=True, timeout=120)
    lines = r.stdout.splitlines()
    check(any('qp=0x%06x' % qa in ln for ln in lines) and
          any('qp=0x%06x' % qb in ln for ln in lines), 'both QPs in the capture')
    check(all('icrc=ok' in ln for ln in lines if 'non-RoCE' not in ln),
          'every frame with a valid ICRC')
    check(os.stat(pcap).st_mode & 0o777 == 0o600, 'the capture is 0600')


def non_owner_checks(a, env, qa, tmp):
    """Against a daemon whose access rule admits uid 65534."""
    for args, text in ((['fault', 'set', 'drop=0.5'], 'only root or the daemon'),
                       (['fault', 'clear'], 'only root or the daemon'),
                       (['capture', 'start', '/dev/null'], 'only root or the daemon'),
                       (['capture', 'stop'], 'only root or the daemon'),
                       (['cc', 'set', 'rp', 'off'], 'only root or the daemon')):
        r = ctl(a, env, *args, uid=NOBODY)
        one_line_error(r, 1, text, 'uid %d: %s refused' % (NOBODY, ' '.join(args)))
    check(not ctl_json(a, env, 'fault', 'show')['active'], 'faults unchanged by uid %d' % NOBODY)
    check(ctl_json(a, env, 'cc', 'show', uid=NOBODY)['dcqcn']['rp'] == 1,
          'uid %d: cc show allowed, rp unchanged' % NOBODY)
    check(ctl_json(a, env, 'mrs', uid=NOBODY)['mrs'] == [] and
          ctl_json(a, env, 'mrs')['mrs'] != [], 'uid %d: no registration of root\'s seen' % NOBODY)
    js = ctl_json(a, env, 'qps', uid=NOBODY)
    check(js['qps'] == [] and qp_by_num(ctl_json(a, env, 'qps'), qa) is not None,
          "uid %d sees none of root's QPs" % NOBODY)
    js = ctl_json(a, env, 'counters', uid=NOBODY)
    check(js['qps'] == [] and js['port']['tx_pkts'] > 0, 'uid %d: port counters only' % NOBODY)
    d = ctl_json(a, env, 'devices', uid=NOBODY)
    check(d['devices'][0]['name'] == 'uroce0', 'uid %d: devices' % NOBODY)
    check(not ctl_json(a, env, 'fault', 'show', uid=NOBODY)['active'],
          'uid %d: fault show allowed' % NOBODY)
    lim = ctl_json(a, env, 'limits', uid=NOBODY)
    names = {o['name']: o for o in lim['objects']}
    check(lim['uid'] == NOBODY and 'cm_conn' in names and 'qp' in names and
          names['cm_conn']['uid_max'] <= lim['cm_table']['size'] // 4,
          'uid %d: limits of its own uid, rdma_cm connections a quarter of the table' % NOBODY)
    r = ctl(a, env, 'limits', '0', uid=NOBODY)
    one_line_error(r, 1, 'only root or the daemon', "uid %d: another uid's limits refused" % NOBODY)
    check(ctl_json(a, env, 'limits', str(NOBODY))['uid'] == NOBODY, "root: another uid's limits")


def default_daemon(a, env, qa, qb, tmp, traffic):
    live_checks(a, env, qa, qb)
    fault_checks(a, env, qa, qb, traffic)
    cc_checks(a, env, qa, qb, traffic)
    capture_checks(a, env, qa, qb, tmp)
    if can_switch_uid():
        # a user's daemon: nobody else even reaches its run directory (0700)
        r = ctl(a, env, 'devices', uid=NOBODY)
        one_line_error(r, 2, 'no uroced running', 'uid %d, default daemon: exit 2' % NOBODY)


def can_switch_uid():
    if os.geteuid() != 0 or not shutil.which('setpriv'):
        part_skipped('checks as another uid: need root and setpriv')
        return False
    return True


def session(a, tmp, name, daemon_args, body):
    """A uroced in its own run directory and verified traffic through it
    while body(env, qa, qb, traffic) runs; both stopped on every path."""
    run_dir = os.path.join(tmp, name)
    env = dict(os.environ, UROCE_RUN_DIR=run_dir)
    env.pop('XDG_RUNTIME_DIR', None)
    daemon = traffic = None
    log = open(os.path.join(tmp, name + '.log'), 'w+')
    try:
        daemon = subprocess.Popen([a.uroced] + daemon_args, env=env, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
        if not check(vrun.wait_socket(os.path.join(run_dir, 'uroce0.sock'), daemon),
                     'uroced %s comes up' % ' '.join(daemon_args)):
            return
        traffic = subprocess.Popen([a.traffic], env=env, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True, start_new_session=True)
        ready = traffic.stdout.readline().split()
        if not check(len(ready) == 3 and ready[0] == 'ready', 'traffic connected'):
            return
        body(env, int(ready[1]), int(ready[2]), traffic)
        try:  # closes its stdin: the end of the traffic
            out, _ = traffic.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            out = 'timeout'
        check(traffic.returncode == 0 and out.startswith('done '),
              'traffic verified every byte (%s)' % out.strip())
    finally:
        if traffic and traffic.poll() is None:
            vrun.kill_group(traffic)
        if daemon:
            st = vrun.stop(daemon)
            log.seek(0)
            text = log.read()
            why = vrun.daemon_faults([st], text)
            if why:
                print(text[-3000:])
            for w in why:
                check(False, w)
        log.close()


def link_rts_qp(a, env, dev):
    qs = ctl_json(a, env, '-d', dev, 'qps')['qps']
    return next((q['qpn'] for q in qs if q['state'] == 'RTS'), None)


def link_capture(a, tmp):
    """A capture started at run time on uroce0 of a link: pair holds valid
    frames only, uroce1's too (uroce1, run by another engine thread, skipped
    ICRCs until then); fault injection set at run time on uroce0 (which then
    checks ICRCs) leaves the traffic flowing: uroce1 computes them from then
    on. Traffic: Debian's ibv_rc_pingpong between the two devices."""
    run_dir = os.path.join(tmp, 'link')
    env = dict(os.environ, UROCE_RUN_DIR=run_dir)
    env.pop('XDG_RUNTIME_DIR', None)
    penv = dict(env, LD_PRELOAD=os.path.abspath(a.shim))
    if a.preload_first:
        # an instrumented shim in an uninstrumented program: the sanitizer
        # runtime first, the program's own leaks are not ours
        penv['LD_PRELOAD'] = a.preload_first + ':' + penv['LD_PRELOAD']
        penv['ASAN_OPTIONS'] = 'detect_leaks=0:' + penv.get('ASAN_OPTIONS', '')
    port = vrun.free_tcp_port()
    print('link: pingpong TCP port', port)
    base = ['ibv_rc_pingpong', '-g', '1', '-n', '100000000', '-p', str(port)]
    log = open(os.path.join(tmp, 'link.log'), 'w+')
    daemon = subprocess.Popen([a.uroced, '--dev', 'uroce0,port=link:w,ip=10.0.0.1',
                               '--dev', 'uroce1,port=link:w,ip=10.0.0.2'], env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    procs = []
    try:
        if not check(vrun.wait_socket(os.path.join(run_dir, 'uroce1.sock'), daemon) and
                     vrun.wait_socket(os.path.join(run_dir, 'uroce0.sock'), daemon),
                     'link: uroced with two devices comes up'):
            return
        quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        procs.append(subprocess.Popen(base + ['-d', 'uroce0'], env=penv, **quiet))

        def connected():
            # the client gives up while the server is not listening yet
            if len(procs) < 2 or procs[-1].poll() is not None:
                procs.append(subprocess.Popen(base + ['-d', 'uroce1', '127.0.0.1'], env=penv,
                                              **quiet))
            return link_rts_qp(a, env, 'uroce1')
        qpn = until(connected, 'link: pingpong connected')
        if not qpn:
            return
        pcap = os.path.join(tmp, 'link.pcap')
        ctl_json(a, env, '-d', 'uroce0', 'capture', 'start', pcap)
        psn_advance(a, env, qpn, 32, 'uroce1')
        c = ctl_json(a, env, '-d', 'uroce0', 'capture', 'stop')
        r = subprocess.run([a.pcap, 'check', pcap], capture_output=True, text=True, timeout=120)
        print(r.stdout.strip())
        d = subprocess.run([a.pcap, 'decode', pcap], capture_output=True, text=True,
                           timeout=120).stdout.splitlines()
        bad = [ln for ln in d if 'icrc=ok' not in ln and 'non-RoCE' not in ln]
        print('\n'.join(bad[:3]))
        check(r.returncode == 0 and c['frames'] >= 32 and not bad and
              any(ln.split()[2].startswith('10.0.0.2:') for ln in d if len(ln.split()) > 2),
              'link: every frame of the capture, uroce1\'s too, has a valid ICRC')
        # faults on uroce0 check ICRCs: uroce1 must compute them from now on,
        # or every frame it sends is an ICRC drop and the traffic stops
        ctl_json(a, env, '-d', 'uroce0', 'fault', 'set', 'drop=0.01,seed=3')
        psn_advance(a, env, qpn, 32, 'uroce1')
        ctl_json(a, env, '-d', 'uroce0', 'fault', 'clear')
        psn_advance(a, env, qpn, 32, 'uroce1')
    finally:
        for p in procs:
            vrun.kill_group(p)
        st = vrun.stop(daemon)
        log.seek(0)
        text = log.read()
        log.close()
        for w in vrun.daemon_faults([st], text):
            check(False, 'link: ' + w)


def main():
    ap = argparse.ArgumentParser()
    for k in ('uroced', 'ctl', 'stat', 'pcap', 'traffic'):
        ap.add_argument('--' + k, required=True)
    ap.add_argument('--preload-first', default='',
                    help='the sanitizer runtime, preloaded before an instrumented --shim')
    ap.add_argument('--shim', help='liburoce.so for Debian\'s ibv_rc_pingpong (not in the '
                    'sanitized build: the binary is not instrumented)')
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    tmp = tempfile.mkdtemp(prefix='uroce-ctl-')
    os.chmod(tmp, 0o755)  # uid 65534 reaches the run directories inside
    try:
        errors_without_daemon(a, tmp)
        session(a, tmp, 'default', [],
                lambda env, qa, qb, t: default_daemon(a, env, qa, qb, tmp, t))
        if can_switch_uid():
            session(a, tmp, 'shared', ['--allow-uid', str(NOBODY)],
                    lambda env, qa, qb, t: non_owner_checks(a, env, qa, tmp))
        if a.shim:
            link_capture(a, tmp)
        else:
            part_skipped('link: capture: no --shim (sanitized build: an instrumented shim in ibv_rc_pingpong)')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return verdict()


if __name__ == '__main__':
    sys.exit(main())
