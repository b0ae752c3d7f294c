"""Type aliases for gpukit's annotations: the arrays it takes and returns.

gpukit's arrays are the backends' own, ``numpy.ndarray`` or ``cupy.ndarray``. Checkers see
CuPy's class; at runtime CuPy is never imported here (``import gpukit`` stays cheap), and the
aliases are plain ``typing`` objects with CuPy's class as a forward reference.

CuPy ships no type information: a checker that cannot see it treats ``cupy.ndarray`` as
``Any``, so :data:`Array` then checks the NumPy half only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ForwardRef, Union

import numpy as np

__all__ = ["Array", "CupyArray", "NumpyArray"]

if TYPE_CHECKING:
    from typing import TypeAlias

    import cupy

    NumpyArray: TypeAlias = np.ndarray[Any, Any]
    CupyArray: TypeAlias = cupy.ndarray
    Array: TypeAlias = NumpyArray | CupyArray
else:
    NumpyArray = np.ndarray
    CupyArray = ForwardRef("cupy.ndarray")
    Array = Union[np.ndarray, "cupy.ndarray"]
