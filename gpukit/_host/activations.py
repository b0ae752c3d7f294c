"""The activations and their gradients on the host, written once in NumPy.

Two callers compute them: the numpy backend's ``gk.kernels.bias_activation`` and
``bias_activation_backward`` (``gpukit_numpy.kernels``), and ``gpukit.nn``'s layers on
host arrays, which work in place on their own temporaries and keep an activation's
output where its derivative can be written with it. The CUDA kernels
(``backends/gpukit_cupy/kernels/activations.cuh``) compute the same formulas; the tests
compare all of them with float64 references.

Both run gpukit's compiled kernels (:mod:`gpukit._host.native`: one vectorised pass
over the data on the host's threads) where the library was built and takes the arrays.
Otherwise each function walks its array in cache-sized blocks on the host's threads
(:mod:`gpukit._host.parallel`) with NumPy ufuncs: the bias, the activation and,
backward, the product with the incoming gradient and the bias gradient's partial sums
are done block by block, so the data crosses memory once each way.

GELU's normal CDF is ``erfc(-z / sqrt2) / 2``: ``1 + erf(z / sqrt2)`` cancels for
``z << 0`` (float32 ``gelu(-10)`` came out 0 instead of -7.6e-23). In float32 it is
computed by :func:`_phi32`, a vectorised form accurate to float32 in relative terms
down to the underflow; SciPy's ``erfc`` is a scalar loop, 60x slower than a NumPy pass.
float64 keeps SciPy's ``erfc`` (on the threads, block by block).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..backend.kernels import ACTIVATIONS, FROM_OUTPUT
from . import native
from .parallel import BLOCK, constant, run, scratch, spans

__all__ = ["FROM_OUTPUT", "bias_activate", "gradient"]


_SQRT1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_K_TANH = math.sqrt(2.0 / math.pi)  # gelu's tanh form: tanh(k (z + 0.044715 z^3))
_C_TANH = 0.044715

#: ``log(erfc(a) / t) + a**2`` as a polynomial in ``u = a / (2 + a)``, ``t = 1 - u``
#: (lowest degree first): a degree-12 least-squares fit on Chebyshev nodes over all of
#: ``a >= 0`` (``u`` in [0, 1)), 6e-9 from the function, so ``erfc(a) = t exp(P(u) - a**2)``
#: is accurate to float32 from 0 to the underflow. Written in ``u``, its rounding is
#: relative near ``a = 0``, where the exponent is small.
_ERFC_U = (
    -3.9334602242036e-09,
    -1.2567570679667042,
    -0.3033042349169688,
    0.16280129584977027,
    0.17910336951645417,
    0.14080129095585073,
    -0.37670101697550235,
    0.6608012189853869,
    -1.0872164078848905,
    0.8224006250618722,
    -0.11235032762243785,
    -0.14986045900407224,
    0.0547696001863379,
)


def _special() -> Any:
    import scipy.special  # on the first float64 gelu: import gpukit stays light

    return scipy.special


def _phi32(z: np.ndarray, out: np.ndarray, a: np.ndarray, t: np.ndarray, u: np.ndarray) -> None:
    """``out = Phi(z)``, the normal CDF, for a flat float32 block (``a``, ``t``, ``u``:
    scratch of its size). Phi(z) = erfc(a) / 2 for z < 0 and 1 - erfc(a) / 2 otherwise,
    with a = |z| / sqrt2, as h - s erfc(a) with h = [z >= 0] and s = h - 1/2: no mask,
    and the tail's tiny values are not cancelled. |z| is capped where erfc has long
    underflowed, so that ``u`` stays finite at infinity."""
    f = np.float32
    np.abs(z, out=a)
    a *= f(_SQRT1_2)
    np.minimum(a, constant(f, 16.0, a.size), out=a)
    np.add(a, f(2.0), out=t)
    np.divide(f(2.0), t, out=t)  # t = 2 / (2 + a)
    np.multiply(a, t, out=u)
    u *= f(0.5)  # u = a / (2 + a), relative-accurate near 0 (1 - t is not)
    out.fill(_ERFC_U[-1])
    for c in _ERFC_U[-2::-1]:
        out *= u
        out += f(c)
    np.multiply(a, a, out=a)
    out -= a
    np.exp(out, out=out)
    out *= t  # erfc(a)
    np.greater_equal(z, 0, out=a)  # h = 1 for z >= 0, else 0 (NaN: 0)
    np.subtract(a, f(0.5), out=t)  # s = h - 1/2 = +-1/2
    out *= t  # s erfc(a)
    np.subtract(a, out, out=out)  # exact for z < 0: 0 + erfc(a) / 2


def _phi(z: np.ndarray, out: np.ndarray, w: list[np.ndarray]) -> None:
    """``out = Phi(z)`` for a flat block; ``w``: three scratch arrays of its size."""
    if z.dtype == np.float32:
        _phi32(z, out, *w[:3])
        return
    np.multiply(z, -_SQRT1_2, out=out)
    _special().erfc(out, out=out)
    out *= 0.5


def _sigmoid(z: np.ndarray, out: np.ndarray) -> None:
    """``out = 1 / (1 + exp(-z))``; exp(-z) overflows to inf for z << 0 and gives the
    right 0 (the callers run under ``errstate(over="ignore")``)."""
    np.negative(z, out=out)
    np.exp(out, out=out)
    out += 1.0
    np.divide(1.0, out, out=out)


def _gelu_tanh_gate(z: np.ndarray, t: np.ndarray) -> None:
    """``t = tanh(k (z + c z^3))``."""
    np.multiply(z, z, out=t)
    t *= _C_TANH
    t += 1.0
    t *= z
    t *= _K_TANH
    np.tanh(t, out=t)


def _forward(z: np.ndarray, name: str, slope: float, w: list[np.ndarray]) -> None:
    """``z = act(z)`` in place on a flat block; ``w``: four scratch arrays of its size."""
    if name == "relu":  # 0 where z < 0: NaN and -0.0 pass through, as in PyTorch
        np.copyto(z, constant(z.dtype, 0.0, z.size), where=z < 0)
    elif name == "leaky_relu":
        # slope z where z < 0: for slope <= 1 it is the larger of z and slope z, else
        # the smaller (a select without a mask; NaN propagates through both)
        np.multiply(z, slope, out=w[0])
        (np.maximum if slope <= 1.0 else np.minimum)(z, w[0], out=z)
    elif name == "tanh":
        np.tanh(z, out=z)
    elif name == "sigmoid":
        _sigmoid(z, z)
    elif name == "silu":
        _sigmoid(z, w[0])
        z *= w[0]
    elif name == "gelu":
        _phi(z, w[0], w[1:])
        z *= w[0]
    elif name == "gelu_tanh":
        _gelu_tanh_gate(z, w[0])
        w[0] += 1.0
        w[0] *= 0.5
        z *= w[0]
    elif name != "identity":
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {name!r}")


def _leaky_derivative(z: np.ndarray, slope: float, d: np.ndarray) -> None:
    """``d = 1 if z > 0 else slope`` (a NaN z takes the slope, as in PyTorch)."""
    # h (1 - slope) + slope with h = [z > 0]: exactly 1 or slope, but for slope -0.0,
    # which 0.0 + -0.0 would turn into 0.0 (the gradient's zeros take the slope's sign)
    if 0.0 <= slope <= 1.0 and math.copysign(1.0, slope) > 0:
        np.greater(z, 0, out=d)
        d *= 1.0 - slope
        d += slope
    else:
        d.fill(slope)
        np.copyto(d, 1.0, where=z > 0)


def _derivative(
    v: np.ndarray, name: str, of_output: bool, d: np.ndarray, w: list[np.ndarray]
) -> None:
    """``d = act'(z)`` for a flat block ``v`` (``z``, or ``act(z)`` when ``of_output``),
    read only, for the activations without a mask form; ``w``: four scratch arrays."""
    if name in ("sigmoid", "tanh"):
        s = v
        if not of_output:
            s = d
            if name == "sigmoid":
                _sigmoid(v, d)
            else:
                np.tanh(v, out=d)
        if name == "sigmoid":  # s (1 - s)
            np.subtract(1.0, s, out=w[0])
            np.multiply(s, w[0], out=d)
        else:  # 1 - s^2
            np.multiply(s, s, out=d)
            np.subtract(1.0, d, out=d)
    elif name == "silu":  # s (1 + z (1 - s)),  s = sigmoid(z)
        _sigmoid(v, d)
        np.subtract(1.0, d, out=w[0])
        w[0] *= v
        w[0] += 1.0
        d *= w[0]
    elif name == "gelu":  # Phi(z) + z phi(z)
        _phi(v, d, w[1:])
        np.multiply(v, v, out=w[0])
        w[0] *= -0.5
        np.exp(w[0], out=w[0])
        w[0] *= _INV_SQRT_2PI
        w[0] *= v
        d += w[0]
    elif name == "gelu_tanh":
        # 0.5 (1 + t) + 0.5 z (1 - t^2) k (1 + 3 c z^2),  t = tanh(k (z + c z^3))
        _gelu_tanh_gate(v, w[0])
        np.multiply(v, v, out=w[1])
        w[1] *= 3.0 * _C_TANH
        w[1] += 1.0
        w[1] *= _K_TANH * 0.5
        w[1] *= v  # 0.5 k z (1 + 3 c z^2)
        np.multiply(w[0], w[0], out=d)
        np.subtract(1.0, d, out=d)
        d *= w[1]
        w[0] += 1.0
        w[0] *= 0.5
        d += w[0]
    else:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {name!r}")


def _plain(a: Any) -> np.ndarray:
    """``a`` as a plain ndarray view (no VirtualDeviceArray ufunc overrides)."""
    return a if type(a) is np.ndarray else np.asarray(a).view(np.ndarray)


def _rows(a: np.ndarray, c: int) -> np.ndarray:
    return a.reshape(-1, c) if a.size else a.reshape(0, max(c, 1))


def _tile(b: np.ndarray | None, room: np.ndarray, rows: int, c: int) -> np.ndarray | None:
    """``b`` repeated over ``rows`` rows, flat, in ``room`` (None without a bias)."""
    if b is None:
        return None
    if rows <= 1:
        return b
    tile = room[: rows * c]
    np.copyto(tile.reshape(rows, c), b)
    return tile


def _add_bias(x: np.ndarray, b: np.ndarray, tile: np.ndarray | None, out: np.ndarray) -> None:
    """``out = x + b`` for a block of rows: flat against the tiled bias where ``x`` is
    contiguous (a broadcast add runs NumPy's inner loop once per row, twice the time at
    1024 columns), broadcast otherwise."""
    if tile is not None and x.flags.c_contiguous:
        np.add(x.reshape(-1), tile[: out.size], out=out.reshape(-1))
    else:
        np.add(x, b, out=out)


def bias_activate(x: Any, bias: Any, out: Any, name: str, slope: float) -> Any:
    """``out = act(x + bias)`` (``bias`` may be None; ``out`` C-contiguous, shaped like
    ``x``, and may be ``x`` itself), in one blocked, threaded pass; returns ``out``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[-2.0, 0.0], [3.0, -1.0]])
    >>> bias_activate(x, np.array([1.0, 0.5]), np.empty_like(x), "relu", 0.0).tolist()
    [[0.0, 0.5], [4.0, 0.0]]
    """
    c = x.shape[-1] if x.ndim else 1
    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {name!r}")
    x2, o2, b = _rows(_plain(x), c), _rows(_plain(out), c), bias
    b = None if bias is None else _plain(bias)
    # the kernels read c entries of the bias by its address: exactly c, or NumPy's ufuncs
    # (which broadcast a bias of one, refuse others)
    if native.takes(x2, o2, b) and (b is None or b.shape == (c,)):
        native.bias_act(x2, b, o2, name, slope)
        return out
    itemsize = o2.dtype.itemsize
    if o2.size * itemsize <= BLOCK:  # one block: no pool, no tiling
        if b is not None:
            np.add(x2, b, out=o2)
        elif x2 is not o2:
            np.copyto(o2, x2)
        if name != "identity":
            with np.errstate(over="ignore"):
                _forward(o2.reshape(-1), name, slope, scratch(o2.dtype, 4, o2.size))
        return out

    def work(_k: int, lo: int, hi: int) -> None:
        step = spans(lo, hi, c * itemsize).step
        w = scratch(o2.dtype, 5, step * c)
        tile = _tile(b, w[4], min(step, hi - lo), c)
        with np.errstate(over="ignore"):
            for r in spans(lo, hi, c * itemsize):
                ob = o2[r : min(r + step, hi)]
                if b is not None:
                    _add_bias(x2[r : r + ob.shape[0]], b, tile, ob)
                elif x2 is not o2:
                    np.copyto(ob, x2[r : r + ob.shape[0]])
                flat = ob.reshape(-1)
                if name != "identity":
                    _forward(flat, name, slope, [a[: flat.size] for a in w[:4]])

    run(work, x2.shape[0], c)
    return out


def gradient(
    grad: Any,
    v: Any,
    name: str,
    slope: float,
    *,
    bias: Any = None,
    of_output: bool = False,
    out: Any = None,
    want_bias: bool = False,
) -> tuple[Any, Any]:
    """``grad * act'(z)`` and, if ``want_bias``, its sum over every axis but the last.

    ``v`` is the activation's input before the bias (``z = v + bias``; ``bias`` None for
    none), or its output ``act(z)`` when ``of_output`` (only for :data:`FROM_OUTPUT`);
    it is only read. ``out`` (C-contiguous, ``grad``'s shape; may be ``grad`` itself)
    receives the gradient, else a new array does. One blocked, threaded pass over
    ``grad`` and ``v``: the bias gradient is summed from the blocks while in cache.

    Examples
    --------
    >>> import numpy as np
    >>> gx, gb = gradient(np.ones((2, 2)), np.array([[-1.0, 2.0], [3.0, 4.0]]), "leaky_relu",
    ...                   0.1, want_bias=True)
    >>> gx.tolist(), gb.tolist()
    ([[0.1, 1.0], [1.0, 1.0]], [1.1, 2.0])
    >>> y = np.tanh(np.array([0.5]))
    >>> g, _ = gradient(np.ones(1), y, "tanh", 0.0, of_output=True)
    >>> bool(np.isclose(g[0], 1 - y[0] ** 2))
    True
    """
    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {name!r}")
    if of_output and name not in FROM_OUTPUT:
        raise ValueError(f"the derivative of {name!r} is not a function of its output")
    if out is None:
        out = np.empty_like(grad, order="C")
    c = v.shape[-1] if v.ndim else 1
    g2 = _rows(np.ascontiguousarray(_plain(grad)), c)
    v2 = _rows(np.ascontiguousarray(_plain(v)), c)
    o2 = _rows(_plain(out), c)
    if g2.shape != v2.shape or o2.shape != g2.shape:  # the kernels take their addresses
        raise ValueError(
            f"gradient: grad {np.shape(grad)}, v {np.shape(v)} and out {np.shape(out)} must "
            "have one shape"
        )
    b = None if bias is None else _plain(bias)
    if native.takes(g2, v2, o2, b) and (b is None or b.shape == (c,)):  # as bias_activate
        return out, native.bias_act_grad(g2, v2, b, o2, name, slope, of_output, want_bias)
    dtype = o2.dtype
    itemsize = dtype.itemsize

    def block(gb: np.ndarray, vb: np.ndarray, ob: np.ndarray, tile: Any, w: list) -> None:
        """``ob = gb * act'(vb + b)`` for a block of rows (``w``: 6 scratch arrays)."""
        n = ob.size
        if name == "identity":
            if gb is not ob:
                np.copyto(ob, gb)
            return
        w = [a[:n] for a in w[:6]]
        z = vb.reshape(-1)
        if b is not None:
            z = w[5]
            _add_bias(vb, b, tile, z.reshape(vb.shape))
        gf, of = gb.reshape(-1), ob.reshape(-1)
        if name == "relu":  # 0 where z <= 0, else grad (NaN passes it, as in PyTorch)
            np.less_equal(z, 0, out=w[0])
            np.subtract(1, w[0], out=w[0])
        elif name == "leaky_relu":
            _leaky_derivative(z, slope, w[0])
        else:
            _derivative(z, name, of_output, w[0], w[1:5])
        np.multiply(gf, w[0], out=of)

    if o2.size * itemsize <= BLOCK:  # one block: no pool, no tiling
        with np.errstate(over="ignore"):
            block(g2, v2, o2, None, scratch(dtype, 6, o2.size))
        if not want_bias:
            return out, None
        if dtype in (np.float32, np.float64):  # BLAS gemv, 2-3x a column sum (gk.nn bias_grad)
            return out, np.ones(o2.shape[0], dtype) @ o2
        return out, o2.sum(axis=0)

    def work(_k: int, lo: int, hi: int) -> np.ndarray | None:
        acc = np.zeros(c, dtype) if want_bias else None
        step = spans(lo, hi, c * itemsize).step
        w = scratch(dtype, 7, step * c)
        tile = _tile(b, w[6], min(step, hi - lo), c)
        with np.errstate(over="ignore"):
            for r in spans(lo, hi, c * itemsize):
                ob = o2[r : min(r + step, hi)]
                block(g2[r : r + ob.shape[0]], v2[r : r + ob.shape[0]], ob, tile, w)
                if acc is not None:
                    acc += ob.sum(axis=0)
        return acc

    parts = run(work, g2.shape[0], c)
    gbias = None
    if want_bias:
        gbias = parts[0]
        for p in parts[1:]:
            gbias += p
    return out, gbias


def column_sums(grad: Any) -> Any:
    """``grad`` summed over every axis but the last: the identity's bias gradient, whose
    input gradient is ``grad`` itself. ``grad`` is only read (a read-only array too).

    Summed as :func:`gradient` sums the identity's bias gradient (blocks of rows in the
    array's type, added in float64), threaded the same way, without writing a copy.

    Examples
    --------
    >>> import numpy as np
    >>> column_sums(np.arange(6.0).reshape(3, 2)).tolist()
    [6.0, 9.0]
    """
    c = grad.shape[-1] if grad.ndim else 1
    g2 = _rows(np.ascontiguousarray(_plain(grad)), c)
    if native.takes(g2):
        return native.bias_act_grad(g2, g2, None, g2, "identity", 0.0, False, True)
    if g2.dtype in (np.float32, np.float64):  # as gradient's one-block sums
        return np.ones(g2.shape[0], g2.dtype) @ g2
    return g2.sum(axis=0)
