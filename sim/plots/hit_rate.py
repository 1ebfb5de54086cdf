"""Hit rate versus cache capacity, one line per eviction policy: `kvtier hitrate --plot`.

Usage: hit_rate.py DATA.json OUT_FILE
DATA.json (written by kvtier): {"title", "x_label", "ceiling", "series": [{"label", "x", "y"}]}, with y as
fractions and ceiling the theoretical maximum (negative for none). The file type follows OUT_FILE's extension.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(data_path, out_path):
    with open(data_path) as f:
        plot = json.load(f)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for series in plot["series"]:
        ax.plot(series["x"], [100 * y for y in series["y"]], marker="o", markersize=3, label=series["label"])
    if plot["ceiling"] >= 0:
        ax.axhline(100 * plot["ceiling"], linestyle="--", color="gray", label="infinite cache")
    ax.set_xscale("log")
    ax.set_xlabel(plot["x_label"])
    ax.set_ylabel("prefix hit rate (% of tokens)")
    ax.set_ylim(0, 100)
    ax.set_title(plot["title"])
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_path)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
