#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""UD under load (issue 22): a UD datagram is lost only where a real HCA
loses it, for want of a posted receive, and that loss is counted
(xport_drop.ud-no-recv); every datagram sent is accounted for.

  udload.py --build BUILD --prog UD_FLOOD [--preload-first LIB] CASE

CASE
  xdp      two hosts (namespaces on a veth pair, MTU 1500), a uroced on
           each end with `net_af_xdp0,iface=e0 --shared`
  packet   the same with `net_af_packet0` ports
  nobuf    one loopback uroced with 64 mbufs: the sender meets no mbuf
           (drop.tx-nobuf) and must wait (back-pressure), never drop a
           datagram its send queue accepted
  incastxdp, incastpacket
           four hosts on a bridge (af_xdp --shared, af_packet), the other
           three flooding the first one's device at once (3 x N datagrams,
           a QP each, N receives posted each; on af_packet 3 x INCAST_PKT,
           what its ring holds): every datagram delivered, or (af_xdp
           only) lost at the receiving port and counted there (its fill
           ring: 2048 frames, DPDK's)
  self     both QPs on one af_packet port, 8192 sends kept posted: the
           datagrams to the device's own MAC go through the port's self
           ring (port_dpdk.c), which must hold every frame the sender can
           have out (a real HCA's loopback loses nothing)

Each case runs ud_flood.c twice: N datagrams of 1 KiB as fast as the send
queue takes them to a QP with N receives posted (all N must arrive), then
to one with N/8 posted (exactly N/8 arrive, the other 7N/8 are counted
xport_drop.ud-no-recv by the receiving daemon). Every delivered datagram is
checked byte for byte and must be unique. The harness waits until the
receiving daemon accounted for all N (received as RoCE, or lost at its
port and counted there) before it tells the program to stop polling. The
two daemons share one run directory (uroce0 sends, uroce1 receives). Exit 0
pass, 77 skip, else fail.

For measurements, UDLOAD_ARGS adds uroced options to every daemon and
UDLOAD_RCV_ARGS to the first host's (an incast's receiver); an incast prints the
daemons' DCQCN totals (CNPs sent and received, rate cuts)."""
import argparse
import os
import re
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, HERE)
import harness  # noqa: E402  (tests/lib/harness.py)
import link  # noqa: E402  (tests/net/link.py: hosts, daemons, counters)
from link import Fail, Skip, sh  # noqa: E402

N = 8192
SIZE = 1024
SEED = 22
SETTLE = 60.0
STALL_N = 6000      # > DPDK's 2048-frame fill ring, < uroced's 8192
INCAST_PKT = 2560   # x 3 senders: 7680 frames, within af_packet's 8192-frame ring
DRAIN = 30.0


class UdNet(link.Net):
    """link.Net whose hosts may hold a device other than uroce0 in a
    shared run directory: uroce-ctl asked with -d."""

    def __init__(self, *args):
        super().__init__(*args)
        self.dev = {}

    def ctl(self, h, args, json_out=False):
        return super().ctl(h, ['-d', self.dev.get(h, 'uroce0')] + list(args), json_out)

    def counters(self, h):
        """The port's counters from the human form alone: link.Net's
        comparison with --json holds only while nothing moves them, and
        these are read during floods."""
        c = {}
        for ln in self.ctl(h, ['counters']).splitlines():
            if ln.startswith('qp '):
                break
            f = ln.split()
            if len(f) == 2 and f[1].isdigit():
                c[f[0]] = int(f[1])
        return c, None


def start_dev(net, h, i, kind, more=()):
    """uroce<i-1> in host h on its e0 (address 10.93.0.<i>), in the run
    directory h was given."""
    dev = net.dev[h] = 'uroce%d' % (i - 1)
    if kind == 'xdp':
        sh(*net.nsx(h, ['ip', 'addr', 'add', '10.93.0.%d/24' % i, 'dev', 'e0']))
        args = ['--port', 'net_af_xdp0,iface=e0', '--shared']
    else:
        args = ['--port', 'net_af_packet0,iface=e0', '--ip', '10.93.0.%d' % i,
                '--mac', '02:00:00:93:00:%02x' % i, '--mtu', '1500']
    # measurements by hand (docs/performance.md, "UD incast on af_xdp"):
    # more uroced options for every daemon / for the first host's only
    # (an incast's receiver, a pair's sender)
    extra = os.environ.get('UDLOAD_ARGS', '').split()
    if i == 1:
        extra += os.environ.get('UDLOAD_RCV_ARGS', '').split()
    d = net.start(h, ['--dev', dev] + args + list(more) + extra)
    # net.start waited for uroce0's socket
    if not harness.wait_socket(os.path.join(net.run_dir[h], dev + '.sock'), d):
        raise Fail('%s did not start:\n%s' % (dev, net.log(h)))


