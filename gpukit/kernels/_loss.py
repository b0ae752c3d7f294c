"""Softmax cross-entropy, forward and backward, row-wise and numerically stable."""

from __future__ import annotations

from typing import Any

from .._dispatch import operation
from .._dispatch.capabilities import checked, declare
from .._dispatch.inputs import on_device
from .._runtime import plans as _plans
from .._select.selection import active
from ._checks import FLOATS, INTEGERS, PLANS, bind, check_labels, check_range, place

_FORWARD = "gk.kernels.softmax_cross_entropy"
_BACKWARD = "gk.kernels.softmax_cross_entropy_backward"


def _check_logits(op: str, x: Any, name: str) -> None:
    if x.ndim != 2 or x.shape[1] < 1:
        raise ValueError(
            f"{op}: {name} must have shape (n, c) with c >= 1 classes, got {tuple(x.shape)}"
        )


def check_grad_loss(op: str, grad_loss: Any, probs: Any) -> None:
    """``grad_loss`` has one entry per row of ``probs`` and its dtype."""
    n = probs.shape[0]
    if tuple(grad_loss.shape) != (n,):
        raise ValueError(
            f"{op}: grad_loss must have shape ({n},) (one per row of probs), got shape "
            f"{tuple(grad_loss.shape)}"
        )
    if grad_loss.dtype != probs.dtype:
        raise TypeError(
            f"{op}: grad_loss has dtype {grad_loss.dtype} but probs has dtype {probs.dtype}; "
            "they must match"
        )


@operation("gk.kernels.softmax_cross_entropy")
def softmax_cross_entropy(
    logits: Any, labels: Any, *, label_smoothing: float = 0.0
) -> tuple[Any, Any]:
    """Per-row cross-entropy of ``softmax(logits)`` against integer labels, and the softmax.

    Max-subtracted, so no logit overflows ``exp``. With label smoothing ``e`` the
    target is ``(1 - e) * one_hot + e / c``, as in ``torch.nn.functional.cross_entropy``.
    A label outside ``[0, c)`` gives a NaN loss for its row (checking would cost a
    device synchronisation; out-of-range labels are never read past the row).
    A ``-inf`` (masked) logit has probability 0; with ``label_smoothing > 0`` its
    row's loss is ``+inf`` and the gradient stays finite, as in PyTorch.

    Parameters
    ----------
    logits : array, float32 or float64, shape (n, c)
        Unnormalised scores; any number of classes ``c >= 1``.
    labels : array of integers, shape (n,)
        The class of each row.
    label_smoothing : float
        In ``[0, 1]``.

    Returns
    -------
    loss : array, shape (n,)
        ``-sum_j target_ij * log softmax(logits)_ij``, dtype of ``logits``.
    probs : array, shape (n, c)
        ``softmax(logits)`` (keep it for :func:`softmax_cross_entropy_backward`).

    Raises
    ------
    ValueError
        ``logits`` not 2-D with at least one class, ``labels`` not of shape (n,), or
        ``label_smoothing`` outside [0, 1].
    TypeError
        ``logits`` not float32/float64, ``labels`` not of an integer dtype, or
        ``label_smoothing`` not a number.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> loss, probs = gk.kernels.softmax_cross_entropy(np.log([[1.0, 3.0]]), np.array([1]))
    >>> loss.round(6), probs
    (array([0.287682]), array([[0.25, 0.75]]))
    """
    smoothing = check_range(_FORWARD, label_smoothing, "label_smoothing", 0.0, 1.0, hi_open=False)
    try:
        key = (
            _FORWARD, active(), type(logits), logits.dtype, logits.shape, type(labels),
            labels.dtype, labels.shape,
        )  # fmt: skip
        run = PLANS[key]
    except KeyError:
        run, key = on_device(PLANS, key, (logits, labels))
        if run is None:
            run, logits, labels = _plan_forward(key, logits, labels, smoothing)
    except AttributeError:  # not keyable: a list
        run, logits, labels = _plan_forward(None, logits, labels, smoothing)
    return run(logits, labels, smoothing)


