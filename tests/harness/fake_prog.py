#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Programs the harnesses run (ibv_rc_pingpong, rping, fi_info, uroce-ctl), faked:
the harness suite links this file under those names into a directory put
first on PATH. FAKE_CLIENT says how a client behaves:
  ok       does its part and exits 0
  exit1    does its part, prints a result, then exits 1
  nodev    "No IB devices found" / "No RDMA devices", exit 1 (never connects)
  nodev-once  the first run as nodev, later runs as ok (a transient
           failure that a retry-on-anything harness hides)
  race     the first run prints its program's "nobody listens yet" answer
           and exits 1; later runs behave as ok (a race, once)
  race-always  the "nobody listens yet" answer on every run"""
import os
import socket
import sys
import time

name = os.path.basename(sys.argv[0])
args = sys.argv[1:]
mode = os.environ.get('FAKE_CLIENT', 'ok')
run = os.environ.get('UROCE_RUN_DIR', '/nonexistent')


def arg(opt, default=None):
    return args[args.index(opt) + 1] if opt in args and args.index(opt) + 1 < len(args) \
        else default


def once(tag):
    """True the first time tag is asked for in this run directory."""
    path = os.path.join(run, 'fake-' + tag)
    if os.path.exists(path):
        return False
    open(path, 'w').close()
    return True


def client_mode():
    if mode == 'nodev' or (mode == 'nodev-once' and once('nodev-' + name)):
        print('No IB devices found' if name.startswith('ibv_') else 'No RDMA devices',
              file=sys.stderr)
        sys.exit(1)
    return mode == 'race-always' or (mode == 'race' and once('race-' + name))


if name.startswith('ibv_') and name.endswith('_pingpong'):
    port = int(arg('-p', '18515'))
    if args and args[-1] in ('127.0.0.1', 'localhost'):   # the client
        if client_mode():
            print("Couldn't connect to 127.0.0.1:%d" % port)
            sys.exit(1)
        with socket.create_connection(('127.0.0.1', port), timeout=30) as c:
            c.sendall(b'x')
        print('8192000 bytes in 0.01 seconds = 6553.60 Mbit/sec')
        sys.exit(1 if mode == 'exit1' else 0)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(('127.0.0.1', port))
    s.listen(1)
    c, _ = s.accept()
    c.recv(1)
    print('8192000 bytes in 0.01 seconds = 6553.60 Mbit/sec')
    sys.exit(0)

if name == 'rping':
    count = int(arg('-C', '1'))
    done = os.path.join(run, 'fake-rping-done')
    if '-c' in args:
        if client_mode():
            print('cma event RDMA_CM_EVENT_REJECTED, error 8')
            sys.exit(255)
        for i in range(count):
            print('ping data: rdma-ping-%d: ABCDEF' % i)
        open(done, 'w').close()
        sys.exit(1 if mode == 'exit1' else 0)
    # the daemon's CM listens while the server lives (fake uroce-ctl)
    listening = os.path.join(run, 'fake-rping-listening')
    open(listening, 'w').close()
    try:
        while not os.path.exists(done):
            time.sleep(0.05)
    finally:
        os.unlink(listening)
    for i in range(count):
        print('server ping data: rdma-ping-%d: ABCDEF' % i)
    sys.exit(0)

if name == 'uroce-ctl':
    # `--run-dir D -d DEV --json counters --port`: what Rig.cm_listeners
    # reads, one listener while a fake rping server lives in D
    d = arg('--run-dir', run)
    n = int(os.path.exists(os.path.join(d, 'fake-rping-listening')))
    print('{"cm": {"listeners": %d}}' % n)
    sys.exit(0)

if name == 'fi_info':
    print('provider: verbs\n    fabric: IB-0xfe80000000000000\n    domain: uroce0\n'
          '    version: 118.0\n    type: FI_EP_MSG\n    protocol: FI_PROTO_RDMA_CM_IB_RC\n'
          'provider: verbs\n    fabric: IB-0xfe80000000000000\n    domain: uroce0-dgram\n'
          '    version: 118.0\n    type: FI_EP_RDM\n    protocol: FI_PROTO_RXD')
    sys.exit(0)

print('fake_prog: no behaviour for %s' % name, file=sys.stderr)
sys.exit(2)
