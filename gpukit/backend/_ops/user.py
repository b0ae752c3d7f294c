"""User-kernel defaults of :class:`gpukit.backend.Backend`: the kernel tree as ufunc calls.

The front-end (``gk.elementwise`` / ``gk.reduction``) has parsed the kernel
(:mod:`gpukit.backend.userkernel`), checked and broadcast the arguments' shapes, bound
each parameter's dtype and cast the arguments to it; these methods only translate the
tree into calls of ``self.xp``'s ufuncs. Elementwise kernels are evaluated in blocks of
rows, so the temporaries of a long expression stay in cache. A device backend
overrides them with one generated kernel launch.

The translation is a generated Python function, one ufunc call a line (as the CuPy
backend generates CUDA C): a small kernel then costs its ufunc calls and one function
call, not one closure call per node of its tree.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..userkernel import REDUCERS, Body, Node, ReductionBody

#: Elements per block of an elementwise evaluation: 16 Ki elements keep a float64
#: expression's temporaries (128 KiB each) within a core's L2 cache.
BLOCK = 1 << 14

_F = Callable[..., Any]

#: The ufunc whose ``reduce`` each reducer is: ``numpy.sum`` and its kin are Python
#: wrappers that end in these calls, at twice a small reduction's cost.
_UFUNCS = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum"}


def _quiet(fn: _F) -> _F:
    """``fn`` under ``numpy.errstate(all="ignore")``: inf and nan are results, as on a GPU.

    The decorator is the cheapest public way to keep the caller's error callback and
    buffer size (~5.4k instructions a call on NumPy 2.4): ``with numpy.errstate(...)``
    builds the object on every call (~10k), and one errstate object is never entered twice.
    """
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        # NumPy 2's errstate decorator keeps its state per call: one call level, thread safe
        return np.errstate(all="ignore")(fn)

    @functools.wraps(fn)
    def quiet(*args: Any, **kwargs: Any) -> Any:  # NumPy 1's shares it between threads
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)

    return quiet


class _Source:
    """A kernel tree as the lines of a Python function: ``tK = ufunc(a, b)`` per operation
    (no nesting, however deep the tree), names renamed (``p0`` parameters, ``v0`` locals,
    ``r`` the reduced value), ufuncs and literals (in ``dtype``) bound as globals."""

    def __init__(self, ufunc: Callable[[str], _F], dtype: np.dtype) -> None:
        self.ufunc, self.dtype = ufunc, dtype
        self.names: dict[str, str] = {}
        self.globals: dict[str, Any] = {}
        self.functions: dict[str, str] = {}
        self.lines: list[str] = []

    def _function(self, name: str) -> str:
        if name not in self.functions:
            self.functions[name] = self._bind(self.ufunc(name))
        return self.functions[name]

    def _bind(self, value: Any) -> str:
        name = f"g{len(self.globals)}"
        self.globals[name] = value
        return name

    def operand(self, node: Node) -> str:
        """The name holding ``node``'s value, after the lines computing it."""
        call = self.call(node)
        if call is None:
            return self.leaf(node)
        temp = f"t{len(self.lines)}"
        self.lines.append(f"    {temp} = {call[0]}({', '.join(call[1])})")
        return temp

    def leaf(self, node: Node) -> str:
        tag = node[0]
        if tag == "num":
            return self._bind(self.dtype.type(node[1]))
        if tag == "var":
            return self.names[node[1]]
        return "r"  # ("reduced",)

    def call(self, node: Node) -> tuple[str, list[str]] | None:
        """``(function, operands)`` computing ``node``, after the lines computing the
        operands; None for a leaf."""
        tag = node[0]
        if tag in ("num", "var", "reduced"):
            return None
        if tag == "call":
            return self._function(node[1]), [self.operand(a) for a in node[2]]
        if tag == "where":
            return self._function("where"), [self.operand(n) for n in node[1:]]
        if tag in ("neg", "not"):
            fn = self._function("negative" if tag == "neg" else "logical_not")
            return fn, [self.operand(node[1])]
        fn = self._function(_BINARY[node[1] if tag in ("bin", "cmp") else tag])
        return fn, [self.operand(n) for n in node[-2:]]

    def function(self, signature: str, result: Node, label: str) -> _F:
        """The function ``def signature:`` of the lines so far, returning ``result``."""
        ret = self.operand(result)
        return self._compile([f"def {signature}:", *self.lines, f"    return {ret}"], label)[0]

    def evaluations(self, result: Node, empty: _F, label: str) -> tuple[_F, _F, _F]:
        """``(run, whole, into)`` of the lines so far (reading ``args``) and ``result``:
        ``run(args)`` returns its value, ``whole(shape)(args)`` writes it into a new
        C-contiguous array of ``shape`` and ``dtype`` (``empty(shape, dtype)``) and
        ``into(out, args)`` into ``out``: a ufunc computing ``result`` writes its output
        there, without a temporary and a copy. ``whole(shape)`` is a closure over the
        shape: a call costs one function call, not a ``functools.partial``'s two."""
        call = self.call(result)
        lines = self.lines
        if call is None:
            value = self.leaf(result)
            write = f"    out[...] = {value}"
        else:
            value = f"{call[0]}({', '.join(call[1])})"
            if isinstance(self.globals[call[0]], np.ufunc):
                write = f"    {call[0]}({', '.join([*call[1], 'out=out'])})"
            else:
                write = f"    out[...] = {value}"
        allocate = f"    out = {self._bind(empty)}(shape, {self._bind(self.dtype)})"
        run, whole, into = self._compile(
            [
                *("def run(args):", *lines, f"    return {value}"),
                *("def whole(shape):", "    def evaluate(args):"),
                *(f"    {line}" for line in (*lines, allocate, write, "    return out")),
                "    return evaluate",
                *("def into(out, args):", *lines, write),
            ],
            label,
        )
        return run, whole, into

    def _compile(self, source: list[str], label: str) -> list[_F]:
        """The functions ``source`` defines, in order."""
        scope = dict(self.globals)
        exec(compile("\n".join(source), f"<{label}>", "exec"), scope)  # generated names only
        return [scope[line[4 : line.index("(")]] for line in source if line.startswith("def ")]


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

    # Kept in the body's translations, per backend and dtype: generating the functions
    # costs more than evaluating a small kernel. Two threads may both make them (the last
    # is kept; both are right).
    def _program(self, body: Body, dtype: np.dtype) -> tuple[_F, _F, _F]:
        """:meth:`_Source.evaluations` of ``body`` (literals in ``dtype``)."""
        try:
            return body.translations[self, dtype]
        except KeyError:
            pass
        source = _Source(self._ufunc, dtype)
        source.names.update({name: f"p{i}" for i, name in enumerate(body.params)})
        source.lines.append(f"    ({''.join(f'p{i}, ' for i in range(len(body.params)))}) = args")
        for j, (name, expr) in enumerate(body.lets):
            source.lines.append(f"    v{j} = {source.operand(expr)}")
            source.names[name] = f"v{j}"  # after its expression: x = -x reads the old x
        run, whole, into = source.evaluations(
            body.result, self.xp.empty, f"gk.elementwise {body.name}"
        )
        program = body.translations[self, dtype] = run, whole, into
        return program

    def _reducer(self, body: ReductionBody, dtype: np.dtype) -> tuple[_F, _F, _F | None]:
        """``(map, reduce, final)`` of ``body``, kept as :meth:`_program`'s; ``final`` None
        when it returns the reduced value as it is."""
        try:
            return body.translations[self, dtype]
        except KeyError:
            pass
        final = None
        if body.final[0] != "reduced":
            source = _Source(self._ufunc, dtype)
            final = source.function("final(r)", body.final, f"gk.reduction {body.map.name}")
        ufunc = getattr(self.xp, _UFUNCS[body.reducer], None)
        if isinstance(ufunc, np.ufunc):
            reduce = ufunc.reduce
        else:
            reduce = getattr(self.xp, REDUCERS[body.reducer][0])
        program = self._program(body.map, dtype)[0], reduce, final
        body.translations[self, dtype] = program
        return program

    def user_elementwise(
        self, body: Body, args: Sequence[Any], shape: tuple[int, ...], out_dtype: np.dtype
    ) -> Any:
        """``body`` applied elementwise to ``args`` (each cast to its parameter's dtype and
        broadcastable to ``shape``), as a C-contiguous array of ``shape`` and ``out_dtype``."""
        return self._elementwise(body, shape, out_dtype)(args)

    def user_elementwise_plan(
        self,
        body: Body,
        dtypes: tuple[np.dtype, ...],
        shape: tuple[int, ...],
        out_dtype: np.dtype,
    ) -> Callable[[Sequence[Any]], Any]:
        """:meth:`user_elementwise` of arguments of ``dtypes`` broadcasting to ``shape``,
        as a function of the arguments alone.

        The front-end keeps it in its plan for the next call with arguments of the same
        types, dtypes and shapes, so a backend may settle here, once, what depends only on
        these (the default: the generated function; a backend overriding
        :meth:`user_elementwise` gets that method, called each time).
        """
        if type(self).user_elementwise is not UserKernelOps.user_elementwise:
            return lambda args: self.user_elementwise(body, args, shape, out_dtype)
        return self._elementwise(body, shape, out_dtype)

    def _elementwise(
        self, body: Body, shape: tuple[int, ...], out_dtype: np.dtype
    ) -> Callable[[Sequence[Any]], Any]:
        """The default :meth:`user_elementwise_plan`."""
        _, whole, into = self._program(body, out_dtype)
        if math.prod(shape) <= BLOCK:  # one block
            return _quiet(whole(shape))
        return functools.partial(self._blocks, into, shape, out_dtype)

    @_quiet
    def _blocks(self, into: _F, shape: tuple[int, ...], out_dtype: np.dtype, args: Any) -> Any:
        """``into`` a new array of ``shape`` and ``out_dtype``, block by block of rows."""
        xp = self.xp
        rows = max(1, BLOCK // max(1, math.prod(shape[1:])))
        out = xp.empty(shape, dtype=out_dtype)
        full = [xp.broadcast_to(a, shape) if hasattr(a, "ndim") else a for a in args]
        for start in range(0, shape[0], rows):
            block = slice(start, start + rows)
            into(out[block], [a[block] if hasattr(a, "ndim") else a for a in full])
        return out

    def user_reduction(
        self,
        body: ReductionBody,
        args: Sequence[Any],
        shape: tuple[int, ...],
        out_dtype: np.dtype,
        axis: tuple[int, ...] | None,
        keepdims: bool,
    ) -> Any:
        """``body.final(reducer(body.map(*args)))`` over ``axis`` (every axis when None)."""
        return self._reduction(body, shape, out_dtype, axis, keepdims)(args)

    def user_reduction_plan(
        self,
        body: ReductionBody,
        dtypes: tuple[np.dtype, ...],
        shape: tuple[int, ...],
        out_dtype: np.dtype,
        axis: tuple[int, ...] | None,
        keepdims: bool,
    ) -> Callable[[Sequence[Any]], Any]:
        """:meth:`user_reduction` of arguments of ``dtypes`` broadcasting to ``shape``, as
        a function of the arguments alone (as :meth:`user_elementwise_plan`)."""
        if type(self).user_reduction is not UserKernelOps.user_reduction:
            return lambda args: self.user_reduction(body, args, shape, out_dtype, axis, keepdims)
        return self._reduction(body, shape, out_dtype, axis, keepdims)

    def _reduction(
        self,
        body: ReductionBody,
        shape: tuple[int, ...],
        out_dtype: np.dtype,
        axis: tuple[int, ...] | None,
        keepdims: bool,
    ) -> Callable[[Sequence[Any]], Any]:
        """The default :meth:`user_reduction_plan`: ``final(reduce(mapped(args)))``, as
        :meth:`user_reduction` describes, as a closure under :func:`_quiet` (a call costs
        one function call, not a ``functools.partial`` of a method and eight arguments)."""
        xp = self.xp
        mapped, reduce, final = self._reducer(body, out_dtype)

        def evaluate(args: Any) -> Any:
            m = xp.asarray(mapped(args))
            if m.shape != shape:  # a mapped expression of fewer than every argument
                m = xp.broadcast_to(m, shape)
            out = reduce(m, axis=axis, keepdims=keepdims)
            if final is not None:
                out = final(out)
            return xp.asarray(out).astype(out_dtype, copy=False)

        return _quiet(evaluate)


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
