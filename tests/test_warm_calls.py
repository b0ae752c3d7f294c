"""Every row of the per-call comparison (``asv_bench/calls.py``, issue 33) decides nothing
on a warm call: after two calls with the same arguments, a third reads no plan table's
generation, which every planning path reads before it decides
(:mod:`gpukit._runtime.plans`). The one exception is the design's: host data reaching a
device backend is checked and moved on every call (``calls.TRANSFER``)."""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk
from asv_bench import calls
from gpukit._runtime import plans


def _planning_rows(xp, monkeypatch) -> list[str]:
    """The labels of the rows whose warm call read the plans' generation."""
    plans.forget()  # no table near its limit, which would start over during the warm-up
    rows = calls.rows(xp)
    for _, ours, _ in rows:
        ours()
        ours()
    read = []
    generation = plans.generation
    monkeypatch.setattr(plans, "generation", lambda: read.append(1) or generation())
    planning = []
    for label, ours, _ in rows:
        read.clear()
        ours()
        if read:
            planning.append(label)
    return planning


def test_no_host_row_plans_when_warm(monkeypatch):
    with gk.use_backend("numpy"):
        assert _planning_rows(np, monkeypatch) == []


@pytest.mark.gpu
def test_no_device_row_plans_when_warm(cupy_backend, monkeypatch):
    assert _planning_rows(cupy_backend.xp, monkeypatch) == [calls.TRANSFER]
