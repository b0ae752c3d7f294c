"""cupy._core: the array type and CuPy's kernel-level entry points."""

from __future__ import annotations

from cupy._core import core  # noqa: F401
from cupy._core._routines_linalg import get_compute_type, set_compute_type  # noqa: F401
from cupy._core.core import array, ascontiguousarray, asfortranarray, ndarray  # noqa: F401

# The kernel classes come from the kernel-execution half of the simulator (sim-kernels);
# cupy imports without them.
try:
    from cupy._core._kernel import ElementwiseKernel  # noqa: F401
except ImportError:
    pass
try:
    from cupy._core._reduction import ReductionKernel  # noqa: F401
except ImportError:
    pass
