#!/usr/bin/env bash
# Where a build's compile time goes: builds TARGET (default kvtier) from scratch in BUILD_DIR with every
# compiler call timed, then prints each translation unit's wall seconds, heaviest first, and the total.
#   cmake/compile_times.sh [BUILD_DIR [TARGET]]     (from the source root; BUILD_DIR default build-times)
# The timing wrapper is this script itself, called by CMake as the compiler launcher with --time LOG.
set -euo pipefail
if [ "${1:-}" = "--time" ]; then
  log=$2
  shift 2
  source_file=""
  for arg in "$@"; do case "$arg" in *.cpp | *.cu) source_file=$arg ;; esac; done
  start=$(date +%s.%N)
  status=0
  "$@" || status=$?
  end=$(date +%s.%N)
  [ -n "$source_file" ] && echo "$start $end $source_file" >>"$log"
  exit "$status"
fi
dir=${1:-build-times}
target=${2:-kvtier}
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$dir"
mkdir -p "$dir"
log=$(cd "$dir" && pwd)/compile-times.log
cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_COMPILER_LAUNCHER=$root/cmake/compile_times.sh;--time;$log" >/dev/null
start=$(date +%s.%N)
cmake --build "$dir" -j"$(nproc)" --target "$target" >/dev/null
end=$(date +%s.%N)
awk -v root="$root/" '{ s = $2 - $1; sum += s; sub(root, "", $3); printf "%7.1f s  %s\n", s, $3 } END {
  printf "%7.1f s  summed over %d translation units\n", sum, NR }' "$log" | sort -rn
awk -v s="$start" -v e="$end" 'BEGIN { printf "%7.1f s  wall time of the build on %d cores\n", e - s, '"$(nproc)"' }'
