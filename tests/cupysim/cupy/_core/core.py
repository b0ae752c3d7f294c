"""``cupy.ndarray`` on simulated devices.

An array is a NumPy view (``_np``) of the host memory standing in for its device
allocation, the ``MemoryPointer`` it was allocated as (``data``) and its device. Values are
computed with NumPy; what CuPy would launch as a kernel goes through :func:`_run`:

* operands on another device follow CuPy's peer-access rule (cupy/_core/_kernel.pyx
  ``_check_peer_access``: ValueError without peer access, ``PerformanceWarning`` with it);
* the access is checked and recorded by the happens-before checker on the current stream
  (cupysim/streams.py);
* new arrays are allocated from the current allocator on the **current** device, as CuPy's
  ``_ndarray_init`` does.

A NumPy result that is a view of an input stays a view of it, on the input's device, with
no launch (CuPy's views: reshape, transpose, slicing, broadcast_to, ...).
"""

from __future__ import annotations

import functools
import operator
import warnings

import numpy as np
from cupysim import capture as _capture
from cupysim import defer as _defer
from cupysim import devices as _devices
from cupysim import ftz as _ftz
from cupysim import hostcopy as _hostcopy
from cupysim import libs as _libs
from cupysim import streams as _streams
from cupysim import tracing as _trace
from cupysim.config import config as _config
from cupysim.runtime import check_peer_access as _check_peer_access

from cupy._core.flags import Flags as _Flags


def _memory():
    from cupy.cuda import memory

    return memory


# -- creation helpers -----------------------------------------------------------------------
def _contiguous_strides(shape, itemsize: int, order: str) -> tuple[int, ...]:
    # internal.pyx get_contiguous_strides_inplace(zeros_for_zerosize=True), as NumPy 1.23+:
    # a zero-size array has all strides 0
    if any(int(n) == 0 for n in shape):
        return (0,) * len(shape)
    strides = []
    step = itemsize
    dims = list(shape) if order == "F" else list(reversed(shape))
    for n in dims:
        strides.append(step)
        step *= max(int(n), 1)
    return tuple(strides) if order == "F" else tuple(reversed(strides))


def _np_over(mp, shape, dtype, strides) -> np.ndarray:
    storage = mp.mem._storage
    if storage is None or storage.host is None:
        if any(n == 0 for n in shape):
            # a buffer of its own, so that a view of an empty array is told from a new one
            # (_view_source)
            return np.ndarray(shape, dtype, buffer=np.empty(0, np.uint8), strides=strides)
        raise RuntimeError(f"simulator bug: {mp.ptr:#x} has no host storage ({mp.mem!r})")
    offset = mp.ptr - storage.ptr
    if all(n > 0 for n in shape):
        # CuPy builds such an array and a kernel touching it faults (cudaErrorIllegalAddress)
        # or corrupts a neighbour; over host memory it would corrupt the process, so the
        # simulator refuses the array itself
        lo = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s < 0)
        hi = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s > 0)
        if lo < 0 or hi + np.dtype(dtype).itemsize > storage.host.nbytes:
            raise ValueError(
                f"cupysim: an array of shape {tuple(shape)} and strides {tuple(strides)} at "
                f"{mp.ptr:#x} reaches outside its memory ({storage.host.nbytes} bytes at "
                f"{storage.ptr:#x}); on a GPU its accesses would be illegal"
            )
    return np.ndarray(shape, dtype, buffer=storage.host, offset=offset, strides=strides)


def _make(view: np.ndarray, mp, dev: int, base=None, cls=None) -> ndarray:
    a = object.__new__(ndarray if cls is None else cls)
    _fill(a, view, mp, dev, base)
    return a


def _fill(a: _ndarray_base, view: np.ndarray, mp, dev: int, base) -> None:
    """Set a new array's members through the base class's own slots, as CuPy writes its
    C fields: past ``_ndarray_base.__setattr__`` (a Python call per member would make
    every array the simulator creates costlier than CuPy's) and past any property a
    subclass defines under a member's name."""
    _set_view(a, view)
    _SLOTS["data"](a, mp)
    _SLOTS["_dev"](a, dev)
    _SLOTS["base"](a, base)


def _set_view(a: _ndarray_base, view: np.ndarray) -> None:
    """``a``'s view and the metadata kept beside it."""
    _SLOTS["_npv"](a, view)
    _SLOTS["dtype"](a, view.dtype)
    _SLOTS["shape"](a, view.shape)


def _as_subtype(a: ndarray, subtype, obj) -> ndarray:
    """``a`` as an instance of the ndarray subclass ``subtype`` (core.pyx ``_ndarray_init``
    with a subtype: ``__array_finalize__(obj)`` is called on it)."""
    v = _make(a._npv, a.data, a._dev, a.base, subtype)
    v.__array_finalize__(obj)
    return v


def _normalize_order(order, allow_k: bool = True) -> str:
    """internal.pyx ``_normalize_order``: only the first character counts, in either case."""
    c = "C" if len(order) == 0 else order[0].upper()
    if c == "K" and not allow_k:
        raise ValueError("order 'K' is not permitted")
    if c not in "KACF":
        raise ValueError("order not understood")
    return c


def _check_not_bool(x) -> None:
    # internal.pyx _check_not_bool: a boolean is not a dimension
    if isinstance(x, (bool, np.bool_)) or (
        isinstance(x, np.ndarray) and x.shape == () and x.dtype == np.bool_
    ):
        raise TypeError("an integer is required")


def _get_size(size) -> tuple[int, ...]:
    """internal.pyx ``get_size``: a shape is an integer or a sequence of integers (each
    converted as Cython converts to Py_ssize_t: ``__index__``, so 1.0 is a TypeError)."""
    if size is None:
        raise TypeError("Use () not None as shape arguments")
    if hasattr(size, "__getitem__") and not isinstance(size, dict):  # PySequence_Check
        try:
            dims = tuple(size)
        except TypeError:
            dims = (size,)
    else:
        dims = (size,)
    for x in dims:
        _check_not_bool(x)
    return tuple(operator.index(x) for x in dims)


