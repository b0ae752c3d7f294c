"""Every kernel at the shapes where launch limits bite, and 64-bit index arithmetic.

Two checks that need no full execution:

* the kernel sources (the ``.cu``/``.cuh`` files and the ElementwiseKernel /
  ReductionKernel strings) are read for 32-bit index arithmetic: a value derived from
  ``blockIdx``/``gridDim`` (or an elementwise kernel's ``i``) held in a 32-bit integer,
  or a product of 32-bit values used as a subscript, wraps past 2**31 elements;
* on the simulator, each launcher runs at those shapes (rows beyond 65,535 blocks,
  more than 2**31 elements, the million-row cases) under
  ``cupysim.launch_check_only()``: the launch configuration, arguments and placement
  are checked as CUDA would and the kernel's body is skipped.

A cheaper real run covers what the million-row softmax cases add to the small ones:
more rows than the grid has blocks, so each block strides over several rows.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
from kernel_cases import CASES

import gpukit as gk

from helpers import TOL, rel_err

KERNELS = Path(__file__).resolve().parents[1] / "backends" / "gpukit_cupy" / "kernels"

_WIDE = r"(?:gk_index|long\s+long|size_t|ptrdiff_t|int64_t|uint64_t|long)"
_NARROW = r"(?:unsigned\s+int|unsigned|int|int32_t|uint32_t|short|unsigned\s+short)"
_DECL = re.compile(
    rf"(?<![\w:<])(?:const\s+)?({_WIDE}|{_NARROW})\s+(?!\()([^;{{}})]*?)(?:;|\)\s*[{{;]|$)"
)
_CAST_WIDE = re.compile(rf"\(\s*(?:const\s+)?{_WIDE}\s*\)")


def _split_top(text: str) -> list[str]:
    """``text`` split at commas outside parentheses and brackets."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [*parts, cur]


def index_violations(code: str, seeds: tuple[str, ...] = ("blockIdx", "gridDim")) -> list[str]:
    """32-bit index arithmetic in CUDA ``code``: what each offending line does.

    A variable is a global position when its initialiser uses a seed (``blockIdx``,
    ``gridDim``; ``i`` in an elementwise kernel) or another global position; a global
    position in a 32-bit integer (or cast to one) is a violation, and so is a product of launch
    dimensions (unsigned 32-bit) not cast to 64 bits first. A subscript of global memory (not a
    shared-memory or register array) that multiplies is a violation unless it casts to a
    64-bit type or multiplies a 64-bit variable.
    """
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", code, flags=re.S)
    tainted, wide, found = set(seeds), set(), []
    # Shared-memory and register arrays: their subscripts are bounded by the tile sizes.
    local = set(re.findall(r"\b(?:__shared__\s+)?(?:float|double|T|V)\s+(\w+)\s*\[", code))
    local |= set(re.findall(r",\s*(\w+)\s*\[\w+\]\s*;", code))
    for line in code.splitlines():
        for m in _DECL.finditer(line):
            is_wide = re.fullmatch(_WIDE, m.group(1)) is not None
            for declarator in _split_top(m.group(2)):
                name, eq, init = declarator.partition("=")
                name = name.strip()
                if not re.fullmatch(r"\w+", name):
                    continue
                if is_wide:
                    wide.add(name)
                if eq and tainted & set(re.findall(r"\w+", init)):
                    tainted.add(name)
                    if not is_wide:
                        found.append(f"32-bit {name} = {init.strip()}: {line.strip()}")
        for m in re.finditer(rf"\(\s*{_NARROW}\s*\)\s*\(?\s*(\w+)", line):
            if m.group(1) in tainted:
                found.append(f"global position cast to 32 bits: {line.strip()}")
        for m in re.finditer(r"\b(?:blockIdx|blockDim|gridDim)\.[xyz]\s*\*", line):
            if not re.search(rf"\(\s*{_WIDE}\s*\)\s*$", line[: m.start()]):
                found.append(f"32-bit product of launch dimensions: {line.strip()}")
        for array, subs in re.findall(r"(\w+)((?:\s*\[[^\[\]]*\])+)", line):
            if array in local:
                continue
            for sub in re.findall(r"\[([^\[\]]*\*[^\[\]]*)\]", subs):
                first = re.match(r"\s*\(?\s*(\w+)\s*\*", sub)
                if _CAST_WIDE.search(sub) is None and (first is None or first.group(1) not in wide):
                    found.append(f"32-bit product in subscript [{sub}]: {line.strip()}")
    return found


