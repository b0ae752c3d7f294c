#!/usr/bin/env bash
# One device call: the GPU lane, gpukit's per-call cost on real CuPy, an fft2 probe.
set -u
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
L=/tmp/lane; mkdir -p $L
GPU_LANE_BENCH=quick timeout 300 bash tools/gpu_lane.sh $L > $L/lane-stdout.log 2>&1; echo "lane rc=$?" | tee -a $L/lane-stdout.log
tar czf $OUT/lane.tgz -C /tmp lane
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
timeout 60 python3 .probe/fft2_small.py > $OUT/fft2-probe.txt 2>&1; echo "probe rc=$?"
timeout 200 python3 -m tools.peers -b "CallRatio.*'cupy'" --json $OUT/calls-cupy.json > $OUT/calls-cupy.txt 2>&1; echo "calls rc=$?"
tail -n 30 $L/summary.md; cat $OUT/fft2-probe.txt; tail -n 70 $OUT/calls-cupy.txt
