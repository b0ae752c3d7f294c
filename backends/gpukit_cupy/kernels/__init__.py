"""CUDA implementations of ``gk.kernels`` on the cupy backend.

Each launcher takes the front-end's validated arguments, makes its inputs
C-contiguous, allocates outputs and launches templated kernels from the ``.cu``
files beside it (see ``gpukit.backend.kernels`` for the name expressions).
Nothing compiles at import: each source compiles on its first launch on a device.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import cupy
import numpy as np

from gpukit.backend.kernels import ACTIVATIONS

from ._launch import BLOCK, ctype, function, grid_1d, index, scalar, sm_count

__all__ = [
    "adam_update",
    "bias_activation",
    "bias_activation_backward",
    "matmul_tiled",
    "sgd_update",
    "softmax_cross_entropy",
    "softmax_cross_entropy_backward",
]


def _on_inputs_device(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Compile and launch on the device of the first argument, whatever is current."""

    @functools.wraps(fn)
    def wrapper(first, *args):
        with first.device:
            return fn(first, *args)

    return wrapper


_BIAS = "bias_activation.cu"
_OPTIM = "optimizers.cu"
_XENT = "softmax_xent.cu"


@_on_inputs_device
def bias_activation(x, bias, activation: str, negative_slope: float):
    x = cupy.ascontiguousarray(x)
    bias = cupy.ascontiguousarray(bias)
    y = cupy.empty_like(x)
    if x.size:
        kernel = function(
            _BIAS, f"bias_act_forward<{ctype(x.dtype)}, {ACTIVATIONS.index(activation)}>"
        )
        kernel(
            grid_1d(x.size),
            (BLOCK,),
            (x, bias, y, index(x.size), index(bias.size), scalar(x.dtype, negative_slope)),
        )
    return y


