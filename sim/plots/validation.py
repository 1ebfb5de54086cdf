"""Plots of a `kvtier validate --plot-dir` comparison: predicted against measured TTFT per request, and the
TTFT CDFs of both runs overlaid.

Usage: validation.py DIR BAND VARIANT [VARIANT ...]
Each VARIANT names a folder DIR/VARIANT holding request_errors.csv (written by kvtier: id, then
predicted_<m>_s, measured_<m>_s and error_<m> for m in ttft, tpot, e2e; empty cells where undefined).
BAND is the TTFT target as a fraction (0.05 draws the +-5 % band around y = x).
Writes DIR/ttft_scatter.png and DIR/ttft_cdf.png.
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def ttft_columns(path):
    """The predicted and measured TTFTs, each where defined, and the pairs defined on both sides."""
    predicted, measured, pairs = [], [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            p, m = row["predicted_ttft_s"], row["measured_ttft_s"]
            if p:
                predicted.append(float(p))
            if m:
                measured.append(float(m))
            if p and m and float(p) > 0 and float(m) > 0:
                pairs.append((float(m), float(p)))
    return predicted, measured, pairs


def scatter(out_dir, band, runs):
    fig, ax = plt.subplots(figsize=(6, 6))
    low, high = float("inf"), 0.0
    for name, (_, _, pairs) in runs.items():
        if not pairs:
            continue
        xs, ys = [m for m, _ in pairs], [p for _, p in pairs]
        ax.scatter(xs, ys, s=12, alpha=0.6, zorder=3, label=f"{name} ({len(pairs)} requests)")
        low, high = min(low, min(xs), min(ys)), max(high, max(xs), max(ys))
    if high > 0:
        line = [low / 1.2, high * 1.2]
        ax.plot(line, line, color="black", linewidth=1, label="predicted = measured")
        ax.fill_between(line, [x * (1 - band) for x in line], [x * (1 + band) for x in line], color="gray",
                        alpha=0.25, label=f"\u00b1{100 * band:g} %")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured TTFT (s)")
    ax.set_ylabel("predicted TTFT (s)")
    ax.set_title("TTFT per request: predicted against measured")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "ttft_scatter.png"), dpi=120)


def cdf(ax, values, **style):
    values = sorted(values)
    if values:
        ax.plot(values, [(i + 1) / len(values) for i in range(len(values))], **style)


def cdfs(out_dir, runs):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for index, (name, (predicted, measured, _)) in enumerate(runs.items()):
        color = f"C{index % 10}"
        cdf(ax, measured, color=color, label=f"{name}: measured")
        cdf(ax, predicted, color=color, linestyle="--", label=f"{name}: predicted")
    ax.set_xscale("log")
    ax.set_xlabel("time to first token (s)")
    ax.set_ylabel("fraction of requests")
    ax.set_title("TTFT CDF: predicted (dashed) and measured (solid)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "ttft_cdf.png"), dpi=120)


def main(out_dir, band, variants):
    runs = {name: ttft_columns(os.path.join(out_dir, name, "request_errors.csv")) for name in variants}
    scatter(out_dir, band, runs)
    cdfs(out_dir, runs)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), sys.argv[3:])
