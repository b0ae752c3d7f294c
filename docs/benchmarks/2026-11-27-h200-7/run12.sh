#!/usr/bin/env bash
# Session 14's device call: the GPU lane at HEAD, then every per-call row on CuPy twice.
set -u; export PYTHONUNBUFFERED=1; cd "$(dirname "$0")/../../.."
L=/tmp/lane; mkdir -p $L
( while sleep 20; do tar czf $OUT/lane.tgz -C /tmp lane 2>/dev/null; done ) &
start=$(date +%s)
GPU_LANE_BENCH=quick timeout 260 bash tools/gpu_lane.sh $L > $L/lane-stdout.log 2>&1; echo "lane rc=$? after $(( $(date +%s) - start )) s" | tee -a $L/lane-stdout.log
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
for i in 1 2; do
  timeout 80 python3 -m tools.peers -b "CallRatio.*'cupy'" --json $L/calls-cupy-$i.json > $L/calls-cupy-$i.txt 2>&1; echo "calls $i rc=$? after $(( $(date +%s) - start )) s"
done
kill %1 2>/dev/null; tar czf $OUT/lane.tgz -C /tmp lane
grep -E "passed|failed" $L/tests.log | tail -3; grep -E "^(FAILED|ERROR)" $L/tests.log | head -20; cat $L/sanitizer-failed.txt 2>/dev/null; sed -n '/## GPU cost/,$p' $L/summary.md | cut -c1-160 | head -60
grep -v "n/a" $L/calls-cupy-1.txt | cut -c1-150 | tail -70
