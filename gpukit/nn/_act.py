"""Bias + activation, forward and backward: the one place layers do elementwise math.

Host arrays are computed in place with NumPy (the pre-activation is a fresh array the
caller owns, so no temporaries are needed) and keep the output when the derivative can
be written with it (ReLU, Sigmoid, Tanh); the formulas are the numpy backend's own
(:mod:`gpukit._host.activations`), without the kernels' copies. Device arrays go through
the fused kernels ``gk.kernels.bias_activation`` / ``bias_activation_backward``, or without
a bias their internal twins ``activation`` / ``activation_backward``, kept bound per
activation, slope, array type and dtype: one launch each way. A slope is a Python float
(the layers' validated attribute): it is part of the device plans' keys.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .._host import native as _native
from .._host.activations import FROM_OUTPUT, bias_activate, gradient
from .._runtime import plans as _plans
from ..kernels import ACTIVATIONS
from ..kernels._direct import bound, kernel

if TYPE_CHECKING:
    from .layers import _Activation

__all__ = ["ACTIVATIONS", "backward", "bias_grad", "forward", "planned", "planned_backward"]

_ndarray = np.ndarray
_FLOAT32_64 = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


def bias_grad(g: Any, out: Any = None) -> Any:
    """The bias gradient: ``g`` summed over every axis but the last (into ``out`` if given).

    On the host a float32/float64 gradient of many rows is summed by a BLAS matrix-vector
    product with a vector of ones, 2-3x faster than ``sum(axis=0)`` for a batch of rows
    (measured: 256x256 float32, 2.8 us against 7.0 us); both add each column's entries
    once, so the rounding is of the same order. A few rows (fewer than
    :data:`_FEW_ROWS`), other dtypes and device arrays use one ufunc reduction.
    """
    g2 = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])
    if type(g2) is np.ndarray:
        if g2.shape[0] >= _FEW_ROWS and g2.dtype in _FLOAT32_64:
            ones = np.empty(g2.shape[0], g2.dtype)
            ones.fill(1)  # np.ones's Python layer costs as much as a small layer's sum
            return np.matmul(ones, g2, out=out)
        return _ADD(g2, 0, None, out)  # ndarray.sum without NumPy's Python layer around it
    return g2.sum(axis=0, out=out)


#: Rows from which the product with ones sums a gradient faster than one reduction
#: (callgrind, float32, 64 columns: 8.8k against 12.7k instructions at 4 rows, 15.1k
#: against 13.3k at 32)
_FEW_ROWS = 24
_ADD = np.add.reduce


def _as_float32(*arrays: Any) -> list[Any]:
    return [a.astype(np.float32) for a in arrays]


def _device_forward(z: Any, bias: Any, name: str, slope: float) -> Any:
    """``act(z + bias)`` on a device: the fused kernel, or without a bias its twin (no
    array of zeros to allocate and fill), kept bound for arrays like ``z``."""
    if bias is None:
        key, args = (name, slope, type(z), z.dtype), (z, name, slope)
        run = _DEVICE_FORWARD.get(key) or _keep(_DEVICE_FORWARD, key, "activation", z, args)
        return run(*args)
    return kernel(z, "bias_activation")(z, bias, name, slope)


#: (activation, slope, the device array's type and dtype) -> the owning backend's
#: ``activation`` kernel bound to them (an activation layer's forward pass on a device)
_DEVICE_FORWARD = _plans.table()

#: (activation, slope, from the output or not, the device gradient's type and dtype, those
#: of the array it multiplies: what forward kept, or its float32 copy for float16) -> the
#: backend's ``activation_backward`` bound to them
_DEVICE_BACKWARD = _plans.table()


def _keep(plans: dict[Any, Any], key: Any, name: str, data: Any, args: tuple[Any, ...]) -> Any:
    """Kernel ``name`` of the backend owning ``data`` bound to ``args``, kept in ``plans``
    under ``key``."""
    since = _plans.generation()
    return _plans.remember(plans, key, bound(data, name, args), since)


def forward(
    name: str, z: Any, bias: Any, slope: float, *, overwrite: bool
) -> tuple[Any, tuple[Any, bool]]:
    """``act(z + bias)`` and what :func:`backward` needs.

    ``overwrite`` says that ``z`` is a temporary of the caller's that may be reused.
    """
    if type(z) is not _ndarray:  # one test of the type on the host's path
        if isinstance(z, np.generic):  # a 0-d result: host
            z = np.asarray(z)
        else:  # a device array: one launch, the fused kernel's or, without a bias, its twin's
            if z.dtype in _FLOAT32_64:
                return _device_forward(z, bias, name, slope), (z, False)
            # the kernels take float32/float64 (gk.kernels): float16 is computed in float32
            # and rounded once, as PyTorch computes half-precision activations
            b = None if bias is None else bias.astype(np.float32)
            y = _device_forward(z.astype(np.float32), b, name, slope)
            return y.astype(z.dtype), (z, False)
    # the derivative of FROM_OUTPUT activations is written with the output, so the input may
    # be overwritten; the others keep their input (before the bias) for backward
    from_output = name in FROM_OUTPUT
    if bias is None and name == "identity":
        return z, (z, True)
    if overwrite and from_output and z.flags.c_contiguous:
        y = _in_place(name, z, bias, slope)
    else:  # a new C-contiguous output (bias_activate writes only such a one)
        key = (
            name,
            z.dtype,
            z.shape,
            None if bias is None else (type(bias), bias.dtype, bias.shape),
        )
        run = _BOUND.get(key)
        if run is None:
            run = _bound(key, z, bias, name, slope)
        y = run(z, bias, name, slope)
    return y, (y if from_output else z, from_output)


def _in_place(name: str, z: np.ndarray, bias: Any, slope: float) -> np.ndarray:
    """``act(z + bias)`` written over the C-contiguous host array ``z``: by the compiled
    pass kept for such arrays where the kernels take them, else by ``bias_activate``."""
    if bias is None or (
        type(bias) is _ndarray and bias.dtype == z.dtype and bias.shape == z.shape[-1:]
    ):
        key = (name, z.dtype, z.shape, bias is not None)
        run = _IN_PLACE.get(key) or _new_in_place(key)
        if run(z, bias, z, slope):
            return z
    return bias_activate(z, bias, z, name, slope)


#: (activation, the host array's dtype and shape, with a bias) -> the compiled forward
#: pass ``(x, b, y, slope) -> bool`` of :func:`_in_place` for such arrays
#: (:func:`gpukit._host.native.plan_bias_act`)
_IN_PLACE = _plans.table()


def _new_in_place(key: tuple[Any, ...]) -> Any:
    """The pass of :data:`_IN_PLACE` for ``key``, planned and kept; one that does nothing
    and says so where the compiled kernels cannot run one (not built, no elements, a
    dtype they do not take)."""
    name, dtype, shape, bias = key
    c = shape[-1] if shape else 1
    rows = math.prod(shape) // max(c, 1)
    run = _native.plan_bias_act(rows, c, dtype, name, bias)
    return _plans.remember(_IN_PLACE, key, run or _not_run, _plans.generation())


def _not_run(x: Any, b: Any, y: Any, slope: float) -> bool:
    """The pass of a key the compiled kernels cannot run: ``bias_activate`` then."""
    return False


#: (activation, the host input's dtype and shape, the bias's type, dtype and shape or
#: None) -> the numpy backend's ``bias_activation`` bound to such arrays
_BOUND = _plans.table()


def _bound(key: Any, z: np.ndarray, bias: Any, name: str, slope: float) -> Any:
    """The host kernel of :func:`forward` for arrays like ``z`` and ``bias``, kept (a
    floating ``z``'s only: :func:`planned` finds no other)."""
    run = bound(z, "bias_activation", (z, bias, name, slope))
    if z.dtype.kind != "f":
        return run
    return _plans.remember(_BOUND, key, run, _plans.generation())


def planned(layer: _Activation, z: Any) -> Any:
    """An activation layer's warm call: ``forward(layer._name, z, None,
    layer.negative_slope, overwrite=False)``'s output, with what :func:`backward` needs
    kept as ``layer._saved``, where its kernel for arrays like ``z`` is kept (host or
    device); else None, ``layer`` untouched: :func:`forward` then computes it. A kernel
    is kept for floating arrays only, so a layer that converts other input (``int`` to
    ``float64``) may skip its check where this finds one."""
    name, slope = layer._name, layer.negative_slope
    if type(z) is _ndarray:
        run = _BOUND.get((name, z.dtype, z.shape, None))
        if run is None:
            return None
        y = run(z, None, name, slope)
        layer._saved = (y, True) if name in FROM_OUTPUT else (z, False)
        return y
    run = _DEVICE_FORWARD.get((name, slope, type(z), z.dtype))  # a device array
    if run is None:
        return None
    y = run(z, name, slope)
    layer._saved = (z, False)
    return y


def planned_backward(name: str, grad: Any, saved: tuple[Any, bool], slope: float) -> Any:
    """The input gradient of ``backward(name, grad, saved, None, slope, want_bias=False)``
    for host arrays of one floating dtype and shape, or device arrays whose kernel is
    kept (an activation layer's warm pass), or None: :func:`backward` then computes it."""
    v = saved[0]
    if type(grad) is not _ndarray or type(v) is not _ndarray:
        if type(grad) is not type(v):
            return None
        kept = (name, slope, saved[1], type(grad), grad.dtype, type(v), v.dtype)
        run = _DEVICE_BACKWARD.get(kept)
        return None if run is None else run(grad, v, name, slope, saved[1])
    dtype, shape = grad.dtype, grad.shape
    if v.dtype != dtype or v.shape != shape:
        return None
    key = (name, saved[1], dtype, shape, False, False)
    run = _PASSES.get(key) or _new_pass(key)
    return run(grad, v, None, np.empty(shape, dtype), slope)


#: (activation, from its output or not, the host arrays' dtype and shape, with a bias,
#: with the bias gradient) -> the compiled gradient pass ``(g, v, b, gx, slope)`` for
#: such arrays (:func:`gpukit._host.native.plan_bias_act_grad`): the bias gradient, or
#: ``gx`` itself without it, or None having done nothing where the kernels do not take
#: the arrays (strided, unaligned): :func:`gradient` then computes it
_PASSES = _plans.table()


def _new_pass(key: tuple[Any, ...]) -> Any:
    """The pass of :data:`_PASSES` for ``key``, planned and kept; one that returns None
    where the compiled kernels cannot run one (not built, no elements, a dtype they do
    not take), and, not kept, for an activation or a derivative from the output that they
    do not compute (:func:`gradient` raises what it raises)."""
    name, of_output, dtype, shape, bias, sums = key
    if name == "identity" or name not in ACTIVATIONS or (of_output and name not in FROM_OUTPUT):
        return _unplanned
    c = shape[-1] if shape else 1
    rows = math.prod(shape) // max(c, 1)
    run = _native.plan_bias_act_grad(rows, c, dtype, name, of_output, bias, sums)
    return _plans.remember(_PASSES, key, run or _unplanned, _plans.generation())


def _unplanned(g: Any, v: Any, b: Any, gx: Any, slope: float) -> None:
    """The pass of a key the compiled kernels cannot run: :func:`gradient` then."""
    return None


def backward(
    name: str,
    grad: Any,
    saved: tuple[Any, bool],
    bias: Any,
    slope: float,
    *,
    want_bias: bool,
    overwrite: bool = False,
    bias_out: Any = None,
) -> tuple[Any, Any]:
    """Gradients with respect to ``z`` and (if ``want_bias``) the bias of :func:`forward`.

    ``overwrite`` says that ``grad`` is a temporary of the caller's that may be reused;
    ``bias_out``, where a device's fused kernel may write the bias gradient (the bias's
    slot in an optimizer's flat gradient buffer).
    """
    s = saved[0]
    if type(s) is not _ndarray:  # one test of the type on the host's path
        if isinstance(s, np.generic):  # a 0-d output: host
            s = np.asarray(s)
        else:  # a device array: the fused kernel, or without a bias its twin
            half = s.dtype not in _FLOAT32_64  # float16: in float32, as in forward
            g, v = _as_float32(grad, s) if half else (grad, s)
            if bias is None:
                kept = (name, slope, False, type(g), g.dtype, type(v), v.dtype)
                args = (g, v, name, slope, False)
                plans = _DEVICE_BACKWARD
                run = plans.get(kept) or _keep(plans, kept, "activation_backward", s, args)
                gz = run(*args)
                gb = bias_grad(gz) if want_bias else None
            else:
                b = bias.astype(np.float32) if half else bias
                out = bias_out if want_bias and not half else None
                gz, gb = kernel(s, "bias_activation_backward")(g, v, b, name, slope, out)
            if half:
                gz = gz.astype(s.dtype)
                gb = None if gb is None else gb.astype(s.dtype)
            return gz, gb if want_bias else None
    if name == "identity":
        return grad, bias_grad(grad) if want_bias else None
    out = grad if overwrite and grad.flags.c_contiguous else None
    pre_bias = None if saved[1] else bias  # a saved input is from before the bias
    if type(grad) is _ndarray:  # the kept compiled pass for arrays of one dtype and shape
        dtype, shape = grad.dtype, grad.shape
        if (
            s.dtype == dtype
            and s.shape == shape
            and (
                pre_bias is None
                or (
                    type(pre_bias) is _ndarray
                    and pre_bias.dtype == dtype
                    and pre_bias.shape == shape[-1:]
                )
            )
        ):
            key = (name, saved[1], dtype, shape, pre_bias is not None, want_bias)
            gx = np.empty(shape, dtype) if out is None else out
            done = (_PASSES.get(key) or _new_pass(key))(grad, s, pre_bias, gx, slope)
            if done is not None:
                return gx, done if want_bias else None
    return gradient(
        grad, s, name, slope, bias=pre_bias, of_output=saved[1], out=out, want_bias=want_bias
    )
