"""GPU cost per unit of work, counted on the CuPy simulator (no GPU needed).

Each workload of issue 30 is built here once, for the asv ``track_`` benchmarks
(``bench_gpu_cost.py``) and the budget tests (``tests/test_gpu_cost.py``): a builder sets
up the problem with gk on the ``cupy`` backend and returns ``(run, units)``, where
``run(k)`` does ``k`` units of work (training steps, Krylov iterations, GMRES cycles,
transforms). The cost of one unit is the steady state: the difference between a trace of
``run(hi)`` and one of ``run(lo)``, divided by ``hi - lo``, so set-up and first-call costs
(kernel compilation, plans, pool growth) cancel.

The simulator is loaded from ``tests/cupysim`` when nothing has imported the real CuPy in
this process; otherwise, or without the checkout's tests folder, :func:`simulator` raises
NotImplementedError (asv's skip). Counts are what the simulator models
(docs/contributing_gpu.rst); the time estimate from them is :mod:`cupysim.cost`'s.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

SIM_PATH = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "cupysim"
)

Run = Callable[[int], Any]


def simulator():
    """``cupysim`` with the simulated CuPy importable, or NotImplementedError."""
    mod = sys.modules.get("cupy")
    if mod is not None and not getattr(mod, "__file__", "").startswith(SIM_PATH):
        raise NotImplementedError("the real CuPy is imported: the simulator cannot load here")
    if not os.path.isdir(os.path.join(SIM_PATH, "cupysim")):
        raise NotImplementedError(f"the CuPy simulator is not in {SIM_PATH}")
    if SIM_PATH not in sys.path:
        sys.path.insert(0, SIM_PATH)
    try:
        import cupysim
    except ImportError as exc:  # e.g. no C compiler for its kernels
        raise NotImplementedError(f"the CuPy simulator does not import: {exc}") from exc
    return cupysim


def _gk():
    import gpukit as gk

    status = gk.available_backends().get("cupy")
    if status is None or not status.available:
        raise NotImplementedError("gpukit's cupy backend is unavailable on the simulator")
    gk.set_backend("cupy")
    return gk


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _repeat(step: Callable[[], Any]) -> Run:
    def run(k: int) -> None:
        for _ in range(k):
            step()

    return run


# -- the workloads --------------------------------------------------------------------------
def _mlp_adam(gk, wrap: Callable[[Any], Any]) -> tuple[Any, Any, Any, Any]:
    """784-256-256-10 ReLU MLP (placed by ``wrap``), its Adam, and a batch of 256."""
    rng = _rng()
    model = wrap(
        gk.nn.Sequential(
            gk.nn.Linear(784, 256), gk.nn.ReLU(), gk.nn.Linear(256, 256), gk.nn.ReLU(),
            gk.nn.Linear(256, 10),
        )
    )  # fmt: skip
    opt = gk.optim.Adam(model.parameters(), lr=1e-3)
    x = gk.asarray(rng.standard_normal((256, 784)).astype(np.float32))
    y = gk.asarray(rng.integers(0, 10, 256))
    return model, opt, x, y


def _mlp_adam_step(gk, wrap: Callable[[Any], Any]) -> tuple[Run, str]:
    """The MLP step, cross-entropy, as docs/nn.rst writes it; ``wrap`` places the model."""
    from gpukit._bench.mlp import loop_step

    model, opt, x, y = _mlp_adam(gk, wrap)
    return _repeat(loop_step(model, gk.nn.CrossEntropyLoss(), opt, x, y)), "step"


def mlp_step(gk) -> tuple[Run, str]:
    """784-256-256-10 ReLU MLP, batch 256, Adam, cross-entropy, as docs/nn.rst writes it."""
    return _mlp_adam_step(gk, lambda net: net)


def mlp_graph_step(gk) -> tuple[Run, str]:
    """The MLP step above as a ``gk.nn.GraphedStep`` (one CUDA graph replay per step), the
    batch copied into its static buffers each step as a loop over batches would."""
    model, opt, x, y = _mlp_adam(gk, lambda net: net)
    step = gk.nn.GraphedStep(model, gk.nn.CrossEntropyLoss(), opt, x, y)
    return _repeat(lambda: step(x, y)), "step"


def data_parallel_step(gk) -> tuple[Run, str]:
    """The MLP step above on ``DataParallel`` over 2 devices (batch 256 split in two)."""
    if len(gk.devices()) < 2:
        raise NotImplementedError("DataParallel needs 2 devices")
    return _mlp_adam_step(gk, lambda net: gk.nn.DataParallel(net, devices=[0, 1]))


def _krylov(method: str, n: int = 64, **kwargs) -> Callable[[Any], tuple[Run, str]]:
    def build(gk) -> tuple[Run, str]:
        a = gk.sparse.poisson2d(n)
        b = gk.asarray(_rng().standard_normal(n * n))
        solve = getattr(gk.linalg, method)

        def run(k: int) -> None:
            # rtol out of reach: exactly k iterations (Arnoldi steps for gmres), which
            # end at maxiter on purpose
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", gk.errors.ConvergenceWarning)
                solve(a, b, rtol=1e-300, atol=0.0, maxiter=k, **kwargs)

        return run, "iteration" if method != "gmres" else "Arnoldi step"

    build.__doc__ = f"``gk.linalg.{method}`` on the {n}x{n} Poisson operator, CuPy backend."
    return build


class Stencil:
    """The 5-point Laplacian of an ``n x n`` grid, by CuPy slicing and ufuncs: unlike
    cuSPARSE's product, an operator CuPy lets a CUDA graph capture."""

    def __init__(self, n: int) -> None:
        self.n, self.shape, self.dtype = n, (n * n, n * n), np.dtype(np.float64)

    def matvec(self, v):
        u = v.reshape(self.n, self.n)
        out = 4 * u
        out[1:, :] -= u[:-1, :]
        out[:-1, :] -= u[1:, :]
        out[:, 1:] -= u[:, :-1]
        out[:, :-1] -= u[:, 1:]
        return out.reshape(-1)


