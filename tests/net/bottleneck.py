# SPDX-License-Identifier: MIT
"""twohost.py's dcqcn case: two RC flows through a marking bottleneck
(docs/dcqcn.md, "Two namespaces"). b's end of the data veth drains at
BN_MBPS through a tbf qdisc behind a tc egress BPF program
(ecn_queue.bpf.c, loaded and read by ecn_queue) that models that queue
and marks ECN-capable RoCE frames CE, RED-fashion, from a seeded
generator. Both daemons use af_packet with qdisc_bypass=0 (the PMD's
default bypasses the qdisc, and with it the hook)."""
import json
import os
import random
import subprocess
import threading

BN_MBPS = 50
# mlx5's defaults are made for 10-100 Gb/s links; the bottleneck is K times
# slower than test_dcqcn's 10 Gb/s, so DCQCN's timers are K times longer
# and its rate steps K times smaller (what is in bytes, the queue
# thresholds and the byte counter, stays): the same dynamics on a slower
# clock. The line rate is the bottleneck's, as there.
BN_K = 10000 // BN_MBPS
BN_DCQCN = ('rpg_max_rate=%d,min_time_between_cnps=%d,rate_reduce_monitor_period=%d,'
            'dce_tcp_rtt=%d,rpg_time_reset=%d,rpg_ai_rate=%d,rpg_hai_rate=%d' % (
                BN_MBPS, 4 * BN_K, 4 * BN_K, BN_K, 300 * BN_K, max(1, 5 // BN_K),
                max(1, 50 // BN_K)))
# RED as test_dcqcn's switch: 0 below 20 KB, 20 % at 200 KB, 1 above
BN_KMIN, BN_KMAX, BN_PMAX = 20000, 200000, 205
BN_WINDOWS = 2 * 8 * 65536          # ib_write_bw -q 2 -t 8 -s 65536
BN_LIMIT = 2 * BN_WINDOWS           # the queue never has to drop
BN_SECONDS = 4
BN_INTERVAL_MS = 50


def jain(xs):
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if any(xs) else 0.0


class Marker:
    """The tbf on b's ud0, the marking program in front of it and its
    reader's samples (one JSON line per interval, ecn_queue.c)."""

    def __init__(self, th, rig, seed):
        tn = os.path.join(rig.build, 'tests', 'net')
        self.th, self.rig, self.samples = th, rig, []
        th.sh(*rig.nsx('b', ['tc', 'qdisc', 'replace', 'dev', 'ud0', 'root', 'tbf', 'rate',
                             '%dmbit' % BN_MBPS, 'burst', '16k', 'limit',
                             str(2 * BN_LIMIT)]))
        self.p = subprocess.Popen(rig.nsx('b', [
            os.path.join(tn, 'ecn_queue'), os.path.join(tn, 'ecn_queue.bpf.o'), 'ud0',
            str(BN_MBPS), str(BN_KMIN), str(BN_KMAX), str(BN_PMAX), str(BN_LIMIT), str(seed),
            str(BN_INTERVAL_MS)]), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        first = self.p.stdout.readline()
        if '"ready"' not in first:
            self.p.kill()
            raise th.Fail('the marking queue did not attach: %s %s' % (first,
                                                                      self.p.stderr.read()))
        self.t = threading.Thread(target=self.read, daemon=True)
        self.t.start()

    def read(self):
        for ln in self.p.stdout:
            try:
                self.samples.append(json.loads(ln))
            except ValueError:
                pass

    def stop(self):
        self.p.stdin.close()  # its end
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.t.join(10)
        for q in ('root', 'clsact'):
            self.th.sh(*self.rig.nsx('b', ['tc', 'qdisc', 'del', 'dev', 'ud0', q]), check=False)


def cc_show(th, rig, s):
    r = subprocess.run([os.path.join(rig.build, 'tools', 'ctl', 'uroce-ctl'), '--json',
                        'cc', 'show'], env=dict(os.environ, UROCE_RUN_DIR=rig.run_dir[s]),
                       capture_output=True, text=True, timeout=30)
    if r.returncode:
        raise th.Fail('[%s] uroce-ctl cc show: %s' % (s, r.stderr.strip()))
    return json.loads(r.stdout)['dcqcn']


def window(samples):
    """The second half of the time the two flows moved data: per-flow
    bytes, the deepest queue, its length in seconds."""
    moving = [x['t'] for x, y in zip(samples, samples[1:]) if y['bytes'] - x['bytes'] > 20000]
    if len(moving) < 8:
        return None
    t_from, t_to = (moving[0] + moving[-1]) / 2, moving[-1]
    win = [x for x in samples if t_from <= x['t'] <= t_to]
    a, b = win[0], win[-1]
    flows = sorted(set(a['flows']) | set(b['flows']))
    return {'flows': {f: b['flows'].get(f, [0])[0] - a['flows'].get(f, [0])[0] for f in flows},
            'qmax': max(x['qmax'] for x in win[1:]), 'secs': (b['t'] - a['t']) / 1000.0}


def write_csv(smp, path):
    """per interval: the deepest queue (KB) and each flow's Mb/s, the
    columns bench/dcqcn_plot.py --net reads"""
    flows = sorted({f for x in smp for f in x['flows']})[:2]
    first = next((i for i, x in enumerate(smp) if x['bytes'] > 20000), 1)
    smp = smp[first - 1:]  # from the flows' start: t = 0
    with open(path, 'w') as f:
        f.write('t_ms,queue_kb,flow1_mbps,flow2_mbps\n')
        for x, y in zip(smp, smp[1:]):
            dt = (y['t'] - x['t']) / 1000.0 or 1
            r = [8 * (y['flows'].get(k, [0])[0] - x['flows'].get(k, [0])[0]) / dt / 1e6
                 for k in flows] + [0, 0]
            f.write('%d,%.1f,%.1f,%.1f\n' % (y['t'] - smp[0]['t'], y['qmax'] / 1000, r[0], r[1]))
    print('series written to', path)


def run(th, rig, a, mode, seed):
    """Daemons with --dcqcn BN_DCQCN (on) or off, two flows for
    BN_SECONDS (on: then ibv_rc_pingpong -c through the queue); returns
    the samples of the two flows, both devices' DCQCN totals and the
    second half's figures."""
    dc = BN_DCQCN if mode == 'on' else 'off'
    mk = Marker(th, rig, seed)
    try:
        for s in 'ab':
            rig.start(s, 'net_af_packet0,iface=ud0,qdisc_bypass=0',
                      ['--mac', th.MAC[s], '--dcqcn', dc], tag='-' + mode)
        p = th.Programs(rig, a.preload_first, th.MGMT['a'])
        p.perftest('ib_write_bw', ['-x', '1', '-s', '65536', '-q', '2', '-t', '8',
                                   '-D', str(BN_SECONDS)])
        nflow = len(mk.samples)  # what follows is not the two flows'
        if mode == 'on':
            p.pingpong('ibv_rc_pingpong', ['-g', '1', '-s', '65536', '-n', '20'])
        cc = {s: cc_show(th, rig, s) for s in 'ab'}
        # a receives the data, b the ACKs (coalesced: how many varies)
        th.check_port(rig, 'a', 1000, v6=False)
        th.check_port(rig, 'b', 10, v6=False)
    finally:
        mk.stop()
    rig.stop()
    rig.daemons.clear()
    smp = mk.samples[:nflow]
    w = window(smp)
    if not w:
        raise th.Fail('%s: the queue saw no steady traffic (%d samples)' % (mode, len(smp)))
    last = mk.samples[-1]
    rates = {f: round(8 * v / w['secs'] / 1e6, 1) for f, v in w['flows'].items()}
    print('[%s] queue: %d frames, %d ECN-capable, %d marked, %d dropped; second half '
          '(%.1f s): deepest %.0f KB, flows %s Mb/s, Jain %.3f' % (
              mode, last['pkts'], last['ect'], last['marked'], last['dropped'], w['secs'],
              w['qmax'] / 1000, rates, jain(list(w['flows'].values()))))
    print('[%s] a: ce_rcvd %d cnp_sent %d; b: cnp_rcvd %d rate_cuts %d' % (
        mode, cc['a']['ce_rcvd'], cc['a']['cnp_sent'], cc['b']['cnp_rcvd'],
        cc['b']['rate_cuts']))
    if a.csv:
        write_csv(smp, '%s-%s.csv' % (a.csv, mode))
    return last, cc, w


def case(th, rig, a):
    th.need('ib_write_bw', 'ibv_rc_pingpong', 'tc')
    if not os.path.exists(os.path.join(rig.build, 'tests', 'net', 'ecn_queue.bpf.o')):
        raise th.Skip("no marking queue: built without clang's BPF target or libbpf-dev")
    rig.up(mgmt=True)
    for s in 'ab':
        th.sh(*rig.nsx(s, ['sysctl', '-qw', 'net.ipv6.conf.ud0.disable_ipv6=1']))
    seed = a.seed if a.seed is not None else random.randrange(1, 1 << 30)
    print('marking seed %d; bottleneck %d Mb/s; --dcqcn %s' % (seed, BN_MBPS, BN_DCQCN))
    last, cc, w = run(th, rig, a, 'on', seed)
    bad = []
    if not last['marked'] or not cc['a']['ce_rcvd'] or not cc['a']['cnp_sent']:
        bad.append('no CE marks or no CNPs (marked %d, a: ce_rcvd %d cnp_sent %d)' % (
            last['marked'], cc['a']['ce_rcvd'], cc['a']['cnp_sent']))
    if not cc['b']['cnp_rcvd'] or not cc['b']['rate_cuts']:
        bad.append('b did not react (cnp_rcvd %d, rate_cuts %d)' % (
            cc['b']['cnp_rcvd'], cc['b']['rate_cuts']))
    # the queue program's own counts: it dropped nothing, and both flows
    # crossed it. The deepest queue over the second half and Jain's index
    # of the flows' bytes are figures of a time window (when DCQCN has
    # converged depends on this machine's load): printed above, a
    # benchmark's (bench/dcqcn_plot.py --net), not a verdict.
    if last['dropped']:
        bad.append('the queue dropped %d frames' % last['dropped'])
    if len(w['flows']) != 2 or not all(w['flows'].values()):
        bad.append('not two flows through the queue: %s' % w['flows'])
    if bad:
        raise th.Fail('dcqcn on: ' + '; '.join(bad))
    last, cc, w = run(th, rig, a, 'off', seed)
    if last['ect'] or last['marked'] or cc['a']['cnp_sent']:
        raise th.Fail('dcqcn off: %d ECN-capable frames, %d marked, %d CNPs' % (
            last['ect'], last['marked'], cc['a']['cnp_sent']))
