#!/usr/bin/env python3
"""validate/decode_block_demand.py on a calibration written by hand."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decode_block_demand  # noqa: E402

KERNEL = {"key_tile": 128, "key_tile_s": 2e-6, "row_group_tile_s": 0.5e-6, "block_s": 5e-6, "slots": 132}


def step(prefills, new, cached, decodes, context, predicted, measured):
    return {"prefill_sequences": prefills, "new_tokens": new, "cached_tokens": cached, "decode_sequences": decodes,
            "decode_context": context, "predicted_attention_seconds": predicted, "attention_seconds": measured}


CALIBRATION = {
    "hardware": {"gpu": {"memory_bandwidth_efficiency": 0.5}},
    "serving": {"attention": {"query_rows": 128, "multiprocessors": 132, "min_split_keys": 256, "unsplit": KERNEL}},
    "measurements": {"steps": [
        step(1, 2048, 0, 15, 1279, 0.009, 0.010),  # 64 tiles x 8 heads x 16 sequences: unsplit
        step(0, 0, 0, 4, 1023, 0.001, 0.001),       # 32 blocks < 264: the split kernel, left out
        step(0, 0, 0, 200, 1279, 0.011, 0.010),     # 1,600 blocks: unsplit, 132 at once
        step(1, 4096, 0, 0, 0, 0.020, 0.020),       # no decodes, left out
    ]},
}


class DecodeBlockDemandTest(unittest.TestCase):
    def test_draw_is_the_blocks_at_once_times_their_bytes_over_their_price(self):
        rows = list(decode_block_demand.rows(CALIBRATION, 4e12))
        self.assertEqual(len(rows), 2)
        # 1,280 keys of one KV head: 1,280 x 2 x 128 x 2 = 655,360 bytes, read in 5 us + 10 tiles x 2.5 us.
        per_block = 655360 / 30e-6
        _, blocks, at_once, demand, share, error = rows[0]
        self.assertEqual((blocks, at_once), (120, 120))
        self.assertAlmostEqual(demand, 120 * per_block, delta=1)
        self.assertAlmostEqual(share, 120 * per_block / 2e12)  # usable: 4 TB/s x 0.5
        self.assertAlmostEqual(error, -0.1)
        _, blocks, at_once, demand, _, error = rows[1]
        self.assertEqual((blocks, at_once), (1600, 132))
        self.assertAlmostEqual(demand, 132 * per_block, delta=1)
        self.assertAlmostEqual(error, 0.1)

    def test_a_decode_too_short_to_split_runs_unsplit(self):
        # 8 blocks < 264, but 17 keys make no range of 256: attention_splits gives 1.
        calibration = json.loads(json.dumps(CALIBRATION))
        calibration["measurements"]["steps"] = [step(0, 0, 0, 1, 16, 0.001, 0.001)]
        rows = list(decode_block_demand.rows(calibration, 4e12))
        self.assertEqual([(blocks, at_once) for _, blocks, at_once, *_ in rows], [(8, 8)])

    def test_the_table_prints_one_line_a_step(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "calibration.json")
            with open(path, "w") as f:
                json.dump(CALIBRATION, f)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                decode_block_demand.main(["decode_block_demand.py", path, "4"])
        lines = out.getvalue().splitlines()
        self.assertEqual(len(lines), 3)
        self.assertEqual(lines[1].split(), ["1x2048@0", "+", "15@1279", "120", "120", "2.62", "TB/s", "131%",
                                            "-10.0%"])


if __name__ == "__main__":
    unittest.main()
