#!/usr/bin/env bash
# The CPU half of kvtier's validation set: simulate each validation scenario with the calibration that
# validate/run-h200.sh measured, compare with the served run, and keep the report beside it.
# Run from the repository root after building kvtier:
#   validate/compare-h200.sh DIR [SCENARIO...] [breakeven]      (DIR: the folder run-h200.sh wrote)
# For each scenario NAME it writes DIR/NAME-sim (the simulation), DIR/NAME-validation.txt (the table),
# DIR/NAME-validation.json and the plots DIR/NAME-plots/, and for every other calibration in DIR,
# DIR/calibration-KIND.json, the table with that one, DIR/NAME-validation-KIND.txt; for case (e), the break-even sweep
# DIR/e-breakeven-KV.json for each KV layout swept, DIR/e-breakeven-KV-validation.txt and .json (by default,
# or when `breakeven` is named).
# Exit status 1 when any target is missed.
set -u -o pipefail
dir=${1:?usage: validate/compare-h200.sh DIR [SCENARIO...]}
shift
. "$(dirname "$0")/h200-selection.sh"
kvtier=${KVTIER:-build/sim/cli/kvtier}
status=0
for scenario in "${scenarios[@]}"; do
  name=$(basename "$scenario" .yaml)
  name=${name#h200-}
  args=(validate "$scenario" --hw "$dir/$name" --calibration "$dir/calibration.json")
  "$kvtier" "${args[@]}" --sim-out "$dir/$name-sim" --force --plot-dir "$dir/$name-plots" \
    > "$dir/$name-validation.txt" || status=1
  "$kvtier" "${args[@]}" --format json > "$dir/$name-validation.json"
  echo "$name: $(tail -1 "$dir/$name-validation.txt")"
  for other in "$dir"/calibration-*.json; do
    [ -f "$other" ] || continue
    kind=$(basename "$other" .json)
    kind=${kind#calibration-}
    "$kvtier" validate "$scenario" --hw "$dir/$name" --calibration "$other" > "$dir/$name-validation-$kind.txt"
    echo "$name with calibration-$kind.json: $(tail -1 "$dir/$name-validation-$kind.txt")"
  done
done
if [ "$breakeven" = 1 ]; then
  for sweep in "$dir"/e-breakeven-*.json; do
    case "$sweep" in *-validation.json) continue ;; esac
    name=$(basename "$sweep" .json)
    args=(breakeven --compare "$sweep" --hardware h200 --calibration "$dir/calibration.json")
    "$kvtier" "${args[@]}" > "$dir/$name-validation.txt" || status=1
    "$kvtier" "${args[@]}" --format json > "$dir/$name-validation.json"
    echo "$name: $(tail -1 "$dir/$name-validation.txt")"
  done
fi
exit $status
