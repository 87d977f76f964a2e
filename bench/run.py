#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""uroce benchmark harness: baselines, uroce microbenchmarks, perftest.

Starts its own uroced (private UROCE_RUN_DIR, killed on every exit path),
pins the daemon to one core and the application to the other, runs

  baselines   ring_rtt (shared-memory SPSC round trip between two processes),
              memcpy_bw (single-core memcpy, cold 64 KB chunks)
  uroce       uroce_bench lat/bw/rate/qps/wake (one application process),
              idle daemon CPU from /proc/<pid>/stat
  perftest    ib_send_lat, ib_write_lat, ib_write_bw, ib_read_bw,
              ib_send_bw -s 64 (message rate), unmodified, through liburoce

and prints a table of figures and target ratios. --json FILE keeps the raw
figures for bench/plot.py. Nothing here decides pass/fail on timing;
--smoke only checks that numbers came out (suite 'bench').

usage: bench/run.py [--build DIR] [--quick|--smoke] [--json FILE] [--no-perftest]
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CPU_D, CPU_A = "0", "1"   # daemon core, application core


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class Daemon:
    def __init__(self, build, args, tmp):
        self.run = tempfile.mkdtemp(prefix="rd.", dir=tmp)
        env = dict(os.environ, UROCE_RUN_DIR=self.run)
        self.logf = open(os.path.join(self.run, "uroced.log"), "w")
        self.p = subprocess.Popen(["taskset", "-c", CPU_D, os.path.join(build, "emu/uroced")]
                                  + args, env=env, stdout=self.logf, stderr=subprocess.STDOUT)
        sock = os.path.join(self.run, "uroce0.sock")
        for _ in range(200):
            if os.path.exists(sock) or self.p.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(sock):
            self.stop()
            raise RuntimeError("uroced did not come up")

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.logf.close()
        shutil.rmtree(self.run, ignore_errors=True)

    def cpu_ticks(self):
        with open("/proc/%d/stat" % self.p.pid) as f:
            v = f.read().rsplit(")", 1)[1].split()
        return int(v[11]) + int(v[12])  # utime + stime


def app_env(build, d):
    return dict(os.environ, UROCE_RUN_DIR=d.run,
                LD_PRELOAD=os.path.join(build, "verbs/liburoce.so"))