def _empty(shape, dtype, order: str | None = "C") -> ndarray:
    """A new uninitialised array on the current device (``_ndarray_init``)."""
    dtype = np.dtype(dtype)
    if dtype.byteorder == ">":  # _dtype.pyx check_supported_dtype: new arrays are native
        raise ValueError(f"Unsupported dtype {dtype} with big-endian byte-order")
    _check_dtype(dtype)
    shape = tuple(int(n) for n in shape)
    # core.pyx _ndarray_base._init: C strides for 'C' (or None), F strides for any other
    # order _normalize_order accepts ('F', and 'A'/'K' too)
    order = "C" if order is None or _normalize_order(order) == "C" else "F"
    strides = _contiguous_strides(shape, dtype.itemsize, order)
    nbytes = dtype.itemsize * int(np.prod(shape, dtype=np.int64))
    mp = _memory().alloc(nbytes)
    return _make(_np_over(mp, shape, dtype, strides), mp, mp.device_id)


def _empty_like_layout(r: np.ndarray) -> ndarray:
    """A new array on the current device laid out as NumPy's result ``r`` when dense."""
    if r.flags.c_contiguous or r.ndim < 2:
        return _empty(r.shape, r.dtype, "C")
    if r.flags.f_contiguous:
        return _empty(r.shape, r.dtype, "F")
    if all(s > 0 for s in r.strides) and r.size and r.nbytes == _span(r):
        a = _empty((r.size,), r.dtype)
        return _make(_np_over(a.data, r.shape, r.dtype, r.strides), a.data, a._dev)
    return _empty(r.shape, r.dtype, "C")


def _span(v: np.ndarray) -> int:
    lo = hi = 0
    for n, s in zip(v.shape, v.strides, strict=True):
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return hi - lo + v.itemsize


#: The types CuPy has a C name for (_scalar.pyx get_typename).
_TYPE_CHARS = frozenset("?bhilqpBHILQPefdFD")


def _check_dtype(dtype: np.dtype) -> None:
    """_dtype.pyx ``check_supported_dtype``: numeric types, and void/structured types of
    bytes (no subarray, not empty, no references); anything else is a ValueError. (Host
    data in big-endian order is converted on upload; a new array must be native, _empty.)"""
    if dtype.char in _TYPE_CHARS:
        return
    if dtype.kind == "V" and dtype.subdtype is None and dtype.itemsize != 0:
        if dtype.hasobject:
            raise ValueError(
                f"Unsupported dtype {dtype} because it contains references which cannot be "
                "supported by CuPy."
            )
        return
    raise ValueError(f"Unsupported dtype {dtype}")


# -- running "kernels" ----------------------------------------------------------------------
def _run(
    name: str, reads, writes, body=None, *, kind: str = "elementwise", returns=False, replay=None
):
    """Launch ``body`` as a kernel on the current device and stream.

    ``kind``: "elementwise" (CuPy's peer-access rule for every operand) or "library"
    (placement already checked by the caller). Raises StreamHazard before running. Under
    ``CUPYSIM_DEFER=1`` the body is queued on the stream (cupysim/defer.py) unless the
    caller needs what it ``returns``. ``replay``: how a CUDA graph replays the launch
    (cupysim/capture.py ``offer_run``; None: it cannot be captured).
    """
    if kind == "elementwise":
        _libs.require("nvrtc")  # CuPy compiles its elementwise kernels with NVRTC
    dev = _devices.current()
    if kind == "elementwise":
        for x in reads:
            _check_peer_access(x, dev)
        for x in writes:
            _check_peer_access(x, dev)
    stream = _streams.current(dev)
    r = [x._region() for x in reads]
    w = [x._region() for x in writes]
    if _trace.active:
        _trace.note(op=name, kind=kind, arrays=(*reads, *writes))
    if body is not None and kind == "elementwise":
        body = _ftz.wrap(body, (*reads, *writes))  # CuPy compiles with -ftz=true
    if _capture.captures and stream.capture is not None:
        _capture.offer_run(name, kind, (*reads, *writes), body, replay)
    tick = _streams.check(stream, r, w, name)
    if body is not None and _config.defer and not returns and tick:
        _defer.enqueue(stream, tick, body)
        body = None
    result = None if body is None else body()
    _streams.commit(stream, r, w, name, tick)
    return result


def _unwrap(v, found: list):
    t = type(v)
    if t is ndarray:
        found.append(v)
        return v._np
    if t is list or t is tuple:
        return t(_unwrap(e, found) for e in v)
    if isinstance(v, ndarray):
        found.append(v)
        return v._np
    if isinstance(v, np.ndarray):
        # cupy/_core/_scalar.pyx CScalar: anything but an ndarray or scalar is refused
        raise TypeError(f"Unsupported type {type(v)}")
    return v


def _view_source(r: np.ndarray, found):
    if not found:
        return None
    addr = r.__array_interface__["data"][0]
    for x in found:
        s = x.data.mem._storage
        if s is not None and s.host is not None and s.ptr <= addr <= s.ptr + s.size:
            if r.size == 0 or addr < s.ptr + s.size:
                return x
        elif r.size == 0 and x.size == 0 and r.base is not None:
            own = x._np.base  # an empty array without memory has a buffer of its own
            if r.base is x._np or (own is not None and r.base is own):
                return x
    return None


def _view_of(x: ndarray, r: np.ndarray, cls=None) -> ndarray:
    """A view of ``x`` over NumPy's view ``r`` of its memory (core.pyx ``_view``: of x's
    class unless ``cls`` is given, with ``__array_finalize__(x)`` for a subclass; always
    writeable, so NumPy's read-only or warn-on-write views are rebuilt over the memory)."""
    mem = x.data.mem
    if mem._storage is None or mem._storage.host is None:
        mp = x.data  # an empty array without memory
    else:
        mp = _memory().MemoryPointer(mem, r.__array_interface__["data"][0] - mem.ptr)
    r = _np_over(mp, r.shape, r.dtype, r.strides)
    cls = type(x) if cls is None else cls
    v = _make(r, mp, x._dev, x.base if x.base is not None else x, cls)
    if cls is not ndarray:
        v.__array_finalize__(x)
    return v


