"""The elementwise kernels as ``cupy.ElementwiseKernel``.

CuPy generates the indexing: broadcasting (the bias over rows, a label per row),
dtype dispatch through the ``T`` placeholder (one definition for float32 and
float64), strided inputs read in place, and the launch shape. Each kernel compiles
on its first call per device and dtype; constructing one compiles nothing.
"""

from __future__ import annotations

from functools import cache

import cupy

from gpukit.backend.kernels import ACTIVATIONS

from ..cuda_sources import source


@cache
def _activations() -> str:
    return source("activations.cuh")


@cache
def _common() -> str:
    """gk_common.cuh: the float/double math names (gk_sqrt) and gk_nan."""
    return source("gk_common.cuh")


def _act_forward(params: str, z: str, name: str, activation: str) -> cupy.ElementwiseKernel:
    """The kernel ``name``: ``y = act(z)``, ``z`` an expression of ``params``."""
    return cupy.ElementwiseKernel(
        params,
        "T y",
        f"y = act_forward<T, {ACTIVATIONS.index(activation)}>({z}, slope)",
        name,
        preamble=_activations(),
    )


@cache
def bias_act_forward(activation: str) -> cupy.ElementwiseKernel:
    """``y = act(x + bias)``; bias broadcasts over the leading axes."""
    return _act_forward(
        "T x, T bias, T slope", "x + bias", f"gk_bias_act_forward_{activation}", activation
    )


@cache
def act_forward(activation: str) -> cupy.ElementwiseKernel:
    """``y = act(x)``: :func:`bias_act_forward` without a bias (an activation layer's)."""
    return _act_forward("T x, T slope", "x", f"gk_act_forward_{activation}", activation)


@cache
def act_backward(activation: str, of_output: bool) -> cupy.ElementwiseKernel:
    """``grad_x = grad_y * act'(v)``, ``v`` the forward input or (``of_output``) its output:
    the bias-free ``grad_x`` of ``bias_act.cu``'s ``bias_act_backward``."""
    a = ACTIVATIONS.index(activation)
    derivative = (
        f"act_derivative_of_output<T, {a}>(v)" if of_output else f"act_derivative<T, {a}>(v, slope)"
    )
    variant = f"{activation}_of_output" if of_output else activation
    return cupy.ElementwiseKernel(
        "T grad_y, T v, T slope",
        "T grad_x",
        f"grad_x = grad_y * {derivative}",
        f"gk_act_backward_{variant}",
        preamble=_activations(),
    )


def _update(in_params: str, out_params: str, body: str, name: str, guarded: bool):
    """An in-place optimizer update; ``guarded``: it reads the device's status buffer
    (``raw int64 status``, gpukit._runtime.device_status) and changes nothing while a
    flag is set, so a step computed from a poisoned batch is never applied."""
    if guarded:
        in_params += ", raw int64 status"
        body = f"if (status[0] == 0) {{{body}}}"
    return cupy.ElementwiseKernel(in_params, out_params, body, name, preamble=_common())


@cache
def sgd_plain(guarded: bool) -> cupy.ElementwiseKernel:
    """torch.optim.SGD without momentum, in place."""
    return _update(
        "T grad, T lr, T weight_decay",
        "T param",
        """
    T d = grad;
    if (weight_decay != T(0)) d += weight_decay * param;
    param = param - lr * d;
    """,
        "gk_sgd_update",
        guarded,
    )


@cache
def sgd_momentum(guarded: bool) -> cupy.ElementwiseKernel:
    """torch.optim.SGD with momentum (dampening, Nesterov), in place. damp1 = 1 - dampening."""
    return _update(
        "T grad, T lr, T momentum, T damp1, T weight_decay, int32 nesterov, int32 first_step",
        "T param, T buf",
        """
    T d = grad;
    if (weight_decay != T(0)) d += weight_decay * param;
    const T b = first_step ? d : momentum * buf + damp1 * d;
    buf = b;
    d = nesterov ? d + momentum * b : b;
    param = param - lr * d;
    """,
        "gk_sgd_momentum_update",
        guarded,
    )


@cache
def adam(guarded: bool) -> cupy.ElementwiseKernel:
    """torch.optim.Adam / AdamW, in place.

    l2: weight decay added to the gradient (Adam), 0 for AdamW; decay: 1 - lr *
    weight_decay (AdamW), 1 for Adam. step_size = lr / (1 - beta1^t), bc2_sqrt =
    sqrt(1 - beta2^t); omb1 = 1 - beta1, omb2 = 1 - beta2.
    """
    return _update(
        "T grad, T omb1, T beta2, T omb2, T eps, T l2, T decay, T step_size, T bc2_sqrt",
        "T param, T exp_avg, T exp_avg_sq",
        """
    T p = param;
    T g = grad;
    if (l2 != T(0)) g += l2 * p;
    p *= decay;
    const T m = exp_avg + omb1 * (g - exp_avg);  // lerp, as torch does
    const T v = beta2 * exp_avg_sq + omb2 * (g * g);
    exp_avg = m;
    exp_avg_sq = v;
    param = p - step_size * (m / (gk_sqrt(v) / bc2_sqrt + eps));
    """,
        "gk_adam_update",
        guarded,
    )


@cache
def flag_nonfinite() -> cupy.ElementwiseKernel:
    """A NaN or infinite ``x`` (a loss) recorded in the device's status buffer with the
    call's serial, unless an earlier call's is there (gpukit._runtime.device_status:
    flag 2; slot 5 the serial; slot 6: 1 NaN, 2 +inf, 3 -inf). One element: one thread."""
    return cupy.ElementwiseKernel(
        "T x, int64 serial",
        "raw int64 status",
        """
    const double v = (double)x;
    if (!isfinite(v) && serial < status[5]) {
      status[0] |= 2;
      status[5] = serial;
      status[6] = isnan(v) ? 1 : (v > 0 ? 2 : 3);
    }
    """,
        "gk_flag_nonfinite",
    )


@cache
def softmax_xent_backward() -> cupy.ElementwiseKernel:
    """grad = grad_loss * (probs - off - (j == label ? on : 0)), per row.

    label and grad_loss broadcast over the row; grad is C-contiguous (allocated
    by CuPy), so its column j is i % c. Labels outside [0, c) give NaN. on = 1 -
    smoothing, off = smoothing / c.
    """
    return cupy.ElementwiseKernel(
        "T probs, L label, T grad_loss, T on, T off, int64 c",
        "T grad",
        """
    if (label >= 0 && label < c) {
      grad = (probs - off - ((long long)label == i % c ? on : T(0))) * grad_loss;
    } else {
      grad = gk_nan<T>();
    }
    """,
        "gk_softmax_xent_backward",
        preamble=_common(),
    )
