"""The function a public operation's caller calls: generated from the operation's signature.

A warm call on plain arguments (:data:`gpukit._dispatch.decorator._PLAIN`) runs the
operation at once; its test is one expression over the positional parameters by name,
unrolled, where a function of ``(*args, **kwargs)`` would pack the arguments and loop
over them (about 1,800 instructions of a call of six arguments, most of the decorator's
cost). The generated function takes the operation's positional parameters as the
operation does (names and defaults; an operation with a variadic one gets every
positional argument in one tuple, tested in a loop and passed on as it is) and every
keyword argument beyond them in one ``**`` dictionary, passed on only when not empty:
the operation binds the keyword-only ones itself, with its own defaults and its own
``TypeError`` for a missing or unexpected one (a keyword-only parameter of the generated
function would fill its default on every call, and then pass it by keyword). A call
whose first argument alone is not plain follows the route kept for its type (the
decorator's ``follow``: a device to make current, an array kind's implementation);
every other call is handed to the decorator's ``routed``, which finds the route: the
positional arguments as a tuple, the keyword ones as given.
"""

from __future__ import annotations

import inspect
import itertools
import linecache
import os
from collections.abc import Callable
from textwrap import indent
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
{loops}{main}
    except _gk_BackendUnavailableError as _gk_exc:
        _gk_trim_traceback(_gk_exc)  # the user's call and the reason, not gpukit's frames
        raise
"""

# a variadic parameter's values are tested first, each: one not plain goes to routed
_LOOP = """\
        for _gk_value in {values}:
            if _gk_type(_gk_value) not in _gk_plain:
                return _gk_routed({args}, {keywords})
"""

# the body of a function taking keywords: those given, when all plain, passed on
_KEYWORDS = """\
if not {keywords}:
{short}
for _gk_value in {keywords}.values():
    if _gk_type(_gk_value) not in _gk_plain:
        break
else:
{full}"""

_RUN = """\
try:
    return _gk_attempt({call})
except Exception as _gk_exc:
    _gk_claimed = _gk_claim(_gk_exc)
    if _gk_claimed is None:
        raise
