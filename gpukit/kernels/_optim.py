"""Fused, in-place optimizer updates: SGD (momentum, Nesterov) and Adam/AdamW."""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from .._dispatch import operation
from .._dispatch.capabilities import checked, declare
from .._dispatch.inputs import on_device
from .._runtime import plans as _plans
from .._select.selection import active
from ._checks import (
    FLOATS,
    OWNDATA,
    PLANS,
    UPDATABLE,
    bind,
    check_flag,
    check_like,
    check_range,
    check_updatable,
    place,
)

_SGD = "gk.kernels.sgd_update"
_ADAM = "gk.kernels.adam_update"
_INF = math.inf
_ndarray = np.ndarray


@operation("gk.kernels.sgd_update", inplace=True)
def sgd_update(
    param: Any,
    grad: Any,
    momentum_buffer: Any = None,
    *,
    lr: float,
    momentum: float = 0.0,
    dampening: float = 0.0,
    nesterov: bool = False,
    weight_decay: float = 0.0,
    first_step: bool = False,
) -> None:
    """One ``torch.optim.SGD`` step on ``param`` (and its momentum buffer), in place.

    With ``d = grad + weight_decay * param``: ``buf = d`` on the first step, else
    ``buf = momentum * buf + (1 - dampening) * d``; the step is ``d + momentum * buf``
    (Nesterov) or ``buf``; ``param -= lr * step``. Without momentum, ``param -= lr * d``.
    One pass over param, grad and buffer. Everything is checked and allocated before
    the first write, so a call that raises (an out-of-memory failure included) leaves
    ``param`` and the buffer unchanged; it is never re-run automatically.

    Parameters
    ----------
    param : array, float32 or float64, C-contiguous
        Updated in place.
    grad : array, shape and dtype of ``param``
        Its gradient.
    momentum_buffer : array, shape and dtype of ``param``, optional
        Updated in place; required when ``momentum != 0``.
    lr : float
        Learning rate (>= 0).
    momentum, dampening, weight_decay : float
        As in ``torch.optim.SGD`` (each >= 0).
    nesterov : bool
        Nesterov momentum (needs ``momentum > 0`` and ``dampening == 0``).
    first_step : bool
        Whether the buffer is to be initialised with this step's gradient.

    Returns
    -------
    None

    Raises
    ------
    ValueError
        A negative or non-finite hyper-parameter, Nesterov without momentum or with
        dampening, a missing buffer, mismatched shapes, a ``param``/buffer that is not a
        writeable C-contiguous array of the backend where the update runs, or arrays
        that overlap in memory.
    TypeError
        An array not float32/float64 or not of ``param``'s dtype, a hyper-parameter
        that is not a real number, or a flag that is not a bool.
    OutOfMemoryError
        Memory ran out; nothing was written.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> p, buf = np.array([1.0, 2.0]), np.zeros(2)
    >>> gk.kernels.sgd_update(p, np.array([1.0, -1.0]), buf, lr=0.5, momentum=0.9,
    ...                       first_step=True)
    >>> p, buf
    (array([0.5, 2.5]), array([ 1., -1.]))
    """
    op = _SGD
    # finite non-negative Python floats and bools, the common case, tested directly (a
    # call per check costs more than a small parameter's update); anything else is
    # converted by the checks, or refused
    if not (
        type(lr) is type(momentum) is type(dampening) is type(weight_decay) is float
        and 0.0 <= lr < _INF
        and 0.0 <= momentum < _INF
        and 0.0 <= dampening < _INF
        and 0.0 <= weight_decay < _INF
    ):
        lr = check_range(op, lr, "lr", 0.0)
        momentum = check_range(op, momentum, "momentum", 0.0)
        dampening = check_range(op, dampening, "dampening", 0.0)
        weight_decay = check_range(op, weight_decay, "weight_decay", 0.0)
    if type(nesterov) is not bool:
        nesterov = check_flag(op, nesterov, "nesterov")
    if type(first_step) is not bool:
        first_step = check_flag(op, first_step, "first_step")
    if nesterov and (momentum <= 0 or dampening != 0):
        raise ValueError(
            f"{op}: Nesterov momentum requires momentum > 0 and dampening == 0, got "
            f"momentum={momentum}, dampening={dampening}"
        )
    if momentum and momentum_buffer is None:
        raise ValueError(f"{op}: momentum_buffer is required when momentum != 0")
    buf = momentum_buffer if momentum else None
    arrays = (param, grad, buf)
    try:
        key = (
            op, active(), type(param), param.dtype, param.shape, type(grad), grad.dtype,
            grad.shape, type(buf), None if buf is None else (buf.dtype, buf.shape),
        )  # fmt: skip
        run = PLANS[key]
    except KeyError:
        run, key = on_device(PLANS, key, arrays)
        if run is None:
            run, arrays = _plan_sgd(key, arrays)
    except AttributeError:  # not keyable: a list
        run, arrays = _plan_sgd(None, arrays)
    param, grad, buf = arrays
    if not (
        type(param) is type(grad) is _ndarray
        and param is not grad
        and param.flags.num & UPDATABLE == UPDATABLE
        and grad.flags.num & OWNDATA
        and (
            buf is None
            or (
                type(buf) is _ndarray
                and buf is not param
                and buf is not grad
                and buf.flags.num & UPDATABLE == UPDATABLE
            )
        )
    ):  # not the common case of check_updatable
        check_updatable(op, {"param": param, "momentum_buffer": buf}, {"grad": grad})
    run(param, grad, buf, lr, momentum, dampening, nesterov, weight_decay, first_step)