def _kernel_strings() -> dict[str, str]:
    """The code of every ElementwiseKernel / ReductionKernel in _elementwise.py, by name.

    A kernel is a call whose last positional string is a ``gk_`` name: the kernel classes
    themselves, or the module's helpers that build one from their string arguments."""
    tree = ast.parse((KERNELS / "_elementwise.py").read_text())
    out = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        parts = [
            piece.value
            for arg in node.args
            for piece in ast.walk(arg)
            if isinstance(piece, ast.Constant) and isinstance(piece.value, str)
        ]
        if parts and re.fullmatch(r"gk_\w+", parts[-1]):
            out[parts[-1]] = "\n".join(parts[:-1])
    return out


def test_kernel_strings_found():
    names = set(_kernel_strings())
    assert {
        "gk_adam_update",
        "gk_softmax_xent_backward",
        "gk_bias_act_forward_",
        "gk_act_forward_",
        "gk_act_backward_",
    } <= names
    assert len(names) >= 6


@pytest.mark.parametrize(
    "path", sorted(p.name for p in KERNELS.iterdir() if p.suffix in (".cu", ".cuh"))
)
def test_cuda_source_index_arithmetic_is_64_bit(path):
    assert index_violations((KERNELS / path).read_text()) == []


@pytest.mark.parametrize("name", sorted(_kernel_strings()))
def test_elementwise_index_arithmetic_is_64_bit(name):
    # CuPy's i is an int only when every operand is under 2**31 bytes; the kernel's own
    # arithmetic on it must not narrow it.
    assert (
        index_violations(_kernel_strings()[name], seeds=("blockIdx", "gridDim", "i", "_ind")) == []
    )


@pytest.mark.parametrize(
    "code",
    [
        "int i = blockIdx.x * blockDim.x + threadIdx.x;",
        "for (unsigned row = blockIdx.x; row < n; row += gridDim.x) {",
        "const long long row0 = blockIdx.x * 128; const int r = row0 + threadIdx.x, c = 0;",
        "const int r = threadIdx.x; out[r * n + 1] = 0;",
        "__shared__ float t[32]; const int r = threadIdx.x; out[r * n] = t[r * 2];",
        "int j = i % c;",
        "grad = (label == (int)i % c) ? 1 : 0;",
        "for (gk_index i = blockIdx.x * blockDim.x + threadIdx.x; i < n; ++i) {",
    ],
)
def test_index_scanner_flags_32_bit_arithmetic(code):
    assert index_violations(code, seeds=("blockIdx", "gridDim", "i"))


@pytest.mark.parametrize(
    "code",
    [
        "for (gk_index i = (gk_index)blockIdx.x * blockDim.x + threadIdx.x; i < n; ++i) {",
        "const gk_index r = 3; out[r * n + 1] = 0; out[(gk_index)k * n] = 1;",
        "const int lane = threadIdx.x & 31; slots[lane] = a;",
    ],
)
def test_index_scanner_passes_64_bit_arithmetic(code):
    assert index_violations(code) == []


# ---- launches at the limits, on the simulator ----------------------------------------


@pytest.fixture
def check_only():
    """The simulator's launch-check-only mode with the cupy backend (skips on real CuPy)."""
    cupy = pytest.importorskip("cupy")
    if not Path(cupy.__file__).resolve().is_relative_to(Path(__file__).parent / "cupysim"):
        pytest.skip("launch_check_only is a simulator mode (run with --cupy=sim)")
    import cupysim

    with gk.use_backend("cupy"), cupysim.launch_check_only() as launches:
        yield cupy, launches


def _only(launches, fragment: str):
    got = [launch for launch in launches if fragment in launch.name]
    assert len(got) == 1, [launch.name for launch in launches]
    return got[0]


BIG = 2**31 + 1  # elements: past what a 32-bit index reaches
pytestmark_gpu = pytest.mark.gpu


@pytestmark_gpu
@pytest.mark.parametrize(
    "run, dtype",
    [
        # not "1000003x1" in the id: sim_lanes.sh selects that for lane 8's full executions
        pytest.param(run, dtype, id=f"{kernel}-million-rows-{dtype}")
        for kernel, cid, run in CASES
        if cid.startswith("1000003x1")
        for dtype in gk.kernels.KERNELS[kernel].dtypes
    ],
)
def test_million_row_cases_launch(check_only, run, dtype):
    # test_kernels_gpu compares these cases' values (sim_lanes.sh lane 8, a GPU): minutes
    cupy, launches = check_only
    out = run(cupy.asarray, np.random.default_rng(0), dtype)
    assert all(o.shape[0] == 1000003 and o.dtype == dtype for o in out)
    assert launches and all(launch.grid[1:] == (1, 1) for launch in launches)


