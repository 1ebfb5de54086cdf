#!/usr/bin/env python3
"""A run's transfers per path as batches, and time = fixed + bytes / rate fitted to them.

    validate/transfer_batches.py RUN_DIR/VARIANT/transfers.csv

Rows of one path that share their start and end moved in one batched call (kvtier-hw serve logs each
stored block of a batch with the batch's span). Per path: the batches, their median bytes and blocks, the
least-squares fixed time and rate over the batches, and the median |relative residual| of that line. On a
hardware run this shows what a batch costs beside its bytes, the latency a calibration has to measure.
"""
import csv
import statistics
import sys


def fit_line(points):
    """Least squares of seconds = fixed + bytes * per_byte."""
    n = len(points)
    mean_x = sum(b for b, _ in points) / n
    mean_y = sum(t for _, t in points) / n
    sxx = sum((b - mean_x) ** 2 for b, _ in points)
    if sxx == 0:
        return None
    per_byte = sum((b - mean_x) * (t - mean_y) for b, t in points) / sxx
    return mean_y - per_byte * mean_x, per_byte


def main(path):
    batches = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["path"], row["start_s"], row["end_s"])
            bytes_, blocks = batches.get(key, (0.0, 0))
            batches[key] = (bytes_ + float(row["bytes"]), blocks + 1)
    by_path = {}
    for (name, start, end), (bytes_, blocks) in batches.items():
        by_path.setdefault(name, []).append((bytes_, float(end) - float(start), blocks))
    print(f"{path}")
    print(f"{'path':12s} {'batches':>7s} {'median MB':>9s} {'blocks':>6s} {'fixed':>10s} {'rate':>11s} {'|residual|':>10s}")
    for name, rows in sorted(by_path.items()):
        line = fit_line([(b, t) for b, t, _ in rows])
        median_mb = statistics.median(b for b, _, _ in rows) / 1e6
        median_blocks = statistics.median(n for _, _, n in rows)
        if line is None or line[1] <= 0:
            print(f"{name:12s} {len(rows):7d} {median_mb:9.1f} {median_blocks:6g}   (one size: no fit)")
            continue
        fixed, per_byte = line
        residual = statistics.median(abs((fixed + b * per_byte - t) / t) for b, t, _ in rows if t > 0)
        print(f"{name:12s} {len(rows):7d} {median_mb:9.1f} {median_blocks:6g} {fixed * 1e6:7.1f} us "
              f"{1 / per_byte / 1e9:6.2f} GB/s {residual * 100:9.2f} %")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
