"""The batched FFTs of ``gk.fft`` on Dask arrays: one transform batch per chunk.

A transform needs the whole of each transformed axis, so every transformed axis must be
one chunk (a ``ValueError`` names ``rechunk`` otherwise); the other axes may be chunked
at will and each chunk is a batch of transforms. ``workers`` defaults to 1 on Dask
arrays: Dask already runs one task per worker thread.
"""

from __future__ import annotations

import functools
from typing import Any

from .. import fft as gk_fft
from .._dispatch import dtypes as _dtypes
from .._dispatch import implements
from ._chunks import OnChunks, chunk_type, meta

_TRANSFORMS = [n for n in gk_fft.__all__ if n.endswith(("fft", "fft2", "fftn"))]


def _chunk_transform(block: Any, *, fn_name: str, s: Any, axes: Any, norm: Any, workers: int):
    fn = getattr(gk_fft, fn_name)
    if fn_name.endswith(("2", "n")):
        return fn(block, s, axes, norm, workers=workers)
    return fn(block, s[0], axes[0], norm, workers=workers)


def _one_chunk(name: str, x: Any, axes: tuple[int, ...]) -> None:
    for a in axes:
        if len(x.chunks[a]) > 1:
            raise ValueError(
                f"{name}: x is split into {len(x.chunks[a])} chunks along the transformed axis "
                f"{a} (chunks {x.chunks[a]}); each transformed axis must be one chunk: "
                f"x.rechunk({{{a}: -1}}), chunking the other axes instead"
            )


def _register(fn_name: str) -> None:
    name = f"gk.fft.{fn_name}"
    kind = fn_name.removesuffix("2").removesuffix("n") + "n"
    one_d = not fn_name.endswith(("2", "n"))

    @implements(name, "dask")
    def transform(x: Any, s: Any, axes: Any, norm: Any, out: Any, workers: Any) -> Any:
        if out is not None:
            raise TypeError(
                f"{name}: out is not supported with a Dask array x (Dask arrays are "
                "immutable); use the returned array"
            )
        if norm not in gk_fft._NORMS:
            raise ValueError(
                f"{name}: norm must be None, 'backward', 'ortho' or 'forward', got {norm!r}"
            )
        threads = 1 if workers is None else gk_fft._workers(name, workers)
        x = _dtypes.check(name, "x", x)
        chunk_type(name, {"x": x})
        s, axes = gk_fft._plan(name, kind, tuple(x.shape), s, axes, one_d)
        _, result = gk_fft._work_dtype(name, kind, x.dtype)
        _one_chunk(name, x, axes)
        shape = gk_fft._result_shape(kind, tuple(x.shape), s, axes)
        chunks = tuple(
            (n,) if a in axes else c for a, (n, c) in enumerate(zip(shape, x.chunks, strict=True))
        )
        fn = functools.partial(
            _chunk_transform, fn_name=fn_name, s=s, axes=axes, norm=norm, workers=threads
        )
        task = OnChunks(name, fn, type(x._meta), ("x",), (True,))
        return x.map_blocks(task, chunks=chunks, dtype=result, meta=meta(x, x.ndim, result))

    transform.__name__ = transform.__qualname__ = f"{fn_name}_dask"


for _name in _TRANSFORMS:
    _register(_name)
