"""Put realistic GPU bugs into gpukit's CuPy paths, one at a time, and see a lane catch each.

    python tools/mutation_check.py                  # every mutant; the catch rate at the end
    python tools/mutation_check.py --list           # the mutants, one per line
    python tools/mutation_check.py --only ID [ID...]
    python tools/mutation_check.py --json out.json  # the verdicts, machine-readable too
    python tools/mutation_check.py --no-baseline    # skip the unmutated run of every check

Each mutant is a file, an exact snippet of it (it must occur exactly once), the
snippet that replaces it and what bug that is: a missing event wait, work on the
wrong device, peer access assumed, an off-by-one bound or a missing barrier in a
kernel, a dtype slip, a count mismatch, a buffer released while a copy reads it.
The tree (git's tracked and unignored files) is copied once to a temporary
directory; each mutant is applied there, its checks run one after another (the
simulator lanes' test files for that path under ``--cupy=sim``, with the lane's
environment, and the sanitizer lane for kernel mutants, as tools/sim_lanes.sh runs
them) until one fails, and the file is restored. A mutant is caught when a check
fails; missed when all pass. First, every check runs once on the unmutated copy:
a check failing there cannot catch anything and stops the run.

One process at a time (the machine's cores are shared); about 30 minutes on two
loaded cores (two thirds of it the baseline). Exits 1 when the catch rate is below 95%.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.95
TIMEOUT = 600  # seconds per check: a hang is caught (CI's timeout), but reported so


@dataclass(frozen=True)
class Check:
    """One command of a lane: pytest on the simulator, or a kernel under a sanitizer."""

    name: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()


def sim(*files: str, k: str | None = None, m: str | None = "gpu or multi_gpu", **env: str) -> Check:
    """pytest on the simulator; ``m=None``: every test of the files, marked or not."""
    argv = ("python", "-m", "pytest", "--cupy=sim", "-q", "-x", "-p", "no:cacheprovider")
    argv += (
        (("-m", m) if m else ()) + tuple(f"tests/{f}.py" for f in files) + (("-k", k) if k else ())
    )
    label = (
        " ".join(files) + (f" -k '{k}'" if k else "") + "".join(f" {v}={x}" for v, x in env.items())
    )
    return Check(label, argv, tuple(sorted(env.items())))


def sanitize(tool: str, kernel: str | None) -> Check:
    """A kernel's cases once under a sanitizer; ``kernel=None``: the Krylov steps."""
    argv = ("python", "-m", "cupysim.kernels.sanitize", tool, "--")
    argv += ("python", "tools/run_kernels_once.py")
    argv += ("--krylov",) if kernel is None else ("--kernel", kernel)
    return Check(f"{tool} sanitizer: {kernel or 'krylov'}", argv, (("SANITIZE", "1"),))


# The lanes of tools/sim_lanes.sh as environments: 2 devices with peer access and NCCL
# (lane 1), and 4 devices, no peer access, no NCCL, per-thread default stream (lane 3).
NO_PEER = {
    "CUPYSIM_DEVICES": "4",
    "CUPYSIM_PEER_ACCESS": "0",
    "CUPYSIM_NCCL": "0",
    "CUPY_CUDA_PER_THREAD_DEFAULT_STREAM": "1",
}

