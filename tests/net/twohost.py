#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Two hosts across Ethernet: two network namespaces joined by a veth pair,
a uroced in each on its veth end through DPDK, unmodified verbs and
rdma_cm programs across them through the shim (docs/running.md, "Two
hosts").

  twohost.py --build BUILD [--preload-first LIB] [--seed N] CASE

CASE
  xdp       af_xdp, MTU 1500 (active MTU 1024); the programs' TCP exchange
            on a second veth pair (af_xdp's default XDP program takes every
            frame of the data link); first the idle daemons, as in jumbo
            (their AF_XDP socket is in the engine's epoll)
  jumbo     af_packet, MTU 9000 (active MTU 4096), ring sized by uroced
            from --mtu (its log line is checked); first the idle daemons:
            their port's RX socket is in the engine's epoll and they wake
            at most 200 times a second (not every ms)
  overload  af_packet, MTU 1500, the receiver's ring cut to 16 slots so
            the kernel drops when it falls behind: RC retransmits (seen in
            uroce-stat) and the data is verified
  shared    af_xdp --shared, MTU 1500, ONE veth pair that the kernels keep
            using: a checked TCP echo stream runs across it for the whole
            case, ICMP echo (v4, v6) works, the programs' TCP exchange
            uses the same link, while ib_write_bw -q 4, rc_pingpong -c
            (IPv4, IPv6, link-local and routed GIDs) and rping run; the
            daemons see only RoCE and
            resolve through the kernel (no ARP/ND of their own), the
            kernels see the TCP and no RoCE; raw frames of each kind
            (RoCEv2 v4/v6/VLAN, another UDP port, fragments) go where
            the XDP program must send them. First the negative: with
            libxdp's default program (no --shared) a TCP connection over
            that link fails
  dcqcn     af_packet (qdisc_bypass=0), MTU 1500: b's veth end is a
            marking bottleneck (bottleneck.py: a tbf draining it at 50 Mb/s
            behind a tc egress BPF program, ecn_queue.bpf.c, that models its
            queue and marks ECN-capable RoCE frames CE RED-fashion, seeded);
            two RC flows (ib_write_bw -q 2) share it, then the same with
            --dcqcn off. Asserted with DCQCN on: CE marks, CNPs sent by a
            and received by b, rate cuts (uroce-ctl cc show), no frame
            dropped by the queue, its deepest point in the second half
            below half of what the flows' windows alone would make, Jain's
            index of the two flows' bytes over the second half >= 0.8, no
            ICRC error, and an ibv_rc_pingpong -c through the marking queue
            (every byte checked); with it off, that no frame was
            ECN-capable. The figures are printed (docs/dcqcn.md)

Every daemon has an IPv4 and an IPv6 address (GID 1 and 2); the daemons
resolve each other by ARP and ND (shared: the kernels do, the daemons
read their tables). Namespaces are named unet-CASE-PID-{a,b}
and removed on the way out, also on failure, timeout (SIGTERM) or a
signal; stale ones of dead runs are removed at start. Exit 0 pass, 77 skip
(no root, no netns, a program missing), else fail."""
import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, os.path.join(HERE, '..', 'cm'))
import harness as h  # noqa: E402  (tests/lib/harness.py)
import cm  # noqa: E402  (tests/cm/cm.py: its programs' races)

NS_PREFIX = 'unet-'
# uroce's addresses (GID 1 IPv4, GID 2 IPv6) and the kernel's on the
# management link, per side
UIP = {'a': '10.88.0.1', 'b': '10.88.0.2'}
UIP6 = {'a': 'fd88::1', 'b': 'fd88::2'}
MAC = {'a': '02:00:00:88:00:01', 'b': '02:00:00:88:00:02'}
MGMT = {'a': '10.89.0.1', 'b': '10.89.0.2'}
# shared: a second IPv4 address per side that the other reaches through a
# gateway (the first address), not on-link
ROUTED = {'a': '10.66.0.1', 'b': '10.67.0.2'}
TIMEOUT = 60


class Skip(Exception):
    pass


class Fail(Exception):
    pass


def sh(*cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check and r.returncode:
        raise Fail('%s: %s' % (' '.join(cmd), r.stderr.strip()))
    return r


def ns_pids(ns):
    r = sh('ip', 'netns', 'pids', ns, check=False)
    return [int(p) for p in r.stdout.split()]


def ns_remove(ns):
    """Every process in it killed (all were started by a test), then gone."""
    for _ in range(3):
        pids = ns_pids(ns)
        if not pids:
            break
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
    sh('ip', 'netns', 'del', ns, check=False)


def stale_cleanup():
    """Namespaces of runs whose process is gone (SIGKILLed by a timeout)."""
    r = sh('ip', 'netns', 'list', check=False)
    for ln in r.stdout.splitlines():
        name = ln.split()[0] if ln.split() else ''
        m = re.match(r'^%s[a-z]+-(\d+)-[ab]$' % NS_PREFIX, name)
        if m and not os.path.exists('/proc/%s' % m.group(1)):
            print('removing stale namespace', name)
            ns_remove(name)


class Rig:
    """Two namespaces, a data veth pair (ud0) and a management veth pair
    (um0, the kernel's: the programs' TCP exchange), a uroced in each."""

    def __init__(self, case, build, mtu):
        self.case, self.build, self.mtu = case, build, mtu
        self.ns = {s: '%s%s-%d-%s' % (NS_PREFIX, case, os.getpid(), s) for s in 'ab'}
        self.tmp = tempfile.mkdtemp(prefix='uroce-net-')
        self.run_dir = {s: os.path.join(self.tmp, 'run-' + s) for s in 'ab'}
        self.daemons = {}
        self.partial = []   # parts of the case that could not run: a skip
        self.logs = {}

    def up(self, mgmt=True):
        for s in 'ab':
            r = sh('ip', 'netns', 'add', self.ns[s], check=False)
            if r.returncode:
                raise Skip('cannot create a network namespace: ' + r.stderr.strip())
            sh('ip', '-n', self.ns[s], 'link', 'set', 'lo', 'up')
        links = [('ud0', self.mtu)] + ([('um0', 1500)] if mgmt else [])
        for name, mtu in links:
            sh('ip', 'link', 'add', name, 'netns', self.ns['a'], 'type', 'veth',
               'peer', 'name', name, 'netns', self.ns['b'])
            for s in 'ab':
                sh('ip', '-n', self.ns[s], 'link', 'set', name, 'mtu', str(mtu), 'up')
        if mgmt:
            for s in 'ab':
                sh('ip', '-n', self.ns[s], 'addr', 'add', MGMT[s] + '/24', 'dev', 'um0')

    def down(self):
        for s, d in self.daemons.items():
            if d.poll() is None:
                d.kill()
                d.wait()
        for s in 'ab':
            ns_remove(self.ns[s])
        subprocess.run(['rm', '-rf', self.tmp])

    def nsx(self, s, cmd):
        return ['ip', 'netns', 'exec', self.ns[s]] + cmd

    def start(self, s, port, extra=(), ips=True, tag=''):
        os.makedirs(self.run_dir[s], mode=0o700, exist_ok=True)
        log = open(os.path.join(self.tmp, 'uroced-%s%s.log' % (s, tag)), 'w+')
        cmd = [os.path.join(self.build, 'emu', 'uroced'), '--port', port]
        cmd += ['--ip', UIP[s], '--ip', UIP6[s], '--mtu', str(self.mtu)] if ips else []
        cmd += list(extra)
        print('+ [%s] %s' % (s, ' '.join(cmd)), flush=True)
        # third-party leaks only (lsan.supp); ignored by uninstrumented builds
        lsan = 'suppressions=%s:%s' % (os.path.join(HERE, 'lsan.supp'),
                                       os.environ.get('LSAN_OPTIONS', ''))
        env = dict(os.environ, UROCE_RUN_DIR=self.run_dir[s], LSAN_OPTIONS=lsan)
        d = subprocess.Popen(self.nsx(s, cmd), env=env, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        self.daemons[s], self.logs[s] = d, log
        if not h.wait_socket(os.path.join(self.run_dir[s], 'uroce0.sock'), d):
            raise Fail('uroced in %s did not start:\n%s' % (s, self.log(s)))

    def log(self, s):
        self.logs[s].flush()
        with open(self.logs[s].name) as f:
            return f.read()

    def stop(self):
        """SIGTERM both; a daemon that crashed, leaked or reported is a
        failure (tests/verbs/run.py's verdict)."""
        st = [h.stop(self.daemons[s]) for s in 'ab']
        why = h.daemon_faults(st, self.log('a') + self.log('b'))
        if why:
            raise Fail('; '.join(why))

    def stats(self, s):
        r = subprocess.run([os.path.join(self.build, 'tools', 'ctl', 'uroce-stat')],
                           env=dict(os.environ, UROCE_RUN_DIR=self.run_dir[s]),
                           capture_output=True, text=True, timeout=30)
        port, qps, cur = {}, [], None
        for ln in r.stdout.splitlines():
            f = ln.split()
            if ln.startswith('port '):
                cur = port
            elif ln.startswith('qp '):
                cur = {'_qp': f[1]}
                qps.append(cur)
            elif len(f) == 2 and cur is not None:
                cur[f[0]] = int(f[1])
        return port, qps


class Programs:
    """Unmodified programs through the shim: server in namespace a, client
    in b, the client retried while the server does not listen yet
    (tests/cm/cm.py's pair). Each side's environment is set inside its
    namespace with env(1)."""

    def __init__(self, rig, preload_first, server_addr):
        self.rig, self.addr = rig, server_addr
        shim = os.path.join(rig.build, 'verbs', 'liburoce.so')
        self.pre = {}
        for s in 'ab':
            e = ['UROCE_RUN_DIR=' + rig.run_dir[s], 'UROCE_CM_DEVICE=uroce0']
            if preload_first:
                # an instrumented shim in uninstrumented programs
                # (tests/verbs/meson.build): the sanitizer runtime first, no
                # leak check or symbolizing of the program itself
                e += ['LD_PRELOAD=%s:%s' % (preload_first, shim),
                      'ASAN_OPTIONS=detect_leaks=0:symbolize=0']
            else:
                e += ['LD_PRELOAD=' + shim]
            self.pre[s] = ['env'] + e
        self.tcp_port = 18600

    def cmd(self, s, argv):
        return self.rig.nsx(s, self.pre[s] + argv)

    def pair(self, name, srv, cli=None, ready=None, server_addr=None, again=None,
             moved_on=None):
        """Both must exit 0. srv: argv with @PORT for a fresh TCP/CM port;
        cli: srv plus the server's address unless given. ready: the
        server's line, or 'tcp' (its TCP listen on @PORT, seen in its
        namespace), or None (the client is retried on cm.NOT_LISTENING
        only). again: a harness.Race on which both start again (twice at
        most). moved_on: a Race on which the client alone is not retried
        (the server has moved on, a new client would talk to it out of
        turn)."""
        print('=== %s' % name, flush=True)
        if cli is None:
            cli = list(srv) + [server_addr or self.addr]

        def attempt():
            port = h.free_tcp_port()
            srv1 = [x.replace('@PORT', str(port)) for x in srv]
            cli1 = [x.replace('@PORT', str(port)) for x in cli]
            return cm.pair(self.cmd('a', srv1), self.cmd('b', cli1), dict(os.environ),
                           ready=port if ready == 'tcp' else ready, timeout=TIMEOUT,
                           moved_on=moved_on)
        ok, out, sout = h.retry(attempt, (again,) if again else (), 2, name)
        if not ok:
            raise Fail(name)
        return out, sout

    def perftest(self, prog, args, cm_addr=None):
        """perftest over TCP (or rdma_cm with cm_addr): both exit 0 and the
        client prints its result line."""
        base = [prog, '-d', 'uroce0', '-F', '-p', '@PORT'] + args
        if cm_addr:
            base += ['-R']
        # -R: perftest's second connection (the data QPs) races the
        # server's second listen by design (docs/cm.md, "perftest -R"):
        # the client rejected there has lost its server, which now waits
        # for the data connection. Retrying that client alone made its
        # *control* connection the server's *data* connection, and its
        # first hand-shake SEND then met a QP with no receive posted:
        # RNR NAKs until the test's timeout (perftest retries RNR for
        # ever). Both start again instead, as tests/cm/cm.py does; the
        # client pauses before each connect (the shim's test knob, as
        # tests/interop does) so that this stays rare: 3 runs in 10 lost
        # the race without it.
        cli = None
        if cm_addr:
            cli = cm.PERFTEST_CLIENT + base + [cm_addr]
        out, _ = self.pair(' '.join([prog] + args + (['-R'] if cm_addr else [])), base, cli,
                           ready='Waiting for client to connect' if cm_addr else 'tcp',
                           server_addr=cm_addr,
                           again=cm.PERFTEST_LATE_LISTEN if cm_addr else None,
                           moved_on=cm.PERFTEST_LATE_LISTEN if cm_addr else None)
        if not re.search(r'^\s*#bytes.*\n\s*\d+\s+\d+\s+[\d.]+', out, re.M):
            raise Fail('%s: no result line' % prog)

    def pingpong(self, prog, args):
        self.pair(' '.join([prog] + args), [prog, '-d', 'uroce0', '-e', '-c', '-p', '@PORT'] + args,
                  ready='tcp')

    def rping(self, size, count, addr):
        base = ['-a', addr, '-p', '@PORT', '-C', str(count), '-S', str(size), '-V', '-v']
        out, sout = self.pair('rping %d x %d' % (size, count), ['rping', '-s'] + base,
                              ['rping', '-c'] + base)
        if sout.count('ping data') < count:
            raise Fail('rping: the server saw %d pings' % sout.count('ping data'))


    def ucmatose(self, addr, conns=2, count=10):
        """Several connections at once; every message checked by ucmatose.
        It prints "starting server" before it listens: a client whose first
        REQs came before the listen (REJECTED 8) and the rest after gives
        up, and the server then cannot accept those (EINVAL, as with the
        kernel): both start again (tests/cm/cm.py does the same)."""
        base = ['-p', '@PORT', '-c', str(conns), '-C', str(count)]
        out, sout = self.pair('ucmatose -c %d' % conns, ['ucmatose', '-b', addr] + base,
                              ['ucmatose', '-s', addr] + base, again=cm.UCMATOSE_SPLIT)
        for who, o in (('client', out), ('server', sout)):
            if 'return status 0' not in o or 'test complete' not in o:
                raise Fail('ucmatose: the %s did not complete' % who)


def need(*progs):
    import shutil
    missing = [p for p in progs if not shutil.which(p)]
    if missing:
        raise Skip('not installed: ' + ' '.join(missing))


def check_port(rig, s, min_roce, v6=True):
    """Traffic crossed, nothing was corrupted, the daemon resolved its
    peer itself (ARP, and ND when IPv6 was used)."""
    port, _ = rig.stats(s)
    print('[%s] %s' % (s, {k: v for k, v in port.items() if v}))
    bad = []
    if port.get('rx_roce', 0) < min_roce:
        bad.append('rx_roce %d < %d' % (port.get('rx_roce', 0), min_roce))
    for k in ('icrc_errors', 'drop.icrc', 'drop.parse'):
        if port.get(k, 0):
            bad.append('%s %d' % (k, port[k]))
    if port.get('tx_arp', 0) + port.get('rx_arp', 0) == 0:
        bad.append('no ARP')
    if v6 and port.get('tx_nd', 0) + port.get('rx_nd', 0) == 0:
        bad.append('no ND')
    if bad:
        raise Fail('[%s] counters: %s' % (s, ', '.join(bad)))
    return port


VERBS_PROGS = ('ibv_rc_pingpong', 'ibv_uc_pingpong', 'ibv_ud_pingpong', 'ibv_srq_pingpong',
               'ib_write_bw', 'ib_read_bw', 'ib_send_bw', 'ib_atomic_bw', 'ib_write_lat',
               'ib_send_lat', 'ib_read_lat', 'ib_atomic_lat', 'rping', 'ucmatose')


SLEEPS = re.compile(r'uroce0: engine sleeps (\d+), of them to poll RX (\d+)')


def engine_sleeps(rig, s):
    """(sleeps, sleeps that ended to poll RX) of s's engine: SIGUSR1 makes
    the daemon log its counters (waking it once); the new line is waited
    for while the daemon lives."""
    before = len(SLEEPS.findall(rig.log(s)))
    rig.daemons[s].send_signal(signal.SIGUSR1)
    if not h.wait_until(lambda: len(SLEEPS.findall(rig.log(s))) > before,
                        lambda: rig.daemons[s].poll() is None, 60):
        raise Fail('[%s] uroced logged no engine counters after SIGUSR1' % s)
    return tuple(int(x) for x in SLEEPS.findall(rig.log(s))[-1])


IDLE_ROUNDS = 10


def check_idle(rig):
    """Idle daemons on af_packet or af_xdp sleep until a frame comes
    (their port's RX socket in the engine's epoll, port_wake.c): none of
    their sleeps ends to poll RX, where polling made ~800 wake-ups a
    second. Counted by the daemon over IDLE_ROUNDS sleeps (each SIGUSR1
    ends one), not timed."""
    for s in 'ab':
        # logged after "serving on" (the socket the rig waits for): a
        # daemon slow to get a core logs it later (seen at load 12)
        if not h.wait_until(lambda: 'rx wake-up: 1 kernel socket(s)' in rig.log(s),
                            lambda: rig.daemons[s].poll() is None, 60):
            raise Fail('[%s] the port\'s RX socket is not in the engine\'s epoll' % s)
    for s in 'ab':
        s0, p0 = engine_sleeps(rig, s)
        for _ in range(IDLE_ROUNDS):
            s1, p1 = engine_sleeps(rig, s)
        print('[%s] idle: %d engine sleeps, %d of them to poll RX' % (s, s1 - s0, p1 - p0))
        if s1 - s0 < IDLE_ROUNDS:
            raise Fail('[%s] the engine slept %d times in %d rounds' % (s, s1 - s0, IDLE_ROUNDS))
        if p1 != p0:
            raise Fail('[%s] an idle daemon slept %d times only to poll RX' % (s, p1 - p0))


class Syscalls:
    """strace -c on both daemons (every thread): the system calls of
    SYSCALLS made while it runs, counted, not timed."""
    SYSCALLS = 'recvfrom,poll,sendto,sched_yield'

    def __init__(self, rig):
        self.rig, self.p, self.out = rig, {}, {}
        for s in 'ab':
            self.out[s] = os.path.join(rig.tmp, 'strace-%s.txt' % s)
            self.p[s] = subprocess.Popen(['strace', '-c', '-f', '-e', 'trace=' + self.SYSCALLS,
                                          '-o', self.out[s], '-p', str(rig.daemons[s].pid)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         text=True, start_new_session=True)
        for s in 'ab':
            # strace prints "Process N attached" once it traces the process
            line = self.p[s].stderr.readline()
            if 'attached' not in line:
                raise Fail('[%s] strace did not attach: %s' % (s, line.strip()))

    def stop(self):
        counts = {}
        for s in 'ab':
            self.p[s].send_signal(signal.SIGINT)
            try:
                self.p[s].communicate(timeout=60)
            except subprocess.TimeoutExpired:
                self.p[s].kill()
                self.p[s].wait()
                raise Fail('[%s] strace did not stop' % s)
            c = {}
            with open(self.out[s]) as f:
                for ln in f:
                    m = re.match(r'\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$', ln)
                    if m:
                        c[m.group(2)] = int(m.group(1))
            counts[s] = c
        return counts


def check_xdp_syscalls(rig, p):
    """An af_xdp daemon moving frames makes no recvfrom(): DPDK 22.11's
    default "preferred busy polling" (busy_budget 64) made one per RX
    burst that found the ring empty, 1.1-1.6 million per GB on a sender
    (uroced passes busy_budget=0; docs/performance.md, "CPU per byte over
    a link"). Counted with strace over 200 pingpong round trips."""
    sc = Syscalls(rig)
    try:
        p.pingpong('ibv_rc_pingpong', ['-g', '1', '-s', '4096', '-n', '200'])
    finally:
        counts = sc.stop()
    for s in 'ab':
        print('[%s] system calls during 200 round trips: %s' % (
            s, ', '.join('%s %d' % kv for kv in sorted(counts[s].items())) or 'none traced'))
        if not counts[s].get('sendto'):
            raise Fail('[%s] strace saw no sendto: the count is not of the daemon' % s)
        if counts[s].get('recvfrom'):
            raise Fail('[%s] %d recvfrom() while moving frames (busy polling on)' % (
                s, counts[s]['recvfrom']))


def case_xdp(rig, a):
    """af_xdp on both ends, MTU 1500: the whole data link is uroce's."""
    need(*VERBS_PROGS, 'strace')
    rig.up(mgmt=True)
    for s in 'ab':
        sh(*rig.nsx(s, ['sysctl', '-qw', 'net.ipv6.conf.ud0.disable_ipv6=1']))
        rig.start(s, 'net_af_xdp0,iface=ud0')
    check_idle(rig)
    p = Programs(rig, a.preload_first, MGMT['a'])
    check_xdp_syscalls(rig, p)
    p.pingpong('ibv_rc_pingpong', ['-g', '1', '-s', '65536', '-n', '20'])
    p.pingpong('ibv_rc_pingpong', ['-g', '2', '-s', '4096', '-n', '20'])
    p.pingpong('ibv_uc_pingpong', ['-g', '1', '-s', '4096', '-n', '20'])
    p.pingpong('ibv_ud_pingpong', ['-g', '2', '-s', '1024', '-n', '20'])
    p.pingpong('ibv_srq_pingpong', ['-g', '1', '-s', '4096', '-n', '20', '-q', '8'])
    # -t 4/8: perftest's default 128 outstanding 64 KB writes on 8 QPs
    # (65536 packets in flight) drown the veth in go-back-N retransmissions
    # until retries run out, on af_packet as on af_xdp (the transport has
    # no packet window yet); 8192 in flight did too, now and then
    p.perftest('ib_write_bw', ['-x', '1', '-s', '16384', '-n', '200', '-q', '8', '-t', '4'])
    p.perftest('ib_read_bw', ['-x', '2', '-s', '65536', '-n', '100'])
    p.perftest('ib_send_bw', ['-x', '1', '-s', '65536', '-n', '100', '-t', '8'])
    p.perftest('ib_atomic_bw', ['-x', '1', '-n', '100'])
    p.perftest('ib_write_lat', ['-x', '2', '-s', '64', '-n', '100'])
    p.perftest('ib_read_lat', ['-x', '1', '-s', '64', '-n', '100'])
    p.perftest('ib_send_lat', ['-x', '1', '-s', '64', '-n', '100'])
    p.perftest('ib_atomic_lat', ['-x', '1', '-n', '100'])
    # rdma_cm: the connection is made by the daemons' CM engines over the
    # data link, addressed by uroce's own IP
    p.rping(4096, 20, UIP['a'])
    p.ucmatose(UIP['a'])
    p.perftest('ib_write_bw', ['-s', '65536', '-n', '100', '-t', '8'], cm_addr=UIP['a'])
    for s in 'ab':
        check_port(rig, s, 2000)


def case_jumbo(rig, a):
    """af_packet on both ends, MTU 9000: ring and mbufs sized from --mtu."""
    need('ibv_rc_pingpong', 'ibv_uc_pingpong', 'ibv_ud_pingpong', 'ib_write_bw',
         'ib_read_bw', 'ib_send_lat', 'rping', 'ucmatose', 'ibv_devinfo')
    rig.up(mgmt=True)
    for s in 'ab':
        sh(*rig.nsx(s, ['sysctl', '-qw', 'net.ipv6.conf.ud0.disable_ipv6=1']))
        rig.start(s, 'net_af_packet0,iface=ud0', ['--mac', MAC[s]])
        m = re.search(r'mbuf data room (\d+).*af_packet ring (\d+) frames of (\d+) B '
                      r'in blocks of (\d+) B', rig.log(s))
        if not m:
            raise Fail('no port parameter line in the log:\n' + rig.log(s))
        room, cnt, fs, bs = (int(x) for x in m.groups())
        print('[%s] af_packet ring %d x %d B, blocks %d B, mbuf room %d' % (s, cnt, fs, bs, room))
        # a slot holds a 9018-byte frame behind the 80-byte TPACKET_V2
        # header, blocks are whole slots, mbufs take a slot (less 32)
        if fs < 9000 + 18 + 80 or bs % fs or room < fs - 32 or cnt < 512:
            raise Fail('af_packet parameters do not fit MTU 9000')
    check_idle(rig)
    p = Programs(rig, a.preload_first, MGMT['a'])
    r = subprocess.run(p.cmd('a', ['ibv_devinfo', '-d', 'uroce0']), capture_output=True,
                       text=True, timeout=30)
    if not re.search(r'active_mtu:\s*4096', r.stdout):
        raise Fail('active MTU is not 4096:\n' + r.stdout + r.stderr)
    p.pingpong('ibv_rc_pingpong', ['-g', '1', '-m', '4096', '-s', '65536', '-n', '20'])
    p.pingpong('ibv_rc_pingpong', ['-g', '2', '-m', '4096', '-s', '65536', '-n', '10'])
    p.pingpong('ibv_uc_pingpong', ['-g', '1', '-m', '4096', '-s', '65536', '-n', '10'])
    p.pingpong('ibv_ud_pingpong', ['-g', '2', '-s', '4096', '-n', '20'])
    p.perftest('ib_write_bw', ['-x', '1', '-s', '65536', '-n', '200', '-q', '8', '-t', '4'])
    p.perftest('ib_read_bw', ['-x', '2', '-s', '65536', '-n', '100'])
    p.perftest('ib_send_lat', ['-x', '1', '-s', '4096', '-n', '100'])
    p.rping(32768, 10, UIP6['a'])
    p.ucmatose(UIP6['a'])
    for s in 'ab':
        check_port(rig, s, 500)


# frames that reach a's interface while a's engine is stopped: more than
# its 16 ring slots
OVERLOAD_FRAMES = 48


def rx_packets(pid, dev='ud0'):
    """The kernel's receive count of dev in pid's network namespace (read
    from /proc: instant, whatever the build's speed)."""
    with open('/proc/%d/net/dev' % pid) as f:
        for ln in f:
            if ln.strip().startswith(dev + ':'):
                return int(ln.split(':', 1)[1].split()[1])
    raise Fail('no %s in /proc/%d/net/dev' % (dev, pid))


def case_overload(rig, a):
    """The receiver's af_packet ring cut to 16 slots: the kernel drops
    what does not fit, RC retransmits, every byte checked. The drop is
    made certain, not left to timing: while ib_write_bw's window (2 x
    64 KB, 128 frames) is in flight, a's daemon is stopped (SIGSTOP) until
    OVERLOAD_FRAMES more frames have reached a's interface (the kernel's
    count), which its ring cannot hold; then it goes on (SIGCONT). The
    pause is that short (a /proc read, not a poll of the daemons) so that
    the sender's RC retry budget outlasts it."""
    need('ibv_rc_pingpong', 'ib_write_bw')
    rig.up(mgmt=True)
    for s in 'ab':
        sh(*rig.nsx(s, ['sysctl', '-qw', 'net.ipv6.conf.ud0.disable_ipv6=1']))
        rig.start(s, 'net_af_packet0,iface=ud0' + (',framecnt=16' if s == 'a' else ''),
                  ['--mac', MAC[s]])
    p = Programs(rig, a.preload_first, MGMT['a'])
    # QP counters live as long as their QP: watch them while it runs
    seen = {'retransmits': 0, 'seq_naks_sent': 0, 'timeouts': 0}
    frz = {'armed': False, 'rx0': None, 'arrived': 0, 'done': False}
    done = threading.Event()
    da = rig.daemons['a']

    def qp_counters(s):
        try:
            port, qps = rig.stats(s)
        except (subprocess.SubprocessError, OSError):
            return None
        for q in qps:
            for k in seen:
                seen[k] = max(seen[k], q.get(k, 0))
        return port

    def freeze():
        rx0 = rx_packets(da.pid)
        da.send_signal(signal.SIGSTOP)
        try:
            end = time.monotonic() + 30    # a last bound: b stopped sending
            while rx_packets(da.pid) - rx0 < OVERLOAD_FRAMES and time.monotonic() < end:
                time.sleep(0.001)
        finally:
            frz['arrived'] = rx_packets(da.pid) - rx0
            da.send_signal(signal.SIGCONT)
        frz['done'] = True

    def watch():
        while not done.is_set():
            qp_counters('a')
            qp_counters('b')
            done.wait(0.05)

    def trigger():
        # The data phase is seen on a's interface (the kernel's count: ud0
        # carries only RoCE, perftest's own exchange goes over the mgmt
        # link), polled every millisecond: a transfer of 25600 frames
        # cannot end unnoticed. (Judged from uroce-ctl's rx_roce, one
        # poll of both daemons per turn took seconds under ASan: the
        # freeze came after the last frame, and nothing arrived.)
        base = None
        while not done.is_set() and not frz['done']:
            if frz['armed']:
                rx = rx_packets(da.pid)
                base = rx if base is None else base
                if rx - base >= 100:                   # the window is in flight
                    freeze()
                    return
            time.sleep(0.001)
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    tf = threading.Thread(target=trigger, daemon=True)
    tf.start()
    try:
        p.pingpong('ibv_rc_pingpong', ['-g', '1', '-s', '65536', '-n', '40'])
        # a window of 2 x 64 KB (128 packets) into 16 ring slots
        frz['armed'] = True
        p.perftest('ib_write_bw', ['-x', '1', '-s', '65536', '-n', '400', '-t', '2'])
    finally:
        done.set()
        t.join(60)
        tf.join(60)
        da.send_signal(signal.SIGCONT)           # whatever happened: never left stopped
        print('a stopped while %d frames reached its 16 ring slots; QP counters seen '
              '(max): %s' % (frz['arrived'], seen))
    if not frz['done']:
        raise Fail('the transfer ended before a could be stopped under it')
    if frz['arrived'] < OVERLOAD_FRAMES:
        raise Fail('only %d frames reached a while it was stopped' % frz['arrived'])
    if seen['retransmits'] == 0:
        raise Fail('%d frames into 16 ring slots, and no retransmission' % frz['arrived'])
    check_port(rig, 'a', 1000, v6=False)


def kernel_counters(rig, s):
    """The namespace's kernel IP counters (/proc/net/snmp, snmp6)."""
    out = {}
    for f in ('snmp', 'snmp6'):
        txt = sh(*rig.nsx(s, ['cat', '/proc/net/' + f])).stdout.splitlines()
        if f == 'snmp':
            for hd, v in zip(txt[::2], txt[1::2]):
                for k, x in zip(hd.split()[1:], v.split()[1:]):
                    out[hd.split(':')[0] + k] = int(x)
        else:
            out.update({ln.split()[0]: int(ln.split()[1]) for ln in txt if ln.split()})
    return out


def kside(rig, s, *args):
    return rig.nsx(s, [sys.executable, os.path.join(HERE, 'kside.py')] + [str(x) for x in args])


def shared_negative(rig):
    """libxdp's default program takes every frame of the link: the
    kernels' TCP across it fails. Proves the shared case can tell."""
    for s in 'ab':
        rig.start(s, 'net_af_xdp0,iface=ud0', tag='-default')
    srv = subprocess.Popen(kside(rig, 'a', 'serve', UIP['a'], 18599),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        r = subprocess.run(kside(rig, 'b', 'connect', UIP['a'], 18599, 3),
                           capture_output=True, text=True, timeout=30)
    finally:
        srv.kill()
        srv.wait()
    print('negative (default XDP program): %s' % (r.stdout.strip() or 'connected'))
    if r.returncode == 0:
        raise Fail('TCP crossed the link under the default XDP program: the '
                   'shared case could not tell whether steering works')
    rig.stop()
    rig.daemons.clear()


def case_shared(rig, a):
    """--shared on both ends of one veth pair the kernels keep using."""
    need('ibv_rc_pingpong', 'ib_write_bw', 'rping')
    if not os.path.exists(os.path.join(rig.build, 'emu', 'uroce_xdp.o')):
        raise Skip('uroced was built without its XDP program (clang, libbpf-dev)')
    rig.up(mgmt=False)
    for s in 'ab':
        sh(*rig.nsx(s, ['ip', 'addr', 'add', UIP[s] + '/24', 'dev', 'ud0']))
        sh(*rig.nsx(s, ['ip', 'addr', 'add', ROUTED[s] + '/32', 'dev', 'ud0']))
        sh(*rig.nsx(s, ['ip', 'addr', 'add', UIP6[s] + '/64', 'dev', 'ud0', 'nodad']))
        o = other(s)
        sh(*rig.nsx(s, ['ip', 'route', 'add', ROUTED[o].rsplit('.', 1)[0] + '.0/24',
                        'via', UIP[o], 'dev', 'ud0']))
    shared_negative(rig)
    for s in 'ab':
        # no --ip, --mac or --mtu: the interface's own
        rig.start(s, 'net_af_xdp0,iface=ud0', ['--shared'], ips=False, tag='-shared')
        # the GID lines follow the socket's in the log
        end = time.monotonic() + 10
        while 'mac ' not in rig.log(s) and time.monotonic() < end:
            time.sleep(0.05)
        # GID 1.. are the interface's IPv4 then IPv6 addresses
        for g in ('gid 1 ::ffff:' + UIP[s], 'gid 2 ::ffff:' + ROUTED[s], 'gid 3 ' + UIP6[s]):
            if g not in rig.log(s):
                raise Fail('[%s] %r not in the log: GIDs are not the interface\'s' % (s, g))
    k0 = {s: kernel_counters(rig, s) for s in 'ab'}
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    print('TCP stream seed', seed)
    stopfile = os.path.join(rig.tmp, 'stop-stream')
    srv = subprocess.Popen(kside(rig, 'a', 'serve', UIP['a'], 18598),
                           stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    cli = subprocess.Popen(kside(rig, 'b', 'stream', UIP['a'], 18598, seed, stopfile),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        p = Programs(rig, a.preload_first, UIP['a'])
        # IPv6 first: nothing has resolved fd88:: yet, so the daemon makes
        # its kernel resolve it (RTM_NEWNEIGH NTF_USE)
        for s in 'ab':
            if sh(*rig.nsx(s, ['ip', '-6', 'neigh', 'show', 'dev', 'ud0', 'to', UIP6[other(s)]])
                  ).stdout.strip():
                raise Fail('[%s] the kernel knew %s before uroce asked' % (s, UIP6[other(s)]))
        p.pingpong('ibv_rc_pingpong', ['-g', '3', '-s', '4096', '-n', '20'])
        for s in 'ab':
            n6 = sh(*rig.nsx(s, ['ip', '-6', 'neigh', 'show', 'dev', 'ud0', 'to',
                                 UIP6[other(s)]])).stdout.strip()
            print('[%s] kernel neighbour after the IPv6 pingpong: %s' % (s, n6))
            if 'lladdr' not in n6:
                raise Fail('[%s] the kernel did not resolve %s for uroce' % (s, UIP6[other(s)]))
        p.pingpong('ibv_rc_pingpong', ['-g', '1', '-s', '65536', '-n', '20'])
        # each peer's second address is behind a gateway: the next hop's
        # MAC comes from the kernel's route (RTM_GETROUTE's RTA_GATEWAY)
        p.pingpong('ibv_rc_pingpong', ['-g', '2', '-s', '4096', '-n', '10'])
        for s in 'ab':
            # the kernel would answer ARP for it too: only the absence of a
            # neighbour entry shows the daemon asked for the gateway's MAC
            n = sh(*rig.nsx(s, ['ip', 'neigh', 'show', 'dev', 'ud0', 'to', ROUTED[other(s)]]))
            if n.stdout.strip():
                raise Fail('[%s] %s was resolved on-link, not through its gateway: %s'
                           % (s, ROUTED[other(s)], n.stdout.strip()))
        # GID 0, fe80:: from the MAC: the kernels' own link-local addresses
        p.pingpong('ibv_rc_pingpong', ['-g', '0', '-s', '4096', '-n', '10'])
        p.perftest('ib_write_bw', ['-x', '1', '-s', '16384', '-n', '200', '-q', '4', '-t', '4'])
        # rdma_cm: its MADs are RoCEv2 too (QP1), addressed by the kernel's IP
        p.rping(4096, 10, UIP6['a'])
        for addr in (UIP['a'], UIP6['a']):
            r = subprocess.run(kside(rig, 'b', 'ping', addr, 3), capture_output=True,
                               text=True, timeout=30)
            print(r.stdout.strip())
            if r.returncode:
                raise Fail('ping %s across the shared link failed' % addr)
        if cli.poll() is not None:
            raise Fail('the TCP stream ended while RDMA ran: ' + cli.stdout.read())
    finally:
        open(stopfile, 'w').close()
        try:
            out, _ = cli.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            cli.kill()
            out, _ = cli.communicate()
        srv.kill()
        srv.wait()
    print(out.strip())
    m = re.search(r'stream ok (\d+) (\d+)', out)
    if cli.returncode or not m or int(m.group(2)) < 20:
        raise Fail('the TCP stream over the shared link failed: ' + out.strip())
    k1 = {s: kernel_counters(rig, s) for s in 'ab'}
    d = {s: {k: k1[s].get(k, 0) - k0[s].get(k, 0) for k in k1[s]} for s in 'ab'}
    for s in 'ab':
        port, _ = rig.stats(s)
        print('[%s] uroce %s' % (s, {k: v for k, v in port.items() if v}))
        print('[%s] kernel Tcp in/out %d/%d, Udp in/noports %d/%d, Udp6 in/noports %d/%d' % (
            s, d[s]['TcpInSegs'], d[s]['TcpOutSegs'], d[s]['UdpInDatagrams'],
            d[s]['UdpNoPorts'], d[s]['Udp6InDatagrams'], d[s]['Udp6NoPorts']))
        bad = []
        if port.get('rx_roce', 0) < 1000:
            bad.append('uroce rx_roce %d < 1000' % port.get('rx_roce', 0))
        # the kernel answers ARP/ND/ICMP; nothing but RoCE reaches uroce
        for k in ('tx_arp', 'rx_arp', 'tx_nd', 'rx_nd', 'tx_icmp', 'rx_icmp',
                  'drop.not-roce', 'drop.parse', 'icrc_errors'):
            if port.get(k, 0):
                bad.append('uroce %s %d' % (k, port[k]))
        if d[s]['TcpInSegs'] < int(m.group(2)) or d[s]['TcpOutSegs'] < int(m.group(2)):
            bad.append('kernel TCP segments %d/%d < %s chunks' % (
                d[s]['TcpInSegs'], d[s]['TcpOutSegs'], m.group(2)))
        # a RoCE frame the kernel got would be a UDP datagram to port 4791
        roce_k = sum(d[s][k] for k in ('UdpInDatagrams', 'UdpNoPorts', 'UdpInErrors',
                                        'Udp6InDatagrams', 'Udp6NoPorts', 'Udp6InErrors'))
        if roce_k > 10:
            bad.append('the kernel received %d UDP datagrams (RoCE leaked to it?)' % roce_k)
        if bad:
            raise Fail('[%s] %s' % (s, ', '.join(bad)))
    probe_steering(rig)
    reject_other_interface(rig, a)
    rig.stop()
    rig.daemons.clear()
    for s in 'ab':
        if 'xdp' in sh(*rig.nsx(s, ['ip', 'link', 'show', 'ud0'])).stdout:
            raise Fail('[%s] the XDP program stayed on ud0 after uroced stopped' % s)


def probe_steering(rig):
    """One raw frame of each kind from b to a (kside.py FRAMES): uroce
    receives exactly the three RoCEv2 ones (IPv4, IPv6, VLAN-tagged IPv4);
    the kernel gets UDP to another port and the IPv4 and IPv6 fragments
    of a datagram to 4791 (its reassembly counters)."""
    mac = re.search(r'link/ether (\S+)', sh(*rig.nsx('a', ['ip', 'link', 'show', 'ud0'])).stdout)
    port0, _ = rig.stats('a')
    k0 = kernel_counters(rig, 'a')
    r = subprocess.run(kside(rig, 'b', 'frames', 'ud0', mac.group(1), UIP['b'], UIP['a'],
                             UIP6['b'], UIP6['a']), capture_output=True, text=True, timeout=30)
    if r.returncode:
        raise Fail('raw frames: ' + r.stdout + r.stderr)
    want = {'IpReasmReqds': 1, 'Ip6ReasmReqds': 1, 'UdpNoPorts': 1}
    end = time.monotonic() + 10
    while True:
        port1, _ = rig.stats('a')
        k1 = kernel_counters(rig, 'a')
        got = port1.get('rx_pkts', 0) - port0.get('rx_pkts', 0)
        kd = {k: k1.get(k, 0) - k0.get(k, 0) for k in want}
        if (got >= 3 and all(kd[k] >= n for k, n in want.items())) or time.monotonic() > end:
            break
        time.sleep(0.1)
    print('steering probe: uroce received %d of the 6 frames, kernel %s' % (got, kd))
    if got != 3 or any(kd[k] < n for k, n in want.items()):
        raise Fail('XDP steering: uroce got %d frames (want the 3 RoCEv2 ones), kernel %s '
                   '(want %s)' % (got, kd, want))


AH_OTHER_IF = """
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
ctx = Context(name='uroce0')
pd = PD(ctx)
gid = GID('0000:0000:0000:0000:0000:ffff:0a37:0001')  # 10.55.0.1
AH(pd, attr=AHAttr(gr=GlobalRoute(dgid=gid, sgid_index=1), is_global=1, port_num=1))
print('ah created')
"""


def reject_other_interface(rig, a):
    """A peer the kernel routes through another interface (here lo) is
    refused by the daemon with one clear log line, nothing sent for it."""
    py = '/usr/bin/python3'
    if subprocess.run([py, '-c', 'import pyverbs'], capture_output=True).returncode:
        # the rest of the case runs; the test then skips (77), not passes
        rig.partial.append('no pyverbs for /usr/bin/python3: other-interface check not run')
        return
    sh(*rig.nsx('b', ['ip', 'route', 'add', '10.55.0.0/24', 'dev', 'lo']))
    port0, _ = rig.stats('b')
    p = Programs(rig, a.preload_first, UIP['a'])
    r = subprocess.run(p.cmd('b', [py, '-c', AH_OTHER_IF]), capture_output=True, text=True,
                       timeout=30)
    print(r.stdout.strip(), r.stderr.strip()[-500:])
    want = '::ffff:10.55.0.1 is routed through another interface than ud0'
    end = time.monotonic() + 10
    while want not in rig.log('b') and time.monotonic() < end:
        time.sleep(0.1)
    port1, _ = rig.stats('b')
    if r.returncode or want not in rig.log('b'):
        raise Fail('a peer behind another interface was not refused with %r' % want)
    if port1.get('tx_pkts', 0) != port0.get('tx_pkts', 0):
        raise Fail('uroce sent %d frames for a peer it cannot reach'
                   % (port1.get('tx_pkts', 0) - port0.get('tx_pkts', 0)))


def other(s):
    return 'b' if s == 'a' else 'a'


def case_dcqcn(rig, a):
    """Two flows through a marking bottleneck, DCQCN on, then off."""
    import bottleneck  # noqa: E402  (tests/net/bottleneck.py)
    bottleneck.case(sys.modules[__name__], rig, a)


CASES = {'xdp': (case_xdp, 1500), 'jumbo': (case_jumbo, 9000),
         'overload': (case_overload, 1500), 'shared': (case_shared, 1500),
         'dcqcn': (case_dcqcn, 1500)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', required=True)
    ap.add_argument('--preload-first', default='')
    ap.add_argument('--seed', type=int, default=None)
    ap.add_argument('--csv', help='dcqcn: the series into CSV-on.csv and CSV-off.csv')
    ap.add_argument('case', choices=sorted(CASES))
    a = ap.parse_args()
    # meson's timeout (and ^C) end the run through the finally below
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(1))
    if os.geteuid() != 0:
        print('SKIP: needs root (network namespaces, AF_PACKET/AF_XDP)')
        return 77
    fn, mtu = CASES[a.case]
    stale_cleanup()
    rig = Rig(a.case, os.path.abspath(a.build), mtu)
    t0 = time.monotonic()
    try:
        fn(rig, a)
        if rig.daemons:
            rig.stop()
        if rig.partial:
            print('SKIP: part of the case did not run: ' + '; '.join(rig.partial))
            return 77
    except Skip as e:
        if rig.daemons:
            rig.stop()      # a daemon that faulted before the skip fails the test
        print('SKIP:', e)
        return 77
    except Fail as e:
        print('FAIL:', e)
        for s in rig.logs:
            print('--- uroced %s ---\n%s' % (s, rig.log(s)[-4000:]))
        return 1
    finally:
        rig.down()
    print('ok (%.1f s)' % (time.monotonic() - t0))
    return 0


if __name__ == '__main__':
    sys.exit(main())
