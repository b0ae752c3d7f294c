"""cuFFT plans and transforms: values from ``scipy.fft``, plans and placement as CuPy's.

``cupy.fft`` and the FFTs of ``cupyx.scipy.fft`` (cupy/fft/_fft.py here) run on these
plans as CuPy's run on cuFFT's: 1-D plans (one transform per axis, that axis last and the
input contiguous) or an N-D plan (up to three adjacent axes, output in the input's order),
with normalisation a separate elementwise division. A plan here is :class:`Plan1d` or
:class:`PlanNd` of cupy/cuda/cufft.pyx: it holds a work area from the memory pool, is cached
per thread and device (cupy/fft/_cache.pyx ``PlanCache``: 16 plans by default) and runs the
unnormalised transform on the current stream, so its operands must be on the current
device (cupysim.placement); its values are ``scipy.fft``'s in the input's precision. The
DCTs and DSTs of ``cupyx.scipy.fft`` are :func:`transform`: one call valued by SciPy.
"""

from __future__ import annotations

import threading

import numpy as np
import scipy.fft as _sfft
from cupy._core import core

from . import devices, libs, placement
from . import tracing as _trace

_tls = threading.local()

# cupy/cuda/cufft.pxd: the transform types and directions
CUFFT_C2C, CUFFT_R2C, CUFFT_C2R = 0x29, 0x2A, 0x2C
CUFFT_Z2Z, CUFFT_D2Z, CUFFT_Z2D = 0x69, 0x6A, 0x6C
CUFFT_FORWARD, CUFFT_INVERSE = -1, 1
_C2C, _R2C, _C2R = (CUFFT_C2C, CUFFT_Z2Z), (CUFFT_R2C, CUFFT_D2Z), (CUFFT_C2R, CUFFT_Z2D)
_SINGLE = (CUFFT_C2C, CUFFT_R2C, CUFFT_C2R)


class _Node:
    """An entry of the cache, as cupy/fft/_cache.pyx ``_Node`` (``key``, ``plan``,
    ``memsize``)."""

    __slots__ = ("key", "memsize", "plan")

    def __init__(self, key: tuple, plan) -> None:
        self.key, self.plan = key, plan
        work = getattr(plan, "work_area", None)
        self.memsize = 0 if work is None else work.mem.size

    def __repr__(self) -> str:
        return (
            f"key: {self.key}, plan type: {type(self.plan).__name__}, memory usage: {self.memsize}"
        )


class PlanCache:
    """cuFFT plans of one device, least recently used first out (cupy/fft/_cache.pyx)."""

    def __init__(self, size: int = 16, memsize: int = -1, dev: int = -1) -> None:
        self._validate(size, memsize)
        self._size, self._memsize, self.dev = size, memsize, dev
        self._nodes: dict[tuple, _Node] = {}  # insertion order: least recently used first
        self.hits = self.misses = 0

    @staticmethod
    def _validate(size: int, memsize: int) -> None:
        if size < -1 or memsize < -1:
            raise ValueError("invalid input")

    @property
    def _enabled(self) -> bool:
        return self._size != 0 and self._memsize != 0

    def get_size(self) -> int:
        return self._size

    def set_size(self, size: int) -> None:
        self._validate(size, self._memsize)
        self._evict(size, self._memsize)
        self._size = size

    def get_memsize(self) -> int:
        return self._memsize

    def set_memsize(self, memsize: int) -> None:
        self._validate(self._size, memsize)
        self._evict(self._size, memsize)
        self._memsize = memsize

    def get_curr_size(self) -> int:
        return len(self._nodes)

    def get_curr_memsize(self) -> int:
        return sum(n.memsize for n in self._nodes.values())

    def get(self, key: tuple, default=None):
        """The plan cached for ``key`` (now the most recently used), or ``default``."""
        if not self._enabled:
            return default
        node = self._nodes.pop(key, None)
        if node is None:
            self.misses += 1
            return default
        self._nodes[key] = node
        self.hits += 1
        return node.plan

    def __setitem__(self, key: tuple, plan) -> None:
        if not self._enabled:
            return
        node = _Node(key, plan)
        if node.memsize > self._memsize > 0:
            raise RuntimeError("the plan memsize is too large")
        self._nodes.pop(key, None)
        self._evict(
            self._size - 1 if self._size != -1 else -1,
            self._memsize - node.memsize if self._memsize != -1 else -1,
        )
        self._nodes[key] = node

    def __delitem__(self, key: tuple) -> None:
        if not self._enabled:
            return
        if self._nodes.pop(key, None) is None:
            self.misses += 1
            raise KeyError(f"plan not found for key: {key}")
        self.hits += 1

    def __iter__(self):
        """(key, node) pairs, most recently used first, without reordering."""
        for key in reversed(list(self._nodes)):
            yield key, self._nodes[key]

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, key) -> bool:
        return key in self._nodes

    def clear(self) -> None:
        self._nodes.clear()
        self.hits = self.misses = 0

    def show_info(self) -> None:
        size = "(unlimited)" if self._size == -1 else self._size
        memsize = "(unlimited)" if self._memsize == -1 else self._memsize
        print(f"------------------- cuFFT plan cache (device {self.dev}) -------------------")
        print(f"cache enabled? {self._enabled}")
        print(f"current / max size   : {self.get_curr_size()} / {size} (counts)")
        print(f"current / max memsize: {self.get_curr_memsize()} / {memsize} (bytes)")
        print(f"hits / misses: {self.hits} / {self.misses} (counts)")
        print("\ncached plans (most recently used first):")
        for _, node in self:
            print(node)

    def _evict(self, size: int, memsize: int) -> None:
        while self._nodes and not (
            (size == -1 or len(self._nodes) <= size)
            and (memsize == -1 or self.get_curr_memsize() <= memsize)
        ):
            del self._nodes[next(iter(self._nodes))]


