"""Fixtures of the simulator's own tests: they run only under ``--cupy=sim``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SIM = Path(__file__).resolve().parent.parent
ROOT = SIM.parent.parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--cupy") == "sim":
        return
    skip = pytest.mark.skip(reason="the CuPy simulator's own tests run with --cupy=sim")
    for item in items:
        if SIM in Path(str(item.fspath)).parents:
            item.add_marker(skip)


@pytest.fixture
def cp():
    """The simulated cupy module (its devices are reset to device 0 afterwards)."""
    import cupy

    assert cupy.__file__.startswith(str(SIM)), "not the simulator"
    yield cupy
    cupy.cuda.runtime.setDevice(0)


def run_sim(code: str, **env: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter on the simulator configured by ``env``."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CUPYSIM_", "CUPY_"))}
    full["PYTHONPATH"] = os.pathsep.join([str(SIM), str(ROOT), str(ROOT / "backends")])
    full.update(env)
    return subprocess.run(
        [sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=120
    )
