"""GPUKIT_TEST_BACKENDS adds a plug-in to the `backend` fixture (docs/plugins.rst)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gpukit as gk

ROOT = Path(__file__).resolve().parent.parent


def test_backend_fixture_activates_its_backend(backend):
    assert gk.get_backend() is backend
    assert gk.selection_reason() == f"use_backend({backend.name!r})"


def test_gpukit_test_backends_runs_the_suite_on_a_plugin():
    node = f"{Path(__file__).name}::test_backend_fixture_activates_its_backend"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", f"tests/{node}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "GPUKIT_TEST_BACKENDS": "fakedevice, nosuch"},
        timeout=120,
    )
    out = proc.stdout
    assert "test_backend_fixture_activates_its_backend[fakedevice] PASSED" in out, out
    assert "test_backend_fixture_activates_its_backend[numpy] PASSED" in out, out
    # a name that is not registered fails loudly instead of silently testing nothing
    assert "test_backend_fixture_activates_its_backend[nosuch] ERROR" in out, out
    assert "GPUKIT_TEST_BACKENDS names 'nosuch', which is not registered" in out, out
