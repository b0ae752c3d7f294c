"""The distributed FFT: every ``gk.fft`` transform of a sharded array.

Along axes other than the split axis a transform is local: each device transforms its
shard with the public ``gk.fft`` function, no communication. When the split axis is
transformed, the slab decomposition of FFTW-MPI and cuFFTMp runs: transform the local
axes, one all-to-all transpose (:func:`gpukit.sharding._reshard.exchange`) that moves
the split to an axis not transformed after it, transform the remaining axis. By
default a second exchange returns the input's layout; ``transposed_out=True``
(FFTW-MPI's ``FFTW_MPI_TRANSPOSED_OUT``) skips it and returns the result split along
the exchange axis. A real transform whose real axis is the split one may need two
exchanges (none is transformed after the first); a 1-d array has no other axis and
runs the four-step algorithm (three transposes, see :func:`_four_step`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import fft as gk_fft
from .._dispatch import dtypes as _dtypes
from .._dispatch import implements, operation
from .._runtime.workers import map_devices
from ..fft import _NORMS, _plan, _work_dtype, _workers
from ._array import ShardedArray
from ._checks import require_sharded
from ._layout import offsets, split_sizes
from ._reshard import exchange, reshard

__all__ = [
    "fft", "fft2", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft", "ifft2", "ifftn",
    "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2", "irfftn", "rfft", "rfft2",
    "rfftn",
]  # fmt: skip

Step = tuple[frozenset[int], Callable[[Any], Any]]

# public function -> the transform kind of gpukit.fft (its n-d name)
_KIND = {
    "fft": "fftn", "ifft": "ifftn", "rfft": "rfftn", "irfft": "irfftn", "hfft": "hfftn",
    "ihfft": "ihfftn", "fft2": "fftn", "ifft2": "ifftn", "rfft2": "rfftn", "irfft2": "irfftn",
    "fftn": "fftn", "ifftn": "ifftn", "rfftn": "rfftn", "irfftn": "irfftn", "hfft2": "hfftn",
    "hfftn": "hfftn", "ihfft2": "ihfftn", "ihfftn": "ihfftn",
}  # fmt: skip
_SWAPPED = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _local(kind: str, s: Sequence[int], axes: Sequence[int], norm: Any, options: dict) -> Step:
    """One per-device call of the public transform of ``kind`` over ``axes``.

    A transform along one axis other than the last runs on the view with that axis
    moved last: after an exchange it is the fastest in memory (``fast_axis``), so the
    library transforms contiguous rows instead of a strided batch.
    """
    s, axes = tuple(s), tuple(axes)
    many = getattr(gk_fft, kind)

    def call(x: Any, ax: tuple[int, ...]) -> Any:
        return many(x, s=s, axes=ax, norm=norm, **options)

    def run(x: Any) -> Any:
        if len(axes) != 1 or axes[0] == x.ndim - 1:
            return call(x, axes)
        moved = call(x.swapaxes(axes[0], -1), (x.ndim - 1,))
        return moved.swapaxes(axes[0], -1)

    return frozenset(axes), run


def _steps(kind: str, s: tuple[int, ...], axes: tuple[int, ...], split: int, norm, options):
    """The transform as per-device steps, in an order that keeps real axes right: an
    ``rfft`` first, an ``irfft`` last, the split axis as late as possible."""
    size = dict(zip(axes, s, strict=True))

    def step(k: str, over: Sequence[int]) -> list[Step]:
        return [_local(k, [size[a] for a in over], over, norm, options)] if over else []

    rest = [a for a in axes if a != split]
    last = axes[-1]
    if kind in ("fftn", "ifftn"):
        return step(kind, rest) + step(kind, [split])
    if kind == "rfftn":
        if split != last:
            return step("rfftn", rest) + step("fftn", [split])
        return step("rfftn", [last]) + step("fftn", rest)
    middle = [a for a in rest if a != last]  # irfftn
    if split != last:
        return step("ifftn", middle) + step("ifftn", [split]) + step("irfftn", [last])
    return step("ifftn", rest) + step("irfftn", [last])


def _exchange_axis(x: ShardedArray, later: frozenset[int], now: frozenset[int]) -> int:
    """Where to move the split: an axis no later step transforms if there is one (one
    exchange in all), else one this step does not; the longest (first on ties)."""
    free = [a for a in range(x.ndim) if a not in later] or [
        a for a in range(x.ndim) if a not in now
    ]
    return max(free, key=lambda a: (x.shape[a], -a))


def _transform(
    fn_name: str, x: Any, s: Any, axes: Any, norm: Any, one_d: bool,
    transposed_out: bool, out: Any, workers: Any,
) -> ShardedArray:  # fmt: skip
    name = f"gk.fft.{fn_name}"
    x = require_sharded(x, "x", name)
    if out is not None:
        raise TypeError(f"{name}: out= is not supported for a ShardedArray; use the result")
    if norm not in _NORMS:
        raise ValueError(
            f"{name}: norm must be None, 'backward', 'ortho' or 'forward', got {norm!r}"
        )
    options = {} if workers is None else {"workers": workers}
    if workers is not None:
        _workers(name, workers)
    _dtypes.check(name, "x", x)
    kind = _KIND[fn_name]
    s, axes = _plan(name, kind, x.shape, s, axes, one_d)
    _work_dtype(name, kind, np.dtype(x.dtype))  # a real transform refuses complex input
    if x.axis not in axes or len(x.devices) == 1:  # every transformed axis is local
        return x._map(_local(kind, s, axes, norm, options)[1])
    if kind == "hfftn":  # NumPy's and SciPy's definition: irfftn of the conjugate
        x, kind, norm = np.conjugate(x), "irfftn", _SWAPPED[norm]
    elif kind == "ihfftn":  # the conjugate of rfftn, the scaling on the other side
        y = _distributed(name, "rfftn", x, s, axes, _SWAPPED[norm], transposed_out, options)
        return np.conjugate(y, out=y)
    return _distributed(name, kind, x, s, axes, norm, transposed_out, options)


def _distributed(
    name: str, kind: str, x: ShardedArray, s: tuple[int, ...], axes: tuple[int, ...],
    norm: Any, transposed_out: bool, options: dict[str, Any],
) -> ShardedArray:  # fmt: skip
    """A complex or real transform over axes that include the split axis."""
    split = x.axis
    if x.ndim == 1:
        return _vector(name, kind, x, s[0], norm, options)
    steps = _steps(kind, s, axes, split, norm, options)
    for i, (now, fn) in enumerate(steps):
        if x.axis in now:
            later = frozenset().union(*(n for n, _ in steps[i:]))
            x = _move(x, _exchange_axis(x, later, now), now)
        x = x._map(fn)
    return x if transposed_out or x.axis == split else reshard(x, axis=split)


def _move(x: ShardedArray, axis: int, now: frozenset[int]) -> ShardedArray:
    """``x`` split along ``axis``; a single axis transformed next is made contiguous."""
    fast = next(iter(now)) if len(now) == 1 else None
    sizes = split_sizes(x.shape[axis], len(x.devices))
    return exchange(x, axis, x.devices, sizes, fast_axis=fast)


# -- a 1-d array: the four-step algorithm ------------------------------------------------------
def _vector(name: str, kind: str, x: ShardedArray, n: int, norm: Any, options: dict) -> Any:
    """The transform of a sharded vector, through complex four-step transforms."""
    devs = x.devices

    def resized(v: ShardedArray, length: int) -> ShardedArray:
        return exchange(v, 0, devs, split_sizes(length, len(devs)), length=length)

    if kind in ("fftn", "ifftn"):
        return _four_step(resized(x, n), kind == "ifftn", norm, options)
    if kind == "rfftn":
        _, spectrum = _work_dtype(name, kind, np.dtype(x.dtype))
        full = _four_step(resized(x, n).astype(spectrum), False, norm, options)
        return resized(full, n // 2 + 1)
    # irfftn: the real part of the inverse of the half spectrum, zero-padded to n, with
    # the terms 0 < k < n/2 doubled: each stands for itself and its conjugate twin.
    work, real = _work_dtype(name, kind, np.dtype(x.dtype))
    half = resized(x.astype(work, copy=False), n)
    starts = offsets(half.sizes)
    weighted = map_devices(
        x.backend, devs, lambda s, lo: s * _weights(x.backend.xp, lo, s.shape[0], n, real),
        half.shards, starts[:-1],
    )  # fmt: skip
    inverse = _four_step(ShardedArray(x.backend, weighted, 0, devs), True, norm, options)
    return inverse.real.astype(real, copy=False)


def _weights(xp: Any, lo: int, count: int, n: int, dtype: np.dtype) -> Any:
    """1 at k = 0 and k = n/2, 2 for 0 < k < n/2, 0 past n // 2 (what irfft discards)."""
    k = xp.arange(lo, lo + count)
    w = xp.where((k == 0) | (2 * k == n), 1.0, 2.0)
    return xp.where(2 * k > n, 0.0, w).astype(dtype)


