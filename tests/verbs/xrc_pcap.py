#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""XRC on the wire, from real traffic (docs/wire.md, "XRC").

  xrc_pcap.py [--preload-first RUNTIME] UROCED SHIM UROCE_PCAP TSHARK PORT

One uroced with --pcap (private UROCE_RUN_DIR, stopped with SIGTERM and
checked as run.py checks it) serves ibv_xsrq_pingpong, unmodified, with two
client processes and 3000-byte messages. Then the capture must show: every
RoCE frame valid (uroce-pcap check), XRC SEND First/Middle/Last requests
each with an XRCETH naming an SRQ, XRC Acknowledges without one, and no
RC opcode at all; tshark 4.0 decodes every frame as RRoCE ("Unknown
OpCode" for XRC, which it names but does not dissect) with no malformed
flag or expert warning; every ICRC is the one an independent Annex A17
implementation (tests/tools/interop_check.py, zlib) computes. Exit 0 pass, 1 fail, 77 skip."""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location('vt_run', os.path.join(here, 'run.py'))
vt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vt)
sys.path.insert(0, os.path.join(here, '..', 'lib'))
import harness as h  # noqa: E402  (tests/lib/harness.py)
sys.path.insert(0, os.path.join(here, '..', 'tools'))
from pcap_indep import icrc_mismatches  # noqa: E402  (Annex A17 in zlib, not wire/)


def main():
    args = sys.argv[1:]
    first = ''
    if args[:1] == ['--preload-first']:
        # an instrumented liburoce in an uninstrumented program: the
        # sanitizer runtime first, the program's own leaks are not ours
        first, args = args[1], args[2:]
    uroced, shim, pcap_tool, tshark, port = args[:5]
    if not shutil.which('ibv_xsrq_pingpong') or not os.access(tshark, os.X_OK):
        print('ibv_xsrq_pingpong or tshark not installed')
        return 77
    run_dir = tempfile.mkdtemp(prefix='uroce-xrc-pcap-')
    cap = os.path.join(run_dir, 'xrc.pcap')
    env = dict(os.environ, UROCE_RUN_DIR=run_dir)
    log = open(os.path.join(run_dir, 'uroced.log'), 'w+')
    d = subprocess.Popen([uroced, '--pcap', cap], env=env, stdout=log,
                         stderr=subprocess.STDOUT, start_new_session=True)
    fails = []
    try:
        if not h.wait_socket(os.path.join(run_dir, 'uroce0.sock'), d):
            print('uroced did not come up')
            return 1
        penv = dict(env, LD_PRELOAD=os.path.abspath(shim))
        if first:
            penv['LD_PRELOAD'] = first + ':' + penv['LD_PRELOAD']
            penv['ASAN_OPTIONS'] = 'detect_leaks=0:' + penv.get('ASAN_OPTIONS', '')
        rc = vt.mode_clients(2, ['ibv_xsrq_pingpong', '-d', 'uroce0', '-g', '1', '-p', port,
                                 '-n', '4', '-s', '3000'], penv)
        if rc:
            fails.append('ibv_xsrq_pingpong failed')
    finally:
        st = h.stop(d)
        log.seek(0)
        fails += h.daemon_faults([st], log.read())
        log.close()
    if not fails:
        fails += check(cap, pcap_tool, tshark)
    shutil.rmtree(run_dir, ignore_errors=True)
    for f in fails:
        print('FAIL:', f)
    return 1 if fails else 0


def check(cap, pcap_tool, tshark):
    fails = []
    r = subprocess.run([pcap_tool, 'check', cap], capture_output=True, text=True)
    if r.returncode != 0 or ' 0 RoCE invalid' not in r.stdout:
        fails.append('uroce-pcap check: %r' % r.stdout)
    dec = subprocess.run([pcap_tool, 'decode', cap], capture_output=True, text=True).stdout
    frames = [ln for ln in dec.splitlines() if ' > ' in ln]
    names = [re.search(r'(\w+ [\w ]+?) \(0x([0-9a-f]{2})\)', ln) for ln in frames]
    ops = {int(m.group(2), 16) for m in names if m}
    print('%d frames, opcodes %s' % (len(frames), sorted(hex(o) for o in ops)))
    for want in (0xa0, 0xa1, 0xa2, 0xb1):
        if want not in ops:
            fails.append('no opcode 0x%02x in the capture' % want)
    if any(o < 0xa0 or o > 0xb7 for o in ops):
        fails.append('non-XRC opcodes %s' % sorted(hex(o) for o in ops if o < 0xa0 or o > 0xb7))
    for ln in frames:
        req = re.search(r'XRC SEND', ln) is not None
        if req != ('xrceth[srqn=0x' in ln) or 'xrceth[srqn=0x000000]' in ln:
            fails.append('XRCETH where it does not belong or missing: %s' % ln)
    # the ICRC of every frame, computed by code that is not the encoder's
    fails += icrc_mismatches(cap, len(frames))
    t = subprocess.run([tshark, '-r', cap, '-T', 'fields', '-e', '_ws.col.Protocol', '-e',
                        '_ws.col.Info', '-e', '_ws.malformed', '-e', '_ws.expert.severity'],
                       capture_output=True, text=True)
    rows = [ln.split('\t') for ln in t.stdout.splitlines()]
    if len(rows) != len(frames):
        fails.append('tshark read %d frames, uroce-pcap %d' % (len(rows), len(frames)))
    for row in rows:
        row += [''] * (4 - len(row))
        if row[0] != 'RRoCE' or not row[1].startswith('Unknown OpCode') or row[2] or \
           any(s and int(s, 0) >= 0x600000 for s in row[3].split(',')):
            fails.append('tshark: %r' % row)
    return fails[:20]


if __name__ == '__main__':
    sys.exit(main())
