"""CUDA implementations of ``gk.kernels`` on the cupy backend.

Each launcher takes the front-end's validated arguments and launches either one
of CuPy's own kernel types (``_elementwise``: ``ElementwiseKernel`` for the
elementwise and in-place operations; CuPy handles broadcasting, dtypes and strided
inputs) or, where a block's threads must cooperate through shared memory, a
templated ``RawModule`` kernel from the ``.cu`` files beside it (the bias + activation
backward pass with its column sums, the softmax cross-entropy rows, the tiled
matmul; see ``gpukit.backend.kernels`` for the name expressions). Nothing compiles at import:
each kernel compiles on its first launch on a device.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import cupy
import numpy as np

from gpukit.backend.kernels import ACTIVATIONS, FROM_OUTPUT

from ..memory import unpooled
from . import _elementwise
from ._graphed import adam_update_graphed as adam_update_graphed
from ._graphed import flag_nonfinite_graphed as flag_nonfinite_graphed
from ._graphed import sgd_update_graphed as sgd_update_graphed
from ._launch import BLOCK, ctype, current_device, function, index, scalar, sm_count

__all__ = [
    "activation",
    "activation_backward",
    "adam_update",
    "bias_activation",
    "bias_activation_backward",
    "flag_nonfinite",
    "matmul_tiled",
    "sgd_update",
    "softmax_cross_entropy",
    "softmax_cross_entropy_backward",
    "softmax_cross_entropy_train",
]


def _on_inputs_device(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Compile and launch on the device of the first argument, whatever is current."""

    @functools.wraps(fn)
    def wrapper(first, *args):
        # the memory's device id, as ndarray.device reads it, without making a Device;
        # asking which device is current costs less than switching to it
        device = first.data.device_id
        if device == current_device():
            return fn(first, *args)
        with cupy.cuda.Device(device):
            return fn(first, *args)

    return wrapper


_XENT = "softmax_xent.cu"
_BIAS_ACT = "bias_act.cu"


@_on_inputs_device
def bias_activation(x, bias, activation: str, negative_slope: float):
    return _elementwise.bias_act_forward(activation)(x, bias, x.dtype.type(negative_slope))


def _bind_bias_activation(x, bias, activation: str, negative_slope: float):
    """:func:`bias_activation` planned for arrays of this dtype (gpukit.kernels' plans): the
    kernel and the slope's type settled once. The arrays' device is current, as for
    :func:`matmul_tiled`."""
    kernel, s = _elementwise.bias_act_forward(activation), x.dtype.type

    def run(x, bias, activation, negative_slope):
        return kernel(x, bias, s(negative_slope))

    return run


bias_activation.bind = _bind_bias_activation


@_on_inputs_device
def activation(x, activation: str, negative_slope: float):
    return _elementwise.act_forward(activation)(x, x.dtype.type(negative_slope))


def _bind_activation(x, activation: str, negative_slope: float):
    """:func:`activation` planned for arrays of this dtype and this activation (gpukit.nn's
    plans, keyed by both and the slope): the kernel settled once, and the slope's scalar
    for the very slope object bound (-0.0 equals 0.0 but multiplies to another zero)."""
    kernel, real = _elementwise.act_forward(activation), x.dtype.type
    slope, s = negative_slope, real(negative_slope)

    @_on_inputs_device
    def run(x, activation, negative_slope):
        return kernel(x, s if negative_slope is slope else real(negative_slope))

    return run


activation.bind = _bind_activation


def _gradient_kernel(activation: str, of_output: bool):
    """The kernel of :func:`activation_backward`; None for the identity, whose input
    gradient is ``grad_y`` itself."""
    if of_output and activation not in FROM_OUTPUT:  # as the NumPy reference refuses it
        raise ValueError(f"the derivative of {activation!r} is not a function of its output")
    return None if activation == "identity" else _elementwise.act_backward(activation, of_output)


@_on_inputs_device
def activation_backward(grad_y, v, activation: str, negative_slope: float, of_output: bool):
    kernel = _gradient_kernel(activation, of_output)
    return grad_y if kernel is None else kernel(grad_y, v, v.dtype.type(negative_slope))


