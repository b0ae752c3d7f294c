"""The kernel language of ``gk.elementwise`` / ``gk.reduction``: parser and expression tree.

A user kernel is a Python function whose body is read with :mod:`ast`, never run: zero
or more assignments ``name = expression`` and one ``return expression``, over the
parameters, numeric literals, the constants ``pi``, ``e``, ``inf`` and ``nan``,
arithmetic (``+ - * / **``, unary ``-``), comparisons (one operator each), ``and``,
``or``, ``not``, ``a if c else b`` and the functions of :data:`FUNCTIONS` (the math NumPy
and CUDA share), by bare name or as ``np.<name>``. Anything else is refused when the
kernel is defined, with :class:`gpukit.errors.KernelSyntaxError` naming the construct
and its line.

The parsed tree is part of the backend contract: each backend translates it (CUDA C
source on cupy, NumPy ufunc calls on the host). Nodes are tuples:

``("num", value)``, ``("var", name)``, ``("call", function, args)``,
``("bin", op, a, b)`` (op in ``+ - * / **``), ``("neg", a)``, ``("cmp", op, a, b)``,
``("and", a, b)``, ``("or", a, b)``, ``("not", a)``, ``("where", cond, a, b)`` and, in
a reduction's final expression only, ``("reduced",)`` (the reduced value).
"""

from __future__ import annotations

import ast
import inspect
import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import KernelSyntaxError

__all__ = [
    "FUNCTIONS",
    "REDUCERS",
    "Body",
    "ReductionBody",
    "parse_elementwise",
    "parse_reduction",
    "replace",
]

#: The functions of the kernel language: NumPy name -> number of arguments.
FUNCTIONS: dict[str, int] = {
    **dict.fromkeys(
        (
            "exp exp2 expm1 log log2 log10 log1p sqrt cbrt sin cos tan arcsin arccos arctan "
            "sinh cosh tanh arcsinh arccosh arctanh erf erfc abs floor ceil trunc"
        ).split(),
        1,
    ),
    **dict.fromkeys("minimum maximum arctan2 hypot power copysign".split(), 2),
    "where": 3,
}
#: Other spellings accepted for a function.
_ALIASES = {"absolute": "abs", "fabs": "abs", "pow": "power"}
#: Named constants.
CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}
#: Reductions a ``gk.reduction`` kernel may apply: name -> (NumPy reduction, identity).
REDUCERS: dict[str, tuple[str, float]] = {
    "sum": ("sum", 0.0),
    "prod": ("prod", 1.0),
    "max": ("max", -math.inf),
    "min": ("min", math.inf),
}
_MODULES = ("np", "numpy")
_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
#: How a refused node is named in messages (the class name otherwise).
_WORDS = {
    ast.For: "a for loop",
    ast.While: "a while loop",
    ast.If: "an if statement (write `a if cond else b` or where(cond, a, b))",
    ast.Attribute: "attribute access",
    ast.Subscript: "indexing",
    ast.FloorDiv: "the operator //",
    ast.Mod: "the operator %",
    ast.MatMult: "the operator @",
    ast.BitAnd: "the operator & (write `and`)",
    ast.BitOr: "the operator | (write `or`)",
    ast.Invert: "the operator ~ (write `not`)",
    ast.Lambda: "a lambda",
    ast.ListComp: "a list comprehension",
    ast.Import: "an import",
    ast.ImportFrom: "an import",
    ast.AugAssign: "an augmented assignment (write `x = x + ...`)",
    ast.Try: "a try statement",
    ast.With: "a with statement",
    ast.Global: "a global statement",
    ast.Nonlocal: "a nonlocal statement",
}

Node = tuple[Any, ...]


@dataclass(frozen=True)
class Body:
    """A parsed elementwise function: ``lets`` in order, then ``result``.

    Attributes
    ----------
    name : str
        The function's name (kernel names and messages).
    params : tuple of str
        Parameter names, in order.
    lets : tuple of (str, node)
        Local assignments, each an expression of the parameters and earlier locals.
    result : node
        The returned expression.
    translations : dict
        What backends made of this body, keyed as each likes (its own backend object
        first): it lives as long as the kernel, and a warm call looks it up without
        hashing the tree.
    """

    name: str
    params: tuple[str, ...]
    lets: tuple[tuple[str, Node], ...]
    result: Node
    translations: dict[Any, Any] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )


