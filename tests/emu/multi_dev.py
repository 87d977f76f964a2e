#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""uroced device options (private UROCE_RUN_DIR, bounded waits, everything
stopped on the way out).

  multi_dev.py UROCED badopts
      bad options and unusable ports: non-zero exit, one 'uroced: ...' line
  multi_dev.py UROCED link SHIM STAT
      two devices in one daemon, wired back to back (link:), one worker
      each: ibv_rc_pingpong -c from uroce1 to uroce0 over ARP-resolved
      10.0.0.x addresses, counters of both read with uroce-stat, SIGTERM
      exits 0 and removes both sockets.
  multi_dev.py UROCED dcqcn SHIM STAT
      the same with CE marks from --fault ce=P: CNPs and rate cuts in
      uroce-stat; per-device --dcqcn / dcqcn=off settings.
Exit 0 pass, 77 skip, 1 fail."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness as h  # noqa: E402  (tests/lib/harness.py)


def badopts(uroced, run_dir):
    env = dict(os.environ, UROCE_RUN_DIR=run_dir)
    cases = [
        (['--dev', 'a', '--dev', 'a'], 2, 'given twice'),
        (['--dev', 'a,foo=1'], 2, "unknown device key 'foo'"),
        (['--dev', 'a,ip=1.2.3.4.5'], 2, 'bad ip'),
        (['--dev', 'a,mtu=100'], 2, 'bad mtu'),
        (['--dev', 'a/b'], 2, 'bad --dev'),
        (['--dev', 'u0,port=link:x,ip=10.0.0.1'], 2, 'exactly two devices'),
        (['--dev', 'u0,port=link:x,ip=10.0.0.1', '--dev', 'u1,port=link:x'], 2, 'needs --ip'),
        (['--port', 'net_af_packet0,iface=uroce-no-such-if'], 1, 'no usable port'),
        (['--port', '0000:7f:1f.7'], 1, 'no PCI device 0000:7f:1f.7'),  # pci_check.c, before EAL
        (['--cpu', '100000'], 2, 'bad cpu'),
        (['--dev', 'a,port=net_null0', '--dev', 'b,port=net_null0'], 2, 'used by two devices'),
        # access options (docs/security.md)
        (['--socket-mode', '0700'], 2, 'bad --socket-mode'),
        (['--socket-mode', '0460'], 2, 'bad --socket-mode'),
        (['--socket-mode', 'rw'], 2, 'bad --socket-mode'),
        (['--allow-uid', 'uroce-no-such-user'], 2, 'bad --allow-uid'),
        (['--allow-gid', 'uroce-no-such-group'], 2, 'bad --allow-gid'),
        (['--socket-group', '0', '--socket-group', '0'], 2, 'bad --socket-group'),
        # port parameters from the MTU (emu/daemon/port_param.c): what a port
        # type cannot carry is refused before EAL starts
        (['--port', 'net_af_xdp0,iface=lo', '--mtu', '9000'], 2, 'af_xdp holds a frame'),
        (['--port', 'net_af_xdp0,iface=lo', '--mtu', '3600', '--xdp-driver', 'dpdk'], 2,
         '--mtu at most 3'),
        # uroced's own AF_XDP socket (port_xsk.c): a 4096-byte UMEM frame
        # less XDP_PACKET_HEADROOM and the Ethernet header; the PMD's
        # arguments it does not take are refused, not ignored
        (['--port', 'net_af_xdp0,iface=lo', '--mtu', '3900'], 2, '--mtu at most 3822'),
        (['--port', 'net_af_xdp0,iface=lo,busy_budget=0'], 2,
         "'busy_budget' is not an argument of uroced's AF_XDP socket"),
        (['--port', 'net_af_xdp0,iface=lo,shared_umem=1'], 2, "'shared_umem' is not an argument"),
        (['--port', 'net_af_xdp0,start_queue=0'], 2, 'iface=IF missing'),
        (['--port', 'net_af_xdp0,iface=lo,start_queue=x'], 2, 'bad start_queue'),
        (['--port', 'net_af_xdp0,iface=uroce-no-such-if'], 2, "af_xdp: no interface"),
        (['--xdp-driver', 'kernel'], 2, "bad --xdp-driver 'kernel'"),
        (['--port', 'net_af_xdp0,iface=lo,queue_count=2'], 2, 'receives on one queue'),
        (['--port', 'net_af_xdp0,iface=lo,queue_count=0'], 2, 'bad queue_count'),
        (['--port', 'net_af_packet0,iface=lo,framesz=2048', '--mtu', '9000'], 2,
         'framesz=2048 cannot hold a frame of --mtu 9000'),
        (['--port', 'net_af_packet0,iface=lo,framesz=2056'], 2, 'multiple of 16'),
        (['--port', 'net_af_packet0,iface=lo,blocksz=6144'], 2, 'blocksz=6144 must be'),
        (['--port', 'net_af_packet0,iface=lo,framesz=4096,blocksz=8192,framecnt=3'], 2,
         'framecnt=3 must be a multiple'),
        (['--port', 'net_af_packet0,iface=lo,framecnt=x'], 2, 'bad framecnt'),
        (['--dev', 'a,port=net_af_packet0,iface=lo,framesz=0'], 2, 'bad framesz'),
        # --shared (emu/daemon/shared.c): af_xdp only, the interface's own
        # MAC, MTU and addresses (lo: MTU 65536, 127.0.0.1 and ::1)
        (['--shared'], 2, '--shared needs an af_xdp port'),
        (['--port', 'net_af_packet0,iface=lo', '--shared'], 2, 'needs an af_xdp port'),
        (['--port', 'net_af_xdp0,iface=uroce-no-such-if', '--shared'], 2,
         "--shared: no interface 'uroce-no-such-if'"),
        (['--port', 'net_af_xdp0,iface=lo', '--shared', '--mac', '02:00:00:00:00:09'], 2,
         "uses lo's own MAC: no --mac"),
        (['--port', 'net_af_xdp0,iface=lo', '--shared', '--mtu', '1500'], 2,
         "--mtu 1500 is not lo's MTU"),
        (['--port', 'net_af_xdp0,iface=lo', '--shared', '--ip', '10.9.9.9'], 2,
         '::ffff:10.9.9.9 is not an address of lo'),
        (['--dev', 'a,port=net_af_xdp0,iface=lo,shared=2'], 2, "unknown device key 'shared'"),
        # congestion control (docs/dcqcn.md)
        (['--dcqcn', 'rpg_ai_rate=0'], 2, 'bad --dcqcn'),
        (['--dcqcn', 'no_such_key=1'], 2, 'bad --dcqcn'),
        (['--dcqcn', 'rp=maybe'], 2, 'bad --dcqcn'),
        (['--dcqcn', 'rpg_min_rate=30000'], 2, 'above the line rate'),
        (['--dev', 'a,dcqcn=rp=off'], 2, 'bad dcqcn'),
        (['--fault', 'ce=2'], 2, 'bad --fault'),
    ]
    failed = 0
    for args, want, text in cases:
        try:
            p = subprocess.run([uroced] + args, env=env, capture_output=True, text=True,
                               timeout=60)
        except subprocess.TimeoutExpired:
            print('FAIL (hang):', args)
            failed += 1
            continue
        lines = [ln for ln in p.stderr.splitlines() if ln.startswith('uroced:')]
        ok = p.returncode == want and len(lines) == 1 and text in lines[0]
        print('%s %s -> %d %r' % ('ok  ' if ok else 'FAIL', ' '.join(args), p.returncode,
                                  lines))
        failed += not ok
    return 1 if failed else 0


