"""A simulated CuPy 14.2 for tests: arrays live on simulated GPUs in host memory.

Put ``tests/cupysim`` first on ``sys.path`` (``python -m pytest --cupy=sim``, or
``PYTHONPATH=tests/cupysim``) and ``import cupy`` loads this package. Configuration:
``cupysim.config`` (``CUPYSIM_*`` variables). What it models and what it cannot:
docs/contributing_gpu.rst.
"""

from __future__ import annotations

import numpy as _numpy
from cupysim import _names
from cupysim import ufunc as _ufunc
from cupysim import wrap as _wrap

from cupy import _core, cuda  # noqa: F401
from cupy._core import core as _corem
from cupy._core.core import ndarray
from cupy._creation.basic import _new_like_order_and_strides

__version__ = "14.2.0"

# -- NumPy's types and constants, as CuPy re-exports them --------------------------------
_OWN_TYPES = {"ndarray", "ufunc", "flatiter", "broadcast", "poly1d", "vectorize"}
for _n in _names.TYPES - _OWN_TYPES:
    globals()[_n] = getattr(_numpy, _n)
# CuPy's own grid and concatenation objects (NumPy's would build NumPy arrays)
_OWN_CONSTANTS = {"c_", "r_", "mgrid", "ogrid"}
for _n in _names.CONSTANTS - _OWN_CONSTANTS:
    globals()[_n] = getattr(_numpy, _n)

# -- functions modelled by hand (creation, copies, cuBLAS products) -----------------------
_BLAS = ("dot", "matmul", "vdot", "inner", "tensordot")
_MANUAL = {
    "array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "copy", "empty",
    "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like", "copyto",
    "astype", "fill_diagonal", "put", "place", "putmask", "meshgrid", *_BLAS,
}  # fmt: skip
for _n in _names.FUNCTIONS - _MANUAL - _names.UFUNCS.keys():
    globals()[_n] = _wrap.function(_n, getattr(_numpy, _n))
# CuPy's ufuncs are cupy.ufunc objects (cupy/_core/_kernel.pyx); aliases are one object
globals().update(_ufunc.make_all())
ufunc = _ufunc.ufunc
for _n in _BLAS:
    globals()[_n] = _wrap.blas(_n, getattr(_numpy, _n), takes_out=_n in ("dot", "matmul"))


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    """Creates an array on the current device (a copy of a device array, across devices too)."""
    return _corem.array(obj, dtype, copy, order, subok, ndmin, blocking)


def asarray(a, dtype=None, order=None, *, copy=None, blocking=False):
    """Converts an object to an array; a device array on another device is copied here."""
    return _corem.array(a, dtype, copy, order, blocking=blocking)


def asanyarray(a, dtype=None, order=None, *, copy=None, blocking=False):
    return _corem.array(a, dtype, copy, order, blocking=blocking)


ascontiguousarray = _corem.ascontiguousarray
asfortranarray = _corem.asfortranarray


def copy(a, order="K"):
    """A copy on the current device (``a.copy(order)``: across devices as CuPy allows)."""
    return a.copy(order=order)


def astype(x, dtype, /, *, copy=True):
    return x.astype(dtype, copy=copy)


def _shape(shape):
    return _corem._get_size(shape)


def empty(shape, dtype=float, order="C"):
    """An uninitialised array on the current device."""
    return _corem._empty(_shape(shape), dtype, order)


def zeros(shape, dtype=float, order="C"):
    """Zeros on the current device (a memset on the current stream)."""
    a = _corem._empty(_shape(shape), dtype, order)
    a.data.memset_async(0, a.nbytes)
    return a


def ones(shape, dtype=float, order="C"):
    a = _corem._empty(_shape(shape), dtype, order)
    a.fill(1)
    return a


def full(shape, fill_value, dtype=None, order="C"):
    if dtype is None:
        dtype = (
            fill_value.dtype if isinstance(fill_value, ndarray) else _numpy.array(fill_value).dtype
        )
    a = _corem._empty(_shape(shape), dtype, order)
    copyto(a, fill_value, casting="unsafe")
    return a


def _like_layout(a, dtype, order, shape):
    # cupy/_creation/basic.py empty_like: 'K' for a non-contiguous a keeps its axis order
    # in a contiguous allocation
    dtype = a.dtype if dtype is None else _numpy.dtype(dtype)
    order, strides = _new_like_order_and_strides(a, dtype, order, shape)
    shape = a.shape if shape is None else _shape(shape)
    if strides is None:
        return _corem._empty(shape, dtype, order)
    memptr = _corem._empty((int(_numpy.prod(shape, dtype=_numpy.int64)),), dtype).data
    return ndarray(shape, dtype, memptr, strides)


