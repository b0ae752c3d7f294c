#!/usr/bin/env bash
# Session 14's second device call: where gpukit's host time goes on real CuPy (timed
# pieces of gk.kernels.sgd_update with no selection resolved; per-row timings and
# cProfile with GPUKIT_BACKEND=cupy resolved, as the benchmark), then the GPU tests.
set -u; export PYTHONUNBUFFERED=1; cd "$(dirname "$0")/../../.."
H=docs/benchmarks/2026-11-27-h200-7
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
python3 gpukit/_host/build_native.py > /dev/null 2>&1
timeout 60 python3 $H/gpuparts.py > $OUT/parts.txt 2>&1; echo "parts rc=$?"
timeout 120 python3 $H/gpuprof.py > $OUT/prof.txt 2>&1; echo "prof rc=$?"
grep "###" $OUT/prof.txt; cat $OUT/parts.txt
spread=$(python3 -c "import xdist" 2> /dev/null && echo "-n 8" || true)
timeout 150 python3 -m pytest -p no:cacheprovider -q -m "gpu or multi_gpu" $spread --timeout=120 > $OUT/tests.log 2>&1; echo "tests rc=$?"
tail -2 $OUT/tests.log; grep -E "^(FAILED|ERROR)" $OUT/tests.log | head -20