def run_link(uroced, run_dir, shim, stat, dev0, dev1, extra, size=3000, iters=100):
    """Two devices wired back to back, ibv_rc_pingpong -c across; the
    counters of both (uroce-stat -q) or None. Stops the daemon (SIGTERM
    must exit 0 and remove both sockets); its log is judged by h.main."""
    rig = h.Rig(uroced, 'uroce-md-')
    d = rig.start(extra + ['--dev', dev0] + ['--dev'] + dev1, devs=['uroce0', 'uroce1'])
    socks = [os.path.join(rig.dir, 'uroce%d.sock' % i) for i in range(2)]
    penv = rig.penv(shim)
    port = h.free_tcp_port()
    base = ['ibv_rc_pingpong', '-g', '1', '-c', '-n', str(iters), '-s', str(size),
            '-p', str(port)]
    ok, _, _ = h.pair(base + ['-d', 'uroce0', '-e'], base + ['-d', 'uroce1', '127.0.0.1'],
                      penv, ready=port)
    if not ok:
        print('pingpong failed')
        return None
    cnts = []
    for i in range(2):
        rc, out = h.run([stat, '-d', 'uroce%d' % i, '-q'], rig.env, 30, quiet=True)
        if rc:
            print('uroce-stat uroce%d failed' % i)
            return None
        cnt = dict((ln.split()[0], int(ln.split()[1])) for ln in out.splitlines()
                   if ln.startswith(' '))
        print('uroce%d' % i, {k: v for k, v in cnt.items() if v})
        cnts.append(cnt)
    rc = rig.stop_one(d)
    if rc != 0 or any(os.path.exists(s) for s in socks):
        print('shutdown: rc %d, sockets %r' % (rc, [os.path.exists(s) for s in socks]))
        return None
    return cnts


