"""Layers: Linear, the activations, Softmax, Dropout, LayerNorm.

Each layer's forward keeps what its backward needs; layers call only array
operations of their inputs' namespace (NumPy or CuPy) and ``gpukit.nn._act``.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from .. import _dispatch
from .._dispatch.capabilities import declare, same
from .._runtime.memory import operation
from .._user_kernels import ElementwiseKernel
from ..kernels._checks import check_range, real
from . import _act, _gemm, _random
from .module import Module, Parameter, as_dtype, namespace_of, on_device_of, on_grad_device

__all__ = [
    "GELU",
    "Activation",
    "Dropout",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "ReLU",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Tanh",
]

#: NumPy's reductions along an axis (Softmax): ufunc.reduce(a, axis, dtype, out, keepdims)
_MAXIMUM, _ADD = np.maximum.reduce, np.add.reduce
#: The dtypes a Python float multiplies a host array in without a scalar of its own (Dropout)
_FLOAT32_64 = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


def _size(op: str, value: Any, name: str, lo: int = 0) -> int:
    """An integer ``>= lo``: TypeError for a float, a string or a bool, ValueError below."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{op}: {name} must be an integer, got {value!r}")
    if value < lo:
        raise ValueError(f"{op}: {name} must be >= {lo}, got {value!r}")
    return int(value)


