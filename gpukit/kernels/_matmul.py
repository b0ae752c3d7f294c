"""The textbook tiled matrix product, a teaching reference next to cuBLAS."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._dispatch import operation
from .._dispatch.capabilities import checked, declare
from .._dispatch.inputs import on_device
from .._runtime import plans as _plans
from .._select.selection import active
from ._checks import PLANS, bind, place

_OP = "gk.kernels.matmul_tiled"
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
    try:
        key = (_OP, active(), type(a), a.dtype, a.shape, type(b), b.dtype, b.shape)
        run = PLANS[key]
    except KeyError:
        run, key = on_device(PLANS, key, (a, b))
        if run is None:
            run, a, b = _plan(key, a, b)
    except (AttributeError, TypeError):  # not keyable: a list, an unhashable attribute
        run, a, b = _plan(None, a, b)
    return run(a, b)


def _plan(key: Any, a: Any, b: Any) -> tuple[Any, Any, Any]:
    """:func:`matmul_tiled`'s checks and placement, all of which follow from the arrays'
    types, dtypes and shapes: its kernel (kept under ``key``) and arrays."""
    since, op = _plans.generation(), _OP
    backend, (pa, pb) = place(op, (a, b), ("a", "b"), (_F32, _F32))
    if pa.ndim != 2 or pb.ndim != 2:
        raise ValueError(
            f"{op}: a and b must be 2-D, got shapes {tuple(pa.shape)} and {tuple(pb.shape)}"
        )
    if pa.shape[1] != pb.shape[0]:
        raise ValueError(
            f"{op}: inner dimensions differ: a has shape {tuple(pa.shape)}, b has shape "
            f"{tuple(pb.shape)}; expected a.shape[1] == b.shape[0]"
        )
    if max(*pa.shape, pb.shape[1]) >= 2**31:
        raise ValueError(
            f"{op}: the kernel indexes with 32-bit ints: dimensions must be < 2**31, got "
            f"shapes {tuple(pa.shape)} and {tuple(pb.shape)}"
        )
    return bind(key, since, backend, "matmul_tiled", (a, b), (pa, pb), (pa, pb)), pa, pb


declare(_OP, checked(_OP, "a", _F32))
