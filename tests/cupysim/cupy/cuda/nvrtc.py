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


#: nvrtcGetErrorString (NVRTC's nvrtcResult names).
_ERRORS = (
    "NVRTC_SUCCESS", "NVRTC_ERROR_OUT_OF_MEMORY", "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
    "NVRTC_ERROR_INVALID_INPUT", "NVRTC_ERROR_INVALID_PROGRAM", "NVRTC_ERROR_INVALID_OPTION",
    "NVRTC_ERROR_COMPILATION", "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
    "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION",
    "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION", "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID",
    "NVRTC_ERROR_INTERNAL_ERROR",
)  # fmt: skip


class NVRTCError(RuntimeError):
    """nvrtc.pyx ``NVRTCError``: an NVRTC status, ``'<name> (<status>)'``; pickles."""

    def __init__(self, status):
        libs.require("nvrtc")
        self.status = status
        name = _ERRORS[status] if 0 <= status < len(_ERRORS) else "NVRTC_ERROR unknown"
        super().__init__(f"{name} ({status})")

    def __reduce__(self):
        return (type(self), (self.status,))
