#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Open MPI over UCX on uroce with fresh buffers per size (issue 19).

  mpi_mem.py --uroced P --shim P [--preload-first P] [--max BYTES]
             TOPO RCACHE PROGRAM

TOPO    one     both ranks on uroce0 of one default daemon
        two     two daemons wired by memif, rank r on uroce<r>: every
                frame leaves one daemon and enters the other
RCACHE  on      UCX's registration cache (its default)
        off     UCX_IB_REG_METHODS=direct, UCX_RCACHE_ENABLE=n: a
                registration per message

mpirun -np 2, pml ucx, UCX_TLS=rc_verbs,ud_verbs; PROGRAM is mpi_mem.c
(ping-pong and all-reduce, a fresh malloc per size and free after it,
every byte checked). Every daemon is started with a private run directory
and stopped; exit 0 pass, 77 skip (no mpirun), else fail."""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'verbs'))
import run as vr  # noqa: E402  (tests/verbs/run.py)


def daemons(uroced, topo, run_dir, log):
    """Start the daemons; returns their Popen objects (the caller stops
    them) or None when one did not come up."""
    env = dict(os.environ, UROCE_RUN_DIR=run_dir)
    if topo == 'one':
        argv = [[uroced]]
    else:
        sock = os.path.join(run_dir, 'memif.sock')
        port = 'net_memif0,role=%s,socket=' + sock + ',bsize=10240'
        argv = [[uroced, '--dev', 'uroce0', '--port', port % 'server', '--ip', '10.19.0.1',
                 '--mtu', '9000'],
                [uroced, '--dev', 'uroce1', '--port', port % 'client', '--ip', '10.19.0.2',
                 '--mtu', '9000', '--mac', '02:00:00:00:19:02']]
    ps = []
    for i, a in enumerate(argv):
        p = subprocess.Popen(a, env=env, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        ps.append(p)
        if not vr.wait_socket(os.path.join(run_dir, 'uroce%d.sock' % i), p):
            print('uroce%d did not come up' % i)
            return ps, False
    return ps, True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--uroced', required=True)
    ap.add_argument('--shim', required=True)
    ap.add_argument('--preload-first', default='')
    ap.add_argument('--max', default=str(64 << 20))
    ap.add_argument('topo', choices=('one', 'two'))
    ap.add_argument('rcache', choices=('on', 'off'))
    ap.add_argument('prog')
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    if not shutil.which('mpirun'):
        print('not installed: mpirun')
        return 77
    run_dir = tempfile.mkdtemp(prefix='uroce-mpimem-')
    log = open(os.path.join(run_dir, 'uroced.log'), 'w+')
    ps = []
    try:
        ps, ok = daemons(a.uroced, a.topo, run_dir, log)
        if not ok:
            return 1
        seed = random.randrange(1, 1 << 30)
        print('seed', seed, flush=True)
        env = {k: v for k, v in os.environ.items() if k not in ('LD_PRELOAD', 'ASAN_OPTIONS')}
        env['UROCE_RUN_DIR'] = run_dir
        pre = os.path.abspath(a.shim)
        if a.preload_first:
            pre = a.preload_first + ':' + pre
        ucx = ['-x', 'UCX_TLS=rc_verbs,ud_verbs', '-x', 'UCX_LOG_LEVEL=warn']
        if a.rcache == 'off':
            ucx += ['-x', 'UCX_IB_REG_METHODS=direct', '-x', 'UCX_RCACHE_ENABLE=n']
        if a.topo == 'one':
            ucx += ['-x', 'UCX_NET_DEVICES=uroce0:1', '-x', 'UCX_IB_GID_INDEX=1']
            prog = [a.prog]
        else:
            # rank r on uroce<r>: the device is chosen in the rank itself
            ucx += ['-x', 'UCX_IB_GID_INDEX=1']
            prog = ['/bin/sh', '-c',
                    'UCX_NET_DEVICES=uroce${OMPI_COMM_WORLD_RANK}:1 exec "$0" "$@"', a.prog]
        cmd = (['mpirun', '--allow-run-as-root', '--oversubscribe', '-np', '2',
                '--mca', 'pml', 'ucx', '--mca', 'osc', 'ucx', '--mca', 'btl', 'self',
                '-x', 'LD_PRELOAD=' + pre, '-x', 'UROCE_RUN_DIR',
                # Open MPI's components leak at finalize (sanitized builds)
                '-x', 'ASAN_OPTIONS=detect_leaks=0'] + ucx + prog + [str(seed), a.max])
        rc, out = vr.run(cmd, env, 600)
        if rc or not re.search(r'sizes 1 B \.\. \d+ B, fresh buffers: ok', out):
            print('FAIL: mpirun rc %d' % rc)
            return 1
        return 0
    except subprocess.TimeoutExpired as e:
        print('FAIL: timed out:', e)
        return 1
    finally:
        st = [vr.stop(p) for p in ps]
        log.seek(0)
        text = log.read()
        log.close()
        if text:
            sys.stdout.write('--- uroced ---\n' + text[-3000:])
        faults = vr.daemon_faults(st, text)
        shutil.rmtree(run_dir, ignore_errors=True)
        if faults:
            for f in faults:
                print('FAIL:', f)
            sys.exit(1)


if __name__ == '__main__':
    sys.exit(main())