def _float_dtype(op: str, dtype: Any) -> np.dtype:
    """A floating parameter dtype (TypeError otherwise: an integer weight cannot learn)."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{op}: dtype must be a floating dtype, got {dtype!r}") from None
    if dt.kind != "f":
        raise TypeError(f"{op}: dtype must be a floating dtype, got {dt}")
    return dt.newbyteorder("=")  # parameters live in native order (CuPy has no other)


def _seed(op: str, seed: Any) -> int | None:
    return None if seed is None else _size(op, seed, "seed")


def _real_input(name: str, x: Any) -> None:
    """Activations and Softmax are defined on real numbers (a complex max means nothing)."""
    if x.dtype.kind == "c":
        raise TypeError(f"gk.nn.{name}: x must be real, got dtype {x.dtype}")


def _floating_input(name: str, x: Any) -> Any:
    """A built-in activation's or Softmax's input: real, with bool and integers in float64
    (as NumPy's ``exp`` gives them: the formulas and the fused kernels are floating)."""
    _real_input(name, x)
    return x.astype(np.float64) if x.dtype.kind in "biu" else x


def _flat(a: Any, n: int) -> Any:
    """View of ``a`` as a matrix with ``n`` columns (rows = every leading axis)."""
    return a if a.ndim == 2 else a.reshape(-1, n)


class Linear(Module):
    """``y = x @ weight.T + bias``, PyTorch's ``nn.Linear``.

    Parameters
    ----------
    in_features, out_features : int
        Sizes of the last axis of the input and of the output.
    bias : bool
        Whether to add a learnt bias.
    dtype : dtype
        Parameter dtype (float32 by default, as in PyTorch).
    seed : int, optional
        Seed of the initialisation; the generator of :func:`gpukit.nn.manual_seed`
        when omitted.

    Attributes
    ----------
    weight : Parameter
        Shape ``(out_features, in_features)``, uniform in ``±1/sqrt(in_features)``
        (PyTorch's default, Kaiming-uniform with ``a=sqrt(5)``).
    bias : Parameter or None
        Shape ``(out_features,)``, uniform in the same range.

    Raises
    ------
    ValueError
        A size is negative; in the forward pass, an input whose last axis is not
        ``in_features`` long.
    TypeError
        A size or seed that is not an integer, a dtype that is not floating.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> layer = gk.nn.Linear(3, 2, seed=0)
    >>> layer(np.ones((4, 3), dtype="float32")).shape
    (4, 2)
    """

    @operation("gk.nn.Linear")
    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        *,
        dtype: Any = "float32",
        seed: int | None = None,
    ) -> None:
        super().__init__()
        n_in = _size("gk.nn.Linear", in_features, "in_features")
        n_out = _size("gk.nn.Linear", out_features, "out_features")
        dtype = _float_dtype("gk.nn.Linear", dtype)
        rng = _random.generator(_seed("gk.nn.Linear", seed))
        bound = 1.0 / math.sqrt(n_in) if n_in > 0 else 0.0
        w = rng.uniform(-bound, bound, (n_out, n_in)).astype(dtype)
        # the parameters first among the attributes: a call's search for the module's
        # first parameter (Module._anchor) stops there
        self.weight = Parameter(_dispatch.asarray(w))
        self.bias = None
        if bias:
            b = rng.uniform(-bound, bound, n_out).astype(dtype)
            self.bias = Parameter(_dispatch.asarray(b))
        self.in_features, self.out_features = n_in, n_out
        self._x: Any = None

    def forward(self, x: Any) -> Any:
        if x.ndim < 1 or x.shape[-1] != self.in_features:
            raise ValueError(
                f"Linear(in_features={self.in_features}) got an input of shape "
                f"{tuple(x.shape)}: its last axis must have {self.in_features} features"
            )
        self._x = x
        y = _gemm.matmul(x, self.weight.data.T)
        if self.bias is not None:
            y += self.bias.data
        return y

    @on_grad_device
    def backward(self, grad_output: Any, *, need_input_grad: bool = True) -> Any:
        return self._backward(grad_output, need_input_grad, None)

    _atomic_backward = True  # the gradients are added once all three are computed

    def _backward(self, g: Any, need_input_grad: bool, grad_bias: Any) -> Any:
        x, weight, bias = self._x, self.weight, self.bias
        if g.ndim == 2 and x.ndim == 2:  # a batch of rows, the common case: no reshape
            gt, xt = g.T, x
        else:
            gt, xt = _flat(g, self.out_features).T, _flat(x, self.in_features)
        # written straight into the optimizer's flat gradient buffer when it can be
        grad_weight = _gemm.matmul(gt, xt, weight._grad_target())
        if bias is not None and grad_bias is None:
            grad_bias = _act.bias_grad(g, bias._grad_target())
        grad_input = _gemm.matmul(g, weight.data) if need_input_grad else None
        weight.accumulate(grad_weight)
        if bias is not None:
            bias.accumulate(grad_bias)
        return grad_input

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class _Activation(Module):
    """An elementwise activation; ``_name`` is its name in ``gpukit.nn._act``."""

    _name = "identity"
    negative_slope = 0.0
    _atomic_backward = True  # no parameters
    # a warm pass is one kept kernel, which launches on its arrays' device: only a cold
    # one (which may also convert its input) makes that device current, not every call
    _forward_on_input_device = True

    def __init__(self) -> None:
        super().__init__()
        self._saved: Any = None

    def forward(self, x: Any) -> Any:
        y = _act.planned(self, x)  # a warm call, which keeps self._saved
        if y is None:
            with on_device_of(x):
                if x.dtype.kind != "f":
                    x = _floating_input(type(self).__name__, x)
                y, self._saved = _act.forward(
                    self._name, x, None, self.negative_slope, overwrite=False
                )
        return y

    def backward(self, grad_output: Any, *, need_input_grad: bool = True) -> Any:
        if not need_input_grad:
            return None
        gz = _act.planned_backward(self._name, grad_output, self._saved, self.negative_slope)
        if gz is None:  # as forward: a cold pass computes on the gradient's device
            with on_device_of(grad_output):
                gz, _ = _act.backward(
                    self._name, grad_output, self._saved, None, self.negative_slope, want_bias=False
                )
        return gz


class ReLU(_Activation):
    """``max(x, 0)``.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> gk.nn.ReLU()(np.array([-1.0, 2.0], dtype="float32")).tolist()
    [0.0, 2.0]
    """

    _name = "relu"


