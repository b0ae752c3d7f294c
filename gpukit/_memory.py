"""Allocation failures inside gpukit operations: free, retry once, then explain.

Every public operation is wrapped with :func:`operation`. When its backend reports
an out-of-memory failure (``Backend.out_of_memory``), gpukit returns the pool's
unused blocks to the device (``Backend.release_unused``) and runs the operation
once more, as PyTorch's caching allocator does; if that fails too it raises
:class:`~gpukit.errors.OutOfMemoryError` naming the operation, the bytes asked
for and what the device had, with the fixes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from . import _registry
from .errors import OutOfMemoryError

F = TypeVar("F", bound=Callable[..., Any])

FIX = (
    "use a smaller batch or problem, free memory with gk.empty_cache(), bound the pool "
    "with GPUKIT_MEMORY_LIMIT / gk.set_memory_limit(), or shard the work with gk.shard()"
)


def _oom_backend(exc: BaseException):
    for backend in _registry.loaded():
        requested = backend.out_of_memory(exc)
        if requested is not None:
            return backend, requested
    return None, None


def _fmt(n: int | None) -> str:
    return "unknown" if n is None or n < 0 else f"{n:,} bytes"


def operation(name: str) -> Callable[[F], F]:
    """Wrap the public operation ``name`` with the free-retry-explain policy."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except OutOfMemoryError:
                raise
            except Exception as exc:
                backend, _ = _oom_backend(exc)
                if backend is None:
                    raise
                backend.release_unused()
            try:
                return fn(*args, **kwargs)
            except OutOfMemoryError:
                raise
            except Exception as exc:
                backend, requested = _oom_backend(exc)
                if backend is None:
                    raise
                stats = backend.memory_stats(None)
                raise OutOfMemoryError(
                    f"{name} ran out of memory on {backend.name}: it asked for "
                    f"{_fmt(requested)} with {_fmt(stats.get('free'))} free and "
                    f"{_fmt(stats.get('pool_held'))} held by the pool (unused blocks were "
                    f"already released and the operation retried once). Fix: {FIX}"
                ) from exc

        return wrapper  # type: ignore[return-value]

    return decorate
