"""Krylov solves over row-sharded operators: ``gk.linalg.cg``, ``bicgstab`` and ``minres``
given a :class:`ShardedArray` or one row block per device.

The solvers of :mod:`gpukit.linalg.iterative` run here, registered as the sharded
kind's implementations (row blocks, a plain list, are routed here by the solvers),
with their validation and loops unchanged: only the vector space and the placement
differ. The loops of :mod:`gpukit.linalg._krylov` take their vector operations from ``xp``.
:class:`ShardedSpace` provides the same few functions for 1-d :class:`ShardedArray`
vectors: elementwise ones run shard by shard on each device's worker; ``vdot`` adds
the per-device partial products through the collectives' ``reduce``, on the first
device in device order, so a solve is the same on every run with the same devices.

The operator is split by rows to match the vectors: block *i* (rows ``lo_i:hi_i``)
lives on device *i*. A mat-vec all-gathers the vector (each device needs all of
it) and multiplies each block on its own device.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._dispatch import implements, operation
from .._runtime.placement import owner_of
from .._runtime.workers import map_devices
from .._select.selection import get_backend
from ..backend import Backend
from ..errors import DeviceMismatchError
from ..linalg import iterative
from ..linalg._checks import solve_dtype
from ..sparse import issparse, to_backend
from ._array import ShardedArray, split

__all__ = ["Setup", "ShardedSpace", "setup"]

Op = Callable[[Any], Any]


class ShardedSpace:
    """``xp.vdot``, ``multiply``, ``add``, ``subtract``, ``copyto``, ``empty_like``,
    ``zeros_like`` for vectors sharded over ``devices`` (each call: one task per device)."""

    def __init__(self, backend: Backend, devices: tuple[int, ...]) -> None:
        self.backend, self.devices = backend, devices
        self._xp = backend.xp
        self._collectives = backend.collectives(devices)
        self._spaces: dict[np.dtype, Any] = {}

    def _fused(self, dtype: np.dtype) -> Any:
        """The backend's Krylov space for ``dtype`` shards (its fused axpy/xpay)."""
        space = self._spaces.get(dtype)
        if space is None:
            space = self._spaces[dtype] = self.backend.krylov_space(dtype)
        return space

    def _map(self, fn: Callable[..., Any], *vectors: ShardedArray) -> list[Any]:
        return map_devices(self.backend, self.devices, fn, *(v.shards for v in vectors))

    def _wrap(self, parts: list[Any]) -> ShardedArray:
        return ShardedArray(self.backend, parts, 0, self.devices)

    def vdot(self, a: ShardedArray, b: ShardedArray) -> Any:
        """``sum(conj(a) * b)`` as a 0-d array on the first device (partials in device order)."""
        return self._collectives.reduce(self._map(self._xp.vdot, a, b))

    def multiply(self, x: ShardedArray, alpha: Any, out: ShardedArray) -> ShardedArray:
        xp = self._xp
        self._map(lambda s, o: xp.multiply(s, alpha, out=o), x, out)
        return out

    def add(self, x: ShardedArray, y: ShardedArray, out: ShardedArray) -> ShardedArray:
        self._map(lambda a, b, o: self._xp.add(a, b, out=o), x, y, out)
        return out

    def subtract(self, x: ShardedArray, y: ShardedArray, out: ShardedArray) -> ShardedArray:
        self._map(lambda a, b, o: self._xp.subtract(a, b, out=o), x, y, out)
        return out

    def axpy(self, alpha: Any, x: ShardedArray, y: ShardedArray) -> None:
        """``y += alpha * x``, one task per device, each the backend's fused update."""
        axpy = self._update("axpy", y)
        if axpy is None:
            xp = self._xp
            self._map(lambda a, b: xp.add(b, xp.multiply(a, alpha), out=b), x, y)
        else:
            self._map(lambda a, b: axpy(alpha, a, b), x, y)

    def xpay(self, x: ShardedArray, beta: Any, y: ShardedArray) -> None:
        """``y = x + beta * y``, one task per device, each the backend's fused update."""
        xpay = self._update("xpay", y)
        if xpay is None:
            xp = self._xp
            self._map(lambda a, b: xp.add(xp.multiply(b, beta, out=b), a, out=b), x, y)
        else:
            self._map(lambda a, b: xpay(a, beta, b), x, y)

    def _update(self, name: str, y: ShardedArray) -> Any:
        """The backend's fused ``name`` for ``y``'s dtype, or None (no shard is empty:
        BLAS refuses empty vectors)."""
        if any(s.size == 0 for s in y.shards):
            return None
        return getattr(self._fused(np.dtype(y.dtype)), name, None)

    def copyto(self, dst: ShardedArray, src: ShardedArray) -> None:
        """``dst[...] = src``, shard by shard."""
        self._map(lambda d, s: self._xp.copyto(d, s), dst, src)

    def all_finite(self, x: ShardedArray) -> bool:
        """Whether every entry of every shard is finite."""
        return all(self._map(self.backend.linalg_all_finite, x))

    def empty_like(self, x: ShardedArray) -> ShardedArray:
        return self._wrap(self._map(self._xp.empty_like, x))

    def zeros_like(self, x: ShardedArray) -> ShardedArray:
        return self._wrap(self._map(self._xp.zeros_like, x))

    def max_abs(self, x: ShardedArray) -> float:
        """The largest magnitude of any entry (0 for no entries)."""
        xp = self._xp
        parts = self._map(lambda s: float(xp.abs(s).max()) if s.size else 0.0, x)
        return max(parts, default=0.0)

    def norm(self, x: ShardedArray) -> float:
        return float(abs(self.vdot(x, x).item())) ** 0.5


