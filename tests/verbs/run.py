#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Run a verbs test against a private uroced.

Starts uroced with its own UROCE_RUN_DIR (a temp dir), waits for its
socket, runs the test, stops the daemon (SIGTERM, then SIGKILL), and
removes the directory. Every wait is bounded; nothing is left running.

  run.py --uroced PATH --shim PATH MODE [ARGS...]
  MODE exec CMD...     run CMD (a C test linked with liburoce) once
  MODE pair CMD...     CMD as server, CMD + 127.0.0.1 as client, preloaded
  MODE devices         ibv_devices and ibv_devinfo -v, preloaded
  MODE py SCRIPT...    /usr/bin/python3 SCRIPT, preloaded
Exit status: 0 pass, 77 skip, anything else fail.
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

TIMEOUT = 90


def accepts(path):
    """A daemon listens on the control socket path."""
    if not os.path.exists(path):
        return False
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def wait_sockets(paths, proc, limit=20.0):
    """True once every socket in paths accepts a connection; False when
    proc (the daemon serving them) exits first or limit seconds pass."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        if all(accepts(p) for p in paths):
            return True
        time.sleep(0.05)
    return False


def wait_socket(path, proc, limit=20.0):
    return wait_sockets([path], proc, limit)


def stop(proc):
    """SIGTERM, then SIGKILL; the exit status (negative: killed by that
    signal, so a daemon that ignored SIGTERM shows as -9). A daemon the
    test itself SIGKILLed (basic-daemon_death, basic-daemon_kill_poll) is
    gone before we stop it: that is 0 here, it says nothing about leaks."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
            return proc.returncode
    # SIGKILL not ours (we may have raced with the kill and sent SIGTERM
    # to a dying process): the test's
    return 0 if proc.returncode == -signal.SIGKILL else proc.returncode


# what the sanitizers print; their exit codes alone are not enough (UBSan
# without halt_on_error reports and goes on)
SANITIZER_MARKS = ('ERROR: AddressSanitizer', 'ERROR: LeakSanitizer', 'runtime error:')


def daemon_faults(statuses, log_text):
    """Why the daemons' end fails the test: a non-zero exit status (crash,
    LeakSanitizer's exit code, killed after ignoring SIGTERM) or a
    sanitizer report in their log. [] when they ended cleanly."""
    why = ['uroced exit status %d' % st for st in statuses if st != 0]
    why += ['uroced log: %r' % ln.strip() for ln in log_text.splitlines()
            if any(m in ln for m in SANITIZER_MARKS)][:5]
    return why


