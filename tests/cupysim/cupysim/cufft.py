"""cuFFT transforms: values from ``scipy.fft``, placement and plans as CuPy has them.

cupy/fft/_fft.py first converts the input's dtype (``a.astype(..., copy=False)``: a new
array on the current device when the type changes, by an elementwise kernel) and, in
``_exec_fft``, copies a view or a non-C-contiguous input (``a.copy()``: across devices a
memcpy, NotImplementedError for a non-contiguous source). What reaches cuFFT is then run
with the current device's plan on the current stream, so it must be on the current device
(cupysim.placement). Each new plan is cached per thread and device (cupy/fft/_cache.pyx
``PlanCache``: 16 plans by default) and holds a work area from the memory pool.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
from cupy._core import core

from . import devices, libs, placement
from . import tracing as _trace

_tls = threading.local()

_REAL_REAL = {"dct", "idct", "dctn", "idctn", "dst", "idst", "dstn", "idstn"}
_REAL_IN = {"rfft", "rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn", *_REAL_REAL}
_REAL_OUT = {"irfft", "irfft2", "irfftn", "hfft", "hfft2", "hfftn", *_REAL_REAL}


class PlanCache:
    """cuFFT plans of one device, least recently used first out (cupy/fft/_cache.pyx)."""

    def __init__(self, size: int = 16, memsize: int = -1, dev: int = -1) -> None:
        self._size, self._memsize, self.dev = size, memsize, dev
        self._plans: OrderedDict = OrderedDict()

    def get_size(self) -> int:
        return self._size

    def set_size(self, size: int) -> None:
        self._size = size
        self._evict()

    def get_memsize(self) -> int:
        return self._memsize

    def set_memsize(self, size: int) -> None:
        self._memsize = size
        self._evict()

    def get_curr_size(self) -> int:
        return len(self._plans)

    def get_curr_memsize(self) -> int:
        return sum(w.mem.size for w in self._plans.values())

    def clear(self) -> None:
        self._plans.clear()

    def show_info(self) -> None:
        print(f"------------------- cuFFT plan cache (device {self.dev}) -------------------")
        print(f"cache enabled? {self._size != 0}")
        print(f"current / max size   : {self.get_curr_size()} / {self._size} (counts)")
        print(f"current / max memsize: {self.get_curr_memsize()} / {self._memsize} (bytes)")

    def __len__(self) -> int:
        return len(self._plans)

    def __contains__(self, key) -> bool:
        return key in self._plans

    def _evict(self) -> None:
        while self._plans and (
            (self._size >= 0 and len(self._plans) > self._size)
            or (self._memsize >= 0 and self.get_curr_memsize() > self._memsize)
        ):
            self._plans.popitem(last=False)

    def _plan(self, key, work_bytes: int) -> None:
        if key in self._plans:
            self._plans.move_to_end(key)
            return
        if _trace.active:
            _trace.fft_plan(self.dev, key)
        if self._size == 0:
            return
        from cupy.cuda import memory

        self._plans[key] = memory.alloc(work_bytes)  # the plan's work area, from the pool
        self._evict()


def plan_cache(dev: int | None = None) -> PlanCache:
    dev = devices.current() if dev is None else dev
    caches = getattr(_tls, "caches", None)
    if caches is None:
        caches = _tls.caches = {}
    cache = caches.get(dev)
    if cache is None:
        cache = caches[dev] = PlanCache(dev=dev)
    return cache


def _value_type(name: str, dtype: np.dtype) -> np.dtype:
    if name in _REAL_IN:
        return np.dtype(
            np.float32 if dtype in (np.float16, np.float32, np.complex64) else np.float64
        )
    single = dtype in (np.float16, np.float32, np.complex64)
    return np.dtype(np.complex64 if single else np.complex128)


class _Value:
    """The transform's values (SciPy's, in the result type cuFFT gives)."""

    __slots__ = ("args", "dtype", "fn", "kwargs")

    def __init__(self, fn, args, kwargs, dtype) -> None:
        self.fn, self.args, self.kwargs, self.dtype = fn, args, kwargs, dtype

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.fn(x, *self.args, **self.kwargs).astype(self.dtype, copy=False)


def transform(name: str, fn):
    """``name`` of cupy.fft / cupyx.scipy.fft, valued by ``fn`` (numpy.fft or scipy.fft)."""

    def f(x, /, *args, **kwargs):
        libs.require("cufft")
        if not isinstance(x, core.ndarray):
            raise TypeError("The input array a must be a cupy.ndarray")
        kwargs.pop("plan", None)
        kwargs.pop("overwrite_x", None)
        kwargs.pop("workers", None)
        vt = _value_type(name, x.dtype)
        if x.dtype != vt and not (name in _REAL_OUT and x.dtype.kind == "f"):
            x = x.astype(vt)  # an elementwise copy on the current device
        elif x.base is not None or not x.flags.c_contiguous:
            x = x.copy()
        dev = placement.require_current("cuFFT", name, [x])
        want = np.float32 if vt in (np.float32, np.complex64) else np.float64
        out = want if name in _REAL_OUT else np.result_type(want, np.complex64)
        value = _Value(fn, args, kwargs, out)
        res = value(x._np)
        plan_cache(dev)._plan((name, x.shape, x.dtype.str, res.shape), max(res.nbytes, 512))
        if _trace.active:
            _trace.fft_axes(name, x.ndim, args, kwargs)
        # a CUDA graph replays the transform from the input's memory (cupysim/capture.py)
        return core._wrap(name, res, [x], library=True, recompute=(value, (x._np,), {}, False))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"CuPy's ``{name}`` (cuFFT on the current device; values by SciPy)."
    return f
