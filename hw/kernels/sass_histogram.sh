#!/usr/bin/env bash
# Static instruction mix of the kernels in a binary whose names match a regex: per kernel, its SASS
# instruction count and the most frequent opcodes. Shows what a loop spends its issue slots on (WARPSYNC
# around shuffles, software conversions) without a profiler run. With SASS_OUT set, the matching kernels'
# SASS goes there too.
#   hw/kernels/sass_histogram.sh build-gpu/hw/kernels/kvtier_hw_kernels_bench 'turboquant_quantize'
set -euo pipefail
binary=$1
pattern=${2:-quantize}
cuobjdump -sass "$binary" | python3 -c '
import collections, os, re, sys
pattern, out = re.compile(sys.argv[1]), os.environ.get("SASS_OUT")
kept = []
for function in re.split(r"\n\s*Function : ", sys.stdin.read())[1:]:
    name = function.split("\n", 1)[0].strip()
    if not pattern.search(name):
        continue
    opcodes = collections.Counter(
        m.group(2).split(".")[0]
        for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)", function))
    print(f"{name[:120]}: {sum(opcodes.values())} instructions")
    print("  " + " ".join(f"{op}:{n}" for op, n in opcodes.most_common(30)))
    kept.append(function)
if out:
    open(out, "w").write("\n".join(kept))
' "$pattern"