def _four_step(x: ShardedArray, inverse: bool, norm: Any, options: dict) -> ShardedArray:
    """The DFT of a sharded vector of length ``N = n1 * n2`` (Bailey's four steps).

    Seen as an ``(n1, n2)`` matrix ``A[j1, j2] = x[j1 * n2 + j2]``: transform its
    columns (length ``n1``), multiply by the twiddles ``w**(k1 * j2)``, transform its rows
    (length ``n2``); ``X[k1 + n1 * k2]`` is the result at ``[k1, k2]``. Three
    transposes: to split by columns, back to rows, and from ``(k1, k2)`` to the output
    order; two cheap exchanges align rows at the start and restore the layout at the end.
    A prime length has no factors: it is transformed on the first device.
    """
    backend, devs, big_n = x.backend, x.devices, x.shape[0]
    one = gk_fft.ifft if inverse else gk_fft.fft
    n1 = max(d for d in range(1, math.isqrt(big_n) + 1) if big_n % d == 0)
    if n1 == 1:
        whole = reshard(x, devices=devs[:1])._map(lambda s: one(s, norm=norm, **options))
        return reshard(whole, devices=devs)
    n2 = big_n // n1
    rows = split_sizes(n1, len(devs))
    aligned = exchange(x, 0, devs, [r * n2 for r in rows])
    pieces = [s.reshape(r, n2) for s, r in zip(aligned.shards, rows, strict=True)]
    a = _move(ShardedArray(backend, pieces, 0, devs), 1, frozenset({0}))
    sign = 1.0 if inverse else -1.0

    def columns(s: Any, lo: int) -> Any:
        b = one(s.T, norm=norm, **options).T  # the columns are contiguous (fast_axis)
        xp = backend.xp
        k1 = xp.arange(n1).reshape(-1, 1)
        j2 = xp.arange(lo, lo + s.shape[1]).reshape(1, -1)
        angle = (k1 * j2 % big_n) * (sign * 2.0 * np.pi / big_n)  # exact index, then scale
        return b * (xp.cos(angle) + 1j * xp.sin(angle)).astype(b.dtype)

    b = map_devices(backend, devs, columns, a.shards, offsets(a.sizes)[:-1])
    c = reshard(ShardedArray(backend, b, 1, devs), axis=0)
    c = c._map(lambda s: one(s, axis=1, norm=norm, **options))  # [k1, k2], split by k1
    out = ShardedArray(backend, [s.T for s in c.shards], 1, devs)  # [k2, k1]
    out = reshard(out, axis=0)
    flat = ShardedArray(backend, [s.reshape(-1) for s in out.shards], 0, devs)
    return exchange(flat, 0, devs, split_sizes(big_n, len(devs)))


