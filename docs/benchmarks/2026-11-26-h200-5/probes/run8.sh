#!/usr/bin/env bash
# Session 7's second device call: the merged tree's GPU tests, per-call rows on CuPy, the
# cost step, and the eager MLP step at 9719008 (carried in .probe/old) against this tree.
set -u; export PYTHONUNBUFFERED=1; cd "$(dirname "$0")/.."
L=/tmp/lane2; mkdir -p $L
( while sleep 20; do tar czf $OUT/lane2.tgz -C /tmp lane2 2>/dev/null; done ) &
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
python3 tools/gpu_lane.py versions > $L/env.txt 2>&1; python3 gpukit/_host/build_native.py >> $L/env.txt 2>&1
spread=$(python3 -c "import xdist" 2> /dev/null && echo "-n 8" || true)
per_test=$(python3 -c "import pytest_timeout" 2> /dev/null && echo "--timeout=120" || true)
(timeout 120 python3 -m pytest -p no:cacheprovider -q -m "gpu or multi_gpu" $spread $per_test --junitxml=$L/tests.xml > $L/tests.log 2>&1); echo "tests rc=$?"; tail -3 $L/tests.log
timeout 130 python3 -m tools.peers -b "CallRatio.*'cupy'" --json $L/calls-cupy.json > $L/calls-cupy.txt 2>&1; echo "calls rc=$?"
for i in 1 2 3; do
  (cd /tmp && PYTHONPATH= timeout 25 python3 $OLDPWD/.probe/mlp_ab.py $OLDPWD/.probe/old old) >> $L/mlp-ab.txt 2>&1
  (cd /tmp && PYTHONPATH= timeout 25 python3 $OLDPWD/.probe/mlp_ab.py $OLDPWD new) >> $L/mlp-ab.txt 2>&1
done; cat $L/mlp-ab.txt
timeout 90 python3 tools/gpu_lane.py cost $L/cost.json > $L/cost.log 2>&1; echo "cost rc=$?"
kill %1 2>/dev/null; tar czf $OUT/lane2.tgz -C /tmp lane2
grep -v "n/a" $L/calls-cupy.txt | cut -c1-150; cat $L/cost.log | cut -c1-200
