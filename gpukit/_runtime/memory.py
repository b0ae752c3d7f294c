"""Allocation failures inside gpukit operations: free, retry once, then explain.

Every public operation is wrapped with :func:`operation`. When its backend reports
an out-of-memory failure (``Backend.out_of_memory``), gpukit drops the failed
attempt's temporaries, returns the pool's unused blocks and cached library plans to the
devices (``Backend.release_unused``, in this thread and the device workers) and runs the
operation once more, as PyTorch's caching
allocator does; if that fails too it raises :class:`~gpukit.errors.OutOfMemoryError`
naming the operation, the bytes asked for and what the device had, with the fixes.

Nothing is left half-written: when an operation takes ``out=``, the wrapped function
computes into a fresh array and the result is copied into ``out`` only once the
whole computation has succeeded. ``out=`` therefore says where the result lands; it
does not lower the peak memory of the operation.

Nothing is applied twice: an operation that updates its arguments in place (an
optimizer step, ``gk.kernels.adam_update``, a training loop) is declared
``@operation(name, inplace=True)`` and is never re-run. It allocates everything it
needs before its first write, so a failed call leaves its arguments as they were; the
wrapper releases the pool's unused blocks and raises :class:`OutOfMemoryError` at
once, and calling it again is the caller's decision.
"""

from __future__ import annotations

import functools
import gc
import inspect
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from .._select import registry as _registry
from .._select.selection import get_backend
from ..backend import Backend
from ..errors import GpukitError, OutOfMemoryError
from .memstats import MemoryStats, format_bytes, release, stats_for
from .placement import namespace
from .workers import failed_device

__all__ = ["FIX", "Policy", "operation"]

F = TypeVar("F", bound=Callable[..., Any])

FIX = (
    "process a smaller batch or problem; drop references to arrays you no longer need "
    "and call gk.empty_cache(); raise or set the pool's cap (GPUKIT_MEMORY_LIMIT, "
    "gk.set_memory_limit); or split the work across devices (sharding)"
)


def _claim(exc: BaseException) -> tuple[Backend | None, int | None]:
    """The backend recognising ``exc`` as its allocation failure, and the bytes asked.

    The active backend is asked first, then the other device backends, then the host
    ones (which claim any ``MemoryError``, so a device failure must not reach them first).
    gpukit's own errors are never allocation failures: they pass through untouched (a
    backend that cannot be selected must not be asked again from this error handler).
    """
    if isinstance(exc, GpukitError):
        return None, None
    candidates = [get_backend(), *_registry.loaded()]
    candidates.sort(key=lambda b: not b.is_device)  # stable: active first among equals
    for backend in candidates:
        requested = backend.out_of_memory(exc)
        if requested is not None:
            return backend, (None if requested < 0 else requested)
    return None, None


def _size(n: int | None) -> str:
    return "an unknown number of bytes" if n is None else format_bytes(n, exact=True)


def _explain(
    name: str, backend: Backend, requested: int | None, stats: MemoryStats, inplace: bool
) -> str:
    where = f"{backend.name}:{stats.device}"
    have = [
        f"{_size(stats.free)} free" if stats.free is not None else "free memory unknown",
        f"of {_size(stats.total)}" if stats.total is not None else "",
    ]
    if stats.pool_held is None:
        pool = "no memory pool"
    else:
        pool = f"the pool holds {_size(stats.pool_held)}, {_size(stats.pool_unused)} unused"
    limit = "" if stats.limit is None else f", capped at {_size(stats.limit)}"
    if inplace:
        done = (
            "It updates its arguments in place, so it was not re-run; they are unchanged "
            "(it allocates before writing). Unused pool blocks were released"
        )
    else:
        done = "Unused pool blocks were released and the operation retried once"
    return (
        f"{name} ran out of memory on {where}: it asked for {_size(requested)}; the device "
        f"has {' '.join(p for p in have if p)}, {pool}{limit}. {done}. Fix: {FIX}"
    )


