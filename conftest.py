"""Repository-wide pytest setup: docstring examples run on the numpy backend; ``--cupy``.

``--doctest-modules`` (pyproject.toml) collects the examples of ``gpukit/`` and
``backends/``. They promise NumPy output, so each runs inside
``use_backend("numpy")`` whatever ``GPUKIT_BACKEND`` says, and any process-wide
default an example sets (``gk.set_backend``) is put back afterwards.

``--cupy=sim`` runs the suite on the CuPy simulator (``tests/cupysim``,
docs/contributing_gpu.rst): its directory goes first on ``sys.path`` and on
``PYTHONPATH`` (for subprocess tests) before anything imports CuPy, so the ``gpu`` and
``multi_gpu`` tests run on simulated devices. The default ``--cupy=real`` changes nothing.

``--random-seed`` seeds the ``rng`` fixture (tests/conftest.py) at random rather than from
each test's id.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

import gpukit as gk
from gpukit._select import selection as _selection

SIM_PATH = str(Path(__file__).resolve().parent / "tests" / "cupysim")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cupy",
        choices=("real", "sim"),
        default="real",
        help="CuPy to test against: the installed one (real, default) or the simulator "
        "in tests/cupysim (sim)",
    )
    parser.addoption(
        "--random-seed",
        action="store_true",
        help="seed each test's rng fixture at random instead of from the test's id (as "
        "GPUKIT_TEST_SEED=random); a failure prints its seed",
    )


def _use_simulator(config: pytest.Config) -> None:
    if config.getoption("--cupy") != "sim":
        return
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("cupy", "cupyx"))
    if loaded and not sys.modules["cupy" if "cupy" in loaded else loaded[0]].__file__.startswith(
        SIM_PATH
    ):
        raise pytest.UsageError(
            f"--cupy=sim: the real CuPy is already imported ({', '.join(loaded[:3])}); "
            "something imported it before pytest_configure"
        )
    if sys.path[:1] != [SIM_PATH]:
        sys.path.insert(0, SIM_PATH)
    paths = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (SIM_PATH, paths) if p)
    os.environ["CUPYSIM_PATH"] = SIM_PATH  # tests/subproc.py keeps it on PYTHONPATH


@pytest.hookimpl(tryfirst=True)  # before tests/conftest.py probes the backends (imports CuPy)
def pytest_configure(config: pytest.Config) -> None:
    _use_simulator(config)


# Without CuPy there is nothing to doctest in the CuPy backend, and its modules may
# need CuPy at import.
collect_ignore = [] if importlib.util.find_spec("cupy") else ["backends/gpukit_cupy"]
# Dask's examples need the dask extra, which the light test install lacks.
if not (importlib.util.find_spec("dask") and importlib.util.find_spec("distributed")):
    collect_ignore += ["gpukit/distributed"]
# The simulator's packages are not test modules (its tests are tests/cupysim/tests).
collect_ignore += ["tests/cupysim/cupy", "tests/cupysim/cupyx", "tests/cupysim/cupysim"]


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
