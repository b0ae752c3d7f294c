"""Run NumPy's and SciPy's own FFT tests against ``gk.fft``.

The test files are read from the installed wheels at test time (never copied here),
their syntax tree rewritten so that every ``numpy.fft`` / ``scipy.fft`` function they
call is gpukit's, and executed as a module whose tests the calling test file exposes
to pytest. Each upstream test expected to fail is listed, with its reason, in the
calling file's ``DEVIATIONS``; it is marked ``xfail(strict=True)``, so a deviation
that disappears fails the run until its entry (and its line in
``docs/differences.rst``) is removed.

Rewrites:

* ``np.fft.<name>``, ``numpy.fft.<name>`` and ``scipy.fft.<name>`` become
  ``gk.fft.<name>``;
* ``from numpy import fft`` and ``import scipy.fft as fft`` bind ``fft`` to ``gk.fft``;
* SciPy's array-API test helpers (``make_xp_test_case``, ``make_xp_pytest_param``,
  ``skip_xp_backends``) become their NumPy-only meaning: the suites run on NumPy
  arrays (gpukit's numpy backend), so marks for other array libraries do not apply.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gpukit as gk

__all__ = [
    "DOCS",
    "check_deviations",
    "deviation_fixture",
    "load",
    "numpy_backend_fixture",
    "xp_fixture",
]

#: The docs page every deviation's reason is written on.
DOCS = Path(__file__).resolve().parents[2] / "docs" / "differences.rst"
_GK = "_gpukit_fft"  # the name gk.fft is bound to inside a rewritten module
_SCIPY_HELPERS = {"make_xp_test_case", "make_xp_pytest_param", "skip_xp_backends"}


def _identity_decorator(*args: Any, **kwargs: Any) -> Callable[[Any], Any]:
    return lambda item: item


def _skip_xp_backends(*backends: str, reason: str | None = None, **kwargs: Any):
    """SciPy's mark on NumPy: skip only tests it names ``"numpy"`` for."""
    if "numpy" in backends:
        return pytest.mark.skip(reason=reason or "skipped for numpy upstream")
    return _identity_decorator()


def _shims() -> dict[str, Any]:
    return {
        _GK: gk.fft,
        "make_xp_test_case": _identity_decorator,
        "make_xp_pytest_param": lambda func, *args, **kwargs: pytest.param(func, *args),
        "skip_xp_backends": _skip_xp_backends,
    }


def _is_fft_module(node: ast.AST) -> bool:
    """``np.fft``, ``numpy.fft`` or ``scipy.fft``."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "fft"
        and isinstance(node.value, ast.Name)
        and node.value.id in ("np", "numpy", "scipy")
    )


class _ToGpukit(ast.NodeTransformer):
    """Point the module's FFT calls at ``gk.fft`` (see the module docstring)."""

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if _is_fft_module(node.value):
            target = ast.Attribute(ast.Name(_GK, ast.Load()), node.attr, node.ctx)
            return ast.copy_location(target, node)
        return node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST | list[ast.AST] | None:
        drop = {"fft"} if node.module == "numpy" else set()
        if node.module == "scipy._lib._array_api":
            drop = _SCIPY_HELPERS
        kept = [a for a in node.names if a.name not in drop]
        bound = [a.asname or a.name for a in node.names if a.name in drop and a.name == "fft"]
        out: list[ast.AST] = [ast.ImportFrom(node.module, kept, node.level)] if kept else []
        out += [_bind(name, node) for name in bound]
        return out or None

    def visit_Import(self, node: ast.Import) -> ast.AST | list[ast.AST]:
        aliased = [a for a in node.names if a.name in ("scipy.fft", "numpy.fft") and a.asname]
        kept = [a for a in node.names if a not in aliased]
        out: list[ast.AST] = [ast.Import(kept)] if kept else []
        return out + [_bind(a.asname, node) for a in aliased]

    def visit_Assign(self, node: ast.Assign) -> ast.AST | None:
        # ``skip_xp_backends = pytest.mark.skip_xp_backends``: keep the shim instead
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        return None if names and set(names) <= _SCIPY_HELPERS else self.generic_visit(node)


def _bind(name: str, where: ast.AST) -> ast.Assign:
    return ast.copy_location(
        ast.Assign([ast.Name(name, ast.Store())], ast.Name(_GK, ast.Load())), where
    )


def load(module: str) -> dict[str, Any]:
    """The tests of the installed upstream test module ``module``, calling ``gk.fft``.

    Skips (visibly) when the installed wheel ships no tests.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        pytest.skip(
            f"{module} is not installed (its wheel ships no tests)", allow_module_level=True
        )
    path = Path(spec.origin)
    tree = _ToGpukit().visit(ast.parse(path.read_text(), str(path)))
    ast.fix_missing_locations(tree)
    left = sorted({ast.unparse(n) for n in ast.walk(tree) if _is_fft_module(n)})
    if left:  # e.g. ``np.fft`` passed around as a module: extend _ToGpukit
        raise RuntimeError(f"{module}: not rewritten to gk.fft: {', '.join(left)}")
    name = f"gpukit_conformance.{module}"
    mod = types.ModuleType(name)
    mod.__file__ = str(path)
    mod.__dict__.update(_shims())
    sys.modules[name] = mod  # pickling by reference (multiprocessing tests) finds it
    exec(compile(tree, str(path), "exec"), mod.__dict__)
    return {k: v for k, v in mod.__dict__.items() if k.startswith(("Test", "test_"))}


def _test_id(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[1]


def deviation_fixture(deviations: Mapping[str, str]):
    """An autouse fixture marking the tests listed in ``deviations`` xfail(strict)."""

    @pytest.fixture(autouse=True)
    def _expected_deviation(request: pytest.FixtureRequest) -> None:
        reason = deviations.get(_test_id(request.node))
        if reason is not None:
            request.applymarker(pytest.mark.xfail(reason=reason, strict=True))

    return _expected_deviation


def numpy_backend_fixture():
    """A module-scoped fixture making numpy the process-wide backend (upstream tests
    start threads, which do not inherit ``use_backend``); the previous one is restored."""

    @pytest.fixture(autouse=True, scope="module")
    def _numpy_backend():
        previous = gk.get_backend().name
        gk.set_backend("numpy")
        yield
        gk.set_backend(previous)

    return _numpy_backend


def xp_fixture():
    """SciPy's ``xp`` fixture, NumPy only: gpukit's numpy backend takes NumPy arrays."""

    @pytest.fixture
    def xp():
        return np

    return xp


def check_deviations(
    deviations: Mapping[str, str], tests: Mapping[str, Any], request: pytest.FixtureRequest
) -> None:
    """Every deviation names an upstream test and has its reason on the docs page.

    ``tests`` is the calling module's namespace. A parametrized id is checked exactly
    when its test was collected in this session (a ``-k`` run may leave it out).
    """
    here = request.node.nodeid.split("::")[0]
    collected = {_test_id(i) for i in request.session.items if i.nodeid.startswith(here)}
    unknown = []
    for test_id in deviations:
        base = test_id.split("[")[0]
        owner, _, name = base.rpartition("::")
        exists = hasattr(tests.get(owner), name) if owner else name in tests
        ran = any(c.split("[")[0] == base for c in collected)
        if not exists or (ran and test_id not in collected):
            unknown.append(test_id)
    assert not unknown, f"DEVIATIONS names tests that do not exist upstream: {sorted(unknown)}"
    docs = " ".join(DOCS.read_text().split())
    missing = sorted({r for r in deviations.values() if " ".join(r.split()) not in docs})
    assert not missing, f"reasons not on {DOCS.name}: {missing}"