LIMITS = sim("test_kernel_limits", m=None)  # the source scan is not a gpu test
XENT = (
    sim("test_kernels", k="softmax"),
    sim("test_kernels_gpu", k="softmax_cross_entropy and not backward and not 1000003"),
    LIMITS,
    sanitize("address", "softmax_cross_entropy"),
    sanitize("thread", "softmax_cross_entropy"),
)
XENT_BWD = (
    sim("test_kernels", k="softmax"),
    sim("test_kernels_gpu", k="softmax_cross_entropy_backward and not 1000003"),
    LIMITS,
    sanitize("address", "softmax_cross_entropy_backward"),
)
MATMUL = (
    sim("test_kernels", k="matmul"),
    sim("test_kernels_gpu", k="matmul_tiled"),
    LIMITS,
    sanitize("address", "matmul_tiled"),
    sanitize("thread", "matmul_tiled"),
)
ACT = (
    sim("test_kernels_gpu", k="bias_activation and gelu and not 1000003"),
    sanitize("address", "bias_activation"),
)
ADAM = (sim("test_kernels_gpu", k="adam and not 1000003"), LIMITS)
DEVICES = (
    sim("test_cupy_input_device", "test_transfers", "test_cupy_devices"),
    sim("test_sharding_gpu", "test_nn_parallel"),
    sim("test_transfers", "test_cupy_devices", "test_sharding_gpu", m="multi_gpu", **NO_PEER),
)
WORKERS = (
    sim("test_sharding_gpu", "test_nn_parallel", "test_cupy_devices"),
    sim("test_sharding_gpu", "test_nn_parallel", m="multi_gpu", **NO_PEER),
)
NCCL = (
    sim("test_cupy_nccl_dtypes", "test_cupy_nccl"),
    sim("test_sharding_gpu", "test_nn_parallel", "test_distributed_gpu"),
)
PINNED = (
    # digits_example: a subprocess, which may import another checkout's gpukit
    sim(
        "test_cupy_memory",
        "test_cupy_staging",
        "test_transfers",
        "test_nn_train",
        k="not digits_example",
    ),
    sim(
        "test_cupy_memory",
        "test_nn_train",
        k="not digits_example",
        CUPY_CUDA_PER_THREAD_DEFAULT_STREAM="1",
    ),
)
TF32 = (sim("test_cupy_tf32", "test_matmul"),)
# The fused Krylov steps: every dtype's solves, the step and status tests, then lane 5's
# and lane 6's sanitizers on the four solvers' steps.
KRYLOV = (
    sim("test_linalg_krylov_space", "test_linalg_iterative"),
    sanitize("address", None),
    sanitize("thread", None),
)

K = "backends/gpukit_cupy/kernels/"
B = "backends/gpukit_cupy/"


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    original: str
    mutated: str
    description: str
    checks: tuple[Check, ...]


