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
import signal
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as vt  # noqa: E402  (tests/verbs/run.py: bounded runs, cleanup)

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--uroced', required=True)
    ap.add_argument('--shim', required=True)
    ap.add_argument('--stat', required=True)
    ap.add_argument('--preload-first', default='')
    ap.add_argument('--fault', default='')
    ap.add_argument('--tcp-port', type=int, default=19500)
    ap.add_argument('group')
    a = ap.parse_args()
    # meson ends an overrunning test with SIGTERM: unwind through finally
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    if not os.access(a.uroced, os.X_OK):
        print('no uroced')
        return 77
    need = {'pingpong': ['ibv_rc_pingpong'],
            'perftest': ['ib_write_bw', 'ib_read_bw', 'ib_send_bw', 'ib_atomic_bw']}
    missing = [c for c in need.get(a.group, []) if not shutil.which(c)]
    if missing:
        print('not installed:', ' '.join(missing))
        return 77

    run_dir = tempfile.mkdtemp(prefix='uroce-acc-')
    env = dict(os.environ)
    env['UROCE_RUN_DIR'] = run_dir
    log = open(os.path.join(run_dir, 'uroced.log'), 'w+')
    dargs = ['--fault', a.fault] if a.fault else []
    d = subprocess.Popen([a.uroced] + dargs, env=env, stdout=log, stderr=subprocess.STDOUT,
                         start_new_session=True)
    try:
        if not vt.wait_socket(os.path.join(run_dir, 'uroce0.sock'), d):
            print('uroced did not come up')
            return 1
        penv = dict(env)
        penv['LD_PRELOAD'] = os.path.abspath(a.shim)
        if a.preload_first:
            penv['LD_PRELOAD'] = a.preload_first + ':' + penv['LD_PRELOAD']
            penv['ASAN_OPTIONS'] = 'detect_leaks=0:' + penv.get('ASAN_OPTIONS', '')
        failed = []
        if a.group == 'py':
            penv['UROCE_TEST_STAT'] = a.stat
            penv['UROCE_TEST_FAULT'] = a.fault
            rc, _ = vt.run(['/usr/bin/python3', os.path.join(HERE, 'py_lossy.py')], penv,
                           timeout=240)
            if rc == 77:
                return 77
            if rc:
                failed.append('py_lossy.py')
        else:
            for cmd in cases(a.group, a.tcp_port):
                if vt.mode_pair(cmd, penv):
                    failed.append(' '.join(cmd))
        cnt = read_stat(a.stat, env)
        if cnt is None:
            print('uroce-stat failed')
            return 1
        print('port counters:', {k: v for k, v in cnt.items() if v})
        if cnt['drop.tx-nobuf']:
            failed.append('frames dropped for lack of TX buffers')
        if cnt['tx_pkts'] == 0 or cnt['rx_roce'] == 0:
            failed.append('no traffic counted')
        if 'drop=' in a.fault and (cnt['fault_drop'] == 0 or
                                   cnt['drop.fault'] != cnt['fault_drop']):
            failed.append('drop counters inconsistent')
        if 'corrupt=' in a.fault and (cnt['fault_corrupt'] == 0 or
                                      cnt['icrc_errors'] + cnt['hdr_errors'] == 0):
            failed.append('corruption not detected by ICRC/header checks')
        if not a.fault and cnt['icrc_errors'] + cnt['fault_drop']:
            failed.append('errors counted without faults')
        if failed:
            print('FAILED:\n  ' + '\n  '.join(failed))
            return 1
        return 0
    except subprocess.TimeoutExpired as e:
        print('timed out:', e)
        return 1
    finally:
        vt.stop(d)
        log.seek(0)
        tail = log.read()[-3000:]
        log.close()
        if tail:
            sys.stdout.write('--- uroced ---\n' + tail)
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