def _backward_shape(rows: int, c: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Grid and block of the backward kernel: min(32, c) columns by 256/that rows."""
    bx = min(32, 1 << (c - 1).bit_length())
    by = BLOCK // bx
    gx = -(-c // bx)
    gy = max(1, min(-(-rows // by), (sm_count() * 8) // gx, 1024))
    return (gx, gy), (bx, by)


@_on_inputs_device
def bias_activation_backward(grad_y, x, bias, activation: str, negative_slope: float):
    grad_y = cupy.ascontiguousarray(grad_y)
    x = cupy.ascontiguousarray(x)
    bias = cupy.ascontiguousarray(bias)
    c = bias.size
    rows = x.size // c
    grad_x = cupy.empty_like(x)
    grad_bias = cupy.empty_like(bias)
    if rows == 0:
        grad_bias.fill(0)
        return grad_x, grad_bias
    t = ctype(x.dtype)
    grid, block = _backward_shape(rows, c)
    partial = cupy.empty((grid[1], c), dtype=x.dtype)
    kernel = function(_BIAS, f"bias_act_backward<{t}, {ACTIVATIONS.index(activation)}>")
    kernel(
        grid,
        block,
        (grad_y, x, bias, grad_x, partial, index(rows), index(c), scalar(x.dtype, negative_slope)),
        shared_mem=block[0] * block[1] * x.dtype.itemsize,
    )
    function(_BIAS, f"sum_rows<{t}>")(
        grid_1d(c), (BLOCK,), (partial, grad_bias, index(grid[1]), index(c))
    )
    return grad_x, grad_bias


@_on_inputs_device
def sgd_update(
    param, grad, momentum_buffer, lr, momentum, dampening, nesterov, weight_decay, first_step
):
    if not param.size:
        return
    grad = cupy.ascontiguousarray(grad)
    has_momentum = momentum_buffer is not None
    kernel = function(
        _OPTIM, f"sgd_update<{ctype(param.dtype)}, {'true' if has_momentum else 'false'}>"
    )
    s = param.dtype.type
    kernel(
        grid_1d(param.size),
        (BLOCK,),
        (
            param,
            grad,
            momentum_buffer if has_momentum else param,  # never read without momentum
            index(param.size),
            s(lr),
            s(momentum),
            s(1.0 - dampening),
            s(weight_decay),
            np.int32(nesterov),
            np.int32(first_step),
        ),
    )


@_on_inputs_device
def adam_update(
    param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay, decoupled
):
    if not param.size:
        return
    grad = cupy.ascontiguousarray(grad)
    s = param.dtype.type
    l2 = 0.0 if decoupled else weight_decay
    decay = 1.0 - lr * weight_decay if decoupled else 1.0
    kernel = function(_OPTIM, f"adam_update<{ctype(param.dtype)}>")
    kernel(
        grid_1d(param.size),
        (BLOCK,),
        (
            param,
            grad,
            exp_avg,
            exp_avg_sq,
            index(param.size),
            s(1.0 - beta1),
            s(beta2),
            s(1.0 - beta2),
            s(eps),
            s(l2),
            s(decay),
            s(lr / (1.0 - beta1**step)),
            s(math.sqrt(1.0 - beta2**step)),
        ),
    )


def _labels(labels):
    """Labels as int32 or int64 (the two instantiated label types), contiguous."""
    if labels.dtype not in (np.int32, np.int64):
        labels = labels.astype(np.int64)
    return cupy.ascontiguousarray(labels)


def _ltype(labels) -> str:
    return "int" if labels.dtype == np.int32 else "long long"


@_on_inputs_device
def softmax_cross_entropy(logits, labels, label_smoothing: float):
    logits = cupy.ascontiguousarray(logits)
    labels = _labels(labels)
    n, c = logits.shape
    loss = cupy.empty(n, dtype=logits.dtype)
    probs = cupy.empty_like(logits)
    if n:
        kernel = function(_XENT, f"softmax_xent_forward<{ctype(logits.dtype)}, {_ltype(labels)}>")
        kernel(
            (min(n, sm_count() * 16),),
            (BLOCK,),
            (
                logits,
                labels,
                loss,
                probs,
                index(n),
                index(c),
                scalar(logits.dtype, label_smoothing),
            ),
        )
    return loss, probs


@_on_inputs_device
def softmax_cross_entropy_backward(probs, labels, grad_loss, label_smoothing: float):
    probs = cupy.ascontiguousarray(probs)
    labels = _labels(labels)
    grad_loss = cupy.ascontiguousarray(grad_loss)
    n, c = probs.shape
    grad = cupy.empty_like(probs)
    if n:
        s = probs.dtype.type
        kernel = function(_XENT, f"softmax_xent_backward<{ctype(probs.dtype)}, {_ltype(labels)}>")
        kernel(
            grid_1d(n * c),
            (BLOCK,),
            (
                probs,
                labels,
                grad_loss,
                grad,
                index(n * c),
                index(c),
                s(1.0 - label_smoothing),
                s(label_smoothing / c),
            ),
        )
    return grad


# (BM, BN, BK, TM, TN): the big tile when the output has enough tiles to fill the GPU.
_BIG, _SMALL = (128, 128, 8, 8, 8), (64, 64, 8, 4, 4)


@_on_inputs_device
def matmul_tiled(a, b):
    a = cupy.ascontiguousarray(a)
    b = cupy.ascontiguousarray(b)
    (m, k), n = a.shape, b.shape[1]
    if k == 0:
        return cupy.zeros((m, n), dtype=np.float32)
    c = cupy.empty((m, n), dtype=np.float32)
    if c.size == 0:
        return c
    tiles = -(-m // 128) * -(-n // 128)
    bm, bn, bk, tm, tn = _BIG if tiles >= sm_count() else _SMALL
    kernel = function("matmul_tiled.cu", f"matmul_tiled<{bm}, {bn}, {bk}, {tm}, {tn}>")
    grid = (-(-n // bn), -(-m // bm))
    kernel(grid, ((bm // tm) * (bn // tn),), (a, b, c, np.int32(m), np.int32(n), np.int32(k)))
    return c