# -- fftshift ------------------------------------------------------------------------------------
def _shift(fn_name: str, x: Any, axes: Any) -> ShardedArray:
    name = f"gk.fft.{fn_name}"
    x = require_sharded(x, "x", name)
    _dtypes.check(name, "x", x)
    one = getattr(gk_fft, fn_name)
    axes = (
        tuple(range(x.ndim)) if axes is None else _plan(name, "fftn", x.shape, None, axes, False)[1]
    )
    others = tuple(a for a in axes if a != x.axis)
    if others:
        x = x._map(lambda s: one(s, axes=others))
    if x.axis not in axes:
        return x
    n = x.shape[x.axis]
    shift = n // 2 if fn_name == "fftshift" else -(n // 2)
    return exchange(x, x.axis, x.devices, x.sizes, shift=shift)


# -- the public functions: gk.sharding.<name>, and gk.fft.<name> of a ShardedArray -------------
_DOC = """{summary} of a sharded array: ``gk.fft.{fn}(x, ...)`` of a ShardedArray runs this.

Arguments as :func:`gpukit.fft.{fn}` but ``out`` (the result is a new ShardedArray;
``gk.fft.{fn}`` of a ShardedArray with ``out`` raises), plus ``transposed_out``. Axes
other than the split axis are transformed on each device; when the split axis is
transformed, the slab decomposition moves the split to another axis in one all-to-all
exchange first (a 1-d array: four-step algorithm, three exchanges).

Parameters
----------
x : ShardedArray
    Input, split along any axis.
{size_doc}
norm : {{None, "backward", "ortho", "forward"}}, optional
    As in NumPy.
workers : int, optional
    Passed to each device's call of :func:`gpukit.fft.{fn}`.
transposed_out : bool, default False
    Leave the result split along the exchange axis (FFTW-MPI's transposed output),
    saving the exchange back; the result's ``axis`` says which. Without it, and
    always for a 1-d array, the result is split along ``x.axis``, lengths as
    ``numpy.array_split`` gives.

Returns
-------
ShardedArray
    The transform, dtypes as :func:`gpukit.fft.{fn}` gives.

Raises
------
TypeError
    ``x`` is not a ShardedArray or has a dtype the transform refuses.
ValueError
    As for :func:`gpukit.fft.{fn}`.

Examples
--------
>>> import numpy as np
>>> import scipy.fft
>>> import gpukit as gk
>>> x = np.random.default_rng(0).standard_normal({shape})
>>> with gk.use_backend("numpy"):
...     y = gk.sharding.{fn}(gk.shard(x, axis=0))
>>> bool(np.allclose(gk.to_numpy(y), scipy.fft.{fn}(x)))
True
"""
_ONE_SIZE = """n : int, optional
    Transform length (crop or zero-pad).
axis : int, default -1
    Transform axis; may be the split axis."""