_SCALARS = (np.generic, bool, int, float, complex)


def _convert(r, found: list, new: list, meta: bool):
    if isinstance(r, np.ndarray):
        for x in found:
            if r is x._np:
                return x
        view_of = _view_source(r, found)
        if view_of is not None:
            return _view_of(view_of, r)
        if r.dtype.byteorder == ">":
            # host data (fromfile of '>u4') reaches the device as core.pyx _array_default
            # uploads it: byte-swapped to little-endian (_dtype.pxd normalize_dtype)
            r = r.astype(r.dtype.newbyteorder("<"))
        _check_dtype(r.dtype)
        a = _empty_like_layout(r)
        new.append((a, r))
        return a
    if isinstance(r, tuple):
        items = [_convert(v, found, new, meta) for v in r]
        return type(r)(*items) if hasattr(r, "_fields") else tuple(items)
    if isinstance(r, list):
        return [_convert(v, found, new, meta) for v in r]
    if not meta and isinstance(r, _SCALARS):
        v = np.asarray(r)
        _check_dtype(v.dtype)
        a = _empty((), v.dtype)
        new.append((a, v))
        return a
    return r


def _wrap(name: str, res, found: list, meta: bool = False, library: bool = False, recompute=None):
    """NumPy's result as CuPy's: views stay views, new values become arrays (one launch).

    ``recompute``: ``(fn, args, kwargs, flush)`` computing ``res`` again from the operands'
    views, for a CUDA graph's replay (cupysim/capture.py ``Recompute``).
    (No closures over the arrays: a reference cycle would keep them, and their pool
    memory, alive until the garbage collector runs.)
    """
    new: list[tuple[ndarray, np.ndarray]] = []
    out = _convert(res, found, new, meta)
    if new:
        replay = None
        if recompute is not None and _capture.captures:
            replay = _capture.Recompute(recompute, res, found, meta, [a._npv for a, _ in new])
        _run(name, found, [a for a, _ in new], _Filler(new),
             kind="library" if library else "elementwise", replay=replay)  # fmt: skip
    return out


class _Filler:
    """The body of a launch that writes NumPy's values into the new arrays."""

    __slots__ = ("pairs",)

    def __init__(self, pairs) -> None:
        self.pairs = pairs

    def __call__(self) -> None:
        for a, r in self.pairs:
            a._np[...] = r


#: Reductions whose float16 loop accumulates in float (``'e->e', (None, None, None,
#: 'float')``): _routines_math.pyx _sum_auto_dtype, _sum_keep_dtype, _nansum_*, _prod_*,
#: _nanprod_*; _routines_statistics.pyx _mean_core, _nanmean_func. NumPy adds in float16.
_HALF_IN_FLOAT = frozenset({"sum", "prod", "nansum", "nanprod", "mean", "nanmean"})


class _HalfInFloat:
    """NumPy's reduction ``fn`` (arguments ``a, axis, dtype, out, ...``) accumulating
    float16 in float32 and rounding the result to float16 once, as CuPy's kernel does."""

    __slots__ = ("fn",)

    def __init__(self, fn) -> None:
        self.fn = fn

    def __call__(self, *args, **kwargs):
        a = args[0]
        dtype = args[2] if len(args) > 2 else kwargs.get("dtype")
        if getattr(a, "dtype", None) != np.float16 or dtype not in (None, np.float16):
            return self.fn(*args, **kwargs)
        if len(args) > 2:
            args = (*args[:2], np.float32, *args[3:])
        else:
            kwargs = {**kwargs, "dtype": np.float32}
        out = args[3] if len(args) > 3 else kwargs.get("out")
        res = self.fn(*args, **kwargs)
        return res if out is not None else np.asarray(res).astype(np.float16)[()]


def _apply(name: str, fn, args, kwargs, *, meta: bool = False, sync: bool = False):
    """Call NumPy's ``fn`` on simulated arrays the way CuPy runs ``name``."""
    if sync and _capture.captures:  # CuPy reads the output size back: a D2H copy
        _capture.refuse_copy("d2h")
    if name in _HALF_IN_FLOAT:
        fn = _HalfInFloat(fn)
    found: list[ndarray] = []
    a = [_unwrap(v, found) for v in args]
    out = kwargs.get("out")
    if out is not None:
        outs = list(out) if isinstance(out, tuple) else [out]
        if not all(isinstance(o, ndarray) for o in outs):
            raise TypeError("out must be a cupy.ndarray")
        k = {
            key: _unwrap(v, []) if key == "out" else _unwrap(v, found) for key, v in kwargs.items()
        }
        res = _run(name, found, outs, lambda: fn(*a, **k), returns=True, replay=True)
        return _map_back(res, outs, found)
    k = {key: _unwrap(v, found) for key, v in kwargs.items()}
    flush = _ftz.single_precision(found)
    with _ftz.flushing(flush):  # NumPy's values as CuPy's kernel's
        res = fn(*a, **k)
    result = _wrap(name, res, found, meta, recompute=(fn, a, k, flush))
    if sync:
        # A data-dependent output size: CuPy reads it back, synchronising the stream.
        _streams.synchronize(_streams.current(_devices.current()))
    return result


def _map_back(res, outs, found):
    if isinstance(res, tuple):
        return tuple(_map_back(r, outs, found) for r in res)
    for o in (*outs, *found):
        if res is o._np:
            return o
    return res