def start_pair(net, kind, more=()):
    """uroce0 (sender) in a, uroce1 (receiver) in b, one run directory."""
    net.host('a')
    net.host('b')
    net.veth('a', 'e0', 'b', 'e0', 1500, '02:00:00:93:00:01', '02:00:00:93:00:02')
    net.run_dir['b'] = net.run_dir['a']
    for h, i in (('a', 1), ('b', 2)):
        start_dev(net, h, i, kind, more)
    return 'a', 'b'


def start_bridge(net, kind, nh):
    """nh hosts on one bridge (in host 'br'), uroce<i-1> in host h<i>, one
    run directory."""
    br = net.host('br')
    sh('ip', '-n', br, 'link', 'add', 'br0', 'type', 'bridge')
    sh('ip', '-n', br, 'link', 'set', 'br0', 'up')
    hosts = []
    for i in range(1, nh + 1):
        h = 'h%d' % i
        net.host(h)
        net.veth(h, 'e0', 'br', 'p%d' % i, 1500, '02:00:00:93:00:%02x' % i, None)
        sh('ip', '-n', br, 'link', 'set', 'p%d' % i, 'master', 'br0')
        net.run_dir[h] = net.run_dir['br']
        start_dev(net, h, i, kind)
        hosts.append(h)
    return hosts


def drops(c0, c1):
    """Every drop counter that moved: {name: delta}. xport_drop.* are the
    device's transport discards, kept after the QP that met them is gone
    (qps.* sum the live QPs and the retired ones' named counters)."""
    out = {}
    for k, v in c1.items():
        if k.startswith(('drop.', 'link.', 'xport_drop.')):
            d = v - c0.get(k, 0)
            if d:
                out[k] = d
    return out


NO_RECV = 'xport_drop.ud-no-recv'
# a frame lost at the receiving port, each counted once (link.py): af_xdp's
# fill ring empty (in rx_dropped) or RX ring full, af_packet's ring full,
# the PMD without an mbuf
PORT_LOST = ('link.xdp-rx-dropped', 'link.xdp-rx-ring-full', 'link.pkt-ring-full',
             'link.rx-nombuf')


def port_lost(d):
    return sum(d.get(k, 0) for k in PORT_LOST)


def stop(p):
    """Tell ud_flood the daemon accounted for every datagram; it collects
    the completions still on their way to its ring until its receives are
    used up. Should one never come, stdin is closed after DRAIN seconds (a
    bound on a hang, the count is the verdict). Its output."""
    try:
        p.stdin.write('stop\n')
        p.stdin.flush()
        return p.communicate(timeout=DRAIN)[0]
    except subprocess.TimeoutExpired:
        p.stdin.close()
        return p.communicate(timeout=60)[0]
    except BrokenPipeError:
        return p.communicate(timeout=60)[0]


def prog_env(net, h):
    """ud_flood is ours, built with the sanitizer runtime when there is
    one: the shim alone is preloaded (a second runtime is refused)."""
    return dict({k: v for k, v in os.environ.items() if k != 'LD_PRELOAD'},
                UROCE_RUN_DIR=net.run_dir[h],
                LD_PRELOAD=os.path.join(net.build, 'verbs', 'liburoce.so'))


