#!/usr/bin/env bash
# The GPU half on the CuPy simulator, in the configurations CI runs (docs/contributing_gpu.rst,
# "What CI runs"). Needs g++ (kernels are compiled for the host) and the .[test] extra.
# About 8 minutes on two cores, plus lane 8 (its two slow cases: 100 to 300 s each); .ci/run
# starts it beside the main suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# the checkout itself, whatever the editable install is doing meanwhile
export PYTHONPATH="$PWD:$PWD/backends${PYTHONPATH:+:$PYTHONPATH}"
sim=(python -m pytest --cupy=sim -q -p no:cacheprovider)
# The two softmax cases of a million one-class rows take ~100 s each here (a 256-thread
# block per row is 3.6e9 simulated synchronisations): lanes 1 and 2 leave them to lane 8,
# which computes the 1000003x1 cases alone.
slow="not 1000003x1"
failed=()
lane() {  # lane NAME COMMAND...: run it, remember a failure, go on to the next lane
    local name=$1
    shift
    echo "== $name"
    "$@" || failed+=("$name")
}

lane "1/8 every gpu and multi_gpu test: 2 devices, peer access, NCCL, legacy stream" \
    "${sim[@]}" -m "gpu or multi_gpu" -k "$slow"
# Lane 2 leaves out the one-call numerics files (every call on the caller's thread: no
# stream to order) whose cases lane 1 ran; threads, workers, Dask and nn paths stay in.
ignore=()
for name in test_kernels_gpu test_kernel_limits test_fft test_fft_args test_linalg_dense test_linalg_dense_scipy \
    test_linalg_iterative_safety test_dtypes; do
    ignore+=("--ignore=tests/$name.py")
done
lane "2/8 one device, per-thread default stream (threaded paths)" \
    env CUPYSIM_DEVICES=1 CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1 \
    "${sim[@]}" -m gpu -k "$slow and not digits_example" "${ignore[@]}"
lane "3/8 multi-GPU paths: 4 devices, no peer access, no NCCL, per-thread default stream" \
    env CUPYSIM_DEVICES=4 CUPYSIM_PEER_ACCESS=0 CUPYSIM_NCCL=0 \
    CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1 "${sim[@]}" -m multi_gpu
lane "4/8 the simulator's own tests (each modelled CuPy behaviour)" \
    "${sim[@]}" tests/cupysim/tests
sanitize=(env PYTHONPATH="$PWD/tests/cupysim:$PYTHONPATH" python -m cupysim.kernels.sanitize)
lane "5/8 every kernel once, AddressSanitizer + UBSan" \
    "${sanitize[@]}" address -- python tools/run_kernels_once.py
# Races need threads that share memory: the RawModule kernels (shared-memory tiles, block
# reductions), the Krylov solvers' fused steps among them. An ElementwiseKernel's threads
# each own their element.
shared_memory() {
    "${sanitize[@]}" thread -- python tools/run_kernels_once.py --kind RawModule &&
        "${sanitize[@]}" thread -- python tools/run_kernels_once.py --krylov
}
lane "6/8 the shared-memory kernels once, ThreadSanitizer" shared_memory
# Each stream's work queued until something needs it, streams interleaved at random
# (cupysim/defer.py): the multi-device tests, then the files whose paths run threads.
threaded=()
for name in test_fft_threads test_nn_parallel test_distributed_gpu test_cupy_devices \
    test_cupy_nccl test_cupy_memory test_cupy_staging; do
    threaded+=("tests/$name.py")
done
deferred() {
    local run=(env CUPYSIM_DEFER=1 CUPYSIM_DEFER_SEED="${CUPYSIM_DEFER_SEED:-0}"
        CUPYSIM_DEVICES=4 "${sim[@]}")
    "${run[@]}" -m multi_gpu && "${run[@]}" -m "gpu and not multi_gpu" "${threaded[@]}"
}
lane "7/8 deferred execution, 4 devices: multi_gpu tests and the threaded files" deferred
lane "8/8 the million-row kernel cases, computed" \
    "${sim[@]}" -m gpu tests/test_kernels_gpu.py -k 1000003x1

if [ ${#failed[@]} -gt 0 ]; then
    printf 'sim_lanes: FAILED: %s\n' "${failed[@]}"
    exit 1
fi
echo "sim_lanes: ok"
