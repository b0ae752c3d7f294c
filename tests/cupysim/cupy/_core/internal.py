"""cupy._core.internal: the shape helpers CuPy's Python code (cupy.testing) calls."""

from __future__ import annotations

import math


def prod(args) -> int:
    # cupy/_core/internal.pyx prod: the product of a shape, 1 for ()
    return math.prod(args)


def prod_sequence(args) -> int:
    return math.prod(args)