def show_all() -> None:
    """cupy/fft/_cache.pyx ``show_plan_cache_info``: every device's cache on this thread."""
    from . import config

    caches = getattr(_tls, "caches", {})
    print("=============== cuFFT plan cache info (all devices) ===============")
    for dev in range(config.devices):
        cache = caches.get(dev)
        if cache is None:
            print(f"------------------- cuFFT plan cache (device {dev}) -------------------")
            print("(uninitialized)\n")
        else:
            cache.show_info()


def plan_cache(dev: int | None = None) -> PlanCache:
    dev = devices.current() if dev is None else dev
    caches = getattr(_tls, "caches", None)
    if caches is None:
        caches = _tls.caches = {}
    cache = caches.get(dev)
    if cache is None:
        cache = caches[dev] = PlanCache(dev=dev)
    return cache


# -- plans (cupy/cuda/cufft.pyx Plan1d, PlanNd) ------------------------------------------------
def _is_single(fft_type: int) -> bool:
    return fft_type in _SINGLE


class _Plan:
    """A cuFFT plan of the current device. It owns a work area from that device's memory
    pool (so cached plans hold pool memory, as on a GPU) and runs the unnormalised
    transform on the current stream: operands elsewhere are refused (cupysim.placement)."""

    gpus = None  # multi-GPU plans are not simulated

    def __init__(self, fft_type: int, work_bytes: int, trace_key: tuple) -> None:
        from cupy.cuda import memory

        libs.require("cufft")
        self.fft_type = fft_type
        self.dev = devices.current()
        if _trace.active:
            _trace.fft_plan(self.dev, trace_key)
        # cuFFT's real work size is not modelled: the output's size stands in for it
        self.work_area = memory.alloc(max(work_bytes, 512))

    def _launch(self, name: str, a, out, axes, values) -> None:
        placement.require_current("cuFFT", name, [a, out])
        if _trace.active:
            _trace.fft_axes("fftn", a.ndim, (), {"axes": axes})

        def body() -> None:
            out._np[...] = values(a._np)

        # the body computes from the input's memory, so a CUDA graph replays it as it is
        core._run(name, [a], [out], body, kind="library", replay=True)


def _op_name(fft_type: int, direction: int, nd: bool) -> str:
    stem = "fftn" if nd else "fft"
    if fft_type in _R2C:
        return "r" + stem
    if fft_type in _C2R:
        return "ir" + stem
    return stem if direction == CUFFT_FORWARD else "i" + stem


def _unnormalised(fft_type: int, direction: int, axes, out_shape):
    """SciPy's transform without any scaling (cuFFT never scales), in the input's
    precision, over ``axes``."""
    if fft_type in _R2C:
        return lambda x: _sfft.rfftn(x, axes=axes)
    if fft_type in _C2R:
        s = [out_shape[ax] for ax in axes]
        return lambda x: _sfft.irfftn(x, s=s, axes=axes, norm="forward")
    if direction == CUFFT_INVERSE:
        return lambda x: _sfft.ifftn(x, axes=axes, norm="forward")
    return lambda x: _sfft.fftn(x, axes=axes)


