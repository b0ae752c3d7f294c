"""The decorator every public operation wears: array kinds first, then the memory policy."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from .._runtime import memory
from .._runtime import plans as _plans
from .._runtime.placement import owner_of
from .._select.registry import trim_traceback
from ..errors import BackendUnavailableError
from .kinds import find, implementation

__all__ = ["operation"]

F = TypeVar("F", bound=Callable[..., Any])

# Exact types that are never a registered array kind nor a device array: a call whose
# arguments are all of these (NumPy arrays, Python and NumPy scalars, strings, None,
# containers, and an operation's own ``plain`` types) needs no route, one set look-up per
# argument (cheaper than building the key of a planned route). Containers are not looked
# into by either search.
_PLAIN = frozenset(
    {np.ndarray, int, float, complex, bool, str, type(None), tuple, list, dict, slice}
    | {np.dtype(c).type for c in "?bBhHiIlLqQefdgFDG"}
)


def operation(
    name: str, *, native: tuple[str, ...] = (), plain: tuple[type, ...] = (), **policy: Any
) -> Callable[[F], F]:
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
    plain : tuple of type, optional
        Types of arguments of ``fn``'s own that are never an array kind nor a device
        array (a user kernel): a call with them and host arrays needs no route.
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
        guarded = memory.Policy(name, fn, **policy)
        plain_types = _PLAIN.union(plain)
        attempt, claim, retry = guarded.attempt, guarded.claim, guarded.retry
        # argument types (keyword names after the positional types), or the first
        # argument's type where no other is of a type that is not plain -> route: None
        # (run here), (None, implementation) of an array kind, or (backend, position of
        # the first device array; None when the backend has one device, always current)
        routes = _plans.table()

        def route(key: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            since = _plans.generation()
            found = find(args, kwargs)
            if found is not None and found[0].name not in native:
                plan: Any = (None, implementation(name, *found))  # or its TypeError
            else:
                plan = None
                for position, x in enumerate((*args, *kwargs.values())):
                    backend = owner_of(x)
                    if backend is not None:
                        plan = (backend, None if backend.device_count() == 1 else position)
                        break
            return _plans.remember(routes, key, plan, since)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                # by loops (issuperset would first build a set of the types), the many
                # None arguments by identity
                other = False
                for x in args:
                    if x is not None and type(x) not in plain_types:
                        other = True
                        break
                else:
                    if kwargs:  # an empty dict's values are not looked at
                        for x in kwargs.values():
                            if type(x) not in plain_types:
                                other = True
                                break
                if other:
                    # The route follows from the arguments of types that are not plain:
                    # where the first argument is the only one (or repeated), its type
                    # alone is the key (a type, never equal to the tuples below), which
                    # costs a loop rather than a tuple of every argument's type.
                    key = type(x) if args and x is args[0] else None
                    if key is not None:
                        for y in args:
                            if y is not x and y is not None and type(y) not in plain_types:
                                key = None
                                break
                        else:
                            if kwargs:
                                for y in kwargs.values():
                                    if type(y) not in plain_types:
                                        key = None
                                        break
                    if key is None:
                        if kwargs:
                            key = (*map(type, args), *kwargs, *map(type, kwargs.values()))
                        elif len(args) == 2:  # two arrays: a third of map's cost
                            key = (type(args[0]), type(args[1]))
                        else:
                            key = tuple(map(type, args))
                    try:
                        plan = routes[key]
                    except KeyError:
                        plan = route(key, args, kwargs)
                    if plan is not None:
                        backend, where = plan
                        if backend is None:
                            return where(*args, **kwargs)
                        if where is not None:
                            home = (
                                args[where]
                                if where < len(args)
                                else (*args, *kwargs.values())[where]
                            )
                            device = backend.device_of(home)
                            if device != backend.current_device():  # asking costs less
                                with backend.use_device(device):
                                    return guarded(*args, **kwargs)
                # run here: the memory policy's steps inline, one call level less (and
                # no empty dict of keywords to unpack)
                try:
                    return attempt(*args, **kwargs) if kwargs else attempt(*args)
                except Exception as exc:
                    claimed = claim(exc)
                    if claimed is None:
                        raise
                return retry(claimed, args, kwargs)
            except BackendUnavailableError as exc:
                trim_traceback(exc)  # the user's call and the reason, not gpukit's frames
                raise

        return wrapper  # type: ignore[return-value]

    return decorate
