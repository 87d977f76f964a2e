#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Plots for docs/performance.md from bench/run.py --json files.

usage: bench/plot.py AFTER.json [BEFORE.json] OUTDIR
Needs python3-matplotlib (Debian package).
"""
import json
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def series(R, group, op, field=None):
    xs, ys = [], []
    for k, v in (R.get(group) or {}).items():
        o, s = k.rsplit("_", 1)
        if o != op or v is None:
            continue
        xs.append(int(s))
        ys.append(v[field] if field else v)
    p = sorted(zip(xs, ys))
    return [a for a, _ in p], [b for _, b in p]


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[-1]
    after = json.load(open(sys.argv[1]))
    before = json.load(open(sys.argv[2])) if len(sys.argv) > 3 else None
    os.makedirs(out, exist_ok=True)

    # latency vs size
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for op, c in (("send", "tab:blue"), ("write", "tab:orange")):
        x, y = series(after, "lat", op, "p50")
        ax.plot(x, [v / 1000 for v in y], "o-", color=c, label="uroce RC %s (p50)" % op.upper())
        if before:
            x, y = series(before, "lat", op, "p50")
            ax.plot(x, [v / 1000 for v in y], "o--", color=c, alpha=0.45,
                    label="before: RC %s" % op.upper())
    ring = after["ring_rtt_ns"]["p50"] / 1000
    ax.axhline(ring, color="gray", ls=":", label="SPSC ring round trip (baseline)")
    ax.axhline(3 * ring, color="red", ls=":", label="target: 3 x ring")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("round trip (us)")
    ax.set_title("Round-trip latency vs size (daemon busy-polling, 1 core each)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "latency.png"), dpi=110)

    # bandwidth vs size
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for op, c in (("write", "tab:orange"), ("read", "tab:green"), ("send", "tab:blue")):
        x, y = series(after, "bw", op)
        ax.plot(x, y, "o-", color=c, label="uroce RDMA %s" % op.upper())
        if before:
            x, y = series(before, "bw", op)
            ax.plot(x, y, "o--", color=c, alpha=0.45, label="before: %s" % op.upper())
    mc = after["memcpy_MBps"]
    ax.axhline(mc, color="gray", ls=":", label="memcpy one core, cold (baseline)")
    ax.axhline(mc / 2, color="red", ls=":", label="target: 0.5 x memcpy")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("MB/s, one QP, 16 in flight")
    ax.set_title("Bandwidth vs size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bandwidth.png"), dpi=110)

    # targets: fraction of target reached (log scale), before and after
    def fr(R):
        def t(f):
            try:
                return f()
            except (KeyError, TypeError, ZeroDivisionError):
                return 0  # not measured (the run failed)
        ring = R["ring_rtt_ns"]["p50"]
        return [
            ("SEND 8 B RTT", t(lambda: 3 * ring / R["lat"]["send_8"]["p50"])),
            ("WRITE 8 B RTT", t(lambda: 3 * ring / R["lat"]["write_8"]["p50"])),
            ("WRITE 64 KB BW", t(lambda: R["bw"]["write_65536"] / (0.5 * R["memcpy_MBps"]))),
            ("SEND 64 B rate", t(lambda: R["rate_send_64_Mmsgps"] / 3.0)),
            ("memory / QP", t(lambda: 2048 / R["qps"]["anon_per_qp_B"])),
            ("idle CPU", t(lambda: 1.0 / max(R["idle_cpu_pct"], 0.01))),
        ]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    a = fr(after)
    names = [n for n, _ in a]
    xs = range(len(a))
    if before:
        b = dict(fr(before))
        ax.bar([x - 0.2 for x in xs], [b[n] or 1e-3 for n in names], 0.4, color="tab:gray",
               label="before (missing: run failed)")
        ax.bar([x + 0.2 for x in xs], [v for _, v in a], 0.4, color="tab:blue", label="after")
    else:
        ax.bar(list(xs), [v for _, v in a], 0.6, color="tab:blue", label="uroce")
    ax.axhline(1.0, color="red", ls=":", label="target")
    ax.set_yscale("log")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, rotation=20, fontsize=8)
    ax.set_ylabel("fraction of target (>= 1 meets it)")
    ax.set_title("uroce vs targets (ratios from one run)")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "targets.png"), dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