def _plan_forward(key: Any, logits: Any, labels: Any, smoothing: float) -> tuple[Any, Any, Any]:
    """:func:`softmax_cross_entropy`'s checks and placement: its kernel (kept under
    ``key``) and arrays."""
    since, op, given = _plans.generation(), _FORWARD, (logits, labels)
    backend, placed = place(op, given, ("logits", "labels"), (FLOATS, INTEGERS))
    logits, labels = placed
    _check_logits(op, logits, "logits")
    check_labels(op, labels, logits.shape[0])
    args = (logits, labels, smoothing)
    return bind(key, since, backend, "softmax_cross_entropy", given, placed, args), *placed


@operation("gk.kernels.softmax_cross_entropy_backward")
def softmax_cross_entropy_backward(
    probs: Any, labels: Any, grad_loss: Any, *, label_smoothing: float = 0.0
) -> Any:
    """Gradient of the per-row losses with respect to the logits, in one pass.

    ``grad_logits[i, j] = grad_loss[i] * (probs[i, j] - target[i, j])``; rows with an
    out-of-range label get NaN.

    Parameters
    ----------
    probs : array, float32 or float64, shape (n, c)
        The softmax returned by :func:`softmax_cross_entropy`.
    labels : array of integers, shape (n,)
        The labels given to the forward pass.
    grad_loss : array, shape (n,), dtype of ``probs``
        Gradient with respect to each row's loss (``1/n`` each for a mean).
    label_smoothing : float
        As in the forward pass.

    Returns
    -------
    array, shape (n, c)
        Gradient with respect to the logits.

    Raises
    ------
    ValueError
        As :func:`softmax_cross_entropy`, or ``grad_loss`` not of shape (n,).
    TypeError
        As :func:`softmax_cross_entropy`, or ``grad_loss`` not of the dtype of ``probs``.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> probs = np.array([[0.25, 0.75]])
    >>> gk.kernels.softmax_cross_entropy_backward(probs, np.array([1]), np.array([1.0]))
    array([[ 0.25, -0.25]])
    """
    smoothing = check_range(_BACKWARD, label_smoothing, "label_smoothing", 0.0, 1.0, hi_open=False)
    arrays = (probs, labels, grad_loss)
    try:
        key = (
            _BACKWARD, active(), type(probs), probs.dtype, probs.shape, type(labels),
            labels.dtype, labels.shape, type(grad_loss), grad_loss.dtype, grad_loss.shape,
        )  # fmt: skip
        run = PLANS[key]
    except KeyError:
        run, key = on_device(PLANS, key, arrays)
        if run is None:
            run, arrays = _plan_backward(key, arrays, smoothing)
    except AttributeError:  # not keyable: a list
        run, arrays = _plan_backward(None, arrays, smoothing)
    return run(*arrays, smoothing)


def _plan_backward(key: Any, arrays: tuple[Any, ...], smoothing: float) -> tuple[Any, Any]:
    """:func:`softmax_cross_entropy_backward`'s checks and placement: its kernel (kept
    under ``key``) and arrays."""
    since, op = _plans.generation(), _BACKWARD
    names = ("probs", "labels", "grad_loss")
    backend, placed = place(op, arrays, names, (FLOATS, INTEGERS, FLOATS))
    probs, labels, grad_loss = placed
    _check_logits(op, probs, "probs")
    check_labels(op, labels, probs.shape[0])
    check_grad_loss(op, grad_loss, probs)
    args = (*placed, smoothing)
    return bind(key, since, backend, "softmax_cross_entropy_backward", arrays, placed, args), placed


for _op, _arg in (
    ("gk.kernels.softmax_cross_entropy", "logits"),
    ("gk.kernels.softmax_cross_entropy_backward", "probs"),
):
    declare(_op, checked(_op, _arg, FLOATS))
