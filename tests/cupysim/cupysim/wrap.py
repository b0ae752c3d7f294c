"""NumPy functions run the way CuPy runs its own: the simulated module-level API.

Each CuPy function the simulator does not model by hand is NumPy's, wrapped by
:func:`function`: simulated arrays are unwrapped (a NumPy array is refused as
cupy/_core/_scalar.pyx refuses it: ``TypeError: Unsupported type``), the result is
computed by NumPy, and NumPy's result becomes CuPy's (views stay views of the input on its
device; new values are arrays on the current device, produced by one "kernel" that follows
CuPy's peer-access rule and the stream checker). Reductions give 0-d arrays, as CuPy's do.

:func:`blas` runs cuBLAS-backed products (dot, matmul, ...): on a GPU their operands are
passed to cuBLAS as raw pointers on the current device (``tensordot_core``), so the
simulator requires them there (cupysim.placement) and records the compute type asked for.
"""

from __future__ import annotations

import numpy as np
from cupy._core import _routines_linalg as _compute
from cupy._core import core

from . import libs, placement, records

#: Functions whose result is metadata, not device data (Python values pass through).
META = frozenset({
    "result_type", "can_cast", "promote_types", "min_scalar_type", "common_type", "ndim",
    "shape", "size", "isscalar", "iscomplexobj", "isrealobj", "issubdtype",
    "may_share_memory", "shares_memory", "broadcast_shapes", "get_printoptions",
    "set_printoptions", "printoptions", "binary_repr", "base_repr", "format_float_positional",
    "format_float_scientific", "array2string", "array_repr", "array_str", "isdtype",
    "mintypecode", "typename", "diag_indices", "tril_indices", "triu_indices",
    "ndindex", "save", "savez", "savez_compressed", "savetxt",
})  # fmt: skip

#: Functions whose output size depends on the data: CuPy reads a count back (a sync).
SYNC = frozenset({
    "nonzero", "flatnonzero", "argwhere", "unique", "unique_all", "unique_counts",
    "unique_inverse", "unique_values", "extract", "compress", "trim_zeros", "intersect1d",
    "union1d", "setdiff1d", "setxor1d",
})  # fmt: skip


def function(name: str, npfn, *, meta: bool | None = None, sync: bool | None = None):
    meta = name in META if meta is None else meta
    sync = name in SYNC if sync is None else sync

    def f(*args, **kwargs):
        return core._apply(name, npfn, args, kwargs, meta=meta, sync=sync)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"CuPy's ``{name}`` (computed by :func:`numpy.{name}` on the simulated device)."
    return f


def _is_gemm(res, found) -> bool:
    return np.ndim(res) > 0 and all(x.dtype.kind in "fc" for x in found) and len(found) >= 2


def blas(name: str, npfn, *, takes_out: bool = True):
    """A cuBLAS product: operands on the current device, TF32 requests recorded."""

    def compute(args, out, kwargs):
        found: list = []
        a = [core._unwrap(v, found) for v in args]
        res = npfn(*a, **kwargs)
        if _is_gemm(res, found):
            libs.require("cublas")
            dev = placement.require_current("cuBLAS", name, found)
            dtype = np.result_type(*(x.dtype for x in found))
            if dtype.char in "fF":
                batched = name == "matmul" and max(x.ndim for x in found) > 2
                tf32 = (not batched) and _compute.get_compute_type(
                    dtype
                ) == _compute.COMPUTE_TYPE_TF32
                routine = "gemmStridedBatched" if batched else "gemm"
                records.record_gemm(routine, dtype, np.shape(res), tf32, dev)
            library = True
        else:
            # a scalar result: CuPy reduces with an elementwise/reduction kernel instead
            library = False
        if out is None:
            return core._wrap(name, res, found, library=library)
        if not isinstance(out, core.ndarray):
            raise TypeError("out must be a cupy.ndarray")
        if out.shape != np.shape(res):
            raise ValueError("Output array has an invalid size")
        if library:
            placement.require_current("cuBLAS", name, [out])
        core._run(
            name,
            found,
            [out],
            lambda: out._np.__setitem__(..., res),
            kind="library" if library else "elementwise",
        )
        return out

    if takes_out:

        def f(*args, out=None, **kwargs):
            return compute(args, out, kwargs)

    else:

        def f(*args, **kwargs):
            return compute(args, None, kwargs)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"CuPy's ``{name}`` (cuBLAS on the current device; values by NumPy)."
    return f
