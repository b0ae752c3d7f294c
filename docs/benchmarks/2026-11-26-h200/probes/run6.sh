#!/usr/bin/env bash
# The final device call: the GPU lane on the merged tree, then the changes' checks.
set -u; export PYTHONUNBUFFERED=1; cd "$(dirname "$0")/.."
L=/tmp/lane; mkdir -p $L
GPU_LANE_BENCH=quick timeout 240 bash tools/gpu_lane.sh $L > $L/lane-stdout.log 2>&1; echo "lane rc=$?" | tee -a $L/lane-stdout.log
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
timeout 60 python3 -m tools.peers -b "CallRatio.*'cupy'.*'(linalg|elementwise|reduction|kernels)" --json $L/calls-cupy.json > $L/calls-cupy.txt 2>&1; echo "calls rc=$?"
timeout 50 /usr/local/cuda/bin/ncu --clock-control none --graph-profiling node --metrics gpu__time_duration.sum --csv python3 .probe/graph_step.py > $L/ncu-graph-step.csv 2> $L/ncu.err; echo "ncu rc=$?"
python3 .probe/ncu_table.py $L/ncu-graph-step.csv > $L/ncu-graph-step.txt 2>&1
tar czf $OUT/lane.tgz -C /tmp lane
grep -E "passed|failed" $L/tests.log | tail -3; sed -n '/## GPU cost/,/## Bench/p' $L/summary.md; cat $L/sanitizer-failed.txt 2>/dev/null; head -12 $L/ncu-graph-step.txt; grep -E "linalg|elementwise|reduction|kernels" $L/calls-cupy.txt | cut -c40-160
