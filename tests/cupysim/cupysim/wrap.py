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

import warnings

import numpy as np
from cupy._core import _routines_linalg as _compute
from cupy._core import core
from cupy.cuda import device as _device

from . import libs, mathmode, placement, records

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
#: Functions that are one of SYNC's when given one argument: ``where(condition)`` is
#: ``nonzero(condition)`` (cupy/_sorting/search.py ``where``).
SYNC_ALONE = frozenset({"where"})


#: CuPy functions whose body is ``return a.<method>(...)`` with no type check, so a list or
#: tuple fails as Python fails on the missing method (cupy/_math/sumprod.py sum, prod;
#: _statistics/meanvar.py mean, var, std; _statistics/order.py amin, amax, ptp;
#: _sorting/search.py argmax, argmin; _math/misc.py clip; _manipulation/shape.py reshape,
#: ravel; _manipulation/transpose.py swapaxes, transpose; _indexing/indexing.py take,
#: diagonal; _sorting/sort.py argsort, sort).
METHOD_CALLS = {
    "sum": "sum", "prod": "prod", "mean": "mean", "var": "var", "std": "std", "amin": "min",
    "amax": "max", "min": "min", "max": "max", "ptp": "ptp", "argmax": "argmax",
    "argmin": "argmin", "clip": "clip", "reshape": "reshape", "ravel": "ravel",
    "swapaxes": "swapaxes", "transpose": "transpose", "take": "take", "diagonal": "diagonal",
    "argsort": "argsort", "sort": "copy",
}  # fmt: skip
#: Functions starting with ``_util.check_array(a, arg_name='a')`` (cupy/_util.pyx):
#: _sorting/search.py nonzero, flatnonzero, argwhere; _logic/truth.py all, any.
CHECK_ARRAY = frozenset({"nonzero", "flatnonzero", "argwhere", "all", "any"})
#: Functions whose first argument is typed ``_ndarray_base`` in Cython
#: (cupy/_core/_routines_math.pyx scan_core, called by _math/sumprod.py cumsum, cumprod).
TYPED_ARRAY = frozenset({"cumsum", "cumprod"})


def _check_first(name: str, a) -> None:
    if isinstance(a, core.ndarray):
        return
    if name in CHECK_ARRAY:
        raise TypeError(f"'a' must be a cupy.ndarray object, not {type(a)}.")
    if name in TYPED_ARRAY:
        raise TypeError(
            "Argument 'a' has incorrect type (expected cupy._core.core._ndarray_base, "
            f"got {type(a).__name__})"
        )
    method = METHOD_CALLS.get(name)
    if method is not None and not hasattr(a, method):
        raise AttributeError(f"'{type(a).__name__}' object has no attribute '{method}'")


def _check_ufunc_inputs(args, nin: int) -> None:
    # cupy/_core/_kernel.pyx _preprocess_args -> _scalar.pyx: each input is a cupy.ndarray
    # or a scalar; a list or tuple is "Unsupported type" (NumPy would convert it)
    for v in args[:nin]:
        if isinstance(v, (list, tuple)):
            raise TypeError(f"Unsupported type {type(v)}")


def function(name: str, npfn, *, meta: bool | None = None, sync: bool | None = None):
    meta = name in META if meta is None else meta
    sync = name in SYNC if sync is None else sync
    nin = npfn.nin if isinstance(npfn, np.ufunc) else 0
    first = name in METHOD_CALLS or name in CHECK_ARRAY or name in TYPED_ARRAY

    def f(*args, **kwargs):
        if nin:
            _check_ufunc_inputs(args, nin)
        if first and (args or "a" in kwargs):
            _check_first(name, args[0] if args else kwargs["a"])
        alone = name in SYNC_ALONE and len(args) + len(kwargs) == 1
        return core._apply(name, npfn, args, kwargs, meta=meta, sync=sync or alone)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"CuPy's ``{name}`` (computed by :func:`numpy.{name}` on the simulated device)."
    return f


def _is_gemm(res, found) -> bool:
    return np.ndim(res) > 0 and all(x.dtype.kind in "fc" for x in found) and len(found) >= 2


def _check_out(name: str, found, res, out, casting: str) -> None:
    """CuPy's rules for a product's ``out=``, checked before computing."""
    if name == "dot":
        # _routines_linalg.pyx dot: exactly the result type, C-contiguous
        if np.result_type(*(x.dtype for x in found)) != out.dtype:
            raise ValueError("Not supported dtype combination.")
        if not out.flags.c_contiguous:
            raise ValueError("Output array must be C-contiguous")
    elif name == "matmul":
        # _gufuncs.py _setup_operands -> _dtype.pyx _raise_if_invalid_cast: any layout;
        # the result must cast to out's dtype under ``casting`` (default same_kind), and an
        # allowed complex-to-real cast warns
        src, dst = np.result_type(res), out.dtype
        if casting == "same_kind" and src.kind == dst.kind:
            return
        if not np.can_cast(src, dst, casting):
            raise TypeError(
                f"Cannot cast out dtype from {src!r} to {dst!r} according to the rule '{casting}'"
            )
        if casting == "unsafe" and src.kind == "c" and dst.kind in "iuf":
            warnings.warn(
                "Casting complex values to real discards the imaginary part",
                np.exceptions.ComplexWarning,
                stacklevel=4,
            )


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
                # the 2-D path asks for CUBLAS_COMPUTE_32F_FAST_TF32 under a TF32 compute
                # type; both paths compute in CUBLAS_COMPUTE_32F otherwise, where the
                # handle's math mode decides (cupysim.mathmode)
                fast = (not batched) and _compute.get_compute_type(
                    dtype
                ) == _compute.COMPUTE_TYPE_TF32
                tf32 = fast or mathmode.allows_tf32(_device.get_cublas_handle())
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
        _check_out(name, found, res, out, kwargs.get("casting", "same_kind"))
        if out.shape != np.shape(res):
            raise ValueError("Output array has an invalid size")
        if library:
            placement.require_current("cuBLAS", name, [out])
        core._run(
            name,
            found,
            [out],
            lambda: np.copyto(out._np, res, casting="unsafe"),  # the cast was checked
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
