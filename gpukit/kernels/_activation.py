"""Fused bias + activation, forward and backward."""

from __future__ import annotations

from typing import Any

from .._dispatch import operation
from .._dispatch.capabilities import checked, declare
from .._dispatch.inputs import on_device
from .._host.activations import FROM_OUTPUT
from .._runtime import plans as _plans
from .._select.selection import active
from ..backend.kernels import ACTIVATIONS
from ._checks import FLOATS, PLANS, bind, check_like, place

_FORWARD = "gk.kernels.bias_activation"
_BACKWARD = "gk.kernels.bias_activation_backward"


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
    try:
        key = (
            _FORWARD, active(), type(x), x.dtype, x.shape, type(bias), bias.dtype, bias.shape,
            activation,
        )  # fmt: skip
        run = PLANS[key]
    except KeyError:
        run, key = on_device(PLANS, key, (x, bias))
        if run is None:
            run, x, bias = _plan_forward(key, x, bias, activation, negative_slope)
    except (AttributeError, TypeError):  # not keyable: a list, an unhashable activation
        run, x, bias = _plan_forward(None, x, bias, activation, negative_slope)
    return run(x, bias, activation, float(negative_slope))


def _plan_forward(key: Any, x: Any, bias: Any, activation: str, slope: Any) -> tuple[Any, Any, Any]:
    """:func:`bias_activation`'s checks and placement: its kernel (kept under ``key``) and
    arrays."""
    since, op = _plans.generation(), _FORWARD
    _check_activation(op, activation)
    backend, (px, pb) = place(op, (x, bias), ("x", "bias"), (FLOATS, FLOATS))
    _check(op, px, pb)
    run = bind(
        key, since, backend, "bias_activation", (x, bias), (px, pb), (px, pb, activation, slope)
    )
    return run, px, pb


@operation("gk.kernels.bias_activation_backward")
def bias_activation_backward(
    grad_y: Any,
    x: Any,
    bias: Any,
    activation: str,
    *,
    negative_slope: float = 0.01,
    output: Any = None,
) -> tuple[Any, Any]:
    """Gradients of :func:`bias_activation` in one pass over ``grad_y`` and ``x``.

    ``z = x + bias`` is recomputed inside the kernel, or, given the forward ``output``
    and an activation whose derivative is a function of its output, not at all.

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
    output : array, shape and dtype of ``x``, optional
        The forward result ``y = act(x + bias)``, as the caller kept it. For
        ``"identity"``, ``"relu"``, ``"sigmoid"`` and ``"tanh"`` the derivative is
        computed from it (``1``, ``y > 0``, ``y (1 - y)``, ``1 - y**2``, as PyTorch's
        autograd computes these from the output it saved): one read of ``y`` instead of
        ``x`` and ``bias``, and no exponential. For the other activations the derivative
        is not a function of ``y`` (GELU's and SiLU's are not one-to-one in it), so
        ``output`` is checked and then not used, the gradient coming from ``x`` as
        without it, as PyTorch's GELU backward ignores a saved output: code that passes
        ``y`` keeps working when a configuration switches the activation. From ``y``,
        sigmoid's and tanh's gradients carry ``y``'s rounding: where ``y`` rounds to
        1 (``z`` above about 17 for sigmoid, 9 for tanh, in float32) the gradient is 0,
        where from ``x`` it is the tiny true value. ReLU's gradient is the same from
        either (``y <= 0`` exactly where ``z <= 0``; a NaN passes ``grad_y``, as in
        PyTorch; ``grad_y * 0`` keeps the sign of ``grad_y``'s zero products, -0.0
        included).

    Returns
    -------
    grad_x : array
        ``grad_y * act'(x + bias)``, shape of ``x``. For ``"identity"``, ``grad_y``
        itself, not a copy (as PyTorch's autograd passes the gradient through, and
        :mod:`gpukit.nn`'s layers do): writing into one writes into the other.
    grad_bias : array
        ``grad_x`` summed over every axis but the last, shape (c,).

    Raises
    ------
    ValueError
        As :func:`bias_activation`, or ``grad_y`` or ``output`` not of ``x``'s shape.
    TypeError
        As :func:`bias_activation`, or ``grad_y`` or ``output`` not of ``x``'s dtype.

    See Also
    --------
    bias_activation : The forward pass, whose result is ``output``.
    gpukit.nn.Sigmoid, gpukit.nn.Tanh : Layers that keep their output for the backward pass.

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

    With the forward result kept, sigmoid's gradient is ``y (1 - y)``:

    >>> b = np.zeros(2)
    >>> y = gk.kernels.bias_activation(x, b, "sigmoid")
    >>> gx, gb = gk.kernels.bias_activation_backward(np.ones_like(x), x, b, "sigmoid", output=y)
    >>> bool(np.allclose(gx, y * (1 - y)))
    True
    """
    arrays = (grad_y, x, bias, output)
    try:
        key = (
            _BACKWARD, active(), type(grad_y), grad_y.dtype, grad_y.shape, type(x), x.dtype,
            x.shape, type(bias), bias.dtype, bias.shape, type(output),
            None if output is None else (output.dtype, output.shape), activation,
        )  # fmt: skip
        run = PLANS[key]
    except KeyError:
        run, key = on_device(PLANS, key, arrays)
        if run is None:
            run, arrays = _plan_backward(key, arrays, activation, negative_slope)
    except (AttributeError, TypeError):  # not keyable: a list, an unhashable activation
        run, arrays = _plan_backward(None, arrays, activation, negative_slope)
    grad_y, x, bias, output = arrays
    if output is not None and activation not in FROM_OUTPUT:
        output = None  # checked, then not used: see the docstring
    return run(grad_y, x, bias, activation, float(negative_slope), None, output)


def _plan_backward(
    key: Any, arrays: tuple[Any, ...], activation: str, slope: Any
) -> tuple[Any, Any]:
    """:func:`bias_activation_backward`'s checks and placement: its kernel (kept under
    ``key``) and arrays."""
    since, op = _plans.generation(), _BACKWARD
    _check_activation(op, activation)
    names = ("grad_y", "x", "bias", "output")
    backend, placed = place(op, arrays, names, (FLOATS,) * 4, optional=("output",))
    grad_y, x, bias, output = placed
    _check(op, x, bias)
    check_like(op, grad_y, "grad_y", x, "x")
    if output is not None:
        check_like(op, output, "output", x, "x")
        if activation not in FROM_OUTPUT:
            output = None
    args = (grad_y, x, bias, activation, slope, None, output)
    return bind(key, since, backend, "bias_activation_backward", arrays, placed, args), placed


for _op, _arg in (
    ("gk.kernels.bias_activation", "x"),
    ("gk.kernels.bias_activation_backward", "grad_y"),
):
    declare(_op, checked(_op, _arg, FLOATS))
