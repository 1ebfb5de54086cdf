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


def splits_wanted(step, attention):
    """1 when the unsplit kernel runs the step (attention_splits: two blocks per multiprocessor or more)."""
    new = max(step["new_tokens"] if step["prefill_sequences"] else 0, 1 if step["decode_sequences"] else 0)
    per_tile = max(1, attention["query_rows"] // GQA_RATIO)
    blocks = math.ceil(new / per_tile) * KV_HEADS * (step["prefill_sequences"] + step["decode_sequences"])
    return 1 if blocks >= 2 * attention["multiprocessors"] else 2


def rows(calibration, hbm_bytes_per_s):
    attention = calibration["serving"]["attention"]
    kernel = attention["unsplit"]
    # A decode block uses one row group (GQA_RATIO query rows): one key tile costs key_tile_s + one row group's.
    tile_s = kernel["key_tile_s"] + kernel["row_group_tile_s"]
    usable = hbm_bytes_per_s * calibration["hardware"]["gpu"]["memory_bandwidth_efficiency"]
    for step in calibration["measurements"]["steps"]:
        if step["decode_sequences"] == 0 or splits_wanted(step, attention) != 1:
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
