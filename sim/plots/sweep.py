"""A sweep's metric against its swept keys: `kvtier sweep`'s sweep.png.

Usage: sweep.py SWEEP.json METRIC OUT_FILE
SWEEP.json is the sweep's sweep.json (written by kvtier): {"sweep": {"grid", "zip", ...}, "rows": [...]}, a row
per point, variant and seed. The grid's keys are one axis each, the zip's keys one axis together. One axis:
METRIC against it, one line per variant (the mean over seeds), with the band from the lowest to the highest
seed. Two axes: a heatmap of the mean per variant. No axis (seeds only): a bar per variant with the seeds'
range. More axes are not drawn (say so and leave the file out).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def axes_of(sweep):
    axes = [([a["key"]], [[v] for v in a["values"]]) for a in sweep["grid"]]
    if sweep["zip"]:
        keys = [a["key"] for a in sweep["zip"]]
        axes.append((keys, [list(vs) for vs in zip(*[a["values"] for a in sweep["zip"]])]))
    return axes


def position(row, axis):
    keys, values = axis
    return values.index([row[k] for k in keys])


def variants_of(rows):
    names = []
    for row in rows:
        if row["variant"] not in names:
            names.append(row["variant"])
    return names


def samples(rows, variant, axes, metric):
    """{axis positions: [metric per seed]} for one variant."""
    out = {}
    for row in rows:
        if row["variant"] == variant and metric in row:
            out.setdefault(tuple(position(row, a) for a in axes), []).append(row[metric])
    return out


def label(axis, i):
    return " / ".join(axis[1][i])


def line_plot(rows, axis, metric, out_path):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for variant in variants_of(rows):
        points = sorted(samples(rows, variant, [axis], metric).items())
        x = [p[0][0] for p in points]
        mean = [sum(v) / len(v) for _, v in points]
        ax.plot(x, mean, marker="o", markersize=3, label=variant)
        if any(len(v) > 1 for _, v in points):
            ax.fill_between(x, [min(v) for _, v in points], [max(v) for _, v in points], alpha=0.2)
    ax.set_xticks(range(len(axis[1])), [label(axis, i) for i in range(len(axis[1]))], rotation=30)
    ax.set_xlabel(" / ".join(axis[0]))
    ax.set_ylabel(metric + " (mean over seeds, band: lowest to highest)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_path)


def heatmaps(rows, axes, metric, out_path):
    variants = variants_of(rows)
    fig, plots = plt.subplots(1, len(variants), figsize=(5.5 * len(variants), 4.5), squeeze=False)
    for ax, variant in zip(plots[0], variants):
        grid = [[float("nan")] * len(axes[1][1]) for _ in axes[0][1]]
        for (i, j), v in samples(rows, variant, axes, metric).items():
            grid[i][j] = sum(v) / len(v)
        image = ax.imshow(grid, origin="lower", aspect="auto")
        for i, line in enumerate(grid):
            for j, value in enumerate(line):
                ax.text(j, i, f"{value:.3g}", ha="center", va="center", color="white", fontsize=8)
        ax.set_yticks(range(len(axes[0][1])), [label(axes[0], i) for i in range(len(axes[0][1]))])
        ax.set_xticks(range(len(axes[1][1])), [label(axes[1], j) for j in range(len(axes[1][1]))], rotation=30)
        ax.set_ylabel(" / ".join(axes[0][0]))
        ax.set_xlabel(" / ".join(axes[1][0]))
        ax.set_title(variant)
        fig.colorbar(image, ax=ax, label=metric + " (mean over seeds)")
    fig.tight_layout()
    fig.savefig(out_path)


def bars(rows, metric, out_path):
    variants = variants_of(rows)
    values = [samples(rows, v, [], metric).get((), []) for v in variants]
    mean = [sum(v) / len(v) for v in values]
    low = [m - min(v) for m, v in zip(mean, values)]
    high = [max(v) - m for m, v in zip(mean, values)]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.bar(variants, mean, yerr=[low, high], capsize=4)
    ax.set_ylabel(metric + " (mean over seeds, bars: lowest to highest)")
    fig.tight_layout()
    fig.savefig(out_path)


def main(data_path, metric, out_path):
    with open(data_path) as f:
        data = json.load(f)
    axes = axes_of(data["sweep"])
    if len(axes) == 0:
        bars(data["rows"], metric, out_path)
    elif len(axes) == 1:
        line_plot(data["rows"], axes[0], metric, out_path)
    elif len(axes) == 2:
        heatmaps(data["rows"], axes, metric, out_path)
    else:
        print(f"kvtier: sweep.py: {len(axes)} swept axes, no plot (it draws one or two; sweep.csv has them all)")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
