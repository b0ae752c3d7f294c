"""CUDA libraries that may be missing (``CUPYSIM_FAIL=libs``).

CuPy 14 finds cuBLAS, cuSOLVER, cuSPARSE and cuFFT with cuda-pathfinder when their
module is first needed (cupy_backends/cuda/libs/__init__.py ``__getattr__``,
cupy/cuda/__init__.py ``__getattr__('cufft')``) and turns ``DynamicLibNotFoundError`` into
``ImportError(str(e))``; NVRTC is loaded when the first kernel compiles
(cupy_backends/cuda/libs/_cnvrtc.pxi ``_get_softlink``), where the pathfinder's
``DynamicLibNotFoundError`` (a RuntimeError) propagates as is. The messages are the ones the
pathfinder printed on this machine, which has none of these libraries.
"""

from __future__ import annotations

from .config import config

try:
    from cuda.pathfinder import DynamicLibNotFoundError
except ImportError:  # cuda-pathfinder comes with cupy-cuda13x; keep the name without it

    class DynamicLibNotFoundError(RuntimeError):
        pass

    DynamicLibNotFoundError.__module__ = "cuda.pathfinder._dynamic_libs.load_dl_common"

#: The library the pathfinder fails to find first for each CuPy module (cuBLAS needs
#: cuBLASLt, cuSOLVER and cuSPARSE need nvJitLink).
_SEARCHED = {
    "cublas": "libcublasLt.so.13 or libcublasLt.so.12",
    "cusolver": "libnvJitLink.so.13 or libnvJitLink.so.12",
    "cusparse": "libnvJitLink.so.13 or libnvJitLink.so.12",
    "cufft": "libcufft.so.12 or libcufft.so.11",
    "nvrtc": "libnvrtc.so.13 or libnvrtc.so.12",
}


def not_found(library: str) -> DynamicLibNotFoundError:
    name = _SEARCHED[library]
    return DynamicLibNotFoundError(
        f'Failure finding "{name}": No such file: {name}, No such file: {name}\n'
    )


def require(library: str) -> None:
    """Loading a library module: ImportError when the library is missing."""
    if library not in _SEARCHED:
        raise ValueError(f"unknown library {library!r}")
    if config.fail == "libs":
        if library == "nvrtc":
            raise not_found(library)
        err = not_found(library)
        raise ImportError(str(err)) from err
