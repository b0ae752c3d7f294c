"""The README's main job runs and passes its own checks on the default backend."""

from __future__ import annotations

import subprocess
import sys

import pytest
from subproc import ROOT

pytest.importorskip("sklearn")


def test_showcase_passes_its_checks():
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": "/tmp"}
    proc = subprocess.run(
        [sys.executable, "examples/showcase.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    for part in ("Spectral Poisson", "Conjugate gradients", "Dense solve", "digits", "Transfers"):
        assert part in out
    assert out.rstrip().endswith("all checks passed")
