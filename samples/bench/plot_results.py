#!/usr/bin/env python3
"""Plots of samples/bench/RESULTS.md, drawn as SVG from the results files.

    python3 samples/bench/plot_results.py [--results DIR] [--out DIR] [--check RESULTS.md]

Reads samples/bench/results/ (the .txt outputs of the benchmark programs and
the .csv tables taken from them) and writes one SVG per plot into
samples/bench/plots/. With --check, it fails unless every plots/NAME.svg that
the given page embeds was written. Python 3 standard library only.
"""
import argparse
import csv
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"]
W, H = 760, 400                      # the picture
L, R, T, B = 70, 260, 40, 50         # margins: the legend goes on the right


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def ticks(lo, hi, log, base=2):
    """Tick values from lo to hi or just past: powers of 2 (log, base 2), 1-2-5 per decade
    (log, base 10) or 1-2-5 steps (linear)."""
    if log and base == 2:
        e0, e1 = math.floor(math.log2(lo) + 1e-9), math.ceil(math.log2(hi) - 1e-9)
        return [2 ** e for e in range(e0, e1 + 1)]
    if log:
        vals = [m * 10 ** e for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
                for m in (1, 2, 5)]
        first = max(v for v in vals if v <= lo * (1 + 1e-9))
        last = min(v for v in vals if v >= hi * (1 - 1e-9))
        return [v for v in vals if first <= v <= last]
    raw = (hi - lo) / 6
    step = min((m * 10 ** math.floor(math.log10(raw)) for m in (1, 2, 5, 10)
                if m * 10 ** math.floor(math.log10(raw)) >= raw))
    if all(float(v).is_integer() for v in (lo, hi)) and hi - lo <= 12:
        step = max(step, 1)                              # a count: whole ticks
    first = math.floor(lo / step) * step
    return [first + i * step for i in range(int(round((hi - first) / step)) + 1)]


def label(v):
    if v >= 1024 and v % 1024 == 0 and v & (v - 1) == 0:
        return "%gK" % (v / 1024)
    return "%g" % v


def line_chart(path, title, xlabel, ylabel, series, xlog=False, ylog=False, ymin=None, note=None):
    """series: [(name, [(x, y), ...], dashed)]. Writes an SVG line chart to path."""
    xs = [x for _, pts, _ in series for x, _ in pts]
    ys = [y for _, pts, _ in series for _, y in pts]
    xt = ticks(min(xs), max(xs), xlog)
    yt = ticks(min(ys) if ymin is None else ymin, max(ys), ylog, base=10)
    x0, x1, y0, y1 = xt[0], xt[-1], yt[0], yt[-1]
    f = (lambda v: math.log(v)) if xlog else (lambda v: v)
    g = (lambda v: math.log(v)) if ylog else (lambda v: v)
    pw, ph = W - L - R, H - T - B
    sx = lambda v: L + (f(v) - f(x0)) / (f(x1) - f(x0)) * pw
    sy = lambda v: T + ph - (g(v) - g(y0)) / (g(y1) - g(y0)) * ph
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="sans-serif" font-size="12">' % (W, H, W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="14" font-weight="bold">%s</text>' % (L, esc(title))]
    for v in xt:
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (sx(v), T, sx(v), T + ph))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (sx(v), T + ph + 16, label(v)))
    for v in yt:
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, sy(v), L + pw, sy(v)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (L - 6, sy(v) + 4, label(v)))
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>' % (L, T, pw, ph))
    out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (L + pw / 2, H - 12, esc(xlabel)))
    out.append('<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">%s</text>'
               % (T + ph / 2, esc(ylabel)))
    for i, (name, pts, dashed) in enumerate(series):
        c = COLOURS[i % len(COLOURS)]
        d = ' stroke-dasharray="6 4"' if dashed else ""
        poly = " ".join("%.1f,%.1f" % (sx(x), sy(y)) for x, y in pts)
        out.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>' % (poly, c, d))
        out += ['<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (sx(x), sy(y), c) for x, y in pts]
        ly = T + 10 + 18 * i
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>'
                   % (L + pw + 10, ly, L + pw + 34, ly, c, d))
        out.append('<text x="%d" y="%d">%s</text>' % (L + pw + 40, ly + 4, esc(name)))
    if note:
        out.append('<text x="%d" y="%d" font-size="10" fill="#555">%s</text>' % (L + pw + 10, T + ph, esc(note)))
    out.append("</svg>")
    with open(path, "w") as fh:
        fh.write("\n".join(out) + "\n")


def read_csv(results, name):
    with open(os.path.join(results, name)) as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def read_txt(results, name):
    with open(os.path.join(results, name)) as fh:
        return fh.read()


def plot_copy(results, out):
    rows = read_csv(results, "h200-copy.csv")
    series = []
    for d, arrow in (("h2d", "host -> device"), ("d2h", "device -> host")):
        r = [row for row in rows if row["direction"] == d]
        pts = lambda col: [(int(x["size_mib"]), float(x[col])) for x in r]
        series += [("hplvk, " + arrow, pts("library_owned"), False),
                   ("raw DMA, " + arrow, pts("raw_dma"), True)]
    r = [row for row in rows if row["direction"] == "d2h"]
    series.append(("hplvk, d2h into malloc()+4", [(int(x["size_mib"]), float(x["user_unaligned"])) for x in r], False))
    line_chart(os.path.join(out, "copy.svg"), "Host <-> device copies, one H200 (ffa7542)",
               "MiB", "GB/s", series, xlog=True, ymin=0)


