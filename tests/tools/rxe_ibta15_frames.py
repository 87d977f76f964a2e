#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""IBTA 1.5 frames as Linux rxe 6.2+ sends them, built with scapy (its BTH
and ICRC, the FETH/RETH/AETH packed here from rxe_hdr.h's layout), read
with uroce-pcap: the VM's 6.1 rxe cannot send them (docs/interop.md).

  rxe_ibta15_frames.py UROCE_PCAP

Frames: RDMA FLUSH global of a range, FLUSH global|persistent of a whole
MR, rxe's answer to both (RDMA READ Response Only, no payload, AETH ACK),
RDMA ATOMIC WRITE of 8 bytes and its answer (the same READ Response Only,
which uroce's responder sends too). uroce-pcap check must pass them and decode
every field; a FLUSH with no placement type must fail check.
Exit 0 pass, 77 skip (no scapy), 1 fail."""
import os
import struct
import subprocess
import sys
import tempfile

try:
    from scapy.all import Ether, IP, UDP, Raw, wrpcap
    from scapy.contrib.roce import BTH
except ImportError:
    print("scapy not installed")
    sys.exit(77)


def frame(opcode, psn, ext, ackreq=1):
    # rxe: SE 0, M 0, P_Key 0xFFFF, UDP checksum 0; scapy appends the ICRC
    return (Ether(src="02:00:00:00:00:0c", dst="02:00:00:00:00:0b") /
            IP(src="10.77.0.3", dst="10.77.0.11", flags="DF", ttl=64) /
            UDP(sport=0xc0de, dport=4791, chksum=0) /
            BTH(opcode=opcode, dqpn=0x000123, ackreq=ackreq, psn=psn) / Raw(ext))


def feth(ptype, level):
    return struct.pack("!I", (level << 4) | ptype)   # rxe feth_init


def reth(va, rkey, length):
    return struct.pack("!QII", va, rkey, length)


def aeth(syndrome, msn):
    return struct.pack("!I", syndrome << 24 | msn)


GOOD = [
    (frame(0x1c, 100, feth(1, 0) + reth(0x7f0012345000, 0x1234, 65536)),
     "RC RDMA FLUSH (0x1c) qp=0x000123 psn=100 A feth[type=global level=range] "
     "reth[va=0x7f0012345000 rkey=0x00001234 len=65536] icrc=ok"),
    (frame(0x1c, 101, feth(3, 1) + reth(0, 0x1234, 0)),
     "RC RDMA FLUSH (0x1c) qp=0x000123 psn=101 A feth[type=global|persistent level=mr] "
     "reth[va=0x0 rkey=0x00001234 len=0] icrc=ok"),
    (frame(0x10, 101, aeth(0x1f, 7), ackreq=0),
     "RC RDMA READ Response Only (0x10) qp=0x000123 psn=101 aeth=ACK credits=31 (none) msn=7 "
     "len=0 icrc=ok"),
    (frame(0x1d, 102, reth(0x7f0012345008, 0x1234, 8) + struct.pack("!Q", 0x0102030405060708)),
     "RC RDMA ATOMIC WRITE (0x1d) qp=0x000123 psn=102 A reth[va=0x7f0012345008 rkey=0x00001234 "
     "len=8] len=8 icrc=ok"),    # rxe's (and uroce's) answer to the ATOMIC WRITE: READ Response Only,
    # no payload, AETH ACK at its PSN (rxe_resp.c send_read_response_ack)
    (frame(0x10, 102, aeth(0x1f, 8), ackreq=0),
     "RC RDMA READ Response Only (0x10) qp=0x000123 psn=102 aeth=ACK credits=31 (none) msn=8 "
     "len=0 icrc=ok"),
]
BAD = frame(0x1c, 103, feth(0, 0) + reth(0x7f0012345000, 0x1234, 64))


def run(*args):
    r = subprocess.run(list(args), capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout


def main():
    tool = sys.argv[1]
    fail = []
    with tempfile.TemporaryDirectory(prefix="uroce-ibta15-") as tmp:
        good = os.path.join(tmp, "good.pcap")
        bad = os.path.join(tmp, "bad.pcap")
        wrpcap(good, [f for f, _ in GOOD])
        wrpcap(bad, [BAD])
        rc, out = run(tool, "check", good)
        if rc != 0:
            fail.append("check of rxe's frames: rc %d\n%s" % (rc, out))
        rc, out = run(tool, "decode", good)
        lines = [ln for ln in out.splitlines() if not ln.startswith("#")]
        if len(lines) != len(GOOD):
            fail.append("decode: %d lines, want %d" % (len(lines), len(GOOD)))
        for ln, (_, want) in zip(lines, GOOD):
            if not ln.endswith(" " + want):
                fail.append("decode %r, want it to end %r" % (ln, want))
        rc, out = run(tool, "check", bad)
        if rc != 1 or "not executable flush-feth-not-executable: 1" not in out:
            fail.append("check of a FLUSH with no type: rc %d\n%s" % (rc, out))
    for f in fail:
        print("FAIL:", f)
    print("rxe_ibta15_frames: %d frames, %d problems" % (len(GOOD) + 1, len(fail)))
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
