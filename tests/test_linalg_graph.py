"""``gk.linalg.cg/bicgstab/minres/gmres(graph=True)``: steady-state blocks of iterations
(of Arnoldi steps for gmres) replayed as a CUDA graph (``gpu``: a GPU or ``--cupy=sim``),
the same results bit for bit as the eager iterations, and one warning saying why where
capture cannot work."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import gpukit as gk

from helpers import rel_err, simulated

# gmres with restart 15: a cycle is a replay of 10 steps and one of the last 5
METHODS = [
    pytest.param("cg", {}, id="cg"),
    pytest.param("bicgstab", {}, id="bicgstab"),
    pytest.param("minres", {}, id="minres"),
    pytest.param("gmres", {"restart": 20}, id="gmres20"),
    pytest.param("gmres", {"restart": 15}, id="gmres15"),
]


class Stencil:
    """The 5-point Laplacian of an ``n x n`` grid (plus ``shift`` I), written with CuPy's
    slicing and elementwise kernels: an operator CUDA graphs can capture."""

    def __init__(self, n: int, shift: float = 0.0) -> None:
        self.n, self.shift = n, shift
        self.shape, self.dtype = (n * n, n * n), np.dtype(np.float64)

    def matvec(self, v):
        n = self.n
        u = v.reshape(n, n)
        out = (4 + self.shift) * u
        out[1:, :] -= u[:-1, :]
        out[:-1, :] -= u[1:, :]
        out[:, 1:] -= u[:, :-1]
        out[:, :-1] -= u[:, 1:]
        return out.reshape(-1)

    def host(self) -> sp.csr_matrix:
        t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(self.n, self.n))
        eye = sp.identity(self.n)
        return (sp.kron(eye, t) + sp.kron(t, eye) + self.shift * sp.identity(self.n**2)).tocsr()


def _solve(method, a, b, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x, info = getattr(gk.linalg, method)(a, b, **kwargs)
    return x, info, [str(w.message) for w in caught if "graph=True" in str(w.message)]


def _launches(cupy_backend, run):
    import cupysim

    with cupysim.trace() as t:
        out = run()
        cupy_backend.synchronize()
    return t.summary(), out


def _eager_and_graphed(cupy_backend, method, a, b, **kwargs):
    """The eager solve, then the graphed one traced: (eager x, eager info, summary,
    graphed x, graphed info, the graph warnings)."""
    eager, info_e, _ = _solve(method, a, gk.asarray(b), **kwargs)
    s, (x, info, said) = _launches(
        cupy_backend, lambda: _solve(method, a, gk.asarray(b), graph=True, **kwargs)
    )
    return eager, info_e, s, x, info, said


def _same(x, info, eager, info_e) -> None:
    assert x.get().tobytes() == eager.get().tobytes()
    assert (info.iterations, info.residual_norm, info.reason) == (
        info_e.iterations, info_e.residual_norm, info_e.reason,
    )  # fmt: skip


@pytest.mark.gpu
@pytest.mark.parametrize(("method", "kw"), METHODS)
@pytest.mark.parametrize(
    ("maxiter", "precondition"),
    [(400, False), (400, True), (33, False), (36, False)],
    ids=["converges", "preconditioned", "maxiter-33", "maxiter-36"],
)
def test_replayed_blocks_give_the_eager_iterations_bit_for_bit(
    cupy_backend, rng, method, kw, maxiter, precondition
):
    if not simulated():
        pytest.skip("bit for bit against the eager path: counted on the simulator")
    a = Stencil(24, shift=0.3)
    b = rng.standard_normal(24 * 24)
    if precondition:  # a diagonal M by a CuPy ufunc, which a graph captures too
        d = gk.asarray(rng.uniform(0.5, 2.0, 24 * 24) / 4.3)
        kw = {**kw, "M": lambda v: d * v}
    eager, info_e, s, x, info, said = _eager_and_graphed(
        cupy_backend, method, a, b, rtol=1e-10, maxiter=maxiter, **kw
    )
    assert said == [] and s.graph_launches >= 1
    _same(x, info, eager, info_e)
    assert info.converged == (maxiter == 400)  # 36: a replayed block ends at maxiter
    if info.converged:
        assert rel_err(x.get(), spla.spsolve(a.host().tocsc(), b)) < 1e-8


@pytest.mark.gpu
@pytest.mark.parametrize(("method", "kw"), METHODS)
def test_a_stop_inside_a_replayed_block_is_reported_honestly(cupy_backend, rng, method, kw):
    if not simulated():
        pytest.skip("bit for bit against the eager path: counted on the simulator")
    # a shifted (well-conditioned) operator converges part-way through a block of 10
    a = Stencil(16, shift=0.5)
    b = rng.standard_normal(256)
    eager, info_e, s, x, info, said = _eager_and_graphed(cupy_backend, method, a, b, rtol=1e-10)
    g = s.graph_launches
    assert said == [] and info.converged and g >= 1
    _same(x, info, eager, info_e)
    it = info.iterations
    if method == "gmres":  # steady-state blocks start at steps 0 and 10 of a cycle
        assert it > kw["restart"] and it % kw["restart"] % 10 != 0
    else:  # reads at 1, 2, 4, 8, 16, then one replay of 10 iterations before each read
        assert 16 + 10 * (g - 1) < it < 16 + 10 * g
    want = spla.spsolve(a.host().tocsc(), b)
    assert rel_err(x.get(), want) < 1e-8
    true = np.linalg.norm(a.host() @ x.get() - b)
    assert true <= 1e-10 * np.linalg.norm(b) * 1.0001
    assert info.residual_norm == pytest.approx(true, rel=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize(("method", "kw"), METHODS)
def test_an_operator_cupy_cannot_capture_falls_back_with_one_warning(cupy_backend, rng, method, kw):
    a = gk.sparse.poisson2d(16)  # cuSPARSE's product: CuPy refuses it during capture
    b = rng.standard_normal(256)
    x, info, said = _solve(method, a, gk.asarray(b), rtol=1e-10, maxiter=2000, graph=True, **kw)
    assert len(said) == 1 and "cuSPARSE" in said[0] and f"gk.linalg.{method}" in said[0]
    assert info.converged
    want = spla.spsolve(a.get().tocsc() if hasattr(a, "get") else a.tocsc(), b)
    assert rel_err(x.get(), want) < 1e-8


@pytest.mark.gpu
@pytest.mark.parametrize(("method", "kw"), METHODS)
def test_an_operator_that_synchronises_falls_back(cupy_backend, rng, method, kw):
    inner = Stencil(12, shift=0.1)

    def matvec(v):
        float(v[0])  # a host read: a copy CuPy refuses while the stream captures
        return inner.matvec(v)

    b = rng.standard_normal(144)
    x, info, said = _solve(method, matvec, gk.asarray(b), rtol=1e-10, graph=True, **kw)
    assert len(said) == 1 and "capturing" in said[0] and info.converged
    assert rel_err(x.get(), spla.spsolve(inner.host().tocsc(), b)) < 1e-8


@pytest.mark.parametrize(("method", "kw"), METHODS)
def test_the_host_backend_has_nothing_to_capture_and_says_so(rng, method, kw):
    a = Stencil(8, shift=0.2).host()
    b = rng.standard_normal(64)
    with gk.use_backend("numpy"):
        x, info, said = _solve(method, a, b, rtol=1e-10, graph=True, **kw)
    assert len(said) == 1 and "CuPy" in said[0] and info.converged
    assert rel_err(x, spla.spsolve(a.tocsc(), b)) < 1e-9


@pytest.mark.parametrize("method", ["cg", "bicgstab", "minres", "gmres"])
def test_graph_must_be_a_bool(method):
    with pytest.raises(TypeError, match=f"gk.linalg.{method}: argument 'graph' must be True"):
        getattr(gk.linalg, method)(np.eye(2), np.ones(2), graph="yes")
