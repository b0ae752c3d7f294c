"""The README's main job and its code example run and pass their own checks."""

from __future__ import annotations

import subprocess
import sys

from subproc import ROOT

from helpers import oracle

oracle("sklearn")


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


def test_readme_example_runs_as_printed():
    import re

    readme = (ROOT / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "GPUKIT_BACKEND": "numpy"}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first == "numpy float32 complex64"  # the comment printed in the README
