#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Four hosts on one Ethernet bridge running Open MPI over UCX through
uroce (issue 22, "scale across hosts" and "UD under load").

  fourhost.py --build BUILD --prog MPI_PAIRS [--preload-first LIB]
              [--hosts N] [--max BYTES] KIND

KIND
  xdp      a uroced per host on its veth with `net_af_xdp0,iface=e0
           --shared` (the kernel keeps the interface: mpirun's own TCP
           crosses the same link, the daemons resolve through it)
  packet   a uroced per host on `net_af_packet0,iface=e0` answering for
           the kernel's address (the kernel's UDP 4791 dropped by
           iptables, as in docs/running.md)

Hosts are network namespaces (ulk-mpiKIND-PID-hN) whose veth ends meet on
a bridge in a fifth one (...-br). mpirun runs in h1 and starts its orted
in the others through a launcher script given as plm_rsh_agent (`ip netns
exec`, each host under its own UTS name and with its own UROCE_RUN_DIR).
The ranks (one per host, mpi_pairs.c) use pml ucx with
UCX_TLS=rc_verbs,ud_verbs on uroce0:1 only: a ping-pong between every
pair of ranks for sizes 1 B .. MAX with fresh buffers per message and
every byte checked, then an all-reduce checked. Asserted besides the
ranks' verdict: UCX put every endpoint on uroce0:1 (rc_verbs/ud_verbs
lanes), each daemon received and sent at least 1000 RoCE frames (its
counters), none refused a UD datagram (xport_drop.ud-invalid), and the
daemons stop cleanly (a crash, leak or sanitizer report fails). Every
drop counter that moved is printed: frames lost at a port are recovered
by RC's retransmission and UCX's own UD reliability, and counted
(docs/transport.md, "UD datagrams"). Fixed seed (--seed, default 22).
Exit 0 pass, 77 skip, else fail."""
import argparse
import os
import re
import stat
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, HERE)
import harness  # noqa: E402  (tests/lib/harness.py)
import link  # noqa: E402  (tests/net/link.py: hosts, daemons, counters)
from link import Fail, Skip, sh  # noqa: E402

SUBNET = '10.92.0.'
MPI_TIMEOUT = 420


def mac(n):
    return '02:00:00:92:00:%02x' % n


def build_net(net, kind, nh):
    """nh hosts, each with e0 on the bridge br0 of host 'br'."""
    br = net.host('br')
    sh('ip', '-n', br, 'link', 'add', 'br0', 'type', 'bridge')
    sh('ip', '-n', br, 'link', 'set', 'br0', 'up')
    hosts = ['h%d' % i for i in range(1, nh + 1)]
    for i, hn in enumerate(hosts, 1):
        net.host(hn)
        net.veth(hn, 'e0', 'br', 'p%d' % i, 1500, mac(i), None)
        sh('ip', '-n', br, 'link', 'set', 'p%d' % i, 'master', 'br0')
        sh(*net.nsx(hn, ['ip', 'addr', 'add', SUBNET + '%d/24' % i, 'dev', 'e0']))
        if kind == 'packet':
            # uroce answers for the kernel's address: the kernel must not
            # answer its RoCE with ICMP port unreachable
            sh(*net.nsx(hn, ['iptables', '-A', 'INPUT', '-p', 'udp', '--dport', '4791',
                             '-j', 'DROP']))
    return hosts


def start_daemons(net, kind, hosts):
    for i, hn in enumerate(hosts, 1):
        if kind == 'xdp':
            args = ['--port', 'net_af_xdp0,iface=e0', '--shared']
        else:
            args = ['--port', 'net_af_packet0,iface=e0', '--ip', SUBNET + str(i),
                    '--mac', mac(i), '--mtu', '1500']
        net.start(hn, args)


def launcher(net, hosts):
    """The rsh agent mpirun calls as `agent HOST CMD...`: CMD (a shell
    command line, as ssh would hand it to the remote shell) in HOST's
    namespace, under its own host name, with its daemon's run directory."""
    lines = ['#!/bin/sh', 'host=$1', 'shift', 'case $host in']
    for i, hn in enumerate(hosts, 1):
        lines.append('%s%d) ns=%s; h=%s; rd=%s;;' % (SUBNET, i, net.ns[hn], hn,
                                                   net.run_dir[hn]))
    lines += ['*) echo "agent: unknown host $host" >&2; exit 1;;', 'esac',
              'export UROCE_RUN_DIR="$rd"',
              'exec ip netns exec "$ns" unshare --uts /bin/sh -c '
              '\'hostname "$0"; exec /bin/sh -c "$*"\' "$h" "$@"', '']
    path = os.path.join(net.tmp, 'agent.sh')
    with open(path, 'w') as f:
        f.write('\n'.join(lines))
    os.chmod(path, stat.S_IRWXU)
    return path


def port_counters(net, hn):
    c, _ = net.counters(hn)
    return c


