#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""RDMA over a real link (issue 22): drops counted by reason where they
happen, and hosts on one Ethernet segment.

  link.py --build BUILD [--preload-first LIB] [--seed N] CASE

CASE
  drops     every port-level drop reason made to happen and seen in
            `uroce-ctl counters` (human and --json), each by the one who
            lost the frames: an af_xdp --shared port whose daemon is
            stopped while the other side's kernel sends more UDP 4791
            datagrams than its RX ring holds (link.xdp-rx-ring-full or,
            its ring as large as its fill ring, link.xdp-rx-dropped: 12000
            datagrams, more than uroced's socket's 8192 frames; the
            veth's if-rx-dropped); the same on af_packet with a 16-slot
            ring (link.pkt-ring-full); a pcap port with 16 mbufs
            reading 64 frames (link.rx-nombuf: the PMD had no mbuf); the
            loopback with 64 mbufs carrying 1 MB messages
            (drop.tx-nobuf, qps.tx-nobuf on the QP, no retransmission);
            every frame sent accounted for, received or dropped
  read      the READ responder paced by transmit room: the loopback
            daemon with 511 mbufs answers one 256 MiB READ (65536
            responses at MTU 4096, 128 times its pool): every byte
            checked (bigread), drop.tx-nobuf and qps.tx-nobuf 0
            (retransmissions and timeouts printed: a descheduled
            daemon makes them too)

Hosts are network namespaces named ulk-CASE-PID-HOST, removed on the way
out (also on failure, timeout or a signal); stale ones of dead runs are
removed at start. Exit 0 pass, 77 skip (no root, no netns, a program
missing), else fail."""
import argparse
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
import harness  # noqa: E402  (tests/lib/harness.py)

NS_PREFIX = 'ulk-'
TIMEOUT = 120


class Skip(Exception):
    pass


class Fail(Exception):
    pass


def sh(*cmd, check=True, timeout=30):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode:
        raise Fail('%s: %s' % (' '.join(cmd), r.stderr.strip()))
    return r


def need(*progs):
    missing = [p for p in progs if not shutil.which(p)]
    if missing:
        raise Skip('not installed: ' + ' '.join(missing))


def ns_remove(ns):
    for _ in range(3):
        pids = sh('ip', 'netns', 'pids', ns, check=False).stdout.split()
        if not pids:
            break
        for p in pids:
            try:
                os.kill(int(p), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        time.sleep(0.2)
    sh('ip', 'netns', 'del', ns, check=False)


def stale_cleanup():
    for ln in sh('ip', 'netns', 'list', check=False).stdout.splitlines():
        name = ln.split()[0] if ln.split() else ''
        m = re.match(r'^%s[a-z0-9]+-(\d+)-[a-z0-9]+$' % NS_PREFIX, name)
        if m and not os.path.exists('/proc/%s' % m.group(1)):
            print('removing stale namespace', name)
            ns_remove(name)


class Net:
    """Hosts (namespaces) and the daemons in them; links are made by the
    case (a veth pair, or veths to a bridge in a namespace of its own)."""

    def __init__(self, case, build):
        self.case, self.build = case, build
        self.tmp = tempfile.mkdtemp(prefix='uroce-link-')
        self.ns, self.run_dir, self.daemons, self.logs = {}, {}, {}, {}

    def host(self, h):
        ns = '%s%s-%d-%s' % (NS_PREFIX, self.case, os.getpid(), h)
        r = sh('ip', 'netns', 'add', ns, check=False)
        if r.returncode:
            raise Skip('cannot create a network namespace: ' + r.stderr.strip())
        self.ns[h] = ns
        sh('ip', '-n', ns, 'link', 'set', 'lo', 'up')
        self.run_dir[h] = os.path.join(self.tmp, 'run-' + h)
        os.makedirs(self.run_dir[h], mode=0o700, exist_ok=True)
        return ns

    def veth(self, h1, if1, h2, if2, mtu, mac1=None, mac2=None):
        cmd = ['ip', 'link', 'add', if1, 'netns', self.ns[h1]]
        cmd += ['address', mac1] if mac1 else []
        cmd += ['type', 'veth', 'peer', 'name', if2, 'netns', self.ns[h2]]
        cmd += ['address', mac2] if mac2 else []
        sh(*cmd)
        for h, i in ((h1, if1), (h2, if2)):
            sh('ip', '-n', self.ns[h], 'link', 'set', i, 'mtu', str(mtu), 'up')

    def nsx(self, h, cmd):
        return ['ip', 'netns', 'exec', self.ns[h]] + cmd if h in self.ns else cmd

    def start(self, h, args, tag=''):
        """uroced in host h (h without a namespace: this one)."""
        os.makedirs(self.run_dir.setdefault(h, os.path.join(self.tmp, 'run-' + h)),
                    mode=0o700, exist_ok=True)
        key = h + tag
        log = open(os.path.join(self.tmp, 'uroced-%s.log' % key), 'w+')
        cmd = [os.path.join(self.build, 'emu', 'uroced')] + list(args)
        print('+ [%s] %s' % (h, ' '.join(cmd)), flush=True)
        lsan = 'suppressions=%s:%s' % (os.path.join(HERE, 'lsan.supp'),
                                       os.environ.get('LSAN_OPTIONS', ''))
        env = dict(os.environ, UROCE_RUN_DIR=self.run_dir[h], LSAN_OPTIONS=lsan)
        d = subprocess.Popen(self.nsx(h, cmd), env=env, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        self.daemons[key], self.logs[key] = d, log
        if not harness.wait_socket(os.path.join(self.run_dir[h], 'uroce0.sock'), d):
            raise Fail('uroced in %s did not start:\n%s' % (h, self.log(key)))
        return d

    def log(self, key):
        self.logs[key].flush()
        with open(self.logs[key].name) as f:
            return f.read()

    def stop(self, key):
        """SIGTERM it; a crash, leak or sanitizer report fails the test."""
        st = harness.stop(self.daemons.pop(key))
        why = harness.daemon_faults([st], self.log(key))
        if why:
            raise Fail('[%s] %s' % (key, '; '.join(why)))

    def stop_all(self):
        for key in list(self.daemons):
            self.stop(key)

    def down(self):
        for d in self.daemons.values():
            if d.poll() is None:
                d.kill()
                d.wait()
        for ns in self.ns.values():
            ns_remove(ns)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def ctl(self, h, args, json_out=False):
        cmd = [os.path.join(self.build, 'tools', 'ctl', 'uroce-ctl')]
        cmd += ['--json'] if json_out else []
        r = subprocess.run(cmd + args, env=dict(os.environ, UROCE_RUN_DIR=self.run_dir[h]),
                           capture_output=True, text=True, timeout=30)
        if r.returncode:
            raise Fail('[%s] uroce-ctl %s: %s' % (h, ' '.join(args), r.stderr.strip()))
        return json.loads(r.stdout) if json_out else r.stdout

    def counters(self, h):
        """The port's counters both ways: {name: value} from the human
        form ("  name value" lines up to the first QP) and the JSON
        object; the two must agree on every link. and qps. value."""
        human, cur = {}, None
        for ln in self.ctl(h, ['counters']).splitlines():
            if ln.startswith('port '):
                cur = human
            elif ln.startswith('qp '):
                cur = None
            elif cur is not None and len(ln.split()) == 2:
                human[ln.split()[0]] = int(ln.split()[1])
        j = self.ctl(h, ['counters'], json_out=True)
        port = j['port']
        for grp, pre in (('link', 'link.'), ('qp_totals', 'qps.')):
            for k, v in (port.get(grp) or {}).items():
                if human.get(pre + k) != v:
                    raise Fail('[%s] %s%s: %s in the human form, %s in --json'
                               % (h, pre, k, human.get(pre + k), v))
        for k, v in (port.get('drops') or {}).items():
            human.setdefault('drop.' + k, v)
        return human, j


def pid_of(d):
    """uroced's pid: `ip netns exec` execs it."""
    return d.pid


def wait_for(pred, what, limit=30.0):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.1)
    raise Fail('timed out waiting for ' + what)


