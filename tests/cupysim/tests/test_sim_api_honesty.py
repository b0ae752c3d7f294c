"""API honesty: every public name the simulator exposes exists in the installed CuPy 14.2,
with compatible parameters where both signatures can be read (issue 14 item 3)."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
import types
from pathlib import Path

MODULES = [
    "cupy", "cupy.cuda", "cupy.cuda.runtime", "cupy.cuda.driver", "cupy.cuda.device",
    "cupy.cuda.stream", "cupy.cuda.memory", "cupy.cuda.pinned_memory", "cupy.cuda.nccl",
    "cupy.cuda.cublas",
    "cupy.linalg", "cupy.fft", "cupy.fft.config", "cupy.random", "cupy._core", "cupy.cublas",
    "cupy._core._routines_linalg", "cupy._util", "cupyx", "cupyx.lapack", "cupyx.scipy.fft",
    "cupyx.scipy.linalg", "cupyx.scipy.sparse", "cupyx.scipy.sparse.linalg",
    "cupyx.scipy.special", "cupy.cuda.compiler", "cupy._core.raw", "cupy._core._kernel",
    "cupy._core._reduction", "cupy.exceptions",
]  # fmt: skip
#: Classes whose public methods and properties are checked too.
CLASSES = [
    "cupy.ndarray", "cupy.cuda.Device", "cupy.cuda.Stream", "cupy.cuda.Event",
    "cupy.cuda.MemoryPool", "cupy.cuda.MemoryPointer", "cupy.cuda.PinnedMemoryPool",
    "cupy.cuda.memory.SingleDeviceMemoryPool", "cupyx.scipy.sparse.csr_matrix",
    "cupyx.scipy.sparse.linalg.LinearOperator", "cupy.cuda.nccl.NcclCommunicator",
    "cupy.RawKernel", "cupy.RawModule", "cupy.ElementwiseKernel", "cupy.ReductionKernel",
]  # fmt: skip


def _params(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD,
             inspect.Parameter.POSITIONAL_ONLY)  # fmt: skip
    return [p.name for p in sig.parameters.values() if p.kind not in kinds]


def _exposed():
    entries = []
    for name in MODULES:
        module = importlib.import_module(name)
        for attr in dir(module):
            value = getattr(module, attr)
            if attr.startswith("_") or attr == "annotations":
                continue
            if isinstance(value, types.ModuleType) and not value.__name__.startswith(
                ("cupy", "cupyx")
            ):
                continue  # a helper module the simulator imported (numpy, threading ...)
            entries.append({"module": name, "path": attr, "params": _params(value)})
    for dotted in CLASSES:
        module_name, _, cls_name = dotted.rpartition(".")
        cls = getattr(importlib.import_module(module_name), cls_name)
        for attr, value in vars(cls).items():
            if attr.startswith("_"):
                continue
            params = _params(value) if callable(value) else None
            entries.append({"module": module_name, "path": f"{cls_name}.{attr}",
                            "params": params})  # fmt: skip
    return entries


def test_every_exposed_name_exists_in_the_real_cupy(cp):
    entries = _exposed()
    assert len(entries) > 500  # the walk found the namespaces
    here = Path(__file__).resolve()
    root = here.parents[3]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUPYSIM", "CUPY_"))}
    # CUPYSIM_REAL_CUPY_PATH: a directory holding another CuPy release to check against
    # (tools/sim_lanes.sh puts the lowest one the extras allow there); default the installed one
    other = os.environ.get("CUPYSIM_REAL_CUPY_PATH", "")
    env["PYTHONPATH"] = os.pathsep.join([*filter(None, [other]), str(root), str(root / "backends")])
    r = subprocess.run(
        [sys.executable, str(here.parent / "real_api_check.py")],
        input=json.dumps(entries), capture_output=True, text=True, env=env, timeout=300,
        cwd=str(here.parent.parent.parent),  # not tests/cupysim: the real cupy is imported
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "", "the simulator exposes API the real CuPy lacks:\n" + r.stdout
