#!/usr/bin/env bash
# The reference trainer on one CUDA GPU: measured vs planned samples/s (issues 21 item 8, 22).
#
#   bench/gpu_check.sh               # on a GPU machine: a few minutes
#   bench/gpu_check.sh --cpu-smoke   # the same script path on CPU, tiny steps (what CI can run)
#
# Needs only python3 with torch (+ numpy). reclaunch's core deps (pydantic, PyYAML, click, rich)
# are needed for the PREDICTED column; without them it prints measured figures and says why.
# torchrec is optional: its engine is checked where it imports. Results: stdout, and
# $OUT/gpu_check.json + $OUT/gpu_check.txt when OUT is set. Never downloads anything.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# The H200 image has PyYAML, click and rich but not pydantic: wheels carried to the machine
# (pip download pydantic --only-binary :all: --python-version 3.12 -d wheels/) install offline.
if [ -n "${RECLAUNCH_WHEELS:-}" ] && ! "$PY" -c "import pydantic" 2>/dev/null; then
  "$PY" -m pip install --quiet --no-index --find-links "$RECLAUNCH_WHEELS" pydantic || \
    echo "warn: pydantic from $RECLAUNCH_WHEELS did not install: no predicted column" >&2
fi
exec "$PY" bench/gpu_check.py "$@"