@dataclass
class Setup:
    """A sharded solve ready to run: space, operators and vectors on the devices."""

    space: ShardedSpace
    matvec: Op
    psolve: Op | None
    b: ShardedArray
    x: ShardedArray
    dtype: np.dtype


Layout = tuple[Backend, tuple[int, ...], tuple[int, ...]]


def _layout(op: str, a: Any, b: Any, x0: Any) -> Layout:
    """Backend, devices and row counts: from ``A`` if sharded, else ``b``, ``x0``, blocks."""
    if isinstance(a, ShardedArray):
        if a.ndim != 2 or a.axis != 0:
            raise ValueError(
                f"{op}: a sharded 'A' must be a 2-D matrix split along its rows (axis 0); got "
                f"shape {a.shape} split along axis {a.axis}"
            )
        return a.backend, a.devices, a.sizes
    for v in (b, x0):
        if isinstance(v, ShardedArray):
            return v.backend, v.devices, v.sizes
    backend = get_backend()
    if len(a) > backend.device_count():
        raise ValueError(
            f"{op}: 'A' has {len(a)} row blocks but backend {backend.name!r} has "
            f"{backend.device_count()} devices; give one block per device"
        )
    return backend, tuple(range(len(a))), tuple(int(blk.shape[0]) for blk in a)


def _check_layout(op: str, v: ShardedArray, name: str, layout: Layout) -> None:
    backend, devices, sizes = layout
    if v.backend is not backend or v.devices != devices:
        raise DeviceMismatchError(
            f"{op}: {name!r} is sharded over {v.backend.name}:{v.devices} but the solve "
            f"runs on {backend.name}:{devices}; shard every argument over the same devices"
        )
    if v.sizes != sizes:
        raise ValueError(
            f"{op}: {name!r} has shard lengths {v.sizes} but the solve's row blocks have "
            f"{sizes}; shard every argument the same way"
        )


def _vector(op: str, v: Any, name: str, layout: Layout) -> ShardedArray:
    backend, devices, sizes = layout
    n = sum(sizes)
    if isinstance(v, ShardedArray):
        if v.ndim != 1:
            raise ValueError(f"{op}: {name!r} must be 1-D, got shape {v.shape}")
        _check_layout(op, v, name, layout)
        return v
    shape = tuple(getattr(v, "shape", np.shape(v)))
    if shape != (n,):
        raise ValueError(f"{op}: {name!r} must have shape ({n},) to match 'A'; got {shape}")
    return split(backend, v, 0, devices, sizes)


def _blocks(op: str, a: Any, name: str, layout: Layout) -> list[Any]:
    """``a`` as one row block per device, each a native dense or sparse matrix there."""
    backend, devices, sizes = layout
    n = sum(sizes)
    if isinstance(a, ShardedArray):
        if a.ndim != 2 or a.axis != 0 or a.shape != (n, n):
            raise ValueError(
                f"{op}: a sharded {name!r} must be ({n}, {n}) split along axis 0; got shape "
                f"{a.shape} split along axis {a.axis}"
            )
        _check_layout(op, a, name, layout)
        return list(a.shards)
    if isinstance(a, list | tuple):
        if len(a) != len(devices):
            raise ValueError(
                f"{op}: {name!r} has {len(a)} row blocks but the vectors are sharded over "
                f"{len(devices)} devices"
            )
        got = [tuple(blk.shape) for blk in a]
        if got != [(r, n) for r in sizes]:
            raise ValueError(
                f"{op}: {name!r}'s row blocks have shapes {got}; expected "
                f"{[(r, n) for r in sizes]} (one per device, matching the vectors' shards)"
            )
        blocks = list(a)
    else:
        if issparse(a):
            a = a.tocsr()  # row-sliceable
        if tuple(a.shape) != (n, n):
            raise ValueError(f"{op}: {name!r} has shape {tuple(a.shape)}; expected ({n}, {n})")
        bounds = np.cumsum([0, *sizes])
        blocks = [a[int(lo) : int(hi)] for lo, hi in itertools.pairwise(bounds)]

    def place(blk: Any, device: int) -> Any:
        if issparse(blk):
            return to_backend(backend, blk, name)  # on this worker's (current) device
        if owner_of(blk) is not None:  # copied from the caller's thread, below
            return blk
        return backend.asarray(np.asarray(blk), device=device)

    blocks = [
        backend.to_device(blk, d, copy=False) if owner_of(blk) is not None else blk
        for blk, d in zip(blocks, devices, strict=True)
    ]
    return map_devices(backend, devices, place, blocks, devices)


