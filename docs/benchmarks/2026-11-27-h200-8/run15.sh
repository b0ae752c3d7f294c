#!/usr/bin/env bash
# Session 17's device call: the GPU lane at HEAD (its sanitizer step now launches the
# internal kernels too), then every per-call row on CuPy once and the nn rows again.
set -u; export PYTHONUNBUFFERED=1; cd "$(dirname "$0")/../../.."
L=/tmp/lane; mkdir -p $L
( while sleep 20; do tar czf $OUT/lane.tgz -C /tmp lane 2>/dev/null; done ) &
start=$(date +%s)
GPU_LANE_BENCH=quick timeout 250 bash tools/gpu_lane.sh $L > $L/lane-stdout.log 2>&1; echo "lane rc=$? after $(( $(date +%s) - start )) s" | tee -a $L/lane-stdout.log
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
timeout 170 python3 -m tools.peers -b "CallRatio.*'cupy'" --json $L/calls-cupy-1.json > $L/calls-cupy-1.txt 2>&1; echo "calls 1 rc=$? after $(( $(date +%s) - start )) s"
timeout 70 python3 -m tools.peers -b "CallRatio.*'cupy'.*nn\." --json $L/calls-cupy-nn-2.json > $L/calls-cupy-nn-2.txt 2>&1; echo "calls 2 rc=$? after $(( $(date +%s) - start )) s"
kill %1 2>/dev/null; tar czf $OUT/lane.tgz -C /tmp lane
grep -E "passed|failed" $L/tests.log | tail -3; grep -E "^(FAILED|ERROR)" $L/tests.log | head -20; cat $L/sanitizer-failed.txt 2>/dev/null; tail -qn 1 $L/sanitizer-*.log
grep -v "n/a" $L/calls-cupy-1.txt | cut -c1-150 | tail -90
