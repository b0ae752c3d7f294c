"""The host kernels' extension module (gpukit/_host/csrc/module.c): what its functions
refuse before a kernel runs, how the build goes on without it, gpukit without it, and
calls from several Python threads at once (the module releases the GIL).

tests/test_host_kernels.py checks what the kernels compute."""

from __future__ import annotations

import gc
import importlib
import pkgutil
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from scipy import special

import gpukit as gk
from gpukit._host import build_native, native

from helpers import TOL, rel_err

SENTINEL = 7.0
ACT_GELU = native.ACTIVATIONS.index("gelu")


@pytest.fixture
def module():
    """The extension module, where this install built it."""
    if not native.available():
        pytest.skip("gpukit's host kernel module is not built (pip install -e .)")
    return native._library()


@pytest.fixture(params=[np.float32, np.float64], ids=["float32", "float64"])
def dtype(request):
    return np.dtype(request.param)


def _args(name, dtype, out, rng):
    """Kernel ``gk_<name>``'s arguments with ``out`` as the array it writes (32 elements:
    a 4 x 8 matrix or a flat buffer), every other one valid; and out's position."""
    x = rng.standard_normal(32).astype(dtype)
    b, per_row = rng.standard_normal(8).astype(dtype), rng.standard_normal(4).astype(dtype)
    labels, part = np.array([0, 3, 7, 1]), np.empty(8, dtype)
    return {
        "bias_act": ((x, b, out, 4, 8, 8, 1, 0.0), 3),
        "bias_act_grad": ((x, x.copy(), b, out, np.zeros(8), part, 4, 8, 8, 1, 0.0, 0), 4),
        "xent": ((x, labels, per_row, out, 4, 8, 0.1), 4),
        "xent_grad": ((np.abs(x), labels, per_row, out, 4, 8, 0.1), 4),
        "sgd": ((out, x, x.copy(), 32, 0.1, 0.9, 0.0, 0.0, 0, 0), 1),
        "adam": ((out, x, x.copy(), np.abs(x), 32, 0.1, 0.999, 1e-3, 1e-8, 0.0, 1.0, 0.1, 1.0), 1),
    }[name]


def _bad_output(kind, dtype):
    """An output of 32 elements the kernels must refuse, over memory filled with
    SENTINEL; (the output, the memory under it)."""
    if kind == "short":  # 31 elements of 32
        under = np.full(32, SENTINEL, dtype)
        return under[:31], under
    if kind == "misaligned":  # one byte past an element boundary
        under = np.zeros(33 * dtype.itemsize, np.uint8)
        out = under[1 : 1 + 32 * dtype.itemsize].view(dtype)
        out[...] = SENTINEL
        return out, under
    if kind == "strided":
        under = np.full(64, SENTINEL, dtype)
        return under[::2], under
    under = np.full(32, SENTINEL, dtype)  # read-only
    under.flags.writeable = False
    return under, under


KERNELS = ["bias_act", "bias_act_grad", "xent", "xent_grad", "sgd", "adam"]


@pytest.mark.parametrize("kind", ["short", "misaligned", "strided", "read-only"])
@pytest.mark.parametrize("name", KERNELS)
def test_an_output_the_kernel_cannot_write_whole_is_refused_unwritten(
    module, rng, dtype, name, kind
):
    """ValueError naming the argument, before the kernel runs: the memory under a
    too-short, misaligned, strided or read-only output is as it was. The same call with a
    valid output writes all of it."""
    fn = getattr(module, f"gk_{name}_{native._SUFFIX[dtype][1:]}")
    good = np.full(32, SENTINEL, dtype)
    fn(*_args(name, dtype, good, rng)[0])
    assert not np.any(good == SENTINEL), "the valid call did not write its output"
    out, under = _bad_output(kind, dtype)
    before = under.copy()
    args, k = _args(name, dtype, out, rng)
    with pytest.raises(ValueError, match=f"argument {k}"):
        fn(*args)
    assert np.array_equal(under, before)


