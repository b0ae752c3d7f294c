"""The simulator's own tests: they run only when ``cupy`` is the simulated one
(``python -m pytest --cupy=sim``, or ``PYTHONPATH=tests/cupysim``)."""

from __future__ import annotations

from pathlib import Path

import pytest

SIM_ROOT = Path(__file__).resolve().parents[1]


def _simulated() -> bool:
    try:
        import cupy
    except ImportError:
        return False
    return SIM_ROOT in Path(cupy.__file__).resolve().parents


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _simulated():
        return
    skip = pytest.mark.skip(reason="the CuPy simulator's own tests run under --cupy=sim")
    for item in items:
        if SIM_ROOT in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)
