"""Running code on a freshly configured simulator (each CUPYSIM_* setting is read once)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SIM = Path(__file__).resolve().parent.parent
ROOT = SIM.parent.parent


def run_sim(code: str, **env: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter on the simulator configured by ``env``."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CUPYSIM_", "CUPY_"))}
    full["PYTHONPATH"] = os.pathsep.join([str(SIM), str(ROOT), str(ROOT / "backends")])
    full.update(env)
    return subprocess.run(
        [sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=120
    )
