#!/usr/bin/env bash
# Session 17's fourth device call, at its last code: the host kernel module's quiet
# fallback where it was never built (call 3's finding), then, built, the GPU tests of the
# paths the session changed.
set -u; export PYTHONUNBUFFERED=1; cd "$(dirname "$0")/../../.."
export PYTHONPATH="$PWD:$PWD/backends" GPUKIT_BACKEND=cupy
rm -f gpukit/_host/_kernels*.so
python3 -W error -c "from gpukit._host import native; print('unbuilt: available', native.available(), 'no warning')" 2>&1 | tail -2
spread=$(python3 -c "import xdist" 2> /dev/null && echo "-n 8" || true)
FILES="tests/test_nn_layers.py tests/test_nn_backward.py tests/test_nn_losses.py tests/test_nn_train.py \
  tests/test_gpu_cost.py tests/test_kernels_gpu.py tests/test_cupy_input_device.py \
  tests/test_warm_calls.py tests/test_calls_cupy.py"
timeout 150 python3 -m pytest -p no:cacheprovider -q -m "gpu or multi_gpu" $spread --timeout=120 \
  $FILES > $OUT/tests-4-unbuilt.log 2>&1; echo "unbuilt tests rc=$?"; tail -1 $OUT/tests-4-unbuilt.log
timeout 60 python3 -m pytest -p no:cacheprovider -q tests/test_host_module.py -k without_the_module 2>&1 | tail -1
python3 gpukit/_host/build_native.py > $OUT/build.log 2>&1; echo "build rc=$?"
python3 -c "from gpukit._host import native; print('built: available', native.available())"
timeout 150 python3 -m pytest -p no:cacheprovider -q -m "gpu or multi_gpu" $spread --timeout=120 \
  $FILES > $OUT/tests-4.log 2>&1; echo "tests rc=$?"
tail -1 $OUT/tests-4.log; grep -hE "^(FAILED|ERROR)" $OUT/tests-4-unbuilt.log $OUT/tests-4.log | head -20
