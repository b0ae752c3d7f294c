"""``cupy.cuda.nvrtc`` (simulated): CuPy's NVRTC wrapper (cupy_backends/cuda/libs/nvrtc.pyx).

Importing it never fails; the library is loaded by the first call (``initialize()`` in each
function, cupy_backends/cuda/libs/_cnvrtc.pxi), where a missing libnvrtc raises
cuda-pathfinder's DynamicLibNotFoundError (cupysim.libs, ``CUPYSIM_FAIL=libs``).
"""

from __future__ import annotations

from cupysim import libs


def getVersion() -> tuple[int, int]:
    """nvrtc.pyx ``getVersion``: (major, minor) of the NVRTC the kernels compile with."""
    libs.require("nvrtc")
    return (13, 2)
