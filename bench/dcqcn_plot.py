#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Figures for docs/dcqcn.md from the series of test_dcqcn's bottleneck run.

usage: DCQCN_CSV=/tmp/bn build/tests/xport/test_dcqcn bottleneck
       bench/dcqcn_plot.py /tmp/bn docs/img
Reads PREFIX-on.csv and PREFIX-off.csv (t_us, queue_kb, flow1_mbps,
flow2_mbps, rate1_mbps, rate2_mbps per 100 us) and writes dcqcn-rates.svg,
dcqcn-queue.svg and dcqcn-queue-off.svg: plain SVG, no plotting library needed (matplotlib is
not installed everywhere), with the CSVs copied next to them.

The two-namespace case (tests/net, docs/dcqcn.md "Two namespaces"):
       tests/net/twohost.py --build build --csv /tmp/nb dcqcn
       bench/dcqcn_plot.py --net /tmp/nb docs/img
reads its PREFIX-on.csv and PREFIX-off.csv (t_ms, queue_kb, flow1_mbps,
flow2_mbps per 50 ms) and writes net-dcqcn-rates.svg and
net-dcqcn-queue.svg, with the CSVs as net-dcqcn-on.csv / -off.csv.
"""
import csv
import os
import shutil
import sys

W, H, L, R, T, B = 720, 300, 64, 16, 28, 40


def load(path):
    with open(path) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def svg(path, title, xlab, ylab, ymax, series):
    """series: (label, colour, [(x, y)...]); x in ms."""
    xmax = max(x for _, _, pts in series for x, _ in pts)
    pw, ph = W - L - R, H - T - B

    def px(x):
        return L + pw * x / xmax

    def py(y):
        return T + ph * (1 - min(y, ymax) / ymax)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="18" font-size="14">%s</text>' % (L, title)]
    for i in range(6):
        y = ymax * i / 5
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>'
                   % (L, W - R, py(y), py(y)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>' % (L - 4, py(y) + 4, y))
    for i in range(9):
        x = xmax * i / 8
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>'
                   % (px(x), H - B + 16, round(x, 1)))
    out.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' % (L + pw / 2, H - 6, xlab))
    out.append('<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>'
               % (T + ph / 2, T + ph / 2, ylab))
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>'
               % (L, T, pw, ph))
    for k, (label, colour, pts) in enumerate(series):
        d = ' '.join('%.1f,%.1f' % (px(x), py(y)) for x, y in pts)
        out.append('<polyline fill="none" stroke="%s" stroke-width="1.3" points="%s"/>'
                   % (colour, d))
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (W - R - 250, T + 16 + 15 * k,
                                                               colour, label))
    out.append('</svg>')
    with open(path, 'w') as f:
        f.write('\n'.join(out) + '\n')


def main_net(prefix, outdir):
    on, off = load(prefix + '-on.csv'), load(prefix + '-off.csv')
    os.makedirs(outdir, exist_ok=True)

    def col(rows, k):
        return [(r['t_ms'], r[k]) for r in rows]

    top = max(max(r['flow1_mbps'], r['flow2_mbps']) for r in on + off)
    svg(os.path.join(outdir, 'net-dcqcn-rates.svg'),
        "Two flows through the veth's 50 Mb/s marking queue (Mb/s per 50 ms)",
        'time (ms)', 'Mb/s', (int(top / 10) + 1) * 10,
        [('flow 1, DCQCN on', '#1f77b4', col(on, 'flow1_mbps')),
         ('flow 2, DCQCN on', '#ff7f0e', col(on, 'flow2_mbps')),
         ('flow 1, DCQCN off', '#7fb2d9', col(off, 'flow1_mbps')),
         ('flow 2, DCQCN off', '#ffbf86', col(off, 'flow2_mbps'))])
    qmax = max(r['queue_kb'] for r in on + off)
    svg(os.path.join(outdir, 'net-dcqcn-queue.svg'),
        "The veth's queue (deepest per 50 ms), RED 20..200 KB", 'time (ms)', 'KB',
        (int(qmax / 50) + 1) * 50,
        [('DCQCN on', '#2ca02c', col(on, 'queue_kb')),
         ('DCQCN off', '#d62728', col(off, 'queue_kb'))])
    for s in ('on', 'off'):
        shutil.copy(prefix + '-%s.csv' % s, os.path.join(outdir, 'net-dcqcn-%s.csv' % s))
    return 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == '--net':
        return main_net(sys.argv[2], sys.argv[3])
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    prefix, outdir = sys.argv[1], sys.argv[2]
    on, off = load(prefix + '-on.csv'), load(prefix + '-off.csv')
    os.makedirs(outdir, exist_ok=True)

    def col(rows, k):
        return [(r['t_us'] / 1000, r[k]) for r in rows]

    svg(os.path.join(outdir, 'dcqcn-rates.svg'),
        'DCQCN: two flows through a 10 Gb/s bottleneck (throughput per 100 us)',
        'time (ms)', 'Mb/s', 10000,
        [('flow 1 delivered', '#1f77b4', col(on, 'flow1_mbps')),
         ('flow 2 delivered', '#ff7f0e', col(on, 'flow2_mbps')),
         ('flow 1 rate (RP)', '#7fb2d9', col(on, 'rate1_mbps')),
         ('flow 2 rate (RP)', '#ffbf86', col(on, 'rate2_mbps'))])
    svg(os.path.join(outdir, 'dcqcn-queue.svg'),
        'Bottleneck queue with DCQCN (max per 100 us), RED 20..200 KB', 'time (ms)', 'KB',
        250, [('DCQCN on', '#2ca02c', col(on, 'queue_kb'))])
    qmax = max(r['queue_kb'] for r in off)
    svg(os.path.join(outdir, 'dcqcn-queue-off.svg'),
        'Bottleneck queue, DCQCN on and reaction point off', 'time (ms)', 'KB',
        (int(qmax / 500) + 1) * 500,
        [('DCQCN on', '#2ca02c', col(on, 'queue_kb')),
         ('reaction point off (rp=off)', '#d62728', col(off, 'queue_kb'))])
    for s in ('on', 'off'):
        shutil.copy(prefix + '-%s.csv' % s, os.path.join(outdir, 'dcqcn-%s.csv' % s))
    return 0


if __name__ == '__main__':
    sys.exit(main())
