"""Dispatch decisions that depend only on argument types and the backends, made once.

Which backend owns an array type, whether an operation's arguments hold an array kind or
a device array, and where an operation runs for a given selected backend and argument
types do not change from one call to the next. Each such decision is kept in a *plan
table* keyed by the types it depended on (and the selected backend where it matters), so
a warm call does a dictionary look-up where it would redo the search. What depends on
values (shapes, devices of multi-device backends, finite checks, the transfer guard's
mode, the out-of-memory policy) is never planned.

Tables are read without a lock (a dictionary look-up is atomic) and written under one.
Every table empties when the registry changes (a backend registered, removed or
created: which backend owns a type can change then) and when an array kind or one of
its implementations is registered; a decision made while such a change happened is not
kept. A table that reaches :data:`LIMIT` entries starts over, so a program cycling
through many types cannot grow it without bound.

Front-ends keep their own plans in such tables, keyed by the selected backend, the
operation, and the array arguments' types, dtypes and shapes with the other arguments
(each through :func:`token`, which tells ``1`` from ``True`` and ``1.0``): the checks and
decisions that follow from those alone (dtypes accepted and computed in, axes and lengths
normalised, shapes compatible, where the call runs) are made on the first call and looked
up after. Such a plan is kept only for arguments that pass through unchanged (no
conversion, no transfer: the transfer guard and its counters stay on every call that
moves data), and a call whose arguments cannot be keyed (a list, an unhashable value)
is planned afresh each time.
"""

from __future__ import annotations

import threading
from typing import Any

from .._select import registry as _registry

__all__ = ["LIMIT", "forget", "generation", "remember", "table", "token"]

#: Entries a table holds before it starts over.
LIMIT = 512

_tables: list[dict[Any, Any]] = []
_lock = threading.Lock()
_generation = 0


def table() -> dict[Any, Any]:
    """A new plan table, emptied with the others by :func:`forget`."""
    new: dict[Any, Any] = {}
    with _lock:
        _tables.append(new)
    return new


def generation() -> int:
    """The current generation: read it before making a decision, pass it to :func:`remember`."""
    return _generation


def remember(plans: dict[Any, Any], key: Any, plan: Any, since: int) -> Any:
    """Keep ``plan`` under ``key`` unless the tables were emptied since generation
    ``since`` (then the decision may rest on what changed); return ``plan``."""
    with _lock:
        if since == _generation:
            if len(plans) >= LIMIT:
                plans.clear()
            plans[key] = plan
    return plan


def token(value: Any) -> Any:
    """``value`` as part of a plan key: equal tokens only for values every check treats
    alike (``1``, ``True``, ``1.0`` and ``numpy.int64(1)`` differ; so do tuples of them).

    An unhashable ``value`` (a list) gives an unhashable token: looking a key holding it
    up raises TypeError, and the call is planned afresh.

    Examples
    --------
    >>> token(1) == token(True), token((0, 1)) == token((0, 1))
    (False, True)
    """
    if type(value) is tuple:
        return value, *map(type, value)
    return value, type(value)


def forget() -> None:
    """Empty every table (the registry, an array kind or an implementation changed)."""
    global _generation
    with _lock:
        _generation += 1
        for plans in _tables:
            plans.clear()


_registry.on_change(forget)
