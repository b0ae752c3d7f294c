"""Matrix products on the GPU: cuBLAS through ``cupy.matmul``, TF32 when asked.

CuPy picks the cuBLAS compute type per dtype (``cupy._core.get_compute_type``; the
documented ``CUPY_TF32=1`` sets TF32 for float32 process-wide at import).
``precision="tf32"`` switches float32 to TF32 for one call with
``cupy._core.set_compute_type`` and restores the previous type afterwards, under a lock
so that concurrent gk.matmul calls never see each other's setting. A direct
``cupy.matmul`` from another thread during that window would also run in TF32.
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()


class CupyMatmul:
    """Overrides :class:`gpukit.backend._ops.matmul.MatmulOps` to honour ``precision="tf32"``."""

    def matmul(self, a: Any, b: Any, precision: str | None) -> Any:
        import cupy

        with a.device:
            if precision != "tf32" or cupy.result_type(a, b) != cupy.float32:
                return cupy.matmul(a, b)
            from cupy._core import _routines_linalg as blas

            f32 = cupy.dtype(cupy.float32)
            with _lock:
                previous = blas.get_compute_type(f32)
                blas.set_compute_type(f32, blas.COMPUTE_TYPE_TF32)
                try:
                    return cupy.matmul(a, b)
                finally:
                    blas.set_compute_type(f32, previous)
