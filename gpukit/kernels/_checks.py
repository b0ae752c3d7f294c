"""Argument checks shared by the ``gk.kernels`` front-ends.

Every check runs before any backend is called, so each backend raises the same
``ValueError`` with the same message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._dispatch import prepare
from ..backend import Backend

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def place(arrays: Sequence[Any], names: Sequence[str]) -> tuple[Backend, list[Any]]:
    """``prepare`` the inputs, then make any remaining host data (lists) native arrays."""
    backend, out = prepare(*arrays, names=names)
    return backend, [x if x is None or hasattr(x, "dtype") else backend.asarray(x) for x in out]


def place_inplace(
    arrays: Sequence[Any], names: Sequence[str], inplace: Sequence[str]
) -> tuple[Backend, list[Any]]:
    """Like :func:`place`, refusing to update a copy: arrays named in ``inplace`` must
    already be native arrays of the backend the operation runs on."""
    backend, out = place(arrays, names)
    for given, got, name in zip(arrays, out, names, strict=True):
        if name in inplace and given is not None and given is not got:
            raise ValueError(
                f"{name} is updated in place, so it must be an array of the {backend.name!r} "
                f"backend where the operation runs; got {type(given).__module__}."
                f"{type(given).__qualname__}"
            )
    return backend, out


def check_float(x: Any, name: str, dtypes: Sequence[np.dtype] = FLOATS) -> None:
    if x.dtype not in dtypes:
        allowed = " or ".join(str(d) for d in dtypes)
        raise ValueError(f"{name} must be {allowed}, got {x.dtype}")


def check_like(x: Any, name: str, ref: Any, ref_name: str) -> None:
    """``x`` has ``ref``'s shape and dtype."""
    if tuple(x.shape) != tuple(ref.shape):
        raise ValueError(
            f"{name} has shape {tuple(x.shape)} but {ref_name} has shape {tuple(ref.shape)}; "
            "they must match"
        )
    if x.dtype != ref.dtype:
        raise ValueError(
            f"{name} has dtype {x.dtype} but {ref_name} has dtype {ref.dtype}; they must match"
        )


def check_contiguous(x: Any, name: str) -> None:
    if not x.flags.c_contiguous:
        raise ValueError(
            f"{name} is updated in place and must be C-contiguous (it is a strided view)"
        )


def check_labels(labels: Any, n: int) -> None:
    if labels.dtype.kind not in "iu":
        raise ValueError(f"labels must have an integer dtype, got {labels.dtype}")
    if tuple(labels.shape) != (n,):
        raise ValueError(f"labels must have shape ({n},) (one per row), got {tuple(labels.shape)}")


def check_range(value: float, name: str, lo: float, hi: float | None = None, *, hi_open=True):
    """``lo <= value`` (and ``< hi`` or ``<= hi``); return it as a float."""
    v = float(value)
    above = hi is not None and (v >= hi if hi_open else v > hi)
    if not v >= lo or above:  # `not >=` also catches NaN
        bound = "" if hi is None else (f" and < {hi}" if hi_open else f" and <= {hi}")
        raise ValueError(f"{name} must be >= {lo}{bound}, got {value!r}")
    return v
