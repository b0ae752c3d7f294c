"""Conformance runs of peers' own test suites (see upstream.py): expected deviations
become strict xfails, tests of functions gpukit lacks are skipped with their reason, and
so are replaced tests, whose replacement the module must hold.

Patterns match a test's id within its file (``test_maxiter[poisson1d-gmres]``,
``TestGMRES::test_callback``) with ``*`` as the only wildcard.
"""

from __future__ import annotations

import functools
import re

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # markers the upstream suites use (--strict-markers refuses unknown ones)
    config.addinivalue_line("markers", "fail_slow(seconds): SciPy's timing marker (unused)")


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
