#!/usr/bin/env python3
"""The cost model's error on the steps a hardware run served, from its steps.csv (kvtier-hw serve).

    validate/step_errors.py HW_DIR/VARIANT/steps.csv [--each | --by-context]

Each step's error is (predicted_s - forward_s) / forward_s, predicted_s being the run's cost model (the
calibration given to the run with --set calibration=FILE). Steps are grouped by kind (decode only, prefill
only, mixed) and by their prefill tokens; per group: the steps, the median error with its 10th and 90th
percentiles, the error of the summed times, and the median forward pass. The first lines give the run's
totals and the serving loop's own time per step. With --each, every step that carries a prefill is listed
instead, with the idle time before it (its start after the previous step's end), its forward pass, its
prediction and error, and its prefill chunks (`start:tokens`). With --by-context, the steps of 4K prefill
tokens or more are grouped instead by the tokens cached before their chunks (the mean over the step's
chunks, in 16K bins): how the error grows with the share of the step that is prefill attention.
"""
import csv
import statistics
import sys


def group_of(row):
    decodes, prefills, tokens = int(row["decodes"]), int(row["prefills"]), int(row["prefill_tokens"])
    if prefills == 0:
        return "decode"
    kind = "prefill" if decodes == 0 else "mixed"
    size = "<1K" if tokens < 1024 else ("1K-4K" if tokens < 4096 else ">=4K")
    return f"{kind} {size} tokens"


def list_each(rows):
    print(f"{'start_s':>9s} {'idle_s':>7s} {'forward':>10s} {'predicted':>10s} {'error':>7s}  prefill chunks")
    previous_end = 0.0
    for r in rows:
        forward, predicted = float(r["forward_s"]), float(r["predicted_s"])
        if int(r["prefills"]) > 0:
            print(f"{float(r['start_s']):9.3f} {float(r['start_s']) - previous_end:7.3f} {forward * 1e3:7.1f} ms "
                  f"{predicted * 1e3:7.1f} ms {(predicted - forward) / forward * 100:+6.1f}%  {r['prefill_chunks']}")
        previous_end = float(r["end_s"])


def context_group(row):
    mean_cached = int(row["prefill_context_tokens"]) / int(row["prefills"])
    low = min(int(mean_cached // 16384), 4) * 16
    return f"cached {low}K-{low + 16}K" if low < 64 else "cached >=64K"


def main(path, view):
    rows = list(csv.DictReader(open(path, newline="")))
    if not rows:
        sys.exit(f"{path}: no steps")
    if view == "--each":
        list_each(rows)
        return
    group = group_of
    if view == "--by-context":
        rows = [r for r in rows if int(r["prefill_tokens"]) >= 4096]
        group = context_group
    forward = sum(float(r["forward_s"]) for r in rows)
    predicted = sum(float(r["predicted_s"]) for r in rows)
    loop = sum(float(r["end_s"]) - float(r["start_s"]) - float(r["forward_s"]) for r in rows)
    print(f"{path}: {len(rows)} steps, forward passes {forward:.2f} s, predicted {predicted:.2f} s "
          f"({(predicted - forward) / forward * 100:+.2f} %), serving loop {loop / len(rows) * 1e3:.3f} ms per step")
    groups = {}
    for r in rows:
        groups.setdefault(group(r), []).append((float(r["forward_s"]), float(r["predicted_s"])))
    print(f"{'steps':22s} {'n':>6s} {'median error':>13s} {'p10':>8s} {'p90':>8s} {'summed':>8s} {'median forward':>15s}")
    for name in sorted(groups):
        g = groups[name]
        errors = sorted((p - f) / f for f, p in g)
        f_sum, p_sum = sum(f for f, _ in g), sum(p for _, p in g)
        print(f"{name:22s} {len(g):6d} {statistics.median(errors) * 100:+12.2f}% "
              f"{errors[len(errors) // 10] * 100:+7.2f}% {errors[len(errors) * 9 // 10] * 100:+7.2f}% "
              f"{(p_sum - f_sum) / f_sum * 100:+7.2f}% {statistics.median(f for f, _ in g) * 1e3:12.2f} ms")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] not in ("--each", "--by-context")):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else None)
