"""The Krylov loops' vector spaces, fused updates against float64: BLAS-1 in place on the
host, one ElementwiseKernel per update on CuPy (``gpu``: a GPU or ``--cupy=sim``), and the
loops' steps fused into the kernels of ``gpukit_cupy/krylov.cu``, whose status the host
reads only every few iterations."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

import gpukit as gk
from gpukit_numpy.krylov import HostSpace, host_space

from helpers import rel_err

DTYPES = ["float32", "float64", "complex64", "complex128"]
FUSED = ["cg", "bicgstab", "minres", "gmres"]  # the loops whose steps run fused on a device
NVCC = shutil.which("nvcc")


def _vec(rng, n, dtype):
    v = rng.standard_normal(n)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(n)
    return v.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_updates_are_in_place_and_match_numpy(rng, dtype):
    space = host_space(np.dtype(dtype))
    x, y = _vec(rng, 257, dtype), _vec(rng, 257, dtype)
    alpha = 0.75 - 0.5j if np.dtype(dtype).kind == "c" else 0.75
    want = y.astype(np.complex128) + alpha * x.astype(np.complex128)
    before = y
    space.axpy(alpha, x, y)
    assert y is before
    tol = 1e-6 if dtype in ("float32", "complex64") else 1e-14
    assert rel_err(y, want) < tol
    want = x.astype(np.complex128) + 0.5 * y.astype(np.complex128)
    space.xpay(x, 0.5, y)
    assert rel_err(y, want) < tol
    got = space.scalar_dot(x, y)
    assert isinstance(got, (float, complex))
    ref = np.vdot(x.astype(np.complex128), y.astype(np.complex128))  # conjugates x
    assert abs(got - ref) / abs(ref) < tol


def test_mixed_dtypes_and_other_functions_follow_numpy(rng):
    space = HostSpace(np.dtype(np.float64))
    a, b = _vec(rng, 9, "float64"), _vec(rng, 9, "complex128")
    assert abs(space.scalar_dot(a, b) - np.vdot(a, b)) < 1e-12 * np.abs(b).sum()
    assert space.empty_like is np.empty_like


def test_dtypes_blas_lacks_use_numpy():
    assert host_space(np.dtype(np.float16)) is np


@pytest.mark.parametrize("method", ["cg", "bicgstab", "minres", "gmres"])
def test_empty_system_solves_on_the_host(method):
    x, info = getattr(gk.linalg, method)(np.zeros((0, 0)), np.zeros(0))
    assert x.shape == (0,) and info.converged


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_cupy_space_updates_in_place_in_one_kernel_and_matches_float64(cupy_backend, rng, dtype):
    import cupy

    space = cupy_backend.krylov_space(np.dtype(dtype))
    assert callable(space.axpy) and space.vdot is cupy.vdot  # the rest is CuPy's
    x, y = _vec(rng, 1031, dtype), _vec(rng, 1031, dtype)
    dx, dy = cupy.asarray(x), cupy.asarray(y)
    alpha = 0.75 - 0.5j if np.dtype(dtype).kind == "c" else 0.75
    before = dy.data.ptr
    space.axpy(alpha, dx, dy)
    assert dy.data.ptr == before and dy.dtype == np.dtype(dtype)
    want = y.astype(np.complex128) + alpha * x.astype(np.complex128)
    tol = 1e-6 if dtype in ("float32", "complex64") else 1e-14
    assert rel_err(cupy.asnumpy(dy), want) < tol
    space.xpay(dx, -1.25, dy)
    want = x.astype(np.complex128) - 1.25 * want
    assert rel_err(cupy.asnumpy(dy), want) < tol


@pytest.mark.gpu
def test_cupy_space_takes_ufuncs_for_a_vector_of_another_dtype(cupy_backend, rng):
    import cupy

    space = cupy_backend.krylov_space(np.dtype(np.float64))
    x, y = _vec(rng, 33, "float32"), _vec(rng, 33, "float64")
    dy = cupy.asarray(y)
    space.axpy(2.0, cupy.asarray(x), dy)
    assert rel_err(cupy.asnumpy(dy), y + 2.0 * x.astype(np.float64)) < 1e-14
    with pytest.raises(TypeError):  # complex into real: NumPy's casting rule, not a kernel's
        space.axpy(1.0, cupy.asarray(_vec(rng, 33, "complex128")), dy)


def _system(rng, method, n, dtype):
    """A well-conditioned ``(A, b)`` of the kind ``method`` needs, as host arrays."""
    noise = rng.standard_normal((n, n)) / np.sqrt(n)
    scale = np.diag(rng.uniform(2, 4, n))
    if method == "cg":
        a = scale + 0.5 * noise @ noise.T
    elif method == "minres":
        a = scale * np.where(np.arange(n) % 2, 1.0, -1.0) + 0.3 * (noise + noise.T)
    else:
        a = scale + 0.3 * noise
    if np.dtype(dtype).kind == "c":  # Hermitian stays Hermitian, the rest gains an imaginary part
        extra = 0.1j * rng.standard_normal((n, n)) / np.sqrt(n)
        a = a + (extra - extra.conj().T if method != "bicgstab" else extra)
    return a.astype(dtype), _vec(rng, n, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("method", FUSED)
def test_each_step_is_one_kernel_of_krylov_cu(cupy_backend, rng, monkeypatch, method):
    """The loop's steps launch only the method's kernels of krylov.cu (no vdot, no .item())."""
    import gpukit_cupy.krylov as krylov

    names = []
    real = krylov._Steps.launch

    def spy(self, name, *args):
        names.append(name)
        real(self, name, *args)

    monkeypatch.setattr(krylov._Steps, "launch", spy)
    a, b = _system(rng, method, 40, "float64")
    x, info = getattr(gk.linalg, method)(gk.asarray(a), gk.asarray(b), rtol=1e-10)
    assert info.converged and names
    assert set(names) <= {k for k in krylov.KERNELS if k.startswith(f"gk_{method}_")}
    assert rel_err(gk.to_numpy(x), np.linalg.solve(a, b)) < 1e-8


def _indefinite(rng, n, dtype):
    """Symmetric with one negative eigenvalue: CG breaks down after a few iterations."""
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    eig = np.linspace(1, 3, n)
    eig[0] = -0.05
    return ((q * eig) @ q.T).astype(dtype), _vec(rng, n, dtype).real.astype(dtype)


CASES = {  # how the loop ends: (system, solver arguments)
    "converged": (lambda rng, m, d: _system(rng, m, 60, d), {"rtol": 1e-6}),
    "maxiter reached": (lambda rng, m, d: _system(rng, m, 60, d), {"rtol": 0.0, "maxiter": 13}),
    "breakdown": (lambda rng, m, d: _indefinite(rng, 60, d), {"rtol": 1e-12}),
}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("method", "case"), [(m, c) for m in FUSED for c in CASES if c != "breakdown" or m == "cg"]
)
def test_the_status_read_every_few_iterations_keeps_the_iterate_that_stopped(
    cupy_backend, rng, monkeypatch, method, dtype, case
):
    """The host reads a loop's status at iterations 1, 2, 4, 8, 16, ... (then every
    CHECK_EVERY): the device runs on past a stop until then, with every update skipped
    (GMRES: the columns after the stop ignored). The solve returns the same x, bit for
    bit, with the same iterations, residual and reason, as reading at every iteration
    (CHECK_EVERY = 1, or a callback, which must see every iterate)."""
    import warnings

    import gpukit_cupy.krylov as krylov

    make, kwargs = CASES[case]
    a, b = make(rng, method, dtype)
    if method == "gmres":  # cycles that end between the reads
        kwargs = {**kwargs, "restart": 7}
    solve = getattr(gk.linalg, method)
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gk.ConvergenceWarning)
        x, info = solve(gk.asarray(a), gk.asarray(b), **kwargs)
        x_cb, cb = solve(gk.asarray(a), gk.asarray(b), callback=seen.append, **kwargs)
        monkeypatch.setattr(krylov, "CHECK_EVERY", 1)
        x_each, each = solve(gk.asarray(a), gk.asarray(b), **kwargs)
    assert info.reason.startswith(case)
    assert info.iterations > 2 and (info.iterations == 13) == (case == "maxiter reached")
    for x_other, other in ((x_each, each), (x_cb, cb)):
        assert (other.reason, other.iterations) == (info.reason, info.iterations)
        assert np.array_equal(gk.to_numpy(x_other), gk.to_numpy(x))
        assert other.residual_norm == info.residual_norm
    if method != "gmres":  # GMRES calls back once per restart cycle
        assert len(seen) == info.iterations
    a64, b64 = a.astype(np.complex128), b.astype(np.complex128)
    x64 = gk.to_numpy(x).astype(np.complex128)
    true = np.linalg.norm(b64 - a64 @ x64)
    # what b - A x recomputed in the working precision may differ by
    eps = np.finfo(dtype).eps
    rounding = 4 * eps * (np.linalg.norm(a64, 2) * np.linalg.norm(x64) + np.linalg.norm(b64))
    assert abs(info.residual_norm - true) <= 1e-3 * true + rounding


class _NaNOnce:
    """``A`` as an operator whose next product is NaN once ``poison`` is set."""

    def __init__(self, a):
        self.a, self.shape, self.dtype, self.poison = a, a.shape, a.dtype, False

    def matvec(self, v):
        out = self.a @ v
        if self.poison:
            self.poison = False
            out[:] = np.nan
        return out


@pytest.mark.gpu
@pytest.mark.parametrize("maxiter", [1, 7, 13])
@pytest.mark.parametrize("dtype", DTYPES)
def test_pipelined_bicgstab_judges_no_iteration_past_maxiter(
    cupy_backend, rng, monkeypatch, dtype, maxiter
):
    """The pipelined BiCGSTAB's last kernel forms the next iteration's alpha from ``A z``,
    a product only that next iteration needs: at ``maxiter`` there is none, so an operator
    that returns NaN there (the first inf or NaN it returns) leaves the solve as it was
    without it: ``maxiter reached`` after ``maxiter`` iterations, the same ``x`` bit for
    bit, and not a breakdown ("NaN or inf") judged on an iteration that never runs."""
    import warnings

    import gpukit_cupy.krylov as krylov

    a, b = _system(rng, "bicgstab", 50, dtype)
    op = _NaNOnce(gk.asarray(a))
    real = krylov._Bicgstab.pipeline_omega

    def omega(self, k, aw, r):  # the next product is A z of iteration k
        op.poison = k == maxiter
        real(self, k, aw, r)

    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gk.ConvergenceWarning)
        runs.append(gk.linalg.bicgstab(op, gk.asarray(b), rtol=0.0, maxiter=maxiter))
        monkeypatch.setattr(krylov._Bicgstab, "pipeline_omega", omega)
        runs.append(gk.linalg.bicgstab(op, gk.asarray(b), rtol=0.0, maxiter=maxiter))
    (x, info), (x_poisoned, poisoned) = runs
    for one in (info, poisoned):
        assert (one.reason, one.iterations) == ("maxiter reached", maxiter)
    assert np.array_equal(gk.to_numpy(x_poisoned), gk.to_numpy(x))
    assert poisoned.residual_norm == info.residual_norm
    a64, b64 = a.astype(np.complex128), b.astype(np.complex128)
    x64 = gk.to_numpy(x).astype(np.complex128)
    true = np.linalg.norm(b64 - a64 @ x64)
    assert 0 < true < np.linalg.norm(b64)  # the iterations ran and reduced the residual
    # what b - A x recomputed in the working precision may differ by
    eps = np.finfo(dtype).eps
    rounding = 4 * eps * (np.linalg.norm(a64, 2) * np.linalg.norm(x64) + np.linalg.norm(b64))
    assert abs(info.residual_norm - true) <= 1e-3 * true + rounding


def test_krylov_cu_uses_64_bit_positions():
    """krylov.cu's global positions and subscripts are 64-bit (tests/test_kernel_limits.py)."""
    from test_kernel_limits import index_violations

    from gpukit_cupy import krylov

    assert index_violations(krylov.source()) == []


