"""Repository-wide pytest setup: docstring examples run on the numpy backend.

``--doctest-modules`` (pyproject.toml) collects the examples of ``gpukit/`` and
``backends/``. They promise NumPy output, so each runs inside
``use_backend("numpy")`` whatever ``GPUKIT_BACKEND`` says, and any process-wide
default an example sets (``gk.set_backend``) is put back afterwards.
"""

from __future__ import annotations

import importlib.util

import pytest

import gpukit as gk
from gpukit._select import selection as _selection

# Without CuPy there is nothing to doctest in the CuPy backend, and its modules may
# need CuPy at import.
collect_ignore = [] if importlib.util.find_spec("cupy") else ["backends/gpukit_cupy"]


@pytest.fixture(autouse=True)
def _doctests_on_numpy(request: pytest.FixtureRequest):
    if type(request.node).__name__ != "DoctestItem":
        yield
        return
    saved = _selection._default, _selection._default_reason
    try:
        with gk.use_backend("numpy"):
            yield
    finally:
        _selection._default, _selection._default_reason = saved


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Skipped tests, one line per reason (``-ra`` printed one per test location: ~100
    near-identical "cupy unavailable" lines on a machine without a GPU)."""
    reports = terminalreporter.stats.get("skipped", [])
    counts: dict[str, int] = {}
    for report in reports:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        counts[reason] = counts.get(reason, 0) + 1
    if not counts:
        return
    terminalreporter.write_sep("=", "skipped tests, by reason")
    for reason, n in sorted(counts.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f"SKIPPED [{n}] {reason}")
