"""Poisson CG: gk.linalg.cg vs scipy.sparse.linalg.cg and cupyx's cg on the same matrix."""

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
