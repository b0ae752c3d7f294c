"""Tests of the suite's machinery to run, not to pass: tests/test_conftest.py runs this file
in a subprocess (it is no ``test_*.py`` file, so a normal run does not collect it)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("i", range(3))
def test_skipped_alike(i):
    pytest.skip("probe: one reason")


def test_skipped_otherwise():
    pytest.skip("probe: another reason")


def test_fails_printing_its_first_draw(rng):
    print(f"first draw {rng.random()!r}")
    raise AssertionError("probe failure")
