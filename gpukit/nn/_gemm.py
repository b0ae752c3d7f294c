"""The layers' matrix products: cuBLAS, or gpukit's own GEMM kernel inside a graph capture.

CuPy refuses every cuBLAS call on a capturing stream (``setStream`` in
cupy_backends/cuda/libs/cublas.pyx raises NotImplementedError "calling cuBLAS API during
stream capture is currently unsupported"), so ``cupy.matmul`` cannot be part of a CUDA
graph. While :func:`capturing` is on, the products of ``Linear`` run on
``gk.kernels.matmul_tiled`` instead, a ``RawKernel`` launch that CuPy records like any
other (float32 only, which :class:`gpukit.nn.graphed.GraphedStep` checks before it
captures). Outside a capture nothing changes: cuBLAS, through ``@`` and ``matmul``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import numpy as np

from .. import _dispatch
from ..kernels._direct import kernel

__all__ = ["capturing", "matmul"]

_capturing: ContextVar[bool] = ContextVar("gpukit_nn_capturing", default=False)


@contextlib.contextmanager
def capturing() -> Iterator[None]:
    """Products inside the block run on the capturable GEMM kernel."""
    token = _capturing.set(True)
    try:
        yield
    finally:
        _capturing.reset(token)


def matmul(a: Any, b: Any, out: Any = None) -> Any:
    """``a @ b`` (``b`` 2-D; ``a``'s leading axes kept), into ``out`` when given."""
    if not _capturing.get():
        if out is None:
            return a @ b
        # a host product into an optimizer's flat buffer without the namespace's dispatch
        xp = np if type(a) is np.ndarray else _dispatch.namespace(a)
        return xp.matmul(a, b, out=out)
    c = kernel(a, "matmul_tiled")(a.reshape(-1, a.shape[-1]), b)
    c = c.reshape(*a.shape[:-1], b.shape[1])
    if out is None:
        return c
    out[...] = c
    return out