def _plan_sgd(key: Any, arrays: tuple[Any, ...]) -> tuple[Any, Any]:
    """:func:`sgd_update`'s checks of dtypes, shapes and placement: its kernel (kept under
    ``key``) and arrays."""
    since, op = _plans.generation(), _SGD
    backend, placed = place(
        op,
        arrays,
        ("param", "grad", "momentum_buffer"),
        (FLOATS,) * 3,
        inplace=("param", "momentum_buffer"),
        optional=("momentum_buffer",),
    )
    param, grad, buf = placed
    check_like(op, grad, "grad", param, "param")
    if buf is not None:
        check_like(op, buf, "momentum_buffer", param, "param")
    args = (*placed, 0.0, 0.0, 0.0, False, 0.0, False)
    return bind(key, since, backend, "sgd_update", arrays, placed, args), placed


@operation("gk.kernels.adam_update", inplace=True)
def adam_update(
    param: Any,
    grad: Any,
    exp_avg: Any,
    exp_avg_sq: Any,
    *,
    step: int,
    lr: float,
    beta1: float = 0.9,
    beta2: float = 0.999,
    eps: float = 1e-8,
    weight_decay: float = 0.0,
    decoupled: bool = False,
) -> None:
    """One ``torch.optim.Adam`` step (``AdamW`` when ``decoupled``), in place.

    ``exp_avg = beta1 * exp_avg + (1 - beta1) * g``,
    ``exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g**2``,
    ``param -= lr / (1 - beta1**step) * exp_avg / (sqrt(exp_avg_sq / (1 - beta2**step)) + eps)``,
    where ``g = grad + weight_decay * param`` (Adam) or, decoupled, ``g = grad`` and
    ``param *= 1 - lr * weight_decay`` first (AdamW). One pass over the four arrays.
    Everything is checked and allocated before the first write, so a call that raises
    (an out-of-memory failure included) leaves all three updated arrays unchanged; it is
    never re-run automatically.

    Parameters
    ----------
    param : array, float32 or float64, C-contiguous
        Updated in place.
    grad : array, shape and dtype of ``param``
        Its gradient.
    exp_avg, exp_avg_sq : arrays, shape and dtype of ``param``, C-contiguous
        First and second moment estimates, updated in place (zeros before step 1).
    step : int
        The 1-based count of this step, for the bias correction.
    lr, beta1, beta2, eps, weight_decay : float
        As in ``torch.optim.Adam``: ``lr, eps, weight_decay >= 0``, ``0 <= beta < 1``.
    decoupled : bool
        Decoupled weight decay (AdamW) instead of L2 added to the gradient.

    Returns
    -------
    None

    Raises
    ------
    ValueError
        A hyper-parameter out of range or not finite, ``step < 1``, mismatched shapes,
        an updated array that is not a writeable C-contiguous array of the backend where
        it runs, or arrays that overlap in memory (``adam_update(p, g, m, m)``).
    TypeError
        An array not float32/float64 or not of ``param``'s dtype, ``step`` not an
        integer, a hyper-parameter that is not a real number, or ``decoupled`` not a
        bool.
    OutOfMemoryError
        Memory ran out; nothing was written.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> p, m, v = np.array([1.0, 2.0]), np.zeros(2), np.zeros(2)
    >>> gk.kernels.adam_update(p, np.array([0.5, -0.5]), m, v, step=1, lr=0.1)
    >>> p.round(6)
    array([0.9, 2.1])
    """
    op = _ADAM
    if type(step) is not int:  # a Python int, the common case, needs no conversion
        try:
            if isinstance(step, bool):
                raise TypeError
            step = operator.index(step)
        except TypeError:
            raise TypeError(f"{op}: step must be an integer >= 1, got {step!r}") from None
    if step < 1:
        raise ValueError(
            f"{op}: step must be an integer >= 1 (1-based, after increment), got {step}"
        )
    # as in sgd_update: Python floats in range tested directly, anything else checked
    if not (
        type(lr) is type(beta1) is type(beta2) is type(eps) is type(weight_decay) is float
        and 0.0 <= lr < _INF
        and 0.0 <= beta1 < 1.0
        and 0.0 <= beta2 < 1.0
        and 0.0 <= eps < _INF
        and 0.0 <= weight_decay < _INF
    ):
        lr = check_range(op, lr, "lr", 0.0)
        beta1 = check_range(op, beta1, "beta1", 0.0, 1.0)
        beta2 = check_range(op, beta2, "beta2", 0.0, 1.0)
        eps = check_range(op, eps, "eps", 0.0)
        weight_decay = check_range(op, weight_decay, "weight_decay", 0.0)
    if type(decoupled) is not bool:
        decoupled = check_flag(op, decoupled, "decoupled")
    arrays = (param, grad, exp_avg, exp_avg_sq)
    try:
        key = (
            op, active(), type(param), param.dtype, param.shape, type(grad), grad.dtype,
            grad.shape, type(exp_avg), exp_avg.dtype, exp_avg.shape, type(exp_avg_sq),
            exp_avg_sq.dtype, exp_avg_sq.shape,
        )  # fmt: skip
        run = PLANS[key]
    except KeyError:
        run, key = on_device(PLANS, key, arrays)
        if run is None:
            run, arrays = _plan_adam(key, arrays)
    except AttributeError:  # not keyable: a list
        run, arrays = _plan_adam(None, arrays)
    param, grad, m, v = arrays
    if not (
        type(param) is type(grad) is type(m) is type(v) is _ndarray
        and param is not grad
        and param is not m
        and param is not v
        and grad is not m
        and grad is not v
        and m is not v
        and param.flags.num & UPDATABLE == UPDATABLE
        and m.flags.num & UPDATABLE == UPDATABLE
        and v.flags.num & UPDATABLE == UPDATABLE
        and grad.flags.num & OWNDATA
    ):  # not the common case of check_updatable
        check_updatable(op, {"param": param, "exp_avg": m, "exp_avg_sq": v}, {"grad": grad})
    run(param, grad, m, v, step, lr, beta1, beta2, eps, weight_decay, decoupled)


def _plan_adam(key: Any, arrays: tuple[Any, ...]) -> tuple[Any, Any]:
    """:func:`adam_update`'s checks of dtypes, shapes and placement: its kernel (kept under
    ``key``) and arrays."""
    since, op = _plans.generation(), _ADAM
    backend, placed = place(
        op,
        arrays,
        ("param", "grad", "exp_avg", "exp_avg_sq"),
        (FLOATS,) * 4,
        inplace=("param", "exp_avg", "exp_avg_sq"),
    )
    param, grad, m, v = placed
    check_like(op, grad, "grad", param, "param")
    check_like(op, m, "exp_avg", param, "param")
    check_like(op, v, "exp_avg_sq", param, "param")
    args = (*placed, 1, 0.0, 0.0, 0.0, 0.0, 0.0, False)
    return bind(key, since, backend, "adam_update", arrays, placed, args), placed


# host data given to a device backend is refused: a copy of it would be updated instead
for _op in ("gk.kernels.sgd_update", "gk.kernels.adam_update"):
    declare(_op, checked(_op, "param", FLOATS), where={"host": ValueError})
