#!/usr/bin/env python3
"""Writes the heat probe: a Mooncake-format trace of lone prefills that shows what a run of long prefill
chunks does to the GPU's clock, and how fast it recovers.

Served by `kvtier-hw serve validate/scenarios/h200-a-light.yaml --trace FILE` (open loop, 8,192-token
chunks), each request is prefill only (one output token) and shares no block with another, so each step's
time in steps.csv is one prefill's, and the steps' gaps are the idle time before them:
- cool references: 2K, 4K, 8K and 16K-token prompts, each after seconds of idling;
- heat: a 64K-token prompt (eight back-to-back chunks, about 3.5 s) and a 32K one (four, about 1.2 s),
  each followed by 2K-token prompts, the first arriving before it ends (so it runs straight after),
  the rest 0.5 s to 4 s later.
Usage: heat_probe_trace.py OUT.jsonl
"""
import json
import sys

BLOCK = 512  # tokens per Mooncake hash id

PLAN = [  # (arrival seconds, prompt tokens)
    (1.0, 2048), (3.0, 4096), (5.0, 8192), (7.0, 16384), (10.0, 2048),
    (12.0, 65536), (15.3, 2048), (15.8, 2048), (16.3, 2048), (17.3, 2048), (19.3, 2048),
    (23.0, 32768), (24.1, 2048), (24.6, 2048), (25.1, 2048), (26.1, 2048), (28.1, 2048),
    (31.0, 2048), (33.0, 16384), (36.0, 8192), (38.0, 2048),
]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    next_id = 0
    with open(sys.argv[1], "w") as out:
        for arrival_s, tokens in PLAN:
            blocks = -(-tokens // BLOCK)
            ids = list(range(next_id, next_id + blocks))
            next_id += blocks
            record = {"timestamp": int(arrival_s * 1000), "input_length": tokens, "output_length": 1,
                      "hash_ids": ids}
            out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