def _host_to_device(host: np.ndarray, order: str = "C") -> ndarray:
    """A copy of host data on the current device (core.pyx ``_array_default``)."""
    _check_dtype(host.dtype)
    if _capture.captures:  # memory.pyx copy_from_host_async refuses a capturing stream
        _capture.refuse_copy("h2d")
    # _dtype.pxd normalize_dtype: host data is byte-swapped to little-endian on the way
    host = host.astype(host.dtype.newbyteorder("<"), copy=False)
    a = _empty(host.shape, host.dtype, "F" if order == "F" else "C")
    stream = _streams.current(_devices.current())
    w = [a._region()]
    tick = _streams.check(stream, [], w, "memcpyAsync (host to device)")
    # core.pyx _array_default copies straight from a pinned array already in the right
    # order; anything else goes through a staging buffer, and the caller's is free at once
    if host.ndim and (host.flags.f_contiguous if order == "F" else host.flags.c_contiguous):
        _hostcopy.from_host(stream, _hostcopy.pinned_array(host), "memcpyAsync (host to device)")
    a._np[...] = host
    _streams.commit(stream, [], w, "memcpyAsync (host to device)", tick)
    return a


def _array_info(obj):
    """Nested sequences containing cupy arrays are concatenated on the device."""
    if isinstance(obj, (list, tuple)):
        for e in obj:
            if isinstance(e, ndarray) or _array_info(e):
                return True
    return False


def _normalize_dtype(dtype):
    return None if dtype is None else np.dtype(dtype)


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, blocking=False):
    """core.pyx ``array``: a cupy array is copied (across devices too), host data uploaded."""
    if subok:
        raise NotImplementedError
    if order is None:
        order = "K"
    if isinstance(obj, ndarray):
        return _array_from_cupy(obj, dtype, copy, order, ndmin)
    if hasattr(obj, "__cupy_get_ndarray__"):
        return _array_from_cupy(obj.__cupy_get_ndarray__(), dtype, copy, order, ndmin)
    if _array_info(obj):
        # a sequence of device arrays: stacked on the current device
        found: list[ndarray] = []
        host = _unwrap(obj, found)
        r = np.array(host, dtype=dtype, ndmin=ndmin, order="F" if order in ("F", "f") else "C")
        return _wrap("concatenate", r, found)
    # core.pyx _array_default: host data is copied whatever ``copy`` says (only a system
    # with unified memory, which the simulator is not, could skip the copy)
    host = np.array(obj, dtype=dtype, copy=None, ndmin=ndmin)
    if host.dtype == np.float128 if hasattr(np, "float128") else False:
        raise ValueError("Unsupported dtype float128")
    order_char = _normalize_order(order)  # core.pyx _array_default
    if order_char in "KA":
        order_char = "F" if (host.flags.f_contiguous and not host.flags.c_contiguous) else "C"
    result = _host_to_device(host, order_char)
    if blocking:
        _streams.synchronize(_streams.current(_devices.current()))
    return result


def _array_from_cupy(src: ndarray, dtype, copy, order, ndmin: int) -> ndarray:
    if dtype is None:
        dtype = src.dtype
    if src._dev == _devices.current():
        a = src._astype(dtype, order=order, copy=copy)
    else:
        a = src.copy(order=order)._astype(dtype, copy=None)
    if ndmin > a.ndim:
        if a is src:
            a = a.view()
        a.shape = (1,) * (ndmin - a.ndim) + a.shape
    return a


def ascontiguousarray(a, dtype=None):
    """core.pyx ``ascontiguousarray``: ``a`` itself when already C-contiguous."""
    if not isinstance(a, ndarray):
        raise TypeError(
            f"Argument 'a' has incorrect type (expected cupy._core.core._ndarray_base, "
            f"got {type(a).__name__})"
        )
    dtype = a.dtype if dtype is None else np.dtype(dtype)
    if dtype == a.dtype and a.flags.c_contiguous:
        if a.ndim == 0:
            return a.ravel()
        return a
    out = _empty((1,) if a.ndim == 0 else a.shape, dtype)
    _run("elementwise_copy", [a], [out], lambda: out._np.__setitem__(..., a._np), replay=True)
    return out


def asfortranarray(a, dtype=None):
    if not isinstance(a, ndarray):
        raise TypeError(
            f"Argument 'a' has incorrect type (expected cupy._core.core._ndarray_base, "
            f"got {type(a).__name__})"
        )
    dtype = a.dtype if dtype is None else np.dtype(dtype)
    if dtype == a.dtype and a.flags.f_contiguous:
        if a.ndim == 0:
            return a.ravel("F")
        return a
    out = _empty((1,) if a.ndim == 0 else a.shape, dtype, "F")
    _run("elementwise_copy", [a], [out], lambda: out._np.__setitem__(..., a._np), replay=True)
    return out


def _index_on_device(key):
    """_routines_indexing.pyx ``_prepare_slice_list``: a NumPy array in an index is copied
    to the device (``core.array``) before indexing."""
    items = key if isinstance(key, tuple) else (key,)
    if not any(isinstance(s, np.ndarray) for s in items):
        return key
    moved = tuple(_index_array(s) if isinstance(s, np.ndarray) else s for s in items)
    return moved if isinstance(key, tuple) else moved[0]


def _index_array(s: np.ndarray) -> ndarray:
    if s.dtype.kind not in "biufc":
        # the upload fails with "Unsupported dtype": _prepare_slice_list's IndexError
        raise IndexError(
            f"arrays used as indices must be of integer or boolean type (actual: {s.dtype.type})"
        )
    return array(s)


# -- the array class ------------------------------------------------------------------------
def _method(name: str, sync: bool = False):
    fn = getattr(np.ndarray, name)

    def method(self, *args, **kwargs):
        return _apply(name, fn, (self, *args), kwargs, sync=sync)

    method.__name__ = name
    method.__qualname__ = f"ndarray.{name}"
    method.__doc__ = f"See :meth:`numpy.ndarray.{name}`."
    return method


