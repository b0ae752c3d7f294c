"""CuPy compiles every kernel with ``-ftz=true`` (cupy/cuda/compiler.py,
``_compile_with_cache_cuda``): single-precision subnormals are read and written as zeros,
double precision keeps them, and a copy keeps the bits (cupysim/ftz.py)."""

from __future__ import annotations

import numpy as np
import pytest

TINY32 = float(np.finfo(np.float32).smallest_subnormal)


@pytest.fixture
def ftz():
    from cupysim import ftz

    if not ftz.MODELLED:
        pytest.skip("flush-to-zero is modelled on x86-64 Linux only")
    return ftz


def _sub32(cp):
    return cp.asarray(np.array([1000 * TINY32, -1000 * TINY32, 1e-30], np.float32))


def test_ufuncs_flush_single_precision_subnormals(cp, ftz):
    x = _sub32(cp)
    doubled = cp.asnumpy(x * 2)
    assert doubled.tolist() == [0.0, 0.0, np.float32(2e-30)]
    assert np.signbit(doubled[1])  # a zero of the same sign
    assert cp.asnumpy(x > 0).tolist() == [False, False, True]  # compared as zeros
    assert cp.asnumpy(x.astype(np.float64))[:2].tolist() == [0.0, 0.0]  # cvt.ftz
    assert float(cp.sum(x[:2])) == 0.0


def test_double_precision_and_copies_keep_subnormals(cp, ftz):
    y = cp.asarray(np.array([1e-310, -1e-310]))
    assert cp.asnumpy(y * 2).tolist() == [2e-310, -2e-310]
    x = _sub32(cp)
    assert np.array_equal(cp.asnumpy(x.copy()), cp.asnumpy(x))  # no arithmetic, no flush
    assert cp.asnumpy(x)[0] == np.float32(1000 * TINY32)


def test_compiled_kernels_flush_on_every_worker_and_restore_the_mode(cp, ftz):
    """Blocks run on a pool of host threads that outlive launches: each sets the mode for
    a single-precision launch and puts it back, so a double launch after it keeps its
    subnormals, and so does NumPy on the launching thread."""
    double = cp.ElementwiseKernel("T a", "T b", "b = a * 2", "cupysim_test_twice")
    n = 1 << 16  # many blocks, spread over the workers
    x32 = cp.full(n, 1000 * TINY32, dtype=np.float32)
    x64 = cp.full(n, 1e-310)
    for _ in range(3):
        assert not cp.asnumpy(double(x32)).any()
        assert (cp.asnumpy(double(x64)) == 2e-310).all()
    assert np.float32(1000 * TINY32) * np.float32(2) != 0  # the host's own mode is intact


def test_libraries_are_not_flushed(cp, ftz):
    # cuBLAS is not compiled by CuPy: a float32 product keeps a subnormal result
    a = cp.asarray(np.full((2, 2), 1e-20, np.float32))
    b = cp.asarray(np.full((2, 2), 1e-20, np.float32))
    assert (cp.asnumpy(a @ b) > 0).all()
