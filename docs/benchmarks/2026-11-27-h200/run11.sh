#!/usr/bin/env bash
# Session 9's third device call: the final tree's GPU tests.
set -u; export PYTHONUNBUFFERED=1; cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
python3 gpukit/_host/build_native.py > /dev/null 2>&1
spread=$(python3 -c "import xdist" 2> /dev/null && echo "-n 8" || true)
timeout 140 python3 -m pytest -p no:cacheprovider -q -m "gpu or multi_gpu" $spread --timeout=120 > $OUT/tests3.log 2>&1; echo "tests rc=$?"
tail -2 $OUT/tests3.log; grep -E "FAILED|ERROR" $OUT/tests3.log | head -20