def _binary(ufunc, reflected: bool = False, compare: bool = False):
    name = ufunc.__name__

    def op(self, other):
        import cupy

        if not isinstance(other, ndarray):
            y_ufunc = getattr(other, "__array_ufunc__", _MISSING)
            if y_ufunc is _MISSING:
                if getattr(self, "__array_priority__", 0) < getattr(other, "__array_priority__", 0):
                    return NotImplemented
            elif y_ufunc is None:
                return NotImplemented
            if compare:
                # core.pyx __richcmp__: a 0-d NumPy array is its scalar; None and objects
                # with object's __eq__ (and __ne__) equal no element
                if isinstance(other, np.ndarray) and other.ndim == 0:
                    other = other.item()
                default_eq = type(other).__eq__ is object.__eq__
                if name == "equal" and (default_eq or other is None):
                    return cupy.zeros(self.shape, dtype=cupy.bool_)
                if name == "not_equal" and (
                    (default_eq and type(other).__ne__ is object.__ne__) or other is None
                ):
                    return cupy.ones(self.shape, dtype=cupy.bool_)
        f = getattr(cupy, name)
        return f(other, self) if reflected else f(self, other)

    return op


def _inplace(ufunc):
    name = ufunc.__name__

    def op(self, other):
        import cupy

        return getattr(cupy, name)(self, other, out=self)

    return op


_MISSING = object()
_set_member = object.__setattr__
#: core.pxd's ``readonly`` attributes the simulator keeps as members
_READ_ONLY = frozenset({"dtype", "data", "base"})


