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
    if nbytes == 0:
        # cupy/cuda/pinned_memory.pyx: zero bytes are a NULL pointer, and NumPy given a
        # NULL buffer allocates the (empty) array itself, with zero strides
        return _numpy.ndarray(shape, dtype=dtype, order=order)
    return _numpy.ndarray(shape, dtype=dtype, buffer=mem._buffer(nbytes), order=order)


def empty_like_pinned(a, dtype=None, order="K", subok=None, shape=None):
    import cupy

    if subok is not None:
        raise TypeError("subok is not supported yet")
    # cupyx/_pinned_array.py: the layout rule of cupy.empty_like, in pinned host memory
    from cupy._creation.basic import _new_like_order_and_strides

    dtype = a.dtype if dtype is None else dtype
    shape = (shape,) if isinstance(shape, int) else tuple(a.shape if shape is None else shape)
    order, strides = _new_like_order_and_strides(a, dtype, order, shape)
    nbytes = int(_numpy.prod(shape, dtype=_numpy.int64)) * _numpy.dtype(dtype).itemsize
    mem = cupy.cuda.alloc_pinned_memory(nbytes)
    buf = mem._buffer(nbytes)
    return _numpy.ndarray(shape, dtype=dtype, buffer=buf, strides=strides, order=order)


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
