"""NumPy's own BLAS ``axpy`` (gpukit_numpy.blas), which plain SGD steps update with.

Results are compared with float64 references on fresh random inputs; the binding is
checked to be refused when wrong, to serve many threads at once, and to work in a forked
child. Where NumPy's BLAS has no routine under a known name, ``axpy`` is None and the
tests of the fallback still run.
"""

from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import gpukit as gk
from gpukit_numpy import _library, blas

from helpers import rel_err, terms_err

DTYPES = [np.float32, np.float64]
EPS = {np.float32: 1e-6, np.float64: 1e-15}


@pytest.fixture
def fresh_binding(monkeypatch):
    """An empty cache of bound routines, restored afterwards."""
    monkeypatch.setattr(blas._bound, "found", {})


def _available(dtype):
    f = blas.axpy(dtype)
    if f is None:
        pytest.skip(f"NumPy's BLAS has no {np.dtype(dtype)} axpy under a known name")
    return f


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 7, 300_001])
def test_axpy_matches_a_float64_reference(rng, dtype, n):
    f = _available(dtype)
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    alpha = float(rng.standard_normal())
    y64, ax64 = y.astype(np.float64), np.float64(dtype(alpha)) * x.astype(np.float64)
    f(alpha, x, y)
    assert y.dtype == dtype
    # judged against the terms' magnitudes: y + alpha x may cancel (one element, n = 1)
    assert n == 0 or terms_err(y, y64 + ax64, np.abs(y64) + np.abs(ax64)) < 4 * EPS[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
def test_axpy_reads_a_read_only_x_and_offset_views(rng, dtype):
    """The routine is handed each array's own first element: a read-only ``x`` (no
    writeable buffer to point at) and views starting inside a larger array."""
    f = _available(dtype)
    xs, ys = rng.standard_normal(40).astype(dtype), rng.standard_normal(40).astype(dtype)
    xs.flags.writeable = False
    x, y = xs[3:20], ys[7:24]
    alpha = float(rng.standard_normal())
    y64 = ys.astype(np.float64)
    ax64 = np.float64(dtype(alpha)) * x.astype(np.float64)
    f(alpha, x, y)
    want = y64.copy()
    want[7:24] += ax64
    scale = np.abs(y64)
    scale[7:24] += np.abs(ax64)
    assert terms_err(ys, want, scale) < 4 * EPS[dtype]  # outside the view: unchanged


def test_other_dtypes_have_no_routine():
    swapped = np.dtype(np.float64).newbyteorder("S")  # BLAS reads native floats only
    for dtype in (np.complex128, np.int32, swapped):
        assert blas.axpy(dtype) is None


def test_a_wrong_binding_is_refused(fresh_binding, monkeypatch):
    """The check on a small exact problem: a routine that computes something else (here,
    one that ignores alpha, as a wrongly bound scalar would) is never used."""

    def wrong(routine):
        def call(alpha, x, y):
            y += x

        return call

    monkeypatch.setattr(blas, "_caller", wrong)
    assert blas.axpy(np.float64) is None


def test_32_bit_platforms_get_no_routine(fresh_binding, monkeypatch):
    """64-bit integer arguments would land in the wrong places of an LP64 routine there."""
    monkeypatch.setattr(blas.ctypes, "sizeof", lambda t: 4)
    assert blas.axpy(np.float64) is None


def test_the_module_imports_without_fork(monkeypatch):
    """Windows has no os.register_at_fork: the module (and with it every numpy kernel)
    must import all the same."""
    import importlib

    monkeypatch.delattr(_library.os, "register_at_fork")
    try:
        importlib.reload(_library)  # raised AttributeError before the guard
        importlib.reload(blas)
        p = np.ones(4)
        with gk.use_backend("numpy"):
            gk.kernels.sgd_update(p, np.full(4, 2.0), lr=0.5)
        assert p.tolist() == [0.0] * 4
    finally:
        monkeypatch.undo()
        importlib.reload(_library)
        importlib.reload(blas)


def test_no_known_name_means_no_routine(fresh_binding, monkeypatch):
    monkeypatch.setattr(blas, "_NAMES", ("gk_no_such_{}axpy",))
    assert blas.axpy(np.float32) is None


@pytest.mark.parametrize("dtype", DTYPES)
def test_threads_binding_and_updating_at_once(fresh_binding, rng, dtype):
    """The first calls race to bind; every thread gets the one routine and right answers."""
    threads, rounds = 16, 20
    data = [(rng.standard_normal(50_000).astype(dtype), rng.standard_normal(50_000).astype(dtype))
            for _ in range(threads)]  # fmt: skip
    want = [y.astype(np.float64) + rounds * 0.5 * x.astype(np.float64) for x, y in data]
    start = threading.Barrier(threads)

    def work(i):
        start.wait()
        f = blas.axpy(dtype)
        x, y = data[i]
        for _ in range(rounds):
            if f is None:
                y += dtype(0.5) * x
            else:
                f(0.5, x, y)
        return f

    with ThreadPoolExecutor(threads) as pool:  # a worker's exception re-raises here
        got = list(pool.map(work, range(threads)))
    assert len({id(f) for f in got}) == 1
    for (_, y), w in zip(data, want, strict=True):
        assert rel_err(y, w) < 50 * EPS[dtype]


def _child_update(n):
    x, y = np.arange(n, dtype=np.float32), np.ones(n, dtype=np.float32)
    f = blas.axpy(np.float32)
    if f is None:
        return None
    f(0.5, x, y)
    return float(np.abs(y - (1 + 0.5 * np.arange(n))).max())


def test_axpy_in_forked_children(rng):
    """Bound and run on NumPy's BLAS threads in the parent, then in forked children."""
    f = _available(np.float32)
    x, y = rng.standard_normal(300_000).astype(np.float32), np.zeros(300_000, np.float32)
    f(1.0, x, y)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        errors = pool.map_async(_child_update, [300_000, 300_001]).get(timeout=60)
    assert errors == [0.0, 0.0]  # halves and integers up to 2**17 are exact in float32


@pytest.mark.parametrize("dtype", DTYPES)
def test_sgd_update_with_and_without_blas_agree_with_float64(rng, monkeypatch, dtype):
    """gk.kernels.sgd_update: ``param -= lr * grad`` on BLAS and on ufuncs (several
    blocks), both against float64."""
    import gpukit_numpy.kernels as reference

    n = 600_000
    p0, g = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    lr = float(rng.uniform(0.001, 0.1))
    want = p0.astype(np.float64) - np.float64(dtype(lr)) * g.astype(np.float64)
    with gk.use_backend("numpy"):
        p = p0.copy()
        gk.kernels.sgd_update(p, g, lr=lr)
        assert rel_err(p, want) < 4 * EPS[dtype]
        monkeypatch.setattr(reference._blas, "axpy", lambda dtype: None)
        p = p0.copy()
        gk.kernels.sgd_update(p, g, lr=lr)
        assert rel_err(p, want) < 4 * EPS[dtype]


def test_an_sgd_step_with_an_overlapping_gradient_is_numpys(rng):
    """BLAS does not guard against overlap, ufuncs do. gk.kernels.sgd_update refuses
    overlapping arrays; an optimizer step, which calls the kernel without re-checking,
    updates a parameter whose gradient shares its memory (not the same array) as NumPy
    computes ``p - lr * g`` of the inputs."""
    buf = rng.standard_normal(1001)
    with gk.use_backend("numpy"):
        p = gk.nn.Parameter(buf[1:])
        p.grad = buf[:-1]  # each entry read after the one before it was written
        want = p.data - 0.25 * p.grad
        gk.optim.SGD([p], lr=0.25).step()
    assert rel_err(p.data, want) < 1e-15


@pytest.mark.parametrize("dtype", DTYPES)
def test_sgd_with_lr_zero_still_propagates_nan(dtype):
    """OpenBLAS's axpy returns early for alpha = 0, so NaN and inf in the gradient never
    reached the parameter; ``p - 0 * g`` is NaN there, on the ufunc path, in the CUDA
    kernel and in torch.optim.SGD."""
    p = np.ones(3, dtype)
    with gk.use_backend("numpy"), np.errstate(invalid="ignore"):  # inf * 0, as NumPy warns
        gk.kernels.sgd_update(p, np.array([np.nan, np.inf, 1.0], dtype), lr=0.0)
    assert np.isnan(p[:2]).all() and p[2] == 1


def test_the_reference_update_refuses_a_read_only_parameter(rng):
    """Called directly (the public function checks first), the NumPy reference raises on a
    read-only parameter as its ufuncs do, rather than writing through BLAS."""
    import gpukit_numpy.kernels as reference

    p, g = rng.standard_normal(100), rng.standard_normal(100)
    p.flags.writeable = False
    before = p.copy()
    with pytest.raises(ValueError, match="read-only"):
        reference.sgd_update(p, g, None, 0.1, 0.0, 0.0, False, 0.0, False)
    assert np.array_equal(p, before)


@pytest.mark.parametrize("read_only", ["param", "exp_avg", "exp_avg_sq"])
def test_the_reference_adam_refuses_read_only_state(rng, read_only):
    """The compiled Adam pass checks nothing itself: a read-only array it would write goes
    to the ufunc path, which raises, and nothing is written."""
    import gpukit_numpy.kernels as reference

    arrays = {k: rng.standard_normal(100) for k in ("param", "exp_avg", "exp_avg_sq")}
    arrays["exp_avg_sq"] **= 2
    arrays[read_only].flags.writeable = False
    before = {k: v.copy() for k, v in arrays.items()}
    with pytest.raises(ValueError, match="read-only"):
        reference.adam_update(
            arrays["param"], rng.standard_normal(100), arrays["exp_avg"], arrays["exp_avg_sq"],
            1, 0.1, 0.9, 0.999, 1e-8, 0.0, False,
        )  # fmt: skip
    assert all(np.array_equal(arrays[k], before[k]) for k in arrays)