def _krylov_graph(method: str, n: int = 64, **kwargs) -> Callable[[Any], tuple[Run, str]]:
    def build(gk) -> tuple[Run, str]:
        a, b = Stencil(n), gk.asarray(_rng().standard_normal(n * n))
        solve = getattr(gk.linalg, method)

        def run(k: int) -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", gk.errors.ConvergenceWarning)
                solve(a, b, rtol=1e-300, atol=0.0, maxiter=k, graph=True, **kwargs)

        return run, "iteration" if method != "gmres" else "Arnoldi step"

    build.__doc__ = (
        f"``gk.linalg.{method}(..., graph=True)`` on the {n}x{n} Poisson stencil "
        "(:class:`Stencil`)."
    )
    return build


def fft2_batch(gk, shape=(16, 512, 512)) -> tuple[Run, str]:
    """``gk.fft.fft2`` of a C-contiguous complex64 batch of a size already seen."""
    rng = _rng()
    x = gk.asarray(
        (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    )
    return _repeat(lambda: gk.fft.fft2(x)), "transform"


def sharded_matmul(gk, n: int = 1024) -> tuple[Run, str]:
    """``a @ w`` with ``a`` (n x 256, float32) sharded by rows over 2 devices."""
    if len(gk.devices()) < 2:
        raise NotImplementedError("a sharded matmul on 2 devices needs 2 devices")
    rng = _rng()
    a = gk.shard(rng.standard_normal((n, 256)).astype(np.float32), axis=0)
    w = gk.asarray(rng.standard_normal((256, 256)).astype(np.float32))
    return _repeat(lambda: a @ w), "product"


def solve_1000(gk) -> tuple[Run, str]:
    """``gk.linalg.solve`` of a 1000 x 1000 float64 system with one right-hand side."""
    rng = _rng()
    a = gk.asarray(rng.standard_normal((1000, 1000)) + 1000 * np.eye(1000))
    b = gk.asarray(rng.standard_normal(1000))
    return _repeat(lambda: gk.linalg.solve(a, b)), "solve"


def dask_matmul(gk) -> tuple[Run, str]:
    """``gk.matmul`` of a Dask array of 4 CuPy row chunks (1024 x 256) by a 256 x 64 one."""
    try:
        import dask.array as da
    except ImportError as exc:
        raise NotImplementedError("Dask is not installed") from exc
    import cupy

    rng = _rng()
    a = da.from_array(
        cupy.asarray(rng.standard_normal((1024, 256))), chunks=(256, 256), asarray=False
    )
    w = da.from_array(cupy.asarray(rng.standard_normal((256, 64))), chunks=(256, 64), asarray=False)
    return _repeat(lambda: gk.matmul(a, w).compute(scheduler="sync")), "product"


#: name -> builder(gk) -> (run, unit); the order of the docs' table.
WORKLOADS: dict[str, Callable[[Any], tuple[Run, str]]] = {
    "mlp_step": mlp_step,
    "mlp_graph_step": mlp_graph_step,
    "data_parallel_step": data_parallel_step,
    "cg": _krylov("cg"),
    "bicgstab": _krylov("bicgstab"),
    "minres": _krylov("minres"),
    "gmres": _krylov("gmres", restart=20),
    "cg_graph": _krylov_graph("cg"),
    "bicgstab_graph": _krylov_graph("bicgstab"),
    "minres_graph": _krylov_graph("minres"),
    "gmres_graph": _krylov_graph("gmres", restart=20),
    "fft2": fft2_batch,
    "sharded_matmul": sharded_matmul,
    "solve_1000": solve_1000,
    "dask_matmul": dask_matmul,
}


# -- the same units in the peer libraries -------------------------------------------------
def _peer_solve():
    import cupy

    rng = _rng()  # solve_1000's inputs
    a = cupy.asarray(rng.standard_normal((1000, 1000)) + 1000 * np.eye(1000))
    b = cupy.asarray(rng.standard_normal(1000))
    return _repeat(lambda: cupy.linalg.solve(a, b))


def _peer_fft2():
    import cupy

    rng = _rng()  # fft2_batch's inputs
    shape = (16, 512, 512)
    x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    x = cupy.asarray(x.astype(np.complex64))
    return _repeat(lambda: cupy.fft.fft2(x))


def _peer_krylov(method: str):
    def build():
        import cupy
        import cupyx.scipy.sparse as sparse
        import cupyx.scipy.sparse.linalg as splinalg
        import scipy.sparse

        n = 64  # _krylov's 64x64 Poisson operator
        t = scipy.sparse.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
        e = scipy.sparse.identity(n)
        a = sparse.csr_matrix(scipy.sparse.kron(t, e) + scipy.sparse.kron(e, t))
        b = cupy.asarray(_rng().standard_normal(n * n))
        solve = getattr(splinalg, method)
        return lambda k: solve(a, b, rtol=1e-300, atol=0.0, maxiter=k)

    return build


def _peer_mlp():
    import torch

    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 10),
    ).to(dev)  # fmt: skip
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(256, 784, device=dev)
    y = torch.randint(0, 10, (256,), device=dev)

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    return _repeat(step)


