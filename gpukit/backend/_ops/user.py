"""User-kernel defaults of :class:`gpukit.backend.Backend`: the kernel tree as ufunc calls.

The front-end (``gk.elementwise`` / ``gk.reduction``) has parsed the kernel
(:mod:`gpukit.backend.userkernel`), checked and broadcast the arguments' shapes, bound
each parameter's dtype and cast the arguments to it; these methods only translate the
tree into calls of ``self.xp``'s ufuncs. Elementwise kernels are evaluated in blocks of
rows, so the temporaries of a long expression stay in cache. A device backend
overrides them with one generated kernel launch.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..userkernel import REDUCERS, Body, Node, ReductionBody

#: Elements per block of an elementwise evaluation: 16 Ki elements keep a float64
#: expression's temporaries (128 KiB each) within a core's L2 cache.
BLOCK = 1 << 14


#: The reduced value's name in a reduction's environment (no Python identifier).
_REDUCED = "<reduced>"


class UserKernelOps:
    """Evaluation of user-defined elementwise and reduction kernels with ``self.xp``."""

    xp: Any

    def special_function(self, name: str) -> Callable[..., Any]:
        """``erf``/``erfc`` on this backend's arrays (SciPy's ufuncs by default)."""
        import scipy.special  # on the first kernel using erf: import gpukit stays light

        return getattr(scipy.special, name)

    def _ufunc(self, name: str) -> Callable[..., Any]:
        if name in ("erf", "erfc"):
            return self.special_function(name)
        return getattr(self.xp, name)  # the kernel language uses NumPy's names

    def _compile(self, node: Node, dtype: np.dtype) -> Callable[[dict[str, Any]], Any]:
        """``node`` as a function of the environment (name -> array); literals in ``dtype``."""
        xp, tag = self.xp, node[0]
        if tag == "num":
            value = dtype.type(node[1])
            return lambda env: value
        if tag == "var":
            name = node[1]
            return lambda env: env[name]
        if tag == "reduced":
            return lambda env: env[_REDUCED]
        if tag == "call":
            fn = self._ufunc(node[1])
            args = [self._compile(a, dtype) for a in node[2]]
            if len(args) == 1:
                (a,) = args
                return lambda env: fn(a(env))
            return lambda env: fn(*(a(env) for a in args))
        if tag == "where":
            c, a, b = (self._compile(n, dtype) for n in node[1:])
            return lambda env: xp.where(c(env), a(env), b(env))
        if tag == "neg":
            a = self._compile(node[1], dtype)
            return lambda env: xp.negative(a(env))
        if tag == "not":
            a = self._compile(node[1], dtype)
            return lambda env: xp.logical_not(a(env))
        op = node[1] if tag in ("bin", "cmp") else tag
        fn = getattr(xp, _BINARY[op])
        a, b = (self._compile(n, dtype) for n in node[-2:])
        return lambda env: fn(a(env), b(env))

    # Kept per (backend, body, dtype): building the closures cost more than evaluating a
    # small kernel. lru_cache is thread-safe; backends and parsed bodies live as long as
    # their kernels, and the bound keeps a process that makes kernels in a loop in check.
    @functools.lru_cache(maxsize=256)  # noqa: B019
    def _program(self, body: Body, dtype: np.dtype) -> Callable[[list[Any]], Any]:
        lets = [(name, self._compile(e, dtype)) for name, e in body.lets]
        result = self._compile(body.result, dtype)
        params = body.params

        def run(args: list[Any]) -> Any:
            env = dict(zip(params, args, strict=True))
            for name, fn in lets:
                env[name] = fn(env)
            return result(env)

        return run

    @functools.lru_cache(maxsize=256)  # noqa: B019 - as _program
    def _final(self, node: Node, dtype: np.dtype) -> Callable[[dict[str, Any]], Any]:
        return self._compile(node, dtype)

    def user_elementwise(
        self, body: Body, args: list[Any], shape: tuple[int, ...], out_dtype: np.dtype
    ) -> Any:
        """``body`` applied elementwise to ``args`` (each cast to its parameter's dtype and
        broadcastable to ``shape``), as an array of ``shape`` and ``out_dtype``."""
        run = self._program(body, out_dtype)
        out = self.xp.empty(shape, dtype=out_dtype)
        if out.size == 0:
            return out
        rows = max(1, BLOCK // max(1, math.prod(shape[1:])))
        with np.errstate(all="ignore"):  # inf and nan are results, as on a GPU
            if not shape or rows >= shape[0]:
                out[...] = run(args)
                return out
            full = [self.xp.broadcast_to(a, shape) if hasattr(a, "ndim") else a for a in args]
            for start in range(0, shape[0], rows):
                block = slice(start, start + rows)
                out[block] = run([a[block] if hasattr(a, "ndim") else a for a in full])
        return out

    def user_reduction(
        self,
        body: ReductionBody,
        args: list[Any],
        shape: tuple[int, ...],
        out_dtype: np.dtype,
        axis: tuple[int, ...] | None,
        keepdims: bool,
    ) -> Any:
        """``body.final(reducer(body.map(*args)))`` over ``axis`` (every axis when None)."""
        mapped = self._program(body.map, out_dtype)
        final = self._final(body.final, out_dtype)
        xp = self.xp
        with np.errstate(all="ignore"):
            m = xp.broadcast_to(xp.asarray(mapped(args)), shape)
            reduced = getattr(xp, REDUCERS[body.reducer][0])(m, axis=axis, keepdims=keepdims)
            out = final({_REDUCED: reduced})
        return xp.asarray(out).astype(out_dtype, copy=False)


_BINARY = {
    "+": "add",
    "-": "subtract",
    "*": "multiply",
    "/": "divide",
    "**": "power",
    "<": "less",
    "<=": "less_equal",
    ">": "greater",
    ">=": "greater_equal",
    "==": "equal",
    "!=": "not_equal",
    "and": "logical_and",
    "or": "logical_or",
}