def link(uroced, run_dir, shim, stat):
    cnts = run_link(uroced, run_dir, shim, stat, 'uroce0,port=link:wire,ip=10.0.0.1',
                    ['uroce1,port=link:wire,ip=10.0.0.2,mtu=1500'], [])
    if cnts is None:
        return 1
    for i, cnt in enumerate(cnts):
        # the path was learned with ARP, and the traffic crossed the link
        if cnt['rx_arp'] == 0 or cnt['tx_arp'] == 0 or cnt['rx_roce'] < 200 or \
           cnt['icrc_errors']:
            print('uroce%d counters wrong' % i)
            return 1
    return 0


def dcqcn(uroced, run_dir, shim, stat):
    """The fault injector marks a share of the ECN-capable frames CE (a
    congested switch): the receivers send CNPs, the senders cut their
    rates; per-device settings reach the device; rp=off keeps the CNPs and
    drops the cuts, np=off sends none."""
    dev0 = 'uroce0,port=link:wire,ip=10.0.0.1'
    dev1 = 'uroce1,port=link:wire,ip=10.0.0.2'
    fault = ['--fault', 'ce=0.05,seed=3']
    cnts = run_link(uroced, run_dir, shim, stat, dev0, [dev1, '--dcqcn', 'rpg_time_reset=55'],
                    fault, size=30000, iters=200)
    if cnts is None:
        return 1
    ok = all(c['dcqcn.ce_rcvd'] > 0 and c['dcqcn.cnp_sent'] > 0 and c['dcqcn.cnp_rcvd'] > 0
             and c['dcqcn.rate_cuts'] > 0 and c['dcqcn.ect'] == 1 for c in cnts)
    ok &= cnts[0]['dcqcn.rpg_time_reset'] == 300 and cnts[1]['dcqcn.rpg_time_reset'] == 55
    if not ok:
        print('dcqcn on: counters or settings wrong')
        return 1
    cnts = run_link(uroced, run_dir, shim, stat, dev0 + ',dcqcn=off',
                    [dev1, '--dcqcn', 'rp=off'], fault, size=30000, iters=50)
    if cnts is None:
        return 1
    # uroce0 neither marks ECT nor answers CE; uroce1 answers and does not react
    ok = cnts[0]['dcqcn.ect'] == 0 and cnts[0]['dcqcn.cnp_sent'] == 0
    ok &= cnts[0]['dcqcn.ce_rcvd'] > 0 and cnts[1]['dcqcn.ce_rcvd'] == 0
    ok &= cnts[1]['dcqcn.cnp_rcvd'] == 0 and cnts[1]['dcqcn.rate_cuts'] == 0
    ok &= cnts[1]['dcqcn.rp'] == 0 and cnts[0]['dcqcn.rate_cuts'] == 0
    if not ok:
        print('dcqcn off: counters or settings wrong')
        return 1
    return 0


def run_test():
    uroced, mode = sys.argv[1], sys.argv[2]
    if not os.access(uroced, os.X_OK):
        return h.skip('no uroced at %s (not built)' % uroced)
    if mode == 'badopts':
        run_dir = tempfile.mkdtemp(prefix='uroce-md-')
        try:
            return badopts(uroced, run_dir)
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)
    if not h.need('ibv_rc_pingpong'):
        return h.skip('ibverbs-utils not installed')
    if mode == 'dcqcn':
        return dcqcn(uroced, None, sys.argv[3], sys.argv[4])
    return link(uroced, None, sys.argv[3], sys.argv[4])


if __name__ == '__main__':
    sys.exit(h.main(run_test))
