#!/usr/bin/env bash
# The reference trainer on one GPU against the plan of exactly what it runs (issue 39).
#
#   bench/gpu_check.sh --prepare      # HERE, where reclaunch is installed: the plans, made by this
#                                     # commit's planner -> bench/prepared/gpu_check_plans.json
#   bench/gpu_check.sh                # THERE, on the GPU machine (carry bench/prepared along):
#                                     # ~7 min at most; rows in $OUT/gpu_check.jsonl as produced
#   bench/gpu_check.sh --cpu-smoke    # here on CPU, tiny: prepares its own plans, then runs the very
#                                     # same check with planted failures (the suite runs this)
#
# The GPU machine needs python3 with torch and numpy only: the check never imports reclaunch or
# pydantic (the smoke proves it by running with both made unimportable). Extra arguments go to
# bench/gpu_check.py (--deadline-seconds, --stages, --plant). Never downloads anything.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
case "${1:-}" in
  --prepare)
    shift
    exec "$PY" bench/gpu_check_plans.py "${1:-bench/prepared/gpu_check_plans.json}" ;;
  --cpu-smoke)
    shift
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    "$PY" bench/gpu_check_plans.py --smoke "$work/plans.json" >/dev/null
    "$PY" -c 'import runpy, sys
sys.modules.update(dict.fromkeys(("reclaunch", "pydantic")))   # as bare as the GPU machine
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")' bench/gpu_check.py --cpu-smoke --plans "$work/plans.json" "$@" ;;
  *)
    exec "$PY" bench/gpu_check.py "$@" ;;
esac
