"""The cases ``gpukit bench`` times, each with its work model (FLOPs or bytes per call).

A case builds, for one runner and size, a zero-argument callable doing one call of
the operation on data already in place; :class:`Unsupported` says why a runner has
no such operation. Everything is float32 (complex64 for FFTs), the dtype GPUs and the
ceilings are measured in.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._select import selection as _selection
from . import mlp
from .kernels import unfused_bias_gelu
from .runners import Runner

Call = Callable[[], object]


class Unsupported(Exception):
    """This runner cannot run this case (the message says why)."""


@dataclass(frozen=True)
class Case:
    """One benchmarked operation.

    Attributes
    ----------
    name : str
        Short name (``--cases``).
    axis : str
        What the size means, for the plot's x axis.
    quick, full : tuple of int
        Sizes for ``--quick`` and for the default run.
    unit : str
        ``"GFLOP/s"`` (compared with the matmul ceiling) or ``"GB/s"`` (the copy ceiling).
    work : callable
        ``work(size)``: FLOPs or bytes of one call.
    shape : callable
        ``shape(size)``: the problem in words, for the table.
    build : callable
        ``build(runner, size)``: the timed callable.
    """

    name: str
    axis: str
    quick: tuple[int, ...]
    full: tuple[int, ...]
    unit: str
    work: Callable[[int], float]
    shape: Callable[[int], str]
    build: Callable[[Runner, int], Call]


def _gk(path: str):
    """The gpukit function at dotted ``path`` (``"fft.fft2"``), or Unsupported if absent."""
    import gpukit

    obj = gpukit
    try:
        for part in path.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        raise Unsupported(f"gk.{path} is not in this gpukit") from None
    return obj


def _rand(shape, dtype="float32", seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


# -- matmul ---------------------------------------------------------------------------------
def _matmul(r: Runner, n: int) -> Call:
    a, b = r.put(_rand((n, n))), r.put(_rand((n, n), seed=1))
    op = _gk("matmul") if r.family == "gpukit" else r.xp.matmul
    return lambda: op(a, b)


# -- fft2 over a batch of 8 complex64 planes ------------------------------------------------
FFT_BATCH = 8


def _fft2(r: Runner, n: int) -> Call:
    x = r.put(_rand((FFT_BATCH, n, n), "complex64"))
    if r.family == "gpukit":
        op = _gk("fft.fft2")
        return lambda: op(x)
    if r.family == "numpy":  # the best raw CPU path: scipy.fft on every core
        import scipy.fft

        return lambda: scipy.fft.fft2(x, workers=-1)
    if r.family == "cupy":
        import cupyx.scipy.fft

        return lambda: cupyx.scipy.fft.fft2(x)
    return lambda: r.xp.fft.fft2(x)


# -- dense solve, well conditioned ----------------------------------------------------------
def _solve(r: Runner, n: int) -> Call:
    a = _rand((n, n)) + np.float32(n) * np.eye(n, dtype="float32")
    a, b = r.put(a), r.put(_rand((n, 1), seed=1))
    op = _gk("linalg.solve") if r.family == "gpukit" else r.xp.linalg.solve
    return lambda: op(a, b)


# -- cg on the 5-point Poisson matrix of an m x m grid, a fixed number of iterations --------
CG_ITERS = 25


def _cg_bytes(m: int) -> float:
    # per iteration: the CSR mat-vec (values + column indices per nonzero, x read, y
    # written) and CG's vector work (2 dots and 3 axpys: 13 vector passes), float32
    n, nnz = m * m, 5 * m * m - 4 * m
    return CG_ITERS * (8 * nnz + 4 * n * (2 + 13))


def _cg(r: Runner, m: int) -> Call:
    with _selection.use_backend("numpy"):  # gk.sparse.poisson2d's SciPy CSR matrix
        a_host = _gk("sparse.poisson2d")(m, np.float32)
    b_host = _rand(m * m)
    kw = {"rtol": 1e-30, "maxiter": CG_ITERS}  # unreachable: exactly CG_ITERS iterations
    if r.family == "torch":
        raise Unsupported("PyTorch has no conjugate-gradient solver")
    if r.family == "gpukit":
        with r.scope():
            a = _gk("sparse.csr_matrix")(a_host)
        op = _gk("linalg.cg")
    elif r.family == "numpy":
        import scipy.sparse.linalg

        a, op = a_host, scipy.sparse.linalg.cg
    else:
        import cupyx.scipy.sparse
        import cupyx.scipy.sparse.linalg

        a, op = cupyx.scipy.sparse.csr_matrix(a_host), cupyx.scipy.sparse.linalg.cg
    b = r.put(b_host)

    def call():
        with warnings.catch_warnings():  # not converging is the point here
            warnings.simplefilter("ignore")
            return op(a, b, **kw)

    return call


# -- fused bias + GELU (the kernels' showcase) against the unfused expression ----------------
KERNEL_COLS = 1024


def _bias_gelu(r: Runner, rows: int) -> Call:
    x = r.put(_rand((rows, KERNEL_COLS)))
    b = r.put(_rand(KERNEL_COLS, seed=1))
    if r.family == "gpukit":
        op = _gk("kernels.bias_activation")
        return lambda: op(x, b, "gelu")
    if r.family == "torch":
        gelu = r.xp.nn.functional.gelu
        return lambda: gelu(x + b)
    return lambda: unfused_bias_gelu(r.xp, x, b)


# -- one training step of a 784-256-10 ReLU MLP (forward, backward, SGD): see mlp.py -------
def _nn_step(r: Runner, batch: int) -> Call:
    x_host, y_host = mlp.data(batch)
    if r.family == "torch":
        return mlp.torch_step(r.xp, x_host, y_host, r.torch_device)
    x, y = r.put(x_host), r.put(y_host)
    if r.family == "gpukit":
        with r.scope():
            return mlp.gpukit_step(x, y)
    return mlp.hand_step(r.xp, x, y, r.put)


CASES = [
    Case(
        "matmul",
        "matrix order n",
        (256, 512, 1024),
        (256, 512, 1024, 2048, 4096),
        "GFLOP/s",
        lambda n: 2.0 * n**3,
        lambda n: f"{n}x{n} @ {n}x{n} float32",
        _matmul,
    ),
    Case(
        "fft2",
        "plane side n (batch of 8)",
        (128, 256, 512),
        (128, 256, 512, 1024, 2048),
        "GB/s",
        lambda n: 2.0 * FFT_BATCH * n * n * 8,
        lambda n: f"{FFT_BATCH}x{n}x{n} complex64",
        _fft2,
    ),
    Case(
        "solve",
        "matrix order n",
        (128, 256, 512),
        (128, 256, 512, 1024, 2048),
        "GFLOP/s",
        lambda n: 2.0 / 3.0 * n**3 + 2.0 * n**2,
        lambda n: f"{n}x{n} float32, 1 rhs",
        _solve,
    ),
    Case(
        "cg",
        "grid side m (m*m unknowns)",
        (64, 128, 256),
        (64, 128, 256, 512, 1024),
        "GB/s",
        _cg_bytes,
        lambda m: f"Poisson {m}x{m}, {CG_ITERS} iterations",
        _cg,
    ),
    Case(
        "bias_gelu",
        "rows (x 1024 columns)",
        (256, 1024, 4096),
        (256, 1024, 4096, 16384, 65536),
        "GB/s",
        lambda rows: 2.0 * rows * KERNEL_COLS * 4 + KERNEL_COLS * 4,
        lambda rows: f"gelu(x + b), {rows}x{KERNEL_COLS} float32",
        _bias_gelu,
    ),
    Case(
        "nn_step",
        "batch size",
        (32, 256, 2048),
        (32, 256, 2048, 8192),
        "GFLOP/s",
        mlp.flops,
        lambda b: f"MLP {'-'.join(map(str, mlp.SIZES))}, batch {b}, SGD",
        _nn_step,
    ),
]