def one_run(net, a, prog, snd, rcv, devs, gidx, rq, sq=128):
    env = prog_env(net, rcv)
    r0 = net.counters(rcv)[0]
    s0 = net.counters(snd)[0]
    cmd = [prog, devs[0], devs[1], str(gidx), str(N), str(rq), str(SIZE), str(SEED), str(sq)]
    print('+', ' '.join(cmd), flush=True)
    p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    head = []
    try:
        # "sent N" once every send completed (or the program's end)
        while True:
            line = p.stdout.readline()
            head.append(line)
            print(line.rstrip(), flush=True)
            if not line or line.startswith('sent'):
                break

        def accounted():
            c = net.counters(rcv)[0]
            arrived = c.get('rx_roce', 0) - r0.get('rx_roce', 0)
            return arrived + port_lost(drops(r0, c)) >= N
        # a loss no counter shows never settles: bounded, then judged below
        harness.wait_until(accounted, lambda: net.daemons[rcv].poll() is None, SETTLE, 0.1)
        out = ''.join(head) + stop(p)
    finally:
        if p.poll() is None:
            harness.kill_group(p)
    print(out.rstrip(), flush=True)
    r1, s1 = net.counters(rcv)[0], net.counters(snd)[0]
    rd, sd = drops(r0, r1), drops(s0, s1)
    arrived = r1.get('rx_roce', 0) - r0.get('rx_roce', 0)
    print('receiver: rx_roce %d, drops %s; sender: tx_pkts %d, drops %s' % (
        arrived, rd, s1.get('tx_pkts', 0) - s0.get('tx_pkts', 0), sd), flush=True)
    m = re.search(r'sent (\d+) received (\d+) dup (\d+) bad (\d+)', out)
    if p.returncode or not m:
        raise Fail('ud_flood (RQ %d): exit %s' % (rq, p.returncode))
    want = min(rq, N)
    got = int(m.group(2))
    nr = rd.get(NO_RECV, 0)
    # one daemon (nobuf): the sender's waits are in the receiver's counters
    other = {k: v for k, v in rd.items()
             if k != NO_RECV and (snd != rcv or k != 'drop.tx-nobuf')}
    # the sender may wait for mbufs (back-pressure), the rest is loss
    if snd != rcv:
        other.update({'sender ' + k: v for k, v in sd.items() if k != 'drop.tx-nobuf'})
    if got != want or nr != N - want or other:
        raise Fail('RQ %d: %d of %d datagrams delivered (want %d), %d counted ud-no-recv '
                   '(want %d), other drops %s' % (rq, got, N, want, nr, N - want, other))
    return sd.get('drop.tx-nobuf', 0)


def incast(net, a, hosts, rq):
    """Every other host floods the first one's device at once, a QP each."""
    rcv = hosts[0]
    env = prog_env(net, rcv)
    r0 = net.counters(rcv)[0]
    ps = []
    # af_packet: as many datagrams as the receiver's ring holds (8192
    # frames) whether or not its daemon runs meanwhile, so that "nothing
    # lost" is a fact, not a race: with 3 x 8192 the ring held the incast
    # only if the receiver drained it as fast as three senders filled it
    # (CI's ASan run lost 286 at the ring). af_xdp: the full flood.
    n = N if a.kind == 'incastxdp' else INCAST_PKT
    try:
        for h in hosts[1:]:
            cmd = [a.prog, net.dev[h], net.dev[rcv], '1', str(n), str(rq), str(SIZE),
                   str(SEED), '128']
            print('+', ' '.join(cmd), flush=True)
            ps.append(subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True, start_new_session=True))
        total = n * len(ps)

        def accounted():
            c = net.counters(rcv)[0]
            arrived = c.get('rx_roce', 0) - r0.get('rx_roce', 0)
            return arrived + port_lost(drops(r0, c)) >= total
        harness.wait_until(accounted, lambda: net.daemons[rcv].poll() is None, SETTLE * 2, 0.1)
        outs = [stop(p) for p in ps]
    finally:
        for p in ps:
            if p.poll() is None:
                harness.kill_group(p)
    r1 = net.counters(rcv)[0]
    rd = drops(r0, r1)
    # every daemon's CNPs sent and received and rate cuts (DCQCN)
    cc = {h: {k: v for k, v in net.counters(h)[0].items()
              if k in ('dcqcn.cnp_sent', 'dcqcn.cnp_rcvd', 'dcqcn.rate_cuts') and v}
          for h in hosts}
    print('dcqcn: %s' % cc, flush=True)
    got = 0
    for p, out in zip(ps, outs):
        print(out.rstrip(), flush=True)
        m = re.search(r'sent (\d+) received (\d+) dup (\d+) bad (\d+)', out)
        if p.returncode or not m:
            raise Fail('ud_flood exit %s' % p.returncode)
        got += int(m.group(2))
    print('incast: %d of %d delivered; receiver rx_roce %d, drops %s' % (
        got, total, r1.get('rx_roce', 0) - r0.get('rx_roce', 0), rd), flush=True)
    nr, lost = rd.get(NO_RECV, 0), port_lost(rd)
    other = {k: v for k, v in rd.items() if k != NO_RECV and not k.startswith('link.')}
    if got + nr + lost != total or other:
        raise Fail('incast: %d of %d delivered, %d ud-no-recv, %d lost at the port: %d '
                   'not accounted for; other drops %s' % (got, total, nr, lost,
                                                          total - got - nr - lost, other))
    # af_xdp's fill ring holds 8192 frames (uroced's own AF_XDP socket;
    # DPDK's PMD, --xdp-driver dpdk: 2048): a receiver off its core for
    # longer than 8192 take to arrive (3 x 8192 come) loses the rest
    # there, counted (docs/transport.md, "UD"), so the loss is accounted
    # for here, not forbidden; net_ud_stallxdp is the deterministic test
    # that a stall of 6000 loses none. af_packet's ring (8192 frames)
    # holds the whole incast of 3 x INCAST_PKT.
    if lost and a.kind != 'incastxdp':
        raise Fail('incast: %d datagrams lost at the port' % lost)


