"""NumPy references of gpukit's custom kernels (``gk.kernels`` on the numpy backend).

Each function computes exactly what its CUDA twin in ``gpukit_cupy.kernels``
computes; the GPU tests compare the two. They are also the CPU implementation,
so they are written like careful hand-written NumPy: in-place ufuncs with
``out=``, one scratch array where one is needed, no needless temporaries.
Arguments arrive validated by the front-end (``gpukit.kernels``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from gpukit._host import native as _native
from gpukit._host import parallel as _parallel
from gpukit._host.activations import bias_activate, column_sums, gradient

from . import blas as _blas

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


def bias_activation(
    x: np.ndarray, bias: np.ndarray, activation: str, negative_slope: float
) -> np.ndarray:
    """Reference of :func:`gpukit.kernels.bias_activation`: ``act(x + bias)``."""
    return bias_activate(x, bias, np.empty_like(x, order="C"), activation, negative_slope)


def _bind_bias_activation(
    x: np.ndarray, bias: np.ndarray | None, activation: str, negative_slope: float
) -> Callable[..., np.ndarray]:
    """:func:`bias_activation` planned for arrays like these (gpukit.kernels' plans; a
    ``bias`` of None: gpukit.nn's activation layers): the compiled kernel bound once,
    with its split over the host threads (:func:`gpukit._host.native.plan_bias_act`)."""
    c = x.shape[-1] if x.ndim else 1
    planned = None
    # the compiled kernel reads c entries of the bias: a bias of another length (a layer's
    # replaced parameter) computes as NumPy adds, unplanned
    if type(x) is np.ndarray and (
        bias is None or (type(bias) is np.ndarray and bias.shape == (c,))
    ):
        rows = x.size // max(c, 1)
        planned = _native.plan_bias_act(rows, c, x.dtype, activation, bias is not None)
    if planned is None:
        return bias_activation
    shape, dtype, empty = x.shape, x.dtype, np.empty

    def run(x: np.ndarray, bias: np.ndarray, activation: str, negative_slope: float) -> Any:
        y = empty(shape, dtype)
        if planned(x, bias, y, negative_slope):
            return y
        return bias_activate(x, bias, y, activation, negative_slope)

    return run


bias_activation.bind = _bind_bias_activation  # type: ignore[attr-defined]


def bias_activation_backward(
    grad_y: np.ndarray,
    x: np.ndarray,
    bias: np.ndarray,
    activation: str,
    negative_slope: float,
    grad_bias_out: np.ndarray | None = None,
    output: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Reference of :func:`gpukit.kernels.bias_activation_backward`; the bias gradient
    in ``grad_bias_out`` when given (an optimizer's flat gradient buffer); the derivative
    from the forward ``output`` when given (an activation of ``FROM_OUTPUT`` only); the
    identity's ``grad_x`` is ``grad_y`` itself."""
    if activation == "identity":
        gz, gb = grad_y, column_sums(grad_y)
    elif output is None:
        gz, gb = gradient(grad_y, x, activation, negative_slope, bias=bias, want_bias=True)
    else:
        gz, gb = gradient(
            grad_y, output, activation, negative_slope, of_output=True, want_bias=True
        )
    if grad_bias_out is not None:
        np.copyto(grad_bias_out, gb)
        gb = grad_bias_out
    return gz, gb


def _bind_bias_activation_backward(
    grad_y: np.ndarray,
    x: np.ndarray,
    bias: np.ndarray,
    activation: str,
    negative_slope: float,
    grad_bias_out: np.ndarray | None = None,
    output: np.ndarray | None = None,
) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """:func:`bias_activation_backward` planned as :func:`_bind_bias_activation`."""
    v = x if output is None else output
    c = v.shape[-1]
    planned = None
    if activation == "identity":
        return _bind_identity_backward(grad_y, grad_bias_out)
    if (
        grad_bias_out is None
        and all(type(a) is np.ndarray for a in (grad_y, v, bias))
        and bias.shape == (c,)
    ):
        of_output = output is not None
        rows = v.size // max(c, 1)
        planned = _native.plan_bias_act_grad(rows, c, v.dtype, activation, of_output, not of_output)
    if planned is None:
        return bias_activation_backward
    shape, dtype, empty = v.shape, v.dtype, np.empty

    def run(
        grad_y: np.ndarray,
        x: np.ndarray,
        bias: np.ndarray,
        activation: str,
        negative_slope: float,
        grad_bias_out: None = None,
        output: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        gz = empty(shape, dtype)
        if output is None:
            gb = planned(grad_y, x, bias, gz, negative_slope)
        else:
            gb = planned(grad_y, output, None, gz, negative_slope)
        if gb is None:
            return bias_activation_backward(
                grad_y, x, bias, activation, negative_slope, None, output
            )
        return gz, gb

    return run


def _bind_identity_backward(
    grad_y: np.ndarray, grad_bias_out: np.ndarray | None
) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """The identity's backward planned: ``grad_y`` itself and its column sums, the
    compiled kernel given ``grad_y`` as its output too (it then only reads it)."""
    planned = None
    if grad_bias_out is None and type(grad_y) is np.ndarray and grad_y.ndim:
        c = grad_y.shape[-1]
        rows = grad_y.size // max(c, 1)
        planned = _native.plan_bias_act_grad(rows, c, grad_y.dtype, "identity", False, False)
    if planned is None:
        return bias_activation_backward

    def run(
        grad_y: np.ndarray,
        x: np.ndarray,
        bias: np.ndarray,
        activation: str,
        negative_slope: float,
        grad_bias_out: None = None,
        output: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        gb = planned(grad_y, grad_y, None, grad_y, negative_slope)
        if gb is None:  # not C-contiguous, read-only: the general path
            return bias_activation_backward(
                grad_y, x, bias, activation, negative_slope, None, output
            )
        return grad_y, gb

    return run


bias_activation_backward.bind = _bind_bias_activation_backward  # type: ignore[attr-defined]


def activation(x: np.ndarray, activation: str, negative_slope: float) -> np.ndarray:
    """Reference of the internal kernel ``activation`` (an activation layer's forward
    pass): ``act(x)``, a new C-contiguous array; :func:`bias_activation` without a bias."""
    return bias_activate(x, None, np.empty_like(x, order="C"), activation, negative_slope)


def activation_backward(
    grad_y: np.ndarray, v: np.ndarray, activation: str, negative_slope: float, of_output: bool
) -> np.ndarray:
    """Reference of the internal kernel ``activation_backward`` (an activation layer's
    backward pass): ``grad_y * act'(v)``, ``v`` the forward input, or its output where
    ``of_output`` (identity, relu, sigmoid and tanh only); :func:`bias_activation_backward`
    without a bias or its gradient. The identity's is ``grad_y`` itself."""
    if activation == "identity":
        return grad_y
    return gradient(grad_y, v, activation, negative_slope, of_output=of_output)[0]


#: Elements per round of an update, and the scratch blocks' size: large enough that a
#: round's Python cost is small against its memory traffic (a small layer's weight is one
#: round), small enough for the scratch to stay cheap (the measurements are in
#: docs/benchmarks/changelog-figures.md). Larger updates are split over the host
#: threads (:mod:`gpukit._host.parallel`).
_BLOCK = 1 << 18
_scratch = threading.local()


def _workspace(dtype: np.dtype) -> list[tuple[np.ndarray, np.ndarray]]:
    """Two flat scratch blocks of ``dtype`` for each host thread an update may use: the
    calling thread's, allocated on its first update.

    The ufunc updates take all their temporaries from here, after which they allocate
    nothing: an update fails before its first write or not at all, and an optimizer step
    over many parameters cannot fail half-way for want of memory (gpukit._runtime.memory).
    (The compiled updates need none, nor plain SGD: one BLAS ``axpy`` from NumPy's own
    BLAS, :mod:`.blas`.)
    """
    cache = _scratch.__dict__
    slots = cache.get(dtype)
    if slots is None:
        raw = cache.get("raw")
        n = _BLOCK * 8
        if raw is None:
            raw = cache["raw"] = np.empty(2 * n * _parallel.max_threads(), dtype=np.uint8)
        views = [raw[i * n : (i + 1) * n].view(dtype)[:_BLOCK] for i in range(raw.size // n)]
        slots = cache[dtype] = list(zip(views[0::2], views[1::2], strict=True))
    return slots


def _flat(a: np.ndarray | None) -> np.ndarray | None:
    """A plain flat view of a C-contiguous array (no VirtualDeviceArray ufunc overrides)."""
    if a is None:
        return None
    if type(a) is not np.ndarray:
        a = a.view(np.ndarray)
    return a if a.ndim == 1 else a.reshape(-1)  # a flat buffer is already flat


def _update(
    block: Callable[..., None], arrays: tuple[np.ndarray | None, ...], dtype: np.dtype
) -> None:
    """Call ``block(*blocks, s1, s2)`` over matching flat blocks of same-shaped
    C-contiguous ``arrays`` (None stays None) with two scratch blocks of their size: in
    rounds of up to :data:`_BLOCK` elements, on the host threads when there are enough of
    them. The scratch is taken before the first write."""
    slots = _workspace(dtype)
    flat = [_flat(a) for a in arrays]
    n = flat[0].size
    threads = min(_parallel.plan(n), len(slots))
    step = min(n, _BLOCK)

    def work(k: int, lo: int, hi: int) -> None:
        s1, s2 = slots[k]
        for b in range(lo, hi, max(step, 1)):
            e = min(b + step, hi)
            block(*(None if f is None else f[b:e] for f in flat), s1[: e - b], s2[: e - b])

    _parallel.run(work, n, 1, threads)


def _refuse_read_only(*arrays: np.ndarray | None) -> None:
    """NumPy's error for an update's read-only output, raised before anything is written
    (the compiled pass checks nothing; the block path would raise half-way)."""
    for a in arrays:
        if a is not None and not a.flags.writeable:
            raise ValueError("output array is read-only")


#: Elements up to which plain SGD runs two ufuncs (``g * lr`` into scratch, then
#: ``p -= ``) rather than one BLAS ``axpy`` through ctypes, whose call costs more.
_SMALL_SGD = 1024


def _blas_ready(y: np.ndarray, x: np.ndarray) -> bool:
    """``x`` and ``y`` (flat, C-contiguous) suit BLAS ``axpy``: one dtype, aligned, ``y``
    writeable, apart (BLAS, unlike a ufunc, checks none of it)."""
    fx, fy = x.flags, y.flags
    return (
        x.dtype == y.dtype
        and fx.aligned
        and fy.aligned
        and fy.writeable
        and not np.may_share_memory(x, y)
    )


def _small_sgd(p: np.ndarray, g: np.ndarray, lr: float) -> None:
    """Plain SGD on flat ``p`` of at most :data:`_SMALL_SGD` elements: a BLAS call through
    ctypes costs more than both ufunc passes on this few elements; the scratch block is
    taken before the first write, and the one pass writing ``p`` refuses a read-only
    ``p`` before writing."""
    p -= np.multiply(g, lr, _small_scratch(p.dtype, p.shape))


def _small_scratch(dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """The calling thread's first scratch block (:func:`_workspace`) as an array of
    ``shape`` (at most a block), kept per thread under ``(dtype, shape)``."""
    cache = _scratch.__dict__
    found = cache.get((dtype, shape))
    if found is None:
        n = math.prod(shape)
        found = cache[dtype, shape] = _workspace(dtype)[0][0][:n].reshape(shape)
    return found


def sgd_update(
    param: np.ndarray,
    grad: np.ndarray,
    momentum_buffer: np.ndarray | None,
    lr: float,
    momentum: float,
    dampening: float,
    nesterov: bool,
    weight_decay: float,
    first_step: bool,
    status: np.ndarray | None = None,
) -> None:
    """Reference of :func:`gpukit.kernels.sgd_update` (torch.optim.SGD), in place.

    One pass in gpukit's compiled kernel (:mod:`gpukit._host.native`) where it is built,
    allocating nothing; otherwise block by block through two scratch blocks, so no
    temporary of the parameter's size is made, everything allocated before the first
    write. Nothing changes while a flag of ``status`` (gpukit._runtime.device_status) is
    set.
    """
    if status is not None and status[0]:
        return
    if not grad.flags.c_contiguous:  # a strided gradient is copied before any write
        grad = np.ascontiguousarray(grad)
    p, g = _flat(param), _flat(grad)
    if not (momentum or weight_decay):  # plain SGD, the common step: no per-block bookkeeping
        if p.size <= _SMALL_SGD:
            _small_sgd(p, g, lr)
            return
        fused = _blas.axpy(p.dtype)
        if fused is not None and lr and _blas_ready(p, g):  # lr = 0: NaN must still reach p
            # one pass, on the BLAS threads the step's products just used: a third of the
            # two ufunc passes' time on a 784x256 float32 weight inside a training step
            fused(-lr, g, p)
            return
    _refuse_read_only(param, momentum_buffer)
    buf = _flat(momentum_buffer) if momentum else None
    if _native.takes(p, g, buf):
        _native.sgd(p, g, buf, lr, momentum, dampening, weight_decay, nesterov, first_step)
        return

    def block(p: np.ndarray, g: np.ndarray, buf: np.ndarray | None, s1: Any, s2: Any) -> None:
        n = p.size
        d = g
        if weight_decay:  # d = grad + weight_decay * param
            d = np.multiply(p, weight_decay, out=s1)
            d += g
        if momentum:
            if first_step:
                np.copyto(buf, d)
            else:  # buf = momentum * buf + (1 - dampening) * d
                buf *= momentum
                buf += np.multiply(d, 1.0 - dampening, out=s2) if dampening else d
            if nesterov:  # step = d + momentum * buf
                if d is g:
                    d = np.multiply(buf, momentum, out=s1)
                    d += g
                else:
                    d += np.multiply(buf, momentum, out=s2)
            else:
                d = buf
        p -= np.multiply(d, lr, out=s2[:n])

    _update(block, (param, grad, momentum_buffer), param.dtype)


def _bind_sgd_update(param: np.ndarray, *args: Any) -> Callable[..., None]:
    """:func:`sgd_update` planned for arrays like these (gpukit.kernels' plans): the
    compiled kernel bound once for up to ``_SMALL_SGD`` elements, plain SGD included
    (the module's call costs less than the two ufunc passes of :func:`_small_sgd`), with
    :func:`sgd_update` where it does not run."""
    if type(param) is not np.ndarray or type(args[0]) is not np.ndarray:
        return sgd_update
    n = param.size
    if n > _SMALL_SGD:  # plain SGD's BLAS axpy decides per call
        return sgd_update
    planned = _native.plan_sgd(n, param.dtype, sgd_update)
    return sgd_update if planned is None else planned


sgd_update.bind = _bind_sgd_update  # type: ignore[attr-defined]


def _adam_factors(
    step: int, lr: float, beta1: float, beta2: float, weight_decay: float, decoupled: bool
) -> tuple[float, float, float, float]:
    """Adam's ``(step_size, denom_scale, l2, decay)`` for step ``step``: ``lr`` over the
    first moment's bias correction, the square root of the second's, the weight decay
    added to the gradient (Adam) and the parameter's factor (AdamW)."""
    l2 = 0.0 if decoupled else weight_decay
    decay = 1.0 - lr * weight_decay if decoupled else 1.0
    return lr / (1.0 - beta1**step), math.sqrt(1.0 - beta2**step), l2, decay


def adam_update(
    param: np.ndarray,
    grad: np.ndarray,
    exp_avg: np.ndarray,
    exp_avg_sq: np.ndarray,
    step: int,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float,
    decoupled: bool,
    status: np.ndarray | None = None,
) -> None:
    """Reference of :func:`gpukit.kernels.adam_update` (torch Adam/AdamW), in place.

    One pass in gpukit's compiled kernel where it is built; otherwise block by block
    through two scratch blocks, everything allocated before the first write. Nothing
    changes while a flag of ``status`` is set, as :func:`sgd_update`.
    """
    if status is not None and status[0]:
        return
    _refuse_read_only(param, exp_avg, exp_avg_sq)
    if not grad.flags.c_contiguous:
        grad = np.ascontiguousarray(grad)
    step_size, denom_scale, l2, decay = _adam_factors(
        step, lr, beta1, beta2, weight_decay, decoupled
    )
    flat = tuple(map(_flat, (param, grad, exp_avg, exp_avg_sq)))
    if _native.takes(*flat):
        _native.adam(*flat, step_size, 1.0 / denom_scale, beta1, beta2, eps, l2, decay)
        return
    # p -= step_size m / (sqrt(v) / denom_scale + eps), with step_size folded into the
    # denominator (two passes fewer than torch's sequence; rounding of the same order)
    # unless it is 0, where NaN and inf in m / denom must still reach p as in torch
    fold = step_size != 0.0
    inv_scale = 1.0 / (denom_scale * step_size) if fold else 1.0 / denom_scale
    eps_scaled = eps / step_size if fold else eps

    def block(p: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray, t: Any, s2: Any) -> None:
        if weight_decay:
            if decoupled:
                p *= 1.0 - lr * weight_decay
            else:  # g = grad + weight_decay * param
                decayed = np.multiply(p, weight_decay, out=s2)
                decayed += g
                g = decayed
        np.subtract(g, m, out=t)  # exp_avg.lerp_(g, 1 - beta1), as torch does
        t *= 1.0 - beta1
        m += t
        v *= beta2
        np.multiply(g, g, out=t)
        t *= 1.0 - beta2
        v += t
        np.sqrt(v, out=t)
        t *= inv_scale
        t += eps_scaled
        np.divide(m, t, out=t)
        if not fold:
            t *= step_size
        p -= t

    _update(block, (param, grad, exp_avg, exp_avg_sq), param.dtype)


def _bind_adam_update(
    param: np.ndarray, grad: np.ndarray, exp_avg: np.ndarray, exp_avg_sq: np.ndarray, *args: Any
) -> Callable[..., None]:
    """:func:`adam_update` planned as :func:`_bind_sgd_update`: the compiled kernel bound
    once."""
    planned = None
    if all(type(a) is np.ndarray for a in (param, grad, exp_avg, exp_avg_sq)):
        planned = _native.plan_elementwise("gk_adam", param.size, param.dtype)
    if planned is None:
        return adam_update

    def run(
        param: np.ndarray,
        grad: np.ndarray,
        exp_avg: np.ndarray,
        exp_avg_sq: np.ndarray,
        step: int,
        lr: float,
        beta1: float,
        beta2: float,
        eps: float,
        weight_decay: float,
        decoupled: bool,
        status: np.ndarray | None = None,
    ) -> None:
        if status is None or not status[0]:
            step_size, denom_scale, l2, decay = _adam_factors(
                step, lr, beta1, beta2, weight_decay, decoupled
            )
            scalars = _native.adam_scalars(
                step_size, 1.0 / denom_scale, beta1, beta2, eps, l2, decay
            )
            if planned((param, grad, exp_avg, exp_avg_sq), *scalars):
                return
        adam_update(
            param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay,
            decoupled, status,
        )  # fmt: skip

    return run


adam_update.bind = _bind_adam_update  # type: ignore[attr-defined]


def _label_pick(a: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a[i, labels[i]] (NaN where a label is out of range) and the valid-row mask."""
    n, c = a.shape
    valid = (labels >= 0) & (labels < c)
    safe = np.where(valid, labels, 0)
    picked = a[np.arange(n), safe]
    picked[~valid] = np.nan
    return picked, valid


def _row_blocks(block: Callable[[slice], None], n: int, c: int, itemsize: int) -> None:
    """Call ``block(rows)`` over cache-sized slices of ``range(n)`` rows of ``c``
    elements, on the host threads."""

    def work(_k: int, lo: int, hi: int) -> None:
        step = _parallel.spans(lo, hi, c * itemsize).step
        for r in range(lo, hi, step):
            block(slice(r, min(r + step, hi)))

    _parallel.run(work, n, c)


def _flag_labels(status: np.ndarray, serial: int, labels: np.ndarray, c: int) -> None:
    """Record labels outside [0, c) in ``status`` as the CUDA kernel does
    (:mod:`gpukit._runtime.device_status`)."""
    bad = labels[(labels < 0) | (labels >= c)]
    if bad.size:
        status[0] |= 1
        status[1] = min(status[1], serial)
        status[2] = min(status[2], int(bad.min()))
        status[3] = max(status[3], int(bad.max()))
        status[4] = max(status[4], c)


def flag_nonfinite(value: np.ndarray, status: np.ndarray, serial: int) -> None:
    """Reference of the internal kernel ``flag_nonfinite`` (fit's check of a loss): a NaN
    or infinite 0-d ``value`` recorded in ``status`` (int64, gpukit._runtime.device_status)
    with the call's ``serial``, unless an earlier call's is there: flag 2 set, slot 5 the
    serial, slot 6 1 for NaN, 2 for +inf, 3 for -inf."""
    v = float(value)
    if not math.isfinite(v) and serial < status[5]:
        status[0] |= 2
        status[5] = serial
        status[6] = 1 if math.isnan(v) else (2 if v > 0 else 3)


def softmax_cross_entropy(
    logits: np.ndarray,
    labels: np.ndarray,
    label_smoothing: float,
    status: np.ndarray | None = None,
    serial: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Reference of :func:`gpukit.kernels.softmax_cross_entropy`: (loss per row, probs);
    labels out of range are recorded in ``status`` when given."""
    n, c = logits.shape
    logits = logits.view(np.ndarray) if type(logits) is not np.ndarray else logits
    probs = np.empty((n, c), logits.dtype)
    loss = np.empty(n, logits.dtype)
    labels = np.asarray(labels)
    if status is not None:
        _flag_labels(status, serial, labels, c)
    if _native.takes(logits, probs):
        # aligned too: an unpickled array (a Dask worker's) may start at any byte
        _native.xent(logits, np.require(labels, np.int64, "CA"), loss, probs, label_smoothing)
        return loss, probs

    # With z = logits - max (exact where it matters, unlike adding the max back):
    # loss = log sum_j exp(z_j) - (1 - eps) z_y - sum_j (eps / c) z_j, each term scaled
    # before the sum so that logits near the dtype's max do not overflow it. A -inf
    # logit gives probability 0, and with eps > 0 a loss of +inf (as in PyTorch).
    def block(rows: slice) -> None:
        z = np.subtract(logits[rows], logits[rows].max(axis=1, keepdims=True), out=probs[rows])
        picked, _ = _label_pick(z, labels[rows])
        if label_smoothing:
            zsum = np.multiply(z, label_smoothing / c).sum(axis=1)
        np.exp(z, out=z)
        sums = z.sum(axis=1, keepdims=True)
        z /= sums
        out = np.log(sums[:, 0], out=loss[rows])
        out -= (1.0 - label_smoothing) * picked
        if label_smoothing:
            out -= zsum

    _row_blocks(block, n, c, probs.itemsize)
    return loss, probs


def softmax_cross_entropy_backward(
    probs: np.ndarray, labels: np.ndarray, grad_loss: np.ndarray, label_smoothing: float
) -> np.ndarray:
    """Reference of :func:`gpukit.kernels.softmax_cross_entropy_backward`."""
    n, c = probs.shape
    probs = probs.view(np.ndarray) if type(probs) is not np.ndarray else probs
    labels, grad_loss = np.asarray(labels), np.asarray(grad_loss)
    g = np.empty((n, c), probs.dtype)
    if _native.takes(probs, g):
        weights = np.require(grad_loss, g.dtype, "CA")  # aligned too, as in the forward
        lab = np.require(labels, np.int64, "CA")
        _native.xent_grad(probs, lab, weights, g, label_smoothing)
        return g

    def block(rows: slice) -> None:
        gb = g[rows]
        if label_smoothing:
            np.subtract(probs[rows], label_smoothing / c, out=gb)
        else:
            np.copyto(gb, probs[rows])
        lab = labels[rows]
        valid = (lab >= 0) & (lab < c)
        idx = np.flatnonzero(valid)
        gb[idx, lab[idx]] -= 1.0 - label_smoothing
        gb[~valid] = np.nan
        gb *= grad_loss[rows, None]

    _row_blocks(block, n, c, g.itemsize)
    return g


def _bind_rows(name: str, matrix: np.ndarray, labels: np.ndarray) -> Any:
    """The compiled row kernel ``name`` planned for a plain ``matrix`` and int64 ``labels``
    like these (:func:`gpukit._host.native.plan_rows`), or None for the general path."""
    if type(matrix) is not np.ndarray or type(labels) is not np.ndarray:
        return None
    if labels.dtype != np.int64:  # converted by the general path
        return None
    return _native.plan_rows(name, *matrix.shape, matrix.dtype)


def _bind_softmax_cross_entropy(
    logits: np.ndarray, labels: np.ndarray, *args: Any
) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """:func:`softmax_cross_entropy` planned for arrays like these (gpukit.kernels' plans):
    the compiled kernel bound once (split as :func:`gpukit._host.native.plan_rows`
    splits)."""
    planned = _bind_rows("gk_xent", logits, labels)
    if planned is None:
        return softmax_cross_entropy
    (n, c), dtype, empty = logits.shape, logits.dtype, np.empty

    def run(
        logits: np.ndarray,
        labels: np.ndarray,
        label_smoothing: float,
        status: np.ndarray | None = None,
        serial: int = 0,
    ) -> tuple[np.ndarray, np.ndarray]:
        if status is None:
            probs, loss = empty((n, c), dtype), empty(n, dtype)
            if planned(logits, labels, loss, probs, label_smoothing):
                return loss, probs
        return softmax_cross_entropy(logits, labels, label_smoothing, status, serial)

    return run


softmax_cross_entropy.bind = _bind_softmax_cross_entropy  # type: ignore[attr-defined]


def _bind_softmax_cross_entropy_backward(
    probs: np.ndarray, labels: np.ndarray, grad_loss: np.ndarray, label_smoothing: float
) -> Callable[..., np.ndarray]:
    """:func:`softmax_cross_entropy_backward` planned as
    :func:`_bind_softmax_cross_entropy`."""
    planned = _bind_rows("gk_xent_grad", probs, labels)
    if planned is None or type(grad_loss) is not np.ndarray or grad_loss.dtype != probs.dtype:
        return softmax_cross_entropy_backward
    shape, dtype, empty = probs.shape, probs.dtype, np.empty

    def run(
        probs: np.ndarray, labels: np.ndarray, grad_loss: np.ndarray, label_smoothing: float
    ) -> np.ndarray:
        g = empty(shape, dtype)
        if planned(probs, labels, grad_loss, g, label_smoothing):
            return g
        return softmax_cross_entropy_backward(probs, labels, grad_loss, label_smoothing)

    return run


softmax_cross_entropy_backward.bind = _bind_softmax_cross_entropy_backward  # type: ignore[attr-defined]


def softmax_cross_entropy_train(
    logits: np.ndarray,
    labels: np.ndarray,
    label_smoothing: float,
    reduction: str,
    status: np.ndarray | None = None,
    serial: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Reference of the internal kernel ``softmax_cross_entropy_train``: a training step's
    loss in one call, ``(loss, grad)``: the 0-d mean (``reduction="mean"``) or sum of
    :func:`softmax_cross_entropy`'s row losses, and the gradient of that loss with respect
    to the (N, C) ``logits``; labels out of range are recorded in ``status`` when given."""
    n = logits.shape[0]
    rows, probs = softmax_cross_entropy(logits, labels, label_smoothing, status, serial)
    scale = 1.0 / n if reduction == "mean" and n else 1.0
    grad = softmax_cross_entropy_backward(
        probs, labels, np.full(n, scale, logits.dtype), label_smoothing
    )
    return np.asarray(rows.mean() if reduction == "mean" else rows.sum()), grad


def matmul_tiled(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Reference of :func:`gpukit.kernels.matmul_tiled`: ``a @ b`` (BLAS on the host)."""
    return np.matmul(a, b)


# planned: ``np.matmul`` itself, one call level less
matmul_tiled.bind = lambda a, b: np.matmul  # type: ignore[attr-defined]