def test_arrays_too_short_for_the_sizes_are_refused(module, rng):
    """Every array is checked against what the call's sizes touch: an input, the bias,
    the labels, the bias gradient's float64 sums; and sizes that make no matrix."""
    x, b, y = np.ones(32), np.ones(8), np.empty(32)
    with pytest.raises(ValueError, match="argument 1 holds 248 bytes"):
        module.gk_bias_act_f64(x[:31], b, y, 4, 8, 8, 1, 0.0)
    with pytest.raises(ValueError, match="argument 2"):
        module.gk_bias_act_f64(x, b[:7], y, 4, 8, 8, 1, 0.0)
    with pytest.raises(ValueError, match="touches 35 elements"):  # rows 9 apart
        module.gk_bias_act_f64(x, b, y, 4, 8, 9, 1, 0.0)
    with pytest.raises(ValueError, match="rows 7 elements apart hold 8 columns"):
        module.gk_bias_act_f64(x, b, y, 4, 8, 7, 1, 0.0)
    with pytest.raises(ValueError, match="argument 4 is a count"):
        module.gk_bias_act_f64(x, b, y, -1, 8, 8, 1, 0.0)
    with pytest.raises(ValueError, match="argument 2"):  # int32 labels: half the bytes
        module.gk_xent_f64(x, np.zeros(4, np.int32), np.empty(4), y, 4, 8, 0.0)
    with pytest.raises(ValueError, match="argument 5"):
        module.gk_bias_act_grad_f64(x, x, b, y, np.zeros(7), b.copy(), 4, 8, 8, 1, 0.0, 0)
    with pytest.raises(TypeError, match="argument 1"):  # None only where NULL is taken
        module.gk_sgd_f64(None, x, None, 32, 0.1, 0.0, 0.0, 0.0, 0, 0)
    with pytest.raises(TypeError, match="takes 8 arguments"):
        module.gk_bias_act_f64(x, b, y)
    with pytest.raises(ValueError, match="not aligned"):
        module.gk_bias_act_f64(native.address(x) + 4, b, y, 4, 8, 8, 1, 0.0)


def test_addresses_and_arrays_give_the_same_bits(module, rng, dtype):
    """An argument given as an address (a span of a larger array, as native.py's threads
    pass them) is the array's first element: the same results as the array itself."""
    fn = getattr(module, f"gk_bias_act_grad_{native._SUFFIX[dtype][1:]}")
    g, v = (rng.standard_normal(6 * 40).astype(dtype) for _ in range(2))
    b = rng.standard_normal(40).astype(dtype)
    runs = []
    for convert in (lambda a: a, native.address):
        gx, acc = np.empty_like(g), np.zeros(40)
        arrays = [convert(a) for a in (g, v, b, gx, acc, np.empty(40, dtype))]
        fn(*arrays, 6, 40, 40, ACT_GELU, 0.0, 0)
        runs.append((gx, acc))
    assert np.array_equal(runs[0][0], runs[1][0]) and np.array_equal(runs[0][1], runs[1][1])
    z = (v + np.tile(b, 6)).astype(np.float64)
    want = g * (special.ndtr(z) + z * np.exp(-z * z / 2) / np.sqrt(2 * np.pi))
    assert rel_err(runs[0][0], want) < TOL[dtype] * 10


def test_a_plan_without_a_bias_keeps_the_zeros_it_passes_by_address(module, rng, dtype):
    """A plan without a bias hands the kernel its own -0.0 row by address: the plan keeps
    that array alive (freed, its memory would be reused by the NaN rows made here)."""
    plan = native.plan_bias_act(4, 8, dtype, "tanh", False)
    gc.collect()
    junk = [np.full(32, np.nan, dtype) for _ in range(200)]
    x = rng.standard_normal((4, 8)).astype(dtype)
    y = np.empty_like(x)
    assert plan(x, None, y, 0.0) and len(junk) == 200
    assert rel_err(y, np.tanh(x.astype(np.float64))) < TOL[dtype]


