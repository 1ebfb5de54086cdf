#!/usr/bin/env python3
"""validate/transfer_batches.py against batches laid out by hand on a known line."""
import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transfer_batches  # noqa: E402


class TransferBatchesTest(unittest.TestCase):
    def run_on(self, rows):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "transfers.csv")
            with open(path, "w") as f:
                f.write("path,bytes,start_s,end_s,request\n")
                f.writelines(rows)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                transfer_batches.main(path)
            return out.getvalue()

    def test_a_batchs_rows_share_a_span_and_the_line_is_recovered(self):
        # Batches of 1, 4 and 16 blocks of 32 MB at 100 us + bytes / 50 GB/s: 0.74, 2.66 and 10.34 ms.
        rows, start = [], 1.0
        for blocks in (1, 4, 16):
            end = start + 100e-6 + blocks * 32e6 / 50e9
            rows += [f"hbm->dram,32000000,{start!r},{end!r},7\n"] * blocks
            start = end + 1
        rows.append("dram->hbm,64000000,9.0,9.5,7\n")
        out = self.run_on(rows)
        line = next(l for l in out.splitlines() if l.startswith("hbm->dram"))
        self.assertEqual(line.split()[1:7], ["3", "128.0", "4", "100.0", "us", "50.00"])
        self.assertIn("0.00 %", line)
        self.assertIn("dram->hbm          1      64.0      1   (one size: no fit)", out)


if __name__ == "__main__":
    unittest.main()
