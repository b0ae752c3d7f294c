"""Softmax cross-entropy, forward and backward, row-wise and numerically stable."""

from __future__ import annotations

from typing import Any

from .._memory import operation
from ._checks import check_float, check_labels, check_range, place


def _check_logits(x: Any, name: str) -> None:
    check_float(x, name)
    if x.ndim != 2 or x.shape[1] < 1:
        raise ValueError(f"{name} must have shape (n, c) with c >= 1 classes, got {tuple(x.shape)}")


@operation("gk.kernels.softmax_cross_entropy")
def softmax_cross_entropy(
    logits: Any, labels: Any, *, label_smoothing: float = 0.0
) -> tuple[Any, Any]:
    """Per-row cross-entropy of ``softmax(logits)`` against integer labels, and the softmax.

    Max-subtracted, so no logit overflows ``exp``. With label smoothing ``e`` the
    target is ``(1 - e) * one_hot + e / c``, as in ``torch.nn.functional.cross_entropy``.
    A label outside ``[0, c)`` gives a NaN loss for its row (checking would cost a
    device synchronisation; out-of-range labels are never read past the row).

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
        ``logits`` not 2-D float32/float64 with at least one class, ``labels`` not
        integer of shape (n,), or ``label_smoothing`` outside [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> loss, probs = gk.kernels.softmax_cross_entropy(np.log([[1.0, 3.0]]), np.array([1]))
    >>> loss.round(6), probs
    (array([0.287682]), array([[0.25, 0.75]]))
    """
    smoothing = check_range(label_smoothing, "label_smoothing", 0.0, 1.0, hi_open=False)
    backend, (logits, labels) = place((logits, labels), ("logits", "labels"))
    _check_logits(logits, "logits")
    check_labels(labels, logits.shape[0])
    return backend.kernel("softmax_cross_entropy")(logits, labels, smoothing)


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
        As :func:`softmax_cross_entropy`, or ``grad_loss`` not of shape (n,) and the
        dtype of ``probs``.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> probs = np.array([[0.25, 0.75]])
    >>> gk.kernels.softmax_cross_entropy_backward(probs, np.array([1]), np.array([1.0]))
    array([[ 0.25, -0.25]])
    """
    smoothing = check_range(label_smoothing, "label_smoothing", 0.0, 1.0, hi_open=False)
    names = ("probs", "labels", "grad_loss")
    backend, (probs, labels, grad_loss) = place((probs, labels, grad_loss), names)
    _check_logits(probs, "probs")
    n = probs.shape[0]
    check_labels(labels, n)
    if tuple(grad_loss.shape) != (n,) or grad_loss.dtype != probs.dtype:
        raise ValueError(
            f"grad_loss must have shape ({n},) and dtype {probs.dtype} (one per row of "
            f"probs), got shape {tuple(grad_loss.shape)} and dtype {grad_loss.dtype}"
        )
    return backend.kernel("softmax_cross_entropy_backward")(probs, labels, grad_loss, smoothing)
