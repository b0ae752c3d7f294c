#!/usr/bin/env bash
# Session 7's first device call: the GPU lane at HEAD, every per-call row on CuPy, ncu of the graphed step.
set -u; export PYTHONUNBUFFERED=1; cd "$(dirname "$0")/.."
L=/tmp/lane; mkdir -p $L
( while sleep 20; do tar czf $OUT/lane.tgz -C /tmp lane 2>/dev/null; done ) &
GPU_LANE_BENCH=quick timeout 250 bash tools/gpu_lane.sh $L > $L/lane-stdout.log 2>&1; echo "lane rc=$?" | tee -a $L/lane-stdout.log
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
timeout 130 python3 -m tools.peers -b "CallRatio.*'cupy'" --json $L/calls-cupy.json > $L/calls-cupy.txt 2>&1; echo "calls rc=$?"
timeout 40 /usr/local/cuda/bin/ncu --clock-control none --graph-profiling node --metrics gpu__time_duration.sum --csv python3 .probe/graph_step.py > $L/ncu-graph-step.csv 2> $L/ncu.err; echo "ncu rc=$?"
python3 .probe/ncu_table.py $L/ncu-graph-step.csv > $L/ncu-graph-step.txt 2>&1
kill %1 2>/dev/null; tar czf $OUT/lane.tgz -C /tmp lane
grep -E "passed|failed" $L/tests.log | tail -3; sed -n '/## GPU cost/,/## Bench/p' $L/summary.md; cat $L/sanitizer-failed.txt 2>/dev/null; head -14 $L/ncu-graph-step.txt; cut -c1-150 $L/calls-cupy.txt | tail -60
