#!/usr/bin/env bash
# Regenerates the simulator's committed results (everything in results/ except results/hw/, which comes
# from results/hw/run-h200.sh on the GPU machine). Run from the source root after building into build/:
#   results/make-results.sh
set -euo pipefail
kvtier=build/sim/cli/kvtier
run() {  # run OUTPUT_FILE COMMAND...: the output file starts with the command that made it
  local out=$1
  shift
  { echo "\$ $*"; echo; "$@"; } >"$out"
}

run results/kv-layouts.txt $kvtier kv --model all
run results/breakeven-llama70b-18k.txt $kvtier breakeven --model llama-3.1-70b --prefill-tokens-per-s 18000 \
  --kv bf16,int4,turboquant4
run results/breakeven-h200-llama8b.txt $kvtier breakeven --model llama-3.1-8b --hardware h200 \
  --kv bf16,int4,turboquant4-all
run results/breakeven-mi355x-minimax.txt $kvtier breakeven --model minimax-m2.5 --hardware mi355x \
  --kv bf16,turboquant4

# --force replaces a results folder only when kvtier wrote it (it holds .kvtier-output).
$kvtier simulate amd-seed-minimax-mi355x --force --out results/amd-seed-minimax-mi355x
$kvtier simulate nvme-seed-llama70b-h100 --force --out results/nvme-seed-llama70b-h100
$kvtier simulate h200-llama8b --force --out results/h200-llama8b
trace=traces/mooncake-conversation-first2000.jsonl
$kvtier simulate h200-llama8b --trace "$trace" --force --out results/h200-llama8b-mooncake
run results/hitrate-mooncake-llama8b.txt $kvtier hitrate --trace "$trace" --model llama-3.1-8b --kv bf16 \
  --capacity-tokens 65536,131072,262144,524288,1048576,2097152,4194304,8388608 --policy lru,lfu,arc,s3fifo \
  --plot results/hitrate-mooncake-llama8b.png