#: workload -> (peer, builder of its ``run(k)``): the same unit of work in the library gpukit
#: is measured against (issue 30's anchors), timed beside it by the GPU lane
#: (tools/gpu_lane.py); they need a real GPU (and PyTorch CUDA for the MLP step).
PEERS = {
    "mlp_step": ("PyTorch CUDA (default Adam)", _peer_mlp),
    "cg": ("cupyx.scipy.sparse.linalg.cg", _peer_krylov("cg")),
    "bicgstab": ("cupyx.scipy.sparse.linalg.bicgstab", _peer_krylov("bicgstab")),
    "fft2": ("cupy.fft.fft2", _peer_fft2),
    "solve_1000": ("cupy.linalg.solve", _peer_solve),
}


#: Units traced by default (lo, hi): steady state is (trace(hi) - trace(lo)) / (hi - lo).
SPAN = {
    "cg": (5, 15), "bicgstab": (5, 15), "minres": (5, 15), "gmres": (20, 40),
    # two more replayed blocks of 10 (iterations 37-56), after the first captured
    "cg_graph": (36, 56), "bicgstab_graph": (36, 56),
    # three more (57-86), after MINRES's three captures: it rotates its buffers
    # with a period of 3, each arrangement a block starts in is a graph of its own
    "minres_graph": (56, 86),
    # two more cycles of 20 Arnoldi steps, each two replays and the restart
    "gmres_graph": (40, 80),
}  # fmt: skip
DEFAULT_SPAN = (1, 3)


def measure(name: str, span: tuple[int, int] | None = None):
    """The steady-state :class:`cupysim.Summary` of one unit of workload ``name``, and the
    two traces it is the difference of."""
    cupysim = simulator()
    gk = _gk()
    run, _unit = WORKLOADS[name](gk)
    lo, hi = span or SPAN.get(name, DEFAULT_SPAN)
    run(hi)  # warm up: kernels compiled, plans made, the pool grown for the longest run
    gk.synchronize()
    with cupysim.trace() as t_lo:
        run(lo)
        gk.synchronize()
    with cupysim.trace() as t_hi:
        run(hi)
        gk.synchronize()
    return (t_hi.summary() - t_lo.summary()) / (hi - lo), t_lo, t_hi


def estimate(t_lo, t_hi, span: tuple[int, int], gpu: str):
    """The estimated time of one unit (:func:`cupysim.estimate`), steady state."""
    cupysim = simulator()
    lo, hi = span
    return (cupysim.estimate(t_hi, gpu) - cupysim.estimate(t_lo, gpu)) / (hi - lo)
