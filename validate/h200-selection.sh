# Sourced by validate/run-h200.sh and validate/compare-h200.sh: which parts of the validation set to run.
# From the arguments after the folder, sets `scenarios` (the named scenario files, or every
# validate/scenarios/h200-*.yaml when none is named), `breakeven` (1 when `breakeven` is named or no part
# is, so that case (e) runs by default and named scenarios run alone) and `no_throttle` (1 when
# `no-throttle` is named: run-h200.sh then also calibrates without the power throttle, for comparison).
scenarios=()
breakeven=0
no_throttle=0
named=0
for arg in "$@"; do
  case "$arg" in
    breakeven) breakeven=1 named=1 ;;
    no-throttle) no_throttle=1 ;;
    *) scenarios+=("$arg") named=1 ;;
  esac
done
if [ "$named" = 0 ]; then
  scenarios=(validate/scenarios/h200-*.yaml)
  breakeven=1
fi
