"""cupy._core._cub_reduction: CUB's block reductions, not simulated.

Only the threshold CuPy's test files read at import is provided (cupy/_core/
_cub_reduction.pyx ``_CUB_REDUCE_SIZE_THRESHOLD``: below this many contiguous elements
CuPy's reductions do not use CUB); the simulator reduces the same way whichever
accelerator is named (cupy/_core/_accelerator.py).
"""

from __future__ import annotations

_CUB_REDUCE_SIZE_THRESHOLD = 128
