"""Optimizer updates and the non-finite flag with their per-step values read from the
device, for a training step captured as a CUDA graph (gpukit/nn/graphed.py).

A captured kernel's scalar arguments are baked into the graph, so what changes from one
step to the next -- the learning rate (schedulers), Adam's step count and its bias
corrections, the serial that numbers a checked step -- lives in device memory: a
``clock`` (``float64[2]``: learning rate, step count) per flat buffer, a serial (0-d
``int64``). One single-thread kernel advances the clock, unless the device's status
holds an error (the update is then skipped and the step not counted, as
``gk.optim`` takes the count back on the host), and writes the update's step-dependent
scalars; the update is the same ``ElementwiseKernel`` as ``adam_update`` /
``sgd_update`` (``_elementwise.py``), given those scalars as 0-d device arrays, which
CuPy broadcasts and reads from memory at each replay.
"""

from __future__ import annotations

from functools import cache

import cupy
import numpy as np

from . import _elementwise

__all__ = ["adam_update_graphed", "flag_nonfinite_graphed", "sgd_update_graphed"]


@cache
def _advance() -> cupy.ElementwiseKernel:
    """One thread: count the step where the status holds no error, and the scalars of the
    update: Adam's ``lr / (1 - beta1^t)``, ``sqrt(1 - beta2^t)``, ``1 - lr * wd``
    (AdamW's decay, 1 for Adam), or SGD's ``lr`` (``adam`` 0)."""
    return cupy.ElementwiseKernel(
        "raw int64 status, float64 beta1, float64 beta2, float64 wd, int32 adam, int32 decoupled",
        "raw float64 clock, raw T scalars",
        """
    if (status[0] == 0) clock[1] += 1.0;
    const double lr = clock[0], t = clock[1];
    if (adam) {
      scalars[0] = (T)(lr / (1.0 - pow(beta1, t)));
      scalars[1] = (T)sqrt(1.0 - pow(beta2, t));
      scalars[2] = (T)(decoupled ? 1.0 - lr * wd : 1.0);
    } else {
      scalars[0] = (T)lr;
    }
    """,
        "gk_graphed_advance",
    )


def _scalars(param, clock, status, beta1, beta2, wd, adam: bool, decoupled: bool):
    scalars = cupy.empty(3, dtype=param.dtype)
    _advance()(
        status, beta1, beta2, wd, np.int32(adam), np.int32(decoupled), clock, scalars, size=1
    )
    return scalars


def adam_update_graphed(
    param, grad, exp_avg, exp_avg_sq, clock, beta1, beta2, eps, weight_decay, decoupled, status
):
    """``adam_update`` of step ``clock[1] + 1`` with learning rate ``clock[0]``."""
    with param.device:
        s = param.dtype.type
        sc = _scalars(param, clock, status, beta1, beta2, weight_decay, True, decoupled)
        _elementwise.adam(True)(
            grad,
            s(1.0 - beta1),
            s(beta2),
            s(1.0 - beta2),
            s(eps),
            s(0.0 if decoupled else weight_decay),
            sc[2],
            sc[0],
            sc[1],
            status,
            param,
            exp_avg,
            exp_avg_sq,
        )


def sgd_update_graphed(
    param, grad, momentum_buffer, clock, momentum, dampening, nesterov, weight_decay, status
):
    """``sgd_update`` (not a momentum buffer's first step) with learning rate ``clock[0]``."""
    with param.device:
        s = param.dtype.type
        lr = _scalars(param, clock, status, 0.0, 0.0, 0.0, False, False)[0]
        if momentum_buffer is None:
            _elementwise.sgd_plain(True)(grad, lr, s(weight_decay), status, param)
            return
        _elementwise.sgd_momentum(True)(
            grad,
            lr,
            s(momentum),
            s(1.0 - dampening),
            s(weight_decay),
            np.int32(nesterov),
            np.int32(0),
            status,
            param,
            momentum_buffer,
        )


def flag_nonfinite_graphed(value, status, serial) -> None:
    """``flag_nonfinite`` with the serial a 0-d ``int64`` device array."""
    with value.device:
        _elementwise.flag_nonfinite()(value, serial, status)