_N_SIZE = """s : sequence of int, optional
    Transform lengths along ``axes``.
axes : sequence of int, optional
    Axes to transform (default {default}); may include the split axis."""


def _one_d(fn: str, summary: str) -> Callable[..., ShardedArray]:
    def transform(
        x: ShardedArray, n: int | None = None, axis: int = -1, norm: str | None = None,
        *, workers: int | None = None, transposed_out: bool = False,
    ) -> ShardedArray:  # fmt: skip
        return _transform(fn, x, n, (axis,), norm, True, transposed_out, None, workers)

    return _publish(transform, fn, summary, _ONE_SIZE, "(12,)", True)


def _n_dim(fn: str, summary: str, default: tuple[int, ...] | None) -> Callable[..., ShardedArray]:
    def transform(
        x: ShardedArray, s: Sequence[int] | None = None, axes: Sequence[int] | None = default,
        norm: str | None = None, *, workers: int | None = None, transposed_out: bool = False,
    ) -> ShardedArray:  # fmt: skip
        return _transform(fn, x, s, axes, norm, False, transposed_out, None, workers)

    what = "every axis, or the last ``len(s)``" if default is None else "(-2, -1)"
    return _publish(transform, fn, summary, _N_SIZE.format(default=what), "(6, 5)", False)


