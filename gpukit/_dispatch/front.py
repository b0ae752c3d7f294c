"""The function a public operation's caller calls: generated from the operation's signature.

A warm call on plain arguments (:data:`gpukit._dispatch.decorator._PLAIN`) runs the
operation at once; its test is one expression over the parameters by name, unrolled, where
a function of ``(*args, **kwargs)`` would pack the arguments and loop over them (about
1,800 instructions a call of six arguments, most of the decorator's cost). Every other
call is handed to the decorator's ``routed`` with the arguments bound by the signature:
the positional ones (a variadic one's included) as a tuple, the keyword-only ones as a
dictionary, every parameter there whether given or defaulted, as the operation receives
them.
"""

from __future__ import annotations

import inspect
import itertools
import linecache
import os
from collections.abc import Callable
from typing import Any

from .._select.registry import trim_traceback
from ..errors import BackendUnavailableError

__all__ = ["front", "given"]

_P = inspect.Parameter
_HERE = os.path.dirname(os.path.abspath(__file__))
_made = itertools.count()  # one source file name per generated function

_TEMPLATE = """\
def {name}({signature}):
    try:
{loops}        if {test}:
            try:
                return attempt({call})
            except Exception as exc:
                claimed = claim(exc)
                if claimed is None:
                    raise
            return retry(claimed, {args}, {kwargs})
        return routed({args}, {kwargs})
    except BackendUnavailableError as exc:
        trim_traceback(exc)  # the user's call and the reason, not gpukit's frames
        raise
"""

# the test of a variadic parameter's values, before the others': a loop whose ``else``
# runs the rest (a break leaves for routed)
_LOOP = """\
        for value in {values}:
            if type(value) not in plain:
                return routed({args}, {kwargs})
"""


def front(
    fn: Callable[..., Any],
    name: str,
    *,
    plain: frozenset[type],
    routes: dict[Any, Any],
    attempt: Callable[..., Any],
    claim: Callable[[BaseException], Any],
    retry: Callable[..., Any],
    routed: Callable[[tuple[Any, ...], dict[str, Any]], Any],
) -> Callable[..., Any]:
    """The caller's function of ``fn``, the operation ``name``, with ``fn``'s signature.

    It calls ``attempt`` (``fn`` under the memory policy's first step, ``claim`` and
    ``retry`` its other two) when every argument is of a ``plain`` type, or when the
    first parameter's is the only other type (or the same object again) and ``routes``
    keeps None (run here) under that type; ``routed(args, kwargs)`` otherwise.

    Examples
    --------
    >>> def double(x, *, times=2):
    ...     return x * times
    >>> f = front(double, "gk.example_double", plain=frozenset({int}), routes={}, attempt=double,
    ...           claim=lambda exc: None, retry=None, routed=lambda a, k: ("routed", a, k))
    >>> f(3), f(3.0, times=3)
    (6, ('routed', (3.0,), {'times': 3}))
    """
    scope: dict[str, Any] = {
        "plain": plain,
        "routes": routes,
        "miss": object(),
        "attempt": attempt,
        "claim": claim,
        "retry": retry,
        "routed": routed,
        "BackendUnavailableError": BackendUnavailableError,
        "trim_traceback": trim_traceback,
    }
    signature: list[str] = []
    call: list[str] = []
    positional: list[str] = []
    keywords: list[str] = []
    tests: list[str] = []
    variadic: list[str] = []
    first = None
    slash = star = False
    for i, p in enumerate(inspect.signature(fn).parameters.values()):
        n = p.name
        text = n if p.default is _P.empty else f"{n}=_d{i}"
        if p.default is not _P.empty:
            scope[f"_d{i}"] = p.default
        if p.kind is _P.POSITIONAL_ONLY:
            slash = True
        elif slash:
            signature.append("/")
            slash = False
        if p.kind is _P.VAR_POSITIONAL:
            signature.append(f"*{n}")
            call.append(f"*{n}")
            positional.append(f"*{n}")
            variadic.append(n)
            star = True
            continue
        if p.kind is _P.VAR_KEYWORD:
            signature.append(f"**{n}")
            call.append(f"**{n}")
            keywords.append(f"**{n}")
            variadic.append(f"{n}.values()")
            continue
        if p.kind is _P.KEYWORD_ONLY:
            if not star:
                signature.append("*")
                star = True
            call.append(f"{n}={n}")
            keywords.append(f"{n!r}: {n}")
        else:
            call.append(n)
            positional.append(n)
        signature.append(text)
        # None first (an identity test, cheaper than a type's look-up); the first
        # parameter's own test, with its route, comes last
        if first is None and p.kind is not _P.KEYWORD_ONLY:
            first = n
        else:
            again = "" if first is None else f" or {n} is {first}"
            tests.append(f"({n} is None or type({n}) in plain{again})")
    if slash:
        signature.append("/")
    if first is not None:
        kept = f"routes.get(type({first}), miss) is None"
        tests.append(f"(type({first}) in plain or {kept})")
    args = f"({', '.join(positional)}{',' if len(positional) == 1 else ''})"
    kwargs = "{" + ", ".join(keywords) + "}"
    source = _TEMPLATE.format(
        name=fn.__name__,
        signature=", ".join(signature),
        loops="".join(_LOOP.format(values=v, args=args, kwargs=kwargs) for v in variadic),
        test=" and ".join(tests) or "True",
        call=", ".join(call),
        args=args,
        kwargs=kwargs,
    )
    # a name in this folder: gpukit.errors.warn passes over gpukit's own frames by path;
    # kept in linecache (never checked against a file: no time) for tracebacks
    filename = os.path.join(_HERE, f"<operation {name}: {fn.__qualname__} #{next(_made)}>")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), scope)
    return scope[fn.__name__]


def given(fn: Callable[..., Any]) -> Callable[..., tuple[tuple[Any, ...], dict[str, Any]]]:
    """``(args, kwargs) -> (args, kwargs)`` without the defaulted arguments :func:`front`
    binds: the trailing positional and the keyword-only ones that are their default
    object, for an implementation with a signature of its own (an array kind's), which
    then gets the call as it could have been written.

    Examples
    --------
    >>> def f(a, b=None, *, c=False):
    ...     pass
    >>> given(f)((1, None), {"c": False}), given(f)((1, 2), {"c": True})
    (((1,), {}), ((1, 2), {'c': True}))
    """
    params = list(inspect.signature(fn).parameters.values())
    positional = [
        p.default for p in params if p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)
    ]
    keywords = {p.name: p.default for p in params if p.kind is _P.KEYWORD_ONLY}

    def strip(
        args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        n = len(args)
        while 0 < n <= len(positional) and args[n - 1] is positional[n - 1]:
            n -= 1
        kept = {k: v for k, v in kwargs.items() if k not in keywords or v is not keywords[k]}
        return args[:n], kept

    return strip
