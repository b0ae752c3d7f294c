"""The light install (``pip install -e ".[test]"``) runs the core suite: nothing outside the
``test`` extra is imported where the suite is collected (CONTRIBUTING.md, "Installs")."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Importable here through the other extras, absent from a light install.
OPTIONAL = ["torch", "sklearn", "cupy", "cupyx", "dask", "distributed", "sphinx",
            "numpydoc", "matplotlib", "asv", "tqdm", "threadpoolctl"]  # fmt: skip


@pytest.mark.slow
def test_the_suite_collects_without_the_optional_packages(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(
        textwrap.dedent(f"""
        import sys

        # None in sys.modules: imports fail and importlib.util.find_spec answers None, as
        # for a package that is not installed
        sys.modules.update(dict.fromkeys({OPTIONAL!r}))
        """)
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    tail = proc.stdout[-3000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    assert "error" not in proc.stdout.splitlines()[-1], tail
