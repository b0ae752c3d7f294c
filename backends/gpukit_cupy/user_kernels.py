"""User kernels as one generated ``cupy.ElementwiseKernel`` / ``cupy.ReductionKernel``.

The kernel tree (:mod:`gpukit.backend.userkernel`) becomes a ``__device__`` function in
the kernel's preamble, typed as NumPy types the same expression: a parameter has its
bound dtype, a literal the output dtype, an operation the wider of its operands (so
``float32`` stays ``float32`` and a ``float64`` operand widens, on both backends).
Names are renamed (``p0``, ``v0``), so no user name meets a C keyword or CuPy's own.
Kernels are built once per tree and dtypes (kept in the tree's ``translations``); CuPy
compiles on the first launch.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np

from gpukit.backend.userkernel import REDUCERS, Body, Node, ReductionBody

_CTYPE = {"float32": "float", "float64": "double"}
#: C names of the functions whose float version is the double one's with an ``f`` suffix.
_C_NAMES = {
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "arcsinh": "asinh",
    "arccosh": "acosh",
    "arctanh": "atanh",
    "arctan2": "atan2",
    "abs": "fabs",
    "power": "pow",
}
#: NaN-propagating minimum/maximum (NumPy's; CUDA's fmin/fmax drop a NaN).
_HELPERS = "".join(
    f"__device__ __forceinline__ {t} gk_u_{name}({t} a, {t} b) "
    f"{{ return (a != a || a {op} b) ? a : b; }}\n"
    for name, op in (("minimum", "<"), ("maximum", ">"))
    for t in ("float", "double")
)


def _wider(a: str, b: str) -> str:
    return "float64" if "float64" in (a, b) else "float32"


class _Emitter:
    """C source of one kernel tree, with each node's dtype inferred as NumPy's would be."""

    def __init__(self, names: dict[str, tuple[str, str]], literal: str) -> None:
        self.names = dict(names)  # kernel name -> (C name, dtype)
        self.literal = literal

    def emit(self, node: Node) -> tuple[str, str]:
        """``(C expression, dtype)``; the dtype of a condition is ``"bool"``."""
        tag = node[0]
        if tag == "num":
            return self.constant(node[1], self.literal), self.literal
        if tag == "var":
            return self.names[node[1]]
        if tag == "reduced":
            return self.names[None]  # type: ignore[index]
        if tag == "neg":
            a, t = self.emit(node[1])
            return f"(-{a})", t
        if tag == "not":
            return f"(!{self.emit(node[1])[0]})", "bool"
        if tag in ("and", "or"):
            op = "&&" if tag == "and" else "||"
            return f"({self.emit(node[1])[0]} {op} {self.emit(node[2])[0]})", "bool"
        if tag == "cmp":
            (a, ta), (b, tb) = self.emit(node[2]), self.emit(node[3])
            t = _CTYPE[_wider(ta, tb)]
            return f"(({t}){a} {node[1]} ({t}){b})", "bool"
        if tag == "where":
            c = self.emit(node[1])[0]
            (a, ta), (b, tb) = self.emit(node[2]), self.emit(node[3])
            t = _wider(ta, tb)
            return f"({c} ? ({_CTYPE[t]}){a} : ({_CTYPE[t]}){b})", t
        if tag == "bin":
            (a, ta), (b, tb) = self.emit(node[2]), self.emit(node[3])
            t = _wider(ta, tb)
            if node[1] == "**":
                return self.function("power", [a, b], t), t
            c = _CTYPE[t]
            return f"(({c}){a} {node[1]} ({c}){b})", t
        # a call
        args = [self.emit(a) for a in node[2]]
        t = args[0][1]
        for _, u in args[1:]:
            t = _wider(t, u)
        return self.function(node[1], [a for a, _ in args], t), t

    @staticmethod
    def function(name: str, args: list[str], dtype: str) -> str:
        c = _CTYPE[dtype]
        cast = ", ".join(f"({c}){a}" for a in args)
        if name in ("minimum", "maximum"):
            return f"gk_u_{name}({cast})"
        base = _C_NAMES.get(name, name)
        return f"{base}{'f' if dtype == 'float32' else ''}({cast})"

    @staticmethod
    def constant(value: float, dtype: str) -> str:
        if value != value:
            return "__int_as_float(0x7fc00000)" if dtype == "float32" else (
                "__longlong_as_double(0x7ff8000000000000LL)"
            )  # fmt: skip
        if value in (float("inf"), float("-inf")):
            sign = "-" if value < 0 else ""
            return f"({sign}__int_as_float(0x7f800000))" if dtype == "float32" else (
                f"({sign}__longlong_as_double(0x7ff0000000000000LL))"
            )  # fmt: skip
        return f"(({_CTYPE[dtype]}){value!r})"

    def function_source(self, fname: str, body: Body, dtypes: tuple[str, ...]) -> tuple[str, str]:
        """A ``__device__`` function computing ``body``; returns (source, result dtype)."""
        params = ", ".join(f"{_CTYPE[d]} p{i}" for i, d in enumerate(dtypes))
        for i, (name, d) in enumerate(zip(body.params, dtypes, strict=True)):
            self.names[name] = (f"p{i}", d)
        lines = []
        for j, (name, expr) in enumerate(body.lets):
            code, t = self.emit(expr)
            if t == "bool":
                lines.append(f"  const bool v{j} = {code};")
            else:
                lines.append(f"  const {_CTYPE[t]} v{j} = {code};")
            self.names[name] = (f"v{j}", t)
        code, t = self.emit(body.result)
        lines.append(f"  return {code};")
        text = "\n".join(lines)
        return f"__device__ {_CTYPE[t]} {fname}({params}) {{\n{text}\n}}\n", t


def _kernel_name(body: Body) -> str:
    return "gk_user_" + (body.name if re.fullmatch(r"[A-Za-z0-9_]+", body.name) else "kernel")


def _in_params(dtypes: tuple[str, ...]) -> str:
    return ", ".join(f"{d} p{i}" for i, d in enumerate(dtypes))


@cache
def elementwise_source(body: Body, dtypes: tuple[str, ...], out: str) -> tuple[str, str, str]:
    """(in_params, operation, preamble) of the ElementwiseKernel of ``body``."""
    fn, _ = _Emitter({}, out).function_source("gk_user_fn", body, dtypes)
    args = ", ".join(f"p{i}" for i in range(len(dtypes)))
    return _in_params(dtypes), f"out0 = ({_CTYPE[out]})gk_user_fn({args})", _HELPERS + fn


@cache
def _elementwise(body: Body, dtypes: tuple[str, ...], out: str) -> Any:
    import cupy

    in_params, operation, preamble = elementwise_source(body, dtypes, out)
    return cupy.ElementwiseKernel(
        in_params, f"{out} out0", operation, _kernel_name(body), preamble=preamble
    )


@cache
def reduction_source(body: ReductionBody, dtypes: tuple[str, ...], out: str) -> dict[str, str]:
    """The arguments of the ReductionKernel of ``body`` (by CuPy's parameter names)."""
    emitter = _Emitter({}, out)
    fn, mapped = emitter.function_source("gk_user_map", body.map, dtypes)
    acc = _CTYPE[mapped]
    final = _Emitter({None: ("a", mapped)}, out)  # type: ignore[dict-item]
    code, _ = final.emit(body.final)
    reduce_expr = {
        "sum": "a + b",
        "prod": "a * b",
        "max": "gk_u_maximum(a, b)",
        "min": "gk_u_minimum(a, b)",
    }[body.reducer]
    args = ", ".join(f"p{i}" for i in range(len(dtypes)))
    return {
        "in_params": _in_params(dtypes),
        "out_params": f"{out} out0",
        "map_expr": f"gk_user_map({args})",
        "reduce_expr": reduce_expr,
        "post_map_expr": f"out0 = ({_CTYPE[out]}){code}",
        "identity": _Emitter.constant(REDUCERS[body.reducer][1], mapped),
        "reduce_type": acc,
        "preamble": _HELPERS + fn,
    }


@cache
def _reduction(body: ReductionBody, dtypes: tuple[str, ...], out: str) -> Any:
    import cupy

    src = reduction_source(body, dtypes, out)
    return cupy.ReductionKernel(
        src["in_params"],
        src["out_params"],
        src["map_expr"],
        src["reduce_expr"],
        src["post_map_expr"],
        src["identity"],
        _kernel_name(body.map),
        reduce_type=src["reduce_type"],
        preamble=src["preamble"],
    )


def _built(
    backend: Any, body: Any, dtypes: tuple[Any, ...], out_dtype: np.dtype, build: Any
) -> Any:
    """``build``'s kernel of ``body`` for arguments of ``dtypes``, kept in the body's
    translations: a call looks it up by dtypes, without hashing the tree."""
    key = (backend, out_dtype, *dtypes)
    try:
        return body.translations[key]
    except KeyError:
        names = tuple(np.dtype(d).name for d in dtypes)
        kernel = body.translations[key] = build(body, names, out_dtype.name)
        return kernel


def _dtypes(args: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(a.dtype for a in args)


def _launch(
    kernel: Any, xp: Any, shape: tuple[int, ...], out_dtype: np.dtype, args: Sequence[Any]
) -> Any:
    """``kernel`` of ``args`` into a new array of ``shape`` and ``out_dtype`` (``xp``: cupy,
    imported by the caller: nothing imports it at gpukit's import).

    Where an argument is an array, CuPy's launch makes the output itself: the arguments'
    broadcast shape (the front-end's ``shape``), the dtype its output parameter names
    (``out_dtype``), C-ordered, on the current device, as ``xp.empty`` here would, for
    less host time than a separate ``cupy.empty`` call. Of scalars alone CuPy cannot
    size a launch: the output is made here."""
    array = xp.ndarray
    for a in args:
        if isinstance(a, array):
            return kernel(*args)
    out = xp.empty(shape, dtype=out_dtype)
    kernel(*args, out)
    return out


def _launch_reduction(
    kernel: Any, xp: Any, shape: tuple[int, ...], axis: Any, keepdims: bool, args: Sequence[Any]
) -> Any:
    """``kernel`` of ``args`` broadcast to ``shape`` (the reduction's axes are the
    broadcast shape's), reduced over ``axis``."""
    full = [
        xp.broadcast_to(a, shape) if isinstance(a, xp.ndarray) and a.shape != shape else a
        for a in args
    ]
    return kernel(*full, axis=axis, keepdims=keepdims)


class CupyUserKernels:
    """``user_elementwise`` / ``user_reduction``: one generated kernel launch each; their
    plans look the kernel up once."""

    def user_elementwise(
        self, body: Body, args: Sequence[Any], shape: tuple[int, ...], out_dtype: np.dtype
    ) -> Any:
        return self.user_elementwise_plan(body, _dtypes(args), shape, out_dtype)(args)

    def user_elementwise_plan(
        self,
        body: Body,
        dtypes: tuple[np.dtype, ...],
        shape: tuple[int, ...],
        out_dtype: np.dtype,
    ) -> Callable[[Sequence[Any]], Any]:
        import cupy

        kernel = _built(self, body, dtypes, out_dtype, _elementwise)
        return functools.partial(_launch, kernel, cupy, shape, out_dtype)

    def user_reduction(
        self,
        body: ReductionBody,
        args: Sequence[Any],
        shape: tuple[int, ...],
        out_dtype: np.dtype,
        axis: tuple[int, ...] | None,
        keepdims: bool,
    ) -> Any:
        plan = self.user_reduction_plan(body, _dtypes(args), shape, out_dtype, axis, keepdims)
        return plan(args)

    def user_reduction_plan(
        self,
        body: ReductionBody,
        dtypes: tuple[np.dtype, ...],
        shape: tuple[int, ...],
        out_dtype: np.dtype,
        axis: tuple[int, ...] | None,
        keepdims: bool,
    ) -> Callable[[Sequence[Any]], Any]:
        import cupy

        kernel = _built(self, body, dtypes, out_dtype, _reduction)
        return functools.partial(_launch_reduction, kernel, cupy, shape, axis, keepdims)
