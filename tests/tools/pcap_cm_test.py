#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""uroce-pcap on CM MADs: decode shows attribute, comm IDs, service ID,
QPN/PSN of the genuine kernel rdma_cm capture; check counts the MADs and
reports every malformed MAD on QP1 (exit 1) with its reason and frame.

usage: pcap_cm_test.py UROCE_PCAP send_bw_rdmacm.pcap
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from harness import check as expect, verdict  # noqa: E402  (tests/lib/harness.py)

MAD = 14 + 20 + 8 + 12 + 8       # Ethernet, IPv4, UDP, BTH, DETH: MAD offset
DATA = MAD + 24                  # CM attribute data


def run(*args):
    r = subprocess.run(list(args), capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def main():
    exe, cap = sys.argv[1:3]
    tmp = tempfile.mkdtemp(prefix="uroce-pcap-cm-")
    try:
        tests(exe, cap, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return verdict()


def tests(exe, cap, tmp):
    rc, o, e = run(exe, "decode", cap)
    expect(rc == 0, "decode rc %d %s" % (rc, e))
    lines = {int(ln.split()[0]): ln for ln in o.splitlines() if not ln.startswith("#")}
    want = {
        1: " CM REQ tid=0x00000002549052db lcid=0xdb529054 sid=0x0000000001064853 (TCP:18515)"
           " qpn=0x000011 start_psn=14353840 icrc=ok",
        2: " CM REP tid=0x00000002549052db lcid=0x0cfd36e4 rcid=0xdb529054 qpn=0x000011"
           " start_psn=904240 icrc=ok",
        3: " CM RTU tid=0x00000002549052db lcid=0xdb529054 rcid=0x0cfd36e4 icrc=ok",
        61: " CM DREQ tid=0x00000002549052da lcid=0xda529054 rcid=0x0efd36e4 remote_qpn=0x000012 icrc=ok",
        66: " CM DREP tid=0x00000002e436fd0c lcid=0xdb529054 rcid=0x0cfd36e4 icrc=ok",
    }
    for n, tail in want.items():
        expect(lines.get(n, "").endswith(tail), "frame %d: want ...%r, got %r" % (n, tail, lines.get(n)))
    expect(sum(" CM " in ln for ln in lines.values()) == 12, "12 CM lines")
    expect(not any(" CM " in ln for n, ln in lines.items() if "qp=0x000001" not in ln),
           "CM decoded only on QP1")

    rc, o, e = run(exe, "check", cap)
    expect(rc == 0 and "CM MADs: 12 (0 malformed)" in o, "check genuine: rc %d\n%s%s" % (rc, o, e))

    # Damaged MADs with valid ICRCs: each is reported with its reason.
    cases = [
        ("bad-base-version", ["--set", "%d:2" % MAD]),
        ("not-cm-class", ["--set", "%d:3" % (MAD + 1)]),
        ("bad-class-version", ["--set", "%d:1" % (MAD + 2)]),
        ("bad-method", ["--set", "%d:0x83" % (MAD + 3)]),
        ("bad-attr", ["--set", "%d:0x30" % (MAD + 17)]),
        ("hdr-reserved", ["--set", "%d:1" % (MAD + 19)]),
        ("reserved-bits", ["--set", "%d:1" % (DATA + 4)]),        # REQ bytes 4: reserved
        ("reserved-bits", ["--flip", "%d:0" % (DATA + 139)]),     # REQ byte 139 bits 6-7
        ("bad-qkey", ["--set", "%d:0x90" % (MAD - 8)]),
    ]
    for i, (reason, opts) in enumerate(cases):
        out = os.path.join(tmp, "c%d.pcap" % i)
        rc, o, e = run(exe, "corrupt", cap, out, "--packet", "1", *opts, "--fix-icrc")
        if not expect(rc == 0, "corrupt %s rc %d %s" % (opts, rc, e)):
            continue
        rc, o, e = run(exe, "check", out)
        expect(rc == 1 and "66 RoCE valid, 0 RoCE invalid" in o and
               "CM MADs: 12 (1 malformed)" in o and
               "invalid MAD %s: 1 (first at frame 1)" % reason in o,
               "%s (%s): check rc %d\n%s%s" % (reason, opts, rc, o, e))
        rc, o, e = run(exe, "decode", out)
        first = o.splitlines()[0] if o else ""
        expect(rc == 0 and " MAD-INVALID %s icrc=ok" % reason in first,
               "%s: decode line %r" % (reason, first))

    # a MAD on QP1 cut to 252 bytes, IP/UDP lengths, IPv4 checksum and ICRC
    # made consistent: only the MAD is wrong
    out = os.path.join(tmp, "short.pcap")
    flen = MAD + 252 + 4
    iplen, udplen = flen - 14, flen - 14 - 20
    rc, o, e = run(exe, "corrupt", cap, out, "--packet", "3", "--truncate", str(flen),
                   "--set", "16:%d" % (iplen >> 8), "--set", "17:%d" % (iplen & 0xFF),
                   "--set", "38:%d" % (udplen >> 8), "--set", "39:%d" % (udplen & 0xFF),
                   "--fix-ipv4-csum", "--fix-icrc")
    if expect(rc == 0, "corrupt truncate rc %d %s" % (rc, e)):
        rc, o, e = run(exe, "check", out)
        expect(rc == 1 and "66 RoCE valid, 0 RoCE invalid" in o and
               "invalid MAD short: 1 (first at frame 3)" in o, "short MAD: rc %d\n%s" % (rc, o))

if __name__ == "__main__":
    sys.exit(main())
