#!/usr/bin/python3
"""pcap_cli_test.py UROCE_PCAP DATADIR - uroce-pcap decode/check/corrupt, end to end.

Asserts on output text, not just exit codes:
  * check accepts every genuine rxe capture in DATADIR;
  * decode shows the fields of each header kind (AETH ACK/RNR NAK/NAK, RETH, AtomicETH,
    AtomicAckETH, DETH, ImmDt) exactly;
  * corrupted copies are rejected with the right wire/ reason, and edits to ICRC-masked
    fields (TTL, TOS, UDP checksum, FECN/BECN) are accepted once the IPv4 checksum is
    fixed, while an edit to a covered field (IP ID) is not;
  * nanosecond pcaps, pcapng, Linux cooked (SLL) captures, non-RoCE frames, unsupported link
    types, missing / non-pcap / truncated files, and usage errors behave as documented.
With --interop GEN_PCAP GEN_EXPECT INTEROP_CHECK TSHARK it also checks that the
independent-decoder cross-check notices a corrupted payload and a rewritten PSN.
"""
import glob
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from harness import check as expect, verdict  # noqa: E402  (tests/lib/harness.py)


def run(*args):
    r = subprocess.run(list(args), capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def expect_in(needle, hay, what):
    return expect(needle in hay, "%s: %r not in output:\n%s" % (what, needle, hay))


class Tool:
    def __init__(self, exe, tmp):
        self.exe, self.tmp, self.n = exe, tmp, 0

    def __call__(self, *args):
        return run(self.exe, *args)

    def corrupt(self, src, *opts):
        self.n += 1
        out = os.path.join(self.tmp, "c%03d.pcap" % self.n)
        rc, o, e = run(self.exe, "corrupt", src, out, *opts)
        expect(rc == 0, "corrupt %s %s: rc %d %s" % (src, opts, rc, e))
        return out

    def check_one(self, path, rc_want, *needles, what=""):
        rc, o, e = self("check", path)
        expect(rc == rc_want, "%s: check rc %d, want %d\n%s%s" % (what, rc, rc_want, o, e))
        for n in needles:
            expect_in(n, o + e, what)
        return o


def write_pcap(path, linktype, frames, nsec=False):
    magic = 0xA1B23C4D if nsec else 0xA1B2C3D4
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", magic, 2, 4, 0, 0, 65535, linktype))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1700000000, i, len(fr), len(fr)))
            f.write(fr)


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    off, out = 24, []
    while off + 16 <= len(data):
        _, _, cap, _ = struct.unpack("<IIII", data[off:off + 16])
        out.append(data[off + 16:off + 16 + cap])
        off += 16 + cap
    return out


def main():
    args = sys.argv[1:]
    interop = None
    if "--interop" in args:
        i = args.index("--interop")
        interop, args = args[i + 1:i + 5], args[:i]
    exe, datadir = args
    tmp = tempfile.mkdtemp(prefix="uroce-pcap-test-")
    t = Tool(exe, tmp)
    try:
        tests(t, datadir, tmp)
        if interop:
            interop_negative(t, *interop)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return verdict()


def tests(t, datadir, tmp):
    pcaps = sorted(glob.glob(os.path.join(datadir, "*.pcap")))
    expect(len(pcaps) >= 10, "expected the rxe captures in %s" % datadir)

    # --- every genuine capture is valid
    rc, o, e = t("check", *pcaps)
    expect(rc == 0, "check of genuine captures rc %d\n%s%s" % (rc, o, e))
    total = 0
    for p in pcaps:
        m = re.search(r"^%s: (\d+) packets, (\d+) RoCE valid, 0 RoCE invalid, 0 non-RoCE skipped$"
                      % re.escape(p), o, re.M)
        if expect(m and m.group(1) == m.group(2), "summary line for %s:\n%s" % (p, o)):
            total += int(m.group(1))
    expect_in("total: %d packets, %d RoCE valid, 0 RoCE invalid, 0 non-RoCE skipped" % (total, total),
              o, "check total")
    expect("invalid" not in o.replace("RoCE invalid", ""), "no invalid reasons listed:\n" + o)

    # --- decode: one line per frame + trailer, all ICRCs ok
    for p in pcaps:
        rc, o, e = t("decode", p)
        lines = o.splitlines()
        n = sum(1 for ln in lines if not ln.startswith("#"))
        expect(rc == 0 and all("icrc=ok" in ln for ln in lines if not ln.startswith("#")),
               "decode %s rc %d:\n%s" % (p, rc, o[:2000]))
        expect_in("# %d packets, %d RoCE valid, 0 RoCE invalid, 0 non-RoCE" % (n, n), o, "decode " + p)

    d = os.path.join(datadir, "%s.pcap")
    decode_lines = {
        "ops_rc": [
            "     1    0.000000 10.77.0.12:49441 > 10.77.0.11:4791 RC SEND Only (0x04) qp=0x000011 psn=3089339 A len=64 icrc=ok",
            " 10.77.0.11:49441 > 10.77.0.12:4791 RC Acknowledge (0x11) qp=0x000011 psn=3089339 aeth=ACK credits=31 (none) msn=1 icrc=ok",
            "RC SEND Only with Immediate (0x05) qp=0x000011 psn=3089340 A imm=0x11223344 len=64 icrc=ok",
            "RC RDMA WRITE First (0x06) qp=0x000011 psn=3089349 reth[va=0x55d2ca237000 rkey=0x000002e1 len=3000] len=1024 icrc=ok",
            "RC RDMA READ Response Last (0x0f) qp=0x000011 psn=3089359 aeth=ACK credits=31 (none) msn=11 len=952 icrc=ok",
            "RC CmpSwap (0x13) qp=0x000011 psn=3089360 A atomic[va=0x55d2ca23b000 rkey=0x000002e1 swap=0x1111 compare=0x0] icrc=ok",
            "RC FetchAdd (0x14) qp=0x000011 psn=3089361 A atomic[va=0x55d2ca23b000 rkey=0x000002e1 add=0x5] icrc=ok",
            "RC ATOMIC Acknowledge (0x12) qp=0x000011 psn=3089361 aeth=ACK credits=31 (none) msn=13 orig=0x1111 icrc=ok",
        ],
        "ops_rnr_nak": ["aeth=RNR-NAK timer=25 (61440 us) msn=0 icrc=ok"],
        "ops_nak_access": ["aeth=NAK code=2 (remote access error) msn=0 icrc=ok"],
        "ops_loss_psn_nak": ["aeth=NAK code=0 (PSN sequence error) msn=3 icrc=ok"],
        "ops_ud_imm": ["UD SEND Only with Immediate (0x65) qp=0x000012 psn=12692992 "
                       "deth[qkey=0x11111111 srcqp=0x000012] imm=0xcafe0001 len=256 icrc=ok"],
    }
    for name, needles in decode_lines.items():
        if not os.path.exists(d % name):
            expect(False, "missing capture %s" % (d % name))
            continue
        rc, o, e = t("decode", d % name)
        for n in needles:
            expect_in(n, o, "decode " + name)

    rc_pcap = d % "ops_rc"
    # Frame layout of ops_rc: Ethernet 0-13, IPv4 14-33 (TOS 15, ID 18-19, TTL 22, csum 24-25),
    # UDP 34-41 (dport 36-37, csum 40-41), BTH 42-53 (opcode 42, SE/M/pad/tver 43, FECN/BECN 46).

    # --- corruptions and their reasons
    c = t.corrupt(rc_pcap, "--packet", "3", "--flip", "-5:0")     # last payload byte
    t.check_one(c, 1, "35 RoCE valid, 1 RoCE invalid",
                "invalid bad-icrc: 1 (ICRC mismatch; first at frame 3)", what="payload bit flip")
    rc, o, e = t("decode", c)
    # the line still shows the headers, plus both ICRC values
    expect_in("     3    0.020132 10.77.0.12:49441 > 10.77.0.11:4791 RC SEND Only with Immediate (0x05) "
              "qp=0x000011 psn=3089340 A imm=0x11223344 len=64 "
              "icrc=BAD (frame 0xaf2ad298, computed 0xd82de20e) INVALID bad-icrc (ICRC mismatch)",
              o, "decode of flipped frame")

    c = t.corrupt(rc_pcap, "--packet", "4", "--flip", "-1:7")     # the ICRC itself
    t.check_one(c, 1, "invalid bad-icrc: 1 (ICRC mismatch; first at frame 4)", what="ICRC bit flip")

    c = t.corrupt(rc_pcap, "--packet", "2", "--flip", "22:0")     # TTL, checksum left stale
    t.check_one(c, 1, "invalid ipv4-csum: 1 (bad IPv4 header checksum; first at frame 2)",
                what="TTL flip without checksum fix")
    c = t.corrupt(rc_pcap, "--packet", "2", "--set", "24:0", "--set", "25:0")
    t.check_one(c, 1, "invalid ipv4-csum: 1", what="zeroed IPv4 checksum")

    # ICRC-masked fields: changing them (with a fixed IPv4 checksum) keeps the packet valid
    for what, opts in (("TTL", ["--set", "22:1"]), ("TOS/ECN CE", ["--set", "15:3"]),
                       ("UDP checksum", ["--set", "40:0x12", "--set", "41:0x34"]),
                       ("FECN+BECN", ["--flip", "46:7", "--flip", "46:6"])):
        c = t.corrupt(rc_pcap, "--packet", "7", *opts, "--fix-ipv4-csum")
        t.check_one(c, 0, "36 packets, 36 RoCE valid, 0 RoCE invalid", what="masked " + what)
    c = t.corrupt(rc_pcap, "--packet", "7", "--flip", "19:0", "--fix-ipv4-csum")   # IP ID is covered
    t.check_one(c, 1, "invalid bad-icrc: 1 (ICRC mismatch; first at frame 7)", what="IP ID change")
    rc, o, e = t("decode", t.corrupt(rc_pcap, "--packet", "1", "--set", "15:3", "--fix-ipv4-csum"))
    expect_in("10.77.0.11:4791 ECN-CE RC SEND Only", o, "ECN CE shown")

    # truncated frames
    c = t.corrupt(rc_pcap, "--packet", "5", "--truncate", "100")
    t.check_one(c, 1, "invalid ip-len: 1 (IP length disagrees with the frame; first at frame 5)",
                what="frame cut to 100 bytes")
    c = t.corrupt(rc_pcap, "--packet", "5", "--truncate", "40")
    t.check_one(c, 1, "invalid trunc-udp: 1", what="frame cut inside UDP")
    c = t.corrupt(rc_pcap, "--packet", "5", "--truncate", "20")
    t.check_one(c, 1, "invalid trunc-ip: 1", what="frame cut inside IP")

    # transport errors behind a valid ICRC (re-computed after the edit)
    c = t.corrupt(rc_pcap, "--packet", "1", "--set", "42:0x1f", "--fix-icrc")
    t.check_one(c, 1, "invalid bad-opcode: 1 (reserved or unsupported BTH opcode; first at frame 1)",
                what="reserved opcode")
    c = t.corrupt(rc_pcap, "--packet", "1", "--set", "43:0x01", "--fix-icrc")
    t.check_one(c, 1, "invalid bth-tver: 1", what="BTH tver 1")
    c = t.corrupt(rc_pcap, "--packet", "2", "--set", "43:0x30", "--fix-icrc")   # pad 3 on an ACK
    t.check_one(c, 1, "invalid bad-pad: 1", what="pad on ACK")
    c = t.corrupt(rc_pcap, "--packet", "1", "--set", "42:0x11", "--fix-icrc")   # SEND bytes as ACK
    t.check_one(c, 1, "invalid payload-unexpected: 1", what="payload on ACK")
    # every reason is counted separately, first frame reported
    c2 = t.corrupt(rc_pcap, "--packet", "9", "--flip", "-6:3")
    c3 = t.corrupt(c2, "--packet", "12", "--flip", "22:0")
    c4 = t.corrupt(c3, "--packet", "13", "--flip", "-6:3")
    t.check_one(c4, 1, "36 packets, 33 RoCE valid, 3 RoCE invalid",
                "invalid ipv4-csum: 1 (bad IPv4 header checksum; first at frame 12)",
                "invalid bad-icrc: 2 (ICRC mismatch; first at frame 9)", what="mixed reasons")

    # several files: one bad one makes the run fail, good ones still reported
    rc, o, e = t("check", rc_pcap, c4)
    expect(rc == 1, "check good+bad rc %d" % rc)
    expect_in("%s: 36 packets, 36 RoCE valid, 0 RoCE invalid" % rc_pcap, o, "good file in mixed run")
    expect_in("total: 72 packets, 69 RoCE valid, 3 RoCE invalid, 0 non-RoCE skipped", o, "mixed total")

    # --- non-RoCE frames are skipped and counted, not failures
    c = t.corrupt(rc_pcap, "--packet", "1", "--set", "12:0x08", "--set", "13:0x06")  # ARP
    c = t.corrupt(c, "--packet", "3", "--set", "36:0x00", "--set", "37:0x35")       # UDP 53
    c = t.corrupt(c, "--packet", "5", "--set", "23:6", "--fix-ipv4-csum")            # TCP
    out = t.check_one(c, 0, "36 packets, 33 RoCE valid, 0 RoCE invalid, 3 non-RoCE skipped",
                      what="non-RoCE frames")
    expect("invalid" not in out.replace("RoCE invalid", ""), "non-RoCE not listed as invalid")
    rc, o, e = t("decode", c)
    expect_in("     1    0.000000 non-RoCE ARP ethertype=0x0806", o, "ARP line")
    expect_in(" non-RoCE UDP port 49441 > 53", o, "UDP 53 line")
    expect_in(" non-RoCE IPv4 not UDP", o, "TCP line")
    expect_in("# 36 packets, 33 RoCE valid, 0 RoCE invalid, 3 non-RoCE", o, "decode trailer")

    # --- nanosecond pcap (corrupt writes ns): same decode as the µs original
    ns = t.corrupt(rc_pcap)
    with open(ns, "rb") as f:
        expect(f.read(4) == struct.pack("<I", 0xA1B23C4D), "corrupt writes nanosecond pcaps")
    _, o1, _ = t("decode", rc_pcap)
    _, o2, _ = t("decode", ns)
    expect(o1 == o2 and o1, "decode of ns copy differs from µs original")

    # --- pcapng (libpcap reads it; editcap ships with tshark's wireshark-common)
    editcap = shutil.which("editcap")
    if expect(editcap, "editcap not found (package wireshark-common)"):
        ng = os.path.join(tmp, "ng.pcapng")
        subprocess.run([editcap, "-F", "pcapng", rc_pcap, ng], check=True, capture_output=True)
        t.check_one(ng, 0, "36 packets, 36 RoCE valid, 0 RoCE invalid", what="pcapng")

    # --- Linux cooked capture (SLL): Ethernet header replaced by 16 bytes
    frames = read_pcap(rc_pcap)
    sll = os.path.join(tmp, "sll.pcap")
    write_pcap(sll, 113, [struct.pack("!HHH8sH", 0, 1, 6, fr[6:12] + b"\0\0", 0x0800) + fr[14:]
                          for fr in frames])
    t.check_one(sll, 0, "36 packets, 36 RoCE valid, 0 RoCE invalid", what="SLL capture")
    sll2 = os.path.join(tmp, "sll2.pcap")
    write_pcap(sll2, 276, [struct.pack("!HHIHBB8s", 0x0800, 0, 2, 1, 0, 6, fr[6:12] + b"\0\0") + fr[14:]
                           for fr in frames], nsec=True)
    t.check_one(sll2, 0, "36 packets, 36 RoCE valid, 0 RoCE invalid", what="SLL2 capture")
    raw = os.path.join(tmp, "raw.pcap")
    write_pcap(raw, 101, [fr[14:] for fr in frames])
    t.check_one(raw, 0, "36 packets, 36 RoCE valid, 0 RoCE invalid", what="raw IP capture")
    wifi = os.path.join(tmp, "wifi.pcap")
    write_pcap(wifi, 105, frames[:1])
    t.check_one(wifi, 2, "uroce-pcap: %s: unsupported link type IEEE802_11 (105)" % wifi,
                what="802.11 link type")

    # --- file errors: one clear line on stderr, exit 2
    missing = os.path.join(tmp, "no-such.pcap")
    rc, o, e = t("check", missing)
    expect(rc == 2, "missing file rc %d" % rc)
    expect(e.strip() == "uroce-pcap: %s: cannot read capture: No such file or directory" % missing,
           "missing file message: %r" % e)
    notpcap = os.path.join(tmp, "notpcap.pcap")
    with open(notpcap, "w") as f:
        f.write("this is not a capture file at all\n")
    rc, o, e = t("check", notpcap)
    expect(rc == 2 and e.strip() == "uroce-pcap: %s: cannot read capture: unknown file format" % notpcap,
           "not-a-pcap: rc %d %r" % (rc, e))
    rc, o, e = t("decode", missing)
    expect(rc == 2 and "cannot read capture" in e, "decode missing file rc %d %r" % (rc, e))
    rc, o, e = t("check", rc_pcap, missing)   # still reports the readable one
    expect(rc == 2 and "%s: 36 packets" % rc_pcap in o and "cannot read capture" in e,
           "good + missing: rc %d" % rc)
    cut = os.path.join(tmp, "cut.pcap")
    with open(rc_pcap, "rb") as f, open(cut, "wb") as g:
        g.write(f.read()[:1000])
    rc, o, e = t("check", cut)
    expect(rc == 2 and re.search(r"read error after \d+ frames: truncated dump file", e),
           "truncated file: rc %d %r" % (rc, e))

    # --- usage errors exit 2 with a usage line
    for a in ([], ["frobnicate"], ["check"], ["decode"], ["decode", rc_pcap, rc_pcap],
              ["corrupt", rc_pcap], ["corrupt", rc_pcap, "/dev/null", "--flip", "3"],
              ["corrupt", rc_pcap, "/dev/null", "--flip", "3:8"], ["corrupt", rc_pcap, "/dev/null", "--bogus"]):
        rc, o, e = t(*a)
        expect(rc == 2 and "usage: uroce-pcap decode FILE" in e, "usage error %s: rc %d %r" % (a, rc, e))
    rc, o, e = t("--help")
    expect(rc == 0 and "usage:" in o, "--help")
    rc, o, e = t("corrupt", rc_pcap, os.path.join(tmp, "x.pcap"), "--packet", "99", "--flip", "0:0")
    expect(rc == 2 and "has no packet 99" in e, "corrupt missing packet: %r" % e)
    rc, o, e = t("corrupt", rc_pcap, os.path.join(tmp, "x.pcap"), "--flip", "5000:0")
    expect(rc == 2 and "offset 5000 is outside frame 1" in e, "corrupt bad offset: %r" % e)


def interop_negative(t, gen_pcap, gen_expect, checker, tshark):
    """The cross-check must fail loudly when a frame does not match what was built."""
    # decode of wire/'s own frames: every opcode, IPv6 in brackets, VLAN, CNP, IETH
    rc, o, e = t("decode", gen_pcap)
    body = [ln for ln in o.splitlines() if not ln.startswith("#")]
    expect(rc == 0 and body and all(ln.endswith(" icrc=ok") for ln in body),
           "decode of generated frames rc %d:\n%s" % (rc, o[:3000]))
    for needle in ("10.77.0.12:57236 > 10.77.0.11:4791 CNP (0x81) qp=0x000011 psn=0 BECN icrc=ok",
                   " vlan=", " ECN-CE ", " FECN ", " pkey=0x8001 ", " pad=3 ",
                   "RC SEND Only with Invalidate (0x17)", " inv_rkey=0x00abc",
                   "UD SEND Only with Immediate (0x65)", " aeth=RNR-NAK timer=14 (1280 us) ",
                   " aeth=NAK code=4 (invalid RD request) ", " aeth=ACK credits=10 ",
                   "RC ATOMIC Acknowledge (0x12)", " orig=0xdeadbeef",
                   "RC RDMA ATOMIC WRITE (0x1d)", "RC RDMA FLUSH (0x1c)", " feth[type=",
                   " level=mr] reth[va=", "XRC SEND Only (0xa4)", " xrceth[srqn=0x00c",
                   "XRC RDMA WRITE Only with Immediate (0xab)", "XRC Acknowledge (0xb1)"):
        expect_in(needle, o, "decode of generated frames")
    # the IPv6 CNP: its VLAN and ECN depend on how many opcodes come before it
    expect(any(ln.split()[2:5] == ["[fd00:77::12]:57236", ">", "[fe80::5054:ff:fe4d:b]:4791"] and
               ln.endswith(" CNP (0x81) qp=0x000011 psn=0 BECN icrc=ok") for ln in body),
           "decode of the generated IPv6 CNP")
    # IBTA 1.5 requests that parse but no responder executes: check fails on them
    # (frame 108: an IPv4 FLUSH of type global; byte 57 = FETH low byte)
    c = t.corrupt(gen_pcap, "--packet", "108", "--flip", "57:0", "--fix-icrc")
    rc, o, e = t("check", c)
    expect(rc == 1, "check of a FLUSH with no placement type: rc %d\n%s" % (rc, o))
    expect_in("not executable flush-feth-not-executable: 1 (first at frame 108)", o, "check FLUSH rule")
    rc, o, e = t("decode", c)
    expect_in(" feth[type=0x0 level=mr] reth[", o, "decode of FLUSH type 0")
    expect_in(" NOT-EXECUTABLE flush-feth-not-executable icrc=ok", o, "decode of FLUSH type 0")
    aw = [ln for ln in body if "RC RDMA ATOMIC WRITE (0x1d)" in ln and "[" not in ln.split()[2]]
    expect(aw, "an IPv4 ATOMIC WRITE in the generated frames")
    n = int(aw[0].split()[0])
    # the low byte of its RETH length (frame bytes 66..69, 4 more with a VLAN tag) from 8 to 9
    off = 69 + (4 if " vlan=" in aw[0] else 0)
    c = t.corrupt(gen_pcap, "--packet", str(n), "--set", "%d:9" % off, "--fix-icrc")
    rc, o, e = t("check", c)
    expect(rc == 1 and ("not executable atomic-write-not-8-aligned-bytes: 1 (first at frame %d)" % n) in o,
           "check of an ATOMIC WRITE of RETH length 9: rc %d\n%s" % (rc, o))
    base = [sys.executable, checker, "--tshark", tshark]
    rc, o, e = run(*base, gen_pcap, gen_expect)
    expect(rc == 0 and "; 0 problems" in o, "interop check of good frames: rc %d\n%s" % (rc, o[-2000:]))
    # payload bit: zlib and scapy ICRCs disagree with the frame
    c = t.corrupt(gen_pcap, "--packet", "1", "--flip", "-5:0")
    rc, o, e = run(*base, c, gen_expect)
    expect(rc == 1, "interop on flipped payload rc %d" % rc)
    expect_in("frame 1 (opcode 0): zlib ICRC", o, "zlib notices flip")
    expect_in("frame 1 (opcode 0): scapy ICRC", o, "scapy notices flip")
    # PSN rewritten with a valid ICRC: tshark and scapy see a PSN that was not built
    c = t.corrupt(gen_pcap, "--packet", "2", "--flip", "53:0", "--fix-icrc")
    rc, o, e = run(*base, c, gen_expect)
    expect(rc == 1, "interop on rewritten PSN rc %d" % rc)
    expect_in("frame 2 (opcode 0): tshark infiniband.bth.psn", o, "tshark notices PSN")
    expect_in("frame 2 (opcode 0): scapy infiniband.bth.psn", o, "scapy notices PSN")
    # TTL changed, checksum stale: tshark's IPv4 checksum validation reports it
    c = t.corrupt(gen_pcap, "--packet", "3", "--flip", "22:0")
    rc, o, e = run(*base, c, gen_expect)
    expect(rc == 1 and "frame 3 (opcode 0): tshark expert error" in o, "tshark notices IPv4 checksum:\n" + o)


if __name__ == "__main__":
    sys.exit(main())
