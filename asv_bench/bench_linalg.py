"""Dense solvers: gk.linalg vs numpy/scipy, cupy and torch, backend x size x dtype."""

from __future__ import annotations

import functools

import numpy as np

import gpukit as gk

from . import common, peers
from .common import BACKENDS, have, sync, use


@functools.lru_cache(maxsize=4)
def _spd_host(n, dtype):
    """Made once per process (``setup`` runs before every timed call); the timed
    calls only read them."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n))
    a = ((x + x.T) / (2 * np.sqrt(n)) + 3 * np.eye(n)).astype(dtype)
    return a, rng.standard_normal((n, 1)).astype(dtype)


def _spd(backend, n, dtype):
    """A well-conditioned symmetric positive-definite ``a`` (eigenvalues in about [1.6,
    4.4]: a symmetric Gaussian matrix scaled to spectral radius ~sqrt(2), plus 3 I) and a
    right-hand side, made without a BLAS product: asv re-runs ``setup`` before every
    timed call, and a NumPy product there leaves NumPy's OpenBLAS threads spinning while
    the timed SciPy LAPACK call runs on SciPy's own OpenBLAS pool, which then fights them
    for the cores (``time_solve_pos`` at n=256 measured 3.9 ms instead of ~0.5 ms)."""
    a, b = _spd_host(n, dtype)
    with gk.use_backend(backend.name):
        return gk.asarray(a), gk.asarray(b)


class Solve:
    """gk.linalg.solve (gen / pos / without check_finite) and cholesky; peers in the same
    suite. solve estimates the condition number as SciPy's does (for its LinAlgWarning)."""

    params = (BACKENDS, [256, 1024], ["float32", "float64"])
    param_names = ("backend", "n", "dtype")

    def setup(self, backend, n, dtype):
        self.backend = use(backend)
        self.a, self.b = _spd(self.backend, n, dtype)
        self.flops = 2 / 3 * n**3

    def time_solve(self, backend, n, dtype):
        gk.linalg.solve(self.a, self.b)
        sync(self.backend)

    def time_solve_pos(self, backend, n, dtype):
        gk.linalg.solve(self.a, self.b, assume_a="pos")
        sync(self.backend)

    def time_solve_unchecked(self, backend, n, dtype):
        # SciPy's check_finite skipped (the default pays one pass over a and b), as the
        # scipy peer runs; the condition estimate behind the LinAlgWarning stays
        gk.linalg.solve(self.a, self.b, check_finite=False)
        sync(self.backend)

    def time_cholesky(self, backend, n, dtype):
        gk.linalg.cholesky(self.a)
        sync(self.backend)

    def track_solve_gflops(self, backend, n, dtype):
        import time

        t0 = time.perf_counter()
        gk.linalg.solve(self.a, self.b)
        sync(self.backend)
        return self.flops / (time.perf_counter() - t0) / 1e9

    track_solve_gflops.unit = "GFLOP/s"


class MatmulThenSolve:
    """``gk.matmul`` then ``gk.linalg.solve``, alternating, as a user's loop does: the
    product leaves NumPy's BLAS threads spinning while the solve starts, which on the host
    must run on the same thread pool (NumPy's LAPACK) rather than wake another library's
    to fight them for the cores (docs/linalg.rst, "Which library the host solvers call")."""

    params = (BACKENDS, [256], ["gen", "pos"])
    param_names = ("backend", "n", "assume_a")

    def setup(self, backend, n, assume_a):
        self.backend = use(backend)
        self.a, self.b = _spd(self.backend, n, "float64")
        self.v = common.random(self.backend, (n, n), "float64")

    def time_matmul_then_solve(self, backend, n, assume_a):
        gk.matmul(self.v, self.v)
        gk.linalg.solve(self.a, self.b, assume_a=assume_a)
        sync(self.backend)


