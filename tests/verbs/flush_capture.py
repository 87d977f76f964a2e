#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""RDMA FLUSH as the daemon puts it on the wire (docs/transport.md).

  flush_capture.py RUN_PY UROCED SHIM VERBS_FLUSH UROCE_PCAP TSHARK

Runs verbs_flush's flush_ops case (two RDMA WRITEs, a global FLUSH of their
range, a persistent FLUSH of the whole MR) under a uroced that captures
(--pcap), then checks the capture:
  * uroce-pcap check passes (every frame valid, both FLUSHes executable);
  * uroce-pcap decode shows the two FLUSHes with their FETH and RETH and
    two READ Response Only frames of no payload with an ACK AETH at their
    PSNs, and no other READ response;
  * tshark 4.0 reads the whole capture (exit 0): the FLUSH frames are
    "Unknown OpCode" (it does not know 0x1C), every other RoCE frame has
    its own name.
Exit 0 pass, 77 skip (no tshark), 1 fail."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools'))
from pcap_indep import icrc_mismatches  # noqa: E402  (Annex A17 in zlib, not wire/)


def main():
    run_py, uroced, shim, prog, pcap_tool, tshark = sys.argv[1:7]
    tmp = tempfile.mkdtemp(prefix='uroce-flushcap-')
    try:
        cap = os.path.join(tmp, 'flush.pcap')
        r = subprocess.run([sys.executable, run_py, '--uroced', uroced, '--shim', shim,
                            '--daemon-arg=--pcap', '--daemon-arg=' + cap, 'exec', prog,
                            'flush_ops'], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            print(r.stdout, r.stderr)
            print('FAIL: flush_ops under a capturing daemon: rc', r.returncode)
            return 1
        r = subprocess.run([pcap_tool, 'check', cap], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            print(r.stdout, r.stderr)
            print('FAIL: uroce-pcap check rc', r.returncode)
            return 1
        dec = subprocess.run([pcap_tool, 'decode', cap], capture_output=True, text=True,
                             timeout=60).stdout.splitlines()
        flush = [ln for ln in dec if 'RC RDMA FLUSH (0x1c)' in ln]
        resp = [ln for ln in dec if 'RC RDMA READ Response' in ln]
        fail = []
        if len(flush) != 2:
            fail.append('%d FLUSH frames, want 2' % len(flush))
        elif ('feth[type=global level=range]' not in flush[0] or ' len=20000]' not in flush[0] or
              'feth[type=persistent level=mr]' not in flush[1]):
            fail.append('FLUSH headers: %s' % flush)
        want = [ln.split(' psn=')[1].split()[0] for ln in flush]
        got = [ln.split(' psn=')[1].split()[0] for ln in resp
               if 'READ Response Only (0x10)' in ln and ' aeth=ACK' in ln and ln.endswith(' len=0 icrc=ok')]
        if len(resp) != 2 or got != want:
            fail.append('answers %s, want READ Response Only len=0 at PSNs %s' % (resp, want))
        if not shutil.which(tshark):
            # uroce-pcap alone would be the encoder judging itself
            print('SKIP: tshark not installed: no independent decoder for the capture')
            return 77
        r = subprocess.run([tshark, '-r', cap, '-T', 'fields', '-e', 'infiniband.bth.opcode',
                            '-e', '_ws.col.Info', '-Y', 'infiniband'],
                           capture_output=True, text=True, timeout=120)
        rows = [ln.split('\t') for ln in r.stdout.splitlines()]
        if r.returncode != 0 or len(rows) != len([ln for ln in dec if ' icrc=ok' in ln]):
            fail.append('tshark rc %d, %d rows for %d RoCE frames' % (r.returncode, len(rows), len(dec)))
        # the ICRC of every frame, computed by code that is not the encoder's
        fail += icrc_mismatches(cap, len([ln for ln in dec if ' icrc=ok' in ln]))
        for op, info in rows:
            if (op == '28') != info.startswith('Unknown OpCode'):
                fail.append('tshark: opcode %s decoded as %r' % (op, info))
        for f in fail:
            print('FAIL:', f)
        print('flush_capture: %d frames, %d FLUSH, %d answers' % (len(dec), len(flush), len(resp)))
        return 1 if fail else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
