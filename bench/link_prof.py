#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Where the daemons' CPU goes during one RDMA test over the veth link of
bench/link.py (issue 22): load-independent figures per daemon.

For one test (qperf rc_bw/rc_rdma_write_bw/rc_lat/tcp_* or perftest
ib_write_bw/ib_read_bw) between two uroced on a veth pair, it attaches
`perf stat` to each daemon and reports, per daemon:

  CPU seconds per GB moved (or per round trip) of the test's programs
  (server and client, user + system: for TCP that is the whole stack)
  and of the daemons; cycles and task-clock per GB moved (bandwidth tests) or per round
  trip (latency tests), system calls, sched_yield calls, context switches
  (= sleeps and preemptions) per MB or per round trip.

With --record DIR it also writes `perf record -g` of each daemon to
DIR/perf-{a,b}.data and prints the top symbols (self) of each.

Cycles count only while the daemon runs, so unlike wall-clock rates they
are comparable between runs on a loaded machine; a daemon that spins
(sched_yield between idle turns) shows that as cycles too.

usage: bench/link_prof.py [--build DIR] [--kind xdp|packet] [--test rc_bw]
                          [--size BYTES] [--time S] [--record DIR] [--json FILE]
                          [--perftest '-q 32 -t 128']
"""
import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import link  # noqa: E402

EVENTS = ["cycles", "task-clock", "context-switches", "raw_syscalls:sys_enter",
          "syscalls:sys_enter_sched_yield", "syscalls:sys_enter_sendto",
          "syscalls:sys_enter_recvfrom", "syscalls:sys_enter_poll",
          "syscalls:sys_enter_epoll_pwait2", "syscalls:sys_enter_epoll_wait"]


def perf_stat(pid, out):
    return subprocess.Popen(["perf", "stat", "-x", ",", "-o", out, "-e", ",".join(EVENTS),
                             "-p", str(pid)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def parse_stat(path):
    r = {}
    with open(path) as f:
        for ln in f:
            p = ln.strip().split(",")
            if len(p) >= 3 and p[0] and p[0][0].isdigit():
                try:
                    r[p[2]] = float(p[0])
                except ValueError:
                    pass
    return r


def top(data, n=25):
    r = subprocess.run(["perf", "report", "-i", data, "--no-children", "--stdio",
                        "--sort", "symbol", "-g", "none", "--percent-limit", "0.7"],
                       capture_output=True, text=True)
    rows = [ln for ln in r.stdout.splitlines() if re.match(r"^\s+[\d.]+%", ln)]
    return rows[:n]


def pid_cpu(pid):
    """user + system seconds of a live process (0 once it is gone)"""
    try:
        with open("/proc/%d/stat" % pid) as f:
            v = f.read().rsplit(")", 1)[1].split()
        return (int(v[11]) + int(v[12])) / link.TCK
    except OSError:
        return 0.0


def ctxsw(pid):
    """(voluntary, involuntary) context switches of all threads of pid:
    voluntary ones are the sleeps (the thread blocked: epoll), involuntary
    ones preemptions and the sched_yield() calls that gave the core away
    (the thread stayed runnable)"""
    v = i = 0
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/status" % (pid, t)) as f:
                for ln in f:
                    if ln.startswith("voluntary_ctxt_switches"):
                        v += int(ln.split()[1])
                    elif ln.startswith("nonvoluntary_ctxt_switches"):
                        i += int(ln.split()[1])
    except OSError:
        pass
    return v, i


def run_test(lk, a):
    """(value, error, CPU seconds of the test's own programs: the server's
    and the client's, user + system, i.e. with the kernel's work done in
    their system calls, as for TCP the whole stack's)"""
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if a.test.startswith("ib_"):
        # the server is a child that has exited (and been waited for)
        # when perftest() returns: it is in RUSAGE_CHILDREN too; latency
        # tests run --iters round trips (their -D prints no percentiles)
        lat = "_lat" in a.test
        v, took, e = link.perftest(lk, a.test, a.size, secs=None if lat else a.time,
                                   iters=a.iters if lat else None, extra=a.perftest.split())
        srv = 0.0
    else:
        q = link.Qperf(lk)
        try:
            s0 = pid_cpu(q.srv.pid)
            v, e = q.run(a.test, a.time, str(a.size) if a.size and "lat" not in a.test else None)
            srv = pid_cpu(q.srv.pid) - s0
        finally:
            q.stop()
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    apps = srv + (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    return v, e, apps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(link.ROOT, "build"))
    ap.add_argument("--kind", default="xdp")
    ap.add_argument("--test", default="rc_bw")
    ap.add_argument("--size", type=int, default=65536)
    ap.add_argument("--time", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20000, help="perftest latency round trips")
    ap.add_argument("--mtu", type=int, default=3000)
    ap.add_argument("--record")
    ap.add_argument("--json")
    ap.add_argument("--extra", default="", help="more uroced arguments")
    ap.add_argument("--perftest", default="",
                    help="more perftest arguments (many QPs: '-q 32 -t 128')")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root", file=sys.stderr)
        return 77
    lk = link.Link(os.path.abspath(a.build), a.kind, a.mtu, a.extra.split())
    res = {"test": a.test, "kind": a.kind, "load": os.getloadavg()[0]}
    procs = []
    try:
        lk.up()
        time.sleep(0.5)
        for s in "ab":
            procs.append(perf_stat(lk.pid[s], os.path.join(lk.tmp, "stat-%s" % s)))
            if a.record:
                os.makedirs(a.record, exist_ok=True)
                procs.append(subprocess.Popen(
                    ["perf", "record", "-g", "-F", "2000", "-o",
                     os.path.join(a.record, "perf-%s.data" % s), "-p", str(lk.pid[s])],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    start_new_session=True))
        time.sleep(0.3)
        snap0 = lk.snap()
        cs0 = {s: ctxsw(lk.pid[s]) for s in "ab"}
        t0 = time.monotonic()
        val, err, apps = run_test(lk, a)
        res["apps_cpu_s"] = apps
        res["secs"] = time.monotonic() - t0
        res["value"], res["err"] = val, err
        snap1 = lk.snap()
        res["ctxsw"] = {s: [x - y for x, y in zip(ctxsw(lk.pid[s]), cs0[s])] for s in "ab"}
        res["summary"] = link.summarize(snap0, snap1)
        res["frames"] = {s: {k: snap1[s].get(k, 0) - snap0[s].get(k, 0)
                             for k in ("tx_pkts", "rx_pkts", "rx_roce")} for s in "ab"}
        for p in procs:
            p.send_signal(signal.SIGINT)
        for p in procs:
            p.wait(60)
        procs = []
        for s in "ab":
            res[s] = parse_stat(os.path.join(lk.tmp, "stat-%s" % s))
    finally:
        for p in procs:
            p.kill()
            p.wait()
        lk.down()
    if not res.get("value"):
        print("test failed: %s" % res.get("err"), file=sys.stderr)
        return 1
    if "lat" in a.test:
        unit = "round trip"
        n = a.iters if a.test.startswith("ib_") else a.time / (2 * res["value"])
        print("%s %s: %.1f us one way, ~%d round trips, load %.1f" % (
            a.kind, a.test, res["value"] * 1e6, n, res["load"]))
    else:
        unit, n = "GB", res["value"] * a.time / 1e9
        print("%s %s: %.0f MB/s, %.2f GB moved, load %.1f" % (
            a.kind, a.test, res["value"] / 1e6, n, res["load"]))
    dcpu = sum(res[s].get("task-clock", 0) for s in "ab") / 1e3
    print("  CPU per %s: programs %.3g s, daemons %.3g s, total %.3g s" % (
        unit, res["apps_cpu_s"] / n, dcpu / n, (res["apps_cpu_s"] + dcpu) / n))
    print("  frames: " + ", ".join("%s tx %d rx %d (roce %d)" % (
        s, f["tx_pkts"], f["rx_pkts"], f["rx_roce"]) for s, f in res["frames"].items()))
    sm = res["summary"]
    print("  lost %d, retransmits %d (probes %d), timeouts %d, seq NAKs %d" % (
        sm["lost"], sm["retransmits"], sm["probes"], sm["timeouts"], sm["seq_naks"]))
    print("  per %s: probes %.3g, ACKs held for the reply %.3g (left alone at the bound %.3g)" % (
        unit, sm["probes"] / n, sm["acks_held"] / n, sm["acks_held_late"] / n))
    # requesters held by their device's in-flight bound (XP_DEV_INFL_MAX)
    waits = sum(sm["counters"][s].get("qp_totals.infl-waits", 0) for s in "ab")
    stalls = sum(sm["counters"][s].get("qp_totals.tx-stalls", 0) for s in "ab")
    res["infl_waits"], res["tx_stalls"] = waits, stalls
    print("  per %s: waits for the device's in-flight room %.3g, TX stalls %.3g" % (
        unit, waits / n, stalls / n))
    for s in "ab":
        st = res[s]
        print("  daemon %s: per %s: %.3g cycles, %.3g ms cpu, %.3g syscalls "
              "(yield %.3g, sendto %.3g, recvfrom %.3g, poll %.3g, epoll %.3g), %.3g ctx-sw" % (
                  s, unit, st.get("cycles", 0) / n, st.get("task-clock", 0) / n,
                  st.get("raw_syscalls:sys_enter", 0) / n,
                  st.get("syscalls:sys_enter_sched_yield", 0) / n,
                  st.get("syscalls:sys_enter_sendto", 0) / n,
                  st.get("syscalls:sys_enter_recvfrom", 0) / n,
                  st.get("syscalls:sys_enter_poll", 0) / n,
                  (st.get("syscalls:sys_enter_epoll_pwait2", 0) +
                   st.get("syscalls:sys_enter_epoll_wait", 0)) / n,
                  st.get("context-switches", 0) / n))
        print("    sleeps (voluntary) %.3g, preempted or yielded the core %.3g" % (
            res["ctxsw"][s][0] / n, res["ctxsw"][s][1] / n))
    res["per"], res["n"] = unit, n
    if a.record:
        for s in "ab":
            print("  top symbols, daemon %s:" % s)
            for ln in top(os.path.join(a.record, "perf-%s.data" % s)):
                print("   " + ln.strip())
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
