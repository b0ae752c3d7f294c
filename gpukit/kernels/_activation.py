"""Fused bias + activation, forward and backward."""

from __future__ import annotations

from typing import Any

from .._dispatch import operation
from .._dispatch.capabilities import checked, declare
from ..backend.kernels import ACTIVATIONS
from ._checks import FLOATS, check_like, place


def _check_activation(op: str, activation: str) -> None:
    if activation not in ACTIVATIONS:
        raise ValueError(
            f"{op}: activation must be one of {', '.join(ACTIVATIONS)}; got {activation!r}"
        )


def _check(op: str, x: Any, bias: Any) -> None:
    if x.ndim < 1:
        raise ValueError(
            f"{op}: x must have at least one axis (bias broadcasts over the last one), got a "
            "0-d array"
        )
    if bias.ndim != 1 or bias.shape[0] != x.shape[-1]:
        raise ValueError(
            f"{op}: bias must have shape ({x.shape[-1]},) to broadcast over the last axis of x "
            f"{tuple(x.shape)}, got {tuple(bias.shape)}"
        )
    if bias.dtype != x.dtype:
        raise TypeError(
            f"{op}: bias has dtype {bias.dtype} but x has dtype {x.dtype}; they must match"
        )


@operation("gk.kernels.bias_activation")
def bias_activation(
    x: Any, bias: Any, activation: str = "relu", *, negative_slope: float = 0.01
) -> Any:
    """``act(x + bias)`` in one pass over ``x``.

    Parameters
    ----------
    x : array, float32 or float64, shape (..., c)
        Input.
    bias : array, shape (c,), same dtype
        Added along the last axis of ``x``.
    activation : str
        ``"identity"``, ``"relu"``, ``"leaky_relu"``, ``"gelu"`` (exact, erf form),
        ``"gelu_tanh"`` (tanh approximation), ``"silu"``, ``"sigmoid"`` or ``"tanh"``;
        each as PyTorch defines it.
    negative_slope : float
        Slope of ``leaky_relu`` for negative inputs.

    Returns
    -------
    array
        ``act(x + bias)``, shape and dtype of ``x``, on the inputs' backend.

    Raises
    ------
    ValueError
        Unknown activation, or ``bias`` not of shape ``(x.shape[-1],)``.
    TypeError
        ``x`` or ``bias`` not float32/float64, or ``bias`` not of ``x``'s dtype.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> x = np.array([[-1.0, 0.5], [2.0, -3.0]])
    >>> gk.kernels.bias_activation(x, np.array([0.5, 0.5]), "relu")
    array([[0. , 1. ],
           [2.5, 0. ]])
    """
    op = "gk.kernels.bias_activation"
    _check_activation(op, activation)
    backend, (x, bias) = place(op, (x, bias), ("x", "bias"), (FLOATS, FLOATS))
    _check(op, x, bias)
    return backend.kernel("bias_activation")(x, bias, activation, float(negative_slope))


@operation("gk.kernels.bias_activation_backward")
def bias_activation_backward(
    grad_y: Any, x: Any, bias: Any, activation: str, *, negative_slope: float = 0.01
) -> tuple[Any, Any]:
    """Gradients of :func:`bias_activation` in one pass over ``grad_y`` and ``x``.

    ``z = x + bias`` is recomputed inside the kernel (nothing is saved from the
    forward pass but ``x``).

    Parameters
    ----------
    grad_y : array, shape and dtype of ``x``
        Gradient of the loss with respect to ``y = act(x + bias)``.
    x : array, float32 or float64, shape (..., c)
        The forward input, before the bias.
    bias : array, shape (c,)
        The forward bias.
    activation : str
        As in :func:`bias_activation`.
    negative_slope : float
        Slope of ``leaky_relu`` for negative inputs.

    Returns
    -------
    grad_x : array
        ``grad_y * act'(x + bias)``, shape of ``x``.
    grad_bias : array
        ``grad_x`` summed over every axis but the last, shape (c,).

    Raises
    ------
    ValueError
        As :func:`bias_activation`, or ``grad_y`` not of ``x``'s shape.
    TypeError
        As :func:`bias_activation`, or ``grad_y`` not of ``x``'s dtype.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> x = np.array([[-1.0, 0.5], [2.0, -3.0]])
    >>> gx, gb = gk.kernels.bias_activation_backward(np.ones_like(x), x, np.zeros(2), "relu")
    >>> gx
    array([[0., 1.],
           [1., 0.]])
    >>> gb
    array([1., 1.])
    """
    op = "gk.kernels.bias_activation_backward"
    _check_activation(op, activation)
    names = ("grad_y", "x", "bias")
    backend, (grad_y, x, bias) = place(op, (grad_y, x, bias), names, (FLOATS,) * 3)
    _check(op, x, bias)
    check_like(op, grad_y, "grad_y", x, "x")
    return backend.kernel("bias_activation_backward")(
        grad_y, x, bias, activation, float(negative_slope)
    )


for _op, _arg in (
    ("gk.kernels.bias_activation", "x"),
    ("gk.kernels.bias_activation_backward", "grad_y"),
):
    declare(_op, checked(_op, _arg, FLOATS))
