"""NumPy's view of a sharded array: ``numpy.asarray(x)`` and NumPy functions.

``numpy.asarray(x)`` gathers the shards on the host. On a device backend that is an
implicit device-to-host transfer: governed by the transfer guard (refused under
``"disallow"``) and counted, as a host input reaching a device is.

NumPy functions (NEP 18's ``__array_function__``): ``numpy.sum``/``mean``/``max``/``min``
reduce per device (:mod:`.reductions`), ``numpy.vdot``/``numpy.dot`` of sharded
vectors too, ``numpy.linalg.norm`` and the ``numpy.fft`` functions run gpukit's sharded
implementations (``gk.linalg.norm``, the distributed FFT), and ``numpy.shape``-like
questions are answered without touching data. Every other NumPy function sees the
gathered array, exactly as it would if :class:`~gpukit.ShardedArray` only had
``__array__``: a host copy, guarded and counted the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._dispatch.kinds import implementation, kind_of
from .._runtime import transfer as _transfer
from ._layout import describe
from ._reduce import dot, vdot

__all__ = ["InteropMixin"]

_METHODS: dict[Callable[..., Any], str] = {
    np.sum: "sum", np.mean: "mean", np.max: "max", np.amax: "max", np.min: "min",
    np.amin: "min", np.copy: "copy", np.real: "real", np.imag: "imag",
}  # fmt: skip
if hasattr(np, "astype"):  # NumPy >= 2.1
    _METHODS[np.astype] = "astype"
_PROPERTIES = frozenset({"real", "imag"})


class InteropMixin:
    """``__array__``, ``__array_function__``, ``len`` and truth value for sharded arrays."""

    __slots__ = ()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if copy is False:
            raise ValueError(
                f"numpy cannot view a {describe(self)} without a copy: its shards are "
                "separate arrays; gk.to_numpy(x) gathers them"
            )
        backend = self.backend
        if backend.is_device:
            nbytes = int(np.prod(self.shape)) * self.dtype.itemsize
            _transfer.check_implicit_to_host(
                "a ShardedArray", self.shape, self.dtype, nbytes, f"{backend.name}:{self.devices}"
            )
        host = self.to_numpy()  # counted on a device backend
        return host if dtype is None else host.astype(dtype, copy=False)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        method = _METHODS.get(func)
        if method is not None and args and args[0] is self:
            if method in _PROPERTIES:
                return getattr(self, method)
            return getattr(self, method)(*args[1:], **kwargs)
        answer = _metadata(func, self, args, kwargs)
        if answer is not NotImplemented:
            return answer
        name = _gpukit_name(func)
        if name is not None:
            return implementation(name, kind_of(self), self)(*args, **kwargs)
        if func in (np.vdot, np.dot) and len(args) == 2 and not kwargs:
            if all(isinstance(a, InteropMixin) for a in args):
                if func is np.vdot or args[0].ndim == 1:
                    return (vdot if func is np.vdot else dot)(*args)
        return func(*_gathered(args), **_gathered(kwargs))

    def __len__(self) -> int:
        return self.shape[0]

    def __bool__(self) -> bool:
        if int(np.prod(self.shape)) != 1:
            raise ValueError(
                f"the truth value of a {describe(self)} with more than one element is "
                "ambiguous; reduce it first (x.max(), x.min(), x.sum())"
            )
        return bool(np.asarray(self).reshape(()))


def _metadata(func: Any, x: Any, args: Any, kwargs: Any) -> Any:
    """Answers about shape and dtype, without moving data."""
    if func is np.shape:
        return x.shape
    if func is np.ndim:
        return x.ndim
    if func is np.size:
        axis = kwargs.get("axis", args[1] if len(args) > 1 else None)
        return int(np.prod(x.shape)) if axis is None else x.shape[axis]
    if func in (np.iscomplexobj, np.isrealobj):
        return (x.dtype.kind == "c") == (func is np.iscomplexobj)
    if func is np.result_type:
        return np.result_type(*(a.dtype if isinstance(a, InteropMixin) else a for a in args))
    return NotImplemented


def _gpukit_name(func: Any) -> str | None:
    """The gpukit operation a NumPy function has a sharded twin in, if any."""
    module = getattr(func, "__module__", "")
    if module == "numpy.fft":  # gk.sharding's spelling takes NumPy's signature
        return f"gk.sharding.{func.__name__}"
    if func is np.linalg.norm:
        return "gk.linalg.norm"
    return None


def _gathered(value: Any) -> Any:
    """``value`` with every sharded array in it (at any list/tuple/dict depth) on the host."""
    if isinstance(value, InteropMixin):
        return np.asarray(value)
    if isinstance(value, list | tuple):
        return type(value)(_gathered(v) for v in value)
    if isinstance(value, dict):
        return {k: _gathered(v) for k, v in value.items()}
    return value