def empty_like(prototype, dtype=None, order="K", subok=None, shape=None):
    """An uninitialised array like ``prototype`` on the **current** device (CuPy's rule)."""
    if subok is not None:
        raise TypeError("subok is not supported yet")
    return _like_layout(prototype, dtype, order, shape)


def zeros_like(a, dtype=None, order="K", subok=None, shape=None):
    out = empty_like(a, dtype, order, subok, shape)
    out.data.memset_async(0, out.nbytes)
    return out


def ones_like(a, dtype=None, order="K", subok=None, shape=None):
    out = empty_like(a, dtype, order, subok, shape)
    out.fill(1)
    return out


def full_like(a, fill_value, dtype=None, order="K", subok=None, shape=None):
    out = empty_like(a, dtype, order, subok, shape)
    copyto(out, fill_value, casting="unsafe")
    return out


def copyto(dst, src, casting="same_kind", where=None):
    """Copies ``src`` into ``dst`` with an elementwise kernel (peer-access rule applies)."""
    if not isinstance(dst, ndarray):
        raise TypeError(f"Unsupported type {type(dst)}")
    if isinstance(src, _numpy.ndarray):
        # _manipulation/basic.py copyto: a one-element NumPy array is taken as its scalar
        if src.size != 1:
            raise ValueError("non-scalar numpy.ndarray cannot be used for copyto")
        if not _numpy.can_cast(src, dst.dtype, casting):
            raise TypeError(f"Cannot cast {src.dtype} to {dst.dtype} in {casting} casting mode")
        src = src.squeeze()[()]
    found: list = []
    s = _corem._unwrap(src, found)
    w = _corem._unwrap(where, found)
    target = dst._np
    kwargs = {"casting": casting}
    if where is not None:
        kwargs["where"] = w
    _corem._run("copyto", found, [dst], lambda: _numpy.copyto(target, s, **kwargs), replay=True)


def _inplace(name):
    npfn = getattr(_numpy, name)

    def f(a, /, *args, **kwargs):
        if not isinstance(a, ndarray):
            raise TypeError(f"Unsupported type {type(a)}")
        found: list = []
        rest = [_corem._unwrap(v, found) for v in args]
        k = {key: _corem._unwrap(v, found) for key, v in kwargs.items()}
        target = a._np
        _corem._run(name, found, [a], lambda: npfn(target, *rest, **k), replay=True)

    f.__name__ = f.__qualname__ = name
    return f


fill_diagonal = _inplace("fill_diagonal")
put = _inplace("put")
place = _inplace("place")
putmask = _inplace("putmask")


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    """The array on the host: ``a.get()`` for a device array (waits for the stream)."""
    if isinstance(a, ndarray):
        return a.get(stream=stream, order=order, out=out, blocking=blocking)
    if out is None:
        return _numpy.asarray(a, order=order)
    out[...] = a
    return out


def get_array_module(*args):
    """``cupy`` if any argument is a cupy.ndarray, else ``numpy``."""
    import sys

    for arg in args:
        if isinstance(arg, ndarray):
            return sys.modules[__name__]
    return _numpy


def is_available() -> bool:
    return cuda.is_available()


_default_memory_pool = cuda.MemoryPool()
_default_pinned_memory_pool = cuda.PinnedMemoryPool()
cuda.set_allocator(_default_memory_pool.malloc)
cuda.set_pinned_memory_allocator(_default_pinned_memory_pool.malloc)


def get_default_memory_pool():
    """The device memory pool CuPy allocates from (per device)."""
    return _default_memory_pool


def get_default_pinned_memory_pool():
    return _default_pinned_memory_pool


from cupy import fft, linalg, random  # noqa: E402, F401
from cupy._creation.ranges import meshgrid, mgrid, ogrid  # noqa: E402, F401
from cupy._indexing.generate import c_, r_  # noqa: E402, F401

# The kernel classes come from the kernel-execution half (cupy/_core/_kernel.py, raw.py).
try:
    from cupy._core._kernel import ElementwiseKernel  # noqa: F401
except ImportError:
    pass
try:
    from cupy._core._reduction import ReductionKernel  # noqa: F401
except ImportError:
    pass
try:
    from cupy._core.raw import RawKernel, RawModule  # noqa: F401
except ImportError:
    pass


def __getattr__(name):
    if name == "cublas":
        import importlib

        return importlib.import_module("cupy.cublas")
    raise AttributeError(f"module 'cupy' has no attribute {name!r}")
