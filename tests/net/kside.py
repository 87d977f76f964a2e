#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The kernel's side of a shared interface (twohost.py's shared case): a
TCP echo stream with every byte checked, and ICMP echo, run inside a
namespace with `ip netns exec`.

  kside.py serve ADDR PORT          echo every byte back until EOF
  kside.py stream ADDR PORT SEED STOPFILE
                                    send seeded random chunks, read each
                                    back and compare, until STOPFILE
                                    exists; prints 'stream ok BYTES CHUNKS
                                    SHA256' (exit 0) or why it failed
  kside.py connect ADDR PORT SECS   exit 0 if a TCP connection opens
                                    within SECS, 1 if not
  kside.py ping ADDR COUNT [GAP_MS] ICMP/ICMPv6 echo, every reply with
                                    our payload; exit 0 if all came back;
                                    with GAP_MS, that long between echoes
                                    and the round trips printed (min,
                                    median, max in us): an idle uroced's
                                    wake-up latency (docs/emu.md)
  kside.py frames IF DSTMAC SRC4 DST4 SRC6 DST6
                                    send one raw frame of each kind in
                                    FRAMES out of IF (what the XDP program
                                    must steer to uroce or pass)
"""
import hashlib
import os
import random
import socket
import struct
import sys
import time


def family(addr):
    return socket.AF_INET6 if ':' in addr else socket.AF_INET


def recv_exact(s, n):
    buf = b''
    while len(buf) < n:
        b = s.recv(n - len(buf))
        if not b:
            raise EOFError('connection closed after %d of %d bytes' % (len(buf), n))
        buf += b
    return buf


def serve(addr, port):
    ls = socket.socket(family(addr), socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(1)
    print('listening', flush=True)
    c, _ = ls.accept()
    while True:
        b = c.recv(65536)
        if not b:
            return 0
        c.sendall(b)


def stream(addr, port, seed, stopfile):
    rng = random.Random(seed)
    deadline = time.monotonic() + 20
    while True:
        try:
            s = socket.create_connection((addr, port), timeout=10)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    # an echo that does not come back within 10 s is a broken connection
    s.settimeout(10)
    h = hashlib.sha256()
    total = chunks = 0
    while not os.path.exists(stopfile):
        data = rng.randbytes(rng.randrange(1, 32768))
        s.sendall(data)
        back = recv_exact(s, len(data))
        if back != data:
            print('stream FAIL: chunk %d (%d bytes at offset %d) came back different'
                  % (chunks, len(data), total))
            return 1
        h.update(data)
        total += len(data)
        chunks += 1
        time.sleep(0.002)
    s.close()
    print('stream ok %d %d %s' % (total, chunks, h.hexdigest()))
    return 0


def connect(addr, port, secs):
    try:
        socket.create_connection((addr, port), timeout=secs).close()
        return 0
    except OSError as e:
        print('connect %s:%d: %s' % (addr, port, e))
        return 1


def csum(b):
    if len(b) % 2:
        b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return ~s & 0xffff


def ping(addr, count, gap_ms=0):
    v6 = ':' in addr
    rtts = []
    s = socket.socket(family(addr), socket.SOCK_RAW,
                      socket.IPPROTO_ICMPV6 if v6 else socket.IPPROTO_ICMP)
    s.settimeout(2)
    ident, got = os.getpid() & 0xffff, 0
    for seq in range(count):
        payload = b'uroce-shared-%d' % seq
        hdr = struct.pack('!BBHHH', 128 if v6 else 8, 0, 0, ident, seq)
        # the kernel fills in ICMPv6's checksum (it needs the pseudo-header)
        ck = 0 if v6 else csum(hdr + payload)
        if gap_ms:
            time.sleep(gap_ms / 1000.0)
        t0 = time.monotonic()
        s.sendto(struct.pack('!BBHHH', 128 if v6 else 8, 0, ck, ident, seq) + payload,
                 (addr, 0))
        end = time.monotonic() + 2
        while time.monotonic() < end:
            try:
                b = s.recv(2048)
            except socket.timeout:
                break
            icmp = b if v6 else b[(b[0] & 15) * 4:]
            typ, _, _, rid, rseq = struct.unpack('!BBHHH', icmp[:8])
            if typ == (129 if v6 else 0) and rid == ident and rseq == seq and icmp[8:] == payload:
                got += 1
                rtts.append((time.monotonic() - t0) * 1e6)
                break
    print('ping %s: %d/%d' % (addr, got, count))
    if gap_ms and rtts:
        rtts.sort()
        print('rtt us: min %.0f median %.0f max %.0f' % (rtts[0], rtts[len(rtts) // 2], rtts[-1]))
    return 0 if got == count else 1


def ip4(src, dst, proto, payload, frag=0):
    h = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(payload), 0x1234, frag, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    return h[:10] + struct.pack('!H', csum(h)) + h[12:] + payload


def ip6(src, dst, nxt, payload):
    return struct.pack('!IHBB16s16s', 6 << 28, len(payload), nxt, 64,
                       socket.inet_pton(socket.AF_INET6, src),
                       socket.inet_pton(socket.AF_INET6, dst)) + payload


def udp(dport, body=b'\0' * 8):
    return struct.pack('!HHHH', 49152, dport, 8 + len(body), 0) + body


# name: (EtherType, payload builder); the names say where each must go.
# Fragments carry 16 bytes (a multiple of 8, as a non-last one must).
FRAMES = {
    'roce4': lambda a: (0x0800, ip4(a[0], a[1], 17, udp(4791))),
    'roce6': lambda a: (0x86dd, ip6(a[2], a[3], 17, udp(4791))),
    'roce4_vlan': lambda a: (0x8100, struct.pack('!HH', 7, 0x0800) + ip4(a[0], a[1], 17, udp(4791))),
    'kernel_udp4792': lambda a: (0x0800, ip4(a[0], a[1], 17, udp(4792))),
    'kernel_frag4': lambda a: (0x0800, ip4(a[0], a[1], 17, udp(4791), frag=0x2000)),
    'kernel_frag6': lambda a: (0x86dd, ip6(a[2], a[3], 44, struct.pack('!BBHI', 17, 0, 1, 0x5678)
                                            + udp(4791))),
}


def frames(ifname, dstmac, addrs):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    src = s.getsockname()[4]
    dst = bytes.fromhex(dstmac.replace(':', ''))
    for name, build in FRAMES.items():
        et, body = build(addrs)
        s.send(dst + src + struct.pack('!H', et) + body)
        print('sent', name)
    return 0


def main():
    a = sys.argv[1:]
    if a[0] == 'serve':
        return serve(a[1], int(a[2]))
    if a[0] == 'stream':
        return stream(a[1], int(a[2]), int(a[3]), a[4])
    if a[0] == 'connect':
        return connect(a[1], int(a[2]), float(a[3]))
    if a[0] == 'ping':
        return ping(a[1], int(a[2]), float(a[3]) if len(a) > 3 else 0)
    if a[0] == 'frames':
        return frames(a[1], a[2], a[3:7])
    print(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main())