def kill_group(p):
    """The test and anything it forked: its own session, killed whole."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def run(cmd, env, timeout=TIMEOUT):
    print('+', ' '.join(cmd), flush=True)
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(p)
        raise
    # leftovers of a test that exited (a forked child): gone too
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    out = out.decode(errors='replace')
    sys.stdout.write(out)
    return p.returncode, out


def server_verdict(srv, rcs):
    """Wait for the server; 0 if it and every client (rcs) succeeded."""
    try:
        sout, _ = srv.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        kill_group(srv)
        print('server timed out')
        return 1
    sys.stdout.write('--- server ---\n' + sout.decode(errors='replace'))
    if any(rcs) or srv.returncode != 0:
        print('client rc %s server rc %d' % (rcs, srv.returncode))
        return 1
    return 0


def mode_pair(cmd, env):
    print('+ server:', ' '.join(cmd), flush=True)
    srv = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # the server listens on TCP before anything else; retry the client
        # while it is not up yet (perftest/pingpong clients fail fast)
        deadline = time.monotonic() + 20
        while True:
            time.sleep(0.3)
            rc, out = run(cmd + ['127.0.0.1'], env)
            if rc == 0 or time.monotonic() > deadline or srv.poll() is not None:
                break
            if 'connect to' not in out.lower() and "couldn't connect" not in out.lower() \
               and 'unable to open file descriptor' not in out.lower():
                break
        return server_verdict(srv, [rc])
    finally:
        if srv.poll() is None:
            kill_group(srv)


def tcp_listening(port):
    """True once something listens on TCP port (read from /proc: a probe
    connection would count as a client of the server)."""
    for f in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            with open(f) as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for r in rows:
            loc, st = r.split()[1], r.split()[3]
            if st == '0A' and int(loc.rsplit(':', 1)[1], 16) == port:
                return True
    return False


def mode_clients(n, cmd, env):
    """A server for n clients (cmd -c n) and n client processes at once
    (ibv_xsrq_pingpong: the server serves them together)."""
    port = int(cmd[cmd.index('-p') + 1])
    print('+ server:', ' '.join(cmd + ['-c', str(n)]), flush=True)
    srv = subprocess.Popen(cmd + ['-c', str(n)], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, start_new_session=True)
    clients = []
    try:
        deadline = time.monotonic() + 20
        while not tcp_listening(port) and srv.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        for _ in range(n):
            clients.append(subprocess.Popen(cmd + ['127.0.0.1'], env=env, stdout=subprocess.PIPE,
                                            stderr=subprocess.STDOUT, start_new_session=True))
        rcs = []
        for k, c in enumerate(clients):
            try:
                out, _ = c.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                kill_group(c)
                out = b'client timed out\n'
            sys.stdout.write('--- client %d ---\n' % k + out.decode(errors='replace'))
            rcs.append(c.returncode)
        return server_verdict(srv, rcs)
    finally:
        for p in clients + [srv]:
            if p.poll() is None:
                kill_group(p)


def mode_devices(env, ndaemons):
    # A stale socket (nobody listening) and a mute one (accepts, never
    # answers) must not be listed, and must not hang the listing.
    run_dir = env['UROCE_RUN_DIR']
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    stale.bind(os.path.join(run_dir, 'stale.sock'))
    stale.close()
    mute = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    mute.bind(os.path.join(run_dir, 'mute.sock'))
    mute.listen(4)
    rc, out = run(['ibv_devices'], env)
    mute.close()
    names = ['uroce%d' % i for i in range(ndaemons)]
    if rc != 0 or any(n not in out for n in names):
        print('ibv_devices: %s missing' % names)
        return 1
    if 'stale' in out or 'mute' in out:
        print('ibv_devices lists a socket without a daemon')
        return 1
    rc, out = run(['ibv_devinfo', '-v'], env)
    want = ['hca_id:\turoce0', 'PORT_ACTIVE', 'Ethernet', 'RoCE v2',
            'vendor_id:\t\t\t0x1ace']
    missing = [w for w in want if w not in out]
    if rc != 0 or missing:
        print('ibv_devinfo: missing %r (rc %d)' % (missing, rc))
        return 1
    rc, out = run(['ibv_devinfo', '-d', 'uroce0'], env)
    if rc != 0 or 'uroce0' not in out:
        return 1
    return 0


def main():
    state = {}
    rc = run_test(state)
    why = state.get('daemon_faults', [])
    if why and rc in (0, 77):
        for w in why:
            print('FAIL:', w)
        return 1
    return rc


def run_test(state):
    ap = argparse.ArgumentParser()
    ap.add_argument('--uroced', required=True)
    ap.add_argument('--shim', required=True)
    ap.add_argument('--daemon-arg', action='append', default=[])
    ap.add_argument('--preload-first', default='',
                    help='sanitizer runtime to preload before liburoce')
    ap.add_argument('--daemons', type=int, default=1,
                    help='start uroce0..N-1, one daemon each')
    ap.add_argument('mode')
    ap.add_argument('args', nargs=argparse.REMAINDER)
    a = ap.parse_args()
    # meson stops a test that overruns its timeout with SIGTERM: turn it into
    # an exception so the finally below still stops the daemons and removes
    # the run directory
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    if not os.access(a.uroced, os.X_OK):
        print('no uroced at', a.uroced)
        return 77

    run_dir = tempfile.mkdtemp(prefix='uroce-vt-')
    env = dict(os.environ)
    env['UROCE_RUN_DIR'] = run_dir
    log = open(os.path.join(run_dir, 'uroced.log'), 'w+')
    if '--busy-poll' in a.daemon_arg:
        env['UROCE_TEST_BUSY_POLL'] = '1'
    d = subprocess.Popen([a.uroced] + a.daemon_arg, env=env, stdout=log,
                         stderr=subprocess.STDOUT, start_new_session=True)
    extra = []
    try:
        if not wait_socket(os.path.join(run_dir, 'uroce0.sock'), d):
            print('uroced did not come up')
            return 1
        for i in range(1, a.daemons):
            name = 'uroce%d' % i
            x = subprocess.Popen([a.uroced, '--dev', name,
                                  '--mac', '02:00:00:00:01:%02x' % i] + a.daemon_arg,
                                 env=env, stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True)
            extra.append(x)
            if not wait_socket(os.path.join(run_dir, name + '.sock'), x):
                print(name, 'did not come up')
                return 1
        env['UROCE_TEST_DAEMON_PID'] = str(d.pid)
        need = {'pair': a.args[:1], 'clients': a.args[1:2],
                'devices': ['ibv_devices', 'ibv_devinfo']}
        missing = [c for c in need.get(a.mode, []) if not shutil.which(c)]
        if missing:
            print('not installed:', ' '.join(missing))
            return 77
        penv = dict(env)
        penv['LD_PRELOAD'] = os.path.abspath(a.shim)
        if a.preload_first:
            # an instrumented liburoce in an uninstrumented program: the
            # runtime must come first; the programs' own leaks are not ours
            penv['LD_PRELOAD'] = a.preload_first + ':' + penv['LD_PRELOAD']
            penv['ASAN_OPTIONS'] = 'detect_leaks=0:' + penv.get('ASAN_OPTIONS', '')
        if a.mode == 'exec':
            rc, _ = run(a.args, env)
        elif a.mode == 'pair':
            rc = mode_pair(a.args, penv)
        elif a.mode == 'clients':
            rc = mode_clients(int(a.args[0]), a.args[1:], penv)
        elif a.mode == 'devices':
            rc = mode_devices(penv, a.daemons)
        elif a.mode == 'py':
            rc, _ = run(['/usr/bin/python3'] + a.args, penv)
        else:
            print('unknown mode', a.mode)
            rc = 2
        return rc
    except subprocess.TimeoutExpired as e:
        print('timed out:', e)
        return 1
    finally:
        statuses = [stop(x) for x in extra] + [stop(d)]
        log.seek(0)
        text = log.read()
        tail = text[-3000:]
        log.close()
        state['daemon_faults'] = daemon_faults(statuses, text)
        if tail:
            sys.stdout.write('--- uroced ---\n' + tail)
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