@dataclass(frozen=True)
class ReductionBody:
    """A parsed reduction: ``final(reducer(map))``.

    Attributes
    ----------
    map : Body
        The elementwise function reduced (its ``result`` is the reducer's argument).
    reducer : str
        A key of :data:`REDUCERS`.
    final : node
        The returned expression of ``("reduced",)`` and constants (``("reduced",)`` when
        the reduced value is returned as it is).
    translations : dict
        As :attr:`Body.translations`.
    """

    map: Body
    reducer: str
    final: Node
    translations: dict[Any, Any] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )


class _Parser:
    def __init__(self, fn: Callable[..., Any], what: str) -> None:
        self.what = what
        try:
            lines, first = inspect.getsourcelines(fn)
            self.filename = inspect.getsourcefile(fn) or "<unknown>"
        except (OSError, TypeError):
            raise KernelSyntaxError(
                f"{what}: the source of {fn!r} cannot be read; define the kernel with `def` "
                "in a file or a notebook cell"
            ) from None
        self.offset = first - 1
        self.lines = lines
        tree = ast.parse(textwrap.dedent("".join(lines)))
        found = tree.body[0] if tree.body else None
        if not isinstance(found, ast.FunctionDef):
            raise KernelSyntaxError(f"{what}: expected a function defined with `def`")
        self.fn = found
        self.name = found.name
        self.known: set[str] = set()

    def refuse(self, node: ast.AST, construct: str, hint: str = "") -> KernelSyntaxError:
        lineno = getattr(node, "lineno", 1) + self.offset
        text = self.lines[lineno - self.offset - 1].strip() if self.lines else None
        col = getattr(node, "col_offset", 0) + 1
        return KernelSyntaxError(
            f"{self.what} {self.name!r}: {construct} is not in the kernel language{hint}",
            (self.filename, lineno, col, text),
        )

    def params(self) -> tuple[str, ...]:
        a = self.fn.args
        extra = a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults
        if extra:
            raise self.refuse(self.fn, "a parameter other than a plain positional one")
        names = tuple(arg.arg for arg in a.args)
        if not names:
            raise self.refuse(self.fn, "a kernel without parameters")
        for n in names:
            self.check_name(self.fn, n)
        self.known = set(names)
        return names

    def check_name(self, node: ast.AST, name: str) -> None:
        if name in FUNCTIONS or name in _ALIASES or name in CONSTANTS or name in REDUCERS:
            raise self.refuse(node, f"the name {name!r} for a variable", " (it names a built-in)")

    def statements(self) -> tuple[tuple[tuple[str, Node], ...], ast.expr]:
        body = list(self.fn.body)
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            body = body[1:]  # the docstring
        lets = []
        for stmt in body[:-1]:
            if not (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
            ):
                raise self.refuse(stmt, _WORDS.get(type(stmt), f"the statement {_src(stmt)!r}"))
            target = stmt.targets[0].id
            self.check_name(stmt, target)
            lets.append((target, self.expr(stmt.value)))
            self.known.add(target)
        if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
            where = body[-1] if body else self.fn
            raise self.refuse(where, "a body not ending in `return <expression>`")
        return tuple(lets), body[-1].value

    def function_name(self, node: ast.expr) -> str:
        if isinstance(node, ast.Name):
            name = node.id
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in _MODULES
        ):
            name = node.attr
        else:
            raise self.refuse(node, f"the call of {_src(node)!r}")
        return _ALIASES.get(name, name)

    def expr(self, node: ast.expr) -> Node:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                raise self.refuse(node, f"the literal {node.value!r}")
            return ("num", float(node.value))
        if isinstance(node, ast.Name):
            if node.id in self.known:
                return ("var", node.id)
            if node.id in CONSTANTS:
                return ("num", CONSTANTS[node.id])
            raise self.refuse(node, f"the unknown name {node.id!r}")
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in _MODULES
            and node.attr in CONSTANTS
        ):
            return ("num", CONSTANTS[node.attr])
        if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            return ("bin", _BIN[type(node.op)], self.number(node.left), self.number(node.right))
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return ("neg", self.number(node.operand))
            if isinstance(node.op, ast.UAdd):
                return self.number(node.operand)
            if isinstance(node.op, ast.Not):
                return ("not", self.condition(node.operand))
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise self.refuse(node, "a chained comparison", " (write `a < b and b < c`)")
            if type(node.ops[0]) not in _CMP:
                raise self.refuse(node, f"the comparison {_src(node)!r}")
            op = _CMP[type(node.ops[0])]
            return ("cmp", op, self.number(node.left), self.number(node.comparators[0]))
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            parts = [self.condition(v) for v in node.values]
            out = parts[0]
            for p in parts[1:]:
                out = (op, out, p)
            return out
        if isinstance(node, ast.IfExp):
            return ("where", self.condition(node.test), self.number(node.body),
                    self.number(node.orelse))  # fmt: skip
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.BinOp):
            raise self.refuse(node, _WORDS.get(type(node.op), f"the operator in {_src(node)!r}"))
        raise self.refuse(node, _WORDS.get(type(node), f"the expression {_src(node)!r}"))

    def call(self, node: ast.Call) -> Node:
        name = self.function_name(node.func)
        if name in REDUCERS:
            raise self.refuse(
                node, f"{name}(...) here", " (a reduction is written with @gk.reduction, once)"
            )
        if name not in FUNCTIONS:
            raise self.refuse(node, f"the call of {name!r}", f" (known: {', '.join(FUNCTIONS)})")
        if node.keywords or len(node.args) != FUNCTIONS[name]:
            raise self.refuse(
                node, f"the call {_src(node)!r}", f" ({name} takes {FUNCTIONS[name]} arguments)"
            )
        if name == "where":
            c, a, b = node.args
            return ("where", self.condition(c), self.number(a), self.number(b))
        return ("call", name, tuple(self.number(a) for a in node.args))

    def number(self, node: ast.expr) -> Node:
        out = self.expr(node)
        if _is_condition(out):
            raise self.refuse(node, f"a truth value used as a number in {_src(node)!r}",
                              " (write where(cond, 1.0, 0.0))")  # fmt: skip
        return out

    def condition(self, node: ast.expr) -> Node:
        out = self.expr(node)
        if not _is_condition(out):
            raise self.refuse(node, f"a number used as a truth value in {_src(node)!r}",
                              " (compare it: x != 0)")  # fmt: skip
        return out


