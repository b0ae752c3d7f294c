"""Sharded arrays, Dask arrays and the collectives in single and double precision, real and
complex: each operation keeps its input's precision (a complex64 input promoted to
complex128 fails here, as a float32 one computed in float64 and cast back would fail the
value checks' tolerances the other way round) and agrees with a float64/complex128
reference of the same values.

Sharded arrays live on two devices: virtual CPU devices on numpy, two GPUs on cupy (the
simulator's with ``--cupy=sim``; marked ``gpu`` and ``multi_gpu(2)``). Dask arrays hold NumPy
or CuPy chunks and compute on the synchronous scheduler. The collectives are each
backend's own (in memory on numpy; NCCL on cupy, where complex travels as twice as many
reals, and peer copies).
"""

from __future__ import annotations

import numpy as np
import pytest

import gpukit as gk
from gpukit._select import registry as _registry
from gpukit.backend.collectives import PeerCopyCollectives

from helpers import TOL, rel_err

NumpyBackend = type(_registry.load("numpy"))
DTYPES = ["float32", "float64", "complex64", "complex128"]
REAL = ["float32", "float64"]
GPU = [pytest.mark.gpu, pytest.mark.multi_gpu(2)]
BACKENDS = ["numpy", pytest.param("cupy", marks=GPU)]


