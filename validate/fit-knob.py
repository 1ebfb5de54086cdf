#!/usr/bin/env python3
"""Finds the integer value of one scenario key at which a variant's summary figure comes closest to a target,
by bisection over `kvtier simulate --set KEY=N --format json` runs (no plots, output in a temporary folder).

It is how the default scenario's free knob was set (docs/scenarios.md): the number of concurrent sessions at
which the bf16 variant's hit rate is the AMD seed's 75.2 %. Run from the repository root after building:

  validate/fit-knob.py amd-seed-minimax-mi355x --key workload.sessions --lo 16 --hi 128 \\
      --variant bf16 --metric hit_rate_total --target 0.752 [--also 32,48,64] [--kvtier build/sim/cli/kvtier]

The figure must be monotone in the key between --lo and --hi for bisection to find the closest value; the
script prints every point it ran, sorted by the key, and says whether the figure was monotone on them
(--also adds points to that check). Exit status: 0 when the target is bracketed by --lo and --hi and the
figure was monotone on the points run, 1 otherwise, 2 when a run fails.
"""
import argparse
import json
import subprocess
import sys
import tempfile


def figure(summary, path):
    value = summary
    for part in path.split("."):
        value = value[part]
    return float(value)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("scenario")
    p.add_argument("--key", required=True, help="scenario key to vary, e.g. workload.sessions")
    p.add_argument("--lo", type=int, required=True)
    p.add_argument("--hi", type=int, required=True)
    p.add_argument("--variant", required=True, help="variant whose figure is matched")
    p.add_argument("--metric", required=True, help="summary figure, dotted for nested ones: ttft_s.p95")
    p.add_argument("--target", type=float, required=True)
    p.add_argument("--also", default="", help="comma-separated extra values of the key, for the monotonicity check")
    p.add_argument("--set", action="append", default=[], help="further key=value overrides")
    p.add_argument("--kvtier", default="build/sim/cli/kvtier")
    args = p.parse_args()

    runs = {}

    def run(n):
        if n in runs:
            return runs[n][args.variant]
        with tempfile.TemporaryDirectory(prefix="kvtier-fit-") as tmp:
            command = [args.kvtier, "simulate", args.scenario, "--no-plots", "--format", "json",
                       "--out", tmp + "/out", "--set", f"{args.key}={n}"]
            for s in args.set:
                command += ["--set", s]
            done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"fit-knob: {' '.join(command)} exited {done.returncode}: {done.stderr.strip()}")
        variants = {v["name"]: v["summary"] for v in json.loads(done.stdout)["variants"]}
        if args.variant not in variants:
            sys.exit(f"fit-knob: no variant {args.variant!r} (have {', '.join(variants)})")
        runs[n] = {name: figure(s, args.metric) for name, s in variants.items()}
        print(f"{args.key}={n}: " + ", ".join(f"{name} {v:.6g}" for name, v in runs[n].items()), flush=True)
        return runs[n][args.variant]

    lo, hi = args.lo, args.hi
    f_lo, f_hi = run(lo), run(hi)
    bracketed = (f_lo - args.target) * (f_hi - args.target) <= 0
    if bracketed:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            f_mid = run(mid)
            if (f_lo - args.target) * (f_mid - args.target) <= 0:
                hi, f_hi = mid, f_mid
            else:
                lo, f_lo = mid, f_mid
    for n in (int(x) for x in args.also.split(",") if x):
        run(n)

    points = sorted(runs)
    values = [runs[n][args.variant] for n in points]
    steps = [b - a for a, b in zip(values, values[1:])]
    monotone = all(s >= 0 for s in steps) or all(s <= 0 for s in steps)
    print(f"\n{args.key:>20}  {args.variant} {args.metric}")
    for n, v in zip(points, values):
        print(f"{n:>20}  {v:.6g}")
    best = min(points, key=lambda n: abs(runs[n][args.variant] - args.target))
    print(f"\nmonotone on these {len(points)} points: {'yes' if monotone else 'no'}")
    if not bracketed:
        print(f"target {args.target:g} is not between {args.lo} and {args.hi}")
    print(f"closest: {args.key}={best}, {args.variant} {args.metric} {runs[best][args.variant]:.6g} "
          f"(target {args.target:g}, off by {runs[best][args.variant] - args.target:+.3g})")
    return 0 if bracketed and monotone else 1


if __name__ == "__main__":
    sys.exit(main())
