"""Matrix products on the GPU: cuBLAS through ``cupy.matmul``, TF32 only when asked.

Two cuBLAS switches decide whether a float32/complex64 product may use TF32 tensor
cores: CuPy's compute type (``cupy._core.set_compute_type``, process-wide; CuPy reads
``CUPY_TF32`` into it once) makes 2-D products ask for ``CUBLAS_COMPUTE_32F_FAST_TF32``,
but batched (``ndim > 2``) products call ``gemmStridedBatchedEx`` with the data type as
compute type and ignore it (cupy/_core/_routines_linalg.pyx); the cuBLAS handle's math
mode, ``CUBLAS_TF32_TENSOR_OP_MATH``, lets both use TF32 (cuBLAS docs, ``cublasMath_t``).

gpukit owns both. When the backend is created, :meth:`CupyMatmul.set_tf32` sets CuPy's
compute type from ``GPUKIT_TF32`` (so ``CUPY_TF32`` does not silently reach gpukit's
products, a raw ``x @ w`` in a layer or a solver included). A call naming a precision
sets the compute type and the calling thread's handle mode for that call and puts both
back, under a lock so concurrent gk.matmul calls never see each other's setting; the
handle is per thread, the compute type is not: a direct ``cupy.matmul`` from another
thread during that window follows gpukit's setting.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

logger = logging.getLogger("gpukit")

_lock = threading.Lock()
_TF32_TENSOR_OP_MATH = 3  # cublas_api.h; CuPy names only CUBLAS_DEFAULT_MATH/TENSOR_OP_MATH


@contextlib.contextmanager
def _single_precision(tf32: bool) -> Iterator[None]:
    """Float32/complex64 products in TF32 or in full precision, for the ``with`` block."""
    import cupy
    from cupy._core import _routines_linalg as blas
    from cupy.cuda import cublas, device

    f32 = cupy.dtype(cupy.float32)  # float32 and complex64 share one compute type
    handle = device.get_cublas_handle()  # the current device's, this thread's
    mode = _TF32_TENSOR_OP_MATH if tf32 else cublas.CUBLAS_DEFAULT_MATH
    with _lock:
        previous = blas.get_compute_type(f32), cublas.getMathMode(handle)
        blas.set_compute_type(f32, blas.COMPUTE_TYPE_TF32 if tf32 else blas.COMPUTE_TYPE_DEFAULT)
        cublas.setMathMode(handle, mode)
        try:
            yield
        finally:
            cublas.setMathMode(handle, previous[1])
            blas.set_compute_type(f32, previous[0])


class CupyMatmul:
    """Overrides :meth:`gpukit.backend.Backend.matmul` to honour ``precision``."""

    _tf32 = False  # GPUKIT_TF32, set once by set_tf32

    def set_tf32(self, enabled: bool) -> None:
        import cupy
        from cupy._core import _routines_linalg as blas

        self._tf32 = enabled
        asked = os.environ.get("CUPY_TF32", "0").strip()
        if not enabled and asked.isdigit() and int(asked) > 0:
            logger.warning(
                "CUPY_TF32=%s is set, but TF32 is opt-in in gpukit: float32 products stay in "
                "full precision (CuPy's own calls in this process too). Ask per call with "
                "precision='tf32', or for every product with GPUKIT_TF32=1",
                asked,
            )
        blas.set_compute_type(
            cupy.float32, blas.COMPUTE_TYPE_TF32 if enabled else blas.COMPUTE_TYPE_DEFAULT
        )

    def matmul(self, a: Any, b: Any, precision: str | None) -> Any:
        xp = self.xp  # cupy, without an import statement per call
        if (precision is None and not self._tf32) or xp.result_type(a, b).char not in "fF":
            return xp.matmul(a, b)  # the compute type set_tf32 chose; no mode change
        with _single_precision(precision == "tf32" or precision is None):
            return xp.matmul(a, b)