@pytest.mark.skipif(NVCC is None, reason="nvcc not found on PATH: krylov.cu not compiled")
def test_krylov_cu_compiles_for_sm90(tmp_path):
    """Every kernel of krylov.cu, for every dtype, compiles with nvcc as CuPy would."""
    from gpukit_cupy import krylov

    exprs = [e for dtype in DTYPES for e in krylov.name_expressions(dtype)]
    refs = ",\n".join(f"    (const void*)&{e}" for e in exprs)
    unit = tmp_path / "unit.cu"
    unit.write_text(
        f"{krylov.source()}\nextern const void* const gk_instances[] = {{\n{refs}\n}};\n"
    )
    ptx = tmp_path / "unit.ptx"
    cmd = [NVCC, "--ptx", "-arch=sm_90", "-std=c++17", "-Werror", "all-warnings"]
    result = subprocess.run([*cmd, "-o", str(ptx), str(unit)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    entries = re.findall(r"^\.visible \.entry (\S+?)\(", ptx.read_text(), re.M)
    assert len(entries) == len(exprs)


def _near_identity(rng, n, dtype, eps):
    """``I + eps B``: each ``A v`` lies within ``eps`` of ``v``, so each new Arnoldi vector
    is a cancellation of its projection (the Krylov basis is ill-conditioned): one
    Gram-Schmidt pass loses orthogonality entirely here; two keep it at rounding level."""
    a = np.eye(n) + eps * rng.standard_normal((n, n)) / np.sqrt(n)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * eps * rng.standard_normal((n, n)) / np.sqrt(n)
    return a.astype(dtype), _vec(rng, n, dtype)


def _first_cycle(backend_name, module, a, b, m):
    """The basis (float64/complex128, one row a vector) and the Hessenberg matrix of one
    full GMRES cycle of ``m`` steps on ``backend_name``, taken as x's update begins."""
    got = {}
    cls = module._Gmres if backend_name == "cupy" else module.GmresSteps
    real = cls.advance

    def spy(self, x, y, psolve):
        if backend_name == "cupy":
            rows = self.V.get() * self.hb[self.at_rs : self.at_rs + m + 1].get()[:, None]
            got.setdefault("H", self.H.copy())
        else:
            rows = self.V.copy()
        got.setdefault("Q", rows.astype(np.complex128))
        real(self, x, y, psolve)

    with pytest.MonkeyPatch.context() as mp, gk.use_backend(backend_name):
        mp.setattr(cls, "advance", spy)
        with pytest.warns(gk.ConvergenceWarning):  # rtol out of reach: m steps exactly
            gk.linalg.gmres(gk.asarray(a), gk.asarray(b), rtol=1e-300, restart=m, maxiter=m)
    return got


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_lagged_reorthogonalisation_keeps_the_basis_orthonormal(cupy_backend, rng, dtype):
    """The device's Gram-Schmidt with the second pass delayed a step keeps ``||I - Q^H Q||``
    at rounding level (as classical Gram-Schmidt twice does) on an ill-conditioned Krylov
    basis, and its Hessenberg columns, corrected for the delayed pass, satisfy the Arnoldi
    relation ``A Q_m = Q_{m+1} H`` to rounding; measured in float64."""
    import gpukit_cupy.krylov as krylov

    n, m = 200, 30
    single = dtype in ("float32", "complex64")
    eps = float(np.finfo(dtype).eps)
    a, b = _near_identity(rng, n, dtype, 1e-3 if single else 1e-7)
    got = _first_cycle("cupy", krylov, a, b, m)
    q, h = got["Q"], got["H"]
    loss = np.linalg.norm(np.eye(m + 1) - q.conj() @ q.T)
    assert loss <= m * eps  # one pass alone: loss ~ 1 on this problem
    a64 = a.astype(np.complex128)
    relation = np.linalg.norm(a64 @ q[:m].T - q.T @ h) / np.linalg.norm(a64)
    assert relation <= np.sqrt(m) * eps


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_row_in_the_span_before_it_is_a_breakdown_not_a_nan(cupy_backend, dtype):
    """Where Pythagoras' ``||u||^2 - ||s||^2`` cancels to 0 (row 1 a multiple of row 0: the
    column before breaks down), the norm the Hessenberg column gets is the one summed
    directly after the delayed pass, 0 here: the host sees a breakdown, and the row keeps
    a finite scale."""
    import cupy

    space = cupy_backend.krylov_space(np.dtype(dtype))
    ones = cupy.ones(4, dtype=dtype)
    s = space.krylov_steps("gmres")(space, ones, 0.0, 10, m=3, to_host=cupy.asnumpy)
    s.begin(ones, 2.0)  # row 0: (1, 1, 1, 1) / 2, exact
    s.arnoldi(0, 3 * ones)
    cupy.multiply(s.V[0], 3, out=s.V[1])  # u = 3 q_0: ||u||^2 = |q_0^H u|^2 = 9 exactly
    _, [(col, h0, hn)] = s.read(True)  # row 1's delayed pass, without a product
    assert hn == 0.0 and np.isfinite(col).all() and np.isfinite(h0)
    rs = s.hb[s.at_rs : s.at_rs + 2].get()
    assert rs.tolist() == [1.0, 1.0] and bool(cupy.isfinite(s.V[:2]).all())
