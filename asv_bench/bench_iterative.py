"""CG: gk.linalg.cg vs scipy.sparse.linalg.cg (and cupyx's), on a Poisson matrix (banded, and
renumbered) and a dense one."""

from __future__ import annotations

import numpy as np

import gpukit as gk

from . import peers
from .common import BACKENDS, sync, use


class PoissonCG:
    """CG on the 5-point Laplacian of an n x n grid, rtol 1e-8, fixed 200 iterations."""

    params = (BACKENDS, ["gpukit", "library"], [128, 256])
    param_names = ("backend", "impl", "n")

    def setup(self, backend, impl, n):
        self.backend = use(backend)
        self.A = gk.sparse.poisson2d(n)
        rng = np.random.default_rng(0)
        self.b = gk.asarray(rng.standard_normal(n * n))
        if impl == "library":
            if backend == "numpy":
                import scipy.sparse.linalg as spla
            else:
                import cupyx.scipy.sparse.linalg as spla
            self.cg = spla.cg
        # bytes touched per iteration: matrix (12 B/nnz + indptr) + ~10 vector passes
        self.bytes = self.A.nnz * 12 + 10 * 8 * n * n

    def time_cg(self, backend, impl, n):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if impl == "gpukit":
                gk.linalg.cg(self.A, self.b, rtol=1e-30, maxiter=200)
            else:
                self.cg(self.A, self.b, rtol=1e-30, maxiter=200)
        sync(self.backend)

    def track_gbps(self, backend, impl, n):
        import time

        t0 = time.perf_counter()
        self.time_cg(backend, impl, n)
        return self.bytes * 200 / (time.perf_counter() - t0) / 1e9

    track_gbps.unit = "GB/s"


class DenseCG:
    """CG on a dense 2000x2000 positive-definite array, 20 iterations, against SciPy's cg on
    the same array: the mat-vecs and, for gpukit, its up-front check that A is finite (one
    pass over A on the host: its sum)."""

    params = (["gpukit", "library"],)
    param_names = ("impl",)

    def setup(self, impl):
        use("numpy")
        rng = np.random.default_rng(0)
        m = rng.standard_normal((2000, 2000))
        self.A = m @ m.T / 2000 + np.eye(2000)
        self.b = rng.standard_normal(2000)

    def time_cg(self, impl):
        import warnings

        import scipy.sparse.linalg as spla

        solve = gk.linalg.cg if impl == "gpukit" else spla.cg
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # maxiter reached, on purpose
            solve(self.A, self.b, rtol=1e-30, maxiter=20)


def _renumbered(a, seed: int = 0):
    """The operator ``a`` with its unknowns randomly renumbered: the same spectrum and
    iterations, no band (so it stays CSR: docs/linalg.rst)."""
    order = np.random.default_rng(seed).permutation(a.shape[0])
    out = a[order][:, order].tocsr()
    out.sort_indices()
    return out


class ScatteredCG:
    """CG on the 256x256-grid Poisson operator with its unknowns randomly renumbered (the
    same spectrum and iterations, no band), 100 iterations, against SciPy's cg: the host
    CSR product that a scattered matrix keeps, and the one look for diagonals it costs
    (a banded operator moves to diagonal storage, ``PoissonCG``)."""

    params = (["gpukit", "library"],)
    param_names = ("impl",)

    def setup(self, impl):
        use("numpy")
        self.A = _renumbered(gk.sparse.poisson2d(256))
        self.b = np.random.default_rng(1).standard_normal(self.A.shape[0])

    def time_cg(self, impl):
        import warnings

        import scipy.sparse.linalg as spla

        solve = gk.linalg.cg if impl == "gpukit" else spla.cg
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # maxiter reached, on purpose
            solve(self.A, self.b, rtol=1e-30, maxiter=100)

    # asv keeps one series per version, by default a hash of the source: pinned, because
    # ``_renumbered`` builds the operator the committed results measured
    time_cg.version = "ac93ab69c0c948575e8076b6575ac7af65c656591df5ad588e14bf65f4a58a68"


class CGRatio(peers.Comparison):
    """``gk.linalg.cg`` over ``scipy.sparse.linalg.cg`` to convergence (rtol 1e-8) on the
    256x256-grid Poisson operator, banded as built and renumbered without a band; setup
    checks that both run the same number of iterations.

    Target (banded): 0.8 of SciPy's time; the renumbered operator is for information.
    """

    params = [["banded", "renumbered"]]
    param_names = ["operator"]
    pairs = 9  # each side's block is one solve (~0.2 s)

    def setup(self, operator):
        import scipy.sparse.linalg as spla

        use("numpy")
        a = gk.sparse.poisson2d(256)
        if operator == "renumbered":
            a = _renumbered(a)
        rhs = np.random.default_rng(1).standard_normal(a.shape[0])
        _, info = gk.linalg.cg(a, rhs, rtol=1e-8)
        iterations = []
        spla.cg(a, rhs, rtol=1e-8, callback=lambda xk: iterations.append(1))
        if info.iterations != len(iterations):
            its = f"gpukit {info.iterations}, scipy {len(iterations)}"
            raise RuntimeError(f"the two solves ran different iterations: {its}")
        self.ours = lambda: gk.linalg.cg(a, rhs, rtol=1e-8)
        self.peer = lambda: spla.cg(a, rhs, rtol=1e-8)

    def track_ratio(self, operator):
        return self.ratio(self.ours, self.peer)

    track_ratio.unit = "ratio"

    def target(self, operator):
        return 0.8 if operator == "banded" else None
