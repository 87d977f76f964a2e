#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A stand-in for uroced that the harness suite points the harnesses at:
it serves the control sockets and the sysfs files the harnesses wait for,
and ends the way FAKE_UROCED says:
  clean    SIGTERM: exit 0 (a daemon that did nothing wrong)
  report   SIGTERM: print a UBSan report, exit 3
  leak     SIGTERM: print a LeakSanitizer report, exit 23
  die      exit 1 at once, before any socket (a daemon that cannot start)
  hang     never serves its socket (a daemon stuck in start-up)"""
import os
import signal
import socket
import sys
import time

mode = os.environ.get('FAKE_UROCED', 'clean')
run = os.environ['UROCE_RUN_DIR']
devs = [sys.argv[i + 1].split(',')[0] for i, a in enumerate(sys.argv[:-1]) if a == '--dev']
devs = devs or ['uroce0']
print('fake uroced (%s): %s' % (mode, ' '.join(devs)), flush=True)
if mode == 'die':
    print('uroced: no usable port', flush=True)
    sys.exit(1)
if mode == 'hang':
    while True:
        time.sleep(1)
socks = []
for d in devs:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind(os.path.join(run, d + '.sock'))
    s.listen(64)
    socks.append(s)
    os.makedirs(os.path.join(run, 'class', 'infiniband', d), exist_ok=True)
os.makedirs(os.path.join(run, 'class', 'misc', 'rdma_cm'), exist_ok=True)
with open(os.path.join(run, 'class', 'misc', 'rdma_cm', 'abi_version'), 'w') as f:
    f.write('4\n')


def end(*_):
    for d in devs:
        os.unlink(os.path.join(run, d + '.sock'))
        os.rmdir(os.path.join(run, 'class', 'infiniband', d))
    if mode == 'report':
        print('emu/transport/rx.c:44:9: runtime error: signed integer overflow', flush=True)
        sys.exit(3)
    if mode == 'leak':
        print('==4242==ERROR: LeakSanitizer: detected memory leaks', flush=True)
        sys.exit(23)
    sys.exit(0)


signal.signal(signal.SIGTERM, end)
while True:
    signal.pause()