def run_app(cmd, env=None, timeout=120, cpu=CPU_A):
    full = (["taskset", "-c", cpu] if cpu else []) + cmd
    try:
        r = subprocess.run(full, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        log("timeout:", " ".join(cmd))
        return ""
    if r.returncode != 0:
        log("failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stderr[-400:]))
    return r.stdout


def kv(out, key):
    """'key a 1 b 2' line -> {'a': 1.0, 'b': 2.0}"""
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == key:
            return {f[i]: float(f[i + 1]) for i in range(1, len(f) - 1, 2)}
    return None


def build_tools(build, tmp):
    """C microbenchmarks: meson-built ones if the build has them, else cc."""
    out = {}
    for name, libs in (("ring_rtt", []), ("memcpy_bw", []), ("uroce_bench", ["-libverbs"])):
        b = os.path.join(build, "bench", name)
        if os.access(b, os.X_OK):
            out[name] = b
            continue
        b = os.path.join(tmp, name)
        subprocess.run(["cc", "-O2", "-D_GNU_SOURCE", "-o", b,
                        os.path.join(HERE, name + ".c")] + libs, check=True)
        out[name] = b
    return out


def port_counts(build, d, names):
    """The daemon's port counters of these names ({} if uroce-stat failed):
    the first line of each name is the port's (the QPs' follow)."""
    out = run_app([os.path.join(build, "tools/ctl/uroce-stat"), "-r", d.run], cpu=None)
    c = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[0] in names and f[0] not in c:
            c[f[0]] = int(f[1])
    return c


def mr_counts(build, d):
    """The daemon's (mr_mapped, every other route) port counters, or None."""
    names = ("mr_mapped", "mr_syscall", "mr_pinned", "mr_unpinned")
    c = port_counts(build, d, names)
    if "mr_mapped" not in c or "mr_syscall" not in c:
        return None
    return (c["mr_mapped"], sum(c.get(n, 0) for n in names[1:]))


def perftest(build, d, cmd, timeout):
    """Server and client of one perftest; returns the client's result row."""
    port = str(20000 + os.getpid() % 20000)
    env = app_env(build, d)
    base = cmd + ["-d", "uroce0", "-x", "1", "-F", "-p", port]
    srv = subprocess.Popen(["taskset", "-c", CPU_A] + base, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.4)
        out = run_app(base + ["127.0.0.1"], env=env, timeout=timeout)
    finally:
        try:
            srv.wait(5)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
    rows = [l.split() for l in out.splitlines() if re.match(r"^\s*\d+\s+\d+\s+[\d.]", l)]
    return [float(x) for x in rows[-1]] if rows else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true", help="fewer sizes and iterations")
    ap.add_argument("--smoke", action="store_true", help="tiny run; exit 1 unless numbers came out")
    ap.add_argument("--json", help="write raw figures here")
    ap.add_argument("--no-perftest", action="store_true")
    ap.add_argument("--qps", type=int, default=16384)
    ap.add_argument("--idle-s", type=float, default=10.0)
    ap.add_argument("--qps-only", action="store_true",
                    help="only the QP figures (memory, create + connect rate)")
    a = ap.parse_args()
    # meson ends an overrunning test with SIGTERM: unwind through finally
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    build = os.path.abspath(a.build)
    if not os.access(os.path.join(build, "emu/uroced"), os.X_OK):
        log("no uroced in", build)
        return 77
    if len(os.sched_getaffinity(0)) < 2:
        global CPU_A
        CPU_A = CPU_D
    q = 1 if a.quick else 0
    if a.smoke:
        q = 2
        a.no_perftest = True
        a.qps = 64
        a.idle_s = 0.5
    it = lambda full: max(full // (10 ** q), 50)  # noqa: E731
    R = {"host": os.uname().nodename, "date": time.strftime("%Y-%m-%d %H:%M"), "ncpu": os.cpu_count()}
    tmp = tempfile.mkdtemp(prefix="uroce-bench.")
    daemons = []

    def daemon(args):
        d = Daemon(build, args, tmp)
        daemons.append(d)
        return d

    try:
        t = build_tools(build, tmp)
        if not a.qps_only:
            # baselines
            r = kv(run_app([t["ring_rtt"], str(it(200000)), CPU_A, CPU_D], cpu=None), "ring_rtt_ns")
            R["ring_rtt_ns"] = r
            out = run_app([t["memcpy_bw"], "65536", "64" if q else "256"])
            m = re.search(r"memcpy_gbps ([\d.]+)", out)
            R["memcpy_MBps"] = float(m.group(1)) * 1000 if m else None
            d = daemon(["--busy-poll"])
            env = app_env(build, d)
            ub = lambda *args, **kw: run_app([t["uroce_bench"]] + [str(x) for x in args], env=env, **kw)  # noqa: E731
            lat_sizes = [8, 64, 512, 4096, 16384, 65536] if q < 2 else [8]
            bw_sizes = [4096, 16384, 65536, 262144, 1048576] if q < 2 else [65536]
            c0 = mr_counts(build, d)
            z0 = port_counts(build, d, ("tx_bytes", "tx_zc_bytes"))
            R["lat"] = {}
            for op in ("send", "write"):
                for s in lat_sizes:
                    R["lat"]["%s_%d" % (op, s)] = kv(ub("lat", op, s, it(20000)), "lat_%s_%d_ns" % (op, s))
            R["lat"]["read_8"] = kv(ub("lat", "read", 8, it(20000)), "lat_read_8_ns")
            R["bw"] = {}
            for op in ("write", "read", "send"):
                for s in bw_sizes:
                    n = max(it(200000) * 4096 // s, 200)
                    r = kv(ub("bw", op, s, n, 16), "bw_%s_%d" % (op, s))
                    R["bw"]["%s_%d" % (op, s)] = r and r["MBps"]
            r = kv(ub("rate", 64, it(2000000)), "rate_send_64")
            R["rate_send_64_Mmsgps"] = r and r["Mmsgps"]
            # a first pass over a large buffer registered just before,
            # each 64 KB written once: what the arena figures hide
            fmb = 256 if q < 2 else 32
            R["first"] = kv(ub("first", fmb, 65536, 16, timeout=300), "first_%dMB_65536" % fmb)
            c1 = mr_counts(build, d)
            if c0 and c1 and sum(c1) > sum(c0):
                R["mr_mapped_share"] = (c1[0] - c0[0]) / (sum(c1) - sum(c0))
            z1 = port_counts(build, d, ("tx_bytes", "tx_zc_bytes"))
            if len(z0) == len(z1) == 2 and z1["tx_bytes"] > z0["tx_bytes"]:
                R["tx_zc_share"] = ((z1["tx_zc_bytes"] - z0["tx_zc_bytes"]) /
                                    (z1["tx_bytes"] - z0["tx_bytes"]))
            if q < 2:
                # the same figures with the buffers in shared memory the
                # application made (a memfd): the daemon maps it
                shm = dict(env, UROCE_BENCH_MEM="shm")
                ush = lambda *args: run_app([t["uroce_bench"]] + [str(x) for x in args], env=shm, timeout=300)  # noqa: E731
                R["shm"] = {"lat": {}, "bw": {}}
                R["shm"]["lat"]["write_8"] = kv(ush("lat", "write", 8, it(20000)), "lat_write_8_ns")
                for op in ("write", "read"):
                    for s in (65536, 1048576):
                        n = max(it(200000) * 4096 // s, 200)
                        r = kv(ush("bw", op, s, n, 16), "bw_%s_%d" % (op, s))
                        R["shm"]["bw"]["%s_%d" % (op, s)] = r and r["MBps"]
                R["shm"]["first"] = kv(ush("first", 256, 65536, 16), "first_256MB_65536")
                # the same figures without daemon-mapped MRs, same daemon, same run
                nm = dict(env, UROCE_MAP_MR="0")
                unm = lambda *args: run_app([t["uroce_bench"]] + [str(x) for x in args], env=nm)  # noqa: E731
                R["nomap"] = {"lat": {}, "bw": {}}
                for op in ("send", "write", "read"):
                    R["nomap"]["lat"]["%s_8" % op] = kv(unm("lat", op, 8, it(20000)), "lat_%s_8_ns" % op)
                for op in ("write", "read"):
                    for s in (65536, 1048576):
                        n = max(it(200000) * 4096 // s, 200)
                        r = kv(unm("bw", op, s, n, 16), "bw_%s_%d" % (op, s))
                        R["nomap"]["bw"]["%s_%d" % (op, s)] = r and r["MBps"]

            if not a.no_perftest:
                # perftest runs two processes; with the daemon spinning on one
                # core both share the other. Polling latency tests then measure
                # the scheduler's time slices (milliseconds), so ib_send_lat
                # runs with -e (each side sleeps on its completion channel:
                # the figure includes two event wake-ups per round trip);
                # ib_write_lat has no event mode and is run briefly as is.
                R["perftest"] = {
                    "ib_send_lat_8_us": perftest(build, d, ["ib_send_lat", "-e", "-s", "8", "-n", str(it(5000))], 120),
                    "ib_write_lat_8_us": perftest(build, d, ["ib_write_lat", "-s", "8", "-n", str(it(2000) // 10)], 120),
                    "ib_write_bw_65536": perftest(build, d, ["ib_write_bw", "-s", "65536", "-n", str(it(20000))], 120),
                    "ib_read_bw_65536": perftest(build, d, ["ib_read_bw", "-s", "65536", "-n", str(it(20000))], 120),
                    "ib_send_bw_64": perftest(build, d, ["ib_send_bw", "-s", "64", "-n", str(it(500000))], 120),
                }
            d.stop()
            daemons.remove(d)
            if q < 2:
                # the bandwidth and rate figures with every payload copied
                # into its frame (--no-zc), same run
                d = daemon(["--busy-poll", "--no-zc"])
                env = app_env(build, d)
                R["nozc"] = {"bw": {}}
                for op in ("write", "read"):
                    for s in (65536, 1048576):
                        n = max(it(200000) * 4096 // s, 200)
                        r = kv(ub("bw", op, s, n, 16), "bw_%s_%d" % (op, s))
                        R["nozc"]["bw"]["%s_%d" % (op, s)] = r and r["MBps"]
                r = kv(ub("rate", 64, it(2000000)), "rate_send_64")
                R["nozc"]["rate_send_64_Mmsgps"] = r and r["Mmsgps"]
                d.stop()
                daemons.remove(d)

        # memory per QP and idle behaviour: default (sleeping) daemon
        # (the per-context and per-uid QP limits default to 1/16 and 1/4
        # of the device: raised so one process can hold a.qps QPs)
        d = daemon(["--limit", "qp=%d" % a.qps, "--uid-limit", "qp=%d" % a.qps,
                    "--limit", "mem=1G"])
        env = app_env(build, d)
        R["qps"] = kv(run_app([t["uroce_bench"], "qps", str(a.qps), str(d.p.pid)], env=env,
                              timeout=600), "qps")
        if a.qps_only:
            d.stop()
            daemons.remove(d)
            print(json.dumps(R["qps"]))
            if a.json:
                with open(a.json, "w") as f:
                    json.dump(R, f, indent=1)
            return 0
        time.sleep(0.5)
        t0, c0 = time.time(), d.cpu_ticks()
        time.sleep(a.idle_s)
        R["idle_cpu_pct"] = 100.0 * (d.cpu_ticks() - c0) / os.sysconf("SC_CLK_TCK") / (time.time() - t0)
        R["wake"] = kv(run_app([t["uroce_bench"], "wake", "2000", str(it(2000) // 4)], env=env),
                       "wake_send_8_ns")
        d.stop()
        daemons.remove(d)
    finally:
        for d in daemons:
            d.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    report(R)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(R, f, indent=1)
    if a.smoke:
        ok = R.get("ring_rtt_ns") and R["lat"].get("send_8") and R["bw"].get("write_65536")
        return 0 if ok else 1
    return 0


def report(R):
    def g(d, *k):
        for x in k:
            if not isinstance(d, dict) or d.get(x) is None:
                return None
            d = d[x]
        return d

    def f(v, fmt="%.2f"):
        return fmt % v if isinstance(v, (int, float)) else "n/a"

    ring = g(R, "ring_rtt_ns", "p50")
    mc = R.get("memcpy_MBps")
    rows = []
    rows.append(("ring round trip (baseline), p50", f(ring, "%.0f ns"), ""))
    rows.append(("memcpy one core, cold 64 KB (baseline)", f(mc, "%.0f MB/s"), ""))
    for k in ("send_8", "write_8"):
        v = g(R, "lat", k, "p50")
        rows.append(("RC %s 8 B round trip, p50" % k.split("_")[0].upper(), f(v, "%.0f ns"),
                     "%s x ring (target <= 3)" % f(v / ring if v and ring else None, "%.1f")))
    v = g(R, "bw", "write_65536")
    rows.append(("RDMA WRITE 64 KB, 1 QP", f(v, "%.0f MB/s"),
                 "%s x memcpy (target >= 0.5)" % f(v / mc if v and mc else None, "%.3f")))
    v = g(R, "lat", "read_8", "p50")
    rows.append(("RC READ 8 B round trip, p50", f(v, "%.0f ns"),
                 "%s x ring" % f(v / ring if v and ring else None, "%.1f")))
    v = g(R, "bw", "read_65536")
    rows.append(("RDMA READ 64 KB, 1 QP", f(v, "%.0f MB/s"),
                 "%s x memcpy" % f(v / mc if v and mc else None, "%.3f")))
    v = g(R, "bw", "write_1048576")
    rows.append(("RDMA WRITE 1 MB, 1 QP", f(v, "%.0f MB/s"),
                 "%s x memcpy (target >= 0.6)" % f(v / mc if v and mc else None, "%.3f")))
    v = g(R, "bw", "read_1048576")
    rows.append(("RDMA READ 1 MB, 1 QP", f(v, "%.0f MB/s"),
                 "%s x memcpy" % f(v / mc if v and mc else None, "%.3f")))
    v = R.get("rate_send_64_Mmsgps")
    rows.append(("SEND 64 B message rate", f(v, "%.3f M/s"), "target >= 3 M/s"))
    v = R.get("first")
    if v:
        rows.append(("WRITE 64 KB, first pass over 256 MiB registered just before",
                     f(v.get("MBps"), "%.0f MB/s"),
                     "%s x memcpy; registration %s" % (f(v["MBps"] / mc if mc else None, "%.3f"),
                                                        f(v.get("reg_ms"), "%.0f ms"))))
    v = g(R, "qps")
    if v:
        rows.append(("%d connected RC QPs: daemon private memory" % v["n"],
                     "%.0f B/QP" % v["anon_per_qp_B"],
                     "target <= 2048 (+ %.0f B/QP shared rings)" % v["shmem_per_qp_B"]))
        if v.get("create_connect_per_s"):
            rows.append(("%d RC QPs created + connected" % v["n"],
                         "%.0f QPs/s" % v["create_connect_per_s"], "target >= 20000"))
        if v.get("create_p50_ns"):
            rows.append(("  one create, one connect (3 modifies), p50",
                         "%.1f / %.1f us" % (v["create_p50_ns"] / 1e3, v["connect_p50_ns"] / 1e3),
                         "CPU/QP app %.1f us, daemon %.1f us" % (v["app_cpu_us_per_qp"],
                                                                  v["daemon_cpu_us_per_qp"])))
    v = R.get("mr_mapped_share")
    rows.append(("payload pieces through daemon-mapped MRs", f(v * 100 if v is not None else None,
                                                               "%.1f %%"), "of all placements/gathers"))
    sh = R.get("shm") or {}
    v = g(sh, "lat", "write_8", "p50")
    if v:
        rows.append(("  RC WRITE 8 B RTT, buffers in a memfd (daemon-mapped), p50", f(v, "%.0f ns"),
                     "%s x ring" % f(v / ring if ring else None, "%.1f")))
    for k, what in (("write_65536", "WRITE 64 KB"), ("read_65536", "READ 64 KB"),
                    ("write_1048576", "WRITE 1 MB"), ("read_1048576", "READ 1 MB")):
        v = g(sh, "bw", k)
        if v:
            rows.append(("  %s, buffers in a memfd (daemon-mapped)" % what, f(v, "%.0f MB/s"),
                         "%s x memcpy" % f(v / mc if mc else None, "%.3f")))
    v = sh.get("first")
    if v:
        rows.append(("  WRITE 64 KB first pass over 256 MiB, memfd", f(v.get("MBps"), "%.0f MB/s"),
                     "%s x memcpy; registration %s" % (f(v["MBps"] / mc if mc else None, "%.3f"),
                                                        f(v.get("reg_ms"), "%.0f ms"))))
    nm = R.get("nomap") or {}
    for k, what in (("send_8", "RC SEND 8 B RTT"), ("write_8", "RC WRITE 8 B RTT"),
                    ("read_8", "RC READ 8 B RTT")):
        v = g(nm, "lat", k, "p50")
        if v:
            rows.append(("  %s, UROCE_MAP_MR=0, p50" % what, f(v, "%.0f ns"),
                         "%s x ring" % f(v / ring if ring else None, "%.1f")))
    for k, what in (("write_65536", "WRITE 64 KB"), ("read_65536", "READ 64 KB"),
                    ("write_1048576", "WRITE 1 MB"), ("read_1048576", "READ 1 MB")):
        v = g(nm, "bw", k)
        if v:
            rows.append(("  %s, UROCE_MAP_MR=0" % what, f(v, "%.0f MB/s"),
                         "%s x memcpy" % f(v / mc if mc else None, "%.3f")))
    v = R.get("tx_zc_share")
    rows.append(("bytes sent without a copy (zero-copy TX)", f(v * 100 if v is not None else None,
                                                              "%.1f %%"), "of all bytes sent"))
    nz = R.get("nozc") or {}
    for k, what in (("write_65536", "WRITE 64 KB"), ("read_65536", "READ 64 KB"),
                    ("write_1048576", "WRITE 1 MB"), ("read_1048576", "READ 1 MB")):
        v = g(nz, "bw", k)
        if v:
            rows.append(("  %s, --no-zc" % what, f(v, "%.0f MB/s"),
                         "%s x memcpy" % f(v / mc if mc else None, "%.3f")))
    if nz.get("rate_send_64_Mmsgps"):
        rows.append(("  SEND 64 B message rate, --no-zc", f(nz["rate_send_64_Mmsgps"], "%.3f M/s"),
                     ""))
    rows.append(("idle daemon CPU", f(R.get("idle_cpu_pct"), "%.2f %%"), "target < 1 %"))
    v = g(R, "wake", "p50")
    rows.append(("round trip after 2 ms idle (wake), p50", f(v, "%.0f ns"),
                 "wake cost %s (target <= 50 us)" % f(v - g(R, "lat", "send_8", "p50")
                                                     if v and g(R, "lat", "send_8", "p50") else None,
                                                     "%.0f ns")))
    for k, v in (R.get("perftest") or {}).items():
        if v is None:
            rows.append(("perftest " + k, "n/a", ""))
        elif "lat" in k:
            rows.append(("perftest " + k + " (t_typical)", "%.2f us" % v[4], "one-way = RTT/2"))
        elif "send_bw" in k:
            rows.append(("perftest " + k + " (msg rate)", "%.3f M/s" % v[4], ""))
        else:
            rows.append(("perftest " + k + " (BW avg)", "%.0f MB/s" % (v[3] * 1.048576), ""))
    w = max(len(r[0]) for r in rows)
    print("uroce benchmark, %s, %s CPUs, %s" % (R["host"], R["ncpu"], R["date"]))
    for r in rows:
        print("  %-*s  %14s  %s" % (w, r[0], r[1], r[2]))


if __name__ == "__main__":
    sys.exit(main())
