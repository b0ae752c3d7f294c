"""Run a peer library's own test file against gpukit, without copying it here.

:func:`load` reads the file from the installed wheel (NumPy and SciPy ship their tests),
lets the caller rewrite its syntax tree (imports of the functions under test replaced by
gpukit adapters), and executes it into the calling test module, whose globals pytest then
collects as usual. Tracebacks point at the upstream file and line.

A conformance module may define, next to the adapters:

``UPSTREAM_DEVIATIONS``
    ``{test-id glob: reason}``: tests expected to fail because gpukit differs from the
    peer on purpose. Each becomes a strict xfail (a fixed one fails the run); each reason
    is also written on docs/differences.rst.
``UPSTREAM_NOT_APPLICABLE``
    ``{test-id glob: reason}``: tests of functions gpukit does not provide (skipped,
    visibly).
``UPSTREAM_PEER_XFAILS_PASSED``
    ``{test-id glob: reason}``: tests the peer marks xfail for a defect of its own that
    gpukit does not have; the peer's xfail is removed, so they must pass.
``UPSTREAM_REPLACED``
    ``{test-id glob: reason}``: tests asserting what floating point does not guarantee
    (an exact zero from an iterative solve), which pass or fail with the rounding of the
    machine's BLAS kernels. Each is skipped, naming its replacement: the module's
    ``<test name>_within_rounding``, the same check with a rounding-level tolerance
    (collection fails if it is missing); each reason is also written on
    docs/differences.rst.

tests/conformance/conftest.py applies them.

A name whose upstream import the rewrite drops, and which the namespace defines, is
gpukit's substitute for the peer's object of that name. Where the peer declares test
capabilities for its object (SciPy's ``xp_capabilities`` table, which
``make_xp_pytest_param`` and ``make_xp_pytest_marks`` read when the file is executed), the
substitute is given the same entry, so its tests carry the marks SciPy's would.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest


def locate(package: str, relpath: str) -> Path:
    """``relpath`` inside the installed ``package``; skips the module if it is not shipped."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        pytest.skip(f"{package} is not installed", allow_module_level=True)
    path = Path(spec.origin).parent / relpath
    if not path.is_file():
        pytest.skip(
            f"the installed {package} does not ship {relpath} (a wheel without its tests)",
            allow_module_level=True,
        )
    return path


def load(
    namespace: dict[str, Any],
    package: str,
    relpath: str,
    rewrite: Callable[[ast.Module], ast.Module],
) -> Path:
    """Execute the rewritten upstream test file into ``namespace`` (a module's globals)."""
    path = locate(package, relpath)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    imported = _from_imports(tree)
    tree = rewrite(tree)  # may edit the tree in place
    dropped = imported - _from_imports(tree)
    _share_capabilities(
        [
            (getattr(importlib.import_module(module), name), namespace[bound])
            for module, name, bound in dropped
            if bound in namespace
        ]
    )
    ast.fix_missing_locations(tree)
    exec(compile(tree, str(path), "exec"), namespace)
    return path


def _from_imports(tree: ast.Module) -> set[tuple[str, str, str]]:
    """``(module, name, bound name)`` of every absolute ``from module import name``."""
    return {
        (node.module, alias.name, alias.asname or alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and not node.level
        for alias in node.names
    }


def _share_capabilities(substitutes: list[tuple[Any, Any]]) -> None:
    """Give each substitute the test capabilities SciPy declares for the object it replaces.

    SciPy's table is keyed by the function object, so a substitute has no entry of its own:
    ``make_xp_pytest_param(substitute)`` would raise ``KeyError`` (SciPy >= 1.18 builds its
    solver fixtures this way). Absent before SciPy's array-API test helpers (nothing to do).
    """
    table = getattr(sys.modules.get("scipy._lib._array_api"), "xp_capabilities_table", None)
    if table is None:
        return
    for original, substitute in substitutes:
        if callable(original) and original in table:
            table[substitute] = table[original]


def drop_imports(tree: ast.Module, module: str, names: Iterable[str]) -> ast.Module:
    """Remove ``names`` from ``from module import ...`` statements (the caller defines them)."""
    names = set(names)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == module:
            node.names = [a for a in node.names if (a.asname or a.name) not in names]
    tree.body = [n for n in tree.body if not (isinstance(n, ast.ImportFrom) and not n.names)]
    return tree


def replace_expression(tree: ast.Module, old: str, new: str) -> ast.Module:
    """Replace each expression written ``old`` (as :func:`ast.unparse` writes it) by ``new``.

    For a defect of the upstream test itself, which no implementation could pass; the
    caller says which. Files without ``old`` (other releases of the peer) are left as they
    are.
    """

    class Replace(ast.NodeTransformer):
        def generic_visit(self, node: ast.AST) -> ast.AST:
            if isinstance(node, ast.expr) and ast.unparse(node) == old:
                return ast.copy_location(ast.parse(new, mode="eval").body, node)
            return super().generic_visit(node)

    return Replace().visit(tree)


def keep_in_list(tree: ast.Module, target: str, names: Iterable[str]) -> ast.Module:
    """In the module-level ``target = [a, b, ...]``, keep only the elements named ``names``."""
    names = set(names)
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == target for t in node.targets)
            and isinstance(node.value, ast.List)
        ):
            node.value.elts = [
                e for e in node.value.elts if isinstance(e, ast.Name) and e.id in names
            ]
            return tree
    raise LookupError(f"no module-level list {target!r} in the upstream file")