def _is_condition(node: Node) -> bool:
    return node[0] in ("cmp", "and", "or", "not")


def _src(node: ast.AST) -> str:
    return ast.unparse(node)


def parse_elementwise(fn: Callable[..., Any], what: str = "gk.elementwise") -> Body:
    """The :class:`Body` of ``fn``; :class:`~gpukit.errors.KernelSyntaxError` otherwise."""
    p = _Parser(fn, what)
    params = p.params()
    lets, result = p.statements()
    return Body(p.name, params, lets, p.number(result))


def parse_reduction(fn: Callable[..., Any], what: str = "gk.reduction") -> ReductionBody:
    """The :class:`ReductionBody` of ``fn``: its return is ``final(reducer(map))``."""
    p = _Parser(fn, what)
    params = p.params()
    lets, result = p.statements()
    calls = [
        n
        for n in ast.walk(result)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name | ast.Attribute)
        and _callee(n.func) in REDUCERS
    ]
    if len(calls) != 1:
        raise p.refuse(
            result,
            f"a return with {len(calls)} reductions",
            f" (it must apply one of {', '.join(REDUCERS)} once: return sqrt(sum(w * x * x)))",
        )
    (call,) = calls
    if call.keywords or len(call.args) != 1:
        raise p.refuse(call, f"the call {_src(call)!r}", " (a reduction takes one argument)")
    mapped = p.number(call.args[0])
    # the final expression sees the reduced value and constants, never an element
    p.known = set()
    marker = "__gk_reduced__"
    final_tree = _Replace(call, marker).visit(ast.parse(_src(result), mode="eval")).body
    p.known = {marker}
    try:
        final = p.number(final_tree)
    except KernelSyntaxError:
        raise p.refuse(
            result,
            f"the return {_src(result)!r}",
            " (outside the reduction only the reduced value and constants may appear)",
        ) from None
    final = replace(final, ("var", marker), ("reduced",))
    return ReductionBody(Body(p.name, params, lets, mapped), _callee(call.func), final)


def _callee(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr  # type: ignore[attr-defined]


class _Replace(ast.NodeTransformer):
    """Replace the reduction call (matched by its source) with a name."""

    def __init__(self, call: ast.Call, name: str) -> None:
        self.source = _src(call)
        self.name = name

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if _src(node) == self.source:
            return ast.Name(self.name, ast.Load())
        return self.generic_visit(node)


def replace(node: Node, old: Node, new: Node) -> Node:
    """``node`` with every occurrence of the subtree ``old`` replaced by ``new``."""
    if node == old:
        return new
    return tuple(
        replace(x, old, new)
        if isinstance(x, tuple) and x and isinstance(x[0], str)
        else tuple(replace(y, old, new) for y in x)
        if isinstance(x, tuple)
        else x
        for x in node
    )
