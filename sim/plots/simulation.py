"""Plots of a `kvtier simulate` run: TTFT CDF, TTFT in parts, hit rate per tier over time, link utilisation.

Usage: simulation.py OUT_DIR VARIANT [VARIANT ...]
Each VARIANT names a folder OUT_DIR/VARIANT holding requests.csv and timeseries.csv (written by kvtier).
Writes OUT_DIR/ttft_cdf.png, OUT_DIR/ttft_parts.png, OUT_DIR/hit_rate.png and OUT_DIR/link_utilisation.png.

It prints one line, "kvtier: drawing N plots in OUT_DIR/ ...", before drawing; the plot runner
(sim/app/plot_runner.cpp) passes lines starting with "kvtier: " on to stderr as they come.

Most of its time is matplotlib's import and the Agg renderer, so it draws every figure in this one process,
imports neither pyplot nor a GUI backend (Figure with the Agg canvas), reads each CSV once, lays figures out
with fixed margins (tight_layout would draw each figure twice) and draws at most CDF_POINTS points per CDF.
"""
import csv
import os
import re
import sys

PLOTS = ("ttft_cdf.png", "ttft_parts.png", "hit_rate.png", "link_utilisation.png")
CDF_POINTS = 1000
DPI = 120


def read_columns(path, wanted=None):
    """The CSV as {column: [float]}, for the columns `wanted` accepts (all by default)."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, [])
        keep = [(i, name) for i, name in enumerate(header) if wanted is None or wanted(name)]
        out = {name: [] for _, name in keep}
        for row in reader:
            for i, name in keep:
                out[name].append(float(row[i]) if row[i] else None)
    return header, out


def new_figure(width, height, rows=1, **margins):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    fig.subplots_adjust(**margins)
    return fig, axes


def cdf_points(values):
    """(x, y) of the empirical CDF of sorted `values`, thinned to at most CDF_POINTS points (the last kept)."""
    n = len(values)
    step = max(1, -(-n // CDF_POINTS))
    index = list(range(step - 1, n, step))
    if index[-1] != n - 1:
        index.append(n - 1)
    return [values[i] for i in index], [(i + 1) / n for i in index]


def ttft_cdf(out_dir, requests):
    fig, (ax,) = new_figure(7, 4.5, left=0.1, right=0.97, bottom=0.12, top=0.92)
    for name, ttft in requests.items():
        ttft = sorted(t for t in ttft if t >= 0)
        if ttft:
            ax.plot(*cdf_points(ttft), label=name)
    ax.set_xscale("log")
    ax.set_xlabel("time to first token (s)")
    ax.set_ylabel("fraction of requests")
    ax.set_title("TTFT CDF")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.savefig(os.path.join(out_dir, "ttft_cdf.png"), dpi=DPI)


def ttft_parts(out_dir, parts):
    """Per variant, two stacked bars of the TTFT's parts (requests.csv's ttft_<part>_s columns): the mean over
    every request with a first token, and the mean over the slowest 5 % (TTFT at or above its p95). A part
    keeps its colour across variants, which may have different tiers."""
    height = 1.2 + 0.9 * len(parts)
    fig, (ax,) = new_figure(9, height, left=0.22, right=0.8, bottom=0.55 / height, top=1 - 0.35 / height)
    names = []  # every part, in the order the files give them
    labels, stacks = [], []
    for name, columns in parts.items():
        names += [c for c in columns if c != "ttft_s" and c not in names]
        rows = [i for i, t in enumerate(columns["ttft_s"]) if t is not None and t >= 0]
        if not rows:
            continue
        slow_from = sorted(columns["ttft_s"][i] for i in rows)[int(0.95 * (len(rows) - 1))]
        for label, chosen in ((f"{name}: mean", rows),
                              (f"{name}: slowest 5 %", [i for i in rows if columns["ttft_s"][i] >= slow_from])):
            labels.append(label)
            stacks.append({c: sum(columns[c][i] for i in chosen) / len(chosen) for c in columns if c != "ttft_s"})
    for k, stack in enumerate(stacks):
        left = 0
        for col, value in stack.items():
            ax.barh(k, value, left=left, color=f"C{names.index(col)}")
            left += value
    for col in names:  # one legend entry per part
        ax.barh(0, 0, color=f"C{names.index(col)}", label=col[len("ttft_"):-len("_s")])
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    ax.set_title("Where the time to first token goes")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.savefig(os.path.join(out_dir, "ttft_parts.png"), dpi=DPI)


def minutes(series):
    return [t / 60 for t in series["time_s"]]


def hit_rate(out_dir, series):
    fig, axes = new_figure(8, 6.5, rows=2, left=0.09, right=0.97, bottom=0.08, top=0.95, hspace=0.08)
    for name, columns in series.items():
        t = minutes(columns)
        for col, values in columns.items():
            if col.startswith("hit_rate_"):
                axes[0].plot(t, [100 * v for v in values], label=f"{name}: {col[len('hit_rate_'):]}")
        axes[1].plot(t, [v / 2**30 for v in columns["hbm_used_bytes"]], label=f"{name}: KV in HBM")
    axes[0].set_ylabel("hit rate (% of input tokens)")
    axes[0].set_title("Prefix hits per tier over time (per sample interval)")
    axes[1].set_ylabel("GiB")
    axes[1].set_xlabel("simulated time (min)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.savefig(os.path.join(out_dir, "hit_rate.png"), dpi=DPI)


def link_lines(columns):
    """(label, values) per link that carried anything; the per-GPU links of one kind (pcie_h2d_0,
    pcie_h2d_1, ...) as their mean, since a transfer to or from HBM is split evenly over the GPUs."""
    groups = {}
    for col, values in columns.items():
        if not col.startswith("util_"):
            continue
        link = col[len("util_"):]
        kind, _, gpu = link.rpartition("_")
        key = kind if kind and gpu.isdigit() else link
        groups.setdefault(key, []).append(values)
    lines = []
    for key, members in groups.items():
        mean = [sum(v) / len(members) for v in zip(*members)]
        if max(mean, default=0) > 0:
            label = key if len(members) == 1 else f"{key} (mean of {len(members)} GPUs' links)"
            lines.append((label, mean))
    return lines


def link_utilisation(out_dir, series):
    n = len(series)
    height = 2.8 * n
    fig, axes = new_figure(8, height, rows=n, left=0.09, right=0.97, bottom=0.5 / height + 0.03,
                           top=1 - 0.35 / height, hspace=0.35)
    for ax, (name, columns) in zip(axes, series.items()):
        t = minutes(columns)
        for label, values in link_lines(columns):
            # A sample is the mean over the interval that ends at its time: a step that ends there.
            ax.step(t, [100 * v for v in values], where="pre", label=label)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("busy (% of interval)")
        ax.set_title(f"Link utilisation, mean per sample interval: {name}")
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="upper right")
        else:
            ax.text(0.5, 0.5, "no link carried anything", transform=ax.transAxes, ha="center", va="center")
    axes[-1].set_xlabel("simulated time (min)")
    fig.savefig(os.path.join(out_dir, "link_utilisation.png"), dpi=DPI)


def shown_folder(out_dir):
    """The folder as the user will find it: kvtier writes into a hidden sibling ".NAME.kvtier-tmp-PID-XXXXXX"
    (sim/app/output_folder.cpp) and renames it to NAME once everything is written."""
    parent, name = os.path.split(os.path.normpath(out_dir))
    staged = re.fullmatch(r"\.(.+)\.kvtier-[a-z]+-\d+-\w{6}", name)
    return os.path.join(parent, staged.group(1)) if staged else out_dir


def main():
    out_dir, variants = sys.argv[1], sys.argv[2:]
    print(f"kvtier: drawing {len(PLOTS)} plots in {shown_folder(out_dir)}/ ...", flush=True)
    columns = {v: read_columns(os.path.join(out_dir, v, "requests.csv"), lambda c: c.startswith("ttft_"))[1]
               for v in variants}
    requests = {v: c["ttft_s"] for v, c in columns.items()}
    series = {v: read_columns(os.path.join(out_dir, v, "timeseries.csv"))[1] for v in variants}
    import matplotlib

    matplotlib.use("Agg")
    ttft_cdf(out_dir, requests)
    ttft_parts(out_dir, columns)
    hit_rate(out_dir, series)
    link_utilisation(out_dir, series)


if __name__ == "__main__":
    main()
