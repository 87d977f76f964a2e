#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Interleaved A/B of the small round trips: two builds, the same machine,
the same minutes.

Each round runs, for build A then build B (order alternating per round so
neither always goes first): the shared-memory ring round trip, then a
--busy-poll uroced of that build (daemon on CPU 0, application on CPU 1,
as bench/run.py) with `uroce_bench lat send 8 N` and `lat write 8 N`.
Every figure is kept with the ring round trip of its own turn (measured
before and after it) and the load average at that moment; the summary
gives medians over the turns whose two ring round trips agree, apart for
the host's fast and slow mode.
Nothing here judges: timings on this machine drift 10x.

usage: bench/ab_lat.py --a BUILD_A --b BUILD_B [--rounds 5] [--iters 20000]
                       [--json FILE] [--label-a before] [--label-b after]
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (Daemon, app_env, run_app, kv, build_tools)


def ring_p50(tools, iters):
    return (run.kv(run.run_app([tools["ring_rtt"], str(iters * 10), run.CPU_A, run.CPU_D],
                               cpu=None), "ring_rtt_ns") or {}).get("p50")


def one_turn(build, tools, tmp, iters):
    r = {"load1": os.getloadavg()[0]}
    r["ring_p50_ns"] = ring_p50(tools, iters)
    d = run.Daemon(build, ["--busy-poll"], tmp)
    try:
        env = run.app_env(build, d)
        for op in ("send", "write"):
            out = run.run_app([tools["uroce_bench"], "lat", op, "8", str(iters)], env=env)
            r["%s_8_p50_ns" % op] = (run.kv(out, "lat_%s_8_ns" % op) or {}).get("p50")
    finally:
        d.stop()
    # this host switches between a fast and a slow mode of cross-core
    # transfers (docs/performance.md): a turn whose ring round trip moved
    # by more than a third meanwhile compares nothing and is left out
    r["ring_after_p50_ns"] = ring_p50(tools, iters)
    a, b = r["ring_p50_ns"], r["ring_after_p50_ns"]
    r["stable"] = bool(a and b and abs(a - b) <= max(a, b) / 3)
    for op in ("send", "write"):
        v, ring = r.get("%s_8_p50_ns" % op), r.get("ring_p50_ns")
        r["%s_8_x_ring" % op] = v / ring if v and ring else None
    return r


def summary(turns):
    """Medians over the stable turns, apart for each mode of the host (ring
    round trip under / over 500 ns): a median across modes means nothing."""
    out = {}
    for mode, sel in (("fast", lambda t: t["ring_p50_ns"] < 500), ("slow", lambda t: t["ring_p50_ns"] >= 500)):
        ts = [t for t in turns if t.get("stable") and t.get("ring_p50_ns") and sel(t)]
        m = {"turns": len(ts)}
        for k in ("ring_p50_ns", "send_8_p50_ns", "write_8_p50_ns", "send_8_x_ring",
                  "write_8_x_ring", "load1"):
            v = [t[k] for t in ts if t.get(k) is not None]
            m[k] = statistics.median(v) if v else None
        out[mode] = m
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="build directory A (before)")
    ap.add_argument("--b", required=True, help="build directory B (after)")
    ap.add_argument("--label-a", default="before")
    ap.add_argument("--label-b", default="after")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--json")
    a = ap.parse_args()
    builds = {a.label_a: os.path.abspath(a.a), a.label_b: os.path.abspath(a.b)}
    tmp = tempfile.mkdtemp(prefix="uroce-ab.")
    R = {"date": time.strftime("%Y-%m-%d %H:%M"), "host": os.uname().nodename,
         "iters": a.iters, "builds": builds, "rounds": []}
    try:
        tools = {lab: run.build_tools(b, tmp) for lab, b in builds.items()}
        order = [a.label_a, a.label_b]
        for i in range(a.rounds):
            rnd = {}
            for lab in (order if i % 2 == 0 else order[::-1]):
                rnd[lab] = one_turn(builds[lab], tools[lab], tmp, a.iters)
                run.log("round %d %s: %s" % (i + 1, lab, json.dumps(rnd[lab])))
            R["rounds"].append(rnd)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    R["median"] = {lab: summary([r[lab] for r in R["rounds"] if lab in r]) for lab in builds}
    print(json.dumps(R["median"], indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(R, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
