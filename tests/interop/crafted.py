#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""crafted.py OUTDIR SIDE=IFACE,MYIP,PEERIP,PEERMAC,PORT... - the packet crafter of
the crafted-frame interop check (crafted.sh; docs/interop.md, "Malformed
packets against rxe").

For each SIDE (uroce, rxe) it listens on MYIP:PORT for crafted_peer (the verbs
program on that side), then runs every case of CASES against it: the peer
makes a fresh QP, the crafter plays the other end of the connection with
frames built by scapy (its BTH and ICRC) and sent on IFACE, and records what
comes back: the answer on the wire (read off IFACE), the completions and the
QP state (reported by the peer). Then it compares each side's outcome with
EXPECT: rxe's is the reference, uroce's must equal it except where a case
names a deliberate difference (DIFFER; docs/transport.md's check table).
CRAFTED_LEARN=1 also prints every outcome as a Python literal.

Every wait here only bounds how long it looks (the VM runs under TCG on a
loaded machine); a verdict is drawn from what was seen, never from when.
Writes OUTDIR/crafted-SIDE.pcap (every frame each way) and
OUTDIR/crafted.log. Exit 0 pass, 1 fail, 77 no scapy."""
import os
import select
import socket
import struct
import sys
import time

try:
    from scapy.all import Ether, IP, UDP, Raw, raw, wrpcap
    from scapy.contrib.roce import BTH
except ImportError:
    print("crafted.py: scapy not installed")
    sys.exit(77)

ETH_P_ALL = 0x0003
MTU = 1024
P0 = 0x1000          # first PSN of the crafter's requests
FAKE_QPN = 0x300     # the crafter's QPN (+ case number)
QKEY = 0x11111111
ACK_SYN = 0x1f       # ACK, no credit information, as rxe sends
# what the responder side's IBTA opcodes carry, for reading answers
AETH_OPS = {0x0d, 0x0f, 0x10, 0x11, 0x12}
OPNAME = {0x0d: "READ-FIRST", 0x0e: "READ-MIDDLE", 0x0f: "READ-LAST", 0x10: "READ-ONLY",
          0x12: "ATOMIC-ACK"}
NAKNAME = {0: "NAK-SEQ", 1: "NAK-INV", 2: "NAK-ACCESS", 3: "NAK-OP"}


def pat(n, seed=3):
    return bytes((seed * 131 + i * 7 + (i >> 8)) & 0xff for i in range(n))


def reth(va, rkey, n):
    return struct.pack("!QII", va, rkey, n)


def atomiceth(va, rkey, add, cmp=0):
    return struct.pack("!QIQQ", va, rkey, add, cmp)


def aeth(syn, msn=0):
    return struct.pack("!I", syn << 24 | msn)


def deth(qkey, sqpn):
    return struct.pack("!II", qkey, sqpn & 0xffffff)


class Link:
    """One side's wire: raw frames out of and into IFACE."""

    def __init__(self, iface, myip, peerip, peermac):
        self.iface, self.myip, self.peerip, self.peermac = iface, myip, peerip, peermac
        with open("/sys/class/net/%s/address" % iface) as f:
            self.mymac = f.read().strip()
        self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.s.bind((iface, 0))
        self.s.setblocking(False)
        self.ipid = 1
        self.frames = []   # everything sent and seen, for the pcap

    def send(self, op, psn, ext=b"", pay=b"", pad=None, dqpn=0, ackreq=None, pkey=0xffff,
             tver=0, bad_icrc=False):
        if pad is None:
            pad = (-len(pay)) & 3 if pay else 0
        if ackreq is None:  # as a requester sets it: on the last packet of a message
            ackreq = int((op & 0x1f) in (0x02, 0x03, 0x04, 0x05, 0x08, 0x09, 0x0a, 0x0b, 0x0c,
                                         0x13, 0x14))
        self.ipid += 1
        p = (Ether(src=self.mymac, dst=self.peermac) /
             IP(src=self.myip, dst=self.peerip, flags="DF", ttl=64, id=self.ipid) /
             UDP(sport=0xc123, dport=4791, chksum=0) /
             BTH(opcode=op, padcount=pad, version=tver, pkey=pkey, dqpn=dqpn, ackreq=ackreq,
                 psn=psn & 0xffffff) /
             Raw(ext + pay + b"\0" * pad))
        b = bytearray(raw(p))
        if bad_icrc:
            b[-1] ^= 1
        self.frames.append(bytes(b))
        self.s.send(bytes(b))

    def collect(self, secs, until=None):
        """The RoCE frames from the peer within secs, or until until(them) says
        enough: [(opcode, psn, syndrome, paylen)]."""
        out = []
        end = time.monotonic() + secs
        while not (until and out and until(out)):
            left = end - time.monotonic()
            if left <= 0:
                break
            r, _, _ = select.select([self.s], [], [], left)
            if not r:
                continue
            try:
                b, addr = self.s.recvfrom(9100)
            except BlockingIOError:
                continue
            if addr[2] == socket.PACKET_OUTGOING or len(b) < 14 + 20 + 8 + 12 + 4:
                continue
            if b[12:14] != b"\x08\x00" or socket.inet_ntoa(b[26:30]) != self.peerip:
                continue
            if b[23] != 17 or struct.unpack("!H", b[36:38])[0] != 4791:
                continue
            self.frames.append(bytes(b))
            ihl = (b[14] & 15) * 4
            bth = b[14 + ihl + 8:]
            op, pad, psn = bth[0], (bth[1] >> 4) & 3, struct.unpack("!I", bth[8:12])[0] & 0xffffff
            syn = bth[12] if op in AETH_OPS else None
            hl = 12 + (4 if op in AETH_OPS else 0) + (8 if op == 0x12 else 0) + \
                (16 if op in (0x0c,) else 0)
            out.append((op, psn, syn, len(bth) - hl - 4 - pad))
        return out

    def close(self):
        self.s.close()


class Peer:
    """crafted_peer on the other end of a TCP connection."""

    def __init__(self, conn):
        self.r = conn.makefile("r")
        self.w = conn.makefile("w")
        self.hello = self.r.readline().strip()

    def cmd(self, line):
        self.w.write(line + "\n")
        self.w.flush()
        out = []
        while True:
            l = self.r.readline()
            if not l:
                raise RuntimeError("peer gone after " + line)
            l = l.strip()
            if l == "OK":
                return out
            if l.startswith("ERR"):
                raise RuntimeError("peer: " + l)
            out.append(l)

    def qp(self, kind):
        f = self.cmd("QP " + kind)[0].split()
        return {"qpn": int(f[1]), "psn": int(f[2]), "rkey": int(f[3]), "va": int(f[4]),
                "gid": f[5]}

    def poll(self, ms, n):
        wcs = []
        for l in self.cmd("POLL %d %d" % (ms, n)):
            f = l.split(" ", 3)
            wcs.append("%s:%s" % (f[1], f[3].rsplit(" ", 2)[0]))
        return wcs

    def state(self):
        return self.cmd("STATE")[0].split()[1]

    def mem(self, off, n):
        return bytes.fromhex(self.cmd("MEM %d %d" % (off, n))[0].split()[1])


def gid_of(ip):
    return "00000000000000000000ffff" + socket.inet_aton(ip).hex()


class Case:
    """One connection: the peer's fresh QP connected to the crafter's."""

    def __init__(self, peer, link, idx, kind="rc", recvs=2, rlen=4096):
        self.peer, self.link = peer, link
        self.fqpn = FAKE_QPN + idx
        self.q = peer.qp(kind)
        peer.cmd("CONN 3 18 1 %d %d %s" % (self.fqpn, P0, gid_of(link.myip)))
        if recvs:
            peer.cmd("RECV %d %d" % (recvs, rlen))
        self.psn = P0
        self.kind = kind
        self.seen = []
        self.note = None
        link.collect(0.05)   # whatever an earlier case left

    def wait(self, n=1, secs=10.0):
        """Look until n more answers came (an ACK before a duplicate is sent)."""
        self.seen += self.link.collect(secs, until=lambda got: len(got) >= n)

    def req(self, op, pay=b"", ext=b"", psn=None, **kw):
        """A request of opcode op (RC's; UC/UD bits added) at the next PSN."""
        if self.kind == "uc":
            op |= 0x20
        if psn is None:
            psn = self.psn
            self.psn += 1
        self.link.send(op, psn, ext, pay, dqpn=self.q["qpn"], **kw)

    def resp(self, op, psn, pay=b"", ext=None, syn=ACK_SYN, **kw):
        if ext is None:
            ext = aeth(syn) if op in AETH_OPS else b""
        self.link.send(op, psn, ext, pay, dqpn=self.q["qpn"], ackreq=0, **kw)

    def memo(self, v):
        """Something the case read back (the peer's memory) for the outcome."""
        self.note = v

    def mine(self, off=0, n=64):
        return reth(self.q["va"] + off, self.q["rkey"], n)

    def outcome(self, n_wc, ms=2000):
        """What the peer did: its answers (PSN relative to P0), completions, state."""
        wcs = self.peer.poll(ms, n_wc) if n_wc else []
        state = self.peer.state()
        seen = self.seen + self.link.collect(0.3)
        ans = []
        for op, psn, syn, n in seen:
            if op == 0x11:
                t = syn >> 5 & 3
                name = "ACK" if t == 0 else "RNR" if t == 1 else \
                    NAKNAME.get(syn & 31, "NAK-%d" % (syn & 31)) if t == 3 else "AETH-%#x" % syn
            else:
                name = OPNAME.get(op, "op-%#x" % op)
            ans.append("%s@%d" % (name, (psn - P0) & 0xffffff))
        o = {"answer": ans, "wc": wcs, "state": state}
        if self.note is not None:
            o["mem"] = self.note
        return o


# ---------------------------------------------------------------- the requester's side
def req_case(peer, link, idx, op, n, answer):
    """The peer posts op of n bytes; answer(case, psn of its request) replies."""
    c = Case(peer, link, idx, recvs=0)
    peer.cmd("POST %s %d %d %d" % (op, n, 0x7f0000100000, 0x1234))
    reqs = (0x00, 0x04, 0x06, 0x0a, 0x0c, 0x13, 0x14)
    got = [f for f in link.collect(30.0, until=lambda got: got[-1][0] in reqs) if f[0] in reqs]
    if not got:
        return {"answer": ["no request"], "wc": [], "state": peer.state()}
    psn = got[0][1]
    answer(c, psn)
    o = c.outcome(0 if c.note and c.note != "nothing" else 1, ms=8000)
    o["answer"] = []   # the requester's own packets (retries) are not the verdict
    return o


def ghost_ack(c, psn):
    """An ACK for a PSN the peer never sent; what completed by then is
    noted; then the real ACK."""
    c.resp(0x11, psn + 1000)
    c.memo(",".join(c.peer.poll(1500, 1)) or "nothing")
    c.resp(0x11, psn)


def first_mid_aeth(c, psn):
    c.resp(0x0d, psn, pat(MTU))
    c.resp(0x0e, psn + 1, aeth(ACK_SYN, 1) + pat(512))


CASES = [
    # name, what the row is; fn(peer, link, idx) -> outcome
    ("issue1_write_read_payload", "WRITE FIRST/MIDDLE/MIDDLE, then a READ request with 256 bytes",
     lambda c: (c.req(0x06, pat(MTU), c.mine(0, 4 * MTU)), c.req(0x07, pat(MTU)),
                c.req(0x07, pat(MTU)), c.req(0x0c, pat(256), c.mine(0, 512)))),
    ("read_payload", "a READ request carrying 256 bytes",
     lambda c: c.req(0x0c, pat(256), c.mine(0, 512))),
    ("atomic_payload", "a FetchAdd carrying 8 bytes",
     lambda c: c.req(0x14, pat(8), atomiceth(c.q["va"] + 8192, c.q["rkey"], 5))),
    ("seq_middle", "SEND MIDDLE with no message in progress",
     lambda c: c.req(0x01, pat(MTU))),
    ("seq_first_first", "SEND FIRST, then SEND FIRST",
     lambda c: (c.req(0x00, pat(MTU)), c.req(0x00, pat(MTU)))),
    ("seq_write_send_last", "WRITE FIRST, then SEND LAST",
     lambda c: (c.req(0x06, pat(MTU), c.mine(0, 2 * MTU)), c.req(0x02, pat(100)))),
    ("len_first_short", "SEND FIRST of 512 bytes",
     lambda c: c.req(0x00, pat(512))),
    ("len_first_empty", "WRITE FIRST of 0 bytes",
     lambda c: c.req(0x06, b"", c.mine(0, 4 * MTU))),
    ("len_last_empty", "SEND FIRST, then an empty SEND LAST",
     lambda c: (c.req(0x00, pat(MTU)), c.req(0x02, b""))),
    ("len_write_last_short", "WRITE FIRST (DMA length 2048), LAST of 512",
     lambda c: (c.req(0x06, pat(MTU), c.mine(0, 2 * MTU)), c.req(0x08, pat(512)))),
    ("pad_misaligned", "SEND ONLY of 5 bytes, pad 0",
     lambda c: c.req(0x04, pat(5), pad=0)),
    ("pad_first", "SEND FIRST of 1023 bytes, pad 1",
     lambda c: c.req(0x00, pat(MTU - 1), pad=1)),
    ("psn_ahead", "SEND ONLY 3 PSNs ahead",
     lambda c: c.req(0x04, pat(100), psn=P0 + 3)),
    ("dup_send", "SEND ONLY, its ACK, then the same SEND again",
     lambda c: (c.req(0x04, pat(100)), c.wait(), c.req(0x04, pat(100), psn=P0))),
    ("dup_read", "READ of 2048 bytes, its responses, then the same request again",
     lambda c: (c.req(0x0c, b"", c.mine(0, 2 * MTU)), c.wait(2),
                c.req(0x0c, b"", c.mine(0, 2 * MTU), psn=P0))),
    ("dup_write", "WRITE ONLY, its ACK, the application writes there, the same WRITE again",
     lambda c: (c.req(0x0a, pat(64), c.mine(0, 64)), c.wait(), c.peer.cmd("FILL 0 64 238"),
                c.req(0x0a, pat(64), c.mine(0, 64), psn=P0), c.memo(c.peer.mem(0, 1).hex()))),
    ("dup_fetch_add", "FetchAdd 5, its answer, the same FetchAdd again",
     lambda c: (c.req(0x14, b"", atomiceth(c.q["va"] + 8192, c.q["rkey"], 5)), c.wait(),
                c.req(0x14, b"", atomiceth(c.q["va"] + 8192, c.q["rkey"], 5), psn=P0),
                c.wait(), c.memo(c.peer.mem(8192, 8).hex()))),
    ("rkey", "WRITE ONLY with a bad R_Key",
     lambda c: c.req(0x0a, pat(64), reth(c.q["va"], c.q["rkey"] ^ 0x100, 64))),
    ("bad_pkey", "SEND ONLY with P_Key 0x1234",
     lambda c: c.req(0x04, pat(100), pkey=0x1234)),
    ("bad_icrc", "SEND ONLY with a bad ICRC",
     lambda c: c.req(0x04, pat(100), bad_icrc=True)),
]

REQ_CASES = [
    ("issue2_read_middle_aeth", "READ 1536: FIRST, then a MIDDLE carrying AETH + 512 bytes",
     "read", 1536, first_mid_aeth),
    ("resp_read_short", "READ 100 answered READ ONLY of 96",
     "read", 100, lambda c, p: c.resp(0x10, p, pat(96))),
    ("resp_read_nak_aeth", "READ 100 answered READ ONLY with a NAK syndrome",
     "read", 100, lambda c, p: c.resp(0x10, p, pat(100), syn=0x61)),
    ("resp_read_for_write", "WRITE 100 answered READ ONLY",
     "write", 100, lambda c, p: c.resp(0x10, p, pat(100))),
    ("resp_atomic_for_send", "SEND 8 answered ATOMIC ACK",
     "send", 8, lambda c, p: c.resp(0x12, p, b"", aeth(ACK_SYN) + struct.pack("!Q", 7))),
    ("resp_ack_payload", "SEND 8 answered ACK carrying 4 bytes",
     "send", 8, lambda c, p: c.resp(0x11, p, pat(4))),
    ("nak_reserved", "SEND 8 answered NAK code 7",
     "send", 8, lambda c, p: c.resp(0x11, p, syn=0x67)),
    ("ghost_ack", "SEND 8 answered first by an ACK 1000 PSNs ahead, then by its ACK",
     "send", 8, ghost_ack),
    ("nak_inv_req", "SEND 8 answered NAK invalid request",
     "send", 8, lambda c, p: c.resp(0x11, p, syn=0x61)),
]


def uc_seq(c):
    c.req(0x01, pat(MTU))
    c.req(0x02, pat(100))
    c.req(0x04, pat(300))


def uc_pad(c):
    c.req(0x04, pat(5), pad=0)
    c.req(0x04, pat(300))


def ud_case(c, qkey=QKEY, pad=None):
    c.link.send(0x64, 0, deth(qkey, c.fqpn), pat(64), pad=pad, dqpn=c.q["qpn"])
    c.link.send(0x64, 1, deth(QKEY, c.fqpn), pat(100), dqpn=c.q["qpn"])


OTHER_CASES = [
    ("uc_seq_middle", "UC SEND MIDDLE, LAST with nothing in progress, then SEND ONLY", "uc",
     uc_seq, 1),
    ("uc_pad", "UC SEND ONLY of 5 bytes pad 0, then SEND ONLY of 300", "uc", uc_pad, 1),
    ("ud_qkey", "UD SEND with a wrong Q_Key, then a good one", "ud",
     lambda c: ud_case(c, qkey=QKEY ^ 1), 1),
    ("ud_pad", "UD SEND with a misaligned pad, then a good one", "ud",
     lambda c: ud_case(c, pad=1), 1),
]


# rxe 6.1 (Debian bookworm 6.1.0-56), as this rig saw it: the reference.
RXE = {
    'issue1_write_read_payload':
        {'answer': ['NAK-INV@3'], 'wc': ['r:Work Request Flushed Error', 'r:Work Request Flushed Error'], 'state': 'ERR'},
    'read_payload':
        {'answer': ['READ-ONLY@0'], 'wc': [], 'state': 'RTS'},
    'atomic_payload':
        {'answer': ['ATOMIC-ACK@0'], 'wc': [], 'state': 'RTS'},
    'seq_middle':
        {'answer': ['NAK-INV@0'], 'wc': ['r:Work Request Flushed Error', 'r:Work Request Flushed Error'], 'state': 'ERR'},
    'seq_first_first':
        {'answer': ['NAK-INV@1'], 'wc': ['r:remote invalid request error', 'r:Work Request Flushed Error'], 'state': 'ERR'},
    'seq_write_send_last':
        {'answer': ['NAK-INV@1'], 'wc': ['r:Work Request Flushed Error', 'r:Work Request Flushed Error'], 'state': 'ERR'},
    'len_first_short':
        {'answer': [], 'wc': [], 'state': 'RTS'},
    'len_first_empty':
        {'answer': ['NAK-INV@0'], 'wc': ['r:Work Request Flushed Error', 'r:Work Request Flushed Error'], 'state': 'ERR'},
    'len_last_empty':
        {'answer': ['ACK@1'], 'wc': ['r:success'], 'state': 'RTS'},
    'len_write_last_short':
        {'answer': ['NAK-INV@1'], 'wc': ['r:Work Request Flushed Error', 'r:Work Request Flushed Error'], 'state': 'ERR'},
    'pad_misaligned':
        {'answer': ['ACK@0'], 'wc': ['r:success'], 'state': 'RTS'},
    'pad_first':
        {'answer': [], 'wc': [], 'state': 'RTS'},
    'psn_ahead':
        {'answer': ['NAK-SEQ@0'], 'wc': [], 'state': 'RTS'},
    'dup_send':
        {'answer': ['ACK@0', 'ACK@0'], 'wc': ['r:success'], 'state': 'RTS'},
    'dup_read':
        {'answer': ['READ-FIRST@0', 'READ-LAST@1', 'READ-FIRST@0', 'READ-LAST@1'], 'wc': [], 'state': 'RTS'},
    'dup_write':
        {'answer': ['ACK@0', 'ACK@0'], 'wc': [], 'state': 'RTS', 'mem': 'ee'},
    'dup_fetch_add':
        {'answer': ['ATOMIC-ACK@0', 'ATOMIC-ACK@0'], 'wc': [], 'state': 'RTS', 'mem': '0500000000000000'},
    'rkey':
        {'answer': ['NAK-ACCESS@0'], 'wc': ['r:Work Request Flushed Error', 'r:Work Request Flushed Error'], 'state': 'ERR'},
    'bad_pkey':
        {'answer': [], 'wc': [], 'state': 'RTS'},
    'bad_icrc':
        {'answer': [], 'wc': [], 'state': 'RTS'},
    'issue2_read_middle_aeth':
        {'answer': [], 'wc': ['s:local protection error'], 'state': 'ERR'},
    'resp_read_short':
        {'answer': [], 'wc': [], 'state': 'RTS'},
    'resp_read_nak_aeth':
        {'answer': [], 'wc': ['s:success'], 'state': 'ERR'},
    'resp_read_for_write':
        {'answer': [], 'wc': ['s:fatal error'], 'state': 'ERR'},
    'resp_atomic_for_send':
        {'answer': [], 'wc': ['s:success'], 'state': 'ERR'},
    'resp_ack_payload':
        {'answer': [], 'wc': ['s:success'], 'state': 'RTS'},
    'nak_reserved':
        {'answer': [], 'wc': ['s:remote operation error'], 'state': 'ERR'},
    'ghost_ack':
        {'answer': [], 'wc': [], 'state': 'RTS', 'mem': 's:success'},
    'nak_inv_req':
        {'answer': [], 'wc': ['s:remote invalid request error'], 'state': 'ERR'},
    'uc_seq_middle':
        {'answer': [], 'wc': ['r:success'], 'state': 'RTS'},
    'uc_pad':
        {'answer': [], 'wc': ['r:success', 'r:success'], 'state': 'RTS'},
    'ud_qkey':
        {'answer': [], 'wc': ['r:success'], 'state': 'RTS'},
    'ud_pad':
        {'answer': [], 'wc': ['r:success', 'r:success'], 'state': 'RTS'},
}
# Where uroce answers otherwise on purpose: its outcome and why (docs/transport.md,
# "Checks on received packets").
DIFFER = {
    'ghost_ack': (
        {'answer': [], 'wc': ['s:success'], 'state': 'RTS', 'mem': 'nothing'},
        "an ACK for a PSN never sent is a ghost, dropped (ack-psn); rxe's check_psn completes the head WQE on any PSN past it"),
    'read_payload': (
        {'answer': ['NAK-INV@0'], 'wc': ['r:Work Request Flushed Error', 'r:Work Request Flushed Error'], 'state': 'ERR'},
        "IBTA 9.7.5.1 length check: a READ request carries no payload (rxe 6.1's check_length looks at the MTU only and executes it)"),
    'atomic_payload': (
        {'answer': ['NAK-INV@0'], 'wc': ['r:Work Request Flushed Error', 'r:Work Request Flushed Error'], 'state': 'ERR'},
        'IBTA 9.7.5.1 length check: an atomic request carries no payload (rxe 6.1 executes it)'),
    'len_first_short': (
        {'answer': ['NAK-INV@0'], 'wc': ['r:Work Request Flushed Error', 'r:Work Request Flushed Error'], 'state': 'ERR'},
        "IBTA 9.7.5.1: a FIRST carries exactly one PMTU (rxe 6.1 takes it and waits; rxe 6.2+'s check_length NAKs it, as uroce)"),
    'len_last_empty': (
        {'answer': ['NAK-INV@1'], 'wc': ['r:remote invalid request error', 'r:Work Request Flushed Error'], 'state': 'ERR'},
        'IBTA 9.7.5.1: a LAST carries 1..PMTU bytes (rxe 6.1 completes the receive; rxe 6.2+ NAKs it, as uroce)'),
    'pad_misaligned': (
        {'answer': ['NAK-INV@0'], 'wc': ['r:Work Request Flushed Error', 'r:Work Request Flushed Error'], 'state': 'ERR'},
        'the pad count aligns the payload (IBTA 9.2.3); rxe applies that only to a WRITE (check_rkey), uroce to every opcode'),
    'pad_first': (
        {'answer': ['NAK-INV@0'], 'wc': ['r:Work Request Flushed Error', 'r:Work Request Flushed Error'], 'state': 'ERR'},
        'a FIRST carries one PMTU and no pad (rxe 6.1 takes 1023 bytes and waits; rxe 6.2+ NAKs it)'),
    'issue2_read_middle_aeth': (
        {'answer': [], 'wc': ['s:bad response error'], 'state': 'ERR'},
        "IBTA 9.7.5.2 bad response (mlx5: IBV_WC_BAD_RESP_ERR); rxe's do_read overflows the READ's buffer: LOC_PROT_ERR"),
    'resp_read_short': (
        {'answer': [], 'wc': ['s:bad response error'], 'state': 'ERR'},
        'bad response; rxe takes the 96 bytes and never completes the READ (no timer left)'),
    'resp_read_nak_aeth': (
        {'answer': [], 'wc': ['s:bad response error'], 'state': 'ERR'},
        "bad response; rxe's check_ack returns COMPST_ERROR without a status: IBV_WC_SUCCESS on a QP in ERR"),
    'resp_read_for_write': (
        {'answer': [], 'wc': ['s:bad response error'], 'state': 'ERR'},
        'bad response; rxe says IBV_WC_FATAL_ERR'),
    'resp_atomic_for_send': (
        {'answer': [], 'wc': ['s:bad response error'], 'state': 'ERR'},
        'bad response; rxe: IBV_WC_SUCCESS on a QP in ERR (no status set, as above)'),
    'resp_ack_payload': (
        {'answer': [], 'wc': ['s:bad response error'], 'state': 'ERR'},
        'bad response (an ACK carries no payload); rxe ignores the bytes and completes the SEND'),
    'uc_pad': (
        {'answer': [], 'wc': ['r:success'], 'state': 'RTS'},
        'UC drops a message whose pad does not align it; rxe delivers it'),
    'ud_pad': (
        {'answer': [], 'wc': ['r:success'], 'state': 'RTS'},
        'UD drops such a datagram; rxe delivers it'),
}


def verdict(results, log):
    """rxe must do what RXE says; uroce the same, but for DIFFER."""
    fail = 0
    for side, res in results.items():
        for case, o in res.items():
            want = RXE.get(case)
            if side == "uroce" and case in DIFFER:
                want = DIFFER[case][0]
            ok = want is not None and o == want
            note = "" if ok else "got %s, want %s" % (o, want)
            if ok and side == "uroce" and case in DIFFER:
                note = "(rxe differs on purpose: %s)" % DIFFER[case][1]
            log("%s %-5s %-28s %s" % ("PASS" if ok else "FAIL", side, case, note))
            fail |= not ok
    return 1 if fail else 0


def run_side(name, peer, link, log):
    res = {}
    idx = 0
    for case, what, fn in CASES:
        idx += 1
        c = Case(peer, link, idx)
        fn(c)
        res[case] = c.outcome(2)
        log("%s %-28s %s" % (name, case, res[case]))
    for case, what, op, n, answer in REQ_CASES:
        idx += 1
        res[case] = req_case(peer, link, idx, op, n, answer)
        log("%s %-28s %s" % (name, case, res[case]))
    for case, what, kind, fn, n_wc in OTHER_CASES:
        idx += 1
        c = Case(peer, link, idx, kind=kind, rlen=4096)
        fn(c)
        o = c.outcome(n_wc)
        o["wc"] = o["wc"] + c.peer.poll(300, 2)   # anything more than the one expected
        res[case] = o
        log("%s %-28s %s" % (name, case, res[case]))
    peer.w.write("QUIT\n")
    peer.w.flush()
    return res


def listen(spec):
    """SIDE=IFACE,MYIP,PEERIP,PEERMAC,PORT: its listening socket, open at once
    (a peer that comes early waits in the backlog)."""
    name, rest = spec.split("=", 1)
    iface, myip, peerip, peermac, port = rest.split(",")
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((myip, int(port)))
    ls.listen(1)
    return name, (iface, myip, peerip, peermac, port), ls


def serve(side, log, timeout):
    """Wait for the side's peer, run every case."""
    name, (iface, myip, peerip, peermac, port), ls = side
    link = Link(iface, myip, peerip, peermac)
    ls.settimeout(timeout)
    log("%s: waiting for crafted_peer on %s:%s" % (name, myip, port))
    conn, _ = ls.accept()
    ls.close()
    conn.settimeout(None)
    peer = Peer(conn)
    log("%s: %s" % (name, peer.hello))
    try:
        return name, run_side(name, peer, link, log), link
    finally:
        conn.close()


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    out = sys.argv[1]
    learn = os.environ.get("CRAFTED_LEARN")
    # the peers' RoCE frames to the crafter's address land in this kernel
    # too: a socket on 4791 keeps it from answering ICMP port unreachable
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("0.0.0.0", 4791))
    logf = open(os.path.join(out, "crafted.log"), "w")

    def log(m):
        print(m, flush=True)
        logf.write(m + "\n")

    results = {}
    sides = [listen(spec) for spec in sys.argv[2:]]
    for side in sides:
        name, res, link = serve(side, log, float(os.environ.get("CRAFTED_WAIT", "600")))
        results[name] = res
        wrpcap(os.path.join(out, "crafted-%s.pcap" % name), [Ether(f) for f in link.frames])
        link.close()
    if learn:
        for name, res in results.items():
            print("%s = {" % name.upper())
            for k, v in res.items():
                print("    %r: %r," % (k, v))
            print("}")
    return verdict(results, log)


if __name__ == "__main__":
    sys.exit(main())
