"""The decorator every public operation wears: array kinds first, then the memory policy."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from .._runtime import memory
from .._runtime.placement import first_device
from .._select.registry import trim_traceback
from ..errors import BackendUnavailableError
from .kinds import find, implementation

__all__ = ["operation"]

F = TypeVar("F", bound=Callable[..., Any])

# Exact types that are never a registered array kind nor a device array: a call whose
# arguments are all of these (NumPy arrays, Python and NumPy scalars, strings, None,
# containers) needs neither the kind search nor the device search, one set look-up per
# argument. Containers are not looked into by either search.
_PLAIN = frozenset(
    {np.ndarray, int, float, complex, bool, str, type(None), tuple, list, dict, slice}
    | {np.dtype(c).type for c in "?bBhHiIlLqQefdgFDG"}
)


def operation(name: str, *, native: tuple[str, ...] = (), **policy: Any) -> Callable[[F], F]:
    """Make ``fn`` the public operation ``name``.

    A call with an argument of a registered array kind (a :class:`gpukit.ShardedArray`,
    a Dask array) runs that kind's implementation of ``name``, or raises a TypeError
    with the way on (:mod:`gpukit._dispatch.kinds`); every other call runs ``fn`` under
    the out-of-memory policy of :func:`gpukit._runtime.memory.operation` (``policy`` is
    passed to it), with the device of its first device-array argument current, so that
    everything it computes, allocates, plans or measures happens on the device holding
    the input, whichever device the caller has current (CuPy allocates on the current
    device and hands library routines raw pointers).

    Parameters
    ----------
    name : str
        The operation's public name (``"gk.fft.fft"``), as users read it in errors.
    native : tuple of str, optional
        Array kinds ``fn`` accepts itself (``("sharded",)`` for the ``gk.sharding``
        functions and the Krylov solvers, which run on sharded operands as they are).
    **policy
        Keyword arguments of :func:`gpukit._runtime.memory.operation`.

    Returns
    -------
    callable
        A decorator.

    Examples
    --------
    >>> import numpy as np
    >>> @operation("gk.example_negate")
    ... def negate(x):
    ...     return np.negative(x)
    >>> negate(np.ones(2)).tolist()
    [-1.0, -1.0]
    """

    def decorate(fn: F) -> F:
        guarded = memory.operation(name, **policy)(fn)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                for x in args:  # the warm host call: plain arguments only, no search
                    if type(x) not in _PLAIN:
                        break
                else:
                    for x in kwargs.values():
                        if type(x) not in _PLAIN:
                            break
                    else:
                        return guarded(*args, **kwargs)
                found = find(args, kwargs)
                if found is not None and found[0].name not in native:
                    return implementation(name, *found)(*args, **kwargs)
                home = first_device(itertools.chain(args, kwargs.values()))
                if home is None:
                    return guarded(*args, **kwargs)
                with home[0].use_device(home[1]):
                    return guarded(*args, **kwargs)
            except BackendUnavailableError as exc:
                trim_traceback(exc)  # the user's call and the reason, not gpukit's frames
                raise

        return wrapper  # type: ignore[return-value]

    return decorate
