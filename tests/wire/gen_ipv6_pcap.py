#!/usr/bin/python3
# Generates tests/data/ipv6_scapy.pcap: RoCEv2-over-IPv6 frames built with
# scapy, with the ICRC (and, for one frame, a real UDP checksum) computed here
# in plain Python with zlib -- independently of the C wire library -- so that
# the library's IPv6 parsing, masking and ICRC are checked against a second
# implementation. None of the genuine rxe captures carries IPv6.
#
# Usage: /usr/bin/python3 gen_ipv6_pcap.py OUT.pcap   (output is committed;
# the wire-ipv6-gen test regenerates it and compares)
import struct
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness as h  # noqa: E402  (tests/lib/harness.py: require)
import zlib

from scapy.all import Ether, IPv6, UDP, Dot1Q, Raw, wrpcap
from scapy.contrib.roce import BTH


def icrc_v6(l3: bytes) -> int:
    """ICRC over IPv6 header .. pad (l3 excludes the ICRC field)."""
    m = bytearray(l3)
    # IPv6: traffic class + flow label (all bits after the version), hop limit
    m[0] |= 0x0F
    m[1] = m[2] = m[3] = 0xFF
    m[7] = 0xFF
    m[40 + 6] = m[40 + 7] = 0xFF           # UDP checksum
    m[48 + 4] = 0xFF                        # BTH FECN/BECN/resv6
    return zlib.crc32(b"\xff" * 8 + bytes(m)) & 0xFFFFFFFF


def udp_csum_v6(l3: bytes) -> int:
    udp = l3[40:]
    ph = l3[8:40] + struct.pack("!IxxxB", len(udp), 17)
    data = ph + udp[:6] + b"\0\0" + udp[8:]
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    c = (~s) & 0xFFFF
    return c or 0xFFFF


def reth(va, rkey, length):
    return struct.pack("!QII", va, rkey, length)


def aeth(syn, msn):
    return struct.pack("!I", syn << 24 | msn)


def deth(qkey, sqpn):
    return struct.pack("!II", qkey, sqpn & 0xFFFFFF)


def atomiceth(va, rkey, swap, cmp):
    return struct.pack("!QIQQ", va, rkey, swap, cmp)


def imm(v):
    return struct.pack("!I", v)


A = "fd00:77::12"
B = "fd00:77::11"
MAC_A = "52:54:00:4d:00:0c"
MAC_B = "52:54:00:4d:00:0b"


def frame(opcode, ext=b"", payload=b"", *, src=A, dst=B, smac=MAC_A, dmac=MAC_B,
          qpn=0x11, psn=0, tc=0, fl=0, hlim=64, sport=49441, se=0, ackreq=0,
          becn=0, fecn=0, pkey=0xFFFF, vlan=None, udp_csum=False):
    pad = (-len(payload)) & 3
    bth = BTH(opcode=opcode, solicited=se, migreq=0, padcount=pad, version=0,
              pkey=pkey, fecn=fecn, becn=becn, dqpn=qpn, ackreq=ackreq, psn=psn,
              icrc=0)
    l2 = Ether(src=smac, dst=dmac)
    if vlan is not None:
        l2 = l2 / Dot1Q(vlan=vlan & 0xFFF, prio=vlan >> 13)
    p = (l2 / IPv6(src=src, dst=dst, tc=tc, fl=fl, hlim=hlim) /
         UDP(sport=sport, dport=4791, chksum=0) / bth /
         Raw(ext + payload + b"\0" * pad))
    raw = bytearray(bytes(p))
    # scapy puts BTH's icrc field after the payload; replace it with ours.
    l3off = 18 if vlan is not None else 14
    h.require(raw[l3off] >> 4 == 6, 'raw[l3off] >> 4 == 6')
    raw[-4:] = struct.pack("<I", icrc_v6(bytes(raw[l3off:-4])))
    if udp_csum:
        c = udp_csum_v6(bytes(raw[l3off:]))
        raw[l3off + 46:l3off + 48] = struct.pack("!H", c)
    return Ether(bytes(raw))


def data(n, seed):
    return bytes((seed + i * 13) & 0xFF for i in range(n))


