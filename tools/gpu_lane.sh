#!/usr/bin/env bash
# The real-GPU lane (shared/GPU.md): everything CuPy-specific, proven on an NVIDIA GPU.
#
#     bash tools/gpu_lane.sh [OUT_DIR]          # or GPU_LANE_OUT=... bash tools/gpu_lane.sh
#
# Needs a GPU with its driver, CuPy, NumPy, SciPy and pytest; no network and nothing
# installed (the checkout is put on PYTHONPATH). PyTorch, compute-sanitizer and asv are
# used when present. Writes to OUT_DIR (default ./gpu-lane-out): env.txt, ceilings.json,
# tests.log + tests.xml, sanitizer-<kernel>.log, cost.json, bench-<case>.json and
# summary.md, the dated
# record to commit under docs/benchmarks/ (see docs/benchmarks/README.md).
# Every step runs even when an earlier one fails, each under its own time limit (the lane
# fits in about 8 minutes, shared/GPU.md); the exit status is 1 if any failed or ran out.
# GPU_LANE_BENCH=quick: small benchmark sizes only (a short device lease).
# A dry run of the lane's plumbing (on the CuPy simulator, say): GPU_LANE_QUICK=1 (small
# ceilings, --quick benchmarks) and GPU_LANE_PYTEST_ARGS="-k ..." to run a few tests.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-${GPU_LANE_OUT:-$ROOT/gpu-lane-out}}
mkdir -p "$OUT"
export PYTHONPATH="$ROOT:$ROOT/backends${PYTHONPATH:+:$PYTHONPATH}"
export GPUKIT_BACKEND=cupy
PY=${PYTHON:-python3}
status=0
step() { echo "== $*" >&2; }
# A step's time limit in seconds; GPU_LANE_SCALE=2 doubles them all (a slower machine).
limit() { echo $(( $1 * ${GPU_LANE_SCALE:-1} )); }

step "1/8 environment"
{
    nvidia-smi 2>&1 || echo "nvidia-smi: not available"
    "$PY" "$ROOT/tools/gpu_lane.py" versions
} > "$OUT/env.txt" 2>&1 || status=1
cat "$OUT/env.txt" >&2

step "2/8 importable from the checkout"
# the host kernels' extension module for this Python (a carried checkout has none, or one
# built for another Python): built here; without a compiler or Python's headers the NumPy
# ufuncs stand in, which is not a failure of the lane
"$PY" "$ROOT/gpukit/_host/build_native.py" >> "$OUT/env.txt" 2>&1
"$PY" -c "import gpukit as gk; print(gk.__file__, gk.get_backend().name, gk.device_count())" \
    >> "$OUT/env.txt" 2>&1 || status=1
"$PY" -c "from gpukit._host import native; print('host kernels compiled:', native.available())" \
    >> "$OUT/env.txt" 2>&1 || status=1

step "3/8 ceilings: device copy, float32 and TF32 matmul"
timeout "$(limit 60)" "$PY" "$ROOT/tools/gpu_lane.py" ceilings "$OUT/ceilings.json" >&2 || status=1

step "4/8 the gpu and multi_gpu tests (GPUKIT_BACKEND=cupy); the CPU suite is CI's job"
# Spread over processes when pytest-xdist is there (kernels compile on a fresh machine); a
# hung test fails alone when pytest-timeout is there.
spread=$("$PY" -c "import xdist" 2> /dev/null && echo "-n 8" || true)
per_test=$("$PY" -c "import pytest_timeout" 2> /dev/null && echo "--timeout=120" || true)
# shellcheck disable=SC2086  # GPU_LANE_PYTEST_ARGS: extra pytest arguments (a dry run's -k ...)
(cd "$ROOT" && timeout "$(limit 240)" "$PY" -m pytest -p no:cacheprovider -q -m "gpu or multi_gpu" \
    $spread $per_test --junitxml="$OUT/tests.xml" ${GPU_LANE_PYTEST_ARGS:-}) \
    > "$OUT/tests.log" 2>&1 || status=1
tail -n 5 "$OUT/tests.log" >&2

step "5/8 each custom kernel once under compute-sanitizer memcheck, side by side"
if command -v compute-sanitizer > /dev/null; then
    # each registered kernel, then the gk.elementwise/gk.reduction kernels and the Krylov
    # solvers' fused steps (krylov.cu), which no registry lists
    for kernel in $("$PY" "$ROOT/tools/run_kernels_once.py" --list) --user --krylov; do
        args=(--kernel "$kernel")
        [ "${kernel#--}" != "$kernel" ] && args=("$kernel") && kernel=${kernel#--}
        (timeout "$(limit 40)" compute-sanitizer --tool memcheck --error-exitcode 1 \
            "$PY" "$ROOT/tools/run_kernels_once.py" "${args[@]}" \
            > "$OUT/sanitizer-$kernel.log" 2>&1 || echo "$kernel" >> "$OUT/sanitizer-failed.txt") &
    done
    wait
    [ -s "$OUT/sanitizer-failed.txt" ] && status=1
    tail -qn 1 "$OUT"/sanitizer-*.log >&2
else
    echo "compute-sanitizer not found: step skipped" | tee "$OUT/sanitizer-missing.log" >&2
fi

step "6/8 GPU cost: measured time per unit of the workloads the simulator counts"
timeout "$(limit 120)" "$PY" "$ROOT/tools/gpu_lane.py" cost "$OUT/cost.json" \
    > "$OUT/cost.log" 2>&1 || status=1
cat "$OUT/cost.log" >&2

step "7/8 GPU benchmarks with same-run peers (raw CuPy; PyTorch CUDA when importable)"
# One case at a time, each under its own limit, so a slow case costs only itself.
quick=$([ "${GPU_LANE_QUICK:-}" = 1 ] || [ "${GPU_LANE_BENCH:-}" = quick ] && echo --quick || true)
for case in $("$PY" -m gpukit bench --list | awk '/^cases/{on=1; next} /^impl/{on=0} on{print $1}'); do
    timeout "$(limit 60)" "$PY" -m gpukit bench --json --no-progress $quick --cases "$case" \
        --impls gpukit-cupy,cupy,torch-cuda > "$OUT/bench-$case.json" 2>> "$OUT/bench.log" \
        || status=1
done

step "8/8 summary"
"$PY" "$ROOT/tools/gpu_lane.py" summary "$OUT" > "$OUT/summary.md" || status=1
cat "$OUT/summary.md"
exit $status
