"""One small, valid call of every operation in ``gk.capabilities()``, for any dtype and kind.

``CASES[operation](x)`` runs the operation once on tiny inputs of ``x.dtype`` and returns
what it returned. ``x`` (:class:`Inputs`) makes the data and places it: ``x.main`` turns
an operand into the array kind of the cell being checked (a native array of the backend,
host data given to a device backend, a sharded array, a Dask array), ``x.other`` places
the operands that stay plain (a right-hand side next to a sharded matrix). The inputs are
valid for every dtype that the operation accepts (nonsingular, positive definite,
labels in range), so a cell that raises means the dtype or kind is refused, never that
the data was bad.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import gpukit as gk

CASES: dict[str, Callable[[Inputs], Any]] = {}


class Inputs:
    """Data of one dtype, placed as one cell (backend, kind) wants it."""

    def __init__(self, dtype: np.dtype, rng: np.random.Generator, main: Callable, other: Callable):
        self.dtype, self.rng = np.dtype(dtype), rng
        self.main, self.other = main, other

    def data(self, *shape: int, dtype: Any = None) -> np.ndarray:
        """Values in [1, 3): exact in every dtype's range, never zero."""
        dt = self.dtype if dtype is None else np.dtype(dtype)
        if dt.kind == "b":
            return self.rng.random(shape) < 0.5
        if dt.kind in "iu":
            return self.rng.integers(1, 3, shape).astype(dt)
        x = 1 + 2 * self.rng.random(shape)
        if dt.kind == "c":
            x = x + 1j * self.rng.random(shape)
        return x.astype(dt)

    def spd(self, n: int) -> np.ndarray:
        """A Hermitian positive-definite matrix in this dtype (the identity for bool)."""
        if self.dtype.kind == "b":
            return np.eye(n, dtype=bool)
        return (np.eye(n) * (n + 1) + np.ones((n, n))).astype(self.dtype)

    def labels(self, n: int, classes: int) -> np.ndarray:
        return self.rng.integers(0, classes, n)


def case(*names: str) -> Callable[[Callable[[Inputs], Any]], Callable[[Inputs], Any]]:
    def register(fn: Callable[[Inputs], Any]) -> Callable[[Inputs], Any]:
        for name in names:
            CASES[name] = fn
        return fn

    return register


# -- gpukit --------------------------------------------------------------------------------


@case("gk.asarray")
def _asarray(x: Inputs) -> Any:
    return gk.asarray(x.main(x.data(4, 3)))


@case("gk.to_numpy")
def _to_numpy(x: Inputs) -> Any:
    return gk.to_numpy(x.main(x.data(4, 3)))


@case("gk.shard")
def _shard(x: Inputs) -> Any:
    return gk.shard(x.main(x.data(4, 3)))


@case("gk.matmul")
def _matmul(x: Inputs) -> Any:
    return gk.matmul(x.main(x.data(4, 3)), x.other(x.data(3, 2)))


@gk.elementwise
def _scaled(v):
    return 2 * v + 1


@gk.reduction
def _sum_of_squares(v):
    return sum(v * v)


@case("gk.elementwise")
def _elementwise(x: Inputs) -> Any:
    return _scaled(x.main(x.data(4, 3)))


@case("gk.reduction")
def _reduction(x: Inputs) -> Any:
    return _sum_of_squares(x.main(x.data(4, 3)), axis=1)


# -- gk.fft ------------------------------------------------------------------------------------


def _fft_case(name: str) -> None:
    fn = getattr(gk.fft, name)
    one_d = not name.endswith(("2", "n"))

    @case(f"gk.fft.{name}")
    def run(x: Inputs) -> Any:
        # transformed axes whole, the first axis split by the sharded and Dask kinds
        if one_d:
            return fn(x.main(x.data(4, 6)), axis=-1)
        return fn(x.main(x.data(4, 4, 6)), axes=(-2, -1))


for _name in gk.fft.__all__:
    if _name.endswith(("fft", "fft2", "fftn")):
        _fft_case(_name)


def _shift_case(name: str) -> None:
    fn = getattr(gk.fft, name)
    case(f"gk.fft.{name}")(lambda x: fn(x.main(x.data(4, 6)), axes=-1))


for _name in ("fftshift", "ifftshift"):
    _shift_case(_name)

# -- gk.linalg ---------------------------------------------------------------------------------


@case("gk.linalg.solve")
def _solve(x: Inputs) -> Any:
    return gk.linalg.solve(x.main(x.spd(4)), x.other(x.data(4, 2)))


@case("gk.linalg.inv")
def _inv(x: Inputs) -> Any:
    return gk.linalg.inv(x.main(x.spd(4)))


@case("gk.linalg.det")
def _det(x: Inputs) -> Any:
    return gk.linalg.det(x.main(x.spd(4)))


@case("gk.linalg.slogdet")
def _slogdet(x: Inputs) -> Any:
    return gk.linalg.slogdet(x.main(x.spd(4)))


@case("gk.linalg.cholesky")
def _cholesky(x: Inputs) -> Any:
    return gk.linalg.cholesky(x.main(x.spd(4)))


@case("gk.linalg.cho_solve")
def _cho_solve(x: Inputs) -> Any:
    factor = np.linalg.cholesky(x.spd(4).astype(np.complex128 if x.dtype.kind == "c" else float))
    return gk.linalg.cho_solve((x.main(factor.astype(x.dtype)), True), x.other(x.data(4)))


@case("gk.linalg.eigh")
def _eigh(x: Inputs) -> Any:
    return gk.linalg.eigh(x.main(x.spd(4)))


