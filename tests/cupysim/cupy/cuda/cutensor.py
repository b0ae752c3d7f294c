"""``cupy.cuda.cutensor``: cuTENSOR, an optional library, is not installed here.

cupy/cuda/cutensor.py: ``available`` is False when ``cupy_backends.cuda.libs.cutensor``
fails to import, as on a machine without libcutensor; CuPy then never routes a reduction
or contraction to it. The simulator always models that machine.
"""

from __future__ import annotations

available = False
