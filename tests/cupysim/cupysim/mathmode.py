"""cuBLAS math modes per handle, and whether a single-precision GEMM may use TF32.

cublas_api.h ``cublasMath_t``: ``CUBLAS_DEFAULT_MATH`` (0), ``CUBLAS_TENSOR_OP_MATH`` (1,
deprecated), ``CUBLAS_PEDANTIC_MATH`` (2), ``CUBLAS_TF32_TENSOR_OP_MATH`` (3), optionally
or-ed with ``CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION`` (16); anything else is
``CUBLAS_STATUS_INVALID_VALUE``. cuBLAS documentation, "cublasMath_t" and "cublasGemmEx":
under ``CUBLAS_TF32_TENSOR_OP_MATH`` single-precision routines computing in
``CUBLAS_COMPUTE_32F`` (cublasSgemm, cublasGemmEx, and cublasGemmStridedBatchedEx given the
legacy ``CUDA_R_32F`` compute type, as CuPy's batched matmul does) may down-convert their
inputs to TF32; ``CUBLAS_COMPUTE_32F_FAST_TF32`` asks for TF32 whatever the mode.

Handles are per thread (cupy/cuda/device.pyx keeps them in a ``threading.local``), so the
mode is kept per thread here.
"""

from __future__ import annotations

import threading

TF32_TENSOR_OP_MATH = 3
_VALID = {0, 1, 2, 3}
_DISALLOW_REDUCED_PRECISION_REDUCTION = 16

_tls = threading.local()


def _modes() -> dict[int, int]:
    modes = getattr(_tls, "modes", None)
    if modes is None:
        modes = _tls.modes = {}
    return modes


def mode_of(handle: int) -> int:
    return _modes().get(handle, 0)


def valid(mode: int) -> bool:
    return mode & ~_DISALLOW_REDUCED_PRECISION_REDUCTION in _VALID


def set_mode(handle: int, mode: int) -> None:
    _modes()[handle] = mode


def allows_tf32(handle: int) -> bool:
    """Whether the handle's mode lets a CUBLAS_COMPUTE_32F GEMM use TF32."""
    return mode_of(handle) & ~_DISALLOW_REDUCED_PRECISION_REDUCTION == TF32_TENSOR_OP_MATH
