"""CG: gk.linalg.cg vs scipy.sparse.linalg.cg (and cupyx's), on a Poisson matrix (banded, and
renumbered) and a dense one."""

from __future__ import annotations

import numpy as np

import gpukit as gk

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


class ScatteredCG:
    """CG on the 256x256-grid Poisson operator with its unknowns randomly renumbered (the
    same spectrum and iterations, no band), 100 iterations, against SciPy's cg: the host
    CSR product that a scattered matrix keeps, and the one look for diagonals it costs
    (a banded operator moves to diagonal storage, ``PoissonCG``)."""

    params = (["gpukit", "library"],)
    param_names = ("impl",)

    def setup(self, impl):
        use("numpy")
        a = gk.sparse.poisson2d(256)
        order = np.random.default_rng(0).permutation(a.shape[0])
        self.A = a[order][:, order].tocsr()
        self.A.sort_indices()
        self.b = np.random.default_rng(1).standard_normal(a.shape[0])

    def time_cg(self, impl):
        import warnings

        import scipy.sparse.linalg as spla

        solve = gk.linalg.cg if impl == "gpukit" else spla.cg
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # maxiter reached, on purpose
            solve(self.A, self.b, rtol=1e-30, maxiter=100)
