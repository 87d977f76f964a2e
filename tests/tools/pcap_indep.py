#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A capture uroce wrote, judged by decoders that are not uroce's own
(uroce-pcap parses with the wire/ code that built the frames): every
RoCEv2 frame (UDP port 4791) has the ICRC that interop_check.py's zlib
implementation of IBTA Annex A17 computes, and tshark's InfiniBand
dissector takes every one as RRoCE with no malformed flag.

  pcap_indep.py PCAP [MIN_FRAMES]
Exit 0 pass, 1 fail, 77 when tshark is not installed."""
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_check import icrc_independent  # noqa: E402


# tshark 4.0's heuristic dissectors of the infiniband.payload table
PAYLOAD_HEURISTICS = ('eth_over_ib', 'iser_infiniband', 'lnet_ib', 'sdp_infiniband',
                      'smb_direct_infiniband', 'smcr_infiniband', 'rpcrdma_infiniband',
                      'nvme_rdma', 'fc_infiniband', 'mellanox_eoib')


def roce_frames(path):
    """(frame number, IP packet) of every UDP/4791 frame (Ethernet, no
    VLAN tag), read with struct: no decoder of ours."""
    out = []
    with open(path, 'rb') as f:
        hdr = f.read(24)
        magic = struct.unpack('<I', hdr[:4])[0]
        e = '<' if magic in (0xa1b2c3d4, 0xa1b23c4d) else '>'
        n = 0
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                break
            incl = struct.unpack(e + 'IIII', rec)[2]
            data = f.read(incl)
            n += 1
            if len(data) < 14 + 28:
                continue
            et = struct.unpack('!H', data[12:14])[0]
            ip = data[14:]
            if et == 0x0800 and ip[9] == 17:
                udp = ip[(ip[0] & 0xf) * 4:]
            elif et == 0x86dd and ip[6] == 17:
                udp = ip[40:]
            else:
                continue
            if len(udp) >= 8 and struct.unpack('!H', udp[2:4])[0] == 4791:
                out.append((n, ip))
    return out


def icrc_mismatches(path, want_frames=None):
    """The frames of path whose ICRC is not what Annex A17 (zlib, no wire/
    code) computes, as problems; and a count that differs from
    want_frames (frames another decoder saw), when given."""
    frames = roce_frames(path)
    bad = []
    for n, ip in frames:
        mine, trailer = icrc_independent(ip)
        if mine != trailer:
            bad.append('frame %d: ICRC %s, Annex A17 computes %s' % (n, trailer.hex(), mine.hex()))
    if want_frames is not None and want_frames != len(frames):
        bad.append('%d RoCE frames read without wire/, %d by the other decoder' %
                   (len(frames), want_frames))
    print('independent ICRC of %s: %d frames, %d mismatches' %
          (os.path.basename(path), len(frames), len(bad)))
    return bad


def check(path, min_frames=1):
    """The problems ([] when none). Raises SystemExit(77) without tshark."""
    tshark = shutil.which('tshark')
    if not tshark:
        print('SKIP: tshark not installed: no independent decoder for %s' % path)
        sys.exit(77)
    frames = roce_frames(path)
    bad = icrc_mismatches(path)
    # tshark's heuristic dissectors guess at protocols carried in the IB
    # payload (NVMe, SMB Direct, Ethernet over IB ...) and call random
    # payload bytes malformed (seen: a SEND payload taken for an Ethernet
    # frame): they judge guesses about data we do not carry, so they are
    # off and tshark judges the RoCE headers
    heur = []
    for n in PAYLOAD_HEURISTICS:
        heur += ['--disable-heuristic', n]
    r = subprocess.run([tshark, '-r', path, '--disable-protocol', 'rpcordma',
                        '--disable-protocol', 'infiniband.eoib'] + heur + [
                        '-Y', 'udp.dstport == 4791',
                        '-T', 'fields', '-e', 'frame.number', '-e', 'infiniband.bth.opcode',
                        '-e', '_ws.malformed'], capture_output=True, text=True, timeout=300)
    # the frames read above (tshark also shows IPv6 ones behind extension
    # headers, which uroce does not send)
    nums = {str(n) for n, _ in frames}
    rows = [x for x in (ln.split('\t') for ln in r.stdout.splitlines() if ln.strip())
            if x[0] in nums]
    if r.returncode != 0:
        bad.append('tshark exit %d: %s' % (r.returncode, r.stderr.strip()[-300:]))
    undecoded = [x[0] for x in rows if len(x) < 2 or not x[1]]
    malformed = [x[0] for x in rows if len(x) > 2 and x[2]]
    if len(rows) != len(frames):
        bad.append('tshark shows %d RoCE frames, the file holds %d' % (len(rows), len(frames)))
    if undecoded:
        bad.append('tshark decodes no BTH in frames %s' % ' '.join(undecoded[:10]))
    if malformed:
        bad.append('tshark: malformed frames %s' % ' '.join(malformed[:10]))
    if len(frames) < min_frames:
        bad.append('%d RoCE frames, at least %d expected' % (len(frames), min_frames))
    print('independent check of %s: %d RoCE frames, %d ICRC mismatches, tshark %d decoded, '
          '%d malformed' % (os.path.basename(path), len(frames),
                            sum('ICRC' in b for b in bad), len(rows) - len(undecoded),
                            len(malformed)))
    for b in bad[:10]:
        print('FAIL:', b)
    return bad


if __name__ == '__main__':
    sys.exit(1 if check(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1) else 0)