@case("gk.linalg.svd")
def _svd(x: Inputs) -> Any:
    return gk.linalg.svd(x.main(x.data(4, 3)))


@case("gk.linalg.qr")
def _qr(x: Inputs) -> Any:
    return gk.linalg.qr(x.main(x.data(4, 3)))


@case("gk.linalg.lstsq")
def _lstsq(x: Inputs) -> Any:
    return gk.linalg.lstsq(x.main(x.spd(4)), x.other(x.data(4)))


@case("gk.linalg.norm")
def _norm(x: Inputs) -> Any:
    return gk.linalg.norm(x.main(x.data(4, 3)))


def _krylov_case(name: str) -> None:
    fn = getattr(gk.linalg, name)

    @case(f"gk.linalg.{name}")
    def run(x: Inputs) -> Any:
        return fn(x.main(x.spd(4)), x.main(x.data(4)))


for _name in ("cg", "gmres", "bicgstab", "minres"):
    _krylov_case(_name)

# -- gk.sparse ---------------------------------------------------------------------------------


@case("gk.sparse.csr_matrix")
def _csr(x: Inputs) -> Any:
    return gk.sparse.csr_matrix(x.main(x.spd(4)))


# -- gk.kernels --------------------------------------------------------------------------------


@case("gk.kernels.bias_activation")
def _bias_activation(x: Inputs) -> Any:
    return gk.kernels.bias_activation(x.main(x.data(4, 3)), x.other(x.data(3)), "relu")


@case("gk.kernels.bias_activation_backward")
def _bias_activation_backward(x: Inputs) -> Any:
    grad, z, bias = x.data(4, 3), x.data(4, 3), x.data(3)
    return gk.kernels.bias_activation_backward(x.main(grad), x.main(z), x.other(bias), "relu")


@case("gk.kernels.softmax_cross_entropy")
def _softmax_cross_entropy(x: Inputs) -> Any:
    return gk.kernels.softmax_cross_entropy(x.main(x.data(4, 3)), x.main(x.labels(4, 3)))


@case("gk.kernels.softmax_cross_entropy_backward")
def _softmax_cross_entropy_backward(x: Inputs) -> Any:
    probs, labels, grad = x.data(4, 3), x.labels(4, 3), x.data(4)
    return gk.kernels.softmax_cross_entropy_backward(x.main(probs), x.main(labels), x.main(grad))


@case("gk.kernels.sgd_update")
def _sgd_update(x: Inputs) -> Any:
    param = x.main(x.data(6))
    gk.kernels.sgd_update(param, x.other(x.data(6)), lr=0.1)
    return param


@case("gk.kernels.adam_update")
def _adam_update(x: Inputs) -> Any:
    param, m, v = x.main(x.data(6)), x.main(x.data(6)), x.main(x.data(6))
    gk.kernels.adam_update(param, x.other(x.data(6)), m, v, step=1, lr=0.1)
    return param


@case("gk.kernels.matmul_tiled")
def _matmul_tiled(x: Inputs) -> Any:
    return gk.kernels.matmul_tiled(x.main(x.data(4, 3)), x.other(x.data(3, 2)))


# -- gk.nn and gk.optim ----------------------------------------------------------------------


def _layer_case(name: str, make: Callable[[np.dtype], Any]) -> None:
    @case(f"gk.nn.{name}")
    def run(x: Inputs) -> Any:
        return make(x.dtype)(x.main(x.data(4, 3)))


_layer_case("Linear", lambda d: gk.nn.Linear(3, 2, dtype=d, seed=0))
_layer_case("LayerNorm", lambda d: gk.nn.LayerNorm(3, dtype=d))
_layer_case("Dropout", lambda d: gk.nn.Dropout(0.5, seed=0))
_layer_case("Softmax", lambda d: gk.nn.Softmax())
for _cls in (gk.nn.ReLU, gk.nn.LeakyReLU, gk.nn.GELU, gk.nn.SiLU, gk.nn.Tanh, gk.nn.Sigmoid):
    _layer_case(_cls.__name__, lambda d, cls=_cls: cls())


def _loss_case(name: str) -> None:
    cls = getattr(gk.nn, name)
    case(f"gk.nn.{name}")(lambda x: cls()(x.main(x.data(4, 3)), x.other(x.data(4, 3))))


for _name in ("MSELoss", "BCEWithLogitsLoss"):
    _loss_case(_name)


@case("gk.nn.CrossEntropyLoss")
def _cross_entropy(x: Inputs) -> Any:
    return gk.nn.CrossEntropyLoss()(x.main(x.data(4, 3)), x.other(x.labels(4, 3)))


def _predict_case(name: str) -> None:
    fn = getattr(gk.nn, name)

    @case(f"gk.nn.{name}")
    def run(x: Inputs) -> Any:
        model = gk.nn.Sequential(gk.nn.Linear(3, 2, dtype=x.dtype, seed=0))
        return fn(model, x.main(x.data(4, 3)), batch_size=2)


for _name in ("predict", "predict_proba"):
    _predict_case(_name)


def _optimizer_case(name: str) -> None:
    cls = getattr(gk.optim, name)

    @case(f"gk.optim.{name}")
    def run(x: Inputs) -> Any:
        param = gk.nn.Parameter(x.main(x.data(6)))
        optimizer = cls([param], lr=0.1)
        param.accumulate(x.main(x.data(6)))
        optimizer.step()
        return param.data


for _name in ("SGD", "Adam", "AdamW"):
    _optimizer_case(_name)
