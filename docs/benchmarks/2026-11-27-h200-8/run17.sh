#!/usr/bin/env bash
# Session 17's third device call, after the device activation plans: the nn rows' split
# into call machinery and body (nnprof2.py), the ReLU pieces again (nnprof.py), the nn
# rows of the per-call table, and the GPU tests of the paths changed.
set -u; export PYTHONUNBUFFERED=1; cd "$(dirname "$0")/../../.."
H=docs/benchmarks/2026-11-27-h200-8
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
timeout 90 python3 $H/nnprof2.py > $OUT/nnprof2.txt 2>&1; echo "nnprof2 rc=$?"
timeout 40 python3 $H/nnprof.py "nn.ReLU forward 4x8" "nn.ReLU backward 4x8" > $OUT/nnprof-3.txt 2>&1; echo "nnprof rc=$?"
timeout 70 python3 -m tools.peers -b "CallRatio.*'cupy'.*nn\." --json $OUT/calls-cupy-nn-3.json > $OUT/calls-cupy-nn-3.txt 2>&1; echo "calls rc=$?"
spread=$(python3 -c "import xdist" 2> /dev/null && echo "-n 8" || true)
timeout 150 python3 -m pytest -p no:cacheprovider -q -m "gpu or multi_gpu" $spread --timeout=120 \
  tests/test_nn_layers.py tests/test_nn_backward.py tests/test_nn_losses.py tests/test_nn_train.py \
  tests/test_gpu_cost.py tests/test_kernels_gpu.py tests/test_cupy_input_device.py \
  tests/test_warm_calls.py tests/test_calls_cupy.py > $OUT/tests-3.log 2>&1; echo "tests rc=$?"
tail -1 $OUT/tests-3.log; grep -E "^(FAILED|ERROR)" $OUT/tests-3.log | head -20
cat $OUT/nnprof2.txt; head -26 $OUT/nnprof-3.txt; grep -v "n/a" $OUT/calls-cupy-nn-3.txt | cut -c1-150 | tail -36