def blast(net, h, dst, n, size=64):
    """n UDP datagrams to dst:4791 from host h's kernel, as fast as it
    sends them; how many the kernel took."""
    code = ('import socket,sys\n'
            's=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n'
            's.setsockopt(socket.SOL_SOCKET,socket.SO_SNDBUF,1<<22)\n'
            'k=0\n'
            'for i in range(%d):\n'
            '    try:\n'
            '        s.sendto(bytes(%d),("%s",4791)); k+=1\n'
            '    except OSError:\n'
            '        pass\n'
            'print(k)\n' % (n, size, dst))
    r = sh(*net.nsx(h, [sys.executable, '-c', code]), timeout=60)
    return int(r.stdout.strip() or 0)


def drops_ring(net, kind):
    """A stopped daemon's RX ring overflows: counted by the kernel socket
    that lost the frames, read through uroce-ctl."""
    mtu = 1500
    a, b = 'a' + kind[0], 'b' + kind[0]
    net.host(a)
    net.host(b)
    net.veth(a, 'e0', b, 'e0', mtu, '02:00:00:87:00:01', '02:00:00:87:00:02')
    for h, ip in ((a, '10.87.0.1'), (b, '10.87.0.2')):
        sh(*net.nsx(h, ['ip', 'addr', 'add', ip + '/24', 'dev', 'e0']))
    if kind == 'xdp':
        d = net.start(a, ['--port', 'net_af_xdp0,iface=e0', '--shared'])
        # the RX ring holds what the fill ring does (uroced's own socket:
        # 8192 frames, port_param.c), so a stopped daemon's socket runs
        # out of fill buffers as its ring fills: the kernel counts either
        # (rx_dropped covers the fill-empty case, rx_queue_full the ring),
        # never one frame in both. 12000 overflow 8192 (DPDK's PMD held
        # 2048: 6000 did then, and lose nothing now)
        reason, want_n = 'xdp-rx-ring-full+xdp-rx-dropped', 12000
    else:
        # uroce answers for 10.87.0.1 too: the kernel must not answer its
        # RoCE with ICMP (docs/running.md, af_packet)
        sh(*net.nsx(a, ['iptables', '-A', 'INPUT', '-p', 'udp', '--dport', '4791',
                        '-j', 'DROP']))
        d = net.start(a, ['--port', 'net_af_packet0,iface=e0,framecnt=16', '--ip', '10.87.0.1',
                          '--mac', '02:00:00:87:00:01', '--mtu', str(mtu)])
        reason, want_n = 'pkt-ring-full', 400
    # b's kernel resolves a first: datagrams waiting for ARP would be
    # dropped by b's own neighbour queue, not by a (a's kernel answers)
    blast(net, b, '10.87.0.1', 1)
    wait_for(lambda: 'lladdr' in sh(*net.nsx(b, ['ip', 'neigh', 'show', '10.87.0.1'])).stdout,
             "b's neighbour entry for a", 10)
    time.sleep(0.5)
    def if_rx():
        # every frame that crossed a's interface, ours or not (the kernel's
        # own ARP, ND, MLD, both ways: an af_packet socket also takes the
        # frames the host sends), so the port's socket saw each of them too
        n = 0
        for d in ('rx', 'tx'):
            r = sh(*net.nsx(a, ['cat', '/sys/class/net/e0/statistics/%s_packets' % d]))
            n += int(r.stdout.strip() or 0)
        return n
    c0, _ = net.counters(a)
    k0 = if_rx()
    os.kill(pid_of(d), signal.SIGSTOP)
    try:
        sent = blast(net, b, '10.87.0.1', want_n)
    finally:
        os.kill(pid_of(d), signal.SIGCONT)
    print('[%s] %s: %d datagrams sent while its daemon was stopped' % (a, kind, sent),
          flush=True)

    def lost_of(c):
        return sum(c.get('link.' + r, 0) - c0.get('link.' + r, 0) for r in reason.split('+'))

    def settled():
        c, _ = net.counters(a)
        got = c.get('rx_pkts', 0) - c0.get('rx_pkts', 0)
        return got + lost_of(c) >= sent
    try:
        wait_for(settled, '%s: every datagram received or counted lost' % kind, 20)
    except Fail:
        pass  # the checks below say what is missing
    c1, j = net.counters(a)
    got = c1.get('rx_pkts', 0) - c0.get('rx_pkts', 0)
    lost = lost_of(c1)
    ifd = c1.get('link.if-rx-dropped', 0) - c0.get('link.if-rx-dropped', 0)
    print('[%s] received %d, link.%s %d, link.if-rx-dropped %d' % (a, got, reason, lost, ifd),
          flush=True)
    if lost <= 0:
        raise Fail('%s: the RX ring overflowed and link.%s did not move' % (kind, reason))
    # frames not ours that came meanwhile are received or lost like ours
    # (an af_packet socket takes every frame of the interface; CI once saw
    # one more than was sent): they may only explain an excess, never a
    # shortfall
    # A loss that no counter shows is the failure this test is for; an
    # excess is tolerated up to the frames that crossed e0 besides ours
    # plus a few more: the CI machine's ASan run and idle re-runs saw 1-2
    # frames more than crossed e0, not yet attributed (the daemon's own
    # frames through its self loop are a candidate); a double count of the
    # 400 would exceed it.
    other = max(0, if_rx() - k0 - sent)
    if not sent <= got + lost <= sent + other + 8:
        raise Fail('%s: %d sent (and %d other frames crossed e0), %d received + %d counted lost'
                   % (kind, sent, other, got, lost))
    moved = [r for r in reason.split('+') if c1.get('link.' + r, 0) > c0.get('link.' + r, 0)]
    for r in moved:
        if r.replace('-', '_') not in json.dumps(j).replace('-', '_'):
            raise Fail('%s: no %s in --json' % (kind, r))
    if kind == 'xdp' and ifd < lost:
        raise Fail('xdp: the veth counted %d dropped, the AF_XDP socket %d' % (ifd, lost))
    net.stop(a)


