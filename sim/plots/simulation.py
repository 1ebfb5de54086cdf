"""Plots of a `kvtier simulate` run: TTFT CDF, hit rate per tier over time, link utilisation.

Usage: simulation.py OUT_DIR VARIANT [VARIANT ...]
Each VARIANT names a folder OUT_DIR/VARIANT holding requests.csv and timeseries.csv (written by kvtier).
Writes OUT_DIR/ttft_cdf.png, OUT_DIR/hit_rate.png and OUT_DIR/link_utilisation.png.
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def ttft_cdf(out_dir, variants):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in variants:
        rows = read_csv(os.path.join(out_dir, name, "requests.csv"))
        ttft = sorted(float(r["ttft_s"]) for r in rows if float(r["ttft_s"]) >= 0)
        if not ttft:
            continue
        ax.plot(ttft, [(i + 1) / len(ttft) for i in range(len(ttft))], label=name)
    ax.set_xscale("log")
    ax.set_xlabel("time to first token (s)")
    ax.set_ylabel("fraction of requests")
    ax.set_title("TTFT CDF")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "ttft_cdf.png"), dpi=120)


def columns(rows, prefix):
    return [c for c in rows[0].keys() if c.startswith(prefix)] if rows else []


def hit_rate(out_dir, variants):
    fig, axes = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    for name in variants:
        rows = read_csv(os.path.join(out_dir, name, "timeseries.csv"))
        t = [float(r["time_s"]) / 60 for r in rows]
        for col in columns(rows, "hit_rate_"):
            axes[0].plot(t, [100 * float(r[col]) for r in rows], label=f"{name}: {col[len('hit_rate_'):]}")
        axes[1].plot(t, [float(r["hbm_used_bytes"]) / 2**30 for r in rows], label=f"{name}: KV in HBM")
    axes[0].set_ylabel("hit rate (% of input tokens)")
    axes[0].set_title("Prefix hits per tier over time")
    axes[1].set_ylabel("GiB")
    axes[1].set_xlabel("simulated time (min)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "hit_rate.png"), dpi=120)


def link_utilisation(out_dir, variants):
    fig, axes = plt.subplots(len(variants), 1, figsize=(8, 2.8 * len(variants)), sharex=True, squeeze=False)
    for ax, name in zip(axes[:, 0], variants):
        rows = read_csv(os.path.join(out_dir, name, "timeseries.csv"))
        t = [float(r["time_s"]) / 60 for r in rows]
        for col in columns(rows, "util_"):
            values = [100 * float(r[col]) for r in rows]
            if max(values, default=0) > 0:
                ax.plot(t, values, label=col[len("util_"):])
        ax.set_ylabel("utilisation (%)")
        ax.set_title(f"Link utilisation: {name}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="upper right")
    axes[-1, 0].set_xlabel("simulated time (min)")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "link_utilisation.png"), dpi=120)


def main():
    out_dir, variants = sys.argv[1], sys.argv[2:]
    ttft_cdf(out_dir, variants)
    hit_rate(out_dir, variants)
    link_utilisation(out_dir, variants)


if __name__ == "__main__":
    main()
