"""cupy.exceptions: NumPy's exception and warning classes, as CuPy re-exports them.

cupy/exceptions/__init__.py (CuPy 14.2) imports each from ``numpy.exceptions``, so an
``except numpy.exceptions.AxisError`` catches CuPy's too.
"""

from __future__ import annotations

from numpy.exceptions import (  # noqa: F401
    AxisError,
    ComplexWarning,
    ModuleDeprecationWarning,
    RankWarning,
    TooHardError,
    VisibleDeprecationWarning,
)