def plot_exchange(results, out):
    rows = read_csv(results, "h200-exchange.csv")
    series = [(name, [(int(r["size_mib"]), float(r[col])) for r in rows], dashed)
              for name, col, dashed in (("hplvk", "hplvk", False), ("hand-written", "raw", True))]
    line_chart(os.path.join(out, "exchange.svg"), "Exchange, 2 logical devices of one H200 (0542467)",
               "MiB", "GB/s", series, xlog=True, ymin=0)


def plot_strided(results, out):
    text = read_txt(results, "h200-strided.txt")
    rows = [l.split() for l in text.splitlines() if re.match(r"\s+\d+\s+\d+\s+(d2h|h2d)\s", l)]
    series = []
    for d in ("d2h", "h2d"):
        for name, col, dashed in (("copy kernel", 3, False), ("one region a row", 5, True), ("row panel", 7, False)):
            if d == "h2d" and col == 7:
                continue
            series.append(("%s, %s" % (name, d), [(int(r[0]), float(r[col])) for r in rows if r[2] == d], dashed))
    line_chart(os.path.join(out, "strided.svg"), "Column panel of 16384 x 16384 floats, one H200 (6eb1ec7)",
               "panel width kb (floats)", "ms (log)", series, xlog=True, ylog=True)


def plot_logical_devices(results, out):
    text = read_txt(results, "h200-queues.txt")
    series = []
    for mode, name in (("vkdevices", "a VkDevice each"), ("queues", "queues of one VkDevice")):
        block = re.search(r"== conc_probe gpu0:4 %s\n(.*?)(?:\n==|\Z)" % mode, text, re.S).group(1)
        best = {}
        for n, ms in re.findall(r"spin on (\d+) device\(s\) at once: ([\d.]+) ms", block):
            best[int(n)] = min(best.get(int(n), 1e9), float(ms))
        series.append((name, sorted(best.items()), False))
    line_chart(os.path.join(out, "logical-devices.svg"), "7.2 ms of work on each of N logical devices, one H200 (5aee7b0+)",
               "logical devices N", "ms, all N (best of 3)", series, ymin=0)


def plot_scaling(results, out):
    """The scaling tables run_results.sh ends a several-GPU profile with: speedup over one device."""
    text = read_txt(results, "h200x8-logical.txt")
    series = []
    for prog, runs in re.findall(r"scaling: ([^\n]+)\n((?:  g\d+c? .*\n)+)", text):
        pts = [(int(g), float(ms)) for g, ms in re.findall(r"  g(\d+)\s+([\d.]+) ms", runs)]
        if pts and pts[0][0] == 1:                      # GPUs alone, from one GPU on
            series.append((prog.strip(), [(n, pts[0][1] / ms) for n, ms in pts], False))
    series.append(("N (ideal)", [(1, 1), (8, 8)], True))
    line_chart(os.path.join(out, "scaling-logical.svg"), "Samples on N logical devices of one H200 (d29a627, 844bcc3)",
               "logical devices N", "time on 1 / time on N", series, xlog=True, ylog=True,
               note="one GPU, time-shared: not GPUs")


def plot_unbalanced(results, out, name, csvname, title, ylog=False):
    rows = read_csv(results, csvname)
    order = []
    for r in rows:
        if r["balancer"] not in order:
            order.append(r["balancer"])
    series = [(b, [(int(r["x"]), float(r["ratio"])) for r in rows if r["balancer"] == b], b == "EXHAUSTIVE")
              for b in order]
    line_chart(os.path.join(out, name), title, "x: % of rows non-zero", "time / EXHAUSTIVE's", series,
               ymin=0.5 if not ylog else None, ylog=ylog)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--out", default=os.path.join(HERE, "plots"))
    ap.add_argument("--check", metavar="PAGE", help="fail unless every plots/*.svg the page embeds was written")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    plot_copy(a.results, a.out)
    plot_exchange(a.results, a.out)
    plot_strided(a.results, a.out)
    plot_logical_devices(a.results, a.out)
    plot_scaling(a.results, a.out)
    plot_unbalanced(a.results, a.out, "unbalanced-h200-cpu.svg", "h200-cpu-unbalanced.csv",
                    "Balancers on unbalanced, H200 + Lavapipe (26db9fd)")
    plot_unbalanced(a.results, a.out, "unbalanced-lavapipe.svg", "lavapipe-unbalanced.csv",
                    "Balancers on unbalanced, 2 logical Lavapipes (6031987)")
    written = sorted(f for f in os.listdir(a.out) if f.endswith(".svg"))
    print("plot_results: wrote %s to %s" % (", ".join(written), a.out))
    if a.check:
        with open(a.check) as fh:
            wanted = sorted(set(re.findall(r"\]\(plots/([\w.-]+\.svg)\)", fh.read())))
        missing = [w for w in wanted if w not in written]
        if missing or not wanted:
            sys.exit("plot_results: %s embeds %s, not written: %s" % (a.check, wanted, missing or "(none embedded)"))
        print("plot_results: all %d plots %s embeds were written" % (len(wanted), os.path.basename(a.check)))


if __name__ == "__main__":
    main()
