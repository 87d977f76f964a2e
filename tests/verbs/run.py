#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Run a verbs test against a private uroced (tests/lib/harness.py: the
daemon started in its own run directory, its sockets waited for while it
lives, stopped and judged by exit status and log).

  run.py --uroced PATH --shim PATH MODE [ARGS...]
  MODE exec CMD...     run CMD (a C test linked with liburoce) once
  MODE pair CMD...     CMD as server, CMD + 127.0.0.1 as client, preloaded;
                       the client starts once the server listens on its
                       TCP port (-p: a port the kernel picks, whatever
                       number was given), no retry
  MODE clients N CMD...  a server for N clients (CMD -c N) and N clients
  MODE devices         ibv_devices and ibv_devinfo -v, preloaded
  MODE py SCRIPT...    /usr/bin/python3 SCRIPT, preloaded
Exit status: 0 pass, 77 skip, anything else fail.
"""
import argparse
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness as h  # noqa: E402

TIMEOUT = 90


def with_port(cmd):
    """cmd with its TCP port (-p) replaced by one the kernel picked."""
    port = h.free_tcp_port()
    cmd = list(cmd)
    if '-p' in cmd:
        cmd[cmd.index('-p') + 1] = str(port)
    else:
        cmd += ['-p', str(port)]
    return cmd, port


def wait_listen(srv, port):
    """The server listens on its TCP port; False once it has exited."""
    return h.wait_until(lambda: h.tcp_listening(port, srv.p.pid), srv.alive, TIMEOUT)


def server_verdict(srv, rcs):
    """Wait for the server; 0 if it and every client (rcs) succeeded."""
    st, sout = srv.finish(TIMEOUT)
    sys.stdout.write('--- server ---\n' + sout)
    if st is None:
        return h.fail('server timed out')
    if any(rcs) or st != 0:
        return h.fail('client rc %s server rc %d' % (rcs, st))
    return 0


def mode_pair(cmd, env):
    cmd, port = with_port(cmd)
    ok, _, _ = h.pair(cmd, cmd + ['127.0.0.1'], env, ready=port)
    return 0 if ok else h.fail('server or client failed')


def mode_clients(n, cmd, env):
    """A server for n clients (cmd -c n) and n client processes at once
    (ibv_xsrq_pingpong: the server serves them together)."""
    cmd, port = with_port(cmd)
    srv = h.Bg(cmd + ['-c', str(n)], env, name='server')
    clients = []
    try:
        if not wait_listen(srv, port):
            sys.stdout.write(srv.kill())
            return h.fail('the server exited before it listened on TCP port %d' % port)
        clients = [h.Bg(cmd + ['127.0.0.1'], env, name='client%d' % k) for k in range(n)]
        rcs = []
        for k, c in enumerate(clients):
            st, out = c.finish(TIMEOUT)
            sys.stdout.write('--- client %d ---\n' % k + out)
            rcs.append(1 if st is None else st)
        return server_verdict(srv, rcs)
    finally:
        for p in clients + [srv]:
            p.kill()


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
    rc, out = h.run(['ibv_devices'], env)
    mute.close()
    names = ['uroce%d' % i for i in range(ndaemons)]
    if rc != 0 or any(n not in out for n in names):
        return h.fail('ibv_devices: %s missing' % names)
    if 'stale' in out or 'mute' in out:
        return h.fail('ibv_devices lists a socket without a daemon')
    rc, out = h.run(['ibv_devinfo', '-v'], env)
    want = ['hca_id:\turoce0', 'PORT_ACTIVE', 'Ethernet', 'RoCE v2',
            'vendor_id:\t\t\t0x1ace']
    missing = [w for w in want if w not in out]
    if rc != 0 or missing:
        return h.fail('ibv_devinfo: missing %r (rc %d)' % (missing, rc))
    rc, out = h.run(['ibv_devinfo', '-d', 'uroce0'], env)
    if rc != 0 or 'uroce0' not in out:
        return h.fail('ibv_devinfo -d uroce0 (rc %d)' % rc)
    return 0


def run_test():
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
    need = {'pair': a.args[:1], 'clients': a.args[1:2],
            'devices': ['ibv_devices', 'ibv_devinfo']}
    if not h.need(*need.get(a.mode, [])):
        return h.skip('a program of the test is not installed')
    rig = h.Rig(a.uroced, 'uroce-vt-')
    if '--busy-poll' in a.daemon_arg:
        rig.env['UROCE_TEST_BUSY_POLL'] = '1'
    d = rig.start(a.daemon_arg)
    for i in range(1, a.daemons):
        name = 'uroce%d' % i
        rig.start(['--dev', name, '--mac', '02:00:00:00:01:%02x' % i] + a.daemon_arg,
                  devs=[name])
    env = dict(rig.env, UROCE_TEST_DAEMON_PID=str(d.pid))
    rig.env = env
    penv = rig.penv(a.shim, a.preload_first)
    if a.mode == 'exec':
        rc, _ = h.run(a.args, env, TIMEOUT)
    elif a.mode == 'pair':
        rc = mode_pair(a.args, penv)
    elif a.mode == 'clients':
        rc = mode_clients(int(a.args[0]), a.args[1:], penv)
    elif a.mode == 'devices':
        rc = mode_devices(penv, a.daemons)
    elif a.mode == 'py':
        rc, _ = h.run(['/usr/bin/python3'] + a.args, penv, TIMEOUT)
    else:
        print('unknown mode', a.mode)
        rc = 2
    return rc


if __name__ == '__main__':
    sys.exit(h.main(run_test))
