#!/usr/bin/env bash
# Session 14's third device call, at the session's last CuPy-path commit: the GPU tests,
# every per-call row on CuPy twice, and the timed pieces of sgd_update again.
set -u; export PYTHONUNBUFFERED=1; cd "$(dirname "$0")/../../.."
H=docs/benchmarks/2026-11-27-h200-7
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
python3 gpukit/_host/build_native.py > /dev/null 2>&1
spread=$(python3 -c "import xdist" 2> /dev/null && echo "-n 8" || true)
timeout 130 python3 -m pytest -p no:cacheprovider -q -m "gpu or multi_gpu" $spread --timeout=120 > $OUT/tests3.log 2>&1; echo "tests rc=$?"
tail -1 $OUT/tests3.log; grep -E "^(FAILED|ERROR)" $OUT/tests3.log | head -20
timeout 60 python3 $H/gpuparts.py > $OUT/parts3.txt 2>&1; echo "parts rc=$?"
for i in 1 2; do
  timeout 70 python3 -m tools.peers -b "CallRatio.*'cupy'" --json $OUT/call3-cupy-$i.json > $OUT/call3-cupy-$i.txt 2>&1; echo "calls $i rc=$?"
done
cat $OUT/parts3.txt; grep -E "kernels|optim|matmul 8x8" $OUT/call3-cupy-1.txt | cut -c1-150