class _ndarray_base:
    """Multi-dimensional array on a CUDA device (simulated)."""

    # dtype and shape are kept beside the view, as core.pxd keeps them (``readonly object
    # dtype``, the ``_shape`` vector): a read is a member read, as CuPy's, not a property
    # call, which costs the simulator about ten times CuPy's read (tools.peers' CuPy rows
    # count it). __setattr__ keeps core.pxd's readonly members (_READ_ONLY) read-only and
    # routes a.shape = ... to the in-place reshape.
    __slots__ = ("__weakref__", "_dev", "_npv", "base", "data", "dtype", "shape")
    __array_priority__ = 100

    @property
    def _np(self) -> np.ndarray:
        """The host memory standing in for the array (its queued writers run first)."""
        if _defer.queued:
            _defer.before_read(_devices.current())
        return self._npv

    @_np.setter
    def _np(self, view: np.ndarray) -> None:  # a view of the same memory (a.shape = ...)
        _set_view(self, view)

    def __setattr__(self, name: str, value: object) -> None:
        if name == "shape":
            self._reshape_in_place(value)
        elif name in _READ_ONLY:
            raise AttributeError(
                f"attribute '{name}' of 'cupy._core.core._ndarray_base' objects is not writable"
            )
        else:
            _set_member(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in _READ_ONLY or name == "shape":
            raise AttributeError(
                f"attribute '{name}' of 'cupy._core.core._ndarray_base' objects is not writable"
            )
        object.__delattr__(self, name)

    def __init__(self, *args, **kwargs):
        # core.pyx: the base must not be made directly; ndarray.__new__ calls _init
        raise RuntimeError("Must not be directly instantiated")

    def _init(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        shape = _get_size(shape)
        dtype = np.dtype(dtype)
        order = "C" if order is None or _normalize_order(order) == "C" else "F"
        if memptr is None and strides is not None:
            # core.pyx _init: strides without memptr get a contiguous-sized allocation,
            # which the strides must neither precede nor overrun
            strides = tuple(operator.index(st) for st in strides)
            size = int(np.prod(shape, dtype=np.int64))
            lo = sum((n - 1) * st for n, st in zip(shape, strides, strict=True) if st < 0)
            hi = sum((n - 1) * st for n, st in zip(shape, strides, strict=True) if st > 0)
            if size and lo != 0:
                raise ValueError("ndarray() with strides currently does not allow negative strides")
            if size and hi + dtype.itemsize > size * dtype.itemsize:
                raise ValueError(
                    f"ndarray() with strides must stay withing a contiguous size of "
                    f"{size * dtype.itemsize} but got {hi + dtype.itemsize}."
                )
            memptr = _empty((size,), dtype).data
        elif memptr is None:
            a = _empty(shape, dtype, order)
            _fill(self, a._np, a.data, a._dev, None)
            return
        if strides is None:
            strides = _contiguous_strides(shape, dtype.itemsize, order)
        _fill(self, _np_over(memptr, shape, dtype, tuple(strides)), memptr, memptr.device_id, None)

    # -- simulator internals
    def _storage(self):
        return self.data.mem._storage

    def _region(self):
        v = self._np
        ptr = self.data.ptr
        if v.size == 0:
            lo = hi = ptr
        else:
            lo, hi = ptr, ptr + v.itemsize
            for n, s in zip(v.shape, v.strides, strict=True):
                if s < 0:
                    lo += (n - 1) * s
                else:
                    hi += (n - 1) * s
        shape, dtype, dev = v.shape, v.dtype, self._dev
        records = self._storage().records if self._storage() is not None else []
        return _streams.Region(
            records, lo, hi, lambda: f"cupy.ndarray shape={shape} dtype={dtype} on device {dev}"
        )

    # -- attributes
    # The metadata (shape, strides, dtype, flags, ...) is read from the view itself
    # (``_npv``): queued writers change the memory's values only, and CuPy reads its own
    # attributes without waiting for anything (a property per read costs the simulator
    # more than the CuPy calls it stands for).
    def _reshape_in_place(self, newshape) -> None:
        """``a.shape = newshape``: core.pyx's shape setter."""
        v = self._np.view()
        try:
            v.shape = newshape
        except AttributeError as exc:  # needs a copy: CuPy refuses as NumPy does
            raise AttributeError(
                "Incompatible shape for in-place modification. Use "
                "`.reshape()` to make a copy with the desired shape."
            ) from exc
        self._np = v

    @property
    def strides(self) -> tuple[int, ...]:
        return self._npv.strides

    @property
    def size(self) -> int:
        return self._npv.size

    @property
    def ndim(self) -> int:
        return self._npv.ndim

    @property
    def itemsize(self) -> int:
        return self._npv.itemsize

    @property
    def nbytes(self) -> int:
        return self._npv.nbytes

    @property
    def device(self):
        from cupy.cuda.device import Device

        return Device(self._dev)

    @property
    def flags(self):
        f = self._npv.flags
        return _Flags(f.c_contiguous, f.f_contiguous, self.base is None)

    @property
    def T(self):
        return self.transpose()

    @property
    def mT(self):
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return self.swapaxes(-1, -2)

    @property
    def real(self):
        return _apply("real", np.real, (self,), {})

    @real.setter
    def real(self, value) -> None:
        self.real[...] = value

    @property
    def imag(self):
        if self.dtype.kind == "c":
            return _apply("imag", np.imag, (self,), {})
        out = _empty(self.shape, self.dtype)
        out.fill(0)
        return out

    @imag.setter
    def imag(self, value) -> None:
        if self.dtype.kind != "c":
            raise TypeError("cupy.ndarray does not have imaginary part to set")
        self.imag[...] = value

    @property
    def __cuda_array_interface__(self) -> dict:
        v = self._np
        return {
            "shape": v.shape,
            "typestr": v.dtype.str,
            "descr": v.dtype.descr,
            "data": (self.data.ptr, False),
            "version": 3,
            "strides": None if v.flags.c_contiguous else v.strides,
            "stream": 1,
        }

    # -- conversion (core.pyx: implicit NumPy conversion is refused)
    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "Implicit conversion to a NumPy array is not allowed. "
            "Please use `.get()` to construct a NumPy array explicitly."
        )

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        import cupy

        inout = inputs
        if "out" in kwargs:
            out = kwargs["out"]
            if len(out) != 1:
                raise ValueError("The 'out' parameter must have exactly one array value")
            inout += out
            kwargs["out"] = out[0]
        # core.pyx __array_ufunc__: the CuPy ufunc of the same name, or its method
        if method not in ("__call__", "outer", "at", "reduce", "accumulate", "reduceat"):
            return NotImplemented
        name = ufunc.__name__
        func = getattr(cupy, name, None)
        if func is None or (method != "__call__" and not hasattr(func, method)):
            return NotImplemented
        if method != "__call__":
            func = getattr(func, method)
        for x in inout:
            if not (
                type(x) in (bool, int, float, complex)
                or (isinstance(x, np.generic) and x.dtype.char in _TYPE_CHARS)
                or isinstance(x, (_ndarray_base, np.ndarray))
                or hasattr(x, "__cuda_array_interface__")
                or hasattr(x, "__cupy_get_ndarray__")
            ):
                return NotImplemented
        if name in ("greater", "greater_equal", "less", "less_equal", "equal", "not_equal"):
            # numpy/numpy#12142: a 0-d NumPy operand is taken as its scalar
            inputs = tuple(
                x.item() if isinstance(x, np.ndarray) and x.ndim == 0 else x for x in inputs
            )
        return func(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        import cupy

        try:
            module = functools.reduce(getattr, func.__module__.split(".")[1:], cupy)
            cupy_func = getattr(module, func.__name__)
        except AttributeError:
            return NotImplemented
        if cupy_func is func:
            return NotImplemented
        for t in types:
            if not issubclass(t, (_ndarray_base, np.ndarray)):
                return NotImplemented
        return cupy_func(*args, **kwargs)

    def get(self, stream=None, order="C", out=None, blocking=True):
        """A copy on the host; waits for the stream used (core.pyx ``ndarray.get``)."""
        from cupy.cuda import stream as stream_module

        if stream is None:
            stream = stream_module.get_current_stream()
        if out is not None:
            if not isinstance(out, np.ndarray):
                raise TypeError("Only numpy.ndarray can be obtained fromcupy.ndarray")
            if self.dtype != out.dtype:
                raise TypeError(f"{out.dtype} array cannot be obtained from {self.dtype} array")
            if self.shape != out.shape:
                raise ValueError(
                    f"Shape mismatch. Expected shape: {self.shape}, actual shape: {out.shape}"
                )
            if not (out.flags.c_contiguous or out.flags.f_contiguous):
                # core.pyx get: the copy lands in a contiguous ``out`` only
                raise RuntimeError(
                    "`out` cannot be specified when copying to non-contiguous ndarray"
                )
            host = out
        else:
            if self.size == 0:
                return np.ndarray(self.shape, dtype=self.dtype)
            order = order.upper()
            if order == "A":
                order = "F" if self.flags.f_contiguous else "C"
            if order not in "CF":
                raise ValueError(f"unsupported order: {order}")
            host = np.empty(self.shape, dtype=self.dtype, order=order)
        prev = _devices.current()
        try:
            _devices.set_current(self._dev)
            s = _streams.resolve(stream.ptr, self._dev)
            if _capture.captures:  # memory.pyx copy_to_host_async refuses a capturing stream
                _capture.refuse_copy("d2h", s)
            r = [self._region()]
            op = "memcpyAsync (device to host)"
            tick = _streams.check(s, r, [], op)
            # the copy lands when the host sees the stream complete (cupysim/hostcopy.py)
            landed = np.empty_like(host)
            landed[...] = self._np
            if not _hostcopy.to_host(s, _hostcopy.host_view(host), _hostcopy.host_view(landed), op):
                host[...] = landed
            _streams.commit(s, r, [], op, tick)
            if blocking:
                _streams.synchronize(s)
        finally:
            _devices.set_current(prev)
        return host

    def set(self, arr, stream=None) -> None:
        """Copy host data in, asynchronously on ``stream`` (core.pyx ``ndarray.set``)."""
        from cupy.cuda import stream as stream_module

        if not isinstance(arr, np.ndarray):
            raise TypeError("Only numpy.ndarray can be set to cupy.ndarray")
        if self.dtype != arr.dtype:
            raise TypeError(f"{arr.dtype} array cannot be set to {self.dtype} array")
        if self.shape != arr.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {arr.shape}")
        if not (self.flags.c_contiguous or self.flags.f_contiguous):
            raise RuntimeError("Cannot set to non-contiguous array")
        if stream is None:
            stream = stream_module.get_current_stream()
        prev = _devices.current()
        try:
            _devices.set_current(self._dev)
            s = _streams.resolve(stream.ptr, self._dev)
            if _capture.captures:  # memory.pyx copy_from_host_async refuses it too
                _capture.refuse_copy("h2d", s)
            w = [self._region()]
            op = "memcpyAsync (host to device)"
            tick = _streams.check(s, [], w, op)
            # core.pyx set copies from ``arr`` itself when it is contiguous in this array's
            # order (else from a contiguous copy, which the caller cannot touch)
            own = arr.flags.c_contiguous if self.flags.c_contiguous else arr.flags.f_contiguous
            _hostcopy.from_host(s, _hostcopy.host_view(arr) if own else None, op)
            self._np[...] = arr
            _streams.commit(s, [], w, op, tick)
        finally:
            _devices.set_current(prev)

    def item(self, *args):
        if args:
            return self[args if len(args) > 1 else args[0]].item()
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self.get().item()

    def tolist(self):
        return self.get().tolist()

    def tobytes(self, order="C"):
        return self.get().tobytes(order)

    def __int__(self):
        return int(self.get())

    def __float__(self):
        return float(self.get())

    def __complex__(self):
        return complex(self.get())

    # core.pyx defines no __index__: a device scalar is not an index (range(x), seq[x] raise)
    def __bytes__(self):
        # core.pyx __bytes__: the bytes of the host copy
        return bytes(self.get())

    def __bool__(self):
        # core.pyx __nonzero__: an empty array is False with a DeprecationWarning
        if self.size == 0:
            warnings.warn(
                "The truth value of an empty array is ambiguous. Returning False, but in "
                "future this will result in an error. Use `array.size > 0` to check that an "
                "array is not empty.",
                DeprecationWarning,
                stacklevel=2,
            )
            return False
        if self.size == 1:
            return bool(self.get())
        raise ValueError(
            "The truth value of an array with more than one element is ambiguous. Use a.any() "
            "or a.all()"
        )

    def __repr__(self):
        return repr(self.get())

    def __str__(self):
        return str(self.get())

    def __format__(self, spec):
        return format(self.get(), spec)

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    __hash__ = None

    def __getitem__(self, key):
        key = _index_on_device(key)
        sync = _has_bool_index(key)
        if _all_integers(key, self.ndim):
            # CuPy returns a 0-d view where NumPy returns a scalar
            key = (*(key if isinstance(key, tuple) else (key,)), Ellipsis)
        return _apply("getitem", operator.getitem, (self, key), {}, sync=sync)

    def __setitem__(self, key, value) -> None:
        found: list[ndarray] = []
        k = _unwrap(_index_on_device(key), found)
        if isinstance(value, np.ndarray):
            value = _host_to_device(value)  # CuPy uploads a host value for assignment
        v = _unwrap(value, found)
        target = self._np
        _run("setitem", found, [self], lambda: target.__setitem__(k, v), replay=True)

    # -- copies and dtype
    def astype(self, dtype, order="K", casting=None, subok=None, copy=True):
        # core.pyx astype: copy=False means "if needed" (None) here
        return self._astype(dtype, order, casting, subok, True if copy else None)

    def _astype(self, dtype, order="K", casting=None, subok=None, copy=True):
        """core.pyx ``_astype``: ``copy=False`` refuses to copy, ``None`` copies if needed;
        ``casting`` and ``subok`` are refused ("not supported yet")."""
        if casting is not None:
            raise TypeError("casting is not supported yet")
        if subok is not None:
            raise TypeError("subok is not supported yet")
        dtype = np.dtype(dtype)
        o = _normalize_order("K" if order is None else order)
        f = self.flags
        if dtype == self.dtype and not copy:
            if (
                o == "K"
                or (o == "A" and (f.c_contiguous or f.f_contiguous))
                or (o == "C" and f.c_contiguous)
                or (o == "F" and f.f_contiguous)
            ):
                return self
        if not copy and copy is not None:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        if o == "A":
            o = "F" if f.f_contiguous and not f.c_contiguous else "C"
        with _ftz.flushing(_ftz.single_precision((self.dtype, dtype))):
            r = self._np.astype(dtype, order=o, copy=True)
        out = _empty_like_layout(r) if o == "K" else _empty(r.shape, dtype, o)
        src = self
        _run("astype", [self], [out], lambda: out._np.__setitem__(..., r),
             replay=lambda: out._np.__setitem__(..., src._np.astype(dtype, order=o)))  # fmt: skip
        return out

    def copy(self, order="C"):
        """A copy on the current device (core.pyx ``ndarray.copy``).

        From another device the data is made contiguous there first ('C'/'F' order, or
        'K' keeping the layout) and copied with ``cudaMemcpyAsync``: a layout that is
        neither C- nor F-contiguous raises NotImplementedError, as CuPy does.
        """
        if self.size == 0:
            return self.astype(self.dtype, order=order)
        dev = _devices.current()
        if self._dev == dev:
            return self.astype(self.dtype, order=order)
        prev = dev
        try:
            _devices.set_current(self._dev)
            x = self.astype(self.dtype, order=order, copy=False)
        finally:
            _devices.set_current(prev)
        if not x.flags.c_contiguous and not x.flags.f_contiguous:
            raise NotImplementedError("CuPy cannot copy non-contiguous array between devices.")
        nbytes = x.nbytes
        mp = _memory().alloc(nbytes)
        new = _make(_np_over(mp, x.shape, x.dtype, x.strides), mp, mp.device_id)
        new.data.copy_from_device_async(x.data, nbytes)
        return new

    def view(self, dtype=None, array_class=None):
        """A view of the same memory (core.pyx ``view``). A new ``dtype`` reinterprets the
        elements, NumPy's rules giving the shape and refusing what CuPy refuses (a 0-d
        array or a strided last axis changing itemsize); an ndarray subclass, given as
        ``dtype`` or ``array_class``, is the class of the view."""

        def subclass(t) -> bool:
            return isinstance(t, type) and issubclass(t, ndarray)

        if subclass(dtype):
            if array_class is not None:
                raise ValueError("Cannot specify output type twice.")
            dtype, array_class = None, dtype
        if array_class is not None and not subclass(array_class):
            raise ValueError("Type must be a sub-type of ndarray type")
        r = self._np.view() if dtype is None else self._np.view(np.dtype(dtype))
        return _view_of(self, r, array_class)

    def fill(self, value) -> None:
        """core.pyx ``fill``: a memset for zero on C-contiguous arrays, else a kernel."""
        if isinstance(value, ndarray):
            if value.shape != ():
                raise ValueError("non-scalar cupy.ndarray cannot be used for fill")
            value = value.astype(self.dtype, copy=False)
            src = value
            _run("fill", [src], [self], lambda: self._np.fill(src._np[()]), replay=True)
            return
        v = np.asarray(value, dtype=self.dtype)
        if v.shape != ():
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
        # (a structured value cannot be compared with 0: the dtype is checked first)
        if self.dtype.kind != "V" and v == 0 and self.flags.c_contiguous:
            self.data.memset_async(0, self.nbytes)
            return
        _run("fill", [], [self], lambda: self._np.fill(v[()]), replay=True)

    def reshape(self, *shape, order="C", copy=None):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _apply("reshape", np.reshape, (self, shape), {"order": order, "copy": copy})

    def dot(self, b, out=None):
        import cupy

        return cupy.dot(self, b, out=out)

    def __imatmul__(self, other):
        import cupy

        return cupy.matmul(self, other, out=self)

    def conj(self):
        if self.dtype.kind == "c":
            return _apply("conj", np.conj, (self,), {})
        return self

    def conjugate(self):
        return self.conj()

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        with self.device:
            return self.copy()

    def __reduce__(self):
        import cupy

        return (cupy.array, (self.get(),))

    def __abs__(self):
        import cupy

        return cupy.absolute(self)

    def __neg__(self):
        import cupy

        return cupy.negative(self)

    def __pos__(self):
        import cupy

        return cupy.positive(self)

    def __invert__(self):
        import cupy

        return cupy.invert(self)

    def __class_getitem__(cls, item):
        from types import GenericAlias

        return GenericAlias(cls, item)


def _all_integers(key, ndim: int) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return len(keys) == ndim and all(
        isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in keys
    )


def _has_bool_index(key) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    for k in keys:
        if isinstance(k, (ndarray, np.ndarray)) and k.dtype == np.bool_:
            return True
        if isinstance(k, list) and k and all(isinstance(e, bool) for e in k):
            return True
    return False


for _name, _uf in [
    ("add", np.add),
    ("sub", np.subtract),
    ("mul", np.multiply),
    ("truediv", np.true_divide),
    ("floordiv", np.floor_divide),
    ("mod", np.remainder),
    ("and", np.bitwise_and),
    ("or", np.bitwise_or),
    ("xor", np.bitwise_xor),
    ("lshift", np.left_shift),
    ("rshift", np.right_shift),
]:
    setattr(_ndarray_base, f"__{_name}__", _binary(_uf))
    setattr(_ndarray_base, f"__r{_name}__", _binary(_uf, reflected=True))
    setattr(_ndarray_base, f"__i{_name}__", _inplace(_uf))
_ndarray_base.__pow__ = _binary(np.power)
_ndarray_base.__rpow__ = _binary(np.power, reflected=True)
_ndarray_base.__matmul__ = _binary(np.matmul)
_ndarray_base.__rmatmul__ = _binary(np.matmul, reflected=True)
_ndarray_base.__ipow__ = _inplace(np.power)
_ndarray_base.__divmod__ = _binary(np.divmod)
for _name, _uf in [
    ("lt", np.less),
    ("le", np.less_equal),
    ("gt", np.greater),
    ("ge", np.greater_equal),
    ("eq", np.equal),
    ("ne", np.not_equal),
]:
    setattr(_ndarray_base, f"__{_name}__", _binary(_uf, compare=True))

# Methods CuPy 14's ndarray has, computed by NumPy (views where NumPy returns views).
for _name in [
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "choose", "clip",
    "compress", "cumprod", "cumsum", "diagonal", "flatten", "max", "mean", "min", "partition",
    "prod", "ptp", "put", "ravel", "repeat", "round", "sort", "squeeze", "std", "sum",
    "swapaxes", "take", "trace", "transpose", "var", "byteswap",
]:  # fmt: skip
    if hasattr(np.ndarray, _name):
        setattr(_ndarray_base, _name, _method(_name))
_ndarray_base.nonzero = _method("nonzero", sync=True)


#: The base class's slot setters (``member.__set__``): the simulator's own writes of its
#: members, which neither ``__setattr__`` nor a subclass's property of the same name sees
_SLOTS = {
    name: _ndarray_base.__dict__[name].__set__
    for name in ("_npv", "dtype", "shape", "data", "_dev", "base")
}


class ndarray(_ndarray_base):
    """Multi-dimensional array on a CUDA device (simulated; see cupy/_core/core.pyx)."""

    __slots__ = ()

    # core.pyx class ndarray: subclasses construct through __new__, which calls
    # __array_finalize__(_obj) on an instance of a subclass
    def __new__(cls, *args, _obj=None, _no_init=False, **kwargs):
        x = object.__new__(cls)
        if _no_init:
            return x
        x._init(*args, **kwargs)
        if cls is not ndarray:
            x.__array_finalize__(_obj)
        return x

    def __init__(self, *args, **kwargs):
        pass

    def __array_finalize__(self, obj):
        pass

    def view(self, dtype=None, type=None):
        """A view of the array, of another dtype or ndarray subclass (``type``)."""
        return super().view(dtype=dtype, array_class=type)


ndarray.__module__ = "cupy"
_ndarray_base.__module__ = "cupy._core.core"
