"""The decorator every public operation wears: array kinds first, then the memory policy."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from .._runtime import memory
from .._runtime import plans as _plans
from .._runtime.placement import owner_of
from .front import front, given
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
        # argument's type where every other one is plain or of that type -> route: None
        # (run here: no kind, and no device array or one of a backend with one device,
        # always current), (None, implementation) of an array kind, or (backend, position
        # of the first device array) for a backend of several devices
        routes = _plans.table()
        as_given = given(fn)

        def route(key: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            since = _plans.generation()
            found = find(args, kwargs)
            if found is not None and found[0].name not in native:
                plan: Any = (None, implementation(name, *found))  # or its TypeError
            else:
                plan = None  # also for a backend of one device, always current
                for position, x in enumerate((*args, *kwargs.values())):
                    backend = owner_of(x)
                    if backend is not None:
                        if backend.device_count() > 1:
                            plan = (backend, position)
                        break
            return _plans.remember(routes, key, plan, since)

        def routed(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            """The call of arguments not all plain, bound as :func:`front` binds them."""
            values = (*args, *kwargs.values()) if kwargs else args
            for x in values:
                if type(x) not in plain_types:
                    break
            else:  # (front calls this with a type that is not plain)
                return guarded(*args, **kwargs)
            # The route follows from the arguments of types that are not plain: where
            # the first argument's type is the only one (a device array's, a kind's: the
            # route of one such argument, wherever others are), that type alone is the
            # key (a type, never equal to the tuples below, and the key front looks up).
            key: Any = type(x) if args and x is args[0] else None
            if key is not None:
                for y in values:
                    if type(y) is not key and type(y) not in plain_types:
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
            return follow(plan, args, kwargs)

        def follow(plan: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            """The call along its route ``plan`` (``routes``'s)."""
            if plan is not None:
                backend, where = plan
                if backend is None:
                    args, kwargs = as_given(args, kwargs)
                    return where(*args, **kwargs)
                home = args[where] if where < len(args) else (*args, *kwargs.values())[where]
                device = backend.device_of(home)
                if device != backend.current_device():  # asking costs less
                    with backend.use_device(device):
                        return guarded(*args, **kwargs)
            try:  # (an empty dictionary unpacked costs the call)
                return attempt(*args, **kwargs) if kwargs else attempt(*args)
            except Exception as exc:
                claimed = claim(exc)
                if claimed is None:
                    raise
            return retry(claimed, args, kwargs)

        wrapper = front(
            fn,
            name,
            plain=plain_types,
            routes=routes,
            attempt=attempt,
            claim=claim,
            retry=retry,
            routed=routed,
            follow=follow,
        )
        functools.update_wrapper(wrapper, fn)
        return wrapper  # type: ignore[return-value]

    return decorate
