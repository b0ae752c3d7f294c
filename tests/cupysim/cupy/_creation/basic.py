"""cupy/_creation/basic.py: the layout of ``*_like`` arrays (and of pinned ones, cupyx)."""

from __future__ import annotations

import numpy


def _strides_for_order_k(a, dtype: numpy.dtype, shape) -> tuple[int, ...]:
    """internal.pyx ``_get_strides_for_order_K``: ``a``'s axes ordered by stride, packed."""
    order = sorted((abs(s), -i) for i, s in enumerate(a.strides))
    strides = [0] * a.ndim
    stride = dtype.itemsize
    for _, i in order:
        strides[-i] = stride
        stride *= shape[-i] if shape else a.shape[-i]
    return tuple(strides)


def _new_like_order_and_strides(a, dtype, order: str, shape=None):
    """``(order, strides)`` as NumPy's PyArray_NewLikeArray: strides only for 'K' when
    ``a`` is neither C- nor F-contiguous (then order is 'C' and the memory contiguous)."""
    order = order.upper()
    if order not in ("C", "F", "K", "A"):
        raise ValueError(f"order not understood: {order}")
    if numpy.isscalar(shape):
        shape = (shape,)
    if order == "K" and shape is not None and len(shape) != a.ndim:
        return "C", None
    c, f = a.flags.c_contiguous, a.flags.f_contiguous
    if order == "A":  # internal.pyx _update_order_char
        order = "F" if f and not c else "C"
    elif order == "K" and c:
        order = "C"
    elif order == "K" and f:
        order = "F"
    if order == "K":
        return "C", _strides_for_order_k(a, numpy.dtype(dtype), shape)
    return order, None