def main(out):
    pk = []
    # RC SEND Only, then an ACK the other way (syndrome 0x1f, credits invalid).
    pk.append(frame(0x04, payload=data(32, 1), psn=0x10, ackreq=1))
    pk.append(frame(0x11, aeth(0x1F, 1), src=B, dst=A, smac=MAC_B, dmac=MAC_A, psn=0x10))
    # Multi-packet SEND with immediate, last packet padded (3 bytes).
    pk.append(frame(0x00, payload=data(1024, 2), psn=0x11))
    pk.append(frame(0x01, payload=data(1024, 3), psn=0x12))
    pk.append(frame(0x03, imm(0xDEADBEEF), data(13, 4), psn=0x13, se=1, ackreq=1))
    # RDMA WRITE Only with Immediate, pad 1; ECN CE, DSCP 26, a flow label.
    pk.append(frame(0x0B, reth(0x7F0012345000, 0x1234, 7) + imm(0x01020304), data(7, 5),
                    psn=0x14, tc=(26 << 2) | 3, fl=0xABCDE, ackreq=1))
    # RDMA WRITE First/Middle/Last (pad 2).
    pk.append(frame(0x06, reth(0x1000, 0x55, 2054), data(1024, 6), psn=0x15))
    pk.append(frame(0x07, payload=data(1024, 7), psn=0x16))
    pk.append(frame(0x08, payload=data(6, 8), psn=0x17, ackreq=1))
    # RDMA READ request and a 3-packet response (last padded by 1).
    pk.append(frame(0x0C, reth(0x2000, 0x66, 2051), psn=0x18, ackreq=1))
    pk.append(frame(0x0D, aeth(0x1F, 2), data(1024, 9), src=B, dst=A, smac=MAC_B,
                    dmac=MAC_A, psn=0x18))
    pk.append(frame(0x0E, payload=data(1024, 10), src=B, dst=A, smac=MAC_B, dmac=MAC_A,
                    psn=0x19))
    pk.append(frame(0x0F, aeth(0x1F, 2), data(3, 11), src=B, dst=A, smac=MAC_B,
                    dmac=MAC_A, psn=0x1A))
    # Atomics and the atomic acknowledge.
    pk.append(frame(0x13, atomiceth(0x3000, 0x77, 0x1111, 0x2222), psn=0x1B, ackreq=1))
    pk.append(frame(0x12, aeth(0x1F, 3) + struct.pack("!Q", 0x2222), src=B, dst=A,
                    smac=MAC_B, dmac=MAC_A, psn=0x1B))
    pk.append(frame(0x14, atomiceth(0x3008, 0x77, 5, 0), psn=0x1C, ackreq=1))
    # SEND Only with Invalidate, zero-length payload.
    pk.append(frame(0x17, struct.pack("!I", 0xABCD01), psn=0x1D, ackreq=1))
    # NAKs: PSN sequence error, RNR (timer 14), remote access error.
    pk.append(frame(0x11, aeth(0x60, 3), src=B, dst=A, smac=MAC_B, dmac=MAC_A, psn=0x1E))
    pk.append(frame(0x11, aeth(0x2E, 3), src=B, dst=A, smac=MAC_B, dmac=MAC_A, psn=0x1E))
    pk.append(frame(0x11, aeth(0x62, 3), src=B, dst=A, smac=MAC_B, dmac=MAC_A, psn=0x1E))
    # UC SEND Only, pad 2, on a VLAN (PCP 3, VID 100).
    pk.append(frame(0x24, payload=data(10, 12), psn=0x500, vlan=(3 << 13) | 100))
    # UD SEND Only with Immediate (DETH), a real UDP checksum, link-local GIDs.
    pk.append(frame(0x65, deth(0x11111111, 0x12) + imm(7), data(41, 13),
                    src="fe80::5054:ff:fe4d:c", dst="fe80::5054:ff:fe4d:b",
                    qpn=0x13, psn=0x7FFFFF, sport=63494, udp_csum=True))
    # UD SEND Only to QP1, PSN at the top of the space, carrying a CM RTU MAD
    # (base version 1, class 0x07 version 2, method SEND, attribute 0x0014):
    # every byte after the comm IDs is private data, so any pattern is valid.
    rtu = struct.pack("!BBBBHHQHHI", 1, 0x07, 2, 0x03, 0, 0, 0x0000000212345678,
                      0x0014, 0, 0)
    pk.append(frame(0x64, deth(0x80010000, 1), rtu + data(232, 14), qpn=1, psn=0xFFFFFF,
                    sport=55410))
    # CNP: BECN, P_Key 0xFFFF, PSN 0, 16 reserved zero bytes; ECN CE on the way.
    pk.append(frame(0x81, b"\0" * 16, src=B, dst=A, smac=MAC_B, dmac=MAC_A, qpn=0x11,
                    becn=1, tc=3))
    for i, p in enumerate(pk):
        p.time = 1795305600 + i / 1000  # fixed, so the output is reproducible
    wrpcap(out, pk)
    print("wrote %d frames to %s" % (len(pk), out))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "ipv6_scapy.pcap")
