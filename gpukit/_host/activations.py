"""The activations and their derivatives on the host, written once in NumPy.

Two callers compute them: the numpy backend's references of ``gk.kernels.bias_activation``
and ``bias_activation_backward`` (``gpukit_numpy.kernels``), and ``gpukit.nn``'s layers on
host arrays, which skip the kernels' extra copy by working in place on their own
temporaries and keep an activation's output where its derivative can be written with it.
The CUDA kernels (``backends/gpukit_cupy/kernels/activations.cuh``) compute the same
formulas; the tests compare all of them with float64 references.

GELU's normal CDF is written ``erfc(-z / sqrt2) / 2``: ``1 + erf(z / sqrt2)`` cancels for
``z << 0`` (float32 ``gelu(-10)`` came out 0 instead of -7.6e-23).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..backend.kernels import ACTIVATIONS

__all__ = ["FROM_OUTPUT", "activate", "derivative"]

#: Activations whose derivative is a function of their output: the output is what a layer
#: keeps for its backward pass, and the input can be overwritten.
FROM_OUTPUT = frozenset({"identity", "relu", "sigmoid", "tanh"})

_SQRT1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_K_TANH = math.sqrt(2.0 / math.pi)  # gelu's tanh form: tanh(k (z + 0.044715 z^3))
_C_TANH = 0.044715


def _special() -> Any:
    import scipy.special  # on the first activation that needs it: import gpukit stays light

    return scipy.special


def _expit(z: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The logistic sigmoid in ``z``'s dtype: SciPy's ``expit`` has no float16 loop and
    gave float16 input a float64 result."""
    return _special().expit(z, out=np.empty_like(z) if out is None else out)


def activate(z: np.ndarray, name: str, slope: float, *, overwrite: bool = False) -> np.ndarray:
    """``act(z)``: written into ``z`` itself when ``overwrite``, else a new array
    (``slope``: leaky ReLU's negative slope).

    Examples
    --------
    >>> import numpy as np
    >>> z = np.array([-2.0, 0.0, 3.0])
    >>> activate(z, "relu", 0.0).tolist(), z.tolist()
    ([0.0, 0.0, 3.0], [-2.0, 0.0, 3.0])
    >>> activate(z, "leaky_relu", 0.5, overwrite=True) is z, z.tolist()
    (True, [-1.0, 0.0, 3.0])
    """
    out = z if overwrite else None
    if name == "relu":
        return np.maximum(z, 0, out=out)
    if name == "sigmoid":
        return _expit(z, out)
    if name == "tanh":
        return np.tanh(z, out=out)
    if name == "identity":
        return z if overwrite else z.copy()
    if name == "leaky_relu":
        if overwrite:
            return np.multiply(z, slope, out=z, where=z < 0)
        return np.where(z < 0, z * z.dtype.type(slope), z)
    if name == "gelu":
        t = np.multiply(z, -_SQRT1_2)
        _special().erfc(t, out=t)
        t *= 0.5
    elif name == "gelu_tanh":
        t = np.multiply(z, z)
        t *= _C_TANH
        t += 1.0
        t *= z
        t *= _K_TANH
        np.tanh(t, out=t)
        t += 1.0
        t *= 0.5
    elif name == "silu":
        t = _expit(z)
    else:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {name!r}")
    return np.multiply(z, t, out=z if overwrite else t)  # z times its gate


def derivative(
    v: np.ndarray, name: str, slope: float, *, of_output: bool = False, overwrite: bool = False
) -> np.ndarray:
    """``act'(z)`` as a new array (never ``v`` itself): of ``v``'s dtype, a boolean mask for
    ReLU. Not for the identity, whose callers pass the gradient through.

    ``v`` is the activation's input ``z``, or its output ``act(z)`` when ``of_output`` (only
    for :data:`FROM_OUTPUT`). ``overwrite`` lets the computation reuse ``v``'s memory (a
    temporary of the caller's); otherwise ``v`` is only read, so a layer's saved array
    serves any number of backward passes.

    Examples
    --------
    >>> import numpy as np
    >>> derivative(np.array([-1.0, 2.0]), "leaky_relu", 0.1).tolist()
    [0.1, 1.0]
    >>> y = np.tanh(np.array([0.5]))
    >>> bool(np.isclose(derivative(y, "tanh", 0.0, of_output=True)[0], 1 - y[0] ** 2))
    True
    """
    if name == "identity":
        raise ValueError("the identity's gradient is the incoming one: pass it through")
    if of_output and name not in FROM_OUTPUT:
        raise ValueError(f"the derivative of {name!r} is not a function of its output")
    one = v.dtype.type(1)
    if name == "relu":
        return v > 0
    if name == "leaky_relu":
        return np.where(v > 0, one, v.dtype.type(slope))
    if name in ("sigmoid", "tanh"):
        s = v
        if not of_output:
            s = (_expit if name == "sigmoid" else np.tanh)(v, v if overwrite else None)
        if name == "sigmoid":  # s (1 - s)
            d = np.subtract(one, s)
            d *= s
            return d
        d = np.multiply(s, s)  # 1 - s^2
        np.subtract(one, d, out=d)
        return d
    if name == "gelu":  # 0.5 erfc(-z/sqrt2) + z phi(z)
        d = np.multiply(v, -_SQRT1_2)
        _special().erfc(d, out=d)
        d *= 0.5
        pdf = np.multiply(v, v)
        pdf *= -0.5
        np.exp(pdf, out=pdf)
        pdf *= _INV_SQRT_2PI
        pdf *= v
        d += pdf
        return d
    if name == "gelu_tanh":
        # 0.5 (1 + t) + 0.5 z (1 - t^2) k (1 + 3 c z^2),  t = tanh(k (z + c z^3))
        z2 = np.multiply(v, v)
        t = np.multiply(z2, _C_TANH)
        t += 1.0
        t *= v
        t *= _K_TANH
        np.tanh(t, out=t)
        z2 *= 3.0 * _C_TANH
        z2 += 1.0
        z2 *= _K_TANH * 0.5
        z2 *= v  # 0.5 k z (1 + 3 c z^2)
        d = np.multiply(t, t)
        np.subtract(1.0, d, out=d)
        d *= z2
        t += 1.0
        t *= 0.5
        d += t
        return d
    if name == "silu":  # s (1 + z (1 - s)),  s = sigmoid(z)
        s = _expit(v)
        d = np.subtract(1.0, s)
        d *= v
        d += 1.0
        d *= s
        return d
    raise ValueError(f"activation must be one of {ACTIVATIONS}, got {name!r}")
