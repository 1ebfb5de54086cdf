# Sourced by validate/run-h200.sh and validate/compare-h200.sh: which parts of the validation set to run.
# From the arguments after the folder, sets `scenarios` (the named scenario files, or every
# validate/scenarios/h200-*.yaml when none is named) and `breakeven` (1 when `breakeven` is named or nothing
# is, so that case (e) runs by default and named scenarios run alone).
scenarios=()
breakeven=$([ $# -eq 0 ] && echo 1 || echo 0)
for arg in "$@"; do
  if [ "$arg" = breakeven ]; then breakeven=1; else scenarios+=("$arg"); fi
done
[ $# -gt 0 ] || scenarios=(validate/scenarios/h200-*.yaml)
