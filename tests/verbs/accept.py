#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Acceptance: unmodified programs exchange data through one default uroced
with injected faults, and the counters read from outside agree.

  accept.py --uroced U --shim S --stat T [--preload-first RT]
            [--fault SPEC] --tcp-port N GROUP
  GROUP pingpong  ibv_rc_pingpong -c (payload checked) at several sizes,
                  polling and -e
        perftest  ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw, small -n
        py        tests/verbs/py_lossy.py: pyverbs RC SEND/WRITE/READ/atomics,
                  every byte checked, then uroce-stat counters checked

Faults are seeded; the verdict does not depend on timing (generous bounds,
RC retries recover every loss). After the group, uroce-stat must show the
injected faults and no frame lost to our own TX back-pressure.
Exit 0 pass, 77 skip, 1 fail."""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as vt  # noqa: E402  (tests/verbs/run.py: mode_pair)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness as h  # noqa: E402  (tests/lib/harness.py)

HERE = os.path.dirname(os.path.abspath(__file__))


def cases(group, port):
    out = []
    if group == 'pingpong':
        for extra in (['-s', '1'], ['-s', '4096'], ['-s', '65536'], ['-s', '1', '-e'],
                      ['-s', '4096', '-e'], ['-s', '20000', '-e']):
            out.append(['ibv_rc_pingpong', '-d', 'uroce0', '-g', '1', '-c', '-n', '20',
                        '-p', str(port)] + extra)
            port += 1
    elif group == 'perftest':
        for prog, extra in (('ib_write_bw', ['-s', '65536']), ('ib_read_bw', ['-s', '65536']),
                            ('ib_send_bw', ['-s', '4096']), ('ib_atomic_bw', []),
                            ('ib_read_bw', ['-s', '1000', '-e'])):
            out.append([prog, '-d', 'uroce0', '-x', '1', '-F', '-n', '50', '-p', str(port)]
                       + extra)
            port += 1
    return out


def read_stat(stat, env):
    r = subprocess.run([stat, '-q'], env=env, capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        print(r.stderr)
        return None
    cnt = {}
    for line in r.stdout.splitlines():
        if line.startswith(' '):
            k, v = line.split()
            cnt[k] = int(v)
    return cnt


def run_test():
    ap = argparse.ArgumentParser()
    ap.add_argument('--uroced', required=True)
    ap.add_argument('--shim', required=True)
    ap.add_argument('--stat', required=True)
    ap.add_argument('--preload-first', default='')
    ap.add_argument('--fault', default='')
    ap.add_argument('--tcp-port', type=int, default=0, help='ignored: run.py picks ports')
    ap.add_argument('group')
    a = ap.parse_args()
    need = {'pingpong': ['ibv_rc_pingpong'],
            'perftest': ['ib_write_bw', 'ib_read_bw', 'ib_send_bw', 'ib_atomic_bw']}
    if not h.need(*need.get(a.group, [])):
        return h.skip('a program of the test is not installed')
    rig = h.Rig(a.uroced, 'uroce-acc-')
    rig.start(['--fault', a.fault] if a.fault else [])
    env = rig.env
    penv = rig.penv(a.shim, a.preload_first)
    failed = []
    if a.group == 'py':
        penv['UROCE_TEST_STAT'] = a.stat
        penv['UROCE_TEST_FAULT'] = a.fault
        rc, _ = h.run(['/usr/bin/python3', os.path.join(HERE, 'py_lossy.py')], penv,
                      timeout=240)
        if rc == 77:
            return 77
        if rc:
            failed.append('py_lossy.py')
    else:
        for cmd in cases(a.group, 0):
            if vt.mode_pair(cmd, penv):
                failed.append(' '.join(cmd))
    cnt = read_stat(a.stat, env)
    if cnt is None:
        return h.fail('uroce-stat failed')
    print('port counters:', {k: v for k, v in cnt.items() if v})
    if cnt['drop.tx-nobuf']:
        failed.append('frames dropped for lack of TX buffers')
    if cnt['tx_pkts'] == 0 or cnt['rx_roce'] == 0:
        failed.append('no traffic counted')
    if 'drop=' in a.fault and (cnt['fault_drop'] == 0 or
                               cnt['drop.fault'] != cnt['fault_drop']):
        failed.append('drop counters inconsistent')
    if not a.fault and cnt['icrc_errors'] + cnt['fault_drop']:
        failed.append('errors counted without faults')
    if 'corrupt=' in a.fault:
        # every corrupted frame accounted for, from the daemon's closing
        # counters (dup/reorder beside corrupt: held or doubled ones are
        # counted, not followed)
        rig.close()
        failed += h.corrupt_accounting(rig.text, need_icrc=False,
                                       follow_all=not re.search(r'dup=|reorder=|delay', a.fault))
    if failed:
        return h.fail('\n  ' + '\n  '.join(failed))
    return 0


if __name__ == '__main__':
    sys.exit(h.main(run_test))
