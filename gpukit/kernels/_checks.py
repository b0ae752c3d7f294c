"""Argument checks shared by the ``gk.kernels`` front-ends, and their plans.

Every check runs before any backend is called, so each backend raises the same
exception with the same message, prefixed with the operation (``gk.kernels.<name>:``):
``TypeError`` for a dtype that is not accepted (the rule of every numerical front-end,
:mod:`gpukit._dispatch.dtypes`) or a hyper-parameter that is not a number, ``ValueError`` for
shapes, layouts, overlapping arrays and hyper-parameter values (non-finite included).

A front-end's first call with given array types, dtypes and shapes and given options
(the activation, whether an optional array is given) keeps a *plan* in :data:`PLANS`
(:mod:`gpukit._runtime.plans`, emptied when the registry changes), keyed by those and
the active backend: the backend's kernel, bound to such arguments by :func:`bind`. A
warm call looks it up and skips the checks that follow from the key alone (dtypes,
shapes, placement); the checks of values (hyper-parameters, and the layout, writeability
and overlap of arrays updated in place) run on every call, before the kernel.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from .._dispatch import dtypes as _dtypes
from .._dispatch.inputs import keep, keep_placed, placed, prepare
from .._runtime import plans as _plans
from .._runtime.placement import namespace
from ..backend import Backend

_INF = math.inf
#: NumPy's flag bits (``ndarray.flags.num``): an array that allocated its own memory,
#: and one an update may write in place as it is (C-contiguous, writeable, its own
#: memory). NumPy arrays with these bits that are distinct objects share no memory: a
#: front-end tests them first and calls :func:`check_updatable` only where one is missing.
OWNDATA = 0x4
UPDATABLE = 0x1 | OWNDATA | 0x400
FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
#: Label dtypes (the CUDA kernels read int32 or int64; others are converted).
INTEGERS = tuple(np.dtype(c) for c in "bBhHiIlLqQ")


def place(
    op: str,
    arrays: Sequence[Any],
    names: Sequence[str],
    accepted: Sequence[Collection[np.dtype]],
    inplace: Collection[str] = (),
    optional: Collection[str] = (),
) -> tuple[Backend, list[Any]]:
    """Check each argument's dtype against ``accepted`` (TypeError), ``prepare`` them once
    and make any remaining host data (lists) native arrays. Planned as
    :func:`gpukit._dispatch.inputs.placed` says.

    Arrays named in ``inplace`` are updated in place, so they must already be native
    arrays of the backend the operation runs on: a copy would be updated instead. Only
    those named in ``optional`` may be None (a TypeError naming the argument otherwise).
    """
    backend, key = placed(op, arrays)
    if backend is not None:
        return backend, list(arrays)
    since = _plans.generation()
    checked = []
    for x, name, dtypes in zip(arrays, names, accepted, strict=True):
        y = None if x is None and name in optional else _dtypes.check(op, name, x, dtypes)
        checked.append(x if name in inplace else y)
    backend, out = prepare(*checked, names=names)
    out = [x if x is None or hasattr(x, "dtype") else backend.asarray(x) for x in out]
    for given, got, name in zip(arrays, out, names, strict=True):
        if name in inplace and given is not None and not getattr(given.dtype, "isnative", True):
            raise ValueError(
                f"{op}: {name} is updated in place but has non-native byte order "
                f"({given.dtype}); convert it once: {name}.astype({name}.dtype.newbyteorder('='))"
            )
        if name in inplace and given is not None and given is not got:
            raise ValueError(
                f"{op}: {name} is updated in place, so it must be an array of the "
                f"{backend.name!r} backend where the operation runs; got "
                f"{type(given).__module__}.{type(given).__qualname__}"
            )
    keep_placed(key, since, backend, arrays, out)
    return backend, out


#: (operation, active backend, the arrays' types, dtypes and shapes, the options; on a
#: backend of several devices, the one device the arrays share:
#: :func:`gpukit._dispatch.inputs.on_device`) -> the backend's kernel bound to such
#: arguments (:func:`bind`)
PLANS = _plans.table()


def bind(
    key: Any,
    since: int,
    backend: Backend,
    name: str,
    given: Sequence[Any],
    placed: Sequence[Any],
    args: Sequence[Any],
) -> Any:
    """The kernel ``name`` of ``backend`` for a call with the kernel arguments ``args``
    (the arrays as :func:`place` returned them, the numbers as given, unchecked), kept in
    :data:`PLANS` under ``key`` (None: not keyable; read before generation ``since``) when
    ``place`` handed the arrays ``given`` back as ``placed``, untouched.

    A backend's kernel may carry ``bind(*args)``: the kernel specialised to arguments of
    the types, dtypes and shapes of ``args``'s arrays, the same ``None`` ones and the same
    strings, taking the same arguments (numbers change from call to call: ``bind`` does
    not read them). What depends on values (layouts, the compiled kernels switched off
    in a context) stays in what it returns, and the front-end's checks of values run
    before it on every call. The internal kernels' binds may be narrower (a caller keys
    them itself): CuPy's ``activation`` binds, whose kernels serve any shape, are kept per
    activation and slope and keep the slope's scalar for the very object bound.
    """
    kernel = backend.kernel(name)
    binder = getattr(kernel, "bind", None)
    run = kernel if binder is None else binder(*args)
    keep(PLANS, key, since, run, backend, given, placed)
    return run


def check_like(op: str, x: Any, name: str, ref: Any, ref_name: str) -> None:
    """``x`` has ``ref``'s shape (ValueError) and dtype (TypeError)."""
    if tuple(x.shape) != tuple(ref.shape):
        raise ValueError(
            f"{op}: {name} has shape {tuple(x.shape)} but {ref_name} has shape "
            f"{tuple(ref.shape)}; they must match"
        )
    if x.dtype != ref.dtype:
        raise TypeError(
            f"{op}: {name} has dtype {x.dtype} but {ref_name} has dtype {ref.dtype}; "
            "they must match"
        )