MUTANTS = [
    # ---- softmax cross-entropy (RawModule) ----
    Mutant(
        "xent-row-read-past-end",
        K + "softmax_xent.cu",
        "    for (gk_index j = threadIdx.x; j < c; j += blockDim.x) {\n      const T v = l[j];",
        "    for (gk_index j = threadIdx.x; j <= c; j += blockDim.x) {\n      const T v = l[j];",
        "off-by-one: the max/sum loop reads one element past its row",
        XENT,
    ),
    Mutant(
        "xent-rows-past-end",
        K + "softmax_xent.cu",
        "row < n; row += gridDim.x",
        "row <= n; row += gridDim.x",
        "off-by-one: the row loop runs one row past the end (loss[n] written)",
        XENT,
    ),
    Mutant(
        "xent-label-bound",
        K + "softmax_xent.cu",
        "      if (y >= 0 && (gk_index)y < c) {",
        "      if (y >= 0 && (gk_index)y <= c) {",
        "off-by-one: a label equal to the class count is used as an index",
        XENT,
    ),
    Mutant(
        "xent-missing-barrier-slots",
        K + "softmax_xent.cu",
        "  if (lane == 0) slots[warp] = a;\n  __syncthreads();\n",
        "  if (lane == 0) slots[warp] = a;\n",
        "missing __syncthreads: warp 0 reads the other warps' partials before they land",
        XENT,
    ),
    Mutant(
        "xent-missing-barrier-reuse",
        K + "softmax_xent.cu",
        "  __syncthreads();  // the next reduction may overwrite the slots\n",
        "",
        "missing __syncthreads: the next block reduction overwrites the slots being read",
        XENT,
    ),
    Mutant(
        "xent-rows-on-grid-y",
        K + "__init__.py",
        "            (min(n, sm_count() * 16),),\n            (BLOCK,),",
        "            (1, min(n, 2**31 - 1)),\n            (BLOCK,),",
        "rows on gridDim.y (limit 65,535) instead of grid-strided on x",
        (LIMITS,),
    ),
    Mutant(
        "xent-size-int32",
        K + "__init__.py",
        "                index(n),\n                index(c),",
        "                np.int32(n),\n                np.int32(c),",
        "dtype slip: 32-bit sizes passed to long long parameters",
        XENT,
    ),
    Mutant(
        "xent-wrong-device",
        K + "__init__.py",
        "        with first.device:\n            return fn(first, *args)",
        "        return fn(first, *args)",
        "work on the wrong device: kernels launch on the current device, not the input's",
        (sim("test_cupy_input_device"), *DEVICES[2:]),
    ),
    Mutant(
        "xent-bwd-label-bound",
        K + "_elementwise.py",
        "    if (label >= 0 && label < c) {",
        "    if (label >= 0 && label <= c) {",
        "off-by-one: the backward kernel takes a label equal to the class count",
        XENT_BWD,
    ),
    Mutant(
        "xent-bwd-index-narrowed",
        K + "_elementwise.py",
        "((long long)label == i % c ? on : T(0))",
        "((int)label == (int)i % (int)c ? on : T(0))",
        "32-bit index arithmetic: the column of element i narrowed to int",
        XENT_BWD,
    ),
    Mutant(
        "xent-bwd-smoothing-count",
        K + "__init__.py",
        "s(label_smoothing / max(probs.shape[1], 1))",
        "s(label_smoothing / max(probs.shape[0], 1))",
        "count mismatch: smoothing spread over the rows instead of the classes",
        XENT_BWD,
    ),
    # ---- tiled matmul (RawModule) ----
    Mutant(
        "matmul-a-tile-bound",
        K + "matmul_tiled.cu",
        "(gr < M && gk < K) ? A[",
        "(gr <= M && gk < K) ? A[",
        "off-by-one: A's tile loads one row past the matrix",
        MATMUL,
    ),
    Mutant(
        "matmul-c-store-bound",
        K + "matmul_tiled.cu",
        "if (r < M && cc < N) C[",
        "if (r < M && cc <= N) C[",
        "off-by-one: C's store writes one column past the row",
        MATMUL,
    ),
    Mutant(
        "matmul-missing-barrier-load",
        K + "matmul_tiled.cu",
        "? B[gk * N + gc] : 0.0f;\n    }\n    __syncthreads();\n",
        "? B[gk * N + gc] : 0.0f;\n    }\n",
        "missing __syncthreads: tiles are read before every thread has stored its part",
        MATMUL,
    ),
    Mutant(
        "matmul-missing-barrier-compute",
        K + "matmul_tiled.cu",
        "acc[i][j] += ra[i] * rb[j];\n    }\n    __syncthreads();\n",
        "acc[i][j] += ra[i] * rb[j];\n    }\n",
        "missing __syncthreads: the next tile overwrites shared memory still being read",
        MATMUL,
    ),
    Mutant(
        "matmul-rows-32bit",
        K + "matmul_tiled.cu",
        "  const gk_index row0 = blockIdx.x / col_blocks * BM",
        "  const int row0 = blockIdx.x / col_blocks * BM",
        "32-bit index arithmetic: the tile's first row in an int",
        MATMUL,
    ),
    Mutant(
        "matmul-grid-2d",
        K + "__init__.py",
        "    grid = (-(-n // bn) * -(-m // bm),)",
        "    grid = (-(-n // bn), -(-m // bm))",
        "row blocks on gridDim.y (limit 65,535), the kernel reading a flat grid",
        MATMUL,
    ),
    Mutant(
        "matmul-block-over-bounds",
        K + "__init__.py",
        "((bm // tm) * (bn // tn),)",
        "((bm // tm) * (bn // tn) * 2,)",
        "block larger than the kernel's __launch_bounds__",
        MATMUL,
    ),
    Mutant(
        "matmul-arg-count",
        K + "__init__.py",
        "(a, b, c, index(m), index(n), index(k))",
        "(a, b, c, index(m), index(n))",
        "count mismatch: one kernel argument missing",
        MATMUL,
    ),
    Mutant(
        "matmul-size-int32",
        K + "__init__.py",
        "(a, b, c, index(m), index(n), index(k))",
        "(a, b, c, np.int32(m), np.int32(n), np.int32(k))",
        "dtype slip: 32-bit sizes passed to long long parameters",
        MATMUL,
    ),
    # ---- elementwise kernels and shared device code ----
    Mutant(
        "grid-stride-32bit",
        K + "gk_common.cuh",
        "(gk_index)blockIdx.x * blockDim.x + threadIdx.x",
        "blockIdx.x * blockDim.x + threadIdx.x",
        "32-bit index arithmetic: the grid-stride start as an unsigned 32-bit product",
        (LIMITS,),
    ),
    Mutant(
        "gelu-float-slip",
        K + "activations.cuh",
        "if (ACT == 3) return T(0.5) * z * gk_erfc(z * T(-GK_SQRT1_2));",
        "if (ACT == 3) return T(0.5) * z * gk_erfc(float(z) * float(-GK_SQRT1_2));",
        "dtype slip: the float64 GELU evaluated in float",
        ACT,
    ),
    Mutant(
        "adam-float-slip",
        K + "_elementwise.py",
        "    const T v = beta2 * exp_avg_sq + omb2 * (g * g);",
        "    const float v = beta2 * exp_avg_sq + omb2 * (g * g);",
        "dtype slip: Adam's second moment rounded to float in float64",
        ADAM,
    ),
    # ---- device placement and stream order (backend, workers) ----
    Mutant(
        "to-device-no-wait-source",
        B + "backend.py",
        "        self.wait_event(self.record_event(source), device)\n",
        "",
        "missing event wait: the peer copy does not wait for the source's pending work",
        DEVICES,
    ),
    Mutant(
        "to-device-no-wait-back",
        B + "backend.py",
        "        self.wait_event(self.record_event(device), source)\n",
        "",
        "missing event wait: the source's later work may overwrite what the copy reads",
        DEVICES,
    ),
    Mutant(
        "wait-event-wrong-device",
        B + "backend.py",
        "            with cupy.cuda.Device(device):\n"
        "                cupy.cuda.get_current_stream().wait_event(event)",
        "            cupy.cuda.get_current_stream().wait_event(event)",
        "wrong device: the current device's stream waits, not the target's",
        DEVICES,
    ),
    Mutant(
        "record-event-wrong-device",
        B + "backend.py",
        "        with cupy.cuda.Device(device):\n"
        "            event = cupy.cuda.Event(disable_timing=True)\n"
        "            event.record(cupy.cuda.get_current_stream())",
        "        event = cupy.cuda.Event(disable_timing=True)\n"
        "        event.record(cupy.cuda.get_current_stream())",
        "wrong device: the event marks the current device's stream, not the one asked",
        DEVICES,
    ),
    Mutant(
        "asarray-no-move",
        B + "backend.py",
        "            obj = self.to_device(obj, device)",
        "            pass",
        "wrong device: gk.asarray(x, device=i) leaves x where it was",
        DEVICES,
    ),
    Mutant(
        "worker-wrong-device",
        B + "backend.py",
        "        with cupy.cuda.Device(index), self._stream(index):",
        "        with self._stream(index):",
        "wrong device: a worker runs its shard on the caller's device",
        WORKERS,
    ),
    Mutant(
        "peer-copy-assumes-peer-access",
        B + "backend.py",
        "            out = cupy.copy(x)  # order 'K': C or F layout kept, one memcpy",
        "            out = cupy.empty_like(x)\n            cupy.copyto(out, x)",
        "peer access assumed: a kernel on the destination reads the source device's memory",
        DEVICES,
    ),
    Mutant(
        "worker-no-wait-ready",
        "gpukit/_runtime/workers.py",
        "            backend.wait_event(ready, device)  # the caller's work on this device"
        " comes first\n",
        "",
        "missing event wait: a worker starts before the caller's work on its device",
        WORKERS,
    ),
    Mutant(
        "caller-no-wait-results",
        "gpukit/_runtime/workers.py",
        "            backend.wait_event(f.result()[1], device)\n",
        "",
        "missing event wait: the caller reads the workers' results unordered",
        WORKERS,
    ),
    # ---- NCCL collectives ----
    Mutant(
        "nccl-allreduce-count",
        B + "collectives.py",
        "s.data.ptr, o.data.ptr, s.size * per_item, code,",
        "s.data.ptr, o.data.ptr, s.size, code,",
        "count mismatch: a complex all-reduce counts items, not reals",
        NCCL,
    ),
    Mutant(
        "nccl-broadcast-count",
        B + "collectives.py",
        "b.size * per_item, code, root, stream)",
        "b.size, code, root, stream)",
        "count mismatch: a complex broadcast counts items, not reals",
        NCCL,
    ),
    Mutant(
        "nccl-recv-count",
        B + "collectives.py",
        "comm.recv(got.data.ptr, got.nbytes, n.NCCL_UINT8, j, stream)",
        "comm.recv(got.data.ptr, got.size, n.NCCL_UINT8, j, stream)",
        "count mismatch: bytes received counted in elements",
        NCCL,
    ),
    Mutant(
        "nccl-complex64-dtype",
        B + "collectives.py",
        '"complex64": n.NCCL_FLOAT32',
        '"complex64": n.NCCL_FLOAT64',
        "dtype slip: complex64 reduced as pairs of float64",
        NCCL,
    ),
    Mutant(
        "nccl-wrong-device-stream",
        B + "collectives.py",
        "                with cupy.cuda.Device(d):\n"
        "                    stream = cupy.cuda.get_current_stream().ptr\n"
        "                    comm.allReduce(",
        "                stream = cupy.cuda.get_current_stream().ptr\n"
        "                if True:\n"
        "                    comm.allReduce(",
        "wrong device: every rank's all-reduce enqueued on the current device's stream",
        NCCL,
    ),
    # ---- pinned staging, TF32 ----
    Mutant(
        "pinned-staging-released",
        B + "memory.py",
        "            self._hold_until(stream.record(), staged)\n",
        "",
        "buffer reuse: the pinned staging buffer returns to the pool while its copy reads it",
        PINNED,
    ),
    Mutant(
        "pinned-inflight-inverted",
        B + "memory.py",
        "if not e.done]",
        "if e.done]",
        "buffer reuse: in-flight staging buffers dropped, finished ones kept",
        PINNED,
    ),
    # ---- fused Krylov steps (krylov.cu, krylov.py) ----
    Mutant(
        "krylov-steps-own-stream",
        B + "krylov.py",
        "        kernel(self.grid, self.block, (np.int64(self.n), *args))",
        "        kernel(self.grid, self.block, (np.int64(self.n), *args),\n"
        "               stream=self.__dict__.setdefault("
        "'side', self.cupy.cuda.Stream(non_blocking=True)))",
        "missing event wait: the steps run on a stream of their own that waits for nothing "
        "(the operator's product and the uploads are on the caller's stream)",
        KRYLOV,
    ),
    Mutant(
        "krylov-combine-past-k",
        B + "krylov.cu",
        "    for (long long q = 0; q < k; ++q) {",
        "    for (long long q = 0; q <= k; ++q) {",
        "off-by-one: GMRES's update combines one basis vector more than it has coefficients",
        KRYLOV,
    ),
    Mutant(
        "krylov-grid-sum-past-blocks",
        B + "krylov.cu",
        "    for (gk_index b = tid; b < (gk_index)gridDim.x; b += GK_KB) {",
        "    for (gk_index b = tid; b <= (gk_index)gridDim.x; b += GK_KB) {",
        "off-by-one: the last block sums one partial past those the blocks wrote",
        KRYLOV,
    ),
    Mutant(
        "krylov-gmres-coefficients-float64",
        B + "krylov.py",
        "yd = self.cupy.asarray(y.astype(self.dtype, copy=False))",
        "yd = self.cupy.asarray(y)",
        "dtype slip: GMRES's coefficients (float64/complex128 from the host's least squares) "
        "passed as they are to a kernel reading the vectors' dtype",
        KRYLOV,
    ),
    Mutant(
        "krylov-gmres-pythagoras-unguarded",
        B + "krylov.cu",
        "j == 0 ? 1.0 : rho2 > 0.0 ? sqrt(rho2) : alpha > 0.0 ? sqrt(alpha) : 1.0;",
        "j == 0 ? 1.0 : sqrt(rho2);",
        "cancellation: GMRES's Pythagorean norm ||u||^2 - ||s||^2 taken as it is when it "
        "cancels to 0 (a vector in the basis' span), dividing by it",
        KRYLOV,
    ),
    Mutant(
        "krylov-gmres-delayed-pass-uncorrected",
        B + "krylov.py",
        "first = np.append(t, nu * delta / rho) - self.H[: j + 1, :j] @ s",
        "first = np.append(t, nu * delta / rho)",
        "a lost term: GMRES's Hessenberg column not corrected for the delayed second pass "
        "(the product was of a vector that had had one pass)",
        KRYLOV,
    ),
    Mutant(
        "krylov-gmres-missing-barrier-sums",
        B + "krylov.cu",
        "    gk_pair(out, k, a);\n  }\n  __syncthreads();\n",
        "    gk_pair(out, k, a);\n  }\n",
        "missing __syncthreads: thread 0 reads the step's sums before the last block's other "
        "threads store them",
        KRYLOV,
    ),
    Mutant(
        "krylov-missing-barrier-block-sum",
        B + "krylov.cu",
        "  const unsigned int tid = threadIdx.x;\n  __syncthreads();\n  for (unsigned int s",
        "  const unsigned int tid = threadIdx.x;\n  for (unsigned int s",
        "missing __syncthreads: the block sum reads other threads' slots before they store them",
        KRYLOV,
    ),
    Mutant(
        "tf32-complex64-ignored",
        B + "matmul.py",
        'cupy.result_type(a, b).char not in "fF"',
        'cupy.result_type(a, b).char not in "f"',
        "dtype slip: complex64 products ignore the precision asked for",
        TF32,
    ),
]


