#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""uroced under valgrind memcheck, serving unmodified verbs programs.

Starts `valgrind uroced` with a private UROCE_RUN_DIR, runs each PROGRAM
as server + client (127.0.0.1, a TCP port the kernel picked; the client
starts once the server listens, never again) with liburoce preloaded,
then SIGTERM.
With --vg-clients the programs (and so liburoce in them) run under
memcheck too. Passes when every program exits 0 and every valgrind exits
0: --error-exitcode is 99, so any invalid access, use of an uninitialised
value, uninitialised bytes handed to a system call (a socket message) or
definite leak at exit fails the test. Every wait is bounded; nothing is
left running, even on failure.

  vg_daemon.py --valgrind V --uroced U --shim S [--vg-clients] \
               PROGRAM[,ARG...]...
Exit status: 0 pass, 77 skip, anything else fail.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from harness import (free_tcp_port, kill_group, tcp_listening, wait_socket,  # noqa: E402
                     wait_until)  # (tests/lib/harness.py)

VG_ERR = 99
# valgrind slows the daemon 20-50x; all of these are generous bounds
START_LIMIT = 120.0
RUN_LIMIT = 150.0
STOP_LIMIT = 90.0


def vg_cmd(valgrind, log, supp):
    cmd = [valgrind, '--tool=memcheck', '--error-exitcode=%d' % VG_ERR,
           '--track-origins=yes', '--leak-check=full',
           # DPDK's control threads are never joined: their TLS is
           # "possibly lost" at exit; only definite leaks are ours to fix
           '--errors-for-leak-kinds=definite', '--show-leak-kinds=definite',
           '--log-file=' + log]
    if supp:
        cmd.append('--suppressions=' + supp)
    return cmd


def start(cmd, env, log):
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def finish(p, limit):
    """Exit status of p, or None when it had to be killed."""
    try:
        return p.wait(limit)
    except subprocess.TimeoutExpired:
        kill_group(p)
        return None


def show(path):
    try:
        with open(path, errors='replace') as f:
            sys.stdout.write('--- %s ---\n%s' % (os.path.basename(path), f.read()))
    except OSError:
        pass


def run_pair(prog, env, run_dir, idx, vg):
    """Server on a TCP port the kernel picked, then one client once the
    server listens there (read from /proc, bounded by the server's life):
    no retry, so a client's failure is the verdict."""
    port = free_tcp_port()
    prog = prog + ['-p', str(port)]
    srv_log = os.path.join(run_dir, 'srv%d.log' % idx)
    pre_s = vg(os.path.join(run_dir, 'vg-srv%d.log' % idx)) if vg else []
    print('+ server:', ' '.join(pre_s + prog), flush=True)
    with open(srv_log, 'w') as lf:
        srv = start(pre_s + prog, env, lf)
    ok = False
    rc = None
    cli_log = os.path.join(run_dir, 'cli%d.log' % idx)
    try:
        deadline = time.monotonic() + RUN_LIMIT
        if not wait_until(lambda: tcp_listening(port), lambda: srv.poll() is None, RUN_LIMIT):
            print('%s: the server %s before it listened on TCP port %d' %
                  (prog[0], 'exited (status %s)' % srv.poll() if srv.poll() is not None
                   else 'did not listen within %ds' % RUN_LIMIT, port), flush=True)
            show(srv_log)
            return False
        pre_c = vg(os.path.join(run_dir, 'vg-cli%d.log' % idx)) if vg else []
        print('+ client:', ' '.join(pre_c + prog + ['127.0.0.1']), flush=True)
        with open(cli_log, 'w') as lf:
            cli = start(pre_c + prog + ['127.0.0.1'], env, lf)
        rc = finish(cli, max(1.0, deadline - time.monotonic()))
        src = finish(srv, max(1.0, deadline - time.monotonic()))
        show(cli_log)
        show(srv_log)
        if vg:
            show(os.path.join(run_dir, 'vg-cli%d.log' % idx))
            show(os.path.join(run_dir, 'vg-srv%d.log' % idx))
        print('%s: client rc %s server rc %s' % (prog[0], rc, src), flush=True)
        ok = rc == 0 and src == 0
    finally:
        if srv.poll() is None:
            kill_group(srv)
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--valgrind', required=True)
    ap.add_argument('--uroced', required=True)
    ap.add_argument('--shim', required=True)
    ap.add_argument('--supp', default='')
    ap.add_argument('--vg-clients', action='store_true')
    ap.add_argument('programs', nargs='+')
    a = ap.parse_args()
    # meson ends an overrunning test with SIGTERM: unwind through finally
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    progs = [p.split(',') for p in a.programs]
    for p in progs:
        if not shutil.which(p[0]):
            print('not installed:', p[0])
            return 77
    if not os.access(a.uroced, os.X_OK) or not os.access(a.valgrind, os.X_OK):
        print('no uroced or valgrind')
        return 77

    run_dir = tempfile.mkdtemp(prefix='uroce-vg-')
    env = dict(os.environ)
    env['UROCE_RUN_DIR'] = run_dir
    env.pop('LD_PRELOAD', None)
    dlog_path = os.path.join(run_dir, 'uroced.log')
    vlog_path = os.path.join(run_dir, 'vg-uroced.log')
    dlog = open(dlog_path, 'w')
    d = start(vg_cmd(a.valgrind, vlog_path, a.supp) + [a.uroced], env, dlog)
    ok = False
    try:
        if not wait_socket(os.path.join(run_dir, 'uroce0.sock'), d, START_LIMIT):
            print('uroced did not come up under valgrind')
            return 1
        penv = dict(env)
        penv['LD_PRELOAD'] = os.path.abspath(a.shim)
        vg = (lambda log: vg_cmd(a.valgrind, log, a.supp)) if a.vg_clients else None
        ok = True
        for i, p in enumerate(progs):
            ok = run_pair(p, penv, run_dir, i, vg) and ok
        d.send_signal(signal.SIGTERM)
        drc = finish(d, STOP_LIMIT)
        dlog.flush()
        show(dlog_path)
        show(vlog_path)
        if drc is None:
            print('uroced under valgrind did not stop within %ds of SIGTERM' % STOP_LIMIT)
            ok = False
        elif drc != 0:
            print('uroced under valgrind exited %d%s' %
                  (drc, ' (valgrind found errors)' if drc == VG_ERR else ''))
            ok = False
        return 0 if ok else 1
    finally:
        if d.poll() is None:
            kill_group(d)
        dlog.close()
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