def check_labels(op: str, labels: Any, n: int) -> None:
    if tuple(labels.shape) != (n,):
        raise ValueError(
            f"{op}: labels must have shape ({n},) (one per row), got {tuple(labels.shape)}"
        )


def check_range(
    op: str, value: Any, name: str, lo: float, hi: float | None = None, *, hi_open=True
) -> float:
    """A finite real ``value`` with ``lo <= value`` (and ``< hi`` or ``<= hi``), as a float.

    ``TypeError`` for anything but a real number (a string, a bool, None, a complex, an
    array of more than one element); ``ValueError`` for NaN, an infinity or a value out
    of range. Python and NumPy numbers and 0-d real arrays are accepted.
    """
    if type(value) is float and lo <= value:  # the common case, before the full test
        if (value < _INF) if hi is None else (value < hi or (value == hi and not hi_open)):
            return value
    v = real(op, value, name)
    above = hi is not None and (v >= hi if hi_open else v > hi)
    if v < lo or above:
        if hi is None:
            bound = f">= {lo}"
        else:
            bound = f"in [{lo}, {hi})" if hi_open else f"in [{lo}, {hi}]"
        raise ValueError(f"{op}: {name} must be {bound}, got {value!r}")
    return v


def real(op: str, value: Any, name: str) -> float:
    """``value`` as a finite float: TypeError unless a real number, ValueError unless finite."""
    if type(value) is float or type(value) is int:  # the common case, before the ABC's test
        if math.isfinite(value):
            return float(value)
        raise ValueError(f"{op}: {name} must be finite, got {value!r}")
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{op}: {name} must be a real number, got {value!r} ({type(value).__name__})"
        )
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{op}: {name} must be finite, got {value!r}")
    return v


def check_flag(op: str, value: Any, name: str) -> bool:
    """``value`` as a bool: TypeError unless a Python or NumPy bool (``"False"`` is not)."""
    if value is True or value is False:  # the common case, before the union's test
        return value
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{op}: {name} must be a bool, got {value!r} ({type(value).__name__})")
    return bool(value)


def check_updatable(op: str, updated: dict[str, Any], read: dict[str, Any]) -> None:
    """The arrays ``updated`` (by name) are written in place: each C-contiguous and
    writeable, and no two of them or of the arrays ``read`` share memory. ``None`` entries
    are skipped.

    Checked before anything is written, so a refused call changes nothing (a read-only
    buffer found half-way would leave the others half-updated). The common case (NumPy
    arrays with the bits :data:`UPDATABLE`, read ones with :data:`OWNDATA`, distinct
    objects) is the front-end's to test first, without building these dicts.
    """
    names, arrays = [], []
    for name, x in updated.items():
        if x is None:
            continue
        flags = x.flags  # one flags object for all reads
        if not flags.c_contiguous:
            raise ValueError(
                f"{op}: {name} is updated in place and must be C-contiguous (it is a strided view)"
            )
        if not getattr(flags, "writeable", True):  # CuPy: always
            raise ValueError(f"{op}: {name} is updated in place but is read-only")
        names.append(name)
        arrays.append(x)
    n = len(arrays)  # the updated arrays, found C-contiguous
    for name, x in read.items():
        if x is not None:
            names.append(name)
            arrays.append(x)
    spans = None if type(arrays[0]) is np.ndarray else _spans(arrays, n)
    if spans is not None:  # device arrays: their spans compared inline (the common case)
        for i in range(len(spans) - 1):
            device, start, end = spans[i]
            for j in range(i + 1, len(spans)):
                other, begin, stop = spans[j]
                # a byte of both (an empty span shares none)
                if (
                    start < stop
                    and begin < end
                    and start < end
                    and begin < stop
                    and device == other
                ):
                    raise _overlapping(op, names[i], names[j])
        return
    shares = (
        np.may_share_memory
        if type(arrays[0]) is np.ndarray
        else namespace(*arrays).may_share_memory
    )
    for i in range(len(arrays) - 1):
        for j in range(i + 1, len(arrays)):
            if shares(arrays[i], arrays[j]):
                raise _overlapping(op, names[i], names[j])


def _overlapping(op: str, name: str, other: str) -> ValueError:
    return ValueError(
        f"{op}: {name} and {other} overlap in memory; each must be an array of its own (an "
        "in-place update reading and writing the same memory gives wrong results)"
    )


def _spans(arrays: Sequence[Any], updated: int) -> list[tuple[Any, int, int]] | None:
    """``(device, start, end)`` per array: the bytes each occupies, from its memory
    pointer (CuPy's ``data.ptr``, ``data.device_id``) and ``nbytes``; None when one has no
    such pointer or is a strided view (the first ``updated`` are known C-contiguous). A
    C-contiguous array occupies exactly its span, so comparing spans is exact, without a
    call into the array library per pair."""
    spans = []
    for i, x in enumerate(arrays):
        data = getattr(x, "data", None)
        ptr = getattr(data, "ptr", None)
        if type(ptr) is not int or (i >= updated and not x.flags.c_contiguous):
            return None
        spans.append((getattr(data, "device_id", None), ptr, ptr + x.nbytes))
    return spans