def drops_nombuf(net):
    """A pcap port with 16 mbufs reads 64 frames in bursts of 32: the PMD
    runs out of mbufs (link.rx-nombuf); every frame received or counted."""
    pc = os.path.join(net.tmp, 'in.pcap')
    with open(pc, 'wb') as f:
        f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i in range(64):
            fr = b'\xff' * 6 + b'\x02\x00\x00\x00\x00\x09' + b'\x08\x06' + bytes(46)
            f.write(struct.pack('<IIII', 0, i, len(fr), len(fr)) + fr)
    out = os.path.join(net.tmp, 'out.pcap')
    net.start('pcap', ['--port', 'net_pcap0,rx_pcap=%s,tx_pcap=%s' % (pc, out),
                       '--ip', '10.86.0.1', '--mbufs', '16'])
    wait_for(lambda: net.counters('pcap')[0].get('rx_pkts', 0) +
             net.counters('pcap')[0].get('link.rx-nombuf', 0) >= 64, 'the 64 frames', 20)
    c, _ = net.counters('pcap')
    print('[pcap] rx_pkts %d, link.rx-nombuf %d' % (c.get('rx_pkts', 0), c.get('link.rx-nombuf', 0)))
    if not c.get('link.rx-nombuf'):
        raise Fail('pcap: 64 frames through 16 mbufs and no link.rx-nombuf')
    if c['rx_pkts'] + c['link.rx-nombuf'] != 64:
        raise Fail('pcap: 64 frames, %d received + %d rx-nombuf' % (c['rx_pkts'],
                                                                    c['link.rx-nombuf']))
    net.stop('pcap')


