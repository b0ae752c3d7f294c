"""Fixtures of the simulator's own tests: they run only under ``--cupy=sim``."""

from __future__ import annotations

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
    """The simulated cupy module; afterwards every device is synchronised, device 0 current."""
    import cupy

    assert cupy.__file__.startswith(str(SIM)), "not the simulator"
    yield cupy
    for d in range(cupy.cuda.runtime.getDeviceCount()):
        cupy.cuda.Device(d).synchronize()  # a test's unfinished stream work ends with it
    cupy.cuda.runtime.setDevice(0)