@pytestmark_gpu
def test_softmax_past_2_31_elements_launches(check_only):
    cupy, launches = check_only
    n, c = 70_001, BIG // 70_001 + 1  # 70,001 rows: more than 65,535 blocks would allow
    logits = cupy.empty((n, c), np.float32)
    labels = cupy.zeros(n, np.int64)
    loss, probs = gk.kernels.softmax_cross_entropy(logits, labels)
    assert loss.shape == (n,) and probs.shape == (n, c)
    fwd = _only(launches, "softmax_xent_forward")
    assert fwd.grid[1:] == (1, 1) and fwd.grid[0] <= n
    grad = gk.kernels.softmax_cross_entropy_backward(probs, labels, loss, label_smoothing=0.1)
    assert grad.shape == (n, c)
    _only(launches, "softmax_xent_backward")


@pytestmark_gpu
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_bias_activation_past_2_31_elements_launches(check_only, activation):
    cupy, launches = check_only
    cols = 1024
    x = cupy.empty((BIG // cols + 1, cols), np.float32)
    bias = cupy.zeros(cols, np.float32)
    y = gk.kernels.bias_activation(x, bias, activation)
    gx, gb = gk.kernels.bias_activation_backward(y, x, bias, activation)
    assert y.shape == gx.shape == x.shape and gb.shape == (cols,)
    fwd = _only(launches, f"gk_bias_act_forward_{activation}")
    assert fwd.grid[0] * fwd.block[0] >= 2**31 - 1  # no overflowing grid for the size
    # the backward and its bias gradient are one kernel: a block per 32 columns
    bwd = _only(launches, "bias_act_backward<float,")
    assert len(launches) == 2 and bwd.grid[0] * 32 >= cols


@pytestmark_gpu
@pytest.mark.parametrize("name", ["sgd_update", "adam_update"])
def test_optimizers_past_2_31_elements_launch(check_only, name):
    cupy, launches = check_only
    arrays = [cupy.empty(BIG, np.float32) for _ in range(4)]
    if name == "sgd_update":
        gk.kernels.sgd_update(arrays[0], arrays[1], arrays[2], lr=0.1, momentum=0.9)
    else:
        gk.kernels.adam_update(*arrays, step=3, lr=1e-3)
    assert len(launches) == 1 and launches[0].grid[1:] == (1, 1)


@pytestmark_gpu
def test_matmul_tiled_past_limits_launches(check_only):
    cupy, launches = check_only
    # A with more than 2**31 elements, C with more row blocks than gridDim.y takes
    m, k = 65_535 * 128 + 1, 2**31 // (65_535 * 128) + 1
    c = gk.kernels.matmul_tiled(cupy.empty((m, k), np.float32), cupy.empty((k, 3), np.float32))
    assert c.shape == (m, 3)
    launch = _only(launches, "matmul_tiled")
    assert launch.grid == (-(-m // 128), 1, 1)


@pytestmark_gpu
def test_softmax_rows_stride_over_the_grid(backend, rng):
    # The million-row case's path at a cost the lanes afford: more rows than blocks
    # (16 per multiprocessor), so every block takes several rows.
    if backend.name != "cupy":
        pytest.skip("the grid is the CUDA launcher's")
    import cupy

    blocks = 16 * cupy.cuda.Device().attributes["MultiProcessorCount"]
    # without smoothing, nothing but the row loop separates one row's block reduction
    # from the next's: the shared slots' barriers alone keep the rows apart
    for dtype, eps in ((np.float32, 0.0), (np.float64, 0.0), (np.float32, 0.1)):
        n = 2 * blocks + 3
        logits = (rng.standard_normal((n, 3)) * 5).astype(dtype)
        labels = rng.integers(0, 3, n)
        loss, probs = gk.kernels.softmax_cross_entropy(logits, labels, label_smoothing=eps)
        z = logits.astype(np.float64)
        z = z - z.max(1, keepdims=True)
        lse = np.log(np.exp(z).sum(1))
        want = lse - (1 - eps) * z[np.arange(n), labels] - eps / 3 * z.sum(1)
        assert rel_err(loss, want) < TOL[np.dtype(dtype)]
        assert rel_err(probs, np.exp(z - lse[:, None])) < TOL[np.dtype(dtype)]
