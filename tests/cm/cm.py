#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Unmodified librdmacm programs on a private default uroced (issue 9).

The daemon is started, stopped and judged (exit status, sanitizer reports
in its log) with tests/verbs/run.py's helpers; every program runs in its
own session with a bounded timeout and is killed whole when it overruns.
The rdma_cm port space is the private daemon's, so CM ports cannot clash
with other tests; the few TCP ports (qperf, fi_pingpong control) are
picked free at random. The seed is printed (--seed replays a run).

  cm.py --uroced P --shim P [--seed N] MODE [ARGS...]
  MODE exec PROG [ARGS]          a C test (linked with liburoce), no preload
  MODE nodaemon SHIM NOSHIM      same errors with and without uroce
  MODE kernel-mode SHIM          UROCE_CM=kernel: rdma_cm left to the kernel
  MODE cm-stat UROCE_STAT         the IB CM engine's counters move (REJ 8)
  MODE removal PROG [ARGS]|rping the daemon stopped under a connected program:
                                 DEVICE_REMOVAL, a clean end
  MODE rping SIZE COUNT [-q] [-6]  rping -v -V, both sides count the pings (-6: ::1)
  MODE ucmatose CONNS COUNT SIZE [-m]
  MODE udaddy CONNS COUNT
  MODE mckey COUNT
  MODE rdma-server | rdma-xserver
  MODE rstream SIZE COUNT [T]    rstream -T v (verified) [-T T]
  MODE riostream SIZE COUNT [T]
  MODE rspreload SIZE COUNT      rstream -T s (plain sockets) under librspreload
  MODE perftest PROG [ARGS]      PROG -R -d uroce0 (no data check: perftest has none)
  MODE qperf TEST                qperf -cm1 TEST
  MODE fi-info | fi-pingpong SIZE COUNT
  MODE test-rdmacm [NAME...]     rdma-core's tests/test_rdmacm.py (pyverbs)