def if_rx_packets(net, h):
    """frames host h's e0 took from the wire: a veth with an XDP program
    counts every frame its NAPI ran the program on (redirected to the
    socket, dropped there or passed)"""
    r = sh(*net.nsx(h, ['cat', '/sys/class/net/e0/statistics/rx_packets']))
    return int(r.stdout.strip() or 0)


def stall(net, a):
    """The receiving daemon stopped while STALL_N datagrams reach its
    socket: what its fill ring holds is what survives."""
    dpdk = a.kind == 'stalldpdk'
    snd, rcv = start_pair(net, 'xdp', ['--xdp-driver', 'dpdk'] if dpdk else [])
    if not dpdk and "through uroced's own socket" not in net.log(rcv):
        raise Fail("the receiver's af_xdp port is not on uroced's own socket")
    env = dict(prog_env(net, rcv), UD_FLOOD_GO='1')
    r0 = net.counters(rcv)[0]
    cmd = [a.prog, 'uroce0', 'uroce1', '1', str(STALL_N), str(STALL_N), str(SIZE), str(SEED),
           '128']
    print('+', ' '.join(cmd), flush=True)
    p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    d = net.daemons[rcv]
    head = []
    try:
        line = p.stdout.readline()
        head.append(line)
        if not line.startswith('ready'):
            raise Fail('ud_flood did not get ready: %s%s' % (line, p.communicate(timeout=60)[0]))
        k0 = if_rx_packets(net, rcv)
        os.kill(d.pid, signal.SIGSTOP)
        try:
            p.stdin.write('go\n')
            p.stdin.flush()
            while True:  # "sent N": every send completed
                line = p.stdout.readline()
                head.append(line)
                if not line or line.startswith('sent'):
                    break
            if not line:
                raise Fail('ud_flood ended before its sends completed:\n' + ''.join(head))
            # the frames the sender's daemon put on the wire have all
            # reached the stopped receiver's interface (no clock: bounded
            # only against a hang, and judged below)
            harness.wait_until(lambda: if_rx_packets(net, rcv) - k0 >= STALL_N,
                               lambda: net.daemons[snd].poll() is None, SETTLE, 0.1)
            took = if_rx_packets(net, rcv) - k0
        finally:
            os.kill(d.pid, signal.SIGCONT)
        print('receiver stopped while its e0 took %d frames' % took, flush=True)
        if took < STALL_N:
            raise Fail('only %d of %d frames reached the stopped receiver' % (took, STALL_N))

        def accounted():
            c = net.counters(rcv)[0]
            return (c.get('rx_roce', 0) - r0.get('rx_roce', 0) +
                    port_lost(drops(r0, c)) >= STALL_N)
        harness.wait_until(accounted, lambda: d.poll() is None, SETTLE, 0.1)
        out = ''.join(head) + stop(p)
    finally:
        if p.poll() is None:
            harness.kill_group(p)
    print(out.rstrip(), flush=True)
    r1 = net.counters(rcv)[0]
    rd = drops(r0, r1)
    fill_empty = rd.get('link.xdp-fill-empty', 0)
    print('receiver: rx_roce %d, drops %s' % (r1.get('rx_roce', 0) - r0.get('rx_roce', 0), rd),
          flush=True)
    m = re.search(r'sent (\d+) received (\d+) dup (\d+) bad (\d+)', out)
    if p.returncode or not m:
        raise Fail('ud_flood: exit %s' % p.returncode)
    got, lost = int(m.group(2)), port_lost(rd)
    if dpdk:
        # DPDK 22.11's PMD: 2048 frames in the fill ring, the rest of the
        # stall lost there and counted (what uroced's socket fixes)
        if not lost or got + lost != STALL_N:
            raise Fail('--xdp-driver dpdk: %d delivered, %d lost at the port of %d: the PMD '
                       'was expected to lose (and count) what its 2048-frame fill ring '
                       'cannot hold' % (got, lost, STALL_N))
        print('dpdk: %d of %d lost at the port (fill ring), as expected' % (lost, STALL_N))
        return
    if got != STALL_N or fill_empty or rd:
        raise Fail('%d of %d datagrams delivered, xdp-fill-empty %d, drops %s: the fill ring '
                   'did not hold the stall' % (got, STALL_N, fill_empty, rd))
    # the XDP program goes with the daemon: stopped (SIGTERM, judged) or
    # killed (SIGKILL: the kernel drops its BPF link). DPDK's PMD left its
    # xsk_def_prog attached to the interface when killed.
    net.stop(rcv)
    kd = net.daemons.pop(snd)
    kd.kill()
    kd.wait(timeout=60)
    for h, how in ((rcv, 'stopped'), (snd, 'killed')):
        if not harness.wait_until(lambda: not xdp_attached(net, h), lambda: True, 30, 0.1):
            raise Fail('an XDP program is still attached to %s\'s e0 after its daemon %s:\n%s'
                       % (h, how, sh(*net.nsx(h, ['ip', 'link', 'show', 'e0'])).stdout))