def drops_txnobuf(net, preload_first):
    """The loopback with 64 mbufs carries 1 MB messages: the requester
    meets no mbuf (drop.tx-nobuf, qps.tx-nobuf), waits and goes on; no
    frame is lost for it (no retransmission), every byte checked."""
    need('ibv_rc_pingpong')
    net.start('lo', ['--mbufs', '64'])
    shim = os.path.join(net.build, 'verbs', 'liburoce.so')
    env = dict(os.environ, UROCE_RUN_DIR=net.run_dir['lo'],
               LD_PRELOAD=(preload_first + ':' if preload_first else '') + shim)
    if preload_first:
        env['ASAN_OPTIONS'] = 'detect_leaks=0:symbolize=0'
    port = str(harness.free_tcp_port())
    base = ['ibv_rc_pingpong', '-d', 'uroce0', '-g', '1', '-s', '1048576', '-n', '10', '-c',
            '-p', port]
    srv = subprocess.Popen(base, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, start_new_session=True)
    try:
        harness.wait_until(lambda: harness.tcp_listening(int(port), srv.pid), lambda: srv.poll() is None, 30)
        r = subprocess.run(base + ['127.0.0.1'], env=env, capture_output=True, text=True,
                           timeout=TIMEOUT)
        sout = srv.communicate(timeout=TIMEOUT)[0]
    finally:
        if srv.poll() is None:
            harness.kill_group(srv)
    if r.returncode or srv.returncode:
        raise Fail('rc_pingpong 1 MB with 64 mbufs: %s %s' % (r.stdout[-300:], sout[-300:]))
    c, _ = net.counters('lo')
    print('[lo] drop.tx-nobuf %d, qps.tx-nobuf %d, qps.retransmits %d' % (
        c.get('drop.tx-nobuf', 0), c.get('qps.tx-nobuf', 0), c.get('qps.retransmits', 0)))
    if not c.get('drop.tx-nobuf') or c.get('qps.tx-nobuf') != c.get('drop.tx-nobuf'):
        raise Fail('lo: 64 mbufs for 1 MB messages, tx-nobuf port %s qps %s'
                   % (c.get('drop.tx-nobuf'), c.get('qps.tx-nobuf')))
    if c.get('qps.retransmits') or c.get('qps.timeouts'):
        raise Fail('lo: an mbuf shortage cost retransmissions')
    net.stop('lo')


