#!/usr/bin/env python3
"""The HBM bandwidth a calibration's attention model gives a launch's decode blocks, beside its error.

    validate/decode_block_demand.py CALIBRATION.json HBM_TB_PER_S

For every probe step with decodes (measurements.steps) that runs the unsplit kernel: its decode blocks
(decodes x KV heads), how many of them run at once (at most the kernel's slots), and the HBM bandwidth they
draw together at their fitted price (block_s + key tiles x (key_tile_s + one row group's row_group_tile_s)
for the context and the new token). A decode's block reads its own keys and values, one
KV head's, which no other block shares; a prefill tile's keys are shared with the chunk's other tiles, so
they are left out. Beside it: that bandwidth over the card's usable HBM bandwidth (HBM_TB_PER_S, the card's,
times the calibration's gpu.memory_bandwidth_efficiency), and the attention model's error on the step's
attention timed alone. The model prices each block alone, with no shared limit on bandwidth, so a step
whose decode blocks would draw more than HBM gives is priced fast. Llama-3.1-8B's shape (the probe's).
"""
import json
import math
import sys

KV_HEADS, GQA_RATIO, HEAD_DIM, KV_BYTES = 8, 4, 128, 2  # Llama-3.1-8B in bf16


def runs_unsplit(step, attention):
    """Whether attention_splits (sim/core/attention_cost.cpp) gives the step one range per sequence: two
    blocks per multiprocessor or more, or keys too few to split into ranges of min_split_keys."""
    prefills, decodes = step["prefill_sequences"], step["decode_sequences"]
    new = max(step["new_tokens"] if prefills else 0, 1 if decodes else 0)
    total = max(step["cached_tokens"] + step["new_tokens"] if prefills else 0,
                step["decode_context"] + 1 if decodes else 0)
    per_tile = max(1, attention["query_rows"] // GQA_RATIO)
    blocks = math.ceil(new / per_tile) * KV_HEADS * (prefills + decodes)
    enough = 2 * attention["multiprocessors"]
    return blocks >= enough or min(math.ceil(enough / blocks), total // attention["min_split_keys"]) <= 1


def rows(calibration, hbm_bytes_per_s):
    attention = calibration["serving"]["attention"]
    kernel = attention["unsplit"]
    # A decode block uses one row group (GQA_RATIO query rows): one key tile costs key_tile_s + one row group's.
    tile_s = kernel["key_tile_s"] + kernel["row_group_tile_s"]
    usable = hbm_bytes_per_s * calibration["hardware"]["gpu"]["memory_bandwidth_efficiency"]
    for step in calibration["measurements"]["steps"]:
        if step["decode_sequences"] == 0 or not runs_unsplit(step, attention):
            continue
        blocks = step["decode_sequences"] * KV_HEADS
        at_once = min(blocks, kernel["slots"])
        keys = step["decode_context"] + 1
        block_s = kernel["block_s"] + math.ceil(keys / kernel["key_tile"]) * tile_s
        demand = at_once * keys * 2 * HEAD_DIM * KV_BYTES / block_s  # keys and values of one KV head each
        error = (step["predicted_attention_seconds"] - step["attention_seconds"]) / step["attention_seconds"]
        yield step, blocks, at_once, demand, demand / usable, error


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    with open(argv[1]) as f:
        calibration = json.load(f)
    hbm = float(argv[2]) * 1e12
    print(f"{'step':>34s} {'blocks':>6s} {'at once':>7s} {'draw':>10s} {'of usable':>9s} {'attention error':>15s}")
    for step, blocks, at_once, demand, share, error in rows(calibration, hbm):
        chunks = f"{step['prefill_sequences']}x{step['new_tokens']}@{step['cached_tokens']}" \
            if step["prefill_sequences"] else "decode"
        shape = f"{chunks} + {step['decode_sequences']}@{step['decode_context']}"
        print(f"{shape:>34s} {blocks:6d} {at_once:7d} {demand / 1e12:6.2f} TB/s {share * 100:8.0f}% {error * 100:+14.1f}%")


if __name__ == "__main__":
    main(sys.argv)
