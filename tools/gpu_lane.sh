#!/usr/bin/env bash
# The real-GPU lane (shared/GPU.md): everything CuPy-specific, proven on an NVIDIA GPU.
#
#     bash tools/gpu_lane.sh [OUT_DIR]          # or GPU_LANE_OUT=... bash tools/gpu_lane.sh
#
# Needs a GPU with its driver, CuPy, NumPy, SciPy and pytest; no network and nothing
# installed (the checkout is put on PYTHONPATH). PyTorch, compute-sanitizer and asv are
# used when present. Writes to OUT_DIR (default ./gpu-lane-out): env.txt, ceilings.json,
# tests.log + tests.xml, sanitizer-<kernel>.log, bench.json, and summary.md, the dated
# record to commit under docs/benchmarks/ (see docs/benchmarks/README.md).
# Every step runs even when an earlier one fails; the exit status is 1 if any failed.
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

step "1/7 environment"
{
    nvidia-smi 2>&1 || echo "nvidia-smi: not available"
    "$PY" "$ROOT/tools/gpu_lane.py" versions
} > "$OUT/env.txt" 2>&1 || status=1
cat "$OUT/env.txt" >&2

step "2/7 importable from the checkout"
"$PY" -c "import gpukit as gk; print(gk.__file__, gk.get_backend().name, gk.device_count())" \
    >> "$OUT/env.txt" 2>&1 || status=1

step "3/7 ceilings: device copy, float32 and TF32 matmul"
"$PY" "$ROOT/tools/gpu_lane.py" ceilings "$OUT/ceilings.json" >&2 || status=1

step "4/7 the whole test suite, GPU marks enabled (GPUKIT_BACKEND=cupy)"
# shellcheck disable=SC2086  # GPU_LANE_PYTEST_ARGS: extra pytest arguments (a dry run's -k ...)
(cd "$ROOT" && "$PY" -m pytest -p no:cacheprovider -q --junitxml="$OUT/tests.xml" \
    ${GPU_LANE_PYTEST_ARGS:-}) \
    > "$OUT/tests.log" 2>&1 || status=1
tail -n 5 "$OUT/tests.log" >&2

step "5/7 each custom kernel once under compute-sanitizer memcheck"
if command -v compute-sanitizer > /dev/null; then
    for kernel in $("$PY" "$ROOT/tools/run_kernels_once.py" --list); do
        compute-sanitizer --tool memcheck --error-exitcode 1 \
            "$PY" "$ROOT/tools/run_kernels_once.py" --kernel "$kernel" \
            > "$OUT/sanitizer-$kernel.log" 2>&1 || status=1
        tail -n 1 "$OUT/sanitizer-$kernel.log" >&2
    done
else
    echo "compute-sanitizer not found: step skipped" | tee "$OUT/sanitizer-missing.log" >&2
fi

step "6/7 GPU benchmarks with same-run peers (raw CuPy; PyTorch CUDA when importable)"
quick=$([ "${GPU_LANE_QUICK:-}" = 1 ] && echo --quick || true)
"$PY" -m gpukit bench --json --no-progress $quick --impls gpukit-cupy,cupy,torch-cuda \
    > "$OUT/bench.json" 2> "$OUT/bench.log" || status=1

step "7/7 summary"
"$PY" "$ROOT/tools/gpu_lane.py" summary "$OUT" > "$OUT/summary.md" || status=1
cat "$OUT/summary.md"
exit $status