def _draw(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _wide(x):
    """``x``'s values in double precision (the reference's inputs)."""
    x = np.asarray(x)
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _complex_of(dtype):
    return np.result_type(dtype, np.complex64)


def _real_of(dtype):
    return np.finfo(dtype).dtype


def _tol(dtype, factor=1.0):
    return TOL[np.dtype(dtype)] * factor


def _rtol(dtype):
    """A Krylov solve's tolerance: well above the precision's rounding, at the system's
    condition (about 3) well inside :func:`_tol` ``(dtype, 10)``."""
    return 1e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


def _hpd(rng, n, dtype):
    """A well-conditioned Hermitian positive definite matrix (every solver takes it)."""
    z = _wide(_draw(rng, (n, n), dtype)) / np.sqrt(n)
    return (z @ z.conj().T + 2 * np.eye(n)).astype(dtype)


@pytest.fixture(params=BACKENDS)
def two_devices(request):
    """A backend with two devices, active for the test."""
    if request.param == "cupy":
        yield request.getfixturevalue("cupy_backend")
        return
    with gk.use_backend(NumpyBackend(2)) as backend:
        yield backend


@pytest.fixture(params=BACKENDS)
def chunks_on(request):
    """``to_dask(x, chunks)``: ``x`` as a Dask array of NumPy or CuPy chunks (that backend
    active for the test)."""
    da = pytest.importorskip("dask.array", reason='pip install -e ".[dask]"')
    if request.param == "cupy":
        backend = request.getfixturevalue("cupy_backend")
        yield lambda x, chunks: da.from_array(backend.asarray(x), chunks=chunks, asarray=False)
        return
    with gk.use_backend("numpy"):
        yield lambda x, chunks: da.from_array(x, chunks=chunks)


def _computed(y):
    """A Dask result computed here, its lazy dtype checked against the chunks'."""
    out = y.compute(scheduler="sync")
    assert out.dtype == y.dtype and type(out) is type(y._meta)
    return out


# -- sharded arrays ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_sharded_matmul(two_devices, rng, dtype):
    a, b = _draw(rng, (13, 6), dtype), _draw(rng, (6, 4), dtype)
    out = gk.matmul(gk.shard(a, devices=[0, 1]), b)
    assert isinstance(out, gk.ShardedArray) and out.dtype == dtype
    assert rel_err(out, _wide(a) @ _wide(b)) < _tol(dtype)


C2C = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn"]
R2C = ["rfft", "ihfft", "rfft2", "rfftn"]
C2R = ["irfft", "hfft", "irfft2", "irfftn"]
FFTS = [(k, d) for k in C2C for d in DTYPES]
FFTS += [(k, d) for k in R2C for d in REAL] + [(k, d) for k in C2R for d in DTYPES[2:]]


def _fft(module, kind, x):
    """``module.<kind>(x)``, the 2-D and n-D transforms over the last two axes."""
    fn = getattr(module, kind)
    return fn(x, axes=(-2, -1)) if kind[-1] in "2n" else fn(x)


def _want_dtype(kind, dtype):
    return _real_of(dtype) if kind in C2R else _complex_of(dtype)


@pytest.mark.parametrize(("kind", "dtype"), FFTS, ids=[f"{k}-{d}" for k, d in FFTS])
def test_sharded_ffts(two_devices, rng, kind, dtype):
    """Split along axis 1: the 2-D and n-D transforms exchange the data between devices."""
    x = _draw(rng, (3, 8, 12), dtype)
    got = _fft(gk.fft, kind, gk.shard(x, axis=1, devices=[0, 1]))
    assert isinstance(got, gk.ShardedArray) and got.dtype == _want_dtype(kind, dtype)
    assert rel_err(got, _fft(np.fft, kind, _wide(x))) < _tol(dtype, 10)  # grows like log n


@pytest.mark.parametrize("dtype", DTYPES)
def test_sharded_reductions_and_norms(two_devices, rng, dtype):
    x = _draw(rng, (9, 4), dtype)
    s = gk.shard(x, devices=[0, 1])
    ref = _wide(x)
    for got, want, out_dtype in [
        (gk.sharding.sum(s), ref.sum(), dtype),
        (gk.sharding.sum(s, axis=0), ref.sum(axis=0), dtype),
        (s.mean(axis=1), ref.mean(axis=1), dtype),
        (gk.linalg.norm(s), np.linalg.norm(ref), _real_of(dtype)),
        (gk.linalg.norm(s, axis=0), np.linalg.norm(ref, axis=0), _real_of(dtype)),
    ]:
        assert got.dtype == out_dtype
        assert rel_err(got, want) < _tol(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sharded_elementwise_and_reshard(two_devices, rng, dtype):
    x, y = _draw(rng, (7, 5), dtype), _draw(rng, (7, 5), dtype)
    s, t = gk.shard(x, devices=[0, 1]), gk.shard(y, devices=[0, 1])
    got = s * t.conj() + 2 * s
    assert got.dtype == dtype
    assert rel_err(got, _wide(x) * _wide(y).conj() + 2 * _wide(x)) < _tol(dtype)
    moved = gk.reshard(s, axis=1)
    assert moved.dtype == dtype and np.array_equal(gk.to_numpy(moved), x)
    assert gk.to_numpy(moved).dtype == dtype


@pytest.mark.parametrize("method", ["cg", "bicgstab", "minres"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_sharded_krylov(two_devices, rng, method, dtype):
    a, b = _hpd(rng, 24, dtype), _draw(rng, 24, dtype)
    x, info = getattr(gk.linalg, method)(gk.shard(a, devices=[0, 1]), b, rtol=_rtol(dtype))
    assert info.converged and x.dtype == dtype
    assert rel_err(x, np.linalg.solve(_wide(a), _wide(b))) < _tol(dtype, 10)


# -- Dask arrays ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_dask_matmul(chunks_on, rng, dtype):
    a, b = _draw(rng, (9, 7), dtype), _draw(rng, (7, 5), dtype)
    y = gk.matmul(chunks_on(a, (4, 3)), chunks_on(b, (3, 5)))
    assert y.dtype == dtype
    assert rel_err(_computed(y), _wide(a) @ _wide(b)) < _tol(dtype)


@pytest.mark.parametrize(("kind", "dtype"), FFTS, ids=[f"{k}-{d}" for k, d in FFTS])
def test_dask_ffts(chunks_on, rng, kind, dtype):
    x = _draw(rng, (3, 8, 12), dtype)
    y = _fft(gk.fft, kind, chunks_on(x, (1, 8, 12)))
    assert y.dtype == _want_dtype(kind, dtype)
    assert rel_err(_computed(y), _fft(np.fft, kind, _wide(x))) < _tol(dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dask_solve_and_lstsq(chunks_on, rng, dtype):
    a, b = _hpd(rng, 9, dtype), _draw(rng, 9, dtype)
    x = gk.linalg.solve(chunks_on(a, 3), chunks_on(b, 3))
    assert x.dtype == dtype
    assert rel_err(_computed(x), np.linalg.solve(_wide(a), _wide(b))) < _tol(dtype, 10)
    tall, rhs = _draw(rng, (12, 3), dtype), _draw(rng, 12, dtype)
    sol, residues, _rank, sv = gk.linalg.lstsq(chunks_on(tall, (4, 3)), chunks_on(rhs, 4))
    assert sol.dtype == dtype and residues.dtype == sv.dtype == _real_of(dtype)
    ref = np.linalg.lstsq(_wide(tall), _wide(rhs))
    assert rel_err(_computed(sol), ref[0]) < _tol(dtype, 100)
    assert rel_err(_computed(sv), ref[3]) < _tol(dtype, 10)


@pytest.mark.parametrize("method", ["cg", "bicgstab", "minres"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_dask_krylov(chunks_on, rng, method, dtype):
    a, b = _hpd(rng, 12, dtype), _draw(rng, 12, dtype)
    x, info = getattr(gk.linalg, method)(chunks_on(a, (4, 12)), chunks_on(b, 4), rtol=_rtol(dtype))
    assert info.converged and x.dtype == dtype
    assert rel_err(_computed(x), np.linalg.solve(_wide(a), _wide(b))) < _tol(dtype, 10)


@pytest.mark.parametrize("dtype", REAL)
def test_dask_kernels(chunks_on, rng, dtype):
    x, bias = _draw(rng, (10, 4), dtype), _draw(rng, 4, dtype)
    y = gk.kernels.bias_activation(chunks_on(x, (4, 4)), chunks_on(bias, 4), "relu")
    assert y.dtype == dtype
    assert rel_err(_computed(y), np.maximum(_wide(x) + _wide(bias), 0)) < _tol(dtype)
    labels = rng.integers(0, 4, 10)
    loss, probs = gk.kernels.softmax_cross_entropy(chunks_on(x, (4, 4)), chunks_on(labels, 4))
    assert loss.dtype == probs.dtype == dtype
    z = _wide(x) - _wide(x).max(axis=1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    assert rel_err(_computed(probs), np.exp(log_p)) < _tol(dtype)
    assert rel_err(_computed(loss), -log_p[np.arange(10), labels]) < _tol(dtype)


@pytest.mark.parametrize("dtype", REAL)
def test_dask_predict(chunks_on, rng, dtype):
    model = gk.nn.Sequential(gk.nn.Linear(3, 2, dtype=dtype, seed=0))
    x = _draw(rng, (10, 3), dtype)
    y = gk.nn.predict(model, chunks_on(x, (4, 3)), batch_size=3)
    assert y.dtype == dtype
    w, b = (_wide(gk.to_numpy(p.data)) for p in model.parameters())
    assert rel_err(_computed(y), _wide(x) @ w.T + b) < _tol(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dask_and_sharded_conversions_keep_the_dtype(two_devices, rng, dtype):
    x = _draw(rng, (6, 3), dtype)
    d = gk.distributed.to_dask(gk.shard(x, devices=[0, 1]))
    assert d.dtype == dtype
    back = gk.distributed.from_dask(d)
    assert back.dtype == dtype and gk.to_numpy(back).dtype == dtype
    assert np.array_equal(gk.to_numpy(back), x) and np.array_equal(gk.to_numpy(d), x)


# -- collectives ---------------------------------------------------------------------------


def _collectives(backend, which):
    if which == "peer":
        return PeerCopyCollectives(backend, (0, 1))
    coll = backend.collectives((0, 1))
    if which == "nccl":
        from gpukit_cupy.collectives import NcclCollectives

        if not isinstance(coll, NcclCollectives):
            pytest.skip("NCCL is not available for devices (0, 1)")
    return coll


@pytest.mark.parametrize(
    "which",
    [
        "numpy",
        pytest.param("nccl", marks=GPU),
        pytest.param("peer", marks=GPU),
    ],
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_collectives(rng, which, dtype):
    """Every collective of the interface, each device's result on its device."""
    if which == "numpy":
        backend = NumpyBackend(2)
    else:
        status = gk.available_backends()["cupy"]
        if not status.available:
            pytest.skip(f"backend 'cupy' unavailable: {status.reason}")
        backend = _registry.load("cupy")
    coll = _collectives(backend, which)
    host = [_draw(rng, (5, 3), dtype) for _ in range(2)]
    parts = [backend.asarray(h, device=d) for d, h in enumerate(host)]

    def check(outs, want, exact=False):
        for d, o in enumerate(outs):
            assert o.dtype == dtype and backend.device_of(o) == d
            got = gk.to_numpy(o)
            assert np.array_equal(got, want) if exact else rel_err(got, want) < _tol(dtype)

    check(coll.all_reduce(parts), _wide(host[0]) + _wide(host[1]))
    check(coll.all_gather(parts, axis=1), np.concatenate(host, axis=1), exact=True)
    check(coll.broadcast(parts[1], root=1), host[1], exact=True)
    total = coll.reduce(parts)
    assert total.dtype == dtype and backend.device_of(total) == 0
    assert rel_err(gk.to_numpy(total), _wide(host[0]) + _wide(host[1])) < _tol(dtype)
    got = coll.all_to_all([[None, parts[0][:2]], [parts[1][1:], None]])
    check([got[0][1]], host[1][1:], exact=True)  # received on device 0 from device 1
    assert got[1][0].dtype == dtype and backend.device_of(got[1][0]) == 1
    assert np.array_equal(gk.to_numpy(got[1][0]), host[0][:2])