def case_drops(net, a):
    need('iptables')
    if not os.path.exists(os.path.join(net.build, 'emu', 'uroce_xdp.o')):
        raise Skip('uroced was built without its XDP program (clang, libbpf-dev)')
    drops_ring(net, 'xdp')
    drops_ring(net, 'packet')
    drops_nombuf(net)
    drops_txnobuf(net, a.preload_first)


def case_read(net, a):
    prog = os.path.join(net.build, 'tests', 'net', 'bigread')
    if not os.path.exists(prog):
        raise Skip('bigread was not built (no libibverbs)')
    net.start('lo', ['--mbufs', '511'])
    shim = os.path.join(net.build, 'verbs', 'liburoce.so')
    # bigread is built by this build: in a sanitized one it carries the
    # sanitizer runtime itself (no --preload-first, which would be a
    # second runtime)
    env = dict(os.environ, UROCE_RUN_DIR=net.run_dir['lo'], LD_PRELOAD=shim)
    r = subprocess.run([prog, 'read', '256'], env=env, capture_output=True, text=True,
                       timeout=TIMEOUT)
    print('[lo] ' + (r.stdout + r.stderr).strip(), flush=True)
    if r.returncode:
        raise Fail('lo: a 256 MiB READ through 511 mbufs failed: %s' % r.stderr.strip())
    c, _ = net.counters('lo')
    bad = {k: c.get(k, 0) for k in ('drop.tx-nobuf', 'qps.tx-nobuf', 'qps.retransmits',
                                    'qps.timeouts', 'qps.probes')}
    print('[lo] ' + ', '.join('%s %d' % kv for kv in bad.items()), flush=True)
    if 'qps.tx-nobuf' not in c or 'qps.retransmits' not in c:
        raise Fail('lo: uroce-ctl counters shows no qps.tx-nobuf / qps.retransmits')
    # the verdict is the mbufs: a responder that outruns them loses
    # responses (128 here before). Retransmissions and timeouts are
    # printed, not judged: a daemon off its core for longer than the
    # requester's 67 ms timer also makes them (docs/performance.md, "READ
    # of any size"), with any responder
    if bad['drop.tx-nobuf'] or bad['qps.tx-nobuf']:
        raise Fail('lo: the READ responder ran out of mbufs: %s' % bad)
    net.stop('lo')


CASES = {'drops': case_drops, 'read': case_read}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', required=True)
    ap.add_argument('--preload-first', default='')
    ap.add_argument('--seed', type=int, default=None)
    ap.add_argument('case', choices=sorted(CASES))
    a = ap.parse_args()
    return run_case(lambda: Net(a.case, os.path.abspath(a.build)), CASES[a.case], a)


def run_case(make_net, case, a):
    """The verdict of case(net, a) on a fresh Net (also tests/net's
    fourhost.py, udload.py): skip without root, stale namespaces removed
    first, every daemon stopped and judged, everything removed after; the
    daemons' logs printed on a failure."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(1))
    if os.geteuid() != 0:
        return harness.skip('needs root (network namespaces, AF_PACKET/AF_XDP)')
    stale_cleanup()
    net = make_net()
    t0 = time.monotonic()
    try:
        case(net, a)
        net.stop_all()
    except Skip as e:
        return harness.skip(str(e))
    except Fail as e:
        for k in net.logs:
            print('--- uroced %s ---\n%s' % (k, net.log(k)[-4000:]))
        return harness.fail(str(e))
    finally:
        net.down()
    print('ok (%.1f s)' % (time.monotonic() - t0))
    return harness.PASS


if __name__ == '__main__':
    sys.exit(main())