def test_calls_from_many_threads_at_once_each_give_their_own_result(module, rng, dtype):
    """The module releases the GIL while a kernel runs: one-thread plans and passes split
    over the host threads, called from several Python threads at once, each give the
    bits of the same call made alone."""
    x, g = (rng.standard_normal((16, 32)).astype(dtype) for _ in range(2))
    b = rng.standard_normal(32).astype(dtype)
    wide = rng.standard_normal((3, 50_001)).astype(dtype)
    wide_b = rng.standard_normal(50_001).astype(dtype)
    p0, grad, m0 = (rng.standard_normal(300_001).astype(dtype) for _ in range(3))
    forward = native.plan_bias_act(16, 32, dtype, "silu")
    backward = native.plan_bias_act_grad(16, 32, dtype, "gelu", False, True)

    def step():
        y, yw, gx = np.empty_like(x), np.empty_like(wide), np.empty_like(x)
        assert forward(x, b, y, 0.0)
        gb = backward(g, x, b, gx, 0.0)
        native.bias_act(wide, wide_b, yw, "tanh", 0.0)
        p, buf = p0.copy(), m0.copy()
        native.sgd(p, grad, buf, 0.1, 0.9, 0.1, 0.01, True, False)
        return y, gx, gb, yw, p, buf

    alone = step()

    def caller(_i):
        return all(
            all(np.array_equal(a, w) for a, w in zip(step(), alone, strict=True)) for _ in range(10)
        )

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(caller, range(4))) == [True] * 4


def test_all_finite_takes_only_the_buffers_it_reads_right(module, rng):
    """all_finite answers for contiguous float32/float64 (complex) arrays in native byte
    order, C or Fortran, read-only, a 0-d one and an empty one; None, leaving no error
    set, for what it would misread (strides, float16, long double, integers, the other
    byte order, an unaligned buffer) and for objects without a buffer."""
    a = rng.standard_normal((6, 4))
    frozen = a.copy()
    frozen.flags.writeable = False
    taken = [a, np.asfortranarray(a), a.astype(np.float32), a.astype(np.complex64),
             a.astype(np.complex128), frozen, np.array(2.0), np.float64(3.0), a[:0]]  # fmt: skip
    assert [module.all_finite(x) for x in taken] == [True] * len(taken)
    raw = np.zeros(8 * 5, np.uint8)[1:-7].view(np.float64)  # not aligned
    refused = [a[:, ::2], a.astype(np.float16), a.astype(np.longdouble),
               np.arange(4), a.astype(">f8" if sys.byteorder == "little" else "<f8"), raw,
               [1.0, np.nan], None, "1.0"]  # fmt: skip
    assert [module.all_finite(x) for x in refused] == [None] * len(refused)
    assert module.all_finite(np.array([1.0, np.nan])) is False


def test_all_finite_from_many_threads_at_once(module, rng, dtype):
    """all_finite releases the GIL on a long array: Python threads checking arrays at
    once, each with its NaN or inf in another block or none, each get their own answer."""
    n = 3 * 2048 + 5
    arrays = []
    for k in range(8):
        x = rng.standard_normal(n).astype(dtype)
        if k % 4:
            x[int(rng.integers(n))] = (np.nan, np.inf, -np.inf)[k % 4 - 1]
        arrays.append(x)
    want = [bool(np.isfinite(x).all()) for x in arrays]
    assert want.count(True) == 2

    def caller(k):
        return all(module.all_finite(arrays[k]) is want[k] for _ in range(200))

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(caller, range(8))) == [True] * 8


