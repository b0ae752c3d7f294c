"""Conformance runs of peers' own test suites (see upstream.py): expected deviations
become strict xfails, tests of functions gpukit lacks are skipped with their reason, and
so are replaced tests, whose replacement the module must hold.

Patterns match a test's id within its file (``test_maxiter[poisson1d-gmres]``,
``TestGMRES::test_callback``) with ``*`` as the only wildcard.

SciPy's test files use fixtures and marks of SciPy's own conftest, which is not loaded
here: the ``xp`` fixture is defined below for the one array library these runs use
(NumPy, gpukit's numpy backend), honouring the ``skip_xp_backends`` and
``xfail_xp_backends`` marks (those SciPy declares for the functions under test included)
as SciPy's does for NumPy.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest
from scipy._lib._array_api import array_namespace


def pytest_configure(config: pytest.Config) -> None:
    # markers the upstream suites use (--strict-markers refuses unknown ones)
    config.addinivalue_line("markers", "fail_slow(seconds): SciPy's timing marker (unused)")
    for action in ("skip", "xfail"):
        config.addinivalue_line(
            "markers",
            f"{action}_xp_backends(backend, condition=True, *, reason=None, np_only=False, "
            f"cpu_only=False, eager_only=False, exceptions=()): SciPy's per-backend "
            f"{action}; only a backend argument of 'numpy' applies here",
        )
    config.addinivalue_line(
        "markers", "uses_xp_capabilities(status, funcs=None): SciPy's bookkeeping (unused)"
    )


@pytest.fixture(params=[pytest.param(np, id="numpy")])
def xp(request: pytest.FixtureRequest):
    """SciPy's ``xp`` fixture (scipy/conftest.py) with NumPy, its one backend here: SciPy's
    namespace for NumPy arrays (array_api_compat's wrapper of NumPy)."""
    for action in ("skip", "xfail"):
        reason = numpy_excluded(request.node, action)
        if reason is not None:
            getattr(pytest, action)(reason=reason)
    return array_namespace(request.param.empty(0))


def numpy_excluded(node: pytest.Item, action: str) -> str | None:
    """The reason of the first ``<action>_xp_backends`` mark on ``node`` naming NumPy.

    ``np_only``, ``cpu_only`` and ``eager_only`` marks never exclude NumPy (eager, on the
    CPU); ``("numpy",)`` does, and ``("numpy", condition)`` when the condition holds.
    """
    for mark in node.iter_markers(f"{action}_xp_backends"):
        if mark.args[:1] == ("numpy",) and (len(mark.args) < 2 or mark.args[1]):
            return mark.kwargs.get("reason") or "upstream excludes the numpy backend"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        name = item.nodeid.split("::", 1)[-1]  # "TestGMRES::test_basic", "test_atol[cg]"
        if _match(name, getattr(module, "UPSTREAM_PEER_XFAILS_PASSED", {})) is not None:
            # the peer marks it xfail for its own implementation; gpukit's must pass it
            item.own_markers[:] = [m for m in item.own_markers if m.name != "xfail"]
        for table, mark in (
            ("UPSTREAM_NOT_APPLICABLE", lambda why: pytest.mark.skip(reason=why)),
            ("UPSTREAM_DEVIATIONS", lambda why: pytest.mark.xfail(reason=why, strict=True)),
            ("UPSTREAM_REPLACED", lambda why: pytest.mark.skip(reason=why)),
        ):
            reason = _match(name, getattr(module, table, {}))
            if reason is not None:
                if table == "UPSTREAM_REPLACED":
                    reason = _replaced(item, module, name, reason)
                item.add_marker(mark(reason))
                break


def _replaced(item: pytest.Item, module: object, name: str, reason: str) -> str:
    """The skip reason of a replaced test, naming its replacement, which must exist."""
    replacement = name.rsplit("::", 1)[-1].split("[", 1)[0] + "_within_rounding"
    if not callable(getattr(module, replacement, None)):
        raise pytest.UsageError(
            f"{item.nodeid} is listed in UPSTREAM_REPLACED, but its module defines no {replacement}"
        )
    return f"{reason}; run as {replacement}"


def _match(name: str, table: dict[str, str]) -> str | None:
    """The reason of the first pattern matching ``name``; ``*`` is the only wildcard
    (test ids hold brackets, which fnmatch would read as character classes)."""
    return next((why for glob, why in table.items() if _compile(glob).fullmatch(name)), None)


@functools.cache
def _compile(glob: str) -> re.Pattern[str]:
    return re.compile(".*".join(map(re.escape, glob.split("*"))))
