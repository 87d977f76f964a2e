#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""RDMA over a real link against TCP on the same link (issue 22).

Two network namespaces joined by one veth pair (MTU 3000 by default, the
largest af_xdp takes comfortably), the kernel's addresses on it, a uroced
in each namespace on its end of the pair, and, one test at a time and
interleaved so that a ratio is taken within one run:

  qperf   tcp_bw, tcp_lat (the kernels, on the same veth) beside rc_bw,
          rc_rdma_write_bw, rc_rdma_read_bw, rc_lat (all -cm1: rdma_cm)
  perftest ib_write_bw, ib_read_bw at 64 KB and 1 MB (-D seconds), and
          with many QPs at once: 8 and 32 QPs x 128 WRITEs / 16 READs of 64 KB
          outstanding (--multi-only: just these and one tcp_bw)

for each port kind:

  xdp     --port net_af_xdp0,iface=e0 --shared (docs/running.md's
          recommended commodity-NIC mode: the kernel keeps the interface)
  xdpdpdk the same through DPDK's af_xdp PMD (--xdp-driver dpdk) instead
          of uroced's own AF_XDP socket (wave 8: the comparison)
  packet  --port net_af_packet0,iface=e0 with the kernel's own address
          and MAC (uroce answers for it; the kernel's UDP 4791 input is
          dropped by an iptables rule so that it sends no ICMP for RoCE)