return _gk_retry(_gk_claimed, {args}, {keywords})"""


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
    follow: Callable[[Any, tuple[Any, ...], dict[str, Any]], Any],
) -> Callable[..., Any]:
    """The caller's function of ``fn``, the operation ``name``.

    It calls ``attempt`` (``fn`` under the memory policy's first step, ``claim`` and
    ``retry`` its other two) when every argument is of a ``plain`` type, or when the
    first argument's type is the only other one (its route is that of every argument of
    the type) and ``routes`` keeps None (run here) under that type; ``follow(plan, args,
    kwargs)`` with the route ``plan`` kept there otherwise (no keyword given);
    ``routed(args, kwargs)`` for every other call.

    Examples
    --------
    >>> def double(x, *, times=2):
    ...     return x * times
    >>> f = front(double, "gk.example_double", plain=frozenset({int}), routes={},
    ...           attempt=double, claim=lambda exc: None, retry=None,
    ...           routed=lambda a, k: ("routed", a, k), follow=None)
    >>> f(3), f(3, times=3), f(3.0)
    (6, 9, ('routed', (3.0,), {}))
    """
    parameters = inspect.signature(fn).parameters.values()
    keywords = "_gk_keywords"  # the name of the ``**`` parameter, or fn's own
    # the generated code's own names: "_gk_" before each, so that no parameter's hides one
    scope: dict[str, Any] = {
        "_gk_type": type,  # (a parameter named type would hide the builtin)
        "_gk_plain": plain,
        "_gk_routes": routes,
        "_gk_miss": object(),
        "_gk_attempt": attempt,
        "_gk_claim": claim,
        "_gk_retry": retry,
        "_gk_routed": routed,
        "_gk_follow": follow,
        "_gk_BackendUnavailableError": BackendUnavailableError,
        "_gk_trim_traceback": trim_traceback,
    }
    taken = [p.name for p in parameters if p.name.startswith("_gk_")]
    if taken:
        raise TypeError(f"{name}: parameter names starting with _gk_ are gpukit's: {taken}")
    signature: list[str] = []
    positional: list[str] = []  # the call's positional part, as the tuple routed gets
    tests: list[str] = []  # plain: each positional argument but the first
    loops: list[str] = []
    first = None
    only = False  # after positional-only parameters: a "/" before the next one
    variadic = [p.name for p in parameters if p.kind is _P.VAR_POSITIONAL]
    if variadic:  # every positional argument in fn's own tuple: tested in a loop, passed
        signature.append(f"*{variadic[0]}")  # on as it is (the user kernels' call)
        positional.append(f"*{variadic[0]}")
        loops.append(variadic[0])
        parameters = [p for p in parameters if p.kind in (_P.KEYWORD_ONLY, _P.VAR_KEYWORD)]
    for i, p in enumerate(parameters):
        n = p.name
        if only and p.kind is not _P.POSITIONAL_ONLY:
            signature.append("/")
        only = p.kind is _P.POSITIONAL_ONLY
        if p.kind is _P.VAR_KEYWORD:
            keywords = n
        elif p.kind is not _P.KEYWORD_ONLY:
            if p.default is _P.empty:
                signature.append(n)
            else:
                signature.append(f"{n}=_gk_d{i}")
                scope[f"_gk_d{i}"] = p.default
            positional.append(n)
            if first is None:
                first = n  # tested with its route, after the others
                continue
            # identity tests before a type's look-up: None, or the default as it was left
            test = (
                f"{n} is None or _gk_type({n}) in _gk_plain or _gk_type({n}) is _gk_type({first})"
            )
            if p.default is not None and p.default is not _P.empty:
                test = f"{n} is _gk_d{i} or {test}"
            tests.append(f"({test})")
    if only:
        signature.append("/")
    args = variadic[0] if variadic else f"({', '.join(positional)}{',' * (len(positional) == 1)})"
    if any(p.kind in (_P.KEYWORD_ONLY, _P.VAR_KEYWORD) for p in parameters):
        signature.append(f"**{keywords}")
        short = _RUN.format(call=", ".join(positional), args=args, keywords="{}")
        full = _RUN.format(
            call=", ".join([*positional, f"**{keywords}"]), args=args, keywords=keywords
        )
        body = _KEYWORDS.format(
            keywords=keywords, short=indent(short, "    "), full=indent(full, "    ")
        )
    else:  # no dictionary to make on each call
        keywords = "{}"
        body = _RUN.format(call=", ".join(positional), args=args, keywords=keywords)
    if first is not None:  # the route kept for its type where only it is not plain
        unnamed = "" if keywords == "{}" else f" and not {keywords}"  # no keyword given
        main = (
            f"_gk_plan = (None if _gk_type({first}) in _gk_plain\n"
            f"            else _gk_routes.get(_gk_type({first}), _gk_miss))\n"
            f"if _gk_plan is None:\n{indent(body, '    ')}\n"
            f"elif _gk_plan is not _gk_miss{unnamed}:\n"
            f"    return _gk_follow(_gk_plan, {args}, {keywords})"
        )
        if tests:
            main = f"if {' and '.join(tests)}:\n{indent(main, '    ')}"
    else:
        main = body
    if first is not None or keywords != "{}":  # else variadic positional ones only
        main += f"\nreturn _gk_routed({args}, {keywords})"
    # the function's own name where it can be one (not a lambda's): update_wrapper sets
    # the qualified name, which Python's own TypeErrors print
    defined = fn.__name__ if fn.__name__.isidentifier() else "_gk_operation"
    source = _TEMPLATE.format(
        name=defined,
        signature=", ".join(signature),
        loops="".join(_LOOP.format(values=v, args=args, keywords=keywords) for v in loops),
        main=indent(main, " " * 8),
    )
    # a name in this folder: gpukit.errors.warn passes over gpukit's own frames by path;
    # kept in linecache (never checked against a file: no time) for tracebacks
    filename = os.path.join(_HERE, f"<operation {name}: {fn.__qualname__} #{next(_made)}>")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), scope)
    return scope[defined]


def given(fn: Callable[..., Any]) -> Callable[..., tuple[tuple[Any, ...], dict[str, Any]]]:
    """``(args, kwargs) -> (args, kwargs)`` without the trailing positional arguments that
    are their default object, which :func:`front` passes on as bound: for an
    implementation with a signature of its own (an array kind's), which then gets the
    call as it could have been written.

    Examples
    --------
    >>> def f(a, b=None, c=0, *, d=False):
    ...     pass
    >>> given(f)((1, None, 0), {}), given(f)((1, 2, 0), {"d": False})
    (((1,), {}), ((1, 2), {'d': False}))
    """
    defaults = [
        p.default
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)
    ]

    def strip(
        args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        n = len(args)
        while 0 < n <= len(defaults) and args[n - 1] is defaults[n - 1]:
            n -= 1
        return args[:n], kwargs

    return strip
