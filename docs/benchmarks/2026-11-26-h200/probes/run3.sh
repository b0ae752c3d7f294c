#!/usr/bin/env bash
set -u; export PYTHONUNBUFFERED=1; cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
timeout 150 python3 -m pytest -p no:cacheprovider -q -m "gpu or multi_gpu" -n 8 tests/test_linalg_dense.py tests/test_linalg_dense_scipy.py > $OUT/linalg-tests.log 2>&1; echo "tests rc=$?"; tail -3 $OUT/linalg-tests.log
timeout 150 python3 .probe/solve_probe.py > $OUT/solve-probe.txt 2>&1; echo "solve rc=$?"; cat $OUT/solve-probe.txt
timeout 90 python3 .probe/graph_probe.py > $OUT/graph-probe.txt 2>&1; echo "graph rc=$?"; grep "====" $OUT/graph-probe.txt
