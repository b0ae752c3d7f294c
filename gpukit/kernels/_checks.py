"""Argument checks shared by the ``gk.kernels`` front-ends.

Every check runs before any backend is called, so each backend raises the same
exception with the same message, prefixed with the operation (``gk.kernels.<name>:``):
``TypeError`` for a dtype that is not accepted (the rule of every numerical front-end,
:mod:`gpukit._dispatch.dtypes`), ``ValueError`` for shapes, layouts and hyper-parameter values.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from .._dispatch import dtypes as _dtypes
from .._dispatch.inputs import prepare
from ..backend import Backend

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
#: Label dtypes (the CUDA kernels read int32 or int64; others are converted).
INTEGERS = tuple(np.dtype(c) for c in "bBhHiIlLqQ")


def place(
    op: str,
    arrays: Sequence[Any],
    names: Sequence[str],
    accepted: Sequence[Collection[np.dtype]],
    inplace: Collection[str] = (),
) -> tuple[Backend, list[Any]]:
    """Check each argument's dtype against ``accepted`` (TypeError), ``prepare`` them once
    and make any remaining host data (lists) native arrays.

    Arrays named in ``inplace`` are updated in place, so they must already be native
    arrays of the backend the operation runs on: a copy would be updated instead.
    """
    checked = []
    for x, name, dtypes in zip(arrays, names, accepted, strict=True):
        y = None if x is None else _dtypes.check(op, name, x, dtypes)
        checked.append(x if name in inplace else y)
    backend, out = prepare(*checked, names=names)
    out = [x if x is None or hasattr(x, "dtype") else backend.asarray(x) for x in out]
    for given, got, name in zip(arrays, out, names, strict=True):
        if name in inplace and given is not None and given is not got:
            raise ValueError(
                f"{op}: {name} is updated in place, so it must be an array of the "
                f"{backend.name!r} backend where the operation runs; got "
                f"{type(given).__module__}.{type(given).__qualname__}"
            )
    return backend, out


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


def check_contiguous(op: str, x: Any, name: str) -> None:
    if not x.flags.c_contiguous:
        raise ValueError(
            f"{op}: {name} is updated in place and must be C-contiguous (it is a strided view)"
        )


def check_labels(op: str, labels: Any, n: int) -> None:
    if tuple(labels.shape) != (n,):
        raise ValueError(
            f"{op}: labels must have shape ({n},) (one per row), got {tuple(labels.shape)}"
        )


def check_range(
    op: str, value: Any, name: str, lo: float, hi: float | None = None, *, hi_open=True
) -> float:
    """``lo <= value`` (and ``< hi`` or ``<= hi``); return it as a float."""
    try:
        if isinstance(value, str | bytes | bool):  # float() would take "0.1" and True
            raise TypeError
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: {name} must be a real number, got {value!r}") from None
    above = hi is not None and (v >= hi if hi_open else v > hi)
    if not v >= lo or above:  # `not >=` also catches NaN
        bound = "" if hi is None else (f" and < {hi}" if hi_open else f" and <= {hi}")
        raise ValueError(f"{op}: {name} must be >= {lo}{bound}, got {value!r}")
    return v
