#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""uroced stopped by a SIGTERM, then hit by more stop signals while it
exits (a service manager or test harness that sends SIGTERM again): it
must still exit 0 with a clean log. The handler once wrote into the
daemon structures main() had freed: under ASan the use-after-free report
deadlocked against LeakSanitizer's exit scan and the daemon hung.

usage: stop_signals.py UROCED"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness as h  # noqa: E402  (tests/lib/harness.py)

ROUNDS = 3


def run_test():
    for k in range(ROUNDS):
        rig = h.Rig(sys.argv[1], 'uroce-sig-')
        p = rig.start([])
        p.send_signal(signal.SIGTERM)
        sent = 0
        end = time.monotonic() + 60
        # signals until it has exited (not reaped: poll() would reap)
        while p.poll() is None and time.monotonic() < end:
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
                try:
                    os.kill(p.pid, sig)
                    sent += 1
                except ProcessLookupError:
                    pass
            time.sleep(0.001)
        if p.poll() is None:
            sys.stdout.write(h.hang_dump(p.pid, 'still running 60 s after SIGTERM'))
        faults = rig.close()
        rig.remove()
        print('round %d: %d more stop signals during the exit, faults %s' % (k, sent, faults))
        if faults:
            return h.fail('uroced under repeated stop signals: %s' % faults)
    return 0


if __name__ == '__main__':
    sys.exit(h.main(run_test))