def test_back_to_back_calls_on_more_threads_than_cores_each_run_every_span_once(module, rng):
    """The pool's spans are claimed, not assigned: with more threads than cores a worker
    often wakes after its call is over, or during the next one. Calls of two sizes, one
    after the other, each output kept to the end: every span of every call ran once, on
    that call's arrays (a span lost leaves NaN, a late worker writing an earlier call's
    arrays changes a kept output)."""
    fn = module.gk_bias_act_par_f64
    shapes = [(3, 50_001), (7, 20_011)]
    inputs = [(rng.standard_normal(s), rng.standard_normal(s[1])) for s in shapes]
    want = [np.maximum(x + b, 0.0) for x, b in inputs]
    relu = native.ACTIVATIONS.index("relu")
    kept = []
    for i in range(300):
        (x, b), (rows, cols) = inputs[i % 2], shapes[i % 2]
        y = np.full_like(x, np.nan)
        fn(x, b, y, rows, cols, cols, relu, 0.0, 8, i % 4 < 2)
        kept.append(y)
    assert all(np.array_equal(y, want[i % 2]) for i, y in enumerate(kept))


# -- the build without the module --------------------------------------------------------
needs_cc = pytest.mark.skipif(
    build_native._compiler() is None or sys.platform == "win32", reason="no C compiler"
)


@needs_cc
def test_a_build_without_python_h_goes_on_without_the_module(tmp_path):
    """Where Python's headers are missing the build says so, with the package that has
    them, and returns None (the install goes on; gpukit uses NumPy ufuncs)."""
    log = []
    headers = tmp_path / "include"
    headers.mkdir()
    assert build_native.build(tmp_path / "out", log.append, include=str(headers)) is None
    assert "no Python.h" in log[-1] and "python3-dev" in log[-1]
    assert not (tmp_path / "out" / build_native.MODULE).exists()


@needs_cc
def test_a_compiler_that_fails_leaves_no_module(tmp_path, monkeypatch):
    """Every flag set failing (here a compiler that always fails), the build logs the
    compiler's errors and returns None."""
    monkeypatch.setenv("CC", "false")
    log = []
    assert build_native.build(tmp_path, log.append) is None
    assert "did not compile" in log[-1]
    assert not (tmp_path / build_native.MODULE).exists()


def test_without_the_module_gpukit_computes_the_kernels_with_numpy(monkeypatch, rng, tmp_path):
    """As after a build without a compiler or Python.h: the module is not there, gpukit
    says so quietly (available() is False) and computes the same kernels with NumPy."""
    import gpukit._host as host_package

    # the package's folder as it is without the module: an empty one, once every other
    # submodule is imported (with the module absent from the folder, ``from . import
    # _kernels`` raised a plain ImportError, which warned)
    for found in pkgutil.iter_modules(host_package.__path__):
        if not found.name.startswith("_kernels"):
            importlib.import_module(f"gpukit._host.{found.name}")
    monkeypatch.setattr(host_package, "__path__", [str(tmp_path)])
    monkeypatch.delitem(sys.modules, "gpukit._host._kernels", raising=False)
    monkeypatch.delattr(host_package, "_kernels", raising=False)
    monkeypatch.setattr(native, "_loaded", False)
    monkeypatch.setattr(native, "_lib", None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not built is no error
        assert not native.available()
    x = rng.standard_normal((5, 7))
    b = rng.standard_normal(7)
    assert native.address(x[1:]) == x.ctypes.data + 56
    assert native.plan_bias_act(5, 7, x.dtype, "gelu") is None
    with gk.use_backend("numpy"):
        y = gk.to_numpy(gk.kernels.bias_activation(x, b, "gelu"))
        z = x + b
        assert rel_err(y, z * special.ndtr(z)) < TOL[x.dtype]
        labels = rng.integers(0, 7, 5)
        loss, _ = gk.kernels.softmax_cross_entropy(x, labels)
        shifted = x - x.max(axis=1, keepdims=True)
        want = np.log(np.exp(shifted).sum(axis=1)) - shifted[np.arange(5), labels]
        assert rel_err(gk.to_numpy(loss), want) < TOL[x.dtype]