def _out_position(fn: Callable[..., Any]) -> int | None:
    """Index of ``fn``'s ``out`` parameter when it may be passed by position, else None."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # builtins without a signature
        return None
    for i, p in enumerate(params):
        if p.name == "out" and p.kind is p.POSITIONAL_OR_KEYWORD:
            return i
    return None


def _takes_out(fn: Callable[..., Any]) -> bool:
    try:
        return "out" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _deliver(out: Any, result: Any) -> Any:
    """Copy a finished ``result`` into ``out`` (a tuple of outputs for several results)."""
    if isinstance(out, tuple):
        return tuple(r if o is None else _deliver(o, r) for o, r in zip(out, result, strict=True))
    namespace(out).copyto(out, result)  # same_kind casting, as NumPy's out= allows
    return out


def operation(name: str, *, inplace: bool = False) -> Callable[[F], F]:
    """Wrap the public operation ``name`` with the free-retry-explain policy.

    Use it on every public front-end function: ``@operation("gk.fft.fft")``. Unless
    declared ``inplace``, the function must be safe to run twice (it is re-run once after
    an out-of-memory failure): pure, or writing only into ``out``, which this wrapper
    protects by running the function with ``out=None`` and copying into ``out`` on
    success.

    Parameters
    ----------
    name : str
        The operation's public name, used in error messages.
    inplace : bool, default False
        The function updates some of its arguments in place (an optimizer step). It is
        never re-run: an out-of-memory failure releases the pool's unused blocks and
        raises :class:`~gpukit.errors.OutOfMemoryError` at once. Such a function must
        allocate everything it needs before its first write, so that a failure leaves
        its arguments unchanged.

    Returns
    -------
    callable
        A decorator.

    Examples
    --------
    >>> import numpy as np
    >>> @operation("gk.example_double")
    ... def double(x, out=None):
    ...     return np.multiply(x, 2, out=out)
    >>> out = np.zeros(2)
    >>> double(np.ones(2), out=out) is out, out.tolist()
    (True, [2.0, 2.0])
    """

    def decorate(fn: F) -> F:
        policy = Policy(name, fn, inplace=inplace)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return policy(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


class Policy:
    """The free-retry-explain policy of one operation, in three steps, for a caller that
    runs the first attempt itself (:func:`gpukit._dispatch.operation`, which saves a
    call level that way)::

        try:
            return policy.attempt(*args, **kwargs)
        except Exception as exc:
            claimed = policy.claim(exc)
            if claimed is None:
                raise
        return policy.retry(claimed, args, kwargs)

    Parameters are those of :func:`operation`, with the function ``fn``.
    """

    def __init__(self, name: str, fn: Callable[..., Any], *, inplace: bool = False) -> None:
        self.name = name
        self.inplace = inplace
        position = _out_position(fn)

        def with_out(*args: Any, **kwargs: Any) -> Any:
            if position is not None and len(args) > position:
                out = args[position]
                if out is not None:
                    args = (*args[:position], None, *args[position + 1 :])
            else:
                out = kwargs.get("out")
                if out is not None:
                    kwargs = {**kwargs, "out": None}
            result = fn(*args, **kwargs)
            return result if out is None else _deliver(out, result)

        #: The operation itself, ``out`` protected (it is written only on success).
        self.attempt: Callable[..., Any] = with_out if _takes_out(fn) else fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The operation under the policy, all three steps."""
        try:
            return self.attempt(*args, **kwargs)
        except Exception as exc:
            claimed = self.claim(exc)
            if claimed is None:
                raise
            # Leaving the except block drops the traceback, whose frames hold the failed
            # attempt's temporaries; only then can the pool release them.
        return self.retry(claimed, args, kwargs)

    def claim(self, exc: BaseException) -> tuple[Backend, int | None] | None:
        """What to retry on after ``exc`` from the first attempt: None when ``exc`` is
        not an allocation failure to retry (re-raise it); raises OutOfMemoryError at
        once for an in-place operation."""
        if isinstance(exc, OutOfMemoryError):
            return None  # a nested operation already retried and explained
        backend, requested = _claim(exc)
        if backend is None:
            return None
        if self.inplace:
            traceback.clear_frames(exc.__traceback__)  # free the temporaries first
            _release(backend)
            raise _out_of_memory(self.name, backend, requested, exc, True) from exc
        return backend, requested

    def retry(self, claimed: tuple[Backend, int | None], args: Any, kwargs: Any) -> Any:
        """Release the unused memory :meth:`claim` found and run the operation once more;
        explain a second failure."""
        _release(claimed[0])
        try:
            return self.attempt(*args, **kwargs)
        except OutOfMemoryError:
            raise
        except Exception as exc:
            backend, requested = _claim(exc)
            if backend is None:
                raise
            raise _out_of_memory(self.name, backend, requested, exc, False) from exc


def _release(backend: Backend) -> None:
    gc.collect()
    release(backend)


def _out_of_memory(
    name: str, backend: Backend, requested: int | None, exc: BaseException, inplace: bool
) -> OutOfMemoryError:
    traceback.clear_frames(exc.__traceback__)  # a caught error must not pin memory
    # the device that ran out: a device worker's, else the one the operation ran on (its
    # input's, made current by gpukit._dispatch.operation)
    device = failed_device(exc)
    stats = stats_for(backend, backend.current_device() if device is None else device)
    return OutOfMemoryError(
        _explain(name, backend, requested, stats, inplace),
        operation=name,
        requested=requested,
        stats=stats,
    )
