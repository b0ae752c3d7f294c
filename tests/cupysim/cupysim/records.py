"""What the simulated libraries were asked to do, for tests to assert on.

TF32: ``cupy._core._routines_linalg.tensordot_core_v11`` asks cuBLAS for
``CUBLAS_COMPUTE_32F_FAST_TF32`` when ``get_compute_type(float32)`` is
``COMPUTE_TYPE_TF32``; batched matmul (``ndim > 2``) calls ``gemmStridedBatchedEx`` with the
data type as compute type and never TF32. The simulator computes in full float32 either
way and records each float32 GEMM's compute type here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

_lock = threading.Lock()
_log: list[TF32Request] = []


@dataclass(frozen=True)
class TF32Request:
    routine: str  # "gemm" (2-D, cublasGemmEx) or "gemmStridedBatched" (ndim > 2)
    dtype: str
    shape: tuple[int, ...]  # the output's shape
    tf32: bool  # whether cuBLAS was asked for TF32 tensor-core math
    device: int


def record_gemm(routine: str, dtype, shape, tf32: bool, device: int) -> None:
    with _lock:
        _log.append(TF32Request(routine, str(dtype), tuple(shape), tf32, device))


def tf32_requests() -> list[TF32Request]:
    """Every float32/complex64 GEMM since the last clear, in call order."""
    with _lock:
        return list(_log)


def clear_tf32_requests() -> None:
    with _lock:
        _log.clear()