class LeakyReLU(_Activation):
    """``x`` where positive, ``negative_slope * x`` elsewhere.

    Parameters
    ----------
    negative_slope : float
        Slope for negative inputs (0.01 as in PyTorch).

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> gk.nn.LeakyReLU(0.1)(np.array([-1.0, 2.0])).tolist()
    [-0.1, 2.0]
    """

    _name = "leaky_relu"

    def __init__(self, negative_slope: float = 0.01) -> None:
        super().__init__()
        self.negative_slope = real("gk.nn.LeakyReLU", negative_slope, "negative_slope")

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class GELU(_Activation):
    """Gaussian error linear unit, ``x * Phi(x)``.

    Parameters
    ----------
    approximate : {"none", "tanh"}
        ``"none"``: the exact erf form (default); ``"tanh"``: the tanh approximation,
        as PyTorch's ``approximate`` argument.

    Raises
    ------
    ValueError
        ``approximate`` is neither.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> round(float(gk.nn.GELU()(np.array([1.0]))[0]), 4)
    0.8413
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate
        self._name = "gelu" if approximate == "none" else "gelu_tanh"

    def extra_repr(self) -> str:
        return "" if self.approximate == "none" else "approximate='tanh'"


class SiLU(_Activation):
    """``x * sigmoid(x)`` (swish).

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> float(gk.nn.SiLU()(np.array([0.0]))[0])
    0.0
    """

    _name = "silu"


class Tanh(_Activation):
    """Hyperbolic tangent.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> float(gk.nn.Tanh()(np.array([0.0]))[0])
    0.0
    """

    _name = "tanh"


class Sigmoid(_Activation):
    """Logistic function ``1 / (1 + exp(-x))``.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> float(gk.nn.Sigmoid()(np.array([0.0]))[0])
    0.5
    """

    _name = "sigmoid"


class Activation(Module):
    """An activation written by the user: a :func:`gpukit.elementwise` kernel and its gradient.

    Each pass is one kernel launch on the GPU (one NumPy evaluation on the host); the
    forward input is kept for the backward pass.

    Parameters
    ----------
    forward : ElementwiseKernel
        ``y = forward(x)``, a kernel of one parameter (made by :func:`gpukit.elementwise`;
        declare its dtypes ``"T"`` so that float32 and float64 models both work).
    backward : ElementwiseKernel
        ``grad_x = backward(x, grad_y)``: the gradient of the loss with respect to ``x``
        given ``grad_y``, its gradient with respect to ``y`` (``grad_y * forward'(x)``).

    Raises
    ------
    TypeError
        ``forward`` or ``backward`` is not an elementwise kernel of one (two) parameters;
        at a call, a complex input.

    See Also
    --------
    gpukit.elementwise : How the kernels are written.
    GELU, SiLU : The built-in activations (fused with the bias in ``gk.kernels``).

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> @gk.elementwise
    ... def softsign(x):
    ...     return x / (1.0 + abs(x))
    >>> @gk.elementwise
    ... def softsign_grad(x, g):
    ...     return g / ((1.0 + abs(x)) * (1.0 + abs(x)))
    >>> act = gk.nn.Activation(softsign, softsign_grad)
    >>> act(np.array([-1.0, 3.0])).tolist()
    [-0.5, 0.75]
    >>> act.backward(np.ones(2)).tolist()
    [0.25, 0.0625]
    """

    _atomic_backward = True  # no parameters

    def __init__(self, forward: ElementwiseKernel, backward: ElementwiseKernel) -> None:
        super().__init__()
        for name, kernel, n in (("forward", forward, 1), ("backward", backward, 2)):
            if not isinstance(kernel, ElementwiseKernel) or len(kernel.params) != n:
                raise TypeError(
                    f"gk.nn.Activation: {name} must be a gk.elementwise kernel of {n} "
                    f"parameter{'s' if n > 1 else ''}, got {kernel!r}"
                )
        self.fn, self.grad_fn = forward, backward
        self._x: Any = None

    def forward(self, x: Any) -> Any:
        _real_input("Activation", x)
        self._x = x
        return self.fn(x)

    @on_grad_device
    def backward(self, grad_output: Any, *, need_input_grad: bool = True) -> Any:
        return self.grad_fn(self._x, grad_output) if need_input_grad else None

    def extra_repr(self) -> str:
        return f"{self.fn.__name__}, {self.grad_fn.__name__}"


class Softmax(Module):
    """Softmax along ``dim``: ``exp(x) / sum(exp(x))``.

    Parameters
    ----------
    dim : int
        Axis normalised to sum to one (the last by default).

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> gk.nn.Softmax()(np.zeros((1, 4))).tolist()
    [[0.25, 0.25, 0.25, 0.25]]
    """

    _atomic_backward = True  # no parameters

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
            raise TypeError(f"gk.nn.Softmax: dim must be an integer, got {dim!r}")
        self.dim = int(dim)
        self._y: Any = None

    def forward(self, x: Any) -> Any:
        if x.dtype.kind != "f":  # shifting integers by the max must not wrap
            x = _floating_input("Softmax", x)
        dim = self.dim
        if type(x) is np.ndarray:  # the ufunc reductions ndarray.max and .sum call, without
            # NumPy's Python layer around them (numpy/_core/_methods.py: ~1.1k instructions
            # each, as much as the reduction of a small row)
            y = np.exp(x - _MAXIMUM(x, dim, None, None, True))
            y /= _ADD(y, dim, None, None, True)
        else:
            y = namespace_of(x).exp(x - x.max(axis=dim, keepdims=True))
            y /= y.sum(axis=dim, keepdims=True)
        self._y = y
        return y

    @on_grad_device
    def backward(self, grad_output: Any, *, need_input_grad: bool = True) -> Any:
        if not need_input_grad:
            return None
        y, dim = self._y, self.dim
        gy = grad_output * y
        if type(gy) is np.ndarray:  # the ufunc reduction itself, as forward
            g = grad_output - _ADD(gy, dim, None, None, True)
        else:
            g = grad_output - gy.sum(axis=dim, keepdims=True)
        g *= y
        return g

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Dropout(Module):
    """Zero each element with probability ``p`` in training, scale the rest by 1/(1-p).

    Parameters
    ----------
    p : float
        Drop probability, in [0, 1].
    seed : int, optional
        Seed of the mask stream; drawn from :func:`gpukit.nn.manual_seed`'s generator
        when omitted. Masks are drawn on the input's device.

    Raises
    ------
    ValueError
        ``p`` is outside [0, 1] or not finite.
    TypeError
        ``p`` is not a real number, ``seed`` not an integer.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> drop = gk.nn.Dropout(0.5, seed=0)
    >>> sorted(set(drop(np.ones(100)).tolist()))
    [0.0, 2.0]
    >>> drop.eval()(np.ones(3)).tolist()
    [1.0, 1.0, 1.0]
    """

    _atomic_backward = True  # no parameters

    def __init__(self, p: float = 0.5, *, seed: int | None = None) -> None:
        super().__init__()
        self.p = check_range("gk.nn.Dropout", p, "p", 0.0, 1.0, hi_open=False)
        seed = _seed("gk.nn.Dropout", seed)
        self._seed = int(_random.generator(seed).integers(2**63)) if seed is None else seed
        self._rngs: dict[Any, Any] = {}
        self._mask: Any = None

    def _rng(self, x: Any) -> Any:
        """The mask generator for ``x``'s library and device (CuPy's lives on one device)."""
        if type(x) is np.ndarray:
            key: Any = np.ndarray
        else:
            owner = _dispatch.owner_of(x)
            key = (type(x), None if owner is None else owner.device_of(x))
        rng = self._rngs.get(key)
        if rng is None:
            xp = _dispatch.namespace(x)
            with on_device_of(x):
                rng = self._rngs[key] = xp.random.default_rng(self._seed)
        return rng

    def _draw(self, x: Any, p: float, rng: Any) -> Any:
        """A mask shaped like ``x``: 0 with probability ``p``, else ``1 / (1 - p)`` (``rng``:
        the generator for ``x`` where the caller has it)."""
        if rng is None:
            rng = self._rng(x)
        mask = (rng.random(x.shape, dtype=np.float32) >= p).astype(x.dtype)
        if p < 1.0:
            scale = 1.0 / (1.0 - p)
            if type(mask) is np.ndarray and mask.dtype in _FLOAT32_64:
                # NumPy casts a Python float to the array's dtype before it multiplies
                # (NEP 50): the value of x.dtype.type(scale), without making the scalar
                mask *= scale
            else:  # CuPy may multiply in float64 and round once; float16 may overflow
                mask *= x.dtype.type(scale)
        return mask

    def forward(self, x: Any) -> Any:
        p = self.p
        if not self.training or p == 0.0:
            self._mask = None
            return x
        if type(x) is np.ndarray:
            mask = self._draw(x, p, self._rngs.get(np.ndarray))
        else:
            with on_device_of(x):  # CuPy draws and allocates on the current device
                mask = self._draw(x, p, None)
        self._mask = mask
        return x * mask

    @on_grad_device
    def backward(self, grad_output: Any, *, need_input_grad: bool = True) -> Any:
        if not need_input_grad:
            return None
        return grad_output if self._mask is None else grad_output * self._mask

    def extra_repr(self) -> str:
        return f"p={self.p}"


#: The last ``k`` axes, counted from the end, by ``k`` (LayerNorm's axes for any input)
_TRAILING: dict[int, tuple[int, ...]] = {}


def _row_mean(a: Any, axes: tuple[int, ...], n: int) -> Any:
    """``a.mean(axis=axes, keepdims=True)`` for rows of ``n`` elements; on the host as the
    sum divided by ``n`` in place: NumPy's ``mean`` wraps the same sum and division in a
    Python layer that costs more than both on small rows (CuPy's is one launch, not two)."""
    if type(a) is not np.ndarray:
        return a.mean(axis=axes, keepdims=True)
    total = _ADD(a, axes, None, None, True)  # ndarray.sum without its Python layer
    total /= n
    return total


def _scaled_rstd(xc: np.ndarray, axes: tuple[int, ...], eps: float, rstd: np.ndarray) -> Any:
    """``1 / sqrt(var + eps)`` of rows whose sum of squares overflowed, from the rows scaled
    by a power of two near their largest magnitude (exact): a float32 row ``[0, 2.6e19]``
    has a variance of 1.7e38 but a sum of squares beyond float32, and was normalised to 0
    (as PyTorch does) instead of ``[-1, 1]`` (the fuzz test). Rows with NaN keep theirs."""
    shift = np.frexp(np.abs(xc).max(axis=axes, keepdims=True))[1]
    xs = np.ldexp(xc, -shift)
    var = (xs * xs).mean(axis=axes, keepdims=True)
    scaled = np.ldexp(1 / np.sqrt(var + np.ldexp(xc.dtype.type(eps), -2 * shift)), -shift)
    return np.where(np.isnan(rstd), rstd, scaled).astype(xc.dtype, copy=False)


class LayerNorm(Module):
    """Normalise over the last axes to zero mean, unit variance; then scale and shift.

    Parameters
    ----------
    normalized_shape : int or tuple of int
        Shape of the trailing axes normalised together.
    eps : float
        Added to the variance.
    elementwise_affine : bool
        Whether to learn ``weight`` (ones) and ``bias`` (zeros) of that shape.
    bias : bool
        Whether the affine part has a bias.
    dtype : dtype
        Parameter dtype.

    Raises
    ------
    TypeError
        A size that is not an integer, ``eps`` not a real number, a dtype that is not
        floating.
    ValueError
        A size below 1, ``eps`` negative or not finite; in the forward pass, an input
        whose last axes are not ``normalized_shape``.

    Examples
    --------
    >>> import numpy as np
    >>> import gpukit as gk
    >>> y = gk.nn.LayerNorm(4)(np.array([[1.0, 2.0, 3.0, 4.0]], dtype="float32"))
    >>> bool(abs(float(y.mean())) < 1e-6)
    True
    """

    @operation("gk.nn.LayerNorm")
    def __init__(
        self,
        normalized_shape: int | tuple[int, ...],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        *,
        dtype: Any = "float32",
    ) -> None:
        super().__init__()
        op = "gk.nn.LayerNorm"
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
        if not isinstance(shape, tuple | list):
            raise TypeError(
                f"{op}: normalized_shape must be an integer or a tuple of integers, got "
                f"{normalized_shape!r}"
            )
        self.normalized_shape = tuple(_size(op, n, "normalized_shape", 1) for n in shape)
        self.eps = check_range(op, eps, "eps", 0.0)
        dtype = _float_dtype(op, dtype)
        self.weight = self.bias = None
        if elementwise_affine:
            self.weight = Parameter(_dispatch.asarray(np.ones(self.normalized_shape, dtype)))
            if bias:
                self.bias = Parameter(_dispatch.asarray(np.zeros(self.normalized_shape, dtype)))
        self._cache: Any = None

    def _axes(self, x: Any) -> tuple[int, ...]:
        """The normalised axes of ``x``, counted from the end (ValueError for a wrong shape)."""
        k = len(self.normalized_shape)
        if tuple(x.shape[-k:]) != self.normalized_shape:
            raise ValueError(
                f"LayerNorm{self.normalized_shape} got an input of shape {tuple(x.shape)}: "
                f"its last {k} axes must be {self.normalized_shape}"
            )
        axes = _TRAILING.get(k)
        if axes is None:
            axes = _TRAILING[k] = tuple(range(-k, 0))
        return axes

    def forward(self, x: Any) -> Any:
        xp = namespace_of(x)
        axes = self._axes(x)
        # float16 statistics in float32, as PyTorch does: squares of float16 overflow at 65504
        work = x.astype(np.float32) if x.dtype.char == "e" else x
        n = math.prod(self.normalized_shape)
        mean = _row_mean(work, axes, n)
        xc = work - mean
        # corrected two-pass: the centred rows' own mean is the first mean's rounding error
        # (a row of equal entries of 7e16 in float32 was centred to +-4e9 and normalised
        # to +-1 instead of 0 on CuPy; found by the fuzz test)
        xc -= _row_mean(xc, axes, n)
        if xp is np:
            with np.errstate(over="ignore"):  # an overflowing sum of squares is rescued below
                var = _row_mean(xc * xc, axes, n)
        else:  # CuPy reports no floating-point errors: no errstate to pay for
            var = _row_mean(xc * xc, axes, n)
        rstd = 1 / xp.sqrt(var + float(self.eps))  # a Python float is weak: work's dtype
        if xp is np and not np.isfinite(var).all():  # host: a free check of one value a row
            rstd = _scaled_rstd(xc, axes, self.eps, rstd)
        xhat = xc * rstd
        self._cache = (xhat, rstd, axes)
        if self.weight is None:
            return as_dtype(xhat, x.dtype)
        y = xhat * self.weight.data
        if self.bias is not None:
            y += self.bias.data
        return as_dtype(y, x.dtype)

    @on_grad_device
    def backward(self, grad_output: Any, *, need_input_grad: bool = True) -> Any:
        xhat, rstd, axes = self._cache
        g = as_dtype(grad_output, xhat.dtype)  # float16 in float32, as forward
        lead = tuple(range(g.ndim - len(axes)))
        if self.weight is not None:
            dtype = self.weight.data.dtype
            self.weight.accumulate(as_dtype((g * xhat).sum(axis=lead), dtype))
            if self.bias is not None:
                self.bias.accumulate(as_dtype(g.sum(axis=lead), dtype))
            g = g * self.weight.data
        if not need_input_grad:
            return None
        n = math.prod(self.normalized_shape)
        gx = g - _row_mean(g, axes, n)
        gx -= xhat * _row_mean(g * xhat, axes, n)
        gx *= rstd
        return as_dtype(gx, grad_output.dtype)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.weight is not None}"
        )


# The layers as called on an input of each dtype (a layer with parameters built in it).
# Layers without parameters compute where their input is.
_HOST = {"host": "computed on the host, where the data is"}
declare("gk.nn.Linear", lambda d: _float_dtype("gk.nn.Linear", d))
declare(
    "gk.nn.LayerNorm",
    lambda d: _float_dtype("gk.nn.LayerNorm", d),
    notes={"float16": "computed in float32"},
)
for _cls in (ReLU, LeakyReLU, GELU, SiLU, Tanh, Sigmoid, Softmax):
    declare(
        f"gk.nn.{_cls.__name__}",
        lambda d, name=_cls.__name__: _floating_input(name, np.empty(0, d)).dtype,
        notes=_HOST,
    )
declare("gk.nn.Dropout", same, notes=_HOST)