class Plan1d(_Plan):
    """``batch`` transforms of ``nx`` points each along the last axis (C order)."""

    def __init__(self, nx: int, fft_type: int, batch: int) -> None:
        self.nx, self.batch = nx, batch
        n_in = nx // 2 + 1 if fft_type in _C2R else nx
        n_out = nx // 2 + 1 if fft_type in _R2C else nx
        itemsize = 8 if _is_single(fft_type) else 16
        key = (_op_name(fft_type, CUFFT_FORWARD, False), (batch, n_in),
               np.dtype(np.complex64 if _is_single(fft_type) else np.complex128).str,
               (batch, n_out))  # fmt: skip
        super().__init__(fft_type, itemsize * batch * n_out, key)

    def fft(self, a, out, direction: int) -> None:
        axes = (a.ndim - 1,)
        values = _unnormalised(self.fft_type, direction, axes, out.shape)
        self._launch(_op_name(self.fft_type, direction, False), a, out, axes, values)


class PlanNd(_Plan):
    """One transform over up to three adjacent ``axes`` (batched over the others) of a
    contiguous array, its output in the input's order; a real transform's last axis is
    ``last_axis`` with ``last_size`` points on its complex side or output."""

    def __init__(self, shape, fft_type: int, axes, order: str, last_axis, last_size) -> None:
        self.shape, self.axes, self.order = tuple(shape), tuple(axes), order
        self.last_axis, self.last_size = last_axis, last_size
        out = list(self.shape)
        if fft_type not in _C2C and last_size is not None:
            out[last_axis] = last_size
        itemsize = 8 if _is_single(fft_type) else 16
        key = (_op_name(fft_type, CUFFT_FORWARD, True), self.shape,
               np.dtype(np.complex64 if _is_single(fft_type) else np.complex128).str,
               tuple(out))  # fmt: skip
        super().__init__(fft_type, itemsize * int(np.prod(out)), key)

    def fft(self, a, out, direction: int) -> None:
        values = _unnormalised(self.fft_type, direction, self.axes, out.shape)
        self._launch(_op_name(self.fft_type, direction, True), a, out, self.axes, values)


# -- the DCTs and DSTs of cupyx.scipy.fft ------------------------------------------------------
class _Value:
    """A DCT's or DST's values (SciPy's, in the transform's type): a CUDA graph recomputes
    them from the input's memory on replay (cupysim/capture.py)."""

    __slots__ = ("args", "dtype", "fn", "kwargs")

    def __init__(self, fn, args, kwargs, dtype) -> None:
        self.fn, self.args, self.kwargs, self.dtype = fn, args, kwargs, dtype

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.fn(x, *self.args, **self.kwargs)).astype(self.dtype, copy=False)


def transform(name: str, fn):
    """``name`` of cupyx.scipy.fft (a DCT or DST), valued by ``fn`` (scipy.fft's)."""

    def f(x, /, *args, **kwargs):
        libs.require("cufft")
        if not isinstance(x, core.ndarray):
            raise TypeError("The input array a must be a cupy.ndarray")
        single = x.dtype in (np.float16, np.float32, np.complex64)
        vt = np.dtype(np.float32 if single else np.float64)
        if x.dtype.kind == "c":
            vt = np.dtype(np.complex64 if single else np.complex128)
        if x.dtype != vt:
            x = x.astype(vt)  # an elementwise copy on the current device
        elif x.base is not None or not x.flags.c_contiguous:
            x = x.copy()
        dev = placement.require_current("cuFFT", name, [x])
        value = _Value(fn, args, kwargs, vt)
        res = value(x._np)
        cache = plan_cache(dev)
        key = (name, x.shape, x.dtype.str, res.shape)
        if cache.get(key) is None:
            cache[key] = _Plan(CUFFT_C2C if single else CUFFT_Z2Z, res.nbytes, key)
        if _trace.active:
            _trace.fft_axes(name, x.ndim, args, kwargs)
        return core._wrap(name, res, [x], library=True, recompute=(value, (x._np,), {}, False))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"CuPy's ``{name}`` (cuFFT on the current device; values by SciPy)."
    return f
