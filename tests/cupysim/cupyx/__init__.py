"""``cupyx`` (simulated): errstate, pinned host arrays, lapack and scipy on the device."""

from __future__ import annotations

import numpy as _numpy

from cupyx._ufunc_config import errstate, geterr, seterr  # noqa: F401


def empty_pinned(shape, dtype=float, order="C"):
    """An uninitialised NumPy array in pinned memory (cupyx/_pinned_array.py)."""
    import cupy

    shape = (shape,) if isinstance(shape, (int, _numpy.integer)) else tuple(shape)
    nbytes = int(_numpy.prod(shape, dtype=_numpy.int64)) * _numpy.dtype(dtype).itemsize
    mem = cupy.cuda.alloc_pinned_memory(nbytes)
    return _numpy.ndarray(shape, dtype=dtype, buffer=mem._buffer(nbytes), order=order)


def empty_like_pinned(a, dtype=None, order="K", subok=None, shape=None):
    if subok is not None:
        raise TypeError("subok is not supported yet")
    dtype = a.dtype if dtype is None else dtype
    shape = a.shape if shape is None else shape
    order = (
        "F"
        if order in ("F", "f")
        or (order in ("K", "A") and a.flags.f_contiguous and not a.flags.c_contiguous)
        else "C"
    )
    return empty_pinned(shape, dtype, order)


def zeros_pinned(shape, dtype=float, order="C"):
    out = empty_pinned(shape, dtype, order)
    _numpy.copyto(out, 0, casting="unsafe")
    return out


def zeros_like_pinned(a, dtype=None, order="K", subok=None, shape=None):
    out = empty_like_pinned(a, dtype, order, subok, shape)
    _numpy.copyto(out, 0, casting="unsafe")
    return out


def __getattr__(name):
    if name in ("lapack", "scipy"):
        import importlib

        return importlib.import_module(f"cupyx.{name}")
    raise AttributeError(f"module 'cupyx' has no attribute {name!r}")