def _copy_tree(dest: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for name in filter(None, files):
        src = ROOT / os.fsdecode(name)
        if src.is_file():
            (dest / os.fsdecode(name)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / os.fsdecode(name))


def _run(check: Check, tree: Path) -> tuple[bool, float, str]:
    """(passed, seconds, tail of the output) of ``check`` in ``tree``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), str(tree / "backends")])
    env.pop("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM", None)
    env.update(check.env)
    if env.pop("SANITIZE", None):
        env["PYTHONPATH"] = os.pathsep.join([str(tree / "tests" / "cupysim"), env["PYTHONPATH"]])
    start = time.monotonic()
    try:
        p = subprocess.run(
            check.argv, cwd=tree, env=env, capture_output=True, text=True, timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired:
        return False, time.monotonic() - start, "timed out"
    tail = (p.stdout + p.stderr).strip().splitlines()[-3:]
    return p.returncode == 0, time.monotonic() - start, " | ".join(tail)


def _apply(tree: Path, m: Mutant) -> str:
    path = tree / m.file
    text = path.read_text()
    if text.count(m.original) != 1:
        raise SystemExit(f"{m.id}: the snippet occurs {text.count(m.original)} times in {m.file}")
    path.write_text(text.replace(m.original, m.mutated))
    return text


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--only", nargs="+", metavar="ID")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the unmutated run (checks just passed)"
    )
    args = parser.parse_args(argv)
    ids = [m.id for m in MUTANTS]
    if len(set(ids)) != len(ids):
        raise SystemExit("mutant ids must be unique")
    if args.list:
        for m in MUTANTS:
            print(f"{m.id:32s} {m.file}: {m.description}")
        return 0
    chosen = [m for m in MUTANTS if not args.only or m.id in args.only]
    if args.only and len(chosen) != len(set(args.only)):
        raise SystemExit(f"unknown ids: {sorted(set(args.only) - set(ids))}")
    with tempfile.TemporaryDirectory(prefix="gpukit-mutants-") as tmp:
        tree = Path(tmp)
        _copy_tree(tree)
        for m in chosen:  # every snippet matches once before anything runs
            (tree / m.file).write_text(_apply(tree, m))
        checks = (
            [] if args.no_baseline else list(dict.fromkeys(c for m in chosen for c in m.checks))
        )
        print(f"baseline: {len(checks)} checks on the unmutated tree", flush=True)
        for c in checks:
            ok, secs, tail = _run(c, tree)
            print(f"  {'ok  ' if ok else 'FAIL'} {secs:6.1f}s {c.name}", flush=True)
            if not ok:
                print(f"baseline check fails unmutated: {tail}", file=sys.stderr)
                return 2
        verdicts = []
        for m in chosen:
            original = _apply(tree, m)
            caught_by, log, total = None, "", 0.0
            try:
                for c in m.checks:
                    ok, secs, tail = _run(c, tree)
                    total += secs
                    if not ok:
                        caught_by, log = c.name, tail
                        break
            finally:
                (tree / m.file).write_text(original)
            verdicts.append(
                {"id": m.id, "file": m.file, "caught_by": caught_by, "seconds": round(total, 1),
                 "description": m.description, "log": log}
            )  # fmt: skip
            word = "CAUGHT" if caught_by else "MISSED"
            print(
                f"{word} {m.id} ({total:.0f}s){': ' + caught_by if caught_by else ''}", flush=True
            )
    caught = sum(v["caught_by"] is not None for v in verdicts)
    rate = caught / len(verdicts) if verdicts else 1.0
    print(f"\ncaught {caught} of {len(verdicts)} mutants: {rate:.0%}")
    for v in verdicts:
        if v["caught_by"] is None:
            print(f"  missed {v['id']}: {v['description']}")
    if args.json:
        args.json.write_text(json.dumps({"caught": caught, "total": len(verdicts),
                                         "mutants": verdicts}, indent=1))  # fmt: skip
    return 0 if rate >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
