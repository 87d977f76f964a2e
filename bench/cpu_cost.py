#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""CPU cost of moving payload, for builds compared on a loaded machine.

On a machine shared with other work, wall-clock figures mostly measure the
scheduler (docs/performance.md). What a transfer costs the daemon does not
depend on how long it waited for a core: this runs uroce_bench bw with a
sleeping (not busy-polling) daemon and reports the daemon's CPU time
(utime + stime from /proc/<pid>/stat) per MB moved, for each build given,
interleaved round by round (A, B, A, B ...), medians over the rounds.

usage: bench/cpu_cost.py [--rounds N] [--mb MB] BUILD [BUILD ...]

Each BUILD needs emu/uroced and verbs/liburoce.so; the benchmark binary is
the first build's bench/uroce_bench (the same program for every build).
Figures are printed, never judged."""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

CASES = [("write", 65536, None), ("read", 65536, None), ("write", 1048576, None),
         ("write", 65536, "shm"), ("read", 65536, "shm")]


def ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return int(v[11]) + int(v[12])


def one(build, bench, op, size, mem, mb, tmp):
    run = tempfile.mkdtemp(prefix="cc.", dir=tmp)
    env = dict(os.environ, UROCE_RUN_DIR=run)
    log = open(os.path.join(run, "uroced.log"), "w")
    d = subprocess.Popen([os.path.join(build, "emu/uroced")], env=env, stdout=log,
                         stderr=subprocess.STDOUT)
    try:
        sock = os.path.join(run, "uroce0.sock")
        for _ in range(400):
            if os.path.exists(sock) or d.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(sock):
            print("uroced did not come up in", build, file=sys.stderr)
            return None
        aenv = dict(env, LD_PRELOAD=os.path.join(build, "verbs/liburoce.so"))
        if mem:
            aenv["UROCE_BENCH_MEM"] = mem
        n = max(mb * (1 << 20) // size, 50)
        t0 = ticks(d.pid)
        r = subprocess.run([bench, "bw", op, str(size), str(n), "16"], env=aenv,
                           capture_output=True, text=True, timeout=900)
        t1 = ticks(d.pid)
        if r.returncode != 0:
            print("failed (%d): %s" % (r.returncode, r.stderr[-300:]), file=sys.stderr)
            return None
        mbps = float(r.stdout.split()[2])
        cpu_s = (t1 - t0) / os.sysconf("SC_CLK_TCK")
        return cpu_s * 1e6 / (n * size / 1e6), mbps
    finally:
        if d.poll() is None:
            d.send_signal(signal.SIGTERM)
            try:
                d.wait(10)
            except subprocess.TimeoutExpired:
                d.kill()
                d.wait()
        log.close()
        shutil.rmtree(run, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mb", type=int, default=256, help="MB moved per case")
    ap.add_argument("builds", nargs="+")
    a = ap.parse_args()
    builds = [os.path.abspath(b) for b in a.builds]
    bench = os.path.join(builds[0], "bench/uroce_bench")
    for b in builds:
        if not os.access(os.path.join(b, "emu/uroced"), os.X_OK):
            print("no uroced in", b, file=sys.stderr)
            return 77
    tmp = tempfile.mkdtemp(prefix="uroce-cpu.")
    res = {}
    try:
        for rnd in range(a.rounds):
            for case in CASES:
                for b in builds:
                    r = one(b, bench, case[0], case[1], case[2], a.mb, tmp)
                    res.setdefault((case, b), []).append(r)
                    print("round %d %s %s %d %s: %s" % (rnd + 1, os.path.basename(b), case[0],
                                                        case[1], case[2] or "private", r),
                          file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("daemon CPU per MB moved (median of %d rounds; wall MB/s in brackets)" % a.rounds)
    print("%-24s" % "case" + "".join("%26s" % os.path.basename(b) for b in builds))
    for case in CASES:
        row = "%-24s" % ("%s %d %s" % (case[0], case[1], case[2] or "private"))
        for b in builds:
            v = [x for x in res.get((case, b), []) if x]
            row += "%26s" % ("%.0f us/MB (%.0f)" % (statistics.median(x[0] for x in v),
                                                    statistics.median(x[1] for x in v))
                             if v else "n/a")
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
