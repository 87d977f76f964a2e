#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Open MPI over UCX on uroce with fresh buffers per size (issue 19).

  mpi_mem.py --uroced P --shim P [--max BYTES]
             TOPO RCACHE PROGRAM

TOPO    one     both ranks on uroce0 of one default daemon
        two     two daemons wired by memif, rank r on uroce<r>: every
                frame leaves one daemon and enters the other
RCACHE  on      UCX's registration cache (its default)
        off     UCX_IB_REG_METHODS=direct, UCX_RCACHE_ENABLE=n: a
                registration per message

mpirun -np 2, pml ucx, UCX_TLS=rc_verbs,ud_verbs; PROGRAM is mpi_mem.c
(ping-pong and all-reduce, a fresh malloc per size and free after it,
every byte checked). The daemons run in one private run directory
(tests/lib/harness.py: started, stopped and judged); exit 0 pass, 77
skip (no mpirun), else fail."""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness as h  # noqa: E402


def start(rig, topo):
    """The daemons: one, or two wired by memif (uroce0, uroce1)."""
    if topo == 'one':
        rig.start([])
        return
    sock = os.path.join(rig.dir, 'memif.sock')
    port = 'net_memif0,role=%s,socket=' + sock + ',bsize=10240'
    rig.start(['--dev', 'uroce0', '--port', port % 'server', '--ip', '10.19.0.1',
               '--mtu', '9000'], devs=['uroce0'])
    rig.start(['--dev', 'uroce1', '--port', port % 'client', '--ip', '10.19.0.2',
               '--mtu', '9000', '--mac', '02:00:00:00:19:02'], devs=['uroce1'])


def test(a):
    if not h.need('mpirun'):
        return h.skip('no mpirun')
    rig = h.Rig(a.uroced, 'uroce-mpimem-')
    start(rig, a.topo)
    # a fixed seed (docs/testing.md), another one by MPI_MEM_SEED
    seed = int(os.environ.get('MPI_MEM_SEED', '19'))
    print('seed', seed, '(MPI_MEM_SEED= to change)', flush=True)
    env = {k: v for k, v in rig.env.items() if k not in ('LD_PRELOAD', 'ASAN_OPTIONS')}
    # the shim goes into the ranks alone: the rank program is ours, built
    # with the sanitizer runtime when there is one (a second, preloaded
    # runtime is refused: "incompatible ASan runtimes")
    pre = os.path.abspath(a.shim)
    ucx = ['-x', 'UCX_TLS=rc_verbs,ud_verbs', '-x', 'UCX_LOG_LEVEL=warn']
    if a.rcache == 'off':
        ucx += ['-x', 'UCX_IB_REG_METHODS=direct', '-x', 'UCX_RCACHE_ENABLE=n']
    if a.topo == 'one':
        ucx += ['-x', 'UCX_NET_DEVICES=uroce0:1', '-x', 'UCX_IB_GID_INDEX=1',
                '-x', 'LD_PRELOAD=' + pre]
        prog = [a.prog]
    else:
        # rank r on uroce<r>: the device is chosen in the rank itself, and
        # the shim preloaded there, not into the shell (uninstrumented: a
        # sanitized shim cannot load into it)
        ucx += ['-x', 'UCX_IB_GID_INDEX=1']
        prog = ['/bin/sh', '-c', 'UCX_NET_DEVICES=uroce${OMPI_COMM_WORLD_RANK}:1 '
                'LD_PRELOAD=' + pre + ' exec "$0" "$@"', a.prog]
    cmd = (['mpirun', '--allow-run-as-root', '--oversubscribe', '-np', '2',
            '--mca', 'pml', 'ucx', '--mca', 'osc', 'ucx', '--mca', 'btl', 'self',
            '-x', 'UROCE_RUN_DIR',
            # Open MPI's components leak at finalize (sanitized builds)
            '-x', 'ASAN_OPTIONS=detect_leaks=0'] + ucx + prog + [str(seed), a.max])
    rc, out = h.run(cmd, env, 600)
    h.check(rc == 0, 'mpirun exit status %d' % rc)
    h.check(re.search(r'sizes 1 B \.\. \d+ B, fresh buffers: ok', out), 'every size, every byte')
    return h.verdict()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--uroced', required=True)
    ap.add_argument('--shim', required=True)
    ap.add_argument('--max', default=str(64 << 20))
    ap.add_argument('topo', choices=('one', 'two'))
    ap.add_argument('rcache', choices=('on', 'off'))
    ap.add_argument('prog')
    return h.main(test, ap.parse_args())


if __name__ == '__main__':
    sys.exit(main())
