#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The harness's verdict on a daemon it started (tests/lib/harness.py): a non-zero exit status or a
sanitizer report in the daemon's log fails the test; a daemon the test
itself SIGKILLed does not. Real processes, no uroced needed."""
import contextlib
import io
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness as run  # noqa: E402  (tests/lib/harness.py: the daemon verdict)

fails = 0


def shell(trap):
    """A shell with its SIGTERM trap in place before we return."""
    p = subprocess.Popen(['/bin/sh', '-c', trap + '; echo ready; while :; do sleep 0.05; done'],
                         stdout=subprocess.PIPE)
    p.stdout.readline()
    return p


def check(cond, what):
    global fails
    print('%s %s' % ('ok  ' if cond else 'FAIL', what))
    fails += 0 if cond else 1


check(run.daemon_faults([0, 0], 'uroce0: serving\n') == [], 'clean exit, clean log')
check(run.daemon_faults([23], '') != [], 'LeakSanitizer exit code 23')
for mark in ('==12==ERROR: LeakSanitizer: detected memory leaks',
             '==12==ERROR: AddressSanitizer: heap-use-after-free on address',
             '../emu/cq.c:40:3: runtime error: signed integer overflow'):
    check(run.daemon_faults([0], 'a\n' + mark + '\nb\n') != [], 'report: ' + mark[:40])

# exits 0 on SIGTERM, like uroced
p = shell('trap "exit 0" TERM')
check(run.stop(p) == 0, 'SIGTERM handled, exit 0')
# exits non-zero at the end (a leak report's exit code)
p = shell('trap "exit 23" TERM')
check(run.stop(p) == 23, 'exit 23 reported')
# ignores SIGTERM: run.py kills it, and that is a failure; what it was
# doing goes to the log first (its threads; their stacks when gdb is there)
p = shell('trap "" TERM')
out = io.StringIO()
with contextlib.redirect_stdout(out):
    st = run.stop(p, grace=2)  # the default grace is a minute
check(st == -signal.SIGKILL and run.daemon_faults([st], '') != [], 'SIGTERM ignored: %s' % st)
check(('%d still running 2s after SIGTERM' % p.pid) in out.getvalue() and
      ('\n%d sh ' % p.pid) in out.getvalue(), 'its threads dumped: %r' % out.getvalue()[:300])
# the test SIGKILLed it (basic-daemon_death): not the daemon's fault
p = subprocess.Popen(['sleep', '30'])
p.kill()
check(run.stop(p) == 0, 'killed by the test')
# died of a crash on its own
p = subprocess.Popen(['/bin/sh', '-c', 'kill -SEGV $$'])
p.wait(10)
check(run.stop(p) == -signal.SIGSEGV, 'crash reported')
sys.exit(1 if fails else 0)
