"""cupy.linalg._util: the one helper CuPy's linalg tests import from it."""

from __future__ import annotations


def stacked_identity(batch_shape, n, dtype):
    """``batch_shape`` copies of the order-``n`` identity (cupy/linalg/_util.py)."""
    import cupy

    eye = cupy.eye(n, dtype=dtype)
    return cupy.ascontiguousarray(cupy.broadcast_to(eye, (*batch_shape, n, n)))