def _publish(transform: Any, fn: str, summary: str, size_doc: str, shape: str, one_d: bool):
    transform.__name__ = transform.__qualname__ = fn
    transform.__module__ = "gpukit.sharding"
    transform.__doc__ = _DOC.format(summary=summary, fn=fn, size_doc=size_doc, shape=shape)
    public = operation(f"gk.sharding.{fn}", native=("sharded",))(transform)
    implements(f"gk.sharding.{fn}", "sharded")(public)  # numpy.fft.<fn> of a ShardedArray

    @implements(f"gk.fft.{fn}", "sharded")
    def generic(x: Any, s: Any, axes: Any, norm: Any, out: Any, workers: Any) -> ShardedArray:
        """``gk.fft.<fn>`` of a ShardedArray: its operation passes the resolved arguments
        (``n`` as ``s``, ``(axis,)`` as ``axes``) to the same transform."""
        return _transform(fn, x, s, axes, norm, one_d, False, out, workers)

    return public


fft = _one_d("fft", "Discrete Fourier transform")
ifft = _one_d("ifft", "Inverse discrete Fourier transform")
rfft = _one_d("rfft", "Discrete Fourier transform of a real signal")
irfft = _one_d("irfft", "Inverse of :func:`rfft`")
hfft = _one_d("hfft", "Transform of a Hermitian-symmetric signal")
ihfft = _one_d("ihfft", "Inverse of :func:`hfft`")
fft2 = _n_dim("fft2", "Two-dimensional discrete Fourier transform", (-2, -1))
ifft2 = _n_dim("ifft2", "Two-dimensional inverse discrete Fourier transform", (-2, -1))
rfft2 = _n_dim("rfft2", "Two-dimensional transform of a real signal", (-2, -1))
irfft2 = _n_dim("irfft2", "Inverse of :func:`rfft2`", (-2, -1))
fftn = _n_dim("fftn", "N-dimensional discrete Fourier transform", None)
ifftn = _n_dim("ifftn", "N-dimensional inverse discrete Fourier transform", None)
rfftn = _n_dim("rfftn", "N-dimensional transform of a real signal", None)
irfftn = _n_dim("irfftn", "Inverse of :func:`rfftn`", None)
hfft2 = _n_dim("hfft2", "Two-dimensional transform of a Hermitian-symmetric signal", (-2, -1))
ihfft2 = _n_dim("ihfft2", "Inverse of :func:`hfft2`", (-2, -1))
hfftn = _n_dim("hfftn", "N-dimensional transform of a Hermitian-symmetric signal", None)
ihfftn = _n_dim("ihfftn", "Inverse of :func:`hfftn`", None)


def _shifter(fn: str, summary: str) -> Callable[..., ShardedArray]:
    def shift(x: ShardedArray, axes: int | Sequence[int] | None = None) -> ShardedArray:
        return _shift(fn, x, axes)

    shift.__name__ = shift.__qualname__ = fn
    shift.__module__ = "gpukit.sharding"
    shift.__doc__ = f"""{summary} of a sharded array: ``gk.fft.{fn}(x)`` runs this.

    Along the split axis the roll is one exchange between devices; the result is
    split like ``x``.

    Parameters
    ----------
    x : ShardedArray
        A spectrum, split along any axis.
    axes : int or sequence of int, optional
        Axes to shift (default all).

    Returns
    -------
    ShardedArray
        Split like ``x``.

    Raises
    ------
    TypeError
        ``x`` is not a ShardedArray or has a non-numeric dtype.
    ValueError
        An axis is out of range or repeated.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> with gk.use_backend("numpy"):
    ...     y = gk.sharding.{fn}(gk.shard(np.arange(5.0)))
    >>> gk.to_numpy(y).tolist() == np.fft.{fn}(np.arange(5.0)).tolist()
    True
    """
    public = operation(f"gk.sharding.{fn}", native=("sharded",))(shift)
    implements(f"gk.fft.{fn}", "sharded")(public)
    implements(f"gk.sharding.{fn}", "sharded")(public)  # numpy.fft.<fn> of a ShardedArray
    return public


fftshift = _shifter("fftshift", "Zero frequency moved to the centre")
ifftshift = _shifter("ifftshift", "Inverse of :func:`fftshift`")
