"""Virtual CPU devices: ``GPUKIT_CPU_DEVICES=N`` host "devices" for multi-device code on CPU.

JAX's ``--xla_force_host_platform_device_count`` is the model: the numpy backend
exposes N devices sharing host memory, each served by its own worker thread, so
every multi-device path runs and is tested without a GPU.

Representation. A plain ``numpy.ndarray`` is host data that belongs to no device
and mixes with anything, as before: with the default N = 1 nothing changes and
nothing costs extra. An array *placed* on a virtual device (``gk.asarray(x,
device=i)``, a shard, anything created inside ``gk.device(i)`` while N > 1) is a
:class:`VirtualDeviceArray`, a zero-copy ndarray view carrying ``device_id``.
Slices and the results of ufuncs and of NumPy's functions (``np.concatenate``,
``np.dot``, ``np.where``, ...) keep the tag; a ufunc or a NumPy function mixing two
devices' arrays raises :class:`~gpukit.DeviceMismatchError`, as CuPy refuses to mix two
GPUs' arrays, and so does every gpukit operation (through ``gpukit._dispatch.prepare``).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..errors import DeviceMismatchError

__all__ = [
    "ENV_VAR",
    "MAX_DEVICES",
    "VirtualDeviceArray",
    "cpu_device_count",
    "parse_count",
    "place",
]

ENV_VAR = "GPUKIT_CPU_DEVICES"
#: Each virtual device used gets its own worker thread; a count above this is a typo, not a
#: plan (the largest virtual-device meshes people test with have a few hundred devices).
MAX_DEVICES = 1024
#: What to do about a malformed value, for every message that reports one.
FIX = f"set {ENV_VAR} to a whole number from 1 to {MAX_DEVICES}, or unset it for one device"


def parse_count(raw: str) -> int:
    """The device count ``raw`` spells: plain ASCII decimal digits only, 1 to MAX_DEVICES.

    ``int()`` would also take ``"1_0"`` (10), ``"+2"`` and non-ASCII digits; nobody
    writing an environment variable means those, so they are refused like ``"1e9"``.

    Raises
    ------
    ValueError
        Naming the variable, the value and the fix.
    """
    text = raw.strip()
    count = int(text) if text.isascii() and text.isdigit() else 0
    if not 1 <= count <= MAX_DEVICES:
        raise ValueError(
            f"{ENV_VAR}={raw!r} is not a valid number of virtual CPU devices for the numpy "
            f"backend. Fix: {FIX}"
        )
    return count


def cpu_device_count() -> int:
    """``GPUKIT_CPU_DEVICES`` (default 1) as a validated positive integer."""
    raw = os.environ.get(ENV_VAR, "")
    return parse_count(raw) if raw.strip() else 1


class VirtualDeviceArray(np.ndarray):
    """A host array placed on virtual CPU device ``device_id`` (a view, never a copy).

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> from gpukit._host.virtual import place
    >>> a, b = place(np.ones(2), 0), place(np.ones(2), 1)
    >>> (a + a).device_id
    0
    >>> try:
    ...     a + b
    ... except gk.DeviceMismatchError as e:
    ...     print(e)
    ufunc 'add' mixes arrays of virtual devices numpy:0 and numpy:1; move one ...
    >>> import numpy as np
    >>> np.concatenate([a, a]).device_id
    0
    >>> try:
    ...     np.concatenate([a, b])
    ... except gk.DeviceMismatchError as e:
    ...     print(e)
    numpy.concatenate mixes arrays of virtual devices numpy:0 and numpy:1; move one ...
    """

    device_id: int = 0

    def __array_finalize__(self, obj: Any) -> None:
        self.device_id = getattr(obj, "device_id", 0)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out", ())
        device = _device(f"ufunc {ufunc.__name__!r}", (*inputs, *out))
        args = [_plain(x) for x in inputs]
        if out:
            kwargs["out"] = tuple(_plain(x) for x in out)
        result = getattr(ufunc, method)(*args, **kwargs)
        if out:
            return out[0] if len(out) == 1 else out
        if isinstance(result, tuple):
            return tuple(_tag(r, device) for r in result)
        return _tag(result, device)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if func in _QUERIES:  # they read no values across devices: nothing to refuse
            return super().__array_function__(func, types, args, kwargs)
        device = _device(f"numpy.{func.__name__}", (args, kwargs))
        result = super().__array_function__(func, types, args, kwargs)
        return _tag_all(result, device)


# NumPy functions that only inspect their arguments' memory, shape or dtype.
_QUERIES = frozenset(
    {
        np.shares_memory,
        np.may_share_memory,
        np.shape,
        np.ndim,
        np.size,
        np.result_type,
        np.iscomplexobj,
        np.isrealobj,
    }
)


def _device(what: str, values: Any) -> int | None:
    """The one virtual device of the arrays in ``values`` (nested sequences, dicts), or
    None; DeviceMismatchError when two differ."""
    device = None
    stack = [values]
    while stack:
        x = stack.pop()
        if isinstance(x, VirtualDeviceArray):
            if device is None:
                device = x.device_id
            elif x.device_id != device:
                raise DeviceMismatchError(
                    f"{what} mixes arrays of virtual devices numpy:{device} and "
                    f"numpy:{x.device_id}; move one explicitly with gk.asarray(x, device=...)"
                )
        elif isinstance(x, list | tuple):
            stack.extend(reversed(x))  # popped in order: the first mismatch is named first
        elif isinstance(x, dict):
            stack.extend(reversed(x.values()))
    return device


def _tag_all(x: Any, device: int | None) -> Any:
    if device is None:
        return x
    if isinstance(x, list | tuple) and not hasattr(x, "_fields"):  # np.split's list
        return type(x)(_tag_all(y, device) for y in x)
    return _tag(x, device)


def _plain(x: Any) -> Any:
    return x.view(np.ndarray) if isinstance(x, VirtualDeviceArray) else x


def _tag(x: Any, device: int | None) -> Any:
    if device is None or not isinstance(x, np.ndarray):
        return x
    return place(x, device)


def place(x: Any, device: int) -> VirtualDeviceArray:
    """View ``x`` as an array on virtual device ``device`` (no copy)."""
    out = np.asarray(x).view(VirtualDeviceArray)
    out.device_id = device
    return out