def xdp_attached(net, h):
    """`ip link` shows an XDP program on host h's e0 (xdp, xdpgeneric,
    xdpdrv: "prog/xdp id N")"""
    out = sh(*net.nsx(h, ['ip', 'link', 'show', 'e0'])).stdout
    return re.search(r'prog/xdp|\bxdp(generic|drv|offload)?\b', out) is not None


def case(net, a):
    if not os.path.exists(a.prog):
        raise Skip('ud_flood was not built')
    if a.kind in ('xdp', 'stallxdp', 'stalldpdk', 'incastxdp') and not os.path.exists(os.path.join(net.build, 'emu', 'uroce_xdp.o')):
        raise Skip('uroced was built without its XDP program (clang, libbpf-dev)')
    sq = 128
    if a.kind.startswith('stall'):
        stall(net, a)
        return
    if a.kind.startswith('incast'):
        hosts = start_bridge(net, a.kind[6:], 4)
        incast(net, a, hosts, N)
        return
    if a.kind == 'nobuf':
        # both QPs on the one device: the frames leave and come back
        # through its ring port
        net.start('lo', ['--mbufs', '64'])
        snd, rcv, devs = 'lo', 'lo', ('uroce0', 'uroce0')
    elif a.kind == 'self':
        net.host('s')
        net.veth('s', 'e0', 's', 'e1', 1500, '02:00:00:93:00:01', '02:00:00:93:00:02')
        net.start('s', ['--port', 'net_af_packet0,iface=e0', '--ip', '10.93.0.1',
                        '--mac', '02:00:00:93:00:01', '--mtu', '1500'])
        snd, rcv, devs = 's', 's', ('uroce0', 'uroce0')
        sq = N
    else:
        snd, rcv = start_pair(net, a.kind)
        devs = ('uroce0', 'uroce1')
    waits = 0
    for rq in (N, N // 8):
        waits += one_run(net, a, a.prog, snd, rcv, devs, 1, rq, sq)
    if a.kind == 'nobuf' and not waits:
        raise Fail('64 mbufs and the sender never met drop.tx-nobuf: the case tests nothing')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', required=True)
    ap.add_argument('--prog', required=True)
    ap.add_argument('--preload-first', default='')
    ap.add_argument('kind', choices=['xdp', 'packet', 'nobuf', 'self', 'incastxdp', 'incastpacket',
                                     'stallxdp', 'stalldpdk'])
    a = ap.parse_args()
    return link.run_case(lambda: UdNet('ud' + a.kind, os.path.abspath(a.build)), case, a)


if __name__ == '__main__':
    sys.exit(main())
