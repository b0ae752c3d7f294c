"""Array kinds gpukit does not compute on directly: sharded arrays, Dask arrays.

A *kind* is a family of array types that carries its own implementation of public
operations (NEP 18's ``__array_function__`` idea, with gpukit's operation names as the
keys). When any argument of a public operation is of a registered kind, the operation
runs that kind's implementation; when the kind has none for that operation, the call
raises a :class:`TypeError` naming the operation, what was passed and the way on (the
kind's ``advice``) — never an error from deep inside a backend.

Kinds are registered by the module that owns the type (:mod:`gpukit.sharding._array` for
:class:`gpukit.ShardedArray`); implementations by the module that holds them, which is
imported on the first call that needs it, so ``import gpukit`` stays cheap. A type is
classified once and cached, so the per-call cost is a dictionary look-up per argument.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .._runtime import plans as _plans

__all__ = [
    "Kind",
    "find",
    "implementation",
    "implementation_of",
    "implements",
    "kind_of",
    "refusal",
    "register_kind",
    "reject",
]


@dataclass
class Kind:
    """One registered array kind.

    Attributes
    ----------
    name : str
        Short name (``"sharded"``, ``"dask"``), used as the key of :func:`implements`.
    matches : callable
        ``matches(type) -> bool``: whether values of that type are of this kind. It must
        not import anything (it is asked about every new argument type).
    modules : tuple of str
        Modules holding the kind's implementations, imported on first use.
    describe : callable
        ``describe(value) -> str``: the value in words for error messages.
    advice : str or callable
        The way on when an operation has no implementation for the kind; a callable
        gets the operation's name (the way on from a dense solver is not the way on
        from an FFT).
    """

    name: str
    matches: Callable[[type], bool]
    modules: tuple[str, ...]
    describe: Callable[[Any], str]
    advice: str | Callable[[str], str]
    impls: dict[str, Callable[..., Any]] = field(default_factory=dict)
    loaded: bool = False

    def lookup(self, operation: str) -> Callable[..., Any] | None:
        """``operation``'s implementation, importing the kind's modules on first use."""
        if not self.loaded:
            for module in self.modules:
                importlib.import_module(module)
            self.loaded = True
        return self.impls.get(operation)


_kinds: list[Kind] = []
_by_name: dict[str, Kind] = {}
# type -> its Kind, or None for an ordinary type: filled lazily, read without a lock
# (a dict look-up is atomic; two threads classifying the same type agree).
_by_type: dict[type, Kind | None] = {}
_lock = threading.Lock()


def register_kind(
    name: str,
    matches: Callable[[type], bool],
    *,
    modules: Iterable[str],
    describe: Callable[[Any], str],
    advice: str | Callable[[str], str],
) -> Kind:
    """Register an array kind (see :class:`Kind`); re-registering a name replaces it."""
    kind = Kind(name, matches, tuple(modules), describe, advice)
    with _lock:
        old = _by_name.get(name)
        if old is not None:
            _kinds.remove(old)
            kind.impls.update(old.impls)
        _kinds.append(kind)
        _by_name[name] = kind
        _by_type.clear()
    _plans.forget()  # operations routed by type may now meet this kind
    return kind


def implements(operation: str, kind: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as ``operation``'s implementation for ``kind``.

    The function is called with the public operation's own arguments, unchanged: its
    positional parameters by position (also one the caller named), without the trailing
    ones left at their default, and the keyword-only ones as the caller gave them, so it
    may take fewer parameters than the operation.
    """

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        with _lock:
            _by_name[kind].impls[operation] = fn
        _plans.forget()
        return fn

    return register


def _classify(t: type) -> Kind | None:
    found = next((k for k in _kinds if k.matches(t)), None)
    _by_type[t] = found
    return found


def kind_of(value: Any) -> Kind | None:
    """The kind of ``value``, or None for ordinary arrays, scalars and everything else."""
    t = type(value)
    try:
        return _by_type[t]
    except KeyError:
        return _classify(t)


def find(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Kind, Any] | None:
    """The kind among an operation's arguments and its first value, or None.

    Raises
    ------
    TypeError
        Arguments of two different kinds (a sharded array and a Dask array) were mixed.
    """
    found = None
    for value in (*args, *kwargs.values()) if kwargs else args:
        t = type(value)
        kind = _by_type[t] if t in _by_type else _classify(t)
        if kind is None:
            continue
        if found is None:
            found = (kind, value)
        elif kind is not found[0]:
            raise TypeError(
                f"cannot mix a {found[0].describe(found[1])} and a {kind.describe(value)} in "
                "one call; convert one to the other's kind first"
            )
    return found


def implementation(operation: str, kind: Kind, value: Any) -> Callable[..., Any]:
    """``operation``'s implementation for ``kind``, or a TypeError with the way on."""
    fn = kind.lookup(operation)
    if fn is None:
        raise refusal(operation, kind, value)
    return fn


def implementation_of(operation: str, kind: str) -> Callable[..., Any] | None:
    """``operation``'s implementation for the kind named ``kind``, or None.

    For a front end handed a form of a kind that no argument's type marks (the row
    blocks of a sharded solve, a plain list): the kind's modules are imported by name,
    so the layer below never imports the one that implements it.
    """
    return _by_name[kind].lookup(operation)


def refusal(operation: str, kind: Kind, value: Any, argument: str | None = None) -> TypeError:
    """The TypeError of ``operation`` given ``value`` of ``kind`` it has no implementation for.

    It names the operation, the argument (when known), the value's kind and layout, and
    the way on.
    """
    advice = kind.advice(operation) if callable(kind.advice) else kind.advice
    what = kind.describe(value) + ("" if argument is None else f" as argument {argument!r}")
    return TypeError(
        f"{operation} does not accept a {what}: it has no {kind.name} implementation; {advice}"
    )


def reject(operation: str, **arguments: Any) -> None:
    """Raise :func:`refusal` for the first argument of a registered kind, if any.

    For public callables that are not operations (layers, losses, training loops):
    they accept no array kind, and say so before anything runs.
    """
    for name, value in arguments.items():
        kind = kind_of(value)
        if kind is not None:
            raise refusal(operation, kind, value, name)
