#!/usr/bin/env python3
"""validate/served_vs_probe.py on served steps and probe steps written by hand."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import served_vs_probe  # noqa: E402

HEADER = ("start_s,forward_s,end_s,predicted_s,decodes,decode_context_tokens,prefills,prefill_tokens,"
          "prefill_context_tokens,decode_contexts,prefill_chunks\n")
ROWS = [
    "0,0.0600,0.06,0.0500,0,0,1,1156,17152,,17152:1156\n",  # a lone chunk, 20 % over its price
    "0,0.0500,0.05,0.0500,3,67000,1,1383,15872,22000 22001 23000,15872:1383\n",  # decodes of mean 22333
    "0,0.0080,0.01,0.0080,4,64000,0,0,0,16000 16000 16000 16000,\n",  # decodes only: no shape
    "0,0.1000,0.10,0.1000,0,0,2,2048,4096,,0:1024 4096:1024\n",  # two chunks: no shape
]


class ServedVsProbeTest(unittest.TestCase):
    def run_on(self, *arguments, probe_steps=None):
        with tempfile.TemporaryDirectory() as folder:
            steps = os.path.join(folder, "steps.csv")
            with open(steps, "w") as f:
                f.write(HEADER)
                f.writelines(ROWS)
            calibration = os.path.join(folder, "calibration.json")
            with open(calibration, "w") as f:
                json.dump({"measurements": {"steps": probe_steps or []}}, f)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                served_vs_probe.main(["served_vs_probe.py", steps,
                                      *[calibration if a == "CAL" else a for a in arguments]])
            return out.getvalue().splitlines()

    def test_shapes_are_the_single_chunk_steps_as_extra_steps_writes_them(self):
        lines = self.run_on("--shapes")
        self.assertEqual(len(lines), 3)
        self.assertEqual(lines[1].split(), ["1156:17152", "60.0", "ms", "-16.7%"])
        self.assertEqual(lines[2].split(), ["1383:15872:3:22333", "50.0", "ms", "+0.0%"])

    def test_a_served_step_stands_beside_the_probes_step_of_its_shape(self):
        probe = [{"prefill_sequences": 1, "new_tokens": 1156, "cached_tokens": 17152, "decode_sequences": 0,
                  "decode_context": 0, "seconds": 0.05},
                 {"prefill_sequences": 1, "new_tokens": 1383, "cached_tokens": 15872, "decode_sequences": 3,
                  "decode_context": 22000, "seconds": 0.05}]  # another decode context: not the same step
        lines = self.run_on("CAL", probe_steps=probe)
        self.assertEqual(len(lines), 2)
        self.assertEqual(lines[1].split(), ["1156:17152", "60.0", "ms", "50.0", "ms", "+20.0%"])


if __name__ == "__main__":
    unittest.main()
