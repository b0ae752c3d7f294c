"""``cupy.cuda.cub``: CUB, which CuPy builds for CUDA (cupy/cuda/cub.pyx: ``available``
is True), imported with ``cupy.cuda``.

Only ``available`` is provided: the simulator does not run CUB's device-wide reductions
and scans (cupy/_core/_accelerator.py), so calling one fails (AttributeError), and a
reduction computes the same whichever accelerator is named.
"""

from __future__ import annotations

available = True
