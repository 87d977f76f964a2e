#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ICRC work on the daemon's internal ring (docs/performance.md).

  icrc_skip.py UROCED VERBS_CQINL UROCE_STAT UROCE_PCAP

Each case starts its own uroced (private UROCE_RUN_DIR, bounded waits,
stopped with SIGTERM and checked to exit 0), runs traffic with
verbs_cqinl, and reads the counters with uroce-stat:
  loop        default loopback port: the ICRC is skipped (icrc_skipped > 0)
  loop-pcap   with --pcap: the ICRC of every frame sent is computed (only
              the receive checks are skipped), and every RoCE frame in the
              capture has a correct ICRC (uroce-pcap decode / check)
  link-pcap   link:NAME pair, capture on one end only: the other end
              computes the ICRC of what it sends there (the capture is
              valid) but still skips checking what it receives
  loop-fault  with --fault corrupt: nothing skipped, every corrupted frame
              accounted for (ICRC, header check, no longer RoCE, or passed
              with the flip in an ICRC-masked field; the daemon's closing
              counters), the payloads the test checks intact
Captures are also checked by tests/tools/pcap_indep.py (tshark and an
ICRC of its own), not only by uroce-pcap.
Exit 0 pass, 77 skip, 1 fail."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness as h  # noqa: E402  (tests/lib/harness.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools'))
import pcap_indep  # noqa: E402  (tests/tools/pcap_indep.py)


class Daemon:
    """A uroced in its own run directory (harness.Rig: its exit status and
    log judged by harness.main)."""

    def __init__(self, uroced, args, devs):
        self.rig = h.Rig(uroced, 'uroce-icrc-')
        self.run_dir = self.rig.dir
        self.env = self.rig.env
        self.proc = self.rig.start(args, devs=devs)

    def stop(self):
        """SIGTERM; True when it exited 0."""
        return self.rig.stop_one(self.proc) == 0

    def close(self):
        """Stopped, judged; its log text (the run directory stays until
        harness.main removes it: a capture in it may still be read)."""
        self.rig.close(show=1500)
        return self.rig.text


def counters(stat, env, dev):
    r = subprocess.run([stat, '-d', dev, '-q'], env=env, capture_output=True, text=True,
                       timeout=60)
    if r.returncode:
        raise RuntimeError('uroce-stat %s: %s' % (dev, r.stderr))
    return dict((ln.split()[0], int(ln.split()[1])) for ln in r.stdout.splitlines()
                if ln.startswith(' ') and len(ln.split()) == 2)


def traffic(prog, env, case, extra=None):
    e = dict(env, **(extra or {}))
    r = subprocess.run([prog, case], env=e, capture_output=True, text=True, timeout=120)
    sys.stdout.write(r.stdout + r.stderr)
    if r.returncode:
        raise RuntimeError('%s %s failed (%d)' % (os.path.basename(prog), case, r.returncode))


def pcap_valid(pcap_tool, path, min_frames):
    d = subprocess.run([pcap_tool, 'decode', path], capture_output=True, text=True,
                       timeout=120)
    ok = d.stdout.count('icrc=ok')
    bad = d.stdout.count('icrc=BAD')
    c = subprocess.run([pcap_tool, 'check', path], capture_output=True, text=True,
                       timeout=120)
    print('capture %s: %d frames icrc=ok, %d icrc=BAD, check exit %d' %
          (os.path.basename(path), ok, bad, c.returncode))
    if bad or ok < min_frames or c.returncode:
        print('\n'.join([ln for ln in d.stdout.splitlines() if 'BAD' in ln][:5]))
        return False
    # and a decoder that is not ours (uroce-pcap parses with the wire/ code
    # that built the frames)
    return pcap_indep.check(path, ok) == []


def case_loop(uroced, prog, stat, pcap_tool, tmp):
    d = Daemon(uroced, [], ['uroce0'])
    try:
        traffic(prog, d.env, 'rc_sizes')
        c = counters(stat, d.env, 'uroce0')
        print('uroce0', {k: c[k] for k in ('rx_roce', 'icrc_skipped', 'icrc_errors',
                                             'cqe_inline')})
        # every frame sent and received: two skips per frame
        if c['icrc_skipped'] < 2 * c['rx_roce'] or c['rx_roce'] < 50 or c['icrc_errors']:
            return False
        # the small SENDs of rc_sizes travelled in the CQ ring
        if c['cqe_inline'] < 10:
            return False
        return d.stop()
    finally:
        d.close()


