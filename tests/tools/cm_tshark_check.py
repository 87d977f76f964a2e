#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tshark's InfiniBand CM dissector against CM MADs built by wire/.

usage: cm_tshark_check.py [--tshark PATH] PCAP EXPECT
       cm_tshark_check.py [--tshark PATH] --all PCAP

EXPECT (from gen_cm_frames) has one line per frame: frame=N field=value...
Every frame must be decoded as RRoCE with a CM MAD, with no malformed flag
and no expert info of warning level or above, and every listed field equal.
Values: 0x.. integers, or bare hex for byte strings and addresses.

--all: a capture of any traffic (tests/interop): every RoCE frame to QPN 1
(both sides' MADs) must pass the same checks; it prints the MADs counted
by sender and attribute, and fails when there is none."""
import ipaddress
import subprocess
import sys

SEV_WARN = 0x600000
BASE = ["frame.number", "_ws.col.Protocol", "_ws.col.Info", "_ws.malformed",
        "_ws.expert.severity", "_ws.expert.message"]


def parse_expect(path):
    frames = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                frames.append(dict(kv.split("=", 1) for kv in line.split()))
    return frames


def norm(field, got):
    """tshark's text of a field as bare hex (bytes/addresses) or an int."""
    got = got.split("|")[0]
    if field.endswith(("gid", "gid_ipv4", "sip6", "dip6", "sip4", "dip4")):
        return ipaddress.ip_address(got).packed.hex()
    if field.endswith(("private", "ari")):
        return got.replace(":", "").lower()
    return int(got, 0)


def run_tshark(tshark, pcap, fields, dfilter=None):
    """One row (field -> text) per frame tshark shows."""
    cmd = [tshark, "-r", pcap, "--disable-protocol", "rpcordma",
           "--disable-protocol", "infiniband.eoib",
           "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
           "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=|"]
    if dfilter:
        cmd += ["-Y", dfilter]
    for f in fields:
        cmd += ["-e", f]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        sys.exit("tshark failed (rc %d): %s" % (res.returncode, res.stderr.strip()))
    rows = []
    for line in res.stdout.splitlines():
        vals = line.split("\t")
        rows.append(dict(zip(fields, vals + [""] * (len(fields) - len(vals)))))
    return rows


# UDP's complaint about checksum 0 over IPv6: RoCEv2 (Annex A17) sends 0 there, rxe and
# uroce alike; it is about the UDP header, not the MAD
UDP6_ZERO = "Illegal checksum value (0)"


def check_mad(row, where, errors):
    """The checks every CM MAD frame gets: RRoCE, CM, not malformed, no expert warning."""
    if row["_ws.col.Protocol"] != "RRoCE":
        errors.append("%s: tshark protocol %r" % (where, row["_ws.col.Protocol"]))
    if row["_ws.malformed"]:
        errors.append("%s: malformed (%s)" % (where, row["_ws.expert.message"]))
    for s, m in zip(row["_ws.expert.severity"].split("|"), row["_ws.expert.message"].split("|")):
        if s and int(s, 0) >= SEV_WARN and not (m == UDP6_ZERO and row.get("ipv6.src")):
            errors.append("%s: expert %s" % (where, m))
    if "CM" not in row["_ws.col.Info"]:
        errors.append("%s: Info %r has no CM" % (where, row["_ws.col.Info"]))


def check_all(tshark, pcap):
    src = ["ip.src", "ipv6.src", "infiniband.mad.attributeid"]
    rows = run_tshark(tshark, pcap, BASE + src, "infiniband.bth.destqp == 1")
    errors, seen = [], {}
    for row in rows:
        check_mad(row, "frame %s" % row["frame.number"], errors)
        key = (row["ip.src"] or row["ipv6.src"], row["infiniband.mad.attributeid"])
        seen[key] = seen.get(key, 0) + 1
    for err in errors[:60]:
        print("FAIL: " + err)
    if not rows:
        print("FAIL: no CM MAD in %s" % pcap)
    print("  ".join("%s %s: %d" % (k[0], k[1], n) for k, n in sorted(seen.items())))
    print("cm_tshark_check: %d CM MADs, %d errors" % (len(rows), len(errors)))
    return 1 if errors or not rows else 0


def main():
    args = sys.argv[1:]
    tshark = "tshark"
    if len(args) >= 3 and args[0] == "--tshark":
        tshark, args = args[1], args[2:]
    if len(args) == 2 and args[0] == "--all":
        return check_all(tshark, args[1])
    if len(args) != 2:
        sys.exit(__doc__)
    pcap, expect = args
    exp = parse_expect(expect)
    fields = BASE + sorted({k for e in exp for k in e if k != "frame"})
    rows = run_tshark(tshark, pcap, fields)
    errors, checked = [], 0
    if len(rows) != len(exp):
        errors.append("frame count: expect %d, tshark %d" % (len(exp), len(rows)))
    for e, row in zip(exp, rows):
        where = "frame %s" % e["frame"]
        check_mad(row, where, errors)
        for k, want in e.items():
            if k == "frame":
                continue
            try:
                got = norm(k, row[k])
            except ValueError:
                got = row[k]
            w = int(want, 0) if isinstance(got, int) else want.lower()
            if got != w:
                errors.append("%s: %s = %r, built %s" % (where, k, row[k], want))
            checked += 1
    for err in errors[:60]:
        print("FAIL: " + err)
    print("cm_tshark_check: %d frames, %d fields compared, %d errors" % (len(rows), checked, len(errors)))
    return 1 if errors or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
