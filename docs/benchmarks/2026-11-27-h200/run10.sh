#!/usr/bin/env bash
# Session 9's second device call: the merged tree's GPU tests and per-call rows on CuPy.
set -u; export PYTHONUNBUFFERED=1; cd "$(dirname "$0")/.."
L=/tmp/lane2; mkdir -p $L; start=$(date +%s)
( while sleep 20; do tar czf $OUT/lane2.tgz -C /tmp lane2 2>/dev/null; done ) &
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
python3 tools/gpu_lane.py versions > $L/env.txt 2>&1; python3 gpukit/_host/build_native.py >> $L/env.txt 2>&1
git log --oneline -1 >> $L/env.txt 2>&1 || true
spread=$(python3 -c "import xdist" 2> /dev/null && echo "-n 8" || true)
per_test=$(python3 -c "import pytest_timeout" 2> /dev/null && echo "--timeout=120" || true)
(timeout 150 python3 -m pytest -p no:cacheprovider -q -m "gpu or multi_gpu" $spread $per_test --junitxml=$L/tests.xml > $L/tests.log 2>&1); echo "tests rc=$? after $(( $(date +%s) - start )) s"; tail -3 $L/tests.log
for i in 1 2; do
  timeout 80 python3 -m tools.peers -b "CallRatio.*'cupy'" --json $L/calls-cupy-$i.json > $L/calls-cupy-$i.txt 2>&1; echo "calls $i rc=$? after $(( $(date +%s) - start )) s"
done
kill %1 2>/dev/null; tar czf $OUT/lane2.tgz -C /tmp lane2
grep -E "FAILED|ERROR" $L/tests.log | head -20
grep -v "n/a" $L/calls-cupy-1.txt | cut -c1-150 | tail -52