def _bind_activation_backward(grad_y, v, activation: str, negative_slope: float, of_output: bool):
    """:func:`activation_backward` planned as :func:`activation` is (for these dtypes,
    this activation and ``of_output``)."""
    kernel, real = _gradient_kernel(activation, of_output), v.dtype.type
    slope, s = negative_slope, real(negative_slope)
    if kernel is None:
        return _identity_gradient

    @_on_inputs_device
    def run(grad_y, v, activation, negative_slope, of_output):
        return kernel(grad_y, v, s if negative_slope is slope else real(negative_slope))

    return run


def _identity_gradient(grad_y, v, activation, negative_slope, of_output):
    """The identity's input gradient, ``grad_y`` itself: nothing launched, on no device."""
    return grad_y


activation_backward.bind = _bind_activation_backward


@_on_inputs_device
def bias_activation_backward(
    grad_y, x, bias, activation: str, negative_slope: float, grad_bias_out=None, output=None
):
    args = (grad_y, x, bias, activation, negative_slope, grad_bias_out, output)
    return _bind_bias_activation_backward(*args)(*args)


def _bind_bias_activation_backward(
    grad_y, x, bias, activation: str, negative_slope: float, grad_bias_out=None, output=None
):
    """:func:`bias_activation_backward` planned for arrays of these shapes and dtypes
    (gpukit.kernels' plans): the kernel compiled for the current device and the launch's
    geometry, settled once. The arrays' device is current, as for :func:`matmul_tiled`."""
    if activation == "identity":
        return _identity_backward
    # output (an activation of FROM_OUTPUT only): the derivative is read from it, in x's place
    of_output = output is not None
    dtype = (output if of_output else x).dtype
    c = bias.size
    rows = x.size // c if c else 0
    launch = None
    if c:
        kernel = function(
            _BIAS_ACT,
            f"bias_act_backward<{ctype(dtype)}, {ACTIVATIONS.index(activation)}, {int(of_output)}>",
        )
        strips = min(-(-c // 32), sm_count() * 16)
        chunks = _row_chunks(strips, rows)
        grid, dims = (strips, chunks), (index(rows), index(c))
        launch = kernel, grid, dims, chunks

    def run(grad_y, x, bias, activation, negative_slope, grad_bias_out=None, output=None):
        grad_y = cupy.ascontiguousarray(grad_y)
        x = cupy.ascontiguousarray(x if output is None else output)
        bias = cupy.ascontiguousarray(bias)
        grad_x = cupy.empty(x.shape, dtype=dtype)
        # grad_bias_out: a slot of an optimizer's flat gradient buffer, written in place
        grad_bias = cupy.empty(bias.shape, dtype) if grad_bias_out is None else grad_bias_out
        if launch is not None:
            kernel, grid, dims, chunks = launch
            part = cupy.empty((chunks, c), np.float64) if chunks > 1 else None
            kernel(
                grid,
                (BLOCK,),
                (grad_y, x, bias, grad_x, grad_bias, *dims, scalar(dtype, negative_slope),
                 part, _ticket() if chunks > 1 else None),
            )  # fmt: skip
        return grad_x, grad_bias

    return run


def _identity_backward(
    grad_y, x, bias, activation, negative_slope, grad_bias_out=None, output=None
):
    """grad_x is grad_y itself: only its column sums to make."""
    c = bias.size
    if not c:
        return grad_y, cupy.empty(0, x.dtype) if grad_bias_out is None else grad_bias_out
    return grad_y, grad_y.reshape(-1, c).sum(axis=0, out=grad_bias_out)


bias_activation_backward.bind = _bind_bias_activation_backward


def _row_chunks(strips: int, rows: int) -> int:
    """Chunks of rows for ``bias_act_backward``'s grid: enough blocks for two per
    multiprocessor, each chunk at least 64 rows (8 per warp). A block walks its rows one
    dependent load after another, so a few strips of many rows would keep most of the
    GPU idle (256 rows of 256 columns on 8 blocks took 17 us on an H200)."""
    return max(1, min(-(-rows // 64), (2 * sm_count()) // strips))


@_on_inputs_device
def sgd_update(
    param,
    grad,
    momentum_buffer,
    lr,
    momentum,
    dampening,
    nesterov,
    weight_decay,
    first_step,
    status=None,
):
    args = (param, grad, momentum_buffer, lr, momentum, dampening, nesterov, weight_decay)
    _bind_sgd_update(*args, first_step, status)(*args, first_step, status)


def _bind_sgd_update(
    param,
    grad,
    momentum_buffer,
    lr,
    momentum,
    dampening,
    nesterov,
    weight_decay,
    first_step,
    status=None,
):
    """:func:`sgd_update` planned for arrays like these (gpukit.kernels' plans, an
    optimizer's flat buffers): the kernel (plain or with momentum, guarded by a status
    buffer or not, as the arguments are) and the scalar type settled once. The arrays'
    device is current, as for :func:`matmul_tiled`."""
    s = param.dtype.type
    guarded = status is not None
    if momentum_buffer is None:
        plain = _elementwise.sgd_plain(guarded)

        def run(param, grad, momentum_buffer, lr, momentum, dampening, nesterov,
                weight_decay, first_step, status=None):  # fmt: skip
            if guarded:
                plain(grad, s(lr), s(weight_decay), status, param)
            else:
                plain(grad, s(lr), s(weight_decay), param)

        return run
    kernel = _elementwise.sgd_momentum(guarded)

    def run_momentum(param, grad, momentum_buffer, lr, momentum, dampening, nesterov,
                     weight_decay, first_step, status=None):  # fmt: skip
        guard = (status,) if guarded else ()
        kernel(
            grad,
            s(lr),
            s(momentum),
            s(1.0 - dampening),
            s(weight_decay),
            np.int32(nesterov),
            np.int32(first_step),
            *guard,
            param,
            momentum_buffer,
        )

    return run_momentum


sgd_update.bind = _bind_sgd_update


@_on_inputs_device
def adam_update(
    param,
    grad,
    exp_avg,
    exp_avg_sq,
    step,
    lr,
    beta1,
    beta2,
    eps,
    weight_decay,
    decoupled,
    status=None,
):
    args = (param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay)
    _bind_adam_update(*args, decoupled, status)(*args, decoupled, status)


def _bind_adam_update(
    param,
    grad,
    exp_avg,
    exp_avg_sq,
    step,
    lr,
    beta1,
    beta2,
    eps,
    weight_decay,
    decoupled,
    status=None,
):
    """:func:`adam_update` planned as :func:`sgd_update`."""
    s = param.dtype.type
    guarded = status is not None
    kernel = _elementwise.adam(guarded)

    def run(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
            decoupled, status=None):  # fmt: skip
        l2 = 0.0 if decoupled else weight_decay
        decay = 1.0 - lr * weight_decay if decoupled else 1.0
        guard = (status,) if guarded else ()
        kernel(
            grad,
            s(1.0 - beta1),
            s(beta2),
            s(1.0 - beta2),
            s(eps),
            s(l2),
            s(decay),
            s(lr / (1.0 - beta1**step)),
            s(math.sqrt(1.0 - beta2**step)),
            *guard,
            param,
            exp_avg,
            exp_avg_sq,
        )

    return run


adam_update.bind = _bind_adam_update


@_on_inputs_device
def flag_nonfinite(value, status, serial: int) -> None:
    """Record a non-finite ``value`` (0-d) in ``status`` (gpukit._runtime.device_status)."""
    _elementwise.flag_nonfinite()(value, np.int64(serial), status)


#: The label dtypes the kernels are instantiated for.
_LABELS = (np.dtype(np.int32), np.dtype(np.int64))


def _ltype(labels) -> str:
    """The kernels' label type for ``labels``: int32 ones as they are, any other integer
    dtype widened to int64 (the launchers' ``widen``)."""
    return "int" if labels.dtype == np.int32 else "long long"


@_on_inputs_device
def softmax_cross_entropy(logits, labels, label_smoothing: float, status=None, serial: int = 0):
    args = (logits, labels, label_smoothing, status, serial)
    return _bind_softmax_cross_entropy(*args)(*args)


def _bind_softmax_cross_entropy(logits, labels, label_smoothing, status=None, serial=0):
    """:func:`softmax_cross_entropy` planned for arrays of these shapes and dtypes
    (gpukit.kernels' plans): the kernel compiled for the current device and the launch's
    grid, settled once. The arrays' device is current, as for :func:`matmul_tiled`."""
    n, c = logits.shape
    dtype = logits.dtype
    widen = labels.dtype not in _LABELS  # to int64, decided once
    launch = None
    if n:
        kernel = function(_XENT, f"softmax_xent_forward<{ctype(dtype)}, {_ltype(labels)}>")
        launch = kernel, (min(n, sm_count() * 16),), (index(n), index(c))

    def run(logits, labels, label_smoothing, status=None, serial=0):
        logits = cupy.ascontiguousarray(logits)
        labels = cupy.ascontiguousarray(labels.astype(np.int64) if widen else labels)
        loss = cupy.empty(n, dtype=dtype)
        probs = cupy.empty((n, c), dtype=dtype)  # not empty_like: its order logic is Python
        if launch is not None:
            kernel, grid, dims = launch
            kernel(
                grid,
                (BLOCK,),
                (
                    logits,
                    labels,
                    loss,
                    probs,
                    *dims,
                    scalar(dtype, label_smoothing),
                    status,  # None: a null pointer, nothing flagged
                    int(serial),  # a Python int passes as long long (CuPy's CScalar)
                ),
            )
        return loss, probs

    return run


softmax_cross_entropy.bind = _bind_softmax_cross_entropy


#: Per (device, stream): the finished-block counter of softmax_xent_train and of a
#: row-split bias_act_backward, which each launch leaves at 0; launches on one stream run
#: one after another, so they share one.
_tickets: dict[tuple[int, int], Any] = {}


def _ticket():
    key = (current_device(), cupy.cuda.get_current_stream().ptr)
    found = _tickets.get(key)
    if found is None:
        # zeroed by a kernel, not uploaded: the first use may be inside a capture
        found = _tickets[key] = unpooled(lambda: cupy.zeros(1, dtype=np.uint32))
    return found


@_on_inputs_device
def softmax_cross_entropy_train(
    logits, labels, label_smoothing: float, reduction: str, status=None, serial: int = 0
):
    args = (logits, labels, label_smoothing, reduction, status, serial)
    return _bind_softmax_cross_entropy_train(*args)(*args)


def _bind_softmax_cross_entropy_train(
    logits, labels, label_smoothing: float, reduction: str, status=None, serial: int = 0
):
    """:func:`softmax_cross_entropy_train` planned for arrays of these shapes and dtypes and
    this reduction (gpukit.nn's plans): the kernel compiled for the current device, the
    launch's grid and the reduction's scalars, settled once. The arrays' device is
    current, as for :func:`matmul_tiled`."""
    n, c = logits.shape
    dtype = logits.dtype
    widen = labels.dtype not in _LABELS  # to int64, decided once
    # the loss object's smoothing, converted once (another value, or -0.0 for 0.0, anew)
    smoothing, smoothing_scalar = label_smoothing, scalar(dtype, label_smoothing)
    divisor = n if reduction == "mean" else 1
    launch = None
    if n:  # no rows: the empty mean is NaN, the empty sum 0
        name = f"softmax_xent_train<{ctype(dtype)}, {_ltype(labels)}>"
        scale = (scalar(dtype, 1.0 / divisor), index(divisor))
        launch = function(_XENT, name), (min(n, sm_count() * 16),), (index(n), index(c)), scale

    def run(logits, labels, label_smoothing, reduction, status=None, serial=0):
        logits = cupy.ascontiguousarray(logits)
        labels = cupy.ascontiguousarray(labels.astype(np.int64) if widen else labels)
        loss = cupy.empty((), dtype=dtype)
        grad = cupy.empty((n, c), dtype=dtype)
        if launch is None:
            loss.fill(np.nan if reduction == "mean" else 0)
            return loss, grad
        kernel, grid, dims, scale = launch
        row_loss = cupy.empty(n, dtype=dtype)
        kernel(
            grid,
            (BLOCK,),
            (
                logits,
                labels,
                row_loss,
                grad,
                loss,
                *dims,
                smoothing_scalar
                if label_smoothing is smoothing
                else scalar(dtype, label_smoothing),
                *scale,
                status,  # None: a null pointer, nothing flagged
                int(serial),  # a Python int passes as long long (CuPy's CScalar)
                _ticket(),
            ),
        )
        return loss, grad

    return run


softmax_cross_entropy_train.bind = _bind_softmax_cross_entropy_train


@_on_inputs_device
def softmax_cross_entropy_backward(probs, labels, grad_loss, label_smoothing: float):
    args = (probs, labels, grad_loss, label_smoothing)
    return _bind_softmax_cross_entropy_backward(*args)(*args)


def _bind_softmax_cross_entropy_backward(probs, labels, grad_loss, label_smoothing: float):
    """:func:`softmax_cross_entropy_backward` planned for arrays of these shapes and dtypes
    (gpukit.kernels' plans): the kernel, the scalar type and the row length settled once.
    The arrays' device is current, as for :func:`matmul_tiled`."""
    kernel, s, c = _elementwise.softmax_xent_backward(), probs.dtype.type, probs.shape[1]
    classes, divisor = np.int64(c), max(c, 1)  # no classes: nothing to scale

    def run(probs, labels, grad_loss, label_smoothing):
        return kernel(
            probs,
            labels[:, None],
            grad_loss[:, None],
            s(1.0 - label_smoothing),
            s(label_smoothing / divisor),
            classes,
        )

    return run


softmax_cross_entropy_backward.bind = _bind_softmax_cross_entropy_backward


# (BM, BN, BK, TM, TN), largest tile first, with the share of the multiprocessors its grid
# must fill: below it a smaller tile. A small output's few blocks each walk all of k one
# BK-deep step (a barrier and dependent loads) at a time, so the smaller tiles take
# 32-deep steps. On an H200 the 64x64x8 tile it replaced took 140 us for the MLP's
# 256x784 @ 784x256 and 32x32x32 took 48 (cuBLAS 37); 50 against 21 at 256x256x256
# (docs/benchmarks/2026-11-26-h200.md).
_TILES = (((128, 128, 8, 8, 8), 1.0), ((64, 64, 32, 4, 4), 0.5))
_SMALLEST = (32, 32, 32, 2, 2)


def _tile(m: int, n: int) -> tuple[int, int, int, int, int]:
    sms = sm_count()
    for tile, share in _TILES:
        if -(-m // tile[0]) * -(-n // tile[1]) >= share * sms:
            return tile
    return _SMALLEST


@_on_inputs_device
def matmul_tiled(a, b):
    return _bind_matmul_tiled(a, b)(a, b)


def _bind_matmul_tiled(a, b):
    """:func:`matmul_tiled` planned for operands of these shapes (gpukit.kernels' plans):
    the tile, the kernel compiled for the current device, the launch's geometry and
    dimensions, settled once. The operands' device is current (``gk.kernels``' operation
    makes it so; on a backend of several devices a plan's key names that device)."""
    (m, k), n = a.shape, b.shape[1]
    if k == 0:
        return lambda a, b: cupy.zeros((m, n), dtype=np.float32)
    if m * n == 0:
        return lambda a, b: cupy.empty((m, n), dtype=np.float32)
    bm, bn, bk, tm, tn = _tile(m, n)
    kernel = function("matmul_tiled.cu", f"matmul_tiled<{bm}, {bn}, {bk}, {tm}, {tn}>")
    grid, block = (-(-n // bn) * -(-m // bm),), ((bm // tm) * (bn // tn),)
    dims = (index(m), index(n), index(k))

    def run(a, b):
        c = cupy.empty((m, n), dtype=np.float32)
        kernel(grid, block, (cupy.ascontiguousarray(a), cupy.ascontiguousarray(b), c, *dims))
        return c

    return run


matmul_tiled.bind = _bind_matmul_tiled