def run_mpi(net, a, hosts, agent):
    shim = os.path.join(net.build, 'verbs', 'liburoce.so')
    # mpirun and h1's rank start here (h1 is mpirun's own host); the rank
    # program is ours, built with the sanitizer runtime when there is one:
    # the shim goes into the ranks alone, not into mpirun/orted
    env = {k: v for k, v in os.environ.items() if k not in ('LD_PRELOAD', 'ASAN_OPTIONS')}
    env['UROCE_RUN_DIR'] = net.run_dir[hosts[0]]
    hostlist = ','.join('%s%d:%d' % (SUBNET, i, a.ppn) for i in range(1, len(hosts) + 1))
    mpi = ['mpirun', '--allow-run-as-root', '--oversubscribe', '-np', str(len(hosts) * a.ppn),
           '--host', hostlist, '--map-by', 'node',
           '--mca', 'plm_rsh_agent', agent, '--mca', 'plm_rsh_no_tree_spawn', '1',
           '--mca', 'oob_tcp_if_include', SUBNET + '0/24',
           '--mca', 'pml', 'ucx', '--mca', 'osc', 'ucx', '--mca', 'btl', 'self',
           '-x', 'LD_PRELOAD=' + shim,
           '-x', 'UCX_TLS=' + a.tls, '-x', 'UCX_NET_DEVICES=uroce0:1',
           '-x', 'UCX_IB_GID_INDEX=1', '-x', 'UCX_LOG_LEVEL=info',
           # Open MPI's components leak at finalize (sanitized builds)
           '-x', 'ASAN_OPTIONS=detect_leaks=0',
           a.prog, str(a.seed), str(a.max)]
    cmd = net.nsx(hosts[0], ['unshare', '--uts', '/bin/sh', '-c',
                             'hostname h1; exec "$@"', 'sh'] + mpi)
    try:
        rc, out = harness.run(cmd, env, MPI_TIMEOUT)
    except Exception as e:  # subprocess.TimeoutExpired: the group is killed
        raise Fail('mpirun did not finish in %d s: %s' % (MPI_TIMEOUT, e))
    return rc, out


def check_lanes(out, nh):
    """UCX's own account of what carried each endpoint: uroce only."""
    cfgs = re.findall(r'ep_cfg\[\d+\]: (.*)', out)
    if not cfgs:
        raise Fail('no ep_cfg lines from UCX')
    for c in cfgs:
        lanes = re.findall(r'(\w+)/([\w:]+)', c)
        bad = [ln for ln in lanes if ln[0] not in ('rc_verbs', 'ud_verbs') or ln[1] != 'uroce0:1']
        if not lanes or bad:
            raise Fail('an endpoint not on uroce0:1: %s' % c)
    return len(cfgs)


def case(net, a):
    harness_need = ['mpirun', 'unshare'] + (['iptables'] if a.kind == 'packet' else [])
    link.need(*harness_need)
    if not os.path.exists(a.prog):
        raise Skip('the MPI program was not built (no Open MPI development files)')
    if a.kind == 'xdp' and not os.path.exists(os.path.join(net.build, 'emu', 'uroce_xdp.o')):
        raise Skip('uroced was built without its XDP program (clang, libbpf-dev)')
    hosts = build_net(net, a.kind, a.hosts)
    start_daemons(net, a.kind, hosts)
    agent = launcher(net, hosts)
    c0 = {hn: port_counters(net, hn) for hn in hosts}
    t0 = time.monotonic()
    rc, out = run_mpi(net, a, hosts, agent)
    print('mpirun: exit %d after %.1f s' % (rc, time.monotonic() - t0), flush=True)
    c1 = {hn: port_counters(net, hn) for hn in hosts}
    bad = []
    for hn in hosts:
        d = {k: c1[hn].get(k, 0) - c0[hn].get(k, 0) for k in c1[hn]}
        moved = {k: v for k, v in sorted(d.items()) if v and (
            k.startswith(('drop.', 'link.', 'qps.', 'xport_drop.')) or
            k in ('rx_roce', 'tx_pkts', 'rx_pkts'))}
        print('[%s] %s' % (hn, moved), flush=True)
        # every daemon carried its rank's share: ping-pongs with each peer
        # (each of the three exchanges per size crosses its port)
        if d.get('rx_roce', 0) < 1000 or d.get('tx_pkts', 0) < 1000:
            bad.append('%s carried little RoCE (rx_roce %d, tx_pkts %d)'
                       % (hn, d.get('rx_roce', 0), d.get('tx_pkts', 0)))
        # a UD datagram refused (Q_Key, length, not a SEND): UCX sends
        # none such, so something broke one on its way
        if d.get('xport_drop.ud-invalid', 0):
            bad.append('%s refused %d UD datagrams (xport_drop.ud-invalid)'
                       % (hn, d['xport_drop.ud-invalid']))
    if rc or not re.search(r'%d ranks, \d+ sizes 1 B \.\. %d B, \d+ pair exchanges, '
                           r'fresh buffers: ok' % (a.hosts * a.ppn, a.max), out):
        m = re.findall(r'.*(?:UD endpoint|timeout|error|FAILED|wrong).*', out)
        raise Fail('mpirun: exit %d; %s' % (rc, ' | '.join(m[:8]) or out[-2000:]))
    print('UCX endpoints on uroce0:1: %d' % check_lanes(out, a.hosts))
    if bad:
        raise Fail('; '.join(bad))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', required=True)
    ap.add_argument('--prog', required=True)
    ap.add_argument('--preload-first', default='')
    ap.add_argument('--seed', type=int, default=22)
    ap.add_argument('--hosts', type=int, default=4)
    ap.add_argument('--max', type=int, default=1 << 20)
    ap.add_argument('--tls', default='rc_verbs,ud_verbs')
    ap.add_argument('--ppn', type=int, default=1, help='ranks per host')
    ap.add_argument('kind', choices=['xdp', 'packet'])
    a = ap.parse_args()
    print('seed', a.seed, flush=True)
    return link.run_case(lambda: link.Net('mpi' + a.kind, os.path.abspath(a.build)), case, a)


if __name__ == '__main__':
    sys.exit(main())
