"""cupy.linalg._util: the helper of CuPy's linalg tests (cupy/linalg/_util.py)."""

from __future__ import annotations


def stacked_identity(batch_shape, n, dtype):
    """Identity matrices of order ``n`` stacked in ``batch_shape`` (cupy/linalg/_util.py)."""
    import cupy

    shape = (*batch_shape, n, n)
    idx = cupy.arange(n)
    x = cupy.zeros(shape, dtype)
    x[..., idx, idx] = 1
    return x
