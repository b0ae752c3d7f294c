"""The textbook tiled matrix product, a teaching reference next to cuBLAS."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._dispatch import operation
from .._dispatch.capabilities import checked, declare
from ._checks import place

_F32 = (np.dtype(np.float32),)


@operation("gk.kernels.matmul_tiled")
def matmul_tiled(a: Any, b: Any) -> Any:
    """``a @ b`` by a shared-memory-tiled, register-blocked CUDA kernel (float32).

    On the GPU each 256-thread block computes a 128x128 (or, for small outputs,
    64x64) tile of the product from 8-deep tiles of ``a`` and ``b`` staged in shared
    memory, each thread an 8x8 (4x4) block held in registers. It exists to teach
    and to check our kernel skills against cuBLAS (``docs/kernels.rst`` has the
    figures), not to replace ``a @ b``. The numpy backend computes ``a @ b``.

    Parameters
    ----------
    a : array, float32, shape (m, k)
    b : array, float32, shape (k, n)

    Returns
    -------
    array, float32, shape (m, n)

    Raises
    ------
    ValueError
        An operand not 2-D, or inner dimensions that differ.
    TypeError
        An operand not float32.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> gk.kernels.matmul_tiled(a, np.ones((3, 1), dtype=np.float32))
    array([[ 3.],
           [12.]], dtype=float32)
    """
    op = "gk.kernels.matmul_tiled"
    backend, (a, b) = place(op, (a, b), ("a", "b"), (_F32, _F32))
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(
            f"{op}: a and b must be 2-D, got shapes {tuple(a.shape)} and {tuple(b.shape)}"
        )
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"{op}: inner dimensions differ: a has shape {tuple(a.shape)}, b has shape "
            f"{tuple(b.shape)}; expected a.shape[1] == b.shape[0]"
        )
    if max(*a.shape, b.shape[1]) >= 2**31:
        raise ValueError(
            f"{op}: the kernel indexes with 32-bit ints: dimensions must be < 2**31, got "
            f"shapes {tuple(a.shape)} and {tuple(b.shape)}"
        )
    return backend.kernel("matmul_tiled")(a, b)


declare("gk.kernels.matmul_tiled", checked("gk.kernels.matmul_tiled", "a", _F32))