Options: --daemon-env K=V (the daemon's environment), --capture (uroced
--pcap), --ece-check UROCE_PCAP TSHARK_CHECK (after an exec of cm_ece: the
capture's ECE, decoded by uroce-pcap and tshark).
Exit status: 0 pass, 77 skip (the program is not installed), else fail.
"""
import argparse
import gzip
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness as h  # noqa: E402  (tests/lib/harness.py)

TIMEOUT = 60


need = h.need
fail = h.fail
Bg = h.Bg


# perftest -R's client pauses before each connect (the shim's test knob,
# verbs/ucma_cmd.c), so that its second connection rarely comes before the
# server listens again, tens of ms after their parameter exchange (without
# the pause it came first 3 times in 10 over af_xdp, docs/emu.md)
PERFTEST_CLIENT = ['env', 'UROCE_CM_CONNECT_DELAY_MS=300']
# perftest's client refused on its data connection (after the control
# one): nobody listens (RC: REJECTED 8; UD: SIDR_REP unsupported, UNREACHABLE 1)
PERFTEST_LATE_LISTEN = h.Race(
    "perftest's second connect before its server's second listen",
    r'Event: RDMA_CM_EVENT_(REJECTED; error: 8|UNREACHABLE; error: 1)\.'
    r'(?s:.*)Failed to connect RDMA CM events',
    'perftest -R listens again for its data QPs only after the parameter exchange, '
    'and nothing orders that against the client (perftest_communication.c): '
    'server and client start again')
# ucmatose prints "starting server" before it listens: a client whose
# first REQs came before the listen (REJECTED 8) and the rest after gives
# up, and the server then cannot accept those (EINVAL, as with the
# kernel) and ends: both start again. The client now waits for the
# daemon's CM to listen (Rig.cm_listening); this stays for a listener
# seen before the previous attempt's was gone
UCMATOSE_SPLIT = h.Race(
    'ucmatose connections split across the listen',
    r'(?m)event: RDMA_CM_EVENT_REJECTED, error: 8$',
    'some REQs came before the server listened and the server ended: both start again')


# A client that came before its server listened: nobody listens on the
# port yet, so the daemon's CM answers the REQ with REJ 8 (invalid service
# ID; SIDR: UNREACHABLE 1), as the kernel does; each program says so in its
# own words (seen on a daemon with no server). That race is the programs'
# start-up against ours, and the client alone may come again. Clients of
# the servers that print nothing once they listen start once the daemon's
# CM listens (Rig.cm_listening); this stays for a listener still counted
# from a previous server, and for the removal and test-rdmacm modes.
NOT_LISTENING = h.Race(
    'client before the listen',
    r'(?m)^cma event RDMA_CM_EVENT_REJECTED, error 8$'          # rping
    r'|event: RDMA_CM_EVENT_REJECTED, error: 8$'                # ucmatose
    r'|event: RDMA_CM_EVENT_UNREACHABLE, error: 1$'             # udaddy (SIDR)
    r'|^rdma_connect: Connection refused$'                      # rdma_client, rdma_xclient
    r'|^rpoll: Connection refused$'                             # rstream
    r'|^rpoll: Transport endpoint is not connected$'            # riostream
    r'|^(async )?rconnect: Connection refused$'                 # riostream, rstream (-T s: async)
    r'|^Unexpected CM event bl blka 8$',                        # perftest -R, first connect
    'nobody listened on the port yet: the CM rejected the REQ (REJ 8)')


def pair(srv_cmd, cli_cmd, env, ready=None, srv_exits=True, timeout=TIMEOUT, moved_on=None):
    """harness.pair with the CM programs' race: a client rejected because
    its server was not listening yet comes again (printed, counted)."""
    return h.pair(srv_cmd, cli_cmd, env, ready=ready, races=(NOT_LISTENING,),
                  moved_on=moved_on, srv_exits=srv_exits, timeout=timeout)


def free_tcp_port(rng=None):
    return h.free_tcp_port()


# ---- the programs ----------------------------------------------------------

def mode_rping(env, port, args, rig):
    if not need('rping'):
        return 77
    size, count = int(args[0]), int(args[1])
    extra = args[2:]
    addr = '127.0.0.1'
    if '-6' in extra:           # ours: the IPv6 loopback
        extra.remove('-6')
        addr = '::1'
    base = ['-v', '-V', '-C', str(count), '-S', str(size), '-p', str(port)] + extra
    ok, out, sout = pair(['rping', '-s', '-a', addr] + base,
                         ['rping', '-c', '-a', addr] + base, env, ready=rig.cm_listening())
    if not ok:
        return fail('rping')
    # -V compares every ping with the pattern; -v prints each one
    got_c = len(re.findall(r'^ping data: rdma-ping-\d+: ', out, re.M))
    got_s = len(re.findall(r'^server ping data: rdma-ping-\d+: ', sout, re.M))
    if got_c != count or got_s != count:
        return fail('pings: client %d server %d, want %d' % (got_c, got_s, count))
    if 'mismatch' in out + sout:
        return fail('data mismatch')
    return 0


def mode_ucmatose(env, port, args, rig):
    if not need('ucmatose'):
        return 77
    conns, count, size = args[0], args[1], args[2]
    base = ['-p', str(port), '-c', conns, '-C', count, '-S', size] + args[3:]
    addr = '::1' if 'ipv6' in args[3:] else '127.0.0.1'
    ok, out, sout = h.retry(
        lambda: pair(['ucmatose', '-b', addr] + base, ['ucmatose', '-s', addr] + base, env,
                     ready=rig.cm_listening()),
        (UCMATOSE_SPLIT,), limit=2, what='ucmatose server and client')
    if not ok:
        return fail('ucmatose')
    for who, o in (('client', out), ('server', sout)):
        if 'return status 0' not in o or 'test complete' not in o:
            return fail('ucmatose %s did not complete' % who)
    return 0


def mode_udaddy(env, port, args, rig):
    if not need('udaddy'):
        return 77
    # udaddy's -p is the port space (UDP by default); its port is fixed (7174)
    base = ['-c', args[0], '-C', args[1]]
    # -c N: a client whose first SIDR REQs came before the listen and the
    # rest after leaves the server waiting for the first ones' messages:
    # the client starts once the daemon's CM listens
    ok, out, sout = pair(['udaddy'] + base, ['udaddy', '-s', '127.0.0.1'] + base, env,
                         ready=rig.cm_listening())
    if not ok:
        return fail('udaddy')
    for who, o in (('client', out), ('server', sout)):
        if 'return status 0' not in o or 'test complete' not in o:
            return fail('udaddy %s did not complete' % who)
    return 0


def mode_mckey(env, port, args):
    if not need('mckey'):
        return 77
    base = ['-m', '239.1.%d.%d' % (port // 256 % 256, port % 256), '-b', '127.0.0.1',
            '-C', args[0]]
    # the receiver must have joined before the sender sends
    ok, out, sout = pair(['mckey'] + base, ['mckey', '-s'] + base, env,
                         ready='receiving data transfers')
    if not ok:
        return fail('mckey')
    for who, o in (('sender', out), ('receiver', sout)):
        if 'return status 0' not in o or 'test complete' not in o:
            return fail('mckey %s did not complete' % who)
    return 0


def mode_rdma_server(env, port, x, rig):
    srv, cli = ('rdma_xserver', 'rdma_xclient') if x else ('rdma_server', 'rdma_client')
    if not need(srv, cli):
        return 77
    ok, out, sout = pair([srv, '-p', str(port)], [cli, '-s', '127.0.0.1', '-p', str(port)], env,
                         ready=rig.cm_listening())
    if not ok:
        return fail(srv)
    if not re.search(r'end 0', out) or not re.search(r'end 0', sout):
        return fail('%s/%s did not end 0' % (srv, cli))
    return 0


def mode_rstream(env, port, prog, args, rig):
    if not need(prog):
        return 77
    base = ['-p', str(port), '-S', args[0], '-C', args[1], '-T', 'v']
    for t in args[2:]:
        base += ['-T', t]
    ok, out, sout = pair([prog, '-b', '127.0.0.1'] + base,
                         [prog, '-s', '127.0.0.1'] + base, env, ready=rig.cm_listening())
    if not ok:
        return fail(prog)
    # the result line under "name bytes xfers iters total time Gb/sec usec/xfer"
    if not re.search(r'^name\s+bytes.*\n\S+(\s+\S+){4}\s+[\d.]+s\s+[\d.]+\s+[\d.]+\s*$',
                     out, re.M):
        return fail('%s: no result line' % prog)
    return 0


RSPRELOAD = '/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so'


def mode_rspreload(env, port, args, state, rig):
    """Plain TCP sockets turned into rsockets by librspreload: the bytes
    must cross uroce (the daemon's RoCE packet count is checked after it
    stops: librspreload falls back to the kernel's TCP when rsocket()
    fails, which would pass unseen)."""
    if not need('rstream') or not os.path.exists(RSPRELOAD):
        print('librspreload not installed')
        return 77
    penv = dict(env)
    penv['LD_PRELOAD'] = env['LD_PRELOAD'] + ':' + RSPRELOAD
    size, count = int(args[0]), int(args[1])
    base = ['-p', str(port), '-S', str(size), '-C', str(count), '-T', 's', '-T', 'v']
    ok, out, _ = pair(['rstream', '-b', '127.0.0.1'] + base,
                      ['rstream', '-s', '127.0.0.1'] + base, penv, ready=rig.cm_listening())
    if not ok:
        return fail('rstream under librspreload')
    state['min_roce_pkts'] = size * count // 4096
    return 0


def mode_perftest(env, port, args):
    prog = args[0]
    if not need(prog):
        return 77
    base = [prog, '-R', '-d', 'uroce0', '-p', str(port), '-F'] + args[1:]
    # A client REJECTED because the server printed its banner before it
    # listened is retried; perftest's client then crashes in its own
    # cleanup (a perftest bug, on any device), and under the ASan build
    # symbolizing that crash once ate the whole retry window: no
    # symbolization for these uninstrumented programs.
    env = dict(env)
    env['ASAN_OPTIONS'] = env.get('ASAN_OPTIONS', '') + ':symbolize=0'
    # the client starts once the server says it waits (a client that comes
    # before the listen is rejected, as with the kernel, and retried)
    ok, out, sout = h.retry(
        lambda: pair(base, PERFTEST_CLIENT + base + ['127.0.0.1'], env,
                     ready='Waiting for client to connect', moved_on=PERFTEST_LATE_LISTEN),
        (PERFTEST_LATE_LISTEN,), limit=4, what='perftest server and client')
    if not ok:
        return fail(prog)
    # the result table: "#bytes ..." then a line of numbers
    if not re.search(r'^\s*#bytes.*\n\s*\d+\s+\d+\s+[\d.]+', out, re.M):
        return fail('%s: no result line' % prog)
    return 0


def mode_qperf(env, rng, args):
    if not need('qperf'):
        return 77
    lp = free_tcp_port(rng)
    print('qperf listen port', lp)
    ok, out, _ = pair(['qperf', '-lp', str(lp)],
                      ['qperf', '-lp', str(lp), '-cm1', '-to', '20', '-t', '2',
                       '127.0.0.1'] + args, env, ready=lp, srv_exits=False)
    if not ok:
        return fail('qperf')
    if 'failed' in out.lower() or not re.search(r'(latency|bw)\s+=\s+[\d.]+', out):
        return fail('qperf %s: no result' % ' '.join(args))
    return 0


def mode_fi_info(env):
    if not need('fi_info'):
        return 77
    rc, out = h.run(['fi_info', '-p', 'verbs'], env)
    if rc or not re.search(r'domain: uroce0\n\s+version: [\d.]+\n\s+type: FI_EP_MSG', out):
        return fail('fi_info -p verbs: no FI_EP_MSG endpoint on uroce0 (rdma_cm)')
    return 0


def mode_fi_pingpong(env, rng, args):
    if not need('fi_pingpong'):
        return 77
    lp = free_tcp_port(rng)
    print('fi_pingpong control port', lp)
    base = ['fi_pingpong', '-p', 'verbs', '-e', 'msg', '-d', 'uroce0', '-c',
            '-S', args[0], '-I', args[1]]
    # the client's first act is a TCP connect to the control port: it
    # starts once the server listens there (CI saw "Connection refused")
    ok, out, _ = pair(base + ['-B', str(lp)], base + ['-P', str(lp), '127.0.0.1'], env,
                      ready=lp)
    if not ok:
        return fail('fi_pingpong')
    if not re.search(r'^\S+\s+\d+\s+=?\d+', out, re.M):
        return fail('fi_pingpong: no result line')
    return 0


def mode_test_rdmacm(env, args):
    src = '/usr/share/doc/rdma-core/tests'
    if not os.path.isfile(os.path.join(src, 'test_rdmacm.py')):
        print('rdma-core tests not installed')
        return 77
    try:
        import pyverbs  # noqa: F401
    except ImportError:
        print('pyverbs not installed')
        return 77
    tmp = tempfile.mkdtemp(prefix='uroce-cmt-')
    try:
        dst = os.path.join(tmp, 'tests')
        shutil.copytree(src, dst)
        for fn in os.listdir(dst):
            if fn.endswith('.gz'):
                with gzip.open(os.path.join(dst, fn)) as z, \
                        open(os.path.join(dst, fn[:-3]), 'wb') as o:
                    o.write(z.read())
                os.unlink(os.path.join(dst, fn))
        names = ['tests.test_rdmacm.' + n for n in args] or ['tests.test_rdmacm']
        penv = dict(env)
        penv['PYTHONPATH'] = tmp + ':' + dst
        rc, out = h.run(['/usr/bin/python3', os.path.join(dst, 'run_tests.py'),
                          '--dev', 'uroce0', '-v'] + names, penv, timeout=300)
        m = re.search(r'^Ran (\d+) tests?', out, re.M)
        if rc != 0 or not m or 'OK' not in out.splitlines()[-1]:
            return fail('test_rdmacm')
        # a skipped test is not a passed one
        if re.search(r'\.\.\. skipped', out):
            return fail('test_rdmacm: tests skipped')
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def cm_counters(stat, env):
    rc, out = h.run([stat, '-q', '-d', 'uroce0'], env)
    if rc != 0:
        return None
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r'^\s+cm\.(\S+)\s+(\d+)$', out, re.M)}


def mode_cm_stat(env, penv, port, stat):
    """uroce-stat shows the engine's counters, and they move: a connection
    to a port nobody listens on is one REQ out and in, one REJ 8 (invalid
    service ID) sent and received; a listening rping -s is one listener
    while it lives."""
    if not need('rping'):
        return 77
    before = cm_counters(stat, env)
    if before is None or 'tx-mads' not in before:
        return fail('uroce-stat shows no cm.* counters: %r' % before)
    if before.get('rej-tx-8') or before.get('tx-REQ'):
        return fail('counters before any connection: %r' % before)
    rc, out = h.run(['rping', '-c', '-a', '127.0.0.1', '-p', str(port), '-C', '1'], penv)
    if rc == 0 or 'REJECTED' not in out:
        return fail('rping to a port nobody listens on: rc %s' % rc)
    after = cm_counters(stat, env) or {}
    for k in ('tx-REQ', 'rx-REQ', 'tx-REJ', 'rx-REJ', 'rej-tx-8', 'rej-rx-8',
              'rej-no-listener'):
        if after.get(k, 0) < 1:
            return fail('cm.%s did not move: %r' % (k, after))
    if after['tx-mads'] < before['tx-mads'] + 2 or after['rx-mads'] < before['rx-mads'] + 2:
        return fail('MAD totals did not move: %r -> %r' % (before, after))
    if after.get('listeners') != 0:
        return fail('cm.listeners with nobody listening: %r' % after)
    # a listener is counted while its program lives, and no longer after
    srv = Bg(['rping', '-s', '-a', '127.0.0.1', '-p', str(port)], penv, name='server')
    try:
        if not h.wait_until(lambda: (cm_counters(stat, env) or {}).get('listeners') == 1,
                            srv.alive, TIMEOUT):
            return fail('cm.listeners did not become 1 under rping -s: %r' % (
                cm_counters(stat, env),))
    finally:
        srv.kill()
    if not h.wait_until(lambda: (cm_counters(stat, env) or {}).get('listeners') == 0,
                        lambda: True, TIMEOUT):
        return fail('cm.listeners stayed after rping -s ended: %r' % (cm_counters(stat, env),))
    print('counters after:', after)
    return 0


def rping_client_up(progs, base, env, limit=60.0):
    """Start rping's client against the server progs[0] until it pings
    (appended to progs). rping -s prints nothing when it listens: a client
    that came first was rejected (NOT_LISTENING, which leaves the server as
    it was) and starts again; a fixed pause before the client lost that
    race under load."""
    def attempt():
        cli = Bg(['rping', '-c', '-C', '100000000'] + base, env, tty=True)
        if cli.wait_line('ping data', limit):
            return True, '', cli
        return False, cli.kill(), cli
    ok, _, cli = h.retry(attempt, (NOT_LISTENING,), h.LISTEN_RETRIES, 'rping client',
                         alive=progs[0].alive, pause=0.2)
    progs.append(cli)
    return ok


def mode_removal(env, port, rig, daemon, args):
    """The daemon stops (SIGTERM) under programs waiting in
    rdma_get_cm_event with a listener and a connection: each must report
    DEVICE_REMOVAL and end by itself, not hang or crash."""
    if args[0] == 'rping':
        if not need('rping'):
            return 77
        base = ['-a', '127.0.0.1', '-p', str(port), '-v']
        progs = [Bg(['rping', '-s'] + base, env, tty=True)]
        ready = rping_client_up(progs, base, env)
        want = 'cma detected device removal'
    else:
        progs = [Bg(args + [str(port)], env)]
        ready = progs[0].wait_line('READY', 40)
        want = '%s: ok' % args[-1]
    try:
        if not ready:
            for p in progs:
                sys.stdout.write(p.kill())
            return fail('the programs did not get connected')
        st = rig.stop_one(daemon)
        print('uroced stopped, exit status', st)
        rc = 0
        for p in progs:
            st, out = p.finish(30)
            sys.stdout.write('--- %s ---\n%s' % (p.p.args[0], out))
            if st is None or st < 0:
                rc = fail('%s %s' % (p.p.args[0], 'hung' if st is None else
                                     'killed by signal %d' % -st))
            elif want not in out:
                rc = fail('%s: no %r' % (p.p.args[0], want))
        return rc
    finally:
        for p in progs:
            p.kill()


def mode_nodaemon(env, shim_prog, noshim_prog):
    """librdmacm with liburoce and no daemon fails as it does without us."""
    rc1, with_shim = h.run([shim_prog, 'nodaemon'], env)
    plain = dict(env)
    plain.pop('UROCE_RUN_DIR', None)
    plain.pop('LD_PRELOAD', None)
    rc2, without = h.run([noshim_prog, 'nodaemon'], plain)
    if rc1 or rc2:
        return fail('nodaemon program failed')
    if with_shim != without:
        return fail('with liburoce and no daemon:\n%s\nwithout:\n%s' % (with_shim, without))
    if 'channel: NULL' not in without:
        print('this host has an rdma_cm: the comparison says nothing')
        return 77
    return 0


def mode_kernel(env, shim_prog):
    """UROCE_CM=kernel with a daemon up: rdma_cm is the kernel's (none on
    this host: ENOENT, as a host whose rdma_ucm module is not loaded),
    while the verbs device stays."""
    env = dict(env, UROCE_CM='kernel')
    rc, out = h.run([shim_prog, 'nodaemon'], env)
    if os.path.exists('/dev/infiniband/rdma_cm'):
        print('this host has an rdma_cm: the check says nothing')
        return 77
    want = ['open: -1 No such file or directory', 'channel: NULL No such file or directory',
            'devices: 1']
    missing = [w for w in want if w not in out]
    if rc or missing:
        return fail('UROCE_CM=kernel: missing %r' % missing)
    return 0


# what cm_ece sends (tests/cm/cm_ece.c): (attribute, vendor ID, options)
# as uroce-pcap prints them, and the options tshark must show
ECE_WANT = [('REQ', 0x001ace, 0x5a5a5a5a), ('REP', 0x001ace, 0x77),
            ('REQ', 0x001ace, 0), ('REP', 0x001ace, 0),
            ('REQ', 0xabcdef, 0xff), ('REP', 0xabcdef, 0),
            ('REP', 0x999999, 0x77)]


def ece_check(uroce_pcap, tshark_check, cap):
    """The capture of a cm_ece run: every MAD valid for uroce-pcap, the
    ECE of each exchange decoded, a REJ 35, and tshark's CM dissector
    showing the options with no malformed frame or expert warning."""
    errs = []
    res = subprocess.run([uroce_pcap, 'check', cap], capture_output=True, text=True,
                         timeout=120)
    if res.returncode != 0:
        errs.append('uroce-pcap check: %s' % res.stdout[-2000:])
    res = subprocess.run([uroce_pcap, 'decode', cap], capture_output=True, text=True,
                         timeout=120)
    lines = [ln for ln in res.stdout.splitlines() if ' CM ' in ln]
    print('capture: %d CM MADs' % len(lines))
    for attr, vendor, opts in ECE_WANT:
        pat = ' CM %s ' % attr
        tag = 'ece=0x%06x/0x%08x' % (vendor, opts)
        if not any(pat in ln and tag in ln for ln in lines):
            errs.append('uroce-pcap shows no %s with %s' % (attr, tag))
    if not any(' CM REJ ' in ln and 'reason=35 ' in ln for ln in lines):
        errs.append('uroce-pcap shows no REJ 35')
    if not shutil.which('tshark'):
        # the capture's verdict needs a decoder that is not ours
        raise h.Missing('tshark not installed: the ECE capture has no independent decoder')
    res = subprocess.run([sys.executable, tshark_check, '--all', cap], capture_output=True,
                         text=True, timeout=300)
    print(res.stdout[-1500:])
    if res.returncode != 0:
        errs.append('tshark: malformed or expert-flagged CM MADs')
    res = subprocess.run(['tshark', '-r', cap, '-Y', 'infiniband.mad.attributeid == 0x0010'
                          ' || infiniband.mad.attributeid == 0x0013', '-T', 'fields',
                          '-e', 'infiniband.mad.attributeid',
                          '-e', 'infiniband.mad.attributemodifier'],
                         capture_output=True, text=True, timeout=300)
    seen = {tuple(int(x, 0) for x in ln.split('\t')) for ln in res.stdout.split('\n')
            if '\t' in ln}
    for want in [(0x10, 0x5a5a5a5a), (0x13, 0x77), (0x10, 0xff)]:
        if want not in seen:
            errs.append('tshark shows no attribute %#x with modifier %#x' % want)
    return errs


def run_test():
    ap = argparse.ArgumentParser()
    ap.add_argument('--uroced', required=True)
    ap.add_argument('--shim', required=True)
    ap.add_argument('--preload-first', default='')
    ap.add_argument('--seed', type=int, default=None)
    ap.add_argument('--daemons', type=int, default=1,
                    help='start uroce0..N-1, one daemon each')
    ap.add_argument('--env', action='append', default=[],
                    help='K=V for the programs')
    ap.add_argument('--daemon-env', action='append', default=[],
                    help='K=V for the daemon (uroce0)')
    ap.add_argument('--capture', action='store_true', help='uroced --pcap')
    ap.add_argument('--ece-check', nargs=2, metavar=('UROCE_PCAP', 'TSHARK_CHECK'))
    ap.add_argument('mode')
    ap.add_argument('args', nargs=argparse.REMAINDER)
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    print('seed', seed, '(--seed %d replays)' % seed)
    rng = random.Random(seed)
    port = rng.randrange(1024, 65000)
    print('rdma_cm port', port)
    rig = h.Rig(a.uroced, 'uroce-cm-')
    env = rig.env
    if a.mode == 'nodaemon':
        # no daemon at all: what a daemon that was killed leaves behind
        # (its sysfs file), the shim must still find no daemon and step aside
        os.makedirs(os.path.join(rig.dir, 'class', 'misc', 'rdma_cm'))
        with open(os.path.join(rig.dir, 'class', 'misc', 'rdma_cm', 'abi_version'), 'w') as f:
            f.write('4\n')
        return mode_nodaemon(env, a.args[0], a.args[1])
    denv = dict(kv.split('=', 1) for kv in a.daemon_env)
    cap = os.path.join(rig.dir, 'cm.pcap')
    d = rig.start(['--pcap', cap] if a.capture else [], env=denv)
    for i in range(1, a.daemons):
        name = 'uroce%d' % i
        rig.start(['--dev', name, '--mac', '02:00:00:00:01:%02x' % i], devs=[name])
    for kv in a.env:
        k, v = kv.split('=', 1)
        env[k] = v
    # librdmacm reads abi_version first: the tree must be there
    if not rig.wait_path(os.path.join('class', 'misc', 'rdma_cm', 'abi_version')):
        return fail('uroced wrote no class/misc/rdma_cm/abi_version')
    penv = rig.penv(a.shim, a.preload_first)
    m, x = a.mode, a.args
    state = {}
    if m == 'kernel-mode':
        rc = mode_kernel(env, x[0])
    elif m == 'exec':
        rc, _ = h.run(x + [str(port)], env)
    elif m == 'cm-stat':
        rc = mode_cm_stat(env, penv, port, x[0])
    elif m == 'removal':
        rc = mode_removal(penv if x[0] == 'rping' else env, port, rig, d, x)
    elif m == 'rping':
        rc = mode_rping(penv, port, x, rig)
    elif m == 'ucmatose':
        rc = mode_ucmatose(penv, port, x, rig)
    elif m == 'udaddy':
        rc = mode_udaddy(penv, port, x, rig)
    elif m == 'mckey':
        rc = mode_mckey(penv, port, x)
    elif m in ('rdma-server', 'rdma-xserver'):
        rc = mode_rdma_server(penv, port, m == 'rdma-xserver', rig)
    elif m in ('rstream', 'riostream'):
        rc = mode_rstream(penv, port, m, x, rig)
    elif m == 'rspreload':
        rc = mode_rspreload(penv, port, x, state, rig)
    elif m == 'perftest':
        rc = mode_perftest(penv, port, x)
    elif m == 'qperf':
        rc = mode_qperf(penv, rng, x)
    elif m == 'fi-info':
        rc = mode_fi_info(penv)
    elif m == 'fi-pingpong':
        rc = mode_fi_pingpong(penv, rng, x)
    elif m == 'test-rdmacm':
        rc = mode_test_rdmacm(penv, x)
    else:
        print('unknown mode', m)
        rc = 2
    if rc not in (0, 77):
        return rc
    # what is read after the daemons stopped: the capture, the packet count
    rig.close()
    if a.ece_check and m == 'exec':
        errs = ece_check(a.ece_check[0], a.ece_check[1], cap)
        for e in errs:
            fail(e)
        if errs:
            return 1
    want = state.get('min_roce_pkts')
    if want:
        got = re.search(r'roce (\d+)', rig.text)
        n = int(got.group(1)) if got else 0
        print('RoCE packets through the daemon: %d (at least %d wanted)' % (n, want))
        if n < want:
            return fail('the data did not cross uroce')
    return rc


if __name__ == '__main__':
    sys.exit(h.main(run_test))