Each RDMA row gives its ratio to TCP of the same kind in the same run
(the median of the TCP runs around it), the frames lost between the two
daemons (sent by one, not received by the other), the drops the daemons
and the kernels counted by reason, retransmissions and timeouts, and the
daemons' CPU time per GB moved (user + system of both uroced, from
/proc). A 32 MiB READ against a 32 MiB WRITE (perftest -n 20) gives the
READ/WRITE time ratio. Nothing here is a verdict: the machine is shared,
timings drift, the ratios are the figures (docs/performance.md, "RDMA
over a link").

usage: bench/link.py [--build DIR] [--kinds xdp,packet] [--mtu 3000]
                     [--time S] [--json FILE] [--quick] [--busy-poll]
                     [--multi-only]
Needs root (namespaces, af_xdp), qperf and perftest; exit 77 without.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KIP = {"a": "10.79.0.1", "b": "10.79.0.2"}
MAC = {"a": "02:00:00:79:00:01", "b": "02:00:00:79:00:02"}
TCK = os.sysconf("SC_CLK_TCK")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def sh(*cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if check and r.returncode:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stderr.strip()))
    return r


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Link:
    """Two namespaces, veth e0 between them, a uroced in each."""

    def __init__(self, build, kind, mtu, extra):
        self.build, self.kind, self.mtu, self.extra = build, kind, mtu, extra
        self.ns = {s: "ulink-%d-%s" % (os.getpid(), s) for s in "ab"}
        self.tmp = tempfile.mkdtemp(prefix="uroce-link-")
        self.run = {s: os.path.join(self.tmp, "run-" + s) for s in "ab"}
        self.d, self.logs = {}, {}

    def nsx(self, s, cmd):
        return ["ip", "netns", "exec", self.ns[s]] + cmd

    def up(self):
        for s in "ab":
            sh("ip", "netns", "add", self.ns[s])
            sh("ip", "-n", self.ns[s], "link", "set", "lo", "up")
        sh("ip", "link", "add", "e0", "netns", self.ns["a"], "address", MAC["a"], "type", "veth",
           "peer", "name", "e0", "netns", self.ns["b"], "address", MAC["b"])
        for s in "ab":
            sh("ip", "-n", self.ns[s], "link", "set", "e0", "mtu", str(self.mtu), "up")
            sh("ip", "-n", self.ns[s], "addr", "add", KIP[s] + "/24", "dev", "e0")
            if self.kind == "packet":
                # uroce answers for the kernel's address: the kernel must
                # not answer its RoCE with ICMP port unreachable
                sh(*self.nsx(s, ["iptables", "-A", "INPUT", "-p", "udp", "--dport", "4791",
                                 "-j", "DROP"]))
        for s in "ab":
            os.makedirs(self.run[s], mode=0o700)
            cmd = [os.path.join(self.build, "emu", "uroced")]
            if self.kind in ("xdp", "xdpdpdk"):
                cmd += ["--port", "net_af_xdp0,iface=e0", "--shared"]
                if self.kind == "xdpdpdk":
                    cmd += ["--xdp-driver", "dpdk"]
            else:
                cmd += ["--port", "net_af_packet0,iface=e0", "--ip", KIP[s], "--mac", MAC[s],
                        "--mtu", str(self.mtu)]
            cmd += self.extra
            self.logs[s] = open(os.path.join(self.tmp, "uroced-%s.log" % s), "w+")
            self.d[s] = subprocess.Popen(self.nsx(s, cmd), stdout=self.logs[s],
                                         stderr=subprocess.STDOUT,
                                         env=dict(os.environ, UROCE_RUN_DIR=self.run[s]),
                                         start_new_session=True)
        for s in "ab":
            sock = os.path.join(self.run[s], "uroce0.sock")
            end = time.monotonic() + 20
            while not os.path.exists(sock) and self.d[s].poll() is None and \
                    time.monotonic() < end:
                time.sleep(0.05)
            if not os.path.exists(sock):
                raise RuntimeError("uroced %s did not start:\n%s" % (s, self.log(s)))
        # the pids of the daemons themselves (ip netns exec execs them)
        self.pid = {s: self.d[s].pid for s in "ab"}

    def log(self, s):
        self.logs[s].flush()
        with open(self.logs[s].name) as f:
            return f.read()

    def down(self):
        for s, d in self.d.items():
            if d.poll() is None:
                d.send_signal(signal.SIGTERM)
                try:
                    d.wait(10)
                except subprocess.TimeoutExpired:
                    d.kill()
                    d.wait()
        for s in "ab":
            r = sh("ip", "netns", "pids", self.ns[s], check=False)
            for p in r.stdout.split():
                try:
                    os.kill(int(p), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            sh("ip", "netns", "del", self.ns[s], check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def env(self, s):
        return dict(os.environ, UROCE_RUN_DIR=self.run[s],
                    LD_PRELOAD=os.path.join(self.build, "verbs", "liburoce.so"))

    def cpu(self):
        t = 0
        for s in "ab":
            try:
                with open("/proc/%d/stat" % self.pid[s]) as f:
                    v = f.read().rsplit(")", 1)[1].split()
                t += int(v[11]) + int(v[12])
            except OSError:
                pass
        return t / TCK

    def counters(self, s):
        """The daemon's counters, flattened: port keys as they are,
        dropped-by-reason maps as "group.reason", QPs summed as "qp.NAME"."""
        r = subprocess.run([os.path.join(self.build, "tools", "ctl", "uroce-ctl"), "--json",
                            "counters"], env=dict(os.environ, UROCE_RUN_DIR=self.run[s]),
                           capture_output=True, text=True, timeout=30)
        out = {}
        try:
            j = json.loads(r.stdout)
        except ValueError:
            return out
        for k, v in (j.get("port") or {}).items():
            if isinstance(v, dict):
                for k2, v2 in v.items():
                    if isinstance(v2, (int, float)):
                        out[k + "." + k2] = v2
            elif isinstance(v, (int, float)):
                out[k] = v
        for q in j.get("qps") or []:
            for k, v in (q.get("counters") or {}).items():
                if isinstance(v, (int, float)):
                    out["qp." + k] = out.get("qp." + k, 0) + v
        return out

    def kernel(self, s):
        """The veth end's own counters (ip -s), as the kernel keeps them."""
        r = sh(*self.nsx(s, ["ip", "-s", "-j", "link", "show", "e0"]), check=False)
        try:
            st = json.loads(r.stdout)[0]["stats64"]
            return {"k.rx_dropped": st["rx"]["dropped"], "k.tx_dropped": st["tx"]["dropped"],
                    "k.rx_packets": st["rx"]["packets"]}
        except (ValueError, KeyError, IndexError):
            return {}

    def snap(self):
        return {s: dict(self.counters(s), **self.kernel(s)) for s in "ab"}


def delta(a, b):
    return {k: b[k] - a.get(k, 0) for k in b if isinstance(b[k], (int, float))}


def summarize(d0, d1):
    """What one test did to the daemons' and kernels' counters."""
    d = {s: delta(d0[s], d1[s]) for s in "ab"}
    lost = max(0, d["a"].get("tx_pkts", 0) - d["b"].get("rx_pkts", 0)) + \
        max(0, d["b"].get("tx_pkts", 0) - d["a"].get("rx_pkts", 0))
    drops = {}
    for s in "ab":
        for k, v in d[s].items():
            low = k.lower()
            if v and (("drop" in low and not k.startswith("fault")) or "missed" in low or
                      "nobuf" in low or "ring_full" in low or "ring-full" in low or
                      "fill" in low or "k.rx_dropped" == k):
                drops[s + ":" + k] = v
    # the port's totals over every QP it ever had ("qp_totals", kept when a
    # QP goes: qperf's and perftest's QPs are gone when the test ends);
    # the live QPs' own counters only for a daemon without them
    def sum_qp(n):
        return sum(d[s]["qp_totals." + n] if "qp_totals." + n in d[s] else
                   d[s].get("qp." + n, 0) for s in "ab")
    return {"tx_frames": d["a"].get("tx_pkts", 0) + d["b"].get("tx_pkts", 0),
            "lost": lost, "drops": drops,
            "retransmits": sum_qp("retransmits"), "timeouts": sum_qp("timeouts"),
            "seq_naks": sum_qp("seq-naks-sent"), "rnr_naks": sum_qp("rnr-naks-rcvd"),
            "probes": sum_qp("probes"),
            "acks_held": sum_qp("acks-held"), "acks_held_late": sum_qp("acks-held-late"),
            "counters": {s: {k: v for k, v in d[s].items() if v} for s in "ab"}}


class Qperf:
    def __init__(self, link):
        self.link = link
        self.port = free_port()
        self.srv = subprocess.Popen(link.nsx("a", ["qperf", "-lp", str(self.port)]),
                                    env=link.env("a"), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(0.5)

    def run(self, test, secs, msg=None):
        cmd = ["qperf", KIP["a"], "-lp", str(self.port), "-t", str(secs), "-vu", "-ws", "10"]
        if test.startswith("rc_"):
            cmd += ["-cm1"]
        if msg:
            cmd += ["-m", msg]
        cmd += [test]
        # qperf's client may send its REQ before the server listens
        # (REJ, "Event rejected"), as ucmatose's does (tests/cm/cm.py):
        # that run is asked again, at most twice
        for _ in range(3):
            try:
                r = subprocess.run(self.link.nsx("b", cmd), env=self.link.env("b"),
                                   capture_output=True, text=True, timeout=secs * 4 + 60)
            except subprocess.TimeoutExpired:
                return None, "timeout"
            if "Event rejected" not in r.stdout + r.stderr:
                break
            time.sleep(0.5)
        m = re.search(r"(bw|latency)\s*=\s*([\d.]+)\s*(\S+)", r.stdout)
        if not m:
            return None, (r.stdout + r.stderr).strip()[-300:]
        v, unit = float(m.group(2)), m.group(3)
        scale = {"GB/sec": 1e9, "MB/sec": 1e6, "KB/sec": 1e3, "bytes/sec": 1,
                 "us": 1e-6, "ms": 1e-3, "sec": 1, "ns": 1e-9}.get(unit, 1)
        return v * scale, ""

    def stop(self):
        if self.srv.poll() is None:
            os.killpg(self.srv.pid, signal.SIGKILL)
            self.srv.wait()


def perftest(link, prog, size, secs=None, iters=None, extra=()):
    """One perftest pair; (bytes/s average, seconds taken by the client)."""
    port = str(free_port())
    gid = "1"
    base = [prog, "-d", "uroce0", "-x", gid, "-F", "-p", port, "-s", str(size)] + list(extra)
    base += ["-D", str(secs)] if secs else ["-n", str(iters)]
    srv = subprocess.Popen(link.nsx("a", base), env=link.env("a"), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    t0 = time.monotonic()
    try:
        time.sleep(0.5)
        r = subprocess.run(link.nsx("b", base + [KIP["a"]]), env=link.env("b"),
                           capture_output=True, text=True, timeout=(secs or 30) * 4 + 60)
        took = time.monotonic() - t0 - 0.5
    except subprocess.TimeoutExpired:
        return None, None, "timeout"
    finally:
        try:
            srv.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(srv.pid, signal.SIGKILL)
            srv.wait()
    rows = [ln.split() for ln in r.stdout.splitlines() if re.match(r"^\s*\d+\s+\d+\s+[\d.]", ln)]
    if not rows:
        return None, None, (r.stdout + r.stderr).strip()[-300:]
    if "_lat" in prog:
        # bytes, iterations, t_min, t_max, t_typical (the median half
        # round trip, us), ...: the one-way latency, as qperf's rc_lat
        return float(rows[-1][4]) * 1e-6, took, ""
    return float(rows[-1][3]) * 1048576, took, ""


def measure(link, what, fn, nbytes_of=None):
    d0, c0, t0 = link.snap(), link.cpu(), time.monotonic()
    val, err = fn()
    t1, c1, d1 = time.monotonic(), link.cpu(), link.snap()
    row = {"what": what, "value": val, "err": err, "secs": t1 - t0, "cpu_s": c1 - c0}
    row.update(summarize(d0, d1))
    if val and nbytes_of:
        gb = nbytes_of(val, t1 - t0) / 1e9
        row["cpu_s_per_gb"] = (c1 - c0) / gb if gb > 0 else None
    log("  %-26s %s %s" % (what, fmt(row), err))
    return row


def fmt(r):
    v = r.get("value")
    if v is None:
        return "failed"
    if "lat" in r["what"]:
        s = "%.1f us" % (v * 1e6)
    else:
        s = "%.0f MB/s" % (v / 1e6)
    return "%s lost %d retrans %d timeouts %d" % (s, r["lost"], r["retransmits"], r["timeouts"])


# many QPs at once (issue 22's "zero RX-ring loss" with the sum of the
# QPs' windows toward one receiver, not one QP's window): 8 and 32 QPs,
# each with 128 WRITEs (or 16 READs: perftest's -o, the responder's limit)
# of 64 KB outstanding
MULTI = [("ib_write_bw 64K q8 t128", "ib_write_bw", ["-q", "8", "-t", "128"]),
         ("ib_read_bw 64K q8 o16", "ib_read_bw", ["-q", "8", "-o", "16"]),
         ("ib_write_bw 64K q32 t128", "ib_write_bw", ["-q", "32", "-t", "128"]),
         ("ib_read_bw 64K q32 o16", "ib_read_bw", ["-q", "32", "-o", "16"])]


def run_multi(link, a):
    rows = []
    for name, prog, extra in MULTI:
        def fn(p=prog, e=extra):
            v, _, err = perftest(link, p, 65536, secs=a.time, extra=e)
            return v, err
        rows.append(measure(link, name, fn, lambda v, t: v * a.time))
    return rows


def run_kind(build, kind, a):
    link = Link(build, kind, a.mtu, ["--busy-poll"] if a.busy_poll else [])
    rows = []
    log("== %s (MTU %d)" % (kind, a.mtu))
    try:
        link.up()
        if a.multi_only:
            q = Qperf(link)
            try:
                rows.append(measure(link, "tcp_bw", lambda: q.run("tcp_bw", a.time), lambda v, t: v * a.time))
            finally:
                q.stop()
            return rows + run_multi(link, a)
        q = Qperf(link)
        T = a.time
        bw = lambda v, t: v * T  # noqa: E731  (bytes moved at that rate over the test)
        try:
            order = [("tcp_bw", None), ("rc_bw", None), ("tcp_bw", None),
                     ("rc_rdma_write_bw", None), ("tcp_bw", None), ("rc_rdma_read_bw", None),
                     ("tcp_bw", None), ("tcp_lat", None), ("rc_lat", None), ("tcp_lat", None)]
            for test, m in order:
                rows.append(measure(link, test, lambda t=test, m=m: q.run(t, T, m),
                                    None if "lat" in test else bw))
        finally:
            q.stop()
        for prog in ("ib_write_bw", "ib_read_bw"):
            for size in (65536, 1 << 20):
                name = "%s %s" % (prog, "64K" if size == 65536 else "1M")

                def fn(p=prog, s=size):
                    v, _, e = perftest(link, p, s, secs=T)
                    return v, e
                rows.append(measure(link, name, fn, bw))
        # one 32 MiB READ against one 32 MiB WRITE, several times each
        for prog in ("ib_write_bw", "ib_read_bw"):
            name = "%s 32M x%d" % (prog, a.big_iters)

            def fn(p=prog):
                v, took, e = perftest(link, p, 32 << 20, iters=a.big_iters)
                return (took if v else None), e
            r = measure(link, name, fn)
            rows.append(r)
        rows += run_multi(link, a)
    finally:
        link.down()
    return rows


def table(kind, rows):
    tcp_bw = [r["value"] for r in rows if r["what"] == "tcp_bw" and r["value"]]
    tcp_lat = [r["value"] for r in rows if r["what"] == "tcp_lat" and r["value"]]
    bw0 = statistics.median(tcp_bw) if tcp_bw else None
    lat0 = statistics.median(tcp_lat) if tcp_lat else None
    out = ["| %s | result | vs TCP | frames lost | drops counted | retrans / timeouts | "
           "daemon CPU s/GB |" % kind, "|---|---|---|---|---|---|---|"]
    big = {}
    for r in rows:
        v = r["value"]
        if r["what"].endswith("x%d" % 0) or " 32M " in r["what"]:
            big[r["what"].split()[0]] = v
        if v is None:
            res, ratio = "failed: " + (r["err"] or "")[:60].replace("|", "/"), ""
        elif "lat" in r["what"]:
            res = "%.1f µs" % (v * 1e6)
            ratio = "%.2fx" % (v / lat0) if lat0 and not r["what"].startswith("tcp") else ""
        elif " 32M " in r["what"]:
            res, ratio = "%.2f s" % v, ""
        else:
            res = "%.0f MB/s" % (v / 1e6)
            ratio = "%.2fx" % (v / bw0) if bw0 and not r["what"].startswith("tcp") else ""
        drops = ", ".join("%s %d" % (k, n) for k, n in sorted(r["drops"].items())) or "0"
        cpu = r.get("cpu_s_per_gb")
        out.append("| %s | %s | %s | %d | %s | %d / %d | %s |" % (
            r["what"], res, ratio, r["lost"], drops, r["retransmits"], r["timeouts"],
            "%.2f" % cpu if cpu else ""))
    w, rd = big.get("ib_write_bw"), big.get("ib_read_bw")
    if w and rd:
        out.append("| 32 MiB READ / WRITE time | %.2f s / %.2f s | %.2fx | | | | |" % (rd, w, rd / w))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--kinds", default="xdp,packet")
    ap.add_argument("--mtu", type=int, default=3000)
    ap.add_argument("--time", type=int, default=4)
    ap.add_argument("--big-iters", type=int, default=20)
    ap.add_argument("--busy-poll", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--multi-only", action="store_true",
                    help="only TCP once and the many-QP perftest cases")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.quick:
        a.time, a.big_iters = 2, 5
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    build = os.path.abspath(a.build)
    if os.geteuid() != 0:
        log("needs root (network namespaces, af_xdp)")
        return 77
    for p in ("qperf", "ib_write_bw", "ib_read_bw", "iptables"):
        if not shutil.which(p):
            log("%s not installed" % p)
            return 77
    R = {"date": time.strftime("%Y-%m-%d %H:%M"), "mtu": a.mtu, "time": a.time,
         "load": os.getloadavg()[0], "commit": sh("git", "-C", ROOT, "rev-parse", "--short",
                                                   "HEAD", check=False).stdout.strip(),
         "kinds": {}}
    for kind in a.kinds.split(","):
        R["kinds"][kind] = run_kind(build, kind, a)
        print(table(kind, R["kinds"][kind]) + "\n", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(R, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
