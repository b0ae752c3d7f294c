"""cupy.testing: CuPy's own testing helpers, run unchanged against the simulator.

CuPy's ``cupy/testing`` is pure Python on top of ``cupy`` and NumPy; its decorators
(``numpy_cupy_allclose``, ``for_all_dtypes``...) decide what CuPy's test suite accepts, so the
simulator loads CuPy's files rather than imitating them. They are read from the real CuPy
wheel the ``oracles``/``ci`` extras install (the same 14.2.0 the simulator models), or from
``CUPYSIM_REAL_CUPY_PATH`` (a directory holding a ``cupy`` package) when set. Only the files
are read: the real ``cupy`` package is never imported.
"""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path


def _real_testing_dir() -> Path:
    other = os.environ.get("CUPYSIM_REAL_CUPY_PATH", "")
    candidates = [Path(other) / "cupy" / "testing"] if other else []
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name == "cupy" or name.startswith("cupy-cuda") or name.startswith("cupy-rocm"):
            candidates.append(Path(dist.locate_file("cupy/testing")))
    for path in candidates:
        if (path / "_loops.py").is_file():
            return path
    raise ImportError(
        "cupy.testing under the simulator runs CuPy's own cupy/testing files, read from an "
        "installed CuPy wheel (pip install 'cupy-cuda13x==14.2.0', the 'oracles' extra) or "
        "from CUPYSIM_REAL_CUPY_PATH; none was found"
    )


# The submodules (cupy.testing._loops, ...) are found in CuPy's directory.
__path__ = [str(_real_testing_dir())]
_init = Path(__path__[0]) / "__init__.py"
exec(compile(_init.read_text(), str(_init), "exec"), globals())
del _init