def _operator(op: str, a: Any, name: str, space: ShardedSpace, layout) -> Op:
    if hasattr(a, "matvec"):
        raise TypeError(
            f"{op}: a LinearOperator {name!r} cannot take sharded vectors; give a dense or "
            "sparse matrix, a ShardedArray, one row block per device, or a callable mapping "
            "a ShardedArray to a ShardedArray"
        )
    if callable(a) and not hasattr(a, "shape"):
        return a
    backend, devices = space.backend, space.devices
    products = [backend.linalg_matvec(blk) for blk in _blocks(op, a, name, layout)]
    collectives = backend.collectives(devices)

    def matvec(v: ShardedArray) -> ShardedArray:
        whole = list(v.shards) if len(devices) == 1 else collectives.all_gather(v.shards)
        parts = map_devices(backend, devices, lambda f, u: f(u), products, whole)
        return ShardedArray(backend, parts, 0, devices)

    return matvec


def _dtype_of(a: Any) -> np.dtype | None:
    if a is None or (callable(a) and not hasattr(a, "dtype")):
        return None
    if isinstance(a, list | tuple):
        return np.result_type(*(blk.dtype for blk in a)) if a else None
    return np.dtype(a.dtype)


def setup(op: str, a: Any, b: Any, x0: Any, m: Any) -> Setup:
    """Validate a sharded solve and place everything: vectors sharded like the operator."""
    if isinstance(a, list | tuple) and not a:
        raise ValueError(f"{op}: 'A' is an empty list of row blocks")
    layout = _layout(op, a, b, x0)
    backend, devices, _ = layout
    space = ShardedSpace(backend, devices)
    b = _vector(op, b, "b", layout)
    x0 = None if x0 is None else _vector(op, x0, "x0", layout)
    found = [b.dtype] + [d for d in (_dtype_of(a), _dtype_of(m), _dtype_of(x0)) if d is not None]
    dtype = solve_dtype(*found)
    matvec = _operator(op, a, "A", space, layout)
    psolve = None if m is None else _operator(op, m, "M", space, layout)
    b = _astype(space, b, dtype, copy=False)
    x = space.zeros_like(b) if x0 is None else _astype(space, x0, dtype, copy=True)
    return Setup(space, matvec, psolve, b, x, dtype)


def _astype(space: ShardedSpace, v: ShardedArray, dtype: np.dtype, copy: bool) -> ShardedArray:
    parts = map_devices(
        space.backend, space.devices, lambda s: s.astype(dtype, copy=copy), v.shards
    )
    return ShardedArray(space.backend, parts, 0, space.devices)


def _register(method: str) -> None:
    def solve(
        A: Any,
        b: Any,
        x0: Any = None,
        *,
        rtol: float = 1e-5,
        atol: float = 0.0,
        maxiter: int | None = None,
        M: Any = None,
        callback: Callable[[Any], Any] | None = None,
    ) -> tuple[Any, iterative.IterativeInfo]:
        return iterative._solve(method, A, b, x0, rtol, atol, maxiter, M, callback, setup=setup)

    solve.__name__ = solve.__qualname__ = f"{method}_sharded"
    name = f"gk.linalg.{method}"
    implements(name, "sharded")(operation(name, native=("sharded",))(solve))


for _method in ("cg", "bicgstab", "minres"):
    _register(_method)


@implements("gk.linalg.gmres", "sharded")
def _gmres(*args: Any, **kwargs: Any) -> Any:
    """Row blocks and sharded operands get the same reason, whichever way they came."""
    raise TypeError(
        "gk.linalg.gmres: gmres does not take sharded operands (its Arnoldi basis is a dense "
        "block); use cg, bicgstab or minres, or gather the arrays"
    )
