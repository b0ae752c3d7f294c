"""Run Python snippets in a fresh interpreter, with gpukit importable from this checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def checkout_path() -> list[str]:
    """The folders that make this checkout importable without installing it: gpukit and
    the built-in backends (the GPU lane runs from a bare checkout)."""
    return [str(ROOT), str(ROOT / "backends")]


def run_python(code: str, env: dict[str, str] | None = None, extra_path: list[str] = ()):
    """Run ``code`` with ``python -c`` from the repository root; return the CompletedProcess."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("GPUKIT_")}
    sim = [os.environ["CUPYSIM_PATH"]] if os.environ.get("CUPYSIM_PATH") else []  # --cupy=sim
    full_env["PYTHONPATH"] = os.pathsep.join([*sim, *extra_path, *checkout_path()])
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
