#!/usr/bin/env python3
"""A served step beside the same step timed by the calibration probe, from a run's steps.csv.

    validate/served_vs_probe.py HW_DIR/VARIANT/steps.csv --shapes
    validate/served_vs_probe.py HW_DIR/VARIANT/steps.csv CALIBRATION.json

--shapes lists every served step with one prefill chunk as `kvtier-hw calibrate --extra-steps` writes a
step, NEW:CACHED or NEW:CACHED:DECODES:CONTEXT (CONTEXT the mean of its decodes' contexts, rounded down),
with its forward pass and the run's error, (predicted_s - forward_s) / forward_s: pick shapes from it and
time them with --extra-steps. Given a calibration, each served step whose shape the probe timed
(measurements.steps, the same four numbers) is printed beside the probe's time: whether the serving loop
runs that step slower than the probe does, or the cost model prices it wrong.
"""
import csv
import json
import sys


def shape_of(row):
    """The step as (new, cached, decodes, context), or None unless it carries exactly one prefill chunk."""
    if int(row["prefills"]) != 1:
        return None
    contexts = [int(c) for c in row["decode_contexts"].split()]
    mean = sum(contexts) // len(contexts) if contexts else 0
    return (int(row["prefill_tokens"]), int(row["prefill_context_tokens"]), len(contexts), mean)


def spec(shape):
    new, cached, decodes, context = shape
    return f"{new}:{cached}" + (f":{decodes}:{context}" if decodes else "")


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    with open(argv[1], newline="") as f:
        rows = [(shape_of(r), r) for r in csv.DictReader(f)]
    rows = [(s, r) for s, r in rows if s]
    if argv[2] == "--shapes":
        print(f"{'step':>24s} {'forward':>10s} {'error':>7s}")
        for s, r in rows:
            forward, predicted = float(r["forward_s"]), float(r["predicted_s"])
            print(f"{spec(s):>24s} {forward * 1e3:7.1f} ms {(predicted - forward) / forward * 100:+6.1f}%")
        return
    with open(argv[2]) as f:
        probe = {(m["new_tokens"], m["cached_tokens"], m["decode_sequences"], m["decode_context"]): m["seconds"]
                 for m in json.load(f)["measurements"]["steps"] if m["prefill_sequences"] == 1}
    print(f"{'step':>24s} {'served':>10s} {'probe':>10s} {'served/probe':>12s}")
    for s, r in rows:
        if s in probe:
            served = float(r["forward_s"])
            print(f"{spec(s):>24s} {served * 1e3:7.1f} ms {probe[s] * 1e3:7.1f} ms {(served / probe[s] - 1) * 100:+11.1f}%")


if __name__ == "__main__":
    main(sys.argv)
