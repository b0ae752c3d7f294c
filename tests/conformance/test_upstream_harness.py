"""The conformance harness (upstream.py, conftest.py) on a synthetic peer test file."""

from __future__ import annotations

import sys

import pytest
import scipy._lib._array_api as scipy_xp

from . import upstream
from .conftest import numpy_excluded

# A peer's test file building its parameters as SciPy >= 1.18's test_iterative.py does:
# through SciPy's capabilities table, keyed by the function object it imports.
UPSTREAM_TEST = """
from peer_pkg.funcs import solve
from scipy._lib._array_api import make_xp_pytest_marks, make_xp_pytest_param

PARAMS = [make_xp_pytest_param(solve)]
MARKS = make_xp_pytest_marks(solve)
best = min(3.0, 2.0)
"""


@pytest.fixture
def peer(tmp_path, monkeypatch):
    """``peer_pkg.funcs``, whose ``solve`` SciPy's decorator declares unusable with NumPy
    (in a fresh capabilities table); ``peer_pkg/tests/test_peer.py`` is ``UPSTREAM_TEST``."""
    (tmp_path / "peer_pkg" / "tests").mkdir(parents=True)
    (tmp_path / "peer_pkg" / "__init__.py").write_text("")
    (tmp_path / "peer_pkg" / "funcs.py").write_text("def solve(a):\n    return 'peer'\n")
    (tmp_path / "peer_pkg" / "tests" / "test_peer.py").write_text(UPSTREAM_TEST)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(scipy_xp, "xp_capabilities_table", {})
    import peer_pkg.funcs

    scipy_xp.xp_capabilities(skip_backends=[("numpy", "peer's own reason")])(peer_pkg.funcs.solve)
    yield peer_pkg.funcs
    for name in ("peer_pkg.funcs", "peer_pkg"):
        del sys.modules[name]


def _backend_marks(marks):
    return [(m.name, m.args, m.kwargs) for m in marks if m.name.endswith("_xp_backends")]


def test_a_substitute_carries_the_capability_marks_of_what_it_replaces(peer):
    def solve(a):
        return "gpukit"

    namespace = {"solve": solve}
    upstream.load(
        namespace,
        "peer_pkg",
        "tests/test_peer.py",
        lambda tree: upstream.drop_imports(tree, "peer_pkg.funcs", ["solve"]),
    )
    (param,) = namespace["PARAMS"]
    assert param.values == (solve,)
    expected = _backend_marks(scipy_xp.make_xp_pytest_marks(peer.solve))
    assert expected == [("skip_xp_backends", ("numpy",), {"reason": "peer's own reason"})]
    assert _backend_marks(param.marks) == expected
    assert _backend_marks(namespace["MARKS"]) == expected


def test_a_peer_function_without_capabilities_gets_none_invented(peer):
    del scipy_xp.xp_capabilities_table[peer.solve]
    with pytest.raises(KeyError):
        upstream.load(
            {"solve": lambda a: "gpukit"},
            "peer_pkg",
            "tests/test_peer.py",
            lambda tree: upstream.drop_imports(tree, "peer_pkg.funcs", ["solve"]),
        )


def test_replace_expression_repairs_only_the_written_expression(peer):
    namespace = {}
    upstream.load(
        namespace,
        "peer_pkg",
        "tests/test_peer.py",
        lambda tree: upstream.replace_expression(tree, "min(3.0, 2.0)", "max(3.0, 2.0)"),
    )
    assert namespace["best"] == 3.0
    assert namespace["solve"] is peer.solve  # the import left as it was


class _Node:
    def __init__(self, *marks):
        self.marks = [m.mark for m in marks]

    def iter_markers(self, name):
        return (m for m in self.marks if m.name == name)


@pytest.mark.parametrize(
    ("mark", "reason"),
    [
        (pytest.mark.skip_xp_backends("numpy", reason="r"), "r"),
        (pytest.mark.skip_xp_backends("numpy", True, reason="r"), "r"),
        (pytest.mark.skip_xp_backends("numpy"), "upstream excludes the numpy backend"),
        (pytest.mark.skip_xp_backends("numpy", False, reason="r"), None),
        (pytest.mark.skip_xp_backends("torch", reason="r"), None),
        (pytest.mark.skip_xp_backends(np_only=True, reason="r"), None),
        (pytest.mark.skip_xp_backends(cpu_only=True, reason="r"), None),
        (pytest.mark.xfail_xp_backends("numpy", reason="r"), None),  # not a skip
    ],
)
def test_xp_fixture_excludes_numpy_only_where_a_mark_names_it(mark, reason):
    assert numpy_excluded(_Node(mark), "skip") == reason
