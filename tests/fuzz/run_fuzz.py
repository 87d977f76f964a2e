#!/usr/bin/python3
"""run_fuzz.py FUZZER SECONDS ARTIFACT_DIR PCAP... - bounded libFuzzer run over a seed corpus.

Every frame of the given pcaps becomes one seed file in a temporary corpus directory
(so the repository is never written to); the fuzzer then runs for SECONDS. Crash,
timeout and leak reproducers land in ARTIFACT_DIR (the build directory), so a failing
CI run leaves them behind. Exit status is the fuzzer's (libFuzzer -error_exitcode=1).
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile


def pcap_frames(path):
    """Yield the captured bytes of each record of a classic pcap file (any byte order,
    µs or ns); a plain parser so the seeds do not depend on scapy or libpcap."""
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        end = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        end = ">"
    else:
        raise SystemExit("%s: not a classic pcap file" % path)
    off = 24
    while off + 16 <= len(data):
        _, _, caplen, _ = struct.unpack(end + "IIII", data[off:off + 16])
        off += 16
        yield data[off:off + caplen]
        off += caplen


def main():
    if len(sys.argv) < 5:
        sys.exit("usage: run_fuzz.py FUZZER SECONDS ARTIFACT_DIR PCAP...")
    fuzzer, secs, artdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    os.makedirs(artdir, exist_ok=True)
    corpus = tempfile.mkdtemp(prefix="uroce-fuzz-")
    try:
        n = 0
        seen = set()
        for p in sys.argv[4:]:
            for fr in pcap_frames(p):
                if fr in seen:
                    continue
                seen.add(fr)
                with open(os.path.join(corpus, "seed-%05d" % n), "wb") as out:
                    out.write(fr)
                n += 1
        print("run_fuzz: %d distinct seed frames from %d pcaps; fuzzing %d s" %
              (n, len(sys.argv) - 4, secs), flush=True)
        env = dict(os.environ)
        # UBSan must stop the run (its default is to print and continue); meson
        # sets these too, this covers running the script by hand.
        env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        cmd = [fuzzer, "-max_total_time=%d" % secs, "-timeout=5", "-rss_limit_mb=2048",
               "-error_exitcode=1", "-timeout_exitcode=1", "-print_final_stats=1",
               "-artifact_prefix=" + os.path.join(os.path.abspath(artdir), ""),
               corpus]
        rc = subprocess.call(cmd, env=env)
        print("run_fuzz: fuzzer exit %d" % rc)
        return 1 if rc else 0
    finally:
        shutil.rmtree(corpus, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