def case_loop_pcap(uroced, prog, stat, pcap_tool, tmp):
    path = os.path.join(tmp, 'loop.pcap')
    d = Daemon(uroced, ['--pcap', path], ['uroce0'])
    try:
        traffic(prog, d.env, 'rc_sizes')
        c = counters(stat, d.env, 'uroce0')
        print('uroce0', {k: c[k] for k in ('rx_roce', 'icrc_skipped', 'icrc_errors')})
        if c['icrc_skipped'] != c['rx_roce'] or c['rx_roce'] < 50 or c['icrc_errors']:
            return False
        if not d.stop():
            return False
    finally:
        d.close()
    return pcap_valid(pcap_tool, path, 50)


def case_link_pcap(uroced, prog, stat, pcap_tool, tmp):
    path = os.path.join(tmp, 'u1.pcap')
    d = Daemon(uroced, ['--dev', 'uroce0,port=link:icrc,ip=10.0.0.1',
                        '--dev', 'uroce1,port=link:icrc,ip=10.0.0.2,pcap=' + path],
               ['uroce0', 'uroce1'])
    try:
        traffic(prog, d.env, 'two_dev')
        c0 = counters(stat, d.env, 'uroce0')
        c1 = counters(stat, d.env, 'uroce1')
        for n, c in (('uroce0', c0), ('uroce1', c1)):
            print(n, {k: c[k] for k in ('tx_pkts', 'rx_roce', 'icrc_skipped', 'icrc_errors')})
        # uroce0 computes for uroce1's capture, checks nothing it receives;
        # uroce1 computes for its own capture and skips its checks
        if c0['icrc_errors'] or c1['icrc_errors'] or c0['rx_roce'] < 20:
            return False
        if c0['icrc_skipped'] != c0['rx_roce'] or c1['icrc_skipped'] != c1['rx_roce']:
            return False  # (racy only if frames arrived between the fields: they don't)
        if not d.stop():
            return False
    finally:
        d.close()
    return pcap_valid(pcap_tool, path, 40)


def case_loop_fault(uroced, prog, stat, pcap_tool, tmp):
    """Nothing skipped, and every corrupted frame accounted for: caught by
    the ICRC or a header check, or passed with its bit in a masked field."""
    # enough flips that the ICRC gets some to catch (0.05 gave 2, neither in
    # a covered byte)
    d = Daemon(uroced, ['--fault', 'corrupt=0.2,seed=7'], ['uroce0'])
    try:
        traffic(prog, d.env, 'rc_sizes')
        c = counters(stat, d.env, 'uroce0')
        print('uroce0', {k: c[k] for k in ('rx_roce', 'icrc_skipped', 'icrc_errors',
                                             'fault_corrupt')})
        if c['icrc_skipped'] or not c['fault_corrupt']:
            return False
        if not d.stop():
            return False
    finally:
        text = d.close()
    bad = h.corrupt_accounting(text)
    for b in bad:
        print('FAIL:', b)
    return not bad


CASES = {'loop': case_loop, 'loop-pcap': case_loop_pcap, 'link-pcap': case_link_pcap,
         'loop-fault': case_loop_fault}


def run_cases(uroced, names, run, prefix):
    """run(name, tmp) for each case name in a scratch directory; the exit
    status: 0 all passed, 1 some failed, 77 no daemon to run."""
    if not os.access(uroced, os.X_OK):
        return 77
    tmp = tempfile.mkdtemp(prefix=prefix)
    failed = 0
    try:
        for n in names:
            try:
                ok = run(n, tmp)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print('error:', e)
                ok = False
            print('%s %s' % ('ok  ' if ok else 'FAIL', n))
            failed += not ok
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


def main():
    uroced, prog, stat, pcap_tool = sys.argv[1:5]
    return run_cases(uroced, sys.argv[5:] or list(CASES),
                     lambda n, tmp: CASES[n](uroced, prog, stat, pcap_tool, tmp),
                     'uroce-icrc-cap-')


if __name__ == '__main__':
    sys.exit(h.main(main))
