"""NumPy's own BLAS/LAPACK library, its routines found by name (:mod:`.blas`, :mod:`.lapack`).

NumPy links its BLAS into its extension module, and ``dlsym`` on that module's handle
searches the libraries it depends on, so a routine is found by name without knowing
where the library lies (not on Windows, where symbols are not searched through a
library's dependencies: no routine is found there, and callers keep their fallback).
Routines are bound once per dtype and process, whichever thread asks first, under one
lock held across ``fork`` so that a child never inherits it taken by a thread it does
not have.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

import numpy as np

__all__ = ["PerDtype", "library", "routine"]

T = TypeVar("T")

_lock = threading.Lock()
if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(
        before=_lock.acquire, after_in_parent=_lock.release, after_in_child=_lock.release
    )


def library() -> ctypes.CDLL | None:
    """NumPy's extension module opened with ctypes (a fresh handle), or None."""
    try:
        from numpy._core import _multiarray_umath as module
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as module
    try:
        return ctypes.CDLL(module.__file__)
    except OSError:
        return None


def routine(lib: ctypes.CDLL, names: Iterable[str]) -> Any:
    """The first of ``names`` that ``lib`` resolves, as a ctypes function, or None."""
    for name in names:
        found = getattr(lib, name, None)
        if found is not None:
            return found
    return None


class PerDtype(Generic[T]):
    """What ``bind(dtype)`` returns (None where nothing is bound), computed once per dtype
    and process, whichever thread asks first; ``found`` holds the results."""

    def __init__(self, bind: Callable[[np.dtype], T | None]) -> None:
        self._bind = bind
        self.found: dict[np.dtype, T | None] = {}

    def __call__(self, dtype: np.dtype) -> T | None:
        try:
            return self.found[dtype]
        except KeyError:
            pass
        with _lock:
            if dtype not in self.found:
                self.found[dtype] = self._bind(dtype)
            return self.found[dtype]