class SolvePeers:
    """The raw libraries on the same inputs: numpy.linalg, scipy.linalg, cupy, torch."""

    params = (["numpy", "scipy", "cupy", "torch"], [256, 1024], ["float32", "float64"])
    param_names = ("peer", "n", "dtype")

    def setup(self, peer, n, dtype):
        backend = use("cupy" if peer == "cupy" else "numpy")
        self.backend = backend
        self.a, self.b = _spd(backend, n, dtype)
        if peer == "torch":
            if not have("torch"):
                raise NotImplementedError("torch not installed")
            import torch

            self.ta, self.tb = torch.from_numpy(self.a), torch.from_numpy(self.b)

    def time_solve(self, peer, n, dtype):
        if peer == "numpy":
            np.linalg.solve(self.a, self.b)
        elif peer == "scipy":
            import scipy.linalg

            scipy.linalg.solve(self.a, self.b, check_finite=False)
        elif peer == "cupy":
            self.backend.xp.linalg.solve(self.a, self.b)
        else:
            import torch

            torch.linalg.solve(self.ta, self.tb)
        sync(self.backend)

    def time_solve_pos(self, peer, n, dtype):
        if peer == "numpy":
            np.linalg.solve(self.a, self.b)  # numpy has no Cholesky solve
        elif peer == "scipy":
            import scipy.linalg

            scipy.linalg.cho_solve(scipy.linalg.cho_factor(self.a, check_finite=False), self.b)
        elif peer == "cupy":
            import cupyx.lapack

            cupyx.lapack.posv(self.a, self.b)
        else:
            import torch

            torch.cholesky_solve(self.tb, torch.linalg.cholesky(self.ta))
        sync(self.backend)


class Norm:
    """``linalg.norm`` of a float32 vector, gpukit and its peers on one axis.

    gk.linalg.norm checks each 2-norm for a 0 or inf that under- or overflowing squares
    caused (NumPy's, CuPy's and PyTorch's answers there) and recomputes it scaled: at 16
    entries the check is the cost this measures (a float comparison on the host, a
    reduction and a synchronisation on a GPU); at 1M entries it should vanish. The
    ``tiny`` case (entries of 1e-30) times the recomputation itself.
    """

    params = [common.IMPLS, ["16", "1M", "tiny"]]
    param_names = ["impl", "case"]

    def setup(self, name, case):
        self.impl = common.impl(name)
        n = 16 if case == "16" else 1 << 20
        host = common.host_random((n,)).astype(np.float32)
        self.x = self.impl.put(host * np.float32(1e-30) if case == "tiny" else host)
        family = self.impl.family
        self.op = gk.linalg.norm if family == "gpukit" else self.impl.xp.linalg.norm

    def time_norm(self, name, case):
        self.op(self.x)
        self.impl.sync()


class SolveRatio(peers.Comparison):
    """``gk.linalg.solve`` (general, and ``assume_a="pos"``) over the backend's own
    ``linalg.solve``, float64, on ``Solve``'s matrices, same run.

    Targets on the host: the general solve within 5% of ``numpy.linalg.solve`` (the same
    LAPACK ``gesv``); the positive-definite one (Cholesky, where NumPy has none) 20% faster
    at n = 256 and 40% at n = 1024, where the factorisation's half of LU's work dominates
    (issue 27's figure at n = 1000), the condition estimate of the LinAlgWarning included.
    """

    params = [BACKENDS, ["gen", "pos"], [256, 1024]]
    param_names = ["backend", "assume_a", "n"]

    def setup(self, backend, assume_a, n):
        self.backend = use(backend)
        a, b = _spd(self.backend, n, "float64")
        peer_solve = self.backend.xp.linalg.solve
        self.ours = lambda: gk.linalg.solve(a, b, assume_a=assume_a)
        self.peer = lambda: peer_solve(a, b)

    def track_ratio(self, backend, assume_a, n):
        return self.ratio(self.ours, self.peer, self.backend.synchronize)

    track_ratio.unit = "ratio"

    def target(self, backend, assume_a, n):
        if backend != "numpy":
            return None
        return 1.05 if assume_a == "gen" else (0.60 if n >= 1000 else 0.80)
