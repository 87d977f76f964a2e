#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Zero-copy TX and captures (docs/performance.md, "Zero-copy TX").

  zc_capture.py UROCED VERBS_ZC UROCE_STAT UROCE_CTL UROCE_PCAP

A capture wants every frame whole and with its ICRC, so while one runs on
either end of a ring port nothing leaves zero-copy; the capture is valid
(every RoCE frame's ICRC correct, uroce-pcap check). verbs_zc 'integrity'
moves seeded data of many sizes and SGE layouts and itself asserts the
counters: VT_ZC=0, no zero-copy frame during its traffic; otherwise some,
each received from its segments.
  loop-pcap    --pcap from the start
  ctl-capture  uroce-ctl capture start / stop at run time: zero-copy, then
               none while capturing, then zero-copy again
  link-pcap    link:NAME pair, capture on the receiving end only
Each case starts its own uroced (private UROCE_RUN_DIR) and stops it.
Exit 0 pass, 77 skip, 1 fail."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from icrc_skip import Daemon, h, pcap_valid, run_cases, traffic  # noqa: E402

TOOLS = {}


def case_loop_pcap(uroced, tmp):
    path = os.path.join(tmp, 'loop.pcap')
    d = Daemon(uroced, ['--pcap', path], ['uroce0'])
    try:
        traffic(TOOLS['zc'], d.env, 'integrity', {'VT_ZC': '0'})
        if not d.stop():
            return False
    finally:
        d.close()
    return pcap_valid(TOOLS['pcap'], path, 200)


def ctl(env, *args):
    r = subprocess.run([TOOLS['ctl'], '-d', 'uroce0'] + list(args), env=env,
                       capture_output=True, text=True, timeout=60)
    print(r.stdout + r.stderr, end='')
    if r.returncode:
        raise RuntimeError('uroce-ctl %s failed' % ' '.join(args))


def case_ctl_capture(uroced, tmp):
    path = os.path.join(tmp, 'ctl.pcap')
    d = Daemon(uroced, [], ['uroce0'])
    try:
        traffic(TOOLS['zc'], d.env, 'integrity')
        ctl(d.env, 'capture', 'start', path)
        traffic(TOOLS['zc'], d.env, 'integrity', {'VT_ZC': '0'})
        ctl(d.env, 'capture', 'stop')
        traffic(TOOLS['zc'], d.env, 'integrity')
        if not d.stop():
            return False
    finally:
        d.close()
    return pcap_valid(TOOLS['pcap'], path, 200)


def case_link_pcap(uroced, tmp):
    path = os.path.join(tmp, 'u1.pcap')
    d = Daemon(uroced, ['--dev', 'uroce0,port=link:zcc,ip=10.0.0.1',
                        '--dev', 'uroce1,port=link:zcc,ip=10.0.0.2,pcap=' + path],
               ['uroce0', 'uroce1'])
    try:
        traffic(TOOLS['zc'], d.env, 'integrity',
                {'VT_ZC': '0', 'VT_DEV_A': 'uroce0', 'VT_DEV_B': 'uroce1'})
        if not d.stop():
            return False
    finally:
        d.close()
    return pcap_valid(TOOLS['pcap'], path, 200)


CASES = {'loop-pcap': case_loop_pcap, 'ctl-capture': case_ctl_capture,
         'link-pcap': case_link_pcap}


def main():
    uroced = sys.argv[1]
    TOOLS.update(zc=sys.argv[2], stat=sys.argv[3], ctl=sys.argv[4], pcap=sys.argv[5])
    return run_cases(uroced, sys.argv[6:] or list(CASES), lambda n, tmp: CASES[n](uroced, tmp),
                     'uroce-zc-cap-')


if __name__ == '__main__':
    sys.exit(h.main(main))
